/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * droce-pcap: decodes the RoCEv2 packets of a pcap or pcapng capture and verifies their
 * ICRCs (Wireshark decodes RoCEv2 but never checks the ICRC). This file reads the
 * capture, strips the link layer, parses each frame with lib/wire and counts the
 * verdicts; pcap_text.c and pcap_json.c print them. See doc/tools/droce-pcap.md.
 */

#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <string.h>

#include <pcap/pcap.h>
#include <pcap/sll.h>

#include "pcap_loc.h"

/* Exit statuses (doc/tools/droce-pcap.md). */
enum pcap_exit {
	PCAP_EXIT_OK = 0,
	PCAP_EXIT_BAD_PACKETS = 1,	/* --verify and a RoCEv2 packet was bad or malformed */
	PCAP_EXIT_ERROR = 2,		/* usage, unreadable or unsupported file */
};

struct options {
	bool verify;
	bool json;
	const char *file;
};

/* The bytes of a frame that droce_wire_parse() reads, and how it reads them. */
struct link_view {
	struct droce_wire_seg seg;
	uint32_t parse_flags;
};

static void
usage(FILE *out)
{
	fputs("Usage: droce-pcap [--verify] [--json] [--help] FILE\n"
	      "Decode the RoCEv2 packets of a pcap or pcapng capture and verify their ICRCs.\n"
	      "\n"
	      "  --verify  exit with status 1 if any RoCEv2 packet has a bad ICRC or is malformed\n"
	      "  --json    print JSON Lines (one object per RoCEv2 packet, then a summary)\n"
	      "  --help    print this help and exit\n"
	      "\n"
	      "FILE is a capture of Ethernet (optionally 802.1Q-tagged), Linux cooked (SLL,\n"
	      "SLL2: tcpdump -i any) or raw IP frames; \"-\" reads standard input.\n"
	      "Exit status: 0 done; 1 bad packets found with --verify; 2 usage or file error.\n",
	      out);
}

/* Returns 0, or PCAP_EXIT_ERROR after printing why; *help is set by --help. */
static int
parse_options(int argc, char **argv, struct options *opt, bool *help)
{
	static const struct option longopts[] = {
		{ "verify", no_argument, NULL, 'v' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*help = false;
	/* Long options only, plus -h; getopt_long reports unknown ones itself. */
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'v':
			opt->verify = true;
			break;
		case 'j':
			opt->json = true;
			break;
		case 'h':
			*help = true;
			return 0;
		default:
			usage(stderr);
			return PCAP_EXIT_ERROR;
		}
	}
	if (argc - optind != 1) {
		fprintf(stderr, "droce-pcap: expected one capture file, got %d\n", argc - optind);
		usage(stderr);
		return PCAP_EXIT_ERROR;
	}
	opt->file = argv[optind];
	return 0;
}

static bool
link_type_supported(int dlt)
{
	switch (dlt) {
	case DLT_EN10MB:
	case DLT_LINUX_SLL:
	case DLT_LINUX_SLL2:
	case DLT_RAW:
	case DLT_IPV4:
	case DLT_IPV6:
		return true;
	default:
		return false;
	}
}

/* A Linux cooked header's protocol field: an ethertype, big-endian at proto_off. */
static bool
sll_carries_ip(const uint8_t *data, uint32_t caplen, uint32_t hdr_len, size_t proto_off)
{
	uint16_t proto;

	if (caplen < hdr_len)
		return false;
	memcpy(&proto, data + proto_off, sizeof(proto));
	proto = be16toh(proto);
	return proto == DROCE_ETHERTYPE_IPV4 || proto == DROCE_ETHERTYPE_IPV6;
}

/*
 * Strips the link-layer header of link type dlt. Returns false for a frame that cannot
 * carry RoCEv2: a cooked frame of another protocol. Ethernet frames go whole to the
 * parser, which knows Ethernet and 802.1Q.
 */
static bool
link_strip(int dlt, const uint8_t *data, uint32_t caplen, struct link_view *v)
{
	uint32_t skip = 0;

	v->parse_flags = DROCE_WIRE_PARSE_L3;
	switch (dlt) {
	case DLT_EN10MB:
		v->parse_flags = 0;
		break;
	case DLT_LINUX_SLL:
		if (!sll_carries_ip(data, caplen, SLL_HDR_LEN,
				    offsetof(struct sll_header, sll_protocol)))
			return false;
		skip = SLL_HDR_LEN;
		break;
	case DLT_LINUX_SLL2:
		if (!sll_carries_ip(data, caplen, SLL2_HDR_LEN,
				    offsetof(struct sll2_header, sll2_protocol)))
			return false;
		skip = SLL2_HDR_LEN;
		break;
	default:
		/* DLT_RAW, DLT_IPV4, DLT_IPV6: the frame starts at the IP header. */
		break;
	}
	v->seg.data = data + skip;
	v->seg.len = caplen - skip;
	return true;
}

