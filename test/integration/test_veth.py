# SPDX-License-Identifier: BSD-3-Clause
"""Two droced in two network namespaces joined by a veth pair, each on net_af_packet
(VethPair): nothing else answers on these addresses, so the daemons must resolve each
other by ARP. RC ping-pong with payload checks (messages below and above the path MTU, MTU
4096 and 1024), UD ping-pong with the GRH check; an ARP capture on both veth ends shows a
request from each side's peer answered by a reply. Namespaces are removed in every case.

af_xdp: droced a on net_af_xdp instead (an XDP socket on its veth end, the kernel keeping
the device: the cloud case of doc/nics.md), b on net_af_packet, RoCE MTU 2048 and a veth
MTU of 3000 (native XDP on a veth takes no larger frame: see doc/nics.md for the limits):
RC, UC and UD ping-pongs with payload checks, nothing missed by the XDP socket; and a RoCE
MTU of 4096 on net_af_xdp refused at start, naming the MTU that fits.

usage: test_veth.py DROCED DROCE_CTL RC_PINGPONG UD_PINGPONG [CASE...]
"""

import os
import re
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from droce_harness import (VETH_DEVARGS, ChildOutput, TestFailure, VethPair, check, ctl_lines,
                           expect_idle, log, main, parse_args, run_pair)

TCP_PORT = 19210
BIN, CASES = parse_args(["droced", "droce_ctl", "rc_pingpong", "ud_pingpong"])

# Runs inside a namespace: prints every ARP frame received on the interface as
# "op sender_mac sender_ip target_ip", one line each, until killed.
ARP_SNIFFER = r'''
import socket, struct, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0806))
s.bind((sys.argv[1], 0))
print("listening", flush=True)
while True:
    frame, addr = s.recvfrom(2048)
    if addr[2] == socket.PACKET_OUTGOING:
        continue
    op, = struct.unpack("!H", frame[20:22])
    print(op, frame[22:28].hex(":"), socket.inet_ntoa(frame[28:32]),
          socket.inet_ntoa(frame[38:42]), flush=True)
'''


class ArpCapture:
    def __init__(self, pair):
        self.procs = []
        for ns, ifn in zip(pair.ns, pair.ifs):
            out = ChildOutput(pair.work.path)
            p = out.popen(["timeout", "300", "ip", "netns", "exec", ns, "/usr/bin/python3",
                           "-c", ARP_SNIFFER, ifn], start_new_session=True)
            self.procs.append((p, out))
        deadline = time.monotonic() + 10
        while not all("listening" in self.text(i) for i in range(2)):
            check(time.monotonic() < deadline, "ARP capture did not start: %s" %
                  [self.text(i) for i in range(2)])
            time.sleep(0.05)

    def text(self, i):
        return self.procs[i][1].text()

    def frames(self, i):
        """(op, sender_mac, sender_ip, target_ip) received in namespace i."""
        return [tuple(l.split()) for l in self.text(i).splitlines() if l[:1] in "12"]

    def stop(self):
        for p, out in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
            out.close()


capture = None


def start_capture(pair):
    global capture
    capture = ArpCapture(pair)


def pingpong(pair, prog, size, iters, opts=()):
    common = [prog, "-c", "-T", "15", "-p", str(TCP_PORT), "-s", str(size),
              "-n", str(iters)] + list(opts)
    srv, cli = run_pair(common, common + ["127.0.0.1"], pair.a, pair.b)
    for out in (srv, cli):
        check(re.search(r"iters=%d size=%d " % (iters, size), out) is not None,
              "no result line:\n" + out)
    return srv, cli


