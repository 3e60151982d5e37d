#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""DCQCN against a congested link (doc/congestion.md): N senders into one receiver through
drivers/net/fault's bottleneck queue, in droce-perf over its internal net_ring pair. Host
a's N QPs (N = 2, 4, 8; on one engine, or spread over two with --engines 2) stream 4 KiB
SENDs to host b for RUN_S seconds; b's port is the bottleneck: a 1 Gb/s switch port with a
1 MiB buffer that marks ECN-capable packets CE from 16 KiB to 128 KiB of queue (marking
as packets leave, as egress-marking switches do). droce-perf samples what each QP
delivered and the bottleneck's counters every SAMPLE_MS (--per-qp).

In WINDOW_MS windows this test finds the convergence time: the start of the first window
that has utilisation >= 90 % of the drain rate (the frame bytes out of the bottleneck)
and from which every window to the end has Jain's fairness index >= 0.9 over the QPs'
goodput and no drop. With DCQCN it must converge within CONVERGE_MAX_MS; from there to
the end the utilisation must be >= 90 % (over that whole stretch: a window in which this
process lost the CPU shows as a dip and the next as a burst) and the queue below the
buffer. Without DCQCN (--dcqcn off) the same run must show what DCQCN prevents:
tail drops in every stretch of the run, go-back-N retransmissions, and less than
half the goodput.

The reaction point's parameters are ConnectX's but for the alpha update period: 55 us,
the DCQCN paper's K, instead of mlx5's 1 us, which suits links 100 times faster than this
one (doc/congestion.md, "Tuning"). Prints one line per run with the figures
doc/performance.md keeps.

    test_perf_congestion.py DROCE_PERF [CASE...]
"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "integration"))
from droce_harness import TestFailure, check, log  # noqa: E402

RATE_MBPS = 1000
BOTTLENECK = ("rate=%d,buffer=1048576,ecn_min=16384,ecn_max=131072,ecn_pmax=200000,"
              "ecn_dequeue=1" % RATE_MBPS)
BUFFER = 1048576
CC = ["--dcqcn", "on", "--cc", "dce_tcp_rtt=55"]
RUN_S = 2
SAMPLE_MS = 5
WINDOW_MS = 50
CONVERGE_MAX_MS = 500
UTIL_MIN = 0.90
JAIN_MIN = 0.90
SIZE = 4096
TIMEOUT = 90
RUNS = 0


def eal():
    global RUNS
    RUNS += 1
    return ["--no-pci", "--no-huge", "--no-shconf", "--no-telemetry", "-l", "0", "-m", "1024",
            "--file-prefix=droce-cc-test-%d-%d" % (os.getpid(), RUNS),
            "--log-level=lib.eal:warning"]


def droce_perf(perf, opts):
    cmd = [perf] + eal() + ["--", "--mode", "send", "-s", str(SIZE), "-D", str(RUN_S),
                            "--bottleneck", BOTTLENECK, "--per-qp", str(SAMPLE_MS),
                            "--json"] + opts
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=TIMEOUT)
    check(p.returncode == 0, "%s: exit %d\n%s" % (" ".join(cmd), p.returncode, p.stderr))
    lines = [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith("{")]
    cc = [ln for ln in lines if ln.get("figure") == "congestion"]
    bw = [ln for ln in lines if ln.get("figure") == "bw"]
    check(len(cc) == 1 and len(bw) == 1, "%s: no congestion or bw figure:\n%s" %
          (" ".join(cmd), p.stdout))
    return bw[0], cc[0]


def jain(x):
    s, sq = sum(x), sum(v * v for v in x)
    return s * s / (len(x) * sq) if sq > 0 else 1.0


def windows(cc):
    """Per WINDOW_MS window: (start ms, utilisation, Jain's index, drops, deepest queue)."""
    s = cc["samples"]
    t = [ns / 1e6 for ns in s["t_ns"]]
    q = s["qp_msgs"]
    w = WINDOW_MS // s["period_ms"]
    out = []
    for k in range(w, len(t), w):
        secs = (t[k] - t[k - w]) / 1e3
        util = (s["bn_bytes"][k] - s["bn_bytes"][k - w]) * 8 / secs / 1e6 / RATE_MBPS
        goodput = [(m[k] - m[k - w]) * cc["size"] * 8 / secs for m in q]
        out.append((t[k - w], util, jain(goodput), s["bn_dropped"][k] - s["bn_dropped"][k - w],
                    max(s["bn_depth"][k - w:k + 1])))
    check(len(out) >= 10, "only %d windows of %d ms" % (len(out), WINDOW_MS))
    return out


def converged_at(ws):
    for i in range(len(ws)):
        if ws[i][1] >= UTIL_MIN and all(j >= JAIN_MIN and d == 0 for _, _, j, d, _ in ws[i:]):
            return i
    return None


