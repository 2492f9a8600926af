/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. In-flight resolutions: coalescing identical misses, completing jobs into the cache. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "resolver/cache.h"
#include "resolver/job.h"

struct inflight;

/** A table whose completed jobs are inserted into cache. @return NULL on ENOMEM. */
struct inflight *inflight_new(struct cache *cache);

/** Free the table. Every job must have ended. */
void inflight_free(struct inflight *t);

/**
 * Join the in-flight resolution for key, or start one. Thread-safe.
 * On 1 the caller owns the new *job (key, hash, table, start time and the
 * waiter set; snap a new reference) and must fill the rest and hand it to a
 * pool, or end it with inflight_fail. On 0 the waiter joined a running job,
 * or (out of memory) was queued at once to its reply_q with no result.
 */
int inflight_join(struct inflight *t, const uint8_t *key, size_t klen, struct snapshot *snap, struct waiter *w,
                  struct job **job);

/**
 * A pool ends a job with an upstream answer (resp is not kept): it is
 * reduced to a cache blob (wire_answer_prepare), checked for a CNAME chain
 * into an EDNS domain (normal jobs, against the job's snapshot), inserted
 * into the cache, and every waiter is queued to its reply_q. The job is freed.
 */
void inflight_done(struct job *job, const uint8_t *resp, size_t len);

/** A pool ends a job without an answer: every waiter gets rcode. The job is freed. */
void inflight_fail(struct job *job, int rcode);
