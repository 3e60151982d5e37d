#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""lib/wire's builder checked by tshark: wire_gen writes a packet for every opcode, size,
IP version and VLAN setting, and tshark's Ethernet, 802.1Q, IP, UDP and InfiniBand
dissectors must decode every field to the value in wire_gen's manifest. tshark 4.0
decodes UDP port 4791 as RoCEv2 by default. It does not verify the ICRC, but it shows
where it is: that must be the ICRC of the Python reference.

usage: test_tshark_fields.py WIRE_GEN [--tshark PATH] [--seed N]
"""

import argparse
import ipaddress
import subprocess
import zlib

import interop_util as u
from interop_util import check

# Opcodes tshark 4.0's InfiniBand dissector does not decode past the BTH: it shows the
# rest as "Unknown/Vendor Specific Data" (infiniband.vendor). They are IBA 1.5's FLUSH and
# ATOMIC WRITE and the RoCEv2 CNP (0x81, Annex A17.9.3), whose opcodes it does not know,
# and every XRC opcode: tshark 4.0 names them (0xA0..0xB7) but has no XRCETH field and
# decodes none of XRC's headers, not even the AETH of XRC's responses, which carry no
# XRCETH. Their BTH is still checked, and the vendor bytes against the manifest.
TSHARK_UNDECODED = {
    0x1C: 'RC_FLUSH',
    0x1D: 'RC_ATOMIC_WRITE',
    0x81: 'CNP',
}
TSHARK_UNDECODED.update({op: name for op, (name, _, _) in u.OPCODES.items()
                         if op & 0xE0 == 0xA0})

# Heuristic dissectors that would claim RoCEv2 payloads (random bytes here) as their
# own protocols and hide the payload and ICRC fields: disabled.
HEURISTICS_OFF = ['eth_over_ib']
PROTOCOLS_OFF = ['smc', 'smb_direct', 'rpcordma', 'nvme-rdma', 'lnet', 'iser',
                 'infiniband.eoib', 'infiniband_sdp', 'fcoib']

FIELDS = [
    'frame.number', 'eth.src', 'eth.dst', 'vlan.id', 'vlan.priority', 'vlan.dei',
    'ip.version', 'ip.hdr_len', 'ip.dsfield', 'ip.len', 'ip.flags.df', 'ip.flags.mf',
    'ip.frag_offset', 'ip.ttl', 'ip.proto', 'ip.src', 'ip.dst', 'ip.checksum.status',
    'ipv6.version', 'ipv6.tclass', 'ipv6.flow', 'ipv6.plen', 'ipv6.nxt', 'ipv6.hlim',
    'ipv6.src', 'ipv6.dst',
    'udp.srcport', 'udp.dstport', 'udp.length', 'udp.checksum',
    'infiniband.bth.opcode', 'infiniband.bth.se', 'infiniband.bth.m',
    'infiniband.bth.padcnt', 'infiniband.bth.tver', 'infiniband.bth.p_key',
    'infiniband.reserved', 'infiniband.bth.destqp', 'infiniband.bth.a',
    'infiniband.bth.reserved7', 'infiniband.bth.psn',
    'infiniband.reth.va', 'infiniband.reth.r_key', 'infiniband.reth.dmalen',
    'infiniband.aeth.syndrome', 'infiniband.aeth.msn',
    'infiniband.deth.q_key', 'infiniband.deth.srcqp',
    'infiniband.immdt', 'infiniband.ieth',
    'infiniband.atomiceth.swapdt', 'infiniband.atomiceth.cmpdt',
    'infiniband.atomicacketh.origremdt',
    'infiniband.invariant.crc', 'infiniband.vendor', 'data.data',
    '_ws.malformed', '_ws.expert.message',
]
# tshark's expert note on every RoCEv2 packet over IPv6: RFC 8200 wants a UDP checksum,
# RoCEv2 sends 0 (A17.4.2) and receivers ignore it.
IPV6_ZERO_CSUM_NOTE = 'Illegal checksum value (0)'
# tshark's expert note on a small IPv4 TTL (wire_gen picks them at random).
LOW_TTL_NOTE = '"Time To Live" only %d'
# ip.checksum.status with ip.check_checksum on: 1 is "Good".
CHECKSUM_GOOD = 1

# Which tshark fields decode each extension header, and the manifest key of each.
# tshark shows the AtomicETH's address and key with the RETH's fields.
EXT_TSHARK = {
    'RETH': [('infiniband.reth.va', 'reth_va'), ('infiniband.reth.r_key', 'reth_rkey'),
             ('infiniband.reth.dmalen', 'reth_len')],
    'ATMETH': [('infiniband.reth.va', 'atomic_va'), ('infiniband.reth.r_key', 'atomic_rkey'),
               ('infiniband.atomiceth.swapdt', 'atomic_swap_add'),
               ('infiniband.atomiceth.cmpdt', 'atomic_compare')],
    'AETH': [('infiniband.aeth.syndrome', 'aeth_syndrome'),
             ('infiniband.aeth.msn', 'aeth_msn')],
    'ATMACK': [('infiniband.atomicacketh.origremdt', 'atomic_ack_orig')],
    'DETH': [('infiniband.deth.q_key', 'deth_qkey'), ('infiniband.deth.srcqp', 'deth_src_qp')],
    'IMMDT': [('infiniband.immdt', 'immdt')],
    'IETH': [('infiniband.ieth', 'ieth_rkey')],
}
EXT_TSHARK_FIELDS = {f for hs in EXT_TSHARK.values() for f, _ in hs}
# Byte fields, which tshark prints as hex digits; the rest are numbers.
BYTE_FIELDS = {'infiniband.immdt', 'infiniband.ieth', 'infiniband.reserved',
               'infiniband.vendor', 'data.data'}


def num(s):
    """A number as tshark prints it: decimal, 0x-prefixed hex, or a boolean."""
    if s in ('True', 'False'):
        return int(s == 'True')
    return int(s, 16) if s.startswith('0x') else int(s)


class Frame:
    """One frame's tshark fields; each field's occurrences must agree."""

    def __init__(self, cols):
        self.v = dict(zip(FIELDS, cols))
        self.n = int(self.v['frame.number'])

    def has(self, f):
        return self.v[f] != ''

    def raw(self, f, pick=None):
        """The field's text: its only value (repeats must agree), or with pick 0 or -1
        its first or last occurrence."""
        occ = self.v[f].split('|')
        if pick is not None:
            return occ[pick]
        check(len(set(occ)) == 1, 'frame %d: tshark shows %s = %s' % (self.n, f, occ))
        return occ[0]

    def get(self, f, pick=None):
        check(self.has(f), 'frame %d: tshark shows no %s' % (self.n, f))
        s = self.raw(f, pick)
        return bytes.fromhex(s) if f in BYTE_FIELDS else num(s)


class Checker:
    def __init__(self):
        self.values = 0

    def eq(self, fr, f, got, want):
        self.values += 1
        check(got == want, 'frame %d: tshark %s = %r, manifest/expected %r'
              % (fr.n, f, got, want))

    def field(self, fr, f, want, pick=None):
        self.eq(fr, f, fr.get(f, pick), want)

    def absent(self, fr, f):
        self.values += 1
        check(not fr.has(f), 'frame %d: tshark shows %s = %s, the packet has none'
              % (fr.n, f, fr.v[f]))


def check_frame(c, fr, frame, m):
    op = m['opcode']
    c.eq(fr, 'eth.src', fr.raw('eth.src'), m['src_mac'])
    c.eq(fr, 'eth.dst', fr.raw('eth.dst'), m['dst_mac'])
    if m['vlan']:
        tci = m['vlan_tci']
        c.field(fr, 'vlan.id', tci & u.VLAN_VID_MASK)
        c.field(fr, 'vlan.priority', tci >> 13)
        c.field(fr, 'vlan.dei', (tci >> 12) & 1)
    else:
        c.absent(fr, 'vlan.id')

    udp_len = u.UDP_HLEN + u.BTH_LEN + u.ext_len(op) + m['payload_len'] + m['pad'] + \
        u.ICRC_LEN
    if m['ip_version'] == 4:
        for f, want in (('ip.version', 4), ('ip.hdr_len', u.IPV4_HLEN),
                        ('ip.dsfield', m['traffic_class']), ('ip.len', u.IPV4_HLEN + udp_len),
                        ('ip.flags.df', 1), ('ip.flags.mf', 0), ('ip.frag_offset', 0),
                        ('ip.ttl', m['hop_limit']), ('ip.proto', u.IPPROTO_UDP),
                        ('ip.checksum.status', CHECKSUM_GOOD)):
            c.field(fr, f, want)
        c.eq(fr, 'ip.src', fr.raw('ip.src'), m['src'])
        c.eq(fr, 'ip.dst', fr.raw('ip.dst'), m['dst'])
        c.absent(fr, 'ipv6.src')
    else:
        for f, want in (('ipv6.version', 6), ('ipv6.tclass', m['traffic_class']),
                        ('ipv6.flow', m['flow_label']), ('ipv6.plen', udp_len),
                        ('ipv6.nxt', u.IPPROTO_UDP), ('ipv6.hlim', m['hop_limit'])):
            c.field(fr, f, want)
        for f, k in (('ipv6.src', 'src'), ('ipv6.dst', 'dst')):
            c.eq(fr, f, ipaddress.ip_address(fr.raw(f)), ipaddress.ip_address(m[k]))
        c.absent(fr, 'ip.src')
    c.field(fr, 'udp.srcport', m['udp_sport'])
    c.field(fr, 'udp.dstport', u.ROCE_PORT)
    c.field(fr, 'udp.length', udp_len)
    c.field(fr, 'udp.checksum', 0)

    for f, k in (('infiniband.bth.opcode', 'opcode'), ('infiniband.bth.se', 'se'),
                 ('infiniband.bth.m', 'mig'), ('infiniband.bth.padcnt', 'pad'),
                 ('infiniband.bth.p_key', 'pkey'), ('infiniband.bth.destqp', 'dqpn'),
                 ('infiniband.bth.a', 'ackreq'), ('infiniband.bth.psn', 'psn')):
        c.field(fr, f, m[k])
    c.field(fr, 'infiniband.bth.tver', 0)
    c.field(fr, 'infiniband.bth.reserved7', 0)
    # tshark has no FECN/BECN fields: it shows BTH byte 4 as the first "Reserved".
    c.field(fr, 'infiniband.reserved', bytes([m['fecn'] << 7 | m['becn'] << 6]), pick=0)

    l3, _, end, _ = u.ip_span(frame)
    icrc = u.ref_icrc(frame)
    data_len = m['payload_len'] + m['pad']
    if op in TSHARK_UNDECODED:
        for f in EXT_TSHARK_FIELDS:
            c.absent(fr, f)
        c.absent(fr, 'infiniband.invariant.crc')
        c.absent(fr, 'data.data')
        # The last occurrence holds all the bytes after the BTH (the first, the
        # first word of them).
        vendor = fr.get('infiniband.vendor', pick=-1)
        elen = u.ext_len(op)
        c.eq(fr, 'infiniband.vendor length', len(vendor), elen + data_len + u.ICRC_LEN)
        c.eq(fr, 'infiniband.vendor headers', vendor[:elen], u.ext_bytes(op, m))
        data = vendor[elen:elen + data_len]
        c.eq(fr, 'infiniband.vendor ICRC', vendor[elen + data_len:], icrc)
    else:
        c.absent(fr, 'infiniband.vendor')
        want = {}
        for h in u.OPCODES[op][1]:
            for f, k in EXT_TSHARK.get(h, []):
                want[f] = m[k]
        for f in sorted(EXT_TSHARK_FIELDS):
            if f not in want:
                c.absent(fr, f)
            elif f in BYTE_FIELDS:
                c.eq(fr, f, int.from_bytes(fr.get(f), 'big'), want[f])
            else:
                c.field(fr, f, want[f])
        c.field(fr, 'infiniband.invariant.crc', int.from_bytes(icrc, 'big'))
        data = fr.get('data.data') if data_len else b''
        if not data_len:
            c.absent(fr, 'data.data')
    c.eq(fr, 'payload and pad length', len(data), data_len)
    c.eq(fr, 'payload CRC-32', zlib.crc32(data[:m['payload_len']]), m['payload_crc32'])
    c.eq(fr, 'pad bytes', data[m['payload_len']:], bytes(m['pad']))

    c.absent(fr, '_ws.malformed')
    notes = set(fr.raw('_ws.expert.message').split('|')) - {''} if fr.has(
        '_ws.expert.message') else set()
    want = {IPV6_ZERO_CSUM_NOTE} if m['ip_version'] == 6 else set()
    ttl_note = LOW_TTL_NOTE % m['hop_limit']
    if m['ip_version'] == 4 and ttl_note in notes:
        want.add(ttl_note)
    c.eq(fr, '_ws.expert.message', notes, want)


def run(argv, tmp):
    ap = argparse.ArgumentParser()
    ap.add_argument('wire_gen')
    ap.add_argument('--tshark', default='tshark')
    ap.add_argument('--seed', type=int, default=1)
    a = ap.parse_args(argv)

    pcap, rows = u.wire_gen(a.wire_gen, tmp, a.seed)
    u.check_manifest_opcodes(rows, u.WIRE_GEN_SIZES)
    frames = u.read_pcap(pcap)
    args = [a.tshark, '-n', '-r', pcap, '-o', 'ip.check_checksum:TRUE', '-T', 'fields',
            '-E', 'separator=/t', '-E', 'occurrence=a', '-E', 'aggregator=|']
    for h in HEURISTICS_OFF:
        args += ['--disable-heuristic', h]
    for p in PROTOCOLS_OFF:
        args += ['--disable-protocol', p]
    for f in FIELDS:
        args += ['-e', f]
    p = subprocess.run(args, capture_output=True, timeout=u.TOOL_TIMEOUT)
    err = p.stderr.decode(errors='replace')
    # tshark warns when run as root; anything else on stderr is a problem.
    err = '\n'.join(l for l in err.splitlines() if 'Running as user' not in l)
    check(p.returncode == 0 and not err.strip(), 'tshark exited %d: %s' % (p.returncode, err))
    lines = p.stdout.decode().splitlines()
    check(len(lines) == len(rows) == len(frames), 'tshark printed %d frames, manifest has %d'
          % (len(lines), len(rows)))

    c = Checker()
    seen_undecoded = set()
    for line, frame, m in zip(lines, frames, rows):
        cols = line.split('\t')
        check(len(cols) == len(FIELDS), 'tshark printed %d fields, asked for %d: %r'
              % (len(cols), len(FIELDS), line[:200]))
        fr = Frame(cols)
        check(fr.n == m['frame'], 'tshark frame %d where %d was due' % (fr.n, m['frame']))
        check_frame(c, fr, frame, m)
        if m['opcode'] in TSHARK_UNDECODED:
            seen_undecoded.add(m['opcode'])
    check(seen_undecoded == set(TSHARK_UNDECODED), 'wire_gen covered %s of the opcodes '
          'tshark does not decode' % sorted(seen_undecoded))
    xrc = [n for n in TSHARK_UNDECODED.values() if n.startswith('XRC_')]
    print('test_tshark_fields: %d packets, %d values equal to the manifest; %d opcodes '
          'decoded by tshark, BTH and raw bytes only for %s and the %d XRC opcodes '
          '(tshark 4.0 does not decode them)'
          % (len(rows), c.values, len(u.OPCODES) - len(TSHARK_UNDECODED),
             ', '.join(n for n in TSHARK_UNDECODED.values() if n not in xrc), len(xrc)))


if __name__ == '__main__':
    u.main(run)
