/* SPDX-License-Identifier: BSD-3-Clause */
/* The server: snapshots, in-flight coalescing, job completion, reload, the main loop. */
#include "resolver/server.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "partition/partition.h"
#include "resolver/cache.h"
#include "resolver/chain.h"
#include "resolver/control.h"
#include "resolver/hash.h"
#include "resolver/core.h"
#include "resolver/log.h"
#include "resolver/pool.h"
#include "resolver/worker.h"

#define INFLIGHT_SHARDS 64
#define INFLIGHT_BUCKETS 1024

struct inflight_shard {
	pthread_mutex_t lock;
	struct job *buckets[INFLIGHT_BUCKETS];
};

struct server {
	char *conf_path;
	atomic_bool stopping;
	int stop_fd;
	pthread_mutex_t snap_lock;
	struct snapshot *snap;
	_Atomic uint64_t generation;
	pthread_mutex_t reload_lock; /* one reload at a time (SIGHUP, control, store poll) */
	struct store *store;
	struct cache *cache;
	unsigned nworkers;
	struct worker **workers;
	struct pool_normal *normal;
	struct pool_edns *edns;
	struct control *control;
	struct counters ctr;         /* events outside workers (atomic adds) */
	struct inflight_shard inflight[INFLIGHT_SHARDS];
	time_t started;
};

/* ---- time ---- */

uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint32_t now_sec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint32_t)ts.tv_sec;
}

/* ---- snapshots ---- */

static void confref_release(struct confref *r)
{
	if (r && atomic_fetch_sub(&r->refs, 1) == 1) {
		conf_free(r->conf);
		free(r);
	}
}

void snapshot_release(struct snapshot *s)
{
	if (s && atomic_fetch_sub(&s->refs, 1) == 1) {
		confref_release(s->cref);
		domains_free(s->domains);
		free(s);
	}
}

struct snapshot *server_snapshot(struct server *srv)
{
	pthread_mutex_lock(&srv->snap_lock);
	struct snapshot *s = srv->snap;
	atomic_fetch_add(&s->refs, 1);
	pthread_mutex_unlock(&srv->snap_lock);
	return s;
}

uint64_t server_snapshot_generation(struct server *srv)
{
	return atomic_load_explicit(&srv->generation, memory_order_acquire);
}

/* Publish a snapshot made of cref (a reference is taken) and domains (owned). */
static int publish(struct server *srv, struct confref *cref, struct domains *domains, uint64_t version)
{
	struct snapshot *s = calloc(1, sizeof(*s));
	if (s == NULL) {
		domains_free(domains);
		return -ENOMEM;
	}
	atomic_init(&s->refs, 1);
	atomic_fetch_add(&cref->refs, 1);
	s->cref = cref;
	s->conf = cref->conf;
	s->domains = domains;
	s->store_version = version;
	pthread_mutex_lock(&srv->snap_lock);
	struct snapshot *old = srv->snap;
	s->generation = (old ? old->generation : 0) + 1;
	srv->snap = s;
	atomic_store_explicit(&srv->generation, s->generation, memory_order_release);
	pthread_mutex_unlock(&srv->snap_lock);
	snapshot_release(old);
	return 0;
}

struct cache *server_cache(struct server *srv)
{
	return srv->cache;
}

bool server_stopping(struct server *srv)
{
	return atomic_load_explicit(&srv->stopping, memory_order_relaxed);
}

int server_stop_fd(struct server *srv)
{
	return srv->stop_fd;
}

unsigned server_worker_count(struct server *srv)
{
	return srv->nworkers;
}

struct counters *server_counters(struct server *srv)
{
	return &srv->ctr;
}

void server_stop(struct server *srv)
{
	atomic_store(&srv->stopping, true);
	uint64_t one = 1;
	ssize_t w = write(srv->stop_fd, &one, sizeof(one));
	(void)w;
}

/* ---- keys and in-flight jobs ---- */