def run():
    try:
        with VethPair(BIN["droced"], "veth", devargs=VETH_DEVARGS,
                      on_link_up=start_capture) as pair:
            for size, iters, mtu in ((1, 50, 4096), (4096, 50, 4096), (65536, 10, 4096),
                                     (1 << 20, 2, 4096), (65536, 10, 1024)):
                pingpong(pair, BIN["rc_pingpong"], size, iters, ["-m", str(mtu)])
                log("  rc size %d x %d mtu %d: ok" % (size, iters, mtu))
            pingpong(pair, BIN["rc_pingpong"], 16384, 10, ["-t", "uc", "-m", "1024"])
            log("  uc size 16384 x 10 mtu 1024: ok")
            # Receives through an SRQ, completions through a completion channel.
            pingpong(pair, BIN["rc_pingpong"], 8192, 20, ["--srq", "-e"])
            log("  rc size 8192 x 20 with an SRQ and completion events: ok")
            pingpong(pair, BIN["rc_pingpong"], 4096, 20, ["-t", "uc", "--srq", "-e"])
            log("  uc size 4096 x 20 with an SRQ and completion events: ok")
            for size in (1024, 4096):
                srv, cli = pingpong(pair, BIN["ud_pingpong"], size, 50)
                for out, peer in ((srv, pair.ip_b), (cli, pair.ip_a)):
                    m = re.search(r"GRH of the first datagram: (\S+) header, source GID (\S+)",
                                  out)
                    check(m is not None and m.groups() == ("IPv4", "::ffff:" + peer),
                          "no IPv4 GRH from %s:\n%s" % (peer, out))
                log("  ud size %d x 50: ok" % size)
            # ARP really happened: each namespace received a request from its peer's
            # daemon for its own address (not only a gratuitous one) and a reply to its
            # own request. MACs are droced's own (droce-ctl ports).
            macs = []
            for d in (pair.a, pair.b):
                r = subprocess.run(["timeout", "10", BIN["droce_ctl"], "--socket", d.socket,
                                    "ports"], capture_output=True, text=True)
                m = re.search(r"mac[= ]([0-9a-f:]{17})", r.stdout)
                check(m is not None, "no mac in droce-ctl ports:\n" + r.stdout)
                macs.append(m.group(1))
            ips = (pair.ip_a, pair.ip_b)
            for i in (0, 1):
                peer = 1 - i
                got = capture.frames(i)
                req = ("1", macs[peer], ips[peer], ips[i])
                rep = ("2", macs[peer], ips[peer], ips[i])
                check(req in got or rep in got,
                      "namespace %s saw no ARP request or reply from %s: %s" %
                      (pair.ns[i], ips[peer], got))
            both = [capture.frames(i) for i in (0, 1)]
            requests = [f for fr in both for f in fr if f[0] == "1" and f[2] != f[3]]
            replies = [f for fr in both for f in fr if f[0] == "2" and f[2] != f[3]]
            check(requests and replies, "no ARP request/reply exchange: %s" % both)
            log("  arp: %s" % both)
            for d in (pair.a, pair.b):
                expect_idle(BIN["droce_ctl"], d)
    finally:
        if capture is not None:
            capture.stop()
        # The namespaces must be gone whatever happened.
        names = subprocess.run(["ip", "netns", "list"], capture_output=True,
                               text=True).stdout
        check("droce-a-%d" % os.getpid() not in names, "namespace left behind")


XDP_DEVICE = "net_af_xdp0,iface=%s,start_queue=0,queue_count=1"
XDP_MTU = 2048


def af_xdp():
    with VethPair(BIN["droced"], "xdp", mtu=XDP_MTU, devargs=VETH_DEVARGS, device_a=XDP_DEVICE,
                  veth_mtu=3000) as pair:
        port = ctl_lines(BIN["droce_ctl"], pair.a, "ports")[0]
        check(port.get("driver") == "net_af_xdp" and port.get("eth_mtu") == "2176" and
              port.get("state") == "ACTIVE", "droce-ctl ports on net_af_xdp: %s" % port)
        # The data packets a must receive at least: each of b's messages, in MTU packets.
        least = 0
        for size, iters in ((1, 50), (2048, 50), (65536, 20), (1 << 20, 2)):
            pingpong(pair, BIN["rc_pingpong"], size, iters, ["-m", str(XDP_MTU)])
            least += iters * -(-size // XDP_MTU)
        pingpong(pair, BIN["rc_pingpong"], 16384, 10, ["-t", "uc", "-m", str(XDP_MTU)])
        pingpong(pair, BIN["ud_pingpong"], 2048, 50)
        least += 10 * 16384 // XDP_MTU + 50
        counters = ctl_lines(BIN["droce_ctl"], pair.a, "ports")[0]
        check(counters["rx_missed"] == "0" and counters["rx_nombuf"] == "0" and
              int(counters["rx_packets"]) >= least,
              "the XDP socket missed frames (%d data packets at least): %s" %
              (least, counters))
        log("  rc 1 B .. 1 MiB, uc, ud 2048 through net_af_xdp: ok (%s packets received)" %
            counters["rx_packets"])
        expect_idle(BIN["droce_ctl"], pair.a)
    # A RoCE MTU whose frames do not fit in a page: refused, naming the one that fits.
    pair = VethPair(BIN["droced"], "xdp4k", mtu=4096, devargs=VETH_DEVARGS,
                    device_a=XDP_DEVICE, veth_mtu=3000)
    try:
        with pair:
            raise TestFailure("droced started on net_af_xdp with RoCE MTU 4096")
    except TestFailure as e:
        check("RoCE MTU 4096 needs an Ethernet MTU of 4224" in str(e) and
              "set mtu = 2048" in str(e), "not the refusal expected:\n%s" % e)
    log("  RoCE MTU 4096 on net_af_xdp: refused, mtu = 2048 suggested")


if __name__ == "__main__":
    main([("veth", run), ("af_xdp", af_xdp)], CASES)
