#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""app/droce-perf in each mode, briefly: over its internal net_ring pair (no port on the
EAL line) and over two net_memif ports of one process (server on port 0, client on port
1). Every figure must be non-zero and the two ends' counts equal (messages sent =
received, raw frames sent = received: both links are lossless); port statistics must
agree with them. read, atomic (droce-perf checks host b's words itself), UD, IPv6 (on
the wire: memif's byte counts) and the loss options: RC delivers everything with
retransmissions, UD loses exactly what the fault driver drops (sent = received + lost).
Bad arguments must give a message naming the option and exit status 2. With -l 0,1 host b
runs on its own lcore: the same counts must hold, and the header must say so.

As test/integration's harness: a unique --file-prefix per run, --no-pci, one lcore (two
for the split runs),
--no-huge with --no-shconf (nothing left in hugetlbfs; droce-perf removes its runtime
directory), a hard timeout on every process.

    test_perf.py DROCE_PERF GROUP...

GROUP is one of the groups below (GROUPS), each a meson test of its own
(test/perf/meson.build) so that none is one long serial job and meson runs two at a time;
"all" runs every group, in this order. Groups that run at once share nothing: each has its
own --file-prefix per process (the pid in it) and its own temporary directory for the
memif sockets; no TCP port is used (the --server/--client cases are refused before any).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

# TestFailure, check and log: test/integration's harness, as test_perf_peer.py uses.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "integration"))
from droce_harness import TestFailure, check, log  # noqa: E402


# Each process's hard limit, against a hang (droce-perf ends a stalled run itself after
# 10 s). The longest, -q 10000 (20000 QPs made and destroyed): 15 s alone in the ASan
# build, 41 s beside another group and others' load; 60 s was too close. Each group's
# meson timeout bounds the whole.
TIMEOUT = 150
RUNS = 0


def eal(vdevs=(), lcores="0"):
    """lcores "0" or "0,1": the lcore ids, as -l gives them, each free to run on any CPU
    this process may (--lcores ID@(CPUS)): -l 0 would pin every run's lcore 0 to CPU 0, and
    meson runs two of these groups at once (and other tests beside them), all on CPU 0."""
    global RUNS
    RUNS += 1
    cpus = ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))
    cores = "--lcores=" + ",".join("%s@(%s)" % (l, cpus) for l in lcores.split(","))
    args = ["--no-pci", "--no-huge", "--no-shconf", "--no-telemetry", cores, "-m", "1024",
            "--file-prefix=droce-perf-test-%d-%d" % (os.getpid(), RUNS),
            "--log-level=lib.eal:warning"]
    return args + ["--vdev=%s" % v for v in vdevs]


# The longest process of the run and how long it took (against TIMEOUT), for the log.
LONGEST = [0.0, ""]


def run(perf, eal_args, opts):
    cmd = [perf] + eal_args + ["--"] + opts
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=TIMEOUT)
    took = time.monotonic() - t0
    if took > LONGEST[0]:
        LONGEST[:] = [took, " ".join(opts)]
    return p.returncode, p.stdout, p.stderr, " ".join(cmd)


def run_json(perf, eal_args, opts):
    rc, out, err, cmd = run(perf, eal_args, opts + ["--json"])
    check(rc == 0, "%s: exit %d\n%s" % (cmd, rc, err))
    lines = [json.loads(l) for l in out.splitlines() if l.strip()]
    figs = [l for l in lines if l["figure"] in ("bw", "lat")]
    ports = {l["host"]: l for l in lines if l["figure"] == "port"}
    check(figs, "%s: no figure" % cmd)
    check(set(ports) == {"a", "b"}, "%s: port statistics of %s" % (cmd, sorted(ports)))
    faults = {l["host"]: l for l in lines if l["figure"] == "fault"}
    check(set(faults) == ({"a", "b"} if "--loss" in opts else set()),
          "%s: fault counters of %s" % (cmd, sorted(faults)))
    if faults:
        ports["fault"] = faults
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


def modes(perf, eal_fn, topo, parts=("send", "write", "other")):
    """parts: which of its three parts run (each a group of its own): send, write (RC and
    UC, one QP and several, iterations and duration), other (every size, lat, raw)."""
    # send and write, RC and UC, one QP and several, iterations and duration
    for mode in [m for m in ("send", "write") if m in parts]:
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
    if "other" not in parts:
        return
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