size_t key_build(uint8_t *key, unsigned partition, uint16_t qtype, uint16_t qclass, uint8_t flags,
                 const uint8_t *qname_lc, size_t qname_len)
{
	key[0] = (uint8_t)(partition >> 8);
	key[1] = (uint8_t)partition;
	key[2] = (uint8_t)(qtype >> 8);
	key[3] = (uint8_t)qtype;
	key[4] = (uint8_t)(qclass >> 8);
	key[5] = (uint8_t)qclass;
	key[6] = flags;
	memcpy(key + KEY_HDR, qname_lc, qname_len);
	return KEY_HDR + qname_len;
}

static uint64_t key_hash(const uint8_t *k, size_t n)
{
	uint64_t h = hash_fnv1a(k, n);
	return h ^ (h >> 29);
}

int server_job_join(struct server *srv, const uint8_t *key, size_t klen, struct waiter *w, struct job **out)
{
	uint64_t h = key_hash(key, klen);
	struct inflight_shard *sh = &srv->inflight[h % INFLIGHT_SHARDS];
	size_t b = (h / INFLIGHT_SHARDS) % INFLIGHT_BUCKETS;
	pthread_mutex_lock(&sh->lock);
	for (struct job *j = sh->buckets[b]; j; j = j->hnext) {
		if (j->hash == h && j->klen == klen && memcmp(j->key, key, klen) == 0) {
			w->next = j->waiters;
			j->waiters = w;
			pthread_mutex_unlock(&sh->lock);
			return 0;
		}
	}
	struct job *j = calloc(1, sizeof(*j));
	if (j == NULL) {
		pthread_mutex_unlock(&sh->lock);
		/* No memory: fail this client alone. */
		w->result = NULL;
		worker_post(w->worker, w);
		return 0;
	}
	j->srv = srv;
	j->hash = h;
	memcpy(j->key, key, klen);
	j->klen = klen;
	j->waiters = w;
	w->next = NULL;
	j->start_ns = now_ns();
	j->hnext = sh->buckets[b];
	sh->buckets[b] = j;
	pthread_mutex_unlock(&sh->lock);
	*out = j;
	return 1;
}

/* Unlink job from the in-flight table and take its waiters. */
static struct waiter *job_detach(struct job *job)
{
	struct server *srv = job->srv;
	struct inflight_shard *sh = &srv->inflight[job->hash % INFLIGHT_SHARDS];
	size_t b = (job->hash / INFLIGHT_SHARDS) % INFLIGHT_BUCKETS;
	pthread_mutex_lock(&sh->lock);
	struct job **pp = &sh->buckets[b];
	while (*pp && *pp != job)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = job->hnext;
	struct waiter *w = job->waiters;
	job->waiters = NULL;
	pthread_mutex_unlock(&sh->lock);
	return w;
}

void result_release(struct result *r)
{
	if (r && atomic_fetch_sub(&r->refs, 1) == 1) {
		free(r->blob);
		free(r->prefix);
		free(r);
	}
}

static void job_finish(struct job *job, struct result *r)
{
	struct waiter *w = job_detach(job);
	int n = 0;
	for (struct waiter *x = w; x; x = x->next)
		n++;
	if (r) {
		atomic_init(&r->refs, n);
		if (n == 0) {
			atomic_init(&r->refs, 1);
			result_release(r);
			r = NULL;
		}
	}
	while (w) {
		struct waiter *next = w->next;
		w->result = r;
		worker_post(w->worker, w);
		w = next;
	}
	free(job->prefix);
	free(job);
}

void server_job_fail(struct job *job, int rcode)
{
	struct result *r = calloc(1, sizeof(*r));
	if (r)
		r->rcode = rcode;
	job_finish(job, r);
}

