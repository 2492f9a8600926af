/* SPDX-License-Identifier: BSD-3-Clause */
/* The control verbs and the HTTP pages' callbacks: the daemon's figures, cache, plan and reload for operators. */
#include "resolver/ops/ctl_verbs.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "control/server.h"
#include "partition/partition.h"
#include "resolver/base/clock.h"
#include "resolver/cache/cache.h"
#include "resolver/cache/cache_snap.h"
#include "resolver/ops/console.h"
#include "resolver/ops/daemon_state.h"
#include "resolver/ops/fleet.h"
#include "resolver/ops/inspect.h"
#include "resolver/ops/metrics.h"
#include "resolver/ops/probe.h"
#include "resolver/ops/publish.h"
#include "resolver/ops/reload.h"
#include "resolver/ops/stats.h"
#include "resolver/pool/resolve_edns.h"
#include "resolver/pool/resolve_normal.h"
#include "resolver/pool/steering.h"
#include "resolver/pool/topk.h"
#include "resolver/serve/worker.h"
#include "resolver/view/route.h"
#include "resolver/view/snapshot.h"
#include "resolver/view/standby.h"
#include "util/json.h"
#include "wire/names.h"

struct steer_sum {
	const struct ptable *t;
	struct stats_partition *part;
};

static void steer_add(const char *partition, uint64_t answers, uint64_t echoed, void *arg)
{
	struct steer_sum *s = arg;
	int id = ptable_find(s->t, partition);
	if (id > 0) {
		s->part[id].steer_answers += answers;
		s->part[id].steer_echoed += echoed;
	}
}

/*
 * Everything a report shows, read from the threads' own counters (summed
 * here: each thread writes only its own). *s is the snapshot the partition
 * names come from; release it and free v->part after writing.
 */
static int gather(struct daemon *d, struct stats_view *v, struct snapshot **s)
{
	memset(v, 0, sizeof(*v));
	for (unsigned i = 0; i < d->nworkers; i++) {
		counters_add_to(worker_counters(d->workers[i]), v->listeners);
		histogram_add_to(worker_response_time(d->workers[i]), v->response.bucket, &v->response.sum_ns);
	}
	v->fleet_on = d->fleet != NULL;
	fleet_status(d->fleet, &v->fleet);
	v->tier = resolve_edns_tier(d->edns);
	resolve_normal_counters(d->normal, v->pool[STATS_POOL_NORMAL]);
	resolve_edns_counters(d->edns, v->pool[STATS_POOL_EDNS]);
	for (size_t i = 0; i < COUNTERS_N; i++)
		v->counters[i] = v->listeners[i] + v->pool[STATS_POOL_NORMAL][i] + v->pool[STATS_POOL_EDNS][i];
	resolve_normal_latency(d->normal, v->upstream[STATS_POOL_NORMAL].bucket, &v->upstream[STATS_POOL_NORMAL].sum_ns);
	resolve_edns_latency(d->edns, v->upstream[STATS_POOL_EDNS].bucket, &v->upstream[STATS_POOL_EDNS].sum_ns);
	v->inflight_normal = resolve_normal_inflight(d->normal);
	v->inflight_edns = resolve_edns_inflight(d->edns);
	cache_get_stats(d->cache, &v->cache);
	v->snap_saved = atomic_load(&d->snap_saved);
	v->snap_loaded = atomic_load(&d->snap_loaded);
	v->snap_refused = atomic_load(&d->snap_refused);
	v->snap_files_refused = atomic_load(&d->snap_files_refused);
	v->uptime = (uint64_t)(time(NULL) - d->started);
	*s = snapshot_get(&d->snapshots);
	v->partitions = (*s)->conf->partitions.table;
	v->edns_domains = domains_count((*s)->domains);
	v->plan_serial = (*s)->conf->partitions.serial;
	v->rpz = (*s)->rpz;
	size_t np = ptable_size(v->partitions);
	struct stats_partition *part = calloc(np + 1, sizeof(*part));
	if (part == NULL) {
		snapshot_release(*s);
		return -ENOMEM;
	}
	for (size_t id = 0; id <= np; id++) {
		for (unsigned i = 0; i < d->nworkers; i++) {
			struct partition_counters *pc = &worker_partition_counters(d->workers[i])[id];
			part[id].queries += counter_get(&pc->queries);
			part[id].hits += counter_get(&pc->hits);
			part[id].edns += counter_get(&pc->edns);
			part[id].udp += counter_get(&pc->udp);
			part[id].tcp += counter_get(&pc->tcp);
			part[id].misses += counter_get(&pc->misses);
			for (int k = 0; k < PRC_N; k++)
				part[id].rcode[k] += counter_get(&pc->rcode[k]);
		}
		size_t entries, bytes;
		cache_tag_stats(d->cache, (unsigned)id, &entries, &bytes);
		part[id].cache_entries = entries;
		part[id].cache_bytes = bytes;
		part[id].standby = standby_active((*s)->standby, (unsigned)id, NULL);
	}
	struct steer_sum ss = { .t = v->partitions, .part = part };
	steering_each(resolve_edns_steering(d->edns), steer_add, &ss);
	v->part = part;
	return 0;
}

