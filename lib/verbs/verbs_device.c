/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Devices and contexts: the device list (one device per droced port, from QUERY_PORTS on a
 * short-lived connection), opening a device (a connection of its own that sends HELLO and
 * receives the client region and the async eventfd), and the queries answered from what
 * HELLO returned: device limits, port, GID and P_Key tables. With no daemon to reach,
 * ibv_get_device_list returns an empty list and says once per process, in one line, why
 * and what to do: a program's own "No IB devices found" does not say that droce is there.
 */

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "verbs_loc.h"

/* verbs.h turns these names into macros; the library defines the real functions. */
#undef ibv_get_device_list
#undef ibv_query_port

void
verbs_device_put(struct verbs_ddev *d)
{
	if (__atomic_sub_fetch(&d->refcnt, 1, __ATOMIC_ACQ_REL) == 0)
		free(d);
}

static struct verbs_ddev *
device_new(const char *path, uint32_t port, const struct droce_proto_port_info *info)
{
	struct verbs_ddev *d = calloc(1, sizeof(*d));

	if (d == NULL)
		return NULL;
	d->refcnt = 1;
	d->port = port;
	d->info = *info;
	snprintf(d->sock_path, sizeof(d->sock_path), "%s", path);
	d->ibdev.node_type = IBV_NODE_CA;
	d->ibdev.transport_type = IBV_TRANSPORT_IB;
	snprintf(d->ibdev.name, sizeof(d->ibdev.name), VERBS_DEV_PREFIX "%u", port);
	snprintf(d->ibdev.dev_name, sizeof(d->ibdev.dev_name), "uverbs_" VERBS_DEV_PREFIX "%u", port);
	snprintf(d->ibdev.dev_path, sizeof(d->ibdev.dev_path), VERBS_DEV_DIR "%s",
		 d->ibdev.dev_name);
	snprintf(d->ibdev.ibdev_path, sizeof(d->ibdev.ibdev_path), VERBS_SYSFS_CLASS "%s",
		 d->ibdev.name);
	return d;
}

/* Once per process: droced cannot be reached, and how to fix that. */
static void
no_daemon(const char *path, int err)
{
	static atomic_bool said;

	if (atomic_exchange(&said, true))
		return;
	if (err == ENOENT || err == ECONNREFUSED)
		verbs_warn("no droced serves %s (%s): start one (droced --config FILE, "
			   "doc/getting-started.md) or set %s to its control socket", path,
			   strerror(err), DROCE_PROTO_SOCKET_ENV);
	else if (err == EACCES || err == EPERM)
		verbs_warn("permission denied on droced's socket %s: droced takes root and "
			   "the users its [control] section allows", path);
	else
		verbs_warn("cannot reach droced at %s: %s", path, strerror(err));
}

VERBS_EXPORT struct ibv_device **
ibv_get_device_list(int *num_devices)
{
	const char *path = verbs_socket_path();
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_QUERY_PORTS };
	struct droce_proto_resp resp;
	struct ibv_device **list;
	uint32_t i, n = 0;
	int sock, err = 0;

	sock = verbs_sock_connect(path, &err);
	if (sock >= 0) {
		err = verbs_sock_call(sock, 1, &req, NULL, 0, &resp, NULL, 0, NULL);
		close(sock);
		if (err == 0) {
			n = resp.ports.nb_ports;
			if (n > DROCE_PROTO_MAX_PORTS)
				n = DROCE_PROTO_MAX_PORTS;
		}
	}
	if (err != 0)
		no_daemon(path, err);
	list = calloc(n + 1, sizeof(*list));
	if (list == NULL)
		return verbs_err_null(ENOMEM);
	for (i = 0; i < n; i++) {
		struct verbs_ddev *d = device_new(path, i, &resp.ports.port[i]);

		if (d == NULL) {
			while (i > 0)
				verbs_device_put(to_ddev(list[--i]));
			free(list);
			return verbs_err_null(ENOMEM);
		}
		list[i] = &d->ibdev;
	}
	if (num_devices != NULL)
		*num_devices = (int)n;
	return list;
}

