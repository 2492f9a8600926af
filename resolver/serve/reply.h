/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Replies the query path writes itself (errors, drops, answers local data
 * or a policy made) and their counting, by rcode and by the query's
 * partition (query_ctx.reply_part). query.c decides; this writes.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mapping/ecs.h"
#include "resolver/base/counters.h"
#include "resolver/serve/query.h"
#include "wire/wire.h"

/* The SERVFAIL's EDE of an answer partdns decided but cannot write (local data, a policy). */
extern const struct wire_ede reply_unanswerable_ede;

/* Count a reply code (and in the query's partition). Inline: every hit counts its reply. */
static inline void reply_count_rcode(struct query_ctx *x, int rcode)
{
	struct counters *c = x->ctr;
	int slot = -1;
	switch (rcode) {
	case WIRE_RCODE_NOERROR: counter_inc(&c->noerror); slot = PRC_NOERROR; break;
	case WIRE_RCODE_NXDOMAIN: counter_inc(&c->nxdomain); slot = PRC_NXDOMAIN; break;
	case WIRE_RCODE_SERVFAIL: counter_inc(&c->servfail); slot = PRC_SERVFAIL; break;
	case WIRE_RCODE_REFUSED: counter_inc(&c->refused); slot = PRC_REFUSED; break;
	case WIRE_RCODE_FORMERR: counter_inc(&c->formerr); slot = PRC_FORMERR; break;
	case WIRE_RCODE_NOTIMP: counter_inc(&c->notimp); slot = PRC_NOTIMP; break;
	case WIRE_RCODE_BADVERS: counter_inc(&c->badvers); slot = PRC_BADVERS; break;
	default: break;
	}
	if (slot >= 0 && x->reply_part >= 0)
		counter_inc(&x->pctr[x->reply_part].rcode[slot]);
}

/* Count a reply written from a cache blob by its header: rcode and TC. */
static inline void reply_count(struct query_ctx *x, const uint8_t *out)
{
	uint16_t fl = (uint16_t)((out[2] << 8) | out[3]);
	if (fl & WIRE_FLAG_TC)
		counter_inc(&x->ctr->truncated);
	reply_count_rcode(x, fl & WIRE_FLAG_RCODE);
}

/* An error reply (counted). @return its length, 0 when it cannot be written. */
int reply_error(struct query_ctx *x, const struct wire_query *q, int rcode, const struct ecs *echo,
                const struct wire_ede *ede, uint8_t *out, size_t limit);

/* A query dropped on purpose: counted and noted for the exit's check. @return 0. */
int reply_drop(struct query_ctx *x);

/* An answer partdns made (msg, taken) written as a reply to q. @return its length, or -1. */
int reply_made_write(struct query_ctx *x, const struct wire_query *q, uint8_t *msg, size_t len,
                     const struct ecs *echo, bool count, uint8_t *out, size_t limit);

/* reply_made_write, or SERVFAIL with reply_unanswerable_ede when it fails. @return the length. */
int reply_made(struct query_ctx *x, const struct wire_query *q, uint8_t *msg, size_t len,
               const struct ecs *echo, uint8_t *out, size_t limit);
