#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Write a small RoCEv2 sample capture for the quickstart and for trying droce-pcap.

usage: /usr/bin/python3 devtools/make-sample-capture.py DIR

Writes into DIR:
  sample.pcap          a short RoCEv2 conversation between two hosts over IPv4: an RC
                       SEND and its ACK, a three-packet RC RDMA WRITE and its ACK, an RDMA
                       READ and its response, a UD SEND and a CNP, with an ARP and a DNS
                       query mixed in (traffic a RoCEv2 decoder must pass over).
  sample-corrupt.pcap  the same packets, with one bit of the SEND payload flipped and
                       the ICRC left as it was, so the SEND fails ICRC verification.

The ICRCs come from scapy's own RoCE layer (scapy.contrib.roce), an oracle this project
did not write; the script cross-checks each against IB spec Annex A17.3.3 computed
with zlib before writing.
scapy 2.5 has no layers for RETH, DETH or a READ response's AETH and no IPv6 ICRC, so
those headers are packed here as raw bytes and the capture is IPv4 only.
The output is byte-for-byte reproducible (fixed addresses and timestamps).
"""

import os
import socket
import struct
import sys
import zlib

from scapy.all import ARP, DNS, DNSQR, IP, UDP, Ether, Raw, raw, wrpcap
from scapy.contrib.roce import BTH, CNPPadding

ROCEV2_PORT = 4791
ETHERTYPE_IPV4 = b"\x08\x00"

# Two hosts on a documentation subnet (RFC 5737), locally administered MACs.
MAC_A, MAC_B, MAC_DNS = "02:00:00:00:00:0a", "02:00:00:00:00:0b", "02:00:00:00:00:35"
IP_A, IP_B, IP_DNS = "192.0.2.10", "192.0.2.11", "192.0.2.53"

# DSCP 26 with ECT(0): how RoCEv2 NICs commonly mark data traffic; CNPs use DSCP 48.
TOS_DATA = (26 << 2) | 0x2
TOS_CNP = 48 << 2

# An RC QP pair (A's 0x11 <-> B's 0x12) and a UD pair (A's 0x21 -> B's 0x22).
RC_QPN_A, RC_QPN_B = 0x000011, 0x000012
UD_QPN_A, UD_QPN_B = 0x000021, 0x000022
UD_QKEY = 0x11111111

OP_RC_SEND_ONLY = 0x04
OP_RC_WRITE_FIRST = 0x06
OP_RC_WRITE_MIDDLE = 0x07
OP_RC_WRITE_LAST = 0x08
OP_RC_READ_REQUEST = 0x0C
OP_RC_READ_RESPONSE_ONLY = 0x10
OP_RC_ACK = 0x11
OP_UD_SEND_ONLY = 0x64
OP_CNP = 0x81

AETH_ACK_UNLIMITED = 0x1F  # ACK syndrome, credit code 31: no credit limit
PATH_MTU = 256             # FIRST and MIDDLE packets carry exactly one MTU

ETH_HLEN, IPV4_HLEN, UDP_HLEN, BTH_LEN, ICRC_LEN = 14, 20, 8, 12, 4
L3_OFF = ETH_HLEN
L4_OFF = L3_OFF + IPV4_HLEN
BTH_OFF = L4_OFF + UDP_HLEN
SEND_PAYLOAD_OFF = BTH_OFF + BTH_LEN    # a SEND_ONLY has no extension header

BASE_TIME = 1700000000.0   # fixed timestamps keep the file reproducible
TIME_STEP = 0.000010


def udp_sport(lqpn, rqpn):
    """UDP source port from the flow label of a QP pair (the rule Linux RoCE drivers use)."""
    v = lqpn * rqpn
    v ^= v >> 20
    v ^= v >> 40
    fl = v & 0xFFFFF
    return ((fl & 0x3FFF) ^ (fl >> 14)) | 0xC000


def reth(va, rkey, length):
    return struct.pack("!QII", va, rkey, length)


def aeth(syndrome, msn):
    return struct.pack("!I", syndrome << 24 | msn)


def deth(qkey, src_qp):
    return struct.pack("!II", qkey, src_qp)


def pattern(n, seed):
    return bytes((seed + i) & 0xFF for i in range(n))


def roce(src, dst, lqpn, rqpn, opcode, psn, ext=b"", payload=b"", ackreq=False,
         solicited=False, becn=False, tos=TOS_DATA):
    """One RoCEv2 packet; scapy's BTH appends the ICRC. payload is padded to 4 bytes."""
    mac = {IP_A: MAC_A, IP_B: MAC_B}
    pad = -len(payload) % 4
    return (Ether(src=mac[src], dst=mac[dst]) /
            IP(src=src, dst=dst, tos=tos, flags="DF", ttl=64) /
            UDP(sport=udp_sport(lqpn, rqpn), dport=ROCEV2_PORT, chksum=0) /
            BTH(opcode=opcode, solicited=int(solicited), padcount=pad, dqpn=rqpn,
                ackreq=int(ackreq), becn=int(becn), psn=psn) /
            Raw(ext + payload + bytes(pad)))


