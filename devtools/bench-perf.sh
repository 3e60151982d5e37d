#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Issue 14's benchmark table, measured with droce-perf: two droce-perf processes joined by
# a net_memif pair, one lcore each (the server on CPU 0, the client on CPU 1), and in the
# same run the raw rate of that link (raw-tx from the client, raw-rx at the server).
# Prints every run's figures, then the table with the ratios and the targets
# (doc/performance.md, "droce-perf: the benchmark table").
#
# Usage: devtools/bench-perf.sh [-r ROUNDS] [-s SCALE]
#   -r  rounds of the whole set (default 1); with more, the table gives medians
#   -s  scales every run's message count (default 1; 2 doubles them)
#   DROCE_BENCH_BUILD  build directory (default build-bench); set up with the project's
#                      default options (debugoptimized, no sanitizers) when missing
#
# Every process runs under timeout with its own --file-prefix, --no-pci and one lcore;
# hugepages when the EAL gets them, else --no-huge. What the EAL leaves under this run's
# prefix, and the memif socket, are removed at exit.

set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

rounds=1
scale=1
while getopts "r:s:h" opt; do
	case $opt in
	r) rounds=$OPTARG ;;
	s) scale=$OPTARG ;;
	*) sed -n '3,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2 ;;
	esac
done

dir=${DROCE_BENCH_BUILD:-build-bench}
prefix=droce-bench-perf-$$
work=$(mktemp -d /tmp/droce-bench-perf.XXXXXX)

