/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * The ICRC (IB spec Annex A17.3.3) against known answers from oracles this project did
 * not write: scapy's RoCE layer for IPv4, Python's zlib for IPv6 (icrc_vectors.h, made
 * by gen_icrc_vectors.py). Each packet is also split into two and three segments at
 * every byte boundary the API allows. Segments are copied into buffers of their exact
 * size, so under ASan a read past a segment's end is caught.
 */

#include <string.h>

#include <isa-l/crc.h>

#include "droce_test.h"
#include "droce_wire.h"
#include "wire_loc.h"	/* WIRE_ICRC_SEED, internal to lib/wire */
#include "wire_test_util.h"

struct icrc_vector {
	const char *name;
	const char *oracle;
	const uint8_t *bytes;	/* Ethernet through ICRC */
	uint32_t len;
	uint32_t l3_off;
	uint32_t icrc_wire;	/* the ICRC's wire bytes read big-endian, as scapy shows it */
};

#include "icrc_vectors.h"

#define NVEC (sizeof(icrc_vectors) / sizeof(icrc_vectors[0]))

#define LRH_ONES		8
/* The CRC-32 check value: crc32("123456789"), from the CRC catalogue. */
#define CRC32_CHECK_VALUE	0xCBF43926u

/* The ICRC as the trailer carries it, in droce_icrc_calc's convention. */
static uint32_t
vec_icrc(const struct icrc_vector *v)
{
	return wt_get_icrc(v->bytes, v->len - DROCE_ICRC_LEN);
}

/* End of the BTH: droce_icrc_calc needs everything before it in the first segment. */
static uint32_t
vec_bth_end(const struct icrc_vector *v)
{
	const uint8_t *l3 = v->bytes + v->l3_off;
	uint32_t ip_len = (l3[0] >> 4) == 4 ? (l3[0] & 0xFu) * 4 : DROCE_IPV6_HLEN;

	return v->l3_off + ip_len + DROCE_UDP_HLEN + DROCE_BTH_LEN;
}

/* End of all headers (payload offset): the parser needs them in the first segment. */
static uint32_t
vec_hdrs_end(const struct icrc_vector *v)
{
	struct droce_wire_seg seg = { v->bytes, v->len };
	struct droce_wire_pkt pkt;

	CHECK_EQ_U64(droce_wire_parse(&seg, 1, 0, &pkt), DROCE_WIRE_OK);
	return pkt.payload_off;
}

/* Splits v into nseg segments at the given cuts, each in its own exact-size buffer. */
static void
split(const struct icrc_vector *v, const uint32_t *cuts, unsigned int nseg,
      struct droce_wire_seg *segs)
{
	uint32_t start = 0;
	unsigned int i;

	for (i = 0; i < nseg; i++) {
		uint32_t end = i + 1 < nseg ? cuts[i] : v->len;
		uint8_t *b = droce_test_malloc(end - start);

		if (end > start)
			memcpy(b, v->bytes + start, end - start);
		segs[i].data = b;
		segs[i].len = end - start;
		start = end;
	}
}

static void
free_segs(struct droce_wire_seg *segs, unsigned int nseg)
{
	unsigned int i;

	for (i = 0; i < nseg; i++)
		droce_test_free((void *)segs[i].data);
}

/* ICRC and parse of v split at cuts: both must see the oracle's ICRC. */
static void
check_split(const struct icrc_vector *v, const uint32_t *cuts, unsigned int nseg)
{
	struct droce_wire_seg segs[3];
	struct droce_wire_pkt pkt;
	enum droce_wire_result r;
	uint32_t calc;

	split(v, cuts, nseg, segs);
	calc = droce_icrc_calc(segs, nseg, v->l3_off, v->len - DROCE_ICRC_LEN);
	r = droce_wire_parse(segs, nseg, 0, &pkt);
	free_segs(segs, nseg);
	CHECK_EQ_U64(calc, vec_icrc(v));
	/* The parser wants every header, extension headers too, in the first segment. */
	if (nseg > 1 && cuts[0] < vec_hdrs_end(v)) {
		CHECK_EQ_U64(r, DROCE_WIRE_HDR_SPLIT);
		return;
	}
	CHECK_EQ_U64(r, DROCE_WIRE_OK);
	CHECK_EQ_U64(pkt.icrc, vec_icrc(v));
	CHECK_EQ_U64(pkt.icrc_calc, vec_icrc(v));
}

