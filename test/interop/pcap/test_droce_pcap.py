#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""droce-pcap against captures that scapy builds.

Usage: test_droce_pcap.py DROCE_PCAP [unittest arguments, e.g. a TestCase name]

Every RoCEv2 packet is described once (class Roce) by the field values the test puts
on the wire. From that description the test builds the packet with scapy, and derives,
independently of droce, the text line and JSON object droce-pcap must print. ICRCs come
from scapy's RoCE layer (IPv4) and from Python's zlib (IPv4 and IPv6; the two must
agree), and tshark's InfiniBand dissector cross-checks the decoded fields.
"""

import copy
import ipaddress
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest
import zlib

from scapy.all import (ARP, ICMPv6EchoRequest, IP, IPv6, TCP, UDP, CookedLinux,
                       CookedLinuxV2, Dot1Q, Ether, Raw, RawPcapNgWriter,
                       RawPcapWriter, conf, raw)
from scapy.contrib.roce import BTH

conf.verb = 0

DROCE_PCAP = None       # set from argv in main
TIMEOUT = 60            # seconds, per droce-pcap or tshark run
ROCE_PORT = 4791
DROCE_UDP_HLEN = 8

# pcap link types (LINKTYPE_* of the pcap file format).
LT_ETHERNET = 1
LT_RAW = 101
LT_IEEE802_11 = 105     # a link type droce-pcap does not read
LT_LINUX_SLL = 113
LT_IPV4 = 228
LT_IPV6 = 229
LT_LINUX_SLL2 = 276

# AETH RNR NAK timer codes in ms, as the IB spec's table gives them (roce-protocol.md).
RNR_MS = ["655.36", "0.01", "0.02", "0.03", "0.04", "0.06", "0.08", "0.12", "0.16",
          "0.24", "0.32", "0.48", "0.64", "0.96", "1.28", "1.92", "2.56", "3.84",
          "5.12", "7.68", "10.24", "15.36", "20.48", "30.72", "40.96", "61.44",
          "81.92", "122.88", "163.84", "245.76", "327.68", "491.52"]
NAK_NAMES = {0: "PSN_SEQ_ERR", 1: "INVALID_REQ", 2: "REMOTE_ACCESS", 3: "REMOTE_OP",
             4: "INVALID_RD_REQ"}


def icrc_zlib(ip_packet):
    """The four ICRC bytes of an IP packet that ends with its ICRC field (Annex A17.3.3):
    zlib's CRC-32 over 8 bytes of ones and the packet with the variant fields as ones,
    least significant byte first."""
    b = bytearray(ip_packet[:-4])
    if b[0] >> 4 == 4:
        ihl = (b[0] & 0xF) * 4
        b[1] = 0xFF                     # TOS
        b[8] = 0xFF                     # TTL
        b[10:12] = b"\xff\xff"          # header checksum
    else:
        ihl = 40
        b[0] |= 0x0F                    # traffic class and flow label
        b[1:4] = b"\xff\xff\xff"
        b[7] = 0xFF                     # hop limit
    b[ihl + 6:ihl + 8] = b"\xff\xff"    # UDP checksum
    b[ihl + 8 + 4] = 0xFF               # BTH FECN, BECN, reserved
    return struct.pack("<I", zlib.crc32(b"\xff" * 8 + bytes(b)))


class Roce:
    """One RoCEv2 packet, described by the values the test puts on the wire."""

    def __init__(self, name, opcode, payload=b"", *, dqpn=0x000012, psn=0, se=False,
                 mig=False, ackreq=False, fecn=False, becn=False, pkey=0xFFFF,
                 reth=None, aeth=None, deth=None, imm=None, ieth=None, atomic=None,
                 atomic_ack=None, feth=None, xrc_srqn=None, cnp=False, src="192.0.2.1",
                 dst="192.0.2.2", sport=0xC001, vlan=None, tos=0, ttl=64, flow=0,
                 pad=None, tver=0):
        self.name = name        # the opcode's name in the IB spec, as droce prints it
        self.opcode = opcode
        self.payload = payload
        self.dqpn, self.psn, self.pkey = dqpn, psn, pkey
        self.se, self.mig, self.ackreq, self.fecn, self.becn = se, mig, ackreq, fecn, becn
        self.reth = reth                # (va, rkey, len)
        self.aeth = aeth                # (syndrome, msn)
        self.deth = deth                # (qkey, src_qp)
        self.imm = imm                  # ImmDt as a big-endian number
        self.ieth = ieth                # rkey
        self.atomic = atomic            # (va, rkey, swap_add, compare)
        self.atomic_ack = atomic_ack    # original remote data
        self.feth = feth                # (sel, plt)
        self.xrc_srqn = xrc_srqn        # XRCETH's XRC SRQ number (XRC requests)
        self.cnp = cnp                  # 16 reserved bytes follow the BTH
        self.src, self.dst, self.sport = src, dst, sport
        self.ipv6 = ipaddress.ip_address(src).version == 6
        self.vlan = vlan                # (vid, pcp) for an 802.1Q tag on Ethernet
        self.tos, self.ttl, self.flow = tos, ttl, flow
        self.pad = (-len(payload)) % 4 if pad is None else pad
        self.tver = tver                # BTH.TVer: anything but 0 is malformed
        self.icrc = None                # the four ICRC bytes, from build()

    def ext_bytes(self):
        """Extension headers in their wire order (IB spec 9.2, 9.3; IBA 1.5 FLUSH). An
        XRC request's XRCETH (reserved byte, 24-bit SRQ number) comes first."""
        b = b""
        if self.deth:
            b += struct.pack("!II", self.deth[0], self.deth[1])
        if self.xrc_srqn is not None:
            b += struct.pack("!I", self.xrc_srqn)
        if self.feth:
            b += struct.pack("!I", self.feth[0] << 4 | self.feth[1])
        if self.reth:
            b += struct.pack("!QII", *self.reth)
        if self.atomic:
            b += struct.pack("!QIQQ", *self.atomic)
        if self.aeth:
            b += struct.pack("!I", self.aeth[0] << 24 | self.aeth[1])
        if self.atomic_ack is not None:
            b += struct.pack("!Q", self.atomic_ack)
        if self.imm is not None:
            b += struct.pack("!I", self.imm)
        if self.ieth is not None:
            b += struct.pack("!I", self.ieth)
        if self.cnp:
            b += bytes(16)
        return b

    def l3(self, icrc=None, payload=None, **ip_fields):
        """The scapy packet from the IP header on; scapy computes an IPv4 ICRC when icrc
        is None. payload and ip_fields override the description (to corrupt it)."""
        payload = self.payload if payload is None else payload
        fields = dict(src=self.src, dst=self.dst)
        if self.ipv6:
            fields.update(tc=self.tos, fl=self.flow, hlim=self.ttl)
            fields.update(ip_fields)
            ip = IPv6(**fields)
        else:
            fields.update(flags="DF", tos=self.tos, ttl=self.ttl)
            fields.update(ip_fields)
            ip = IP(**fields)
        bth = BTH(opcode=self.opcode, solicited=int(self.se), migreq=int(self.mig),
                  padcount=self.pad, version=self.tver, pkey=self.pkey, fecn=int(self.fecn),
                  becn=int(self.becn), dqpn=self.dqpn, ackreq=int(self.ackreq),
                  psn=self.psn, icrc=icrc)
        return (ip / UDP(sport=self.sport, dport=ROCE_PORT, chksum=0) / bth /
                Raw(self.ext_bytes() + payload + bytes(self.pad)))

    def build(self):
        """Computes the ICRC with both oracles; returns self."""
        if self.ipv6:
            self.icrc = icrc_zlib(bytes(self.l3(icrc=0)))
        else:
            by_scapy = bytes(self.l3())[-4:]
            by_zlib = icrc_zlib(bytes(self.l3(icrc=0)))
            assert by_scapy == by_zlib, f"{self.name}: scapy and zlib disagree"
            self.icrc = by_scapy
        return self

    def icrc_int(self):
        return int.from_bytes(self.icrc, "big")

    def icrc_hex(self):
        return self.icrc.hex().upper()

    def frame(self, link, **l3_args):
        """The frame as bytes for a capture of link type link."""
        l3 = self.l3(icrc=self.icrc_int(), **l3_args)
        if link == LT_ETHERNET:
            eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
            if self.vlan is not None:
                eth = eth / Dot1Q(vlan=self.vlan[0], prio=self.vlan[1])
            return bytes(eth / l3)
        proto = 0x86DD if self.ipv6 else 0x0800
        if link == LT_LINUX_SLL:
            return bytes(CookedLinux(pkttype=0, proto=proto) / l3)
        if link == LT_LINUX_SLL2:
            return bytes(CookedLinuxV2(proto=proto, ifindex=3) / l3)
        return bytes(l3)

    # ---- what droce-pcap must print ----

    def addr_tokens(self, link, ports=True):
        t = [self.src, ">", self.dst]
        if ports:
            t += [str(self.sport), ">", str(ROCE_PORT)]
        if self.vlan is not None and link == LT_ETHERNET:
            t.append(f"vlan={self.vlan[0]}")
        return t

    def bth_tokens(self):
        t = [self.name if self.name else f"opcode=0x{self.opcode:02x}",
             f"dqpn=0x{self.dqpn:06x}", f"psn={self.psn}", f"ackreq={int(self.ackreq)}",
             f"se={int(self.se)}", f"pad={self.pad}"]
        if self.fecn:
            t.append("fecn=1")
        if self.becn:
            t.append("becn=1")
        return t

    def aeth_token(self):
        syn = self.aeth[0]
        kind, value = (syn >> 5) & 3, syn & 0x1F
        if kind == 0:
            return f"aeth=ACK(credits={value})"
        if kind == 1:
            return f"aeth=RNR_NAK(timer={value},{RNR_MS[value]}ms)"
        if kind == 3:
            return f"aeth=NAK({NAK_NAMES.get(value, f'code={value}')})"
        return f"aeth=RESERVED(syndrome=0x{syn:02x})"

    def ext_tokens(self):
        t = []
        if self.xrc_srqn is not None:
            t.append(f"xrceth.srqn=0x{self.xrc_srqn:06x}")
        if self.reth:
            va, rkey, length = self.reth
            t += [f"reth.va=0x{va:016x}", f"reth.rkey=0x{rkey:08x}", f"reth.len={length}"]
        if self.aeth:
            t += [self.aeth_token(), f"aeth.msn={self.aeth[1]}"]
        if self.deth:
            t += [f"deth.qkey=0x{self.deth[0]:08x}", f"deth.sqpn=0x{self.deth[1]:06x}"]
        if self.imm is not None:
            t.append(f"imm=0x{self.imm:08x}")
        if self.ieth is not None:
            t.append(f"ieth.rkey=0x{self.ieth:08x}")
        if self.atomic:
            va, rkey, swap_add, compare = self.atomic
            t += [f"atomic.va=0x{va:016x}", f"atomic.rkey=0x{rkey:08x}",
                  f"atomic.swap_add=0x{swap_add:016x}", f"atomic.compare=0x{compare:016x}"]
        if self.atomic_ack is not None:
            t.append(f"atomic_ack.orig=0x{self.atomic_ack:016x}")
        if self.feth:
            t += [f"feth.sel={self.feth[0]}", f"feth.plt={self.feth[1]}"]
        return t

    def text(self, number, link, expected_icrc=None):
        """The line for this packet; expected_icrc (hex) when its ICRC must be bad."""
        t = [str(number)] + self.addr_tokens(link) + self.bth_tokens() + self.ext_tokens()
        t.append(f"payload={len(self.payload)}")
        t.append("icrc=ok" if expected_icrc is None else f"icrc=BAD(expected {expected_icrc})")
        return " ".join(t)

    def json_head(self, number, link, result, error, ports=True):
        o = {"frame": number, "result": result}
        if error is not None:
            o["error"] = error
        o.update(src=self.src, dst=self.dst)
        if ports:
            o.update(sport=self.sport, dport=ROCE_PORT)
        if self.vlan is not None and link == LT_ETHERNET:
            o["vlan"] = self.vlan[0]
        return o

    def json_bth(self):
        return {"opcode": self.opcode, "opcode_name": self.name, "se": self.se,
                "mig": self.mig, "ackreq": self.ackreq, "fecn": self.fecn,
                "becn": self.becn, "pad": self.pad, "tver": self.tver, "pkey": self.pkey,
                "dqpn": self.dqpn, "psn": self.psn}

    def json_aeth(self):
        syn, msn = self.aeth
        kind, value = (syn >> 5) & 3, syn & 0x1F
        o = {"syndrome": syn, "type": ["ACK", "RNR_NAK", "RESERVED", "NAK"][kind]}
        if kind == 0:
            o["credits"] = value
        elif kind == 1:
            o.update(timer=value, timer_ms=float(RNR_MS[value]))
        elif kind == 3:
            o["code"] = NAK_NAMES.get(value, value)
        o["msn"] = msn
        return o

    def json(self, number, link, received=None, expected=None):
        """The object for this packet: received and expected ICRC hex when it is bad."""
        bad = received is not None
        o = self.json_head(number, link, "BAD_ICRC" if bad else "OK",
                           "bad ICRC" if bad else None)
        o.update(self.json_bth())
        if self.xrc_srqn is not None:
            o["xrceth"] = {"srqn": self.xrc_srqn}
        if self.reth:
            o["reth"] = dict(zip(("va", "rkey", "len"), self.reth))
        if self.aeth:
            o["aeth"] = self.json_aeth()
        if self.deth:
            o["deth"] = {"qkey": self.deth[0], "src_qp": self.deth[1]}
        if self.imm is not None:
            o["immdt"] = self.imm
        if self.ieth is not None:
            o["ieth"] = {"rkey": self.ieth}
        if self.atomic:
            o["atomic"] = dict(zip(("va", "rkey", "swap_add", "compare"), self.atomic))
        if self.atomic_ack is not None:
            o["atomic_ack"] = {"orig": self.atomic_ack}
        if self.feth:
            o["feth"] = {"sel": self.feth[0], "plt": self.feth[1]}
        o["payload_len"] = len(self.payload)
        o["icrc"] = received if bad else self.icrc_hex()
        o["icrc_expected"] = expected if bad else self.icrc_hex()
        o["icrc_ok"] = not bad
        return o


