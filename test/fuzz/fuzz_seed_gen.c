/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Writes the seed corpus of fuzz_wire_parse into a directory, one input per file, made
 * with lib/wire's builder: every opcode with a few payload sizes, over IPv4 and IPv6,
 * with and without an 802.1Q tag, cycling through the parse modes and segment splits;
 * then packets broken in one way each. Every seed is parsed here as well and must give
 * the outcome it was made for, so the corpus reaches the branches its names say.
 *
 * Usage: fuzz_seed_gen DIR
 */

#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "droce_wire.h"
#include "fuzz_wire_input.h"

/* Room for the largest packet plus what the broken ones add (options, extra payload). */
#define SEED_CAP	(DROCE_WIRE_HDR_MAX + DROCE_WIRE_MAX_PAYLOAD + 64)
#define SEED_NAME_MAX	96
#define SEED_VLAN_TCI	0x2064	/* PCP 1, VID 100 */

/* Payload sizes tried for every opcode that carries payload: none, padded, small, MTU. */
static const uint32_t payload_sizes[] = { 0, 3, 64, DROCE_WIRE_MAX_PAYLOAD };

/* Segment lengths in the slots a seed does not use (see emit()). */
static const uint16_t spare_split[FUZZ_MAX_SEGS - 1] = {
	DROCE_WIRE_HDR_MAX, 40, 0, 9, 1, 300, 3
};

/* Parse modes cycled over the valid packets: see emit_valid(). */
enum seed_mode {
	MODE_PLAIN,
	MODE_NO_ICRC,
	MODE_L3,
	MODE_SPLIT,
	MODE_COUNT
};

/* Broken-packet values, each one field away from a valid packet. */
#define IPV4_OPT_NOP		0x01	/* RFC 791 No Operation option */
#define IPV4_OPT_LEN		8	/* two words of options */
#define IPV4_BAD_IHL		4	/* 16 bytes: shorter than any IPv4 header */
#define OPCODE_UNKNOWN		0x1F	/* reserved in RC (table 38) */
#define NOT_ROCE_PORT		(DROCE_ROCEV2_UDP_PORT + 1)
#define IPPROTO_TCP_VALUE	6
#define ETHERTYPE_ARP		0x0806
#define ETH_MIN_FRAME		60	/* without FCS: shorter frames are padded */
#define BAD_TVER		1
#define TRUNCATED_LEN		30	/* inside the IP header */
#define SPLIT_IN_IP		10	/* bytes of the IP header in the first segment */

struct gen {
	const char *dir;
	unsigned int count;
	int failed;
};

/* A packet under construction and where its layers start. */
struct seed_pkt {
	uint8_t b[SEED_CAP];
	uint32_t len;
	uint32_t l3_off;
	uint32_t l4_off;
	uint32_t bth_off;
	uint8_t ip_version;
};

/* One input: control bytes, segment lengths (the last takes the rest) and packet. */
struct seed {
	const char *name;
	uint8_t fuzz_flags;	/* FUZZ_CTL_L3, FUZZ_CTL_NO_ICRC */
	unsigned int nseg;
	uint32_t seg_len[FUZZ_MAX_SEGS - 1];
	const uint8_t *bytes;
	uint32_t len;
	enum droce_wire_result expect;
};

static uint32_t
parse_flags(uint8_t fuzz_flags)
{
	return (fuzz_flags & FUZZ_CTL_L3 ? DROCE_WIRE_PARSE_L3 : 0) |
	       (fuzz_flags & FUZZ_CTL_NO_ICRC ? DROCE_WIRE_PARSE_NO_ICRC : 0);
}

static void
put_le16(uint8_t *p, uint32_t v)
{
	p[0] = v & 0xFF;
	p[1] = (v >> 8) & 0xFF;
}

