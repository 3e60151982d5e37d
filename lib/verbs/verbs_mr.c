/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Memory regions. ibv_reg_mr makes the pages under the range reachable by droced
 * (verbs_pages.c: shared file mappings in place, private memory moved into memfds under
 * write protection) and passes the pieces to droced, which maps them one after another and
 * registers the bytes with the engine. The context keeps (lkey -> range, access) so that
 * ibv_post_send/recv can refuse a bad SGE before it reaches the ring (verbs_lkey_check,
 * read under key_lock by the posting thread).
 *
 * Every MR keeps its pieces: ibv_dereg_mr (and a re-registration's new translation)
 * releases them once droced has let go, and pages no MR holds any more become private
 * memory again.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "verbs_loc.h"
#include "verbs_pages.h"

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

/* Access bits droce implements: what droced is told. */
#define MR_ACCESS_SUPPORTED	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
				 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | \
				 IBV_ACCESS_MW_BIND | VERBS_ACCESS_FLUSH)
/* Accepted and ignored: HUGETLB (a hint about the backing pages). */
#define MR_ACCESS_IGNORED	IBV_ACCESS_HUGETLB
/* Known flags droce does not implement. */
#define MR_ACCESS_UNSUPPORTED	(IBV_ACCESS_ZERO_BASED | IBV_ACCESS_ON_DEMAND)

/* Every page this process moved for an MR, over all contexts. */
static struct verbs_pages mr_pages;
static pthread_once_t mr_pages_once = PTHREAD_ONCE_INIT;

static void
mr_pages_init(void)
{
	verbs_pages_init(&mr_pages);
}

/* Closes the fds of n pieces and gives their pages back. */
static void
hold_drop(struct verbs_piece *pieces, unsigned int n)
{
	verbs_pieces_close(pieces, n);
	verbs_pages_release(&mr_pages, pieces, n);
}

/* Gives back what mr holds of the application's pages. */
static void
hold_release(struct verbs_dmr *mr)
{
	if (mr->nb_pieces > 0)
		verbs_pages_release(&mr_pages, mr->pieces, mr->nb_pieces);
	free(mr->pieces);
	mr->pieces = NULL;
	mr->nb_pieces = 0;
}

/*
 * Shares [addr, addr + length) into pieces (up to DROCE_PROTO_MR_MAX_PIECES, their fds
 * for the request); *first_off as verbs_pages_share's; *keep: room for the MR to keep them
 * once the request is done. An errno, and nothing held.
 */
static int
hold_take(void *addr, size_t length, struct verbs_piece *pieces, unsigned int *n,
	  uint64_t *first_off, struct verbs_piece **keep)
{
	int ret;

	pthread_once(&mr_pages_once, mr_pages_init);
	ret = verbs_pages_share(&mr_pages, addr, length, pieces, DROCE_PROTO_MR_MAX_PIECES, n,
				first_off);
	if (ret != 0)
		return ret == -E2BIG ? ENOMEM : -ret;
	*keep = malloc(*n * sizeof(**keep));
	if (*keep == NULL) {
		hold_drop(pieces, *n);
		return ENOMEM;
	}
	return 0;
}


bool
verbs_lkey_check(void *arg, uint32_t lkey, uint64_t addr, uint64_t len, unsigned int access)
{
	struct verbs_dctx *c = arg;
	uint32_t idx = lkey >> 8;
	bool ok = false;

	pthread_rwlock_rdlock(&c->key_lock);
	if (idx < c->nb_keys) {
		const struct verbs_dkey *k = &c->keys[idx];

		ok = k->live && k->lkey == lkey && addr >= k->iova && len <= k->length &&
		     addr - k->iova <= k->length - len && (access & ~k->access) == 0;
	}
	pthread_rwlock_unlock(&c->key_lock);
	return ok;
}

