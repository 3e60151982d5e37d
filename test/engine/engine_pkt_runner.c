/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * engine-pkt-runner: one engine with one QP on a net_ring port, fed from a pcap file.
 * Packets built elsewhere (test/interop/test_engine_scapy.py builds them with scapy) go
 * to the port one at a time, the engine is polled a few times after each on this thread,
 * and whatever the port sends is written to an output pcap, so the answers come out in a
 * fixed order. Prints one JSON line: the QPN, every completion (and the bytes a receive
 * placed), how many frames the port sent after each input, and the engine's counters.
 *
 * Not a DROCE_TEST executable: the failure hook of engine_client.c's CHECKs is
 * test/common/runner_check.c (a failed CHECK prints and exits 1), so droce_test.c and its
 * main() stay out.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcap/pcap.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "droce_test.h"
#include "engine_client.h"
#include <droce_shm_bringup.h>

#define RUNNER_MAX_RECVS	64	/* receive WQEs: also the receive ring size */
#define RUNNER_MAX_SENDS	16
#define RUNNER_MAX_INPUT	4096	/* frames in the input capture */
#define RUNNER_SQ_SIZE		64
#define RUNNER_CQ_SIZE		256
#define RUNNER_POLL_BURST	16
#define RUNNER_SNAPLEN		65535
/* wr_id of receive i and of send i. */
#define RUNNER_RECV_WR_ID	0x100
#define RUNNER_SEND_WR_ID	0x200
/* Byte k of send j is (k * 7 + 3 + j * 16) & 0xff: the test computes the same. */
#define RUNNER_PAT_MUL		7
#define RUNNER_PAT_ADD		3
#define RUNNER_PAT_PER_SEND	16
#define RUNNER_MAX_RD_ATOMIC	1
/* --target: the MR remote requests reach, at a fixed address; the first MR registered. */
#define RUNNER_TARGET_IOVA	0x10000000ull
#define RUNNER_TARGET_MAX	4096
#define RUNNER_FLUSH_ACCESS	((1u << 8) | (1u << 9))	/* FLUSH_GLOBAL, FLUSH_PERSISTENT */

/* Defaults: the addresses test_engine_scapy.py builds its packets with. */
#define RUNNER_SELF_MAC		"02:00:00:00:00:02"
#define RUNNER_PEER_MAC		"02:00:00:00:00:01"
#define RUNNER_SELF_GID		"10.99.0.2"
#define RUNNER_PEER_GID		"10.99.0.1"
#define RUNNER_SELF_GID6	"fd00::2"
#define RUNNER_PEER_GID6	"fd00::1"

struct runner_opts {
	const char *in;
	const char *out;
	uint8_t type;			/* DROCE_SHM_QPT_* */
	uint8_t state;			/* DROCE_SHM_QPS_RTR or _RTS */
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qpn;
	uint32_t qkey;
	uint8_t mtu;			/* enum ibv_mtu */
	uint8_t min_rnr_timer;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	bool ipv6;
	unsigned int polls;
	uint32_t nb_recvs;
	uint32_t recv_len[RUNNER_MAX_RECVS];
	uint32_t nb_recv_len;
	uint32_t send_len[RUNNER_MAX_SENDS];
	uint32_t nb_sends;
	struct tc_host_addr self;
	struct tc_host_addr peer;
	struct droce_cc_params cc;	/* the engine's congestion parameters */
	uint8_t tclass;			/* the AV's traffic class and service level */
	uint8_t sl;
	uint32_t qp_access;		/* qp_access_flags */
	uint32_t target_len;		/* 0: no target MR */
	uint32_t target_access;
	bool flush;			/* post a FLUSH after the SENDs */
	uint64_t flush_va;
	uint32_t flush_len, flush_rkey;
	uint8_t flush_type, flush_level;
	bool atomic_write;		/* then an ATOMIC WRITE */
	uint64_t aw_va, aw_value;
	uint32_t aw_rkey;
};

struct runner {
	const struct runner_opts *o;
	struct tc_host h;
	struct rte_ring *rx, *tx;
	struct tc_cq *scq, *rcq;
	struct tc_qp *qp;
	struct tc_mr *rmr, *smr, *tmr;
	uint64_t recv_off[RUNNER_MAX_RECVS];
	pcap_t *dead;
	pcap_dumper_t *dump;
	uint32_t nb_out;		/* frames written */
	/* The JSON line, printed whole at the end: EAL logs go to stdout too. */
	FILE *js;
	char *js_buf;
	size_t js_len;
	bool first_wc;
};

