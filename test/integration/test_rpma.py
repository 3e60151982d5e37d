# SPDX-License-Identifier: BSD-3-Clause
"""examples/rpma: programs on Debian's librpma 1.2.0, which links librdmacm.so.1 and
libibverbs.so.1, through two droced joined by net_memif. The only change is LD_LIBRARY_PATH
at droce's drivers/compat: librpma then finds its device through droce's rdma_cm
(rpma_utils_get_ibv_context: rdma_getaddrinfo, rdma_create_id, rdma_bind_addr or
rdma_resolve_addr) and connects through droced's CM, every byte crossing the memif link.
Servers run on A (10.99.0.1), clients on B (10.99.0.2); both name the server's address.

Each case checks exit status and the lines each side prints: the private data both ways,
every round trip, every (client, value) through the SRQ exactly once, the disconnections.
The write_file cases register a MAP_SHARED file mapping in place (issue 24): the client
writes into the server's file and flushes, the server checks the file by pread, and this
script reads the file again and recomputes the pattern, so the bytes must be on disk.

usage: test_rpma.py DROCED DROCE_CTL COMPAT_DIR RPMA_CONNECTION RPMA_PING_PONG
       RPMA_SRQ_SERVER RPMA_WRITE_FILE [CASE...]
"""

import os
import re
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from droce_harness import (App, MemifPair, TestFailure, check, expect_idle, log, main,
                           parse_args, run_cases, run_pair)

BIN, CASES = parse_args(["droced", "droce_ctl", "compat_dir", "rpma_connection",
                         "rpma_ping_pong", "rpma_srq_server", "rpma_write_file"])
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


# rpma_write_file's pattern and places (pattern() and write_place() there).
MASK32 = 0xffffffff


def wf_pattern(seed, off):
    x = ((off * 0x9e3779b1) & MASK32) ^ seed
    x ^= x >> 16
    x = (x * 0x7feb352d) & MASK32
    x ^= x >> 15
    x = (x * 0x846ca68b) & MASK32
    x ^= x >> 16
    return x & 0xff