static int
key_insert(struct verbs_dctx *c, uint32_t lkey, uint64_t iova, uint64_t length,
	   uint32_t access)
{
	uint32_t idx = lkey >> 8;
	int ret = 0;

	pthread_rwlock_wrlock(&c->key_lock);
	if (idx >= c->nb_keys) {
		uint32_t n = c->nb_keys != 0 ? c->nb_keys : 64;
		struct verbs_dkey *v;

		while (n <= idx)
			n *= 2;
		v = realloc(c->keys, n * sizeof(*v));
		if (v == NULL) {
			ret = ENOMEM;
			goto out;
		}
		memset(v + c->nb_keys, 0, (n - c->nb_keys) * sizeof(*v));
		c->keys = v;
		c->nb_keys = n;
	}
	c->keys[idx] = (struct verbs_dkey){ .lkey = lkey, .access = access, .iova = iova,
					.length = length, .live = true };
out:
	pthread_rwlock_unlock(&c->key_lock);
	return ret;
}

static void
key_remove(struct verbs_dctx *c, uint32_t lkey)
{
	uint32_t idx = lkey >> 8;

	pthread_rwlock_wrlock(&c->key_lock);
	if (idx < c->nb_keys && c->keys[idx].lkey == lkey)
		c->keys[idx].live = false;
	pthread_rwlock_unlock(&c->key_lock);
}

/*
 * The access checks of ibv_reg_mr(3): unknown bits -> EINVAL; remote write or atomic
 * without local write -> EINVAL (the man page: "If IBV_ACCESS_REMOTE_WRITE or
 * IBV_ACCESS_REMOTE_ATOMIC is set, then IBV_ACCESS_LOCAL_WRITE must be set too");
 * optional bits (relaxed ordering and the rest of IBV_ACCESS_OPTIONAL_RANGE) are dropped.
 */
static int
access_check(unsigned int access, uint32_t *out)
{
	access &= ~(unsigned int)IBV_ACCESS_OPTIONAL_RANGE;
	if (access & ~(unsigned int)(MR_ACCESS_SUPPORTED | MR_ACCESS_IGNORED |
				     MR_ACCESS_UNSUPPORTED))
		return EINVAL;
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return EINVAL;
	if (access & MR_ACCESS_UNSUPPORTED)
		return EOPNOTSUPP;
	*out = access & MR_ACCESS_SUPPORTED;
	return 0;
}

/*
 * A share's pieces as a request carries them: our memfds beside the message, the
 * application's shared mappings named by address (DROCE_PROTO_PIECE_MAPPING). The number
 * of fds.
 */
static unsigned int
pieces_out(const struct verbs_piece *pieces, unsigned int n, struct droce_proto_mr_piece *out,
	   int *fds)
{
	unsigned int i, nfds = 0;

	for (i = 0; i < n; i++) {
		out[i].off = pieces[i].off;
		out[i].len = pieces[i].len;
		out[i].addr = pieces[i].addr;
		out[i].flags = pieces[i].fd < 0 ? DROCE_PROTO_PIECE_MAPPING : 0;
		if (pieces[i].fd >= 0)
			fds[nfds++] = pieces[i].fd;
	}
	return nfds;
}

/*
 * Registers [addr, addr + length) at iova with access acc (access_check's) in pd: droced
 * makes the MR, the context learns its lkey; mr's handle, keys, pd, addr, length and what
 * it holds of the pages are set. 0 or an errno, and nothing changed.
 */
