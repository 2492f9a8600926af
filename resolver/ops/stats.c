/* SPDX-License-Identifier: BSD-3-Clause */
/* The stats report. */
#include "resolver/ops/stats.h"

#include <string.h>

#include "resolver/view/rpz.h"
#include "resolver/pool/tier.h"
#include "util/json.h"

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
	{ "stub_retries", C_stub_retries, false }, /* failed in the stub context, asked again in the plain one */
	{ "started_here", C_started_here, false }, /* started by the listener that read the query, in its own loop */
	{ NULL, 0, false },
};

static const struct pool_item edns_items[] = {
	{ "resolutions", C_edns_queries, true },
	{ "upstream_queries", C_upstream_queries, false }, /* ECS queries sent */
	{ "upstream_timeouts", C_upstream_timeouts, false },
	{ "upstream_mismatch", C_upstream_mismatch, false }, /* replies not matching their query */
	{ "failures", C_upstream_errors, false },          /* resolutions ended SERVFAIL */
	{ "cut_lookups", C_ub_lookups, false },            /* libunbound lookups for zone cuts, addresses and DNSSEC keys */
	{ "zone_limited", C_zone_limited, false },         /* refused at once: edns.zone_qps (also in failures) */
	{ "zone_limited_early", C_zone_limited_early, false }, /* ... of them by a listener, before the hand-over */
	{ "dnssec_secure", C_dnssec_secure, false },       /* hop answers validated secure */
	{ "dnssec_insecure", C_dnssec_insecure, false },   /* ... proven insecure (unsigned zone) */
	{ "dnssec_bogus", C_dnssec_bogus, false },         /* ... bogus or unprovable: SERVFAIL */
	{ "tier_queries", C_tier_queries, false },         /* edns.tier: queries sent to tier nodes */
	{ "tier_failovers", C_tier_failovers, false },     /* ... sent again to the next node after a timeout */
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

/* rpz_each's callbacks: "rpz.ZONE.hits N" lines, or the JSON list of zones. */
struct rpz_out {
	FILE *out;
	const struct ptable *t;
	bool json, first, first_part;
};

static void rpz_zone_line(const char *zone, uint64_t rules, uint64_t hits, void *arg)
{
	struct rpz_out *o = arg;
	if (!o->json) {
		fprintf(o->out, "rpz.%s.rules %llu\nrpz.%s.hits %llu\n", zone, ull(rules), zone, ull(hits));
		return;
	}
	fprintf(o->out, "%s\n    { \"zone\": ", o->first ? "" : " } },");
	json_string(o->out, zone);
	fprintf(o->out, ", \"rules\": %llu, \"hits\": %llu, \"partitions\": {", ull(rules), ull(hits));
	o->first = false;
	o->first_part = true;
}

static void rpz_part_line(const char *zone, unsigned part, uint64_t hits, void *arg)
{
	struct rpz_out *o = arg;
	const char *name = ptable_name(o->t, part);
	if (name == NULL)
		return;
	if (!o->json) {
		fprintf(o->out, "rpz.%s.partition.%s %llu\n", zone, name, ull(hits));
		return;
	}
	fputs(o->first_part ? " " : ", ", o->out);
	json_string(o->out, name);
	fprintf(o->out, ": %llu", ull(hits));
	o->first_part = false;
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
	fprintf(out, "  \"cache_snapshot\": { \"saved\": %llu, \"loaded\": %llu, \"refused\": %llu, "
	        "\"files_refused\": %llu },\n", ull(v->snap_saved), ull(v->snap_loaded), ull(v->snap_refused),
	        ull(v->snap_files_refused));
	fprintf(out, "  \"edns_domains\": %zu,\n", v->edns_domains);
	/* edns.tier: each node's state as this frontend sees it (none: not a frontend) */
	const struct tier *tr = v->tier;
	fputs("  \"tier\": [", out);
	for (size_t i = 0; tr != NULL && i < tr->n; i++) {
		fprintf(out, "%s\n    { \"node\": ", i ? "," : "");
		json_string(out, tr->node[i].text);
		fprintf(out, ", \"up\": %s, \"downs\": %llu }", tier_is_up(tr, (unsigned)i) ? "true" : "false",
		        ull(atomic_load_explicit(&tr->node[i].downs, memory_order_relaxed)));
	}
	fputs(tr != NULL && tr->n > 0 ? "\n  ],\n" : "],\n", out);
	struct rpz_out ro = { .out = out, .t = v->partitions, .json = true, .first = true };
	fputs("  \"rpz\": [", out);
	rpz_each(v->rpz, rpz_zone_line, rpz_part_line, &ro);
	fputs(ro.first ? "],\n" : " } }\n  ],\n", out);
	fputs("  \"partitions\": [\n", out);
	size_t np = ptable_size(v->partitions);
	for (size_t id = 0; id <= np; id++) {
		const struct stats_partition *p = &v->part[id];
		fputs("    { \"name\": ", out);
		json_string(out, ptable_name(v->partitions, (unsigned)id));
		fprintf(out, ", \"id\": %zu, \"queries\": %llu, \"hits\": %llu, \"edns\": %llu }%s\n", id,
		        ull(p->queries), ull(p->hits), ull(p->edns), id < np ? "," : "");
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
	const struct tier *tr = v->tier;
	for (size_t i = 0; tr != NULL && i < tr->n; i++)
		fprintf(out, "edns.tier.%s.up %d\nedns.tier.%s.downs %llu\n", tr->node[i].text,
		        tier_is_up(tr, (unsigned)i) ? 1 : 0, tr->node[i].text,
		        ull(atomic_load_explicit(&tr->node[i].downs, memory_order_relaxed)));
	fprintf(out, "cache.entries %zu\ncache.bytes %zu\ncache.max_bytes %zu\ncache.lookup_hits %llu\n"
	        "cache.lookup_misses %llu\ncache.evictions %llu\ncache.expired %llu\n", cs->entries, cs->bytes,
	        cs->max_bytes, ull(cs->hits), ull(cs->misses), ull(cs->evictions), ull(cs->expired));
	fprintf(out, "cache.snapshot_saved %llu\ncache.snapshot_loaded %llu\ncache.snapshot_refused %llu\n"
	        "cache.snapshot_files_refused %llu\n", ull(v->snap_saved), ull(v->snap_loaded), ull(v->snap_refused),
	        ull(v->snap_files_refused));
	fprintf(out, "edns_domains %zu\n", v->edns_domains);
	struct rpz_out ro = { .out = out, .t = v->partitions };
	rpz_each(v->rpz, rpz_zone_line, rpz_part_line, &ro);
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

static void iso_time(time_t t, char *buf, size_t size)
{
	struct tm tm;
	if (t == 0 || gmtime_r(&t, &tm) == NULL || strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(buf, size, "-");
}

void stats_write_status(FILE *out, bool json, const struct status_view *v)
{
	char started[32], last[32], serial[16], digest[17];
	iso_time(v->started, started, sizeof(started));
	iso_time(v->last_reload, last, sizeof(last));
	if (v->plan_serial != 0)
		snprintf(serial, sizeof(serial), "%u", v->plan_serial);
	else
		snprintf(serial, sizeof(serial), "-");
	snprintf(digest, sizeof(digest), "%016llx", ull(v->plan_digest));
	const char *result = v->last_reload == 0 ? "-" : v->last_reload_ok ? "ok" : "failed";
	if (!json) {
		fprintf(out, "version %s\nconfig %s\nuser %s\nstarted %s\nuptime %llu\n", v->version, v->config,
		        v->user, started, ull(v->uptime));
		fprintf(out, "plan_serial %s\nplan_digest %s\npartitions %zu\nedns_domains %zu\nstore_version %llu\n",
		        serial, digest, v->partitions, v->edns_domains, ull(v->store_version));
		fprintf(out, "reloads %llu\nreload_failures %llu\nlast_reload %s\nlast_reload_result %s\n",
		        ull(v->reloads), ull(v->reload_failures), last, result);
		fprintf(out, "standby %s\n", v->standby && v->standby[0] ? v->standby : "-");
		char snap_at[32];
		iso_time(v->snap_last, snap_at, sizeof(snap_at));
		fprintf(out, "cache_snapshot %s\ncache_snapshot_last %s\ncache_snapshot_entries %llu\n"
		        "cache_snapshot_bytes %llu\n", v->snapshot && v->snapshot[0] ? v->snapshot : "-", snap_at,
		        ull(v->snap_entries), ull(v->snap_bytes));
		fprintf(out, "plan_source %s\n", v->plan_source ? v->plan_source : "config");
		if (v->fleet_on)
			fprintf(out, "fleet_node %s\nfleet_revision %lld\nfleet_connected %s\nfleet_member %s\n",
			        v->fleet.name, (long long)v->fleet.revision, v->fleet.connected ? "yes" : "no",
			        v->fleet.member[0] ? v->fleet.member : "-");
		if (v->next_serial == 0)
			fputs("plan_next -\n", out);
		else if (v->next_at == 0)
			fprintf(out, "plan_next %u on-activation\n", v->next_serial);
		else {
			char at[32];
			iso_time(v->next_at, at, sizeof(at));
			fprintf(out, "plan_next %u at %s\n", v->next_serial, at);
		}
		return;
	}
	fputs("{\n  \"version\": ", out);
	json_string(out, v->version);
	fputs(",\n  \"config\": ", out);
	json_string(out, v->config);
	fputs(",\n  \"user\": ", out);
	json_string(out, v->user);
	fprintf(out, ",\n  \"started\": \"%s\",\n  \"uptime\": %llu,\n", started, ull(v->uptime));
	if (v->plan_serial != 0)
		fprintf(out, "  \"plan_serial\": %u,\n", v->plan_serial);
	else
		fputs("  \"plan_serial\": null,\n", out);
	fprintf(out, "  \"plan_digest\": \"%s\",\n  \"partitions\": %zu,\n  \"edns_domains\": %zu,\n", digest,
	        v->partitions, v->edns_domains);
	fprintf(out, "  \"store_version\": %llu,\n  \"reloads\": %llu,\n  \"reload_failures\": %llu,\n",
	        ull(v->store_version), ull(v->reloads), ull(v->reload_failures));
	if (v->last_reload != 0)
		fprintf(out, "  \"last_reload\": \"%s\",\n  \"last_reload_result\": \"%s\",\n", last, result);
	else
		fputs("  \"last_reload\": null,\n  \"last_reload_result\": null,\n", out);
	/* {"partition": "target", ...} of the partitions failed over */
	fputs("  \"standby\": {", out);
	const char *p = v->standby ? v->standby : "";
	for (bool first = true; *p != '\0';) {
		const char *end = strchr(p, ' ');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		const char *gt = memchr(p, '>', len);
		if (gt != NULL) {
			fputs(first ? "" : ", ", out);
			json_string_len(out, p, (size_t)(gt - p));
			fputs(": ", out);
			json_string_len(out, gt + 1, len - (size_t)(gt - p) - 1);
			first = false;
		}
		p += len;
		while (*p == ' ')
			p++;
	}
	fputs("},\n  \"cache_snapshot\": ", out);
	if (v->snapshot && v->snapshot[0]) {
		char snap_at[32];
		iso_time(v->snap_last, snap_at, sizeof(snap_at));
		fputs("{ \"path\": ", out);
		json_string(out, v->snapshot);
		if (v->snap_last != 0)
			fprintf(out, ", \"last\": \"%s\"", snap_at);
		else
			fputs(", \"last\": null", out);
		fprintf(out, ", \"entries\": %llu, \"bytes\": %llu }", ull(v->snap_entries), ull(v->snap_bytes));
	} else {
		fputs("null", out);
	}
	fputs(",\n  \"plan_source\": ", out);
	json_string(out, v->plan_source ? v->plan_source : "config");
	fputs(",\n", out);
	if (v->fleet_on) {
		fputs("  \"fleet\": {\"node\": ", out);
		json_string(out, v->fleet.name);
		fprintf(out, ", \"revision\": %lld, \"connected\": %s, \"member\": ", (long long)v->fleet.revision,
		        v->fleet.connected ? "true" : "false");
		json_string(out, v->fleet.member);
		fputs("},\n", out);
	}
	if (v->next_serial == 0) {
		fputs("  \"plan_next\": null\n}\n", out);
	} else {
		char at[32];
		iso_time(v->next_at, at, sizeof(at));
		fprintf(out, "  \"plan_next\": { \"serial\": %u, \"at\": %s%s%s }\n}\n", v->next_serial,
		        v->next_at ? "\"" : "", v->next_at ? at : "null", v->next_at ? "\"" : "");
	}
}
