# SPDX-License-Identifier: BSD-3-Clause
"""Debian's libfabric 1.17 (libfabric-bin: fi_info, fi_pingpong), unmodified, through two
droced joined by net_memif, with LD_LIBRARY_PATH pointing at droce's libibverbs.so.1 and
librdmacm.so.1 (drivers/compat). libfabric's verbs provider is used three ways:

- verbs;ofi_rxd, FI_EP_RDM: libfabric's reliable layer over the verbs DGRAM (UD)
  endpoint. Addresses are GID/QPN/QKey, exchanged by fi_pingpong's out-of-band TCP socket
  (to 127.0.0.1), so no kernel IP address is needed.
- verbs, FI_EP_DGRAM: UD directly; the EQ it opens needs rdma_create_event_channel.
- verbs, FI_EP_MSG: RC connected through rdma_cm with IP addresses. The provider lists a
  device for MSG endpoints only if an address of a kernel interface (getifaddrs) binds
  to it with rdma_bind_addr; droced's addresses live in droced alone. So the test makes a
  network namespace with an interface (dummy, or a veth pair with both ends inside when
  the kernel has no dummy driver) carrying 10.99.0.1/24 and 10.99.0.2/24, and runs both
  sides in it with FI_VERBS_IFACE=<that interface>: on A only 10.99.0.1 binds (droced A
  owns it), on B only 10.99.0.2. fi_pingpong has no source address option; a server's
  fi_getinfo without one binds "localhost" (prov/verbs vrb_get_rdmacm_rai), which would
  listen on 127.0.0.1 (droced binds loopback to its first port, as Linux's loopback
  binding) and the client, resolving 127.0.0.1 through droced B, would reach B itself. The
  namespace's /etc/netns/<ns>/hosts (bind-mounted by `ip netns exec`) therefore names
  10.99.0.1 localhost: the server listens on A's address, and its name, sent to the client
  over the out-of-band socket, is what the client connects to through droced B.
  DROCE_SOCKET is a path, which reaches droced from any network namespace.

Each ping-pong runs with -c (every received byte checked) and -I 1000; both sides' result
rows are parsed (size, 1000 sent, 1000 acked), both exit 0 and neither printed an error.
The namespace and its hosts file go on exit, even on failure.

usage: test_libfabric.py DROCED DROCE_CTL COMPAT_DIR [CASE...]
"""

import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from droce_harness import (App, MemifPair, TestFailure, check, expect_idle, free_tcp_port,
                           log, main, parse_args, run_cases, run_pair)

BIN, CASES = parse_args(["droced", "droce_ctl", "compat_dir"])
ENV = {"LD_LIBRARY_PATH": BIN["compat_dir"]}
# fi_pingpong's out-of-band TCP port (kernel TCP, so unique among the tests).
ITERS = 1000
NS = "droce-lf-%d" % os.getpid()
IFACE = ("lf%d" % os.getpid())[:13]
ERROR_WORDS = re.compile(r"error|fail|warn|unable|couldn't|timeout expired|abort", re.I)
# fi_pingpong's result row: bytes, #sent, #ack (with '='), total, time, MB/sec,
# usec/xfer, Mxfers/sec.
ROW = re.compile(r"^(\S+)\s+(\S+)\s+=(\S+)\s+(\S+)\s+([\d.]+)s\s+([\d.]+)\s+([\d.]+)\s+"
                 r"([\d.]+)\s*$", re.M)
pair = None
ns_iface = None


