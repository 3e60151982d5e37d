/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Every accessor of droce_wire_hdr.h against hand-written bytes: byte order, bit
 * positions and masks as RFC 791/8200/768 and IB spec 9.2-9.3 lay them out. Headers sit
 * at an odd address, as they may inside a packet buffer.
 */

#include <string.h>

#include "droce_test.h"
#include "droce_wire_hdr.h"

/* Room for the largest header at an odd offset. */
#define BUF_LEN		64
#define ODD		1

/* Copies a hand-made header to an odd address in buf and returns that address. */
static void *
place(uint8_t *buf, const void *bytes, size_t len)
{
	memset(buf, 0xEE, BUF_LEN);
	memcpy(buf + ODD, bytes, len);
	return buf + ODD;
}

DROCE_TEST(hdr_sizes)
{
	/* Lengths from the specs; the header's static asserts tie them to the structs. */
	CHECK_EQ_U64(DROCE_ETH_HLEN, 14);
	CHECK_EQ_U64(DROCE_VLAN_HLEN, 4);
	CHECK_EQ_U64(DROCE_IPV4_HLEN, 20);
	CHECK_EQ_U64(DROCE_IPV6_HLEN, 40);
	CHECK_EQ_U64(DROCE_UDP_HLEN, 8);
	CHECK_EQ_U64(DROCE_BTH_LEN, 12);
	CHECK_EQ_U64(DROCE_RETH_LEN, 16);
	CHECK_EQ_U64(DROCE_AETH_LEN, 4);
	CHECK_EQ_U64(DROCE_ATMETH_LEN, 28);
	CHECK_EQ_U64(DROCE_ATMACK_LEN, 8);
	CHECK_EQ_U64(DROCE_IMMDT_LEN, 4);
	CHECK_EQ_U64(DROCE_IETH_LEN, 4);
	CHECK_EQ_U64(DROCE_DETH_LEN, 8);
	CHECK_EQ_U64(DROCE_FETH_LEN, 4);
	CHECK_EQ_U64(DROCE_XRCETH_LEN, 4);
	CHECK_EQ_U64(DROCE_CNP_RSVD_LEN, 16);
	CHECK_EQ_U64(DROCE_ICRC_LEN, 4);
	CHECK_EQ_U64(DROCE_GRH_LEN, 40);
	CHECK_EQ_U64(DROCE_ETHERTYPE_IPV4, 0x0800);
	CHECK_EQ_U64(DROCE_ETHERTYPE_IPV6, 0x86DD);
	CHECK_EQ_U64(DROCE_ETHERTYPE_VLAN, 0x8100);
	CHECK_EQ_U64(DROCE_IPPROTO_UDP, 17);
	CHECK_EQ_U64(DROCE_ROCEV2_UDP_PORT, 4791);
	CHECK_EQ_U64(DROCE_PKEY_DEFAULT, 0xFFFF);
}

DROCE_TEST(hdr_eth_vlan)
{
	static const uint8_t eth[] = {
		0x02, 0x11, 0x22, 0x33, 0x44, 0x55,	/* dst */
		0x02, 0x66, 0x77, 0x88, 0x99, 0xAA,	/* src */
		0x81, 0x00,				/* 802.1Q */
	};
	static const uint8_t vlan[] = { 0xA0, 0x7B, 0x86, 0xDD };	/* PCP 5 VID 0x07B */
	uint8_t buf[BUF_LEN];
	struct droce_eth_hdr *e = place(buf, eth, sizeof(eth));
	const struct droce_vlan_hdr *v;

	CHECK_EQ_U64(droce_eth_type(e), 0x8100);
	CHECK_MEM(e->dst, eth, 6);
	CHECK_MEM(e->src, eth + 6, 6);
	droce_eth_set_type(e, 0x0800);
	CHECK_EQ_U64(buf[ODD + 12], 0x08);
	CHECK_EQ_U64(buf[ODD + 13], 0x00);
	CHECK_EQ_U64(buf[ODD + 14], 0xEE);	/* nothing written past the header */

	v = place(buf, vlan, sizeof(vlan));
	CHECK_EQ_U64(droce_vlan_tci(v), 0xA07B);
	CHECK_EQ_U64(droce_vlan_type(v), 0x86DD);
	/* 802.1Q: the VLAN ID is the low 12 bits, below PCP and DEI. */
	CHECK_EQ_U64(droce_vlan_tci_vid(droce_vlan_tci(v)), 0x07B);
	CHECK_EQ_U64(droce_vlan_tci_vid(0xF000), 0);
	CHECK_EQ_U64(droce_vlan_tci_vid(0x1FFF), 0xFFF);
}

