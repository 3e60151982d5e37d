# SPDX-License-Identifier: BSD-3-Clause
"""droced in a QEMU guest on an emulated PCI NIC, driven by a real DPDK PMD (doc/nics.md).

The guest is the soft-RoCE guest's kernel and initramfs (test/rxe/build-guest.sh) with this
build's droce on top (test/nic/build-overlay.sh), booted with guest.role=droced: its
guest-init binds every network PCI device to vfio-pci (behind QEMU's emulated Intel IOMMU,
as on a server) or uio_pci_generic and serves the same agent as the rxe guest. droced then
runs from a configuration naming the NIC's PCI address, as a user writes it.

    with RxeLink() as link:
        g = NicGuest(link, link.add_tap("tapv"), "virtio", initrd, ip="10.77.0.11/24")
        with g:
            g.droced_start()                 # [port nic0] device = 0000:00:03.0
            rc, out = g.run(g.droce_env + "ibv_devinfo -d droce0")
            g.set_link(False)                # QEMU's set_link on the NIC's netdev

NICS maps each kind to its QEMU device and the DPDK PMD that drives it.
"""

import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "rxe"))
from rxe_guest import QEMU, QBOOT, RxeGuest, TestFailure  # noqa: E402

# The NIC's PCI address in the guest: slot 3 of the q35 root bus, as given to QEMU.
NIC_BDF = "0000:00:03.0"
DROCED_SOCKET = "/run/droce/droced.sock"
DROCED_START_TIMEOUT = 60

# kind -> (QEMU device, its extra properties, DPDK driver name)
NICS = {
    # Modern only (disable-legacy): VIRTIO_F_IOMMU_PLATFORM, which a device behind an IOMMU
    # needs so that its DMA is translated, is refused on a transitional device.
    "virtio": ("virtio-net-pci", "disable-legacy=on", "net_virtio"),
    "e1000e": ("e1000e", "", "net_e1000_em"),
    "vmxnet3": ("vmxnet3", "", "net_vmxnet3"),
}


