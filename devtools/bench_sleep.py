# SPDX-License-Identifier: BSD-3-Clause
"""The Python part of devtools/bench-sleep.sh: each [engines] mode through each link, the
figures, and the table of doc/performance.md's "Sleeping engines" with the targets of
issue 15 marked. Environment: BUILD, PREFIX, WORK, NETNS, ITERS, SECS, IDLE, MODES,
LINKS (the shell's)."""

import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_daemons  # noqa: E402
from droce_harness import sh, tap_bridge  # noqa: E402

env = os.environ
build, prefix, work, netns = env["BUILD"], env["PREFIX"], env["WORK"], env["NETNS"]
iters, secs, idle_s = int(env["ITERS"]), env["SECS"], float(env["IDLE"])
modes, links = env["MODES"].split(","), env["LINKS"].split(",")
yields = [int(y) for y in env.get("YIELDS", "").split(",") if y != ""]
droced = os.path.join(build, "app/droced/droced")
bench = os.path.join(build, "devtools/droce-bench-droced")
compat = os.path.abspath(os.path.join(build, "drivers/compat"))
signal.signal(signal.SIGTERM, lambda s, f: sys.exit(143))

LINK_NAMES = {"memif": "2 droced, memif", "tap": "2 droced, tap", "one": "1 droced"}
IDLE_PORTS = (18600, 18601)     # the idle perftest servers' TCP ports


def daemons(link, mode):
    """The daemons of link in mode, started: (a, b), b = a for one daemon."""
    kw = {"mode": mode, "idle_sleep_us": 0 if mode == "poll" else 20}
    if link == "tap":
        sh("ip", "netns", "add", netns)
        sh("ip", "-n", netns, "link", "set", "lo", "up")
        ifs = ["%sa" % mode[:4], "%sb" % mode[:4]]
        a = bench_daemons.daemon(droced, work, prefix, mode + "ta", "net_tap0,iface=" + ifs[0],
                                 "10.97.0.1/24", mtu=1024, netns=netns, **kw)
        b = bench_daemons.daemon(droced, work, prefix, mode + "tb", "net_tap1,iface=" + ifs[1],
                                 "10.97.0.2/24", mtu=1024, netns=netns, **kw)
        bench_daemons.start(work, a, b)
        tap_bridge(netns, ifs, "sleepbr")
        return a, b
    sock = os.path.join(work, "%s-%s.memif" % (link, mode))
    a = bench_daemons.daemon(droced, work, prefix, mode + "ma",
                             "net_memif0,role=server,id=0,socket=%s,bsize=8192" % sock,
                             "10.99.0.1/24", **kw)
    bench_daemons.start(work, a)
    if link == "one":
        return a, a
    b = bench_daemons.daemon(droced, work, prefix, mode + "mb",
                             "net_memif0,role=client,id=0,socket=%s,bsize=8192" % sock,
                             "10.99.0.2/24", **kw)
    bench_daemons.start(work, b)
    return a, b


