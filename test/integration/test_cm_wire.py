# SPDX-License-Identifier: BSD-3-Clause
"""droced's CM on the wire, seen from a peer that is not droce: one droced on
net_af_packet at one end of a veth pair (namespace a), and in namespace b, at the other
end, a raw AF_PACKET socket that sends hand-built RoCEv2 frames (Ethernet / IPv4 / UDP
4791 / BTH UD SEND ONLY to QP1 / DETH from QP1 with the GSI Q_Key / 256-byte CM MAD /
ICRC, built with scapy.contrib.roce) and decodes what comes back. No connection exists
in droced, so every MAD names a connection droced does not hold:

  rep_rej     a REP is answered by one REJ: LocalCommID = the REP's RemoteCommID,
              RemoteCommID = the REP's LocalCommID, MessageREJected 1 (REP), Reason 6
              (Invalid Communication ID), no ARI, the REP's TID, to the REP's source MAC
              and IP, from QP1 to QP1.
  bad_icrc    the same REP with one ICRC bit flipped gets no answer and never reaches
              QP1 (so the answers above are to frames whose ICRC droced checked).
  dreq_drep   a DREQ is answered by one DREP with the comm IDs swapped and its TID
              (Linux cm_issue_drep).
  rtu_silent  an RTU gets no answer within RTU_QUIET_S, though QP1 took it.
  comm_est    a connection whose RTU never comes: cm_comm_est (a server on droce's
              librdmacm that owns its QP and keeps it in RTR until established) listens;
              the peer sends a REQ, takes the REP, sends no RTU but an RC SEND ONLY to the
              server's QP. The QP raises IBV_EVENT_COMM_EST, the server answers it with
              rdma_notify(IBV_EVENT_COMM_EST) (rdma-core's value), which must bring
              RDMA_CM_EVENT_ESTABLISHED; the SEND is ACKed and received whole; the peer's
              DREQ gets a DREP and the server RDMA_CM_EVENT_DISCONNECTED.

Each of the first four also checks droce-ctl status: the MAD counted in cm_rx_mads and cm_rx_bad
(unmatched), one MAD out per answer (cm_tx_mads), no connection left (cm_conns). The
frames sent and received are written to a pcap that droce-pcap --verify must accept
(every ICRC good, both directions), and, when tshark is installed, that tshark's
InfiniBand dissector must decode to the same CM fields.

MAD layout: IB spec vol. 1 13.4.2 (common MAD header) and tables 108 (REJ), 110 (REP),
111 (RTU), 112 (DREQ), 113 (DREP); byte offsets from the start of the MAD body (byte 24),
bit 0 the most significant, as lib/cm/cm_mad.c has them.

usage: test_cm_wire.py DROCED DROCE_CTL DROCE_PCAP CM_COMM_EST [CASE...]
"""

import json
import os
import queue
import shutil
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from droce_harness import (VETH_DEVARGS, App, TestFailure, VethPair, check, ctl, ctl_lines,
                           expect_idle, log, main, parse_args, run_cases)

from scapy.contrib.roce import BTH
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

BIN, CASES = parse_args(["droced", "droce_ctl", "droce_pcap", "cm_comm_est"])

ROCE_PORT = 4791
UD_SEND_ONLY = 0x64
GSI_QPN = 1
GSI_QKEY = 0x80010000
MAD_LEN = 256
MAD_HDR_LEN = 24
ATTR_REQ, ATTR_REJ, ATTR_REP, ATTR_RTU, ATTR_DREQ, ATTR_DREP = (0x0010, 0x0012, 0x0013, 0x0014,
                                                                0x0015, 0x0016)
RC_SEND_ONLY, RC_ACK = 0x04, 0x11
REJ_MSG_REP = 1
REJ_INVALID_COMM_ID = 6
# The peer in namespace b: a MAC of its own (not the veth end's, which droced never
# learns: the kernel end has no address), so an answer to it can only have taken its
# destination from the frame it answers.
PEER_MAC = "02:c3:00:00:00:02"
UDP_SPORT = 0xC0DE
# How long an answer may take, and how long after it (or, for a MAD that gets none,
# after sending) the sniffer goes on listening for anything else droced sends.
ANSWER_TIMEOUT_S = 5.0
LINGER_S = 0.5
RTU_QUIET_S = 1.0
PROC_TIMEOUT_S = 30