class NicGuest(RxeGuest):
    """A guest whose one PCI NIC (kind: a key of NICS) is on tap, bound to bind
    (vfio-pci or uio_pci_generic) for droced at ip. queues > 1: a multi-queue virtio-net
    (the tap must be multi-queue too: RxeLink.add_tap(name, queues)). smp: vCPUs (droced's
    control thread and engines share them through EAL's --lcores)."""

    def __init__(self, link, tap, kind, initrd, ip, side_tap=None, side_ip=None,
                 bind="vfio-pci", queues=1, rss=False, smp=1, mem_mb=1024, hugepages=256,
                 pcap=None, **kw):
        super().__init__(link, ip=ip, pcap=pcap, mem_mb=mem_mb, **kw)
        # The kernel's own NIC (virtio-net at 00:04.0, eth0 at side_ip) for the TCP
        # exchanges of the programs run on droce, as a server's management port.
        self.side_tap = side_tap
        self.side_ip = side_ip
        if kind not in NICS:
            raise ValueError("unknown NIC kind %r" % kind)
        self.tap = tap
        self.kind = kind
        self.initrd = os.path.abspath(initrd)
        self.bind = bind
        self.queues = queues
        self.rss = rss
        self.smp = smp
        self.hugepages = hugepages
        self.pmd = NICS[kind][2]
        self.droced_job = None
        # droce's libraries before rdma-core's, droced's socket: rdma-core's programs on droce.
        self.droce_env = "LD_LIBRARY_PATH=/opt/droce/lib DROCE_SOCKET=%s " % DROCED_SOCKET

    def _ready_info(self, info):
        return info

    def _nic_device(self):
        dev, extra, _ = NICS[self.kind]
        props = [dev, "netdev=n0", "mac=%s" % self.mac, "romfile=", "bus=pcie.0", "addr=0x3"]
        if extra:
            props.append(extra)
        if self.kind == "virtio":
            if self.bind == "vfio-pci":
                props.append("iommu_platform=on")
            if self.queues > 1:
                # A vector per queue and one for the configuration (DPDK's virtio guide).
                props += ["mq=on", "vectors=%d" % (2 * self.queues + 2)]
                if self.rss:
                    props.append("rss=on")
        return ",".join(props)

    def _qemu_argv(self, accel, sock):
        kernel = os.path.join(self.rxe_dir, "vmlinux")
        append = ("console=ttyS0 quiet panic=-1 mitigations=off guest.role=droced "
                  "droce.bind=%s droce.nics=%s hugepagesz=2M hugepages=%d" %
                  (self.bind, NIC_BDF, self.hugepages))
        if self.side_ip:
            append += " droce.side_ip=%s" % self.side_ip
        machine = "q35"
        if self.bind == "vfio-pci":
            # vfio's type1 IOMMU driver wants interrupt remapping, which under KVM needs
            # the split irqchip; iommu=pt leaves kernel drivers (none here) unremapped.
            append += " intel_iommu=on iommu=pt"
            if accel == "kvm":
                machine += ",kernel-irqchip=split"
        netdev = "tap,id=n0,ifname=%s,script=no,downscript=no,vnet_hdr=off" % self.tap
        if self.queues > 1:
            netdev += ",queues=%d" % self.queues
        argv = [QEMU, "-M", machine, "-accel", accel, "-cpu", "max",
                "-m", str(self.mem_mb), "-smp", str(self.smp),
                "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot"]
        if self.bind == "vfio-pci":
            # Before the NIC: a device's DMA address space is fixed when it is realized.
            argv += ["-device", "intel-iommu,intremap=on,aw-bits=48"]
        argv += ["-kernel", kernel, "-initrd", self.initrd, "-append", append]
        argv += self._serial_argv(sock)
        argv += ["-monitor", "none",
                 "-qmp", "unix:%s,server=on,wait=off" % self._file("qmp.sock"),
                 "-netdev", netdev, "-device", self._nic_device()]
        if self.side_tap:
            o = [int(x) for x in self.side_ip.split("/")[0].split(".")]
            argv += ["-netdev", "tap,id=s0,ifname=%s,script=no,downscript=no,vnet_hdr=off" %
                     self.side_tap,
                     "-device", "virtio-net-pci,netdev=s0,mac=52:54:01:%02x:%02x:%02x,romfile=,"
                     "bus=pcie.0,addr=0x4" % (o[1], o[2], o[3])]
        if os.path.exists(QBOOT):
            argv += ["-bios", QBOOT]
        if self.pcap:
            argv += ["-object", "filter-dump,id=dump0,netdev=n0,file=%s" % self.pcap]
        return argv

    def start(self):
        if not os.path.exists(self.initrd) or os.path.getsize(self.initrd) == 0:
            raise TestFailure("no droced guest initramfs %s (test/nic/build-overlay.sh; the "
                              "guest itself: test/rxe/build-guest.sh)" % self.initrd)
        return super().start()

    # ---- QEMU's monitor ----

    def qmp(self, command, **arguments):
        """One QMP command; its "return" value, or TestFailure with QEMU's error."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        try:
            s.connect(self._file("qmp.sock"))
            f = s.makefile("rw")
            json.loads(f.readline())                    # the greeting
            for cmd, args in (("qmp_capabilities", {}), (command, arguments)):
                f.write(json.dumps({"execute": cmd, "arguments": args}) + "\n")
                f.flush()
                while True:
                    msg = json.loads(f.readline())
                    if "return" in msg or "error" in msg:
                        break                           # (events are skipped)
                if "error" in msg:
                    raise TestFailure("QMP %s: %s" % (cmd, msg["error"]))
            return msg["return"]
        finally:
            s.close()

    def set_link(self, up):
        """The NIC's link up or down, as pulling its cable (QEMU's set_link)."""
        self.qmp("set_link", name="n0", up=bool(up))

    # ---- droced ----

    def droced_config(self, mode="interrupt", mtu=4096, engines=1, extra_port=""):
        """droced's configuration for this guest, as a user writes it: the NIC by its PCI
        address, EAL told to take only that one (-a); engines on lcores 1.. sharing the
        vCPUs with the control thread (lcore 0)."""
        lcores = ",".join("%d@%d" % (i, i % self.smp) for i in range(engines + 1))
        return ("[eal]\nargs = -a %s --lcores=%s --file-prefix=droced\n"
                "[port nic0]\ndevice = %s\nipv4 = %s\nmtu = %d\n%s"
                "[engines]\nlcores = 1-%d\nmode = %s\n"
                "[control]\nsocket = %s\n" %
                (NIC_BDF, lcores, NIC_BDF, self.cidr, mtu, extra_port, engines, mode,
                 DROCED_SOCKET))

    def droced_start(self, config=None, timeout=DROCED_START_TIMEOUT):
        """Starts droced with config (droced_config()'s by default) and waits until its
        control socket answers; returns the output of droce-ctl ports."""
        config = config or self.droced_config()
        self.droced_job = self.spawn(
            "cat >/tmp/droced.ini <<'EOF'\n%sEOF\nexec droced --config /tmp/droced.ini" %
            config, timeout=self.deadline)
        until = time.monotonic() + timeout
        while time.monotonic() < until:
            if self.droced_job.done():
                raise TestFailure("droced exited (%s):\n%s" % (self.droced_job.rc,
                                                               self.droced_job.output))
            rc, out = self.run("droce-ctl --socket %s ports" % DROCED_SOCKET, timeout=30)
            if rc == 0:
                return out
            time.sleep(0.5)
        self.droced_job.kill()
        rc, out = self.droced_job.wait(30)
        raise TestFailure("droced's socket did not answer within %d s:\n%s" % (timeout, out))

    def droced_stop(self):
        """Stops droced (SIGTERM, as a service manager does) and returns its log."""
        if self.droced_job is None:
            return ""
        self.run("kill $(pidof droced)", timeout=30)
        try:
            rc, out = self.droced_job.wait(30)
        finally:
            self.droced_job = None
        return out
