/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. One query, top to bottom: parse, ACL, classify, route, cache, coalesce. No sockets. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "resolver/cache/cache.h"
#include "resolver/view/chainhint.h"
#include "resolver/base/counters.h"
#include "resolver/base/dnstap.h"
#include "resolver/cache/inflight.h"
#include "resolver/base/ratelimit.h"
#include "resolver/cache/job.h"
#include "resolver/view/snapshot.h"

struct tls_slot;

/* Largest UDP reply we can send: server.max_udp_size's top (conf/schema.c), what a listener's buffers hold. */
#define QUERY_MAX_UDP 4096

/* What one listener thread processes queries with. */
struct query_ctx {
	struct snapshot *snap;          /* current for this thread; the owner refreshes it */
	struct cache *cache;
	struct chainhint *hints;        /* names known to CNAME into a flagged domain; NULL: none kept */
	struct inflight *inflight;
	struct mq *replies;             /* where this thread's waiters are queued when their job ends */
	/* hands a new job to its pool; the pool (or this callback) ends it */
	void (*dispatch)(void *arg, struct job *job);
	void *dispatch_arg;
	struct counters *ctr;
	struct partition_counters *pctr; /* PARTITION_MAX + 1 */
	struct histogram *resp_time;    /* query to reply of each waiter answered (query_answer); NULL: not kept */
	int reply_part;                 /* partition of the query being answered, for its reply code; -1: unclassified */
	struct ratelimit *rl;           /* this thread's client rates (server.client_qps) */
	unsigned slip;                  /* over-limit UDP queries seen, for client_limit_action slip */
	struct dnstap_queue *tap;       /* server.dnstap: this thread's queue; NULL = off */
	struct topk *unmatched;         /* networks of clients in no partition (partdnsctl unmatched); NULL = not kept */
	struct waiter_rewrite *rewrite; /* a policy rewrite being followed: the next waiter made takes it */
	struct rpz_xfr *xfr;            /* where a primary's NOTIFY goes (rpz_xfr_notify); NULL: refused */
	struct tls_slot *tls;           /* the DoT/DoH certificate, whose name DDR answers give; NULL: none */
	/* how the query being processed ended, for the one exit's check (query.c settle) */
	bool dropped;                   /* a drop was counted on purpose */
	bool handed_on;                 /* a waiter was joined to a resolution */
};

/* Where a query came from and how to answer it later. */
struct query_client {
	bool tcp;                       /* a stream (TCP or DoT): no truncation */
	bool tls;                       /* DoT or DoH */
	bool https;                     /* DoH */
	uint32_t stream;                /* DoH: the request's id in its connection's session */
	int udp_fd;
	uint64_t conn_id;               /* TCP: the connection's id in its listener */
	const struct sockaddr_storage *peer; /* the client: everything that keys on the client reads this */
	socklen_t peer_len;
	const struct sockaddr_storage *via; /* UDP through a balancer (PROXY v2): where the reply goes; else NULL */
	socklen_t via_len;
	const struct sockaddr_storage *local; /* UDP on a wildcard socket: the address asked (reply from it); else NULL */
	const struct sockaddr_storage *listener; /* dnstap: the address the query came to (set when tap is) */
};

/**
 * Process one query from cl: answer it from the cache, refuse or drop it,
 * or make it wait for a resolution (a waiter joined or a job dispatched).
 * @param out, cap  where the reply is written (cap: 65535 for TCP)
 * Every query ends one of these three ways: a query the path left with
 * none of them (a bug) is answered SERVFAIL and counted (unanswered).
 * @return the reply length in out, 0 when dropped (counted in dropped),
 *         -1 when the client waits (its reply comes through x->replies,
 *         see query_answer).
 */
int query_process(struct query_ctx *x, const struct query_client *cl, const uint8_t *pkt, size_t len,
                  uint8_t *out, size_t cap);

/**
 * Write the reply of a waiter whose job ended (taken from x->replies). A
 * normal answer whose chain enters an EDNS domain continues, for a
 * partitioned client, through the EDNS pool: a new waiter takes over.
 * A waiter following a policy's rewrite gets the rewrite spliced before
 * its reply (wt->rewrite is taken). The caller frees wt (inflight_waiter_free) in every case.
 * As query_process, every waiter gets a reply, a counted drop or a new waiter.
 * @return the reply length in out, 0 (dropped: nothing to send), or -1 (a new waiter took over).
 */
int query_answer(struct query_ctx *x, struct waiter *wt, uint8_t *out, size_t cap);
