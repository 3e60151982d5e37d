/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * app/droce-perf/perf_oob.c against byte sequences captured from Debian 12's unmodified
 * ib_write_bw (perftest 4.5+0.17, "6.06") as the server, droce0 GID 0 ::ffff:10.99.0.1:
 * a fake perftest peer in a thread replays them over loopback TCP and checks that our
 * side sends exactly what a perftest client would.
 */

#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "droce_test.h"
#include "perf_oob.h"

/* The server's destination ib_write_bw sent (out_reads 1, QPN 2, PSN 0x24831b). */
static const char real_server_dest[PERF_OOB_DEST_GID_LEN] =
	"0000:0001:000002:24831b:00000101:00007fd28f942000:"
	"00:00:00:00:00:00:00:00:00:00:ff:ff:0a:63:00:01:00000000:";
/* The client's destination our hand-made peer sent, which ib_write_bw accepted. */
static const char client_dest[PERF_OOB_DEST_GID_LEN] =
	"0000:0010:000123:0abcde:00001234:00007f0000001000:"
	"00:00:00:00:00:00:00:00:00:00:ff:ff:0a:63:00:02:00000000:";
static const char version[16] = "6.06";
static const uint8_t page_be[4] = { 0, 0, 0x10, 0 }, line_be[4] = { 0, 0, 0, 0x40 };

static struct perf_oob_dest
client_dest_struct(void)
{
	struct perf_oob_dest d = { .lid = 0, .out_reads = 16, .qpn = 0x123, .psn = 0xabcde,
				   .rkey = 0x1234, .vaddr = 0x7f0000001000ull };
	static const uint8_t gid[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 99, 0, 2 };

	memcpy(d.gid, gid, 16);
	return d;
}

DROCE_TEST(format_matches_perftest)
{
	struct perf_oob_dest d = client_dest_struct();
	char buf[PERF_OOB_DEST_GID_LEN];

	CHECK_EQ_U64(perf_oob_format_dest(&d, true, buf, sizeof(buf)), 108);
	CHECK_MEM(buf, client_dest, 108);
	CHECK_EQ_U64(perf_oob_format_dest(&d, false, buf, sizeof(buf)), 59);
	CHECK_MEM(buf, "0000:0010:000123:0abcde:00001234:00007f0000001000:00000000", 59);
	CHECK_EQ_U64(perf_oob_format_dest(&d, true, buf, 107), 0);
}

DROCE_TEST(parse_real_perftest_dest)
{
	struct perf_oob_dest d, back;
	char buf[PERF_OOB_DEST_GID_LEN];

	CHECK_EQ_I64(perf_oob_parse_dest(real_server_dest, 108, true, &d), 0);
	CHECK_EQ_U64(d.lid, 0);
	CHECK_EQ_U64(d.out_reads, 1);
	CHECK_EQ_U64(d.qpn, 2);
	CHECK_EQ_U64(d.psn, 0x24831b);
	CHECK_EQ_U64(d.rkey, 0x101);
	CHECK_EQ_U64(d.vaddr, 0x7fd28f942000ull);
	CHECK_EQ_U64(d.gid[10], 0xff);
	CHECK_EQ_U64(d.gid[12], 10);
	CHECK_EQ_U64(d.gid[15], 1);
	perf_oob_format_dest(&d, true, buf, sizeof(buf));
	CHECK_MEM(buf, real_server_dest, 108);
	CHECK_EQ_I64(perf_oob_parse_dest(buf, 59, false, &back), -1);
	CHECK_EQ_I64(perf_oob_parse_dest("0000:0010:000123:0abcde:00001234:00007f0000001000:00000000",
					 59, false, &back), 0);
	CHECK_EQ_U64(back.qpn, 0x123);
	/* Malformed: a non-hex digit, a missing field. */
	memcpy(buf, real_server_dest, 108);
	buf[12] = 'x';
	CHECK_EQ_I64(perf_oob_parse_dest(buf, 108, true, &back), -1);
	memcpy(buf, real_server_dest, 108);
	buf[104] = '\0';
	CHECK_EQ_I64(perf_oob_parse_dest(buf, 108, true, &back), -1);
}

/* The fake perftest server: reads what a client writes first, checks it, answers. */
struct peer {
	int lfd;
	bool old_version;
	int fails;
	char why[128];
};

static bool
peer_step(struct peer *p, int fd, const void *expect, const void *answer, size_t n)
{
	char buf[256];
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, buf + got, n - got);

		if (r <= 0)
			break;
		got += (size_t)r;
	}
	if (got != n || (expect && memcmp(buf, expect, n))) {
		snprintf(p->why, sizeof(p->why), "step of %zu bytes: got %zu, <%.*s>", n, got,
			 (int)got, buf);
		p->fails++;
		return false;
	}
	return write(fd, answer, n) == (ssize_t)n;
}

