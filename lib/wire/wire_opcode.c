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
	[DROCE_EXT_XRCETH] = DROCE_XRCETH_LEN,
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
	[DROCE_EXT_XRCETH] = "XRCETH",
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
	PART(m, h, DROCE_EXT_XRCETH, DROCE_XRCETH_LEN) + \
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
		[DROCE_EXT_XRCETH] = OFF(m, DROCE_EXT_XRCETH), \
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

/*
 * Rows for the SEND and RDMA WRITE families, which RC, UC and XRC share (table 38); x is
 * the header every request of the transport carries first (XRC: the XRCETH, 9.3.7).
 */
#define SEND_WRITE_ROWS_X(tr, x) \
	ROW(tr##_SEND_FIRST, tr, x, SEND | FIRST, 0), \
	ROW(tr##_SEND_MIDDLE, tr, x, SEND | MIDDLE, 0), \
	ROW(tr##_SEND_LAST, tr, x, SEND | LAST, 0), \
	ROW(tr##_SEND_LAST_WITH_IMMEDIATE, tr, (x) | H(IMMDT), SEND | LAST | IMM, 0), \
	ROW(tr##_SEND_ONLY, tr, x, SEND | ONLY, 0), \
	ROW(tr##_SEND_ONLY_WITH_IMMEDIATE, tr, (x) | H(IMMDT), SEND | ONLY | IMM, 0), \
	ROW(tr##_RDMA_WRITE_FIRST, tr, (x) | H(RETH), WRITE | FIRST, 0), \
	ROW(tr##_RDMA_WRITE_MIDDLE, tr, x, WRITE | MIDDLE, 0), \
	ROW(tr##_RDMA_WRITE_LAST, tr, x, WRITE | LAST, 0), \
	ROW(tr##_RDMA_WRITE_LAST_WITH_IMMEDIATE, tr, (x) | H(IMMDT), \
	    WRITE | LAST | IMM | RWQE, 0), \
	ROW(tr##_RDMA_WRITE_ONLY, tr, (x) | H(RETH), WRITE | ONLY, 0), \
	ROW(tr##_RDMA_WRITE_ONLY_WITH_IMMEDIATE, tr, (x) | H(RETH) | H(IMMDT), \
	    WRITE | ONLY | IMM | RWQE, 0)
#define SEND_WRITE_ROWS(tr)	SEND_WRITE_ROWS_X(tr, 0)

/* RC's READ, atomic and invalidate rows, which XRC has too (its requests with x first). */
#define RC_XRC_ROWS(tr, x) \
	ROW(tr##_RDMA_READ_REQUEST, tr, (x) | H(RETH), DROCE_OPF_READ | REQ | ONLY, 0), \
	ROW(tr##_RDMA_READ_RESPONSE_FIRST, tr, H(AETH), RRESP | FIRST, 0), \
	ROW(tr##_RDMA_READ_RESPONSE_MIDDLE, tr, 0, RRESP | MIDDLE, 0), \
	ROW(tr##_RDMA_READ_RESPONSE_LAST, tr, H(AETH), RRESP | LAST, 0), \
	ROW(tr##_RDMA_READ_RESPONSE_ONLY, tr, H(AETH), RRESP | ONLY, 0), \
	ROW(tr##_ACKNOWLEDGE, tr, H(AETH), DROCE_OPF_ACK | RESP | ONLY, 0), \
	ROW(tr##_ATOMIC_ACKNOWLEDGE, tr, H(AETH) | H(ATMACK), \
	    DROCE_OPF_ATOMIC_ACK | RESP | ONLY, 0), \
	ROW(tr##_COMPARE_SWAP, tr, (x) | H(ATMETH), DROCE_OPF_ATOMIC | REQ | ONLY, 0), \
	ROW(tr##_FETCH_ADD, tr, (x) | H(ATMETH), DROCE_OPF_ATOMIC | REQ | ONLY, 0), \
	ROW(tr##_SEND_LAST_WITH_INVALIDATE, tr, (x) | H(IETH), SEND | LAST | DROCE_OPF_INV, 0), \
	ROW(tr##_SEND_ONLY_WITH_INVALIDATE, tr, (x) | H(IETH), SEND | ONLY | DROCE_OPF_INV, 0)

const struct droce_opcode_info droce_opcode_table[256] = {
	SEND_WRITE_ROWS(RC),
	RC_XRC_ROWS(RC, 0),
	ROW(RC_FLUSH, RC, H(FETH) | H(RETH), DROCE_OPF_FLUSH | REQ | ONLY, 0),
	/* IBA 1.5 9.4.6: an ATOMIC WRITE carries exactly 8 bytes. */
	ROW(RC_ATOMIC_WRITE, RC, H(RETH), DROCE_OPF_ATOMIC_WRITE | REQ | ONLY | PAY, 8),
	SEND_WRITE_ROWS(UC),
	ROW(UD_SEND_ONLY, UD, H(DETH), SEND | ONLY, 0),
	ROW(UD_SEND_ONLY_WITH_IMMEDIATE, UD, H(DETH) | H(IMMDT), SEND | ONLY | IMM, 0),
	/* XRC: RC's operations, each request naming its XRC SRQ in an XRCETH (9.3.7). */
	SEND_WRITE_ROWS_X(XRC, H(XRCETH)),
	RC_XRC_ROWS(XRC, H(XRCETH)),
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