def size_str(n):
    """fi_pingpong's size_str(): 1, 4k, 64k, 1m."""
    for unit, mult in (("g", 1 << 30), ("m", 1 << 20), ("k", 1 << 10)):
        if n >= mult and n % mult == 0:
            return "%d%s" % (n // mult, unit)
    return str(n)


def cnt_str(n):
    """fi_pingpong's cnt_str(): 1000 is 1k, 1000000 1m."""
    for unit, div in (("b", 10 ** 9), ("m", 10 ** 6), ("k", 10 ** 3)):
        if n >= div:
            return "%d%s" % (n // div, unit)
    return str(n)


def no_errors(out, what, ignore=None):
    bad = [l for l in out.splitlines() if ERROR_WORDS.search(l) and
           not (ignore and ignore.search(l))]
    check(not bad, "%s reported: %s\n%s" % (what, bad, out))


# ---- fi_info ----

def fi_info_blocks(out):
    """fi_info's default output: one block per fi_info ("provider: ..." then indented
    fabric, domain, version, type, protocol). Returns a list of dicts."""
    blocks = []
    for line in out.splitlines():
        m = re.match(r"^(\s*)(\w+):\s*(.*)$", line)
        if not m:
            continue
        if m.group(2) == "provider" and not m.group(1):
            blocks.append({"provider": m.group(3)})
        elif blocks and m.group(1):
            blocks[-1][m.group(2)] = m.group(3)
    return blocks


def t_fi_info():
    app = App(["fi_info", "-p", "verbs"], pair.a, timeout=60, env=ENV)
    rc = app.wait()
    out = app.output
    check(rc == 0, "fi_info -p verbs exit %d:\n%s" % (rc, out))
    no_errors(out, "fi_info")
    blocks = fi_info_blocks(out)
    got = {(b["provider"], b.get("domain"), b.get("type"), b.get("protocol")) for b in blocks}
    for want in (("verbs", "droce0", "FI_EP_MSG", "FI_PROTO_RDMA_CM_IB_RC"),
                 ("verbs", "droce0-dgram", "FI_EP_DGRAM", "FI_PROTO_IB_UD"),
                 ("verbs;ofi_rxd", "droce0-dgram", "FI_EP_RDM", "FI_PROTO_RXD")):
        check(want in got, "fi_info -p verbs: no %s in %s:\n%s" % (want, sorted(got), out))
    others = {d for _, d, _, _ in got if not d.startswith("droce")}
    check(not others, "fi_info lists domains that are not droce's: %s" % others)


def t_fi_info_msg_addr():
    """In the namespace, A's MSG info carries droced A's address as its source (the
    localhost binding of a passive fi_getinfo, see the module's comment)."""
    app = App(["fi_info", "-p", "verbs", "-t", "FI_EP_MSG", "-v"], pair.a, timeout=60,
              netns=NS, env=dict(ENV, FI_VERBS_IFACE=ns_iface))
    rc = app.wait()
    out = app.output
    check(rc == 0, "fi_info -p verbs -t FI_EP_MSG exit %d:\n%s" % (rc, out))
    srcs = re.findall(r"^\s*src_addr:\s*(\S+)", out, re.M)
    check(srcs and all(re.match(r"fi_sockaddr_in://10\.99\.0\.1:0$", s) for s in srcs),
          "MSG src_addr %s, want fi_sockaddr_in://10.99.0.1:0:\n%s" % (srcs, out[-3000:]))
    check(re.search(r"^\s*type:\s*FI_EP_MSG", out, re.M), "no FI_EP_MSG:\n%s" % out[-3000:])


# ---- fi_pingpong ----

def pingpong(prov, ep, size, netns=None, extra_env=None, timeout=120):
    common = ["fi_pingpong", "-p", prov, "-e", ep, "-c", "-I", str(ITERS), "-S", str(size)]
    env = dict(ENV, **(extra_env or {}))
    oob = free_tcp_port()
    srv, cli = run_pair(common + ["-B", str(oob)],
                        common + ["-P", str(oob), "127.0.0.1"], pair.a, pair.b,
                        timeout, srv_netns=netns, cli_netns=netns, start_delay=1.0, env=env)
    what = "fi_pingpong -p %s -e %s -S %d" % (prov, ep, size)
    for side, out in (("server", srv), ("client", cli)):
        no_errors(out, "%s %s" % (what, side))
        rows = ROW.findall(out)
        check(len(rows) == 1, "%s %s: %d result rows, want 1:\n%s" %
              (what, side, len(rows), out))
        r = rows[0]
        want_n = cnt_str(ITERS)
        check(r[0] == size_str(size) and r[1] == want_n and r[2] == want_n,
              "%s %s: row %s, want size %s, %s sent, =%s acked" %
              (what, side, r, size_str(size), want_n, want_n))
        check(float(r[6]) > 0, "%s %s: zero usec/xfer: %s" % (what, side, r))
    log("%s: %s usec/xfer" % (what, ROW.findall(cli)[0][6]))


SIZES = (1, 4096, 65536)


# ofi_rxd's end: now and then (about one run in ten here, at 64 KiB) one side reports
# every transfer sent and acknowledged, then never exits: its endpoint close waits on the
# reliability protocol of a peer that has already finished and gone. A ping-pong has no
# end handshake; this is the ping-pongs' end race of doc/interop.md, in libfabric. Such a
# run (one side exit 0, the other's complete row and the other killed by the timeout; the
# client, more often, or the server) is run again, at most RDM_ATTEMPTS times; any other
# failure fails at once.
RDM_TIMEOUT = 30
RDM_ATTEMPTS = 3


def rdm_end_race(err, size):
    text = str(err)
    srv, cli = text.split("--- client:", 1) if "--- client:" in text else (text, "")
    late = (cli if text.startswith("server exit 0, client exit 124") else
            srv if text.startswith("server exit 124, client exit 0") else "")
    return any(r[0] == size_str(size) and r[1] == r[2] == cnt_str(ITERS)
               for r in ROW.findall(late))


def t_rdm():
    for size in SIZES:
        for attempt in range(1, RDM_ATTEMPTS + 1):
            try:
                pingpong("verbs;ofi_rxd", "rdm", size, timeout=RDM_TIMEOUT)
                break
            except TestFailure as e:
                if attempt == RDM_ATTEMPTS or not rdm_end_race(e, size):
                    raise
                log("     rdm -S %d: the client finished every transfer but did not exit "
                    "(ofi_rxd's end race), attempt %d again" % (size, attempt))


def t_dgram():
    # A datagram carries at most one MTU (4096).
    for size in (1, 4096):
        pingpong("verbs", "dgram", size)


def t_msg():
    for size in SIZES:
        pingpong("verbs", "msg", size, netns=NS, extra_env={"FI_VERBS_IFACE": ns_iface})


def t_idle():
    for d in (pair.a, pair.b):
        expect_idle(BIN["droce_ctl"], d)


CASE_LIST = [
    ("fi_info", t_fi_info),
    ("fi_info_msg_addr", t_fi_info_msg_addr),
    ("rdm", t_rdm),
    ("dgram", t_dgram),
    ("msg", t_msg),
    ("idle", t_idle),
]


# ---- the network namespace for MSG endpoints ----

def ip(*args):
    return subprocess.run(["ip"] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=30)


def ns_up():
    """The namespace with an interface carrying both droced addresses. Returns the
    interface's name."""
    global ns_iface
    r = ip("netns", "add", NS)
    check(r.returncode == 0, "ip netns add %s: %s" % (NS, r.stdout))
    if ip("-n", NS, "link", "add", IFACE, "type", "dummy").returncode != 0:
        # No dummy driver in this kernel: a veth pair with both ends in the namespace.
        r = ip("-n", NS, "link", "add", IFACE, "type", "veth", "peer", "name", IFACE + "p")
        check(r.returncode == 0, "neither a dummy nor a veth interface: %s" % r.stdout)
        r = ip("-n", NS, "link", "set", IFACE + "p", "up")
        check(r.returncode == 0, r.stdout)
    for cmd in (("addr", "add", pair.ip_a + "/24", "dev", IFACE),
                ("addr", "add", pair.ip_b + "/24", "dev", IFACE),
                ("link", "set", IFACE, "up"), ("link", "set", "lo", "up")):
        r = ip("-n", NS, *cmd)
        check(r.returncode == 0, "ip -n %s %s: %s" % (NS, " ".join(cmd), r.stdout))
    os.makedirs("/etc/netns/" + NS, exist_ok=True)
    with open("/etc/netns/%s/hosts" % NS, "w") as f:
        f.write("%s localhost\n" % pair.ip_a)
    ns_iface = IFACE


def ns_down():
    subprocess.run(["ip", "netns", "del", NS], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=30)
    shutil.rmtree("/etc/netns/" + NS, ignore_errors=True)


def run():
    global pair
    with MemifPair(BIN["droced"], tag="libfabric") as p:
        pair = p
        try:
            ns_up()
            run_cases(CASE_LIST, CASES)
        finally:
            ns_down()


if __name__ == "__main__":
    main([("libfabric", run)], [])
