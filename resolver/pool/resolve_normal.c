/* SPDX-License-Identifier: BSD-3-Clause */
/* The normal pool: resolver.threads threads, each running its own libunbound context in its own event loop. */
#include "resolver/pool/resolve_normal.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <unbound-event.h>
#include <unbound.h>

#include "resolver/base/clock.h"
#include "resolver/view/domains.h"
#include "resolver/cache/inflight.h"
#include "resolver/base/log.h"
#include "resolver/base/ubctx.h"
#include "resolver/base/uloop.h"
#include "util/hash.h"
#include "wire/names.h"

/*
 * Why this shape (docs/design.md "The normal pool"):
 *
 * libunbound's event API (ub_ctx_create_ub_event + ub_resolve_event) runs
 * the resolution inside our own loop (uloop.c, its event interface over
 * epoll) and hands back the answer in wire format: no libunbound thread,
 * no pipe, no serialised result to decode and re-encode. The async API
 * cost a miss 8 fcntl + 4 read + 3 write + 2 epoll_wait in this thread
 * alone, plus libunbound's own thread's share (bench/RESULTS.md "Miss
 * path").
 *
 * Colocated (server.threads == resolver.threads, the default): no thread
 * of ours runs the loops; listener i drives thread i's loop in its own
 * epoll and starts its own misses there (resolve_normal_run_here), so a
 * miss is resolved and answered by the thread that read it, without a
 * hand-over or a wake-up of another thread. Unbound, Knot Resolver and
 * PowerDNS Recursor (without pdns-distributes-queries) work the same way.
 * Jobs from elsewhere (the control socket's query, a listener of a
 * different count) still go by the name's hash through the thread's queue.
 *
 * One context per thread, names sharded by a keyed hash of the query name:
 * every qtype of a name meets the same context, so what one context learnt
 * about that name and its zone is reused, and infrastructure (NS, glue)
 * is duplicated at most once per thread. Colocated, a listener's own
 * misses go to its own context instead: the common cache in front is
 * shared, so what is duplicated is libunbound's second-level copy. Apart
 * (resolver.threads != server.threads), a hit never waits behind a
 * validation or a burst of answers, at a hand-over per miss.
 *
 * A second context per thread, the stub context, holds every flagged
 * --subtree name as an empty zone of its own (ubctx.c). A normal name asked
 * by a client that continues chains through the EDNS pool (a partition with
 * a mapped address) is resolved there: when its CNAME chain enters a
 * flagged subtree, libunbound stops at the subtree instead of asking the
 * GSLB without ECS (a query per name the GSLB would answer for the
 * resolver's own city, which nobody uses). The chain is all the EDNS pool
 * needs; the entry is marked incomplete (inflight.c) and clients of no
 * partition resolve the name again in the plain context. libunbound reads
 * auth zones only when a context is set up, so a change of the flagged
 * subtrees needs a new stub context per thread, and with 100,000 subtrees
 * one takes seconds to make (and a tenth of one to delete). The pool's
 * builder thread makes them (stub_build), so no loop that answers clients
 * waits for it: each thread's tick only swaps a pointer (stub_refresh),
 * and retires the old context; once no lookup runs in it, the tick
 * detaches its events from the loop (uloop_view_detach, O(its events))
 * and the builder deletes it. Until the new one is there, jobs take the
 * plain context (start_job compares the set a context holds with the
 * job's).
 */

#define NORMAL_MAX_INFLIGHT 100000
/* libunbound keeps trying unresponsive servers for a long time; a client
 * gets SERVFAIL after this instead of silence (its retry asks again). */
#define NORMAL_DEADLINE_NS (4ull * 1000000000ull)
/* how often a thread fails the jobs past their deadline */
#define NORMAL_TICK_US 100000
/* counters of lookups in flight per parent domain, by keyed hash */
#define NORMAL_ZONE_SLOTS 65536u
/* spare tickets a thread keeps for reuse */
#define NORMAL_TICKETS_KEEP 1024u
/* how often the builder looks for a new set of flagged subtrees (or is woken for contexts to delete) */
#define NORMAL_BUILD_POLL_NS 50000000ull
/* how long the start waits for the first stub contexts of a set of at most
 * NORMAL_BUILD_START_WAIT_MAX domains: a few subtrees are in place before
 * the first query; a big set is served without them meanwhile rather than
 * delaying the start (100,000 take seconds per context) */
