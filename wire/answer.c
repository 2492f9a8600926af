/* SPDX-License-Identifier: BSD-3-Clause */
/* What a client gets back: the cache blob made from an upstream answer and the reply written from it;
 * error replies; the RFC 8482 answer to ANY. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "wire/answer.h"
#include "wire/bytes.h"
#include "wire/encode.h"
#include "wire/parse.h"

/* Cache blob: fixed header, TTL offsets (big-endian u16), then the message. */
#define BLOB_MAGIC 0xb1
#define BLOB_HDR 16
#define BLOB_F_AD 0x01
#define BLOB_F_TC 0x02
#define BLOB_F_AA 0x04
#define BLOB_F_PLAIN 0x08 /* a blob without DNSSEC records follows this one */

/* ---- cached answers ---- */

/* RFC 2181 §8: a TTL with the top bit set is 0. */
static uint32_t ttl_sane(uint32_t t)
{
	return (t & 0x80000000u) ? 0 : t;
}

static uint32_t ttl_clamp(uint32_t t, const struct wire_limits *lim)
{
	t = ttl_sane(t);
	if (t < lim->min_ttl)
		t = lim->min_ttl;
	if (lim->max_ttl != 0 && t > lim->max_ttl)
		t = lim->max_ttl;
	return t;
}

static uint32_t min32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/*
 * RFC 4035 §5.3.3: an RRset's TTL is at most its RRSIG's Original TTL, and
 * the RRSIG's own TTL too. libunbound counts TTLs down against the wall
 * clock; when that clock steps back (an NTP step, a faked clock) the TTLs
 * it hands us grow past what the zone signed, and records it kept with TTL
 * 0 seem alive again. Capping here bounds what we cache and serve to the
 * signed TTLs whatever libunbound's clock did. The signatures of the answer
 * and authority sections are collected first (at most SIG_CAPS of them:
 * more are rare, and a record without a cap keeps its clamped TTL).
 */
#define SIG_CAPS 16

struct sig_cap {
	uint8_t owner[WIRE_MAX_NAME];
	size_t owner_len;
	uint16_t covered;
	uint8_t section;
	uint32_t orig;
};

/* The RRSIGs of answer and authority from pos on; a malformed record ends
 * the scan quietly (the pass that follows reports it). */
static unsigned sig_caps_scan(const uint8_t *resp, size_t len, size_t pos, const unsigned count[3],
			      struct sig_cap *caps)
{
	unsigned n = 0;
	for (int s = 0; s < 2; s++)
		for (unsigned i = 0; i < count[s]; i++) {
			struct wire_raw_rr rr;
			uint8_t owner[WIRE_MAX_NAME];
			if (wire_rr_read(resp, len, &pos, &rr, owner) != 0)
				return n;
			if (rr.type != WIRE_TYPE_RRSIG || rr.rdlen < 18 || n == SIG_CAPS)
				continue;
			struct sig_cap *c = &caps[n++];
			memcpy(c->owner, owner, rr.owner_len);
			c->owner_len = rr.owner_len;
			c->covered = rd16(resp + rr.rdata);
			c->section = (uint8_t)s;
			c->orig = ttl_sane(rd32(resp + rr.rdata + 4));
		}
	return n;
}

/* The cap of a record of section s (UINT32_MAX: none). */
static uint32_t sig_cap_of(const struct sig_cap *caps, unsigned n, int s, const uint8_t *owner,
			   const struct wire_raw_rr *rr, const uint8_t *resp)
{
	if (rr->type == WIRE_TYPE_RRSIG)
		return rr->rdlen >= 18 ? ttl_sane(rd32(resp + rr->rdata + 4)) : UINT32_MAX;
	uint32_t cap = UINT32_MAX;
	for (unsigned i = 0; i < n; i++)
		if (caps[i].section == s && caps[i].covered == rr->type && caps[i].orig < cap &&
		    caps[i].owner_len == rr->owner_len && bytes_equal_ci(caps[i].owner, owner, rr->owner_len))
			cap = caps[i].orig;
	return cap;
}

/* RRSIG, NSEC, NSEC3: only for clients that set DO (RFC 4035 §3.2.1) unless asked for. */
static bool is_dnssec_type(uint16_t type)
{
	return type == 46 || type == 47 || type == 50;
}

