/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VERBS_TEST_UTIL_H
#define VERBS_TEST_UTIL_H

/*
 * What the small verbs test programs (verbs_async, verbs_death) share: dying with a
 * message and a status, a watchdog for a call that must not block, the first device, and
 * an RC QP taken to RTS towards a QPN on the device's own GID 0 (loopback through one
 * droced, or a QPN nobody has).
 */

#include <infiniband/verbs.h>

/* The program's name in messages; set once, first thing in main. */
void vt_init(const char *name);

void vt_die(int status, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 2, 3)));

/*
 * vt_watch(s, status): if the calls until vt_unwatch() take more than s seconds, the
 * program says so and exits with status (a hang made an exit status).
 */
void vt_watch(unsigned int seconds, int status);
void vt_unwatch(void);

/* The first verbs device, opened (exit 1 when there is none). */
struct ibv_context *vt_open_first(void);

/* RESET -> INIT on port 1 with access; exit 1 on failure. */
void vt_qp_init(struct ibv_qp *qp, unsigned int access);

/*
 * INIT -> RTR -> RTS towards QPN dqpn on the device's own GID 0, path MTU 1024, PSNs 0,
 * local ACK timeout code timeout, 7 retries; exit 1 on failure.
 */
void vt_qp_connect(struct ibv_qp *qp, uint32_t dqpn, uint8_t timeout);

#endif /* VERBS_TEST_UTIL_H */
