/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * The control protocol's framing: one message per sendmsg/recvmsg on a SOCK_SEQPACKET
 * socket, descriptors as SCM_RIGHTS. Shared by libdroce, droce-ctl and droced.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "droce_shm_proto.h"

int
droce_proto_send(int sock, const void *msg, size_t len, const int *fds, unsigned int nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * DROCE_PROTO_MAX_FDS)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = (void *)(uintptr_t)msg, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (nfds > DROCE_PROTO_MAX_FDS)
		return -EINVAL;
	if (nfds > 0) {
		struct cmsghdr *c;

		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	do {
		/* MSG_NOSIGNAL: a dead peer is an error to report, not a SIGPIPE. */
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EMSGSIZE;
}

ssize_t
droce_proto_recv(int sock, void *msg, size_t len, int *fds, unsigned int max_fds,
		 unsigned int *nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * DROCE_PROTO_MAX_FDS)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = msg, .iov_len = len };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
	};
	struct cmsghdr *c;
	unsigned int kept = 0;
	int truncated = 0;
	ssize_t n;

	*nfds = 0;
	do {
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		truncated = 1;
	for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c)) {
		unsigned int i, cnt;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		cnt = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < cnt; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (!truncated && kept < max_fds && fds != NULL)
				fds[kept++] = fd;
			else {
				close(fd);
				truncated = 1;
			}
		}
	}
	if (truncated) {
		while (kept > 0)
			close(fds[--kept]);
		return -EMSGSIZE;
	}
	*nfds = kept;
	return n;
}

