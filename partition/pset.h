/* SPDX-License-Identifier: BSD-3-Clause */
/* Prefix sets: which of several lists of prefixes cover an address, answered by one longest-prefix match. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "partition/prefix.h"

/* Lists a set can hold: bits 0..30 of a lookup's result. */
#define PSET_MAX_LISTS 31

struct pset;

/** @return a new empty set, or NULL on ENOMEM. Free with pset_free(). */
struct pset *pset_new(void);
void pset_free(struct pset *s);

/**
 * Add prefix p to list (0 .. PSET_MAX_LISTS-1). Bits past p->len are
 * ignored, as prefix_contains() ignores them; a prefix may be in several
 * lists and added more than once. Not after pset_build().
 * @return 0, -EINVAL (unknown family, length too long, list out of range,
 *         or after pset_build), -ENOMEM.
 */
int pset_add(struct pset *s, const struct prefix *p, unsigned list);

/**
 * Compile for lookups; call once after the last add (a second call does
 * nothing). On -ENOMEM the set stays unbuilt (lookups answer 0).
 * @return 0 or -ENOMEM.
 */
int pset_build(struct pset *s);

/**
 * The lists covering an address: bit i is set when some prefix of list i
 * contains it — what a scan of each list with prefix_contains() answers,
 * in one longest-prefix match whatever the lists' sizes. Safe from many
 * threads at once after pset_build(); 0 before it, for NULL, and for a
 * family no prefix has.
 * @param family AF_INET (addr is 4 bytes) or AF_INET6 (16 bytes).
 */
uint32_t pset_lookup(const struct pset *s, int family, const uint8_t *addr);

/** Number of prefixes added (with repeats). */
size_t pset_count(const struct pset *s);

/** Bytes of heap the set holds. */
size_t pset_memory(const struct pset *s);
