/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The EDNS pool: resolutions of EDNS domains for a partition. Its own threads,
 * sockets and libunbound contexts, so a flood here never delays normal
 * resolution. libunbound cannot send ECS, so each thread asks its own
 * libunbound context only for the zone cut and nameserver addresses, then
 * sends the ECS-bearing query itself (policy iterate), or sends it to the
 * forward targets (policy forward). CNAME chains are followed hop by hop,
 * each hop with the partition's ECS, and spliced into one answer.
 *
 * Its sections are listed in edns_pool.h, from the bottom up; the last ones
 * start each resolution and each hop, follow what an upstream answer means
 * (edns_iter.c decides), validate a hop's answer, time resolutions out, and
 * run the threads and the pool.
 */
#include "resolver/pool/resolve_edns.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <unbound.h>
#include <unistd.h>

#include "resolver/base/clock.h"
#include "resolver/base/log.h"
#include "resolver/base/ubctx.h"
#include "resolver/cache/inflight.h"
#include "resolver/pool/edns_iter.h"
#include "resolver/pool/edns_pool.h"
#include "resolver/pool/steering.h"
#include "resolver/pool/tier.h"
#include "resolver/pool/val.h"
#include "wire/names.h"
#include "wire/upstream.h"

#define MAX_HOPS 8        /* CNAME hops followed across responses */
#define MAX_REFERRALS 6   /* referrals followed below the zone libunbound gave */

static void eres_start_hop(struct eres *r);

/* ---- zone cuts: cached, failed, being found ---- */

/*
 * The zone cuts an EDNS thread knows: a cache of cuts by zone (the zone's
 * servers, for the NS TTL), the bounds whose cut could not be found
 * (remembered a while, so a dead zone is not looked up once per name), a
 * filter of the zones something is cached below, and which resolutions are
 * finding a cut now: one discovery per bound, the others wait for it.
 */
#define ZCACHE_SLOTS 1024
#define BELOW_REBUILD_NS (30 * 1000000000ull)
#define ZCACHE_MIN_TTL 5      /* seconds: a cut is kept for its NS TTL within these bounds */
#define ZCACHE_MAX_TTL 86400

/* Allocate t's cache. @return 0 or -1 (out of memory). */
static int edns_zcache_init(struct ethread *t)
{
	t->zc.slot = calloc(ZCACHE_SLOTS, sizeof(*t->zc.slot));
	return t->zc.slot != NULL ? 0 : -1;
}

static void edns_zcache_free(struct ethread *t)
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

/* Every 30 s: forget the ancestors of entries that expired (the "cached below" filter). */
static void edns_zcache_tick(struct ethread *t, uint64_t now)
{
	if (now >= t->zc.below_rebuild_ns)
		below_rebuild(t, now);
}

/*
 * Set r->cut.bound: the highest zone whose servers may be asked for r's hop
 * name without knowing its cut. For a name inside a --subtree rule, the
 * rule's name (the operator flagged that whole subtree); else the name's
 * parent. So a cut cached for a TLD is never used for a name below an
 * unknown delegation, and ECS never goes above the zones on the flagged
 * name's chain.
 */
static void edns_zcache_set_bound(struct eres *r)
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

/*
 * The deepest cached cut at or above r's hop name, up to r->cut.bound.
 * @return 1 (r->zone's name and servers set), 0 (none: find it), -1 (finding
 *         it failed a moment ago: fail at once).
 */
static int edns_zcache_get(struct eres *r)
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

/*
 * Finding the cut for r's bound failed (its servers never answer, or it has
 * none): remember that, 5 s and doubling while it keeps failing (up to the
 * health backoff's cap), so a flood of names under a dead zone costs one
 * lookup at a time, not one each.
 */
static void edns_zcache_put_failed(struct eres *r)
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

/* Remember the cut r found (r->zone: name and servers) for the NS TTL. */
static void edns_zcache_put(struct eres *r, uint32_t ttl)
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

/* Is zone (lower case) a live cut in t's cache at now, with nothing cached below it? */
static bool edns_zcache_is_leaf(const struct ethread *t, const uint8_t *zone, size_t len, uint64_t now)
{
	const struct zentry *z = zcache_slot(t, zone, len);
	return !(z->failed || z->name_len != len || memcmp(z->name, zone, len) != 0 || now >= z->expires_ns ||
	         below_any(t, zone, len));
}

/* Is r finding a cut itself (E_SOA, E_NS, E_ADDR)? */
static bool edns_zcache_discovering(const struct eres *r)
{
	return r->st == E_SOA || r->st == E_NS || r->st == E_ADDR;
}

/* The cut discovery of r ended (found or failed): resolutions waiting on the same bound look again. */
static void edns_zcache_wake_waiters(struct eres *r)
{
	for (struct eres *x = r->t->list; x; x = x->next)
		if (x != r && x->st == E_WAIT && wire_name_equal(x->cut.bound, x->cut.bound_len, r->cut.bound, r->cut.bound_len))
			x->cut.wake = true;
}

/* Another resolution of r's thread is finding a cut for the same bound: r should wait for it (E_WAIT). */
static bool edns_zcache_discovery_running(const struct eres *r)
{
	for (const struct eres *x = r->t->list; x; x = x->next)
		if (x != r && edns_zcache_discovering(x) &&
		    wire_name_equal(x->cut.bound, x->cut.bound_len, r->cut.bound, r->cut.bound_len))
			return true;
	return false;
}

/* ---- fair shares, server health, zone query rates ---- */

/*
 * What the EDNS pool allows itself: fair shares of edns.max_inflight (per
 * city, per flagged rule), the health of each server per zone (timeouts,
 * backoff), and each zone's upstream query rate (edns.zone_qps, a token
 * bucket per thread), with the hints that let a listener refuse a miss the
 * thread would refuse for its zone's rate.
 */
#define HEALTH_SLOTS 4096     /* servers whose health a thread remembers */
#define HEALTH_DOWN_AFTER 3   /* consecutive timeouts that mark a server down (for one zone) */
#define HEALTH_BACKOFF_MIN_MS 1000
#define RATE_SLOTS 1024       /* zones whose upstream query rate a thread tracks */

/* ---- fair shares ---- */

/* b's caps for edns.max_inflight: a city may hold a quarter of the pool, a flagged rule half. */
static void edns_health_budget_init(struct edns_budget *b, unsigned max_inflight)
{
	b->max_inflight = max_inflight;
	/* one city flooding one zone leaves that zone room for the other cities */
	b->part_cap = b->max_inflight / 4 ? b->max_inflight / 4 : 1;
	b->rule_cap = b->max_inflight / 2 ? b->max_inflight / 2 : 1;
}

/* The slot of job's flagged rule in the budget (and the shed hints). */
static unsigned edns_health_rule_slot(const struct resolve_edns *p, const struct job *job)
{
	return (unsigned)(hash_bytes(&p->key, job->rule.name, strnlen(job->rule.name, sizeof(job->rule.name))) %
	                  BUDGET_SLOTS);
}

static unsigned budget_part(unsigned partition)
{
	return partition <= PARTITION_MAX ? partition : 0;
}

/* A job leaves the pool: its place in the global, partition and rule budgets is free again. */
static void edns_health_budget_release(struct resolve_edns *p, unsigned partition, unsigned rule_slot)
{
	atomic_fetch_sub(&p->budget.inflight, 1);
	atomic_fetch_sub(&p->budget.part_inflight[budget_part(partition)], 1);
	atomic_fetch_sub(&p->budget.rule_inflight[rule_slot], 1);
}

/* Count job in the pool, its partition and its rule (slot). @return false (nothing counted): a share is full. */
static bool edns_health_budget_take(struct resolve_edns *p, const struct job *job, unsigned slot)
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

/* Allocate t's tables; zone_qps is its share of edns.zone_qps. @return 0 or -1 (out of memory). */
static int edns_health_init(struct ethread *t, double zone_qps)
{
	t->health.servers = calloc(HEALTH_SLOTS, sizeof(*t->health.servers));
	t->health.rates = calloc(RATE_SLOTS, sizeof(*t->health.rates));
	t->health.hints = calloc(BUDGET_SLOTS, sizeof(*t->health.hints));
	t->health.zone_qps = zone_qps;
	return t->health.servers != NULL && t->health.rates != NULL && t->health.hints != NULL ? 0 : -1;
}

static void edns_health_free(struct ethread *t)
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

/*
 * May r's query go to a? Yes unless a is down for r's zone. A down server
 * whose backoff has passed takes one probe: it stays down for the others
 * until the probe answers (up again) or times out (down for twice as long).
 */
static bool edns_health_usable(struct eres *r, const struct sockaddr_storage *a, uint64_t now)
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

/* r's server did not answer in time (or refused the datagram). */
static void edns_health_timeout(struct eres *r)
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

/* r's server answered: it is up for r's zone. */
static void edns_health_answered(struct eres *r)
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

/*
 * May one more query go to zone now (edns.zone_qps, this thread's share)?
 * If not, *wait_ns says when the next one may.
 */
static bool edns_health_rate_take(struct ethread *t, const uint8_t *zone, size_t len, uint64_t *wait_ns)
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

/*
 * r's zone is over its rate for wait_ns more: tell the listeners (struct
 * shed_hint), when what they can see of a new job decides as this thread
 * would. That holds for the question's own query (not a CNAME target's) to
 * a zone that is a live cut in the zone-cut cache with nothing cached below
 * it: for any new name under that zone whose bound (edns_zcache_set_bound)
 * is not below it, edns_zcache_get finds the zone, and it is asked first.
 */
