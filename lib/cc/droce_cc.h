/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef DROCE_CC_H
#define DROCE_CC_H

/*
 * Congestion control without DPDK (doc/congestion.md): a port's traffic classes and
 * congestion parameters under the names ConnectX users set in mlx5's ecn sysfs files, the
 * notification point's CNP interval, and DCQCN's reaction point (Zhu et al., SIGCOMM 2015)
 * as a rate machine driven by CNPs, bytes sent and a clock in nanoseconds. lib/engine
 * (engine_cc.c) owns one per QP; the unit tests drive it with a made-up clock.
 */

#include <stdbool.h>
#include <stdint.h>

/* mlx5's dce_tcp_g and initial_alpha_value are fractions with 10 bits after the point. */
#define DROCE_CC_ALPHA_ONE	1024u
/* The rate machine keeps alpha with 20: the floors of a long decay stay below 1/1024. */
#define DROCE_CC_ALPHA_SHIFT	10
#define DROCE_CC_ALPHA_Q20_ONE	(DROCE_CC_ALPHA_ONE << DROCE_CC_ALPHA_SHIFT)
#define DROCE_CC_PRIOS		8u		/* 802.1p priorities */
#define DROCE_CC_PRIO_ALL	0xFFu
#define DROCE_CC_NO_VLAN	UINT32_MAX	/* vlan: no 802.1Q tag */
/* rpg_byte_reset counts 64-byte units, as ConnectX's firmware (doc/congestion.md). */
#define DROCE_CC_BYTE_UNIT	64u
/* DSCP -> priority when no SL names one: the top three bits, switches' default map. */
#define DROCE_CC_DSCP_PRIO_SHIFT 3
/* IP ECN field (RFC 3168): the low two bits of the IPv4 TOS / IPv6 traffic class. */
#define DROCE_ECN_MASK		0x3u
#define DROCE_ECN_NOT_ECT	0x0u
#define DROCE_ECN_ECT1		0x1u
#define DROCE_ECN_ECT0		0x2u
#define DROCE_ECN_CE		0x3u

/*
 * X(name, min, max, default, unit, description): every parameter is a uint32_t field of
 * struct droce_cc_params. Names and defaults are mlx5's (roce_np / roce_rp), the traffic
 * class ones are what a RoCE port is configured with; doc/congestion.md explains each. One
 * default is not mlx5's: the reaction point is off (roce_rp_enable none) until configured,
 * as ECN-capable packets make a marking switch stop dropping them, and a peer without a
 * notification point (Linux's soft-RoCE) then never slows the sender (doc/congestion.md).
 */
#define DROCE_CC_PARAMS(X) \
	X(roce_dscp, 0, 63, 0, "", "DSCP of RoCE packets whose QP traffic class has none") \
	X(vlan, 0, 4094, DROCE_CC_NO_VLAN, "", "802.1Q VLAN ID on RoCE packets (0: priority tag)") \
	X(roce_np_enable, 0, 0xFF, DROCE_CC_PRIO_ALL, "mask", "priorities whose CE-marked packets get CNPs") \
	X(roce_rp_enable, 0, 0xFF, 0, "mask", "priorities sent ECN-capable and rate-controlled") \
	X(min_time_between_cnps, 0, 1000000, 4, "us", "least time between two CNPs of one QP") \
	X(cnp_dscp, 0, 63, 48, "", "DSCP of CNPs") \
	X(cnp_802p_prio, 0, 7, 6, "", "802.1p priority of CNPs, with vlan set") \
	X(rpg_time_reset, 1, 1000000, 300, "us", "rate increase timer period") \
	X(rpg_byte_reset, 1, 1u << 24, 32767, "64-byte units", "rate increase byte counter period (2 MiB)") \
	X(rpg_threshold, 1, 31, 1, "", "increase events before additive, then hyper increase (F)") \
	X(rpg_max_rate, 0, 1000000, 0, "Mb/s", "highest rate (0: the port's line rate)") \
	X(rpg_ai_rate, 1, 1000000, 5, "Mb/s", "additive increase step") \
	X(rpg_hai_rate, 1, 1000000, 50, "Mb/s", "hyper increase step") \
	X(rpg_gd, 1, 31, 11, "", "rate cut: rate * alpha / 2^rpg_gd (alpha in 1024ths)") \
	X(rpg_min_dec_fac, 1, 100, 50, "%", "largest cut of one reduction") \
	X(rpg_min_rate, 1, 1000000, 1, "Mb/s", "lowest rate") \
	X(rate_to_set_on_first_cnp, 0, 1000000, 0, "Mb/s", "rate the first CNP sets instead of a cut (0: cut)") \
	X(dce_tcp_g, 0, 1023, 1019, "1/1024", "alpha's weight kept per update: g = 1 - dce_tcp_g/1024") \
	X(dce_tcp_rtt, 1, 131071, 1, "us", "alpha update period") \
	X(initial_alpha_value, 0, 1023, 1023, "1/1024", "alpha at the first CNP") \
	X(rate_reduce_monitor_period, 0, 1000000, 4, "us", "least time between two rate cuts")

