/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/pool/. The EDNS pool's structs: the pool, its threads, one resolution. Declares no functions. */
#pragma once

/*
 * The EDNS pool's files, from the bottom up (each calls only the ones listed
 * before it):
 *   edns_zcache.c    zone cuts a thread knows: the cache, the bound a cut is
 *                    looked for up to, the discoveries in flight
 *   edns_health.c    fair shares, server health, zone query rates (and the
 *                    hints that let listeners refuse early)
 *   edns_sock.c      upstream sockets: edns.outgoing, random ports, closing
 *   edns_res.c       how a resolution ends: its spliced answer, done, failed
 *   edns_exchange.c  the ECS-bearing query to a zone's servers and the reply
 *   edns_lookup.c    libunbound lookups: the zone cut, nameserver addresses
 *   edns_probe.c     edns.tier's probes
 *   resolve_edns.c   a resolution's start and hops, timeouts, the threads, the pool
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#include "conf/conf.h"
#include "partition/partition.h"
#include "resolver/base/counters.h"
#include "resolver/base/dnstap.h"
#include "resolver/base/mq.h"
#include "resolver/cache/job.h"
#include "resolver/pool/edns_iter.h"
#include "resolver/pool/val.h"
#include "util/hash.h"
#include "wire/wire.h"

#define BUDGET_SLOTS 1024     /* flagged rules whose resolutions in flight are counted */
#define BELOW_BITS 16384      /* the zone-cut cache's "a cut is cached below" filter (edns_zcache.c) */
#define HEALTH_BACKOFF_MAX_MS 120000 /* the longest a server is down, and a failed cut remembered */

struct ub_ctx;
struct steering;
struct tier;
struct eres;

/* Where a resolution is: finding the zone cut (SOA, NS, addresses), waiting
 * for another resolution's cut discovery, asking the zone's servers, or
 * fetching what the DNSSEC validation of a hop's answer needs. */
enum est { E_SOA, E_NS, E_ADDR, E_WAIT, E_QUERY, E_VALIDATE };
enum eev_kind { EEV_JOBS, EEV_UB, EEV_STOP, EEV_SOCK };

struct eev {
	enum eev_kind kind;
	struct eres *r;
};

/* ---- a thread ---- */

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

