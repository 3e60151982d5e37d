#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A soak: two droced (adaptive engines) on a memif link that loses 1% of the packets each
way and reorders 1%, and for --minutes a churn of applications through them, drawn at
random (--seed): verbs_stream pairs (RC, UC, UD; every byte checked), rping servers and
clients (rdma_cm connects and disconnects, data validated on both ends), verbs_churn (MR register/rereg/deregister with the memory checked, CQ resize,
SRQ limit events, multicast join/leave), droce-ctl queries; one application in five is
killed with SIGKILL mid-transfer, and droced itself is killed (SIGKILL) and restarted a
few times with applications running.

The run is cut into periods (--period, 60 s by default). In each, applications are
started for the first part; then no new one starts, every one still running must end by
itself (a hang is a failure), and droced's state is sampled idle: its tables (clients,
PDs, MRs, CQs, SRQs, QPs, AHs, the engines' own counts, CM channels, ids and connections,
QPs on timer lists, multicast groups) must be what they were before the first
application, and its open fds and memfds what they were when that droced started. Its
RSS, hugepage files and mbufs in use are sampled too (mid-load and idle), and after the
run a least-squares line through each incarnation's idle samples must not rise by more
than the tolerance (see SLOPE_TOL) with a t-statistic over 3: growth that is real, not
noise. Every application that was neither killed nor hit by a droced restart must have
exited 0 with its data exact; no process may die of a signal we did not send; no
sanitizer report anywhere.

    soak.py [--minutes N] [--period S] [--seed N] [--out DIR] [--asan]
            [--only KIND,...] [--log-level EAL_LOG_LEVEL] [--kill-share F]
            DROCED DROCE_CTL COMPAT_DIR FAULT_PMD VERBS_STREAM VERBS_CHURN

--only narrows the churn to some kinds of application (stream, rping, churn, ctl), and
--log-level is given to both droced's EAL (e.g. droce.droced:debug), and --kill-share
sets the share of applications killed (0.2): all for chasing one failure, not for the
soak itself.

