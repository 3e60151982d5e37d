/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * droced's command line: its own options (--config, --instance, --help), and EAL's
 * arguments made from the file's [eal] args, the rest of the command line and the lcore
 * mapping the engines need. Also what makes a first start easy to get right: an instance
 * name that gives a second daemon its own socket and EAL file prefix from the same file,
 * a file prefix another process holds named with that process, and droced's usage, not
 * EAL's, for an option that is neither droced's nor EAL's.
 */

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>

#include "droced_loc.h"

#define LCORES_ARG_MAX	4096
#define CPUSET_STR_MAX	1024
#define INSTANCE_MAX	32
#define INSTANCE_MARK	"%i"	/* in the file's values: the instance name */
#define RUN_DIR		"/run/droce"

static void
usage(const char *prog)
{
	printf("Usage: %s [--config FILE] [--instance NAME] [EAL options]\n"
	       "  --config FILE    droced's configuration (doc/configuration.md); without it\n"
	       "                   droced runs on a built-in net_ring0 link (config/default.ini)\n"
	       "  --instance NAME  one daemon of several on this machine: its control socket is\n"
	       "                   " RUN_DIR "/NAME.sock and its EAL file prefix droce-NAME,\n"
	       "                   and %s in the file's values reads NAME (doc/getting-started.md)\n"
	       "  --help           this text\n"
	       "EAL options may also come from the file's [eal] args; the command line is\n"
	       "given to EAL after them, so it wins. Unless -l, -c or --lcores is given,\n"
	       "droced maps the main lcore and every engine lcore onto the CPUs it may use.\n",
	       prog, INSTANCE_MARK);
}

/* droced's own options, with or without "=VALUE": the option, or NULL. */
static const char *
own_option(const char *arg)
{
	static const char *const own[] = { "--config", "--instance" };
	unsigned int i;

	for (i = 0; i < RTE_DIM(own); i++) {
		size_t n = strlen(own[i]);

		if (strncmp(arg, own[i], n) == 0 && (arg[n] == '\0' || arg[n] == '='))
			return own[i];
	}
	return NULL;
}

/*
 * DPDK 22.11's EAL options (eal_common_options.c, as `droced --help` lists them), so that a
 * mistyped option gets droced's usage, which names --config, and not only EAL's 60 lines.
 */
static bool
eal_option(const char *arg)
{
	static const char *const eal[] = {
		"--allow", "--base-virtaddr", "--block", "--create-uio-dev", "--file-prefix",
		"--force-max-simd-bitwidth", "--huge-dir", "--huge-unlink", "--huge-worker-stack",
		"--in-memory", "--iova-mode", "--lcores", "--legacy-mem", "--log-level",
		"--main-lcore", "--match-allocations", "--mbuf-pool-ops-name", "--no-hpet",
		"--no-huge", "--no-pci", "--no-shconf", "--no-telemetry", "--proc-type",
		"--single-file-segments", "--socket-limit", "--socket-mem", "--syslog", "--telemetry",
		"--trace", "--trace-bufsz", "--trace-dir", "--trace-mode", "--vdev", "--vfio-intr",
		"--vfio-vf-token", "--vmware-tsc-map",
	};
	size_t n = strcspn(arg, "=");
	unsigned int i;

	/* Short options, their value attached or not: -l0, -l 0, -S, -a BDF. */
	if (arg[0] == '-' && arg[1] != '-' && arg[1] != '\0')
		return strchr("Sabcdlmnrsv", arg[1]) != NULL;
	for (i = 0; i < RTE_DIM(eal); i++)
		if (strlen(eal[i]) == n && strncmp(arg, eal[i], n) == 0)
			return true;
	return false;
}

