/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * mcast_peer: UD multicast between two RDMA devices, for the soft-RoCE interop suite
 * (test/rxe/test_rxe_interop.py). No packaged program sends to a multicast group and
 * checks what arrives, so this one is ours. Like mw_peer it is built against rdma-core's
 * headers and linked with the system's libibverbs: the same binary runs in the QEMU guest
 * on rdma-core and rxe, and on droce's side on droce's libibverbs.so.1 (LD_LIBRARY_PATH).
 *
 *   mcast_peer [options]          the receiver: attaches a UD QP to the group, waits
 *   mcast_peer [options] HOST     the sender: connects to the receiver on HOST
 *
 * Both name the group with -m: an IPv4 group (239.1.2.3, or ::ffff:239.1.2.3) or an IPv6
 * one (ff0e::1:2); on RoCEv2 an IPv4 group is the IPv4-mapped GID.
 *
 *   receiver  creates a UD QP (RTS, its Q_Key -q), attaches it to the group
 *             (ibv_attach_mcast), posts receives for every message the sender will send
 *             (so that a message delivered when it should not be finds a WQE and shows),
 *             accepts the sender's TCP connection and tells it its QPN, Q_Key and GID;
 *             receives N messages and checks each: status, opcode, length, the GRH flag,
 *             src_qp the sender's QPN (from the TCP exchange), the GRH area's destination
 *             the group, its source the sender's GID and its TTL (hop limit) the sender's
 *             -l (multicast keeps the caller's), the payload's pattern and that every
 *             message came once. Then it detaches (ibv_detach_mcast) and says so;
 *             the sender sends M more messages to the group and one to the receiver's own
 *             address (the marker): up to the marker and GRACE_MS after it nothing may
 *             arrive from the group.
 *   sender    creates a UD QP and an AH to the group (is_global, dgid the group,
 *             sgid_index -g, hop_limit -l), sends N SENDs to QPN 0xFFFFFF with the
 *             receiver's Q_Key, then after the detach the M SENDs and the marker (an AH to
 *             the receiver's GID), and waits for the receiver's verdict.
 *
 * The marker makes "nothing arrived" mean something: it follows the last multicast SEND
 * on the same QP and the same link, so once it is in, whatever was sent to the group
 * before it would have been too. It goes between the GIDs at -G (by default -g's), so
 * that the run of an IPv6 group can send it over IPv4, with no IPv6 neighbour to resolve.
 *
 * --ip-join IFNAME is for Linux 6.1's rxe as the receiver: its ibv_attach_mcast adds a
 * link-layer address to the netdev but joins no IP group, so the kernel's IP layer drops
 * the group's packets before rxe's UDP socket sees them (and for an IPv4 group the
 * link-layer address is the IPv6 mapping of the GID: 33:33:ef:01:02:03 for 239.1.2.3, not
 * 01:00:5e:01:02:03). With the option the receiver also joins the group on IFNAME with a
 * UDP socket of its own (IP_ADD_MEMBERSHIP, IPV6_JOIN_GROUP), for the whole run (the
 * detach is then still the RDMA device's own), and prints a NOTE line saying so.
 *
 * Every check that fails prints one line "mcast_peer: FAIL ..."; the exit status is 0
 * only when every check passed, and the last line is then "mcast_peer: <role>: all N
 * checks passed".
 */

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "peer_util.h"

#define MCAST_QPN	0xFFFFFFu	/* IB 10.5.2: a UD SEND to a multicast group */
#define GRH_LEN		40		/* the GRH area in front of every UD receive */
/* In the GRH area of a RoCEv2 packet over IPv4: the IPv4 header in its last 20 bytes. */
#define IP4_OFF		20
#define IP4_HLEN	20

/* TCP messages: fixed size, NUL-padded text (peer_util.c). */
#define MSG_LEN		160
#define MAGIC		"MCPEER1"
_Static_assert(MSG_LEN <= PEER_MSG_MAX, "MSG_LEN over PEER_MSG_MAX");

/* Seconds: a completion (the guest runs under TCG). */
#define WC_TIMEOUT	60
/* After the marker, how long the receiver still watches for the group's messages (ms). */
#define GRACE_MS	1000

#define MAX_MSGS	256
#define MAX_AFTER	16
#define MARKER_SEQ	0xFFFFFFFFu
#define MARKER_TEXT	"mcast_peer: the marker"

struct opts {
	const char *dev;
	const char *host;
	const char *ip_join;
	int ib_port;
	int gid_index;
	int marker_gid_index;
	int tcp_port;
	int n;
	int after;
	int size;
	int hop_limit;
	uint32_t qkey;
	union ibv_gid group;
	bool group_set;
};

struct peer {
	struct peer_link link;		/* role, TCP, device, PD, CQ, checks */
	const struct opts *o;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_ah *ah;		/* the sender's, to the group */
	struct ibv_ah *marker_ah;	/* the sender's, to the receiver */
	uint8_t *buf;
	size_t slot;			/* one receive (GRH area + payload) or one send */
	int nslots;
	int join_fd;
	bool attached;
	union ibv_gid gid;		/* at -g: of the group's IP version */
	union ibv_gid ugid;		/* at -G: the marker's */
};

static bool
gid_is_v4mapped(const union ibv_gid *gid)
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };

	return memcmp(gid->raw, prefix, sizeof(prefix)) == 0;
}

/* "239.1.2.3" (mapped), "::ffff:239.1.2.3" or "ff0e::1:2"; a multicast address only. */
static int
parse_group(const char *s, union ibv_gid *gid)
{
	struct in_addr a4;

	memset(gid, 0, sizeof(*gid));
	if (inet_pton(AF_INET, s, &a4) == 1) {
		gid->raw[10] = gid->raw[11] = 0xff;
		memcpy(gid->raw + 12, &a4, 4);
	} else if (inet_pton(AF_INET6, s, gid->raw) != 1) {
		return -1;
	}
	if (gid_is_v4mapped(gid))
		return (gid->raw[12] & 0xf0) == 0xe0 ? 0 : -1;
	return gid->raw[0] == 0xff ? 0 : -1;
}

/* ---- Verbs ---- */

/* Device, PD, CQ, buffer and a UD QP in RTS. */
static int
setup(struct peer *p)
{
	const struct opts *o = p->o;
	int depth = o->n + o->after + 8;
	struct ibv_device_attr dattr;
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = (uint32_t)depth, .max_recv_wr = (uint32_t)depth,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT,
		.port_num = (uint8_t)o->ib_port,
		.qkey = o->qkey,
	};
	char s[INET6_ADDRSTRLEN];

	if (peer_open_device(&p->link, o->dev, &dattr) != 0)
		return -1;
	if (o->host == NULL)
		peer_check(&p->link, dattr.max_mcast_grp > 0 && dattr.max_mcast_qp_attach > 0,
			   "the device offers no multicast: max_mcast_grp %d, "
			   "max_mcast_qp_attach %d", dattr.max_mcast_grp,
			   dattr.max_mcast_qp_attach);
	if (peer_query_gid(&p->link, o->ib_port, o->gid_index, &p->gid) != 0)
		return -1;
	peer_gid_str(&p->gid, s, sizeof(s));
	if (!peer_check(&p->link, gid_is_v4mapped(&p->gid) == gid_is_v4mapped(&o->group),
			"GID %d (%s) and the group are not of one IP version", o->gid_index, s))
		return -1;
	if (peer_query_gid(&p->link, o->ib_port, o->marker_gid_index, &p->ugid) != 0 ||
	    peer_alloc_pd_cq(&p->link, 2 * depth) != 0)
		return -1;
	p->slot = GRH_LEN + (size_t)o->size;
	p->nslots = depth;
	p->buf = aligned_alloc(4096, (p->slot * (size_t)depth + 4095) & ~(size_t)4095);
	if (p->buf == NULL) {
		peer_fail(&p->link, "out of memory");
		return -1;
	}
	memset(p->buf, 0, p->slot * (size_t)depth);
	p->mr = ibv_reg_mr(p->link.pd, p->buf, p->slot * (size_t)depth, IBV_ACCESS_LOCAL_WRITE);
	if (p->mr == NULL) {
		peer_fail(&p->link, "ibv_reg_mr: %s", strerror(errno));
		return -1;
	}
	if (peer_create_qp(&p->link, &init, &attr, IBV_QP_QKEY, &p->qp) != 0)
		return -1;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(p->qp, &attr, IBV_QP_STATE) != 0) {
		peer_fail(&p->link, "ibv_modify_qp RTR: %s", strerror(errno));
		return -1;
	}
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = (uint32_t)getpid() & 0xffffff;
	if (ibv_modify_qp(p->qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN) != 0) {
		peer_fail(&p->link, "ibv_modify_qp RTS: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* The next completion into wc, or 0 when there is none until the deadline (-1: error). */
static int
poll_until(struct peer *p, struct ibv_wc *wc, double deadline)
{
	struct timespec pause = { .tv_nsec = 20000 };

	for (;;) {
		int n = ibv_poll_cq(p->link.cq, 1, wc);

		if (n < 0) {
			peer_fail(&p->link, "ibv_poll_cq: %d", n);
			return -1;
		}
		if (n == 1)
			return 1;
		if (peer_now_s() > deadline)
			return 0;
		nanosleep(&pause, NULL);
	}
}

/* Payload byte j of message seq (its first 4 bytes are seq, big-endian). */
static uint8_t
pattern(uint32_t seq, size_t j)
{
	return (uint8_t)(0x5b + seq * 31 + j * 7 + (j >> 8));
}

static void
fill(uint8_t *b, size_t len, uint32_t seq)
{
	size_t j;

	b[0] = (uint8_t)(seq >> 24);
	b[1] = (uint8_t)(seq >> 16);
	b[2] = (uint8_t)(seq >> 8);
	b[3] = (uint8_t)seq;
	for (j = 4; j < len; j++)
		b[j] = pattern(seq, j);
	if (seq == MARKER_SEQ)
		memcpy(b + 4, MARKER_TEXT, sizeof(MARKER_TEXT));
}

/* ---- The receiver ---- */

/*
 * --ip-join: the group joined on the interface by a socket of ours, so that the kernel's
 * IP layer passes its packets on (Linux 6.1's rxe joins none itself).
 */
static int
ip_join(struct peer *p)
{
	const union ibv_gid *g = &p->o->group;
	unsigned int ifindex = if_nametoindex(p->o->ip_join);
	char s[INET6_ADDRSTRLEN];
	int rc;

	peer_gid_str(g, s, sizeof(s));
	if (ifindex == 0) {
		peer_fail(&p->link, "--ip-join: no interface %s", p->o->ip_join);
		return -1;
	}
	if (gid_is_v4mapped(g)) {
		struct ip_mreqn mr = { .imr_ifindex = (int)ifindex };

		memcpy(&mr.imr_multiaddr, g->raw + 12, 4);
		p->join_fd = socket(AF_INET, SOCK_DGRAM, 0);
		rc = p->join_fd < 0 ? -1 : setsockopt(p->join_fd, IPPROTO_IP, IP_ADD_MEMBERSHIP,
						      &mr, sizeof(mr));
	} else {
		struct ipv6_mreq mr = { .ipv6mr_interface = ifindex };

		memcpy(&mr.ipv6mr_multiaddr, g->raw, 16);
		p->join_fd = socket(AF_INET6, SOCK_DGRAM, 0);
		rc = p->join_fd < 0 ? -1 : setsockopt(p->join_fd, IPPROTO_IPV6, IPV6_JOIN_GROUP,
						      &mr, sizeof(mr));
	}
	if (rc != 0) {
		peer_fail(&p->link, "--ip-join: cannot join %s on %s: %s", s, p->o->ip_join,
			  strerror(errno));
		return -1;
	}
	peer_say(&p->link, "NOTE --ip-join: the kernel's IP layer joined %s on %s (a socket of "
		 "ours) besides ibv_attach_mcast", s, p->o->ip_join);
	return 0;
}

static int
post_recvs(struct peer *p)
{
	int i, rc;

	for (i = 0; i < p->nslots; i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)(p->buf + p->slot * (size_t)i),
			.length = (uint32_t)p->slot, .lkey = p->mr->lkey,
		};
		struct ibv_recv_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1 };
		struct ibv_recv_wr *bad;

		rc = ibv_post_recv(p->qp, &wr, &bad);
		if (rc != 0) {
			peer_fail(&p->link, "ibv_post_recv %d of %d: %s", i, p->nslots,
				  strerror(rc));
			return -1;
		}
	}
	return 0;
}

