/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * droced's configuration loader: every ready file in config/ loads with exactly the values
 * it says, a file using every key yields each of them, and a table of bad files (written to
 * a temporary directory) each fails with the exact "FILE:LINE: message" that names the
 * offending line.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "droced_config.h"
#include "droce_test.h"

#ifndef DROCE_SOURCE_ROOT
#error "the build passes DROCE_SOURCE_ROOT, the source tree holding config/"
#endif

#define ERR_LEN		512
#define PATH_LEN	256

static struct droced_config *
new_cfg(void)
{
	return droce_test_malloc(sizeof(struct droced_config));
}

static void
load_ok(const char *path, struct droced_config *cfg)
{
	char err[ERR_LEN];
	int ret;

	droce_test_ctx("%s", path);
	ret = droced_config_load(path, cfg, err, sizeof(err));
	if (ret != 0)
		droce_test_fail(__FILE__, __LINE__, "load failed: %s", err);
}

static void
check_ipv4(const struct droced_ipv4_prefix *p, const char *addr, unsigned int len)
{
	uint8_t want[4];

	CHECK(inet_pton(AF_INET, addr, want) == 1);
	CHECK_MEM(p->addr, want, sizeof(want));
	CHECK_EQ_U64(p->len, len);
}

/* The i-th word of [eal] args. */
static const char *
eal_arg(const struct droced_config *cfg, unsigned int i)
{
	const char *w = cfg->eal_args;

	CHECK(i < cfg->nb_eal_args);
	while (i-- > 0)
		w += strlen(w) + 1;
	return w;
}

static void
check_default_limits(const struct droced_limits *l)
{
	CHECK_EQ_U64(l->max_qps, DROCED_LIMIT_QPS_DEFAULT);
	CHECK_EQ_U64(l->max_cqs, DROCED_LIMIT_CQS_DEFAULT);
	CHECK_EQ_U64(l->max_srqs, DROCED_LIMIT_SRQS_DEFAULT);
	CHECK_EQ_U64(l->max_mrs, DROCED_LIMIT_MRS_DEFAULT);
	CHECK_EQ_U64(l->max_mr_bytes, DROCED_LIMIT_MR_BYTES_DEFAULT);
	CHECK_EQ_U64(l->max_ahs, DROCED_LIMIT_AHS_DEFAULT);
	CHECK_EQ_U64(l->max_cqe, DROCED_LIMIT_CQE_DEFAULT);
	CHECK_EQ_U64(l->max_wr, DROCED_LIMIT_WR_DEFAULT);
	CHECK_EQ_U64(l->region_mb, DROCED_LIMIT_REGION_MB_DEFAULT);
}

/* What every ready file shares: one port, no IPv6, no neighbours, one engine, defaults. */
static void
check_ready(const struct droced_config *cfg, const char *prefix, const char *port,
	    const char *device, const char *ipv4, unsigned int lcore, unsigned int idle_sleep_us,
	    const char *socket)
{
	const struct droced_port_config *p = &cfg->ports[0];

	CHECK_EQ_U64(cfg->nb_eal_args, 2);
	CHECK_EQ_STR(eal_arg(cfg, 0), prefix);
	CHECK_EQ_STR(eal_arg(cfg, 1), "--no-pci");
	CHECK_EQ_U64(cfg->nb_ports, 1);
	CHECK_EQ_STR(p->name, port);
	CHECK_EQ_STR(p->device, device);
	check_ipv4(&p->ipv4, ipv4, 24);
	CHECK_EQ_U64(p->nb_ipv6, 0);
	CHECK_EQ_U64(p->mtu, 4096);
	CHECK_EQ_U64(p->nb_neigh, 0);
	CHECK(!p->rx_no_icrc);
	CHECK_EQ_U64(cfg->nb_lcores, 1);
	CHECK_EQ_U64(cfg->lcores[0], lcore);
	CHECK_EQ_U64(cfg->idle_sleep_us, idle_sleep_us);
	CHECK(cfg->early_retransmit);	/* on unless the file says otherwise */
	CHECK_EQ_STR(cfg->socket, socket);
	CHECK_EQ_I64(cfg->allowed_uid, -1);
	CHECK_EQ_I64(cfg->allowed_gid, -1);
	check_default_limits(&cfg->limits);
}