int
droced_args_parse(int argc, char **argv, struct droced_args *a)
{
	int i;

	memset(a, 0, sizeof(*a));
	for (i = 1; i < argc; i++) {
		const char *opt = own_option(argv[i]), *v;

		if (opt == NULL && argv[i][0] == '-' && strcmp(argv[i], "--") != 0 &&
		    !eal_option(argv[i]) && strcmp(argv[i], "--help") != 0 &&
		    strcmp(argv[i], "-h") != 0) {
			fprintf(stderr, "droced: unknown option '%s'\n", argv[i]);
			usage(argv[0]);
			return -1;
		}

		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(argv[0]);
			return 1;
		}
		if (opt == NULL)
			continue;
		if (strchr(argv[i], '=') != NULL) {
			v = strchr(argv[i], '=') + 1;
		} else if (i + 1 < argc) {
			v = argv[++i];
		} else {
			fprintf(stderr, "droced: %s needs a value\n", opt);
			return -1;
		}
		if (strcmp(opt, "--config") == 0)
			a->config = v;
		else
			a->instance = v;
	}
	if (a->instance != NULL) {
		size_t n = strlen(a->instance), k;

		for (k = 0; k < n; k++)
			if (!isalnum((unsigned char)a->instance[k]) &&
			    strchr("_-.", a->instance[k]) == NULL)
				break;
		if (n == 0 || n > INSTANCE_MAX || k < n || a->instance[0] == '.') {
			fprintf(stderr, "droced: --instance '%s': 1 to %d letters, digits, '_', "
				"'-' or '.'\n", a->instance, INSTANCE_MAX);
			return -1;
		}
	}
	/* EAL's usage, when EAL refuses a value, ends with droced's. */
	rte_set_application_usage_hook(usage);
	return 0;
}

/* s with every INSTANCE_MARK replaced by name, into out (size len): 1 if one was, 0, -1. */
static int
expand(const char *s, const char *name, char *out, size_t len)
{
	size_t o = 0;
	int found = 0;

	while (*s != '\0') {
		const char *piece = s;
		size_t n = 1;

		if (strncmp(s, INSTANCE_MARK, strlen(INSTANCE_MARK)) == 0) {
			piece = name;
			n = strlen(name);
			s += strlen(INSTANCE_MARK);
			found = 1;
		} else {
			s++;
		}
		if (o + n >= len)
			return -1;
		memcpy(out + o, piece, n);
		o += n;
	}
	out[o] = '\0';
	return found;
}

int
droced_args_instance(const struct droced_args *a, struct droced_config *cfg)
{
	char buf[DROCED_CONFIG_VALUE_MAX], args[DROCED_CONFIG_VALUE_MAX];
	const char *w = cfg->eal_args, *name = a->instance;
	bool prefix = false;
	size_t out = 0;
	uint32_t k;
	int rc;

	if (name == NULL)
		return 0;
	/* The socket: the file's, when it names the instance in it; else the instance's. */
	rc = expand(cfg->socket, name, buf, sizeof(cfg->socket));
	if (rc < 0)
		goto too_long;
	if (rc == 0 && snprintf(buf, sizeof(cfg->socket), RUN_DIR "/%s.sock", name) < 0)
		goto too_long;
	memcpy(cfg->socket, buf, strlen(buf) + 1);	/* expand() kept it within the field */
	for (k = 0; k < cfg->nb_ports; k++) {
		if (expand(cfg->ports[k].device, name, buf, sizeof(cfg->ports[k].device)) < 0)
			goto too_long;
		memcpy(cfg->ports[k].device, buf, strlen(buf) + 1);
	}
	/* EAL's words, the file prefix the instance's unless the file's names it. */
	for (k = 0; k < cfg->nb_eal_args; k++, w += strlen(w) + 1) {
		rc = expand(w, name, buf, sizeof(buf));
		if (rc < 0)
			goto too_long;
		if (strncmp(buf, "--file-prefix", strlen("--file-prefix")) == 0) {
			if (rc == 0)
				snprintf(buf, sizeof(buf), "--file-prefix=droce-%s", name);
			prefix = true;
		}
		if (out + strlen(buf) + 1 > sizeof(args))
			goto too_long;
		memcpy(args + out, buf, strlen(buf) + 1);
		out += strlen(buf) + 1;
	}
	if (!prefix) {
		snprintf(buf, sizeof(buf), "--file-prefix=droce-%s", name);
		if (out + strlen(buf) + 1 > sizeof(args))
			goto too_long;
		memcpy(args + out, buf, strlen(buf) + 1);
		out += strlen(buf) + 1;
		cfg->nb_eal_args++;
	}
	memcpy(cfg->eal_args, args, out);
	return 0;
too_long:
	fprintf(stderr, "droced: --instance %s makes a value of the configuration too long\n",
		name);
	return -1;
}

