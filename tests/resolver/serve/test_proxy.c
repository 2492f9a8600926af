/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of resolver/serve/proxy.c: PROXY v2 headers accepted, refused, and incomplete, byte by byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "resolver/serve/proxy.h"

static const uint8_t sig[PROXY_SIG_LEN] = {
	0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A,
};

/* A query for example.com A, as a client sends it after the header. */
static const uint8_t query[] = {
	0x12, 0x34, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0, 0x00, 0x01, 0x00, 0x01,
};

#define BUF_MAX (PROXY_HDR_MAX + 512)

/* A header: signature, the two command bytes, the length of body, body. Its length. */
static size_t make(uint8_t *buf, uint8_t ver_cmd, uint8_t fam_proto, const uint8_t *body, size_t body_len)
{
	memcpy(buf, sig, sizeof(sig));
	buf[12] = ver_cmd;
	buf[13] = fam_proto;
	buf[14] = (uint8_t)(body_len >> 8);
	buf[15] = (uint8_t)body_len;
	if (body_len)
		memcpy(buf + 16, body, body_len);
	return 16 + body_len;
}

/* The INET address block: 192.0.2.1:53000 -> 198.51.100.2:53. */
static size_t inet_block(uint8_t *b)
{
	static const uint8_t a[12] = { 192, 0, 2, 1, 198, 51, 100, 2, 0xCF, 0x08, 0x00, 0x35 };
	memcpy(b, a, sizeof(a));
	return sizeof(a);
}

/* The INET6 address block: [2001:db8::1]:4242 -> [2001:db8::53]:53. */
static size_t inet6_block(uint8_t *b)
{
	memset(b, 0, 36);
	b[0] = 0x20, b[1] = 0x01, b[2] = 0x0d, b[3] = 0xb8, b[15] = 0x01;
	b[16] = 0x20, b[17] = 0x01, b[18] = 0x0d, b[19] = 0xb8, b[31] = 0x53;
	b[32] = 0x10, b[33] = 0x92; /* 4242 */
	b[34] = 0x00, b[35] = 0x35;
	return 36;
}

static size_t tlv(uint8_t *b, uint8_t type, const char *value, size_t len)
{
	b[0] = type;
	b[1] = (uint8_t)(len >> 8);
	b[2] = (uint8_t)len;
	if (len)
		memcpy(b + 3, value, len);
	return 3 + len;
}

/* proxy_parse with h filled with a pattern first; whenever it does not succeed, h must be as it was. */
static int parse(const uint8_t *p, size_t len, struct proxy_hdr *h)
{
	struct proxy_hdr before;
	memset(&before, 0xA5, sizeof(before));
	memcpy(h, &before, sizeof(*h));
	int r = proxy_parse(p, len, h);
	if (r <= 0)
		assert_memory_equal(h, &before, sizeof(*h));
	return r;
}

/* Every strict prefix of a valid header is PROXY_MORE, the whole header its length. */
static void assert_prefixes_more(const uint8_t *p, size_t total)
{
	struct proxy_hdr h;
	for (size_t k = 0; k < total; k++) {
		if (parse(p, k, &h) != PROXY_MORE)
			fail_msg("prefix of %zu of a %zu-byte header is not PROXY_MORE", k, total);
	}
	assert_int_equal(parse(p, total, &h), (int)total);
}

static void assert_inet(const struct proxy_hdr *h, int socktype)
{
	assert_false(h->local);
	assert_int_equal(h->socktype, socktype);
	assert_int_equal(h->src_len, sizeof(struct sockaddr_in));
	assert_int_equal(h->dst_len, sizeof(struct sockaddr_in));
	const struct sockaddr_in *src = (const struct sockaddr_in *)&h->src;
	const struct sockaddr_in *dst = (const struct sockaddr_in *)&h->dst;
	assert_int_equal(src->sin_family, AF_INET);
	assert_int_equal(dst->sin_family, AF_INET);
	assert_int_equal(src->sin_addr.s_addr, inet_addr("192.0.2.1"));
	assert_int_equal(dst->sin_addr.s_addr, inet_addr("198.51.100.2"));
	assert_int_equal(src->sin_port, htons(53000));
	assert_int_equal(dst->sin_port, htons(53));
}

