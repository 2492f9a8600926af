/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/pool/. The EDNS pool's fair shares, server health and zone query rates. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "resolver/pool/edns_pool.h"

/** b's caps for edns.max_inflight: a city may hold a quarter of the pool, a flagged rule half. */
void edns_health_budget_init(struct edns_budget *b, unsigned max_inflight);

/** The slot of job's flagged rule in the budget (and the shed hints). */
unsigned edns_health_rule_slot(const struct resolve_edns *p, const struct job *job);

/** Count job in the pool, its partition and its rule (slot). @return false (nothing counted): a share is full. */
bool edns_health_budget_take(struct resolve_edns *p, const struct job *job, unsigned slot);

/** A job leaves the pool: its place in the global, partition and rule budgets is free again. */
void edns_health_budget_release(struct resolve_edns *p, unsigned partition, unsigned rule_slot);

/** Allocate t's tables; zone_qps is its share of edns.zone_qps. @return 0 or -1 (out of memory). */
int edns_health_init(struct ethread *t, double zone_qps);
void edns_health_free(struct ethread *t);

/**
 * May r's query go to a? Yes unless a is down for r's zone. A down server
 * whose backoff has passed takes one probe: it stays down for the others
 * until the probe answers (up again) or times out (down for twice as long).
 */
bool edns_health_usable(struct eres *r, const struct sockaddr_storage *a, uint64_t now);

/** r's server did not answer in time (or refused the datagram). */
void edns_health_timeout(struct eres *r);

/** r's server answered: it is up for r's zone. */
void edns_health_answered(struct eres *r);

/**
 * May one more query go to zone now (edns.zone_qps, this thread's share)?
 * If not, *wait_ns says when the next one may.
 */
bool edns_health_rate_take(struct ethread *t, const uint8_t *zone, size_t len, uint64_t *wait_ns);

/**
 * r's zone is over its rate for wait_ns more: tell the listeners (struct
 * shed_hint), when what they can see of a new job decides as this thread
 * would. That holds for the question's own query (not a CNAME target's) to
 * a zone that is a live cut in the zone-cut cache with nothing cached below
 * it: for any new name under that zone whose bound (edns_zcache_set_bound)
 * is not below it, edns_zcache_get finds the zone, and it is asked first.
 */
void edns_health_shed_hint_set(struct eres *r, uint64_t wait_ns);

/**
 * Would job's thread t refuse it for its zone's rate (a shed_hint is up)?
 * The thread asks the hinted zone first when it iterates for job's own
 * name (not forwarded, no tier, not a chain continuing at a CNAME target),
 * the name is at or below the zone and its bound is not below it.
 * Any thread may ask.
 */
bool edns_health_shed_early(const struct resolve_edns *p, struct ethread *t, const struct job *job, unsigned slot);
