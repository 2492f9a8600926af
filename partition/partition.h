/* SPDX-License-Identifier: BSD-3-Clause */
/* Partitions: named groups of prefixes (a city), and the classifier over them. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "partition/prefix.h"

/* The common (shared) cache partition; also "no partition matched". */
#define PARTITION_COMMON 0
/* Highest usable partition id. */
#define PARTITION_MAX 4095

struct ptable;

/** @return a new empty table or NULL. Free with ptable_free(). */
struct ptable *ptable_new(void);
void ptable_free(struct ptable *t);

/**
 * Add a partition. Ids are given in order: 1, 2, 3...
 * @param name copied; must be non-empty and not "common".
 * @return the new id (>= 1), -EEXIST (name taken), -EINVAL, -ENOSPC, -ENOMEM.
 */
int ptable_add(struct ptable *t, const char *name);

/**
 * Add a prefix to partition id. Not after ptable_build().
 * @param other out, optional: on -EEXIST the partition holding the same prefix
 *              (id itself when the prefix is repeated within one partition).
 * @return 0, -EEXIST, -ENOENT (no such id, or PARTITION_COMMON), -EINVAL (p
 *         malformed: unknown family, length too long or host bits set; or
 *         called after ptable_build), -ENOMEM.
 */
int ptable_add_prefix(struct ptable *t, unsigned id, const struct prefix *p, unsigned *other);

/** Compile for lookups. @return 0 or -ENOMEM. */
int ptable_build(struct ptable *t);

/**
 * Classify an address. Thread-safe after ptable_build().
 * @param family AF_INET (4 bytes) or AF_INET6 (16 bytes).
 * @param matched out, optional: the longest prefix that matched.
 * @return the partition id, or PARTITION_COMMON when none matches.
 */
unsigned ptable_lookup(const struct ptable *t, int family, const uint8_t *addr, struct prefix *matched);

/** @return the name of id ("common" for PARTITION_COMMON), or NULL. Valid while t lives. */
const char *ptable_name(const struct ptable *t, unsigned id);

/** @return the id of name (PARTITION_COMMON for "common"), or -ENOENT. */
int ptable_find(const struct ptable *t, const char *name);

/** Number of partitions, not counting PARTITION_COMMON; ids run 1..size. */
size_t ptable_size(const struct ptable *t);

/** Number of prefixes of id in family (AF_INET, AF_INET6, or 0 for both). */
size_t ptable_prefix_count(const struct ptable *t, unsigned id, int family);

/**
 * Call fn for each prefix of partition id, in insertion order; stops early
 * when fn returns non-zero and returns that value. PARTITION_COMMON and
 * unknown ids have no prefixes. @return 0 or fn's value.
 */
int ptable_foreach_prefix(const struct ptable *t, unsigned id,
                          int (*fn)(const struct prefix *p, void *arg), void *arg);

/** Bytes of heap held. */
size_t ptable_memory(const struct ptable *t);
