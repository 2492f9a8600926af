/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. The normal pool: full recursion through libunbound, one common cache. */
#pragma once

#include "conf/conf.h"
#include "resolver/base/counters.h"
#include "resolver/cache/job.h"

struct resolve_normal;
struct uloop;

/**
 * c->resolver.threads threads, each running its own libunbound context
 * made from c in its own event loop; jobs are spread over them by a keyed
 * hash of the query name.
 * @param snaps    the daemon's snapshots: each thread keeps a stub context
 *                 for the flagged subtrees of the current one
 * @param stop_fd  readable once the daemon stops: the thread then ends
 * @param colocated no threads: listener i drives thread i's loop
 *                 (resolve_normal_loop) and runs its misses there
 * @return NULL on error (logged).
 */
struct resolve_normal *resolve_normal_new(const struct conf *c, struct snapshot_slot *snaps, int stop_fd, bool colocated);
/**
 * Start the builder thread, which makes every thread's stub contexts (as
 * the calling user) now and after each change of the flagged subtrees,
 * wait for its first ones (at most half a second, and only for a set of
 * up to 10,000 domains: a big one is served without them meanwhile), then
 * start the threads (none colocated).
 * @return 0 or -errno.
 */
int resolve_normal_start(struct resolve_normal *p);
/** Stops the builder (after the context it is making) and joins every thread. */
void resolve_normal_join(struct resolve_normal *p);
/** Joins, then fails every unfinished job (SERVFAIL to its waiters). NULL is a no-op. */
void resolve_normal_free(struct resolve_normal *p);
/** Colocated: the loop listener idx drives (uloop.h); NULL when not colocated. */
struct uloop *resolve_normal_loop(struct resolve_normal *p, unsigned idx);
/**
 * Colocated: start a job in thread idx's context now, from the thread that
 * drives its loop (the answer may be complete when this returns).
 * @return 0 or -EBUSY (over the in-flight cap: the caller ends the job).
 */
int resolve_normal_run_here(struct resolve_normal *p, unsigned idx, struct job *job);
/** Queue a job (any thread). @return 0 or -EBUSY (over the in-flight cap: the caller ends the job). */
int resolve_normal_submit(struct resolve_normal *p, struct job *job);
/** Add the pool's counters to sum[COUNTERS_N]. */
void resolve_normal_counters(struct resolve_normal *p, uint64_t *sum);
/** Add the pool's lookup latencies (libunbound, answered or failed before the deadline) to bucket[HIST_NB + 1], *sum_ns. */
void resolve_normal_latency(struct resolve_normal *p, uint64_t *bucket, uint64_t *sum_ns);
unsigned resolve_normal_inflight(struct resolve_normal *p);