/*
 * The destination and source of a receive's GRH area as GIDs: an IPv4 header in its last
 * 20 bytes (version 4, a valid checksum: rdma-core's rule) or an IPv6 header (the GRH).
 * Returns 4 or 6, or 0 when it is neither; ttl: the IPv4 TTL or the IPv6 hop limit.
 */
static int
grh_addrs(const uint8_t *grh, union ibv_gid *dst, union ibv_gid *src, int *ttl)
{
	const uint8_t *ip = grh + IP4_OFF;
	uint32_t sum = 0;
	int i;

	memset(dst, 0, sizeof(*dst));
	memset(src, 0, sizeof(*src));
	for (i = 0; i < IP4_HLEN; i += 2)
		sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	if (ip[0] == 0x45 && sum == 0xffff) {
		dst->raw[10] = dst->raw[11] = src->raw[10] = src->raw[11] = 0xff;
		memcpy(src->raw + 12, ip + 12, 4);
		memcpy(dst->raw + 12, ip + 16, 4);
		*ttl = ip[8];
		return 4;
	}
	if ((grh[0] >> 4) == 6) {
		memcpy(src->raw, grh + 8, 16);
		memcpy(dst->raw, grh + 24, 16);
		*ttl = grh[7];
		return 6;
	}
	return 0;
}

