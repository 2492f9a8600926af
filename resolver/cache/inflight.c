/* SPDX-License-Identifier: BSD-3-Clause */
/* In-flight table: sharded hash of running jobs by cache key; job completion into the cache. */
#include "resolver/cache/inflight.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "partition/partition.h"
#include "resolver/base/clock.h"
#include "resolver/view/standby.h"
#include "util/hash.h"
#include "wire/answer.h"

#define INFLIGHT_SHARDS 64
#define INFLIGHT_BUCKETS 1024

struct inflight_shard {
	pthread_mutex_t lock;
	struct job *buckets[INFLIGHT_BUCKETS];
};

struct inflight {
	struct cache *cache;
	struct snapshot_slot *slot;
	struct hash_key key;  /* keys are query names: a random hash key */
	uint64_t id;          /* tells this table's thread caches from a freed one's */
	pthread_mutex_t caches_lock;
	struct job_cache *caches; /* every thread's, freed with the table */
	struct inflight_shard shards[INFLIGHT_SHARDS];
	atomic_bool plan_switch; /* inflight_plan_switch: partition answers are not stored */
};

/* ---- per-thread free lists ----
 *
 * A miss used to calloc a job and a waiter and free them again (with
 * malloc/free/memset about a fifth of a miss's instructions), and a flood
 * of misses left glibc's arenas fragmented. A job is taken in a listener
 * thread and ends in a pool thread: it goes back to the free list of the
 * thread that took it, through a lock-free stack that only that thread
 * empties, all at once (so a popped node is never pushed back under a
 * concurrent pop: no ABA). Waiters are taken and freed by the same
 * listener thread. Each list keeps at most FREE_KEEP entries: what a
 * flood needed beyond that goes back to malloc. And what a list held
 * unused for a whole trim interval goes back too (inflight_trim): the
 * entries a flood left there are scattered over pages that glibc could
 * otherwise give back to the system.
 */
#define FREE_KEEP 256

struct job_cache {
	struct job_cache *next;           /* in the table's list */
	_Atomic(struct job *) returned;   /* jobs ended by other threads */
	atomic_uint nreturned;            /* about how many: past FREE_KEEP they go to free() */
	struct job *jobs;                 /* free jobs, linked through hnext */
	unsigned njobs;
	struct waiter *waiters;           /* free waiters, linked through next */
	unsigned nwaiters;
	unsigned jobs_low, waiters_low;   /* the lists' shortest since the last trim */
};

static atomic_uint_fast64_t table_ids;
static _Thread_local struct job_cache *tl_cache;
static _Thread_local uint64_t tl_table;

/* The calling thread's free lists for t (made on first use), or NULL. */
static struct job_cache *thread_cache(struct inflight *t)
{
	if (tl_table == t->id)
		return tl_cache;
	struct job_cache *c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	pthread_mutex_lock(&t->caches_lock);
	c->next = t->caches;
	t->caches = c;
	pthread_mutex_unlock(&t->caches_lock);
	tl_cache = c;
	tl_table = t->id;
	return c;
}

/* Onto the owner's own list (owner thread only), or back to malloc when it is full. */
static void jobs_keep(struct job_cache *c, struct job *j)
{
	if (c->njobs < FREE_KEEP) {
		j->hnext = c->jobs;
		c->jobs = j;
		c->njobs++;
	} else {
		free(j);
	}
}

/* Take back, all at once, the jobs other threads ended (owner thread only). */
static void jobs_take_returned(struct job_cache *c)
{
	struct job *r = atomic_exchange_explicit(&c->returned, NULL, memory_order_acquire);
	atomic_store_explicit(&c->nreturned, 0, memory_order_relaxed);
	while (r != NULL) {
		struct job *next = r->hnext;
		jobs_keep(c, r);
		r = next;
	}
}

static struct job *job_get(struct inflight *t)
{
	struct job_cache *c = thread_cache(t);
	struct job *j = NULL;
	if (c != NULL && c->jobs == NULL)
		jobs_take_returned(c);
	if (c != NULL && c->jobs != NULL) {
		j = c->jobs;
		c->jobs = j->hnext;
		c->njobs--;
		if (c->njobs < c->jobs_low)
			c->jobs_low = c->njobs;
	} else {
		j = malloc(sizeof(*j));
		if (j == NULL)
			return NULL;
	}
	memset(j, 0, offsetof(struct job, key));
	j->owner = c;
	return j;
}

