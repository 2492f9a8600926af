/* SPDX-License-Identifier: BSD-3-Clause */
/* Messages to and from upstream servers: our query, checking its response, where its CNAME chain goes
 * next, two answers spliced, a chain's first hops, scrubbing, negative answers. */
#include <errno.h>
#include <string.h>

#include "wire/upstream.h"
#include "wire/bytes.h"
#include "wire/encode.h"
#include "wire/names.h"
#include "wire/parse.h"

/* ---- upstream ---- */

int wire_query_build(uint16_t id, bool rd, bool do_bit, const uint8_t *qname, size_t qname_len, uint16_t qtype,
		     uint16_t qclass, const struct ecs *ecs, uint8_t *out, size_t cap)
{
	if (wire_name_check(qname, qname_len) != 0)
		return -EINVAL;
	size_t need = WIRE_HEADER_SIZE + qname_len + 4 + wire_opt_rr_size(ecs, NULL);
	if (need > cap)
		return -ENOSPC;
	wr16(out, id);
	wr16(out + 2, rd ? WIRE_FLAG_RD : 0);
	wr16(out + 4, 1);
	wr16(out + 6, 0);
	wr16(out + 8, 0);
	wr16(out + 10, 1);
	size_t pos = WIRE_HEADER_SIZE;
	memcpy(out + pos, qname, qname_len);
	pos += qname_len;
	wr16(out + pos, qtype);
	wr16(out + pos + 2, qclass);
	pos += 4;
	int rc = wire_opt_write(out + pos, cap - pos, WIRE_DEFAULT_UDP, 0, do_bit, ecs, NULL);
	if (rc < 0)
		return rc;
	return (int)(pos + (size_t)rc);
}

int wire_response_check(const uint8_t *resp, size_t len, uint16_t id, const uint8_t *qname, size_t qname_len,
			uint16_t qtype, uint16_t qclass, const struct ecs *ecs_sent, struct wire_resp_info *info)
{
	struct wire_resp_info local;
	if (info == NULL)
		info = &local;
	memset(info, 0, sizeof(*info));
	if (len < WIRE_HEADER_SIZE)
		return WIRE_E_FORMERR;
	uint16_t flags = rd16(resp + 2);
	info->rcode = flags & WIRE_FLAG_RCODE;
	info->tc = (flags & WIRE_FLAG_TC) != 0;
	info->aa = (flags & WIRE_FLAG_AA) != 0;
	info->ad = (flags & WIRE_FLAG_AD) != 0;
	info->qdcount = rd16(resp + 4);
	info->ancount = rd16(resp + 6);
	info->nscount = rd16(resp + 8);
	info->arcount = rd16(resp + 10);
	if (rd16(resp) != id || !(flags & WIRE_FLAG_QR) || (flags & WIRE_FLAG_OPCODE) || info->qdcount == 0)
		return WIRE_E_MISMATCH;
	if (info->qdcount > 1)
		return WIRE_E_FORMERR;
	uint8_t name[WIRE_MAX_NAME];
	size_t name_len, pos;
	if (wire_question_read(resp, len, &pos, name, &name_len) != 0)
		return WIRE_E_FORMERR;
	if (!wire_name_equal(name, name_len, qname, qname_len) || rd16(resp + pos - 4) != qtype ||
	    rd16(resp + pos - 2) != qclass)
		return WIRE_E_MISMATCH;

	unsigned skip = info->ancount + info->nscount;
	for (unsigned i = 0; i < skip + info->arcount; i++) {
		struct wire_raw_rr rr;
		if (wire_rr_read(resp, len, &pos, &rr, NULL) != 0) {
			if (info->tc)
				break; /* cut off; the caller retries over TCP */
			return WIRE_E_FORMERR;
		}
		if (rr.type != WIRE_TYPE_OPT)
			continue;
		if (i < skip || info->has_edns || rr.owner_len != 1)
			return WIRE_E_FORMERR;
		info->has_edns = true;
		info->rcode |= (int)(rr.ttl >> 24) << 4;
		if (wire_opt_options(resp + rr.rdata, rr.rdlen, false, &info->has_ecs, &info->ecs) != 0)
			return WIRE_E_FORMERR;
	}
	/* RFC 7871 §7.3: an ECS must echo ours; none at all means the authority ignored it. */
	if (info->has_ecs && (ecs_sent == NULL || !ecs_match(ecs_sent, &info->ecs)))
		return WIRE_E_MISMATCH;
	return 0;
}

