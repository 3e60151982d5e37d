/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Every row of droce_opcode_table against an expectation table written here from the
 * IB spec (Vol 1 table 38 and 9.2-9.3, RC, UC, UD and XRC; IBA 1.5 for FLUSH and ATOMIC
 * WRITE; Annex A17.9.3 for the CNP). Offsets, lengths, flags and names are recomputed
 * independently.
 */

#include <stdio.h>
#include <string.h>

#include "droce_test.h"
#include "droce_wire.h"

/* What an opcode does, from which the spec's rules derive its flags. */
enum kind {
	K_SEND, K_WRITE, K_READ, K_READ_RESP, K_ACK, K_ATOMIC_ACK, K_ATOMIC, K_FLUSH,
	K_ATOMIC_WRITE, K_CNP,
};

/* Where in a message the packet sits. ACKs and single-packet requests are ONLY. */
enum pos { P_NONE, P_FIRST, P_MIDDLE, P_LAST, P_ONLY };

#define X(h) DROCE_EXT_BIT(DROCE_EXT_##h)

struct expect {
	uint8_t op;		/* operation: the low five bits (CNP: the whole opcode) */
	const char *op_name;	/* the spec's name for it */
	enum kind kind;
	enum pos pos;
	uint16_t hdrs;		/* extension headers after the BTH */
	uint8_t payload_fixed;
};

/* Table 38, operations RC and UC share: the SEND and RDMA WRITE families. */
static const struct expect send_write_ops[] = {
	{ 0x00, "SEND_FIRST", K_SEND, P_FIRST, 0, 0 },
	{ 0x01, "SEND_MIDDLE", K_SEND, P_MIDDLE, 0, 0 },
	{ 0x02, "SEND_LAST", K_SEND, P_LAST, 0, 0 },
	{ 0x03, "SEND_LAST_WITH_IMMEDIATE", K_SEND, P_LAST, X(IMMDT), 0 },
	{ 0x04, "SEND_ONLY", K_SEND, P_ONLY, 0, 0 },
	{ 0x05, "SEND_ONLY_WITH_IMMEDIATE", K_SEND, P_ONLY, X(IMMDT), 0 },
	{ 0x06, "RDMA_WRITE_FIRST", K_WRITE, P_FIRST, X(RETH), 0 },
	{ 0x07, "RDMA_WRITE_MIDDLE", K_WRITE, P_MIDDLE, 0, 0 },
	{ 0x08, "RDMA_WRITE_LAST", K_WRITE, P_LAST, 0, 0 },
	{ 0x09, "RDMA_WRITE_LAST_WITH_IMMEDIATE", K_WRITE, P_LAST, X(IMMDT), 0 },
	{ 0x0A, "RDMA_WRITE_ONLY", K_WRITE, P_ONLY, X(RETH), 0 },
	{ 0x0B, "RDMA_WRITE_ONLY_WITH_IMMEDIATE", K_WRITE, P_ONLY, X(RETH) | X(IMMDT), 0 },
};

/* Table 38, RC only, plus IBA 1.5's FLUSH (FETH then RETH) and ATOMIC WRITE (8 bytes). */
static const struct expect rc_only_ops[] = {
	{ 0x0C, "RDMA_READ_REQUEST", K_READ, P_ONLY, X(RETH), 0 },
	{ 0x0D, "RDMA_READ_RESPONSE_FIRST", K_READ_RESP, P_FIRST, X(AETH), 0 },
	{ 0x0E, "RDMA_READ_RESPONSE_MIDDLE", K_READ_RESP, P_MIDDLE, 0, 0 },
	{ 0x0F, "RDMA_READ_RESPONSE_LAST", K_READ_RESP, P_LAST, X(AETH), 0 },
	{ 0x10, "RDMA_READ_RESPONSE_ONLY", K_READ_RESP, P_ONLY, X(AETH), 0 },
	{ 0x11, "ACKNOWLEDGE", K_ACK, P_ONLY, X(AETH), 0 },
	{ 0x12, "ATOMIC_ACKNOWLEDGE", K_ATOMIC_ACK, P_ONLY, X(AETH) | X(ATMACK), 0 },
	{ 0x13, "COMPARE_SWAP", K_ATOMIC, P_ONLY, X(ATMETH), 0 },
	{ 0x14, "FETCH_ADD", K_ATOMIC, P_ONLY, X(ATMETH), 0 },
	{ 0x16, "SEND_LAST_WITH_INVALIDATE", K_SEND, P_LAST, X(IETH), 0 },
	{ 0x17, "SEND_ONLY_WITH_INVALIDATE", K_SEND, P_ONLY, X(IETH), 0 },
	{ 0x1C, "FLUSH", K_FLUSH, P_ONLY, X(FETH) | X(RETH), 0 },
	{ 0x1D, "ATOMIC_WRITE", K_ATOMIC_WRITE, P_ONLY, X(RETH), 8 },
};

