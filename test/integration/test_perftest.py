# SPDX-License-Identifier: BSD-3-Clause
"""Debian's perftest (ib_send_bw, ib_send_lat), unmodified, through two droced joined by
net_memif, with LD_LIBRARY_PATH pointing at droce's libibverbs.so.1 (drivers/compat).

Each run's report is parsed on both sides: every message size asked for has its row, every
row shows the full iteration count and a non-zero result, and neither side printed an error
or exited non-zero. ib_send_lat refuses -q (its parser exits with an error for more than one
QP), so -q 4 is run with ib_send_bw only.

usage: test_perftest.py DROCED DROCE_CTL COMPAT_DIR [CASE...]
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from droce_harness import (MemifPair, check, expect_idle, main, parse_args,
                           run_cases, run_pair)
import perftest_report  # noqa: E402

TCP_PORT = 19310
BIN, CASES = parse_args(["droced", "droce_ctl", "compat_dir"])
ENV = {"LD_LIBRARY_PATH": BIN["compat_dir"]}
# -a: every power of two from 2 bytes to 8 MiB.
ALL_SIZES = [1 << k for k in range(1, 24)]
ERROR_WORDS = re.compile(r"error|fail|couldn't|unable|not supported", re.I)
pair = None


def perftest(prog, opts, iters, sizes, timeout=180, qps=1):
    """prog between the pair: server through A, client through B. Checks both reports:
    ib_send_bw reports the messages of all its QPs (qps * iters) on both sides."""
    common = [prog, "-F", "-d", "droce0", "-p", str(TCP_PORT), "-n", str(iters)] + list(opts)
    srv, cli = run_pair(common, common + ["127.0.0.1"], pair.a, pair.b, timeout, env=ENV,
                        start_delay=0.5)
    ncols = perftest_report.ncols(prog)
    # The SEND tests report on both sides. In the WRITE and READ tests the server's side
    # is passive (its memory is the target) and only the client measures.
    one_sided = not prog.startswith("ib_send")
    for side, out in (("server", srv), ("client", cli)):
        bad = [ln for ln in perftest_report.clean(out)[0].splitlines() if ERROR_WORDS.search(ln)]
        check(not bad, "%s %s reported: %s\n%s" % (prog, side, bad, out))
        if one_sided and side == "server":
            continue
        perftest_report.check_report(prog, side, out, sizes,
                                     iters * qps if ncols == 3 else iters)
    return srv, cli


def t_send_bw_all():
    perftest("ib_send_bw", ["-a"], 100, ALL_SIZES)


def t_send_bw_4qps():
    srv, cli = perftest("ib_send_bw", ["-q", "4"], 1000, [65536], qps=4)
    check(re.search(r"Number of qps\s+:\s+4", cli) is not None, "not 4 QPs:\n%s" % cli)


def t_send_bw_srq():
    srv, _ = perftest("ib_send_bw", ["--use-srq", "-q", "4"], 1000, [65536], qps=4)
    check(re.search(r"Using SRQ\s+:\s+ON", srv) is not None, "SRQ not used:\n%s" % srv)


def t_send_bw_events():
    perftest("ib_send_bw", ["-e"], 1000, [65536])


def t_send_lat_all():
    perftest("ib_send_lat", ["-a"], 100, ALL_SIZES)


def t_send_lat_srq():
    srv, _ = perftest("ib_send_lat", ["--use-srq"], 100, [2])
    check(re.search(r"Using SRQ\s+:\s+ON", srv) is not None, "SRQ not used:\n%s" % srv)


def t_send_lat_events():
    perftest("ib_send_lat", ["-e", "-s", "4096"], 1000, [4096])


def t_write_bw():
    perftest("ib_write_bw", ["-a"], 100, ALL_SIZES)


def t_write_lat():
    perftest("ib_write_lat", ["-a"], 100, ALL_SIZES)


def t_read_bw():
    perftest("ib_read_bw", ["-a"], 100, ALL_SIZES)


def t_read_lat():
    perftest("ib_read_lat", ["-a"], 100, ALL_SIZES)


def t_atomic_bw():
    # 8-byte FETCH_ADD by default; perftest's -a means nothing for atomics.
    perftest("ib_atomic_bw", [], 1000, [8])


def t_atomic_lat():
    perftest("ib_atomic_lat", [], 1000, [8])


def t_idle():
    for d in (pair.a, pair.b):
        expect_idle(BIN["droce_ctl"], d)


CASE_LIST = [
    ("send_bw_all", t_send_bw_all),
    ("send_bw_4qps", t_send_bw_4qps),
    ("send_bw_srq", t_send_bw_srq),
    ("send_bw_events", t_send_bw_events),
    ("send_lat_all", t_send_lat_all),
    ("send_lat_srq", t_send_lat_srq),
    ("send_lat_events", t_send_lat_events),
    ("write_bw", t_write_bw),
    ("write_lat", t_write_lat),
    ("read_bw", t_read_bw),
    ("read_lat", t_read_lat),
    ("atomic_bw", t_atomic_bw),
    ("atomic_lat", t_atomic_lat),
    ("idle", t_idle),
]


def run():
    global pair
    with MemifPair(BIN["droced"], tag="perftest") as p:
        pair = p
        run_cases(CASE_LIST, CASES)


if __name__ == "__main__":
    main([("perftest", run)], [])
