/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * lib/cm: every field of every CM message through build and parse at its extreme values,
 * the bytes of a few fields per message against offsets worked out by hand from IB spec
 * vol. 1 tables 106-120 (MAD offset = 24 + the table's byte offset; bit 0 is the most
 * significant), every rejection of the parser, the RDMA CM private-data header (Linux's
 * struct cma_hdr) and rdma_cm's service IDs.
 */

#include <errno.h>
#include <string.h>

#include "droce_cm.h"
#include "droce_test.h"

static const uint16_t all_attrs[] = {
	0x0010, 0x0011, 0x0012, 0x0013, 0x0014, 0x0015, 0x0016, 0x0017, 0x0018,
};
#define NATTRS (sizeof(all_attrs) / sizeof(all_attrs[0]))

static bool
is_mem(const struct droce_cm_field *f)
{
	return f->width > 64;
}

static uint64_t
max_of(const struct droce_cm_field *f)
{
	return f->width >= 64 ? UINT64_MAX : (UINT64_C(1) << f->width) - 1;
}

/*
 * The test's own access to a field's host member, apart from lib/cm's
 * droce_cm_field_get/set on purpose: a wrong member offset there must not hide here.
 */
static void
set_int(struct droce_cm_msg *m, const struct droce_cm_field *f, uint64_t v)
{
	uint8_t *p = (uint8_t *)&m->req + f->host_off;
	uint8_t v8 = (uint8_t)v;
	uint16_t v16 = (uint16_t)v;
	uint32_t v32 = (uint32_t)v;

	switch (f->host_size) {
	case 1: memcpy(p, &v8, 1); break;
	case 2: memcpy(p, &v16, 2); break;
	case 4: memcpy(p, &v32, 4); break;
	default: memcpy(p, &v, 8); break;
	}
}

static uint64_t
get_int(const struct droce_cm_msg *m, const struct droce_cm_field *f)
{
	const uint8_t *p = (const uint8_t *)&m->req + f->host_off;
	uint8_t v8;
	uint16_t v16;
	uint32_t v32;
	uint64_t v64;

	switch (f->host_size) {
	case 1: memcpy(&v8, p, 1); return v8;
	case 2: memcpy(&v16, p, 2); return v16;
	case 4: memcpy(&v32, p, 4); return v32;
	default: memcpy(&v64, p, 8); return v64;
	}
}

static unsigned int
popcount_mem(const uint8_t *p, size_t len)
{
	unsigned int n = 0;
	size_t i;

	for (i = 0; i < len; i++)
		n += (unsigned int)__builtin_popcount(p[i]);
	return n;
}

static void
new_msg(struct droce_cm_msg *m, uint16_t attr)
{
	memset(m, 0, sizeof(*m));
	m->attr_id = attr;
}

/* Builds m, checks the header, parses into an exact-size copy and returns the result. */
static void
round_trip(const struct droce_cm_msg *m, uint8_t *mad, struct droce_cm_msg *out)
{
	uint8_t *exact = droce_test_malloc(DROCE_CM_MAD_LEN);

	CHECK_EQ_I64(droce_cm_mad_build(m, mad), 0);
	memcpy(exact, mad, DROCE_CM_MAD_LEN);
	memset(out, 0xA5, sizeof(*out));
	CHECK_EQ_U64(droce_cm_mad_parse(exact, DROCE_CM_MAD_LEN, out), DROCE_CM_OK);
	droce_test_free(exact);
}