#define NORMAL_BUILD_START_WAIT_NS 500000000ull
#define NORMAL_BUILD_START_WAIT_MAX 10000u
/* the builder's nice value over the daemon's (19 at most) */
#define NORMAL_BUILD_NICE 10

/*
 * One lookup libunbound works on. ub_cancel only silences the callback:
 * libunbound goes on until it gives up on its own, so a ticket outlives a
 * job the deadline failed, and that work counts against its parent
 * domain's share (resolver.zone_inflight) until libunbound calls back.
 */
struct ticket {
	struct ticket *prev, *next; /* the thread's pending or orphans list; the free list */
	struct job *job;            /* NULL once the deadline failed it (an orphan) */
	struct nthread *t;
	struct nctx *nc;            /* the stub context it runs in; NULL: the plain one */
	uint64_t start_ns;
	uint16_t slot;              /* its parent domain's counter */
};

/* A stub context, for one set of flagged subtrees (its sig). */
struct nctx {
	struct ub_ctx *ctx;     /* NULL: none (no flagged subtree, or it could not be made) */
	struct uloop_view *view; /* its event base over the thread's loop, detached before it goes to the builder */
	uint64_t sig;           /* domains_subtree_sig of the set it holds */
	unsigned refs;          /* tickets running in it (orphans included) */
	struct nctx *next;      /* retired, waiting for refs 0; then the builder's to delete */
};

struct nthread {
	struct resolve_normal *pool;
	unsigned idx;
	struct uloop *loop;     /* its own thread's, or a listener's (colocated) */
	struct ub_ctx *ctx;     /* the plain context */
	struct nctx *stub;      /* NULL: none (no flagged subtree, or it could not be built) */
	struct nctx *retired;
	_Atomic(struct nctx *) stub_next; /* made by the builder, taken by the thread's tick */
	struct mq jobs;
	struct ub_event *jobs_ev, *stop_ev, *tick_ev;
	pthread_t thread;
	bool started;
	struct ticket pending;  /* sentinel: lookups with a job, oldest at the tail */
	struct ticket orphans;  /* sentinel: lookups whose job the deadline failed */
	struct ticket *spare;   /* free list */
	unsigned nspare;
	unsigned spare_low;     /* its shortest since the last trim */
	unsigned ticks;
	uint16_t *zone_count;   /* NORMAL_ZONE_SLOTS lookups in flight per parent domain */
	struct counters ctr;
	struct histogram latency; /* ub_resolve_event to its callback, lookups answered before the deadline */
	uint8_t answer[65535]; /* libunbound's packet is read-only: the AD bit is set on a copy */
};

struct resolve_normal {
	struct snapshot_slot *snaps; /* the flagged subtrees for the stub contexts */
	unsigned nthreads;
	bool colocated;            /* listener i drives thread i's loop: no threads of ours */
	unsigned zone_cap;         /* resolver.zone_inflight; 0 = no limit */
	int stop_fd;
	struct hash_key shard_key; /* query names are client-chosen: keyed hashes */
	struct hash_key zone_key;
	atomic_uint inflight;
	struct nthread *threads;
	/* the builder thread: stub contexts made and deleted off the loops */
	pthread_t builder;
	bool builder_started;
	pthread_mutex_t build_lock;
	pthread_cond_t build_cond;   /* wakes the builder (trash, stop); tells the start a round is done */
	bool build_stop;
	unsigned build_rounds;       /* rounds of the builder's loop done */
	struct nctx *trash;          /* retired and detached, for the builder to delete */
};

void resolve_normal_counters(struct resolve_normal *p, uint64_t *sum)
{
	for (unsigned i = 0; i < p->nthreads; i++)
		counters_add_to(&p->threads[i].ctr, sum);
}

void resolve_normal_latency(struct resolve_normal *p, uint64_t *bucket, uint64_t *sum_ns)
{
	for (unsigned i = 0; i < p->nthreads; i++)
		histogram_add_to(&p->threads[i].latency, bucket, sum_ns);
}

unsigned resolve_normal_inflight(struct resolve_normal *p)
{
	return atomic_load_explicit(&p->inflight, memory_order_relaxed);
}

