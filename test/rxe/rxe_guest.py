# SPDX-License-Identifier: BSD-3-Clause
"""Linux's soft-RoCE (rdma_rxe) in a QEMU guest, the kernel's RoCEv2 as a peer for droce.

test/rxe/build-guest.sh builds the guest; test/rxe/guest-init is its /init and serves the
agent this module talks to over a serial port. The network, all in namespace
droce-rxe-<pid>:

    guest eth0 10.77.0.2 --- tap0 --+ br0 10.77.0.1 (kernel; TCP exchanges of host programs
                                    |                run with ip netns exec)
          droced 10.77.0.3 --- vdroce === vbr  (veth; vdroce has no kernel address, no ARP,
                                                no IPv6: droced drives it with net_af_packet)

    with RxeLink() as link, RxeGuest(link, rxe_dir, pcap=path) as guest:
        guest.info                  # {'ip', 'mac', 'gid_index', 'gid', 'mtu', 'boot_s'}
        rc, out = guest.run("ibv_devinfo -d rxe0", timeout=30)
        job = guest.spawn("ibv_rc_pingpong -d rxe0 -g 1 -m 4096", timeout=60)
        ...                         # droced on link.droced_if, the client through it
        rc, out = job.wait()

Everything has a hard limit: each job (killed at its timeout), the boot, and the VM as a
whole (QEMU runs under timeout(1)). QEMU is killed and the namespace and temporary files
are removed on close, on an exception and at exit (atexit; cleanup_on_sigterm() makes
SIGTERM an exit too); QEMU also dies with the process that started it, even by SIGKILL,
and the namespace of such a run is removed by the next RxeLink.

QEMU runs with KVM when KVM really runs a guest here (tried once per host boot, the
verdict kept in rxe_dir/accel), else with TCG; $DROCE_RXE_ACCEL=kvm|tcg decides instead.
"""

import atexit
import base64
import glob
import itertools
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from droce_harness import ChildOutput, TestFailure, log  # noqa: E402

QEMU = "qemu-system-x86_64"
QBOOT = "/usr/share/qemu/qboot.rom"
BOOT_TIMEOUT = 60
VM_DEADLINE = 900
KVM_PROBE_TIMEOUT = 3
# An END follows a KILL at once; this is for a guest slowed down by a busy host.
KILL_GRACE = 10
# A poweroff takes a fraction of a second; QEMU is killed after this.
POWEROFF_TIMEOUT = 3


def default_rxe_dir():
    """$DROCE_RXE_DIR, else build-rxe at the top of the tree (devtools/setup.sh builds it)."""
    top = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    return os.environ.get("DROCE_RXE_DIR") or os.path.normpath(os.path.join(top, "build-rxe"))


