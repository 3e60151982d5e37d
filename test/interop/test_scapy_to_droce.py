#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""lib/wire's parser checked against scapy: scapy builds IPv4 RoCEv2 packets of every
opcode and many sizes, with and without VLAN (scapy.contrib.roce computes the ICRC), and
droce-pcap, which parses with lib/wire, must accept every one and decode the values
scapy was given. Then every single-bit flip of an ICRC-covered byte must be rejected, and
changes of the fields the ICRC masks (TOS, TTL, UDP checksum, BTH byte 4) must be
accepted with the same ICRC.

Flips are complete (every bit of every covered byte) for every packet with a payload of
at most FULL_FLIP_MAX bytes and for one 4095-byte packet; the other large packets get
every bit of their headers, pad and ICRC, of the first and last EDGE bytes of payload,
and PAYLOAD_SAMPLES random payload bits. A CRC-32 catches every single-bit error at any
length, so what the large packets add is the parser's handling of their lengths.

usage: test_scapy_to_droce.py DROCE_PCAP [--seed N]
"""

import argparse
import ipaddress
import json
import os
import random
import subprocess
from collections import Counter

import interop_util as u
from interop_util import check

from scapy.all import IP, UDP, Dot1Q, Ether, Raw, raw
from scapy.contrib.roce import AETH, BTH, CNPPadding

# Sizes every opcode is built with (those it allows): every pad count, around the
# smallest MTU, and up to the largest payload.
SIZES = (0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 255, 256, 1024, 4095, 4096)
FULL_FLIP_MAX = 256
EDGE = 16
PAYLOAD_SAMPLES = 64
# The packet whose every bit is flipped although it is large.
FULL_FLIP_BIG = (0x04, 4095, False)     # RC_SEND_ONLY, 4095 bytes, no VLAN
# Variants per pcap handed to droce-pcap: bounds the disk space the test takes.
CHUNK = 50000

# What a variant must do.
ACCEPT = 'accepted with the same ICRC'
REJECT = 'rejected'
ICRC_HDR = 'rejected for its ICRC (a header field only the ICRC covers)'
ICRC_BODY = 'rejected for its ICRC (extension header, payload or pad)'
ICRC_FIELD = 'rejected for its ICRC (the ICRC field itself)'
IP_CSUM = 'rejected for its IPv4 header checksum'

# Per-bit expectations for flips in the IPv4 header (checksum fixed up afterwards, so
# that only the ICRC and the length checks stand between a flip and acceptance), by
# byte: a single kind, or a list of one kind per bit from the most significant.
IPV4_FLIPS = {
    0: REJECT,                      # version, IHL
    2: REJECT, 3: REJECT,           # total length
    4: ICRC_HDR, 5: ICRC_HDR,       # identification
    # reserved flag, DF: only the ICRC covers them; MF and the offset make a fragment
    6: [ICRC_HDR, ICRC_HDR, REJECT, REJECT, REJECT, REJECT, REJECT, REJECT],
    7: REJECT,                      # fragment offset
    9: REJECT,                      # protocol
}
for _b in range(12, 20):            # source and destination addresses
    IPV4_FLIPS[_b] = ICRC_HDR
UDP_FLIPS = {0: ICRC_HDR, 1: ICRC_HDR,  # source port
             2: REJECT, 3: REJECT,      # destination port: no longer RoCEv2
             4: REJECT, 5: REJECT}      # length
BTH_FLIPS = {
    0: REJECT,                                          # opcode
    1: [ICRC_HDR, ICRC_HDR] + [REJECT] * 6,             # SE, M; PadCnt, TVer
    2: ICRC_HDR, 3: ICRC_HDR,                           # P_Key
    5: ICRC_HDR, 6: ICRC_HDR, 7: ICRC_HDR,              # DestQP
    8: ICRC_HDR, 9: ICRC_HDR, 10: ICRC_HDR, 11: ICRC_HDR,   # AckReq, reserved, PSN
}
IPV4_TOS, IPV4_TTL, IPV4_CSUM = 1, 8, 10
UDP_CSUM = 6
BTH_FECN_BYTE = 4


def rand_fields(rng, op, size):
    f = {'opcode': op, 'se': rng.getrandbits(1), 'mig': rng.getrandbits(1),
         'ackreq': rng.getrandbits(1), 'fecn': rng.getrandbits(1),
         'becn': rng.getrandbits(1), 'pkey': rng.getrandbits(16),
         'dqpn': rng.getrandbits(24), 'psn': rng.getrandbits(24),
         'pad': u.pad_of(size), 'payload_len': size,
         'reth_va': rng.getrandbits(64), 'reth_rkey': rng.getrandbits(32),
         'reth_len': rng.getrandbits(32), 'aeth_syndrome': rng.getrandbits(8),
         'aeth_msn': rng.getrandbits(24), 'deth_qkey': rng.getrandbits(32),
         'deth_src_qp': rng.getrandbits(24), 'xrceth_srqn': rng.getrandbits(24),
         'immdt': rng.getrandbits(32),
         'ieth_rkey': rng.getrandbits(32), 'atomic_va': rng.getrandbits(64),
         'atomic_rkey': rng.getrandbits(32), 'atomic_swap_add': rng.getrandbits(64),
         'atomic_compare': rng.getrandbits(64), 'atomic_ack_orig': rng.getrandbits(64),
         'feth_sel': rng.getrandbits(2), 'feth_plt': rng.getrandbits(4),
         'src': str(ipaddress.IPv4Address(rng.getrandbits(32))),
         'dst': str(ipaddress.IPv4Address(rng.getrandbits(32))),
         'udp_sport': 0xC000 | rng.getrandbits(14), 'vlan_tci': rng.getrandbits(16)}
    return f


def build(rng, op, size, vlan):
    """A frame scapy builds, with the values it was given."""
    f = rand_fields(rng, op, size)
    f['vlan'] = vlan
    payload = rng.randbytes(size)
    l2 = Ether(src='02:00:00:00:00:01', dst='02:00:00:00:00:02')
    if vlan:
        t = f['vlan_tci']
        l2 = l2 / Dot1Q(prio=t >> 13, id=(t >> 12) & 1, vlan=t & 0xFFF)
    bth = BTH(opcode=op, solicited=f['se'], migreq=f['mig'], padcount=f['pad'],
              pkey=f['pkey'], fecn=f['fecn'], becn=f['becn'], dqpn=f['dqpn'],
              ackreq=f['ackreq'], psn=f['psn'])
    # scapy's own layers where it has them; raw bytes for the headers it lacks (its
    # contrib roce knows no XRC opcode: BTH(opcode=0xA0..0xB7) by number, the XRCETH and
    # whatever follows as raw bytes, XRC_ACKNOWLEDGE's AETH too).
    if op == 0x11:
        body = AETH(syndrome=f['aeth_syndrome'], msn=f['aeth_msn'])
    elif op == 0x81:
        body = CNPPadding()
    else:
        body = Raw(u.ext_bytes(op, f) + payload + bytes(f['pad']))
    pkt = (l2 / IP(src=f['src'], dst=f['dst'], tos=rng.getrandbits(8),
                   ttl=1 + rng.getrandbits(7), id=rng.getrandbits(16), flags='DF') /
           UDP(sport=f['udp_sport'], dport=u.ROCE_PORT, chksum=0) / bth / body)
    frame = raw(pkt)
    # Ethernet pads short frames on the wire; scapy must build the ICRC without it.
    frame += bytes(max(0, u.ETH_MIN_FRAME - len(frame)))
    l3, l4, end, _ = u.ip_span(frame)
    icrc = frame[end - u.ICRC_LEN:end]
    check(icrc == u.ref_icrc(frame), '%s %d bytes: scapy ICRC %s, reference %s'
          % (u.OPCODES[op][0], size, icrc.hex(), u.ref_icrc(frame).hex()))
    return {'frame': frame, 'fields': f, 'l3': l3, 'l4': l4, 'bth': l4 + u.UDP_HLEN,
            'end': end, 'icrc': icrc.hex().upper(), 'payload_off': end - u.ICRC_LEN -
            f['pad'] - size, 'size': size}


def kind_of(table, byte, bit):
    k = table.get(byte)
    if isinstance(k, list):
        return k[7 - bit]
    return k


def flip_positions(p, full, rng):
    """(offset, bit, kind) of every flip of packet p: all covered bits when full, else
    the headers, pad and ICRC, the payload's edges and a sample of its other bits."""
    out = []
    for off in range(p['l3'], p['end']):
        if off < p['l4']:
            kind = 'ipv4'
        elif off < p['bth']:
            kind = 'udp'
        elif off < p['bth'] + u.BTH_LEN:
            kind = 'bth'
        elif off < p['end'] - u.ICRC_LEN:
            kind = ICRC_BODY
        else:
            kind = ICRC_FIELD
        if not full and p['payload_off'] + EDGE <= off < p['payload_off'] + p['size'] - EDGE:
            continue
        for bit in range(8):
            if kind == 'ipv4':
                i = off - p['l3']
                if i in (IPV4_TOS, IPV4_TTL):
                    continue        # masked: see masked_variants
                k = IP_CSUM if i in (IPV4_CSUM, IPV4_CSUM + 1) else kind_of(IPV4_FLIPS, i, bit)
            elif kind == 'udp':
                i = off - p['l4']
                if i in (UDP_CSUM, UDP_CSUM + 1):
                    continue
                k = kind_of(UDP_FLIPS, i, bit)
            elif kind == 'bth':
                i = off - p['bth']
                if i == BTH_FECN_BYTE:
                    continue
                k = kind_of(BTH_FLIPS, i, bit)
            else:
                k = kind
            check(k is not None, 'no expectation for byte %d' % off)
            out.append((off, bit, k))
    if not full:
        lo, hi = p['payload_off'] + EDGE, p['payload_off'] + p['size'] - EDGE
        for _ in range(PAYLOAD_SAMPLES if hi > lo else 0):
            out.append((rng.randrange(lo, hi), rng.randrange(8), ICRC_BODY))
    return out