static int cmd_stats(void *arg, int argc, char **argv, FILE *out, FILE *err)
{
	struct daemon *d = arg;
	struct stats_view v;
	struct snapshot *s;
	if (gather(d, &v, &s) != 0) {
		fprintf(err, "out of memory\n");
		return -ENOMEM;
	}
	stats_write(out, argc >= 2 && strcmp(argv[1], "json") == 0, &v);
	free((void *)v.part);
	snapshot_release(s);
	return 0;
}

/* GET /mapping.csv and friends (on the server.http thread): the running plan. */
int ctl_verbs_publish(void *arg, const char *path, FILE *out, struct http_page *page)
{
	struct daemon *d = arg;
	if (strncmp(path, "/next/", 6) == 0) { /* the staged plan: CDNs learn it before it is live */
		pthread_mutex_lock(&d->next_lock);
		int rc = publish_next_page(d->next, d->next_staged, d->next_at, path + 5, out, page);
		pthread_mutex_unlock(&d->next_lock);
		return rc;
	}
	struct snapshot *s = snapshot_get(&d->snapshots);
	int rc = publish_page(s->conf, atomic_load(&d->plan_since), path, out, page);
	snapshot_release(s);
	return rc;
}

/* GET /metrics (on the metrics server's thread). */
int ctl_verbs_metrics(void *arg, FILE *out)
{
	struct stats_view v;
	struct snapshot *s;
	if (gather(arg, &v, &s) != 0)
		return -ENOMEM;
	metrics_write(out, &v);
	free((void *)v.part);
	snapshot_release(s);
	return 0;
}

/* The busiest unmatched networks of every listener thread, merged into items (TOPK_SLOTS per thread). @return how many. */
static size_t unmatched_read(struct daemon *d, struct topk_item *items)
{
	size_t k = 0;
	for (unsigned i = 0; i < d->nworkers; i++)
		k += topk_read(worker_unmatched(d->workers[i]), items + k, TOPK_SLOTS);
	return topk_merge(items, k);
}