static bool take_slot(struct resolve_normal *p)
{
	if (atomic_fetch_add(&p->inflight, 1) >= NORMAL_MAX_INFLIGHT) {
		atomic_fetch_sub(&p->inflight, 1);
		return false;
	}
	return true;
}

int resolve_normal_submit(struct resolve_normal *p, struct job *job)
{
	if (!take_slot(p))
		return -EBUSY;
	unsigned i = p->nthreads == 1 ? 0 : (unsigned)(hash_bytes(&p->shard_key, job->qname, job->qname_len) % p->nthreads);
	mq_push(&p->threads[i].jobs, &job->node);
	return 0;
}

static void list_init(struct ticket *head)
{
	head->next = head->prev = head;
}

static bool list_empty(const struct ticket *head)
{
	return head->next == head;
}

/* at the head: the tail is the oldest */
static void list_push(struct ticket *head, struct ticket *tk)
{
	tk->next = head->next;
	tk->prev = head;
	head->next->prev = tk;
	head->next = tk;
}

static void list_unlink(struct ticket *tk)
{
	tk->prev->next = tk->next;
	tk->next->prev = tk->prev;
}

static struct ticket *ticket_get(struct nthread *t)
{
	struct ticket *tk = t->spare;
	if (tk != NULL) {
		t->spare = tk->next;
		t->nspare--;
		if (t->nspare < t->spare_low)
			t->spare_low = t->nspare;
		return tk;
	}
	return malloc(sizeof(*tk));
}

/* The lookup is over: its parent domain's share is free again. */
static void ticket_put(struct nthread *t, struct ticket *tk)
{
	list_unlink(tk);
	t->zone_count[tk->slot]--;
	if (tk->nc != NULL)
		tk->nc->refs--;
	if (t->nspare >= NORMAL_TICKETS_KEEP) {
		free(tk);
		return;
	}
	tk->next = t->spare;
	t->spare = tk;
	t->nspare++;
}

/* Free the spare tickets no lookup needed since the last trim (a flood's leftovers). */
static void tickets_trim(struct nthread *t)
{
	for (; t->spare_low > 0 && t->spare != NULL; t->spare_low--, t->nspare--) {
		struct ticket *next = t->spare->next;
		free(t->spare);
		t->spare = next;
	}
	t->spare_low = t->nspare;
}

/*
 * The parent domain's counter: the name without its first label, so the
 * random first labels of a flood all meet in one place (a name of one
 * label counts under the root). Slots are shared by hash: a collision with
 * a flooded domain is one in NORMAL_ZONE_SLOTS, and the key is secret.
 */
static uint16_t zone_slot(const struct resolve_normal *p, const struct job *job)
{
	const uint8_t *parent = job->qname;
	size_t len = job->qname_len;
	if (len > 1u + parent[0]) {
		len -= 1u + parent[0];
		parent += 1u + parent[0];
	}
	return (uint16_t)(hash_bytes(&p->zone_key, parent, len) % NORMAL_ZONE_SLOTS);
}

/* One line per failed resolution, with the reason we know (rate-limited: floods fail by the thousand). */
static void log_failure(const struct job *job, const char *why)
{
	if (log_get_level() < LOG_LEVEL_INFO)
		return;
	char name[1024] = "?";
	wire_name_to_text(job->qname, job->qname_len, name, sizeof(name));
	log_info_limited("resolution of %s type %u failed: %s", name, job->qtype, why);
}

static void start_job(struct nthread *t, struct job *job);

