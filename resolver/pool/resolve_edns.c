/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The EDNS pool: resolutions of EDNS domains for a partition. Its own threads,
 * sockets and libunbound contexts, so a flood here never delays normal
 * resolution. libunbound cannot send ECS, so each thread asks its own
 * libunbound context only for the zone cut and nameserver addresses, then
 * sends the ECS-bearing query itself (policy iterate), or sends it to the
 * forward targets (policy forward). CNAME chains are followed hop by hop,
 * each hop with the partition's ECS, and spliced into one answer.
 *
 * This file starts each resolution and each hop, follows what an upstream
 * answer means (edns_iter.c decides), validates a hop's answer, times
 * resolutions out, and runs the threads and the pool. The parts below it are
 * listed in edns_pool.h.
 */
#include "resolver/pool/resolve_edns.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unbound.h>
#include <unistd.h>

#include "resolver/base/clock.h"
#include "resolver/base/log.h"
#include "resolver/base/ubctx.h"
#include "resolver/cache/inflight.h"
#include "resolver/pool/edns_exchange.h"
#include "resolver/pool/edns_health.h"
#include "resolver/pool/edns_iter.h"
#include "resolver/pool/edns_lookup.h"
#include "resolver/pool/edns_pool.h"
#include "resolver/pool/edns_probe.h"
#include "resolver/pool/edns_res.h"
#include "resolver/pool/edns_sock.h"
#include "resolver/pool/edns_zcache.h"
#include "resolver/pool/steering.h"
#include "resolver/pool/tier.h"
#include "resolver/pool/val.h"
#include "wire/names.h"

#define MAX_HOPS 8        /* CNAME hops followed across responses */
#define MAX_REFERRALS 6   /* referrals followed below the zone libunbound gave */

static void eres_start_hop(struct eres *r);

/* ---- a hop's answer: validated, spliced, followed ---- */

/* The hop's answer stands (validated, or nothing to validate): splice it and follow its CNAME, or finish. */
static void hop_accept(struct eres *r, struct edns_verdict *v)
{
	struct job *job = r->job;
	if (v->step == EDNS_STEP_CNAME) {
		if (r->hops >= MAX_HOPS) {
			edns_verdict_clear(v);
			edns_res_fail(r, &edns_ede_chain, "CNAME chain too long");
			return;
		}
		/* splice this hop and resolve the target, with the same ECS */
		if (edns_res_append(r, v->msg, v->msg_len) != 0) {
			edns_verdict_clear(v);
			return;
		}
		edns_verdict_clear(v);
		r->hops++;
		edns_sock_close(r);
		memcpy(r->name, v->target, v->target_len);
		r->name_len = v->target_len;
		eres_start_hop(r);
		return;
	}
	steering_note(r->t->pool->steering, edns_res_part_name(job), job->rule.name, v->ecs_echoed, v->ecs_scope,
	              v->msg, v->msg_len);
	edns_res_done(r, v->msg, v->msg_len);
	edns_verdict_clear(v);
}

static void on_val_lookup(void *arg, int err, struct ub_result *res);

