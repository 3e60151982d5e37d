# SPDX-License-Identifier: BSD-3-Clause
"""Processes for the integration tests: droced daemons (alone, a memif pair, a veth pair in
two network namespaces) and the applications that run through them.

Every process gets a hard timeout; everything started is stopped, and every socket,
hugepage file, DPDK runtime directory and network namespace made is removed, on success,
failure or an exception (use the classes as context managers).
"""

import glob
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

DAEMON_START_TIMEOUT = 30
DAEMON_STOP_TIMEOUT = 20


def log(msg):
    print(msg, flush=True)


class TestFailure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise TestFailure(msg)


class Workdir:
    """A temporary directory for configs, sockets and logs; removed at exit unless
    DROCE_KEEP=1."""

    def __init__(self, tag):
        self.path = tempfile.mkdtemp(prefix="droce-%s-" % tag, dir="/tmp")

    def file(self, name):
        return os.path.join(self.path, name)

    def close(self):
        if os.environ.get("DROCE_KEEP") != "1":
            shutil.rmtree(self.path, ignore_errors=True)


class Daemon:
    """One droced. port is the [port] section body (device, addresses); netns runs it in a
    network namespace; eal: more EAL arguments (a --vdev a device wraps, a -d driver)."""

    def __init__(self, droced, work, name, device, ipv4, mtu=4096, lcore=1, idle_sleep_us=50,
                 netns=None, extra_port="", limits="", asan=False, eal="", mode=None,
                 idle_spin_us=None, early_retransmit=None, extra_congestion="", max_s=900):
        """max_s: the hard timeout of each start (a soak runs for an hour)."""
        self.droced = droced
        self.max_s = max_s
        self.work = work
        self.name = name
        self.prefix = "droce-it-%d-%s" % (os.getpid(), name)
        self.socket = work.file("%s.sock" % name)
        self.config = work.file("%s.ini" % name)
        self.logfile = work.file("%s.log" % name)
        self.netns = netns
        self.proc = None
        self.asan = asan
        with open(self.config, "w") as f:
            f.write("[eal]\nargs = --file-prefix=%s --no-pci%s\n\n" %
                    (self.prefix, " " + eal if eal else ""))
            f.write("[port %s]\ndevice = %s\nipv4 = %s\nmtu = %d\n%s\n" %
                    (name, device, ipv4, mtu, extra_port))
            f.write("[engines]\nlcores = %d\nidle_sleep_us = %d\n" % (lcore, idle_sleep_us))
            if mode is not None:
                f.write("mode = %s\n" % mode)     # poll, adaptive, interrupt
            if idle_spin_us is not None:
                f.write("idle_spin_us = %d\n" % idle_spin_us)
            if early_retransmit is not None:
                f.write("early_retransmit = %s\n" % ("true" if early_retransmit else "false"))
            f.write("\n")
            f.write("[control]\nsocket = %s\n" % self.socket)
            if limits:
                f.write("\n[limits]\n%s\n" % limits)
            if extra_congestion:
                f.write("\n[congestion]\n%s\n" % extra_congestion)

    def start(self, timeout=DAEMON_START_TIMEOUT):
        cmd = ["timeout", "--kill-after=5", str(self.max_s), self.droced, "--config",
               self.config]
        if self.netns:
            cmd = ["ip", "netns", "exec", self.netns] + cmd
        self.out = open(self.logfile, "w")
        self.proc = subprocess.Popen(cmd, stdout=self.out, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise TestFailure("droced %s exited with %s while starting:\n%s" %
                                  (self.name, self.proc.returncode, self.log_text()))
            if "droced: ready" in self.log_text() and os.path.exists(self.socket):
                return self
            time.sleep(0.05)
        raise TestFailure("droced %s not ready after %d s:\n%s" %
                          (self.name, timeout, self.log_text()))

    def log_text(self):
        try:
            with open(self.logfile, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def env(self, base=None):
        e = dict(os.environ if base is None else base)
        e["DROCE_SOCKET"] = self.socket
        return e

    def stop(self, expect_clean=True):
        """SIGTERM; returns droced's exit status (None if it had to be killed)."""
        if self.proc is None:
            return None
        rc = None
        if self.proc.poll() is None:
            # The timeout wrapper forwards SIGTERM to droced.
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                rc = self.proc.wait(DAEMON_STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
                rc = None
        else:
            rc = self.proc.returncode
        self.out.close()
        self.proc = None
        left = self.leftovers()
        self.cleanup_files()
        if expect_clean:
            check(rc == 0, "droced %s exited with %s on SIGTERM:\n%s" %
                  (self.name, rc, self.log_text()[-3000:]))
            # A clean stop removes droced's hugepage files, DPDK runtime dir and socket.
            check(not left, "droced %s left behind: %s" % (self.name, " ".join(left)))
        return rc

    def kill9(self):
        """SIGKILL droced (a crash: nothing of its own clean-up runs). Returns the
        CLOCK_MONOTONIC time of the kill, comparable with what the applications print."""
        check(self.proc is not None and self.proc.poll() is None,
              "droced %s is not running" % self.name)
        at = time.monotonic()
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.out.close()
        self.proc = None
        return at

    def leftovers(self):
        left = glob.glob("/dev/hugepages/%s*" % self.prefix)
        for p in ("/var/run/dpdk/%s" % self.prefix, self.socket):
            if os.path.exists(p):
                left.append(p)
        return left

    def cleanup_files(self):
        for p in glob.glob("/dev/hugepages/%s*" % self.prefix):
            os.unlink(p)
        shutil.rmtree("/var/run/dpdk/%s" % self.prefix, ignore_errors=True)
        if os.path.exists(self.socket):
            os.unlink(self.socket)


def ctl_lines(droce_ctl, daemon, what):
    """droce-ctl's one-line-per-object output (ports, qps): a dict of strings per line."""
    r = subprocess.run(["timeout", "10", droce_ctl, "--socket", daemon.socket, what],
                       capture_output=True, text=True)
    check(r.returncode == 0, "droce-ctl %s failed: %s%s" % (what, r.stdout, r.stderr))
    # shlex: a value with spaces (a client's command line) comes in double quotes
    return [dict(f.split("=", 1) for f in shlex.split(line)) for line in r.stdout.splitlines()
            if "=" in line]


def ctl(droce_ctl, daemon, what="status"):
    """droce-ctl's key=value output as a dict of strings."""
    r = subprocess.run(["timeout", "10", droce_ctl, "--socket", daemon.socket, what],
                       capture_output=True, text=True)
    check(r.returncode == 0, "droce-ctl %s failed: %s%s" % (what, r.stdout, r.stderr))
    out = {}
    for line in r.stdout.splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


class ChildOutput:
    """A file a child process writes its output to while the test reads it: the child
    writes through an open file of its own (O_APPEND), the test reads through another.
    (One open file shared has one offset: the reader's seek(0) while the child wrote sent
    the child's next line to the start of the file, over what it had printed, and
    test_cm_wire's comm_est lost two lines: doc/reliability.md.) The file is unlinked at
    once; both open files keep it. Start the child with popen()."""

    def __init__(self, directory=None):
        fd, path = tempfile.mkstemp(dir=directory, prefix="out-")
        try:
            self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
            self._r = open(path, errors="replace")
        finally:
            os.close(fd)
            os.unlink(path)

    def popen(self, argv, stderr_only=False, **kw):
        """subprocess.Popen(argv, **kw) with its stdout and stderr written here
        (stderr_only: its stderr, its stdout to /dev/null); the test's copy of the file is
        closed once the child has its own."""
        if stderr_only:
            kw.update(stdout=subprocess.DEVNULL, stderr=self.fd)
        else:
            kw.update(stdout=self.fd, stderr=subprocess.STDOUT)
        try:
            return subprocess.Popen(argv, **kw)
        finally:
            self._close_fd()

    def _close_fd(self):
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def text(self):
        """What the child wrote so far."""
        self._r.seek(0)
        return self._r.read()

    def mtime(self):
        """The wall-clock time (time.time()) of the child's last write."""
        return os.fstat(self._r.fileno()).st_mtime

    def close(self):
        self._close_fd()
        self._r.close()


class App:
    """An application process run through a daemon (DROCE_SOCKET), with a hard timeout."""

    def __init__(self, argv, daemon, timeout=120, name=None, netns=None, env=None):
        """env: variables added to the daemon's (LD_LIBRARY_PATH for unmodified programs)."""
        self.name = name or os.path.basename(argv[0])
        cmd = ["timeout", "--kill-after=5", str(timeout)] + list(argv)
        if netns:
            cmd = ["ip", "netns", "exec", netns] + cmd
        # Output goes to a file, not a pipe: a chatty application never blocks on a full
        # pipe, and text() can be read while it runs.
        self.out = ChildOutput(daemon.work.path)
        self.proc = self.out.popen(cmd, text=True, env=dict(daemon.env(), **(env or {})),
                                   start_new_session=True)
        self.output = None

    def text(self):
        """What the application printed so far."""
        return self.out.text()

    def last_output_time(self):
        """The wall-clock time (time.time()) of the application's last write to its output:
        with line-buffered output, when it printed its last line (an error, before exiting)."""
        return self.out.mtime()

    def wait(self, timeout=None):
        """Exit status; raises subprocess.TimeoutExpired after timeout seconds."""
        self.proc.wait(timeout)
        self.output = self.text()
        return self.proc.returncode

    def kill9(self):
        """SIGKILL the application itself (not its timeout wrapper's group leader only)."""
        os.killpg(self.proc.pid, signal.SIGKILL)

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def run_pair(server_argv, client_argv, srv_daemon, cli_daemon, timeout=120,
             srv_netns=None, cli_netns=None, start_delay=0.3, env=None):
    """Runs a server and a client; raises unless both exit 0. Returns their outputs."""
    srv = App(server_argv, srv_daemon, timeout, "server", srv_netns, env)
    time.sleep(start_delay)
    cli = App(client_argv, cli_daemon, timeout, "client", cli_netns, env)
    rc_c = cli.wait()
    if rc_c != 0:
        srv.stop()
    rc_s = srv.wait()
    if rc_s != 0 or rc_c != 0:
        raise TestFailure("server exit %s, client exit %s\n--- server:\n%s\n--- client:\n%s" %
                          (rc_s, rc_c, srv.output, cli.output))
    return srv.output, cli.output


class DaemonPair:
    """What the pairs of daemons share: stop b, then a (for memif, b is the client: a memif
    end must not see its peer go while closing), then the pair's own clean-up (namespaces)
    and the work directory; a daemon that did not stop cleanly fails the test."""

    def teardown(self):
        pass

    def setup(self):
        """What must exist before the daemons start (links, namespaces): none here."""

    def __enter__(self):
        """setup(), then a, then b (memif: a is the server); a pair that fails to start is
        closed."""
        try:
            self.setup()
            self.a.start()
            self.b.start()
        except BaseException:
            self.close(False)
            raise
        return self

    def close(self, clean=True):
        errs = []
        for d in (self.b, self.a):
            try:
                d.stop(expect_clean=clean)
            except TestFailure as e:
                errs.append(str(e))
        self.teardown()
        self.work.close()
        if errs:
            raise TestFailure("\n".join(errs))

    def __exit__(self, et, ev, tb):
        self.close(clean=et is None)
        return False


class MemifPair(DaemonPair):
    """Two droced on one machine joined by net_memif (A is the server: started first)."""

    # With ipv6=True: fixed MACs, these IPv6 addresses, and each the other's static
    # neighbour (droce has no IPv6 neighbour discovery yet).
    MAC_A, MAC_B = "02:00:00:99:00:01", "02:00:00:99:00:02"
    IP6_A, IP6_B = "fd00:99::1", "fd00:99::2"

    def __init__(self, droced, tag="memif", mtu=4096, asan=False, ipv6=False, **kw):
        """kw: the Daemons' further arguments (mode, idle_sleep_us, ...)."""
        self.work = Workdir(tag)
        memif = self.work.file("pair.memif")
        mac_a = mac_b = extra_a = extra_b = ""
        if ipv6:
            mac_a, mac_b = ",mac=" + self.MAC_A, ",mac=" + self.MAC_B
            extra_a = "ipv6 = %s/64\nneighbour = %s %s" % (self.IP6_A, self.IP6_B, self.MAC_B)
            extra_b = "ipv6 = %s/64\nneighbour = %s %s" % (self.IP6_B, self.IP6_A, self.MAC_A)
        self.a = Daemon(droced, self.work, "a",
                        "net_memif0,role=server,id=0,socket=%s,bsize=8192%s" % (memif, mac_a),
                        "10.99.0.1/24", mtu=mtu, lcore=1, extra_port=extra_a, **kw)
        self.b = Daemon(droced, self.work, "b",
                        "net_memif0,role=client,id=0,socket=%s,bsize=8192%s" % (memif, mac_b),
                        "10.99.0.2/24", mtu=mtu, lcore=1, extra_port=extra_b, **kw)
        self.ip_a, self.ip_b = "10.99.0.1", "10.99.0.2"


def sh(*cmd):
    subprocess.run(list(cmd), check=True, timeout=30)


def tap_bridge(ns, ifs, bridge):
    """Joins the kernel ends of net_tap ports (interfaces ifs of namespace ns, which exist
    once their droced started) by a new bridge. Each end gets a MAC of its own (02:00:00:98:
    0i:01): the PMD's default gives the kernel end the port's MAC, and a bridge delivers a
    frame for one of its ports' own MACs locally instead of forwarding it."""
    sh("ip", "-n", ns, "link", "add", bridge, "type", "bridge")
    for i, ifn in enumerate(ifs):
        sh("ip", "-n", ns, "link", "set", ifn, "address", "02:00:00:98:0%d:01" % (i + 1))
        sh("ip", "-n", ns, "link", "set", ifn, "master", bridge, "up")
    sh("ip", "-n", ns, "link", "set", bridge, "up")


class TapPair(DaemonPair):
    """Two droced on net_tap in one network namespace, their taps joined by a bridge there:
    a link whose PMD has rx interrupts (net_memif and net_af_packet have none), joined by
    tap_bridge. RoCE MTU 1024: a tap's Ethernet MTU is 1500."""

    def __init__(self, droced, tag="tap", **kw):
        """kw: the Daemons' further arguments (mode, idle_sleep_us, ...)."""
        self.work = Workdir(tag)
        sfx = "%d" % os.getpid()
        self.ns = "droce-tap-" + sfx
        self.ifs = ["dta%s" % sfx[-8:], "dtb%s" % sfx[-8:]]
        self.bridge = "dbr%s" % sfx[-8:]
        self.ip_a, self.ip_b = "10.98.0.1", "10.98.0.2"
        self.a = Daemon(droced, self.work, "a", "net_tap0,iface=%s" % self.ifs[0],
                        self.ip_a + "/24", mtu=1024, lcore=1, netns=self.ns, **kw)
        self.b = Daemon(droced, self.work, "b", "net_tap1,iface=%s" % self.ifs[1],
                        self.ip_b + "/24", mtu=1024, lcore=1, netns=self.ns, **kw)

    def __enter__(self):
        try:
            sh("ip", "netns", "add", self.ns)
            sh("ip", "-n", self.ns, "link", "set", "lo", "up")
            self.a.start()
            self.b.start()
            tap_bridge(self.ns, self.ifs, self.bridge)
        except BaseException:
            self.close(False)
            raise
        return self

    def teardown(self):
        subprocess.run(["ip", "netns", "del", self.ns], stderr=subprocess.DEVNULL, timeout=30)


def engine_counters(daemon):
    """What a stopped droced's engines did: {counter: total over its engines}, from the
    "engine N counters:" lines it logs at its stop."""
    total = {}
    for line in daemon.log_text().splitlines():
        if " counters:" not in line or "engine " not in line:
            continue
        for kv in line.split(" counters:", 1)[1].split():
            if "=" in kv:
                k, v = kv.split("=", 1)
                total[k] = total.get(k, 0) + int(v)
    return total


# net_af_packet's default frame (2048 bytes) holds no 4096-byte RoCE payload: a frame of
# 4352 bytes does (its packet room, 4352 minus the tpacket header, also fits droced's
# 4352-byte mbufs, which af_packet checks). The PMD walks the ring as if frames were
# contiguous, so a block must hold whole frames with no gap: 69632 = 17 pages = 16 frames.
VETH_DEVARGS = ",framesz=4352,blocksz=69632,framecnt=512"


class VethPair(DaemonPair):
    """Two network namespaces joined by a veth pair, a droced in each on net_af_packet."""

    def __init__(self, droced, tag="veth", mtu=4096, devargs="", on_link_up=None,
                 device_a=None, veth_mtu=9000):
        self.work = Workdir(tag)
        sfx = "%d" % os.getpid()
        self.ns = ["droce-a-" + sfx, "droce-b-" + sfx]
        self.ifs = ["vda%s" % sfx[-8:], "vdb%s" % sfx[-8:]]
        self.ip_a, self.ip_b = "10.99.1.1", "10.99.1.2"
        self.mtu = mtu
        # devargs: extra net_af_packet options (frame and block sizes, see VETH_DEVARGS).
        # on_link_up(pair): called once the veth link is up, before the daemons start.
        self.on_link_up = on_link_up
        # device_a: a's device instead of net_af_packet, "%s" standing for its veth end.
        self.veth_mtu = veth_mtu
        self.a = Daemon(droced, self.work, "a",
                        (device_a % self.ifs[0]) if device_a else
                        "net_af_packet0,iface=%s%s" % (self.ifs[0], devargs),
                        self.ip_a + "/24", mtu=mtu, lcore=1, netns=self.ns[0])
        self.b = Daemon(droced, self.work, "b",
                        "net_af_packet0,iface=%s%s" % (self.ifs[1], devargs),
                        self.ip_b + "/24", mtu=mtu, lcore=1, netns=self.ns[1])

    def setup(self):
        for ns in self.ns:
            sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", self.ifs[0], "netns", self.ns[0], "type", "veth",
           "peer", "name", self.ifs[1], "netns", self.ns[1])
        for ns, ifn in zip(self.ns, self.ifs):
            # Room for a 4096-byte RoCE payload and its headers (by default).
            sh("ip", "-n", ns, "link", "set", ifn, "mtu", str(self.veth_mtu), "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        if self.on_link_up is not None:
            self.on_link_up(self)

    def teardown(self):
        for ns in self.ns:
            subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL, timeout=30)


def private_copy(path):
    """path copied into a directory no other user can write to, nor any of its parents:
    EAL refuses to load a plugin (-d) from under a world-writable directory such as /tmp,
    where a clone of the tree may well be. Returns the copy (its directory is the
    caller's to remove)."""
    for base in ("/run", "/var/cache"):
        if os.path.isdir(base) and os.access(base, os.W_OK):
            d = tempfile.mkdtemp(prefix="droce-pmd-", dir=base)
            shutil.copy(path, d)
            return os.path.join(d, os.path.basename(path))
    raise TestFailure("no directory to load the net_fault driver from (/run, /var/cache)")


def free_tcp_port():
    """A TCP port nothing on the host's loopback uses now: for the out-of-band exchange of
    programs such as fi_pingpong, so that two runs of a test at once (meson test --repeat)
    cannot connect to each other's server."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse_args(names):
    """The test script's arguments: the paths of the programs in names (in that order),
    then optional test case names to run. Returns ({name: path}, [case...])."""
    argv = sys.argv[1:]
    if len(argv) < len(names):
        sys.stderr.write("usage: %s %s [CASE...]\n" %
                         (os.path.basename(sys.argv[0]), " ".join(n.upper() for n in names)))
        sys.exit(2)
    paths = dict(zip(names, (os.path.abspath(a) for a in argv[:len(names)])))
    return paths, argv[len(names):]


# What the engines really hold (counted where objects are made and freed), beside droced's
# own tables: a client torn down in droced's tables but not in the engines shows here.
ENGINE_OBJECTS = ("engine_domains", "engine_qps", "engine_cqs", "engine_srqs", "engine_mrs",
                  "engine_ahs")


def expect_consistent(st):
    """droced's per-client tables and the engines agree on what exists."""
    pairs = (("clients", "engine_domains"), ("qps", "engine_qps"), ("cqs", "engine_cqs"),
             ("srqs", "engine_srqs"), ("mrs", "engine_mrs"), ("ahs", "engine_ahs"))
    bad = {a: (st.get(a), st.get(b)) for a, b in pairs if st.get(a) != st.get(b)}
    check(not bad, "droced's tables and the engines disagree (table, engine): %s" % bad)


def expect_idle(droce_ctl, daemon):
    """droce-ctl status of daemon shows no client and no object left."""
    st = ctl(droce_ctl, daemon)
    busy = {k: st.get(k) for k in ("clients", "pds", "mrs", "cqs", "srqs", "qps", "ahs",
                                   "mr_bytes", "timer_qps", "mcast_groups", "mcast_attached") +
            ENGINE_OBJECTS if st.get(k) != "0"}
    check(not busy, "droced %s not idle: %s" % (daemon.name, busy))
    return st


def run_cases(cases, only):
    """Runs the named functions (name, fn) of one fixture, each reported on a line, going on
    after a failure; raises TestFailure naming the ones that failed. only: names to run
    (all when empty)."""
    failed = []
    for name, fn in cases:
        if only and name not in only:
            continue
        t0 = time.monotonic()
        try:
            fn()
            log("ok   %s (%.1f s)" % (name, time.monotonic() - t0))
        except Exception as e:  # report and go on with the next case
            failed.append(name)
            log("FAIL %s (%.1f s): %s" % (name, time.monotonic() - t0, e))
    if failed:
        raise TestFailure("failed: " + " ".join(failed))


def main(cases, argv=None):
    """Runs named test functions (name, fn); prints one line each; exit 1 on any failure."""
    failed = 0
    ran = 0
    only = sys.argv[1:] if argv is None else argv
    for name, fn in cases:
        if only and name not in only:
            continue
        ran += 1
        t0 = time.monotonic()
        try:
            fn()
            log("ok   %s (%.1f s)" % (name, time.monotonic() - t0))
        except Exception as e:  # report and go on with the next case
            failed += 1
            log("FAIL %s (%.1f s): %s" % (name, time.monotonic() - t0, e))
    if ran == 0:
        log("FAIL no test case selected")
        failed = 1
    sys.exit(1 if failed else 0)