DROCE_TEST(ready_files)
{
	struct droced_config *cfg = new_cfg();

	load_ok(DROCE_SOURCE_ROOT "/config/pair-a.ini", cfg);
	check_ready(cfg, "--file-prefix=droce-a", "memif0",
		    "net_memif0,role=server,id=0,socket=/run/droce/pair.memif,bsize=8192",
		    "10.99.0.1", 1, 20, "/run/droce/a.sock");
	load_ok(DROCE_SOURCE_ROOT "/config/pair-b.ini", cfg);
	check_ready(cfg, "--file-prefix=droce-b", "memif0",
		    "net_memif0,role=client,id=0,socket=/run/droce/pair.memif,bsize=8192",
		    "10.99.0.2", 2, 20, "/run/droce/b.sock");
	load_ok(DROCE_SOURCE_ROOT "/config/veth-a.ini", cfg);
	check_ready(cfg, "--file-prefix=droce-veth-a", "veth0",
		    "net_af_packet0,iface=veth-droce-a,framesz=4352,blocksz=69632,framecnt=512",
		    "10.99.1.1", 1, 20,
		    "/run/droce/veth-a.sock");
	load_ok(DROCE_SOURCE_ROOT "/config/veth-b.ini", cfg);
	check_ready(cfg, "--file-prefix=droce-veth-b", "veth0",
		    "net_af_packet0,iface=veth-droce-b,framesz=4352,blocksz=69632,framecnt=512",
		    "10.99.1.2", 2, 20,
		    "/run/droce/veth-b.sock");
	load_ok(DROCE_SOURCE_ROOT "/config/default.ini", cfg);
	check_ready(cfg, "--file-prefix=droced", "ring0", "net_ring0", "10.99.2.1", 1, 0,
		    DROCED_CONFIG_SOCKET_DEFAULT);
}

/* What droced runs without --config is exactly what config/default.ini writes out. */
DROCE_TEST(builtin_is_default_ini)
{
	struct droced_config *file = new_cfg(), *builtin = new_cfg();

	load_ok(DROCE_SOURCE_ROOT "/config/default.ini", file);
	droced_config_builtin(builtin);
	check_ready(builtin, "--file-prefix=droced", "ring0", "net_ring0", "10.99.2.1", 1, 0,
		    DROCED_CONFIG_SOCKET_DEFAULT);
	/* Both start from a zeroed struct, so padding compares equal too. */
	CHECK(memcmp(file, builtin, sizeof(*file)) == 0);
}

/* ---- Files written here ---- */

static char tmpdir[PATH_LEN];

static void
tmp_path(char *path, const char *name)
{
	if (tmpdir[0] == '\0') {
		const char *base = getenv("TMPDIR");

		CHECK(snprintf(tmpdir, sizeof(tmpdir), "%s/droced_config.XXXXXX",
			       base != NULL ? base : "/tmp") < (int)sizeof(tmpdir));
		CHECK(mkdtemp(tmpdir) != NULL);
	}
	CHECK(snprintf(path, PATH_LEN, "%s/%s", tmpdir, name) < PATH_LEN);
}

/* Writes text to a file in the temporary directory, loads it, removes it; the result. */
static int
load_text(const char *name, const char *text, struct droced_config *cfg, char *path,
	  char *err)
{
	FILE *f;
	int ret;

	tmp_path(path, name);
	f = fopen(path, "w");
	CHECK(f != NULL);
	CHECK_EQ_U64(fwrite(text, 1, strlen(text), f), strlen(text));
	CHECK_EQ_U64(fclose(f), 0);
	ret = droced_config_load(path, cfg, err, ERR_LEN);
	CHECK_EQ_U64(unlink(path), 0);
	return ret;
}

