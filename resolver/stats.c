/* SPDX-License-Identifier: BSD-3-Clause */
/* The stats report. */
#include "resolver/stats.h"

static const char *const counter_names[] = {
#define COUNTER_NAME(n) #n,
	COUNTER_LIST(COUNTER_NAME)
#undef COUNTER_NAME
};

_Static_assert(sizeof(counter_names) / sizeof(counter_names[0]) == COUNTERS_N, "a name per counter");

static unsigned long long ull(uint64_t v)
{
	return (unsigned long long)v;
}

/*
 * What a pool counts, under the pool's name: the same word means the same
 * thing in both lists, and no global line mixes the pools (a normal-pool
 * timeout beside an EDNS-only upstream query count read as nonsense).
 */
struct pool_item {
	const char *name;
	int idx;
	bool listeners; /* counted by the listener threads (resolutions started), else by the pool's threads */
};

static const struct pool_item normal_items[] = {
	{ "resolutions", C_normal_queries, true }, /* misses and prefetches sent to the pool */
	{ "lookups", C_ub_lookups, false },        /* handed to libunbound */
	{ "timeouts", C_upstream_timeouts, false }, /* failed at the 4 s deadline */
	{ "failures", C_upstream_errors, false },  /* libunbound failed or said SERVFAIL */
	{ "zone_limited", C_zone_limited, false }, /* refused at once: resolver.zone_inflight */
	{ NULL, 0, false },
};

static const struct pool_item edns_items[] = {
	{ "resolutions", C_edns_queries, true },
	{ "upstream_queries", C_upstream_queries, false }, /* ECS queries sent */
	{ "upstream_timeouts", C_upstream_timeouts, false },
	{ "upstream_mismatch", C_upstream_mismatch, false }, /* replies not matching their query */
	{ "failures", C_upstream_errors, false },          /* resolutions ended SERVFAIL */
	{ "cut_lookups", C_ub_lookups, false },            /* libunbound lookups for zone cuts and addresses */
	{ NULL, 0, false },
};

static bool pool_counter(int idx)
{
	for (const struct pool_item *it = normal_items; it->name; it++)
		if (it->idx == idx)
			return true;
	for (const struct pool_item *it = edns_items; it->name; it++)
		if (it->idx == idx)
			return true;
	return false;
}

static uint64_t pool_value(const struct stats_view *v, int pool, const struct pool_item *it)
{
	return it->listeners ? v->listeners[it->idx] : v->pool[pool][it->idx];
}

static void write_json(FILE *out, const struct stats_view *v)
{
	const struct cache_stats *cs = &v->cache;
	fprintf(out, "{\n  \"uptime\": %llu,\n", ull(v->uptime));
	for (size_t i = 0; i < COUNTERS_N; i++)
		if (!pool_counter((int)i))
			fprintf(out, "  \"%s\": %llu,\n", counter_names[i], ull(v->counters[i]));
	static const char *const pools[] = { "normal", "edns" };
	const struct pool_item *items[] = { normal_items, edns_items };
	for (int p = 0; p < STATS_POOLS; p++) {
		fprintf(out, "  \"%s\": { ", pools[p]);
		for (const struct pool_item *it = items[p]; it->name; it++)
			fprintf(out, "\"%s\": %llu, ", it->name, ull(pool_value(v, p, it)));
		fprintf(out, "\"inflight\": %u },\n", p == STATS_POOL_NORMAL ? v->inflight_normal : v->inflight_edns);
	}
	/* lookups, not queries: a CNAME chain's answer takes more than one */
	fprintf(out, "  \"cache\": { \"entries\": %zu, \"bytes\": %zu, \"max_bytes\": %zu, "
	        "\"lookup_hits\": %llu, \"lookup_misses\": %llu, \"inserts\": %llu, \"evictions\": %llu, "
	        "\"expired\": %llu },\n", cs->entries, cs->bytes, cs->max_bytes, ull(cs->hits), ull(cs->misses),
	        ull(cs->inserts), ull(cs->evictions), ull(cs->expired));
	fprintf(out, "  \"edns_domains\": %zu,\n  \"partitions\": [\n", v->edns_domains);
	size_t np = ptable_size(v->partitions);
	for (size_t id = 0; id <= np; id++) {
		const struct stats_partition *p = &v->part[id];
		fprintf(out, "    { \"name\": \"%s\", \"id\": %zu, \"queries\": %llu, \"hits\": %llu, "
		        "\"edns\": %llu }%s\n", ptable_name(v->partitions, (unsigned)id), id, ull(p->queries),
		        ull(p->hits), ull(p->edns), id < np ? "," : "");
	}
	fprintf(out, "  ]\n}\n");
}

static void write_text(FILE *out, const struct stats_view *v)
{
	const struct cache_stats *cs = &v->cache;
	fprintf(out, "uptime %llu\n", ull(v->uptime));
	for (size_t i = 0; i < COUNTERS_N; i++)
		if (!pool_counter((int)i))
			fprintf(out, "%s %llu\n", counter_names[i], ull(v->counters[i]));
	for (const struct pool_item *it = normal_items; it->name; it++)
		fprintf(out, "normal.%s %llu\n", it->name, ull(pool_value(v, STATS_POOL_NORMAL, it)));
	fprintf(out, "normal.inflight %u\n", v->inflight_normal);
	for (const struct pool_item *it = edns_items; it->name; it++)
		fprintf(out, "edns.%s %llu\n", it->name, ull(pool_value(v, STATS_POOL_EDNS, it)));
	fprintf(out, "edns.inflight %u\n", v->inflight_edns);
	fprintf(out, "cache.entries %zu\ncache.bytes %zu\ncache.max_bytes %zu\ncache.lookup_hits %llu\n"
	        "cache.lookup_misses %llu\ncache.evictions %llu\ncache.expired %llu\n", cs->entries, cs->bytes,
	        cs->max_bytes, ull(cs->hits), ull(cs->misses), ull(cs->evictions), ull(cs->expired));
	fprintf(out, "edns_domains %zu\n", v->edns_domains);
	size_t np = ptable_size(v->partitions);
	for (size_t id = 0; id <= np; id++) {
		const char *name = ptable_name(v->partitions, (unsigned)id);
		const struct stats_partition *p = &v->part[id];
		fprintf(out, "partition.%s.queries %llu\npartition.%s.hits %llu\npartition.%s.edns %llu\n", name,
		        ull(p->queries), name, ull(p->hits), name, ull(p->edns));
	}
}

void stats_write(FILE *out, bool json, const struct stats_view *v)
{
	if (json)
		write_json(out, v);
	else
		write_text(out, v);
}
