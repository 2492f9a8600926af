/* SPDX-License-Identifier: BSD-3-Clause */
/* Sharded key/value cache: chained hash tables, CLOCK eviction, byte cap, TTLs. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>


#include "resolver/cache/cache.h"
#include "util/hash.h"

/*
 * Layout. The key's hash picks a shard (bits 32..47) and a bucket in that
 * shard's chained table (low bits). Each shard has its own lock, table,
 * CLOCK ring and byte budget (max_bytes / nshards), and sits on its own
 * cache lines so shards never share a line.
 *
 * Lock choice: one pthread mutex per shard. A lookup is a hash, a short
 * chain walk and the caller's fn (tens of ns), so the lock is held briefly
 * and with 64 shards two threads rarely want the same one (measured: 0.02 %
 * of lookups found their shard locked, 2 threads). A rwlock would
 * not buy parallel readers here: glibc's rdlock is itself an atomic
 * read-modify-write on a shared word (the same cache-line transfer as a
 * mutex) and costs more instructions; with a mutex, lookups can also reap
 * expired entries and bump counters without atomic RMWs. Building with
 * -DCACHE_RWLOCK swaps in a rwlock (readers then share the lock and use
 * atomic RMW counters) so the choice can be re-measured: see bench_cache in
 * tests/resolver/cache.cmake and "## Cache" in bench/RESULTS.md.
 *
 * Eviction is CLOCK (second chance): every entry is on a circular list; a
 * hit sets the entry's referenced bit (a relaxed atomic store, and only when
 * it is clear so hot entries don't dirty their line); the hand clears set
 * bits and evicts the first entry found clear, or expired. New entries go in
 * just behind the hand, so they are the last it reaches.
 *
 * Memory: bytes per shard = table slots + every entry's allocation (header,
 * key rounded up to 8 so the value is 8-aligned, value). Counters and
 * occupancy are atomics written only by the lock holder (plain load+store,
 * no RMW) so cache_get_stats() reads them without locking.
 *
 * Refresh and serve-stale cost no memory: three bits in the header's spare
 * byte. F_REFRESH marks an entry whose refresh was claimed (at most one
 * prefetch per entry). An entry expired within the grace set by
 * cache_set_stale() stays in place; cache_stale() may hold it (F_HELD):
 * its expiry becomes the end of the hold, so cache_lookup() serves it by
 * the ordinary `now < expiry` test, and stored_at, whose age no longer
 * matters (a stale answer's TTLs are fixed by the caller), keeps the end of
 * its grace. F_NO_STALE entries (remembered failures) die at expiry.
 */

#define TABLE_MIN 16u      /* smallest bucket count */
#define TABLE_HINT_DIV 1024 /* initial buckets ~ budget / 1024: <1% of it */
#define CACHE_LINE 64

struct entry {
	struct entry *next;          /* bucket chain; free list once unlinked */
	struct entry *cprev, *cnext; /* CLOCK ring */
	uint64_t hash;
	uint32_t expiry;             /* first second at which it's dead */
	uint32_t stored_at;
	uint32_t vlen;
	uint16_t klen;
	_Atomic uint32_t mark;       /* cache_mark(); set under a read lock, hence atomic */
	_Atomic uint8_t ref;         /* CLOCK referenced bit, set by readers */
	_Atomic uint8_t flags;       /* F_*; F_REFRESH may be set by readers */
	/* key, padding to 8, value follow the header */
};

#define F_REFRESH 0x01  /* its refresh was claimed (cache_hit.refresh reported) */
#define F_HELD 0x02     /* held stale by cache_stale(): expiry = end of the hold, stored_at = end of grace */
#define F_NO_STALE 0x04 /* CACHE_NO_STALE */

#ifdef CACHE_RWLOCK
#define SHARD_LOCK_T pthread_rwlock_t
#define shard_lock_init(l) pthread_rwlock_init((l), NULL)
#define shard_lock_destroy(l) pthread_rwlock_destroy(l)
#define shard_rdlock(l) pthread_rwlock_rdlock(l)
#define shard_wrlock(l) pthread_rwlock_wrlock(l)
#define shard_unlock(l) pthread_rwlock_unlock(l)
#else
#define SHARD_LOCK_T pthread_mutex_t
#define shard_lock_init(l) pthread_mutex_init((l), NULL)
#define shard_lock_destroy(l) pthread_mutex_destroy(l)
#define shard_rdlock(l) pthread_mutex_lock(l)
#define shard_wrlock(l) pthread_mutex_lock(l)
#define shard_unlock(l) pthread_mutex_unlock(l)
#endif

/*
 * A hit touches only the first line (lock, tab, mask, hits with glibc's
 * 40-byte mutex): under load from many threads that line is what moves
 * between cores, so the rest is kept off it.
 */