static void *
peer_run(void *arg)
{
	struct peer *p = arg;
	int fd = accept(p->lfd, NULL, NULL);
	char old[16] = "5.60";

	if (fd < 0) {
		p->fails++;
		return NULL;
	}
	if (!peer_step(p, fd, version, p->old_version ? old : version, 16) ||
	    p->old_version)
		goto out;
	if (!peer_step(p, fd, page_be, page_be, 4) || !peer_step(p, fd, line_be, line_be, 4) ||
	    !peer_step(p, fd, "5", "3", 2))
		goto out;
	for (int i = 0; i < 3; i++)	/* dest, dest again, the RTR barrier */
		if (!peer_step(p, fd, client_dest, real_server_dest, 108))
			goto out;
	/* End barrier, reports, close. */
	if (!peer_step(p, fd, client_dest, real_server_dest, 108))
		goto out;
	for (int i = 0; i < 5; i++) {
		uint8_t zero[8] = { 0 };

		if (!peer_step(p, fd, NULL, zero, 8))
			goto out;
	}
	if (!peer_step(p, fd, client_dest, real_server_dest, 108))
		goto out;
	peer_step(p, fd, "done", "done", 5);
out:
	close(fd);
	return NULL;
}

static uint16_t
start_peer(struct peer *p, pthread_t *t)
{
	struct sockaddr_in6 sa;
	socklen_t len = sizeof(sa);
	char err[128];

	p->lfd = perf_oob_listen(0, err, sizeof(err));
	CHECK(p->lfd >= 0);
	CHECK(getsockname(p->lfd, (struct sockaddr *)&sa, &len) == 0);
	CHECK(pthread_create(t, NULL, peer_run, p) == 0);
	return ntohs(sa.sin6_port);
}

DROCE_TEST(client_against_fake_ib_write_bw)
{
	struct perf_oob_params prm = { .cycle_buffer = 4096, .cache_line_size = 64, .mtu = 5,
				       .use_gid = true };
	struct perf_oob_dest mine = client_dest_struct(), theirs;
	struct perf_oob_bw_report rep = { .size = 65536, .iters = 5000, .bw_avg = 1.5 }, rrep;
	struct perf_oob_conn c;
	struct peer p = { 0 };
	pthread_t t;
	uint16_t port = start_peer(&p, &t);

	CHECK_EQ_I64(perf_oob_connect(&c, "127.0.0.1", port, 5000), 0);
	CHECK_EQ_I64(perf_oob_setup(&c, &prm), 0);
	CHECK_EQ_STR(c.rem_version, "6.06");
	CHECK_EQ_U64(c.cycle_buffer, 4096);
	CHECK_EQ_U64(c.cache_line_size, 64);
	CHECK_EQ_U64(c.mtu, 3);	/* the peer's smaller MTU wins */
	for (int i = 0; i < 3; i++) {
		CHECK_EQ_I64(perf_oob_hand_shake(&c, &mine, &theirs), 0);
		CHECK_EQ_U64(theirs.qpn, 2);
		CHECK_EQ_U64(theirs.psn, 0x24831b);
	}
	CHECK_EQ_I64(perf_oob_check_gid(&c, &mine, &theirs), 0);
	CHECK_EQ_I64(perf_oob_hand_shake(&c, &mine, &theirs), 0);
	CHECK_EQ_I64(perf_oob_xchg_bw_report(&c, &rep, &rrep), 0);
	CHECK_EQ_I64(perf_oob_close(&c, &mine, &theirs), 0);
	pthread_join(t, NULL);
	close(p.lfd);
	droce_test_ctx("%s", p.why);
	CHECK_EQ_I64(p.fails, 0);
}

DROCE_TEST(rejects_old_version)
{
	struct perf_oob_params prm = { .cycle_buffer = 4096, .cache_line_size = 64, .mtu = 5,
				       .use_gid = true };
	struct perf_oob_conn c;
	struct peer p = { .old_version = true };
	pthread_t t;
	uint16_t port = start_peer(&p, &t);

	CHECK_EQ_I64(perf_oob_connect(&c, "127.0.0.1", port, 5000), 0);
	CHECK_EQ_I64(perf_oob_setup(&c, &prm), -1);
	CHECK(strstr(c.err, "5.60") != NULL);
	perf_oob_conn_close(&c);
	pthread_join(t, NULL);
	close(p.lfd);
}

DROCE_TEST(gid_types_must_match)
{
	struct perf_oob_dest a = client_dest_struct(), b = a;
	struct perf_oob_conn c = { .fd = -1 };

	b.gid[10] = 0;	/* no longer IPv4-mapped */
	b.gid[0] = 0xfe;
	CHECK_EQ_I64(perf_oob_check_gid(&c, &a, &b), -1);
	CHECK_EQ_I64(perf_oob_check_gid(&c, &a, &a), 0);
}

DROCE_TEST(timeout_when_peer_silent)
{
	struct perf_oob_conn c;
	char err[64], in[16];
	int lfd = perf_oob_listen(0, err, sizeof(err));
	struct sockaddr_in6 sa;
	socklen_t len = sizeof(sa);

	CHECK(lfd >= 0);
	CHECK(getsockname(lfd, (struct sockaddr *)&sa, &len) == 0);
	CHECK_EQ_I64(perf_oob_connect(&c, "127.0.0.1", ntohs(sa.sin6_port), 200), 0);
	CHECK_EQ_I64(perf_oob_xchg(&c, version, in, 16), -1);
	CHECK(strstr(c.err, "timed out") != NULL);
	perf_oob_conn_close(&c);
	close(lfd);
}
