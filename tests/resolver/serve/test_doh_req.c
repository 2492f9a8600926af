/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of resolver/serve/doh_req.c: base64url dns parameters, header values, forwarding, HTTP/1.1, max-age. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "resolver/serve/doh.h"
#include "resolver/serve/doh_req.h"

#define S(x) (const uint8_t *)(x), strlen(x)

/* dns parameter of query string q: status, and the decoded bytes in out. */
static int param(const char *q, uint8_t *out, size_t *n)
{
	return doh_req_dns_param(S(q), out, 1024, n);
}

static void test_b64_lengths(void **state)
{
	uint8_t out[1024];
	size_t n = 0;
	/* 12 bytes: 16 characters, no padding needed */
	assert_int_equal(param("dns=AAECAwQFBgcICQoL", out, &n), 0);
	assert_int_equal(n, 12);
	for (unsigned i = 0; i < 12; i++)
		assert_int_equal(out[i], i);
	/* 13 bytes: 18 characters (mod 4 == 2), with and without "==" */
	assert_int_equal(param("dns=AAECAwQFBgcICQoLDA", out, &n), 0);
	assert_int_equal(n, 13);
	assert_int_equal(out[12], 12);
	assert_int_equal(param("dns=AAECAwQFBgcICQoLDA==", out, &n), 0);
	assert_int_equal(n, 13);
	/* 14 bytes: 19 characters (mod 4 == 3), with and without "=" */
	assert_int_equal(param("dns=AAECAwQFBgcICQoLDA0", out, &n), 0);
	assert_int_equal(n, 14);
	assert_int_equal(out[13], 13);
	assert_int_equal(param("dns=AAECAwQFBgcICQoLDA0=", out, &n), 0);
	/* mod 4 == 1 is never an encoding */
	assert_int_equal(param("dns=AAECAwQFBgcICQoLDA0OD", out, &n), 400);
	/* 11 bytes: shorter than a DNS header */
	assert_int_equal(param("dns=AAECAwQFBgcICQo", out, &n), 400);
	/* longer than the caller's buffer */
	uint8_t small[12];
	assert_int_equal(doh_req_dns_param(S("dns=AAECAwQFBgcICQoLDA"), small, sizeof(small), &n), 413);
}

static void test_b64_padding_and_alphabet(void **state)
{
	uint8_t out[1024];
	size_t n;
	assert_int_equal(param("dns=AAECAwQFBgcICQoLDA=", out, &n), 400);     /* one '=' where two are due */
	assert_int_equal(param("dns=AAECAwQFBgcICQoLDA===", out, &n), 400);   /* three */
	assert_int_equal(param("dns=AAECAwQFBgcICQoL=", out, &n), 400);       /* padding a whole quantum */
	assert_int_equal(param("dns=AAECAwQF=BgcICQoLDA", out, &n), 400);     /* '=' inside */
	assert_int_equal(param("dns=AAECAwQFBgcICQoL+A", out, &n), 400);      /* '+' is base64, not base64url */
	assert_int_equal(param("dns=AAECAwQFBgcICQoL/A", out, &n), 400);
	assert_int_equal(param("dns=AAECAwQFBgcI CQoLDA", out, &n), 400);
	assert_int_equal(param("dns=AAECAwQFBgcICQoLDB", out, &n), 400);      /* non-zero bits after the last byte */
	/* '-' and '_' are 62 and 63 */
	assert_int_equal(param("dns=-_-_AAAAAAAAAAAA", out, &n), 0);
	assert_int_equal(out[0], 0xFB);
	assert_int_equal(out[1], 0xFF);
	assert_int_equal(out[2], 0xBF);
}

static void test_b64_percent(void **state)
{
	uint8_t out[1024];
	size_t n;
	/* escapes of alphabet characters and of '=' decode */
	assert_int_equal(param("dns=%41AECAwQFBgcICQoLDA%3d%3D", out, &n), 0);
	assert_int_equal(n, 13);
	assert_int_equal(param("dns=AAECAwQFBgcICQoL%2D%5F%2d%5f", out, &n), 0);
	/* escapes of anything else do not, nor malformed ones */
	assert_int_equal(param("dns=AAECAwQFBgcICQoL%2B", out, &n), 400);
	assert_int_equal(param("dns=AAECAwQFBgcICQoL%00AA", out, &n), 400);
	assert_int_equal(param("dns=AAECAwQFBgcICQoL%26AA", out, &n), 400);
	assert_int_equal(param("dns=AAECAwQFBgcICQoL%4", out, &n), 400);
	assert_int_equal(param("dns=AAECAwQFBgcICQoL%G1AA", out, &n), 400);
	assert_int_equal(param("dns=AAECAwQFBgcICQoL%", out, &n), 400);
}

