/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * librdmacm.so.1 (lib/rdmacm) without droced: the event strings, rdma_getaddrinfo, the
 * errno of a channel when no daemon answers, the calls droce does not support, the event
 * pipe protocol against a fake CM written here on lib/shm's framing (CM_OPEN with a
 * pipe, CM_CREATE_ID, CM_GET_EVENT with a stale byte, CM_QUERY, end of file), and the
 * library's side of multicast against it: rdma-core's argument checks, the join's
 * MULTICAST_JOIN (context in private_data), leave by address, a left join's event dropped.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>

#include "droce_shm_proto.h"
#include "droce_test.h"

#define FAKE_ID		7u
#define FAKE_TOKEN	0x5eedu

DROCE_TEST(event_str_all)
{
	static const char *const names[] = {
		"RDMA_CM_EVENT_ADDR_RESOLVED", "RDMA_CM_EVENT_ADDR_ERROR",
		"RDMA_CM_EVENT_ROUTE_RESOLVED", "RDMA_CM_EVENT_ROUTE_ERROR",
		"RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
		"RDMA_CM_EVENT_CONNECT_ERROR", "RDMA_CM_EVENT_UNREACHABLE",
		"RDMA_CM_EVENT_REJECTED", "RDMA_CM_EVENT_ESTABLISHED",
		"RDMA_CM_EVENT_DISCONNECTED", "RDMA_CM_EVENT_DEVICE_REMOVAL",
		"RDMA_CM_EVENT_MULTICAST_JOIN", "RDMA_CM_EVENT_MULTICAST_ERROR",
		"RDMA_CM_EVENT_ADDR_CHANGE", "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};
	unsigned int i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		droce_test_ctx("event %u", i);
		CHECK_EQ_STR(rdma_event_str((enum rdma_cm_event_type)i), names[i]);
	}
	CHECK_EQ_U64(RDMA_CM_EVENT_TIMEWAIT_EXIT, 15);
	CHECK_EQ_STR(rdma_event_str((enum rdma_cm_event_type)16), "UNKNOWN EVENT");
	CHECK_EQ_STR(rdma_event_str((enum rdma_cm_event_type)-1), "UNKNOWN EVENT");
}

DROCE_TEST(getaddrinfo_active_numeric)
{
	struct rdma_addrinfo hints = { 0 }, *res = NULL;
	struct sockaddr_in *sin;

	hints.ai_flags = RAI_NUMERICHOST;
	hints.ai_qp_type = IBV_QPT_RC;
	hints.ai_port_space = RDMA_PS_TCP;
	CHECK_EQ_I64(rdma_getaddrinfo("192.0.2.1", "7471", &hints, &res), 0);
	CHECK(res != NULL);
	CHECK_EQ_I64(res->ai_flags, 0);
	CHECK_EQ_I64(res->ai_family, AF_INET);
	CHECK_EQ_I64(res->ai_qp_type, IBV_QPT_RC);
	CHECK_EQ_I64(res->ai_port_space, RDMA_PS_TCP);
	CHECK(res->ai_src_addr == NULL && res->ai_src_len == 0);
	CHECK_EQ_U64(res->ai_dst_len, sizeof(struct sockaddr_in));
	sin = (struct sockaddr_in *)res->ai_dst_addr;
	CHECK_EQ_U64(sin->sin_family, AF_INET);
	CHECK_EQ_U64(ntohs(sin->sin_port), 7471);
	CHECK_EQ_U64(ntohl(sin->sin_addr.s_addr), 0xC0000201);
	CHECK(res->ai_route == NULL && res->ai_connect == NULL && res->ai_next == NULL);
	rdma_freeaddrinfo(res);
}

DROCE_TEST(getaddrinfo_passive)
{
	struct rdma_addrinfo hints = { 0 }, *res = NULL;
	struct sockaddr_in *sin;

	hints.ai_flags = RAI_PASSIVE;
	hints.ai_family = AF_INET;
	hints.ai_port_space = RDMA_PS_TCP;
	CHECK_EQ_I64(rdma_getaddrinfo(NULL, "7471", &hints, &res), 0);
	CHECK_EQ_I64(res->ai_flags, RAI_PASSIVE);
	CHECK(res->ai_dst_addr == NULL);
	CHECK_EQ_U64(res->ai_src_len, sizeof(struct sockaddr_in));
	sin = (struct sockaddr_in *)res->ai_src_addr;
	CHECK_EQ_U64(ntohs(sin->sin_port), 7471);
	CHECK_EQ_U64(sin->sin_addr.s_addr, INADDR_ANY);
	/* The QP type follows the socket type getaddrinfo chose: TCP, so RC. */
	CHECK_EQ_I64(res->ai_qp_type, IBV_QPT_RC);
	rdma_freeaddrinfo(res);
}