/* The state of one pass over an upstream answer (prepare_one). */
struct prep {
	/* asked */
	const uint8_t *resp;
	size_t len;
	const struct wire_limits *lim;
	bool strip, adopt;
	/* the message read */
	uint16_t flags, qtype;
	unsigned count[3];
	uint8_t qname[WIRE_MAX_NAME];
	size_t qname_len;
	size_t pos;             /* the next record of resp */
	size_t an_pos;          /* the answer section of resp */
	struct sig_cap caps[SIG_CAPS];
	unsigned ncaps;
	/* the output: adopted, resp up to out_end; else e's */
	struct wire_enc *e;
	uint8_t *marks;         /* adopt: label starts, one bit per byte of resp */
	uint16_t *offs;         /* per record kept: where its TTL is */
	uint32_t *tvals;        /* ... and that TTL, clamped */
	unsigned nttl, nttl_pre, nout[3];
	size_t qd_end, ns_end, out_end;
	/* found */
	uint32_t min_anns, min_an, soa_neg;
	bool seen_opt, have_soa, has_dnssec;
	uint8_t ext_rcode;
	size_t soa_ttl_pos;
};

/* Header and question; re-encoding, they are copied to e. */
static int prep_question(struct prep *p)
{
	if (p->len < WIRE_HEADER_SIZE || rd16(p->resp + 4) != 1)
		return WIRE_E_FORMERR;
	p->flags = rd16(p->resp + 2);
	p->count[0] = rd16(p->resp + 6);
	p->count[1] = rd16(p->resp + 8);
	p->count[2] = rd16(p->resp + 10);
	int rc = wire_question_read(p->resp, p->len, &p->pos, p->qname, &p->qname_len);
	if (rc == 0 && p->adopt)
		wire_mark_name(p->resp, WIRE_HEADER_SIZE, p->marks); /* no pointer: wire_name_read allows none this early */
	if (rc == 0 && !p->adopt) {
		rc = wire_enc_put(p->e, p->resp, WIRE_HEADER_SIZE);
		if (rc == 0)
			rc = wire_enc_name(p->e, p->qname, p->qname_len, false);
		if (rc == 0)
			rc = wire_enc_put(p->e, p->resp + p->pos - 4, 4);
	}
	if (rc != 0)
		return rc;
	p->qtype = rd16(p->resp + p->pos - 4);
	p->ncaps = sig_caps_scan(p->resp, p->len, p->pos, p->count, p->caps);
	p->an_pos = p->pos;
	p->qd_end = p->adopt ? p->pos : p->e->len;
	p->out_end = p->qd_end;
	return 0;
}

/* The OPT record: dropped, its options (ECS, cookies) are between upstream
 * and us; only its extended RCODE is kept. */
static int prep_opt(struct prep *p, int s, const struct wire_raw_rr *rr)
{
	if (s != 2 || p->seen_opt || rr->owner_len != 1 ||
	    wire_opt_options(p->resp + rr->rdata, rr->rdlen, false, NULL, NULL) != 0)
		return WIRE_E_FORMERR;
	p->seen_opt = true;
	p->ext_rcode = (uint8_t)(rr->ttl >> 24);
	return 0;
}

/* The TTL a record of section s is kept with: capped by its signature's
 * Original TTL, then clamped to the limits. */
static int prep_ttl(const struct prep *p, int s, size_t at, const uint8_t *owner, const struct wire_raw_rr *rr,
		    uint32_t *ttl)
{
	uint32_t t = ttl_sane(rr->ttl);
	if (s < 2 && (p->ncaps > 0 || rr->type == WIRE_TYPE_RRSIG)) {
		uint8_t own_buf[WIRE_MAX_NAME];
		if (p->adopt) { /* adopted records were not copied: only now, and only with signatures */
			size_t own_len;
			int rc = wire_name_read(p->resp, p->len, &at, own_buf, &own_len);
			if (rc != 0)
				return rc;
			owner = own_buf;
		}
		t = min32(t, sig_cap_of(p->caps, p->ncaps, s, owner, rr, p->resp));
	}
	*ttl = ttl_clamp(t, p->lim);
	return 0;
}

/* One record of section s: checked, then kept (re-encoded or adopted in
 * place), stripped, or dropped (OPT). */