Writes DIR/samples.csv (one row per sample), DIR/summary.json (operations, outcomes,
slopes) and, with gnuplot, DIR/soak.png. Exit 0 when every check held.
"""

import argparse
import csv
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test",
                                "integration"))
from droce_harness import (App, Daemon, TestFailure, Workdir, ctl, ctl_lines,  # noqa: E402
                           free_tcp_port, log, private_copy)

# The link: each daemon's receive side drops and reorders this many ppm (net_fault).
LINK_FAULTS = "drop=10000,reorder=10000"
IP = {"a": "10.99.0.1", "b": "10.99.0.2"}
MAX_JOBS = 4                # applications (pairs count once) running at once
LAUNCH_FRACTION = 0.6       # of a period: new applications start only in this part
JOB_TIMEOUT = 120           # hard timeout of any one application
DRAIN_TIMEOUT = 150         # a period's applications must have ended by then
IDLE_TIMEOUT = 30           # droced's tables must be back at their idle counts by then
KILL_SHARE = 0.2            # applications killed with SIGKILL mid-run
LINEBUF = ["stdbuf", "-oL"]
RPING_PORTS = (20000, 32000)    # the rping servers' rdma_cm ports, in turn
# A killed rping client may not have sent its REQ yet (it dies loading its libraries or
# resolving): its server then waits for a connection for ever, as rping does on Linux.
# Once the client is dead, a REQ it did send reaches the server's droced within a link
# latency (or never: lost, and its orphan's REJ finds nothing); the server is stopped if
# this long after the kill it has seen no CONNECT_REQUEST. Past it nothing is judged
# wrongly either way: a later CONNECT_REQUEST only means that case went unchecked.
RPING_NO_REQ_GRACE = 10

# Tables that must be at their idle value at every idle sample.
TABLES = ("clients", "pds", "mrs", "cqs", "srqs", "qps", "ahs", "mr_bytes",
          "engine_domains", "engine_qps", "engine_cqs", "engine_srqs", "engine_mrs",
          "engine_ahs", "cm_channels", "cm_ids", "cm_listeners", "cm_conns", "timer_qps",
          "mcast_groups", "mcast_attached")
# Process figures that must equal their value when that droced started, at every idle
# sample.
EXACT = ("fds", "memfds")
# Figures whose idle samples get the slope test, with the growth over the run we accept
# before calling it a leak (rss_kib: allocator arenas and DPDK's heap settle in steps;
# a leak of one small object per application would pass it within the hour).
WARMUP_S = 180              # an incarnation's first idle samples, left out of the fit
FIT_SPAN_S = 600            # the fit wants at least this much time after the warm-up
# heap_kib: what droced's malloc has handed out (not RSS: no arenas, no page reuse), the
# figure a leak of small objects moves.
SLOPE_TOL = {"rss_kib": 4096, "hugepage_kib": 4096, "mbufs_in_use": 256, "heap_kib": 1024}
COLUMNS = (["t_s", "daemon", "incarnation", "phase", "rss_kib", "hugepage_kib", "fds",
            "memfds"] + list(TABLES) + ["mbufs_in_use", "mbufs_total", "neighbours",
                                        "heap_kib"])


class Soak:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.work = Workdir("soak")
        self.out = args.out or self.work.path
        os.makedirs(self.out, exist_ok=True)
        self.pmd = private_copy(args.fault_pmd)
        memif = self.work.file("link.memif")
        self.env = {"LD_LIBRARY_PATH": args.compat_dir}
        if args.asan:
            # Debian's rping under droce's libraries built with ASan: its runtime first.
            self.env["LD_PRELOAD"] = asan_runtime()
        self.d = {}
        for n, role, seed in (("a", "server", 1), ("b", "client", 2)):
            dev = "net_memif0,role=%s,id=0,socket=%s,bsize=8192" % (role, memif)
            self.d[n] = Daemon(args.droced, self.work, n,
                               "net_fault0,port=net_memif0,seed=%d,%s" % (seed, LINK_FAULTS),
                               IP[n] + "/24", lcore=1, mode="adaptive",
                               eal="-d %s --vdev=%s%s" % (
                                   self.pmd, dev, " --log-level=" + args.log_level
                                   if args.log_level else ""),
                               max_s=int(args.minutes * 60 + 1200))
        self.incarnation = {"a": 0, "b": 0}
        self.start_fds = {}
        self.baseline = {}
        self.rping_servers = []     # (daemon, App) of the rping servers started
        self.rping_launched = 0
        self.recent = []            # (desc, app name, exit, output) of the last ended
        self.jobs = []
        self.samples = []
        self.ops = {}
        self.outcomes = {}
        self.failures = []
        self.t0 = time.monotonic()
        self.csv = open(os.path.join(self.out, "samples.csv"), "w", newline="")
        self.writer = csv.DictWriter(self.csv, COLUMNS)
        self.writer.writeheader()

    # ---- bookkeeping ----

    def count(self, table, key, n=1):
        table[key] = table.get(key, 0) + n

    def fail(self, msg):
        log("soak: FAIL %s" % msg)
        self.failures.append(msg)

    def now(self):
        return time.monotonic() - self.t0

    # ---- daemons ----

    def daemon_pid(self, n):
        return int(ctl(self.args.droce_ctl, self.d[n])["pid"])

    def start_daemon(self, n):
        d = self.d[n]
        d.start()
        self.incarnation[n] += 1

    def take_baseline(self, n):
        """Daemon n's idle counts, once started with its link up: every table empty, and
        its fds and memfds as they are now."""
        st = ctl(self.args.droce_ctl, self.d[n])
        self.baseline[n] = {k: int(st[k]) for k in TABLES}
        busy = {k: v for k, v in self.baseline[n].items() if v != 0}
        if busy:
            raise TestFailure("droced %s holds %s before any application" % (n, busy))
        self.start_fds[n] = proc_fds(int(st["pid"]))

    def wait_link(self):
        """Both ports ACTIVE (a restarted memif end is joined again by its peer)."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if all(p.get("state") == "ACTIVE" for n in "ab"
                   for p in ctl_lines(self.args.droce_ctl, self.d[n], "ports")):
                return
            time.sleep(0.2)
        raise TestFailure("the memif link did not come up again within 30 s")

    def restart(self, n):
        """droced n killed with SIGKILL under load, then started again."""
        log("soak: %.0f s: kill -9 droced %s (incarnation %d) with %d applications running" %
            (self.now(), n, self.incarnation[n], len(self.jobs)))
        for j in self.jobs:
            if n in j["daemons"]:
                j["hit"] = True
                # An rping whose peer went with the daemon waits for its peer's next
                # message for ever (nothing of its own is in flight, and no DREQ comes):
                # as on Linux when the peer's host dies. verbs_stream (-T) and
                # verbs_churn (a watchdog) end by themselves.
                if j["kind"] == "rping":
                    for a in j["apps"]:
                        a.stop()
        d = self.d[n]
        self.save_log(n)
        d.kill9()
        d.cleanup_files()
        self.count(self.ops, "droced_restarts")
        self.start_daemon(n)
        self.wait_link()
        self.take_baseline(n)

    def save_log(self, n):
        text = self.d[n].log_text()
        with open(os.path.join(self.out, "droced-%s.%d.log" % (n, self.incarnation[n])),
                  "w") as f:
            f.write(text)
        if sanitizer_report(text):
            self.fail("droced %s: sanitizer report:\n%s" % (n, text[-3000:]))

    def check_daemons_alive(self):
        for n, d in self.d.items():
            if d.proc is not None and d.proc.poll() is not None:
                self.save_log(n)
                raise TestFailure("droced %s exited with %s:\n%s" %
                                  (n, d.proc.returncode, d.log_text()[-3000:]))

    # ---- samples ----

    def sample(self, phase):
        for n in "ab":
            st = ctl(self.args.droce_ctl, self.d[n])
            pid = int(st["pid"])
            fds, memfds = proc_fds(pid)
            row = {"t_s": round(self.now(), 1), "daemon": n, "incarnation": self.incarnation[n],
                   "phase": phase, "rss_kib": proc_rss_kib(pid),
                   "hugepage_kib": hugepage_kib(pid), "fds": fds,
                   "memfds": memfds}
            for k in TABLES + ("mbufs_in_use", "mbufs_total", "neighbours"):
                row[k] = int(st[k])
            row["heap_kib"] = int(st["heap_in_use"]) // 1024
            self.samples.append(row)
            self.writer.writerow(row)
            self.csv.flush()

    def wait_idle(self):
        """droced's tables back at idle (empty) within IDLE_TIMEOUT of the last
        application's end: what a killed client held torn down, its CM connections
        through their time-wait."""
        deadline = time.monotonic() + IDLE_TIMEOUT
        while True:
            bad = {}
            for n in "ab":
                st = ctl(self.args.droce_ctl, self.d[n])
                want = self.baseline[n]
                diff = {k: (st[k], want[k]) for k in TABLES if int(st[k]) != want[k]}
                if diff:
                    bad[n] = diff
            if not bad:
                return
            if time.monotonic() > deadline:
                raise TestFailure("droced's tables not back at their idle counts %d s after "
                                  "the last application (now, idle): %s\n%s" %
                                  (IDLE_TIMEOUT, bad, self.diagnostics(bad)))
            time.sleep(0.2)

    def diagnostics(self, daemons):
        """What helps find who holds what: each daemon's QPs, the period's last
        applications on it and how they ended."""
        out = []
        for n in daemons:
            out.append("--- droce-ctl qps on %s:\n%s" % (n, "\n".join(
                str(q) for q in ctl_lines(self.args.droce_ctl, self.d[n], "qps"))))
            for desc, name, rc, text in self.recent:
                if n in desc.split()[-1]:
                    out.append("--- %s, %s: exit %s:\n%s" % (desc, name, rc, text[-1500:]))
        return "\n".join(out)

    def check_idle_process(self):
        for n in "ab":
            pid = self.daemon_pid(n)
            now = proc_fds(pid)
            if now != self.start_fds[n]:
                self.fail("droced %s holds (fds, memfds) %s idle, %s when it started: %s" %
                          (n, now, self.start_fds[n], fd_listing(pid)))

    # ---- applications ----

    def launch(self):
        kinds = {"stream": 5, "rping": 3, "churn": 3, "ctl": 1}
        if self.args.only:
            kinds = {k: w for k, w in kinds.items() if k in self.args.only.split(",")}
        kind = self.rng.choices(list(kinds), list(kinds.values()))[0]
        self.count(self.ops, kind)
        getattr(self, "launch_" + kind)()

    def add_job(self, kind, apps, daemons, desc, check):
        job = {"kind": kind, "apps": apps, "daemons": set(daemons), "desc": desc,
               "check": check, "hit": False, "victim": None, "kill_at": None,
               "start": time.monotonic()}
        if self.rng.random() < self.args.kill_share:
            job["victim"] = self.rng.choice(apps)
            job["kill_at"] = time.monotonic() + self.rng.uniform(0.2, 4.0)
        self.jobs.append(job)

    def launch_stream(self):
        srv_d, cli_d = self.rng.choice([("a", "b"), ("b", "a"), ("a", "b"), ("b", "a"),
                                        ("a", "a"), ("b", "b")])
        qpt = self.rng.choice(["rc", "rc", "uc", "ud"])
        size = self.rng.choice([64, 512, 1024] if qpt == "ud" else
                               [64, 1000, 4096, 16384, 65536])
        n = self.rng.randint(200, 20000 if size <= 1024 else 3000 if size <= 16384 else 600)
        port = free_tcp_port()
        common = [self.args.verbs_stream, "-t", qpt, "-s", str(size), "-n", str(n), "-p",
                  str(port), "-T", "30", "-w", str(self.rng.choice([4, 16, 64]))]
        if self.rng.random() < 0.3:
            common.append("-e")
        srv = App(common, self.d[srv_d], JOB_TIMEOUT, "stream-server", env=self.env)
        time.sleep(0.2)
        cli = App(common + ["127.0.0.1"], self.d[cli_d], JOB_TIMEOUT, "stream-client",
                  env=self.env)
        desc = "verbs_stream %s %d x %d B %s->%s" % (qpt, n, size, cli_d, srv_d)

        def check(apps):
            for a in apps:
                m = re.search(r"done sent=(\d+) received=(\d+) lost=(\d+)", a.output)
                if a.proc.returncode != 0 or m is None:
                    return "%s exited %s" % (a.name, a.proc.returncode)
                if qpt == "rc" and (int(m.group(1)) != n or int(m.group(2)) != n):
                    return "%s: %s, want %d each way" % (a.name, m.group(0), n)
            self.count(self.ops, "stream_msgs", 2 * n)
            self.count(self.ops, "stream_bytes", 2 * n * size)
            return None
        self.add_job("stream", [srv, cli], {srv_d, cli_d}, desc, check)

    def launch_rping(self):
        """An rping server (-C count) on one daemon and its client on either, each
        validating the data (-V). The client starts once droced holds the server's
        listening id: rping's client tries once, and a guess at the server's start-up
        time does not hold on a loaded machine."""
        srv_d = self.rng.choice("ab")
        cli_d = self.rng.choice("ab")
        # droced's rdma_cm port, not a kernel one: a free TCP port (what verbs_stream's
        # side channel needs) could be the ephemeral port droced gave another rping
        # client's id (32768-60999, as Linux's), and the server failed with "rdma_bind_addr:
        # Address already in use". Below that range, each port once per 12000 servers.
        port = RPING_PORTS[0] + self.rping_launched % (RPING_PORTS[1] - RPING_PORTS[0])
        self.rping_launched += 1
        count = self.rng.randint(20, 400)
        size = self.rng.choice([64, 1024, 16384, 65535])
        common = ["-V", "-C", str(count), "-S", str(size), "-a", IP[srv_d], "-p", str(port)]
        # -d: the server says when it listens, and its CM events (diagnostics())
        srv = App(LINEBUF + ["rping", "-s", "-d"] + common, self.d[srv_d], JOB_TIMEOUT,
                  "rping-server", env=self.env)
        srv.listen_port = port
        self.rping_servers.append((srv_d, srv))
        deadline = time.monotonic() + 30
        while True:
            # every live server of this daemon that asked for its listen holds one
            self.rping_servers = [(n, a) for n, a in self.rping_servers
                                  if a.proc.poll() is None]
            want = sum(1 for n, a in self.rping_servers
                       if n == srv_d and "rdma_listen" in a.text())
            if srv.proc.poll() is not None:
                break       # judged with the job: its output says why
            # this server among them: without it, other servers' listeners satisfied the
            # count before this one had even reached droced (the client got REJ 8, nobody
            # listening, and the server waited out its timeout for a client)
            if "rdma_listen" in srv.text() and \
                    int(ctl(self.args.droce_ctl, self.d[srv_d])["cm_listeners"]) >= want:
                break
            if time.monotonic() > deadline:
                srv.stop()
                self.fail("rping server on %s: no listening id after 30 s:\n%s" %
                          (srv_d, srv.text()[-1500:]))
                return
            time.sleep(0.05)
        cli = App(LINEBUF + ["rping", "-c"] + common, self.d[cli_d], JOB_TIMEOUT,
                  "rping-client", env=self.env)

        def check(apps):
            for a in apps:
                if a.proc.returncode != 0:
                    return "%s exited %s" % (a.name, a.proc.returncode)
            if re.search(r"error|fail", cli.output, re.I):
                return "the rping client reported an error"
            self.count(self.ops, "rping_connections")
            self.count(self.ops, "rping_pings", count)
            return None
        self.add_job("rping", [srv, cli], {srv_d, cli_d},
                     "rping %d x %d B %s->%s" % (count, size, cli_d, srv_d), check)

    def launch_churn(self):
        n = self.rng.choice("ab")
        cases = self.rng.sample(["mr", "cq", "srq", "mcast"], self.rng.randint(1, 4))
        iters = self.rng.randint(3, 20)
        argv = [self.args.verbs_churn, "-n", str(iters), "-s",
                str(self.rng.randrange(1 << 31)), "-b", IP[n]] + cases
        app = App(argv, self.d[n], JOB_TIMEOUT, "churn", env=self.env)

        def check(apps):
            a = apps[0]
            if a.proc.returncode != 0:
                return "verbs_churn exited %s" % a.proc.returncode
            for case, it in re.findall(r"verbs_churn (\w+): ok (\d+) iterations", a.output):
                self.count(self.ops, "churn_" + case, int(it))
            return None
        self.add_job("churn", [app], {n}, "verbs_churn %s -n %d on %s" %
                     (" ".join(cases), iters, n), check)

    def launch_ctl(self):
        n = self.rng.choice("ab")
        what = self.rng.choice(["status", "ports", "qps"])
        r = subprocess.run(["timeout", "10", self.args.droce_ctl, "--socket", self.d[n].socket,
                            what], capture_output=True, text=True)
        if r.returncode != 0:
            self.fail("droce-ctl %s on %s: exit %d: %s" % (what, n, r.returncode, r.stderr))

    def reap(self, force_wait=False):
        """Kills the victims whose time came, and judges the jobs that ended."""
        now = time.monotonic()
        for j in list(self.jobs):
            v = j["victim"]
            if v is not None and j["kill_at"] is not None and now >= j["kill_at"]:
                j["kill_at"] = None
                if v.proc.poll() is None:
                    v.kill9()
                    j["killed_at"] = now
                    j["killed_in"] = now - j["start"]
                    self.count(self.ops, "kill9")
                else:
                    j["victim"] = None      # it ended first: judged as any other
            if j["kind"] == "rping" and v is j["apps"][1] and \
                    j.get("killed_at") is not None and now > j["killed_at"] + RPING_NO_REQ_GRACE:
                j["killed_at"] = None
                srv = j["apps"][0]
                if srv.proc.poll() is None and \
                        "RDMA_CM_EVENT_CONNECT_REQUEST" not in srv.text():
                    srv.stop()
                    log("soak: %.0f s: %s: the client, killed %.2f s after its start, had "
                        "sent no REQ: its server stopped" %
                        (self.now(), j["desc"], j["killed_in"]))
                    self.count(self.ops, "rping_client_killed_before_req")
            if any(a.proc.poll() is None for a in j["apps"]):
                continue
            if j["kill_at"] is not None:
                j["victim"] = None          # it ended before its time came: not killed
            self.jobs.remove(j)
            self.judge(j)

    def judge(self, j):
        for a in j["apps"]:
            a.output = a.text()
            self.recent = (self.recent + [(j["desc"], a.name, a.proc.returncode,
                                           a.output)])[-12:]
            if sanitizer_report(a.output):
                self.fail("%s (%s): sanitizer report:\n%s" % (a.name, j["desc"], a.output[-3000:]))
        if j["victim"] is not None or j["hit"]:
            # The victim died of our SIGKILL; its peer, or anything hit by a droced
            # restart, may fail, but not crash and not hang (it ended).
            for a in j["apps"]:
                rc = a.proc.returncode
                if a is not j["victim"] and rc < 0 and rc != -signal.SIGKILL:
                    self.fail("%s (%s) died of signal %d" % (a.name, j["desc"], -rc))
                if rc in (124, 137) and a is not j["victim"]:
                    self.fail("%s (%s) ran into its timeout (a hang)%s" %
                              (a.name, j["desc"], "".join(
                                  "\n--- %s (exit %s):\n%s" % (b.name, b.proc.returncode,
                                                                b.output[-1500:])
                                  for b in j["apps"])))
            self.count(self.outcomes, "killed" if j["victim"] is not None else "restart_hit")
            return
        err = j["check"](j["apps"])
        if err is not None:
            self.count(self.outcomes, "failed")
            self.fail("%s: %s\n%s" % (j["desc"], err, "\n".join(
                "--- %s:\n%s" % (a.name, a.output[-1500:]) for a in j["apps"])))
        else:
            self.count(self.outcomes, "passed")

    def drain(self):
        deadline = time.monotonic() + DRAIN_TIMEOUT
        while self.jobs:
            self.reap()
            self.check_daemons_alive()
            if time.monotonic() > deadline:
                left = ", ".join(j["desc"] for j in self.jobs)
                for j in self.jobs:
                    for a in j["apps"]:
                        a.stop()
                raise TestFailure("applications still running %d s after the last start: %s"
                                  % (DRAIN_TIMEOUT, left))
            time.sleep(0.1)

    # ---- the run ----

    def run(self):
        a = self.args
        for n in "ab":
            self.start_daemon(n)
        self.wait_link()
        for n in "ab":
            self.take_baseline(n)
        log("soak: %d min, periods of %d s, seed %d" % (a.minutes, a.period, a.seed))
        self.sample("idle")
        periods = max(1, int(a.minutes * 60 // a.period))
        nb_restarts = max(1, min(4, int(a.minutes // 15)))
        restart_at = {max(1, round(periods * (i + 1) / (nb_restarts + 1))): "ab"[i % 2]
                      for i in range(nb_restarts)}
        for p in range(periods):
            p_start = time.monotonic()
            launch_end = p_start + a.period * LAUNCH_FRACTION
            restart_t = (p_start + self.rng.uniform(0.3, 0.9) * a.period * LAUNCH_FRACTION
                         if p in restart_at else None)
            sampled = False
            while time.monotonic() < launch_end:
                self.reap()
                self.check_daemons_alive()
                if restart_t is not None and time.monotonic() >= restart_t:
                    self.restart(restart_at[p])
                    restart_t = None
                if not sampled and time.monotonic() >= p_start + a.period * LAUNCH_FRACTION / 2:
                    self.sample("load")
                    sampled = True
                if len(self.jobs) < MAX_JOBS:
                    self.launch()
                time.sleep(self.rng.uniform(0.05, 0.6))
            self.drain()
            self.wait_idle()
            self.check_idle_process()
            self.sample("idle")
            rest = p_start + a.period - time.monotonic()
            log("soak: period %d/%d at %.0f s: ops %s, outcomes %s" %
                (p + 1, periods, self.now(), self.ops, self.outcomes))
            if rest > 0:
                time.sleep(rest)
        # The end: every table is back at zero.
        deadline = time.monotonic() + IDLE_TIMEOUT
        while True:
            busy = {n: {k: ctl(a.droce_ctl, self.d[n])[k] for k in TABLES
                        if ctl(a.droce_ctl, self.d[n])[k] != "0"} for n in "ab"}
            if not any(busy.values()):
                break
            if time.monotonic() > deadline:
                raise TestFailure("after the last application: %s" % busy)
            time.sleep(0.2)
        self.sample("end")
        self.slopes()

    def slopes(self):
        """Each figure of SLOPE_TOL over each incarnation's idle samples after its first
        WARMUP_S, where they span FIT_SPAN_S or more (so not in the 3-minute run, whose
        tables, fds and memfds are still checked exactly)."""
        self.fits = []
        for n in "ab":
            for inc in sorted({s["incarnation"] for s in self.samples if s["daemon"] == n}):
                pts = [s for s in self.samples if s["daemon"] == n and
                       s["incarnation"] == inc and s["phase"] == "idle"]
                # Warm-up left out: RSS climbs from 25 to 42 MiB over the first minutes
                # as droced first touches its pools and its clients' first regions (the
                # 40-minute run), a step, not a slope. Judged only over a long stretch.
                pts = [x for x in pts if x["t_s"] - pts[0]["t_s"] >= WARMUP_S]
                if len(pts) < 4 or pts[-1]["t_s"] - pts[0]["t_s"] < FIT_SPAN_S:
                    continue
                for k, tol in SLOPE_TOL.items():
                    if k in ("rss_kib", "heap_kib") and self.args.asan:
                        # ASan keeps freed memory in its quarantine (256 MiB) and maps
                        # shadow as it goes: RSS rises by design. LeakSanitizer judges
                        # leaks instead, when droced exits at the end; glibc's
                        # heap figures do not see ASan's allocator.
                        continue
                    t = [s["t_s"] / 60.0 for s in pts]
                    y = [float(s[k]) for s in pts]
                    b, se = fit(t, y)
                    growth = b * (t[-1] - t[0])
                    fit_row = {"daemon": n, "incarnation": inc, "figure": k, "samples": len(pts),
                               "slope_per_min": round(b, 3), "stderr": round(se, 3),
                               "growth": round(growth, 1), "tolerance": tol}
                    self.fits.append(fit_row)
                    if growth > tol and (se == 0 or b / se > 3):
                        self.fail("droced %s (incarnation %d): %s grows %.1f per minute "
                                  "(+%.0f over %d idle samples, tolerance %d)" %
                                  (n, inc, k, b, growth, len(pts), tol))

    def close(self):
        for j in self.jobs:
            for a in j["apps"]:
                a.stop()
        for n in "ba":
            d = self.d[n]
            if d.proc is None:
                continue
            alive = d.proc.poll() is None
            self.save_log(n)
            try:
                d.stop(expect_clean=alive)
            except TestFailure as e:
                self.fail(str(e))
        shutil.rmtree(os.path.dirname(self.pmd), ignore_errors=True)
        self.csv.close()
        summary = {"minutes": self.args.minutes, "period_s": self.args.period,
                   "seed": self.args.seed, "asan": self.args.asan,
                   "elapsed_s": round(self.now(), 1), "ops": self.ops,
                   "outcomes": self.outcomes, "fits": getattr(self, "fits", []),
                   "failures": self.failures}
        with open(os.path.join(self.out, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1)
        plot(self.out)
        if self.out == self.work.path and not self.failures:
            self.work.close()
        return summary


# ---- /proc ----

def proc_fds(pid):
    """(open fds, of which memfds) of process pid."""
    fds = memfds = 0
    for fd in os.listdir("/proc/%d/fd" % pid):
        fds += 1
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith("/memfd:"):
                memfds += 1
        except OSError:
            pass
    return fds, memfds


def fd_listing(pid):
    out = []
    for fd in sorted(os.listdir("/proc/%d/fd" % pid), key=int):
        try:
            out.append("%s->%s" % (fd, os.readlink("/proc/%d/fd/%s" % (pid, fd))))
        except OSError:
            pass
    return " ".join(out)


def proc_rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def hugepage_kib(pid):
    """The hugepages process pid maps (DPDK's heap, clients' hugetlb memory), in KiB."""
    total = 0
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            if line.startswith(("Shared_Hugetlb:", "Private_Hugetlb:")):
                total += int(line.split()[1])
    return total


def sanitizer_report(text):
    return "ERROR: AddressSanitizer" in text or "ERROR: LeakSanitizer" in text or \
        "runtime error:" in text


def asan_runtime():
    r = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True)
    u = subprocess.run(["gcc", "-print-file-name=libubsan.so"], capture_output=True, text=True)
    return "%s %s" % (r.stdout.strip(), u.stdout.strip())


def fit(t, y):
    """Least squares y = a + b t: (b, the standard error of b)."""
    n = len(t)
    mt, my = sum(t) / n, sum(y) / n
    sxx = sum((x - mt) ** 2 for x in t)
    if sxx == 0:
        return 0.0, 0.0
    b = sum((x - mt) * (v - my) for x, v in zip(t, y)) / sxx
    a = my - b * mt
    res = sum((v - a - b * x) ** 2 for x, v in zip(t, y))
    se = (res / (n - 2) / sxx) ** 0.5 if n > 2 else 0.0
    return b, se


# The figures soak.png plots, one panel each.
PLOTTED = ("rss_kib", "hugepage_kib", "fds", "memfds", "qps", "mbufs_in_use", "heap_kib")


def plot(out):
    """soak.png from samples.csv, when gnuplot is there: a panel per figure of PLOTTED,
    each daemon's idle samples joined by lines (one line per incarnation: a restart
    starts afresh) and its samples under load as points."""
    if shutil.which("gnuplot") is None:
        return
    with open(os.path.join(out, "samples.csv")) as f:
        rows = list(csv.DictReader(f))
    # A gnuplot data block per series; blank lines split a line between incarnations.
    blocks, panels = [], []
    for fig in PLOTTED:
        plots = []
        for d in "ab":
            for phase, style in (("idle", "linespoints"), ("load", "points")):
                name = "$%s_%s_%s" % (fig, d, phase)
                lines, inc = [], None
                for r in rows:
                    if r["daemon"] != d or r["phase"] != phase:
                        continue
                    if inc is not None and r["incarnation"] != inc:
                        lines.append("")
                    inc = r["incarnation"]
                    lines.append("%.3f %s" % (float(r["t_s"]) / 60, r[fig]))
                if lines:
                    blocks.append("%s << EOD\n%s\nEOD" % (name, "\n".join(lines)))
                    plots.append("%s with %s title '%s %s'" % (name, style, d, phase))
        if plots:
            panels.append("set title '%s'\nplot %s" % (fig, ", ".join(plots)))
    script = "\n".join(blocks + [
        "set terminal pngcairo size 1200,1200 noenhanced",
        "set output '%s'" % os.path.join(out, "soak.png"),
        "set multiplot layout %d,2 title 'droce soak: idle samples (lines) and under load "
        "(points)'" % ((len(panels) + 1) // 2),
        "set xlabel 'minutes'", "set key outside right"] + panels + ["unset multiplot"])
    subprocess.run(["gnuplot"], input=script, text=True, capture_output=True, timeout=60)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--period", type=int, default=60)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--asan", action="store_true")
    ap.add_argument("--only", default=None, help="stream,rping,churn,ctl: only these")
    ap.add_argument("--log-level", default=None, help="droced's EAL --log-level")
    ap.add_argument("--kill-share", type=float, default=KILL_SHARE,
                    help="the share of applications killed (default %.1f)" % KILL_SHARE)
    for p in ("droced", "droce_ctl", "compat_dir", "fault_pmd", "verbs_stream", "verbs_churn"):
        ap.add_argument(p)
    args = ap.parse_args()
    if args.seed is None:
        args.seed = random.randrange(1 << 31)
    for p in ("droced", "droce_ctl", "compat_dir", "fault_pmd", "verbs_stream", "verbs_churn"):
        setattr(args, p, os.path.abspath(getattr(args, p)))
    if args.out:
        args.out = os.path.abspath(args.out)
    # SIGTERM (a timeout, a user) ends the run as an exception would: everything it
    # started is stopped and cleaned up, and the summary still written.
    signal.signal(signal.SIGTERM, lambda sig, frame: sys.exit(143))
    soak = Soak(args)
    try:
        soak.run()
    except TestFailure as e:
        soak.fail(str(e))
    except Exception as e:  # report what broke, then the summary
        soak.fail("%s: %s" % (type(e).__name__, e))
    except SystemExit:
        soak.fail("stopped by SIGTERM")
    finally:
        summary = soak.close()
    log("soak: ops %s" % json.dumps(summary["ops"], sort_keys=True))
    log("soak: outcomes %s" % json.dumps(summary["outcomes"], sort_keys=True))
    for f in summary["fits"]:
        log("soak: fit %s" % json.dumps(f, sort_keys=True))
    if summary["failures"]:
        log("soak: FAIL, %d problem(s), seed %d (samples and logs in %s)" %
            (len(summary["failures"]), args.seed, soak.out))
        sys.exit(1)
    log("soak: PASS, %.0f s, seed %d" % (summary["elapsed_s"], args.seed))


if __name__ == "__main__":
    main()
