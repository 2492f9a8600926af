/* SPDX-License-Identifier: BSD-3-Clause */
/* One query, top to bottom: parse, ACL, classify, route, cache hit or a wait for a resolution. */
#include "resolver/serve/query.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mapping/mapping.h"
#include "partition/partition.h"
#include "resolver/view/chainhint.h"
#include "resolver/view/classify.h"
#include "resolver/base/clock.h"
#include "resolver/view/local.h"
#include "resolver/base/log.h"
#include "resolver/view/rpz.h"
#include "resolver/xfr/rpz_xfr.h"
#include "resolver/view/route.h"
#include "resolver/pool/topk.h"
#include "resolver/base/tls.h"
#include "resolver/serve/ddr.h"
#include "resolver/serve/reply.h"
#include "wire/answer.h"
#include "wire/names.h"
#include "wire/parse.h"
#include "wire/upstream.h"

/* The DDR question (RFC 9462): the encrypted listeners, named as the certificate names them. */
static int ddr_reply(struct query_ctx *x, const struct wire_query *q, uint8_t *out, size_t limit)
{
	char target[256] = "";
	if (x->tls)
		tls_slot_name(x->tls, target, sizeof(target));
	uint8_t *msg;
	size_t len;
	if (ddr_answer(x->snap->conf, target, q, &msg, &len) != 0)
		return reply_error(x, q, WIRE_RCODE_SERVFAIL, NULL, NULL, out, limit);
	return reply_made(x, q, msg, len, NULL, out, limit);
}

/* Local data (local_zones) decides for q: an answer or REFUSED (@return its length), or nothing (-1: go on). */
static int local_reply(struct query_ctx *x, const struct wire_query *q, const struct classify *who, uint8_t *out,
                       size_t limit)
{
	uint8_t *msg;
	size_t len;
	switch (local_answer(x->snap->local, who->part, q, &msg, &len)) {
	case LOCAL_PASS:
		return -1;
	case LOCAL_REFUSED:
		counter_inc(&x->ctr->local_answers);
		return reply_error(x, q, WIRE_RCODE_REFUSED, NULL, NULL, out, limit);
	case LOCAL_ANSWER:
		break;
	}
	struct ecs echo;
	if (who->echo) {
		echo = who->echo_ecs;
		echo.scope = echo.source; /* the answer is the city's */
	}
	counter_inc(&x->ctr->local_answers);
	return reply_made(x, q, msg, len, who->echo ? &echo : NULL, out, limit);
}

static int decide_target(struct query_ctx *x, const struct query_client *cl, const struct wire_query *q,
                         const struct classify *who, uint8_t *out, size_t limit);

/*
 * A policy's CNAME rewrite is followed one hop, as BIND does, so the
 * client lands on the walled garden's address and not on a name its stub
 * will not chase: the target's reply (ANSWER: the client's name CNAME the
 * target) is spliced after the policy's answer. The target is asked like
 * any query of this client (local data, policy, flagged, cache or
 * resolution); when it waits for a resolution its waiter carries the
 * rewrite (x->rewrite, taken by start_miss) and query_answer splices.
 */

/* The reply to the target (in, n bytes from decide or answer_one) after the rewrite rw, as the reply to q. */
static int rewrite_finish(struct query_ctx *x, struct waiter_rewrite *rw, const struct wire_query *target_q,
                          const uint8_t *in, int n, uint8_t *out, size_t limit)
{
	struct wire_query q = *target_q; /* the client's question again */
	memcpy(q.qname, rw->qname, rw->qname_len);
	wire_name_lower(rw->qname, rw->qname_len, q.qname_lc);
	q.qname_len = rw->qname_len;
	if (n <= 0) {
		/* 0: dropped (a policy of the target; counted); -1 with the
		 * rewrite still here: nobody waits for the target (a waiter
		 * would have taken it), so the client is answered now */
		free(rw);
		return n == 0 ? 0 : reply_error(x, &q, WIRE_RCODE_SERVFAIL, NULL, &reply_unanswerable_ede, out, limit);
	}
	uint8_t *spliced;
	size_t slen;
	if (wire_splice(rw->msg, rw->msg_len, in, (size_t)n, &spliced, &slen) != 0) {
		/* the target's reply cannot follow (too big): the rewrite alone */
		spliced = malloc(rw->msg_len);
		if (spliced == NULL) {
			free(rw);
			return reply_error(x, &q, WIRE_RCODE_SERVFAIL, NULL, NULL, out, limit);
		}
		memcpy(spliced, rw->msg, rw->msg_len);
		slen = rw->msg_len;
	}
	free(rw);
	int len = reply_made_write(x, &q, spliced, slen, NULL, false, out, limit); /* counted as the target's reply */
	return len > 0 ? len : reply_error(x, &q, WIRE_RCODE_SERVFAIL, NULL, &reply_unanswerable_ede, out, limit);
}

/* Follow the rewrite msg (taken) for q: @return the reply's length, 0, or -1 (waiting). */
static int rewrite_follow(struct query_ctx *x, const struct query_client *cl, const struct wire_query *q,
                          const struct classify *who, uint8_t *msg, size_t len, uint8_t *out, size_t limit)
{
	struct wire_query tq = *q;
	uint8_t *tmp = malloc(65535);
	struct waiter_rewrite *rw = malloc(sizeof(*rw) + len);
	int t = tmp == NULL || rw == NULL
	                ? -ENOMEM
	                : wire_cname_target(msg, len, q->qname_lc, q->qname_len, q->qtype, tq.qname, &tq.qname_len);
	if (t != 1) {
		free(tmp);
		free(rw);
		if (t == 0) /* nothing to follow */
			return reply_made(x, q, msg, len, NULL, out, limit);
		/* a loop (a CNAME to the name itself), or a target no reply can carry */
		free(msg);
		return reply_error(x, q, WIRE_RCODE_SERVFAIL, NULL, &reply_unanswerable_ede, out, limit);
	}
	wire_name_lower(tq.qname, tq.qname_len, tq.qname_lc);
	memcpy(rw->qname, q->qname, q->qname_len);
	rw->qname_len = q->qname_len;
	memcpy(rw->msg, msg, len);
	rw->msg_len = len;
	free(msg);
	x->rewrite = rw;
	int n = decide_target(x, cl, &tq, who, tmp, 65535); /* the whole reply: the splice is fitted to limit */
	if (x->rewrite == NULL) { /* a waiter has it: the splice comes with the answer */
		free(tmp);
		return n;
	}
	x->rewrite = NULL;
	n = rewrite_finish(x, rw, &tq, tmp, n, out, limit);
	free(tmp);
	return n;
}