static void job_put(struct job *j)
{
	struct job_cache *c = j->owner;
	if (c == NULL) {
		free(j);
	} else if (c == tl_cache && tl_table == j->table->id) {
		jobs_keep(c, j);
	} else if (atomic_load_explicit(&c->nreturned, memory_order_relaxed) >= FREE_KEEP) {
		/* the owner has not taken back what it was given: after a flood
		 * of misses, the surplus goes back to malloc, not to a list */
		free(j);
	} else {
		atomic_fetch_add_explicit(&c->nreturned, 1, memory_order_relaxed);
		struct job *head = atomic_load_explicit(&c->returned, memory_order_relaxed);
		do {
			j->hnext = head;
		} while (!atomic_compare_exchange_weak_explicit(&c->returned, &head, j, memory_order_release,
		                                                memory_order_relaxed));
	}
}

struct waiter *inflight_waiter_new(struct inflight *t)
{
	struct job_cache *c = thread_cache(t);
	struct waiter *w;
	if (c != NULL && c->waiters != NULL) {
		w = c->waiters;
		c->waiters = w->next;
		c->nwaiters--;
		if (c->nwaiters < c->waiters_low)
			c->waiters_low = c->nwaiters;
	} else {
		w = malloc(sizeof(*w));
		if (w == NULL)
			return NULL;
	}
	memset(w, 0, offsetof(struct waiter, q));
	return w;
}

void inflight_waiter_free(struct inflight *t, struct waiter *w)
{
	job_result_release(w->result);
	free(w->rewrite);
	w->rewrite = NULL;
	struct job_cache *c = thread_cache(t);
	if (c != NULL && c->nwaiters < FREE_KEEP) {
		w->next = c->waiters;
		c->waiters = w;
		c->nwaiters++;
	} else {
		free(w);
	}
}

void inflight_trim(struct inflight *t)
{
	struct job_cache *c = thread_cache(t);
	if (c == NULL)
		return;
	for (; c->jobs_low > 0 && c->jobs != NULL; c->jobs_low--, c->njobs--) {
		struct job *next = c->jobs->hnext;
		free(c->jobs);
		c->jobs = next;
	}
	for (; c->waiters_low > 0 && c->waiters != NULL; c->waiters_low--, c->nwaiters--) {
		struct waiter *next = c->waiters->next;
		free(c->waiters);
		c->waiters = next;
	}
	/* what was returned meanwhile joins the list now: unused, it goes at the next trim */
	jobs_take_returned(c);
	c->jobs_low = c->njobs;
	c->waiters_low = c->nwaiters;
}

size_t inflight_cached(struct inflight *t)
{
	struct job_cache *c = thread_cache(t);
	return c != NULL ? c->njobs + c->nwaiters + atomic_load_explicit(&c->nreturned, memory_order_relaxed) : 0;
}

size_t inflight_pooled(struct inflight *t)
{
	size_t n = 0;
	pthread_mutex_lock(&t->caches_lock);
	for (struct job_cache *c = t->caches; c; c = c->next)
		n += atomic_load_explicit(&c->nreturned, memory_order_relaxed);
	pthread_mutex_unlock(&t->caches_lock);
	return n;
}

static void cache_free_all(struct job_cache *c)
{
	struct job *r = atomic_exchange(&c->returned, NULL);
	while (r) {
		struct job *next = r->hnext;
		free(r);
		r = next;
	}
	while (c->jobs) {
		struct job *next = c->jobs->hnext;
		free(c->jobs);
		c->jobs = next;
	}
	while (c->waiters) {
		struct waiter *next = c->waiters->next;
		free(c->waiters);
		c->waiters = next;
	}
	free(c);
}

struct inflight *inflight_new(struct cache *cache, struct snapshot_slot *slot)
{
	struct inflight *t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	t->cache = cache;
	t->slot = slot;
	t->id = atomic_fetch_add(&table_ids, 1) + 1;
	pthread_mutex_init(&t->caches_lock, NULL);
	hash_key_random(&t->key);
	for (int i = 0; i < INFLIGHT_SHARDS; i++)
		pthread_mutex_init(&t->shards[i].lock, NULL);
	return t;
}

void inflight_free(struct inflight *t)
{
	if (t == NULL)
		return;
	for (int i = 0; i < INFLIGHT_SHARDS; i++)
		pthread_mutex_destroy(&t->shards[i].lock);
	while (t->caches) {
		struct job_cache *next = t->caches->next;
		cache_free_all(t->caches);
		t->caches = next;
	}
	pthread_mutex_destroy(&t->caches_lock);
	free(t);
}

static struct inflight_shard *shard_of(struct inflight *t, uint64_t h, size_t *bucket)
{
	*bucket = (size_t)(h >> 32) % INFLIGHT_BUCKETS;
	return &t->shards[h % INFLIGHT_SHARDS];
}

