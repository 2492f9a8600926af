/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The EDNS pool: resolutions of EDNS domains for a partition. Its own threads,
 * sockets and libunbound contexts, so a flood here never delays normal
 * resolution. libunbound cannot send ECS, so each thread asks its own
 * libunbound context only for the zone cut and nameserver addresses, then
 * sends the ECS-bearing query itself (policy iterate), or sends it to the
 * forward targets (policy forward). CNAME chains are followed hop by hop,
 * each hop with the partition's ECS, and spliced into one answer.
 */
#include "resolver/pool/resolve_edns.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <unbound.h>
#include <unistd.h>

#include "partition/partition.h"
#include "resolver/base/clock.h"
#include "resolver/pool/edns_iter.h"
#include "resolver/cache/inflight.h"
#include "resolver/base/log.h"
#include "resolver/pool/steering.h"
#include "resolver/pool/tier.h"
#include "resolver/base/ubctx.h"
#include "resolver/pool/val.h"
#include "wire/names.h"
#include "wire/upstream.h"
#include "util/hash.h"

#define MAX_HOPS 8        /* CNAME hops followed across responses */
#define MAX_REFERRALS 6   /* referrals followed below the zone libunbound gave */
#define MAX_TRIES 4       /* upstream attempts per hop */
#define ZCACHE_SLOTS 1024
#define HEALTH_SLOTS 4096     /* servers whose health a thread remembers */
#define HEALTH_DOWN_AFTER 3   /* consecutive timeouts that mark a server down (for one zone) */
#define HEALTH_BACKOFF_MIN_MS 1000
#define HEALTH_BACKOFF_MAX_MS 120000
#define RATE_SLOTS 1024       /* zones whose upstream query rate a thread tracks */
#define BUDGET_SLOTS 1024     /* flagged rules whose resolutions in flight are counted */
#define BELOW_BITS 16384      /* the zone-cut cache's "a cut is cached below" filter (shed_hint_set) */
#define BELOW_REBUILD_NS (30 * 1000000000ull)
#define ZCACHE_MIN_TTL 5      /* seconds: a cut is kept for its NS TTL within these bounds */
#define ZCACHE_MAX_TTL 86400

/* What a client that sent EDNS is told when a resolution fails (RFC 8914). */
static const struct wire_ede EDE_UNREACHABLE = { WIRE_EDE_NO_REACHABLE_AUTHORITY, "no authority answered" };
static const struct wire_ede EDE_ERRORS = { WIRE_EDE_NO_REACHABLE_AUTHORITY, "authorities answered with errors" };
static const struct wire_ede EDE_NETWORK = { WIRE_EDE_NETWORK_ERROR, "network error" };
static const struct wire_ede EDE_INVALID = { WIRE_EDE_INVALID_DATA, "malformed answer" };
static const struct wire_ede EDE_MISMATCH = { WIRE_EDE_INVALID_DATA, "answers did not match the query" };
static const struct wire_ede EDE_TRUNCATED = { WIRE_EDE_INVALID_DATA, "truncated over TCP" };
static const struct wire_ede EDE_CHAIN = { WIRE_EDE_OTHER, "CNAME chain too long" };
static const struct wire_ede EDE_NO_ZONE = { WIRE_EDE_NO_REACHABLE_AUTHORITY, "zone servers not found" };
static const struct wire_ede EDE_NO_TARGETS = { WIRE_EDE_OTHER, "no forward targets" };
static const struct wire_ede EDE_SLOW = { WIRE_EDE_NO_REACHABLE_AUTHORITY, "resolution timed out" };
static const struct wire_ede EDE_DOWN = { WIRE_EDE_NO_REACHABLE_AUTHORITY, "every server of the zone is down" };
static const struct wire_ede EDE_RATE = { WIRE_EDE_OTHER, "zone query rate exceeded" };
static const struct wire_ede EDE_FAMILY = { WIRE_EDE_NO_REACHABLE_AUTHORITY, "no server of a family edns.outgoing has" };
static const struct wire_ede EDE_VAL_MALFORMED = { WIRE_EDE_INVALID_DATA, "answer cannot be validated" };
static const struct wire_ede EDE_CUT_BOGUS = { WIRE_EDE_DNSSEC_BOGUS, "the zone's SOA or NS did not validate" };
static const struct wire_ede EDE_CUT_EXPIRED = { WIRE_EDE_SIGNATURE_EXPIRED, "the zone's SOA or NS signature expired" };
static const struct wire_ede EDE_CUT_NOT_YET = { WIRE_EDE_SIGNATURE_NOT_YET_VALID,
	                                          "the zone's SOA or NS signature is not yet valid" };
static const struct wire_ede EDE_TIER = { WIRE_EDE_NO_REACHABLE_AUTHORITY, "no EDNS tier node answered" };
static const struct wire_ede EDE_TIER_ERROR = { WIRE_EDE_NO_REACHABLE_AUTHORITY, "the EDNS tier node answered with an error" };

/* Where a resolution is: finding the zone cut (SOA, NS, addresses), waiting
 * for another resolution's cut discovery, asking the zone's servers, or
 * fetching what the DNSSEC validation of a hop's answer needs. */
enum est { E_SOA, E_NS, E_ADDR, E_WAIT, E_QUERY, E_VALIDATE };
enum eev_kind { EEV_JOBS, EEV_UB, EEV_STOP, EEV_SOCK };

/* A tier node's probe (edns.tier; the first EDNS thread sends them all). */
struct tprobe {
	int fd;        /* a fresh socket per probe: a new random port each time; -1 = none out */
	uint16_t id;
};

struct eev {
	enum eev_kind kind;
	struct eres *r;
};

/* A zone cut: the zone's name and its servers' addresses. */
struct zentry {
	uint8_t name[WIRE_MAX_NAME];  /* the zone, lower case; or a bound whose cut could not be found */
	size_t name_len;
	uint64_t expires_ns;
	bool failed;                  /* finding the cut failed: names up to here fail at once until expiry */
	unsigned fail_s;              /* how long the last failure was remembered (doubles while it fails) */
	int naddr;
	struct sockaddr_storage addr[EDNS_MAX_SERVERS];
};

/* What a thread knows of one server for one zone (as Unbound's infra cache
 * keys it: a server may be silent for one zone and fine for another):
 * timeouts in a row, down until when. */
struct shealth {
	struct sockaddr_storage addr;
	uint64_t zone_hash;           /* the zone asked; 0 for forward targets */
	unsigned timeouts;
	unsigned backoff_ms;
	uint64_t down_until_ns;
};

/* A token bucket of upstream queries to one zone (edns.zone_qps, per thread). */
struct zrate {
	uint64_t zone_hash;
	uint64_t last_ns;
	double tokens;
};

/*
 * A zone over its query rate, told to the listeners: until the thread's
 * bucket for the zone has a token again, a new flagged miss that this
 * thread would send to that zone first is refused by the listener itself
 * (resolve_edns_submit), as the thread would refuse it. Under a
 * random-subdomain flood most queries are refused, and the hand-over to
 * the thread and back (two thread wake-ups) cost more than the refusal.
 * One per flagged rule (budget slot), per thread; written by the thread
 * only, read by any listener: until_ns works as a sequence (0 while the
 * other fields change).
 */
struct shed_hint {
	_Atomic uint64_t until_ns;
	_Atomic uint64_t zone_hash;  /* hash_bytes of the zone, lower case */
	_Atomic int zone_labels;
};

struct ethread {
	struct resolve_edns *pool;
	unsigned idx;
	pthread_t thread;
	bool started;
	int epfd;
	struct ub_ctx *ctx;
	struct mq jobs;
	struct eev jobs_ev, ub_ev, stop_ev;
	struct eres *list; /* every resolution in progress */
	struct zentry *zcache;
	struct shealth *health;
	struct zrate *rates;
	struct shed_hint *hints;   /* BUDGET_SLOTS: zones over their rate, by flagged rule */
	/* bit hash(Z) % BELOW_BITS set: the zone-cut cache may hold an entry
	 * below Z (a cut, or a bound that failed). Set for every ancestor of an
	 * entry put; cleared and set again from the live entries every 30 s. */
	uint64_t below[BELOW_BITS / 64];
	uint64_t below_rebuild_ns;
	double zone_qps;       /* this thread's share of edns.zone_qps; 0 = no limit */
	struct counters ctr;
	struct histogram latency; /* an upstream query sent to its matching response */
	unsigned out_next[2];  /* round robin over the pool's IPv4, IPv6 source addresses */
	struct dnstap_queue *tap; /* server.dnstap: this thread's queue; NULL = off */
	struct tprobe *probes;    /* edns.tier: one per node, on the first thread only; NULL = none */
	uint64_t probe_next_ns;
	uint8_t buf[65535 + 2];
};

struct resolve_edns {
	int stop_fd;
	struct hash_key key;  /* picks a thread by name */
	unsigned nthreads;
	struct ethread *threads;
	unsigned max_inflight;
	atomic_uint inflight;
	/* fair shares: one city takes at most a quarter of max_inflight, one flagged rule half */
	unsigned part_cap, rule_cap;
	atomic_uint part_inflight[PARTITION_MAX + 1];
	atomic_uint rule_inflight[BUDGET_SLOTS];
	_Atomic uint64_t shed;     /* flagged misses refused by the listeners on a shed_hint */
	/* edns.outgoing by family; both empty: the kernel picks (any address) */
	struct conf_addr *out[2]; /* [0] IPv4, [1] IPv6 */
	size_t nout[2];
	struct steering *steering; /* what each city's final answers say (partdnsctl steering) */
	struct tier *tier;         /* edns.tier: a frontend, flagged misses go to the tier; NULL = resolve here */
	atomic_bool forward_noted; /* a domain's forward policy met on a frontend was logged */
	bool validate;             /* a trust anchor is configured: every hop's answer is validated */
	size_t ninsecure;          /* resolver.domain_insecure (wire, lower case): insecure, no lookups */
	uint8_t (*insecure)[WIRE_MAX_NAME];
	size_t *insecure_len;
};

/* A hop's answer being validated (E_VALIDATE): what to do with it after, and the lookups it needs. */
struct eval {
	struct edns_verdict v;        /* the hop's verdict; v.msg is the answer */
	struct val_needs needs;
	unsigned next;                /* the next need to look up */
	uint8_t *answers[VAL_MAX_NEEDS]; /* secure DNSKEY answers, copied from libunbound */
	char why[VAL_MAX_NEEDS][160];    /* libunbound's why_bogus, copied */
};