def split(perf, eal_fn, topo):
    """Two lcores, neither -i nor --stats-period: host a on the main lcore, host b on the
    worker, each polling its own engines (or port). The counts must stay exact across the
    two: sent = received, port a's TX = port b's RX, as on one lcore."""
    for opts in (["--mode", "send", "-s", "64", "-n", "20000"],
                 ["--mode", "write", "-s", "65536", "-q", "4", "-n", "200"],
                 ["--mode", "read", "-s", "4096", "-n", "2000"],
                 ["--mode", "atomic", "-n", "2000"],
                 ["--mode", "send", "-s", "1024", "-D", "0.2"],
                 ["--mode", "raw-tx", "-n", "100000"],
                 ["--mode", "raw-rx", "-s", "1024", "-D", "0.1"],
                 ["--mode", "raw-io", "-n", "100000"]):
        name = "%s -l 0,1 %s" % (topo, " ".join(opts))
        f, ports = one_fig(perf, eal_fn(lcores="0,1"), opts, name)
        if "-n" in opts:
            n = int(opts[opts.index("-n") + 1])
            q = int(opts[opts.index("-q") + 1]) if "-q" in opts else 1
            check(f["iterations"] == n * q, "%s: %d iterations" % (name, f["iterations"]))
        check_bw(name, f, ports, raw_io=opts[1] == "raw-io")
        log("ok %s: %.3f Mpps" % (name, f["msg_rate_mpps"]))
    f, ports = one_fig(perf, eal_fn(lcores="0,1"), ["--mode", "lat", "-n", "2000"], topo + " lat")
    check(f["iterations"] == 2000 and f["t_min_us"] > 0 and f["t_typical_us"] > 0,
          "%s -l 0,1 lat: %s" % (topo, f))
    log("ok %s -l 0,1 lat: median %.3f us" % (topo, f["t_typical_us"]))
    # the header says which lcore runs which host; UC stays on the main lcore
    for opts, want in ((["--mode", "send", "-n", "100"],
                        " host a on lcore 0 (main), host b on lcore 1"),
                       (["--mode", "raw-tx", "-n", "100"],
                        " host a on lcore 0 (main), host b on lcore 1"),
                       (["--mode", "send", "-c", "UC", "-n", "100"], " both hosts on lcore 0"),
                       (["--mode", "send", "--loss", "1", "-n", "100"],
                        " both hosts on lcore 0")):
        rc, out, err, cmd = run(perf, eal_fn(lcores="0,1"), opts)
        check(rc == 0 and want in out.splitlines(), "%s: exit %d, no %r:\n%s%s" %
              (cmd, rc, want, out, err))
    rc, out, err, cmd = run(perf, eal_fn(lcores="0"), ["--mode", "send", "-n", "100"])
    check(rc == 0 and " both hosts on lcore 0" in out.splitlines(), "%s:\n%s" % (cmd, out))
    log("ok %s: the header names the lcores" % topo)


def one_fig(perf, eal_args, opts, name):
    figs, ports = run_json(perf, eal_args, opts)
    check(len(figs) == 1, "%s: %d figures" % (name, len(figs)))
    return figs[0], ports


