/* SPDX-License-Identifier: BSD-3-Clause */
/* The daemon: builds and runs every part, takes signals, reloads, watches the store, serves control commands. */
#include "resolver/ops/daemon.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pwd.h>
#include <malloc.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "store/store_etcd.h"
#include "control/server.h"
#include "partition/partition.h"
#include "resolver/cache/cache.h"
#include "resolver/view/chainhint.h"
#include "resolver/base/clock.h"
#include "resolver/base/dnstap.h"
#include "resolver/ops/fleet.h"
#include "resolver/cache/inflight.h"
#include "resolver/ops/inspect.h"
#include "resolver/ops/probe.h"
#include "resolver/base/log.h"
#include "resolver/ops/metrics.h"
#include "resolver/ops/metrics_http.h"
#include "resolver/base/net.h"
#include "resolver/base/privs.h"
#include "resolver/ops/publish.h"
#include "resolver/pool/resolve_edns.h"
#include "resolver/pool/resolve_normal.h"
#include "resolver/xfr/rpz_xfr.h"
#include "resolver/view/route.h"
#include "resolver/view/snapshot.h"
#include "resolver/view/standby.h"
#include "resolver/ops/stats.h"
#include "resolver/pool/steering.h"
#include "resolver/pool/topk.h"
#include "resolver/base/ubctx.h"
#include "resolver/serve/worker.h"
#include "util/json.h"

struct daemon {
	char *conf_path;
	atomic_bool stopping;
	int stop_fd;                 /* eventfd: readable once stopping; every thread polls it */
	struct snapshot_slot snapshots;
	struct snapshot_conf *boot;  /* the config started with: what restart-only keys still are */
	pthread_mutex_t reload_lock; /* one reload at a time (SIGHUP, control, store poll) */
	struct store *store;
	/* store.etcd: the local store mirrors the shared one (fleet.c); shared
	 * is the shared store itself, for activating a staged plan fleet-wide */
	struct fleet *fleet;
	struct store *shared;
	atomic_bool plan_changed;    /* the mirror brought a new activated plan: reload */
	pthread_t main_thread;       /* daemon_new's and daemon_run's: fleet_changed wakes it */
	unsigned fleet_serial;       /* the plan serial last told to the fleet */
	time_t activate_retry;       /* a fleet activation that failed is tried again from then */
	struct cache *cache;
	struct chainhint *hints; /* chain hints for the workers (query.c) */
	struct inflight *inflight;
	struct resolve_normal *normal;
	struct resolve_edns *edns;
	unsigned nworkers;
	struct worker **workers;
	struct dnstap *dnstap;       /* server.dnstap; NULL when off */
	struct probe *probe;         /* partdnsctl query */
	struct control *control;
	struct metrics_http *metrics; /* server.metrics; NULL when off */
	struct rpz_xfr *rpz_xfr;      /* policy zones from primaries (rpz[].primary), their NOTIFYs */
	struct http_server *http;    /* server.http: the plan for CDNs; NULL when off */
	_Atomic time_t plan_since;   /* when the running partition plan went live (Last-Modified) */
	bool plan_from_store;        /* running an activated plan the config does not hold yet (reload_lock) */
	/* the staged plan (partdnsctl plan stage), for /next/ and its activation; next_lock */
	pthread_mutex_t next_lock;
	struct conf *next;           /* the config with the staged plan in place of its include; NULL = none */
	time_t next_staged, next_at; /* when staged; when it goes live (0 = not asked yet) */
	time_t started;
	char user[64];               /* who it runs as (server.user, or whoever started it) */
	/* reloads (SIGHUP, partdnsctl reload), under reload_lock */
	uint64_t reloads, reload_failures;
	time_t last_reload;
	bool last_reload_ok;
};

void daemon_stop(struct daemon *d)
{
	atomic_store(&d->stopping, true);
	uint64_t one = 1;
	ssize_t w = write(d->stop_fd, &one, sizeof(one));
	(void)w;
}

static int load_domains(struct daemon *d, struct domains **out, uint64_t *version)
{
	int rc = domains_load(d->store, out, version);
	if (rc != 0)
		log_err("cannot read EDNS domains from the store: %s", store_strerror(rc));
	return rc;
}

struct standby_list {
	struct store_standby *b;
	size_t n, cap;
};

static int standby_collect(const struct store_standby *b, void *arg)
{
	struct standby_list *l = arg;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		struct store_standby *nb = realloc(l->b, cap * sizeof(*nb));
		if (nb == NULL)
			return -ENOMEM;
		l->b = nb;
		l->cap = cap;
	}
	l->b[l->n++] = *b;
	return 0;
}

/*
 * The partitions failed over, for the plan in c. A store that cannot be
 * read leaves every partition on its own identity (logged): steering by the
 * normal plan beats not steering.
 */
static struct standby *load_standby(struct daemon *d, const struct conf *c)
{
	struct standby_list l = { .n = 0 };
	int rc = store_standby_foreach(d->store, standby_collect, &l);
	if (rc != 0)
		log_err("cannot read every failed-over partition from the store: %s", store_strerror(rc));
	struct standby *s = standby_build(c, l.b, l.n);
	free(l.b);
	return s;
}

/* ---- control commands ---- */

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