/* One resolution in progress. */
struct eres {
	struct eres *prev, *next;
	struct ethread *t;
	struct job *job;
	bool forward;
	bool tier;                   /* edns.tier: asked of the partition's owner (forward is set too) */
	const struct ecs *ecs;       /* the ECS sent: the partition's identity, or for the tier the client's */
	unsigned tier_node[EDNS_MAX_SERVERS]; /* tier: the node of each sv.addr, by score */
	uint8_t name[WIRE_MAX_NAME]; /* the name of this hop */
	size_t name_len;
	uint8_t *acc;                /* responses of earlier hops, spliced */
	size_t acc_len;
	int hops, referrals;
	bool mismatched;             /* a response did not match the query (ID, question, ECS) */
	bool wake;                   /* E_WAIT: a cut discovery ended, look again */
	unsigned rule_slot;          /* the job's slot in rule_inflight */
	uint64_t disc_start_ns;      /* when this resolution began finding a cut itself */
	uint8_t bound[WIRE_MAX_NAME]; /* the highest zone the cut of this hop may be taken from */
	size_t bound_len;
	bool bound_is_rule;           /* bound is a --subtree rule's name (not the hop name's parent) */
	bool ns_probe;                /* E_NS: asking the bound's NS first, the SOA walk if it has none */
	enum est st;
	uint8_t zname[WIRE_MAX_NAME]; /* name whose SOA is asked */
	size_t zname_len;
	uint8_t zone[WIRE_MAX_NAME];
	size_t zone_len;
	struct edns_servers sv;      /* the zone's servers (or forward targets) */
	int cur, tries, ns_i;
	uint64_t give_up_ns;         /* whole resolution: SERVFAIL after this */
	int ub_id;                   /* libunbound lookup in flight (st != E_QUERY) */
	bool ub_busy;
	/* upstream exchange */
	int fd;
	bool tcp, tcp_sent;
	struct eev ev;
	uint16_t id;
	uint64_t deadline_ns;
	uint8_t q[512];
	size_t qlen;
	uint8_t *tbuf; /* TCP response being read */
	size_t tlen;
	struct timespec sent_rt; /* dnstap: when the query went out (realtime) */
	struct eval *val;        /* E_VALIDATE only (malloc'd) */
};

static void eres_query(struct eres *r);
static void eres_start_hop(struct eres *r);
static void hop_answered(struct eres *r, struct edns_verdict *v);
static void val_next(struct eres *r);
static void wake_waiters(struct eres *r);
static bool discovering(const struct eres *r);
static void zcache_put_failed(struct eres *r);

/* ---- helpers ---- */

static uint32_t rnd32(void)
{
	uint32_t v;
	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
		v = (uint32_t)clock_ns() * 2654435761u;
	return v;
}

/* ---- source addresses (edns.outgoing) ---- */

static int fam_idx(int family)
{
	return family == AF_INET6;
}

/* May the pool send to an address of family? Any, without edns.outgoing;
 * with it, only families it lists: those servers are not tried at all. */
static bool family_sendable(const struct resolve_edns *p, int family)
{
	return (p->nout[0] == 0 && p->nout[1] == 0) || p->nout[fam_idx(family)] > 0;
}

/* Drop r's servers of a family the pool does not send over. @return how many are left. */
static int keep_sendable(struct eres *r)
{
	const struct resolve_edns *p = r->t->pool;
	int n = 0;
	for (int i = 0; i < r->sv.naddr; i++)
		if (family_sendable(p, r->sv.addr[i].ss_family))
			r->sv.addr[n++] = r->sv.addr[i];
	r->sv.naddr = n;
	return n;
}

/* The next source address of to's family, round robin per thread; NULL: any. */
static const struct conf_addr *pick_source(struct ethread *t, int family)
{
	int f = fam_idx(family);
	size_t n = t->pool->nout[f];
	return n == 0 ? NULL : &t->pool->out[f][t->out_next[f]++ % n];
}

/* ---- fair shares, server health, zone query rates ---- */

static unsigned rule_slot_of(const struct resolve_edns *p, const struct job *job)
{
	return (unsigned)(hash_bytes(&p->key, job->rule.name, strnlen(job->rule.name, sizeof(job->rule.name))) %
	                  BUDGET_SLOTS);
}

static unsigned budget_part(unsigned partition)
{
	return partition <= PARTITION_MAX ? partition : 0;
}

/* A job leaves the pool: its place in the global, partition and rule budgets is free again. */
static void budget_release(struct resolve_edns *p, unsigned partition, unsigned rule_slot)
{
	atomic_fetch_sub(&p->inflight, 1);
	atomic_fetch_sub(&p->part_inflight[budget_part(partition)], 1);
	atomic_fetch_sub(&p->rule_inflight[rule_slot], 1);
}

static bool addr_equal(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const struct sockaddr_in *)a, *y = (const struct sockaddr_in *)b;
		return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	const struct sockaddr_in6 *x = (const struct sockaddr_in6 *)a, *y = (const struct sockaddr_in6 *)b;
	return x->sin6_port == y->sin6_port && memcmp(&x->sin6_addr, &y->sin6_addr, 16) == 0;
}

/* The zone a server is asked for: its health is kept per zone. */
static uint64_t health_zone(const struct eres *r)
{
	return r->forward ? 0 : hash_bytes(&r->t->pool->key, r->zone, r->zone_len) | 1;
}

static struct shealth *health_slot(struct ethread *t, const struct sockaddr_storage *a, uint64_t zone)
{
	uint8_t key[26] = { 0 };
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)a;
		memcpy(key, &s4->sin_addr, 4);
		memcpy(key + 16, &s4->sin_port, 2);
	} else {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)a;
		memcpy(key, &s6->sin6_addr, 16);
		memcpy(key + 16, &s6->sin6_port, 2);
	}
	memcpy(key + 18, &zone, 8);
	return &t->health[hash_bytes(&t->pool->key, key, sizeof(key)) % HEALTH_SLOTS];
}

static bool health_is(const struct shealth *h, const struct sockaddr_storage *a, uint64_t zone)
{
	return h->zone_hash == zone && addr_equal(&h->addr, a);
}

/*
 * May r's query go to a? Yes unless a is down for r's zone. A down server
 * whose backoff has passed takes one probe: it stays down for the others
 * until the probe answers (up again) or times out (down for twice as long).
 */
static bool server_usable(struct eres *r, const struct sockaddr_storage *a, uint64_t now)
{
	uint64_t zone = health_zone(r);
	struct shealth *h = health_slot(r->t, a, zone);
	if (!health_is(h, a, zone) || h->timeouts < HEALTH_DOWN_AFTER)
		return true;
	if (now < h->down_until_ns)
		return false;
	h->down_until_ns = now + (uint64_t)h->backoff_ms * 1000000ull; /* this query is the probe */
	return true;
}

/* r's server did not answer in time (or refused the datagram). */
static void server_timeout(struct eres *r)
{
	if (r->tier) { /* a tier node is down for every partition and thread until a probe is answered */
		tier_query_timeout(r->t->pool->tier, r->tier_node[r->cur % r->sv.naddr]);
		return;
	}
	const struct sockaddr_storage *a = &r->sv.addr[r->cur % r->sv.naddr];
	uint64_t zone = health_zone(r);
	struct shealth *h = health_slot(r->t, a, zone);
	if (!health_is(h, a, zone)) {
		memset(h, 0, sizeof(*h));
		h->addr = *a;
		h->zone_hash = zone;
	}
	if (++h->timeouts < HEALTH_DOWN_AFTER)
		return;
	h->backoff_ms = h->backoff_ms ? h->backoff_ms * 2 : HEALTH_BACKOFF_MIN_MS;
	if (h->backoff_ms > HEALTH_BACKOFF_MAX_MS)
		h->backoff_ms = HEALTH_BACKOFF_MAX_MS;
	h->down_until_ns = clock_ns() + (uint64_t)h->backoff_ms * 1000000ull;
}

/* r's server answered: it is up for r's zone. */
static void server_answered(struct eres *r)
{
	if (r->tier)
		return; /* only probes bring a tier node back up */
	const struct sockaddr_storage *a = &r->sv.addr[r->cur % r->sv.naddr];
	uint64_t zone = health_zone(r);
	struct shealth *h = health_slot(r->t, a, zone);
	if (health_is(h, a, zone) && h->timeouts > 0) {
		h->timeouts = 0;
		h->backoff_ms = 0;
		h->down_until_ns = 0;
	}
}

/*
 * May one more query go to zone now (edns.zone_qps, this thread's share)?
 * If not, *wait_ns says when the next one may.
 */
static bool zone_rate_take(struct ethread *t, const uint8_t *zone, size_t len, uint64_t *wait_ns)
{
	if (t->zone_qps <= 0)
		return true;
	uint64_t h = hash_bytes(&t->pool->key, zone, len), now = clock_ns();
	struct zrate *z = &t->rates[h % RATE_SLOTS];
	if (z->zone_hash != h) {
		z->zone_hash = h;
		z->tokens = t->zone_qps; /* a second's worth as the burst */
		z->last_ns = now;
	}
	z->tokens += (double)(now - z->last_ns) * t->zone_qps / 1e9;
	if (z->tokens > t->zone_qps)
		z->tokens = t->zone_qps;
	z->last_ns = now;
	if (z->tokens < 1) {
		*wait_ns = (uint64_t)((1 - z->tokens) * 1e9 / t->zone_qps) + 1;
		return false;
	}
	z->tokens -= 1;
	return true;
}

static void close_sock(struct eres *r)
{
	if (r->fd >= 0) {
		epoll_ctl(r->t->epfd, EPOLL_CTL_DEL, r->fd, NULL);
		close(r->fd);
		r->fd = -1;
	}
	free(r->tbuf);
	r->tbuf = NULL;
	r->tlen = 0;
	r->tcp_sent = false;
}