void server_job_done(struct job *job, const uint8_t *resp, size_t len)
{
	uint8_t *blob = NULL;
	size_t blob_len = 0;
	uint32_t ttl = 0;
	if (wire_answer_prepare(resp, len, &job->lim, &blob, &blob_len, &ttl) != 0) {
		server_job_fail(job, WIRE_RCODE_SERVFAIL);
		return;
	}
	struct result *r = calloc(1, sizeof(*r));
	if (r == NULL) {
		free(blob);
		server_job_fail(job, WIRE_RCODE_SERVFAIL);
		return;
	}
	r->rcode = -1;
	r->blob = blob;
	r->blob_len = blob_len;
	if (!job->edns) {
		/* Does the chain of a normal name enter an EDNS domain? */
		struct snapshot *s = server_snapshot(job->srv);
		if (chain_find(s->domains, resp, len, job->qname, job->qname_len, r->target, &r->target_len,
		               &r->prefix, &r->prefix_len) != 1) {
			r->target_len = 0;
			r->prefix = NULL;
		}
		snapshot_release(s);
	}
	if (ttl > 0) {
		/* cache value: chain header (or a zero flags byte), then the blob */
		size_t hdr = r->prefix ? chain_value_header(r->target_len, r->prefix_len) : 1;
		uint8_t *val = malloc(hdr + blob_len);
		if (val != NULL) {
			if (r->prefix)
				chain_value_write(val, r->target, r->target_len, r->prefix, r->prefix_len);
			else
				val[0] = 0;
			memcpy(val + hdr, blob, blob_len);
			cache_insert(job->srv->cache, job->key, job->klen, val, hdr + blob_len, now_sec(), ttl);
			free(val);
		}
	}
	job_finish(job, r);
}

void server_job_dispatch(struct server *srv, struct job *job)
{
	int rc = job->edns ? pool_edns_submit(srv->edns, job) : pool_normal_submit(srv->normal, job);
	if (rc != 0) {
		atomic_fetch_add_explicit(&srv->ctr.overload, 1, memory_order_relaxed);
		server_job_fail(job, WIRE_RCODE_SERVFAIL);
	}
}

/* ---- life cycle ---- */

static int load_domains(struct server *srv, struct domains **d, uint64_t *version)
{
	int rc = domains_load(srv->store, d, version);
	if (rc != 0)
		log_err("cannot read EDNS domains from the store: %s", store_strerror(rc));
	return rc;
}

struct server *server_new(const char *conf_path, struct conf *c)
{
	struct server *srv = calloc(1, sizeof(*srv));
	if (srv == NULL) {
		conf_free(c);
		return NULL;
	}
	srv->conf_path = strdup(conf_path);
	srv->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	pthread_mutex_init(&srv->snap_lock, NULL);
	pthread_mutex_init(&srv->reload_lock, NULL);
	for (int i = 0; i < INFLIGHT_SHARDS; i++)
		pthread_mutex_init(&srv->inflight[i].lock, NULL);
	srv->started = time(NULL);

	struct confref *cref = calloc(1, sizeof(*cref));
	if (cref == NULL) {
		conf_free(c);
		goto fail;
	}
	atomic_init(&cref->refs, 1);
	cref->conf = c;

	int rc = store_open(c->server.store, false, &srv->store);
	if (rc != 0) {
		log_err("cannot open the store %s: %s", c->server.store, store_strerror(rc));
		confref_release(cref);
		goto fail;
	}
	struct domains *d;
	uint64_t version;
	if (load_domains(srv, &d, &version) != 0 || publish(srv, cref, d, version) != 0) {
		confref_release(cref);
		goto fail;
	}
	confref_release(cref); /* the snapshot holds it now */
	log_info("%zu EDNS domain(s) from store %s", domains_count(d), c->server.store);

	srv->cache = cache_new(c->cache.max_bytes, 0);
	if (srv->cache == NULL) {
		log_err("cannot create the cache (cache.max_bytes %llu)", (unsigned long long)c->cache.max_bytes);
		goto fail;
	}
	srv->normal = pool_normal_new(srv, c);
	srv->edns = pool_edns_new(srv, c);
	if (srv->normal == NULL || srv->edns == NULL)
		goto fail;
	srv->nworkers = c->server.threads ? c->server.threads : 1;
	srv->workers = calloc(srv->nworkers, sizeof(*srv->workers));
	if (srv->workers == NULL)
		goto fail;
	for (unsigned i = 0; i < srv->nworkers; i++) {
		srv->workers[i] = worker_new(srv, i, c);
		if (srv->workers[i] == NULL)
			goto fail;
	}
	if (c->server.control && c->server.control[0]) {
		srv->control = control_new(srv, c->server.control);
		if (srv->control == NULL)
			goto fail;
	}
	return srv;
fail:
	server_free(srv);
	return NULL;
}