/* The cache's tag of an entry: the partition its key belongs to. */
static unsigned cache_tag(const uint8_t *key, size_t klen)
{
	return klen >= ROUTE_KEY_HDR ? route_key_partition(key) : PARTITION_MAX + 1;
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
static int publish(void *arg, const char *path, FILE *out, struct http_page *page)
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
static int collect_metrics(void *arg, FILE *out)
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

/* "cache flush [name=NAME] [partition=P]", "cache lookup name=NAME [type=T] [partition=P]" */
static int cmd_cache(void *arg, int argc, char **argv, FILE *out, FILE *err)
{
	struct daemon *d = arg;
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
	size_t k = 0;
	for (unsigned i = 0; i < d->nworkers; i++)
		k += topk_read(worker_unmatched(d->workers[i]), items + k, TOPK_SLOTS);
	k = topk_merge(items, k);
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
	if (daemon_reload(arg, err) != 0)
		return -EINVAL;
	fprintf(out, "reloaded\n");
	return 0;
}

static void control_log(int level, const char *msg)
{
	log_msg((enum log_level)level, "%s", msg);
}

/* ---- life cycle ---- */

/* Sockets for queries in flight: take every descriptor the hard limit allows. */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			log_warn("cannot raise the open-file limit: %s", strerror(errno));
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 16384)
		log_warn("open-file limit %llu: under a flood of misses the resolution pools may run out of "
		         "sockets (LimitNOFILE= in the systemd unit, ulimit -n)", (unsigned long long)rl.rlim_cur);
}

/* An address already served is an accidental second instance, unless the operator takes over on purpose. */
static int check_listen_free(const struct conf *c, bool takeover)
{
	for (size_t i = 0; i < c->server.nlisten; i++) {
		const struct conf_addr *a = &c->server.listen[i];
		int rc = net_in_use(a);
		if (rc == 1 && !takeover) {
			log_err("cannot listen on %s: the address is in use (another partdns?); stop it first, or start "
			        "with --takeover to share the address during an upgrade", a->text);
			return -EADDRINUSE;
		}
		if (rc == 1)
			log_info("--takeover: sharing %s with the process that serves it now", a->text);
	}
	return 0;
}

/*
 * Every source address must be on this machine: libunbound binds them only
 * when it sends, and a query that cannot be sent is just a SERVFAIL, so a
 * typo would show as failures of everything the pool resolves.
 */
static int check_outgoing(const struct conf *c)
{
	const struct {
		const char *key;
		const struct conf_addr *list;
		size_t n;
	} pools[] = { { "resolver.outgoing", c->resolver.outgoing, c->resolver.noutgoing },
	              { "edns.outgoing", c->edns.outgoing, c->edns.noutgoing } };
	int rc = 0;
	for (size_t p = 0; p < sizeof(pools) / sizeof(pools[0]); p++) {
		for (size_t i = 0; i < pools[p].n; i++) {
			int e = net_source_check(&pools[p].list[i]);
			if (e == -EADDRNOTAVAIL)
				log_err("%s: %s is not an address of this machine (no interface has it); add it to an "
				        "interface or remove it from %s", pools[p].key, pools[p].list[i].text, pools[p].key);
			else if (e != 0)
				log_err("%s: cannot send from %s: %s", pools[p].key, pools[p].list[i].text, strerror(-e));
			if (e != 0)
				rc = e;
		}
	}
	return rc;
}

/*
 * The store belongs to the user the daemon becomes: LMDB opens its lock file
 * again in new reader processes and the map grows by writes. The directory
 * and LMDB's two files only; anything else in it is the operator's.
 */
static int own_store(const struct privs *p, const char *dir)
{
	static const char *const files[] = { "", "/data.mdb", "/lock.mdb" };
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s%s", dir, files[i]);
		int e = privs_own(p, path, false, i == 0 ? 0750 : 0640);
		if (e != 0 && !(e == -ENOENT && i > 0)) {
			log_err("server.store: cannot give %s to %s: %s", path, p->user, strerror(-e));
			return e;
		}
	}
	return 0;
}

/*
 * From the mirror thread: the local store changed (plan: a plan record).
 * Wake the main thread, which polls the store every 250 ms otherwise, so a
 * change made on another node is served here within milliseconds.
 */
static void fleet_changed(void *arg, bool plan)
{
	struct daemon *d = arg;
	if (plan)
		atomic_store(&d->plan_changed, true);
	pthread_kill(d->main_thread, SIGUSR2);
}

/*
 * store.etcd: mirror the shared store into the local one and register this
 * node (fleet.c). Started before the first snapshot is read, so a node whose
 * local copy is empty (a new node) copies the shared store first; a node
 * that cannot reach etcd serves from what it has.
 */
static int fleet_begin(struct daemon *d, const struct conf *c)
{
	if (store_etcd_open(c, &d->shared) != 0) {
		log_err("store.etcd: %s", store_remote_error());
		return -1;
	}
	return fleet_start(c, d->store, fleet_changed, d, &d->fleet);
}

/*
 * The plan to run: the config's, or an activated staged plan the config
 * does not hold yet (its serial is higher), read from the store with the
 * rest of the config. Once the config's own serial reaches it, the store's
 * copy goes: the config is the source of truth again. Takes c, returns the
 * config to run (c itself, or c replaced).
 */
static struct conf *adopt_active_plan(struct daemon *d, struct conf *c, FILE *err)
{
	struct store_plan p;
	int rc = store_plan_get(d->store, STORE_PLAN_ACTIVE, &p);
	d->plan_from_store = false;
	if (rc != 0) {
		if (rc != -ENOENT)
			log_err("cannot read the activated plan from the store: %s", store_strerror(rc));
		return c;
	}
	if (c->partitions.serial >= p.serial) {
		if (d->shared != NULL) { /* the fleet's copy: not this node's to remove */
			store_plan_clear(&p);
			return c;
		}
		log_info("the config's plan (serial %u) has caught up with the activated plan %u: the store's copy "
		         "is removed", c->partitions.serial, p.serial);
		store_plan_del(d->store, STORE_PLAN_ACTIVE);
		store_plan_clear(&p);
		return c;
	}
	struct conf *a = NULL;
	unsigned nerr = 0;
	rc = conf_load_plan(d->conf_path, p.text, p.len, "(activated plan)", err ? err : stderr, &a, &nerr);
	if (rc != 0) {
		log_err("the activated plan %u no longer fits the config (%u error(s)); running the config's plan %u",
		        p.serial, nerr, c->partitions.serial);
		store_plan_clear(&p);
		return c;
	}
	log_warn("running the activated plan %u from the store; the config's is %u: put the plan in its "
	         "partitions.include so the config says what runs", p.serial, c->partitions.serial);
	store_plan_clear(&p);
	conf_free(c);
	d->plan_from_store = true;
	return a;
}

