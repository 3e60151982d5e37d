#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Builds (when needed) droced, libdroce, droce-bench-droced and droce-bench-engine and runs,
# in one go: the engine-only ping-pong latency and one-QP 64 KiB bandwidth (one lcore and
# two), then the same through droced with the verbs API, over two daemons joined by
# net_memif and through one daemon (loopback through its own GID), at each engine
# idle_sleep_us given, and the rate of QP creation to RTS from one application thread;
# prints the figures, their ratios to the engine-only ones and the targets. How to read
# it and the results so far: doc/performance.md, "Through droced".
#
# Usage: devtools/bench-droced.sh [-s SLEEPS] [-y MODES] [-n QPS] [-i ITERS] [-d SECONDS]
#   -s  engine idle_sleep_us values for the latency and bandwidth runs, comma-separated
#       (default 0,20); qp-rate always runs at 0
#   -y  how the applications wait for completions: spin (busy poll), yield (sched_yield
#       after each empty poll) or both, comma-separated (default spin,yield)
#   -n  QPs for qp-rate (default 10000, at most 4000 alive at once)
#   -i  at most so many ping-pong round trips per latency run (default 100000)
#   -d  seconds per latency or bandwidth run (default 2)
#   DROCE_BENCH_BUILD  build directory (default build-bench); set up with the project's
#                      default options when missing (-Dbuildtype=release is better)
#
# Every process runs under timeout; the daemons have file prefixes, sockets and configs of
# their own in a temporary directory, are stopped with SIGTERM (SIGKILL after 20 s) and
# whatever they or droce-bench-engine leave in /var/run/dpdk and /dev/hugepages under this
# run's prefix is removed at exit, on failure too.

set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

sleeps=0,20
qps=10000
iters=100000
secs=2
appmodes=spin,yield
while getopts "s:y:n:i:d:h" opt; do
	case $opt in
	s) sleeps=$OPTARG ;;
	y) appmodes=$OPTARG ;;
	n) qps=$OPTARG ;;
	i) iters=$OPTARG ;;
	d) secs=$OPTARG ;;
	*) sed -n '3,26p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2 ;;
	esac
done

dir=${DROCE_BENCH_BUILD:-build-bench}
prefix=droce-bench-droced-$$
work=$(mktemp -d "/tmp/$prefix-XXXXXX")

. devtools/bench-common.sh
bench_daemon_cleanup "$prefix" "$work"
for t in app/droced/droced devtools/droce-bench-droced devtools/droce-bench-engine; do
	bench_build "$dir" "$t"
done
bench_describe "$dir" "dpdk:     $(pkg-config --modversion libdpdk)" \
	"runs:     idle_sleep_us $sleeps; apps $appmodes; $qps QPs; ${secs} s per latency or bandwidth run"

BUILD="$dir" PREFIX="$prefix" WORK="$work" SLEEPS="$sleeps" QPS="$qps" ITERS="$iters" APPMODES="$appmodes" \
SECS="$secs" timeout --kill-after=10 1500 /usr/bin/python3 - <<'EOF' &
import os, signal, subprocess, sys, time

sys.path.insert(0, os.path.join(os.getcwd(), "devtools"))
import bench_daemons

build, prefix, work = os.environ["BUILD"], os.environ["PREFIX"], os.environ["WORK"]
sleeps = [int(x) for x in os.environ["SLEEPS"].split(",")]
appmodes = os.environ["APPMODES"].split(",")
nqps, iters, secs = int(os.environ["QPS"]), int(os.environ["ITERS"]), float(os.environ["SECS"])
droced = os.path.join(build, "app/droced/droced")
bench = os.path.join(build, "devtools/droce-bench-droced")
engine_bench = os.path.join(build, "devtools/droce-bench-engine")
RUN_TIMEOUT = 120
# Targets: the engine's (doc/performance.md, "Targets") and issue 4's QP rate.
T_LAT_US, T_BW_GBPS, T_QP_RATE = 3.0, 25.0, 20000

# SIGTERM (the outer timeout) unwinds through the finally blocks that stop the daemons.
signal.signal(signal.SIGTERM, lambda s, f: sys.exit(143))