def idle_cpu(a, b):
    """% of one CPU each daemon used over idle_s seconds, two perftest servers connected
    (one through each daemon) and waiting for their clients."""
    srvs = []
    for d, port in ((a, IDLE_PORTS[0]), (b, IDLE_PORTS[1])):
        e = dict(d.env(), LD_LIBRARY_PATH=compat)
        srvs.append(subprocess.Popen(
            ["timeout", "--kill-after=5", str(int(idle_s) + 30), "ib_send_lat", "-d", "droce0",
             "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=e,
            start_new_session=True))
    try:
        time.sleep(1)
        ds = [a] if a is b else [a, b]
        t0 = [bench_daemons.cpu_seconds(d) for d in ds]
        time.sleep(idle_s)
        t1 = [bench_daemons.cpu_seconds(d) for d in ds]
        return max(100 * (y - x) / idle_s for x, y in zip(t0, t1))
    finally:
        for p in srvs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()


res = {}
for link in links:
    for mode in modes:
        print("--- %s, mode %s" % (LINK_NAMES[link], mode), flush=True)
        ds = ()
        try:
            a, b = daemons(link, mode)
            ds = (a,) if a is b else (b, a)
            r = {}
            lat = bench_daemons.perftest("lat", a, b, compat, iters)
            r["lat"], r["p99"] = (lat[2], lat[5]) if lat else (None, None)
            bw = bench_daemons.perftest("bw", a, b, compat, iters)
            r["bw"] = bw[1] if bw else None
            kv = bench_daemons.native(bench, "lat", iters * 10, secs, a, b)
            r["nlat"] = float(kv["half_rtt_us_median"]) if kv else None
            r["np99"] = float(kv["half_rtt_us_p99"]) if kv else None
            kv = bench_daemons.native(bench, "bw", iters, secs, a, b)
            r["nbw"] = float(kv["gbit_per_sec"]) if kv else None
            r["idle"] = idle_cpu(a, b)
            for y in yields:
                lat = bench_daemons.perftest("lat", a, b, compat, iters, poll_yield=y)
                r["y%d" % y] = (lat[2], lat[5]) if lat else None
            res[(link, mode)] = r
            print("  %s" % r, flush=True)
        finally:
            for d in ds:
                d.stop(expect_clean=False)
            if link == "tap":
                subprocess.run(["ip", "netns", "del", netns], stderr=subprocess.DEVNULL)


def fmt(x, digits=3):
    return "-" if x is None else "%.*g" % (digits, x)


# Issue 15's targets on 2 CPUs: (figure, link, test, bound).
TARGETS = {("lat", "2"): ("<=", 25.0), ("p99", "2"): ("<=", 100.0), ("lat", "1"): ("<=", 8.0),
           ("bw", "2"): (">=", 10.0), ("idle", "*"): ("<=", 1.0)}


def mark(fig, link, v):
    t = TARGETS.get((fig, "1" if link == "one" else "2")) or TARGETS.get((fig, "*"))
    if t is None or v is None:
        return ""
    ok = v <= t[1] if t[0] == "<=" else v >= t[1]
    return " (met)" if ok else " (missed)"


print()
print("perftest: Debian's ib_send_lat (64 B, half RTT) and ib_send_bw (64 KiB, 1 RC QP) "
      "through libibverbs.so.1; native: droce-bench-droced; idle: % of a CPU, the busier "
      "daemon, perftest servers connected")
hdr = "| link | mode | lat median us | lat p99 us | bw Gb/s | native lat / p99 us | " \
      "native bw Gb/s | idle CPU % |"
print(hdr)
print("|" + "---|" * 8)
for link in links:
    for mode in modes:
        r = res.get((link, mode), {})
        print("| %s | %s | %s%s | %s%s | %s%s | %s / %s | %s | %s%s |" % (
            LINK_NAMES[link], mode, fmt(r.get("lat")), mark("lat", link, r.get("lat")),
            fmt(r.get("p99")), mark("p99", link, r.get("p99")) if link != "one" else "",
            fmt(r.get("bw")), mark("bw", link, r.get("bw")) if link != "one" else "",
            fmt(r.get("nlat")), fmt(r.get("np99")), fmt(r.get("nbw")),
            fmt(r.get("idle"), 2), mark("idle", link, r.get("idle"))))
if yields:
    print()
    print("ib_send_lat median / p99 (us) by DROCE_POLL_YIELD (libdroce's sched_yield after so "
          "many empty polls; default 16)")
    print("| link | mode | " + " | ".join("%d" % y for y in yields) + " |")
    print("|" + "---|" * (2 + len(yields)))
    for link in links:
        for mode in modes:
            r = res.get((link, mode), {})
            print("| %s | %s | " % (LINK_NAMES[link], mode) + " | ".join(
                "-" if r.get("y%d" % y) is None else "%s / %s" % (fmt(r["y%d" % y][0]),
                                                                  fmt(r["y%d" % y][1]))
                for y in yields) + " |")
print("load now: " + open("/proc/loadavg").read().split(" ", 3)[0])
