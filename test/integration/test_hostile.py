# SPDX-License-Identifier: BSD-3-Clause
"""A hostile client beside a healthy one: raw_garbage -m all (garbage in its rings, WQEs,
doorbells and region; malformed and foreign requests) runs against a droced while a
verbs_stream RC pair streams through the same droced. raw_garbage must exit 0 (droced kept
answering, its own QPs went to ERR where they must), the stream pair must complete
unaffected, droced must still answer droce-ctl, hold nothing afterwards and stop with exit
0 (under ASan: no sanitizer report, which would make that status non-zero).

In-place registration (app/droced/droced_mrmap.c): the pieces droced must refuse are
refused with the errno each check gives, and the shared file truncated under a registered
MR cost droced only zero pages (its log says how many), not its life.

usage: test_hostile.py DROCED DROCE_CTL VERBS_STREAM RAW_GARBAGE [CASE...]
"""

import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from droce_harness import (App, Daemon, Workdir, check, ctl, expect_idle, log, main,
                           parse_args)

TCP_PORT = 19410
SEED = "1"
BIN, CASES = parse_args(["droced", "droce_ctl", "verbs_stream", "raw_garbage"])

EFAULT, EINVAL = -14, -22
# raw_garbage mr_in_place_refused: each piece and the status droced must answer. EFAULT
# where the kernel's pin would fail (no page, or a read-only one for writing), EINVAL where
# the piece is not a shared file mapping at its offset or the request is malformed.
IN_PLACE_REFUSED = {"unmapped": EFAULT, "private": EINVAL, "read-only for writing": EFAULT,
                    "wrong offset": EINVAL, "past the end": EFAULT, "with an fd": EINVAL}
# droced_mr_view_unmap's line when its SIGBUS handler replaced pages of an in-place MR.
ZEROED = re.compile(r"in-place memory region: (\d+) pages read or written past the end")


def check_in_place(out):
    """raw_garbage's in-place lines: every piece refused as it must be, the truncated file
    registered and truncated (so the engines did touch pages past its end)."""
    m = re.search(r"REG_MR in place refused: (.*)", out)
    check(m is not None, "raw_garbage printed no in-place refusals:\n" + out[-3000:])
    got = {}
    for item in m.group(1).split(", "):
        what, _, st = item.rpartition(" ")
        got[what] = int(st)
    check(got == IN_PLACE_REFUSED, "in-place pieces: droced answered %s, expected %s" %
          (got, IN_PLACE_REFUSED))
    check(re.search(r"REG_MR in place of a \d+-byte shared file: status 0\n", out) and
          "ftruncate to 0 after registration: done" in out,
          "the truncated in-place case did not run:\n" + out[-3000:])
    for mode in ("mr_in_place_refused", "mr_in_place_truncated"):
        check("ok mode %s\n" % mode in out, "raw_garbage mode %s not ok" % mode)


def run():
    work = Workdir("hostile")
    d = Daemon(BIN["droced"], work, "h", "net_ring0", "10.99.2.1/24")
    apps = []
    try:
        d.start()
        common = [BIN["verbs_stream"], "-t", "rc", "-e", "-v", "-T", "60",
                  "-p", str(TCP_PORT), "-s", "1024", "-n", "200000"]
        srv = App(common, d, 300, "stream-server")
        apps.append(srv)
        time.sleep(0.2)
        cli = App(common + ["127.0.0.1"], d, 300, "stream-client")
        apps.append(cli)
        deadline = time.monotonic() + 60
        while not ("ready" in srv.text() and "ready" in cli.text()):
            check(time.monotonic() < deadline and srv.proc.poll() is None and
                  cli.proc.poll() is None, "stream pair not ready:\n%s\n%s" %
                  (srv.text(), cli.text()))
            time.sleep(0.05)
        garbage = App([BIN["raw_garbage"], "-m", "all", "-S", SEED], d, 240, "raw_garbage")
        apps.append(garbage)
        rc = garbage.wait(260)
        check(rc == 0, "raw_garbage exited %s:\n%s\n--- droced:\n%s" %
              (rc, garbage.output[-3000:], d.log_text()[-3000:]))
        check(d.proc.poll() is None, "droced died:\n" + d.log_text()[-3000:])
        check_in_place(garbage.output)
        log("  in-place pieces refused: %s" % ", ".join(
            "%s %d" % kv for kv in IN_PLACE_REFUSED.items()))
        stream_running = srv.proc.poll() is None and cli.proc.poll() is None
        # The stream must span the garbage, or it proves nothing about droced serving
        # others meanwhile.
        check(stream_running, "the stream pair ended before raw_garbage did:\n%s\n%s" %
              (srv.text()[-1000:], cli.text()[-1000:]))
        for a in (srv, cli):
            rc = a.wait(240)
            check(rc == 0, "%s exited %s (harmed by the hostile client?):\n%s" %
                  (a.name, rc, a.output[-2000:]))
        log("  raw_garbage ok; stream pair ok (it ran all through the garbage)")
        check(d.proc.poll() is None, "droced died:\n" + d.log_text()[-3000:])
        st = ctl(BIN["droce_ctl"], d)
        log("  droced after: clients_total=%s clients_torn_down=%s" %
            (st["clients_total"], st["clients_torn_down"]))
        deadline = time.monotonic() + 10
        while ctl(BIN["droce_ctl"], d)["clients"] != "0" and time.monotonic() < deadline:
            time.sleep(0.1)
        expect_idle(BIN["droce_ctl"], d)
        # raw_garbage's MRs are gone with its connections: the truncated one said its count.
        m = ZEROED.search(d.log_text())
        check(m is not None and int(m.group(1)) > 0,
              "droced's log names no zero page mapped over the truncated in-place MR:\n" +
              d.log_text()[-3000:])
        log("  truncated in-place MR: %s zero pages mapped, droced alive" % m.group(1))
        d.stop()
    finally:
        for a in apps:
            a.stop()
        if d.proc is not None:
            d.stop(expect_clean=False)
        work.close()


if __name__ == "__main__":
    main([("hostile", run)], [])