/* Classifies, counts and prints one frame. */
static void
frame_handle(int dlt, const struct pcap_pkthdr *h, const uint8_t *data,
	     const struct pcap_format *fmt, struct pcap_counts *c)
{
	struct droce_wire_pkt pkt;
	struct link_view v;
	struct pcap_frame fr;

	c->packets++;
	if (!link_strip(dlt, data, h->caplen, &v)) {
		c->other++;
		return;
	}
	fr.result = droce_wire_parse(&v.seg, 1, v.parse_flags, &pkt);
	/* Not RoCEv2, or too little of it to tell (no UDP port 4791 seen): only counted. */
	if (droce_wire_result_is_foreign(fr.result)) {
		c->other++;
		return;
	}
	c->roce++;
	if (fr.result == DROCE_WIRE_OK) {
		c->ok++;
		fr.icrc = DROCE_WIRE_ICRC_OK;
	} else if (fr.result == DROCE_WIRE_BAD_ICRC) {
		c->bad_icrc++;
		fr.icrc = DROCE_WIRE_ICRC_BAD;
	} else {
		/* Damaged on the way (bad ICRC) or built wrong (good ICRC)? Check it too. */
		c->malformed++;
		fr.icrc = droce_wire_malformed_icrc(&v.seg, 1, &pkt);
	}
	fr.number = c->packets;
	fr.caplen = h->caplen;
	fr.len = h->len;
	fr.pkt = &pkt;
	fmt->frame(stdout, &fr);
}

/* Opens a capture of a link type droce-pcap reads; NULL after printing why not. */
static pcap_t *
capture_open(const char *file)
{
	char errbuf[PCAP_ERRBUF_SIZE];
	const char *name;
	pcap_t *pc;
	FILE *f;
	int dlt;

	/* Opened here so that an open error reads "FILE: reason", like a format error. */
	f = strcmp(file, "-") == 0 ? stdin : fopen(file, "rb");
	if (f == NULL) {
		fprintf(stderr, "droce-pcap: %s: %s\n", file, strerror(errno));
		return NULL;
	}
	pc = pcap_fopen_offline(f, errbuf);
	if (pc == NULL) {
		fprintf(stderr, "droce-pcap: %s: %s\n", file, errbuf);
		fclose(f);
		return NULL;
	}
	dlt = pcap_datalink(pc);
	if (link_type_supported(dlt))
		return pc;
	name = pcap_datalink_val_to_name(dlt);
	fprintf(stderr, "droce-pcap: %s: unsupported link type %d (%s); droce-pcap reads "
		"Ethernet, Linux cooked (SLL, SLL2) and raw IP captures\n",
		file, dlt, name != NULL ? name : "unknown");
	pcap_close(pc);
	return NULL;
}

int
main(int argc, char **argv)
{
	const struct pcap_format *fmt;
	struct pcap_counts counts = { 0 };
	struct options opt = { 0 };
	struct pcap_pkthdr *h;
	const u_char *data;
	bool help;
	pcap_t *pc;
	int dlt, rc;

	rc = parse_options(argc, argv, &opt, &help);
	if (rc != 0)
		return rc;
	if (help) {
		usage(stdout);
		return PCAP_EXIT_OK;
	}
	pc = capture_open(opt.file);
	if (pc == NULL)
		return PCAP_EXIT_ERROR;

	fmt = opt.json ? &pcap_format_json : &pcap_format_text;
	dlt = pcap_datalink(pc);
	while ((rc = pcap_next_ex(pc, &h, &data)) == 1)
		frame_handle(dlt, h, data, fmt, &counts);
	/* Even for a damaged file: the summary counts what could be read. */
	fmt->summary(stdout, &counts);
	/* PCAP_ERROR_BREAK is the end of the file; PCAP_ERROR a damaged one. */
	if (rc == PCAP_ERROR) {
		fprintf(stderr, "droce-pcap: %s: %s\n", opt.file, pcap_geterr(pc));
		pcap_close(pc);
		return PCAP_EXIT_ERROR;
	}
	pcap_close(pc);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "droce-pcap: writing the output failed\n");
		return PCAP_EXIT_ERROR;
	}
	if (opt.verify && counts.bad_icrc + counts.malformed > 0)
		return PCAP_EXIT_BAD_PACKETS;
	return PCAP_EXIT_OK;
}