def daemon(name, device, ipv4, idle_sleep, limits=""):
    return bench_daemons.daemon(droced, work, prefix, name, device, ipv4,
                                idle_sleep_us=idle_sleep, limits=limits)


def start(*ds):
    bench_daemons.start(work, *ds)


def stop(*ds):
    for d in ds:
        d.stop(expect_clean=False)


def kv(text, mode):
    line = next((l for l in text.splitlines() if l.startswith("mode=" + mode)), None)
    return None if line is None else dict(x.split("=", 1) for x in line.split() if "=" in x)


def app(argv, d):
    return subprocess.Popen(["timeout", "--kill-after=5", str(RUN_TIMEOUT)] + argv,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=d.env(), start_new_session=True)


def two_sided(tag, mode, srv_d, cli_d, appmode):
    """Server on srv_d, client on cli_d (TCP over 127.0.0.1): the client's result."""
    args = ["-n", str(iters), "-d", str(secs)] + (["-y"] if appmode == "yield" else [])
    srv = app([bench, mode] + args, srv_d)
    time.sleep(0.3)
    cli = app([bench, mode] + args + ["127.0.0.1"], cli_d)
    out_c, _ = cli.communicate()
    if cli.returncode != 0 and srv.poll() is None:
        os.killpg(srv.pid, signal.SIGKILL)
    out_s, _ = srv.communicate()
    r = kv(out_c, mode)
    if cli.returncode != 0 or srv.returncode != 0 or r is None:
        sys.stderr.write("%s %s: client exit %s, server exit %s\n%s\n%s\n" % (
            tag, mode, cli.returncode, srv.returncode, out_c[-1500:], out_s[-1500:]))
        return None
    print("%-12s %s" % (tag, out_c.strip().splitlines()[-1]))
    return r


no_huge = False


def engine_only(mode, lcores):
    global no_huge
    for _ in range(2):
        cmd = ["timeout", str(RUN_TIMEOUT), engine_bench, "--mode", mode, "--lcores",
               str(lcores), "--cpus", "0,1", "--duration", "2000",
               "--file-prefix", "%s-eng-%s%d" % (prefix, mode, lcores)]
        if no_huge:
            cmd.append("--no-huge")
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode == 3 and not no_huge:
            no_huge = True
            continue
        break
    r = kv(p.stdout, mode)
    if p.returncode != 0 or r is None:
        sys.stderr.write("%s: exit %s\n%s\n" % (" ".join(cmd), p.returncode, p.stderr[-1500:]))
        return None
    print("%-12s %s" % ("engine-%dlc" % lcores, p.stdout.strip().splitlines()[-1]))
    return r


def memif_dev(role, sock):
    return "net_memif0,role=%s,id=0,socket=%s,bsize=8192" % (role, sock)


res = {}
print("--- engine only (droce-bench-engine, one process, no droced)")
for lc in (1, 2):
    res["eng-lat%d" % lc] = engine_only("lat", lc)
    res["eng-bw%d" % lc] = engine_only("bw", lc)

for sl in sleeps:
    print("--- two droced over memif, idle_sleep_us %d" % sl)
    sock = os.path.join(work, "pair%d.memif" % sl)
    a = daemon("a%d" % sl, memif_dev("server", sock), "10.99.0.1/24", sl)
    b = daemon("b%d" % sl, memif_dev("client", sock), "10.99.0.2/24", sl)
    try:
        start(a, b)
        for am in appmodes:
            for m in ("lat", "bw"):
                res["pair-%s-%d-%s" % (m, sl, am)] = two_sided("pair/%d/%s" % (sl, am), m,
                                                               a, b, am)
    finally:
        stop(b, a)   # the memif client first, as the harness does

    print("--- one droced, loopback through its own GID, idle_sleep_us %d" % sl)
    c = daemon("c%d" % sl, memif_dev("server", os.path.join(work, "one%d.memif" % sl)),
               "10.99.0.1/24", sl)
    try:
        start(c)
        for am in appmodes:
            for m in ("lat", "bw"):
                res["one-%s-%d-%s" % (m, sl, am)] = two_sided("one/%d/%s" % (sl, am), m,
                                                              c, c, am)
    finally:
        stop(c)