/*
 * Response policy (rpz) for q's name and its client (name_clean: the name
 * is known to match no QNAME trigger): an answer (@return its length), no
 * reply (0: DROP), nothing (-1: go on), or, following a rewrite, -1 too
 * when a resolution is awaited (x->rewrite was taken: *waiting set). The
 * target of a rewrite is not checked against client-IP triggers again:
 * they decided already (a client-IP rewrite would otherwise meet itself).
 */
static int rpz_reply(struct query_ctx *x, const struct query_client *cl, const struct wire_query *q,
                     const struct classify *who, bool name_clean, uint8_t *out, size_t limit, bool *waiting)
{
	uint8_t *msg;
	size_t len;
	int family = x->rewrite == NULL ? who->family : AF_UNSPEC;
	switch (rpz_check(x->snap->rpz, who->part, q, family, who->addr, name_clean, &msg, &len)) {
	case RPZ_PASS:
		return -1;
	case RPZ_DROP:
		return reply_drop(x);
	case RPZ_FAIL:
		return reply_error(x, q, WIRE_RCODE_SERVFAIL, NULL, &reply_unanswerable_ede, out, limit);
	case RPZ_CNAME:
		if (x->rewrite == NULL) { /* one hop: a rewrite of the target is answered as it stands */
			int n = rewrite_follow(x, cl, q, who, msg, len, out, limit);
			*waiting = n < 0;
			return n;
		}
		break;
	case RPZ_ANSWER:
		break;
	}
	return reply_made(x, q, msg, len, NULL, out, limit);
}

/*
 * Does the answer section of reply out (written for q: its question is q's
 * name, uncompressed) hold a CNAME? A walk over owner names and types only,
 * far cheaper than the record iterator every hit would otherwise pay.
 */
static bool has_cname(const struct wire_query *q, const uint8_t *out, size_t len)
{
	unsigned an = (unsigned)(out[6] << 8 | out[7]);
	size_t pos = WIRE_HEADER_SIZE + q->qname_len + 4;
	for (unsigned i = 0; i < an; i++) {
		while (pos < len && out[pos] != 0 && (out[pos] & 0xc0) == 0)
			pos += 1u + out[pos];
		if (pos >= len)
			return false;
		pos += (out[pos] & 0xc0) ? 2 : 1; /* a pointer ends the name, as the root does */
		if (pos + 10 > len)
			return false;
		if ((out[pos] << 8 | out[pos + 1]) == WIRE_TYPE_CNAME)
			return true;
		pos += 10u + (size_t)(out[pos + 8] << 8 | out[pos + 9]);
	}
	return false;
}

/*
 * The reply in out (len bytes) is final: a CNAME target in its answer that a
 * policy zone has a trigger for replaces it with the policy's answer to q
 * (as BIND checks every name of the chain; a rewrite there is not followed).
 * @param clean  when not NULL, out: no zone, for any partition, has a trigger
 *               for any CNAME target of the reply
 * @return the reply's length.
 */
static int rpz_chain(struct query_ctx *x, const struct wire_query *q, unsigned part, uint8_t *out, int len,
                     size_t limit, bool *clean)
{
	if (clean != NULL)
		*clean = true;
	if (len <= 0 || !has_cname(q, out, (size_t)len))
		return len; /* most replies: nothing more to check */
	struct wire_iter it;
	struct wire_rr rr;
	if (wire_iter_init(&it, out, (size_t)len) != 0)
		return len;
	while (wire_iter_next(&it, &rr) == 1 && rr.section == WIRE_SECTION_ANSWER) {
		uint8_t t[WIRE_MAX_NAME];
		size_t tl;
		if (rr.type != WIRE_TYPE_CNAME || wire_rdata_name(&it, &rr, 0, t, &tl) != 0)
			continue;
		wire_name_lower(t, tl, t);
		uint8_t *msg;
		size_t mlen;
		switch (rpz_check_name(x->snap->rpz, part, t, tl, q, &msg, &mlen)) {
		case RPZ_PASS:
			if (clean != NULL && *clean)
				*clean = rpz_clean(x->snap->rpz, t, tl);
			continue;
		case RPZ_DROP:
			return reply_drop(x);
		case RPZ_FAIL:
			return reply_error(x, q, WIRE_RCODE_SERVFAIL, NULL, &reply_unanswerable_ede, out, limit);
		case RPZ_CNAME:
		case RPZ_ANSWER:
			return reply_made(x, q, msg, mlen, NULL, out, limit);
		}
	}
	return len;
}

/*
 * A client's first query over server.client_qps in a minute (per listener
 * thread): one log line, so the operator who sees queries go unanswered
 * learns why, and what to change. log_limited bounds the lines a flood from
 * many groups can cause.
 */
static void report_over_limit(struct query_ctx *x, const struct classify *who, const struct conf *c)
{
	static struct log_limit lim;
	char a[INET6_ADDRSTRLEN];
	if (inet_ntop(who->family, who->addr, a, sizeof(a)) == NULL)
		return;
	const char *what = c->server.client_limit_action == CONF_LIMIT_REFUSE ? "refused"
	                   : c->server.client_limit_action == CONF_LIMIT_SLIP ? "dropped, every second one answered TC"
	                                                                       : "dropped";
	log_limited(&lim, LOG_LEVEL_WARN,
	            "client %s (group /%u) is over server.client_qps (%u a second per listener thread): its "
	            "queries over it are %s; a forwarder, a frontend or a benchmark there belongs in "
	            "server.client_exempt (reported once a minute per group)",
	            a, ratelimit_prefix(x->rl, who->family), c->server.client_qps, what);
}

/* A query over its client's rate: dropped, refused, or (slip) every 2nd
 * over UDP answered with an empty TC=1 reply so a real client whose address
 * is spoofed in a flood can still get through over TCP. */