struct shard {
	_Alignas(CACHE_LINE) SHARD_LOCK_T lock;
	struct entry **tab;
	size_t mask;         /* buckets - 1 */
	_Atomic uint64_t hits;
	_Atomic uint64_t misses, expired;
	struct entry *hand;  /* next CLOCK candidate, NULL when empty */
	size_t budget;       /* bytes this shard may use */
	_Atomic size_t bytes, entries;
	_Atomic uint64_t inserts, replacements, evictions;
	struct cache *cache; /* for the per-tag counts */
};

struct cache {
	struct shard *shards;
	unsigned nshards;
	uint32_t shard_mask;
	size_t max_bytes;
	struct hash_key key;  /* per-cache random hash key */
	_Atomic unsigned reap_next; /* the shard cache_reap visits next */
	_Atomic uint32_t stale_grace; /* cache_set_stale() */
	/* cache_set_tags(): entries and bytes per tag, across shards (changed by inserts and removals only) */
	unsigned (*tag_of)(const uint8_t *key, size_t klen);
	unsigned ntags;
	_Atomic size_t *tag_entries, *tag_bytes;
};

/* Count e in (d = +1) or out (d = -1) of its tag. */
static void tag_count(struct cache *c, const uint8_t *key, size_t klen, size_t charge, int d)
{
	if (c->tag_of == NULL)
		return;
	unsigned t = c->tag_of(key, klen);
	if (t >= c->ntags)
		return;
	if (d > 0) {
		atomic_fetch_add_explicit(&c->tag_entries[t], 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&c->tag_bytes[t], charge, memory_order_relaxed);
	} else {
		atomic_fetch_sub_explicit(&c->tag_entries[t], 1, memory_order_relaxed);
		atomic_fetch_sub_explicit(&c->tag_bytes[t], charge, memory_order_relaxed);
	}
}

/* Counter/occupancy update by the only writer (the lock holder). */
static inline void add_u64(_Atomic uint64_t *v, uint64_t d)
{
	atomic_store_explicit(v, atomic_load_explicit(v, memory_order_relaxed) + d,
			      memory_order_relaxed);
}

static inline void add_sz(_Atomic size_t *v, size_t d)
{
	atomic_store_explicit(v, atomic_load_explicit(v, memory_order_relaxed) + d,
			      memory_order_relaxed);
}

static inline void sub_sz(_Atomic size_t *v, size_t d)
{
	atomic_store_explicit(v, atomic_load_explicit(v, memory_order_relaxed) - d,
			      memory_order_relaxed);
}

