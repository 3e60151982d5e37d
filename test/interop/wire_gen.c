/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * wire_gen: writes RoCEv2 packets built by lib/wire to a pcap file, and a JSON Lines
 * manifest of every field value it put in, so that oracles we did not write (scapy,
 * tshark) and droce-pcap can be checked against what the builder was asked to build.
 *
 * Every opcode of droce_opcode_table, at every payload size of payload_sizes[] the
 * opcode allows, each over IPv4 and IPv6, with and without an 802.1Q tag. Field values
 * are pseudo-random from --seed, so a run is reproducible and a seed names a capture.
 *
 *   wire_gen --seed N --out FILE.pcap --manifest FILE.jsonl
 */

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/if_ether.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isa-l/crc.h>
#include <pcap/pcap.h>

#include "droce_wire.h"

/*
 * Payload sizes tried for each opcode: empty, every pad count (1..5 and 4095), around
 * the smallest MTU (255, 256), a middle MTU and the largest payload (4096).
 */
static const uint32_t payload_sizes[] = { 0, 1, 2, 3, 4, 5, 255, 256, 1024, 4095, 4096 };

/* Ethernet frames shorter than this are padded on the wire (IEEE 802.3 minimum less
 * FCS), as a NIC's capture shows them: the parser must stop at the IP length. */
#define GEN_MIN_FRAME		ETH_ZLEN
/* Pad bytes are 0..3 (BTH.PadCnt, 9.2.4). */
#define GEN_PAD_MAX		3
/* Largest frame built: every header, the largest payload, pad and ICRC. */
#define GEN_FRAME_MAX		(DROCE_WIRE_HDR_MAX + DROCE_WIRE_MAX_PAYLOAD + GEN_PAD_MAX + \
				 DROCE_ICRC_LEN)
_Static_assert(GEN_FRAME_MAX >= GEN_MIN_FRAME, "room to pad a short frame");

/* The IPv4-mapped GID prefix (RFC 4291 2.5.5.2): RoCEv2 GIDs of IPv4 addresses. */
static const uint8_t v4_mapped_prefix[12] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF
};
/* Unique local IPv6 prefix (RFC 4193) so random IPv6 GIDs are never IPv4-mapped. */
#define GEN_IPV6_ULA		0xFD
/* A locally administered unicast MAC (IEEE 802: bit 1 set, bit 0 clear). */
#define GEN_MAC_LOCAL		0x02
#define GEN_MAC_GROUP		0x01
/* The IPv6 flow label is 20 bits (RFC 8200). */
#define GEN_FLOW_LABEL_MASK	0xFFFFFu

/* splitmix64 (Steele, Lea, Flood, OOPSLA 2014): small, seedable, good enough here. */
#define SPLITMIX_GAMMA		0x9E3779B97F4A7C15ull
#define SPLITMIX_MUL1		0xBF58476D1CE4E5B9ull
#define SPLITMIX_MUL2		0x94D049BB133111EBull

struct gen {
	uint64_t rng;
	pcap_dumper_t *dump;
	FILE *manifest;
	uint32_t frame;		/* frames written so far */
	uint8_t buf[GEN_FRAME_MAX];
	uint8_t payload[DROCE_WIRE_MAX_PAYLOAD];
};

static uint64_t
rnd64(struct gen *g)
{
	uint64_t z = (g->rng += SPLITMIX_GAMMA);

	z = (z ^ (z >> 30)) * SPLITMIX_MUL1;
	z = (z ^ (z >> 27)) * SPLITMIX_MUL2;
	return z ^ (z >> 31);
}

static uint32_t rnd32(struct gen *g) { return (uint32_t)rnd64(g); }
static bool rnd_bool(struct gen *g) { return rnd64(g) & 1; }

static void
rnd_bytes(struct gen *g, uint8_t *p, uint32_t len)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)rnd64(g);
}

static void
rnd_mac(struct gen *g, uint8_t mac[6])
{
	rnd_bytes(g, mac, 6);
	mac[0] = (mac[0] | GEN_MAC_LOCAL) & ~GEN_MAC_GROUP;
}

/* Random GIDs of one family: IPv4-mapped for version 4, unique local for 6. */
static void
rnd_gid(struct gen *g, int ip_version, uint8_t gid[16])
{
	rnd_bytes(g, gid, 16);
	if (ip_version == 4)
		memcpy(gid, v4_mapped_prefix, sizeof(v4_mapped_prefix));
	else
		gid[0] = GEN_IPV6_ULA;
}

