/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef DROCE_WIRE_PKT_H
#define DROCE_WIRE_PKT_H

/*
 * Whole RoCEv2 packets: segment lists, the ICRC, the builder and the parser.
 *
 * A packet is a list of segments (struct droce_wire_seg), the shape of an mbuf chain
 * (droce_wire_mbuf.h turns one into the other). Every header, from Ethernet to the last
 * extension header, must lie in the first segment; payload, pad and ICRC may be spread
 * over any number of segments. PMDs always put headers in the first segment.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "droce_wire_hdr.h"
#include "droce_wire_opcode.h"

/* Largest payload one packet carries: the largest IB MTU. */
#define DROCE_WIRE_MAX_PAYLOAD	4096
/* Ethernet + VLAN + IPv6 + UDP: what a template holds before the BTH. */
#define DROCE_WIRE_TMPL_MAX	(DROCE_ETH_HLEN + DROCE_VLAN_HLEN + DROCE_IPV6_HLEN + DROCE_UDP_HLEN)
/* The longest extension header set of any opcode (XRC atomics: XRCETH and AtomicETH); the
 * opcode test checks. */
#define DROCE_WIRE_EXT_MAX	(DROCE_XRCETH_LEN + DROCE_ATMETH_LEN)
/* Headers of any packet droce builds: template, BTH, extension headers. */
#define DROCE_WIRE_HDR_MAX	(DROCE_WIRE_TMPL_MAX + DROCE_BTH_LEN + DROCE_WIRE_EXT_MAX)

struct droce_wire_seg {
	const void *data;
	uint32_t len;
};

/* ---------------------------------------------------------------------------------
 * ICRC (IB spec Annex A17.3.3)
 *
 * CRC-32 (IEEE, reflected) over 8 bytes of 0xFF, then the packet from the first byte of
 * the IP header up to the ICRC, with the variant fields (IPv4 TOS, TTL, checksum; IPv6
 * traffic class, flow label, hop limit; UDP checksum; BTH byte 4) taken as all ones.
 * The result goes on the wire least-significant byte first. Values in this API are the
 * CRC as computed (zlib's crc32()); droce_icrc_wire_hex() gives the wire-order view.
 */

/*
 * ICRC of the packet in segs whose IP header starts l3_off bytes in and whose ICRC field
 * starts icrc_off bytes in (both counted from the start of segs[0]). The IP, UDP and BTH
 * headers must lie in segs[0] and the segments must hold icrc_off bytes; the caller
 * checks both (the parser does).
 */
uint32_t droce_icrc_calc(const struct droce_wire_seg *segs, unsigned int nseg,
			 uint32_t l3_off, uint32_t icrc_off);

/* The ICRC as its four wire bytes read big-endian: what tshark and scapy print. */
static inline uint32_t
droce_icrc_wire_hex(uint32_t icrc)
{
	return __builtin_bswap32(icrc);
}

/* ---------------------------------------------------------------------------------
 * Builder
 */

/* Where a flow goes: everything below the BTH that stays the same for a QP. */
struct droce_wire_addr {
	uint8_t src_mac[6];
	uint8_t dst_mac[6];
	bool vlan;		/* insert an 802.1Q tag with vlan_tci */
	uint16_t vlan_tci;
	/*
	 * RoCEv2 GIDs: an IPv4-mapped GID (::ffff:a.b.c.d) makes an IPv4 packet, anything
	 * else IPv6. Source and destination must be of the same family.
	 */
	uint8_t src_gid[16];
	uint8_t dst_gid[16];
	uint8_t traffic_class;	/* IPv4 TOS / IPv6 traffic class: DSCP and ECN */
	uint8_t hop_limit;	/* IPv4 TTL / IPv6 hop limit; 0 means 64 */
	uint32_t flow_label;	/* IPv6 only, 20 bits */
	uint16_t udp_sport;	/* see droce_wire_udp_sport() */
};

