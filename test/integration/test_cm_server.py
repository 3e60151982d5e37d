# SPDX-License-Identifier: BSD-3-Clause
"""droced's rdma_cm server side, spoken by hand (cm_proto; no librdmacm).

  basic       one droced: CM_OPEN's pipe, ids and bad handles, bind/listen rules, a
              connection between two channels (REQ, REP, RTU, DREQ, DREP through QP1 to
              ourselves), destroy while connected, REJECT with private data, nobody
              listening (REJ 8), a listener destroyed with a request pending; UD (SIDR),
              options, NOTIFY, MIGRATE; 20000 random CM requests on two channels
  memif       two droced over a memif pair: REJ 8 across the wire, a listener and a
              connector (CONNECT_REQUEST, CONNECT_RESPONSE, ESTABLISHED, QP attributes),
              DISCONNECT -> DISCONNECTED on both, kill -9 of a connected client ->
              DISCONNECTED on the survivor, 2000 connections 64 at a time (rate printed)
  veth        two droced in namespaces (real ARP): an address nobody has -> ADDR_ERROR;
              QP1 packets injected from B's namespace with a raw socket (a garbage MAD,
              wrong Q_Key, wrong P_Key, an RC opcode, a short MAD, a REP for no
              connection) are counted in cm_rx_bad and change nothing: a connection
              across works after them
All end with droced idle and counting QP1's MADs in droce-ctl status.

usage: test_cm_server.py DROCED DROCE_CTL CM_PROTO [CASE...]
"""

import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from droce_harness import (VETH_DEVARGS, App, Daemon, MemifPair, VethPair, Workdir, check,
                           ctl, expect_idle, log, main, parse_args)

BIN, CASES = parse_args(["droced", "droce_ctl", "cm_proto"])
PORT = 18515


def run_app(argv, daemon, name, timeout=60):
    a = App([BIN["cm_proto"]] + argv, daemon, timeout, name)
    rc = a.wait(timeout + 5)
    check(rc == 0, "%s exited %s:\n%s\n--- droced:\n%s" %
          (name, rc, a.output[-3000:], daemon.log_text()[-2000:]))
    return a.output


def wait_text(app, text, timeout=20):
    deadline = time.monotonic() + timeout
    while text not in app.text():
        check(time.monotonic() < deadline and app.proc.poll() is None,
              "%s: no '%s':\n%s" % (app.name, text, app.text()[-2000:]))
        time.sleep(0.02)


def basic():
    work = Workdir("cm-basic")
    d = Daemon(BIN["droced"], work, "c", "net_ring0", "10.99.3.1/24")
    try:
        d.start()
        out = run_app(["basic", "10.99.3.1"], d, "cm_proto-basic")
        log("  " + "\n  ".join(l for l in out.splitlines() if l.startswith("ok")))
        # Random requests on two channels; then a kill -9 of a channel holding ids.
        out = run_app(["garbage", "10.99.3.1", "1", "20000"], d, "cm_proto-garbage", 120)
        log("  " + [l for l in out.splitlines() if l.startswith("ok")][0])
        cm_idle(d)
        st = ctl(BIN["droce_ctl"], d)
        check(int(st.get("cm_tx_mads", "0")) > 0, "no MAD counted: %s" % st)
        expect_idle(BIN["droce_ctl"], d)
        check(d.stop() == 0, "droced did not stop cleanly")
    finally:
        if d.proc is not None:
            d.stop(expect_clean=False)
        work.close()


