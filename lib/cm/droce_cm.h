/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef DROCE_CM_H
#define DROCE_CM_H

/*
 * InfiniBand Communication Management MADs on the wire (IB spec vol. 1 ch. 12) and the
 * RDMA CM private-data header that rdma_cm puts at the front of a REQ's private data
 * (IB spec Annex A11, the RDMA IP CM Service). Wire format only: no state, no timers, no
 * DPDK. A MAD is 256 bytes: the 24-byte common MAD header (13.4.2) then the attribute's
 * body. Messages are host-order structs; every multi-bit field is right-aligned in the
 * smallest unsigned type that holds it and only its low `width` bits reach the wire.
 * Reserved bits are written as zero and ignored on parse.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DROCE_CM_MAD_LEN		256
#define DROCE_CM_MAD_HDR_LEN		24
#define DROCE_CM_MAD_BODY_LEN		(DROCE_CM_MAD_LEN - DROCE_CM_MAD_HDR_LEN)

/* Common MAD header values of a CM MAD (13.4.2, 12.6). */
#define DROCE_CM_BASE_VERSION		1
#define DROCE_CM_MGMT_CLASS		0x07
#define DROCE_CM_CLASS_VERSION		2
#define DROCE_CM_METHOD_SEND		0x03

/* CM MADs go to QP1, the GSI, with its well-known Q_Key (IB spec ch. 13). */
#define DROCE_CM_GSI_QPN		1
#define DROCE_CM_GSI_QKEY		0x80010000u

/* Private data lengths (tables 106-120): what is left of the 232-byte body. */
#define DROCE_CM_REQ_PDATA_LEN		92
#define DROCE_CM_MRA_PDATA_LEN		222
#define DROCE_CM_REJ_PDATA_LEN		148
#define DROCE_CM_REJ_ARI_LEN		72
#define DROCE_CM_REP_PDATA_LEN		196
#define DROCE_CM_RTU_PDATA_LEN		224
#define DROCE_CM_DREQ_PDATA_LEN		220
#define DROCE_CM_DREP_PDATA_LEN		224
#define DROCE_CM_SIDR_REQ_PDATA_LEN	216
#define DROCE_CM_SIDR_REP_PDATA_LEN	136
#define DROCE_CM_SIDR_REP_INFO_LEN	72

#define DROCE_CM_GID_LEN		16

/*
 * The CM attributes droce knows: X(NAME, attribute ID, union member). LAP and APR
 * (alternate path) are left out: rdma_cm never sends them.
 */
#define DROCE_CM_ATTR_LIST(X) \
	X(REQ, 0x0010, req) \
	X(MRA, 0x0011, mra) \
	X(REJ, 0x0012, rej) \
	X(REP, 0x0013, rep) \
	X(RTU, 0x0014, rtu) \
	X(DREQ, 0x0015, dreq) \
	X(DREP, 0x0016, drep) \
	X(SIDR_REQ, 0x0017, sidr_req) \
	X(SIDR_REP, 0x0018, sidr_rep)

enum droce_cm_attr {
#define DROCE_CM_ATTR_ENUM(name, id, member) DROCE_CM_ATTR_##name = id,
	DROCE_CM_ATTR_LIST(DROCE_CM_ATTR_ENUM)
#undef DROCE_CM_ATTR_ENUM
};

/* Path fields of a REQ (table 106), once for the primary path and once for the alternate. */
struct droce_cm_path {
	uint16_t local_lid;
	uint16_t remote_lid;
	uint8_t local_gid[DROCE_CM_GID_LEN];
	uint8_t remote_gid[DROCE_CM_GID_LEN];
	uint32_t flow_label;		/* 20 bits */
	uint8_t packet_rate;		/* 6 bits */
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint8_t sl;			/* 4 bits */
	uint8_t subnet_local;		/* 1 bit */
	uint8_t local_ack_timeout;	/* 5 bits */
};

/* Table 106. */
struct droce_cm_req {
	uint32_t local_comm_id;
	uint64_t service_id;
	uint64_t local_ca_guid;
	uint32_t local_qkey;
	uint32_t local_qpn;			/* 24 bits */
	uint8_t responder_resources;
	uint32_t local_eecn;			/* 24 bits */
	uint8_t initiator_depth;
	uint32_t remote_eecn;			/* 24 bits */
	uint8_t remote_cm_response_timeout;	/* 5 bits */
	uint8_t transport_service_type;		/* 2 bits: 0 RC, 1 UC, 2 RD */
	uint8_t end_to_end_flow_control;	/* 1 bit */
	uint32_t starting_psn;			/* 24 bits */
	uint8_t local_cm_response_timeout;	/* 5 bits */
	uint8_t retry_count;			/* 3 bits */
	uint16_t partition_key;
	uint8_t path_mtu;			/* 4 bits, enum ibv_mtu values */
	uint8_t rdc_exists;			/* 1 bit */
	uint8_t rnr_retry_count;		/* 3 bits */
	uint8_t max_cm_retries;			/* 4 bits */
	uint8_t srq;				/* 1 bit */
	uint8_t extended_transport_type;	/* 3 bits */
	struct droce_cm_path primary;
	struct droce_cm_path alternate;		/* all zero: no alternate path */
	uint8_t sap_supported;			/* 1 bit */
	uint8_t private_data[DROCE_CM_REQ_PDATA_LEN];
};

