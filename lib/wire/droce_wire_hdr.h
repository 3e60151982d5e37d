/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef DROCE_WIRE_HDR_H
#define DROCE_WIRE_HDR_H

/*
 * Header layouts of a RoCEv2 packet and accessors for their fields.
 *
 * Layer one of the accessors: every function here reads or writes one field of one
 * header given a pointer to that header's first byte. Byte order and bit packing are
 * handled here and nowhere else; callers see host-order values. The structs are packed
 * and may sit at any alignment inside a packet buffer. Layer two (finding a header in
 * a parsed packet) lives in droce_wire_pkt.h.
 */

#include <endian.h>
#include <stdbool.h>
#include <stdint.h>

#define DROCE_ETHERTYPE_IPV4	0x0800
#define DROCE_ETHERTYPE_IPV6	0x86DD
#define DROCE_ETHERTYPE_VLAN	0x8100
#define DROCE_IPPROTO_UDP	17
#define DROCE_ROCEV2_UDP_PORT	4791	/* IANA; Annex A17.2 */

#define DROCE_ETH_HLEN		14
#define DROCE_VLAN_HLEN		4
#define DROCE_IPV4_HLEN		20	/* without options */
#define DROCE_IPV6_HLEN		40
#define DROCE_UDP_HLEN		8
#define DROCE_BTH_LEN		12
#define DROCE_RETH_LEN		16
#define DROCE_AETH_LEN		4
#define DROCE_ATMETH_LEN	28
#define DROCE_ATMACK_LEN	8
#define DROCE_IMMDT_LEN		4
#define DROCE_IETH_LEN		4
#define DROCE_DETH_LEN		8
#define DROCE_FETH_LEN		4
#define DROCE_XRCETH_LEN	4
#define DROCE_CNP_RSVD_LEN	16	/* A17.9.3: 16 reserved bytes after the BTH */
#define DROCE_ICRC_LEN		4

/* The 40-byte GRH area that UD receive buffers begin with (IB spec 11.4.1.1). */
#define DROCE_GRH_LEN		40

#define DROCE_PSN_MASK		0x00FFFFFFu
#define DROCE_QPN_MASK		0x00FFFFFFu
/*
 * The default partition's P_Key, droce's only one: the low 15 bits name a partition, the
 * top bit is full membership (IB 10.9.1.1), so a key matches ours when its base matches.
 */
#define DROCE_PKEY_DEFAULT	0xFFFF
#define DROCE_PKEY_BASE_MASK	0x7FFF

#define DROCE_PACKED __attribute__((packed))

/* ---- Ethernet and 802.1Q ---- */

struct droce_eth_hdr {
	uint8_t dst[6];
	uint8_t src[6];
	uint16_t ethertype;	/* big-endian */
} DROCE_PACKED;

struct droce_vlan_hdr {
	uint16_t tci;		/* big-endian: PCP(3) DEI(1) VID(12) */
	uint16_t ethertype;	/* big-endian: the encapsulated type */
} DROCE_PACKED;

static inline uint16_t droce_eth_type(const struct droce_eth_hdr *h) { return be16toh(h->ethertype); }
static inline void droce_eth_set_type(struct droce_eth_hdr *h, uint16_t t) { h->ethertype = htobe16(t); }
#define DROCE_VLAN_VID_MASK	0x0FFF

static inline uint16_t droce_vlan_tci(const struct droce_vlan_hdr *h) { return be16toh(h->tci); }
/* The VLAN ID (low 12 bits) of a whole TCI such as droce_wire_pkt.vlan_tci. */
static inline uint16_t droce_vlan_tci_vid(uint16_t tci) { return tci & DROCE_VLAN_VID_MASK; }
static inline uint16_t droce_vlan_type(const struct droce_vlan_hdr *h) { return be16toh(h->ethertype); }

/* ---- IPv4 (RFC 791) ---- */

