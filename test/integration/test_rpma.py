# SPDX-License-Identifier: BSD-3-Clause
"""examples/rpma: programs on Debian's librpma 1.2.0, which links librdmacm.so.1 and
libibverbs.so.1, through two droced joined by net_memif. The only change is LD_LIBRARY_PATH
at droce's drivers/compat: librpma then finds its device through droce's rdma_cm
(rpma_utils_get_ibv_context: rdma_getaddrinfo, rdma_create_id, rdma_bind_addr or
rdma_resolve_addr) and connects through droced's CM, every byte crossing the memif link.
Servers run on A (10.99.0.1), clients on B (10.99.0.2); both name the server's address.

Each case checks exit status and the lines each side prints: the private data both ways,
every round trip, every (client, value) through the SRQ exactly once, the disconnections.

usage: test_rpma.py DROCED DROCE_CTL COMPAT_DIR RPMA_CONNECTION RPMA_PING_PONG
       RPMA_SRQ_SERVER [CASE...]
"""

import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from droce_harness import (App, MemifPair, check, expect_idle, main, parse_args,
                           run_cases, run_pair)

BIN, CASES = parse_args(["droced", "droce_ctl", "compat_dir", "rpma_connection",
                         "rpma_ping_pong", "rpma_srq_server"])
ENV = {"LD_LIBRARY_PATH": BIN["compat_dir"]}
# rdma_cm ports live in each droced, so these cannot collide with other tests' ports.
PORT = 7480
pair = None


def lines(out):
    return [l.strip() for l in out.splitlines()]


def expect_lines(out, side, wanted):
    """Every line in wanted (regular expressions, whole lines) appears, in that order."""
    got = lines(out)
    pos = 0
    for w in wanted:
        while pos < len(got) and re.fullmatch(w, got[pos]) is None:
            pos += 1
        check(pos < len(got), "%s: no line /%s/ (in order) in:\n%s" % (side, w, out))
        pos += 1


def no_errors(out, side):
    # The programs print errors as "PROG: ..." on stderr; librpma its own as *ERROR*.
    bad = [l for l in lines(out) if re.search(r"\*ERROR\*|\*WARNING\*|timeout|: rpma_|want ",
                                              l)]
    check(not bad, "%s reported: %s\n%s" % (side, bad, out))


def t_connection():
    addr = pair.ip_a
    srv, cli = run_pair([BIN["rpma_connection"], "server", addr, str(PORT)],
                        [BIN["rpma_connection"], "client", addr, str(PORT)],
                        pair.a, pair.b, 60, env=ENV, start_delay=0.5)
    expect_lines(srv, "server", [
        re.escape("listening on %s:%d" % (addr, PORT)),
        r"connection request received",
        r"client private data 'rpma_connection client' ok",
        r"connection accepted with private data 'rpma_connection server'",
        r"connection established",
        r"connection closed by the client",
        r"server: all checks passed"])
    expect_lines(cli, "client", [
        re.escape("connected to %s:%d with private data 'rpma_connection client'" %
                  (addr, PORT)),
        r"server private data 'rpma_connection server' ok",
        r"disconnected",
        r"client: all checks passed"])
    no_errors(srv, "server")
    no_errors(cli, "client")


def t_connection_mismatch():
    # A client string the server does not expect: the server rejects the request and
    # fails; the client, refused until its deadline, fails too.
    addr = pair.ip_a
    srv = App([BIN["rpma_connection"], "-T", "10", "server", addr, str(PORT + 1)], pair.a,
              30, "server", env=ENV)
    time.sleep(0.5)
    cli = App([BIN["rpma_connection"], "-T", "3", "--send", "somebody else", "client", addr,
               str(PORT + 1)], pair.b, 30, "client", env=ENV)
    rc_c = cli.wait()
    rc_s = srv.wait()
    check(rc_s == 1 and rc_c == 1, "exit %s / %s, want 1 / 1:\n%s\n%s" %
          (rc_s, rc_c, srv.output, cli.output))
    check("connection rejected" in srv.output and
          "want 'rpma_connection client'" in srv.output,
          "server: no rejection line:\n%s" % srv.output)
    check(re.search(r"connecting to .*: (REJECTED|RPMA_CONN_REJECTED)|rejected", cli.output,
                    re.I) is not None or "timeout" in cli.output,
          "client: no rejection:\n%s" % cli.output)


