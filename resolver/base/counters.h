/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. Event counters: each set written by one thread, read by the control thread. */
#pragma once

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Every counter, in the order stats prints them. */
#define COUNTER_LIST(X) \
	X(queries) X(udp) X(tcp) X(hits) X(misses) X(coalesced) X(prefetches) X(stale) X(edns_queries) X(normal_queries) \
	X(noerror) X(nxdomain) X(servfail) X(refused) X(formerr) X(notimp) X(badvers) X(dropped) X(unanswered) \
	X(truncated) X(overload) X(upstream_queries) X(upstream_timeouts) X(upstream_mismatch) \
	X(upstream_errors) X(ub_lookups) X(tcp_refused_client) X(tcp_refused_full) X(tcp_evicted) X(tcp_slow_closed) X(tcp_idle_closed) X(tcp_paused) \
	X(ratelimited) X(zone_limited) X(zone_limited_early) X(dnstap_dropped) X(dnssec_secure) X(dnssec_insecure) X(dnssec_bogus) \
	X(local_answers) X(notifies) X(stub_retries) X(tier_queries) X(tier_failovers) X(started_here) \
	X(dot) X(doh) X(proxied) X(proxy_refused) X(tls_handshakes) X(tls_resumed) X(tls_handshake_failed) X(tls_handshake_timeout)

/* Index of each counter in a COUNTERS_N array (C_queries, ...). */
enum {
#define COUNTER_INDEX(n) C_##n,
	COUNTER_LIST(COUNTER_INDEX)
#undef COUNTER_INDEX
};

struct counters {
#define COUNTER_FIELD(n) _Atomic uint64_t n;
	COUNTER_LIST(COUNTER_FIELD)
#undef COUNTER_FIELD
};

#define COUNTERS_N (sizeof(struct counters) / sizeof(_Atomic uint64_t))

/* Reply codes counted per partition, in this order (query.c count_rcode). */
enum { PRC_NOERROR, PRC_NXDOMAIN, PRC_SERVFAIL, PRC_REFUSED, PRC_FORMERR, PRC_NOTIMP, PRC_BADVERS, PRC_N };

/* Per partition, per worker. queries = udp + tcp; misses counts what start_miss counts (misses) for that partition. */
struct partition_counters {
	_Atomic uint64_t queries, hits, edns, udp, tcp, misses;
	_Atomic uint64_t rcode[PRC_N]; /* replies to the partition's queries (classified), by PRC_* */
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

/*
 * A latency histogram with fixed buckets, written by one thread (relaxed
 * single-writer stores like counter_inc), summed over threads at read time.
 * Buckets are kept per bucket, not cumulative, so an observation is one
 * store; the exposition cumulates them. Upper bounds in nanoseconds; the
 * last bucket holds everything over the last bound.
 */
#define HIST_BOUNDS_NS \
	X(100000) X(250000) X(500000) X(1000000) X(2500000) X(5000000) X(10000000) X(25000000) X(50000000) \
	X(100000000) X(250000000) X(500000000) X(1000000000) X(2500000000) X(5000000000)
#define HIST_NB 15 /* bounds in HIST_BOUNDS_NS */

struct histogram {
	_Atomic uint64_t bucket[HIST_NB + 1];
	_Atomic uint64_t sum_ns;
};

static const uint64_t hist_bounds_ns[HIST_NB] = {
#define X(b) b##ull,
	HIST_BOUNDS_NS
#undef X
};

/** Record one duration (ns) in a histogram that only the calling thread writes. */
static inline void histogram_observe(struct histogram *h, uint64_t ns)
{
	size_t i = 0;
	while (i < HIST_NB && ns > hist_bounds_ns[i])
		i++;
	counter_inc(&h->bucket[i]);
	atomic_store_explicit(&h->sum_ns, atomic_load_explicit(&h->sum_ns, memory_order_relaxed) + ns,
	                      memory_order_relaxed);
}

/** Add h's buckets to bucket[HIST_NB + 1] and its sum to *sum_ns. */
static inline void histogram_add_to(const struct histogram *h, uint64_t *bucket, uint64_t *sum_ns)
{
	for (size_t i = 0; i <= HIST_NB; i++)
		bucket[i] += atomic_load_explicit(&h->bucket[i], memory_order_relaxed);
	*sum_ns += atomic_load_explicit(&h->sum_ns, memory_order_relaxed);
}