int inflight_join(struct inflight *t, const uint8_t *key, size_t klen, struct snapshot *snap, struct waiter *w,
                  struct job **out)
{
	uint64_t h = hash_bytes(&t->key, key, klen);
	size_t b;
	struct inflight_shard *sh = shard_of(t, h, &b);
	pthread_mutex_lock(&sh->lock);
	for (struct job *j = sh->buckets[b]; j; j = j->hnext) {
		if (j->hash == h && j->klen == klen && memcmp(j->key, key, klen) == 0) {
			if (w == NULL) { /* a refresh: one is running already */
				pthread_mutex_unlock(&sh->lock);
				return 0;
			}
			w->next = j->waiters;
			j->waiters = w;
			pthread_mutex_unlock(&sh->lock);
			return 0;
		}
	}
	struct job *j = job_get(t);
	if (j == NULL) {
		pthread_mutex_unlock(&sh->lock);
		/* no memory: fail this client alone */
		if (w != NULL) {
			w->result = NULL;
			mq_push(w->reply_q, &w->node);
		}
		return 0;
	}
	j->table = t;
	j->hash = h;
	memcpy(j->key, key, klen);
	j->klen = klen;
	snapshot_ref(snap);
	j->snap = snap;
	j->waiters = w;
	if (w != NULL)
		w->next = NULL;
	j->start_ns = clock_ns();
	j->stale_tried = false;
	j->hnext = sh->buckets[b];
	sh->buckets[b] = j;
	pthread_mutex_unlock(&sh->lock);
	*out = j;
	return 1;
}

