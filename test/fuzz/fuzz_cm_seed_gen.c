/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Writes the seed corpus of fuzz_cm_parse into a directory: one MAD per CM attribute
 * with every field at a pseudo-random value, REQs carrying an IPv4 and an IPv6 RDMA CM
 * header, and a MAD broken in each way the parser names. Each seed is parsed here and
 * must give the outcome it was made for.
 *
 * Usage: fuzz_cm_seed_gen DIR
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "droce_cm.h"

#define SEED_NAME_MAX	256

static const uint16_t attrs[] = {
	DROCE_CM_ATTR_REQ, DROCE_CM_ATTR_MRA, DROCE_CM_ATTR_REJ, DROCE_CM_ATTR_REP,
	DROCE_CM_ATTR_RTU, DROCE_CM_ATTR_DREQ, DROCE_CM_ATTR_DREP, DROCE_CM_ATTR_SIDR_REQ,
	DROCE_CM_ATTR_SIDR_REP,
};

/* Header byte, value and the rejection it makes. */
static const struct {
	unsigned int off;
	uint8_t val;
	enum droce_cm_result want;
} broken[] = {
	{ 0, 0x02, DROCE_CM_BAD_BASE_VERSION },
	{ 1, 0x81, DROCE_CM_BAD_CLASS },
	{ 2, 0x01, DROCE_CM_BAD_CLASS_VERSION },
	{ 3, 0x81, DROCE_CM_BAD_METHOD },
	{ 17, 0x19, DROCE_CM_UNKNOWN_ATTR },
};

static uint64_t rng_state = 0x5EED;

static uint64_t
rng(void)
{
	uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static int
emit(const char *dir, const char *name, const uint8_t *buf, size_t len,
     enum droce_cm_result want)
{
	struct droce_cm_msg m;
	char path[SEED_NAME_MAX];
	FILE *f;

	if (droce_cm_mad_parse(buf, len, &m) != want) {
		fprintf(stderr, "seed %s: parse gives %s\n", name,
			droce_cm_result_name(droce_cm_mad_parse(buf, len, &m)));
		return -1;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(buf, 1, len, f) != len) {
		perror(path);
		if (f != NULL)
			fclose(f);
		return -1;
	}
	return fclose(f) == 0 ? 0 : -1;
}

static void
random_msg(struct droce_cm_msg *m, uint16_t attr)
{
	const struct droce_cm_field *f;
	unsigned int i, n, b;
	uint8_t *host = (uint8_t *)&m->req;

	memset(m, 0, sizeof(*m));
	m->attr_id = attr;
	m->tid = rng();
	f = droce_cm_fields(attr, &n);
	for (i = 0; i < n; i++) {
		uint64_t v = rng();

		if (f[i].width > 64) {
			for (b = 0; b < f[i].host_size; b++)
				host[f[i].host_off + b] = (uint8_t)rng();
			continue;
		}
		if (f[i].width < 64)
			v &= (UINT64_C(1) << f[i].width) - 1;
		droce_cm_field_set(m, &f[i], v);
	}
}

int
main(int argc, char **argv)
{
	struct droce_cm_ip_hdr ip = { .port = 4791 };
	struct droce_cm_msg m;
	uint8_t mad[DROCE_CM_MAD_LEN];
	char name[SEED_NAME_MAX];
	unsigned int a, i;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	for (a = 0; a < sizeof(attrs) / sizeof(attrs[0]); a++) {
		random_msg(&m, attrs[a]);
		if (droce_cm_mad_build(&m, mad) != 0)
			return 1;
		snprintf(name, sizeof(name), "mad-%s", droce_cm_attr_name(attrs[a]));
		if (emit(argv[1], name, mad, sizeof(mad), DROCE_CM_OK) != 0)
			return 1;
	}
	for (ip.ip_version = 4; ip.ip_version <= 6; ip.ip_version += 2) {
		random_msg(&m, DROCE_CM_ATTR_REQ);
		m.req.service_id = droce_cm_service_id(DROCE_CM_PS_TCP, ip.port);
		for (i = 0; i < 16; i++) {
			ip.src_addr[i] = (uint8_t)rng();
			ip.dst_addr[i] = (uint8_t)rng();
		}
		if (droce_cm_ip_hdr_build(&ip, m.req.private_data) != 0 ||
		    droce_cm_mad_build(&m, mad) != 0)
			return 1;
		snprintf(name, sizeof(name), "req-ipv%u", ip.ip_version);
		if (emit(argv[1], name, mad, sizeof(mad), DROCE_CM_OK) != 0)
			return 1;
	}
	random_msg(&m, DROCE_CM_ATTR_DREQ);
	if (droce_cm_mad_build(&m, mad) != 0)
		return 1;
	if (emit(argv[1], "short", mad, DROCE_CM_MAD_LEN - 1, DROCE_CM_SHORT) != 0)
		return 1;
	for (i = 0; i < sizeof(broken) / sizeof(broken[0]); i++) {
		uint8_t bad[DROCE_CM_MAD_LEN];

		memcpy(bad, mad, sizeof(bad));
		bad[broken[i].off] = broken[i].val;
		snprintf(name, sizeof(name), "bad-%s", droce_cm_result_name(broken[i].want));
		if (emit(argv[1], name, bad, sizeof(bad), broken[i].want) != 0)
			return 1;
	}
	return 0;
}
