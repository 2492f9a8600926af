/* SPDX-License-Identifier: BSD-3-Clause */
/* Reading DNS messages: names, records and OPT options, a client's query, the records of any message,
 * CNAME chains. */
#include <errno.h>
#include <string.h>

#include "wire/parse.h"
#include "wire/bytes.h"
#include "wire/names.h"

/* ---- reading ---- */

/*
 * Read the possibly compressed name at *pos of pkt[0..len). Writes the
 * uncompressed form to out (WIRE_MAX_NAME bytes) unless out is NULL, its
 * length to *out_len unless NULL, and moves *pos past the name's bytes in
 * place. Every pointer must point into the message body (not the header)
 * and strictly before the lowest offset read so far: targets only ever
 * decrease, so there can be no loop and no forward reference, and all
 * names a real compressor writes still qualify.
 */
int wire_name_read(const uint8_t *pkt, size_t len, size_t *pos, uint8_t *out, size_t *out_len)
{
	size_t p = *pos, limit = *pos, n = 0, end = 0;
	bool jumped = false;
	unsigned hops = 0;

	for (;;) {
		if (p >= len)
			return WIRE_E_FORMERR;
		uint8_t c = pkt[p];
		if (c == 0) {
			if (out != NULL)
				out[n] = 0;
			n++;
			if (!jumped)
				end = p + 1;
			break;
		}
		if ((c & 0xc0) == 0xc0) {
			if (p + 1 >= len)
				return WIRE_E_FORMERR;
			size_t target = (size_t)(c & 0x3f) << 8 | pkt[p + 1];
			if (target < WIRE_HEADER_SIZE || target >= limit || ++hops > PTR_HOPS_MAX)
				return WIRE_E_FORMERR;
			if (!jumped) {
				end = p + 2;
				jumped = true;
			}
			limit = target;
			p = target;
			continue;
		}
		if (c & 0xc0)
			return WIRE_E_FORMERR; /* 0x40 / 0x80: extended and reserved label types */
		/* The label plus at least the root byte must fit in 255. */
		if (n + 1 + c + 1 > WIRE_MAX_NAME || len - p < (size_t)1 + c)
			return WIRE_E_FORMERR;
		if (out != NULL)
			memcpy(out + n, pkt + p, (size_t)1 + c);
		n += (size_t)1 + c;
		p += (size_t)1 + c;
	}
	*pos = end;
	if (out_len != NULL)
		*out_len = n;
	return 0;
}

/*
 * The question's name at *pos (WIRE_HEADER_SIZE), copied as received into
 * out and lower-cased into lc, in one pass over its bytes. A question's
 * name cannot be compressed: wire_name_read only follows a pointer to an offset
 * past the header and before the name, and there is none. So this accepts
 * exactly the names wire_name_read accepts there, with the same result.
 */
static int qname_read(const uint8_t *pkt, size_t len, size_t *pos, uint8_t *out, uint8_t *lc, size_t *out_len)
{
	size_t start = *pos, p = start;
	for (;;) {
		if (p >= len)
			return WIRE_E_FORMERR;
		uint8_t c = pkt[p];
		if (c == 0)
			break;
		if (c & 0xc0)
			return WIRE_E_FORMERR; /* a pointer (no target qualifies), or an extended/reserved label type */
		/* The label plus at least the root byte must fit in 255. */
		if (p - start + 1 + c + 1 > WIRE_MAX_NAME || len - p < (size_t)1 + c)
			return WIRE_E_FORMERR;
		p += (size_t)1 + c;
	}
	size_t n = p + 1 - start;
	const uint8_t *src = pkt + start;
	if (n < 8) {
		for (size_t i = 0; i < n; i++) {
			out[i] = src[i];
			lc[i] = lower(src[i]);
		}
	} else {
		for (size_t i = 0; i + 8 < n; i += 8) {
			uint64_t w = ld64(src + i);
			st64(out + i, w);
			st64(lc + i, lower8(w));
		}
		uint64_t w = ld64(src + n - 8);
		st64(out + n - 8, w);
		st64(lc + n - 8, lower8(w));
	}
	*pos = p + 1;
	*out_len = n;
	return 0;
}

