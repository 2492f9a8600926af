/* SPDX-License-Identifier: BSD-3-Clause */
/* Chain hints: a lock-free table of names known to CNAME into a flagged domain (see chainhint.h). */
#include "resolver/view/chainhint.h"

#include <stdlib.h>

struct chainhint *chainhint_new(size_t slots)
{
	size_t n = 1024;
	while (n < slots && n < ((size_t)1 << 30))
		n <<= 1;
	struct chainhint *t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	t->slot = calloc(n, sizeof(*t->slot)); /* all zero: no hint (an expiry of 0 is never live) */
	if (t->slot == NULL) {
		free(t);
		return NULL;
	}
	t->mask = n - 1;
	return t;
}

void chainhint_free(struct chainhint *t)
{
	if (t == NULL)
		return;
	free(t->slot);
	free(t);
}

void chainhint_set(struct chainhint *t, uint64_t h, uint32_t expiry)
{
	if (t == NULL || h == 0)
		return;
	uint64_t v = (h >> 32) << 32 | expiry;
	atomic_store_explicit(&t->slot[h & t->mask], v, memory_order_relaxed);
}