static int over_limit(struct query_ctx *x, const struct query_client *cl, const struct wire_query *q,
                      enum conf_limit_action action, uint8_t *out, size_t limit)
{
	if (action == CONF_LIMIT_REFUSE || (action == CONF_LIMIT_SLIP && cl->tcp))
		return reply_error(x, q, WIRE_RCODE_REFUSED, NULL, NULL, out, limit);
	if (action == CONF_LIMIT_SLIP && (++x->slip & 1) == 0) {
		int n = wire_write_error(q, WIRE_RCODE_NOERROR, NULL, NULL, out, limit);
		if (n <= 0)
			return reply_drop(x);
		out[2] |= WIRE_FLAG_TC >> 8;
		counter_inc(&x->ctr->truncated);
		return n;
	}
	return reply_drop(x);
}

/* ---- cache hits ---- */

/* What a cache lookup is asked: set once per query (or per chain step). */
struct hit_in {
	const struct wire_query *q;
	const struct ecs *echo;
	uint8_t *out;
	size_t cap;
	uint32_t now;
	uint32_t policy;        /* the rpz generation (0: no policy); an entry marked with it was found clean */
	bool partitioned;       /* the client has a partition but the name is normal */
	bool chain_only;        /* take a chain out (partitioned), write nothing */
};

/* What a lookup found. hit_reset clears it before each lookup. */
struct hit_out {
	int len;                /* the reply written to in.out; 0: none */
	bool refresh;           /* the entry is due for a prefetch (cache_hit.refresh, claimed) */
	bool stale;             /* the reply was written from an answer held stale (RFC 8767) */
	bool chain;             /* the chain enters an EDNS domain; see target/prefix */
	bool policy_checked;    /* the entry was marked clean under in.policy: no policy check needed */
	bool incomplete;        /* an incomplete chain (ROUTE_VALUE_INCOMPLETE) for an unpartitioned client */
	uint32_t expiry;        /* the entry's (cache_mark, chain hints) */
	uint8_t target[WIRE_MAX_NAME];
	size_t target_len;
	uint8_t *prefix;        /* malloc'd copy; hit_reset frees it, a caller that keeps it sets it NULL */
	size_t prefix_len;
};

struct hit_ctx {
	struct hit_in in;
	struct hit_out out;
};

/* Whether the next lookup reads the same entry as the last one: its claim on a refresh then stands. */
enum hit_key { HIT_NEW_KEY, HIT_SAME_KEY };

/*
 * Clear what the last lookup found (o->prefix: NULL or its copy, freed
 * here). A refresh is claimed once per entry (cache_hit.refresh), so a
 * second lookup of the same entry keeps the first one's claim.
 */
static inline void hit_reset(struct hit_out *o, enum hit_key key)
{
	free(o->prefix);
	o->prefix = NULL;
	o->prefix_len = 0;
	o->len = 0;
	if (key == HIT_NEW_KEY)
		o->refresh = false;
	o->stale = false;
	o->chain = false;
	o->policy_checked = false;
	o->incomplete = false;
	o->expiry = 0;
	o->target_len = 0; /* not the buffer: zeroing 255 bytes per query is what the fields avoid */
}

/* RFC 8914 EDE 3 on every answer served stale. */
static const struct wire_ede stale_ede = { WIRE_EDE_STALE_ANSWER, NULL };

/* Called under the cache shard lock: write the reply, or take the chain out. */
static int hit_write(const uint8_t *val, size_t vlen, const struct cache_hit *hit, void *arg)
{
	struct hit_ctx *h = arg;
	const struct hit_in *in = &h->in;
	struct hit_out *o = &h->out;
	struct route_value v;
	if (route_value_parse(val, vlen, &v) != 0)
		return -EINVAL;
	if (in->chain_only && !v.chain)
		return 0;
	o->expiry = hit->expiry;
	if (in->policy != 0)
		o->policy_checked = hit->mark == in->policy;
	if (v.failure) { /* a remembered failure (RFC 9520) */
		o->len = wire_write_error(in->q, v.rcode, in->echo, &v.ede, in->out, in->cap);
		return 0;
	}
	if (v.incomplete && !in->partitioned) {
		/* the normal pool stopped at the flagged subtree: no answer for this client */
		o->incomplete = true;
		return 0;
	}
	o->refresh |= hit->refresh;
	if (v.chain && in->partitioned) {
		/* a partitioned client continues through the EDNS pool */
		o->prefix = malloc(v.prefix_len);
		if (o->prefix == NULL)
			return -ENOMEM;
		memcpy(o->prefix, v.prefix, v.prefix_len);
		o->prefix_len = v.prefix_len;
		memcpy(o->target, v.target, v.target_len);
		o->target_len = v.target_len;
		o->chain = true;
		return 0;
	}
	if (hit->stale) { /* held after a failed resolution: no upstream until the hold ends */
		o->stale = true;
		o->len = wire_answer_write_stale(in->q, v.blob, v.blob_len, INFLIGHT_STALE_TTL, in->echo, &stale_ede,
		                                 in->out, in->cap);
		return 0;
	}
	uint32_t age = in->now > hit->stored_at ? in->now - hit->stored_at : 0;
	o->len = wire_answer_write(in->q, NULL, v.blob, v.blob_len, age, in->echo, in->out, in->cap);
	return 0;
}

/*
 * The hit's reply is final. Unless its entry was marked clean under this
 * policy generation, the policy checks its CNAME targets; when neither the
 * name (checked before) nor any target has a trigger in any zone, the
 * entry is marked so its next hits skip both checks (a million-rule zone
 * would otherwise cost every hit two hashed probes and a scan).
 */
static int write_hit(struct query_ctx *x, const struct route *rt, const struct hit_ctx *h)
{
	const struct hit_in *in = &h->in;
	const struct hit_out *o = &h->out;
	counter_inc(&x->ctr->hits);
	counter_inc(&x->pctr[rt->part].hits);
	if (o->stale)
		counter_inc(&x->ctr->stale);
	if (x->snap->rpz != NULL && !o->policy_checked) {
		bool clean;
		int n = rpz_chain(x, in->q, rt->part, in->out, o->len, in->cap, &clean);
		if (n != o->len)
			return n; /* a policy's answer (counted) or a drop */
		if (clean && !o->stale && in->policy != 0 && rpz_clean(x->snap->rpz, in->q->qname_lc, in->q->qname_len))
			cache_mark(x->cache, rt->key, rt->klen, in->now, o->expiry, in->policy);
	}
	reply_count(x, in->out);
	return o->len;
}

