/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the EDNS pool allows itself: fair shares of edns.max_inflight (per
 * city, per flagged rule), the health of each server per zone (timeouts,
 * backoff), and each zone's upstream query rate (edns.zone_qps, a token
 * bucket per thread), with the hints that let a listener refuse a miss the
 * thread would refuse for its zone's rate.
 */
#include "resolver/pool/edns_health.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "resolver/base/clock.h"
#include "resolver/pool/edns_zcache.h"
#include "resolver/pool/tier.h"
#include "wire/names.h"

#define HEALTH_SLOTS 4096     /* servers whose health a thread remembers */
#define HEALTH_DOWN_AFTER 3   /* consecutive timeouts that mark a server down (for one zone) */
#define HEALTH_BACKOFF_MIN_MS 1000
#define RATE_SLOTS 1024       /* zones whose upstream query rate a thread tracks */

/* ---- fair shares ---- */

void edns_health_budget_init(struct edns_budget *b, unsigned max_inflight)
{
	b->max_inflight = max_inflight;
	/* one city flooding one zone leaves that zone room for the other cities */
	b->part_cap = b->max_inflight / 4 ? b->max_inflight / 4 : 1;
	b->rule_cap = b->max_inflight / 2 ? b->max_inflight / 2 : 1;
}

unsigned edns_health_rule_slot(const struct resolve_edns *p, const struct job *job)
{
	return (unsigned)(hash_bytes(&p->key, job->rule.name, strnlen(job->rule.name, sizeof(job->rule.name))) %
	                  BUDGET_SLOTS);
}

static unsigned budget_part(unsigned partition)
{
	return partition <= PARTITION_MAX ? partition : 0;
}

void edns_health_budget_release(struct resolve_edns *p, unsigned partition, unsigned rule_slot)
{
	atomic_fetch_sub(&p->budget.inflight, 1);
	atomic_fetch_sub(&p->budget.part_inflight[budget_part(partition)], 1);
	atomic_fetch_sub(&p->budget.rule_inflight[rule_slot], 1);
}

bool edns_health_budget_take(struct resolve_edns *p, const struct job *job, unsigned slot)
{
	struct edns_budget *b = &p->budget;
	unsigned part = budget_part(job->partition);
	bool over = atomic_fetch_add(&b->inflight, 1) >= b->max_inflight;
	over |= atomic_fetch_add(&b->part_inflight[part], 1) >= b->part_cap;
	over |= atomic_fetch_add(&b->rule_inflight[slot], 1) >= b->rule_cap;
	if (over) {
		edns_health_budget_release(p, job->partition, slot);
		return false;
	}
	return true;
}

/* ---- server health ---- */

int edns_health_init(struct ethread *t, double zone_qps)
{
	t->health.servers = calloc(HEALTH_SLOTS, sizeof(*t->health.servers));
	t->health.rates = calloc(RATE_SLOTS, sizeof(*t->health.rates));
	t->health.hints = calloc(BUDGET_SLOTS, sizeof(*t->health.hints));
	t->health.zone_qps = zone_qps;
	return t->health.servers != NULL && t->health.rates != NULL && t->health.hints != NULL ? 0 : -1;
}

void edns_health_free(struct ethread *t)
{
	free(t->health.servers);
	free(t->health.rates);
	free(t->health.hints);
	t->health.servers = NULL;
	t->health.rates = NULL;
	t->health.hints = NULL;
}

static bool addr_equal(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const struct sockaddr_in *)a, *y = (const struct sockaddr_in *)b;
		return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	const struct sockaddr_in6 *x = (const struct sockaddr_in6 *)a, *y = (const struct sockaddr_in6 *)b;
	return x->sin6_port == y->sin6_port && memcmp(&x->sin6_addr, &y->sin6_addr, 16) == 0;
}

/* The zone a server is asked for: its health is kept per zone. */
static uint64_t health_zone(const struct eres *r)
{
	return r->forward ? 0 : hash_bytes(&r->t->pool->key, r->zone.name, r->zone.len) | 1;
}

static struct shealth *health_slot(struct ethread *t, const struct sockaddr_storage *a, uint64_t zone)
{
	uint8_t key[26] = { 0 };
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)a;
		memcpy(key, &s4->sin_addr, 4);
		memcpy(key + 16, &s4->sin_port, 2);
	} else {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)a;
		memcpy(key, &s6->sin6_addr, 16);
		memcpy(key + 16, &s6->sin6_port, 2);
	}
	memcpy(key + 18, &zone, 8);
	return &t->health.servers[hash_bytes(&t->pool->key, key, sizeof(key)) % HEALTH_SLOTS];
}

static bool health_is(const struct shealth *h, const struct sockaddr_storage *a, uint64_t zone)
{
	return h->zone_hash == zone && addr_equal(&h->addr, a);
}

bool edns_health_usable(struct eres *r, const struct sockaddr_storage *a, uint64_t now)
{
	uint64_t zone = health_zone(r);
	struct shealth *h = health_slot(r->t, a, zone);
	if (!health_is(h, a, zone) || h->timeouts < HEALTH_DOWN_AFTER)
		return true;
	if (now < h->down_until_ns)
		return false;
	h->down_until_ns = now + (uint64_t)h->backoff_ms * 1000000ull; /* this query is the probe */
	return true;
}

