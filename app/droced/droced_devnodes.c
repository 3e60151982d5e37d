/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * /dev/infiniband/uverbs_droce<N>: the device node libdroce's devices name.
 *
 * libdroce's ibv_device says dev_name "uverbs_droce<N>" and dev_path
 * "/dev/infiniband/uverbs_droce<N>", as a kernel device says "uverbs<N>". Some programs
 * check that node before they use a device: UCX (uct_ib_device_is_accessible) stats
 * "/dev/infiniband/" + dev_name, wants a character device it may read and write, and
 * skips the device silently otherwise; it never opens the node (ibv_open_device does the
 * work). Nothing opens it through libdroce either, so the node is /dev/null's (1:3):
 * harmless to open, honest about carrying nothing.
 *
 * Two droced on one host both export droce0, so a node is shared: each daemon holds a
 * hard link of its own (".droced.<pid>.uverbs_droce<N>") to the public node, and the last
 * one to leave removes it. Links of daemons that died without cleaning up are removed at
 * the next start. Nodes are made only where the kernel has no uverbs devices of its own in
 * the directory (a host with an RDMA NIC keeps /dev/infiniband as the kernel manages it),
 * and only with CAP_MKNOD: without them programs that check the node skip droce's devices,
 * nothing else changes.
 *
 * Control thread only, at start (droced_devnodes_init) and exit (droced_devnodes_fini).
 */

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <unistd.h>

#include <rte_log.h>

#include "droced_loc.h"

#define DEVNODES_DIR		"/dev/infiniband"
#define DEVNODES_PREFIX		"uverbs_droce"
#define DEVNODES_OWN		".droced."
/* /dev/null's numbers (Documentation/admin-guide/devices.txt). */
#define DEVNODES_MAJOR		1
#define DEVNODES_MINOR		3
#define DEVNODES_MAX		DROCED_CONFIG_MAX_PORTS

struct devnodes {
	uint32_t nb;			/* nodes this daemon holds a link to */
	bool made_dir;			/* it created DEVNODES_DIR */
};

static struct devnodes devnodes;

static void
node_paths(uint32_t port, char *pub, size_t publen, char *own, size_t ownlen)
{
	snprintf(pub, publen, DEVNODES_DIR "/" DEVNODES_PREFIX "%" PRIu32, port);
	snprintf(own, ownlen, DEVNODES_DIR "/" DEVNODES_OWN "%d." DEVNODES_PREFIX "%" PRIu32,
		 (int)getpid(), port);
}

static bool
is_our_node(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && major(st->st_rdev) == DEVNODES_MAJOR &&
	       minor(st->st_rdev) == DEVNODES_MINOR;
}

/*
 * The directory as it is: -1 when it holds kernel uverbs nodes ("uverbs<digits>"), else 0;
 * removes the links of daemons no longer running.
 */
static int
dir_scan(void)
{
	DIR *d = opendir(DEVNODES_DIR);
	struct dirent *e;
	int ret = 0;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		const char *n = e->d_name;
		char path[PATH_MAX];
		int pid;

		if (strncmp(n, "uverbs", 6) == 0 && n[6] >= '0' && n[6] <= '9')
			ret = -1;
		if (sscanf(n, DEVNODES_OWN "%d.", &pid) == 1 && pid > 0 &&
		    kill(pid, 0) != 0 && errno == ESRCH) {
			snprintf(path, sizeof(path), DEVNODES_DIR "/%s", n);
			unlink(path);
		}
	}
	closedir(d);
	return ret;
}

/* Links own to the public node, making the node first when no daemon holds it. */
static int
node_hold(const char *pub, const char *own)
{
	struct stat st;
	int tries;

	/* A daemon leaving between our stat and our link removes pub: try again. */
	for (tries = 0; tries < 3; tries++) {
		if (lstat(pub, &st) == 0) {
			if (!is_our_node(&st))
				return -EEXIST;
			if (link(pub, own) == 0)
				return 0;
			if (errno != ENOENT)
				return -errno;
			continue;
		}
		if (errno != ENOENT)
			return -errno;
		if (mknod(pub, S_IFCHR | 0666, makedev(DEVNODES_MAJOR, DEVNODES_MINOR)) != 0 &&
		    errno != EEXIST)
			return -errno;
		/* mknod applies the umask; programs check read and write access. */
		chmod(pub, 0666);
	}
	return -EAGAIN;
}

static void
node_release(uint32_t port)
{
	char pub[PATH_MAX], own[PATH_MAX];
	struct stat st;

	node_paths(port, pub, sizeof(pub), own, sizeof(own));
	unlink(own);
	/* Our link gone, a count of 1 is the public name alone: no daemon holds it. */
	if (lstat(pub, &st) == 0 && is_our_node(&st) && st.st_nlink == 1)
		unlink(pub);
}

void
droced_devnodes_init(uint32_t nb_ports)
{
	uint32_t i;

	memset(&devnodes, 0, sizeof(devnodes));
	if (nb_ports > DEVNODES_MAX)
		nb_ports = DEVNODES_MAX;
	if (mkdir(DEVNODES_DIR, 0755) == 0)
		devnodes.made_dir = true;
	else if (errno != EEXIST) {
		DROCED_LOG(INFO, "no %s (%s): programs that check device nodes (UCX) will not "
			   "list droce's devices", DEVNODES_DIR, strerror(errno));
		return;
	}
	if (dir_scan() < 0) {
		DROCED_LOG(INFO, "%s holds the kernel's uverbs devices: no droce nodes there",
			   DEVNODES_DIR);
		return;
	}
	for (i = 0; i < nb_ports; i++) {
		char pub[PATH_MAX], own[PATH_MAX];
		int rc;

		node_paths(i, pub, sizeof(pub), own, sizeof(own));
		rc = node_hold(pub, own);
		if (rc != 0) {
			DROCED_LOG(INFO, "cannot make %s (%s): programs that check device nodes "
				   "(UCX) will not list droce%" PRIu32, pub, strerror(-rc), i);
			break;
		}
		devnodes.nb = i + 1;
	}
}

void
droced_devnodes_fini(void)
{
	uint32_t i;

	for (i = 0; i < devnodes.nb; i++)
		node_release(i);
	devnodes.nb = 0;
	/* Fails while another daemon's nodes (or anything else) are there. */
	if (devnodes.made_dir)
		rmdir(DEVNODES_DIR);
	devnodes.made_dir = false;
}
