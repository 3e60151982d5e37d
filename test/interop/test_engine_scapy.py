#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The transport engine answering packets scapy built: engine-pkt-runner gives one engine
one QP on a net_ring port, feeds it the frames of a pcap file one at a time and captures
what the port sends. scapy (scapy.contrib.roce, which computes IPv4 ICRCs) builds the
requests; every answer is dissected by scapy and checked field by field against the IB
spec's rules (9.7.5.1: ACK, NAK PSN sequence error, RNR NAK, NAK invalid request), and its
ICRC must equal the one scapy computes over it. IPv6 ICRCs, which scapy cannot compute,
are checked against interop_util.ref_icrc. The other direction too: the requester's
SEND packets are checked, and scapy-built ACKs must complete them.

usage: test_engine_scapy.py ENGINE_PKT_RUNNER [CASE...]
"""

import argparse
import json
import os
import struct
import subprocess
import time

import interop_util as u
from interop_util import check

from scapy.all import IP, UDP, Dot1Q, Ether, IPv6, Raw, raw
from scapy.contrib.roce import AETH, BTH

# The runner's defaults (engine_pkt_runner.c): the engine's port and the peer scapy plays.
SELF_MAC, PEER_MAC = '02:00:00:00:00:02', '02:00:00:00:00:01'
SELF_IP, PEER_IP = '10.99.0.2', '10.99.0.1'
SELF_IP6, PEER_IP6 = 'fd00::2', 'fd00::1'
HOP_LIMIT = 64
# The first QP of a fresh device (QP0 and QP1 are special, IB 10.2.5.1); the runner
# prints it and the test checks it is the one the packets were built for.
QPN = 2
PEER_QPN = 0x12                     # the runner's --dest-qpn default
PEER_SPORT = 0xC123                 # any source port: the engine must not care
PKEY_DEFAULT = 0xFFFF
PSN_MASK = 0xFFFFFF
RECV_WR_ID, SEND_WR_ID = 0x100, 0x200

# IB table 38 opcodes.
RC_SEND_FIRST, RC_SEND_MIDDLE, RC_SEND_LAST, RC_SEND_ONLY = 0x00, 0x01, 0x02, 0x04
RC_ACKNOWLEDGE = 0x11
RC_READ_RESPONSE_ONLY = 0x10
# IBA 1.5: FLUSH (BTH, FETH, RETH) and ATOMIC WRITE (BTH, RETH, 8 bytes); FETH: selectivity
# level in bits 5..4, placement type in bits 3..0 (global visibility 1, persistence 2).
RC_FLUSH, RC_ATOMIC_WRITE = 0x1C, 0x1D
FLUSH_GLOBAL, FLUSH_PERSISTENT = 0x1, 0x2
FLUSH_RANGE, FLUSH_MR = 0, 1
# --target: the runner's MR at this iova, the domain's first key: index 1, variant 1
# (engine_pkt_runner.c; the variant counter starts at 1).
TARGET_IOVA, TARGET_RKEY = 0x10000000, 0x101
# enum ibv_access_flags, and rdma-core 45's FLUSH_GLOBAL / FLUSH_PERSISTENT bits.
ACC_LOCAL_WRITE, ACC_REMOTE_WRITE, ACC_REMOTE_READ = 0x1, 0x2, 0x4
ACC_FLUSH_GLOBAL, ACC_FLUSH_PERSISTENT = 0x100, 0x200
CNP = 0x81                          # RoCEv2 Annex A17.9.3
CNP_RSVD_LEN = 16
ECN_CE = 0x03
UD_SEND_ONLY = 0x64
# AETH syndromes (9.7.5.1, table 43): ACK with credits "invalid" (no end-to-end flow
# control), RNR NAK | timer, NAK codes.
AETH_ACK_NO_CREDITS = 0x1F
AETH_RNR_NAK = 0x20
AETH_NAK_PSN_SEQ = 0x60
AETH_NAK_INVALID_REQ = 0x61
# enum ibv_wc_status, ibv_wc_opcode, ibv_wc_flags (rdma-core verbs.h).
WC_SUCCESS, WC_LOC_LEN_ERR, WC_WR_FLUSH_ERR = 0, 1, 5
WC_SEND, WC_RECV = 0, 1 << 7
WC_FLUSH, WC_ATOMIC_WRITE = 8, 9
WC_GRH = 1 << 0
GRH_AREA = 40
IPV4_DF = 0x2                       # scapy's IP flags value of DF alone
AETH_LEN = 4
RUNNER_TIMEOUT = 30                 # seconds for one runner process


def psn(p):
    return p & PSN_MASK


def udp_sport(lqpn, rqpn):
    """The UDP source port Linux RoCE uses for a QP pair (rdma_calc_flow_label folded by
    rdma_flow_label_to_udp_sport into 0xC000..0xFFFF); the engine documents the same."""
    fl = lqpn * rqpn
    fl ^= fl >> 20
    fl ^= fl >> 40
    fl &= 0xFFFFF
    return ((fl & 0x3FFF) ^ (fl >> 14)) | 0xC000


def send_pattern(i, n):
    """The bytes of the runner's send i (engine_pkt_runner.c --help)."""
    return bytes((k * 7 + 3 + i * 16) & 0xFF for k in range(n))


def payload_of(seed, n):
    return bytes((seed + 13 * k) & 0xFF for k in range(n))


# ---- Requests scapy builds ----

def frame_of(pkt, v6):
    """Raw frame: scapy's ICRC for IPv4, the reference one for IPv6 (scapy has none:
    the packet is built with ICRC 0 and patched); short frames get the Ethernet padding
    a NIC would add."""
    frame = raw(pkt)
    if v6:
        frame = frame[:-u.ICRC_LEN] + u.ref_icrc(frame)
    else:
        check(frame[-u.ICRC_LEN:] == u.ref_icrc(frame), 'scapy and the reference ICRC '
              'differ on a request: %s' % frame.hex())
    return frame + bytes(max(0, u.ETH_MIN_FRAME - len(frame)))


def roce(opcode, p, body, ackreq=False, dqpn=QPN, v6=False, tos=0):
    pad = u.pad_of(len(body))
    l3 = (IPv6(src=PEER_IP6, dst=SELF_IP6, hlim=HOP_LIMIT, tc=tos) if v6 else
          IP(src=PEER_IP, dst=SELF_IP, ttl=HOP_LIMIT, flags='DF', tos=tos))
    pkt = (Ether(src=PEER_MAC, dst=SELF_MAC) / l3 /
           UDP(sport=PEER_SPORT, dport=u.ROCE_PORT, chksum=0) /
           BTH(opcode=opcode, padcount=pad, pkey=PKEY_DEFAULT, dqpn=dqpn, ackreq=int(ackreq),
               psn=psn(p), icrc=0 if v6 else None) / Raw(body + bytes(pad)))
    return frame_of(pkt, v6)