DROCE_TEST(cm_tables_cover_body)
{
	unsigned int a, i, n, b;

	CHECK_EQ_U64(DROCE_CM_MAD_BODY_LEN, 232);
	for (a = 0; a < NATTRS; a++) {
		const struct droce_cm_field *f = droce_cm_fields(all_attrs[a], &n);
		uint8_t used[232 * 8] = {0};
		unsigned int end = 0;

		CHECK(f != NULL && n > 0);
		for (i = 0; i < n; i++) {
			droce_test_ctx("attr 0x%04x field %s", all_attrs[a], f[i].name);
			CHECK(f[i].bit < 8);
			if (is_mem(&f[i])) {
				CHECK_EQ_U64(f[i].bit, 0);
				CHECK_EQ_U64(f[i].width, f[i].host_size * 8u);
			} else {
				CHECK(f[i].width <= f[i].host_size * 8u);
				CHECK(f[i].bit + f[i].width <= 64);
			}
			CHECK(f[i].byte * 8u + f[i].bit + f[i].width <= 232 * 8u);
			for (b = 0; b < f[i].width; b++) {
				CHECK(!used[f[i].byte * 8u + f[i].bit + b]);
				used[f[i].byte * 8u + f[i].bit + b] = 1;
			}
			if (f[i].byte * 8u + f[i].bit + f[i].width > end)
				end = f[i].byte * 8u + f[i].bit + f[i].width;
		}
		/* Private data runs to the end of the MAD in every message. */
		CHECK_EQ_U64(end, 232 * 8);
	}
	CHECK(droce_cm_fields(0x0019, &n) == NULL);
	CHECK_EQ_U64(n, 0);
}

DROCE_TEST(cm_every_field_round_trips)
{
	struct droce_cm_msg m, out;
	uint8_t mad[DROCE_CM_MAD_LEN];
	unsigned int a, i, n, b;

	for (a = 0; a < NATTRS; a++) {
		const struct droce_cm_field *f = droce_cm_fields(all_attrs[a], &n);

		for (i = 0; i < n; i++) {
			uint64_t vals[66];
			unsigned int nv = 0, v;

			droce_test_ctx("attr 0x%04x field %s", all_attrs[a], f[i].name);
			if (is_mem(&f[i])) {
				new_msg(&m, all_attrs[a]);
				memset((uint8_t *)&m.req + f[i].host_off, 0xFF, f[i].host_size);
				round_trip(&m, mad, &out);
				CHECK_MEM(&out, &m, sizeof(m));
				CHECK_EQ_U64(popcount_mem(mad + 24, 232), f[i].width);
				droce_test_rand_fill((uint8_t *)&m.req + f[i].host_off, f[i].host_size);
				round_trip(&m, mad, &out);
				CHECK_MEM(&out, &m, sizeof(m));
				CHECK_MEM(mad + 24 + f[i].byte, (uint8_t *)&m.req + f[i].host_off,
					  f[i].host_size);
				continue;
			}
			vals[nv++] = 0;
			vals[nv++] = max_of(&f[i]);
			for (b = 0; b < f[i].width; b++)
				vals[nv++] = UINT64_C(1) << b;
			for (v = 0; v < nv; v++) {
				droce_test_ctx("attr 0x%04x field %s value 0x%llx", all_attrs[a],
					       f[i].name, (unsigned long long)vals[v]);
				new_msg(&m, all_attrs[a]);
				set_int(&m, &f[i], vals[v]);
				round_trip(&m, mad, &out);
				CHECK_MEM(&out, &m, sizeof(m));
				/* The value's bits and no others reach the body. */
				CHECK_EQ_U64(popcount_mem(mad + 24, 232),
					     (unsigned int)__builtin_popcountll(vals[v]));
			}
			/* Host bits beyond the field's width stay off the wire. */
			new_msg(&m, all_attrs[a]);
			set_int(&m, &f[i], UINT64_MAX);
			round_trip(&m, mad, &out);
			CHECK_EQ_U64(get_int(&out, &f[i]), max_of(&f[i]));
			CHECK_EQ_U64(popcount_mem(mad + 24, 232), f[i].width);
		}
	}
}