/* libunbound's answer (rcode != 0: failed; sec 1 bogus, 2 secure). */
static void resolved(void *arg, int rcode, void *packet, int len, int sec, char *why_bogus, int ratelimited)
{
	struct ticket *tk = arg;
	struct nthread *t = tk->t;
	struct job *job = tk->job;
	uint64_t start_ns = tk->start_ns;
	ticket_put(t, tk);
	if (job == NULL)
		return; /* the deadline answered its clients */
	histogram_observe(&t->latency, clock_ns() - start_ns);
	bool failed_lookup = rcode != 0 || packet == NULL || len < 12 || len > (int)sizeof(t->answer) ||
	                     (((const uint8_t *)packet)[3] & 0x0f) == WIRE_RCODE_SERVFAIL;
	bool bogus_answer = !failed_lookup && sec == 1 && !job->cd_bit;
	if ((failed_lookup || bogus_answer) && job->stubbed) {
		/* The stub zones may have hidden what this name needs: a zone whose
		 * nameservers live under a flagged subtree (a CDN hosting its
		 * customers' zones) has no reachable server in the stub context.
		 * Once more in the plain context, which sees everything. */
		counter_inc(&t->ctr.stub_retries);
		job->stub_ok = false;
		start_job(t, job);
		return;
	}
	atomic_fetch_sub(&t->pool->inflight, 1);
	/* libunbound says why only for DNSSEC: other failures are just failures */
	static const struct wire_ede failed = { WIRE_EDE_OTHER, "resolution failed" };
	static const struct wire_ede limited = { WIRE_EDE_OTHER, "zone over resolver.zone_qps" };
	static const struct wire_ede bogus = { WIRE_EDE_DNSSEC_BOGUS, "DNSSEC validation failed" };
	if (failed_lookup) {
		counter_inc(&t->ctr.upstream_errors);
		log_failure(job, ratelimited ? "over resolver.zone_qps, not asked"
		                 : rcode != 0 ? ub_strerror(rcode)
		                              : "SERVFAIL (libunbound says why only for DNSSEC and timeouts)");
		inflight_fail(job, WIRE_RCODE_SERVFAIL, ratelimited ? &limited : &failed, true);
	} else if (bogus_answer) {
		char why[600];
		snprintf(why, sizeof(why), "DNSSEC validation failed: %s", why_bogus ? why_bogus : "bogus");
		log_failure(job, why);
		inflight_fail(job, WIRE_RCODE_SERVFAIL, &bogus, true);
	} else {
		memcpy(t->answer, packet, (size_t)len);
		if (sec == 2)
			t->answer[3] |= 0x20; /* AD: libunbound says validated */
		else
			t->answer[3] &= (uint8_t)~0x20;
		inflight_done(job, t->answer, (size_t)len, true);
	}
}

/* Fail a job that never reached libunbound (no failure is remembered: nothing was tried). */
static void refuse_job(struct nthread *t, struct job *job, const struct wire_ede *ede)
{
	atomic_fetch_sub(&t->pool->inflight, 1);
	inflight_fail(job, WIRE_RCODE_SERVFAIL, ede, false);
}

static void start_job(struct nthread *t, struct job *job)
{
	static const struct wire_ede crowded = { WIRE_EDE_OTHER, "zone over resolver.zone_inflight" };
	char name[1024];
	if (wire_name_to_text(job->qname, job->qname_len, name, sizeof(name)) < 0) {
		refuse_job(t, job, NULL);
		return;
	}
	uint16_t slot = zone_slot(t->pool, job);
	if (t->pool->zone_cap != 0 && t->zone_count[slot] >= t->pool->zone_cap) {
		counter_inc(&t->ctr.zone_limited);
		log_failure(job, "its parent domain is over resolver.zone_inflight, not asked");
		refuse_job(t, job, &crowded);
		return;
	}
	struct ticket *tk = ticket_get(t);
	if (tk == NULL) {
		refuse_job(t, job, NULL);
		return;
	}
	/* the stub context only when it holds exactly the job's flagged subtrees:
	 * then every stop in it is a chain into one of them (inflight_done) */
	struct nctx *nc = job->stub_ok && t->stub != NULL &&
	                  t->stub->sig == domains_subtree_sig(job->snap->domains) ? t->stub : NULL;
	job->stubbed = nc != NULL;
	*tk = (struct ticket){ .job = job, .t = t, .nc = nc, .start_ns = clock_ns(), .slot = slot };
	if (nc != NULL)
		nc->refs++;
	list_push(&t->pending, tk);
	t->zone_count[slot]++;
	counter_inc(&t->ctr.ub_lookups);
	/* may call resolved() before it returns (local data) */
	int id;
	int rc = ub_resolve_event(nc ? nc->ctx : t->ctx, name, job->qtype, job->qclass, tk, resolved, &id);
	if (rc != 0) {
		log_warn("libunbound cannot take %s: %s", name, ub_strerror(rc));
		ticket_put(t, tk);
		refuse_job(t, job, NULL);
	}
}

