#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The loop builder -> capture file -> parser: droce-pcap must accept every packet
wire_gen built (every opcode, size, IP version, VLAN setting), with the ICRC the Python
reference computes, and decode exactly the values wire_gen's manifest says it put in.

usage: test_droce_pcap_wire_gen.py WIRE_GEN DROCE_PCAP [--seed N]
"""

import argparse

import interop_util as u
from interop_util import check


def run(argv, tmp):
    ap = argparse.ArgumentParser()
    ap.add_argument('wire_gen')
    ap.add_argument('droce_pcap')
    ap.add_argument('--seed', type=int, default=1)
    a = ap.parse_args(argv)

    pcap, rows = u.wire_gen(a.wire_gen, tmp, a.seed)
    u.check_manifest_opcodes(rows, u.WIRE_GEN_SIZES)
    frames = u.read_pcap(pcap)
    check(len(frames) == len(rows), 'pcap has %d frames, manifest %d rows'
          % (len(frames), len(rows)))
    recs, summary = u.droce_pcap(a.droce_pcap, pcap)
    n = len(rows)
    want = {'packets': n, 'roce': n, 'ok': n, 'bad_icrc': 0, 'malformed': 0, 'other': 0}
    check(summary == want, 'droce-pcap summary %s, expected %s' % (summary, want))
    check(sorted(recs) == list(range(1, n + 1)), 'droce-pcap printed frames %s..., not 1..%d'
          % (sorted(recs)[:5], n))
    values = 0
    for frame, m in zip(frames, rows):
        rec = recs[m['frame']]
        what = 'frame %d (%s, %d bytes, IPv%d%s)' % (m['frame'], m['opcode_name'],
                                                    m['payload_len'], m['ip_version'],
                                                    ' VLAN' if m['vlan'] else '')
        ref = u.ref_icrc(frame).hex().upper()
        check(rec['result'] == 'OK' and rec['icrc_ok'] is True,
              '%s: droce-pcap says %s' % (what, rec))
        check(rec['icrc'] == rec['icrc_expected'] == ref,
              '%s: ICRC %s, droce-pcap expected %s, reference %s'
              % (what, rec['icrc'], rec['icrc_expected'], ref))
        values += u.compare_droce_record(rec, m, what)
    print('test_droce_pcap_wire_gen: %d packets OK with the reference ICRC, %d decoded '
          'values equal to the manifest' % (n, values))


if __name__ == '__main__':
    u.main(run)
