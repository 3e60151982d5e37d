#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# rdma_cm connection set-up rate between two droced joined by net_memif, in one run:
#   cmtime    Debian's unmodified cmtime (rdma-core 44) through droce's librdmacm.so.1:
#             N ids created, resolved, given an RC QP each, connected at once, then
#             disconnected; the rate is N / the "connect" step's total (REQ, REP, RTU,
#             both QPs moved to RTR and RTS by the two programs).
#   cm alone  the same daemons' CM without librdmacm and without QPs: test/integration's
#             cm_proto (the channel protocol by hand), N connections, 64 in flight,
#             each connected, established and disconnected.
# ratio = cmtime / cm alone: what the library, the programs and their QPs cost on top of
# droced's CM. Each figure is the median of -r runs. Results: doc/performance.md, "rdma_cm".
#
# Usage: devtools/bench-rdmacm.sh [-c CONNECTIONS] [-r RUNS] [-s IDLE_SLEEP_US]
#   -c  connections per run (default 3000)
#   -r  runs per figure, median reported (default 3)
#   -s  the engines' idle_sleep_us (default 20, what the tests use on two CPUs)
#   DROCE_BENCH_BUILD  build directory (default build-bench); set up with the project's
#                      default options when missing
#
# Every process runs under timeout; daemons have their own file prefixes, sockets and
# configs in a temporary directory and are stopped with SIGTERM; what they leave under this
# run's prefix in /var/run/dpdk and /dev/hugepages is removed at exit, on failure too.

set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

conns=3000
runs=3
sleep_us=20
while getopts "c:r:s:h" opt; do
	case $opt in
	c) conns=$OPTARG ;;
	r) runs=$OPTARG ;;
	s) sleep_us=$OPTARG ;;
	*) sed -n '3,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2 ;;
	esac
done

if ! command -v cmtime >/dev/null; then
	echo "bench-rdmacm: cmtime not found: install rdmacm-utils (devtools/setup.sh does)" >&2
	exit 1
fi

dir=${DROCE_BENCH_BUILD:-build-bench}
prefix=droce-bench-rdmacm-$$
work=$(mktemp -d "/tmp/$prefix-XXXXXX")

. devtools/bench-common.sh
bench_daemon_cleanup "$prefix" "$work"
for t in app/droced/droced test/integration/cm_proto drivers/compat/librdmacm.so.1.3.44 \
	drivers/compat/libibverbs.so.1.14.44; do
	bench_build "$dir" "$t"
done
bench_describe "$dir" "dpdk:     $(pkg-config --modversion libdpdk)" \
	"rdma-core: $(dpkg-query -W -f '${Version}' rdmacm-utils 2>/dev/null || echo '?') (cmtime)" \
	"runs:     $conns connections, median of $runs, idle_sleep_us $sleep_us"

BUILD="$dir" PREFIX="$prefix" WORK="$work" CONNS="$conns" RUNS="$runs" SLEEP="$sleep_us" \
timeout --kill-after=10 1500 /usr/bin/python3 - <<'EOF' &
import os, re, signal, statistics, subprocess, sys, time

sys.path.insert(0, os.path.join(os.getcwd(), "devtools"))
import bench_daemons

build, prefix, work = os.environ["BUILD"], os.environ["PREFIX"], os.environ["WORK"]
conns, runs, sleep_us = int(os.environ["CONNS"]), int(os.environ["RUNS"]), int(os.environ["SLEEP"])
droced = os.path.join(build, "app/droced/droced")
cm_proto = os.path.join(build, "test/integration/cm_proto")
compat = os.path.abspath(os.path.join(build, "drivers/compat"))
RUN_TIMEOUT = 300
signal.signal(signal.SIGTERM, lambda s, f: sys.exit(143))


def daemon(name, device, ipv4):
    d = bench_daemons.daemon(droced, work, prefix, name, device, ipv4, idle_sleep_us=sleep_us)
    bench_daemons.start(work, d)
    return d


def start(argv, d, env=None):
    e = dict(d.env(), **(env or {}))
    return subprocess.Popen(["timeout", "--kill-after=5", str(RUN_TIMEOUT)] + argv,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=e, start_new_session=True)


def serve_and_run(srv_argv, cli_argv, a, b, env=None):
    """A server that serves until killed, and a client whose output is returned (None on
    failure, with the reason on stderr)."""
    srv = start(srv_argv, a, env)
    time.sleep(0.5)
    cli = start(cli_argv, b, env)
    out, _ = cli.communicate()
    os.killpg(srv.pid, signal.SIGKILL)
    srv.communicate()
    if cli.returncode != 0:
        sys.stderr.write("%s: exit %s\n%s\n" % (cli_argv[0], cli.returncode, out[-1500:]))
        return None
    return out


def cmtime_rate(a, b, port):
    out = serve_and_run(["cmtime", "-b", "10.99.0.1", "-c", str(conns), "-p", str(port)],
                        ["cmtime", "-s", "10.99.0.1", "-c", str(conns), "-p", str(port)],
                        a, b, {"LD_LIBRARY_PATH": compat})
    m = out and re.search(r"^connect\s*:\s+([\d.]+)", out, re.M)
    if not m:
        sys.stderr.write("cmtime: no connect row\n%s\n" % (out or "")[-1500:])
        return None
    return conns / (float(m.group(1)) / 1000.0)


def cm_alone_rate(a, b, port):
    out = serve_and_run([cm_proto, "serve", "10.99.0.1", str(port)],
                        [cm_proto, "client", "10.99.0.1", str(port), "rate:%d" % conns], a, b)
    m = out and re.search(r"connections in [\d.]+ s: ([\d.]+)/s", out)
    if not m:
        sys.stderr.write("cm_proto: no rate\n%s\n" % (out or "")[-1500:])
        return None
    return float(m.group(1))


sock = os.path.join(work, "pair.memif")
ds = []
res = {"cmtime": [], "cm alone": []}
try:
    a = daemon("a", "net_memif0,role=server,id=0,socket=%s,bsize=8192" % sock, "10.99.0.1/24")
    ds.append(a)
    b = daemon("b", "net_memif0,role=client,id=0,socket=%s,bsize=8192" % sock, "10.99.0.2/24")
    ds.append(b)
    port = 7600
    for i in range(runs):
        # Alternated, so drift in the machine's load touches both alike.
        for name, fn in (("cm alone", cm_alone_rate), ("cmtime", cmtime_rate)):
            port += 1
            r = fn(a, b, port)
            print("  run %d: %-8s %s connections/s" % (i + 1, name,
                                                      "-" if r is None else "%.0f" % r),
                  flush=True)
            if r is not None:
                res[name].append(r)
finally:
    for d in reversed(ds):
        d.stop(expect_clean=False)

med = {k: statistics.median(v) if v else None for k, v in res.items()}
print()
print("%-44s %14s" % ("figure (two droced over memif)", "connections/s"))
print("%-44s %14s" % ("cm alone: droced's CM, cm_proto, 64 in flight", 
                      "-" if med["cm alone"] is None else "%.0f" % med["cm alone"]))
print("%-44s %14s" % ("cmtime: librdmacm, RC QPs, all at once",
                      "-" if med["cmtime"] is None else "%.0f" % med["cmtime"]))
if med["cm alone"] and med["cmtime"]:
    print("ratio cmtime / cm alone: %.2f" % (med["cmtime"] / med["cm alone"]))
print("load now: " + open("/proc/loadavg").read().split(" ", 3)[0])
sys.exit(0 if all(med.values()) else 1)
EOF
pypid=$!
wait "$pypid"