# What droce-pcap says of the ICRC of a malformed packet (the parser stopped before it):
# ("ok", icrc hex), ("bad", received hex, expected hex) or ("na", why it cannot tell).
NA_CUT = ("na", "frame ends before the ICRC")
NA_NO_ROOM = ("na", "IP and UDP lengths leave no room for a BTH and an ICRC")


def malformed_lines(p, number, link, error_name, error_str, icrc, ports=True, bth=True,
                    caplen=None, wirelen=None):
    """The text line and JSON object of a malformed packet p: what the parser got to
    (ports, BTH), the reason, then the ICRC verdict icrc (see NA_CUT)."""
    line = [str(number)] + p.addr_tokens(link, ports)
    obj = p.json_head(number, link, error_name, error_str, ports)
    if bth:
        line += p.bth_tokens()
        obj.update(p.json_bth())
    line.append(f"MALFORMED({error_str})")
    if icrc[0] == "ok":
        line.append("icrc=ok")
        obj.update(icrc=icrc[1], icrc_expected=icrc[1], icrc_ok=True)
    elif icrc[0] == "bad":
        line.append(f"icrc=BAD(expected {icrc[2]})")
        obj.update(icrc=icrc[1], icrc_expected=icrc[2], icrc_ok=False)
    else:
        line.append(f"icrc=n/a({icrc[1]})")
        obj["icrc_na"] = icrc[1]
    if caplen is not None:
        line.append(f"truncated by the capture (caplen {caplen} < len {wirelen})")
        obj.update(caplen=caplen, wire_len=wirelen)
    return " ".join(line), obj


