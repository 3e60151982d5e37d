# SPDX-License-Identifier: BSD-3-Clause
"""Debian's own ibverbs-utils binaries, unmodified, through two droced joined by net_memif:
the only change is LD_LIBRARY_PATH pointing at droce's libibverbs.so.1 (drivers/compat).
Without it these programs find no device on this machine (no RDMA in the kernel), so a
device named droce0 in their output is itself the proof that our library was loaded.

Every ping-pong runs with -c (the program checks the bytes it receives) and its output is
checked on both sides: the exact iteration count, the byte count, and the peer's address
(its QPN and its GID, droced's IPv4-mapped GID of the other daemon). ibv_xsrq_pingpong
(XRC) prints no counts: its success line and both addresses are checked.

usage: test_ibverbs_utils.py DROCED DROCE_CTL COMPAT_DIR [CASE...]
"""

import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from droce_harness import (App, MemifPair, check, expect_idle, log, main, parse_args, run_cases,
                           run_pair)

# Distinct from the other integration tests' ports (meson may run them at the same time).
TCP_PORT = 19210
BIN, CASES = parse_args(["droced", "droce_ctl", "compat_dir"])
ENV = {"LD_LIBRARY_PATH": BIN["compat_dir"]}
pair = None


def tool(argv, daemon, timeout=30):
    """Runs a one-shot program through daemon; its output, or a failure if it did not
    exit 0."""
    app = App(argv, daemon, timeout, env=ENV)
    rc = app.wait()
    check(rc == 0, "%s exited %s:\n%s" % (" ".join(argv), rc, app.output))
    return app.output


def gid_of(ip):
    return "::ffff:%s" % ip


def expect_run(out, side, iters, size, peer_ip):
    """One side's report: 'N iters in S seconds', 'B bytes in S seconds', and the address
    it exchanged (LID 0: RoCE; the peer's GID)."""
    m = re.search(r"^(\d+) iters in [\d.]+ seconds", out, re.M)
    check(m is not None, "%s: no iteration report in:\n%s" % (side, out))
    check(int(m.group(1)) == iters, "%s: %s iterations, want %d" % (side, m.group(1), iters))
    m = re.search(r"^(\d+) bytes in [\d.]+ seconds", out, re.M)
    check(m is not None and int(m.group(1)) == 2 * iters * size,
          "%s: byte count %s, want %d" % (side, m and m.group(1), 2 * iters * size))
    remote = re.findall(r"remote address:\s+LID 0x0000, QPN 0x[0-9a-f]+, PSN 0x[0-9a-f]+, "
                        r"GID (\S+)", out)
    check(remote and all(g == gid_of(peer_ip) for g in remote),
          "%s: remote GIDs %s, want %s" % (side, remote, gid_of(peer_ip)))
    check("Failed" not in out and "Couldn't" not in out, "%s reported an error:\n%s" %
          (side, out))
    return len(remote)


def pingpong(prog, opts=(), iters=1000, size=4096, timeout=120):
    """prog between the pair: server through A, client through B, both checking."""
    common = [prog, "-d", "droce0", "-g", "0", "-c", "-p", str(TCP_PORT), "-n", str(iters),
              "-s", str(size)] + list(opts)
    # The TCP exchange of addresses goes through the kernel's loopback, RDMA through droce.
    srv, cli = run_pair(common, common + ["127.0.0.1"], pair.a, pair.b, timeout, env=ENV)
    n_srv = expect_run(srv, "server", iters, size, pair.ip_b)
    n_cli = expect_run(cli, "client", iters, size, pair.ip_a)
    return srv, cli, n_srv, n_cli


def t_devices():
    out = tool(["ibv_devices"], pair.a)
    check(re.search(r"^\s+droce0\s+[0-9a-f]{16}\s*$", out, re.M) is not None,
          "ibv_devices does not list droce0 with a GUID:\n%s" % out)


def t_devinfo():
    out = tool(["ibv_devinfo", "-v"], pair.b)
    for want in (r"hca_id:\s+droce0", r"state:\s+PORT_ACTIVE \(4\)",
                 r"active_mtu:\s+4096 \(5\)", r"link_layer:\s+Ethernet",
                 r"transport:\s+InfiniBand \(0\)", r"max_qp:\s+\d+", r"max_srq:\s+\d+",
                 r"GID\[\s*0\]:\s+%s, RoCE v2" % re.escape(gid_of(pair.ip_b))):
        check(re.search(want, out) is not None, "ibv_devinfo -v lacks /%s/:\n%s" % (want, out))


