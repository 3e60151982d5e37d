/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * rdma_getaddrinfo: getaddrinfo(3) under rdma-core's rules (librdmacm/addrinfo.c). The
 * first address found becomes the source (RAI_PASSIVE) or the destination; the QP type
 * and port space come from the hints or from the socket type and protocol
 * (SOCK_STREAM/TCP: RC and RDMA_PS_TCP; SOCK_DGRAM/UDP: UD and RDMA_PS_UDP); a source
 * address in the hints is copied. AF_IB results (RAI_FAMILY with AF_IB) are refused with
 * EAI_FAMILY: droce is RoCE only; AF_IB without RAI_FAMILY means any IP family, as in
 * rdma-core. No route or connect data is ever returned (droce has no ib_acm service),
 * so ai_route and ai_connect stay NULL. Errors are getaddrinfo's EAI_* codes, or -1 with
 * errno, as rdma-core returns them.
 */

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <infiniband/ib.h>

#include "rdmacm_loc.h"

static void
hints_to_ai(const struct rdma_addrinfo *h, struct addrinfo *ai)
{
	memset(ai, 0, sizeof(*ai));
	if (h->ai_flags & RAI_PASSIVE)
		ai->ai_flags = AI_PASSIVE;
	if (h->ai_flags & RAI_NUMERICHOST)
		ai->ai_flags |= AI_NUMERICHOST;
	if (h->ai_family != AF_IB)
		ai->ai_family = h->ai_family;
	switch (h->ai_qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		ai->ai_socktype = SOCK_STREAM;
		break;
	case IBV_QPT_UD:
		ai->ai_socktype = SOCK_DGRAM;
		break;
	default:
		break;
	}
	switch (h->ai_port_space) {
	case RDMA_PS_TCP:
		ai->ai_protocol = IPPROTO_TCP;
		break;
	case RDMA_PS_IPOIB:
	case RDMA_PS_UDP:
		ai->ai_protocol = IPPROTO_UDP;
		break;
	case RDMA_PS_IB:
		if (ai->ai_socktype == SOCK_STREAM)
			ai->ai_protocol = IPPROTO_TCP;
		else if (ai->ai_socktype == SOCK_DGRAM)
			ai->ai_protocol = IPPROTO_UDP;
		break;
	default:
		break;
	}
}

static int
copy_addr(struct sockaddr **dst, socklen_t *dst_len, const struct sockaddr *src,
	  socklen_t len)
{
	*dst = malloc(len);
	if (*dst == NULL)
		return rcm_err(ENOMEM);
	memcpy(*dst, src, len);
	*dst_len = len;
	return 0;
}

static int
ai_to_rai(const struct rdma_addrinfo *h, const struct addrinfo *ai, struct rdma_addrinfo *rai)
{
	if (h->ai_qp_type != 0)
		rai->ai_qp_type = h->ai_qp_type;
	else if (ai->ai_socktype == SOCK_STREAM)
		rai->ai_qp_type = IBV_QPT_RC;
	else if (ai->ai_socktype == SOCK_DGRAM)
		rai->ai_qp_type = IBV_QPT_UD;
	if (h->ai_port_space != 0)
		rai->ai_port_space = h->ai_port_space;
	else if (ai->ai_protocol == IPPROTO_TCP)
		rai->ai_port_space = RDMA_PS_TCP;
	else if (ai->ai_protocol == IPPROTO_UDP)
		rai->ai_port_space = RDMA_PS_UDP;
	rai->ai_family = ai->ai_family;
	if (ai->ai_flags & AI_PASSIVE) {
		rai->ai_flags = RAI_PASSIVE;
		if (ai->ai_canonname != NULL)
			rai->ai_src_canonname = strdup(ai->ai_canonname);
		return copy_addr(&rai->ai_src_addr, &rai->ai_src_len, ai->ai_addr,
				 ai->ai_addrlen);
	}
	if (ai->ai_canonname != NULL)
		rai->ai_dst_canonname = strdup(ai->ai_canonname);
	return copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len, ai->ai_addr, ai->ai_addrlen);
}

RCM_EXPORT int
rdma_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints,
		 struct rdma_addrinfo **res)
{
	static const struct rdma_addrinfo nohints;
	struct rdma_addrinfo *rai;
	int ret = 0;

	if ((node == NULL && service == NULL && hints == NULL) || res == NULL)
		return rcm_err(EINVAL);
	if (hints != NULL && hints->ai_family == AF_IB && (hints->ai_flags & RAI_FAMILY))
		return EAI_FAMILY;
	rai = calloc(1, sizeof(*rai));
	if (rai == NULL)
		return rcm_err(ENOMEM);
	if (node != NULL || service != NULL) {
		struct addrinfo aih, *ai;

		if (hints != NULL)
			hints_to_ai(hints, &aih);
		ret = getaddrinfo(node, service, hints != NULL ? &aih : NULL, &ai);
		if (ret == 0) {
			ret = ai_to_rai(hints != NULL ? hints : &nohints, ai, rai);
			freeaddrinfo(ai);
		}
	} else {
		rai->ai_flags = hints->ai_flags;
		rai->ai_family = hints->ai_family;
		rai->ai_qp_type = hints->ai_qp_type;
		rai->ai_port_space = hints->ai_port_space;
		if (hints->ai_dst_len != 0)
			ret = copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len, hints->ai_dst_addr,
					hints->ai_dst_len);
	}
	if (ret == 0 && rai->ai_src_len == 0 && hints != NULL && hints->ai_src_len != 0)
		ret = copy_addr(&rai->ai_src_addr, &rai->ai_src_len, hints->ai_src_addr,
				hints->ai_src_len);
	if (ret != 0) {
		rdma_freeaddrinfo(rai);
		return ret;
	}
	*res = rai;
	return 0;
}

RCM_EXPORT void
rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	struct rdma_addrinfo *rai;

	while (res != NULL) {
		rai = res;
		res = res->ai_next;
		free(rai->ai_connect);
		free(rai->ai_route);
		free(rai->ai_src_canonname);
		free(rai->ai_dst_canonname);
		free(rai->ai_src_addr);
		free(rai->ai_dst_addr);
		free(rai);
	}
}