DROCE_TEST(hdr_ipv4)
{
	static const uint8_t ip[] = {
		0x46, 0xB9, 0x01, 0x2C,		/* version 4, IHL 6; TOS 0xB9; total 300 */
		0xBE, 0xEF, 0x40, 0x00,		/* id; DF, offset 0 */
		0x3F, 0x11, 0xA1, 0xB2,		/* TTL 63; UDP; checksum 0xA1B2 */
		10, 0, 0, 1,
		192, 168, 7, 200,
	};
	static const uint8_t frag[] = { 0x23, 0x45 };	/* MF and offset 0x345 */
	uint8_t buf[BUF_LEN];
	struct droce_ipv4_hdr *h = place(buf, ip, sizeof(ip));

	CHECK_EQ_U64(droce_ipv4_version(h), 4);
	CHECK_EQ_U64(droce_ipv4_hdr_len(h), 24);
	CHECK_EQ_U64(h->tos, 0xB9);
	CHECK_EQ_U64(droce_ipv4_total_len(h), 300);
	CHECK_EQ_U64(droce_ipv4_frag(h), DROCE_IPV4_DF);
	CHECK_EQ_U64(h->ttl, 0x3F);
	CHECK_EQ_U64(h->proto, DROCE_IPPROTO_UDP);
	CHECK_EQ_U64(droce_ipv4_csum(h), 0xA1B2);
	CHECK_MEM(h->src, ip + 12, 4);
	CHECK_MEM(h->dst, ip + 16, 4);
	droce_ipv4_set_total_len(h, 0x1234);
	CHECK_EQ_U64(buf[ODD + 2], 0x12);
	CHECK_EQ_U64(buf[ODD + 3], 0x34);

	memcpy(buf + ODD + 6, frag, sizeof(frag));
	CHECK_EQ_U64(droce_ipv4_frag(h), 0x2345);
	CHECK_EQ_U64(droce_ipv4_frag(h) & DROCE_IPV4_MF, DROCE_IPV4_MF);
	CHECK_EQ_U64(droce_ipv4_frag(h) & DROCE_IPV4_FRAG_MASK, 0x345);
	CHECK_EQ_U64(DROCE_IPV4_DF, 0x4000);
	CHECK_EQ_U64(DROCE_IPV4_MF, 0x2000);
	CHECK_EQ_U64(DROCE_IPV4_FRAG_MASK, 0x1FFF);
	buf[ODD] = 0x4F;
	CHECK_EQ_U64(droce_ipv4_hdr_len(h), 60);
}

