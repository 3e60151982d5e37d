# SPDX-License-Identifier: BSD-3-Clause
"""verbs_badargs through a droced: every verb called with invalid arguments fails with
the errno rdma-core documents (every row passes), nothing crashes, every object made is
destroyed; droced holds nothing afterwards and stops cleanly.

usage: test_badargs.py DROCED DROCE_CTL VERBS_BADARGS [CASE...]
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from droce_harness import (App, Daemon, Workdir, check, expect_idle, log, main, parse_args)

BIN, CASES = parse_args(["droced", "droce_ctl", "verbs_badargs"])


def run():
    work = Workdir("badargs")
    d = Daemon(BIN["droced"], work, "b", "net_ring0", "10.99.2.1/24")
    try:
        d.start()
        app = App([BIN["verbs_badargs"]], d, 120)
        rc = app.wait(150)
        failed = [l for l in app.output.splitlines() if l.startswith("FAIL")]
        check(rc == 0 and not failed, "verbs_badargs exited %s; failed rows:\n%s\n--- output:\n%s"
              % (rc, "\n".join(failed), app.output[-3000:]))
        rows = sum(1 for l in app.output.splitlines() if l.startswith("ok "))
        check(rows > 50, "only %d rows ran:\n%s" % (rows, app.output))
        log("  %d rows ok" % rows)
        check(d.proc.poll() is None, "droced died:\n" + d.log_text())
        expect_idle(BIN["droce_ctl"], d)
        d.stop()
    finally:
        if d.proc is not None:
            d.stop(expect_clean=False)
        work.close()


if __name__ == "__main__":
    main([("badargs", run)], [])