/* Unlink job from the table and take its waiters. */
static struct waiter *job_detach(struct job *job)
{
	size_t b;
	struct inflight_shard *sh = shard_of(job->table, job->hash, &b);
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

/* Give r (NULL: out of memory) to the waiters w, each to its listener; r is theirs (or freed). */
static void waiters_answer(struct waiter *w, struct result *r)
{
	int n = 0;
	for (struct waiter *x = w; x; x = x->next)
		n++;
	if (r) {
		atomic_init(&r->refs, n > 0 ? n : 1);
		if (n == 0) {
			job_result_release(r);
			r = NULL;
		}
	}
	while (w) {
		struct waiter *next = w->next;
		w->result = r;
		mq_push(w->reply_q, &w->node);
		w = next;
	}
}

/* Hand r (NULL: out of memory) to every waiter and free the job. */
static void job_finish(struct job *job, struct result *r)
{
	waiters_answer(job_detach(job), r);
	snapshot_release(job->snap);
	free(job->prefix);
	job_put(job);
}

/* May an outcome of job be cached now? Not when a reload gave its partition id another meaning. */
static bool still_valid(const struct job *job)
{
	if (job->partition == PARTITION_COMMON)
		return true;
	if (atomic_load_explicit(&job->table->plan_switch, memory_order_acquire))
		return false; /* its id may mean another city in a moment: the reload moves the cache */
	struct snapshot *cur = snapshot_get(job->table->slot);
	bool same = cur == job->snap || (route_partition_same(job->snap->conf, cur->conf, job->partition) &&
	                                 standby_same(job->snap->standby, job->partition, cur->standby, job->partition));
	snapshot_release(cur);
	return same;
}

/* Copy a stale cache value into the result (arg): an answer or a chain, never a failure. */
static int stale_copy(const uint8_t *val, size_t vlen, const struct cache_hit *hit, void *arg)
{
	(void)hit;
	struct result *r = arg;
	struct route_value v;
	if (route_value_parse(val, vlen, &v) != 0 || v.failure || v.blob_len == 0)
		return -EINVAL;
	r->blob = malloc(v.blob_len);
	r->prefix = v.chain ? malloc(v.prefix_len ? v.prefix_len : 1) : NULL;
	if (r->blob == NULL || (v.chain && r->prefix == NULL))
		return -ENOMEM; /* the caller frees what was taken */
	memcpy(r->blob, v.blob, v.blob_len);
	r->blob_len = v.blob_len;
	if (v.chain) {
		memcpy(r->prefix, v.prefix, v.prefix_len);
		r->prefix_len = v.prefix_len;
		memcpy(r->target, v.target, v.target_len);
		r->target_len = v.target_len;
		r->incomplete = v.incomplete;
	}
	return 0;
}

/*
 * Serve-stale (RFC 8767): the job's expired answer, while the cache keeps
 * it (cache_set_stale), as the outcome of a failed resolution; the entry is
 * then served stale for INFLIGHT_STALE_TTL without asking upstream (§5).
 * @return the result, or NULL (none, or a reload gave the partition another meaning).
 */
static struct result *stale_result(struct job *job)
{
	if (!still_valid(job))
		return NULL;
	struct result *r = calloc(1, sizeof(*r));
	if (r == NULL)
		return NULL;
	/* an incomplete chain is no answer for the clients of a job run without
	 * stubs (they are the ones that need the whole answer): none then */
	if (cache_stale(job->table->cache, job->key, job->klen, clock_sec(), INFLIGHT_STALE_TTL, stale_copy, r) < 0 ||
	    (r->incomplete && !job->stubbed)) {
		free(r->blob);
		free(r->prefix);
		free(r);
		return NULL;
	}
	r->rcode = -1;
	r->stale = true;
	return r;
}

void inflight_stale_early(struct job *job)
{
	if (job->stale_tried || !job->snap->conf->cache.serve_stale)
		return;
	job->stale_tried = true;
	size_t b;
	struct inflight_shard *sh = shard_of(job->table, job->hash, &b);
	pthread_mutex_lock(&sh->lock);
	bool waiting = job->waiters != NULL;
	pthread_mutex_unlock(&sh->lock);
	if (!waiting)
		return; /* a prefetch, or clients that gave up: nothing to hold the entry for */
	struct result *r = stale_result(job);
	if (r == NULL)
		return;
	pthread_mutex_lock(&sh->lock);
	struct waiter *w = job->waiters;
	job->waiters = NULL;
	pthread_mutex_unlock(&sh->lock);
	waiters_answer(w, r);
}

void inflight_fail(struct job *job, int rcode, const struct wire_ede *ede, bool remember)
{
	struct result *r = stale_result(job);
	if (r != NULL) {
		job_finish(job, r);
		return;
	}
	r = calloc(1, sizeof(*r));
	if (r) {
		r->rcode = rcode;
		if (ede) {
			r->has_ede = true;
			r->ede = *ede;
		}
	}
	if (remember && job->failure_ttl > 0 && still_valid(job)) {
		uint8_t val[512];
		if (route_value_failure_size(ede) <= sizeof(val)) {
			size_t n = route_value_write_failure(val, rcode, ede);
			/* never over an answer: a failed refresh (prefetch) leaves the fresh one */
			cache_insert_opt(job->table->cache, job->key, job->klen, val, n, clock_sec(), job->failure_ttl,
			                 CACHE_NO_STALE | CACHE_NO_REPLACE);
		}
	}
	job_finish(job, r);
}

/* Insert the answer under the job's key: chain header (if any), then the blob. */
static void cache_answer(struct job *job, const struct result *r, uint32_t ttl)
{
	uint8_t small[512]; /* the header: 1 byte, more with a chain (its prefix can be long) */
	size_t hdr = route_value_header(r->target_len, r->prefix_len);
	uint8_t *head = hdr <= sizeof(small) ? small : malloc(hdr);
	if (head == NULL)
		return;
	route_value_write_header(head, r->target, r->target_len, r->prefix, r->prefix_len);
	if (r->incomplete)
		head[0] |= ROUTE_VALUE_INCOMPLETE;
	cache_insert_parts(job->table->cache, job->key, job->klen, head, hdr, r->blob, r->blob_len, clock_sec(), ttl);
	if (head != small)
		free(head);
}

void inflight_done(struct job *job, const uint8_t *resp, size_t len, bool from_libunbound)
{
	uint8_t *blob = NULL;
	size_t blob_len = 0;
	uint32_t ttl = 0;
	struct wire_chain chain; /* from the same parse: no second pass for CNAMEs */
	int rc = from_libunbound ? wire_answer_adopt_chain(resp, len, &job->lim, &blob, &blob_len, &ttl, &chain)
	                         : wire_answer_prepare_chain(resp, len, &job->lim, &blob, &blob_len, &ttl, &chain);
	if (rc != 0) {
		static const struct wire_ede bad = { WIRE_EDE_INVALID_DATA, "malformed upstream answer" };
		inflight_fail(job, WIRE_RCODE_SERVFAIL, &bad, true);
		return;
	}
	struct result *r = calloc(1, sizeof(*r));
	if (r == NULL) {
		free(blob);
		inflight_fail(job, WIRE_RCODE_SERVFAIL, NULL, false);
		return;
	}
	r->rcode = -1;
	r->blob = blob;
	r->blob_len = blob_len;
	/* Does the chain of a normal name enter an EDNS domain? */
	if (!job->edns && route_chain_find(job->snap->domains, resp, len, &chain, r->target, &r->target_len,
	                                   &r->prefix, &r->prefix_len) != 1) {
		r->target_len = 0;
		r->prefix = NULL;
		r->prefix_len = 0;
	}
	/* the stub context answered the flagged part from an empty zone: the
	 * chain is what counts, the answer is not one (the stub context is used
	 * only when it holds exactly the subtrees of the job's snapshot, so a
	 * stop there is always a chain found here) */
	r->incomplete = job->stubbed && r->target_len > 0;
	if (ttl > 0 && still_valid(job))
		cache_answer(job, r, ttl);
	job_finish(job, r);
}

void inflight_plan_switch(struct inflight *t, bool on)
{
	atomic_store_explicit(&t->plan_switch, on, memory_order_release);
}