static void eres_free(struct eres *r)
{
	struct ethread *t = r->t;
	if (r->st == E_SOA || r->st == E_NS || r->st == E_ADDR)
		wake_waiters(r); /* a failed discovery: the waiters try their own */
	close_sock(r);
	if (r->prev)
		r->prev->next = r->next;
	else
		t->list = r->next;
	if (r->next)
		r->next->prev = r->prev;
	budget_release(t->pool, r->job->partition, r->rule_slot);
	if (r->val) {
		edns_verdict_clear(&r->val->v);
		for (unsigned i = 0; i < VAL_MAX_NEEDS; i++)
			free(r->val->answers[i]);
		free(r->val);
	}
	free(r->acc);
	free(r);
}

/* The job's partition by name, for logs (the plan it was routed under). */
static const char *part_name(const struct job *job)
{
	const char *n = job->snap != NULL ? ptable_name(job->snap->conf->partitions.table, job->partition) : NULL;
	return n != NULL ? n : "?";
}

/*
 * End r with SERVFAIL. ede says why to clients (and the failure is
 * remembered for cache.failure_ttl); NULL for our own trouble (memory,
 * shutdown), which is neither told nor remembered.
 */
static void eres_fail(struct eres *r, const struct wire_ede *ede, const char *why)
{
	if (log_get_level() >= LOG_LEVEL_INFO) {
		char name[512] = "?";
		wire_name_to_text(r->job->qname, r->job->qname_len, name, sizeof(name));
		log_info_limited("EDNS resolution of %s type %u for partition %s failed: %s", name, r->job->qtype,
		                 part_name(r->job), why);
	}
	counter_inc(&r->t->ctr.upstream_errors);
	struct job *job = r->job;
	if (discovering(r) && ede == &EDE_NO_ZONE)
		zcache_put_failed(r);
	eres_free(r);
	/* load shedding (a zone over its query rate) is not a failure to remember */
	inflight_fail(job, WIRE_RCODE_SERVFAIL, ede, ede != NULL && ede != &EDE_RATE);
}

/* Add a hop's response to the chain so far (the first one is copied as is). @return 0 or -1 (r failed). */
static int acc_append(struct eres *r, const uint8_t *resp, size_t len)
{
	uint8_t *out;
	size_t out_len;
	if (r->acc == NULL) {
		out = malloc(len);
		if (out == NULL) {
			eres_fail(r, NULL, "out of memory");
			return -1;
		}
		memcpy(out, resp, len);
		out_len = len;
	} else if (wire_splice(r->acc, r->acc_len, resp, len, &out, &out_len) != 0) {
		eres_fail(r, &EDE_INVALID, "cannot splice the CNAME chain");
		return -1;
	}
	free(r->acc);
	r->acc = out;
	r->acc_len = out_len;
	return 0;
}

static void eres_done(struct eres *r, const uint8_t *resp, size_t len)
{
	struct job *job = r->job;
	if (r->acc == NULL) {
		/* resp may live in the thread's buffer: finish the job before reuse */
		eres_free(r);
		inflight_done(job, resp, len, false);
		return;
	}
	if (acc_append(r, resp, len) != 0)
		return;
	uint8_t *msg = r->acc;
	size_t msg_len = r->acc_len;
	r->acc = NULL; /* taken: eres_free must not free it */
	eres_free(r);
	inflight_done(job, msg, msg_len, false);
	free(msg);
}

static struct zentry *zcache_slot(struct ethread *t, const uint8_t *name, size_t len)
{
	return &t->zcache[hash_bytes(&t->pool->key, name, len) % ZCACHE_SLOTS];
}

/* An entry for name (lower case) is in the zone-cut cache: mark its ancestors in t->below. */
static void below_mark(struct ethread *t, const uint8_t *name, size_t len)
{
	int off;
	while ((off = wire_name_parent(name, len)) > 0) {
		name += off;
		len -= (size_t)off;
		uint64_t h = hash_bytes(&t->pool->key, name, len) % BELOW_BITS;
		t->below[h / 64] |= 1ull << (h % 64);
	}
}

/* May the zone-cut cache hold an entry below zone (lower case)? (False positives only.) */
static bool below_any(const struct ethread *t, const uint8_t *zone, size_t len)
{
	uint64_t h = hash_bytes(&t->pool->key, zone, len) % BELOW_BITS;
	return (t->below[h / 64] >> (h % 64)) & 1;
}

/* Forget the ancestors of entries that expired: mark again from the live ones. */
static void below_rebuild(struct ethread *t, uint64_t now)
{
	memset(t->below, 0, sizeof(t->below));
	for (size_t i = 0; i < ZCACHE_SLOTS; i++)
		if (t->zcache[i].name_len > 0 && now < t->zcache[i].expires_ns)
			below_mark(t, t->zcache[i].name, t->zcache[i].name_len);
	t->below_rebuild_ns = now + BELOW_REBUILD_NS;
}

/*
 * The highest zone whose servers may be asked for r's hop name without
 * knowing its cut: for a name inside a --subtree rule, the rule's name (the
 * operator flagged that whole subtree); else the name's parent. So a cut
 * cached for a TLD is never used for a name below an unknown delegation,
 * and ECS never goes above the zones on the flagged name's chain.
 */
static void set_bound(struct eres *r)
{
	uint8_t rule[WIRE_MAX_NAME];
	int n = r->job->rule.subtree ? wire_name_from_text(r->job->rule.name, rule, sizeof(rule)) : -1;
	r->bound_is_rule = n > 0 && wire_name_in_zone(r->name, r->name_len, rule, (size_t)n);
	if (r->bound_is_rule) {
		wire_name_lower(rule, (size_t)n, r->bound);
		r->bound_len = (size_t)n;
		return;
	}
	int off = wire_name_parent(r->name, r->name_len);
	if (off < 0)
		off = 0; /* the root */
	memcpy(r->bound, r->name + off, r->name_len - (size_t)off);
	r->bound_len = r->name_len - (size_t)off;
}

/* The deepest cached cut at or above r's hop name, up to r->bound. */
/*
 * The deepest cached cut at or above r's hop name, up to r->bound.
 * @return 1 (r->zone and servers set), 0 (none: find it), -1 (finding it
 *         failed a moment ago: fail at once).
 */
static int zcache_get(struct eres *r)
{
	uint8_t name[WIRE_MAX_NAME];
	size_t len = r->name_len;
	wire_name_lower(r->name, r->name_len, name);
	const uint8_t *cur = name;
	uint64_t now = clock_ns();
	for (;;) {
		struct zentry *z = zcache_slot(r->t, cur, len);
		if (z->name_len == len && memcmp(z->name, cur, len) == 0 && now < z->expires_ns) {
			if (z->failed)
				return -1;
			if (z->naddr > 0) {
				memcpy(r->zone, cur, len);
				r->zone_len = len;
				r->sv.naddr = z->naddr;
				memcpy(r->sv.addr, z->addr, sizeof(r->sv.addr));
				return 1;
			}
		}
		if (wire_name_equal(cur, len, r->bound, r->bound_len))
			return 0;
		int off = wire_name_parent(cur, len);
		if (off <= 0)
			return 0;
		cur += off;
		len -= (size_t)off;
	}
}

/*
 * Finding the cut for r's bound failed (its servers never answer, or it has
 * none): remember that, 5 s and doubling while it keeps failing (up to the
 * health backoff's cap), so a flood of names under a dead zone costs one
 * lookup at a time, not one each.
 */
static void zcache_put_failed(struct eres *r)
{
	struct zentry *z = zcache_slot(r->t, r->bound, r->bound_len);
	bool again = z->failed && z->name_len == r->bound_len && memcmp(z->name, r->bound, r->bound_len) == 0;
	unsigned secs = again ? z->fail_s * 2 : ZCACHE_MIN_TTL;
	if (secs > HEALTH_BACKOFF_MAX_MS / 1000)
		secs = HEALTH_BACKOFF_MAX_MS / 1000;
	memset(z, 0, sizeof(*z));
	memcpy(z->name, r->bound, r->bound_len);
	z->name_len = r->bound_len;
	below_mark(r->t, z->name, z->name_len);
	z->failed = true;
	z->fail_s = secs;
	z->expires_ns = clock_ns() + (uint64_t)secs * 1000000000ull;
}

/* Remember the cut r found (zone and servers) for the NS TTL; wake who waited for it. */
static void zcache_put(struct eres *r, uint32_t ttl)
{
	if (ttl < ZCACHE_MIN_TTL)
		ttl = ZCACHE_MIN_TTL;
	if (ttl > ZCACHE_MAX_TTL)
		ttl = ZCACHE_MAX_TTL;
	struct zentry *z = zcache_slot(r->t, r->zone, r->zone_len);
	memcpy(z->name, r->zone, r->zone_len);
	z->name_len = r->zone_len;
	below_mark(r->t, z->name, z->name_len);
	z->failed = false;
	z->fail_s = 0;
	z->naddr = r->sv.naddr;
	memcpy(z->addr, r->sv.addr, sizeof(z->addr));
	z->expires_ns = clock_ns() + (uint64_t)ttl * 1000000000ull;
}

static bool discovering(const struct eres *r)
{
	return r->st == E_SOA || r->st == E_NS || r->st == E_ADDR;
}

/* The cut discovery of r ended (found or failed): resolutions waiting on the same bound look again. */
static void wake_waiters(struct eres *r)
{
	for (struct eres *x = r->t->list; x; x = x->next)
		if (x != r && x->st == E_WAIT && wire_name_equal(x->bound, x->bound_len, r->bound, r->bound_len))
			x->wake = true;
}

/* Another resolution of this thread is finding a cut for the same bound: wait for it. */
static bool discovery_running(const struct eres *r)
{
	for (const struct eres *x = r->t->list; x; x = x->next)
		if (x != r && discovering(x) && wire_name_equal(x->bound, x->bound_len, r->bound, r->bound_len))
			return true;
	return false;
}

/* ---- libunbound lookups (zone cut, nameserver addresses) ---- */

static void ub_done(void *arg, int err, struct ub_result *res);
static void on_val_lookup(struct eres *r, int err, struct ub_result *res);

static void ub_lookup(struct eres *r, const uint8_t *name, size_t len, uint16_t type)
{
	char text[1024];
	if (wire_name_to_text(name, len, text, sizeof(text)) < 0) {
		eres_fail(r, &EDE_INVALID, "bad name");
		return;
	}
	counter_inc(&r->t->ctr.ub_lookups);
	int rc = ub_resolve_async(r->t->ctx, text, type, WIRE_CLASS_IN, r, ub_done, &r->ub_id);
	if (rc != 0)
		eres_fail(r, NULL, ub_strerror(rc));
	else
		r->ub_busy = true;
}