/* Table 38, UD: sends only, each with a DETH. */
static const struct expect ud_ops[] = {
	{ 0x04, "SEND_ONLY", K_SEND, P_ONLY, X(DETH), 0 },
	{ 0x05, "SEND_ONLY_WITH_IMMEDIATE", K_SEND, P_ONLY, X(DETH) | X(IMMDT), 0 },
};

/*
 * Table 38, XRC (opcodes 101xxxxx): RC's operations less IBA 1.5's FLUSH and ATOMIC
 * WRITE. Every request carries an XRCETH (the XRC SRQ it is for) right after the BTH,
 * before any other extension header; responses (READ responses, ACKs) carry none. 0x15
 * is reserved, as for RC.
 */
static const struct expect xrc_ops[] = {
	{ 0x00, "SEND_FIRST", K_SEND, P_FIRST, X(XRCETH), 0 },
	{ 0x01, "SEND_MIDDLE", K_SEND, P_MIDDLE, X(XRCETH), 0 },
	{ 0x02, "SEND_LAST", K_SEND, P_LAST, X(XRCETH), 0 },
	{ 0x03, "SEND_LAST_WITH_IMMEDIATE", K_SEND, P_LAST, X(XRCETH) | X(IMMDT), 0 },
	{ 0x04, "SEND_ONLY", K_SEND, P_ONLY, X(XRCETH), 0 },
	{ 0x05, "SEND_ONLY_WITH_IMMEDIATE", K_SEND, P_ONLY, X(XRCETH) | X(IMMDT), 0 },
	{ 0x06, "RDMA_WRITE_FIRST", K_WRITE, P_FIRST, X(XRCETH) | X(RETH), 0 },
	{ 0x07, "RDMA_WRITE_MIDDLE", K_WRITE, P_MIDDLE, X(XRCETH), 0 },
	{ 0x08, "RDMA_WRITE_LAST", K_WRITE, P_LAST, X(XRCETH), 0 },
	{ 0x09, "RDMA_WRITE_LAST_WITH_IMMEDIATE", K_WRITE, P_LAST, X(XRCETH) | X(IMMDT), 0 },
	{ 0x0A, "RDMA_WRITE_ONLY", K_WRITE, P_ONLY, X(XRCETH) | X(RETH), 0 },
	{ 0x0B, "RDMA_WRITE_ONLY_WITH_IMMEDIATE", K_WRITE, P_ONLY,
	  X(XRCETH) | X(RETH) | X(IMMDT), 0 },
	{ 0x0C, "RDMA_READ_REQUEST", K_READ, P_ONLY, X(XRCETH) | X(RETH), 0 },
	{ 0x0D, "RDMA_READ_RESPONSE_FIRST", K_READ_RESP, P_FIRST, X(AETH), 0 },
	{ 0x0E, "RDMA_READ_RESPONSE_MIDDLE", K_READ_RESP, P_MIDDLE, 0, 0 },
	{ 0x0F, "RDMA_READ_RESPONSE_LAST", K_READ_RESP, P_LAST, X(AETH), 0 },
	{ 0x10, "RDMA_READ_RESPONSE_ONLY", K_READ_RESP, P_ONLY, X(AETH), 0 },
	{ 0x11, "ACKNOWLEDGE", K_ACK, P_ONLY, X(AETH), 0 },
	{ 0x12, "ATOMIC_ACKNOWLEDGE", K_ATOMIC_ACK, P_ONLY, X(AETH) | X(ATMACK), 0 },
	{ 0x13, "COMPARE_SWAP", K_ATOMIC, P_ONLY, X(XRCETH) | X(ATMETH), 0 },
	{ 0x14, "FETCH_ADD", K_ATOMIC, P_ONLY, X(XRCETH) | X(ATMETH), 0 },
	{ 0x16, "SEND_LAST_WITH_INVALIDATE", K_SEND, P_LAST, X(XRCETH) | X(IETH), 0 },
	{ 0x17, "SEND_ONLY_WITH_INVALIDATE", K_SEND, P_ONLY, X(XRCETH) | X(IETH), 0 },
};

