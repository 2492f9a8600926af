/* SPDX-License-Identifier: BSD-3-Clause */
/* Sharded, memory-capped key/value cache with TTLs and CLOCK eviction (the answer cache). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The cache maps opaque key bytes to opaque value bytes; it knows nothing of
 * DNS. Each entry lives for a TTL counted in caller-supplied monotonic
 * seconds (uint32_t "now"); nothing here reads a clock.
 *
 * Threading: every function but cache_new/cache_free may be called from any
 * number of threads at once on the same cache. cache_free must not race with
 * anything else on that cache.
 *
 * Memory: the cap covers each entry's allocation (header + key + value,
 * rounded as stored) and the shards' hash tables; it does not cover the few
 * KiB of fixed per-shard state nor malloc's own bookkeeping. The cap is split
 * evenly across shards, so one shard can't borrow another's budget.
 */

struct cache;

/** Default number of shards when cache_new() is given 0. */
#define CACHE_DEFAULT_SHARDS 64u
/** Largest accepted number of shards. */
#define CACHE_MAX_SHARDS 65536u
/** Smallest per-shard budget (max_bytes / nshards) cache_new() accepts. */
#define CACHE_MIN_SHARD_BYTES 512u
/** Longest accepted key, in bytes; longer keys give -E2BIG. */
#define CACHE_MAX_KEY 65535u

/**
 * Create an empty cache.
 * @param max_bytes  cap on memory used by entries incl. per-entry overhead
 *                   and hash tables, in bytes; must be at least
 *                   nshards * CACHE_MIN_SHARD_BYTES.
 * @param nshards    power of two <= CACHE_MAX_SHARDS; 0 = CACHE_DEFAULT_SHARDS.
 * @return the cache (free with cache_free()), or NULL with errno set to
 *         EINVAL (bad arguments) or ENOMEM.
 */
struct cache *cache_new(size_t max_bytes, unsigned nshards);

/**
 * Count entries and bytes per tag as well: tag_of(key) names the tag of an
 * entry (>= ntags: not counted). Call once, before the cache is used.
 * @return 0 or -ENOMEM.
 */
int cache_set_tags(struct cache *c, unsigned ntags, unsigned (*tag_of)(const uint8_t *key, size_t klen));

/** Entries and bytes (as cache_get_stats counts them) of one tag; 0 without cache_set_tags(). Thread-safe. */
void cache_tag_stats(struct cache *c, unsigned tag, size_t *entries, size_t *bytes);

/** Free the cache and every entry. NULL is a no-op. Not thread-safe. */
void cache_free(struct cache *c);

/** Entries whose lifetime is at least this many seconds are offered for refresh (see cache_hit.refresh). */
#define CACHE_REFRESH_MIN_TTL 10u

/* What a lookup tells its fn about the entry it found. */
struct cache_hit {
	uint32_t stored_at;  /* the `now` passed to the cache_insert() that stored it */
	uint32_t expiry;     /* first second at which it is dead: its lifetime was expiry - stored_at */
	/*
	 * The entry outlived its lifetime and is served stale: cache_stale()
	 * found it, or held it for cache_lookup(). stored_at and expiry then
	 * say nothing of its age (its TTLs are the caller's to set).
	 */
	bool stale;
	/*
	 * Refresh it now (prefetch): a fresh entry with a lifetime of at least
	 * CACHE_REFRESH_MIN_TTL, in its last tenth (expiry - now <= lifetime / 10,
	 * as Unbound's prefetch). Reported once per entry: the lookup that sees
	 * it true claims the refresh, later lookups of the same entry see false.
	 */
	bool refresh;
	/*
	 * The caller's mark on the entry: 0 when stored (and when rekeyed), then
	 * what cache_mark() last set. Lets a caller remember something it
	 * worked out about this entry's value once, e.g. that a policy it
	 * checks every answer against found nothing in it.
	 */
	uint32_t mark;
};

/**
 * Find key. If present and now < its expiry (or held stale, see
 * cache_stale()), call fn(val, vlen, hit, arg) while holding the shard's
 * lock and return fn's result (by convention >= 0 for a hit).
 * @param fn   may be NULL (then a hit returns 0 and no refresh is claimed).
 *             It must be quick and must not call into this cache (the shard
 *             lock is not recursive). val is valid only during the call
 *             (copy what you need), aligned to 8 bytes, and must not be
 *             written; hit says how old the entry is.
 * @return fn's result (0 if fn is NULL), or -ENOENT on a miss or when the
 *         entry has expired (counted in both misses and expired; the entry
 *         is removed now or by a later insert/eviction/reap, unless
 *         cache_set_stale() keeps it). Thread-safe.
 */
