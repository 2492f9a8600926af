/* SPDX-License-Identifier: BSD-3-Clause */
/* The EDNS iteration step: zone cuts, referrals, CNAME hops and answers, read through the wire layer. */
#include "resolver/pool/edns_iter.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "wire/names.h"
#include "wire/parse.h"
#include "wire/upstream.h"

void edns_servers_add(struct edns_servers *s, int family, const uint8_t *addr, uint16_t port)
{
	if (s->naddr >= EDNS_MAX_SERVERS)
		return;
	struct sockaddr_storage *ss = &s->addr[s->naddr];
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		memcpy(&s4->sin_addr, addr, 4);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		memcpy(&s6->sin6_addr, addr, 16);
	}
	s->naddr++;
}

int edns_servers_take_ns(struct edns_servers *s, const uint8_t *msg, size_t len, enum wire_section section,
                         const uint8_t *zone, size_t zone_len)
{
	struct wire_iter it;
	struct wire_rr rr;
	s->nns = 0;
	s->ns_ttl = UINT32_MAX;
	if (wire_iter_init(&it, msg, len) != 0)
		return 0;
	while (s->nns < EDNS_MAX_NSNAMES && wire_iter_next(&it, &rr) == 1) {
		if (rr.section != section || rr.type != WIRE_TYPE_NS ||
		    !wire_name_equal(rr.owner, rr.owner_len, zone, zone_len))
			continue;
		if (wire_rdata_name(&it, &rr, 0, s->nsname[s->nns], &s->nsname_len[s->nns]) == 0) {
			s->nns++;
			if (rr.ttl < s->ns_ttl)
				s->ns_ttl = rr.ttl & 0x80000000u ? 0 : rr.ttl; /* RFC 2181 §8 */
		}
	}
	return s->nns;
}

void edns_servers_take_addrs(struct edns_servers *s, const uint8_t *msg, size_t len, enum wire_section section,
                             bool any_owner, const uint8_t *bailiwick, size_t bailiwick_len)
{
	struct wire_iter it;
	struct wire_rr rr;
	if (wire_iter_init(&it, msg, len) != 0)
		return;
	while (wire_iter_next(&it, &rr) == 1) {
		if (rr.section != section || (rr.type != WIRE_TYPE_A && rr.type != WIRE_TYPE_AAAA))
			continue;
		bool is_ns = any_owner;
		for (int k = 0; k < s->nns && !is_ns; k++)
			is_ns = wire_name_equal(rr.owner, rr.owner_len, s->nsname[k], s->nsname_len[k]);
		if (!is_ns || (bailiwick && !wire_name_in_zone(rr.owner, rr.owner_len, bailiwick, bailiwick_len)))
			continue;
		if (rr.type == WIRE_TYPE_A && rr.rdlen == 4)
			edns_servers_add(s, AF_INET, msg + rr.rdata, 53);
		else if (rr.type == WIRE_TYPE_AAAA && rr.rdlen == 16)
			edns_servers_add(s, AF_INET6, msg + rr.rdata, 53);
	}
}

enum edns_cut edns_iter_soa(const uint8_t *msg, size_t len, const uint8_t *name, size_t name_len,
                            const uint8_t *zname, size_t zname_len, uint8_t *zone, size_t *zone_len)
{
	struct wire_iter it;
	struct wire_rr rr;
	if (wire_iter_init(&it, msg, len) != 0)
		return EDNS_CUT_NONE;
	bool alias = false;
	const uint8_t *soa_owner = NULL;
	size_t soa_len = 0;
	uint8_t owner_buf[WIRE_MAX_NAME];
	int k;
	while ((k = wire_iter_next(&it, &rr)) == 1) {
		if (rr.section == WIRE_SECTION_ANSWER && wire_name_equal(rr.owner, rr.owner_len, zname, zname_len)) {
			if (rr.type == WIRE_TYPE_SOA) {
				memcpy(zone, zname, zname_len);
				*zone_len = zname_len;
				wire_name_lower(zone, *zone_len, zone);
				return EDNS_CUT_FOUND;
			}
			if (rr.type == WIRE_TYPE_CNAME || rr.type == 39 /* DNAME */)
				alias = true;
		} else if (rr.section == WIRE_SECTION_AUTHORITY && rr.type == WIRE_TYPE_SOA && soa_owner == NULL &&
		           wire_name_in_zone(name, name_len, rr.owner, rr.owner_len)) {
			memcpy(owner_buf, rr.owner, rr.owner_len);
			soa_owner = owner_buf;
			soa_len = rr.owner_len;
		}
	}
	/* The SOA answer followed the alias elsewhere: the zone holding the
	 * alias is the one holding its parent. */
	if (alias)
		return EDNS_CUT_PARENT;
	if (soa_owner == NULL)
		return EDNS_CUT_NONE;
	memcpy(zone, soa_owner, soa_len);
	*zone_len = soa_len;
	wire_name_lower(zone, *zone_len, zone);
	return EDNS_CUT_FOUND;
}