/* Read the RR at *pos (owner decompressed into owner unless NULL) and move past it. */
int wire_rr_read(const uint8_t *pkt, size_t len, size_t *pos, struct wire_raw_rr *rr, uint8_t *owner)
{
	size_t p = *pos;
	int rc = wire_name_read(pkt, len, &p, owner, &rr->owner_len);
	if (rc != 0)
		return rc;
	if (len - p < RR_FIXED)
		return WIRE_E_FORMERR;
	rr->type = rd16(pkt + p);
	rr->rclass = rd16(pkt + p + 2);
	rr->ttl = rd32(pkt + p + 4);
	rr->rdlen = rd16(pkt + p + 8);
	p += RR_FIXED;
	if (len - p < rr->rdlen)
		return WIRE_E_FORMERR;
	rr->rdata = p;
	rr->end = p + rr->rdlen;
	*pos = rr->end;
	return 0;
}

/*
 * Walk the options of an OPT RDATA. With has_ecs != NULL the ECS option is
 * parsed strictly (at most one; in a query its scope must be 0) into *ecs.
 */
int wire_opt_options(const uint8_t *p, size_t n, bool query, bool *has_ecs, struct ecs *ecs)
{
	size_t i = 0;
	bool seen = false;
	while (i < n) {
		if (n - i < OPTION_HDR)
			return WIRE_E_FORMERR;
		uint16_t code = rd16(p + i), olen = rd16(p + i + 2);
		i += OPTION_HDR;
		if (olen > n - i)
			return WIRE_E_FORMERR;
		if (code == ECS_OPTION_CODE && has_ecs != NULL) {
			struct ecs tmp;
			if (seen || ecs_parse(&tmp, p + i, olen) != 0)
				return WIRE_E_FORMERR;
			if (query && tmp.scope != 0)
				return WIRE_E_FORMERR;
			seen = true;
			*ecs = tmp;
		}
		i += olen;
	}
	if (has_ecs != NULL)
		*has_ecs = seen;
	return 0;
}

/* Read the question at WIRE_HEADER_SIZE; *pos ends past QTYPE/QCLASS. */
int wire_question_read(const uint8_t *pkt, size_t len, size_t *pos, uint8_t *qname, size_t *qname_len)
{
	*pos = WIRE_HEADER_SIZE;
	if (wire_name_read(pkt, len, pos, qname, qname_len) != 0 || len - *pos < 4)
		return WIRE_E_FORMERR;
	*pos += 4;
	return 0;
}

/* ---- client queries ---- */