DROCE_TEST(hdr_ipv6)
{
	static const uint8_t ip[] = {
		0x6A, 0xBC, 0xDE, 0xF1,		/* version 6, TC 0xAB, flow label 0xCDEF1 */
		0x05, 0xDC, 0x11, 0x40,		/* payload 1500; UDP; hop limit 64 */
		0xFE, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8,
		0x20, 0x01, 0x0D, 0xB8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9,
	};
	uint8_t buf[BUF_LEN];
	struct droce_ipv6_hdr *h = place(buf, ip, sizeof(ip));

	CHECK_EQ_U64(droce_ipv6_version(h), 6);
	CHECK_EQ_U64(droce_ipv6_tclass(h), 0xAB);
	CHECK_EQ_U64(droce_ipv6_flow(h), 0xCDEF1);
	CHECK_EQ_U64(droce_ipv6_payload_len(h), 1500);
	CHECK_EQ_U64(h->next_hdr, DROCE_IPPROTO_UDP);
	CHECK_EQ_U64(h->hop_limit, 64);
	CHECK_MEM(h->src, ip + 8, 16);
	CHECK_MEM(h->dst, ip + 24, 16);
	droce_ipv6_set_payload_len(h, 0xABCD);
	CHECK_EQ_U64(buf[ODD + 4], 0xAB);
	CHECK_EQ_U64(buf[ODD + 5], 0xCD);
	/* Traffic class and flow label do not bleed into each other or the version. */
	buf[ODD] = 0x60;
	buf[ODD + 1] = 0x0F;
	buf[ODD + 2] = 0xFF;
	buf[ODD + 3] = 0xFF;
	CHECK_EQ_U64(droce_ipv6_tclass(h), 0);
	CHECK_EQ_U64(droce_ipv6_flow(h), 0xFFFFF);
	buf[ODD] = 0x6F;
	buf[ODD + 1] = 0xF0;
	buf[ODD + 2] = 0;
	buf[ODD + 3] = 0;
	CHECK_EQ_U64(droce_ipv6_tclass(h), 0xFF);
	CHECK_EQ_U64(droce_ipv6_flow(h), 0);
	CHECK_EQ_U64(droce_ipv6_version(h), 6);
}

DROCE_TEST(hdr_udp)
{
	static const uint8_t udp[] = { 0xC1, 0x23, 0x12, 0xB7, 0x00, 0x2C, 0xAB, 0xCD };
	uint8_t buf[BUF_LEN];
	struct droce_udp_hdr *h = place(buf, udp, sizeof(udp));

	CHECK_EQ_U64(droce_udp_sport(h), 0xC123);
	CHECK_EQ_U64(droce_udp_dport(h), 4791);
	CHECK_EQ_U64(droce_udp_len(h), 44);
	droce_udp_set_len(h, 0x0102);
	CHECK_EQ_U64(buf[ODD + 4], 0x01);
	CHECK_EQ_U64(buf[ODD + 5], 0x02);
	CHECK_EQ_U64(buf[ODD + 6], 0xAB);
}

DROCE_TEST(hdr_bth_fields)
{
	static const uint8_t bth[] = {
		0x0A,			/* RDMA WRITE ONLY */
		0xE5,			/* SE, M, PadCnt 2, TVer 5 */
		0x12, 0x34,		/* P_Key */
		0xC0, 0xAB, 0xCD, 0xEF,	/* FECN, BECN, reserved 0; DestQP 0xABCDEF */
		0x80, 0x12, 0x34, 0x56,	/* AckReq; PSN 0x123456 */
	};
	uint8_t buf[BUF_LEN];
	struct droce_bth *h = place(buf, bth, sizeof(bth));

	CHECK_EQ_U64(droce_bth_opcode(h), 0x0A);
	CHECK(droce_bth_se(h));
	CHECK(droce_bth_mig(h));
	CHECK_EQ_U64(droce_bth_pad(h), 2);
	CHECK_EQ_U64(droce_bth_tver(h), 5);
	CHECK_EQ_U64(droce_bth_pkey(h), 0x1234);
	CHECK(droce_bth_fecn(h));
	CHECK(droce_bth_becn(h));
	CHECK_EQ_U64(droce_bth_dqpn(h), 0xABCDEF);
	CHECK(droce_bth_ackreq(h));
	CHECK_EQ_U64(droce_bth_psn(h), 0x123456);

	/* Each flag bit alone. */
	buf[ODD + 1] = 0x80;
	CHECK(droce_bth_se(h) && !droce_bth_mig(h));
	CHECK_EQ_U64(droce_bth_pad(h), 0);
	CHECK_EQ_U64(droce_bth_tver(h), 0);
	buf[ODD + 1] = 0x40;
	CHECK(!droce_bth_se(h) && droce_bth_mig(h));
	buf[ODD + 1] = 0x30;
	CHECK_EQ_U64(droce_bth_pad(h), 3);
	CHECK(!droce_bth_se(h) && !droce_bth_mig(h));
	CHECK_EQ_U64(droce_bth_tver(h), 0);
	buf[ODD + 1] = 0x0F;
	CHECK_EQ_U64(droce_bth_tver(h), 15);
	CHECK_EQ_U64(droce_bth_pad(h), 0);

	buf[ODD + 4] = 0x80;
	CHECK(droce_bth_fecn(h) && !droce_bth_becn(h));
	buf[ODD + 4] = 0x40;
	CHECK(!droce_bth_fecn(h) && droce_bth_becn(h));
	/* The six reserved bits of byte 4 reach neither the flags nor the QPN. */
	buf[ODD + 4] = 0x3F;
	CHECK(!droce_bth_fecn(h) && !droce_bth_becn(h));
	CHECK_EQ_U64(droce_bth_dqpn(h), 0xABCDEF);
	/* Likewise the seven reserved bits before the PSN. */
	buf[ODD + 8] = 0x7F;
	CHECK(!droce_bth_ackreq(h));
	CHECK_EQ_U64(droce_bth_psn(h), 0x123456);
	buf[ODD + 8] = 0x80;
	buf[ODD + 9] = buf[ODD + 10] = buf[ODD + 11] = 0;
	CHECK(droce_bth_ackreq(h));
	CHECK_EQ_U64(droce_bth_psn(h), 0);
}

