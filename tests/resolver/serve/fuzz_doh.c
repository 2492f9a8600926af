/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for doh.c: HTTP/1.1 bytes, or HTTP/2 frames after a valid preface, in arbitrary splits; every
 * query is answered (some dropped, some in reverse order) and the output drained; the limits must hold. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "resolver/serve/doh.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

#define CHECK(c) do { if (!(c)) abort(); } while (0)

/* Queries not yet answered: the fuzzer answers them after each input. */
struct pend {
	unsigned n;
	uint32_t id[512];
	uint8_t msg[512][64];
	size_t len[512];
};

static void on_query(void *arg, uint32_t id, const uint8_t *msg, size_t len, const struct sockaddr_storage *xff,
                     socklen_t xff_len)
{
	struct pend *p = arg;
	CHECK(len >= 12 && len <= 65535);
	CHECK((xff == NULL) == (xff_len == 0));
	if (p->n < 512) {
		p->id[p->n] = id;
		p->len[p->n] = len < 64 ? len : 64;
		memcpy(p->msg[p->n], msg, p->len[p->n]);
		p->n++;
	}
}

static const struct doh_ops ops = { .query = on_query };

static uint32_t next(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

static void drain(struct doh_session *s)
{
	const uint8_t *d;
	long n;
	for (int i = 0; i < 100000 && (n = doh_session_output(s, &d)) > 0; i++)
		CHECK(d != NULL);
}

/* Answer every query: the query itself flipped to a response (the reader of max-age sees a real message), or
 * nothing (dropped), in order or backwards. */
static void answer(struct doh_session *s, struct pend *p, uint32_t *rnd)
{
	bool backwards = next(rnd) & 1;
	for (unsigned k = 0; k < p->n; k++) {
		unsigned i = backwards ? p->n - 1 - k : k;
		p->msg[i][2] |= 0x80;
		size_t l = next(rnd) % 5 == 0 ? 0 : p->len[i];
		CHECK(doh_session_reply(s, p->id[i], p->msg[i], l) == 0);
	}
	p->n = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	if (len < 1)
		return 0;
	/* the first byte: HTTP/2 or not, trusted forwarding or not, the splits' seed */
	bool h2 = data[0] & 1, trust = data[0] & 2;
	uint32_t rnd = 0x9E3779B9u ^ data[0] ^ (uint32_t)len << 8;
	data++, len--;
	static struct pend p;
	p.n = 0;
	struct doh_session *s = doh_session_new(h2, "/dns-query", trust, &ops, &p);
	CHECK(s != NULL);
	if (h2) {
		static const uint8_t preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";
		CHECK(doh_session_input(s, preface, sizeof(preface) - 1) == 0);
	}
	size_t off = 0;
	while (off < len) {
		uint32_t r = next(&rnd);
		size_t chunk = r % 4 == 0 ? len - off : 1 + (r >> 8) % 64;
		if (chunk > len - off)
			chunk = len - off;
		/* an exact-size copy: a read past the chunk is a heap overflow */
		uint8_t *c = malloc(chunk);
		CHECK(c != NULL);
		memcpy(c, data + off, chunk);
		int rc = doh_session_input(s, c, chunk);
		free(c);
		off += chunk;
		CHECK(doh_session_pending(s) <= 2 * DOH_MAX_STREAMS);
		if (!h2)
			CHECK(doh_session_pending(s) <= DOH_MAX_STREAMS);
		if (rc != 0) {
			CHECK(doh_session_done(s));
			break;
		}
		if (next(&rnd) % 3)
			answer(s, &p, &rnd);
		drain(s);
	}
	answer(s, &p, &rnd);
	drain(s);
	CHECK(doh_session_pending(s) == 0);
	doh_session_free(s);
	return 0;
}
