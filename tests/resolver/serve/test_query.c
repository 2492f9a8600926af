/* SPDX-License-Identifier: BSD-3-Clause */
/* resolver/serve/query.c branch by branch, without sockets: drop, refuse, hit, miss, coalesce, EDNS routing, chains. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>

#include <arpa/inet.h>
#include <ldns/ldns.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partition/partition.h"
#include "resolver/base/clock.h"
#include "resolver/serve/query.h"
#include "tests/fixtures/domains_store.h"
#include "tests/fixtures/messages.h"
#include "wire/answer.h"
#include "wire/names.h"
#include "wire/upstream.h"

static const char config[] =
	"server: { listen: [ \"127.0.0.1@5353\" ], allow: [ 127.0.0.0/8, 192.0.2.0/24 ] }\n"
	"partitions:\n"
	"  unmatched: common\n"
	"  list:\n"
	"    - { name: nanjing, mapped: 198.51.100.1, prefixes: [ 127.0.1.0/24, 198.51.100.0/26 ] }\n"
	"    - { name: suzhou, mapped: 198.51.100.65, prefixes: [ 127.0.2.0/24, 198.51.100.64/26 ] }\n";

static const struct fixture_domain flagged[] = {
	{ "video.cdn.test.", false, CONF_POLICY_ITERATE },
};

#define MAX_JOBS 8

/* Everything one test runs against: a snapshot, cache, in-flight table and a fake pool. */
struct env {
	struct fixture_store *fs;
	struct snapshot_slot slot;
	struct cache *cache;
	struct inflight *inflight;
	struct mq replies;
	struct counters ctr;
	struct partition_counters pctr[PARTITION_MAX + 1];
	struct query_ctx x;
	struct job *jobs[MAX_JOBS]; /* dispatched, in order */
	int njobs;
	uint8_t out[65535];
};

static void fake_dispatch(void *arg, struct job *job)
{
	struct env *e = arg;
	assert_true(e->njobs < MAX_JOBS);
	e->jobs[e->njobs++] = job;
}

static struct env *env_new(const char *yaml)
{
	struct env *e = calloc(1, sizeof(*e));
	assert_non_null(e);
	e->fs = fixture_store_new("query", flagged, 1);
	assert_non_null(e->fs);
	struct conf *c = NULL;
	unsigned nerr = 0;
	assert_int_equal(conf_load_string(yaml, strlen(yaml), "test.yaml", stderr, &c, &nerr), 0);
	/* the snapshot takes the domain set; the fixture keeps only its store */
	snapshot_slot_init(&e->slot);
	assert_int_equal(snapshot_publish(&e->slot, c, e->fs->domains, NULL, 1), 0);
	e->fs->domains = NULL;
	e->cache = cache_new(1 << 20, 0);
	e->inflight = inflight_new(e->cache, &e->slot);
	assert_int_equal(mq_init(&e->replies), 0);
	e->x = (struct query_ctx){ .snap = snapshot_get(&e->slot), .cache = e->cache, .inflight = e->inflight,
	                           .replies = &e->replies, .dispatch = fake_dispatch, .dispatch_arg = e,
	                           .ctr = &e->ctr, .pctr = e->pctr };
	const struct conf *cf = e->x.snap->conf;
	e->x.rl = ratelimit_new(cf->server.client_qps, cf->server.client_prefix4, cf->server.client_prefix6);
	assert_non_null(e->x.rl);
	return e;
}

static void env_free(struct env *e)
{
	for (int i = 0; i < e->njobs; i++)
		if (e->jobs[i])
			inflight_fail(e->jobs[i], WIRE_RCODE_SERVFAIL, NULL, false);
	struct mq_node *n = mq_take_all(&e->replies);
	while (n) {
		struct waiter *w = (struct waiter *)n;
		n = n->next;
		inflight_waiter_free(e->inflight, w);
	}
	mq_deinit(&e->replies);
	snapshot_release(e->x.snap);
	ratelimit_free(e->x.rl);
	inflight_free(e->inflight);
	cache_free(e->cache);
	snapshot_slot_deinit(&e->slot);
	assert_int_equal(fixture_store_free(e->fs), 0);
	free(e);
}

/* ---- job free lists ---- */

struct ender {
	struct job **jobs;
	int n;
};

static void *end_jobs(void *arg)
{
	struct ender *en = arg;
	for (int i = 0; i < en->n; i++)
		inflight_fail(en->jobs[i], WIRE_RCODE_SERVFAIL, NULL, false);
	return NULL;
}

/* A new job for name (text), joined in e's in-flight table. */
static struct job *join_new(struct env *e, const char *text)
{
	uint8_t key[ROUTE_KEY_MAX], name[WIRE_MAX_NAME];
	int nl = wire_name_from_text(text, name, sizeof(name));
	assert_true(nl > 0);
	size_t kl = route_key_build(key, 0, 1, 1, 0, name, (size_t)nl);
	struct job *j = NULL;
	assert_int_equal(inflight_join(e->inflight, key, kl, e->x.snap, NULL, &j), 1);
	return j;
}

/* A flood's jobs, ended by a pool thread, do not all stay on their owner's free list. */
static void test_free_list_bound(void **state)
{
	struct env *e = *state;
	enum { N = 3000 };
	struct job **jobs = calloc(N, sizeof(*jobs));
	assert_non_null(jobs);
	for (int i = 0; i < N; i++) {
		char text[64];
		snprintf(text, sizeof(text), "flood%d.example.", i);
		jobs[i] = join_new(e, text);
	}
	struct ender en = { jobs, N };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, end_jobs, &en), 0);
	pthread_join(th, NULL);
	size_t kept = inflight_pooled(e->inflight);
	if (kept > 300)
		fail_msg("%zu of %d jobs ended by another thread kept for their owner", kept, N);
	assert_true(kept > 0); /* some are recycled */
	/* and they are handed out again */
	struct job *j = join_new(e, "again.example.");
	assert_int_equal(inflight_pooled(e->inflight), 0);
	inflight_fail(j, WIRE_RCODE_SERVFAIL, NULL, false);
	free(jobs);
}

