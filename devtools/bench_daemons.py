# SPDX-License-Identifier: BSD-3-Clause
"""droced daemons for the devtools/bench-*.sh scripts: test/integration's harness Daemon,
in the shell's temporary directory and under the shell's EAL file prefix, each started
daemon's process group recorded in <work>/pgids, so that bench-common.sh's clean-up finds
what a killed run leaves (daemons, /var/run/dpdk and /dev/hugepages files)."""

import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "test", "integration"))
import droce_harness as h  # noqa: E402


class Work:
    """The shell's temporary directory, as the harness's Workdir (removed by the shell)."""

    def __init__(self, path):
        self.path = path

    def file(self, name):
        return os.path.join(self.path, name)

    def close(self):
        pass


def daemon(droced, work, prefix, name, device, ipv4, **kw):
    """A configured, not yet started droced named name (kw: the harness Daemon's, such as
    idle_sleep_us and limits), its EAL file prefix <prefix>-<name>."""
    d = h.Daemon(droced, Work(work), name, device, ipv4, **kw)
    old, d.prefix = d.prefix, "%s-%s" % (prefix, name)
    with open(d.config) as f:
        text = f.read().replace(old, d.prefix)
    with open(d.config, "w") as f:
        f.write(text)
    return d


def start(work, *ds):
    """Starts the daemons, recording each one's process group for the shell."""
    for d in ds:
        d.start()
        with open(os.path.join(work, "pgids"), "a") as f:
            f.write("%d\n" % d.proc.pid)


RUN_TIMEOUT = 180
LAT_SIZE, BW_SIZE = 64, 65536      # droce-bench-droced's sizes (bench_droced.c)
# A perftest result row: #bytes, #iterations, then the figures.
PERFTEST_ROW = re.compile(r"^[ \t]*(\d+)[ \t]+(\d+)((?:[ \t]+[\d.]+)+)[ \t]*$", re.M)


def pair_run(argv_srv, argv_cli, srv_d, cli_d, env=None, timeout=RUN_TIMEOUT):
    """Server, then client; the client's output, or None (with the reason on stderr)."""
    def start(argv, d):
        e = dict(d.env(), **(env or {}))
        return subprocess.Popen(["timeout", "--kill-after=5", str(timeout)] + argv,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=e, start_new_session=True)
    srv = start(argv_srv, srv_d)
    time.sleep(0.5)
    cli = start(argv_cli, cli_d)
    out_c, _ = cli.communicate()
    if cli.returncode != 0 and srv.poll() is None:
        os.killpg(srv.pid, signal.SIGKILL)
    out_s, _ = srv.communicate()
    if cli.returncode != 0 or srv.returncode != 0:
        sys.stderr.write("%s: client exit %s, server exit %s\n%s\n%s\n" % (
            argv_cli[0], cli.returncode, srv.returncode, out_c[-1500:], out_s[-1500:]))
        return None
    return out_c


def native(bench, mode, iters, secs, a, b):
    """droce-bench-droced lat or bw between a and b: its key=value result, or None."""
    args = [bench, mode, "-n", str(iters), "-d", str(secs)]
    out = pair_run(args, args + ["127.0.0.1"], a, b)
    if out is None:
        return None
    return dict(x.split("=", 1) for x in out.strip().splitlines()[-1].split() if "=" in x)


def perftest(mode, a, b, compat, iters, poll_yield=None, port=None):
    """Debian's ib_send_lat (64 B) or ib_send_bw (64 KiB) through droce's libibverbs.so.1
    (compat: its directory): the figures of its last result row, or None. ib_send_lat:
    t_min, t_max, t_typical (the median), t_avg, t_stdev, p99, p99.9 (us); ib_send_bw:
    BW peak, BW average (Gb/s), MsgRate."""
    env = {"LD_LIBRARY_PATH": compat}
    if poll_yield is not None:
        env["DROCE_POLL_YIELD"] = str(poll_yield)
    if mode == "lat":
        args = ["ib_send_lat", "-d", "droce0", "-s", str(LAT_SIZE), "-n", str(iters)]
    else:
        args = ["ib_send_bw", "-d", "droce0", "-s", str(BW_SIZE), "-n", str(iters),
                "--report_gbits"]
    if port is not None:
        args += ["-p", str(port)]
    out = pair_run(args, args + ["127.0.0.1"], a, b, env)
    if out is None:
        return None
    rows = [m.group(3).split() for m in PERFTEST_ROW.finditer(out)]
    if not rows:
        sys.stderr.write("%s: no result row\n%s\n" % (args[0], out[-1500:]))
        return None
    return [float(x) for x in rows[-1]]


def cpu_seconds(d):
    """CPU time (user + system, s) droced d has used so far: its process under the
    timeout wrapper the harness starts it with."""
    with open("/proc/%d/task/%d/children" % (d.proc.pid, d.proc.pid)) as f:
        pid = int(f.read().split()[0])
    with open("/proc/%d/stat" % pid) as f:
        st = f.read().rsplit(")", 1)[1].split()
    return (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")
