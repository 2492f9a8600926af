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

static void write_json(FILE *out, const struct stats_view *v)
{
	const struct cache_stats *cs = &v->cache;
	fprintf(out, "{\n  \"uptime\": %llu,\n", ull(v->uptime));
	for (size_t i = 0; i < COUNTERS_N; i++)
		fprintf(out, "  \"%s\": %llu,\n", counter_names[i], ull(v->counters[i]));
	fprintf(out, "  \"inflight_normal\": %u,\n  \"inflight_edns\": %u,\n", v->inflight_normal, v->inflight_edns);
	fprintf(out, "  \"cache\": { \"entries\": %zu, \"bytes\": %zu, \"max_bytes\": %zu, "
	        "\"hits\": %llu, \"misses\": %llu, \"inserts\": %llu, \"evictions\": %llu, "
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
		fprintf(out, "%s %llu\n", counter_names[i], ull(v->counters[i]));
	fprintf(out, "inflight.normal %u\ninflight.edns %u\n", v->inflight_normal, v->inflight_edns);
	fprintf(out, "cache.entries %zu\ncache.bytes %zu\ncache.max_bytes %zu\ncache.evictions %llu\n"
	        "cache.expired %llu\n", cs->entries, cs->bytes, cs->max_bytes, ull(cs->evictions), ull(cs->expired));
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
