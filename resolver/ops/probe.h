/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. partdnsctl query: resolve as a client of one city would. */
#pragma once

#include <stdio.h>

#include "resolver/cache/cache.h"
#include "resolver/cache/inflight.h"
#include "resolver/pool/resolve_edns.h"
#include "resolver/pool/resolve_normal.h"
#include "resolver/view/snapshot.h"

struct probe;

/** For the control thread. NULL on error. */
struct probe *probe_new(struct snapshot_slot *snaps, struct cache *cache, struct inflight *inflight,
                        struct resolve_normal *normal, struct resolve_edns *edns);
/** After the pools are gone (a late waiter may still arrive until then). NULL is a no-op. */
void probe_free(struct probe *p);

/**
 * Send name/type through the query path as a client of partition would
 * (from the first address of its first prefix: the same ACL, routing,
 * cache and pools), wait for the reply (under 5 s: the control socket's
 * own deadline) and describe it on out: from the cache or resolved, how
 * long, rcode, Extended DNS Errors, records.
 * @param type  NULL = A
 * @return 0, or -EINVAL / -ENOENT with a message on err.
 */
int probe_query(struct probe *p, const char *name, const char *type, const char *partition, FILE *out, FILE *err);
