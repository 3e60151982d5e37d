# SPDX-License-Identifier: BSD-3-Clause
"""Debian's perftest (ib_send_bw, ib_send_lat), unmodified, through two droced joined by
net_memif, with LD_LIBRARY_PATH pointing at droce's libibverbs.so.1 (drivers/compat).

Each run's report is parsed on both sides: every message size asked for has its row, every
row shows the full iteration count and a non-zero result, and neither side printed an error
or exited non-zero. ib_send_lat refuses -q (its parser exits with an error for more than one
QP), so -q 4 is run with ib_send_bw only.

usage: test_perftest.py DROCED DROCE_CTL COMPAT_DIR [CASE...]
"""

import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from droce_harness import (MemifPair, check, expect_idle, log, main, parse_args,
                           run_cases, run_pair)

TCP_PORT = 19310
BIN, CASES = parse_args(["droced", "droce_ctl", "compat_dir"])
ENV = {"LD_LIBRARY_PATH": BIN["compat_dir"]}
# -a: every power of two from 2 bytes to 8 MiB.
ALL_SIZES = [1 << k for k in range(1, 24)]
ERROR_WORDS = re.compile(r"error|fail|couldn't|unable|not supported", re.I)
pair = None

# A result row: size, iterations, then the figures (3 for bw, 7 for lat). perftest's own
# arithmetic can make a figure non-finite, and the row is there all the same: its latency
# report (print_report_lat, 4.5-0.17 as upstream still) squares each deviation from the
# average into an int, so one sample kept more than 46,341 us off the average (a READ held
# up that long on a loaded machine) overflows it and t_stdev prints "-nan"; and a failed
# clock calibration ("Correlation coefficient r^2: ... < 0.9" on stderr, after a
# preemption between its TSC and gettimeofday reads) makes every time "inf". A test that
# read digits only took such a row for a missing size (a loaded run: "ib_read_lat client:
# sizes [..., 1048576, 4194304, 8388608], want [..., 1048576, 2097152, ...]"; the -nan
# reproduced by stopping the responder's droced for 60 ms at a time under ib_read_lat).
NUM = r"[-+]?(?:\d+(?:\.\d*)?|inf|nan)"
# perftest calibrates the TSC against gettimeofday before each report (get_cpu_mhz, a
# linear fit of 100 samples) and, when a preemption spoils the fit, says so on stderr; it
# would then exit ("Can't produce a report", a quiet 2-CPU run) unless given -F
# (--CPU-freq), with which it prints that report's figures as 0 or inf instead. Its stderr
# shares the file with its rows, so the message can land inside a row; it is taken out
# before the rows are read, and each one excuses one row without a usable figure.
CALIBRATION = re.compile(r"Correlation coefficient r\^2: \S+ < 0\.9\n?")
ROW = re.compile(r"^[ \t]*(\d+)[ \t]+(\d+)((?:[ \t]+%s)+)[ \t]*$" % NUM, re.M)


def rows(out, side, ncols):
    got = []
    for m in ROW.finditer(out):
        vals = m.group(3).split()
        if len(vals) == ncols:
            got.append((int(m.group(1)), int(m.group(2)), [float(v) for v in vals]))
            if not all(math.isfinite(float(v)) for v in vals):
                log("  %s: perftest's figures at %s B are not all numbers: %s" %
                    (side, m.group(1), " ".join(vals)))
    check(got, "%s: no result rows in:\n%s" % (side, out))
    return got


def perftest(prog, opts, iters, sizes, timeout=180, qps=1):
    """prog between the pair: server through A, client through B. Checks both reports:
    ib_send_bw reports the messages of all its QPs (qps * iters) on both sides."""
    common = [prog, "-F", "-d", "droce0", "-p", str(TCP_PORT), "-n", str(iters)] + list(opts)
    srv, cli = run_pair(common, common + ["127.0.0.1"], pair.a, pair.b, timeout, env=ENV,
                        start_delay=0.5)
    ncols = 3 if prog.endswith("_bw") else 7
    # The SEND tests report on both sides. In the WRITE and READ tests the server's side
    # is passive (its memory is the target) and only the client measures.
    one_sided = not prog.startswith("ib_send")
    for side, out in (("server", srv), ("client", cli)):
        uncalibrated = len(CALIBRATION.findall(out))
        out = CALIBRATION.sub("", out)
        bad = [l for l in out.splitlines() if ERROR_WORDS.search(l)]
        check(not bad, "%s %s reported: %s\n%s" % (prog, side, bad, out))
        if one_sided and side == "server":
            continue
        got = rows(out, "%s %s" % (prog, side), ncols)
        missing = [str(z) for z in sizes if z not in [g[0] for g in got]]
        check([g[0] for g in got] == sizes, "%s %s: sizes %s, want %s; lines of %s: %s\n%s" %
              (prog, side, [g[0] for g in got], sizes, ", ".join(missing),
               [ln for ln in out.splitlines() if ln.split()[:1] in [[z] for z in missing]],
               out))
        want = iters * qps if ncols == 3 else iters
        for size, n, vals in got:
            check(n == want, "%s %s: %d iterations at %d B, want %d" %
                  (prog, side, n, size, want))
            # bw: the average bandwidth; lat: t_min. Zero means nothing was measured.
            v = vals[1] if ncols == 3 else vals[0]
            if uncalibrated > 0 and not (0 < v < math.inf):
                uncalibrated -= 1
                log("  %s %s: no figure at %d B, perftest's clock calibration failed" %
                    (prog, side, size))
                continue
            check(v > 0, "%s %s: zero result at %d B: %s" % (prog, side, size, vals))
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