DROCE_TEST(getaddrinfo_ud_ipv6_and_src)
{
	struct sockaddr_in6 src = { .sin6_family = AF_INET6, .sin6_port = htons(1) };
	struct rdma_addrinfo hints = { 0 }, *res = NULL;
	struct sockaddr_in6 *sin6;

	hints.ai_flags = RAI_NUMERICHOST;
	hints.ai_qp_type = IBV_QPT_UD;
	hints.ai_port_space = RDMA_PS_UDP;
	hints.ai_src_addr = (struct sockaddr *)&src;
	hints.ai_src_len = sizeof(src);
	CHECK_EQ_I64(rdma_getaddrinfo("::1", "7174", &hints, &res), 0);
	CHECK_EQ_I64(res->ai_family, AF_INET6);
	CHECK_EQ_I64(res->ai_qp_type, IBV_QPT_UD);
	CHECK_EQ_I64(res->ai_port_space, RDMA_PS_UDP);
	sin6 = (struct sockaddr_in6 *)res->ai_dst_addr;
	CHECK_EQ_U64(res->ai_dst_len, sizeof(*sin6));
	CHECK_EQ_U64(ntohs(sin6->sin6_port), 7174);
	CHECK(IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr));
	/* The hints' source is copied for an active result. */
	CHECK_EQ_U64(res->ai_src_len, sizeof(src));
	CHECK_MEM(res->ai_src_addr, &src, sizeof(src));
	CHECK(res->ai_src_addr != (struct sockaddr *)&src);
	rdma_freeaddrinfo(res);
}

DROCE_TEST(getaddrinfo_defaults_and_errors)
{
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(9) };
	struct rdma_addrinfo hints = { 0 }, *res = NULL;

	/* No hints: the first of getaddrinfo's answers (SOCK_STREAM first: RC, TCP). */
	CHECK_EQ_I64(rdma_getaddrinfo("127.0.0.1", "7471", NULL, &res), 0);
	CHECK_EQ_I64(res->ai_qp_type, IBV_QPT_RC);
	CHECK_EQ_I64(res->ai_port_space, RDMA_PS_TCP);
	rdma_freeaddrinfo(res);

	/* Neither node nor service: the hints' own fields and destination, copied. */
	hints.ai_qp_type = IBV_QPT_UD;
	hints.ai_port_space = RDMA_PS_UDP;
	hints.ai_dst_addr = (struct sockaddr *)&dst;
	hints.ai_dst_len = sizeof(dst);
	res = NULL;
	CHECK_EQ_I64(rdma_getaddrinfo(NULL, NULL, &hints, &res), 0);
	CHECK_EQ_I64(res->ai_qp_type, IBV_QPT_UD);
	CHECK_MEM(res->ai_dst_addr, &dst, sizeof(dst));
	rdma_freeaddrinfo(res);

	errno = 0;
	CHECK_EQ_I64(rdma_getaddrinfo(NULL, NULL, NULL, &res), -1);
	CHECK_EQ_I64(errno, EINVAL);
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_NUMERICHOST;
	CHECK_EQ_I64(rdma_getaddrinfo("not-a-number.invalid", "1", &hints, &res), EAI_NONAME);
	rdma_freeaddrinfo(NULL);
}

DROCE_TEST(no_daemon_enodev)
{
	struct rdma_cm_id *id = NULL;
	int n = -1;

	setenv(DROCE_PROTO_SOCKET_ENV, "/nonexistent/droced.sock", 1);
	errno = 0;
	CHECK(rdma_create_event_channel() == NULL);
	CHECK_EQ_I64(errno, ENODEV);
	errno = 0;
	CHECK_EQ_I64(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), -1);
	CHECK_EQ_I64(errno, ENODEV);
	errno = 0;
	CHECK(rdma_get_devices(&n) == NULL);
	CHECK_EQ_I64(n, 0);
	CHECK_EQ_I64(errno, ENODEV);
}

