/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef DROCE_WIRE_GID_H
#define DROCE_WIRE_GID_H

/*
 * GIDs of IP addresses, droce's one definition of them (RoCEv2, IBA Annex A17.8): an IPv6
 * address is its own GID; IPv4 address a.b.c.d is the IPv4-mapped IPv6 address
 * ::ffff:a.b.c.d (RFC 4291 2.5.5.2). Header-only: libdroce and librdmacm use it too.
 */

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define DROCE_GID_LEN		16
#define DROCE_GID_V4_OFF	12	/* where the IPv4 address sits in its GID */

/* The GID of an IPv4 address given as its 4 bytes in network order. */
static inline void
droce_gid_from_ipv4(uint8_t gid[DROCE_GID_LEN], const uint8_t ip[4])
{
	memset(gid, 0, DROCE_GID_V4_OFF - 2);
	gid[DROCE_GID_V4_OFF - 2] = 0xFF;
	gid[DROCE_GID_V4_OFF - 1] = 0xFF;
	memcpy(gid + DROCE_GID_V4_OFF, ip, 4);
}

/* The GID of an IPv4 address in host order. */
static inline void
droce_gid_from_ipv4_host(uint8_t gid[DROCE_GID_LEN], uint32_t ip)
{
	const uint8_t b[4] = { (uint8_t)(ip >> 24), (uint8_t)(ip >> 16), (uint8_t)(ip >> 8),
			       (uint8_t)ip };

	droce_gid_from_ipv4(gid, b);
}

/* Whether gid is IPv4-mapped, that is an IPv4 address's. */
static inline bool
droce_gid_is_ipv4(const uint8_t gid[DROCE_GID_LEN])
{
	unsigned int i;

	for (i = 0; i < DROCE_GID_V4_OFF - 2; i++)
		if (gid[i] != 0)
			return false;
	return gid[DROCE_GID_V4_OFF - 2] == 0xFF && gid[DROCE_GID_V4_OFF - 1] == 0xFF;
}

/* The IPv4 address (host order) of an IPv4-mapped gid. */
static inline uint32_t
droce_gid_ipv4_host(const uint8_t gid[DROCE_GID_LEN])
{
	const uint8_t *b = gid + DROCE_GID_V4_OFF;

	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

/* A multicast GID: IPv6 ff00::/8, or IPv4-mapped 224.0.0.0/4. */
static inline bool
droce_gid_is_multicast(const uint8_t gid[DROCE_GID_LEN])
{
	if (gid[0] == 0xFF)
		return true;
	return droce_gid_is_ipv4(gid) && (gid[DROCE_GID_V4_OFF] & 0xF0) == 0xE0;
}

#endif /* DROCE_WIRE_GID_H */
