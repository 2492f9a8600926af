/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/pool/. The EDNS pool's zone cuts per thread: cached, failed, being found. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "resolver/pool/edns_pool.h"

/** Allocate t's cache. @return 0 or -1 (out of memory). */
int edns_zcache_init(struct ethread *t);
void edns_zcache_free(struct ethread *t);

/** Every 30 s: forget the ancestors of entries that expired (the "cached below" filter). */
void edns_zcache_tick(struct ethread *t, uint64_t now);

/**
 * Set r->cut.bound: the highest zone whose servers may be asked for r's hop
 * name without knowing its cut. For a name inside a --subtree rule, the
 * rule's name (the operator flagged that whole subtree); else the name's
 * parent. So a cut cached for a TLD is never used for a name below an
 * unknown delegation, and ECS never goes above the zones on the flagged
 * name's chain.
 */
void edns_zcache_set_bound(struct eres *r);

/**
 * The deepest cached cut at or above r's hop name, up to r->cut.bound.
 * @return 1 (r->zone's name and servers set), 0 (none: find it), -1 (finding
 *         it failed a moment ago: fail at once).
 */
int edns_zcache_get(struct eres *r);

/** Remember the cut r found (r->zone: name and servers) for the NS TTL. */
void edns_zcache_put(struct eres *r, uint32_t ttl);

/**
 * Finding the cut for r's bound failed (its servers never answer, or it has
 * none): remember that, 5 s and doubling while it keeps failing (up to the
 * health backoff's cap), so a flood of names under a dead zone costs one
 * lookup at a time, not one each.
 */
void edns_zcache_put_failed(struct eres *r);

/** Is zone (lower case) a live cut in t's cache at now, with nothing cached below it? */
bool edns_zcache_is_leaf(const struct ethread *t, const uint8_t *zone, size_t len, uint64_t now);

/** Is r finding a cut itself (E_SOA, E_NS, E_ADDR)? */
bool edns_zcache_discovering(const struct eres *r);

/** Another resolution of r's thread is finding a cut for the same bound: r should wait for it (E_WAIT). */
bool edns_zcache_discovery_running(const struct eres *r);

/** The cut discovery of r ended (found or failed): resolutions waiting on the same bound look again. */
void edns_zcache_wake_waiters(struct eres *r);
