/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * The port object: configuration, counters, receive dispatch, frame allocation and
 * transmit through the caller's callback.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rte_errno.h>

#include "net_loc.h"

RTE_LOG_REGISTER(droce_net_logtype, droce.net, NOTICE);

const char *const droce_net_counter_names[] = {
#define COUNTER_NAME(name, desc) #name,
	DROCE_NET_COUNTERS(COUNTER_NAME)
#undef COUNTER_NAME
};

const char *const droce_net_counter_descs[] = {
#define COUNTER_DESC(name, desc) desc,
	DROCE_NET_COUNTERS(COUNTER_DESC)
#undef COUNTER_DESC
};

const uint8_t net_mac_broadcast[6] = { 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF };

bool
net_mac_is_unicast(const uint8_t mac[6])
{
	static const uint8_t zero[6];

	/* The I/G bit (IEEE 802 first octet, bit 0) marks group addresses. */
	return (mac[0] & 0x01) == 0 && memcmp(mac, zero, sizeof(zero)) != 0;
}

struct droce_net *
droce_net_create(const struct droce_net_conf *conf)
{
	struct droce_net *n;

	if (conf == NULL || conf->mp == NULL || conf->hz == 0 || conf->ops.tx == NULL ||
	    conf->ipv4_prefix_len > NET_IPV4_BITS || conf->nb_ipv6 > DROCE_NET_MAX_IPV6 ||
	    !net_mac_is_unicast(conf->mac)) {
		rte_errno = EINVAL;
		return NULL;
	}
	n = calloc(1, sizeof(*n));
	if (n == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	n->conf = *conf;
	if (n->conf.arp_retry_ms == 0)
		n->conf.arp_retry_ms = DROCE_NET_ARP_RETRY_MS_DEFAULT;
	if (n->conf.arp_tries == 0)
		n->conf.arp_tries = DROCE_NET_ARP_TRIES_DEFAULT;
	if (n->conf.reachable_ms == 0)
		n->conf.reachable_ms = DROCE_NET_REACHABLE_MS_DEFAULT;
	n->retry_ticks = n->conf.hz * n->conf.arp_retry_ms / NET_MS_PER_S;
	n->reachable_ticks = n->conf.hz * n->conf.reachable_ms / NET_MS_PER_S;
	if (n->conf.mcast_report_ms == 0)
		n->conf.mcast_report_ms = DROCE_NET_MCAST_REPORT_MS_DEFAULT;
	n->mcast_report_ticks = n->conf.hz * n->conf.mcast_report_ms / NET_MS_PER_S;
	n->ipv4_mask = n->conf.ipv4_prefix_len == 0 ? 0 :
		UINT32_MAX << (NET_IPV4_BITS - n->conf.ipv4_prefix_len);
	net_gid_table_init(n);
	return n;
}

void
droce_net_free(struct droce_net *n)
{
	uint32_t i;

	if (n == NULL)
		return;
	for (i = 0; i < DROCE_NET_MAX_NEIGH; i++)
		net_neigh_drop_queue(n, &n->neigh[i], false);
	free(n);
}

void
droce_net_stats_get(const struct droce_net *n, struct droce_net_stats *st)
{
	*st = n->st;
}

void
droce_net_stats_print(FILE *f, const struct droce_net *n)
{
	const uint64_t *v = (const uint64_t *)&n->st;
	size_t i;

	for (i = 0; i < DROCE_NET_NB_COUNTERS; i++) {
		if (v[i] != 0)
			fprintf(f, " %s=%" PRIu64, droce_net_counter_names[i], v[i]);
	}
}

uint32_t
net_sum_bytes(const void *p, uint32_t len)
{
	const uint8_t *b = p;
	uint32_t sum = 0, i;

	for (i = 0; i < len; i++)
		sum += (i & 1) != 0 ? b[i] : (uint32_t)b[i] << 8;
	return sum;
}

/*
 * Not rte_raw_cksum_mbuf: in DPDK 22.11 it truncates the partial sum of a segment that
 * starts at an odd offset, so chains cut at odd offsets fail. Control path: byte by byte
 * is fast enough.
 */
uint32_t
net_mbuf_sum(const struct rte_mbuf *m, uint32_t off, uint32_t len)
{
	uint32_t sum = 0, done = 0;

	for (; m != NULL && done < len; m = m->next) {
		const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
		uint32_t seg = rte_pktmbuf_data_len(m), i;

		if (off >= seg) {
			off -= seg;
			continue;
		}
		for (i = off; i < seg && done < len; i++, done++)
			sum += (done & 1) != 0 ? p[i] : (uint32_t)p[i] << 8;
		off = 0;
	}
	return sum;
}

uint16_t
net_cksum_fold(uint32_t sum)
{
	while ((sum >> 16) != 0)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return (uint16_t)~sum;
}

void
net_mbuf_copy(const struct rte_mbuf *m, uint32_t off, uint32_t len, void *dst)
{
	const void *p = rte_pktmbuf_read(m, off, len, dst);

	/* rte_pktmbuf_read copies only when the bytes span segments. */
	if (p != dst)
		memcpy(dst, p, len);
}

struct rte_mbuf *
net_frame_alloc(struct droce_net *n, uint32_t len)
{
	struct rte_mbuf *m;
	char *p;

	m = rte_pktmbuf_alloc(n->conf.mp);
	if (m == NULL) {
		n->st.tx_nombuf++;
		return NULL;
	}
	p = rte_pktmbuf_append(m, len);
	if (p == NULL) {
		rte_pktmbuf_free(m);
		n->st.tx_nombuf++;
		return NULL;
	}
	memset(p, 0, len);
	return m;
}

void
net_tx(struct droce_net *n, struct rte_mbuf *m)
{
	n->conf.ops.tx(n->conf.ops.arg, m);
}

int
droce_net_rx(struct droce_net *n, struct rte_mbuf *m, uint64_t now)
{
	struct droce_eth_hdr eth_buf;
	const struct droce_eth_hdr *eth;
	bool to_us, to_group;
	int ret;

	n->st.rx_frames++;
	eth = rte_pktmbuf_read(m, 0, sizeof(eth_buf), &eth_buf);
	if (eth == NULL) {
		n->st.rx_malformed++;
		rte_pktmbuf_free(m);
		return -EBADMSG;
	}
	/*
	 * A promiscuous port also sees frames for other stations, and an all-multicast one
	 * every group's: a NIC's multicast filter would pass only the groups we joined.
	 */
	to_us = memcmp(eth->dst, n->conf.mac, 6) == 0 ||
		memcmp(eth->dst, net_mac_broadcast, 6) == 0;
	to_group = !to_us && net_mcast_mac_wanted(n, eth->dst);
	if (!to_us && !to_group) {
		ret = -ENOENT;
	} else {
		switch (droce_eth_type(eth)) {
		case NET_ETHERTYPE_ARP:
			ret = to_us ? net_arp_rx(n, m, now) : -ENOENT;
			break;
		case DROCE_ETHERTYPE_IPV4:
			ret = net_ipv4_rx(n, m, eth, to_group, now);
			break;
		case DROCE_ETHERTYPE_IPV6:
			/* No IPv6 service of our own: only MLD, which is sent to groups. */
			ret = to_group ? net_ipv6_rx(n, m, eth, now) : -ENOENT;
			break;
		default:
			ret = -ENOENT;
			break;
		}
	}
	if (ret == -ENOENT)
		n->st.rx_foreign++;
	else if (ret == -EBADMSG)
		n->st.rx_malformed++;
	rte_pktmbuf_free(m);
	return ret;
}
