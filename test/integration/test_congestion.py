# SPDX-License-Identifier: BSD-3-Clause
"""Congestion control through droced (doc/congestion.md). Two droced joined by net_memif;
A's port is the net_fault vdev's bottleneck queue around the memif port: a switch port
that drains at 500 Mb/s and marks ECN-capable packets CE above 16 KiB as they leave
(drivers/net/fault); both daemons run DCQCN with the paper's alpha period for a link that
slow (doc/congestion.md, "Tuning").
Debian's ib_write_bw -q 4 runs unmodified from B to A for a few seconds, and while it runs
droce-ctl qps shows each daemon's QPs:

- dcqcn: A's QPs, the notification point, received CE-marked packets and sent CNPs; B's,
  the reaction point, received them, cut their rates and are paced below the line;
- np_off: [congestion] roce_np_enable = none on A: the same marks, but no CNP, so B's
  QPs never cut;
- rp_off: [congestion] roce_rp_enable = none on B (the default): B's packets are not
  ECN-capable, so the bottleneck marks none and nothing else happens.

usage: test_congestion.py DROCED DROCE_CTL COMPAT_DIR FAULT_PMD [CASE...]
"""

import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from droce_harness import (App, DaemonPair, Daemon, Workdir, check, ctl_lines,  # noqa: E402
                           free_tcp_port, log, main, parse_args, private_copy)

BIN, CASES = parse_args(["droced", "droce_ctl", "compat_dir", "fault_pmd"])
ENV = {"LD_LIBRARY_PATH": BIN["compat_dir"]}
BOTTLENECK = ("rate=500,buffer=1048576,ecn_min=16384,ecn_max=131072,ecn_pmax=200000,"
              "ecn_dequeue=1")
# DCQCN on every priority (the reaction point is off by default), with the paper's alpha
# period: a 500 Mb/s link (doc/congestion.md, "Tuning")
CC_SLOW_LINK = "roce_rp_enable = 0-7\ndce_tcp_rtt = 55"
RUN_S = 4
LINE_MBPS = 100000      # the reaction point's max on a memif port (no link speed)


class BottleneckPair(DaemonPair):
    """A (memif server, the receiver) behind the bottleneck, B (memif client) sending."""

    def __init__(self, cc_a=CC_SLOW_LINK, cc_b=CC_SLOW_LINK):
        self.work = Workdir("congestion")
        memif = self.work.file("pair.memif")
        self.pmd = private_copy(BIN["fault_pmd"])
        memif_a = "net_memif0,role=server,id=0,socket=%s,bsize=8192" % memif
        self.a = Daemon(BIN["droced"], self.work, "a",
                        "net_fault0,port=net_memif0,%s" % BOTTLENECK, "10.99.0.1/24",
                        lcore=1, mode="poll", eal="-d %s --vdev=%s" % (self.pmd, memif_a),
                        extra_congestion=cc_a)
        self.b = Daemon(BIN["droced"], self.work, "b",
                        "net_memif0,role=client,id=0,socket=%s,bsize=8192" % memif,
                        "10.99.0.2/24", lcore=1, mode="poll", extra_congestion=cc_b)

    def teardown(self):
        shutil.rmtree(os.path.dirname(self.pmd), ignore_errors=True)