/* Table 107. */
struct droce_cm_mra {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t message_mraed;			/* 2 bits: 0 REQ, 1 REP, 2 LAP */
	uint8_t service_timeout;		/* 5 bits */
	uint8_t private_data[DROCE_CM_MRA_PDATA_LEN];
};

/* Table 108. */
struct droce_cm_rej {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t message_rejected;		/* 2 bits: 0 REQ, 1 REP, 2 other */
	uint8_t rejected_info_length;		/* 7 bits */
	uint16_t reason;
	uint8_t ari[DROCE_CM_REJ_ARI_LEN];
	uint8_t private_data[DROCE_CM_REJ_PDATA_LEN];
};

/* Table 110. */
struct droce_cm_rep {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint32_t local_qkey;
	uint32_t local_qpn;			/* 24 bits */
	uint32_t local_eecn;			/* 24 bits */
	uint32_t starting_psn;			/* 24 bits */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t target_ack_delay;		/* 5 bits */
	uint8_t failover_accepted;		/* 2 bits */
	uint8_t end_to_end_flow_control;	/* 1 bit */
	uint8_t rnr_retry_count;		/* 3 bits */
	uint8_t srq;				/* 1 bit */
	uint64_t local_ca_guid;
	uint8_t private_data[DROCE_CM_REP_PDATA_LEN];
};

/* Table 111. */
struct droce_cm_rtu {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t private_data[DROCE_CM_RTU_PDATA_LEN];
};

/* Table 112. */
struct droce_cm_dreq {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint32_t remote_qpn_eecn;		/* 24 bits */
	uint8_t private_data[DROCE_CM_DREQ_PDATA_LEN];
};

/* Table 113. */
struct droce_cm_drep {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t private_data[DROCE_CM_DREP_PDATA_LEN];
};

/* Table 119. */
struct droce_cm_sidr_req {
	uint32_t request_id;
	uint16_t partition_key;
	uint64_t service_id;
	uint8_t private_data[DROCE_CM_SIDR_REQ_PDATA_LEN];
};

/* Table 120. */
struct droce_cm_sidr_rep {
	uint32_t request_id;
	uint8_t status;
	uint8_t additional_info_length;
	uint32_t qpn;				/* 24 bits */
	uint64_t service_id;
	uint32_t qkey;
	uint8_t additional_info[DROCE_CM_SIDR_REP_INFO_LEN];
	uint8_t private_data[DROCE_CM_SIDR_REP_PDATA_LEN];
};

/*
 * One CM MAD: the variable part of the common MAD header and the body, tagged by
 * attr_id (enum droce_cm_attr). Base version, class, class version and method are not
 * here: droce builds and accepts only CM Send MADs.
 */
struct droce_cm_msg {
	uint16_t attr_id;
	uint16_t status;
	uint16_t class_specific;
	uint64_t tid;
	uint32_t attr_mod;
	union {
#define DROCE_CM_ATTR_MEMBER(name, id, member) struct droce_cm_##member member;
		DROCE_CM_ATTR_LIST(DROCE_CM_ATTR_MEMBER)
#undef DROCE_CM_ATTR_MEMBER
	};
};

/*
 * Parse outcomes: X(name, description). The parser stops at the first failed check, in
 * this order. The CMA ones come from droce_cm_ip_hdr_parse().
 */
#define DROCE_CM_RESULT_LIST(X) \
	X(OK, "ok") \
	X(SHORT, "shorter than a 256-byte MAD") \
	X(BAD_BASE_VERSION, "MAD base version is not 1") \
	X(BAD_CLASS, "management class is not CM (0x07)") \
	X(BAD_CLASS_VERSION, "CM class version is not 2") \
	X(BAD_METHOD, "method is not Send (0x03)") \
	X(UNKNOWN_ATTR, "unknown CM attribute") \
	X(CMA_SHORT, "private data shorter than the RDMA CM header") \
	X(CMA_BAD_VERSION, "RDMA CM header version is not 0") \
	X(CMA_BAD_IP_VERSION, "RDMA CM header IP version is not 4 or 6")

enum droce_cm_result {
#define DROCE_CM_RESULT_ENUM(name, desc) DROCE_CM_##name,
	DROCE_CM_RESULT_LIST(DROCE_CM_RESULT_ENUM)
#undef DROCE_CM_RESULT_ENUM
	DROCE_CM_RESULT_COUNT
};