static void test_params(void **state)
{
	uint8_t out[1024];
	size_t n;
	assert_int_equal(param("ct=x&dns=AAECAwQFBgcICQoL&z", out, &n), 0);
	assert_int_equal(n, 12);
	/* the first dns wins, even broken */
	assert_int_equal(param("dns=AAECAwQFBgcICQoL&dns=!!", out, &n), 0);
	assert_int_equal(param("dns=!!&dns=AAECAwQFBgcICQoL", out, &n), 400);
	assert_int_equal(param("dns&dns=AAECAwQFBgcICQoL", out, &n), 400);
	/* names are exact */
	assert_int_equal(param("DNS=AAECAwQFBgcICQoL", out, &n), 400);
	assert_int_equal(param("xdns=AAECAwQFBgcICQoL", out, &n), 400);
	assert_int_equal(param("", out, &n), 400);
	assert_int_equal(param("dns=", out, &n), 400);
}

static void test_ctype(void **state)
{
	assert_true(doh_req_ctype_ok(S("application/dns-message")));
	assert_true(doh_req_ctype_ok(S("Application/DNS-Message")));
	assert_true(doh_req_ctype_ok(S(" application/dns-message ; charset=x")));
	assert_false(doh_req_ctype_ok(S("application/dns-messages")));
	assert_false(doh_req_ctype_ok(S("application/dns")));
	assert_false(doh_req_ctype_ok(S("text/plain")));
	assert_false(doh_req_ctype_ok(S("")));
}

static void expect_addr(socklen_t len, const struct sockaddr_storage *ss, const char *want, unsigned port)
{
	char buf[INET6_ADDRSTRLEN];
	assert_int_not_equal(len, 0);
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
		assert_int_equal(len, sizeof(*a));
		inet_ntop(AF_INET, &a->sin_addr, buf, sizeof(buf));
		assert_int_equal(ntohs(a->sin_port), port);
	} else {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
		assert_int_equal(ss->ss_family, AF_INET6);
		assert_int_equal(len, sizeof(*a));
		inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof(buf));
		assert_int_equal(ntohs(a->sin6_port), port);
	}
	assert_string_equal(buf, want);
}

static void test_forwarded(void **state)
{
	struct sockaddr_storage ss;
	expect_addr(doh_req_forwarded(S("for=192.0.2.60;proto=http;by=203.0.113.43"), &ss), &ss, "192.0.2.60", 0);
	expect_addr(doh_req_forwarded(S("For=\"192.0.2.60:4711\""), &ss), &ss, "192.0.2.60", 4711);
	expect_addr(doh_req_forwarded(S("for=\"[2001:db8:cafe::17]:4711\""), &ss), &ss, "2001:db8:cafe::17", 4711);
	expect_addr(doh_req_forwarded(S("for=\"[2001:db8:cafe::17]\", for=192.0.2.1"), &ss), &ss, "2001:db8:cafe::17",
	            0);
	expect_addr(doh_req_forwarded(S("for=[2001:db8::1]"), &ss), &ss, "2001:db8::1", 0);  /* unquoted, as seen */
	expect_addr(doh_req_forwarded(S("proto=https; for=198.51.100.7 ;by=x"), &ss), &ss, "198.51.100.7", 0);
	expect_addr(doh_req_forwarded(S("for=\"192.0.2.\\61\""), &ss), &ss, "192.0.2.61", 0);  /* quoted-pair */
	expect_addr(doh_req_forwarded(S("for=192.0.2.1:_hidden"), &ss), &ss, "192.0.2.1", 0);
	/* nobody: unknown, obfuscated, not in the first element, malformed */
	assert_int_equal(doh_req_forwarded(S("for=unknown"), &ss), 0);
	assert_int_equal(doh_req_forwarded(S("for=\"_gazonk\""), &ss), 0);
	assert_int_equal(doh_req_forwarded(S("proto=http, for=192.0.2.1"), &ss), 0);
	assert_int_equal(doh_req_forwarded(S("for=2001:db8::1"), &ss), 0); /* bare IPv6: ambiguous */
	assert_int_equal(doh_req_forwarded(S("for=\"192.0.2.1"), &ss), 0);
	assert_int_equal(doh_req_forwarded(S("for=192.0.2.1:65536"), &ss), 0);
	assert_int_equal(doh_req_forwarded(S("for=192.0.2.256"), &ss), 0);
	assert_int_equal(doh_req_forwarded(S("=192.0.2.1"), &ss), 0);
	assert_int_equal(doh_req_forwarded(S("for=[::1"), &ss), 0);
	assert_int_equal(doh_req_forwarded(S("for=[::1]x"), &ss), 0);
	assert_int_equal(doh_req_forwarded(S("for=[fe80::1%eth0]"), &ss), 0);
	assert_int_equal(doh_req_forwarded(S(""), &ss), 0);
}