/* Read the staged plan (if any) for /next/ and its activation. */
static void load_next_plan(struct daemon *d)
{
	struct store_plan p;
	struct conf *n = NULL;
	int rc = store_plan_get(d->store, STORE_PLAN_NEXT, &p);
	if (rc == 0) {
		unsigned nerr = 0;
		if (conf_load_plan(d->conf_path, p.text, p.len, "(staged plan)", NULL, &n, &nerr) != 0)
			log_err("the staged plan %u does not fit the config (%u error(s)): not published, not activated; "
			        "stage it again", p.serial, nerr);
	} else if (rc != -ENOENT) {
		log_err("cannot read the staged plan from the store: %s", store_strerror(rc));
	}
	pthread_mutex_lock(&d->next_lock);
	struct conf *old = d->next;
	d->next = n;
	d->next_staged = n ? (time_t)p.staged_at : 0;
	d->next_at = n ? (time_t)p.activate_at : 0;
	pthread_mutex_unlock(&d->next_lock);
	conf_free(old);
	if (rc == 0)
		store_plan_clear(&p);
}

/*
 * The signals daemon_run takes with sigtimedwait. Every thread must block
 * them: one is delivered to any thread that does not, and a thread that
 * does not handle SIGHUP or SIGTERM ends the whole process with it.
 */
static void daemon_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGPIPE);
	sigaddset(set, SIGUSR2); /* a wake-up: poll the store now (fleet_changed) */
}

struct daemon *daemon_new(const char *conf_path, struct conf *c, bool takeover)
{
	/* before the first thread (fleet, dnstap's writer, libcurl's and
	 * libmicrohttpd's): threads inherit the mask */
	sigset_t set;
	daemon_signals(&set);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	struct daemon *d = calloc(1, sizeof(*d));
	if (d == NULL) {
		conf_free(c);
		return NULL;
	}
	d->main_thread = pthread_self(); /* runs daemon_run: takes the signals */
	struct privs privs;
	char why[512];
	if (privs_plan(c->server.user, c->server.control_group, false, &privs, why, sizeof(why)) != 0) {
		log_err("%s", why);
		conf_free(c);
		free(d);
		return NULL;
	}
	if (check_listen_free(c, takeover) != 0 || check_outgoing(c) != 0) {
		conf_free(c);
		free(d);
		return NULL;
	}
	raise_fd_limit();
	d->conf_path = strdup(conf_path); /* before the store: an activated plan is read with the config */
	d->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	snapshot_slot_init(&d->snapshots);
	pthread_mutex_init(&d->reload_lock, NULL);
	pthread_mutex_init(&d->next_lock, NULL);
	d->started = time(NULL);