/* Annex A17.9.3: the RoCEv2 CNP, 0x81, 16 reserved bytes after the BTH. */
static const struct expect cnp_op = { 0x81, "CNP", K_CNP, P_NONE, X(CNP_RSVD), 0 };

#define SPEC_TRANSPORT_RC	0x00	/* table 38: opcode bits 7..5 */
#define SPEC_TRANSPORT_UC	0x20
#define SPEC_TRANSPORT_UD	0x60
#define SPEC_TRANSPORT_XRC	0xA0
#define SPEC_TRANSPORT_CNP	0x80	/* CNP 0x81 sits in the 100xxxxx block */
#define SPEC_KNOWN_OPCODES	63	/* RC 25, UC 12, UD 2, XRC 23, CNP */
#define SPEC_BTH_LEN		12

/*
 * Header sizes in bytes from 9.3 (and IBA 1.5, A17.9.3), in wire order after the BTH.
 * The XRCETH (reserved(8), XRC SRQ number(24)) comes first after the BTH in every XRC
 * request; no opcode carries both it and a DETH or a FETH, so its place among those two
 * is a convention, but it must precede the RETH, AtomicETH, ImmDt and IETH.
 */
static const struct {
	enum droce_ext_hdr h;
	uint8_t len;
	const char *name;
} spec_wire_order[] = {
	{ DROCE_EXT_DETH, 8, "DETH" },
	{ DROCE_EXT_XRCETH, 4, "XRCETH" },
	{ DROCE_EXT_FETH, 4, "FETH" },
	{ DROCE_EXT_RETH, 16, "RETH" },
	{ DROCE_EXT_ATMETH, 28, "AtomicETH" },
	{ DROCE_EXT_AETH, 4, "AETH" },
	{ DROCE_EXT_ATMACK, 8, "AtomicAckETH" },
	{ DROCE_EXT_IMMDT, 4, "ImmDt" },
	{ DROCE_EXT_IETH, 4, "IETH" },
	{ DROCE_EXT_CNP_RSVD, 16, "CNP reserved" },
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* The full expectation for opcode value op, or false when droce must not know it. */
static bool
expected(uint8_t op, struct expect *e, char *name, size_t name_cap)
{
	const struct expect *rows = NULL;
	const char *prefix = NULL;
	size_t i, n = 0;
	uint8_t transport = op & 0xE0;

	if (op == cnp_op.op) {
		*e = cnp_op;
		snprintf(name, name_cap, "%s", cnp_op.op_name);
		return true;
	}
	for (int pass = 0; pass < 2; pass++) {
		if (transport == SPEC_TRANSPORT_RC) {
			prefix = "RC";
			rows = pass == 0 ? send_write_ops : rc_only_ops;
			n = pass == 0 ? NELEM(send_write_ops) : NELEM(rc_only_ops);
		} else if (transport == SPEC_TRANSPORT_UC && pass == 0) {
			prefix = "UC";
			rows = send_write_ops;
			n = NELEM(send_write_ops);
		} else if (transport == SPEC_TRANSPORT_UD && pass == 0) {
			prefix = "UD";
			rows = ud_ops;
			n = NELEM(ud_ops);
		} else if (transport == SPEC_TRANSPORT_XRC && pass == 0) {
			prefix = "XRC";
			rows = xrc_ops;
			n = NELEM(xrc_ops);
		} else {
			continue;
		}
		for (i = 0; i < n; i++) {
			if (rows[i].op != (op & 0x1F))
				continue;
			*e = rows[i];
			snprintf(name, name_cap, "%s_%s", prefix, rows[i].op_name);
			return true;
		}
	}
	return false;
}

/* Flags the spec's rules give an expectation row. */
static uint32_t
expected_flags(const struct expect *e)
{
	static const uint32_t pos_flags[] = {
		[P_NONE] = 0,
		[P_FIRST] = DROCE_OPF_FIRST,
		[P_MIDDLE] = DROCE_OPF_MIDDLE,
		[P_LAST] = DROCE_OPF_LAST,
		[P_ONLY] = DROCE_OPF_FIRST | DROCE_OPF_LAST,
	};
	uint32_t f = pos_flags[e->pos];
	bool imm = e->hdrs & X(IMMDT);

	switch (e->kind) {
	case K_SEND:
		/* Every send consumes a receive WQE. */
		f |= DROCE_OPF_SEND | DROCE_OPF_REQUEST | DROCE_OPF_PAYLOAD | DROCE_OPF_RWQE;
		break;
	case K_WRITE:
		/* A write consumes a receive WQE only when it carries immediate data. */
		f |= DROCE_OPF_WRITE | DROCE_OPF_REQUEST | DROCE_OPF_PAYLOAD |
		     (imm ? DROCE_OPF_RWQE : 0);
		break;
	case K_READ:
		f |= DROCE_OPF_READ | DROCE_OPF_REQUEST;
		break;
	case K_READ_RESP:
		f |= DROCE_OPF_READ_RESP | DROCE_OPF_RESPONSE | DROCE_OPF_PAYLOAD;
		break;
	case K_ACK:
		f |= DROCE_OPF_ACK | DROCE_OPF_RESPONSE;
		break;
	case K_ATOMIC_ACK:
		f |= DROCE_OPF_ATOMIC_ACK | DROCE_OPF_RESPONSE;
		break;
	case K_ATOMIC:
		f |= DROCE_OPF_ATOMIC | DROCE_OPF_REQUEST;
		break;
	case K_FLUSH:
		f |= DROCE_OPF_FLUSH | DROCE_OPF_REQUEST;
		break;
	case K_ATOMIC_WRITE:
		f |= DROCE_OPF_ATOMIC_WRITE | DROCE_OPF_REQUEST | DROCE_OPF_PAYLOAD;
		break;
	case K_CNP:
		f |= DROCE_OPF_CNP;
		break;
	}
	if (imm)
		f |= DROCE_OPF_IMM;
	if (e->hdrs & X(IETH))
		f |= DROCE_OPF_INV;
	return f;
}

DROCE_TEST(opcode_rows_match_spec)
{
	unsigned int op, known = 0;

	for (op = 0; op < 256; op++) {
		const struct droce_opcode_info *oi = droce_opcode_info((uint8_t)op);
		struct expect e;
		char name[64];

		droce_test_ctx("opcode 0x%02x", op);
		if (!expected((uint8_t)op, &e, name, sizeof(name))) {
			CHECK(oi == NULL);
			CHECK(droce_opcode_name((uint8_t)op) == NULL);
			CHECK(droce_opcode_table[op].name == NULL);
			continue;
		}
		known++;
		CHECK(oi != NULL);
		CHECK(oi == &droce_opcode_table[op]);
		droce_test_ctx("opcode 0x%02x %s", op, name);
		CHECK_EQ_STR(oi->name, name);
		CHECK_EQ_STR(droce_opcode_name((uint8_t)op), name);
		CHECK_EQ_U64(oi->ext_mask, e.hdrs);
		CHECK_EQ_U64(oi->flags, expected_flags(&e));
		CHECK_EQ_U64(oi->payload_fixed, e.payload_fixed);
		CHECK_EQ_U64(oi->transport, op == cnp_op.op ? SPEC_TRANSPORT_CNP : (op & 0xE0));
	}
	droce_test_ctx("count");
	CHECK_EQ_U64(known, SPEC_KNOWN_OPCODES);
}

DROCE_TEST(opcode_enum_values)
{
	/* The enum names the same values the table is indexed by. */
#define CHECK_ENUM(name, value) \
	CHECK_EQ_STR(droce_opcode_name(DROCE_OP_##name), #name); \
	CHECK_EQ_U64(DROCE_OP_##name, value);
	DROCE_OPCODE_LIST(CHECK_ENUM)
#undef CHECK_ENUM
}

DROCE_TEST(opcode_offsets_recomputed)
{
	unsigned int op, i, max_ext = 0;

	for (op = 0; op < 256; op++) {
		const struct droce_opcode_info *oi = droce_opcode_info((uint8_t)op);
		unsigned int off = SPEC_BTH_LEN;

		if (oi == NULL)
			continue;
		droce_test_ctx("opcode 0x%02x %s", op, oi->name);
		for (i = 0; i < NELEM(spec_wire_order); i++) {
			enum droce_ext_hdr h = spec_wire_order[i].h;

			if (oi->ext_mask & DROCE_EXT_BIT(h)) {
				CHECK_EQ_U64(oi->ext_off[h], off);
				off += spec_wire_order[i].len;
			} else {
				CHECK_EQ_U64(oi->ext_off[h], 0);
			}
		}
		CHECK_EQ_U64(oi->hdr_len, off);
		/* No bit outside the known headers. */
		CHECK_EQ_U64(oi->ext_mask & ~((1u << DROCE_EXT_COUNT) - 1), 0);
		if (off - SPEC_BTH_LEN > max_ext)
			max_ext = off - SPEC_BTH_LEN;
	}
	droce_test_ctx("max");
	CHECK(max_ext <= DROCE_WIRE_EXT_MAX);
	/* The header calls it the longest set of any opcode: it must be tight too. */
	CHECK_EQ_U64(max_ext, DROCE_WIRE_EXT_MAX);
	CHECK_EQ_U64(DROCE_WIRE_HDR_MAX, DROCE_WIRE_TMPL_MAX + SPEC_BTH_LEN + max_ext);
}

DROCE_TEST(opcode_flags_consistent)
{
	const uint32_t kinds = DROCE_OPF_SEND | DROCE_OPF_WRITE | DROCE_OPF_READ |
			       DROCE_OPF_READ_RESP | DROCE_OPF_ACK | DROCE_OPF_ATOMIC |
			       DROCE_OPF_ATOMIC_ACK | DROCE_OPF_FLUSH | DROCE_OPF_ATOMIC_WRITE |
			       DROCE_OPF_CNP;
	const uint32_t pos = DROCE_OPF_FIRST | DROCE_OPF_MIDDLE | DROCE_OPF_LAST;
	unsigned int op;

	for (op = 0; op < 256; op++) {
		const struct droce_opcode_info *oi = droce_opcode_info((uint8_t)op);
		uint32_t f, k, p;

		if (oi == NULL)
			continue;
		droce_test_ctx("opcode 0x%02x %s", op, oi->name);
		f = oi->flags;
		k = f & kinds;
		p = f & pos;

		/* Exactly one operation kind. */
		CHECK(k != 0 && (k & (k - 1)) == 0);
		if (f & DROCE_OPF_CNP) {
			CHECK_EQ_U64(f & (DROCE_OPF_REQUEST | DROCE_OPF_RESPONSE), 0);
			CHECK_EQ_U64(p, 0);
			CHECK_EQ_U64(oi->transport, SPEC_TRANSPORT_CNP);
		} else {
			CHECK(!(f & DROCE_OPF_REQUEST) != !(f & DROCE_OPF_RESPONSE));
			CHECK(p == DROCE_OPF_FIRST || p == DROCE_OPF_MIDDLE ||
			      p == DROCE_OPF_LAST || p == (DROCE_OPF_FIRST | DROCE_OPF_LAST));
			CHECK_EQ_U64(oi->transport, op & DROCE_TRANSPORT_MASK);
		}
		CHECK_EQ_U64(!!(f & DROCE_OPF_IMM),
			     !!(oi->ext_mask & DROCE_EXT_BIT(DROCE_EXT_IMMDT)));
		CHECK_EQ_U64(!!(f & DROCE_OPF_INV),
			     !!(oi->ext_mask & DROCE_EXT_BIT(DROCE_EXT_IETH)));
		CHECK_EQ_U64(!!(f & DROCE_OPF_PAYLOAD),
			     !!(f & (DROCE_OPF_SEND | DROCE_OPF_WRITE | DROCE_OPF_READ_RESP |
				     DROCE_OPF_ATOMIC_WRITE)));
		if (oi->payload_fixed != 0)
			CHECK(f & DROCE_OPF_PAYLOAD);
		CHECK_EQ_U64(!!(f & DROCE_OPF_RWQE),
			     !!((f & DROCE_OPF_SEND) ||
				((f & DROCE_OPF_WRITE) && (f & DROCE_OPF_IMM))));
		/* Requests come from requesters, responses from responders. */
		if (f & (DROCE_OPF_READ_RESP | DROCE_OPF_ACK | DROCE_OPF_ATOMIC_ACK))
			CHECK(f & DROCE_OPF_RESPONSE);
		/* Only UD carries a DETH, and every UD opcode does. */
		CHECK_EQ_U64(!!(oi->ext_mask & DROCE_EXT_BIT(DROCE_EXT_DETH)),
			     oi->transport == SPEC_TRANSPORT_UD);
		/* Only XRC requests carry an XRCETH, every one of them, right after the BTH. */
		CHECK_EQ_U64(!!(oi->ext_mask & DROCE_EXT_BIT(DROCE_EXT_XRCETH)),
			     oi->transport == SPEC_TRANSPORT_XRC && (f & DROCE_OPF_REQUEST));
		if (oi->ext_mask & DROCE_EXT_BIT(DROCE_EXT_XRCETH))
			CHECK_EQ_U64(oi->ext_off[DROCE_EXT_XRCETH], SPEC_BTH_LEN);
	}
}

DROCE_TEST(opcode_unknown_rows_empty)
{
	unsigned int op;

	for (op = 0; op < 256; op++) {
		const struct droce_opcode_info *oi = &droce_opcode_table[op];

		if (oi->name != NULL)
			continue;
		droce_test_ctx("opcode 0x%02x", op);
		CHECK_EQ_U64(oi->flags, 0);
		CHECK_EQ_U64(oi->ext_mask, 0);
		CHECK_EQ_U64(oi->hdr_len, 0);
	}
}

DROCE_TEST(opcode_ext_len_and_names)
{
	unsigned int i;

	CHECK_EQ_U64(NELEM(spec_wire_order), DROCE_EXT_COUNT);
	for (i = 0; i < NELEM(spec_wire_order); i++) {
		droce_test_ctx("%s", spec_wire_order[i].name);
		CHECK_EQ_U64(droce_ext_len[spec_wire_order[i].h], spec_wire_order[i].len);
		CHECK_EQ_STR(droce_ext_name[spec_wire_order[i].h], spec_wire_order[i].name);
	}
	droce_test_ctx("constants");
	CHECK_EQ_U64(droce_ext_len[DROCE_EXT_DETH], DROCE_DETH_LEN);
	CHECK_EQ_U64(droce_ext_len[DROCE_EXT_XRCETH], DROCE_XRCETH_LEN);
	CHECK_EQ_U64(droce_ext_len[DROCE_EXT_FETH], DROCE_FETH_LEN);
	CHECK_EQ_U64(droce_ext_len[DROCE_EXT_RETH], DROCE_RETH_LEN);
	CHECK_EQ_U64(droce_ext_len[DROCE_EXT_ATMETH], DROCE_ATMETH_LEN);
	CHECK_EQ_U64(droce_ext_len[DROCE_EXT_AETH], DROCE_AETH_LEN);
	CHECK_EQ_U64(droce_ext_len[DROCE_EXT_ATMACK], DROCE_ATMACK_LEN);
	CHECK_EQ_U64(droce_ext_len[DROCE_EXT_IMMDT], DROCE_IMMDT_LEN);
	CHECK_EQ_U64(droce_ext_len[DROCE_EXT_IETH], DROCE_IETH_LEN);
	CHECK_EQ_U64(droce_ext_len[DROCE_EXT_CNP_RSVD], DROCE_CNP_RSVD_LEN);
	CHECK_EQ_U64(DROCE_BTH_LEN, SPEC_BTH_LEN);
	CHECK_EQ_U64(DROCE_OPF_ONLY, DROCE_OPF_FIRST | DROCE_OPF_LAST);
}

/*
 * droce_opcode_find against table 38 as written above: every SEND and WRITE of RC, UC
 * and XRC at every place in a message, with and without immediate; READ, atomics and
 * invalidate on RC and XRC only; FLUSH and ATOMIC WRITE on RC only; UD SENDs ONLY; and
 * every known row found again from its own flags.
 */
DROCE_TEST(opcode_find)
{
	static const struct {
		uint8_t tr;
		uint32_t flags;
		int op;
	} cases[] = {
#define F(x) DROCE_OPF_##x
		{ SPEC_TRANSPORT_RC, F(SEND) | F(FIRST), 0x00 },
		{ SPEC_TRANSPORT_RC, F(SEND) | F(MIDDLE), 0x01 },
		{ SPEC_TRANSPORT_RC, F(SEND) | F(LAST), 0x02 },
		{ SPEC_TRANSPORT_RC, F(SEND) | F(LAST) | F(IMM), 0x03 },
		{ SPEC_TRANSPORT_RC, F(SEND) | F(ONLY), 0x04 },
		{ SPEC_TRANSPORT_RC, F(SEND) | F(ONLY) | F(IMM), 0x05 },
		{ SPEC_TRANSPORT_RC, F(WRITE) | F(FIRST), 0x06 },
		{ SPEC_TRANSPORT_RC, F(WRITE) | F(MIDDLE), 0x07 },
		{ SPEC_TRANSPORT_RC, F(WRITE) | F(LAST), 0x08 },
		{ SPEC_TRANSPORT_RC, F(WRITE) | F(LAST) | F(IMM), 0x09 },
		{ SPEC_TRANSPORT_RC, F(WRITE) | F(ONLY), 0x0A },
		{ SPEC_TRANSPORT_RC, F(WRITE) | F(ONLY) | F(IMM), 0x0B },
		{ SPEC_TRANSPORT_RC, F(READ) | F(ONLY), 0x0C },
		{ SPEC_TRANSPORT_RC, F(SEND) | F(LAST) | F(INV), 0x16 },
		{ SPEC_TRANSPORT_RC, F(SEND) | F(ONLY) | F(INV), 0x17 },
		{ SPEC_TRANSPORT_UC, F(SEND) | F(FIRST), 0x20 },
		{ SPEC_TRANSPORT_UC, F(SEND) | F(MIDDLE), 0x21 },
		{ SPEC_TRANSPORT_UC, F(SEND) | F(LAST), 0x22 },
		{ SPEC_TRANSPORT_UC, F(SEND) | F(LAST) | F(IMM), 0x23 },
		{ SPEC_TRANSPORT_UC, F(SEND) | F(ONLY), 0x24 },
		{ SPEC_TRANSPORT_UC, F(SEND) | F(ONLY) | F(IMM), 0x25 },
		{ SPEC_TRANSPORT_UC, F(WRITE) | F(FIRST), 0x26 },
		{ SPEC_TRANSPORT_UC, F(WRITE) | F(MIDDLE), 0x27 },
		{ SPEC_TRANSPORT_UC, F(WRITE) | F(LAST), 0x28 },
		{ SPEC_TRANSPORT_UC, F(WRITE) | F(LAST) | F(IMM), 0x29 },
		{ SPEC_TRANSPORT_UC, F(WRITE) | F(ONLY), 0x2A },
		{ SPEC_TRANSPORT_UC, F(WRITE) | F(ONLY) | F(IMM), 0x2B },
		{ SPEC_TRANSPORT_UD, F(SEND) | F(ONLY), 0x64 },
		{ SPEC_TRANSPORT_UD, F(SEND) | F(ONLY) | F(IMM), 0x65 },
		{ SPEC_TRANSPORT_XRC, F(SEND) | F(FIRST), 0xA0 },
		{ SPEC_TRANSPORT_XRC, F(SEND) | F(MIDDLE), 0xA1 },
		{ SPEC_TRANSPORT_XRC, F(SEND) | F(LAST), 0xA2 },
		{ SPEC_TRANSPORT_XRC, F(SEND) | F(LAST) | F(IMM), 0xA3 },
		{ SPEC_TRANSPORT_XRC, F(SEND) | F(ONLY), 0xA4 },
		{ SPEC_TRANSPORT_XRC, F(SEND) | F(ONLY) | F(IMM), 0xA5 },
		{ SPEC_TRANSPORT_XRC, F(WRITE) | F(FIRST), 0xA6 },
		{ SPEC_TRANSPORT_XRC, F(WRITE) | F(MIDDLE), 0xA7 },
		{ SPEC_TRANSPORT_XRC, F(WRITE) | F(LAST), 0xA8 },
		{ SPEC_TRANSPORT_XRC, F(WRITE) | F(LAST) | F(IMM), 0xA9 },
		{ SPEC_TRANSPORT_XRC, F(WRITE) | F(ONLY), 0xAA },
		{ SPEC_TRANSPORT_XRC, F(WRITE) | F(ONLY) | F(IMM), 0xAB },
		{ SPEC_TRANSPORT_XRC, F(READ) | F(ONLY), 0xAC },
		{ SPEC_TRANSPORT_XRC, F(READ_RESP) | F(FIRST), 0xAD },
		{ SPEC_TRANSPORT_XRC, F(READ_RESP) | F(MIDDLE), 0xAE },
		{ SPEC_TRANSPORT_XRC, F(READ_RESP) | F(LAST), 0xAF },
		{ SPEC_TRANSPORT_XRC, F(READ_RESP) | F(ONLY), 0xB0 },
		{ SPEC_TRANSPORT_XRC, F(ACK) | F(ONLY), 0xB1 },
		{ SPEC_TRANSPORT_XRC, F(ATOMIC_ACK) | F(ONLY), 0xB2 },
		{ SPEC_TRANSPORT_XRC, F(ATOMIC) | F(ONLY), 0xB3 },
		{ SPEC_TRANSPORT_XRC, F(SEND) | F(LAST) | F(INV), 0xB6 },
		{ SPEC_TRANSPORT_XRC, F(SEND) | F(ONLY) | F(INV), 0xB7 },
		/* The derived properties do not matter. */
		{ SPEC_TRANSPORT_RC, F(SEND) | F(FIRST) | F(REQUEST) | F(PAYLOAD) | F(RWQE), 0x00 },
		/* What table 38 does not have. */
		{ SPEC_TRANSPORT_RC, F(SEND) | F(MIDDLE) | F(IMM), -1 },
		{ SPEC_TRANSPORT_RC, F(SEND) | F(FIRST) | F(IMM), -1 },
		{ SPEC_TRANSPORT_RC, F(WRITE) | F(LAST) | F(INV), -1 },
		{ SPEC_TRANSPORT_UC, F(SEND) | F(ONLY) | F(INV), -1 },
		{ SPEC_TRANSPORT_UC, F(READ) | F(ONLY), -1 },
		{ SPEC_TRANSPORT_UD, F(SEND) | F(FIRST), -1 },
		{ SPEC_TRANSPORT_UD, F(WRITE) | F(ONLY), -1 },
		{ SPEC_TRANSPORT_XRC, F(FLUSH) | F(ONLY), -1 },
		{ SPEC_TRANSPORT_XRC, F(ATOMIC_WRITE) | F(ONLY), -1 },
		{ SPEC_TRANSPORT_XRC, F(SEND) | F(MIDDLE) | F(IMM), -1 },
		{ SPEC_TRANSPORT_XRC, F(WRITE) | F(LAST) | F(INV), -1 },
		{ SPEC_TRANSPORT_XRC, F(CNP), -1 },
		{ SPEC_TRANSPORT_RC, 0, -1 },
		{ 0x01, F(SEND) | F(ONLY), -1 },	/* not a transport */
#undef F
	};
	unsigned int i, op;

	for (i = 0; i < NELEM(cases); i++) {
		droce_test_ctx("case %u: transport 0x%02x flags 0x%x", i, cases[i].tr,
			       cases[i].flags);
		CHECK_EQ_U64((uint64_t)(int64_t)droce_opcode_find(cases[i].tr, cases[i].flags),
			     (uint64_t)(int64_t)cases[i].op);
	}
	for (op = 0; op < 256; op++) {
		const struct droce_opcode_info *oi = droce_opcode_info((uint8_t)op);
		int found;

		if (oi == NULL)
			continue;
		droce_test_ctx("%s", oi->name);
		found = droce_opcode_find(oi->transport, oi->flags);
		/* FETCH ADD's row reads as COMPARE SWAP's: both are ATOMIC | ONLY (RC, XRC). */
		CHECK_EQ_U64((uint64_t)found, op == 0x14 || op == 0xB4 ? op - 1 : op);
	}
}