VERBS_EXPORT void
ibv_free_device_list(struct ibv_device **list)
{
	struct ibv_device **p;

	if (list == NULL)
		return;
	for (p = list; *p != NULL; p++)
		verbs_device_put(to_ddev(*p));
	free(list);
}

VERBS_EXPORT const char *
ibv_get_device_name(struct ibv_device *device)
{
	if (device == NULL)
		return verbs_err_null(EINVAL);
	return device->name;
}

VERBS_EXPORT __be64
ibv_get_device_guid(struct ibv_device *device)
{
	if (device == NULL) {
		errno = EINVAL;
		return 0;
	}
	return to_ddev(device)->info.node_guid;	/* already network order */
}

VERBS_EXPORT int
ibv_get_device_index(struct ibv_device *device)
{
	if (device == NULL)
		return -1;
	return (int)to_ddev(device)->port;
}

/* DROCE_POLL_YIELD: a count of empty polls, or the default when unset or not a number. */
static uint32_t
verbs_poll_yield(void)
{
	const char *v = getenv(VERBS_POLL_YIELD_ENV);
	unsigned long n;
	char *end;

	if (v == NULL || v[0] == '\0')
		return VERBS_POLL_YIELD_DEFAULT;
	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno != 0 || *end != '\0' || n > UINT32_MAX) {
		verbs_warn("%s=%s is not a count: using %u", VERBS_POLL_YIELD_ENV, v,
			   VERBS_POLL_YIELD_DEFAULT);
		return VERBS_POLL_YIELD_DEFAULT;
	}
	return (uint32_t)n;
}

/* Checks HELLO's answer before anything in it is used as an offset or a count. */
static int
hello_check(const struct droce_proto_resp *r, unsigned int nfds)
{
	if (nfds != 2 || r->hello.version != DROCE_PROTO_VERSION)
		return EPROTO;
	if (r->hello.nb_gids > DROCE_PROTO_MAX_GIDS || r->hello.nb_engines == 0 ||
	    r->hello.nb_engines > DROCE_SHM_MAX_ENGINES)
		return EPROTO;
	if (r->hello.region_size == 0 || r->hello.region_size > SIZE_MAX ||
	    r->hello.event_ring_off > r->hello.region_size ||
	    r->hello.region_size - r->hello.event_ring_off <
	    sizeof(struct droce_shm_event_ring) ||
	    r->hello.event_ring_off % DROCE_SHM_CACHE_LINE != 0)
		return EPROTO;
	return 0;
}