/* What a flood left on a free list goes back to malloc once it sat unused for a whole trim interval. */
static void test_free_list_trim(void **state)
{
	struct env *e = *state;
	enum { N = 100 };
	struct job *jobs[N];
	for (int i = 0; i < N; i++) {
		char text[64];
		snprintf(text, sizeof(text), "trim%d.example.", i);
		jobs[i] = join_new(e, text);
	}
	for (int i = 0; i < N; i++)
		inflight_fail(jobs[i], WIRE_RCODE_SERVFAIL, NULL, false); /* by their owner: onto its list */
	size_t held = inflight_cached(e->inflight);
	assert_true(held >= N);
	inflight_trim(e->inflight); /* the jobs arrived in this interval: kept */
	assert_int_equal(inflight_cached(e->inflight), held);
	/* one is used in the next interval: the rest were never needed */
	inflight_fail(join_new(e, "used.example."), WIRE_RCODE_SERVFAIL, NULL, false);
	inflight_trim(e->inflight);
	size_t left = inflight_cached(e->inflight);
	if (left > 1)
		fail_msg("%zu of %zu free-list entries kept after an interval that needed one", left, held);
	inflight_trim(e->inflight);
	assert_int_equal(inflight_cached(e->inflight), 0);
}

static int setup(void **state)
{
	*state = env_new(config);
	return 0;
}

static int teardown(void **state)
{
	env_free(*state);
	return 0;
}

/* A client at ip (IPv4 text), UDP. */
struct client_addr {
	struct sockaddr_storage ss;
	struct query_client cl;
};

static void client_at(struct client_addr *ca, const char *ip)
{
	memset(ca, 0, sizeof(*ca));
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ca->ss;
	s4->sin_family = AF_INET;
	s4->sin_port = htons(40000);
	assert_int_equal(inet_pton(AF_INET, ip, &s4->sin_addr), 1);
	ca->cl = (struct query_client){ .tcp = false, .udp_fd = -1, .peer = &ca->ss, .peer_len = sizeof(*s4) };
}

/* Build a query for name/qtype (class qclass) with EDNS. @return its length. */
static size_t make_query(uint8_t *buf, size_t cap, const char *name, uint16_t qtype, uint16_t qclass)
{
	uint8_t wname[WIRE_MAX_NAME];
	int n = wire_name_from_text(name, wname, sizeof(wname));
	assert_true(n > 0);
	int len = wire_query_build(0x1234, true, false, wname, (size_t)n, qtype, qclass, NULL, buf, cap);
	assert_true(len > 0);
	return (size_t)len;
}

/* Process a query for name from ip. @return query_process's result. */
static int ask(struct env *e, const char *ip, const char *name, uint16_t qtype)
{
	struct client_addr ca;
	client_at(&ca, ip);
	uint8_t q[512];
	size_t len = make_query(q, sizeof(q), name, qtype, WIRE_CLASS_IN);
	return query_process(&e->x, &ca.cl, q, len, e->out, sizeof(e->out));
}

static int reply_rcode(const uint8_t *msg)
{
	return msg[3] & 0x0f;
}

/* An upstream response to job: its question, the given answer records (zone-file text). */
static uint8_t *make_response(const struct job *job, const char *const *rrs, size_t *len)
{
	char qname[512];
	assert_true(wire_name_to_text(job->qname, job->qname_len, qname, sizeof(qname)) > 0);
	struct fixture_msg m = { .qname = qname, .qtype = job->qtype };
	for (size_t i = 0; rrs[i] && i < 7; i++)
		m.an[i] = rrs[i];
	uint8_t *wire = fixture_message(&m, len);
	assert_non_null(wire);
	return wire;
}

/* End dispatched job i with the answer records rrs. */
static void complete(struct env *e, int i, const char *const *rrs)
{
	size_t len;
	uint8_t *resp = make_response(e->jobs[i], rrs, &len);
	inflight_done(e->jobs[i], resp, len, !e->jobs[i]->edns); /* as the pools call it */
	e->jobs[i] = NULL;
	free(resp);
}

/* Take the waiters queued back, in any order. @return how many. */
static int take_replies(struct env *e, struct waiter **out, int max)
{
	int n = 0;
	for (struct mq_node *m = mq_take_all(&e->replies); m; m = m->next) {
		assert_true(n < max);
		out[n++] = (struct waiter *)m;
	}
	return n;
}

static void test_drops_and_refusals(void **state)
{
	struct env *e = *state;
	struct client_addr ca;
	client_at(&ca, "127.0.0.9");
	static const uint8_t shortpkt[5] = { 1, 2, 3, 4, 5 };
	assert_int_equal(query_process(&e->x, &ca.cl, shortpkt, sizeof(shortpkt), e->out, sizeof(e->out)), 0);
	assert_int_equal(counter_get(&e->ctr.dropped), 1);

	uint8_t q[512];
	size_t len = make_query(q, sizeof(q), "www.example.", WIRE_TYPE_A, WIRE_CLASS_IN);
	q[2] |= 0x80; /* QR=1: a response sent to us is never answered */
	assert_int_equal(query_process(&e->x, &ca.cl, q, len, e->out, sizeof(e->out)), 0);

	int n = ask(e, "203.0.113.7", "www.example.", WIRE_TYPE_A);
	assert_true(n > 0);
	assert_int_equal(reply_rcode(e->out), WIRE_RCODE_REFUSED); /* not in server.allow */

	n = ask(e, "127.0.0.9", "example.", 252);
	assert_true(n > 0);
	assert_int_equal(reply_rcode(e->out), WIRE_RCODE_REFUSED); /* AXFR */

	len = make_query(q, sizeof(q), "version.bind.", WIRE_TYPE_TXT, 3);
	n = query_process(&e->x, &ca.cl, q, len, e->out, sizeof(e->out));
	assert_true(n > 0);
	assert_int_equal(reply_rcode(e->out), WIRE_RCODE_REFUSED); /* class CH */

	q[2] = 0x28; /* opcode UPDATE */
	q[2] &= (uint8_t)~0x80;
	n = query_process(&e->x, &ca.cl, q, len, e->out, sizeof(e->out));
	assert_true(n > 0);
	assert_int_equal(reply_rcode(e->out), WIRE_RCODE_NOTIMP);
	assert_int_equal(e->njobs, 0); /* nothing went upstream */
}