static int
mr_register(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, uint32_t acc,
	    struct verbs_dmr *mr)
{
	struct verbs_piece pieces[DROCE_PROTO_MR_MAX_PIECES];
	int fds[DROCE_PROTO_MR_MAX_PIECES];
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_REG_MR };
	struct droce_proto_resp resp;
	struct verbs_dctx *c = to_dctx(pd->context);
	struct verbs_piece *keep = NULL;
	unsigned int n = 0, nfds;
	uint64_t first_off = 0;
	int ret;

	/* A zero-length MR maps no page: droce has nothing to share (kernel umem: EINVAL). */
	if (length == 0 || length > c->limits.max_mr_size || iova + length < iova)
		return EINVAL;
	ret = hold_take(addr, length, pieces, &n, &first_off, &keep);
	if (ret != 0)
		return ret;
	req.reg_mr.pd = pd->handle;
	req.reg_mr.access = acc;
	req.reg_mr.iova = iova;
	req.reg_mr.length = length;
	req.reg_mr.first_off = first_off;
	req.reg_mr.nb_pieces = n;
	nfds = pieces_out(pieces, n, req.reg_mr.pieces, fds);
	ret = verbs_request(c, &req, fds, nfds, &resp);
	if (ret == 0) {
		ret = key_insert(c, resp.obj.lkey, iova, length, acc);
		if (ret != 0) {
			struct droce_proto_req d = { .op = DROCE_PROTO_OP_DEREG_MR };

			d.obj.handle = resp.obj.handle;
			verbs_request(c, &d, NULL, 0, &resp);
		}
	}
	if (ret != 0) {
		hold_drop(pieces, n);
		free(keep);
		return ret;
	}
	verbs_pieces_close(pieces, n);
	memcpy(keep, pieces, n * sizeof(*keep));
	mr->pieces = keep;
	mr->nb_pieces = n;
	mr->ibmr.context = pd->context;
	mr->ibmr.pd = pd;
	mr->ibmr.addr = addr;
	mr->ibmr.length = length;
	mr->ibmr.handle = resp.obj.handle;
	mr->ibmr.lkey = resp.obj.lkey;
	mr->ibmr.rkey = resp.obj.rkey;
	return 0;
}

/* droced's MR handle gone, the context's lkey with it, then the pages: 0 or an errno. */
static int
mr_deregister(struct verbs_dctx *c, struct verbs_dmr *mr)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_DEREG_MR };
	struct droce_proto_resp resp;
	int ret;

	req.obj.handle = mr->ibmr.handle;
	ret = verbs_request(c, &req, NULL, 0, &resp);
	if (ret != 0)
		return ret;
	key_remove(c, mr->ibmr.lkey);
	/* droced has unmapped them: the pages can become private again. */
	hold_release(mr);
	return 0;
}

VERBS_EXPORT struct ibv_mr *
ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
		 unsigned int access)
{
	struct verbs_dmr *mr;
	uint32_t acc = 0;
	int ret;

	if (pd == NULL)
		return verbs_err_null(EINVAL);
	ret = access_check(access, &acc);
	if (ret != 0)
		return verbs_err_null(ret);
	mr = calloc(1, sizeof(*mr));
	if (mr == NULL)
		return verbs_err_null(ENOMEM);
	ret = mr_register(pd, addr, length, iova, acc, mr);
	if (ret != 0) {
		free(mr);
		return verbs_err_null(ret);
	}
	return &mr->ibmr;
}

VERBS_EXPORT struct ibv_mr *
ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

VERBS_EXPORT struct ibv_mr *
ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned int)access);
}

/* dma-buf needs a device that does DMA: EOPNOTSUPP. */
VERBS_EXPORT struct ibv_mr *
ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova, int fd,
		  int access)
{
	(void)pd; (void)offset; (void)length; (void)iova; (void)fd; (void)access;
	return verbs_err_null(EOPNOTSUPP);
}

/* The iova and access of lkey as registered (the context's key table). */
static bool
key_lookup(struct verbs_dctx *c, uint32_t lkey, uint64_t *iova, uint32_t *access)
{
	uint32_t idx = lkey >> 8;
	bool ok = false;

	pthread_rwlock_rdlock(&c->key_lock);
	if (idx < c->nb_keys && c->keys[idx].live && c->keys[idx].lkey == lkey) {
		*iova = c->keys[idx].iova;
		*access = c->keys[idx].access;
		ok = true;
	}
	pthread_rwlock_unlock(&c->key_lock);
	return ok;
}

#define REREG_FLAGS	(IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD | \
			 IBV_REREG_MR_CHANGE_ACCESS)
_Static_assert(IBV_REREG_MR_CHANGE_TRANSLATION == DROCE_PROTO_REREG_TRANSLATION &&
	       IBV_REREG_MR_CHANGE_PD == DROCE_PROTO_REREG_PD &&
	       IBV_REREG_MR_CHANGE_ACCESS == DROCE_PROTO_REREG_ACCESS, "rereg flags");