DROCE_TEST(unsupported_enosys)
{
	struct rdma_cm_id id;
	struct ibv_ece ece;
	char buf[8];

	memset(&id, 0, sizeof(id));
	errno = 0;
	CHECK_EQ_I64(rsocket(AF_INET, SOCK_STREAM, 0), -1);
	CHECK_EQ_I64(errno, ENOSYS);
	errno = 0;
	CHECK_EQ_I64(rconnect(3, NULL, 0), -1);
	CHECK_EQ_I64(errno, ENOSYS);
	errno = 0;
	CHECK_EQ_I64(rsend(3, buf, sizeof(buf), 0), -1);
	CHECK_EQ_I64(errno, ENOSYS);
	errno = 0;
	CHECK_EQ_I64(rpoll(NULL, 0, 0), -1);
	CHECK_EQ_I64(errno, ENOSYS);
	errno = 0;
	CHECK_EQ_I64(rfcntl(3, F_GETFL), -1);
	CHECK_EQ_I64(errno, ENOSYS);
	errno = 0;
	CHECK_EQ_U64(riowrite(3, buf, sizeof(buf), 0, 0), (size_t)-1);
	CHECK_EQ_I64(errno, ENOSYS);
	/* RDMA_OPTION_IB_PATH: droced resolves routes itself. */
	errno = 0;
	CHECK_EQ_I64(rdma_set_option(&id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, buf, 1), -1);
	CHECK_EQ_I64(errno, ENOSYS);

	/* ECE: rdma-core's argument checks, then nothing but options 0. */
	memset(&ece, 0xAB, sizeof(ece));
	CHECK_EQ_I64(rdma_get_remote_ece(&id, &ece), 0);
	CHECK_EQ_U64(ece.vendor_id, 0);
	CHECK_EQ_U64(ece.options, 0);
	CHECK_EQ_U64(ece.comp_mask, 0);
	errno = 0;
	CHECK_EQ_I64(rdma_get_remote_ece(NULL, &ece), -1);
	CHECK_EQ_I64(errno, EINVAL);
	memset(&ece, 0, sizeof(ece));
	errno = 0;
	CHECK_EQ_I64(rdma_set_local_ece(&id, &ece), -1);
	CHECK_EQ_I64(errno, EINVAL);
	ece.vendor_id = 0x15b3;
	CHECK_EQ_I64(rdma_set_local_ece(&id, &ece), 0);
	ece.options = 1;
	errno = 0;
	CHECK_EQ_I64(rdma_set_local_ece(&id, &ece), -1);
	CHECK_EQ_I64(errno, EOPNOTSUPP);
}

/* ---- A fake CM: one channel connection, events by hand ---- */

#define FAKE_MAX_MC	8

struct fake_cm {
	char path[108];
	int lsock;
	int pipe_w;		/* the event pipe's write end (droced's) */
	int stale;		/* GET_EVENTs to answer -EAGAIN first */
	unsigned int gets;	/* GET_EVENTs answered with an event */
	/* Multicast: joins' events still queued (their uids), what the last requests said. */
	uint32_t mc_queue[FAKE_MAX_MC];
	unsigned int mc_queued;
	unsigned int joins, leaves;
	uint32_t last_uid, last_flags;
	struct droce_proto_cm_addr last_addr;
	pthread_t thread;
};

/* The group the fake CM joins: anything else in 224.0.0.0/4 it refuses (EINVAL). */
#define FAKE_GROUP	0xEF630007u	/* 239.99.0.7 */

