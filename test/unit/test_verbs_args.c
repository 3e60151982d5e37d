/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * libdroce's argument checks, string tables and queries, without droced: a fake daemon
 * thread (written here on lib/shm's protocol helpers) answers QUERY_PORTS and HELLO with
 * a real region, records every request it receives, and answers REG_MR; any other request
 * gets -ENOSYS. Checks that libdroce must do before any message is sent are verified by
 * the fake's request counter staying unchanged.
 */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "droce_shm_arena.h"
#include "droce_shm_proto.h"
#include "droce_test.h"

#define REGION_SIZE	(1u << 20)
#define FAKE_LKEY	0x1200
#define FAKE_MAX_QP_WR	256
#define FAKE_MAX_SGE	4
#define FAKE_MAX_CQE	1024
#define FAKE_MAX_INLINE	128

struct fake {
	char path[108];
	int lsock;
	pthread_t thread;
	void *region;
	int memfd;
	int evfd;
	struct droce_shm_event_ring *ring;
	uint64_t ring_off;
	unsigned int requests;		/* after HELLO, on any connection */
	struct droce_proto_req last;
	bool dereg_ok;			/* DEREG_MR answered 0, not -ENOSYS */
};

static struct fake fk;

/* rdma-core's private GID type query (infiniband/driver.h, not installed): libdroce has it. */
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       unsigned int *type);

static void
fake_port(struct droce_proto_port_info *p)
{
	static const uint8_t mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 };

	memset(p, 0, sizeof(*p));
	memcpy(p->mac, mac, sizeof(mac));
	p->state = DROCE_PROTO_PORT_ACTIVE;
	p->max_mtu = IBV_MTU_1024;
	p->ipv4 = 0x0100630a;		/* 10.99.0.1, network order */
	p->node_guid = 0x0100FEFF00000002ull;
	snprintf(p->name, sizeof(p->name), "fake");
}

static void
fake_hello(struct droce_proto_resp *r)
{
	static const uint8_t gid0[16] = { [10] = 0xFF, [11] = 0xFF, 10, 99, 0, 1 };

	r->hello.version = DROCE_PROTO_VERSION;
	r->hello.nb_engines = 1;
	r->hello.region_size = REGION_SIZE;
	r->hello.event_ring_off = fk.ring_off;
	fake_port(&r->hello.port);
	r->hello.limits = (struct droce_proto_limits){
		.max_qp = 16, .max_qp_wr = FAKE_MAX_QP_WR, .max_sge = FAKE_MAX_SGE,
		.max_inline = FAKE_MAX_INLINE, .max_cq = 16, .max_cqe = FAKE_MAX_CQE,
		.max_mr = 16, .max_mr_size = 1ull << 30, .max_pd = 4, .max_srq = 4,
		.max_srq_wr = 64, .max_srq_sge = 2, .max_ah = 8, .max_qp_rd_atom = 0,
	};
	/* Entry 0 valid (RoCE v2, IPv4-mapped), entry 1 empty. */
	r->hello.nb_gids = 2;
	memcpy(r->hello.gids[0].gid, gid0, 16);
	r->hello.gids[0].type = IBV_GID_TYPE_ROCE_V2;
	r->hello.gids[0].valid = 1;
}

