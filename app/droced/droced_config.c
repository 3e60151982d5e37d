/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * droced's configuration file, in two passes. rte_cfgfile keeps no line numbers, silently
 * skips lines that are neither a section nor "key = value", merges a repeated section into
 * the first one and keeps repeated keys, so the first pass reads the file itself, with
 * rte_cfgfile's own rules for comments, stripping and line length, and checks the layout:
 * known sections and keys, each once, and where each one is. The second pass takes the
 * values from rte_cfgfile and checks each against the schema (doc/configuration.md).
 */

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <rte_config.h>
#include <rte_cfgfile.h>
#include <rte_common.h>

#include "droced_config.h"

/* rte_cfgfile_load's line buffer: a longer line is an error there. */
#define SCAN_LINE_MAX		(CFG_NAME_LEN + CFG_VALUE_LEN + 4)
/* [eal] [engines] [control] [limits] [metrics] [congestion], and per port [port X]
 * [congestion X] */
#define SCAN_MAX_SECTIONS	(6 + 2 * DROCED_CONFIG_MAX_PORTS)
#define SCAN_MAX_KEYS		32	/* the most keys a section kind has ([congestion]) */
#define CONGESTION_PREFIX	"congestion"
#define COMMENT_CHAR		CFG_DEFAULT_COMMENT_CHARACTER
#define PORT_PREFIX		"port"
#define IPV4_PREFIX_MAX		32
#define IPV6_PREFIX_MAX		128

_Static_assert(DROCED_CONFIG_VALUE_MAX == CFG_VALUE_LEN, "a value fits its field");

enum sec_kind {
	SEC_EAL,
	SEC_PORT,
	SEC_ENGINES,
	SEC_CONTROL,
	SEC_LIMITS,
	SEC_METRICS,
	SEC_CONGESTION,		/* [congestion]: every port's; [congestion NAME]: one port's */
	SEC_NB_KINDS,
};

static const char *const sec_names[SEC_NB_KINDS] = {
	[SEC_EAL] = "eal",
	[SEC_PORT] = PORT_PREFIX,
	[SEC_ENGINES] = "engines",
	[SEC_CONTROL] = "control",
	[SEC_LIMITS] = "limits",
	[SEC_METRICS] = "metrics",
	[SEC_CONGESTION] = CONGESTION_PREFIX,
};

static const char *const sec_keys[SEC_NB_KINDS][SCAN_MAX_KEYS + 1] = {
	[SEC_EAL] = { "args", NULL },
	[SEC_PORT] = { "device", "ipv4", "ipv6", "mtu", "neighbour", "rx_no_icrc", "rss",
		       "promiscuous", NULL },
	[SEC_ENGINES] = { "lcores", "mode", "idle_spin_us", "idle_sleep_us", "early_retransmit",
			  NULL },
	[SEC_CONTROL] = { "socket", "allowed_uid", "allowed_gid", NULL },
	[SEC_LIMITS] = { "max_qps", "max_cqs", "max_srqs", "max_mrs", "max_mr_bytes",
			 "max_ahs", "max_cqe", "max_wr", "region_mb", NULL },
	[SEC_METRICS] = { "listen", "max_qps", NULL },
	/* SEC_CONGESTION: lib/cc's parameter names (droce_cc_param_name), checked there */
};
_Static_assert(SCAN_MAX_KEYS >= sizeof(struct droce_cc_params) / sizeof(uint32_t),
	       "[congestion] holds every DROCE_CC_PARAMS name");

struct scan_key {
	char name[CFG_NAME_LEN];
	unsigned int line;
};

struct scan_sec {
	char name[CFG_NAME_LEN];	/* as rte_cfgfile names it */
	char port[DROCED_CONFIG_NAME_MAX];	/* SEC_PORT, SEC_CONGESTION: NAME ("": none) */
	enum sec_kind kind;
	unsigned int line;
	unsigned int nb_keys;
	struct scan_key keys[SCAN_MAX_KEYS];
};

struct scan {
	const char *path;
	char *err;
	size_t errlen;
	struct rte_cfgfile *cfgfile;
	unsigned int nb_secs;
	struct scan_sec secs[SCAN_MAX_SECTIONS];
};

/* Formats "PATH:LINE: message" (line 0: "PATH: message") into s->err; returns -1. */
static int __attribute__((format(printf, 3, 4)))
fail(struct scan *s, unsigned int line, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (s->errlen == 0)
		return -1;
	if (line != 0)
		n = snprintf(s->err, s->errlen, "%s:%u: ", s->path, line);
	else
		n = snprintf(s->err, s->errlen, "%s: ", s->path);
	if (n < 0 || (size_t)n >= s->errlen)
		return -1;
	va_start(ap, fmt);
	vsnprintf(s->err + n, s->errlen - n, fmt, ap);
	va_end(ap);
	return -1;
}

