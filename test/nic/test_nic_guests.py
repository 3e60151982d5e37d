# SPDX-License-Identifier: BSD-3-Clause
"""droced on emulated PCI NICs driven by DPDK's real PMDs (doc/nics.md), against Linux's
soft-RoCE and droced on the host, all on one bridge in a namespace of the test's own:

    rxe guest  10.77.0.2 (tap0) --+
    host droced 10.77.0.3 (veth) -+ br0 10.77.0.1 (the host's TCP exchanges)
    virtio guest 10.77.0.11 -------+   each NIC guest: droced on 00:03.0 (vfio-pci behind
    e1000e guest 10.77.0.12 -------+   QEMU's Intel IOMMU) and, for the TCP exchanges of the
    vmxnet3 guest 10.77.0.13 ------+   programs run on it, the kernel's eth0 on 00:04.0 at
                                       10.77.0.11x

For each NIC kind in turn a guest boots, droced starts from a configuration naming the NIC's
PCI address, and stock programs run on droce in the guest against the rxe guest and the
host's droced, each both ways: ibv_rc_pingpong -c (1 B, 4 KiB, 64 KiB), ibv_ud_pingpong -c,
ib_write_bw, ib_read_bw and rping -V through rdma_cm; every byte the pingpongs and rping
carry is checked by the programs themselves. The virtio guest has two queue pairs and two
engines, QPs spread over both: the device puts what arrives on either queue and the
handoff gives each packet to its QP's engine (both queues must receive, nothing dropped).
Not by RSS: QEMU 7.2's virtio-net RSS, where its eBPF program cannot load (here), is done
in software and stalls a queue under load (doc/nics.md); without it QEMU gives each
queue what the tap's queue of the same number receives, and the tap picks the queue a
flow was last sent from, or by the flow's hash (the least common denominator: a
multi-queue NIC whose steering droced does not choose). Its link is pulled (QEMU's
set_link) for 2 s under a running rping -V and ib_write_bw -D, which must end well, with
IBV_EVENT_PORT_ERR and IBV_EVENT_PORT_ACTIVE seen by an application and the port DOWN
meanwhile, then pulled under ibv_rc_pingpong for longer than its retry budget (timeout 14,
7 retries: half a second), which must end in IBV_WC_RETRY_EXC_ERR. After each guest, its
NIC's capture must be sound to droce-pcap --verify and tshark, and droce's headers equal to
Linux's. A ping-pong's retry error while a heartbeat shows a guest stalled by its loaded
host is tried again (PeerSilent, doc/reliability.md); any other failure fails the case.

usage: test_nic_guests.py DROCED DROCE_CTL DROCE_PCAP COMPAT_DIR RXE_DIR BUILD_OVERLAY
           [KIND...]
"""

import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "rxe"))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from droce_harness import (VETH_DEVARGS, ChildOutput, Daemon, TestFailure, Workdir,  # noqa: E402
                           check, ctl, expect_idle, log, parse_args)
from nic_guest import NicGuest  # noqa: E402
from roce_checks import (ERROR_WORDS, RETRY_EXC, RETRY_WINDOW_S, check_pingpong,  # noqa: E402
                         perf_rows, rping_status, verify_capture)
from rxe_guest import Heartbeat, PeerSilent, RxeGuest, RxeLink, cleanup_on_sigterm  # noqa: E402

BIN, CASES = parse_args(["droced", "droce_ctl", "droce_pcap", "compat_dir", "rxe_dir",
                         "build_overlay"])
