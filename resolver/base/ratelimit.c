/* SPDX-License-Identifier: BSD-3-Clause */
/* Per-client query rates: token buckets in a direct-mapped, keyed table. */
#include "resolver/base/ratelimit.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "util/hash.h"

#define RATELIMIT_SLOTS 65536 /* client groups one thread tracks at once */

struct bucket {
	uint64_t tag;      /* the group's hash (0 = empty) */
	uint64_t last_ns;
	double tokens;
	uint64_t reported_ns; /* when its last RATELIMIT_OVER_NEW was (0: never) */
};

struct ratelimit {
	double qps;
	unsigned prefix4, prefix6;
	struct hash_key key;   /* client addresses are chosen by whoever sends packets */
	struct bucket *slots;
};

struct ratelimit *ratelimit_new(unsigned qps, unsigned prefix4, unsigned prefix6)
{
	struct ratelimit *rl = calloc(1, sizeof(*rl));
	if (rl == NULL)
		return NULL;
	rl->qps = qps;
	rl->prefix4 = prefix4 > 32 ? 32 : prefix4;
	rl->prefix6 = prefix6 > 128 ? 128 : prefix6;
	hash_key_random(&rl->key);
	if (qps > 0 && (rl->slots = calloc(RATELIMIT_SLOTS, sizeof(*rl->slots))) == NULL) {
		free(rl);
		return NULL;
	}
	return rl;
}

void ratelimit_free(struct ratelimit *rl)
{
	if (rl == NULL)
		return;
	free(rl->slots);
	free(rl);
}

enum ratelimit_verdict ratelimit_take(struct ratelimit *rl, int family, const uint8_t *addr, uint64_t now_ns)
{
	if (rl->slots == NULL)
		return RATELIMIT_OK;
	/* the group: the address masked to its prefix, with the family */
	uint8_t g[17] = { 0 };
	unsigned bits = family == AF_INET ? rl->prefix4 : rl->prefix6, bytes = family == AF_INET ? 4 : 16;
	memcpy(g, addr, bytes);
	for (unsigned i = bits; i < bytes * 8; i++)
		g[i / 8] &= (uint8_t)~(0x80 >> (i % 8));
	g[16] = (uint8_t)family;
	uint64_t tag = hash_bytes(&rl->key, g, sizeof(g)) | 1;
	struct bucket *b = &rl->slots[tag % RATELIMIT_SLOTS];
	if (b->tag != tag) {
		b->tag = tag;
		b->tokens = rl->qps; /* a new group starts with a second's worth */
		b->last_ns = now_ns;
		b->reported_ns = 0;
	} else if (now_ns > b->last_ns) {
		b->tokens += (double)(now_ns - b->last_ns) * rl->qps / 1e9;
		if (b->tokens > rl->qps)
			b->tokens = rl->qps;
		b->last_ns = now_ns;
	}
	if (b->tokens < 1) {
		if (b->reported_ns != 0 && now_ns - b->reported_ns < RATELIMIT_REPORT_NS)
			return RATELIMIT_OVER;
		b->reported_ns = now_ns | 1; /* never 0 */
		return RATELIMIT_OVER_NEW;
	}
	b->tokens -= 1;
	return RATELIMIT_OK;
}

bool ratelimit_allow(struct ratelimit *rl, int family, const uint8_t *addr, uint64_t now_ns)
{
	return ratelimit_take(rl, family, addr, now_ns) == RATELIMIT_OK;
}

unsigned ratelimit_prefix(const struct ratelimit *rl, int family)
{
	return family == AF_INET ? rl->prefix4 : rl->prefix6;
}