/* Strips leading and trailing white space in place, as rte_cfgfile does. */
static char *
strip(char *str)
{
	size_t len;

	while (isspace((unsigned char)*str))
		str++;
	len = strlen(str);
	while (len > 0 && isspace((unsigned char)str[len - 1]))
		str[--len] = '\0';
	return str;
}

/* ---- First pass: the layout ---- */

static int
scan_section(struct scan *s, unsigned int line, char *text)
{
	char *end = strchr(text, ']');
	struct scan_sec *sec;
	const char *port = NULL;
	enum sec_kind kind;
	char *name;
	unsigned int i;

	if (end == NULL)
		return fail(s, line, "section header without ']'");
	if (*strip(end + 1) != '\0')
		return fail(s, line, "text after the section header");
	*end = '\0';
	name = strip(text + 1);
	for (kind = 0; kind < SEC_NB_KINDS; kind++)
		if (kind != SEC_PORT && strcmp(name, sec_names[kind]) == 0)
			break;
	if (kind == SEC_NB_KINDS) {
		const char *prefix = strncmp(name, CONGESTION_PREFIX, strlen(CONGESTION_PREFIX)) == 0 ?
				     CONGESTION_PREFIX : PORT_PREFIX;
		size_t plen = strlen(prefix);

		if (strncmp(name, prefix, plen) != 0 ||
		    (name[plen] != '\0' && !isspace((unsigned char)name[plen])))
			return fail(s, line, "unknown section [%s]", name);
		port = strip(name + plen);
		if (*port == '\0')
			return fail(s, line, "[%s] needs a name: [port NAME]", name);
		if (strlen(port) >= DROCED_CONFIG_NAME_MAX)
			return fail(s, line, "port name '%s' longer than %d characters", port,
				    DROCED_CONFIG_NAME_MAX - 1);
		for (i = 0; port[i] != '\0'; i++)
			if (!isalnum((unsigned char)port[i]) && strchr("_-.", port[i]) == NULL)
				return fail(s, line, "port name '%s': use letters, digits, %s",
					    port, "'_', '-', '.'");
		kind = strcmp(prefix, PORT_PREFIX) == 0 ? SEC_PORT : SEC_CONGESTION;
	}
	for (i = 0; i < s->nb_secs; i++)
		if (s->secs[i].kind == kind && strcmp(s->secs[i].port, port != NULL ? port : "") == 0)
			return fail(s, line, "duplicate section [%s] (first at line %u)", name,
				    s->secs[i].line);
	if (s->nb_secs == SCAN_MAX_SECTIONS)
		return fail(s, line, "more than %d sections ([port NAME] and [congestion NAME] "
			    "count one each per port, at most %d ports)", SCAN_MAX_SECTIONS,
			    DROCED_CONFIG_MAX_PORTS);
	sec = &s->secs[s->nb_secs++];
	memset(sec, 0, sizeof(*sec));
	snprintf(sec->name, sizeof(sec->name), "%s", name);
	if (port != NULL)
		snprintf(sec->port, sizeof(sec->port), "%s", port);
	sec->kind = kind;
	sec->line = line;
	return 0;
}

static int
scan_entry(struct scan *s, unsigned int line, char *text)
{
	char *eq = strchr(text, '=');
	const char *const *k;
	struct scan_sec *sec;
	char *key, *value;
	unsigned int i;

	if (eq == NULL)
		return fail(s, line, "expected '[section]' or 'key = value'");
	*eq = '\0';
	key = strip(text);
	value = strip(eq + 1);
	if (*key == '\0')
		return fail(s, line, "no key before '='");
	if (s->nb_secs == 0)
		return fail(s, line, "key '%s' before any section", key);
	sec = &s->secs[s->nb_secs - 1];
	if (sec->kind == SEC_CONGESTION) {
		struct droce_cc_params scratch;
		char why[160];

		/* The value is checked when the ports' parameters are built (load_congestion). */
		droce_cc_params_default(&scratch);
		if (droce_cc_param_set(&scratch, key, "0", why, sizeof(why)) == -ENOENT)
			return fail(s, line, "unknown key '%s' in [%s] (doc/congestion.md lists "
				    "them)", key, sec->name);
	} else {
		for (k = sec_keys[sec->kind]; *k != NULL; k++)
			if (strcmp(*k, key) == 0)
				break;
		if (*k == NULL)
			return fail(s, line, "unknown key '%s' in [%s]", key, sec->name);
	}
	for (i = 0; i < sec->nb_keys; i++)
		if (strcmp(sec->keys[i].name, key) == 0)
			return fail(s, line, "duplicate key '%s' (first at line %u)", key,
				    sec->keys[i].line);
	if (*value == '\0')
		return fail(s, line, "key '%s' has no value", key);
	/* rte_cfgfile would cut it short (its "\;" escape only shortens a value). */
	if (strlen(value) >= CFG_VALUE_LEN)
		return fail(s, line, "value of '%s' longer than %d characters", key,
			    CFG_VALUE_LEN - 1);
	snprintf(sec->keys[sec->nb_keys].name, CFG_NAME_LEN, "%s", key);
	sec->keys[sec->nb_keys].line = line;
	sec->nb_keys++;
	return 0;
}

