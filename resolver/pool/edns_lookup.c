/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The EDNS pool's zone cuts, found with the thread's own libunbound context
 * (libunbound cannot send ECS, so it is asked only where the zone is and
 * what its servers' addresses are): the rule name's NS, or the SOA of the
 * name and each parent until one answers, then NS, then addresses; or taken
 * from a referral. Each answer is read by edns_iter.c; a cut found is
 * cached (edns_zcache.c) and the zone's servers are asked.
 */
#include "resolver/pool/edns_lookup.h"

#include <stdio.h>
#include <string.h>

#include "resolver/base/clock.h"
#include "resolver/pool/edns_exchange.h"
#include "resolver/pool/edns_res.h"
#include "resolver/pool/edns_sock.h"
#include "resolver/pool/edns_zcache.h"
#include "wire/names.h"
#include "wire/upstream.h"

static void ub_done(void *arg, int err, struct ub_result *res);

void edns_lookup_ub(struct eres *r, const uint8_t *name, size_t len, uint16_t type, ub_callback_type cb)
{
	char text[1024];
	if (wire_name_to_text(name, len, text, sizeof(text)) < 0) {
		edns_res_fail(r, &edns_ede_invalid, "bad name");
		return;
	}
	counter_inc(&r->t->ctr.ub_lookups);
	int rc = ub_resolve_async(r->t->ctx, text, type, WIRE_CLASS_IN, r, cb, &r->ub_id);
	if (rc != 0)
		edns_res_fail(r, NULL, ub_strerror(rc));
	else
		r->ub_busy = true;
}

/* Find the cut by the SOA of the hop name, then of each parent (the answer's SOA names the zone). */
static void soa_walk(struct eres *r)
{
	r->st = E_SOA;
	r->cut.ns_probe = false;
	memcpy(r->cut.zname, r->name, r->name_len);
	r->cut.zname_len = r->name_len;
	edns_lookup_ub(r, r->cut.zname, r->cut.zname_len, WIRE_TYPE_SOA, ub_done);
}

void edns_lookup_cut(struct eres *r)
{
	r->zone.sv.naddr = 0;
	r->cut.start_ns = clock_ns();
	if (r->cut.bound_is_rule) {
		/* A --subtree rule's name is most often its zone's apex (a CDN's
		 * GSLB zone): its NS is the cut, one query to the zone's servers.
		 * (The SOA walk from the hop name costs a qname-minimisation step,
		 * the SOA, then the NS.) A deeper cut is met as a referral. */
		r->st = E_NS;
		r->cut.ns_probe = true;
		memcpy(r->zone.name, r->cut.bound, r->cut.bound_len);
		r->zone.len = r->cut.bound_len;
		edns_lookup_ub(r, r->zone.name, r->zone.len, WIRE_TYPE_NS, ub_done);
		return;
	}
	soa_walk(r);
}

static void on_soa(struct eres *r, const uint8_t *msg, size_t len)
{
	switch (edns_iter_soa(msg, len, r->name, r->name_len, r->cut.zname, r->cut.zname_len, r->zone.name,
	                      &r->zone.len)) {
	case EDNS_CUT_FOUND:
		r->st = E_NS;
		edns_lookup_ub(r, r->zone.name, r->zone.len, WIRE_TYPE_NS, ub_done);
		return;
	case EDNS_CUT_PARENT: {
		int off = wire_name_parent(r->cut.zname, r->cut.zname_len);
		if (off <= 0) {
			edns_res_fail(r, &edns_ede_no_zone, "no zone found");
			return;
		}
		memmove(r->cut.zname, r->cut.zname + off, r->cut.zname_len - (size_t)off);
		r->cut.zname_len -= (size_t)off;
		edns_lookup_ub(r, r->cut.zname, r->cut.zname_len, WIRE_TYPE_SOA, ub_done);
		return;
	}
	case EDNS_CUT_NONE:
		break;
	}
	edns_res_fail(r, &edns_ede_no_zone, "no SOA for the zone cut");
}

/* Nameserver addresses without glue: A for each name, then AAAA for each. */
static void next_nsaddr(struct eres *r)
{
	const struct edns_servers *sv = &r->zone.sv;
	/* no lookups of addresses the pool would not send to (edns.outgoing) */
	if (r->cut.ns_i < sv->nns && !edns_sock_sendable(r->t->pool, AF_INET))
		r->cut.ns_i = sv->nns;
	if (r->cut.ns_i >= 2 * sv->nns || (r->cut.ns_i >= sv->nns && !edns_sock_sendable(r->t->pool, AF_INET6))) {
		edns_res_fail(r, &edns_ede_no_zone, "no address for any nameserver");
		return;
	}
	r->st = E_ADDR;
	int i = r->cut.ns_i++;
	uint16_t type = i < sv->nns ? WIRE_TYPE_A : WIRE_TYPE_AAAA;
	i %= sv->nns;
	edns_lookup_ub(r, sv->nsname[i], sv->nsname_len[i], type, ub_done);
}

/* The cut is found, with r->zone's servers: cache it, wake who waited for it, ask them. */
static void cut_found(struct eres *r)
{
	edns_zcache_put(r, r->zone.sv.ns_ttl);
	edns_zcache_wake_waiters(r);
	edns_exchange_query(r);
}

static void on_ns(struct eres *r, const uint8_t *msg, size_t len)
{
	if (edns_servers_take_ns(&r->zone.sv, msg, len, WIRE_SECTION_ANSWER, r->zone.name, r->zone.len) == 0) {
		if (r->cut.ns_probe) { /* the flagged subtree is not a zone of its own: find the one holding it */
			soa_walk(r);
			return;
		}
		edns_res_fail(r, &edns_ede_no_zone, "zone has no NS records");
		return;
	}
	r->cut.ns_probe = false;
	r->zone.sv.naddr = 0;
	edns_servers_take_addrs(&r->zone.sv, msg, len, WIRE_SECTION_ADDITIONAL, false, NULL, 0);
	if (edns_sock_keep_sendable(r) > 0) {
		cut_found(r);
		return;
	}
	r->cut.ns_i = 0;
	next_nsaddr(r);
}

static void on_addr(struct eres *r, const uint8_t *msg, size_t len)
{
	edns_servers_take_addrs(&r->zone.sv, msg, len, WIRE_SECTION_ANSWER, true, NULL, 0);
	if (edns_sock_keep_sendable(r) == 0) {
		next_nsaddr(r);
		return;
	}
	cut_found(r);
}

/* The zone cut's lookup itself is forged or expired: say so, not "zone not found". Frees res. */
static void cut_bogus(struct eres *r, struct ub_result *res)
{
	char why[400];
	snprintf(why, sizeof(why), "DNSSEC: zone-cut lookup bogus: %s", res->why_bogus ? res->why_bogus : "?");
	/* libunbound's reasons (validator/val_sigcrypt.c) name the names involved:
	 * match its phrases, not a word a name may hold */
	const char *w = res->why_bogus ? res->why_bogus : "";
	const struct wire_ede *ede = strstr(w, ": signature expired")                 ? &edns_ede_cut_expired
	                             : strstr(w, ": signature before inception date") ? &edns_ede_cut_not_yet
	                                                                              : &edns_ede_cut_bogus;
	ub_resolve_free(res);
	counter_inc(&r->t->ctr.dnssec_bogus);
	edns_res_fail(r, ede, why);
}

/* The lookup failed: the next nameserver's address, the SOA walk after the NS probe, or no zone. */
static void lookup_failed(struct eres *r, int err)
{
	if (r->st == E_ADDR) {
		next_nsaddr(r);
		return;
	}
	if (r->cut.ns_probe) {
		soa_walk(r);
		return;
	}
	edns_res_fail(r, &edns_ede_no_zone, err ? ub_strerror(err) : "zone-cut lookup failed");
}

/*
 * An SOA lookup said NXDOMAIN: when that came from a zone above the flagged
 * name's own (a TLD, the root), never send ECS there: answer it as is
 * (@return true: r is done). An NXDOMAIN from the flagged zone itself goes
 * on: its cut is found and cached, and the GSLB is asked with ECS.
 */
static bool nxdomain_above(struct eres *r, const struct ub_result *res)
{
	const uint8_t *msg = res->answer_packet;
	size_t len = (size_t)res->answer_len;
	uint8_t nxzone[WIRE_MAX_NAME];
	size_t nxzone_len = 0;
	if (edns_iter_soa(msg, len, r->name, r->name_len, r->cut.zname, r->cut.zname_len, nxzone, &nxzone_len) ==
	            EDNS_CUT_FOUND &&
	    wire_name_in_zone(nxzone, nxzone_len, r->cut.bound, r->cut.bound_len))
		return false;
	uint8_t *neg;
	size_t neg_len;
	if (wire_negative_answer(msg, len, r->name, r->name_len, r->job->qtype, r->job->qclass, &neg, &neg_len) != 0) {
		edns_res_fail(r, &edns_ede_invalid, "cannot make the negative answer");
		return true;
	}
	/* libunbound validated this denial itself (a bogus one ended before) */
	if (res->secure && !r->job->cd_bit)
		neg[3] |= WIRE_FLAG_AD;
	edns_zcache_wake_waiters(r);
	r->st = E_QUERY;
	edns_res_done(r, neg, neg_len);
	free(neg);
	return true;
}

static void ub_done(void *arg, int err, struct ub_result *res)
{
	struct eres *r = arg;
	r->ub_busy = false;
	if (err == 0 && res != NULL && res->bogus && !r->job->cd_bit) {
		cut_bogus(r, res);
		return;
	}
	if (err != 0 || res == NULL || res->answer_packet == NULL || res->answer_len < WIRE_HEADER_SIZE) {
		if (res)
			ub_resolve_free(res);
		lookup_failed(r, err);
		return;
	}
	if (r->st == E_SOA && res->rcode == WIRE_RCODE_NXDOMAIN && nxdomain_above(r, res)) {
		ub_resolve_free(res);
		return;
	}
	const uint8_t *msg = res->answer_packet;
	size_t len = (size_t)res->answer_len;
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

void edns_lookup_referral(struct eres *r, const uint8_t *cut, size_t cut_len, const uint8_t *resp, size_t len)
{
	/* glue only from inside the zone that referred us (the parent of cut) */
	uint8_t parent[WIRE_MAX_NAME];
	size_t parent_len = r->zone.len;
	memcpy(parent, r->zone.name, r->zone.len);
	memcpy(r->zone.name, cut, cut_len);
	r->zone.len = cut_len;
	edns_servers_take_ns(&r->zone.sv, resp, len, WIRE_SECTION_AUTHORITY, r->zone.name, r->zone.len);
	r->zone.sv.naddr = 0;
	r->zone.cur = 0;
	r->zone.tries = 0;
	edns_servers_take_addrs(&r->zone.sv, resp, len, WIRE_SECTION_ADDITIONAL, false, parent, parent_len);
	edns_sock_close(r);
	if (edns_sock_keep_sendable(r) > 0) {
		edns_zcache_put(r, r->zone.sv.ns_ttl);
		edns_exchange_query(r);
	} else {
		r->cut.ns_i = 0;
		next_nsaddr(r);
	}
}