static void *
fake_main(void *arg)
{
	(void)arg;
	for (;;) {
		int s = accept(fk.lsock, NULL, NULL);

		if (s < 0)
			return NULL;	/* shut down by the test */
		for (;;) {
			struct droce_proto_req req;
			struct droce_proto_resp resp;
			int fds[DROCE_PROTO_MAX_FDS], out[2];
			unsigned int nfds = 0, nout = 0;
			ssize_t n = droce_proto_recv(s, &req, sizeof(req), fds, DROCE_PROTO_MAX_FDS,
						     &nfds);

			if (n <= 0)
				break;
			while (nfds > 0)
				close(fds[--nfds]);
			memset(&resp, 0, sizeof(resp));
			resp.op = req.op;
			resp.seq = req.seq;
			switch (req.op) {
			case DROCE_PROTO_OP_QUERY_PORTS:
				resp.ports.nb_ports = 1;
				fake_port(&resp.ports.port[0]);
				break;
			case DROCE_PROTO_OP_HELLO:
				fake_hello(&resp);
				out[0] = fk.memfd;
				out[1] = fk.evfd;
				nout = 2;
				break;
			case DROCE_PROTO_OP_REG_MR:
				__atomic_add_fetch(&fk.requests, 1, __ATOMIC_SEQ_CST);
				fk.last = req;
				resp.obj.handle = 3;
				resp.obj.lkey = FAKE_LKEY;
				resp.obj.rkey = FAKE_LKEY;
				break;
			case DROCE_PROTO_OP_DEREG_MR:
				__atomic_add_fetch(&fk.requests, 1, __ATOMIC_SEQ_CST);
				fk.last = req;
				if (!__atomic_load_n(&fk.dereg_ok, __ATOMIC_SEQ_CST))
					resp.status = -ENOSYS;
				break;
			default:
				__atomic_add_fetch(&fk.requests, 1, __ATOMIC_SEQ_CST);
				fk.last = req;
				resp.status = -ENOSYS;
				break;
			}
			droce_proto_send(s, &resp, sizeof(resp), out, nout);
		}
		close(s);
	}
}