static void edns_health_shed_hint_set(struct eres *r, uint64_t wait_ns)
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

/*
 * Would job's thread t refuse it for its zone's rate (a shed_hint is up)?
 * The thread asks the hinted zone first when it iterates for job's own
 * name (not forwarded, no tier, not a chain continuing at a CNAME target),
 * the name is at or below the zone and its bound is not below it.
 * Any thread may ask.
 */
static bool edns_health_shed_early(const struct resolve_edns *p, struct ethread *t, const struct job *job, unsigned slot)
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

/* ---- upstream sockets (edns.outgoing) ---- */

/*
 * The EDNS pool's upstream sockets: from which source address (edns.outgoing,
 * round robin per thread and family, or the kernel's choice), from a random
 * port of our own, and which servers the pool can reach at all.
 */
/* 32 random bits (query IDs, source ports). */
static uint32_t edns_sock_random(void)
{
	uint32_t v;
	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
		v = (uint32_t)clock_ns() * 2654435761u;
	return v;
}

static int fam_idx(int family)
{
	return family == AF_INET6;
}

/* Sort edns.outgoing's n addresses a by family into o. @return 0 or -1 (out of memory). */
static int edns_sock_outgoing(struct edns_outgoing *o, const struct conf_addr *a, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int f = fam_idx(a[i].ss.ss_family);
		struct conf_addr *grown = realloc(o->addr[f], (o->n[f] + 1) * sizeof(*grown));
		if (grown == NULL)
			return -1;
		o->addr[f] = grown;
		o->addr[f][o->n[f]++] = a[i];
	}
	return 0;
}

static void edns_sock_outgoing_free(struct edns_outgoing *o)
{
	free(o->addr[0]);
	free(o->addr[1]);
}

/*
 * May the pool send to an address of family? Any, without edns.outgoing;
 * with it, only families it lists: those servers are not tried at all.
 */
static bool edns_sock_sendable(const struct resolve_edns *p, int family)
{
	return (p->out.n[0] == 0 && p->out.n[1] == 0) || p->out.n[fam_idx(family)] > 0;
}

/* Drop r's servers of a family the pool does not send over. @return how many are left. */
static int edns_sock_keep_sendable(struct eres *r)
{
	const struct resolve_edns *p = r->t->pool;
	struct edns_servers *sv = &r->zone.sv;
	int n = 0;
	for (int i = 0; i < sv->naddr; i++)
		if (edns_sock_sendable(p, sv->addr[i].ss_family))
			sv->addr[n++] = sv->addr[i];
	sv->naddr = n;
	return n;
}

/* The next source address of to's family, round robin per thread; NULL: any. */
static const struct conf_addr *pick_source(struct ethread *t, int family)
{
	int f = fam_idx(family);
	size_t n = t->pool->out.n[f];
	return n == 0 ? NULL : &t->pool->out.addr[f][t->out_next[f]++ % n];
}

static void set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

/* TCP, or 8 random ports taken: the kernel's port, but src's address
 * (connect() alone would pick the address by route). For TCP the port waits
 * for connect(), which can then share it among destinations, instead of one
 * per socket at bind(). @return 0 or -errno. */
static int bind_source_any_port(int fd, const struct conf_addr *src, struct sockaddr_storage *local,
                                socklen_t len, bool tcp)
{
	int one = 1;
	if (tcp)
		setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
	set_port(local, 0);
	if (bind(fd, (struct sockaddr *)local, len) == 0)
		return 0;
	int e = errno;
	/* the address left the machine after the startup check: say so, once a second at most */
	static _Atomic uint64_t warned_s;
	uint64_t now_s = clock_ns() / 1000000000ull, last = atomic_load(&warned_s);
	if (now_s != last && atomic_compare_exchange_strong(&warned_s, &last, now_s))
		log_warn("EDNS pool: cannot send from edns.outgoing address %s: %s", src->text, strerror(e));
	return -e;
}

/*
 * A socket to "to", from one of edns.outgoing's addresses of its family
 * (round robin) or, without the key, from whatever address the kernel
 * routes by. UDP takes a random source port of our own choosing, not the
 * kernel's next one; TCP the kernel's ephemeral port.
 * @return the socket (non-blocking, connected or connecting) or -errno.
 */
