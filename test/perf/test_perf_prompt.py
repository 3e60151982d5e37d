#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""app/droce-perf's prompt (-i), --auto-start --stats-period, --burst and --rate.

The prompt is driven through a stdin pipe, command by command: each command's output is
what comes between its echo and the next prompt (stderr is merged into stdout, so error
messages land there too). --json makes figures and statistics parseable. Checked: help
lists every command; start, show port stats all (counts grow), stop (a figure, sent ==
received); set size / qps / mode start runs with the new settings, hosts set up again
where needed (over the internal net_ring pair and over a memif pair); show qp stats agrees
with the figure; clear port stats all zeroes the counts; bad commands and values give
clear messages and the prompt goes on; quit and the end of the input stop a run and exit
0. --auto-start --stats-period 1 ended by SIGINT prints periodic blocks, a figure, exits
0. --rate: the measured rate is within 10% of the limit. -i and --stats-period with one
lcore: exit status 2 and a message.

As test_perf.py: a unique --file-prefix per run, --no-pci, --no-huge with --no-shconf,
at most two lcores, a hard timeout on every process, nothing left behind.

    test_perf_prompt.py DROCE_PERF
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

# TestFailure, check and log: test/integration's harness, as test_perf_peer.py uses.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "integration"))
from droce_harness import TestFailure, check, log  # noqa: E402


TIMEOUT = 60
PROMPT = "droce-perf> "
RUNS = 0

COMMANDS = ["help", "start", "stop", "show port stats all", "show port xstats all",
            "show port xstats <port>", "show qp stats", "clear port stats all", "set mode",
            "set size", "set qps", "set burst", "set rate", "quit"]


def eal(lcores="0,1", vdevs=()):
    global RUNS
    RUNS += 1
    prefix = "droce-perf-prompt-%d-%d" % (os.getpid(), RUNS)
    args = ["--no-pci", "--no-huge", "--no-shconf", "--no-telemetry", "-l", lcores,
            "-m", "1024", "--file-prefix=" + prefix, "--log-level=lib.eal:warning"]
    return args + ["--vdev=%s" % v for v in vdevs], prefix


def left_behind(prefix):
    """droce-perf removes its runtime directory (root's: /var/run/dpdk/PREFIX)."""
    for base in ("/var/run/dpdk", os.path.join(os.environ.get("XDG_RUNTIME_DIR", "/nonexistent"),
                                               "dpdk"), "/tmp/dpdk"):
        if os.path.exists(os.path.join(base, prefix)):
            return os.path.join(base, prefix)
    return None


def run(perf, lcores, opts):
    eal_args, prefix = eal(lcores)
    cmd = [perf] + eal_args + ["--"] + opts
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       stdin=subprocess.DEVNULL, timeout=TIMEOUT)
    check(left_behind(prefix) is None, "%s: left %s" % (" ".join(cmd), left_behind(prefix)))
    return p.returncode, p.stdout, p.stderr, " ".join(cmd)


def json_lines(text):
    out = []
    for l in text.splitlines():
        i = l.find("{")
        if i >= 0 and l.rstrip().endswith("}"):
            out.append(json.loads(l[i:]))
    return out