static void assert_inet6(const struct proxy_hdr *h, int socktype)
{
	assert_false(h->local);
	assert_int_equal(h->socktype, socktype);
	assert_int_equal(h->src_len, sizeof(struct sockaddr_in6));
	assert_int_equal(h->dst_len, sizeof(struct sockaddr_in6));
	const struct sockaddr_in6 *src = (const struct sockaddr_in6 *)&h->src;
	const struct sockaddr_in6 *dst = (const struct sockaddr_in6 *)&h->dst;
	struct in6_addr a;
	assert_int_equal(src->sin6_family, AF_INET6);
	assert_int_equal(inet_pton(AF_INET6, "2001:db8::1", &a), 1);
	assert_memory_equal(&src->sin6_addr, &a, sizeof(a));
	assert_int_equal(src->sin6_port, htons(4242));
	assert_int_equal(src->sin6_flowinfo, 0);
	assert_int_equal(src->sin6_scope_id, 0);
	assert_int_equal(dst->sin6_family, AF_INET6);
	assert_int_equal(inet_pton(AF_INET6, "2001:db8::53", &a), 1);
	assert_memory_equal(&dst->sin6_addr, &a, sizeof(a));
	assert_int_equal(dst->sin6_port, htons(53));
}

static void assert_no_address(const struct proxy_hdr *h, bool local)
{
	assert_int_equal(h->local, local);
	assert_int_equal(h->socktype, 0);
	assert_int_equal(h->src_len, 0);
	assert_int_equal(h->dst_len, 0);
	assert_int_equal(h->src.ss_family, AF_UNSPEC);
}

static void test_inet_stream(void **state)
{
	uint8_t buf[BUF_MAX], body[64];
	size_t n = make(buf, 0x21, 0x11, body, inet_block(body));
	struct proxy_hdr h;
	assert_int_equal(n, 28);
	assert_int_equal(parse(buf, n, &h), 28);
	assert_inet(&h, SOCK_STREAM);
	assert_prefixes_more(buf, n);
}

static void test_inet_dgram(void **state)
{
	uint8_t buf[BUF_MAX], body[64];
	size_t n = make(buf, 0x21, 0x12, body, inet_block(body));
	struct proxy_hdr h;
	assert_int_equal(parse(buf, n, &h), 28);
	assert_inet(&h, SOCK_DGRAM);
	assert_prefixes_more(buf, n);
}

static void test_inet6(void **state)
{
	uint8_t buf[BUF_MAX], body[64];
	struct proxy_hdr h;
	size_t n = make(buf, 0x21, 0x21, body, inet6_block(body));
	assert_int_equal(n, 52);
	assert_int_equal(parse(buf, n, &h), 52);
	assert_inet6(&h, SOCK_STREAM);
	assert_prefixes_more(buf, n);
	n = make(buf, 0x21, 0x22, body, inet6_block(body));
	assert_int_equal(parse(buf, n, &h), 52);
	assert_inet6(&h, SOCK_DGRAM);
}

/* LOCAL: a balancer's own connection. Addresses, when given, are skipped, but the structure is still checked. */
static void test_local(void **state)
{
	uint8_t buf[BUF_MAX], body[128];
	struct proxy_hdr h;
	size_t n = make(buf, 0x20, 0x00, NULL, 0);
	assert_int_equal(parse(buf, n, &h), 16);
	assert_no_address(&h, true);
	assert_prefixes_more(buf, n);

	n = make(buf, 0x20, 0x11, body, inet_block(body));
	assert_int_equal(parse(buf, n, &h), 28);
	assert_no_address(&h, true);
	n = make(buf, 0x20, 0x22, body, inet6_block(body));
	assert_int_equal(parse(buf, n, &h), 52);
	assert_no_address(&h, true);

	size_t b = tlv(body, 0x04, NULL, 0);
	b += tlv(body + b, 0x01, "dot", 3);
	n = make(buf, 0x20, 0x00, body, b);
	assert_int_equal(parse(buf, n, &h), (int)n);
	assert_no_address(&h, true);
	assert_prefixes_more(buf, n);

	/* still checked: the address block's size, the TLVs' tiling, the command's neighbours */
	n = make(buf, 0x20, 0x11, body, 11);
	assert_int_equal(parse(buf, n, &h), PROXY_BAD);
	b = tlv(body, 0x01, "dot", 3);
	body[2] = 4;
	n = make(buf, 0x20, 0x00, body, b);
	assert_int_equal(parse(buf, n, &h), PROXY_BAD);
	n = make(buf, 0x20, 0x31, NULL, 0);
	assert_int_equal(parse(buf, n, &h), PROXY_BAD);
}