/* "0-1" or "0,2-3": the CPUs this process may run on, in --lcores' cpu_set syntax. */
static int
cpuset_string(char *buf, size_t len)
{
	cpu_set_t set;
	size_t out = 0;
	int cpu, first = -1, n;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return -errno;
	buf[0] = '\0';
	for (cpu = 0; cpu <= CPU_SETSIZE; cpu++) {
		bool in = cpu < CPU_SETSIZE && CPU_ISSET(cpu, &set);

		if (in && first < 0)
			first = cpu;
		if (in || first < 0)
			continue;
		n = first == cpu - 1 ?
			snprintf(buf + out, len - out, "%s%d", out ? "," : "", first) :
			snprintf(buf + out, len - out, "%s%d-%d", out ? "," : "", first, cpu - 1);
		if (n < 0 || (size_t)n >= len - out)
			return -ENOSPC;
		out += n;
		first = -1;
	}
	return out > 0 ? 0 : -ENOENT;
}

static bool
user_sets_lcores(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strncmp(a, "-l", 2) == 0 || strncmp(a, "-c", 2) == 0 ||
		    strncmp(a, "--lcores", strlen("--lcores")) == 0)
			return true;
	}
	return false;
}

/* Does an EAL option starting with opt appear in the file's args or on the command line? */
static bool
args_have(const struct droced_config *cfg, int argc, char **argv, const char *opt)
{
	const char *w = cfg->eal_args;
	uint32_t k;
	int i;

	for (k = 0; k < cfg->nb_eal_args; k++, w += strlen(w) + 1)
		if (strncmp(w, opt, strlen(opt)) == 0)
			return true;
	for (i = 1; i < argc; i++)
		if (strncmp(argv[i], opt, strlen(opt)) == 0)
			return true;
	return false;
}

/* The main lcore: the lowest id no engine uses. */
static uint32_t
main_lcore_pick(const struct droced_config *cfg)
{
	uint32_t lc, i;

	for (lc = 0;; lc++) {
		for (i = 0; i < cfg->nb_lcores; i++)
			if (cfg->lcores[i] == lc)
				break;
		if (i == cfg->nb_lcores)
			return lc;
	}
}

/*
 * EAL's arguments: the program name, the file's [eal] args, the command line without
 * --config (and without the "--" that may precede it), and, unless the user placed lcores
 * himself, the lcore mapping: every lcore floats over all our CPUs, so a configuration
 * naming lcore 2 runs on a 2-CPU machine.
 */
static int
eal_args_build(const struct droced_config *cfg, int argc, char **argv, char **out, int *nout,
	       char *lcores_arg, char *main_arg)
{
	char cpus[CPUSET_STR_MAX];
	const char *w = cfg->eal_args;
	int n = 0, i;
	uint32_t k;

	out[n++] = argv[0];
	/*
	 * Hugepage files unlinked once mapped: droced has no secondary processes, and nothing
	 * is left in /dev/hugepages however it ends. Later arguments may say otherwise.
	 */
	if (!args_have(cfg, argc, argv, "--no-huge") && !args_have(cfg, argc, argv, "--in-memory") &&
	    !args_have(cfg, argc, argv, "--huge-unlink"))
		out[n++] = (char *)(uintptr_t)"--huge-unlink";
	for (k = 0; k < cfg->nb_eal_args; k++) {
		out[n++] = (char *)(uintptr_t)w;
		w += strlen(w) + 1;
	}
	for (i = 1; i < argc; i++) {
		if (own_option(argv[i]) != NULL) {
			i += strchr(argv[i], '=') == NULL;	/* its value */
			continue;
		}
		if (strcmp(argv[i], "--") == 0)
			continue;
		if (n >= DROCED_ARGS_MAX - 3)
			return -E2BIG;
		out[n++] = argv[i];
	}
	if (!user_sets_lcores(n, out)) {
		uint32_t main_lc = main_lcore_pick(cfg);
		size_t len;

		if (cpuset_string(cpus, sizeof(cpus)) != 0)
			return -ENOENT;
		len = snprintf(lcores_arg, LCORES_ARG_MAX, "--lcores=%u@(%s)", main_lc, cpus);
		for (k = 0; k < cfg->nb_lcores && len < LCORES_ARG_MAX; k++)
			len += snprintf(lcores_arg + len, LCORES_ARG_MAX - len, ",%u@(%s)",
					cfg->lcores[k], cpus);
		if (len >= LCORES_ARG_MAX)
			return -E2BIG;
		snprintf(main_arg, LCORES_ARG_MAX, "--main-lcore=%u", main_lc);
		out[n++] = lcores_arg;
		out[n++] = main_arg;
	}
	out[n] = NULL;
	*nout = n;
	return 0;
}