VERBS_EXPORT struct ibv_context *
ibv_open_device(struct ibv_device *device)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_HELLO };
	struct droce_proto_resp resp;
	struct verbs_ddev *d;
	struct verbs_dctx *c;
	unsigned int nfds = 0, i;
	int fds[2] = { -1, -1 };
	void *region;
	int sock, err = 0;

	if (device == NULL)
		return verbs_err_null(EINVAL);
	d = to_ddev(device);
	sock = verbs_sock_connect(d->sock_path, &err);
	if (sock < 0) {
		verbs_debug("open %s: droced at %s: %s", device->name, d->sock_path,
			    strerror(err));
		return verbs_err_null(ENODEV);
	}
	req.hello.version = DROCE_PROTO_VERSION;
	req.hello.port = d->port;
	err = verbs_sock_call(sock, 1, &req, NULL, 0, &resp, fds, 2, &nfds);
	if (err == 0)
		err = hello_check(&resp, nfds);
	if (err != 0) {
		verbs_debug("open %s: HELLO: %s", device->name, strerror(err));
		goto fail;
	}
	region = mmap(NULL, resp.hello.region_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		      fds[0], 0);
	if (region == MAP_FAILED) {
		err = errno;
		goto fail;
	}
	close(fds[0]);
	fds[0] = -1;
	if (droce_shm_region_check(region, resp.hello.region_size) != 0) {
		verbs_debug("open %s: region is not a droce region of this ABI", device->name);
		munmap(region, resp.hello.region_size);
		err = EPROTO;
		goto fail;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		munmap(region, resp.hello.region_size);
		err = ENOMEM;
		goto fail;
	}
	/*
	 * The application's async_fd is libdroce's own eventfd (verbs_async.c); droced's
	 * pipe is read by the watcher, without blocking.
	 */
	c->vctx.context.async_fd = eventfd(0, EFD_CLOEXEC);
	if (c->vctx.context.async_fd < 0 || fcntl(fds[1], F_SETFL, O_NONBLOCK) != 0) {
		err = errno;
		if (c->vctx.context.async_fd >= 0)
			close(c->vctx.context.async_fd);
		free(c);
		munmap(region, resp.hello.region_size);
		goto fail;
	}
	__atomic_add_fetch(&d->refcnt, 1, __ATOMIC_ACQ_REL);
	c->dev = d;
	c->sock = sock;
	c->seq = 1;
	c->region = region;
	c->region_size = resp.hello.region_size;
	c->evring = (struct droce_shm_event_ring *)(c->region + resp.hello.event_ring_off);
	c->nb_engines = resp.hello.nb_engines;
	for (i = 0; i < DROCE_SHM_MAX_ENGINES; i++)
		c->wake_fd[i] = -1;
	c->port = resp.hello.port;
	c->limits = resp.hello.limits;
	c->tsc_hz = verbs_clock_hz(resp.hello.tsc_hz);
	/*
	 * The GID table has a fixed length with droced's GIDs first and empty entries after
	 * them, as on a NIC whose table outgrows its addresses: a program scanning it meets
	 * empty entries (ENODATA from ibv_query_gid_ex) as it would there.
	 */
	c->poll_yield = verbs_poll_yield();
	c->nb_gids = VERBS_GID_TBL_LEN;
	memcpy(c->gids, resp.hello.gids, resp.hello.nb_gids * sizeof(c->gids[0]));
	pthread_mutex_init(&c->req_lock, NULL);
	pthread_mutex_init(&c->ev_lock, NULL);
	pthread_mutex_init(&c->obj_lock, NULL);
	pthread_rwlock_init(&c->key_lock, NULL);

	c->vctx.sz = sizeof(struct verbs_context);
	c->vctx.query_port = verbs_query_port;
	c->vctx.query_device_ex = verbs_query_device_ex;
	c->vctx.create_qp_ex = verbs_qp_create_ex;
	c->vctx.create_cq_ex = verbs_cq_create_ex;
	c->vctx.query_rt_values = verbs_query_rt_values;
	c->vctx.open_xrcd = verbs_xrcd_open;
	c->vctx.close_xrcd = verbs_xrcd_close;
	c->vctx.create_srq_ex = verbs_srq_create_ex;
	c->vctx.get_srq_num = verbs_srq_num;
	c->vctx.context.device = device;
	c->vctx.context.cmd_fd = sock;
	c->ev_pipe = fds[1];
	c->vctx.context.num_comp_vectors = 1;
	c->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	pthread_mutex_init(&c->vctx.context.mutex, NULL);
	c->vctx.context.ops.poll_cq = verbs_cq_poll;
	c->vctx.context.ops.req_notify_cq = verbs_cq_req_notify;
	c->vctx.context.ops.post_send = verbs_qp_post_send;
	c->vctx.context.ops.post_recv = verbs_qp_post_recv;
	c->vctx.context.ops.post_srq_recv = verbs_srq_post_recv;
	c->vctx.context.ops.alloc_mw = verbs_mw_alloc;
	c->vctx.context.ops.dealloc_mw = verbs_mw_dealloc;
	c->vctx.context.ops.bind_mw = verbs_mw_bind;
	err = verbs_watch_start(c);
	if (err != 0) {
		verbs_debug("open %s: watcher thread: %s", device->name, strerror(err));
		close(c->vctx.context.async_fd);
		pthread_mutex_destroy(&c->req_lock);
		pthread_mutex_destroy(&c->ev_lock);
		pthread_mutex_destroy(&c->obj_lock);
		pthread_rwlock_destroy(&c->key_lock);
		pthread_mutex_destroy(&c->vctx.context.mutex);
		munmap(c->region, c->region_size);
		verbs_device_put(d);
		free(c);
		goto fail;
	}
	return &c->vctx.context;