DROCE_TEST(cm_all_ones_round_trip)
{
	struct droce_cm_msg m, out;
	uint8_t mad[DROCE_CM_MAD_LEN];
	unsigned int a, i, n, bits;

	for (a = 0; a < NATTRS; a++) {
		const struct droce_cm_field *f = droce_cm_fields(all_attrs[a], &n);

		droce_test_ctx("attr 0x%04x", all_attrs[a]);
		new_msg(&m, all_attrs[a]);
		m.status = 0xFFFF;
		m.class_specific = 0xFFFF;
		m.tid = UINT64_MAX;
		m.attr_mod = UINT32_MAX;
		bits = 0;
		for (i = 0; i < n; i++) {
			if (is_mem(&f[i]))
				memset((uint8_t *)&m.req + f[i].host_off, 0xFF, f[i].host_size);
			else
				set_int(&m, &f[i], max_of(&f[i]));
			bits += f[i].width;
		}
		round_trip(&m, mad, &out);
		CHECK_MEM(&out, &m, sizeof(m));
		/* Reserved bits stay zero: only the fields' bits are set. */
		CHECK_EQ_U64(popcount_mem(mad + 24, 232), bits);
		CHECK_EQ_U64(popcount_mem(mad + 4, 4), 32);	/* status, class specific */
		CHECK_EQ_U64(popcount_mem(mad + 18, 2), 0);	/* reserved */
	}
}

DROCE_TEST(cm_header_bytes)
{
	static const uint8_t want[24] = {
		0x01, 0x07, 0x02, 0x03, 0x12, 0x34, 0x56, 0x78,
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
		0x00, 0x14, 0x00, 0x00, 0xCA, 0xFE, 0xBA, 0xBE,
	};
	struct droce_cm_msg m;
	uint8_t mad[DROCE_CM_MAD_LEN];

	new_msg(&m, DROCE_CM_ATTR_RTU);
	m.status = 0x1234;
	m.class_specific = 0x5678;
	m.tid = 0x0102030405060708ull;
	m.attr_mod = 0xCAFEBABE;
	CHECK_EQ_I64(droce_cm_mad_build(&m, mad), 0);
	CHECK_MEM(mad, want, sizeof(want));
}

DROCE_TEST(cm_req_bytes)
{
	struct droce_cm_msg m;
	uint8_t mad[DROCE_CM_MAD_LEN];
	static const uint8_t sid[8] = { 0, 0, 0, 0, 0x01, 0x06, 0x12, 0xB7 };

	new_msg(&m, DROCE_CM_ATTR_REQ);
	m.req.local_comm_id = 0x11223344;
	m.req.service_id = 0x00000000010612B7ull;
	m.req.local_qpn = 0xABCDEF;
	m.req.responder_resources = 0x5A;
	m.req.remote_cm_response_timeout = 0x1F;
	m.req.path_mtu = 5;
	m.req.rnr_retry_count = 7;
	m.req.partition_key = 0xFFFF;
	m.req.primary.flow_label = 0xABCDE;
	m.req.primary.packet_rate = 0x3F;
	m.req.primary.sl = 0xF;
	m.req.primary.local_ack_timeout = 0x1F;
	m.req.private_data[0] = 0x77;
	m.req.private_data[91] = 0x88;
	CHECK_EQ_I64(droce_cm_mad_build(&m, mad), 0);
	CHECK_EQ_U64(mad[16], 0x00);
	CHECK_EQ_U64(mad[17], 0x10);
	CHECK_EQ_U64(mad[24], 0x11);
	CHECK_EQ_U64(mad[27], 0x44);
	CHECK_MEM(mad + 32, sid, 8);
	CHECK_EQ_U64(mad[56], 0xAB);
	CHECK_EQ_U64(mad[57], 0xCD);
	CHECK_EQ_U64(mad[58], 0xEF);
	CHECK_EQ_U64(mad[59], 0x5A);
	CHECK_EQ_U64(mad[67], 0xF8);
	CHECK_EQ_U64(mad[72], 0xFF);
	CHECK_EQ_U64(mad[73], 0xFF);
	CHECK_EQ_U64(mad[74], 0x57);
	CHECK_EQ_U64(mad[112], 0xAB);
	CHECK_EQ_U64(mad[113], 0xCD);
	CHECK_EQ_U64(mad[114], 0xE0);
	CHECK_EQ_U64(mad[115], 0x3F);
	CHECK_EQ_U64(mad[118], 0xF0);
	CHECK_EQ_U64(mad[119], 0xF8);
	CHECK_EQ_U64(mad[164], 0x77);
	CHECK_EQ_U64(mad[255], 0x88);

	/* The one-bit flags sharing bytes 67, 74, 75, 118 and 163 with wider fields. */
	new_msg(&m, DROCE_CM_ATTR_REQ);
	m.req.transport_service_type = 1;
	m.req.end_to_end_flow_control = 1;
	m.req.rdc_exists = 1;
	m.req.srq = 1;
	m.req.extended_transport_type = 1;
	m.req.max_cm_retries = 0xF;
	m.req.primary.subnet_local = 1;
	m.req.alternate.subnet_local = 1;
	m.req.sap_supported = 1;
	m.req.retry_count = 7;
	CHECK_EQ_I64(droce_cm_mad_build(&m, mad), 0);
	CHECK_EQ_U64(mad[67], 0x03);
	CHECK_EQ_U64(mad[71], 0x07);
	CHECK_EQ_U64(mad[74], 0x08);
	CHECK_EQ_U64(mad[75], 0xF9);
	CHECK_EQ_U64(mad[118], 0x08);
	CHECK_EQ_U64(mad[162], 0x08);
	CHECK_EQ_U64(mad[163], 0x04);
}

