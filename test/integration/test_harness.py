# SPDX-License-Identifier: BSD-3-Clause
"""The harness's own promises, which every other test relies on without checking them.

child_output: a child's output read again and again while it writes (as the tests poll
for a line) is its output, whole and in order. It fails with a single open file shared by
the child and the reader: the reader's seek(0) moves the child's offset, the child's next
line lands at the start of the file over what it had printed (test_cm_wire's comm_est
once lost two lines so: doc/reliability.md).

usage: test_harness.py [CASE...]
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from droce_harness import ChildOutput, check, log, main  # noqa: E402

LINES = 3000
ROUNDS = 5
WRITER = ("import sys\n"
          "for i in range(%d):\n"
          "    print('line %%d' %% i, flush=True)\n" % LINES)


def child_output():
    want = "".join("line %d\n" % i for i in range(LINES))
    reads = 0
    for rnd in range(ROUNDS):
        out = ChildOutput()
        p = out.popen(["timeout", "60", "/usr/bin/python3", "-c", WRITER])
        try:
            # As fast as it goes: every read lands among the child's writes.
            while p.poll() is None:
                out.text()
                reads += 1
            check(p.wait() == 0, "the writer exited %s" % p.returncode)
            got = out.text()
            check(got == want, "round %d: %d of %d bytes as written; the first difference "
                  "at byte %d" % (rnd, sum(a == b for a, b in zip(got, want)), len(want),
                                  next((i for i, (a, b) in enumerate(zip(got, want)) if a != b),
                                       min(len(got), len(want)))))
        finally:
            out.close()
    log("  %d rounds of %d lines, read %d times while written: all whole and in order" %
        (ROUNDS, LINES, reads))


if __name__ == "__main__":
    main([("child_output", child_output)])