def _sh(*cmd):
    r = subprocess.run(list(cmd), capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise TestFailure("%s: %s" % (" ".join(cmd), (r.stdout + r.stderr).strip()))


class RxeLink:
    """The namespace, bridge, tap and veth pair the guest and droced meet on."""

    HOST_IP = "10.77.0.1"
    GUEST_IP = "10.77.0.2"
    DROCE_IP = "10.77.0.3"
    PREFIX = 24
    # Room for a 4096-byte RoCE payload with its headers, whatever MTU the guest takes.
    MTU = 9000

    _count = itertools.count()

    def __init__(self):
        n = next(RxeLink._count)
        self.ns = "droce-rxe-%d" % os.getpid() + ("-%d" % n if n else "")
        # Names inside a namespace of our own cannot collide with anyone's.
        self.bridge = "br0"
        self.tap = "tap0"
        self.droced_if = "vdroce"
        self._veth_bridge = "vbr"
        self._taps = []
        self._made = False

    def __enter__(self):
        try:
            self._make()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, et, ev, tb):
        self.close()
        return False

    def _ip(self, *args):
        _sh("ip", "-n", self.ns, *args)

    @staticmethod
    def _remove_stale():
        """Deletes the namespaces and guest directories of runs killed before they could
        (SIGKILL): both are named after the pid."""
        r = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30)
        for line in r.stdout.splitlines():
            m = re.match(r"(droce-rxe-(\d+)(-\d+)?)( |$)", line)
            if m and not os.path.exists("/proc/" + m.group(2)):
                subprocess.run(["ip", "netns", "del", m.group(1)], stderr=subprocess.DEVNULL,
                               timeout=30)
        for d in glob.glob("/tmp/droce-rxe-*-*"):
            m = re.match(r"/tmp/droce-rxe-(\d+)-", d)
            if m and not os.path.exists("/proc/" + m.group(1)):
                shutil.rmtree(d, ignore_errors=True)

    def _make(self):
        self._remove_stale()
        _sh("ip", "netns", "add", self.ns)
        self._made = True
        # Before any interface exists, so that none takes an IPv6 address: the wire carries
        # ARP, IPv4 and what the tests send, nothing else.
        # (Fails only where the kernel has no IPv6 at all.)
        subprocess.run(["ip", "netns", "exec", self.ns, "sysctl", "-q", "-w",
                        "net.ipv6.conf.all.disable_ipv6=1",
                        "net.ipv6.conf.default.disable_ipv6=1"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
        mtu = str(self.MTU)
        self._ip("link", "set", "lo", "up")
        self._ip("link", "add", self.bridge, "type", "bridge", "stp_state", "0",
                 "forward_delay", "0")
        # Persistent, so it is in the bridge before QEMU opens it.
        self._ip("tuntap", "add", "dev", self.tap, "mode", "tap")
        self._ip("link", "add", self._veth_bridge, "type", "veth", "peer", "name",
                 self.droced_if)
        for port in (self.tap, self._veth_bridge):
            self._ip("link", "set", port, "mtu", mtu, "master", self.bridge, "up")
        self._ip("link", "set", self.bridge, "mtu", mtu, "up")
        self._ip("addr", "add", "%s/%d" % (self.HOST_IP, self.PREFIX), "dev", self.bridge)
        # droced answers ARP for 10.77.0.3 and owns UDP 4791 there: the kernel must not.
        self._ip("link", "set", self.droced_if, "arp", "off", "mtu", mtu, "up")

    def add_tap(self, name, queues=1):
        """Another tap in the bridge, for another guest (test/nic); queues > 1 makes it a
        multi-queue tap, which QEMU needs for a virtio-net with that many queue pairs."""
        argv = ["tuntap", "add", "dev", name, "mode", "tap"]
        if queues > 1:
            argv.append("multi_queue")
        self._ip(*argv)
        self._taps.append(name)
        self._ip("link", "set", name, "mtu", str(self.MTU), "master", self.bridge, "up")
        return name

    def netns_cmd(self, argv):
        """argv run in the namespace (a host program talking to the guest over TCP)."""
        return ["ip", "netns", "exec", self.ns] + list(argv)

    def close(self):
        if not self._made:
            return
        self._made = False
        # Deleted one by one, as a process still in the namespace would keep them alive.
        for dev in self._taps + [self.tap, self._veth_bridge, self.bridge]:
            subprocess.run(["ip", "-n", self.ns, "link", "del", dev],
                           stderr=subprocess.DEVNULL, timeout=30)
        subprocess.run(["ip", "netns", "del", self.ns], stderr=subprocess.DEVNULL, timeout=30)


class PeerSilent(TestFailure):
    """A requester gave up with a retry error while its peer, a guest, answered nothing at
    all, not even the heartbeat's echoes, for the whole retry window: the guest was off
    the host's CPUs (TCG on a loaded machine), and giving up is what 9.7.6.1.3 asks of any
    requester then."""


class Heartbeat:
    """ICMP echoes from the bridge's address to each of ips every 20 ms (ping, at a high
    priority, so that a loaded host does not delay it), for as long as the heartbeat runs.
    A guest's kernel answers them in the softirq where rxe takes its RoCE packets and
    droced's engine shares its vCPU: a gap in one address's replies is a time that guest
    answered nothing, whatever droce did. It tells a guest stalled by its host (a TCG vCPU
    kept off a loaded host's CPUs for half a second) from a droce fault when a requester
    runs out of retries (test_rxe_interop.py, test/nic/test_nic_guests.py)."""

    INTERVAL_S = 0.02
    LIMIT_S = 900

    def __init__(self, link, ips, directory=None):
        self.started = time.time()
        self.outs, self.procs = {}, []
        try:
            for ip in ips:
                out = self.outs[ip] = ChildOutput(directory)
                self.procs.append(out.popen(
                    link.netns_cmd(["timeout", str(self.LIMIT_S), "nice", "-n", "-10",
                                    "ping", "-D", "-n", "-i", str(self.INTERVAL_S), ip]),
                    start_new_session=True))
        except BaseException:
            self.close()
            raise

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        self.close()
        return False

    def replies(self, ip):
        """The times (time.time()) ip's echo replies came, in order."""
        return [float(m.group(1)) for m in
                re.finditer(r"^\[(\d+\.\d+)\] \d+ bytes from", self.outs[ip].text(), re.M)]

    def silence_before(self, t, ip=None):
        """How long before t ip (the only address, by default) had answered no echo."""
        before = [r for r in self.replies(ip or next(iter(self.outs))) if r <= t]
        return t - (before[-1] if before else self.started)

    def longest_silence(self, t0, t1):
        """(seconds, ip): the longest time between t0 and t1 some address answered no echo."""
        worst = (0.0, None)
        for ip in self.outs:
            times = [t0] + [r for r in self.replies(ip) if t0 < r < t1] + [t1]
            gap = max(b - a for a, b in zip(times, times[1:]))
            worst = max(worst, (gap, ip), key=lambda w: w[0])
        return worst

    def close(self):
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        self.procs = []
        for out in self.outs.values():
            out.close()


def _kvm_works(vmlinux, cache):
    """Whether KVM runs this kernel. A /dev/kvm that opens is not enough: under some
    hypervisors the guest then hangs before its first instruction's output, so a kernel is
    booted to its first console line. The verdict is kept in cache for this host boot."""
    with open("/proc/sys/kernel/random/boot_id") as f:
        boot_id = f.read().strip()
    try:
        with open(cache) as f:
            seen, verdict = f.read().split()
        if seen == boot_id:
            return verdict == "kvm"
    except (OSError, ValueError):
        pass
    ok = False
    if os.access("/dev/kvm", os.R_OK | os.W_OK):
        proc = subprocess.Popen(
            ["timeout", "--kill-after=1", str(KVM_PROBE_TIMEOUT), QEMU, "-M", "pc",
             "-accel", "kvm", "-nodefaults", "-no-user-config", "-display", "none",
             "-no-reboot", "-m", "256", "-kernel", vmlinux,
             "-append", "console=ttyS0 earlyprintk=ttyS0 panic=-1",
             "-serial", "stdio", "-monitor", "none"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            start_new_session=True)
        out = b""
        deadline = time.monotonic() + KVM_PROBE_TIMEOUT
        while b"Linux version" not in out and time.monotonic() < deadline:
            r, _, _ = select.select([proc.stdout], [], [], 0.1)
            if r:
                chunk = os.read(proc.stdout.fileno(), 4096)
                if not chunk:
                    break
                out += chunk
        ok = b"Linux version" in out
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
    try:
        tmp = "%s.%d" % (cache, os.getpid())
        with open(tmp, "w") as f:
            f.write("%s %s\n" % (boot_id, "kvm" if ok else "tcg"))
        os.replace(tmp, cache)
    except OSError:
        pass
    return ok


class Job:
    """A shell command running in the guest (RxeGuest.spawn)."""

    def __init__(self, guest, jid, cmd, timeout):
        self.guest = guest
        self.id = jid
        self.cmd = cmd
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.rc = None
        self.output = None
        self.timed_out = False
        self._done = threading.Event()

    def _end(self, rc, output):
        self.rc = rc
        self.output = output
        self._done.set()

    def done(self):
        return self._done.is_set()

    def wait(self, timeout=None):
        """(rc, output: stdout and stderr) once the job ended. At the job's own timeout it
        is killed (rc 137, timed_out set); after timeout seconds of waiting, raises
        subprocess.TimeoutExpired and the job goes on."""
        now = time.monotonic()
        until = self.deadline if timeout is None else min(self.deadline, now + timeout)
        if not self._done.wait(max(0.0, until - now)):
            if time.monotonic() < self.deadline:
                raise subprocess.TimeoutExpired(self.cmd, timeout)
            self.timed_out = True
            self.kill()
            self._done.wait(KILL_GRACE)
        if self.rc is None:
            raise TestFailure("guest job %d (%s) has no end: %s\n%s" %
                              (self.id, self.cmd, self.guest.failure or "no END after KILL",
                               self.guest.console_tail()))
        return self.rc, self.output

    def kill(self):
        """SIGKILL the job's process group; its END (rc 137) follows."""
        if not self._done.is_set():
            self.guest._send("KILL %d" % self.id)


class RxeGuest:
    """The guest on link's tap: 1 vCPU, mem_mb of memory, eth0 at ip (default 10.77.0.2/24)
    with MTU mtu (4200 makes rxe's active MTU 4096), its MAC made from the address. pcap:
    a file QEMU writes every frame of the guest's NIC to. deadline: seconds after which
    QEMU is killed whatever happens."""

    _live = set()

    def __init__(self, link, rxe_dir=None, ip=None, mtu=4200, pcap=None, mem_mb=1024,
                 deadline=VM_DEADLINE, boot_timeout=BOOT_TIMEOUT):
        self.link = link
        self.rxe_dir = os.path.abspath(rxe_dir or default_rxe_dir())
        self.cidr = ip or "%s/%d" % (link.GUEST_IP, link.PREFIX)
        self.ip = self.cidr.split("/")[0]
        o = [int(x) for x in self.ip.split(".")]
        self.mac = "52:54:00:%02x:%02x:%02x" % (o[1], o[2], o[3])
        self.mtu = mtu
        self.pcap = os.path.abspath(pcap) if pcap else None
        self.mem_mb = mem_mb
        self.deadline = deadline
        self.boot_timeout = boot_timeout
        self.info = None
        self.accel = None
        self.failure = None
        self.work = None
        self.proc = None
        self._sock = None
        self._reader = None
        self._send_lock = threading.Lock()
        self._jobs = {}
        self._ids = itertools.count(1)
        self._pongs = {}
        self._ready = threading.Event()
        self._console = ""

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, et, ev, tb):
        self.close()
        return False

    def _file(self, name):
        return os.path.join(self.work, name)

    def _qemu_argv(self, accel, sock):
        kernel = os.path.join(self.rxe_dir, "vmlinux")
        append = "console=ttyS0 quiet panic=-1 mitigations=off rxe.ip=%s rxe.mtu=%d" % (
            self.cidr, self.mtu)
        argv = [QEMU, "-M", "pc", "-accel", accel, "-m", str(self.mem_mb), "-smp", "1",
                "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
                # The ELF kernel boots through PVH, with no decompression in the guest.
                "-kernel", kernel, "-initrd", os.path.join(self.rxe_dir, "initramfs.gz"),
                "-append", append] + self._serial_argv(sock) + [
                "-monitor", "none",
                # vnet_hdr=off: frames cross the tap (and reach the capture) as on a wire,
                # with no virtio-net header in front and no checksum left to offload.
                "-netdev", "tap,id=n0,ifname=%s,script=no,downscript=no,vnet_hdr=off" %
                self.link.tap,
                # romfile=: no iPXE ROM to load; the guest never boots from the network.
                "-device", "virtio-net-pci,netdev=n0,mac=%s,romfile=" % self.mac]
        if os.path.exists(QBOOT):
            # qboot starts the kernel sooner than SeaBIOS.
            argv += ["-bios", QBOOT]
        if self.pcap:
            argv += ["-object", "filter-dump,id=dump0,netdev=n0,file=%s" % self.pcap]
        return argv

    def _serial_argv(self, sock):
        """The kernel's console to a file (ttyS0), the agent's socket (ttyS1)."""
        return ["-chardev", "file,id=con,path=%s" % self._file("console.log"),
                "-serial", "chardev:con",
                "-chardev", "socket,id=agent,path=%s" % sock, "-serial", "chardev:agent"]

    def start(self):
        """Boots the guest (once) and waits for its agent; returns info: ip, mac, gid_index
        (int), gid (32 hex digits), mtu (eth0's, int), boot_s (QEMU start to ready).
        Call it from a thread that lives as long as the guest (the main thread): QEMU is
        killed when that thread ends."""
        if self.info is not None:
            return self.info
        for f in ("vmlinux", "initramfs.gz"):
            if not os.path.exists(os.path.join(self.rxe_dir, f)):
                raise TestFailure("no %s in %s: run test/rxe/build-guest.sh %s" %
                                  (f, self.rxe_dir, self.rxe_dir))
        self.accel = os.environ.get("DROCE_RXE_ACCEL") or (
            "kvm" if _kvm_works(os.path.join(self.rxe_dir, "vmlinux"),
                                os.path.join(self.rxe_dir, "accel")) else "tcg")
        self.work = tempfile.mkdtemp(prefix="droce-rxe-%d-" % os.getpid(), dir="/tmp")
        sock_path = self._file("agent.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            # Listening before QEMU starts: it connects at once, and nothing the guest
            # writes is lost to an unconnected socket.
            listener.bind(sock_path)
            listener.listen(1)
            t0 = time.monotonic()
            # QEMU goes with this process even when it is killed: setpriv makes the
            # ip -> timeout process die with this thread, and QEMU with timeout.
            argv = ["setpriv", "--pdeathsig", "KILL"] + self.link.netns_cmd(
                ["timeout", "--kill-after=5", str(self.deadline),
                 "setpriv", "--pdeathsig", "KILL"] + self._qemu_argv(self.accel, sock_path))
            with open(self._file("qemu.log"), "w") as out:
                self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                             stderr=subprocess.STDOUT, start_new_session=True)
            RxeGuest._live.add(self)
            boot_deadline = t0 + self.boot_timeout
            while self._sock is None:
                if self.proc.poll() is not None or time.monotonic() > boot_deadline:
                    raise TestFailure("QEMU did not connect to the agent socket:\n%s" %
                                      self._qemu_log())
                if select.select([listener], [], [], 0.1)[0]:
                    self._sock, _ = listener.accept()
        finally:
            listener.close()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._ready.wait(max(0.0, boot_deadline - time.monotonic()))
        if self.info is None:
            raise TestFailure("guest not ready after %.0f s (%s, %s):\n%s%s" %
                              (time.monotonic() - t0, self.accel,
                               self.failure or "no AGENT-READY", self.console_tail(),
                               self._qemu_log()))
        self.info["boot_s"] = time.monotonic() - t0
        return self.info

    def _qemu_log(self):
        try:
            with open(self._file("qemu.log"), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def _read(self):
        """Reader thread: dispatches the agent's lines until the guest goes."""
        buf = b""
        while True:
            try:
                chunk = self._sock.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                break
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                line = line.decode("ascii", "replace").strip()
                try:
                    self._line(line)
                except (ValueError, IndexError, KeyError):
                    log("rxe guest: bad line from the agent: %r" % line[:200])
        self.failure = self.failure or "the guest went away (QEMU exited)"
        self._ready.set()
        for job in list(self._jobs.values()):
            job._done.set()
        for ev in list(self._pongs.values()):
            ev.set()

    def _line(self, line):
        verb, _, rest = line.partition(" ")
        if verb == "END":
            parts = rest.split(" ")
            job = self._jobs.pop(int(parts[0]), None)
            if job is not None:
                text = base64.b64decode(parts[2] if len(parts) > 2 else "")
                job._end(int(parts[1]), text.decode("utf-8", "replace"))
        elif verb == "PONG":
            ev = self._pongs.get(rest)
            if ev is not None:
                ev.set()
        elif verb == "AGENT-READY":
            self.info = self._ready_info(dict(kv.split("=", 1) for kv in rest.split()))
            self._ready.set()
        elif verb == "AGENT-FAIL":
            self.failure = "guest-init failed: " + rest
            self._ready.set()
        elif line:
            log("rxe guest: unexpected line from the agent: %r" % line[:200])

    def _ready_info(self, info):
        """info of the agent's AGENT-READY line, its key=value pairs."""
        for k in ("gid_index", "mtu"):
            info[k] = int(info[k])
        return info

    def _send(self, line):
        if self._sock is None:
            raise TestFailure("the guest is not running")
        with self._send_lock:
            try:
                self._sock.sendall(line.encode("ascii") + b"\n")
            except OSError as e:
                raise TestFailure("cannot talk to the guest: %s" % e)

    def qemu_pid(self):
        """QEMU's own process: the end of the chain of single children from the process
        start() ran (timeout, then setpriv, which becomes QEMU)."""
        pid = self.proc.pid
        while True:
            with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
                kids = f.read().split()
            if not kids:
                break
            pid = int(kids[0])
        with open("/proc/%d/comm" % pid) as f:
            comm = f.read().strip()
        if not comm.startswith("qemu-system"):
            raise TestFailure("the guest's last process %d is %s, not QEMU" % (pid, comm))
        return pid

    def pause(self, seconds):
        """Stops QEMU, every thread of it (vCPU, the NIC's backend, the capture), for
        seconds: a peer that answers nothing at all, as a TCG guest whose vCPU a loaded
        host keeps off its CPUs. Returns (stopped, resumed) in time.time()."""
        pid = self.qemu_pid()
        stopped = time.time()
        os.kill(pid, signal.SIGSTOP)
        try:
            time.sleep(seconds)
        finally:
            os.kill(pid, signal.SIGCONT)
        return stopped, time.time()

    def spawn(self, cmd, timeout=60):
        """Starts shell text cmd in the guest (busybox sh, cwd /tmp, in a process group of
        its own, with $RXE_DEV, $RXE_IP and $RXE_GID_INDEX); returns its Job. The job is
        killed at timeout seconds; what it leaves running in its process group when it
        ends is killed then."""
        if self.info is None or self.failure:
            raise TestFailure("the guest is not running: %s" % (self.failure or "not started"))
        job = Job(self, next(self._ids), cmd, timeout)
        self._jobs[job.id] = job
        self._send("RUN %d %s" % (job.id, base64.b64encode(cmd.encode()).decode("ascii")))
        return job

    def run(self, cmd, timeout=60):
        """(rc, output) of shell text cmd run in the guest (see spawn)."""
        return self.spawn(cmd, timeout).wait()

    def ping(self, timeout=10):
        """Whether the agent answers within timeout seconds."""
        token = "%d" % next(self._ids)
        ev = self._pongs[token] = threading.Event()
        try:
            self._send("PING " + token)
            return ev.wait(timeout) and not self.failure
        finally:
            self._pongs.pop(token, None)

    def console_text(self):
        """What the guest's kernel and init printed on the console (ttyS0)."""
        if self.work is None:
            return self._console
        try:
            with open(self._file("console.log"), errors="replace") as f:
                return f.read()
        except OSError:
            return self._console

    def console_tail(self, lines=30):
        text = self.console_text().splitlines()[-lines:]
        return "--- guest console:\n%s\n" % "\n".join(text)

    def close(self):
        """Powers the guest off (kills QEMU if it does not go); removes its files."""
        if self.proc is not None:
            if (self.proc.poll() is None and self._sock is not None and not self.failure
                    and not _terminating):
                try:
                    self._send("POWEROFF")
                    self.proc.wait(POWEROFF_TIMEOUT)
                except (TestFailure, subprocess.TimeoutExpired):
                    pass
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            self.proc = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._reader is not None:
            self._reader.join(5)
        RxeGuest._live.discard(self)
        if self.work is not None:
            self._console = self.console_text()
            if os.environ.get("DROCE_KEEP") != "1":
                shutil.rmtree(self.work, ignore_errors=True)
            self.work = None


@atexit.register
def _close_all():
    for guest in list(RxeGuest._live):
        guest.close()


_terminating = False


def cleanup_on_sigterm():
    """Makes SIGTERM (meson's timeout) an exit through the context managers and atexit, so
    that no namespace outlives the test. Guests are then killed, not powered off: meson
    sends SIGKILL half a second after SIGTERM."""
    def on_sigterm(*_):
        global _terminating
        _terminating = True
        sys.exit(128 + signal.SIGTERM)
    signal.signal(signal.SIGTERM, on_sigterm)
