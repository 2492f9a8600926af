/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. The set of EDNS domains, read from the store, matched by qname. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

struct domains;

/* Most EDNS domains a set holds (a store with more is refused at load). */
#define DOMAINS_MAX (16u * 1024 * 1024)

/**
 * Read every domain from the store into a new immutable set.
 * @param version out, optional: the store version the set was read at.
 * @return 0 (*out set; free with domains_free) or a store error.
 */
int domains_load(struct store *s, struct domains **out, uint64_t *version);

/** An empty set (no EDNS domains). @return NULL on ENOMEM. */
struct domains *domains_empty(void);
void domains_free(struct domains *d);

/**
 * The rule for a lower-cased wire qname: an exact entry for the name itself,
 * else the nearest enclosing --subtree entry. Thread-safe.
 * The set keeps names and rules compactly; the struct returned is rebuilt by
 * each call in a buffer of the calling thread (name, subtree, policy and the
 * nforward targets as stored; forward[] past nforward is unspecified).
 * @return the rule, valid on the calling thread until its next domains_match
 *         call (on any set; d may be freed meanwhile): copy what must live
 *         longer. NULL when the name is normal (or longer than 255 bytes).
 */
const struct store_domain *domains_match(const struct domains *d, const uint8_t *qname, size_t len);

/**
 * domains_match, which also gives the name's hash under this set's key
 * (drawn anew for every set; never 0), or 0 when the set is empty: the
 * key of chain hints (chainhint.h), so the hit path hashes the name once.
 */
const struct store_domain *domains_match_hashed(const struct domains *d, const uint8_t *qname, size_t len,
                                                uint64_t *hash);

/**
 * Which --subtree names the set holds, as one number: equal sets give equal
 * numbers (whatever else differs), different ones almost surely not; 0 when
 * there is none. The normal pool rebuilds its stub contexts when it changes.
 */
uint64_t domains_subtree_sig(const struct domains *d);

/** Call fn with the text of every --subtree name (normalized, ends in '.'). @return how many. */
size_t domains_each_subtree(const struct domains *d, void (*fn)(const char *name, void *arg), void *arg);

/** Number of domains in the set. */
size_t domains_count(const struct domains *d);