KINDS = ("virtio", "e1000e", "vmxnet3")
NIC_IP = {"virtio": "10.77.0.11", "e1000e": "10.77.0.12", "vmxnet3": "10.77.0.13"}
MTU = 4096
CASE_TIMEOUT = 180
PP_ITERS = 20
BW_ITERS = 100
RPING_COUNT = 20
TCP_PORT_BASE = 19500
CM_PORT_BASE = 7600
# perftest times its CPU by a regression and gives up on a poor fit under TCG's jittery
# clock (test_rxe_interop.py does the same): nothing of droce's is involved.
CPU_MHZ_FAIL = "Correlation coefficient r^2"
ATTEMPTS = 3
# An idle engine sleeps: what it may loop in IDLE_S seconds (sleeps bounded at 100 ms, a
# wake-up per packet of the link's ARP and the like); a spinning one loops millions.
# An idle engine, IDLE_S seconds: loops and wake-ups beyond its sleeps (the control
# thread's ARP and timers, a last ACK) up to IDLE_SLACK; droced's default idle_sleep_us,
# the shortest a sleep may be.
IDLE_S = 2
IDLE_SLACK = 50
IDLE_SLEEP_US = 20


# ---- Where programs run: a guest (rxe or droced) or the host's droced ----

class HostJob:
    """A program on the host's droced, in the test's namespace, with a hard timeout."""

    def __init__(self, link, daemon, cmd, timeout):
        self.out = ChildOutput()
        env = dict(daemon.env(), LD_LIBRARY_PATH=BIN["compat_dir"])
        self.proc = self.out.popen(
            link.netns_cmd(["timeout", "--kill-after=5", str(timeout), "sh", "-c", cmd]),
            text=True, env=env, start_new_session=True)

    def done(self):
        return self.proc.poll() is not None

    def wait(self, timeout=None):
        self.proc.wait(timeout)
        return self.proc.returncode, self.out.text()

    def kill(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)


class Side:
    """One end of an exchange: where it runs, its device and GID index, its RoCE address
    and the address of its TCP exchanges; in a guest, the address its kernel answers the
    heartbeat's echoes on (None on the host)."""

    heartbeat_ip = None

    def __init__(self, name, dev, gid, roce_ip, tcp_ip):
        self.name, self.dev, self.gid, self.roce_ip, self.tcp_ip = name, dev, gid, roce_ip, tcp_ip

    def spawn(self, cmd, timeout=CASE_TIMEOUT):
        raise NotImplementedError

    def run(self, cmd, timeout=60):
        return self.spawn(cmd, timeout).wait()

    def tcp_listening(self, port):
        rc, out = self.run("ss -ltn")
        return re.search(r":%d\s" % port, out) is not None

    def cm_listening(self, port):
        rc, out = self.run("droce-ctl status")
        return re.search(r"^cm_listeners=[1-9]", out, re.M) is not None


class GuestSide(Side):
    def __init__(self, name, guest, dev, gid, roce_ip, tcp_ip, env=""):
        super().__init__(name, dev, gid, roce_ip, tcp_ip)
        self.guest, self.env, self.link = guest, env, guest.link
        self.heartbeat_ip = tcp_ip

    def spawn(self, cmd, timeout=CASE_TIMEOUT):
        return self.guest.spawn(self.env + cmd, timeout)


class RxeSide(GuestSide):
    def cm_listening(self, port):
        rc, out = self.run("rdma resource show cm_id")
        return re.search(r"state LISTEN.*src-addr \S+:%d\b" % port, out) is not None


class HostSide(Side):
    def __init__(self, link, daemon):
        super().__init__("host", "droce0", 0, link.DROCE_IP, link.HOST_IP)
        self.link, self.daemon = link, daemon

    def spawn(self, cmd, timeout=CASE_TIMEOUT):
        return HostJob(self.link, self.daemon, cmd, timeout)

    def cm_listening(self, port):
        return int(ctl(BIN["droce_ctl"], self.daemon).get("cm_listeners", "0")) > 0


_port = [TCP_PORT_BASE]


def next_port():
    _port[0] += 1
    return _port[0]


