/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * cm_gen: writes CM MADs built by lib/cm, each in a RoCEv2 UD SEND ONLY packet to QP1
 * built by lib/wire, to a pcap file, and a JSON Lines manifest with every field of each
 * message as it was handed to the builder, so tshark's InfiniBand dissector can be
 * checked against it. Every attribute appears with pseudo-random field values and with
 * every field at its maximum, over IPv4; then REQs over IPv6, and REQs carrying an RDMA
 * CM header, IPv4 and IPv6.
 *
 *   cm_gen --seed N --out FILE.pcap --manifest FILE.jsonl
 */

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcap/pcap.h>

#include "droce_cm.h"
#include "droce_wire.h"

#define GEN_FRAME_MAX	(DROCE_WIRE_HDR_MAX + DROCE_CM_MAD_LEN + DROCE_ICRC_LEN)
/* The default P_Key, which every port holds. */
#define GEN_PKEY	DROCE_PKEY_DEFAULT
#define GEN_UDP_SPORT	0xC001

#define SPLITMIX_GAMMA	0x9E3779B97F4A7C15ull
#define SPLITMIX_MUL1	0xBF58476D1CE4E5B9ull
#define SPLITMIX_MUL2	0x94D049BB133111EBull

static const uint16_t attrs[] = {
	DROCE_CM_ATTR_REQ, DROCE_CM_ATTR_MRA, DROCE_CM_ATTR_REJ, DROCE_CM_ATTR_REP,
	DROCE_CM_ATTR_RTU, DROCE_CM_ATTR_DREQ, DROCE_CM_ATTR_DREP, DROCE_CM_ATTR_SIDR_REQ,
	DROCE_CM_ATTR_SIDR_REP,
};

enum gen_fill { FILL_RANDOM, FILL_MAX, FILL_RDMA_CM_V4, FILL_RDMA_CM_V6 };

/*
 * GIDs of the packets: IPv4-mapped, or IPv6 for some REQs because tshark shows a REQ's
 * primary path GIDs in full only in an IPv6 packet (in an IPv4 one, their last 4 bytes).
 */
static const uint8_t ipv4_gid_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF };
static const uint8_t ipv6_src_gid[16] = { 0xFD, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 };
static const uint8_t ipv6_dst_gid[16] = { 0xFD, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2 };

struct gen {
	uint64_t rng;
	pcap_dumper_t *dump;
	FILE *manifest;
	uint32_t frame;
	uint8_t buf[GEN_FRAME_MAX];
};

static uint64_t
rnd64(struct gen *g)
{
	uint64_t z = (g->rng += SPLITMIX_GAMMA);

	z = (z ^ (z >> 30)) * SPLITMIX_MUL1;
	z = (z ^ (z >> 27)) * SPLITMIX_MUL2;
	return z ^ (z >> 31);
}

static void
fill_msg(struct gen *g, struct droce_cm_msg *m, uint16_t attr, enum gen_fill fill)
{
	const struct droce_cm_field *f;
	uint8_t *host = (uint8_t *)&m->req;
	unsigned int i, n, b;

	memset(m, 0, sizeof(*m));
	m->attr_id = attr;
	m->tid = rnd64(g);
	m->attr_mod = (uint32_t)rnd64(g);
	f = droce_cm_fields(attr, &n);
	for (i = 0; i < n; i++) {
		uint64_t v = fill == FILL_MAX ? UINT64_MAX : rnd64(g);

		if (f[i].width > 64) {
			for (b = 0; b < f[i].host_size; b++)
				host[f[i].host_off + b] = fill == FILL_MAX ? 0xFF : (uint8_t)rnd64(g);
			continue;
		}
		if (f[i].width < 64)
			v &= (UINT64_C(1) << f[i].width) - 1;
		droce_cm_field_set(m, &f[i], v);
	}
}

static void
json_hex(FILE *out, const uint8_t *p, unsigned int len)
{
	unsigned int i;

	fputc('"', out);
	for (i = 0; i < len; i++)
		fprintf(out, "%02x", p[i]);
	fputc('"', out);
}

static void
write_manifest(struct gen *g, const struct droce_cm_msg *m, const struct droce_cm_ip_hdr *ip,
	       bool ipv6)
{
	const struct droce_cm_field *f;
	const uint8_t *host = (const uint8_t *)&m->req;
	unsigned int i, n;

	fprintf(g->manifest, "{\"frame\": %" PRIu32 ", \"ip_version\": %d, \"attr\": \"%s\", "
		"\"attr_id\": %u, "
		"\"tid\": %" PRIu64 ", \"attr_mod\": %" PRIu32 ", \"status\": %u, "
		"\"class_specific\": %u, \"fields\": {", g->frame, ipv6 ? 6 : 4,
		droce_cm_attr_name(m->attr_id),
		m->attr_id, m->tid, m->attr_mod, m->status, m->class_specific);
	f = droce_cm_fields(m->attr_id, &n);
	for (i = 0; i < n; i++) {
		fprintf(g->manifest, "%s\"%s\": ", i ? ", " : "", f[i].name);
		if (f[i].width > 64)
			json_hex(g->manifest, host + f[i].host_off, f[i].host_size);
		else
			fprintf(g->manifest, "%" PRIu64, droce_cm_field_get(m, &f[i]));
	}
	fputc('}', g->manifest);
	if (ip != NULL) {
		fprintf(g->manifest, ", \"ip_hdr\": {\"ip_version\": %u, \"port\": %u, \"src\": ",
			ip->ip_version, ip->port);
		json_hex(g->manifest, ip->src_addr, 16);
		fputs(", \"dst\": ", g->manifest);
		json_hex(g->manifest, ip->dst_addr, 16);
		fputc('}', g->manifest);
	}
	fputs("}\n", g->manifest);
}