static int edns_sock_open(struct ethread *t, const struct sockaddr_storage *to, bool tcp)
{
	socklen_t tolen = to->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	int fd = socket(to->ss_family, (tcp ? SOCK_STREAM : SOCK_DGRAM) | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	const struct conf_addr *src = pick_source(t, to->ss_family);
	struct sockaddr_storage local;
	if (src != NULL) {
		memcpy(&local, &src->ss, sizeof(local));
	} else {
		memset(&local, 0, sizeof(local));
		local.ss_family = to->ss_family;
	}
	bool bound = false;
	if (!tcp) {
		for (int i = 0; i < 8 && !bound; i++) {
			set_port(&local, (uint16_t)(1024 + edns_sock_random() % (65536 - 1024)));
			bound = bind(fd, (struct sockaddr *)&local, tolen) == 0;
		}
	}
	if (src != NULL && !bound) {
		int rc = bind_source_any_port(fd, src, &local, tolen, tcp);
		if (rc < 0) {
			close(fd);
			return rc;
		}
	}
	/* connect() makes the kernel drop datagrams from other addresses/ports. */
	if (connect(fd, (const struct sockaddr *)to, tolen) != 0 && errno != EINPROGRESS) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

/* Close r's upstream socket (if any) and drop a TCP response half read. */
static void edns_sock_close(struct eres *r)
{
	if (r->ex.fd >= 0) {
		epoll_ctl(r->t->epfd, EPOLL_CTL_DEL, r->ex.fd, NULL);
		close(r->ex.fd);
		r->ex.fd = -1;
	}
	free(r->ex.tbuf);
	r->ex.tbuf = NULL;
	r->ex.tlen = 0;
	r->ex.tcp_sent = false;
}

/* ---- how a resolution ends ---- */

/*
 * How an EDNS resolution ends: the hops' answers spliced into one and handed
 * to the cache (inflight_done), or SERVFAIL with the reason a client is told
 * (inflight_fail); either way the resolution leaves its thread's list and
 * the pool's budget, and a cut discovery it ran wakes whoever waited on it.
 */
static const struct wire_ede edns_ede_unreachable = { WIRE_EDE_NO_REACHABLE_AUTHORITY, "no authority answered" };
static const struct wire_ede edns_ede_errors = { WIRE_EDE_NO_REACHABLE_AUTHORITY, "authorities answered with errors" };
static const struct wire_ede edns_ede_network = { WIRE_EDE_NETWORK_ERROR, "network error" };
static const struct wire_ede edns_ede_invalid = { WIRE_EDE_INVALID_DATA, "malformed answer" };
static const struct wire_ede edns_ede_mismatch = { WIRE_EDE_INVALID_DATA, "answers did not match the query" };
static const struct wire_ede edns_ede_truncated = { WIRE_EDE_INVALID_DATA, "truncated over TCP" };
static const struct wire_ede edns_ede_chain = { WIRE_EDE_OTHER, "CNAME chain too long" };
static const struct wire_ede edns_ede_no_zone = { WIRE_EDE_NO_REACHABLE_AUTHORITY, "zone servers not found" };
static const struct wire_ede edns_ede_no_targets = { WIRE_EDE_OTHER, "no forward targets" };
static const struct wire_ede edns_ede_slow = { WIRE_EDE_NO_REACHABLE_AUTHORITY, "resolution timed out" };
static const struct wire_ede edns_ede_down = { WIRE_EDE_NO_REACHABLE_AUTHORITY, "every server of the zone is down" };
static const struct wire_ede edns_ede_rate = { WIRE_EDE_OTHER, "zone query rate exceeded" };
static const struct wire_ede edns_ede_family = { WIRE_EDE_NO_REACHABLE_AUTHORITY, "no server of a family edns.outgoing has" };
static const struct wire_ede edns_ede_val_malformed = { WIRE_EDE_INVALID_DATA, "answer cannot be validated" };
static const struct wire_ede edns_ede_cut_bogus = { WIRE_EDE_DNSSEC_BOGUS, "the zone's SOA or NS did not validate" };
static const struct wire_ede edns_ede_cut_expired = { WIRE_EDE_SIGNATURE_EXPIRED, "the zone's SOA or NS signature expired" };
static const struct wire_ede edns_ede_cut_not_yet = { WIRE_EDE_SIGNATURE_NOT_YET_VALID,
	                                       "the zone's SOA or NS signature is not yet valid" };
static const struct wire_ede edns_ede_tier = { WIRE_EDE_NO_REACHABLE_AUTHORITY, "no EDNS tier node answered" };
static const struct wire_ede edns_ede_tier_error = { WIRE_EDE_NO_REACHABLE_AUTHORITY,
	                                      "the EDNS tier node answered with an error" };

static void eres_free(struct eres *r)
{
	struct ethread *t = r->t;
	if (edns_zcache_discovering(r))
		edns_zcache_wake_waiters(r); /* a failed discovery: the waiters try their own */
	edns_sock_close(r);
	if (r->prev)
		r->prev->next = r->next;
	else
		t->list = r->next;
	if (r->next)
		r->next->prev = r->prev;
	edns_health_budget_release(t->pool, r->job->partition, r->rule_slot);
	if (r->val) {
		edns_verdict_clear(&r->val->v);
		for (unsigned i = 0; i < VAL_MAX_NEEDS; i++)
			free(r->val->answers[i]);
		free(r->val);
	}
	free(r->acc);
	free(r);
}

/* The job's partition by name, for logs (the plan it was routed under). */
static const char *edns_res_part_name(const struct job *job)
{
	const char *n = job->snap != NULL ? ptable_name(job->snap->conf->partitions.table, job->partition) : NULL;
	return n != NULL ? n : "?";
}

/*
 * End r with SERVFAIL and free it. ede says why to clients (and the failure
 * is remembered for cache.failure_ttl); NULL for our own trouble (memory,
 * shutdown), which is neither told nor remembered.
 */
static void edns_res_fail(struct eres *r, const struct wire_ede *ede, const char *why)
{
	if (log_get_level() >= LOG_LEVEL_INFO) {
		char name[512] = "?";
		wire_name_to_text(r->job->qname, r->job->qname_len, name, sizeof(name));
		log_info_limited("EDNS resolution of %s type %u for partition %s failed: %s", name, r->job->qtype,
		                 edns_res_part_name(r->job), why);
	}
	counter_inc(&r->t->ctr.upstream_errors);
	struct job *job = r->job;
	if (edns_zcache_discovering(r) && ede == &edns_ede_no_zone)
		edns_zcache_put_failed(r);
	eres_free(r);
	/* load shedding (a zone over its query rate) is not a failure to remember */
	inflight_fail(job, WIRE_RCODE_SERVFAIL, ede, ede != NULL && ede != &edns_ede_rate);
}

/* Add a hop's response to the chain so far (the first one is copied as is). @return 0 or -1 (r failed: freed). */
static int edns_res_append(struct eres *r, const uint8_t *resp, size_t len)
{
	uint8_t *out;
	size_t out_len;
	if (r->acc == NULL) {
		out = malloc(len);
		if (out == NULL) {
			edns_res_fail(r, NULL, "out of memory");
			return -1;
		}
		memcpy(out, resp, len);
		out_len = len;
	} else if (wire_splice(r->acc, r->acc_len, resp, len, &out, &out_len) != 0) {
		edns_res_fail(r, &edns_ede_invalid, "cannot splice the CNAME chain");
		return -1;
	}
	free(r->acc);
	r->acc = out;
	r->acc_len = out_len;
	return 0;
}

/* End r with resp, the last hop's answer, spliced after the earlier ones; free it. */
static void edns_res_done(struct eres *r, const uint8_t *resp, size_t len)
{
	struct job *job = r->job;
	if (r->acc == NULL) {
		/* resp may live in the thread's buffer: finish the job before reuse */
		eres_free(r);
		inflight_done(job, resp, len, false);
		return;
	}
	if (edns_res_append(r, resp, len) != 0)
		return;
	uint8_t *msg = r->acc;
	size_t msg_len = r->acc_len;
	r->acc = NULL; /* taken: eres_free must not free it */
	eres_free(r);
	inflight_done(job, msg, msg_len, false);
	free(msg);
}

/* ---- the ECS-bearing upstream exchange ---- */

/*
 * The EDNS pool's exchange with a zone's servers (or forward targets, or
 * tier nodes): which server is asked (up, reachable, the zone under its
 * query rate), the ECS-bearing query over UDP or TCP, the reply read whole,
 * the next server when one fails; dnstap of both directions. What a reply
 * means is edns_iter.c's business, and following it on_response's.
 */
#define MAX_TRIES 4       /* upstream attempts per hop */

static void edns_exchange_query(struct eres *r);

/*
 * dnstap: the query r just sent (resp NULL) or a response to it, with the
 * ECS option inside, so an operator can see exactly what left for whom.
 */
static void tap_upstream(struct eres *r, const uint8_t *resp, size_t len)
{
	struct sockaddr_storage src;
	socklen_t slen = sizeof(src);
	if (getsockname(r->ex.fd, (struct sockaddr *)&src, &slen) != 0)
		src.ss_family = 0;
	struct dnstap_msg m = { .type = resp ? DNSTAP_RESOLVER_RESPONSE : DNSTAP_RESOLVER_QUERY, .tcp = r->ex.tcp,
	                        .query_addr = src.ss_family != 0 ? &src : NULL,
	                        .response_addr = &r->zone.sv.addr[r->zone.cur % r->zone.sv.naddr],
	                        .query_time = r->ex.sent_rt, .query = resp ? NULL : r->ex.q, .query_len = r->ex.qlen,
	                        .response = resp, .response_len = len, .zone = r->forward ? NULL : r->zone.name,
	                        .zone_len = r->zone.len };
	if (resp)
		m.response_time = dnstap_now();
	dnstap_log(r->t->tap, &m);
}

/* This server failed (ede: how, for the client if every server does): try the next one, or fail r. */
static void edns_exchange_next_server(struct eres *r, const struct wire_ede *ede, const char *why)
{
	edns_sock_close(r);
	r->ex.tcp = false;
	r->zone.cur++;
	if (r->tier) {
		/* the owner failed: once more, on the next node by score (tier_fill) */
		if (r->zone.cur >= r->zone.sv.naddr) {
			edns_res_fail(r, ede == &edns_ede_unreachable ? &edns_ede_tier : ede, why);
			return;
		}
		counter_inc(&r->t->ctr.tier_failovers);
		edns_exchange_query(r);
		return;
	}
	if (r->zone.tries >= MAX_TRIES || r->zone.cur >= r->zone.sv.naddr * 2) {
		edns_res_fail(r, ede, why);
		return;
	}
	edns_exchange_query(r);
}

/* Set r->zone.cur to the server to ask: the first usable from it on, the zone under its rate. @return false: r failed. */
static bool pick_server(struct eres *r)
{
	struct eres_zone *z = &r->zone;
	if (z->sv.naddr == 0) {
		edns_res_fail(r, &edns_ede_no_zone, "no servers");
		return false;
	}
	/* forward targets of a family edns.outgoing does not have go here;
	 * discovered servers were sorted out as they were taken */
	if (edns_sock_keep_sendable(r) == 0) {
		edns_res_fail(r, &edns_ede_family, "no server of an address family edns.outgoing has");
		return false;
	}
	uint64_t now = clock_ns();
	int k = 0;
	/* tier nodes: tier_fill took the nodes up, in order; their health is the tier's */
	while (!r->tier && k < z->sv.naddr && !edns_health_usable(r, &z->sv.addr[(z->cur + k) % z->sv.naddr], now))
		k++;
	if (k == z->sv.naddr) {
		edns_res_fail(r, &edns_ede_down, "every server is down (backing off)");
		return false;
	}
	z->cur += k;
	uint64_t wait_ns;
	if (!r->forward && !edns_health_rate_take(r->t, z->name, z->len, &wait_ns)) {
		counter_inc(&r->t->ctr.zone_limited);
		edns_health_shed_hint_set(r, wait_ns);
		edns_res_fail(r, &edns_ede_rate, "zone query rate exceeded (edns.zone_qps)");
		return false;
	}
	return true;
}

static void log_query(const struct eres *r, const struct sockaddr_storage *to)
{
	char a[INET6_ADDRSTRLEN] = "?", n[512] = "?";
	const void *src = to->ss_family == AF_INET ? (const void *)&((const struct sockaddr_in *)to)->sin_addr
	                                            : (const void *)&((const struct sockaddr_in6 *)to)->sin6_addr;
	inet_ntop(to->ss_family, src, a, sizeof(a));
	wire_name_to_text(r->name, r->name_len, n, sizeof(n));
	log_debug("EDNS query %s type %u to %s%s port %u%s (partition %s)", n, r->job->qtype,
	          r->tier ? "tier node " : "", a, ntohs(((const struct sockaddr_in *)to)->sin_port),
	          r->ex.tcp ? " over TCP" : "", edns_res_part_name(r->job));
}

/*
 * Ask r's hop name of the next usable server of r->zone (up, in a family
 * edns.outgoing has, the zone under its query rate) with r's ECS, over UDP
 * or, with r->ex.tcp, TCP. On the way r may fail (edns_res_fail: freed).
 */
static void edns_exchange_query(struct eres *r)
{
	struct job *job = r->job;
	r->st = E_QUERY;
	if (!pick_server(r))
		return;
	r->zone.tries++;
	const struct sockaddr_storage *to = &r->zone.sv.addr[r->zone.cur % r->zone.sv.naddr];
	r->ex.id = (uint16_t)edns_sock_random();
	/* DO whatever the client said: one cache entry serves DO and non-DO
	 * clients, the DNSSEC records stripped for the latter at reply time */
	int len = wire_query_build(r->ex.id, r->forward, true, r->name, r->name_len, job->qtype, job->qclass, r->ecs,
	                           r->ex.q, sizeof(r->ex.q));
	if (len < 0) {
		edns_res_fail(r, &edns_ede_invalid, "cannot build the query");
		return;
	}
	r->ex.qlen = (size_t)len;
	if (log_get_level() >= LOG_LEVEL_DEBUG)
		log_query(r, to);
	int fd = edns_sock_open(r->t, to, r->ex.tcp);
	if (fd < 0) {
		edns_exchange_next_server(r, &edns_ede_network, strerror(-fd));
		return;
	}
	r->ex.fd = fd;
	r->ex.ev = (struct eev){ .kind = EEV_SOCK, .r = r };
	struct epoll_event e = { .events = r->ex.tcp ? EPOLLOUT : EPOLLIN, .data.ptr = &r->ex.ev };
	if (epoll_ctl(r->t->epfd, EPOLL_CTL_ADD, fd, &e) != 0) {
		edns_exchange_next_server(r, &edns_ede_network, "epoll");
		return;
	}
	r->ex.deadline_ns = clock_ns() + (uint64_t)job->timeout_ms * 1000000ull;
	counter_inc(&r->t->ctr.upstream_queries);
	if (r->tier)
		counter_inc(&r->t->ctr.tier_queries);
	if (!r->ex.tcp && send(fd, r->ex.q, r->ex.qlen, 0) != (ssize_t)r->ex.qlen) {
		edns_exchange_next_server(r, &edns_ede_network, "send failed");
		return;
	}
	if (!r->ex.tcp && r->t->tap) {
		r->ex.sent_rt = dnstap_now();
		tap_upstream(r, NULL, 0);
	}
}

/* One datagram per wake-up; epoll is level-triggered. */
static bool read_udp(struct eres *r, size_t *len)
{
	uint8_t *buf = r->t->buf;
	ssize_t n = recv(r->ex.fd, buf, 65535, MSG_DONTWAIT);
	if (n < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			char why[128];
			snprintf(why, sizeof(why), "receive error: %s", strerror(errno));
			edns_health_timeout(r);
			edns_exchange_next_server(r, &edns_ede_network, why); /* e.g. ICMP port unreachable */
		}
		return false;
	}
	if (r->t->tap)
		tap_upstream(r, buf, (size_t)n);
	*len = (size_t)n;
	return true;
}

/* The TCP connection is up (EPOLLOUT): send the query, length first, then wait for the reply. */
static void send_tcp(struct eres *r, uint32_t events)
{
	if (!(events & EPOLLOUT))
		return;
	uint8_t msg[514];
	msg[0] = (uint8_t)(r->ex.qlen >> 8);
	msg[1] = (uint8_t)r->ex.qlen;
	memcpy(msg + 2, r->ex.q, r->ex.qlen);
	if (send(r->ex.fd, msg, r->ex.qlen + 2, MSG_NOSIGNAL) != (ssize_t)(r->ex.qlen + 2)) {
		edns_exchange_next_server(r, &edns_ede_network, "TCP connect/send failed");
		return;
	}
	r->ex.tcp_sent = true;
	if (r->t->tap) {
		r->ex.sent_rt = dnstap_now();
		tap_upstream(r, NULL, 0);
	}
	struct epoll_event e = { .events = EPOLLIN, .data.ptr = &r->ex.ev };
	epoll_ctl(r->t->epfd, EPOLL_CTL_MOD, r->ex.fd, &e);
}

/* Read what came of the length-prefixed reply; the whole of it goes to the thread's buffer. */
static bool read_tcp(struct eres *r, size_t *len)
{
	if (r->ex.tbuf == NULL) {
		r->ex.tbuf = malloc(65535 + 2);
		if (r->ex.tbuf == NULL) {
			edns_res_fail(r, NULL, "out of memory");
			return false;
		}
	}
	ssize_t n = recv(r->ex.fd, r->ex.tbuf + r->ex.tlen, 65537 - r->ex.tlen, MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
		edns_exchange_next_server(r, &edns_ede_network, "TCP connection closed");
		return false;
	}
	if (n < 0)
		return false;
	r->ex.tlen += (size_t)n;
	if (r->ex.tlen < 2)
		return false;
	size_t want = ((size_t)r->ex.tbuf[0] << 8) | r->ex.tbuf[1];
	if (r->ex.tlen < want + 2)
		return false;
	memcpy(r->t->buf, r->ex.tbuf + 2, want);
	if (r->t->tap)
		tap_upstream(r, r->t->buf, want);
	*len = want;
	return true;
}

/*
 * r's socket is ready (events from epoll): send a TCP query once connected,
 * read what came.
 * @return true when a whole response is in r->t->buf, *len bytes; false
 *         otherwise (keep waiting, or r moved on: to the next server or
 *         failed and freed; do not touch r then).
 */
static bool edns_exchange_read(struct eres *r, uint32_t events, size_t *len)
{
	if (!r->ex.tcp)
		return read_udp(r, len);
	if (!r->ex.tcp_sent) {
		send_tcp(r, events);
		return false;
	}
	return read_tcp(r, len);
}

/* ---- libunbound lookups (zone cut, nameserver addresses) ---- */

/*
 * The EDNS pool's zone cuts, found with the thread's own libunbound context
 * (libunbound cannot send ECS, so it is asked only where the zone is and
 * what its servers' addresses are): the rule name's NS, or the SOA of the
 * name and each parent until one answers, then NS, then addresses; or taken
 * from a referral. Each answer is read by edns_iter.c; a cut found is
 * cached (edns_zcache_put) and the zone's servers are asked.
 */
static void ub_done(void *arg, int err, struct ub_result *res);

/*
 * Look name/type up in r's thread's libunbound context; cb gets the result
 * (arg is r) and must clear r->ub_busy first. On error r fails (freed).
 */
static void edns_lookup_ub(struct eres *r, const uint8_t *name, size_t len, uint16_t type, ub_callback_type cb)
{
	char text[1024];
	if (wire_name_to_text(name, len, text, sizeof(text)) < 0) {
		edns_res_fail(r, &edns_ede_invalid, "bad name");
		return;
	}
	counter_inc(&r->t->ctr.ub_lookups);
	int rc = ub_resolve_async(r->t->ctx, text, type, WIRE_CLASS_IN, r, cb, &r->ub_id);
	if (rc != 0)
		edns_res_fail(r, NULL, ub_strerror(rc));
	else
		r->ub_busy = true;
}

/* Find the cut by the SOA of the hop name, then of each parent (the answer's SOA names the zone). */
static void soa_walk(struct eres *r)
{
	r->st = E_SOA;
	r->cut.ns_probe = false;
	memcpy(r->cut.zname, r->name, r->name_len);
	r->cut.zname_len = r->name_len;
	edns_lookup_ub(r, r->cut.zname, r->cut.zname_len, WIRE_TYPE_SOA, ub_done);
}

/*
 * Find the cut of r's hop name, up to r->cut.bound (edns_zcache_set_bound),
 * then the addresses of its servers; cache it and ask the zone's servers
 * (edns_exchange_query). For a --subtree rule's name, its NS first; else,
 * or when it has none, the SOA of the name and of each parent.
 */
static void edns_lookup_cut(struct eres *r)
{
	r->zone.sv.naddr = 0;
	r->cut.start_ns = clock_ns();
	if (r->cut.bound_is_rule) {
		/* A --subtree rule's name is most often its zone's apex (a CDN's
		 * GSLB zone): its NS is the cut, one query to the zone's servers.
		 * (The SOA walk from the hop name costs a qname-minimisation step,
		 * the SOA, then the NS.) A deeper cut is met as a referral. */
		r->st = E_NS;
		r->cut.ns_probe = true;
		memcpy(r->zone.name, r->cut.bound, r->cut.bound_len);
		r->zone.len = r->cut.bound_len;
		edns_lookup_ub(r, r->zone.name, r->zone.len, WIRE_TYPE_NS, ub_done);
		return;
	}
	soa_walk(r);
}

static void on_soa(struct eres *r, const uint8_t *msg, size_t len)
{
	switch (edns_iter_soa(msg, len, r->name, r->name_len, r->cut.zname, r->cut.zname_len, r->zone.name,
	                      &r->zone.len)) {
	case EDNS_CUT_FOUND:
		r->st = E_NS;
		edns_lookup_ub(r, r->zone.name, r->zone.len, WIRE_TYPE_NS, ub_done);
		return;
	case EDNS_CUT_PARENT: {
		int off = wire_name_parent(r->cut.zname, r->cut.zname_len);
		if (off <= 0) {
			edns_res_fail(r, &edns_ede_no_zone, "no zone found");
			return;
		}
		memmove(r->cut.zname, r->cut.zname + off, r->cut.zname_len - (size_t)off);
		r->cut.zname_len -= (size_t)off;
		edns_lookup_ub(r, r->cut.zname, r->cut.zname_len, WIRE_TYPE_SOA, ub_done);
		return;
	}
	case EDNS_CUT_NONE:
		break;
	}
	edns_res_fail(r, &edns_ede_no_zone, "no SOA for the zone cut");
}

/* Nameserver addresses without glue: A for each name, then AAAA for each. */
static void next_nsaddr(struct eres *r)
{
	const struct edns_servers *sv = &r->zone.sv;
	/* no lookups of addresses the pool would not send to (edns.outgoing) */
	if (r->cut.ns_i < sv->nns && !edns_sock_sendable(r->t->pool, AF_INET))
		r->cut.ns_i = sv->nns;
	if (r->cut.ns_i >= 2 * sv->nns || (r->cut.ns_i >= sv->nns && !edns_sock_sendable(r->t->pool, AF_INET6))) {
		edns_res_fail(r, &edns_ede_no_zone, "no address for any nameserver");
		return;
	}
	r->st = E_ADDR;
	int i = r->cut.ns_i++;
	uint16_t type = i < sv->nns ? WIRE_TYPE_A : WIRE_TYPE_AAAA;
	i %= sv->nns;
	edns_lookup_ub(r, sv->nsname[i], sv->nsname_len[i], type, ub_done);
}

/* The cut is found, with r->zone's servers: cache it, wake who waited for it, ask them. */
static void cut_found(struct eres *r)
{
	edns_zcache_put(r, r->zone.sv.ns_ttl);
	edns_zcache_wake_waiters(r);
	edns_exchange_query(r);
}

static void on_ns(struct eres *r, const uint8_t *msg, size_t len)
{
	if (edns_servers_take_ns(&r->zone.sv, msg, len, WIRE_SECTION_ANSWER, r->zone.name, r->zone.len) == 0) {
		if (r->cut.ns_probe) { /* the flagged subtree is not a zone of its own: find the one holding it */
			soa_walk(r);
			return;
		}
		edns_res_fail(r, &edns_ede_no_zone, "zone has no NS records");
		return;
	}
	r->cut.ns_probe = false;
	r->zone.sv.naddr = 0;
	edns_servers_take_addrs(&r->zone.sv, msg, len, WIRE_SECTION_ADDITIONAL, false, NULL, 0);
	if (edns_sock_keep_sendable(r) > 0) {
		cut_found(r);
		return;
	}
	r->cut.ns_i = 0;
	next_nsaddr(r);
}

static void on_addr(struct eres *r, const uint8_t *msg, size_t len)
{
	edns_servers_take_addrs(&r->zone.sv, msg, len, WIRE_SECTION_ANSWER, true, NULL, 0);
	if (edns_sock_keep_sendable(r) == 0) {
		next_nsaddr(r);
		return;
	}
	cut_found(r);
}

/* The zone cut's lookup itself is forged or expired: say so, not "zone not found". Frees res. */
static void cut_bogus(struct eres *r, struct ub_result *res)
{
	char why[400];
	snprintf(why, sizeof(why), "DNSSEC: zone-cut lookup bogus: %s", res->why_bogus ? res->why_bogus : "?");
	/* libunbound's reasons (validator/val_sigcrypt.c) name the names involved:
	 * match its phrases, not a word a name may hold */
	const char *w = res->why_bogus ? res->why_bogus : "";
	const struct wire_ede *ede = strstr(w, ": signature expired")                 ? &edns_ede_cut_expired
	                             : strstr(w, ": signature before inception date") ? &edns_ede_cut_not_yet
	                                                                              : &edns_ede_cut_bogus;
	ub_resolve_free(res);
	counter_inc(&r->t->ctr.dnssec_bogus);
	edns_res_fail(r, ede, why);
}

/* The lookup failed: the next nameserver's address, the SOA walk after the NS probe, or no zone. */
static void lookup_failed(struct eres *r, int err)
{
	if (r->st == E_ADDR) {
		next_nsaddr(r);
		return;
	}
	if (r->cut.ns_probe) {
		soa_walk(r);
		return;
	}
	edns_res_fail(r, &edns_ede_no_zone, err ? ub_strerror(err) : "zone-cut lookup failed");
}

/*
 * An SOA lookup said NXDOMAIN: when that came from a zone above the flagged
 * name's own (a TLD, the root), never send ECS there: answer it as is
 * (@return true: r is done). An NXDOMAIN from the flagged zone itself goes
 * on: its cut is found and cached, and the GSLB is asked with ECS.
 */
static bool nxdomain_above(struct eres *r, const struct ub_result *res)
{
	const uint8_t *msg = res->answer_packet;
	size_t len = (size_t)res->answer_len;
	uint8_t nxzone[WIRE_MAX_NAME];
	size_t nxzone_len = 0;
	if (edns_iter_soa(msg, len, r->name, r->name_len, r->cut.zname, r->cut.zname_len, nxzone, &nxzone_len) ==
	            EDNS_CUT_FOUND &&
	    wire_name_in_zone(nxzone, nxzone_len, r->cut.bound, r->cut.bound_len))
		return false;
	uint8_t *neg;
	size_t neg_len;
	if (wire_negative_answer(msg, len, r->name, r->name_len, r->job->qtype, r->job->qclass, &neg, &neg_len) != 0) {
		edns_res_fail(r, &edns_ede_invalid, "cannot make the negative answer");
		return true;
	}
	/* libunbound validated this denial itself (a bogus one ended before) */
	if (res->secure && !r->job->cd_bit)
		neg[3] |= WIRE_FLAG_AD;
	edns_zcache_wake_waiters(r);
	r->st = E_QUERY;
	edns_res_done(r, neg, neg_len);
	free(neg);
	return true;
}

static void ub_done(void *arg, int err, struct ub_result *res)
{
	struct eres *r = arg;
	r->ub_busy = false;
	if (err == 0 && res != NULL && res->bogus && !r->job->cd_bit) {
		cut_bogus(r, res);
		return;
	}
	if (err != 0 || res == NULL || res->answer_packet == NULL || res->answer_len < WIRE_HEADER_SIZE) {
		if (res)
			ub_resolve_free(res);
		lookup_failed(r, err);
		return;
	}
	if (r->st == E_SOA && res->rcode == WIRE_RCODE_NXDOMAIN && nxdomain_above(r, res)) {
		ub_resolve_free(res);
		return;
	}
	const uint8_t *msg = res->answer_packet;
	size_t len = (size_t)res->answer_len;
	switch (r->st) {
	case E_SOA: on_soa(r, msg, len); break;
	case E_NS: on_ns(r, msg, len); break;
	case E_ADDR: on_addr(r, msg, len); break;
	case E_WAIT:
	case E_QUERY:
	case E_VALIDATE: break;
	}
	ub_resolve_free(res);
}

/* A referral to cut, read from resp: ask the child zone's servers (looking up their addresses without glue). */
static void edns_lookup_referral(struct eres *r, const uint8_t *cut, size_t cut_len, const uint8_t *resp, size_t len)
{
	/* glue only from inside the zone that referred us (the parent of cut) */
	uint8_t parent[WIRE_MAX_NAME];
	size_t parent_len = r->zone.len;
	memcpy(parent, r->zone.name, r->zone.len);
	memcpy(r->zone.name, cut, cut_len);
	r->zone.len = cut_len;
	edns_servers_take_ns(&r->zone.sv, resp, len, WIRE_SECTION_AUTHORITY, r->zone.name, r->zone.len);
	r->zone.sv.naddr = 0;
	r->zone.cur = 0;
	r->zone.tries = 0;
	edns_servers_take_addrs(&r->zone.sv, resp, len, WIRE_SECTION_ADDITIONAL, false, parent, parent_len);
	edns_sock_close(r);
	if (edns_sock_keep_sendable(r) > 0) {
		edns_zcache_put(r, r->zone.sv.ns_ttl);
		edns_exchange_query(r);
	} else {
		r->cut.ns_i = 0;
		next_nsaddr(r);
	}
}

/* ---- tier probes (edns.tier; the first EDNS thread, for the whole pool) ---- */

/*
 * edns.tier's probes: the first EDNS thread sends every tier node ". NS"
 * each TIER_PROBE_MS from a fresh socket, and reads a round later whether
 * it answered; tier.c keeps what that says of each node, for every thread.
 */
/* Make t the prober of the tier's n nodes (one probe slot each). @return 0 or -1 (out of memory). */
static int edns_probe_init(struct ethread *t, size_t n)
{
	t->probe.node = calloc(n, sizeof(*t->probe.node));
	if (t->probe.node == NULL)
		return -1;
	for (size_t i = 0; i < n; i++)
		t->probe.node[i].fd = -1;
	return 0;
}

/* Close t's probes out and free them (n: as at init; anything when t is no prober). */
static void edns_probe_free(struct ethread *t, size_t n)
{
	for (size_t k = 0; t->probe.node != NULL && k < n; k++)
		if (t->probe.node[k].fd >= 0)
			close(t->probe.node[k].fd);
	free(t->probe.node);
	t->probe.node = NULL;
}

/* Did the node answer probe pb (any reply to its ID, even REFUSED)? Reads what waits on its socket. */
static bool probe_answered(struct ethread *t, const struct tprobe *pb)
{
	for (int i = 0; i < 8; i++) {
		ssize_t n = recv(pb->fd, t->buf, 65535, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return false;
		if (n < 0)
			continue; /* ICMP unreachable: nothing there; read on */
		/* the socket is connected (the node's address and port only); a reply
		 * is QR=1 with our random ID: a liveness signal, nothing else is read */
		if (n >= WIRE_HEADER_SIZE && (t->buf[2] & 0x80) && ((uint16_t)(t->buf[0] << 8 | t->buf[1])) == pb->id)
			return true;
	}
	return false;
}

/* Send node i a probe: ". NS" with RD=0, which any partdns answers from its cache or REFUSES, cheaply. */
static void probe_send(struct ethread *t, unsigned i)
{
	struct tprobe *pb = &t->probe.node[i];
	const struct tier_node *nd = &t->pool->tier->node[i];
	static const uint8_t root[1] = { 0 };
	uint8_t q[64];
	pb->id = (uint16_t)edns_sock_random();
	int len = wire_query_build(pb->id, false, false, root, 1, WIRE_TYPE_NS, WIRE_CLASS_IN, NULL, q, sizeof(q));
	int fd = len > 0 ? edns_sock_open(t, &nd->addr, false) : -1;
	if (fd < 0)
		return; /* no socket: this round says nothing of the node */
	if (send(fd, q, (size_t)len, 0) != len) {
		close(fd);
		return;
	}
	pb->fd = fd;
}

/*
 * The answers are read here, a round later, not as they come: a node's
 * state moves at this pace anyway, and the thread's loop needs no more
 * descriptors.
 */
static void edns_probe_round(struct ethread *t)
{
	if (t->probe.node == NULL)
		return;
	uint64_t now = clock_ns();
	if (now < t->probe.next_ns)
		return;
	t->probe.next_ns = now + TIER_PROBE_MS * 1000000ull;
	struct tier *tr = t->pool->tier;
	for (unsigned i = 0; i < tr->n; i++) {
		struct tprobe *pb = &t->probe.node[i];
		if (pb->fd >= 0) {
			tier_probe_result(tr, i, probe_answered(t, pb));
			close(pb->fd);
			pb->fd = -1;
		}
		probe_send(t, i);
	}
}

/* How long t's loop may sleep, at most ms, so that the next round is not late. */
static int edns_probe_wait_ms(const struct ethread *t, int ms)
{
	if (t->probe.node == NULL)
		return ms;
	uint64_t now = clock_ns();
	int due = now >= t->probe.next_ns ? 0 : (int)((t->probe.next_ns - now) / 1000000ull) + 1;
	return due < ms ? due : ms;
}

/* ---- a hop's answer: validated, spliced, followed ---- */

/* The hop's answer stands (validated, or nothing to validate): splice it and follow its CNAME, or finish. */
static void hop_accept(struct eres *r, struct edns_verdict *v)
{
	struct job *job = r->job;
	if (v->step == EDNS_STEP_CNAME) {
		if (r->hops >= MAX_HOPS) {
			edns_verdict_clear(v);
			edns_res_fail(r, &edns_ede_chain, "CNAME chain too long");
			return;
		}
		/* splice this hop and resolve the target, with the same ECS */
		if (edns_res_append(r, v->msg, v->msg_len) != 0) {
			edns_verdict_clear(v);
			return;
		}
		edns_verdict_clear(v);
		r->hops++;
		edns_sock_close(r);
		memcpy(r->name, v->target, v->target_len);
		r->name_len = v->target_len;
		eres_start_hop(r);
		return;
	}
	steering_note(r->t->pool->steering, edns_res_part_name(job), job->rule.name, v->ecs_echoed, v->ecs_scope,
	              v->msg, v->msg_len);
	edns_res_done(r, v->msg, v->msg_len);
	edns_verdict_clear(v);
}

static void on_val_lookup(void *arg, int err, struct ub_result *res);

/* Look up the next thing validation needs, or, with all of them, judge the answer and go on. */
static void val_next(struct eres *r)
{
	struct eval *e = r->val;
	if (e->next < e->needs.n) {
		const struct val_need *n = &e->needs.need[e->next];
		edns_lookup_ub(r, n->name, n->name_len, n->type, on_val_lookup);
		return;
	}
	struct val_outcome o;
	val_check(e->v.msg, e->v.msg_len, r->name, r->name_len, r->job->qtype, &e->needs, time(NULL), &o);
	if (o.state == VAL_BOGUS || o.state == VAL_INDETERMINATE) {
		counter_inc(&r->t->ctr.dnssec_bogus);
		char why[1024], name[256] = "?";
		wire_name_to_text(r->name, r->name_len, name, sizeof(name));
		snprintf(why, sizeof(why), "DNSSEC %s at %s (zone %s): %s", val_state_name(o.state), name, o.zone,
		         o.why ? o.why : "?");
		/* o.ede's text is static: the result keeps a copy of the struct */
		edns_res_fail(r, &o.ede, why);
		return;
	}
	if (o.state == VAL_SECURE) {
		counter_inc(&r->t->ctr.dnssec_secure);
		e->v.msg[3] |= WIRE_FLAG_AD; /* kept through the splice only if every hop has it */
	} else {
		counter_inc(&r->t->ctr.dnssec_insecure);
	}
	struct edns_verdict v = e->v;
	e->v.msg = NULL;
	for (unsigned i = 0; i < VAL_MAX_NEEDS; i++)
		free(e->answers[i]);
	free(e);
	r->val = NULL;
	r->st = E_QUERY;
	hop_accept(r, &v);
}

/* libunbound's verdict on one lookup validation needs (the callback of val_next's lookups). */
static void on_val_lookup(void *arg, int err, struct ub_result *res)
{
	struct eres *r = arg;
	r->ub_busy = false;
	struct eval *e = r->val;
	struct val_need *n = &e->needs.need[e->next];
	if (err != 0 || res == NULL) {
		n->state = VAL_INDETERMINATE;
	} else if (res->bogus) {
		n->state = VAL_BOGUS;
		snprintf(e->why[e->next], sizeof(e->why[0]), "%s", res->why_bogus ? res->why_bogus : "bogus keys");
		n->why = e->why[e->next];
	} else if (res->secure) {
		n->state = VAL_SECURE;
		if (n->type == WIRE_TYPE_DNSKEY && res->answer_packet && res->answer_len > 0 &&
		    (e->answers[e->next] = malloc((size_t)res->answer_len)) != NULL) {
			memcpy(e->answers[e->next], res->answer_packet, (size_t)res->answer_len);
			n->answer = e->answers[e->next];
			n->answer_len = (size_t)res->answer_len;
		}
	} else {
		/* not secure, not bogus: insecure, unless libunbound could not tell */
		n->state = res->rcode == WIRE_RCODE_SERVFAIL ? VAL_INDETERMINATE : VAL_INSECURE;
	}
	if (res)
		ub_resolve_free(res);
	e->next++;
	val_next(r);
}

/*
 * With a trust anchor, each hop's answer is validated on its own (its zone's
 * keys, its own proofs) before it is spliced: the keys come from this
 * thread's libunbound context, which validates them up to the anchor, one
 * lookup at a time (val.h). CD=1 asks for the data unchecked (RFC 4035
 * §3.2.2): such jobs have their own cache entries and never get AD.
 */
static void hop_answered(struct eres *r, struct edns_verdict *v)
{
	if (!r->t->pool->validate || r->job->cd_bit) {
		hop_accept(r, v);
		return;
	}
	/* resolver.domain_insecure: a private zone the operator vouches for, as Unbound's domain-insecure */
	const struct resolve_edns *p = r->t->pool;
	for (size_t i = 0; i < p->ninsecure; i++) {
		if (wire_name_in_zone(r->name, r->name_len, p->insecure[i], p->insecure_len[i])) {
			counter_inc(&r->t->ctr.dnssec_insecure);
			hop_accept(r, v);
			return;
		}
	}
	edns_sock_close(r); /* the exchange is over; the lookups may take a while */
	struct eval *e = calloc(1, sizeof(*e));
	if (e == NULL) {
		edns_verdict_clear(v);
		edns_res_fail(r, NULL, "out of memory");
		return;
	}
	e->v = *v;
	v->msg = NULL;
	r->val = e;
	r->st = E_VALIDATE;
	if (val_needs(e->v.msg, e->v.msg_len, r->name, r->name_len, &e->needs) != 0) {
		counter_inc(&r->t->ctr.dnssec_bogus);
		edns_res_fail(r, &edns_ede_val_malformed, "DNSSEC: answer malformed or needs too many keys");
		return;
	}
	val_next(r);
}

/* What an upstream message means (edns_iter.c), followed. */
static void on_response(struct eres *r, const uint8_t *resp, size_t len)
{
	struct job *job = r->job;
	struct edns_hop hop = { .name = r->name, .name_len = r->name_len, .zone = r->zone.name,
	                        .zone_len = r->zone.len, .id = r->ex.id, .qtype = job->qtype, .qclass = job->qclass,
	                        .ecs = r->ecs, .tcp = r->ex.tcp, .forward = r->forward };
	struct edns_verdict v;
	if (edns_iter_response(&hop, resp, len, &v) == -ENOMEM) {
		edns_res_fail(r, NULL, "out of memory");
		return;
	}
	if (v.mismatch) {
		counter_inc(&r->t->ctr.upstream_mismatch);
		r->mismatched = true;
	} else {
		edns_health_answered(r);
		/* the query went out timeout_ms before its deadline (edns_exchange_query) */
		histogram_observe(&r->t->latency, clock_ns() + (uint64_t)job->timeout_ms * 1000000ull - r->ex.deadline_ns);
	}
	if (v.scrubbed > 0)
		log_debug("EDNS answer for partition %s: %u record(s) the server may not give dropped",
		          edns_res_part_name(job), v.scrubbed);
	switch (v.step) {
	case EDNS_STEP_IGNORE:
		return;
	case EDNS_STEP_NEXT_SERVER: {
		const struct wire_ede *ede = v.bad == EDNS_BAD_RCODE      ? &edns_ede_errors
		                             : v.bad == EDNS_BAD_TRUNCATED ? &edns_ede_truncated
		                             : v.bad == EDNS_BAD_MISMATCH  ? &edns_ede_mismatch
		                                                           : &edns_ede_invalid;
		if (r->tier) {
			/* the node is there and said no (or said nonsense): its answer stands for
			 * the partition; asking the next node would only resolve the city twice */
			edns_res_fail(r, v.bad == EDNS_BAD_RCODE ? &edns_ede_tier_error : ede, v.why);
			return;
		}
		edns_exchange_next_server(r, ede, v.why);
		return;
	}
	case EDNS_STEP_TCP:
		edns_sock_close(r);
		r->ex.tcp = true;
		r->zone.tries--; /* the TCP retry belongs to the same attempt */
		edns_exchange_query(r);
		return;
	case EDNS_STEP_REFERRAL:
		if (++r->referrals > MAX_REFERRALS) {
			edns_res_fail(r, &edns_ede_no_zone, "too many referrals");
			return;
		}
		edns_lookup_referral(r, v.cut, v.cut_len, resp, len);
		return;
	case EDNS_STEP_CNAME:
	case EDNS_STEP_DONE:
		break;
	}
	hop_answered(r, &v);
}

static void on_sock(struct eres *r, uint32_t events)
{
	size_t len;
	if (edns_exchange_read(r, events, &len))
		on_response(r, r->t->buf, len);
}

/* ---- resolution start and timeouts ---- */

/*
 * edns.tier: this hop goes to the tier node owning the job's partition
 * (rendezvous by the partition's name) and, if that one times out, once to
 * the next node up by score. With every node marked down the probes may
 * just be behind: the owner and the next are asked all the same.
 */
static void tier_fill(struct eres *r)
{
	const struct tier *tr = r->t->pool->tier;
	struct eres_zone *z = &r->zone;
	if (r->ecs->family == 0) {
		edns_res_fail(r, NULL, "no client address to send the EDNS tier");
		return;
	}
	unsigned order[TIER_MAX_NODES];
	tier_order(tr, edns_res_part_name(r->job), order);
	z->sv.naddr = 0;
	for (size_t k = 0; k < tr->n && z->sv.naddr < 2; k++) {
		if (!tier_is_up(tr, order[k]))
			continue;
		z->tier_node[z->sv.naddr] = order[k];
		memcpy(&z->sv.addr[z->sv.naddr++], &tr->node[order[k]].addr, sizeof(z->sv.addr[0]));
	}
	if (z->sv.naddr == 0) {
		for (size_t k = 0; k < tr->n && k < 2; k++) {
			z->tier_node[k] = order[k];
			memcpy(&z->sv.addr[z->sv.naddr++], &tr->node[order[k]].addr, sizeof(z->sv.addr[0]));
		}
	}
	edns_exchange_query(r);
}

/* Policy forward: the rule's targets are the servers. */
static void forward_fill(struct eres *r)
{
	struct eres_zone *z = &r->zone;
	z->sv.naddr = 0;
	for (size_t i = 0; i < r->job->rule.nforward && z->sv.naddr < EDNS_MAX_SERVERS; i++) {
		memcpy(&z->sv.addr[z->sv.naddr], &r->job->rule.forward[i].addr, r->job->rule.forward[i].len);
		z->sv.naddr++;
	}
	if (z->sv.naddr == 0) {
		edns_res_fail(r, &edns_ede_no_targets, "policy forward without targets (edns.forward)");
		return;
	}
	edns_exchange_query(r);
}

/* Ask for r's hop name: of the tier, the forward targets, or the zone's servers (the cut cached or found). */
static void eres_start_hop(struct eres *r)
{
	r->zone.cur = 0;
	r->zone.tries = 0;
	r->referrals = 0;
	r->ex.tcp = false;
	if (r->tier) {
		tier_fill(r);
		return;
	}
	if (r->forward) {
		forward_fill(r);
		return;
	}
	edns_zcache_set_bound(r);
	int cut = edns_zcache_get(r);
	if (cut < 0) {
		edns_res_fail(r, &edns_ede_no_zone, "the zone's servers could not be found a moment ago");
		return;
	}
	if (cut > 0) {
		edns_exchange_query(r);
		return;
	}
	if (edns_zcache_discovery_running(r)) {
		r->st = E_WAIT; /* one discovery per cut: the GSLB sees one SOA/NS lookup per zone */
		return;
	}
	edns_lookup_cut(r);
}

static void start_job(struct ethread *t, struct job *job)
{
	struct eres *r = calloc(1, sizeof(*r));
	if (r == NULL) {
		edns_health_budget_release(t->pool, job->partition, edns_health_rule_slot(t->pool, job));
		inflight_fail(job, WIRE_RCODE_SERVFAIL, NULL, false);
		return;
	}
	r->t = t;
	r->job = job;
	r->rule_slot = edns_health_rule_slot(t->pool, job);
	r->ex.fd = -1;
	/* a few upstream attempts' worth, then SERVFAIL rather than silence */
	r->give_up_ns = clock_ns() + 3ull * job->timeout_ms * 1000000ull;
	r->forward = job->rule.policy == CONF_POLICY_FORWARD;
	r->ecs = &job->ecs;
	if (t->pool->tier != NULL) {
		/* a frontend: the tier resolves (iterate or forward is its business) */
		if (r->forward && !atomic_exchange(&t->pool->forward_noted, true))
			log_warn("edns.tier is set: the forward policy of %s (and any other domain's) does not apply here; "
			         "its resolutions go to the tier", job->rule.name);
		r->tier = true;
		r->forward = true; /* one RD=1 query, scrubbed as a forwarder's answer is */
		r->ecs = &job->client_ecs;
	}
	if (job->start_len > 0) {
		/* a normal name's chain entered an EDNS domain: continue from there */
		memcpy(r->name, job->start, job->start_len);
		r->name_len = job->start_len;
		r->acc = job->prefix;
		r->acc_len = job->prefix_len;
		job->prefix = NULL;
		r->hops = 1;
	} else {
		memcpy(r->name, job->qname, job->qname_len);
		r->name_len = job->qname_len;
	}
	r->next = t->list;
	if (t->list)
		t->list->prev = r;
	t->list = r;
	eres_start_hop(r); /* edns_queries is the listener's count, made when it launched the job */
}

/* r ran past give_up_ns: SERVFAIL, saying what it was doing. */
static void give_up(struct ethread *t, struct eres *r, uint64_t now)
{
	if (r->ub_busy)
		ub_cancel(t->ctx, r->ub_id);
	r->ub_busy = false;
	counter_inc(&t->ctr.upstream_timeouts);
	/* only a discovery that ran long itself says the zone is dead; one
	 * that started late, after waiting for another, just ran out of time */
	if (edns_zcache_discovering(r) && now - r->cut.start_ns >= 2ull * r->job->timeout_ms * 1000000ull)
		edns_res_fail(r, &edns_ede_no_zone, "finding the zone's servers took too long");
	else if (edns_zcache_discovering(r))
		edns_res_fail(r, &edns_ede_slow, "resolution took too long while finding the zone's servers");
	else
		edns_res_fail(r, r->mismatched ? &edns_ede_mismatch : &edns_ede_slow, "resolution took too long");
}

static void check_timeouts(struct ethread *t)
{
	uint64_t now = clock_ns();
	struct eres *r = t->list;
	while (r) {
		struct eres *next = r->next;
		/* serve-stale's client response timer: the job runs on */
		if (!r->job->stale_tried && now - r->job->start_ns >= INFLIGHT_STALE_CLIENT_NS)
			inflight_stale_early(r->job);
		if (now > r->give_up_ns) {
			give_up(t, r, now);
		} else if (r->st == E_QUERY && r->ex.fd >= 0 && now > r->ex.deadline_ns) {
			counter_inc(&t->ctr.upstream_timeouts);
			edns_health_timeout(r);
			edns_exchange_next_server(r, r->mismatched ? &edns_ede_mismatch : &edns_ede_unreachable, "timeout");
		}
		r = next;
	}
}

/* ---- a thread ---- */

/* How long the loop may sleep: idle means asleep, unless probes are due. */
static int loop_timeout_ms(const struct ethread *t)
{
	/* timers only matter while something is in flight */
	return edns_probe_wait_ms(t, t->list ? 20 : 1000);
}

static void take_jobs(struct ethread *t)
{
	struct mq_node *m = mq_take_all(&t->jobs);
	while (m) {
		struct job *job = (struct job *)m;
		m = m->next;
		start_job(t, job);
	}
}

/* Resolutions whose awaited cut discovery ended look again. */
static void wake_waiting(struct ethread *t)
{
	for (struct eres *r = t->list, *next; r; r = next) {
		next = r->next;
		if (r->st == E_WAIT && r->cut.wake) {
			r->cut.wake = false;
			eres_start_hop(r);
			next = t->list; /* the list may have changed; woken ones are cleared */
		}
	}
}

static void *ethread_main(void *arg)
{
	struct ethread *t = arg;
	struct epoll_event ev[64];
	bool stop = false;
	while (!stop) {
		int n = epoll_wait(t->epfd, ev, 64, loop_timeout_ms(t));
		for (int i = 0; i < n; i++) {
			struct eev *e = ev[i].data.ptr;
			if (e->kind == EEV_JOBS) {
				take_jobs(t);
			} else if (e->kind == EEV_STOP) {
				stop = true;
			} else if (e->kind == EEV_UB) {
				ub_process(t->ctx);
			} else if (e->kind == EEV_SOCK) {
				/* the resolution may have moved on since epoll_wait */
				struct eres *x;
				for (x = t->list; x && x != e->r; x = x->next)
					;
				if (x && x->ex.fd >= 0 && &x->ex.ev == e)
					on_sock(x, ev[i].events);
			}
		}
		check_timeouts(t);
		edns_zcache_tick(t, clock_ns());
		edns_probe_round(t);
		wake_waiting(t);
	}
	return NULL;
}

/* ---- pool ---- */

/* resolver.domain_insecure, in wire form and lower case. @return 0 or -1 (out of memory). */
static int load_insecure(struct resolve_edns *p, const struct conf *c)
{
	if (c->resolver.ndomain_insecure == 0)
		return 0;
	p->insecure = calloc(c->resolver.ndomain_insecure, sizeof(*p->insecure));
	p->insecure_len = calloc(c->resolver.ndomain_insecure, sizeof(*p->insecure_len));
	if (p->insecure == NULL || p->insecure_len == NULL)
		return -1;
	for (size_t i = 0; i < c->resolver.ndomain_insecure; i++) {
		int n = wire_name_from_text(c->resolver.domain_insecure[i], p->insecure[p->ninsecure], WIRE_MAX_NAME);
		if (n > 0) {
			wire_name_lower(p->insecure[p->ninsecure], (size_t)n, p->insecure[p->ninsecure]);
			p->insecure_len[p->ninsecure++] = (size_t)n;
		}
	}
	return 0;
}

/* edns.tier (read once, like edns.outgoing: a restart key, daemon.c note_restart_keys). @return 0 or -1. */
static int load_tier(struct resolve_edns *p, const struct conf *c)
{
	if (c->edns.ntier == 0)
		return 0;
	p->tier = tier_new(c->edns.tier, c->edns.ntier);
	if (p->tier == NULL || edns_probe_init(&p->threads[0], p->tier->n) != 0)
		return -1;
	if (c->edns.policy == CONF_POLICY_FORWARD || c->edns.nforward > 0)
		log_warn("edns.tier is set: edns.policy forward and edns.forward do not apply here; every flagged "
		         "resolution goes to the tier");
	log_info("EDNS tier: %zu node(s); flagged misses go to each partition's owner", p->tier->n);
	return 0;
}

/* t's tables, libunbound context, job queue and epoll set. @return 0 or -1. */
static int thread_init(struct ethread *t, const struct conf *c, int stop_fd)
{
	if (edns_zcache_init(t) != 0 || edns_health_init(t, (double)c->edns.zone_qps / t->pool->nthreads) != 0)
		return -1;
	/* zone cuts and addresses only; never the trust-anchor file's owner */
	t->ctx = ubctx_new(c, NULL,
	                   &(struct ubctx_share){ .idx = 1, .of = 1, .outgoing = c->edns.outgoing,
	                                          .noutgoing = c->edns.noutgoing });
	if (t->ctx == NULL || mq_init(&t->jobs) != 0)
		return -1;
	t->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (t->epfd < 0)
		return -1;
	t->jobs_ev = (struct eev){ .kind = EEV_JOBS };
	t->ub_ev = (struct eev){ .kind = EEV_UB };
	t->stop_ev = (struct eev){ .kind = EEV_STOP };
	struct epoll_event e = { .events = EPOLLIN, .data.ptr = &t->jobs_ev };
	if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, t->jobs.efd, &e) != 0)
		return -1;
	e.data.ptr = &t->ub_ev;
	if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, ub_fd(t->ctx), &e) != 0)
		return -1;
	e.data.ptr = &t->stop_ev;
	if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, stop_fd, &e) != 0)
		return -1;
	return 0;
}