DROCE_TEST(every_key)
{
	static const char text[] =
		"; every key, values other than the defaults\n"
		"[eal]\n"
		"args =  -l 0-5   --file-prefix=x\t--no-pci \n"
		"[port a]\n"
		"device = net_memif0,role=server\n"
		"ipv4 = 192.168.7.9/16\n"
		"ipv6 = fd00::1/64, 2001:db8::5/128\n"
		"mtu = 1024\n"
		"neighbour = 192.168.7.1 02:00:00:00:00:01,fd00::2 0A:bb:cc:dd:ee:ff\n"
		"rx_no_icrc = yes\n"
		"rss = no\n"
		"promiscuous = yes\n"
		"[port b-2]\n"
		"device = 0000:3b:00.0\n"
		"ipv4 = 10.1.2.3/8   ; a comment\n"
		"rx_no_icrc = false\n"
		"[engines]\n"
		"lcores = 1-3, 5\n"
		"idle_sleep_us = 100\n"
		"mode = interrupt\n"
		"idle_spin_us = 30\n"
		"early_retransmit = no\n"
		"[control]\n"
		"socket = /tmp/d.sock\n"
		"allowed_uid = 1000\n"
		"allowed_gid = -1\n"
		"[limits]\n"
		"max_qps = 10\n"
		"max_cqs = 11\n"
		"max_srqs = 12\n"
		"max_mrs = 13\n"
		"max_mr_bytes = 1099511627776\n"
		"max_ahs = 15\n"
		"max_cqe = 1048576\n"
		"max_wr = 32768\n"
		"region_mb = 4096\n";
	struct droced_config *cfg = new_cfg();
	const struct droced_port_config *a = &cfg->ports[0], *b = &cfg->ports[1];
	static const uint8_t mac0[6] = { 2, 0, 0, 0, 0, 1 };
	static const uint8_t mac1[6] = { 0x0a, 0xbb, 0xcc, 0xdd, 0xee, 0xff };
	char path[PATH_LEN], err[ERR_LEN];
	uint8_t ip[16];

	if (load_text("every_key.ini", text, cfg, path, err) != 0)
		droce_test_fail(__FILE__, __LINE__, "load failed: %s", err);
	CHECK_EQ_U64(cfg->nb_eal_args, 4);
	CHECK_EQ_STR(eal_arg(cfg, 0), "-l");
	CHECK_EQ_STR(eal_arg(cfg, 1), "0-5");
	CHECK_EQ_STR(eal_arg(cfg, 2), "--file-prefix=x");
	CHECK_EQ_STR(eal_arg(cfg, 3), "--no-pci");
	CHECK_EQ_U64(cfg->nb_ports, 2);
	CHECK_EQ_STR(a->name, "a");
	CHECK_EQ_STR(a->device, "net_memif0,role=server");
	check_ipv4(&a->ipv4, "192.168.7.9", 16);
	CHECK_EQ_U64(a->nb_ipv6, 2);
	CHECK(inet_pton(AF_INET6, "fd00::1", ip) == 1);
	CHECK_MEM(a->ipv6[0].addr, ip, 16);
	CHECK_EQ_U64(a->ipv6[0].len, 64);
	CHECK(inet_pton(AF_INET6, "2001:db8::5", ip) == 1);
	CHECK_MEM(a->ipv6[1].addr, ip, 16);
	CHECK_EQ_U64(a->ipv6[1].len, 128);
	CHECK_EQ_U64(a->mtu, 1024);
	CHECK_EQ_U64(a->nb_neigh, 2);
	CHECK_EQ_I64(a->neigh[0].family, AF_INET);
	CHECK(inet_pton(AF_INET, "192.168.7.1", ip) == 1);
	CHECK_MEM(a->neigh[0].ip, ip, 4);
	CHECK_MEM(a->neigh[0].mac, mac0, 6);
	CHECK_EQ_I64(a->neigh[1].family, AF_INET6);
	CHECK(inet_pton(AF_INET6, "fd00::2", ip) == 1);
	CHECK_MEM(a->neigh[1].ip, ip, 16);
	CHECK_MEM(a->neigh[1].mac, mac1, 6);
	CHECK(a->rx_no_icrc);
	CHECK(!a->rss);
	CHECK(a->promiscuous);
	CHECK_EQ_STR(b->name, "b-2");
	CHECK_EQ_STR(b->device, "0000:3b:00.0");
	check_ipv4(&b->ipv4, "10.1.2.3", 8);
	CHECK_EQ_U64(b->nb_ipv6, 0);
	CHECK_EQ_U64(b->mtu, DROCED_CONFIG_MTU_DEFAULT);
	CHECK_EQ_U64(b->nb_neigh, 0);
	CHECK(!b->rx_no_icrc);
	CHECK(b->rss);
	CHECK(!b->promiscuous);
	CHECK_EQ_U64(cfg->nb_lcores, 4);
	CHECK_EQ_U64(cfg->lcores[0], 1);
	CHECK_EQ_U64(cfg->lcores[1], 2);
	CHECK_EQ_U64(cfg->lcores[2], 3);
	CHECK_EQ_U64(cfg->lcores[3], 5);
	CHECK_EQ_U64(cfg->idle_sleep_us, 100);
	CHECK_EQ_U64(cfg->wait, DROCED_CONFIG_WAIT_INTERRUPT);
	CHECK_EQ_U64(cfg->idle_spin_us, 30);
	CHECK(!cfg->early_retransmit);
	CHECK_EQ_STR(cfg->socket, "/tmp/d.sock");
	CHECK_EQ_I64(cfg->allowed_uid, 1000);
	CHECK_EQ_I64(cfg->allowed_gid, -1);
	CHECK_EQ_U64(cfg->limits.max_qps, 10);
	CHECK_EQ_U64(cfg->limits.max_cqs, 11);
	CHECK_EQ_U64(cfg->limits.max_srqs, 12);
	CHECK_EQ_U64(cfg->limits.max_mrs, 13);
	CHECK_EQ_U64(cfg->limits.max_mr_bytes, DROCED_LIMIT_MR_BYTES_MAX);
	CHECK_EQ_U64(cfg->limits.max_ahs, 15);
	CHECK_EQ_U64(cfg->limits.max_cqe, DROCED_LIMIT_CQE_MAX);
	CHECK_EQ_U64(cfg->limits.max_wr, DROCED_LIMIT_WR_MAX);
	CHECK_EQ_U64(cfg->limits.region_mb, DROCED_LIMIT_REGION_MB_MAX);
	CHECK_EQ_U64(rmdir(tmpdir), 0);
	tmpdir[0] = '\0';
}