cleanup() {
	rm -rf /var/run/dpdk/"$prefix"* 2>/dev/null || true
	rm -f /dev/hugepages/"$prefix"* 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

. devtools/bench-common.sh
bench_build "$dir" app/droce-perf/droce-perf
bench_describe "$dir" "dpdk:     $(pkg-config --modversion libdpdk), net_memif between two processes, one lcore each"

PERF="$dir/app/droce-perf/droce-perf" PREFIX="$prefix" WORK="$work" ROUNDS="$rounds" \
SCALE="$scale" /usr/bin/python3 - <<'EOF'
import json, os, resource, statistics, subprocess, sys, time

perf, prefix, work = os.environ["PERF"], os.environ["PREFIX"], os.environ["WORK"]
rounds, scale = int(os.environ["ROUNDS"]), float(os.environ["SCALE"])
run_timeout = 300
no_huge = False
runs = 0

# Targets (issue 14): ratios against the same run's baselines, and one absolute rate.
T_RAW, T_CORE, T_BW, T_QPS, T_LOSS = 0.8, 15.0, 0.9, 0.8, 0.9

def eal(lcore, vdev):
    global runs
    runs += 1
    mem = ["--no-huge", "--no-shconf", "-m", "1024"] if no_huge else ["-m", "1024"]
    return ["--no-pci", "--no-telemetry", "-l", str(lcore), "--log-level=lib.eal:warning",
            "--file-prefix=%s-%d" % (prefix, runs), "--vdev=" + vdev] + mem

def pair(opts, n_tag, client_only=()):
    """One server and one client with the same droce-perf options (client_only: the
    client's alone, as the raw modes' -n and -D): their JSON figures and CPU seconds, or
    None (the reason on stderr)."""
    global no_huge
    for attempt in range(2):
        port = 20000 + (os.getpid() + runs) % 20000
        sock = os.path.join(work, "memif-%d.sock" % runs)
        common = "id=0,socket=%s,socket-abstract=no,bsize=8192" % sock
        srv_cmd = ["timeout", str(run_timeout), perf] + \
            eal(0, "net_memif0,role=server," + common) + \
            ["--", "--server", "-p", str(port), "--json"] + opts
        cli_cmd = ["timeout", str(run_timeout), perf] + \
            eal(1, "net_memif0,role=client," + common) + \
            ["--", "--client", "127.0.0.1", "-p", str(port), "--json"] + opts + \
            list(client_only)
        srv_out = open(os.path.join(work, "srv.out"), "w+")
        srv_err = open(os.path.join(work, "srv.err"), "w+")
        srv = subprocess.Popen(srv_cmd, stdout=srv_out, stderr=srv_err, text=True)
        # the memif client connects to a listening server: once its socket is there
        deadline = time.monotonic() + 20
        while not os.path.exists(sock) and srv.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.2)
        cli_out = open(os.path.join(work, "cli.out"), "w+")
        cli_err = open(os.path.join(work, "cli.err"), "w+")
        cli = subprocess.Popen(cli_cmd, stdout=cli_out, stderr=cli_err, text=True)
        # wait4: each process's CPU time, set-up included
        _, cst, cru = os.wait4(cli.pid, 0)
        _, sst, sru = os.wait4(srv.pid, 0)
        for f in (srv_out, srv_err, cli_out, cli_err):
            f.seek(0)
        sout, serr, cout, cerr = srv_out.read(), srv_err.read(), cli_out.read(), cli_err.read()
        for f in (srv_out, srv_err, cli_out, cli_err):
            f.close()
        crc, src = os.waitstatus_to_exitcode(cst), os.waitstatus_to_exitcode(sst)
        if (crc == 3 or src == 3) and not no_huge:
            print("hugepages: the EAL did not start with them; --no-huge from now on")
            no_huge = True
            continue
        break
    if crc != 0 or src != 0:
        sys.stderr.write("%s: server exit %d, client exit %d\n%s\n%s\n" %
                         (n_tag, src, crc, serr[-1500:], cerr[-1500:]))
        return None
    def figs(out):
        return [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    s = [f for f in figs(sout) if f["figure"] == "bw"]
    c = [f for f in figs(cout) if f["figure"] == "bw"]
    if len(s) != 1 or len(c) != 1:
        sys.stderr.write("%s: no figure\n%s\n%s\n" % (n_tag, sout, cout))
        return None
    r = {"server": s[0], "client": c[0],
         "cpu_server": sru.ru_utime + sru.ru_stime, "cpu_client": cru.ru_utime + cru.ru_stime}
    print("%-22s server %.3f Mmsg/s %.2f Gb/s recv %s | client %.3f Mmsg/s sent %s "
          "retx %s | CPU s %.2f / %.2f" % (
              n_tag, s[0]["msg_rate_mpps"], s[0]["bw_average_gbps"], s[0]["received"],
              c[0]["msg_rate_mpps"], c[0]["sent"], c[0].get("retransmits"),
              r["cpu_server"], r["cpu_client"]))
    return r

def n(x):
    return str(max(1, int(x * scale)))

results = []
for rnd in range(rounds):
    print("--- round %d of %d" % (rnd + 1, rounds))
    r = {}
    # the raw link: what the server received while the client sent for -D seconds
    r["raw64"] = pair(["--mode", "raw-rx", "-s", "64"], "raw 64 B", ["-D", "%.2f" % max(0.2, 2 * scale)])
    r["raw4k"] = pair(["--mode", "raw-rx", "-s", "4096"], "raw 4096 B", ["-D", "%.2f" % max(0.2, 2 * scale)])
    r["send64"] = pair(["--mode", "send", "-s", "64", "-n", n(20000000)], "RC SEND 64 B")
    r["send64k"] = pair(["--mode", "send", "-s", "65536", "-n", n(100000)], "RC SEND 64 KiB")
    r["write64k"] = pair(["--mode", "write", "-s", "65536", "-n", n(100000)], "RC WRITE 64 KiB")
    r["qps10k"] = pair(["--mode", "send", "-s", "64", "-q", "10000", "-n", n(1000)],
                       "RC SEND 64 B 10000 QPs")
    r["loss"] = pair(["--mode", "send", "-s", "64", "-n", n(3000000), "--loss", "1"],
                     "RC SEND 64 B 1% loss")
    r["loss64k"] = pair(["--mode", "write", "-s", "65536", "-n", n(30000), "--loss", "1"],
                        "RC WRITE 64 KiB 1% loss")
    results.append(r)

NAN = float("nan")

def g(r, key, side, field):
    x = r.get(key)
    return NAN if x is None else float(x[side][field])

def rate(r, key):
    """Messages (frames) a second the server received: what was delivered."""
    return g(r, key, "server", "msg_rate_mpps")

def gbps(r, key):
    return g(r, key, "server", "bw_average_gbps")

def raw_payload_gbps(r, key, size):
    return rate(r, key) * 1e6 * size * 8 / 1e9

def core_rate(r, key):
    """The rate per engine core: each side is one lcore that busy-polls its engine and runs
    its application for the whole run, so the rate is what one core did (the sender's
    core: engine and droce-perf posting; the receiver's: engine, ACKs and reposting)."""
    return rate(r, key)

rows = [
    ("raw link, 64 B RoCE-sized frames: frames/s", "M/s", lambda r: rate(r, "raw64"),
     None, None),
    ("64 B RC SEND, 1 QP: messages/s", "M/s", lambda r: rate(r, "send64"),
     lambda r: rate(r, "raw64"), (">= 0.8 x raw", lambda x: x >= T_RAW)),
    ("  per engine core (one lcore a side, app included)", "M/s",
     lambda r: core_rate(r, "send64"), None, (">= 15 M/s", lambda x: x >= T_CORE)),
    ("raw link, 4096 B payload frames: payload", "Gb/s",
     lambda r: raw_payload_gbps(r, "raw4k", 4096), None, None),
    ("64 KiB RC SEND, 1 QP: payload", "Gb/s", lambda r: gbps(r, "send64k"),
     lambda r: raw_payload_gbps(r, "raw4k", 4096), (">= 0.9 x raw", lambda x: x >= T_BW)),
    ("64 KiB RC WRITE, 1 QP: payload", "Gb/s", lambda r: gbps(r, "write64k"),
     lambda r: raw_payload_gbps(r, "raw4k", 4096), (">= 0.9 x raw", lambda x: x >= T_BW)),
    ("64 B RC SEND, 10000 QPs: messages/s", "M/s", lambda r: rate(r, "qps10k"),
     lambda r: rate(r, "send64"), (">= 0.8 x 1 QP", lambda x: x >= T_QPS)),
    ("64 B RC SEND, 1% loss each way: goodput", "M/s", lambda r: rate(r, "loss"),
     lambda r: rate(r, "send64"), (">= 0.9 x no loss", lambda x: x >= T_LOSS)),
    ("64 KiB RC WRITE, 1% loss each way: goodput", "Gb/s", lambda r: gbps(r, "loss64k"),
     lambda r: gbps(r, "write64k"), (">= 0.9 x no loss", lambda x: x >= T_LOSS)),
]

def med(xs):
    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else NAN

def fmt(x):
    return "-" if x != x else ("%.3g" % x if abs(x) < 100 else "%.0f" % x)

print()
hdr = "%-50s %5s | %8s %8s %6s | %-18s %s" % ("figure", "unit", "value", "base", "x",
                                               "target", "")
print(hdr)
print("-" * len(hdr))
for name, unit, fig, base, target in rows:
    v = med([fig(r) for r in results])
    b = med([base(r) for r in results]) if base else NAN
    x = med([fig(r) / base(r) for r in results]) if base else NAN
    ok = ""
    if target is not None:
        t = x if base else v
        ok = "-" if t != t else ("met" if target[1](t) else "MISSED")
    print("%-50s %5s | %8s %8s %6s | %-18s %s" % (name, unit, fmt(v), fmt(b), fmt(x),
                                                  target[0] if target else "", ok))
print("%d round(s), medians; load now: %s" % (rounds, open("/proc/loadavg").read().split()[0]))
EOF
