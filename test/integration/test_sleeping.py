# SPDX-License-Identifier: BSD-3-Clause
"""Engines that sleep (doc/engine.md, "Sleeping engines"): two droced, each application
streaming at the other (verbs_stream) in bursts of 1 to 4 sends after random pauses of up to
60 us, around the 20 us an adaptive engine spins before it sleeps, so that doorbells and
packets arrive before, while and after an engine publishes that it sleeps. A lost wake-up
shows as a stall: each stream allows 1 s without progress, and its worst stall is logged.
Early retransmission is off and the link loses nothing, so a packet an engine slept through
shows as a local ACK timeout (req_timeout), which must stay 0.

- tap_interrupt, tap_adaptive: net_tap behind a bridge, whose rx interrupts wake the
  engines (rx_intr_wakeups);
- memif_fallback: net_memif has no rx interrupt: droced says so and its engines sleep
  idle_sleep_us at a time (timeout_wakeups), doorbells still end their sleeps;
- poll_default: no mode set, the engines never sleep.

usage: test_sleeping.py DROCED VERBS_STREAM [CASE...]
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from droce_harness import (MemifPair, TapPair, check, engine_counters, free_tcp_port, log,
                           main, parse_args, run_pair)

BIN, CASES = parse_args(["droced", "verbs_stream"])
STALL_MS = 1000
GAP_US = 60


def stream(pair, netns, n, size, opts=()):
    """verbs_stream both ways through pair's daemons; returns the worst stall (ms)."""
    port = free_tcp_port()
    common = [BIN["verbs_stream"], "-p", str(port), "-n", str(n), "-s", str(size), "-m",
              "1024", "-T", "60", "--gaps", str(GAP_US), "--stall-ms", str(STALL_MS)]
    common += list(opts)
    outs = run_pair(common, common + ["127.0.0.1"], pair.a, pair.b, timeout=180,
                    srv_netns=netns, cli_netns=netns)
    worst = 0
    for out in outs:
        m = re.search(r"done sent=(\d+) received=(\d+) lost=0 worst_stall_ms=(\d+)", out)
        check(m is not None and int(m.group(1)) == n and int(m.group(2)) == n,
              "stream did not deliver %d messages each way:\n%s" % (n, out))
        worst = max(worst, int(m.group(3)))
    return worst


def stop_counted(pair):
    """Stops both daemons; their engines' counters."""
    cs = []
    for d in (pair.b, pair.a):
        d.stop()
        cs.append(engine_counters(d))
    for c in cs:
        check(c, "no engine counters in a daemon's log")
    return cs


def sleeping(pair, netns, rx_intr):
    with pair:
        worst = stream(pair, netns, 3000, 64)
        worst = max(worst, stream(pair, netns, 300, 4096, ["-e"]))
        cs = stop_counted(pair)
        if not rx_intr:
            check("has no rx interrupt" in pair.a.log_text(),
                  "droced did not say its port has no rx interrupt:\n" + pair.a.log_text())
    for c in cs:
        check(c.get("req_timeout", 0) == 0,
              "an engine slept through a packet (local ACK timeouts): %s" % c)
        check(c.get("sleeps", 0) > 100 and c.get("doorbell_wakeups", 0) > 0,
              "the engines did not sleep, or no doorbell woke them: %s" % c)
        if rx_intr:
            check(c.get("rx_intr_wakeups", 0) > 0, "no rx interrupt woke an engine: %s" % c)
        else:
            check(c.get("rx_intr_wakeups", 0) == 0 and c.get("timeout_wakeups", 0) > 0,
                  "a port without rx interrupts: sleeps must end by their timeout: %s" % c)
    log("  worst stall %d ms; engine b: %s" % (worst, {k: cs[0].get(k, 0) for k in (
        "sleeps", "sleeps_skipped", "doorbell_wakeups", "rx_intr_wakeups", "timeout_wakeups",
        "cmd_wakeups")}))


def tap_interrupt():
    p = TapPair(BIN["droced"], mode="interrupt", early_retransmit=False)
    sleeping(p, p.ns, True)


def tap_adaptive():
    p = TapPair(BIN["droced"], mode="adaptive", early_retransmit=False)
    sleeping(p, p.ns, True)


def memif_fallback():
    p = MemifPair(BIN["droced"], mode="interrupt", idle_sleep_us=20, early_retransmit=False)
    sleeping(p, None, False)


def poll_default():
    p = MemifPair(BIN["droced"], idle_sleep_us=0)
    with p:
        stream(p, None, 1000, 64)
        cs = stop_counted(p)
    for c in cs:
        check(c.get("sleeps", 0) == 0, "a polling engine slept: %s" % c)


if __name__ == "__main__":
    main([("tap_interrupt", tap_interrupt), ("tap_adaptive", tap_adaptive),
          ("memif_fallback", memif_fallback), ("poll_default", poll_default)], CASES)
