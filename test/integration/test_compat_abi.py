# SPDX-License-Identifier: BSD-3-Clause
"""droce's libibverbs.so.1 (drivers/compat) against rdma-core's, symbol by symbol:

- its soname is libibverbs.so.1 and it defines the same 13 version nodes;
- every symbol rdma-core exports as a default version (name@@NODE) is exported by ours
  under the same node, and ours exports nothing else (lib/shm, the page mover and the
  C runtime stay hidden) but droce's own node for its librdmacm (DROCE_PRIVATE_1,
  lib/verbs/droce_verbs.h), which holds exactly PRIVATE_SYMS;
- every IBVERBS symbol imported by Debian's ibverbs-utils, perftest and pyverbs binaries
  (all of them, not only those the other tests run) is defined by ours: they are linked
  BIND_NOW, so one missing symbol stops a program before main.

usage: test_compat_abi.py COMPAT_DIR
"""

import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from droce_harness import check, main

SYSTEM_LIB = "/usr/lib/x86_64-linux-gnu/libibverbs.so.1"
COMPAT_DIR = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None
OURS = os.path.join(COMPAT_DIR or ".", "libibverbs.so.1")
CONSUMERS = (["/usr/bin/ibv_devices", "/usr/bin/ibv_devinfo", "/usr/bin/ibv_asyncwatch"] +
             sorted(glob.glob("/usr/bin/ibv_*_pingpong")) + sorted(glob.glob("/usr/bin/ib_*_bw")) +
             sorted(glob.glob("/usr/bin/ib_*_lat")) +
             sorted(glob.glob("/usr/lib/python3/dist-packages/pyverbs/*.so")))


# droce's own export for its librdmacm, beyond rdma-core's API: its node and symbols.
PRIVATE_NODE = "DROCE_PRIVATE_1"
PRIVATE_SYMS = {"droce_create_qp_init"}


def readelf(*args):
    r = subprocess.run(["readelf", "-W"] + list(args), capture_output=True, text=True,
                       timeout=60)
    check(r.returncode == 0, "readelf %s: %s" % (" ".join(args), r.stderr))
    return r.stdout


def dyn_syms(path):
    """(defined {name: (node, default?)}, imported {(name, node)}) of a shared object."""
    defined, imported = {}, set()
    for line in readelf("--dyn-syms", path).splitlines():
        f = line.split()
        if len(f) < 8 or "@" not in f[7]:
            continue
        name, _, node = f[7].partition("@")
        default = node.startswith("@")
        node = node.lstrip("@").split(" ")[0]
        if f[6] == "UND":
            imported.add((name, node))
        elif f[4] != "LOCAL" and (default or name not in defined):
            # A name may be defined twice (an old ABI variant beside the default).
            defined[name] = (node, default)
    return defined, imported


def version_nodes(path):
    return re.findall(r"Name: ((?:IBVERBS_|DROCE_)\S+)", readelf("-V", path))


def t_soname():
    m = re.search(r"\(SONAME\)\s+Library soname: \[(.*)\]", readelf("-d", OURS))
    check(m is not None and m.group(1) == "libibverbs.so.1", "soname: %s" % (m and m.group(1)))


def t_version_nodes():
    ours, theirs = set(version_nodes(OURS)), set(version_nodes(SYSTEM_LIB))
    check(len(theirs) == 13 and ours == theirs | {PRIVATE_NODE},
          "version nodes: ours %s, rdma-core's %s and %s" %
          (sorted(ours), sorted(theirs), PRIVATE_NODE))


def t_default_symbols():
    ours, _ = dyn_syms(OURS)
    theirs, _ = dyn_syms(SYSTEM_LIB)
    want = {n: v for n, (v, d) in theirs.items() if d}
    got = {n: v for n, (v, d) in ours.items() if d and v != PRIVATE_NODE}
    private = {n for n, (v, d) in ours.items() if v == PRIVATE_NODE}
    check(private == PRIVATE_SYMS, "%s holds %s, want %s" %
          (PRIVATE_NODE, sorted(private), sorted(PRIVATE_SYMS)))
    missing = sorted("%s@@%s" % (n, v) for n, v in want.items() if got.get(n) != v)
    extra = sorted("%s@@%s" % (n, v) for n, v in got.items() if n not in want)
    check(len(want) > 140, "rdma-core's library exports only %d symbols?" % len(want))
    check(not missing, "missing or under another node: %s" % missing)
    check(not extra, "exported beyond rdma-core's list: %s" % extra)


def t_consumers_resolve():
    ours, _ = dyn_syms(OURS)
    unresolved = {}
    seen = 0
    for path in CONSUMERS:
        _, imported = dyn_syms(path)
        need = [(n, v) for n, v in imported if v.startswith("IBVERBS_")]
        seen += bool(need)
        bad = ["%s@%s" % (n, v) for n, v in need if ours.get(n, (None,))[0] != v]
        if bad:
            unresolved[path] = bad
    check(seen >= 10, "only %d consumers import libibverbs: are ibverbs-utils, perftest "
          "and python3-pyverbs installed (devtools/setup.sh)?" % seen)
    check(not unresolved, "imports our library does not define: %s" % unresolved)


if __name__ == "__main__":
    if COMPAT_DIR is None:
        sys.stderr.write("usage: test_compat_abi.py COMPAT_DIR\n")
        sys.exit(2)
    main([("soname", t_soname), ("version_nodes", t_version_nodes),
          ("default_symbols", t_default_symbols), ("consumers_resolve", t_consumers_resolve)],
         sys.argv[2:])