/* May opcode info oi carry payload_len bytes in one packet, as the parser requires? */
static bool
size_allowed(const struct droce_opcode_info *oi, uint32_t payload_len)
{
	if (!(oi->flags & DROCE_OPF_PAYLOAD))
		return payload_len == 0;
	/* 9.2.4: only the last packet of a message pads. */
	return (oi->flags & DROCE_OPF_LAST) || droce_wire_pad(payload_len) == 0;
}

static void
json_mac(FILE *f, const char *key, const uint8_t mac[6])
{
	fprintf(f, ", \"%s\": \"%02x:%02x:%02x:%02x:%02x:%02x\"", key, mac[0], mac[1], mac[2],
		mac[3], mac[4], mac[5]);
}

static void
json_gid(FILE *f, const char *key, int ip_version, const uint8_t gid[16])
{
	char s[INET6_ADDRSTRLEN];

	if (ip_version == 4)
		inet_ntop(AF_INET, gid + sizeof(v4_mapped_prefix), s, sizeof(s));
	else
		inet_ntop(AF_INET6, gid, s, sizeof(s));
	fprintf(f, ", \"%s\": \"%s\"", key, s);
}

/* One manifest line: every value handed to the builder, as it goes on the wire. */
static void
write_manifest(struct gen *g, const struct droce_wire_addr *a, int ip_version,
	       const struct droce_wire_hdrs *h, uint32_t payload_len, uint32_t frame_len)
{
	const struct droce_opcode_info *oi = droce_opcode_info(h->opcode);
	uint32_t m = oi->ext_mask;
	FILE *f = g->manifest;

	fprintf(f, "{\"frame\": %" PRIu32 ", \"frame_len\": %" PRIu32, g->frame, frame_len);
	fprintf(f, ", \"opcode\": %u, \"opcode_name\": \"%s\"", h->opcode, oi->name);
	fprintf(f, ", \"se\": %d, \"mig\": %d, \"pad\": %u, \"pkey\": %u, \"fecn\": %d"
		", \"becn\": %d, \"dqpn\": %" PRIu32 ", \"ackreq\": %d, \"psn\": %" PRIu32,
		h->se, h->mig, droce_wire_pad(payload_len), h->pkey, h->fecn, h->becn,
		h->dqpn, h->ackreq, h->psn);
	fprintf(f, ", \"payload_len\": %" PRIu32 ", \"payload_crc32\": %" PRIu32, payload_len,
		crc32_gzip_refl(0, g->payload, payload_len));
	if (m & DROCE_EXT_BIT(DROCE_EXT_RETH))
		fprintf(f, ", \"reth_va\": %" PRIu64 ", \"reth_rkey\": %" PRIu32
			", \"reth_len\": %" PRIu32, h->reth.va, h->reth.rkey, h->reth.len);
	if (m & DROCE_EXT_BIT(DROCE_EXT_AETH))
		fprintf(f, ", \"aeth_syndrome\": %u, \"aeth_msn\": %" PRIu32, h->aeth.syndrome,
			h->aeth.msn);
	if (m & DROCE_EXT_BIT(DROCE_EXT_DETH))
		fprintf(f, ", \"deth_qkey\": %" PRIu32 ", \"deth_src_qp\": %" PRIu32,
			h->deth.qkey, h->deth.src_qp);
	if (m & DROCE_EXT_BIT(DROCE_EXT_XRCETH))
		fprintf(f, ", \"xrceth_srqn\": %" PRIu32, h->xrc_srqn);
	/* ImmDt as the big-endian integer of its wire bytes. */
	if (m & DROCE_EXT_BIT(DROCE_EXT_IMMDT))
		fprintf(f, ", \"immdt\": %" PRIu32, be32toh(h->imm_be));
	if (m & DROCE_EXT_BIT(DROCE_EXT_IETH))
		fprintf(f, ", \"ieth_rkey\": %" PRIu32, h->ieth_rkey);
	if (m & DROCE_EXT_BIT(DROCE_EXT_ATMETH))
		fprintf(f, ", \"atomic_va\": %" PRIu64 ", \"atomic_rkey\": %" PRIu32
			", \"atomic_swap_add\": %" PRIu64 ", \"atomic_compare\": %" PRIu64,
			h->atomic.va, h->atomic.rkey, h->atomic.swap_add, h->atomic.compare);
	if (m & DROCE_EXT_BIT(DROCE_EXT_ATMACK))
		fprintf(f, ", \"atomic_ack_orig\": %" PRIu64, h->atomic_ack_orig);
	if (m & DROCE_EXT_BIT(DROCE_EXT_FETH))
		fprintf(f, ", \"feth_sel\": %u, \"feth_plt\": %u", h->feth.sel, h->feth.plt);

	fprintf(f, ", \"ip_version\": %d", ip_version);
	json_gid(f, "src", ip_version, a->src_gid);
	json_gid(f, "dst", ip_version, a->dst_gid);
	fprintf(f, ", \"traffic_class\": %u, \"hop_limit\": %u", a->traffic_class,
		a->hop_limit);
	if (ip_version == 6)
		fprintf(f, ", \"flow_label\": %" PRIu32, a->flow_label);
	fprintf(f, ", \"udp_sport\": %u", a->udp_sport);
	json_mac(f, "src_mac", a->src_mac);
	json_mac(f, "dst_mac", a->dst_mac);
	fprintf(f, ", \"vlan\": %d", a->vlan);
	if (a->vlan)
		fprintf(f, ", \"vlan_tci\": %u", a->vlan_tci);
	fprintf(f, "}\n");
}