/* PROXY with family UNSPEC: the header is valid but names no client. */
static void test_unspec(void **state)
{
	uint8_t buf[BUF_MAX], body[64];
	struct proxy_hdr h;
	size_t n = make(buf, 0x21, 0x00, NULL, 0);
	assert_int_equal(parse(buf, n, &h), 16);
	assert_no_address(&h, false);
	assert_prefixes_more(buf, n);

	size_t b = tlv(body, 0x05, "id", 2);
	n = make(buf, 0x21, 0x00, body, b);
	assert_int_equal(parse(buf, n, &h), 21);
	assert_no_address(&h, false);
	assert_prefixes_more(buf, n);
}

static void test_tlvs(void **state)
{
	uint8_t buf[BUF_MAX], body[256];
	struct proxy_hdr h;
	size_t b = inet_block(body);
	b += tlv(body + b, 0x01, "dns", 3);                       /* ALPN */
	b += tlv(body + b, 0x04, NULL, 0);                        /* NOOP, zero length */
	b += tlv(body + b, 0x05, "0123456789abcdef", 16);         /* UNIQUE_ID */
	b += tlv(body + b, 0x03, "\x00\x00\x00\x00", 4);          /* CRC32C (not verified) */
	b += tlv(body + b, 0xEE, NULL, 0);                        /* a custom type, zero length, last */
	size_t n = make(buf, 0x21, 0x11, body, b);
	assert_int_equal(n, 16 + 12 + 6 + 3 + 19 + 7 + 3);
	assert_int_equal(parse(buf, n, &h), (int)n);
	assert_inet(&h, SOCK_STREAM);
	assert_prefixes_more(buf, n);

	b = inet6_block(body);
	b += tlv(body + b, 0x02, "resolver.example", 16);         /* AUTHORITY */
	b += tlv(body + b, 0x04, NULL, 0);
	n = make(buf, 0x21, 0x22, body, b);
	assert_int_equal(parse(buf, n, &h), (int)n);
	assert_inet6(&h, SOCK_DGRAM);
	assert_prefixes_more(buf, n);
}

/* A byte that differs from the signature is refused as soon as it has arrived. */
static void test_bad_signature(void **state)
{
	uint8_t buf[BUF_MAX], body[64];
	struct proxy_hdr h;
	size_t n = make(buf, 0x21, 0x11, body, inet_block(body));
	for (size_t i = 0; i < PROXY_SIG_LEN; i++) {
		uint8_t saved = buf[i];
		for (unsigned flip = 1; flip < 256; flip <<= 1) {
			buf[i] = (uint8_t)(saved ^ flip);
			if (parse(buf, n, &h) != PROXY_BAD || parse(buf, i + 1, &h) != PROXY_BAD)
				fail_msg("signature byte %zu xor 0x%02x not refused", i, flip);
		}
		buf[i] = saved;
		assert_int_equal(parse(buf, i + 1, &h), PROXY_MORE);
	}
	assert_int_equal(parse(buf, n, &h), 28);
}