def rc_send(opcode, p, payload, ackreq=False, v6=False, tos=0):
    return roce(opcode, p, payload, ackreq, v6=v6, tos=tos)


def cnp_connectx(dqpn=QPN, sport=0, psn_=0):
    """A CNP as a ConnectX sends it (RoCEv2 Annex A17.9.3; seen on the wire): UDP source
    port 0, DSCP 48 and not ECN-capable, BTH opcode 0x81 with BECN set, P_Key 0xFFFF, PSN 0,
    16 reserved zero bytes, then the ICRC."""
    pkt = (Ether(src=PEER_MAC, dst=SELF_MAC) /
           IP(src=PEER_IP, dst=SELF_IP, ttl=HOP_LIMIT, flags='DF', tos=CNP_DSCP << 2) /
           UDP(sport=sport, dport=u.ROCE_PORT, chksum=0) /
           BTH(opcode=CNP, pkey=PKEY_DEFAULT, becn=1, dqpn=dqpn, psn=psn_) /
           Raw(bytes(CNP_RSVD_LEN)))
    return frame_of(pkt, False)


def ud_send(p, qkey, src_qp, payload):
    return roce(UD_SEND_ONLY, p, struct.pack('!II', qkey, src_qp) + payload,
                ackreq=False)


def feth(plt, sel):
    return struct.pack('!I', (sel << 4) | plt)


def reth(va, rkey, length):
    return struct.pack('!QII', va, rkey, length)


def rc_flush(p, plt, sel, va, rkey, length):
    return roce(RC_FLUSH, p, feth(plt, sel) + reth(va, rkey, length), ackreq=True)


def rc_atomic_write(p, va, rkey, data):
    return roce(RC_ATOMIC_WRITE, p, reth(va, rkey, 8) + data, ackreq=True)


def rc_read_resp_only(p, msn):
    """An RDMA READ RESPONSE ONLY without payload: how FLUSH and ATOMIC WRITE are answered."""
    return roce(RC_READ_RESPONSE_ONLY, p, struct.pack('!I', AETH_ACK_NO_CREDITS << 24 | msn))


def rc_ack(p, syndrome, msn):
    pkt = (Ether(src=PEER_MAC, dst=SELF_MAC) /
           IP(src=PEER_IP, dst=SELF_IP, ttl=HOP_LIMIT, flags='DF') /
           UDP(sport=PEER_SPORT, dport=u.ROCE_PORT, chksum=0) /
           BTH(opcode=RC_ACKNOWLEDGE, pkey=PKEY_DEFAULT, dqpn=QPN, psn=psn(p)) /
           AETH(syndrome=syndrome, msn=msn))
    return frame_of(pkt, False)


def bad_icrc(frame):
    return frame[:-1] + bytes([frame[-1] ^ 0x01])


def flip_payload_bit(frame, off_from_end):
    b = bytearray(frame)
    b[len(b) - off_from_end] ^= 0x80
    return bytes(b)


# ---- Running the engine ----

class Run:
    """One runner process: its JSON, and the frames the port sent before any input and
    after each input frame."""

    def __init__(self, tool, tmp, name, inputs, args):
        self.name = name
        pin = os.path.join(tmp, name + '.in.pcap')
        pout = os.path.join(tmp, name + '.out.pcap')
        w = u.PcapWriter(pin)
        for f in inputs:
            w.write(f)
        w.close()
        p = subprocess.run(['timeout', str(RUNNER_TIMEOUT), tool, '--in', pin, '--out', pout]
                           + [str(a) for a in args], capture_output=True)
        check(p.returncode == 0, '%s: engine-pkt-runner exited %d: %s' %
              (name, p.returncode, p.stderr.decode(errors='replace')))
        lines = [ln for ln in p.stdout.decode().splitlines() if ln.startswith('{"qpn"')]
        check(len(lines) == 1, '%s: runner printed %d JSON lines' % (name, len(lines)))
        self.js = json.loads(lines[0])
        check(self.js['qpn'] == QPN, '%s: the QP is QPN %d, the packets were built for %d'
              % (name, self.js['qpn'], QPN))
        out = u.read_pcap(pout)
        after = self.js['tx_after']
        check(len(after) == len(inputs), '%s: runner read %d frames of %d'
              % (name, len(after), len(inputs)))
        check(self.js['tx_before'] + sum(after) == len(out), '%s: counts %d + %s, capture %d'
              % (name, self.js['tx_before'], after, len(out)))
        self.before = out[:self.js['tx_before']]
        self.answers = []
        off = self.js['tx_before']
        for n in after:
            self.answers.append(out[off:off + n])
            off += n
        self.inputs = inputs
        self.fields = 0

    def eq(self, what, got, want):
        self.fields += 1
        check(got == want, '%s: %s is %r, want %r' % (self.name, what, got, want))

    def counters(self, **want):
        for k, v in want.items():
            self.eq('counter %s' % k, self.js['counters'][k], v)

    def state(self, want):
        self.eq('QP state', self.js['state'], want)

    def wcs(self, want):
        """Completions: each a dict of the fields that must match (all are printed)."""
        got = self.js['completions']
        self.eq('completion count (%s)' % got, len(got), len(want))
        for i, (g, w) in enumerate(zip(got, want)):
            for k, v in w.items():
                self.eq('completion %d %s' % (i, k), g.get(k), v)

    def silent(self, i):
        self.eq('frames sent after input %d' % i, len(self.answers[i]), 0)


# ---- Checking what the engine sent ----

ECN_ECT0 = 0x02
CNP_DSCP = 48
LINE_KBPS = 100000000               # the reaction point's max on a port with no speed


def tclass_want(pkt):
    """The IP traffic class droce's defaults give: CNPs DSCP 48, everything else DSCP 0;
    not ECN-capable, the reaction point being off by default (doc/congestion.md)."""
    return CNP_DSCP << 2 if pkt.haslayer(BTH) and pkt[BTH].opcode == 0x81 else 0