/* ---- misses ---- */

/* The rule as the EDNS pool needs it: the domain's own targets, else edns.forward. */
static void job_rule_set(struct job_rule *r, const struct store_domain *d, const struct conf *c)
{
	memcpy(r->name, d->name, sizeof(r->name));
	r->subtree = d->subtree;
	r->policy = d->policy;
	const struct conf_addr *fwd = d->nforward > 0 ? d->forward : c->edns.forward;
	size_t n = d->nforward > 0 ? d->nforward : c->edns.nforward;
	r->nforward = 0;
	for (size_t i = 0; i < n && i < STORE_MAX_FORWARD; i++) {
		if (fwd[i].len > sizeof(r->forward[0].addr))
			continue; /* not an IP address: store_domain_check refuses those */
		memcpy(&r->forward[r->nforward].addr, &fwd[i].ss, fwd[i].len);
		r->forward[r->nforward].len = fwd[i].len;
		r->nforward++;
	}
}

/*
 * The client as an EDNS tier node should classify it (edns.tier): the
 * address this node classified, whole (/32, /128), so the tier's longest
 * match finds the same partition whatever prefix lengths the plan uses. A
 * trusted frontend's ECS is passed on as it came (its own source length),
 * one of source 0 means the frontend's own address. It goes only to the
 * ISP's own tier nodes, which send the mapped identity onward, never this.
 */
static void job_client_ecs(struct ecs *e, const struct route *rt)
{
	memset(e, 0, sizeof(*e));
	if (rt->echo && rt->echo_ecs.source > 0) {
		*e = rt->echo_ecs;
		e->scope = 0;
		return;
	}
	if (rt->addr == NULL)
		return;
	bool v4 = rt->family == AF_INET;
	e->family = v4 ? ECS_FAMILY_IPV4 : ECS_FAMILY_IPV6;
	e->source = v4 ? 32 : 128;
	memcpy(e->addr, rt->addr, v4 ? 4 : 16);
}

/* Fill a new job from the query and its route. */
static void job_fill(struct query_ctx *x, struct job *job, const struct wire_query *q, const struct route *rt)
{
	const struct conf *c = x->snap->conf;
	job->qname = job->key + ROUTE_KEY_HDR; /* the key ends with the lower-cased name */
	job->qname_len = q->qname_len;
	job->qtype = q->qtype;
	job->qclass = q->qclass;
	job->cd_bit = (q->flags & WIRE_FLAG_CD) != 0;
	job->partition = rt->rule ? rt->part : PARTITION_COMMON;
	/* a normal name for a client that continues chains through the EDNS
	 * pool: the normal pool may stop where its chain enters a flagged subtree */
	job->stub_ok = rt->rule == NULL && rt->part != PARTITION_COMMON &&
	               mapping_has_ecs(c->partitions.mapping, rt->part);
	job->stubbed = false;
	job->lim = (struct wire_limits){ .min_ttl = c->cache.min_ttl, .max_ttl = c->cache.max_ttl,
	                                 .max_negative_ttl = c->cache.max_negative_ttl, .nosoa_ttl = 0 };
	job->timeout_ms = c->edns.timeout_ms;
	job->failure_ttl = c->cache.failure_ttl;
	if (rt->rule == NULL)
		return;
	job->edns = true;
	(void)route_identity(rt, c, x->snap->standby, &job->ecs); /* it exists: routing checked (mapping_has_ecs) */
	job_client_ecs(&job->client_ecs, rt);
	job_rule_set(&job->rule, rt->rule, c);
}

/* Fill a new job (start/prefix: an EDNS chain job; prefix is taken) and hand it to its pool. */
static void job_launch(struct query_ctx *x, struct job *job, const struct wire_query *q, const struct route *rt,
                       const uint8_t *start, size_t start_len, uint8_t *prefix, size_t prefix_len)
{
	job_fill(x, job, q, rt);
	if (rt->rule) {
		if (start_len > 0) {
			memcpy(job->start, start, start_len);
			job->start_len = start_len;
			job->prefix = prefix;
			job->prefix_len = prefix_len;
			prefix = NULL;
		}
		counter_inc(&x->ctr->edns_queries);
		counter_inc(&x->pctr[rt->part].edns);
	} else {
		counter_inc(&x->ctr->normal_queries);
	}
	free(prefix);
	x->dispatch(x->dispatch_arg, job);
}

/*
 * A miss: wait for (or start) the resolution of rt->key. For an EDNS chain
 * job, start/prefix say where the EDNS pool continues (prefix is taken).
 * @return -1 (waiting) or a SERVFAIL reply length.
 */
static int start_miss(struct query_ctx *x, const struct query_client *cl, const struct wire_query *q,
                      const struct route *rt, const uint8_t *start, size_t start_len, uint8_t *prefix,
                      size_t prefix_len, uint8_t *out, size_t limit)
{
	counter_inc(&x->ctr->misses);
	counter_inc(&x->pctr[rt->part].misses);
	if (!(q->flags & WIRE_FLAG_RD)) {
		/* RD=0: answered from the cache only, as Unbound's allow_snoop does */
		static const struct wire_ede not_cached = { WIRE_EDE_NOT_AUTHORITATIVE, "not in cache (RD=0)" };
		free(prefix);
		return reply_error(x, q, WIRE_RCODE_REFUSED, rt->echo ? &rt->echo_ecs : NULL, &not_cached, out, limit);
	}
	struct waiter *wt = inflight_waiter_new(x->inflight);
	if (wt == NULL) {
		free(prefix);
		return reply_error(x, q, WIRE_RCODE_SERVFAIL, NULL, NULL, out, limit);
	}
	wt->reply_q = x->replies;
	wt->tcp = cl->tcp;
	wt->tls = cl->tls;
	wt->https = cl->https;
	wt->stream = cl->stream;
	wt->udp_fd = cl->udp_fd;
	wt->conn_id = cl->conn_id;
	memcpy(&wt->peer, cl->peer, cl->peer_len);
	wt->peer_len = cl->peer_len;
	if (cl->via) {
		memcpy(&wt->via, cl->via, cl->via_len);
		wt->via_len = cl->via_len;
	}
	if (cl->local) {
		wt->has_local = true;
		wt->local = *cl->local;
	} else if (cl->listener) { /* dnstap: the address the reply is logged from (has_local stays false) */
		wt->local = *cl->listener;
	}
	wt->partition = rt->part;
	wt->edns_route = rt->rule != NULL;
	wt->echo = rt->echo;
	if (rt->echo)
		wt->echo_ecs = rt->echo_ecs;
	wt->start_ns = clock_ns();
	wt->rewrite = x->rewrite; /* a policy rewrite being followed: this waiter answers it */
	x->rewrite = NULL;
	wt->q = *q;

	struct job *job;
	x->handed_on = true; /* the waiter is the job's now: its reply comes through x->replies */
	if (inflight_join(x->inflight, rt->key, rt->klen, x->snap, wt, &job) == 0) {
		free(prefix);
		counter_inc(&x->ctr->coalesced);
		return -1;
	}
	job_launch(x, job, q, rt, start, start_len, prefix, prefix_len);
	return -1;
}

