# SPDX-License-Identifier: BSD-3-Clause
"""kill -9 of the droced an application is attached to (lib/verbs/verbs_fatal.c): the
application gets IBV_EVENT_DEVICE_FATAL within 100 ms, every outstanding work request
completes with IBV_WC_WR_FLUSH_ERR, later verbs fail with EIO, completion channels wake
(verbs_death checks all that from inside); Debian's unmodified ibv_rc_pingpong and
ib_send_bw exit non-zero within seconds (the dead daemon's with flushed work, a peer with
messages in flight with its retries exhausted); and the killed droced restarts on the same
configuration with no clean-up by hand (EAL lock and runtime dir, control socket, memif
socket, hugepage files), and the programs run through it again. peer_restart: the droced
at the other end of the link restarts; ours reports its port DOWN and ACTIVE again with
the events a NIC's driver raises, and restarts its port until the link is back.

usage: test_daemon_death.py DROCED DROCE_CTL VERBS_DEATH VERBS_ASYNC COMPAT_DIR [CASE...]
"""

import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from droce_harness import App, MemifPair, check, expect_idle, main, parse_args, run_pair

BIN, CASES = parse_args(["droced", "droce_ctl", "verbs_death", "verbs_async", "compat_dir"])
ENV = {"LD_LIBRARY_PATH": BIN["compat_dir"]}
# Distinct from the other integration tests' ports (meson may run them at the same time).
TCP_PORT = 19230
# The bound for IBV_EVENT_DEVICE_FATAL after the kill.
FATAL_WITHIN_S = 0.1
# "Within seconds": the peer's QP gives up after its retries (timeout 14: 7 x 67 ms).
EXIT_WITHIN_S = 10


def wait_for(app, pattern, timeout, what):
    deadline = time.monotonic() + timeout
    while not re.search(pattern, app.text(), re.M):
        check(app.proc.poll() is None, "%s exited %s before %s:\n%s" %
              (app.name, app.proc.returncode, what, app.text()))
        check(time.monotonic() < deadline, "%s: no %s after %d s:\n%s" %
              (app.name, what, timeout, app.text()))
        time.sleep(0.05)


def expect_exit(app, killed_at, want_zero, what):
    """app ends within EXIT_WITHIN_S of the kill, with status 0 (want_zero) or not."""
    left = killed_at + EXIT_WITHIN_S - time.monotonic()
    try:
        rc = app.wait(max(left, 0.1))
    except Exception:
        app.stop()
        raise AssertionError("%s still running %d s after droced was killed (a hang):\n%s"
                             % (what, EXIT_WITHIN_S, app.text()))
    took = time.monotonic() - killed_at
    if want_zero:
        check(rc == 0, "%s exited %s:\n%s" % (what, rc, app.output))
    else:
        check(rc != 0, "%s exited 0 after its droced was killed:\n%s" % (what, app.output))
    print("     %s: exit %s %.2f s after the kill" % (what, rc, took), flush=True)
    return app.output


def after_restart(server_argv, client_argv, srv_daemon, cli_daemon):
    """Runs a pair again once the killed daemon is back. Its memif end connects anew when
    it starts; until the link is up ARP for the peer fails (EHOSTUNREACH at RTR), so the
    run is tried again for a few seconds, and must then succeed."""
    deadline = time.monotonic() + 20
    tries = 0
    while True:
        tries += 1
        try:
            run_pair(server_argv, client_argv, srv_daemon, cli_daemon, 60, env=ENV,
                     start_delay=0.5)
            print("     through the restarted droced: ok (attempt %d)" % tries, flush=True)
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


class Apps:
    """Applications that are killed, whatever happens, when the block ends."""

    def __init__(self):
        self.apps = []

    def add(self, app):
        self.apps.append(app)
        return app

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        for app in self.apps:
            app.stop()
        return False