def memif():
    with MemifPair(BIN["droced"], tag="cm-memif") as pair:
        a, b = pair.a, pair.b
        # Nobody listens on A: A's CM answers B's REQ with REJ 8 over the wire.
        out = run_app(["client", pair.ip_a, str(PORT), "norepeat"], b, "cm-norepeat")
        check("ok rejected status 8" in out, out)
        log("  no listener: REJECTED 8 across the wire")
        # A listener on A, a connector on B.
        srv = App([BIN["cm_proto"], "server", pair.ip_a, str(PORT)], a, 60, "cm-server")
        wait_text(srv, "ready")
        out = run_app(["client", pair.ip_a, str(PORT), "disconnect"], b, "cm-client")
        check("ok client established" in out and "ok client disconnected" in out, out)
        rc = srv.wait(30)
        check(rc == 0 and "ok server disconnected" in srv.output,
              "server %s:\n%s" % (rc, srv.output[-2000:]))
        log("  connect, accept, establish, disconnect across the wire")
        # kill -9 of the connected client: the survivor's id gets DISCONNECTED (DREQ).
        srv = App([BIN["cm_proto"], "server", pair.ip_a, str(PORT + 1)], a, 60, "cm-server2")
        wait_text(srv, "ready")
        cli = App([BIN["cm_proto"], "client", pair.ip_a, str(PORT + 1), "hold"], b, 60,
                  "cm-hold")
        wait_text(cli, "ok client established")
        wait_text(srv, "ok server established")
        cli.kill9()
        rc = srv.wait(30)
        check(rc == 0 and "ok server disconnected" in srv.output,
              "survivor %s:\n%s" % (rc, srv.output[-2000:]))
        log("  kill -9 of a connected client: DISCONNECTED on the survivor")
        srv = App([BIN["cm_proto"], "serve", pair.ip_a, str(PORT + 2)], a, 120, "cm-serve")
        wait_text(srv, "ready")
        # droce-ctl's ids by state: the server's listener, and every id in one state
        st = ctl(BIN["droce_ctl"], a)
        states = id_states(st)
        check(states.get("LISTEN", 0) >= 1 and sum(states.values()) == int(st["cm_ids"]),
              "droce-ctl status: ids by state %s, cm_ids %s" % (states, st["cm_ids"]))
        out = run_app(["client", pair.ip_a, str(PORT + 2), "rate:2000"], b, "cm-rate", 100)
        log("  " + [l for l in out.splitlines() if "connections in" in l][0])
        srv.stop()
        for dm in (a, b):
            cm_idle(dm)
            st = ctl(BIN["droce_ctl"], dm)
            log("  %s: cm_rx_mads=%s cm_tx_mads=%s cm_rx_bad=%s" %
                (dm.name, st.get("cm_rx_mads"), st.get("cm_tx_mads"), st.get("cm_rx_bad")))
            check(int(st.get("cm_rx_mads", "0")) > 0, "no MAD received: %s" % st)
            expect_idle(BIN["droce_ctl"], dm)


def id_states(st):
    """droce-ctl status's ids by state: {"LISTEN": 1, ...} (the 9 of them, zeros too)."""
    states = {k[len("cm_ids_"):]: int(v) for k, v in st.items() if k.startswith("cm_ids_")}
    check(len(states) == 9, "droce-ctl status: want 9 cm_ids_<STATE> keys, got %s" % states)
    return states


def cm_idle(daemon, timeout=15):
    """No CM channel or id left, and the connections' timewaits (about 2 s) over."""
    deadline = time.monotonic() + timeout
    while True:
        st = ctl(BIN["droce_ctl"], daemon)
        left = {k: st.get(k) for k in ("cm_channels", "cm_ids", "cm_conns") if st.get(k) != "0"}
        if not left:
            return
        check(time.monotonic() < deadline, "droced %s: CM not idle: %s" % (daemon.name, left))
        time.sleep(0.1)