struct droce_cc_params {
#define DROCE_CC_PARAM_FIELD(name, min, max, def, unit, desc) uint32_t name;
	DROCE_CC_PARAMS(DROCE_CC_PARAM_FIELD)
#undef DROCE_CC_PARAM_FIELD
};

/* The defaults: the notification point on every priority, the reaction point off. */
void droce_cc_params_default(struct droce_cc_params *p);
/* Both points off on every priority: packets not ECN-capable, no CNPs, no rate control. */
void droce_cc_params_disable(struct droce_cc_params *p);
/*
 * Sets one parameter by name from text: a decimal number in its range (no unit); the two masks also
 * take priority lists ("0-7", "3,4", "none"); vlan also takes "none". 0, or -ENOENT (no
 * such name) or -EINVAL (not a value of its range), with err (when not NULL) saying why.
 */
int droce_cc_param_set(struct droce_cc_params *p, const char *name, const char *value,
		       char *err, unsigned int errlen);

/* A QP's 802.1p priority: its SL when set, else its DSCP's top three bits. */
static inline uint8_t
droce_cc_prio(uint8_t sl, uint8_t dscp)
{
	return sl != 0 ? (uint8_t)(sl & 7) : (uint8_t)(dscp >> DROCE_CC_DSCP_PRIO_SHIFT);
}

/* ---- Notification point ---- */

struct droce_cc_np {
	uint64_t last_cnp_ns;	/* when the last CNP went */
	bool sent;		/* one has gone */
};

/*
 * A CE-marked packet arrived for the QP at now_ns: true when a CNP goes now (the first,
 * or min_time_between_cnps after the last), which it records.
 */
bool droce_cc_np_ce(const struct droce_cc_params *p, struct droce_cc_np *np, uint64_t now_ns);

/* ---- Reaction point (DCQCN) ---- */

/* Which increase a rate increase event made (for the tests and the counters). */
enum droce_cc_step {
	DROCE_CC_FAST_RECOVERY,
	DROCE_CC_ADDITIVE,
	DROCE_CC_HYPER,
};

struct droce_cc_rp {
	bool limited;		/* a CNP cut the rate and it has not recovered to the max */
	bool cnp_in_period;	/* a CNP came in this alpha period */
	uint32_t alpha;		/* 0..DROCE_CC_ALPHA_Q20_ONE: 20 bits after the point */
	uint32_t t_stage;	/* rate increase timer expirations since the last cut (T) */
	uint32_t bc_stage;	/* byte counter expirations since the last cut (BC) */
	uint64_t rc_kbps;	/* current rate (the pacing rate while limited) */
	uint64_t rt_kbps;	/* target rate */
	uint64_t max_kbps;	/* rpg_max_rate, or the line rate */
	uint64_t alpha_ns;	/* start of the current alpha period */
	uint64_t timer_ns;	/* start of the current rate increase period */
	uint64_t cut_ns;	/* the last rate cut */
	uint64_t bytes;		/* bytes toward the next byte counter expiration */
	uint64_t bytes_per_bc;	/* rpg_byte_reset in bytes */
	/* counters */
	uint64_t cnps;		/* CNPs received */
	uint64_t cuts;		/* rate cuts */
	uint64_t increases[3];	/* by enum droce_cc_step */
};

/* A QP's reaction point at line_kbps (the port's rate), unlimited. */
void droce_cc_rp_init(const struct droce_cc_params *p, struct droce_cc_rp *rp, uint64_t line_kbps);
/* A CNP for the QP arrived at now_ns: alpha and, once per monitor period, the rate. */
void droce_cc_rp_cnp(const struct droce_cc_params *p, struct droce_cc_rp *rp, uint64_t now_ns);
/* The QP sent bytes at now_ns: the byte counter, and the timers up to now. */
void droce_cc_rp_sent(const struct droce_cc_params *p, struct droce_cc_rp *rp, uint32_t bytes,
		      uint64_t now_ns);
/* The alpha and rate increase timers that expired up to now_ns, in order. */
void droce_cc_rp_update(const struct droce_cc_params *p, struct droce_cc_rp *rp, uint64_t now_ns);

#endif /* DROCE_CC_H */