static void
fake_answer(struct fake_cm *f, int s, const struct droce_proto_req *req)
{
	struct droce_proto_resp resp;
	int fds[2], nfds = 0;

	memset(&resp, 0, sizeof(resp));
	resp.op = req->op;
	resp.seq = req->seq;
	switch (req->op) {
	case DROCE_PROTO_OP_CM_OPEN:
		if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
			resp.status = -errno;
			break;
		}
		f->pipe_w = fds[1];
		nfds = 1;
		resp.cm_open.version = DROCE_PROTO_CM_VERSION;
		resp.cm_open.token = FAKE_TOKEN;
		break;
	case DROCE_PROTO_OP_CM_CREATE_ID:
		resp.cm_id.id = FAKE_ID;
		break;
	case DROCE_PROTO_OP_CM_QUERY:
		resp.cm_query.port = DROCE_PROTO_NO_HANDLE;
		resp.cm_query.dst.family = AF_INET;
		resp.cm_query.dst.port = htons(7471);
		resp.cm_query.dst.addr[10] = 0xff;
		resp.cm_query.dst.addr[11] = 0xff;
		resp.cm_query.dst.addr[12] = 192;
		resp.cm_query.dst.addr[15] = 9;
		break;
	case DROCE_PROTO_OP_CM_GET_EVENT:
		if (f->stale > 0) {
			f->stale--;
			resp.status = -EAGAIN;
			break;
		}
		f->gets++;
		resp.cm_event.id = FAKE_ID;
		resp.cm_event.listen_id = DROCE_PROTO_NO_HANDLE;
		if (f->mc_queued > 0) {
			struct droce_proto_cm_qp_attr *ud = &resp.cm_event.ud;

			/* droced's MULTICAST_JOIN (op_join in app/droced/droced_rdmacm.c). */
			resp.cm_event.event = RDMA_CM_EVENT_MULTICAST_JOIN;
			resp.cm_event.mc = f->mc_queue[0];
			memmove(f->mc_queue, f->mc_queue + 1, --f->mc_queued * sizeof(uint32_t));
			ud->ah.is_global = 1;
			ud->ah.dgid[10] = ud->ah.dgid[11] = 0xff;
			ud->ah.dgid[12] = 239;
			ud->ah.dgid[13] = 99;
			ud->ah.dgid[15] = 7;
			ud->ah.sgid_index = 3;
			ud->ah.hop_limit = 64;
			ud->ah.port_num = 1;
			ud->dest_qp_num = DROCE_PROTO_CM_MC_QPN;
			ud->qkey = RDMA_UDP_QKEY;
			break;
		}
		resp.cm_event.event = RDMA_CM_EVENT_ADDR_RESOLVED;
		break;
	case DROCE_PROTO_OP_CM_JOIN_MCAST: {
		uint32_t group;

		f->joins++;
		f->last_uid = req->cm_mcast.uid;
		f->last_flags = req->cm_mcast.flags;
		f->last_addr = req->cm_mcast.addr;
		memcpy(&group, req->cm_mcast.addr.addr + 12, 4);
		if (req->cm_mcast.id != FAKE_ID || ntohl(group) != FAKE_GROUP ||
		    f->mc_queued == FAKE_MAX_MC) {
			resp.status = -EINVAL;
			break;
		}
		f->mc_queue[f->mc_queued++] = req->cm_mcast.uid;
		CHECK_EQ_I64(write(f->pipe_w, "j", 1), 1);
		break;
	}
	case DROCE_PROTO_OP_CM_LEAVE_MCAST:
		f->leaves++;
		f->last_uid = req->cm_mcast.uid;
		break;
	case DROCE_PROTO_OP_CM_DESTROY_ID:
		break;
	default:
		resp.status = -ENOSYS;
		break;
	}
	droce_proto_send(s, &resp, sizeof(resp), fds, nfds);
	if (nfds == 1)
		close(fds[0]);
}

static void *
fake_thread(void *arg)
{
	struct fake_cm *f = arg;
	struct droce_proto_req req;
	unsigned int nfds;
	int s = accept(f->lsock, NULL, NULL);

	if (s < 0)
		return NULL;
	while (droce_proto_recv(s, &req, sizeof(req), NULL, 0, &nfds) > 0)
		fake_answer(f, s, &req);
	close(s);
	return NULL;
}

static void
fake_start(struct fake_cm *f)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	memset(f, 0, sizeof(*f));
	f->pipe_w = -1;
	snprintf(f->path, sizeof(f->path), "/tmp/droce-test-rdmacm-%d.sock", (int)getpid());
	unlink(f->path);
	strcpy(sa.sun_path, f->path);
	f->lsock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	CHECK(f->lsock >= 0);
	CHECK_EQ_I64(bind(f->lsock, (struct sockaddr *)&sa, sizeof(sa)), 0);
	CHECK_EQ_I64(listen(f->lsock, 1), 0);
	CHECK_EQ_I64(pthread_create(&f->thread, NULL, fake_thread, f), 0);
	setenv(DROCE_PROTO_SOCKET_ENV, f->path, 1);
}

