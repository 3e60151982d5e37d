#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""app/droce-perf in each mode, briefly: over its internal net_ring pair (no port on the
EAL line) and over two net_memif ports of one process (server on port 0, client on port
1). Every figure must be non-zero and the two ends' counts equal (messages sent =
received, raw frames sent = received: both links are lossless); port statistics must
agree with them. Bad arguments must give a message naming the option and exit status 2.

As test/integration's harness: a unique --file-prefix per run, --no-pci, one lcore,
--no-huge with --no-shconf (nothing left in hugetlbfs; droce-perf removes its runtime
directory), a hard timeout on every process.

    test_perf.py DROCE_PERF
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

TIMEOUT = 60
RUNS = 0


class TestFailure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise TestFailure(msg)


def log(msg):
    print(msg, flush=True)


def eal(vdevs=()):
    global RUNS
    RUNS += 1
    args = ["--no-pci", "--no-huge", "--no-shconf", "--no-telemetry", "-l", "0", "-m", "1024",
            "--file-prefix=droce-perf-test-%d-%d" % (os.getpid(), RUNS),
            "--log-level=lib.eal:warning"]
    return args + ["--vdev=%s" % v for v in vdevs]


def run(perf, eal_args, opts):
    cmd = [perf] + eal_args + ["--"] + opts
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=TIMEOUT)
    return p.returncode, p.stdout, p.stderr, " ".join(cmd)


def run_json(perf, eal_args, opts):
    rc, out, err, cmd = run(perf, eal_args, opts + ["--json"])
    check(rc == 0, "%s: exit %d\n%s" % (cmd, rc, err))
    lines = [json.loads(l) for l in out.splitlines() if l.strip()]
    figs = [l for l in lines if l["figure"] in ("bw", "lat")]
    ports = {l["host"]: l for l in lines if l["figure"] == "port"}
    check(figs, "%s: no figure" % cmd)
    check(set(ports) == {"a", "b"}, "%s: port statistics of %s" % (cmd, sorted(ports)))
    return figs, ports


def check_bw(name, f, ports, raw_io=False):
    for k in ("iterations", "bw_peak_gbps", "bw_average_gbps", "msg_rate_mpps", "sent"):
        check(f[k] > 0, "%s: %s is %s" % (name, k, f[k]))
    check(f["sent"] == f["received"], "%s: sent %d, received %d" %
          (name, f["sent"], f["received"]))
    check(f["bw_peak_gbps"] >= f["bw_average_gbps"] * 0.999, "%s: peak below average" % name)
    a, b = ports["a"], ports["b"]
    for p in (a, b):
        check(p["rx_errors"] == 0 and p["tx_errors"] == 0 and p["rx_missed"] == 0,
              "%s: port errors %s" % (name, p))
    # What one port sent the other received: the links lose nothing.
    check(a["tx_packets"] == b["rx_packets"], "%s: a sent %d packets, b received %d" %
          (name, a["tx_packets"], b["rx_packets"]))
    if raw_io:
        check(b["tx_packets"] == a["rx_packets"], "%s: b sent %d, a received %d" %
              (name, b["tx_packets"], a["rx_packets"]))


def modes(perf, eal_fn, topo):
    # send and write, RC and UC, one QP and several, iterations and duration
    for mode in ("send", "write"):
        for conn in ("RC", "UC"):
            for opts in (["-s", "64", "-n", "5000"], ["-s", "65536", "-q", "4", "-n", "200"],
                         ["-s", "4096", "-m", "1024", "-D", "0.2"],
                         # three engines a host, a queue each way per engine
                         ["-s", "64", "-q", "10000", "-n", "4"]):
                name = "%s %s %s %s" % (topo, mode, conn, " ".join(opts))
                figs, ports = run_json(perf, eal_fn(), ["--mode", mode, "-c", conn] + opts)
                check(len(figs) == 1, "%s: %d figures" % (name, len(figs)))
                f = figs[0]
                check(f["connection"] == conn and f["mode"] == mode, "%s: %s" % (name, f))
                if "-n" in opts:
                    n = int(opts[opts.index("-n") + 1])
                    q = int(opts[opts.index("-q") + 1]) if "-q" in opts else 1
                    check(f["iterations"] == n * q, "%s: %d iterations, not %d" %
                          (name, f["iterations"], n * q))
                check_bw(name, f, ports)
                log("ok %s: %.3f Gb/s %.3f Mpps" % (name, f["bw_average_gbps"],
                                                    f["msg_rate_mpps"]))
    # every size, once
    figs, ports = run_json(perf, eal_fn(), ["--mode", "send", "-a", "-n", "20"])
    check([f["bytes"] for f in figs] == [1 << i for i in range(21)],
          "%s -a: sizes %s" % (topo, [f["bytes"] for f in figs]))
    for f in figs:
        check_bw("%s send -a %d" % (topo, f["bytes"]), f, ports)
    log("ok %s send -a: 21 sizes" % topo)
    # latency
    figs, ports = run_json(perf, eal_fn(), ["--mode", "lat", "-s", "64", "-n", "2000"])
    f = figs[0]
    check(f["iterations"] == 2000, "%s lat: %d iterations" % (topo, f["iterations"]))
    for k in ("t_min_us", "t_max_us", "t_typical_us", "t_avg_us", "p99_us", "p99_9_us"):
        check(f[k] > 0, "%s lat: %s is %s" % (topo, k, f[k]))
    check(f["t_min_us"] <= f["t_typical_us"] <= f["p99_us"] <= f["p99_9_us"] and
          f["t_min_us"] <= f["t_avg_us"] <= f["t_max_us"], "%s lat: order %s" % (topo, f))
    log("ok %s lat: median %.3f us, p99 %.3f us" % (topo, f["t_typical_us"], f["p99_us"]))
    # the raw link
    for mode in ("raw-tx", "raw-rx", "raw-io"):
        for opts in (["-n", "100000"], ["-s", "1024", "-D", "0.2"]):
            name = "%s %s %s" % (topo, mode, " ".join(opts))
            figs, ports = run_json(perf, eal_fn(), ["--mode", mode] + opts)
            f = figs[0]
            if "-n" in opts:
                check(f["iterations"] == 100000, "%s: %d frames" % (name, f["iterations"]))
            check_bw(name, f, ports, raw_io=mode == "raw-io")
            log("ok %s: %.3f Mpps" % (name, f["msg_rate_mpps"]))


