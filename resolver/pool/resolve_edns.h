/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. The EDNS pool: resolutions of flagged names for a partition, with its mapped ECS. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "conf/conf.h"
#include "resolver/base/counters.h"
#include "resolver/base/dnstap.h"
#include "resolver/cache/job.h"

struct tier;

struct resolve_edns;

/**
 * edns.threads threads, each with its own sockets and libunbound context
 * (zone cuts and nameserver addresses only).
 * @param stop_fd  readable once the daemon stops: the threads then end
 * @return NULL on error (logged).
 */
struct resolve_edns *resolve_edns_new(const struct conf *c, int stop_fd);
int resolve_edns_start(struct resolve_edns *p);
void resolve_edns_join(struct resolve_edns *p);
/** Joins, then fails every unfinished job. NULL is a no-op. */
void resolve_edns_free(struct resolve_edns *p);
/** Queue a job on the thread of its name. @return 0 or -EBUSY (edns.max_inflight reached). */
int resolve_edns_submit(struct resolve_edns *p, struct job *job);
/** edns.tier's nodes and their state (for stats and metrics), or NULL when this node is no frontend. Lives with the pool. */
const struct tier *resolve_edns_tier(const struct resolve_edns *p);
/** Add the pool threads' counters to sum[COUNTERS_N]. */
void resolve_edns_counters(struct resolve_edns *p, uint64_t *sum);
/** Add the latencies of upstream queries answered (a matching response) to bucket[HIST_NB + 1], *sum_ns. */
void resolve_edns_latency(struct resolve_edns *p, uint64_t *bucket, uint64_t *sum_ns);
unsigned resolve_edns_inflight(struct resolve_edns *p);
/** Log the pool's own upstream queries and responses to d (server.dnstap), queues first.. first + edns.threads - 1. Before start. */
void resolve_edns_set_dnstap(struct resolve_edns *p, struct dnstap *d, unsigned first);

/** What each city's final answers said (steering.h); read with steering_read. */
struct steering *resolve_edns_steering(struct resolve_edns *p);
