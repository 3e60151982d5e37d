#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""app/droce-perf with its peer in another process, over perftest's out-of-band TCP
exchange (doc/tools/droce-perf-oob.md):

- memif_*: two droce-perf processes joined by a net_memif pair, one --server (the memif
  server), one --client, in send and write (one QP and four, RC: UC loses what a port
  refuses while the receiving process is off its CPU) and lat. Both exit 0, both print a
  non-zero figure, the client sent -n times -q messages and the server received as many
  (write: the server also checks the count the client reports over the exchange against
  what its responder placed). raw-tx, raw-rx (by -D) and raw-io: both print the same
  counts, exchanged at the end; the server received at most what the client sent (a memif
  link between processes may drop), raw-io got back at most what the server sent back;
  a client in a RoCE mode against a raw server is refused.
- perftest_*: droce-perf against Debian's unmodified perftest (ib_write_bw, ib_send_bw,
  ib_send_lat) running over droced (LD_LIBRARY_PATH at droce's libibverbs.so.1), droced's
  port a net_memif server and droce-perf the memif client, in both roles. perftest's
  table row has the right size and iteration count and a non-zero figure, droce-perf's
  count of messages sent or received equals perftest's iterations, and the peer's MAC
  was learnt by ARP both ways (perftest sends none).

Every process has a hard timeout, its own --file-prefix and TCP port (a range keyed by
the pid, so concurrent runs do not meet), and is killed with its process group on
failure; droced is stopped and its files removed.

    test_perf_peer.py DROCE_PERF DROCED COMPAT_DIR [CASE...]
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "integration"))
from droce_harness import ChildOutput, Daemon, TestFailure, Workdir, check, log  # noqa: E402

TIMEOUT = 40            # any one process
ARGS = sys.argv[1:]
if len(ARGS) < 3:
    sys.stderr.write("usage: %s DROCE_PERF DROCED COMPAT_DIR [CASE...]\n" % sys.argv[0])
    sys.exit(2)
PERF, DROCED, COMPAT = (os.path.abspath(a) for a in ARGS[:3])
ONLY = ARGS[3:]
RUNS = 0
# TCP ports: 100 per pid (mod 300) from 20000; each one checked free before use.
PORT_BASE = 20000 + (os.getpid() % 300) * 100
# A droce-perf --server's line once its port waits for the client's link.
LINK_WAIT = "port 0 started, waiting for its link"
ROW_BW = re.compile(r"^[ \t]*(\d+)[ \t]+(\d+)[ \t]+([\d.]+)[ \t]+([\d.]+)[ \t]+([\d.]+)[ \t]*$",
                    re.M)
ROW_LAT = re.compile(r"^[ \t]*(\d+)[ \t]+(\d+)((?:[ \t]+[\d.]+){7})[ \t]*$", re.M)


def tcp_port():
    global RUNS
    while RUNS < 100:
        RUNS += 1
        port = PORT_BASE + RUNS
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            try:
                s.bind(("::", port))
                return port
            except OSError:
                continue
    raise TestFailure("no free TCP port in %d..%d" % (PORT_BASE, PORT_BASE + 100))


class Proc:
    """A process with a hard timeout, its output in a file, killed with its group."""

    def __init__(self, argv, work, name, env=None):
        self.name = name
        self.cmd = " ".join(argv)
        # a droce-perf's DPDK runtime directory, removed if it was killed before it could
        self.rundir = None
        for a in argv:
            if a.startswith("--file-prefix="):
                self.rundir = "/var/run/dpdk/" + a.split("=", 1)[1]
        self.out = ChildOutput(work.path)
        self.proc = self.out.popen(["timeout", "--kill-after=5", str(TIMEOUT)] + argv,
                                   text=True, env=env, start_new_session=True)

    def text(self):
        return self.out.text()

    def wait(self):
        try:
            self.proc.wait(TIMEOUT + 10)
        except subprocess.TimeoutExpired:
            self.kill()
        return self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        if self.rundir is not None:
            shutil.rmtree(self.rundir, ignore_errors=True)


def perf_argv(work, tag, lcore, vdev, opts):
    prefix = "droce-perf-peer-%d-%s-%d" % (os.getpid(), tag, RUNS)
    return [PERF, "--no-pci", "--no-huge", "--no-shconf", "--no-telemetry", "-l", str(lcore),
            "-m", "1024", "--file-prefix=" + prefix, "--log-level=lib.eal:warning",
            "--vdev=" + vdev, "--"] + opts + ["--json"]