/*
 * Prefetch (cache.prefetch): a hit of rt->key in the last tenth of its
 * lifetime (cache_hit.refresh) starts the same resolution a miss would, in
 * the background: nobody waits for it and its answer replaces the entry.
 * Only for RD=1 queries; not when a resolution of the key is in flight
 * already. start/prefix as for start_miss (prefix is taken).
 */
static void prefetch(struct query_ctx *x, const struct wire_query *q, const struct route *rt, const uint8_t *start,
                     size_t start_len, uint8_t *prefix, size_t prefix_len)
{
	struct job *job;
	if (!x->snap->conf->cache.prefetch || !(q->flags & WIRE_FLAG_RD) ||
	    inflight_join(x->inflight, rt->key, rt->klen, x->snap, NULL, &job) != 1) {
		free(prefix);
		return;
	}
	counter_inc(&x->ctr->prefetches);
	job_launch(x, job, q, rt, start, start_len, prefix, prefix_len);
}

/*
 * A normal name whose chain enters an EDNS domain at target, for a
 * partitioned client: the per-partition answer, or an EDNS chain job.
 */
static int continue_chain(struct query_ctx *x, const struct query_client *cl, const struct wire_query *q,
                          struct route *rt, const uint8_t *target, size_t target_len, uint8_t *prefix,
                          size_t prefix_len, uint8_t *out, size_t limit)
{
	rt->rule = domains_match(x->snap->domains, target, target_len);
	if (rt->rule == NULL) { /* unflagged since it was cached: resolve the common entry afresh */
		route_key_set(rt, q, PARTITION_COMMON);
		return start_miss(x, cl, q, rt, NULL, 0, prefix, 0, out, limit);
	}
	route_key_set(rt, q, rt->part);
	struct hit_ctx h = { .in = { .q = q, .echo = rt->echo ? &rt->echo_ecs : NULL, .out = out, .cap = limit,
	                             .now = clock_sec(), .policy = rpz_generation(x->snap->rpz) } };
	if (cache_lookup(x->cache, rt->key, rt->klen, h.in.now, hit_write, &h) >= 0 && h.out.len > 0) {
		if (!h.out.stale) /* the next hit of this name from a city goes to the city's entry at once */
			chainhint_set(x->hints, rt->qhash, h.out.expiry);
		if (h.out.refresh) /* the city's entry, refreshed from the target like the miss that made it */
			prefetch(x, q, rt, target, target_len, prefix, prefix_len);
		else
			free(prefix);
		return write_hit(x, rt, &h);
	}
	return start_miss(x, cl, q, rt, target, target_len, prefix, prefix_len, out, limit);
}

/*
 * A city's entry found through a chain hint is due for a refresh: the
 * common entry says where the chain enters the flagged domain (target and
 * prefix), and the refresh starts there, as continue_chain's would. The
 * common entry's own refresh, when this lookup claims it, is started too.
 */
static void hinted_refresh(struct query_ctx *x, const struct wire_query *q, struct route *rt, uint32_t now)
{
	struct hit_ctx h = { .in = { .q = q, .now = now, .partitioned = true, .chain_only = true } };
	struct route common = *rt;
	common.rule = NULL;
	route_key_set_partition(common.key, PARTITION_COMMON);
	if (cache_lookup(x->cache, common.key, common.klen, now, hit_write, &h) < 0)
		return;
	if (h.out.refresh)
		prefetch(x, q, &common, NULL, 0, NULL, 0);
	rt->rule = h.out.chain ? domains_match(x->snap->domains, h.out.target, h.out.target_len) : NULL;
	if (rt->rule == NULL) { /* no chain any more, or its target unflagged: the next miss tells */
		free(h.out.prefix);
		return;
	}
	prefetch(x, q, rt, h.out.target, h.out.target_len, h.out.prefix, h.out.prefix_len);
}

/*
 * A NOTIFY (RFC 1996): a policy zone's primary saying its serial moved.
 * Taken from the primary (or rpz[].allow_notify) only, and then only as a
 * reason to check the serial now; the reply is the question back, AA set.
 * Anything else (a zone not ours, another sender, not SOA/IN) is REFUSED.
 */
static int notify_reply(struct query_ctx *x, const struct wire_query *q, const struct classify *who, uint8_t *out,
                        size_t limit)
{
	counter_inc(&x->ctr->notifies);
	int rcode = WIRE_RCODE_REFUSED;
	if (q->qtype == WIRE_TYPE_SOA && q->qclass == WIRE_CLASS_IN &&
	    rpz_xfr_notify(x->xfr, x->snap->conf, q->qname_lc, q->qname_len, who->family, who->addr) >= 0)
		rcode = WIRE_RCODE_NOERROR;
	int n = reply_error(x, q, rcode, NULL, NULL, out, limit);
	if (n > 0 && rcode == WIRE_RCODE_NOERROR)
		out[2] |= WIRE_FLAG_AA >> 8;
	return n;
}

/* ---- the query ---- */

static inline __attribute__((always_inline)) int decide(struct query_ctx *x, const struct query_client *cl,
                                                        const struct wire_query *q, const struct classify *who,
                                                        uint8_t *out, size_t limit);