int wire_cname_target(const uint8_t *resp, size_t len, const uint8_t *qname, size_t qname_len, uint16_t qtype,
		      uint8_t *target, size_t *target_len)
{
	if (len < WIRE_HEADER_SIZE || wire_name_check(qname, qname_len) != 0)
		return WIRE_E_FORMERR;
	uint16_t flags = rd16(resp + 2);
	unsigned qd = rd16(resp + 4), an = rd16(resp + 6), ns = rd16(resp + 8);
	size_t pos = WIRE_HEADER_SIZE;
	uint8_t name[WIRE_MAX_NAME];
	size_t name_len;
	for (unsigned i = 0; i < qd; i++) {
		if (wire_name_read(resp, len, &pos, name, &name_len) != 0 || len - pos < 4)
			return WIRE_E_FORMERR;
		pos += 4;
	}
	struct wire_walk c;
	c.out = NULL;
	int rc = wire_chain_walk(resp, len, pos, an, qname, qname_len, qtype, &c);
	if (rc != 0)
		return rc;
	if (c.answered || c.hops == 0 || qtype == WIRE_TYPE_CNAME || qtype == WIRE_TYPE_ANY)
		return 0;
	if ((flags & WIRE_FLAG_RCODE) == WIRE_RCODE_NXDOMAIN)
		return 0;
	/* Skip the answer (wire_chain_walk checked it), then look for the target zone's SOA. */
	struct wire_raw_rr rr;
	for (unsigned i = 0; i < an; i++)
		if (wire_rr_read(resp, len, &pos, &rr, NULL) != 0)
			return WIRE_E_FORMERR;
	for (unsigned i = 0; i < ns; i++) {
		if (wire_rr_read(resp, len, &pos, &rr, name) != 0)
			return WIRE_E_FORMERR;
		if (rr.type == WIRE_TYPE_SOA && wire_name_in_zone(c.name, c.name_len, name, rr.owner_len))
			return 0;
	}
	memcpy(target, c.name, c.name_len);
	*target_len = c.name_len;
	return 1;
}

/* Re-encode n RRs at *pos of pkt; OPTs are dropped (checked when allow_opt) or FORMERR. */
static int splice_section(struct wire_enc *e, const uint8_t *pkt, size_t len, size_t *pos, unsigned n, bool allow_opt,
			  bool write, unsigned *written)
{
	bool seen_opt = false;
	for (unsigned i = 0; i < n; i++) {
		struct wire_raw_rr rr;
		uint8_t owner[WIRE_MAX_NAME];
		if (wire_rr_read(pkt, len, pos, &rr, owner) != 0)
			return WIRE_E_FORMERR;
		if (rr.type == WIRE_TYPE_OPT) {
			if (!allow_opt || seen_opt || rr.owner_len != 1)
				return WIRE_E_FORMERR;
			seen_opt = true;
			continue;
		}
		if (!write)
			continue;
		int rc = wire_enc_rr(e, pkt, &rr, owner, rr.ttl, NULL);
		if (rc != 0)
			return rc;
		(*written)++;
	}
	return 0;
}