/* UD SEND ONLY to QP1 from QP1 with the GSI's Q_Key, as rdma_cm sends CM MADs. */
static int
gen_one(struct gen *g, uint16_t attr, enum gen_fill fill, bool ipv6)
{
	static const uint8_t src_gid[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 10, 0, 0, 1 };
	static const uint8_t dst_gid[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 10, 0, 0, 2 };
	struct droce_cm_ip_hdr ip, *ipp = NULL;
	uint8_t mad[DROCE_CM_MAD_LEN];
	struct droce_wire_addr a = { .src_mac = { 0x02, 0, 0, 0, 0, 1 },
				     .dst_mac = { 0x02, 0, 0, 0, 0, 2 },
				     .udp_sport = GEN_UDP_SPORT };
	struct droce_wire_tmpl tmpl;
	struct droce_wire_hdrs h;
	struct droce_wire_seg seg = { .data = mad, .len = sizeof(mad) };
	struct droce_cm_msg m;
	struct pcap_pkthdr ph;
	unsigned int i;
	int len;

	fill_msg(g, &m, attr, fill);
	if (fill == FILL_RDMA_CM_V4 || fill == FILL_RDMA_CM_V6) {
		memset(&ip, 0, sizeof(ip));
		ip.ip_version = fill == FILL_RDMA_CM_V4 ? 4 : 6;
		ip.port = (uint16_t)rnd64(g);
		for (i = 0; i < 16; i++) {
			ip.src_addr[i] = (uint8_t)rnd64(g);
			ip.dst_addr[i] = (uint8_t)rnd64(g);
		}
		if (ip.ip_version == 4) {
			memcpy(ip.src_addr, ipv4_gid_prefix, sizeof(ipv4_gid_prefix));
			memcpy(ip.dst_addr, ipv4_gid_prefix, sizeof(ipv4_gid_prefix));
		}
		m.req.service_id = droce_cm_service_id(DROCE_CM_PS_TCP, ip.port);
		if (droce_cm_ip_hdr_build(&ip, m.req.private_data) != 0)
			return -1;
		ipp = &ip;
	}
	if (droce_cm_mad_build(&m, mad) != 0)
		return -1;

	memcpy(a.src_gid, ipv6 ? ipv6_src_gid : src_gid, 16);
	memcpy(a.dst_gid, ipv6 ? ipv6_dst_gid : dst_gid, 16);
	memset(&h, 0, sizeof(h));
	h.opcode = DROCE_OP_UD_SEND_ONLY;
	h.pkey = GEN_PKEY;
	h.dqpn = DROCE_CM_GSI_QPN;
	h.psn = (uint32_t)rnd64(g) & DROCE_PSN_MASK;
	h.deth.qkey = DROCE_CM_GSI_QKEY;
	h.deth.src_qp = DROCE_CM_GSI_QPN;
	if (droce_wire_tmpl_init(&tmpl, &a) < 0)
		return -1;
	len = droce_wire_build(&tmpl, &h, &seg, 1, g->buf, sizeof(g->buf));
	if (len < 0) {
		fprintf(stderr, "cm_gen: droce_wire_build: %d\n", len);
		return -1;
	}
	g->frame++;
	memset(&ph, 0, sizeof(ph));
	ph.ts.tv_usec = g->frame;
	ph.caplen = (bpf_u_int32)len;
	ph.len = (bpf_u_int32)len;
	pcap_dump((u_char *)g->dump, &ph, g->buf);
	write_manifest(g, &m, ipp, ipv6);
	return 0;
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: cm_gen --seed N --out FILE.pcap --manifest FILE.jsonl\n");
}

int
main(int argc, char **argv)
{
	const char *out = NULL, *manifest = NULL;
	struct gen *g;
	pcap_t *dead;
	unsigned int i;
	int rc = 1, k;

	g = calloc(1, sizeof(*g));
	if (g == NULL)
		return 1;
	for (k = 1; k + 1 < argc; k += 2) {
		if (strcmp(argv[k], "--seed") == 0)
			g->rng = strtoull(argv[k + 1], NULL, 0);
		else if (strcmp(argv[k], "--out") == 0)
			out = argv[k + 1];
		else if (strcmp(argv[k], "--manifest") == 0)
			manifest = argv[k + 1];
		else
			break;
	}
	if (k != argc || out == NULL || manifest == NULL) {
		usage(stderr);
		free(g);
		return 2;
	}
	dead = pcap_open_dead(DLT_EN10MB, GEN_FRAME_MAX);
	g->dump = dead == NULL ? NULL : pcap_dump_open(dead, out);
	g->manifest = fopen(manifest, "w");
	if (g->dump == NULL || g->manifest == NULL) {
		fprintf(stderr, "cm_gen: cannot open %s or %s\n", out, manifest);
		goto out;
	}
	for (i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++)
		if (gen_one(g, attrs[i], FILL_RANDOM, false) < 0 ||
		    gen_one(g, attrs[i], FILL_MAX, false) < 0)
			goto out;
	if (gen_one(g, DROCE_CM_ATTR_REQ, FILL_RANDOM, true) < 0 ||
	    gen_one(g, DROCE_CM_ATTR_REQ, FILL_RDMA_CM_V4, false) < 0 ||
	    gen_one(g, DROCE_CM_ATTR_REQ, FILL_RDMA_CM_V6, true) < 0)
		goto out;
	rc = 0;
out:
	if (g->manifest != NULL && fclose(g->manifest) != 0)
		rc = 1;
	if (g->dump != NULL)
		pcap_dump_close(g->dump);
	if (dead != NULL)
		pcap_close(dead);
	free(g);
	if (rc != 0)
		fprintf(stderr, "cm_gen: failed\n");
	return rc;
}
