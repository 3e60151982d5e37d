# SPDX-License-Identifier: BSD-3-Clause
"""Reading Debian's perftest (4.5-0.17) reports: the result rows, and what perftest's own
clock calibration does to them. Run perftest with -F (every caller here does).

A result row: size, iterations, then the figures (3 for bw, 7 for lat). perftest's own
arithmetic can make a figure non-finite, and the row is there all the same: its latency
report (print_report_lat, as upstream still) squares each deviation from the average into
an int, so one sample kept more than 46,341 us off the average (a READ held up that long
on a loaded machine) overflows it and t_stdev prints "-nan"; and a failed clock
calibration makes every time "inf". A reader of digits only took such a row for a missing
size (a loaded run: "ib_read_lat client: sizes [..., 1048576, 4194304, 8388608], want
[..., 1048576, 2097152, ...]"; the -nan reproduced by stopping the responder's droced for
60 ms at a time under ib_read_lat).

perftest calibrates the TSC against gettimeofday before each report (get_cpu_mhz, a linear
fit of 100 samples) and, when a preemption spoils the fit, says so on stderr; a bw test
then exits ("Can't produce a report", seen in a quiet 2-CPU run) unless given -F
(--CPU-freq), with which it prints that report's figures as 0 or inf instead. Its stderr
shares the file with its rows, so the message can land inside a row: it is taken out
before the rows are read, and each one excuses one row without a usable figure.
"""

import math
import re

from droce_harness import check, log

NUM = r"[-+]?(?:\d+(?:\.\d*)?|inf|nan)"
CALIBRATION = re.compile(r"Correlation coefficient r\^2: \S+ < 0\.9\n?")
ROW = re.compile(r"^[ \t]*(\d+)[ \t]+(\d+)((?:[ \t]+%s)+)[ \t]*$" % NUM, re.M)


def ncols(prog):
    """The figures in one of prog's rows."""
    return 3 if prog.endswith("_bw") else 7


def clean(out):
    """(out without perftest's calibration messages, how many there were)."""
    return CALIBRATION.sub("", out), len(CALIBRATION.findall(out))


def rows(out, side, cols):
    """The result rows of out (cleaned), [(bytes, iterations, [figures])]; at least one."""
    got = []
    for m in ROW.finditer(out):
        vals = m.group(3).split()
        if len(vals) == cols:
            got.append((int(m.group(1)), int(m.group(2)), [float(v) for v in vals]))
            if not all(math.isfinite(float(v)) for v in vals):
                log("  %s: perftest's figures at %s B are not all numbers: %s" %
                    (side, m.group(1), " ".join(vals)))
    check(got, "%s: no result rows in:\n%s" % (side, out))
    return got


def check_report(prog, side, out, sizes, iters):
    """prog's report on side (its raw output) has one row per size, in order, each of
    iters iterations and a measured figure (bw: the message rate; lat: t_min), but where a
    failed calibration excuses the figure. Returns the rows.

    Not the bw rows' bandwidth: perftest prints MB/s to two decimals, so 4-byte messages
    at under 1,250 a second read 0.00 (a loaded run: "ib_send_bw server: zero result at
    4 B: [0.0, 0.0, 0.000993]"); the message rate has six decimals of Mpps."""
    out, uncalibrated = clean(out)
    got = rows(out, "%s %s" % (prog, side), ncols(prog))
    missing = [str(z) for z in sizes if z not in [g[0] for g in got]]
    check([g[0] for g in got] == sizes, "%s %s: sizes %s, want %s; lines of %s: %s\n%s" %
          (prog, side, [g[0] for g in got], sizes, ", ".join(missing),
           [ln for ln in out.splitlines() if ln.split()[:1] in [[z] for z in missing]], out))
    for size, n, vals in got:
        check(n == iters, "%s %s: %d iterations at %d B, want %d" % (prog, side, n, size, iters))
        v = vals[2] if ncols(prog) == 3 else vals[0]
        if uncalibrated > 0 and not 0 < v < math.inf:
            uncalibrated -= 1
            log("  %s %s: no figure at %d B, perftest's clock calibration failed" %
                (prog, side, size))
            continue
        check(v > 0, "%s %s: zero result at %d B: %s" % (prog, side, size, vals))
    return got