int wire_splice(const uint8_t *first, size_t first_len, const uint8_t *second, size_t second_len, uint8_t **out,
		size_t *out_len)
{
	*out = NULL;
	*out_len = 0;
	if (first_len < WIRE_HEADER_SIZE || second_len < WIRE_HEADER_SIZE || rd16(first + 4) != 1 ||
	    rd16(second + 4) != 1)
		return WIRE_E_FORMERR;
	struct wire_enc *e = wire_enc_new();
	if (e == NULL)
		return -ENOMEM;
	uint16_t f1 = rd16(first + 2), f2 = rd16(second + 2);
	uint16_t flags = (uint16_t)((f1 & ~(WIRE_FLAG_RCODE | WIRE_FLAG_AD | WIRE_FLAG_AA | WIRE_FLAG_TC)) |
				    (f2 & WIRE_FLAG_RCODE) | (f1 & f2 & WIRE_FLAG_AD) | ((f1 | f2) & WIRE_FLAG_TC));
	uint8_t hdr[WIRE_HEADER_SIZE] = {0};
	memcpy(hdr, first, 2);
	wr16(hdr + 2, flags);
	wr16(hdr + 4, 1);
	int rc = wire_enc_put(e, hdr, WIRE_HEADER_SIZE);

	uint8_t qname[WIRE_MAX_NAME];
	size_t qname_len, p1, p2;
	unsigned an = 0, ns = 0, ar = 0, dummy = 0;
	if (rc == 0)
		rc = wire_question_read(first, first_len, &p1, qname, &qname_len);
	if (rc == 0)
		rc = wire_enc_name(e, qname, qname_len, false);
	if (rc == 0)
		rc = wire_enc_put(e, first + p1 - 4, 4);
	if (rc == 0)
		rc = splice_section(e, first, first_len, &p1, rd16(first + 6), false, true, &an);
	if (rc == 0)
		rc = splice_section(e, first, first_len, &p1, rd16(first + 8), false, false, &dummy);
	if (rc == 0)
		rc = splice_section(e, first, first_len, &p1, rd16(first + 10), true, false, &dummy);
	if (rc == 0)
		rc = wire_question_read(second, second_len, &p2, qname, &qname_len);
	if (rc == 0)
		rc = splice_section(e, second, second_len, &p2, rd16(second + 6), false, true, &an);
	if (rc == 0)
		rc = splice_section(e, second, second_len, &p2, rd16(second + 8), false, true, &ns);
	if (rc == 0)
		rc = splice_section(e, second, second_len, &p2, rd16(second + 10), true, true, &ar);
	if (rc == 0 && an > 0xffff)
		rc = WIRE_E_FORMERR;
	if (rc != 0) {
		wire_enc_free(e);
		return rc;
	}
	wr16(e->buf + 6, (uint16_t)an);
	wr16(e->buf + 8, (uint16_t)ns);
	wr16(e->buf + 10, (uint16_t)ar);
	return wire_enc_finish(e, 0, out, out_len);
}

int wire_cname_prefix(const uint8_t *resp, size_t len, unsigned hops, uint8_t **out, size_t *out_len)
{
	*out = NULL;
	*out_len = 0;
	struct wire_iter it;
	uint8_t qname[WIRE_MAX_NAME], cur[WIRE_MAX_NAME];
	size_t qname_len, cur_len, qend;
	if (wire_iter_init(&it, resp, len) != 0 || wire_question_read(resp, len, &qend, qname, &qname_len) != 0)
		return WIRE_E_FORMERR;
	struct wire_enc *e = wire_enc_new();
	if (e == NULL)
		return -ENOMEM;
	uint8_t hdr[WIRE_HEADER_SIZE] = {0};
	memcpy(hdr, resp, 2);
	/* AD stays: those CNAMEs are part of what libunbound validated; the
	 * splice keeps it only if the EDNS pool's hops validate too */
	wr16(hdr + 2, (uint16_t)(rd16(resp + 2) & ~(WIRE_FLAG_RCODE | WIRE_FLAG_AA | WIRE_FLAG_TC)));
	wr16(hdr + 4, 1);
	wr16(hdr + 6, (uint16_t)hops);
	int rc = wire_enc_put(e, hdr, WIRE_HEADER_SIZE);
	if (rc == 0)
		rc = wire_enc_name(e, qname, qname_len, false);
	if (rc == 0)
		rc = wire_enc_put(e, resp + qend - 4, 4);
	memcpy(cur, qname, qname_len);
	cur_len = qname_len;
	for (unsigned h = 0; rc == 0 && h < hops; h++) {
		/* the hop's CNAME: the first one owned by the current name */
		struct wire_iter walk = it;
		struct wire_rr rr;
		int k;
		while ((k = wire_iter_next(&walk, &rr)) == 1 && rr.section == WIRE_SECTION_ANSWER &&
		       !(rr.type == WIRE_TYPE_CNAME && wire_name_equal(rr.owner, rr.owner_len, cur, cur_len)))
			;
		if (k != 1 || rr.section != WIRE_SECTION_ANSWER ||
		    wire_rdata_name(&walk, &rr, 0, cur, &cur_len) != 0) {
			rc = WIRE_E_FORMERR;
			break;
		}
		struct wire_raw_rr raw = { .owner_len = rr.owner_len, .type = rr.type, .rclass = rr.rclass,
		                           .ttl = rr.ttl, .rdlen = rr.rdlen, .rdata = rr.rdata,
		                           .end = rr.rdata + rr.rdlen };
		rc = wire_enc_rr(e, resp, &raw, rr.owner, rr.ttl, NULL);
	}
	return wire_enc_finish(e, rc, out, out_len);
}

