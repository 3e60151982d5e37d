/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * The opcode table: one row per opcode, the single source of what an opcode carries.
 * Header offsets are derived from the header set at compile time, so a row names only
 * which headers are present; test_wire_opcode.c recomputes every offset independently.
 */

#include "droce_wire_hdr.h"
#include "droce_wire_opcode.h"

const uint8_t droce_ext_len[DROCE_EXT_COUNT] = {
	[DROCE_EXT_DETH] = DROCE_DETH_LEN,
	[DROCE_EXT_FETH] = DROCE_FETH_LEN,
	[DROCE_EXT_RETH] = DROCE_RETH_LEN,
	[DROCE_EXT_ATMETH] = DROCE_ATMETH_LEN,
	[DROCE_EXT_AETH] = DROCE_AETH_LEN,
	[DROCE_EXT_ATMACK] = DROCE_ATMACK_LEN,
	[DROCE_EXT_IMMDT] = DROCE_IMMDT_LEN,
	[DROCE_EXT_IETH] = DROCE_IETH_LEN,
	[DROCE_EXT_CNP_RSVD] = DROCE_CNP_RSVD_LEN,
};

const char *const droce_ext_name[DROCE_EXT_COUNT] = {
	[DROCE_EXT_DETH] = "DETH",
	[DROCE_EXT_FETH] = "FETH",
	[DROCE_EXT_RETH] = "RETH",
	[DROCE_EXT_ATMETH] = "AtomicETH",
	[DROCE_EXT_AETH] = "AETH",
	[DROCE_EXT_ATMACK] = "AtomicAckETH",
	[DROCE_EXT_IMMDT] = "ImmDt",
	[DROCE_EXT_IETH] = "IETH",
	[DROCE_EXT_CNP_RSVD] = "CNP reserved",
};

#define H(h)		DROCE_EXT_BIT(DROCE_EXT_##h)
#define HAS(m, h)	(((m) >> (h)) & 1u)
/* Size of the headers in mask m that precede header h on the wire. */
#define PART(m, h, x, len)	((x) < (h) && HAS(m, x) ? (len) : 0)
#define BEFORE(m, h) ( \
	PART(m, h, DROCE_EXT_DETH, DROCE_DETH_LEN) + \
	PART(m, h, DROCE_EXT_FETH, DROCE_FETH_LEN) + \
	PART(m, h, DROCE_EXT_RETH, DROCE_RETH_LEN) + \
	PART(m, h, DROCE_EXT_ATMETH, DROCE_ATMETH_LEN) + \
	PART(m, h, DROCE_EXT_AETH, DROCE_AETH_LEN) + \
	PART(m, h, DROCE_EXT_ATMACK, DROCE_ATMACK_LEN) + \
	PART(m, h, DROCE_EXT_IMMDT, DROCE_IMMDT_LEN) + \
	PART(m, h, DROCE_EXT_IETH, DROCE_IETH_LEN) + \
	PART(m, h, DROCE_EXT_CNP_RSVD, DROCE_CNP_RSVD_LEN))
#define OFF(m, h)	(HAS(m, h) ? DROCE_BTH_LEN + BEFORE(m, h) : 0)

#define ROW(op, tr, m, fl, fixed) [DROCE_OP_##op] = { \
	.name = #op, \
	.flags = (fl), \
	.ext_mask = (m), \
	.transport = DROCE_TRANSPORT_##tr, \
	.hdr_len = DROCE_BTH_LEN + BEFORE(m, DROCE_EXT_COUNT), \
	.payload_fixed = (fixed), \
	.ext_off = { \
		[DROCE_EXT_DETH] = OFF(m, DROCE_EXT_DETH), \
		[DROCE_EXT_FETH] = OFF(m, DROCE_EXT_FETH), \
		[DROCE_EXT_RETH] = OFF(m, DROCE_EXT_RETH), \
		[DROCE_EXT_ATMETH] = OFF(m, DROCE_EXT_ATMETH), \
		[DROCE_EXT_AETH] = OFF(m, DROCE_EXT_AETH), \
		[DROCE_EXT_ATMACK] = OFF(m, DROCE_EXT_ATMACK), \
		[DROCE_EXT_IMMDT] = OFF(m, DROCE_EXT_IMMDT), \
		[DROCE_EXT_IETH] = OFF(m, DROCE_EXT_IETH), \
		[DROCE_EXT_CNP_RSVD] = OFF(m, DROCE_EXT_CNP_RSVD), \
	}, \
}

#define REQ	DROCE_OPF_REQUEST
#define RESP	DROCE_OPF_RESPONSE
#define FIRST	DROCE_OPF_FIRST
#define MIDDLE	DROCE_OPF_MIDDLE
#define LAST	DROCE_OPF_LAST
#define ONLY	DROCE_OPF_ONLY
#define PAY	DROCE_OPF_PAYLOAD
#define SEND	(DROCE_OPF_SEND | DROCE_OPF_RWQE | REQ | PAY)
#define WRITE	(DROCE_OPF_WRITE | REQ | PAY)
#define IMM	DROCE_OPF_IMM
#define RWQE	DROCE_OPF_RWQE
#define RRESP	(DROCE_OPF_READ_RESP | RESP | PAY)