	int rc = store_open(c->server.store, false, &d->store);
	if (rc != 0) {
		char msg[1024];
		log_err("cannot open the store: %s", store_message(rc, c->server.store, msg, sizeof(msg)));
		conf_free(c);
		goto fail;
	}
	if (privs.drop && own_store(&privs, c->server.store) != 0) {
		conf_free(c);
		goto fail;
	}
	c = adopt_active_plan(d, c, NULL);
	if (store_stale_readers(d->store) > 0)
		log_warn("store %s: freed %u reader slot(s) left by killed processes", c->server.store,
		         store_stale_readers(d->store));
	/* The daemon opens the store writable (it may create it), so an upgraded
	 * daemon migrates an older store's schema at start; say so, since an older
	 * partdns cannot open the store after that. */
	size_t nmigrated = 0;
	unsigned schema_from = store_migrated_from(d->store, &nmigrated);
	if (schema_from != 0)
		log_info("store %s: migrated from schema version %u to %d (%zu record(s) rewritten); an "
		         "older partdns cannot open it any more",
		         c->server.store, schema_from, STORE_SCHEMA, nmigrated);
	struct domains *dom;
	uint64_t version;
	if (load_domains(d, &dom, &version) != 0) {
		conf_free(c);
		goto fail;
	}
	log_info("%zu EDNS domain(s) from store %s", domains_count(dom), c->server.store);
	if (c->store.etcd.nendpoints > 0 && fleet_begin(d, c) != 0) {
		domains_free(dom);
		conf_free(c);
		goto fail;
	}
	if (snapshot_publish(&d->snapshots, c, dom, load_standby(d, c), version) != 0)
		goto fail;
	struct snapshot *first = snapshot_get(&d->snapshots);
	d->boot = snapshot_conf_hold(first);
	snapshot_release(first);
	load_next_plan(d);
	d->cache = cache_new(c->cache.max_bytes, 0);
	if (d->cache == NULL || cache_set_tags(d->cache, PARTITION_MAX + 1, cache_tag) != 0) {
		log_err("cannot create the cache (cache.max_bytes %llu)", (unsigned long long)c->cache.max_bytes);
		goto fail;
	}
	cache_set_stale(d->cache, c->cache.serve_stale ? INFLIGHT_STALE_MAX : 0);
	/* a word per 4 KiB of cache: more than one per entry that can chain */
	if ((d->hints = chainhint_new(c->cache.max_bytes / 4096)) == NULL)
		goto fail;
	d->inflight = inflight_new(d->cache, &d->snapshots);
	/* the same count: each listener resolves its own misses in its loop (resolve_normal.c) */
	d->normal = resolve_normal_new(c, &d->snapshots, d->stop_fd, c->resolver.threads == c->server.threads);
	d->edns = resolve_edns_new(c, d->stop_fd);
	if (d->inflight == NULL || d->normal == NULL || d->edns == NULL)
		goto fail;
	d->nworkers = c->server.threads ? c->server.threads : 1;
	d->workers = calloc(d->nworkers, sizeof(*d->workers));
	if (d->workers == NULL)
		goto fail;
	if (c->server.dnstap[0] != '\0') {
		/* a queue per thread that logs: the workers, then the EDNS pool's threads */
		d->dnstap = dnstap_new(c->server.dnstap, d->nworkers + (c->edns.threads ? c->edns.threads : 1));
		if (d->dnstap == NULL)
			goto fail;
		resolve_edns_set_dnstap(d->edns, d->dnstap, d->nworkers);
		log_info("dnstap to %s (client queries and replies, the EDNS pool's upstream queries)", c->server.dnstap);
	}
	/* before the workers: their listeners take NOTIFYs for it */
	if ((d->rpz_xfr = rpz_xfr_new(&d->snapshots)) == NULL)
		goto fail;
	struct worker_env env = { .snapshots = &d->snapshots, .cache = d->cache, .hints = d->hints, .inflight = d->inflight,
	                          .normal = d->normal, .edns = d->edns, .stop_fd = d->stop_fd, .dnstap = d->dnstap,
	                          .rpz_xfr = d->rpz_xfr };
	for (unsigned i = 0; i < d->nworkers; i++) {
		d->workers[i] = worker_new(&env, i, c);
		if (d->workers[i] == NULL)
			goto fail;
	}
	if (c->server.control && c->server.control[0]) {
		control_set_log(control_log);
		if (takeover)
			unlink(c->server.control); /* the old daemon keeps serving on its unlinked socket until it stops */
		d->probe = probe_new(&d->snapshots, d->cache, d->inflight, d->normal, d->edns);
		d->control = d->probe != NULL ? control_new(c->server.control, d->stop_fd) : NULL;
		if (d->control == NULL || control_register(d->control, "stats", cmd_stats, d) != 0 ||
		    control_register(d->control, "cache", cmd_cache, d) != 0 ||
		    control_register(d->control, "query", cmd_query, d) != 0 ||
		    control_register(d->control, "reload", cmd_reload, d) != 0 ||
		    control_register(d->control, "status", cmd_status, d) != 0 ||
		    control_register(d->control, "unmatched", cmd_unmatched, d) != 0 ||
		    control_register(d->control, "steering", cmd_steering, d) != 0)
			goto fail;
		/* the user's (the daemon reads it after the drop), the control group's (root and operators) */
		int e = privs_own(&privs, c->server.control, true, 0660);
		if (e != 0) {
			log_err("server.control: cannot give %s to %s: %s", c->server.control, privs.user, strerror(-e));
			goto fail;
		}
	}
	/* bound now, after the listeners, so a busy metrics address fails the start; served from daemon_run */
	if (c->server.metrics.len > 0) {
		d->metrics = metrics_http_new(&c->server.metrics, takeover, collect_metrics, d);
		if (d->metrics == NULL)
			goto fail;
	}
	atomic_store(&d->plan_since, d->started);
	if (c->server.http.len > 0) {
		d->http = http_new("server.http", &c->server.http, takeover, c->server.http_allow, c->server.nhttp_allow,
		                   publish, d, PUBLISH_PATHS);
		if (d->http == NULL)
			goto fail;
	}
	/* Everything that needs root (port 53, the store's files, the socket) is
	 * done; no thread serves yet. */
	int e = privs_drop(&privs);
	if (e != 0) {
		log_err("cannot become user %s: %s", privs.user, strerror(-e));
		goto fail;
	}
	if (privs.drop)
		log_info("running as user %s (uid %u, gid %u)", privs.user, (unsigned)privs.uid, (unsigned)privs.gid);
	if (ubctx_check_files(snapshot_conf_get(d->boot), why, sizeof(why)) != 0) {
		log_err("%s%s", why, privs.drop ? " (as the user partdns runs as)" : "");
		goto fail;
	}
	struct passwd *pw = getpwuid(geteuid());
	if (pw != NULL)
		snprintf(d->user, sizeof(d->user), "%s", pw->pw_name);
	else
		snprintf(d->user, sizeof(d->user), "uid %u", (unsigned)geteuid());
	return d;
fail:
	daemon_free(d);
	return NULL;
}

void daemon_free(struct daemon *d)
{
	if (d == NULL)
		return;
	metrics_http_free(d->metrics); /* first: a scrape reads the workers and pools */
	http_free(d->http);
	control_free(d->control);
	/* Pools fail their unfinished jobs into the workers' queues, which
	 * worker_free then drains: pools go first. */
	resolve_normal_free(d->normal);
	resolve_edns_free(d->edns);
	probe_free(d->probe); /* after the pools: they end its last waiter, if any */
	if (d->workers)
		for (unsigned i = 0; i < d->nworkers; i++)
			worker_free(d->workers[i]);
	free(d->workers);
	rpz_xfr_free(d->rpz_xfr); /* after the workers: they hand it NOTIFYs */
	dnstap_free(d->dnstap); /* after every thread that logs */
	inflight_free(d->inflight);
	cache_free(d->cache);
	chainhint_free(d->hints);
	fleet_stop(d->fleet); /* before the local store it writes */
	store_close(d->shared);
	snapshot_slot_deinit(&d->snapshots);
	snapshot_conf_release(d->boot);
	conf_free(d->next);
	pthread_mutex_destroy(&d->next_lock);
	if (d->store)
		store_close(d->store);
	if (d->stop_fd >= 0)
		close(d->stop_fd);
	free(d->conf_path);
	free(d);
}

struct plan_change {
	const struct conf *old, *neu;
	const struct standby *old_standby;
	struct standby *neu_standby;
};