/* GET /status.json: what the console shows, gathered as stats, status, steering and unmatched gather it. */
static int console_json(struct daemon *d, FILE *out)
{
	struct stats_view v;
	struct snapshot *s;
	if (gather(d, &v, &s) != 0)
		return -ENOMEM;
	size_t np = ptable_size(v.partitions);
	const char **to = calloc(np + 1, sizeof(*to));
	struct steering_row *rows = malloc(STEERING_ROWS * sizeof(*rows));
	struct topk_item *items = calloc((size_t)d->nworkers * TOPK_SLOTS + 1, sizeof(*items));
	int rc = -ENOMEM;
	if (to != NULL && rows != NULL && items != NULL) {
		for (unsigned id = 1; id <= np; id++)
			if (!standby_active(s->standby, id, &to[id]))
				to[id] = NULL;
		struct steering *st = resolve_edns_steering(d->edns);
		struct console_view cv = {
			.stats = &v,
			.mapping = s->conf->partitions.mapping,
			.standby_to = to,
			.rows = rows,
			.nrows = steering_read(st, rows, STEERING_ROWS),
			.rows_dropped = steering_dropped(st),
			.unmatched = items,
			.nunmatched = unmatched_read(d, items),
			.plan_digest = s->conf->partitions.digest,
			.store_version = s->store_version,
			.version = PARTDNS_VERSION,
			.now_ms = clock_ns() / 1000000u,
			.now = time(NULL),
		};
		pthread_mutex_lock(&d->reload_lock);
		cv.plan_source = d->plan_from_store ? "store" : "config";
		pthread_mutex_unlock(&d->reload_lock);
		rc = console_status(d->console, &cv, out);
	}
	free(items);
	free(rows);
	free(to);
	free((void *)v.part);
	snapshot_release(s);
	return rc;
}

/* GET / and /status.json on server.metrics (its thread, one request at a time: the console's ring needs no lock). */
int ctl_verbs_console(void *arg, const char *path, FILE *out, struct http_page *page)
{
	struct daemon *d = arg;
	if (d->console == NULL)
		return -ENOENT;
	if (strcmp(path, "/") == 0) {
		page->type = "text/html; charset=utf-8";
		page->header = "Content-Security-Policy";
		snprintf(page->value, sizeof(page->value), "%s", console_csp);
		console_page(out);
		return 0;
	}
	if (strcmp(path, "/status.json") == 0) {
		page->type = "application/json";
		page->header = "Cache-Control";
		snprintf(page->value, sizeof(page->value), "no-store");
		return console_json(d, out);
	}
	return -ENOENT;
}

struct flush_arg {
	const uint8_t *name;
	size_t name_len;
	int partition; /* -1 = any */
};

static bool flush_match(const uint8_t *key, size_t klen, void *arg)
{
	const struct flush_arg *f = arg;
	if (klen < ROUTE_KEY_HDR)
		return false;
	if (f->partition >= 0 && route_key_partition(key) != (unsigned)f->partition)
		return false;
	if (f->name && (klen - ROUTE_KEY_HDR != f->name_len ||
	                memcmp(key + ROUTE_KEY_HDR, f->name, f->name_len) != 0))
		return false;
	return true;
}

/* "query name=NAME [type=T] partition=P" */
static int cmd_query(void *arg, int argc, char **argv, FILE *out, FILE *err)
{
	struct daemon *d = arg;
	const char *name = control_arg(argc - 1, argv + 1, "name");
	if (name == NULL) {
		fprintf(err, "query: no name\n");
		return -EINVAL;
	}
	return probe_query(d->probe, name, control_arg(argc - 1, argv + 1, "type"),
	                   control_arg(argc - 1, argv + 1, "partition"), out, err);
}

/* "cache dump file=FILE", "cache load file=FILE": a snapshot written or read by the daemon, as its user */
static int cache_snap_verb(struct daemon *d, bool dump, int argc, char **argv, FILE *out, FILE *err)
{
	const char *file = control_arg(argc - 2, argv + 2, "file");
	if (file == NULL || file[0] != '/') {
		fprintf(err, "cache %s: file=PATH, an absolute path, is needed\n", dump ? "dump" : "load");
		return -EINVAL;
	}
	struct cache_snap_result r;
	int rc = dump ? reload_snap_write(d, file, "partdnsctl", &r) : reload_snap_load(d, file, "partdnsctl", &r);
	if (rc != 0) {
		fprintf(err, "%s: %s\n", file, r.why);
		return rc;
	}
	if (dump)
		fprintf(out, "%llu entries, %llu bytes written to %s\n", (unsigned long long)r.entries,
		        (unsigned long long)r.bytes, file);
	else
		fprintf(out, "%llu entries loaded from %s%s%s\n", (unsigned long long)r.entries, file,
		        r.why[0] ? "; not loaded: " : "", r.why);
	return 0;
}

