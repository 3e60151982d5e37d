# SPDX-License-Identifier: BSD-3-Clause
"""rdma-core's own test suite (Debian ships it in /usr/share/doc/rdma-core/tests, partly
gzipped), run with Debian's pyverbs against droce through LD_LIBRARY_PATH: one droced,
whose port carries traffic between QPs of the same process and GID (the engine loops
packets to its own MAC back to itself).

Every test must pass, or skip for a feature droce does not have: each skip's reason must
match one of SKIP_REASONS below (what rdma-core prints when a verb returned EOPNOTSUPP,
or, for dma-buf, that the machine has no GPU to export one). Any FAIL or ERROR, an
unexpected skip reason, or a module that ran fewer tests than it has fails this test.
The counts are printed, per module and in total.

usage: test_rdma_core.py DROCED DROCE_CTL COMPAT_DIR [MODULE...]
"""

import glob
import gzip
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from droce_harness import (App, Daemon, TestFailure, Workdir, check, expect_idle, log, main,
                           parse_args)

RDMA_CORE_TESTS = "/usr/share/doc/rdma-core/tests"
MODULES = ["device", "pd", "cq", "cq_events", "addr", "qp", "qpex", "cqex", "mr",
           "relaxed_ordering", "fork", "atomic"]
# What a skip may say. rdma-core turns EOPNOTSUPP from a verb into these messages; the
# dma-buf tests skip before any verb when no GPU render node can export a buffer.
SKIP_REASONS = [
    r"^Device memory is not supported$",
    r"^Create Raw Packet QP (with|without) (extended )?attrs is not supported$",
    r"^Allocating dmabuf is not supported by /dev/dri/\S+$",
    r"^Device /dev/dri/renderD\d+ is not present$",
    r"^Lack of permission to access /dev/dri/renderD\d+$",
    r"^Reg dma-buf MR is not supported by the RDMA driver$",
]
# unittest -v: "name ... result", where what the test prints may come between the two.
RESULT = re.compile(r" \.\.\. (?:[^\n]*\n)*?(ok|skipped '(.*)'|FAIL|ERROR|expected failure|"
                    r"unexpected success)$", re.M)

BIN, CASES = parse_args(["droced", "droce_ctl", "compat_dir"])


def copy_tests(dst):
    """The suite as Debian ships it, gunzipped, in dst/tests."""
    check(os.path.isdir(RDMA_CORE_TESTS), "%s missing: install rdma-core (devtools/setup.sh)"
          % RDMA_CORE_TESTS)
    tests = os.path.join(dst, "tests")
    shutil.copytree(RDMA_CORE_TESTS, tests)
    for gz in glob.glob(os.path.join(tests, "*.gz")):
        with gzip.open(gz, "rb") as fi, open(gz[:-3], "wb") as fo:
            shutil.copyfileobj(fi, fo)
        os.unlink(gz)
    return tests


def run_module(d, tests, module, wrap=(), skip_reasons=SKIP_REASONS):
    """Runs tests.test_<module> (under the command wrap, if any: test_rdma_core_cm.py's
    namespaces); returns (passed, [skip reasons])."""
    app = App(list(wrap) + ["/usr/bin/python3", os.path.join(tests, "run_tests.py"), "--dev",
                            "droce0", "-v", "tests.test_" + module], d, 300, name=module,
              env={"LD_LIBRARY_PATH": BIN["compat_dir"], "PYTHONDONTWRITEBYTECODE": "1"})
    rc = app.wait(330)
    out = app.output
    results = RESULT.findall(out)
    m = re.search(r"^Ran (\d+) tests? in", out, re.M)
    check(m is not None, "%s: no 'Ran N tests' line (exit %s):\n%s" % (module, rc, out[-4000:]))
    check(int(m.group(1)) == len(results) and results,
          "%s: ran %s tests but %d results parsed:\n%s" % (module, m.group(1), len(results),
                                                          out[-4000:]))
    bad = [r for r in results if r[0] not in ("ok", "skipped '%s'" % r[1])]
    check(rc == 0 and not bad, "%s: exit %s, %d failed or errored:\n%s" %
          (module, rc, len(bad), out[-6000:]))
    skips = [r[1] for r in results if r[0].startswith("skipped")]
    odd = [s for s in skips if not any(re.search(p, s) for p in skip_reasons)]
    check(not odd, "%s: skipped for reasons that are not a missing feature: %s" % (module, odd))
    return sum(1 for r in results if r[0] == "ok"), skips


def run():
    work = Workdir("rdma-core")
    d = Daemon(BIN["droced"], work, "r", "net_ring0", "10.99.3.1/24")
    try:
        tests = copy_tests(work.path)
        d.start()
        total_pass = total_skip = 0
        failed = []
        for module in CASES or MODULES:
            try:
                passed, skips = run_module(d, tests, module)
            except TestFailure as e:
                failed.append(module)
                log("FAIL %s: %s" % (module, e))
                continue
            total_pass += passed
            total_skip += len(skips)
            log("ok   test_%s: %d passed, %d skipped" % (module, passed, len(skips)))
            for reason in sorted(set(skips)):
                log("       skip x%d: %s" % (skips.count(reason), reason))
        # devtools/run-tests.sh shows "summary: " lines under the test's verdict.
        log("summary: rdma-core's own tests (%d modules): %d passed, %d skipped (features "
            "droce lacks: EOPNOTSUPP), %d modules with failures or errors" %
            (len(CASES or MODULES), total_pass, total_skip, len(failed)))
        check(not failed, "modules failed: %s" % " ".join(failed))
        check(d.proc.poll() is None, "droced died:\n" + d.log_text())
        expect_idle(BIN["droce_ctl"], d)
        d.stop()
    finally:
        if d.proc is not None:
            d.stop(expect_clean=False)
        work.close()


if __name__ == "__main__":
    main([("rdma_core", run)], [])