int resolve_normal_run_here(struct resolve_normal *p, unsigned idx, struct job *job)
{
	if (!take_slot(p))
		return -EBUSY;
	counter_inc(&p->threads[idx].ctr.started_here);
	start_job(&p->threads[idx], job);
	return 0;
}

struct uloop *resolve_normal_loop(struct resolve_normal *p, unsigned idx)
{
	return p->colocated && idx < p->nthreads ? p->threads[idx].loop : NULL;
}

static void on_jobs(int fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct nthread *t = arg;
	struct mq_node *m = mq_take_all(&t->jobs);
	while (m) {
		struct job *job = (struct job *)m;
		m = m->next;
		start_job(t, job);
	}
}

/* Delete stub contexts no loop knows any more (detached, or never taken). */
static void nctx_delete(struct nctx *nc)
{
	while (nc != NULL) {
		struct nctx *next = nc->next;
		ubctx_free(nc->ctx);
		uloop_view_free(nc->view);
		free(nc);
		nc = next;
	}
}

/* The stub context goes to the retired list: detached and handed to the builder once no lookup runs in it. */
static void stub_retire(struct nthread *t)
{
	if (t->stub == NULL)
		return;
	t->stub->next = t->retired;
	t->retired = t->stub;
	t->stub = NULL;
}

/*
 * The thread's tick: take the stub context the builder made for the
 * current set (the old one retires), and hand the builder the retired
 * ones whose lookups are over, their events out of the loop first. No
 * libunbound set-up or teardown runs here: a tick costs the same with
 * 100,000 flagged subtrees as with one.
 */
static void stub_refresh(struct nthread *t)
{
	struct nctx *nc = atomic_exchange_explicit(&t->stub_next, NULL, memory_order_acq_rel);
	if (nc != NULL) {
		stub_retire(t);
		if (nc->ctx != NULL)
			t->stub = nc;
		else
			free(nc); /* the set has no subtree, or its context failed (logged) */
	}
	struct nctx *done = NULL;
	for (struct nctx **pp = &t->retired; *pp;) {
		nc = *pp;
		if (nc->refs > 0) {
			pp = &nc->next;
			continue;
		}
		*pp = nc->next;
		uloop_view_detach(nc->view); /* from here on the loop never names its events */
		nc->next = done;
		done = nc;
	}
	if (done == NULL)
		return;
	struct resolve_normal *p = t->pool;
	pthread_mutex_lock(&p->build_lock);
	struct nctx *last = done;
	while (last->next != NULL)
		last = last->next;
	last->next = p->trash;
	p->trash = done;
	pthread_cond_signal(&p->build_cond);
	pthread_mutex_unlock(&p->build_lock);
}

struct names {
	const char **v;
	size_t n;
};

static void names_add(const char *name, void *arg)
{
	struct names *ns = arg;
	ns->v[ns->n++] = name;
}

static bool build_stopping(struct resolve_normal *p)
{
	pthread_mutex_lock(&p->build_lock);
	bool stop = p->build_stop;
	pthread_mutex_unlock(&p->build_lock);
	return stop;
}

/*
 * The builder: a stub context for every thread, for the flagged subtrees
 * of s (sig), each handed to its thread through stub_next. A context made
 * for a thread that has not taken the previous one yet replaces it (that
 * one never ran: deleted here). A newer set arriving half-way ends the
 * round; the next one makes contexts for it.
 */
