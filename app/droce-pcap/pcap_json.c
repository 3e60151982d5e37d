/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * JSON Lines output: one object per RoCEv2 packet and a summary object, through a
 * small emitter that writes members in order and escapes strings (RFC 8259).
 * doc/tools/droce-pcap.md lists the keys.
 */

#include <inttypes.h>

#include "pcap_loc.h"

/* Enough for "655.36", the longest RNR timer. */
#define JSON_MS_STRLEN	16

struct json {
	FILE *out;
	bool first;	/* no member written yet in the innermost open object */
};

static void
json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20)	/* RFC 8259 section 7: control characters */
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static void
json_key(struct json *j, const char *key)
{
	if (!j->first)
		fputc(',', j->out);
	j->first = false;
	json_string(j->out, key);
	fputc(':', j->out);
}

/* Opens an object: the top-level one when key is NULL, else a member of the open one. */
static void
json_begin(struct json *j, const char *key)
{
	if (key != NULL)
		json_key(j, key);
	fputc('{', j->out);
	j->first = true;
}

/* Closes an object; the one around it, if any, now has a member. */
static void
json_end(struct json *j)
{
	fputc('}', j->out);
	j->first = false;
}

static void
json_uint(struct json *j, const char *key, uint64_t v)
{
	json_key(j, key);
	fprintf(j->out, "%" PRIu64, v);
}

static void
json_bool(struct json *j, const char *key, bool v)
{
	json_key(j, key);
	fputs(v ? "true" : "false", j->out);
}

/* A string member, or null when s is NULL. */
static void
json_str(struct json *j, const char *key, const char *s)
{
	json_key(j, key);
	if (s == NULL)
		fputs("null", j->out);
	else
		json_string(j->out, s);
}

/* A number already written as text. */
static void
json_number(struct json *j, const char *key, const char *num)
{
	json_key(j, key);
	fputs(num, j->out);
}

/* An ICRC as its four wire bytes in uppercase hex, as tshark and scapy show it. */
static void
json_icrc(struct json *j, const char *key, uint32_t icrc)
{
	char hex[sizeof("XXXXXXXX")];

	snprintf(hex, sizeof(hex), "%08" PRIX32, droce_icrc_wire_hex(icrc));
	json_str(j, key, hex);
}

static void
json_addrs(struct json *j, const struct pcap_frame *fr)
{
	const struct droce_wire_pkt *pkt = fr->pkt;
	char src[PCAP_ADDR_STRLEN], dst[PCAP_ADDR_STRLEN];

	pcap_frame_addrs(fr, src, dst);
	json_str(j, "src", src);
	json_str(j, "dst", dst);
	if (pkt->layers & DROCE_WIRE_HAVE_L4) {
		const struct droce_udp_hdr *udp = droce_pkt_udp(pkt);

		json_uint(j, "sport", droce_udp_sport(udp));
		json_uint(j, "dport", droce_udp_dport(udp));
	}
	if (pkt->vlan)
		json_uint(j, "vlan", droce_vlan_tci_vid(pkt->vlan_tci));
}

static void
json_bth(struct json *j, const struct droce_bth *bth)
{
	json_uint(j, "opcode", droce_bth_opcode(bth));
	json_str(j, "opcode_name", droce_opcode_name(droce_bth_opcode(bth)));
	json_bool(j, "se", droce_bth_se(bth));
	json_bool(j, "mig", droce_bth_mig(bth));
	json_bool(j, "ackreq", droce_bth_ackreq(bth));
	json_bool(j, "fecn", droce_bth_fecn(bth));
	json_bool(j, "becn", droce_bth_becn(bth));
	json_uint(j, "pad", droce_bth_pad(bth));
	json_uint(j, "tver", droce_bth_tver(bth));
	json_uint(j, "pkey", droce_bth_pkey(bth));
	json_uint(j, "dqpn", droce_bth_dqpn(bth));
	json_uint(j, "psn", droce_bth_psn(bth));
}

static void
json_aeth(struct json *j, const struct droce_aeth *aeth)
{
	uint8_t syndrome = droce_aeth_syndrome(aeth);
	unsigned int value = syndrome & DROCE_AETH_VALUE_MASK;
	enum pcap_aeth_type type = pcap_aeth_type(syndrome);
	char ms[JSON_MS_STRLEN];
	const char *nak;
	uint32_t cms;

	json_begin(j, "aeth");
	json_uint(j, "syndrome", syndrome);
	json_str(j, "type", pcap_aeth_type_name(type));
	switch (type) {
	case PCAP_AETH_ACK:
		json_uint(j, "credits", value);
		break;
	case PCAP_AETH_RNR_NAK:
		cms = pcap_rnr_timer_cms(value);
		snprintf(ms, sizeof(ms), "%" PRIu32 ".%02" PRIu32, cms / 100, cms % 100);
		json_uint(j, "timer", value);
		json_number(j, "timer_ms", ms);
		break;
	case PCAP_AETH_NAK:
		nak = pcap_nak_code_name(value);
		if (nak != NULL)
			json_str(j, "code", nak);
		else
			json_uint(j, "code", value);
		break;
	case PCAP_AETH_RESERVED:
		break;
	}
	json_uint(j, "msn", droce_aeth_msn(aeth));
	json_end(j);
}