def wf_places(size):
    return [(0, 4099), ((size // 3) | 1, 1), (size // 2 - 5000, 20000), (size - 777, 777)]


def wf_check_file(path, size, seed):
    """The file holds the pattern at the places and zeros elsewhere, read here anew."""
    want = bytearray(size)
    for off, n in wf_places(size):
        want[off:off + n] = bytes(wf_pattern(seed, o) for o in range(off, off + n))
    with open(path, "rb") as f:
        got = f.read()
    check(len(got) == size, "%s: %d bytes, want %d" % (path, len(got), size))
    if got != want:
        bad = next(i for i in range(size) if got[i] != want[i])
        raise TestFailure("%s: byte %d is 0x%02x, want 0x%02x (%d bytes differ)" %
                          (path, bad, got[bad], want[bad],
                           sum(1 for a, b in zip(got, want) if a != b)))


def daemon_since_ready(d):
    """What droced logged once ready (its start-up lines say nothing of a failure)."""
    text = d.log_text().splitlines()
    ready = [i for i, l in enumerate(text) if l.startswith("droced: ready")]
    after = text[ready[-1] + 1:] if ready else text
    return "--- droced %s since ready:\n%s" % (d.name, "\n".join(after) or "(nothing)")


def write_file(base, port, size, seed, flush=None):
    """rpma_write_file: the server on A with PATH in a new directory under base, the
    client on B; then the file is checked from here. The directory goes in any case."""
    addr = pair.ip_a
    d = tempfile.mkdtemp(prefix="droce-rpma-", dir=base)
    path = os.path.join(d, "region")
    srv_argv = [BIN["rpma_write_file"], "-T", "60", "--size", str(size)]
    if flush is not None:
        srv_argv += ["--flush", flush]
    flush = flush or "visibility"
    try:
        try:
            srv, cli = run_pair(srv_argv + ["server", addr, str(port), path],
                                [BIN["rpma_write_file"], "-T", "60", "--seed", str(seed),
                                 "client", addr, str(port)],
                                pair.a, pair.b, 90, env=ENV, start_delay=0.5)
        except TestFailure as e:
            # Why droced refused or broke the registration is in its log.
            raise TestFailure("%s\n%s\n%s" % (e, daemon_since_ready(pair.a),
                                                daemon_since_ready(pair.b)))
        expect_lines(srv, "server", [
            re.escape("file %s: %d bytes of zeros mapped MAP_SHARED" % (path, size)),
            re.escape("registered the mapping for remote writes and %s flushes" % flush),
            re.escape("listening on %s:%d" % (addr, port)),
            r"connection established, region offered \(descriptor of \d+ bytes%s\)" %
            (", peer configuration" if flush == "persistent" else ""),
            r"client done: its writes flushed, seed %d" % seed,
            r"connection closed by the client",
            r"written back and unmapped",
            r"pread: %d bytes ok \(4 places of the pattern, zeros elsewhere\)" % size,
            re.escape("reopened %s: %d bytes ok" % (path, size)),
            r"server: all checks passed"])
        wanted = [re.escape("connected to %s:%d" % (addr, port)),
                  r"remote region: %d bytes, %s flush%s" %
                  (size, flush, ", peer configuration applied" if flush == "persistent"
                   else "")]
        wanted += [r"wrote %d bytes at offset %d" % (n, off) for off, n in wf_places(size)]
        wanted += [r"flushed %d bytes \(%s\)" % (size, flush), r"sent the seed %d" % seed,
                   r"disconnected", r"client: all checks passed"]
        expect_lines(cli, "client", wanted)
        no_errors(srv, "server")
        no_errors(cli, "client")
        wf_check_file(path, size, seed)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def t_write_file():
    # The real disk: /tmp may be tmpfs elsewhere, /var/tmp is not meant to be.
    write_file("/var/tmp", PORT + 4, 1 << 20, 12345)


def t_write_file_shm():
    # tmpfs, and a size that is no multiple of the page: the last page is partly the file's.
    write_file("/dev/shm", PORT + 5, 3 * (1 << 20) + 12345, 777)


def t_write_file_persistent():
    write_file("/var/tmp", PORT + 6, 1 << 20, 4242, flush="persistent")


def hugetlbfs_dir():
    """(mount point, page size in bytes) of a writable hugetlbfs mount of the default huge
    page size, or (None, 0)."""
    with open("/proc/meminfo") as f:
        kb = [int(l.split()[1]) for l in f if l.startswith("Hugepagesize:")]
    with open("/proc/mounts") as f:
        for line in f:
            _, mnt, fstype, opts = line.split()[:4]
            ps = [o.split("=", 1)[1] for o in opts.split(",") if o.startswith("pagesize=")]
            if (fstype == "hugetlbfs" and kb and os.access(mnt, os.W_OK) and
                    (not ps or ps[0].upper() in ("%dK" % kb[0], "%dM" % (kb[0] // 1024)))):
                return mnt, kb[0] * 1024
    return None, 0


def t_write_file_hugetlbfs():
    mnt, page = hugetlbfs_dir()
    with open("/proc/meminfo") as f:
        free = [int(l.split()[1]) for l in f if l.startswith("HugePages_Free:")]
    if mnt is None or not free or free[0] < 2:
        log("  skipped: no writable hugetlbfs mount with 2 free huge pages")
        return
    write_file(mnt, PORT + 7, 2 * page, 99)


def t_idle():
    # Every QP, CQ, SRQ, MR and PD librpma made is gone from both daemons.
    for d in (pair.a, pair.b):
        expect_idle(BIN["droce_ctl"], d)


CASE_LIST = [
    ("connection", t_connection),
    ("connection_mismatch", t_connection_mismatch),
    ("ping_pong", t_ping_pong),
    ("srq", t_srq),
    ("write_file", t_write_file),
    ("write_file_shm", t_write_file_shm),
    ("write_file_persistent", t_write_file_persistent),
    ("write_file_hugetlbfs", t_write_file_hugetlbfs),
    ("idle", t_idle),
]


def run():
    global pair
    with MemifPair(BIN["droced"], tag="rpma") as p:
        pair = p
        run_cases(CASE_LIST, CASES)


if __name__ == "__main__":
    main([("rpma", run)], [])