struct resolve_edns *resolve_edns_new(const struct conf *c, int stop_fd)
{
	struct resolve_edns *p = calloc(1, sizeof(*p));
	if (p == NULL)
		return NULL;
	p->stop_fd = stop_fd;
	p->validate = ubctx_validates(c);
	if (load_insecure(p, c) != 0)
		goto fail;
	hash_key_random(&p->key);
	p->nthreads = c->edns.threads ? c->edns.threads : 1;
	edns_health_budget_init(&p->budget, c->edns.max_inflight ? c->edns.max_inflight : 1000);
	p->threads = calloc(p->nthreads, sizeof(*p->threads));
	p->steering = steering_new();
	if (p->threads == NULL || p->steering == NULL)
		goto fail;
	if (load_tier(p, c) != 0)
		goto fail;
	/* edns.outgoing is read once: a restart key (daemon.c note_restart_keys) */
	if (edns_sock_outgoing(&p->out, c->edns.outgoing, c->edns.noutgoing) != 0)
		goto fail;
	for (unsigned i = 0; i < p->nthreads; i++) {
		struct ethread *t = &p->threads[i];
		t->pool = p;
		t->idx = i;
		t->epfd = -1;
		t->jobs.efd = -1;
	}
	for (unsigned i = 0; i < p->nthreads; i++)
		if (thread_init(&p->threads[i], c, stop_fd) != 0)
			goto fail;
	return p;
fail:
	log_err("cannot set up the EDNS pool");
	resolve_edns_free(p);
	return NULL;
}