/* After the channel is destroyed: its connection ends, and so does the fake's thread. */
static void
fake_stop(struct fake_cm *f)
{
	pthread_join(f->thread, NULL);
	if (f->pipe_w >= 0)
		close(f->pipe_w);
	close(f->lsock);
	unlink(f->path);
}

DROCE_TEST(channel_pipe_protocol)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_event *ev = NULL;
	struct rdma_cm_id *id = NULL;
	struct fake_cm f;
	int flags;

	fake_start(&f);
	ch = rdma_create_event_channel();
	CHECK(ch != NULL);
	/* droced's pipe came non-blocking; the channel starts blocking, as the kernel's. */
	flags = fcntl(ch->fd, F_GETFL);
	CHECK((flags & O_NONBLOCK) == 0);
	CHECK_EQ_I64(rdma_create_id(ch, &id, &f, RDMA_PS_TCP), 0);
	CHECK(id->channel == ch && id->context == &f && id->qp_type == IBV_QPT_RC);

	/* Non-blocking without a byte: EAGAIN. */
	CHECK_EQ_I64(fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK), 0);
	errno = 0;
	CHECK_EQ_I64(rdma_get_cm_event(ch, &ev), -1);
	CHECK_EQ_I64(errno, EAGAIN);

	/* A stale byte, then a live one: the stale one is skipped. */
	f.stale = 1;
	CHECK_EQ_I64(write(f.pipe_w, "xy", 2), 2);
	CHECK_EQ_I64(rdma_get_cm_event(ch, &ev), 0);
	CHECK_EQ_U64(f.gets, 1);
	CHECK(ev->id == id && ev->listen_id == NULL);
	CHECK_EQ_I64(ev->event, RDMA_CM_EVENT_ADDR_RESOLVED);
	CHECK_EQ_I64(ev->status, 0);
	/* The route came from CM_QUERY; no device (port NO_HANDLE), so no verbs. */
	CHECK_EQ_U64(id->route.addr.dst_sin.sin_family, AF_INET);
	CHECK_EQ_U64(ntohs(rdma_get_dst_port(id)), 7471);
	CHECK_EQ_U64(ntohl(id->route.addr.dst_sin.sin_addr.s_addr), 0xC0000009);
	CHECK(id->verbs == NULL);
	CHECK_EQ_I64(rdma_ack_cm_event(ev), 0);
	errno = 0;
	CHECK_EQ_I64(rdma_get_cm_event(ch, &ev), -1);
	CHECK_EQ_I64(errno, EAGAIN);

	/* droced gone: end of file; no id has a device, so ENODEV at once, never a hang. */
	CHECK_EQ_I64(fcntl(ch->fd, F_SETFL, flags), 0);
	close(f.pipe_w);
	f.pipe_w = -1;
	errno = 0;
	CHECK_EQ_I64(rdma_get_cm_event(ch, &ev), -1);
	CHECK_EQ_I64(errno, ENODEV);
	CHECK_EQ_I64(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
	fake_stop(&f);
}

static struct sockaddr_in
group_addr(uint32_t ip, uint16_t port)
{
	struct sockaddr_in sin;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(ip);
	return sin;
}