def t_rc_default():
    pingpong("ibv_rc_pingpong")


def t_rc_events():
    pingpong("ibv_rc_pingpong", ["-e"])


def t_rc_new_post_api():
    pingpong("ibv_rc_pingpong", ["-N"])


def t_rc_sizes():
    for size in (1, 2, 63, 1024, 4095, 4097, 16384, 65536):
        pingpong("ibv_rc_pingpong", iters=100, size=size)


def t_rc_mtus():
    for mtu in (256, 512, 1024, 2048, 4096):
        pingpong("ibv_rc_pingpong", ["-m", str(mtu)], iters=100, size=8192)


def t_rc_10000():
    pingpong("ibv_rc_pingpong", iters=10000, size=64, timeout=240)


def t_rc_timestamps():
    """-t: completion timestamps (ibv_create_cq_ex with IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
    which needs ibv_query_device_ex's completion_timestamp_mask). The engine stamps each
    CQE with its TSC; ibv_devinfo -v gives the clock (hca_core_clock, kHz). Each side's
    average gap between receive completions, in that clock, must be its own measured time
    per iteration within a factor of 3, and min <= average <= max."""
    info = tool(["ibv_devinfo", "-v", "-d", "droce0"], pair.a)
    m = re.search(r"hca_core_clock:\s+(\d+)\s*kHZ", info)
    check(m is not None and int(m.group(1)) > 0, "no hca_core_clock in:\n%s" % info)
    khz = int(m.group(1))
    m = re.search(r"completion timestamp_mask:\s+0x([0-9a-f]+)", info)
    check(m is not None and int(m.group(1), 16) != 0, "no timestamp mask in:\n%s" % info)
    srv, cli, _, _ = pingpong("ibv_rc_pingpong", ["-t"], iters=2000, size=64)
    for side, out in (("server", srv), ("client", cli)):
        got = {}
        for k in ("Max", "Min", "Average"):
            m = re.search(r"^%s receive completion clock cycles = ([\d.]+)" % k, out, re.M)
            check(m is not None, "%s: no %s completion clock cycles in:\n%s" % (side, k, out))
            got[k] = float(m.group(1))
        usec = float(re.search(r"iters in [\d.]+ seconds = ([\d.]+) usec/iter", out).group(1))
        avg_us = got["Average"] / khz * 1000
        check(0 < got["Min"] <= got["Average"] <= got["Max"], "%s: cycles %s" % (side, got))
        check(usec / 3 <= avg_us <= usec * 3, "%s: %.2f us between completions by the "
              "timestamps, %.2f us per iteration measured" % (side, avg_us, usec))
        log("  %s: %.2f us between receive completions by the timestamps, %.2f us/iter "
            "measured (clock %d kHz)" % (side, avg_us, usec, khz))


def t_srq_16():
    # 16 QPs on one SRQ on each side: 16 connections, each one reported.
    srv, cli, n_srv, n_cli = pingpong("ibv_srq_pingpong", ["-q", "16"], iters=100)
    check(n_srv == 16 and n_cli == 16, "want 16 remote addresses, got %d / %d" %
          (n_srv, n_cli))


def t_srq_events():
    # -e with the default 16 QPs on the SRQ.
    srv, cli, n_srv, n_cli = pingpong("ibv_srq_pingpong", ["-e"], iters=100)
    check(n_srv == 16 and n_cli == 16, "want 16 remote addresses, got %d / %d" %
          (n_srv, n_cli))


