/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Live capture (droce-ctl capture, doc/operations.md): a port's frames, as its engines
 * take them from the NIC and give them to it, to a pcapng file that tshark and Wireshark
 * read as RoCEv2. The engines copy what matches (lib/engine's tap: a QPN or a peer, a snap
 * length) into a ring; the control thread writes the ring to the file the caller opened
 * and passed with CAPTURE_START, at every loop pass. One capture per port; it belongs to
 * the connection that started it and stops with it. No capture: nothing is copied, and
 * the engines test one pointer per burst.
 */

/* rte_pcapng is experimental in DPDK 22.11. */
#define ALLOW_EXPERIMENTAL_API
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_pcapng.h>
#include <rte_ring.h>

#include "droced_loc.h"

#define CAPTURE_RING	2048	/* copies waiting for the control thread */
#define CAPTURE_MBUFS	(CAPTURE_RING - 1)
#define CAPTURE_CACHE	64
#define CAPTURE_BURST	128
#define CAPTURE_SNAP_MAX	(DROCED_MBUF_ROOM - RTE_PKTMBUF_HEADROOM)

struct droced_capture {
	struct droced_client *c;	/* whose connection started it */
	struct droced_port *p;
	struct droce_engine_tap *tap;
	struct rte_ring *ring;
	struct rte_mempool *mp;
	rte_pcapng_t *out;
	uint64_t max;			/* frames to write; 0: until stopped */
	uint64_t written;
	uint64_t dropped;		/* the tap's: matched, the ring or its pool full */
	bool done;
};

/* The copies waiting: written while the file wants more, the rest freed. */
static void
capture_drain(struct droced_capture *cap)
{
	struct rte_mbuf *pkts[CAPTURE_BURST];
	unsigned int n;

	if (cap->ring == NULL)
		return;		/* ended */
	while ((n = rte_ring_sc_dequeue_burst(cap->ring, (void **)pkts, CAPTURE_BURST,
					     NULL)) != 0) {
		unsigned int keep = n;

		if (cap->max != 0 && cap->written + keep > cap->max)
			keep = (unsigned int)(cap->max - cap->written);
		if (keep != 0 && !cap->done &&
		    rte_pcapng_write_packets(cap->out, pkts, keep) < 0) {
			DROCED_LOG(WARNING, "capture of [port %s]: write: %s", cap->p->cfg->name,
				   strerror(errno));
			cap->done = true;
		} else if (!cap->done) {
			cap->written += keep;
		}
		/* Copies past max are not wanted, not dropped. */
		rte_pktmbuf_free_bulk(pkts, n);
		if (cap->max != 0 && cap->written >= cap->max)
			cap->done = true;
	}
}

/* The engines stop copying; what they copied goes to the file, which is closed. */
static void
capture_end(struct droced_capture *cap)
{
	uint64_t copied, dropped;

	if (cap->tap != NULL) {
		droce_engine_tap_counts(cap->tap, &copied, &dropped);
		droce_engine_tap_stop(cap->tap);
		cap->tap = NULL;
		cap->dropped += dropped;
	}
	capture_drain(cap);
	if (cap->out != NULL)
		rte_pcapng_close(cap->out);	/* closes the file */
	cap->out = NULL;
	rte_ring_free(cap->ring);
	rte_mempool_free(cap->mp);
	cap->ring = NULL;
	cap->mp = NULL;
	cap->done = true;
	cap->p->capture = NULL;
	DROCED_LOG(INFO, "capture of [port %s] ended: %" PRIu64 " frames written, %" PRIu64
		   " dropped", cap->p->cfg->name, cap->written, cap->dropped);
}

static void
capture_free(struct droced_capture *cap)
{
	if (cap->p->capture == cap)
		capture_end(cap);
	cap->c->capture = NULL;
	free(cap);
}

/* What the file says made it: this system and droced, as dumpcap writes its own. */
static rte_pcapng_t *
capture_open(int fd, const struct droced_port *p)
{
	char os[160], comment[DROCED_CONFIG_VALUE_MAX + DROCED_CONFIG_NAME_MAX + 16];
	struct utsname u;

	if (uname(&u) == 0)
		snprintf(os, sizeof(os), "%s %s", u.sysname, u.release);
	else
		snprintf(os, sizeof(os), "Linux");
	snprintf(comment, sizeof(comment), "droced [port %s] %s", p->cfg->name, p->cfg->device);
	return rte_pcapng_fdopen(fd, os, NULL, "droced", comment);
}