def tables(perf):
    """perftest's headers, so scripts that parse ib_write_bw and ib_send_lat parse this."""
    rc, out, err, cmd = run(perf, eal(), ["--mode", "write", "-s", "64", "-n", "1000"])
    check(rc == 0, "%s: exit %d\n%s" % (cmd, rc, err))
    check(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
          in out.splitlines(), "bw header missing:\n" + out)
    row = [l for l in out.splitlines() if l.startswith(" 64 ")]
    check(len(row) == 1 and row[0].split()[1] == "1000", "bw row:\n" + out)
    check("NIC statistics for port 0" in out and "NIC statistics for port 1" in out,
          "port statistics missing:\n" + out)
    rc, out, err, cmd = run(perf, eal(), ["--mode", "lat", "-n", "100"])
    check(rc == 0, "%s: exit %d\n%s" % (cmd, rc, err))
    check(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]"
          "    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] "
          in out.splitlines(), "lat header missing:\n" + out)
    log("ok perftest's table headers")


def bad_args(perf):
    cases = [
        (["--mode", "read"], "--mode 'read'"),
        (["-s", "0"], "--size 0: out of range"),
        (["-s", "1048577"], "--size 1048577: out of range"),
        (["-q", "0"], "--qps 0: out of range"),
        (["-q", "10001"], "--qps 10001: out of range 1..10000"),
        (["-q", "many"], "--qps 'many': not a number"),
        (["-n", "-3"], "--iters '-3': not a number"),
        (["-D", "0"], "--duration '0'"),
        (["-m", "1500"], "--mtu 1500: not 256"),
        (["-m", "8192"], "--mtu 8192: out of range"),
        (["-c", "UD"], "--connection 'UD'"),
        (["--mode", "lat", "-c", "UC"], "--connection UC: only send and write"),
        (["--mode", "lat", "-q", "2"], "--qps: only send and write"),
        (["-a", "-s", "8"], "--size and --all"),
        (["-n", "10", "-D", "1"], "--iters and --duration"),
        (["--loss", "1"], "unknown option '--loss'"),
        (["-i"], "unknown option '-i'"),
        (["-s"], "-s needs an argument"),
        (["stray"], "unexpected argument 'stray'"),
        # a peer in another process (test_perf_peer.py runs them)
        (["--server", "--client", "h"], "--server and --client exclude each other"),
        (["--server", "--mode", "raw-tx"], "--server: only send, write and lat"),
        (["--client", "h", "-a"], "--client: one size and -n iterations"),
        (["--server", "-D", "1"], "--server: one size and -n iterations"),
        (["-p", "18515"], "--port and --ip need --server or --client"),
        (["--server", "-p", "0"], "--port 0: out of range"),
        (["--server", "--ip", "10.1.2"], "--ip '10.1.2': not an IPv4 address"),
        (["--server", "--ip", "10.1.2.3/33"], "--ip's prefix length 33: out of range"),
    ]
    for opts, want in cases:
        rc, out, err, cmd = run(perf, eal(), opts)
        check(rc == 2, "%s: exit %d, not 2" % (cmd, rc))
        check(want in err, "%s: stderr lacks %r:\n%s" % (cmd, want, err))
    # one port on the EAL line needs --server or --client, which need one port
    work = tempfile.mkdtemp(prefix="droce-perf-", dir="/tmp")
    try:
        sock = os.path.join(work, "memif.sock")
        rc, out, err, cmd = run(perf, eal(["net_memif0,role=server,id=0,socket=%s,"
                                           "socket-abstract=no" % sock]), ["--mode", "send"])
        check(rc == 1 and "give none" in err and "or one with --server or --client" in err,
              "%s: exit %d\n%s" % (cmd, rc, err))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rc, out, err, cmd = run(perf, eal(), ["--server"])
    check(rc == 1 and "--server: the EAL line gives 0 port(s), not one" in err,
          "%s: exit %d\n%s" % (cmd, rc, err))
    rc, out, err, cmd = run(perf, eal(), ["--help"])
    check(rc == 0 and "--mode MODE" in out and "--json" in out and "--client HOST" in out,
          "--help: exit %d\n%s" % (rc, out))
    log("ok %d bad arguments refused, --help" % (len(cases) + 2))


def main():
    perf = sys.argv[1]
    work = tempfile.mkdtemp(prefix="droce-perf-", dir="/tmp")
    try:
        bad_args(perf)
        tables(perf)
        modes(perf, eal, "net_ring")

        def memif_eal():
            # bsize 8192: one memif buffer per packet (test/engine/test_engine_memif.c: DPDK
            # 22.11's memif mislabels chained packets' lengths). The server is probed first
            # and listens; the client connects once both are started.
            sock = os.path.join(work, "memif-%d.sock" % (RUNS + 1))
            common = "id=0,socket=%s,socket-abstract=no,bsize=8192" % sock
            return eal(["net_memif0,role=server," + common, "net_memif1,role=client," + common])
        modes(perf, memif_eal, "memif")
    except (TestFailure, subprocess.TimeoutExpired) as e:
        log("FAIL: %s" % e)
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log("ok all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