DROCE_TEST(icrc_crc32_primitives)
{
	static const uint8_t ones[LRH_ONES] = { 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF };
	static const char check[] = "123456789";

	/* The reference and ISA-L compute the same CRC (zlib's crc32). */
	CHECK_EQ_U64(wt_crc32(0, check, 9), CRC32_CHECK_VALUE);
	CHECK_EQ_U64(crc32_gzip_refl(0, (const uint8_t *)check, 9), CRC32_CHECK_VALUE);
	/* Both continue across calls. */
	CHECK_EQ_U64(crc32_gzip_refl(crc32_gzip_refl(0, (const uint8_t *)check, 4),
				     (const uint8_t *)check + 4, 5), CRC32_CHECK_VALUE);
	CHECK_EQ_U64(wt_crc32(wt_crc32(0, check, 4), check + 4, 5), CRC32_CHECK_VALUE);
	/* The seed is the CRC of the LRH stand-in. */
	CHECK_EQ_U64(crc32_gzip_refl(0, ones, sizeof(ones)), WIRE_ICRC_SEED);
	CHECK_EQ_U64(wt_crc32(0, ones, sizeof(ones)), WIRE_ICRC_SEED);
}

DROCE_TEST(icrc_wire_hex)
{
	CHECK_EQ_U64(droce_icrc_wire_hex(0x12345678), 0x78563412);
	CHECK_EQ_U64(droce_icrc_wire_hex(0x000000FF), 0xFF000000);
}

DROCE_TEST(icrc_known_answers)
{
	unsigned int i;

	CHECK(NVEC >= 6);
	for (i = 0; i < NVEC; i++) {
		const struct icrc_vector *v = &icrc_vectors[i];
		struct droce_wire_seg seg = { v->bytes, v->len };
		uint32_t calc = droce_icrc_calc(&seg, 1, v->l3_off, v->len - DROCE_ICRC_LEN);

		droce_test_ctx("%s (%s)", v->name, v->oracle);
		CHECK_EQ_U64(droce_icrc_wire_hex(calc), v->icrc_wire);
		CHECK_EQ_U64(calc, vec_icrc(v));
		/* The test's own reference agrees, so it can judge other packets. */
		CHECK_EQ_U64(wt_ref_icrc(v->bytes, v->l3_off, v->len - DROCE_ICRC_LEN), calc);
		check_split(v, NULL, 1);
	}
}

DROCE_TEST(icrc_two_segments_every_split)
{
	unsigned int i;
	uint32_t k;

	for (i = 0; i < NVEC; i++) {
		const struct icrc_vector *v = &icrc_vectors[i];

		for (k = vec_bth_end(v); k <= v->len; k++) {
			droce_test_ctx("%s split at %u", v->name, k);
			check_split(v, &k, 2);
		}
	}
}

DROCE_TEST(icrc_three_segments_every_split)
{
	unsigned int i;
	uint32_t cuts[2];

	for (i = 0; i < NVEC; i++) {
		const struct icrc_vector *v = &icrc_vectors[i];

		for (cuts[0] = vec_bth_end(v); cuts[0] <= v->len; cuts[0]++) {
			for (cuts[1] = cuts[0]; cuts[1] <= v->len; cuts[1]++) {
				droce_test_ctx("%s split at %u and %u", v->name, cuts[0],
					       cuts[1]);
				check_split(v, cuts, 3);
			}
		}
	}
}

DROCE_TEST(icrc_covers_only_up_to_icrc_off)
{
	unsigned int i;

	/* Whatever follows icrc_off (the ICRC itself, Ethernet padding) is not hashed. */
	for (i = 0; i < NVEC; i++) {
		const struct icrc_vector *v = &icrc_vectors[i];
		uint8_t *b = droce_test_malloc(v->len + 8);
		struct droce_wire_seg seg = { b, v->len + 8 };

		droce_test_ctx("%s", v->name);
		memcpy(b, v->bytes, v->len);
		memset(b + v->len - DROCE_ICRC_LEN, 0xA5, DROCE_ICRC_LEN + 8);
		CHECK_EQ_U64(droce_icrc_calc(&seg, 1, v->l3_off, v->len - DROCE_ICRC_LEN),
			     vec_icrc(v));
		droce_test_free(b);
	}
}
