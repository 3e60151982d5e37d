/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A port's congestion parameters: one table from DROCE_CC_PARAMS, which droced's
 * configuration and droce-perf's --cc option go by (doc/congestion.md lists them).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "droce_cc.h"

struct cc_param {
	const char *name;
	size_t off;
	uint32_t min;
	uint32_t max;
	uint32_t def;
	const char *unit;
};

static const struct cc_param cc_params[] = {
#define CC_PARAM_ROW(n, lo, hi, d, u, text) \
	{ #n, offsetof(struct droce_cc_params, n), lo, hi, d, u },
	DROCE_CC_PARAMS(CC_PARAM_ROW)
#undef CC_PARAM_ROW
};

#define CC_NB_PARAMS (sizeof(cc_params) / sizeof(cc_params[0]))

static uint32_t *
param_field(struct droce_cc_params *p, const struct cc_param *d)
{
	return (uint32_t *)((char *)p + d->off);
}

void
droce_cc_params_default(struct droce_cc_params *p)
{
	unsigned int i;

	for (i = 0; i < CC_NB_PARAMS; i++)
		*param_field(p, &cc_params[i]) = cc_params[i].def;
}

void
droce_cc_params_disable(struct droce_cc_params *p)
{
	p->roce_np_enable = 0;
	p->roce_rp_enable = 0;
}

static bool
is_mask(const struct cc_param *d)
{
	return strcmp(d->unit, "mask") == 0;
}

/* "none", or priorities and ranges "0-3,6": a bit per priority. */
static int
parse_prio_list(const char *s, uint32_t *mask)
{
	uint32_t m = 0;

	if (strcmp(s, "none") == 0) {
		*mask = 0;
		return 0;
	}
	while (*s != '\0') {
		char *end;
		unsigned long lo = strtoul(s, &end, 10), hi = lo;

		if (end == s || lo >= DROCE_CC_PRIOS)
			return -EINVAL;
		s = end;
		if (*s == '-') {
			hi = strtoul(++s, &end, 10);
			if (end == s || hi >= DROCE_CC_PRIOS || hi < lo)
				return -EINVAL;
			s = end;
		}
		for (; lo <= hi; lo++)
			m |= 1u << lo;
		if (*s == ',')
			s++;
		else if (*s != '\0')
			return -EINVAL;
	}
	*mask = m;
	return 0;
}

int
droce_cc_param_set(struct droce_cc_params *p, const char *name, const char *value,
		   char *err, unsigned int errlen)
{
	const struct cc_param *d = NULL;
	unsigned long long v;
	uint32_t mask;
	unsigned int i;
	char *end;

	for (i = 0; i < CC_NB_PARAMS; i++)
		if (strcmp(cc_params[i].name, name) == 0)
			d = &cc_params[i];
	if (d == NULL) {
		if (err != NULL)
			snprintf(err, errlen, "no congestion parameter '%s'", name);
		return -ENOENT;
	}
	if (is_mask(d) && parse_prio_list(value, &mask) == 0) {
		*param_field(p, d) = mask;
		return 0;
	}
	if (d->def == DROCE_CC_NO_VLAN && strcmp(value, "none") == 0) {
		*param_field(p, d) = DROCE_CC_NO_VLAN;
		return 0;
	}
	errno = 0;
	v = strtoull(value, &end, 10);
	if (is_mask(d) || errno != 0 || end == value || *end != '\0' || value[0] == '-' ||
	    v < d->min || v > d->max) {
		if (err != NULL) {
			if (is_mask(d))
				snprintf(err, errlen, "%s: '%s' is not a list of priorities 0-7 "
					 "(as \"0-7\", \"3,4\" or \"none\")", name, value);
			else
				snprintf(err, errlen, "%s: '%s' is not a number from %u to %u%s",
					 name, value, d->min, d->max,
					 d->def == DROCE_CC_NO_VLAN ? ", or none" : "");
		}
		return -EINVAL;
	}
	*param_field(p, d) = (uint32_t)v;
	return 0;
}