/*
 * ibv_rereg_mr(3): droced changes the MR in place (REREG_MR), keys kept, as NICs and
 * soft-RoCE do and as rdma-core's tests expect. A new translation is shared as ibv_reg_mr
 * shares one and registered at iova = addr, as the kernel does. The input checks are
 * libibverbs' own. Failures leave the MR as it was: input errors IBV_REREG_MR_ERR_INPUT,
 * droced's refusals IBV_REREG_MR_ERR_CMD (the man page's codes), errno set.
 */
VERBS_EXPORT int
ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr, size_t length,
	     int access)
{
	struct verbs_piece pieces[DROCE_PROTO_MR_MAX_PIECES];
	int fds[DROCE_PROTO_MR_MAX_PIECES];
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_REREG_MR };
	struct droce_proto_resp resp;
	struct verbs_piece *keep = NULL;
	struct verbs_dctx *c;
	unsigned int n = 0, nfds = 0;
	uint64_t iova, first_off = 0;
	uint32_t acc;
	int ret;

	if (mr == NULL || mr->context == NULL || flags == 0 || (flags & ~REREG_FLAGS) ||
	    ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (addr == NULL || length == 0)) ||
	    (access != 0 && !(flags & IBV_REREG_MR_CHANGE_ACCESS)) ||
	    ((flags & IBV_REREG_MR_CHANGE_PD) &&
	     (pd == NULL || pd->context != mr->context))) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	c = to_dctx(mr->context);
	if (!key_lookup(c, mr->lkey, &iova, &acc)) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS) {
		ret = access_check((unsigned int)access, &acc);
		if (ret != 0) {
			errno = ret;
			return IBV_REREG_MR_ERR_INPUT;
		}
	}
	req.rereg_mr.handle = mr->handle;
	req.rereg_mr.flags = (uint32_t)flags;
	req.rereg_mr.pd = flags & IBV_REREG_MR_CHANGE_PD ? pd->handle : mr->pd->handle;
	req.rereg_mr.access = acc;
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		if (length > c->limits.max_mr_size) {
			errno = EINVAL;
			return IBV_REREG_MR_ERR_INPUT;
		}
		ret = hold_take(addr, length, pieces, &n, &first_off, &keep);
		if (ret != 0) {
			errno = ret;
			return IBV_REREG_MR_ERR_INPUT;
		}
		iova = (uintptr_t)addr;
		req.rereg_mr.iova = iova;
		req.rereg_mr.length = length;
		req.rereg_mr.first_off = first_off;
		req.rereg_mr.nb_pieces = n;
		nfds = pieces_out(pieces, n, req.rereg_mr.pieces, fds);
	} else {
		addr = mr->addr;
		length = mr->length;
	}
	ret = verbs_request(c, &req, fds, nfds, &resp);
	if (ret != 0) {
		hold_drop(pieces, n);
		free(keep);
		errno = ret;
		return IBV_REREG_MR_ERR_CMD;
	}
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		struct verbs_dmr *dmr = verbs_container_of(mr, struct verbs_dmr, ibmr);

		/* droced maps the new pieces only now: the old pages can go. */
		hold_release(dmr);
		verbs_pieces_close(pieces, n);
		memcpy(keep, pieces, n * sizeof(*keep));
		dmr->pieces = keep;
		dmr->nb_pieces = n;
	}
	/* the same lkey: its entry rewritten with what the MR is now */
	ret = key_insert(c, mr->lkey, iova, length, acc);
	if (ret != 0) {
		errno = ret;
		return IBV_REREG_MR_ERR_CMD;
	}
	if (flags & IBV_REREG_MR_CHANGE_PD)
		mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	return 0;
}

VERBS_EXPORT int
ibv_dereg_mr(struct ibv_mr *mr)
{
	int ret;

	if (mr == NULL)
		return verbs_err(EINVAL);
	ret = mr_deregister(to_dctx(mr->context), verbs_container_of(mr, struct verbs_dmr, ibmr));
	if (ret != 0)
		return verbs_err(ret);
	free(verbs_container_of(mr, struct verbs_dmr, ibmr));
	return 0;
}