/* Parses the seed as the fuzzer will and writes it; a wrong outcome fails the run. */
static void
emit(struct gen *g, const struct seed *s)
{
	uint8_t ctl[FUZZ_CTL_LEN] = { 0 };
	struct droce_wire_seg segs[FUZZ_MAX_SEGS];
	char path[PATH_MAX];
	struct droce_wire_pkt pkt;
	enum droce_wire_result r;
	uint32_t off = 0;
	unsigned int i;
	int bad;
	FILE *f;

	g->count++;
	ctl[0] = fuzz_ctl(s->fuzz_flags, s->nseg);
	/* Vary the payload-copy window and the re-split shape from seed to seed. */
	put_le16(ctl + 1, g->count * 37u);
	put_le16(ctl + 3, g->count * 53u);
	ctl[5] = (uint8_t)g->count;
	/* Lengths for the slots the seed does not use, so that raising the segment count
	 * by mutation gives useful splits: the headers whole, then assorted cuts. */
	for (i = 0; i + 1 < FUZZ_MAX_SEGS; i++)
		put_le16(ctl + FUZZ_SPLIT_OFF + i * FUZZ_SPLIT_LEN, spare_split[i]);
	for (i = 0; i + 1 < s->nseg; i++) {
		put_le16(ctl + FUZZ_SPLIT_OFF + i * FUZZ_SPLIT_LEN, s->seg_len[i]);
		segs[i].data = s->bytes + off;
		segs[i].len = s->seg_len[i];
		off += s->seg_len[i];
	}
	segs[i].data = s->bytes + off;
	segs[i].len = s->len - off;

	r = droce_wire_parse(segs, s->nseg, parse_flags(s->fuzz_flags), &pkt);
	if (r != s->expect) {
		fprintf(stderr, "seed %s: parses as %s, made for %s\n", s->name,
			droce_wire_result_name(r), droce_wire_result_name(s->expect));
		g->failed = 1;
		return;
	}

	snprintf(path, sizeof(path), "%s/%04u-%s", g->dir, g->count, s->name);
	f = fopen(path, "wb");
	if (f == NULL) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		g->failed = 1;
		return;
	}
	bad = fwrite(ctl, 1, sizeof(ctl), f) != sizeof(ctl) ||
	      (s->len != 0 && fwrite(s->bytes, 1, s->len, f) != s->len);
	if (fclose(f) != 0 || bad) {
		fprintf(stderr, "%s: write failed\n", path);
		g->failed = 1;
	}
}

/* A single-segment seed parsed in Ethernet mode with the ICRC checked. */
static void
emit_plain(struct gen *g, const char *name, const struct seed_pkt *p,
	   enum droce_wire_result expect)
{
	struct seed s = {
		.name = name, .nseg = 1, .bytes = p->b, .len = p->len, .expect = expect,
	};

	emit(g, &s);
}

static void
fill_addr(struct droce_wire_addr *a, int v6, int vlan)
{
	static const uint8_t src_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 };
	static const uint8_t dst_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 };
	/* IPv4-mapped GIDs of 192.0.2.1 and .2 (RFC 5737), or fe80::1 and ::2. */
	static const uint8_t v4_src[16] = { [10] = 0xFF, [11] = 0xFF, 192, 0, 2, 1 };
	static const uint8_t v4_dst[16] = { [10] = 0xFF, [11] = 0xFF, 192, 0, 2, 2 };
	static const uint8_t v6_src[16] = { 0xFE, 0x80, [15] = 1 };
	static const uint8_t v6_dst[16] = { 0xFE, 0x80, [15] = 2 };

	memset(a, 0, sizeof(*a));
	memcpy(a->src_mac, src_mac, sizeof(src_mac));
	memcpy(a->dst_mac, dst_mac, sizeof(dst_mac));
	a->vlan = vlan;
	a->vlan_tci = SEED_VLAN_TCI;
	memcpy(a->src_gid, v6 ? v6_src : v4_src, sizeof(a->src_gid));
	memcpy(a->dst_gid, v6 ? v6_dst : v4_dst, sizeof(a->dst_gid));
	a->traffic_class = 0x6A;	/* DSCP 26, ECT(0) */
	a->flow_label = 0x12345;
	a->udp_sport = droce_wire_udp_sport(0x11, 0x22);
}