/*
 * Checks one receive completion from the sender (sender_qpn, sender_gid). Returns the
 * message's sequence number (MARKER_SEQ for the marker) and in *to_group whether it was
 * sent to the group; -1 when it is no message of the sender's.
 */
static int64_t
check_recv(struct peer *p, const struct ibv_wc *wc, uint32_t sender_qpn,
	   const union ibv_gid *sender_gid, const union ibv_gid *sender_ugid, bool *to_group,
	   int *ttl)
{
	const struct opts *o = p->o;
	const uint8_t *grh, *pl;
	union ibv_gid dst, src;
	char s1[INET6_ADDRSTRLEN], s2[INET6_ADDRSTRLEN];
	size_t j, bad = 0, first = 0;
	uint32_t seq;
	int ver;

	if (!peer_check(&p->link, wc->status == IBV_WC_SUCCESS && wc->opcode == IBV_WC_RECV,
			"receive wr_id %" PRIu64 ": status %s (%d), opcode %d", wc->wr_id,
			ibv_wc_status_str(wc->status), wc->status, wc->opcode))
		return -1;
	if (!peer_check(&p->link, wc->wr_id < (uint64_t)p->nslots,
			"receive of unknown wr_id %" PRIu64, wc->wr_id))
		return -1;
	grh = p->buf + p->slot * wc->wr_id;
	pl = grh + GRH_LEN;
	peer_check(&p->link, (wc->wc_flags & IBV_WC_GRH) != 0, "receive wr_id %" PRIu64
		   ": no IBV_WC_GRH (wc_flags 0x%x)", wc->wr_id, wc->wc_flags);
	peer_check(&p->link, wc->src_qp == sender_qpn, "receive wr_id %" PRIu64 ": src_qp "
		   "0x%06x, want the sender's QPN 0x%06x", wc->wr_id, wc->src_qp, sender_qpn);
	if (!peer_check(&p->link, wc->byte_len == GRH_LEN + (uint32_t)o->size,
			"receive wr_id %" PRIu64 ": byte_len %u, want %d (the GRH area and %d "
			"bytes)", wc->wr_id, wc->byte_len, GRH_LEN + o->size, o->size))
		return -1;
	ver = grh_addrs(grh, &dst, &src, ttl);
	if (!peer_check(&p->link, ver != 0, "receive wr_id %" PRIu64 ": the GRH area holds "
			"neither an IPv4 header (at byte 20, checksum valid) nor an IPv6 one "
			"(first byte 0x%02x, byte 20 0x%02x)", wc->wr_id, grh[0], grh[IP4_OFF]))
		return -1;
	seq = (uint32_t)pl[0] << 24 | (uint32_t)pl[1] << 16 | (uint32_t)pl[2] << 8 | pl[3];
	*to_group = memcmp(&dst, &o->group, 16) == 0;
	if (seq == MARKER_SEQ)
		sender_gid = sender_ugid;
	peer_gid_str(&src, s1, sizeof(s1));
	peer_gid_str(sender_gid, s2, sizeof(s2));
	peer_check(&p->link, memcmp(&src, sender_gid, 16) == 0, "message %u: the GRH area's "
		   "source %s, want the sender's GID %s", seq, s1, s2);
	peer_gid_str(&dst, s1, sizeof(s1));
	if (seq == MARKER_SEQ) {
		peer_gid_str(&p->ugid, s2, sizeof(s2));
		peer_check(&p->link, memcmp(&dst, &p->ugid, 16) == 0, "the marker: the GRH area's "
			   "destination %s, want this side's GID %s", s1, s2);
		peer_check(&p->link, memcmp(pl + 4, MARKER_TEXT, sizeof(MARKER_TEXT)) == 0,
			   "the marker: payload \"%.*s\"", (int)sizeof(MARKER_TEXT),
			   (const char *)pl + 4);
		return MARKER_SEQ;
	}
	peer_gid_str(&o->group, s2, sizeof(s2));
	peer_check(&p->link, *to_group, "message %u: the GRH area's destination %s (IPv%d), want "
		   "the group %s", seq, s1, ver, s2);
	for (j = 4; j < (size_t)o->size; j++)
		if (pl[j] != pattern(seq, j) && bad++ == 0)
			first = j;
	peer_check(&p->link, bad == 0, "message %u: %zu of %d payload bytes wrong, the first at "
		   "%zu: 0x%02x, want 0x%02x", seq, bad, o->size, first, pl[first],
		   pattern(seq, first));
	return seq;
}