fail:
	if (fds[0] >= 0)
		close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	close(sock);
	return verbs_err_null(err);
}

/*
 * Closing the socket is what tells droced to tear down everything the context still
 * owns; the application is expected to have destroyed its objects, as with rdma-core.
 */
VERBS_EXPORT int
ibv_close_device(struct ibv_context *context)
{
	struct verbs_dctx *c;
	unsigned int i;

	if (context == NULL)
		return verbs_err(EINVAL);
	c = to_dctx(context);
	verbs_watch_stop(c);
	close(c->sock);
	for (i = 0; i < DROCE_SHM_MAX_ENGINES; i++) {
		if (c->wake_fd[i] >= 0)
			close(c->wake_fd[i]);
	}
	close(c->ev_pipe);
	close(context->async_fd);
	munmap(c->region, c->region_size);
	pthread_mutex_destroy(&c->req_lock);
	pthread_mutex_destroy(&c->ev_lock);
	pthread_mutex_destroy(&c->obj_lock);
	pthread_rwlock_destroy(&c->key_lock);
	pthread_mutex_destroy(&context->mutex);
	free(c->keys);
	free(c->ahs);
	verbs_device_put(c->dev);
	free(c);
	return 0;
}

static void
device_attr_fill(const struct verbs_dctx *c, struct ibv_device_attr *a)
{
	const struct droce_proto_limits *l = &c->limits;

	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "%s", VERBS_FW_VER);
	a->node_guid = c->port.node_guid;
	a->sys_image_guid = c->port.node_guid;
	a->vendor_id = VERBS_VENDOR_ID;
	a->max_mr_size = l->max_mr_size;
	a->page_size_cap = (uint64_t)sysconf(_SC_PAGESIZE);
	a->max_qp = (int)l->max_qp;
	a->max_qp_wr = (int)l->max_qp_wr;
	/*
	 * The responder sends RNR NAKs when no receive WQE is posted (9.7.5.2.8). Memory
	 * windows: type 1, and type 2 bound to a QP and a PD (2B, as rxe).
	 */
	a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_MEM_WINDOW |
			      IBV_DEVICE_MEM_WINDOW_TYPE_2B;
	a->max_sge = (int)l->max_sge;
	a->max_sge_rd = l->max_qp_rd_atom != 0 ? (int)l->max_sge : 0;
	a->max_cq = (int)l->max_cq;
	a->max_cqe = (int)l->max_cqe;
	a->max_mr = (int)l->max_mr;
	a->max_mw = (int)l->max_mr;	/* droced keeps as many windows as MRs */
	a->max_mcast_grp = (int)l->max_mcast_grp;
	a->max_mcast_qp_attach = (int)l->max_mcast_qp_attach;
	a->max_total_mcast_qp_attach = (int)(l->max_mcast_grp * l->max_mcast_qp_attach);
	a->max_pd = (int)l->max_pd;
	a->max_qp_rd_atom = (int)l->max_qp_rd_atom;
	a->max_qp_init_rd_atom = (int)l->max_qp_init_rd_atom;
	a->max_res_rd_atom = (int)(l->max_qp_rd_atom * l->max_qp);
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_ah = (int)l->max_ah;
	a->max_srq = (int)l->max_srq;
	a->max_srq_wr = (int)l->max_srq_wr;
	a->max_srq_sge = (int)l->max_srq_sge;
	a->max_pkeys = 1;
	a->local_ca_ack_delay = VERBS_CA_ACK_DELAY;
	a->phys_port_cnt = 1;
}

VERBS_EXPORT int
ibv_query_device(struct ibv_context *context, struct ibv_device_attr *device_attr)
{
	if (context == NULL || device_attr == NULL)
		return verbs_err(EINVAL);
	device_attr_fill(to_dctx(context), device_attr);
	return 0;
}