/*
 * A valid file of 5 lines, then a second port section (lines 6-8); each bad file adds a
 * line or two, so the line numbers below are easy to count.
 */
#define BASE \
	"[port p0]\n" \
	"device = net_ring0\n" \
	"ipv4 = 10.0.0.1/24\n" \
	"[engines]\n" \
	"lcores = 1\n"
#define PORT1_DEV BASE \
	"[port p1]\n" \
	"device = net_ring1\n"
#define PORT1 PORT1_DEV \
	"ipv4 = 10.0.1.1/24\n"

static const struct {
	const char *name;
	const char *text;
	unsigned int line;	/* 0: the message names no line */
	const char *msg;
} bad_files[] = {
	{ "empty", "", 0, "no sections (an empty file?)" },
	{ "only_comments", "; nothing\n\n   ; here\n", 0, "no sections (an empty file?)" },
	{ "unknown_section", BASE "[bogus]\n", 6, "unknown section [bogus]" },
	{ "port_without_name", BASE "[port]\n", 6, "[port] needs a name: [port NAME]" },
	{ "bad_port_name", BASE "[port a/b]\n", 6,
	  "port name 'a/b': use letters, digits, '_', '-', '.'" },
	{ "duplicate_section", BASE "[engines]\n", 6,
	  "duplicate section [engines] (first at line 4)" },
	{ "duplicate_port", BASE "[port  p0]\n", 6,
	  "duplicate section [port  p0] (first at line 1)" },
	{ "unknown_key", BASE "lcore = 1\n", 6, "unknown key 'lcore' in [engines]" },
	{ "duplicate_key", BASE "lcores = 2\n", 6, "duplicate key 'lcores' (first at line 5)" },
	{ "no_equals", BASE "idle_sleep_us 5\n", 6, "expected '[section]' or 'key = value'" },
	{ "no_key", BASE "= 5\n", 6, "no key before '='" },
	{ "bad_early", BASE "early_retransmit = often\n", 6,
	  "early_retransmit: 'often' is not true or false" },
	{ "empty_value", BASE "idle_sleep_us =   ; none\n", 6, "key 'idle_sleep_us' has no value" },
	{ "key_before_section", "lcores = 1\n" BASE, 1, "key 'lcores' before any section" },
	{ "no_bracket", BASE "[limits\n", 6, "section header without ']'" },
	{ "bad_ipv4", PORT1_DEV "ipv4 = 10.0.2.300/24\n", 8,
	  "ipv4: bad IPv4 address '10.0.2.300'" },
	{ "ipv4_no_prefix", PORT1_DEV "ipv4 = 10.0.2.3\n", 8,
	  "ipv4: '10.0.2.3' has no /prefix length" },
	{ "bad_prefix", PORT1_DEV "ipv4 = 10.0.2.3/33\n", 8,
	  "ipv4: bad prefix length '33' (1..32)" },
	{ "bad_prefix_zero", PORT1_DEV "ipv4 = 10.0.2.3/0\n", 8,
	  "ipv4: bad prefix length '0' (1..32)" },
	{ "ipv4_multicast", PORT1_DEV "ipv4 = 224.0.0.1/24\n", 8,
	  "ipv4: 224.0.0.1 is not a unicast address" },
	{ "bad_ipv6", PORT1 "ipv6 = fd00::1/64,fd00::1::2/64\n", 9,
	  "ipv6: bad IPv6 address 'fd00::1::2'" },
	{ "bad_ipv6_prefix", PORT1 "ipv6 = fd00::1/129\n", 9,
	  "ipv6: bad prefix length '129' (1..128)" },
	{ "ipv6_empty_item", PORT1 "ipv6 = fd00::1/64,,fd00::2/64\n", 9,
	  "ipv6: '' has no /prefix length" },
	{ "ipv6_too_many", PORT1 "ipv6 = fd00::1/64, fd00::2/64, fd00::3/64, fd00::4/64, "
	  "fd00::5/64, fd00::6/64, fd00::7/64, fd00::8/64, fd00::9/64\n", 9,
	  "ipv6: more than 8 addresses" },
	{ "ipv6_multicast", PORT1 "ipv6 = ff02::1/64\n", 9,
	  "ipv6: ff02::1 is not a unicast address" },
	{ "bad_mac", PORT1 "neighbour = 10.0.1.2 02:00:00:00:00\n", 9,
	  "neighbour: bad MAC '02:00:00:00:00'" },
	{ "bad_mac_digit", PORT1 "neighbour = 10.0.1.2 02:00:00:00:00:0g\n", 9,
	  "neighbour: bad MAC '02:00:00:00:00:0g'" },
	{ "multicast_mac", PORT1 "neighbour = 10.0.1.2 01:00:5e:00:00:01\n", 9,
	  "neighbour: 01:00:5e:00:00:01 is not a unicast MAC" },
	{ "neighbour_no_mac", PORT1 "neighbour = 10.0.1.2\n", 9,
	  "neighbour: '10.0.1.2' is not 'IP MAC'" },
	{ "neighbour_bad_ip", PORT1 "neighbour = 10.0.1 02:00:00:00:00:01\n", 9,
	  "neighbour: bad IP address '10.0.1'" },
	{ "neighbour_twice", PORT1
	  "neighbour = 10.0.1.2 02:00:00:00:00:01, 10.0.1.2 02:00:00:00:00:02\n", 9,
	  "neighbour: 10.0.1.2 listed twice" },
	{ "bad_lcore_list", "[port p0]\ndevice = x\nipv4 = 10.0.0.1/24\n[engines]\nlcores = 1-\n",
	  5, "lcores: bad lcore list (want e.g. 1, 1-2 or 1,3)" },
	{ "bad_lcore_range", "[port p0]\ndevice = x\nipv4 = 10.0.0.1/24\n[engines]\nlcores = 3-2\n",
	  5, "lcores: bad lcore list (want e.g. 1, 1-2 or 1,3)" },
	{ "bad_lcore_word", "[port p0]\ndevice = x\nipv4 = 10.0.0.1/24\n[engines]\nlcores = one\n",
	  5, "lcores: bad lcore list (want e.g. 1, 1-2 or 1,3)" },
	{ "lcore_twice", "[port p0]\ndevice = x\nipv4 = 10.0.0.1/24\n[engines]\nlcores = 1-3,2\n",
	  5, "lcores: lcore 2 listed twice" },
	{ "lcore_too_big", "[port p0]\ndevice = x\nipv4 = 10.0.0.1/24\n[engines]\nlcores = 128\n",
	  5, "lcores: lcore 128 out of range 0..127" },
	{ "missing_device", BASE "[port p1]\nipv4 = 10.0.1.1/24\n", 6,
	  "[port p1] has no 'device' (required)" },
	{ "missing_ipv4", BASE "\n[port p1]\ndevice = net_ring1\n", 7,
	  "[port p1] has no 'ipv4' (required)" },
	{ "missing_lcores",
	  "[port p0]\ndevice = x\nipv4 = 10.0.0.1/24\n[engines]\nidle_sleep_us = 1\n", 4,
	  "[engines] has no 'lcores' (required)" },
	{ "no_engines", "[port p0]\ndevice = x\nipv4 = 10.0.0.1/24\n", 0,
	  "no [engines] section (its 'lcores' is required)" },
	{ "no_port", "[engines]\nlcores = 1\n", 0, "no [port NAME] section" },
	{ "same_device", BASE "[port p1]\ndevice = net_ring0\n", 7,
	  "device 'net_ring0' is also [port p0]'s" },
	{ "mtu_too_big", PORT1 "mtu = 8192\n", 9, "mtu: 8192 out of range 256..4096" },
	{ "mtu_too_small", PORT1 "mtu = 128\n", 9, "mtu: 128 out of range 256..4096" },
	{ "mtu_not_ib", PORT1 "mtu = 1500\n", 9, "mtu: 1500 is not 256, 512, 1024, 2048 or 4096" },
	{ "mtu_not_number", PORT1 "mtu = 4k\n", 9, "mtu: '4k' is not a number" },
	{ "mtu_negative", PORT1 "mtu = -4096\n", 9, "mtu: '-4096' is not a number" },
	{ "mtu_overflow", PORT1 "mtu = 18446744073709551616\n", 9,
	  "mtu: '18446744073709551616' is not a number" },
	{ "bad_bool", PORT1 "rx_no_icrc = maybe\n", 9, "rx_no_icrc: 'maybe' is not true or false" },
	{ "idle_too_long", BASE "idle_sleep_us = 1000001\n", 6,
	  "idle_sleep_us: 1000001 out of range 0..1000000" },
	{ "bad_mode", BASE "mode = sleepy\n", 6, "mode: 'sleepy' is not poll, adaptive or interrupt" },
	{ "spin_too_long", BASE "idle_spin_us = 2000000\n", 6,
	  "idle_spin_us: 2000000 out of range 0..1000000" },
	{ "relative_socket", BASE "[control]\nsocket = run/d.sock\n", 7,
	  "socket: 'run/d.sock' is not an absolute path" },
	{ "bad_uid", BASE "[control]\nallowed_uid = -2\n", 7,
	  "allowed_uid: '-2' is not -1 or an id 0..4294967294" },
	{ "uid_too_big", BASE "[control]\nallowed_gid = 4294967295\n", 7,
	  "allowed_gid: '4294967295' is not -1 or an id 0..4294967294" },
	{ "max_qps_zero", BASE "[limits]\nmax_qps = 0\n", 7,
	  "max_qps: 0 out of range 1..16777214" },
	{ "max_wr_too_big", BASE "[limits]\nmax_wr = 32769\n", 7,
	  "max_wr: 32769 out of range 1..32768" },
	{ "max_cqe_too_big", BASE "[limits]\nmax_cqe = 1048577\n", 7,
	  "max_cqe: 1048577 out of range 1..1048576" },
	{ "max_mrs_too_big", BASE "[limits]\nmax_mrs = 16777216\n", 7,
	  "max_mrs: 16777216 out of range 1..16777215" },
	{ "max_mr_bytes_too_big", BASE "[limits]\nmax_mr_bytes = 1099511627777\n", 7,
	  "max_mr_bytes: 1099511627777 out of range 1..1099511627776" },
	{ "region_zero", BASE "[limits]\nregion_mb = 0\n", 7,
	  "region_mb: 0 out of range 1..4096" },
	{ "region_too_big", BASE "[limits]\nregion_mb = 4097\n", 7,
	  "region_mb: 4097 out of range 1..4096" },
	{ "unknown_limit", BASE "[limits]\nmax_pds = 5\n", 7, "unknown key 'max_pds' in [limits]" },
	{ "unknown_cc_key", BASE "[congestion]\nrpg_foo = 5\n", 7,
	  "unknown key 'rpg_foo' in [congestion] (doc/congestion.md lists them)" },
	{ "cc_out_of_range", BASE "[congestion]\ncnp_dscp = 64\n", 7,
	  "cnp_dscp: '64' is not a number from 0 to 63" },
	{ "cc_bad_prios", PORT1 "[congestion p1]\nroce_rp_enable = 9\n", 10,
	  "roce_rp_enable: '9' is not a list of priorities 0-7 (as \"0-7\", \"3,4\" or \"none\")" },
	{ "cc_no_such_port", BASE "[congestion p9]\nvlan = 5\n", 6, "[congestion p9]: no [port p9]" },
	{ "cc_twice", BASE "[congestion]\nvlan = 5\n[congestion]\n", 8,
	  "duplicate section [congestion] (first at line 6)" },
};