# Runs in B's namespace: sends RoCEv2 frames to QP1 of A (argv: ifname, A's MAC, B's MAC,
# A's IP, B's IP), one per kind of bad packet, ICRCs right (IB Annex A17.3.3).
INJECT = r"""
import os, socket, struct, sys, zlib
ifn, dmac, smac, dip, sip = sys.argv[1:6]
dmac = bytes.fromhex(dmac.replace(":", "")); smac = bytes.fromhex(smac.replace(":", ""))
def csum(h):
    s = sum(struct.unpack("!%dH" % (len(h) // 2), h))
    while s > 0xFFFF:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF
def frame(opcode, pkey, qkey, payload):
    bth = struct.pack("!BBHII", opcode, 0, pkey, 1, 0x123)
    deth = struct.pack("!II", qkey, 1) if opcode >= 0x60 else b""
    l4 = bth + deth + payload
    udp = struct.pack("!HHHH", 0xC001, 4791, 8 + len(l4) + 4, 0)
    ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp) + len(l4) + 4, 0,
                               0x4000, 64, 17, 0, socket.inet_aton(sip), socket.inet_aton(dip)))
    ip[10:12] = struct.pack("!H", csum(bytes(ip)))
    m = bytearray(ip + udp + l4)
    m[1] = 0xFF; m[8] = 0xFF; m[10:12] = b"\xff\xff"; m[26:28] = b"\xff\xff"; m[32] = 0xFF
    icrc = struct.pack("<I", zlib.crc32(b"\xff" * 8 + bytes(m)))
    return dmac + smac + b"\x08\x00" + bytes(ip) + udp + l4 + icrc
def mad(attr):
    return struct.pack("!BBBBHHQHHI", 1, 7, 2, 3, 0, 0, 0x42, attr, 0, 0) + os.urandom(232)
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((ifn, 0))
sent = [
    frame(0x64, 0xFFFF, 0x80010000, os.urandom(256)),   # garbage: not a CM MAD
    frame(0x64, 0xFFFF, 0x11111111, mad(0x13)),         # wrong Q_Key
    frame(0x64, 0x1234, 0x80010000, mad(0x13)),         # wrong P_Key
    frame(0x04, 0xFFFF, 0x80010000, mad(0x13)),         # RC SEND ONLY to QP1
    frame(0x64, 0xFFFF, 0x80010000, mad(0x13)[:64]),    # short
    frame(0x64, 0xFFFF, 0x80010000, mad(0x13)),         # a REP for no connection
]
for f in sent:
    s.send(f)
print("sent", len(sent), flush=True)
"""


def port_mac(daemon):
    m = re.search(r"mac ([0-9a-f:]{17})", daemon.log_text())
    check(m is not None, "no MAC in %s's log" % daemon.name)
    return m.group(1)


def veth():
    with VethPair(BIN["droced"], tag="cm-veth", devargs=VETH_DEVARGS) as pair:
        a, b = pair.a, pair.b
        out = run_app(["client", "10.99.1.77", str(PORT), "unreach"], b, "cm-unreach")
        check("ok address error" in out, out)
        log("  an address nobody answers ARP for: ADDR_ERROR")
        before = ctl(BIN["droce_ctl"], a)
        subprocess.run(["ip", "netns", "exec", pair.ns[1], "/usr/bin/python3", "-c", INJECT,
                        pair.ifs[1], port_mac(a), port_mac(b), pair.ip_a, pair.ip_b],
                       check=True, timeout=30)
        deadline = time.monotonic() + 5
        while True:
            st = ctl(BIN["droce_ctl"], a)
            bad = int(st["cm_rx_bad"]) - int(before["cm_rx_bad"])
            if bad >= 6 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        check(bad == 6, "cm_rx_bad went up by %d, not 6:\n%s" % (bad, a.log_text()[-2000:]))
        # The REP parses as a CM MAD (cm_rx_mads) and matches nothing (cm_rx_bad).
        check(int(st["cm_rx_mads"]) - int(before["cm_rx_mads"]) == 1,
              "a bad packet was taken: %s" % st)
        log("  6 bad QP1 packets counted (cm_rx_bad), none taken")
        srv = App([BIN["cm_proto"], "server", pair.ip_a, str(PORT)], a, 60, "cm-server")
        wait_text(srv, "ready")
        out = run_app(["client", pair.ip_a, str(PORT), "disconnect"], b, "cm-client")
        check("ok client disconnected" in out, out)
        check(srv.wait(30) == 0, "server:\n" + srv.output[-2000:])
        log("  a connection across the veth pair after them")
        for dm in (a, b):
            cm_idle(dm)
            expect_idle(BIN["droce_ctl"], dm)


if __name__ == "__main__":
    main([("basic", basic), ("memif", memif), ("veth", veth)], CASES)