int
verbs_query_device_ex(struct ibv_context *context, const struct ibv_query_device_ex_input *input,
		      struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex a;

	if (context == NULL || attr == NULL || attr_size < sizeof(attr->orig_attr) ||
	    (input != NULL && input->comp_mask != 0))
		return verbs_err(EINVAL);
	memset(&a, 0, sizeof(a));
	device_attr_fill(to_dctx(context), &a.orig_attr);
	a.phys_port_cnt_ex = a.orig_attr.phys_port_cnt;
	/* IBA 1.5's ATOMIC WRITE and FLUSH, both placement types (doc/verbs-coverage.md). */
	a.device_cap_flags_ex = a.orig_attr.device_cap_flags | VERBS_DEVICE_ATOMIC_WRITE |
				VERBS_DEVICE_FLUSH_GLOBAL | VERBS_DEVICE_FLUSH_PERSISTENT;
	/* completion timestamps: the engines' TSC, 64 bits wide, its rate in kHz */
	if (to_dctx(context)->tsc_hz != 0) {
		a.completion_timestamp_mask = UINT64_MAX;
		a.hca_core_clock = to_dctx(context)->tsc_hz / 1000;
	}
	memcpy(attr, &a, attr_size < sizeof(a) ? attr_size : sizeof(a));
	if (attr_size > sizeof(a))
		memset((uint8_t *)attr + sizeof(a), 0, attr_size - sizeof(a));
	return 0;
}

int
verbs_query_port(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *attr,
		 size_t attr_len)
{
	struct ibv_port_attr a;
	struct verbs_dctx *c;

	if (context == NULL || attr == NULL)
		return verbs_err(EINVAL);
	if (port_num != VERBS_PORT_NUM)
		return verbs_err(EINVAL);
	c = to_dctx(context);
	memset(&a, 0, sizeof(a));
	/* droced keeps the state now in the event ring (a link down since the HELLO). */
	a.state = __atomic_load_n(&c->evring->port_state, __ATOMIC_ACQUIRE) ==
		  DROCE_PROTO_PORT_ACTIVE ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
	a.max_mtu = (enum ibv_mtu)c->port.max_mtu;
	a.active_mtu = (enum ibv_mtu)c->port.max_mtu;
	a.gid_tbl_len = (int)c->nb_gids;
	/* RoCE: the GID table follows the port's IP addresses. */
	a.port_cap_flags = IBV_PORT_IP_BASED_GIDS;
	a.max_msg_sz = VERBS_MAX_MSG_SZ;
	a.pkey_tbl_len = 1;
	a.lid = 0;
	a.max_vl_num = 1;
	a.active_width = 1;			/* 1X */
	a.active_speed = 32;			/* EDR: 25 Gb/s per lane */
	a.phys_state = a.state == IBV_PORT_ACTIVE ? VERBS_PHYS_STATE_LINKUP : 0;
	a.link_layer = IBV_LINK_LAYER_ETHERNET;
	memcpy(attr, &a, attr_len < sizeof(a) ? attr_len : sizeof(a));
	return 0;
}

/* The exported pre-extension entry point: fills the full current struct, as rdma-core does. */
VERBS_EXPORT int
ibv_query_port(struct ibv_context *context, uint8_t port_num,
	       struct _compat_ibv_port_attr *port_attr)
{
	return verbs_query_port(context, port_num, (struct ibv_port_attr *)port_attr,
				sizeof(struct ibv_port_attr));
}

/* ibv_query_gid(3): 0, or -1 with errno; an empty entry reads as the zero GID. */
VERBS_EXPORT int
ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
	struct verbs_dctx *c;

	if (context == NULL || gid == NULL || port_num != VERBS_PORT_NUM || index < 0) {
		errno = EINVAL;
		return -1;
	}
	c = to_dctx(context);
	if ((uint32_t)index >= c->nb_gids) {
		errno = EINVAL;
		return -1;
	}
	if (c->gids[index].valid)
		memcpy(gid->raw, c->gids[index].gid, sizeof(gid->raw));
	else
		memset(gid->raw, 0, sizeof(gid->raw));
	return 0;
}