static int
run_receiver(struct peer *p)
{
	const struct opts *o = p->o;
	char m[MSG_LEN], hex[33], peer_hex[40], peer_uhex[40], group_hex[40];
	char s[INET6_ADDRSTRLEN], s2[INET6_ADDRSTRLEN];
	union ibv_gid sender_gid, sender_ugid, group;
	unsigned int sender_qpn;
	int n, size, hops, rc, got = 0, other = 0, late = 0, ttl = -1;
	bool seen[MAX_MSGS] = { false }, to_group, marker = false;
	struct ibv_wc wc;
	double deadline;

	peer_gid_str(&o->group, s, sizeof(s));
	rc = ibv_attach_mcast(p->qp, &o->group, 0);
	if (!peer_check(&p->link, rc == 0, "ibv_attach_mcast %s: %s", s, strerror(rc)))
		return -1;
	p->attached = true;
	peer_say(&p->link, "UD QPN 0x%06x attached to %s, Q_Key 0x%08x", p->qp->qp_num, s,
		 o->qkey);
	if (o->ip_join != NULL && ip_join(p) != 0)
		return -1;
	if (post_recvs(p) != 0)
		return -1;

	if (peer_tcp_connect(&p->link, o->host, o->tcp_port) != 0)
		return -1;
	if (peer_recv_msg(&p->link, m, "the sender's address") != 0)
		return -1;
	if (sscanf(m, MAGIC " %x %39s %39s %39s %d %d %d", &sender_qpn, peer_hex, peer_uhex,
		   group_hex, &n, &size, &hops) != 7 ||
	    peer_hex_to_gid(peer_hex, &sender_gid) != 0 ||
	    peer_hex_to_gid(peer_uhex, &sender_ugid) != 0 ||
	    peer_hex_to_gid(group_hex, &group) != 0) {
		peer_fail(&p->link, "the peer is no mcast_peer sender of this version: \"%s\"", m);
		return -1;
	}
	if (!peer_check(&p->link,
			memcmp(&group, &o->group, 16) == 0 && n == o->n && size == o->size,
			"the sender sends %d x %d bytes to %s, this side expects %d x %d to %s", n,
			size, group_hex, o->n, o->size, s))
		goto abort;
	peer_gid_to_hex(&p->ugid, hex);
	if (peer_send_msg(&p->link, "READY %06x %08x %s", p->qp->qp_num, o->qkey, hex) != 0)
		return -1;
	peer_gid_str(&p->gid, s, sizeof(s));
	peer_gid_str(&sender_gid, s2, sizeof(s2));
	peer_say(&p->link, "local QPN 0x%06x, GID %s; the sender: QPN 0x%06x, GID %s",
		 p->qp->qp_num, s, sender_qpn, s2);

	/* The N messages to the group. */
	deadline = peer_now_s() + WC_TIMEOUT;
	while (got + other < o->n) {
		int64_t seq;

		rc = poll_until(p, &wc, deadline);
		if (rc < 0)
			goto abort;
		if (rc == 0) {
			peer_fail(&p->link, "%d of %d messages to the group received after %d s",
				  got, o->n, WC_TIMEOUT);
			goto abort;
		}
		seq = check_recv(p, &wc, sender_qpn, &sender_gid, &sender_ugid, &to_group,
				 &ttl);
		/* A receive that failed its checks, or a message out of place, or again. */
		if (seq < 0 ||
		    !peer_check(&p->link, seq < o->n, "message %" PRId64 " before the detach, "
				"want 0..%d", seq, o->n - 1) ||
		    !peer_check(&p->link, !seen[seq], "message %" PRId64 " received twice",
				seq)) {
			other++;
			continue;
		}
		/* Multicast keeps the sender's hop limit (no route replaces it). */
		peer_check(&p->link, ttl == hops, "message %" PRId64 ": TTL / hop limit %d in the "
			   "GRH area, want the sender's %d", seq, ttl, hops);
		seen[seq] = true;
		got++;
	}
	peer_gid_str(&o->group, s, sizeof(s));
	peer_say(&p->link, "%d messages of %d bytes received from the group %s, every one "
		 "checked (GRH area: destination the group, source the sender, TTL/hop limit %d; "
		 "src_qp 0x%06x)", got, o->size, s, hops, sender_qpn);
	if (peer_recv_msg(&p->link, m, "the end of the sends") != 0)
		return -1;
	peer_check(&p->link, sscanf(m, "SENT %d", &n) == 1 && n == o->n,
		   "the sender reports \"%s\", want SENT %d", m, o->n);

	/* Detached, nothing more from the group. */
	rc = ibv_detach_mcast(p->qp, &o->group, 0);
	if (!peer_check(&p->link, rc == 0, "ibv_detach_mcast %s: %s", s, strerror(rc)))
		goto abort;
	p->attached = false;
	peer_say(&p->link, "detached from %s", s);
	if (peer_send_msg(&p->link, "DETACHED") != 0)
		return -1;
	deadline = peer_now_s() + WC_TIMEOUT;
	for (;;) {
		int64_t seq;

		rc = poll_until(p, &wc, deadline);
		if (rc < 0)
			goto abort;
		if (rc == 0)
			break;
		seq = check_recv(p, &wc, sender_qpn, &sender_gid, &sender_ugid, &to_group,
				 &ttl);
		if (seq < 0) {
			late++;
			continue;
		}
		if (seq == MARKER_SEQ) {
			peer_check(&p->link, !marker, "the marker received twice");
			if (!marker)
				peer_say(&p->link, "the marker is in; watching %d ms more",
					 GRACE_MS);
			marker = true;
			deadline = peer_now_s() + GRACE_MS / 1e3;
			continue;
		}
		late++;
		peer_check(&p->link, !to_group, "message %" PRId64 " to the group received after "
			   "the detach (%s the marker)", seq, marker ? "after" : "before");
	}
	peer_check(&p->link, marker, "the marker (a SEND to this QP's own address after the %d "
		   "to the group) did not come in %d s", o->after, WC_TIMEOUT);
	if (marker && late == 0)
		peer_say(&p->link, "none of the %d messages sent to the group after the detach "
			 "came", o->after);
	if (peer_recv_msg(&p->link, m, "the end of the sends after the detach") != 0)
		return -1;
	peer_check(&p->link, sscanf(m, "AFTER %d", &n) == 1 && n == o->after,
		   "the sender reports \"%s\", want AFTER %d", m, o->after);
	return 0;

abort:
	peer_send_msg(&p->link, "ABORT the receiver failed");
	return -1;
}

