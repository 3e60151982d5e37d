/* SPDX-License-Identifier: BSD-3-Clause */

/* Decoding that both output formats share: AETH meanings and IP addresses. */

#include <arpa/inet.h>
#include <sys/socket.h>

#include "pcap_loc.h"

enum pcap_aeth_type
pcap_aeth_type(uint8_t syndrome)
{
	switch (syndrome & DROCE_AETH_TYPE_MASK) {
	case DROCE_AETH_ACK:
		return PCAP_AETH_ACK;
	case DROCE_AETH_RNR_NAK:
		return PCAP_AETH_RNR_NAK;
	case DROCE_AETH_NAK:
		return PCAP_AETH_NAK;
	default:
		return PCAP_AETH_RESERVED;
	}
}

const char *
pcap_aeth_type_name(enum pcap_aeth_type type)
{
	static const char *const names[] = {
		[PCAP_AETH_ACK] = "ACK",
		[PCAP_AETH_RNR_NAK] = "RNR_NAK",
		[PCAP_AETH_NAK] = "NAK",
		[PCAP_AETH_RESERVED] = "RESERVED",
	};

	return names[type];
}

const char *
pcap_nak_code_name(unsigned int code)
{
	static const char *const names[] = {
		[DROCE_NAK_PSN_SEQ_ERR] = "PSN_SEQ_ERR",
		[DROCE_NAK_INVALID_REQ] = "INVALID_REQ",
		[DROCE_NAK_REMOTE_ACCESS] = "REMOTE_ACCESS",
		[DROCE_NAK_REMOTE_OP] = "REMOTE_OP",
		[DROCE_NAK_INVALID_RD_REQ] = "INVALID_RD_REQ",
	};

	return code < sizeof(names) / sizeof(names[0]) ? names[code] : NULL;
}

uint32_t
pcap_rnr_timer_cms(unsigned int code)
{
	/*
	 * The IB spec's encoding of the AETH RNR NAK timer field, in units of 0.01 ms:
	 * code 0 is the longest, 655.36 ms; codes 1..31 grow from 0.01 ms to 491.52 ms.
	 */
	static const uint32_t cms[DROCE_AETH_VALUE_MASK + 1] = {
		65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
		256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288,
		16384, 24576, 32768, 49152,
	};

	return cms[code & DROCE_AETH_VALUE_MASK];
}

void
pcap_frame_addrs(const struct pcap_frame *fr, char src[PCAP_ADDR_STRLEN],
		 char dst[PCAP_ADDR_STRLEN])
{
	const struct droce_ipv4_hdr *ip4 = droce_pkt_ipv4(fr->pkt);
	const struct droce_ipv6_hdr *ip6 = droce_pkt_ipv6(fr->pkt);

	/* The parser reached L3, so the packet is one or the other. */
	if (ip4 != NULL) {
		inet_ntop(AF_INET, ip4->src, src, PCAP_ADDR_STRLEN);
		inet_ntop(AF_INET, ip4->dst, dst, PCAP_ADDR_STRLEN);
		return;
	}
	inet_ntop(AF_INET6, ip6->src, src, PCAP_ADDR_STRLEN);
	inet_ntop(AF_INET6, ip6->dst, dst, PCAP_ADDR_STRLEN);
}