def exchange(srv, cli, srv_cmd, cli_cmd, listening, timeout=CASE_TIMEOUT,
             status=lambda rc, out: rc, heartbeat=None):
    """srv_cmd on srv, once listening() says so cli_cmd on cli; both must exit 0 (as
    status(rc, output) reads it). Returns their outputs (server, client). With a heartbeat
    on both sides' guests: PeerSilent when a side gave up with a retry error while a guest
    answered no echo for the retry window."""
    s = srv.spawn(srv_cmd, timeout)
    deadline = time.monotonic() + 60
    while not listening():
        if s.done():
            raise TestFailure("%s: server ended before it listened:\n%s" %
                              (srv.name, s.wait()[1]))
        if time.monotonic() > deadline:
            s.kill()
            raise TestFailure("%s: no server after 60 s: %s" % (srv.name, srv_cmd))
        time.sleep(0.3)
    t_start = time.time()
    c = cli.spawn(cli_cmd, timeout)
    # Whichever side fails first, the other is stopped at once: rxe's requester takes
    # retry_cnt 7 for "for ever" and would resend to a QP its failed partner took with it
    # until its timeout (39,777 packets to a QPN that no longer existed, in a failed run).
    while not (s.done() and c.done()):
        if any(j.done() and status(*j.wait()) != 0 for j in (s, c)):
            s.kill()
            c.kill()
            break
        time.sleep(0.1)
    t_end = time.time()
    (rc_s, out_s), (rc_c, out_c) = s.wait(), c.wait()
    rc_s, rc_c = status(rc_s, out_s), status(rc_c, out_c)
    if heartbeat is not None and (rc_s != 0 or rc_c != 0) and \
            (RETRY_EXC.search(out_s) or RETRY_EXC.search(out_c)):
        silent, ip = heartbeat.longest_silence(t_start, t_end)
        if silent >= RETRY_WINDOW_S:
            raise PeerSilent("a retry error while the guest at %s answered no echo for "
                             "%.2f s (the retry window is %.2f s):\n--- server:\n%s\n"
                             "--- client:\n%s" % (ip, silent, RETRY_WINDOW_S, out_s, out_c))
        log("     a retry error; the guests answered echoes, at most %.3f s apart: not a "
            "stalled guest" % silent)
    if rc_s != 0 or rc_c != 0:
        raise TestFailure("server %s exit %s, client %s exit %s\n--- server (%s):\n%s\n"
                          "--- client (%s):\n%s" % (srv.name, rc_s, cli.name, rc_c, srv_cmd,
                                                    out_s, cli_cmd, out_c))
    return out_s, out_c


def both_ways(a, b):
    return ((a, b), (b, a))


def pingpong(a, b, prog, size):
    """prog both ways. The programs' QP timeout is theirs (14: 67 ms, 7 retries, so a peer
    silent for half a second fails them), and two TCG guests on a loaded 2-CPU host may be
    stalled that long: a heartbeat to the guests tells such a stall (PeerSilent, tried
    again, as test_rxe_interop.py does) from a fault."""
    with Heartbeat(a.link, [s.heartbeat_ip for s in (a, b) if s.heartbeat_ip]) as hb:
        for srv, cli in both_ways(a, b):
            for attempt in range(1, ATTEMPTS + 1):
                try:
                    out_s, out_c = pingpong_once(srv, cli, prog, size, hb)
                    break
                except PeerSilent as e:
                    if attempt == ATTEMPTS:
                        raise
                    log("     %s: a guest stalled, attempt %d again: %s" % (
                        prog, attempt, str(e).splitlines()[0]))
            check_pingpong(out_s, srv.name, PP_ITERS, size, cli.roce_ip)
            check_pingpong(out_c, cli.name, PP_ITERS, size, srv.roce_ip)
    log("     %s -s %d: ok both ways, %s and %s" % (prog, size, a.name, b.name))


