/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * droce-ctl capture: a port's frames to a pcapng file, written by droced itself into the
 * file droce-ctl opened (so the file is this user's, where this user may write) and passed
 * with CAPTURE_START. droce-ctl then asks how far it got every CAPTURE_POLL_MS and stops
 * the capture at its count, its duration or Ctrl-C; the file is whole once CAPTURE_STOP
 * answers. "-" writes to standard output, through a memory file copied out at the end.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"

#define CAPTURE_POLL_MS	100

static volatile sig_atomic_t interrupted;

static void
on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static int
parse_u64(const char *arg, const char *what, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(arg, &end, 0);
	if (errno != 0 || end == arg || *end != '\0' || v > max) {
		fprintf(stderr, "droce-ctl capture: %s: not a number up to %" PRIu64 ": %s\n",
			what, max, arg);
		return -1;
	}
	*out = v;
	return 0;
}

/* An address as a GID: IPv4 mapped, or IPv6. */
static int
parse_addr(const char *arg, uint8_t out[16])
{
	memset(out, 0, 16);
	if (inet_pton(AF_INET, arg, out + 12) == 1) {
		out[10] = out[11] = 0xff;
		return 0;
	}
	if (inet_pton(AF_INET6, arg, out) == 1)
		return 0;
	fprintf(stderr, "droce-ctl capture: -a: not an IPv4 or IPv6 address: %s\n", arg);
	return -1;
}

static int
capture_args(int argc, char **argv, struct droce_proto_req *req, const char **file,
	     uint64_t *seconds)
{
	uint64_t v;
	int i;

	*file = NULL;
	*seconds = 0;
	for (i = 0; i < argc; i++) {
		const char *opt = argv[i], *arg = i + 1 < argc ? argv[i + 1] : NULL;

		if (arg == NULL) {
			fprintf(stderr, "droce-ctl capture: %s needs a value\n", opt);
			return -1;
		}
		i++;
		if (strcmp(opt, "-w") == 0) {
			*file = arg;
		} else if (strcmp(opt, "-p") == 0) {
			if (parse_u64(arg, "-p", DROCE_PROTO_MAX_PORTS - 1, &v) != 0)
				return -1;
			req->capture.port = (uint32_t)v;
		} else if (strcmp(opt, "-c") == 0) {
			if (parse_u64(arg, "-c", UINT64_MAX, &req->capture.max_packets) != 0)
				return -1;
		} else if (strcmp(opt, "-d") == 0) {
			if (parse_u64(arg, "-d", 86400, seconds) != 0)
				return -1;
		} else if (strcmp(opt, "-s") == 0) {
			if (parse_u64(arg, "-s", UINT16_MAX, &v) != 0)
				return -1;
			req->capture.snaplen = (uint32_t)v;
		} else if (strcmp(opt, "-q") == 0) {
			if (req->capture.nb_qpns == DROCE_PROTO_CAPTURE_QPNS) {
				fprintf(stderr, "droce-ctl capture: at most %d -q\n",
					DROCE_PROTO_CAPTURE_QPNS);
				return -1;
			}
			if (parse_u64(arg, "-q", 0xffffff, &v) != 0)
				return -1;
			req->capture.qpns[req->capture.nb_qpns++] = (uint32_t)v;
		} else if (strcmp(opt, "-a") == 0) {
			if (parse_addr(arg, req->capture.peer) != 0)
				return -1;
			req->capture.peer_set = 1;
		} else {
			fprintf(stderr, "droce-ctl capture: unknown option %s\n", opt);
			return -1;
		}
	}
	if (*file == NULL) {
		fprintf(stderr, "droce-ctl capture: -w FILE is needed (\"-\": standard output)\n");
		return -1;
	}
	return 0;
}

/* The memory file's pcapng to standard output. */
static int
copy_out(int fd)
{
	char buf[65536];
	ssize_t n;

	if (lseek(fd, 0, SEEK_SET) != 0)
		return -1;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n)
			return -1;
	return n < 0 || fflush(stdout) != 0 ? -1 : 0;
}

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int
ctl_capture(int s, int argc, char **argv)
{
	struct droce_proto_req req;
	struct droce_proto_resp resp;
	struct sigaction sa;
	const char *file;
	uint64_t seconds, start;
	bool to_stdout;
	int fd, rc = -1;

	memset(&req, 0, sizeof(req));
	req.op = DROCE_PROTO_OP_CAPTURE_START;
	req.seq = 1;
	if (capture_args(argc, argv, &req, &file, &seconds) != 0)
		return -1;
	to_stdout = strcmp(file, "-") == 0;
	fd = to_stdout ? memfd_create("droce-capture", MFD_CLOEXEC) :
	     open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "droce-ctl capture: %s: %s\n", file, strerror(errno));
		return -1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (ctl_request_fd(s, &req, fd, &resp, sizeof(resp)) != 0)
		goto out;
	start = now_ms();
	for (;;) {
		struct timespec ts = { .tv_nsec = CAPTURE_POLL_MS * 1000000L };

		nanosleep(&ts, NULL);
		memset(&req, 0, sizeof(req));
		req.op = DROCE_PROTO_OP_CAPTURE_STATUS;
		req.seq = 1;
		if (ctl_request(s, &req, &resp, sizeof(resp)) != 0)
			goto out;
		if (resp.capture.done || interrupted ||
		    (seconds != 0 && now_ms() - start >= seconds * 1000))
			break;
	}
	memset(&req, 0, sizeof(req));
	req.op = DROCE_PROTO_OP_CAPTURE_STOP;
	req.seq = 1;
	if (ctl_request(s, &req, &resp, sizeof(resp)) != 0)
		goto out;
	fprintf(stderr, "droce-ctl capture: %" PRIu64 " frames written to %s, %" PRIu64
		" dropped\n", resp.capture.written, to_stdout ? "standard output" : file,
		resp.capture.dropped);
	rc = to_stdout ? copy_out(fd) : 0;
out:
	close(fd);
	return rc;
}