def check_ip_udp(r, what, frame, pkt, req, v6, l4_len):
    """Ethernet, IP and UDP of a frame the engine sent to the peer; req (if any) is the
    request it answers, whose addresses it must swap."""
    r.eq(what + ' Ethernet src', pkt[Ether].src, SELF_MAC)
    r.eq(what + ' Ethernet dst', pkt[Ether].dst, PEER_MAC)
    r.eq(what + ' ethertype', pkt[Ether].type, u.ETHERTYPE_IPV6 if v6 else u.ETHERTYPE_IPV4)
    if req is not None:
        q = Ether(req)
        r.eq(what + ' Ethernet src = request dst', pkt[Ether].src, q[Ether].dst)
        r.eq(what + ' Ethernet dst = request src', pkt[Ether].dst, q[Ether].src)
        ql3 = q[IPv6] if v6 else q[IP]
        l3 = pkt[IPv6] if v6 else pkt[IP]
        r.eq(what + ' IP src = request dst', l3.src, ql3.dst)
        r.eq(what + ' IP dst = request src', l3.dst, ql3.src)
    if v6:
        ip = pkt[IPv6]
        r.eq(what + ' IPv6 version', ip.version, 6)
        # DSCP 0 (the port's roce_dscp), Not-ECT: the reaction point is off by default
        # (doc/congestion.md); CNPs carry DSCP 48.
        r.eq(what + ' IPv6 traffic class', ip.tc, tclass_want(pkt))
        r.eq(what + ' IPv6 flow label', ip.fl, 0)
        r.eq(what + ' IPv6 payload length', ip.plen, l4_len)
        r.eq(what + ' IPv6 next header', ip.nh, u.IPPROTO_UDP)
        r.eq(what + ' IPv6 hop limit', ip.hlim, HOP_LIMIT)
        r.eq(what + ' IPv6 src', ip.src, SELF_IP6)
        r.eq(what + ' IPv6 dst', ip.dst, PEER_IP6)
    else:
        ip = pkt[IP]
        l3 = u.ETH_HLEN
        r.eq(what + ' IPv4 version', ip.version, 4)
        r.eq(what + ' IPv4 IHL', ip.ihl, 5)
        r.eq(what + ' IPv4 TOS', ip.tos, tclass_want(pkt))
        r.eq(what + ' IPv4 total length', ip.len, u.IPV4_HLEN + l4_len)
        # A17.4.1: RoCEv2 packets are never fragmented: DF, no MF, offset 0.
        r.eq(what + ' IPv4 flags', int(ip.flags), IPV4_DF)
        r.eq(what + ' IPv4 fragment offset', ip.frag, 0)
        r.eq(what + ' IPv4 TTL', ip.ttl, HOP_LIMIT)
        r.eq(what + ' IPv4 protocol', ip.proto, u.IPPROTO_UDP)
        r.eq(what + ' IPv4 src', ip.src, SELF_IP)
        r.eq(what + ' IPv4 dst', ip.dst, PEER_IP)
        hdr = bytearray(frame[l3:l3 + u.IPV4_HLEN])
        hdr[10:12] = b'\0\0'
        r.eq(what + ' IPv4 header checksum', ip.chksum, u.ipv4_checksum(bytes(hdr)))
    r.eq(what + ' UDP sport', pkt[UDP].sport, udp_sport(QPN, PEER_QPN))
    r.eq(what + ' UDP dport', pkt[UDP].dport, u.ROCE_PORT)
    r.eq(what + ' UDP length', pkt[UDP].len, l4_len)
    # A17.4.2: RoCEv2 senders put 0 in the UDP checksum.
    r.eq(what + ' UDP checksum', pkt[UDP].chksum, 0)


def check_bth(r, what, bth, opcode, p, ackreq, pad, becn=0, dqpn=PEER_QPN):
    r.eq(what + ' BTH opcode', bth.opcode, opcode)
    r.eq(what + ' BTH SE', bth.solicited, 0)
    r.eq(what + ' BTH MigReq', bth.migreq, 0)
    r.eq(what + ' BTH PadCnt', bth.padcount, pad)
    r.eq(what + ' BTH TVer', bth.version, 0)
    r.eq(what + ' BTH P_Key', bth.pkey, PKEY_DEFAULT)
    r.eq(what + ' BTH FECN', bth.fecn, 0)
    r.eq(what + ' BTH BECN', bth.becn, becn)
    r.eq(what + ' BTH reserved (6 bits)', bth.resv6, 0)
    r.eq(what + ' BTH DestQP', bth.dqpn, dqpn)
    r.eq(what + ' BTH AckReq', bth.ackreq, int(ackreq))
    r.eq(what + ' BTH reserved (7 bits)', bth.resv7, 0)
    r.eq(what + ' BTH PSN', bth.psn, psn(p))


def check_icrc(r, what, frame, pkt, v6):
    """The ICRC on the wire must be the one scapy computes over the same packet (IPv4;
    re-dissected with the ICRC field deleted) and the reference one (both versions)."""
    wire = frame[-u.ICRC_LEN:]
    r.eq(what + ' ICRC field (scapy)', pkt[BTH].icrc.to_bytes(u.ICRC_LEN, 'big'), wire)
    if not v6:
        again = Ether(frame)
        del again[BTH].icrc
        r.eq(what + ' ICRC on the wire vs scapy\'s', wire.hex(), raw(again)[-u.ICRC_LEN:].hex())
    r.eq(what + ' ICRC on the wire vs the reference', wire.hex(), u.ref_icrc(frame).hex())


def answer(r, i, k, what):
    """Frame k the engine sent after input i, and scapy's dissection of it."""
    check(k < len(r.answers[i]), '%s: no %s (input %d got %d answers)'
          % (r.name, what, i, len(r.answers[i])))
    frame = r.answers[i][k]
    return frame, Ether(frame)


def check_answer(r, i, k, syndrome, msn, p, v6=False):
    """Answer k to input i: an RC ACKNOWLEDGE with this AETH and PSN."""
    what = 'answer %d to input %d' % (k, i)
    frame, pkt = answer(r, i, k, what)
    l4_len = u.UDP_HLEN + u.BTH_LEN + AETH_LEN + u.ICRC_LEN
    r.eq(what + ' frame length', len(frame),
         u.ETH_HLEN + (u.IPV6_HLEN if v6 else u.IPV4_HLEN) + l4_len)
    check_ip_udp(r, what, frame, pkt, r.inputs[i], v6, l4_len)
    check(BTH in pkt and AETH in pkt, '%s: %s is not BTH + AETH to scapy: %s'
          % (r.name, what, pkt.summary()))
    check_bth(r, what, pkt[BTH], RC_ACKNOWLEDGE, p, False, 0)
    r.eq(what + ' AETH syndrome', pkt[AETH].syndrome, syndrome)
    r.eq(what + ' AETH MSN', pkt[AETH].msn, msn)
    r.eq(what + ' bytes after the AETH', raw(pkt[AETH].payload), b'')
    check_icrc(r, what, frame, pkt, v6)


def check_read_ack(r, i, k, msn, p):
    """Answer k to input i: an RDMA READ RESPONSE ONLY without payload (a FLUSH's or an
    ATOMIC WRITE's), AETH ACK. scapy binds no AETH to READ responses: read by hand."""
    what = 'answer %d to input %d' % (k, i)
    frame, pkt = answer(r, i, k, what)
    l4_len = u.UDP_HLEN + u.BTH_LEN + AETH_LEN + u.ICRC_LEN
    r.eq(what + ' frame length', len(frame), u.ETH_HLEN + u.IPV4_HLEN + l4_len)
    check_ip_udp(r, what, frame, pkt, r.inputs[i], False, l4_len)
    check(BTH in pkt, '%s: %s is not RoCEv2 to scapy' % (r.name, what))
    check_bth(r, what, pkt[BTH], RC_READ_RESPONSE_ONLY, p, False, 0)
    (w,) = struct.unpack('!I', raw(pkt[BTH].payload)[:AETH_LEN])
    r.eq(what + ' AETH syndrome', w >> 24, AETH_ACK_NO_CREDITS)
    r.eq(what + ' AETH MSN', w & 0xFFFFFF, msn)
    r.eq(what + ' bytes after the AETH', raw(pkt[BTH].payload)[AETH_LEN:], b'')
    check_icrc(r, what, frame, pkt, False)