static int process(struct query_ctx *x, const struct query_client *cl, const uint8_t *pkt, size_t len,
                   uint8_t *out, size_t cap)
{
	/* parse */
	struct wire_query q;
	x->reply_part = -1; /* replies before classification count in no partition */
	counter_inc(&x->ctr->queries);
	counter_inc(cl->https ? &x->ctr->doh : cl->tls ? &x->ctr->dot : cl->tcp ? &x->ctr->tcp : &x->ctr->udp);
	int rc = wire_parse_query(pkt, len, &q);
	if (rc == WIRE_E_DROP)
		return reply_drop(x);
	int error_rcode = -1;
	if (rc == WIRE_E_FORMERR)
		error_rcode = WIRE_RCODE_FORMERR;
	else if (rc == WIRE_E_NOTIMP)
		error_rcode = WIRE_RCODE_NOTIMP;
	else if (rc == WIRE_E_BADVERS)
		error_rcode = WIRE_RCODE_BADVERS;
	/* server.max_udp_size: our reply's OPT says it, and a UDP reply is at
	 * most the smaller of it and the client's size (512 without EDNS) */
	const struct conf *c = x->snap->conf;
	q.reply_udp = (uint16_t)c->server.max_udp_size;
	size_t limit = cl->tcp ? 65535 : wire_udp_limit(&q, q.reply_udp);
	if (limit > cap)
		limit = cap;

	/* ACL and what a resolver does not serve */
	struct classify who;
	if (!classify_addr(cl->peer, &who.family, &who.addr))
		return reply_drop(x);
	classify_lists(x->snap, &who); /* allow, exempt, trusted ECS: one lookup */
	/* a client over its rate (server.client_qps), unless exempt: before any
	 * reply, so a spoofed flood of bad or refused queries is limited too */
	enum ratelimit_verdict rv = ratelimit_take(x->rl, who.family, who.addr, clock_coarse_ns());
	if (rv != RATELIMIT_OK && !classify_exempt(&who)) {
		counter_inc(&x->ctr->ratelimited);
		if (rv == RATELIMIT_OVER_NEW)
			report_over_limit(x, &who, c);
		return over_limit(x, cl, &q, c->server.client_limit_action, out, limit);
	}
	if (rc == WIRE_NOTIFY) /* a primary, not a client: before the clients' allow list */
		return notify_reply(x, &q, &who, out, limit);
	if (error_rcode < 0 && !classify_allowed(&who))
		error_rcode = WIRE_RCODE_REFUSED;
	if (error_rcode < 0 && (q.qtype == 251 || q.qtype == 252)) /* IXFR, AXFR: not a resolver's job */
		error_rcode = WIRE_RCODE_REFUSED;
	if (error_rcode < 0 && q.qclass != WIRE_CLASS_IN)
		error_rcode = WIRE_RCODE_REFUSED;
	if (error_rcode >= 0)
		return reply_error(x, &q, error_rcode, NULL, NULL, out, limit);

	/* ANY: one synthesized RRset, never a resolution (RFC 8482) */
	if (q.qtype == WIRE_TYPE_ANY) {
		int n = wire_write_any(&q, NULL, out, limit);
		reply_count_rcode(x, WIRE_RCODE_NOERROR);
		return n > 0 ? n : 0;
	}

	/* RFC 9462: a client asking how to reach us encrypted (rare: one compare for the others) */
	if (q.qtype == 64 && c->server.ddr && ddr_is_query(&q))
		return ddr_reply(x, &q, out, limit);

	/* classify: the source address, or a trusted frontend's ECS */
	int crc = classify_client(c, &q, &who);
	if (who.unmatched && x->unmatched != NULL) /* refused ones too: the prefixes the plan lacks */
		topk_add(x->unmatched, who.echo ? (who.echo_ecs.family == ECS_FAMILY_IPV4 ? AF_INET : AF_INET6) : who.family,
		         who.echo ? who.echo_ecs.addr : who.addr);
	if (crc != 0)
		return reply_error(x, &q, WIRE_RCODE_REFUSED, NULL, NULL, out, limit);
	counter_inc(&x->pctr[who.part].queries);
	counter_inc(cl->tcp ? &x->pctr[who.part].tcp : &x->pctr[who.part].udp);
	x->reply_part = (int)who.part;
	return decide(x, cl, &q, &who, out, limit);
}

/*
 * A classified client's query: local data first (the city's zones, then
 * everyone's); then response policy; then flagged domains, then recursion.
 * Inlined into process (a hit pays no call for it); a rewrite's target
 * comes in through decide_target.
 * @return as query_process.
 */
