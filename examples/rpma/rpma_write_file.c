/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * rpma_write_file: remote writes into a file, librpma's persistent-memory pattern on an
 * ordinary file. The server maps PATH MAP_SHARED and registers the mapping itself
 * (rpma_mr_reg), so the bytes the client writes with rpma_write land in the file's pages,
 * not in a copy; it offers the region in the private data of its accept. The client
 * writes a pattern at a few places (the first and the last byte among them), makes the
 * writes visible or persistent with rpma_flush and sends the seed of its pattern. The
 * server then unmaps the file and reads it back with pread(2), through the descriptor it
 * mapped and again through a new open(2) of PATH: every byte must be the pattern inside
 * the written places and zero elsewhere.
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rpma_common.h"

#define MIB			(1024u * 1024u)
#define DEFAULT_SIZE		MIB
/* The places written (write_place) need 64 KiB; more than 1 GiB is no example. */
#define MIN_SIZE		(64u * 1024u)
#define MAX_SIZE		(1024u * MIB)
#define DEFAULT_SEED		1u
#define NR_PLACES		4
/* The read-back buffer of check_file, on its stack. */
#define CHECK_CHUNK		(16u * 1024u)

enum {
	OPT_SEED = 256,
	OPT_FLUSH,
};

struct wf_opts {
	bool server;
	const char *addr;
	const char *port;
	const char *path;		/* server only */
	uint32_t size;
	uint32_t seed;
	bool persistent;		/* server: offer flushes to persistence */
	uint32_t timeout_s;
	bool verbose;
};

/* One write of the client: len bytes of the pattern at offset of the remote region. */
struct wf_place {
	size_t offset;
	size_t len;
};

static void
usage(FILE *f)
{
	fprintf(f,
"Usage: %s [options] server ADDR PORT PATH   offer the file PATH on ADDR:PORT\n"
"       %s [options] client ADDR PORT        write into the server's file\n"
"\n"
"Remote writes into a file. The server creates PATH or cuts it to --size bytes of\n"
"zeros, maps it MAP_SHARED, registers the mapping (rpma_mr_reg: the RDMA device writes\n"
"the file's own pages) and offers it in the private data of its accept. The client\n"
"writes a pattern, a hash of --seed and each byte's offset, at %d places: the first\n"
"4099 bytes, one byte at size/3 (made odd), 20000 bytes from size/2 - 5000 and the\n"
"last 777 bytes. It then flushes the region (rpma_flush) and sends the seed. The server\n"
"unmaps the file after msync(2) and checks every byte with pread(2), on the descriptor\n"
"it mapped and again on PATH opened anew: the pattern at the places, zero elsewhere.\n"
"Each step prints a line. ADDR is the server's address on both sides. PATH may be on a\n"
"disk, in /dev/shm or on hugetlbfs (there --size must be a multiple of the huge page\n"
"size). PATH's old contents are lost.\n"
"\n"
"Options:\n"
"  -s, --size N   bytes of PATH mapped and offered (server only; %u to %u,\n"
"                 default %u)\n"
"  --seed N       the seed of the pattern (client only; default %u)\n"
"  --flush TYPE   the flush the region is registered for (server only): visibility\n"
"                 (default) or persistent; persistent also declares Direct Write to\n"
"                 PMem in the peer configuration the server sends, which the client\n"
"                 applies to its connection (librpma requires it)\n"
"  -T, --timeout SEC  give up after SEC seconds in all (default %d); alarm(2) ends the\n"
"                 process %d s later if a call blocks inside librpma\n"
"  -v, --verbose  librpma's notices on stderr\n"
"  -h, --help     this text\n"
"\n"
"The server ends with 'reopened PATH: N bytes ok'. Exit status: 0 when every byte\n"
"checked (server) or every write, the flush and the send completed (client), 1 on any\n"
"failure, 2 on bad usage.\n",
		rc_prog, rc_prog, NR_PLACES, MIN_SIZE, MAX_SIZE, DEFAULT_SIZE, DEFAULT_SEED,
		RC_DEFAULT_TIMEOUT_S, RC_ALARM_GRACE_S);
}

