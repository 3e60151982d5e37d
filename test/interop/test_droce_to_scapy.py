#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""lib/wire's builder checked by scapy: wire_gen writes a packet for every opcode, size,
IP version and VLAN setting; scapy reads the capture and must agree with wire_gen's
manifest on every header field, and its ICRC (scapy.contrib.roce, IPv4 only) must equal
ours. IPv6 ICRCs are checked against interop_util.ref_icrc, a few lines of Python from
the spec, which this test first checks against scapy on every IPv4 packet.

usage: test_droce_to_scapy.py WIRE_GEN [--seed N]
"""

import argparse
import ipaddress
import zlib

import interop_util as u
from interop_util import check

from scapy.all import IP, UDP, Dot1Q, Ether, IPv6, Padding, raw, rdpcap
from scapy.contrib.roce import AETH, BTH, CNPPadding

# IPv4 flags: Don't Fragment (RFC 791), as scapy numbers the 3-bit flags field.
IPV4_FLAG_DF = 2


class Counter:
    def __init__(self):
        self.fields = 0

    def eq(self, what, got, want, frame):
        self.fields += 1
        check(got == want, 'frame %d: %s is %r, manifest/expected %r'
              % (frame, what, got, want))


def check_frame(c, frame, pkt, m, stats):
    n = m['frame']
    op = m['opcode']
    c.eq('scapy re-serialisation', raw(pkt), frame, n)
    c.eq('frame length', len(frame), m['frame_len'], n)
    check(Ether in pkt, 'frame %d: scapy sees no Ethernet header' % n)
    c.eq('eth src', pkt[Ether].src, m['src_mac'], n)
    c.eq('eth dst', pkt[Ether].dst, m['dst_mac'], n)
    c.eq('VLAN tag present', Dot1Q in pkt, bool(m['vlan']), n)
    if m['vlan']:
        v = pkt[Dot1Q]
        c.eq('VLAN TCI', v.prio << 13 | v.id << 12 | v.vlan, m['vlan_tci'], n)

    check(UDP in pkt, 'frame %d: scapy sees no UDP header' % n)
    udp = pkt[UDP]
    udp_len = u.UDP_HLEN + u.BTH_LEN + u.ext_len(op) + m['payload_len'] + m['pad'] + \
        u.ICRC_LEN
    c.eq('UDP dport', udp.dport, u.ROCE_PORT, n)
    c.eq('UDP sport', udp.sport, m['udp_sport'], n)
    c.eq('UDP checksum', udp.chksum, 0, n)   # A17.4.2: RoCEv2 sends 0
    c.eq('UDP length', udp.len, udp_len, n)

    if m['ip_version'] == 4:
        check(IP in pkt and IPv6 not in pkt, 'frame %d: scapy sees no IPv4 header' % n)
        ip = pkt[IP]
        c.eq('IPv4 version', ip.version, 4, n)
        c.eq('IPv4 IHL', ip.ihl, 5, n)
        c.eq('IPv4 TOS', ip.tos, m['traffic_class'], n)
        c.eq('IPv4 TTL', ip.ttl, m['hop_limit'], n)
        c.eq('IPv4 flags', int(ip.flags), IPV4_FLAG_DF, n)
        c.eq('IPv4 fragment offset', ip.frag, 0, n)
        c.eq('IPv4 protocol', ip.proto, u.IPPROTO_UDP, n)
        c.eq('IPv4 src', ip.src, m['src'], n)
        c.eq('IPv4 dst', ip.dst, m['dst'], n)
        c.eq('IPv4 total length', ip.len, u.IPV4_HLEN + udp_len, n)
        # scapy recomputes the checksum of a copy whose checksum it must fill in.
        again = ip.copy()
        again.chksum = None
        c.eq('IPv4 checksum', ip.chksum, IP(raw(again)).chksum, n)
        l3_len = u.IPV4_HLEN + udp_len
    else:
        check(IPv6 in pkt and IP not in pkt, 'frame %d: scapy sees no IPv6 header' % n)
        ip = pkt[IPv6]
        c.eq('IPv6 version', ip.version, 6, n)
        c.eq('IPv6 traffic class', ip.tc, m['traffic_class'], n)
        c.eq('IPv6 flow label', ip.fl, m['flow_label'], n)
        c.eq('IPv6 hop limit', ip.hlim, m['hop_limit'], n)
        c.eq('IPv6 next header', ip.nh, u.IPPROTO_UDP, n)
        c.eq('IPv6 src', ipaddress.ip_address(ip.src), ipaddress.ip_address(m['src']), n)
        c.eq('IPv6 dst', ipaddress.ip_address(ip.dst), ipaddress.ip_address(m['dst']), n)
        c.eq('IPv6 payload length', ip.plen, udp_len, n)
        l3_len = u.IPV6_HLEN + udp_len
    l3 = u.ETH_HLEN + (u.VLAN_HLEN if m['vlan'] else 0)
    end = l3 + l3_len
    c.eq('Ethernet padding', len(frame), max(end, u.ETH_MIN_FRAME), n)

    check(BTH in pkt, 'frame %d: scapy does not decode UDP 4791 as BTH' % n)
    bth = pkt[BTH]
    c.eq('BTH opcode', bth.opcode, op, n)
    c.eq('BTH SE', bth.solicited, m['se'], n)
    c.eq('BTH M', bth.migreq, m['mig'], n)
    c.eq('BTH PadCnt', bth.padcount, m['pad'], n)
    c.eq('BTH TVer', bth.version, 0, n)
    c.eq('BTH P_Key', bth.pkey, m['pkey'], n)
    c.eq('BTH FECN', bth.fecn, m['fecn'], n)
    c.eq('BTH BECN', bth.becn, m['becn'], n)
    c.eq('BTH reserved (6 bits)', bth.resv6, 0, n)
    c.eq('BTH DestQP', bth.dqpn, m['dqpn'], n)
    c.eq('BTH AckReq', bth.ackreq, m['ackreq'], n)
    c.eq('BTH reserved (7 bits)', bth.resv7, 0, n)
    c.eq('BTH PSN', bth.psn, m['psn'], n)
    # Layers scapy has for the extension headers: AETH after an RC ACK, the CNP's padding.
    # scapy.contrib.roce knows no XRC opcode (nor FLUSH, ATOMIC WRITE, invalidate): it
    # reads their BTH by number and leaves the rest raw, XRC_ACKNOWLEDGE's AETH included,
    # which ext_fields decodes below.
    if op == 0x11:
        c.eq('AETH syndrome (scapy)', pkt[AETH].syndrome, m['aeth_syndrome'], n)
        c.eq('AETH MSN (scapy)', pkt[AETH].msn, m['aeth_msn'], n)
    if op == 0x81:
        c.eq('CNP reserved (scapy)', (pkt[CNPPadding].reserved1, pkt[CNPPadding].reserved2),
             (0, 0), n)

    # The rest scapy keeps as raw bytes: extension headers, payload, pad.
    rest = raw(bth.payload)
    eth_pad = pkt[Padding].load if Padding in pkt else b''
    c.eq('Ethernet padding bytes (scapy)', eth_pad, bytes(len(frame) - end), n)
    rest = rest[:len(rest) - len(eth_pad)]
    elen = u.ext_len(op)
    c.eq('bytes after the BTH', len(rest), elen + m['payload_len'] + m['pad'], n)
    got = u.ext_fields(op, rest[:elen])
    for h in u.OPCODES[op][1]:
        for k in u.EXT_KEYS[h]:
            c.eq(k, got[k], m[k], n)
    c.eq('DETH reserved', got.get('deth_reserved', 0), 0, n)
    c.eq('XRCETH reserved', got.get('xrceth_reserved', 0), 0, n)
    c.eq('FETH reserved', got.get('feth_reserved', 0), 0, n)
    c.eq('CNP reserved', got.get('cnp_reserved', b''), bytes(elen if op == 0x81 else 0), n)
    payload = rest[elen:elen + m['payload_len']]
    c.eq('payload CRC-32', zlib.crc32(payload), m['payload_crc32'], n)
    c.eq('pad bytes', rest[elen + m['payload_len']:], bytes(m['pad']), n)

    wire = frame[end - u.ICRC_LEN:end]
    # scapy reads the ICRC field as a big-endian number of its wire bytes.
    c.eq('ICRC field (scapy)', bth.icrc.to_bytes(u.ICRC_LEN, 'big'), wire, n)
    ref = u.ref_icrc(frame)
    if m['ip_version'] == 4:
        again = pkt.copy()
        again[BTH].icrc = None
        # scapy's BTH builds its ICRC over everything after it, Ethernet padding
        # included, and writes it over the padding's last bytes: drop the padding.
        if Padding in again:
            again[Padding].underlayer.remove_payload()
        scapy_icrc = raw(again)[end - u.ICRC_LEN:end]
        c.eq('reference ICRC vs scapy ICRC', ref, scapy_icrc, n)
        c.eq('our ICRC vs scapy ICRC', wire, scapy_icrc, n)
        stats['scapy_icrc'] += 1
    else:
        c.eq('our ICRC vs the reference ICRC (IPv6)', wire, ref, n)
        stats['ref_icrc'] += 1


def run(argv, tmp):
    ap = argparse.ArgumentParser()
    ap.add_argument('wire_gen')
    ap.add_argument('--seed', type=int, default=1)
    a = ap.parse_args(argv)

    pcap, rows = u.wire_gen(a.wire_gen, tmp, a.seed)
    u.check_manifest_opcodes(rows, u.WIRE_GEN_SIZES)
    frames = u.read_pcap(pcap)
    pkts = rdpcap(pcap)
    check(len(frames) == len(rows) == len(pkts), 'pcap has %d frames (scapy: %d), manifest %d'
          % (len(frames), len(pkts), len(rows)))
    c = Counter()
    stats = {'scapy_icrc': 0, 'ref_icrc': 0}
    for frame, pkt, m in zip(frames, pkts, rows):
        check_frame(c, frame, pkt, m, stats)
    check(stats['scapy_icrc'] > 0 and stats['ref_icrc'] > 0, 'no IPv4 or no IPv6 packet')
    print('test_droce_to_scapy: %d packets, %d fields checked; ICRC equal to scapy\'s on %d '
          'IPv4 packets (the reference agreed on all), to the reference on %d IPv6 packets'
          % (len(rows), c.fields, stats['scapy_icrc'], stats['ref_icrc']))


if __name__ == '__main__':
    u.main(run)