def wait_printed(proc, text):
    """Until proc prints text; fails if it exits first or TIMEOUT passes."""
    deadline = time.monotonic() + TIMEOUT
    while text not in proc.text():
        check(proc.proc.poll() is None and time.monotonic() < deadline,
              "%s did not print %r:\n%s" % (proc.name, text, proc.text()))
        time.sleep(0.05)


def run_both(first, second, work, ready=None):
    """Starts first (the side that listens or serves memif), then second once first printed
    ready (perftest's client tries to connect only once; a droce-perf client waits a
    bounded time for its memif link, so it starts once the server's port waits for it, not
    after a guess at how long the server's start takes on a loaded machine) or after
    0.5 s; both must exit 0. Returns their outputs."""
    a = Proc(first[0], work, first[1], first[2] if len(first) > 2 else None)
    b = None
    try:
        if ready is not None:
            wait_printed(a, ready)
        else:
            time.sleep(0.5)
        b = Proc(second[0], work, second[1], second[2] if len(second) > 2 else None)
        rc_b = b.wait()
        if rc_b != 0:
            a.kill()
        rc_a = a.wait()
        if rc_a != 0 or rc_b != 0:
            raise TestFailure("%s exit %s, %s exit %s\n--- %s: %s\n%s\n--- %s: %s\n%s" %
                              (a.name, rc_a, b.name, rc_b, a.name, a.cmd, a.text(), b.name,
                               b.cmd, b.text()))
        return a.text(), b.text()
    finally:
        a.kill()
        if b is not None:
            b.kill()


def figure(out, who):
    figs = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    figs = [f for f in figs if f["figure"] in ("bw", "lat")]
    check(len(figs) == 1, "%s: %d figures in:\n%s" % (who, len(figs), out))
    return figs[0]


def check_bw(f, who, size):
    check(f["bytes"] == size, "%s: %d bytes, not %d" % (who, f["bytes"], size))
    for k in ("iterations", "bw_peak_gbps", "bw_average_gbps", "msg_rate_mpps"):
        check(f[k] > 0, "%s: %s is %s" % (who, k, f[k]))


def check_lat(f, who, iters):
    check(f["iterations"] == iters, "%s: %d iterations, not %d" % (who, f["iterations"], iters))
    for k in ("t_min_us", "t_typical_us", "t_avg_us", "t_max_us"):
        check(f[k] > 0, "%s: %s is %s" % (who, k, f[k]))
    check(f["t_min_us"] <= f["t_avg_us"] <= f["t_max_us"], "%s: order %s" % (who, f))


# ---- two droce-perf processes over net_memif ----

def memif_pair(mode, opts, size, iters, qps=1):
    work = Workdir("perf-peer")
    try:
        port = tcp_port()
        sock = work.file("memif.sock")
        common = "id=0,socket=%s,socket-abstract=no,bsize=8192" % sock
        o = ["--mode", mode, "-p", str(port), "-s", str(size), "-n", str(iters),
             "-q", str(qps)] + opts
        # lcores 0 and 1: the two busy-polling processes on different CPUs
        srv = perf_argv(work, "s", 0, "net_memif0,role=server," + common, ["--server"] + o)
        cli = perf_argv(work, "c", 1, "net_memif0,role=client," + common,
                        ["--client", "localhost"] + o)
        out_s, out_c = run_both((srv, "server"), (cli, "client"), work, ready=LINK_WAIT)
    finally:
        work.close()
    fs, fc = figure(out_s, "server"), figure(out_c, "client")
    name = "%s %s" % (mode, " ".join(opts))
    if mode == "lat":
        check_lat(fs, name + " server", iters)
        check_lat(fc, name + " client", iters)
        return "median %.2f us" % fc["t_typical_us"]
    n = iters * qps
    check_bw(fs, name + " server", size)
    check_bw(fc, name + " client", size)
    check(fc["sent"] == n and fc["iterations"] == n,
          "%s: the client sent %s, not %d" % (name, fc["sent"], n))
    check(fc["received"] is None, "%s: the client claims the server's count" % name)
    check(fs["received"] == fc["sent"], "%s: the server received %s, the client sent %s" %
          (name, fs["received"], fc["sent"]))
    # write: the client's count reached the server over the bandwidth report
    if mode == "write":
        check(fs["sent"] == fc["sent"], "%s: the server was told %s sent" % (name, fs["sent"]))
    return "%.3f Gb/s" % fc["bw_average_gbps"]


