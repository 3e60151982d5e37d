/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * droce-ctl's output: each record a line of name=value fields (text a shell or Python's
 * shlex splits: values with spaces or quotes in double quotes), or, with -j, a JSON array
 * of objects as iproute2's rdma -j prints.
 */

#include <inttypes.h>
#include <string.h>

#include "ctl.h"

void
ctl_out_begin(struct ctl_out *o, bool json)
{
	o->json = json;
	o->first_record = true;
	if (json)
		fputc('[', stdout);
}

void
ctl_out_end(struct ctl_out *o)
{
	if (o->json)
		fputs("]\n", stdout);
	fflush(stdout);
}

void
ctl_out_record(struct ctl_out *o)
{
	if (o->json)
		fputs(o->first_record ? "{" : ",{", stdout);
	o->first_record = false;
	o->first_field = true;
}

void
ctl_out_record_end(struct ctl_out *o)
{
	fputs(o->json ? "}" : "\n", stdout);
}

static void
field_name(struct ctl_out *o, const char *name)
{
	if (o->json)
		printf("%s\"%s\":", o->first_field ? "" : ",", name);
	else
		printf("%s%s=", o->first_field ? "" : " ", name);
	o->first_field = false;
}

void
ctl_out_num(struct ctl_out *o, const char *name, uint64_t v)
{
	field_name(o, name);
	printf("%" PRIu64, v);
}

void
ctl_out_double(struct ctl_out *o, const char *name, double v)
{
	field_name(o, name);
	printf("%.3f", v);
}

static void
json_string(const char *v)
{
	const unsigned char *p;

	fputc('"', stdout);
	for (p = (const unsigned char *)v; *p != '\0'; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p < 0x20)
			printf("\\u%04x", *p);
		else
			fputc(*p, stdout);
	}
	fputc('"', stdout);
}

/* A value a shell word holds as it is, or one that needs quotes. */
static bool
plain_word(const char *v)
{
	return v[0] != '\0' && strpbrk(v, " \t\n\"'\\$`") == NULL;
}

void
ctl_out_text(struct ctl_out *o, const char *name, const char *v)
{
	const char *p;

	field_name(o, name);
	if (o->json) {
		json_string(v);
		return;
	}
	if (plain_word(v)) {
		fputs(v, stdout);
		return;
	}
	fputc('"', stdout);
	for (p = v; *p != '\0'; p++) {
		if (*p == '"' || *p == '\\' || *p == '$' || *p == '`')
			fputc('\\', stdout);
		fputc(*p == '\n' ? ' ' : *p, stdout);
	}
	fputc('"', stdout);
}
