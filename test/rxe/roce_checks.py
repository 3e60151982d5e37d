# SPDX-License-Identifier: BSD-3-Clause
"""What the interoperability tests check of stock programs and captures, whoever runs them:
the soft-RoCE guest against droced on the host (test_rxe_interop.py), droced in guests on
emulated PCI NICs against it and the host (test/nic/test_nic_guests.py). ibv_*_pingpong's
and perftest's reports, and a capture that droce-pcap --verify and tshark's InfiniBand
dissector must both find sound."""

import collections
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from droce_harness import check, log  # noqa: E402

ROCE_PORT = 4791
IPV6_ZERO_CSUM_NOTE = "Illegal checksum value (0)"


def gid_of(ip):
    return "::ffff:%s" % ip


def check_pingpong(out, side, iters, size, peer_ip, nqps=1):
    """ibv_*_pingpong's report: iterations, bytes and the peer's GID on every QP line."""
    m = re.search(r"^(\d+) iters in [\d.]+ seconds", out, re.M)
    check(m is not None and int(m.group(1)) == iters,
          "%s: want %d iterations:\n%s" % (side, iters, out))
    m = re.search(r"^(\d+) bytes in [\d.]+ seconds", out, re.M)
    check(m is not None and int(m.group(1)) == 2 * iters * size,
          "%s: want %d bytes:\n%s" % (side, 2 * iters * size, out))
    remote = re.findall(r"remote address:.*GID (\S+)", out)
    check(len(remote) == nqps and all(g == gid_of(peer_ip) for g in remote),
          "%s: remote GIDs %s, want %d x %s" % (side, remote, nqps, gid_of(peer_ip)))
    check("Failed" not in out and "Couldn't" not in out, "%s reported an error:\n%s" %
          (side, out))


# The local ACK timeout and retry count ibv_*_pingpong and perftest set (timeout 14:
# 4.096 us * 2^14 = 67 ms; retry_cnt 7): a requester whose peer answers nothing gives up
# retry_cnt + 1 timeouts after its last answered packet (9.7.6.1.3).
ACK_TIMEOUT_S = 4.096e-6 * (1 << 14)
RETRY_CNT = 7
# How long a peer must have answered nothing for a requester to have spent all its
# retries: retry_cnt whole timeouts (the first one ran from a send before the silence).
RETRY_WINDOW_S = RETRY_CNT * ACK_TIMEOUT_S
RETRY_EXC = re.compile(r"[Ff]ailed status (12\b|transport retry counter exceeded \(12\))")

ERROR_WORDS = re.compile(r"(?i)\b(error|failed|couldn't|unable)\b")

# rping's own race at its end (rdma-core 44's librdmacm/examples/rping.c): main() destroys
# the rdma_cm event channel while its cm_thread still waits in rdma_get_cm_event(), which
# then fails (EBADF), and that thread calls exit(-1): a run whose every ping went through
# may end with status 255 and this line. Seen from Linux's rping in the soft-RoCE guest
# (doc/reliability.md). Forgiven only so; the callers count every ping of both sides.
RPING_TEARDOWN = "rdma_get_cm_event: Bad file descriptor"


def rping_status(rc, out):
    """rping's exit status, with its teardown race (above) taken for the 0 it was."""
    if rc == 255 and RPING_TEARDOWN in out.splitlines():
        return 0
    return rc


def rping_errors(out):
    """The lines of an rping output that report an error, but for its teardown race."""
    return [l for l in out.splitlines() if ERROR_WORDS.search(l) and l != RPING_TEARDOWN]


def perf_rows(out, ncols):
    """perftest's result rows: (bytes, iterations, [values])."""
    rows = []
    for line in out.splitlines():
        f = line.split()
        if len(f) == 2 + ncols and f[0].isdigit() and f[1].isdigit():
            try:
                rows.append((int(f[0]), int(f[1]), [float(x) for x in f[2:]]))
            except ValueError:
                pass
    return rows


# ext: droce-pcap's whole JSON object of the packet (its RETH, AETH, IETH...).
Pkt = collections.namedtuple("Pkt", "src dst opcode dqpn psn ext")


def verify_capture(droce_pcap, pcap):
    """droce-pcap --verify and tshark agree that every RoCEv2 packet is sound; returns the
    packets (droce-pcap's JSON)."""
    r = subprocess.run([droce_pcap, "--verify", "--json", pcap], capture_output=True,
                       text=True, timeout=600)
    lines = [json.loads(l) for l in r.stdout.splitlines() if l.strip()]
    summary = lines[-1].get("summary") if lines else None
    check(summary is not None, "droce-pcap printed no summary: %s" % r.stderr)
    bad = [l for l in lines[:-1] if l.get("result") != "OK"]
    check(r.returncode == 0 and summary["malformed"] == 0 and summary["bad_icrc"] == 0 and
          not bad, "droce-pcap --verify: exit %d, %s\n%s" % (r.returncode, summary,
                                                            "\n".join(map(str, bad[:20]))))
    check(summary["roce"] > 0, "no RoCEv2 packet in the capture: %s" % summary)
    # rpcordma off: its heuristic takes SEND payloads for RPC-over-RDMA and calls them
    # malformed.
    tshark = ["tshark", "--disable-protocol", "rpcordma", "-r", pcap]
    r = subprocess.run(tshark + ["-Y", "infiniband.bth", "-T", "fields", "-e", "frame.number"],
                       capture_output=True, text=True, timeout=600)
    check(r.returncode == 0, "tshark: %s" % r.stderr)
    n_bth = len(r.stdout.split())
    check(n_bth == summary["roce"], "tshark decodes %d BTHs, droce-pcap %d RoCEv2 packets" %
          (n_bth, summary["roce"]))
    r = subprocess.run(tshark + ["-Y", "_ws.malformed || _ws.expert.severity == error",
                                 "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|",
                                 "-e", "frame.number", "-e", "ipv6.dst", "-e", "udp.dstport",
                                 "-e", "_ws.malformed", "-e", "_ws.expert.message"],
                       capture_output=True, text=True, timeout=600)
    check(r.returncode == 0, "tshark: %s" % r.stderr)
    # RoCEv2 over IPv6 (the multicast cases) sends UDP checksum 0 as over IPv4 (A17.4.2:
    # receivers ignore it; both stacks do it, and check_mcast sees that they agree), which
    # tshark calls an error after RFC 8200 (as in test/interop/test_tshark_fields.py). That
    # note alone on such a packet is no error here; anything else is.
    bad, v6_zero = [], 0
    for line in r.stdout.splitlines():
        frame, v6dst, dport, malformed, notes = (line.split("\t") + [""] * 5)[:5]
        if (v6dst and dport == str(ROCE_PORT) and not malformed and
                set(notes.split("|")) == {IPV6_ZERO_CSUM_NOTE}):
            v6_zero += 1
        else:
            bad.append(line)
    check(not bad, "tshark finds malformed or erroneous frames: %s" % bad[:20])
    log("     capture: %d RoCEv2 packets, droce-pcap and tshark agree, all ICRCs right%s" %
        (summary["roce"], "" if not v6_zero else
         " (%d over IPv6 with UDP checksum 0: tshark's RFC 8200 note)" % v6_zero))
    return [Pkt(l["src"], l["dst"], l["opcode_name"], l["dqpn"], l["psn"], l)
            for l in lines[:-1]]