/* Find the cut by the SOA of the hop name, then of each parent (the answer's SOA names the zone). */
static void soa_walk(struct eres *r)
{
	r->st = E_SOA;
	r->ns_probe = false;
	memcpy(r->zname, r->name, r->name_len);
	r->zname_len = r->name_len;
	ub_lookup(r, r->zname, r->zname_len, WIRE_TYPE_SOA);
}

static void on_soa(struct eres *r, const uint8_t *msg, size_t len)
{
	switch (edns_iter_soa(msg, len, r->name, r->name_len, r->zname, r->zname_len, r->zone, &r->zone_len)) {
	case EDNS_CUT_FOUND:
		r->st = E_NS;
		ub_lookup(r, r->zone, r->zone_len, WIRE_TYPE_NS);
		return;
	case EDNS_CUT_PARENT: {
		int off = wire_name_parent(r->zname, r->zname_len);
		if (off <= 0) {
			eres_fail(r, &EDE_NO_ZONE, "no zone found");
			return;
		}
		memmove(r->zname, r->zname + off, r->zname_len - (size_t)off);
		r->zname_len -= (size_t)off;
		ub_lookup(r, r->zname, r->zname_len, WIRE_TYPE_SOA);
		return;
	}
	case EDNS_CUT_NONE:
		break;
	}
	eres_fail(r, &EDE_NO_ZONE, "no SOA for the zone cut");
}

/* Nameserver addresses without glue: A for each name, then AAAA for each. */
static void next_nsaddr(struct eres *r)
{
	/* no lookups of addresses the pool would not send to (edns.outgoing) */
	if (r->ns_i < r->sv.nns && !family_sendable(r->t->pool, AF_INET))
		r->ns_i = r->sv.nns;
	if (r->ns_i >= 2 * r->sv.nns || (r->ns_i >= r->sv.nns && !family_sendable(r->t->pool, AF_INET6))) {
		eres_fail(r, &EDE_NO_ZONE, "no address for any nameserver");
		return;
	}
	r->st = E_ADDR;
	int i = r->ns_i++;
	uint16_t type = i < r->sv.nns ? WIRE_TYPE_A : WIRE_TYPE_AAAA;
	i %= r->sv.nns;
	ub_lookup(r, r->sv.nsname[i], r->sv.nsname_len[i], type);
}

static void on_ns(struct eres *r, const uint8_t *msg, size_t len)
{
	if (edns_servers_take_ns(&r->sv, msg, len, WIRE_SECTION_ANSWER, r->zone, r->zone_len) == 0) {
		if (r->ns_probe) { /* the flagged subtree is not a zone of its own: find the one holding it */
			soa_walk(r);
			return;
		}
		eres_fail(r, &EDE_NO_ZONE, "zone has no NS records");
		return;
	}
	r->ns_probe = false;
	r->sv.naddr = 0;
	edns_servers_take_addrs(&r->sv, msg, len, WIRE_SECTION_ADDITIONAL, false, NULL, 0);
	if (keep_sendable(r) > 0) {
		zcache_put(r, r->sv.ns_ttl);
		wake_waiters(r);
		eres_query(r);
		return;
	}
	r->ns_i = 0;
	next_nsaddr(r);
}

static void on_addr(struct eres *r, const uint8_t *msg, size_t len)
{
	edns_servers_take_addrs(&r->sv, msg, len, WIRE_SECTION_ANSWER, true, NULL, 0);
	if (keep_sendable(r) == 0) {
		next_nsaddr(r);
		return;
	}
	zcache_put(r, r->sv.ns_ttl);
	wake_waiters(r);
	eres_query(r);
}

static void ub_done(void *arg, int err, struct ub_result *res)
{
	struct eres *r = arg;
	r->ub_busy = false;
	if (r->st == E_VALIDATE) {
		on_val_lookup(r, err, res);
		return;
	}
	if (err == 0 && res != NULL && res->bogus && !r->job->cd_bit) {
		/* the zone cut itself is forged or expired: say so, not "zone not found" */
		char why[400];
		snprintf(why, sizeof(why), "DNSSEC: zone-cut lookup bogus: %s", res->why_bogus ? res->why_bogus : "?");
		/* libunbound's reasons (validator/val_sigcrypt.c) name the names involved:
		 * match its phrases, not a word a name may hold */
		const char *w = res->why_bogus ? res->why_bogus : "";
		const struct wire_ede *ede = strstr(w, ": signature expired") ? &EDE_CUT_EXPIRED
		                             : strstr(w, ": signature before inception date") ? &EDE_CUT_NOT_YET
		                                                                              : &EDE_CUT_BOGUS;
		ub_resolve_free(res);
		counter_inc(&r->t->ctr.dnssec_bogus);
		eres_fail(r, ede, why);
		return;
	}
	if (err != 0 || res == NULL || res->answer_packet == NULL || res->answer_len < WIRE_HEADER_SIZE) {
		if (res)
			ub_resolve_free(res);
		if (r->st == E_ADDR) {
			next_nsaddr(r);
			return;
		}
		if (r->ns_probe) {
			soa_walk(r);
			return;
		}
		eres_fail(r, &EDE_NO_ZONE, err ? ub_strerror(err) : "zone-cut lookup failed");
		return;
	}
	const uint8_t *msg = res->answer_packet;
	size_t len = (size_t)res->answer_len;
	uint8_t nxzone[WIRE_MAX_NAME];
	size_t nxzone_len = 0;
	if (r->st == E_SOA && res->rcode == WIRE_RCODE_NXDOMAIN &&
	    (edns_iter_soa(msg, len, r->name, r->name_len, r->zname, r->zname_len, nxzone, &nxzone_len) !=
	             EDNS_CUT_FOUND ||
	     !wire_name_in_zone(nxzone, nxzone_len, r->bound, r->bound_len))) {
		/* The name does not exist, and the NXDOMAIN came from a zone above
		 * the flagged name's own (a TLD, the root): never send ECS there;
		 * answer it as is. An NXDOMAIN from the flagged zone itself goes on:
		 * its cut is found and cached, and the GSLB is asked with ECS. */
		uint8_t *neg;
		size_t neg_len;
		if (wire_negative_answer(msg, len, r->name, r->name_len, r->job->qtype, r->job->qclass, &neg,
		                         &neg_len) != 0) {
			ub_resolve_free(res);
			eres_fail(r, &EDE_INVALID, "cannot make the negative answer");
			return;
		}
		/* libunbound validated this denial itself (a bogus one ended above) */
		if (res->secure && !r->job->cd_bit)
			neg[3] |= WIRE_FLAG_AD;
		ub_resolve_free(res);
		wake_waiters(r);
		r->st = E_QUERY;
		eres_done(r, neg, neg_len);
		free(neg);
		return;
	}
	switch (r->st) {
	case E_SOA: on_soa(r, msg, len); break;
	case E_NS: on_ns(r, msg, len); break;
	case E_ADDR: on_addr(r, msg, len); break;
	case E_WAIT:
	case E_QUERY:
	case E_VALIDATE: break;
	}
	ub_resolve_free(res);
}

/* ---- a hop's answer: validated, spliced, followed ---- */

/* The hop's answer stands (validated, or nothing to validate): splice it and follow its CNAME, or finish. */
static void hop_accept(struct eres *r, struct edns_verdict *v)
{
	struct job *job = r->job;
	if (v->step == EDNS_STEP_CNAME) {
		if (r->hops >= MAX_HOPS) {
			edns_verdict_clear(v);
			eres_fail(r, &EDE_CHAIN, "CNAME chain too long");
			return;
		}
		/* splice this hop and resolve the target, with the same ECS */
		if (acc_append(r, v->msg, v->msg_len) != 0) {
			edns_verdict_clear(v);
			return;
		}
		edns_verdict_clear(v);
		r->hops++;
		close_sock(r);
		memcpy(r->name, v->target, v->target_len);
		r->name_len = v->target_len;
		eres_start_hop(r);
		return;
	}
	steering_note(r->t->pool->steering, part_name(job), job->rule.name, v->ecs_echoed, v->ecs_scope, v->msg,
	              v->msg_len);
	eres_done(r, v->msg, v->msg_len);
	edns_verdict_clear(v);
}

/*
 * With a trust anchor, each hop's answer is validated on its own (its zone's
 * keys, its own proofs) before it is spliced: the keys come from this
 * thread's libunbound context, which validates them up to the anchor, one
 * lookup at a time (val.h). CD=1 asks for the data unchecked (RFC 4035
 * §3.2.2): such jobs have their own cache entries and never get AD.
 */
static void hop_answered(struct eres *r, struct edns_verdict *v)
{
	if (!r->t->pool->validate || r->job->cd_bit) {
		hop_accept(r, v);
		return;
	}
	/* resolver.domain_insecure: a private zone the operator vouches for, as Unbound's domain-insecure */
	const struct resolve_edns *p = r->t->pool;
	for (size_t i = 0; i < p->ninsecure; i++) {
		if (wire_name_in_zone(r->name, r->name_len, p->insecure[i], p->insecure_len[i])) {
			counter_inc(&r->t->ctr.dnssec_insecure);
			hop_accept(r, v);
			return;
		}
	}
	close_sock(r); /* the exchange is over; the lookups may take a while */
	struct eval *e = calloc(1, sizeof(*e));
	if (e == NULL) {
		edns_verdict_clear(v);
		eres_fail(r, NULL, "out of memory");
		return;
	}
	e->v = *v;
	v->msg = NULL;
	r->val = e;
	r->st = E_VALIDATE;
	if (val_needs(e->v.msg, e->v.msg_len, r->name, r->name_len, &e->needs) != 0) {
		counter_inc(&r->t->ctr.dnssec_bogus);
		eres_fail(r, &EDE_VAL_MALFORMED, "DNSSEC: answer malformed or needs too many keys");
		return;
	}
	val_next(r);
}