static void stub_build(struct resolve_normal *p, struct snapshot *s, uint64_t sig)
{
	uint64_t t0 = clock_ns();
	struct names ns = { .v = sig != 0 ? calloc(domains_count(s->domains) + 1, sizeof(*ns.v)) : NULL };
	if (ns.v != NULL)
		domains_each_subtree(s->domains, names_add, &ns);
	const struct conf *c = s->conf;
	unsigned made = 0;
	for (unsigned i = 0; i < p->nthreads; i++) {
		struct nthread *t = &p->threads[i];
		if (build_stopping(p))
			break;
		if (i > 0 && snapshot_generation(p->snaps) != s->generation) {
			struct snapshot *cur = snapshot_get(p->snaps);
			bool newer = cur != NULL && domains_subtree_sig(cur->domains) != sig;
			snapshot_release(cur);
			if (newer)
				break; /* the next round makes the newer set's */
		}
		struct nctx *nc = calloc(1, sizeof(*nc));
		if (nc == NULL)
			break;
		nc->sig = sig;
		if (ns.v != NULL && (nc->view = uloop_view_new(t->loop)) != NULL)
			nc->ctx = ubctx_new(c, uloop_view_base(nc->view),
			                    &(struct ubctx_share){ .idx = t->idx + 1, .of = p->nthreads,
			                                           .whole_rate = p->colocated,
			                                           .outgoing = c->resolver.outgoing,
			                                           .noutgoing = c->resolver.noutgoing, .stubs = ns.v,
			                                           .nstubs = ns.n });
		if (sig != 0 && nc->ctx == NULL)
			log_warn("normal pool: no stub context for %zu flagged subtree(s) (thread %u); chains into them are "
			         "followed without ECS until the next change of flags",
			         ns.n, i);
		made += nc->ctx != NULL;
		struct nctx *old = atomic_exchange_explicit(&t->stub_next, nc, memory_order_acq_rel);
		nctx_delete(old);
	}
	if (made > 0)
		log_info("normal pool: stub contexts for %zu flagged subtree(s) ready for %u thread(s) in %llu ms", ns.n,
		         made, (unsigned long long)((clock_ns() - t0) / 1000000u));
	free(ns.v);
}

static void *builder_main(void *arg)
{
	struct resolve_normal *p = arg;
	/* Background work: on a box with every core busy answering, the
	 * listeners go first and the contexts come a little later (Linux
	 * gives each thread its own nice value). */
	id_t tid = (id_t)gettid();
	errno = 0;
	int nice = getpriority(PRIO_PROCESS, tid);
	if (errno == 0)
		(void)setpriority(PRIO_PROCESS, tid, nice + NORMAL_BUILD_NICE > 19 ? 19 : nice + NORMAL_BUILD_NICE);
	uint64_t seen_gen = 0, want = 0; /* the set last built or tried: no retry after a failure */
	pthread_mutex_lock(&p->build_lock);
	while (!p->build_stop) {
		struct nctx *trash = p->trash;
		p->trash = NULL;
		pthread_mutex_unlock(&p->build_lock);
		nctx_delete(trash);
		uint64_t g = snapshot_generation(p->snaps);
		if (g != seen_gen) {
			struct snapshot *s = snapshot_get(p->snaps);
			if (s != NULL) {
				seen_gen = s->generation;
				uint64_t sig = domains_subtree_sig(s->domains);
				if (sig != want) {
					want = sig;
					stub_build(p, s, sig);
				}
				snapshot_release(s);
			}
		}
		pthread_mutex_lock(&p->build_lock);
		p->build_rounds++;
		pthread_cond_broadcast(&p->build_cond);
		if (p->build_stop || p->trash != NULL)
			continue;
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		uint64_t ns = (uint64_t)until.tv_nsec + NORMAL_BUILD_POLL_NS;
		until.tv_sec += (time_t)(ns / 1000000000u);
		until.tv_nsec = (long)(ns % 1000000000u);
		pthread_cond_timedwait(&p->build_cond, &p->build_lock, &until);
	}
	pthread_mutex_unlock(&p->build_lock);
	return NULL;
}

/*
 * Fail what has waited past the deadline; the oldest are at the tail.
 * The lookup stays with libunbound (an orphan ticket) until it gives up,
 * bounded by its own limits (ubctx.c: ratelimit, outgoing-range) and by
 * resolver.zone_inflight here.
 */
static void on_tick(int fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct nthread *t = arg;
	uint64_t now = clock_ns();
	if (++t->ticks % 10 == 0)
		tickets_trim(t);
	stub_refresh(t);
	while (!list_empty(&t->pending)) {
		struct ticket *tk = t->pending.prev;
		if (now - tk->start_ns < NORMAL_DEADLINE_NS)
			break;
		struct job *job = tk->job;
		tk->job = NULL;
		list_unlink(tk);
		list_push(&t->orphans, tk);
		atomic_fetch_sub(&t->pool->inflight, 1);
		static const struct wire_ede slow = { WIRE_EDE_NO_REACHABLE_AUTHORITY, "resolution timed out" };
		counter_inc(&t->ctr.upstream_timeouts);
		log_failure(job, "no answer within 4 s (libunbound goes on trying)");
		inflight_fail(job, WIRE_RCODE_SERVFAIL, &slow, true);
	}
	/* serve-stale's client response timer, oldest first: the jobs run on */
	for (struct ticket *tk = t->pending.prev; tk != &t->pending; tk = tk->prev) {
		if (now - tk->start_ns < INFLIGHT_STALE_CLIENT_NS)
			break;
		inflight_stale_early(tk->job);
	}
}

