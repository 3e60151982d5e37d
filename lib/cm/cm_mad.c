/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * CM MAD builder and parser. Each attribute is one table of fields (IB spec vol. 1
 * tables 106-120); build and parse walk the table, so a field's position is written
 * down once. Offsets are the spec's, counted from the start of the MAD body (byte 24).
 */

#include <errno.h>
#include <string.h>

#include "droce_cm.h"

/* Common MAD header offsets (13.4.2, figure 145). */
#define MAD_BASE_VERSION	0
#define MAD_MGMT_CLASS		1
#define MAD_CLASS_VERSION	2
#define MAD_METHOD		3
#define MAD_STATUS		4
#define MAD_CLASS_SPECIFIC	6
#define MAD_TID			8
#define MAD_ATTR_ID		16
#define MAD_ATTR_MOD		20

/* An integer field: byte, first bit (0 = MSB), width in bits. */
#define INT(msg, fld, byte, bit, width) \
	{ #fld, byte, bit, width, offsetof(struct droce_cm_##msg, fld), \
	  sizeof(((struct droce_cm_##msg *)0)->fld) }
/* A byte array. */
#define MEM(msg, fld, byte) \
	{ #fld, byte, 0, sizeof(((struct droce_cm_##msg *)0)->fld) * 8, \
	  offsetof(struct droce_cm_##msg, fld), sizeof(((struct droce_cm_##msg *)0)->fld) }

/* The path fields of table 106, at base (52 primary, 96 alternate). */
#define PATH(p, base) \
	INT(req, p.local_lid, (base) + 0, 0, 16), \
	INT(req, p.remote_lid, (base) + 2, 0, 16), \
	MEM(req, p.local_gid, (base) + 4), \
	MEM(req, p.remote_gid, (base) + 20), \
	INT(req, p.flow_label, (base) + 36, 0, 20), \
	INT(req, p.packet_rate, (base) + 39, 2, 6), \
	INT(req, p.traffic_class, (base) + 40, 0, 8), \
	INT(req, p.hop_limit, (base) + 41, 0, 8), \
	INT(req, p.sl, (base) + 42, 0, 4), \
	INT(req, p.subnet_local, (base) + 42, 4, 1), \
	INT(req, p.local_ack_timeout, (base) + 43, 0, 5)

static const struct droce_cm_field req_fields[] = {
	INT(req, local_comm_id, 0, 0, 32),
	INT(req, service_id, 8, 0, 64),
	INT(req, local_ca_guid, 16, 0, 64),
	INT(req, local_qkey, 28, 0, 32),
	INT(req, local_qpn, 32, 0, 24),
	INT(req, responder_resources, 35, 0, 8),
	INT(req, local_eecn, 36, 0, 24),
	INT(req, initiator_depth, 39, 0, 8),
	INT(req, remote_eecn, 40, 0, 24),
	INT(req, remote_cm_response_timeout, 43, 0, 5),
	INT(req, transport_service_type, 43, 5, 2),
	INT(req, end_to_end_flow_control, 43, 7, 1),
	INT(req, starting_psn, 44, 0, 24),
	INT(req, local_cm_response_timeout, 47, 0, 5),
	INT(req, retry_count, 47, 5, 3),
	INT(req, partition_key, 48, 0, 16),
	INT(req, path_mtu, 50, 0, 4),
	INT(req, rdc_exists, 50, 4, 1),
	INT(req, rnr_retry_count, 50, 5, 3),
	INT(req, max_cm_retries, 51, 0, 4),
	INT(req, srq, 51, 4, 1),
	INT(req, extended_transport_type, 51, 5, 3),
	PATH(primary, 52),
	PATH(alternate, 96),
	INT(req, sap_supported, 139, 5, 1),
	MEM(req, private_data, 140),
};

static const struct droce_cm_field mra_fields[] = {
	INT(mra, local_comm_id, 0, 0, 32),
	INT(mra, remote_comm_id, 4, 0, 32),
	INT(mra, message_mraed, 8, 0, 2),
	INT(mra, service_timeout, 9, 0, 5),
	MEM(mra, private_data, 10),
};

static const struct droce_cm_field rej_fields[] = {
	INT(rej, local_comm_id, 0, 0, 32),
	INT(rej, remote_comm_id, 4, 0, 32),
	INT(rej, message_rejected, 8, 0, 2),
	INT(rej, rejected_info_length, 9, 0, 7),
	INT(rej, reason, 10, 0, 16),
	MEM(rej, ari, 12),
	MEM(rej, private_data, 84),
};

static const struct droce_cm_field rep_fields[] = {
	INT(rep, local_comm_id, 0, 0, 32),
	INT(rep, remote_comm_id, 4, 0, 32),
	INT(rep, local_qkey, 8, 0, 32),
	INT(rep, local_qpn, 12, 0, 24),
	INT(rep, local_eecn, 16, 0, 24),
	INT(rep, starting_psn, 20, 0, 24),
	INT(rep, responder_resources, 24, 0, 8),
	INT(rep, initiator_depth, 25, 0, 8),
	INT(rep, target_ack_delay, 26, 0, 5),
	INT(rep, failover_accepted, 26, 5, 2),
	INT(rep, end_to_end_flow_control, 26, 7, 1),
	INT(rep, rnr_retry_count, 27, 0, 3),
	INT(rep, srq, 27, 3, 1),
	INT(rep, local_ca_guid, 28, 0, 64),
	MEM(rep, private_data, 36),
};

static const struct droce_cm_field rtu_fields[] = {
	INT(rtu, local_comm_id, 0, 0, 32),
	INT(rtu, remote_comm_id, 4, 0, 32),
	MEM(rtu, private_data, 8),
};

static const struct droce_cm_field dreq_fields[] = {
	INT(dreq, local_comm_id, 0, 0, 32),
	INT(dreq, remote_comm_id, 4, 0, 32),
	INT(dreq, remote_qpn_eecn, 8, 0, 24),
	MEM(dreq, private_data, 12),
};

static const struct droce_cm_field drep_fields[] = {
	INT(drep, local_comm_id, 0, 0, 32),
	INT(drep, remote_comm_id, 4, 0, 32),
	MEM(drep, private_data, 8),
};

static const struct droce_cm_field sidr_req_fields[] = {
	INT(sidr_req, request_id, 0, 0, 32),
	INT(sidr_req, partition_key, 4, 0, 16),
	INT(sidr_req, service_id, 8, 0, 64),
	MEM(sidr_req, private_data, 16),
};

static const struct droce_cm_field sidr_rep_fields[] = {
	INT(sidr_rep, request_id, 0, 0, 32),
	INT(sidr_rep, status, 4, 0, 8),
	INT(sidr_rep, additional_info_length, 5, 0, 8),
	INT(sidr_rep, qpn, 8, 0, 24),
	INT(sidr_rep, service_id, 12, 0, 64),
	INT(sidr_rep, qkey, 20, 0, 32),
	MEM(sidr_rep, additional_info, 24),
	MEM(sidr_rep, private_data, 96),
};

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

struct attr_row {
	uint16_t id;
	const char *name;
	const struct droce_cm_field *fields;
	unsigned int nfields;
};

static const struct attr_row attrs[] = {
#define ATTR_ROW(name, id, member) \
	{ id, #name, member##_fields, ARRAY_LEN(member##_fields) },
	DROCE_CM_ATTR_LIST(ATTR_ROW)
#undef ATTR_ROW
};

static const char *const result_desc[DROCE_CM_RESULT_COUNT] = {
#define RESULT_DESC(name, desc) [DROCE_CM_##name] = desc,
	DROCE_CM_RESULT_LIST(RESULT_DESC)
#undef RESULT_DESC
};

static const char *const result_name[DROCE_CM_RESULT_COUNT] = {
#define RESULT_NAME(name, desc) [DROCE_CM_##name] = #name,
	DROCE_CM_RESULT_LIST(RESULT_NAME)
#undef RESULT_NAME
};

const char *
droce_cm_result_str(enum droce_cm_result r)
{
	return (unsigned int)r < DROCE_CM_RESULT_COUNT ? result_desc[r] : "unknown";
}

const char *
droce_cm_result_name(enum droce_cm_result r)
{
	return (unsigned int)r < DROCE_CM_RESULT_COUNT ? result_name[r] : "UNKNOWN";
}

static const struct attr_row *
attr_lookup(uint16_t attr_id)
{
	unsigned int i;

	for (i = 0; i < ARRAY_LEN(attrs); i++)
		if (attrs[i].id == attr_id)
			return &attrs[i];
	return NULL;
}

const char *
droce_cm_attr_name(uint16_t attr_id)
{
	const struct attr_row *a = attr_lookup(attr_id);

	return a == NULL ? NULL : a->name;
}

const struct droce_cm_field *
droce_cm_fields(uint16_t attr_id, unsigned int *n)
{
	const struct attr_row *a = attr_lookup(attr_id);

	*n = a == NULL ? 0 : a->nfields;
	return a == NULL ? NULL : a->fields;
}

/* Big-endian integers of 1 to 8 bytes. */
static uint64_t
get_be(const uint8_t *p, unsigned int nbytes)
{
	uint64_t v = 0;
	unsigned int i;

	for (i = 0; i < nbytes; i++)
		v = v << 8 | p[i];
	return v;
}

static void
put_be(uint8_t *p, unsigned int nbytes, uint64_t v)
{
	unsigned int i;

	for (i = nbytes; i > 0; i--, v >>= 8)
		p[i - 1] = (uint8_t)v;
}

static uint64_t
width_mask(unsigned int width)
{
	return width >= 64 ? UINT64_MAX : (UINT64_C(1) << width) - 1;
}

static uint64_t
host_get(const uint8_t *host, const struct droce_cm_field *f)
{
	uint8_t v8;
	uint16_t v16;
	uint32_t v32;
	uint64_t v64;

	switch (f->host_size) {
	case 1: memcpy(&v8, host + f->host_off, 1); return v8;
	case 2: memcpy(&v16, host + f->host_off, 2); return v16;
	case 4: memcpy(&v32, host + f->host_off, 4); return v32;
	default: memcpy(&v64, host + f->host_off, 8); return v64;
	}
}

static void
host_put(uint8_t *host, const struct droce_cm_field *f, uint64_t v)
{
	uint8_t v8 = (uint8_t)v;
	uint16_t v16 = (uint16_t)v;
	uint32_t v32 = (uint32_t)v;

	switch (f->host_size) {
	case 1: memcpy(host + f->host_off, &v8, 1); break;
	case 2: memcpy(host + f->host_off, &v16, 2); break;
	case 4: memcpy(host + f->host_off, &v32, 4); break;
	default: memcpy(host + f->host_off, &v, 8); break;
	}
}

uint64_t
droce_cm_field_get(const struct droce_cm_msg *m, const struct droce_cm_field *f)
{
	return host_get((const uint8_t *)&m->req, f);
}

void
droce_cm_field_set(struct droce_cm_msg *m, const struct droce_cm_field *f, uint64_t v)
{
	host_put((uint8_t *)&m->req, f, v);
}

static bool
field_is_mem(const struct droce_cm_field *f)
{
	return f->width > 64;
}

/* The bytes an integer field touches: never more than 8 in these tables. */
static unsigned int
field_nbytes(const struct droce_cm_field *f)
{
	return (f->bit + f->width + 7u) / 8u;
}

static void
field_write(uint8_t *body, const uint8_t *host, const struct droce_cm_field *f)
{
	unsigned int nbytes, shift;
	uint64_t mask, word;

	if (field_is_mem(f)) {
		memcpy(body + f->byte, host + f->host_off, f->host_size);
		return;
	}
	nbytes = field_nbytes(f);
	shift = nbytes * 8 - f->bit - f->width;
	mask = width_mask(f->width) << shift;
	word = get_be(body + f->byte, nbytes);
	word = (word & ~mask) | ((host_get(host, f) << shift) & mask);
	put_be(body + f->byte, nbytes, word);
}

static void
field_read(const uint8_t *body, uint8_t *host, const struct droce_cm_field *f)
{
	unsigned int nbytes, shift;

	if (field_is_mem(f)) {
		memcpy(host + f->host_off, body + f->byte, f->host_size);
		return;
	}
	nbytes = field_nbytes(f);
	shift = nbytes * 8 - f->bit - f->width;
	host_put(host, f, (get_be(body + f->byte, nbytes) >> shift) & width_mask(f->width));
}

int
droce_cm_mad_build(const struct droce_cm_msg *m, uint8_t mad[DROCE_CM_MAD_LEN])
{
	const struct attr_row *a = attr_lookup(m->attr_id);
	const uint8_t *host = (const uint8_t *)&m->req;
	unsigned int i;

	if (a == NULL)
		return -EINVAL;
	memset(mad, 0, DROCE_CM_MAD_LEN);
	mad[MAD_BASE_VERSION] = DROCE_CM_BASE_VERSION;
	mad[MAD_MGMT_CLASS] = DROCE_CM_MGMT_CLASS;
	mad[MAD_CLASS_VERSION] = DROCE_CM_CLASS_VERSION;
	mad[MAD_METHOD] = DROCE_CM_METHOD_SEND;
	put_be(mad + MAD_STATUS, 2, m->status);
	put_be(mad + MAD_CLASS_SPECIFIC, 2, m->class_specific);
	put_be(mad + MAD_TID, 8, m->tid);
	put_be(mad + MAD_ATTR_ID, 2, m->attr_id);
	put_be(mad + MAD_ATTR_MOD, 4, m->attr_mod);
	for (i = 0; i < a->nfields; i++)
		field_write(mad + DROCE_CM_MAD_HDR_LEN, host, &a->fields[i]);
	return 0;
}

enum droce_cm_result
droce_cm_mad_parse(const uint8_t *buf, size_t len, struct droce_cm_msg *m)
{
	const struct attr_row *a;
	uint8_t *host = (uint8_t *)&m->req;
	unsigned int i;

	if (len < DROCE_CM_MAD_LEN)
		return DROCE_CM_SHORT;
	if (buf[MAD_BASE_VERSION] != DROCE_CM_BASE_VERSION)
		return DROCE_CM_BAD_BASE_VERSION;
	if (buf[MAD_MGMT_CLASS] != DROCE_CM_MGMT_CLASS)
		return DROCE_CM_BAD_CLASS;
	if (buf[MAD_CLASS_VERSION] != DROCE_CM_CLASS_VERSION)
		return DROCE_CM_BAD_CLASS_VERSION;
	if (buf[MAD_METHOD] != DROCE_CM_METHOD_SEND)
		return DROCE_CM_BAD_METHOD;
	a = attr_lookup((uint16_t)get_be(buf + MAD_ATTR_ID, 2));
	if (a == NULL)
		return DROCE_CM_UNKNOWN_ATTR;

	memset(m, 0, sizeof(*m));
	m->attr_id = a->id;
	m->status = (uint16_t)get_be(buf + MAD_STATUS, 2);
	m->class_specific = (uint16_t)get_be(buf + MAD_CLASS_SPECIFIC, 2);
	m->tid = get_be(buf + MAD_TID, 8);
	m->attr_mod = (uint32_t)get_be(buf + MAD_ATTR_MOD, 4);
	for (i = 0; i < a->nfields; i++)
		field_read(buf + DROCE_CM_MAD_HDR_LEN, host, &a->fields[i]);
	return DROCE_CM_OK;
}