static void
usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s --out FILE [options]\n"
		"  --in FILE            frames for the port (pcap, Ethernet); none: no input\n"
		"  --out FILE           frames the port sent (pcap)\n"
		"  --type rc|uc|ud      QP type (rc)\n"
		"  --state rtr|rts      state the QP is brought to (rtr)\n"
		"  --rq-psn N           expected PSN of the responder (0)\n"
		"  --sq-psn N           first PSN of the requester (0)\n"
		"  --dest-qpn N         the peer's QPN, RC/UC (0x12)\n"
		"  --qkey N             UD Q_Key (0x11111111)\n"
		"  --mtu BYTES          path MTU, 256..4096 (1024)\n"
		"  --min-rnr-timer N    RNR NAK timer code, RC (1)\n"
		"  --timeout N          local ACK timeout code, RC, 0: none (0)\n"
		"  --retry-cnt N        (7)\n"
		"  --rnr-retry N        (7)\n"
		"  --recvs N            receive WQEs posted, 0..%u (1)\n"
		"  --recv-len L[,L...]  their buffer sizes; the last repeats (4096)\n"
		"  --send LEN           post a signaled SEND of LEN bytes before any input\n"
		"                       (repeatable; RC or UC in RTS)\n"
		"  --ipv6               address the peer by its IPv6 GID (GID index 1)\n"
		"  --polls N            engine passes after each input frame (4)\n"
		"  --cc NAME=VALUE      a congestion parameter (doc/congestion.md; repeatable)\n"
		"  --tclass N --sl N    the AV's traffic class and service level, RC/UC (0 0)\n"
		"  --qp-access N        the QP's qp_access_flags (IBV_ACCESS_LOCAL_WRITE)\n"
		"  --target LEN         an MR of LEN bytes (at most %u) at iova 0x%llx, zeroed,\n"
		"                       registered first; printed at the end\n"
		"  --target-access N    its access flags (LOCAL_WRITE|REMOTE_WRITE|REMOTE_READ)\n"
		"  --flush VA,LEN,RKEY,TYPE,LEVEL    post a FLUSH after the SENDs (RC in RTS)\n"
		"  --atomic-write VA,RKEY,VALUE      then an ATOMIC WRITE of VALUE's 8 bytes as\n"
		"                       this host stores them\n"
		"  --self-mac M --peer-mac M --self-gid IP --peer-gid IP --self-gid6 IP6\n"
		"  --peer-gid6 IP6      addresses (%s %s %s %s %s %s)\n"
		"wr_ids: receive i is 0x%x+i, send i 0x%x+i; byte k of send i is\n"
		"(k * %u + %u + i * %u) & 0xff.\n",
		prog, RUNNER_MAX_RECVS, RUNNER_TARGET_MAX, RUNNER_TARGET_IOVA, RUNNER_SELF_MAC, RUNNER_PEER_MAC, RUNNER_SELF_GID,
		RUNNER_PEER_GID, RUNNER_SELF_GID6, RUNNER_PEER_GID6, RUNNER_RECV_WR_ID,
		RUNNER_SEND_WR_ID, RUNNER_PAT_MUL, RUNNER_PAT_ADD, RUNNER_PAT_PER_SEND);
	exit(2);
}

static uint32_t
parse_u32(const char *prog, const char *s, uint32_t max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno != 0 || *s == '\0' || *end != '\0' || v > max) {
		fprintf(stderr, "%s: bad number '%s' (at most %" PRIu32 ")\n", prog, s, max);
		usage(prog);
	}
	return (uint32_t)v;
}

static void
parse_mac(const char *prog, const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	char tail;
	int i;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
		   &tail) != 6) {
		fprintf(stderr, "%s: bad MAC '%s'\n", prog, s);
		usage(prog);
	}
	for (i = 0; i < 6; i++) {
		if (b[i] > UINT8_MAX)
			usage(prog);
		mac[i] = (uint8_t)b[i];
	}
}

/* An IPv6 address, or an IPv4 one as its IPv4-mapped GID (RoCEv2, A17.4.5.1). */
static void
parse_gid(const char *prog, const char *s, uint8_t gid[16])
{
	struct in_addr a4;

	if (inet_pton(AF_INET6, s, gid) == 1)
		return;
	if (inet_pton(AF_INET, s, &a4) != 1) {
		fprintf(stderr, "%s: bad GID '%s'\n", prog, s);
		usage(prog);
	}
	memset(gid, 0, 10);
	gid[10] = 0xff;
	gid[11] = 0xff;
	memcpy(gid + 12, &a4, 4);
}

