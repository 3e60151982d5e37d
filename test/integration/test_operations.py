# SPDX-License-Identifier: BSD-3-Clause
"""Operating droced (issue 28, doc/operations.md), with the tools operators already have:

- views: droce-ctl's views in text and JSON while an RC ping-pong runs over a memif pair:
  the clients' command lines, the QPs' owners, states and counters (one side's packets
  sent are the other's received, as a lossless link must make them), the port's counters
  under Linux's names; watch's rates; another user: told when the socket is out of its
  reach, shown none of root's objects.
- telemetry: Debian's unmodified dpdk-telemetry.py lists and reads /droce/ commands beside
  DPDK's own /ethdev/stats.
- metrics: droced's /metrics passes Debian's `promtool check metrics`, and a real
  Prometheus server (Debian's) scrapes it and answers a query for a droce series.
- capture: droce-ctl capture during an RC ping-pong: tshark decodes every frame, every RoCE
  one as InfiniBand, droce-pcap --verify finds every ICRC good; a QPN filter keeps only
  that QPN's packets; a snap length cuts them; a second capture of the port is refused.
- capture_write_bw: the same during Debian's unmodified ib_write_bw (RDMA WRITEs).
- messages: a program with no droced to reach says so in one line (which socket, how to
  start droced, DROCE_SOCKET), as droce-ctl does; a QP refused at [limits] max_qps names
  the key; droce-ctl against a droced of another protocol version says so.
- start: one file, two daemons by --instance (each its socket and file prefix); under
  JOURNAL_STREAM every line carries its level, the engine's too; a file prefix another
  droced holds is refused naming it; a mistyped option shows droced's usage before EAL's.
- install: `meson install --destdir` of this build, then an unmodified ibv_devinfo and
  ibv_rc_pingpong through the staged droce-run against a droced started from the staged
  tree, and the unit checked by `systemd-analyze verify`.

In the ASan + UBSan build (suite daemon-asan) meson runs views, telemetry, metrics,
capture and start: droced and droce-ctl under the sanitizers.

usage: test_operations.py DROCED DROCE_CTL DROCE_PCAP COMPAT_DIR RC_PINGPONG BUILD_DIR [CASE...]
"""

import glob
import json
import os
import re
import shlex
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from droce_harness import (App, Daemon, MemifPair, TestFailure, Workdir, check,  # noqa: E402
                           ctl_lines, expect_idle, free_tcp_port, log, main, parse_args,
                           run_pair)

BIN, CASES = parse_args(["droced", "droce_ctl", "droce_pcap", "compat_dir", "rc_pingpong",
                         "build_dir"])
ENV = {"LD_LIBRARY_PATH": BIN["compat_dir"]}
TIMEOUT = 60
PROM_TIMEOUT = 60