def check_cnp(r, i, k):
    """Answer k to input i: a CNP to the sender's QP (A17.9.3): BECN set, PSN 0, 16
    reserved zero bytes, DSCP 48 and not ECN-capable, the QP's UDP source port."""
    what = 'CNP %d to input %d' % (k, i)
    frame, pkt = answer(r, i, k, what)
    l4_len = u.UDP_HLEN + u.BTH_LEN + CNP_RSVD_LEN + u.ICRC_LEN
    r.eq(what + ' frame length', len(frame), u.ETH_HLEN + u.IPV4_HLEN + l4_len)
    check_ip_udp(r, what, frame, pkt, r.inputs[i], False, l4_len)
    r.eq(what + ' DSCP', pkt[IP].tos >> 2, CNP_DSCP)
    r.eq(what + ' ECN', pkt[IP].tos & 3, 0)
    check(BTH in pkt, '%s: %s is not RoCEv2 to scapy' % (r.name, what))
    check_bth(r, what, pkt[BTH], CNP, 0, False, 0, becn=1)
    r.eq(what + ' reserved bytes', raw(pkt[BTH].payload), bytes(CNP_RSVD_LEN))
    check_icrc(r, what, frame, pkt, False)


def check_request(r, k, frame, opcode, p, ackreq, payload):
    """Request packet k the engine sent (before any input)."""
    what = 'request %d' % k
    pad = u.pad_of(len(payload))
    l4_len = u.UDP_HLEN + u.BTH_LEN + len(payload) + pad + u.ICRC_LEN
    pkt = Ether(frame)
    r.eq(what + ' frame length', len(frame), u.ETH_HLEN + u.IPV4_HLEN + l4_len)
    check_ip_udp(r, what, frame, pkt, None, False, l4_len)
    check(BTH in pkt, '%s: %s is not RoCEv2 to scapy' % (r.name, what))
    check_bth(r, what, pkt[BTH], opcode, p, ackreq, pad)
    rest = raw(pkt[BTH].payload)
    r.eq(what + ' payload', rest[:len(payload)], payload)
    r.eq(what + ' pad bytes', rest[len(payload):], bytes(pad))
    check_icrc(r, what, frame, pkt, False)


def recv_wc(i, after, payload, src_qp=PEER_QPN, **kw):
    w = {'cq': 'recv', 'after': after, 'wr_id': RECV_WR_ID + i, 'status': WC_SUCCESS,
         'opcode': WC_RECV, 'byte_len': len(payload), 'qp_num': QPN, 'src_qp': src_qp,
         'wc_flags': 0, 'imm_data': 0, 'data': payload.hex()}
    w.update(kw)
    return w


def err_wc(cq, wr_id, after, status):
    # 11.4.2.1: of an error completion only wr_id, status and qp_num are defined.
    return {'cq': cq, 'after': after, 'wr_id': wr_id, 'status': status, 'qp_num': QPN}


# ---- Cases ----

def case_rc_acks(tool, tmp):
    """In-order SENDs across the PSN wrap: an ACK for each AckReq (MSN counts messages),
    silence without AckReq, one ACK for a FIRST/MIDDLE/LAST message, a duplicate
    re-ACKed with the newest PSN (9.7.5.1.2) and not delivered again, and an empty SEND
    in a frame with Ethernet padding."""
    p0 = 0xFFFFFE
    mtu = 256
    a = payload_of(1, 33)
    b = payload_of(2, 8)
    m = [payload_of(3, mtu), payload_of(4, mtu), payload_of(5, 100)]
    inputs = [rc_send(RC_SEND_ONLY, p0, a, ackreq=True),
              rc_send(RC_SEND_ONLY, p0 + 1, b),
              rc_send(RC_SEND_FIRST, p0 + 2, m[0]),
              rc_send(RC_SEND_MIDDLE, p0 + 3, m[1]),
              rc_send(RC_SEND_LAST, p0 + 4, m[2], ackreq=True),
              rc_send(RC_SEND_ONLY, p0, a, ackreq=True),
              rc_send(RC_SEND_ONLY, p0 + 5, b'', ackreq=True)]
    check(len(inputs[-1]) == u.ETH_MIN_FRAME, 'the empty SEND is not a padded frame')
    r = Run(tool, tmp, 'rc_acks', inputs, ['--rq-psn', p0, '--mtu', mtu, '--recvs', 4])
    check_answer(r, 0, 0, AETH_ACK_NO_CREDITS, 1, p0)
    for i in (1, 2, 3):
        r.silent(i)
    check_answer(r, 4, 0, AETH_ACK_NO_CREDITS, 3, p0 + 4)
    check_answer(r, 5, 0, AETH_ACK_NO_CREDITS, 3, p0 + 4)
    check_answer(r, 6, 0, AETH_ACK_NO_CREDITS, 4, p0 + 5)
    for i in range(len(inputs)):
        r.eq('answers to input %d' % i, len(r.answers[i]), 1 if i in (0, 4, 5, 6) else 0)
    r.wcs([recv_wc(0, 0, a), recv_wc(1, 1, b), recv_wc(2, 4, b''.join(m)),
           recv_wc(3, 6, b'')])
    r.counters(rx_pkts=7, rx_malformed=0, resp_msgs=4, resp_dup=1, ack_sent=4,
               nak_seq_sent=0, nak_err_sent=0, tx_pkts=4, qp_error=0)
    # Every receive taken is completed, and published so (libdroce's flush reads it).
    r.eq('receives taken', r.js['rq_cons'], 4)
    r.eq('receives completed', r.js['rq_done'], 4)
    r.state('RTR')
    return r