static void test_xff(void **state)
{
	struct sockaddr_storage ss;
	expect_addr(doh_req_xff(S("203.0.113.195"), &ss), &ss, "203.0.113.195", 0);
	expect_addr(doh_req_xff(S(" 203.0.113.195:8080 , 70.41.3.18"), &ss), &ss, "203.0.113.195", 8080);
	expect_addr(doh_req_xff(S("2001:db8:85a3::8a2e:370:7334, 1.2.3.4"), &ss), &ss, "2001:db8:85a3::8a2e:370:7334",
	            0);
	expect_addr(doh_req_xff(S("[2001:db8::1]:443"), &ss), &ss, "2001:db8::1", 443);
	expect_addr(doh_req_xff(S("[2001:db8::1]"), &ss), &ss, "2001:db8::1", 0);
	expect_addr(doh_req_xff(S("::ffff:192.0.2.1"), &ss), &ss, "::ffff:192.0.2.1", 0);
	assert_int_equal(doh_req_xff(S("unknown, 1.2.3.4"), &ss), 0);
	assert_int_equal(doh_req_xff(S(""), &ss), 0);
	assert_int_equal(doh_req_xff(S("1.2.3"), &ss), 0);
	assert_int_equal(doh_req_xff(S("1.2.3.4:"), &ss), 0);
	assert_int_equal(doh_req_xff(S("[1.2.3.4]"), &ss), 0);
}

static void test_headers(void **state)
{
	struct doh_req r;
	doh_req_init(&r);
	assert_int_equal(doh_req_header(&r, S("Content-Length"), S(" 42 ")), 0);
	assert_int_equal(doh_req_header(&r, S("content-length"), S("42")), 0);
	assert_int_equal(doh_req_header(&r, S("content-length"), S("43")), 400);
	assert_true(r.close);
	doh_req_init(&r);
	assert_int_equal(doh_req_header(&r, S("content-length"), S("+5")), 400);
	doh_req_init(&r);
	assert_int_equal(doh_req_header(&r, S("content-length"), S("99999999999999999999999")), 413);
	doh_req_init(&r);
	assert_int_equal(doh_req_header(&r, S("content-length"), S("65535")), 0);
	assert_int_equal(doh_req_header(&r, S("connection"), S("keep-alive, Close")), 0);
	assert_true(r.close);
	/* the first field line of each forwarding header counts, Forwarded before X-Forwarded-For */
	doh_req_init(&r);
	doh_req_header(&r, S("x-forwarded-for"), S("192.0.2.9"));
	doh_req_header(&r, S("x-forwarded-for"), S("192.0.2.10"));
	doh_req_header(&r, S("forwarded"), S("for=unknown"));
	doh_req_header(&r, S("forwarded"), S("for=192.0.2.11"));
	assert_int_equal(r.fwd_len, 0);
	expect_addr(r.xff_len, &r.xff, "192.0.2.9", 0);
}

/* doh_req_h1_head over text; the head's length or -status. */
static int head(const char *text, struct doh_req *r)
{
	return doh_req_h1_head(S(text), r);
}