/* The file prefix EAL will use: the last --file-prefix of the file and the command line. */
static const char *
file_prefix(const struct droced_config *cfg, int argc, char **argv, char *buf, size_t len)
{
	const char *w = cfg->eal_args, *found = "rte";
	uint32_t k;
	int i;

	for (k = 0; k < cfg->nb_eal_args; k++, w += strlen(w) + 1)
		if (strncmp(w, "--file-prefix=", strlen("--file-prefix=")) == 0)
			found = w + strlen("--file-prefix=");
	for (i = 1; i < argc; i++) {
		if (strncmp(argv[i], "--file-prefix=", strlen("--file-prefix=")) == 0)
			found = argv[i] + strlen("--file-prefix=");
		else if (strcmp(argv[i], "--file-prefix") == 0 && i + 1 < argc)
			found = argv[++i];
	}
	snprintf(buf, len, "%s", found);
	return buf;
}

/*
 * A DPDK primary process holds a write lock on its runtime directory's config file for
 * its life (EAL's eal_create_runtime_dir, rte_eal_config_create): found before EAL runs,
 * its holder is named, where EAL itself would fail with "EAL initialisation failed:
 * Success".
 */
int
droced_args_prefix_free(const struct droced_config *cfg, int argc, char **argv)
{
	char prefix[256], path[512], comm[64] = "?";
	const char *base = getenv("XDG_RUNTIME_DIR");
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	FILE *f;
	int fd;

	if (args_have(cfg, argc, argv, "--in-memory") || args_have(cfg, argc, argv, "--no-shconf"))
		return 0;
	file_prefix(cfg, argc, argv, prefix, sizeof(prefix));
	if (getuid() == 0 || base == NULL)
		base = getuid() == 0 ? "/var/run" : "/tmp";
	snprintf(path, sizeof(path), "%s/dpdk/%s/config", base, prefix);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fcntl(fd, F_GETLK, &fl) != 0 || fl.l_type == F_UNLCK) {
		close(fd);
		return 0;
	}
	close(fd);
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)fl.l_pid);
	f = fopen(path, "re");
	if (f != NULL) {
		if (fgets(comm, sizeof(comm), f) != NULL)
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
	fprintf(stderr, "droced: EAL's file prefix '%s' is in use by process %d (%s), a DPDK "
		"primary: start this droced with --instance NAME, or give it another "
		"--file-prefix in its [eal] args\n", prefix, (int)fl.l_pid, comm);
	return -1;
}

int
droced_args_eal(const struct droced_config *cfg, int argc, char **argv, char ***eal_argv,
		int *eal_argc)
{
	static char *out[DROCED_ARGS_MAX + 1];
	static char lcores_arg[LCORES_ARG_MAX], main_arg[LCORES_ARG_MAX];
	int rc = eal_args_build(cfg, argc, argv, out, eal_argc, lcores_arg, main_arg);

	if (rc != 0) {
		fprintf(stderr, "droced: cannot build EAL arguments: %s\n", strerror(-rc));
		return -1;
	}
	*eal_argv = out;
	return 0;
}