void server_free(struct server *srv)
{
	if (srv == NULL)
		return;
	control_free(srv->control);
	/* Pools fail their unfinished jobs into the workers' queues, which
	 * worker_free then drains: pools go first. */
	pool_normal_free(srv->normal);
	pool_edns_free(srv->edns);
	if (srv->workers)
		for (unsigned i = 0; i < srv->nworkers; i++)
			worker_free(srv->workers[i]);
	free(srv->workers);
	cache_free(srv->cache);
	snapshot_release(srv->snap);
	if (srv->store)
		store_close(srv->store);
	if (srv->stop_fd >= 0)
		close(srv->stop_fd);
	free(srv->conf_path);
	free(srv);
}

static bool flush_partitions(const uint8_t *key, size_t klen, void *arg)
{
	return klen >= 2 && (key[0] != 0 || key[1] != 0);
}

/* Keys that a running server cannot change. */
static void note_restart_keys(const struct conf *old, const struct conf *neu, FILE *err)
{
	bool listen_same = old->server.nlisten == neu->server.nlisten;
	for (size_t i = 0; listen_same && i < old->server.nlisten; i++)
		listen_same = strcmp(old->server.listen[i].text, neu->server.listen[i].text) == 0;
	const char *what[8];
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
	if (strcmp(old->resolver.root_hints, neu->resolver.root_hints) != 0 ||
	    strcmp(old->resolver.trust_anchor, neu->resolver.trust_anchor) != 0 ||
	    old->resolver.nforward_zones != neu->resolver.nforward_zones ||
	    old->resolver.noptions != neu->resolver.noptions)
		what[n++] = "resolver.* (libunbound)";
	for (int i = 0; i < n; i++) {
		log_warn("reload: %s changed; it takes effect at the next restart", what[i]);
		if (err)
			fprintf(err, "note: %s changed; it takes effect at the next restart\n", what[i]);
	}
}

int server_reload(struct server *srv, FILE *err)
{
	pthread_mutex_lock(&srv->reload_lock);
	struct conf *c = NULL;
	unsigned nerr = 0;
	int rc = conf_load(srv->conf_path, err ? err : stderr, &c, &nerr);
	if (rc != 0) {
		log_err("reload of %s failed (%u error(s)); keeping the running configuration", srv->conf_path,
		        nerr);
		pthread_mutex_unlock(&srv->reload_lock);
		return rc;
	}
	struct snapshot *cur = server_snapshot(srv);
	note_restart_keys(cur->conf, c, err);
	snapshot_release(cur);
	struct domains *d;
	uint64_t version;
	rc = load_domains(srv, &d, &version);
	if (rc != 0) {
		conf_free(c);
		pthread_mutex_unlock(&srv->reload_lock);
		if (err)
			fprintf(err, "cannot read the store: %s\n", store_strerror(rc));
		return rc;
	}
	struct confref *cref = calloc(1, sizeof(*cref));
	if (cref == NULL) {
		conf_free(c);
		domains_free(d);
		pthread_mutex_unlock(&srv->reload_lock);
		return -ENOMEM;
	}
	atomic_init(&cref->refs, 1);
	cref->conf = c;
	rc = publish(srv, cref, d, version);
	confref_release(cref);
	/* Partition ids may mean other cities now. */
	size_t flushed = cache_flush(srv->cache, flush_partitions, NULL);
	pthread_mutex_unlock(&srv->reload_lock);
	log_info("reloaded %s: %zu partition(s), %zu EDNS domain(s); %zu partition cache entries dropped",
	         srv->conf_path, ptable_size(c->partitions.table), domains_count(d), flushed);
	return rc;
}

/* A store change (partdnsctl domain add/del): swap in the new domain set. */
static void poll_store(struct server *srv)
{
	uint64_t v;
	if (store_version(srv->store, &v) != 0)
		return;
	struct snapshot *cur = server_snapshot(srv);
	bool changed = v != cur->store_version;
	if (!changed) {
		snapshot_release(cur);
		return;
	}
	pthread_mutex_lock(&srv->reload_lock);
	struct domains *d;
	uint64_t version;
	if (load_domains(srv, &d, &version) == 0) {
		struct snapshot *now = server_snapshot(srv);
		publish(srv, now->cref, d, version);
		snapshot_release(now);
		log_info("store changed (version %llu): %zu EDNS domain(s)", (unsigned long long)version,
		         domains_count(d));
	}
	pthread_mutex_unlock(&srv->reload_lock);
	snapshot_release(cur);
}