/* Prebuilt Ethernet [+ VLAN] + IP + UDP headers for one flow. */
struct droce_wire_tmpl {
	uint8_t bytes[DROCE_WIRE_TMPL_MAX];
	uint8_t len;		/* bytes used: the BTH starts here */
	uint8_t l3_off;
	uint8_t l4_off;
	uint8_t ip_version;	/* 4 or 6 */
	/* IPv4: one's-complement sum of the header without total length and checksum. */
	uint32_t ipv4_partial_csum;
};

/* Per-packet transport fields. Only the headers the opcode carries are read. */
struct droce_wire_hdrs {
	uint8_t opcode;		/* enum droce_opcode */
	bool se;		/* solicited event */
	bool mig;		/* MigReq */
	bool ackreq;
	bool fecn;
	bool becn;
	uint16_t pkey;
	uint32_t dqpn;
	uint32_t psn;
	struct {
		uint64_t va;
		uint32_t rkey;
		uint32_t len;
	} reth;
	struct {
		uint8_t syndrome;
		uint32_t msn;
	} aeth;
	struct {
		uint64_t va;
		uint32_t rkey;
		uint64_t swap_add;
		uint64_t compare;
	} atomic;
	uint64_t atomic_ack_orig;
	uint32_t imm_be;	/* ImmDt, in wire byte order like ibv_send_wr.imm_data */
	uint32_t ieth_rkey;
	struct {
		uint32_t qkey;
		uint32_t src_qp;
	} deth;
	struct {
		uint8_t sel;
		uint8_t plt;
	} feth;
	uint32_t xrc_srqn;	/* XRCETH */
};

/* Builds a template; -EINVAL when the GIDs are of different families. */
int droce_wire_tmpl_init(struct droce_wire_tmpl *tmpl, const struct droce_wire_addr *addr);

/*
 * The UDP source port Linux RoCE drivers use for a QP pair: a flow label from the two
 * QPNs folded into 0xC000..0xFFFF. Symmetric in its arguments.
 */
uint16_t droce_wire_udp_sport(uint32_t lqpn, uint32_t rqpn);

/* Pad bytes after payload_len bytes of payload (BTH.PadCnt). */
static inline unsigned int
droce_wire_pad(uint32_t payload_len)
{
	return -payload_len & 3u;
}

/*
 * Writes all headers of one packet (template, BTH, extension headers) to hdr, with the
 * IP and UDP lengths, the IPv4 checksum and BTH.PadCnt set for payload_len bytes of
 * payload. Returns the header length, or -EINVAL for an unknown opcode or a payload
 * the opcode does not allow (any on an opcode without payload, over 4096 bytes, not a
 * multiple of 4 on a FIRST or MIDDLE packet, not 8 on an ATOMIC WRITE), or -ENOSPC
 * when cap is too small. It may write any of the first DROCE_WIRE_TMPL_MAX bytes of hdr
 * within cap: place the payload after the call.
 */
int droce_wire_build_hdrs(const struct droce_wire_tmpl *tmpl, const struct droce_wire_hdrs *h,
			  uint32_t payload_len, void *hdr, uint32_t cap);

/*
 * Completes a packet whose headers (from droce_wire_build_hdrs) and payload are already
 * in segs[0..nseg-1]: writes the pad bytes and the ICRC, droce_wire_pad(payload) + 4
 * bytes, to trailer. The segments must hold exactly the headers and payload.
 */
void droce_wire_build_trailer(const struct droce_wire_tmpl *tmpl,
			      const struct droce_wire_seg *segs, unsigned int nseg,
			      void *trailer);

/*
 * The ICRC of a contiguous packet whose headers, payload and pad are in place, written to
 * its last four bytes (icrc_off = its length - 4). droce_wire_build_trailer() in two
 * steps, for a caller that writes the pad when it builds the packet and the ICRCs of a
 * whole burst together, just before transmitting it: each ICRC is a chain of dependent
 * carry-less multiplications, and a core overlaps the chains of several packets only when
 * they are computed one after another (doc/engine.md, "ICRCs by the burst").
 */
void droce_wire_icrc_fill(void *pkt, uint32_t l3_off, uint32_t icrc_off);

/*
 * Builds a whole packet into one buffer: headers, the payload gathered from its
 * segments, pad and ICRC. Returns the packet length or a negative errno as
 * droce_wire_build_hdrs does.
 */