def ctl_run(daemon, *args, timeout=20):
    r = subprocess.run(["timeout", str(timeout), BIN["droce_ctl"], "--socket", daemon.socket] +
                       list(args), capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def ctl_ok(daemon, *args):
    rc, out, err = ctl_run(daemon, *args)
    check(rc == 0, "droce-ctl %s: exit %d\n%s%s" % (" ".join(args), rc, out, err))
    return out


def rows(text):
    return [dict(f.split("=", 1) for f in shlex.split(line)) for line in text.splitlines()
            if "=" in line]


class Pingpong:
    """droce-rc-pingpong server on A, client on B, running while the case looks."""

    def __init__(self, pair, iters=50000, size=64):
        port = str(free_tcp_port())
        args = [BIN["rc_pingpong"], "-p", port, "-n", str(iters), "-s", str(size)]
        self.srv = App(args, pair.a, TIMEOUT, "server")
        time.sleep(0.3)
        self.cli = App(args + ["127.0.0.1"], pair.b, TIMEOUT, "client")

    def stop(self):
        for a in (self.cli, self.srv):
            a.stop()


def wait_for(what, fn, timeout=20):
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        check(time.monotonic() < deadline, "%s: not within %d s" % (what, timeout))
        time.sleep(0.1)


# ---- views ----

def case_views():
    with MemifPair(BIN["droced"], "ops-views") as pair:
        pp = Pingpong(pair)
        try:
            qa = wait_for("A's QP in RTS", lambda: [q for q in rows(ctl_ok(pair.a, "qps"))
                                                    if q["state"] == "RTS"])[0]
            clients = rows(ctl_ok(pair.a, "clients"))
            check(len(clients) == 1 and "droce-rc-pingpong" in clients[0]["command"] and
                  clients[0]["qps"] == "1" and clients[0]["kind"] == "verbs" and
                  int(clients[0]["pinned_bytes"]) > 0,
                  "droce-ctl clients: %s" % clients)
            check(qa["client"] == clients[0]["client"] and qa["pid"] == clients[0]["pid"] and
                  qa["type"] == "RC" and qa["dest"] == pair.ip_b,
                  "droce-ctl qps on A: %s (clients %s)" % (qa, clients))
            # JSON: the same rows, numbers as numbers.
            js = json.loads(ctl_ok(pair.a, "-j", "qps"))
            check(len(js) == 1 and js[0]["qpn"] == int(qa["qpn"]) and
                  isinstance(js[0]["rdma_tx_packets"], int) and js[0]["state"] == "RTS",
                  "droce-ctl -j qps: %s" % js)
            for view in ("status", "ports", "counters", "engines", "cqs", "mrs", "srqs", "cm",
                         "listeners", "mcast", "queues"):
                json.loads(ctl_ok(pair.a, "-j", view))
            mrs = rows(ctl_ok(pair.a, "mrs"))
            check(len(mrs) == 1 and "lkey" in mrs[0] and "rkey" in mrs[0] and
                  mrs[0]["access"] == "LOCAL_WRITE", "droce-ctl mrs (root): %s" % mrs)
            # watch: rates of what moves.
            w = rows(ctl_ok(pair.a, "watch", "-n", "1", "qps"))
            check(len(w) == 1 and float(w[0].get("rdma_tx_packets_per_s", "0")) > 0,
                  "droce-ctl watch -n 1 qps: %s" % w)
            # A user who cannot reach the socket is told why (the test's directory is 0700).
            r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                BIN["droce_ctl"], "--socket", pair.a.socket, "qps"],
                               capture_output=True, text=True, timeout=20)
            check(r.returncode != 0 and "permission denied on %s" % pair.a.socket in r.stderr,
                  "droce-ctl as nobody, socket out of reach: %r" % r.stderr)
            # Another uid sees no client of root, and no keys (the socket is 0666; its
            # directory, the test's own, is opened to others for this).
            os.chmod(pair.work.path, 0o755)
            r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                BIN["droce_ctl"], "--socket", pair.a.socket, "qps"],
                               capture_output=True, text=True, timeout=20)
            check(r.returncode == 0 and r.stdout.strip() == "",
                  "droce-ctl qps as nobody: %d %r %r" % (r.returncode, r.stdout, r.stderr))
            rc_c, rc_s = pp.cli.wait(TIMEOUT), pp.srv.wait(TIMEOUT)
            check(rc_c == 0 and rc_s == 0, "ping-pong: %s %s\n%s\n%s" %
                  (rc_c, rc_s, pp.cli.output, pp.srv.output))
        finally:
            pp.stop()
        # The port's counters under Linux's names: A's sent are B's received (memif
        # loses nothing), and both ping-pong's 50,000 messages each way at least.
        ca = rows(ctl_ok(pair.a, "counters"))[0]
        cb = rows(ctl_ok(pair.b, "counters"))[0]
        check(ca["rdma_tx_packets"] == cb["rdma_rx_packets"] and
              cb["rdma_tx_packets"] == ca["rdma_rx_packets"] and
              int(ca["rdma_rx_packets"]) >= 50000 and ca["out_of_sequence"] == "0" and
              ca["req_cqe_error"] == "0", "droce-ctl counters: A %s\nB %s" % (ca, cb))
        log("  counters: A sent %s, B received %s RoCE packets" %
            (ca["rdma_tx_packets"], cb["rdma_rx_packets"]))
        for d in (pair.a, pair.b):
            expect_idle(BIN["droce_ctl"], d)
            # memif carries 4 KiB frames whatever MTU it reports: no warning that it may not.
            check("may not pass" not in d.log_text(), "droced %s warned:\n%s" %
                  (d.name, d.log_text()))