static void test_miss_coalesce_then_hit(void **state)
{
	struct env *e = *state;
	assert_int_equal(ask(e, "127.0.0.9", "www.example.", WIRE_TYPE_A), -1);
	assert_int_equal(e->njobs, 1);
	assert_false(e->jobs[0]->edns);
	assert_int_equal(e->jobs[0]->partition, PARTITION_COMMON);
	/* the same name from a partitioned client shares the common resolution */
	assert_int_equal(ask(e, "127.0.1.5", "WWW.example.", WIRE_TYPE_A), -1);
	assert_int_equal(e->njobs, 1);
	assert_int_equal(counter_get(&e->ctr.coalesced), 1);

	complete(e, 0, (const char *const[]){ "www.example. 300 IN A 192.0.2.80", NULL });
	struct waiter *w[4];
	assert_int_equal(take_replies(e, w, 4), 2);
	for (int i = 0; i < 2; i++) {
		int n = query_answer(&e->x, w[i], e->out, sizeof(e->out));
		assert_true(n > 12);
		assert_int_equal(reply_rcode(e->out), WIRE_RCODE_NOERROR);
		assert_int_equal((e->out[6] << 8) | e->out[7], 1); /* one answer record */
		inflight_waiter_free(e->inflight, w[i]);
	}
	/* now a hit: answered at once, nothing dispatched */
	int n = ask(e, "127.0.2.5", "www.example.", WIRE_TYPE_A);
	assert_true(n > 12);
	assert_int_equal(e->njobs, 1);
	assert_int_equal(counter_get(&e->ctr.hits), 1);
	assert_int_equal(counter_get(&e->pctr[2].hits), 1);
}

static void test_flagged_name_per_partition(void **state)
{
	struct env *e = *state;
	assert_int_equal(ask(e, "127.0.1.5", "video.cdn.test.", WIRE_TYPE_A), -1);
	assert_int_equal(ask(e, "127.0.2.5", "video.cdn.test.", WIRE_TYPE_A), -1);
	assert_int_equal(ask(e, "127.0.0.9", "video.cdn.test.", WIRE_TYPE_A), -1);
	assert_int_equal(e->njobs, 3); /* two cities and the common cache: no coalescing across them */
	const struct job *nj = e->jobs[0], *sz = e->jobs[1], *common = e->jobs[2];
	assert_true(nj->edns);
	assert_int_equal(nj->partition, 1);
	assert_int_equal(nj->ecs.source, 32);
	uint8_t want[4];
	inet_pton(AF_INET, "198.51.100.1", want);
	assert_memory_equal(nj->ecs.addr, want, 4);
	assert_true(sz->edns);
	assert_int_equal(sz->partition, 2);
	inet_pton(AF_INET, "198.51.100.65", want);
	assert_memory_equal(sz->ecs.addr, want, 4);
	assert_false(common->edns); /* a client of no partition resolves normally */
	assert_int_equal(counter_get(&e->pctr[1].edns), 1);
}

/*
 * www.customer.example asked from nanjing: its normal answer CNAMEs into the
 * flagged video.cdn.test, and nanjing's client continues through the EDNS
 * pool from the target: job 1.
 */
static void chain_from_nanjing(struct env *e)
{
	assert_int_equal(ask(e, "127.0.1.5", "www.customer.example.", WIRE_TYPE_A), -1);
	assert_int_equal(e->njobs, 1);
	assert_false(e->jobs[0]->edns);
	complete(e, 0, (const char *const[]){ "www.customer.example. 300 IN CNAME video.cdn.test.",
	                                      "video.cdn.test. 60 IN A 192.0.2.1", NULL });
	struct waiter *w[2];
	assert_int_equal(take_replies(e, w, 2), 1);
	assert_int_equal(query_answer(&e->x, w[0], e->out, sizeof(e->out)), -1);
	inflight_waiter_free(e->inflight, w[0]);
	assert_int_equal(e->njobs, 2);
}

/* j continues www.customer.example's chain through the EDNS pool for partition part, from video.cdn.test. */
static void assert_chain_job(const struct job *j, unsigned part)
{
	assert_true(j->edns);
	assert_int_equal(j->partition, part);
	uint8_t target[WIRE_MAX_NAME];
	int tl = wire_name_from_text("video.cdn.test.", target, sizeof(target));
	assert_int_equal(j->start_len, (size_t)tl);
	assert_memory_equal(j->start, target, (size_t)tl);
	assert_non_null(j->prefix);
}

static void test_normal_chain_into_flagged_zone(void **state)
{
	struct env *e = *state;
	chain_from_nanjing(e);
	assert_chain_job(e->jobs[1], 1);
	/* a client of no partition gets the common answer from the cache */
	int n = ask(e, "127.0.0.9", "www.customer.example.", WIRE_TYPE_A);
	assert_true(n > 12);
	assert_int_equal((e->out[6] << 8) | e->out[7], 2);
	assert_int_equal(e->njobs, 2);
}

static bool is_common_key(const uint8_t *key, size_t klen, void *arg)
{
	(void)arg;
	return klen >= ROUTE_KEY_HDR && route_key_partition(key) == PARTITION_COMMON;
}