def with_dcqcn(perf, nqps, engines):
    opts = ["-q", str(nqps)] + CC + (["--engines", str(engines)] if engines > 1 else [])
    bw, cc = droce_perf(perf, opts)
    name = "%d QPs on %d engine(s)" % (nqps, engines)
    check(len(cc["qps"]) == nqps, "%s: %d QPs reported" % (name, len(cc["qps"])))
    check(sorted({q["engine"] for q in cc["qps"]}) == list(range(engines)),
          "%s: QPs on engines %s" % (name, [q["engine"] for q in cc["qps"]]))
    ws = windows(cc)
    i = converged_at(ws)
    check(i is not None, "%s: never converged (util, Jain, drops per window): %s" %
          (name, [(round(u, 3), round(j, 3), d) for _, u, j, d, _ in ws]))
    t_conv = ws[i][0]
    check(t_conv <= CONVERGE_MAX_MS, "%s: converged only at %.0f ms" % (name, t_conv))
    after = ws[i:]
    util = sum(u for _, u, _, _, _ in after) / len(after)
    check(util >= UTIL_MIN, "%s: utilisation %.3f after converging" % (name, util))
    fair = min(j for _, _, j, _, _ in after)
    deepest = max(dq for _, _, _, _, dq in after)
    check(deepest < BUFFER, "%s: the queue reached the buffer after converging" % name)
    # every QP was throttled by CNPs, and the notification point answered marks
    for q in cc["qps"]:
        check(q["cnp_rcvd"] > 0 and q["rate_cuts"] > 0 and q["peer_cnp_sent"] > 0,
              "%s: QP %d saw no CNP or cut: %s" % (name, q["qpn"], q))
    check(cc["a_cnp_rcvd"] == cc["b_cnp_sent"], "%s: CNPs sent %d, received %d" %
          (name, cc["b_cnp_sent"], cc["a_cnp_rcvd"]))
    log("  %s: converged at %.0f ms; after: utilisation %.1f %%, Jain >= %.3f, deepest queue "
        "%d B, no drop; whole run: goodput %.3f Gb/s, %d dropped, %d resent, Jain %.4f" %
        (name, t_conv, util * 100, fair, deepest, bw["bw_average_gbps"], cc["bn_dropped"],
         cc["a_retransmits"], cc["jain"]))
    return bw["bw_average_gbps"]


def without_dcqcn(perf, nqps):
    bw, cc = droce_perf(perf, ["-q", str(nqps), "--dcqcn", "off"])
    name = "%d QPs, DCQCN off" % nqps
    ws = windows(cc)
    # not one of them ECN-capable: nothing marked, no CNP
    check(cc["bn_marked"] == 0 and cc["b_cnp_sent"] == 0, "%s: marks or CNPs: %s" %
          (name, {k: cc[k] for k in ("bn_marked", "b_cnp_sent")}))
    dropping = sum(1 for _, _, _, d, _ in ws if d > 0)
    check(dropping >= len(ws) // 2, "%s: drops in only %d of %d windows" %
          (name, dropping, len(ws)))
    check(cc["a_retransmits"] > cc["bn_dropped"], "%s: %d drops, only %d packets resent" %
          (name, cc["bn_dropped"], cc["a_retransmits"]))
    log("  %s: goodput %.3f Gb/s, %d dropped, %d resent, drops in %d of %d windows, "
        "Jain %.4f" % (name, bw["bw_average_gbps"], cc["bn_dropped"], cc["a_retransmits"],
                       dropping, len(ws), cc["jain"]))
    return bw["bw_average_gbps"]


def main():
    if len(sys.argv) < 2:
        sys.stderr.write(__doc__)
        sys.exit(2)
    perf = sys.argv[1]
    only = sys.argv[2:]
    cases = [("dcqcn_2", lambda: with_dcqcn(perf, 2, 1)),
             ("dcqcn_4", lambda: with_dcqcn(perf, 4, 1)),
             ("dcqcn_8", lambda: with_dcqcn(perf, 8, 1)),
             ("dcqcn_4_two_engines", lambda: with_dcqcn(perf, 4, 2)),
             ("dcqcn_8_two_engines", lambda: with_dcqcn(perf, 8, 2)),
             ("no_dcqcn_4", lambda: without_dcqcn(perf, 4))]
    goodput = {}
    failed = []
    for name, fn in cases:
        if only and name not in only:
            continue
        try:
            goodput[name] = fn()
            log("ok   %s" % name)
        except (TestFailure, subprocess.TimeoutExpired) as e:
            log("FAIL %s: %s" % (name, e))
            failed.append(name)
    if "dcqcn_4" in goodput and "no_dcqcn_4" in goodput:
        ratio = goodput["no_dcqcn_4"] / goodput["dcqcn_4"]
        log("  4 QPs: goodput without DCQCN is %.2f of DCQCN's" % ratio)
        if ratio >= 0.5:
            log("FAIL DCQCN does not pay: without it %.2f of its goodput" % ratio)
            failed.append("ratio")
    if failed:
        log("failed: %s" % " ".join(failed))
        sys.exit(1)


if __name__ == "__main__":
    main()
