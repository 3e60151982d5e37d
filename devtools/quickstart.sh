#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# First contact with droce, run as root on Debian 12: sets up and builds everything
# (devtools/setup.sh), writes a small RoCEv2 sample capture with scapy, and has droce-pcap
# verify every packet's ICRC in it and in a copy with one corrupted payload bit.
# Exits 0 when droce-pcap accepts the good capture and catches the corrupted packet.

set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

prefix=${DROCE_BUILD_PREFIX:-build}
pcap_timeout=60

./devtools/setup.sh </dev/null

# Absolute: it runs from the capture's directory.
droce_pcap=$prefix/app/droce-pcap/droce-pcap
[[ $droce_pcap == /* ]] || droce_pcap=$PWD/$droce_pcap
if [[ ! -x $droce_pcap ]]; then
	echo "quickstart: $prefix/app/droce-pcap/droce-pcap was not built" >&2
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 devtools/make-sample-capture.py "$tmp" >/dev/null

# verify CAPTURE: runs droce-pcap --verify in the capture's directory, so its output
# names the file as the user would type it; sets out and rc.
verify() {
	rc=0
	out=$(cd "$tmp" && timeout "$pcap_timeout" "$droce_pcap" --verify "$1" 2>&1) || rc=$?
}

cat <<EOT

== 1. A clean capture ==
sample.pcap holds a short RoCEv2 conversation between 192.0.2.10 and 192.0.2.11, made
with scapy's RoCE layer: an RC SEND and its ACK, a three-packet RDMA WRITE and its ACK,
an RDMA READ and its response, a UD SEND and a congestion notification (CNP), plus an
ARP and a DNS query that are not RoCEv2. droce-pcap decodes each RoCEv2 packet with
droce's parser (lib/wire) and recomputes its ICRC, the CRC that covers the IP, UDP and
InfiniBand headers and the payload.

\$ $prefix/app/droce-pcap/droce-pcap --verify sample.pcap
EOT
verify sample.pcap
good_out=$out good_rc=$rc
printf '%s\n' "$good_out"
echo "(exit status $good_rc)"
cat <<EOT

One line per RoCEv2 packet, numbered as in the capture: addresses and UDP ports, the
opcode, destination QP and PSN, the extension headers (RETH for RDMA, AETH in ACKs and
read responses, DETH for UD), the payload length, and the ICRC verdict. The ARP and DNS
frames are not RoCEv2: the summary counts them as "other".
EOT

cat <<EOT

== 2. The same capture with one bit flipped ==
sample-corrupt.pcap is identical except that one bit of the SEND's payload is flipped
("Hello" became "hello") and its ICRC was left as it was, as a faulty link or buggy
sender would leave it. droce-pcap must flag that packet, show the ICRC it expected, and
with --verify exit with status 1.

\$ $prefix/app/droce-pcap/droce-pcap --verify sample-corrupt.pcap
EOT
verify sample-corrupt.pcap
bad_out=$out bad_rc=$rc
printf '%s\n' "$bad_out"
echo "(exit status $bad_rc)"
cat <<EOT

The SEND no longer matches its ICRC: droce-pcap prints the ICRC the packet should carry
(in wire byte order, as Wireshark shows it), every other packet still verifies, and
--verify turns the one bad packet into exit status 1, so scripts and CI can use it.
EOT

echo
ok=true
if [[ $good_rc -ne 0 ]]; then
	echo "quickstart: FAILED: droce-pcap rejected the clean capture (status $good_rc, wanted 0)"
	ok=false
fi
if [[ $bad_rc -ne 1 ]]; then
	echo "quickstart: FAILED: droce-pcap exited $bad_rc on the corrupted capture (wanted 1)"
	ok=false
fi
bad_lines=$(grep -cF 'icrc=BAD(expected ' <<<"$bad_out" || true)
if [[ $bad_lines -ne 1 ]]; then
	echo "quickstart: FAILED: droce-pcap reported $bad_lines bad ICRCs (wanted 1, the SEND)"
	ok=false
fi
if ! $ok; then
	exit 1
fi
cat <<EOT
quickstart: OK. droce-pcap accepted every packet of the clean capture and caught the
one flipped bit. Next: ./devtools/run-tests.sh runs every test suite; README.md and doc/
say what droce is and where it is going.
EOT