def pingpong_once(srv, cli, prog, size, heartbeat):
    port = next_port()
    opts = "-p %d -s %d -n %d -c" % (port, size, PP_ITERS)
    if prog != "ibv_ud_pingpong":
        opts += " -m %d" % MTU
    cmd = "%s %s" % (prog, opts)
    return exchange(srv, cli, "%s -d %s -g %d" % (cmd, srv.dev, srv.gid),
                    "%s -d %s -g %d %s" % (cmd, cli.dev, cli.gid, srv.tcp_ip),
                    lambda: srv.tcp_listening(port), heartbeat=heartbeat)


def perftest(a, b, prog, size=65536, iters=BW_ITERS):
    for srv, cli in both_ways(a, b):
        for attempt in range(1, ATTEMPTS + 1):
            port = next_port()
            # -u 18: a 1 s QP timeout, not 67 ms: a TCG guest's vCPU may be off the host's
            # CPUs for longer than 7 x 67 ms on a loaded machine (test_rxe_interop.py).
            cmd = "%s -p %d -n %d -s %d -u 18" % (prog, port, iters, size)
            try:
                out_s, out_c = exchange(
                    srv, cli, "%s -d %s -x %d" % (cmd, srv.dev, srv.gid),
                    "%s -d %s -x %d %s" % (cmd, cli.dev, cli.gid, srv.tcp_ip),
                    lambda: srv.tcp_listening(port))
                break
            except TestFailure as e:
                if attempt == ATTEMPTS or CPU_MHZ_FAIL not in str(e):
                    raise
                log("     %s: perftest could not time its CPU, again" % prog)
        bad = [l for l in out_c.splitlines() if ERROR_WORDS.search(l)]
        rows = perf_rows(out_c, 3)
        check(not bad and len(rows) == 1 and rows[0][0] == size and rows[0][1] == iters and
              rows[0][2][1] > 0, "%s on %s: want one row of %d x %d B:\n%s" %
              (prog, cli.name, iters, size, out_c))
    log("     %s -s %d: ok both ways, %s and %s" % (prog, size, a.name, b.name))


def rping(a, b):
    for srv, cli in both_ways(a, b):
        port = CM_PORT_BASE + next_port() % 100
        common = "-v -V -C %d -S 4096 -a %s -p %d" % (RPING_COUNT, srv.roce_ip, port)
        out_s, out_c = exchange(srv, cli, "rping -s " + common, "rping -c " + common,
                                lambda: srv.cm_listening(port), status=rping_status)
        got_c = re.findall(r"^ping data: rdma-ping-(\d+): ", out_c, re.M)
        got_s = re.findall(r"^server ping data: rdma-ping-(\d+): ", out_s, re.M)
        check([int(g) for g in got_c] == list(range(RPING_COUNT)) and
              len(got_s) == RPING_COUNT, "rping %s -> %s: %d / %d ping lines\n%s\n%s" %
              (cli.name, srv.name, len(got_c), len(got_s), out_s[-800:], out_c[-800:]))
    log("     rping -C %d: ok both ways, %s and %s" % (RPING_COUNT, a.name, b.name))


def traffic(g, peer):
    for size in (1, 4096, 65536):
        pingpong(g, peer, "ibv_rc_pingpong", size)
    pingpong(g, peer, "ibv_ud_pingpong", 2048)
    perftest(g, peer, "ib_write_bw")
    perftest(g, peer, "ib_read_bw")
    rping(g, peer)


# ---- What droced says about its NIC ----

def guest_ctl(side, what):
    rc, out = side.run("droce-ctl %s" % what)
    check(rc == 0, "droce-ctl %s in the guest: %s" % (what, out))
    return [dict(f.split("=", 1) for f in line.split()) for line in out.splitlines()
            if "=" in line]


def check_nic(g, guest, engines):
    port = guest_ctl(g, "ports")[0]
    check(port["driver"] == guest.pmd and port["pci"] == "yes" and
          int(port["queues"]) == engines and port["state"] == "ACTIVE",
          "%s: droce-ctl ports: %s" % (guest.kind, port))
    log("     %s: %s, %s queue(s), rss %s, link interrupts %s, multicast filter %s" % (
        guest.kind, port["driver"], port["queues"], port["rss"], port["link_intr"],
        port["filter"]))
    return port