def memif_raw(mode, opts, iters=None):
    """The raw modes between two droce-perf processes: the client transmits (-n or -D,
    its alone), the server counts until the client's end message; both print the same
    figure from the counts they exchanged. A memif link between processes may drop what
    arrives while the receiver is off its CPU: the server's count may fall short of the
    client's, never exceed it."""
    work = Workdir("perf-peer")
    try:
        port = tcp_port()
        sock = work.file("memif.sock")
        common = "id=0,socket=%s,socket-abstract=no,bsize=8192" % sock
        o = ["--mode", mode, "-p", str(port)]
        srv = perf_argv(work, "s", 0, "net_memif0,role=server," + common, ["--server"] + o)
        cli = perf_argv(work, "c", 1, "net_memif0,role=client," + common,
                        ["--client", "localhost"] + o + opts)
        out_s, out_c = run_both((srv, "server"), (cli, "client"), work, ready=LINK_WAIT)
    finally:
        work.close()
    fs, fc = figure(out_s, "server"), figure(out_c, "client")
    name = "%s %s" % (mode, " ".join(opts))
    check_bw(fs, name + " server", 64)
    check_bw(fc, name + " client", 64)
    # the exchange of counts: both ends print the same counts and figure
    for k in ("iterations", "sent", "received", "lost", "server_received",
              "server_sent_back", "seconds", "bw_average_gbps"):
        check(fs[k] == fc[k], "%s: the server's %s is %s, the client's %s" %
              (name, k, fs[k], fc[k]))
    sent, rx = fc["sent"], fc["server_received"]
    if iters is not None:
        check(sent == iters, "%s: the client sent %d, not %d" % (name, sent, iters))
    check(0 < rx <= sent, "%s: the server received %d of %d" % (name, rx, sent))
    if mode == "raw-io":
        back, fwd = fc["received"], fc["server_sent_back"]
        check(0 < back <= fwd <= rx, "%s: %d back of %d sent back of %d received" %
              (name, back, fwd, rx))
        check(fc["iterations"] == fwd and fc["lost"] == sent - back,
              "%s: iterations %d, lost %d" % (name, fc["iterations"], fc["lost"]))
    else:
        check(fc["received"] == rx and fc["lost"] == sent - rx,
              "%s: received %s, lost %s" % (name, fc["received"], fc["lost"]))
        check(fc["iterations"] == (sent if mode == "raw-tx" else rx),
              "%s: iterations %d" % (name, fc["iterations"]))
    # the text line with the counts, which the server prints (--json here: the fields)
    return "%.3f Mpps, %d sent, %d received" % (fc["msg_rate_mpps"], sent, rx)


def t_memif_raw_tx():
    return memif_raw("raw-tx", ["-n", "1000000"], 1000000)


def t_memif_raw_rx():
    return memif_raw("raw-rx", ["-D", "0.3"])


def t_memif_raw_io():
    return memif_raw("raw-io", ["-n", "200000", "--burst", "16"], 200000)


def t_memif_raw_mismatch():
    """Both ends must run the same raw mode: each refuses the other with a message."""
    work = Workdir("perf-peer")
    try:
        port = tcp_port()
        sock = work.file("memif.sock")
        common = "id=0,socket=%s,socket-abstract=no,bsize=8192" % sock
        srv = Proc(perf_argv(work, "s", 0, "net_memif0,role=server," + common,
                             ["--server", "--mode", "raw-rx", "-p", str(port)]), work, "server")
        try:
            # The client waits a bounded time for its link: started once the server waits
            # for it, as run_both does (a guess of 0.5 s fell short: ASan's start of the
            # server took longer than the client's 10 s on a busy machine).
            wait_printed(srv, LINK_WAIT)
            cli = Proc(perf_argv(work, "c", 1, "net_memif0,role=client," + common,
                                 ["--client", "localhost", "--mode", "send", "-p", str(port)]),
                       work, "client")
            try:
                rc_c, rc_s = cli.wait(), srv.wait()
                check(rc_s == 1 and "is not droce-perf in a raw mode" in srv.text(),
                      "server: exit %s\n%s" % (rc_s, srv.text()))
                check(rc_c == 1, "client: exit %s\n%s" % (rc_c, cli.text()))
            finally:
                cli.kill()
        finally:
            srv.kill()
    finally:
        work.close()
    return "refused"