static int
scan_file(struct scan *s, FILE *f)
{
	char buf[SCAN_LINE_MAX];
	unsigned int line = 0;
	char *text, *pos;
	size_t len;

	while (fgets(buf, sizeof(buf), f) != NULL) {
		line++;
		len = strlen(buf);
		if (len >= sizeof(buf) - 1 && buf[len - 1] != '\n')
			return fail(s, line, "line longer than %zu characters", sizeof(buf) - 2);
		/* rte_cfgfile: the first ';' starts a comment unless "\;" escapes it. */
		pos = memchr(buf, COMMENT_CHAR, len);
		if (pos != NULL && (pos == buf || pos[-1] != '\\'))
			*pos = '\0';
		text = strip(buf);
		if (*text == '\0')
			continue;
		if (*text == '[' ? scan_section(s, line, text) < 0 : scan_entry(s, line, text) < 0)
			return -1;
	}
	if (ferror(f))
		return fail(s, 0, "read error");
	return 0;
}

/* ---- Second pass: the values ---- */

static const struct scan_key *
sec_key(const struct scan_sec *sec, const char *key)
{
	unsigned int i;

	for (i = 0; i < sec->nb_keys; i++)
		if (strcmp(sec->keys[i].name, key) == 0)
			return &sec->keys[i];
	return NULL;
}

static const struct scan_sec *
find_sec(const struct scan *s, enum sec_kind kind)
{
	unsigned int i;

	for (i = 0; i < s->nb_secs; i++)
		if (s->secs[i].kind == kind)
			return &s->secs[i];
	return NULL;
}

/* The value of key in sec, or NULL when absent; *line is where it is (the section's line). */
static const char *
get(const struct scan *s, const struct scan_sec *sec, const char *key, unsigned int *line)
{
	const struct scan_key *k = sec_key(sec, key);

	*line = k != NULL ? k->line : sec->line;
	if (k == NULL)
		return NULL;
	return rte_cfgfile_get_entry(s->cfgfile, sec->name, key);
}

static int
require(struct scan *s, const struct scan_sec *sec, const char *key, const char **value,
	unsigned int *line)
{
	*value = get(s, sec, key, line);
	if (*value == NULL)
		return fail(s, *line, "[%s] has no '%s' (required)", sec->name, key);
	return 0;
}

/* Decimal digits only, no sign, no overflow. */
static bool
parse_u64(const char *str, uint64_t *v)
{
	uint64_t n = 0;

	if (*str == '\0')
		return false;
	for (; *str != '\0'; str++) {
		unsigned int d = (unsigned char)*str - '0';

		if (d > 9 || n > (UINT64_MAX - d) / 10)
			return false;
		n = n * 10 + d;
	}
	*v = n;
	return true;
}

static int
num(struct scan *s, const struct scan_sec *sec, const char *key, uint64_t min, uint64_t max,
    uint64_t *v)
{
	unsigned int line;
	const char *str = get(s, sec, key, &line);

	if (str == NULL)
		return 0;	/* *v keeps its default */
	if (!parse_u64(str, v))
		return fail(s, line, "%s: '%s' is not a number", key, str);
	if (*v < min || *v > max)
		return fail(s, line, "%s: %s out of range %" PRIu64 "..%" PRIu64, key, str, min,
			    max);
	return 0;
}

static int
num32(struct scan *s, const struct scan_sec *sec, const char *key, uint64_t min, uint64_t max,
      uint32_t *v)
{
	uint64_t n = *v;

	if (num(s, sec, key, min, max, &n) < 0)
		return -1;
	*v = (uint32_t)n;
	return 0;
}