# (name, byte, bit, width) per attribute; byte arrays (ARI, private data) are (name,
# byte, None, length).
FIELDS = {
    # table 99, its primary path at byte 52 (table 106)
    ATTR_REQ: [("local_comm_id", 0, 0, 32), ("service_id", 8, 0, 64),
               ("local_ca_guid", 16, 0, 64), ("local_qkey", 28, 0, 32), ("local_qpn", 32, 0, 24),
               ("responder_resources", 35, 0, 8), ("local_eecn", 36, 0, 24),
               ("initiator_depth", 39, 0, 8), ("remote_eecn", 40, 0, 24),
               ("remote_cm_response_timeout", 43, 0, 5), ("transport_service_type", 43, 5, 2),
               ("end_to_end_flow_control", 43, 7, 1), ("starting_psn", 44, 0, 24),
               ("local_cm_response_timeout", 47, 0, 5), ("retry_count", 47, 5, 3),
               ("partition_key", 48, 0, 16), ("path_mtu", 50, 0, 4), ("rdc_exists", 50, 4, 1),
               ("rnr_retry_count", 50, 5, 3), ("max_cm_retries", 51, 0, 4), ("srq", 51, 4, 1),
               ("local_lid", 52, 0, 16), ("remote_lid", 54, 0, 16),
               ("local_gid", 56, None, 16), ("remote_gid", 72, None, 16),
               ("flow_label", 88, 0, 20), ("packet_rate", 91, 2, 6), ("traffic_class", 92, 0, 8),
               ("hop_limit", 93, 0, 8), ("sl", 94, 0, 4), ("subnet_local", 94, 4, 1),
               ("local_ack_timeout", 95, 0, 5), ("private_data", 140, None, 92)],
    ATTR_REP: [("local_comm_id", 0, 0, 32), ("remote_comm_id", 4, 0, 32),
               ("local_qkey", 8, 0, 32), ("local_qpn", 12, 0, 24), ("local_eecn", 16, 0, 24),
               ("starting_psn", 20, 0, 24), ("responder_resources", 24, 0, 8),
               ("initiator_depth", 25, 0, 8), ("target_ack_delay", 26, 0, 5),
               ("failover_accepted", 26, 5, 2), ("end_to_end_flow_control", 26, 7, 1),
               ("rnr_retry_count", 27, 0, 3), ("srq", 27, 3, 1),
               ("local_ca_guid", 28, 0, 64), ("private_data", 36, None, 196)],
    ATTR_REJ: [("local_comm_id", 0, 0, 32), ("remote_comm_id", 4, 0, 32),
               ("message_rejected", 8, 0, 2), ("rejected_info_length", 9, 0, 7),
               ("reason", 10, 0, 16), ("ari", 12, None, 72), ("private_data", 84, None, 148)],
    ATTR_RTU: [("local_comm_id", 0, 0, 32), ("remote_comm_id", 4, 0, 32),
               ("private_data", 8, None, 224)],
    ATTR_DREQ: [("local_comm_id", 0, 0, 32), ("remote_comm_id", 4, 0, 32),
                ("remote_qpn_eecn", 8, 0, 24), ("private_data", 12, None, 220)],
    ATTR_DREP: [("local_comm_id", 0, 0, 32), ("remote_comm_id", 4, 0, 32),
                ("private_data", 8, None, 224)],
}
ATTR_NAMES = {ATTR_REJ: "REJ", ATTR_REP: "REP", ATTR_RTU: "RTU", ATTR_DREQ: "DREQ",
              ATTR_DREP: "DREP"}

# The MADs sent: every ID and TID distinct, each comm ID with a nonzero slot (its low 16
# bits) that a fresh droced has not given out.
REP = {"tid": 0xC3A5000000010013, "local_comm_id": 0xA1B2C3D4, "remote_comm_id": 0x5EED0042,
       "local_qkey": 0, "local_qpn": 0x00ABCD, "local_eecn": 0, "starting_psn": 0x123456,
       "responder_resources": 4, "initiator_depth": 4, "target_ack_delay": 15,
       "failover_accepted": 0, "end_to_end_flow_control": 1, "rnr_retry_count": 7, "srq": 0,
       "local_ca_guid": 0x0200C3FFFE000002}
DREQ = {"tid": 0xC3A5000000020015, "local_comm_id": 0x0BADF00D, "remote_comm_id": 0x77770043,
        "remote_qpn_eecn": 0x000456}
RTU = {"tid": 0xC3A5000000030014, "local_comm_id": 0x13572468, "remote_comm_id": 0x24680044}

# Runs in namespace b: a raw socket on the interface, open before any frame goes (so no
# answer can be missed; "ready" says so); each line of stdin is a frame (hex) to send,
# "quit" ends it; every RoCEv2 frame received is printed, as hex, one a line, with the
# seconds since the start.
RELAY = r'''
import select, socket, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
s.bind((sys.argv[1], 0))
t0 = time.monotonic()
print("ready", flush=True)
while True:
    r = select.select([s, sys.stdin], [], [], 1.0)[0]
    if sys.stdin in r:
        line = sys.stdin.readline().strip()
        if not line or line == "quit":
            break
        s.send(bytes.fromhex(line))
    if s in r:
        f, addr = s.recvfrom(65535)
        if addr[2] == socket.PACKET_OUTGOING or len(f) < 42 or f[12:14] != b"\x08\x00":
            continue
        ihl = (f[14] & 15) * 4
        if f[23] != 17 or int.from_bytes(f[14 + ihl + 2:14 + ihl + 4], "big") != 4791:
            continue
        print("%.6f %s" % (time.monotonic() - t0, f.hex()), flush=True)
'''


def put_field(body, byte, bit, width, value):
    n = (bit + width + 7) // 8
    shift = n * 8 - bit - width
    mask = ((1 << width) - 1) << shift
    word = int.from_bytes(body[byte:byte + n], "big")
    word = (word & ~mask) | ((value << shift) & mask)
    body[byte:byte + n] = word.to_bytes(n, "big")


