# SPDX-License-Identifier: BSD-3-Clause
"""rdma-core's own rdma_cm tests (tests/test_rdmacm.py, Debian's copy in
/usr/share/doc/rdma-core/tests), run with Debian's pyverbs over droce's libibverbs.so.1 and
librdmacm.so.1 (LD_LIBRARY_PATH) and droced's CM: one droced; each test forks a passive and
an active process, both on droced's port, which connect to droced's own address (droced
loops CM MADs and packets to its own GID back to itself).

rdma-core's RDMACMBaseTest takes the device's IP address from the kernel: the first name
in /sys/class/infiniband/<dev>/device/net/, then `ip -j addr show <name>`. droce's address
lives only in droced, so the suite runs in a network namespace with a veth interface
carrying droced's address, and in a mount namespace where a tmpfs on /sys/class holds
only infiniband/droce0/device/net/<that interface> (unshare(1); nothing on the host
changes). Without these every test would skip ("doesn't have net interface").

Every test must pass: none may skip (SKIP_REASONS is empty; the three multicast tests,
which skipped while droce had no multicast, max_mcast_grp 0, now join through droce's
rdma_join_multicast(_ex), send to the group and leave). Any FAIL or ERROR, any skip, or
fewer results than tests ran (or than the module has) fails this test. The counts are
printed.

usage: test_rdma_core_cm.py DROCED DROCE_CTL COMPAT_DIR [MODULE...]
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from droce_harness import Daemon, TestFailure, Workdir, check, expect_idle, log, main, parse_args
# Its copy of the suite and its run of one module (BIN: the same arguments as here).
from test_rdma_core import copy_tests, run_module

MODULES = ["rdmacm"]
SKIP_REASONS = []
IP = "10.99.3.1"
NETDEV = "droce-cm0"
# Runs "$@" in new network and mount namespaces that give droce0 a net interface with
# droced's address, where rdma-core's tests look for it. (A veth, not a dummy: the dummy
# module may be missing; test_veth.py needs veth anyway. Its peer stays down: the
# kernel never carries the traffic, droced does.)
NAMESPACES = """set -e
ip link set lo up
ip link add %(dev)s type veth peer name %(dev)sp
ip addr add %(ip)s/24 dev %(dev)s
ip link set %(dev)s up
mount -t tmpfs droce-sysclass /sys/class
mkdir -p /sys/class/infiniband/droce0/device/net/%(dev)s
exec "$@"
""" % {"dev": NETDEV, "ip": IP}

WRAP = ["unshare", "--net", "--mount", "--propagation", "private", "sh", "-c", NAMESPACES,
        "sh"]

BIN, CASES = parse_args(["droced", "droce_ctl", "compat_dir"])


def run():
    work = Workdir("rdma-core-cm")
    d = Daemon(BIN["droced"], work, "r", "net_ring0", IP + "/24")
    try:
        tests = copy_tests(work.path)
        d.start()
        total_pass = total_skip = 0
        failed = []
        for module in CASES or MODULES:
            try:
                passed, skips = run_module(d, tests, module, WRAP, SKIP_REASONS)
            except TestFailure as e:
                failed.append(module)
                log("FAIL %s: %s" % (module, e))
                continue
            with open(os.path.join(tests, "test_%s.py" % module)) as f:
                cases = f.read().count("    def test_")
            if passed + len(skips) != cases:
                failed.append(module)
                log("FAIL %s: %d results, the module has %d tests" %
                    (module, passed + len(skips), cases))
                continue
            total_pass += passed
            total_skip += len(skips)
            log("ok   test_%s: %d passed, %d skipped" % (module, passed, len(skips)))
            for reason in sorted(set(skips)):
                log("       skip x%d: %s" % (skips.count(reason), reason))
        log("summary: rdma-core's rdma_cm tests (%d modules): %d passed, %d skipped, "
            "%d modules with failures or errors" %
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
    main([("rdma_core_cm", run)], [])
