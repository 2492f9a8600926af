/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. Event counters: each set written by one thread, read by the control thread. */
#pragma once

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Every counter, in the order stats prints them. */
#define COUNTER_LIST(X) \
	X(queries) X(udp) X(tcp) X(hits) X(misses) X(coalesced) X(prefetches) X(stale) X(edns_queries) X(normal_queries) \
	X(noerror) X(nxdomain) X(servfail) X(refused) X(formerr) X(notimp) X(badvers) X(dropped) \
	X(truncated) X(overload) X(upstream_queries) X(upstream_timeouts) X(upstream_mismatch) \
	X(upstream_errors) X(ub_lookups) X(tcp_refused_client) X(tcp_refused_full) X(tcp_evicted) X(tcp_slow_closed) X(tcp_idle_closed) X(tcp_paused) \
	X(ratelimited) X(zone_limited)

struct counters {
#define COUNTER_FIELD(n) _Atomic uint64_t n;
	COUNTER_LIST(COUNTER_FIELD)
#undef COUNTER_FIELD
};

#define COUNTERS_N (sizeof(struct counters) / sizeof(_Atomic uint64_t))

/* Per partition, per worker. */
struct partition_counters {
	_Atomic uint64_t queries, hits, edns;
};

/** Bump a counter that only the calling thread writes. */
static inline void counter_inc(_Atomic uint64_t *c)
{
	/* single writer: a plain load+store avoids a locked instruction */
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1, memory_order_relaxed);
}

static inline uint64_t counter_get(_Atomic uint64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

/** Add every counter of c to sum[COUNTERS_N]. */
static inline void counters_add_to(const struct counters *c, uint64_t *sum)
{
	const _Atomic uint64_t *f = (const _Atomic uint64_t *)c;
	for (size_t i = 0; i < COUNTERS_N; i++)
		sum[i] += atomic_load_explicit(&f[i], memory_order_relaxed);
}