int resolve_edns_submit(struct resolve_edns *p, struct job *job)
{
	unsigned slot = edns_health_rule_slot(p, job);
	/* Same name (any partition), same thread: its zone-cut cache is warm. */
	struct ethread *t = &p->threads[hash_bytes(&p->key, job->qname, job->qname_len) % p->nthreads];
	if (edns_health_shed_early(p, t, job, slot)) {
		atomic_fetch_add_explicit(&p->budget.shed, 1, memory_order_relaxed);
		if (log_get_level() >= LOG_LEVEL_INFO) {
			char name[512] = "?";
			wire_name_to_text(job->qname, job->qname_len, name, sizeof(name));
			log_info_limited("EDNS resolution of %s type %u for partition %s failed: zone query rate "
			                 "exceeded (edns.zone_qps)", name, job->qtype, edns_res_part_name(job));
		}
		inflight_fail(job, WIRE_RCODE_SERVFAIL, &edns_ede_rate, false);
		return 0;
	}
	if (!edns_health_budget_take(p, job, slot))
		return -EBUSY;
	mq_push(&t->jobs, &job->node);
	return 0;
}

void resolve_edns_set_dnstap(struct resolve_edns *p, struct dnstap *d, unsigned first)
{
	for (unsigned i = 0; i < p->nthreads; i++)
		p->threads[i].tap = dnstap_queue(d, first + i, &p->threads[i].ctr.dnstap_dropped);
}