static int prep_record(struct prep *p, int s)
{
	struct wire_raw_rr rr;
	uint8_t owner[WIRE_MAX_NAME];
	size_t at = p->pos;
	int rc = wire_rr_read(p->resp, p->len, &p->pos, &rr, p->adopt ? NULL : owner); /* adopted: no copy needed */
	if (rc != 0)
		return rc;
	if (p->adopt && !wire_mark_name(p->resp, at, p->marks))
		return PREPARE_NO_ADOPT;
	if (p->adopt && p->seen_opt)
		return PREPARE_NO_ADOPT; /* a record after OPT: cutting OPT out would move it */
	if (rr.type == WIRE_TYPE_OPT)
		return prep_opt(p, s, &rr);
	if (is_dnssec_type(rr.type) && rr.type != p->qtype) {
		p->has_dnssec = true;
		if (p->strip)
			return 0;
	}
	uint32_t t;
	rc = prep_ttl(p, s, at, owner, &rr, &t);
	if (rc != 0)
		return rc;
	size_t tpos;
	if (p->adopt) {
		rc = wire_enc_rdata(NULL, p->marks, p->resp, &rr);
		tpos = rr.rdata - 6; /* TTL, RDLENGTH, RDATA */
		p->out_end = rr.end;
	} else {
		rc = wire_enc_rr(p->e, p->resp, &rr, owner, t, &tpos);
		p->out_end = p->e->len;
	}
	if (rc != 0)
		return rc;
	p->tvals[p->nttl] = t;
	p->offs[p->nttl++] = (uint16_t)tpos;
	if (s < 2)
		p->min_anns = min32(p->min_anns, t);
	if (s == 0)
		p->min_an = min32(p->min_an, t);
	if (s == 1 && rr.type == WIRE_TYPE_SOA && !p->have_soa) {
		p->have_soa = true;
		p->soa_ttl_pos = tpos;
		/* RDATA was checked by wire_enc_rdata: MINIMUM is its last 4 bytes. */
		p->soa_neg = min32(ttl_sane(rr.ttl), ttl_sane(rd32(p->resp + rr.end - 4)));
	}
	p->nout[s]++;
	return 0;
}

/* How long the entry lives (0: not at all); for a negative answer, the TTL
 * its SOA is written with (*soa_write). */
static int prep_life(const struct prep *p, int rcode, struct wire_chain *chain, uint32_t *life, bool *soa_write,
		     uint32_t *soa_set)
{
	*life = 0;
	*soa_write = false;
	if ((p->flags & WIRE_FLAG_TC) || (rcode != WIRE_RCODE_NOERROR && rcode != WIRE_RCODE_NXDOMAIN))
		return 0;
	struct wire_walk c;
	c.out = chain;
	int rc = wire_chain_walk(p->resp, p->len, p->an_pos, p->count[0], p->qname, p->qname_len, p->qtype, &c);
	if (rc != 0)
		return rc;
	if (rcode == WIRE_RCODE_NOERROR && c.answered) {
		*life = p->min_anns;
	} else if (p->have_soa) {
		uint32_t neg = p->soa_neg;
		if (p->lim->max_negative_ttl != 0)
			neg = min32(neg, p->lim->max_negative_ttl);
		if (p->lim->max_ttl != 0)
			neg = min32(neg, p->lim->max_ttl);
		*soa_set = neg;
		*soa_write = true;
		*life = min32(neg, p->min_an);
	} else {
		*life = min32(p->lim->nosoa_ttl, p->min_an);
	}
	return 0;
}

/* The blob: header, TTL offsets, the message with its counts as kept. */
static uint8_t *prep_blob(const struct prep *p, int rcode, bool soa_write, uint32_t soa_set, size_t *blob_len)
{
	const uint8_t *msg = p->adopt ? p->resp : p->e->buf;
	size_t msg_len = p->out_end;
	size_t total = BLOB_HDR + 2 * (size_t)p->nttl + msg_len;
	uint8_t *b = malloc(total);
	if (b == NULL)
		return NULL;
	b[0] = BLOB_MAGIC;
	b[1] = (uint8_t)(((p->flags & WIRE_FLAG_AD) ? BLOB_F_AD : 0) | ((p->flags & WIRE_FLAG_TC) ? BLOB_F_TC : 0) |
			 ((p->flags & WIRE_FLAG_AA) ? BLOB_F_AA : 0));
	wr16(b + 2, (uint16_t)rcode);
	wr16(b + 4, (uint16_t)msg_len);
	wr16(b + 6, (uint16_t)p->qd_end);
	wr16(b + 8, (uint16_t)p->ns_end);
	wr16(b + 10, (uint16_t)p->nttl);
	wr16(b + 12, (uint16_t)p->nttl_pre);
	wr16(b + 14, 0);
	for (unsigned i = 0; i < p->nttl; i++)
		wr16(b + BLOB_HDR + 2 * i, p->offs[i]);
	uint8_t *m = b + BLOB_HDR + 2 * (size_t)p->nttl;
	memcpy(m, msg, msg_len);
	wr16(m, 0);
	wr16(m + 6, (uint16_t)p->nout[0]);
	wr16(m + 8, (uint16_t)p->nout[1]);
	wr16(m + 10, (uint16_t)p->nout[2]);
	if (p->adopt) /* re-encoding wrote them clamped */
		for (unsigned i = 0; i < p->nttl; i++)
			wr32(m + p->offs[i], p->tvals[i]);
	if (soa_write) /* it counts down with the entry */
		wr32(m + p->soa_ttl_pos, soa_set);
	*blob_len = total;
	return b;
}