static void test_bad_version(void **state)
{
	uint8_t buf[BUF_MAX], body[64];
	struct proxy_hdr h;
	static const uint8_t ver_cmd[] = { 0x11, 0x10, 0x31, 0x30, 0x01, 0xF1 };
	for (size_t i = 0; i < sizeof(ver_cmd); i++) {
		size_t n = make(buf, ver_cmd[i], 0x11, body, inet_block(body));
		assert_int_equal(parse(buf, n, &h), PROXY_BAD);
		assert_int_equal(parse(buf, 13, &h), PROXY_BAD);
	}
}

static void test_bad_command(void **state)
{
	uint8_t buf[BUF_MAX], body[64];
	struct proxy_hdr h;
	static const uint8_t ver_cmd[] = { 0x22, 0x23, 0x2F };
	for (size_t i = 0; i < sizeof(ver_cmd); i++) {
		size_t n = make(buf, ver_cmd[i], 0x11, body, inet_block(body));
		assert_int_equal(parse(buf, n, &h), PROXY_BAD);
		assert_int_equal(parse(buf, 13, &h), PROXY_BAD);
	}
}

/* Byte 14 is one of the values the specification lists, UNIX ones aside; everything else is refused. */
static void test_bad_family_protocol(void **state)
{
	uint8_t buf[BUF_MAX], body[256];
	struct proxy_hdr h;
	memset(body, 0, sizeof(body));
	static const uint8_t bad[] = {
		0x31, 0x32, /* UNIX: a 216-byte block, refused */
		0x41, 0x42, 0x40, 0xF1, /* family 4 and beyond */
		0x13, 0x23, 0x03, 0x1F, /* protocol 3 and beyond */
		0x10, 0x20, 0x01, 0x02, /* a family without a protocol, a protocol without a family */
	};
	for (size_t i = 0; i < sizeof(bad); i++) {
		size_t n = make(buf, 0x21, bad[i], body, 216);
		if (parse(buf, n, &h) != PROXY_BAD || parse(buf, 14, &h) != PROXY_BAD)
			fail_msg("family/protocol 0x%02x not refused", bad[i]);
		n = make(buf, 0x20, bad[i], body, 216);
		if (parse(buf, n, &h) != PROXY_BAD)
			fail_msg("family/protocol 0x%02x not refused with LOCAL", bad[i]);
	}
	/* the same bytes with a good family/protocol are fine */
	size_t n = make(buf, 0x21, 0x00, NULL, 0);
	assert_int_equal(parse(buf, 14, &h), PROXY_MORE);
	assert_int_equal(parse(buf, n, &h), 16);
}

static void test_short_address_block(void **state)
{
	uint8_t buf[BUF_MAX], body[64];
	struct proxy_hdr h;
	memset(body, 0, sizeof(body));
	for (size_t len = 0; len < 12; len++) {
		size_t n = make(buf, 0x21, 0x11, body, len);
		assert_int_equal(parse(buf, n, &h), PROXY_BAD);
		assert_int_equal(parse(buf, 16, &h), PROXY_BAD); /* known from the length alone */
	}
	for (size_t len = 0; len < 36; len++) {
		size_t n = make(buf, 0x21, 0x22, body, len);
		assert_int_equal(parse(buf, n, &h), PROXY_BAD);
		assert_int_equal(parse(buf, 16, &h), PROXY_BAD);
	}
	/* an INET6 header cannot pass as INET: 12 bytes are not enough for it */
	size_t n = make(buf, 0x21, 0x21, body, inet_block(body));
	assert_int_equal(parse(buf, n, &h), PROXY_BAD);
}

