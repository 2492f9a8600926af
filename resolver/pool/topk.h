/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * This file is private to resolver/. The busiest client networks outside
 * the plan: query counts of unmatched clients by IPv4 /24 and IPv6 /48, so
 * an operator sees which prefixes the partition table is missing.
 *
 * Bounded and cheap: per listener thread, 256 buckets of 4 slots hashed by
 * network; a network not in its bucket takes the bucket's smallest slot and
 * inherits its count ("space saving", Metwally et al. 2005), so a network
 * that is really busy is never pushed out by a stream of one-off ones and
 * its count is over-estimated by at most what it inherited (kept, and
 * shown as the error bound).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct topk;

struct topk_item {
	uint8_t family;   /* AF_INET or AF_INET6 */
	uint8_t addr[16]; /* the /24 or /48, bits past it zero */
	uint64_t count;   /* queries (an upper bound) */
	uint64_t error;   /* how much of count may belong to networks it replaced */
};

struct topk *topk_new(void);
void topk_free(struct topk *t);

/** Count one query of a client at addr (4 or 16 bytes of family). One writer thread; readers may run meanwhile. */
void topk_add(struct topk *t, int family, const uint8_t *addr);

/**
 * Copy the counted networks (at most max) into out, any order.
 * @return how many.
 */
size_t topk_read(struct topk *t, struct topk_item *out, size_t max);

/**
 * Merge items (the reads of several threads) in place: one item per network
 * with counts and errors summed, sorted by count, highest first.
 * @return how many remain.
 */
size_t topk_merge(struct topk_item *items, size_t n);

/* Slots of one table: the most topk_read returns. */
#define TOPK_SLOTS 1024u