static void
fake_start(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct droce_shm_arena *a = droce_test_malloc(sizeof(*a));
	int64_t off;

	memset(&fk, 0, sizeof(fk));
	snprintf(fk.path, sizeof(fk.path), "/tmp/droce-test-verbs-%d.sock", (int)getpid());
	unlink(fk.path);
	fk.memfd = memfd_create("fake-region", MFD_CLOEXEC);
	CHECK(fk.memfd >= 0);
	CHECK(ftruncate(fk.memfd, REGION_SIZE) == 0);
	fk.region = mmap(NULL, REGION_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fk.memfd, 0);
	CHECK(fk.region != MAP_FAILED);
	CHECK_EQ_I64(droce_shm_arena_init(a, fk.region, REGION_SIZE, 1), 0);
	off = droce_shm_arena_alloc(a, sizeof(*fk.ring), DROCE_SHM_CACHE_LINE);
	CHECK(off > 0);
	fk.ring_off = (uint64_t)off;
	fk.ring = (struct droce_shm_event_ring *)((uint8_t *)fk.region + off);
	fk.ring->port_state = DROCE_PROTO_PORT_ACTIVE;
	droce_test_free(a);
	fk.evfd = eventfd(0, EFD_CLOEXEC);
	CHECK(fk.evfd >= 0);
	fk.lsock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	CHECK(fk.lsock >= 0);
	strcpy(sa.sun_path, fk.path);
	CHECK(bind(fk.lsock, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(listen(fk.lsock, 4) == 0);
	CHECK(pthread_create(&fk.thread, NULL, fake_main, NULL) == 0);
	setenv("DROCE_SOCKET", fk.path, 1);
}

static void
fake_stop(void)
{
	shutdown(fk.lsock, SHUT_RDWR);
	pthread_join(fk.thread, NULL);
	close(fk.lsock);
	unlink(fk.path);
	munmap(fk.region, REGION_SIZE);
	close(fk.memfd);
	close(fk.evfd);
}

/* Opens droce0 of the fake daemon. */
static struct ibv_context *
fake_open(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	int n = -1;

	list = ibv_get_device_list(&n);
	CHECK(list != NULL);
	CHECK_EQ_I64(n, 1);
	CHECK_EQ_STR(ibv_get_device_name(list[0]), "droce0");
	CHECK_EQ_U64(ibv_get_device_guid(list[0]), 0x0100FEFF00000002ull);
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	CHECK(ctx != NULL);
	return ctx;
}

/* Twice, in a process of its own (the line is once per process); 0 if both lists were empty. */
static int
lists_in_child(int err_fd)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		struct ibv_device **list;
		int n = -1, k, bad = 0;

		dup2(err_fd, 2);
		setenv("DROCE_SOCKET", "/nonexistent/droce/nowhere.sock", 1);
		for (k = 0; k < 2; k++) {
			list = ibv_get_device_list(&n);
			bad |= list == NULL || n != 0 || list[0] != NULL;
			ibv_free_device_list(list);
		}
		_exit(bad);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* No daemon: an empty list, and one line saying why and what to do, once per process. */
DROCE_TEST(no_daemon_empty_list_said_once)
{
	char buf[1024];
	ssize_t n;
	int p[2];

	CHECK(pipe(p) == 0);
	CHECK_EQ_I64(lists_in_child(p[1]), 0);
	close(p[1]);
	n = read(p[0], buf, sizeof(buf) - 1);
	close(p[0]);
	CHECK(n > 0);
	buf[n > 0 ? n : 0] = '\0';
	CHECK(strstr(buf, "libdroce: no droced serves /nonexistent/droce/nowhere.sock") == buf);
	CHECK(strstr(buf, "DROCE_SOCKET") != NULL && strstr(buf, "droced --config") != NULL);
	/* One line: the second list said nothing. */
	CHECK(strchr(buf, '\n') == buf + n - 1);
}

DROCE_TEST(strings_of_every_value)
{
	int i, j;

	for (i = IBV_WC_SUCCESS; i <= IBV_WC_TM_RNDV_INCOMPLETE; i++) {
		droce_test_ctx("status %d", i);
		CHECK(strcmp(ibv_wc_status_str((enum ibv_wc_status)i), "unknown") != 0);
		for (j = 0; j < i; j++)
			CHECK(strcmp(ibv_wc_status_str((enum ibv_wc_status)i),
				     ibv_wc_status_str((enum ibv_wc_status)j)) != 0);
	}
	CHECK_EQ_STR(ibv_wc_status_str(IBV_WC_SUCCESS), "success");
	CHECK_EQ_STR(ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR), "Work Request Flushed Error");
	CHECK_EQ_STR(ibv_wc_status_str((enum ibv_wc_status)999), "unknown");
	CHECK_EQ_STR(ibv_wc_status_str((enum ibv_wc_status)-1), "unknown");
	for (i = IBV_EVENT_CQ_ERR; i <= IBV_EVENT_WQ_FATAL; i++)
		CHECK(strcmp(ibv_event_type_str((enum ibv_event_type)i), "unknown") != 0);
	CHECK_EQ_STR(ibv_event_type_str((enum ibv_event_type)99), "unknown");
	CHECK_EQ_STR(ibv_node_type_str(IBV_NODE_CA), "InfiniBand channel adapter");
	CHECK_EQ_STR(ibv_node_type_str(IBV_NODE_UNKNOWN), "unknown");
	CHECK_EQ_STR(ibv_port_state_str(IBV_PORT_ACTIVE), "active");
	CHECK_EQ_STR(ibv_port_state_str((enum ibv_port_state)17), "unknown");
	CHECK_EQ_I64(ibv_rate_to_mult(IBV_RATE_40_GBPS), 16);
	CHECK_EQ_I64(mult_to_ibv_rate(4), IBV_RATE_10_GBPS);
	CHECK_EQ_I64(ibv_rate_to_mbps(IBV_RATE_25_GBPS), 25781);
	CHECK_EQ_I64(mbps_to_ibv_rate(2500), IBV_RATE_2_5_GBPS);
}

DROCE_TEST(null_and_unsupported_without_context)
{
	struct ibv_mr mr = { 0 };

	errno = 0;
	CHECK(ibv_open_device(NULL) == NULL);
	CHECK_EQ_I64(errno, EINVAL);
	CHECK(ibv_alloc_pd(NULL) == NULL);
	CHECK_EQ_I64(errno, EINVAL);
	CHECK_EQ_I64(ibv_dealloc_pd(NULL), EINVAL);
	CHECK_EQ_I64(ibv_dereg_mr(NULL), EINVAL);
	CHECK_EQ_I64(ibv_destroy_cq(NULL), EINVAL);
	CHECK_EQ_I64(ibv_destroy_qp(NULL), EINVAL);
	CHECK_EQ_I64(ibv_destroy_srq(NULL), EINVAL);
	CHECK_EQ_I64(ibv_destroy_ah(NULL), EINVAL);
	CHECK_EQ_I64(ibv_close_device(NULL), EINVAL);
	CHECK(ibv_create_comp_channel(NULL) == NULL);
	CHECK_EQ_I64(ibv_destroy_comp_channel(NULL), EINVAL);
	CHECK(ibv_reg_mr(NULL, &mr, sizeof(mr), IBV_ACCESS_LOCAL_WRITE) == NULL);
	CHECK_EQ_I64(errno, EINVAL);
	CHECK(ibv_create_qp(NULL, NULL) == NULL);
	CHECK_EQ_I64(errno, EINVAL);
	CHECK(ibv_get_device_name(NULL) == NULL);
	CHECK_EQ_I64(ibv_resize_cq(NULL, 4), EINVAL);
	CHECK_EQ_I64(errno, EINVAL);
	CHECK_EQ_I64(ibv_attach_mcast(NULL, NULL, 0), EINVAL);
	CHECK_EQ_I64(ibv_detach_mcast(NULL, NULL, 0), EINVAL);
	/* an MR of no context (all zeros): an input error, nothing touched */
	CHECK_EQ_I64(ibv_rereg_mr(&mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, 0),
		     IBV_REREG_MR_ERR_INPUT);
	CHECK_EQ_I64(errno, EINVAL);
	CHECK_EQ_I64(ibv_rereg_mr(NULL, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, 0),
		     IBV_REREG_MR_ERR_INPUT);
	CHECK_EQ_I64(errno, EINVAL);
	CHECK(ibv_reg_dmabuf_mr(NULL, 0, 4096, 0, -1, 0) == NULL);
	CHECK_EQ_I64(errno, EOPNOTSUPP);
	CHECK(ibv_import_device(3) == NULL);
	CHECK_EQ_I64(errno, EOPNOTSUPP);
	CHECK(ibv_qp_to_qp_ex(NULL) == NULL);
	CHECK_EQ_I64(ibv_is_fork_initialized(), IBV_FORK_UNNEEDED);
}

DROCE_TEST(queries_answer_from_hello)
{
	struct ibv_context *ctx;
	struct ibv_device_attr da;
	struct ibv_device_attr_ex dax;
	struct ibv_port_attr pa;
	struct ibv_gid_entry ge;
	union ibv_gid gid;
	unsigned int type = 99;
	__be16 pkey;

	fake_start();
	ctx = fake_open();
	CHECK_EQ_STR(ctx->device->name, "droce0");
	CHECK(ctx->num_comp_vectors >= 1);
	CHECK(ctx->async_fd >= 0);
	CHECK_EQ_I64(ibv_query_device(ctx, &da), 0);
	CHECK_EQ_STR(da.fw_ver, "droce");
	CHECK_EQ_U64(da.vendor_id, 0xFFFFFF);
	CHECK_EQ_U64(da.phys_port_cnt, 1);
	CHECK_EQ_I64(da.max_qp_wr, FAKE_MAX_QP_WR);
	CHECK_EQ_I64(da.max_cqe, FAKE_MAX_CQE);
	CHECK_EQ_I64(da.max_pkeys, 1);
	CHECK_EQ_I64(da.atomic_cap, IBV_ATOMIC_HCA);
	CHECK_EQ_U64(da.node_guid, 0x0100FEFF00000002ull);
	CHECK_EQ_I64(ibv_query_device_ex(ctx, NULL, &dax), 0);
	CHECK_EQ_I64(dax.orig_attr.max_qp_wr, FAKE_MAX_QP_WR);
	/* The macro (verbs_context op) and the exported function agree. */
	CHECK_EQ_I64(ibv_query_port(ctx, 1, &pa), 0);
	CHECK_EQ_I64(pa.state, IBV_PORT_ACTIVE);
	/* The state now, as droced writes it in the event ring (a link down since HELLO). */
	fk.ring->port_state = DROCE_PROTO_PORT_DOWN;
	CHECK_EQ_I64(ibv_query_port(ctx, 1, &pa), 0);
	CHECK_EQ_I64(pa.state, IBV_PORT_DOWN);
	fk.ring->port_state = DROCE_PROTO_PORT_ACTIVE;
	CHECK_EQ_I64(ibv_query_port(ctx, 1, &pa), 0);
	CHECK_EQ_I64(pa.state, IBV_PORT_ACTIVE);
	CHECK_EQ_I64(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
	CHECK_EQ_I64(pa.active_mtu, IBV_MTU_1024);
	CHECK_EQ_I64(pa.lid, 0);
	/* A fixed-length table (VERBS_GID_TBL_LEN): droced's 2 entries, then empty ones. */
	CHECK_EQ_I64(pa.gid_tbl_len, 16);
	CHECK_EQ_I64(pa.pkey_tbl_len, 1);
	CHECK_EQ_I64(ibv_query_port(ctx, 0, &pa), EINVAL);
	CHECK_EQ_I64(ibv_query_port(ctx, 2, &pa), EINVAL);
	CHECK_EQ_I64((ibv_query_port)(ctx, 2, (struct _compat_ibv_port_attr *)&pa), EINVAL);
	CHECK_EQ_I64(ibv_query_gid(ctx, 1, 0, &gid), 0);
	CHECK_EQ_U64(gid.raw[10], 0xFF);
	CHECK_EQ_U64(gid.raw[12], 10);
	/* An empty entry reads as the zero GID; past the table: EINVAL. */
	CHECK_EQ_I64(ibv_query_gid(ctx, 1, 2, &gid), 0);
	CHECK_EQ_U64(gid.raw[10], 0);
	CHECK_EQ_U64(gid.raw[12], 0);
	CHECK_EQ_I64(ibv_query_gid(ctx, 1, 16, &gid), -1);
	CHECK_EQ_I64(errno, EINVAL);
	CHECK_EQ_I64(ibv_query_gid(ctx, 2, 0, &gid), -1);
	CHECK_EQ_I64(ibv_query_gid_ex(ctx, 1, 0, &ge, 0), 0);
	CHECK_EQ_I64(ge.gid_type, IBV_GID_TYPE_ROCE_V2);
	CHECK_EQ_I64(ge.port_num, 1);
	CHECK_EQ_I64(ibv_query_gid_ex(ctx, 1, 1, &ge, 0), ENODATA);
	CHECK_EQ_I64(ibv_query_gid_ex(ctx, 1, 2, &ge, 0), ENODATA);
	CHECK_EQ_I64(ibv_query_gid_ex(ctx, 1, 15, &ge, 0), ENODATA);
	CHECK_EQ_I64(ibv_query_gid_ex(ctx, 1, 16, &ge, 0), EINVAL);
	CHECK_EQ_I64(ibv_query_gid_ex(ctx, 0, 0, &ge, 0), EINVAL);
	CHECK_EQ_I64(ibv_query_gid_ex(ctx, 1, 0, &ge, 1), EINVAL);
	CHECK_EQ_I64(ibv_query_gid_table(ctx, &ge, 1, 0), 1);
	CHECK_EQ_I64(ibv_query_gid_type(ctx, 1, 0, &type), 0);
	CHECK_EQ_U64(type, 1);		/* IBV_GID_TYPE_SYSFS_ROCE_V2 */
	CHECK_EQ_I64(ibv_query_pkey(ctx, 1, 0, &pkey), 0);
	CHECK_EQ_U64(pkey, 0xFFFF);
	CHECK_EQ_I64(ibv_query_pkey(ctx, 1, 1, &pkey), -1);
	CHECK_EQ_I64(ibv_get_pkey_index(ctx, 1, 0xFFFF), 0);
	CHECK_EQ_U64(fk.requests, 0);
	CHECK_EQ_I64(ibv_close_device(ctx), 0);
	fake_stop();
}

/* Function-style calls of the verbs that verbs.h wraps: checks done before sending. */
DROCE_TEST(checks_before_any_message)
{
	struct ibv_context *ctx;
	struct ibv_pd pd;
	struct ibv_cq cq;
	struct ibv_qp_init_attr qa;
	struct ibv_ah_attr ah;
	struct ibv_srq_init_attr sa;
	struct ibv_mr *mr;
	uint8_t *buf = droce_test_malloc(8192);

	fake_start();
	ctx = fake_open();
	pd = (struct ibv_pd){ .context = ctx, .handle = 1 };
	cq = (struct ibv_cq){ .context = ctx, .handle = 1 };
	/* CQ: 0 entries, over the device's, bad vector. */
	CHECK(ibv_create_cq(ctx, 0, NULL, NULL, 0) == NULL);
	CHECK_EQ_I64(errno, EINVAL);
	CHECK(ibv_create_cq(ctx, FAKE_MAX_CQE + 1, NULL, NULL, 0) == NULL);
	CHECK_EQ_I64(errno, EINVAL);
	CHECK(ibv_create_cq(ctx, 1, NULL, NULL, 1) == NULL);
	CHECK_EQ_I64(errno, EINVAL);
	/* MR access: unknown bit, remote write/atomic without local write, length 0. */
	CHECK(ibv_reg_mr(&pd, buf, 64, 1 << 12) == NULL);
	CHECK_EQ_I64(errno, EINVAL);
	CHECK(ibv_reg_mr(&pd, buf, 64, IBV_ACCESS_REMOTE_WRITE) == NULL);
	CHECK_EQ_I64(errno, EINVAL);
	CHECK(ibv_reg_mr(&pd, buf, 64, IBV_ACCESS_REMOTE_ATOMIC) == NULL);
	CHECK_EQ_I64(errno, EINVAL);
	CHECK(ibv_reg_mr(&pd, buf, 0, IBV_ACCESS_LOCAL_WRITE) == NULL);
	CHECK_EQ_I64(errno, EINVAL);
	CHECK(ibv_reg_mr(&pd, buf, 64, IBV_ACCESS_ON_DEMAND) == NULL);
	CHECK_EQ_I64(errno, EOPNOTSUPP);
	/* QP: caps over the device's, unsupported type, missing CQ. */
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = &cq;
	qa.recv_cq = &cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = FAKE_MAX_QP_WR + 1;
	CHECK(ibv_create_qp(&pd, &qa) == NULL);
	CHECK_EQ_I64(errno, EINVAL);
	qa.cap.max_send_wr = 1;
	qa.cap.max_recv_sge = FAKE_MAX_SGE + 1;
	CHECK(ibv_create_qp(&pd, &qa) == NULL);
	CHECK_EQ_I64(errno, EINVAL);
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = FAKE_MAX_INLINE + 1;
	CHECK(ibv_create_qp(&pd, &qa) == NULL);
	CHECK_EQ_I64(errno, EINVAL);
	qa.cap.max_inline_data = 0;
	qa.qp_type = IBV_QPT_RAW_PACKET;
	CHECK(ibv_create_qp(&pd, &qa) == NULL);
	CHECK_EQ_I64(errno, EOPNOTSUPP);
	qa.qp_type = IBV_QPT_UD;
	qa.send_cq = NULL;
	CHECK(ibv_create_qp(&pd, &qa) == NULL);
	CHECK_EQ_I64(errno, EINVAL);
	/* SRQ: 0 WRs, limit over max_wr. */
	memset(&sa, 0, sizeof(sa));
	CHECK(ibv_create_srq(&pd, &sa) == NULL);
	CHECK_EQ_I64(errno, EINVAL);
	sa.attr.max_wr = 4;
	sa.attr.srq_limit = 5;
	CHECK(ibv_create_srq(&pd, &sa) == NULL);
	CHECK_EQ_I64(errno, EINVAL);
	/* AH: no GRH on RoCE, bad port, GID index out of range or empty. */
	memset(&ah, 0, sizeof(ah));
	ah.port_num = 1;
	CHECK(ibv_create_ah(&pd, &ah) == NULL);
	CHECK_EQ_I64(errno, EINVAL);
	ah.is_global = 1;
	ah.port_num = 2;
	CHECK(ibv_create_ah(&pd, &ah) == NULL);
	CHECK_EQ_I64(errno, EINVAL);
	ah.port_num = 1;
	ah.grh.sgid_index = 1;
	CHECK(ibv_create_ah(&pd, &ah) == NULL);
	CHECK_EQ_I64(errno, EINVAL);
	CHECK_EQ_U64(fk.requests, 0);
	/* Relaxed ordering is optional: dropped, and the MR is registered. */
	mr = ibv_reg_mr(&pd, buf + 100, 5000, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING);
	CHECK(mr != NULL);
	CHECK_EQ_U64(fk.requests, 1);
	CHECK_EQ_U64(fk.last.reg_mr.access, IBV_ACCESS_LOCAL_WRITE);
	CHECK_EQ_U64(fk.last.reg_mr.length, 5000);
	CHECK_EQ_U64(fk.last.reg_mr.iova, (uintptr_t)(buf + 100));
	CHECK_EQ_U64(fk.last.reg_mr.first_off, ((uintptr_t)buf + 100) & 4095);
	CHECK(fk.last.reg_mr.nb_pieces >= 1);
	CHECK_EQ_U64(mr->lkey, FAKE_LKEY);
	/* The daemon's errno comes back as the verb's. */
	CHECK_EQ_I64(ibv_dereg_mr(mr), ENOSYS);
	CHECK_EQ_I64(errno, ENOSYS);
	/* Refused, the MR is still there: a dereg the daemon takes frees it and its pages. */
	__atomic_store_n(&fk.dereg_ok, true, __ATOMIC_SEQ_CST);
	CHECK_EQ_I64(ibv_dereg_mr(mr), 0);
	CHECK(ibv_alloc_pd(ctx) == NULL);
	CHECK_EQ_I64(errno, ENOSYS);
	CHECK_EQ_I64(ibv_close_device(ctx), 0);
	fake_stop();
	droce_test_free(buf);
}

/* A UD receive's 40-byte area: IPv4 header in bytes 20..39, or an IPv6 header. */
DROCE_TEST(ah_from_wc_reads_the_grh_area)
{
	static const uint8_t v4hdr[20] = {
		0x45, 0x00, 0x00, 0x3c, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00,
		10, 99, 0, 2, 10, 99, 0, 1,
	};
	struct ibv_context *ctx;
	struct ibv_wc wc = { .wc_flags = IBV_WC_GRH, .sl = 0 };
	struct ibv_ah_attr ah;
	uint8_t grh[40] = { 0 };
	uint32_t sum = 0;
	unsigned int i;

	fake_start();
	ctx = fake_open();
	memcpy(grh + 20, v4hdr, sizeof(v4hdr));
	for (i = 0; i < 20; i += 2)
		sum += (uint32_t)grh[20 + i] << 8 | grh[21 + i];
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	grh[30] = (uint8_t)(~sum >> 8);
	grh[31] = (uint8_t)~sum;
	CHECK_EQ_I64(ibv_init_ah_from_wc(ctx, 1, &wc, (struct ibv_grh *)grh, &ah), 0);
	CHECK_EQ_U64(ah.is_global, 1);
	CHECK_EQ_U64(ah.grh.sgid_index, 0);
	CHECK_EQ_U64(ah.grh.dgid.raw[10], 0xFF);
	CHECK_EQ_U64(ah.grh.dgid.raw[15], 2);
	/* A bad checksum: read as IPv6, whose destination is none of our GIDs. */
	grh[31] ^= 1;
	CHECK_EQ_I64(ibv_init_ah_from_wc(ctx, 1, &wc, (struct ibv_grh *)grh, &ah), ENOENT);
	/* An IPv6 header to our GID 0 from GID ::ffff:10.99.0.9 with flow label 0x12345. */
	memset(grh, 0, sizeof(grh));
	grh[0] = 0x60; grh[1] = 0x01; grh[2] = 0x23; grh[3] = 0x45;
	grh[8 + 10] = 0xFF; grh[8 + 11] = 0xFF; grh[8 + 12] = 10; grh[8 + 13] = 99;
	grh[8 + 15] = 9;
	grh[24 + 10] = 0xFF; grh[24 + 11] = 0xFF; grh[24 + 12] = 10; grh[24 + 13] = 99;
	grh[24 + 15] = 1;
	CHECK_EQ_I64(ibv_init_ah_from_wc(ctx, 1, &wc, (struct ibv_grh *)grh, &ah), 0);
	CHECK_EQ_U64(ah.grh.flow_label, 0x12345);
	CHECK_EQ_U64(ah.grh.dgid.raw[15], 9);
	wc.wc_flags = 0;
	CHECK_EQ_I64(ibv_init_ah_from_wc(ctx, 1, &wc, (struct ibv_grh *)grh, &ah), EINVAL);
	CHECK_EQ_I64(ibv_close_device(ctx), 0);
	fake_stop();
}

DROCE_TEST(async_event_from_ring)
{
	struct ibv_context *ctx;
	struct ibv_async_event ev;
	uint64_t one = 1;
	int fl;

	fake_start();
	ctx = fake_open();
	/* Empty ring, non-blocking async_fd: EAGAIN, as with a kernel device. */
	fl = fcntl(ctx->async_fd, F_GETFL);
	CHECK(fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK) == 0);
	CHECK_EQ_I64(ibv_get_async_event(ctx, &ev), -1);
	CHECK_EQ_I64(errno, EAGAIN);
	fk.ring->ev[0] = (struct droce_shm_event){ .type = IBV_EVENT_DEVICE_FATAL };
	fk.ring->ev[1] = (struct droce_shm_event){ .type = IBV_EVENT_CQ_ERR, .handle = 7 };
	fk.ring->ev[2] = (struct droce_shm_event){ .type = IBV_EVENT_PORT_ACTIVE };
	__atomic_store_n(&fk.ring->ring.prod, 3, __ATOMIC_RELEASE);
	CHECK(write(fk.evfd, &one, sizeof(one)) == sizeof(one));
	CHECK_EQ_I64(ibv_get_async_event(ctx, &ev), 0);
	CHECK_EQ_I64(ev.event_type, IBV_EVENT_DEVICE_FATAL);
	ibv_ack_async_event(&ev);
	/* CQ 7 does not exist: its event is dropped. */
	CHECK_EQ_I64(ibv_get_async_event(ctx, &ev), 0);
	CHECK_EQ_I64(ev.event_type, IBV_EVENT_PORT_ACTIVE);
	CHECK_EQ_I64(ev.element.port_num, 1);
	CHECK_EQ_U64(fk.ring->ring.cons, 3);
	CHECK_EQ_I64(ibv_close_device(ctx), 0);
	fake_stop();
}