def xsrq(opts, iters):
    """ibv_xsrq_pingpong (XRC: an initiator QP sending to the peer's XRC SRQ through its
    XRC target QP) between the pair: both sides report success, and each names the
    other's address: its GID, its target and initiator QPNs and its SRQ number."""
    common = ["ibv_xsrq_pingpong", "-d", "droce0", "-g", "0", "-p", str(TCP_PORT + 2),
              "-n", str(iters)] + list(opts)
    srv, cli = run_pair(common, common + ["127.0.0.1"], pair.a, pair.b, 120, env=ENV)
    for side, out, peer in (("server", srv, pair.ip_b), ("client", cli, pair.ip_a)):
        check(re.search(r"^success$", out, re.M) is not None and "Couldn't" not in out and
              "Failed" not in out and "error" not in out,
              "%s: no success:\n%s" % (side, out))
        addrs = {}
        for who, qr, qs, srqn, gid in re.findall(
                r"^\s*(local|remote): LID 0000, QPN RECV ([0-9a-f]{6}) SEND ([0-9a-f]{6}), "
                r"PSN [0-9a-f]{6}, SRQN ([0-9a-f]{6}), GID (\S+)$", out, re.M):
            check(int(qr, 16) >= 2 and int(qs, 16) >= 2 and int(srqn, 16) != 0,
                  "%s: %s address with a null QPN or SRQN:\n%s" % (side, who, out))
            addrs[who] = gid
        check(addrs.get("remote") == gid_of(peer),
              "%s: remote GID %s, want %s" % (side, addrs.get("remote"), gid_of(peer)))
    return srv, cli


def t_xsrq():
    xsrq([], 200)


def t_xsrq_events():
    xsrq(["-e", "-s", "8192"], 50)


def t_ud():
    # ibv_ud_pingpong reserves the 40-byte GRH area and makes its AH from the wire's GRH.
    pingpong("ibv_ud_pingpong", iters=500, size=2048)


def t_uc():
    pingpong("ibv_uc_pingpong", iters=500)


def t_uc_events():
    pingpong("ibv_uc_pingpong", ["-e"], iters=200)


def t_no_gid_message():
    # Without -g the programs give an InfiniBand address (LID, no GRH): modify_qp must
    # fail with a message that says what to do.
    common = ["ibv_rc_pingpong", "-d", "droce0", "-p", str(TCP_PORT + 1), "-n", "10"]
    srv = App(common, pair.a, 30, "server", env=ENV)
    time.sleep(0.3)
    cli = App(common + ["127.0.0.1"], pair.b, 30, "client", env=ENV)
    rc_c = cli.wait()
    rc_s = srv.wait()
    # The server modifies first (after reading the client's address) and fails; the
    # client then finds the connection closed.
    check(rc_s != 0 and rc_c != 0, "exit %s / %s without a GID index:\n%s\n%s" %
          (rc_s, rc_c, srv.output, cli.output))
    check("pass a GID index" in srv.output and "Failed to modify QP to RTR" in srv.output,
          "server: no GID-index message:\n%s" % srv.output)


def t_idle():
    for d in (pair.a, pair.b):
        expect_idle(BIN["droce_ctl"], d)


def t_system_library_finds_nothing():
    # The control experiment: without our library the same binary sees no droce device.
    # (meson test itself puts the build's library directories on LD_LIBRARY_PATH.)
    env = pair.a.env()
    env.pop("LD_LIBRARY_PATH", None)
    r = subprocess.run(["timeout", "10", "ibv_devices"], capture_output=True, text=True,
                       env=env)
    check("droce0" not in r.stdout, "the system libibverbs listed droce0?\n%s" % r.stdout)


CASE_LIST = [
    ("devices", t_devices),
    ("devinfo", t_devinfo),
    ("system_library_finds_nothing", t_system_library_finds_nothing),
    ("rc_default", t_rc_default),
    ("rc_events", t_rc_events),
    ("rc_new_post_api", t_rc_new_post_api),
    ("rc_sizes", t_rc_sizes),
    ("rc_mtus", t_rc_mtus),
    ("rc_10000", t_rc_10000),
    ("rc_timestamps", t_rc_timestamps),
    ("srq_16", t_srq_16),
    ("srq_events", t_srq_events),
    ("xsrq", t_xsrq),
    ("xsrq_events", t_xsrq_events),
    ("ud", t_ud),
    ("uc", t_uc),
    ("uc_events", t_uc_events),
    ("no_gid_message", t_no_gid_message),
    ("idle", t_idle),
]

def run():
    """All cases through one pair; leaving the with block stops both daemons and checks they
    exit 0 with nothing left behind."""
    global pair
    with MemifPair(BIN["droced"], tag="ibv-utils") as p:
        pair = p
        run_cases(CASE_LIST, CASES)


if __name__ == "__main__":
    main([("ibverbs_utils", run)], [])