def masked_variants(p, rng):
    """Frames that change only what the ICRC masks: each bit of TOS and TTL (IPv4
    checksum fixed up), of the UDP checksum and of BTH byte 4, then all at once."""
    l3, l4, bth = p['l3'], p['l4'], p['bth']
    out = []
    for off in (l3 + IPV4_TOS, l3 + IPV4_TTL, l4 + UDP_CSUM, l4 + UDP_CSUM + 1,
                bth + BTH_FECN_BYTE):
        for bit in range(8):
            b = bytearray(p['frame'])
            b[off] ^= 1 << bit
            u.fix_ipv4_checksum(b, l3)
            out.append(bytes(b))
    b = bytearray(p['frame'])
    for off in (l3 + IPV4_TOS, l3 + IPV4_TTL, l4 + UDP_CSUM, l4 + UDP_CSUM + 1,
                bth + BTH_FECN_BYTE):
        b[off] = rng.getrandbits(8)
    u.fix_ipv4_checksum(b, l3)
    out.append(bytes(b))
    return out


def verdict_ok(kind, rec, orig_icrc):
    """Does droce-pcap's record (None: not printed, so not RoCEv2) meet kind?"""
    if kind == ACCEPT:
        return (rec is not None and rec['result'] == 'OK' and rec['icrc'] == orig_icrc and
                rec['icrc_expected'] == orig_icrc and rec['icrc_ok'] is True)
    if kind == REJECT:
        return rec is None or rec['result'] != 'OK'
    if kind == IP_CSUM:
        return rec is not None and rec['result'] == 'BAD_IP_CSUM'
    if rec is None or rec['result'] != 'BAD_ICRC' or rec['icrc_ok'] is not False:
        return False
    if kind == ICRC_FIELD:
        return rec['icrc'] != orig_icrc and rec['icrc_expected'] == orig_icrc
    return rec['icrc'] == orig_icrc and rec['icrc_expected'] != orig_icrc