int droce_wire_build(const struct droce_wire_tmpl *tmpl, const struct droce_wire_hdrs *h,
		     const struct droce_wire_seg *payload, unsigned int npayload,
		     void *out, uint32_t cap);

/* ---------------------------------------------------------------------------------
 * Parser
 */

/*
 * Parse outcomes: X(name, foreign, description). The foreign ones are decided before the
 * UDP destination port is known to be 4791: the packet is not RoCEv2, or cannot be told
 * to be (a capture or a port may carry other traffic). The others mean it is RoCEv2 and
 * malformed.
 */
#define DROCE_WIRE_RESULT_LIST(X) \
	X(OK, 0, "ok") \
	X(NOT_IP, 1, "not IPv4 or IPv6") \
	X(NOT_UDP, 1, "not UDP") \
	X(NOT_ROCE_PORT, 1, "UDP destination port is not 4791") \
	X(IP_FRAGMENT, 1, "IP fragment") \
	X(RUNT, 1, "frame ends before the UDP destination port") \
	X(BAD_IP_VERSION, 1, "IP version does not match the ethertype") \
	X(BAD_IP_HDR_LEN, 1, "bad IPv4 header length") \
	X(TRUNCATED, 0, "frame ends inside the RoCEv2 headers") \
	X(BAD_IP_CSUM, 0, "bad IPv4 header checksum") \
	X(BAD_IP_LEN, 0, "bad IP length") \
	X(BAD_UDP_LEN, 0, "bad UDP length") \
	X(BAD_TVER, 0, "BTH transport version is not 0") \
	X(UNKNOWN_OPCODE, 0, "unknown opcode") \
	X(SHORT_FOR_OPCODE, 0, "too short for the opcode's headers") \
	X(BAD_PAD_ALIGN, 0, "payload and pad not a multiple of 4 bytes") \
	X(BAD_PAD, 0, "pad count not allowed for this packet") \
	X(BAD_PAYLOAD_LEN, 0, "payload length not allowed for this opcode") \
	X(HDR_SPLIT, 0, "headers not all in the first segment") \
	X(BAD_ICRC, 0, "bad ICRC")

enum droce_wire_result {
#define DROCE_WIRE_RESULT_ENUM(name, foreign, desc) DROCE_WIRE_##name,
	DROCE_WIRE_RESULT_LIST(DROCE_WIRE_RESULT_ENUM)
#undef DROCE_WIRE_RESULT_ENUM
	DROCE_WIRE_RESULT_COUNT
};

/* Which parts of a droce_wire_pkt the parser filled in before it stopped. */
enum droce_wire_layer {
	DROCE_WIRE_HAVE_L2 = 1u << 0,	/* eth_off, vlan */
	DROCE_WIRE_HAVE_L3 = 1u << 1,	/* l3_off, ip_version */
	DROCE_WIRE_HAVE_L4 = 1u << 2,	/* l4_off; UDP port 4791 seen (header may be TRUNCATED) */
	DROCE_WIRE_HAVE_BTH = 1u << 3,	/* bth_off */
	DROCE_WIRE_HAVE_ALL = 1u << 4,	/* opcode info, payload, pad, ICRC */
};

/* A parsed packet: offsets into the packet, all counted from the start of segs[0]. */
struct droce_wire_pkt {
	const uint8_t *hdr;	/* segs[0].data */
	const struct droce_opcode_info *info;
	uint32_t layers;	/* enum droce_wire_layer */
	bool vlan;
	uint16_t vlan_tci;
	uint8_t ip_version;
	uint16_t l3_off;
	uint16_t l4_off;
	uint16_t bth_off;
	uint32_t payload_off;
	uint32_t payload_len;	/* without pad */
	uint8_t pad;
	uint32_t icrc_off;
	uint32_t len;		/* through the ICRC: any Ethernet padding after it excluded */
	uint32_t icrc;		/* as received (same convention as droce_icrc_calc) */
	uint32_t icrc_calc;	/* as computed; valid when icrc was checked */
};