/* Rows for the SEND and RDMA WRITE families, which RC and UC share (table 38). */
#define SEND_WRITE_ROWS(tr) \
	ROW(tr##_SEND_FIRST, tr, 0, SEND | FIRST, 0), \
	ROW(tr##_SEND_MIDDLE, tr, 0, SEND | MIDDLE, 0), \
	ROW(tr##_SEND_LAST, tr, 0, SEND | LAST, 0), \
	ROW(tr##_SEND_LAST_WITH_IMMEDIATE, tr, H(IMMDT), SEND | LAST | IMM, 0), \
	ROW(tr##_SEND_ONLY, tr, 0, SEND | ONLY, 0), \
	ROW(tr##_SEND_ONLY_WITH_IMMEDIATE, tr, H(IMMDT), SEND | ONLY | IMM, 0), \
	ROW(tr##_RDMA_WRITE_FIRST, tr, H(RETH), WRITE | FIRST, 0), \
	ROW(tr##_RDMA_WRITE_MIDDLE, tr, 0, WRITE | MIDDLE, 0), \
	ROW(tr##_RDMA_WRITE_LAST, tr, 0, WRITE | LAST, 0), \
	ROW(tr##_RDMA_WRITE_LAST_WITH_IMMEDIATE, tr, H(IMMDT), WRITE | LAST | IMM | RWQE, 0), \
	ROW(tr##_RDMA_WRITE_ONLY, tr, H(RETH), WRITE | ONLY, 0), \
	ROW(tr##_RDMA_WRITE_ONLY_WITH_IMMEDIATE, tr, H(RETH) | H(IMMDT), \
	    WRITE | ONLY | IMM | RWQE, 0)

const struct droce_opcode_info droce_opcode_table[256] = {
	SEND_WRITE_ROWS(RC),
	ROW(RC_RDMA_READ_REQUEST, RC, H(RETH), DROCE_OPF_READ | REQ | ONLY, 0),
	ROW(RC_RDMA_READ_RESPONSE_FIRST, RC, H(AETH), RRESP | FIRST, 0),
	ROW(RC_RDMA_READ_RESPONSE_MIDDLE, RC, 0, RRESP | MIDDLE, 0),
	ROW(RC_RDMA_READ_RESPONSE_LAST, RC, H(AETH), RRESP | LAST, 0),
	ROW(RC_RDMA_READ_RESPONSE_ONLY, RC, H(AETH), RRESP | ONLY, 0),
	ROW(RC_ACKNOWLEDGE, RC, H(AETH), DROCE_OPF_ACK | RESP | ONLY, 0),
	ROW(RC_ATOMIC_ACKNOWLEDGE, RC, H(AETH) | H(ATMACK), DROCE_OPF_ATOMIC_ACK | RESP | ONLY, 0),
	ROW(RC_COMPARE_SWAP, RC, H(ATMETH), DROCE_OPF_ATOMIC | REQ | ONLY, 0),
	ROW(RC_FETCH_ADD, RC, H(ATMETH), DROCE_OPF_ATOMIC | REQ | ONLY, 0),
	ROW(RC_SEND_LAST_WITH_INVALIDATE, RC, H(IETH), SEND | LAST | DROCE_OPF_INV, 0),
	ROW(RC_SEND_ONLY_WITH_INVALIDATE, RC, H(IETH), SEND | ONLY | DROCE_OPF_INV, 0),
	ROW(RC_FLUSH, RC, H(FETH) | H(RETH), DROCE_OPF_FLUSH | REQ | ONLY, 0),
	/* IBA 1.5 9.4.6: an ATOMIC WRITE carries exactly 8 bytes. */
	ROW(RC_ATOMIC_WRITE, RC, H(RETH), DROCE_OPF_ATOMIC_WRITE | REQ | ONLY | PAY, 8),
	SEND_WRITE_ROWS(UC),
	ROW(UD_SEND_ONLY, UD, H(DETH), SEND | ONLY, 0),
	ROW(UD_SEND_ONLY_WITH_IMMEDIATE, UD, H(DETH) | H(IMMDT), SEND | ONLY | IMM, 0),
	/* A17.9.3: BTH (dest QP = the flow's sender, BECN set) and 16 reserved bytes. */
	ROW(CNP, CNP, H(CNP_RSVD), DROCE_OPF_CNP, 0),
};

int
droce_opcode_find(uint8_t transport, uint32_t flags)
{
	const uint32_t derived = DROCE_OPF_REQUEST | DROCE_OPF_RESPONSE | DROCE_OPF_PAYLOAD |
				 DROCE_OPF_RWQE;
	unsigned int op;

	if (transport & ~DROCE_TRANSPORT_MASK)
		return -1;
	flags &= ~derived;
	/* A transport's opcodes are the 32 with its top three bits (9.2.1, table 38). */
	for (op = transport; op < transport + 32u; op++) {
		const struct droce_opcode_info *oi = &droce_opcode_table[op];

		if (oi->name != NULL && (oi->flags & ~derived) == flags)
			return (int)op;
	}
	return -1;
}
