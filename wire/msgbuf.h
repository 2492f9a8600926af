/* SPDX-License-Identifier: BSD-3-Clause */
/* A growing buffer for the answers partdns makes itself (local data, RPZ). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/vec.h"
#include "wire/wire.h"

/* An answer being built; oom once any append failed (then p is to be freed and dropped). */
struct msgbuf {
	uint8_t *p;
	size_t len, cap;
	bool oom;
};

static inline void msgbuf_put(struct msgbuf *m, const void *d, size_t n)
{
	if (m->oom)
		return;
	if (n > SIZE_MAX - m->len || vec_grow(&m->p, &m->cap, m->len + n, 1, SIZE_MAX) != 0) {
		m->oom = true;
		return;
	}
	memcpy(m->p + m->len, d, n);
	m->len += n;
}

static inline void msgbuf_put16(struct msgbuf *m, uint16_t v)
{
	uint8_t b[2] = { (uint8_t)(v >> 8), (uint8_t)v };
	msgbuf_put(m, b, 2);
}

/*
 * Header and question of an answer to q as an authority would send it (QR,
 * AA, RD from q, rcode), the question lower-cased; ancount and nscount as
 * the caller will append.
 */
static inline void msgbuf_start(struct msgbuf *m, const struct wire_query *q, int rcode, uint16_t ancount,
                                uint16_t nscount)
{
	msgbuf_put16(m, 0);
	msgbuf_put16(m, (uint16_t)(WIRE_FLAG_QR | WIRE_FLAG_AA | (q->flags & WIRE_FLAG_RD) | (rcode & 0xf)));
	msgbuf_put16(m, 1);
	msgbuf_put16(m, ancount);
	msgbuf_put16(m, nscount);
	msgbuf_put16(m, 0);
	msgbuf_put(m, q->qname_lc, q->qname_len);
	msgbuf_put16(m, q->qtype);
	msgbuf_put16(m, q->qclass);
}