/* The next item of a comma-separated list copied into buf, stripped; NULL at the end. */
static char *
next_item(const char **list, char *buf, size_t buflen)
{
	const char *comma;
	size_t len;

	if (*list == NULL)
		return NULL;
	comma = strchr(*list, ',');
	len = comma != NULL ? (size_t)(comma - *list) : strlen(*list);
	if (len >= buflen)
		len = buflen - 1;
	memcpy(buf, *list, len);
	buf[len] = '\0';
	*list = comma != NULL ? comma + 1 : NULL;
	return strip(buf);
}

static bool
parse_mac(const char *str, uint8_t mac[6])
{
	unsigned int i, j;

	for (i = 0; i < 6; i++) {
		unsigned int byte = 0;

		for (j = 0; j < 2; j++) {
			char c = str[i * 3 + j];

			if (!isxdigit((unsigned char)c))
				return false;
			byte = byte * 16 + (isdigit((unsigned char)c) ? c - '0' :
					    tolower((unsigned char)c) - 'a' + 10);
		}
		if (str[i * 3 + 2] != (i == 5 ? '\0' : ':'))
			return false;
		mac[i] = (uint8_t)byte;
	}
	return true;
}

/* "ADDR/LEN" into addr (family's size) and *len; the error names what is wrong. */
static int
prefix(struct scan *s, unsigned int line, const char *key, const char *str, int family,
       uint8_t *addr, uint8_t *len)
{
	unsigned int max = family == AF_INET ? IPV4_PREFIX_MAX : IPV6_PREFIX_MAX;
	const char *fam = family == AF_INET ? "IPv4" : "IPv6";
	char buf[CFG_VALUE_LEN];
	const char *slash = strchr(str, '/');
	uint64_t n;

	if (slash == NULL)
		return fail(s, line, "%s: '%s' has no /prefix length", key, str);
	snprintf(buf, sizeof(buf), "%.*s", (int)(slash - str), str);
	if (inet_pton(family, buf, addr) != 1)
		return fail(s, line, "%s: bad %s address '%s'", key, fam, buf);
	if (!parse_u64(slash + 1, &n) || n < 1 || n > max)
		return fail(s, line, "%s: bad prefix length '%s' (1..%u)", key, slash + 1, max);
	*len = (uint8_t)n;
	if (family == AF_INET && (addr[0] == 0 || addr[0] == 127 || addr[0] >= 224))
		return fail(s, line, "%s: %s is not a unicast address", key, buf);
	if (family == AF_INET6) {
		static const uint8_t unspec[16];

		if (addr[0] == 0xff || memcmp(addr, unspec, sizeof(unspec)) == 0)
			return fail(s, line, "%s: %s is not a unicast address", key, buf);
	}
	return 0;
}

/* An optional true/false key (also yes/no, 1/0); *v keeps its default when absent. */
static int
boolean(struct scan *s, const struct scan_sec *sec, const char *key, bool *v)
{
	unsigned int line;
	const char *str = get(s, sec, key, &line);

	if (str == NULL)
		return 0;
	if (strcmp(str, "true") == 0 || strcmp(str, "yes") == 0 || strcmp(str, "1") == 0)
		*v = true;
	else if (strcmp(str, "false") == 0 || strcmp(str, "no") == 0 || strcmp(str, "0") == 0)
		*v = false;
	else
		return fail(s, line, "%s: '%s' is not true or false", key, str);
	return 0;
}

static int
port_neighbours(struct scan *s, const struct scan_sec *sec, struct droced_port_config *p)
{
	char buf[CFG_VALUE_LEN];
	unsigned int line, i;
	const char *list = get(s, sec, "neighbour", &line);
	char *item;

	if (list == NULL)
		return 0;
	while ((item = next_item(&list, buf, sizeof(buf))) != NULL) {
		struct droced_neighbour *n = &p->neigh[p->nb_neigh];
		char *mac = item + strcspn(item, " \t");

		if (*item == '\0' || *mac == '\0')
			return fail(s, line, "neighbour: '%s' is not 'IP MAC'", item);
		*mac++ = '\0';
		mac = strip(mac);
		if (p->nb_neigh == DROCED_CONFIG_MAX_NEIGH)
			return fail(s, line, "neighbour: more than %d entries",
				    DROCED_CONFIG_MAX_NEIGH);
		memset(n, 0, sizeof(*n));
		n->family = strchr(item, ':') != NULL ? AF_INET6 : AF_INET;
		if (inet_pton(n->family, item, n->ip) != 1)
			return fail(s, line, "neighbour: bad IP address '%s'", item);
		if (!parse_mac(mac, n->mac))
			return fail(s, line, "neighbour: bad MAC '%s'", mac);
		/* IEEE 802 I/G bit: a group address cannot be a neighbour. */
		if (n->mac[0] & 1)
			return fail(s, line, "neighbour: %s is not a unicast MAC", mac);
		for (i = 0; i < p->nb_neigh; i++)
			if (p->neigh[i].family == n->family &&
			    memcmp(p->neigh[i].ip, n->ip, sizeof(n->ip)) == 0)
				return fail(s, line, "neighbour: %s listed twice", item);
		p->nb_neigh++;
	}
	return 0;
}

