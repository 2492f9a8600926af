/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. A listener thread: UDP and TCP sockets, its queries, the replies of its waiters. */
#pragma once

#include "resolver/cache/cache.h"
#include "resolver/view/chainhint.h"
#include "resolver/base/counters.h"
#include "resolver/base/dnstap.h"
#include "resolver/cache/inflight.h"
#include "resolver/pool/resolve_edns.h"
#include "resolver/pool/resolve_normal.h"
#include "resolver/base/tls.h"
#include "resolver/view/snapshot.h"

struct worker;

/* What every worker shares (owned by the daemon, outliving the workers). */
struct worker_env {
	struct snapshot_slot *snapshots;
	struct cache *cache;
	struct chainhint *hints;
	struct inflight *inflight;
	struct resolve_normal *normal;
	struct resolve_edns *edns;
	int stop_fd;               /* readable once the daemon stops */
	struct dnstap *dnstap;     /* server.dnstap, queue idx per worker; NULL = off */
	struct rpz_xfr *rpz_xfr;   /* policy zone transfers: NOTIFYs go there */
	struct tls_slot *tls;      /* server.listen_tls: the TLS context of new connections (ALPN dot) */
	struct tls_slot *tls_https; /* server.listen_https: the same certificate, ALPN h2 and http/1.1 */
};

/**
 * Create worker idx with its own SO_REUSEPORT sockets on every listen address of c.
 * @return the worker or NULL (the error is logged, naming the address).
 */
struct worker *worker_new(const struct worker_env *env, unsigned idx, const struct conf *c);
int worker_start(struct worker *w);
/** Wait for the thread to end (after the stop fd became readable). */
void worker_join(struct worker *w);
/** Free; waiters still queued are dropped. The pools must be freed first (they end their jobs into our queue). */
void worker_free(struct worker *w);
struct counters *worker_counters(struct worker *w);
/** PARTITION_MAX + 1 counters, by partition id. */
struct partition_counters *worker_partition_counters(struct worker *w);

/** The busiest unmatched client networks this thread saw (topk.h); read with topk_read. */
struct topk *worker_unmatched(struct worker *w);
/** Response times of the misses this worker answered (query_answer). */
struct histogram *worker_response_time(struct worker *w);
