/* SPDX-License-Identifier: BSD-3-Clause */
/* The PROXY protocol version 2 header (HAProxy's proxy-protocol.txt, section 2.2): pure, no sockets, no allocation. */
#include "resolver/serve/proxy.h"

#include <netinet/in.h>
#include <string.h>

static const uint8_t sig[PROXY_SIG_LEN] = {
	0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A,
};

#define VERSION 2
#define CMD_LOCAL 0
#define CMD_PROXY 1
#define FAM_UNSPEC 0
#define FAM_INET 1
#define FAM_INET6 2
#define PROTO_UNSPEC 0
#define PROTO_STREAM 1
#define PROTO_DGRAM 2
#define ADDR_LEN_INET (4 + 4 + 2 + 2)
#define ADDR_LEN_INET6 (16 + 16 + 2 + 2)
#define TLV_HDR 3 /* type, 16-bit length */

static size_t rd16(const uint8_t *p)
{
	return (size_t)p[0] << 8 | p[1];
}

bool proxy_has_signature(const uint8_t *p, size_t len)
{
	size_t n = len < PROXY_SIG_LEN ? len : PROXY_SIG_LEN;
	return n == 0 || memcmp(p, sig, n) == 0;
}

/*
 * Byte 14, family and protocol, as a whole: the specification lists the
 * values a receiver accepts (UNSPEC/UNSPEC, INET or INET6 with STREAM or
 * DGRAM, UNIX with either) and says every other value "must be rejected as
 * invalid". UNIX is refused too: a DNS client behind a balancer has an IP
 * address. The address block's size, or -1.
 */
static int addr_block(uint8_t fam_proto)
{
	unsigned fam = fam_proto >> 4, proto = fam_proto & 0x0F;
	if (fam == FAM_UNSPEC && proto == PROTO_UNSPEC)
		return 0;
	if (proto != PROTO_STREAM && proto != PROTO_DGRAM)
		return -1;
	if (fam == FAM_INET)
		return ADDR_LEN_INET;
	if (fam == FAM_INET6)
		return ADDR_LEN_INET6;
	return -1;
}

/* The addresses of a PROXY command with an INET or INET6 family, ports kept in network order. */
static void read_addrs(const uint8_t *a, unsigned fam, struct proxy_hdr *h)
{
	if (fam == FAM_INET) {
		struct sockaddr_in *src = (struct sockaddr_in *)&h->src, *dst = (struct sockaddr_in *)&h->dst;
		src->sin_family = dst->sin_family = AF_INET;
		memcpy(&src->sin_addr, a, 4);
		memcpy(&dst->sin_addr, a + 4, 4);
		memcpy(&src->sin_port, a + 8, 2);
		memcpy(&dst->sin_port, a + 10, 2);
		h->src_len = h->dst_len = (socklen_t)sizeof(struct sockaddr_in);
	} else {
		struct sockaddr_in6 *src = (struct sockaddr_in6 *)&h->src, *dst = (struct sockaddr_in6 *)&h->dst;
		src->sin6_family = dst->sin6_family = AF_INET6;
		memcpy(&src->sin6_addr, a, 16);
		memcpy(&dst->sin6_addr, a + 16, 16);
		memcpy(&src->sin6_port, a + 32, 2);
		memcpy(&dst->sin6_port, a + 34, 2);
		h->src_len = h->dst_len = (socklen_t)sizeof(struct sockaddr_in6);
	}
}

/*
 * Every check looks only at bytes present, in wire order, so a prefix of a
 * valid header is PROXY_MORE and a wrong byte is PROXY_BAD as soon as it
 * has arrived (and stays so however many bytes follow).
 */
int proxy_parse(const uint8_t *p, size_t len, struct proxy_hdr *h)
{
	if (!proxy_has_signature(p, len))
		return PROXY_BAD;
	if (len <= PROXY_SIG_LEN)
		return PROXY_MORE;
	unsigned version = p[12] >> 4, cmd = p[12] & 0x0F;
	if (version != VERSION || (cmd != CMD_LOCAL && cmd != CMD_PROXY))
		return PROXY_BAD;
	if (len < 14)
		return PROXY_MORE;
	int block = addr_block(p[13]);
	if (block < 0)
		return PROXY_BAD;
	if (len < PROXY_HDR_MIN)
		return PROXY_MORE;
	size_t body = rd16(p + 14), total = PROXY_HDR_MIN + body;
	if (total > PROXY_HDR_MAX || body < (size_t)block)
		return PROXY_BAD;
	/* The TLVs must tile the rest exactly; a TLV is judged once its own header has arrived. */
	size_t off = PROXY_HDR_MIN + (size_t)block;
	while (off < total) {
		if (total - off < TLV_HDR)
			return PROXY_BAD; /* one or two bytes left: no room for a TLV */
		if (len < off + TLV_HDR)
			return PROXY_MORE;
		size_t vlen = rd16(p + off + 1);
		if (vlen > total - off - TLV_HDR)
			return PROXY_BAD;
		off += TLV_HDR + vlen;
	}
	if (len < total)
		return PROXY_MORE;

	struct proxy_hdr out;
	memset(&out, 0, sizeof(out));
	out.local = cmd == CMD_LOCAL;
	unsigned fam = p[13] >> 4;
	if (cmd == CMD_PROXY && fam != FAM_UNSPEC) {
		out.socktype = (p[13] & 0x0F) == PROTO_STREAM ? SOCK_STREAM : SOCK_DGRAM;
		read_addrs(p + PROXY_HDR_MIN, fam, &out);
	}
	*h = out;
	return (int)total;
}