def check_queues(g, guest):
    """Both queues of a two-queue port received and sent (QPs are spread over the port's
    engines, each sends on its own queue), every packet reached its engine, none was
    dropped for want of a descriptor, an mbuf or room in a handoff ring."""
    port = guest_ctl(g, "ports")[0]
    queues = guest_ctl(g, "queues")
    check(len(queues) == 2, "%s: queues %s" % (guest.kind, queues))
    nic_rx = [int(q["nic_rx_packets"]) for q in queues]
    eng_rx = [int(q["engine_rx_packets"]) for q in queues]
    out = sum(int(q["handoff_out"]) for q in queues)
    into = sum(int(q["handoff_in"]) for q in queues)
    nic_tx = [int(q["nic_tx_packets"]) for q in queues]
    check(all(n > 0 for n in nic_rx), "%s: a queue received nothing: %s" %
          (guest.kind, queues))
    check(all(n > 0 for n in nic_tx), "%s: a queue sent nothing: %s" % (guest.kind, queues))
    check(nic_rx == eng_rx, "%s: the NIC's and the engines' counts differ: %s" %
          (guest.kind, queues))
    check(out == into and all(q["handoff_drop"] == "0" for q in queues),
          "%s: handoffs out %d, in %d: %s" % (guest.kind, out, into, queues))
    check(port["rx_missed"] == "0" and port["rx_nombuf"] == "0" and port["rx_errors"] == "0",
          "%s: the NIC dropped packets: %s" % (guest.kind, port))
    log("     %s: queues received %s packets, sent %s, %d handed to their QP's engine" %
        (guest.kind, nic_rx, nic_tx, out))


def check_idle_engines(g, guest):
    """An idle engine sleeps, whether woken by its rx interrupts or, where they do not come
    (e1000e at times: the engine then says "did not raise 3 in a row", doc/nics.md), at
    its idle_sleep_us bound. Counted, not timed: in IDLE_S each loop of an idle engine
    ends in a sleep (at most one in two may not: a sleep given up to work that came in),
    no sleep is shorter than its bound, and with no traffic no rx interrupt wakes it.
    A spinning engine breaks one of these: it never sleeps, or an interrupt fd never
    re-armed wakes it at once, again and again."""
    def sample():
        return [(int(q["loops"]), int(q["sleeps"]), int(q["rx_intr_wakeups"]))
                for q in guest_ctl(g, "queues")]
    before = sample()
    time.sleep(IDLE_S)
    after = sample()
    d = [tuple(y - x for x, y in zip(b, a)) for b, a in zip(before, after)]
    log("     %s: idle %d s: (loops, sleeps, rx interrupt wake-ups) per engine %s" %
        (guest.kind, IDLE_S, d))
    for loops, sleeps, intr in d:
        check(loops <= 2 * sleeps + IDLE_SLACK and intr <= IDLE_SLACK and
              loops <= IDLE_S * 1000000 // IDLE_SLEEP_US,
              "%s: an idle engine did not sleep: (loops, sleeps, rx interrupt wake-ups) "
              "%s in %d s" % (guest.kind, d, IDLE_S))


# ---- The link pulled ----

def port_state(g):
    rc, out = g.run("ibv_devinfo -d droce0")
    m = re.search(r"state:\s+(PORT_\w+)", out)
    return m.group(1) if m else out


FLAP_PINGS = 400