static void
fill_hdrs(struct droce_wire_hdrs *h, uint8_t opcode, uint32_t payload_len)
{
	memset(h, 0, sizeof(*h));
	h->opcode = opcode;
	h->se = 1;
	h->ackreq = 1;
	h->pkey = DROCE_PKEY_DEFAULT;
	h->dqpn = 0x123456;
	h->psn = 0xFFFFFE;		/* next to the 24-bit wrap */
	h->reth.va = 0x00007F0012345678ull;
	h->reth.rkey = 0x1234;
	h->reth.len = payload_len;
	h->aeth.syndrome = DROCE_AETH_ACK | DROCE_AETH_CREDITS_INVALID;
	h->aeth.msn = 7;
	h->atomic.va = 0x00007F0000001000ull;
	h->atomic.rkey = 0x5678;
	h->atomic.swap_add = 1;
	h->atomic.compare = 2;
	h->atomic_ack_orig = 3;
	h->imm_be = htobe32(0xC0FFEE);
	h->ieth_rkey = 0x9ABC;
	h->deth.qkey = 0x11111111;
	h->deth.src_qp = 0x22;
	h->feth.sel = 1;
	h->feth.plt = 1;
	h->xrc_srqn = 0xABCDEF;
}

/* Builds one packet with the builder; -1 when it refuses the combination. */
static int
build(struct seed_pkt *p, uint8_t opcode, uint32_t payload_len, int v6, int vlan)
{
	uint8_t payload[DROCE_WIRE_MAX_PAYLOAD];
	struct droce_wire_seg seg = { .data = payload, .len = payload_len };
	struct droce_wire_tmpl tmpl;
	struct droce_wire_addr addr;
	struct droce_wire_hdrs h;
	uint32_t i;
	int len;

	for (i = 0; i < payload_len; i++)
		payload[i] = (uint8_t)(i * 7 + 1);
	fill_addr(&addr, v6, vlan);
	fill_hdrs(&h, opcode, payload_len);
	if (droce_wire_tmpl_init(&tmpl, &addr) != 0)
		return -1;
	len = droce_wire_build(&tmpl, &h, &seg, 1, p->b, sizeof(p->b));
	if (len < 0)
		return -1;
	p->len = (uint32_t)len;
	p->l3_off = tmpl.l3_off;
	p->l4_off = tmpl.l4_off;
	p->bth_off = tmpl.len;
	p->ip_version = tmpl.ip_version;
	return 0;
}

/*
 * Makes the IP and UDP lengths, the IPv4 checksum and the ICRC right again after an
 * edit, so that a broken seed is broken only where it was meant to be.
 */
static void
fix_up(struct seed_pkt *p)
{
	struct droce_udp_hdr *udp = (struct droce_udp_hdr *)(p->b + p->l4_off);
	struct droce_wire_seg seg = { .data = p->b, .len = p->len };
	uint32_t icrc_off = p->len - DROCE_ICRC_LEN;
	uint32_t icrc;

	if (p->ip_version == 4) {
		struct droce_ipv4_hdr *ip = (struct droce_ipv4_hdr *)(p->b + p->l3_off);

		droce_ipv4_set_total_len(ip, (uint16_t)(p->len - p->l3_off));
		ip->csum = 0;
		ip->csum = htobe16((uint16_t)~fuzz_csum16((const uint8_t *)ip,
							  droce_ipv4_hdr_len(ip)));
	} else {
		droce_ipv6_set_payload_len((struct droce_ipv6_hdr *)(p->b + p->l3_off),
					   (uint16_t)(p->len - p->l4_off));
	}
	droce_udp_set_len(udp, (uint16_t)(p->len - p->l4_off));
	icrc = droce_icrc_calc(&seg, 1, p->l3_off, icrc_off);
	p->b[icrc_off + 0] = icrc & 0xFF;
	p->b[icrc_off + 1] = (icrc >> 8) & 0xFF;
	p->b[icrc_off + 2] = (icrc >> 16) & 0xFF;
	p->b[icrc_off + 3] = icrc >> 24;
}

/* Inserts n bytes of value v at off (n may be negative: removes bytes there). */
static void
splice(struct seed_pkt *p, uint32_t off, int n, uint8_t v)
{
	memmove(p->b + off + n, p->b + off, p->len - off);
	if (n > 0)
		memset(p->b + off, v, (size_t)n);
	p->len += n;
}