/* ---- scrubbing upstream answers ---- */

/* Is name one of the n names of list? */
static int name_index(uint8_t (*list)[WIRE_MAX_NAME], const size_t *lens, unsigned n, const uint8_t *name,
		      size_t len)
{
	for (unsigned i = 0; i < n; i++)
		if (wire_name_equal(list[i], lens[i], name, len))
			return (int)i;
	return -1;
}

/* The type an RRSIG covers (0 when its RDATA is too short). */
static uint16_t rrsig_covered(const uint8_t *pkt, const struct wire_rr *rr)
{
	return rr->rdlen >= 2 ? rd16(pkt + rr->rdata) : 0;
}

/* The question's chain: the names whose records an answer may hold, the
 * question first. */
struct scrub_chain {
	uint8_t names[WIRE_CNAME_MAX + 1][WIRE_MAX_NAME];
	size_t lens[WIRE_CNAME_MAX + 1];
	unsigned n;
	bool cname_kept[WIRE_CNAME_MAX + 1];
	/* the zone whose SOA/NS an authority section may carry (auth_len 0: none) */
	uint8_t auth_zone[WIRE_MAX_NAME];
	size_t auth_len;
};

/* Follows the CNAMEs of the answer section from the question, inside the
 * bailiwick (a target outside it is asked of its own zone's servers). */
static int scrub_follow(const struct wire_iter *start, const struct wire_scrub *p, struct scrub_chain *c)
{
	memcpy(c->names[0], p->qname, p->qname_len);
	c->lens[0] = p->qname_len;
	c->n = 1;
	if (p->qtype == WIRE_TYPE_CNAME || p->qtype == WIRE_TYPE_ANY)
		return 0;
	for (;;) {
		struct wire_iter it = *start;
		struct wire_rr rr;
		const uint8_t *cur = c->names[c->n - 1];
		size_t cur_len = c->lens[c->n - 1];
		int k;
		while ((k = wire_iter_next(&it, &rr)) == 1 && rr.section == WIRE_SECTION_ANSWER &&
		       !(rr.type == WIRE_TYPE_CNAME && wire_name_equal(rr.owner, rr.owner_len, cur, cur_len)))
			;
		if (k < 0)
			return WIRE_E_FORMERR;
		if (k == 0 || rr.section != WIRE_SECTION_ANSWER)
			return 0;
		uint8_t target[WIRE_MAX_NAME];
		size_t tlen;
		if (wire_rdata_name(&it, &rr, 0, target, &tlen) != 0)
			return WIRE_E_FORMERR;
		if (name_index(c->names, c->lens, c->n, target, tlen) >= 0 || c->n > WIRE_CNAME_MAX)
			return WIRE_E_FORMERR; /* a loop, or longer than we follow */
		if (!p->forwarder && !wire_name_in_zone(target, tlen, p->zone, p->zone_len))
			return 0;
		memcpy(c->names[c->n], target, tlen);
		c->lens[c->n++] = tlen;
	}
}