static void on_stop(int fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct nthread *t = arg;
	uloop_break(t->loop);
}

static int thread_init(struct resolve_normal *p, struct nthread *t, const struct conf *c)
{
	t->pool = p;
	list_init(&t->pending);
	list_init(&t->orphans);
	t->zone_count = calloc(NORMAL_ZONE_SLOTS, sizeof(*t->zone_count));
	if (t->zone_count == NULL || mq_init(&t->jobs) != 0)
		return -1;
	t->loop = uloop_new();
	if (t->loop == NULL)
		return -1;
	t->ctx = ubctx_new(c, uloop_ub_base(t->loop),
	                   &(struct ubctx_share){ .idx = t->idx, .of = p->nthreads, .whole_rate = p->colocated,
	                                          .outgoing = c->resolver.outgoing,
	                                          .noutgoing = c->resolver.noutgoing });
	if (t->ctx == NULL)
		return -1;
	t->jobs_ev = uloop_event_new(t->loop, t->jobs.efd, UB_EV_READ | UB_EV_PERSIST, on_jobs, t);
	t->tick_ev = uloop_event_new(t->loop, -1, UB_EV_PERSIST, on_tick, t);
	if (t->jobs_ev == NULL || t->tick_ev == NULL)
		return -1;
	struct timeval tick = { 0, NORMAL_TICK_US };
	if (uloop_event_add(t->jobs_ev, NULL) != 0 || uloop_event_add(t->tick_ev, &tick) != 0)
		return -1;
	if (p->colocated)
		return 0; /* the listener's loop stops on the daemon's stop */
	t->stop_ev = uloop_event_new(t->loop, p->stop_fd, UB_EV_READ | UB_EV_PERSIST, on_stop, t);
	if (t->stop_ev == NULL || uloop_event_add(t->stop_ev, NULL) != 0)
		return -1;
	return 0;
}

struct resolve_normal *resolve_normal_new(const struct conf *c, struct snapshot_slot *snaps, int stop_fd, bool colocated)
{
	struct resolve_normal *p = calloc(1, sizeof(*p));
	if (p == NULL)
		return NULL;
	p->snaps = snaps;
	p->stop_fd = stop_fd;
	p->nthreads = c->resolver.threads ? c->resolver.threads : 1;
	p->colocated = colocated;
	p->zone_cap = c->resolver.zone_inflight;
	pthread_mutex_init(&p->build_lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->build_cond, &ca);
	pthread_condattr_destroy(&ca);
	hash_key_random(&p->shard_key);
	hash_key_random(&p->zone_key);
	p->threads = calloc(p->nthreads, sizeof(*p->threads));
	if (p->threads == NULL)
		goto fail;
	for (unsigned i = 0; i < p->nthreads; i++) {
		p->threads[i].idx = i;
		p->threads[i].jobs.efd = -1;
	}
	for (unsigned i = 0; i < p->nthreads; i++)
		if (thread_init(p, &p->threads[i], c) != 0)
			goto fail;
	return p;
fail:
	log_err("cannot set up the normal resolution pool");
	resolve_normal_free(p);
	return NULL;
}

static void *thread_main(void *arg)
{
	struct nthread *t = arg;
	uloop_run(t->loop);
	return NULL;
}

