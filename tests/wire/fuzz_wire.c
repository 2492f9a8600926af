/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target `wire`: client-query parsing, reply writing, response preparation and checks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/answer.h"
#include "wire/names.h"
#include "wire/parse.h"
#include "wire/upstream.h"
#include "wire/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Abort on a broken invariant so the fuzzer reports it as a crash. */
#define CHECK(cond)                  \
	do {                             \
		if (!(cond))                 \
			abort();                 \
	} while (0)

static uint8_t big[WIRE_MAX_MSG + 64];
static uint8_t small[512];

static void check_written(int n, size_t cap)
{
	CHECK(n < 0 || (size_t)n <= cap);
	CHECK(n < 0 || n >= WIRE_HEADER_SIZE);
}

/* The input as a client query: parse, then every reply we could send to it. */
static void as_query(const uint8_t *data, size_t size)
{
	struct wire_query q;
	int rc = wire_parse_query(data, size, &q);
	if (rc == WIRE_E_DROP)
		return;
	CHECK(rc == 0 || rc == WIRE_NOTIFY || rc == WIRE_E_FORMERR || rc == WIRE_E_NOTIMP || rc == WIRE_E_BADVERS);
	if (q.question_ok) {
		CHECK(q.qname_len >= 1 && q.qname_len <= WIRE_MAX_NAME);
		CHECK(wire_name_check(q.qname, q.qname_len) == 0);
		char text[4 * WIRE_MAX_NAME + 2];
		CHECK(wire_name_to_text(q.qname, q.qname_len, text, sizeof(text)) > 0);
		uint8_t back[WIRE_MAX_NAME];
		int n = wire_name_from_text(text, back, sizeof(back));
		CHECK(n == (int)q.qname_len && memcmp(back, q.qname, q.qname_len) == 0);
	}
	int err = rc == WIRE_E_BADVERS ? WIRE_RCODE_BADVERS : WIRE_RCODE_FORMERR;
	const struct wire_ede ede = { WIRE_EDE_INVALID_DATA, "fuzz" };
	check_written(wire_write_error(&q, err, q.has_ecs ? &q.ecs : NULL, &ede, big, sizeof(big)), sizeof(big));
	check_written(wire_write_error(&q, err, NULL, &ede, small, 12), 12);
	if (rc != 0)
		return;
	size_t limit = wire_udp_limit(&q, 4096);
	CHECK(limit >= 512 && limit <= 4096);
	check_written(wire_write_any(&q, NULL, big, sizeof(big)), sizeof(big));

	/* The same question upstream, with the client's ECS: it must parse back identically. */
	uint8_t up[WIRE_MAX_NAME + 64];
	int un = wire_query_build(q.id, true, q.edns_do, q.qname, q.qname_len, q.qtype, q.qclass,
				  q.has_ecs ? &q.ecs : NULL, up, sizeof(up));
	CHECK(un > 0);
	struct wire_query uq;
	CHECK(wire_parse_query(up, (size_t)un, &uq) == 0);
	CHECK(uq.qname_len == q.qname_len && memcmp(uq.qname, q.qname, q.qname_len) == 0);
	CHECK(uq.has_ecs == q.has_ecs && (!q.has_ecs || ecs_match(&q.ecs, &uq.ecs)));

	/* A positive answer for the query's own question, then the reply from it. */
	uint8_t resp[WIRE_MAX_NAME + 64];
	size_t n = 0;
	memcpy(resp, data, 4);
	resp[2] |= 0x80;
	memcpy(resp + 4, "\0\1\0\1\0\0\0\0", 8);
	n = WIRE_HEADER_SIZE;
	memcpy(resp + n, q.qname, q.qname_len);
	n += q.qname_len;
	resp[n++] = (uint8_t)(q.qtype >> 8);
	resp[n++] = (uint8_t)q.qtype;
	resp[n++] = (uint8_t)(q.qclass >> 8);
	resp[n++] = (uint8_t)q.qclass;
	memcpy(resp + n, "\xc0\x0c\0\1\0\1\0\0\0\x3c\0\4\xc6\x33\x64\1", 16);
	n += 16;
	uint8_t *blob;
	size_t blob_len;
	uint32_t ttl;
	CHECK(wire_answer_prepare(resp, n, NULL, &blob, &blob_len, &ttl) == 0);
	int w = wire_answer_write(&q, data, blob, blob_len, 10, q.has_ecs ? &q.ecs : NULL, big, sizeof(big));
	CHECK(w > 0);
	struct wire_query back;
	/* Our reply is a response: parsing it as a query must drop it... */
	CHECK(wire_parse_query(big, (size_t)w, &back) == WIRE_E_DROP);
	/* ...and it answers the upstream query we built (ECS echoed unchanged). */
	struct wire_resp_info info;
	CHECK(wire_response_check(big, (size_t)w, q.id, q.qname, q.qname_len, q.qtype, q.qclass,
				  q.has_ecs ? &q.ecs : NULL, &info) == 0);
	CHECK(info.has_ecs == q.has_ecs);
	free(blob);
}