DROCE_TEST(cm_mra_rej_bytes)
{
	struct droce_cm_msg m;
	uint8_t mad[DROCE_CM_MAD_LEN];

	new_msg(&m, DROCE_CM_ATTR_MRA);
	m.mra.remote_comm_id = 0xDEADBEEF;
	m.mra.message_mraed = 2;
	m.mra.service_timeout = 0x1F;
	m.mra.private_data[0] = 0x42;
	CHECK_EQ_I64(droce_cm_mad_build(&m, mad), 0);
	CHECK_EQ_U64(mad[17], 0x11);
	CHECK_EQ_U64(mad[28], 0xDE);
	CHECK_EQ_U64(mad[31], 0xEF);
	CHECK_EQ_U64(mad[32], 0x80);
	CHECK_EQ_U64(mad[33], 0xF8);
	CHECK_EQ_U64(mad[34], 0x42);

	new_msg(&m, DROCE_CM_ATTR_REJ);
	m.rej.message_rejected = 1;
	m.rej.rejected_info_length = 0x7F;
	m.rej.reason = 28;	/* consumer reject */
	m.rej.ari[0] = 0x61;
	m.rej.private_data[0] = 0x62;
	m.rej.private_data[147] = 0x63;
	CHECK_EQ_I64(droce_cm_mad_build(&m, mad), 0);
	CHECK_EQ_U64(mad[17], 0x12);
	CHECK_EQ_U64(mad[32], 0x40);
	CHECK_EQ_U64(mad[33], 0xFE);
	CHECK_EQ_U64(mad[34], 0x00);
	CHECK_EQ_U64(mad[35], 0x1C);
	CHECK_EQ_U64(mad[36], 0x61);
	CHECK_EQ_U64(mad[108], 0x62);
	CHECK_EQ_U64(mad[255], 0x63);
}