int
droced_capture_start(struct droced_client *c, struct droced_call *call)
{
	const struct droce_proto_req *req = call->req;
	struct droce_engine_tap_conf tc;
	struct droced_capture *cap;
	struct droced_port *p;
	char name[RTE_RING_NAMESIZE];
	uint32_t snap = req->capture.snaplen, i;
	int fd;

	/* A capture shows every application's data: root's, as a raw socket is. */
	if (c->uid != 0)
		return -EPERM;
	if (call->nfds != 1 || req->capture.port >= c->d->nb_ports ||
	    req->capture.nb_qpns > DROCE_PROTO_CAPTURE_QPNS ||
	    req->capture.nb_qpns > DROCE_ENGINE_TAP_QPNS)
		return -EINVAL;
	if (c->capture != NULL)
		return -EBUSY;
	p = &c->d->ports[req->capture.port];
	if (p->capture != NULL)
		return -EBUSY;
	if (snap == 0 || snap > CAPTURE_SNAP_MAX)
		snap = CAPTURE_SNAP_MAX;
	cap = calloc(1, sizeof(*cap));
	if (cap == NULL)
		return -ENOMEM;
	cap->c = c;
	cap->p = p;
	cap->max = req->capture.max_packets;
	snprintf(name, sizeof(name), "dcap%u", p->index);
	cap->ring = rte_ring_create(name, CAPTURE_RING, SOCKET_ID_ANY, RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "dcapmp%u", p->index);
	cap->mp = rte_pktmbuf_pool_create(name, CAPTURE_MBUFS, CAPTURE_CACHE, 0,
					  (uint16_t)rte_pcapng_mbuf_size(snap), SOCKET_ID_ANY);
	if (cap->ring == NULL || cap->mp == NULL) {
		DROCED_LOG(WARNING, "capture of [port %s]: %s", p->cfg->name,
			   rte_strerror(rte_errno));
		goto fail;
	}
	/* The file is the caller's: a descriptor of ours, closed with the capture. */
	fd = dup(call->fds[0]);
	if (fd < 0 || (cap->out = capture_open(fd, p)) == NULL) {
		if (fd >= 0)
			close(fd);
		goto fail;
	}
	memset(&tc, 0, sizeof(tc));
	tc.port_id = p->port_id;
	tc.ring = cap->ring;
	tc.mp = cap->mp;
	tc.snaplen = snap;
	tc.nb_qpns = req->capture.nb_qpns;
	for (i = 0; i < tc.nb_qpns; i++)
		tc.qpns[i] = req->capture.qpns[i] & 0xffffff;
	tc.peer_set = req->capture.peer_set != 0;
	memcpy(tc.peer, req->capture.peer, sizeof(tc.peer));
	p->capture = cap;
	c->capture = cap;
	cap->tap = droce_engine_tap_start(c->d->dev, &tc);
	if (cap->tap == NULL) {
		int rc = -rte_errno;

		capture_free(cap);
		return rc;
	}
	DROCED_LOG(INFO, "capture of [port %s] started (client pid %d)", p->cfg->name,
		   (int)c->pid);
	return 0;
fail:
	if (cap->out != NULL)
		rte_pcapng_close(cap->out);
	rte_ring_free(cap->ring);
	rte_mempool_free(cap->mp);
	free(cap);
	return -ENOMEM;
}

static void
capture_counts(const struct droced_capture *cap, struct droce_proto_resp *resp)
{
	uint64_t copied = 0, dropped = 0;

	if (cap->tap != NULL)
		droce_engine_tap_counts(cap->tap, &copied, &dropped);
	resp->capture.written = cap->written;
	resp->capture.dropped = cap->dropped + dropped;
	resp->capture.done = cap->done;
}

int
droced_capture_status(struct droced_client *c, struct droced_call *call)
{
	if (c->capture == NULL)
		return -ENOENT;
	capture_drain(c->capture);
	if (c->capture->done && c->capture->p->capture == c->capture)
		capture_end(c->capture);
	capture_counts(c->capture, call->resp);
	return 0;
}

int
droced_capture_stop(struct droced_client *c, struct droced_call *call)
{
	if (c->capture == NULL)
		return -ENOENT;
	if (c->capture->p->capture == c->capture)
		capture_end(c->capture);
	capture_counts(c->capture, call->resp);
	capture_free(c->capture);
	return 0;
}

void
droced_capture_release(struct droced_client *c)
{
	if (c->capture != NULL)
		capture_free(c->capture);
}

void
droced_captures_drain(struct droced *d)
{
	uint32_t i;

	for (i = 0; i < d->nb_ports; i++) {
		struct droced_capture *cap = d->ports[i].capture;

		if (cap == NULL)
			continue;
		capture_drain(cap);
		if (cap->done)
			capture_end(cap);	/* max written: the engines stop copying */
	}
}
