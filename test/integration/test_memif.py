# SPDX-License-Identifier: BSD-3-Clause
"""Two droced joined by net_memif (MemifPair): the examples and verbs_stream run between
them, server through A and client through B, with payload checks: RC and UC, message sizes
1 B .. 1 MiB, path MTUs 256 .. 4096, with an SRQ, with completion events; UD with the GRH
check; the SRQ server with three clients; verbs_stream both ways. Afterwards both daemons
hold nothing (droce-ctl status) and stop cleanly (exit 0, no file left behind).

usage: test_memif.py DROCED DROCE_CTL RC_PINGPONG UD_PINGPONG SRQ_SERVER VERBS_STREAM [CASE...]
"""

import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from droce_harness import (App, MemifPair, TestFailure, check, expect_idle, log, main,
                           parse_args, run_pair)

# TCP ports of the examples' exchanges: distinct from the other integration tests, which
# meson may run at the same time.
TCP_PORT = 19110
MIB = 1 << 20

BIN, CASES = parse_args(["droced", "droce_ctl", "rc_pingpong", "ud_pingpong", "srq_server",
                         "verbs_stream"])
pair = None


def result_line(out, iters, size):
    m = re.search(r"iters=(\d+) size=(\d+) bytes=(\d+)", out)
    check(m is not None, "no result line in:\n%s" % out)
    check((int(m.group(1)), int(m.group(2)), int(m.group(3))) == (iters, size, 2 * iters * size),
          "result line %s, want iters=%d size=%d" % (m.group(0), iters, size))


def pingpong(prog, size, iters, opts=()):
    common = [prog, "-c", "-T", "20", "-p", str(TCP_PORT), "-s", str(size),
              "-n", str(iters)] + list(opts)
    srv, cli = run_pair(common, common + ["127.0.0.1"], pair.a, pair.b)
    result_line(srv, iters, size)
    result_line(cli, iters, size)
    return srv, cli


# (transport, size, iterations, path MTU, extra options)
RC_RUNS = [
    ("rc", 1, 200, 4096, []),
    ("rc", 4095, 100, 1024, []),
    ("rc", 4096, 100, 4096, []),
    ("rc", 4096, 50, 256, []),
    ("rc", 65536, 20, 256, []),
    ("rc", 65536, 20, 4096, []),
    ("rc", MIB, 2, 256, []),
    ("rc", MIB, 3, 1024, []),
    ("rc", MIB, 3, 4096, []),
    ("uc", 1, 100, 1024, []),
    ("uc", 4096, 100, 256, []),
    ("uc", 65536, 20, 4096, []),
    ("uc", MIB, 2, 1024, []),
    ("rc", 4096, 100, 1024, ["--srq"]),
    ("rc", MIB, 2, 4096, ["--srq"]),
    ("uc", 65536, 10, 256, ["--srq"]),
    ("rc", 4096, 100, 4096, ["-e"]),
    ("rc", 65536, 10, 1024, ["-e", "--srq"]),
    ("uc", 4096, 50, 4096, ["-e"]),
]


def case_rc_uc():
    for t, size, iters, mtu, opts in RC_RUNS:
        pingpong(BIN["rc_pingpong"], size, iters, ["-t", t, "-m", str(mtu)] + opts)
        log("  %s size %d x %d mtu %d %s: ok" % (t, size, iters, mtu, " ".join(opts)))


def case_ud():
    for size, iters, opts in ((1, 100, []), (1024, 100, []), (4096, 50, ["-e"])):
        srv, cli = pingpong(BIN["ud_pingpong"], size, iters, opts)
        # Each side prints the source GID it read from the GRH area once; the program
        # itself fails unless it is the peer's GID. Check we saw it too.
        for out, peer in ((srv, "10.99.0.2"), (cli, "10.99.0.1")):
            m = re.search(r"GRH of the first datagram: (\S+) header, source GID (\S+)", out)
            check(m is not None and m.groups() == ("IPv4", "::ffff:" + peer),
                  "no IPv4 GRH from %s:\n%s" % (peer, out))
        log("  ud size %d x %d %s: ok" % (size, iters, " ".join(opts)))


def case_srq_server():
    prog = BIN["srq_server"]
    common = [prog, "-T", "20", "-p", str(TCP_PORT + 1), "-s", "8192"]
    srv = App(common + ["-q", "3"], pair.a, 120, "srq-server")
    time.sleep(0.3)
    clis = [App(common + ["-n", "300", "--client", "127.0.0.1"], pair.b, 120, "client%d" % i)
            for i in range(3)]
    rcs = [c.wait(150) for c in clis]
    rc = srv.wait(150)
    outs = "\n".join("--- %s (exit %s):\n%s" % (a.name, a.proc.returncode, a.output)
                     for a in [srv] + clis)
    check(rc == 0 and rcs == [0, 0, 0], "srq server/clients failed:\n" + outs)
    for c in clis:
        result_line(c.output, 300, 8192)
    m = re.search(r"srq_limit_events=(\d+) refills=(\d+) refills_without_event=(\d+)",
                  srv.output)
    check(m is not None, "no srq_limit_events line:\n" + srv.output)
    # 900 messages through a 64-deep SRQ with limit 16: the limit event must drive refills.
    check(int(m.group(1)) > 0, "no SRQ limit event: " + m.group(0))
    log("  " + m.group(0))


def case_stream():
    prog = BIN["verbs_stream"]
    common = [prog, "-t", "rc", "-T", "20", "-p", str(TCP_PORT + 2), "-s", "4096",
              "-n", "2000", "-m", "1024"]
    # Server on A, client on B, then the other way round; each run streams both
    # directions at once.
    for s, c in ((pair.a, pair.b), (pair.b, pair.a)):
        run_pair(common, common + ["127.0.0.1"], s, c)
        log("  stream %s <-> %s: ok" % (s.name, c.name))


def case_idle():
    for d in (pair.a, pair.b):
        expect_idle(BIN["droce_ctl"], d)


def run():
    global pair
    with MemifPair(BIN["droced"], "memif") as p:
        pair = p
        main_cases = [("rc_uc", case_rc_uc), ("ud", case_ud), ("srq_server", case_srq_server),
                      ("stream", case_stream), ("idle", case_idle)]
        failed = []
        for name, fn in main_cases:
            if CASES and name not in CASES:
                continue
            try:
                fn()
                log("ok   %s" % name)
            except TestFailure as e:
                failed.append(name)
                log("FAIL %s: %s" % (name, e))
        if failed:
            raise TestFailure("failed: " + " ".join(failed))
    # Leaving the with block stopped both daemons: exit 0 on SIGTERM, nothing left behind.


if __name__ == "__main__":
    main([("memif", run)], [])