def new_modes(perf, eal_fn, topo):
    """read, atomic, UD, IPv6: lossless, so every count agrees as in modes()."""
    for opts in (["--mode", "read", "-s", "64", "-n", "5000"],
                 # 64 READ response packets each, 4 QPs, 16 READs out per QP
                 ["--mode", "read", "-s", "65536", "-m", "1024", "-q", "4", "-n", "100"],
                 ["--mode", "atomic", "-n", "5000"],
                 ["--mode", "atomic", "--atomic-type", "FETCH_AND_ADD", "-q", "3000", "-n", "2"],
                 ["--mode", "atomic", "--atomic-type", "CMP_AND_SWAP", "-q", "4", "-n", "2000"],
                 ["--mode", "send", "-c", "UD", "-s", "64", "-n", "5000"],
                 ["--mode", "send", "-c", "UD", "-s", "4096", "-q", "4", "-n", "500"],
                 ["--mode", "send", "--ipv6", "-s", "64", "-n", "5000"],
                 ["--mode", "write", "--ipv6", "-s", "65536", "-n", "200"]):
        name = "%s %s" % (topo, " ".join(opts))
        f, ports = one_fig(perf, eal_fn(), opts, name)
        n = int(opts[opts.index("-n") + 1])
        q = int(opts[opts.index("-q") + 1]) if "-q" in opts else 1
        check(f["iterations"] == n * q, "%s: %d iterations" % (name, f["iterations"]))
        check(f["mode"] == opts[1], "%s: mode %s" % (name, f["mode"]))
        check(f["connection"] == ("UD" if "UD" in opts else "RC"), "%s: %s" % (name, f))
        check(f["ip"] == ("ipv6" if "--ipv6" in opts else "ipv4"), "%s: ip %s" % (name, f))
        if opts[1] == "atomic":
            check(f["bytes"] == 8, "%s: %d bytes" % (name, f["bytes"]))
        check_bw(name, f, ports)
        log("ok %s: %.3f Gb/s %.3f Mpps" % (name, f["bw_average_gbps"], f["msg_rate_mpps"]))
    # UD, every size up to the MTU
    figs, ports = run_json(perf, eal_fn(), ["-c", "UD", "-a", "-m", "1024", "-n", "20"])
    check([f["bytes"] for f in figs] == [1 << i for i in range(11)],
          "%s UD -a: sizes %s" % (topo, [f["bytes"] for f in figs]))
    for f in figs:
        check_bw("%s UD -a %d" % (topo, f["bytes"]), f, ports)
    log("ok %s send UD -a -m 1024: 11 sizes" % topo)
    # IPv6 on the wire: a UC WRITE of 64 bytes is one frame, IPv6's header 20 bytes more
    # than IPv4's (memif counts bytes; net_ring does not)
    if topo == "memif":
        for ip, frame in (("ipv4", 14 + 20 + 8 + 12 + 16 + 64 + 4),
                          ("ipv6", 14 + 40 + 8 + 12 + 16 + 64 + 4)):
            opts = ["--mode", "write", "-c", "UC", "-s", "64", "-n", "1000"]
            f, ports = one_fig(perf, eal_fn(), opts + (["--ipv6"] if ip == "ipv6" else []),
                               ip)
            check(ports["b"]["rx_packets"] == 1000 and
                  ports["b"]["rx_bytes"] == 1000 * frame,
                  "%s: b received %d packets, %d bytes, not 1000 of %d bytes" %
                  (ip, ports["b"]["rx_packets"], ports["b"]["rx_bytes"], frame))
        log("ok %s --ipv6 on the wire: %d-byte frames" % (topo, frame))


