/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef DROCE_WIRE_OPCODE_H
#define DROCE_WIRE_OPCODE_H

/*
 * The BTH opcodes droce knows and one table of what each implies.
 *
 * The wire opcode (enum droce_opcode, the byte in the BTH) and the derived properties
 * (enum droce_opf, a bit mask) are different types on purpose: code tests a property
 * with droce_opf bits, never by comparing opcodes against masks.
 */

#include <stddef.h>
#include <stdint.h>

/* Transport in the opcode's top three bits (IB spec 9.2.1, table 38). */
#define DROCE_TRANSPORT_MASK	0xE0
enum droce_transport {
	DROCE_TRANSPORT_RC = 0x00,
	DROCE_TRANSPORT_UC = 0x20,
	DROCE_TRANSPORT_UD = 0x60,
	DROCE_TRANSPORT_CNP = 0x80,	/* RoCEv2 CNP lives in the manufacturer-specific range */
	DROCE_TRANSPORT_XRC = 0xA0,
};

/* Every opcode is one X(name, value) line: RC, UC, UD and XRC of IB spec table 38 plus
 * IBA 1.5's FLUSH and ATOMIC WRITE (RC), and the RoCEv2 CNP (Annex A17.9.3). */
#define DROCE_OPCODE_LIST(X) \
	X(RC_SEND_FIRST, 0x00) \
	X(RC_SEND_MIDDLE, 0x01) \
	X(RC_SEND_LAST, 0x02) \
	X(RC_SEND_LAST_WITH_IMMEDIATE, 0x03) \
	X(RC_SEND_ONLY, 0x04) \
	X(RC_SEND_ONLY_WITH_IMMEDIATE, 0x05) \
	X(RC_RDMA_WRITE_FIRST, 0x06) \
	X(RC_RDMA_WRITE_MIDDLE, 0x07) \
	X(RC_RDMA_WRITE_LAST, 0x08) \
	X(RC_RDMA_WRITE_LAST_WITH_IMMEDIATE, 0x09) \
	X(RC_RDMA_WRITE_ONLY, 0x0A) \
	X(RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, 0x0B) \
	X(RC_RDMA_READ_REQUEST, 0x0C) \
	X(RC_RDMA_READ_RESPONSE_FIRST, 0x0D) \
	X(RC_RDMA_READ_RESPONSE_MIDDLE, 0x0E) \
	X(RC_RDMA_READ_RESPONSE_LAST, 0x0F) \
	X(RC_RDMA_READ_RESPONSE_ONLY, 0x10) \
	X(RC_ACKNOWLEDGE, 0x11) \
	X(RC_ATOMIC_ACKNOWLEDGE, 0x12) \
	X(RC_COMPARE_SWAP, 0x13) \
	X(RC_FETCH_ADD, 0x14) \
	X(RC_SEND_LAST_WITH_INVALIDATE, 0x16) \
	X(RC_SEND_ONLY_WITH_INVALIDATE, 0x17) \
	X(RC_FLUSH, 0x1C) \
	X(RC_ATOMIC_WRITE, 0x1D) \
	X(UC_SEND_FIRST, 0x20) \
	X(UC_SEND_MIDDLE, 0x21) \
	X(UC_SEND_LAST, 0x22) \
	X(UC_SEND_LAST_WITH_IMMEDIATE, 0x23) \
	X(UC_SEND_ONLY, 0x24) \
	X(UC_SEND_ONLY_WITH_IMMEDIATE, 0x25) \
	X(UC_RDMA_WRITE_FIRST, 0x26) \
	X(UC_RDMA_WRITE_MIDDLE, 0x27) \
	X(UC_RDMA_WRITE_LAST, 0x28) \
	X(UC_RDMA_WRITE_LAST_WITH_IMMEDIATE, 0x29) \
	X(UC_RDMA_WRITE_ONLY, 0x2A) \
	X(UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, 0x2B) \
	X(UD_SEND_ONLY, 0x64) \
	X(UD_SEND_ONLY_WITH_IMMEDIATE, 0x65) \
	X(XRC_SEND_FIRST, 0xA0) \
	X(XRC_SEND_MIDDLE, 0xA1) \
	X(XRC_SEND_LAST, 0xA2) \
	X(XRC_SEND_LAST_WITH_IMMEDIATE, 0xA3) \
	X(XRC_SEND_ONLY, 0xA4) \
	X(XRC_SEND_ONLY_WITH_IMMEDIATE, 0xA5) \
	X(XRC_RDMA_WRITE_FIRST, 0xA6) \
	X(XRC_RDMA_WRITE_MIDDLE, 0xA7) \
	X(XRC_RDMA_WRITE_LAST, 0xA8) \
	X(XRC_RDMA_WRITE_LAST_WITH_IMMEDIATE, 0xA9) \
	X(XRC_RDMA_WRITE_ONLY, 0xAA) \
	X(XRC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, 0xAB) \
	X(XRC_RDMA_READ_REQUEST, 0xAC) \
	X(XRC_RDMA_READ_RESPONSE_FIRST, 0xAD) \
	X(XRC_RDMA_READ_RESPONSE_MIDDLE, 0xAE) \
	X(XRC_RDMA_READ_RESPONSE_LAST, 0xAF) \
	X(XRC_RDMA_READ_RESPONSE_ONLY, 0xB0) \
	X(XRC_ACKNOWLEDGE, 0xB1) \
	X(XRC_ATOMIC_ACKNOWLEDGE, 0xB2) \
	X(XRC_COMPARE_SWAP, 0xB3) \
	X(XRC_FETCH_ADD, 0xB4) \
	X(XRC_SEND_LAST_WITH_INVALIDATE, 0xB6) \
	X(XRC_SEND_ONLY_WITH_INVALIDATE, 0xB7) \
	X(CNP, 0x81)