DROCE_TEST(cm_rep_rtu_bytes)
{
	struct droce_cm_msg m;
	uint8_t mad[DROCE_CM_MAD_LEN];

	new_msg(&m, DROCE_CM_ATTR_REP);
	m.rep.local_qkey = 0x01020304;
	m.rep.local_qpn = 0x123456;
	m.rep.starting_psn = 0xFEDCBA;
	m.rep.target_ack_delay = 0x1F;
	m.rep.failover_accepted = 3;
	m.rep.rnr_retry_count = 7;
	m.rep.local_ca_guid = 0x1122334455667788ull;
	m.rep.private_data[0] = 0x99;
	CHECK_EQ_I64(droce_cm_mad_build(&m, mad), 0);
	CHECK_EQ_U64(mad[17], 0x13);
	CHECK_EQ_U64(mad[32], 0x01);
	CHECK_EQ_U64(mad[35], 0x04);
	CHECK_EQ_U64(mad[36], 0x12);
	CHECK_EQ_U64(mad[38], 0x56);
	CHECK_EQ_U64(mad[39], 0x00);
	CHECK_EQ_U64(mad[44], 0xFE);
	CHECK_EQ_U64(mad[46], 0xBA);
	CHECK_EQ_U64(mad[50], 0xFE);
	CHECK_EQ_U64(mad[51], 0xE0);
	CHECK_EQ_U64(mad[52], 0x11);
	CHECK_EQ_U64(mad[59], 0x88);
	CHECK_EQ_U64(mad[60], 0x99);

	new_msg(&m, DROCE_CM_ATTR_REP);
	m.rep.end_to_end_flow_control = 1;
	m.rep.srq = 1;
	CHECK_EQ_I64(droce_cm_mad_build(&m, mad), 0);
	CHECK_EQ_U64(mad[50], 0x01);
	CHECK_EQ_U64(mad[51], 0x10);

	new_msg(&m, DROCE_CM_ATTR_RTU);
	m.rtu.local_comm_id = 0xA1A2A3A4;
	m.rtu.private_data[0] = 0x5C;
	CHECK_EQ_I64(droce_cm_mad_build(&m, mad), 0);
	CHECK_EQ_U64(mad[17], 0x14);
	CHECK_EQ_U64(mad[24], 0xA1);
	CHECK_EQ_U64(mad[32], 0x5C);
}

DROCE_TEST(cm_dreq_drep_sidr_bytes)
{
	struct droce_cm_msg m;
	uint8_t mad[DROCE_CM_MAD_LEN];

	new_msg(&m, DROCE_CM_ATTR_DREQ);
	m.dreq.remote_qpn_eecn = 0xC0FFEE;
	m.dreq.private_data[0] = 0x3D;
	CHECK_EQ_I64(droce_cm_mad_build(&m, mad), 0);
	CHECK_EQ_U64(mad[17], 0x15);
	CHECK_EQ_U64(mad[32], 0xC0);
	CHECK_EQ_U64(mad[34], 0xEE);
	CHECK_EQ_U64(mad[35], 0x00);
	CHECK_EQ_U64(mad[36], 0x3D);

	new_msg(&m, DROCE_CM_ATTR_DREP);
	m.drep.remote_comm_id = 0x0A0B0C0D;
	m.drep.private_data[223] = 0x3E;
	CHECK_EQ_I64(droce_cm_mad_build(&m, mad), 0);
	CHECK_EQ_U64(mad[17], 0x16);
	CHECK_EQ_U64(mad[28], 0x0A);
	CHECK_EQ_U64(mad[255], 0x3E);

	new_msg(&m, DROCE_CM_ATTR_SIDR_REQ);
	m.sidr_req.partition_key = 0x8001;
	m.sidr_req.service_id = 0x0000000001110001ull;
	m.sidr_req.private_data[0] = 0x4F;
	CHECK_EQ_I64(droce_cm_mad_build(&m, mad), 0);
	CHECK_EQ_U64(mad[17], 0x17);
	CHECK_EQ_U64(mad[28], 0x80);
	CHECK_EQ_U64(mad[29], 0x01);
	CHECK_EQ_U64(mad[36], 0x01);
	CHECK_EQ_U64(mad[37], 0x11);
	CHECK_EQ_U64(mad[39], 0x01);
	CHECK_EQ_U64(mad[40], 0x4F);

	new_msg(&m, DROCE_CM_ATTR_SIDR_REP);
	m.sidr_rep.status = 2;
	m.sidr_rep.qpn = 0x000123;
	m.sidr_rep.service_id = 0xFF00000000000001ull;
	m.sidr_rep.qkey = 0x80010000;
	m.sidr_rep.additional_info[0] = 0x5A;
	m.sidr_rep.private_data[0] = 0x5B;
	CHECK_EQ_I64(droce_cm_mad_build(&m, mad), 0);
	CHECK_EQ_U64(mad[17], 0x18);
	CHECK_EQ_U64(mad[28], 0x02);
	CHECK_EQ_U64(mad[34], 0x23);
	CHECK_EQ_U64(mad[36], 0xFF);
	CHECK_EQ_U64(mad[43], 0x01);
	CHECK_EQ_U64(mad[44], 0x80);
	CHECK_EQ_U64(mad[45], 0x01);
	CHECK_EQ_U64(mad[48], 0x5A);
	CHECK_EQ_U64(mad[120], 0x5B);
}