/* The zone cuts a thread knows (edns_zcache.c). */
struct edns_zcache {
	struct zentry *slot;          /* ZCACHE_SLOTS */
	/* bit hash(Z) % BELOW_BITS set: the cache may hold an entry below Z (a
	 * cut, or a bound that failed). Set for every ancestor of an entry put;
	 * cleared and set again from the live entries every 30 s. */
	uint64_t below[BELOW_BITS / 64];
	uint64_t below_rebuild_ns;
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

/* A thread's server health and zone query rates (edns_health.c). */
struct edns_health {
	struct shealth *servers;      /* HEALTH_SLOTS */
	struct zrate *rates;          /* RATE_SLOTS */
	struct shed_hint *hints;      /* BUDGET_SLOTS: zones over their rate, by flagged rule */
	double zone_qps;              /* this thread's share of edns.zone_qps; 0 = no limit */
};

/* A tier node's probe (edns.tier). */
struct tprobe {
	int fd;        /* a fresh socket per probe: a new random port each time; -1 = none out */
	uint16_t id;
};

/* edns.tier's probes: the first thread sends them all, for the pool (edns_probe.c). */
struct edns_probes {
	struct tprobe *node;          /* one per tier node; NULL = none (other threads, or no tier) */
	uint64_t next_ns;             /* the next round */
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
	struct eres *list;            /* every resolution in progress */
	struct edns_zcache zc;
	struct edns_health health;
	struct counters ctr;
	struct histogram latency;     /* an upstream query sent to its matching response */
	unsigned out_next[2];         /* round robin over the pool's IPv4, IPv6 source addresses (edns_sock.c) */
	struct dnstap_queue *tap;     /* server.dnstap: this thread's queue; NULL = off */
	struct edns_probes probe;
	uint8_t buf[65535 + 2];
};

/* ---- the pool ---- */

/* Resolutions in flight and the fair shares of them (edns_health.c). */
struct edns_budget {
	unsigned max_inflight;
	atomic_uint inflight;
	/* one city takes at most a quarter of max_inflight, one flagged rule half */
	unsigned part_cap, rule_cap;
	atomic_uint part_inflight[PARTITION_MAX + 1];
	atomic_uint rule_inflight[BUDGET_SLOTS];
	_Atomic uint64_t shed;        /* flagged misses refused by the listeners on a shed_hint */
};

/* edns.outgoing by family; both empty: the kernel picks (any address) (edns_sock.c). */
struct edns_outgoing {
	struct conf_addr *addr[2];    /* [0] IPv4, [1] IPv6 */
	size_t n[2];
};

struct resolve_edns {
	int stop_fd;
	struct hash_key key;          /* picks a thread by name; keys every table of the threads */
	unsigned nthreads;
	struct ethread *threads;
	struct edns_budget budget;
	struct edns_outgoing out;
	struct steering *steering;    /* what each city's final answers say (partdnsctl steering) */
	struct tier *tier;            /* edns.tier: a frontend, flagged misses go to the tier; NULL = resolve here */
	atomic_bool forward_noted;    /* a domain's forward policy met on a frontend was logged */
	bool validate;                /* a trust anchor is configured: every hop's answer is validated */
	size_t ninsecure;             /* resolver.domain_insecure (wire, lower case): insecure, no lookups */
	uint8_t (*insecure)[WIRE_MAX_NAME];
	size_t *insecure_len;
};

/* ---- one resolution ---- */

/* A hop's answer being validated (E_VALIDATE): what to do with it after, and the lookups it needs. */
struct eval {
	struct edns_verdict v;        /* the hop's verdict; v.msg is the answer */
	struct val_needs needs;
	unsigned next;                /* the next need to look up */
	uint8_t *answers[VAL_MAX_NEEDS]; /* secure DNSKEY answers, copied from libunbound */
	char why[VAL_MAX_NEEDS][160];    /* libunbound's why_bogus, copied */
};

/* Finding the zone cut of a hop (edns_lookup.c, edns_zcache.c). */
struct eres_cut {
	uint8_t bound[WIRE_MAX_NAME]; /* the highest zone the cut of this hop may be taken from */
	size_t bound_len;
	bool bound_is_rule;           /* bound is a --subtree rule's name (not the hop name's parent) */
	bool ns_probe;                /* E_NS: asking the bound's NS first, the SOA walk if it has none */
	uint8_t zname[WIRE_MAX_NAME]; /* name whose SOA is asked */
	size_t zname_len;
	int ns_i;                     /* the next nameserver address lookup: A of each name, then AAAA */
	uint64_t start_ns;            /* when this resolution began finding a cut itself */
	bool wake;                    /* E_WAIT: a cut discovery ended, look again */
};

/* The zone asked and its servers: found, cached or referred to; or forward targets, or tier nodes. */
struct eres_zone {
	uint8_t name[WIRE_MAX_NAME];  /* the zone (iterate policy) */
	size_t len;
	struct edns_servers sv;
	unsigned tier_node[EDNS_MAX_SERVERS]; /* tier: the node of each sv.addr, by score */
	int cur, tries;               /* the server asked now (sv.addr[cur % naddr]); attempts of this hop */
};

/* One query to one server and its reply (edns_exchange.c, edns_sock.c). */
struct eres_exchange {
	int fd;                       /* -1: none open */
	bool tcp, tcp_sent;
	struct eev ev;
	uint16_t id;
	uint64_t deadline_ns;
	uint8_t q[512];
	size_t qlen;
	uint8_t *tbuf;                /* TCP response being read */
	size_t tlen;
	struct timespec sent_rt;      /* dnstap: when the query went out (realtime) */
};

/* One resolution in progress. */
struct eres {
	struct eres *prev, *next;     /* the thread's list */
	struct ethread *t;
	struct job *job;
	enum est st;
	bool forward;
	bool tier;                    /* edns.tier: asked of the partition's owner (forward is set too) */
	const struct ecs *ecs;        /* the ECS sent: the partition's identity, or for the tier the client's */
	unsigned rule_slot;           /* the job's slot in rule_inflight */
	uint64_t give_up_ns;          /* whole resolution: SERVFAIL after this */
	uint8_t name[WIRE_MAX_NAME];  /* the name of this hop */
	size_t name_len;
	uint8_t *acc;                 /* responses of earlier hops, spliced */
	size_t acc_len;
	int hops, referrals;
	bool mismatched;              /* a response did not match the query (ID, question, ECS) */
	int ub_id;                    /* libunbound lookup in flight (a cut's or validation's; st != E_QUERY) */
	bool ub_busy;
	struct eres_cut cut;
	struct eres_zone zone;
	struct eres_exchange ex;
	struct eval *val;             /* E_VALIDATE only (malloc'd) */
};