def write_bw_with_qps(pair):
    """ib_write_bw -q 4 -D RUN_S from B to A; droce-ctl qps of both daemons half way."""
    port = free_tcp_port()
    # 32 WRITEs of 64 KiB out per QP (perftest's -t): what is left at the end of -D drains
    # at the bottleneck's rate
    # -F: a clock calibration spoilt by a preemption would otherwise end perftest with exit
    # 1 ("Can't produce a report"); its figures are not used (perftest_report.py)
    common = ["ib_write_bw", "-F", "-d", "droce0", "-p", str(port), "-q", "4", "-s", "65536",
              "-t", "32", "-D", str(RUN_S)]
    srv = App(common, pair.a, 120, "server", env=ENV)
    time.sleep(0.5)
    cli = App(common + ["127.0.0.1"], pair.b, 120, "client", env=ENV)
    time.sleep(RUN_S / 2 + 1)
    qa = ctl_lines(BIN["droce_ctl"], pair.a, "qps")
    qb = ctl_lines(BIN["droce_ctl"], pair.b, "qps")
    try:
        rc_c = cli.wait(90)
        rc_s = srv.wait(30)
    except subprocess.TimeoutExpired:
        # what the QPs were doing, for the log: a stall of the rate machine shows here
        log("  stalled; A: %s\n  B: %s\n  client:\n%s\n  server:\n%s" %
            (ctl_lines(BIN["droce_ctl"], pair.a, "qps"), ctl_lines(BIN["droce_ctl"], pair.b, "qps"),
             cli.text(), srv.text()))
        cli.kill9()
        srv.kill9()
        raise
    check(rc_c == 0 and rc_s == 0, "ib_write_bw: server %s, client %s\n%s\n%s" %
          (rc_s, rc_c, srv.output, cli.output))
    # perftest's QPs (4) and its exchange's: every QP droced has, RC
    rc_a = [q for q in qa if q["type"] == "RC"]
    rc_b = [q for q in qb if q["type"] == "RC"]
    check(len(rc_a) >= 4 and len(rc_b) >= 4, "droce-ctl qps: %s / %s" % (qa, qb))
    return rc_a, rc_b


def num(q, k):
    return float(q[k])


def t_dcqcn():
    with BottleneckPair() as pair:
        qa, qb = write_bw_with_qps(pair)
    busy_a = [q for q in qa if num(q, "ce_rcvd") > 0]
    busy_b = [q for q in qb if num(q, "cnp_rcvd") > 0]
    check(len(busy_a) >= 4, "A's QPs got no CE-marked packets: %s" % qa)
    for q in busy_a:
        check(num(q, "cnp_sent") > 0, "A's QP %s: CE-marked packets, no CNP: %s" % (q["qpn"], q))
        check(num(q, "cnp_sent") <= num(q, "ce_rcvd"), "more CNPs than marks: %s" % q)
    check(len(busy_b) >= 4, "B's QPs got no CNP: %s" % qb)
    for q in busy_b:
        check(q["rp"] == "1", "B's QP %s: reaction point off: %s" % (q["qpn"], q))
        check(num(q, "rate_cuts") > 0, "B's QP %s: CNPs, no rate cut: %s" % (q["qpn"], q))
        check(num(q, "rate_kbps") / 1000 < LINE_MBPS, "B's QP %s: rate not below the line: %s" %
              (q["qpn"], q))
    log("  A: %s" % [(q["qpn"], q["ce_rcvd"], q["cnp_sent"]) for q in busy_a])
    log("  B: %s" % [(q["qpn"], q["rate_kbps"], q["cnp_rcvd"], q["rate_cuts"]) for q in busy_b])


def t_np_off():
    with BottleneckPair(cc_a=CC_SLOW_LINK + "\nroce_np_enable = none") as pair:
        qa, qb = write_bw_with_qps(pair)
    check(sum(num(q, "ce_rcvd") for q in qa) > 0, "no CE-marked packet reached A: %s" % qa)
    check(all(num(q, "cnp_sent") == 0 for q in qa), "A sent CNPs with its NP off: %s" % qa)
    check(all(num(q, "cnp_rcvd") == 0 and num(q, "rate_cuts") == 0 for q in qb),
          "B cut its rate without CNPs: %s" % qb)


def t_rp_off():
    with BottleneckPair(cc_b="roce_rp_enable = none\ndce_tcp_rtt = 55") as pair:
        qa, qb = write_bw_with_qps(pair)
    check(all(num(q, "ce_rcvd") == 0 for q in qa),
          "packets that are not ECN-capable were marked CE: %s" % qa)
    check(all(q["rp"] == "0" and num(q, "rate_cuts") == 0 for q in qb),
          "B's reaction point is on: %s" % qb)


CASE_LIST = [("dcqcn", t_dcqcn), ("np_off", t_np_off), ("rp_off", t_rp_off)]

if __name__ == "__main__":
    main(CASE_LIST, CASES)
