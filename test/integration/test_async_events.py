# SPDX-License-Identifier: BSD-3-Clause
"""The asynchronous-event contract on one droced (net_ring0): for SRQ limit, last WQE
reached and CQ error (with the QP fatal of its QP), async_fd turns readable and
ibv_get_async_event then returns the event at once, on a blocking and on a non-blocking
fd, and the fd is not readable once nothing is queued; an unread event goes with its
destroyed object; a signal interrupts a blocked wait (verbs_async.c says how).

usage: test_async_events.py DROCED DROCE_CTL VERBS_ASYNC [CASE...]
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from droce_harness import App, Daemon, Workdir, check, expect_idle, main, parse_args

BIN, CASES = parse_args(["droced", "droce_ctl", "verbs_async"])
# verbs_async's exit statuses (verbs_async.c).
STATUS = {1: "setup error", 2: "wrong or missing event",
          3: "ibv_get_async_event blocked after poll() said readable",
          4: "async_fd readable with nothing queued"}


def run():
    work = Workdir("async")
    d = Daemon(BIN["droced"], work, "e", "net_ring0", "10.99.4.1/24")
    try:
        d.start()
        failed = []
        for case in ("srq_limit", "forget", "eintr", "last_wqe", "cq_err"):
            for mode in ([], ["--nonblock"]):
                app = App([BIN["verbs_async"]] + mode + [case], d, timeout=30)
                rc = app.wait()
                name = case + (" non-blocking" if mode else " blocking")
                if rc != 0:
                    failed.append("%s: exit %s (%s)\n%s" % (name, rc, STATUS.get(rc, "?"),
                                                           app.output))
                else:
                    print("ok   %s" % name, flush=True)
        check(not failed, "\n".join(failed))
        expect_idle(BIN["droce_ctl"], d)
    finally:
        d.stop(expect_clean=True)
        work.close()


if __name__ == "__main__":
    main([("async_events", run)], CASES)
