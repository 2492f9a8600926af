/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The zone cuts an EDNS thread knows: a cache of cuts by zone (the zone's
 * servers, for the NS TTL), the bounds whose cut could not be found
 * (remembered a while, so a dead zone is not looked up once per name), a
 * filter of the zones something is cached below, and which resolutions are
 * finding a cut now: one discovery per bound, the others wait for it.
 */
#include "resolver/pool/edns_zcache.h"

#include <stdlib.h>
#include <string.h>

#include "resolver/base/clock.h"
#include "wire/names.h"

#define ZCACHE_SLOTS 1024
#define BELOW_REBUILD_NS (30 * 1000000000ull)
#define ZCACHE_MIN_TTL 5      /* seconds: a cut is kept for its NS TTL within these bounds */
#define ZCACHE_MAX_TTL 86400

int edns_zcache_init(struct ethread *t)
{
	t->zc.slot = calloc(ZCACHE_SLOTS, sizeof(*t->zc.slot));
	return t->zc.slot != NULL ? 0 : -1;
}

void edns_zcache_free(struct ethread *t)
{
	free(t->zc.slot);
	t->zc.slot = NULL;
}

static struct zentry *zcache_slot(const struct ethread *t, const uint8_t *name, size_t len)
{
	return &t->zc.slot[hash_bytes(&t->pool->key, name, len) % ZCACHE_SLOTS];
}

/* An entry for name (lower case) is in the zone-cut cache: mark its ancestors in t->zc.below. */
static void below_mark(struct ethread *t, const uint8_t *name, size_t len)
{
	int off;
	while ((off = wire_name_parent(name, len)) > 0) {
		name += off;
		len -= (size_t)off;
		uint64_t h = hash_bytes(&t->pool->key, name, len) % BELOW_BITS;
		t->zc.below[h / 64] |= 1ull << (h % 64);
	}
}

/* May the zone-cut cache hold an entry below zone (lower case)? (False positives only.) */
static bool below_any(const struct ethread *t, const uint8_t *zone, size_t len)
{
	uint64_t h = hash_bytes(&t->pool->key, zone, len) % BELOW_BITS;
	return (t->zc.below[h / 64] >> (h % 64)) & 1;
}

/* Forget the ancestors of entries that expired: mark again from the live ones. */
static void below_rebuild(struct ethread *t, uint64_t now)
{
	memset(t->zc.below, 0, sizeof(t->zc.below));
	for (size_t i = 0; i < ZCACHE_SLOTS; i++)
		if (t->zc.slot[i].name_len > 0 && now < t->zc.slot[i].expires_ns)
			below_mark(t, t->zc.slot[i].name, t->zc.slot[i].name_len);
	t->zc.below_rebuild_ns = now + BELOW_REBUILD_NS;
}

void edns_zcache_tick(struct ethread *t, uint64_t now)
{
	if (now >= t->zc.below_rebuild_ns)
		below_rebuild(t, now);
}

void edns_zcache_set_bound(struct eres *r)
{
	uint8_t rule[WIRE_MAX_NAME];
	int n = r->job->rule.subtree ? wire_name_from_text(r->job->rule.name, rule, sizeof(rule)) : -1;
	r->cut.bound_is_rule = n > 0 && wire_name_in_zone(r->name, r->name_len, rule, (size_t)n);
	if (r->cut.bound_is_rule) {
		wire_name_lower(rule, (size_t)n, r->cut.bound);
		r->cut.bound_len = (size_t)n;
		return;
	}
	int off = wire_name_parent(r->name, r->name_len);
	if (off < 0)
		off = 0; /* the root */
	memcpy(r->cut.bound, r->name + off, r->name_len - (size_t)off);
	r->cut.bound_len = r->name_len - (size_t)off;
}

int edns_zcache_get(struct eres *r)
{
	uint8_t name[WIRE_MAX_NAME];
	size_t len = r->name_len;
	wire_name_lower(r->name, r->name_len, name);
	const uint8_t *cur = name;
	uint64_t now = clock_ns();
	for (;;) {
		struct zentry *z = zcache_slot(r->t, cur, len);
		if (z->name_len == len && memcmp(z->name, cur, len) == 0 && now < z->expires_ns) {
			if (z->failed)
				return -1;
			if (z->naddr > 0) {
				memcpy(r->zone.name, cur, len);
				r->zone.len = len;
				r->zone.sv.naddr = z->naddr;
				memcpy(r->zone.sv.addr, z->addr, sizeof(r->zone.sv.addr));
				return 1;
			}
		}
		if (wire_name_equal(cur, len, r->cut.bound, r->cut.bound_len))
			return 0;
		int off = wire_name_parent(cur, len);
		if (off <= 0)
			return 0;
		cur += off;
		len -= (size_t)off;
	}
}

void edns_zcache_put_failed(struct eres *r)
{
	struct zentry *z = zcache_slot(r->t, r->cut.bound, r->cut.bound_len);
	bool again = z->failed && z->name_len == r->cut.bound_len && memcmp(z->name, r->cut.bound, r->cut.bound_len) == 0;
	unsigned secs = again ? z->fail_s * 2 : ZCACHE_MIN_TTL;
	if (secs > HEALTH_BACKOFF_MAX_MS / 1000)
		secs = HEALTH_BACKOFF_MAX_MS / 1000;
	memset(z, 0, sizeof(*z));
	memcpy(z->name, r->cut.bound, r->cut.bound_len);
	z->name_len = r->cut.bound_len;
	below_mark(r->t, z->name, z->name_len);
	z->failed = true;
	z->fail_s = secs;
	z->expires_ns = clock_ns() + (uint64_t)secs * 1000000000ull;
}

void edns_zcache_put(struct eres *r, uint32_t ttl)
{
	if (ttl < ZCACHE_MIN_TTL)
		ttl = ZCACHE_MIN_TTL;
	if (ttl > ZCACHE_MAX_TTL)
		ttl = ZCACHE_MAX_TTL;
	struct zentry *z = zcache_slot(r->t, r->zone.name, r->zone.len);
	memcpy(z->name, r->zone.name, r->zone.len);
	z->name_len = r->zone.len;
	below_mark(r->t, z->name, z->name_len);
	z->failed = false;
	z->fail_s = 0;
	z->naddr = r->zone.sv.naddr;
	memcpy(z->addr, r->zone.sv.addr, sizeof(z->addr));
	z->expires_ns = clock_ns() + (uint64_t)ttl * 1000000000ull;
}

bool edns_zcache_is_leaf(const struct ethread *t, const uint8_t *zone, size_t len, uint64_t now)
{
	const struct zentry *z = zcache_slot(t, zone, len);
	return !(z->failed || z->name_len != len || memcmp(z->name, zone, len) != 0 || now >= z->expires_ns ||
	         below_any(t, zone, len));
}

bool edns_zcache_discovering(const struct eres *r)
{
	return r->st == E_SOA || r->st == E_NS || r->st == E_ADDR;
}

void edns_zcache_wake_waiters(struct eres *r)
{
	for (struct eres *x = r->t->list; x; x = x->next)
		if (x != r && x->st == E_WAIT && wire_name_equal(x->cut.bound, x->cut.bound_len, r->cut.bound, r->cut.bound_len))
			x->cut.wake = true;
}

bool edns_zcache_discovery_running(const struct eres *r)
{
	for (const struct eres *x = r->t->list; x; x = x->next)
		if (x != r && edns_zcache_discovering(x) &&
		    wire_name_equal(x->cut.bound, x->cut.bound_len, r->cut.bound, r->cut.bound_len))
			return true;
	return false;
}