int server_run(struct server *srv)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGPIPE);
	/* Threads inherit the mask: only this thread takes the signals. */
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	int rc = pool_normal_start(srv->normal);
	if (rc == 0)
		rc = pool_edns_start(srv->edns);
	for (unsigned i = 0; rc == 0 && i < srv->nworkers; i++)
		rc = worker_start(srv->workers[i]);
	if (rc == 0 && srv->control)
		rc = control_start(srv->control);
	if (rc != 0) {
		log_err("cannot start threads: %s", strerror(-rc));
		server_stop(srv);
	} else {
		struct snapshot *s = server_snapshot(srv);
		for (size_t i = 0; i < s->conf->server.nlisten; i++)
			log_info("listening on %s (UDP, TCP)", s->conf->server.listen[i].text);
		log_info("ready: %u worker(s), %u EDNS thread(s), %zu partition(s)", srv->nworkers,
		         s->conf->edns.threads, ptable_size(s->conf->partitions.table));
		snapshot_release(s);
	}

	/* Signals and the store are polled here; one second bounds pick-up. */
	struct timespec tick = { .tv_sec = 0, .tv_nsec = 250 * 1000000L };
	while (!server_stopping(srv)) {
		int sig = sigtimedwait(&set, NULL, &tick);
		if (sig == SIGINT || sig == SIGTERM) {
			log_info("signal %d: shutting down", sig);
			server_stop(srv);
		} else if (sig == SIGHUP) {
			log_info("SIGHUP: reloading");
			server_reload(srv, NULL);
		} else {
			poll_store(srv);
		}
	}
	control_stop(srv->control);
	for (unsigned i = 0; i < srv->nworkers; i++)
		worker_join(srv->workers[i]);
	pool_normal_join(srv->normal);
	pool_edns_join(srv->edns);
	log_info("stopped");
	return rc;
}

/* ---- stats and flush (control) ---- */

static const char *const counter_names[] = {
#define COUNTER_NAME(n) #n,
	COUNTER_LIST(COUNTER_NAME)
#undef COUNTER_NAME
};
#define NCOUNTERS (sizeof(counter_names) / sizeof(counter_names[0]))

static void counters_sum(const struct counters *c, uint64_t *sum)
{
	const _Atomic uint64_t *f = (const _Atomic uint64_t *)c;
	for (size_t i = 0; i < NCOUNTERS; i++)
		sum[i] += atomic_load_explicit(&f[i], memory_order_relaxed);
}

