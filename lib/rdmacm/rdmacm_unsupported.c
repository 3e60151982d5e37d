/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * What librdmacm.so.1 exports and droce does not do, so that programs linked against
 * rdma-core's library still load (they bind every import at start-up) and fail cleanly
 * when they call it:
 *
 * - rsockets (rsocket, rbind, ... riowrite): rdma-core implements the socket emulation in
 *   librdmacm itself over rdma_cm and verbs, with its own wire protocol and preloaded
 *   interposition (librspreload). droce does not carry it: every r* call fails with
 *   ENOSYS, and rsocket() first, so no program gets as far as the others.
 * - ECE (Enhanced Connection Establishment): droce negotiates no vendor options. The
 *   argument checks are rdma-core's (EINVAL); rdma_set_local_ece then takes only
 *   options 0 (EOPNOTSUPP otherwise), rdma_get_remote_ece reports zeros, and
 *   rdma_reject_ece (rdmacm_id.c) rejects with IBTA reason 35 as rdma-core does.
 */

#include <errno.h>
#include <string.h>

#include <rdma/rsocket.h>

#include "rdmacm_loc.h"

RCM_EXPORT int
rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	if (id == NULL || id->qp != NULL || ece == NULL || ece->vendor_id == 0 ||
	    ece->comp_mask != 0)
		return rcm_err(EINVAL);
	return ece->options == 0 ? 0 : rcm_err(EOPNOTSUPP);
}

RCM_EXPORT int
rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	if (id == NULL || id->qp != NULL || ece == NULL)
		return rcm_err(EINVAL);
	memset(ece, 0, sizeof(*ece));
	return 0;
}

/* ---- rsockets: ENOSYS ---- */

RCM_EXPORT int
rsocket(int domain, int type, int protocol)
{
	(void)domain;
	(void)type;
	(void)protocol;
	return rcm_err(ENOSYS);
}

RCM_EXPORT int
rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	(void)socket;
	(void)addr;
	(void)addrlen;
	return rcm_err(ENOSYS);
}

RCM_EXPORT int
rlisten(int socket, int backlog)
{
	(void)socket;
	(void)backlog;
	return rcm_err(ENOSYS);
}

RCM_EXPORT int
raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)socket;
	(void)addr;
	(void)addrlen;
	return rcm_err(ENOSYS);
}

RCM_EXPORT int
rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	(void)socket;
	(void)addr;
	(void)addrlen;
	return rcm_err(ENOSYS);
}

RCM_EXPORT int
rshutdown(int socket, int how)
{
	(void)socket;
	(void)how;
	return rcm_err(ENOSYS);
}

RCM_EXPORT int
rclose(int socket)
{
	(void)socket;
	return rcm_err(ENOSYS);
}

RCM_EXPORT ssize_t
rrecv(int socket, void *buf, size_t len, int flags)
{
	(void)socket;
	(void)buf;
	(void)len;
	(void)flags;
	return rcm_err(ENOSYS);
}

RCM_EXPORT ssize_t
rrecvfrom(int socket, void *buf, size_t len, int flags, struct sockaddr *src_addr,
	  socklen_t *addrlen)
{
	(void)socket;
	(void)buf;
	(void)len;
	(void)flags;
	(void)src_addr;
	(void)addrlen;
	return rcm_err(ENOSYS);
}

RCM_EXPORT ssize_t
rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	(void)socket;
	(void)msg;
	(void)flags;
	return rcm_err(ENOSYS);
}

RCM_EXPORT ssize_t
rsend(int socket, const void *buf, size_t len, int flags)
{
	(void)socket;
	(void)buf;
	(void)len;
	(void)flags;
	return rcm_err(ENOSYS);
}

RCM_EXPORT ssize_t
rsendto(int socket, const void *buf, size_t len, int flags, const struct sockaddr *dest_addr,
	socklen_t addrlen)
{
	(void)socket;
	(void)buf;
	(void)len;
	(void)flags;
	(void)dest_addr;
	(void)addrlen;
	return rcm_err(ENOSYS);
}

RCM_EXPORT ssize_t
rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	(void)socket;
	(void)msg;
	(void)flags;
	return rcm_err(ENOSYS);
}

RCM_EXPORT ssize_t
rread(int socket, void *buf, size_t count)
{
	(void)socket;
	(void)buf;
	(void)count;
	return rcm_err(ENOSYS);
}

RCM_EXPORT ssize_t
rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	(void)socket;
	(void)iov;
	(void)iovcnt;
	return rcm_err(ENOSYS);
}

RCM_EXPORT ssize_t
rwrite(int socket, const void *buf, size_t count)
{
	(void)socket;
	(void)buf;
	(void)count;
	return rcm_err(ENOSYS);
}

RCM_EXPORT ssize_t
rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	(void)socket;
	(void)iov;
	(void)iovcnt;
	return rcm_err(ENOSYS);
}

RCM_EXPORT int
rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	(void)fds;
	(void)nfds;
	(void)timeout;
	return rcm_err(ENOSYS);
}

RCM_EXPORT int
rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
	struct timeval *timeout)
{
	(void)nfds;
	(void)readfds;
	(void)writefds;
	(void)exceptfds;
	(void)timeout;
	return rcm_err(ENOSYS);
}

RCM_EXPORT int
rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)socket;
	(void)addr;
	(void)addrlen;
	return rcm_err(ENOSYS);
}

RCM_EXPORT int
rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)socket;
	(void)addr;
	(void)addrlen;
	return rcm_err(ENOSYS);
}

RCM_EXPORT int
rsetsockopt(int socket, int level, int optname, const void *optval, socklen_t optlen)
{
	(void)socket;
	(void)level;
	(void)optname;
	(void)optval;
	(void)optlen;
	return rcm_err(ENOSYS);
}

RCM_EXPORT int
rgetsockopt(int socket, int level, int optname, void *optval, socklen_t *optlen)
{
	(void)socket;
	(void)level;
	(void)optname;
	(void)optval;
	(void)optlen;
	return rcm_err(ENOSYS);
}

RCM_EXPORT int
rfcntl(int socket, int cmd, ...)
{
	(void)socket;
	(void)cmd;
	return rcm_err(ENOSYS);
}

RCM_EXPORT off_t
riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset)
{
	(void)socket;
	(void)buf;
	(void)len;
	(void)prot;
	(void)flags;
	(void)offset;
	return rcm_err(ENOSYS);
}

RCM_EXPORT int
riounmap(int socket, void *buf, size_t len)
{
	(void)socket;
	(void)buf;
	(void)len;
	return rcm_err(ENOSYS);
}

/* rdma-core's riowrite returns a size_t: an error is (size_t)-1 with errno, as there. */
RCM_EXPORT size_t
riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
	(void)socket;
	(void)buf;
	(void)count;
	(void)offset;
	(void)flags;
	errno = ENOSYS;
	return (size_t)-1;
}