/* Look up the next thing validation needs, or, with all of them, judge the answer and go on. */
static void val_next(struct eres *r)
{
	struct eval *e = r->val;
	if (e->next < e->needs.n) {
		const struct val_need *n = &e->needs.need[e->next];
		edns_lookup_ub(r, n->name, n->name_len, n->type, on_val_lookup);
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
		edns_res_fail(r, &o.ede, why);
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

/* libunbound's verdict on one lookup validation needs (the callback of val_next's lookups). */
static void on_val_lookup(void *arg, int err, struct ub_result *res)
{
	struct eres *r = arg;
	r->ub_busy = false;
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
	edns_sock_close(r); /* the exchange is over; the lookups may take a while */
	struct eval *e = calloc(1, sizeof(*e));
	if (e == NULL) {
		edns_verdict_clear(v);
		edns_res_fail(r, NULL, "out of memory");
		return;
	}
	e->v = *v;
	v->msg = NULL;
	r->val = e;
	r->st = E_VALIDATE;
	if (val_needs(e->v.msg, e->v.msg_len, r->name, r->name_len, &e->needs) != 0) {
		counter_inc(&r->t->ctr.dnssec_bogus);
		edns_res_fail(r, &edns_ede_val_malformed, "DNSSEC: answer malformed or needs too many keys");
		return;
	}
	val_next(r);
}

/* What an upstream message means (edns_iter.c), followed. */
static void on_response(struct eres *r, const uint8_t *resp, size_t len)
{
	struct job *job = r->job;
	struct edns_hop hop = { .name = r->name, .name_len = r->name_len, .zone = r->zone.name,
	                        .zone_len = r->zone.len, .id = r->ex.id, .qtype = job->qtype, .qclass = job->qclass,
	                        .ecs = r->ecs, .tcp = r->ex.tcp, .forward = r->forward };
	struct edns_verdict v;
	if (edns_iter_response(&hop, resp, len, &v) == -ENOMEM) {
		edns_res_fail(r, NULL, "out of memory");
		return;
	}
	if (v.mismatch) {
		counter_inc(&r->t->ctr.upstream_mismatch);
		r->mismatched = true;
	} else {
		edns_health_answered(r);
		/* the query went out timeout_ms before its deadline (edns_exchange_query) */
		histogram_observe(&r->t->latency, clock_ns() + (uint64_t)job->timeout_ms * 1000000ull - r->ex.deadline_ns);
	}
	if (v.scrubbed > 0)
		log_debug("EDNS answer for partition %s: %u record(s) the server may not give dropped",
		          edns_res_part_name(job), v.scrubbed);
	switch (v.step) {
	case EDNS_STEP_IGNORE:
		return;
	case EDNS_STEP_NEXT_SERVER: {
		const struct wire_ede *ede = v.bad == EDNS_BAD_RCODE      ? &edns_ede_errors
		                             : v.bad == EDNS_BAD_TRUNCATED ? &edns_ede_truncated
		                             : v.bad == EDNS_BAD_MISMATCH  ? &edns_ede_mismatch
		                                                           : &edns_ede_invalid;
		if (r->tier) {
			/* the node is there and said no (or said nonsense): its answer stands for
			 * the partition; asking the next node would only resolve the city twice */
			edns_res_fail(r, v.bad == EDNS_BAD_RCODE ? &edns_ede_tier_error : ede, v.why);
			return;
		}
		edns_exchange_next_server(r, ede, v.why);
		return;
	}
	case EDNS_STEP_TCP:
		edns_sock_close(r);
		r->ex.tcp = true;
		r->zone.tries--; /* the TCP retry belongs to the same attempt */
		edns_exchange_query(r);
		return;
	case EDNS_STEP_REFERRAL:
		if (++r->referrals > MAX_REFERRALS) {
			edns_res_fail(r, &edns_ede_no_zone, "too many referrals");
			return;
		}
		edns_lookup_referral(r, v.cut, v.cut_len, resp, len);
		return;
	case EDNS_STEP_CNAME:
	case EDNS_STEP_DONE:
		break;
	}
	hop_answered(r, &v);
}

static void on_sock(struct eres *r, uint32_t events)
{
	size_t len;
	if (edns_exchange_read(r, events, &len))
		on_response(r, r->t->buf, len);
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
	struct eres_zone *z = &r->zone;
	if (r->ecs->family == 0) {
		edns_res_fail(r, NULL, "no client address to send the EDNS tier");
		return;
	}
	unsigned order[TIER_MAX_NODES];
	tier_order(tr, edns_res_part_name(r->job), order);
	z->sv.naddr = 0;
	for (size_t k = 0; k < tr->n && z->sv.naddr < 2; k++) {
		if (!tier_is_up(tr, order[k]))
			continue;
		z->tier_node[z->sv.naddr] = order[k];
		memcpy(&z->sv.addr[z->sv.naddr++], &tr->node[order[k]].addr, sizeof(z->sv.addr[0]));
	}
	if (z->sv.naddr == 0) {
		for (size_t k = 0; k < tr->n && k < 2; k++) {
			z->tier_node[k] = order[k];
			memcpy(&z->sv.addr[z->sv.naddr++], &tr->node[order[k]].addr, sizeof(z->sv.addr[0]));
		}
	}
	edns_exchange_query(r);
}

/* Policy forward: the rule's targets are the servers. */
static void forward_fill(struct eres *r)
{
	struct eres_zone *z = &r->zone;
	z->sv.naddr = 0;
	for (size_t i = 0; i < r->job->rule.nforward && z->sv.naddr < EDNS_MAX_SERVERS; i++) {
		memcpy(&z->sv.addr[z->sv.naddr], &r->job->rule.forward[i].addr, r->job->rule.forward[i].len);
		z->sv.naddr++;
	}
	if (z->sv.naddr == 0) {
		edns_res_fail(r, &edns_ede_no_targets, "policy forward without targets (edns.forward)");
		return;
	}
	edns_exchange_query(r);
}

/* Ask for r's hop name: of the tier, the forward targets, or the zone's servers (the cut cached or found). */
static void eres_start_hop(struct eres *r)
{
	r->zone.cur = 0;
	r->zone.tries = 0;
	r->referrals = 0;
	r->ex.tcp = false;
	if (r->tier) {
		tier_fill(r);
		return;
	}
	if (r->forward) {
		forward_fill(r);
		return;
	}
	edns_zcache_set_bound(r);
	int cut = edns_zcache_get(r);
	if (cut < 0) {
		edns_res_fail(r, &edns_ede_no_zone, "the zone's servers could not be found a moment ago");
		return;
	}
	if (cut > 0) {
		edns_exchange_query(r);
		return;
	}
	if (edns_zcache_discovery_running(r)) {
		r->st = E_WAIT; /* one discovery per cut: the GSLB sees one SOA/NS lookup per zone */
		return;
	}
	edns_lookup_cut(r);
}

static void start_job(struct ethread *t, struct job *job)
{
	struct eres *r = calloc(1, sizeof(*r));
	if (r == NULL) {
		edns_health_budget_release(t->pool, job->partition, edns_health_rule_slot(t->pool, job));
		inflight_fail(job, WIRE_RCODE_SERVFAIL, NULL, false);
		return;
	}
	r->t = t;
	r->job = job;
	r->rule_slot = edns_health_rule_slot(t->pool, job);
	r->ex.fd = -1;
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

/* r ran past give_up_ns: SERVFAIL, saying what it was doing. */
static void give_up(struct ethread *t, struct eres *r, uint64_t now)
{
	if (r->ub_busy)
		ub_cancel(t->ctx, r->ub_id);
	r->ub_busy = false;
	counter_inc(&t->ctr.upstream_timeouts);
	/* only a discovery that ran long itself says the zone is dead; one
	 * that started late, after waiting for another, just ran out of time */
	if (edns_zcache_discovering(r) && now - r->cut.start_ns >= 2ull * r->job->timeout_ms * 1000000ull)
		edns_res_fail(r, &edns_ede_no_zone, "finding the zone's servers took too long");
	else if (edns_zcache_discovering(r))
		edns_res_fail(r, &edns_ede_slow, "resolution took too long while finding the zone's servers");
	else
		edns_res_fail(r, r->mismatched ? &edns_ede_mismatch : &edns_ede_slow, "resolution took too long");
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
			give_up(t, r, now);
		} else if (r->st == E_QUERY && r->ex.fd >= 0 && now > r->ex.deadline_ns) {
			counter_inc(&t->ctr.upstream_timeouts);
			edns_health_timeout(r);
			edns_exchange_next_server(r, r->mismatched ? &edns_ede_mismatch : &edns_ede_unreachable, "timeout");
		}
		r = next;
	}
}

/* ---- a thread ---- */

/* How long the loop may sleep: idle means asleep, unless probes are due. */
static int loop_timeout_ms(const struct ethread *t)
{
	/* timers only matter while something is in flight */
	return edns_probe_wait_ms(t, t->list ? 20 : 1000);
}

static void take_jobs(struct ethread *t)
{
	struct mq_node *m = mq_take_all(&t->jobs);
	while (m) {
		struct job *job = (struct job *)m;
		m = m->next;
		start_job(t, job);
	}
}

/* Resolutions whose awaited cut discovery ended look again. */
static void wake_waiting(struct ethread *t)
{
	for (struct eres *r = t->list, *next; r; r = next) {
		next = r->next;
		if (r->st == E_WAIT && r->cut.wake) {
			r->cut.wake = false;
			eres_start_hop(r);
			next = t->list; /* the list may have changed; woken ones are cleared */
		}
	}
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
				take_jobs(t);
			} else if (e->kind == EEV_STOP) {
				stop = true;
			} else if (e->kind == EEV_UB) {
				ub_process(t->ctx);
			} else if (e->kind == EEV_SOCK) {
				/* the resolution may have moved on since epoll_wait */
				struct eres *x;
				for (x = t->list; x && x != e->r; x = x->next)
					;
				if (x && x->ex.fd >= 0 && &x->ex.ev == e)
					on_sock(x, ev[i].events);
			}
		}
		check_timeouts(t);
		edns_zcache_tick(t, clock_ns());
		edns_probe_round(t);
		wake_waiting(t);
	}
	return NULL;
}

