# SPDX-License-Identifier: BSD-3-Clause
"""devtools/bench-capture.sh's runs: Debian's ib_send_bw (64 B, one RC QP) through two
droced joined by net_memif, round after round of four configurations, each round
starting at the next one: the droced of the commit before captures and QP counters existed
(BASE), this tree's with the capture's tests compiled out (NOTAP), this tree's with no
capture (off), and with droce-ctl capture running on A (on: every frame, 128 bytes each,
to /dev/shm). Medians and ratios in the same run."""

import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_daemons as bd  # noqa: E402

BASE, NOTAP, NEW = os.environ["BASE"], os.environ["NOTAP"], os.environ["NEW"]
PREFIX, WORK = os.environ["PREFIX"], os.environ["WORK"]
ROUNDS, ITERS = int(os.environ["ROUNDS"]), int(os.environ["ITERS"])


def pair(build, tag):
    memif = os.path.join(WORK, "%s.memif" % tag)
    droced = os.path.join(build, "app/droced/droced")
    a = bd.daemon(droced, WORK, PREFIX, tag + "a",
                  "net_memif0,role=server,id=0,socket=%s,bsize=8192" % memif, "10.99.0.1/24")
    b = bd.daemon(droced, WORK, PREFIX, tag + "b",
                  "net_memif0,role=client,id=0,socket=%s,bsize=8192" % memif, "10.99.0.2/24",
                  lcore=1)
    bd.start(WORK, a, b)
    return a, b


def msg_rate(build, capture):
    """ib_send_bw's MsgRate (Mpps) through a fresh pair of build's droced, or None."""
    tag = "c%d" % int(time.monotonic() * 1000 % 1000000)
    a, b = pair(build, tag)
    cap = None
    try:
        if capture:
            out = os.path.join("/dev/shm", "%s-%s.pcapng" % (PREFIX, tag))
            cap = subprocess.Popen(["timeout", "300", os.path.join(build, "app/droce-ctl/droce-ctl"),
                                    "--socket", a.socket, "capture", "-w", out, "-s", "128",
                                    "-d", "240"], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True)
            time.sleep(0.5)
        args = ["ib_send_bw", "-F", "-d", "droce0", "-s", "64", "-n", str(ITERS)]
        rows = bd.pair_run(args, args + ["127.0.0.1"], a, b,
                           {"LD_LIBRARY_PATH": os.path.join(build, "drivers/compat")})
        if rows is None:
            return None
        res = [m.group(3).split() for m in bd.PERFTEST_ROW.finditer(rows)]
        return float(res[-1][2]) if res else None
    finally:
        if cap is not None:
            cap.send_signal(2)
            _, err = cap.communicate(timeout=60)
            sys.stdout.write("    capture: %s" % err.strip().splitlines()[-1] + "\n")
            for f in os.listdir("/dev/shm"):
                if f.startswith(PREFIX):
                    os.unlink(os.path.join("/dev/shm", f))
        for d in (b, a):
            d.stop(expect_clean=False)


def main():
    configs = (("base", BASE, False), ("notap", NOTAP, False), ("off", NEW, False),
               ("on", NEW, True))
    got = {name: [] for name, _, _ in configs}
    for r in range(ROUNDS):
        # Each round starts at the next configuration: none always runs after another.
        for name, build, capture in configs[r % len(configs):] + configs[:r % len(configs)]:
            v = msg_rate(build, capture)
            print("round %d %-4s %s Mpps" % (r + 1, name, "failed" if v is None else "%.3f" % v),
                  flush=True)
            if v is not None:
                got[name].append(v)
    med = {k: statistics.median(v) for k, v in got.items() if v}
    print()
    print("| configuration | ib_send_bw 64 B MsgRate, median of %d (Mpps) | ratio |" % ROUNDS)
    print("| --- | ---: | ---: |")
    for name, label, ref in (("base", "before captures and QP counters", None),
                             ("notap", "no capture tests in the engines", "base"),
                             ("off", "capture off", "notap"), ("on", "capture on", "off")):
        if name in med:
            ratio = "%.3f of %s" % (med[name] / med[ref], ref) if ref in med else "-"
            print("| %s | %.3f | %s |" % (label, med[name], ratio))


if __name__ == "__main__":
    main()