static void val_next(struct eres *r)
{
	struct eval *e = r->val;
	if (e->next < e->needs.n) {
		const struct val_need *n = &e->needs.need[e->next];
		ub_lookup(r, n->name, n->name_len, n->type);
		return;
	}
	struct val_outcome o;
	val_check(e->v.msg, e->v.msg_len, r->name, r->name_len, r->job->qtype, &e->needs, time(NULL), &o);
	if (o.state == VAL_BOGUS || o.state == VAL_INDETERMINATE) {
		counter_inc(&r->t->ctr.dnssec_bogus);
		char why[1024], name[256] = "?";
		wire_name_to_text(r->name, r->name_len, name, sizeof(name));
		snprintf(why, sizeof(why), "DNSSEC %s at %s (zone %s): %s", val_state_name(o.state), name, o.zone,
		         o.why ? o.why : "?");
		/* o.ede's text is static: the result keeps a copy of the struct */
		eres_fail(r, &o.ede, why);
		return;
	}
	if (o.state == VAL_SECURE) {
		counter_inc(&r->t->ctr.dnssec_secure);
		e->v.msg[3] |= WIRE_FLAG_AD; /* kept through the splice only if every hop has it */
	} else {
		counter_inc(&r->t->ctr.dnssec_insecure);
	}
	struct edns_verdict v = e->v;
	e->v.msg = NULL;
	for (unsigned i = 0; i < VAL_MAX_NEEDS; i++)
		free(e->answers[i]);
	free(e);
	r->val = NULL;
	r->st = E_QUERY;
	hop_accept(r, &v);
}

/* libunbound's verdict on one lookup validation needs. */
static void on_val_lookup(struct eres *r, int err, struct ub_result *res)
{
	struct eval *e = r->val;
	struct val_need *n = &e->needs.need[e->next];
	if (err != 0 || res == NULL) {
		n->state = VAL_INDETERMINATE;
	} else if (res->bogus) {
		n->state = VAL_BOGUS;
		snprintf(e->why[e->next], sizeof(e->why[0]), "%s", res->why_bogus ? res->why_bogus : "bogus keys");
		n->why = e->why[e->next];
	} else if (res->secure) {
		n->state = VAL_SECURE;
		if (n->type == WIRE_TYPE_DNSKEY && res->answer_packet && res->answer_len > 0 &&
		    (e->answers[e->next] = malloc((size_t)res->answer_len)) != NULL) {
			memcpy(e->answers[e->next], res->answer_packet, (size_t)res->answer_len);
			n->answer = e->answers[e->next];
			n->answer_len = (size_t)res->answer_len;
		}
	} else {
		/* not secure, not bogus: insecure, unless libunbound could not tell */
		n->state = res->rcode == WIRE_RCODE_SERVFAIL ? VAL_INDETERMINATE : VAL_INSECURE;
	}
	if (res)
		ub_resolve_free(res);
	e->next++;
	val_next(r);
}

/* ---- the ECS-bearing upstream exchange ---- */

/*
 * dnstap: the query r just sent (resp NULL) or a response to it, with the
 * ECS option inside, so an operator can see exactly what left for whom.
 */
static void tap_upstream(struct eres *r, const uint8_t *resp, size_t len)
{
	struct sockaddr_storage src;
	socklen_t slen = sizeof(src);
	if (getsockname(r->fd, (struct sockaddr *)&src, &slen) != 0)
		src.ss_family = 0;
	struct dnstap_msg m = { .type = resp ? DNSTAP_RESOLVER_RESPONSE : DNSTAP_RESOLVER_QUERY, .tcp = r->tcp,
	                        .query_addr = src.ss_family != 0 ? &src : NULL,
	                        .response_addr = &r->sv.addr[r->cur % r->sv.naddr], .query_time = r->sent_rt,
	                        .query = resp ? NULL : r->q, .query_len = r->qlen, .response = resp,
	                        .response_len = len, .zone = r->forward ? NULL : r->zone, .zone_len = r->zone_len };
	if (resp)
		m.response_time = dnstap_now();
	dnstap_log(r->t->tap, &m);
}

/*
 * A socket to "to", from one of edns.outgoing's addresses of its family
 * (round robin) or, without the key, from whatever address the kernel
 * routes by. UDP takes a random source port of our own choosing, not the
 * kernel's next one; TCP the kernel's ephemeral port.
 */