/* [congestion] for every port, then [congestion NAME] for one: lib/cc's defaults below. */
DROCE_TEST(congestion_per_port)
{
	struct droced_config *cfg = new_cfg();
	char path[PATH_LEN], err[ERR_LEN];

	CHECK_EQ_I64(load_text("cc", PORT1 "[congestion]\nroce_dscp = 26\nrpg_ai_rate = 10\n"
			       "[congestion p1]\nrpg_ai_rate = 40\nroce_rp_enable = 3,4\n"
			       "vlan = 100\n", cfg, path, err), 0);
	CHECK_EQ_STR(err, "");
	CHECK_EQ_U64(cfg->ports[0].cc.roce_dscp, 26);
	CHECK_EQ_U64(cfg->ports[0].cc.rpg_ai_rate, 10);
	CHECK_EQ_U64(cfg->ports[0].cc.roce_rp_enable, 0);
	CHECK_EQ_U64(cfg->ports[0].cc.vlan, DROCE_CC_NO_VLAN);
	CHECK_EQ_U64(cfg->ports[1].cc.roce_dscp, 26);
	CHECK_EQ_U64(cfg->ports[1].cc.rpg_ai_rate, 40);
	CHECK_EQ_U64(cfg->ports[1].cc.roce_rp_enable, 0x18);
	CHECK_EQ_U64(cfg->ports[1].cc.vlan, 100);
	CHECK_EQ_U64(cfg->ports[1].cc.cnp_dscp, 48);		/* untouched: the default */
	CHECK_EQ_U64(cfg->ports[1].cc.rpg_time_reset, 300);
	CHECK_EQ_U64(rmdir(tmpdir), 0);
	tmpdir[0] = '\0';
}