/* ---- The sender ---- */

static int
post_sends(struct peer *p, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey, uint32_t first,
	   int count, const char *what)
{
	struct ibv_wc wc;
	double deadline;
	int i, done = 0, rc;

	for (i = 0; i < count; i++) {
		uint8_t *b = p->buf + p->slot * (size_t)i;
		uint32_t seq = first == MARKER_SEQ ? MARKER_SEQ : first + (uint32_t)i;
		struct ibv_sge sge = {
			.addr = (uintptr_t)b, .length = (uint32_t)p->o->size, .lkey = p->mr->lkey,
		};
		struct ibv_send_wr wr = {
			.wr_id = seq, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.ud = { .ah = ah, .remote_qpn = qpn, .remote_qkey = qkey },
		}, *bad;

		fill(b, (size_t)p->o->size, seq);
		rc = ibv_post_send(p->qp, &wr, &bad);
		if (rc != 0) {
			peer_fail(&p->link, "%s: ibv_post_send %d of %d: %s", what, i, count,
				  strerror(rc));
			return -1;
		}
	}
	deadline = peer_now_s() + WC_TIMEOUT;
	while (done < count) {
		rc = poll_until(p, &wc, deadline);
		if (rc <= 0) {
			if (rc == 0)
				peer_fail(&p->link, "%s: %d of %d send completions after %d s",
					  what, done, count, WC_TIMEOUT);
			return -1;
		}
		peer_check(&p->link, wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND,
			   "%s: send wr_id %" PRIu64 ": status %s (%d), opcode %d", what, wc.wr_id,
			   ibv_wc_status_str(wc.status), wc.status, wc.opcode);
		done++;
	}
	return 0;
}