def link_flap(g, guest, host):
    """Pulled for 2 s under rping (a ping-pong through rdma_cm, every byte checked: its
    QPs' timeout is rdma_cm's, seconds) and ib_write_bw -D (-u 18: a 1 s timeout, 7
    retries): both end well; an application sees the port go DOWN and come back."""
    watch = g.spawn("ibv_asyncwatch -d droce0", 180)
    port = CM_PORT_BASE + next_port() % 100
    common = "-v -V -C %d -S 4096 -a %s -p %d" % (FLAP_PINGS, g.roce_ip, port)
    srv = g.spawn("rping -s " + common, CASE_TIMEOUT)
    bw_port = next_port()
    # -F: its figures are not read, and under a loaded host perftest's timing of its CPU
    # (a regression) may fail, which without -F ends the program (test_perftest.py).
    bw = "ib_write_bw -p %d -D 12 -s 65536 -u 18 -F" % bw_port
    bw_srv = g.spawn("%s -d droce0 -x 0" % bw, CASE_TIMEOUT)
    deadline = time.monotonic() + 60
    while not (g.cm_listening(port) and g.tcp_listening(bw_port)):
        check(time.monotonic() < deadline and not srv.done() and not bw_srv.done(),
              "flap: servers not listening")
        time.sleep(0.3)
    cli = host.spawn("rping -c " + common, CASE_TIMEOUT)
    bw_cli = host.spawn("%s -d droce0 -x 0 %s" % (bw, g.tcp_ip), CASE_TIMEOUT)
    time.sleep(3)
    running = not cli.done() and not bw_cli.done()
    guest.set_link(False)
    time.sleep(2)
    down = port_state(g)
    guest.set_link(True)
    results = [j.wait() for j in (cli, srv, bw_cli, bw_srv)]
    results[:2] = [(rping_status(rc, out), out) for rc, out in results[:2]]
    time.sleep(1)
    watch.kill()
    _, events = watch.wait()
    check(all(rc == 0 for rc, _ in results), "flap: programs failed:\n%s" %
          "\n---\n".join("exit %s\n%s" % (rc, "\n".join(
              l for l in out.splitlines() if "ping data" not in l and "abcdef" not in l)[-1500:])
              for rc, out in results))
    check(running, "flap: rping or ib_write_bw ended before the link was pulled")
    got = re.findall(r"^ping data: rdma-ping-(\d+): ", results[0][1], re.M)
    check([int(x) for x in got] == list(range(FLAP_PINGS)),
          "flap: rping's client saw %d of %d pings" % (len(got), FLAP_PINGS))
    check(down == "PORT_DOWN", "flap: the port was %s while the link was down" % down)
    err = events.find("IBV_EVENT_PORT_ERR")
    act = events.find("IBV_EVENT_PORT_ACTIVE", max(err, 0))
    check(err >= 0 and act > err, "flap: ibv_asyncwatch saw no PORT_ERR then PORT_ACTIVE:\n%s"
          % events)
    check(port_state(g) == "PORT_ACTIVE", "flap: the port is not ACTIVE again")
    log("     link pulled for 2 s under rping -V and ib_write_bw -D: both ended well; "
        "PORT_ERR, PORT_DOWN, PORT_ACTIVE")


def link_outage(g, guest, host):
    """Pulled for longer than the retry budget: the requester's work completes in error,
    IBV_WC_RETRY_EXC_ERR (12)."""
    port = next_port()
    # -t: ibv_rc_pingpong's QP timeout is 14 (67 ms), 7 retries: about half a second.
    pp = "ibv_rc_pingpong -p %d -s 4096 -n 100000 -m %d" % (port, MTU)
    srv = host.spawn("%s -d droce0 -g 0" % pp, 120)
    deadline = time.monotonic() + 60
    while not host.tcp_listening(port):
        check(time.monotonic() < deadline and not srv.done(), "outage: no server")
        time.sleep(0.3)
    cli = g.spawn("%s -d droce0 -g 0 %s" % (pp, host.tcp_ip), 120)
    time.sleep(3)
    guest.set_link(False)
    rc_c, out_c = cli.wait(60)
    guest.set_link(True)
    srv.kill()
    rc_s, out_s = srv.wait()
    # The side with a send outstanding when the link went is the one that gives up first.
    retry_exc = re.compile(r"Failed status transport retry counter exceeded \(12\)")
    check(rc_c != 0 and (retry_exc.search(out_c) or retry_exc.search(out_s)),
          "outage: want IBV_WC_RETRY_EXC_ERR, got exit %s:\n%s\n--- host:\n%s" %
          (rc_c, out_c[-1500:], out_s[-1500:]))
    deadline = time.monotonic() + 30
    while port_state(g) != "PORT_ACTIVE":
        check(time.monotonic() < deadline, "outage: the port did not come back")
        time.sleep(0.5)
    log("     link pulled past the retry budget: IBV_WC_RETRY_EXC_ERR, then ACTIVE again")


