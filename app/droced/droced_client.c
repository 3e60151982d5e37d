/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * One client connection's shared pieces, below its objects (layers.txt): the connection
 * itself, handle tables, notification pipes, the region's addresses, the event ring, and a
 * request parked while its neighbour resolves. The socket is untrusted input: every
 * handle is looked up in this client's own tables (so it can never name another client's
 * object), and a table answers -ENOMEM at the client's limit as rdma-core does.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <unistd.h>

#include <rte_common.h>

#include <droce_net.h>

#include "droced_loc.h"

#define TABLE_MIN_CAP	16

/* ---- The connection ---- */

struct droced_client *
droced_client_new(struct droced *d, int fd)
{
	struct droced_client *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->d = d;
	c->id = ++d->clients_accepted;
	c->p.kind = DROCED_FD_CLIENT;
	c->fd = fd;
	c->region_fd = -1;
	c->async_efd = c->async_rfd = -1;
	return c;
}

void
droced_client_identify(struct droced_client *c, pid_t pid, uid_t uid)
{
	char path[64];
	ssize_t n = -1, i;
	int fd;

	c->pid = pid;
	c->uid = uid;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, c->comm, sizeof(c->comm) - 1);
		close(fd);
	}
	if (n <= 0) {
		snprintf(c->comm, sizeof(c->comm), "?");
		return;
	}
	/*
	 * Its arguments, NUL-separated there, with spaces here; a trailing NUL dropped; bytes
	 * outside printable ASCII as '?', so that JSON and Prometheus labels stay valid UTF-8.
	 */
	while (n > 0 && c->comm[n - 1] == '\0')
		n--;
	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)c->comm[i];

		if (ch == '\0')
			c->comm[i] = ' ';
		else if (ch < 0x20 || ch > 0x7e)
			c->comm[i] = '?';
	}
	c->comm[n] = '\0';
}

int
droced_limit(struct droced_call *call, uint32_t limit, int rc)
{
	call->resp->limit = limit;
	return rc;
}

void
droced_client_answer(struct droced_client *c, void *answer, size_t len)
{
	free(c->answer);
	c->answer = answer;
	c->answer_len = len;
}

/* ---- Notification pipes (droce_shm_proto.h) ---- */

/*
 * A notification on the write end of a notification pipe (droce_shm_proto.h): non-blocking
 * and droced's alone, so this never blocks. EAGAIN (the pipe is full: the application has
 * notifications to read already) and EPIPE (it closed its end) are fine.
 */
void
droced_notify_kick(int wfd)
{
	uint8_t one = 1;
	ssize_t n;

	if (wfd < 0)
		return;
	n = write(wfd, &one, sizeof(one));
	RTE_SET_USED(n);
}

/*
 * A notification pipe: *rfd for the application, *wfd (non-blocking) for droced or an
 * engine. 0 or -errno.
 */
int
droced_notify_pipe(int *rfd, int *wfd)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC) != 0)
		return -errno;
	/* O_NONBLOCK is per file description: the write end's alone, never the reader's. */
	if (fcntl(p[1], F_SETFL, O_NONBLOCK) != 0) {
		int rc = -errno;

		close(p[0]);
		close(p[1]);
		return rc;
	}
	*rfd = p[0];
	*wfd = p[1];
	return 0;
}

void
droced_notify_pipe_close(int rfd, int wfd)
{
	if (rfd >= 0)
		close(rfd);
	if (wfd >= 0)
		close(wfd);
}
/* ---- Handle tables: index = handle, grown on demand up to the client's limit ---- */

void
droced_table_init(struct droced_table *t, uint32_t max, bool lowest_first)
{
	memset(t, 0, sizeof(*t));
	t->max = max;
	t->lowest_first = lowest_first;
}

int
droced_table_add(struct droced_table *t, void *obj, uint32_t *handle)
{
	uint32_t i;

	if (t->nb >= t->max)
		return -ENOMEM;
	if (t->nb == t->cap) {
		uint32_t cap = RTE_MIN(RTE_MAX(t->cap * 2, (uint32_t)TABLE_MIN_CAP), t->max);
		void **o = realloc(t->obj, sizeof(*o) * cap);

		if (o == NULL)
			return -ENOMEM;
		memset(o + t->cap, 0, sizeof(*o) * (cap - t->cap));
		t->obj = o;
		t->hint = t->cap;
		t->cap = cap;
	}
	/* hint: past the last handle given, or (lowest_first) at most the lowest free one */
	for (i = t->hint % t->cap; t->obj[i] != NULL; i = (i + 1) % t->cap)
		;
	t->obj[i] = obj;
	t->nb++;
	t->hint = i + 1;
	*handle = i;
	return 0;
}

void *
droced_table_get(const struct droced_table *t, uint32_t handle)
{
	return handle < t->cap ? t->obj[handle] : NULL;
}

void *
droced_table_next(const struct droced_table *t, uint32_t *handle)
{
	uint32_t h;

	for (h = *handle; h < t->cap; h++) {
		if (t->obj[h] != NULL) {
			*handle = h;
			return t->obj[h];
		}
	}
	return NULL;
}

void
droced_table_del(struct droced_table *t, uint32_t handle)
{
	t->obj[handle] = NULL;
	t->nb--;
	if (t->lowest_first && handle < t->hint)
		t->hint = handle;
}

void
droced_table_free(struct droced_table *t)
{
	free(t->obj);
	t->obj = NULL;
	t->cap = t->nb = 0;
}

uint32_t
droced_pow2_at_least(uint32_t n)
{
	return rte_align32pow2(RTE_MAX(n, 1u));
}

void *
droced_region_ptr(const struct droced_client *c, int64_t off)
{
	return c->region + off;
}
/* ---- Events ---- */

void
droced_client_event_ring_put(struct droced_client *c, uint32_t type, uint32_t handle)
{
	struct droce_shm_event_ring *r = c->evring;
	uint32_t cons = __atomic_load_n(&r->ring.cons, __ATOMIC_ACQUIRE);

	/* cons is the application's; a lying one only loses or overwrites its own events. */
	if (c->ev_prod - cons >= DROCE_SHM_EVENT_RING) {
		r->lost++;
		return;
	}
	r->ev[c->ev_prod & (DROCE_SHM_EVENT_RING - 1)] = (struct droce_shm_event){
		.type = type, .handle = handle,
	};
	c->ev_prod++;
	__atomic_store_n(&r->ring.prod, c->ev_prod, __ATOMIC_RELEASE);
}

void
droced_client_event_put(struct droced_client *c, uint32_t type, uint32_t handle)
{
	if (c->evring == NULL)
		return;
	droced_client_event_ring_put(c, type, handle);
	droced_notify_kick(c->async_efd);
}


/* ---- Requests waiting for ARP ---- */

int
droced_client_park(struct droced_client *c, const struct droce_proto_req *req, const uint8_t dgid[16])
{
	c->parked = true;
	c->park_done = false;
	c->park_status = 0;
	if (droce_net_gid_to_ipv4(dgid, &c->park_ip) != 0)
		c->park_ip = 0;
	c->park_deadline_ms = droced_now_ms() + DROCED_PARK_TIMEOUT_MS;
	c->park_req = *req;
	return 1;
}

void
droced_client_resolved(struct droced_port *p, uint32_t ip, int status)
{
	struct droced_client *c;

	TAILQ_FOREACH(c, &p->d->clients, next) {
		if (c->parked && !c->park_done && c->port == p && c->park_ip == ip) {
			c->park_done = true;
			c->park_status = status;
		}
	}
}