DROCE_TEST(hdr_bth_set)
{
	static const uint8_t want[] = {
		0x64, 0xA0, 0xFF, 0xFF, 0x40, 0x00, 0x00, 0x01, 0x80, 0xFF, 0xFF, 0xFF,
	};
	static const uint8_t want_masked[] = {
		0x81, 0x50, 0x00, 0x01, 0x80, 0x34, 0x56, 0x78, 0x00, 0x9A, 0xBC, 0xDE,
	};
	uint8_t buf[BUF_LEN];
	struct droce_bth *h = (struct droce_bth *)(buf + ODD);

	memset(buf, 0xEE, sizeof(buf));
	/* UD SEND ONLY, SE, PadCnt 2, default P_Key, BECN, QP 1, AckReq, PSN 0xFFFFFF. */
	droce_bth_set(h, 0x64, true, false, 2, 0xFFFF, false, true, 1, true, 0xFFFFFF);
	CHECK_MEM(buf + ODD, want, sizeof(want));
	CHECK_EQ_U64(buf[ODD + sizeof(want)], 0xEE);
	CHECK_EQ_U64(buf[0], 0xEE);

	/*
	 * Out-of-range arguments are cut to their fields: PadCnt 5 keeps its two bits (1),
	 * QPN and PSN keep 24 bits, so nothing spills into M, FECN/BECN or AckReq.
	 */
	droce_bth_set(h, 0x81, false, true, 5, 1, true, false, 0xFF345678, false, 0xFF9ABCDE);
	CHECK_MEM(buf + ODD, want_masked, sizeof(want_masked));
	CHECK_EQ_U64(droce_bth_tver(h), 0);
}

DROCE_TEST(hdr_reth)
{
	static const uint8_t reth[] = {
		0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF,	/* VA */
		0xDE, 0xAD, 0xBE, 0xEF,				/* R_Key */
		0x80, 0x00, 0x10, 0x01,				/* DMA length */
	};
	uint8_t buf[BUF_LEN];
	struct droce_reth *h = place(buf, reth, sizeof(reth));

	CHECK_EQ_U64(droce_reth_va(h), 0x0123456789ABCDEFull);
	CHECK_EQ_U64(droce_reth_rkey(h), 0xDEADBEEF);
	CHECK_EQ_U64(droce_reth_len(h), 0x80001001);
	memset(buf, 0, sizeof(buf));
	droce_reth_set(h, 0x0123456789ABCDEFull, 0xDEADBEEF, 0x80001001);
	CHECK_MEM(buf + ODD, reth, sizeof(reth));
}