# ---- One NIC kind ----

def check_headers(pcap, droce_ip, linux_ips):
    """The header fields test_rxe_interop.py compares (TTL, DSCP, DF, UDP checksum, P_Key,
    BTH version): droce's on this NIC the same as Linux's."""
    fields = ["ip.ttl", "ip.dsfield.dscp", "ip.flags.df", "udp.checksum",
              "infiniband.bth.p_key", "infiniband.bth.tver"]
    r = subprocess.run(["tshark", "--disable-protocol", "rpcordma", "-r", pcap, "-Y",
                        "infiniband.bth", "-T", "fields", "-e", "ip.src"] +
                       [a for f in fields for a in ("-e", f)],
                       capture_output=True, text=True, timeout=600)
    check(r.returncode == 0, "tshark: %s" % r.stderr)
    seen = {}
    for line in r.stdout.splitlines():
        f = line.split("\t")
        seen.setdefault(f[0], set()).add(tuple(f[1:]))
    droce = seen.get(droce_ip, set())
    linux = set().union(*(seen.get(ip, set()) for ip in linux_ips))
    check(droce and linux and droce == linux, "header fields %s: droce %s, Linux %s" %
          (fields, sorted(droce), sorted(linux)))


def build_initrd(work):
    """The droced guest's initramfs: the rxe guest's with this build's droce laid over it."""
    out = work.file("initramfs-droce.gz")
    r = subprocess.run([BIN["build_overlay"], out, BIN["rxe_dir"], BIN["droced"],
                        BIN["droce_ctl"], os.path.join(BIN["compat_dir"], "libibverbs.so.1"),
                        os.path.join(BIN["compat_dir"], "librdmacm.so.1")],
                       capture_output=True, text=True, timeout=300)
    check(r.returncode == 0 and os.path.getsize(out) > 0, "build-overlay.sh: %s%s" %
          (r.stdout, r.stderr))
    return out


