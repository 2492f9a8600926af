/* SPDX-License-Identifier: BSD-3-Clause */
/* Longest-prefix-match table for IPv4 and IPv6, built once, then read-only. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "partition/prefix.h"

/* Returned by lpm_lookup when no prefix covers the address. */
#define LPM_NONE UINT32_MAX

struct lpm;

/** @return a new empty table, or NULL on ENOMEM. Free with lpm_free(). */
struct lpm *lpm_new(void);
void lpm_free(struct lpm *t);

/**
 * Add a prefix with its value (any value but LPM_NONE). Not after lpm_build().
 * @param existing out, optional: on -EEXIST the value already stored for it.
 * @return 0, -EEXIST (same prefix already present), -EINVAL (unknown family,
 *         length too long, host bits set, value LPM_NONE, or after
 *         lpm_build), -ENOMEM.
 */
int lpm_insert(struct lpm *t, const struct prefix *p, uint32_t value, uint32_t *existing);

/**
 * Compile the table for lookups; call once after the last insert (a second
 * call does nothing). On -ENOMEM the table stays unbuilt.
 * @return 0 or -ENOMEM.
 */
int lpm_build(struct lpm *t);

/**
 * Longest match. Safe from many threads at once after lpm_build(); before
 * it (and for an unknown family) the result is LPM_NONE.
 * @param family AF_INET (addr is 4 bytes) or AF_INET6 (16 bytes).
 * @param matched out, optional: the prefix that matched (all zero on LPM_NONE).
 * @return the value of the longest matching prefix, or LPM_NONE.
 */
uint32_t lpm_lookup(const struct lpm *t, int family, const uint8_t *addr, struct prefix *matched);

/** Number of prefixes inserted. */
size_t lpm_count(const struct lpm *t);

/**
 * The i-th inserted prefix (0-based, insertion order), before or after build.
 * @param p out, optional: the prefix.
 * @return its value, or LPM_NONE when i >= lpm_count(t).
 */
uint32_t lpm_get(const struct lpm *t, size_t i, struct prefix *p);

/** Bytes of heap the table holds (after build: the compiled form included). */
size_t lpm_memory(const struct lpm *t);