static void
gid_entry_fill(const struct verbs_dctx *c, uint32_t index, struct ibv_gid_entry *e)
{
	memset(e, 0, sizeof(*e));
	memcpy(e->gid.raw, c->gids[index].gid, sizeof(e->gid.raw));
	e->gid_index = index;
	e->port_num = VERBS_PORT_NUM;
	e->gid_type = c->gids[index].type;
}

/* ibv_query_gid_ex(3): 0 or the errno value; ENODATA for an empty entry. */
VERBS_EXPORT int
_ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
		  struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	struct ibv_gid_entry e;
	struct verbs_dctx *c;

	if (context == NULL || entry == NULL || flags != 0 || port_num != VERBS_PORT_NUM ||
	    entry_size < sizeof(e))
		return verbs_err(EINVAL);
	c = to_dctx(context);
	if (gid_index >= c->nb_gids)
		return verbs_err(EINVAL);
	if (!c->gids[gid_index].valid)
		return verbs_err(ENODATA);
	gid_entry_fill(c, gid_index, &e);
	memcpy(entry, &e, sizeof(e));
	return 0;
}

/* ibv_query_gid_table(3): the number of valid entries written, or a negative errno. */
VERBS_EXPORT ssize_t
_ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
		     size_t max_entries, uint32_t flags, size_t entry_size)
{
	struct verbs_dctx *c;
	size_t n = 0;
	uint32_t i;

	if (context == NULL || (entries == NULL && max_entries != 0) || flags != 0 ||
	    entry_size < sizeof(struct ibv_gid_entry))
		return -verbs_err(EINVAL);
	c = to_dctx(context);
	for (i = 0; i < c->nb_gids; i++) {
		if (!c->gids[i].valid)
			continue;
		if (n == max_entries)
			return -verbs_err(EINVAL);
		gid_entry_fill(c, i, (struct ibv_gid_entry *)((uint8_t *)entries +
							      n * entry_size));
		n++;
	}
	return (ssize_t)n;
}

/*
 * rdma-core's private ibv_query_gid_type (IBVERBS_PRIVATE), which ibv_devinfo and pyverbs
 * call: sysfs numbering (RoCE v2 = 1); an empty entry reports IB/RoCE v1, as rdma-core does.
 */
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       unsigned int *type);

VERBS_EXPORT int
ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		   unsigned int *type)
{
	struct verbs_dctx *c;

	if (context == NULL || type == NULL || port_num != VERBS_PORT_NUM) {
		errno = EINVAL;
		return -1;
	}
	c = to_dctx(context);
	if (index >= c->nb_gids) {
		errno = EINVAL;
		return -1;
	}
	if (c->gids[index].valid && c->gids[index].type == IBV_GID_TYPE_ROCE_V2)
		*type = VERBS_GID_TYPE_SYSFS_ROCE_V2;
	else
		*type = VERBS_GID_TYPE_SYSFS_IB_ROCE_V1;
	return 0;
}

/* ibv_query_pkey(3): 0, or -1 with errno. One entry: the default P_Key. */
VERBS_EXPORT int
ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
	if (context == NULL || pkey == NULL || port_num != VERBS_PORT_NUM || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*pkey = htobe16(DROCE_PKEY_DEFAULT);
	return 0;
}

/*
 * ibv_get_pkey_index(3): the index, or -1 with errno. The membership bit (bit 15) is not
 * part of the match: the table holds the full-member default P_Key.
 */
VERBS_EXPORT int
ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	if (context == NULL || port_num != VERBS_PORT_NUM) {
		errno = EINVAL;
		return -1;
	}
	if ((be16toh(pkey) & DROCE_PKEY_BASE_MASK) !=
	    (DROCE_PKEY_DEFAULT & DROCE_PKEY_BASE_MASK)) {
		errno = ENOENT;
		return -1;
	}
	return 0;
}