def get_field(body, byte, bit, width):
    n = (bit + width + 7) // 8
    shift = n * 8 - bit - width
    return (int.from_bytes(body[byte:byte + n], "big") >> shift) & ((1 << width) - 1)


def build_mad(attr, msg):
    """A CM Send MAD: common header (base version 1, class 0x07, class version 2, method
    0x03 Send, status 0, TID, attribute ID, attribute modifier 0) and the body."""
    hdr = struct.pack("!BBBBHHQHHI", 1, 0x07, 2, 0x03, 0, 0, msg["tid"], attr, 0, 0)
    body = bytearray(MAD_LEN - MAD_HDR_LEN)
    for name, byte, bit, width in FIELDS[attr]:
        if bit is None:
            body[byte:byte + width] = msg.get(name, bytes(width))
        else:
            put_field(body, byte, bit, width, msg.get(name, 0))
    return hdr + bytes(body)


def parse_mad(mad):
    check(len(mad) == MAD_LEN, "MAD of %d bytes" % len(mad))
    base, cls, clsver, method, status, cspec, tid, attr, resv, attr_mod = \
        struct.unpack("!BBBBHHQHHI", mad[:MAD_HDR_LEN])
    m = {"base_version": base, "mgmt_class": cls, "class_version": clsver, "method": method,
         "status": status, "class_specific": cspec, "tid": tid, "attr_id": attr,
         "reserved": resv, "attr_mod": attr_mod}
    body = mad[MAD_HDR_LEN:]
    for name, byte, bit, width in FIELDS.get(attr, []):
        m[name] = body[byte:byte + width] if bit is None else get_field(body, byte, bit, width)
    return m


def build_frame(ctx, attr, msg, psn):
    """Ethernet / IPv4 / UDP 4791 / BTH (UD SEND ONLY to QP1, P_Key 0xFFFF) / DETH (GSI
    Q_Key, from QP1) / MAD / ICRC (scapy's)."""
    deth = struct.pack("!IB", GSI_QKEY, 0) + GSI_QPN.to_bytes(3, "big")
    pkt = (Ether(src=PEER_MAC, dst=ctx.droced_mac) /
           IP(src=ctx.peer_ip, dst=ctx.droced_ip, ttl=64, id=psn, flags="DF") /
           UDP(sport=UDP_SPORT, dport=ROCE_PORT, chksum=0) /
           BTH(opcode=UD_SEND_ONLY, pkey=0xFFFF, dqpn=GSI_QPN, psn=psn) /
           Raw(deth + build_mad(attr, msg)))
    return bytes(pkt)


def parse_frame(f):
    """The headers of a RoCEv2 UD frame over IPv4 and its MAD; raises on anything else."""
    check(len(f) >= 14 + 20 and f[12:14] == b"\x08\x00", "not IPv4: %s" % f.hex())
    ip = 14
    ihl = (f[ip] & 15) * 4
    tot = int.from_bytes(f[ip + 2:ip + 4], "big")
    udp = ip + ihl
    bth = udp + 8
    out = {"dst_mac": f[0:6].hex(":"), "src_mac": f[6:12].hex(":"), "ip_version": f[ip] >> 4,
           "ip_proto": f[ip + 9], "src_ip": ".".join(str(b) for b in f[ip + 12:ip + 16]),
           "dst_ip": ".".join(str(b) for b in f[ip + 16:ip + 20]),
           "dport": int.from_bytes(f[udp + 2:udp + 4], "big"),
           "udp_len": int.from_bytes(f[udp + 4:udp + 6], "big"), "ip_len": tot,
           "opcode": f[bth], "pad": (f[bth + 1] >> 4) & 3, "tver": f[bth + 1] & 15,
           "pkey": int.from_bytes(f[bth + 2:bth + 4], "big"),
           "dqpn": int.from_bytes(f[bth + 5:bth + 8], "big"),
           "qkey": int.from_bytes(f[bth + 12:bth + 16], "big"),
           "src_qp": int.from_bytes(f[bth + 17:bth + 20], "big")}
    # IP header, UDP, BTH, DETH, one MAD, ICRC: nothing more, nothing less.
    check(tot == ihl + 8 + 12 + 8 + MAD_LEN + 4 and ip + tot <= len(f),
          "IP length %d for a %d-byte frame: not one MAD" % (tot, len(f)))
    out["mad"] = parse_mad(f[bth + 20:bth + 20 + MAD_LEN])
    return out


class Ctx:
    pass