/* The deepest owner of an SOA or NS in the authority section at or above
 * the chain's final name, inside the bailiwick. */
static int scrub_auth_zone(const struct wire_iter *start, const struct wire_scrub *p, struct scrub_chain *c)
{
	const uint8_t *final = c->names[c->n - 1];
	size_t final_len = c->lens[c->n - 1];
	c->auth_len = 0;
	struct wire_iter it = *start;
	struct wire_rr rr;
	int k;
	while ((k = wire_iter_next(&it, &rr)) == 1) {
		if (rr.section != WIRE_SECTION_AUTHORITY || (rr.type != WIRE_TYPE_SOA && rr.type != WIRE_TYPE_NS))
			continue;
		if (!wire_name_in_zone(final, final_len, rr.owner, rr.owner_len) ||
		    (!p->forwarder && !wire_name_in_zone(rr.owner, rr.owner_len, p->zone, p->zone_len)))
			continue;
		if (c->auth_len == 0 || rr.owner_len > c->auth_len) {
			memcpy(c->auth_zone, rr.owner, rr.owner_len);
			c->auth_len = rr.owner_len;
		}
	}
	return k < 0 ? WIRE_E_FORMERR : 0;
}

/* Does the record stay? Answer: the chain's records of the asked type and
 * one CNAME per owner (the one the chain took); authority: the SOA/NS of
 * the zone found and the proofs under it; additional: nothing (glue is
 * read from the raw referral, never passed on). */
static bool scrub_keep(const uint8_t *resp, const struct wire_scrub *p, struct scrub_chain *c,
		       const struct wire_rr *rr)
{
	if (rr->section == WIRE_SECTION_ANSWER) {
		int i = name_index(c->names, c->lens, c->n, rr->owner, rr->owner_len);
		bool mine = i >= 0 && (p->forwarder || wire_name_in_zone(rr->owner, rr->owner_len, p->zone, p->zone_len));
		if (mine && rr->type == WIRE_TYPE_CNAME) {
			bool keep = !c->cname_kept[i];
			c->cname_kept[i] = true;
			return keep;
		}
		uint16_t t = rr->type == 46 ? rrsig_covered(resp, rr) : rr->type;
		return mine && (p->qtype == WIRE_TYPE_ANY || t == p->qtype || t == WIRE_TYPE_CNAME);
	}
	if (rr->section == WIRE_SECTION_AUTHORITY && c->auth_len > 0) {
		if (rr->type == WIRE_TYPE_SOA || rr->type == WIRE_TYPE_NS)
			return wire_name_equal(rr->owner, rr->owner_len, c->auth_zone, c->auth_len);
		if (rr->type == 46 || rr->type == 47 || rr->type == 50) /* RRSIG, NSEC, NSEC3: proofs */
			return wire_name_in_zone(rr->owner, rr->owner_len, c->auth_zone, c->auth_len);
	}
	return false;
}