static int
parse(int argc, char **argv, struct wf_opts *o)
{
	static const struct option longopts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "flush", required_argument, NULL, OPT_FLUSH },
		{ "timeout", required_argument, NULL, 'T' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	int ret;

	o->size = DEFAULT_SIZE;
	o->seed = DEFAULT_SEED;
	o->timeout_s = RC_DEFAULT_TIMEOUT_S;
	while ((c = getopt_long(argc, argv, "s:T:vh", longopts, NULL)) != -1) {
		ret = rc_parse_opt(c, optarg, &o->timeout_s, &o->verbose, usage);
		if (ret != RC_OPT_NOT_SHARED) {
			if (ret != 0)
				return ret;
			continue;
		}
		switch (c) {
		case 's':
			if (rc_parse_u32("--size", optarg, MIN_SIZE, MAX_SIZE, &o->size) != 0)
				return RC_EXIT_USAGE;
			break;
		case OPT_SEED:
			if (rc_parse_u32("--seed", optarg, 0, UINT32_MAX, &o->seed) != 0)
				return RC_EXIT_USAGE;
			break;
		case OPT_FLUSH:
			if (strcmp(optarg, "persistent") == 0)
				o->persistent = true;
			else if (strcmp(optarg, "visibility") != 0)
				return rc_usage_error("--flush: '%s' is neither visibility nor "
						      "persistent", optarg);
			break;
		default:
			return rc_usage_error("unknown option");
		}
	}
	/* The server has one operand more than rc_parse_role knows: PATH, the last. */
	if (optind < argc && strcmp(argv[optind], "server") == 0) {
		if (argc - optind != 4)
			return rc_usage_error("want server ADDR PORT PATH");
		o->path = argv[--argc];
	}
	if (rc_parse_role(argc, argv, optind, &o->server, &o->addr, &o->port) != 0)
		return RC_EXIT_USAGE;
	return 0;
}

/*
 * The byte at offset off of the region: a hash of (seed, off), so that a write that lands
 * at the wrong offset, or bytes of another run, do not check.
 */
static uint8_t
pattern(uint32_t seed, size_t off)
{
	uint32_t x = (uint32_t)off * 0x9e3779b1u ^ seed;

	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return (uint8_t)x;
}

/*
 * Place i of a region of size bytes: the first byte and a page and a 4096-byte packet
 * crossed; one byte at an odd offset; several packets unaligned at both ends; the last
 * byte. test_rpma.py computes the same places.
 */
static struct wf_place
write_place(size_t size, int i)
{
	const struct wf_place places[NR_PLACES] = {
		{ 0, 4099 },
		{ (size / 3) | 1, 1 },
		{ size / 2 - 5000, 20000 },
		{ size - 777, 777 },
	};

	return places[i];
}

/* The byte the server must find at off once the client wrote with seed. */
static uint8_t
expected(size_t size, uint32_t seed, size_t off)
{
	int i;

	for (i = 0; i < NR_PLACES; i++) {
		struct wf_place p = write_place(size, i);

		if (off >= p.offset && off < p.offset + p.len)
			return pattern(seed, off);
	}
	return 0;
}

/*
 * Read all of fd with pread(2) and check every byte; -1 after a message naming what, the
 * first wrong byte and how many are wrong.
 */
static int
check_file(int fd, size_t size, uint32_t seed, const char *what)
{
	uint8_t buf[CHECK_CHUNK];
	size_t first_bad = 0;
	uint8_t first_got = 0;
	size_t bad = 0;
	size_t off = 0;

	while (off < size) {
		size_t want = size - off < sizeof(buf) ? size - off : sizeof(buf);
		ssize_t n = pread(fd, buf, want, (off_t)off);
		size_t i;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc_err("%s: pread at %zu: %s", what, off, n < 0 ? strerror(errno) :
			       "end of file");
			return -1;
		}
		for (i = 0; i < (size_t)n; i++) {
			if (buf[i] == expected(size, seed, off + i))
				continue;
			if (bad++ == 0) {
				first_bad = off + i;
				first_got = buf[i];
			}
		}
		off += (size_t)n;
	}
	if (bad != 0) {
		rc_err("%s: %zu of %zu bytes wrong, the first at offset %zu: 0x%02x, want 0x%02x",
		       what, bad, size, first_bad, first_got, expected(size, seed, first_bad));
		return -1;
	}
	return 0;
}