def summary_text(c):
    return ("summary: packets={packets} roce={roce} ok={ok} bad_icrc={bad_icrc} "
            "malformed={malformed} other={other}".format(**c))


def counts(packets, roce, ok, bad_icrc=0, malformed=0):
    return dict(packets=packets, roce=roce, ok=ok, bad_icrc=bad_icrc,
                malformed=malformed, other=packets - roce)


def write_pcap(path, linktype, frames):
    """frames: bytes, or (bytes, length on the wire) for a frame the snap length cut."""
    with RawPcapWriter(path, linktype=linktype, snaplen=65535) as w:
        w.write_header(None)        # write_packet() alone writes no file header
        for f in frames:
            data, wirelen = f if isinstance(f, tuple) else (f, None)
            w.write_packet(data, sec=1700000000, usec=0, wirelen=wirelen)


def write_pcapng(path, frames):
    """An Ethernet pcapng file (scapy's pcapng writer knows only Ethernet)."""
    with RawPcapNgWriter(path) as w:
        w.write_header(None)
        for data in frames:
            w.write_packet(data, sec=1700000000, usec=0)


def run(*args):
    return subprocess.run([DROCE_PCAP, *args], capture_output=True, text=True,
                          timeout=TIMEOUT, check=False)


# ---- the packets ----

PAY_MTU = bytes(range(256))


