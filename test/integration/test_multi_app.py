# SPDX-License-Identifier: BSD-3-Clause
"""Eight applications on one droced at once (net_ring0: every QP pair meets through the
daemon's loopback): four verbs_stream RC pairs. One application is killed with SIGKILL in
mid-transfer: its peer must end with an error completion (exit 3) within a bounded time,
never hang; droce-ctl status must show that everything the killed application owned was
torn down (counts are those of the live applications, clients_torn_down grew) while a
witness pair still streams (it runs until the test stops it, so the count never depends
on how fast the others are); the four others must complete (exit 0); once the witness
pair is stopped too, nothing is left.

usage: test_multi_app.py DROCED DROCE_CTL VERBS_STREAM [CASE...]
"""

import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from droce_harness import (App, Daemon, TestFailure, Workdir, check, ctl, expect_consistent,
                           expect_idle, log, main, parse_args)

TCP_PORT = 19310
PAIRS = 4
# Messages each way for the pairs that must complete: long enough to still run when the
# victim is killed and torn down, short enough for two shared CPUs.
ITERS = 120000
SIZE = 1024
# A dead peer is an error completion within about 2 s (verbs_stream's ACK timeout
# and retries); generous for a loaded machine.
PEER_ERROR_WAIT = 30
COUNTED = ("clients", "pds", "mrs", "cqs", "qps", "mr_bytes")

BIN, CASES = parse_args(["droced", "droce_ctl", "verbs_stream"])


def wait_for(what, cond, timeout, detail=lambda: ""):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TestFailure("timed out waiting for %s\n%s" % (what, detail()))
        time.sleep(0.1)


def run():
    work = Workdir("multi")
    d = Daemon(BIN["droced"], work, "m", "net_ring0", "10.99.2.1/24")
    apps = []
    try:
        d.start()
        for i in range(PAIRS):
            common = [BIN["verbs_stream"], "-t", "rc", "-v", "-e", "-T", "20",
                      "-p", str(TCP_PORT + i), "-s", str(SIZE)]
            # Pair 0 streams until its client (the victim) is killed, pair 1 (the
            # witness) until the test stops it.
            common += ["--forever"] if i < 2 else ["-n", str(ITERS)]
            apps.append(App(common, d, 240, "server%d" % i))
            time.sleep(0.2)
            apps.append(App(common + ["127.0.0.1"], d, 240, "client%d" % i))
        victim, peer = apps[1], apps[0]
        witness = apps[2:4]
        others = apps[4:]

        def outputs():
            return "\n".join("--- %s (exit %s):\n%s" % (a.name, a.proc.poll(), a.text()[-1500:])
                             for a in apps)

        wait_for("all eight ready", lambda: all("ready" in a.text() for a in apps), 60,
                 outputs)
        wait_for("victim's progress",
                 lambda: re.search(r"progress sent=[1-9]", victim.text()) is not None, 30,
                 outputs)
        check(all(a.proc.poll() is None for a in apps), "an application ended early\n" +
              outputs())
        before = ctl(BIN["droce_ctl"], d)
        check(before["clients"] == str(2 * PAIRS), "status with 8 apps: %s" % before)
        per_app = {}
        for k in COUNTED:
            n = int(before[k])
            check(n % (2 * PAIRS) == 0 and n > 0, "%s=%d: not the same for 8 apps" % (k, n))
            per_app[k] = n // (2 * PAIRS)
        expect_consistent(before)
        log("  8 apps: %s" % {k: before[k] for k in COUNTED})

        victim.kill9()
        victim.wait(10)
        t0 = time.monotonic()

        # Objects: exactly those of the applications still running, the witness pair
        # among them. The victim's peer may end at any moment: after its retry budget
        # (8 ACK timeouts of 268 ms), or sooner, with RNR retries exceeded, when the dead
        # victim's QP, not yet torn down, has no receive posted.
        last = {}
        survivors = [peer] + witness + others

        def counts_match():
            alive = [a for a in survivors if a.proc.poll() is None]
            st = ctl(BIN["droce_ctl"], d)
            alive2 = [a for a in survivors if a.proc.poll() is None]
            last.update(st)
            last["alive"] = len(alive2)
            # droced's tables and what the engines really hold (engine_*) must both drop.
            return len(alive) == len(alive2) and all(
                int(st[k]) == len(alive) * per_app[k] and
                ("engine_" + k not in st or int(st["engine_" + k]) == len(alive) * per_app[k])
                for k in COUNTED) and int(st["engine_domains"]) == len(alive)

        wait_for("the victim's objects torn down", counts_match, 10,
                 lambda: "last status %s" % last)
        check(all(a.proc.poll() is None for a in witness),
              "the witness pair ended before the count\n" + outputs())
        check(int(last["clients_torn_down"]) > int(before["clients_torn_down"]),
              "clients_torn_down did not grow: %s -> %s" % (before["clients_torn_down"],
                                                           last["clients_torn_down"]))
        log("  after the kill: %s (%d apps running)" % (
            {k: last[k] for k in COUNTED + ("clients_torn_down",)}, last["alive"]))

        try:
            rc = peer.wait(PEER_ERROR_WAIT)
        except Exception:
            raise TestFailure("the victim's peer hangs %d s after the kill\n%s" %
                              (PEER_ERROR_WAIT, outputs()))
        check(rc == 3 and "error completion" in peer.output,
              "the victim's peer exited %s, want 3 (error completion):\n%s" %
              (rc, peer.output[-2000:]))
        log("  peer: error completion after %.1f s" % (time.monotonic() - t0))

        for a in others:
            try:
                rc = a.wait(180)
            except Exception:
                raise TestFailure("%s does not finish\n%s" % (a.name, outputs()))
            check(rc == 0 and re.search(r"done sent=%d received=%d" % (ITERS, ITERS),
                                        a.output) is not None,
                  "%s exited %s:\n%s" % (a.name, rc, a.output[-2000:]))
        check(all(a.proc.poll() is None for a in witness),
              "the witness pair ended before it was stopped\n" + outputs())
        check(all(re.search(r"progress sent=[1-9]", a.text()) is not None for a in witness),
              "the witness pair made no progress\n" + outputs())
        for a in witness:
            a.stop()
        wait_for("droced idle", lambda: ctl(BIN["droce_ctl"], d)["clients"] == "0", 10)
        expect_idle(BIN["droce_ctl"], d)
        d.stop()
    finally:
        for a in apps:
            a.stop()
        if d.proc is not None:
            d.stop(expect_clean=False)
        work.close()


if __name__ == "__main__":
    main([("multi_app_kill9", run)], [])
