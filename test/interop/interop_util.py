# SPDX-License-Identifier: BSD-3-Clause
"""Helpers shared by the interop tests: classic pcap files, a reference ICRC, running
wire_gen and droce-pcap, and failing loudly.

Nothing here knows lib/wire's code: the ICRC and the header layouts follow the IB spec
(Annex A17.3.3) and the RFCs, so the tests stay oracles of the C code.
"""

import ipaddress
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

ROCE_PORT = 4791
IPPROTO_UDP = 17
ETH_HLEN = 14
VLAN_HLEN = 4
IPV4_HLEN = 20
IPV6_HLEN = 40
UDP_HLEN = 8
BTH_LEN = 12
ICRC_LEN = 4
ETHERTYPE_VLAN = 0x8100
ETHERTYPE_IPV4 = 0x0800
ETHERTYPE_IPV6 = 0x86DD
# Shortest Ethernet frame without FCS (IEEE 802.3): NICs pad shorter ones.
ETH_MIN_FRAME = 60

# Classic libpcap file format: magic, version 2.4, DLT_EN10MB (1).
PCAP_MAGIC = 0xA1B2C3D4
PCAP_VERSION = (2, 4)
PCAP_SNAPLEN = 65535
DLT_EN10MB = 1

# The payload sizes wire_gen tries for each opcode (payload_sizes[] in wire_gen.c).
WIRE_GEN_SIZES = (0, 1, 2, 3, 4, 5, 255, 256, 1024, 4095, 4096)

# Bounds on the tools a test runs; the meson timeout is the outer bound.
TOOL_TIMEOUT = 300


