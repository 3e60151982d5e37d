#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""lib/net against scapy: net-pkt-runner (test/net/net_pkt_runner.c) feeds lib/net the
frames of a pcap file scapy built and captures what it sends. scapy dissects every frame
lib/net produced and recomputes its checksums: the gratuitous ARP, the ARP request of a
resolution, ARP replies, ICMP echo replies, and the held packet sent once scapy's ARP
reply arrives. Frames lib/net must ignore (ARP and echo for another address, a bad ICMP
checksum) must produce nothing.

usage: test_net_scapy.py NET_PKT_RUNNER
"""

import argparse
import os

import interop_util as u
from interop_util import check

from scapy.all import ARP, ICMP, IP, Ether, Raw, raw

# The runner's addresses (net_pkt_runner.c) and the peer scapy plays.
SELF_MAC, PEER_MAC = '02:00:00:00:00:02', '02:00:00:00:00:01'
SELF_IP, PEER_IP, OTHER_IP = '10.99.0.2', '10.99.0.1', '10.99.0.3'
BCAST = 'ff:ff:ff:ff:ff:ff'
ZERO_MAC = '00:00:00:00:00:00'
HELD_PAYLOAD = b'droce-held'
ETHERTYPE_TEST = 0x88B5
ETH_MIN = 60
ARP_REQUEST, ARP_REPLY = 1, 2
ICMP_ECHO_REPLY, ICMP_ECHO_REQUEST = 0, 8


def echo(dst_ip, ident, seq, payload, bad_csum=False):
    icmp = ICMP(type=ICMP_ECHO_REQUEST, id=ident, seq=seq)
    if bad_csum:
        icmp.chksum = 0x1234
    return raw(Ether(dst=SELF_MAC, src=PEER_MAC) / IP(src=PEER_IP, dst=dst_ip, ttl=63) /
               icmp / Raw(payload))


def check_arp(f, what, op, eth_dst, tha, tpa):
    check(len(f) == ETH_MIN, '%s: %d bytes, not %d' % (what, len(f), ETH_MIN))
    p = Ether(f)
    check(p.haslayer(ARP), '%s: not ARP: %r' % (what, p))
    a = p[ARP]
    got = (p.dst, p.src, a.hwtype, a.ptype, a.hwlen, a.plen, a.op, a.hwsrc, a.psrc,
           a.hwdst, a.pdst)
    want = (eth_dst, SELF_MAC, 1, 0x0800, 6, 4, op, SELF_MAC, SELF_IP, tha, tpa)
    check(got == want, '%s: %r != %r' % (what, got, want))


def check_echo_reply(f, req, what):
    p, q = Ether(f), Ether(req)
    check(p.haslayer(ICMP), '%s: not ICMP: %r' % (what, p))
    i, ic = p[IP], p[ICMP]
    got = (p.dst, p.src, i.src, i.dst, i.proto, i.ihl, i.frag, ic.type, ic.code, ic.id, ic.seq,
           bytes(ic.payload)[:len(q[ICMP].payload)])
    want = (PEER_MAC, SELF_MAC, SELF_IP, PEER_IP, 1, 5, 0, ICMP_ECHO_REPLY, 0, q[ICMP].id,
            q[ICMP].seq, bytes(q[ICMP].payload))
    check(got == want, '%s: %r != %r' % (what, got, want))
    # scapy's own checksums over what lib/net sent.
    ip_sum, icmp_sum = i.chksum, ic.chksum
    del i.chksum
    del ic.chksum
    r = Ether(raw(p))
    check(r[IP].chksum == ip_sum, '%s: IP checksum %#x, scapy %#x' % (what, ip_sum,
                                                                     r[IP].chksum))
    check(r[ICMP].chksum == icmp_sum, '%s: ICMP checksum %#x, scapy %#x'
          % (what, icmp_sum, r[ICMP].chksum))


def run(argv, tmp):
    ap = argparse.ArgumentParser()
    ap.add_argument('runner')
    a = ap.parse_args(argv)
    ping = echo(SELF_IP, 0x1234, 7, bytes(range(56)))
    ping_odd = echo(SELF_IP, 0xBEEF, 8, b'odd-length payload!')
    inputs = [
        ping,
        raw(Ether(dst=SELF_MAC, src=PEER_MAC) /
            ARP(op=ARP_REPLY, hwsrc=PEER_MAC, psrc=PEER_IP, hwdst=SELF_MAC, pdst=SELF_IP)),
        raw(Ether(dst=BCAST, src=PEER_MAC) /
            ARP(op=ARP_REQUEST, hwsrc=PEER_MAC, psrc=PEER_IP, pdst=SELF_IP)),
        ping_odd,
        # Ignored: ARP and echo for another address, a bad ICMP checksum.
        raw(Ether(dst=BCAST, src=PEER_MAC) /
            ARP(op=ARP_REQUEST, hwsrc=PEER_MAC, psrc=PEER_IP, pdst=OTHER_IP)),
        echo(OTHER_IP, 1, 1, b'x'),
        echo(SELF_IP, 1, 2, b'bad', bad_csum=True),
    ]
    pin, pout = os.path.join(tmp, 'in.pcap'), os.path.join(tmp, 'out.pcap')
    w = u.PcapWriter(pin)
    for f in inputs:
        w.write(f)
    w.close()
    counters = u.run_tool([a.runner, pin, pout], 'net-pkt-runner').decode()
    out = u.read_pcap(pout)
    check(len(out) == 6, '%d frames out, not 6; counters:%s' % (len(out), counters))
    check_arp(out[0], 'gratuitous ARP', ARP_REQUEST, BCAST, ZERO_MAC, SELF_IP)
    check_arp(out[1], 'ARP request', ARP_REQUEST, BCAST, ZERO_MAC, PEER_IP)
    check_echo_reply(out[2], ping, 'echo reply')
    held = Ether(out[3])
    check((held.dst, held.src, held.type, bytes(held.payload)) ==
          (PEER_MAC, SELF_MAC, ETHERTYPE_TEST, HELD_PAYLOAD), 'held packet: %r' % held)
    check_arp(out[4], 'ARP reply', ARP_REPLY, PEER_MAC, PEER_MAC, PEER_IP)
    check_echo_reply(out[5], ping_odd, 'odd echo reply')
    for name in ('rx_foreign=2', 'rx_malformed=1', 'tx_queued=1', 'rx_icmp_echo=2'):
        check(' ' + name in counters + ' ', 'counter %s missing: %s' % (name, counters))
    print('test_net_scapy: %d frames in, %d out, all checked' % (len(inputs), len(out)))


if __name__ == '__main__':
    u.main(run)
