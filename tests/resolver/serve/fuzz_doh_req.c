/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for doh_req.c: an HTTP/1.1 head and body, the dns parameter against a plain base64url decoder,
 * Forwarded and X-Forwarded-For, Content-Type and max-age over the same bytes, each from a copy of exact size. */
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "resolver/serve/doh.h"
#include "resolver/serve/doh_req.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

#define CHECK(c) do { if (!(c)) abort(); } while (0)

static int val64(uint8_t c)
{
	const char *a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	const char *p = c ? strchr(a, c) : NULL;
	return p ? (int)(p - a) : -1;
}

static int hex(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * The reference: the first "dns=" parameter, %XX undone, '=' stripped from
 * the end, the rest decoded 4 characters to 3 bytes. -1 when that is not
 * possible; no opinion on which escapes or padding are allowed.
 */
static long ref_decode(const uint8_t *q, size_t n, uint8_t *out)
{
	size_t i = 0;
	while (i <= n) {
		size_t end = i;
		while (end < n && q[end] != '&')
			end++;
		if (end - i == 3 && memcmp(q + i, "dns", 3) == 0)
			return -1;
		if (end - i >= 4 && memcmp(q + i, "dns=", 4) == 0) {
			static uint8_t chars[DOH_MAX_HEADERS];
			size_t c = 0;
			for (size_t k = i + 4; k < end; k++) {
				if (q[k] == '%' && end - k >= 3 && hex(q[k + 1]) >= 0 && hex(q[k + 2]) >= 0) {
					chars[c++] = (uint8_t)(hex(q[k + 1]) << 4 | hex(q[k + 2]));
					k += 2;
				} else {
					chars[c++] = q[k];
				}
			}
			while (c > 0 && chars[c - 1] == '=')
				c--;
			if (c % 4 == 1)
				return -1;
			long o = 0;
			uint32_t acc = 0;
			unsigned bits = 0;
			for (size_t k = 0; k < c; k++) {
				int v = val64(chars[k]);
				if (v < 0)
					return -1;
				acc = (acc << 6 | (uint32_t)v) & 0xFFFFFF;
				bits += 6;
				if (bits >= 8) {
					bits -= 8;
					out[o++] = (uint8_t)(acc >> bits);
				}
			}
			return o;
		}
		i = end + 1;
	}
	return -1;
}

static void check_addr(socklen_t l, const struct sockaddr_storage *ss)
{
	CHECK(l == 0 || l == sizeof(struct sockaddr_in) || l == sizeof(struct sockaddr_in6));
	if (l == sizeof(struct sockaddr_in))
		CHECK(ss->ss_family == AF_INET);
	if (l == sizeof(struct sockaddr_in6))
		CHECK(ss->ss_family == AF_INET6);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	uint8_t *p = malloc(len ? len : 1);
	CHECK(p != NULL);
	if (len)
		memcpy(p, data, len);
	static uint8_t buf[DOH_MAX_HEADERS], ref[DOH_MAX_HEADERS];

	/* the bytes as one value of each kind */
	struct sockaddr_storage ss;
	check_addr(doh_req_forwarded(p, len, &ss), &ss);
	check_addr(doh_req_xff(p, len, &ss), &ss);
	(void)doh_req_ctype_ok(p, len);
	(void)doh_req_max_age(p, len);
	size_t n = 0;
	int st = doh_req_dns_param(p, len, buf, sizeof(buf), &n);
	CHECK(st == 0 || st == 400 || st == 413);
	if (st == 0) {
		long r = ref_decode(p, len, ref);
		CHECK(n >= DOH_REQ_MSG_MIN && n <= sizeof(buf) && r == (long)n && memcmp(buf, ref, n) == 0);
	}

	/* the bytes as a request: head, then body */
	struct doh_req req;
	int h = doh_req_h1_head(p, len, &req);
	CHECK(h < 0 ? req.close && req.why != NULL : h == DOH_REQ_MORE || ((size_t)h <= len && h <= DOH_MAX_HEADERS));
	if (h > 0) {
		CHECK(req.target != NULL && req.target >= p && req.target + req.target_len <= p + h);
		check_addr(req.fwd_len, &req.fwd);
		check_addr(req.xff_len, &req.xff);
		const uint8_t *msg = NULL;
		size_t mlen = 0;
		size_t body = len - (size_t)h;
		if (req.has_clen && req.clen < body)
			body = req.clen;
		st = doh_req_finish(&req, "/dns-query", p + h, body, buf, sizeof(buf), &msg, &mlen);
		check_addr(req.fwd_len, &req.fwd);
		if (st == 0) {
			CHECK(mlen >= DOH_REQ_MSG_MIN && mlen <= DOH_REQ_MSG_MAX);
			if (req.method == DOH_REQ_POST) {
				CHECK(msg == p + h && mlen == body);
			} else {
				CHECK(req.method == DOH_REQ_GET && msg == buf);
				size_t pl = strlen("/dns-query?");
				CHECK(req.target_len > pl && memcmp(req.target, "/dns-query?", pl) == 0);
				long r = ref_decode(req.target + pl, req.target_len - pl, ref);
				CHECK(r == (long)mlen && memcmp(ref, msg, mlen) == 0);
			}
		} else {
			CHECK(st >= 400 && st <= 599 && req.why != NULL);
		}
	}
	free(p);
	return 0;
}
