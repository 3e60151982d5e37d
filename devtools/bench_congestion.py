# SPDX-License-Identifier: BSD-3-Clause
"""devtools/bench-congestion.sh's runs and tables (see there). The congested runs are
test/perf/test_perf_congestion.py's, longer, and its analysis: convergence, then utilisation,
Jain's index, drops and queue per window."""

import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "perf"))
sys.path.insert(0, os.path.join(HERE, "..", "test", "integration"))
import test_perf_congestion as tc  # noqa: E402

RUNS = [0]


def perf(binary, opts, timeout):
    RUNS[0] += 1
    cmd = [binary, "--no-pci", "--no-huge", "--no-shconf", "--no-telemetry", "-l", "0", "-m",
           "1024", "--file-prefix=droce-bench-cc-%d-%d" % (os.getpid(), RUNS[0]),
           "--log-level=lib.eal:warning", "--"] + opts + ["--json"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout)
    if p.returncode != 0:
        sys.exit("bench-congestion: %s: exit %d\n%s" % (" ".join(cmd), p.returncode, p.stderr))
    return [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith("{")]


def congested(binary, secs, nqps, engines, dcqcn):
    opts = ["--mode", "send", "-s", str(tc.SIZE), "-q", str(nqps), "-D", str(secs),
            "--bottleneck", tc.BOTTLENECK, "--per-qp", str(tc.SAMPLE_MS)]
    opts += tc.CC if dcqcn else ["--dcqcn", "off"]
    if engines > 1:
        opts += ["--engines", str(engines)]
    lines = perf(binary, opts, secs * 10 + 60)
    cc = [ln for ln in lines if ln.get("figure") == "congestion"][0]
    bw = [ln for ln in lines if ln.get("figure") == "bw"][0]
    ws = tc.windows(cc)
    i = tc.converged_at(ws)
    after = ws[i:] if i is not None else ws[len(ws) // 2:]
    return {
        "conv": "%.0f ms" % ws[i][0] if i is not None else "never",
        "util": "%.1f %%" % (100 * sum(w[1] for w in after) / len(after)),
        "jain": "%.3f" % min(w[2] for w in after),
        "drops_after": sum(w[3] for w in after),
        "deepest": max(w[4] for w in after),
        "goodput": "%.3f" % bw["bw_average_gbps"],
        "drops": cc["bn_dropped"],
        "resent": cc["a_retransmits"],
    }


def main():
    binary, secs, rounds, baseline = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    print("| senders | DCQCN | converged at | utilisation after | Jain's index after (min) | "
          "drops after | deepest queue after | goodput (Gb/s) | drops / resent, whole run |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for nqps, engines, dcqcn in ((2, 1, True), (4, 1, True), (8, 1, True), (4, 2, True),
                                 (8, 2, True), (4, 1, False), (8, 1, False)):
        r = congested(binary, secs, nqps, engines, dcqcn)
        print("| %d QPs, %d engine%s | %s | %s | %s | %s | %d | %d B | %s | %d / %d |" %
              (nqps, engines, "s" if engines > 1 else "", "on" if dcqcn else "off", r["conv"],
               r["util"], r["jain"], r["drops_after"], r["deepest"], r["goodput"], r["drops"],
               r["resent"]), flush=True)
    print()
    rows = (("64 B SEND, 1 QP (Mpps)", "send", 64, 1), ("64 KiB WRITE, 4 QPs (Gb/s)", "write",
                                                         65536, 4))
    builds = [("--dcqcn on", binary, ["--dcqcn", "on"]), ("--dcqcn off", binary, ["--dcqcn", "off"])]
    if baseline:
        builds.append(("baseline", baseline, []))
    print("| figure | " + " | ".join(b[0] for b in builds) + " |")
    print("| --- |" + " --- |" * len(builds))
    for name, mode, size, qps in rows:
        got = {b[0]: [] for b in builds}
        for _ in range(rounds):
            for label, b, extra in builds:
                got[label].append(overhead(b, mode, size, qps, extra))
        print("| %s | " % name + " | ".join(
            "%.2f (%.2f-%.2f)" % (statistics.median(got[b[0]]), min(got[b[0]]),
                                  max(got[b[0]])) for b in builds) + " |", flush=True)


def overhead(binary, mode, size, qps, extra):
    opts = ["--mode", mode, "-s", str(size), "-q", str(qps), "-D", "2"] + extra
    bw = [ln for ln in perf(binary, opts, 120) if ln.get("figure") == "bw"][0]
    return bw["msg_rate_mpps"] if size == 64 else bw["bw_average_gbps"]


if __name__ == "__main__":
    main()