static inline __attribute__((always_inline)) int decide(struct query_ctx *x, const struct query_client *cl,
                                                        const struct wire_query *q, const struct classify *who,
                                                        uint8_t *out, size_t limit)
{
	const struct conf *c = x->snap->conf;
	if (x->snap->local != NULL) {
		int n = local_reply(x, q, who, out, limit);
		if (n >= 0)
			return n;
	}

	/* route: an EDNS domain of a real partition goes per partition */
	struct route rt; /* fields set one by one: an initializer would zero the key buffer on every query */
	rt.part = who->part;
	rt.addr = who->addr;
	rt.echo = who->echo;
	if (who->echo)
		rt.echo_ecs = who->echo_ecs;
	route_decide(&rt, c, x->snap->domains, q, who->family);
	uint32_t now = clock_sec();

	/* a normal name known to CNAME into a flagged domain (continue_chain
	 * left a hint): the city's own entry at once, one lookup; a stale
	 * hint falls back to the common entry below */
	bool hinted = rt.rule == NULL && chainhint_get(x->hints, rt.qhash, now) &&
	              mapping_has_ecs(c->partitions.mapping, rt.part);
	if (hinted) {
		route_key_set_partition(rt.key, rt.part);
		if (rt.echo)
			rt.echo_ecs.scope = rt.echo_ecs.source;
	}

	/* cache */
	struct hit_ctx h; /* set field by field: an initializer would zero the target buffer on every query */
	h.in.q = q;
	h.in.echo = rt.echo ? &rt.echo_ecs : NULL;
	h.in.out = out;
	h.in.cap = limit;
	h.in.now = now;
	h.in.policy = x->snap->rpz != NULL ? rpz_generation(x->snap->rpz) : 0;
	h.in.partitioned = rt.part != PARTITION_COMMON && rt.rule == NULL;
	h.in.chain_only = false;
	h.out.prefix = NULL;
	hit_reset(&h.out, HIT_NEW_KEY);
	int found = cache_lookup(x->cache, rt.key, rt.klen, now, hit_write, &h);
	if (hinted && (found < 0 || h.out.len <= 0)) {
		/* the city's entry is gone (or the hint was another name's): the common entry */
		hinted = false;
		route_key_set_partition(rt.key, PARTITION_COMMON);
		if (rt.echo)
			rt.echo_ecs.scope = 0;
		hit_reset(&h.out, HIT_NEW_KEY);
		found = cache_lookup(x->cache, rt.key, rt.klen, now, hit_write, &h);
	}

	/* response policy for the name, before anything found is used; not
	 * when the entry found was checked under this policy already (but
	 * the client's address, when client-IP triggers exist) */
	if (x->snap->rpz != NULL && (!h.out.policy_checked || rpz_client_ip(x->snap->rpz))) {
		bool waiting = false;
		int n = rpz_reply(x, cl, q, who, h.out.policy_checked, out, limit, &waiting);
		if (n >= 0 || waiting) {
			free(h.out.prefix);
			return n;
		}
	}

	if (found >= 0) {
		if (h.out.chain && !mapping_has_ecs(c->partitions.mapping, rt.part)) {
			/* no identity to send: answer from the common entry, as for a client of no partition */
			h.in.partitioned = false;
			hit_reset(&h.out, HIT_SAME_KEY);
			cache_lookup(x->cache, rt.key, rt.klen, now, hit_write, &h);
		}
		if (h.out.refresh && hinted)
			hinted_refresh(x, q, &rt, now);
		else if (h.out.refresh)
			prefetch(x, q, &rt, NULL, 0, NULL, 0);
		if (h.out.chain) {
			if (rt.echo)
				rt.echo_ecs.scope = rt.echo_ecs.source;
			return continue_chain(x, cl, q, &rt, h.out.target, h.out.target_len, h.out.prefix,
			                      h.out.prefix_len, out, limit);
		}
		if (h.out.len > 0)
			return write_hit(x, &rt, &h);
	}

	/* miss: join or start a resolution */
	return start_miss(x, cl, q, &rt, NULL, 0, NULL, 0, out, limit);
}

static int decide_target(struct query_ctx *x, const struct query_client *cl, const struct wire_query *q,
                         const struct classify *who, uint8_t *out, size_t limit)
{
	return decide(x, cl, q, who, out, limit);
}

/* ---- answers from resolutions ---- */

/* A normal answer reached a partitioned waiter whose chain enters an EDNS domain. */
/* @return false (no identity: answer with the common entry), or true with *len as query_answer returns it. */
/* The client a waiter answers, as a query from it would have it. */
static struct query_client waiter_client(const struct waiter *wt)
{
	return (struct query_client){ .tcp = wt->tcp, .tls = wt->tls, .https = wt->https, .stream = wt->stream,
	                              .udp_fd = wt->udp_fd, .conn_id = wt->conn_id,
	                              .peer = &wt->peer, .peer_len = wt->peer_len,
	                              .via = wt->via_len ? &wt->via : NULL, .via_len = wt->via_len,
	                              .local = wt->has_local ? &wt->local : NULL,
	                              .listener = wt->local.ss_family != 0 ? &wt->local : NULL };
}

static bool answer_as_chain(struct query_ctx *x, const struct waiter *wt, uint8_t *out, size_t limit, int *len)
{
	const struct result *r = wt->result;
	const struct conf *c = x->snap->conf;
	const uint8_t *addr;
	struct route rt = { .part = wt->partition, .echo = wt->echo, .echo_ecs = wt->echo_ecs };
	if (!classify_addr(&wt->peer, &rt.family, &addr) || !mapping_has_ecs(c->partitions.mapping, wt->partition))
		return false;
	rt.addr = addr;
	if (rt.echo)
		rt.echo_ecs.scope = rt.echo_ecs.source;
	uint8_t *prefix = malloc(r->prefix_len);
	if (prefix == NULL)
		return false;
	memcpy(prefix, r->prefix, r->prefix_len);
	struct query_client cl = waiter_client(wt);
	*len = continue_chain(x, &cl, &wt->q, &rt, r->target, r->target_len, prefix, r->prefix_len, out, limit);
	return true;
}

/*
 * The waiter's job stopped where the chain enters a flagged subtree (the
 * normal pool's stub context), but this client cannot continue through the
 * EDNS pool: resolve the name again, this time without stubs (job_fill
 * says so for such a client).
 */
static int answer_again(struct query_ctx *x, const struct waiter *wt, uint8_t *out, size_t limit)
{
	struct route rt = { .part = wt->partition, .echo = wt->echo, .echo_ecs = wt->echo_ecs };
	const uint8_t *addr;
	if (classify_addr(&wt->peer, &rt.family, &addr))
		rt.addr = addr;
	if (rt.echo)
		rt.echo_ecs.scope = 0;
	route_key_set(&rt, &wt->q, PARTITION_COMMON);
	struct query_client cl = waiter_client(wt);
	return start_miss(x, &cl, &wt->q, &rt, NULL, 0, NULL, 0, out, limit);
}

static int answer_one(struct query_ctx *x, const struct waiter *wt, uint8_t *out, size_t limit)
{
	const struct result *r = wt->result;
	int len;
	if (r && r->prefix && !wt->edns_route && wt->partition != PARTITION_COMMON &&
	    answer_as_chain(x, wt, out, limit, &len))
		return len;
	if (r && r->incomplete && r->rcode < 0 && !wt->edns_route)
		return answer_again(x, wt, out, limit);
	const struct ecs *echo = wt->echo ? &wt->echo_ecs : NULL;
	if (r == NULL || r->rcode >= 0) {
		len = reply_error(x, &wt->q, r ? r->rcode : WIRE_RCODE_SERVFAIL, echo, r && r->has_ede ? &r->ede : NULL,
		                  out, limit);
		if (len > 0 && x->resp_time)
			histogram_observe(x->resp_time, clock_ns() - wt->start_ns);
		return len;
	}
	if (r->stale) {
		counter_inc(&x->ctr->stale);
		len = wire_answer_write_stale(&wt->q, r->blob, r->blob_len, INFLIGHT_STALE_TTL, echo, &stale_ede, out,
		                              limit);
	} else {
		len = wire_answer_write(&wt->q, NULL, r->blob, r->blob_len, 0, echo, out, limit);
	}
	int policy = len > 0 && x->snap->rpz != NULL ? rpz_chain(x, &wt->q, wt->partition, out, len, limit, NULL)
	                                             : len;
	if (policy != len)
		len = policy; /* a policy's answer (counted), or 0: dropped */
	else if (len <= 0)
		len = reply_error(x, &wt->q, WIRE_RCODE_SERVFAIL, echo, NULL, out, limit);
	else
		reply_count(x, out);
	if (len > 0 && x->resp_time)
		histogram_observe(x->resp_time, clock_ns() - wt->start_ns);
	return len;
}