static int open_upstream(struct ethread *t, const struct sockaddr_storage *to, bool tcp)
{
	socklen_t tolen = to->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	int fd = socket(to->ss_family, (tcp ? SOCK_STREAM : SOCK_DGRAM) | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	const struct conf_addr *src = pick_source(t, to->ss_family);
	struct sockaddr_storage local;
	if (src != NULL) {
		memcpy(&local, &src->ss, sizeof(local));
	} else {
		memset(&local, 0, sizeof(local));
		local.ss_family = to->ss_family;
	}
	bool bound = false;
	if (!tcp) {
		for (int i = 0; i < 8 && !bound; i++) {
			uint16_t port = (uint16_t)(1024 + rnd32() % (65536 - 1024));
			if (to->ss_family == AF_INET)
				((struct sockaddr_in *)&local)->sin_port = htons(port);
			else
				((struct sockaddr_in6 *)&local)->sin6_port = htons(port);
			bound = bind(fd, (struct sockaddr *)&local, tolen) == 0;
		}
	}
	if (src != NULL && !bound) {
		/* TCP, or 8 random ports taken: the kernel's port, but our address
		 * (connect() alone would pick the address by route). For TCP the
		 * port waits for connect(), which can then share it among
		 * destinations, instead of one per socket at bind(). */
		int one = 1;
		if (tcp)
			setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
		if (to->ss_family == AF_INET)
			((struct sockaddr_in *)&local)->sin_port = 0;
		else
			((struct sockaddr_in6 *)&local)->sin6_port = 0;
		if (bind(fd, (struct sockaddr *)&local, tolen) != 0) {
			int e = errno;
			/* the address left the machine after the startup check: say so, once a second at most */
			static _Atomic uint64_t warned_s;
			uint64_t now_s = clock_ns() / 1000000000ull, last = atomic_load(&warned_s);
			if (now_s != last && atomic_compare_exchange_strong(&warned_s, &last, now_s))
				log_warn("EDNS pool: cannot send from edns.outgoing address %s: %s", src->text, strerror(e));
			close(fd);
			return -e;
		}
	}
	/* connect() makes the kernel drop datagrams from other addresses/ports. */
	if (connect(fd, (const struct sockaddr *)to, tolen) != 0 && errno != EINPROGRESS) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

/* This server failed (ede: how, for the client if every server does): try the next one. */
static void next_server(struct eres *r, const struct wire_ede *ede, const char *why)
{
	close_sock(r);
	r->tcp = false;
	r->cur++;
	if (r->tier) {
		/* the owner failed: once more, on the next node by score (tier_fill) */
		if (r->cur >= r->sv.naddr) {
			eres_fail(r, ede == &EDE_UNREACHABLE ? &EDE_TIER : ede, why);
			return;
		}
		counter_inc(&r->t->ctr.tier_failovers);
		eres_query(r);
		return;
	}
	if (r->tries >= MAX_TRIES || r->cur >= r->sv.naddr * 2) {
		eres_fail(r, ede, why);
		return;
	}
	eres_query(r);
}

/*
 * r's zone is over its rate for wait_ns more: tell the listeners (struct
 * shed_hint), when what they can see of a new job decides as this thread
 * would. That holds for the question's own query (not a CNAME target's) to
 * a zone that is a live cut in the zone-cut cache with nothing cached below
 * it: for any new name under that zone whose bound (set_bound) is not below
 * it, zcache_get finds the zone, and eres_query asks it first.
 */
static void shed_hint_set(struct eres *r, uint64_t wait_ns)
{
	struct ethread *t = r->t;
	uint8_t zone[WIRE_MAX_NAME];
	if (!wire_name_equal(r->name, r->name_len, r->job->qname, r->job->qname_len))
		return;
	wire_name_lower(r->zone, r->zone_len, zone);
	struct zentry *z = zcache_slot(t, zone, r->zone_len);
	uint64_t now = clock_ns();
	if (z->failed || z->name_len != r->zone_len || memcmp(z->name, zone, r->zone_len) != 0 ||
	    now >= z->expires_ns || below_any(t, zone, r->zone_len))
		return;
	struct shed_hint *h = &t->hints[r->rule_slot];
	atomic_store_explicit(&h->until_ns, 0, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&h->zone_hash, hash_bytes(&t->pool->key, zone, r->zone_len), memory_order_relaxed);
	atomic_store_explicit(&h->zone_labels, wire_name_labels(zone, r->zone_len), memory_order_relaxed);
	atomic_store_explicit(&h->until_ns, now + wait_ns, memory_order_release);
}

static void eres_query(struct eres *r)
{
	struct job *job = r->job;
	r->st = E_QUERY;
	if (r->sv.naddr == 0) {
		eres_fail(r, &EDE_NO_ZONE, "no servers");
		return;
	}
	/* forward targets of a family edns.outgoing does not have go here;
	 * discovered servers were sorted out as they were taken */
	if (keep_sendable(r) == 0) {
		eres_fail(r, &EDE_FAMILY, "no server of an address family edns.outgoing has");
		return;
	}
	uint64_t now = clock_ns();
	int k = 0;
	/* tier nodes: tier_fill took the nodes up, in order; their health is the tier's */
	while (!r->tier && k < r->sv.naddr && !server_usable(r, &r->sv.addr[(r->cur + k) % r->sv.naddr], now))
		k++;
	if (k == r->sv.naddr) {
		eres_fail(r, &EDE_DOWN, "every server is down (backing off)");
		return;
	}
	r->cur += k;
	uint64_t wait_ns;
	if (!r->forward && !zone_rate_take(r->t, r->zone, r->zone_len, &wait_ns)) {
		counter_inc(&r->t->ctr.zone_limited);
		shed_hint_set(r, wait_ns);
		eres_fail(r, &EDE_RATE, "zone query rate exceeded (edns.zone_qps)");
		return;
	}
	r->tries++;
	const struct sockaddr_storage *to = &r->sv.addr[r->cur % r->sv.naddr];
	r->id = (uint16_t)rnd32();
	/* DO whatever the client said: one cache entry serves DO and non-DO
	 * clients, the DNSSEC records stripped for the latter at reply time */
	int len = wire_query_build(r->id, r->forward, true, r->name, r->name_len, job->qtype, job->qclass, r->ecs,
	                           r->q, sizeof(r->q));
	if (len < 0) {
		eres_fail(r, &EDE_INVALID, "cannot build the query");
		return;
	}
	r->qlen = (size_t)len;
	if (log_get_level() >= LOG_LEVEL_DEBUG) {
		char a[INET6_ADDRSTRLEN] = "?", n[512] = "?";
		const void *src = to->ss_family == AF_INET ? (const void *)&((const struct sockaddr_in *)to)->sin_addr
		                                            : (const void *)&((const struct sockaddr_in6 *)to)->sin6_addr;
		inet_ntop(to->ss_family, src, a, sizeof(a));
		wire_name_to_text(r->name, r->name_len, n, sizeof(n));
		log_debug("EDNS query %s type %u to %s%s port %u%s (partition %s)", n, job->qtype,
		          r->tier ? "tier node " : "", a, ntohs(((const struct sockaddr_in *)to)->sin_port),
		          r->tcp ? " over TCP" : "", part_name(job));
	}
	int fd = open_upstream(r->t, to, r->tcp);
	if (fd < 0) {
		next_server(r, &EDE_NETWORK, strerror(-fd));
		return;
	}
	r->fd = fd;
	r->ev = (struct eev){ .kind = EEV_SOCK, .r = r };
	struct epoll_event e = { .events = r->tcp ? EPOLLOUT : EPOLLIN, .data.ptr = &r->ev };
	if (epoll_ctl(r->t->epfd, EPOLL_CTL_ADD, fd, &e) != 0) {
		next_server(r, &EDE_NETWORK, "epoll");
		return;
	}
	r->deadline_ns = clock_ns() + (uint64_t)job->timeout_ms * 1000000ull;
	counter_inc(&r->t->ctr.upstream_queries);
	if (r->tier)
		counter_inc(&r->t->ctr.tier_queries);
	if (!r->tcp && send(fd, r->q, r->qlen, 0) != (ssize_t)r->qlen) {
		next_server(r, &EDE_NETWORK, "send failed");
		return;
	}
	if (!r->tcp && r->t->tap) {
		r->sent_rt = dnstap_now();
		tap_upstream(r, NULL, 0);
	}
}

/* A referral to cut, read from resp: ask the child zone's servers. */
static void follow_referral(struct eres *r, const uint8_t *cut, size_t cut_len, const uint8_t *resp, size_t len)
{
	/* glue only from inside the zone that referred us (the parent of cut) */
	uint8_t parent[WIRE_MAX_NAME];
	size_t parent_len = r->zone_len;
	memcpy(parent, r->zone, r->zone_len);
	memcpy(r->zone, cut, cut_len);
	r->zone_len = cut_len;
	edns_servers_take_ns(&r->sv, resp, len, WIRE_SECTION_AUTHORITY, r->zone, r->zone_len);
	r->sv.naddr = 0;
	r->cur = 0;
	r->tries = 0;
	edns_servers_take_addrs(&r->sv, resp, len, WIRE_SECTION_ADDITIONAL, false, parent, parent_len);
	close_sock(r);
	if (keep_sendable(r) > 0) {
		zcache_put(r, r->sv.ns_ttl);
		eres_query(r);
	} else {
		r->ns_i = 0;
		next_nsaddr(r);
	}
}

static void on_response(struct eres *r, const uint8_t *resp, size_t len)
{
	struct job *job = r->job;
	struct edns_hop hop = { .name = r->name, .name_len = r->name_len, .zone = r->zone, .zone_len = r->zone_len,
	                        .id = r->id, .qtype = job->qtype, .qclass = job->qclass, .ecs = r->ecs,
	                        .tcp = r->tcp, .forward = r->forward };
	struct edns_verdict v;
	if (edns_iter_response(&hop, resp, len, &v) == -ENOMEM) {
		eres_fail(r, NULL, "out of memory");
		return;
	}
	if (v.mismatch) {
		counter_inc(&r->t->ctr.upstream_mismatch);
		r->mismatched = true;
	} else {
		server_answered(r);
		/* the query went out timeout_ms before its deadline (eres_query) */
		histogram_observe(&r->t->latency, clock_ns() + (uint64_t)job->timeout_ms * 1000000ull - r->deadline_ns);
	}
	if (v.scrubbed > 0)
		log_debug("EDNS answer for partition %s: %u record(s) the server may not give dropped", part_name(job),
		          v.scrubbed);
	switch (v.step) {
	case EDNS_STEP_IGNORE:
		return;
	case EDNS_STEP_NEXT_SERVER: {
		const struct wire_ede *ede = v.bad == EDNS_BAD_RCODE      ? &EDE_ERRORS
		                             : v.bad == EDNS_BAD_TRUNCATED ? &EDE_TRUNCATED
		                             : v.bad == EDNS_BAD_MISMATCH  ? &EDE_MISMATCH
		                                                           : &EDE_INVALID;
		if (r->tier) {
			/* the node is there and said no (or said nonsense): its answer stands for
			 * the partition; asking the next node would only resolve the city twice */
			eres_fail(r, v.bad == EDNS_BAD_RCODE ? &EDE_TIER_ERROR : ede, v.why);
			return;
		}
		next_server(r, ede, v.why);
		return;
	}
	case EDNS_STEP_TCP:
		close_sock(r);
		r->tcp = true;
		r->tries--; /* the TCP retry belongs to the same attempt */
		eres_query(r);
		return;
	case EDNS_STEP_REFERRAL:
		if (++r->referrals > MAX_REFERRALS) {
			eres_fail(r, &EDE_NO_ZONE, "too many referrals");
			return;
		}
		follow_referral(r, v.cut, v.cut_len, resp, len);
		return;
	case EDNS_STEP_CNAME:
	case EDNS_STEP_DONE:
		break;
	}
	hop_answered(r, &v);
}

static void on_sock(struct eres *r, uint32_t events)
{
	uint8_t *buf = r->t->buf;
	if (!r->tcp) {
		/* one datagram per wake-up; epoll is level-triggered */
		ssize_t n = recv(r->fd, buf, 65535, MSG_DONTWAIT);
		if (n < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				char why[128];
				snprintf(why, sizeof(why), "receive error: %s", strerror(errno));
				server_timeout(r);
				next_server(r, &EDE_NETWORK, why); /* e.g. ICMP port unreachable */
			}
			return;
		}
		if (r->t->tap)
			tap_upstream(r, buf, (size_t)n);
		on_response(r, buf, (size_t)n);
		return;
	}
	if (!r->tcp_sent) {
		if (!(events & EPOLLOUT))
			return;
		uint8_t msg[514];
		msg[0] = (uint8_t)(r->qlen >> 8);
		msg[1] = (uint8_t)r->qlen;
		memcpy(msg + 2, r->q, r->qlen);
		if (send(r->fd, msg, r->qlen + 2, MSG_NOSIGNAL) != (ssize_t)(r->qlen + 2)) {
			next_server(r, &EDE_NETWORK, "TCP connect/send failed");
			return;
		}
		r->tcp_sent = true;
		if (r->t->tap) {
			r->sent_rt = dnstap_now();
			tap_upstream(r, NULL, 0);
		}
		struct epoll_event e = { .events = EPOLLIN, .data.ptr = &r->ev };
		epoll_ctl(r->t->epfd, EPOLL_CTL_MOD, r->fd, &e);
		return;
	}
	if (r->tbuf == NULL) {
		r->tbuf = malloc(65535 + 2);
		if (r->tbuf == NULL) {
			eres_fail(r, NULL, "out of memory");
			return;
		}
	}
	ssize_t n = recv(r->fd, r->tbuf + r->tlen, 65537 - r->tlen, MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
		next_server(r, &EDE_NETWORK, "TCP connection closed");
		return;
	}
	if (n < 0)
		return;
	r->tlen += (size_t)n;
	if (r->tlen < 2)
		return;
	size_t want = ((size_t)r->tbuf[0] << 8) | r->tbuf[1];
	if (r->tlen < want + 2)
		return;
	memcpy(buf, r->tbuf + 2, want);
	if (r->t->tap)
		tap_upstream(r, buf, want);
	on_response(r, buf, want);
}

/* ---- resolution start and timeouts ---- */

/*
 * edns.tier: this hop goes to the tier node owning the job's partition
 * (rendezvous by the partition's name) and, if that one times out, once to
 * the next node up by score. With every node marked down the probes may
 * just be behind: the owner and the next are asked all the same.
 */
static void tier_fill(struct eres *r)
{
	const struct tier *tr = r->t->pool->tier;
	if (r->ecs->family == 0) {
		eres_fail(r, NULL, "no client address to send the EDNS tier");
		return;
	}
	unsigned order[TIER_MAX_NODES];
	tier_order(tr, part_name(r->job), order);
	r->sv.naddr = 0;
	for (size_t k = 0; k < tr->n && r->sv.naddr < 2; k++) {
		if (!tier_is_up(tr, order[k]))
			continue;
		r->tier_node[r->sv.naddr] = order[k];
		memcpy(&r->sv.addr[r->sv.naddr++], &tr->node[order[k]].addr, sizeof(r->sv.addr[0]));
	}
	if (r->sv.naddr == 0) {
		for (size_t k = 0; k < tr->n && k < 2; k++) {
			r->tier_node[k] = order[k];
			memcpy(&r->sv.addr[r->sv.naddr++], &tr->node[order[k]].addr, sizeof(r->sv.addr[0]));
		}
	}
	eres_query(r);
}

static void eres_start_hop(struct eres *r)
{
	r->cur = 0;
	r->tries = 0;
	r->referrals = 0;
	r->tcp = false;
	if (r->tier) {
		tier_fill(r);
		return;
	}
	if (r->forward) {
		r->sv.naddr = 0;
		for (size_t i = 0; i < r->job->rule.nforward && r->sv.naddr < EDNS_MAX_SERVERS; i++) {
			memcpy(&r->sv.addr[r->sv.naddr], &r->job->rule.forward[i].addr, r->job->rule.forward[i].len);
			r->sv.naddr++;
		}
		if (r->sv.naddr == 0) {
			eres_fail(r, &EDE_NO_TARGETS, "policy forward without targets (edns.forward)");
			return;
		}
		eres_query(r);
		return;
	}
	set_bound(r);
	int cut = zcache_get(r);
	if (cut < 0) {
		eres_fail(r, &EDE_NO_ZONE, "the zone's servers could not be found a moment ago");
		return;
	}
	if (cut > 0) {
		eres_query(r);
		return;
	}
	if (discovery_running(r)) {
		r->st = E_WAIT; /* one discovery per cut: the GSLB sees one SOA/NS lookup per zone */
		return;
	}
	r->sv.naddr = 0;
	r->disc_start_ns = clock_ns();
	if (r->bound_is_rule) {
		/* A --subtree rule's name is most often its zone's apex (a CDN's
		 * GSLB zone): its NS is the cut, one query to the zone's servers.
		 * (The SOA walk from the hop name costs a qname-minimisation step,
		 * the SOA, then the NS.) A deeper cut is met as a referral. */
		r->st = E_NS;
		r->ns_probe = true;
		memcpy(r->zone, r->bound, r->bound_len);
		r->zone_len = r->bound_len;
		ub_lookup(r, r->zone, r->zone_len, WIRE_TYPE_NS);
		return;
	}
	soa_walk(r);
}

static void start_job(struct ethread *t, struct job *job)
{
	struct eres *r = calloc(1, sizeof(*r));
	if (r == NULL) {
		budget_release(t->pool, job->partition, rule_slot_of(t->pool, job));
		inflight_fail(job, WIRE_RCODE_SERVFAIL, NULL, false);
		return;
	}
	r->t = t;
	r->job = job;
	r->rule_slot = rule_slot_of(t->pool, job);
	r->fd = -1;
	/* a few upstream attempts' worth, then SERVFAIL rather than silence */
	r->give_up_ns = clock_ns() + 3ull * job->timeout_ms * 1000000ull;
	r->forward = job->rule.policy == CONF_POLICY_FORWARD;
	r->ecs = &job->ecs;
	if (t->pool->tier != NULL) {
		/* a frontend: the tier resolves (iterate or forward is its business) */
		if (r->forward && !atomic_exchange(&t->pool->forward_noted, true))
			log_warn("edns.tier is set: the forward policy of %s (and any other domain's) does not apply here; "
			         "its resolutions go to the tier", job->rule.name);
		r->tier = true;
		r->forward = true; /* one RD=1 query, scrubbed as a forwarder's answer is */
		r->ecs = &job->client_ecs;
	}
	if (job->start_len > 0) {
		/* a normal name's chain entered an EDNS domain: continue from there */
		memcpy(r->name, job->start, job->start_len);
		r->name_len = job->start_len;
		r->acc = job->prefix;
		r->acc_len = job->prefix_len;
		job->prefix = NULL;
		r->hops = 1;
	} else {
		memcpy(r->name, job->qname, job->qname_len);
		r->name_len = job->qname_len;
	}
	r->next = t->list;
	if (t->list)
		t->list->prev = r;
	t->list = r;
	eres_start_hop(r); /* edns_queries is the listener's count, made when it launched the job */
}

static void check_timeouts(struct ethread *t)
{
	uint64_t now = clock_ns();
	struct eres *r = t->list;
	while (r) {
		struct eres *next = r->next;
		/* serve-stale's client response timer: the job runs on */
		if (!r->job->stale_tried && now - r->job->start_ns >= INFLIGHT_STALE_CLIENT_NS)
			inflight_stale_early(r->job);
		if (now > r->give_up_ns) {
			if (r->ub_busy)
				ub_cancel(t->ctx, r->ub_id);
			r->ub_busy = false;
			counter_inc(&t->ctr.upstream_timeouts);
			/* only a discovery that ran long itself says the zone is dead; one
			 * that started late, after waiting for another, just ran out of time */
			if (discovering(r) && now - r->disc_start_ns >= 2ull * r->job->timeout_ms * 1000000ull)
				eres_fail(r, &EDE_NO_ZONE, "finding the zone's servers took too long");
			else if (discovering(r))
				eres_fail(r, &EDE_SLOW, "resolution took too long while finding the zone's servers");
			else
				eres_fail(r, r->mismatched ? &EDE_MISMATCH : &EDE_SLOW, "resolution took too long");
		} else if (r->st == E_QUERY && r->fd >= 0 && now > r->deadline_ns) {
			counter_inc(&t->ctr.upstream_timeouts);
			server_timeout(r);
			next_server(r, r->mismatched ? &EDE_MISMATCH : &EDE_UNREACHABLE, "timeout");
		}
		r = next;
	}
}

/* ---- tier probes (edns.tier; the first EDNS thread, for the whole pool) ---- */

/* Did the node answer probe pb (any reply to its ID, even REFUSED)? Reads what waits on its socket. */
static bool probe_answered(struct ethread *t, const struct tprobe *pb)
{
	for (int i = 0; i < 8; i++) {
		ssize_t n = recv(pb->fd, t->buf, 65535, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return false;
		if (n < 0)
			continue; /* ICMP unreachable: nothing there; read on */
		/* the socket is connected (the node's address and port only); a reply
		 * is QR=1 with our random ID: a liveness signal, nothing else is read */
		if (n >= WIRE_HEADER_SIZE && (t->buf[2] & 0x80) && ((uint16_t)(t->buf[0] << 8 | t->buf[1])) == pb->id)
			return true;
	}
	return false;
}

/* Send node i a probe: ". NS" with RD=0, which any partdns answers from its cache or REFUSES, cheaply. */
static void probe_send(struct ethread *t, unsigned i)
{
	struct tprobe *pb = &t->probes[i];
	const struct tier_node *nd = &t->pool->tier->node[i];
	static const uint8_t root[1] = { 0 };
	uint8_t q[64];
	pb->id = (uint16_t)rnd32();
	int len = wire_query_build(pb->id, false, false, root, 1, WIRE_TYPE_NS, WIRE_CLASS_IN, NULL, q, sizeof(q));
	int fd = len > 0 ? open_upstream(t, &nd->addr, false) : -1;
	if (fd < 0)
		return; /* no socket: this round says nothing of the node */
	if (send(fd, q, (size_t)len, 0) != len) {
		close(fd);
		return;
	}
	pb->fd = fd;
}

/*
 * Every TIER_PROBE_MS: the last round's probes answered or not (two misses
 * in a row mark a node down, one answer up again), then a new probe each.
 * The answers are read here, a round later, not as they come: a node's
 * state moves at this pace anyway, and the thread's loop needs no more
 * descriptors.
 */
static void probe_round(struct ethread *t)
{
	uint64_t now = clock_ns();
	if (now < t->probe_next_ns)
		return;
	t->probe_next_ns = now + TIER_PROBE_MS * 1000000ull;
	struct tier *tr = t->pool->tier;
	for (unsigned i = 0; i < tr->n; i++) {
		struct tprobe *pb = &t->probes[i];
		if (pb->fd >= 0) {
			tier_probe_result(tr, i, probe_answered(t, pb));
			close(pb->fd);
			pb->fd = -1;
		}
		probe_send(t, i);
	}
}

/* How long the loop may sleep: idle means asleep, unless probes are due. */
static int loop_timeout_ms(const struct ethread *t)
{
	/* timers only matter while something is in flight */
	int ms = t->list ? 20 : 1000;
	if (t->probes != NULL) {
		uint64_t now = clock_ns();
		int due = now >= t->probe_next_ns ? 0 : (int)((t->probe_next_ns - now) / 1000000ull) + 1;
		if (due < ms)
			ms = due;
	}
	return ms;
}

static void *ethread_main(void *arg)
{
	struct ethread *t = arg;
	struct epoll_event ev[64];
	bool stop = false;
	while (!stop) {
		int n = epoll_wait(t->epfd, ev, 64, loop_timeout_ms(t));
		for (int i = 0; i < n; i++) {
			struct eev *e = ev[i].data.ptr;
			if (e->kind == EEV_JOBS) {
				struct mq_node *m = mq_take_all(&t->jobs);
				while (m) {
					struct job *job = (struct job *)m;
					m = m->next;
					start_job(t, job);
				}
			} else if (e->kind == EEV_STOP) {
				stop = true;
			} else if (e->kind == EEV_UB) {
				ub_process(t->ctx);
			} else if (e->kind == EEV_SOCK) {
				/* the resolution may have moved on since epoll_wait */
				struct eres *x;
				for (x = t->list; x && x != e->r; x = x->next)
					;
				if (x && x->fd >= 0 && &x->ev == e)
					on_sock(x, ev[i].events);
			}
		}
		check_timeouts(t);
		uint64_t now = clock_ns();
		if (now >= t->below_rebuild_ns)
			below_rebuild(t, now);
		if (t->probes != NULL)
			probe_round(t);
		/* resolutions whose awaited cut discovery ended look again */
		for (struct eres *r = t->list, *next; r; r = next) {
			next = r->next;
			if (r->st == E_WAIT && r->wake) {
				r->wake = false;
				eres_start_hop(r);
				next = t->list; /* the list may have changed; woken ones are cleared */
			}
		}
	}
	return NULL;
}

/* ---- pool ---- */

struct resolve_edns *resolve_edns_new(const struct conf *c, int stop_fd)
{
	struct resolve_edns *p = calloc(1, sizeof(*p));
	if (p == NULL)
		return NULL;
	p->stop_fd = stop_fd;
	p->validate = ubctx_validates(c);
	if (c->resolver.ndomain_insecure > 0) {
		p->insecure = calloc(c->resolver.ndomain_insecure, sizeof(*p->insecure));
		p->insecure_len = calloc(c->resolver.ndomain_insecure, sizeof(*p->insecure_len));
		if (p->insecure == NULL || p->insecure_len == NULL)
			goto fail;
		for (size_t i = 0; i < c->resolver.ndomain_insecure; i++) {
			int n = wire_name_from_text(c->resolver.domain_insecure[i], p->insecure[p->ninsecure], WIRE_MAX_NAME);
			if (n > 0) {
				wire_name_lower(p->insecure[p->ninsecure], (size_t)n, p->insecure[p->ninsecure]);
				p->insecure_len[p->ninsecure++] = (size_t)n;
			}
		}
	}
	hash_key_random(&p->key);
	p->nthreads = c->edns.threads ? c->edns.threads : 1;
	p->max_inflight = c->edns.max_inflight ? c->edns.max_inflight : 1000;
	/* a city may hold a quarter of the pool, a flagged rule half: one city
	 * flooding one zone leaves that zone room for the other cities */
	p->part_cap = p->max_inflight / 4 ? p->max_inflight / 4 : 1;
	p->rule_cap = p->max_inflight / 2 ? p->max_inflight / 2 : 1;
	p->threads = calloc(p->nthreads, sizeof(*p->threads));
	p->steering = steering_new();
	if (p->threads == NULL || p->steering == NULL)
		goto fail;
	/* edns.tier is read once, like edns.outgoing: a restart key (daemon.c note_restart_keys) */
	if (c->edns.ntier > 0) {
		p->tier = tier_new(c->edns.tier, c->edns.ntier);
		if (p->tier == NULL)
			goto fail;
		p->threads[0].probes = calloc(p->tier->n, sizeof(*p->threads[0].probes));
		if (p->threads[0].probes == NULL)
			goto fail;
		for (size_t i = 0; i < p->tier->n; i++)
			p->threads[0].probes[i].fd = -1;
		if (c->edns.policy == CONF_POLICY_FORWARD || c->edns.nforward > 0)
			log_warn("edns.tier is set: edns.policy forward and edns.forward do not apply here; every flagged "
			         "resolution goes to the tier");
		log_info("EDNS tier: %zu node(s); flagged misses go to each partition's owner", p->tier->n);
	}
	/* edns.outgoing is read once: a restart key (daemon.c note_restart_keys) */
	for (size_t i = 0; i < c->edns.noutgoing; i++) {
		const struct conf_addr *a = &c->edns.outgoing[i];
		int f = fam_idx(a->ss.ss_family);
		struct conf_addr *grown = realloc(p->out[f], (p->nout[f] + 1) * sizeof(*grown));
		if (grown == NULL)
			goto fail;
		p->out[f] = grown;
		p->out[f][p->nout[f]++] = *a;
	}
	for (unsigned i = 0; i < p->nthreads; i++) {
		struct ethread *t = &p->threads[i];
		t->pool = p;
		t->idx = i;
		t->epfd = -1;
		t->jobs.efd = -1;
	}
	for (unsigned i = 0; i < p->nthreads; i++) {
		struct ethread *t = &p->threads[i];
		t->zcache = calloc(ZCACHE_SLOTS, sizeof(*t->zcache));
		t->health = calloc(HEALTH_SLOTS, sizeof(*t->health));
		t->rates = calloc(RATE_SLOTS, sizeof(*t->rates));
		t->hints = calloc(BUDGET_SLOTS, sizeof(*t->hints));
		t->zone_qps = (double)c->edns.zone_qps / p->nthreads;
		/* zone cuts and addresses only; never the trust-anchor file's owner */
		t->ctx = ubctx_new(c, NULL,
		                   &(struct ubctx_share){ .idx = 1, .of = 1, .outgoing = c->edns.outgoing,
		                                          .noutgoing = c->edns.noutgoing });
		if (t->zcache == NULL || t->health == NULL || t->rates == NULL || t->hints == NULL || t->ctx == NULL ||
		    mq_init(&t->jobs) != 0)
			goto fail;
		t->epfd = epoll_create1(EPOLL_CLOEXEC);
		if (t->epfd < 0)
			goto fail;
		t->jobs_ev = (struct eev){ .kind = EEV_JOBS };
		t->ub_ev = (struct eev){ .kind = EEV_UB };
		t->stop_ev = (struct eev){ .kind = EEV_STOP };
		struct epoll_event e = { .events = EPOLLIN, .data.ptr = &t->jobs_ev };
		if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, t->jobs.efd, &e) != 0)
			goto fail;
		e.data.ptr = &t->ub_ev;
		if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, ub_fd(t->ctx), &e) != 0)
			goto fail;
		e.data.ptr = &t->stop_ev;
		if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, stop_fd, &e) != 0)
			goto fail;
	}
	return p;
