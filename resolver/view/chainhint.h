/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Chain hints: which normal names are known to CNAME into a flagged domain,
 * so that a partitioned client's hit on one goes straight to its city's
 * entry (one cache lookup) instead of the common entry and then the city's.
 *
 * A hint is advice, never the answer: a wrong or stale hint only costs the
 * lookup it was meant to save (the query then takes the common entry as
 * before). So the table is a fixed array of 64-bit words, read and written
 * with relaxed atomics and no lock: a word holds the top 32 bits of the
 * name's hash and the hint's expiry; a collision overwrites. The hash is
 * the domain set's own (domains_match_hashed), whose key is drawn anew for
 * every domain set: a change of flags retires every hint at once.
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct chainhint {
	size_t mask;
	_Atomic uint64_t *slot;
};

/** A table of at least slots words (rounded up to a power of two, 1024 at least). NULL: out of memory. */
struct chainhint *chainhint_new(size_t slots);

void chainhint_free(struct chainhint *t);

/** Hint that the name of hash h chains into a flagged domain until expiry (clock_sec). h 0: nothing. */
void chainhint_set(struct chainhint *t, uint64_t h, uint32_t expiry);

/** Whether the name of hash h has a live hint at now. On the hit path: inline, no lock. */
static inline bool chainhint_get(const struct chainhint *t, uint64_t h, uint32_t now)
{
	if (t == NULL || h == 0)
		return false;
	uint64_t v = atomic_load_explicit(&t->slot[h & t->mask], memory_order_relaxed);
	return (uint32_t)(v >> 32) == (uint32_t)(h >> 32) && (uint32_t)v > now;
}