DROCE_TEST(multicast_args)
{
	struct sockaddr_in sin = group_addr(FAKE_GROUP, 0);
	struct rdma_cm_join_mc_attr_ex attr;
	struct rdma_event_channel *ch;
	struct sockaddr_storage ib;
	struct rdma_cm_id *id = NULL;
	struct fake_cm f;

	/* rdma-core's library checks, before anything reaches droced. */
	memset(&attr, 0, sizeof(attr));
	errno = 0;
	CHECK_EQ_I64(rdma_join_multicast(NULL, (struct sockaddr *)&sin, NULL), -1);
	CHECK_EQ_I64(errno, EINVAL);
	errno = 0;
	CHECK_EQ_I64(rdma_join_multicast_ex(NULL, &attr, NULL), -1);
	CHECK_EQ_I64(errno, EINVAL);
	errno = 0;
	CHECK_EQ_I64(rdma_leave_multicast(NULL, (struct sockaddr *)&sin), -1);
	CHECK_EQ_I64(errno, EINVAL);

	/* A real id is needed past those: a fake CM's. */
	fake_start(&f);
	ch = rdma_create_event_channel();
	CHECK(ch != NULL);
	CHECK_EQ_I64(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP), 0);
	/* No address, or one of a family droce has no GIDs for (AF_IB): EINVAL. */
	errno = 0;
	CHECK_EQ_I64(rdma_join_multicast(id, NULL, NULL), -1);
	CHECK_EQ_I64(errno, EINVAL);
	memset(&ib, 0, sizeof(ib));
	ib.ss_family = AF_IB;
	errno = 0;
	CHECK_EQ_I64(rdma_join_multicast(id, (struct sockaddr *)&ib, NULL), -1);
	CHECK_EQ_I64(errno, EINVAL);
	errno = 0;
	CHECK_EQ_I64(rdma_join_multicast_ex(id, NULL, NULL), -1);
	CHECK_EQ_I64(errno, EINVAL);
	/* _ex: an unknown comp_mask bit is ENOTSUP; no address or no flags, bad flags: EINVAL. */
	memset(&attr, 0, sizeof(attr));
	attr.addr = (struct sockaddr *)&sin;
	attr.comp_mask = RDMA_CM_JOIN_MC_ATTR_RESERVED;
	errno = 0;
	CHECK_EQ_I64(rdma_join_multicast_ex(id, &attr, NULL), -1);
	CHECK_EQ_I64(errno, ENOTSUP);
	attr.comp_mask = RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
	errno = 0;
	CHECK_EQ_I64(rdma_join_multicast_ex(id, &attr, NULL), -1);
	CHECK_EQ_I64(errno, EINVAL);
	attr.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS;
	errno = 0;
	CHECK_EQ_I64(rdma_join_multicast_ex(id, &attr, NULL), -1);
	CHECK_EQ_I64(errno, EINVAL);
	attr.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
	attr.join_flags = RDMA_MC_JOIN_FLAG_RESERVED;
	errno = 0;
	CHECK_EQ_I64(rdma_join_multicast_ex(id, &attr, NULL), -1);
	CHECK_EQ_I64(errno, EINVAL);
	attr.addr = (struct sockaddr *)&ib;
	attr.join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER;
	errno = 0;
	CHECK_EQ_I64(rdma_join_multicast_ex(id, &attr, NULL), -1);
	CHECK_EQ_I64(errno, EINVAL);
	CHECK_EQ_U64(f.joins, 0);
	/* Leave of nothing joined: EADDRNOTAVAIL, rdma-core's own answer; none sent. */
	errno = 0;
	CHECK_EQ_I64(rdma_leave_multicast(id, (struct sockaddr *)&sin), -1);
	CHECK_EQ_I64(errno, EADDRNOTAVAIL);
	CHECK_EQ_U64(f.leaves, 0);
	CHECK_EQ_I64(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
	fake_stop(&f);
}

