/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * UD address handles. An AH is droced's handle (droce_shm_swqe.ud.ah); the context keeps
 * which handles are live so that ibv_post_send refuses a destroyed one (verbs_ah_check).
 * ibv_init_ah_from_wc reads the 40 bytes in front of a UD receive: on RoCEv2 they hold the
 * packet's IPv6 header, or, for IPv4, 20 unused bytes and then the IPv4 header (RoCEv2
 * annex A17.4.5.1); the IPv4 header is recognised by a valid header checksum.
 */

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <droce_wire_gid.h>

#include "verbs_loc.h"

/* IPv4 header fields (RFC 791) inside the 20 bytes. */
#define IPV4_VER_IHL		0x45	/* version 4, 5 words: no options */
#define IPV4_TOS_OFF		1
#define IPV4_SRC_OFF		12
#define IPV4_DST_OFF		16
/* IPv6 header fields (RFC 8200), the IB GRH layout. */
#define IPV6_SRC_OFF		8
#define IPV6_DST_OFF		24
#define GRH_FLOW_MASK		0xFFFFFu
#define GRH_TCLASS_SHIFT	20
#define GRH_TCLASS_MASK		0xFFu

bool
verbs_ah_check(void *arg, uint32_t ah)
{
	struct verbs_dctx *c = arg;
	bool ok;

	pthread_rwlock_rdlock(&c->key_lock);
	ok = ah < c->nb_ahs && c->ahs[ah] != 0;
	pthread_rwlock_unlock(&c->key_lock);
	return ok;
}

static int
ah_mark(struct verbs_dctx *c, uint32_t ah, uint8_t live)
{
	int ret = 0;

	pthread_rwlock_wrlock(&c->key_lock);
	if (ah >= c->nb_ahs) {
		uint32_t n = c->nb_ahs != 0 ? c->nb_ahs : 64;
		uint8_t *v;

		while (n <= ah)
			n *= 2;
		v = realloc(c->ahs, n);
		if (v == NULL) {
			ret = ENOMEM;
			goto out;
		}
		memset(v + c->nb_ahs, 0, n - c->nb_ahs);
		c->ahs = v;
		c->nb_ahs = n;
	}
	c->ahs[ah] = live;
out:
	pthread_rwlock_unlock(&c->key_lock);
	return ret;
}

VERBS_EXPORT struct ibv_ah *
ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_CREATE_AH };
	struct droce_proto_resp resp;
	struct verbs_dctx *c;
	struct ibv_ah *ah;
	int ret;

	if (pd == NULL || attr == NULL)
		return verbs_err_null(EINVAL);
	c = to_dctx(pd->context);
	/* RoCE: the GRH is the address; port 1 is the only port. */
	if (!attr->is_global || attr->port_num != VERBS_PORT_NUM ||
	    attr->grh.sgid_index >= c->nb_gids || !c->gids[attr->grh.sgid_index].valid)
		return verbs_err_null(EINVAL);
	ah = calloc(1, sizeof(*ah));
	if (ah == NULL)
		return verbs_err_null(ENOMEM);
	req.create_ah.pd = pd->handle;
	memcpy(req.create_ah.attr.dgid, attr->grh.dgid.raw, sizeof(req.create_ah.attr.dgid));
	/* The GRH field has 20 bits; the kernel and NICs drop the others (UCX passes ~0). */
	req.create_ah.attr.flow_label = attr->grh.flow_label & DROCE_SHM_FLOW_LABEL_MAX;
	req.create_ah.attr.sgid_index = attr->grh.sgid_index;
	req.create_ah.attr.hop_limit = attr->grh.hop_limit;
	req.create_ah.attr.traffic_class = attr->grh.traffic_class;
	req.create_ah.attr.is_global = 1;
	req.create_ah.attr.sl = attr->sl;
	req.create_ah.attr.port_num = attr->port_num;
	ret = verbs_request(c, &req, NULL, 0, &resp);
	if (ret == 0) {
		ret = ah_mark(c, resp.obj.handle, 1);
		if (ret != 0) {
			struct droce_proto_req d = { .op = DROCE_PROTO_OP_DESTROY_AH };

			d.obj.handle = resp.obj.handle;
			verbs_request(c, &d, NULL, 0, &resp);
		}
	}
	if (ret != 0) {
		free(ah);
		return verbs_err_null(ret);
	}
	ah->context = pd->context;
	ah->pd = pd;
	ah->handle = resp.obj.handle;
	return ah;
}