static int
port_ipv6(struct scan *s, const struct scan_sec *sec, struct droced_port_config *p)
{
	char buf[CFG_VALUE_LEN];
	unsigned int line;
	const char *list = get(s, sec, "ipv6", &line);
	char *item;

	if (list == NULL)
		return 0;
	while ((item = next_item(&list, buf, sizeof(buf))) != NULL) {
		struct droced_ipv6_prefix *a = &p->ipv6[p->nb_ipv6];

		if (p->nb_ipv6 == DROCED_CONFIG_MAX_IPV6)
			return fail(s, line, "ipv6: more than %d addresses",
				    DROCED_CONFIG_MAX_IPV6);
		if (prefix(s, line, "ipv6", item, AF_INET6, a->addr, &a->len) < 0)
			return -1;
		p->nb_ipv6++;
	}
	return 0;
}

/* A port's keys that are not 0 or false when absent. */
static void
port_defaults(struct droced_port_config *p)
{
	p->mtu = DROCED_CONFIG_MTU_DEFAULT;
	p->rss = true;
}

static int
load_port(struct scan *s, const struct scan_sec *sec, struct droced_config *cfg)
{
	struct droced_port_config *p = &cfg->ports[cfg->nb_ports];
	unsigned int line, i;
	const char *v;
	uint64_t mtu = DROCED_CONFIG_MTU_DEFAULT;

	memset(p, 0, sizeof(*p));
	port_defaults(p);
	snprintf(p->name, sizeof(p->name), "%s", sec->port);
	if (require(s, sec, "device", &v, &line) < 0)
		return -1;
	for (i = 0; i < cfg->nb_ports; i++)
		if (strcmp(cfg->ports[i].device, v) == 0)
			return fail(s, line, "device '%s' is also [port %s]'s", v,
				    cfg->ports[i].name);
	snprintf(p->device, sizeof(p->device), "%s", v);
	if (require(s, sec, "ipv4", &v, &line) < 0 ||
	    prefix(s, line, "ipv4", v, AF_INET, p->ipv4.addr, &p->ipv4.len) < 0)
		return -1;
	if (port_ipv6(s, sec, p) < 0)
		return -1;
	if (num(s, sec, "mtu", DROCED_CONFIG_MTU_MIN, DROCED_CONFIG_MTU_MAX, &mtu) < 0)
		return -1;
	if ((mtu & (mtu - 1)) != 0) {
		get(s, sec, "mtu", &line);
		return fail(s, line, "mtu: %" PRIu64 " is not 256, 512, 1024, 2048 or 4096", mtu);
	}
	p->mtu = (uint32_t)mtu;
	if (port_neighbours(s, sec, p) < 0)
		return -1;
	if (boolean(s, sec, "rx_no_icrc", &p->rx_no_icrc) < 0)
		return -1;
	if (boolean(s, sec, "rss", &p->rss) < 0 ||
	    boolean(s, sec, "promiscuous", &p->promiscuous) < 0)
		return -1;
	cfg->nb_ports++;
	return 0;
}

static int
load_lcores(struct scan *s, const struct scan_sec *sec, struct droced_config *cfg)
{
	char buf[CFG_VALUE_LEN];
	unsigned int line, i;
	const char *list;
	char *item;

	if (require(s, sec, "lcores", &list, &line) < 0)
		return -1;
	while ((item = next_item(&list, buf, sizeof(buf))) != NULL) {
		char *dash = strchr(item, '-');
		uint64_t first, last, lc;

		if (dash != NULL)
			*dash = '\0';
		if (!parse_u64(strip(item), &first) ||
		    !parse_u64(dash != NULL ? strip(dash + 1) : item, &last) || first > last)
			return fail(s, line, "lcores: bad lcore list (want e.g. 1, 1-2 or 1,3)");
		if (last >= RTE_MAX_LCORE)
			return fail(s, line, "lcores: lcore %" PRIu64 " out of range 0..%d", last,
				    RTE_MAX_LCORE - 1);
		for (lc = first; lc <= last; lc++) {
			for (i = 0; i < cfg->nb_lcores; i++)
				if (cfg->lcores[i] == lc)
					return fail(s, line,
						    "lcores: lcore %" PRIu64 " listed twice", lc);
			if (cfg->nb_lcores == DROCED_CONFIG_MAX_LCORES)
				return fail(s, line, "lcores: more than %d engines",
					    DROCED_CONFIG_MAX_LCORES);
			cfg->lcores[cfg->nb_lcores++] = (uint32_t)lc;
		}
	}
	return 0;
}

