/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * This file is private to resolver/. What each city is being steered to:
 * for every partition x flagged rule, the addresses the authority's last
 * final answer held, the scope it echoed, and how often it echoed our ECS
 * at all (an authority that ignores ECS cannot steer: the operator should
 * see it). Written by the EDNS pool's threads at each final answer (a
 * miss, so a mutex is cheap enough), read by partdnsctl steering.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Most partition x rule rows kept; later ones are counted in steering_dropped, not kept. */
#define STEERING_ROWS 4096u
#define STEERING_ADDRS 4u

struct steering_row {
	char partition[64];
	char rule[256];             /* the flagged name, text */
	unsigned naddr;             /* addresses of the last final answer (at most STEERING_ADDRS) */
	struct {
		uint8_t family;         /* AF_INET, AF_INET6 */
		uint8_t addr[16];
	} addr[STEERING_ADDRS];
	uint8_t scope;              /* the last echoed scope prefix length (when echoed) */
	bool last_echoed;
	uint64_t answers, echoed;   /* final answers, and those with our ECS echoed */
	time_t last;                /* when the last one came */
};

struct steering;

struct steering *steering_new(void);
void steering_free(struct steering *s);

/**
 * One final answer (msg, a well-formed response) for a client of partition
 * under flagged rule: echoed says whether the authority echoed our ECS
 * option, with scope.
 */
void steering_note(struct steering *s, const char *partition, const char *rule, bool echoed, uint8_t scope,
                   const uint8_t *msg, size_t len);

/** Copy up to max rows into out (any order). @return how many. */
size_t steering_read(struct steering *s, struct steering_row *out, size_t max);

/** Call fn for every row's partition, answers and echoed counts (under the lock: fn must be quick). */
void steering_each(struct steering *s, void (*fn)(const char *partition, uint64_t answers, uint64_t echoed, void *arg),
                   void *arg);

/** Rows not kept because the table was full. */
uint64_t steering_dropped(struct steering *s);