void edns_health_timeout(struct eres *r)
{
	if (r->tier) { /* a tier node is down for every partition and thread until a probe is answered */
		tier_query_timeout(r->t->pool->tier, r->zone.tier_node[r->zone.cur % r->zone.sv.naddr]);
		return;
	}
	const struct sockaddr_storage *a = &r->zone.sv.addr[r->zone.cur % r->zone.sv.naddr];
	uint64_t zone = health_zone(r);
	struct shealth *h = health_slot(r->t, a, zone);
	if (!health_is(h, a, zone)) {
		memset(h, 0, sizeof(*h));
		h->addr = *a;
		h->zone_hash = zone;
	}
	if (++h->timeouts < HEALTH_DOWN_AFTER)
		return;
	h->backoff_ms = h->backoff_ms ? h->backoff_ms * 2 : HEALTH_BACKOFF_MIN_MS;
	if (h->backoff_ms > HEALTH_BACKOFF_MAX_MS)
		h->backoff_ms = HEALTH_BACKOFF_MAX_MS;
	h->down_until_ns = clock_ns() + (uint64_t)h->backoff_ms * 1000000ull;
}

void edns_health_answered(struct eres *r)
{
	if (r->tier)
		return; /* only probes bring a tier node back up */
	const struct sockaddr_storage *a = &r->zone.sv.addr[r->zone.cur % r->zone.sv.naddr];
	uint64_t zone = health_zone(r);
	struct shealth *h = health_slot(r->t, a, zone);
	if (health_is(h, a, zone) && h->timeouts > 0) {
		h->timeouts = 0;
		h->backoff_ms = 0;
		h->down_until_ns = 0;
	}
}

/* ---- zone query rates ---- */

bool edns_health_rate_take(struct ethread *t, const uint8_t *zone, size_t len, uint64_t *wait_ns)
{
	double qps = t->health.zone_qps;
	if (qps <= 0)
		return true;
	uint64_t h = hash_bytes(&t->pool->key, zone, len), now = clock_ns();
	struct zrate *z = &t->health.rates[h % RATE_SLOTS];
	if (z->zone_hash != h) {
		z->zone_hash = h;
		z->tokens = qps; /* a second's worth as the burst */
		z->last_ns = now;
	}
	z->tokens += (double)(now - z->last_ns) * qps / 1e9;
	if (z->tokens > qps)
		z->tokens = qps;
	z->last_ns = now;
	if (z->tokens < 1) {
		*wait_ns = (uint64_t)((1 - z->tokens) * 1e9 / qps) + 1;
		return false;
	}
	z->tokens -= 1;
	return true;
}

void edns_health_shed_hint_set(struct eres *r, uint64_t wait_ns)
{
	struct ethread *t = r->t;
	uint8_t zone[WIRE_MAX_NAME];
	if (!wire_name_equal(r->name, r->name_len, r->job->qname, r->job->qname_len))
		return;
	wire_name_lower(r->zone.name, r->zone.len, zone);
	uint64_t now = clock_ns();
	if (!edns_zcache_is_leaf(t, zone, r->zone.len, now))
		return;
	struct shed_hint *h = &t->health.hints[r->rule_slot];
	atomic_store_explicit(&h->until_ns, 0, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&h->zone_hash, hash_bytes(&t->pool->key, zone, r->zone.len), memory_order_relaxed);
	atomic_store_explicit(&h->zone_labels, wire_name_labels(zone, r->zone.len), memory_order_relaxed);
	atomic_store_explicit(&h->until_ns, now + wait_ns, memory_order_release);
}

bool edns_health_shed_early(const struct resolve_edns *p, struct ethread *t, const struct job *job, unsigned slot)
{
	if (p->tier != NULL || job->rule.policy == CONF_POLICY_FORWARD || job->start_len > 0)
		return false;
	struct shed_hint *h = &t->health.hints[slot];
	uint64_t until = atomic_load_explicit(&h->until_ns, memory_order_acquire);
	if (until == 0 || clock_ns() >= until)
		return false;
	uint64_t zone_hash = atomic_load_explicit(&h->zone_hash, memory_order_relaxed);
	int zone_labels = atomic_load_explicit(&h->zone_labels, memory_order_relaxed);
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&h->until_ns, memory_order_relaxed) != until)
		return false; /* changed while read */
	int labels = wire_name_labels(job->qname, job->qname_len);
	int bound = labels - 1;
	uint8_t rule[WIRE_MAX_NAME];
	int n = job->rule.subtree ? wire_name_from_text(job->rule.name, rule, sizeof(rule)) : -1;
	if (n > 0 && wire_name_in_zone(job->qname, job->qname_len, rule, (size_t)n))
		bound = wire_name_labels(rule, (size_t)n);
	if (labels < 0 || zone_labels > labels || zone_labels < bound)
		return false;
	const uint8_t *zone = job->qname;
	size_t len = job->qname_len;
	for (int i = labels; i > zone_labels; i--) {
		int off = wire_name_parent(zone, len);
		zone += off;
		len -= (size_t)off;
	}
	uint8_t lower[WIRE_MAX_NAME];
	wire_name_lower(zone, len, lower);
	return hash_bytes(&t->pool->key, lower, len) == zone_hash;
}