def lossy(perf, eal_fn, topo):
    """The fault driver on both ports: --loss 1 and the rest. It is rx callbacks on the
    port, the same code on either topology: memif runs the RC SEND and the UC/UD cases,
    the internal ring all of them."""
    # RC: everything delivered, by retransmission
    rc_cases = [["--mode", "send", "-s", "64", "-n", "5000"]]
    if topo == "net_ring":
        rc_cases += [["--mode", "send", "-s", "64", "-n", "50000", "-u", "6"],
                     ["--mode", "write", "-s", "65536", "-m", "2048", "-n", "100"],
                     ["--mode", "read", "-s", "16384", "-q", "2", "-n", "100"]]
    for opts in rc_cases:
        name = "%s %s --loss 1" % (topo, " ".join(opts))
        f, ports = one_fig(perf, eal_fn(), opts + ["--loss", "1"], name)
        fa, fb = ports["fault"]["a"], ports["fault"]["b"]
        check(f["sent"] == f["received"] == f["iterations"] and f["lost"] == 0,
              "%s: sent %d, received %d, lost %d" % (name, f["sent"], f["received"], f["lost"]))
        check(fa["dropped"] + fb["dropped"] > 0 and f["retransmits"] > 0,
              "%s: dropped %d + %d, retransmits %d" %
              (name, fa["dropped"], fb["dropped"], f["retransmits"]))
        for h in (fa, fb):
            check(h["received"] + h["duplicated"] ==
                  h["delivered"] + h["dropped"] + h["overflowed"] + h["held"],
                  "%s: fault counters do not add up: %s" % (name, h))
        log("ok %s: %.3f Gb/s goodput, %d retransmits, %d dropped" %
            (name, f["bw_average_gbps"], f["retransmits"], fa["dropped"] + fb["dropped"]))
    # UD and UC with one packet a message: lost = what b's fault driver dropped
    for conn in ("UD", "UC"):
        opts = ["--mode", "send", "-c", conn, "-s", "64", "-n", "5000", "--loss", "1",
                "--fault-seed", "7"]
        name = "%s %s" % (topo, " ".join(opts))
        f, ports = one_fig(perf, eal_fn(), opts, name)
        fb = ports["fault"]["b"]
        check(f["lost"] > 0 and f["sent"] == f["received"] + f["lost"] and
              f["lost"] == fb["dropped"], "%s: sent %d, received %d, lost %d, b dropped %d" %
              (name, f["sent"], f["received"], f["lost"], fb["dropped"]))
        log("ok %s: %d sent = %d received + %d lost" % (name, f["sent"], f["received"],
                                                         f["lost"]))
    # every fault at once: droce-perf's own check (lost within what the driver explains)
    for opts in () if topo != "net_ring" else (["-c", "UD", "-s", "1024"], ["-c", "UC", "-s", "8192", "-m", "1024"],
                 ["-c", "RC", "-s", "4096"]):
        opts = ["--mode", "send", "-n", "1000", "--loss", "1", "--reorder", "1", "--dup", "1",
                "--corrupt", "0.5"] + opts
        name = "%s %s" % (topo, " ".join(opts))
        f, ports = one_fig(perf, eal_fn(), opts, name)
        check(f["received"] > 0, "%s: nothing received" % name)
        if "RC" in opts:
            check(f["sent"] == f["received"], "%s: RC lost messages" % name)
        log("ok %s: %d sent, %d received" % (name, f["sent"], f["received"]))


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
        (["--mode", "bogus"], "--mode 'bogus': not one of send write read atomic lat raw-tx"),
        (["-s", "0"], "--size 0: out of range"),
        (["-s", "1048577"], "--size 1048577: out of range"),
        (["-q", "0"], "--qps 0: out of range"),
        (["-q", "10001"], "--qps 10001: out of range 1..10000"),
        (["-q", "many"], "--qps 'many': not a number"),
        (["-n", "-3"], "--iters '-3': not a number"),
        (["-D", "0"], "--duration '0'"),
        (["-m", "1500"], "--mtu 1500: not 256"),
        (["-m", "8192"], "--mtu 8192: out of range"),
        (["-c", "XRC"], "--connection 'XRC': not RC, UC or UD"),
        (["--mode", "lat", "-c", "UC"], "--connection UC: lat is RC only"),
        (["--mode", "lat", "-q", "2"], "--qps: only send, write, read and atomic"),
        (["-a", "-s", "8"], "--size and --all"),
        (["-n", "10", "-D", "1"], "--iters and --duration"),
        (["--mode", "read", "-c", "UC"], "--connection UC: read is RC only"),
        (["--mode", "atomic", "-c", "UC"], "--connection UC: atomic is RC only"),
        (["--mode", "write", "-c", "UD"], "--connection UD: only send"),
        (["--mode", "read", "-c", "UD"], "--connection UD: only send"),
        (["--mode", "lat", "-c", "UD"], "--connection UD: only send"),
        (["-c", "UD", "-s", "4097"], "--size 4097: a UD message is one packet, at most the MTU"),
        (["-c", "UD", "-m", "256", "-s", "512"], "--size 512: a UD message is one packet"),
        (["--mode", "atomic", "-s", "16"], "--size 16: an atomic operates on 8 bytes"),
        (["--mode", "atomic", "-a"], "--all: atomic has one size"),
        (["--mode", "atomic", "--atomic-type", "SWAP"], "--atomic-type 'SWAP': not"),
        (["--atomic-type", "CMP_AND_SWAP"], "--atomic-type: only with --mode atomic"),
        (["--mode", "atomic", "--atomic-type", "CMP_AND_SWAP", "-q", "1025"],
         "--qps 1025: CMP_AND_SWAP chains"),
        (["--loss", "150"], "--loss 150: out of range 0..100"),
        (["--loss", "much"], "--loss 'much': not a percentage"),
        (["--reorder", "-1"], "--reorder -1: out of range"),
        (["--dup", "101"], "--dup 101: out of range"),
        (["--corrupt", ""], "--corrupt '': not a percentage"),
        (["--fault-seed", "x"], "--fault-seed 'x': not a number"),
        (["-u", "0"], "--timeout 0: out of range 1..31"),
        (["--timeout", "8", "-c", "UC"], "--timeout: the local ACK timer is RC's"),
        (["--mode", "raw-rx", "--dup", "1"], "--dup: the loss options apply to the RoCE modes"),
        (["--mode", "raw-tx", "--ipv6"], "--ipv6: the raw modes send IPv4 frames"),
        (["--delay", "1"], "unknown option '--delay'"),
        (["-i"], "-i needs two lcores"),
        (["-s"], "-s needs an argument"),
        (["stray"], "unexpected argument 'stray'"),
        # a peer in another process (test_perf_peer.py runs them)
        (["--server", "--client", "h"], "--server and --client exclude each other"),
        (["--server", "--mode", "read"], "--server: only send, write, lat and the raw modes"),
        (["--server", "--mode", "raw-tx", "-n", "5"], "--server: in the raw modes the "
         "client's -n or -D ends the run"),
        (["--client", "h", "--mode", "raw-rx", "-a"], "--client: one size"),
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
    check(rc == 0 and all(o in out for o in ("--mode MODE", "--json", "--atomic-type T",
                                              "--ipv6", "--loss PCT", "--fault-seed N",
                                              "--client HOST")),
          "--help: exit %d\n%s" % (rc, out))
    log("ok %d bad arguments refused, --help" % (len(cases) + 2))


