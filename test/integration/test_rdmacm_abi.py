# SPDX-License-Identifier: BSD-3-Clause
"""droce's librdmacm.so.1 (drivers/compat, lib/rdmacm) against rdma-core's, symbol by symbol:

- its soname is librdmacm.so.1, it defines the same 4 version nodes, and it needs
  libibverbs.so.1 (droce's, beside it: one libdroce per process);
- every symbol rdma-core exports as a default version (name@@NODE) is exported by ours
  under the same node, and ours exports nothing else (lib/shm and the C runtime stay
  hidden);
- every RDMACM symbol imported by Debian's rdmacm-utils (rping, ucmatose, udaddy,
  rdma_server, rdma_client, cmtime, ...), perftest, librpma and libfabric (whose verbs
  provider is built into libfabric.so.1 on Debian) is defined by ours: one missing symbol
  stops a BIND_NOW program before main.

No droced: nothing here runs a program.

usage: test_rdmacm_abi.py COMPAT_DIR
"""

import glob
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from droce_harness import check, main
from test_compat_abi import dyn_syms, readelf

SYSTEM_LIB = "/usr/lib/x86_64-linux-gnu/librdmacm.so.1"
COMPAT_DIR = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None
OURS = os.path.join(COMPAT_DIR or ".", "librdmacm.so.1")
LIBDIR = "/usr/lib/x86_64-linux-gnu"
# The programs the brief names first; they must all be installed (devtools/setup.sh).
REQUIRED = ["/usr/bin/rping", "/usr/bin/ucmatose", "/usr/bin/udaddy", "/usr/bin/rdma_server",
            "/usr/bin/rdma_client", "/usr/bin/cmtime", "/usr/bin/ib_send_bw"]
OPTIONAL = (["/usr/bin/" + n for n in ("mckey", "rcopy", "rdma_xclient", "rdma_xserver",
                                       "riostream", "rstream", "udpong")] +
            sorted(glob.glob("/usr/bin/ib_*_bw")) + sorted(glob.glob("/usr/bin/ib_*_lat")) +
            sorted(glob.glob(LIBDIR + "/librpma.so.*")) +
            sorted(glob.glob(LIBDIR + "/libfabric.so.*")) +
            sorted(glob.glob(LIBDIR + "/libfabric/*.so")) +
            sorted(glob.glob(LIBDIR + "/ucx/libuct_ib*.so*")))


def version_nodes(path):
    return re.findall(r"Name: (RDMACM_\S+)", readelf("-V", path))


def t_soname():
    d = readelf("-d", OURS)
    m = re.search(r"\(SONAME\)\s+Library soname: \[(.*)\]", d)
    check(m is not None and m.group(1) == "librdmacm.so.1", "soname: %s" % (m and m.group(1)))
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.*)\]", d)
    check("libibverbs.so.1" in needed, "DT_NEEDED %s lacks libibverbs.so.1" % needed)


def t_version_nodes():
    ours, theirs = set(version_nodes(OURS)), set(version_nodes(SYSTEM_LIB))
    check(len(theirs) == 4 and ours == theirs, "version nodes: ours %s, rdma-core's %s" %
          (sorted(ours), sorted(theirs)))


def t_default_symbols():
    ours, _ = dyn_syms(OURS)
    theirs, _ = dyn_syms(SYSTEM_LIB)
    want = {n: v for n, (v, d) in theirs.items() if d}
    got = {n: v for n, (v, d) in ours.items() if d}
    missing = sorted("%s@@%s" % (n, v) for n, v in want.items() if got.get(n) != v)
    extra = sorted("%s@@%s" % (n, v) for n, v in got.items() if n not in want)
    check(len(want) >= 68, "rdma-core's library exports only %d symbols?" % len(want))
    check(not missing, "missing or under another node: %s" % missing)
    check(not extra, "exported beyond rdma-core's list: %s" % extra)


def t_consumers_resolve():
    ours, _ = dyn_syms(OURS)
    missing = [p for p in REQUIRED if not os.path.exists(p)]
    check(not missing, "not installed: %s (rdmacm-utils, perftest: devtools/setup.sh)" %
          missing)
    unresolved = {}
    seen = 0
    for path in REQUIRED + [p for p in OPTIONAL if os.path.exists(p)]:
        _, imported = dyn_syms(path)
        need = [(n, v) for n, v in imported if v.startswith("RDMACM_")]
        seen += bool(need)
        bad = ["%s@%s" % (n, v) for n, v in need if ours.get(n, (None,))[0] != v]
        if bad:
            unresolved[path] = bad
    check(seen >= len(REQUIRED), "only %d consumers import librdmacm" % seen)
    check(not unresolved, "imports our library does not define: %s" % unresolved)


if __name__ == "__main__":
    if COMPAT_DIR is None:
        sys.stderr.write("usage: test_rdmacm_abi.py COMPAT_DIR\n")
        sys.exit(2)
    main([("soname", t_soname), ("version_nodes", t_version_nodes),
          ("default_symbols", t_default_symbols), ("consumers_resolve", t_consumers_resolve)],
         sys.argv[2:])