class Capture:
    """dumpcap on a tap of the namespace: every frame between the bridge and a guest's NIC.
    (QEMU's filter-dump takes no multi-queue netdev.)"""

    def __init__(self, link, ifname, path):
        self.path = path
        self.err = ChildOutput()
        self.proc = self.err.popen(
            link.netns_cmd(["timeout", "1800", "dumpcap", "-P", "-i", ifname, "-w", path]),
            stderr_only=True, text=True, start_new_session=True)
        deadline = time.monotonic() + 30
        while "Capturing on" not in self._err():
            check(self.proc.poll() is None and time.monotonic() < deadline,
                  "dumpcap on %s: %s" % (ifname, self._err()))
            time.sleep(0.1)

    def _err(self):
        return self.err.text()

    def close(self):
        """Stops it; the file is complete once it returns."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def nic_case(kind, link, rxe, host, work, initrd):
    ip = NIC_IP[kind]
    multi = kind == "virtio"
    pcap = work.file("%s.pcap" % kind)
    tap = link.add_tap("t%s" % kind, 2 if multi else 1)
    guest = NicGuest(link, tap, kind, initrd, "%s/%d" % (ip, link.PREFIX),
                     side_tap=link.add_tap("s%s" % kind), side_ip="%s1/%d" % (ip, link.PREFIX),
                     queues=2 if multi else 1, smp=2 if multi else 1, rxe_dir=BIN["rxe_dir"],
                     boot_timeout=120)
    engines = 2 if multi else 1
    cap = Capture(link, tap, pcap)
    try:
        guest_run(kind, guest, engines, multi, rxe, host)
    finally:
        cap.close()
    verify_capture(BIN["droce_pcap"], pcap)
    check_headers(pcap, ip, [link.GUEST_IP])


def guest_run(kind, guest, engines, multi, rxe, host):
    with guest:
        try:
            guest_cases(kind, guest, engines, multi, rxe, host)
        except Exception:
            # What droced saw: its NIC, queues and engines' counters (logged at its stop).
            if guest.droced_job is not None:
                rc, out = guest.run("droce-ctl ports; droce-ctl queues; droce-ctl qps")
                log("     %s: droced at the failure:\n%s\n%s" % (
                    kind, out, "\n".join(guest.droced_stop().splitlines()[-12:])))
            raise


def guest_cases(kind, guest, engines, multi, rxe, host):
    ip = NIC_IP[kind]
    log("     %s guest: %s, booted in %.1f s" % (kind, guest.info["nics"],
                                                  guest.info["boot_s"]))
    guest.droced_start(guest.droced_config(engines=engines))
    g = GuestSide(kind, guest, "droce0", 0, ip, guest.side_ip.split("/")[0],
                  guest.droce_env)
    check_nic(g, guest, engines)
    traffic(g, rxe)
    traffic(g, host)
    if multi:
        check_queues(g, guest)
    check_idle_engines(g, guest)
    if multi:
        link_flap(g, guest, host)
        link_outage(g, guest, host)
    rc, out = g.run("droce-ctl status")
    check(re.search(r"^qps=0$", out, re.M) is not None, "%s: QPs left: %s" % (kind, out))
    log_text = guest.droced_stop()
    bad = [l for l in log_text.splitlines() if "ERROR" in l or "error" in l.split(":")[0]]
    check(not bad, "%s: droced logged errors: %s" % (kind, bad))


def main():
    cleanup_on_sigterm()
    kinds = [k for k in KINDS if not CASES or k in CASES]
    check(kinds, "no such NIC kind: %s" % CASES)
    failed = []
    work = Workdir("nic")
    t_all = time.monotonic()
    try:
        initrd = build_initrd(work)
        with RxeLink() as link, RxeGuest(link, BIN["rxe_dir"]) as guest:
            log("     rxe guest: %s, booted in %.1f s (%s)" % (
                guest.info["ip"], guest.info["boot_s"], guest.accel))
            rxe = RxeSide("rxe", guest, "rxe0", guest.info["gid_index"], link.GUEST_IP,
                          link.GUEST_IP)
            daemon = Daemon(BIN["droced"], work, "host",
                            "net_af_packet0,iface=%s%s" % (link.droced_if, VETH_DEVARGS),
                            "%s/%d" % (link.DROCE_IP, link.PREFIX), mtu=MTU, netns=link.ns)
            daemon.start()
            try:
                host = HostSide(link, daemon)
                for kind in kinds:
                    t0 = time.monotonic()
                    try:
                        nic_case(kind, link, rxe, host, work, initrd)
                        log("ok   %s (%.1f s)" % (kind, time.monotonic() - t0))
                    except Exception as e:  # report and go on with the next kind
                        failed.append(kind)
                        log("FAIL %s (%.1f s): %s" % (kind, time.monotonic() - t0, e))
                expect_idle(BIN["droce_ctl"], daemon)
            finally:
                daemon.stop(expect_clean=True)
    except Exception as e:
        failed.append("bench")
        log("FAIL set-up: %s" % e)
    finally:
        work.close()
    log("nic guests: %d failed (%.0f s)" % (len(failed), time.monotonic() - t_all))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