#define DROCE_IPV4_DF		0x4000
#define DROCE_IPV4_MF		0x2000
#define DROCE_IPV4_FRAG_MASK	0x1FFF

struct droce_ipv4_hdr {
	uint8_t ver_ihl;
	uint8_t tos;		/* DSCP(6) ECN(2); masked in the ICRC */
	uint16_t total_len;
	uint16_t id;
	uint16_t frag;		/* flags(3) offset(13) */
	uint8_t ttl;		/* masked in the ICRC */
	uint8_t proto;
	uint16_t csum;		/* masked in the ICRC */
	uint8_t src[4];
	uint8_t dst[4];
} DROCE_PACKED;

static inline unsigned int droce_ipv4_version(const struct droce_ipv4_hdr *h) { return h->ver_ihl >> 4; }
static inline unsigned int droce_ipv4_hdr_len(const struct droce_ipv4_hdr *h) { return (h->ver_ihl & 0xF) * 4u; }
static inline uint16_t droce_ipv4_total_len(const struct droce_ipv4_hdr *h) { return be16toh(h->total_len); }
static inline void droce_ipv4_set_total_len(struct droce_ipv4_hdr *h, uint16_t v) { h->total_len = htobe16(v); }
static inline uint16_t droce_ipv4_frag(const struct droce_ipv4_hdr *h) { return be16toh(h->frag); }
static inline uint16_t droce_ipv4_csum(const struct droce_ipv4_hdr *h) { return be16toh(h->csum); }

/* ---- IPv6 (RFC 8200) ---- */

struct droce_ipv6_hdr {
	uint32_t vtc_flow;	/* version(4) traffic class(8) flow label(20); TC and FL masked */
	uint16_t payload_len;
	uint8_t next_hdr;
	uint8_t hop_limit;	/* masked in the ICRC */
	uint8_t src[16];
	uint8_t dst[16];
} DROCE_PACKED;

static inline unsigned int droce_ipv6_version(const struct droce_ipv6_hdr *h) { return be32toh(h->vtc_flow) >> 28; }
static inline uint8_t droce_ipv6_tclass(const struct droce_ipv6_hdr *h) { return (be32toh(h->vtc_flow) >> 20) & 0xFF; }
static inline uint32_t droce_ipv6_flow(const struct droce_ipv6_hdr *h) { return be32toh(h->vtc_flow) & 0xFFFFF; }
static inline uint16_t droce_ipv6_payload_len(const struct droce_ipv6_hdr *h) { return be16toh(h->payload_len); }
static inline void droce_ipv6_set_payload_len(struct droce_ipv6_hdr *h, uint16_t v) { h->payload_len = htobe16(v); }

/* ---- UDP (RFC 768) ---- */

struct droce_udp_hdr {
	uint16_t sport;
	uint16_t dport;
	uint16_t len;
	uint16_t csum;		/* RoCEv2 sends 0 (A17.4.2); masked in the ICRC */
} DROCE_PACKED;

static inline uint16_t droce_udp_sport(const struct droce_udp_hdr *h) { return be16toh(h->sport); }
static inline uint16_t droce_udp_dport(const struct droce_udp_hdr *h) { return be16toh(h->dport); }
static inline uint16_t droce_udp_len(const struct droce_udp_hdr *h) { return be16toh(h->len); }
static inline void droce_udp_set_len(struct droce_udp_hdr *h, uint16_t v) { h->len = htobe16(v); }

/* ---- Base Transport Header (IB spec 9.2) ---- */

struct droce_bth {
	uint8_t opcode;
	uint8_t flags;		/* SE(1) M(1) PadCnt(2) TVer(4) */
	uint16_t pkey;
	uint32_t fb_dqpn;	/* FECN(1) BECN(1) reserved(6) DestQP(24); byte 4 masked in ICRC */
	uint32_t ack_psn;	/* AckReq(1) reserved(7) PSN(24) */
} DROCE_PACKED;

