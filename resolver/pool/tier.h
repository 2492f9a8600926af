/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. The shared EDNS tier seen from a frontend (edns.tier): who owns a partition, which nodes are up. */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "conf/conf.h"

#define TIER_MAX_NODES CONF_TIER_MAX /* edns.tier entries (the config refuses more) */
#define TIER_PROBE_MS 250   /* one probe per node this often */
#define TIER_DOWN_AFTER 2   /* consecutive unanswered probes that mark a node down */

/* One tier node: where it is, the text its ownership is hashed by, whether it is up. */
struct tier_node {
	struct sockaddr_storage addr;
	socklen_t len;
	char text[64];             /* canonical "ADDR@PORT" (inet_ntop form): what every frontend hashes */
	atomic_bool up;            /* read by every EDNS thread and the stats; written by the prober and timeouts */
	unsigned missed;           /* unanswered probes in a row (the prober's own) */
	_Atomic uint64_t downs;    /* times it went down */
};

struct tier {
	size_t n;
	struct tier_node node[TIER_MAX_NODES];
};

/**
 * The tier of edns.tier (n entries of a; duplicates are dropped, past
 * TIER_MAX_NODES left out, both logged). Every node starts up: the first
 * probes say otherwise within TIER_DOWN_AFTER rounds.
 * @return NULL when n is 0 or out of memory.
 */
struct tier *tier_new(const struct conf_addr *a, size_t n);

void tier_free(struct tier *t);

/**
 * The rendezvous score of node text for partition name: the project's hash
 * under a fixed key (the same in every process), over name, a NUL, text.
 */
uint64_t tier_score(const char *partition, const char *node_text);

/**
 * Every node of t by score for partition, highest first (ties by node
 * text, so the order is total): order[0] owns the partition while up.
 * @param order  t->n entries, node indexes
 */
void tier_order(const struct tier *t, const char *partition, unsigned *order);

/** The first node of order (t->n entries) that is up; -1 when none is. */
int tier_owner(const struct tier *t, const unsigned *order);

static inline bool tier_is_up(const struct tier *t, unsigned i)
{
	return atomic_load_explicit(&t->node[i].up, memory_order_relaxed);
}

/** A probe round's outcome for node i (the prober's thread only): answered marks it up, TIER_DOWN_AFTER misses down. */
void tier_probe_result(struct tier *t, unsigned i, bool answered);

/** A query forwarded to node i timed out (any EDNS thread): it is down until a probe is answered. */
void tier_query_timeout(struct tier *t, unsigned i);