static void
rnd_hdrs(struct gen *g, uint8_t opcode, struct droce_wire_hdrs *h)
{
	memset(h, 0, sizeof(*h));
	h->opcode = opcode;
	h->se = rnd_bool(g);
	h->mig = rnd_bool(g);
	h->ackreq = rnd_bool(g);
	h->fecn = rnd_bool(g);
	h->becn = rnd_bool(g);
	h->pkey = (uint16_t)rnd32(g);
	h->dqpn = rnd32(g) & DROCE_QPN_MASK;
	h->psn = rnd32(g) & DROCE_PSN_MASK;
	h->reth.va = rnd64(g);
	h->reth.rkey = rnd32(g);
	h->reth.len = rnd32(g);
	h->aeth.syndrome = (uint8_t)rnd32(g);
	h->aeth.msn = rnd32(g) & DROCE_PSN_MASK;
	h->atomic.va = rnd64(g);
	h->atomic.rkey = rnd32(g);
	h->atomic.swap_add = rnd64(g);
	h->atomic.compare = rnd64(g);
	h->atomic_ack_orig = rnd64(g);
	h->imm_be = rnd32(g);
	h->ieth_rkey = rnd32(g);
	h->deth.qkey = rnd32(g);
	h->deth.src_qp = rnd32(g) & DROCE_QPN_MASK;
	h->feth.sel = rnd32(g) & (DROCE_FETH_SEL_MASK >> DROCE_FETH_SEL_SHIFT);
	h->feth.plt = rnd32(g) & DROCE_FETH_PLT_MASK;
	h->xrc_srqn = rnd32(g) & DROCE_QPN_MASK;
}

static void
rnd_addr(struct gen *g, int ip_version, bool vlan, struct droce_wire_addr *a)
{
	memset(a, 0, sizeof(*a));
	rnd_mac(g, a->src_mac);
	rnd_mac(g, a->dst_mac);
	a->vlan = vlan;
	a->vlan_tci = (uint16_t)rnd32(g);
	rnd_gid(g, ip_version, a->src_gid);
	rnd_gid(g, ip_version, a->dst_gid);
	a->traffic_class = (uint8_t)rnd32(g);
	/* 0 asks the builder for its default; a nonzero value is what goes out. */
	a->hop_limit = (uint8_t)(1 + rnd32(g) % UINT8_MAX);
	a->flow_label = rnd32(g) & GEN_FLOW_LABEL_MASK;
	a->udp_sport = droce_wire_udp_sport(rnd32(g) & DROCE_QPN_MASK,
					    rnd32(g) & DROCE_QPN_MASK);
}