static void test_tlv_overrun(void **state)
{
	uint8_t buf[BUF_MAX], body[128];
	struct proxy_hdr h;
	/* a TLV whose value runs 1 byte past the header */
	size_t b = inet_block(body);
	size_t t = b;
	b += tlv(body + b, 0x01, "dns", 3);
	body[t + 2] = 4;
	size_t n = make(buf, 0x21, 0x11, body, b);
	assert_int_equal(parse(buf, n, &h), PROXY_BAD);
	/* refused as soon as the TLV's own length has arrived */
	assert_int_equal(parse(buf, 16 + t + 2, &h), PROXY_MORE);
	assert_int_equal(parse(buf, 16 + t + 3, &h), PROXY_BAD);
	/* the second TLV overruns, and one with length 0xFFFF */
	b = inet_block(body);
	b += tlv(body + b, 0x04, NULL, 0);
	t = b;
	b += tlv(body + b, 0x02, "ab", 2);
	body[t + 1] = 0xFF, body[t + 2] = 0xFF;
	n = make(buf, 0x21, 0x11, body, b);
	assert_int_equal(parse(buf, n, &h), PROXY_BAD);
	/* one or two bytes left over: no room for a TLV's header */
	for (size_t extra = 1; extra <= 2; extra++) {
		b = inet_block(body);
		b += tlv(body + b, 0x04, NULL, 0);
		memset(body + b, 0, extra);
		n = make(buf, 0x21, 0x11, body, b + extra);
		assert_int_equal(parse(buf, n, &h), PROXY_BAD);
		n = make(buf, 0x21, 0x00, body + 12, b - 12 + extra);
		assert_int_equal(parse(buf, n, &h), PROXY_BAD);
	}
	/* the header's length cuts a good TLV short; the byte after it is the client's */
	b = inet_block(body);
	b += tlv(body + b, 0x01, "dns", 3);
	n = make(buf, 0x21, 0x11, body, b - 1);
	buf[n] = body[b - 1];
	assert_int_equal(parse(buf, n, &h), PROXY_BAD);
	assert_int_equal(parse(buf, n + 1, &h), PROXY_BAD);
}

/* PROXY_HDR_MAX is the largest header accepted, whatever fills it. */
static void test_max_length(void **state)
{
	static uint8_t buf[BUF_MAX], body[BUF_MAX];
	struct proxy_hdr h;
	memset(body, 'x', sizeof(body));
	size_t b = inet_block(body);
	size_t vlen = PROXY_HDR_MAX - 16 - 12 - 3;
	body[b] = 0xE0, body[b + 1] = (uint8_t)(vlen >> 8), body[b + 2] = (uint8_t)vlen;
	size_t n = make(buf, 0x21, 0x11, body, b + 3 + vlen);
	assert_int_equal(n, PROXY_HDR_MAX);
	assert_int_equal(parse(buf, n, &h), PROXY_HDR_MAX);
	assert_inet(&h, SOCK_STREAM);
	assert_prefixes_more(buf, n);

	/* one byte more: refused from the length field alone */
	vlen++;
	body[b + 1] = (uint8_t)(vlen >> 8), body[b + 2] = (uint8_t)vlen;
	n = make(buf, 0x21, 0x11, body, b + 3 + vlen);
	assert_int_equal(n, PROXY_HDR_MAX + 1);
	assert_int_equal(parse(buf, n, &h), PROXY_BAD);
	assert_int_equal(parse(buf, 16, &h), PROXY_BAD);
	/* and the largest length the field can say */
	buf[14] = 0xFF, buf[15] = 0xFF;
	assert_int_equal(parse(buf, 16, &h), PROXY_BAD);
	assert_int_equal(parse(buf, sizeof(buf), &h), PROXY_BAD);
	/* LOCAL headers are held to the same limit: exactly at it, then one byte over */
	vlen = PROXY_HDR_MAX - 16 - 3;
	body[b + 1] = (uint8_t)(vlen >> 8), body[b + 2] = (uint8_t)vlen;
	n = make(buf, 0x20, 0x00, body + b, 3 + vlen);
	assert_int_equal(n, PROXY_HDR_MAX);
	assert_int_equal(parse(buf, n, &h), PROXY_HDR_MAX);
	assert_no_address(&h, true);
	vlen++;
	body[b + 1] = (uint8_t)(vlen >> 8), body[b + 2] = (uint8_t)vlen;
	n = make(buf, 0x20, 0x00, body + b, 3 + vlen);
	assert_int_equal(parse(buf, n, &h), PROXY_BAD);
	assert_int_equal(parse(buf, 16, &h), PROXY_BAD);
}

