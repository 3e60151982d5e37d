#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""lib/net's multicast membership against scapy: net-pkt-runner (test/net/net_pkt_runner.c)
joins IPv4 and IPv6 groups, is fed queries scapy built (IGMPv2, IGMPv3, MLDv1, MLDv2,
general and group-specific, at the times their pcap records say), and leaves the groups.
scapy dissects every IGMP and MLD frame lib/net sent and every field is checked: Ethernet
addresses (the group's MAC), IP version, header length, TOS, DF, TTL or hop limit 1, the
Router Alert option (IPv4 option, IPv6 Hop-by-Hop), addresses, IGMP/MLD type, code and
group, the checksums (recomputed by scapy), the padding; and when each report went out:
joins at once and one repeat a second later, answers within the query's Max Response
Time, none for 224.0.0.1, ff02::1 or a scope-1 group, none for a group another host has
just reported, nothing for queries lib/net must drop.

usage: test_net_mcast_scapy.py NET_PKT_RUNNER
"""

import argparse
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'interop'))

import interop_util as u  # noqa: E402
from interop_util import check  # noqa: E402

from scapy.all import IP, IPOption_Router_Alert, IPv6, Ether, raw  # noqa: E402
from scapy.contrib.igmp import IGMP  # noqa: E402
from scapy.contrib.igmpv3 import IGMPv3, IGMPv3mq  # noqa: E402
from scapy.layers.inet6 import (ICMPv6MLDone, ICMPv6MLQuery, ICMPv6MLQuery2,  # noqa: E402
                                ICMPv6MLReport, IPv6ExtHdrHopByHop, PadN, RouterAlert)

# The runner's port (net_pkt_runner.c): GID 1 is fe80:: + the modified EUI-64 of its MAC.
SELF_MAC, SELF_IP, SELF_LL = '02:00:00:00:00:02', '10.99.0.2', 'fe80::ff:fe00:2'
ROUTER_MAC, ROUTER_IP, ROUTER_LL = '02:00:00:00:00:fe', '10.99.0.254', 'fe80::fe'
OTHER_MAC, OTHER_IP = '02:00:00:00:00:03', '10.99.0.3'
# The groups, with their MACs written out (RFC 1112 6.4: low 23 bits; RFC 2464 7: low 32).
G4A, G4A_MAC = '239.1.2.3', '01:00:5e:01:02:03'
G4B, G4B_MAC = '239.200.0.9', '01:00:5e:48:00:09'
G6, G6_MAC = 'ff0e::db8:8001:2345', '33:33:80:01:23:45'
G6B, G6B_MAC = 'ff12::8000:7', '33:33:80:00:00:07'
ALL_HOSTS, ALL_HOSTS_MAC = '224.0.0.1', '01:00:5e:00:00:01'
ALL_ROUTERS, ALL_ROUTERS_MAC = '224.0.0.2', '01:00:5e:00:00:02'
ALL_NODES, ALL_NODES_MAC = 'ff02::1', '33:33:00:00:00:01'
ALL_ROUTERS6, ALL_ROUTERS6_MAC = 'ff02::2', '33:33:00:00:00:02'
SCOPE1 = 'ff01::7'
JOINS = ['::ffff:' + G4A, '::ffff:' + G4B, G6, G6B, '::ffff:' + ALL_HOSTS, ALL_NODES, SCOPE1]
MAC_OF = {G4A: G4A_MAC, G4B: G4B_MAC, G6: G6_MAC, G6B: G6B_MAC, ALL_ROUTERS: ALL_ROUTERS_MAC,
          ALL_ROUTERS6: ALL_ROUTERS6_MAC}

IGMP_QUERY, IGMP_V2_REPORT, IGMP_LEAVE = 0x11, 0x16, 0x17
MLD_REPORT, MLD_DONE = 131, 132
IPPROTO_IGMP, IPPROTO_HOPOPTS, IPPROTO_ICMPV6 = 2, 0, 58
TOS_INTERNETWORK_CONTROL = 0xC0
ETH_MIN, MLD_FRAME = 60, 86
REPORT_MS = 1000          # DROCE_NET_MCAST_REPORT_MS_DEFAULT
# What a join sends: a report for each group but 224.0.0.1, ff02::1 and ff01::7.
JOIN_REPORTS = [(IGMP_V2_REPORT, G4A), (IGMP_V2_REPORT, G4B), (MLD_REPORT, G6),
                (MLD_REPORT, G6B)]
DRAIN_MS = 15000
ETHERTYPE_ARP = 0x0806


def igmp_query(mrcode, group='0.0.0.0', dst=ALL_HOSTS, dst_mac=ALL_HOSTS_MAC):
    return (Ether(src=ROUTER_MAC, dst=dst_mac) /
            IP(src=ROUTER_IP, dst=dst, ttl=1, tos=TOS_INTERNETWORK_CONTROL,
               options=[IPOption_Router_Alert()]) /
            IGMP(type=IGMP_QUERY, mrcode=mrcode, gaddr=group))


def igmpv3_query(mrcode):
    return (Ether(src=ROUTER_MAC, dst=ALL_HOSTS_MAC) /
            IP(src=ROUTER_IP, dst=ALL_HOSTS, ttl=1, tos=TOS_INTERNETWORK_CONTROL,
               options=[IPOption_Router_Alert()]) /
            IGMPv3(type=IGMP_QUERY, mrcode=mrcode) / IGMPv3mq(gaddr='0.0.0.0'))


def mld_query(mrd, group='::', dst=ALL_NODES, dst_mac=ALL_NODES_MAC, src=ROUTER_LL, hlim=1,
              v2=False):
    q = (ICMPv6MLQuery2(mrd=mrd, mladdr=group) if v2 else
         ICMPv6MLQuery(mrd=mrd, mladdr=group))
    return (Ether(src=ROUTER_MAC, dst=dst_mac) / IPv6(src=src, dst=dst, hlim=hlim) /
            IPv6ExtHdrHopByHop(options=[RouterAlert(value=0)]) / q)


def write_pcap(path, timed):
    """(ms, frame) pairs to a classic pcap file whose records carry those times."""
    with open(path, 'wb') as f:
        f.write(struct.pack('<IHHiIII', u.PCAP_MAGIC, u.PCAP_VERSION[0], u.PCAP_VERSION[1],
                            0, 0, u.PCAP_SNAPLEN, u.DLT_EN10MB))
        for ms, frame in timed:
            b = raw(frame)
            f.write(struct.pack('<IIII', ms // 1000, ms % 1000 * 1000, len(b), len(b)))
            f.write(b)


def read_pcap_ms(path):
    """The (ms, frame) records of the runner's output."""
    with open(path, 'rb') as f:
        data = f.read()
    out, off = [], 24
    while off < len(data):
        sec, usec, caplen, _ = struct.unpack_from('<IIII', data, off)
        off += 16
        out.append((sec * 1000 + usec // 1000, data[off:off + caplen]))
        off += caplen
    return out


def rechecksum(p, layer, field):
    """The checksum scapy computes for layer of the dissected frame p."""
    q = Ether(raw(p))
    delattr(q[layer], field)
    return getattr(Ether(raw(q))[layer], field)


def check_igmp(f, what, ip_id):
    """An IGMPv2 message of lib/net: (type, group)."""
    check(len(f) == ETH_MIN, '%s: %d bytes, not %d' % (what, len(f), ETH_MIN))
    p = Ether(f)
    check(p.haslayer(IGMP), '%s: not IGMP: %r' % (what, p))
    i, g = p[IP], p[IGMP]
    check(g.type in (IGMP_V2_REPORT, IGMP_LEAVE), '%s: IGMP type %#x' % (what, g.type))
    dst = g.gaddr if g.type == IGMP_V2_REPORT else ALL_ROUTERS
    got = (p.dst, p.src, p.type, i.version, i.ihl, i.tos, i.len, i.id, int(i.flags),
           i.frag, i.ttl, i.proto, i.src, i.dst, g.mrcode)
    want = (MAC_OF.get(dst), SELF_MAC, 0x0800, 4, 6, TOS_INTERNETWORK_CONTROL, 32, ip_id,
            2, 0, 1, IPPROTO_IGMP, SELF_IP, dst, 0)
    check(got == want, '%s: %r != %r' % (what, got, want))
    # RFC 2113 Router Alert, value 0, and no other option.
    opts = i.options
    check(len(opts) == 1 and isinstance(opts[0], IPOption_Router_Alert) and
          opts[0].length == 4 and opts[0].alert == 0 and raw(opts[0]) == b'\x94\x04\0\0',
          '%s: IP options %r' % (what, opts))
    check(i.chksum == rechecksum(p, IP, 'chksum'), '%s: IP checksum %#x, scapy %#x'
          % (what, i.chksum, rechecksum(p, IP, 'chksum')))
    check(g.chksum == rechecksum(p, IGMP, 'chksum'), '%s: IGMP checksum %#x, scapy %#x'
          % (what, g.chksum, rechecksum(p, IGMP, 'chksum')))
    check(f[14 + 32:] == bytes(ETH_MIN - 14 - 32), '%s: padding %r' % (what, f[46:]))
    return (g.type, g.gaddr)


def check_mld(f, what):
    """An MLDv1 message of lib/net: (type, group)."""
    check(len(f) == MLD_FRAME, '%s: %d bytes, not %d' % (what, len(f), MLD_FRAME))
    p = Ether(f)
    check(p.haslayer(IPv6ExtHdrHopByHop), '%s: no Hop-by-Hop header: %r' % (what, p))
    i, h = p[IPv6], p[IPv6ExtHdrHopByHop]
    m = p[ICMPv6MLReport] if p.haslayer(ICMPv6MLReport) else (
        p[ICMPv6MLDone] if p.haslayer(ICMPv6MLDone) else None)
    check(m is not None, '%s: not an MLD report or done: %r' % (what, p))
    dst = m.mladdr if m.type == MLD_REPORT else ALL_ROUTERS6
    got = (p.dst, p.src, p.type, i.version, i.tc, i.fl, i.plen, i.nh, i.hlim, i.src, i.dst,
           h.nh, h.len, m.code, m.mrd, m.reserved)
    want = (MAC_OF.get(dst), SELF_MAC, 0x86DD, 6, 0, 0, 32, IPPROTO_HOPOPTS, 1, SELF_LL, dst,
            IPPROTO_ICMPV6, 0, 0, 0, 0)
    check(got == want, '%s: %r != %r' % (what, got, want))
    # RFC 2711 Router Alert, value 0 (MLD), padded to 8 bytes with PadN.
    o = h.options
    check(len(o) == 2 and isinstance(o[0], RouterAlert) and o[0].otype == 5 and
          o[0].optlen == 2 and o[0].value == 0 and isinstance(o[1], PadN) and
          o[1].optlen == 0, '%s: Hop-by-Hop options %r' % (what, o))
    layer = type(m)
    check(m.cksum == rechecksum(p, layer, 'cksum'), '%s: ICMPv6 checksum %#x, scapy %#x'
          % (what, m.cksum, rechecksum(p, layer, 'cksum')))
    return (m.type, m.mladdr)


def run(argv, tmp):
    ap = argparse.ArgumentParser()
    ap.add_argument('runner')
    a = ap.parse_args(argv)

    bad_sum = igmp_query(10)
    bad_sum[IGMP].chksum = 0x1234
    bad_sum6 = mld_query(10)
    bad_sum6[ICMPv6MLQuery].cksum = 0x1234
    other_report = (Ether(src=OTHER_MAC, dst=G4A_MAC) /
                    IP(src=OTHER_IP, dst=G4A, ttl=1, options=[IPOption_Router_Alert()]) /
                    IGMP(type=IGMP_V2_REPORT, gaddr=G4A))
    inputs = [
        (2000, igmp_query(20)),                                   # IGMPv2 general, 2 s
        (5000, mld_query(1000)),                                  # MLDv1 general, 1 s
        (7000, igmp_query(10, G4B, G4B, G4B_MAC)),                # IGMPv2 for G4B, 1 s
        (9000, mld_query(500, G6, G6, G6_MAC)),                   # MLDv1 for G6, 0.5 s
        (10000, igmpv3_query(0x80)),                              # IGMPv3, 12.8 s
        (23000, mld_query(2000, v2=True)),                        # MLDv2 general, 2 s
        # Dropped: bad IGMP and MLD checksums, a MAC we do not listen on, MLD from a
        # global address, MLD with hop limit 2.
        (26000, bad_sum),
        (26000, bad_sum6),
        (26000, igmp_query(10, dst_mac=ALL_ROUTERS_MAC)),
        (26000, mld_query(10, src='2001:db8::fe')),
        (26000, mld_query(10, hlim=2)),
        # A general query, and another host reports G4A at once: only G4B answers.
        (30000, igmp_query(100)),
        (30000, other_report),
    ]
    # (from, to, what is sent in [from, to)): the answers lib/net owes.
    windows = [
        (0, 1, JOIN_REPORTS),
        (REPORT_MS, REPORT_MS + 1, JOIN_REPORTS),
        (2000, 4000, [(IGMP_V2_REPORT, G4A), (IGMP_V2_REPORT, G4B)]),
        (5000, 6000, [(MLD_REPORT, G6), (MLD_REPORT, G6B)]),
        (7000, 8000, [(IGMP_V2_REPORT, G4B)]),
        (9000, 9500, [(MLD_REPORT, G6)]),
        (10000, 22800, [(IGMP_V2_REPORT, G4A), (IGMP_V2_REPORT, G4B)]),
        (23000, 25000, [(MLD_REPORT, G6), (MLD_REPORT, G6B)]),
        (30000, 40000, [(IGMP_V2_REPORT, G4B)]),
        (30000 + DRAIN_MS, 30000 + DRAIN_MS + 1,
         [(IGMP_LEAVE, G4A), (IGMP_LEAVE, G4B), (MLD_DONE, G6), (MLD_DONE, G6B)]),
    ]
    pin, pout = os.path.join(tmp, 'in.pcap'), os.path.join(tmp, 'out.pcap')
    write_pcap(pin, inputs)
    args = [a.runner, '--pcap-time', '--drain', str(DRAIN_MS)]
    for g in JOINS:
        args += ['--join', g]
    for g in JOINS:
        args += ['--leave', g]
    counters = u.run_tool(args + [pin, pout], 'net-pkt-runner').decode()
    out = [(ms, f) for ms, f in read_pcap_ms(pout)
           if struct.unpack_from('!H', f, 12)[0] != ETHERTYPE_ARP]

    got, ip_id = [], 0
    for k, (ms, f) in enumerate(out):
        what = 'frame %d at %d ms' % (k, ms)
        if struct.unpack_from('!H', f, 12)[0] == 0x0800:
            # lib/net originates no other IPv4 here: its IP IDs count its IGMP frames.
            got.append((ms, check_igmp(f, what, ip_id)))
            ip_id += 1
        else:
            got.append((ms, check_mld(f, what)))
    left = list(got)
    for lo, hi, want in windows:
        inside = [m for ms, m in left if lo <= ms < hi]
        check(sorted(inside) == sorted(want), 'in [%d, %d) ms: %r, not %r'
              % (lo, hi, inside, want))
        left = [(ms, m) for ms, m in left if not lo <= ms < hi]
    check(not left, 'frames outside every window: %r' % left)
    # The join order is kept where nothing random is involved.
    check([m for ms, m in got if ms == 0] == JOIN_REPORTS, 'join order %r' % got[:4])
    for name in ('rx_igmp_query=4', 'rx_mld_query=3', 'rx_mcast_report=1',
                 'rx_malformed=4', 'rx_foreign=1', 'tx_igmp_report=10', 'tx_mld_report=9',
                 'tx_igmp_leave=2', 'tx_mld_done=2'):
        check(name in counters.split(), 'counter %s missing: %s' % (name, counters))
    print('test_net_mcast_scapy: %d frames in, %d IGMP/MLD frames out, all checked'
          % (len(inputs), len(out)))


if __name__ == '__main__':
    u.main(run)