static uint8_t
parse_mtu(const char *prog, const char *s)
{
	uint32_t v = parse_u32(prog, s, 4096);
	uint8_t m;

	for (m = IBV_MTU_256; m <= IBV_MTU_4096; m++) {
		if ((128u << m) == v)
			return m;
	}
	fprintf(stderr, "%s: path MTU %s is not 256, 512, 1024, 2048 or 4096\n", prog, s);
	usage(prog);
	return 0;
}

static void
parse_lens(const char *prog, char *s, struct runner_opts *o)
{
	char *save = NULL, *tok;

	o->nb_recv_len = 0;
	for (tok = strtok_r(s, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		if (o->nb_recv_len == RUNNER_MAX_RECVS)
			usage(prog);
		o->recv_len[o->nb_recv_len++] = parse_u32(prog, tok, 1u << 20);
	}
	if (o->nb_recv_len == 0)
		usage(prog);
}

enum {
	OPT_IN = 256, OPT_OUT, OPT_TYPE, OPT_STATE, OPT_RQ_PSN, OPT_SQ_PSN, OPT_DEST_QPN,
	OPT_QKEY, OPT_MTU, OPT_MIN_RNR, OPT_TIMEOUT, OPT_RETRY, OPT_RNR_RETRY, OPT_RECVS,
	OPT_RECV_LEN, OPT_SEND, OPT_IPV6, OPT_POLLS, OPT_SELF_MAC, OPT_PEER_MAC,
	OPT_SELF_GID, OPT_PEER_GID, OPT_SELF_GID6, OPT_PEER_GID6, OPT_CC, OPT_TCLASS, OPT_SL,
	OPT_QP_ACCESS, OPT_TARGET, OPT_TARGET_ACCESS, OPT_FLUSH, OPT_ATOMIC_WRITE, OPT_HELP,
};

/* "A,B,..." into n 64-bit numbers (strtoull's bases), each at most max[i]. */
static void
parse_tuple(const char *prog, char *s, uint64_t *v, const uint64_t *max, unsigned int n)
{
	char *save = NULL, *tok, *end;
	unsigned int i;

	for (i = 0, tok = strtok_r(s, ",", &save); i < n; i++, tok = strtok_r(NULL, ",", &save)) {
		if (tok == NULL)
			usage(prog);
		errno = 0;
		v[i] = strtoull(tok, &end, 0);
		if (errno != 0 || *end != '\0' || v[i] > max[i])
			usage(prog);
	}
	if (strtok_r(NULL, ",", &save) != NULL)
		usage(prog);
}

static void
parse_args(int argc, char **argv, struct runner_opts *o)
{
	static const struct option lopts[] = {
		{ "in", required_argument, NULL, OPT_IN },
		{ "out", required_argument, NULL, OPT_OUT },
		{ "type", required_argument, NULL, OPT_TYPE },
		{ "state", required_argument, NULL, OPT_STATE },
		{ "rq-psn", required_argument, NULL, OPT_RQ_PSN },
		{ "sq-psn", required_argument, NULL, OPT_SQ_PSN },
		{ "dest-qpn", required_argument, NULL, OPT_DEST_QPN },
		{ "qkey", required_argument, NULL, OPT_QKEY },
		{ "mtu", required_argument, NULL, OPT_MTU },
		{ "min-rnr-timer", required_argument, NULL, OPT_MIN_RNR },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "retry-cnt", required_argument, NULL, OPT_RETRY },
		{ "rnr-retry", required_argument, NULL, OPT_RNR_RETRY },
		{ "recvs", required_argument, NULL, OPT_RECVS },
		{ "recv-len", required_argument, NULL, OPT_RECV_LEN },
		{ "send", required_argument, NULL, OPT_SEND },
		{ "ipv6", no_argument, NULL, OPT_IPV6 },
		{ "polls", required_argument, NULL, OPT_POLLS },
		{ "self-mac", required_argument, NULL, OPT_SELF_MAC },
		{ "peer-mac", required_argument, NULL, OPT_PEER_MAC },
		{ "self-gid", required_argument, NULL, OPT_SELF_GID },
		{ "peer-gid", required_argument, NULL, OPT_PEER_GID },
		{ "self-gid6", required_argument, NULL, OPT_SELF_GID6 },
		{ "peer-gid6", required_argument, NULL, OPT_PEER_GID6 },
		{ "cc", required_argument, NULL, OPT_CC },
		{ "tclass", required_argument, NULL, OPT_TCLASS },
		{ "sl", required_argument, NULL, OPT_SL },
		{ "qp-access", required_argument, NULL, OPT_QP_ACCESS },
		{ "target", required_argument, NULL, OPT_TARGET },
		{ "target-access", required_argument, NULL, OPT_TARGET_ACCESS },
		{ "flush", required_argument, NULL, OPT_FLUSH },
		{ "atomic-write", required_argument, NULL, OPT_ATOMIC_WRITE },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	const char *prog = argv[0];
	int c;

	memset(o, 0, sizeof(*o));
	o->type = DROCE_SHM_QPT_RC;
	o->state = DROCE_SHM_QPS_RTR;
	o->dest_qpn = 0x12;
	o->qkey = 0x11111111;
	o->mtu = IBV_MTU_1024;
	o->min_rnr_timer = 1;
	o->retry_cnt = 7;
	o->rnr_retry = 7;
	o->nb_recvs = 1;
	o->recv_len[0] = 4096;
	o->nb_recv_len = 1;
	o->polls = 4;
	o->qp_access = IBV_ACCESS_LOCAL_WRITE;
	o->target_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ;
	droce_cc_params_default(&o->cc);
	parse_mac(prog, RUNNER_SELF_MAC, o->self.mac);
	parse_mac(prog, RUNNER_PEER_MAC, o->peer.mac);
	parse_gid(prog, RUNNER_SELF_GID, o->self.gid);
	parse_gid(prog, RUNNER_PEER_GID, o->peer.gid);
	parse_gid(prog, RUNNER_SELF_GID6, o->self.gid6);
	parse_gid(prog, RUNNER_PEER_GID6, o->peer.gid6);
	while ((c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
		switch (c) {
		case OPT_IN:
			o->in = optarg;
			break;
		case OPT_OUT:
			o->out = optarg;
			break;
		case OPT_TYPE:
			if (strcmp(optarg, "rc") == 0)
				o->type = DROCE_SHM_QPT_RC;
			else if (strcmp(optarg, "uc") == 0)
				o->type = DROCE_SHM_QPT_UC;
			else if (strcmp(optarg, "ud") == 0)
				o->type = DROCE_SHM_QPT_UD;
			else
				usage(prog);
			break;
		case OPT_STATE:
			if (strcmp(optarg, "rtr") == 0)
				o->state = DROCE_SHM_QPS_RTR;
			else if (strcmp(optarg, "rts") == 0)
				o->state = DROCE_SHM_QPS_RTS;
			else
				usage(prog);
			break;
		case OPT_CC: {
			char err[160], *eq = strchr(optarg, '=');

			if (eq == NULL)
				usage(prog);
			*eq = '\0';
			if (droce_cc_param_set(&o->cc, optarg, eq + 1, err, sizeof(err)) != 0) {
				fprintf(stderr, "%s: --cc: %s\n", prog, err);
				usage(prog);
			}
			break;
		}
		case OPT_TCLASS:
			o->tclass = (uint8_t)parse_u32(prog, optarg, UINT8_MAX);
			break;
		case OPT_QP_ACCESS:
			o->qp_access = parse_u32(prog, optarg, UINT32_MAX);
			break;
		case OPT_TARGET:
			o->target_len = parse_u32(prog, optarg, RUNNER_TARGET_MAX);
			break;
		case OPT_TARGET_ACCESS:
			o->target_access = parse_u32(prog, optarg, UINT32_MAX);
			break;
		case OPT_FLUSH: {
			static const uint64_t max[] = { UINT64_MAX, UINT32_MAX, UINT32_MAX,
							UINT8_MAX, UINT8_MAX };
			uint64_t v[5];

			parse_tuple(prog, optarg, v, max, 5);
			o->flush = true;
			o->flush_va = v[0];
			o->flush_len = (uint32_t)v[1];
			o->flush_rkey = (uint32_t)v[2];
			o->flush_type = (uint8_t)v[3];
			o->flush_level = (uint8_t)v[4];
			break;
		}
		case OPT_ATOMIC_WRITE: {
			static const uint64_t max[] = { UINT64_MAX, UINT32_MAX, UINT64_MAX };
			uint64_t v[3];

			parse_tuple(prog, optarg, v, max, 3);
			o->atomic_write = true;
			o->aw_va = v[0];
			o->aw_rkey = (uint32_t)v[1];
			o->aw_value = v[2];
			break;
		}
		case OPT_SL:
			o->sl = (uint8_t)parse_u32(prog, optarg, 7);
			break;
		case OPT_RQ_PSN:
			o->rq_psn = parse_u32(prog, optarg, DROCE_PSN_MASK);
			break;
		case OPT_SQ_PSN:
			o->sq_psn = parse_u32(prog, optarg, DROCE_PSN_MASK);
			break;
		case OPT_DEST_QPN:
			o->dest_qpn = parse_u32(prog, optarg, DROCE_QPN_MASK);
			break;
		case OPT_QKEY:
			o->qkey = parse_u32(prog, optarg, UINT32_MAX);
			break;
		case OPT_MTU:
			o->mtu = parse_mtu(prog, optarg);
			break;
		case OPT_MIN_RNR:
			o->min_rnr_timer = (uint8_t)parse_u32(prog, optarg, DROCE_AETH_VALUE_MASK);
			break;
		case OPT_TIMEOUT:
			o->timeout = (uint8_t)parse_u32(prog, optarg, 31);
			break;
		case OPT_RETRY:
			o->retry_cnt = (uint8_t)parse_u32(prog, optarg, 7);
			break;
		case OPT_RNR_RETRY:
			o->rnr_retry = (uint8_t)parse_u32(prog, optarg, 7);
			break;
		case OPT_RECVS:
			o->nb_recvs = parse_u32(prog, optarg, RUNNER_MAX_RECVS);
			break;
		case OPT_RECV_LEN:
			parse_lens(prog, optarg, o);
			break;
		case OPT_SEND:
			if (o->nb_sends == RUNNER_MAX_SENDS)
				usage(prog);
			o->send_len[o->nb_sends++] = parse_u32(prog, optarg, 1u << 20);
			break;
		case OPT_IPV6:
			o->ipv6 = true;
			break;
		case OPT_POLLS:
			o->polls = parse_u32(prog, optarg, 1000);
			break;
		case OPT_SELF_MAC:
			parse_mac(prog, optarg, o->self.mac);
			break;
		case OPT_PEER_MAC:
			parse_mac(prog, optarg, o->peer.mac);
			break;
		case OPT_SELF_GID:
			parse_gid(prog, optarg, o->self.gid);
			break;
		case OPT_PEER_GID:
			parse_gid(prog, optarg, o->peer.gid);
			break;
		case OPT_SELF_GID6:
			parse_gid(prog, optarg, o->self.gid6);
			break;
		case OPT_PEER_GID6:
			parse_gid(prog, optarg, o->peer.gid6);
			break;
		default:
			usage(prog);
		}
	}
	/* Sends need a connected QP (a UD send would need an address handle too). */
	if (optind != argc || o->out == NULL ||
	    (o->nb_sends != 0 && (o->state != DROCE_SHM_QPS_RTS || o->type == DROCE_SHM_QPT_UD)) ||
	    ((o->flush || o->atomic_write) &&
	     (o->state != DROCE_SHM_QPS_RTS || o->type != DROCE_SHM_QPT_RC)))
		usage(prog);
}

/* ---- The QP ---- */

static void
runner_modify(struct runner *r, struct droce_shm_qp_attr *a)
{
	int rc = tc_modify(r->qp, a);

	if (rc != 0)
		droce_test_fail(__FILE__, __LINE__, "modify to %s: %d",
				droce_shm_qp_state_name(a->qp_state), rc);
}

/* RESET -> INIT -> RTR [-> RTS], addressed at the peer (RC, UC) or by Q_Key (UD). */
static void
runner_qp_ready(struct runner *r)
{
	const struct runner_opts *o = r->o;
	struct droce_shm_qp_attr attr[DROCE_SHM_BRINGUP_STEPS];
	unsigned int i, steps = o->state == DROCE_SHM_QPS_RTR ? 2 : 3;

	if (o->type == DROCE_SHM_QPT_UD) {
		droce_shm_bringup_ud(o->qkey, o->sq_psn, attr);
	} else {
		struct droce_shm_bringup_path path = {
			.qp_type = o->type,
			.access = o->qp_access,
			.mtu = o->mtu,
			.dest_qpn = o->dest_qpn,
			.sq_psn = o->sq_psn,
			.rq_psn = o->rq_psn,
			.timeout = o->timeout,
			.retry_cnt = o->retry_cnt,
			.rnr_retry = o->rnr_retry,
			.min_rnr_timer = o->min_rnr_timer,
			.rd_atomic = RUNNER_MAX_RD_ATOMIC,
		};

		droce_shm_bringup_ah(&path.ah, o->ipv6 ? o->peer.gid6 : o->peer.gid, o->ipv6 ? 1 : 0);
		path.ah.traffic_class = o->tclass;
		path.ah.sl = o->sl;
		droce_shm_bringup_connected(&path, attr);
	}
	for (i = 0; i < steps; i++)
		runner_modify(r, &attr[i]);
}

static void
runner_setup(struct runner *r)
{
	const struct runner_opts *o = r->o;
	struct tc_qp_init in;
	uint64_t total = 0, off = 0;
	uint32_t i, j;

	tc_hosts_cc(&o->cc);
	tc_host_open_rings(&r->h, "pkt", &o->self, &o->peer, &r->rx, &r->tx);
	/* First, so that its key is the domain's first: index 1, variant 1. */
	if (o->target_len != 0)
		r->tmr = tc_mr_reg_iova(&r->h, o->target_len, o->target_access,
					RUNNER_TARGET_IOVA);
	r->scq = tc_cq_create(&r->h, RUNNER_CQ_SIZE);
	r->rcq = tc_cq_create(&r->h, RUNNER_CQ_SIZE);
	/* The first QP of a fresh device: its QPN does not depend on anything else. */
	memset(&in, 0, sizeof(in));
	in.type = o->type;
	in.scq = r->scq;
	in.rcq = r->rcq;
	in.sq_size = RUNNER_SQ_SIZE;
	in.rq_size = RUNNER_MAX_RECVS;
	in.max_sge = 1;
	r->qp = tc_qp_create(&r->h, &in);
	runner_qp_ready(r);

	for (i = 0; i < o->nb_recvs; i++) {
		r->recv_off[i] = total;
		total += o->recv_len[RTE_MIN(i, o->nb_recv_len - 1)];
	}
	r->rmr = tc_mr_reg(&r->h, RTE_MAX(total, 1u), IBV_ACCESS_LOCAL_WRITE);
	for (i = 0; i < o->nb_recvs; i++)
		CHECK(tc_recv(r->qp, RUNNER_RECV_WR_ID + i, r->rmr, r->recv_off[i],
			      o->recv_len[RTE_MIN(i, o->nb_recv_len - 1)]) == 0);

	total = 0;
	for (i = 0; i < o->nb_sends; i++)
		total += o->send_len[i];
	r->smr = tc_mr_reg(&r->h, RTE_MAX(total, 1u), IBV_ACCESS_LOCAL_WRITE);
	for (i = 0; i < o->nb_sends; i++) {
		for (j = 0; j < o->send_len[i]; j++)
			r->smr->buf[off + j] = (uint8_t)(j * RUNNER_PAT_MUL + RUNNER_PAT_ADD +
							 i * RUNNER_PAT_PER_SEND);
		CHECK(tc_send(r->qp, RUNNER_SEND_WR_ID + i, r->smr, off, o->send_len[i],
			      IBV_SEND_SIGNALED) == 0);
		off += o->send_len[i];
	}
	if (o->flush) {
		struct ibv_send_wr wr = { .wr_id = RUNNER_SEND_WR_ID + o->nb_sends,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;

		droce_shm_flush_wr(&wr, o->flush_rkey, o->flush_va, o->flush_len, o->flush_type,
				   o->flush_level);
		r->qp->view.supported_wr |= 1u << DROCE_SHM_WR_FLUSH;
		CHECK(tc_post_send(r->qp, &wr, &bad) == 0);
	}
	if (o->atomic_write) {
		struct ibv_send_wr wr = { .wr_id = RUNNER_SEND_WR_ID + o->nb_sends + 1,
					  .opcode = IBV_WR_ATOMIC_WRITE,
					  .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE,
					  .wr.rdma = { .remote_addr = o->aw_va,
						       .rkey = o->aw_rkey } }, *bad;
		struct ibv_sge sge = { .addr = (uintptr_t)&o->aw_value, .length = 8 };

		wr.sg_list = &sge;
		wr.num_sge = 1;
		r->qp->view.supported_wr |= 1u << DROCE_SHM_WR_ATOMIC_WRITE;
		CHECK(tc_post_send(r->qp, &wr, &bad) == 0);
	}
}

/* ---- Frames in and out ---- */

static void
runner_feed(struct runner *r, const uint8_t *frame, uint32_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(r->h.mp);
	char *p;

	CHECK(m != NULL);
	p = len > UINT16_MAX ? NULL : rte_pktmbuf_append(m, (uint16_t)len);
	if (p == NULL)
		droce_test_fail(__FILE__, __LINE__, "a %" PRIu32 "-byte frame does not fit an mbuf",
				len);
	memcpy(p, frame, len);
	CHECK(rte_ring_enqueue(r->rx, m) == 0);
}

/* Writes what the port sent to the output capture: how many frames. */
static unsigned int
runner_drain(struct runner *r)
{
	uint8_t buf[RUNNER_SNAPLEN];
	unsigned int n = 0;
	void *obj;

	while (rte_ring_dequeue(r->tx, &obj) == 0) {
		struct rte_mbuf *m = obj;
		struct pcap_pkthdr ph;
		const void *d;

		CHECK(rte_pktmbuf_pkt_len(m) <= sizeof(buf));
		d = rte_pktmbuf_read(m, 0, rte_pktmbuf_pkt_len(m), buf);
		CHECK(d != NULL);
		memset(&ph, 0, sizeof(ph));
		/* One frame per microsecond: the same file on every run. */
		ph.ts.tv_usec = ++r->nb_out;
		ph.caplen = ph.len = rte_pktmbuf_pkt_len(m);
		pcap_dump((u_char *)r->dump, &ph, d);
		rte_pktmbuf_free(m);
		n++;
	}
	return n;
}

static void
runner_print_hex(FILE *js, const uint8_t *p, uint32_t len)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		fprintf(js, "%02x", p[i]);
}

/* Prints the completions of cq, each tagged with the input frame it followed (-1: none). */
static void
runner_wcs(struct runner *r, struct tc_cq *cq, const char *name, int after)
{
	const struct runner_opts *o = r->o;
	struct ibv_wc wc[RUNNER_POLL_BURST];
	int n, i;

	while ((n = tc_poll(cq, RUNNER_POLL_BURST, wc)) > 0) {
		for (i = 0; i < n; i++) {
			const struct ibv_wc *w = &wc[i];
			uint64_t ri = w->wr_id - RUNNER_RECV_WR_ID;

			fprintf(r->js, "%s{\"cq\":\"%s\",\"after\":%d,\"wr_id\":%" PRIu64
				",\"status\":%u,\"opcode\":%u,\"byte_len\":%u,\"qp_num\":%u,"
				"\"src_qp\":%u,\"wc_flags\":%u,\"imm_data\":%u",
				r->first_wc ? "" : ",", name, after, w->wr_id, w->status, w->opcode,
				w->byte_len, w->qp_num, w->src_qp, w->wc_flags, ntohl(w->imm_data));
			r->first_wc = false;
			/* The bytes a successful receive placed (the GRH area first for UD). */
			if (cq == r->rcq && w->status == IBV_WC_SUCCESS && ri < o->nb_recvs) {
				uint32_t cap = o->recv_len[RTE_MIN(ri, o->nb_recv_len - 1)];

				fprintf(r->js, ",\"data\":\"");
				runner_print_hex(r->js, r->rmr->buf + r->recv_off[ri],
						 RTE_MIN(w->byte_len, cap));
				fprintf(r->js, "\"");
			}
			fprintf(r->js, "}");
		}
	}
	CHECK(n == 0);		/* a negative count is a CQ overrun */
}

static void
runner_step(struct runner *r)
{
	unsigned int i;

	for (i = 0; i < r->o->polls; i++)
		droce_engine_poll(r->h.eng[0]);
}

int
main(int argc, char **argv)
{
	struct runner_opts o;
	struct runner *r;
	struct droce_engine_qp_cc cc;
	struct droce_engine_stats st;
	char errbuf[PCAP_ERRBUF_SIZE];
	pcap_t *in = NULL;
	unsigned int tx_before, c;
	unsigned int tx_after[RUNNER_MAX_INPUT];
	int nb_in = 0;

	parse_args(argc, argv, &o);
	r = calloc(1, sizeof(*r));
	CHECK(r != NULL);
	r->o = &o;
	r->first_wc = true;
	r->js = open_memstream(&r->js_buf, &r->js_len);
	CHECK(r->js != NULL);
	if (o.in != NULL) {
		in = pcap_open_offline(o.in, errbuf);
		if (in == NULL)
			droce_test_fail(__FILE__, __LINE__, "%s: %s", o.in, errbuf);
		CHECK(pcap_datalink(in) == DLT_EN10MB);
	}
	r->dead = pcap_open_dead(DLT_EN10MB, RUNNER_SNAPLEN);
	CHECK(r->dead != NULL);
	r->dump = pcap_dump_open(r->dead, o.out);
	if (r->dump == NULL)
		droce_test_fail(__FILE__, __LINE__, "%s: %s", o.out, pcap_geterr(r->dead));

	runner_setup(r);
	fprintf(r->js, "{\"qpn\":%u,\"completions\":[", r->qp->qpn);
	runner_step(r);
	tx_before = runner_drain(r);
	runner_wcs(r, r->scq, "send", -1);
	runner_wcs(r, r->rcq, "recv", -1);
	if (in != NULL) {
		struct pcap_pkthdr *ph;
		const u_char *data;
		int rc;

		while ((rc = pcap_next_ex(in, &ph, &data)) == 1) {
			CHECK(ph->caplen == ph->len);
			CHECK(nb_in < (int)RTE_DIM(tx_after));
			runner_feed(r, data, ph->caplen);
			runner_step(r);
			tx_after[nb_in] = runner_drain(r);
			runner_wcs(r, r->scq, "send", nb_in);
			runner_wcs(r, r->rcq, "recv", nb_in);
			nb_in++;
		}
		if (rc != PCAP_ERROR_BREAK)
			droce_test_fail(__FILE__, __LINE__, "%s: %s", o.in, pcap_geterr(in));
		pcap_close(in);
	}
	fprintf(r->js, "],\"tx_before\":%u,\"tx_after\":[", tx_before);
	for (c = 0; c < (unsigned int)nb_in; c++)
		fprintf(r->js, "%s%u", c == 0 ? "" : ",", tx_after[c]);
	/* The receive ring as the engine published it: taken, and completed. */
	fprintf(r->js, "],\"rq_cons\":%u,\"rq_done\":%u",
		__atomic_load_n(&r->qp->view.ctl->rq.cons, __ATOMIC_ACQUIRE),
		__atomic_load_n(&r->qp->view.ctl->rq_done, __ATOMIC_ACQUIRE));
	if (r->tmr != NULL) {
		fprintf(r->js, ",\"target_rkey\":%u,\"target\":\"", r->tmr->rkey);
		runner_print_hex(r->js, r->tmr->buf, o.target_len);
		fprintf(r->js, "\"");
	}
	fprintf(r->js, ",\"state\":\"%s\",\"counters\":{",
		droce_shm_qp_state_name((uint8_t)tc_qp_state(r->qp)));
	droce_engine_stats_get(r->h.eng[0], &st);
	for (c = 0; c < DROCE_ENGINE_NB_COUNTERS; c++)
		fprintf(r->js, "%s\"%s\":%" PRIu64, c == 0 ? "" : ",",
			droce_engine_counter_names[c], ((const uint64_t *)&st)[c]);
	droce_engine_qp_cc_get(r->qp->qp, &cc);
	fprintf(r->js, "},\"cc\":{\"rp\":%s,\"limited\":%s,\"prio\":%u,\"rate_kbps\":%" PRIu64
		",\"target_kbps\":%" PRIu64 ",\"alpha\":%u,\"ce_rcvd\":%" PRIu64
		",\"cnp_sent\":%" PRIu64 ",\"cnp_rcvd\":%" PRIu64 ",\"rate_cuts\":%" PRIu64 "}}\n",
		cc.rp ? "true" : "false", cc.limited ? "true" : "false", cc.prio, cc.rate_kbps,
		cc.target_kbps, cc.alpha, cc.ce_rcvd, cc.cnp_sent, cc.cnp_rcvd, cc.rate_cuts);
	CHECK(fclose(r->js) == 0);
	fwrite(r->js_buf, 1, r->js_len, stdout);
	fflush(stdout);
	free(r->js_buf);

	pcap_dump_close(r->dump);
	pcap_close(r->dead);
	tc_host_close(&r->h);
	free(r);
	return 0;
}