enum droce_opcode {
#define DROCE_OPCODE_ENUM(name, value) DROCE_OP_##name = value,
	DROCE_OPCODE_LIST(DROCE_OPCODE_ENUM)
#undef DROCE_OPCODE_ENUM
};

/* Extension headers in the order they follow the BTH on the wire (9.2, 9.3). */
enum droce_ext_hdr {
	DROCE_EXT_DETH,
	DROCE_EXT_XRCETH,
	DROCE_EXT_FETH,
	DROCE_EXT_RETH,
	DROCE_EXT_ATMETH,
	DROCE_EXT_AETH,
	DROCE_EXT_ATMACK,
	DROCE_EXT_IMMDT,
	DROCE_EXT_IETH,
	DROCE_EXT_CNP_RSVD,
	DROCE_EXT_COUNT
};

#define DROCE_EXT_BIT(h)	(1u << (h))

/* Properties an opcode implies. */
enum droce_opf {
	DROCE_OPF_REQUEST	= 1u << 0,	/* sent by a requester */
	DROCE_OPF_RESPONSE	= 1u << 1,	/* sent by a responder (ACK, read/atomic response) */
	DROCE_OPF_FIRST		= 1u << 2,	/* first packet of a message */
	DROCE_OPF_MIDDLE	= 1u << 3,
	DROCE_OPF_LAST		= 1u << 4,	/* last packet; FIRST|LAST is an ONLY packet */
	DROCE_OPF_PAYLOAD	= 1u << 5,	/* may carry payload (and so a pad) */
	DROCE_OPF_SEND		= 1u << 6,
	DROCE_OPF_WRITE		= 1u << 7,
	DROCE_OPF_READ		= 1u << 8,	/* READ request */
	DROCE_OPF_READ_RESP	= 1u << 9,
	DROCE_OPF_ACK		= 1u << 10,	/* ACKNOWLEDGE */
	DROCE_OPF_ATOMIC	= 1u << 11,	/* compare-swap or fetch-add request */
	DROCE_OPF_ATOMIC_ACK	= 1u << 12,
	DROCE_OPF_IMM		= 1u << 13,	/* carries ImmDt */
	DROCE_OPF_INV		= 1u << 14,	/* carries IETH */
	DROCE_OPF_FLUSH		= 1u << 15,
	DROCE_OPF_ATOMIC_WRITE	= 1u << 16,
	DROCE_OPF_CNP		= 1u << 17,
	/* Consumes a receive WQE at the responder when it completes a message. */
	DROCE_OPF_RWQE		= 1u << 18,
};

#define DROCE_OPF_ONLY (DROCE_OPF_FIRST | DROCE_OPF_LAST)

struct droce_opcode_info {
	const char *name;	/* "RC_SEND_ONLY"; NULL for an opcode droce does not know */
	uint32_t flags;		/* enum droce_opf */
	uint16_t ext_mask;	/* DROCE_EXT_BIT(enum droce_ext_hdr) of each header carried */
	uint8_t transport;	/* enum droce_transport */
	uint8_t hdr_len;	/* BTH plus extension headers */
	uint8_t payload_fixed;	/* exact payload length when nonzero (ATOMIC WRITE: 8) */
	uint8_t ext_off[DROCE_EXT_COUNT];	/* offset from the BTH; 0 when absent */
};

/* Indexed by the BTH opcode byte; unknown opcodes have name == NULL. */
extern const struct droce_opcode_info droce_opcode_table[256];

/* Length of each extension header, indexed by enum droce_ext_hdr. */
extern const uint8_t droce_ext_len[DROCE_EXT_COUNT];
/* Name of each extension header ("RETH"), indexed by enum droce_ext_hdr. */
extern const char *const droce_ext_name[DROCE_EXT_COUNT];

static inline const struct droce_opcode_info *
droce_opcode_info(uint8_t opcode)
{
	const struct droce_opcode_info *oi = &droce_opcode_table[opcode];

	return oi->name != NULL ? oi : NULL;
}

/* "RC_SEND_ONLY", or NULL for an unknown opcode. */
static inline const char *
droce_opcode_name(uint8_t opcode)
{
	return droce_opcode_table[opcode].name;
}

/*
 * The opcode of transport (enum droce_transport) whose row says exactly flags about what
 * the packet is: its operation (DROCE_OPF_SEND, _WRITE, _READ, ...), its place in the
 * message (FIRST, MIDDLE, LAST, ONLY) and IMM or INV. What the table derives from those
 * (REQUEST, RESPONSE, PAYLOAD, RWQE) is ignored. Returns the opcode, or -1 when table 38
 * has none (a MIDDLE with immediate, a UD SEND other than ONLY, UC with invalidate).
 * Two rows alike (COMPARE SWAP and FETCH ADD: both ATOMIC | ONLY) give the lower opcode.
 * A requester builds its opcodes with it, as the parser checks them: from the one table.
 */
int droce_opcode_find(uint8_t transport, uint32_t flags);

#endif /* DROCE_WIRE_OPCODE_H */