#define DROCE_BTH_SE		0x80
#define DROCE_BTH_MIG		0x40
#define DROCE_BTH_PAD_MASK	0x30
#define DROCE_BTH_PAD_SHIFT	4
#define DROCE_BTH_TVER_MASK	0x0F
#define DROCE_BTH_FECN		0x80000000u
#define DROCE_BTH_BECN		0x40000000u
#define DROCE_BTH_ACKREQ	0x80000000u

static inline uint8_t droce_bth_opcode(const struct droce_bth *h) { return h->opcode; }
static inline bool droce_bth_se(const struct droce_bth *h) { return h->flags & DROCE_BTH_SE; }
static inline bool droce_bth_mig(const struct droce_bth *h) { return h->flags & DROCE_BTH_MIG; }
static inline unsigned int droce_bth_pad(const struct droce_bth *h) { return (h->flags & DROCE_BTH_PAD_MASK) >> DROCE_BTH_PAD_SHIFT; }
static inline unsigned int droce_bth_tver(const struct droce_bth *h) { return h->flags & DROCE_BTH_TVER_MASK; }
static inline uint16_t droce_bth_pkey(const struct droce_bth *h) { return be16toh(h->pkey); }
static inline bool droce_bth_fecn(const struct droce_bth *h) { return be32toh(h->fb_dqpn) & DROCE_BTH_FECN; }
static inline bool droce_bth_becn(const struct droce_bth *h) { return be32toh(h->fb_dqpn) & DROCE_BTH_BECN; }
static inline uint32_t droce_bth_dqpn(const struct droce_bth *h) { return be32toh(h->fb_dqpn) & DROCE_QPN_MASK; }
static inline bool droce_bth_ackreq(const struct droce_bth *h) { return be32toh(h->ack_psn) & DROCE_BTH_ACKREQ; }
static inline uint32_t droce_bth_psn(const struct droce_bth *h) { return be32toh(h->ack_psn) & DROCE_PSN_MASK; }

static inline void
droce_bth_set(struct droce_bth *h, uint8_t opcode, bool se, bool mig, unsigned int pad,
	      uint16_t pkey, bool fecn, bool becn, uint32_t dqpn, bool ackreq, uint32_t psn)
{
	h->opcode = opcode;
	h->flags = (se ? DROCE_BTH_SE : 0) | (mig ? DROCE_BTH_MIG : 0) |
		   ((pad << DROCE_BTH_PAD_SHIFT) & DROCE_BTH_PAD_MASK);	/* TVer 0 */
	h->pkey = htobe16(pkey);
	h->fb_dqpn = htobe32((fecn ? DROCE_BTH_FECN : 0) | (becn ? DROCE_BTH_BECN : 0) |
			     (dqpn & DROCE_QPN_MASK));
	h->ack_psn = htobe32((ackreq ? DROCE_BTH_ACKREQ : 0) | (psn & DROCE_PSN_MASK));
}

/* ---- RDMA Extended Transport Header (9.3.3) ---- */

struct droce_reth {
	uint64_t va;
	uint32_t rkey;
	uint32_t dma_len;
} DROCE_PACKED;

static inline uint64_t droce_reth_va(const struct droce_reth *h) { return be64toh(h->va); }
static inline uint32_t droce_reth_rkey(const struct droce_reth *h) { return be32toh(h->rkey); }
static inline uint32_t droce_reth_len(const struct droce_reth *h) { return be32toh(h->dma_len); }

static inline void
droce_reth_set(struct droce_reth *h, uint64_t va, uint32_t rkey, uint32_t len)
{
	h->va = htobe64(va);
	h->rkey = htobe32(rkey);
	h->dma_len = htobe32(len);
}

/* ---- ACK Extended Transport Header (9.3.5) ---- */

struct droce_aeth {
	uint32_t syn_msn;	/* Syndrome(8) MSN(24) */
} DROCE_PACKED;