fail:
	log_err("cannot set up the EDNS pool");
	resolve_edns_free(p);
	return NULL;
}

/*
 * Would job's thread t refuse it for its zone's rate (a shed_hint is up)?
 * The thread asks the hinted zone first when it iterates for job's own
 * name (not forwarded, no tier, not a chain continuing at a CNAME target),
 * the name is at or below the zone and its bound (set_bound) is not below it.
 */
static bool shed_early(const struct resolve_edns *p, struct ethread *t, const struct job *job, unsigned slot)
{
	if (p->tier != NULL || job->rule.policy == CONF_POLICY_FORWARD || job->start_len > 0)
		return false;
	struct shed_hint *h = &t->hints[slot];
	uint64_t until = atomic_load_explicit(&h->until_ns, memory_order_acquire);
	if (until == 0 || clock_ns() >= until)
		return false;
	uint64_t zone_hash = atomic_load_explicit(&h->zone_hash, memory_order_relaxed);
	int zone_labels = atomic_load_explicit(&h->zone_labels, memory_order_relaxed);
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&h->until_ns, memory_order_relaxed) != until)
		return false; /* changed while read */
	int labels = wire_name_labels(job->qname, job->qname_len);
	int bound = labels - 1;
	uint8_t rule[WIRE_MAX_NAME];
	int n = job->rule.subtree ? wire_name_from_text(job->rule.name, rule, sizeof(rule)) : -1;
	if (n > 0 && wire_name_in_zone(job->qname, job->qname_len, rule, (size_t)n))
		bound = wire_name_labels(rule, (size_t)n);
	if (labels < 0 || zone_labels > labels || zone_labels < bound)
		return false;
	const uint8_t *zone = job->qname;
	size_t len = job->qname_len;
	for (int i = labels; i > zone_labels; i--) {
		int off = wire_name_parent(zone, len);
		zone += off;
		len -= (size_t)off;
	}
	uint8_t lower[WIRE_MAX_NAME];
	wire_name_lower(zone, len, lower);
	return hash_bytes(&t->pool->key, lower, len) == zone_hash;
}

