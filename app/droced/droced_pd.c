/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * The protection objects of a client: PDs, XRC domains (droced-wide, shared by the
 * contexts that open one file) and address handles. Everything else counts its users
 * here: a PD or an XRC domain still in use answers -EBUSY, as the kernel's do.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/stat.h>

#include "droced_loc.h"

/* ---- PD ---- */

struct droced_pd *
droced_pd_get(const struct droced_client *c, uint32_t handle)
{
	return droced_table_get(&c->pds, handle);
}

int
droced_pd_alloc(struct droced_client *c, struct droced_call *call)
{
	struct droce_proto_resp *resp = call->resp;
	struct droced_pd *pd = calloc(1, sizeof(*pd));
	int rc;

	if (pd == NULL)
		return -ENOMEM;
	rc = droced_table_add(&c->pds, pd, &resp->obj.handle);
	if (rc != 0)
		free(pd);
	return rc;
}

int
droced_pd_dealloc(struct droced_client *c, struct droced_call *call)
{
	uint32_t handle = call->req->obj.handle;
	struct droced_pd *pd = droced_pd_get(c, handle);

	if (pd == NULL)
		return -EINVAL;
	if (pd->users != 0)
		return -EBUSY;
	droced_table_del(&c->pds, handle);
	free(pd);
	return 0;
}

/* ---- XRC domains ---- */

/*
 * An XRC domain (ibv_open_xrcd): droced-wide, one per file, shared by every context that
 * opens that file, as the kernel's are (the processes of an MPI job share their receive
 * queues through one); one opened without a file is its context's alone. Its id is what
 * the engines compare: an XRC target takes requests only for XRC SRQs of its domain.
 */
struct droced_xrcd {
	dev_t dev;
	ino_t ino;
	bool anon;
	uint32_t id;
	uint32_t refs;		/* opens, over all clients */
	LIST_ENTRY(droced_xrcd) next;
};

static LIST_HEAD(, droced_xrcd) droced_xrcds = LIST_HEAD_INITIALIZER(droced_xrcds);
static uint32_t droced_xrcd_next = 1;

static void
xrcd_put(struct droced_xrcd *x)
{
	if (--x->refs != 0)
		return;
	LIST_REMOVE(x, next);
	free(x);
}

uint32_t
droced_xrcd_id(const struct droced_xrcd_ref *ref)
{
	return ref->x->id;
}

struct droced_xrcd_ref *
droced_xrcd_get(struct droced_client *c, uint32_t handle)
{
	return droced_table_get(&c->xrcds, handle);
}

/*
 * ibv_open_xrcd(3): with a file, its domain, made with O_CREAT if there is none yet
 * (without: -EINVAL), refused with O_EXCL if there is (-EEXIST), as the kernel does;
 * without a file, a new domain.
 */
int
droced_xrcd_open(struct droced_client *c, struct droced_call *call)
{
	const struct droce_proto_req *req = call->req;
	const int *fds = call->fds;
	unsigned int nfds = call->nfds;
	struct droce_proto_resp *resp = call->resp;
	uint32_t oflags = req->open_xrcd.oflags;
	struct droced_xrcd_ref *ref;
	struct droced_xrcd *x = NULL;
	struct stat st;
	int rc;

	if (nfds > 1 || (oflags & ~(uint32_t)(O_CREAT | O_EXCL)))
		return -EINVAL;
	if (nfds == 1) {
		if (fstat(fds[0], &st) != 0)
			return -EINVAL;
		LIST_FOREACH(x, &droced_xrcds, next)
			if (!x->anon && x->dev == st.st_dev && x->ino == st.st_ino)
				break;
		if (x != NULL && (oflags & O_EXCL))
			return -EEXIST;
		if (x == NULL && !(oflags & O_CREAT))
			return -EINVAL;
	}
	ref = calloc(1, sizeof(*ref));
	if (ref == NULL)
		return -ENOMEM;
	if (x == NULL) {
		x = calloc(1, sizeof(*x));
		if (x == NULL) {
			free(ref);
			return -ENOMEM;
		}
		x->anon = nfds == 0;
		if (nfds == 1) {
			x->dev = st.st_dev;
			x->ino = st.st_ino;
		}
		x->id = droced_xrcd_next++;
		if (droced_xrcd_next == 0)
			droced_xrcd_next = 1;
		LIST_INSERT_HEAD(&droced_xrcds, x, next);
	}
	x->refs++;
	ref->x = x;
	rc = droced_table_add(&c->xrcds, ref, &resp->obj.handle);
	if (rc != 0) {
		xrcd_put(x);
		free(ref);
	}
	return rc;
}

int
droced_xrcd_close(struct droced_client *c, struct droced_call *call)
{
	uint32_t handle = call->req->obj.handle;
	struct droced_xrcd_ref *ref = droced_xrcd_get(c, handle);

	if (ref == NULL)
		return -EINVAL;
	if (ref->users != 0)
		return -EBUSY;
	xrcd_put(ref->x);
	droced_table_del(&c->xrcds, handle);
	free(ref);
	return 0;
}
/* ---- AH ---- */

int
droced_ah_create(struct droced_client *c, struct droced_call *call)
{
	const struct droce_proto_req *req = call->req;
	struct droce_proto_resp *resp = call->resp;
	struct droce_shm_ah_attr attr = req->create_ah.attr;
	struct droced_pd *pd = droced_pd_get(c, req->create_ah.pd);
	uint32_t ahn;
	int rc;

	if (pd == NULL || !attr.is_global)
		return -EINVAL;
	if (c->nb_ahs >= c->d->cfg.limits.max_ahs)
		return droced_limit(call, DROCE_PROTO_LIMIT_AHS, -ENOMEM);
	rc = droced_neigh_ensure(c->port, attr.dgid);
	if (rc == -EAGAIN)
		return droced_client_park(c, req, attr.dgid);
	if (rc != 0)
		return rc;
	droced_route_av(&attr);
	/* Any engine of the port builds the same headers: they share its MAC and GIDs. */
	rc = droce_engine_ah_create(c->dom, c->port->engines[0], req->create_ah.pd, &attr, &ahn);
	if (rc != 0)
		return rc;
	c->ah_pd[ahn] = req->create_ah.pd + 1;
	c->nb_ahs++;
	pd->users++;
	resp->obj.handle = ahn;
	return 0;
}

int
droced_ah_destroy(struct droced_client *c, struct droced_call *call)
{
	uint32_t handle = call->req->obj.handle;
	int rc;

	if (handle >= c->d->cfg.limits.max_ahs || c->ah_pd[handle] == 0)
		return -EINVAL;
	rc = droce_engine_ah_destroy(c->dom, handle);
	if (rc != 0)
		return rc;
	droced_pd_get(c, c->ah_pd[handle] - 1)->users--;
	c->ah_pd[handle] = 0;
	c->nb_ahs--;
	return 0;
}

/* At the client's end: its XRC domain opens and PDs (after every object on them). */
void
droced_pd_release_all(struct droced_client *c)
{
	uint32_t i;

	for (i = 0; i < c->xrcds.cap; i++) {
		struct droced_xrcd_ref *ref = c->xrcds.obj[i];

		if (ref != NULL) {
			xrcd_put(ref->x);
			free(ref);
		}
	}
	droced_table_free(&c->xrcds);
	for (i = 0; i < c->pds.cap; i++)
		free(c->pds.obj[i]);
	droced_table_free(&c->pds);
	free(c->ah_pd);
	c->ah_pd = NULL;
	c->nb_ahs = 0;
}