/*
 * [engines] mode. Without it, idle_sleep_us alone (the setting before the modes, which
 * made an idle engine nap) means adaptive.
 */
static int
wait_mode(struct scan *s, const struct scan_sec *sec, struct droced_config *cfg)
{
	static const char *const names[] = {
		[DROCED_CONFIG_WAIT_POLL] = "poll",
		[DROCED_CONFIG_WAIT_ADAPTIVE] = "adaptive",
		[DROCED_CONFIG_WAIT_INTERRUPT] = "interrupt",
	};
	unsigned int line, i;
	const char *str = get(s, sec, "mode", &line);

	if (str == NULL) {
		cfg->wait = cfg->idle_sleep_us != 0 ? DROCED_CONFIG_WAIT_ADAPTIVE :
			    DROCED_CONFIG_WAIT_POLL;
		return 0;
	}
	for (i = 0; i < RTE_DIM(names); i++) {
		if (strcmp(str, names[i]) == 0) {
			cfg->wait = i;
			return 0;
		}
	}
	return fail(s, line, "mode: '%s' is not poll, adaptive or interrupt", str);
}

static int
load_engines(struct scan *s, struct droced_config *cfg)
{
	const struct scan_sec *sec = find_sec(s, SEC_ENGINES);

	if (sec == NULL)
		return fail(s, 0, "no [engines] section (its 'lcores' is required)");
	if (load_lcores(s, sec, cfg) < 0)
		return -1;
	if (boolean(s, sec, "early_retransmit", &cfg->early_retransmit) < 0)
		return -1;
	if (num32(s, sec, "idle_sleep_us", 0, DROCED_CONFIG_IDLE_SLEEP_MAX,
		  &cfg->idle_sleep_us) < 0 ||
	    num32(s, sec, "idle_spin_us", 0, DROCED_CONFIG_IDLE_SPIN_MAX, &cfg->idle_spin_us) < 0)
		return -1;
	return wait_mode(s, sec, cfg);
}

/* -1 (any) or a uid/gid; (uid_t)-1 itself means "no id" to the kernel. */
static int
id(struct scan *s, const struct scan_sec *sec, const char *key, int64_t *v)
{
	unsigned int line;
	const char *str = get(s, sec, key, &line);
	uint64_t n;

	if (str == NULL)
		return 0;
	if (strcmp(str, "-1") == 0) {
		*v = -1;
		return 0;
	}
	if (!parse_u64(str, &n) || n >= UINT32_MAX)
		return fail(s, line, "%s: '%s' is not -1 or an id 0..%u", key, str,
			    UINT32_MAX - 1);
	*v = (int64_t)n;
	return 0;
}

static int
load_control(struct scan *s, struct droced_config *cfg)
{
	const struct scan_sec *sec = find_sec(s, SEC_CONTROL);
	unsigned int line;
	const char *v;

	if (sec == NULL)
		return 0;
	v = get(s, sec, "socket", &line);
	if (v != NULL) {
		if (v[0] != '/')
			return fail(s, line, "socket: '%s' is not an absolute path", v);
		if (strlen(v) >= sizeof(cfg->socket))
			return fail(s, line, "socket: path longer than %zu characters",
				    sizeof(cfg->socket) - 1);
		snprintf(cfg->socket, sizeof(cfg->socket), "%s", v);
	}
	if (id(s, sec, "allowed_uid", &cfg->allowed_uid) < 0)
		return -1;
	return id(s, sec, "allowed_gid", &cfg->allowed_gid);
}