/*
 * A cache entry's partition under the new plan: partitions are known by
 * name, so one that kept its name and mapped identities keeps its answers
 * under whatever id it has now (1: moved); one renamed, gone or steered
 * to another identity loses them (-1); the rest stay (0).
 */
static int rekey_partitions(const uint8_t *key, size_t klen, uint8_t *out, void *arg)
{
	const struct plan_change *pc = arg;
	if (klen < ROUTE_KEY_HDR)
		return 0;
	unsigned id = route_key_partition(key);
	if (id == PARTITION_COMMON)
		return 0;
	const char *name = ptable_name(pc->old->partitions.table, id);
	int nid = name != NULL ? ptable_find(pc->neu->partitions.table, name) : -1;
	if (nid <= 0 || !route_partition_equiv(pc->old, id, pc->neu, (unsigned)nid) ||
	    !standby_same(pc->old_standby, id, pc->neu_standby, (unsigned)nid))
		return -1;
	if ((unsigned)nid == id)
		return 0;
	memcpy(out, key, klen);
	route_key_set_partition(out, (unsigned)nid);
	return 1;
}

static bool addrs_same(const struct conf_addr *a, size_t na, const struct conf_addr *b, size_t nb)
{
	for (size_t i = 0; na == nb && i < na; i++)
		if (strcmp(a[i].text, b[i].text) != 0)
			return false;
	return na == nb;
}

static bool prefixes_same(const struct prefix *a, size_t na, const struct prefix *b, size_t nb)
{
	for (size_t i = 0; na == nb && i < na; i++)
		if (!prefix_equal(&a[i], &b[i]))
			return false;
	return na == nb;
}

static bool forward_zones_same(const struct conf *a, const struct conf *b)
{
	if (a->resolver.nforward_zones != b->resolver.nforward_zones)
		return false;
	for (size_t i = 0; i < a->resolver.nforward_zones; i++) {
		const struct conf_forward_zone *x = &a->resolver.forward_zones[i], *y = &b->resolver.forward_zones[i];
		if (strcmp(x->name, y->name) != 0 || !addrs_same(x->servers, x->nservers, y->servers, y->nservers))
			return false;
	}
	return true;
}

static bool options_same(const struct conf *a, const struct conf *b)
{
	if (a->resolver.noptions != b->resolver.noptions)
		return false;
	for (size_t i = 0; i < a->resolver.noptions; i++)
		if (strcmp(a->resolver.options[i].name, b->resolver.options[i].name) != 0 ||
		    strcmp(a->resolver.options[i].value, b->resolver.options[i].value) != 0)
			return false;
	return true;
}

/*
 * Keys that a running daemon cannot change, compared with the values it
 * started with (old): a key changed by an earlier reload and changed back is
 * no change, and one changed twice is still noted.
 */
static bool names_same(char *const *a, size_t na, char *const *b, size_t nb)
{
	for (size_t i = 0; na == nb && i < na; i++)
		if (strcmp(a[i], b[i]) != 0)
			return false;
	return na == nb;
}

static void note_restart_keys(const struct conf *old, const struct conf *neu, FILE *err)
{
	bool listen_same = old->server.nlisten == neu->server.nlisten;
	for (size_t i = 0; listen_same && i < old->server.nlisten; i++)
		listen_same = strcmp(old->server.listen[i].text, neu->server.listen[i].text) == 0;
	const char *what[24];
	int n = 0;
	if (!listen_same)
		what[n++] = "server.listen";
	if (old->server.threads != neu->server.threads)
		what[n++] = "server.threads";
	if (strcmp(old->server.store, neu->server.store) != 0)
		what[n++] = "server.store";
	if (old->cache.max_bytes != neu->cache.max_bytes)
		what[n++] = "cache.max_bytes";
	if (old->edns.threads != neu->edns.threads)
		what[n++] = "edns.threads";
	if (old->edns.max_inflight != neu->edns.max_inflight || old->edns.zone_qps != neu->edns.zone_qps)
		what[n++] = "edns.max_inflight/zone_qps"; /* the pool's budgets and rate table are sized at start */
	if (strcmp(old->server.user, neu->server.user) != 0) /* root is gone once dropped */
		what[n++] = "server.user";
	if (strcmp(old->server.control_group, neu->server.control_group) != 0 ||
	    strcmp(old->server.control, neu->server.control) != 0)
		what[n++] = "server.control/control_group";
	if (strcmp(old->server.dnstap, neu->server.dnstap) != 0) /* the writer and its queues are made at start */
		what[n++] = "server.dnstap";
	if (strcmp(old->server.metrics.text, neu->server.metrics.text) != 0)
		what[n++] = "server.metrics";
	if (strcmp(old->server.http.text, neu->server.http.text) != 0 ||
	    !prefixes_same(old->server.http_allow, old->server.nhttp_allow, neu->server.http_allow,
	                   neu->server.nhttp_allow))
		what[n++] = "server.http/http_allow";
	if (old->server.tcp_idle_ms != neu->server.tcp_idle_ms ||
	    old->server.tcp_max_clients != neu->server.tcp_max_clients ||
	    old->server.tcp_message_ms != neu->server.tcp_message_ms ||
	    old->server.tcp_out_max != neu->server.tcp_out_max ||
	    old->server.tcp_max_per_client != neu->server.tcp_max_per_client)
		what[n++] = "server.tcp_*";
	if (old->server.client_qps != neu->server.client_qps ||
	    old->server.client_prefix4 != neu->server.client_prefix4 ||
	    old->server.client_prefix6 != neu->server.client_prefix6)
		what[n++] = "server.client_qps/client_prefix4/client_prefix6";
	/* libunbound contexts and the EDNS pool take their sources when they are made */
	if (!addrs_same(old->resolver.outgoing, old->resolver.noutgoing, neu->resolver.outgoing,
	                neu->resolver.noutgoing))
		what[n++] = "resolver.outgoing";
	if (!addrs_same(old->edns.outgoing, old->edns.noutgoing, neu->edns.outgoing, neu->edns.noutgoing))
		what[n++] = "edns.outgoing";
	const struct conf_etcd *oe = &old->store.etcd, *ne = &neu->store.etcd;
	if (!addrs_same(oe->endpoints, oe->nendpoints, ne->endpoints, ne->nendpoints) ||
	    strcmp(oe->prefix, ne->prefix) != 0 || strcmp(oe->name, ne->name) != 0 ||
	    strcmp(oe->username, ne->username) != 0 || strcmp(oe->password_file, ne->password_file) != 0 ||
	    strcmp(oe->ca, ne->ca) != 0 || strcmp(oe->cert, ne->cert) != 0 || strcmp(oe->key, ne->key) != 0 ||
	    oe->timeout_ms != ne->timeout_ms || oe->lease_ttl != ne->lease_ttl)
		what[n++] = "store.etcd"; /* the mirror and registration threads are made at start */
	if (!addrs_same(old->edns.tier, old->edns.ntier, neu->edns.tier, neu->edns.ntier))
		what[n++] = "edns.tier"; /* the EDNS pool's node table and probes are made at start */
	if (strcmp(old->resolver.root_hints, neu->resolver.root_hints) != 0 ||
	    !names_same(old->resolver.trust_anchor, old->resolver.ntrust_anchor, neu->resolver.trust_anchor,
	                neu->resolver.ntrust_anchor) ||
	    !forward_zones_same(old, neu) || !options_same(old, neu) || old->resolver.threads != neu->resolver.threads ||
	    old->resolver.zone_qps != neu->resolver.zone_qps || old->resolver.zone_inflight != neu->resolver.zone_inflight ||
	    !names_same(old->resolver.domain_insecure, old->resolver.ndomain_insecure, neu->resolver.domain_insecure,
	                neu->resolver.ndomain_insecure))
		what[n++] = "resolver.* (libunbound)";
	for (int i = 0; i < n; i++) {
		log_warn("reload: %s changed; it takes effect at the next restart", what[i]);
		if (err)
			fprintf(err, "note: %s changed; it takes effect at the next restart\n", what[i]);
	}
}

