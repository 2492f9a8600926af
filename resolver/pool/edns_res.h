/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/pool/. How an EDNS resolution ends: its spliced answer to the cache, or SERVFAIL and why. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "resolver/pool/edns_pool.h"

/*
 * What a client that sent EDNS is told when a resolution fails (RFC 8914).
 * Each is defined once here: edns_res_fail and the exchange tell some apart
 * by address.
 */
extern const struct wire_ede edns_ede_unreachable, edns_ede_errors, edns_ede_network, edns_ede_invalid,
	edns_ede_mismatch, edns_ede_truncated, edns_ede_chain, edns_ede_no_zone, edns_ede_no_targets, edns_ede_slow,
	edns_ede_down, edns_ede_rate, edns_ede_family, edns_ede_val_malformed, edns_ede_cut_bogus,
	edns_ede_cut_expired, edns_ede_cut_not_yet, edns_ede_tier, edns_ede_tier_error;

/** The job's partition by name, for logs (the plan it was routed under). */
const char *edns_res_part_name(const struct job *job);

/**
 * End r with SERVFAIL and free it. ede says why to clients (and the failure
 * is remembered for cache.failure_ttl); NULL for our own trouble (memory,
 * shutdown), which is neither told nor remembered.
 */
void edns_res_fail(struct eres *r, const struct wire_ede *ede, const char *why);

/** Add a hop's response to the chain so far (the first one is copied as is). @return 0 or -1 (r failed: freed). */
int edns_res_append(struct eres *r, const uint8_t *resp, size_t len);

/** End r with resp, the last hop's answer, spliced after the earlier ones; free it. */
void edns_res_done(struct eres *r, const uint8_t *resp, size_t len);