int resolve_normal_start(struct resolve_normal *p)
{
	/* The builder starts here, not at setup: as the user that will
	 * resolve, since a stub context reads its files when it is made. The
	 * first contexts are taken before any thread runs (and so before any
	 * listener takes a query) when they are ready soon enough. */
	int rc = pthread_create(&p->builder, NULL, builder_main, p);
	if (rc != 0)
		return -rc;
	p->builder_started = true;
	struct snapshot *s = snapshot_get(p->snaps);
	bool small = s == NULL || domains_count(s->domains) <= NORMAL_BUILD_START_WAIT_MAX;
	snapshot_release(s);
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	uint64_t ns = (uint64_t)until.tv_nsec + (small ? NORMAL_BUILD_START_WAIT_NS : 0);
	until.tv_sec += (time_t)(ns / 1000000000u);
	until.tv_nsec = (long)(ns % 1000000000u);
	pthread_mutex_lock(&p->build_lock);
	while (p->build_rounds == 0 && pthread_cond_timedwait(&p->build_cond, &p->build_lock, &until) == 0)
		;
	bool ready = p->build_rounds > 0;
	pthread_mutex_unlock(&p->build_lock);
	if (!ready)
		log_info("normal pool: the stub contexts are still being made; until they are ready, chains into "
		         "flagged subtrees are followed without ECS");
	for (unsigned i = 0; i < p->nthreads; i++)
		stub_refresh(&p->threads[i]);
	for (unsigned i = 0; i < p->nthreads && !p->colocated; i++) {
		struct nthread *t = &p->threads[i];
		rc = pthread_create(&t->thread, NULL, thread_main, t);
		if (rc != 0)
			return -rc;
		t->started = true;
	}
	return 0;
}

void resolve_normal_join(struct resolve_normal *p)
{
	if (p == NULL)
		return;
	if (p->builder_started) {
		/* a context being made is finished first (libunbound's set-up cannot be cut short) */
		pthread_mutex_lock(&p->build_lock);
		p->build_stop = true;
		pthread_cond_signal(&p->build_cond);
		pthread_mutex_unlock(&p->build_lock);
		pthread_join(p->builder, NULL);
		p->builder_started = false;
	}
	if (p->threads == NULL)
		return;
	for (unsigned i = 0; i < p->nthreads; i++) {
		struct nthread *t = &p->threads[i];
		if (t->started) {
			pthread_join(t->thread, NULL);
			t->started = false;
		}
	}
}

static void thread_free(struct nthread *t)
{
	/* Deleting a context ends libunbound's work; no callbacks after it. */
	if (t->ctx)
		ub_ctx_delete(t->ctx);
	stub_retire(t);
	nctx_delete(atomic_exchange(&t->stub_next, NULL)); /* made, never taken */
	for (struct nctx *nc = t->retired; nc; nc = nc->next) {
		ubctx_free(nc->ctx);
		nc->ctx = NULL;
	}
	if (t->zone_count) {
		while (!list_empty(&t->pending)) {
			struct ticket *tk = t->pending.next;
			struct job *job = tk->job;
			ticket_put(t, tk);
			inflight_fail(job, WIRE_RCODE_SERVFAIL, NULL, false);
		}
		while (!list_empty(&t->orphans))
			ticket_put(t, t->orphans.next);
	}
	while (t->spare) {
		struct ticket *tk = t->spare;
		t->spare = tk->next;
		free(tk);
	}
	nctx_delete(t->retired); /* after the tickets: putting one touches its context's refs */
	t->retired = NULL;
	free(t->zone_count);
	if (t->jobs.efd >= 0) {
		struct mq_node *m = mq_take_all(&t->jobs);
		while (m) {
			struct job *job = (struct job *)m;
			m = m->next;
			inflight_fail(job, WIRE_RCODE_SERVFAIL, NULL, false);
		}
		mq_deinit(&t->jobs);
	}
	if (t->jobs_ev)
		uloop_event_free(t->jobs_ev);
	if (t->stop_ev)
		uloop_event_free(t->stop_ev);
	if (t->tick_ev)
		uloop_event_free(t->tick_ev);
	uloop_free(t->loop); /* after every context in it */
}

void resolve_normal_free(struct resolve_normal *p)
{
	if (p == NULL)
		return;
	resolve_normal_join(p);
	if (p->threads)
		for (unsigned i = 0; i < p->nthreads; i++)
			thread_free(&p->threads[i]);
	nctx_delete(p->trash);
	free(p->threads);
	pthread_cond_destroy(&p->build_cond);
	pthread_mutex_destroy(&p->build_lock);
	free(p);
}