int resolve_edns_submit(struct resolve_edns *p, struct job *job)
{
	unsigned part = budget_part(job->partition), slot = rule_slot_of(p, job);
	/* Same name (any partition), same thread: its zone-cut cache is warm. */
	struct ethread *t = &p->threads[hash_bytes(&p->key, job->qname, job->qname_len) % p->nthreads];
	if (shed_early(p, t, job, slot)) {
		atomic_fetch_add_explicit(&p->shed, 1, memory_order_relaxed);
		if (log_get_level() >= LOG_LEVEL_INFO) {
			char name[512] = "?";
			wire_name_to_text(job->qname, job->qname_len, name, sizeof(name));
			log_info_limited("EDNS resolution of %s type %u for partition %s failed: zone query rate "
			                 "exceeded (edns.zone_qps)", name, job->qtype, part_name(job));
		}
		inflight_fail(job, WIRE_RCODE_SERVFAIL, &EDE_RATE, false);
		return 0;
	}
	bool over = atomic_fetch_add(&p->inflight, 1) >= p->max_inflight;
	over |= atomic_fetch_add(&p->part_inflight[part], 1) >= p->part_cap;
	over |= atomic_fetch_add(&p->rule_inflight[slot], 1) >= p->rule_cap;
	if (over) {
		budget_release(p, job->partition, slot);
		return -EBUSY;
	}
	mq_push(&t->jobs, &job->node);
	return 0;
}

void resolve_edns_set_dnstap(struct resolve_edns *p, struct dnstap *d, unsigned first)
{
	for (unsigned i = 0; i < p->nthreads; i++)
		p->threads[i].tap = dnstap_queue(d, first + i, &p->threads[i].ctr.dnstap_dropped);
}

unsigned resolve_edns_inflight(struct resolve_edns *p)
{
	return atomic_load_explicit(&p->inflight, memory_order_relaxed);
}

const struct tier *resolve_edns_tier(const struct resolve_edns *p)
{
	return p->tier;
}

void resolve_edns_counters(struct resolve_edns *p, uint64_t *sum)
{
	for (unsigned i = 0; i < p->nthreads; i++)
		counters_add_to(&p->threads[i].ctr, sum);
	/* refused by a listener on a shed_hint: as the thread counts its own */
	uint64_t shed = atomic_load_explicit(&p->shed, memory_order_relaxed);
	sum[C_zone_limited] += shed;
	sum[C_zone_limited_early] += shed;
	sum[C_upstream_errors] += shed;
}

void resolve_edns_latency(struct resolve_edns *p, uint64_t *bucket, uint64_t *sum_ns)
{
	for (unsigned i = 0; i < p->nthreads; i++)
		histogram_add_to(&p->threads[i].latency, bucket, sum_ns);
}

int resolve_edns_start(struct resolve_edns *p)
{
	for (unsigned i = 0; i < p->nthreads; i++) {
		int rc = pthread_create(&p->threads[i].thread, NULL, ethread_main, &p->threads[i]);
		if (rc != 0)
			return -rc;
		p->threads[i].started = true;
	}
	return 0;
}

void resolve_edns_join(struct resolve_edns *p)
{
	for (unsigned i = 0; p && i < p->nthreads; i++) {
		if (p->threads[i].started)
			pthread_join(p->threads[i].thread, NULL);
		p->threads[i].started = false;
	}
}

void resolve_edns_free(struct resolve_edns *p)
{
	if (p == NULL)
		return;
	resolve_edns_join(p);
	for (unsigned i = 0; p->threads && i < p->nthreads; i++) {
		struct ethread *t = &p->threads[i];
		if (t->ctx)
			ub_ctx_delete(t->ctx); /* cancels lookups: no callbacks after this */
		while (t->list)
			eres_fail(t->list, NULL, "shutting down");
		if (t->jobs.efd >= 0) {
			struct mq_node *m = mq_take_all(&t->jobs);
			while (m) {
				struct job *job = (struct job *)m;
				m = m->next;
				budget_release(p, job->partition, rule_slot_of(p, job));
				inflight_fail(job, WIRE_RCODE_SERVFAIL, NULL, false);
			}
			mq_deinit(&t->jobs);
		}
		if (t->epfd >= 0)
			close(t->epfd);
		free(t->zcache);
		free(t->health);
		free(t->rates);
		free(t->hints);
		for (size_t k = 0; t->probes != NULL && k < p->tier->n; k++)
			if (t->probes[k].fd >= 0)
				close(t->probes[k].fd);
		free(t->probes);
	}
	free(p->threads);
	tier_free(p->tier);
	free(p->out[0]);
	free(p->out[1]);
	free(p->insecure);
	free(p->insecure_len);
	steering_free(p->steering);
	free(p);
}

struct steering *resolve_edns_steering(struct resolve_edns *p)
{
	return p->steering;
}