int wire_parse_query(const uint8_t *pkt, size_t len, struct wire_query *q)
{
	q->question_ok = false;
	q->qname_len = 0;
	q->qtype = q->qclass = 0;
	q->question_end = 0;
	q->has_edns = false;
	q->edns_udp = 0;
	q->reply_udp = WIRE_DEFAULT_UDP;
	q->edns_version = 0;
	q->edns_do = false;
	q->has_ecs = false;
	if (len < WIRE_HEADER_SIZE) {
		q->id = q->flags = 0;
		return WIRE_E_DROP;
	}
	q->id = rd16(pkt);
	q->flags = rd16(pkt + 2);
	if (q->flags & WIRE_FLAG_QR)
		return WIRE_E_DROP;
	if ((q->flags & WIRE_FLAG_OPCODE) != 0 && (q->flags & WIRE_FLAG_OPCODE) != 4u << 11)
		return WIRE_E_NOTIMP; /* not QUERY nor NOTIFY */
	if (rd16(pkt + 4) != 1)
		return WIRE_E_FORMERR;
	unsigned skip = (unsigned)rd16(pkt + 6) + rd16(pkt + 8);
	unsigned arcount = rd16(pkt + 10);

	size_t pos = WIRE_HEADER_SIZE;
	if (qname_read(pkt, len, &pos, q->qname, q->qname_lc, &q->qname_len) != 0 || len - pos < 4)
		return WIRE_E_FORMERR;
	q->qtype = rd16(pkt + pos);
	q->qclass = rd16(pkt + pos + 2);
	pos += 4;
	q->question_end = pos;
	q->question_ok = true;

	struct wire_raw_rr rr;
	for (unsigned i = 0; i < skip; i++) {
		if (wire_rr_read(pkt, len, &pos, &rr, NULL) != 0 || rr.type == WIRE_TYPE_OPT)
			return WIRE_E_FORMERR;
	}
	int result = 0;
	bool has_ecs = false;
	struct ecs ecs;
	for (unsigned i = 0; i < arcount; i++) {
		if (wire_rr_read(pkt, len, &pos, &rr, NULL) != 0)
			return WIRE_E_FORMERR;
		if (rr.type != WIRE_TYPE_OPT)
			continue;
		/* RFC 6891 §6.1.1: a second OPT, or one not owned by the root, is FORMERR. */
		if (q->has_edns || rr.owner_len != 1)
			return WIRE_E_FORMERR;
		q->has_edns = true;
		q->edns_udp = rr.rclass;
		q->edns_version = (uint8_t)(rr.ttl >> 16);
		q->edns_do = (rr.ttl & 0x8000) != 0;
		if (q->edns_version != 0) {
			result = WIRE_E_BADVERS; /* options of an unknown version mean nothing to us */
			continue;
		}
		if (wire_opt_options(pkt + rr.rdata, rr.rdlen, true, &has_ecs, &ecs) != 0)
			return WIRE_E_FORMERR;
	}
	if (pos != len)
		return WIRE_E_FORMERR;
	if (result == 0 && has_ecs) {
		q->has_ecs = true;
		q->ecs = ecs;
	}
	if (__builtin_expect((q->flags & WIRE_FLAG_OPCODE) != 0, 0) && result == 0)
		return WIRE_NOTIFY; /* the only other opcode let through */
	return result;
}

size_t wire_udp_limit(const struct wire_query *q, size_t max_udp)
{
	if (!q->has_edns)
		return WIRE_MIN_UDP;
	size_t limit = q->edns_udp < WIRE_MIN_UDP ? WIRE_MIN_UDP : q->edns_udp;
	if (max_udp >= WIRE_MIN_UDP && limit > max_udp)
		limit = max_udp;
	return limit;
}

/* ---- reading records ---- */

int wire_iter_init(struct wire_iter *it, const uint8_t *pkt, size_t len)
{
	memset(it, 0, sizeof(*it));
	if (len < WIRE_HEADER_SIZE || rd16(pkt + 4) != 1)
		return WIRE_E_FORMERR;
	it->pkt = pkt;
	it->len = len;
	it->count[0] = rd16(pkt + 6);
	it->count[1] = rd16(pkt + 8);
	it->count[2] = rd16(pkt + 10);
	uint8_t qname[WIRE_MAX_NAME];
	size_t qlen;
	return wire_question_read(pkt, len, &it->pos, qname, &qlen);
}

int wire_iter_next(struct wire_iter *it, struct wire_rr *out)
{
	while (it->section < 3 && it->idx >= it->count[it->section]) {
		it->section++;
		it->idx = 0;
	}
	if (it->section >= 3)
		return 0;
	struct wire_raw_rr rr;
	if (wire_rr_read(it->pkt, it->len, &it->pos, &rr, out->owner) != 0) {
		it->section = 3; /* nothing past a malformed record can be trusted */
		return WIRE_E_FORMERR;
	}
	out->section = (enum wire_section)it->section;
	out->owner_len = rr.owner_len;
	out->type = rr.type;
	out->rclass = rr.rclass;
	out->ttl = rr.ttl;
	out->rdlen = rr.rdlen;
	out->rdata = rr.rdata;
	it->idx++;
	return 1;
}

