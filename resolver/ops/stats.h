/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. The stats report (text or JSON) from figures the daemon gathered. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "partition/partition.h"
#include "resolver/cache/cache.h"
#include "resolver/base/counters.h"
#include "resolver/ops/fleet.h"

/* Per partition, summed over the workers. */
struct stats_partition {
	uint64_t queries, hits, edns, udp, tcp, misses;
	uint64_t rcode[PRC_N];
	uint64_t cache_entries, cache_bytes; /* the partition's share of the cache (its own keys: common holds the rest) */
	uint64_t standby;                    /* 1 while failed over to its standby identity */
	uint64_t steer_answers, steer_echoed; /* final EDNS answers for it, and those that echoed its ECS */
};

/* A histogram summed over threads: per-bucket counts (HIST_NB + 1, the last over every bound) and the sum. */
struct stats_hist {
	uint64_t bucket[HIST_NB + 1];
	uint64_t sum_ns;
};

enum { STATS_POOL_NORMAL, STATS_POOL_EDNS, STATS_POOLS };

/* Everything one report shows, gathered first so writing it needs no locks. */
struct stats_view {
	uint64_t uptime;                     /* seconds */
	uint64_t counters[COUNTERS_N];       /* summed over every thread, COUNTER_LIST order */
	unsigned inflight_normal, inflight_edns;
	struct cache_stats cache;
	size_t edns_domains;
	unsigned plan_serial;                /* partitions.serial of the running plan; 0 = none */
	const struct ptable *partitions;     /* names by id */
	const struct stats_partition *part;  /* ptable_size(partitions) + 1 entries, by id */
	/* the same counters by where they were counted (metrics.c): counters = listeners + both pools */
	uint64_t listeners[COUNTERS_N];
	uint64_t pool[STATS_POOLS][COUNTERS_N];
	struct stats_hist upstream[STATS_POOLS]; /* upstream latency per pool */
	struct stats_hist response;              /* client response time of answered misses */
	const struct rpz *rpz;                   /* policy zones and their hits; NULL = none */
	bool fleet_on;                           /* store.etcd is set */
	struct fleet_status fleet;
	const struct tier *tier;                 /* edns.tier's nodes as this frontend sees them; NULL = none */
	/* cache snapshots (cache.snapshot, partdnsctl cache dump/load): entries written, loaded, not loaded */
	uint64_t snap_saved, snap_loaded, snap_refused, snap_files_refused;
};

/** Write the report: "name value" lines, or one JSON object. */
void stats_write(FILE *out, bool json, const struct stats_view *v);

/* partdnsctl status: what is running (version, config, plan) and how it got there (reloads). */
struct status_view {
	const char *version;
	const char *config;          /* the file partdns reads on reload */
	const char *user;            /* who it runs as */
	time_t started;
	uint64_t uptime;             /* seconds */
	unsigned plan_serial;        /* partitions.serial; 0 = not kept */
	uint64_t plan_digest;        /* partitions.digest: the plan's content */
	size_t partitions;
	size_t edns_domains;
	uint64_t store_version;
	uint64_t reloads, reload_failures;
	time_t last_reload;          /* 0 = none yet */
	bool last_reload_ok;
	const char *standby;         /* "name>target name>target" of the partitions failed over; "" = none */
	const char *plan_source;     /* "config", or "store" (an activated plan the config does not hold yet) */
	unsigned next_serial;        /* the staged plan's serial; 0 = none staged */
	time_t next_at;              /* when it goes live; 0 = when activated */
	bool fleet_on;               /* store.etcd is set */
	struct fleet_status fleet;
	const char *snapshot;        /* cache.snapshot; "" = off */
	time_t snap_last;            /* the last snapshot written; 0 = none yet */
	uint64_t snap_entries, snap_bytes;
};

/** Write status: "name value" lines, or one JSON object. */
void stats_write_status(FILE *out, bool json, const struct status_view *v);