def run_droce_pcap(tool, pcap, expect, packets):
    """Runs droce-pcap --json over pcap, whose frame i+1 is expect[i] = (kind, packet
    index, description); checks every verdict. Returns a count of (kind, result)."""
    seen = bytearray(len(expect) + 1)
    results = Counter()
    summary = None
    with subprocess.Popen([tool, '--json', pcap], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE) as proc:
        for line in proc.stdout:
            o = json.loads(line)
            if 'summary' in o:
                summary = o['summary']
                continue
            fr = o['frame']
            check(1 <= fr <= len(expect) and not seen[fr], 'droce-pcap: unexpected frame %d'
                  % fr)
            seen[fr] = 1
            kind, pi, desc = expect[fr - 1]
            p = packets[pi]
            check(verdict_ok(kind, o, p['icrc']), 'frame %d (%s %d bytes%s, %s) must be %s; '
                  'droce-pcap: %s' % (fr, u.OPCODES[p['fields']['opcode']][0], p['size'],
                                      ' VLAN' if p['fields']['vlan'] else '', desc, kind,
                                      json.dumps(o)))
            results[(kind, o['result'])] += 1
        err = proc.stderr.read().decode(errors='replace')
        check(proc.wait(timeout=u.TOOL_TIMEOUT) == 0, 'droce-pcap failed: %s' % err)
    check(summary is not None, 'droce-pcap printed no summary')
    check(summary['packets'] == len(expect), 'droce-pcap counted %d packets, wrote %d'
          % (summary['packets'], len(expect)))
    for fr in range(1, len(expect) + 1):
        if not seen[fr]:
            kind, pi, desc = expect[fr - 1]
            check(verdict_ok(kind, None, packets[pi]['icrc']),
                  'frame %d (%s, %s) must be %s; droce-pcap did not see it as RoCEv2'
                  % (fr, u.OPCODES[packets[pi]['fields']['opcode']][0], desc, kind))
            results[(kind, 'not RoCEv2')] += 1
    return results