def good_roce():
    """One of each kind of RoCEv2 packet droce-pcap decodes."""
    r = [
        Roce("RC_SEND_ONLY", 0x04, b"hello, droce!", dqpn=0x000123, psn=100, se=True,
             ackreq=True),
        Roce("RC_SEND_FIRST", 0x00, PAY_MTU, dqpn=0xABCDEF, psn=0xFFFFFE),
        Roce("RC_SEND_MIDDLE", 0x01, PAY_MTU, dqpn=0xABCDEF, psn=0xFFFFFF),
        Roce("RC_SEND_LAST", 0x02, b"tail!", dqpn=0xABCDEF, psn=0, ackreq=True, se=True),
        Roce("RC_SEND_LAST_WITH_IMMEDIATE", 0x03, b"xy", imm=0x00000001, psn=7),
        Roce("RC_SEND_ONLY_WITH_IMMEDIATE", 0x05, b"", imm=0xFEEDFACE, psn=8),
        Roce("RC_RDMA_WRITE_ONLY", 0x0A, b"0123456789",
             reth=(0x00007F1234567890, 0xDEADBEEF, 10), psn=9, ackreq=True),
        Roce("RC_RDMA_WRITE_FIRST", 0x06, PAY_MTU, reth=(0x1000, 0x11, 600), psn=10),
        Roce("RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", 0x0B, b"abc",
             reth=(0xFFFFFFFFFFFFFFF8, 0x80000000, 3), imm=0x01020304, psn=11),
        Roce("RC_RDMA_READ_REQUEST", 0x0C, reth=(0xFFFFFFFFFFFF0000, 0x1, 65536),
             psn=12, ackreq=True),
        Roce("RC_RDMA_READ_RESPONSE_FIRST", 0x0D, PAY_MTU, aeth=(0x1F, 3), psn=12),
        Roce("RC_RDMA_READ_RESPONSE_MIDDLE", 0x0E, PAY_MTU, psn=13),
        Roce("RC_RDMA_READ_RESPONSE_LAST", 0x0F, bytes(100), aeth=(0x00, 4), psn=14),
        Roce("RC_RDMA_READ_RESPONSE_ONLY", 0x10, b"seven!!", aeth=(0x05, 5), psn=15),
        Roce("RC_ACKNOWLEDGE", 0x11, aeth=(0x1F, 0xFFFFFF), psn=16),
        Roce("RC_ACKNOWLEDGE", 0x11, aeth=(0x00, 0), psn=17),
        Roce("RC_ATOMIC_ACKNOWLEDGE", 0x12, aeth=(0x1F, 9), atomic_ack=0x0123456789ABCDEF,
             psn=18),
        Roce("RC_COMPARE_SWAP", 0x13,
             atomic=(0x2000, 0x42, 0xFFFFFFFFFFFFFFFF, 0x8000000000000000), psn=19,
             ackreq=True),
        Roce("RC_FETCH_ADD", 0x14, atomic=(0x7FFF00000008, 0xCAFE, 1, 0), psn=20,
             ackreq=True),
        Roce("RC_SEND_ONLY_WITH_INVALIDATE", 0x17, b"inval!!!", ieth=0xCAFE0001, psn=21),
        Roce("RC_FLUSH", 0x1C, feth=(1, 2), reth=(0x3000, 0x77, 4096), psn=22),
        Roce("RC_ATOMIC_WRITE", 0x1D, b"8 bytes!", reth=(0x4000, 0x78, 8), psn=23),
        Roce("UC_SEND_ONLY", 0x24, b"uc", psn=24),
        Roce("UC_RDMA_WRITE_ONLY", 0x2A, b"ucw", reth=(0x5000, 0x79, 3), psn=25),
        # XRC (table 38, 0xA0..0xB7; scapy knows no XRC opcode, so by number): each
        # request's XRCETH names the XRC SRQ; responses carry none.
        Roce("XRC_SEND_ONLY", 0xA4, b"to an XRC SRQ", xrc_srqn=0x000ABC, psn=40,
             ackreq=True),
        Roce("XRC_SEND_FIRST", 0xA0, PAY_MTU, xrc_srqn=0xFFFFFF, psn=41),
        Roce("XRC_SEND_LAST_WITH_IMMEDIATE", 0xA3, b"imm", xrc_srqn=0x000001,
             imm=0x11223344, psn=42, se=True),
        Roce("XRC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", 0xAB, b"xrc write",
             xrc_srqn=0x123456, reth=(0x6000, 0x7A, 9), imm=0x55667788, psn=43),
        Roce("XRC_RDMA_WRITE_MIDDLE", 0xA7, PAY_MTU, xrc_srqn=0x000000, psn=44),
        Roce("XRC_RDMA_READ_REQUEST", 0xAC, xrc_srqn=0x800000,
             reth=(0x7000, 0x7B, 8192), psn=45, ackreq=True),
        Roce("XRC_RDMA_READ_RESPONSE_ONLY", 0xB0, b"xrc read", aeth=(0x1F, 46), psn=45),
        Roce("XRC_ACKNOWLEDGE", 0xB1, aeth=(0x61, 47), psn=46),
        Roce("XRC_ATOMIC_ACKNOWLEDGE", 0xB2, aeth=(0x00, 48), atomic_ack=0xFEDCBA9876543210,
             psn=47),
        Roce("XRC_COMPARE_SWAP", 0xB3, xrc_srqn=0xABCDEF,
             atomic=(0x8000, 0x7C, 0x1111111111111111, 0x2222222222222222), psn=48),
        Roce("XRC_FETCH_ADD", 0xB4, xrc_srqn=0x00F00D, atomic=(0x8008, 0x7D, 5, 0),
             psn=49, ackreq=True),
        Roce("XRC_SEND_ONLY_WITH_INVALIDATE", 0xB7, b"xrc inval", xrc_srqn=0x000042,
             ieth=0xCAFE0002, psn=50),
        Roce("UD_SEND_ONLY", 0x64, bytes(range(40)), deth=(0x11111111, 0x000ABC),
             dqpn=0x000001, psn=26),
        Roce("UD_SEND_ONLY_WITH_IMMEDIATE", 0x65, b"ud!", deth=(0x80010000, 0xFFFFFF),
             imm=0xA0B0C0D0, dqpn=0x000002, psn=27),
        # A17.9.3: BECN set, 16 reserved bytes; hardware CNPs may use source port 0.
        Roce("CNP", 0x81, becn=True, cnp=True, dqpn=0x000042, sport=0),
        # Variant fields the ICRC does not cover, and header bits droce shows.
        Roce("RC_SEND_ONLY", 0x04, b"ecn", fecn=True, becn=True, mig=True, pkey=0x8001,
             tos=0x03, ttl=1, psn=28),
        Roce("RC_SEND_ONLY", 0x04, b"tagged", vlan=(100, 3), psn=29),
        Roce("RC_RDMA_WRITE_ONLY", 0x0A, b"over IPv6", reth=(0xABC, 0xDEF, 9),
             src="2001:db8::1", dst="fe80::abcd:1", tos=0x62, flow=0xABCDE, ttl=3,
             psn=30),
        Roce("RC_SEND_ONLY", 0x04, b"v6 tagged", src="2001:db8:0:1::5",
             dst="2001:db8:0:1::6", vlan=(4094, 0), psn=31),
    ]
    # Every RNR timer code and every NAK code, plus a reserved one and a reserved type.
    r += [Roce("RC_ACKNOWLEDGE", 0x11, aeth=(0x20 | code, 100 + code), psn=32 + code)
          for code in range(32)]
    r += [Roce("RC_ACKNOWLEDGE", 0x11, aeth=(0x60 | code, 200 + code), psn=64 + code)
          for code in range(6)]
    r.append(Roce("RC_ACKNOWLEDGE", 0x11, aeth=(0x41, 300), psn=70))
    return [p.build() for p in r]


def other_frames():
    """Ethernet frames that are not RoCEv2."""
    eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    frag = IP(src="192.0.2.1", dst="192.0.2.2", flags="MF", frag=0) / UDP(dport=ROCE_PORT)
    return [
        bytes(Ether(dst="ff:ff:ff:ff:ff:ff") / ARP(pdst="192.0.2.2")),
        bytes(eth / IP(src="192.0.2.1", dst="192.0.2.2") / TCP(dport=ROCE_PORT)),
        bytes(eth / IP(src="192.0.2.1", dst="192.0.2.2") / UDP(dport=53) / Raw(b"x" * 20)),
        bytes(eth / IPv6(src="2001:db8::1", dst="2001:db8::2") / ICMPv6EchoRequest()),
        bytes(eth / frag / Raw(bytes(40))),           # a fragment: not decodable alone
        bytes(eth / Dot1Q(vlan=5) / IP() / UDP(dport=4790) / Raw(bytes(16))),
        bytes(8),                                       # shorter than an Ethernet header
    ]


