/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * The RDMA CM private-data header (IB spec Annex A11; Linux's struct cma_hdr):
 *	byte 0		version, 0
 *	byte 1		IP version in bits 7..4, bits 3..0 reserved
 *	bytes 2-3	port, big-endian
 *	bytes 4-19	source address
 *	bytes 20-35	destination address
 * An IPv4 address takes the last four bytes of its 16, after twelve zero bytes.
 */

#include <errno.h>
#include <string.h>

#include "droce_cm.h"

#define IP_VERSION_SHIFT	4
#define IP_HDR_PORT		2
#define IP_HDR_SRC		4
#define IP_HDR_DST		20
#define IPV4_LEN		4
#define IPV4_OFF		12	/* of an IPv4 address in its 16 bytes */
#define IPV4_MAPPED_FF		10	/* ::ffff:a.b.c.d: bytes 10 and 11 are 0xFF */

static void
addr_put(uint8_t *wire, const uint8_t *addr, unsigned int ip_version)
{
	if (ip_version == 6) {
		memcpy(wire, addr, 16);
		return;
	}
	memset(wire, 0, IPV4_OFF);
	memcpy(wire + IPV4_OFF, addr + IPV4_OFF, IPV4_LEN);
}

static void
addr_get(uint8_t *addr, const uint8_t *wire, unsigned int ip_version)
{
	if (ip_version == 6) {
		memcpy(addr, wire, 16);
		return;
	}
	memset(addr, 0, IPV4_OFF);
	addr[IPV4_MAPPED_FF] = 0xFF;
	addr[IPV4_MAPPED_FF + 1] = 0xFF;
	memcpy(addr + IPV4_OFF, wire + IPV4_OFF, IPV4_LEN);
}

int
droce_cm_ip_hdr_build(const struct droce_cm_ip_hdr *h, uint8_t pdata[DROCE_CM_IP_HDR_LEN])
{
	if (h->ip_version != 4 && h->ip_version != 6)
		return -EINVAL;
	pdata[0] = DROCE_CM_IP_HDR_VERSION;
	pdata[1] = (uint8_t)(h->ip_version << IP_VERSION_SHIFT);
	pdata[IP_HDR_PORT] = (uint8_t)(h->port >> 8);
	pdata[IP_HDR_PORT + 1] = (uint8_t)h->port;
	addr_put(pdata + IP_HDR_SRC, h->src_addr, h->ip_version);
	addr_put(pdata + IP_HDR_DST, h->dst_addr, h->ip_version);
	return 0;
}

enum droce_cm_result
droce_cm_ip_hdr_parse(const uint8_t *pdata, size_t len, struct droce_cm_ip_hdr *h)
{
	unsigned int ipv;

	if (len < DROCE_CM_IP_HDR_LEN)
		return DROCE_CM_CMA_SHORT;
	if (pdata[0] != DROCE_CM_IP_HDR_VERSION)
		return DROCE_CM_CMA_BAD_VERSION;
	ipv = pdata[1] >> IP_VERSION_SHIFT;
	if (ipv != 4 && ipv != 6)
		return DROCE_CM_CMA_BAD_IP_VERSION;
	h->ip_version = (uint8_t)ipv;
	h->port = (uint16_t)(pdata[IP_HDR_PORT] << 8 | pdata[IP_HDR_PORT + 1]);
	addr_get(h->src_addr, pdata + IP_HDR_SRC, ipv);
	addr_get(h->dst_addr, pdata + IP_HDR_DST, ipv);
	return DROCE_CM_OK;
}