/* Every opcode x payload size x IPv4/IPv6 x VLAN, cycling the parse mode. */
static void
emit_valid(struct gen *g)
{
	struct seed_pkt p;
	char name[SEED_NAME_MAX];
	unsigned int op, k, mode;
	int v6, vlan;

	for (op = 0; op < 256; op++) {
		const struct droce_opcode_info *oi = droce_opcode_info((uint8_t)op);

		if (oi == NULL)
			continue;
		for (k = 0; k < sizeof(payload_sizes) / sizeof(payload_sizes[0]); k++) {
			uint32_t size = payload_sizes[k];

			if (oi->payload_fixed != 0)
				size = k == 0 ? oi->payload_fixed : UINT32_MAX;
			else if (!(oi->flags & DROCE_OPF_PAYLOAD) && size != 0)
				size = UINT32_MAX;
			/* 9.2.4: only a LAST or ONLY packet may be padded. */
			else if (!(oi->flags & DROCE_OPF_LAST) && droce_wire_pad(size) != 0)
				size = UINT32_MAX;
			if (size == UINT32_MAX)
				continue;
			for (v6 = 0; v6 < 2; v6++) {
				for (vlan = 0; vlan < 2; vlan++) {
					struct seed s = { .name = name, .nseg = 1,
							  .expect = DROCE_WIRE_OK };

					/* Spread the modes over opcodes, sizes and families. */
					mode = (op + k + 2 * v6 + vlan) % MODE_COUNT;

					if (build(&p, (uint8_t)op, size, v6, vlan) != 0) {
						fprintf(stderr, "builder refused %s/%u\n",
							oi->name, size);
						g->failed = 1;
						continue;
					}
					s.bytes = p.b;
					s.len = p.len;
					switch (mode) {
					case MODE_NO_ICRC:
						s.fuzz_flags = FUZZ_CTL_NO_ICRC;
						break;
					case MODE_L3:
						s.fuzz_flags = FUZZ_CTL_L3;
						s.bytes += p.l3_off;
						s.len -= p.l3_off;
						break;
					case MODE_SPLIT:
						/* headers | half the rest | empty | the rest */
						s.nseg = 4;
						s.seg_len[0] = p.bth_off + oi->hdr_len;
						s.seg_len[1] = (p.len - s.seg_len[0]) / 2;
						s.seg_len[2] = 0;
						break;
					default:
						break;
					}
					snprintf(name, sizeof(name), "%s-%u-%s%s-m%u", oi->name, size,
						 v6 ? "v6" : "v4", vlan ? "-vlan" : "", mode);
					emit(g, &s);
				}
			}
		}
	}
}