def interleave(roce, others):
    """A capture mixing the RoCEv2 packets with the others; returns (items, frames)
    where items[i] is the Roce of frame i + 1 or None."""
    items, step = [], max(1, len(roce) // max(1, len(others)))
    others = list(others)
    for i, p in enumerate(roce):
        items.append(p)
        if i % step == step - 1 and others:
            items.append(others.pop(0))
    items += others
    return items


class DroceTest(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="droce-pcap-test-")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def decode(self, path, *opts, status=0):
        """Runs droce-pcap in text and JSON mode; returns (text lines, JSON objects)."""
        text = run(*opts, path)
        self.assertEqual(text.returncode, status, text.stderr)
        self.assertEqual(text.stderr, "")
        js = run("--json", *opts, path)
        self.assertEqual(js.returncode, status, js.stderr)
        self.assertEqual(js.stderr, "")
        objs = [json.loads(line) for line in js.stdout.splitlines()]
        return text.stdout.splitlines(), objs

    def check_output(self, path, want_text, want_json, want_counts, bad=False):
        """Exact text lines and JSON objects (keys in order), summary, exit statuses."""
        lines, objs = self.decode(path)
        self.assertEqual(lines[:-1], want_text)
        self.assertEqual(lines[-1], summary_text(want_counts))
        self.assertEqual(objs[:-1], want_json)
        for got, want in zip(objs[:-1], want_json):
            self.assertEqual(list(got), list(want), f"key order of frame {want['frame']}")
        self.assertEqual(objs[-1], {"summary": want_counts})
        verify = run("--verify", path)
        self.assertEqual(verify.returncode, 1 if bad else 0, verify.stderr)
        self.assertEqual(verify.stdout.splitlines(), lines)


class DecodeTest(DroceTest):
    """Every kind of packet, decoded field by field, from Ethernet pcap and pcapng."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.items = interleave(good_roce(), other_frames())
        frames = [it.frame(LT_ETHERNET) if isinstance(it, Roce) else it for it in cls.items]
        # Ethernet pads short frames; the bytes after the IP packet are not RoCEv2's.
        ack = next(i for i, it in enumerate(cls.items) if isinstance(it, Roce) and it.aeth)
        frames[ack] += bytes(6)
        cls.pcap = os.path.join(cls.tmp.name, "good.pcap")
        cls.pcapng = os.path.join(cls.tmp.name, "good.pcapng")
        write_pcap(cls.pcap, LT_ETHERNET, frames)
        write_pcapng(cls.pcapng, frames)

    def expected(self):
        text, objs = [], []
        for n, it in enumerate(self.items, 1):
            if isinstance(it, Roce):
                text.append(it.text(n, LT_ETHERNET))
                objs.append(it.json(n, LT_ETHERNET))
        nroce = len(text)
        return text, objs, counts(len(self.items), nroce, nroce)

    def test_pcap(self):
        self.check_output(self.pcap, *self.expected())

    def test_pcapng(self):
        with open(self.pcapng, "rb") as f:
            self.assertEqual(f.read(4), b"\x0a\x0d\x0d\x0a", "scapy wrote no pcapng")
        self.check_output(self.pcapng, *self.expected())

    def test_tshark_agrees(self):
        """tshark's InfiniBand dissector reads the same fields and ICRC bytes."""
        fields = ["frame.number", "infiniband.bth.opcode", "infiniband.bth.destqp",
                  "infiniband.bth.psn", "infiniband.bth.padcnt", "infiniband.bth.a",
                  "infiniband.bth.se", "infiniband.bth.p_key", "infiniband.invariant.crc",
                  "infiniband.reth.va", "infiniband.reth.r_key", "infiniband.reth.dmalen",
                  "infiniband.aeth.syndrome", "infiniband.aeth.msn",
                  "infiniband.deth.q_key", "infiniband.deth.srcqp",
                  "infiniband.atomicacketh.origremdt"]
        cmd = ["tshark", "-n", "-r", self.pcap, "-Y", "infiniband", "-T", "fields",
               "-E", "separator=;", "-E", "occurrence=f"]
        for f in fields:
            cmd += ["-e", f]
        ts = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT,
                            check=True)
        _, objs = self.decode(self.pcap)
        by_frame = {o["frame"]: o for o in objs[:-1]}
        # (tshark field, droce JSON path): compared whenever tshark shows the field.
        pairs = [("infiniband.bth.opcode", ("opcode",)),
                 ("infiniband.bth.destqp", ("dqpn",)),
                 ("infiniband.bth.psn", ("psn",)),
                 ("infiniband.bth.padcnt", ("pad",)),
                 ("infiniband.bth.a", ("ackreq",)),
                 ("infiniband.bth.se", ("se",)),
                 ("infiniband.bth.p_key", ("pkey",)),
                 ("infiniband.invariant.crc", ("icrc",)),
                 ("infiniband.reth.va", ("reth", "va")),
                 ("infiniband.reth.r_key", ("reth", "rkey")),
                 ("infiniband.reth.dmalen", ("reth", "len")),
                 ("infiniband.aeth.syndrome", ("aeth", "syndrome")),
                 ("infiniband.aeth.msn", ("aeth", "msn")),
                 ("infiniband.deth.q_key", ("deth", "qkey")),
                 ("infiniband.deth.srcqp", ("deth", "src_qp")),
                 ("infiniband.atomicacketh.origremdt", ("atomic_ack", "orig"))]
        seen, compared = set(), {}
        for line in ts.stdout.splitlines():
            v = dict(zip(fields, line.split(";")))
            n = int(v["frame.number"])
            seen.add(n)
            self.assertIn(n, by_frame, f"tshark decodes frame {n} as InfiniBand")
            for tf, path in pairs:
                if v[tf] == "":
                    continue
                want = by_frame[n]
                # tshark shows an AtomicETH's VA and R_Key as RETH fields.
                if path[0] == "reth" and "atomic" in want:
                    path = ("atomic",) + path[1:]
                for key in path:
                    want = want[key]
                got = int(v[tf], 0)
                if tf == "infiniband.invariant.crc":
                    got = f"{got:08X}"
                elif isinstance(want, bool):
                    got = got == 1
                self.assertEqual(got, want, f"frame {n} {tf}")
                compared[tf] = compared.get(tf, 0) + 1
        self.assertEqual(seen, set(by_frame))
        # tshark leaves out the ICRC when a heuristic payload dissector gives up on a
        # SEND payload; it must still have shown most of them, and every header kind.
        self.assertGreaterEqual(compared["infiniband.invariant.crc"], len(by_frame) * 3 // 4)
        self.assertEqual(set(compared), {tf for tf, _ in pairs})


class LinkTypeTest(DroceTest):
    """Linux cooked (tcpdump/tshark -i any) and raw IP captures; unsupported ones."""

    def roce(self):
        return [p for p in good_roce() if p.vlan is None]

    def check_link(self, linktype, roce, others):
        items = interleave(roce, others)
        path = self.path(f"link{linktype}.pcap")
        write_pcap(path, linktype, [it.frame(linktype) if isinstance(it, Roce) else it
                                    for it in items])
        text, objs = [], []
        for n, it in enumerate(items, 1):
            if isinstance(it, Roce):
                text.append(it.text(n, linktype))
                objs.append(it.json(n, linktype))
        self.check_output(path, text, objs, counts(len(items), len(roce), len(roce)))

    def test_linux_sll(self):
        self.check_link(LT_LINUX_SLL, self.roce(), [
            bytes(CookedLinux(proto=0x0806) / ARP()),
            bytes(CookedLinux(proto=0x0800) / IP() / UDP(dport=53)),
            bytes(10),      # shorter than the cooked header
        ])

    def test_linux_sll2(self):
        self.check_link(LT_LINUX_SLL2, self.roce(), [
            bytes(CookedLinuxV2(proto=0x0806) / ARP()),
            bytes(CookedLinuxV2(proto=0x86DD) / IPv6() / ICMPv6EchoRequest()),
        ])

    def test_raw_ip(self):
        self.check_link(LT_RAW, self.roce(), [bytes(IP() / TCP()), bytes(IPv6() / UDP())])

    def test_ipv4(self):
        self.check_link(LT_IPV4, [p for p in self.roce() if not p.ipv6],
                        [bytes(IP() / TCP())])

    def test_ipv6(self):
        self.check_link(LT_IPV6, [p for p in self.roce() if p.ipv6],
                        [bytes(IPv6() / UDP(dport=53))])

    def test_unsupported(self):
        path = self.path("wifi.pcap")
        write_pcap(path, LT_IEEE802_11, [bytes(30)])
        r = run(path)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stdout, "")
        self.assertIn(path, r.stderr)
        self.assertIn("unsupported link type", r.stderr)