static struct ibv_ah *
make_ah(struct peer *p, const union ibv_gid *dgid, int sgid_index, const char *what)
{
	struct ibv_ah_attr attr = {
		.is_global = 1,
		.grh = {
			.dgid = *dgid,
			.sgid_index = (uint8_t)sgid_index,
			.hop_limit = (uint8_t)p->o->hop_limit,
		},
		.port_num = (uint8_t)p->o->ib_port,
	};
	struct ibv_ah *ah = ibv_create_ah(p->link.pd, &attr);

	if (ah == NULL)
		peer_fail(&p->link, "ibv_create_ah to %s: %s", what, strerror(errno));
	return ah;
}

static int
run_sender(struct peer *p)
{
	const struct opts *o = p->o;
	char m[MSG_LEN], hex[33], uhex[33], group_hex[33], peer_hex[40];
	char s[INET6_ADDRSTRLEN], s2[INET6_ADDRSTRLEN];
	unsigned int rqpn, qkey;
	union ibv_gid rgid;

	if (peer_tcp_connect(&p->link, o->host, o->tcp_port) != 0)
		return -1;
	peer_gid_to_hex(&p->gid, hex);
	peer_gid_to_hex(&p->ugid, uhex);
	peer_gid_to_hex(&o->group, group_hex);
	if (peer_send_msg(&p->link, "%s %06x %s %s %s %d %d %d", MAGIC, p->qp->qp_num, hex, uhex,
			  group_hex, o->n, o->size, o->hop_limit) != 0 ||
	    peer_recv_msg(&p->link, m, "word that the receiver is ready") != 0)
		return -1;
	if (sscanf(m, "READY %x %x %39s", &rqpn, &qkey, peer_hex) != 3 ||
	    peer_hex_to_gid(peer_hex, &rgid) != 0) {
		peer_fail(&p->link, "the receiver is not ready: \"%s\"", m);
		return -1;
	}
	peer_gid_str(&p->gid, s, sizeof(s));
	peer_gid_str(&rgid, s2, sizeof(s2));
	peer_say(&p->link, "local QPN 0x%06x, GID %s; the receiver: QPN 0x%06x, Q_Key 0x%08x, "
		 "GID %s", p->qp->qp_num, s, rqpn, qkey, s2);
	peer_gid_str(&o->group, s, sizeof(s));
	p->ah = make_ah(p, &o->group, o->gid_index, s);
	if (p->ah == NULL)
		goto abort;
	if (post_sends(p, p->ah, MCAST_QPN, qkey, 0, o->n, "to the group") != 0)
		goto abort;
	peer_say(&p->link, "%d SENDs of %d bytes to %s (QPN 0x%06x, Q_Key 0x%08x, hop limit %d): "
		 "ok", o->n, o->size, s, MCAST_QPN, qkey, o->hop_limit);
	if (peer_send_msg(&p->link, "SENT %d", o->n) != 0 ||
	    peer_recv_msg(&p->link, m, "word of the detach") != 0)
		return -1;
	if (strcmp(m, "DETACHED") != 0) {
		peer_fail(&p->link, "the receiver did not detach: \"%s\"", m);
		return -1;
	}
	/* The group's messages after the detach, then the marker to the receiver itself. */
	peer_gid_str(&rgid, s, sizeof(s));
	p->marker_ah = make_ah(p, &rgid, o->marker_gid_index, s);
	if (p->marker_ah == NULL)
		goto abort;
	if (post_sends(p, p->ah, MCAST_QPN, qkey, (uint32_t)o->n, o->after,
		       "to the group after the detach") != 0 ||
	    post_sends(p, p->marker_ah, rqpn, qkey, MARKER_SEQ, 1, "the marker") != 0)
		goto abort;
	peer_say(&p->link, "after the detach: %d SENDs to the group and the marker to QPN 0x%06x "
		 "at %s: ok", o->after, rqpn, s);
	if (peer_send_msg(&p->link, "AFTER %d", o->after) != 0 ||
	    peer_recv_msg(&p->link, m, "the receiver's verdict") != 0)
		return -1;
	peer_check(&p->link, strcmp(m, "BYE 0") == 0, "the receiver's checks failed: \"%s\"", m);
	return 0;

abort:
	peer_send_msg(&p->link, "ABORT the sender failed");
	return -1;
}

