/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef PCAP_LOC_H
#define PCAP_LOC_H

/*
 * droce-pcap internals: what droce_pcap.c (reading, link types, verdicts) hands to the
 * output formats, one file each (pcap_text.c, pcap_json.c), and the decoding both
 * formats share (pcap_fields.c). Grouped by the file that defines them.
 */

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "droce_wire.h"

/* Long enough for any address pcap_frame_addrs() writes. */
#define PCAP_ADDR_STRLEN	INET6_ADDRSTRLEN

/* One RoCEv2 packet of the capture: the parser got at least as far as its IP header. */
struct pcap_frame {
	uint64_t number;	/* 1-based, as Wireshark numbers frames */
	uint32_t caplen;	/* bytes in the capture */
	uint32_t len;		/* bytes on the wire; more than caplen if the snap length cut it */
	enum droce_wire_result result;
	/*
	 * The ICRC: OK or BAD (pkt->icrc, icrc_calc), for a fully parsed packet and for a
	 * malformed one whose ICRC could be located; otherwise why it could not be.
	 */
	enum droce_wire_icrc_status icrc;
	const struct droce_wire_pkt *pkt;
};

/* The summary line: a packet is "other" or "roce"; a "roce" one is ok, bad_icrc or malformed. */
struct pcap_counts {
	uint64_t packets;
	uint64_t roce;
	uint64_t ok;
	uint64_t bad_icrc;
	uint64_t malformed;
	uint64_t other;
};

/* An output format, as testpmd has forwarding modes: one call per RoCEv2 packet, one at the end. */
struct pcap_format {
	void (*frame)(FILE *out, const struct pcap_frame *fr);
	void (*summary)(FILE *out, const struct pcap_counts *c);
};

/* ---- pcap_text.c ---- */
extern const struct pcap_format pcap_format_text;

/* ---- pcap_json.c ---- */
extern const struct pcap_format pcap_format_json;

/* ---- pcap_fields.c ---- */

/* What an AETH says, from syndrome bits 6..5 (IB spec 9.3.5). */
enum pcap_aeth_type {
	PCAP_AETH_ACK,
	PCAP_AETH_RNR_NAK,
	PCAP_AETH_NAK,
	PCAP_AETH_RESERVED,
};

enum pcap_aeth_type pcap_aeth_type(uint8_t syndrome);
/* "ACK", "RNR_NAK", "NAK", "RESERVED". */
const char *pcap_aeth_type_name(enum pcap_aeth_type type);
/* "PSN_SEQ_ERR" and the like, or NULL for a NAK code the spec reserves. */
const char *pcap_nak_code_name(unsigned int code);
/* The RNR NAK timer of a 5-bit timer code, in hundredths of a millisecond. */
uint32_t pcap_rnr_timer_cms(unsigned int code);
/* Source and destination IP addresses as text (dotted IPv4, RFC 5952 IPv6). */
void pcap_frame_addrs(const struct pcap_frame *fr, char src[PCAP_ADDR_STRLEN],
		      char dst[PCAP_ADDR_STRLEN]);

#endif /* PCAP_LOC_H */