class VerdictTest(DroceTest):
    """Bad ICRCs and malformed packets: the line, the object, the counts, --verify."""

    def setUp(self):
        self.good = Roce("RC_SEND_ONLY", 0x04, b"good packet", dqpn=0x000777, psn=1,
                         ackreq=True).build()
        self.victim = Roce("RC_RDMA_WRITE_ONLY", 0x0A, b"a payload to corrupt",
                           reth=(0x10000, 0x1234, 20), dqpn=0x000888, psn=2).build()

    def capture(self, name, bad_frame):
        """good, bad_frame, good: returns the path."""
        path = self.path(name)
        write_pcap(path, LT_ETHERNET, [self.good.frame(LT_ETHERNET), bad_frame,
                                       self.good.frame(LT_ETHERNET)])
        return path

    def good_lines(self):
        return ([self.good.text(1, LT_ETHERNET)], [self.good.json(1, LT_ETHERNET)],
                [self.good.text(3, LT_ETHERNET)], [self.good.json(3, LT_ETHERNET)])

    def check_bad(self, path, line, obj, malformed):
        t1, j1, t3, j3 = self.good_lines()
        c = counts(3, 3, 2, bad_icrc=0 if malformed else 1, malformed=1 if malformed else 0)
        self.check_output(path, t1 + [line] + t3, j1 + [obj] + j3, c, bad=True)

    def test_corrupted_payload(self):
        frame = bytearray(self.victim.frame(LT_ETHERNET))
        frame[-4 - 5] ^= 0x01                   # a payload byte, before pad and ICRC
        corrupted = bytearray(self.victim.payload)
        corrupted[-5] ^= 0x01
        # The ICRC these bytes should carry, as scapy computes it.
        want = bytes(self.victim.l3(payload=bytes(corrupted)))[-4:].hex().upper()
        self.assertNotEqual(want, self.victim.icrc_hex())
        path = self.capture("payload.pcap", bytes(frame))
        self.check_bad(path, self.victim.text(2, LT_ETHERNET, expected_icrc=want),
                       self.victim.json(2, LT_ETHERNET, received=self.victim.icrc_hex(),
                                        expected=want), malformed=False)

    def test_corrupted_icrc(self):
        frame = bytearray(self.victim.frame(LT_ETHERNET))
        frame[-1] ^= 0x80
        path = self.capture("icrc.pcap", bytes(frame))
        right = self.victim.icrc_hex()
        self.check_bad(path, self.victim.text(2, LT_ETHERNET, expected_icrc=right),
                       self.victim.json(2, LT_ETHERNET, received=frame[-4:].hex().upper(),
                                        expected=right), malformed=False)

    def test_covered_header_field(self):
        """A covered header field (the destination QP) changed after the ICRC."""
        frame = bytearray(self.victim.frame(LT_ETHERNET))
        bth = 14 + 20 + 8
        frame[bth + 7] ^= 0x01                  # low byte of the destination QP
        moved = Roce("RC_RDMA_WRITE_ONLY", 0x0A, self.victim.payload,
                     reth=self.victim.reth, dqpn=self.victim.dqpn ^ 0x01, psn=2).build()
        path = self.capture("dqpn.pcap", bytes(frame))
        self.check_bad(path, moved.text(2, LT_ETHERNET, expected_icrc=moved.icrc_hex()),
                       moved.json(2, LT_ETHERNET, received=self.victim.icrc_hex(),
                                  expected=moved.icrc_hex()), malformed=False)

    def malformed(self, p, number, error_name, error_str, icrc, **kw):
        return malformed_lines(p, number, LT_ETHERNET, error_name, error_str, icrc, **kw)

    def test_truncated_by_snaplen(self):
        """The snap length cut the payload: the IP length says more than is there."""
        frame = self.victim.frame(LT_ETHERNET)
        cut = 14 + 20 + 8 + 12 + 16 + 4
        path = self.path("snaplen.pcap")
        write_pcap(path, LT_ETHERNET, [self.good.frame(LT_ETHERNET), (frame[:cut], len(frame)),
                                       self.good.frame(LT_ETHERNET)])
        line, obj = self.malformed(self.victim, 2, "BAD_IP_LEN", "bad IP length", NA_CUT,
                                   bth=False, caplen=cut, wirelen=len(frame))
        self.check_bad(path, line, obj, malformed=True)

    def test_truncated_in_headers(self):
        """A frame that ends inside the UDP header, after the port: RoCEv2, truncated."""
        frame = self.victim.frame(LT_ETHERNET)
        cut = 14 + 20 + 6
        path = self.capture("headers.pcap", frame[:cut])
        line, obj = self.malformed(self.victim, 2, "TRUNCATED",
                                   "frame ends inside the RoCEv2 headers", NA_CUT, bth=False)
        self.check_bad(path, line, obj, malformed=True)

    def test_runt_before_port_is_other(self):
        """A frame that ends before the UDP destination port cannot be told to be RoCEv2."""
        frame = self.victim.frame(LT_ETHERNET)
        for cut in (14 + 20 + 3, 14 + 10, 10):
            path = self.capture("runt.pcap", frame[:cut])
            t1, j1, t3, j3 = self.good_lines()
            self.check_output(path, t1 + t3, j1 + j3, counts(3, 2, 2))

    def test_bad_ip_length(self):
        """The IP length changed after the ICRC was computed: the ICRC, found by the UDP
        length, covers the IP length and no longer matches."""
        l3 = self.victim.l3(icrc=self.victim.icrc_int())
        l3[IP].len = len(l3) + 4               # scapy recomputes the header checksum
        frame = bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / l3)
        want = icrc_zlib(bytes(l3)).hex().upper()
        self.assertNotEqual(want, self.victim.icrc_hex())
        path = self.capture("iplen.pcap", frame)
        line, obj = self.malformed(self.victim, 2, "BAD_IP_LEN", "bad IP length",
                                   ("bad", self.victim.icrc_hex(), want), bth=False)
        self.check_bad(path, line, obj, malformed=True)

    def test_bad_udp_length(self):
        l3 = self.victim.l3(icrc=self.victim.icrc_int())
        l3[UDP].len = len(l3[UDP]) - 4
        frame = bytes(Ether() / l3)
        want = icrc_zlib(bytes(l3)).hex().upper()
        path = self.capture("udplen.pcap", frame)
        line, obj = self.malformed(self.victim, 2, "BAD_UDP_LEN", "bad UDP length",
                                   ("bad", self.victim.icrc_hex(), want), bth=False)
        self.check_bad(path, line, obj, malformed=True)

    def test_unknown_opcode(self):
        """The BTH was read, so its fields are shown, with the opcode as a number."""
        p = Roce(None, 0x1E, b"abcd", dqpn=0x00ABCD, psn=77, se=True).build()
        path = self.capture("opcode.pcap", p.frame(LT_ETHERNET))
        line, obj = self.malformed(p, 2, "UNKNOWN_OPCODE", "unknown opcode",
                                   ("ok", p.icrc_hex()))
        self.check_bad(path, line, obj, malformed=True)

    def test_bad_pad(self):
        """A pad count on a FIRST packet, which never pads (IB spec 9.2.4)."""
        p = Roce("RC_SEND_FIRST", 0x00, b"ab", pad=2, psn=5).build()
        path = self.capture("pad.pcap", p.frame(LT_ETHERNET))
        line, obj = self.malformed(p, 2, "BAD_PAD", "pad count not allowed for this packet",
                                   ("ok", p.icrc_hex()))
        self.check_bad(path, line, obj, malformed=True)

    def test_many_bad(self):
        """Counts over a capture with one of each verdict and other traffic."""
        icrc = bytearray(self.victim.frame(LT_ETHERNET))
        icrc[-2] ^= 0xFF
        frames = [self.good.frame(LT_ETHERNET), bytes(icrc),
                  self.victim.frame(LT_ETHERNET)[:40]] + other_frames()
        path = self.path("many.pcap")
        write_pcap(path, LT_ETHERNET, frames)
        lines, objs = self.decode(path)
        want = counts(len(frames), 3, 1, bad_icrc=1, malformed=1)
        self.assertEqual(lines[-1], summary_text(want))
        self.assertEqual(objs[-1], {"summary": want})
        self.assertEqual([o["result"] for o in objs[:-1]], ["OK", "BAD_ICRC", "TRUNCATED"])
        self.assertEqual(run("--verify", "--json", path).returncode, 1)

    def test_damaged_file(self):
        """A file that ends inside a packet record: what was read, then an error."""
        path = self.path("damaged.pcap")
        write_pcap(path, LT_ETHERNET, [self.good.frame(LT_ETHERNET)] * 2)
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) - 10)
        r = run(path)
        self.assertEqual(r.returncode, 2)
        self.assertIn(path, r.stderr)
        self.assertEqual(r.stdout.splitlines(),
                         [self.good.text(1, LT_ETHERNET), summary_text(counts(1, 1, 1))])