/* ---- pool ---- */

/* resolver.domain_insecure, in wire form and lower case. @return 0 or -1 (out of memory). */
static int load_insecure(struct resolve_edns *p, const struct conf *c)
{
	if (c->resolver.ndomain_insecure == 0)
		return 0;
	p->insecure = calloc(c->resolver.ndomain_insecure, sizeof(*p->insecure));
	p->insecure_len = calloc(c->resolver.ndomain_insecure, sizeof(*p->insecure_len));
	if (p->insecure == NULL || p->insecure_len == NULL)
		return -1;
	for (size_t i = 0; i < c->resolver.ndomain_insecure; i++) {
		int n = wire_name_from_text(c->resolver.domain_insecure[i], p->insecure[p->ninsecure], WIRE_MAX_NAME);
		if (n > 0) {
			wire_name_lower(p->insecure[p->ninsecure], (size_t)n, p->insecure[p->ninsecure]);
			p->insecure_len[p->ninsecure++] = (size_t)n;
		}
	}
	return 0;
}

/* edns.tier (read once, like edns.outgoing: a restart key, daemon.c note_restart_keys). @return 0 or -1. */
static int load_tier(struct resolve_edns *p, const struct conf *c)
{
	if (c->edns.ntier == 0)
		return 0;
	p->tier = tier_new(c->edns.tier, c->edns.ntier);
	if (p->tier == NULL || edns_probe_init(&p->threads[0], p->tier->n) != 0)
		return -1;
	if (c->edns.policy == CONF_POLICY_FORWARD || c->edns.nforward > 0)
		log_warn("edns.tier is set: edns.policy forward and edns.forward do not apply here; every flagged "
		         "resolution goes to the tier");
	log_info("EDNS tier: %zu node(s); flagged misses go to each partition's owner", p->tier->n);
	return 0;
}