print("--- QP creation to RTS, one droced, idle_sleep_us 0")
# 4000 QPs alive at once, 16 deep each way: their rings fit 64 MiB; 128 for room.
q = daemon("q", memif_dev("server", os.path.join(work, "q.memif")), "10.99.0.1/24", 0,
           limits="max_qps = %d\nregion_mb = 128" % (nqps + 16))
try:
    start(q)
    p = app([bench, "qp-rate", "-n", str(nqps)], q)
    out, _ = p.communicate()
    res["qp"] = kv(out, "qp-rate")
    if p.returncode != 0 or res["qp"] is None:
        sys.stderr.write("qp-rate: exit %s\n%s\n" % (p.returncode, out[-1500:]))
        res["qp"] = None
    else:
        print("%-12s %s" % ("one/0", out.strip().splitlines()[-1]))
finally:
    stop(q)

NAN = float("nan")


def f(key, field):
    d = res.get(key)
    return float(d[field]) if d is not None and field in d else NAN


def fmt(x):
    return "-" if x != x else ("%.3g" % x if abs(x) < 1000 else "%.0f" % x)


def ratio(x, y):
    return x / y if x == x and y == y and y != 0 else NAN


eng_lat = (f("eng-lat1", "half_rtt_us_median"), f("eng-lat2", "half_rtt_us_median"))
eng_bw = (f("eng-bw1", "mmsg_per_cpu_s") * 65536 * 8 / 1e3, f("eng-bw2", "gbps"))
rows = []
for where, name in (("pair", "2 droced"), ("one", "1 droced")):
    for sl in sleeps:
        for am in appmodes:
            k = "%d-%s" % (sl, am)
            tag = "%s, sleep %d, %s" % (name, sl, am)
            rows.append(("64 B half RTT median, " + tag, "us",
                         f("%s-lat-%s" % (where, k), "half_rtt_us_median"), eng_lat,
                         "<= 3 us (engine's)", lambda x: x <= T_LAT_US))
            rows.append(("  the same, p99", "us", f("%s-lat-%s" % (where, k), "half_rtt_us_p99"),
                         (f("eng-lat1", "half_rtt_us_p99"), f("eng-lat2", "half_rtt_us_p99")),
                         "", None))
            rows.append(("64 KiB 1 QP, " + tag, "Gb/s",
                         f("%s-bw-%s" % (where, k), "gbit_per_sec"), eng_bw,
                         ">= 25 Gb/s (engine's)", lambda x: x >= T_BW_GBPS))
rows.append(("QP create+INIT+RTR+RTS, 1 thread, sleep 0", "QP/s", f("qp", "qps_per_sec"),
             (NAN, NAN), ">= 20000 QP/s", lambda x: x >= T_QP_RATE))
for step in ("create", "init", "rtr", "rts", "destroy"):
    rows.append(("  mean time per call: %s" % step, "us", f("qp", step + "_us"), (NAN, NAN),
                 "", None))

print()
print("engine only: droce-bench-engine, both hosts in one process; 1 lc = one lcore runs")
print("both (bandwidth per CPU second), 2 lc = a host per lcore (wall clock); ratio =")
print("through droced / engine only with 2 lcores (a host per CPU, as with two daemons);")
print("2 droced = over memif, 1 droced = both applications on it (loopback); sleep =")
print("the engines' idle_sleep_us; spin / yield = how the applications poll their CQs")
hdr = "%-46s %5s | %8s | %8s %8s | %6s | %-22s %s" % (
    "figure", "unit", "value", "eng 1 lc", "eng 2 lc", "ratio", "target", "met")
print(hdr)
print("-" * len(hdr))
for name, unit, val, eng, target, test in rows:
    met = "" if test is None else ("-" if val != val else ("met" if test(val) else "MISS"))
    print("%-46s %5s | %8s | %8s %8s | %6s | %-22s %s" % (
        name, unit, fmt(val), fmt(eng[0]), fmt(eng[1]), fmt(ratio(val, eng[1])),
        target, met))
print("load now: " + open("/proc/loadavg").read().split(" ", 3)[0])
EOF
# In the background so that a signal to this shell is handled at once (stop_run).
pypid=$!
wait "$pypid"