def case_rc_gap(tool, tmp):
    """A gap: exactly one NAK PSN sequence error with the expected PSN however many
    packets lie beyond it (9.7.5.1.3), then normal ACKs once the expected PSN arrives,
    and one NAK again for the next gap."""
    p0 = 0x100
    pl = [payload_of(10 + i, 12) for i in range(5)]
    inputs = [rc_send(RC_SEND_ONLY, p0 + 2, pl[2], ackreq=True),
              rc_send(RC_SEND_ONLY, p0 + 3, pl[3], ackreq=True),
              rc_send(RC_SEND_ONLY, p0 + 4, pl[4], ackreq=True),
              rc_send(RC_SEND_ONLY, p0, pl[0], ackreq=True),
              rc_send(RC_SEND_ONLY, p0 + 1, pl[1], ackreq=True),
              rc_send(RC_SEND_ONLY, p0 + 3, pl[3], ackreq=True),
              rc_send(RC_SEND_ONLY, p0 + 2, pl[2], ackreq=True)]
    r = Run(tool, tmp, 'rc_gap', inputs, ['--rq-psn', p0, '--recvs', 4])
    check_answer(r, 0, 0, AETH_NAK_PSN_SEQ, 0, p0)
    r.silent(1)
    r.silent(2)
    check_answer(r, 3, 0, AETH_ACK_NO_CREDITS, 1, p0)
    check_answer(r, 4, 0, AETH_ACK_NO_CREDITS, 2, p0 + 1)
    check_answer(r, 5, 0, AETH_NAK_PSN_SEQ, 2, p0 + 2)
    check_answer(r, 6, 0, AETH_ACK_NO_CREDITS, 3, p0 + 2)
    for i in range(len(inputs)):
        r.eq('answers to input %d' % i, len(r.answers[i]), 0 if i in (1, 2) else 1)
    r.wcs([recv_wc(0, 3, pl[0]), recv_wc(1, 4, pl[1]), recv_wc(2, 6, pl[2])])
    r.counters(rx_pkts=7, resp_msgs=3, resp_out_of_seq=4, nak_seq_sent=2, ack_sent=3,
               resp_dup=0, tx_pkts=5, qp_error=0)
    r.state('RTR')
    return r


def case_rc_gap_lost_again(tool, tmp):
    """The requester goes back after the NAK and loses the expected packet again: still
    one NAK for the episode, silence until the expected PSN arrives (as Linux's rxe, whose
    6.1 requester stalled for good on a second NAK in the middle of its resend), then ACKs
    and every message delivered once, in order."""
    p0 = 0x200
    pl = [payload_of(20 + i, 12) for i in range(3)]
    inputs = [rc_send(RC_SEND_ONLY, p0 + 1, pl[1], ackreq=True),    # p0 lost: NAK
              rc_send(RC_SEND_ONLY, p0 + 2, pl[2], ackreq=True),    # silent
              rc_send(RC_SEND_ONLY, p0 + 1, pl[1], ackreq=True),    # resend, p0 lost again
              rc_send(RC_SEND_ONLY, p0 + 2, pl[2], ackreq=True),    # silent
              rc_send(RC_SEND_ONLY, p0, pl[0], ackreq=True),        # the timer's resend
              rc_send(RC_SEND_ONLY, p0 + 1, pl[1], ackreq=True),
              rc_send(RC_SEND_ONLY, p0 + 2, pl[2], ackreq=True)]
    r = Run(tool, tmp, 'rc_gap_lost_again', inputs, ['--rq-psn', p0, '--recvs', 3])
    check_answer(r, 0, 0, AETH_NAK_PSN_SEQ, 0, p0)
    for i in (1, 2, 3):
        r.silent(i)
    check_answer(r, 4, 0, AETH_ACK_NO_CREDITS, 1, p0)
    check_answer(r, 5, 0, AETH_ACK_NO_CREDITS, 2, p0 + 1)
    check_answer(r, 6, 0, AETH_ACK_NO_CREDITS, 3, p0 + 2)
    r.wcs([recv_wc(0, 4, pl[0]), recv_wc(1, 5, pl[1]), recv_wc(2, 6, pl[2])])
    r.counters(rx_pkts=7, resp_msgs=3, resp_out_of_seq=4, nak_seq_sent=1, ack_sent=3,
               resp_dup=0, tx_pkts=4, qp_error=0)
    r.state('RTR')
    return r


def case_rc_send_in_progress(tool, tmp):
    """A SEND whose LAST has not come: its receive is taken (rq.cons moved) but not
    completed, and the engine says so (rq_done stays): should droced die now, libdroce
    flushes that receive too (lib/verbs/verbs_fatal.c)."""
    p0 = 0x300
    mtu = 256
    inputs = [rc_send(RC_SEND_FIRST, p0, payload_of(30, mtu)),
              rc_send(RC_SEND_MIDDLE, p0 + 1, payload_of(31, mtu))]
    r = Run(tool, tmp, 'rc_send_in_progress', inputs,
            ['--rq-psn', p0, '--mtu', mtu, '--recvs', 2])
    r.silent(0)
    r.silent(1)
    r.wcs([])
    r.eq('receives taken', r.js['rq_cons'], 1)
    r.eq('receives completed', r.js['rq_done'], 0)
    r.state('RTR')
    return r


def case_rc_rnr(tool, tmp):
    """No receive WQE: RNR NAK with the QP's min_rnr_timer and the request's PSN
    (9.7.5.2.8), again for the retry, and silence for what lies beyond it."""
    p0 = 0x200
    timer = 14
    pl = payload_of(20, 16)
    inputs = [rc_send(RC_SEND_ONLY, p0, pl, ackreq=True),
              rc_send(RC_SEND_ONLY, p0, pl, ackreq=True),
              rc_send(RC_SEND_ONLY, p0 + 1, pl, ackreq=True)]
    r = Run(tool, tmp, 'rc_rnr', inputs, ['--rq-psn', p0, '--recvs', 0,
                                          '--min-rnr-timer', timer])
    check_answer(r, 0, 0, AETH_RNR_NAK | timer, 0, p0)
    check_answer(r, 1, 0, AETH_RNR_NAK | timer, 0, p0)
    r.silent(2)
    r.eq('answers to input 0', len(r.answers[0]), 1)
    r.eq('answers to input 1', len(r.answers[1]), 1)
    r.wcs([])
    r.counters(rx_pkts=3, nak_rnr_sent=2, ack_sent=0, resp_msgs=0, tx_pkts=2, qp_error=0)
    r.state('RTR')
    return r


def case_rc_too_long(tool, tmp):
    """A message longer than the receive buffer: NAK invalid request to the requester,
    a local length error here, and the QP in error flushes the rest (9.7.5.1.3, 11.6.3)."""
    p0 = 0x300
    inputs = [rc_send(RC_SEND_ONLY, p0, payload_of(30, 65), ackreq=True)]
    r = Run(tool, tmp, 'rc_too_long', inputs, ['--rq-psn', p0, '--recvs', 2,
                                               '--recv-len', 64])
    check_answer(r, 0, 0, AETH_NAK_INVALID_REQ, 0, p0)
    r.eq('answers to input 0', len(r.answers[0]), 1)
    r.wcs([err_wc('recv', RECV_WR_ID, 0, WC_LOC_LEN_ERR),
           err_wc('recv', RECV_WR_ID + 1, 0, WC_WR_FLUSH_ERR)])
    r.counters(rx_pkts=1, nak_err_sent=1, ack_sent=0, resp_msgs=0, qp_error=1, tx_pkts=1)
    r.state('ERR')
    return r