class MalformedIcrcTest(DroceTest):
    """A malformed packet's ICRC is checked too, so a reader can tell a packet its sender
    built wrong (good ICRC) from one damaged on the way (bad ICRC). Each kind of
    malformed packet is sent three times: with the ICRC of its bytes, with that ICRC
    damaged, and with a covered byte (the P_Key) changed after the ICRC was computed.
    Expected ICRCs come from zlib and, for IPv4, from scapy too."""

    def cases(self, ipv6):
        """(Roce, IP fields, change to the scapy packet, result, reason, BTH read)."""
        def tver(l3):
            l3[BTH].version = 3

        def udp_len(l3):
            l3[UDP].len = len(raw(l3[UDP])) - 4

        def ip_len(l3):
            # Past the end of the frame: the UDP length (right) places the ICRC.
            if ipv6:
                l3[IPv6].plen = len(raw(l3[UDP])) + 4
            else:
                l3[IP].len = len(raw(l3)) + 4

        def ip_csum(l3):
            l3[IP].chksum = IP(raw(l3)).chksum ^ 0x5A5A

        c = [
            (Roce("RC_SEND_FIRST", 0x00, b"ab", pad=2, psn=5), {}, None, "BAD_PAD",
             "pad count not allowed for this packet", True),
            (Roce(None, 0x1E, b"abcd", dqpn=0x00ABCD, psn=77, se=True), {}, None,
             "UNKNOWN_OPCODE", "unknown opcode", True),
            (Roce("RC_SEND_ONLY", 0x04, b"tver", tver=3, psn=6), {}, None, "BAD_TVER",
             "BTH transport version is not 0", True),
            (Roce("RC_SEND_ONLY", 0x04, b"abcde", pad=0, psn=7), {}, None, "BAD_PAD_ALIGN",
             "payload and pad not a multiple of 4 bytes", True),
            (Roce("RC_ACKNOWLEDGE", 0x11, b"four", aeth=(0x1F, 1), psn=8), {}, None,
             "BAD_PAYLOAD_LEN", "payload length not allowed for this opcode", True),
            # An RDMA WRITE ONLY without its RETH: nothing but the BTH and the ICRC.
            (Roce("RC_RDMA_WRITE_ONLY", 0x0A, b"", psn=9), {}, None, "SHORT_FOR_OPCODE",
             "too short for the opcode's headers", True),
            (Roce("RC_SEND_ONLY", 0x04, b"udp length", psn=10), {}, udp_len, "BAD_UDP_LEN",
             "bad UDP length", False),
            (Roce("RC_SEND_ONLY", 0x04, b"IP length", psn=11), {}, ip_len, "BAD_IP_LEN",
             "bad IP length", False),
        ]
        if not ipv6:
            c.append((Roce("RC_SEND_ONLY", 0x04, b"checksum", psn=12), {}, ip_csum,
                      "BAD_IP_CSUM", "bad IPv4 header checksum", False))
        for p, *_ in c:
            if ipv6:
                p.src, p.dst, p.ipv6 = "2001:db8::1", "2001:db8::2", True
                p.vlan, p.flow = (7, 1), 0x12345
        return c

    @staticmethod
    def l3_bytes(p, ip_fields, change, icrc):
        l3 = p.l3(icrc=icrc, **ip_fields)
        if change is not None:
            change(l3)
        return bytes(l3)

    def right_icrc(self, p, ip_fields, change):
        """The ICRC the malformed packet's bytes call for, by zlib and (IPv4) scapy."""
        by_zlib = icrc_zlib(self.l3_bytes(p, ip_fields, change, 0))
        if not p.ipv6:
            by_scapy = self.l3_bytes(p, ip_fields, change, None)[-4:]
            self.assertEqual(by_scapy, by_zlib, f"{p.name}: scapy and zlib disagree")
        return by_zlib

    @staticmethod
    def link_frame(p, link, l3):
        """l3 (bytes from the IP header on) behind the link-layer header of link."""
        if link == LT_RAW:
            return l3
        proto = 0x86DD if p.ipv6 else 0x0800
        eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
        if p.vlan is None:
            eth.type = proto
        else:
            eth = eth / Dot1Q(vlan=p.vlan[0], prio=p.vlan[1], type=proto)
        return bytes(eth) + l3

    def check_cases(self, ipv6, link):
        good = Roce("RC_SEND_ONLY", 0x04, b"good", psn=1).build()
        frames = [good.frame(link)]
        text, objs = [good.text(1, link)], [good.json(1, link)]
        for p, ip_fields, change, result, reason, bth in self.cases(ipv6):
            right = self.right_icrc(p, ip_fields, change)
            l3 = self.l3_bytes(p, ip_fields, change, 0)[:-4]
            damaged_icrc = bytes([right[0], right[1], right[2], right[3] ^ 0x80])
            # The P_Key changed on the way: the ICRC no longer covers these bytes.
            moved = copy.copy(p)
            moved.pkey ^= 0x0001
            moved_right = self.right_icrc(moved, ip_fields, change)
            self.assertNotEqual(moved_right, right)
            for q, tail, verdict in [
                    (p, right, ("ok", right.hex().upper())),
                    (p, damaged_icrc, ("bad", damaged_icrc.hex().upper(),
                                       right.hex().upper())),
                    (moved, right, ("bad", right.hex().upper(),
                                    moved_right.hex().upper()))]:
                n = len(frames) + 1
                body = self.l3_bytes(q, ip_fields, change, 0)[:-4]
                self.assertEqual(len(body), len(l3))
                frames.append(self.link_frame(q, link, body + tail))
                line, obj = malformed_lines(q, n, link, result, reason, verdict, bth=bth)
                text.append(line)
                objs.append(obj)
        path = self.path(f"malformed-v{6 if ipv6 else 4}-{link}.pcap")
        write_pcap(path, link, frames)
        n = len(frames)
        self.check_output(path, text, objs, counts(n, n, 1, malformed=n - 1), bad=True)

    def test_ipv4_ethernet(self):
        self.check_cases(False, LT_ETHERNET)

    def test_ipv6_vlan(self):
        self.check_cases(True, LT_ETHERNET)

    def test_raw_ip(self):
        """No Ethernet header in front: lib/wire masks the headers another way."""
        self.check_cases(False, LT_RAW)
        self.check_cases(True, LT_RAW)

    def test_not_computable(self):
        """n/a, with the reason: lengths past the end of the frame, or too short."""
        for ipv6 in (False, True):
            p = Roce("RC_SEND_ONLY", 0x04, b"n/a", psn=13)
            if ipv6:
                p.src, p.dst, p.ipv6 = "2001:db8::1", "2001:db8::2", True

            def past_end(l3):
                l3[UDP].len = len(raw(l3[UDP])) + 4
                if ipv6:
                    l3[IPv6].plen = len(raw(l3[UDP])) + 4
                else:
                    l3[IP].len = len(raw(l3)) + 4

            def no_room(l3):
                # IP and UDP agree on a datagram of 8 bytes after the UDP header.
                l3[UDP].len = DROCE_UDP_HLEN + 8
                if ipv6:
                    l3[IPv6].plen = DROCE_UDP_HLEN + 8
                else:
                    l3[IP].len = 20 + DROCE_UDP_HLEN + 8

            frames, text, objs = [], [], []
            for n, (change, result, reason, na) in enumerate([
                    (past_end, "BAD_IP_LEN", "bad IP length", NA_CUT),
                    (no_room, "SHORT_FOR_OPCODE", "too short for the opcode's headers",
                     NA_NO_ROOM)], 1):
                frames.append(self.link_frame(p, LT_ETHERNET,
                                              self.l3_bytes(p, {}, change, 0)))
                line, obj = malformed_lines(p, n, LT_ETHERNET, result, reason, na,
                                            bth=False)
                text.append(line)
                objs.append(obj)
            path = self.path(f"na-v{6 if ipv6 else 4}.pcap")
            write_pcap(path, LT_ETHERNET, frames)
            self.check_output(path, text, objs, counts(2, 2, 0, malformed=2), bad=True)