class Relay:
    """RELAY in namespace b, driven from here: send(frame), and expect(pred) for the first
    frame received that pred does not answer None for."""

    def __init__(self, ctx):
        self.p = subprocess.Popen(["timeout", "--kill-after=5", str(PROC_TIMEOUT_S), "ip",
                                   "netns", "exec", ctx.pair.ns[1], "/usr/bin/python3", "-c",
                                   RELAY, ctx.pair.ifs[1]], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.q = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        if self.line(PROC_TIMEOUT_S) != "ready":
            self.p.kill()
            raise TestFailure("the relay did not start: %s" % self.p.stderr.read())

    def _read(self):
        for line in self.p.stdout:
            self.q.put(line.strip())
        self.q.put(None)

    def line(self, timeout):
        """The relay's next line within timeout ("" if none; None once it ended)."""
        try:
            return self.q.get(timeout=timeout)
        except queue.Empty:
            return ""

    def send(self, frame):
        self.p.stdin.write(frame.hex() + "\n")
        self.p.stdin.flush()

    def expect(self, pred, what, timeout=ANSWER_TIMEOUT_S):
        deadline = time.monotonic() + timeout
        seen = []
        while time.monotonic() < deadline:
            line = self.line(deadline - time.monotonic())
            check(line is not None, "%s: the relay ended" % what)
            if not line:
                continue
            f = bytes.fromhex(line.split()[1])
            got = pred(f)
            if got is not None:
                return got
            seen.append(bth_of(f))
        raise TestFailure("%s: nothing within %.0f s (other frames, as (opcode, QPN, PSN, "
                          "syndrome): %s)" % (what, timeout, seen))

    def close(self):
        try:
            self.p.stdin.write("quit\n")
            self.p.stdin.flush()
            self.p.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.p.kill()
            self.p.wait()


def sniff(ctx, frame, first, linger):
    """Sends frame from namespace b; returns [(seconds after the send, frame)] of the RoCEv2
    frames received there until `first` seconds have passed or, once one came, `linger`
    seconds after it."""
    relay = Relay(ctx)
    try:
        t0 = time.monotonic()
        relay.send(frame)
        deadline = t0 + first
        out = []
        while time.monotonic() < deadline:
            line = relay.line(deadline - time.monotonic())
            if line is None:
                raise TestFailure("the relay ended: %s" % relay.p.stderr.read())
            if not line:
                continue
            out.append((time.monotonic() - t0, bytes.fromhex(line.split()[1])))
            if len(out) == 1:
                deadline = min(deadline, time.monotonic() + linger)
    finally:
        relay.close()
    ctx.pcap.append(frame)
    ctx.pcap.extend(f for _, f in out)
    return out


def counters(ctx):
    st = ctl(BIN["droce_ctl"], ctx.pair.a)
    return {k: int(st[k]) for k in ("cm_rx_mads", "cm_rx_bad", "cm_tx_mads", "cm_conns")}


def expect_counters(ctx, before, rx_mads, rx_bad, tx_mads):
    # droce-ctl answers from droced's control thread, the one that handles QP1: by the
    # time an answer was on the wire its counts were taken; a MAD with no answer is
    # counted once droced has read it, which it has within RTU_QUIET_S or ANSWER_TIMEOUT_S.
    want = {"cm_rx_mads": before["cm_rx_mads"] + rx_mads,
            "cm_rx_bad": before["cm_rx_bad"] + rx_bad,
            "cm_tx_mads": before["cm_tx_mads"] + tx_mads, "cm_conns": 0}
    deadline = time.monotonic() + ANSWER_TIMEOUT_S
    while True:
        got = counters(ctx)
        if got == want or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    check(got == want, "droce-ctl status: %s, expected %s" % (got, want))


def mismatches(got, want):
    """{field: (got, expected)} of the fields of want that got does not have, integers in
    hex."""
    def h(v):
        return "%#x" % v if isinstance(v, int) else v
    return {k: (h(got.get(k)), h(v)) for k, v in want.items() if got.get(k) != v}


def expect_gsi_frame(ctx, f):
    """An answer from droced's QP1 to ours, to the address the MAD came from."""
    p = parse_frame(f)
    want = {"dst_mac": PEER_MAC, "src_mac": ctx.droced_mac, "ip_version": 4, "ip_proto": 17,
            "src_ip": ctx.droced_ip, "dst_ip": ctx.peer_ip, "dport": ROCE_PORT,
            "opcode": UD_SEND_ONLY, "pad": 0, "tver": 0, "pkey": 0xFFFF, "dqpn": GSI_QPN,
            "qkey": GSI_QKEY, "src_qp": GSI_QPN}
    bad = mismatches(p, want)
    check(not bad, "answer's headers (got, expected): %s" % bad)
    m = p["mad"]
    hdr = {"base_version": 1, "mgmt_class": 0x07, "class_version": 2, "method": 0x03,
           "status": 0, "class_specific": 0, "reserved": 0, "attr_mod": 0}
    bad = mismatches(m, hdr)
    check(not bad, "answer's MAD header (got, expected): %s" % bad)
    return m


def one_answer(got, what):
    check(len(got) == 1, "%s: %d frames came back, expected one: %s" %
          (what, len(got), [f.hex() for _, f in got]))
    return got[0][1]


def case_rep_rej(ctx):
    before = counters(ctx)
    got = sniff(ctx, build_frame(ctx, ATTR_REP, REP, 1), ANSWER_TIMEOUT_S, LINGER_S)
    check(got, "no answer to a REP for a connection droced does not hold (LocalCommID "
          "0x%08x, RemoteCommID 0x%08x) within %.0f s" %
          (REP["local_comm_id"], REP["remote_comm_id"], ANSWER_TIMEOUT_S))
    m = expect_gsi_frame(ctx, one_answer(got, "REP"))
    want = {"attr_id": ATTR_REJ, "tid": REP["tid"], "local_comm_id": REP["remote_comm_id"],
            "remote_comm_id": REP["local_comm_id"], "message_rejected": REJ_MSG_REP,
            "rejected_info_length": 0, "reason": REJ_INVALID_COMM_ID, "ari": bytes(72),
            "private_data": bytes(148)}
    bad = mismatches(m, want)
    check(not bad, "REJ fields (got, expected): %s" % bad)
    log("  REP 0x%08x -> 0x%08x tid 0x%016x: REJ after %.1f ms: local 0x%08x remote 0x%08x "
        "msg %d reason %d" % (REP["local_comm_id"], REP["remote_comm_id"], REP["tid"],
                              got[0][0] * 1000, m["local_comm_id"], m["remote_comm_id"],
                              m["message_rejected"], m["reason"]))
    expect_counters(ctx, before, rx_mads=1, rx_bad=1, tx_mads=1)


def case_bad_icrc(ctx):
    before = counters(ctx)
    f = bytearray(build_frame(ctx, ATTR_REP, REP, 2))
    f[-1] ^= 0x01
    got = sniff(ctx, bytes(f), RTU_QUIET_S, 0)
    ctx.bad_icrc_frames.add(len(ctx.pcap) - len(got) - 1)
    check(not got, "a REP with a bad ICRC was answered: %s" % [g.hex() for _, g in got])
    # Dropped before QP1: not a MAD received, let alone a bad one.
    expect_counters(ctx, before, rx_mads=0, rx_bad=0, tx_mads=0)
    log("  REP with a bad ICRC: no answer in %.1f s, not counted by QP1" % RTU_QUIET_S)


def case_dreq_drep(ctx):
    before = counters(ctx)
    got = sniff(ctx, build_frame(ctx, ATTR_DREQ, DREQ, 3), ANSWER_TIMEOUT_S, LINGER_S)
    check(got, "no DREP for a DREQ for a connection droced does not hold within %.0f s" %
          ANSWER_TIMEOUT_S)
    m = expect_gsi_frame(ctx, one_answer(got, "DREQ"))
    want = {"attr_id": ATTR_DREP, "tid": DREQ["tid"], "local_comm_id": DREQ["remote_comm_id"],
            "remote_comm_id": DREQ["local_comm_id"], "private_data": bytes(224)}
    bad = mismatches(m, want)
    check(not bad, "DREP fields (got, expected): %s" % bad)
    log("  DREQ 0x%08x -> 0x%08x tid 0x%016x: DREP after %.1f ms: local 0x%08x remote 0x%08x"
        % (DREQ["local_comm_id"], DREQ["remote_comm_id"], DREQ["tid"], got[0][0] * 1000,
           m["local_comm_id"], m["remote_comm_id"]))
    expect_counters(ctx, before, rx_mads=1, rx_bad=1, tx_mads=1)


def case_rtu_silent(ctx):
    before = counters(ctx)
    got = sniff(ctx, build_frame(ctx, ATTR_RTU, RTU, 4), RTU_QUIET_S, 0)
    check(not got, "an RTU for a connection droced does not hold was answered: %s" %
          [parse_frame(f)["mad"] for _, f in got])
    # Taken by QP1 (so the silence is droced's choice, not a lost frame), unmatched.
    expect_counters(ctx, before, rx_mads=1, rx_bad=1, tx_mads=0)
    log("  RTU: no answer in %.1f s, counted as received and unmatched" % RTU_QUIET_S)


# comm_est: the peer's connection (its IDs distinct from the other cases'), the server's
# port, and what its one SEND carries (16 bytes: no pad).
COMM_EST_PORT = 18515
COMM_EST_REQ = {"tid": 0xC3A5000000050010, "local_comm_id": 0xC0EE0001, "local_qkey": 0,
                "local_qpn": 0x00C0E5, "responder_resources": 1, "initiator_depth": 1,
                "remote_cm_response_timeout": 20, "transport_service_type": 0,
                "end_to_end_flow_control": 1, "starting_psn": 0x00AB00,
                "local_cm_response_timeout": 20, "retry_count": 7, "partition_key": 0xFFFF,
                "path_mtu": 3, "rnr_retry_count": 7, "max_cm_retries": 15,
                "local_lid": 0xFFFF, "remote_lid": 0xFFFF, "packet_rate": 3, "hop_limit": 64,
                "subnet_local": 1, "local_ack_timeout": 14,
                "local_ca_guid": 0x0200C3FFFE000002}
COMM_EST_DREQ_TID = 0xC3A5000000060015
COMM_EST_SPORT = 40001          # the peer's rdma_cm port, in the REQ's private data
COMM_EST_PAYLOAD = b"first, no RTU.\n\0"
RDMA_PS_TCP = 0x0106


def mapped_gid(ip):
    return bytes(10) + b"\xff\xff" + bytes(int(x) for x in ip.split("."))


def bth_of(f):
    """(opcode, destination QPN, PSN, AETH syndrome or None) of a RoCEv2 frame over IPv4."""
    bth = 14 + (f[14] & 15) * 4 + 8
    op = f[bth]
    aeth = f[bth + 12] if op == RC_ACK else None
    return (op, int.from_bytes(f[bth + 5:bth + 8], "big"),
            int.from_bytes(f[bth + 9:bth + 12], "big"), aeth)


def peer_address(ctx, op):
    """The peer's IP on namespace b's end ("add" or "del"): the server's QP needs the
    peer's MAC, which droced asks for with ARP (the kernel there answers it, with the veth
    end's MAC: the relay sees frames to either)."""
    subprocess.run(["ip", "-n", ctx.pair.ns[1], "addr", op, ctx.peer_ip + "/24", "dev",
                    ctx.pair.ifs[1]], check=op == "add", timeout=30,
                   stderr=subprocess.DEVNULL if op == "del" else None)


def case_comm_est(ctx):
    peer_address(ctx, "add")
    srv = App([BIN["cm_comm_est"], ctx.droced_ip, str(COMM_EST_PORT), "20"], ctx.pair.a,
              timeout=40, name="cm_comm_est")
    relay = None
    try:
        deadline = time.monotonic() + 20
        while "listening" not in srv.text():
            check(srv.proc.poll() is None and time.monotonic() < deadline,
                  "cm_comm_est did not listen: %s" % srv.text())
            time.sleep(0.05)
        relay = Relay(ctx)
        req = dict(COMM_EST_REQ)
        req["service_id"] = RDMA_PS_TCP << 16 | COMM_EST_PORT
        req["local_gid"] = mapped_gid(ctx.peer_ip)
        req["remote_gid"] = mapped_gid(ctx.droced_ip)
        # rdma_cm's IP header (cma_hdr): version 0, IPv4, the source port, both addresses
        req["private_data"] = (bytes([0, 4 << 4]) + COMM_EST_SPORT.to_bytes(2, "big") +
                               bytes(12) + bytes(req["local_gid"][12:]) +
                               bytes(12) + bytes(req["remote_gid"][12:])).ljust(92, b"\0")
        relay.send(build_frame(ctx, ATTR_REQ, req, 5))

        def rep_for_us(f):
            if bth_of(f)[:2] != (UD_SEND_ONLY, GSI_QPN):
                return None
            m = parse_frame(f)["mad"]
            if m["attr_id"] == ATTR_REP and m["remote_comm_id"] == req["local_comm_id"]:
                return m
            check(m["attr_id"] != ATTR_REJ, "the REQ was rejected: reason %s; cm_comm_est: %s"
                  % (m.get("reason"), srv.text()))
            return None
        rep = relay.expect(rep_for_us, "a REP to the REQ")
        check(rep["starting_psn"] < 1 << 24 and rep["local_qpn"] != 0, "REP: %s" % rep)
        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        while "accepted qpn" not in srv.text() and time.monotonic() < deadline:
            time.sleep(0.05)
        check("accepted qpn %d\n" % rep["local_qpn"] in srv.text(),
              "the REP's QPN %#x is not the server's: %s" % (rep["local_qpn"], srv.text()))
        check("established" not in srv.text(), "ESTABLISHED with no RTU and no packet: %s" %
              srv.text())
        # No RTU: the first packet on the QP stands for it. Its PSN is the REP's Starting
        # PSN: with rdma_cm each end receives from the PSN it advertised (Linux's cma
        # seq_num; droced's rdma_init_qp_attr RTR).
        data = (Ether(src=PEER_MAC, dst=ctx.droced_mac) /
                IP(src=ctx.peer_ip, dst=ctx.droced_ip, ttl=64, flags="DF") /
                UDP(sport=UDP_SPORT, dport=ROCE_PORT, chksum=0) /
                BTH(opcode=RC_SEND_ONLY, pkey=0xFFFF, dqpn=rep["local_qpn"], ackreq=1,
                    psn=rep["starting_psn"]) / Raw(COMM_EST_PAYLOAD))
        relay.send(bytes(data))
        ack = relay.expect(lambda f: bth_of(f) if bth_of(f)[0] == RC_ACK else None,
                           "an ACK of the SEND")
        check(ack[1:3] == (req["local_qpn"], rep["starting_psn"]) and ack[3] >> 5 == 0,
              "the ACK (opcode, QPN, PSN, syndrome) %s: expected QPN %#x PSN %#x, syndrome "
              "ACK" % (ack, req["local_qpn"], rep["starting_psn"]))
        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        text = COMM_EST_PAYLOAD.rstrip(b"\0").decode()
        want = ["comm_est qpn %d" % rep["local_qpn"], "notify 0", "established",
                "recv %d bytes: %s" % (len(COMM_EST_PAYLOAD), text.rstrip("\n"))]
        while not all(w in srv.text() for w in want) and time.monotonic() < deadline:
            check(srv.proc.poll() is None, "cm_comm_est exited %s:\n%s" %
                  (srv.proc.returncode, srv.text()))
            time.sleep(0.05)
        out = srv.text()
        check(all(w in out for w in want), "cm_comm_est printed:\n%s\nexpected lines %s" %
              (out, want))
        lines = out.splitlines()
        check(lines.index(want[0]) < lines.index(want[1]) < lines.index(want[2]),
              "COMM_EST, notify, ESTABLISHED out of order:\n%s" % out)
        dreq = {"tid": COMM_EST_DREQ_TID, "local_comm_id": req["local_comm_id"],
                "remote_comm_id": rep["local_comm_id"], "remote_qpn_eecn": rep["local_qpn"]}
        relay.send(build_frame(ctx, ATTR_DREQ, dreq, 6))

        def drep_for_us(f):
            if bth_of(f)[:2] != (UD_SEND_ONLY, GSI_QPN):
                return None
            m = parse_frame(f)["mad"]
            ok = (m["attr_id"] == ATTR_DREP and m["local_comm_id"] == rep["local_comm_id"] and
                  m["remote_comm_id"] == req["local_comm_id"])
            return m if ok else None
        relay.expect(drep_for_us, "a DREP to the DREQ")
        check(srv.wait(timeout=ANSWER_TIMEOUT_S) == 0 and "disconnected" in srv.output,
              "cm_comm_est exited %s:\n%s" % (srv.proc.returncode, srv.output))
        log("  REQ, REP (server QPN %#x), no RTU; SEND PSN %#x ACKed; server: %s" %
            (rep["local_qpn"], rep["starting_psn"], ", ".join(want[:3])))
    finally:
        if relay is not None:
            relay.close()
        if srv.proc.poll() is None:
            srv.kill9()
            srv.wait(10)
        peer_address(ctx, "del")


def write_pcap(path, frames):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", i, 0, len(fr), len(fr)) + fr)


def case_pcap(ctx):
    """Every frame sent and received: droce-pcap --verify (lib/wire's parser and ICRC) and
    tshark's InfiniBand dissector."""
    check(ctx.pcap, "no frames captured")
    path = ctx.pair.work.file("cm_wire.pcap")
    good = [f for i, f in enumerate(ctx.pcap) if i not in ctx.bad_icrc_frames]
    write_pcap(path, good)
    r = subprocess.run(["timeout", "30", BIN["droce_pcap"], "--verify", "--json", path],
                       capture_output=True, text=True)
    check(r.returncode == 0, "droce-pcap --verify exited %d:\n%s%s" %
          (r.returncode, r.stdout, r.stderr))
    rows = [json.loads(l) for l in r.stdout.splitlines()]
    summary = rows.pop()["summary"]
    check(summary.get("roce") == len(good) == summary.get("ok") == len(rows),
          "droce-pcap summary %s for %d frames" % (summary, len(good)))
    for row in rows:
        check(row["result"] == "OK" and row["icrc_ok"] and row["opcode"] == UD_SEND_ONLY and
              row["dqpn"] == GSI_QPN and row["pkey"] == 0xFFFF and
              row["deth"] == {"qkey": GSI_QKEY, "src_qp": GSI_QPN} and
              row["payload_len"] == MAD_LEN, "droce-pcap: %s" % row)
    # The control: droce-pcap does reject the frame whose ICRC bit was flipped.
    if ctx.bad_icrc_frames:
        bad_path = ctx.pair.work.file("bad_icrc.pcap")
        write_pcap(bad_path, [ctx.pcap[i] for i in sorted(ctx.bad_icrc_frames)])
        rb = subprocess.run(["timeout", "30", BIN["droce_pcap"], "--verify", "--json",
                             bad_path], capture_output=True, text=True)
        check(rb.returncode == 1 and '"BAD_ICRC"' in rb.stdout,
              "droce-pcap accepted the flipped ICRC: %d %s" % (rb.returncode, rb.stdout))
    log("  droce-pcap --verify: %d frames, every ICRC good (%s)" %
        (len(good), ", ".join("%s %s" % (row["src"], row["icrc"]) for row in rows)))
    tshark_check(ctx, path, good)


# lib/cm field -> tshark 4.0 field (infiniband.cm.*), per attribute (as test_cm_tshark).
TSHARK_CM = {
    ATTR_REP: {"local_comm_id": "rep", "remote_comm_id": "rep.remotecommid",
               "local_qpn": "rep.localqpn", "starting_psn": "rep.startpsn",
               "local_ca_guid": "rep.localcaguid"},
    ATTR_REJ: {"local_comm_id": "rej.localcommid", "remote_comm_id": "rej.remotecommid",
               "message_rejected": "rej.msgrej", "rejected_info_length": "rej.rejinfolen",
               "reason": "rej.reason"},
    ATTR_RTU: {"local_comm_id": "rtu.localcommid", "remote_comm_id": "rtu.remotecommid"},
    ATTR_DREQ: {"local_comm_id": "dreq.localcommid", "remote_comm_id": "dreq.remotecommid",
                "remote_qpn_eecn": "req.remoteqpneecn"},
    ATTR_DREP: {"local_comm_id": "drsp.localcommid", "remote_comm_id": "drsp.remotecommid"},
}
TSHARK_HDR = [("infiniband.bth.opcode", "opcode"), ("infiniband.bth.p_key", "pkey"),
              ("infiniband.bth.destqp", "dqpn"), ("infiniband.deth.q_key", "qkey"),
              ("infiniband.deth.srcqp", "src_qp")]
TSHARK_MAD = [("infiniband.mad.baseversion", "base_version"),
              ("infiniband.mad.mgmtclass", "mgmt_class"),
              ("infiniband.mad.classversion", "class_version"),
              ("infiniband.mad.method", "method"),
              ("infiniband.mad.transactionid", "tid"),
              ("infiniband.mad.attributeid", "attr_id")]
# Dissectors that would claim the private data (test_cm_tshark.py).
TSHARK_PROTOCOLS_OFF = ["infiniband_sdp", "smc", "smb_direct", "rpcordma", "nvme-rdma", "lnet",
                        "iser", "infiniband.eoib", "fcoib"]


def tshark_check(ctx, path, frames):
    tshark = shutil.which("tshark")
    if tshark is None:
        log("  tshark not installed: its decode not checked")
        return
    fields = (["frame.number", "_ws.malformed", "infiniband.invariant.crc"] +
              [f for f, _ in TSHARK_HDR] + [f for f, _ in TSHARK_MAD] +
              sorted({"infiniband.cm." + t for d in TSHARK_CM.values() for t in d.values()}))
    args = [tshark, "-n", "-r", path, "-T", "fields", "-E", "separator=/t", "-E",
            "occurrence=a", "-E", "aggregator=|", "--disable-heuristic", "eth_over_ib"]
    for p in TSHARK_PROTOCOLS_OFF:
        args += ["--disable-protocol", p]
    for f in fields:
        args += ["-e", f]
    r = subprocess.run(["timeout", "60"] + args, capture_output=True, text=True)
    check(r.returncode == 0, "tshark exited %d: %s" % (r.returncode, r.stderr))
    lines = r.stdout.splitlines()
    check(len(lines) == len(frames), "tshark printed %d frames of %d" %
          (len(lines), len(frames)))
    n = 0
    for line, frame in zip(lines, frames):
        v = dict(zip(fields, line.split("\t")))
        p = parse_frame(frame)
        m = p["mad"]
        what = "tshark frame %s (%s)" % (v["frame.number"], ATTR_NAMES.get(m["attr_id"]))

        def num(f):
            s = v.get(f, "")
            check(s != "" and "|" not in s, "%s: %s is %r" % (what, f, s))
            return int(s, 16) if s.startswith("0x") else int(s)

        check(v["_ws.malformed"] == "", "%s: malformed" % what)
        check(num("infiniband.invariant.crc") == int.from_bytes(frame[-4:], "big"),
              "%s: ICRC %s" % (what, v["infiniband.invariant.crc"]))
        for f, k in TSHARK_HDR:
            check(num(f) == p[k], "%s: %s = %s, frame has %#x" % (what, f, v[f], p[k]))
            n += 1
        for f, k in TSHARK_MAD:
            check(num(f) == m[k], "%s: %s = %s, MAD has %#x" % (what, f, v[f], m[k]))
            n += 1
        for k, t in TSHARK_CM[m["attr_id"]].items():
            f = "infiniband.cm." + t
            check(num(f) == m[k], "%s: %s = %s, MAD has %#x" % (what, f, v[f], m[k]))
            n += 1
    log("  tshark: %d frames, %d fields equal to this test's decode" % (len(frames), n))


def run():
    ctx = Ctx()
    ctx.pcap = []
    ctx.bad_icrc_frames = set()
    ctx.pair = VethPair(BIN["droced"], "cmwire", devargs=VETH_DEVARGS)
    pair = ctx.pair
    try:
        # Only daemon a: namespace b's end of the veth is the test's raw socket.
        try:
            pair.setup()
            pair.a.start()
        except BaseException:
            pair.close(False)
            raise
        ok = False
        try:
            ports = ctl_lines(BIN["droce_ctl"], pair.a, "ports")
            check(len(ports) == 1 and "mac" in ports[0], "droce-ctl ports: %s" % ports)
            ctx.droced_mac = ports[0]["mac"]
            ctx.droced_ip, ctx.peer_ip = pair.ip_a, pair.ip_b
            check(ports[0].get("ipv4", "").split("/")[0] == ctx.droced_ip,
                  "droce-ctl ports: %s" % ports)
            check(counters(ctx)["cm_conns"] == 0, "droced holds connections already")
            log("  droced %s %s on %s (namespace %s); peer %s %s on %s (namespace %s)" %
                (ctx.droced_mac, ctx.droced_ip, pair.ifs[0], pair.ns[0], PEER_MAC,
                 ctx.peer_ip, pair.ifs[1], pair.ns[1]))
            run_cases([("rep_rej", lambda: case_rep_rej(ctx)),
                       ("bad_icrc", lambda: case_bad_icrc(ctx)),
                       ("dreq_drep", lambda: case_dreq_drep(ctx)),
                       ("rtu_silent", lambda: case_rtu_silent(ctx)),
                       ("pcap", lambda: case_pcap(ctx)),
                       ("comm_est", lambda: case_comm_est(ctx))], CASES)
            expect_idle(BIN["droce_ctl"], pair.a)
            ok = True
        finally:
            pair.close(ok)
    finally:
        names = subprocess.run(["ip", "netns", "list"], capture_output=True,
                               text=True).stdout
        check(pair.ns[0] not in names and pair.ns[1] not in names, "namespace left behind")


if __name__ == "__main__":
    main([("cm_wire", run)], [])