const char *droce_cm_result_str(enum droce_cm_result r);
/* The X-macro name ("BAD_METHOD"), for logs and tests. */
const char *droce_cm_result_name(enum droce_cm_result r);
/* "REQ", ... or NULL for an attribute droce does not know. */
const char *droce_cm_attr_name(uint16_t attr_id);

/*
 * Writes m as a 256-byte CM Send MAD. Returns 0, or -EINVAL when m->attr_id is not a
 * known attribute (mad is then untouched).
 */
int droce_cm_mad_build(const struct droce_cm_msg *m, uint8_t mad[DROCE_CM_MAD_LEN]);

/*
 * Reads the CM MAD in buf[0..len). Safe on any bytes; reads at most 256 of them (a
 * longer buffer is a MAD followed by something else, such as the UD packet's ICRC).
 * Checks only what makes the bytes a CM MAD droce can read; whether the values make
 * sense is for the state machine. On any result but DROCE_CM_OK, *m is unspecified.
 */
enum droce_cm_result droce_cm_mad_parse(const uint8_t *buf, size_t len, struct droce_cm_msg *m);

/*
 * The field table of one attribute, the single description of its layout that build
 * and parse both use: where each field lies in the MAD body (byte and bit offsets as
 * the spec tables give them, counted from byte 24 of the MAD; bit 0 is the most
 * significant) and where it lies in the attribute's struct. A field of width > 64 is a
 * byte array (GIDs, ARI, private data) of width / 8 bytes.
 */
struct droce_cm_field {
	const char *name;	/* the struct member: "primary.sl" */
	uint16_t byte;
	uint8_t bit;
	uint16_t width;		/* in bits */
	uint16_t host_off;	/* offsetof() in the attribute's struct */
	uint16_t host_size;	/* 1, 2, 4 or 8; the array length for a byte array */
};

/* NULL (and *n = 0) for an unknown attribute. */
const struct droce_cm_field *droce_cm_fields(uint16_t attr_id, unsigned int *n);

/*
 * The value of integer field f (width <= 64) of m's attribute struct, and setting it (v
 * is stored in the member's own type, unmasked): what build and parse use, for code that
 * walks the tables.
 */
uint64_t droce_cm_field_get(const struct droce_cm_msg *m, const struct droce_cm_field *f);
void droce_cm_field_set(struct droce_cm_msg *m, const struct droce_cm_field *f, uint64_t v);

/* ---------------------------------------------------------------------------------
 * RDMA CM (rdma_cm, Annex A11): service IDs of port spaces and the private-data header
 */

/* Port spaces (enum rdma_ucm_port_space). */
#define DROCE_CM_PS_IPOIB		0x0002
#define DROCE_CM_PS_TCP			0x0106
#define DROCE_CM_PS_UDP			0x0111
#define DROCE_CM_PS_IB			0x013F
/*
 * rdma_cm's service IDs: 32 zero bits, the port space, the port (Linux's
 * RDMA_IB_IP_PS_TCP is 0x0000000001060000). The mask keeps all but the port.
 */
#define DROCE_CM_SERVICE_ID_PS_MASK	0xFFFFFFFFFFFF0000ull

/* The service ID rdma_cm listens on for port `port` in port space `ps`. */
static inline uint64_t
droce_cm_service_id(uint16_t ps, uint16_t port)
{
	return ((uint64_t)ps << 16) | port;
}

static inline uint16_t droce_cm_service_id_ps(uint64_t sid) { return (uint16_t)(sid >> 16); }
static inline uint16_t droce_cm_service_id_port(uint64_t sid) { return (uint16_t)sid; }

#define DROCE_CM_IP_HDR_LEN		36
#define DROCE_CM_IP_HDR_VERSION		0x00

/*
 * The header rdma_cm puts first in a REQ's (and SIDR_REQ's) private data: version,
 * IP version in the high nibble of byte 1, the destination port big-endian, source and
 * destination addresses. Here addresses are always 16 bytes, IPv4 ones in IPv4-mapped
 * form (::ffff:a.b.c.d) like droce's GIDs; on the wire Linux puts an IPv4 address in the
 * last four bytes after twelve zero bytes, and so does droce.
 */
struct droce_cm_ip_hdr {
	uint8_t ip_version;		/* 4 or 6 */
	uint16_t port;
	uint8_t src_addr[16];
	uint8_t dst_addr[16];
};

/* Writes h to pdata[0..36). Returns 0, or -EINVAL when ip_version is not 4 or 6. */
int droce_cm_ip_hdr_build(const struct droce_cm_ip_hdr *h, uint8_t pdata[DROCE_CM_IP_HDR_LEN]);

/* Reads the header at the start of pdata[0..len). Safe on any bytes. */
enum droce_cm_result droce_cm_ip_hdr_parse(const uint8_t *pdata, size_t len,
					   struct droce_cm_ip_hdr *h);

#endif /* DROCE_CM_H */
