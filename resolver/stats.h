/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. The stats report (text or JSON) from figures the daemon gathered. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "partition/partition.h"
#include "resolver/cache.h"
#include "resolver/counters.h"

/* Per partition, summed over the workers. */
struct stats_partition {
	uint64_t queries, hits, edns;
};

/* Everything one report shows, gathered first so writing it needs no locks. */
struct stats_view {
	uint64_t uptime;                     /* seconds */
	uint64_t counters[COUNTERS_N];       /* summed over every thread, COUNTER_LIST order */
	unsigned inflight_normal, inflight_edns;
	struct cache_stats cache;
	size_t edns_domains;
	const struct ptable *partitions;     /* names by id */
	const struct stats_partition *part;  /* ptable_size(partitions) + 1 entries, by id */
};

/** Write the report: "name value" lines, or one JSON object. */
void stats_write(FILE *out, bool json, const struct stats_view *v);