/* Parser options. */
enum droce_wire_parse_flag {
	DROCE_WIRE_PARSE_NO_ICRC = 1u << 0,	/* skip the ICRC check (NIC verified it) */
	DROCE_WIRE_PARSE_L3 = 1u << 1,		/* segs start at the IP header, no Ethernet */
	DROCE_WIRE_PARSE_IP_CSUM_OK = 1u << 2,	/* the NIC verified the IPv4 header checksum */
};

/*
 * Parses and validates one packet. Safe on any bytes. Returns DROCE_WIRE_OK with pkt
 * complete, or the first reason found to reject it, with pkt filled as far as
 * pkt->layers says. On DROCE_WIRE_BAD_ICRC the whole view is valid, icrc_calc included.
 */
enum droce_wire_result droce_wire_parse(const struct droce_wire_seg *segs, unsigned int nseg,
					uint32_t flags, struct droce_wire_pkt *pkt);

/*
 * Reads the ICRC field at pkt->icrc_off into pkt->icrc and computes pkt->icrc_calc over
 * the packet whose IP header starts at pkt->l3_off; true when the two are equal. The
 * IP, UDP and BTH headers must lie in segs[0], icrc_off must be at or after the end of
 * the BTH and the segments must hold icrc_off + 4 bytes: the caller has located the
 * headers. droce_wire_parse() ends with it; droce_wire_malformed_icrc() uses it too.
 */
bool droce_wire_icrc_check(const struct droce_wire_seg *segs, unsigned int nseg,
			   struct droce_wire_pkt *pkt);

/*
 * The ICRC verdict of a packet the parser rejected as malformed: X(name, description).
 * OK and BAD say it was checked; the others say why it could not be.
 */
#define DROCE_WIRE_ICRC_STATUS_LIST(X) \
	X(OK, "ICRC matches") \
	X(BAD, "ICRC does not match") \
	X(NOT_ROCE, "not known to be RoCEv2") \
	X(CUT, "frame ends before the ICRC") \
	X(NO_ROOM, "IP and UDP lengths leave no room for a BTH and an ICRC") \
	X(HDR_SPLIT, "headers not all in the first segment")

enum droce_wire_icrc_status {
#define DROCE_WIRE_ICRC_STATUS_ENUM(name, desc) DROCE_WIRE_ICRC_##name,
	DROCE_WIRE_ICRC_STATUS_LIST(DROCE_WIRE_ICRC_STATUS_ENUM)
#undef DROCE_WIRE_ICRC_STATUS_ENUM
	DROCE_WIRE_ICRC_STATUS_COUNT
};

/*
 * Checks the ICRC of a packet droce_wire_parse() rejected as malformed (a result neither
 * foreign, OK nor BAD_ICRC), with pkt as the parser left it, so that a reader can tell a
 * packet damaged on the way (bad ICRC) from one its sender built wrong (good ICRC).
 * The ICRC is the last 4 bytes of the IP packet by its IP length or, when that length
 * runs past the frame or leaves no room for a BTH and an ICRC, of the UDP datagram by
 * its UDP length. Returns DROCE_WIRE_ICRC_OK or _BAD with pkt->icrc_off, icrc and
 * icrc_calc set (nothing else in pkt changes), or why the ICRC cannot be computed:
 * NOT_ROCE (pkt lacks DROCE_WIRE_HAVE_L4: the parser never saw UDP port 4791), CUT (a
 * length runs past the end of the frame), NO_ROOM (both lengths too short), HDR_SPLIT
 * (IP, UDP and BTH not all in segs[0]). Not for the receive path: the engine drops
 * malformed packets unchecked. Safe on any bytes.
 */
enum droce_wire_icrc_status droce_wire_malformed_icrc(const struct droce_wire_seg *segs,
							unsigned int nseg,
							struct droce_wire_pkt *pkt);

/* "ICRC matches", "frame ends before the ICRC" and the like; "unknown" out of range. */
const char *droce_wire_icrc_status_str(enum droce_wire_icrc_status s);