static void
teardown(struct peer *p)
{
	int rc;

	if (p->attached && (rc = ibv_detach_mcast(p->qp, &p->o->group, 0)) != 0)
		peer_fail(&p->link, "ibv_detach_mcast: %s", strerror(rc));
	if (p->marker_ah != NULL && (rc = ibv_destroy_ah(p->marker_ah)) != 0)
		peer_fail(&p->link, "ibv_destroy_ah: %s", strerror(rc));
	if (p->ah != NULL && (rc = ibv_destroy_ah(p->ah)) != 0)
		peer_fail(&p->link, "ibv_destroy_ah: %s", strerror(rc));
	if (p->qp != NULL && (rc = ibv_destroy_qp(p->qp)) != 0)
		peer_fail(&p->link, "ibv_destroy_qp: %s", strerror(rc));
	if (p->mr != NULL && (rc = ibv_dereg_mr(p->mr)) != 0)
		peer_fail(&p->link, "ibv_dereg_mr: %s", strerror(rc));
	peer_close(&p->link);
	if (p->join_fd >= 0)
		close(p->join_fd);
	free(p->buf);
}

static void
usage(FILE *f, const char *argv0)
{
	fprintf(f,
"Usage: %s [options] -m GROUP         the receiver: attaches to GROUP, waits for a sender\n"
"       %s [options] -m GROUP HOST    the sender: sends to GROUP for the receiver on HOST\n"
"  -m GROUP  the multicast group: 239.1.2.3, ::ffff:239.1.2.3 or ff0e::1:2\n"
"  -d DEV    the device (default: the first)\n"
"  -i PORT   its port (default 1)\n"
"  -g INDEX  the GID index (default 0): of the group's IP version\n"
"  -G INDEX  the GID index of the marker, a unicast SEND (default: -g's)\n"
"  -p PORT   the TCP port of the exchange (default 18515)\n"
"  -n N      messages to the group (default 20, at most %d)\n"
"  -a M      messages to the group after the detach (default 4, at most %d)\n"
"  -s SIZE   bytes per message (default 1024, 8 to 4096)\n"
"  -q QKEY   the receiver's Q_Key (default 0x1e1d1c1b)\n"
"  -l HOPS   the sender's hop limit (default 5)\n"
"  --ip-join IFNAME  the receiver also joins the group on IFNAME at the IP level\n"
"            (Linux 6.1's rxe joins none itself) and says so\n", argv0, argv0, MAX_MSGS,
		MAX_AFTER);
}

