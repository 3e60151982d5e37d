#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Unmodified perftest beside droce's own verbs benchmark, in one run, through the same
# daemons: ib_send_lat (64 B, half round trip, median) and ib_send_bw (64 KiB, one RC QP)
# from Debian's perftest with LD_LIBRARY_PATH at droce's libibverbs.so.1, and
# droce-bench-droced lat / bw (the same message sizes and QP type, linked with libdroce).
# Both through two droced joined by net_memif and through one droced (loopback through
# its own GID); the unmodified runs with libdroce's poll yield at its default and off
# (DROCE_POLL_YIELD=0). Prints the figures and unmodified / native ratios; how to read
# them and the results so far: doc/performance.md, "Unmodified programs".
#
# Usage: devtools/bench-unmodified.sh [-n ITERS] [-d SECONDS] [-s IDLE_SLEEP_US]
#   -n  latency round trips and bandwidth messages per perftest run (default 10000)
#   -d  seconds per droce-bench-droced run (default 2)
#   -s  the engines' idle_sleep_us (default 0)
#   DROCE_BENCH_BUILD  build directory (default build-bench); set up with the project's
#                      default options when missing
#
# Every process runs under timeout; the daemons have file prefixes, sockets and configs of
# their own in a temporary directory and are stopped with SIGTERM (SIGKILL after 20 s);
# what they leave in /var/run/dpdk and /dev/hugepages under this run's prefix is removed at
# exit, on failure too.

set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

iters=10000
secs=2
sleep_us=0
while getopts "n:d:s:h" opt; do
	case $opt in
	n) iters=$OPTARG ;;
	d) secs=$OPTARG ;;
	s) sleep_us=$OPTARG ;;
	*) sed -n '3,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2 ;;
	esac
done

for p in ib_send_lat ib_send_bw; do
	if ! command -v "$p" >/dev/null; then
		echo "bench-unmodified: $p not found: install perftest (devtools/setup.sh does)" >&2
		exit 1
	fi
done

dir=${DROCE_BENCH_BUILD:-build-bench}
prefix=droce-bench-unmod-$$
work=$(mktemp -d "/tmp/$prefix-XXXXXX")

. devtools/bench-common.sh
bench_daemon_cleanup "$prefix" "$work"
for t in app/droced/droced devtools/droce-bench-droced drivers/compat/libibverbs.so.1.14.44; do
	bench_build "$dir" "$t"
done
bench_describe "$dir" "dpdk:     $(pkg-config --modversion libdpdk)" \
	"perftest: $(dpkg-query -W -f '${Version}' perftest 2>/dev/null || echo '?')" \
	"runs:     idle_sleep_us $sleep_us; perftest -n $iters; droce-bench-droced ${secs} s"

BUILD="$dir" PREFIX="$prefix" WORK="$work" ITERS="$iters" SECS="$secs" SLEEP="$sleep_us" \
timeout --kill-after=10 1500 /usr/bin/python3 - <<'EOF' &
import os, signal, sys

sys.path.insert(0, os.path.join(os.getcwd(), "devtools"))
import bench_daemons

build, prefix, work = os.environ["BUILD"], os.environ["PREFIX"], os.environ["WORK"]
iters, secs, sleep_us = int(os.environ["ITERS"]), os.environ["SECS"], int(os.environ["SLEEP"])
droced = os.path.join(build, "app/droced/droced")
bench = os.path.join(build, "devtools/droce-bench-droced")
compat = os.path.abspath(os.path.join(build, "drivers/compat"))
signal.signal(signal.SIGTERM, lambda s, f: sys.exit(143))


def daemon(name, device, ipv4):
    d = bench_daemons.daemon(droced, work, prefix, name, device, ipv4, idle_sleep_us=sleep_us)
    bench_daemons.start(work, d)
    return d


def native(mode, a, b):
    kv = bench_daemons.native(bench, mode, iters * 10, secs, a, b)
    return None if kv is None else float(kv["half_rtt_us_median" if mode == "lat" else
                                            "gbit_per_sec"])


def perftest(mode, a, b, poll_yield):
    row = bench_daemons.perftest(mode, a, b, compat, iters, poll_yield)
    # ib_send_lat: t_typical (the median of half round trips); ib_send_bw: BW average.
    return None if row is None else row[2] if mode == "lat" else row[1]


res = {}
for where in ("pair", "one"):
    print("--- %s" % ("two droced over memif" if where == "pair" else
                      "one droced, loopback through its own GID"), flush=True)
    sock = os.path.join(work, where + ".memif")
    ds = []
    try:
        a = daemon(where + "a", "net_memif0,role=server,id=0,socket=%s,bsize=8192" % sock,
                   "10.99.0.1/24")
        ds.append(a)
        if where == "pair":
            b = daemon(where + "b", "net_memif0,role=client,id=0,socket=%s,bsize=8192" %
                       sock, "10.99.0.2/24")
            ds.append(b)
        else:
            b = a
        for mode in ("lat", "bw"):
            res[(where, mode, "native")] = native(mode, a, b)
            res[(where, mode, "perftest")] = perftest(mode, a, b, None)
            res[(where, mode, "perftest-noyield")] = perftest(mode, a, b, 0)
            print("  %s: native %s, perftest %s, perftest without poll yield %s" % (
                mode, res[(where, mode, "native")], res[(where, mode, "perftest")],
                res[(where, mode, "perftest-noyield")]), flush=True)
    finally:
        for d in reversed(ds):
            d.stop(expect_clean=False)


def fmt(x):
    return "-" if x is None else "%.3g" % x


def ratio(x, y):
    return "-" if x is None or y is None or y == 0 else "%.2f" % (x / y)


print()
print("native = droce-bench-droced (libdroce); perftest = Debian's unmodified binary through")
print("libibverbs.so.1 (drivers/compat), DROCE_POLL_YIELD default / 0; ratio = perftest /")
print("native (latency: above 1 is slower; bandwidth: below 1 is slower)")
hdr = "%-34s %5s | %8s | %8s %6s | %8s %6s" % ("figure", "unit", "native", "perftest",
                                                "ratio", "no yield", "ratio")
print(hdr)
print("-" * len(hdr))
for where, name in (("pair", "2 droced"), ("one", "1 droced")):
    for mode, fig, unit in (("lat", "64 B half RTT median", "us"),
                            ("bw", "64 KiB SEND, 1 RC QP", "Gb/s")):
        n = res.get((where, mode, "native"))
        p = res.get((where, mode, "perftest"))
        q = res.get((where, mode, "perftest-noyield"))
        print("%-34s %5s | %8s | %8s %6s | %8s %6s" % (
            "%s, %s" % (fig, name), unit, fmt(n), fmt(p), ratio(p, n), fmt(q), ratio(q, n)))
print("load now: " + open("/proc/loadavg").read().split(" ", 3)[0])
EOF
pypid=$!
wait "$pypid"