def case_rc_bad_icrc(tool, tmp):
    """A wrong ICRC (the field itself, or a payload bit it covers): dropped without an
    answer (A17.3.3); the intact packet then gets its ACK."""
    p0 = 0x400
    pl = payload_of(40, 24)
    good = rc_send(RC_SEND_ONLY, p0, pl, ackreq=True)
    inputs = [bad_icrc(good), flip_payload_bit(good, u.ICRC_LEN + 1), good]
    r = Run(tool, tmp, 'rc_bad_icrc', inputs, ['--rq-psn', p0])
    r.silent(0)
    r.silent(1)
    check_answer(r, 2, 0, AETH_ACK_NO_CREDITS, 1, p0)
    r.eq('answers to input 2', len(r.answers[2]), 1)
    r.wcs([recv_wc(0, 2, pl)])
    r.counters(rx_pkts=3, rx_malformed=2, resp_msgs=1, ack_sent=1, tx_pkts=1)
    r.state('RTR')
    return r


def case_rc_bad_opseq(tool, tmp):
    """A MIDDLE with no FIRST before it: NAK invalid request (9.8.3.2), QP to error,
    the posted receives flushed."""
    p0 = 0x500
    mtu = 256
    inputs = [rc_send(RC_SEND_MIDDLE, p0, payload_of(50, mtu), ackreq=True)]
    r = Run(tool, tmp, 'rc_bad_opseq', inputs, ['--rq-psn', p0, '--mtu', mtu, '--recvs', 2])
    check_answer(r, 0, 0, AETH_NAK_INVALID_REQ, 0, p0)
    r.eq('answers to input 0', len(r.answers[0]), 1)
    r.wcs([err_wc('recv', RECV_WR_ID, 0, WC_WR_FLUSH_ERR),
           err_wc('recv', RECV_WR_ID + 1, 0, WC_WR_FLUSH_ERR)])
    r.counters(rx_pkts=1, nak_err_sent=1, resp_msgs=0, qp_error=1, tx_pkts=1)
    r.state('ERR')
    return r


def case_ud(tool, tmp):
    """UD: a wrong Q_Key drops the packet (C10-15) without taking a WQE; the right one
    is delivered after the 40-byte GRH area holding the IPv4 header (byte_len counts it).
    UD never answers."""
    qkey, src_qp = 0x11111111, 0x345
    pl = payload_of(60, 20)
    inputs = [ud_send(7, 0x22222222, src_qp, payload_of(61, 20)),
              ud_send(8, qkey, src_qp, pl)]
    r = Run(tool, tmp, 'ud', inputs, ['--type', 'ud', '--qkey', qkey, '--recvs', 2,
                                      '--recv-len', 256])
    r.silent(0)
    r.silent(1)
    ip_hdr = inputs[1][u.ETH_HLEN:u.ETH_HLEN + u.IPV4_HLEN]
    r.eq('completion count', len(r.js['completions']), 1)
    wc = r.js['completions'][0]
    r.wcs([recv_wc(0, 1, b'', src_qp=src_qp, byte_len=GRH_AREA + len(pl),
                   wc_flags=WC_GRH, data=wc['data'])])
    data = bytes.fromhex(wc['data'])
    # RoCEv2 GRH area: for IPv4 the header is in its last 20 bytes (the first 20 undefined).
    r.eq('GRH area bytes 20..39', data[GRH_AREA - u.IPV4_HLEN:GRH_AREA], ip_hdr)
    r.eq('UD payload', data[GRH_AREA:], pl)
    r.counters(rx_pkts=2, ud_drop=1, resp_msgs=1, tx_pkts=0, qp_error=0)
    r.state('RTR')
    return r


def case_rc_requester(tool, tmp):
    """The requester: a 601-byte SEND at MTU 256 goes out as FIRST, MIDDLE, LAST (AckReq
    on the last, PadCnt 3), a 5-byte one as ONLY; each scapy-built ACK completes exactly
    the messages it covers (ACKs are cumulative, 9.7.5.1.4)."""
    s0 = 0x123456
    mtu = 256
    sizes = (601, 5)
    inputs = [rc_ack(s0 + 2, AETH_ACK_NO_CREDITS, 1), rc_ack(s0 + 3, AETH_ACK_NO_CREDITS, 2)]
    r = Run(tool, tmp, 'rc_requester', inputs,
            ['--state', 'rts', '--sq-psn', s0, '--mtu', mtu, '--recvs', 0]
            + ['--send=%d' % n for n in sizes])
    big = send_pattern(0, sizes[0])
    small = send_pattern(1, sizes[1])
    want = [(RC_SEND_FIRST, s0, False, big[:mtu]),
            (RC_SEND_MIDDLE, s0 + 1, False, big[mtu:2 * mtu]),
            (RC_SEND_LAST, s0 + 2, True, big[2 * mtu:]),
            (RC_SEND_ONLY, s0 + 3, True, small)]
    r.eq('request packets sent', len(r.before), len(want))
    for k, (op, p, ackreq, pl) in enumerate(want):
        check_request(r, k, r.before[k], op, p, ackreq, pl)
    r.silent(0)
    r.silent(1)
    send = {'cq': 'send', 'status': WC_SUCCESS, 'opcode': WC_SEND, 'qp_num': QPN}
    r.wcs([dict(send, after=0, wr_id=SEND_WR_ID, byte_len=sizes[0]),
           dict(send, after=1, wr_id=SEND_WR_ID + 1, byte_len=sizes[1])])
    r.counters(req_pkts=4, req_retransmit=0, ack_rcvd=2, ack_stale=0, tx_pkts=4, qp_error=0)
    r.state('RTS')
    return r


