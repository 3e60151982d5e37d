/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef DROCE_CTL_H
#define DROCE_CTL_H

/*
 * droce-ctl's parts: droce_ctl.c (arguments, the socket, the queues query) over
 * ctl_capture.c (a port's frames to a pcapng file) and ctl_view.c (QUERY_VIEW's rows:
 * fetched a page at a time, printed as text or JSON, and watched as rates) over ctl_out.c
 * (text and JSON output of named values).
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <droce_shm_proto.h>

/* ---- ctl_out.c: one record of named values, as a text line or a JSON object ---- */

struct ctl_out {
	bool json;
	bool first_record;	/* JSON: no comma before the next object */
	bool first_field;
};

void ctl_out_begin(struct ctl_out *o, bool json);	/* "[" in JSON */
void ctl_out_end(struct ctl_out *o);			/* "]" */
void ctl_out_record(struct ctl_out *o);			/* a new line or object */
void ctl_out_record_end(struct ctl_out *o);
void ctl_out_num(struct ctl_out *o, const char *name, uint64_t v);
void ctl_out_double(struct ctl_out *o, const char *name, double v);
void ctl_out_text(struct ctl_out *o, const char *name, const char *v);

/* ---- droce_ctl.c ---- */

/*
 * One request and its answer (len bytes at most: a struct droce_proto_resp, or a view's
 * answer); 0, or -1 with the reason printed.
 */
int ctl_request(int s, const struct droce_proto_req *req, void *answer, size_t len);
/* The same with a descriptor sent along (fd >= 0). */
int ctl_request_fd(int s, const struct droce_proto_req *req, int fd, void *answer, size_t len);

/* ---- ctl_capture.c ---- */

/* droce-ctl capture ARGS... 0 or -1. */
int ctl_capture(int s, int argc, char **argv);

/* ---- ctl_view.c ---- */

/* The view named name (DROCE_PROTO_VIEW_*), or -1. */
int ctl_view_find(const char *name);
/* Prints every row of view v. 0 or -1. */
int ctl_view_print(int s, int v, struct ctl_out *o);
/* Every interval_ms, the view's rows with their counters as rates per second; count
 * times (0: until interrupted). 0 or -1. */
int ctl_view_watch(int s, int v, struct ctl_out *o, unsigned int interval_ms,
		   unsigned int count, bool all);

#endif /* DROCE_CTL_H */