def t_libdroce():
    # A memif pair, A (the memif server) killed: its restart meets its own stale memif
    # socket, control socket, EAL runtime dir and lock.
    with MemifPair(BIN["droced"], tag="death") as pair, Apps() as apps:
        app = apps.add(App([BIN["verbs_death"], "-s", "16", "-r", "8"], pair.a, timeout=60))
        wait_for(app, r"^ready", 20, "ready")
        killed_at = pair.a.kill9()
        out = expect_exit(app, killed_at, True, "verbs_death")
        check("verbs_death: OK" in out and "flushed 16 sends and 8 receives" in out,
              "verbs_death:\n%s" % out)
        fatal_at = float(re.search(r"^fatal_at=([\d.]+)", out, re.M).group(1))
        delay = fatal_at - killed_at
        check(delay <= FATAL_WITHIN_S, "IBV_EVENT_DEVICE_FATAL %.3f s after the kill, want "
              "<= %.1f s" % (delay, FATAL_WITHIN_S))
        print("     device fatal %.1f ms after the kill" % (delay * 1e3), flush=True)
        pair.a.start()
        app = apps.add(App([BIN["verbs_async"], "srq_limit"], pair.a, timeout=30))
        check(app.wait() == 0, "verbs_async on the restarted droced:\n%s" % app.output)
        for d in (pair.a, pair.b):
            expect_idle(BIN["droce_ctl"], d)


# Line-buffered output, so the harness sees how far a program got while it runs.
LINEBUF = ["stdbuf", "-oL"]


def pingpong_args(n):
    return LINEBUF + ["ibv_rc_pingpong", "-d", "droce0", "-g", "0", "-p", str(TCP_PORT), "-n", str(n)]


def t_rc_pingpong():
    with MemifPair(BIN["droced"], tag="death-pp") as pair, Apps() as apps:
        srv = apps.add(App(pingpong_args(100000000), pair.a, 120, "server", env=ENV))
        time.sleep(0.5)
        cli = apps.add(App(pingpong_args(100000000) + ["127.0.0.1"], pair.b, 120, "client",
                           env=ENV))
        for app in (srv, cli):
            wait_for(app, r"remote address", 20, "address exchange")
        time.sleep(1.0)     # in full flight
        # B: a memif server (A) takes a restarted client at once; a client reconnects to
        # a restarted server only when droced restarts its port (peer_restart below).
        killed_at = pair.b.kill9()
        out = expect_exit(cli, killed_at, False, "ibv_rc_pingpong on the killed droced")
        # Either error: a flushed WR's completion ("Failed status"), or, when a completion
        # that succeeded before the kill is polled first, the next post refused by
        # libdroce because droced is gone ("Couldn't post") -- which of the two comes
        # first is a race with the watcher thread, as on a NIC that dies mid-flight.
        check("Failed status" in out or "Couldn't post" in out,
              "no failed completion or refused post reported:\n%s" % out)
        # The peer notices only if its own message was in flight (its retries run out);
        # if the dead side's was, it waits for a receive, as it would with any NIC. Either
        # way it must not report success. (ib_send_bw below always has sends in flight.)
        try:
            rc = srv.wait(EXIT_WITHIN_S)
            check(rc != 0 and "Failed status" in srv.output,
                  "the peer ibv_rc_pingpong exited %s:\n%s" % (rc, srv.output))
            print("     ibv_rc_pingpong on the surviving droced: exit %s (retries)" % rc,
                  flush=True)
        except subprocess.TimeoutExpired:
            srv.stop()
            print("     ibv_rc_pingpong on the surviving droced: waiting for a receive",
                  flush=True)
        pair.b.start()
        after_restart(pingpong_args(100), pingpong_args(100) + ["127.0.0.1"], pair.a,
                      pair.b)
        for d in (pair.a, pair.b):
            expect_idle(BIN["droce_ctl"], d)