int wire_scrub(const uint8_t *resp, size_t len, const struct wire_scrub *p, uint8_t **out, size_t *out_len,
	       unsigned *dropped)
{
	*out = NULL;
	*out_len = 0;
	if (dropped)
		*dropped = 0;
	struct wire_iter start;
	if (wire_iter_init(&start, resp, len) != 0)
		return WIRE_E_FORMERR;
	struct scrub_chain c = {.n = 0};
	int rc = scrub_follow(&start, p, &c);
	if (rc == 0)
		rc = scrub_auth_zone(&start, p, &c);
	if (rc != 0)
		return rc;

	struct wire_enc *e = wire_enc_new();
	if (e == NULL)
		return -ENOMEM;
	uint8_t hdr[WIRE_HEADER_SIZE] = {0};
	memcpy(hdr, resp, 4);
	wr16(hdr + 2, rd16(resp + 2) & (uint16_t)~WIRE_FLAG_AD); /* nothing here was validated */
	wr16(hdr + 4, 1);
	rc = wire_enc_put(e, hdr, WIRE_HEADER_SIZE);
	size_t qend;
	uint8_t qname[WIRE_MAX_NAME];
	size_t qlen;
	if (rc == 0)
		rc = wire_question_read(resp, len, &qend, qname, &qlen);
	if (rc == 0)
		rc = wire_enc_name(e, qname, qlen, false);
	if (rc == 0)
		rc = wire_enc_put(e, resp + qend - 4, 4);
	unsigned count[3] = { 0, 0, 0 }, drop = 0;
	struct wire_iter it = start;
	struct wire_rr rr;
	int k = 0;
	while (rc == 0 && (k = wire_iter_next(&it, &rr)) == 1) {
		if (rr.type == WIRE_TYPE_OPT)
			continue; /* checked by wire_response_check; between upstream and us */
		if (!scrub_keep(resp, p, &c, &rr)) {
			drop++;
			continue;
		}
		struct wire_raw_rr raw = { .owner_len = rr.owner_len, .type = rr.type, .rclass = rr.rclass,
		                           .ttl = rr.ttl, .rdlen = rr.rdlen, .rdata = rr.rdata,
		                           .end = rr.rdata + rr.rdlen };
		rc = wire_enc_rr(e, resp, &raw, rr.owner, rr.ttl, NULL); /* checks the RDATA of the types we know */
		count[rr.section]++;
	}
	if (rc == 0 && k < 0)
		rc = WIRE_E_FORMERR;
	if (rc == 0) {
		wr16(e->buf + 6, (uint16_t)count[0]);
		wr16(e->buf + 8, (uint16_t)count[1]);
		wr16(e->buf + 10, (uint16_t)count[2]);
		if (dropped)
			*dropped = drop;
	}
	return wire_enc_finish(e, rc, out, out_len);
}

int wire_negative_answer(const uint8_t *src, size_t len, const uint8_t *qname, size_t qname_len, uint16_t qtype,
			 uint16_t qclass, uint8_t **out, size_t *out_len)
{
	*out = NULL;
	*out_len = 0;
	struct wire_iter it;
	if (wire_iter_init(&it, src, len) != 0 || wire_name_check(qname, qname_len) != 0)
		return WIRE_E_FORMERR;
	struct wire_enc *e = wire_enc_new();
	if (e == NULL)
		return -ENOMEM;
	uint8_t hdr[WIRE_HEADER_SIZE] = {0};
	memcpy(hdr, src, 4);
	wr16(hdr + 2, rd16(src + 2) & (uint16_t)~(WIRE_FLAG_AD | WIRE_FLAG_AA | WIRE_FLAG_TC));
	wr16(hdr + 4, 1);
	int rc = wire_enc_put(e, hdr, WIRE_HEADER_SIZE);
	if (rc == 0)
		rc = wire_enc_name(e, qname, qname_len, true);
	if (rc == 0)
		rc = wire_enc_u16(e, qtype);
	if (rc == 0)
		rc = wire_enc_u16(e, qclass);
	struct wire_rr rr;
	int k;
	unsigned ns = 0;
	while (rc == 0 && (k = wire_iter_next(&it, &rr)) == 1) {
		/* the proof of absence only: SOA and DNSSEC denial records */
		if (rr.section != WIRE_SECTION_AUTHORITY ||
		    !(rr.type == WIRE_TYPE_SOA || rr.type == 46 || rr.type == 47 || rr.type == 50))
			continue;
		struct wire_raw_rr raw = { .owner_len = rr.owner_len, .type = rr.type, .rclass = rr.rclass,
		                           .ttl = rr.ttl, .rdlen = rr.rdlen, .rdata = rr.rdata,
		                           .end = rr.rdata + rr.rdlen };
		rc = wire_enc_rr(e, src, &raw, rr.owner, rr.ttl, NULL);
		ns++;
	}
	if (rc == 0 && k < 0)
		rc = WIRE_E_FORMERR;
	if (rc == 0)
		wr16(e->buf + 8, (uint16_t)ns);
	return wire_enc_finish(e, rc, out, out_len);
}