/* Syndrome bits 6..5 say what the AETH is (table 44). */
#define DROCE_AETH_TYPE_MASK	0x60
#define DROCE_AETH_ACK		0x00	/* low 5 bits: credit count, 0x1F = unlimited */
#define DROCE_AETH_RNR_NAK	0x20	/* low 5 bits: RNR timer code */
#define DROCE_AETH_NAK		0x60	/* low 5 bits: NAK code */
#define DROCE_AETH_VALUE_MASK	0x1F
#define DROCE_AETH_CREDITS_INVALID 0x1F

/* NAK codes (table 45). */
enum droce_nak_code {
	DROCE_NAK_PSN_SEQ_ERR = 0,
	DROCE_NAK_INVALID_REQ = 1,
	DROCE_NAK_REMOTE_ACCESS = 2,
	DROCE_NAK_REMOTE_OP = 3,
	DROCE_NAK_INVALID_RD_REQ = 4,
};

static inline uint8_t droce_aeth_syndrome(const struct droce_aeth *h) { return be32toh(h->syn_msn) >> 24; }
static inline uint32_t droce_aeth_msn(const struct droce_aeth *h) { return be32toh(h->syn_msn) & DROCE_PSN_MASK; }
static inline void droce_aeth_set(struct droce_aeth *h, uint8_t syndrome, uint32_t msn)
{
	h->syn_msn = htobe32((uint32_t)syndrome << 24 | (msn & DROCE_PSN_MASK));
}

/* ---- Atomic Extended Transport Header (9.3.4) ---- */

struct droce_atmeth {
	uint64_t va;
	uint32_t rkey;
	uint64_t swap_add;
	uint64_t compare;
} DROCE_PACKED;

static inline uint64_t droce_atmeth_va(const struct droce_atmeth *h) { return be64toh(h->va); }
static inline uint32_t droce_atmeth_rkey(const struct droce_atmeth *h) { return be32toh(h->rkey); }
static inline uint64_t droce_atmeth_swap_add(const struct droce_atmeth *h) { return be64toh(h->swap_add); }
static inline uint64_t droce_atmeth_compare(const struct droce_atmeth *h) { return be64toh(h->compare); }

static inline void
droce_atmeth_set(struct droce_atmeth *h, uint64_t va, uint32_t rkey, uint64_t swap_add,
		 uint64_t compare)
{
	h->va = htobe64(va);
	h->rkey = htobe32(rkey);
	h->swap_add = htobe64(swap_add);
	h->compare = htobe64(compare);
}

/* ---- Atomic ACK Extended Transport Header (9.3.6) ---- */

struct droce_atmack {
	uint64_t orig;
} DROCE_PACKED;

static inline uint64_t droce_atmack_orig(const struct droce_atmack *h) { return be64toh(h->orig); }
static inline void droce_atmack_set(struct droce_atmack *h, uint64_t v) { h->orig = htobe64(v); }

/* ---- Immediate Data, Invalidate, Datagram, Flush headers (9.3.2, 9.3.7, 9.3.8) ---- */

/*
 * ImmDt is opaque 32 bits. The accessors keep it in wire byte order on both sides, as
 * verbs' imm_data (a __be32) does, so no layer swaps it.
 */
struct droce_immdt {
	uint32_t imm;
} DROCE_PACKED;

struct droce_ieth {
	uint32_t rkey;
} DROCE_PACKED;

struct droce_deth {
	uint32_t qkey;
	uint32_t src_qp;	/* reserved(8) SrcQP(24) */
} DROCE_PACKED;

/* XRC (9.3.7): the XRC SRQ the request is for, reserved(8) XRCSRQ(24). */
struct droce_xrceth {
	uint32_t srqn;
} DROCE_PACKED;

/* IBA 1.5 FLUSH: placement type in bits 3..0, selectivity level in bits 5..4. */
struct droce_feth {
	uint32_t bits;
} DROCE_PACKED;