class Session:
    """One droce-perf process with the prompt, fed through a pipe, read by a thread."""

    def __init__(self, perf, opts, vdevs=()):
        eal_args, self.prefix = eal("0,1", vdevs)
        self.cmdline = " ".join([perf] + eal_args + ["--"] + opts)
        self.p = subprocess.Popen([perf] + eal_args + ["--"] + opts, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.deadline = time.monotonic() + TIMEOUT
        self.buf = b""
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        # EAL and the hosts first: a command's output ends at the prompt after it
        self._wait(lambda: PROMPT in self.text(), "the first prompt")

    def _read(self):
        while True:
            b = self.p.stdout.read1(65536)
            if not b:
                return
            with self.lock:
                self.buf += b

    def text(self):
        with self.lock:
            return self.buf.decode(errors="replace")

    def _wait(self, cond, what):
        while not cond():
            if time.monotonic() > self.deadline:
                self.kill()
                raise TestFailure("%s: timed out waiting for %s; output:\n%s" %
                                  (self.cmdline, what, self.text()))
            if self.p.poll() is not None and not self.reader.is_alive() and not cond():
                raise TestFailure("%s: exited %s waiting for %s; output:\n%s" %
                                  (self.cmdline, self.p.returncode, what, self.text()))
            time.sleep(0.02)

    def cmd(self, line):
        """The command's output: from its echo to the next prompt."""
        start = len(self.text())
        n = self.text().count(PROMPT)
        self.p.stdin.write((line + "\n").encode())
        self.p.stdin.flush()
        self._wait(lambda: self.text().count(PROMPT) > n, "the prompt after %r" % line)
        out = self.text()[start:]
        return out[:out.rfind(PROMPT)]

    def finish(self, how="quit"):
        """quit, or the end of the input: exit status 0, the runtime directory gone."""
        start = len(self.text())
        if how == "quit":
            self.p.stdin.write(b"quit\n")
        self.p.stdin.close()
        try:
            rc = self.p.wait(timeout=max(1, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.kill()
            raise TestFailure("%s: did not exit after %s" % (self.cmdline, how))
        self.reader.join(timeout=10)
        check(rc == 0, "%s: exit %d after %s:\n%s" % (self.cmdline, rc, how, self.text()))
        check("EAL: Error" not in self.text(), "%s: EAL errors:\n%s" % (self.cmdline,
                                                                       self.text()))
        check(left_behind(self.prefix) is None, "%s: left %s" % (self.cmdline,
                                                              left_behind(self.prefix)))
        return self.text()[start:]

    def kill(self):
        """After a failure: the process gone, and the runtime directory it could not remove."""
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait(timeout=10)
        left = left_behind(self.prefix)
        if left is not None:
            shutil.rmtree(left, ignore_errors=True)


def figure(out, what):
    figs = [l for l in json_lines(out) if l["figure"] in ("bw", "lat")]
    check(len(figs) == 1, "%s: %d figures:\n%s" % (what, len(figs), out))
    return figs[0]


def ports(out, what):
    p = {l["host"]: l for l in json_lines(out) if l["figure"] == "port"}
    check(set(p) == {"a", "b"}, "%s: port statistics of %s:\n%s" % (what, sorted(p), out))
    return p


def check_bw(f, what, mode, size, qps):
    check(f["mode"] == mode and f["bytes"] == size and f["qps"] == qps,
          "%s: figure of %s %d B %d QPs, not %s %d B %d QPs" %
          (what, f["mode"], f["bytes"], f["qps"], mode, size, qps))
    check(f["iterations"] > 0 and f["msg_rate_mpps"] > 0, "%s: empty figure %s" % (what, f))
    check(f["sent"] == f["received"], "%s: sent %d, received %d" %
          (what, f["sent"], f["received"]))


def run_once(s, what, pause=0.4):
    """start, a while, stop: the stop's figure and port statistics."""
    out = s.cmd("start")
    check("droce-perf:" not in out and "error" not in out.lower(), "%s: start:\n%s" %
          (what, out))
    time.sleep(pause)
    out = s.cmd("stop")
    return figure(out, what + " stop"), ports(out, what + " stop")


def prompt_ring(perf):
    s = Session(perf, ["-i", "-s", "64", "--json"])
    try:
        out = s.cmd("help")
        for c in COMMANDS:
            check("  " + c in out, "help lacks %r:\n%s" % (c, out))
        log("ok help: %d commands" % len(COMMANDS))

        # a run: counts grow while it goes; stop prints the figure and the ports
        s.cmd("start")
        time.sleep(0.3)
        p1 = ports(s.cmd("show port stats all"), "show port stats all")
        time.sleep(0.3)
        p2 = ports(s.cmd("show port stats all"), "show port stats all")
        check(0 < p1["a"]["tx_packets"] < p2["a"]["tx_packets"] and
              0 < p1["b"]["rx_packets"] < p2["b"]["rx_packets"],
              "counts did not grow: %s then %s" % (p1, p2))
        check(p2["a"]["tx_pps"] > 0 and p2["b"]["rx_pps"] > 0, "no rates: %s" % p2)
        out = s.cmd("stop")
        f = figure(out, "stop")
        check_bw(f, "stop", "send", 64, 1)
        p = ports(out, "stop")
        check(p["a"]["tx_packets"] >= f["sent"] and p["b"]["rx_packets"] >= f["received"],
              "stop: ports %s below the figure %s" % (p, f))
        log("ok start, show port stats all (grows), stop: %d sent = received" % f["sent"])

        qp = {l["host"]: l for l in json_lines(s.cmd("show qp stats")) if l["figure"] == "qp"}
        check(set(qp) == {"a", "b"}, "show qp stats: %s" % qp)
        check(qp["a"]["sends_completed"] == f["sent"] == qp["a"]["sends_posted"] and
              qp["b"]["recvs_completed"] == f["received"] and qp["b"]["resp_msgs"] == f["sent"]
              and qp["a"]["ack_rcvd"] > 0 and qp["a"]["qp_error"] == 0,
              "show qp stats disagrees with the figure %s: %s" % (f, qp))
        log("ok show qp stats")

        s.cmd("clear port stats all")
        p = ports(s.cmd("show port stats all"), "after clear")
        for h in "ab":
            check(p[h]["rx_packets"] == 0 and p[h]["tx_packets"] == 0,
                  "clear port stats all: %s" % p[h])
        log("ok clear port stats all")

        xs = [l for l in json_lines(s.cmd("show port xstats all")) if l["figure"] == "xstats"]
        check(sorted(x["port"] for x in xs) == [0, 1] and "rx_good_packets" in xs[0],
              "show port xstats all: %s" % xs)
        xs = [l for l in json_lines(s.cmd("show port xstats 1")) if l["figure"] == "xstats"]
        check(len(xs) == 1 and xs[0]["host"] == "b", "show port xstats 1: %s" % xs)
        log("ok show port xstats all, show port xstats 1")

        # bad commands and values: a message each, and the prompt goes on
        for c, want in [("frob", "Command not found"),
                        ("show port stats", "Bad arguments"),
                        ("set size 0", "--size 0: out of range 1..1048576"),
                        ("set size big", "--size 'big': not a number"),
                        ("set qps 10001", "--qps 10001: out of range 1..10000"),
                        ("set mode turbo", "--mode 'turbo': not one of send write read atomic lat"),
                        ("set burst 33", "--burst 33: out of range 1..32"),
                        ("set rate fast", "--rate 'fast'"),
                        ("set rate 0", "--rate 0: out of range"),
                        ("show port xstats 7", "port 7: not host a's"),
                        ("stop", "no run is going")]:
            out = s.cmd(c)
            check(want in out, "%r: output lacks %r:\n%s" % (c, want, out))
        s.cmd("start")
        out = s.cmd("start")
        check("a run is going" in out, "start while running:\n%s" % out)
        f = figure(s.cmd("stop"), "stop after bad commands")
        check_bw(f, "after bad commands", "send", 64, 1)
        log("ok bad commands and values refused, the prompt went on")

        # new settings, new runs; lat refuses several QPs at start
        s.cmd("set size 4096")
        s.cmd("set qps 4")
        f, _ = run_once(s, "set size 4096, set qps 4")
        check_bw(f, "set size 4096, set qps 4", "send", 4096, 4)
        s.cmd("set mode write")
        s.cmd("set size 1024")
        f, _ = run_once(s, "set mode write")
        check_bw(f, "set mode write", "write", 1024, 4)
        s.cmd("set mode lat")
        out = s.cmd("start")
        check("--qps: only send, write, read and atomic" in out, "lat with 4 QPs:\n%s" % out)
        s.cmd("set qps 1")
        s.cmd("set size 2")
        f, _ = run_once(s, "set mode lat")
        check(f["figure"] == "lat" and f["bytes"] == 2 and f["iterations"] > 0 and
              f["t_typical_us"] > 0, "lat figure: %s" % f)
        s.cmd("set mode raw-io")
        s.cmd("set size 64")
        f, p = run_once(s, "set mode raw-io")
        check_bw(f, "set mode raw-io", "raw-io", 64, 0)
        s.cmd("set mode send")
        s.cmd("set size 65536")
        s.cmd("set burst 4")
        f, _ = run_once(s, "set mode send, 64 KiB")
        check_bw(f, "set mode send, 64 KiB", "send", 65536, 1)
        log("ok set size / qps / mode / burst: runs of send 4096 B x 4 QPs, write, lat, "
            "raw-io, send 64 KiB")

        s.cmd("start")
        time.sleep(0.3)
        out = s.finish("quit")
        check_bw(figure(out, "quit while running"), "quit", "send", 65536, 1)
        log("ok quit stops the run: exit 0, nothing left")
    finally:
        s.kill()


def prompt_tables_eof(perf):
    """Without --json: testpmd's layout; --auto-start; the end of the input is quit."""
    s = Session(perf, ["-i", "--auto-start", "-s", "64", "--rate", "1M"])
    try:
        time.sleep(0.5)
        out = s.cmd("show port stats all")
        for want in ("NIC statistics for port 0", "NIC statistics for port 1",
                     "RX-packets:", "TX-packets:", "Throughput (since last show)", "Tx-pps:"):
            check(want in out, "show port stats all lacks %r:\n%s" % (want, out))
        out = s.cmd("show qp stats")
        check("QP statistics of host a" in out and "ack_rcvd" in out, "show qp stats:\n" + out)
        out = s.finish("eof")
        row = [l for l in out.splitlines() if l.split()[:1] == ["64"]]
        check(len(row) == 1 and int(row[0].split()[1]) > 0, "no figure at the end:\n" + out)
        check("NIC statistics for port 0" in out, "no port statistics at the end:\n" + out)
        full = s.text()
        check(" rate limit 1e+06 msg/s per QP, burst 32" in full, "no rate limit in the "
              "header:\n" + full)
        log("ok --auto-start, testpmd's layout, the end of the input stops and exits 0")
    finally:
        s.kill()


def prompt_memif(perf, work):
    """Ports of the EAL line stay open when the hosts are set up again."""
    sock = os.path.join(work, "memif.sock")
    common = "id=0,socket=%s,socket-abstract=no,bsize=8192" % sock
    s = Session(perf, ["-i", "-s", "64", "--json"],
                ["net_memif0,role=server," + common, "net_memif1,role=client," + common])
    try:
        f, p = run_once(s, "memif")
        check_bw(f, "memif", "send", 64, 1)
        # 5000 QPs need two engines, two queues each way: the ports keep one
        s.cmd("set qps 5000")
        out = s.cmd("start")
        check("have 1 queue(s) each way, these QPs need 2" in out, "memif 5000 QPs:\n" + out)
        s.cmd("set qps 4")
        s.cmd("set size 8192")
        f, p = run_once(s, "memif set qps 4")
        check_bw(f, "memif set qps 4", "send", 8192, 4)
        check(p["a"]["tx_packets"] == p["b"]["rx_packets"], "memif: ports %s" % p)
        s.cmd("set mode raw-io")
        s.cmd("set qps 1")
        f, p = run_once(s, "memif set mode raw-io")
        check_bw(f, "memif set mode raw-io", "raw-io", 8192, 0)
        s.cmd("set mode write")
        s.cmd("set qps 4")
        f, p = run_once(s, "memif set mode write")
        check_bw(f, "memif set mode write", "write", 8192, 4)
        s.finish("quit")
        log("ok memif: hosts set up again on the same ports (send, 4 QPs, raw-io, write); "
            "5000 QPs refused there")
    finally:
        s.kill()


def periodic(perf):
    eal_args, prefix = eal("0,1")
    cmd = [perf] + eal_args + ["--", "--auto-start", "--stats-period", "1", "-s", "64",
                               "--json"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + TIMEOUT
    seen, early = [], []
    try:
        # two periodic blocks of host a's port, then SIGINT (about 3 s in, EAL start-up aside)
        while len(seen) < 2 and time.monotonic() < deadline:
            line = p.stdout.readline()
            if not line:
                break
            early.append(line)
            if '"rx_pps"' in line and '"host": "a"' in line:
                seen.append(time.monotonic())
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=max(1, deadline - time.monotonic()))
        out = "".join(early) + out
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=10)
            if left_behind(prefix) is not None:
                shutil.rmtree(left_behind(prefix), ignore_errors=True)
    check(len(seen) == 2 and seen[1] - seen[0] > 0.8,
          "periodic blocks at %s s (not 2, 1 s apart)" % seen)
    check(p.returncode == 0, "%s: exit %d after SIGINT:\n%s" % (" ".join(cmd), p.returncode,
                                                                  err))
    lines = json_lines(out)
    blocks = [l for l in lines if l["figure"] == "port" and "rx_pps" in l and l["host"] == "a"]
    check(len(blocks) >= 2, "%d periodic blocks:\n%s" % (len(blocks), out))
    check(all(b["tx_pps"] > 0 for b in blocks), "periodic rates: %s" % blocks)
    f = figure(out, "--stats-period")
    check_bw(f, "--stats-period", "send", 64, 1)
    check(f["seconds"] > 2, "--stats-period: ran %.2f s, not until the signal" % f["seconds"])
    check(left_behind(prefix) is None, "--stats-period: left %s" % left_behind(prefix))
    log("ok --auto-start --stats-period 1, SIGINT after 2 blocks %.2f s apart: %d periodic "
        "blocks, %d sent = received, exit 0" % (seen[1] - seen[0], len(blocks), f["sent"]))


def rates(perf):
    # messages a second per QP, two QPs; bits a second (64 B: 512 bits a message); raw frames
    for opts, want_mpps in [(["--rate", "20000", "-q", "2", "-D", "1", "-s", "64"], 0.04),
                            (["--rate", "10.24Mbps", "-D", "1", "-s", "64"], 0.02),
                            (["--mode", "write", "--rate", "5k", "-n", "2500", "-s", "256"],
                             0.005),
                            (["--mode", "raw-tx", "--rate", "100k", "-D", "0.5"], 0.1)]:
        rc, out, err, cmd = run(perf, "0", opts + ["--json"])
        check(rc == 0, "%s: exit %d\n%s" % (cmd, rc, err))
        f = figure(out, cmd)
        check(f["sent"] == f["received"], "%s: sent %d, received %d" %
              (cmd, f["sent"], f["received"]))
        check(abs(f["msg_rate_mpps"] - want_mpps) <= 0.1 * want_mpps,
              "%s: %.6f Mpps, not within 10%% of %.6f" % (cmd, f["msg_rate_mpps"], want_mpps))
        log("ok %s: %.6f Mpps (limit %.6f)" % (" ".join(opts), f["msg_rate_mpps"], want_mpps))
    rc, out, err, cmd = run(perf, "0", ["--burst", "1", "-s", "64", "-n", "3000", "-q", "2"])
    check(rc == 0 and " burst 1" in out, "%s: exit %d\n%s%s" % (cmd, rc, out, err))
    row = [l for l in out.splitlines() if l.split()[:1] == ["64"]]
    check(len(row) == 1 and row[0].split()[1] == "6000", "--burst 1: row\n" + out)
    log("ok --burst 1: 6000 messages, burst in the header")


def bad_args(perf):
    for lcores, opts, want in [
            ("0", ["-i"], "-i needs two lcores on the EAL line (-l 0,1)"),
            ("0", ["--stats-period", "1"], "--stats-period needs two lcores"),
            ("0,1", ["--stats-period", "0"], "--stats-period 0: out of range"),
            ("0,1", ["-i", "--stats-period", "1"], "--stats-period and -i exclude"),
            ("0", ["--burst", "0"], "--burst 0: out of range 1..32"),
            ("0", ["--burst", "33"], "--burst 33: out of range 1..32"),
            ("0", ["--rate", "x"], "--rate 'x'"),
            ("0", ["--rate", "5Tbps"], "--rate '5Tbps'"),
            ("0", ["--rate", "2e12"], "--rate 2e12: out of range"),
            ("0", ["--mode", "lat", "--rate", "1000"], "--rate: lat sends one ping"),
            ("0", ["-s", "65536", "--rate", "100kbps"], "less than one message a second")]:
        rc, out, err, cmd = run(perf, lcores, opts)
        check(rc == 2, "%s: exit %d, not 2\n%s" % (cmd, rc, err))
        check(want in err, "%s: stderr lacks %r:\n%s" % (cmd, want, err))
    rc, out, err, cmd = run(perf, "0", ["--help"])
    for o in ("--interactive", "--auto-start", "--stats-period", "--burst", "--rate"):
        check(o in out, "--help lacks %s" % o)
    log("ok bad arguments of -i, --stats-period, --burst, --rate refused; --help lists them")


def main():
    perf = sys.argv[1]
    work = tempfile.mkdtemp(prefix="droce-perf-prompt-", dir="/tmp")
    try:
        bad_args(perf)
        prompt_ring(perf)
        prompt_tables_eof(perf)
        prompt_memif(perf, work)
        periodic(perf)
        rates(perf)
    except (TestFailure, subprocess.TimeoutExpired) as e:
        log("FAIL: %s" % e)
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log("ok all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
