/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Reference implementations for the lib/wire tests, written from the specs: they share
 * no code with lib/wire (which uses ISA-L and its own masking), so agreement means
 * something.
 */

#include <string.h>

#include "droce_test.h"
#include "wire_test_util.h"

/* IEEE 802.3 CRC-32, bit-reversed form (the polynomial zlib and Ethernet use). */
#define CRC32_POLY_REFLECTED	0xEDB88320u
/* A17.3.3: the LRH's variant fields are replaced by 8 bytes of ones. */
#define ICRC_LRH_ONES		8
#define IPV6_VERSION_BYTES	4	/* version, traffic class, flow label */
#define IPV4_HLEN_MAX		60	/* IHL is four bits of 32-bit words */

uint32_t
wt_crc32(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	size_t i;
	int k;

	crc = ~crc;
	for (i = 0; i < len; i++) {
		crc ^= p[i];
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (CRC32_POLY_REFLECTED & -(crc & 1u));
	}
	return ~crc;
}

uint32_t
wt_ref_icrc(const uint8_t *frame, uint32_t l3_off, uint32_t icrc_off)
{
	uint8_t masked[IPV4_HLEN_MAX + DROCE_UDP_HLEN + DROCE_BTH_LEN];
	const uint8_t ones[ICRC_LRH_ONES] = { 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF };
	const uint8_t *l3 = frame + l3_off;
	uint32_t ip_len, n, crc;

	if ((l3[0] >> 4) == 4) {
		ip_len = (l3[0] & 0xFu) * 4;
		n = ip_len + DROCE_UDP_HLEN + DROCE_BTH_LEN;
		memcpy(masked, l3, n);
		masked[WT_IPV4_TOS] = 0xFF;
		masked[WT_IPV4_TTL] = 0xFF;
		masked[WT_IPV4_CSUM] = 0xFF;
		masked[WT_IPV4_CSUM + 1] = 0xFF;
	} else {
		ip_len = DROCE_IPV6_HLEN;
		n = ip_len + DROCE_UDP_HLEN + DROCE_BTH_LEN;
		memcpy(masked, l3, n);
		/* Traffic class and flow label: everything after the version nibble. */
		masked[0] |= 0x0F;
		memset(masked + 1, 0xFF, IPV6_VERSION_BYTES - 1);
		masked[WT_IPV6_HOP_LIMIT] = 0xFF;
	}
	masked[ip_len + WT_UDP_CSUM] = 0xFF;
	masked[ip_len + WT_UDP_CSUM + 1] = 0xFF;
	masked[ip_len + DROCE_UDP_HLEN + WT_BTH_FECN_BYTE] = 0xFF;

	crc = wt_crc32(0, ones, sizeof(ones));
	crc = wt_crc32(crc, masked, n);
	return wt_crc32(crc, l3 + n, icrc_off - l3_off - n);
}

void
wt_put_icrc(uint8_t *frame, uint32_t icrc_off, uint32_t crc)
{
	unsigned int i;

	for (i = 0; i < DROCE_ICRC_LEN; i++)
		frame[icrc_off + i] = (uint8_t)(crc >> (8 * i));
}

uint32_t
wt_get_icrc(const uint8_t *frame, uint32_t icrc_off)
{
	uint32_t crc = 0;
	unsigned int i;

	for (i = 0; i < DROCE_ICRC_LEN; i++)
		crc |= (uint32_t)frame[icrc_off + i] << (8 * i);
	return crc;
}

uint16_t
wt_ipv4_csum(const uint8_t *ip)
{
	unsigned int len = (ip[0] & 0xFu) * 4, i;
	uint32_t sum = 0;

	for (i = 0; i < len; i += 2)
		sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (sum > 0xFFFF)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return (uint16_t)~sum;
}