VERBS_EXPORT int
ibv_destroy_ah(struct ibv_ah *ah)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_DESTROY_AH };
	struct droce_proto_resp resp;
	struct verbs_dctx *c;
	int ret;

	if (ah == NULL)
		return verbs_err(EINVAL);
	c = to_dctx(ah->context);
	/* Refused to new posts first: a WQE naming it is not written once destroy began. */
	ah_mark(c, ah->handle, 0);
	req.obj.handle = ah->handle;
	ret = verbs_request(c, &req, NULL, 0, &resp);
	if (ret != 0) {
		ah_mark(c, ah->handle, 1);
		return verbs_err(ret);
	}
	free(ah);
	return 0;
}

/* The one's-complement sum of a valid IPv4 header (checksum included) is 0xFFFF. */
static bool
ipv4_hdr_valid(const uint8_t *h)
{
	uint32_t sum = 0;
	unsigned int i;

	if (h[0] != IPV4_VER_IHL)
		return false;
	for (i = 0; i < VERBS_IPV4_HDR_LEN; i += 2)
		sum += (uint32_t)h[i] << 8 | h[i + 1];
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return sum == 0xFFFF;
}

/*
 * ibv_init_ah_from_wc(3): an AH attribute that answers the sender of wc: its source
 * address becomes our destination, the local GID it was sent to our source GID index.
 * 0, or the errno value: EINVAL without a GRH (RoCE needs one), ENOENT when the packet's
 * destination is none of our GIDs.
 */
VERBS_EXPORT int
ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc,
		    struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
	const uint8_t *raw = (const uint8_t *)grh;
	const uint8_t *v4 = raw + VERBS_GRH_LEN - VERBS_IPV4_HDR_LEN;
	uint8_t dst[16];
	struct verbs_dctx *c;
	uint32_t i;

	if (context == NULL || wc == NULL || grh == NULL || ah_attr == NULL ||
	    port_num != VERBS_PORT_NUM || !(wc->wc_flags & IBV_WC_GRH))
		return verbs_err(EINVAL);
	c = to_dctx(context);
	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->sl = wc->sl;
	ah_attr->port_num = port_num;
	ah_attr->is_global = 1;
	if (ipv4_hdr_valid(v4)) {
		droce_gid_from_ipv4(ah_attr->grh.dgid.raw, v4 + IPV4_SRC_OFF);
		droce_gid_from_ipv4(dst, v4 + IPV4_DST_OFF);
		ah_attr->grh.traffic_class = v4[IPV4_TOS_OFF];
	} else {
		uint32_t vtf = be32toh(grh->version_tclass_flow);

		memcpy(ah_attr->grh.dgid.raw, raw + IPV6_SRC_OFF, 16);
		memcpy(dst, raw + IPV6_DST_OFF, 16);
		ah_attr->grh.flow_label = vtf & GRH_FLOW_MASK;
		ah_attr->grh.traffic_class = (uint8_t)((vtf >> GRH_TCLASS_SHIFT) & GRH_TCLASS_MASK);
	}
	/* rdma-core answers with the largest hop limit, whatever the request had left. */
	ah_attr->grh.hop_limit = 0xFF;
	for (i = 0; i < c->nb_gids; i++)
		if (c->gids[i].valid && memcmp(c->gids[i].gid, dst, sizeof(dst)) == 0)
			break;
	if (i == c->nb_gids)
		return verbs_err(ENOENT);
	ah_attr->grh.sgid_index = (uint8_t)i;
	return 0;
}

VERBS_EXPORT struct ibv_ah *
ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh,
		      uint8_t port_num)
{
	struct ibv_ah_attr attr;
	int ret;

	if (pd == NULL)
		return verbs_err_null(EINVAL);
	ret = ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr);
	if (ret != 0)
		return verbs_err_null(ret);
	return ibv_create_ah(pd, &attr);
}