static void
expect_reject(const uint8_t *good, unsigned int off, uint8_t val, enum droce_cm_result want)
{
	uint8_t *mad = droce_test_malloc(DROCE_CM_MAD_LEN);
	struct droce_cm_msg m;

	memcpy(mad, good, DROCE_CM_MAD_LEN);
	mad[off] = val;
	droce_test_ctx("byte %u = 0x%02x", off, val);
	CHECK_EQ_STR(droce_cm_result_name(droce_cm_mad_parse(mad, DROCE_CM_MAD_LEN, &m)),
		     droce_cm_result_name(want));
	droce_test_free(mad);
}

DROCE_TEST(cm_parse_rejects)
{
	struct droce_cm_msg m;
	uint8_t good[DROCE_CM_MAD_LEN], *buf;
	size_t len;

	new_msg(&m, DROCE_CM_ATTR_DREQ);
	CHECK_EQ_I64(droce_cm_mad_build(&m, good), 0);

	CHECK_EQ_U64(droce_cm_mad_parse(NULL, 0, &m), DROCE_CM_SHORT);
	for (len = 1; len < DROCE_CM_MAD_LEN; len++) {
		buf = droce_test_malloc(len);
		memcpy(buf, good, len);
		CHECK_EQ_U64(droce_cm_mad_parse(buf, len, &m), DROCE_CM_SHORT);
		droce_test_free(buf);
	}
	/* A longer buffer is a MAD and a tail. */
	buf = droce_test_malloc(DROCE_CM_MAD_LEN + 4);
	memcpy(buf, good, DROCE_CM_MAD_LEN);
	CHECK_EQ_U64(droce_cm_mad_parse(buf, DROCE_CM_MAD_LEN + 4, &m), DROCE_CM_OK);
	droce_test_free(buf);

	expect_reject(good, 0, 0x00, DROCE_CM_BAD_BASE_VERSION);
	expect_reject(good, 0, 0x02, DROCE_CM_BAD_BASE_VERSION);
	expect_reject(good, 1, 0x01, DROCE_CM_BAD_CLASS);	/* subnet management */
	expect_reject(good, 1, 0x03, DROCE_CM_BAD_CLASS);	/* subnet administration */
	expect_reject(good, 1, 0x87, DROCE_CM_BAD_CLASS);
	expect_reject(good, 2, 0x01, DROCE_CM_BAD_CLASS_VERSION);
	expect_reject(good, 2, 0x03, DROCE_CM_BAD_CLASS_VERSION);
	expect_reject(good, 3, 0x01, DROCE_CM_BAD_METHOD);	/* Get */
	expect_reject(good, 3, 0x81, DROCE_CM_BAD_METHOD);	/* GetResp */
	expect_reject(good, 3, 0x83, DROCE_CM_BAD_METHOD);	/* response bit */
	expect_reject(good, 16, 0x01, DROCE_CM_UNKNOWN_ATTR);	/* 0x0115 */
	expect_reject(good, 17, 0x00, DROCE_CM_UNKNOWN_ATTR);
	expect_reject(good, 17, 0x0F, DROCE_CM_UNKNOWN_ATTR);
	expect_reject(good, 17, 0x19, DROCE_CM_UNKNOWN_ATTR);	/* LAP */
	expect_reject(good, 17, 0x1A, DROCE_CM_UNKNOWN_ATTR);	/* APR */
	expect_reject(good, 17, 0x20, DROCE_CM_UNKNOWN_ATTR);	/* ClassPortInfo is 0x0001 */
	expect_reject(good, 17, 0x01, DROCE_CM_UNKNOWN_ATTR);
	/* Status, TID and reserved bytes are not the parser's business. */
	expect_reject(good, 4, 0xFF, DROCE_CM_OK);
	expect_reject(good, 18, 0xFF, DROCE_CM_OK);
	expect_reject(good, 255, 0xFF, DROCE_CM_OK);
}