int wire_rdata_name(const struct wire_iter *it, const struct wire_rr *rr, size_t off, uint8_t *out, size_t *out_len)
{
	if (off >= rr->rdlen)
		return WIRE_E_FORMERR;
	size_t end = rr->rdata + rr->rdlen, p = rr->rdata + off;
	/* pointers may lead anywhere before; the name's own bytes end in the RDATA */
	if (wire_name_read(it->pkt, it->len, &p, out, out_len) != 0 || p > end)
		return WIRE_E_FORMERR;
	return 0;
}

/* ---- CNAME chains ---- */

/* Follow CNAMEs from qname through the ancount answer RRs at an_pos. */
int wire_chain_walk(const uint8_t *pkt, size_t len, size_t an_pos, unsigned ancount, const uint8_t *qname,
		    size_t qname_len, uint16_t qtype, struct wire_walk *c)
{
	wire_name_lower(qname, qname_len, c->name);
	c->name_len = qname_len;
	c->hops = 0;
	c->answered = false;
	if (c->out)
		c->out->hops = 0;
	for (;;) {
		size_t pos = an_pos;
		bool have_type = false, have_cname = false;
		struct wire_raw_rr cname = {0};
		for (unsigned i = 0; i < ancount; i++) {
			struct wire_raw_rr rr;
			uint8_t owner[WIRE_MAX_NAME];
			if (wire_rr_read(pkt, len, &pos, &rr, owner) != 0)
				return WIRE_E_FORMERR;
			if (!wire_name_equal(owner, rr.owner_len, c->name, c->name_len))
				continue;
			if (qtype == WIRE_TYPE_ANY || rr.type == qtype)
				have_type = true;
			if (rr.type == WIRE_TYPE_CNAME && !have_cname) {
				have_cname = true;
				cname = rr;
			}
		}
		if (have_type || qtype == WIRE_TYPE_CNAME || qtype == WIRE_TYPE_ANY || !have_cname) {
			c->answered = have_type;
			return 0;
		}
		if (++c->hops > WIRE_CNAME_MAX)
			return WIRE_E_FORMERR;
		size_t p = cname.rdata;
		if (wire_name_read(pkt, cname.end, &p, c->name, &c->name_len) != 0 || p != cname.end)
			return WIRE_E_FORMERR;
		if (c->out) {
			c->out->rdata[c->out->hops] = (uint16_t)cname.rdata;
			c->out->end[c->out->hops] = (uint16_t)cname.end;
			c->out->hops++;
		}
		wire_name_lower(c->name, c->name_len, c->name);
	}
}

int wire_chain_target(const uint8_t *resp, size_t len, const struct wire_chain *chain, unsigned hop, uint8_t *out,
		      size_t *out_len)
{
	if (hop >= chain->hops || chain->end[hop] > len)
		return WIRE_E_FORMERR;
	size_t p = chain->rdata[hop];
	if (wire_name_read(resp, chain->end[hop], &p, out, out_len) != 0)
		return WIRE_E_FORMERR;
	wire_name_lower(out, *out_len, out);
	return 0;
}

/* ---- errors ---- */

const char *wire_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case WIRE_E_DROP:
		return "not a DNS query (short or QR set): dropped";
	case WIRE_E_FORMERR:
		return "malformed DNS message";
	case WIRE_E_NOTIMP:
		return "DNS opcode not implemented";
	case WIRE_E_BADVERS:
		return "unsupported EDNS version";
	case WIRE_E_MISMATCH:
		return "response does not answer our query";
	case -EINVAL:
		return "invalid argument";
	case -ENOSPC:
		return "buffer too small";
	case -ENOMEM:
		return "out of memory";
	default:
		return "unknown error";
	}
}