_Static_assert((int)CONF_LOG_ERROR == (int)LOG_LEVEL_ERR && (int)CONF_LOG_DEBUG == (int)LOG_LEVEL_DEBUG,
               "server.log_level maps onto log levels one to one");

void daemon_apply_log(const struct conf *c)
{
	log_set_level((enum log_level)c->server.log_level);
	log_use_syslog(c->server.log == CONF_LOG_SYSLOG);
}

/* The end of a reload, whichever it was: for partdnsctl status. Under reload_lock. */
static int reload_done(struct daemon *d, int rc)
{
	d->reloads++;
	d->reload_failures += rc != 0;
	d->last_reload = time(NULL);
	d->last_reload_ok = rc == 0;
	pthread_mutex_unlock(&d->reload_lock);
	return rc;
}

int daemon_reload(struct daemon *d, FILE *err)
{
	pthread_mutex_lock(&d->reload_lock);
	struct conf *c = NULL;
	unsigned nerr = 0;
	int rc = conf_load(d->conf_path, err ? err : stderr, &c, &nerr);
	if (rc != 0) {
		log_err("reload of %s failed (%u error(s)); keeping the running configuration", d->conf_path, nerr);
		return reload_done(d, rc);
	}
	c = adopt_active_plan(d, c, err);
	struct snapshot *cur = snapshot_get(&d->snapshots);
	char why[512];
	if (conf_plan_successor(cur->conf, c, why, sizeof(why)) != 0) {
		log_err("reload of %s refused: %s; keeping the running configuration", d->conf_path, why);
		if (err)
			fprintf(err, "%s: error: %s\n", d->conf_path, why);
		snapshot_release(cur);
		conf_free(c);
		return reload_done(d, CONF_E_INVALID);
	}
	note_restart_keys(snapshot_conf_get(d->boot), c, err);
	struct domains *dom;
	uint64_t version;
	rc = load_domains(d, &dom, &version);
	if (rc != 0) {
		snapshot_release(cur);
		conf_free(c);
		if (err)
			fprintf(err, "cannot read the store: %s\n", store_strerror(rc));
		return reload_done(d, rc);
	}
	size_t nparts = ptable_size(c->partitions.table), ndom = domains_count(dom);
	const struct conf *neu = c;
	/*
	 * Partition ids may change meaning: answers of a partition that kept
	 * its name and identity follow it to its new id, the others go. They
	 * leave before the new plan is live (no client of the new plan finds
	 * another city's answer under a reused id) and come back after it.
	 * Meanwhile partition jobs store nothing (inflight_plan_switch); jobs
	 * of the old plan finishing later check their partition's meaning
	 * before they store (inflight.c).
	 */
	struct plan_change pc = { .old = cur->conf, .neu = neu, .old_standby = cur->standby,
	                          .neu_standby = load_standby(d, neu) };
	size_t flushed = 0, moved = 0;
	inflight_plan_switch(d->inflight, true);
	struct cache_moves *moves = cache_rekey_take(d->cache, rekey_partitions, &pc, &flushed);
	rc = snapshot_publish(&d->snapshots, c, dom, pc.neu_standby, version);
	if (rc == 0)
		moved = cache_rekey_put(d->cache, moves, clock_sec());
	else
		cache_moves_free(moves); /* the old plan stays: their new keys mean nothing to it */
	inflight_plan_switch(d->inflight, false);
	if (rc == 0 && neu->partitions.digest != cur->conf->partitions.digest)
		atomic_store(&d->plan_since, time(NULL)); /* Last-Modified of the published plan */
	if (rc == 0) { /* serve-stale on or off: expired answers kept or reaped from now on */
		cache_set_stale(d->cache, neu->cache.serve_stale ? INFLIGHT_STALE_MAX : 0);
		daemon_apply_log(neu); /* server.log and log_level take effect at once */
	}
	snapshot_release(cur);
	unsigned serial = neu->partitions.serial; /* neu is the snapshot's now; read it before the lock goes */
	reload_done(d, rc);
	if (rc == 0)
		log_info("reloaded %s: %zu partition(s) (plan serial %u), %zu EDNS domain(s); %zu cache entries of "
		         "changed or removed partitions dropped, %zu of renumbered ones kept",
		         d->conf_path, nparts, serial, ndom, flushed, moved);
	return rc;
}

