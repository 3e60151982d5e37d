#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# How engines wait, in one run: each [engines] mode (poll, adaptive, interrupt) through
# two droced joined by net_memif (no rx interrupts: sleeps are bounded), two droced joined
# by net_tap behind a bridge (rx interrupts wake the engines) and one droced (loopback
# through its own GID). Per mode and link: Debian's unmodified ib_send_lat (64 B, half
# round trip, median and p99) and ib_send_bw (64 KiB, one RC QP) through droce's
# libibverbs.so.1, droce-bench-droced lat / bw (the same through libdroce), and what an
# idle droced costs: its CPU time over the idle seconds with two perftest servers
# connected and waiting. Figures and targets: doc/performance.md, "Sleeping engines".
#
# Usage: devtools/bench-sleep.sh [-n ITERS] [-d SECONDS] [-i IDLE_SECONDS] [-m MODES]
#   -n  latency round trips and bandwidth messages per perftest run (default 10000)
#   -d  seconds per droce-bench-droced run (default 2)
#   -i  seconds of the idle measurement (default 10)
#   -m  modes, comma-separated (default poll,adaptive,interrupt)
#   -l  links, comma-separated (default memif,tap,one)
#   -y  DROCE_POLL_YIELD values to run ib_send_lat with besides the default, comma-separated
#       (default 0,256,4096; "" for none): libdroce's yield of polling applications
#   DROCE_BENCH_BUILD  build directory (default build-bench); set up with the project's
#                      default options when missing
#
# Every process runs under timeout; the daemons have file prefixes, sockets and configs of
# their own in a temporary directory and are stopped with SIGTERM (SIGKILL after 20 s);
# what they leave in /var/run/dpdk and /dev/hugepages under this run's prefix, and the tap
# link's network namespace, are removed at exit, on failure too.

set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

iters=10000
secs=2
idle=10
modes=poll,adaptive,interrupt
links=memif,tap,one
yields=0,256,4096
while getopts "n:d:i:m:l:y:h" opt; do
	case $opt in
	n) iters=$OPTARG ;;
	d) secs=$OPTARG ;;
	i) idle=$OPTARG ;;
	m) modes=$OPTARG ;;
	l) links=$OPTARG ;;
	y) yields=$OPTARG ;;
	*) sed -n '3,27p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2 ;;
	esac
done

for p in ib_send_lat ib_send_bw; do
	if ! command -v "$p" >/dev/null; then
		echo "bench-sleep: $p not found: install perftest (devtools/setup.sh does)" >&2
		exit 1
	fi
done

dir=${DROCE_BENCH_BUILD:-build-bench}
prefix=droce-bench-sleep-$$
work=$(mktemp -d "/tmp/$prefix-XXXXXX")
netns=$prefix

. devtools/bench-common.sh
bench_daemon_cleanup "$prefix" "$work"
trap 'ip netns del "$netns" 2>/dev/null || true; bench_cleanup' EXIT
for t in app/droced/droced devtools/droce-bench-droced drivers/compat/libibverbs.so.1.14.44; do
	bench_build "$dir" "$t"
done
bench_describe "$dir" "dpdk:     $(pkg-config --modversion libdpdk)" \
	"perftest: $(dpkg-query -W -f '${Version}' perftest 2>/dev/null || echo '?')" \
	"runs:     modes $modes; links $links; perftest -n $iters; droce-bench-droced ${secs} s; idle ${idle} s; DROCE_POLL_YIELD ${yields:-default}"

BUILD="$dir" PREFIX="$prefix" WORK="$work" NETNS="$netns" ITERS="$iters" SECS="$secs" \
IDLE="$idle" MODES="$modes" LINKS="$links" YIELDS="$yields" \
timeout --kill-after=10 3000 /usr/bin/python3 devtools/bench_sleep.py &
pypid=$!
wait "$pypid"