/* "cache flush [name=NAME] [partition=P]", "cache lookup name=NAME [type=T] [partition=P]", "cache dump|load file=FILE" */
static int cmd_cache(void *arg, int argc, char **argv, FILE *out, FILE *err)
{
	struct daemon *d = arg;
	if (argc >= 2 && (strcmp(argv[1], "dump") == 0 || strcmp(argv[1], "load") == 0))
		return cache_snap_verb(d, strcmp(argv[1], "dump") == 0, argc, argv, out, err);
	if (argc >= 2 && strcmp(argv[1], "lookup") == 0) {
		const char *name = control_arg(argc - 2, argv + 2, "name");
		if (name == NULL) {
			fprintf(err, "cache lookup: no name\n");
			return -EINVAL;
		}
		struct snapshot *s = snapshot_get(&d->snapshots);
		int rc = inspect_cache_lookup(d->cache, s, name, control_arg(argc - 2, argv + 2, "type"),
		                              control_arg(argc - 2, argv + 2, "partition"), out, err);
		snapshot_release(s);
		return rc;
	}
	if (argc < 2 || strcmp(argv[1], "flush") != 0) {
		fprintf(err, "unknown request 'cache%s%s'\n", argc >= 2 ? " " : "", argc >= 2 ? argv[1] : "");
		return -EINVAL;
	}
	const char *name = control_arg(argc - 2, argv + 2, "name");
	const char *partition = control_arg(argc - 2, argv + 2, "partition");
	uint8_t wname[WIRE_MAX_NAME];
	struct flush_arg f = { .name = NULL, .partition = -1 };
	if (name) {
		int n = wire_name_from_text(name, wname, sizeof(wname));
		if (n < 0) {
			fprintf(err, "bad name '%s'\n", name);
			return -EINVAL;
		}
		wire_name_lower(wname, (size_t)n, wname);
		f.name = wname;
		f.name_len = (size_t)n;
	}
	if (partition) {
		struct snapshot *s = snapshot_get(&d->snapshots);
		int id = strcmp(partition, "common") == 0 ? 0 : ptable_find(s->conf->partitions.table, partition);
		snapshot_release(s);
		if (id < 0) {
			fprintf(err, "no partition '%s'\n", partition);
			return -ENOENT;
		}
		f.partition = id;
	}
	size_t k = cache_flush(d->cache, (name || partition) ? flush_match : NULL, &f);
	fprintf(out, "%zu entries flushed\n", k);
	return 0;
}

/* Does rule (a flagged name, text with the final dot) lie in zone (text, with or without it)? */
static bool rule_in_zone(const char *rule, const char *zone)
{
	size_t zl = strlen(zone), rl = strlen(rule);
	if (zl > 0 && zone[zl - 1] == '.')
		zl--;
	if (zl == 0)
		return true;
	if (rl < zl + 1 || rule[rl - 1] != '.')
		return false;
	const char *tail = rule + rl - 1 - zl;
	return strncasecmp(tail, zone, zl) == 0 && (tail == rule || tail[-1] == '.');
}