/*
 * One blob of resp; with strip, without the DNSSEC records a client without
 * DO must not get. *has_dnssec says whether there were any.
 *
 * With adopt, resp's own layout is kept instead of re-encoding it: every
 * name and RDATA is read and checked as when re-encoding, the TTLs are
 * clamped in place, and only an OPT record at the very end is cut off. Not
 * for strip; an OPT record anywhere else, or a compression pointer to
 * anything but a label of an earlier name (wire_mark_name), gives
 * PREPARE_NO_ADOPT.
 */
static int prepare_one(const uint8_t *resp, size_t len, const struct wire_limits *lim, bool strip, bool adopt,
		       uint8_t **blob, size_t *blob_len, uint32_t *ttl, bool *has_dnssec, struct wire_chain *chain)
{
	*blob = NULL;
	*blob_len = 0;
	*ttl = 0;
	*has_dnssec = false;
	if (adopt && (strip || len > WIRE_MAX_MSG))
		return PREPARE_NO_ADOPT;
	struct prep p = {.resp = resp, .len = len, .lim = lim, .strip = strip, .adopt = adopt,
			 .min_anns = UINT32_MAX, .min_an = UINT32_MAX};
	/* Every input RR takes at least 11 bytes: that bounds the TTL list
	 * (on the stack for the usual answer, up to ~6 KB). */
	uint16_t offs_stack[512];
	uint32_t tvals_stack[512];
	size_t noffs = len / (1 + RR_FIXED) + 1;
	p.offs = noffs <= 512 ? offs_stack : malloc(sizeof(*p.offs) * noffs);
	p.tvals = noffs <= 512 ? tvals_stack : malloc(sizeof(*p.tvals) * noffs);
	p.e = adopt ? NULL : wire_enc_new();
	uint8_t marks[(WIRE_MAX_MSG + 8) / 8];
	p.marks = marks;
	if (adopt)
		memset(marks, 0, (len + 7) / 8);
	int rc = ((!adopt && p.e == NULL) || p.offs == NULL || p.tvals == NULL) ? -ENOMEM : 0;
	if (rc == 0)
		rc = prep_question(&p);
	for (int s = 0; s < 3 && rc == 0; s++) {
		if (s == 2) {
			p.ns_end = p.out_end;
			p.nttl_pre = p.nttl;
		}
		for (unsigned i = 0; i < p.count[s] && rc == 0; i++)
			rc = prep_record(&p, s);
	}
	int rcode = (p.flags & WIRE_FLAG_RCODE) | p.ext_rcode << 4;
	uint32_t life = 0, soa_set = 0;
	bool soa_write = false;
	if (rc == 0)
		rc = prep_life(&p, rcode, chain, &life, &soa_write, &soa_set);
	if (rc == 0) {
		*blob = prep_blob(&p, rcode, soa_write, soa_set, blob_len);
		rc = *blob != NULL ? 0 : -ENOMEM;
	}
	if (rc == 0)
		*ttl = life;
	*has_dnssec = p.has_dnssec;
	if (p.offs != offs_stack)
		free(p.offs);
	if (p.tvals != tvals_stack)
		free(p.tvals);
	wire_enc_free(p.e);
	return rc;
}

int wire_answer_prepare(const uint8_t *resp, size_t len, const struct wire_limits *lim, uint8_t **blob,
			size_t *blob_len, uint32_t *ttl)
{
	return wire_answer_prepare_chain(resp, len, lim, blob, blob_len, ttl, NULL);
}