DROCE_TEST(cm_build_rejects)
{
	struct droce_cm_msg m;
	uint8_t mad[DROCE_CM_MAD_LEN], before[DROCE_CM_MAD_LEN];

	memset(mad, 0xEE, sizeof(mad));
	memcpy(before, mad, sizeof(mad));
	new_msg(&m, 0x0019);
	CHECK_EQ_I64(droce_cm_mad_build(&m, mad), -EINVAL);
	new_msg(&m, 0);
	CHECK_EQ_I64(droce_cm_mad_build(&m, mad), -EINVAL);
	CHECK_MEM(mad, before, sizeof(mad));
}

DROCE_TEST(cm_names)
{
	unsigned int r, s;

	CHECK_EQ_STR(droce_cm_attr_name(0x0010), "REQ");
	CHECK_EQ_STR(droce_cm_attr_name(0x0016), "DREP");
	CHECK_EQ_STR(droce_cm_attr_name(0x0018), "SIDR_REP");
	CHECK(droce_cm_attr_name(0x0019) == NULL);
	CHECK_EQ_STR(droce_cm_result_name(DROCE_CM_OK), "OK");
	CHECK_EQ_STR(droce_cm_result_name(DROCE_CM_RESULT_COUNT), "UNKNOWN");
	CHECK_EQ_STR(droce_cm_result_str(DROCE_CM_RESULT_COUNT), "unknown");
	for (r = 0; r < DROCE_CM_RESULT_COUNT; r++) {
		CHECK(droce_cm_result_str(r)[0] != '\0');
		for (s = r + 1; s < DROCE_CM_RESULT_COUNT; s++)
			CHECK(strcmp(droce_cm_result_name(r), droce_cm_result_name(s)) != 0);
	}
}

DROCE_TEST(cm_service_ids)
{
	/* Linux's RDMA_IB_IP_PS_TCP, _UDP, _IB with port 0, and the TCP port 4791. */
	CHECK_EQ_U64(droce_cm_service_id(DROCE_CM_PS_TCP, 0), 0x0000000001060000ull);
	CHECK_EQ_U64(droce_cm_service_id(DROCE_CM_PS_UDP, 0), 0x0000000001110000ull);
	CHECK_EQ_U64(droce_cm_service_id(DROCE_CM_PS_IB, 0), 0x00000000013F0000ull);
	CHECK_EQ_U64(droce_cm_service_id(DROCE_CM_PS_TCP, 4791), 0x00000000010612B7ull);
	CHECK_EQ_U64(droce_cm_service_id(DROCE_CM_PS_IB, 0xFFFF), 0x00000000013FFFFFull);
	CHECK_EQ_U64(droce_cm_service_id_ps(0x00000000010612B7ull), 0x0106);
	CHECK_EQ_U64(droce_cm_service_id_port(0x00000000010612B7ull), 4791);
	CHECK_EQ_U64(0x00000000010612B7ull & DROCE_CM_SERVICE_ID_PS_MASK, 0x0000000001060000ull);
}