def port_state(daemon):
    """ibv_devinfo's state of droce0 through daemon (Debian's, unmodified)."""
    r = subprocess.run(["timeout", "20", "ibv_devinfo", "-d", "droce0"], capture_output=True,
                       text=True, env=dict(daemon.env(), **ENV))
    m = re.search(r"state:\s+(\w+)", r.stdout)
    check(r.returncode == 0 and m is not None, "ibv_devinfo: %s%s" % (r.stdout, r.stderr))
    return m.group(1)


def t_peer_restart():
    """The droced at the other end of the link (A, the memif server) is killed and
    restarted: B's port goes DOWN (ibv_devinfo) with IBV_EVENT_PORT_ERR to its clients
    (Debian's ibv_asyncwatch), B restarts its port until the link is back, then
    IBV_EVENT_PORT_ACTIVE and ACTIVE again, and traffic between the two runs at the first
    try (each end announced its address when the link came back)."""
    with MemifPair(BIN["droced"], tag="death-peer") as pair, Apps() as apps:
        check(port_state(pair.b) == "PORT_ACTIVE", "B's port not ACTIVE at the start")
        watch = apps.add(App(LINEBUF + ["ibv_asyncwatch", "-d", "droce0"], pair.b, 120,
                             "asyncwatch", env=ENV))
        time.sleep(0.5)
        pair.a.kill9()
        pair.a.cleanup_files()
        wait_for(watch, r"IBV_EVENT_PORT_ERR", 10, "IBV_EVENT_PORT_ERR")
        check(port_state(pair.b) == "PORT_DOWN", "B's port not DOWN without its peer")
        pair.a.start()
        wait_for(watch, r"IBV_EVENT_PORT_ACTIVE", 40, "IBV_EVENT_PORT_ACTIVE")
        check(port_state(pair.b) == "PORT_ACTIVE", "B's port not ACTIVE again")
        events = re.findall(r"IBV_EVENT_\w+", watch.text())
        check(events == ["IBV_EVENT_PORT_ERR", "IBV_EVENT_PORT_ACTIVE"],
              "ibv_asyncwatch saw %s" % events)
        run_pair(pingpong_args(100), pingpong_args(100) + ["127.0.0.1"], pair.a, pair.b, 60,
                 env=ENV, start_delay=0.5)
        print("     B's port: DOWN, PORT_ERR, restarted, PORT_ACTIVE; ibv_rc_pingpong ok",
              flush=True)
        watch.stop()
        for d in (pair.a, pair.b):
            expect_idle(BIN["droce_ctl"], d)


def send_bw_args(extra):
    return LINEBUF + ["ib_send_bw", "-d", "droce0", "-x", "0", "-p", str(TCP_PORT + 1)] + extra


def t_perftest():
    with MemifPair(BIN["droced"], tag="death-pt") as pair, Apps() as apps:
        # The server only receives: its daemon (B) dies, so the sender meets the dead end.
        srv = apps.add(App(send_bw_args(["-D", "60"]), pair.b, 120, "server", env=ENV))
        time.sleep(0.5)
        cli = apps.add(App(send_bw_args(["-D", "60", "127.0.0.1"]), pair.a, 120, "client",
                           env=ENV))
        for app in (srv, cli):
            wait_for(app, r"#bytes", 30, "the results header")
        time.sleep(1.0)
        killed_at = pair.b.kill9()
        expect_exit(srv, killed_at, False, "ib_send_bw server on the killed droced")
        expect_exit(cli, killed_at, False, "ib_send_bw client on the surviving droced")
        pair.b.start()
        after_restart(send_bw_args(["-n", "200"]), send_bw_args(["-n", "200", "127.0.0.1"]),
                      pair.b, pair.a)
        for d in (pair.a, pair.b):
            expect_idle(BIN["droce_ctl"], d)


if __name__ == "__main__":
    main([("libdroce", t_libdroce), ("rc_pingpong", t_rc_pingpong),
          ("perftest", t_perftest), ("peer_restart", t_peer_restart)], CASES)