# ---- droce-perf against perftest over droced ----

def perftest_rows(out, prog, lat):
    rows = [m.groups() for m in (ROW_LAT if lat else ROW_BW).finditer(out)]
    check(len(rows) == 1, "%s: %d result rows in:\n%s" % (prog, len(rows), out))
    r = rows[0]
    vals = [float(v) for v in (r[2].split() if lat else r[2:])]
    return int(r[0]), int(r[1]), vals


def sanitizer_preload():
    """The sanitizer runtimes droce's libibverbs.so.1 links in an ASan build: perftest is
    not instrumented, so they must be loaded first (LD_PRELOAD)."""
    out = subprocess.run(["ldd", os.path.join(COMPAT, "libibverbs.so.1")],
                         capture_output=True, text=True, timeout=30).stdout
    return [m.group(1) for m in re.finditer(r"lib(?:a|ub)san\.so\S* => (\S+)", out)]


def perftest_env(daemon):
    env = daemon.env()
    env["LD_LIBRARY_PATH"] = COMPAT
    preload = sanitizer_preload()
    if preload:
        env["LD_PRELOAD"] = " ".join(preload)
        # perftest's own allocations are not ours to judge; droce's library's errors are
        env["ASAN_OPTIONS"] = "halt_on_error=1:abort_on_error=1:detect_leaks=0"
    return env


def with_perftest(prog, mode, role, size, iters, qps=1):
    """droce-perf as role (server or client) against prog in the other role, prog over
    droced, both with -q qps. Returns droce-perf's figure and perftest's row (bandwidth
    in Gb/s, --report_gbits, as droce-perf's)."""
    work = Workdir("perf-peer")
    d = Daemon(DROCED, work, "pt",
               "net_memif0,role=server,id=0,socket=%s,bsize=8192" % work.file("pt.memif"),
               "10.99.0.1/24", mtu=4096, lcore=1)
    clean = False
    try:
        d.start()
        port = tcp_port()
        o = ["--mode", mode, "-p", str(port), "-s", str(size), "-n", str(iters),
             "-q", str(qps), "--ip", "10.99.0.2/24"]
        vdev = "net_memif0,role=client,id=0,socket=%s,bsize=8192" % work.file("pt.memif")
        pt = [prog, "-d", "droce0", "-p", str(port), "-s", str(size), "-n", str(iters)]
        if mode != "lat":
            pt += ["-q", str(qps), "--report_gbits"]
        env = perftest_env(d)
        if role == "server":
            perf = perf_argv(work, "s", 0, vdev, ["--server"] + o)
            out_perf, out_pt = run_both((perf, "droce-perf --server"),
                                        (pt + ["127.0.0.1"], prog, env), work,
                                        ready="waiting for the client on TCP port")
        else:
            perf = perf_argv(work, "c", 0, vdev, ["--client", "127.0.0.1"] + o)
            out_pt, out_perf = run_both((pt, prog, env), (perf, "droce-perf --client"), work)
        clean = True
    finally:
        try:
            d.stop(expect_clean=clean)
        finally:
            work.close()
    name = "%s against %s" % (role, prog)
    bad = [l for l in out_pt.splitlines()
           if re.search(r"error|fail|couldn't|unable", l, re.I)]
    check(not bad, "%s: perftest reported %s\n%s" % (name, bad, out_pt))
    lat = mode == "lat"
    psize, piters, vals = perftest_rows(out_pt, prog, lat)
    # a _bw test counts the messages of all its QPs
    n = iters if lat else iters * qps
    check(psize == size and piters == n, "%s: perftest's row is %d bytes %d iterations, "
          "not %d %d:\n%s" % (name, psize, piters, size, n, out_pt))
    # bw: the average; lat: t_min. Zero means nothing was measured.
    check((vals[0] if lat else vals[1]) > 0, "%s: perftest's row %s" % (name, vals))
    f = figure(out_perf, "droce-perf")
    if lat:
        check_lat(f, name, iters)
    else:
        check_bw(f, name, size)
        count = f["received"] if role == "server" else f["sent"]
        check(count == n, "%s: droce-perf %s %s messages, perftest %d" %
              (name, "received" if role == "server" else "sent", count, n))
    return f, vals