static int answer(struct query_ctx *x, struct waiter *wt, uint8_t *out, size_t cap)
{
	x->reply_part = (int)wt->partition;
	size_t limit = wt->tcp ? 65535 : wire_udp_limit(&wt->q, wt->q.reply_udp); /* as when it was asked */
	if (limit > cap)
		limit = cap;
	if (wt->rewrite == NULL)
		return answer_one(x, wt, out, limit);
	/* following a policy's rewrite: the target's whole reply, then the splice */
	struct waiter_rewrite *rw = wt->rewrite;
	wt->rewrite = NULL;
	uint8_t *tmp = malloc(65535);
	if (tmp == NULL) {
		free(rw);
		return reply_error(x, &wt->q, WIRE_RCODE_SERVFAIL, NULL, NULL, out, limit);
	}
	x->rewrite = rw;
	int n = answer_one(x, wt, tmp, 65535);
	if (x->rewrite == NULL) { /* the chain goes on in a new waiter, which has it */
		free(tmp);
		return n;
	}
	x->rewrite = NULL;
	n = rewrite_finish(x, rw, &wt->q, tmp, n, out, limit);
	free(tmp);
	return n;
}

/* ---- the one exit: a reply, a counted drop, or a waiter ---- */

/*
 * What settle answers a query the path left with none of the three: a
 * bare SERVFAIL fits any client's buffer (header, question, OPT), so it
 * does not depend on the UDP size the query path would have used.
 */
#define SETTLE_LIMIT 512

/* Left unanswered (n: what the path returned): SERVFAIL to q, or a drop when even that cannot be written. */
static int settle_fail(struct query_ctx *x, const struct wire_query *q, int n, uint8_t *out, size_t limit)
{
	static struct log_limit lim;
	counter_inc(&x->ctr->unanswered);
	log_limited(&lim, LOG_LEVEL_ERR, "a query the query path left with no reply, drop or waiter (%d): SERVFAIL (a bug)",
	            n);
	int len = reply_error(x, q, WIRE_RCODE_SERVFAIL, NULL, NULL, out, limit < SETTLE_LIMIT ? limit : SETTLE_LIMIT);
	return len > 0 ? len : reply_drop(x);
}

/*
 * Did the query path end the query one of the three ways query_process
 * promises? 0 must come with a counted drop (drop()), -1 with a waiter
 * handed on (start_miss); a reply is anything longer. One test per query
 * (the flags are cleared before), so a path that forgets to answer, as a
 * policy's CNAME loop once did, costs a SERVFAIL instead of a client that
 * waits for nothing and a TCP connection that never closes.
 */
static inline bool settled(const struct query_ctx *x, int n)
{
	return n > 0 || (n == 0 && x->dropped) || (n < 0 && x->handed_on);
}

static int process_settled(struct query_ctx *x, const struct query_client *cl, const uint8_t *pkt, size_t len,
                           uint8_t *out, size_t cap)
{
	x->dropped = false;
	x->handed_on = false;
	int n = process(x, cl, pkt, len, out, cap);
	if (__builtin_expect(settled(x, n), 1))
		return n;
	struct wire_query q;
	int rc = wire_parse_query(pkt, len, &q);
	if (rc == WIRE_E_DROP) /* (process drops those itself: cannot be) */
		return reply_drop(x);
	return settle_fail(x, &q, n, out, cap);
}

/* ---- dnstap (server.dnstap): what clients asked and what they were told ---- */

int query_process(struct query_ctx *x, const struct query_client *cl, const uint8_t *pkt, size_t len,
                  uint8_t *out, size_t cap)
{
	if (x->tap == NULL) /* off: this branch is all it costs */
		return process_settled(x, cl, pkt, len, out, cap);
	struct dnstap_msg m = { .type = DNSTAP_CLIENT_QUERY, .tcp = cl->tcp, .tls = cl->tls, .https = cl->https,
	                        .query_addr = cl->peer,
	                        .response_addr = cl->listener, .query_time = dnstap_now(), .query = pkt,
	                        .query_len = len };
	dnstap_log(x->tap, &m);
	int n = process_settled(x, cl, pkt, len, out, cap);
	if (n > 0) { /* answered at once; a waiter's reply is logged by query_answer */
		m.type = DNSTAP_CLIENT_RESPONSE;
		m.response_time = dnstap_now();
		m.response = out;
		m.response_len = (size_t)n;
		dnstap_log(x->tap, &m);
	}
	return n;
}

int query_answer(struct query_ctx *x, struct waiter *wt, uint8_t *out, size_t cap)
{
	x->dropped = false;
	x->handed_on = false;
	int n = answer(x, wt, out, cap);
	if (!settled(x, n))
		n = settle_fail(x, &wt->q, n, out, cap);
	if (x->tap == NULL || n <= 0)
		return n; /* off, nothing to send, or a new waiter took over (it logs the reply) */
	struct timespec now = dnstap_now();
	uint64_t waited = clock_ns() - wt->start_ns, at = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	at -= waited < at ? waited : 0; /* the query's arrival, on the realtime clock */
	struct dnstap_msg m = { .type = DNSTAP_CLIENT_RESPONSE, .tcp = wt->tcp, .tls = wt->tls, .https = wt->https,
	                        .query_addr = &wt->peer,
	                        .response_addr = wt->local.ss_family != 0 ? &wt->local : NULL,
	                        .query_time = { .tv_sec = (time_t)(at / 1000000000ull), .tv_nsec = (long)(at % 1000000000ull) },
	                        .response_time = now, .response = out, .response_len = (size_t)n };
	dnstap_log(x->tap, &m);
	return n;
}