def case_rc_flush_atomic_write(tool, tmp):
    """The responder's FLUSH and ATOMIC WRITE (IBA 1.5), built from the spec's layouts:
    a FLUSH of a range and an ATOMIC WRITE are each answered by an RDMA READ RESPONSE ONLY
    without payload at their PSN; the 8 bytes land exactly; a duplicate ATOMIC WRITE with
    other bytes is answered again and not stored; a FLUSH of the whole MR (selectivity MR,
    any address) is answered; a FLUSH of a placement type the QP lacks (persistence) gets
    NAK invalid request and the QP goes to ERR."""
    p0 = 0xFFFFFE
    data = bytes(range(1, 9))
    acc = ACC_LOCAL_WRITE | ACC_REMOTE_WRITE | ACC_REMOTE_READ | ACC_FLUSH_GLOBAL
    inputs = [rc_flush(p0, FLUSH_GLOBAL, FLUSH_RANGE, TARGET_IOVA, TARGET_RKEY, 64),
              rc_atomic_write(p0 + 1, TARGET_IOVA + 8, TARGET_RKEY, data),
              rc_atomic_write(p0 + 1, TARGET_IOVA + 8, TARGET_RKEY, bytes(8)),
              rc_flush(p0 + 2, FLUSH_GLOBAL, FLUSH_MR, 0x1234, TARGET_RKEY, 0),
              rc_flush(p0 + 3, FLUSH_PERSISTENT, FLUSH_RANGE, TARGET_IOVA, TARGET_RKEY, 8)]
    r = Run(tool, tmp, 'rc_flush_atomic_write', inputs,
            ['--rq-psn', p0, '--recvs', 0, '--qp-access', acc, '--target', 64,
             '--target-access', acc])
    r.eq('target R_Key', r.js['target_rkey'], TARGET_RKEY)
    check_read_ack(r, 0, 0, 1, p0)
    check_read_ack(r, 1, 0, 2, p0 + 1)
    check_read_ack(r, 2, 0, 2, p0 + 1)
    check_read_ack(r, 3, 0, 3, p0 + 2)
    check_answer(r, 4, 0, AETH_NAK_INVALID_REQ, 3, p0 + 3)
    for i in range(len(inputs)):
        r.eq('answers to input %d' % i, len(r.answers[i]), 1)
    r.eq('target bytes', r.js['target'], (bytes(8) + data + bytes(48)).hex())
    r.wcs([])
    r.counters(flush_exec=2, atomic_write_exec=1, rd_replay=1, resp_err_flush_invalid=1,
               nak_err_sent=1)
    r.state('ERR')
    return r


def case_rc_flush_atomic_write_requester(tool, tmp):
    """The requester's FLUSH and ATOMIC WRITE, checked byte by byte against the spec's
    layouts (FETH then RETH; RETH of length 8 then the 8 bytes; AckReq; one PSN each, across
    the PSN wrap), and completed by scapy-built READ responses without payload
    (IBV_WC_FLUSH, then IBV_WC_ATOMIC_WRITE with byte_len 8)."""
    s0 = 0xFFFFFF
    value = 0x0807060504030201
    inputs = [rc_read_resp_only(s0, 1), rc_read_resp_only((s0 + 1) & PSN_MASK, 2)]
    r = Run(tool, tmp, 'rc_flush_atomic_write_requester', inputs,
            ['--state', 'rts', '--sq-psn', s0, '--recvs', 0,
             '--flush', '0x20000040,4096,0xabcd12,3,0',
             '--atomic-write', '0x20000008,0xabcd12,%#x' % value])
    # Both count as READs (responder resources): at the runner's max_rd_atomic of 1 the
    # ATOMIC WRITE waits for the FLUSH's answer.
    r.eq('request packets sent first', len(r.before), 1)
    check_request(r, 0, r.before[0], RC_FLUSH, s0, True,
                  feth(FLUSH_GLOBAL | FLUSH_PERSISTENT, FLUSH_RANGE) +
                  reth(0x20000040, 0xabcd12, 4096))
    r.eq('request packets sent after the FLUSH\'s answer', len(r.answers[0]), 1)
    check_request(r, 1, r.answers[0][0], RC_ATOMIC_WRITE, (s0 + 1) & PSN_MASK, True,
                  reth(0x20000008, 0xabcd12, 8) + struct.pack('<Q', value))
    r.silent(1)
    send = {'cq': 'send', 'status': WC_SUCCESS, 'qp_num': QPN}
    r.wcs([dict(send, after=0, wr_id=SEND_WR_ID, opcode=WC_FLUSH, byte_len=0),
           dict(send, after=1, wr_id=SEND_WR_ID + 1, opcode=WC_ATOMIC_WRITE, byte_len=8)])
    r.counters(req_pkts=2, req_retransmit=0, tx_pkts=2, qp_error=0)
    r.state('RTS')
    return r


def case_ipv6(tool, tmp):
    """Over IPv6: the ACK comes back over IPv6, its ICRC checked by the reference."""
    p0 = 0x600
    pl = payload_of(70, 10)
    inputs = [rc_send(RC_SEND_ONLY, p0, pl, ackreq=True, v6=True)]
    r = Run(tool, tmp, 'ipv6', inputs, ['--rq-psn', p0, '--ipv6'])
    check_answer(r, 0, 0, AETH_ACK_NO_CREDITS, 1, p0, v6=True)
    r.eq('answers to input 0', len(r.answers[0]), 1)
    r.wcs([recv_wc(0, 0, pl)])
    r.counters(rx_pkts=1, rx_malformed=0, resp_msgs=1, ack_sent=1, tx_pkts=1)
    r.state('RTR')
    return r


def case_cnp_interval(tool, tmp):
    """The notification point: CE-marked SENDs get CNPs to the sender's QP, at most one
    per min_time_between_cnps: with 1 s, one for three CE packets; with 0, one each; with
    the notification point off on priority 0, none. Packets not CE-marked get none."""
    p0 = 0x700
    pl = [payload_of(80 + i, 20) for i in range(4)]
    inputs = [rc_send(RC_SEND_ONLY, p0, pl[0], ackreq=True, tos=ECN_CE),
              rc_send(RC_SEND_ONLY, p0 + 1, pl[1], tos=ECN_CE),
              rc_send(RC_SEND_ONLY, p0 + 2, pl[2], ackreq=True, tos=ECN_CE),
              rc_send(RC_SEND_ONLY, p0 + 3, pl[3], ackreq=True, tos=ECN_ECT0)]
    wcs = [recv_wc(i, i, pl[i]) for i in range(4)]
    fields = 0
    for name, cc, cnps in (('cnp_1s', 'min_time_between_cnps=1000000', (0,)),
                           ('cnp_each', 'min_time_between_cnps=0', (0, 1, 2)),
                           ('cnp_np_off', 'roce_np_enable=none', ())):
        r = Run(tool, tmp, name, inputs, ['--rq-psn', p0, '--recvs', 4, '--cc', cc])
        for i in range(4):
            acks = 1 if i != 1 else 0
            want = acks + (1 if i in cnps else 0)
            r.eq('answers to input %d' % i, len(r.answers[i]), want)
            if i in cnps:
                # the CNP goes as the packet is dispatched, the coalesced ACK after
                check_cnp(r, i, 0)
            if acks:
                check_answer(r, i, want - 1, AETH_ACK_NO_CREDITS, i + 1, p0 + i)
        r.wcs(wcs)
        r.counters(rx_ce=3, cnp_sent=len(cnps), resp_msgs=4, ack_sent=3, rx_malformed=0)
        r.eq('QP ce_rcvd', r.js['cc']['ce_rcvd'], 3)
        r.eq('QP cnp_sent', r.js['cc']['cnp_sent'], len(cnps))
        fields += r.fields
    r.fields = fields
    return r


