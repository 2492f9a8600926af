/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. In-flight resolutions: coalescing identical misses, completing jobs into the cache. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "resolver/cache/cache.h"
#include "resolver/cache/job.h"

struct inflight;

/*
 * Serve-stale (RFC 8767), with cache.serve_stale: an answer is kept
 * INFLIGHT_STALE_MAX seconds past its expiry (§5 suggests 1 to 3 days), and
 * served with TTLs of INFLIGHT_STALE_TTL (§4: 30 s) when its resolution
 * fails, then for INFLIGHT_STALE_TTL seconds without asking upstream.
 */
#define INFLIGHT_STALE_MAX 86400u
#define INFLIGHT_STALE_TTL 30u
/* §5's client response timer (1.8 s recommended): see inflight_stale_early */
#define INFLIGHT_STALE_CLIENT_NS 1800000000ull

/**
 * A table whose completed jobs are inserted into cache. A partition's
 * answer is inserted only while the current snapshot of slot still gives
 * that partition id the same meaning as the job's snapshot did (a reload
 * may renumber partitions while jobs are in flight).
 * @return NULL on ENOMEM.
 */
struct inflight *inflight_new(struct cache *cache, struct snapshot_slot *slot);

/** Free the table. Every job must have ended. */
void inflight_free(struct inflight *t);

/** A zeroed waiter (but for its query, q) from the calling thread's free list, or NULL. */
struct waiter *inflight_waiter_new(struct inflight *t);

/** Return an answered waiter to the calling thread's free list, with its reference to the result. */
void inflight_waiter_free(struct inflight *t, struct waiter *w);

/** Jobs ended by other threads waiting for their owners to take them back (bounded; for tests). */
size_t inflight_pooled(struct inflight *t);

/**
 * Give back to malloc what the calling thread's free lists held unused
 * since its last call: each owner calls it about once a second, so a
 * flood's leftovers are gone two intervals after it.
 */
void inflight_trim(struct inflight *t);

/** Jobs and waiters on the calling thread's free lists (for tests). */
size_t inflight_cached(struct inflight *t);

/**
 * Join the in-flight resolution for key, or start one. Thread-safe.
 * On 1 the caller owns the new *job (key, hash, table, start time and the
 * waiter set; snap a new reference) and must fill the rest and hand it to a
 * pool, or end it with inflight_fail. On 0 the waiter joined a running job,
 * or (out of memory) was queued at once to its reply_q with no result.
 * w NULL starts a job nobody waits for (a prefetch): 0 when one is running
 * already (or out of memory), 1 with a new job as above.
 */
int inflight_join(struct inflight *t, const uint8_t *key, size_t klen, struct snapshot *snap, struct waiter *w,
                  struct job **job);

/**
 * A pool ends a job with an upstream answer (resp is not kept): it is
 * reduced to a cache blob, checked for a CNAME chain into an EDNS domain
 * (normal jobs, against the job's snapshot), inserted into the cache, and
 * every waiter is queued to its reply_q. The job is freed.
 *
 * @param from_libunbound  resp is libunbound's encoding of its answer, whose
 *                         layout the blob keeps (wire_answer_adopt_chain);
 *                         else upstream's bytes, re-encoded
 *                         (wire_answer_prepare_chain)
 */
void inflight_done(struct job *job, const uint8_t *resp, size_t len, bool from_libunbound);

/**
 * A pool ends a job without an answer: every waiter gets rcode, with ede
 * (NULL: none) for clients that sent EDNS. With remember, a resolution
 * failure (not an overload or a shutdown), the outcome is cached for the
 * job's failure_ttl (RFC 9520) under the job's key, unless the cache holds
 * an answer for it (fresh, or stale). Serve-stale: when the cache keeps an
 * expired answer under the job's key (cache_set_stale), every waiter gets
 * that instead (a result with stale set), whatever the failure, and the
 * cache serves it stale for INFLIGHT_STALE_TTL seconds (cache_stale). The
 * job is freed.
 */
void inflight_fail(struct job *job, int rcode, const struct wire_ede *ede, bool remember);

/**
 * Serve-stale's client response timer (RFC 8767 §5): the pools call this
 * for a job still running INFLIGHT_STALE_CLIENT_NS after it started. When
 * the cache keeps an expired answer under its key, the clients waiting now
 * get it (as inflight_fail would give it), the cache serves it stale for
 * INFLIGHT_STALE_TTL seconds, and the job runs on: its answer or failure
 * goes to the cache and to clients that join later. Once per job; the
 * pool's thread only.
 */
void inflight_stale_early(struct job *job);

/**
 * While on, answers and failures of partition jobs are not stored (the
 * common cache's are): a reload that renumbers partitions turns this on
 * while it moves the cache's entries and switches the plan, so no answer
 * lands under an id whose meaning is changing.
 */
void inflight_plan_switch(struct inflight *t, bool on);