int
main(int argc, char **argv)
{
	struct opts o = { .ib_port = 1, .tcp_port = 18515, .n = 20, .after = 4, .size = 1024,
			  .hop_limit = 5, .qkey = 0x1e1d1c1b, .marker_gid_index = -1 };
	struct peer p = {
		.link = { .name = "mcast_peer", .msg_len = MSG_LEN, .abort_fails = true,
			  .sock = -1 },
		.o = &o,
		.join_fd = -1,
	};
	static const struct option longopts[] = {
		{ "ip-join", required_argument, NULL, 'J' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, rc;

	while ((c = getopt_long(argc, argv, "m:d:i:g:G:p:n:a:s:q:l:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'J': o.ip_join = optarg; break;
		case 'm':
			if (parse_group(optarg, &o.group) != 0) {
				fprintf(stderr, "%s: not a multicast group: %s\n", argv[0], optarg);
				return 2;
			}
			o.group_set = true;
			break;
		case 'd': o.dev = optarg; break;
		case 'i': o.ib_port = atoi(optarg); break;
		case 'g': o.gid_index = atoi(optarg); break;
		case 'G': o.marker_gid_index = atoi(optarg); break;
		case 'p': o.tcp_port = atoi(optarg); break;
		case 'n': o.n = atoi(optarg); break;
		case 'a': o.after = atoi(optarg); break;
		case 's': o.size = atoi(optarg); break;
		case 'q': o.qkey = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'l': o.hop_limit = atoi(optarg); break;
		case 'h': usage(stdout, argv[0]); return 0;
		default: usage(stderr, argv[0]); return 2;
		}
	}
	if (optind + 1 < argc || !o.group_set || o.n < 1 || o.n > MAX_MSGS || o.after < 0 ||
	    o.after > MAX_AFTER || o.size < 8 || o.size > 4096 || o.hop_limit < 1 ||
	    o.hop_limit > 255) {
		usage(stderr, argv[0]);
		return 2;
	}
	o.host = optind < argc ? argv[optind] : NULL;
	if (o.marker_gid_index < 0)
		o.marker_gid_index = o.gid_index;
	p.link.role = o.host == NULL ? "receiver" : "sender";

	rc = setup(&p);
	if (rc == 0)
		rc = o.host == NULL ? run_receiver(&p) : run_sender(&p);
	if (o.host == NULL && p.link.sock >= 0)
		peer_send_msg(&p.link, "BYE %d", p.link.failures);
	teardown(&p);
	return peer_verdict(&p.link, rc);
}