/* Count the answer records of the reply in e->out. */
static int ancount(const struct env *e)
{
	return (e->out[6] << 8) | e->out[7];
}

static void cache_put(struct env *e, unsigned part, const char *name, const char *const *rrs, uint32_t age,
                      uint32_t ttl);

/*
 * The normal pool's stub context stopped where the chain enters the flagged
 * zone (an incomplete chain): the cities continue through the EDNS pool; a
 * client of no partition, whether it waited for that job or hits its entry
 * later, has the name resolved again without stubs.
 */
static void test_incomplete_chain(void **state)
{
	struct env *e = *state;
	assert_int_equal(ask(e, "127.0.1.5", "www.customer.example.", WIRE_TYPE_A), -1);
	assert_int_equal(ask(e, "127.0.0.9", "www.customer.example.", WIRE_TYPE_A), -1); /* joins it */
	assert_int_equal(e->njobs, 1);
	assert_true(e->jobs[0]->stub_ok); /* made for nanjing, which has a mapped address */
	e->jobs[0]->stubbed = true;       /* as the pool would, in its stub context */
	complete(e, 0, (const char *const[]){ "www.customer.example. 300 IN CNAME video.cdn.test.", NULL });
	struct waiter *w[2];
	assert_int_equal(take_replies(e, w, 2), 2);
	for (int i = 0; i < 2; i++) {
		assert_true(w[i]->result->incomplete);
		assert_int_equal(query_answer(&e->x, w[i], e->out, sizeof(e->out)), -1);
		inflight_waiter_free(e->inflight, w[i]);
	}
	/* nanjing continues through the EDNS pool; the other client resolves the name again, without stubs */
	assert_int_equal(e->njobs, 3);
	int edns = e->jobs[1]->edns ? 1 : 2, plain = 3 - edns;
	assert_true(e->jobs[edns]->edns);
	assert_int_equal(e->jobs[edns]->partition, 1);
	assert_false(e->jobs[plain]->edns);
	assert_false(e->jobs[plain]->stub_ok);
	/* meanwhile another client of no partition hits the incomplete entry: a miss, joined to that job */
	assert_int_equal(ask(e, "127.0.0.10", "www.customer.example.", WIRE_TYPE_A), -1);
	assert_int_equal(e->njobs, 3);
	complete(e, plain, (const char *const[]){ "www.customer.example. 300 IN CNAME video.cdn.test.",
	                                          "video.cdn.test. 60 IN A 192.0.2.1", NULL });
	assert_int_equal(take_replies(e, w, 2), 2);
	for (int i = 0; i < 2; i++) {
		assert_true(query_answer(&e->x, w[i], e->out, sizeof(e->out)) > 12);
		assert_int_equal(ancount(e), 2); /* the whole answer */
		inflight_waiter_free(e->inflight, w[i]);
	}
	/* the complete chain replaced the entry: a hit for a client of no partition... */
	assert_true(ask(e, "127.0.0.11", "www.customer.example.", WIRE_TYPE_A) > 12);
	assert_int_equal(ancount(e), 2);
	/* ...and a suzhou client still continues through the EDNS pool */
	assert_int_equal(ask(e, "127.0.2.5", "www.customer.example.", WIRE_TYPE_A), -1);
	assert_int_equal(e->njobs, 4);
	assert_true(e->jobs[3]->edns);
	assert_int_equal(e->jobs[3]->partition, 2);
}

static void test_chain_hint(void **state)
{
	struct env *e = *state;
	e->x.hints = chainhint_new(0);
	assert_non_null(e->x.hints);
	/* nanjing's first query: the common chain, then nanjing's own entry of it */
	chain_from_nanjing(e);
	struct waiter *w[2];
	complete(e, 1, (const char *const[]){ "www.customer.example. 300 IN CNAME video.cdn.test.",
	                                      "video.cdn.test. 60 IN A 203.0.113.1", NULL });
	assert_int_equal(take_replies(e, w, 2), 1);
	assert_true(query_answer(&e->x, w[0], e->out, sizeof(e->out)) > 12);
	inflight_waiter_free(e->inflight, w[0]);
	/* a hit through the common entry leaves the hint */
	assert_true(ask(e, "127.0.1.6", "www.customer.example.", WIRE_TYPE_A) > 12);
	assert_int_equal(ancount(e), 2);

	/* nanjing's entry, found by the hint, due for a refresh: the refresh
	 * starts at the chain's target (from the common entry), as a miss's would */
	static const char *const spliced[] = { "www.customer.example. 300 IN CNAME video.cdn.test.",
		                               "video.cdn.test. 60 IN A 203.0.113.1", NULL };
	cache_put(e, 1, "www.customer.example.", spliced, 57, 60);
	assert_true(ask(e, "127.0.1.6", "www.customer.example.", WIRE_TYPE_A) > 12);
	assert_int_equal(e->njobs, 3);
	assert_chain_job(e->jobs[2], 1);
	assert_null(e->jobs[2]->waiters);
	assert_int_equal(counter_get(&e->ctr.prefetches), 1);
	complete(e, 2, spliced);

	/* with the common entry gone, the hint alone leads nanjing to its own entry */
	assert_true(cache_flush(e->cache, is_common_key, NULL) >= 1);
	int n = ask(e, "127.0.1.7", "www.customer.example.", WIRE_TYPE_A);
	assert_true(n > 12);
	assert_int_equal(ancount(e), 2);
	uint8_t node[4];
	inet_pton(AF_INET, "203.0.113.1", node);
	assert_non_null(memmem(e->out, (size_t)n, node, 4)); /* nanjing's node, not the common answer */
	assert_int_equal(e->njobs, 3);
	/* suzhou has no entry of its own: the stale hint costs a lookup, then the common miss */
	assert_int_equal(ask(e, "127.0.2.5", "www.customer.example.", WIRE_TYPE_A), -1);
	assert_int_equal(e->njobs, 4);
	assert_false(e->jobs[3]->edns);
	inflight_fail(e->jobs[3], WIRE_RCODE_SERVFAIL, NULL, false);
	e->jobs[3] = NULL;
	n = take_replies(e, w, 2);
	for (int i = 0; i < n; i++)
		inflight_waiter_free(e->inflight, w[i]);

	/* a new domain set (flags changed) retires every hint: nanjing misses the common entry */
	struct domains *d = NULL;
	assert_int_equal(domains_load(e->fs->store, &d, NULL), 0);
	struct conf *c = NULL;
	unsigned nerr = 0;
	assert_int_equal(conf_load_string(config, strlen(config), "test.yaml", stderr, &c, &nerr), 0);
	assert_int_equal(snapshot_publish(&e->slot, c, d, NULL, 2), 0);
	snapshot_release(e->x.snap);
	e->x.snap = snapshot_get(&e->slot);
	assert_int_equal(ask(e, "127.0.1.8", "www.customer.example.", WIRE_TYPE_A), -1);
	assert_int_equal(e->njobs, 5);
	assert_false(e->jobs[4]->edns);
	chainhint_free(e->x.hints);
	e->x.hints = NULL;
}