#define DROCE_FETH_PLT_MASK	0x0000000Fu
#define DROCE_FETH_SEL_MASK	0x00000030u
#define DROCE_FETH_SEL_SHIFT	4

static inline uint32_t droce_immdt_be(const struct droce_immdt *h) { return h->imm; }
static inline void droce_immdt_set_be(struct droce_immdt *h, uint32_t imm_be) { h->imm = imm_be; }
static inline uint32_t droce_ieth_rkey(const struct droce_ieth *h) { return be32toh(h->rkey); }
static inline void droce_ieth_set(struct droce_ieth *h, uint32_t rkey) { h->rkey = htobe32(rkey); }
static inline uint32_t droce_deth_qkey(const struct droce_deth *h) { return be32toh(h->qkey); }
static inline uint32_t droce_deth_src_qp(const struct droce_deth *h) { return be32toh(h->src_qp) & DROCE_QPN_MASK; }
static inline void droce_deth_set(struct droce_deth *h, uint32_t qkey, uint32_t src_qp)
{
	h->qkey = htobe32(qkey);
	h->src_qp = htobe32(src_qp & DROCE_QPN_MASK);
}
static inline uint32_t droce_xrceth_srqn(const struct droce_xrceth *h) { return be32toh(h->srqn) & DROCE_QPN_MASK; }
static inline void droce_xrceth_set(struct droce_xrceth *h, uint32_t srqn) { h->srqn = htobe32(srqn & DROCE_QPN_MASK); }
static inline unsigned int droce_feth_plt(const struct droce_feth *h) { return be32toh(h->bits) & DROCE_FETH_PLT_MASK; }
static inline unsigned int droce_feth_sel(const struct droce_feth *h)
{
	return (be32toh(h->bits) & DROCE_FETH_SEL_MASK) >> DROCE_FETH_SEL_SHIFT;
}
static inline void droce_feth_set(struct droce_feth *h, unsigned int sel, unsigned int plt)
{
	h->bits = htobe32(((sel << DROCE_FETH_SEL_SHIFT) & DROCE_FETH_SEL_MASK) |
			  (plt & DROCE_FETH_PLT_MASK));
}

_Static_assert(sizeof(struct droce_eth_hdr) == DROCE_ETH_HLEN, "Ethernet header");
_Static_assert(sizeof(struct droce_vlan_hdr) == DROCE_VLAN_HLEN, "802.1Q tag");
_Static_assert(sizeof(struct droce_ipv4_hdr) == DROCE_IPV4_HLEN, "IPv4 header");
_Static_assert(sizeof(struct droce_ipv6_hdr) == DROCE_IPV6_HLEN, "IPv6 header");
_Static_assert(sizeof(struct droce_udp_hdr) == DROCE_UDP_HLEN, "UDP header");
_Static_assert(sizeof(struct droce_bth) == DROCE_BTH_LEN, "BTH");
_Static_assert(sizeof(struct droce_reth) == DROCE_RETH_LEN, "RETH");
_Static_assert(sizeof(struct droce_aeth) == DROCE_AETH_LEN, "AETH");
_Static_assert(sizeof(struct droce_atmeth) == DROCE_ATMETH_LEN, "AtomicETH");
_Static_assert(sizeof(struct droce_atmack) == DROCE_ATMACK_LEN, "AtomicAckETH");
_Static_assert(sizeof(struct droce_immdt) == DROCE_IMMDT_LEN, "ImmDt");
_Static_assert(sizeof(struct droce_ieth) == DROCE_IETH_LEN, "IETH");
_Static_assert(sizeof(struct droce_deth) == DROCE_DETH_LEN, "DETH");
_Static_assert(sizeof(struct droce_feth) == DROCE_FETH_LEN, "FETH");
_Static_assert(sizeof(struct droce_xrceth) == DROCE_XRCETH_LEN, "XRCETH");

#endif /* DROCE_WIRE_HDR_H */