static int
load_limits(struct scan *s, struct droced_config *cfg)
{
	const struct scan_sec *sec = find_sec(s, SEC_LIMITS);
	struct droced_limits *l = &cfg->limits;

	if (sec == NULL)
		return 0;
	if (num32(s, sec, "max_qps", 1, DROCED_LIMIT_QPS_MAX, &l->max_qps) < 0 ||
	    num32(s, sec, "max_cqs", 1, DROCED_LIMIT_CQS_MAX, &l->max_cqs) < 0 ||
	    num32(s, sec, "max_srqs", 1, DROCED_LIMIT_SRQS_MAX, &l->max_srqs) < 0 ||
	    num32(s, sec, "max_mrs", 1, DROCED_LIMIT_MRS_MAX, &l->max_mrs) < 0 ||
	    num(s, sec, "max_mr_bytes", 1, DROCED_LIMIT_MR_BYTES_MAX, &l->max_mr_bytes) < 0 ||
	    num32(s, sec, "max_ahs", 1, DROCED_LIMIT_AHS_MAX, &l->max_ahs) < 0 ||
	    num32(s, sec, "max_cqe", 1, DROCED_LIMIT_CQE_MAX, &l->max_cqe) < 0 ||
	    num32(s, sec, "max_wr", 1, DROCED_LIMIT_WR_MAX, &l->max_wr) < 0 ||
	    num32(s, sec, "region_mb", 1, DROCED_LIMIT_REGION_MB_MAX, &l->region_mb) < 0)
		return -1;
	return 0;
}

/* [metrics] listen = IPV4:PORT: the Prometheus endpoint (droced_metrics.c). */
static int
load_metrics(struct scan *s, struct droced_config *cfg)
{
	const struct scan_sec *sec = find_sec(s, SEC_METRICS);
	struct droced_metrics_config *m = &cfg->metrics;
	char addr[INET_ADDRSTRLEN];
	unsigned int line;
	const char *v, *colon;
	uint64_t port;

	if (sec == NULL)
		return 0;
	if (num32(s, sec, "max_qps", 0, DROCED_METRICS_QPS_MAX, &m->max_qps) < 0)
		return -1;
	v = get(s, sec, "listen", &line);
	if (v == NULL)
		return fail(s, sec->line, "[metrics] needs listen = ADDRESS:PORT "
			    "(127.0.0.1:9469 serves this machine only)");
	colon = strrchr(v, ':');
	if (colon == NULL || (size_t)(colon - v) >= sizeof(addr) || !parse_u64(colon + 1, &port) ||
	    port == 0 || port > UINT16_MAX)
		return fail(s, line, "listen: '%s' is not IPV4:PORT", v);
	memcpy(addr, v, (size_t)(colon - v));
	addr[colon - v] = '\0';
	if (inet_pton(AF_INET, addr, m->addr) != 1)
		return fail(s, line, "listen: '%s' is not an IPv4 address", addr);
	m->port = (uint16_t)port;
	m->enabled = true;
	return 0;
}

/* Splits EAL arguments on white space into NUL-ended words (no quoting). */
static void
split_eal(struct droced_config *cfg, const char *v)
{
	size_t out = 0;

	while (*v != '\0') {
		size_t len;

		v += strspn(v, " \t");
		len = strcspn(v, " \t");
		if (len == 0)
			break;
		/* Words and their NULs never outgrow the value they come from. */
		memcpy(&cfg->eal_args[out], v, len);
		out += len;
		cfg->eal_args[out++] = '\0';
		cfg->nb_eal_args++;
		v += len;
	}
}

static void
load_eal(struct scan *s, struct droced_config *cfg)
{
	const struct scan_sec *sec = find_sec(s, SEC_EAL);
	unsigned int line;
	const char *v;

	if (sec == NULL || (v = get(s, sec, "args", &line)) == NULL)
		return;
	split_eal(cfg, v);
}

static void
set_defaults(struct droced_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->socket, sizeof(cfg->socket), "%s", DROCED_CONFIG_SOCKET_DEFAULT);
	cfg->allowed_uid = -1;
	cfg->allowed_gid = -1;
	cfg->early_retransmit = true;
	cfg->metrics.max_qps = DROCED_METRICS_QPS_DEFAULT;
	cfg->limits = (struct droced_limits){
		.max_qps = DROCED_LIMIT_QPS_DEFAULT,
		.max_cqs = DROCED_LIMIT_CQS_DEFAULT,
		.max_srqs = DROCED_LIMIT_SRQS_DEFAULT,
		.max_mrs = DROCED_LIMIT_MRS_DEFAULT,
		.max_mr_bytes = DROCED_LIMIT_MR_BYTES_DEFAULT,
		.max_ahs = DROCED_LIMIT_AHS_DEFAULT,
		.max_cqe = DROCED_LIMIT_CQE_DEFAULT,
		.max_wr = DROCED_LIMIT_WR_DEFAULT,
		.region_mb = DROCED_LIMIT_REGION_MB_DEFAULT,
	};
}

/* One [congestion] section's keys onto p, each checked by lib/cc. */
static int
congestion_apply(struct scan *s, const struct scan_sec *sec, struct droce_cc_params *p)
{
	unsigned int i;

	for (i = 0; i < sec->nb_keys; i++) {
		const struct scan_key *k = &sec->keys[i];
		const char *v = rte_cfgfile_get_entry(s->cfgfile, sec->name, k->name);
		char why[160];

		if (v == NULL || droce_cc_param_set(p, k->name, v, why, sizeof(why)) != 0)
			return fail(s, k->line, "%s", v == NULL ? "value lost" : why);
	}
	return 0;
}