DROCE_TEST(multicast_join_leave)
{
	struct sockaddr_in sin = group_addr(FAKE_GROUP, 0), other = group_addr(FAKE_GROUP, 9);
	struct sockaddr_in refused = group_addr(0xEF630008u, 0);
	struct rdma_cm_join_mc_attr_ex attr;
	struct rdma_event_channel *ch;
	struct rdma_cm_event *ev = NULL;
	struct rdma_cm_id *id = NULL;
	struct fake_cm f;
	int ctx1, ctx2, flags;
	uint32_t uid1;

	fake_start(&f);
	ch = rdma_create_event_channel();
	CHECK(ch != NULL);
	CHECK_EQ_I64(rdma_create_id(ch, &id, &f, RDMA_PS_UDP), 0);
	flags = fcntl(ch->fd, F_GETFL);
	CHECK_EQ_I64(fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK), 0);

	/* A join droced refuses: its errno, and nothing left joined. */
	errno = 0;
	CHECK_EQ_I64(rdma_join_multicast(id, (struct sockaddr *)&refused, &ctx1), -1);
	CHECK_EQ_I64(errno, EINVAL);
	errno = 0;
	CHECK_EQ_I64(rdma_leave_multicast(id, (struct sockaddr *)&refused), -1);
	CHECK_EQ_I64(errno, EADDRNOTAVAIL);

	/* A join: the group IPv4-mapped, full member; its event names the join's context. */
	CHECK_EQ_I64(rdma_join_multicast(id, (struct sockaddr *)&sin, &ctx1), 0);
	CHECK_EQ_U64(f.last_addr.family, AF_INET);
	CHECK_EQ_U64(f.last_addr.addr[10], 0xff);
	CHECK_EQ_U64(f.last_addr.addr[12], 239);
	CHECK_EQ_U64(f.last_flags, RDMA_MC_JOIN_FLAG_FULLMEMBER);
	uid1 = f.last_uid;
	CHECK_EQ_I64(rdma_get_cm_event(ch, &ev), 0);
	CHECK_EQ_I64(ev->event, RDMA_CM_EVENT_MULTICAST_JOIN);
	CHECK_EQ_I64(ev->status, 0);
	CHECK(ev->id == id && ev->listen_id == NULL);
	CHECK(ev->param.ud.private_data == &ctx1);
	CHECK_EQ_U64(ev->param.ud.private_data_len, 0);
	CHECK_EQ_U64(ev->param.ud.qp_num, 0xFFFFFF);
	CHECK_EQ_U64(ev->param.ud.qkey, RDMA_UDP_QKEY);
	CHECK_EQ_U64(ev->param.ud.ah_attr.is_global, 1);
	CHECK_EQ_U64(ev->param.ud.ah_attr.port_num, 1);
	CHECK_EQ_U64(ev->param.ud.ah_attr.dlid, 0);
	CHECK_EQ_U64(ev->param.ud.ah_attr.grh.sgid_index, 3);
	CHECK_EQ_U64(ev->param.ud.ah_attr.grh.hop_limit, 64);
	CHECK_EQ_U64(ev->param.ud.ah_attr.grh.dgid.raw[11], 0xff);
	CHECK_EQ_U64(ev->param.ud.ah_attr.grh.dgid.raw[15], 7);
	CHECK_EQ_I64(rdma_ack_cm_event(ev), 0);

	/* The same group again, send-only (rdma_join_multicast_ex): a second join. */
	memset(&attr, 0, sizeof(attr));
	attr.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
	attr.join_flags = RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
	attr.addr = (struct sockaddr *)&sin;
	CHECK_EQ_I64(rdma_join_multicast_ex(id, &attr, &ctx2), 0);
	CHECK_EQ_U64(f.last_flags, RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER);
	CHECK(f.last_uid != uid1);
	CHECK_EQ_I64(rdma_get_cm_event(ch, &ev), 0);
	CHECK_EQ_I64(ev->event, RDMA_CM_EVENT_MULTICAST_JOIN);
	CHECK(ev->param.ud.private_data == &ctx2);
	CHECK_EQ_I64(rdma_ack_cm_event(ev), 0);

	/* Leave: by the address, byte for byte (another port is another address). */
	errno = 0;
	CHECK_EQ_I64(rdma_leave_multicast(id, (struct sockaddr *)&other), -1);
	CHECK_EQ_I64(errno, EADDRNOTAVAIL);
	CHECK_EQ_I64(rdma_leave_multicast(id, (struct sockaddr *)&sin), 0);
	CHECK_EQ_I64(rdma_leave_multicast(id, (struct sockaddr *)&sin), 0);
	CHECK_EQ_U64(f.leaves, 2);
	CHECK_EQ_U64(f.last_uid, uid1);		/* newest first, as rdma-core's list */
	errno = 0;
	CHECK_EQ_I64(rdma_leave_multicast(id, (struct sockaddr *)&sin), -1);
	CHECK_EQ_I64(errno, EADDRNOTAVAIL);

	/* A join left before its event was fetched: the event is dropped (its join is gone). */
	CHECK_EQ_I64(rdma_join_multicast(id, (struct sockaddr *)&sin, &ctx1), 0);
	CHECK_EQ_I64(rdma_leave_multicast(id, (struct sockaddr *)&sin), 0);
	errno = 0;
	CHECK_EQ_I64(rdma_get_cm_event(ch, &ev), -1);
	CHECK_EQ_I64(errno, EAGAIN);
	CHECK_EQ_U64(f.joins, 4);

	/* A join still in place goes with its id. */
	CHECK_EQ_I64(rdma_join_multicast(id, (struct sockaddr *)&sin, &ctx1), 0);
	CHECK_EQ_I64(rdma_get_cm_event(ch, &ev), 0);
	CHECK_EQ_I64(rdma_ack_cm_event(ev), 0);
	CHECK_EQ_I64(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
	fake_stop(&f);
}
