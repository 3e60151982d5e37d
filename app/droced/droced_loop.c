/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * The control thread: one epoll loop over the listening SOCK_SEQPACKET socket, the client
 * connections, a signalfd (SIGINT, SIGTERM) and a 1 ms timerfd whose tick drives the slow
 * path (ARP, ICMP, lib/net timers), finishes requests that waited for ARP, and forwards
 * engine events to the clients. It never polls a NIC and never blocks on a client: client
 * sockets are non-blocking, and a client that does not take its responses is dropped.
 */

#include <errno.h>
#include <libgen.h>
#include <pthread.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

#include "droced_loc.h"

#define SOCKET_MODE	0666	/* allowed_uid / allowed_gid are what limit access */

/*
 * Calls from other threads (droced_loop_call): queued under a lock, run by the loop. A
 * caller waits on its own entry; one whose wait ran out takes the entry back unless the
 * loop already started it, and then waits for its end (a view is quick).
 */
struct loop_call {
	TAILQ_ENTRY(loop_call) next;
	void (*fn)(struct droced *d, void *arg);
	void *arg;
	bool running, done;
};

static pthread_mutex_t calls_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t calls_cond = PTHREAD_COND_INITIALIZER;
static TAILQ_HEAD(, loop_call) calls = TAILQ_HEAD_INITIALIZER(calls);
static bool calls_closed = true;	/* until the loop runs, and again once it stopped */
#define RUN_DIR_MODE	0755