void server_write_stats(struct server *srv, FILE *out, int json)
{
	uint64_t sum[NCOUNTERS];
	memset(sum, 0, sizeof(sum));
	counters_sum(&srv->ctr, sum);
	for (unsigned i = 0; i < srv->nworkers; i++)
		counters_sum(worker_counters(srv->workers[i]), sum);
	counters_sum(pool_normal_counters(srv->normal), sum);
	pool_edns_counters(srv->edns, sum, NCOUNTERS);
	struct cache_stats cs;
	cache_get_stats(srv->cache, &cs);
	struct snapshot *s = server_snapshot(srv);
	const struct ptable *t = s->conf->partitions.table;
	size_t np = ptable_size(t);
	uint64_t uptime = (uint64_t)(time(NULL) - srv->started);

	if (json) {
		fprintf(out, "{\n  \"uptime\": %llu,\n", (unsigned long long)uptime);
		for (size_t i = 0; i < NCOUNTERS; i++)
			fprintf(out, "  \"%s\": %llu,\n", counter_names[i], (unsigned long long)sum[i]);
		fprintf(out, "  \"inflight_normal\": %u,\n  \"inflight_edns\": %u,\n",
		        pool_normal_inflight(srv->normal), pool_edns_inflight(srv->edns));
		fprintf(out, "  \"cache\": { \"entries\": %zu, \"bytes\": %zu, \"max_bytes\": %zu, "
		        "\"hits\": %llu, \"misses\": %llu, \"inserts\": %llu, \"evictions\": %llu, "
		        "\"expired\": %llu },\n", cs.entries, cs.bytes, cs.max_bytes,
		        (unsigned long long)cs.hits, (unsigned long long)cs.misses,
		        (unsigned long long)cs.inserts, (unsigned long long)cs.evictions,
		        (unsigned long long)cs.expired);
		fprintf(out, "  \"edns_domains\": %zu,\n  \"partitions\": [\n", domains_count(s->domains));
	} else {
		fprintf(out, "uptime %llu\n", (unsigned long long)uptime);
		for (size_t i = 0; i < NCOUNTERS; i++)
			fprintf(out, "%s %llu\n", counter_names[i], (unsigned long long)sum[i]);
		fprintf(out, "inflight.normal %u\ninflight.edns %u\n", pool_normal_inflight(srv->normal),
		        pool_edns_inflight(srv->edns));
		fprintf(out, "cache.entries %zu\ncache.bytes %zu\ncache.max_bytes %zu\ncache.evictions %llu\n"
		        "cache.expired %llu\n", cs.entries, cs.bytes, cs.max_bytes,
		        (unsigned long long)cs.evictions, (unsigned long long)cs.expired);
		fprintf(out, "edns_domains %zu\n", domains_count(s->domains));
	}
	for (size_t id = 0; id <= np; id++) {
		uint64_t q = 0, h = 0, e = 0;
		for (unsigned i = 0; i < srv->nworkers; i++) {
			struct partition_counters *pc = &worker_partition_counters(srv->workers[i])[id];
			q += counter_get(&pc->queries);
			h += counter_get(&pc->hits);
			e += counter_get(&pc->edns);
		}
		const char *name = ptable_name(t, (unsigned)id);
		if (json)
			fprintf(out, "    { \"name\": \"%s\", \"id\": %zu, \"queries\": %llu, \"hits\": %llu, "
			        "\"edns\": %llu }%s\n", name, id, (unsigned long long)q, (unsigned long long)h,
			        (unsigned long long)e, id < np ? "," : "");
		else
			fprintf(out, "partition.%s.queries %llu\npartition.%s.hits %llu\npartition.%s.edns %llu\n",
			        name, (unsigned long long)q, name, (unsigned long long)h, name,
			        (unsigned long long)e);
	}
	if (json)
		fprintf(out, "  ]\n}\n");
	snapshot_release(s);
}

struct flush_arg {
	const uint8_t *name;
	size_t name_len;
	int partition; /* -1 = any */
};

static bool flush_match(const uint8_t *key, size_t klen, void *arg)
{
	const struct flush_arg *f = arg;
	if (klen < KEY_HDR)
		return false;
	if (f->partition >= 0 && (((unsigned)key[0] << 8) | key[1]) != (unsigned)f->partition)
		return false;
	if (f->name && (klen - KEY_HDR != f->name_len || memcmp(key + KEY_HDR, f->name, f->name_len) != 0))
		return false;
	return true;
}

long server_cache_flush(struct server *srv, const char *name, const char *partition, FILE *err)
{
	uint8_t wname[WIRE_MAX_NAME];
	struct flush_arg f = { .name = NULL, .partition = -1 };
	if (name) {
		int n = wire_name_from_text(name, wname, sizeof(wname));
		if (n < 0) {
			if (err)
				fprintf(err, "bad name '%s'", name);
			return -EINVAL;
		}
		wire_name_lower(wname, (size_t)n, wname);
		f.name = wname;
		f.name_len = (size_t)n;
	}
	if (partition) {
		struct snapshot *s = server_snapshot(srv);
		int id = strcmp(partition, "common") == 0 ? 0 : ptable_find(s->conf->partitions.table, partition);
		snapshot_release(s);
		if (id < 0) {
			if (err)
				fprintf(err, "no partition '%s'", partition);
			return -ENOENT;
		}
		f.partition = id;
	}
	return (long)cache_flush(srv->cache, (name || partition) ? flush_match : NULL, &f);
}