static void test_chainhint_table(void **state)
{
	(void)state;
	struct chainhint *t = chainhint_new(3000);
	assert_non_null(t);
	assert_int_equal(t->mask, 4095); /* rounded up to a power of two */
	uint64_t h = 0x123456789abcdef1ull;
	assert_false(chainhint_get(t, h, 100));
	chainhint_set(t, h, 160);
	assert_true(chainhint_get(t, h, 100));
	assert_true(chainhint_get(t, h, 159));
	assert_false(chainhint_get(t, h, 160)); /* expired */
	assert_false(chainhint_get(t, h ^ (1ull << 40), 100)); /* same slot, another name */
	assert_false(chainhint_get(t, 0, 100));                /* no hash: no hint */
	chainhint_set(t, h ^ (1ull << 40), 200);                /* a collision overwrites */
	assert_false(chainhint_get(t, h, 100));
	assert_false(chainhint_get(NULL, h, 100));
	chainhint_free(t);
}

static void test_unmatched_refuse(void **state)
{
	static const char refuse[] =
		"server: { listen: [ \"127.0.0.1@5353\" ], allow: [ 127.0.0.0/8 ] }\n"
		"partitions:\n"
		"  unmatched: refuse\n"
		"  list:\n"
		"    - { name: nanjing, mapped: 198.51.100.1, prefixes: [ 127.0.1.0/24, 198.51.100.0/26 ] }\n";
	struct env *e = env_new(refuse);
	int n = ask(e, "127.0.0.9", "www.example.", WIRE_TYPE_A);
	assert_true(n > 0);
	assert_int_equal(reply_rcode(e->out), WIRE_RCODE_REFUSED);
	assert_int_equal(ask(e, "127.0.1.9", "www.example.", WIRE_TYPE_A), -1);
	env_free(e);
}

static void test_reload_renumbers_partitions(void **state)
{
	struct env *e = *state;
	/* a flagged miss of nanjing (id 1) is in flight... */
	assert_int_equal(ask(e, "127.0.1.5", "video.cdn.test.", WIRE_TYPE_A), -1);
	assert_int_equal(e->jobs[0]->partition, 1);
	/* ...when a reload swaps the cities: id 1 is suzhou now */
	static const char swapped[] =
		"server: { listen: [ \"127.0.0.1@5353\" ], allow: [ 127.0.0.0/8, 192.0.2.0/24 ] }\n"
		"partitions:\n"
		"  unmatched: common\n"
		"  list:\n"
		"    - { name: suzhou, mapped: 198.51.100.65, prefixes: [ 127.0.2.0/24, 198.51.100.64/26 ] }\n"
		"    - { name: nanjing, mapped: 198.51.100.1, prefixes: [ 127.0.1.0/24, 198.51.100.0/26 ] }\n";
	struct conf *c = NULL;
	unsigned nerr = 0;
	assert_int_equal(conf_load_string(swapped, strlen(swapped), "swapped.yaml", stderr, &c, &nerr), 0);
	struct domains *d = NULL;
	assert_int_equal(domains_load(e->fs->store, &d, NULL), 0);
	assert_int_equal(snapshot_publish(&e->slot, c, d, NULL, 2), 0);
	snapshot_release(e->x.snap);
	e->x.snap = snapshot_get(&e->slot);
	/* nanjing's answer arrives: its client gets it, the cache must not keep it under id 1 */
	complete(e, 0, (const char *const[]){ "video.cdn.test. 60 IN A 203.0.113.1", NULL });
	struct waiter *w[2];
	assert_int_equal(take_replies(e, w, 2), 1);
	assert_true(query_answer(&e->x, w[0], e->out, sizeof(e->out)) > 12);
	inflight_waiter_free(e->inflight, w[0]);
	/* suzhou, id 1 under the new plan, misses instead of getting nanjing's node */
	assert_int_equal(ask(e, "127.0.2.5", "video.cdn.test.", WIRE_TYPE_A), -1);
	assert_int_equal(e->njobs, 2);
	assert_int_equal(e->jobs[1]->partition, 1);
	uint8_t want[4];
	inet_pton(AF_INET, "198.51.100.65", want);
	assert_memory_equal(e->jobs[1]->ecs.addr, want, 4);
}