struct standby_change {
	const struct standby *old, *neu;
};

/* Entries of a partition that changed between its own identity and a standby one. */
static bool standby_switched(const uint8_t *key, size_t klen, void *arg)
{
	const struct standby_change *sc = arg;
	if (klen < ROUTE_KEY_HDR)
		return false;
	unsigned id = route_key_partition(key);
	return id != PARTITION_COMMON && !standby_same(sc->old, id, sc->neu, id);
}

/* A store change (partdnsctl domain add/del, partition failover/failback): swap in the new sets. */
static void poll_store(struct daemon *d)
{
	uint64_t v;
	if (store_version(d->store, &v) != 0)
		return;
	struct snapshot *cur = snapshot_get(&d->snapshots);
	bool changed = v != cur->store_version;
	snapshot_release(cur);
	if (!changed)
		return;
	pthread_mutex_lock(&d->reload_lock);
	struct domains *dom;
	uint64_t version;
	if (load_domains(d, &dom, &version) == 0) {
		size_t n = domains_count(dom);
		cur = snapshot_get(&d->snapshots);
		struct standby *sb = load_standby(d, cur->conf);
		/* A partition switched to or from its standby: its flagged answers
		 * were fetched with the other identity. They go before the switch,
		 * and no partition answer is stored during it (as for a reload);
		 * jobs of the old identity finishing later see that it changed
		 * (inflight.c) and store nothing. */
		struct standby_change sc = { .old = cur->standby, .neu = sb };
		inflight_plan_switch(d->inflight, true);
		size_t flushed = cache_flush(d->cache, standby_switched, &sc);
		size_t nsb = standby_count(sb);
		int rc = snapshot_publish(&d->snapshots, NULL, dom, sb, version);
		inflight_plan_switch(d->inflight, false);
		snapshot_release(cur);
		if (rc == 0)
			log_info("store changed (version %llu): %zu EDNS domain(s), %zu partition(s) on standby; %zu "
			         "cache entries of switched partitions dropped",
			         (unsigned long long)version, n, nsb, flushed);
	}
	pthread_mutex_unlock(&d->reload_lock);
	load_next_plan(d);
}

/* A transfer wrote a policy zone's file: publish the running config with its zones re-read. */
static void poll_rpz(struct daemon *d)
{
	if (!rpz_xfr_take_changed(d->rpz_xfr))
		return;
	pthread_mutex_lock(&d->reload_lock);
	struct domains *dom;
	uint64_t version;
	if (load_domains(d, &dom, &version) == 0) {
		struct snapshot *cur = snapshot_get(&d->snapshots);
		struct standby *sb = load_standby(d, cur->conf);
		snapshot_release(cur);
		if (snapshot_publish_rpz(&d->snapshots, dom, sb, version) != 0)
			log_err("cannot take the transferred policy zone: out of memory (the running version stays)");
	}
	pthread_mutex_unlock(&d->reload_lock);
}

/* A new activated plan from the fleet runs (a reload); the registration says which serial runs. */
static void poll_fleet(struct daemon *d)
{
	if (d->fleet == NULL)
		return;
	if (atomic_exchange(&d->plan_changed, false)) {
		log_info("fleet: the shared plan changed: reloading");
		if (daemon_reload(d, NULL) != 0)
			log_err("fleet: the shared plan could not go live; the running plan stays (see above)");
	}
	struct snapshot *s = snapshot_get(&d->snapshots);
	unsigned serial = s->conf->partitions.serial;
	snapshot_release(s);
	if (serial != d->fleet_serial) {
		fleet_set_serial(d->fleet, serial);
		d->fleet_serial = serial;
	}
}

/*
 * In a fleet the staged plan goes live in the shared store: one node's
 * transaction moves it (the others' find it gone), and every node's mirror
 * then brings the activated plan and reloads (fleet_changed).
 */
static void activate_shared(struct daemon *d, unsigned serial)
{
	if (time(NULL) < d->activate_retry)
		return;
	int rc = store_plan_activate(d->shared, (int64_t)time(NULL));
	char msg[512];
	if (rc == 0) {
		log_info("activated the staged plan %u in the shared store; every node takes it from there", serial);
	} else if (rc == -ENOENT) {
		log_info("the staged plan %u was activated by another node", serial);
	} else {
		/* etcd busy or away: again in 2 s (another node may do it first) */
		log_err("cannot activate the staged plan %u in the shared store: %s (again in 2 s)", serial,
		        store_message(rc, NULL, msg, sizeof(msg)));
		d->activate_retry = time(NULL) + 2;
		return;
	}
	pthread_mutex_lock(&d->next_lock);
	d->next_at = 0; /* not again every tick: the mirror brings the outcome */
	pthread_mutex_unlock(&d->next_lock);
}

/*
 * The staged plan's time has come (partdnsctl plan activate): the store
 * makes it the active plan in one transaction, and a reload runs it
 * (adopt_active_plan), with everything a reload checks and keeps.
 */