/* A delegation below hop->zone towards hop->name in the authority section? */
static bool find_referral(const struct edns_hop *hop, const uint8_t *msg, size_t len, struct edns_verdict *v)
{
	struct wire_iter it;
	struct wire_rr rr;
	if (wire_iter_init(&it, msg, len) != 0)
		return false;
	while (wire_iter_next(&it, &rr) == 1) {
		if (rr.section == WIRE_SECTION_AUTHORITY && rr.type == WIRE_TYPE_NS &&
		    wire_name_in_zone(hop->name, hop->name_len, rr.owner, rr.owner_len) &&
		    !wire_name_equal(rr.owner, rr.owner_len, hop->zone, hop->zone_len) &&
		    wire_name_in_zone(rr.owner, rr.owner_len, hop->zone, hop->zone_len)) {
			memcpy(v->cut, rr.owner, rr.owner_len);
			v->cut_len = rr.owner_len;
			wire_name_lower(v->cut, v->cut_len, v->cut);
			return true;
		}
	}
	return false;
}

int edns_iter_response(const struct edns_hop *hop, const uint8_t *msg, size_t len, struct edns_verdict *v)
{
	memset(v, 0, sizeof(*v));
	struct wire_resp_info info;
	int rc = wire_response_check(msg, len, hop->id, hop->name, hop->name_len, hop->qtype, hop->qclass, hop->ecs,
	                             &info);
	if (rc == WIRE_E_MISMATCH) {
		/* not ours (or a wrong ECS): over UDP keep waiting; over TCP the stream is ours alone */
		v->mismatch = true;
		v->bad = EDNS_BAD_MISMATCH;
		v->step = hop->tcp ? EDNS_STEP_NEXT_SERVER : EDNS_STEP_IGNORE;
		v->why = "mismatched response over TCP";
		return 0;
	}
	if (rc != 0) {
		v->step = EDNS_STEP_NEXT_SERVER;
		v->bad = EDNS_BAD_MALFORMED;
		v->why = "malformed response";
		return 0;
	}
	if (info.tc) {
		/* truncated over UDP: ask again over TCP; over TCP there is nothing more to get */
		v->step = hop->tcp ? EDNS_STEP_NEXT_SERVER : EDNS_STEP_TCP;
		v->bad = hop->tcp ? EDNS_BAD_TRUNCATED : EDNS_BAD_NONE;
		v->why = "truncated over TCP";
		return 0;
	}
	if (info.rcode != WIRE_RCODE_NOERROR && info.rcode != WIRE_RCODE_NXDOMAIN) {
		v->step = EDNS_STEP_NEXT_SERVER;
		v->bad = EDNS_BAD_RCODE;
		v->why = "server error rcode";
		return 0;
	}
	if (!hop->forward && info.rcode == WIRE_RCODE_NOERROR && info.ancount == 0 && !info.aa && info.nscount > 0 &&
	    find_referral(hop, msg, len, v)) {
		v->step = EDNS_STEP_REFERRAL;
		return 0;
	}
	static const uint8_t root[1] = { 0 };
	struct wire_scrub policy = { .qname = hop->name, .qname_len = hop->name_len, .qtype = hop->qtype,
	                             .zone = hop->forward ? root : hop->zone,
	                             .zone_len = hop->forward ? 1 : hop->zone_len, .forwarder = hop->forward };
	rc = wire_scrub(msg, len, &policy, &v->msg, &v->msg_len, &v->scrubbed);
	int ct = rc == 0 ? wire_cname_target(v->msg, v->msg_len, hop->name, hop->name_len, hop->qtype, v->target,
	                                     &v->target_len)
	                 : rc;
	if (ct < 0) {
		edns_verdict_clear(v);
		v->step = EDNS_STEP_NEXT_SERVER;
		v->bad = EDNS_BAD_MALFORMED;
		v->why = rc == -ENOMEM ? "out of memory" : "malformed answer (or a CNAME loop)";
		return rc == -ENOMEM ? -ENOMEM : 0;
	}
	v->step = ct == 1 ? EDNS_STEP_CNAME : EDNS_STEP_DONE;
	v->ecs_echoed = info.has_ecs; /* wire_response_check: an ECS there answers ours */
	v->ecs_scope = info.has_ecs ? info.ecs.scope : 0;
	return 0;
}

void edns_verdict_clear(struct edns_verdict *v)
{
	free(v->msg);
	v->msg = NULL;
	v->msg_len = 0;
}