static void test_any_and_rd0(void **state)
{
	struct env *e = *state;
	int n = ask(e, "127.0.0.9", "www.example.", WIRE_TYPE_ANY);
	assert_true(n > 12);
	assert_int_equal(reply_rcode(e->out), WIRE_RCODE_NOERROR);
	assert_int_equal((e->out[6] << 8) | e->out[7], 1); /* one synthesized HINFO (RFC 8482) */
	assert_int_equal(e->njobs, 0);
	/* RD=0: a miss is refused, not resolved */
	struct client_addr ca;
	client_at(&ca, "127.0.0.9");
	uint8_t q[512];
	size_t len = make_query(q, sizeof(q), "www.example.", WIRE_TYPE_A, WIRE_CLASS_IN);
	q[2] &= (uint8_t)~0x01; /* RD */
	n = query_process(&e->x, &ca.cl, q, len, e->out, sizeof(e->out));
	assert_true(n > 12);
	assert_int_equal(reply_rcode(e->out), WIRE_RCODE_REFUSED);
	assert_int_equal(e->njobs, 0);
	/* once cached, RD=0 gets the answer */
	assert_int_equal(ask(e, "127.0.0.9", "www.example.", WIRE_TYPE_A), -1);
	complete(e, 0, (const char *const[]){ "www.example. 300 IN A 192.0.2.80", NULL });
	struct waiter *w[2];
	assert_int_equal(take_replies(e, w, 2), 1);
	inflight_waiter_free(e->inflight, w[0]);
	n = query_process(&e->x, &ca.cl, q, len, e->out, sizeof(e->out));
	assert_true(n > 12);
	assert_int_equal(reply_rcode(e->out), WIRE_RCODE_NOERROR);
	assert_int_equal((e->out[6] << 8) | e->out[7], 1);
}

static void test_failure_remembered(void **state)
{
	struct env *e = *state;
	assert_int_equal(ask(e, "127.0.1.5", "video.cdn.test.", WIRE_TYPE_A), -1);
	const struct wire_ede ede = { WIRE_EDE_NO_REACHABLE_AUTHORITY, "no authority answered" };
	inflight_fail(e->jobs[0], WIRE_RCODE_SERVFAIL, &ede, true);
	e->jobs[0] = NULL;
	struct waiter *w[2];
	assert_int_equal(take_replies(e, w, 2), 1);
	int n = query_answer(&e->x, w[0], e->out, sizeof(e->out));
	inflight_waiter_free(e->inflight, w[0]);
	assert_true(n > 12);
	assert_int_equal(reply_rcode(e->out), WIRE_RCODE_SERVFAIL);
	/* within failure_ttl the same city gets the SERVFAIL (with its EDE) from the cache */
	n = ask(e, "127.0.1.6", "video.cdn.test.", WIRE_TYPE_A);
	assert_true(n > 12);
	assert_int_equal(reply_rcode(e->out), WIRE_RCODE_SERVFAIL);
	assert_int_equal(e->njobs, 1);
	bool has_ede = false;
	for (int i = 0; i + 6 <= n; i++)
		if (e->out[i] == 0 && e->out[i + 1] == WIRE_OPTION_EDE && e->out[i + 4] == 0 &&
		    e->out[i + 5] == WIRE_EDE_NO_REACHABLE_AUTHORITY)
			has_ede = true;
	assert_true(has_ede);
	/* another city is not affected */
	assert_int_equal(ask(e, "127.0.2.5", "video.cdn.test.", WIRE_TYPE_A), -1);
	assert_int_equal(e->njobs, 2);
}

static void test_client_limit(void **state)
{
	static const char limited[] =
		"server: { listen: [ \"127.0.0.1@5353\" ], allow: [ 127.0.0.0/8 ], client_qps: 10,\n"
		"          client_limit_action: slip, client_exempt: [ 127.0.0.8/32 ] }\n"
		"partitions: { list: [] }\n";
	struct env *e = env_new(limited);
	int replies = 0, tc = 0, dropped = 0;
	for (int i = 0; i < 40; i++) {
		int n = ask(e, "127.0.0.9", "www.example.", WIRE_TYPE_ANY);
		if (n == 0)
			dropped++;
		else if (e->out[2] & (WIRE_FLAG_TC >> 8))
			tc++;
		else
			replies++;
	}
	assert_int_equal(replies, 10);         /* the burst */
	assert_int_equal(tc, 15);              /* slip: every 2nd over the limit truncated... */
	assert_int_equal(dropped, 15);         /* ...the rest dropped */
	assert_int_equal(counter_get(&e->ctr.ratelimited), 30);
	/* another client, and an exempt one, are not limited */
	assert_true(ask(e, "127.0.0.10", "www.example.", WIRE_TYPE_ANY) > 0);
	for (int i = 0; i < 40; i++)
		assert_true(ask(e, "127.0.0.8", "www.example.", WIRE_TYPE_ANY) > 0);
	env_free(e);
}

/* ---- prefetch and serve-stale ---- */

/* Put an answer for name/qtype with records rrs in the cache under partition part's key,
 * stored age seconds ago for ttl seconds. */
static void cache_put(struct env *e, unsigned part, const char *name, const char *const *rrs, uint32_t age,
                      uint32_t ttl)
{
	struct fixture_msg m = { .qname = name, .qtype = WIRE_TYPE_A };
	for (size_t i = 0; rrs[i] && i < 7; i++)
		m.an[i] = rrs[i];
	size_t len;
	uint8_t *resp = fixture_message(&m, &len);
	assert_non_null(resp);
	uint8_t *blob;
	size_t blob_len;
	uint32_t life;
	assert_int_equal(wire_answer_prepare(resp, len, NULL, &blob, &blob_len, &life), 0);
	uint8_t *val = malloc(blob_len + 1);
	assert_non_null(val);
	size_t hdr = route_value_write_header(val, NULL, 0, NULL, 0);
	memcpy(val + hdr, blob, blob_len);
	uint8_t wname[WIRE_MAX_NAME], key[ROUTE_KEY_MAX];
	int n = wire_name_from_text(name, wname, sizeof(wname));
	assert_true(n > 0);
	wire_name_lower(wname, (size_t)n, wname);
	size_t klen = route_key_build(key, part, WIRE_TYPE_A, WIRE_CLASS_IN, 0, wname, (size_t)n);
	uint32_t now = clock_sec();
	assert_true(now > age);
	assert_int_equal(cache_insert(e->cache, key, klen, val, hdr + blob_len, now - age, ttl), 0);
	free(val);
	free(blob);
	free(resp);
}