static void test_h1_head(void **state)
{
	struct doh_req r;
	const char *get = "GET /dns-query?dns=AAECAwQFBgcICQoL HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\nrest";
	assert_int_equal(head(get, &r), (int)strlen(get) - 4);
	assert_int_equal(r.method, DOH_REQ_GET);
	assert_int_equal(r.target_len, strlen("/dns-query?dns=AAECAwQFBgcICQoL"));
	assert_false(r.close);
	/* every prefix is MORE */
	for (size_t k = 0; k < strlen(get) - 4; k++)
		assert_int_equal(doh_req_h1_head((const uint8_t *)get, k, &r), DOH_REQ_MORE);
	assert_int_equal(head("GET / HTTP/1.0\r\n\r\n", &r), 18);
	assert_true(r.close);
	assert_int_equal(head("GET / HTTP/1.1\r\n\r\n", &r), -400);            /* no Host */
	assert_int_equal(head("GET / HTTP/2.0\r\nHost: x\r\n\r\n", &r), -400);
	assert_int_equal(head("GET / HTTP/1.2\r\nHost: x\r\n\r\n", &r), -505);
	assert_int_equal(head("GET / HTTP/1.1\nHost: x\r\n\r\n", &r), -400);  /* bare LF */
	assert_int_equal(head("GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", &r), -400);
	assert_int_equal(head("GET / HTTP/1.1\r\nHost : x\r\n\r\n", &r), -400);
	assert_int_equal(head("GET / HTTP/1.1\r\nHost: x\rx\r\n\r\n", &r), -400);
	assert_int_equal(head("GET / HTTP/1.1\r\nHost: \x01\r\n\r\n", &r), -400);
	assert_int_equal(head("GET  / HTTP/1.1\r\nHost: x\r\n\r\n", &r), -400);
	assert_int_equal(head("GET http://x/ HTTP/1.1\r\nHost: x\r\n\r\n", &r), -400);
	assert_int_equal(head("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", &r), -411);
	assert_true(r.close);
	assert_int_equal(head("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
	                      "Content-Length: 3\r\n\r\n", &r), -400);
	/* a header refused for its value: the head parses, the status waits in r */
	int n = head("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 70000\r\n\r\n", &r);
	assert_true(n > 0);
	assert_int_equal(r.status, 413);
	assert_true(r.close);

	/* 64 header lines pass, 65 do not */
	char buf[DOH_MAX_HEADERS];
	size_t len = (size_t)snprintf(buf, sizeof(buf), "GET / HTTP/1.1\r\nHost: x\r\n");
	for (int i = 1; i < DOH_REQ_MAX_LINES; i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "X-%d: y\r\n", i);
	memcpy(buf + len, "\r\n", 3);
	assert_true(head(buf, &r) > 0);
	memcpy(buf + len, "A: b\r\n\r\n", 9);
	assert_int_equal(head(buf, &r), -431);
	/* a block of DOH_MAX_HEADERS without its end */
	memset(buf, 'a', sizeof(buf));
	memcpy(buf, "GET / HTTP/1.1\r\nX: ", 19);
	assert_int_equal(doh_req_h1_head((const uint8_t *)buf, sizeof(buf), &r), -431);
	assert_int_equal(doh_req_h1_head((const uint8_t *)buf, sizeof(buf) - 1, &r), DOH_REQ_MORE);
}

static void test_finish(void **state)
{
	struct doh_req r;
	uint8_t buf[1024];
	const uint8_t *msg;
	size_t len;
	static const uint8_t body[12] = { 1 };
#define FIN(b, bl) doh_req_finish(&r, "/dns-query", b, bl, buf, sizeof(buf), &msg, &len)
	head("GET /dns-query?dns=AAECAwQFBgcICQoL HTTP/1.1\r\nHost: x\r\n\r\n", &r);
	assert_int_equal(FIN(NULL, 0), 0);
	assert_int_equal(len, 12);
	assert_ptr_equal(msg, buf);
	head("GET /dns-query/?dns=AAECAwQFBgcICQoL HTTP/1.1\r\nHost: x\r\n\r\n", &r);
	assert_int_equal(FIN(NULL, 0), 404);
	head("GET /dns%2Dquery?dns=AAECAwQFBgcICQoL HTTP/1.1\r\nHost: x\r\n\r\n", &r);
	assert_int_equal(FIN(NULL, 0), 404);
	head("GET /dns-query HTTP/1.1\r\nHost: x\r\n\r\n", &r);
	assert_int_equal(FIN(NULL, 0), 400);
	head("HEAD /dns-query?dns=AAECAwQFBgcICQoL HTTP/1.1\r\nHost: x\r\n\r\n", &r);
	assert_int_equal(FIN(NULL, 0), 405);
	head("POST /dns-query HTTP/1.1\r\nHost: x\r\nContent-Type: application/dns-message\r\n"
	     "Content-Length: 12\r\n\r\n", &r);
	assert_int_equal(FIN(body, 12), 0);
	assert_ptr_equal(msg, body);
	assert_int_equal(FIN(body, 11), 400);
	head("POST /dns-query HTTP/1.1\r\nHost: x\r\nContent-Type: application/dns-message\r\n\r\n", &r);
	assert_int_equal(FIN(body, 11), 400);
	head("POST /dns-query HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n\r\n", &r);
	assert_int_equal(FIN(body, 12), 415);
	assert_non_null(r.why);
	/* X-Forwarded-For stands in when Forwarded names nobody */
	head("POST /dns-query HTTP/1.1\r\nHost: x\r\nForwarded: for=unknown\r\nX-Forwarded-For: 192.0.2.5\r\n"
	     "Content-Type: application/dns-message\r\n\r\n", &r);
	assert_int_equal(FIN(body, 12), 0);
	expect_addr(r.fwd_len, &r.fwd, "192.0.2.5", 0);
#undef FIN
}