static int prepare(const uint8_t *resp, size_t len, const struct wire_limits *lim, bool adopt, uint8_t **blob,
		   size_t *blob_len, uint32_t *ttl, struct wire_chain *chain)
{
	static const struct wire_limits no_limits;
	if (lim == NULL)
		lim = &no_limits;
	if (chain)
		chain->hops = 0;
	bool has_dnssec;
	int rc = prepare_one(resp, len, lim, false, adopt, blob, blob_len, ttl, &has_dnssec, chain);
	if (rc == PREPARE_NO_ADOPT) {
		if (chain)
			chain->hops = 0;
		rc = prepare_one(resp, len, lim, false, false, blob, blob_len, ttl, &has_dnssec, chain);
	}
	if (rc != 0 || !has_dnssec)
		return rc;
	/* Signed data: a second view without RRSIG/NSEC/NSEC3 follows the first,
	 * for clients without DO; one cache entry serves both. */
	uint8_t *plain;
	size_t plain_len;
	uint32_t plain_ttl;
	rc = prepare_one(resp, len, lim, true, false, &plain, &plain_len, &plain_ttl, &has_dnssec, NULL);
	if (rc == 0) {
		uint8_t *both = realloc(*blob, *blob_len + plain_len);
		if (both == NULL) {
			rc = -ENOMEM;
		} else {
			both[1] |= BLOB_F_PLAIN;
			memcpy(both + *blob_len, plain, plain_len);
			*blob = both;
			*blob_len += plain_len;
			*ttl = min32(*ttl, plain_ttl);
		}
		free(plain);
	}
	if (rc != 0) {
		free(*blob);
		*blob = NULL;
		*blob_len = 0;
		*ttl = 0;
	}
	return rc;
}

int wire_answer_prepare_chain(const uint8_t *resp, size_t len, const struct wire_limits *lim, uint8_t **blob,
			      size_t *blob_len, uint32_t *ttl, struct wire_chain *chain)
{
	return prepare(resp, len, lim, false, blob, blob_len, ttl, chain);
}

int wire_answer_adopt_chain(const uint8_t *resp, size_t len, const struct wire_limits *lim, uint8_t **blob,
			    size_t *blob_len, uint32_t *ttl, struct wire_chain *chain)
{
	return prepare(resp, len, lim, true, blob, blob_len, ttl, chain);
}

/* A blob's fixed header, checked for consistency. */
struct blob_view {
	uint8_t flags;
	uint16_t rcode, msg_len, qd_end, ns_end, nttl, nttl_pre;
	const uint8_t *offs;
	const uint8_t *msg;
	const uint8_t *plain;   /* the view without DNSSEC records, or NULL */
	size_t plain_len;
};

static int blob_view(const uint8_t *blob, size_t blob_len, struct blob_view *v)
{
	if (blob == NULL || blob_len < BLOB_HDR || blob[0] != BLOB_MAGIC)
		return -EINVAL;
	v->flags = blob[1];
	v->rcode = rd16(blob + 2);
	v->msg_len = rd16(blob + 4);
	v->qd_end = rd16(blob + 6);
	v->ns_end = rd16(blob + 8);
	v->nttl = rd16(blob + 10);
	v->nttl_pre = rd16(blob + 12);
	size_t own = BLOB_HDR + 2 * (size_t)v->nttl + v->msg_len;
	v->plain = NULL;
	v->plain_len = 0;
	if ((v->flags & BLOB_F_PLAIN) && blob_len > own) {
		v->plain = blob + own;
		v->plain_len = blob_len - own;
		blob_len = own;
	}
	if (blob_len != own || v->qd_end < WIRE_HEADER_SIZE + 5 ||
	    v->qd_end > v->ns_end || v->ns_end > v->msg_len || v->nttl_pre > v->nttl || v->rcode > 0xfff)
		return -EINVAL;
	v->offs = blob + BLOB_HDR;
	v->msg = v->offs + 2 * (size_t)v->nttl;
	return 0;
}