class Failure(Exception):
    """A mismatch: the test prints it and exits non-zero."""


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def main(run):
    """Runs run(argv) in a fresh temporary directory that is removed afterwards; a
    Failure (or any exception) makes the process exit 1 with its message."""
    tmp = tempfile.mkdtemp(prefix='droce-interop-')
    try:
        run(sys.argv[1:], tmp)
    except Failure as e:
        print('FAIL: %s' % e, file=sys.stderr)
        sys.exit(1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class PcapWriter:
    """Writes Ethernet frames to a classic pcap file."""

    def __init__(self, path):
        self.f = open(path, 'wb')
        self.f.write(struct.pack('<IHHiIII', PCAP_MAGIC, PCAP_VERSION[0], PCAP_VERSION[1],
                                 0, 0, PCAP_SNAPLEN, DLT_EN10MB))
        self.count = 0

    def write(self, frame):
        self.count += 1
        # One frame per microsecond: the file is the same on every run.
        self.f.write(struct.pack('<IIII', 0, self.count, len(frame), len(frame)))
        self.f.write(frame)
        return self.count

    def close(self):
        self.f.close()


def read_pcap(path):
    """The frames of a classic little-endian pcap file, as a list of bytes."""
    with open(path, 'rb') as f:
        data = f.read()
    magic, vmaj, vmin, _, _, _, link = struct.unpack_from('<IHHiIII', data, 0)
    check(magic == PCAP_MAGIC and (vmaj, vmin) == PCAP_VERSION and link == DLT_EN10MB,
          '%s: not a little-endian Ethernet pcap file' % path)
    frames = []
    off = 24
    while off < len(data):
        _, _, caplen, wirelen = struct.unpack_from('<IIII', data, off)
        off += 16
        check(caplen == wirelen, '%s: frame %d truncated in the capture'
              % (path, len(frames) + 1))
        frames.append(data[off:off + caplen])
        off += caplen
    return frames


def l3_offset(frame):
    """Offset of the IP header and the IP version, from the ethertype(s)."""
    (etype,) = struct.unpack_from('!H', frame, 12)
    off = ETH_HLEN
    if etype == ETHERTYPE_VLAN:
        (etype,) = struct.unpack_from('!H', frame, off + 2)
        off += VLAN_HLEN
    if etype == ETHERTYPE_IPV4:
        return off, 4
    if etype == ETHERTYPE_IPV6:
        return off, 6
    raise Failure('ethertype 0x%04x is not IP' % etype)


def ip_span(frame):
    """(l3 offset, l4 offset, end of the IP packet, IP version) of a RoCEv2 frame."""
    l3, ver = l3_offset(frame)
    if ver == 4:
        ihl = (frame[l3] & 0xF) * 4
        (total,) = struct.unpack_from('!H', frame, l3 + 2)
        return l3, l3 + ihl, l3 + total, 4
    (plen,) = struct.unpack_from('!H', frame, l3 + 4)
    return l3, l3 + IPV6_HLEN, l3 + IPV6_HLEN + plen, 6


def ipv4_checksum(hdr):
    """RFC 1071 checksum of an IPv4 header whose checksum field is zero."""
    s = sum(struct.unpack('!%dH' % (len(hdr) // 2), hdr))
    while s > 0xFFFF:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def fix_ipv4_checksum(buf, l3):
    """Recomputes the IPv4 header checksum in place (bytearray)."""
    ihl = (buf[l3] & 0xF) * 4
    buf[l3 + 10:l3 + 12] = b'\0\0'
    buf[l3 + 10:l3 + 12] = struct.pack('!H', ipv4_checksum(bytes(buf[l3:l3 + ihl])))


def ref_icrc(frame):
    """The ICRC per IB spec Annex A17.3.3, as its four wire bytes: CRC-32 (zlib) over
    8 bytes of 0xFF, then the IP, UDP and BTH headers with the variant fields set to
    ones (IPv4 TOS, TTL, checksum; IPv6 traffic class, flow label, hop limit; UDP
    checksum; BTH byte 4), then the rest up to the ICRC; least-significant byte first."""
    l3, l4, end, ver = ip_span(frame)
    b = bytearray(frame[l3:end - ICRC_LEN])
    u = l4 - l3
    if ver == 4:
        b[1] = 0xFF                         # TOS
        b[8] = 0xFF                         # TTL
        b[10:12] = b'\xff\xff'              # header checksum
    else:
        b[0] |= 0x0F                        # traffic class (low nibble of byte 0) ...
        b[1:4] = b'\xff\xff\xff'            # ... the rest of it and the flow label
        b[7] = 0xFF                         # hop limit
    b[u + 6:u + 8] = b'\xff\xff'            # UDP checksum
    b[u + UDP_HLEN + 4] = 0xFF              # BTH FECN, BECN, reserved
    return struct.pack('<I', zlib.crc32(b'\xff' * 8 + bytes(b)))


def run_tool(args, what):
    """Runs a tool, returns its stdout; fails with its stderr when it fails."""
    p = subprocess.run(args, capture_output=True, timeout=TOOL_TIMEOUT)
    check(p.returncode == 0, '%s exited %d: %s' % (what, p.returncode,
                                                   p.stderr.decode(errors='replace')))
    return p.stdout


def wire_gen(tool, tmp, seed):
    """Runs wire_gen; returns (pcap path, manifest rows in frame order)."""
    pcap = os.path.join(tmp, 'wire_gen.pcap')
    manifest = os.path.join(tmp, 'wire_gen.jsonl')
    run_tool([tool, '--seed', str(seed), '--out', pcap, '--manifest', manifest], 'wire_gen')
    with open(manifest) as f:
        rows = [json.loads(line) for line in f]
    for i, r in enumerate(rows):
        check(r['frame'] == i + 1, 'manifest row %d names frame %d' % (i + 1, r['frame']))
    check(rows, 'wire_gen wrote no packets')
    return pcap, rows


def droce_pcap(tool, pcap):
    """Runs droce-pcap --json on pcap: returns ({frame: record}, summary)."""
    out = run_tool([tool, '--json', pcap], 'droce-pcap')
    recs = {}
    summary = None
    for line in out.decode().splitlines():
        if not line.strip():
            continue
        o = json.loads(line)
        if 'summary' in o:
            check(summary is None, 'droce-pcap printed two summaries')
            summary = o['summary']
            continue
        check(summary is None, 'droce-pcap printed a packet after its summary')
        check(o['frame'] not in recs, 'droce-pcap printed frame %d twice' % o['frame'])
        recs[o['frame']] = o
    check(summary is not None, 'droce-pcap printed no summary')
    return recs, summary


# Extension header lengths (IB spec 9.3; IBA 1.5 for FETH; A17.9.3 for the CNP's 16
# reserved bytes). XRCETH: a reserved byte and the 24-bit XRC SRQ number.
EXT_LEN = {'DETH': 8, 'XRCETH': 4, 'FETH': 4, 'RETH': 16, 'ATMETH': 28, 'AETH': 4,
           'ATMACK': 8, 'IMMDT': 4, 'IETH': 4, 'CNP_RSVD': 16}

# Payload rules: NONE carries none; MULT4 carries whole words and never pads (FIRST and
# MIDDLE packets, 9.2.4); ANY pads to a word (LAST/ONLY); FIXED8 is exactly 8 bytes
# (ATOMIC WRITE, IBA 1.5 9.4.6).
NONE, MULT4, ANY, FIXED8 = 'none', 'mult4', 'any', 'fixed8'


def _send_write_rows(base, tr):
    return {
        base + 0x00: (tr + '_SEND_FIRST', [], MULT4),
        base + 0x01: (tr + '_SEND_MIDDLE', [], MULT4),
        base + 0x02: (tr + '_SEND_LAST', [], ANY),
        base + 0x03: (tr + '_SEND_LAST_WITH_IMMEDIATE', ['IMMDT'], ANY),
        base + 0x04: (tr + '_SEND_ONLY', [], ANY),
        base + 0x05: (tr + '_SEND_ONLY_WITH_IMMEDIATE', ['IMMDT'], ANY),
        base + 0x06: (tr + '_RDMA_WRITE_FIRST', ['RETH'], MULT4),
        base + 0x07: (tr + '_RDMA_WRITE_MIDDLE', [], MULT4),
        base + 0x08: (tr + '_RDMA_WRITE_LAST', [], ANY),
        base + 0x09: (tr + '_RDMA_WRITE_LAST_WITH_IMMEDIATE', ['IMMDT'], ANY),
        base + 0x0A: (tr + '_RDMA_WRITE_ONLY', ['RETH'], ANY),
        base + 0x0B: (tr + '_RDMA_WRITE_ONLY_WITH_IMMEDIATE', ['RETH', 'IMMDT'], ANY),
    }


# opcode -> (name, extension headers in wire order, payload rule): IB spec table 38
# (RC, UC, UD, XRC), IBA 1.5 (FLUSH, ATOMIC WRITE; RC only), RoCEv2 Annex A17.9.3 (CNP).
# Written from the spec, not from lib/wire, so the tests check lib/wire's table too.
OPCODES = {}
OPCODES.update(_send_write_rows(0x00, 'RC'))
OPCODES.update({
    0x0C: ('RC_RDMA_READ_REQUEST', ['RETH'], NONE),
    0x0D: ('RC_RDMA_READ_RESPONSE_FIRST', ['AETH'], MULT4),
    0x0E: ('RC_RDMA_READ_RESPONSE_MIDDLE', [], MULT4),
    0x0F: ('RC_RDMA_READ_RESPONSE_LAST', ['AETH'], ANY),
    0x10: ('RC_RDMA_READ_RESPONSE_ONLY', ['AETH'], ANY),
    0x11: ('RC_ACKNOWLEDGE', ['AETH'], NONE),
    0x12: ('RC_ATOMIC_ACKNOWLEDGE', ['AETH', 'ATMACK'], NONE),
    0x13: ('RC_COMPARE_SWAP', ['ATMETH'], NONE),
    0x14: ('RC_FETCH_ADD', ['ATMETH'], NONE),
    0x16: ('RC_SEND_LAST_WITH_INVALIDATE', ['IETH'], ANY),
    0x17: ('RC_SEND_ONLY_WITH_INVALIDATE', ['IETH'], ANY),
    0x1C: ('RC_FLUSH', ['FETH', 'RETH'], NONE),
    0x1D: ('RC_ATOMIC_WRITE', ['RETH'], FIXED8),
})
OPCODES.update(_send_write_rows(0x20, 'UC'))
OPCODES.update({
    0x64: ('UD_SEND_ONLY', ['DETH'], ANY),
    0x65: ('UD_SEND_ONLY_WITH_IMMEDIATE', ['DETH', 'IMMDT'], ANY),
    0x81: ('CNP', ['CNP_RSVD'], NONE),
})
# XRC (101xxxxx): every request names its XRC SRQ in an XRCETH, the first header after
# the BTH; responses (READ responses, ACKs) carry none. No FLUSH or ATOMIC WRITE.
OPCODES.update({
    0xA0: ('XRC_SEND_FIRST', ['XRCETH'], MULT4),
    0xA1: ('XRC_SEND_MIDDLE', ['XRCETH'], MULT4),
    0xA2: ('XRC_SEND_LAST', ['XRCETH'], ANY),
    0xA3: ('XRC_SEND_LAST_WITH_IMMEDIATE', ['XRCETH', 'IMMDT'], ANY),
    0xA4: ('XRC_SEND_ONLY', ['XRCETH'], ANY),
    0xA5: ('XRC_SEND_ONLY_WITH_IMMEDIATE', ['XRCETH', 'IMMDT'], ANY),
    0xA6: ('XRC_RDMA_WRITE_FIRST', ['XRCETH', 'RETH'], MULT4),
    0xA7: ('XRC_RDMA_WRITE_MIDDLE', ['XRCETH'], MULT4),
    0xA8: ('XRC_RDMA_WRITE_LAST', ['XRCETH'], ANY),
    0xA9: ('XRC_RDMA_WRITE_LAST_WITH_IMMEDIATE', ['XRCETH', 'IMMDT'], ANY),
    0xAA: ('XRC_RDMA_WRITE_ONLY', ['XRCETH', 'RETH'], ANY),
    0xAB: ('XRC_RDMA_WRITE_ONLY_WITH_IMMEDIATE', ['XRCETH', 'RETH', 'IMMDT'], ANY),
    0xAC: ('XRC_RDMA_READ_REQUEST', ['XRCETH', 'RETH'], NONE),
    0xAD: ('XRC_RDMA_READ_RESPONSE_FIRST', ['AETH'], MULT4),
    0xAE: ('XRC_RDMA_READ_RESPONSE_MIDDLE', [], MULT4),
    0xAF: ('XRC_RDMA_READ_RESPONSE_LAST', ['AETH'], ANY),
    0xB0: ('XRC_RDMA_READ_RESPONSE_ONLY', ['AETH'], ANY),
    0xB1: ('XRC_ACKNOWLEDGE', ['AETH'], NONE),
    0xB2: ('XRC_ATOMIC_ACKNOWLEDGE', ['AETH', 'ATMACK'], NONE),
    0xB3: ('XRC_COMPARE_SWAP', ['XRCETH', 'ATMETH'], NONE),
    0xB4: ('XRC_FETCH_ADD', ['XRCETH', 'ATMETH'], NONE),
    0xB6: ('XRC_SEND_LAST_WITH_INVALIDATE', ['XRCETH', 'IETH'], ANY),
    0xB7: ('XRC_SEND_ONLY_WITH_INVALIDATE', ['XRCETH', 'IETH'], ANY),
})


def ext_len(opcode):
    return sum(EXT_LEN[h] for h in OPCODES[opcode][1])


def payload_sizes(opcode, sizes):
    """The sizes of sizes that opcode may carry in one packet."""
    rule = OPCODES[opcode][2]
    if rule == NONE:
        return [0]
    if rule == FIXED8:
        return [8]
    if rule == MULT4:
        return [s for s in sizes if s % 4 == 0]
    return list(sizes)


def pad_of(n):
    return -n & 3


def ext_fields(opcode, ext):
    """The manifest fields (wire_gen's names) that the extension header bytes ext of
    opcode carry, decoded per the IB spec layouts."""
    out = {}
    off = 0
    for h in OPCODES[opcode][1]:
        b = ext[off:off + EXT_LEN[h]]
        off += EXT_LEN[h]
        if h == 'RETH':
            out['reth_va'], out['reth_rkey'], out['reth_len'] = struct.unpack('!QII', b)
        elif h == 'AETH':
            (w,) = struct.unpack('!I', b)
            out['aeth_syndrome'], out['aeth_msn'] = w >> 24, w & 0xFFFFFF
        elif h == 'DETH':
            qkey, w = struct.unpack('!II', b)
            out['deth_qkey'], out['deth_src_qp'] = qkey, w & 0xFFFFFF
            out['deth_reserved'] = w >> 24
        elif h == 'XRCETH':
            (w,) = struct.unpack('!I', b)
            out['xrceth_srqn'], out['xrceth_reserved'] = w & 0xFFFFFF, w >> 24
        elif h == 'ATMETH':
            (out['atomic_va'], out['atomic_rkey'], out['atomic_swap_add'],
             out['atomic_compare']) = struct.unpack('!QIQQ', b)
        elif h == 'ATMACK':
            (out['atomic_ack_orig'],) = struct.unpack('!Q', b)
        elif h == 'IMMDT':
            (out['immdt'],) = struct.unpack('!I', b)
        elif h == 'IETH':
            (out['ieth_rkey'],) = struct.unpack('!I', b)
        elif h == 'FETH':
            # IBA 1.5: selectivity level in bits 5..4, placement type in bits 3..0.
            (w,) = struct.unpack('!I', b)
            out['feth_sel'], out['feth_plt'] = (w >> 4) & 3, w & 0xF
            out['feth_reserved'] = w >> 6
        elif h == 'CNP_RSVD':
            out['cnp_reserved'] = b
    return out


def ext_bytes(opcode, f):
    """The extension header bytes of opcode carrying the values of dict f (manifest
    names), built per the IB spec layouts."""
    out = b''
    for h in OPCODES[opcode][1]:
        if h == 'RETH':
            out += struct.pack('!QII', f['reth_va'], f['reth_rkey'], f['reth_len'])
        elif h == 'AETH':
            out += struct.pack('!I', f['aeth_syndrome'] << 24 | f['aeth_msn'])
        elif h == 'DETH':
            out += struct.pack('!II', f['deth_qkey'], f['deth_src_qp'])
        elif h == 'XRCETH':
            out += struct.pack('!I', f['xrceth_srqn'])
        elif h == 'ATMETH':
            out += struct.pack('!QIQQ', f['atomic_va'], f['atomic_rkey'],
                               f['atomic_swap_add'], f['atomic_compare'])
        elif h == 'ATMACK':
            out += struct.pack('!Q', f['atomic_ack_orig'])
        elif h == 'IMMDT':
            out += struct.pack('!I', f['immdt'])
        elif h == 'IETH':
            out += struct.pack('!I', f['ieth_rkey'])
        elif h == 'FETH':
            out += struct.pack('!I', f['feth_sel'] << 4 | f['feth_plt'])
        elif h == 'CNP_RSVD':
            out += bytes(EXT_LEN['CNP_RSVD'])
    return out


# The manifest keys of each extension header.
EXT_KEYS = {
    'RETH': ['reth_va', 'reth_rkey', 'reth_len'],
    'AETH': ['aeth_syndrome', 'aeth_msn'],
    'DETH': ['deth_qkey', 'deth_src_qp'],
    'XRCETH': ['xrceth_srqn'],
    'ATMETH': ['atomic_va', 'atomic_rkey', 'atomic_swap_add', 'atomic_compare'],
    'ATMACK': ['atomic_ack_orig'],
    'IMMDT': ['immdt'],
    'IETH': ['ieth_rkey'],
    'FETH': ['feth_sel', 'feth_plt'],
    'CNP_RSVD': [],
}


def check_manifest_opcodes(rows, sizes):
    """wire_gen must cover every opcode of the spec table at every size it allows, over
    IPv4 and IPv6, with and without VLAN, and nothing else."""
    got = {}
    for r in rows:
        check(r['opcode'] in OPCODES, 'frame %d: opcode 0x%02x is not in the spec table'
              % (r['frame'], r['opcode']))
        check(r['opcode_name'] == OPCODES[r['opcode']][0], 'frame %d: opcode 0x%02x named %s'
              % (r['frame'], r['opcode'], r['opcode_name']))
        got.setdefault(r['opcode'], set()).add((r['payload_len'], r['ip_version'],
                                                bool(r['vlan'])))
    for op in OPCODES:
        want = {(s, v, vl) for s in payload_sizes(op, sizes) for v in (4, 6)
                for vl in (False, True)}
        check(got.get(op) == want, 'opcode 0x%02x: wire_gen covers %s, want %s'
              % (op, sorted(got.get(op, ())), sorted(want)))


# Where droce-pcap --json puts each manifest field of an extension header.
DROCE_PCAP_EXT = {
    'reth_va': ('reth', 'va'), 'reth_rkey': ('reth', 'rkey'), 'reth_len': ('reth', 'len'),
    'aeth_syndrome': ('aeth', 'syndrome'), 'aeth_msn': ('aeth', 'msn'),
    'deth_qkey': ('deth', 'qkey'), 'deth_src_qp': ('deth', 'src_qp'),
    'xrceth_srqn': ('xrceth', 'srqn'),
    'immdt': (None, 'immdt'),
    'ieth_rkey': ('ieth', 'rkey'),
    'atomic_va': ('atomic', 'va'), 'atomic_rkey': ('atomic', 'rkey'),
    'atomic_swap_add': ('atomic', 'swap_add'), 'atomic_compare': ('atomic', 'compare'),
    'atomic_ack_orig': ('atomic_ack', 'orig'),
    'feth_sel': ('feth', 'sel'), 'feth_plt': ('feth', 'plt'),
}
# The droce-pcap keys of every extension header it can print.
DROCE_PCAP_EXT_KEYS = {'reth', 'aeth', 'deth', 'xrceth', 'immdt', 'ieth', 'atomic',
                       'atomic_ack', 'feth'}
# 802.1Q: droce-pcap prints the VLAN ID, the low 12 bits of the TCI.
VLAN_VID_MASK = 0x0FFF


def compare_droce_record(rec, m, what):
    """Checks one droce-pcap --json record against the fields m (manifest names) of the
    packet it decodes; returns how many values it compared."""
    n = [0]

    def eq(key, got, want):
        n[0] += 1
        check(got == want, '%s: droce-pcap says %s = %r, expected %r' % (what, key, got, want))

    def get(*path):
        o = rec
        for k in path:
            check(isinstance(o, dict) and k in o, '%s: droce-pcap record has no %s: %s'
                  % (what, '.'.join(path), json.dumps(rec)))
            o = o[k]
        return o

    op = m['opcode']
    eq('opcode', get('opcode'), op)
    eq('opcode_name', get('opcode_name'), OPCODES[op][0])
    for k in ('se', 'mig', 'ackreq', 'fecn', 'becn'):
        eq(k, get(k), bool(m[k]))
    for k in ('pad', 'pkey', 'dqpn', 'psn', 'payload_len'):
        eq(k, get(k), m[k])
    eq('tver', get('tver'), 0)
    want_ext = set()
    for h in OPCODES[op][1]:
        for k in EXT_KEYS[h]:
            outer, inner = DROCE_PCAP_EXT[k]
            want_ext.add(outer or inner)
            eq(k, get(outer, inner) if outer else get(inner), m[k])
    eq('extension headers', DROCE_PCAP_EXT_KEYS & set(rec), want_ext)
    eq('src', ipaddress.ip_address(get('src')), ipaddress.ip_address(m['src']))
    eq('dst', ipaddress.ip_address(get('dst')), ipaddress.ip_address(m['dst']))
    eq('sport', get('sport'), m['udp_sport'])
    eq('dport', get('dport'), ROCE_PORT)
    if m['vlan']:
        eq('vlan', get('vlan'), m['vlan_tci'] & VLAN_VID_MASK)
    else:
        eq('vlan present', 'vlan' in rec, False)
    return n[0]