/* "steering [zone=Z] [json]": per partition x flagged rule, what the final answers said */
static int cmd_steering(void *arg, int argc, char **argv, FILE *out, FILE *err)
{
	struct daemon *d = arg;
	const char *zone = control_arg(argc - 1, argv + 1, "zone");
	bool json = false;
	for (int i = 1; i < argc; i++)
		json |= strcmp(argv[i], "json") == 0;
	struct steering *st = resolve_edns_steering(d->edns);
	struct steering_row *rows = malloc(STEERING_ROWS * sizeof(*rows));
	if (rows == NULL) {
		fprintf(err, "out of memory\n");
		return -ENOMEM;
	}
	size_t n = steering_read(st, rows, STEERING_ROWS);
	fputs(json ? "{\n  \"steering\": [" : "", out);
	size_t shown = 0;
	for (size_t i = 0; i < n; i++) {
		const struct steering_row *r = &rows[i];
		if (zone != NULL && !rule_in_zone(r->rule, zone))
			continue;
		char addrs[STEERING_ADDRS * 48] = "";
		size_t o = 0;
		for (unsigned k = 0; k < r->naddr && o < sizeof(addrs); k++) {
			char ip[INET6_ADDRSTRLEN];
			inet_ntop(r->addr[k].family, r->addr[k].addr, ip, sizeof(ip));
			o += (size_t)snprintf(addrs + o, sizeof(addrs) - o, json ? "%s\"%s\"" : "%s%s", k ? "," : "", ip);
		}
		/* an authority that never echoes our ECS does not steer by it */
		const char *ecs = r->echoed == r->answers ? "echoed" : r->echoed == 0 ? "ignored" : "mixed";
		char when[32], scope[8];
		struct tm tm;
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&r->last, &tm));
		if (r->last_echoed)
			snprintf(scope, sizeof(scope), json ? "%u" : "/%u", (unsigned)r->scope);
		else
			snprintf(scope, sizeof(scope), json ? "null" : "-");
		if (json) {
			/* a flagged name may hold any byte a DNS label can ('"' included) */
			fprintf(out, "%s\n    { \"partition\": ", shown ? "," : "");
			json_string(out, r->partition);
			fputs(", \"rule\": ", out);
			json_string(out, r->rule);
			fprintf(out,
			        ", \"addresses\": [%s], \"ecs\": \"%s\", \"scope\": %s, \"answers\": %llu, \"echoed\": %llu, "
			        "\"last\": \"%s\" }",
			        addrs, ecs, scope, (unsigned long long)r->answers, (unsigned long long)r->echoed, when);
		} else
			fprintf(out, "%s %s %s ecs=%s scope=%s answers=%llu echoed=%llu last=%s\n", r->partition, r->rule,
			        r->naddr ? addrs : "-", ecs, scope, (unsigned long long)r->answers,
			        (unsigned long long)r->echoed, when);
		shown++;
	}
	if (json)
		fprintf(out, "%s],\n  \"rows_not_kept\": %llu\n}\n", shown ? "\n  " : "",
		        (unsigned long long)steering_dropped(st));
	free(rows);
	return 0;
}

/* "unmatched [top=N] [json]": the busiest networks of clients in no partition, all listener threads */
static int cmd_unmatched(void *arg, int argc, char **argv, FILE *out, FILE *err)
{
	struct daemon *d = arg;
	const char *top = control_arg(argc - 1, argv + 1, "top");
	bool json = false;
	for (int i = 1; i < argc; i++)
		json |= strcmp(argv[i], "json") == 0;
	char *end = NULL;
	unsigned long n = top != NULL ? strtoul(top, &end, 10) : 20;
	if (top != NULL && (*top == '\0' || *end != '\0' || n == 0 || n > TOPK_SLOTS)) {
		fprintf(err, "unmatched: top must be 1..%u\n", TOPK_SLOTS);
		return -EINVAL;
	}
	struct topk_item *items = calloc((size_t)d->nworkers * TOPK_SLOTS, sizeof(*items));
	if (items == NULL) {
		fprintf(err, "out of memory\n");
		return -ENOMEM;
	}
	size_t k = unmatched_read(d, items);
	if (k > n)
		k = n;
	fputs(json ? "{\n  \"unmatched\": [" : "", out);
	for (size_t i = 0; i < k; i++) {
		struct prefix p = { .family = items[i].family, .len = items[i].family == AF_INET ? 24 : 48 };
		memcpy(p.addr, items[i].addr, sizeof(p.addr));
		char net[PREFIX_STRLEN];
		prefix_format(&p, net, sizeof(net));
		if (json)
			fprintf(out, "%s\n    { \"network\": \"%s\", \"queries\": %llu, \"error\": %llu }", i ? "," : "",
			        net, (unsigned long long)items[i].count, (unsigned long long)items[i].error);
		else
			fprintf(out, "%s %llu%s\n", net, (unsigned long long)items[i].count,
			        items[i].error ? " (approximate)" : "");
	}
	fputs(json ? (k ? "\n  ]\n}\n" : "]\n}\n") : "", out);
	free(items);
	return 0;
}

