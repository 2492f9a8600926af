/* SPDX-License-Identifier: BSD-3-Clause */
/* Unmatched client networks: see topk.h. */
#include "resolver/pool/topk.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define TOPK_BUCKETS 256u
#define TOPK_WAYS 4u
_Static_assert(TOPK_BUCKETS * TOPK_WAYS == TOPK_SLOTS, "slots");

struct topk {
	/* Only the report reads across threads, and it is rare: a mutex the
	 * writer always gets at once is simpler than a lock-free table. */
	pthread_mutex_t lock;
	struct topk_item slot[TOPK_SLOTS];
};

struct topk *topk_new(void)
{
	struct topk *t = calloc(1, sizeof(*t));
	if (t != NULL)
		pthread_mutex_init(&t->lock, NULL);
	return t;
}

void topk_free(struct topk *t)
{
	if (t == NULL)
		return;
	pthread_mutex_destroy(&t->lock);
	free(t);
}

/* The network of a client: /24 or /48, and a hash of it picking the bucket. */
static unsigned network(int family, const uint8_t *addr, uint8_t net[16])
{
	memset(net, 0, 16);
	size_t n = family == AF_INET ? 3 : 6;
	memcpy(net, addr, n);
	/* not keyed: the table is bounded and replaces by count, so colliding
	 * networks only share a bucket's four slots, they cannot grow anything */
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ net[i]) * 16777619u;
	h ^= (uint32_t)family;
	return (h ^ (h >> 15)) % TOPK_BUCKETS;
}

void topk_add(struct topk *t, int family, const uint8_t *addr)
{
	uint8_t net[16];
	struct topk_item *b = &t->slot[network(family, addr, net) * TOPK_WAYS];
	pthread_mutex_lock(&t->lock);
	struct topk_item *min = &b[0];
	for (unsigned i = 0; i < TOPK_WAYS; i++) {
		if (b[i].count != 0 && b[i].family == family && memcmp(b[i].addr, net, 16) == 0) {
			b[i].count++;
			pthread_mutex_unlock(&t->lock);
			return;
		}
		if (b[i].count < min->count)
			min = &b[i];
	}
	min->family = (uint8_t)family;
	memcpy(min->addr, net, 16);
	min->error = min->count;
	min->count++;
	pthread_mutex_unlock(&t->lock);
}

size_t topk_read(struct topk *t, struct topk_item *out, size_t max)
{
	size_t n = 0;
	pthread_mutex_lock(&t->lock);
	for (unsigned i = 0; i < TOPK_SLOTS && n < max; i++)
		if (t->slot[i].count != 0)
			out[n++] = t->slot[i];
	pthread_mutex_unlock(&t->lock);
	return n;
}

static int by_network(const void *a, const void *b)
{
	const struct topk_item *x = a, *y = b;
	if (x->family != y->family)
		return x->family < y->family ? -1 : 1;
	return memcmp(x->addr, y->addr, 16);
}

static int by_count(const void *a, const void *b)
{
	const struct topk_item *x = a, *y = b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return by_network(a, b);
}

size_t topk_merge(struct topk_item *items, size_t n)
{
	if (n == 0)
		return 0;
	qsort(items, n, sizeof(*items), by_network);
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (m > 0 && by_network(&items[m - 1], &items[i]) == 0) {
			items[m - 1].count += items[i].count;
			items[m - 1].error += items[i].error;
		} else {
			items[m++] = items[i];
		}
	}
	qsort(items, m, sizeof(*items), by_count);
	return m;
}