int cache_lookup(struct cache *c, const uint8_t *key, size_t klen, uint32_t now,
		 int (*fn)(const uint8_t *val, size_t vlen, const struct cache_hit *hit, void *arg),
		 void *arg);

/**
 * Set the mark (cache_hit.mark) of key's live entry, if it still has one
 * and its expiry is still expiry (the entry the caller looked at, not a
 * newer answer stored since). Thread-safe.
 */
void cache_mark(struct cache *c, const uint8_t *key, size_t klen, uint32_t now, uint32_t expiry, uint32_t mark);

/**
 * Insert or replace key with a copy of val (the cache keeps no pointer to
 * key or val), alive for ttl seconds from now: lookups at now + ttl and later
 * miss. Evicts entries of the key's shard in CLOCK (second-chance) order,
 * expired ones first, until the new entry fits the shard's share of max_bytes.
 * @param ttl  0 = do not insert (returns 0; an existing entry is kept).
 * @return 0; -ENOMEM (allocation failed; an existing entry for key may
 *         be gone);
 *         -E2BIG (the entry can never fit a shard's budget, or
 *         klen > CACHE_MAX_KEY, or vlen >= 4 GiB). Thread-safe.
 */
int cache_insert(struct cache *c, const uint8_t *key, size_t klen, const uint8_t *val,
		 size_t vlen, uint32_t now, uint32_t ttl);

/** cache_insert_opt(): never served stale; dead at its expiry whatever cache_set_stale() says. */
#define CACHE_NO_STALE 0x01u
/** cache_insert_opt(): keep an entry of key that is fresh or may still be served stale (-EEXIST). */
#define CACHE_NO_REPLACE 0x02u
/** cache_insert_opt(), cache_insert_aged(): evict nothing and grow no table for it; -ENOSPC when it does not fit. */
#define CACHE_NO_EVICT 0x04u

/**
 * cache_insert() with opts, a set of CACHE_NO_STALE and CACHE_NO_REPLACE.
 * @return as cache_insert(), or -EEXIST (CACHE_NO_REPLACE and key has such an entry).
 */
int cache_insert_opt(struct cache *c, const uint8_t *key, size_t klen, const uint8_t *val,
		     size_t vlen, uint32_t now, uint32_t ttl, unsigned opts);

/**
 * cache_insert() of the value head followed by body, copied straight into
 * the entry (a miss's answer is a small header and the blob: no copy of
 * the two joined first). vlen is hlen + blen.
 */
int cache_insert_parts(struct cache *c, const uint8_t *key, size_t klen, const uint8_t *head, size_t hlen,
		       const uint8_t *body, size_t blen, uint32_t now, uint32_t ttl);

/**
 * Keep expired entries for grace seconds past their expiry (0, the start
 * value: drop them at expiry), for cache_stale(). cache_lookup() still
 * misses on them; eviction takes them before any fresh entry; cache_reap()
 * frees them once the grace is over. Takes effect at once for every entry
 * (an entry held by cache_stale() is served until its hold ends).
 * Thread-safe.
 */
void cache_set_stale(struct cache *c, uint32_t grace);

/**
 * Serve-stale: find key's expired entry while its grace lasts (expired less
 * than grace seconds ago, cache_set_stale()), or one already held, and call
 * fn under the shard lock with hit->stale set. When fn returns >= 0 and
 * hold > 0, the entry is held: cache_lookup() serves it (hit->stale) until
 * now + hold, never past the end of its grace; then it is an expired entry
 * again. A later cache_insert() of key replaces it as usual.
 * @param fn  as for cache_lookup(); may be NULL.
 * @return fn's result (0 if fn is NULL), or -ENOENT: no entry, a fresh
 *         one, one inserted with CACHE_NO_STALE, or its grace is over.
 *         Thread-safe.
 */
int cache_stale(struct cache *c, const uint8_t *key, size_t klen, uint32_t now, uint32_t hold,
		int (*fn)(const uint8_t *val, size_t vlen, const struct cache_hit *hit, void *arg),
		void *arg);

/**
 * Remove every entry for which match(key, klen, arg) is true.
 * @param match  NULL = all. Called with a shard lock held, under the same
 *               rules as cache_lookup()'s fn; key is valid only during the call.
 * @return number of entries removed (flushed entries are not counted as
 *         evictions). Thread-safe; entries inserted concurrently may survive.
 */
size_t cache_flush(struct cache *c, bool (*match)(const uint8_t *key, size_t klen, void *arg),
		   void *arg);