static int
gen_one(struct gen *g, uint8_t opcode, uint32_t payload_len, int ip_version, bool vlan)
{
	struct droce_wire_addr a;
	struct droce_wire_tmpl tmpl;
	struct droce_wire_hdrs h;
	struct droce_wire_seg seg;
	struct pcap_pkthdr ph;
	int len, rc;

	rnd_addr(g, ip_version, vlan, &a);
	rnd_hdrs(g, opcode, &h);
	rnd_bytes(g, g->payload, payload_len);
	rc = droce_wire_tmpl_init(&tmpl, &a);
	if (rc < 0) {
		fprintf(stderr, "wire_gen: droce_wire_tmpl_init: %s\n", strerror(-rc));
		return -1;
	}
	seg.data = g->payload;
	seg.len = payload_len;
	len = droce_wire_build(&tmpl, &h, &seg, 1, g->buf, GEN_FRAME_MAX);
	if (len < 0) {
		fprintf(stderr, "wire_gen: droce_wire_build(%s, %" PRIu32 " bytes): %s\n",
			droce_opcode_name(opcode), payload_len, strerror(-len));
		return -1;
	}
	if (len < GEN_MIN_FRAME) {
		memset(g->buf + len, 0, GEN_MIN_FRAME - len);
		len = GEN_MIN_FRAME;
	}

	g->frame++;
	memset(&ph, 0, sizeof(ph));
	/* One frame per microsecond from the epoch: the capture is reproducible. */
	ph.ts.tv_usec = g->frame;
	ph.caplen = (bpf_u_int32)len;
	ph.len = (bpf_u_int32)len;
	pcap_dump((u_char *)g->dump, &ph, g->buf);
	write_manifest(g, &a, ip_version, &h, payload_len, (uint32_t)len);
	return 0;
}

/* The four framings of one packet: IPv4 and IPv6, each without and with a VLAN tag. */
static int
gen_framings(struct gen *g, uint8_t opcode, uint32_t payload_len)
{
	static const int ip_versions[] = { 4, 6 };
	unsigned int v, vlan;

	for (v = 0; v < sizeof(ip_versions) / sizeof(ip_versions[0]); v++)
		for (vlan = 0; vlan < 2; vlan++)
			if (gen_one(g, opcode, payload_len, ip_versions[v], vlan) < 0)
				return -1;
	return 0;
}

static int
gen_all(struct gen *g)
{
	unsigned int op, s;

	for (op = 0; op < sizeof(droce_opcode_table) / sizeof(droce_opcode_table[0]); op++) {
		const struct droce_opcode_info *oi = droce_opcode_info((uint8_t)op);

		if (oi == NULL)
			continue;
		/* An opcode with a fixed payload (ATOMIC WRITE) gets that one size. */
		if (oi->payload_fixed != 0) {
			if (gen_framings(g, (uint8_t)op, oi->payload_fixed) < 0)
				return -1;
			continue;
		}
		for (s = 0; s < sizeof(payload_sizes) / sizeof(payload_sizes[0]); s++)
			if (size_allowed(oi, payload_sizes[s]) &&
			    gen_framings(g, (uint8_t)op, payload_sizes[s]) < 0)
				return -1;
	}
	return 0;
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: wire_gen --seed N --out FILE.pcap --manifest FILE.jsonl\n"
		"Writes a packet built by lib/wire for every opcode, payload size, IP version\n"
		"and VLAN setting, and one JSON line per packet with the values it put in.\n");
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "out", required_argument, NULL, 'o' },
		{ "manifest", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL, *manifest = NULL;
	struct gen *g;
	pcap_t *dead;
	char *end;
	int c, rc;

	g = calloc(1, sizeof(*g));
	if (g == NULL) {
		perror("wire_gen");
		return 1;
	}
	while ((c = getopt_long(argc, argv, "s:o:m:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			errno = 0;
			g->rng = strtoull(optarg, &end, 0);
			if (errno != 0 || *end != '\0') {
				fprintf(stderr, "wire_gen: bad seed '%s'\n", optarg);
				return 1;
			}
			break;
		case 'o':
			out = optarg;
			break;
		case 'm':
			manifest = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 1;
		}
	}
	if (out == NULL || manifest == NULL || optind != argc) {
		usage(stderr);
		return 1;
	}

	dead = pcap_open_dead(DLT_EN10MB, GEN_FRAME_MAX);
	if (dead == NULL) {
		fprintf(stderr, "wire_gen: pcap_open_dead failed\n");
		return 1;
	}
	g->dump = pcap_dump_open(dead, out);
	if (g->dump == NULL) {
		fprintf(stderr, "wire_gen: %s: %s\n", out, pcap_geterr(dead));
		return 1;
	}
	g->manifest = fopen(manifest, "w");
	if (g->manifest == NULL) {
		fprintf(stderr, "wire_gen: %s: %s\n", manifest, strerror(errno));
		return 1;
	}

	rc = gen_all(g);
	pcap_dump_close(g->dump);
	pcap_close(dead);
	if (fclose(g->manifest) != 0) {
		fprintf(stderr, "wire_gen: %s: %s\n", manifest, strerror(errno));
		rc = -1;
	}
	if (rc == 0)
		printf("wire_gen: %" PRIu32 " packets\n", g->frame);
	free(g);
	return rc == 0 ? 0 : 1;
}