void
wt_ipv4_fix_csum(uint8_t *ip)
{
	ip[WT_IPV4_CSUM] = 0;
	ip[WT_IPV4_CSUM + 1] = 0;
	wt_put_be(ip + WT_IPV4_CSUM, 2, wt_ipv4_csum(ip));
}

uint64_t
wt_get_be(const uint8_t *p, unsigned int nbytes)
{
	uint64_t v = 0;
	unsigned int i;

	for (i = 0; i < nbytes; i++)
		v = v << 8 | p[i];
	return v;
}

void
wt_put_be(uint8_t *p, unsigned int nbytes, uint64_t v)
{
	unsigned int i;

	for (i = 0; i < nbytes; i++)
		p[nbytes - 1 - i] = (uint8_t)(v >> (8 * i));
}

void
wt_random_addr(struct droce_wire_addr *a, bool ipv6, bool vlan)
{
	memset(a, 0, sizeof(*a));
	droce_test_rand_fill(a->src_mac, sizeof(a->src_mac));
	droce_test_rand_fill(a->dst_mac, sizeof(a->dst_mac));
	a->vlan = vlan;
	a->vlan_tci = (uint16_t)droce_test_rand();
	if (ipv6) {
		/* fe80::/64 link-local GIDs, never IPv4-mapped. */
		a->src_gid[0] = a->dst_gid[0] = 0xFE;
		a->src_gid[1] = a->dst_gid[1] = 0x80;
		droce_test_rand_fill(a->src_gid + 8, 8);
		droce_test_rand_fill(a->dst_gid + 8, 8);
	} else {
		a->src_gid[10] = a->src_gid[11] = 0xFF;
		a->dst_gid[10] = a->dst_gid[11] = 0xFF;
		droce_test_rand_fill(a->src_gid + 12, 4);
		droce_test_rand_fill(a->dst_gid + 12, 4);
	}
	a->traffic_class = (uint8_t)droce_test_rand();
	/* Sometimes 0, which means the default of 64. */
	a->hop_limit = droce_test_rand_below(4) == 0 ? 0 : (uint8_t)droce_test_rand();
	a->flow_label = droce_test_rand_below(1u << 20);
	a->udp_sport = (uint16_t)droce_test_rand();
}

void
wt_random_hdrs(struct droce_wire_hdrs *h, uint8_t opcode)
{
	uint64_t bits = droce_test_rand();

	memset(h, 0, sizeof(*h));
	h->opcode = opcode;
	h->se = bits & 1;
	h->mig = bits & 2;
	h->ackreq = bits & 4;
	h->fecn = bits & 8;
	h->becn = bits & 16;
	h->pkey = (uint16_t)droce_test_rand();
	h->dqpn = droce_test_rand_below(DROCE_QPN_MASK + 1);
	h->psn = droce_test_rand_below(DROCE_PSN_MASK + 1);
	h->reth.va = droce_test_rand();
	h->reth.rkey = (uint32_t)droce_test_rand();
	h->reth.len = (uint32_t)droce_test_rand();
	h->aeth.syndrome = (uint8_t)droce_test_rand();
	h->aeth.msn = droce_test_rand_below(DROCE_PSN_MASK + 1);
	h->atomic.va = droce_test_rand();
	h->atomic.rkey = (uint32_t)droce_test_rand();
	h->atomic.swap_add = droce_test_rand();
	h->atomic.compare = droce_test_rand();
	h->atomic_ack_orig = droce_test_rand();
	h->imm_be = (uint32_t)droce_test_rand();
	h->ieth_rkey = (uint32_t)droce_test_rand();
	h->deth.qkey = (uint32_t)droce_test_rand();
	h->deth.src_qp = droce_test_rand_below(DROCE_QPN_MASK + 1);
	h->feth.sel = (uint8_t)droce_test_rand_below(4);
	h->feth.plt = (uint8_t)droce_test_rand_below(16);
	h->xrc_srqn = droce_test_rand_below(DROCE_QPN_MASK + 1);
}