/* IPv4 packets broken in one place each, from an RC SEND ONLY with 64 bytes. */
static void
emit_broken_v4(struct gen *g)
{
	struct seed_pkt base, p;
	struct droce_ipv4_hdr *ip;
	struct droce_udp_hdr *udp;
	struct droce_bth *bth;

	if (build(&base, DROCE_OP_RC_SEND_ONLY, 64, 0, 0) != 0) {
		g->failed = 1;
		return;
	}
#define FRESH() do { \
		p = base; \
		ip = (struct droce_ipv4_hdr *)(p.b + p.l3_off); \
		udp = (struct droce_udp_hdr *)(p.b + p.l4_off); \
		bth = (struct droce_bth *)(p.b + p.bth_off); \
	} while (0)

	FRESH();
	p.b[p.len - DROCE_ICRC_LEN - 1] ^= 1;	/* last payload byte */
	emit_plain(g, "bad-icrc-v4", &p, DROCE_WIRE_BAD_ICRC);

	FRESH();
	p.len = 0;
	emit_plain(g, "empty", &p, DROCE_WIRE_RUNT);

	FRESH();
	p.len = TRUNCATED_LEN;
	emit_plain(g, "truncated-in-ip", &p, DROCE_WIRE_RUNT);

	FRESH();
	p.len -= DROCE_ICRC_LEN / 2;
	emit_plain(g, "truncated-in-icrc", &p, DROCE_WIRE_BAD_IP_LEN);

	FRESH();
	{
		struct seed s = { .name = "hdr-split-in-ip", .nseg = 2,
				  .seg_len = { p.l3_off + SPLIT_IN_IP },
				  .bytes = p.b, .len = p.len, .expect = DROCE_WIRE_HDR_SPLIT };

		emit(g, &s);
	}

	FRESH();
	ip->csum ^= htobe16(1);
	emit_plain(g, "bad-ip-csum", &p, DROCE_WIRE_BAD_IP_CSUM);

	FRESH();
	splice(&p, p.l4_off, IPV4_OPT_LEN, IPV4_OPT_NOP);
	ip->ver_ihl += IPV4_OPT_LEN / 4;
	p.l4_off += IPV4_OPT_LEN;
	p.bth_off += IPV4_OPT_LEN;
	fix_up(&p);
	emit_plain(g, "ipv4-options", &p, DROCE_WIRE_OK);

	FRESH();
	ip->ver_ihl = (ip->ver_ihl & 0xF0) | IPV4_BAD_IHL;
	emit_plain(g, "bad-ihl", &p, DROCE_WIRE_BAD_IP_HDR_LEN);

	FRESH();
	droce_udp_set_len(udp, droce_udp_len(udp) + 4);
	emit_plain(g, "bad-udp-len", &p, DROCE_WIRE_BAD_UDP_LEN);

	FRESH();
	droce_ipv4_set_total_len(ip, DROCE_IPV4_HLEN + DROCE_UDP_HLEN / 2);
	ip->csum = 0;
	ip->csum = htobe16((uint16_t)~fuzz_csum16((const uint8_t *)ip, DROCE_IPV4_HLEN));
	emit_plain(g, "ip-len-short", &p, DROCE_WIRE_BAD_IP_LEN);

	FRESH();
	udp->dport = htobe16(NOT_ROCE_PORT);
	emit_plain(g, "not-roce-port", &p, DROCE_WIRE_NOT_ROCE_PORT);

	FRESH();
	ip->proto = IPPROTO_TCP_VALUE;
	emit_plain(g, "not-udp-v4", &p, DROCE_WIRE_NOT_UDP);

	FRESH();
	ip->frag |= htobe16(DROCE_IPV4_MF);
	emit_plain(g, "ip-fragment", &p, DROCE_WIRE_IP_FRAGMENT);

	FRESH();
	droce_eth_set_type((struct droce_eth_hdr *)p.b, ETHERTYPE_ARP);
	emit_plain(g, "not-ip", &p, DROCE_WIRE_NOT_IP);

	FRESH();
	ip->ver_ihl = (ip->ver_ihl & 0x0F) | 6 << 4;
	emit_plain(g, "bad-ip-version-v4", &p, DROCE_WIRE_BAD_IP_VERSION);

	FRESH();
	bth->flags |= BAD_TVER;
	emit_plain(g, "bad-tver", &p, DROCE_WIRE_BAD_TVER);

	FRESH();
	bth->opcode = OPCODE_UNKNOWN;
	emit_plain(g, "unknown-opcode", &p, DROCE_WIRE_UNKNOWN_OPCODE);

	FRESH();
	splice(&p, p.len - DROCE_ICRC_LEN - 2, -2, 0);
	fix_up(&p);
	emit_plain(g, "bad-pad-align", &p, DROCE_WIRE_BAD_PAD_ALIGN);

	FRESH();
	splice(&p, p.len - DROCE_ICRC_LEN, DROCE_WIRE_MAX_PAYLOAD, 0xA5);
	fix_up(&p);
	emit_plain(g, "payload-too-long", &p, DROCE_WIRE_BAD_PAYLOAD_LEN);

	FRESH();
	memset(p.b + p.len, 0, ETH_MIN_FRAME);
	p.len += ETH_MIN_FRAME;
	emit_plain(g, "ethernet-padding", &p, DROCE_WIRE_OK);
	{
		struct seed s = { .name = "l3-not-ip", .fuzz_flags = FUZZ_CTL_L3, .nseg = 1,
				  .bytes = p.b + p.l3_off, .len = p.len - p.l3_off,
				  .expect = DROCE_WIRE_NOT_IP };

		ip->ver_ihl = (ip->ver_ihl & 0x0F) | 5 << 4;
		emit(g, &s);
	}
#undef FRESH
}