static const char *const op_names[DROCE_PROTO_OP_MAX] = {
	[DROCE_PROTO_OP_QUERY_PORTS] = "QUERY_PORTS",
	[DROCE_PROTO_OP_STATUS] = "STATUS",
	[DROCE_PROTO_OP_HELLO] = "HELLO",
	[DROCE_PROTO_OP_ALLOC_PD] = "ALLOC_PD",
	[DROCE_PROTO_OP_DEALLOC_PD] = "DEALLOC_PD",
	[DROCE_PROTO_OP_REG_MR] = "REG_MR",
	[DROCE_PROTO_OP_DEREG_MR] = "DEREG_MR",
	[DROCE_PROTO_OP_CREATE_CQ] = "CREATE_CQ",
	[DROCE_PROTO_OP_DESTROY_CQ] = "DESTROY_CQ",
	[DROCE_PROTO_OP_CREATE_SRQ] = "CREATE_SRQ",
	[DROCE_PROTO_OP_MODIFY_SRQ] = "MODIFY_SRQ",
	[DROCE_PROTO_OP_QUERY_SRQ] = "QUERY_SRQ",
	[DROCE_PROTO_OP_DESTROY_SRQ] = "DESTROY_SRQ",
	[DROCE_PROTO_OP_CREATE_QP] = "CREATE_QP",
	[DROCE_PROTO_OP_MODIFY_QP] = "MODIFY_QP",
	[DROCE_PROTO_OP_QUERY_QP] = "QUERY_QP",
	[DROCE_PROTO_OP_DESTROY_QP] = "DESTROY_QP",
	[DROCE_PROTO_OP_CREATE_AH] = "CREATE_AH",
	[DROCE_PROTO_OP_DESTROY_AH] = "DESTROY_AH",
	[DROCE_PROTO_OP_CM_OPEN] = "CM_OPEN",
	[DROCE_PROTO_OP_CM_CREATE_ID] = "CM_CREATE_ID",
	[DROCE_PROTO_OP_CM_DESTROY_ID] = "CM_DESTROY_ID",
	[DROCE_PROTO_OP_CM_BIND] = "CM_BIND",
	[DROCE_PROTO_OP_CM_RESOLVE_ADDR] = "CM_RESOLVE_ADDR",
	[DROCE_PROTO_OP_CM_RESOLVE_ROUTE] = "CM_RESOLVE_ROUTE",
	[DROCE_PROTO_OP_CM_QUERY] = "CM_QUERY",
	[DROCE_PROTO_OP_CM_LISTEN] = "CM_LISTEN",
	[DROCE_PROTO_OP_CM_CONNECT] = "CM_CONNECT",
	[DROCE_PROTO_OP_CM_ACCEPT] = "CM_ACCEPT",
	[DROCE_PROTO_OP_CM_ESTABLISH] = "CM_ESTABLISH",
	[DROCE_PROTO_OP_CM_REJECT] = "CM_REJECT",
	[DROCE_PROTO_OP_CM_DISCONNECT] = "CM_DISCONNECT",
	[DROCE_PROTO_OP_CM_INIT_QP_ATTR] = "CM_INIT_QP_ATTR",
	[DROCE_PROTO_OP_CM_SET_OPTION] = "CM_SET_OPTION",
	[DROCE_PROTO_OP_CM_MIGRATE] = "CM_MIGRATE",
	[DROCE_PROTO_OP_CM_GET_EVENT] = "CM_GET_EVENT",
	[DROCE_PROTO_OP_CM_NOTIFY] = "CM_NOTIFY",
	[DROCE_PROTO_OP_QUERY_QPS] = "QUERY_QPS",
	[DROCE_PROTO_OP_REREG_MR] = "REREG_MR",
	[DROCE_PROTO_OP_RESIZE_CQ] = "RESIZE_CQ",
	[DROCE_PROTO_OP_ALLOC_MW] = "ALLOC_MW",
	[DROCE_PROTO_OP_DEALLOC_MW] = "DEALLOC_MW",
	[DROCE_PROTO_OP_OPEN_XRCD] = "OPEN_XRCD",
	[DROCE_PROTO_OP_CLOSE_XRCD] = "CLOSE_XRCD",
	[DROCE_PROTO_OP_ATTACH_MCAST] = "ATTACH_MCAST",
	[DROCE_PROTO_OP_DETACH_MCAST] = "DETACH_MCAST",
	[DROCE_PROTO_OP_CM_JOIN_MCAST] = "CM_JOIN_MCAST",
	[DROCE_PROTO_OP_CM_LEAVE_MCAST] = "CM_LEAVE_MCAST",
	[DROCE_PROTO_OP_QUERY_PORT_DETAIL] = "QUERY_PORT_DETAIL",
	[DROCE_PROTO_OP_QUERY_VIEW] = "QUERY_VIEW",
	[DROCE_PROTO_OP_CAPTURE_START] = "CAPTURE_START",
	[DROCE_PROTO_OP_CAPTURE_STATUS] = "CAPTURE_STATUS",
	[DROCE_PROTO_OP_CAPTURE_STOP] = "CAPTURE_STOP",
};

const char *
droce_proto_socket_path(void)
{
	const char *p = getenv(DROCE_PROTO_SOCKET_ENV);

	return p != NULL && p[0] != '\0' ? p : DROCE_PROTO_SOCKET_DEFAULT;
}

int
droce_proto_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s, err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	while (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno == EINTR)
			continue;
		err = errno;
		close(s);
		return -err;
	}
	return s;
}

const char *
droce_proto_op_name(uint32_t op)
{
	return op < DROCE_PROTO_OP_MAX && op_names[op] != NULL ? op_names[op] : "UNKNOWN";
}

static const char *const cm_id_state_names[DROCE_PROTO_CM_ID_STATES] = {
#define CM_ID_STATE_NAME(name) [DROCE_PROTO_CM_ID_##name] = #name,
	DROCE_PROTO_CM_ID_STATE_LIST(CM_ID_STATE_NAME)
#undef CM_ID_STATE_NAME
};

const char *
droce_proto_cm_id_state_name(uint32_t state)
{
	return state < DROCE_PROTO_CM_ID_STATES ? cm_id_state_names[state] : "UNKNOWN";
}