/*
 * wire_answer_adopt_chain keeps the message's layout, wire_answer_prepare_chain
 * re-encodes it: both must accept the same messages (the adopted one may keep
 * a message whose re-encoding would pass 64 KiB) and store the same answer.
 * Re-encoding the adopted message must give the prepared one byte for byte,
 * since the re-encoding depends only on the names and records, in order.
 */
static void adopted_same(const uint8_t *data, size_t size, const struct wire_limits *lim, int rc, const uint8_t *blob,
			 size_t blob_len, uint32_t ttl, const struct wire_chain *chain)
{
	uint8_t *ab;
	size_t ab_len;
	uint32_t attl;
	struct wire_chain ach;
	int arc = wire_answer_adopt_chain(data, size, lim, &ab, &ab_len, &attl, &ach);
	CHECK(arc == rc || (rc == WIRE_E_FORMERR && arc == 0));
	if (arc != 0)
		return;
	if (rc == 0) {
		CHECK(attl == ttl && ach.hops == chain->hops);
		for (unsigned i = 0; i < ach.hops; i++)
			CHECK(ach.rdata[i] == chain->rdata[i] && ach.end[i] == chain->end[i]);
		struct wire_blob_info pi, ai;
		CHECK(wire_blob_info(blob, blob_len, &pi) == 0 && wire_blob_info(ab, ab_len, &ai) == 0);
		CHECK(pi.rcode == ai.rcode && pi.ad == ai.ad && pi.tc == ai.tc && pi.aa == ai.aa);
		CHECK(pi.ancount == ai.ancount && pi.nscount == ai.nscount && pi.arcount == ai.arcount);
		/* an extended rcode lives in the blob's header, not in the stored
		 * message: re-encoding that alone would take it for another rcode */
		if (pi.rcode > 15) {
			free(ab);
			return;
		}
		/* with the same limits: a TTL capped at its RRSIG's Original TTL
		 * and then raised by min_ttl is capped again by a pass without
		 * them (the fuzzer's find, kept in the corpus) */
		uint8_t *again;
		size_t again_len;
		uint32_t ttl2;
		CHECK(wire_answer_prepare(ab + ai.msg_off, ai.msg_len, lim, &again, &again_len, &ttl2) == 0);
		struct wire_blob_info gi;
		CHECK(wire_blob_info(again, again_len, &gi) == 0);
		CHECK(gi.msg_len == pi.msg_len && memcmp(again + gi.msg_off, blob + pi.msg_off, pi.msg_len) == 0);
		free(again);
	}
	free(ab);
}