/* t's tables, libunbound context, job queue and epoll set. @return 0 or -1. */
static int thread_init(struct ethread *t, const struct conf *c, int stop_fd)
{
	if (edns_zcache_init(t) != 0 || edns_health_init(t, (double)c->edns.zone_qps / t->pool->nthreads) != 0)
		return -1;
	/* zone cuts and addresses only; never the trust-anchor file's owner */
	t->ctx = ubctx_new(c, NULL,
	                   &(struct ubctx_share){ .idx = 1, .of = 1, .outgoing = c->edns.outgoing,
	                                          .noutgoing = c->edns.noutgoing });
	if (t->ctx == NULL || mq_init(&t->jobs) != 0)
		return -1;
	t->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (t->epfd < 0)
		return -1;
	t->jobs_ev = (struct eev){ .kind = EEV_JOBS };
	t->ub_ev = (struct eev){ .kind = EEV_UB };
	t->stop_ev = (struct eev){ .kind = EEV_STOP };
	struct epoll_event e = { .events = EPOLLIN, .data.ptr = &t->jobs_ev };
	if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, t->jobs.efd, &e) != 0)
		return -1;
	e.data.ptr = &t->ub_ev;
	if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, ub_fd(t->ctx), &e) != 0)
		return -1;
	e.data.ptr = &t->stop_ev;
	if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, stop_fd, &e) != 0)
		return -1;
	return 0;
}