class UsageTest(DroceTest):
    def test_help(self):
        r = run("--help")
        self.assertEqual(r.returncode, 0)
        self.assertTrue(r.stdout.startswith("Usage: droce-pcap [--verify] [--json] [--help] FILE"))
        self.assertEqual(r.stderr, "")

    def test_missing_file(self):
        path = self.path("no-such-file.pcap")
        r = run("--verify", path)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stdout, "")
        self.assertEqual(r.stderr, f"droce-pcap: {path}: No such file or directory\n")

    def test_stdin(self):
        """"-" reads the capture from standard input."""
        p = Roce("RC_SEND_ONLY", 0x04, b"from stdin", psn=3).build()
        path = self.path("stdin.pcap")
        write_pcap(path, LT_ETHERNET, [p.frame(LT_ETHERNET)])
        with open(path, "rb") as f:
            r = subprocess.run([DROCE_PCAP, "--verify", "-"], stdin=f, capture_output=True,
                               text=True, timeout=TIMEOUT, check=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines(),
                         [p.text(1, LT_ETHERNET), summary_text(counts(1, 1, 1))])

    def test_not_a_capture(self):
        path = self.path("notes.txt")
        with open(path, "w") as f:
            f.write("this is not a packet capture, just some text\n")
        r = run(path)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stdout, "")
        self.assertIn(path, r.stderr)
        self.assertIn("unknown file format", r.stderr)   # libpcap's words

    def test_bad_usage(self):
        path = self.path("empty.pcap")
        write_pcap(path, LT_ETHERNET, [])
        self.assertEqual(run(path).returncode, 0)
        for args in (["--bogus", path], [], [path, path], ["--json=yes", path]):
            r = run(*args)
            self.assertEqual(r.returncode, 2, args)
            self.assertEqual(r.stdout, "", args)
            self.assertIn("Usage: droce-pcap", r.stderr, args)


if __name__ == "__main__":
    DROCE_PCAP = os.path.abspath(sys.argv[1])
    unittest.main(argv=[sys.argv[0]] + sys.argv[2:])