def run(argv, tmp):
    ap = argparse.ArgumentParser()
    ap.add_argument('droce_pcap')
    ap.add_argument('--seed', type=int, default=1)
    a = ap.parse_args(argv)
    rng = random.Random(a.seed)

    packets = []
    for op in sorted(u.OPCODES):
        for size in u.payload_sizes(op, SIZES):
            for vlan in (False, True):
                packets.append(build(rng, op, size, vlan))

    # 1. Every packet scapy built is accepted and decoded to the values scapy was given.
    pcap = os.path.join(tmp, 'scapy.pcap')
    w = u.PcapWriter(pcap)
    for p in packets:
        w.write(p['frame'])
    w.close()
    recs, summary = u.droce_pcap(a.droce_pcap, pcap)
    check(summary['packets'] == summary['roce'] == summary['ok'] == len(packets),
          'droce-pcap summary %s for %d good packets' % (summary, len(packets)))
    fields = 0
    for i, p in enumerate(packets):
        rec = recs.get(i + 1)
        check(rec is not None and verdict_ok(ACCEPT, rec, p['icrc']),
              'scapy packet %d (%s, %d bytes) not accepted: %s'
              % (i + 1, u.OPCODES[p['fields']['opcode']][0], p['size'], rec))
        fields += u.compare_droce_record(rec, p['fields'], 'scapy packet %d' % (i + 1))

    # 2. Flips and masked changes, written CHUNK variants to a pcap.
    pcap = os.path.join(tmp, 'variants.pcap')
    results = Counter()
    size_mb = 0.0
    bits = 0

    def variants():
        for pi, p in enumerate(packets):
            f = p['fields']
            full = (p['size'] <= FULL_FLIP_MAX or
                    (f['opcode'], p['size'], f['vlan']) == FULL_FLIP_BIG)
            for off, bit, kind in flip_positions(p, full, rng):
                b = bytearray(p['frame'])
                b[off] ^= 1 << bit
                if off < p['l4'] and kind != IP_CSUM:
                    u.fix_ipv4_checksum(b, p['l3'])
                yield bytes(b), (kind, pi, 'bit %d of byte %d flipped' % (bit, off))
            for v in masked_variants(p, rng):
                yield v, (ACCEPT, pi, 'masked field changed')

    def flush(w, expect):
        nonlocal size_mb
        w.close()
        size_mb += os.path.getsize(pcap) / 1e6
        results.update(run_droce_pcap(a.droce_pcap, pcap, expect, packets))
        os.unlink(pcap)

    w, expect = u.PcapWriter(pcap), []
    for frame, exp in variants():
        w.write(frame)
        expect.append(exp)
        bits += exp[0] != ACCEPT
        if len(expect) == CHUNK:
            flush(w, expect)
            w, expect = u.PcapWriter(pcap), []
    flush(w, expect)

    by_kind = Counter()
    for (kind, _), n in results.items():
        by_kind[kind] += n
    print('test_scapy_to_droce: %d scapy packets (%d opcodes) accepted, %d decoded values '
          'equal; %d single-bit flips and %d masked-field changes checked (%.0f MB pcap)'
          % (len(packets), len(u.OPCODES), fields, bits, by_kind[ACCEPT], size_mb))
    for (kind, result), n in sorted(results.items()):
        print('  %-62s %-16s %7d' % (kind, result, n))


if __name__ == '__main__':
    u.main(run)