static int
epoll_add(struct droced *d, int fd, uint32_t events, void *ptr)
{
	struct epoll_event ev = { .events = events, .data.ptr = ptr };

	return epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* mkdir -p of the socket's directory (/run/droce on a fresh boot). */
static int
make_parent(const char *path)
{
	char dir[PATH_MAX];
	char *p;

	snprintf(dir, sizeof(dir), "%s", path);
	p = strrchr(dir, '/');
	if (p == NULL || p == dir)
		return 0;
	*p = '\0';
	for (p = dir + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, RUN_DIR_MODE) != 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(dir, RUN_DIR_MODE) != 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/*
 * A socket file left by a droced that died is removed; one that a live droced still
 * answers on is not ours to take.
 */
static int
stale_socket_remove(const struct sockaddr_un *sa)
{
	struct stat st;
	int s, rc;

	if (lstat(sa->sun_path, &st) != 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode)) {
		DROCED_LOG(ERR, "%s exists and is not a socket", sa->sun_path);
		return -EEXIST;
	}
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	rc = connect(s, (const struct sockaddr *)sa, sizeof(*sa));
	close(s);
	if (rc == 0) {
		DROCED_LOG(ERR, "%s: another droced is serving it", sa->sun_path);
		return -EADDRINUSE;
	}
	if (unlink(sa->sun_path) != 0 && errno != ENOENT)
		return -errno;
	return 0;
}

static int
listen_socket(struct droced *d)
{
	const char *path = d->cfg.socket;
	struct sockaddr_un sa;
	int rc;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	rc = make_parent(path);
	if (rc != 0) {
		DROCED_LOG(ERR, "cannot create the directory of %s: %s", path, strerror(-rc));
		return -1;
	}
	if (stale_socket_remove(&sa) != 0)
		return -1;
	d->lsock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (d->lsock < 0 || bind(d->lsock, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		DROCED_LOG(ERR, "cannot bind %s: %s", path, strerror(errno));
		return -1;
	}
	d->socket_bound = true;
	if (chmod(path, SOCKET_MODE) != 0 || listen(d->lsock, DROCED_BACKLOG) != 0) {
		DROCED_LOG(ERR, "cannot listen on %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

int
droced_loop_init(struct droced *d)
{
	struct itimerspec its = {
		.it_interval = { .tv_nsec = DROCED_TICK_NS },
		.it_value = { .tv_nsec = DROCED_TICK_NS },
	};
	sigset_t sigs;

	d->listen_p.kind = DROCED_FD_LISTEN;
	d->signal_p.kind = DROCED_FD_SIGNAL;
	d->timer_p.kind = DROCED_FD_TIMER;
	d->wake_p.kind = DROCED_FD_WAKE;
	d->call_p.kind = DROCED_FD_CALL;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	d->sigfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	d->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	d->call_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->epfd < 0 || d->sigfd < 0 || d->timerfd < 0 || d->call_fd < 0 ||
	    timerfd_settime(d->timerfd, 0, &its, NULL) != 0) {
		DROCED_LOG(ERR, "control thread set-up: %s", strerror(errno));
		return -1;
	}
	if (listen_socket(d) != 0)
		return -1;
	if (epoll_add(d, d->lsock, EPOLLIN, &d->listen_p) != 0 ||
	    epoll_add(d, d->sigfd, EPOLLIN, &d->signal_p) != 0 ||
	    epoll_add(d, d->timerfd, EPOLLIN, &d->timer_p) != 0 ||
	    epoll_add(d, d->wake_fd, EPOLLIN, &d->wake_p) != 0 ||
	    epoll_add(d, d->call_fd, EPOLLIN, &d->call_p) != 0) {
		DROCED_LOG(ERR, "epoll: %s", strerror(errno));
		return -1;
	}
	pthread_mutex_lock(&calls_lock);
	calls_closed = false;
	pthread_mutex_unlock(&calls_lock);
	return 0;
}

int
droced_loop_call(struct droced *d, void (*fn)(struct droced *d, void *arg), void *arg,
		 unsigned int timeout_ms)
{
	struct loop_call call = { .fn = fn, .arg = arg };
	uint64_t one = 1;
	struct timespec deadline;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += timeout_ms / 1000;
	deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (deadline.tv_nsec >= 1000000000) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&calls_lock);
	if (calls_closed) {
		pthread_mutex_unlock(&calls_lock);
		return -ESHUTDOWN;
	}
	TAILQ_INSERT_TAIL(&calls, &call, next);
	pthread_mutex_unlock(&calls_lock);
	if (write(d->call_fd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is full, so the loop wakes anyway */
	}
	pthread_mutex_lock(&calls_lock);
	while (!call.done) {
		if (!call.running && (rc == ETIMEDOUT || calls_closed)) {
			TAILQ_REMOVE(&calls, &call, next);
			break;
		}
		rc = call.running ? pthread_cond_wait(&calls_cond, &calls_lock) :
		     pthread_cond_timedwait(&calls_cond, &calls_lock, &deadline);
	}
	rc = call.done ? 0 : calls_closed ? -ESHUTDOWN : -ETIMEDOUT;
	pthread_mutex_unlock(&calls_lock);
	return rc;
}

/* The calls queued: each run, its caller woken. */
static void
calls_run(struct droced *d)
{
	struct loop_call *call;
	uint64_t n;

	if (read(d->call_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		DROCED_LOG(ERR, "call eventfd: %s", strerror(errno));
	pthread_mutex_lock(&calls_lock);
	while ((call = TAILQ_FIRST(&calls)) != NULL) {
		TAILQ_REMOVE(&calls, call, next);
		call->running = true;
		pthread_mutex_unlock(&calls_lock);
		call->fn(d, call->arg);
		pthread_mutex_lock(&calls_lock);
		call->done = true;
		pthread_cond_broadcast(&calls_cond);
	}
	pthread_mutex_unlock(&calls_lock);
}

/* No more calls: those queued are given back at once (-ESHUTDOWN). */
static void
calls_close(void)
{
	pthread_mutex_lock(&calls_lock);
	calls_closed = true;
	pthread_cond_broadcast(&calls_cond);
	pthread_mutex_unlock(&calls_lock);
}

/* SO_PEERCRED against [control] allowed_uid / allowed_gid; root may always connect. */
static bool
peer_allowed(const struct droced *d, const struct ucred *cr)
{
	if (cr->uid == 0)
		return true;
	if (d->cfg.allowed_uid >= 0 && (int64_t)cr->uid != d->cfg.allowed_uid)
		return false;
	if (d->cfg.allowed_gid >= 0 && (int64_t)cr->gid != d->cfg.allowed_gid)
		return false;
	return true;
}

static void
accept_clients(struct droced *d)
{
	for (;;) {
		struct ucred cr;
		socklen_t len = sizeof(cr);
		struct droced_client *c;
		int fd = accept4(d->lsock, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				DROCED_LOG(WARNING, "accept: %s", strerror(errno));
			return;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0 ||
		    !peer_allowed(d, &cr)) {
			DROCED_LOG(WARNING, "refused a client (uid %u gid %u)", (unsigned int)cr.uid,
				   (unsigned int)cr.gid);
			close(fd);
			continue;
		}
		c = droced_client_new(d, fd);
		if (c == NULL || epoll_add(d, fd, EPOLLIN | EPOLLRDHUP, c) != 0) {
			DROCED_LOG(WARNING, "no room for a client");
			free(c);
			close(fd);
			continue;
		}
		droced_client_identify(c, cr.pid, cr.uid);
		TAILQ_INSERT_TAIL(&d->clients, c, next);
	}
}

/*
 * Sends a response, or the long answer a handler left instead (its op, seq and status
 * are the response's); on failure the client is marked dead (torn down by the loop).
 */
static void
respond(struct droced_client *c, struct droce_proto_resp *resp, const int *fds,
	unsigned int nfds)
{
	int rc;

	if (c->answer != NULL) {
		memcpy(c->answer, resp, offsetof(struct droce_proto_resp, limit));
		rc = droce_proto_send(c->fd, c->answer, c->answer_len, fds, nfds);
		droced_client_answer(c, NULL, 0);
	} else {
		rc = droce_proto_send(c->fd, resp, sizeof(*resp), fds, nfds);
	}

	/* One response per request: a client that lets them pile up is gone for us. */
	if (rc != 0)
		c->dead = true;
}

/* Stops or resumes reading a client's socket (a request waits for ARP). */
static void
client_pause(struct droced_client *c, bool pause)
{
	struct epoll_event ev = {
		.events = pause ? EPOLLRDHUP : EPOLLIN | EPOLLRDHUP,
		.data.ptr = c,
	};

	c->paused = pause;
	if (epoll_ctl(c->d->epfd, EPOLL_CTL_MOD, c->fd, &ev) != 0)
		c->dead = true;
}

static void
close_fds(int *fds, unsigned int nfds)
{
	unsigned int i;

	for (i = 0; i < nfds; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* One request per readiness: level-triggered epoll comes back for the next one. */
static void
client_read(struct droced_client *c)
{
	struct droce_proto_req req;
	struct droce_proto_resp resp;
	int fds[DROCE_PROTO_MAX_FDS], out_fds[2];
	unsigned int nfds, out_nfds;
	ssize_t n;

	/* Zeroed: a short message reads as zeros past its end, never as old bytes. */
	memset(&req, 0, sizeof(req));
	n = droce_proto_recv(c->fd, &req, sizeof(req), fds, DROCE_PROTO_MAX_FDS, &nfds);
	if (n == -EAGAIN)
		return;
	if (n == -EMSGSIZE) {
		memset(&resp, 0, sizeof(resp));
		resp.op = req.op;
		resp.seq = req.seq;
		resp.status = -EINVAL;
		respond(c, &resp, NULL, 0);
		return;
	}
	if (n <= 0) {
		c->dead = true;
		return;
	}
	if (droced_dispatch(c, &req, (size_t)n, fds, nfds, &resp, out_fds, &out_nfds) == 0)
		respond(c, &resp, out_fds, out_nfds);
	else
		client_pause(c, true);	/* parked: nothing more from it until it is answered */
	close_fds(fds, nfds);
}

/* A parked request whose neighbour resolved or failed, or timed out: answer it now. */
static void
unpark(struct droced_client *c, int status)
{
	struct droce_proto_resp resp;

	if (droced_dispatch_resume(c, status, &resp) == 1)
		return;
	respond(c, &resp, NULL, 0);
	client_pause(c, false);
}

static void
clients_events(struct droced *d)
{
	struct droced_client *c;

	TAILQ_FOREACH(c, &d->clients, next) {
		if (!c->dead && c->hello)
			droced_client_events(c);
	}
}

static void
tick(struct droced *d)
{
	struct droced_client *c;
	uint64_t now;

	droced_ports_tick(d);
	droced_rdmacm_tick(droced_now_ns());
	now = droced_now_ms();
	TAILQ_FOREACH(c, &d->clients, next) {
		if (c->dead)
			continue;
		if (c->parked && (c->park_done || now >= c->park_deadline_ms))
			unpark(c, c->park_done ? c->park_status : -EHOSTUNREACH);
	}
	clients_events(d);
}

/*
 * The tick's period: DROCED_IDLE_TICK_NS once the loop saw nothing but ticks for
 * DROCED_IDLE_AFTER_MS and the engines may sleep (a polling daemon keeps its cores busy
 * anyway, and keeps the 1 ms tick), else DROCED_TICK_NS.
 */
static void
tick_period(struct droced *d, bool busy)
{
	uint64_t now = droced_now_ms();
	bool slow;
	struct itimerspec its = { 0 };

	if (busy)
		d->busy_ms = now;
	slow = d->cfg.wait != DROCED_CONFIG_WAIT_POLL && now - d->busy_ms >= DROCED_IDLE_AFTER_MS;
	if (slow == d->tick_slow)
		return;
	its.it_interval.tv_nsec = slow ? DROCED_IDLE_TICK_NS : DROCED_TICK_NS;
	its.it_value = its.it_interval;
	if (timerfd_settime(d->timerfd, 0, &its, NULL) == 0)
		d->tick_slow = slow;
}

static void
reap(struct droced *d)
{
	struct droced_client *c, *next;

	for (c = TAILQ_FIRST(&d->clients); c != NULL; c = next) {
		next = TAILQ_NEXT(c, next);
		if (!c->dead)
			continue;
		TAILQ_REMOVE(&d->clients, c, next);
		droced_client_free(c);
	}
}

int
droced_loop_run(struct droced *d)
{
	struct epoll_event evs[DROCED_EPOLL_BATCH];
	struct signalfd_siginfo si;
	uint64_t expirations;
	bool busy, woken;
	int n, i;

	d->busy_ms = droced_now_ms();
	while (!d->stopping) {
		n = epoll_wait(d->epfd, evs, DROCED_EPOLL_BATCH, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			DROCED_LOG(ERR, "epoll_wait: %s", strerror(errno));
			return -1;
		}
		busy = woken = false;
		for (i = 0; i < n; i++) {
			struct droced_pollable *p = evs[i].data.ptr;
			struct droced_client *c;

			busy |= p->kind != DROCED_FD_TIMER;

			switch (p->kind) {
			case DROCED_FD_LISTEN:
				accept_clients(d);
				break;
			case DROCED_FD_SIGNAL:
				if (read(d->sigfd, &si, sizeof(si)) == sizeof(si)) {
					DROCED_LOG(NOTICE, "signal %u: stopping", si.ssi_signo);
					d->stopping = true;
				}
				break;
			case DROCED_FD_TIMER:
				if (read(d->timerfd, &expirations, sizeof(expirations)) > 0)
					tick(d);
				break;
			case DROCED_FD_WAKE:
				/* Frames and events are taken after the batch, below. */
				if (read(d->wake_fd, &expirations, sizeof(expirations)) < 0 &&
				    errno != EAGAIN)
					DROCED_LOG(ERR, "wake eventfd: %s", strerror(errno));
				woken = true;
				break;
			case DROCED_FD_CALL:
				calls_run(d);
				break;
			case DROCED_FD_CLIENT:
				c = (struct droced_client *)p;
				if (c->dead)
					break;
				if ((evs[i].events & EPOLLIN) && !c->paused)
					client_read(c);
				if (evs[i].events & (EPOLLHUP | EPOLLRDHUP | EPOLLERR))
					c->dead = true;
				break;
			}
		}
		/*
		 * MADs that came in or were queued to ourselves while the batch ran: answered
		 * now, not at the next tick, so a connection's set-up is not a tick per MAD;
		 * bounded, so a flood of them cannot keep the loop from its clients and tick.
		 */
		for (i = 0; i < DROCED_SLOW_ROUNDS && !d->stopping; i++)
			if (droced_ports_rx(d) == 0)
				break;
		/* An engine's asynchronous event woke us: to its client now, not at a tick. */
		if (woken)
			clients_events(d);
		/* After the batch: a later event of this batch may still point at a client. */
		reap(d);
		droced_captures_drain(d);
		droced_log_flush();
		tick_period(d, busy);
	}
	return 0;
}

void
droced_loop_fini(struct droced *d)
{
	struct droced_client *c;

	calls_close();

	if (d->lsock >= 0)
		close(d->lsock);
	d->lsock = -1;
	if (d->socket_bound)
		unlink(d->cfg.socket);
	d->socket_bound = false;
	/* rdma_cm ids with a device get DEVICE_REMOVAL (the pipe then ends). */
	droced_rdmacm_shutdown(d);
	/* Clients learn first (IBV_EVENT_DEVICE_FATAL), then lose their objects and socket. */
	TAILQ_FOREACH(c, &d->clients, next)
		droced_client_event_put(c, DROCE_SHM_EVENT_DEVICE_FATAL, 0);
	while ((c = TAILQ_FIRST(&d->clients)) != NULL) {
		TAILQ_REMOVE(&d->clients, c, next);
		droced_client_free(c);
	}
	if (d->sigfd >= 0)
		close(d->sigfd);
	if (d->timerfd >= 0)
		close(d->timerfd);
	if (d->epfd >= 0)
		close(d->epfd);
	/* call_fd stays: a telemetry thread may still write to it until the EAL stops. */
	d->sigfd = d->timerfd = d->epfd = -1;
}