static void activate_due(struct daemon *d)
{
	pthread_mutex_lock(&d->next_lock);
	bool due = d->next != NULL && d->next_at != 0 && time(NULL) >= d->next_at;
	unsigned serial = d->next ? d->next->partitions.serial : 0;
	pthread_mutex_unlock(&d->next_lock);
	if (!due)
		return;
	if (d->shared != NULL) {
		activate_shared(d, serial);
		return;
	}
	int rc = store_plan_activate(d->store, (int64_t)time(NULL));
	if (rc != 0) {
		log_err("cannot activate the staged plan %u: %s", serial, store_strerror(rc));
		pthread_mutex_lock(&d->next_lock);
		d->next_at = 0; /* not again every tick; a new plan activate asks again */
		pthread_mutex_unlock(&d->next_lock);
		return;
	}
	log_info("activating the staged plan %u", serial);
	if (daemon_reload(d, NULL) != 0)
		log_err("the staged plan %u could not go live; the running plan stays (see above)", serial);
	load_next_plan(d); /* none staged now */
}

/*
 * SIGHUP under systemd (Type=notify): systemctl reload returns once the
 * reload is done, and says when it failed (the running state is kept).
 */
static void notify_reload(struct daemon *d)
{
	sd_notify(0, "RELOADING=1\nSTATUS=reloading");
	int rc = daemon_reload(d, NULL);
	if (rc != 0)
		sd_notify(0, "READY=1\nSTATUS=serving; the last reload failed, see the log");
	else
		sd_notify(0, "READY=1\nSTATUS=serving");
}

static bool stopping(struct daemon *d)
{
	return atomic_load_explicit(&d->stopping, memory_order_relaxed);
}

int daemon_run(struct daemon *d)
{
	sigset_t set;
	daemon_signals(&set); /* blocked since daemon_new: only this thread takes them */

	int rc = resolve_normal_start(d->normal);
	if (rc == 0)
		rc = resolve_edns_start(d->edns);
	for (unsigned i = 0; rc == 0 && i < d->nworkers; i++)
		rc = worker_start(d->workers[i]);
	if (rc == 0 && d->control)
		rc = control_start(d->control);
	if (rc == 0 && d->metrics && metrics_http_start(d->metrics) != 0)
		rc = -EIO;
	if (rc == 0 && d->http && http_start(d->http) != 0)
		rc = -EIO;
	/* always: a reload may add a primary later; without one it only looks, once a second */
	if (rc == 0 && rpz_xfr_start(d->rpz_xfr) != 0)
		rc = -ENOMEM;
	if (rc != 0) {
		log_err("cannot start threads: %s", strerror(-rc));
		daemon_stop(d);
	} else {
		struct snapshot *s = snapshot_get(&d->snapshots);
		for (size_t i = 0; i < s->conf->server.nlisten; i++)
			log_info("listening on %s (UDP, TCP)", s->conf->server.listen[i].text);
		log_info("ready: %u worker(s), %u resolver thread(s), %u EDNS thread(s), %zu partition(s)", d->nworkers,
		         s->conf->resolver.threads, s->conf->edns.threads, ptable_size(s->conf->partitions.table));
		if (d->http)
			log_info("publishing the partition plan on %s (HTTP GET /mapping.csv, /mapping.json, /geofeed.csv)",
			         s->conf->server.http.text);
		if (d->metrics) {
			log_info("serving metrics on %s (HTTP GET /metrics, /health)", s->conf->server.metrics.text);
			metrics_http_set_ready(d->metrics, true); /* /health: listeners, store and pools are up */
		}
		snapshot_release(s);
		sd_notifyf(0, "READY=1\nMAINPID=%lu\nSTATUS=serving", (unsigned long)getpid());
	}

	/*
	 * Signals and the store are polled here: every 250 ms, and at once when
	 * the fleet's mirror wrote a change (SIGUSR2), but then at most every
	 * 100 ms, so a burst of changes (an import on another node) does not
	 * rebuild the domain set for each one.
	 */
	const uint64_t tick_ns = 250000000ull, min_poll_ns = 100000000ull;
	uint64_t next_tick = 0, last_poll = 0;
	unsigned ticks = 0;
	bool due = true;
	while (!stopping(d)) {
		uint64_t now = clock_ns();
		if (now >= next_tick) {
			/* After a burst (a flood of misses, a big reload) glibc keeps the
			 * freed memory; give it back every 10 s so RSS follows the load. */
			cache_reap(d->cache, clock_sec(), 4); /* every shard every 4 s at 250 ms a tick */
			if (++ticks % 40 == 0)
				malloc_trim(0);
			next_tick = now + tick_ns;
		}
		if (due && now - last_poll >= min_poll_ns) {
			poll_store(d);
			poll_rpz(d);
			activate_due(d);
			poll_fleet(d);
			last_poll = now;
			due = false;
		}
		uint64_t wait_ns = due ? last_poll + min_poll_ns - now : next_tick - now;
		if (wait_ns > tick_ns)
			wait_ns = tick_ns;
		struct timespec wait = { .tv_sec = 0, .tv_nsec = (long)wait_ns };
		int sig = sigtimedwait(&set, NULL, &wait);
		if (sig == SIGINT || sig == SIGTERM) {
			log_info("signal %d: shutting down", sig);
			daemon_stop(d);
		} else if (sig == SIGHUP) {
			log_info("SIGHUP: reloading");
			notify_reload(d);
		} else {
			due = true; /* the tick, or a wake-up */
		}
	}
	sd_notify(0, "STOPPING=1");
	if (d->metrics) /* /health says 503 while shutting down; /metrics still answers */
		metrics_http_set_ready(d->metrics, false);
	control_stop(d->control);
	rpz_xfr_stop(d->rpz_xfr); /* freed after the workers, which may still take a NOTIFY */
	for (unsigned i = 0; i < d->nworkers; i++)
		worker_join(d->workers[i]);
	resolve_normal_join(d->normal);
	resolve_edns_join(d->edns);
	log_info("stopped");
	return rc;
}
