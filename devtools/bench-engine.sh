#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Builds (when needed) droce-bench-engine and runs, in one go, testpmd's raw packet rate
# over net_ring, the same link without droce, then droce's 64-byte message rate on one QP,
# 64 KiB bandwidth on one QP, ping-pong latency and the message rate on 1000 QPs; prints
# the figures and their ratios against the targets. How to read it and the results so
# far: doc/performance.md.
#
# Usage: devtools/bench-engine.sh [-r ROUNDS] [-d MS] [-c CPU0,CPU1]
#   -r  rounds of the whole set (default 1); with more, the table gives medians
#   -d  measured milliseconds per figure (default 2000; each run adds set-up and 500 ms
#       of warm-up)
#   -c  the two CPUs (default 0,1)
#   DROCE_BENCH_BUILD  build directory (default build-bench); set up with the project's
#                      default options (debugoptimized, no sanitizers) when missing
#
# Every process runs under timeout with its own --file-prefix and --no-pci, on two lcores
# at most; hugepages when the EAL gets them, else --no-huge. Whatever they leave in
# /var/run/dpdk or /dev/hugepages under this run's prefix is removed at exit.

set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

rounds=1
duration=2000
cpus=0,1
while getopts "r:d:c:h" opt; do
	case $opt in
	r) rounds=$OPTARG ;;
	d) duration=$OPTARG ;;
	c) cpus=$OPTARG ;;
	*) sed -n '3,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2 ;;
	esac
done

dir=${DROCE_BENCH_BUILD:-build-bench}
testpmd=${DROCE_TESTPMD:-/usr/bin/dpdk-testpmd}
prefix=droce-bench-engine-$$

cleanup() {
	rm -rf /var/run/dpdk/"$prefix"* 2>/dev/null || true
	rm -f /dev/hugepages/"$prefix"* 2>/dev/null || true
}
trap cleanup EXIT

. devtools/bench-common.sh
bench_build "$dir" devtools/droce-bench-engine
[ -x "$testpmd" ] || { echo "no $testpmd (Debian package dpdk)" >&2; exit 1; }
bench_describe "$dir" "dpdk:     $(pkg-config --modversion libdpdk), $testpmd"

BENCH="$dir/devtools/droce-bench-engine" TESTPMD="$testpmd" PREFIX="$prefix" \
ROUNDS="$rounds" DURATION="$duration" CPUS="$cpus" /usr/bin/python3 - <<'EOF'
import os, re, signal, statistics, subprocess, sys, time

bench, testpmd, prefix = os.environ["BENCH"], os.environ["TESTPMD"], os.environ["PREFIX"]
rounds, duration = int(os.environ["ROUNDS"]), int(os.environ["DURATION"])
cpus = os.environ["CPUS"]
cpu0, cpu1 = cpus.split(",")
clk_tck = os.sysconf("SC_CLK_TCK")
run_timeout = 120
no_huge = False

# Targets (doc/performance.md, "What droce aims at").
T_RATE_RATIO, T_BW_GBPS, T_LAT_US, T_QPS_RATIO = 0.60, 25.0, 3.0, 0.80
MANY_QPS = 1000

def kv(line):
    return dict(x.split("=", 1) for x in line.split() if "=" in x)

def run_bench(tag, args):
    """One droce-bench-engine run: its result line as a dict (exit 3: EAL did not start)."""
    global no_huge
    for attempt in range(2):
        cmd = ["timeout", str(run_timeout), bench, "--cpus", cpus,
               "--duration", str(duration), "--file-prefix", f"{prefix}-{tag}"] + args
        if no_huge:
            cmd.append("--no-huge")
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if p.returncode == 3 and not no_huge:
            print("hugepages: the EAL did not start with them; --no-huge from now on")
            no_huge = True
            continue
        break
    line = next((l for l in p.stdout.splitlines() if l.startswith("mode=")), None)
    if p.returncode != 0 or line is None:
        sys.stderr.write(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr[-2000:]}\n")
        return None
    print(line)
    return kv(line)

def children(pid):
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(d))
            except (OSError, IndexError, ValueError):
                pass
    return out

def thread_ticks(pid, suffix):
    """utime + stime (clock ticks) of pid's thread whose name ends with suffix."""
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/comm") as f:
                if not f.read().strip().endswith(suffix):
                    continue
            with open(f"/proc/{pid}/task/{t}/stat") as f:
                v = f.read().rsplit(")", 1)[1].split()
            return int(v[11]) + int(v[12])
        except OSError:
            pass
    return None

