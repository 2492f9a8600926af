/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. Per-client query rates: a token bucket per client prefix, one table per thread. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct ratelimit;

/**
 * A table of one thread (no locks): qps queries per second per client group
 * (IPv4 addresses grouped by prefix4 bits, IPv6 by prefix6 bits), a burst
 * of one second's worth. Entries are direct-mapped by a keyed hash: a flood
 * from many sources evicts other groups' buckets (which then start full)
 * but cannot aim at one.
 * @param qps  0 = no limit (ratelimit_allow always true)
 * @return NULL on ENOMEM.
 */
struct ratelimit *ratelimit_new(unsigned qps, unsigned prefix4, unsigned prefix6);
void ratelimit_free(struct ratelimit *rl);

/**
 * May the client at addr (4 or 16 bytes by family) send one more query at
 * now_ns (monotonic)? Takes a token when it may.
 */
bool ratelimit_allow(struct ratelimit *rl, int family, const uint8_t *addr, uint64_t now_ns);
