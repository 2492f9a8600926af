/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for proxy_parse: the result's range, a header's length alone parses alike, MORE only
 * while the declared length has not all arrived, addresses that match their length, and streaming: a
 * growing prefix goes MORE..., then BAD or the header's length, never back. */
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "resolver/serve/proxy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

#define CHECK(c) do { if (!(c)) abort(); } while (0)

/* proxy_parse over k bytes that end where buf's allocation ends (ASan sees a read past k); h untouched unless > 0. */
static int parse_tail(uint8_t *buf, size_t cap, const uint8_t *data, size_t k, struct proxy_hdr *h)
{
	uint8_t *p = buf + cap - k;
	if (k)
		memcpy(p, data, k);
	struct proxy_hdr before;
	memset(&before, 0x5A, sizeof(before));
	memcpy(h, &before, sizeof(*h));
	int r = proxy_parse(p, k, h);
	if (r <= 0)
		CHECK(memcmp(h, &before, sizeof(*h)) == 0);
	return r;
}

static void check_hdr(const struct proxy_hdr *h)
{
	switch (h->src_len) {
	case 0:
		CHECK(h->src.ss_family == AF_UNSPEC);
		CHECK(h->socktype == 0);
		break;
	case sizeof(struct sockaddr_in):
		CHECK(h->src.ss_family == AF_INET);
		break;
	case sizeof(struct sockaddr_in6):
		CHECK(h->src.ss_family == AF_INET6);
		break;
	default:
		abort();
	}
	CHECK(h->dst_len == h->src_len);
	CHECK(h->dst.ss_family == h->src.ss_family);
	if (h->local)
		CHECK(h->src_len == 0);
	if (h->src_len != 0)
		CHECK(h->socktype == SOCK_STREAM || h->socktype == SOCK_DGRAM);
}

static bool same_hdr(const struct proxy_hdr *a, const struct proxy_hdr *b)
{
	return a->local == b->local && a->socktype == b->socktype && a->src_len == b->src_len &&
	       a->dst_len == b->dst_len && memcmp(&a->src, &b->src, a->src_len) == 0 &&
	       memcmp(&a->dst, &b->dst, a->dst_len) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	uint8_t *buf = malloc(len ? len : 1);
	CHECK(buf != NULL);
	struct proxy_hdr h, again;
	int r = parse_tail(buf, len, data, len, &h);
	size_t declared = len >= PROXY_HDR_MIN ? PROXY_HDR_MIN + ((size_t)data[14] << 8 | data[15]) : 0;

	CHECK(r == PROXY_BAD || r == PROXY_MORE || r > 0);
	if (!proxy_has_signature(data, len))
		CHECK(r == PROXY_BAD);
	if (r == PROXY_MORE)
		CHECK(len < PROXY_HDR_MIN || len < declared);
	if (r > 0) {
		CHECK((size_t)r >= PROXY_HDR_MIN && (size_t)r <= len && r <= PROXY_HDR_MAX);
		CHECK((size_t)r == declared);
		check_hdr(&h);
		/* the header alone, without the client's bytes, says the same */
		CHECK(parse_tail(buf, len, data, (size_t)r, &again) == r);
		CHECK(same_hdr(&h, &again));
	}

	/* Streaming: every prefix before the verdict is MORE; from the first BAD on, BAD; from the
	 * header's end on, its length. Past PROXY_HDR_MAX bytes nothing changes any more. */
	size_t upto = len < PROXY_HDR_MAX + 1 ? len : PROXY_HDR_MAX + 1;
	bool bad = false;
	for (size_t k = 0; k < upto; k++) {
		int rk = parse_tail(buf, len, data, k, &again);
		if (bad) {
			CHECK(rk == PROXY_BAD);
		} else if (rk == PROXY_BAD) {
			CHECK(r == PROXY_BAD);
			bad = true;
		} else if (rk == PROXY_MORE) {
			CHECK(r == PROXY_MORE || r == PROXY_BAD || (size_t)r > k);
		} else {
			CHECK(rk == r && (size_t)r <= k && same_hdr(&h, &again));
		}
	}
	free(buf);
	return 0;
}