# ---- telemetry ----

def telemetry(daemon, cmds):
    r = subprocess.run(["timeout", "20", "/usr/bin/python3", "/usr/bin/dpdk-telemetry.py",
                        "-f", daemon.prefix], input="\n".join(cmds) + "\n",
                       capture_output=True, text=True)
    check(r.returncode == 0, "dpdk-telemetry.py: %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
    out = []
    for line in r.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            out.append(json.loads(line))
    check(len(out) == len(cmds), "dpdk-telemetry.py answered %d of %s:\n%s" %
          (len(out), cmds, r.stdout))
    return [o[c.split(",")[0]] for o, c in zip(out, cmds)]


def case_telemetry():
    with MemifPair(BIN["droced"], "ops-tel") as pair:
        pp = Pingpong(pair)
        try:
            wait_for("a QP", lambda: rows(ctl_ok(pair.a, "qps")))
            cmds, qpns = telemetry(pair.a, ["/", "/droce/qps"])
            check(all("/droce/" + v in cmds for v in ("status", "ports", "counters", "qps",
                                                        "clients", "mrs", "cm")) and
                  "/ethdev/stats" in cmds, "telemetry's command list: %s" % cmds)
            check(len(qpns) == 1, "/droce/qps: %s" % qpns)
            qp, st, ports, port, eth = telemetry(pair.a, [
                "/droce/qps,%d" % qpns[0], "/droce/status", "/droce/ports", "/droce/ports,0",
                "/ethdev/stats,0"])
            check(qp["qpn"] == qpns[0] and qp["type"] == "RC" and "rdma_tx_packets" in qp,
                  "/droce/qps,%d: %s" % (qpns[0], qp))
            check(st["clients"] == 1 and st["qps"] == 1, "/droce/status: %s" % st)
            check(ports == [0] and port["driver"] == "net_memif" and port["state"] == "ACTIVE",
                  "/droce/ports: %s %s" % (ports, port))
            check(eth["ipackets"] > 0, "/ethdev/stats,0: %s" % eth)
            rc_c, rc_s = pp.cli.wait(TIMEOUT), pp.srv.wait(TIMEOUT)
            check(rc_c == 0 and rc_s == 0, "ping-pong: %s %s" % (rc_c, rc_s))
        finally:
            pp.stop()
        none, = telemetry(pair.a, ["/droce/qps,99999"])
        check(none is None, "/droce/qps of no QP: %s" % none)


# ---- metrics ----

def scrape(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        check(r.status == 200 and r.headers["Content-Type"].startswith("text/plain"),
              "GET %s: %s %s" % (url, r.status, r.headers["Content-Type"]))
        return r.read().decode()


def case_metrics():
    port = free_tcp_port()
    pair = MemifPair(BIN["droced"], "ops-prom")
    with open(pair.a.config, "a") as f:
        f.write("\n[metrics]\nlisten = 127.0.0.1:%d\n" % port)
    with pair:
        pp = Pingpong(pair)
        prom = None
        work = tempfile.mkdtemp(prefix="droce-prom-")
        try:
            wait_for("traffic", lambda: int(rows(ctl_ok(pair.a, "counters"))[0]
                                            ["rdma_tx_packets"]) > 0)
            url = "http://127.0.0.1:%d/metrics" % port
            text = scrape(url)
            r = subprocess.run(["timeout", "30", "promtool", "check", "metrics"], input=text,
                               capture_output=True, text=True)
            check(r.returncode == 0, "promtool check metrics: %d\n%s%s" %
                  (r.returncode, r.stdout, r.stderr))
            for series in (r'^droce_counters_rdma_tx_packets_total\{port="0"\} [1-9]',
                           r'^droce_qps_rdma_rx_packets_total\{qpn="\d+",client="\d+",pid="\d+"',
                           r'^droce_clients_info\{.*command="[^"]*droce-rc-pingpong',
                           r'^droce_ports_info\{port="0",name="a",.*driver="net_memif"',
                           r'^droce_status_uptime_seconds \d+\.\d{3}$',
                           r'^droce_metrics_qps_omitted 0$'):
                check(re.search(series, text, re.M), "no %s in /metrics:\n%s" %
                      (series, text[:3000]))
            # A real Prometheus server scrapes it; its query API answers with droce series.
            web = free_tcp_port()
            cfg = os.path.join(work, "prometheus.yml")
            with open(cfg, "w") as f:
                f.write("global:\n  scrape_interval: 1s\nscrape_configs:\n"
                        "  - job_name: droce\n    static_configs:\n"
                        "      - targets: ['127.0.0.1:%d']\n" % port)
            prom_log = open(os.path.join(work, "prometheus.log"), "w")
            prom = subprocess.Popen(["timeout", str(PROM_TIMEOUT + 30), "prometheus",
                                     "--config.file=" + cfg,
                                     "--storage.tsdb.path=" + os.path.join(work, "data"),
                                     "--web.listen-address=127.0.0.1:%d" % web],
                                    stdout=prom_log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            query = ("http://127.0.0.1:%d/api/v1/query?query="
                     "droce_counters_rdma_tx_packets_total" % web)

            def answered():
                try:
                    with urllib.request.urlopen(query, timeout=5) as r:
                        res = json.load(r)["data"]["result"]
                except OSError:
                    return None
                return [x for x in res if float(x["value"][1]) > 0]
            res = wait_for("Prometheus' answer", answered, PROM_TIMEOUT)
            check(res[0]["metric"]["job"] == "droce" and res[0]["metric"]["port"] == "0",
                  "Prometheus' query: %s" % res)
            log("  Prometheus: %s = %s" % (res[0]["metric"]["__name__"], res[0]["value"][1]))
            rc_c, rc_s = pp.cli.wait(TIMEOUT), pp.srv.wait(TIMEOUT)
            check(rc_c == 0 and rc_s == 0, "ping-pong: %s %s" % (rc_c, rc_s))
        finally:
            pp.stop()
            if prom is not None:
                os.killpg(prom.pid, 9)
                prom.wait()
            shutil.rmtree(work, ignore_errors=True)


# ---- capture ----

def tshark_fields(path, fields, filt=None):
    cmd = ["timeout", "60", "tshark", "-r", path, "-T", "fields"]
    for f in fields:
        cmd += ["-e", f]
    if filt:
        cmd += ["-Y", filt]
    r = subprocess.run(cmd, capture_output=True, text=True)
    check(r.returncode == 0, "tshark %s: %d\n%s" % (path, r.returncode, r.stderr))
    return [line.split("\t") for line in r.stdout.splitlines()]


def case_capture():
    with MemifPair(BIN["droced"], "ops-cap") as pair:
        work = pair.work
        full, only = work.file("all.pcapng"), work.file("qpn.pcapng")
        pp = Pingpong(pair, iters=30000, size=4096)
        try:
            qpn = int(wait_for("A's QP in RTS", lambda: [q for q in rows(ctl_ok(pair.a, "qps"))
                                                         if q["state"] == "RTS"])[0]["qpn"])
            rc, out, err = ctl_run(pair.a, "capture", "-w", full, "-c", "2000", "-d", "20")
            check(rc == 0 and "2000 frames written" in err, "capture: %d %s%s" % (rc, out, err))
            # While one capture runs, a second of the same port is refused.
            first = subprocess.Popen(["timeout", "30", BIN["droce_ctl"], "--socket",
                                      pair.a.socket, "capture", "-w", only, "-d", "3",
                                      "-q", str(qpn), "-s", "128"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(1)
            rc, out, err = ctl_run(pair.a, "capture", "-w", work.file("second.pcapng"), "-c", "1")
            check(rc != 0 and "Device or resource busy" in err, "a second capture: %d %s" %
                  (rc, err))
            out, err = first.communicate(timeout=40)
            check(first.returncode == 0 and re.search(r"[1-9]\d* frames written", err),
                  "capture -q: %d %s%s" % (first.returncode, out, err))
            rc_c, rc_s = pp.cli.wait(TIMEOUT), pp.srv.wait(TIMEOUT)
            check(rc_c == 0 and rc_s == 0, "ping-pong: %s %s" % (rc_c, rc_s))
        finally:
            pp.stop()
        frames = tshark_fields(full, ["frame.number", "frame.protocols"])
        roce = [f for f in frames if ":infiniband" in f[1]]
        check(len(frames) == 2000 and len(roce) >= 1990,
              "tshark: %d frames, %d InfiniBand" % (len(frames), len(roce)))
        r = subprocess.run(["timeout", "60", BIN["droce_pcap"], "--verify", full],
                           capture_output=True, text=True)
        m = re.search(r"roce=(\d+) ok=(\d+) bad_icrc=(\d+)", r.stdout)
        check(r.returncode == 0 and m and m.group(1) == m.group(2) and m.group(3) == "0" and
              int(m.group(1)) == len(roce), "droce-pcap --verify: %s" % r.stdout[-500:])
        # Only that QPN, cut at 128 bytes.
        sel = tshark_fields(only, ["infiniband.bth.destqp", "frame.cap_len", "frame.len"])
        check(sel and all(int(s[0], 0) == qpn and int(s[1]) <= 128 for s in sel) and
              any(int(s[2]) > 128 for s in sel),
              "capture -q %d -s 128: %s" % (qpn, sel[:5]))
        log("  captured 2000 frames (%d RoCE, every ICRC good); %d of QPN %d in 3 s, 128 "
            "bytes each" % (len(roce), len(sel), qpn))


def case_capture_write_bw():
    """A capture during Debian's unmodified ib_write_bw (64 KiB WRITEs, 4 KiB packets)."""
    with MemifPair(BIN["droced"], "ops-capbw") as pair:
        path = pair.work.file("bw.pcapng")
        port = str(free_tcp_port())
        args = ["ib_write_bw", "-F", "-d", "droce0", "-s", "65536", "-D", "8", "-p", port]
        srv = App(args, pair.a, TIMEOUT, "server", env=ENV)
        time.sleep(0.5)
        cli = App(args + ["127.0.0.1"], pair.b, TIMEOUT, "client", env=ENV)
        try:
            # perftest's server QP stays in RTR: it only takes WRITEs.
            wait_for("ib_write_bw's WRITEs", lambda: [q for q in rows(ctl_ok(pair.a, "qps"))
                                                      if int(q["rx_write_requests"]) > 0])
            rc, out, err = ctl_run(pair.a, "capture", "-w", path, "-c", "3000", "-d", "30")
            check(rc == 0 and "3000 frames written" in err, "capture: %d %s%s" % (rc, out, err))
            rc_c, rc_s = cli.wait(TIMEOUT), srv.wait(TIMEOUT)
            check(rc_c == 0 and rc_s == 0, "ib_write_bw: %s %s\n%s\n%s" %
                  (rc_c, rc_s, cli.output, srv.output))
        finally:
            cli.stop()
            srv.stop()
        frames = tshark_fields(path, ["frame.protocols", "infiniband.bth.opcode"])
        writes = [f for f in frames if ":infiniband" in f[0] and f[1] in ("6", "7", "8", "10")]
        check(len(frames) == 3000 and all(":infiniband" in f[0] for f in frames) and
              len(writes) > 1000, "tshark on ib_write_bw's capture: %d frames, %d WRITE "
              "packets, %d not InfiniBand" % (len(frames), len(writes),
                                             sum(":infiniband" not in f[0] for f in frames)))
        r = subprocess.run(["timeout", "60", BIN["droce_pcap"], "--verify", path],
                           capture_output=True, text=True)
        m = re.search(r"roce=(\d+) ok=(\d+) bad_icrc=(\d+)", r.stdout)
        check(r.returncode == 0 and m and m.group(1) == m.group(2) == "3000" and
              m.group(3) == "0", "droce-pcap --verify: %s" % r.stdout[-500:])
        log("  ib_write_bw: 3000 frames captured, %d RDMA WRITE packets, every one decoded "
            "by tshark, every ICRC good" % len(writes))


# ---- messages ----

def case_messages():
    work = Workdir("ops-msg")
    try:
        nowhere = work.file("nothing.sock")
        r = subprocess.run(["timeout", "20", "ibv_devinfo"], capture_output=True, text=True,
                           env=dict(os.environ, DROCE_SOCKET=nowhere, **ENV))
        lines = [l for l in r.stderr.splitlines() if l.startswith("libdroce:")]
        check(len(lines) == 1 and nowhere in lines[0] and "droced --config" in lines[0] and
              "DROCE_SOCKET" in lines[0], "ibv_devinfo with no droced: %r" % r.stderr)
        r = subprocess.run(["timeout", "10", BIN["droce_ctl"], "--socket", nowhere, "qps"],
                           capture_output=True, text=True)
        check(r.returncode != 0 and "no droced is serving %s" % nowhere in r.stderr and
              "--socket" in r.stderr, "droce-ctl with no droced: %r" % r.stderr)
        # A droced of another protocol version (a stand-in answering STATUS only).
        fake = work.file("old.sock")
        t = threading.Thread(target=old_droced, args=(fake,), daemon=True)
        t.start()
        wait_for("the stand-in", lambda: os.path.exists(fake))
        r = subprocess.run(["timeout", "10", BIN["droce_ctl"], "--socket", fake, "qps"],
                           capture_output=True, text=True)
        check(r.returncode != 0 and "older than this droce-ctl" in r.stderr,
              "droce-ctl against an older droced: %r" % r.stderr)
    finally:
        work.close()
    # [limits] max_qps = 1: ibv_srq_pingpong -q 2 creates two QPs before it connects.
    d = Daemon(BIN["droced"], Workdir("ops-lim"), "lim", "net_ring0", "10.99.7.1/24",
               limits="max_qps = 1")
    try:
        d.start()
        port = str(free_tcp_port())
        r = subprocess.run(["timeout", "30", "ibv_srq_pingpong", "-g", "0", "-q", "2",
                            "-p", port], capture_output=True, text=True,
                           env=dict(d.env(), **ENV))
        lines = [l for l in (r.stdout + r.stderr).splitlines() if l.startswith("libdroce:")]
        check(r.returncode not in (0, 124) and len(lines) == 1 and "max_qps" in lines[0] and
              "CREATE_QP" in lines[0], "ibv_srq_pingpong -q 2 at max_qps = 1: %d %r\n%s" %
              (r.returncode, lines, r.stdout + r.stderr))
    finally:
        d.stop()
        d.work.close()


def old_droced(path):
    """Answers one connection's STATUS as a droced of protocol version 6 would (its
    status has no proto_version: the field reads 0)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.bind(path)
    s.listen(1)
    c, _ = s.accept()
    req = c.recv(4096)
    op, seq = struct.unpack_from("<II", req)
    # op, seq, status, limit, then a status whose proto_version (its last field) is 0.
    c.send(struct.pack("<IIiI", op, seq, 0, 0) + bytes(1544))
    c.close()
    s.close()


# ---- droced's own start: logs, instances, a held file prefix, a mistyped option ----

def start_droced(args, work, name, env=None):
    """droced ARGS with its output in WORK/NAME.log; (process, log path) once it is ready
    (or it exited)."""
    logpath = work.file(name + ".log")
    out = open(logpath, "w")
    proc = subprocess.Popen(["timeout", "--kill-after=5", "120", BIN["droced"]] + args,
                            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                            env=env)
    out.close()
    deadline = time.monotonic() + 30
    while proc.poll() is None and time.monotonic() < deadline:
        with open(logpath) as f:
            if "droced: ready" in f.read():
                break
        time.sleep(0.05)
    return proc, logpath


def stop_droced(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, 15)
    return proc.wait(30)


def read(path):
    with open(path) as f:
        return f.read()


def case_start():
    work = Workdir("ops-start")
    procs = []
    try:
        # --instance: one file, two daemons; each its socket and file prefix.
        conf = work.file("one.ini")
        with open(conf, "w") as f:
            f.write("[eal]\nargs = --file-prefix=opsone --no-pci\n[port ring0]\n"
                    "device = net_ring0\nipv4 = 10.99.9.1/24\n[engines]\nlcores = 1\n"
                    "mode = adaptive\nidle_sleep_us = 50\n[control]\nsocket = %s\n" %
                    work.file("one.sock"))
        names = ["ops%d-x" % os.getpid(), "ops%d-y" % os.getpid()]
        for n in names:
            p, log_path = start_droced(["--config", conf, "--instance", n], work, n)
            procs.append(p)
            check(p.poll() is None and "droced: ready, socket /run/droce/%s.sock" % n in
                  read(log_path), "droced --instance %s:\n%s" % (n, read(log_path)))
            check(os.path.isdir("/var/run/dpdk/droce-" + n),
                  "no runtime directory for file prefix droce-%s" % n)
        # Standard output as the journal's stream: each line carries its syslog level,
        # the engine's (queued for the control thread) as well.
        log_j = work.file("journal.log")
        open(log_j, "w").close()
        st = os.stat(log_j)
        env = dict(os.environ, JOURNAL_STREAM="%d:%d" % (st.st_dev, st.st_ino))
        p, log_path = start_droced(["--config", conf, "--instance", "ops%d-j" % os.getpid()],
                                   work, "journal", env)
        procs.append(p)
        text = read(log_path)
        check("<5>droced: ready" in text and re.search(r"^<\d>droce\.engine: engine 0", text, re.M),
              "droced's lines under JOURNAL_STREAM:\n%s" % text)
        # The file's own prefix, held by a droced: the next one names the holder.
        p, log_path = start_droced(["--config", conf], work, "holder")
        procs.append(p)
        p2, log2 = start_droced(["--config", conf, "--", "-l", "0"], work, "second")
        rc = p2.wait(30)
        check(rc != 0 and "file prefix 'opsone' is in use by process %d (droced)" %
              holder_pid(p) in read(log2), "a second droced on opsone: %s\n%s" %
              (rc, read(log2)))
        # A mistyped option: droced's usage, naming --config, and not EAL's 60 lines.
        r = subprocess.run(["timeout", "30", BIN["droced"], "--confg", conf],
                           capture_output=True, text=True)
        out = r.stdout + r.stderr
        check(r.returncode != 0 and "unknown option '--confg'" in out and
              "--config FILE" in out and "EAL common options" not in out and
              len(out.splitlines()) < 20, "droced --confg:\n%s" % out[:2000])
        for p in procs:
            check(stop_droced(p) == 0, "a droced did not stop cleanly")
        procs = []
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, 9)
                p.wait()
        for d in glob.glob("/var/run/dpdk/droce-ops%d-*" % os.getpid()) + ["/var/run/dpdk/opsone"]:
            shutil.rmtree(d, ignore_errors=True)
        for sock in glob.glob("/run/droce/ops%d-*.sock" % os.getpid()):
            os.unlink(sock)
        work.close()


def holder_pid(timeout_proc):
    """droced's own pid under the timeout wrapper."""
    with open("/proc/%d/task/%d/children" % (timeout_proc.pid, timeout_proc.pid)) as f:
        return int(f.read().split()[0])


# ---- install ----

def case_install():
    stage = tempfile.mkdtemp(prefix="droce-stage-")
    try:
        r = subprocess.run(["timeout", "300", "meson", "install", "-C", BIN["build_dir"],
                            "--destdir", stage, "--no-rebuild", "--quiet"],
                           capture_output=True, text=True)
        check(r.returncode == 0, "meson install --destdir: %d\n%s%s" %
              (r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
        bindir = glob.glob(stage + "/usr/local/bin")[0]
        units = glob.glob(stage + "/usr/local/lib/systemd/system/droced@.service")
        libs = glob.glob(stage + "/usr/local/lib/*/droce/libibverbs.so.1")
        check(units and libs and all(os.path.exists(os.path.join(bindir, b)) for b in
                                     ("droced", "droce-ctl", "droce-perf", "droce-pcap",
                                      "droce-run")) and
              glob.glob(stage + "/usr/local/share/droce/config/pair-a.ini"),
              "the staged tree: %s" % sorted(glob.glob(stage + "/usr/local/*/*")))
        # systemd checks the unit, as an instance (a template needs one), its paths moved
        # into the staged tree where its ExecStart is; an unknown key or a bad value is
        # only a warning to it, so any output fails too.
        udir = tempfile.mkdtemp(prefix="droce-unit-", dir=stage)
        with open(units[0]) as f:
            unit = f.read().replace("/usr/local/", stage + "/usr/local/")
        with open(os.path.join(udir, "droced@.service"), "w") as f:
            f.write(unit)
        os.symlink("droced@.service", os.path.join(udir, "droced@main.service"))
        r = subprocess.run(["timeout", "60", "systemd-analyze", "verify",
                            os.path.join(udir, "droced@main.service")],
                           capture_output=True, text=True)
        check(r.returncode == 0 and not (r.stdout + r.stderr).strip(),
              "systemd-analyze verify: %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
        # The staged droced, and unmodified programs through the staged droce-run.
        d = Daemon(os.path.join(bindir, "droced"), Workdir("ops-inst"), "inst", "net_ring0",
                   "10.99.8.1/24")
        try:
            d.start()
            run = [os.path.join(bindir, "droce-run"), "--socket", d.socket]
            r = subprocess.run(["timeout", "30"] + run + ["ibv_devinfo"], capture_output=True,
                               text=True, env=dict(os.environ, LD_LIBRARY_PATH=""))
            check(r.returncode == 0 and "droce0" in r.stdout and "PORT_ACTIVE" in r.stdout,
                  "droce-run ibv_devinfo: %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
            port = str(free_tcp_port())
            srv = subprocess.Popen(["timeout", "60"] + run + ["ibv_rc_pingpong", "-g", "0",
                                                              "-p", port, "-c"],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            time.sleep(0.5)
            cli = subprocess.run(["timeout", "60"] + run + ["ibv_rc_pingpong", "-g", "0",
                                                            "-p", port, "-c", "127.0.0.1"],
                                 capture_output=True, text=True)
            out_s, _ = srv.communicate(timeout=70)
            check(cli.returncode == 0 and srv.returncode == 0,
                  "ibv_rc_pingpong through droce-run: %d %d\n%s%s\n%s" %
                  (srv.returncode, cli.returncode, out_s, cli.stdout, cli.stderr))
            log("  staged install: systemd-analyze verify ok; ibv_devinfo and "
                "ibv_rc_pingpong through droce-run ok")
        finally:
            d.stop()
            d.work.close()
    finally:
        shutil.rmtree(stage, ignore_errors=True)


ALL = [
    ("views", case_views),
    ("telemetry", case_telemetry),
    ("metrics", case_metrics),
    ("capture", case_capture),
    ("capture_write_bw", case_capture_write_bw),
    ("messages", case_messages),
    ("start", case_start),
    ("install", case_install),
]

if __name__ == "__main__":
    main(ALL, CASES)