def memif_eal_in(work):
    """The EAL line of a net_memif pair in one process, its socket in work (the group's own
    temporary directory: two groups at once never share a socket)."""
    def memif_eal(lcores="0"):
        # bsize 8192: one memif buffer per packet (test/engine/test_engine_memif.c: DPDK
        # 22.11's memif mislabels chained packets' lengths). The server is probed first
        # and listens; the client connects once both are started.
        sock = os.path.join(work, "memif-%d.sock" % (RUNS + 1))
        common = "id=0,socket=%s,socket-abstract=no,bsize=8192" % sock
        return eal(["net_memif0,role=server," + common, "net_memif1,role=client," + common],
                   lcores)
    return memif_eal


def part(fn, *parts):
    """modes() limited to some of its parts."""
    def run_parts(perf, eal_fn, topo):
        fn(perf, eal_fn, topo, parts)
    return run_parts


# Each group a meson test (test/perf/meson.build); together, in this order, what was one
# test. Each entry: (function, topology or None); the memif topology's EAL line is made
# with the group's temporary directory.
GROUPS = {
    "args": [(bad_args, None), (tables, None)],
    "ring_split": [(split, "net_ring")],
    "ring_send": [(part(modes, "send"), "net_ring")],
    "ring_write": [(part(modes, "write"), "net_ring")],
    "ring_other": [(part(modes, "other"), "net_ring")],
    "ring_new": [(new_modes, "net_ring"), (lossy, "net_ring")],
    "memif_split": [(split, "memif")],
    "memif_send": [(part(modes, "send"), "memif")],
    "memif_write": [(part(modes, "write"), "memif")],
    "memif_other": [(part(modes, "other"), "memif")],
    "memif_new": [(new_modes, "memif"), (lossy, "memif")],
}


def main():
    if len(sys.argv) < 3:
        sys.stderr.write("usage: test_perf.py DROCE_PERF GROUP... (GROUP: %s or all)\n" %
                         " ".join(GROUPS))
        return 2
    perf, names = sys.argv[1], sys.argv[2:]
    if names == ["all"]:
        names = list(GROUPS)
    unknown = [n for n in names if n not in GROUPS]
    if unknown:
        sys.stderr.write("test_perf.py: no group %s (groups: %s or all)\n" %
                         (" ".join(unknown), " ".join(GROUPS)))
        return 2
    work = tempfile.mkdtemp(prefix="droce-perf-", dir="/tmp")
    t0 = time.monotonic()
    try:
        for name in names:
            for fn, topo in GROUPS[name]:
                if topo is None:
                    fn(perf)
                else:
                    fn(perf, eal if topo == "net_ring" else memif_eal_in(work), topo)
    except (TestFailure, subprocess.TimeoutExpired) as e:
        log("FAIL: %s" % e)
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log("ok all of %s: %d droce-perf runs in %.1f s, the longest %.1f s (%s)" %
        (" ".join(names), RUNS, time.monotonic() - t0, LONGEST[0], LONGEST[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