/* "status [json]" */
static int cmd_status(void *arg, int argc, char **argv, FILE *out, FILE *err)
{
	(void)err;
	struct daemon *d = arg;
	struct snapshot *s = snapshot_get(&d->snapshots);
	struct status_view v = {
		.version = PARTDNS_VERSION,
		.config = d->conf_path,
		.user = d->user,
		.started = d->started,
		.uptime = (uint64_t)(time(NULL) - d->started),
		.plan_serial = s->conf->partitions.serial,
		.plan_digest = s->conf->partitions.digest,
		.partitions = ptable_size(s->conf->partitions.table),
		.edns_domains = domains_count(s->domains),
		.store_version = s->store_version,
	};
	char standby[2048] = "";
	size_t o = 0;
	for (unsigned id = 1; id <= ptable_size(s->conf->partitions.table); id++) {
		const char *to;
		if (standby_active(s->standby, id, &to) && o < sizeof(standby))
			o += (size_t)snprintf(standby + o, sizeof(standby) - o, "%s%s>%s", o ? " " : "",
			                      ptable_name(s->conf->partitions.table, id), to);
	}
	v.standby = standby;
	v.fleet_on = d->fleet != NULL;
	fleet_status(d->fleet, &v.fleet);
	pthread_mutex_lock(&d->next_lock);
	v.next_serial = d->next ? d->next->partitions.serial : 0;
	v.next_at = d->next_at;
	pthread_mutex_unlock(&d->next_lock);
	pthread_mutex_lock(&d->reload_lock);
	v.plan_source = d->plan_from_store ? "store" : "config";
	v.reloads = d->reloads;
	v.reload_failures = d->reload_failures;
	v.last_reload = d->last_reload;
	v.last_reload_ok = d->last_reload_ok;
	pthread_mutex_unlock(&d->reload_lock);
	v.snapshot = s->conf->cache.snapshot;
	v.snap_last = atomic_load(&d->snap_last);
	v.snap_entries = atomic_load(&d->snap_last_entries);
	v.snap_bytes = atomic_load(&d->snap_last_bytes);
	stats_write_status(out, argc >= 2 && strcmp(argv[1], "json") == 0, &v);
	snapshot_release(s);
	return 0;
}

static int cmd_reload(void *arg, int argc, char **argv, FILE *out, FILE *err)
{
	if (argc != 1) {
		fprintf(err, "reload takes no arguments\n");
		return -EINVAL;
	}
	if (reload_run(arg, err) != 0)
		return -EINVAL;
	fprintf(out, "reloaded\n");
	return 0;
}

int ctl_verbs_register(struct daemon *d)
{
	static const struct {
		const char *verb;
		control_fn fn;
	} verbs[] = {
		{ "stats", cmd_stats },   { "cache", cmd_cache },         { "query", cmd_query },
		{ "reload", cmd_reload }, { "status", cmd_status },       { "unmatched", cmd_unmatched },
		{ "steering", cmd_steering },
	};
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
		int rc = control_register(d->control, verbs[i].verb, verbs[i].fn, d);
		if (rc != 0)
			return rc;
	}
	return 0;
}
