/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion timestamps' clock: the TSC, which droced's engines stamp CQEs with
 * (droce_shm_cqe.timestamp) and which is one counter for every core and process on a CPU
 * with an invariant TSC. hca_core_clock (ibv_query_device_ex) is its rate in kHz, from
 * droced's HELLO answer; ibv_query_rt_values_ex reads it now; the wallclock variant
 * converts by an anchor (the TSC and CLOCK_REALTIME read together).
 */
#include <errno.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define VERBS_HAVE_TSC 1
#else
#define VERBS_HAVE_TSC 0
#endif

#include "verbs_loc.h"

#define NS_PER_S	1000000000ull

uint64_t
verbs_clock_tsc(void)
{
#if VERBS_HAVE_TSC
	return __rdtsc();
#else
	return 0;
#endif
}

uint64_t
verbs_clock_hz(uint64_t droced_tsc_hz)
{
	return VERBS_HAVE_TSC ? droced_tsc_hz : 0;
}

void
verbs_clock_anchor(struct verbs_clock_anchor *a)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	a->tsc = verbs_clock_tsc();
	a->realtime_ns = (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

uint64_t
verbs_clock_wallclock_ns(const struct verbs_clock_anchor *a, uint64_t tsc_hz, uint64_t tsc)
{
	/* a completion before the anchor (the usual case: start_poll came after it) */
	if (tsc <= a->tsc)
		return a->realtime_ns - (uint64_t)((unsigned __int128)(a->tsc - tsc) * NS_PER_S /
						   tsc_hz);
	return a->realtime_ns + (uint64_t)((unsigned __int128)(tsc - a->tsc) * NS_PER_S / tsc_hz);
}

int
verbs_query_rt_values(struct ibv_context *context, struct ibv_values_ex *values)
{
	if (context == NULL || values == NULL)
		return EINVAL;
	if (values->comp_mask & ~(uint32_t)IBV_VALUES_MASK_RAW_CLOCK)
		return EINVAL;
	if (!(values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK))
		return 0;
	if (to_dctx(context)->tsc_hz == 0)
		return EOPNOTSUPP;
	/* as mlx5: the raw cycle count in tv_nsec, tv_sec 0 */
	values->raw_clock.tv_sec = 0;
	values->raw_clock.tv_nsec = (long)verbs_clock_tsc();
	return 0;
}