unsigned resolve_edns_inflight(struct resolve_edns *p)
{
	return atomic_load_explicit(&p->budget.inflight, memory_order_relaxed);
}

const struct tier *resolve_edns_tier(const struct resolve_edns *p)
{
	return p->tier;
}

void resolve_edns_counters(struct resolve_edns *p, uint64_t *sum)
{
	for (unsigned i = 0; i < p->nthreads; i++)
		counters_add_to(&p->threads[i].ctr, sum);
	/* refused by a listener on a shed_hint: as the thread counts its own */
	uint64_t shed = atomic_load_explicit(&p->budget.shed, memory_order_relaxed);
	sum[C_zone_limited] += shed;
	sum[C_zone_limited_early] += shed;
	sum[C_upstream_errors] += shed;
}

void resolve_edns_latency(struct resolve_edns *p, uint64_t *bucket, uint64_t *sum_ns)
{
	for (unsigned i = 0; i < p->nthreads; i++)
		histogram_add_to(&p->threads[i].latency, bucket, sum_ns);
}

int resolve_edns_start(struct resolve_edns *p)
{
	for (unsigned i = 0; i < p->nthreads; i++) {
		int rc = pthread_create(&p->threads[i].thread, NULL, ethread_main, &p->threads[i]);
		if (rc != 0)
			return -rc;
		p->threads[i].started = true;
	}
	return 0;
}