static inline size_t get_sz(_Atomic size_t *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

/* Counter bumped on the read path: readers may share a rwlock. */
static inline void add_reader_u64(_Atomic uint64_t *v)
{
#ifdef CACHE_RWLOCK
	atomic_fetch_add_explicit(v, 1, memory_order_relaxed);
#else
	add_u64(v, 1);
#endif
}


/* --- entries --- */

static inline uint8_t *entry_key(struct entry *e)
{
	return (uint8_t *)(e + 1);
}

static inline size_t key_span(size_t klen)
{
	return (klen + 7) & ~(size_t)7;
}

static inline uint8_t *entry_val(struct entry *e)
{
	return entry_key(e) + key_span(e->klen);
}

/* Bytes an entry is charged: exactly its allocation. */
static inline size_t entry_charge(size_t klen, size_t vlen)
{
	return sizeof(struct entry) + key_span(klen) + vlen;
}

static inline size_t table_bytes(size_t buckets)
{
	return buckets * sizeof(struct entry *);
}

static inline bool entry_live(const struct entry *e, uint32_t now)
{
	return now < e->expiry;
}

static inline uint8_t entry_flags(const struct entry *e)
{
	return atomic_load_explicit(&e->flags, memory_order_relaxed);
}

/* The first second at which e may no longer be served even stale. */
static uint32_t entry_stale_end(const struct cache *c, const struct entry *e)
{
	uint32_t grace = atomic_load_explicit(&c->stale_grace, memory_order_relaxed);
	uint8_t f = entry_flags(e);
	if (grace == 0 || (f & F_NO_STALE))
		return e->expiry;
	if (f & F_HELD)
		return e->stored_at;
	return e->expiry > UINT32_MAX - grace ? UINT32_MAX : e->expiry + grace;
}

/* Is e still worth keeping at now: fresh, held, or within its grace? */
static inline bool entry_kept(const struct cache *c, const struct entry *e, uint32_t now)
{
	return entry_live(e, now) || now < entry_stale_end(c, e);
}

/* A fresh entry in the last tenth of a lifetime of at least CACHE_REFRESH_MIN_TTL? */
static inline bool entry_refresh_due(const struct entry *e, uint32_t now)
{
	uint32_t life = e->expiry - e->stored_at;
	return life >= CACHE_REFRESH_MIN_TTL && e->expiry - now <= life / 10;
}

/* Claim e's refresh: true once per entry (called with e live and not held). */
static inline bool entry_claim_refresh(struct entry *e)
{
#ifdef CACHE_RWLOCK
	return !(atomic_fetch_or_explicit(&e->flags, F_REFRESH, memory_order_relaxed) & F_REFRESH);
#else
	uint8_t f = entry_flags(e);
	if (f & F_REFRESH)
		return false;
	atomic_store_explicit(&e->flags, (uint8_t)(f | F_REFRESH), memory_order_relaxed);
	return true;
#endif
}

static inline struct shard *shard_of(const struct cache *c, uint64_t h)
{
	return &c->shards[(uint32_t)(h >> 32) & c->shard_mask];
}

/* Link to the matching entry in its bucket chain, or NULL. */
static struct entry **shard_find(struct shard *s, uint64_t h, const uint8_t *key, size_t klen)
{
	struct entry **link = &s->tab[h & s->mask];
	for (struct entry *e = *link; e != NULL; link = &e->next, e = e->next) {
		if (e->hash == h && e->klen == klen &&
		    (klen == 0 || memcmp(entry_key(e), key, klen) == 0))
			return link;
	}
	return NULL;
}

/* Put e just behind the hand: the last entry the hand will reach. */
static void ring_insert(struct shard *s, struct entry *e)
{
	if (s->hand == NULL) {
		e->cprev = e->cnext = e;
		s->hand = e;
		return;
	}
	e->cnext = s->hand;
	e->cprev = s->hand->cprev;
	s->hand->cprev->cnext = e;
	s->hand->cprev = e;
}

static void ring_remove(struct shard *s, struct entry *e)
{
	if (e->cnext == e) {
		s->hand = NULL;
		return;
	}
	e->cprev->cnext = e->cnext;
	e->cnext->cprev = e->cprev;
	if (s->hand == e)
		s->hand = e->cnext;
}

/* Unlink e (whose chain link is *link) from table and ring, uncharge it, push on *garbage. */
static void shard_unlink(struct shard *s, struct entry **link, struct entry *e,
			 struct entry **garbage)
{
	*link = e->next;
	ring_remove(s, e);
	sub_sz(&s->bytes, entry_charge(e->klen, e->vlen));
	sub_sz(&s->entries, 1);
	tag_count(s->cache, entry_key(e), e->klen, entry_charge(e->klen, e->vlen), -1);
	e->next = *garbage;
	*garbage = e;
}

/* As shard_unlink() when only e is known: its chain is short, walk it. */
static void shard_remove(struct shard *s, struct entry *e, struct entry **garbage)
{
	struct entry **link = &s->tab[e->hash & s->mask];
	while (*link != e)
		link = &(*link)->next;
	shard_unlink(s, link, e, garbage);
}

static void free_list(struct entry *e)
{
	while (e != NULL) {
		struct entry *next = e->next;
		free(e);
		e = next;
	}
}

/*
 * Bucket count to grow to when chains would average more than one entry and
 * the doubled table plus the new entry can fit the budget at all (evicting
 * entries pays for it); 0 = don't grow.
 */
static size_t shard_grow_wanted(struct shard *s, size_t need)
{
	size_t buckets = s->mask + 1;
	if (get_sz(&s->entries) < buckets || buckets > SIZE_MAX / 2 / sizeof(struct entry *))
		return 0;
	if (table_bytes(buckets * 2) + need > s->budget)
		return 0;
	return buckets * 2;
}

/* Rehash into nb buckets; on allocation failure keep the old table (chains get longer). */
static void shard_grow(struct shard *s, size_t nb)
{
	size_t buckets = s->mask + 1;
	struct entry **nt = calloc(nb, sizeof(*nt));
	if (nt == NULL)
		return;
	for (size_t i = 0; i < buckets; i++) {
		struct entry *e = s->tab[i];
		while (e != NULL) {
			struct entry *next = e->next;
			struct entry **slot = &nt[e->hash & (nb - 1)];
			e->next = *slot;
			*slot = e;
			e = next;
		}
	}
	free(s->tab);
	s->tab = nt;
	s->mask = nb - 1;
	add_sz(&s->bytes, table_bytes(nb) - table_bytes(buckets));
}

/* Run the CLOCK hand until need more bytes fit; victims go on *garbage. */
static void shard_evict(struct shard *s, size_t need, uint32_t now, struct entry **garbage)
{
	while (get_sz(&s->bytes) + need > s->budget && s->hand != NULL) {
		struct entry *e = s->hand;
		if (entry_live(e, now) && atomic_load_explicit(&e->ref, memory_order_relaxed)) {
			atomic_store_explicit(&e->ref, 0, memory_order_relaxed);
			s->hand = e->cnext;
			continue;
		}
		shard_remove(s, e, garbage);
		add_u64(&s->evictions, 1);
	}
}

/*
 * Everything was evicted yet need still doesn't fit: the table grew for many
 * small entries. It's empty now, so cut it back to TABLE_MIN in place.
 */
static int shard_shrink_empty(struct shard *s)
{
	size_t buckets = s->mask + 1;
	if (buckets <= TABLE_MIN)
		return -ENOMEM; /* cannot happen: cache_insert() checked need */
	struct entry **nt = realloc(s->tab, table_bytes(TABLE_MIN));
	if (nt == NULL)
		return -ENOMEM;
	s->tab = nt;
	s->mask = TABLE_MIN - 1;
	sub_sz(&s->bytes, table_bytes(buckets) - table_bytes(TABLE_MIN));
	return 0;
}

/* --- public API --- */


struct cache *cache_new(size_t max_bytes, unsigned nshards)
{
	if (nshards == 0)
		nshards = CACHE_DEFAULT_SHARDS;
	if (nshards > CACHE_MAX_SHARDS || (nshards & (nshards - 1)) != 0 ||
	    max_bytes / nshards < CACHE_MIN_SHARD_BYTES) {
		errno = EINVAL;
		return NULL;
	}
	struct cache *c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	c->shards = aligned_alloc(CACHE_LINE, nshards * sizeof(struct shard));
	if (c->shards == NULL) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	memset(c->shards, 0, nshards * sizeof(struct shard));
	c->nshards = nshards;
	c->shard_mask = nshards - 1;
	c->max_bytes = max_bytes;
	/* names are attacker-chosen: a random key per cache (util/hash.h) */
	hash_key_random(&c->key);

	size_t budget = max_bytes / nshards;
	/* Size tables for ~1 KiB entries up front so a growing cache rarely rehashes. */
	size_t buckets = TABLE_MIN;
	while (buckets * 2 * TABLE_HINT_DIV <= budget)
		buckets *= 2;
	for (unsigned i = 0; i < nshards; i++) {
		struct shard *s = &c->shards[i];
		s->budget = budget;
		s->tab = calloc(buckets, sizeof(*s->tab));
		if (s->tab == NULL || shard_lock_init(&s->lock) != 0) {
			free(s->tab);
			c->nshards = i;
			cache_free(c);
			errno = ENOMEM;
			return NULL;
		}
		s->mask = buckets - 1;
		s->cache = c;
		atomic_init(&s->bytes, table_bytes(buckets));
	}
	return c;
}

int cache_set_tags(struct cache *c, unsigned ntags, unsigned (*tag_of)(const uint8_t *key, size_t klen))
{
	c->tag_entries = calloc(ntags, sizeof(*c->tag_entries));
	c->tag_bytes = calloc(ntags, sizeof(*c->tag_bytes));
	if (c->tag_entries == NULL || c->tag_bytes == NULL) {
		free((void *)c->tag_entries);
		free((void *)c->tag_bytes);
		c->tag_entries = c->tag_bytes = NULL;
		return -ENOMEM;
	}
	c->ntags = ntags;
	c->tag_of = tag_of;
	return 0;
}

void cache_tag_stats(struct cache *c, unsigned tag, size_t *entries, size_t *bytes)
{
	bool in = c->tag_of != NULL && tag < c->ntags;
	*entries = in ? atomic_load_explicit(&c->tag_entries[tag], memory_order_relaxed) : 0;
	*bytes = in ? atomic_load_explicit(&c->tag_bytes[tag], memory_order_relaxed) : 0;
}

void cache_free(struct cache *c)
{
	if (c == NULL)
		return;
	for (unsigned i = 0; i < c->nshards; i++) {
		struct shard *s = &c->shards[i];
		for (size_t b = 0; b <= s->mask; b++)
			free_list(s->tab[b]);
		free(s->tab);
		shard_lock_destroy(&s->lock);
	}
	free(c->shards);
	free((void *)c->tag_entries);
	free((void *)c->tag_bytes);
	free(c);
}

int cache_lookup(struct cache *c, const uint8_t *key, size_t klen, uint32_t now,
		 int (*fn)(const uint8_t *val, size_t vlen, const struct cache_hit *hit, void *arg),
		 void *arg)
{
	uint64_t h = hash_bytes(&c->key, key, klen);
	struct shard *s = shard_of(c, h);

	shard_rdlock(&s->lock);
	struct entry **link = shard_find(s, h, key, klen);
	struct entry *e = link != NULL ? *link : NULL;
	if (e == NULL || !entry_live(e, now)) {
		struct entry *garbage = NULL;
		add_reader_u64(&s->misses);
		if (e != NULL) {
			add_reader_u64(&s->expired);
#ifndef CACHE_RWLOCK
			/* We hold the shard exclusively: reap it now (unless serve-stale keeps it), free it after unlock. */
			if (!entry_kept(c, e, now))
				shard_unlink(s, link, e, &garbage);
#endif
		}
		shard_unlock(&s->lock);
		free_list(garbage);
		return -ENOENT;
	}
	if (!atomic_load_explicit(&e->ref, memory_order_relaxed))
		atomic_store_explicit(&e->ref, 1, memory_order_relaxed);
	add_reader_u64(&s->hits);
	if (fn == NULL) {
		shard_unlock(&s->lock);
		return 0;
	}
	struct cache_hit hit = { .stored_at = e->stored_at, .expiry = e->expiry, .stale = false, .refresh = false,
	                         .mark = atomic_load_explicit(&e->mark, memory_order_relaxed) };
	if (entry_flags(e) & F_HELD)
		hit.stale = true;
	else if (entry_refresh_due(e, now))
		hit.refresh = entry_claim_refresh(e);
	int ret = fn(entry_val(e), e->vlen, &hit, arg);
	shard_unlock(&s->lock);
	return ret;
}

void cache_mark(struct cache *c, const uint8_t *key, size_t klen, uint32_t now, uint32_t expiry, uint32_t mark)
{
	uint64_t h = hash_bytes(&c->key, key, klen);
	struct shard *s = shard_of(c, h);
	shard_rdlock(&s->lock);
	struct entry **link = shard_find(s, h, key, klen);
	struct entry *e = link != NULL ? *link : NULL;
	if (e != NULL && entry_live(e, now) && e->expiry == expiry)
		atomic_store_explicit(&e->mark, mark, memory_order_relaxed);
	shard_unlock(&s->lock);
}

int cache_insert(struct cache *c, const uint8_t *key, size_t klen, const uint8_t *val,
		 size_t vlen, uint32_t now, uint32_t ttl)
{
	return cache_insert_opt(c, key, klen, val, vlen, now, ttl, 0);
}

/* cache_link: an entry cache_rekey moves (no new insert to count) */
#define LINK_MOVED 0x100u
static int cache_link(struct cache *c, struct entry *e, uint32_t now, unsigned opts);

/* An entry for key with the value head then body (body may be empty), stored at stored_at, alive until expiry. */
static int insert_entry(struct cache *c, const uint8_t *key, size_t klen, const uint8_t *head, size_t hlen,
			const uint8_t *body, size_t blen, uint32_t now, uint32_t stored_at, uint32_t expiry, unsigned opts)
{
	if (hlen > UINT32_MAX || blen > UINT32_MAX - hlen)
		return -E2BIG;
	size_t vlen = hlen + blen;
	if (klen > CACHE_MAX_KEY)
		return -E2BIG;
	size_t need = entry_charge(klen, vlen);
	/* A shard's budget is at least CACHE_MIN_SHARD_BYTES > table_bytes(TABLE_MIN). */
	if (need > c->shards[0].budget - table_bytes(TABLE_MIN))
		return -E2BIG;

	/* Build the entry before taking the lock: copying is the slow part. */
	struct entry *e = malloc(need);
	if (e == NULL)
		return -ENOMEM;
	e->next = NULL;
	e->hash = hash_bytes(&c->key, key, klen);
	e->stored_at = stored_at;
	e->expiry = expiry;
	e->klen = (uint16_t)klen;
	e->vlen = (uint32_t)vlen;
	atomic_init(&e->mark, 0);
	atomic_init(&e->ref, 0);
	atomic_init(&e->flags, (opts & CACHE_NO_STALE) ? F_NO_STALE : 0);
	if (klen > 0)
		memcpy(entry_key(e), key, klen);
	if (hlen > 0)
		memcpy(entry_val(e), head, hlen);
	if (blen > 0)
		memcpy(entry_val(e) + hlen, body, blen);

	return cache_link(c, e, now, opts);
}

/* The value is head and then body (body may be empty). */
static int insert_parts(struct cache *c, const uint8_t *key, size_t klen, const uint8_t *head, size_t hlen,
			const uint8_t *body, size_t blen, uint32_t now, uint32_t ttl, unsigned opts)
{
	if (ttl == 0)
		return 0;
	return insert_entry(c, key, klen, head, hlen, body, blen, now, now,
			    ttl > UINT32_MAX - now ? UINT32_MAX : now + ttl, opts);
}

int cache_insert_opt(struct cache *c, const uint8_t *key, size_t klen, const uint8_t *val,
		     size_t vlen, uint32_t now, uint32_t ttl, unsigned opts)
{
	return insert_parts(c, key, klen, val, vlen, NULL, 0, now, ttl, opts);
}

int cache_insert_parts(struct cache *c, const uint8_t *key, size_t klen, const uint8_t *head, size_t hlen,
		       const uint8_t *body, size_t blen, uint32_t now, uint32_t ttl)
{
	return insert_parts(c, key, klen, head, hlen, body, blen, now, ttl, 0);
}

/*
 * Put the built entry e (hash, key and value set) into its shard, replacing
 * an entry of the same key (unless CACHE_NO_REPLACE keeps a live one:
 * -EEXIST) and evicting for room. On any error e is freed.
 */
static int cache_link(struct cache *c, struct entry *e, uint32_t now, unsigned opts)
{
	const uint8_t *key = entry_key(e);
	size_t klen = e->klen, need = entry_charge(e->klen, e->vlen);
	struct shard *s = shard_of(c, e->hash);
	struct entry *garbage = NULL;
	int ret = 0;
	shard_wrlock(&s->lock);
	struct entry **link = shard_find(s, e->hash, key, klen);
	if (link != NULL && (opts & CACHE_NO_REPLACE) && entry_kept(c, *link, now)) {
		shard_unlock(&s->lock);
		free(e);
		return -EEXIST;
	}
	if ((opts & CACHE_NO_EVICT) &&
	    get_sz(&s->bytes) - (link != NULL ? entry_charge((*link)->klen, (*link)->vlen) : 0) + need > s->budget) {
		shard_unlock(&s->lock);
		free(e);
		return -ENOSPC;
	}
	if (link != NULL) {
		shard_unlink(s, link, *link, &garbage);
		add_u64(&s->replacements, 1);
	}
	/* Evict before charging anything so bytes never exceeds the budget, even briefly. */
	size_t nb = (opts & CACHE_NO_EVICT) ? 0 : shard_grow_wanted(s, need);
	if (nb != 0) {
		shard_evict(s, need + table_bytes(nb) - table_bytes(s->mask + 1), now, &garbage);
		shard_grow(s, nb);
	}
	shard_evict(s, need, now, &garbage);
	if (get_sz(&s->bytes) + need > s->budget)
		ret = shard_shrink_empty(s);
	if (ret == 0) {
		struct entry **slot = &s->tab[e->hash & s->mask];
		e->next = *slot;
		*slot = e;
		ring_insert(s, e);
		add_sz(&s->bytes, need);
		add_sz(&s->entries, 1);
		if (!(opts & LINK_MOVED))
			add_u64(&s->inserts, 1);
		tag_count(c, key, klen, need, +1);
	}
	shard_unlock(&s->lock);
	free_list(garbage);
	if (ret != 0)
		free(e);
	return ret;
}

/* Remove the entries of s for which drop(e, arg) is true. @return how many. */
static size_t shard_sweep(struct shard *s, bool (*drop)(const struct entry *e, void *arg), void *arg)
{
	struct entry *garbage = NULL;
	size_t removed = 0;
	shard_wrlock(&s->lock);
	size_t n = get_sz(&s->entries);
	struct entry *e = s->hand;
	for (size_t k = 0; k < n; k++) {
		struct entry *next = e->cnext;
		if (drop(e, arg)) {
			shard_remove(s, e, &garbage);
			removed++;
		}
		e = next;
	}
	shard_unlock(&s->lock);
	free_list(garbage);
	return removed;
}

struct flush_match {
	bool (*match)(const uint8_t *key, size_t klen, void *arg);
	void *arg;
};

static bool drop_matching(const struct entry *e, void *arg)
{
	const struct flush_match *m = arg;
	return m->match == NULL || m->match(entry_key((struct entry *)e), e->klen, m->arg);
}

size_t cache_flush(struct cache *c, bool (*match)(const uint8_t *key, size_t klen, void *arg),
		   void *arg)
{
	struct flush_match m = { match, arg };
	size_t removed = 0;
	for (unsigned i = 0; i < c->nshards; i++)
		removed += shard_sweep(&c->shards[i], drop_matching, &m);
	return removed;
}

struct rekey_arg {
	int (*rekey)(const uint8_t *key, size_t klen, uint8_t *out, void *arg);
	void *arg;
	uint8_t buf[CACHE_MAX_KEY];
	struct entry *moving; /* unlinked entries whose key changes, chained by next */
	size_t dropped;
};

/* cache_rekey_take for one shard, under its lock: entries that go, or move, leave the shard. */
static size_t shard_rekey(struct shard *s, struct rekey_arg *r)
{
	struct entry *garbage = NULL;
	size_t moved = 0;
	shard_wrlock(&s->lock);
	size_t n = get_sz(&s->entries);
	struct entry *e = s->hand;
	for (size_t k = 0; k < n; k++) {
		struct entry *next = e->cnext;
		int what = r->rekey(entry_key(e), e->klen, r->buf, r->arg);
		if (what != 0) {
			struct entry *one = NULL;
			shard_remove(s, e, &one); /* uncharged, untagged, e->next = NULL */
			if (what > 0) {
				memcpy(entry_key(e), r->buf, e->klen);
				atomic_store_explicit(&e->mark, 0, memory_order_relaxed);
				e->next = r->moving;
				r->moving = e;
				moved++;
			} else {
				e->next = garbage;
				garbage = e;
				r->dropped++;
			}
		}
		e = next;
	}
	shard_unlock(&s->lock);
	free_list(garbage);
	return moved;
}

struct cache_moves *cache_rekey_take(struct cache *c,
                                     int (*rekey)(const uint8_t *key, size_t klen, uint8_t *out, void *arg),
                                     void *arg, size_t *dropped)
{
	struct rekey_arg *r = calloc(1, sizeof(*r));
	if (r != NULL) {
		r->rekey = rekey;
		r->arg = arg;
		for (unsigned i = 0; i < c->nshards; i++)
			shard_rekey(&c->shards[i], r);
	}
	if (dropped)
		*dropped = r != NULL ? r->dropped : 0;
	return (struct cache_moves *)r;
}

size_t cache_rekey_put(struct cache *c, struct cache_moves *m, uint32_t now)
{
	struct rekey_arg *r = (struct rekey_arg *)m;
	if (r == NULL)
		return 0;
	/* One shard lock at a time: each entry goes where its new key hashes. An entry
	 * stored under the new key meanwhile (a fresh answer) wins over the moved one. */
	size_t moved = 0;
	while (r->moving != NULL) {
		struct entry *e = r->moving;
		r->moving = e->next;
		e->next = NULL;
		e->hash = hash_bytes(&c->key, entry_key(e), e->klen);
		if (cache_link(c, e, now, CACHE_NO_REPLACE | LINK_MOVED) == 0)
			moved++;
	}
	free(r);
	return moved;
}

void cache_moves_free(struct cache_moves *m)
{
	struct rekey_arg *r = (struct rekey_arg *)m;
	if (r == NULL)
		return;
	free_list(r->moving);
	free(r);
}

size_t cache_rekey(struct cache *c, int (*rekey)(const uint8_t *key, size_t klen, uint8_t *out, void *arg),
                   void *arg, uint32_t now, size_t *dropped)
{
	return cache_rekey_put(c, cache_rekey_take(c, rekey, arg, dropped), now);
}

struct reap_arg {
	const struct cache *c;
	uint32_t now;
};

static bool drop_expired(const struct entry *e, void *arg)
{
	const struct reap_arg *r = arg;
	return !entry_kept(r->c, e, r->now);
}

size_t cache_reap(struct cache *c, uint32_t now, unsigned nshards)
{
	struct reap_arg r = { c, now };
	size_t removed = 0;
	for (unsigned k = 0; k < nshards && k < c->nshards; k++) {
		unsigned i = atomic_fetch_add_explicit(&c->reap_next, 1, memory_order_relaxed) % c->nshards;
		removed += shard_sweep(&c->shards[i], drop_expired, &r);
	}
	return removed;
}

void cache_set_stale(struct cache *c, uint32_t grace)
{
	atomic_store_explicit(&c->stale_grace, grace, memory_order_relaxed);
}

int cache_stale(struct cache *c, const uint8_t *key, size_t klen, uint32_t now, uint32_t hold,
		int (*fn)(const uint8_t *val, size_t vlen, const struct cache_hit *hit, void *arg),
		void *arg)
{
	uint64_t h = hash_bytes(&c->key, key, klen);
	struct shard *s = shard_of(c, h);
	shard_wrlock(&s->lock);
	struct entry **link = shard_find(s, h, key, klen);
	struct entry *e = link != NULL ? *link : NULL;
	uint32_t end = e != NULL ? entry_stale_end(c, e) : 0;
	bool held = e != NULL && (entry_flags(e) & F_HELD);
	if (e == NULL || (entry_live(e, now) && !held) || now >= end) {
		shard_unlock(&s->lock);
		return -ENOENT;
	}
	struct cache_hit hit = { .stored_at = e->stored_at, .expiry = e->expiry, .stale = true, .refresh = false,
	                         .mark = atomic_load_explicit(&e->mark, memory_order_relaxed) };
	int ret = fn != NULL ? fn(entry_val(e), e->vlen, &hit, arg) : 0;
	if (ret >= 0 && hold > 0) {
		if (!held) {
			e->stored_at = end;
			atomic_store_explicit(&e->flags, (uint8_t)(entry_flags(e) | F_HELD), memory_order_relaxed);
		}
		e->expiry = hold < end - now ? now + hold : end;
	}
	shard_unlock(&s->lock);
	return ret;
}

void cache_get_stats(struct cache *c, struct cache_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->max_bytes = c->max_bytes;
	for (unsigned i = 0; i < c->nshards; i++) {
		struct shard *s = &c->shards[i];
		out->hits += atomic_load_explicit(&s->hits, memory_order_relaxed);
		out->misses += atomic_load_explicit(&s->misses, memory_order_relaxed);
		out->inserts += atomic_load_explicit(&s->inserts, memory_order_relaxed);
		out->replacements += atomic_load_explicit(&s->replacements, memory_order_relaxed);
		out->evictions += atomic_load_explicit(&s->evictions, memory_order_relaxed);
		out->expired += atomic_load_explicit(&s->expired, memory_order_relaxed);
		out->entries += get_sz(&s->entries);
		out->bytes += get_sz(&s->bytes);
	}
}

/* --- walking and restoring (cache snapshots) --- */

/* A walked entry's copy in a batch: this header, then key and value. */
struct walk_item {
	uint32_t klen, vlen, stored_at, expiry;
	uint32_t opts;
};

/*
 * Copy the live entries of buckets [*bucket, ...) of s into buf (grown as
 * needed) until CACHE_WALK_BATCH bytes are taken, whole buckets at a time.
 * @return bytes used in *buf; *bucket moves past the buckets copied, to
 *         SIZE_MAX at the end of the table; -1 as (size_t)-1 on ENOMEM.
 */
static size_t walk_batch(struct shard *s, uint32_t now, size_t *bucket, uint8_t **buf,
                         size_t *cap)
{
	size_t used = 0;
	shard_rdlock(&s->lock);
	size_t b = *bucket;
	for (; b <= s->mask && used < CACHE_WALK_BATCH; b++) {
		for (struct entry *e = s->tab[b]; e != NULL; e = e->next) {
			uint8_t f = entry_flags(e);
			if (!entry_live(e, now) || (f & F_HELD))
				continue;
			size_t need = sizeof(struct walk_item) + e->klen + e->vlen;
			if (used + need > *cap) {
				size_t ncap = *cap ? *cap : CACHE_WALK_BATCH;
				while (ncap < used + need)
					ncap *= 2;
				uint8_t *nb = realloc(*buf, ncap);
				if (nb == NULL) {
					shard_unlock(&s->lock);
					return (size_t)-1;
				}
				*buf = nb;
				*cap = ncap;
			}
			struct walk_item it = { .klen = e->klen, .vlen = e->vlen, .stored_at = e->stored_at,
			                        .expiry = e->expiry, .opts = (f & F_NO_STALE) ? CACHE_NO_STALE : 0 };
			memcpy(*buf + used, &it, sizeof(it));
			memcpy(*buf + used + sizeof(it), entry_key(e), e->klen);
			memcpy(*buf + used + sizeof(it) + e->klen, entry_val(e), e->vlen);
			used += need;
		}
	}
	*bucket = b > s->mask ? SIZE_MAX : b;
	shard_unlock(&s->lock);
	return used;
}

int cache_walk(struct cache *c, uint32_t now, int (*fn)(const struct cache_walk_entry *e, void *arg), void *arg)
{
	uint8_t *buf = NULL;
	size_t cap = 0;
	int rc = 0;
	for (unsigned i = 0; i < c->nshards && rc == 0; i++) {
		size_t bucket = 0;
		while (bucket != SIZE_MAX && rc == 0) {
			size_t used = walk_batch(&c->shards[i], now, &bucket, &buf, &cap);
			if (used == (size_t)-1) {
				rc = -ENOMEM;
				break;
			}
			for (size_t o = 0; o < used && rc == 0;) {
				struct walk_item it;
				memcpy(&it, buf + o, sizeof(it));
				struct cache_walk_entry e = { .key = buf + o + sizeof(it), .klen = it.klen,
				                              .val = buf + o + sizeof(it) + it.klen, .vlen = it.vlen,
				                              .stored_at = it.stored_at, .expiry = it.expiry, .opts = it.opts };
				rc = fn(&e, arg);
				o += sizeof(it) + it.klen + it.vlen;
			}
		}
	}
	free(buf);
	return rc;
}

int cache_insert_aged(struct cache *c, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen,
                      uint32_t now, uint32_t stored_at, uint32_t expiry, unsigned opts)
{
	if (!(stored_at <= now && now < expiry))
		return -EINVAL;
	return insert_entry(c, key, klen, val, vlen, NULL, 0, now, stored_at, expiry, opts);
}