/* Each port: lib/cc's defaults, then [congestion], then its own [congestion NAME]. */
static int
load_congestion(struct scan *s, struct droced_config *cfg)
{
	const struct scan_sec *all = NULL;
	unsigned int i, j;

	for (i = 0; i < s->nb_secs; i++) {
		const struct scan_sec *sec = &s->secs[i];

		if (sec->kind != SEC_CONGESTION)
			continue;
		if (sec->port[0] == '\0') {
			all = sec;
			continue;
		}
		for (j = 0; j < cfg->nb_ports; j++)
			if (strcmp(cfg->ports[j].name, sec->port) == 0)
				break;
		if (j == cfg->nb_ports)
			return fail(s, sec->line, "[%s]: no [port %s]", sec->name, sec->port);
	}
	for (j = 0; j < cfg->nb_ports; j++) {
		droce_cc_params_default(&cfg->ports[j].cc);
		if (all != NULL && congestion_apply(s, all, &cfg->ports[j].cc) < 0)
			return -1;
		for (i = 0; i < s->nb_secs; i++)
			if (s->secs[i].kind == SEC_CONGESTION &&
			    strcmp(s->secs[i].port, cfg->ports[j].name) == 0 &&
			    congestion_apply(s, &s->secs[i], &cfg->ports[j].cc) < 0)
				return -1;
	}
	return 0;
}

static int
load_values(struct scan *s, struct droced_config *cfg)
{
	unsigned int i;

	load_eal(s, cfg);
	for (i = 0; i < s->nb_secs; i++)
		if (s->secs[i].kind == SEC_PORT && load_port(s, &s->secs[i], cfg) < 0)
			return -1;
	if (cfg->nb_ports == 0)
		return fail(s, 0, "no [port NAME] section");
	if (load_congestion(s, cfg) < 0)
		return -1;
	if (load_engines(s, cfg) < 0 || load_control(s, cfg) < 0 || load_limits(s, cfg) < 0 ||
	    load_metrics(s, cfg) < 0)
		return -1;
	return 0;
}

int
droced_config_load(const char *path, struct droced_config *cfg, char *err, size_t errlen)
{
	struct scan s;
	FILE *f;
	int ret;

	memset(&s, 0, sizeof(s));
	s.path = path;
	s.err = err;
	s.errlen = errlen;
	if (errlen > 0)
		err[0] = '\0';
	set_defaults(cfg);
	f = fopen(path, "r");
	if (f == NULL)
		return fail(&s, 0, "cannot open: %s", strerror(errno));
	ret = scan_file(&s, f);
	fclose(f);
	if (ret < 0)
		return -1;
	if (s.nb_secs == 0)
		return fail(&s, 0, "no sections (an empty file?)");
	s.cfgfile = rte_cfgfile_load(path, 0);
	if (s.cfgfile == NULL)
		return fail(&s, 0, "rte_cfgfile cannot read it (changed while being read?)");
	ret = load_values(&s, cfg);
	rte_cfgfile_close(s.cfgfile);
	return ret;
}

/* config/default.ini, value by value (test_droced_config.c checks they agree). */
#define BUILTIN_EAL_ARGS	"--file-prefix=droced --no-pci"
#define BUILTIN_PORT		"ring0"
#define BUILTIN_DEVICE		"net_ring0"
#define BUILTIN_IPV4		{ 10, 99, 2, 1 }
#define BUILTIN_IPV4_LEN	24
#define BUILTIN_LCORE		1

void
droced_config_builtin(struct droced_config *cfg)
{
	static const uint8_t ipv4[4] = BUILTIN_IPV4;
	struct droced_port_config *p = &cfg->ports[0];

	set_defaults(cfg);
	split_eal(cfg, BUILTIN_EAL_ARGS);
	snprintf(p->name, sizeof(p->name), "%s", BUILTIN_PORT);
	snprintf(p->device, sizeof(p->device), "%s", BUILTIN_DEVICE);
	memcpy(p->ipv4.addr, ipv4, sizeof(ipv4));
	p->ipv4.len = BUILTIN_IPV4_LEN;
	port_defaults(p);
	droce_cc_params_default(&p->cc);
	cfg->nb_ports = 1;
	cfg->lcores[0] = BUILTIN_LCORE;
	cfg->nb_lcores = 1;
}