DROCE_TEST(cm_ip_hdr_ipv4)
{
	static const uint8_t want[36] = {
		0x00, 0x40, 0x12, 0xB7,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 192, 168, 1, 2,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 1,
	};
	static const uint8_t src[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 192, 168, 1, 2 };
	static const uint8_t dst[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 10, 0, 0, 1 };
	struct droce_cm_ip_hdr h = { .ip_version = 4, .port = 4791 }, out;
	uint8_t *wire = droce_test_malloc(DROCE_CM_IP_HDR_LEN);

	memcpy(h.src_addr, src, 16);
	memcpy(h.dst_addr, dst, 16);
	CHECK_EQ_I64(droce_cm_ip_hdr_build(&h, wire), 0);
	CHECK_MEM(wire, want, sizeof(want));
	memset(&out, 0xA5, sizeof(out));
	CHECK_EQ_U64(droce_cm_ip_hdr_parse(wire, DROCE_CM_IP_HDR_LEN, &out), DROCE_CM_OK);
	CHECK_EQ_U64(out.ip_version, 4);
	CHECK_EQ_U64(out.port, 4791);
	CHECK_MEM(out.src_addr, src, 16);
	CHECK_MEM(out.dst_addr, dst, 16);
	/* The low nibble of byte 1 is reserved. */
	wire[1] = 0x4F;
	CHECK_EQ_U64(droce_cm_ip_hdr_parse(wire, DROCE_CM_IP_HDR_LEN, &out), DROCE_CM_OK);
	droce_test_free(wire);
}

DROCE_TEST(cm_ip_hdr_ipv6_and_rejects)
{
	struct droce_cm_ip_hdr h = { .ip_version = 6, .port = 0xFFFF }, out;
	uint8_t pdata[DROCE_CM_REQ_PDATA_LEN], *buf;
	size_t len;

	droce_test_rand_fill(h.src_addr, 16);
	droce_test_rand_fill(h.dst_addr, 16);
	CHECK_EQ_I64(droce_cm_ip_hdr_build(&h, pdata), 0);
	CHECK_EQ_U64(pdata[0], 0x00);
	CHECK_EQ_U64(pdata[1], 0x60);
	CHECK_EQ_U64(pdata[2], 0xFF);
	CHECK_MEM(pdata + 4, h.src_addr, 16);
	CHECK_MEM(pdata + 20, h.dst_addr, 16);
	CHECK_EQ_U64(droce_cm_ip_hdr_parse(pdata, sizeof(pdata), &out), DROCE_CM_OK);
	CHECK_EQ_U64(out.ip_version, 6);
	CHECK_EQ_U64(out.port, 0xFFFF);
	CHECK_MEM(out.src_addr, h.src_addr, 16);
	CHECK_MEM(out.dst_addr, h.dst_addr, 16);

	for (len = 0; len < DROCE_CM_IP_HDR_LEN; len++) {
		buf = droce_test_malloc(len ? len : 1);
		memcpy(buf, pdata, len);
		CHECK_EQ_U64(droce_cm_ip_hdr_parse(buf, len, &out), DROCE_CM_CMA_SHORT);
		droce_test_free(buf);
	}
	pdata[0] = 0x01;
	CHECK_EQ_U64(droce_cm_ip_hdr_parse(pdata, sizeof(pdata), &out), DROCE_CM_CMA_BAD_VERSION);
	pdata[0] = 0x00;
	pdata[1] = 0x50;
	CHECK_EQ_U64(droce_cm_ip_hdr_parse(pdata, sizeof(pdata), &out),
		     DROCE_CM_CMA_BAD_IP_VERSION);
	pdata[1] = 0x04;	/* the version belongs in the high nibble */
	CHECK_EQ_U64(droce_cm_ip_hdr_parse(pdata, sizeof(pdata), &out),
		     DROCE_CM_CMA_BAD_IP_VERSION);
	h.ip_version = 5;
	CHECK_EQ_I64(droce_cm_ip_hdr_build(&h, pdata), -EINVAL);
}