DROCE_TEST(bad_files_name_the_line)
{
	struct droced_config *cfg = new_cfg();
	char path[PATH_LEN], err[ERR_LEN], want[ERR_LEN];
	size_t i;

	for (i = 0; i < sizeof(bad_files) / sizeof(bad_files[0]); i++) {
		droce_test_ctx("%s", bad_files[i].name);
		CHECK_EQ_I64(load_text(bad_files[i].name, bad_files[i].text, cfg, path, err), -1);
		if (bad_files[i].line != 0)
			snprintf(want, sizeof(want), "%s:%u: %s", path, bad_files[i].line,
				 bad_files[i].msg);
		else
			snprintf(want, sizeof(want), "%s: %s", path, bad_files[i].msg);
		CHECK_EQ_STR(err, want);
	}
	CHECK_EQ_U64(rmdir(tmpdir), 0);
	tmpdir[0] = '\0';
}

/* Without mode: poll, or adaptive where idle_sleep_us asks the engines to sleep (as before modes). */
DROCE_TEST(mode_follows_idle_sleep)
{
	struct droced_config *cfg = new_cfg();
	char path[PATH_LEN], err[ERR_LEN];

	CHECK_EQ_I64(load_text("poll", BASE, cfg, path, err), 0);
	CHECK_EQ_U64(cfg->wait, DROCED_CONFIG_WAIT_POLL);
	CHECK_EQ_I64(load_text("napping", BASE "idle_sleep_us = 20\n", cfg, path, err), 0);
	CHECK_EQ_U64(cfg->wait, DROCED_CONFIG_WAIT_ADAPTIVE);
	CHECK_EQ_I64(load_text("adaptive", BASE "mode = adaptive\n", cfg, path, err), 0);
	CHECK_EQ_U64(cfg->wait, DROCED_CONFIG_WAIT_ADAPTIVE);
	CHECK_EQ_U64(cfg->idle_sleep_us, 0);
	CHECK_EQ_I64(load_text("forced_poll", BASE "idle_sleep_us = 20\nmode = poll\n", cfg, path,
			       err), 0);
	CHECK_EQ_U64(cfg->wait, DROCED_CONFIG_WAIT_POLL);
	CHECK_EQ_U64(rmdir(tmpdir), 0);
	tmpdir[0] = '\0';
}

DROCE_TEST(missing_file)
{
	struct droced_config *cfg = new_cfg();
	char err[ERR_LEN];

	CHECK_EQ_I64(droced_config_load("/nonexistent/droced.ini", cfg, err, sizeof(err)), -1);
	CHECK_EQ_STR(err, "/nonexistent/droced.ini: cannot open: No such file or directory");
}

/* A short error buffer gets a cut, NUL-ended message; none at all is allowed. */
DROCE_TEST(short_error_buffer)
{
	struct droced_config *cfg = new_cfg();
	char err[8];

	memset(err, 'x', sizeof(err));
	CHECK_EQ_I64(droced_config_load("/nonexistent/droced.ini", cfg, err, sizeof(err)), -1);
	CHECK_EQ_STR(err, "/nonexi");
	CHECK_EQ_I64(droced_config_load("/nonexistent/droced.ini", cfg, NULL, 0), -1);
}