def conversation():
    send_msg = b"Hello from droce: an RC SEND_ONLY"
    write_len = 2 * PATH_MTU + 99
    write_va, write_rkey = 0x00007F3A2C001000, 0x00002A01
    read_len = 64
    read_va, read_rkey = 0x00007F3A2C008000, 0x00002A02
    ud_msg = b"UD datagram to QP 0x22"

    pkts = [
        Ether(src=MAC_A, dst="ff:ff:ff:ff:ff:ff") /
        ARP(op="who-has", hwsrc=MAC_A, psrc=IP_A, pdst=IP_B),
        # RC SEND_ONLY and its ACK (MSN 1: the first message B completed).
        roce(IP_A, IP_B, RC_QPN_A, RC_QPN_B, OP_RC_SEND_ONLY, 100, payload=send_msg,
             ackreq=True, solicited=True),
        roce(IP_B, IP_A, RC_QPN_B, RC_QPN_A, OP_RC_ACK, 100,
             ext=aeth(AETH_ACK_UNLIMITED, 1)),
        # A three-packet RDMA WRITE: the RETH is in the FIRST packet only.
        roce(IP_A, IP_B, RC_QPN_A, RC_QPN_B, OP_RC_WRITE_FIRST, 101,
             ext=reth(write_va, write_rkey, write_len), payload=pattern(PATH_MTU, 0)),
        roce(IP_A, IP_B, RC_QPN_A, RC_QPN_B, OP_RC_WRITE_MIDDLE, 102,
             payload=pattern(PATH_MTU, 1)),
        roce(IP_A, IP_B, RC_QPN_A, RC_QPN_B, OP_RC_WRITE_LAST, 103,
             payload=pattern(write_len - 2 * PATH_MTU, 2), ackreq=True),
        roce(IP_B, IP_A, RC_QPN_B, RC_QPN_A, OP_RC_ACK, 103,
             ext=aeth(AETH_ACK_UNLIMITED, 2)),
        Ether(src=MAC_A, dst=MAC_DNS) / IP(src=IP_A, dst=IP_DNS) /
        UDP(sport=53000, dport=53) / DNS(id=0x1234, rd=1, qd=DNSQR(qname="example.com")),
        # RDMA READ of 64 bytes: the response carries an AETH and the data.
        roce(IP_A, IP_B, RC_QPN_A, RC_QPN_B, OP_RC_READ_REQUEST, 104,
             ext=reth(read_va, read_rkey, read_len), ackreq=True),
        roce(IP_B, IP_A, RC_QPN_B, RC_QPN_A, OP_RC_READ_RESPONSE_ONLY, 104,
             ext=aeth(AETH_ACK_UNLIMITED, 3), payload=pattern(read_len, 3)),
        # UD SEND_ONLY: the DETH carries the Q_Key and the source QP.
        roce(IP_A, IP_B, UD_QPN_A, UD_QPN_B, OP_UD_SEND_ONLY, 0,
             ext=deth(UD_QKEY, UD_QPN_A), payload=ud_msg),
        # B saw congestion-experienced packets from QP 0x11: a CNP (Annex A17.9.3).
        Ether(src=MAC_B, dst=MAC_A) / IP(src=IP_B, dst=IP_A, tos=TOS_CNP, flags="DF") /
        UDP(sport=udp_sport(RC_QPN_B, RC_QPN_A), dport=ROCEV2_PORT, chksum=0) /
        BTH(opcode=OP_CNP, becn=1, dqpn=RC_QPN_A, psn=0) / CNPPadding(),
    ]
    return [raw(p) for p in pkts]


def icrc_by_formula(frame):
    """Annex A17.3.3: CRC-32 of 8 bytes of 0xFF and IP..pad with the variant fields
    all ones, least-significant byte first on the wire."""
    b = bytearray(frame[:-ICRC_LEN])
    b[L3_OFF + 1] = 0xFF                        # IPv4 TOS
    b[L3_OFF + 8] = 0xFF                        # TTL
    b[L3_OFF + 10:L3_OFF + 12] = b"\xff\xff"    # header checksum
    b[L4_OFF + 6:L4_OFF + 8] = b"\xff\xff"      # UDP checksum
    b[BTH_OFF + 4] = 0xFF                       # FECN, BECN, reserved
    return struct.pack("<I", zlib.crc32(b"\xff" * 8 + bytes(b[L3_OFF:])))


def is_rocev2(frame):
    return len(frame) > BTH_OFF + BTH_LEN and frame[L3_OFF - 2:L3_OFF] == ETHERTYPE_IPV4 and \
        frame[L3_OFF + 9] == socket.IPPROTO_UDP and \
        struct.unpack("!H", frame[L4_OFF + 2:L4_OFF + 4])[0] == ROCEV2_PORT


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make-sample-capture.py DIR")
    out_dir = sys.argv[1]

    frames = conversation()
    for i, f in enumerate(frames):
        if is_rocev2(f) and f[-ICRC_LEN:] != icrc_by_formula(f):
            sys.exit("packet %d: scapy's ICRC %s disagrees with zlib's %s" %
                     (i + 1, f[-ICRC_LEN:].hex(), icrc_by_formula(f).hex()))

    send = next(i for i, f in enumerate(frames)
                if is_rocev2(f) and f[BTH_OFF] == OP_RC_SEND_ONLY)
    corrupt = list(frames)
    flipped = bytearray(frames[send])
    flipped[SEND_PAYLOAD_OFF] ^= 0x20   # "Hello" becomes "hello"; ICRC untouched
    corrupt[send] = bytes(flipped)

    for name, data in (("sample.pcap", frames), ("sample-corrupt.pcap", corrupt)):
        pkts = []
        for i, f in enumerate(data):
            p = Ether(f)
            p.time = BASE_TIME + i * TIME_STEP
            pkts.append(p)
        # Rebuilding a dissected packet must not recompute anything (the ICRC above all).
        for p, f in zip(pkts, data):
            if raw(p) != f:
                sys.exit("%s: scapy rebuilt a packet differently" % name)
        wrpcap(os.path.join(out_dir, name), pkts)
    print("wrote %s and %s (%d packets each; packet %d is the corrupted SEND)" %
          (os.path.join(out_dir, "sample.pcap"), os.path.join(out_dir, "sample-corrupt.pcap"),
           len(frames), send + 1))


if __name__ == "__main__":
    main()