/* "bad ICRC" and the like; "unknown" for a value out of range. */
const char *droce_wire_result_str(enum droce_wire_result r);
/* "BAD_ICRC" and the like. */
const char *droce_wire_result_name(enum droce_wire_result r);
/* True when r says the packet is not RoCEv2 at all rather than malformed. */
bool droce_wire_result_is_foreign(enum droce_wire_result r);

/* ---- Layer two of the accessors: headers of a parsed packet ---- */

static inline const struct droce_bth *
droce_pkt_bth(const struct droce_wire_pkt *pkt)
{
	return (const struct droce_bth *)(pkt->hdr + pkt->bth_off);
}

/* The IPv4 TOS or IPv6 traffic class (DSCP and ECN) of a packet parsed to its L3. */
static inline uint8_t
droce_pkt_tclass(const struct droce_wire_pkt *pkt)
{
	const uint8_t *ip = pkt->hdr + pkt->l3_off;

	return pkt->ip_version == 4 ? ((const struct droce_ipv4_hdr *)ip)->tos :
	       droce_ipv6_tclass((const struct droce_ipv6_hdr *)ip);
}

/* Extension header h of a fully parsed packet, or NULL when its opcode has none. */
static inline const void *
droce_pkt_ext(const struct droce_wire_pkt *pkt, enum droce_ext_hdr h)
{
	if (!(pkt->info->ext_mask & DROCE_EXT_BIT(h)))
		return NULL;
	return pkt->hdr + pkt->bth_off + pkt->info->ext_off[h];
}

static inline const struct droce_reth *droce_pkt_reth(const struct droce_wire_pkt *p) { return droce_pkt_ext(p, DROCE_EXT_RETH); }
static inline const struct droce_aeth *droce_pkt_aeth(const struct droce_wire_pkt *p) { return droce_pkt_ext(p, DROCE_EXT_AETH); }
static inline const struct droce_atmeth *droce_pkt_atmeth(const struct droce_wire_pkt *p) { return droce_pkt_ext(p, DROCE_EXT_ATMETH); }
static inline const struct droce_atmack *droce_pkt_atmack(const struct droce_wire_pkt *p) { return droce_pkt_ext(p, DROCE_EXT_ATMACK); }
static inline const struct droce_immdt *droce_pkt_immdt(const struct droce_wire_pkt *p) { return droce_pkt_ext(p, DROCE_EXT_IMMDT); }
static inline const struct droce_ieth *droce_pkt_ieth(const struct droce_wire_pkt *p) { return droce_pkt_ext(p, DROCE_EXT_IETH); }
static inline const struct droce_deth *droce_pkt_deth(const struct droce_wire_pkt *p) { return droce_pkt_ext(p, DROCE_EXT_DETH); }
static inline const struct droce_xrceth *droce_pkt_xrceth(const struct droce_wire_pkt *p) { return droce_pkt_ext(p, DROCE_EXT_XRCETH); }
static inline const struct droce_feth *droce_pkt_feth(const struct droce_wire_pkt *p) { return droce_pkt_ext(p, DROCE_EXT_FETH); }

static inline const struct droce_udp_hdr *
droce_pkt_udp(const struct droce_wire_pkt *pkt)
{
	return (const struct droce_udp_hdr *)(pkt->hdr + pkt->l4_off);
}

static inline const struct droce_ipv4_hdr *
droce_pkt_ipv4(const struct droce_wire_pkt *pkt)
{
	return pkt->ip_version == 4 ? (const void *)(pkt->hdr + pkt->l3_off) : NULL;
}

static inline const struct droce_ipv6_hdr *
droce_pkt_ipv6(const struct droce_wire_pkt *pkt)
{
	return pkt->ip_version == 6 ? (const void *)(pkt->hdr + pkt->l3_off) : NULL;
}

/*
 * Copies up to cap bytes of payload starting offset bytes into the payload, walking the
 * segments; returns the count copied.
 */
uint32_t droce_wire_payload_copy(const struct droce_wire_pkt *pkt,
				 const struct droce_wire_seg *segs, unsigned int nseg,
				 uint32_t offset, void *dst, uint32_t cap);

#endif /* DROCE_WIRE_PKT_H */
