/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. Shared state of the daemon's threads: snapshots, jobs, waiters, stats. */
#pragma once

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "conf/conf.h"
#include "conf/store.h"
#include "mapping/ecs.h"
#include "resolver/domains.h"
#include "resolver/mq.h"
#include "resolver/wire.h"

struct cache;
struct server;
struct worker;

/* Cache key: partition(2) qtype(2) qclass(2) flags(1) then the lower-cased qname. */
#define KEY_HDR 7
#define KEY_MAX (KEY_HDR + WIRE_MAX_NAME)
#define KEY_FLAG_DO 0x01
#define KEY_FLAG_CD 0x02

/* A config shared by the snapshots made from it. */
struct confref {
	atomic_int refs;
	struct conf *conf;
};

/* What queries read: replaced as a whole on reload or store change. */
struct snapshot {
	atomic_int refs;
	uint64_t generation;
	struct confref *cref;
	struct conf *conf;        /* cref->conf */
	struct domains *domains;
	uint64_t store_version;
};

void snapshot_release(struct snapshot *s);

/* One resolution's outcome, shared by every waiter of the job. */
struct result {
	atomic_int refs;
	int rcode;       /* >= 0: reply with this error rcode; -1: reply from blob */
	uint8_t *blob;
	size_t blob_len;
	/* normal answers whose CNAME chain enters an EDNS domain: partitioned
	 * clients continue from target through the EDNS pool */
	size_t target_len;
	uint8_t target[WIRE_MAX_NAME];
	uint8_t *prefix;
	size_t prefix_len;
};

void result_release(struct result *r);

/* A client waiting for a resolution (queued back to its worker when done). */
struct waiter {
	struct mq_node node;      /* first: the worker's reply queue links through it */
	struct waiter *next;      /* in its job's list */
	struct worker *worker;
	struct result *result;    /* set when the job finished */
	bool tcp;
	int udp_fd;
	uint64_t conn_id;         /* TCP: the connection's id in its worker */
	struct sockaddr_storage peer;
	socklen_t peer_len;
	unsigned partition;
	bool edns_route;          /* went through the EDNS pool */
	bool echo;                /* echo the client's ECS (trusted frontend) */
	struct ecs echo_ecs;
	uint64_t start_ns;
	struct wire_query q;
};

/* One upstream resolution, coalescing identical concurrent misses. */
struct job {
	struct mq_node node;      /* first: a pool's queue links through it */
	struct job *hnext;        /* in-flight hash chain */
	struct server *srv;
	uint64_t hash;
	uint8_t key[KEY_MAX];
	size_t klen;
	uint8_t qname[WIRE_MAX_NAME]; /* lower case */
	size_t qname_len;
	uint16_t qtype, qclass;
	bool do_bit, cd_bit;
	unsigned partition;
	bool edns;                /* EDNS pool (else normal pool) */
	struct ecs ecs;           /* EDNS: the partition's mapped identity */
	struct store_domain rule; /* EDNS: policy and targets */
	uint8_t start[WIRE_MAX_NAME]; /* EDNS chain job: resolve from here... */
	size_t start_len;         /* 0 = from qname */
	uint8_t *prefix;          /* ...and splice after this message (owned) */
	size_t prefix_len;
	size_t nforward;          /* EDNS forward: resolved targets */
	struct conf_addr forward[STORE_MAX_FORWARD];
	unsigned timeout_ms;
	struct wire_limits lim;
	uint64_t start_ns;
	struct waiter *waiters;   /* protected by the in-flight shard lock */
};

/* Counters written by one thread, read by the control thread (relaxed). */
#define COUNTER_LIST(X) \
	X(queries) X(udp) X(tcp) X(hits) X(misses) X(coalesced) X(edns_queries) X(normal_queries) \
	X(noerror) X(nxdomain) X(servfail) X(refused) X(formerr) X(notimp) X(badvers) X(dropped) \
	X(truncated) X(overload) X(upstream_queries) X(upstream_timeouts) X(upstream_mismatch) \
	X(upstream_errors) X(ub_lookups)

struct counters {
#define COUNTER_FIELD(n) _Atomic uint64_t n;
	COUNTER_LIST(COUNTER_FIELD)
#undef COUNTER_FIELD
};

struct partition_counters {
	_Atomic uint64_t queries, hits, edns;
};

static inline void counter_inc(_Atomic uint64_t *c)
{
	/* single writer: a plain load+store avoids a locked instruction */
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1, memory_order_relaxed);
}

static inline uint64_t counter_get(_Atomic uint64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

/* monotonic time */
uint64_t now_ns(void);
uint32_t now_sec(void);

/* ---- server services used by workers and pools (server.c) ---- */

/** Take a reference to the current snapshot (release with snapshot_release). */
struct snapshot *server_snapshot(struct server *srv);
uint64_t server_snapshot_generation(struct server *srv);
struct cache *server_cache(struct server *srv);
bool server_stopping(struct server *srv);
int server_stop_fd(struct server *srv);
unsigned server_worker_count(struct server *srv);

/**
 * Join the in-flight resolution for key or start one. On 1 the caller owns
 * the new *job (filled with key/hash and the waiter) and must fill it and
 * dispatch it; on 0 the waiter was added to the running job.
 */
int server_job_join(struct server *srv, const uint8_t *key, size_t klen, struct waiter *w, struct job **job);

/** Hand a job to its pool; on overload the job fails with SERVFAIL at once. */
void server_job_dispatch(struct server *srv, struct job *job);

/** A pool finished a job with a response (resp may be freed after return). */
void server_job_done(struct job *job, const uint8_t *resp, size_t len);

/** A pool failed a job: every waiter gets rcode (SERVFAIL). */
void server_job_fail(struct job *job, int rcode);

/** Build a cache key. @return its length. */
size_t key_build(uint8_t *key, unsigned partition, uint16_t qtype, uint16_t qclass, uint8_t flags,
                 const uint8_t *qname_lc, size_t qname_len);

/* ---- worker.c ---- */
void worker_post(struct worker *w, struct waiter *wt);

/** Counters of the server's own (non-worker) events, e.g. overload. */
struct counters *server_counters(struct server *srv);
