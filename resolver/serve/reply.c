/* SPDX-License-Identifier: BSD-3-Clause */
/* Replies the query path writes itself, and their counting: errors, drops, answers partdns made. */
#include "resolver/serve/reply.h"

#include <stdlib.h>

#include "wire/answer.h"

/* An error reply (counted). @return its length, 0 when it cannot be written. */
int reply_error(struct query_ctx *x, const struct wire_query *q, int rcode, const struct ecs *echo,
                       const struct wire_ede *ede, uint8_t *out, size_t limit)
{
	reply_count_rcode(x, rcode);
	int n = wire_write_error(q, rcode, echo, ede, out, limit);
	return n > 0 ? n : 0;
}

/*
 * A query dropped on purpose (policy, rate, garbage): counted, and noted
 * for the exit's check (settle). Every path that sends nothing goes
 * through here. @return 0, what the query path returns for a drop.
 */
int reply_drop(struct query_ctx *x)
{
	counter_inc(&x->ctr->dropped);
	x->dropped = true;
	return 0;
}

/* The SERVFAIL of an answer partdns decided but cannot write (local data, a policy). */
const struct wire_ede reply_unanswerable_ede = { WIRE_EDE_INVALID_DATA, "local data or policy cannot be answered" };

/*
 * An answer partdns made itself (local data, a policy: msg, taken) written
 * to out as a reply to q, through a blob like a cached answer, so DO, TC,
 * the client's case and ECS echo follow the same rules. @return its length,
 * or -1: it cannot be written (out of memory, or data no reply can carry:
 * a CNAME loop, a name longer than 255 bytes, more than 64 KiB).
 */
int reply_made_write(struct query_ctx *x, const struct wire_query *q, uint8_t *msg, size_t len,
                      const struct ecs *echo, bool count, uint8_t *out, size_t limit)
{
	uint8_t *blob;
	size_t blen;
	uint32_t ttl;
	int rc = wire_answer_prepare(msg, len, NULL, &blob, &blen, &ttl);
	free(msg);
	if (rc != 0)
		return -1;
	int n = wire_answer_write(q, NULL, blob, blen, 0, echo, out, limit);
	if (count && n > 0)
		reply_count_rcode(x, wire_blob_rcode(blob, blen));
	free(blob);
	return n > 0 ? n : -1;
}

/*
 * made_write, and when that fails, SERVFAIL: local data or a policy
 * decided the query, so resolving it instead would leak past the decision,
 * and sending nothing would leave the client waiting. @return the length.
 */
int reply_made(struct query_ctx *x, const struct wire_query *q, uint8_t *msg, size_t len,
                      const struct ecs *echo, uint8_t *out, size_t limit)
{
	int n = reply_made_write(x, q, msg, len, echo, true, out, limit);
	return n > 0 ? n : reply_error(x, q, WIRE_RCODE_SERVFAIL, echo, &reply_unanswerable_ede, out, limit);
}
