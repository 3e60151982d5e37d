/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef DROCE_WIRE_H
#define DROCE_WIRE_H

/*
 * lib/wire: RoCEv2 on the wire, knowing nothing of QPs.
 *   droce_wire_hdr.h     header layouts and field accessors
 *   droce_wire_opcode.h  the opcode table
 *   droce_wire_psn.h     24-bit PSN arithmetic
 *   droce_wire_pkt.h     segments, ICRC, builder, parser
 *   droce_wire_mbuf.h    rte_mbuf chains as segment lists (include it only with DPDK)
 */

#include "droce_wire_hdr.h"
#include "droce_wire_opcode.h"
#include "droce_wire_pkt.h"
#include "droce_wire_psn.h"

#endif /* DROCE_WIRE_H */
