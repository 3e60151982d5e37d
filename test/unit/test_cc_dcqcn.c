/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * lib/cc against the published equations (DCQCN, Zhu et al., SIGCOMM 2015, section 3.2,
 * with ConnectX's parameters), computed here in floating point: on a CNP
 * RT = RC, RC = RC (1 - alpha / 2) bounded by rpg_min_dec_fac and rpg_min_rate; per alpha
 * period alpha = (1 - g) alpha (+ g with a CNP in it), g = 1 - dce_tcp_g / 1024; per rate
 * increase event fast recovery RC = (RT + RC) / 2, additive RT += R_AI, hyper
 * RT += i R_HAI. The notification point's CNPs at most one per min_time_between_cnps.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "droce_cc.h"
#include "droce_test.h"

#define US		1000ull			/* ns */
#define LINE_KBPS	25000000ull		/* 25 Gb/s */

/* Relative error of the fixed-point rate against the reference: within 0.2 %. */
static bool
near(uint64_t got, double want)
{
	return fabs((double)got - want) <= want * 0.002 + 2.0;
}

static struct droce_cc_params
params(void)
{
	struct droce_cc_params p;

	droce_cc_params_default(&p);
	return p;
}

DROCE_TEST(cc_first_cnp_cuts_by_half_alpha)
{
	struct droce_cc_params p = params();
	struct droce_cc_rp rp;
	double alpha = 1023.0 / 1024.0;

	droce_cc_rp_init(&p, &rp, LINE_KBPS);
	CHECK(!rp.limited);
	CHECK_EQ_U64(rp.rc_kbps, LINE_KBPS);
	droce_cc_rp_cnp(&p, &rp, 1000 * US);
	CHECK(rp.limited);
	CHECK_EQ_U64(rp.cuts, 1);
	CHECK_EQ_U64(rp.rt_kbps, LINE_KBPS);
	CHECK(near(rp.rc_kbps, LINE_KBPS * (1.0 - alpha / 2.0)));
	CHECK_EQ_U64(rp.alpha, 1023 << DROCE_CC_ALPHA_SHIFT);
}

DROCE_TEST(cc_cuts_follow_alpha_over_periods)
{
	struct droce_cc_params p = params();
	struct droce_cc_rp rp;
	double g = 1.0 - p.dce_tcp_g / 1024.0, alpha = p.initial_alpha_value / 1024.0;
	double rc = LINE_KBPS, rt;
	uint64_t t = 0;
	int k;

	/* A CNP every 50 us: 50 alpha periods apart, the first with the CNP in it. */
	droce_cc_rp_init(&p, &rp, LINE_KBPS);
	droce_cc_rp_cnp(&p, &rp, t);
	rc *= 1.0 - alpha / 2.0;
	rt = LINE_KBPS;
	for (k = 0; k < 20; k++) {
		int period;

		t += 50 * US;
		alpha = (1.0 - g) * alpha + g;		/* the period that had the CNP */
		for (period = 1; period < 50; period++)
			alpha = (1.0 - g) * alpha;
		/* Each cut restarts the 300 us rate increase timer: it never fires here. */
		droce_cc_rp_cnp(&p, &rp, t);
		rt = rc;
		rc *= 1.0 - alpha / 2.0;
		droce_test_ctx("CNP %d at %llu us: alpha %u/2^20 want %.1f", k,
			       (unsigned long long)(t / US), rp.alpha, alpha * 1048576.0);
		CHECK(fabs(rp.alpha - alpha * 1048576.0) <= 1024.0);
		CHECK(fabs((double)rp.rc_kbps - rc) <= rc * 0.01);
		CHECK(fabs((double)rp.rt_kbps - rt) <= rt * 0.01);
	}
	CHECK_EQ_U64(rp.cuts, 21);
}

DROCE_TEST(cc_monitor_period_one_cut)
{
	struct droce_cc_params p = params();
	struct droce_cc_rp rp;
	uint64_t rc;

	droce_cc_rp_init(&p, &rp, LINE_KBPS);
	droce_cc_rp_cnp(&p, &rp, 0);
	rc = rp.rc_kbps;
	/* rate_reduce_monitor_period is 4 us: CNPs at 1..3 us count, but do not cut. */
	droce_cc_rp_cnp(&p, &rp, 1 * US);
	droce_cc_rp_cnp(&p, &rp, 3 * US);
	CHECK_EQ_U64(rp.cnps, 3);
	CHECK_EQ_U64(rp.cuts, 1);
	CHECK_EQ_U64(rp.rc_kbps, rc);
	droce_cc_rp_cnp(&p, &rp, 4 * US);
	CHECK_EQ_U64(rp.cuts, 2);
	CHECK(rp.rc_kbps < rc);
}

DROCE_TEST(cc_cut_bounded_by_min_dec_fac_and_min_rate)
{
	struct droce_cc_params p = params();
	struct droce_cc_rp rp;
	uint64_t t = 0;
	int k;

	/* rpg_gd 1: the cut would be rate * alpha / 2 * 1024 = nearly all of it; 50 % caps it. */
	p.rpg_gd = 1;
	droce_cc_rp_init(&p, &rp, LINE_KBPS);
	droce_cc_rp_cnp(&p, &rp, t);
	CHECK_EQ_U64(rp.rc_kbps, LINE_KBPS / 2);
	p.rpg_min_dec_fac = 10;
	t += 10 * US;
	droce_cc_rp_cnp(&p, &rp, t);
	CHECK_EQ_U64(rp.rc_kbps, LINE_KBPS / 2 - LINE_KBPS / 20);
	p.rpg_min_dec_fac = 50;
	for (k = 0; k < 40; k++) {
		t += 10 * US;
		droce_cc_rp_cnp(&p, &rp, t);
		CHECK(rp.rc_kbps >= (uint64_t)p.rpg_min_rate * 1000);
	}
	CHECK_EQ_U64(rp.rc_kbps, (uint64_t)p.rpg_min_rate * 1000);
}

DROCE_TEST(cc_recovery_stages)
{
	struct droce_cc_params p = params();
	struct droce_cc_rp rp;
	double rc, rt;
	uint64_t t = 0;
	int ev;

	/* F = 3 and a byte counter too large to fire: T alone climbs the stages. */
	p.rpg_threshold = 3;
	p.rpg_byte_reset = 1u << 24;
	droce_cc_rp_init(&p, &rp, LINE_KBPS);
	droce_cc_rp_cnp(&p, &rp, t);
	rc = (double)rp.rc_kbps;
	rt = LINE_KBPS;
	for (ev = 0; ev < 8; ev++) {
		t += 300 * US;
		droce_cc_rp_update(&p, &rp, t);
		if (ev < 3) {
			rc = (rt + rc) / 2.0;			/* fast recovery, T < F */
		} else {
			rt += p.rpg_ai_rate * 1000.0;		/* additive: BC stays 0 < F */
			if (rt > LINE_KBPS)
				rt = LINE_KBPS;
			rc = (rt + rc) / 2.0;
		}
		droce_test_ctx("event %d", ev);
		CHECK(near(rp.rc_kbps, rc));
		CHECK(near(rp.rt_kbps, rt));
	}
	CHECK_EQ_U64(rp.increases[DROCE_CC_FAST_RECOVERY], 3);
	CHECK_EQ_U64(rp.increases[DROCE_CC_ADDITIVE], 5);
	CHECK_EQ_U64(rp.increases[DROCE_CC_HYPER], 0);
}

DROCE_TEST(cc_hyper_increase_needs_both_counters)
{
	struct droce_cc_params p = params();
	struct droce_cc_rp rp;
	double rc, rt;
	uint64_t t = 0;
	uint32_t bc = 0, tt = 0, f;
	int ev;

	/* Cut to a low rate, then alternate byte counter and timer events (F = 1). */
	p.rpg_gd = 1;
	p.rpg_min_dec_fac = 99;
	p.rpg_byte_reset = 10000;		/* 640,000 bytes */
	f = p.rpg_threshold;
	droce_cc_rp_init(&p, &rp, LINE_KBPS);
	droce_cc_rp_cnp(&p, &rp, t);
	rc = (double)rp.rc_kbps;
	rt = LINE_KBPS;
	CHECK(rc < LINE_KBPS * 0.02);
	rt = LINE_KBPS;
	for (ev = 0; ev < 12; ev++) {
		bool timer = ev % 2 == 1;

		if (timer) {
			t += 300 * US;
			droce_cc_rp_update(&p, &rp, t);
		} else {
			droce_cc_rp_sent(&p, &rp, 10000 * DROCE_CC_BYTE_UNIT, t);
		}
		if (tt < f && bc < f)
			rc = (rt + rc) / 2.0;
		else if (tt > f && bc > f)
			rt += (double)((tt < bc ? tt : bc) - f) * p.rpg_hai_rate * 1000.0;
		else
			rt += p.rpg_ai_rate * 1000.0;
		if (rt > LINE_KBPS)
			rt = LINE_KBPS;
		if (!(tt < f && bc < f))
			rc = (rt + rc) / 2.0;
		if (timer)
			tt++;
		else
			bc++;
		droce_test_ctx("event %d (T %u BC %u)", ev, tt, bc);
		CHECK(near(rp.rc_kbps, rc));
		CHECK(near(rp.rt_kbps, rt));
	}
	CHECK(rp.increases[DROCE_CC_HYPER] > 0);
	CHECK(rp.increases[DROCE_CC_ADDITIVE] > 0);
}

DROCE_TEST(cc_recovers_to_unlimited)
{
	struct droce_cc_params p = params();
	struct droce_cc_rp rp;
	uint64_t t = 0;
	int i;

	p.rpg_hai_rate = 1000;
	p.rpg_byte_reset = 64;			/* 4096 bytes */
	droce_cc_rp_init(&p, &rp, LINE_KBPS);
	droce_cc_rp_cnp(&p, &rp, t);
	for (i = 0; i < 100000 && rp.limited; i++) {
		t += 1 * US;
		droce_cc_rp_sent(&p, &rp, 4096, t);
	}
	CHECK(!rp.limited);
	CHECK_EQ_U64(rp.rc_kbps, LINE_KBPS);
	/* The next CNP is a first one again: alpha starts from initial_alpha_value. */
	t += 1000 * US;
	droce_cc_rp_cnp(&p, &rp, t);
	CHECK_EQ_U64(rp.alpha, p.initial_alpha_value << DROCE_CC_ALPHA_SHIFT);
	CHECK(rp.rc_kbps < LINE_KBPS);
}

/* No CNP for 16384 increase periods (an idle spell): unlimited again, not stuck halfway. */
DROCE_TEST(cc_long_idle_ends_the_limit)
{
	struct droce_cc_params p = params();
	struct droce_cc_rp rp;
	uint64_t t;

	/* 1 Tb/s: 5 Mb/s steps take 200,000 periods to get there */
	droce_cc_rp_init(&p, &rp, 1000 * LINE_KBPS / 25);
	for (t = 0; t <= 50; t += 10)
		droce_cc_rp_cnp(&p, &rp, t * US);
	droce_cc_rp_update(&p, &rp, 16383ull * 300 * US);
	CHECK(rp.limited);
	droce_cc_rp_update(&p, &rp, 2 * 16384ull * 300 * US);
	CHECK(!rp.limited);
	CHECK_EQ_U64(rp.rc_kbps, 1000 * LINE_KBPS / 25);
	CHECK_EQ_U64(rp.cuts, 6);
}

DROCE_TEST(cc_rate_to_set_on_first_cnp_and_max_rate)
{
	struct droce_cc_params p = params();
	struct droce_cc_rp rp;

	p.rate_to_set_on_first_cnp = 2000;
	droce_cc_rp_init(&p, &rp, LINE_KBPS);
	droce_cc_rp_cnp(&p, &rp, 0);
	CHECK_EQ_U64(rp.rc_kbps, 2000000);
	CHECK_EQ_U64(rp.rt_kbps, 2000000);
	CHECK_EQ_U64(rp.cuts, 0);
	p.rate_to_set_on_first_cnp = 0;
	p.rpg_max_rate = 10000;
	droce_cc_rp_init(&p, &rp, LINE_KBPS);
	CHECK_EQ_U64(rp.max_kbps, 10000000);
	droce_cc_rp_cnp(&p, &rp, 0);
	CHECK_EQ_U64(rp.rt_kbps, 10000000);
}

/* Timers caught up in one call give what a call every microsecond gives. */
DROCE_TEST(cc_lazy_timers_match_stepwise)
{
	struct droce_cc_params p = params();
	struct droce_cc_rp a, b;
	uint64_t t;

	droce_cc_rp_init(&p, &a, LINE_KBPS);
	droce_cc_rp_init(&p, &b, LINE_KBPS);
	/* Six cuts bring the target down too: 5 ms of increases leave it limited. */
	for (t = 0; t <= 50; t += 10) {
		droce_cc_rp_cnp(&p, &a, t * US);
		droce_cc_rp_cnp(&p, &b, t * US);
	}
	for (t = 51; t <= 5050; t++)
		droce_cc_rp_update(&p, &a, t * US);
	droce_cc_rp_update(&p, &b, 5050 * US);
	CHECK(a.limited);
	CHECK(b.limited);
	CHECK_EQ_U64(a.alpha, b.alpha);
	CHECK_EQ_U64(a.rc_kbps, b.rc_kbps);
	CHECK_EQ_U64(a.rt_kbps, b.rt_kbps);
	CHECK_EQ_U64(a.t_stage, b.t_stage);
	CHECK_EQ_U64(a.t_stage, 16);		/* 5000 us / rpg_time_reset 300 us */
}

DROCE_TEST(cc_np_interval)
{
	struct droce_cc_params p = params();
	struct droce_cc_np np = { 0 };
	unsigned int cnps = 0;
	uint64_t t;

	/* A CE-marked packet every microsecond for 100 us, interval 4 us: CNPs at 0, 4, ... 100. */
	for (t = 0; t <= 100; t++) {
		bool sent = droce_cc_np_ce(&p, &np, 5000 * US + t * US);

		CHECK(sent == (t % 4 == 0));
		cnps += sent;
	}
	CHECK_EQ_U64(cnps, 26);
	/* Interval 0: every CE-marked packet. */
	p.min_time_between_cnps = 0;
	memset(&np, 0, sizeof(np));
	for (t = 0, cnps = 0; t < 10; t++)
		cnps += droce_cc_np_ce(&p, &np, t);
	CHECK_EQ_U64(cnps, 10);
}

DROCE_TEST(cc_params_by_name)
{
	struct droce_cc_params p = params(), q;
	char err[160];

	CHECK_EQ_U64(p.cnp_dscp, 48);
	CHECK_EQ_U64(p.rpg_time_reset, 300);
	CHECK_EQ_U64(p.roce_np_enable, 0xFF);
	CHECK_EQ_U64(p.roce_rp_enable, 0);	/* off until configured (doc/congestion.md) */
	CHECK_EQ_U64(p.vlan, DROCE_CC_NO_VLAN);
	CHECK_EQ_I64(droce_cc_param_set(&p, "rpg_ai_rate", "20", err, sizeof(err)), 0);
	CHECK_EQ_U64(p.rpg_ai_rate, 20);
	CHECK_EQ_I64(droce_cc_param_set(&p, "roce_np_enable", "3", err, sizeof(err)), 0);
	CHECK_EQ_U64(p.roce_np_enable, 0x08);
	CHECK_EQ_I64(droce_cc_param_set(&p, "roce_rp_enable", "0-2,6", err, sizeof(err)), 0);
	CHECK_EQ_U64(p.roce_rp_enable, 0x47);
	CHECK_EQ_I64(droce_cc_param_set(&p, "vlan", "100", err, sizeof(err)), 0);
	CHECK_EQ_U64(p.vlan, 100);
	CHECK_EQ_I64(droce_cc_param_set(&p, "no_such", "1", err, sizeof(err)), -ENOENT);
	CHECK_EQ_I64(droce_cc_param_set(&p, "cnp_dscp", "64", err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "0 to 63") != NULL);
	CHECK_EQ_I64(droce_cc_param_set(&p, "rpg_min_rate", "0", err, sizeof(err)), -EINVAL);
	CHECK_EQ_I64(droce_cc_param_set(&p, "rpg_gd", "-1", err, sizeof(err)), -EINVAL);
	CHECK_EQ_I64(droce_cc_param_set(&p, "roce_np_enable", "8", err, sizeof(err)), -EINVAL);
	CHECK_EQ_I64(droce_cc_param_set(&p, "roce_np_enable", "1-", err, sizeof(err)), -EINVAL);
	CHECK_EQ_I64(droce_cc_param_set(&p, "vlan", "4095", err, sizeof(err)), -EINVAL);
	/* decimal only, as the documentation says: no octal, no hex */
	CHECK_EQ_I64(droce_cc_param_set(&p, "roce_dscp", "026", err, sizeof(err)), 0);
	CHECK_EQ_U64(p.roce_dscp, 26);
	CHECK_EQ_I64(droce_cc_param_set(&p, "roce_dscp", "0x1a", err, sizeof(err)), -EINVAL);
	CHECK_EQ_I64(droce_cc_param_set(&p, "roce_np_enable", "none", err, sizeof(err)), 0);
	CHECK_EQ_U64(p.roce_np_enable, 0);
	CHECK_EQ_I64(droce_cc_param_set(&p, "vlan", "none", err, sizeof(err)), 0);
	CHECK_EQ_U64(p.vlan, DROCE_CC_NO_VLAN);
	droce_cc_params_default(&q);
	droce_cc_params_disable(&q);
	CHECK_EQ_U64(q.roce_np_enable, 0);
	CHECK_EQ_U64(q.roce_rp_enable, 0);
}

DROCE_TEST(cc_prio)
{
	CHECK_EQ_U64(droce_cc_prio(0, 26), 3);
	CHECK_EQ_U64(droce_cc_prio(0, 48), 6);
	CHECK_EQ_U64(droce_cc_prio(5, 26), 5);
}