/* The extension headers of a fully parsed packet, each only when present. */
static void
json_ext(struct json *j, const struct droce_wire_pkt *pkt)
{
	const struct droce_xrceth *xrceth = droce_pkt_xrceth(pkt);
	const struct droce_reth *reth = droce_pkt_reth(pkt);
	const struct droce_aeth *aeth = droce_pkt_aeth(pkt);
	const struct droce_deth *deth = droce_pkt_deth(pkt);
	const struct droce_immdt *immdt = droce_pkt_immdt(pkt);
	const struct droce_ieth *ieth = droce_pkt_ieth(pkt);
	const struct droce_atmeth *atm = droce_pkt_atmeth(pkt);
	const struct droce_atmack *atmack = droce_pkt_atmack(pkt);
	const struct droce_feth *feth = droce_pkt_feth(pkt);

	if (xrceth != NULL) {
		json_begin(j, "xrceth");
		json_uint(j, "srqn", droce_xrceth_srqn(xrceth));
		json_end(j);
	}
	if (reth != NULL) {
		json_begin(j, "reth");
		json_uint(j, "va", droce_reth_va(reth));
		json_uint(j, "rkey", droce_reth_rkey(reth));
		json_uint(j, "len", droce_reth_len(reth));
		json_end(j);
	}
	if (aeth != NULL)
		json_aeth(j, aeth);
	if (deth != NULL) {
		json_begin(j, "deth");
		json_uint(j, "qkey", droce_deth_qkey(deth));
		json_uint(j, "src_qp", droce_deth_src_qp(deth));
		json_end(j);
	}
	/* ImmDt is opaque: the number its four bytes make read in wire order. */
	if (immdt != NULL)
		json_uint(j, "immdt", be32toh(droce_immdt_be(immdt)));
	if (ieth != NULL) {
		json_begin(j, "ieth");
		json_uint(j, "rkey", droce_ieth_rkey(ieth));
		json_end(j);
	}
	if (atm != NULL) {
		json_begin(j, "atomic");
		json_uint(j, "va", droce_atmeth_va(atm));
		json_uint(j, "rkey", droce_atmeth_rkey(atm));
		json_uint(j, "swap_add", droce_atmeth_swap_add(atm));
		json_uint(j, "compare", droce_atmeth_compare(atm));
		json_end(j);
	}
	if (atmack != NULL) {
		json_begin(j, "atomic_ack");
		json_uint(j, "orig", droce_atmack_orig(atmack));
		json_end(j);
	}
	if (feth != NULL) {
		json_begin(j, "feth");
		json_uint(j, "sel", droce_feth_sel(feth));
		json_uint(j, "plt", droce_feth_plt(feth));
		json_end(j);
	}
}

static void
json_frame(FILE *out, const struct pcap_frame *fr)
{
	const struct droce_wire_pkt *pkt = fr->pkt;
	struct json j = { .out = out };

	json_begin(&j, NULL);
	json_uint(&j, "frame", fr->number);
	json_str(&j, "result", droce_wire_result_name(fr->result));
	if (fr->result != DROCE_WIRE_OK)
		json_str(&j, "error", droce_wire_result_str(fr->result));
	json_addrs(&j, fr);
	if (pkt->layers & DROCE_WIRE_HAVE_BTH)
		json_bth(&j, droce_pkt_bth(pkt));
	if (pkt->layers & DROCE_WIRE_HAVE_ALL) {
		json_ext(&j, pkt);
		json_uint(&j, "payload_len", pkt->payload_len);
	}
	/* Checked for every fully parsed packet, and for a malformed one when it can be. */
	if (fr->icrc == DROCE_WIRE_ICRC_OK || fr->icrc == DROCE_WIRE_ICRC_BAD) {
		json_icrc(&j, "icrc", pkt->icrc);
		json_icrc(&j, "icrc_expected", pkt->icrc_calc);
		json_bool(&j, "icrc_ok", fr->icrc == DROCE_WIRE_ICRC_OK);
	} else {
		json_str(&j, "icrc_na", droce_wire_icrc_status_str(fr->icrc));
	}
	if (fr->caplen < fr->len) {
		json_uint(&j, "caplen", fr->caplen);
		json_uint(&j, "wire_len", fr->len);
	}
	json_end(&j);
	fputc('\n', out);
}

static void
json_summary(FILE *out, const struct pcap_counts *c)
{
	struct json j = { .out = out };

	json_begin(&j, NULL);
	json_begin(&j, "summary");
	json_uint(&j, "packets", c->packets);
	json_uint(&j, "roce", c->roce);
	json_uint(&j, "ok", c->ok);
	json_uint(&j, "bad_icrc", c->bad_icrc);
	json_uint(&j, "malformed", c->malformed);
	json_uint(&j, "other", c->other);
	json_end(&j);
	json_end(&j);
	fputc('\n', out);
}

const struct pcap_format pcap_format_json = {
	.frame = json_frame,
	.summary = json_summary,
};