/* Opcode-level breakage: headers, pads and payloads the opcode does not allow. */
static void
emit_broken_opcode(struct gen *g)
{
	struct seed_pkt p;
	struct droce_bth *bth;

	if (build(&p, DROCE_OP_RC_SEND_ONLY, 0, 0, 0) != 0)
		goto fail;
	((struct droce_bth *)(p.b + p.bth_off))->opcode = DROCE_OP_RC_RDMA_WRITE_ONLY;
	emit_plain(g, "short-for-opcode", &p, DROCE_WIRE_SHORT_FOR_OPCODE);

	if (build(&p, DROCE_OP_RC_SEND_ONLY, 0, 1, 1) != 0)
		goto fail;
	bth = (struct droce_bth *)(p.b + p.bth_off);
	bth->flags |= 3 << DROCE_BTH_PAD_SHIFT;
	fix_up(&p);
	emit_plain(g, "pad-longer-than-data", &p, DROCE_WIRE_BAD_PAD);

	if (build(&p, DROCE_OP_RC_SEND_FIRST, 64, 0, 1) != 0)
		goto fail;
	bth = (struct droce_bth *)(p.b + p.bth_off);
	bth->flags |= 1 << DROCE_BTH_PAD_SHIFT;
	fix_up(&p);
	emit_plain(g, "pad-on-first", &p, DROCE_WIRE_BAD_PAD);

	if (build(&p, DROCE_OP_RC_ACKNOWLEDGE, 0, 1, 0) != 0)
		goto fail;
	splice(&p, p.len - DROCE_ICRC_LEN, 4, 0x5A);
	fix_up(&p);
	emit_plain(g, "payload-on-ack", &p, DROCE_WIRE_BAD_PAYLOAD_LEN);

	if (build(&p, DROCE_OP_RC_ATOMIC_WRITE, 8, 0, 0) != 0)
		goto fail;
	splice(&p, p.len - DROCE_ICRC_LEN, -4, 0);
	fix_up(&p);
	emit_plain(g, "atomic-write-4-bytes", &p, DROCE_WIRE_BAD_PAYLOAD_LEN);
	return;
fail:
	fprintf(stderr, "builder refused a base packet\n");
	g->failed = 1;
}

/* IPv6 packets broken in one place each, from an RC RDMA WRITE FIRST with a VLAN tag. */
static void
emit_broken_v6(struct gen *g)
{
	struct seed_pkt base, p;
	struct droce_ipv6_hdr *ip;

	if (build(&base, DROCE_OP_RC_RDMA_WRITE_FIRST, 64, 1, 1) != 0) {
		g->failed = 1;
		return;
	}
	p = base;
	p.b[p.len - DROCE_ICRC_LEN] ^= 0x80;
	emit_plain(g, "bad-icrc-v6", &p, DROCE_WIRE_BAD_ICRC);

	p = base;
	ip = (struct droce_ipv6_hdr *)(p.b + p.l3_off);
	ip->next_hdr = IPPROTO_TCP_VALUE;
	emit_plain(g, "not-udp-v6", &p, DROCE_WIRE_NOT_UDP);

	p = base;
	ip = (struct droce_ipv6_hdr *)(p.b + p.l3_off);
	ip->vtc_flow = htobe32((be32toh(ip->vtc_flow) & 0x0FFFFFFF) | 4u << 28);
	emit_plain(g, "bad-ip-version-v6", &p, DROCE_WIRE_BAD_IP_VERSION);

	p = base;
	ip = (struct droce_ipv6_hdr *)(p.b + p.l3_off);
	droce_ipv6_set_payload_len(ip, droce_ipv6_payload_len(ip) + 4);
	emit_plain(g, "ip-len-long-v6", &p, DROCE_WIRE_BAD_IP_LEN);
}

int
main(int argc, char **argv)
{
	struct gen g = { 0 };

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n"
			"Writes the fuzz_wire_parse seed corpus into DIR (which must exist).\n",
			argv[0]);
		return 2;
	}
	g.dir = argv[1];
	emit_valid(&g);
	emit_broken_v4(&g);
	emit_broken_opcode(&g);
	emit_broken_v6(&g);
	if (g.failed)
		return 1;
	printf("%u seeds in %s\n", g.count, g.dir);
	return 0;
}