/* The reply in e->out: TTL of its first answer record, and whether it carries EDE code. */
static uint32_t reply_ttl(const uint8_t *out, int n)
{
	ldns_pkt *pk = NULL;
	assert_int_equal(ldns_wire2pkt(&pk, out, (size_t)n), LDNS_STATUS_OK);
	assert_true(ldns_rr_list_rr_count(ldns_pkt_answer(pk)) > 0);
	uint32_t ttl = ldns_rr_ttl(ldns_rr_list_rr(ldns_pkt_answer(pk), 0));
	ldns_pkt_free(pk);
	return ttl;
}

static bool reply_has_ede(const uint8_t *out, int n, uint16_t code)
{
	for (int i = 12; i + 6 <= n; i++)
		if (out[i] == 0 && out[i + 1] == WIRE_OPTION_EDE && out[i + 4] == (code >> 8) && out[i + 5] == (code & 0xff))
			return true;
	return false;
}

static void test_prefetch(void **state)
{
	struct env *e = *state;
	static const char *const www[] = { "www.example. 100 IN A 192.0.2.80", NULL };
	/* stored 50 s ago for 100 s: a plain hit */
	cache_put(e, PARTITION_COMMON, "www.example.", www, 50, 100);
	assert_true(ask(e, "127.0.0.9", "www.example.", WIRE_TYPE_A) > 12);
	assert_int_equal(e->njobs, 0);
	/* 93 s ago: in its last tenth. Answered from the cache at once, and refreshed in the background */
	cache_put(e, PARTITION_COMMON, "www.example.", www, 93, 100);
	int n = ask(e, "127.0.0.9", "www.example.", WIRE_TYPE_A);
	assert_true(n > 12);
	assert_int_equal(reply_rcode(e->out), WIRE_RCODE_NOERROR);
	assert_true(reply_ttl(e->out, n) <= 7);
	assert_int_equal(e->njobs, 1);
	assert_null(e->jobs[0]->waiters); /* nobody waits for it */
	assert_false(e->jobs[0]->edns);
	assert_int_equal(counter_get(&e->ctr.prefetches), 1);
	assert_int_equal(counter_get(&e->ctr.misses), 0);
	assert_int_equal(counter_get(&e->ctr.hits), 2);
	/* once per entry: more hits while it runs (or after) start nothing */
	for (int i = 0; i < 3; i++)
		assert_true(ask(e, "127.0.2.9", "www.example.", WIRE_TYPE_A) > 12);
	assert_int_equal(e->njobs, 1);
	/* its answer replaces the entry; no client is answered */
	complete(e, 0, (const char *const[]){ "www.example. 300 IN A 192.0.2.81", NULL });
	struct waiter *w[2];
	assert_int_equal(take_replies(e, w, 2), 0);
	n = ask(e, "127.0.0.9", "www.example.", WIRE_TYPE_A);
	assert_true(n > 12);
	assert_true(reply_ttl(e->out, n) >= 298);
	assert_int_equal(e->njobs, 1);

	/* RD=0 is answered but starts nothing */
	cache_put(e, PARTITION_COMMON, "rd0.example.", (const char *const[]){ "rd0.example. 100 IN A 192.0.2.9", NULL },
	          95, 100);
	struct client_addr ca;
	client_at(&ca, "127.0.0.9");
	uint8_t q[512];
	size_t len = make_query(q, sizeof(q), "rd0.example.", WIRE_TYPE_A, WIRE_CLASS_IN);
	q[2] &= (uint8_t)~0x01;
	assert_true(query_process(&e->x, &ca.cl, q, len, e->out, sizeof(e->out)) > 12);
	assert_int_equal(e->njobs, 1);

	/* a flagged name: the city's entry, refreshed through the EDNS pool with the city's identity */
	cache_put(e, 1, "video.cdn.test.", (const char *const[]){ "video.cdn.test. 60 IN A 203.0.113.1", NULL }, 57, 60);
	assert_true(ask(e, "127.0.1.5", "video.cdn.test.", WIRE_TYPE_A) > 12);
	assert_int_equal(e->njobs, 2);
	const struct job *j = e->jobs[1];
	assert_true(j->edns);
	assert_int_equal(j->partition, 1);
	uint8_t want[4];
	inet_pton(AF_INET, "198.51.100.1", want);
	assert_memory_equal(j->ecs.addr, want, 4);
	assert_int_equal(counter_get(&e->pctr[1].edns), 1);
	/* it fails: the answer it was refreshing stays, no failure is remembered over it */
	const struct wire_ede ede = { WIRE_EDE_NO_REACHABLE_AUTHORITY, "no authority answered" };
	inflight_fail(e->jobs[1], WIRE_RCODE_SERVFAIL, &ede, true);
	e->jobs[1] = NULL;
	n = ask(e, "127.0.1.6", "video.cdn.test.", WIRE_TYPE_A);
	assert_true(n > 12);
	assert_int_equal(reply_rcode(e->out), WIRE_RCODE_NOERROR);
	assert_int_equal(e->njobs, 2);

	/* short lifetimes are never prefetched */
	cache_put(e, PARTITION_COMMON, "short.example.",
	          (const char *const[]){ "short.example. 9 IN A 192.0.2.9", NULL }, 8, 9);
	assert_true(ask(e, "127.0.0.9", "short.example.", WIRE_TYPE_A) > 12);
	assert_int_equal(e->njobs, 2);
}