def run_testpmd(tag):
    """
    testpmd's flowgen on one net_ring port looped to itself: one forwarding lcore builds
    64-byte frames, transmits them into the ring, receives them back and frees them. Its
    periodic port statistics give packets; the forwarding thread's CPU time, read as each
    statistics block arrives, gives the share of its CPU it had.
    """
    skip, keep = 2, max(3, duration // 1000 + 1)
    mem = ["--no-huge", "-m", "512", "--no-shconf"] if no_huge else ["--in-memory", "-m", "512"]
    cmd = ["timeout", "-s", "INT", str(skip + keep + 20), "stdbuf", "-oL", testpmd,
           f"--lcores=0@{cpu0},1@{cpu1}", "--no-pci", "--no-telemetry",
           f"--file-prefix={prefix}-{tag}", "--vdev=net_ring0",
           "--log-level=lib.eal:warning"] + mem + [
           "--", "--port-topology=loop", "--forward-mode=flowgen", "--stats-period=1",
           "--nb-cores=1", "--rxq=1", "--txq=1", "--burst=32", "--txpkts=64",
           "--total-num-mbufs=16384"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    samples, tpid, deadline = [], None, time.monotonic() + skip + keep + 15
    for line in p.stdout:
        m = re.match(r"\s*RX-packets:\s+(\d+)\s+RX-missed", line)
        if m is None:
            continue
        now = time.monotonic()
        if tpid is None:
            kids = children(p.pid)
            tpid = kids[0] if kids else None
        ticks = thread_ticks(tpid, "worker-1") if tpid else None
        if ticks is not None:
            samples.append((now, int(m.group(1)), ticks))
        if len(samples) >= skip + keep or now > deadline:
            break
    if tpid:
        os.kill(tpid, signal.SIGINT)
    try:
        p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
    if len(samples) < skip + 2:
        sys.stderr.write("testpmd: too few statistics blocks\n")
        return None
    (t0, n0, c0), (t1, n1, c1) = samples[skip], samples[-1]
    cpu = (c1 - c0) / clk_tck
    r = {"mode": "testpmd", "lcores": "1", "mpps": (n1 - n0) / (t1 - t0) / 1e6,
         "cpu_share_worker": cpu / (t1 - t0),
         "mpps_per_cpu_s": (n1 - n0) / cpu / 1e6 if cpu > 0 else 0.0}
    print("mode=testpmd forward=flowgen lcores=1 secs=%.3f pkts=%d mpps=%.4f "
          "cpu_share_worker=%.3f mpps_per_cpu_s=%.4f" %
          (t1 - t0, n1 - n0, r["mpps"], r["cpu_share_worker"], r["mpps_per_cpu_s"]))
    return r

def f(d, k):
    return float(d[k]) if d is not None and k in d else float("nan")

results = []
for rnd in range(rounds):
    print(f"--- round {rnd + 1} of {rounds}")
    r = {"tpmd": run_testpmd(f"tpmd{rnd}")}
    for l in (1, 2):
        r[f"raw{l}"] = run_bench(f"raw{l}-{rnd}", ["--mode", "raw", "--lcores", str(l)])
        r[f"rate{l}"] = run_bench(f"rate{l}-{rnd}", ["--mode", "rate", "--lcores", str(l)])
        r[f"bw{l}"] = run_bench(f"bw{l}-{rnd}", ["--mode", "bw", "--lcores", str(l)])
        r[f"lat{l}"] = run_bench(f"lat{l}-{rnd}", ["--mode", "lat", "--lcores", str(l)])
        r[f"many{l}"] = run_bench(f"many{l}-{rnd}",
                                  ["--mode", "rate", "--lcores", str(l), "--qps", str(MANY_QPS)])
    results.append(r)

def gbps(d, key):
    return f(d, key) * 1e6 * f(d, "size") * 8 / 1e9

def per_engine(d):
    """Messages/s (M) of the slower engine had it a core to itself: A's split of CPU time."""
    return 1e3 / max(f(d, "engine_a_ns"), f(d, "engine_b_ns"))

NAN = float("nan")

# Per round: (figure, baseline, ratio) for each row; the table takes medians over rounds.
rows = [
    # name, unit, figure, baseline, target test
    ("testpmd flowgen, 1 fwd lcore: packets/s", "M/s",
     lambda r: (f(r["tpmd"], "mpps_per_cpu_s"), f(r["tpmd"], "mpps")), None, None),
    ("raw link, alloc+fill+tx / rx+free: packets/s", "M/s",
     lambda r: (f(r["raw1"], "mpps_per_cpu_s"), f(r["raw2"], "mpps")), None, None),
    ("64 B RC SEND, 1 QP: messages/s", "M/s",
     lambda r: (f(r["rate1"], "mmsg_per_cpu_s"), f(r["rate2"], "mmsg_per_s")),
     lambda r: (f(r["tpmd"], "mpps_per_cpu_s"), f(r["tpmd"], "mpps")),
     (">= 0.60 x testpmd", lambda x: x >= T_RATE_RATIO)),
    ("  the same per engine core (slower engine)", "M/s",
     lambda r: (per_engine(r["rate1"]), NAN), lambda r: (f(r["tpmd"], "mpps_per_cpu_s"), NAN),
     (">= 0.60 x testpmd", lambda x: x >= T_RATE_RATIO)),
    ("64 KiB RC SEND, 1 QP: payload", "Gb/s",
     lambda r: (gbps(r["bw1"], "mmsg_per_cpu_s"), f(r["bw2"], "gbps")), None,
     (">= 25 Gb/s", lambda x: x >= T_BW_GBPS)),
    ("ping-pong 64 B: half round trip, median", "us",
     lambda r: (f(r["lat1"], "half_rtt_us_median"), f(r["lat2"], "half_rtt_us_median")), None,
     ("<= 3 us", lambda x: x <= T_LAT_US)),
    ("ping-pong 64 B: half round trip, p99", "us",
     lambda r: (f(r["lat1"], "half_rtt_us_p99"), f(r["lat2"], "half_rtt_us_p99")), None, None),
    (f"64 B RC SEND, {MANY_QPS} QPs: messages/s", "M/s",
     lambda r: (f(r["many1"], "mmsg_per_cpu_s"), f(r["many2"], "mmsg_per_s")),
     lambda r: (f(r["rate1"], "mmsg_per_cpu_s"), f(r["rate2"], "mmsg_per_s")),
     (">= 0.80 x 1 QP", lambda x: x >= T_QPS_RATIO)),
    ("  the same per engine core (slower engine)", "M/s",
     lambda r: (per_engine(r["many1"]), NAN), lambda r: (per_engine(r["rate1"]), NAN),
     (">= 0.80 x 1 QP", lambda x: x >= T_QPS_RATIO)),
]

def med(xs):
    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else float("nan")

def div(x, y):
    return x / y if y == y and y != 0 else NAN

def fmt(x):
    return "-" if x != x else ("%.3g" % x if abs(x) < 100 else "%.0f" % x)

print()
print("A: one lcore runs both hosts (testpmd: one forwarding lcore does tx and rx); rates")
print("   per second of that lcore's CPU time, so the share the machine left it cancels out")
print("   \"per engine core\": the main lcore's time split by engine (A's engine_a/b_ns);")
print("   the slower engine's rate if each engine had a core and the applications another")
print("B: two lcores, a host on each (testpmd as in A); rates per wall-clock second, which")
print("   mean something only where both CPU shares (printed below) are near 1")
hdr = "%-46s %5s | %8s %8s %6s | %8s %8s %6s | %-18s %-4s %-4s" % (
    "figure", "unit", "A", "A base", "A x", "B", "B base", "B x", "target", "A", "B")
print(hdr)
print("-" * len(hdr))
for name, unit, fig, base, target in rows:
    a = med([fig(r)[0] for r in results])
    b = med([fig(r)[1] for r in results])
    if base is not None:
        ab = med([base(r)[0] for r in results])
        bb = med([base(r)[1] for r in results])
        ax = med([div(fig(r)[0], base(r)[0]) for r in results])
        bx = med([div(fig(r)[1], base(r)[1]) for r in results])
    else:
        ab = bb = ax = bx = float("nan")
    tname, ok_a, ok_b = "", "", ""
    if target is not None:
        va, vb = (ax, bx) if base is not None else (a, b)
        ok_a = "-" if va != va else ("met" if target[1](va) else "MISS")
        ok_b = "-" if vb != vb else ("met" if target[1](vb) else "MISS")
        tname = target[0]
    print("%-46s %5s | %8s %8s %6s | %8s %8s %6s | %-18s %-4s %-4s" % (
        name, unit, fmt(a), fmt(ab), fmt(ax), fmt(b), fmt(bb), fmt(bx), tname, ok_a, ok_b))
shares = []
for k in ("raw2", "rate2", "bw2", "lat2", "many2"):
    shares.append("%s %s/%s" % (k[:-1], fmt(med([f(r[k], "cpu_share_main") for r in results])),
                                fmt(med([f(r[k], "cpu_share_worker") for r in results]))))
print("B CPU shares (main/worker): " + ", ".join(shares))
print("testpmd CPU share: %s; A main-lcore shares: %s" % (
    fmt(med([f(r["tpmd"], "cpu_share_worker") for r in results])),
    ", ".join("%s %s" % (k[:-1], fmt(med([f(r[k], "cpu_share_main") for r in results])))
              for k in ("raw1", "rate1", "bw1", "lat1", "many1"))))
print(f"{rounds} round(s), medians; load now: " + open("/proc/loadavg").read().split(" ", 3)[0])
EOF