def ping_pong(iters):
    addr = pair.ip_a
    port = PORT + 2
    srv, cli = run_pair([BIN["rpma_ping_pong"], "-T", "120", "server", addr, str(port)],
                        [BIN["rpma_ping_pong"], "-T", "120", "-n", str(iters), "client", addr,
                         str(port)],
                        pair.a, pair.b, 150, env=ENV, start_delay=0.5)
    expect_lines(srv, "server", [
        re.escape("listening on %s:%d" % (addr, port)),
        r"client 0 will send %d messages" % iters,
        r"connection established",
        r"%d round trips ok" % iters,
        r"connection closed by the client"])
    expect_lines(cli, "client", [
        re.escape("connected to %s:%d as client 0" % (addr, port)),
        r"%d round trips ok" % iters,
        r"disconnected"])
    no_errors(srv, "server")
    no_errors(cli, "client")


def t_ping_pong():
    ping_pong(1000)


def t_srq():
    clients, iters = 4, 100
    addr = pair.ip_a
    port = PORT + 3
    srv = App([BIN["rpma_srq_server"], "-T", "120", "-c", str(clients), "-n", str(iters),
               addr, str(port)], pair.a, 150, "srq-server", env=ENV)
    time.sleep(0.5)
    clis = [App([BIN["rpma_ping_pong"], "-T", "120", "--id", str(i), "-n", str(iters),
                 "client", addr, str(port)], pair.b, 150, "client%d" % i, env=ENV)
            for i in range(clients)]
    rcs = [c.wait() for c in clis]
    if any(rcs):
        srv.stop()
    rc_s = srv.wait()
    outs = "\n".join("--- client %d (exit %s):\n%s" % (i, rcs[i], c.output)
                     for i, c in enumerate(clis))
    check(rc_s == 0 and not any(rcs), "server exit %s, clients %s\n--- server:\n%s\n%s" %
          (rc_s, rcs, srv.output, outs))
    out = srv.output
    expect_lines(out, "server", [
        r"shared RQ: %d receives, its own receive CQ" % (2 * clients),
        re.escape("listening on %s:%d for %d clients" % (addr, port, clients))])
    for i in range(clients):
        check(re.search(r"^client %d connected \(qp 0x[0-9a-f]+, \d of %d\)$" % (i, clients),
                        out, re.M) is not None, "server: client %d never connected:\n%s" %
              (i, out))
        check(re.search(r"^client %d: %d messages ok$" % (i, iters), out, re.M) is not None,
              "server: client %d incomplete:\n%s" % (i, out))
        expect_lines(clis[i].output, "client %d" % i, [
            re.escape("connected to %s:%d as client %d" % (addr, port, i)),
            r"%d round trips ok" % iters,
            r"disconnected"])
        no_errors(clis[i].output, "client %d" % i)
    expect_lines(out, "server", [r"all %d clients disconnected" % clients,
                                 r"%d clients x %d messages ok" % (clients, iters)])
    no_errors(out, "server")


def t_idle():
    # Every QP, CQ, SRQ, MR and PD librpma made is gone from both daemons.
    for d in (pair.a, pair.b):
        expect_idle(BIN["droce_ctl"], d)


CASE_LIST = [
    ("connection", t_connection),
    ("connection_mismatch", t_connection_mismatch),
    ("ping_pong", t_ping_pong),
    ("srq", t_srq),
    ("idle", t_idle),
]


def run():
    global pair
    with MemifPair(BIN["droced"], tag="rpma") as p:
        pair = p
        run_cases(CASE_LIST, CASES)


if __name__ == "__main__":
    main([("rpma", run)], [])
