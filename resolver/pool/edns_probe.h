/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/pool/. edns.tier's probes: the first EDNS thread asks every tier node whether it is there. */
#pragma once

#include <stddef.h>

#include "resolver/pool/edns_pool.h"

/** Make t the prober of the tier's n nodes (one probe slot each). @return 0 or -1 (out of memory). */
int edns_probe_init(struct ethread *t, size_t n);
/** Close t's probes out and free them (n: as at init; anything when t is no prober). */
void edns_probe_free(struct ethread *t, size_t n);

/**
 * Every TIER_PROBE_MS: the last round's probes answered or not (two misses
 * in a row mark a node down, one answer up again), then a new probe each.
 * Nothing on a thread that is no prober.
 */
void edns_probe_round(struct ethread *t);

/** How long t's loop may sleep, at most ms, so that the next round is not late. */
int edns_probe_wait_ms(const struct ethread *t, int ms);