struct resolve_edns *resolve_edns_new(const struct conf *c, int stop_fd)
{
	struct resolve_edns *p = calloc(1, sizeof(*p));
	if (p == NULL)
		return NULL;
	p->stop_fd = stop_fd;
	p->validate = ubctx_validates(c);
	if (load_insecure(p, c) != 0)
		goto fail;
	hash_key_random(&p->key);
	p->nthreads = c->edns.threads ? c->edns.threads : 1;
	edns_health_budget_init(&p->budget, c->edns.max_inflight ? c->edns.max_inflight : 1000);
	p->threads = calloc(p->nthreads, sizeof(*p->threads));
	p->steering = steering_new();
	if (p->threads == NULL || p->steering == NULL)
		goto fail;
	if (load_tier(p, c) != 0)
		goto fail;
	/* edns.outgoing is read once: a restart key (daemon.c note_restart_keys) */
	if (edns_sock_outgoing(&p->out, c->edns.outgoing, c->edns.noutgoing) != 0)
		goto fail;
	for (unsigned i = 0; i < p->nthreads; i++) {
		struct ethread *t = &p->threads[i];
		t->pool = p;
		t->idx = i;
		t->epfd = -1;
		t->jobs.efd = -1;
	}
	for (unsigned i = 0; i < p->nthreads; i++)
		if (thread_init(&p->threads[i], c, stop_fd) != 0)
			goto fail;
	return p;
fail:
	log_err("cannot set up the EDNS pool");
	resolve_edns_free(p);
	return NULL;
}

int resolve_edns_submit(struct resolve_edns *p, struct job *job)
{
	unsigned slot = edns_health_rule_slot(p, job);
	/* Same name (any partition), same thread: its zone-cut cache is warm. */
	struct ethread *t = &p->threads[hash_bytes(&p->key, job->qname, job->qname_len) % p->nthreads];
	if (edns_health_shed_early(p, t, job, slot)) {
		atomic_fetch_add_explicit(&p->budget.shed, 1, memory_order_relaxed);
		if (log_get_level() >= LOG_LEVEL_INFO) {
			char name[512] = "?";
			wire_name_to_text(job->qname, job->qname_len, name, sizeof(name));
			log_info_limited("EDNS resolution of %s type %u for partition %s failed: zone query rate "
			                 "exceeded (edns.zone_qps)", name, job->qtype, edns_res_part_name(job));
		}
		inflight_fail(job, WIRE_RCODE_SERVFAIL, &edns_ede_rate, false);
		return 0;
	}
	if (!edns_health_budget_take(p, job, slot))
		return -EBUSY;
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
	return atomic_load_explicit(&p->budget.inflight, memory_order_relaxed);
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
	uint64_t shed = atomic_load_explicit(&p->budget.shed, memory_order_relaxed);
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
			edns_res_fail(t->list, NULL, "shutting down");
		if (t->jobs.efd >= 0) {
			struct mq_node *m = mq_take_all(&t->jobs);
			while (m) {
				struct job *job = (struct job *)m;
				m = m->next;
				edns_health_budget_release(p, job->partition, edns_health_rule_slot(p, job));
				inflight_fail(job, WIRE_RCODE_SERVFAIL, NULL, false);
			}
			mq_deinit(&t->jobs);
		}
		if (t->epfd >= 0)
			close(t->epfd);
		edns_zcache_free(t);
		edns_health_free(t);
		edns_probe_free(t, p->tier != NULL ? p->tier->n : 0);
	}
	free(p->threads);
	tier_free(p->tier);
	edns_sock_outgoing_free(&p->out);
	free(p->insecure);
	free(p->insecure_len);
	steering_free(p->steering);
	free(p);
}

struct steering *resolve_edns_steering(struct resolve_edns *p)
{
	return p->steering;
}