def t_memif_send():
    return memif_pair("send", [], 4096, 2000)


def t_memif_send_4qps():
    return memif_pair("send", [], 65536, 300, qps=4)


def t_memif_write():
    return memif_pair("write", [], 65536, 1000)


def t_memif_write_4qps():
    # UC is not run here: a port refusing packets while the receiving process is off its
    # CPU drops them (the engine's tx_drop), which only RC recovers
    return memif_pair("write", [], 1024, 1000, qps=4)


def t_memif_lat():
    return memif_pair("lat", [], 64, 1000)


def t_perftest_write_client():
    f, vals = with_perftest("ib_write_bw", "write", "client", 65536, 2000)
    # the ib_write_bw server prints the report droce-perf sent over the exchange
    check(abs(vals[1] - f["bw_average_gbps"]) < 0.01, "ib_write_bw server printed %s, "
          "droce-perf reported %s" % (vals, f))
    return "%.3f Gb/s" % f["bw_average_gbps"]


def t_perftest_write_server():
    f, vals = with_perftest("ib_write_bw", "write", "server", 65536, 2000)
    check(f["sent"] == 2000, "droce-perf --server: the ib_write_bw client reported %s" %
          f["sent"])
    return "%.3f Gb/s" % vals[1]


def t_perftest_write_client_2qps():
    # 1 KiB messages: droce-perf's WRITEs wrap within each QP's buffer of perftest's MR
    f, _ = with_perftest("ib_write_bw", "write", "client", 1024, 2000, qps=2)
    return "%.3f Gb/s" % f["bw_average_gbps"]


def t_perftest_write_server_2qps():
    f, vals = with_perftest("ib_write_bw", "write", "server", 1024, 2000, qps=2)
    check(f["sent"] == 4000, "droce-perf --server: the ib_write_bw client reported %s" %
          f["sent"])
    return "%.3f Gb/s" % vals[1]


def t_perftest_send_client():
    f, _ = with_perftest("ib_send_bw", "send", "client", 4096, 2000)
    return "%.3f Gb/s" % f["bw_average_gbps"]


def t_perftest_send_server():
    f, vals = with_perftest("ib_send_bw", "send", "server", 4096, 2000)
    return "%.3f Gb/s" % vals[1]


def t_perftest_send_server_4qps():
    f, vals = with_perftest("ib_send_bw", "send", "server", 4096, 500, qps=4)
    return "%.3f Gb/s" % vals[1]


def t_perftest_lat_client():
    f, _ = with_perftest("ib_send_lat", "lat", "client", 2, 1000)
    return "median %.2f us" % f["t_typical_us"]


def t_perftest_lat_server():
    f, _ = with_perftest("ib_send_lat", "lat", "server", 2, 1000)
    return "median %.2f us" % f["t_typical_us"]


CASES = [
    ("memif_send", t_memif_send),
    ("memif_send_4qps", t_memif_send_4qps),
    ("memif_write", t_memif_write),
    ("memif_write_4qps", t_memif_write_4qps),
    ("memif_lat", t_memif_lat),
    ("memif_raw_tx", t_memif_raw_tx),
    ("memif_raw_rx", t_memif_raw_rx),
    ("memif_raw_io", t_memif_raw_io),
    ("memif_raw_mismatch", t_memif_raw_mismatch),
    ("perftest_write_client", t_perftest_write_client),
    ("perftest_write_server", t_perftest_write_server),
    ("perftest_write_client_2qps", t_perftest_write_client_2qps),
    ("perftest_write_server_2qps", t_perftest_write_server_2qps),
    ("perftest_send_client", t_perftest_send_client),
    ("perftest_send_server", t_perftest_send_server),
    ("perftest_send_server_4qps", t_perftest_send_server_4qps),
    ("perftest_lat_client", t_perftest_lat_client),
    ("perftest_lat_server", t_perftest_lat_server),
]


def main():
    failed = []
    ran = 0
    for name, fn in CASES:
        if ONLY and name not in ONLY:
            continue
        ran += 1
        t0 = time.monotonic()
        try:
            what = fn()
            log("ok   %s (%.1f s): %s" % (name, time.monotonic() - t0, what))
        except Exception as e:  # report and go on with the next case
            failed.append(name)
            log("FAIL %s (%.1f s): %s" % (name, time.monotonic() - t0, e))
    if ran == 0:
        log("FAIL no test case selected")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