/* A reply: question example.com A, then records given as (section, type, ttl, rdata). */
static size_t msg(uint8_t *m, unsigned an, unsigned ns, unsigned ar)
{
	static const uint8_t hdr[12] = { 0x12, 0x34, 0x81, 0x80, 0, 1 };
	memcpy(m, hdr, 12);
	m[7] = (uint8_t)an, m[9] = (uint8_t)ns, m[11] = (uint8_t)ar;
	static const uint8_t q[] = { 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0, 0, 1, 0, 1 };
	memcpy(m + 12, q, sizeof(q));
	return 12 + sizeof(q);
}

static size_t rr(uint8_t *m, size_t off, uint16_t type, uint32_t ttl, const uint8_t *rd, uint16_t rdlen)
{
	uint8_t *p = m + off;
	p[0] = 0xC0, p[1] = 12; /* example.com */
	if (type == 41)
		p[0] = 0, p -= 1, off -= 1; /* OPT: root owner */
	p[2] = (uint8_t)(type >> 8), p[3] = (uint8_t)type, p[4] = 0, p[5] = 1;
	p[6] = (uint8_t)(ttl >> 24), p[7] = (uint8_t)(ttl >> 16), p[8] = (uint8_t)(ttl >> 8), p[9] = (uint8_t)ttl;
	p[10] = (uint8_t)(rdlen >> 8), p[11] = (uint8_t)rdlen;
	if (rdlen)
		memcpy(p + 12, rd, rdlen);
	return off + 12 + rdlen;
}

static size_t soa(uint8_t *m, size_t off, uint32_t ttl, uint32_t minimum)
{
	uint8_t rd[22] = { 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4 };
	rd[18] = (uint8_t)(minimum >> 24), rd[19] = (uint8_t)(minimum >> 16);
	rd[20] = (uint8_t)(minimum >> 8), rd[21] = (uint8_t)minimum;
	return rr(m, off, 6, ttl, rd, 22);
}

static void test_max_age(void **state)
{
	uint8_t m[512];
	static const uint8_t a[4] = { 192, 0, 2, 1 };
	size_t n = msg(m, 2, 0, 1);
	n = rr(m, n, 1, 300, a, 4);
	n = rr(m, n, 1, 60, a, 4);
	n = rr(m, n, 41, 0, NULL, 0); /* OPT's TTL field is flags: 0 would win if it counted */
	assert_int_equal(doh_req_max_age(m, n), 60);
	/* negative: SOA MINIMUM capped by its TTL, both ways */
	n = soa(m, msg(m, 0, 1, 0), 3600, 900);
	assert_int_equal(doh_req_max_age(m, n), 900);
	n = soa(m, msg(m, 0, 1, 0), 100, 900);
	assert_int_equal(doh_req_max_age(m, n), 100);
	/* none: no records, or no SOA in a reply without answers */
	n = msg(m, 0, 0, 0);
	assert_int_equal(doh_req_max_age(m, n), 0);
	n = rr(m, msg(m, 0, 0, 1), 1, 300, a, 4);
	assert_int_equal(doh_req_max_age(m, n), 0);
	/* malformed, truncated */
	n = rr(m, msg(m, 1, 0, 0), 1, 300, a, 4);
	assert_int_equal(doh_req_max_age(m, n), 300);
	assert_int_equal(doh_req_max_age(m, n - 1), 0);
	assert_int_equal(doh_req_max_age(m, 5), 0);
	/* a TTL with the top bit set counts as 0 */
	n = rr(m, msg(m, 1, 0, 0), 1, 0x80000000u, a, 4);
	assert_int_equal(doh_req_max_age(m, n), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_b64_lengths),
		cmocka_unit_test(test_b64_padding_and_alphabet),
		cmocka_unit_test(test_b64_percent),
		cmocka_unit_test(test_params),
		cmocka_unit_test(test_ctype),
		cmocka_unit_test(test_forwarded),
		cmocka_unit_test(test_xff),
		cmocka_unit_test(test_headers),
		cmocka_unit_test(test_h1_head),
		cmocka_unit_test(test_finish),
		cmocka_unit_test(test_max_age),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