int wire_answer_write(const struct wire_query *q, const uint8_t *pkt, const uint8_t *blob, size_t blob_len,
		      uint32_t age, const struct ecs *echo, uint8_t *out, size_t cap)
{
	(void)pkt;
	struct blob_view v;
	if (blob_view(blob, blob_len, &v) != 0)
		return -EINVAL;
	if (v.plain != NULL && !q->edns_do) /* RFC 4035 §3.2.1: no DNSSEC records without DO */
		return wire_answer_write(q, pkt, v.plain, v.plain_len, age, echo, out, cap);
	size_t qend = WIRE_HEADER_SIZE + q->qname_len + 4;
	const uint8_t *bq = v.msg + WIRE_HEADER_SIZE;
	/* The stored question must be q's: pointers into it then stay valid.
	 * (The name is compared against q's lower-cased copy: one side folded.) */
	if (v.qd_end != qend || !equal_lc(bq, q->qname_lc, q->qname_len) ||
	    rd16(bq + q->qname_len) != q->qtype || rd16(bq + q->qname_len + 2) != q->qclass)
		return -EINVAL;

	int rcode = v.rcode;
	if (rcode > 15 && !q->has_edns)
		rcode = WIRE_RCODE_SERVFAIL;
	bool opt = q->has_edns, tc = (v.flags & BLOB_F_TC) != 0;
	const struct ecs *ecs = opt ? echo : NULL;
	size_t optlen = opt ? wire_opt_rr_size(ecs, NULL) : 0;
	uint16_t an = rd16(v.msg + 6), ns = rd16(v.msg + 8), ar = rd16(v.msg + 10);
	size_t body_end;
	unsigned nt;
	if (v.msg_len + optlen <= cap) {
		body_end = v.msg_len;
		nt = v.nttl;
	} else if (v.ns_end + optlen <= cap) {
		body_end = v.ns_end;
		nt = v.nttl_pre;
		ar = 0;
	} else {
		body_end = qend;
		nt = 0;
		an = ns = ar = 0;
		tc = true;
		if (qend + optlen > cap) {
			if (qend > cap)
				return -ENOSPC;
			opt = false;
		}
	}

	bool ad = (v.flags & BLOB_F_AD) && ((q->flags & WIRE_FLAG_AD) || q->edns_do);
	uint16_t flags = WIRE_FLAG_QR | WIRE_FLAG_RA | (q->flags & (WIRE_FLAG_RD | WIRE_FLAG_CD)) |
			 (tc ? WIRE_FLAG_TC : 0) | (ad ? WIRE_FLAG_AD : 0) | (uint16_t)(rcode & WIRE_FLAG_RCODE);
	wr16(out, q->id);
	wr16(out + 2, flags);
	wr16(out + 4, 1);
	wr16(out + 6, an);
	wr16(out + 8, ns);
	memcpy(out + WIRE_HEADER_SIZE, q->qname, q->qname_len);
	wr16(out + WIRE_HEADER_SIZE + q->qname_len, q->qtype);
	wr16(out + WIRE_HEADER_SIZE + q->qname_len + 2, q->qclass);
	memcpy(out + qend, v.msg + qend, body_end - qend);
	for (unsigned i = 0; i < nt; i++) {
		size_t off = rd16(v.offs + 2 * i);
		if (off < qend || off + 4 > body_end)
			return -EINVAL;
		uint32_t stored = rd32(v.msg + off);
		wr32(out + off, stored > age ? stored - age : 0);
	}
	size_t pos = body_end;
	if (opt) {
		int rc = wire_opt_write(out + pos, cap - pos, wire_reply_udp(q), (uint8_t)(rcode >> 4), q->edns_do, ecs,
					 NULL);
		if (rc < 0)
			return rc;
		pos += (size_t)rc;
		ar++;
	}
	wr16(out + 10, ar);
	return (int)pos;
}

int wire_answer_write_stale(const struct wire_query *q, const uint8_t *blob, size_t blob_len, uint32_t ttl,
			    const struct ecs *echo, const struct wire_ede *ede, uint8_t *out, size_t cap)
{
	struct blob_view v;
	if (blob_view(blob, blob_len, &v) != 0)
		return -EINVAL;
	if (v.plain != NULL && !q->edns_do) { /* the view wire_answer_write will write */
		blob = v.plain;
		blob_len = v.plain_len;
		if (blob_view(blob, blob_len, &v) != 0)
			return -EINVAL;
	}
	/* written as a fresh answer, then patched: the records come first, the EDE only if room is left */
	int n = wire_answer_write(q, NULL, blob, blob_len, 0, echo, out, cap);
	if (n < 0)
		return n;
	size_t extra = q->has_edns ? wire_ede_size(ede) : 0;
	if ((size_t)n + extra > cap)
		ede = NULL;
	size_t len = (size_t)n, qend = WIRE_HEADER_SIZE + q->qname_len + 4;
	/* wire_answer_write leaves the OPT out only when not even header and question fit with it */
	bool opt = q->has_edns && len > qend;
	size_t body_end = len - (opt ? wire_opt_rr_size(echo, NULL) : 0);
	for (unsigned i = 0; i < v.nttl; i++) {
		size_t off = rd16(v.offs + 2 * i);
		if (off >= qend && off + 4 <= body_end)
			wr32(out + off, ttl);
	}
	if (opt && ede != NULL) {
		size_t tlen = ede->text ? strlen(ede->text) : 0;
		wr16(out + len, WIRE_OPTION_EDE);
		wr16(out + len + 2, (uint16_t)(2 + tlen));
		wr16(out + len + 4, ede->code);
		if (tlen)
			memcpy(out + len + 6, ede->text, tlen);
		wr16(out + body_end + 9, (uint16_t)(rd16(out + body_end + 9) + extra)); /* the OPT's RDLENGTH */
		len += extra;
	}
	return (int)len;
}