/* The input as an upstream response to whatever question it carries. */
static void as_response(const uint8_t *data, size_t size)
{
	uint8_t *blob;
	size_t blob_len;
	uint32_t ttl;
	struct wire_limits lim = {.min_ttl = 5, .max_ttl = 3600, .max_negative_ttl = 900};
	struct wire_chain chain;
	int rc = wire_answer_prepare_chain(data, size, &lim, &blob, &blob_len, &ttl, &chain);
	CHECK(rc == 0 || rc == WIRE_E_FORMERR);
	adopted_same(data, size, &lim, rc, blob, blob_len, ttl, &chain);
	if (rc != 0)
		return;
	/* every hop of the chain reads back as a valid lower-case name; none past it */
	CHECK(chain.hops <= WIRE_CNAME_MAX);
	for (unsigned i = 0; i < chain.hops; i++) {
		uint8_t hop[WIRE_MAX_NAME];
		size_t hop_len = 0;
		CHECK(wire_chain_target(data, size, &chain, i, hop, &hop_len) == 0);
		CHECK(hop_len >= 1 && hop_len <= WIRE_MAX_NAME && hop[hop_len - 1] == 0);
		for (size_t k = 0; k < hop_len; k++)
			CHECK(!(hop[k] >= 'A' && hop[k] <= 'Z'));
	}
	{
		uint8_t hop[WIRE_MAX_NAME];
		size_t hop_len;
		CHECK(wire_chain_target(data, size, &chain, chain.hops, hop, &hop_len) == WIRE_E_FORMERR);
	}
	CHECK(ttl <= 3600);
	struct wire_blob_info info;
	CHECK(wire_blob_info(blob, blob_len, &info) == 0);
	CHECK(wire_blob_rcode(blob, blob_len) == info.rcode);

	/* Re-parse the stored message (after the blob header) to get its question. */
	const uint8_t *msg = blob + info.msg_off;
	uint8_t qbuf[WIRE_MAX_NAME + 64];
	size_t qlen = 0;
	while (qlen < WIRE_MAX_NAME && msg[WIRE_HEADER_SIZE + qlen] != 0)
		qlen += 1u + msg[WIRE_HEADER_SIZE + qlen];
	qlen += 1;
	CHECK(WIRE_HEADER_SIZE + qlen + 4 <= info.msg_len);
	memcpy(qbuf, msg, WIRE_HEADER_SIZE + qlen + 4);
	wire_name_lower(qbuf + WIRE_HEADER_SIZE, qlen, qbuf + WIRE_HEADER_SIZE); /* 0x20 case differs */
	qbuf[2] = 0x01; /* RD */
	qbuf[3] = 0x20; /* AD */
	memcpy(qbuf + 4, "\0\1\0\0\0\0\0\0", 8);
	struct wire_query q;
	CHECK(wire_parse_query(qbuf, WIRE_HEADER_SIZE + qlen + 4, &q) == 0);
	int w = wire_answer_write(&q, qbuf, blob, blob_len, 7, NULL, big, sizeof(big));
	CHECK(w > 0 && (size_t)w <= sizeof(big));
	w = wire_answer_write(&q, qbuf, blob, blob_len, UINT32_MAX, NULL, small, sizeof(small));
	CHECK(w > 0 && (size_t)w <= sizeof(small));
	/* Our own output must be acceptable as a response again. */
	uint8_t *again;
	size_t again_len;
	uint32_t ttl2;
	rc = wire_answer_prepare(small, (size_t)w, NULL, &again, &again_len, &ttl2);
	CHECK(rc == 0);
	free(again);
	free(blob);

	uint8_t target[WIRE_MAX_NAME];
	size_t target_len = 0;
	rc = wire_cname_target(data, size, q.qname, q.qname_len, q.qtype, target, &target_len);
	CHECK(rc == 0 || rc == 1 || rc == WIRE_E_FORMERR);
	if (rc == 1)
		CHECK(wire_name_check(target, target_len) == 0);
	struct wire_resp_info ri;
	rc = wire_response_check(data, size, (uint16_t)(data[0] << 8 | data[1]), q.qname, q.qname_len, q.qtype,
				 q.qclass, NULL, &ri);
	CHECK(rc == 0 || rc == WIRE_E_MISMATCH || rc == WIRE_E_FORMERR);

	uint8_t *sp;
	size_t sp_len;
	rc = wire_splice(data, size, data, size, &sp, &sp_len);
	CHECK(rc == 0 || rc == WIRE_E_FORMERR);
	if (rc == 0) {
		rc = wire_answer_prepare(sp, sp_len, NULL, &again, &again_len, &ttl2);
		CHECK(rc == 0 || rc == WIRE_E_FORMERR); /* FORMERR only when doubling exceeds 64 KiB */
		if (rc == 0)
			free(again);
		free(sp);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	as_query(data, size);
	as_response(data, size);
	return 0;
}