DROCE_TEST(hdr_aeth)
{
	static const uint8_t aeth[] = { 0x61, 0xFE, 0xDC, 0xBA };	/* NAK invalid req */
	static const uint8_t want[] = { 0x3F, 0x65, 0x43, 0x21 };
	uint8_t buf[BUF_LEN];
	struct droce_aeth *h = place(buf, aeth, sizeof(aeth));

	CHECK_EQ_U64(droce_aeth_syndrome(h), 0x61);
	CHECK_EQ_U64(droce_aeth_syndrome(h) & DROCE_AETH_TYPE_MASK, DROCE_AETH_NAK);
	CHECK_EQ_U64(droce_aeth_syndrome(h) & DROCE_AETH_VALUE_MASK, DROCE_NAK_INVALID_REQ);
	CHECK_EQ_U64(droce_aeth_msn(h), 0xFEDCBA);
	/* RNR NAK, timer 0x1F; the MSN is cut to 24 bits and leaves the syndrome alone. */
	droce_aeth_set(h, 0x3F, 0xFF654321);
	CHECK_MEM(buf + ODD, want, sizeof(want));
	/* Table 44/45 encodings. */
	CHECK_EQ_U64(DROCE_AETH_ACK, 0x00);
	CHECK_EQ_U64(DROCE_AETH_RNR_NAK, 0x20);
	CHECK_EQ_U64(DROCE_AETH_NAK, 0x60);
	CHECK_EQ_U64(DROCE_AETH_TYPE_MASK, 0x60);
	CHECK_EQ_U64(DROCE_AETH_VALUE_MASK, 0x1F);
	CHECK_EQ_U64(DROCE_AETH_CREDITS_INVALID, 0x1F);
	CHECK_EQ_U64(DROCE_NAK_PSN_SEQ_ERR, 0);
	CHECK_EQ_U64(DROCE_NAK_REMOTE_ACCESS, 2);
	CHECK_EQ_U64(DROCE_NAK_REMOTE_OP, 3);
	CHECK_EQ_U64(DROCE_NAK_INVALID_RD_REQ, 4);
}

DROCE_TEST(hdr_atomic)
{
	static const uint8_t atmeth[] = {
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,	/* VA */
		0x99, 0xAA, 0xBB, 0xCC,				/* R_Key */
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,	/* swap / add */
		0xF1, 0xF2, 0xF3, 0xF4, 0xF5, 0xF6, 0xF7, 0xF8,	/* compare */
	};
	static const uint8_t atmack[] = { 0x80, 0, 0, 0, 0, 0, 0, 0x01 };
	uint8_t buf[BUF_LEN];
	struct droce_atmeth *h = place(buf, atmeth, sizeof(atmeth));
	struct droce_atmack *a;

	CHECK_EQ_U64(droce_atmeth_va(h), 0x1122334455667788ull);
	CHECK_EQ_U64(droce_atmeth_rkey(h), 0x99AABBCC);
	CHECK_EQ_U64(droce_atmeth_swap_add(h), 0x0102030405060708ull);
	CHECK_EQ_U64(droce_atmeth_compare(h), 0xF1F2F3F4F5F6F7F8ull);
	memset(buf, 0, sizeof(buf));
	droce_atmeth_set(h, 0x1122334455667788ull, 0x99AABBCC, 0x0102030405060708ull,
			 0xF1F2F3F4F5F6F7F8ull);
	CHECK_MEM(buf + ODD, atmeth, sizeof(atmeth));

	a = place(buf, atmack, sizeof(atmack));
	CHECK_EQ_U64(droce_atmack_orig(a), 0x8000000000000001ull);
	memset(buf, 0, sizeof(buf));
	droce_atmack_set(a, 0x8000000000000001ull);
	CHECK_MEM(buf + ODD, atmack, sizeof(atmack));
}

