/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. A resolution (job), its outcome (result) and the clients waiting for it (waiters). */
#pragma once

#include <netinet/in.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "store/store.h"
#include "mapping/ecs.h"
#include "resolver/base/mq.h"
#include "resolver/view/route.h"
#include "resolver/view/snapshot.h"
#include "wire/wire.h"

struct inflight;

/* One resolution's outcome, shared by every waiter of the job. */
struct result {
	atomic_int refs;
	int rcode;       /* >= 0: reply with this error rcode; -1: reply from blob */
	bool stale;      /* the blob is an expired answer served stale (RFC 8767) */
	bool has_ede;    /* the error's Extended DNS Error (RFC 8914) */
	struct wire_ede ede; /* text static */
	uint8_t *blob;   /* wire_answer_prepare's blob */
	size_t blob_len;
	/* a normal answer whose CNAME chain enters an EDNS domain: partitioned
	 * clients continue from target through the EDNS pool after prefix */
	size_t target_len;
	uint8_t target[WIRE_MAX_NAME];
	uint8_t *prefix;
	size_t prefix_len;
	bool incomplete; /* the chain's blob is the normal pool's stop (ROUTE_VALUE_INCOMPLETE) */
};

/* A policy's CNAME rewrite being followed (query.c): the reply to the target is spliced after msg. */
struct waiter_rewrite {
	uint8_t qname[WIRE_MAX_NAME]; /* the client's question, in its case */
	size_t qname_len;
	size_t msg_len;
	uint8_t msg[];                /* the policy's answer: the client's name CNAME the target */
};

/* A client waiting for a resolution; queued to reply_q when the job ends. */
struct waiter {
	struct mq_node node;      /* first: reply_q links through it */
	struct waiter *next;      /* in its job's list */
	struct mq *reply_q;       /* the listener thread that answers the client */
	struct result *result;    /* set when the job ended; NULL: out of memory (SERVFAIL) */
	bool tcp;                 /* a stream (TCP or DoT) */
	bool tls;                 /* DoT or DoH */
	bool https;               /* DoH */
	uint32_t stream;          /* DoH: the request's id in its connection's session */
	int udp_fd;
	uint64_t conn_id;         /* TCP: the connection's id in its listener */
	struct sockaddr_storage peer; /* the client */
	socklen_t peer_len;
	socklen_t via_len;        /* UDP through a balancer: where the reply goes (via); 0 = to peer */
	struct sockaddr_storage via;
	bool has_local;           /* UDP on a wildcard socket: reply from local */
	struct sockaddr_storage local;
	unsigned partition;
	bool edns_route;          /* went through the EDNS pool */
	bool echo;                /* echo the client's ECS (trusted frontend) */
	struct ecs echo_ecs;
	uint64_t start_ns;
	struct waiter_rewrite *rewrite; /* owned (freed with the waiter); q is then the target's query */
	struct wire_query q;
};

/* A forward target of an EDNS rule, as the EDNS pool sends to it. */
struct job_target {
	union {
		struct sockaddr sa;
		struct sockaddr_in sin;
		struct sockaddr_in6 sin6;
	} addr;
	socklen_t len;
};

/* The EDNS domain rule in effect for a job: what the EDNS pool needs of it. */
struct job_rule {
	char name[256];           /* the flagged name (text, normalized) */
	bool subtree;
	enum conf_policy policy;
	unsigned nforward;        /* policy forward: the domain's targets, else edns.forward */
	struct job_target forward[STORE_MAX_FORWARD];
};

struct job_cache;

/*
 * One upstream resolution, coalescing identical concurrent misses.
 * Jobs are recycled through per-thread free lists (inflight.c): everything
 * before key is zeroed when a job is handed out, the buffers from key on
 * are written before they are read.
 */
struct job {
	struct mq_node node;      /* first: a pool's queue links through it */
	struct job *hnext;        /* in-flight hash chain; a free list's link */
	struct inflight *table;
	struct job_cache *owner;  /* the free list the job returns to */
	uint64_t hash;
	size_t klen;
	struct snapshot *snap;    /* the snapshot the job was routed under (a reference) */
	const uint8_t *qname;     /* lower case: points into key */
	size_t qname_len;
	uint16_t qtype, qclass;
	bool cd_bit;
	unsigned partition;
	bool edns;                /* EDNS pool (else normal pool) */
	bool stub_ok;             /* normal: its client continues chains through the EDNS pool, so the
	                           * pool's stub context may stop at a flagged subtree */
	bool stubbed;             /* normal: the pool ran it in its stub context */
	struct ecs ecs;           /* EDNS: the partition's mapped identity */
	struct ecs client_ecs;    /* EDNS: the client whose miss started it, as a tier node would classify it
	                           * (edns.tier: sent instead of ecs); family 0 = none known */
	size_t start_len;         /* EDNS chain job: 0 = from qname, else from start... */
	uint8_t *prefix;          /* ...and splice after this message (owned) */
	size_t prefix_len;
	unsigned timeout_ms;
	uint32_t failure_ttl;     /* cache.failure_ttl of the job's snapshot */
	struct wire_limits lim;
	uint64_t start_ns;
	bool stale_tried;         /* inflight_stale_early ran (the pool's thread only) */
	struct waiter *waiters;   /* protected by the in-flight shard lock */
	/* buffers: not zeroed on reuse */
	uint8_t key[ROUTE_KEY_MAX];
	uint8_t start[WIRE_MAX_NAME];
	struct job_rule rule;     /* EDNS: valid when edns */
};

/** Drop a reference to r; the last frees it. NULL is a no-op. */
static inline void job_result_release(struct result *r)
{
	if (r && atomic_fetch_sub(&r->refs, 1) == 1) {
		free(r->blob);
		free(r->prefix);
		free(r);
	}
}