def case_cnp_reaction(tool, tmp):
    """The reaction point: a CNP as a ConnectX sends it (source port 0) cuts the QP's
    rate once by DCQCN's first cut, RC = line (1 - alpha / 2) with alpha = 1023/1024
    (initial_alpha_value); a second inside rate_reduce_monitor_period counts but does
    not cut; one with a bad ICRC, or for no QP, changes nothing. A CE-marked ACK gets a
    CNP too (the notification point watches responses as well)."""
    s0 = 0x800
    inputs = [cnp_connectx(), cnp_connectx(sport=0xC001), bad_icrc(cnp_connectx()),
              cnp_connectx(dqpn=QPN + 5), roce(RC_ACKNOWLEDGE, s0, struct.pack(
                  '!I', AETH_ACK_NO_CREDITS << 24 | 1), tos=ECN_CE)]
    r = Run(tool, tmp, 'cnp_reaction', inputs,
            ['--state', 'rts', '--sq-psn', s0, '--recvs', 0, '--send=8',
             '--cc', 'rate_reduce_monitor_period=1000000', '--cc', 'roce_rp_enable=0-7'])
    for i in range(4):
        r.silent(i)
    r.eq('answers to input 4', len(r.answers[4]), 1)
    check_cnp(r, 4, 0)
    r.counters(rx_cnp=2, rx_cnp_ignored=0, rx_malformed=1, rx_no_qp=1, rx_ce=1, cnp_sent=1,
               ack_rcvd=1)
    cc = r.js['cc']
    r.eq('QP reaction point on', cc['rp'], True)
    r.eq('QP rate limited', cc['limited'], True)
    r.eq('QP CNPs received', cc['cnp_rcvd'], 2)
    r.eq('QP rate cuts', cc['rate_cuts'], 1)
    want = LINE_KBPS * (1 - 1023 / 1024 / 2)
    check(abs(cc['rate_kbps'] - want) <= 1, '%s: rate %d kb/s after the cut, want %.1f'
          % (r.name, cc['rate_kbps'], want))
    r.eq('QP target rate', cc['target_kbps'], LINE_KBPS)
    # alpha decays with the time between the inputs: not a fixed number here
    r.wcs([{'cq': 'send', 'after': 4, 'wr_id': SEND_WR_ID, 'status': WC_SUCCESS}])
    return r


def case_traffic_classes(tool, tmp):
    """The path's traffic class on the wire (doc/congestion.md, "Traffic classes"): Not-ECT
    by default (the reaction point is off); the port's roce_dscp where the AV has none,
    ECT(0) where the priority (the SL, else the DSCP's top bits) runs DCQCN, a program's
    ECN bits kept but CE, a VLAN tag with the priority as PCP; a CNP with DSCP 48 and,
    tagged, PCP 6. Whether the reaction point is on follows the same priority: a CNP cuts
    the rate, or is ignored."""
    s0 = 0x900
    fields = 0
    # (name, runner options, TOS wanted, reaction point on)
    rp_all = ["--cc", "roce_rp_enable=0-7"]
    for name, opts, tos, rp in (
            ("default", [], 0, False),
            ("dscp_port", ["--cc", "roce_dscp=26"] + rp_all, 26 << 2 | ECN_ECT0, True),
            ("sl_enabled", ["--sl", "5", "--cc", "roce_rp_enable=5"], ECN_ECT0, True),
            ("prio_disabled", ["--cc", "roce_rp_enable=5"], 0, False),
            ("program_ce", ["--tclass", "3"] + rp_all, ECN_ECT0, True),
            ("program_ect1", ["--tclass", str(8 << 2 | 1)] + rp_all, 8 << 2 | 1, True),
            ("vlan", ["--sl", "5", "--cc", "vlan=100"] + rp_all, ECN_ECT0, True)):
        inputs = [cnp_connectx(), rc_send(RC_SEND_ONLY, 0x40, b'', ackreq=True, tos=ECN_CE)]
        r = Run(tool, tmp, 'tclass_' + name, inputs,
                ['--state', 'rts', '--sq-psn', s0, '--recvs', 1, '--rq-psn', 0x40,
                 '--send=8'] + opts)
        r.eq('requests', len(r.before), 1)
        pkt = Ether(r.before[0])
        tagged = name == "vlan"
        if tagged:
            r.eq('ethertype', pkt[Ether].type, 0x8100)
            r.eq('VLAN ID', pkt[Dot1Q].vlan, 100)
            r.eq('PCP (the SL)', pkt[Dot1Q].prio, 5)
        else:
            r.eq('ethertype', pkt[Ether].type, u.ETHERTYPE_IPV4)
        r.eq('request TOS', pkt[IP].tos, tos)
        r.eq('request ICRC', r.before[0][-u.ICRC_LEN:].hex(), u.ref_icrc(r.before[0]).hex())
        r.eq('reaction point', r.js['cc']['rp'], rp)
        r.counters(rx_cnp=1, rx_cnp_ignored=0 if rp else 1)
        r.eq('rate cuts', r.js['cc']['rate_cuts'], 1 if rp else 0)
        # the CE-marked SEND: a CNP on the QP's path, then the ACK
        cnp = Ether(r.answers[1][0])
        r.eq('CNP DSCP', cnp[IP].tos, CNP_DSCP << 2)
        r.eq('CNP opcode', cnp[BTH].opcode, CNP)
        if tagged:
            r.eq('CNP PCP', cnp[Dot1Q].prio, 6)
            r.eq('CNP VLAN ID', cnp[Dot1Q].vlan, 100)
        r.eq('CNP ICRC', r.answers[1][0][-u.ICRC_LEN:].hex(),
             u.ref_icrc(r.answers[1][0]).hex())
        fields += r.fields
    r.fields = fields
    return r


CASES = [case_rc_acks, case_rc_gap, case_rc_gap_lost_again, case_rc_send_in_progress,
         case_rc_rnr, case_rc_too_long, case_rc_bad_icrc,
         case_rc_bad_opseq, case_ud, case_rc_requester, case_rc_flush_atomic_write,
         case_rc_flush_atomic_write_requester, case_ipv6, case_cnp_interval,
         case_cnp_reaction, case_traffic_classes]


def run(argv, tmp):
    ap = argparse.ArgumentParser()
    ap.add_argument('runner')
    ap.add_argument('cases', nargs='*', help='case names (default: all)')
    a = ap.parse_args(argv)
    start = time.monotonic()
    names = {c.__name__[len('case_'):]: c for c in CASES}
    for n in a.cases:
        check(n in names, 'no case %s (cases: %s)' % (n, ', '.join(names)))
    fields = 0
    for name, case in names.items():
        if a.cases and name not in a.cases:
            continue
        r = case(a.runner, tmp)
        fields += r.fields
        print('ok %s (%d fields)' % (name, r.fields))
    # About a second per runner on an idle 2-core machine: most of it is EAL start-up.
    print('test_engine_scapy: %d fields checked in %.1f s' % (fields, time.monotonic() - start))


if __name__ == '__main__':
    u.main(run)