int wire_blob_info(const uint8_t *blob, size_t blob_len, struct wire_blob_info *info)
{
	struct blob_view v;
	if (blob_view(blob, blob_len, &v) != 0)
		return -EINVAL;
	info->rcode = v.rcode;
	info->ad = (v.flags & BLOB_F_AD) != 0;
	info->tc = (v.flags & BLOB_F_TC) != 0;
	info->aa = (v.flags & BLOB_F_AA) != 0;
	info->ancount = rd16(v.msg + 6);
	info->nscount = rd16(v.msg + 8);
	info->arcount = rd16(v.msg + 10);
	info->msg_len = v.msg_len;
	info->msg_off = (size_t)(v.msg - blob);
	return 0;
}

int wire_blob_rcode(const uint8_t *blob, size_t blob_len)
{
	struct blob_view v;
	if (blob_view(blob, blob_len, &v) != 0)
		return -EINVAL;
	return v.rcode;
}

/* One view of a blob, checked through to its records (wire_blob_check). */
static int blob_check_one(const uint8_t *blob, size_t blob_len, const uint8_t *qname_lc, size_t qname_len,
                          uint16_t qtype, uint16_t qclass)
{
	struct blob_view v;
	if (blob_view(blob, blob_len, &v) != 0 || v.plain != NULL) /* a plain view of a plain view: none is made */
		return -EINVAL;
	size_t qend = WIRE_HEADER_SIZE + qname_len + 4;
	const uint8_t *m = v.msg;
	if (v.qd_end != qend || v.msg_len < qend || rd16(m + 4) != 1 ||
	    !equal_lc(m + WIRE_HEADER_SIZE, qname_lc, qname_len) || rd16(m + WIRE_HEADER_SIZE + qname_len) != qtype ||
	    rd16(m + WIRE_HEADER_SIZE + qname_len + 2) != qclass)
		return -EINVAL;
	/* the question's name is the key's, uncompressed */
	size_t pos = WIRE_HEADER_SIZE, nlen;
	uint8_t name[WIRE_MAX_NAME];
	if (wire_name_read(m, v.msg_len, &pos, name, &nlen) != 0 || pos != WIRE_HEADER_SIZE + qname_len)
		return -EINVAL;
	pos = qend;
	unsigned counts[3] = { rd16(m + 6), rd16(m + 8), rd16(m + 10) };
	for (int sec = 0; sec < 3; sec++) {
		if (sec == 2 && pos != v.ns_end)
			return -EINVAL;
		for (unsigned i = 0; i < counts[sec]; i++) {
			struct wire_raw_rr rr;
			if (wire_rr_read(m, v.msg_len, &pos, &rr, NULL) != 0)
				return -EINVAL;
		}
	}
	if (pos != v.msg_len)
		return -EINVAL;
	for (unsigned i = 0; i < v.nttl; i++) {
		size_t off = rd16(v.offs + 2 * i);
		if (off < qend || off + 4 > (i < v.nttl_pre ? v.ns_end : v.msg_len))
			return -EINVAL;
	}
	return 0;
}

int wire_blob_check(const uint8_t *blob, size_t blob_len, const uint8_t *qname_lc, size_t qname_len, uint16_t qtype,
                    uint16_t qclass)
{
	struct blob_view v;
	if (qname_len < 1 || qname_len > WIRE_MAX_NAME || blob_view(blob, blob_len, &v) != 0)
		return -EINVAL;
	size_t own = blob_len - v.plain_len;
	if (v.plain != NULL && blob_check_one(v.plain, v.plain_len, qname_lc, qname_len, qtype, qclass) != 0)
		return -EINVAL;
	/* the first view alone: cut at its own end, blob_view sees no plain view */
	return blob_check_one(blob, own, qname_lc, qname_len, qtype, qclass);
}

static void blob_age_one(uint8_t *blob, size_t blob_len, uint32_t secs)
{
	struct blob_view v;
	if (blob_view(blob, blob_len, &v) != 0)
		return;
	uint8_t *msg = blob + (v.msg - blob);
	for (unsigned i = 0; i < v.nttl; i++) {
		size_t off = rd16(v.offs + 2 * i);
		if (off + 4 > v.msg_len)
			continue;
		uint32_t t = rd32(msg + off);
		wr32(msg + off, t > secs ? t - secs : 0);
	}
	if (v.plain != NULL)
		blob_age_one(blob + (v.plain - blob), v.plain_len, secs);
}

