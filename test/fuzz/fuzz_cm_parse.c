/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * libFuzzer target for droce_cm_mad_parse() and droce_cm_ip_hdr_parse(): any bytes,
 * in an allocation of exactly their length so ASan catches a read past the end. What is
 * accepted must come back the same through build and parse, and a rebuilt MAD may set
 * only bits that were set in the input (build writes reserved bits as zero). Any
 * mismatch abort()s.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "droce_cm.h"

/* rdma_cm's header starts a REQ's private data, 140 bytes into the body (table 106). */
#define REQ_PDATA_OFF	(DROCE_CM_MAD_HDR_LEN + 140)
/* The MAD header is copied as is up to its reserved bytes 18-19 (13.4.2). */
#define MAD_HDR_RESERVED	18

#define CHECK(c) do { \
		if (!(c)) { \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
			abort(); \
		} \
	} while (0)

static void
check_mad(const uint8_t *data, size_t size)
{
	struct droce_cm_msg m1, m2;
	uint8_t mad1[DROCE_CM_MAD_LEN], mad2[DROCE_CM_MAD_LEN];
	unsigned int i;

	if (droce_cm_mad_parse(data, size, &m1) != DROCE_CM_OK) {
		CHECK(size >= DROCE_CM_MAD_LEN ||
		      droce_cm_mad_parse(data, size, &m2) == DROCE_CM_SHORT);
		return;
	}
	CHECK(size >= DROCE_CM_MAD_LEN);
	CHECK(droce_cm_attr_name(m1.attr_id) != NULL);
	CHECK(droce_cm_mad_build(&m1, mad1) == 0);
	for (i = 0; i < DROCE_CM_MAD_LEN; i++)
		CHECK((mad1[i] & ~data[i]) == 0);
	CHECK(memcmp(mad1, data, MAD_HDR_RESERVED) == 0);
	CHECK(droce_cm_mad_parse(mad1, sizeof(mad1), &m2) == DROCE_CM_OK);
	CHECK(memcmp(&m1, &m2, sizeof(m1)) == 0);
	CHECK(droce_cm_mad_build(&m2, mad2) == 0);
	CHECK(memcmp(mad1, mad2, sizeof(mad1)) == 0);
}

static void
check_ip_hdr(const uint8_t *data, size_t size)
{
	struct droce_cm_ip_hdr h1, h2;
	uint8_t wire[DROCE_CM_IP_HDR_LEN];

	memset(&h1, 0, sizeof(h1));
	memset(&h2, 0, sizeof(h2));
	if (droce_cm_ip_hdr_parse(data, size, &h1) != DROCE_CM_OK)
		return;
	CHECK(size >= DROCE_CM_IP_HDR_LEN);
	CHECK(droce_cm_ip_hdr_build(&h1, wire) == 0);
	CHECK(droce_cm_ip_hdr_parse(wire, sizeof(wire), &h2) == DROCE_CM_OK);
	CHECK(memcmp(&h1, &h2, sizeof(h1)) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy = malloc(size ? size : 1);

	if (copy == NULL)
		return 0;
	memcpy(copy, data, size);
	check_mad(copy, size);
	check_ip_hdr(copy, size);
	if (size > REQ_PDATA_OFF)
		check_ip_hdr(copy + REQ_PDATA_OFF, size - REQ_PDATA_OFF);
	free(copy);
	return 0;
}