static void test_prefetch_off(void **state)
{
	static const char off[] =
		"server: { listen: [ \"127.0.0.1@5353\" ], allow: [ 127.0.0.0/8 ] }\n"
		"cache: { prefetch: false }\n"
		"partitions: { list: [] }\n";
	struct env *e = env_new(off);
	cache_put(e, PARTITION_COMMON, "www.example.", (const char *const[]){ "www.example. 100 IN A 192.0.2.80", NULL },
	          95, 100);
	assert_true(ask(e, "127.0.0.9", "www.example.", WIRE_TYPE_A) > 12);
	assert_int_equal(e->njobs, 0);
	assert_int_equal(counter_get(&e->ctr.prefetches), 0);
	env_free(e);
}

static void test_serve_stale(void **state)
{
	struct env *e = *state;
	cache_set_stale(e->cache, INFLIGHT_STALE_MAX);
	static const char *const nj[] = { "video.cdn.test. 60 IN A 203.0.113.1", NULL };
	/* nanjing's answer expired 40 s ago; suzhou never had one */
	cache_put(e, 1, "video.cdn.test.", nj, 100, 60);
	assert_int_equal(ask(e, "127.0.1.5", "video.cdn.test.", WIRE_TYPE_A), -1);
	assert_int_equal(ask(e, "127.0.2.5", "video.cdn.test.", WIRE_TYPE_A), -1);
	assert_int_equal(e->njobs, 2);
	assert_int_equal(counter_get(&e->ctr.misses), 2);
	/* both resolutions fail */
	const struct wire_ede ede = { WIRE_EDE_NO_REACHABLE_AUTHORITY, "no authority answered" };
	for (int i = 0; i < 2; i++) {
		inflight_fail(e->jobs[i], WIRE_RCODE_SERVFAIL, &ede, true);
		e->jobs[i] = NULL;
	}
	struct waiter *w[2];
	assert_int_equal(take_replies(e, w, 2), 2);
	for (int i = 0; i < 2; i++) {
		int n = query_answer(&e->x, w[i], e->out, sizeof(e->out));
		assert_true(n > 12);
		if (w[i]->partition == 1) { /* the stale answer, TTL 30, EDE 3 */
			assert_int_equal(reply_rcode(e->out), WIRE_RCODE_NOERROR);
			assert_int_equal(reply_ttl(e->out, n), INFLIGHT_STALE_TTL);
			assert_true(reply_has_ede(e->out, n, WIRE_EDE_STALE_ANSWER));
		} else { /* nothing to serve */
			assert_int_equal(reply_rcode(e->out), WIRE_RCODE_SERVFAIL);
		}
		inflight_waiter_free(e->inflight, w[i]);
	}
	assert_int_equal(counter_get(&e->ctr.stale), 1);
	/* for the next 30 s nanjing is answered stale from the cache, without asking upstream */
	int n = ask(e, "127.0.1.6", "video.cdn.test.", WIRE_TYPE_A);
	assert_true(n > 12);
	assert_int_equal(reply_rcode(e->out), WIRE_RCODE_NOERROR);
	assert_int_equal(reply_ttl(e->out, n), INFLIGHT_STALE_TTL);
	assert_true(reply_has_ede(e->out, n, WIRE_EDE_STALE_ANSWER));
	assert_int_equal(e->njobs, 2);
	assert_int_equal(counter_get(&e->ctr.stale), 2);
	/* suzhou's failure is remembered (RFC 9520) as before */
	n = ask(e, "127.0.2.6", "video.cdn.test.", WIRE_TYPE_A);
	assert_int_equal(reply_rcode(e->out), WIRE_RCODE_SERVFAIL);
	assert_int_equal(e->njobs, 2);
	/* a client of no partition has its own (common) entry: not nanjing's */
	assert_int_equal(ask(e, "127.0.0.9", "video.cdn.test.", WIRE_TYPE_A), -1);
	assert_int_equal(e->njobs, 3);
}

static void test_serve_stale_off(void **state)
{
	struct env *e = *state; /* cache_set_stale never called: serve_stale false */
	cache_put(e, 1, "video.cdn.test.", (const char *const[]){ "video.cdn.test. 60 IN A 203.0.113.1", NULL }, 100,
	          60);
	assert_int_equal(ask(e, "127.0.1.5", "video.cdn.test.", WIRE_TYPE_A), -1);
	inflight_fail(e->jobs[0], WIRE_RCODE_SERVFAIL, NULL, true);
	e->jobs[0] = NULL;
	struct waiter *w[2];
	assert_int_equal(take_replies(e, w, 2), 1);
	assert_true(query_answer(&e->x, w[0], e->out, sizeof(e->out)) > 12);
	assert_int_equal(reply_rcode(e->out), WIRE_RCODE_SERVFAIL);
	inflight_waiter_free(e->inflight, w[0]);
	assert_int_equal(counter_get(&e->ctr.stale), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_drops_and_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_miss_coalesce_then_hit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flagged_name_per_partition, setup, teardown),
		cmocka_unit_test_setup_teardown(test_normal_chain_into_flagged_zone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_chain_hint, setup, teardown),
		cmocka_unit_test_setup_teardown(test_incomplete_chain, setup, teardown),
		cmocka_unit_test(test_chainhint_table),
		cmocka_unit_test(test_unmatched_refuse),
		cmocka_unit_test_setup_teardown(test_reload_renumbers_partitions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_any_and_rd0, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failure_remembered, setup, teardown),
		cmocka_unit_test(test_client_limit),
		cmocka_unit_test_setup_teardown(test_prefetch, setup, teardown),
		cmocka_unit_test(test_prefetch_off),
		cmocka_unit_test_setup_teardown(test_serve_stale, setup, teardown),
		cmocka_unit_test_setup_teardown(test_serve_stale_off, setup, teardown),
		cmocka_unit_test_setup_teardown(test_free_list_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_free_list_trim, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
