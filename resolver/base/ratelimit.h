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

enum ratelimit_verdict {
	RATELIMIT_OK = 0,    /* a token taken */
	RATELIMIT_OVER,      /* over the rate */
	RATELIMIT_OVER_NEW,  /* over, and the group's first time in RATELIMIT_REPORT_NS: worth a log line */
};
#define RATELIMIT_REPORT_NS (60ull * 1000000000ull)

/**
 * May the client at addr (4 or 16 bytes by family) send one more query at
 * now_ns (monotonic)? Takes a token when it may. An operator learns that a
 * limit fired from a log line, once a minute per group: RATELIMIT_OVER_NEW
 * says this refusal is the one to report (a group evicted from the table
 * may be reported again sooner).
 */
enum ratelimit_verdict ratelimit_take(struct ratelimit *rl, int family, const uint8_t *addr, uint64_t now_ns);

/** ratelimit_take() == RATELIMIT_OK. */
bool ratelimit_allow(struct ratelimit *rl, int family, const uint8_t *addr, uint64_t now_ns);

/** The group prefix length of a family's addresses (client_prefix4/6). */
unsigned ratelimit_prefix(const struct ratelimit *rl, int family);
