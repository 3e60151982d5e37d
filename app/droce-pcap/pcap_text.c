/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Text output: one line per RoCEv2 packet, tokens separated by single spaces, a token
 * group only for a header the packet carries. doc/tools/droce-pcap.md shows the format.
 */

#include <inttypes.h>

#include "pcap_loc.h"

/* "<src> > <dst> [<sport> > <dport>] [vlan=<vid>]" */
static void
text_addrs(FILE *out, const struct pcap_frame *fr)
{
	const struct droce_wire_pkt *pkt = fr->pkt;
	char src[PCAP_ADDR_STRLEN], dst[PCAP_ADDR_STRLEN];

	pcap_frame_addrs(fr, src, dst);
	fprintf(out, " %s > %s", src, dst);
	if (pkt->layers & DROCE_WIRE_HAVE_L4) {
		const struct droce_udp_hdr *udp = droce_pkt_udp(pkt);

		fprintf(out, " %u > %u", droce_udp_sport(udp), droce_udp_dport(udp));
	}
	if (pkt->vlan)
		fprintf(out, " vlan=%u", droce_vlan_tci_vid(pkt->vlan_tci));
}

static void
text_bth(FILE *out, const struct droce_bth *bth)
{
	const char *name = droce_opcode_name(droce_bth_opcode(bth));

	if (name != NULL)
		fprintf(out, " %s", name);
	else
		fprintf(out, " opcode=0x%02x", droce_bth_opcode(bth));
	fprintf(out, " dqpn=0x%06" PRIx32 " psn=%" PRIu32 " ackreq=%d se=%d pad=%u",
		droce_bth_dqpn(bth), droce_bth_psn(bth), droce_bth_ackreq(bth),
		droce_bth_se(bth), droce_bth_pad(bth));
	if (droce_bth_fecn(bth))
		fputs(" fecn=1", out);
	if (droce_bth_becn(bth))
		fputs(" becn=1", out);
}

static void
text_aeth(FILE *out, const struct droce_aeth *aeth)
{
	uint8_t syndrome = droce_aeth_syndrome(aeth);
	unsigned int value = syndrome & DROCE_AETH_VALUE_MASK;
	enum pcap_aeth_type type = pcap_aeth_type(syndrome);
	const char *nak;
	uint32_t cms;

	fprintf(out, " aeth=%s(", pcap_aeth_type_name(type));
	switch (type) {
	case PCAP_AETH_ACK:
		fprintf(out, "credits=%u", value);
		break;
	case PCAP_AETH_RNR_NAK:
		cms = pcap_rnr_timer_cms(value);
		fprintf(out, "timer=%u,%" PRIu32 ".%02" PRIu32 "ms", value, cms / 100, cms % 100);
		break;
	case PCAP_AETH_NAK:
		nak = pcap_nak_code_name(value);
		if (nak != NULL)
			fputs(nak, out);
		else
			fprintf(out, "code=%u", value);
		break;
	case PCAP_AETH_RESERVED:
		fprintf(out, "syndrome=0x%02x", syndrome);
		break;
	}
	fprintf(out, ") aeth.msn=%" PRIu32, droce_aeth_msn(aeth));
}

/* The extension headers, in the order the format puts them. */
static void
text_ext(FILE *out, const struct droce_wire_pkt *pkt)
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

	/* XRC requests: the XRC SRQ the request is for, first after the BTH. */
	if (xrceth != NULL)
		fprintf(out, " xrceth.srqn=0x%06" PRIx32, droce_xrceth_srqn(xrceth));
	if (reth != NULL)
		fprintf(out, " reth.va=0x%016" PRIx64 " reth.rkey=0x%08" PRIx32
			" reth.len=%" PRIu32, droce_reth_va(reth), droce_reth_rkey(reth),
			droce_reth_len(reth));
	if (aeth != NULL)
		text_aeth(out, aeth);
	if (deth != NULL)
		fprintf(out, " deth.qkey=0x%08" PRIx32 " deth.sqpn=0x%06" PRIx32,
			droce_deth_qkey(deth), droce_deth_src_qp(deth));
	/* ImmDt is opaque: show its four bytes in wire order. */
	if (immdt != NULL)
		fprintf(out, " imm=0x%08" PRIx32, be32toh(droce_immdt_be(immdt)));
	if (ieth != NULL)
		fprintf(out, " ieth.rkey=0x%08" PRIx32, droce_ieth_rkey(ieth));
	if (atm != NULL)
		fprintf(out, " atomic.va=0x%016" PRIx64 " atomic.rkey=0x%08" PRIx32
			" atomic.swap_add=0x%016" PRIx64 " atomic.compare=0x%016" PRIx64,
			droce_atmeth_va(atm), droce_atmeth_rkey(atm),
			droce_atmeth_swap_add(atm), droce_atmeth_compare(atm));
	if (atmack != NULL)
		fprintf(out, " atomic_ack.orig=0x%016" PRIx64, droce_atmack_orig(atmack));
	if (feth != NULL)
		fprintf(out, " feth.sel=%u feth.plt=%u", droce_feth_sel(feth),
			droce_feth_plt(feth));
}

/* "icrc=ok", "icrc=BAD(expected XXXXXXXX)" or "icrc=n/a(<why>)" */
static void
text_icrc(FILE *out, const struct pcap_frame *fr)
{
	switch (fr->icrc) {
	case DROCE_WIRE_ICRC_OK:
		fputs(" icrc=ok", out);
		break;
	case DROCE_WIRE_ICRC_BAD:
		fprintf(out, " icrc=BAD(expected %08" PRIX32 ")",
			droce_icrc_wire_hex(fr->pkt->icrc_calc));
		break;
	default:
		fprintf(out, " icrc=n/a(%s)", droce_wire_icrc_status_str(fr->icrc));
		break;
	}
}

static void
text_frame(FILE *out, const struct pcap_frame *fr)
{
	const struct droce_wire_pkt *pkt = fr->pkt;

	fprintf(out, "%" PRIu64, fr->number);
	text_addrs(out, fr);
	if (pkt->layers & DROCE_WIRE_HAVE_BTH)
		text_bth(out, droce_pkt_bth(pkt));
	if (!(pkt->layers & DROCE_WIRE_HAVE_ALL)) {
		fprintf(out, " MALFORMED(%s)", droce_wire_result_str(fr->result));
	} else {
		text_ext(out, pkt);
		fprintf(out, " payload=%" PRIu32, pkt->payload_len);
	}
	text_icrc(out, fr);
	if (fr->caplen < fr->len)
		fprintf(out, " truncated by the capture (caplen %" PRIu32 " < len %" PRIu32 ")",
			fr->caplen, fr->len);
	fputc('\n', out);
}

static void
text_summary(FILE *out, const struct pcap_counts *c)
{
	fprintf(out, "summary: packets=%" PRIu64 " roce=%" PRIu64 " ok=%" PRIu64
		" bad_icrc=%" PRIu64 " malformed=%" PRIu64 " other=%" PRIu64 "\n",
		c->packets, c->roce, c->ok, c->bad_icrc, c->malformed, c->other);
}

const struct pcap_format pcap_format_text = {
	.frame = text_frame,
	.summary = text_summary,
};
