/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * droced's log (DPDK's rte_log stream, so EAL's, the engines' and droced's messages alike):
 * every message to standard output, as before; when that is not a terminal, also to
 * syslog with its level (journald keeps both; under systemd, where standard output is the
 * journal's own stream, the level goes as a "<N>" prefix instead, which journald reads).
 * An engine never writes a log itself: its messages are queued, and the control thread
 * writes them at its next pass (droced_log_flush), so a message cannot stall an engine on
 * a slow terminal or syslog socket; a full queue drops and counts.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_ring.h>

#include "droced_loc.h"

#define LOG_QUEUE	1024	/* engines' messages waiting for the control thread */
#define LOG_TEXT	256	/* of a queued message; longer ones are cut */

enum log_sink {
	SINK_TERMINAL,		/* standard output only */
	SINK_SYSLOG,		/* standard output, and syslog */
	SINK_JOURNAL,		/* standard output is the journal's: "<N>" prefixes */
};

struct log_msg {
	uint32_t level;		/* RTE_LOG_* */
	uint32_t len;
	char text[LOG_TEXT];
};

static enum log_sink sink;
static struct rte_ring *queue;
static uint64_t dropped;	/* engines' messages the full queue refused (engines only) */

/* Standard output is the journal's stream when $JOURNAL_STREAM names its device:inode. */
static bool
stdout_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	return js != NULL && sscanf(js, "%llu:%llu", &dev, &ino) == 2 &&
	       fstat(STDOUT_FILENO, &st) == 0 && (unsigned long long)st.st_dev == dev &&
	       (unsigned long long)st.st_ino == ino;
}

/* rte_log's levels are syslog's plus one (RTE_LOG_EMERG is 1). */
static int
syslog_level(uint32_t level)
{
	return level >= 1 && level <= 8 ? (int)level - 1 : LOG_INFO;
}

static void
write_out(uint32_t level, const char *buf, size_t len)
{
	if (sink == SINK_JOURNAL)
		printf("<%d>", syslog_level(level));
	fwrite(buf, 1, len, stdout);
	fflush(stdout);
	if (sink == SINK_SYSLOG)
		syslog(syslog_level(level), "%.*s", (int)len, buf);
}

/* An engine: the EAL thread of an lcore other than the main one (the control thread). */
static bool
on_engine(void)
{
	unsigned int lc = rte_lcore_id();

	return lc != LCORE_ID_ANY && lc != rte_get_main_lcore();
}

static ssize_t
log_write(void *cookie, const char *buf, size_t len)
{
	uint32_t level = (uint32_t)rte_log_cur_msg_loglevel();
	struct log_msg m;

	RTE_SET_USED(cookie);
	if (queue != NULL && on_engine()) {
		m.level = level;
		m.len = (uint32_t)RTE_MIN(len, sizeof(m.text));
		memcpy(m.text, buf, m.len);
		if (rte_ring_mp_enqueue_elem(queue, &m, sizeof(m)) != 0)
			__atomic_fetch_add(&dropped, 1, __ATOMIC_RELAXED);
		return (ssize_t)len;
	}
	write_out(level, buf, len);
	return (ssize_t)len;
}

int
droced_log_init(void)
{
	static const cookie_io_functions_t io = { .write = log_write };
	FILE *f;

	if (isatty(STDOUT_FILENO))
		sink = SINK_TERMINAL;
	else if (stdout_is_journal())
		sink = SINK_JOURNAL;
	else
		sink = SINK_SYSLOG;
	if (sink == SINK_SYSLOG)
		openlog("droced", LOG_PID | LOG_NDELAY, LOG_DAEMON);
	f = fopencookie(NULL, "w", io);
	if (f == NULL)
		return -1;
	/* Unbuffered: each message reaches log_write whole, in the thread that logs it. */
	setvbuf(f, NULL, _IONBF, 0);
	return rte_openlog_stream(f);
}

int
droced_log_queue(void)
{
	queue = rte_ring_create_elem("droced_log", sizeof(struct log_msg), LOG_QUEUE,
				     SOCKET_ID_ANY, RING_F_SC_DEQ);
	if (queue == NULL) {
		DROCED_LOG(ERR, "log queue: %s", rte_strerror(rte_errno));
		return -1;
	}
	return 0;
}

unsigned int
droced_log_flush(void)
{
	static uint64_t dropped_told;
	struct log_msg m;
	unsigned int n = 0;
	uint64_t lost;

	if (queue == NULL)
		return 0;
	while (rte_ring_sc_dequeue_elem(queue, &m, sizeof(m)) == 0) {
		write_out(m.level, m.text, m.len);
		n++;
	}
	lost = __atomic_load_n(&dropped, __ATOMIC_RELAXED);
	if (lost != dropped_told) {
		DROCED_LOG(WARNING, "%" PRIu64 " engine log messages lost: the queue was full",
			   lost - dropped_told);
		dropped_told = lost;
	}
	return n;
}

void
droced_log_fini(void)
{
	droced_log_flush();
	/* Engines have stopped: from now on every message is written where it is made. */
	rte_ring_free(queue);
	queue = NULL;
}