/* PATH opened, cut to size bytes of zeros and mapped MAP_SHARED; -1 after a message. */
static int
map_file(const struct wf_opts *o, int *fd, void **map)
{
	*fd = open(o->path, O_RDWR | O_CREAT, 0644);
	if (*fd < 0) {
		rc_err("open %s: %s", o->path, strerror(errno));
		return -1;
	}
	/* Cut to nothing first: the bytes not written must be zeros, not an old run's. */
	if (ftruncate(*fd, 0) != 0 || ftruncate(*fd, o->size) != 0) {
		rc_err("ftruncate %s to %" PRIu32 " bytes: %s", o->path, o->size,
		       strerror(errno));
		close(*fd);
		return -1;
	}
	*map = mmap(NULL, o->size, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	if (*map == MAP_FAILED) {
		rc_err("mmap %s: %s", o->path, strerror(errno));
		close(*fd);
		return -1;
	}
	rc_step("file %s: %" PRIu32 " bytes of zeros mapped MAP_SHARED", o->path, o->size);
	return 0;
}

/*
 * Offer the region to one client and wait for its seed (the message it sends when all its
 * writes are flushed) and its disconnection.
 */
static int
serve(const struct wf_opts *o, struct rpma_peer *peer, struct rpma_mr_local *mr,
      struct rpma_peer_cfg *pcfg, struct rpma_mr_local *msg_mr, const uint8_t *msg,
      uint32_t *seed)
{
	struct rpma_conn_private_data pd;
	struct rpma_conn_req *req = NULL;
	struct rpma_conn *conn = NULL;
	struct rpma_ep *ep = NULL;
	struct rpma_cq *cq = NULL;
	struct rc_offer offer;
	struct ibv_wc wc;
	struct rc_msg m;
	int rc = -1;
	int ret;

	if (rc_offer_put(mr, pcfg, &offer, &pd) != 0)
		return -1;
	ret = rpma_ep_listen(peer, o->addr, o->port, &ep);
	if (ret != 0)
		return rc_rpma_err("rpma_ep_listen", ret);
	rc_step("listening on %s:%s", o->addr, o->port);
	if (rc_next_conn_req(ep, NULL, &req) != 0)
		goto out;
	/* The client's message may follow the accept at once. */
	ret = rpma_conn_req_recv(req, msg_mr, 0, RC_MSG_SIZE, NULL);
	if (ret != 0) {
		rc_rpma_err("rpma_conn_req_recv", ret);
		(void)rpma_conn_req_delete(&req);
		goto out;
	}
	ret = rpma_conn_req_connect(&req, &pd, &conn);
	if (ret != 0) {
		rc_rpma_err("rpma_conn_req_connect (accept)", ret);
		goto out;
	}
	if (rc_conn_expect(conn, RPMA_CONN_ESTABLISHED) != 0)
		goto out_abort;
	rc_step("connection established, region offered (descriptor of %u bytes%s)",
		offer.mr_desc_size, pcfg != NULL ? ", peer configuration" : "");

	ret = rpma_conn_get_cq(conn, &cq);
	if (ret != 0) {
		rc_rpma_err("rpma_conn_get_cq", ret);
		goto out_abort;
	}
	if (rc_cq_take(cq, &wc, 1, "the client's seed") != 1 ||
	    rc_wc_check(&wc, IBV_WC_RECV, "the client's seed") != 0)
		goto out_abort;
	if (wc.byte_len != RC_MSG_SIZE || rc_msg_get(msg, &m) != 0 || m.value > UINT32_MAX) {
		rc_err("the client's seed: a message of %" PRIu32 " bytes, want %u with a seed",
		       wc.byte_len, RC_MSG_SIZE);
		goto out_abort;
	}
	*seed = (uint32_t)m.value;
	rc_step("client done: its writes flushed, seed %" PRIu32, *seed);
	if (rc_disconnect_after_peer(&conn) != 0)
		goto out;
	rc_step("connection closed by the client");
	rc = 0;
	goto out;
out_abort:
	rc_conn_abort(&conn);
out:
	ret = rpma_ep_shutdown(&ep);
	if (ret != 0)
		rc = rc_rpma_err("rpma_ep_shutdown", ret);
	return rc;
}

/* After serve: unmap, then read the file back through fd and through PATH opened anew. */
static int
verify(const struct wf_opts *o, int fd, void *map, uint32_t seed)
{
	struct stat st;
	int fd2;
	int rc;

	/*
	 * The client's flush made its writes visible in the file's pages (the page cache);
	 * msync makes them the file's on the disk as well.
	 */
	if (msync(map, o->size, MS_SYNC) != 0) {
		rc_err("msync %s: %s", o->path, strerror(errno));
		return -1;
	}
	if (munmap(map, o->size) != 0) {
		rc_err("munmap %s: %s", o->path, strerror(errno));
		return -1;
	}
	rc_step("written back and unmapped");
	if (check_file(fd, o->size, seed, "pread") != 0)
		return -1;
	rc_step("pread: %" PRIu32 " bytes ok (%d places of the pattern, zeros elsewhere)",
		o->size, NR_PLACES);

	fd2 = open(o->path, O_RDONLY);
	if (fd2 < 0) {
		rc_err("reopen %s: %s", o->path, strerror(errno));
		return -1;
	}
	rc = fstat(fd2, &st);
	if (rc != 0 || st.st_size != (off_t)o->size) {
		rc_err("reopened %s: %s %lld bytes, want %" PRIu32, o->path,
		       rc != 0 ? strerror(errno) : "size", rc != 0 ? -1LL : (long long)st.st_size,
		       o->size);
		close(fd2);
		return -1;
	}
	rc = check_file(fd2, o->size, seed, "reopened file");
	close(fd2);
	if (rc != 0)
		return -1;
	rc_step("reopened %s: %" PRIu32 " bytes ok", o->path, o->size);
	return 0;
}

/*
 * Register the mapping (and a receive buffer for the client's message), serve one client,
 * deregister: the file's bytes are then the server's alone again.
 */
static int
offer_region(const struct wf_opts *o, struct rpma_peer *peer, void *map, uint32_t *seed)
{
	int usage = RPMA_MR_USAGE_WRITE_DST | (o->persistent ?
		RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT : RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY);
	struct rpma_mr_local *msg_mr = NULL;
	struct rpma_peer_cfg *pcfg = NULL;
	struct rpma_mr_local *mr = NULL;
	uint8_t *msg;
	int rc = -1;
	int ret;

	msg = rc_alloc(RC_MSG_SIZE);
	if (msg == NULL)
		return -1;
	ret = rpma_mr_reg(peer, map, o->size, usage, &mr);
	if (ret != 0) {
		rc_rpma_err("rpma_mr_reg (the file mapping)", ret);
		goto out_free;
	}
	rc_step("registered the mapping for remote writes and %s flushes",
		o->persistent ? "persistent" : "visibility");
	ret = rpma_mr_reg(peer, msg, RC_MSG_SIZE, RPMA_MR_USAGE_RECV, &msg_mr);
	if (ret != 0) {
		rc_rpma_err("rpma_mr_reg (recv)", ret);
		goto out_dereg;
	}
	if (o->persistent) {
		/* A promise librpma takes on trust: without it rpma_flush refuses persistence. */
		ret = rpma_peer_cfg_new(&pcfg);
		if (ret != 0) {
			rc_rpma_err("rpma_peer_cfg_new", ret);
			goto out_dereg_msg;
		}
		ret = rpma_peer_cfg_set_direct_write_to_pmem(pcfg, true);
		if (ret != 0) {
			rc_rpma_err("rpma_peer_cfg_set_direct_write_to_pmem", ret);
			goto out_pcfg;
		}
	}
	rc = serve(o, peer, mr, pcfg, msg_mr, msg, seed);
out_pcfg:
	if (pcfg != NULL)
		(void)rpma_peer_cfg_delete(&pcfg);
out_dereg_msg:
	ret = rpma_mr_dereg(&msg_mr);
	if (ret != 0)
		rc = rc_rpma_err("rpma_mr_dereg (recv)", ret);
out_dereg:
	ret = rpma_mr_dereg(&mr);
	if (ret != 0)
		rc = rc_rpma_err("rpma_mr_dereg (the file mapping)", ret);
out_free:
	free(msg);
	return rc;
}

static int
run_server(const struct wf_opts *o, struct rpma_peer *peer)
{
	uint32_t seed = 0;
	void *map;
	int rc;
	int fd;

	if (map_file(o, &fd, &map) != 0)
		return -1;
	rc = offer_region(o, peer, map, &seed);
	/* verify unmaps first: no check reads through the mapping. */
	if (rc == 0)
		rc = verify(o, fd, map, seed);
	else
		munmap(map, o->size);
	close(fd);
	return rc;
}

/* Write every place, then flush the region; buf takes the places' bytes in a row. */
static int
write_all(struct rpma_conn *conn, struct rpma_cq *cq, struct rpma_mr_remote *dst,
	  size_t size, struct rpma_mr_local *src, uint8_t *buf, uint32_t seed,
	  enum rpma_flush_type flush)
{
	size_t at = 0;
	struct ibv_wc wc;
	int ret;
	int i;

	for (i = 0; i < NR_PLACES; i++) {
		struct wf_place p = write_place(size, i);
		size_t k;

		for (k = 0; k < p.len; k++)
			buf[at + k] = pattern(seed, p.offset + k);
		ret = rpma_write(conn, dst, p.offset, src, at, p.len, RPMA_F_COMPLETION_ALWAYS,
				 NULL);
		if (ret != 0)
			return rc_rpma_err("rpma_write", ret);
		if (rc_cq_take(cq, &wc, 1, "a write") != 1 ||
		    rc_wc_check(&wc, IBV_WC_RDMA_WRITE, "write") != 0)
			return -1;
		rc_step("wrote %zu bytes at offset %zu", p.len, p.offset);
		at += p.len;
	}
	ret = rpma_flush(conn, dst, 0, size, flush, RPMA_F_COMPLETION_ALWAYS, NULL);
	if (ret != 0)
		return rc_rpma_err("rpma_flush", ret);
	/* librpma 1.2 flushes with a read from the region after the writes (its "APM"). */
	if (rc_cq_take(cq, &wc, 1, "the flush") != 1 ||
	    rc_wc_check(&wc, IBV_WC_RDMA_READ, "flush") != 0)
		return -1;
	rc_step("flushed %zu bytes (%s)", size,
		flush == RPMA_FLUSH_TYPE_PERSISTENT ? "persistent" : "visibility");
	return 0;
}

/* The connected half of the client: the offer, the writes, the flush, the seed. */
static int
write_remote(const struct wf_opts *o, struct rpma_peer *peer, struct rpma_conn *conn)
{
	struct rpma_mr_remote *dst = NULL;
	struct rpma_peer_cfg *pcfg = NULL;
	struct rpma_mr_local *src = NULL;
	struct rpma_conn_private_data pd;
	enum rpma_flush_type flush;
	struct rpma_cq *cq = NULL;
	size_t total = 0;
	size_t size = 0;
	uint8_t *buf = NULL;
	struct ibv_wc wc;
	int types = 0;
	int rc = -1;
	int ret;
	int i;

	ret = rpma_conn_get_private_data(conn, &pd);
	if (ret != 0)
		return rc_rpma_err("rpma_conn_get_private_data", ret);
	if (rc_offer_get(&pd, &dst, &pcfg) != 0)
		return -1;
	ret = rpma_mr_remote_get_size(dst, &size);
	if (ret == 0)
		ret = rpma_mr_remote_get_flush_type(dst, &types);
	if (ret != 0) {
		rc_rpma_err("rpma_mr_remote_get", ret);
		goto out;
	}
	if (size < MIN_SIZE) {
		rc_err("remote region of %zu bytes, want at least %u", size, MIN_SIZE);
		goto out;
	}
	flush = (types & RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT) != 0 ?
		RPMA_FLUSH_TYPE_PERSISTENT : RPMA_FLUSH_TYPE_VISIBILITY;
	rc_step("remote region: %zu bytes, %s flush%s", size,
		flush == RPMA_FLUSH_TYPE_PERSISTENT ? "persistent" : "visibility",
		pcfg != NULL ? ", peer configuration applied" : "");
	if (pcfg != NULL) {
		ret = rpma_conn_apply_remote_peer_cfg(conn, pcfg);
		if (ret != 0) {
			rc_rpma_err("rpma_conn_apply_remote_peer_cfg", ret);
			goto out;
		}
	}

	for (i = 0; i < NR_PLACES; i++)
		total += write_place(size, i).len;
	/* The places' bytes, then the message with the seed. */
	buf = rc_alloc(total + RC_MSG_SIZE);
	if (buf == NULL)
		goto out;
	ret = rpma_mr_reg(peer, buf, total + RC_MSG_SIZE,
			  RPMA_MR_USAGE_WRITE_SRC | RPMA_MR_USAGE_SEND, &src);
	if (ret != 0) {
		rc_rpma_err("rpma_mr_reg", ret);
		goto out;
	}
	ret = rpma_conn_get_cq(conn, &cq);
	if (ret != 0) {
		rc_rpma_err("rpma_conn_get_cq", ret);
		goto out;
	}
	if (write_all(conn, cq, dst, size, src, buf, o->seed, flush) != 0)
		goto out;
	rc_msg_put(buf + total, 0, o->seed);
	ret = rpma_send(conn, src, total, RC_MSG_SIZE, RPMA_F_COMPLETION_ALWAYS, NULL);
	if (ret != 0) {
		rc_rpma_err("rpma_send", ret);
		goto out;
	}
	if (rc_cq_take(cq, &wc, 1, "the send") != 1 ||
	    rc_wc_check(&wc, IBV_WC_SEND, "send") != 0)
		goto out;
	rc_step("sent the seed %" PRIu32, o->seed);
	rc = 0;
out:
	if (src != NULL) {
		ret = rpma_mr_dereg(&src);
		if (ret != 0)
			rc = rc_rpma_err("rpma_mr_dereg", ret);
	}
	free(buf);
	if (pcfg != NULL)
		(void)rpma_peer_cfg_delete(&pcfg);
	(void)rpma_mr_remote_delete(&dst);
	return rc;
}

static int
run_client(const struct wf_opts *o, struct rpma_peer *peer)
{
	struct rpma_conn_cfg *cfg = NULL;
	struct rpma_conn *conn = NULL;
	int rc = -1;
	int ret;

	ret = rpma_conn_cfg_new(&cfg);
	if (ret != 0)
		return rc_rpma_err("rpma_conn_cfg_new", ret);
	ret = rpma_conn_cfg_set_timeout(cfg, RC_RESOLVE_TIMEOUT_MS);
	if (ret != 0) {
		rc_rpma_err("rpma_conn_cfg_set_timeout", ret);
		goto out;
	}
	if (rc_client_connect(peer, o->addr, o->port, cfg, NULL, NULL, 0, 0, &conn) != 0)
		goto out;
	rc_step("connected to %s:%s", o->addr, o->port);
	if (write_remote(o, peer, conn) != 0) {
		rc_conn_abort(&conn);
		goto out;
	}
	if (rc_disconnect_first(&conn) != 0)
		goto out;
	rc_step("disconnected");
	rc = 0;
out:
	ret = rpma_conn_cfg_delete(&cfg);
	if (ret != 0)
		rc = rc_rpma_err("rpma_conn_cfg_delete", ret);
	return rc;
}

int
main(int argc, char **argv)
{
	struct wf_opts o = { 0 };
	struct rpma_peer *peer = NULL;
	int rc;
	int ret;

	rc_prog = argv[0];
	ret = parse(argc, argv, &o);
	if (ret != 0)
		return ret;
	rc_start(o.timeout_s, o.verbose);

	if (rc_peer_new(o.addr, o.server ? RPMA_UTIL_IBV_CONTEXT_LOCAL :
			RPMA_UTIL_IBV_CONTEXT_REMOTE, &peer) != 0)
		return RC_EXIT_FAIL;
	rc = o.server ? run_server(&o, peer) : run_client(&o, peer);
	ret = rpma_peer_delete(&peer);
	if (ret != 0)
		rc = rc_rpma_err("rpma_peer_delete", ret);
	if (rc != 0)
		return RC_EXIT_FAIL;
	rc_step("%s: all checks passed", o.server ? "server" : "client");
	return RC_EXIT_OK;
}
