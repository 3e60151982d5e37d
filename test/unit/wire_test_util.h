/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef WIRE_TEST_UTIL_H
#define WIRE_TEST_UTIL_H

/*
 * Helpers shared by the lib/wire tests: independent reference implementations (CRC-32,
 * ICRC, IPv4 checksum) written from the specs without lib/wire's code, big-endian byte
 * access, and random flows and transport headers.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "droce_wire_pkt.h"

/* Field offsets inside the headers, from RFC 791, RFC 8200, RFC 768 and IB spec 9.2. */
#define WT_IPV4_TOS		1
#define WT_IPV4_TOTAL_LEN	2
#define WT_IPV4_ID		4
#define WT_IPV4_FRAG		6
#define WT_IPV4_TTL		8
#define WT_IPV4_PROTO		9
#define WT_IPV4_CSUM		10
#define WT_IPV4_SRC		12
#define WT_IPV6_PAYLOAD_LEN	4
#define WT_IPV6_NEXT_HDR	6
#define WT_IPV6_HOP_LIMIT	7
#define WT_UDP_DPORT		2
#define WT_UDP_LEN		4
#define WT_UDP_CSUM		6
#define WT_BTH_FLAGS		1
#define WT_BTH_FECN_BYTE	4

/* zlib's crc32(): reflected IEEE 802.3 polynomial, pre- and post-inverted; continues. */
uint32_t wt_crc32(uint32_t crc, const void *buf, size_t len);

/*
 * The ICRC of a contiguous frame per IB spec Annex A17.3.3 (see roce-protocol.md):
 * crc32 of 8 bytes of 0xFF and the bytes [l3_off, icrc_off) with the variant fields set
 * to ones. IPv4 or IPv6 is taken from the version nibble, the IPv4 header length from IHL.
 */
uint32_t wt_ref_icrc(const uint8_t *frame, uint32_t l3_off, uint32_t icrc_off);

/* Writes crc after the covered bytes, least-significant byte first (A17.3.3). */
void wt_put_icrc(uint8_t *frame, uint32_t icrc_off, uint32_t crc);
/* The ICRC field of a frame, read least-significant byte first. */
uint32_t wt_get_icrc(const uint8_t *frame, uint32_t icrc_off);

/* RFC 1071 sum over an IPv4 header of IHL words: 0 when its checksum is valid. */
uint16_t wt_ipv4_csum(const uint8_t *ip);
/* Recomputes the checksum of the IPv4 header at ip. */
void wt_ipv4_fix_csum(uint8_t *ip);

uint64_t wt_get_be(const uint8_t *p, unsigned int nbytes);
void wt_put_be(uint8_t *p, unsigned int nbytes, uint64_t v);

/*
 * A random flow: MACs, GIDs (IPv4-mapped for IPv4, link-local for IPv6), traffic class,
 * hop limit (sometimes 0, meaning 64), flow label and UDP source port.
 */
void wt_random_addr(struct droce_wire_addr *a, bool ipv6, bool vlan);
/* Random values in every field of h, each within its field's width. */
void wt_random_hdrs(struct droce_wire_hdrs *h, uint8_t opcode);

#endif /* WIRE_TEST_UTIL_H */