void resolve_edns_join(struct resolve_edns *p)
{
	for (unsigned i = 0; p && i < p->nthreads; i++) {
		if (p->threads[i].started)
			pthread_join(p->threads[i].thread, NULL);
		p->threads[i].started = false;
	}
}

void resolve_edns_free(struct resolve_edns *p)
{
	if (p == NULL)
		return;
	resolve_edns_join(p);
	for (unsigned i = 0; p->threads && i < p->nthreads; i++) {
		struct ethread *t = &p->threads[i];
		if (t->ctx)
			ub_ctx_delete(t->ctx); /* cancels lookups: no callbacks after this */
		while (t->list)
			edns_res_fail(t->list, NULL, "shutting down");
		if (t->jobs.efd >= 0) {
			struct mq_node *m = mq_take_all(&t->jobs);
			while (m) {
				struct job *job = (struct job *)m;
				m = m->next;
				edns_health_budget_release(p, job->partition, edns_health_rule_slot(p, job));
				inflight_fail(job, WIRE_RCODE_SERVFAIL, NULL, false);
			}
			mq_deinit(&t->jobs);
		}
		if (t->epfd >= 0)
			close(t->epfd);
		edns_zcache_free(t);
		edns_health_free(t);
		edns_probe_free(t, p->tier != NULL ? p->tier->n : 0);
	}
	free(p->threads);
	tier_free(p->tier);
	edns_sock_outgoing_free(&p->out);
	free(p->insecure);
	free(p->insecure_len);
	steering_free(p->steering);
	free(p);
}

struct steering *resolve_edns_steering(struct resolve_edns *p)
{
	return p->steering;
}