/* The result is where the client's bytes start; they are left as they were. */
static void test_client_bytes_follow(void **state)
{
	uint8_t buf[BUF_MAX], body[128];
	struct proxy_hdr h;
	size_t b = inet6_block(body);
	b += tlv(body + b, 0x01, "dns", 3);
	size_t n = make(buf, 0x21, 0x22, body, b);
	memcpy(buf + n, query, sizeof(query));
	uint8_t copy[BUF_MAX];
	memcpy(copy, buf, n + sizeof(query));
	assert_int_equal(parse(buf, n + sizeof(query), &h), (int)n);
	assert_inet6(&h, SOCK_DGRAM);
	assert_memory_equal(buf + n, query, sizeof(query));
	assert_memory_equal(buf, copy, n + sizeof(query));
	/* any number of the client's bytes, even one, does not change the verdict */
	for (size_t k = n; k <= n + sizeof(query); k++)
		assert_int_equal(parse(buf, k, &h), (int)n);

	/* bytes that look like another header are the client's too */
	n = make(buf, 0x20, 0x00, NULL, 0);
	size_t m = make(buf + n, 0x21, 0x11, body, inet_block(body));
	assert_int_equal(parse(buf, n + m, &h), 16);
	assert_no_address(&h, true);
}

static void test_has_signature(void **state)
{
	uint8_t buf[BUF_MAX];
	size_t n = make(buf, 0x21, 0x00, NULL, 0);
	memcpy(buf + n, query, sizeof(query));
	for (size_t k = 0; k <= n + sizeof(query); k++)
		assert_true(proxy_has_signature(buf, k));
	assert_true(proxy_has_signature(NULL, 0));
	/* the rest of the header does not matter to it */
	buf[12] = 0x13;
	assert_true(proxy_has_signature(buf, n));
	for (size_t i = 0; i < PROXY_SIG_LEN; i++) {
		buf[i] ^= 0x20;
		for (size_t k = 0; k <= n; k++)
			assert_int_equal(proxy_has_signature(buf, k), k <= i);
		buf[i] ^= 0x20;
	}
	assert_false(proxy_has_signature(query, sizeof(query)));
	assert_false(proxy_has_signature((const uint8_t *)"PROXY TCP4 ", 11));
	assert_false(proxy_has_signature((const uint8_t *)"\r\n\r\n\r", 5));
}

/* Version 1 is a text line; it is refused from its first byte. */
static void test_v1_text(void **state)
{
	static const char *lines[] = {
		"PROXY TCP4 192.0.2.1 198.51.100.2 53000 53\r\n",
		"PROXY TCP6 2001:db8::1 2001:db8::53 4242 53\r\n",
		"PROXY UNKNOWN\r\n",
	};
	struct proxy_hdr h;
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		uint8_t buf[BUF_MAX];
		size_t n = strlen(lines[i]);
		memcpy(buf, lines[i], n);
		memcpy(buf + n, query, sizeof(query));
		assert_int_equal(parse(buf, n + sizeof(query), &h), PROXY_BAD);
		assert_int_equal(parse(buf, n, &h), PROXY_BAD);
		assert_int_equal(parse(buf, 1, &h), PROXY_BAD);
		assert_false(proxy_has_signature(buf, n));
	}
	/* a bare DNS query is no header either */
	assert_int_equal(parse(query, sizeof(query), &h), PROXY_BAD);
	assert_int_equal(parse(query, 0, &h), PROXY_MORE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inet_stream),
		cmocka_unit_test(test_inet_dgram),
		cmocka_unit_test(test_inet6),
		cmocka_unit_test(test_local),
		cmocka_unit_test(test_unspec),
		cmocka_unit_test(test_tlvs),
		cmocka_unit_test(test_bad_signature),
		cmocka_unit_test(test_bad_version),
		cmocka_unit_test(test_bad_command),
		cmocka_unit_test(test_bad_family_protocol),
		cmocka_unit_test(test_short_address_block),
		cmocka_unit_test(test_tlv_overrun),
		cmocka_unit_test(test_max_length),
		cmocka_unit_test(test_client_bytes_follow),
		cmocka_unit_test(test_has_signature),
		cmocka_unit_test(test_v1_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