DROCE_TEST(hdr_immdt_ieth)
{
	static const uint8_t imm[] = { 0x01, 0x02, 0x03, 0x04 };
	static const uint8_t ieth[] = { 0xCA, 0xFE, 0xF0, 0x0D };
	uint8_t buf[BUF_LEN];
	struct droce_immdt *i = place(buf, imm, sizeof(imm));
	struct droce_ieth *e;
	uint32_t be;

	/* ImmDt stays in wire order: the value's bytes in memory are the wire bytes. */
	be = droce_immdt_be(i);
	CHECK_MEM(&be, imm, sizeof(imm));
	memset(buf, 0, sizeof(buf));
	droce_immdt_set_be(i, be);
	CHECK_MEM(buf + ODD, imm, sizeof(imm));

	e = place(buf, ieth, sizeof(ieth));
	CHECK_EQ_U64(droce_ieth_rkey(e), 0xCAFEF00D);
	memset(buf, 0, sizeof(buf));
	droce_ieth_set(e, 0xCAFEF00D);
	CHECK_MEM(buf + ODD, ieth, sizeof(ieth));
}

DROCE_TEST(hdr_deth)
{
	static const uint8_t deth[] = {
		0x80, 0x01, 0x02, 0x03,	/* Q_Key */
		0xFF, 0x12, 0x34, 0x56,	/* reserved byte (set here); SrcQP */
	};
	static const uint8_t want[] = { 0x80, 0x01, 0x02, 0x03, 0x00, 0xAB, 0xCD, 0xEF };
	uint8_t buf[BUF_LEN];
	struct droce_deth *h = place(buf, deth, sizeof(deth));

	CHECK_EQ_U64(droce_deth_qkey(h), 0x80010203);
	CHECK_EQ_U64(droce_deth_src_qp(h), 0x123456);
	/* The reserved byte is written as zero whatever the argument's top byte. */
	droce_deth_set(h, 0x80010203, 0xFFABCDEF);
	CHECK_MEM(buf + ODD, want, sizeof(want));
}

DROCE_TEST(hdr_xrceth)
{
	/* XRCETH: a reserved byte, then the 24-bit XRC SRQ number. */
	static const uint8_t xrceth[] = { 0xFF, 0xAB, 0xCD, 0xEF };
	static const uint8_t want[] = { 0x00, 0x12, 0x34, 0x56 };
	uint8_t buf[BUF_LEN];
	struct droce_xrceth *h = place(buf, xrceth, sizeof(xrceth));

	/* The reserved byte is not part of the number. */
	CHECK_EQ_U64(droce_xrceth_srqn(h), 0xABCDEF);
	/* It is written as zero whatever the argument's top byte. */
	droce_xrceth_set(h, 0xFF123456);
	CHECK_MEM(buf + ODD, want, sizeof(want));
	CHECK_EQ_U64(droce_xrceth_srqn(h), 0x123456);
	CHECK_EQ_U64(buf[0], 0xEE);
	CHECK_EQ_U64(buf[ODD + sizeof(want)], 0xEE);
}

DROCE_TEST(hdr_feth)
{
	static const uint8_t feth[] = { 0xFF, 0xFF, 0xFF, 0xEB };	/* sel 2, plt 0xB */
	static const uint8_t want[] = { 0x00, 0x00, 0x00, 0x35 };
	static const uint8_t want_masked[] = { 0x00, 0x00, 0x00, 0x3F };
	uint8_t buf[BUF_LEN];
	struct droce_feth *h = place(buf, feth, sizeof(feth));

	/* Bits above the selectivity level are reserved and ignored. */
	CHECK_EQ_U64(droce_feth_sel(h), 2);
	CHECK_EQ_U64(droce_feth_plt(h), 0xB);
	droce_feth_set(h, 3, 5);
	CHECK_MEM(buf + ODD, want, sizeof(want));
	CHECK_EQ_U64(droce_feth_sel(h), 3);
	CHECK_EQ_U64(droce_feth_plt(h), 5);
	/* Oversized arguments stay inside their fields. */
	droce_feth_set(h, 7, 0x1F);
	CHECK_MEM(buf + ODD, want_masked, sizeof(want_masked));
}