/**
 * Give entries new keys: rekey(key, klen, out, arg) returns 0 (keep the
 * entry as it is), 1 (it wrote a new key of the same length to out: the
 * entry moves there, TTL, age and flags kept) or -1 (drop the entry). An
 * entry already stored under a new key (a fresh answer) wins over the moved
 * one. For reloads that renumber partitions: their answers follow their
 * name instead of being thrown away. Lookups meanwhile may miss a moving
 * entry. @param dropped out, optional: entries dropped.
 * @return entries moved.
 */
size_t cache_rekey(struct cache *c, int (*rekey)(const uint8_t *key, size_t klen, uint8_t *out, void *arg),
                   void *arg, uint32_t now, size_t *dropped);

/*
 * cache_rekey in two steps, so a caller can switch meanings in between:
 * take removes the entries that go (counted in *dropped) or move (kept
 * aside, already under their new keys); put stores the moved ones and
 * frees m; cache_moves_free drops them instead. NULL m (out of memory in
 * take: nothing was removed) is accepted by both.
 */
struct cache_moves;
struct cache_moves *cache_rekey_take(struct cache *c,
                                     int (*rekey)(const uint8_t *key, size_t klen, uint8_t *out, void *arg),
                                     void *arg, size_t *dropped);
size_t cache_rekey_put(struct cache *c, struct cache_moves *m, uint32_t now);
void cache_moves_free(struct cache_moves *m);

/**
 * Free the expired entries of the next nshards shards (round robin), so
 * memory held by entries nobody asks for again (a flood of random names)
 * goes back before eviction would reach them. Entries within their
 * serve-stale grace (cache_set_stale()) are kept.
 * @return entries removed (counted neither as evictions nor as expired
 *         lookups). Thread-safe.
 */
size_t cache_reap(struct cache *c, uint32_t now, unsigned nshards);

/** Counters since cache_new(), and current occupancy. */
struct cache_stats {
	uint64_t hits;         /* lookups that called fn */
	uint64_t misses;       /* lookups that returned -ENOENT (incl. expired) */
	uint64_t inserts;      /* successful cache_insert() with ttl > 0 */
	uint64_t replacements; /* inserts that replaced an existing entry */
	uint64_t evictions;    /* entries removed to make room */
	uint64_t expired;      /* lookups that found the key expired (a stale entry on each) */
	size_t entries;        /* entries stored now (expired ones until reaped) */
	size_t bytes;          /* memory charged now: entries + hash tables */
	size_t max_bytes;      /* the cap given to cache_new() */
};

/**
 * Fill out with the current counters. Lock-free; under concurrency the
 * fields are individually accurate but not a consistent snapshot.
 */
void cache_get_stats(struct cache *c, struct cache_stats *out);

/* One entry as cache_walk() hands it out: a copy, valid only during the call (key and val not aligned). */
struct cache_walk_entry {
	const uint8_t *key;
	size_t klen;
	const uint8_t *val;
	size_t vlen;
	uint32_t stored_at, expiry; /* as struct cache_hit */
	unsigned opts;              /* CACHE_NO_STALE when it was inserted with it */
};

/**
 * Call fn for a copy of every live entry (now < expiry, not held stale), for
 * a snapshot of the cache. Each shard's lock is taken for one batch of
 * buckets at a time (at most CACHE_WALK_BATCH bytes copied, plus one chain),
 * and fn runs with no lock held, so a walk of a large cache delays lookups
 * of a shard by one batch's copy at most. Entries inserted or removed
 * during the walk may or may not be seen; a shard whose table grows
 * meanwhile may hand out a few entries twice.
 * @param fn  returns 0 to go on, anything else to stop the walk (returned).
 * @return 0, fn's non-zero result, or -ENOMEM. Thread-safe.
 */
int cache_walk(struct cache *c, uint32_t now, int (*fn)(const struct cache_walk_entry *e, void *arg), void *arg);

/** Bytes cache_walk() copies under one lock hold, at most (plus one bucket's chain). */
#define CACHE_WALK_BATCH (64u * 1024u)

/**
 * Insert key with an entry stored at stored_at and dead at expiry (both
 * monotonic seconds as `now`; stored_at <= now < expiry), as a restore from
 * a snapshot: a lookup sees the entry's age as if it had been inserted then.
 * opts as cache_insert_opt(). @return as cache_insert_opt(), -ENOSPC
 * (CACHE_NO_EVICT), or -EINVAL (the times are not stored_at <= now < expiry).
 */
int cache_insert_aged(struct cache *c, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen,
                      uint32_t now, uint32_t stored_at, uint32_t expiry, unsigned opts);