void wire_blob_age(uint8_t *blob, size_t blob_len, uint32_t secs)
{
	blob_age_one(blob, blob_len, secs);
}

/* ---- replies without a cached answer: errors, ANY ---- */

int wire_write_error(const struct wire_query *q, int rcode, const struct ecs *echo, const struct wire_ede *ede,
		     uint8_t *out, size_t cap)
{
	if (rcode < 0 || rcode > 0xfff)
		return -EINVAL;
	bool opt = q->has_edns || rcode > 15;
	const struct ecs *ecs = opt ? echo : NULL;
	if (!q->has_edns)
		ede = NULL; /* RFC 8914 §2: only to clients that sent EDNS */
	size_t qlen = q->question_ok ? q->qname_len + 4 : 0;
	size_t need = WIRE_HEADER_SIZE + qlen + (opt ? wire_opt_rr_size(ecs, ede) : 0);
	if (need > cap)
		return -ENOSPC;

	uint16_t flags = WIRE_FLAG_QR | WIRE_FLAG_RA | (uint16_t)(rcode & WIRE_FLAG_RCODE) |
			 (q->flags & (WIRE_FLAG_OPCODE | WIRE_FLAG_RD | WIRE_FLAG_CD));
	wr16(out, q->id);
	wr16(out + 2, flags);
	wr16(out + 4, q->question_ok ? 1 : 0);
	wr16(out + 6, 0);
	wr16(out + 8, 0);
	wr16(out + 10, opt ? 1 : 0);
	size_t pos = WIRE_HEADER_SIZE;
	if (q->question_ok) {
		memcpy(out + pos, q->qname, q->qname_len);
		pos += q->qname_len;
		wr16(out + pos, q->qtype);
		wr16(out + pos + 2, q->qclass);
		pos += 4;
	}
	if (opt) {
		int rc = wire_opt_write(out + pos, cap - pos, wire_reply_udp(q), (uint8_t)(rcode >> 4), q->edns_do, ecs,
					 ede);
		if (rc < 0)
			return rc;
		pos += (size_t)rc;
	}
	return (int)pos;
}

int wire_write_any(const struct wire_query *q, const struct ecs *echo, uint8_t *out, size_t cap)
{
	/* RFC 8482 §4.2: HINFO "RFC8482" "" stands for the RRsets we do not list */
	static const uint8_t hinfo[] = { 7, 'R', 'F', 'C', '8', '4', '8', '2', 0 };
	if (!q->question_ok)
		return -EINVAL;
	const struct ecs *ecs = q->has_edns ? echo : NULL;
	size_t qend = WIRE_HEADER_SIZE + q->qname_len + 4;
	size_t rr_len = 2 + RR_FIXED + sizeof(hinfo); /* owner: a pointer to the question */
	size_t need = qend + rr_len + (q->has_edns ? wire_opt_rr_size(ecs, NULL) : 0);
	if (need > cap)
		return -ENOSPC;
	uint16_t flags = WIRE_FLAG_QR | WIRE_FLAG_RA | (q->flags & (WIRE_FLAG_RD | WIRE_FLAG_CD));
	wr16(out, q->id);
	wr16(out + 2, flags);
	wr16(out + 4, 1);
	wr16(out + 6, 1);
	wr16(out + 8, 0);
	wr16(out + 10, q->has_edns ? 1 : 0);
	memcpy(out + WIRE_HEADER_SIZE, q->qname, q->qname_len);
	wr16(out + WIRE_HEADER_SIZE + q->qname_len, q->qtype);
	wr16(out + WIRE_HEADER_SIZE + q->qname_len + 2, q->qclass);
	size_t pos = qend;
	wr16(out + pos, 0xc000 | WIRE_HEADER_SIZE);
	wr16(out + pos + 2, 13); /* HINFO */
	wr16(out + pos + 4, q->qclass);
	wr32(out + pos + 6, 3600);
	wr16(out + pos + 10, sizeof(hinfo));
	memcpy(out + pos + 12, hinfo, sizeof(hinfo));
	pos += rr_len;
	if (q->has_edns) {
		int rc = wire_opt_write(out + pos, cap - pos, wire_reply_udp(q), 0, q->edns_do, ecs, NULL);
		if (rc < 0)
			return rc;
		pos += (size_t)rc;
	}
	return (int)pos;
}
