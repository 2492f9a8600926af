/* SPDX-License-Identifier: BSD-3-Clause */
/* DNS message code of the hot path: client queries, cached-answer replies, upstream queries and checks. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "wire/wire.h"

#define RR_FIXED 10       /* TYPE CLASS TTL RDLENGTH */
#define OPT_RR_FIXED 11   /* root owner + RR_FIXED */
#define OPTION_HDR 4      /* OPTION-CODE OPTION-LENGTH */
#define PTR_HOPS_MAX 127  /* a 255-byte name has at most 127 labels */
#define MAX_LABELS 128
#define PTR_MAX 0x3fff    /* largest offset a compression pointer can hold */

/* Cache blob: fixed header, TTL offsets (big-endian u16), then the message. */
#define BLOB_MAGIC 0xb1
#define BLOB_HDR 16
#define BLOB_F_AD 0x01
#define BLOB_F_TC 0x02
#define BLOB_F_AA 0x04
#define BLOB_F_PLAIN 0x08 /* a blob without DNSSEC records follows this one */

/* Compression table of the encoder: open addressing, power of two. */
#define CTAB_SIZE 2048

static inline uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void wr32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* ASCII lower case; label length bytes (0..63) are never changed by it. */
static inline uint8_t lower(uint8_t c)
{
	return (c >= 'A' && c <= 'Z') ? (uint8_t)(c + ('a' - 'A')) : c;
}

/*
 * Case folding eight bytes at a time. Every byte of a word is lowered
 * exactly as lower() does: only 'A'..'Z' change, bytes >= 0x80 never do.
 * low7 holds each byte without its top bit, so adding a constant below
 * 0x80 to every byte carries into that byte's top bit and never into the
 * next byte.
 */
#define ONES8 0x0101010101010101ull
#define HIGH8 0x8080808080808080ull

static inline uint64_t lower8(uint64_t w)
{
	uint64_t low7 = w & ~HIGH8;
	uint64_t ge_a = low7 + ONES8 * (0x80 - 'A');     /* top bit: byte & 0x7f >= 'A' */
	uint64_t gt_z = low7 + ONES8 * (0x80 - 'Z' - 1); /* top bit: byte & 0x7f > 'Z' */
	uint64_t upper = ge_a & ~gt_z & ~w & HIGH8;      /* ASCII and in 'A'..'Z' */
	return w | upper >> 2;                           /* 0x80 >> 2 = 0x20 */
}

static inline uint64_t ld64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static inline void st64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

/* Lower-case n bytes of src into dst (may equal src), eight at a time. */
static inline void fold(const uint8_t *src, uint8_t *dst, size_t n)
{
	if (n < 8) {
		for (size_t i = 0; i < n; i++)
			dst[i] = lower(src[i]);
		return;
	}
	uint64_t last = lower8(ld64(src + n - 8)); /* read first: dst may be src */
	for (size_t i = 0; i + 8 < n; i += 8)
		st64(dst + i, lower8(ld64(src + i)));
	st64(dst + n - 8, last);
}

/* a[0..n) == lc[0..n) ignoring the case of a; lc is lower case already. */
static inline bool equal_lc(const uint8_t *a, const uint8_t *lc, size_t n)
{
	if (n < 8) {
		for (size_t i = 0; i < n; i++)
			if (lower(a[i]) != lc[i])
				return false;
		return true;
	}
	for (size_t i = 0; i + 8 < n; i += 8)
		if (lower8(ld64(a + i)) != ld64(lc + i))
			return false;
	return lower8(ld64(a + n - 8)) == ld64(lc + n - 8);
}

static bool bytes_equal_ci(const uint8_t *a, const uint8_t *b, size_t n)
{
	if (n < 8) {
		for (size_t i = 0; i < n; i++)
			if (lower(a[i]) != lower(b[i]))
				return false;
		return true;
	}
	for (size_t i = 0; i + 8 < n; i += 8)
		if (lower8(ld64(a + i)) != lower8(ld64(b + i)))
			return false;
	return lower8(ld64(a + n - 8)) == lower8(ld64(b + n - 8));
}

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
static int name_read(const uint8_t *pkt, size_t len, size_t *pos, uint8_t *out, size_t *out_len)
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
 * name cannot be compressed: name_read only follows a pointer to an offset
 * past the header and before the name, and there is none. So this accepts
 * exactly the names name_read accepts there, with the same result.
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

/* One resource record as found in a message. */
struct rr {
	size_t owner_len;
	uint16_t type, rclass;
	uint32_t ttl;
	uint16_t rdlen;
	size_t rdata; /* offset of RDATA */
	size_t end;   /* offset past RDATA */
};

/* Read the RR at *pos (owner decompressed into owner unless NULL) and move past it. */
static int rr_read(const uint8_t *pkt, size_t len, size_t *pos, struct rr *rr, uint8_t *owner)
{
	size_t p = *pos;
	int rc = name_read(pkt, len, &p, owner, &rr->owner_len);
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
static int opt_options(const uint8_t *p, size_t n, bool query, bool *has_ecs, struct ecs *ecs)
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

	struct rr rr;
	for (unsigned i = 0; i < skip; i++) {
		if (rr_read(pkt, len, &pos, &rr, NULL) != 0 || rr.type == WIRE_TYPE_OPT)
			return WIRE_E_FORMERR;
	}
	int result = 0;
	bool has_ecs = false;
	struct ecs ecs;
	for (unsigned i = 0; i < arcount; i++) {
		if (rr_read(pkt, len, &pos, &rr, NULL) != 0)
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
		if (opt_options(pkt + rr.rdata, rr.rdlen, true, &has_ecs, &ecs) != 0)
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

/* Size of an EDE option (RFC 8914): INFO-CODE and EXTRA-TEXT. */
static size_t ede_size(const struct wire_ede *ede)
{
	return ede != NULL ? OPTION_HDR + 2 + (ede->text ? strlen(ede->text) : 0) : 0;
}

/* Size of our OPT record, with an ECS option when ecs != NULL and an EDE when ede != NULL. */
static size_t opt_rr_size(const struct ecs *ecs, const struct wire_ede *ede)
{
	return OPT_RR_FIXED + (ecs != NULL ? OPTION_HDR + ecs_size(ecs) : 0) + ede_size(ede);
}

/* The UDP size our OPT in a reply to q advertises: server.max_udp_size, as set on q by the caller. */
static uint16_t reply_udp(const struct wire_query *q)
{
	return q->reply_udp >= WIRE_MIN_UDP ? q->reply_udp : WIRE_DEFAULT_UDP;
}

/* Write our OPT record advertising udp. @return its length, -ENOSPC or -EINVAL (bad ecs, EDE text too long). */
static int opt_write(uint8_t *p, size_t cap, uint16_t udp, uint8_t ext_rcode, bool do_bit, const struct ecs *ecs,
		     const struct wire_ede *ede)
{
	size_t need = opt_rr_size(ecs, ede);
	if (need > cap)
		return -ENOSPC;
	if (need - OPT_RR_FIXED > 0xffff)
		return -EINVAL;
	p[0] = 0;
	wr16(p + 1, WIRE_TYPE_OPT);
	wr16(p + 3, udp);
	p[5] = ext_rcode;
	p[6] = 0; /* version */
	wr16(p + 7, do_bit ? 0x8000 : 0);
	wr16(p + 9, (uint16_t)(need - OPT_RR_FIXED));
	size_t pos = OPT_RR_FIXED;
	if (ecs != NULL) {
		wr16(p + pos, ECS_OPTION_CODE);
		wr16(p + pos + 2, (uint16_t)ecs_size(ecs));
		int rc = ecs_write(ecs, p + pos + OPTION_HDR, cap - pos - OPTION_HDR);
		if (rc < 0)
			return rc;
		pos += OPTION_HDR + ecs_size(ecs);
	}
	if (ede != NULL) {
		size_t tlen = ede->text ? strlen(ede->text) : 0;
		wr16(p + pos, WIRE_OPTION_EDE);
		wr16(p + pos + 2, (uint16_t)(2 + tlen));
		wr16(p + pos + 4, ede->code);
		if (tlen)
			memcpy(p + pos + 6, ede->text, tlen);
	}
	return (int)need;
}

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
	size_t need = WIRE_HEADER_SIZE + qlen + (opt ? opt_rr_size(ecs, ede) : 0);
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
		int rc = opt_write(out + pos, cap - pos, reply_udp(q), (uint8_t)(rcode >> 4), q->edns_do, ecs, ede);
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
	size_t need = qend + rr_len + (q->has_edns ? opt_rr_size(ecs, NULL) : 0);
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
		int rc = opt_write(out + pos, cap - pos, reply_udp(q), 0, q->edns_do, ecs, NULL);
		if (rc < 0)
			return rc;
		pos += (size_t)rc;
	}
	return (int)pos;
}

/* ---- re-encoding with our own compression (prepare, splice) ---- */

struct enc {
	size_t len;
	unsigned used;
	uint32_t hash[CTAB_SIZE];
	uint16_t off[CTAB_SIZE]; /* 0 = empty: no name starts inside the header */
	uint8_t buf[WIRE_MAX_MSG];
};

/*
 * One encoder per thread, reused: an 80 KB work buffer malloc'd and freed
 * for every upstream answer was the largest per-miss allocation and left
 * the heap fragmented after floods (bench/RESULTS.md "Abuse"). No function
 * here uses two encoders at once, and none keeps one past its return.
 */
static _Thread_local struct enc enc_tls;

static struct enc *enc_new(void)
{
	struct enc *e = &enc_tls;
	e->len = 0;
	e->used = 0;
	memset(e->off, 0, sizeof(e->off));
	return e;
}

/* The encoder is done with (it stays with its thread). */
static void enc_free(struct enc *e)
{
	(void)e;
}

/* A finished message: a malloc'd copy in *out (the encoder is released either way). @return rc, or -ENOMEM. */
static int enc_finish(struct enc *e, int rc, uint8_t **out, size_t *out_len)
{
	if (rc == 0) {
		*out = malloc(e->len);
		if (*out == NULL) {
			rc = -ENOMEM;
		} else {
			memcpy(*out, e->buf, e->len);
			*out_len = e->len;
		}
	}
	enc_free(e);
	return rc;
}

/* Messages are capped at 65535 bytes: beyond that the result is unusable. */
static int enc_put(struct enc *e, const void *p, size_t n)
{
	if (n > WIRE_MAX_MSG - e->len)
		return WIRE_E_FORMERR;
	memcpy(e->buf + e->len, p, n);
	e->len += n;
	return 0;
}

static int enc_u16(struct enc *e, uint16_t v)
{
	uint8_t b[2];
	wr16(b, v);
	return enc_put(e, b, 2);
}

static int enc_u32(struct enc *e, uint32_t v)
{
	uint8_t b[4];
	wr32(b, v);
	return enc_put(e, b, 4);
}

/* Does the (possibly compressed) name at off in our output equal s (case-insensitive)? */
static bool enc_suffix_equal(const struct enc *e, size_t off, const uint8_t *s, size_t slen)
{
	size_t i = 0;
	unsigned hops = 0;
	for (;;) {
		if (off >= e->len)
			return false;
		uint8_t c = e->buf[off];
		if ((c & 0xc0) == 0xc0) {
			if (++hops > PTR_HOPS_MAX || off + 1 >= e->len)
				return false;
			off = (size_t)(c & 0x3f) << 8 | e->buf[off + 1];
			continue;
		}
		if (i >= slen || s[i] != c)
			return false;
		if (c == 0)
			return i + 1 == slen;
		if (off + 1 + c > e->len || i + 1 + c > slen || !bytes_equal_ci(e->buf + off + 1, s + i + 1, c))
			return false;
		i += (size_t)1 + c;
		off += (size_t)1 + c;
	}
}

/*
 * Write a valid uncompressed name. With compress, its longest suffix
 * already in the output becomes a pointer. Either way the label starts
 * written here become pointer targets for later names. Suffixes are found
 * by a hash of the lower-cased suffix, computed right to left so each
 * name costs O(length).
 */
static int enc_name(struct enc *e, const uint8_t *name, size_t nlen, bool compress)
{
	size_t starts[MAX_LABELS];
	uint32_t h[MAX_LABELS];
	unsigned k = 0;
	for (size_t i = 0; name[i] != 0 && k < MAX_LABELS; i += (size_t)1 + name[i])
		starts[k++] = i;
	uint32_t acc = 2166136261u; /* FNV-1a */
	for (unsigned j = k; j-- > 0;) {
		const uint8_t *l = name + starts[j];
		for (size_t b = 0; b <= l[0]; b++)
			acc = (acc ^ lower(l[b])) * 16777619u;
		h[j] = acc;
	}

	unsigned m = k; /* first label of the suffix found in the output */
	uint16_t target = 0;
	for (unsigned j = 0; compress && j < k && m == k; j++) {
		for (size_t slot = h[j] & (CTAB_SIZE - 1); e->off[slot] != 0; slot = (slot + 1) & (CTAB_SIZE - 1)) {
			if (e->hash[slot] == h[j] &&
			    enc_suffix_equal(e, e->off[slot], name + starts[j], nlen - starts[j])) {
				m = j;
				target = e->off[slot];
				break;
			}
		}
	}

	size_t base = e->len;
	int rc;
	if (m < k) {
		rc = enc_put(e, name, starts[m]);
		if (rc == 0)
			rc = enc_u16(e, (uint16_t)(0xc000 | target));
	} else {
		rc = enc_put(e, name, nlen);
	}
	if (rc != 0)
		return rc;
	for (unsigned j = 0; j < m; j++) {
		size_t at = base + starts[j];
		if (at > PTR_MAX || e->used * 4 >= CTAB_SIZE * 3)
			break;
		size_t slot = h[j] & (CTAB_SIZE - 1);
		while (e->off[slot] != 0)
			slot = (slot + 1) & (CTAB_SIZE - 1);
		e->off[slot] = (uint16_t)at;
		e->hash[slot] = h[j];
		e->used++;
	}
	return 0;
}

/*
 * RDATA layout of the types whose RDATA holds names, which therefore must
 * be decompressed before the message is re-laid out: 'N' a name we may
 * compress (the RFC 1035 types), 'n' a name written uncompressed (RFC 3597
 * §4), digits / 'f' fixed bytes (f = 20, the SOA counters), 's' a
 * character-string. Other types are opaque (RFC 3597: never compressed).
 */
static const char *rdata_format(uint16_t type)
{
	switch (type) {
	case 1: /* A: exactly 4 bytes */
		return "4";
	case 28: /* AAAA: exactly 16 bytes */
		return "4444";
	case 2:  /* NS */
	case 3:  /* MD */
	case 4:  /* MF */
	case 5:  /* CNAME */
	case 7:  /* MB */
	case 8:  /* MG */
	case 9:  /* MR */
	case 12: /* PTR */
		return "N";
	case 6: /* SOA */
		return "NNf";
	case 14: /* MINFO */
		return "NN";
	case 15: /* MX */
		return "2N";
	case 17: /* RP */
		return "nn";
	case 18: /* AFSDB */
	case 21: /* RT */
	case 36: /* KX */
		return "2n";
	case 26: /* PX */
		return "2nn";
	case 33: /* SRV */
		return "6n";
	case 35: /* NAPTR */
		return "4sssn";
	case 39: /* DNAME */
		return "n";
	default:
		return NULL;
	}
}

/* prepare_one's answer when adopting: the layout does not allow it (re-encode instead) */
#define PREPARE_NO_ADOPT 1

/*
 * For a message whose layout is kept: the name at pos, already read by
 * name_read, has its in-place labels marked as pointer targets, and its
 * pointer, if any, must go to a marked label. Any other target (a TTL, a
 * count, opaque RDATA) could change meaning when those bytes are patched.
 */
static bool mark_name(const uint8_t *pkt, size_t pos, uint8_t *marks)
{
	for (;;) {
		uint8_t c = pkt[pos];
		if (c == 0)
			return true;
		if ((c & 0xc0) == 0xc0) {
			size_t t = (size_t)(c & 0x3f) << 8 | pkt[pos + 1];
			return (marks[t >> 3] >> (t & 7)) & 1;
		}
		marks[pos >> 3] |= (uint8_t)(1u << (pos & 7));
		pos += (size_t)1 + c;
	}
}

/*
 * Re-encode rr's RDATA (RDLENGTH included) from pkt; it must be consumed
 * exactly. With e NULL only the checks: the names read and marked
 * (mark_name; PREPARE_NO_ADOPT when one points elsewhere), the fixed parts
 * there, nothing left over.
 */
static int enc_rdata(struct enc *e, uint8_t *marks, const uint8_t *pkt, const struct rr *rr)
{
	const char *fmt = rdata_format(rr->type);
	if (e == NULL && fmt == NULL)
		return 0;
	size_t lenpos = e ? e->len : 0;
	int rc = e ? enc_u16(e, 0) : 0;
	if (rc != 0)
		return rc;
	if (fmt == NULL) {
		rc = enc_put(e, pkt + rr->rdata, rr->rdlen);
		if (rc != 0)
			return rc;
		wr16(e->buf + lenpos, rr->rdlen);
		return 0;
	}
	size_t p = rr->rdata, end = rr->end;
	for (; *fmt != '\0' && rc == 0; fmt++) {
		size_t fixed = 0;
		switch (*fmt) {
		case 'N':
		case 'n': {
			uint8_t name[WIRE_MAX_NAME];
			size_t nlen, at = p;
			/* Bounded by end: in-place labels stay inside RDATA, pointers go back anyway. */
			if (name_read(pkt, end, &p, name, &nlen) != 0)
				return WIRE_E_FORMERR;
			if (e != NULL)
				rc = enc_name(e, name, nlen, *fmt == 'N');
			else if (!mark_name(pkt, at, marks))
				rc = PREPARE_NO_ADOPT;
			continue;
		}
		case 's':
			if (p >= end)
				return WIRE_E_FORMERR;
			fixed = (size_t)1 + pkt[p];
			break;
		case 'f':
			fixed = 20;
			break;
		default:
			fixed = (size_t)(*fmt - '0');
			break;
		}
		if (end - p < fixed)
			return WIRE_E_FORMERR;
		rc = e ? enc_put(e, pkt + p, fixed) : 0;
		p += fixed;
	}
	if (rc != 0)
		return rc;
	if (p != end)
		return WIRE_E_FORMERR;
	if (e == NULL)
		return 0;
	size_t rdlen = e->len - lenpos - 2;
	if (rdlen > 0xffff)
		return WIRE_E_FORMERR;
	wr16(e->buf + lenpos, (uint16_t)rdlen);
	return 0;
}

/* Write one RR with the given TTL; *ttl_pos gets the TTL's offset in the output. */
static int enc_rr(struct enc *e, const uint8_t *pkt, const struct rr *rr, const uint8_t *owner, uint32_t ttl,
		  size_t *ttl_pos)
{
	int rc = enc_name(e, owner, rr->owner_len, true);
	if (rc == 0)
		rc = enc_u16(e, rr->type);
	if (rc == 0)
		rc = enc_u16(e, rr->rclass);
	if (rc != 0)
		return rc;
	if (ttl_pos != NULL)
		*ttl_pos = e->len;
	rc = enc_u32(e, ttl);
	return rc != 0 ? rc : enc_rdata(e, NULL, pkt, rr);
}

/* Read the question at WIRE_HEADER_SIZE; *pos ends past QTYPE/QCLASS. */
static int question_read(const uint8_t *pkt, size_t len, size_t *pos, uint8_t *qname, size_t *qname_len)
{
	*pos = WIRE_HEADER_SIZE;
	if (name_read(pkt, len, pos, qname, qname_len) != 0 || len - *pos < 4)
		return WIRE_E_FORMERR;
	*pos += 4;
	return 0;
}

/* ---- CNAME chains ---- */

struct chain {
	uint8_t name[WIRE_MAX_NAME]; /* final name of the chain, lower-cased */
	size_t name_len;
	unsigned hops;
	bool answered; /* the final name has an RRset of qtype (any RR for ANY) */
	struct wire_chain *out; /* optional: where each hop's target is */
};

/* Follow CNAMEs from qname through the ancount answer RRs at an_pos. */
static int chain_walk(const uint8_t *pkt, size_t len, size_t an_pos, unsigned ancount, const uint8_t *qname,
		      size_t qname_len, uint16_t qtype, struct chain *c)
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
		struct rr cname = {0};
		for (unsigned i = 0; i < ancount; i++) {
			struct rr rr;
			uint8_t owner[WIRE_MAX_NAME];
			if (rr_read(pkt, len, &pos, &rr, owner) != 0)
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
		if (name_read(pkt, cname.end, &p, c->name, &c->name_len) != 0 || p != cname.end)
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
	if (name_read(resp, chain->end[hop], &p, out, out_len) != 0)
		return WIRE_E_FORMERR;
	wire_name_lower(out, *out_len, out);
	return 0;
}

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
			struct rr rr;
			uint8_t owner[WIRE_MAX_NAME];
			if (rr_read(resp, len, &pos, &rr, owner) != 0)
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
static uint32_t sig_cap_of(const struct sig_cap *caps, unsigned n, int s, const uint8_t *owner, const struct rr *rr,
			   const uint8_t *resp)
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

/*
 * One blob of resp; with strip, without the DNSSEC records a client without
 * DO must not get. *has_dnssec says whether there were any.
 *
 * With adopt, resp's own layout is kept instead of re-encoding it: every
 * name and RDATA is read and checked as when re-encoding, the TTLs are
 * clamped in place, and only an OPT record at the very end is cut off. Not
 * for strip; an OPT record anywhere else, or a compression pointer to
 * anything but a label of an earlier name (mark_name), gives
 * PREPARE_NO_ADOPT.
 */
static int prepare_one(const uint8_t *resp, size_t len, const struct wire_limits *lim, bool strip, bool adopt,
		       uint8_t **blob, size_t *blob_len, uint32_t *ttl, bool *has_dnssec, struct wire_chain *chain)
{
	*blob = NULL;
	*blob_len = 0;
	*ttl = 0;
	if (len < WIRE_HEADER_SIZE || rd16(resp + 4) != 1)
		return WIRE_E_FORMERR;
	uint16_t flags = rd16(resp + 2);
	unsigned count[3] = {rd16(resp + 6), rd16(resp + 8), rd16(resp + 10)};
	if (adopt && (strip || len > WIRE_MAX_MSG))
		return PREPARE_NO_ADOPT;

	struct enc *e = adopt ? NULL : enc_new();
	/* Every input RR takes at least 11 bytes: that bounds the TTL list
	 * (on the stack for the usual answer, up to ~6 KB). */
	uint16_t offs_stack[512];
	uint32_t tvals_stack[512]; /* adopt: each TTL as clamped, written at the end */
	size_t noffs = len / (1 + RR_FIXED) + 1;
	uint16_t *offs = noffs <= 512 ? offs_stack : malloc(sizeof(*offs) * noffs);
	uint32_t *tvals = noffs <= 512 ? tvals_stack : malloc(sizeof(*tvals) * noffs);
	int rc = ((!adopt && e == NULL) || offs == NULL || tvals == NULL) ? -ENOMEM : 0;
	if (rc != 0)
		goto out;
	uint8_t marks[(WIRE_MAX_MSG + 8) / 8]; /* adopt: label starts, one bit per byte of resp */
	if (adopt)
		memset(marks, 0, (len + 7) / 8);

	uint8_t qname[WIRE_MAX_NAME];
	size_t qname_len, pos;
	rc = question_read(resp, len, &pos, qname, &qname_len);
	if (rc == 0 && adopt)
		mark_name(resp, WIRE_HEADER_SIZE, marks); /* no pointer: name_read allows none this early */
	if (rc == 0 && !adopt) {
		rc = enc_put(e, resp, WIRE_HEADER_SIZE);
		if (rc == 0)
			rc = enc_name(e, qname, qname_len, false);
		if (rc == 0)
			rc = enc_put(e, resp + pos - 4, 4);
	}
	if (rc != 0)
		goto out;
	uint16_t qtype = rd16(resp + pos - 4);
	struct sig_cap caps[SIG_CAPS];
	unsigned ncaps = sig_caps_scan(resp, len, pos, count, caps);
	/* the output so far: adopted, resp up to pos; else e's */
	size_t an_pos = pos, qd_end = adopt ? pos : e->len, ns_end = 0, out_end = qd_end;

	unsigned nttl = 0, nttl_pre = 0, nout[3] = {0, 0, 0};
	*has_dnssec = false;
	uint32_t min_anns = UINT32_MAX, min_an = UINT32_MAX, soa_neg = 0;
	bool seen_opt = false, have_soa = false;
	uint8_t ext_rcode = 0;
	size_t soa_ttl_pos = 0;
	for (int s = 0; s < 3; s++) {
		if (s == 2) {
			ns_end = out_end;
			nttl_pre = nttl;
		}
		for (unsigned i = 0; i < count[s]; i++) {
			struct rr rr;
			uint8_t owner[WIRE_MAX_NAME];
			size_t at = pos;
			rc = rr_read(resp, len, &pos, &rr, adopt ? NULL : owner); /* adopted: no copy needed */
			if (rc != 0)
				goto out;
			if (adopt && !mark_name(resp, at, marks))
				rc = PREPARE_NO_ADOPT;
			if (adopt && seen_opt)
				rc = PREPARE_NO_ADOPT; /* a record after OPT: cutting OPT out would move it */
			if (rc != 0)
				goto out;
			if (rr.type == WIRE_TYPE_OPT) {
				/* Dropped: its options (ECS, cookies) are between upstream and us. */
				if (s != 2 || seen_opt || rr.owner_len != 1 ||
				    opt_options(resp + rr.rdata, rr.rdlen, false, NULL, NULL) != 0) {
					rc = WIRE_E_FORMERR;
					goto out;
				}
				seen_opt = true;
				ext_rcode = (uint8_t)(rr.ttl >> 24);
				continue;
			}
			if (is_dnssec_type(rr.type) && rr.type != qtype) {
				*has_dnssec = true;
				if (strip)
					continue;
			}
			uint32_t t = ttl_sane(rr.ttl);
			if (s < 2 && (ncaps > 0 || rr.type == WIRE_TYPE_RRSIG)) {
				const uint8_t *own = owner;
				uint8_t own_buf[WIRE_MAX_NAME];
				size_t own_at = at, own_len;
				if (adopt) { /* adopted records were not copied: only now, and only with signatures */
					rc = name_read(resp, len, &own_at, own_buf, &own_len);
					if (rc != 0)
						goto out;
					own = own_buf;
				}
				t = min32(t, sig_cap_of(caps, ncaps, s, own, &rr, resp));
			}
			t = ttl_clamp(t, lim);
			size_t tpos;
			if (adopt) {
				rc = enc_rdata(NULL, marks, resp, &rr);
				tpos = rr.rdata - 6; /* TTL, RDLENGTH, RDATA */
				out_end = rr.end;
			} else {
				rc = enc_rr(e, resp, &rr, owner, t, &tpos);
				out_end = e->len;
			}
			if (rc != 0)
				goto out;
			tvals[nttl] = t;
			offs[nttl++] = (uint16_t)tpos;
			if (s < 2)
				min_anns = min32(min_anns, t);
			if (s == 0)
				min_an = min32(min_an, t);
			if (s == 1 && rr.type == WIRE_TYPE_SOA && !have_soa) {
				have_soa = true;
				soa_ttl_pos = tpos;
				/* RDATA was checked by enc_rdata: MINIMUM is its last 4 bytes. */
				soa_neg = min32(ttl_sane(rr.ttl), ttl_sane(rd32(resp + rr.end - 4)));
			}
			nout[s]++;
		}
	}
	int rcode = (flags & WIRE_FLAG_RCODE) | ext_rcode << 4;
	uint32_t life = 0, soa_set = 0;
	bool soa_write = false;
	if (!(flags & WIRE_FLAG_TC) && (rcode == WIRE_RCODE_NOERROR || rcode == WIRE_RCODE_NXDOMAIN)) {
		struct chain c;
		c.out = chain;
		rc = chain_walk(resp, len, an_pos, count[0], qname, qname_len, qtype, &c);
		if (rc != 0)
			goto out;
		if (rcode == WIRE_RCODE_NOERROR && c.answered) {
			life = min_anns;
		} else if (have_soa) {
			uint32_t neg = soa_neg;
			if (lim->max_negative_ttl != 0)
				neg = min32(neg, lim->max_negative_ttl);
			if (lim->max_ttl != 0)
				neg = min32(neg, lim->max_ttl);
			soa_set = neg;
			soa_write = true;
			life = min32(neg, min_an);
		} else {
			life = min32(lim->nosoa_ttl, min_an);
		}
	}

	const uint8_t *msg = adopt ? resp : e->buf;
	size_t msg_len = out_end;
	size_t total = BLOB_HDR + 2 * (size_t)nttl + msg_len;
	uint8_t *b = malloc(total);
	if (b == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	b[0] = BLOB_MAGIC;
	b[1] = (uint8_t)(((flags & WIRE_FLAG_AD) ? BLOB_F_AD : 0) | ((flags & WIRE_FLAG_TC) ? BLOB_F_TC : 0) |
			 ((flags & WIRE_FLAG_AA) ? BLOB_F_AA : 0));
	wr16(b + 2, (uint16_t)rcode);
	wr16(b + 4, (uint16_t)msg_len);
	wr16(b + 6, (uint16_t)qd_end);
	wr16(b + 8, (uint16_t)ns_end);
	wr16(b + 10, (uint16_t)nttl);
	wr16(b + 12, (uint16_t)nttl_pre);
	wr16(b + 14, 0);
	for (unsigned i = 0; i < nttl; i++)
		wr16(b + BLOB_HDR + 2 * i, offs[i]);
	uint8_t *m = b + BLOB_HDR + 2 * (size_t)nttl;
	memcpy(m, msg, msg_len);
	wr16(m, 0);
	wr16(m + 6, (uint16_t)nout[0]);
	wr16(m + 8, (uint16_t)nout[1]);
	wr16(m + 10, (uint16_t)nout[2]);
	if (adopt) /* re-encoding wrote them clamped */
		for (unsigned i = 0; i < nttl; i++)
			wr32(m + offs[i], tvals[i]);
	if (soa_write) /* it counts down with the entry */
		wr32(m + soa_ttl_pos, soa_set);
	*blob = b;
	*blob_len = total;
	*ttl = life;
out:
	if (offs != offs_stack)
		free(offs);
	if (tvals != tvals_stack)
		free(tvals);
	enc_free(e);
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
	size_t optlen = opt ? opt_rr_size(ecs, NULL) : 0;
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
		int rc = opt_write(out + pos, cap - pos, reply_udp(q), (uint8_t)(rcode >> 4), q->edns_do, ecs, NULL);
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
	size_t extra = q->has_edns ? ede_size(ede) : 0;
	if ((size_t)n + extra > cap)
		ede = NULL;
	size_t len = (size_t)n, qend = WIRE_HEADER_SIZE + q->qname_len + 4;
	/* wire_answer_write leaves the OPT out only when not even header and question fit with it */
	bool opt = q->has_edns && len > qend;
	size_t body_end = len - (opt ? opt_rr_size(echo, NULL) : 0);
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

/* ---- upstream ---- */

int wire_query_build(uint16_t id, bool rd, bool do_bit, const uint8_t *qname, size_t qname_len, uint16_t qtype,
		     uint16_t qclass, const struct ecs *ecs, uint8_t *out, size_t cap)
{
	if (wire_name_check(qname, qname_len) != 0)
		return -EINVAL;
	size_t need = WIRE_HEADER_SIZE + qname_len + 4 + opt_rr_size(ecs, NULL);
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
	int rc = opt_write(out + pos, cap - pos, WIRE_DEFAULT_UDP, 0, do_bit, ecs, NULL);
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
	if (question_read(resp, len, &pos, name, &name_len) != 0)
		return WIRE_E_FORMERR;
	if (!wire_name_equal(name, name_len, qname, qname_len) || rd16(resp + pos - 4) != qtype ||
	    rd16(resp + pos - 2) != qclass)
		return WIRE_E_MISMATCH;

	unsigned skip = info->ancount + info->nscount;
	for (unsigned i = 0; i < skip + info->arcount; i++) {
		struct rr rr;
		if (rr_read(resp, len, &pos, &rr, NULL) != 0) {
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
		if (opt_options(resp + rr.rdata, rr.rdlen, false, &info->has_ecs, &info->ecs) != 0)
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
		if (name_read(resp, len, &pos, name, &name_len) != 0 || len - pos < 4)
			return WIRE_E_FORMERR;
		pos += 4;
	}
	struct chain c;
	c.out = NULL;
	int rc = chain_walk(resp, len, pos, an, qname, qname_len, qtype, &c);
	if (rc != 0)
		return rc;
	if (c.answered || c.hops == 0 || qtype == WIRE_TYPE_CNAME || qtype == WIRE_TYPE_ANY)
		return 0;
	if ((flags & WIRE_FLAG_RCODE) == WIRE_RCODE_NXDOMAIN)
		return 0;
	/* Skip the answer (chain_walk checked it), then look for the target zone's SOA. */
	struct rr rr;
	for (unsigned i = 0; i < an; i++)
		if (rr_read(resp, len, &pos, &rr, NULL) != 0)
			return WIRE_E_FORMERR;
	for (unsigned i = 0; i < ns; i++) {
		if (rr_read(resp, len, &pos, &rr, name) != 0)
			return WIRE_E_FORMERR;
		if (rr.type == WIRE_TYPE_SOA && wire_name_in_zone(c.name, c.name_len, name, rr.owner_len))
			return 0;
	}
	memcpy(target, c.name, c.name_len);
	*target_len = c.name_len;
	return 1;
}

/* Re-encode n RRs at *pos of pkt; OPTs are dropped (checked when allow_opt) or FORMERR. */
static int splice_section(struct enc *e, const uint8_t *pkt, size_t len, size_t *pos, unsigned n, bool allow_opt,
			  bool write, unsigned *written)
{
	bool seen_opt = false;
	for (unsigned i = 0; i < n; i++) {
		struct rr rr;
		uint8_t owner[WIRE_MAX_NAME];
		if (rr_read(pkt, len, pos, &rr, owner) != 0)
			return WIRE_E_FORMERR;
		if (rr.type == WIRE_TYPE_OPT) {
			if (!allow_opt || seen_opt || rr.owner_len != 1)
				return WIRE_E_FORMERR;
			seen_opt = true;
			continue;
		}
		if (!write)
			continue;
		int rc = enc_rr(e, pkt, &rr, owner, rr.ttl, NULL);
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
	struct enc *e = enc_new();
	if (e == NULL)
		return -ENOMEM;
	uint16_t f1 = rd16(first + 2), f2 = rd16(second + 2);
	uint16_t flags = (uint16_t)((f1 & ~(WIRE_FLAG_RCODE | WIRE_FLAG_AD | WIRE_FLAG_AA | WIRE_FLAG_TC)) |
				    (f2 & WIRE_FLAG_RCODE) | (f1 & f2 & WIRE_FLAG_AD) | ((f1 | f2) & WIRE_FLAG_TC));
	uint8_t hdr[WIRE_HEADER_SIZE] = {0};
	memcpy(hdr, first, 2);
	wr16(hdr + 2, flags);
	wr16(hdr + 4, 1);
	int rc = enc_put(e, hdr, WIRE_HEADER_SIZE);

	uint8_t qname[WIRE_MAX_NAME];
	size_t qname_len, p1, p2;
	unsigned an = 0, ns = 0, ar = 0, dummy = 0;
	if (rc == 0)
		rc = question_read(first, first_len, &p1, qname, &qname_len);
	if (rc == 0)
		rc = enc_name(e, qname, qname_len, false);
	if (rc == 0)
		rc = enc_put(e, first + p1 - 4, 4);
	if (rc == 0)
		rc = splice_section(e, first, first_len, &p1, rd16(first + 6), false, true, &an);
	if (rc == 0)
		rc = splice_section(e, first, first_len, &p1, rd16(first + 8), false, false, &dummy);
	if (rc == 0)
		rc = splice_section(e, first, first_len, &p1, rd16(first + 10), true, false, &dummy);
	if (rc == 0)
		rc = question_read(second, second_len, &p2, qname, &qname_len);
	if (rc == 0)
		rc = splice_section(e, second, second_len, &p2, rd16(second + 6), false, true, &an);
	if (rc == 0)
		rc = splice_section(e, second, second_len, &p2, rd16(second + 8), false, true, &ns);
	if (rc == 0)
		rc = splice_section(e, second, second_len, &p2, rd16(second + 10), true, true, &ar);
	if (rc == 0 && an > 0xffff)
		rc = WIRE_E_FORMERR;
	if (rc != 0) {
		enc_free(e);
		return rc;
	}
	wr16(e->buf + 6, (uint16_t)an);
	wr16(e->buf + 8, (uint16_t)ns);
	wr16(e->buf + 10, (uint16_t)ar);
	return enc_finish(e, 0, out, out_len);
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
	return question_read(pkt, len, &it->pos, qname, &qlen);
}

int wire_iter_next(struct wire_iter *it, struct wire_rr *out)
{
	while (it->section < 3 && it->idx >= it->count[it->section]) {
		it->section++;
		it->idx = 0;
	}
	if (it->section >= 3)
		return 0;
	struct rr rr;
	if (rr_read(it->pkt, it->len, &it->pos, &rr, out->owner) != 0) {
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
	if (name_read(it->pkt, it->len, &p, out, out_len) != 0 || p > end)
		return WIRE_E_FORMERR;
	return 0;
}

int wire_cname_prefix(const uint8_t *resp, size_t len, unsigned hops, uint8_t **out, size_t *out_len)
{
	*out = NULL;
	*out_len = 0;
	struct wire_iter it;
	uint8_t qname[WIRE_MAX_NAME], cur[WIRE_MAX_NAME];
	size_t qname_len, cur_len, qend;
	if (wire_iter_init(&it, resp, len) != 0 || question_read(resp, len, &qend, qname, &qname_len) != 0)
		return WIRE_E_FORMERR;
	struct enc *e = enc_new();
	if (e == NULL)
		return -ENOMEM;
	uint8_t hdr[WIRE_HEADER_SIZE] = {0};
	memcpy(hdr, resp, 2);
	/* AD stays: those CNAMEs are part of what libunbound validated; the
	 * splice keeps it only if the EDNS pool's hops validate too */
	wr16(hdr + 2, (uint16_t)(rd16(resp + 2) & ~(WIRE_FLAG_RCODE | WIRE_FLAG_AA | WIRE_FLAG_TC)));
	wr16(hdr + 4, 1);
	wr16(hdr + 6, (uint16_t)hops);
	int rc = enc_put(e, hdr, WIRE_HEADER_SIZE);
	if (rc == 0)
		rc = enc_name(e, qname, qname_len, false);
	if (rc == 0)
		rc = enc_put(e, resp + qend - 4, 4);
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
		struct rr raw = { .owner_len = rr.owner_len, .type = rr.type, .rclass = rr.rclass, .ttl = rr.ttl,
		                  .rdlen = rr.rdlen, .rdata = rr.rdata, .end = rr.rdata + rr.rdlen };
		rc = enc_rr(e, resp, &raw, rr.owner, rr.ttl, NULL);
	}
	return enc_finish(e, rc, out, out_len);
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

	/* The question's chain: the names whose records an answer may hold. */
	uint8_t names[WIRE_CNAME_MAX + 1][WIRE_MAX_NAME];
	size_t lens[WIRE_CNAME_MAX + 1];
	unsigned n = 1;
	memcpy(names[0], p->qname, p->qname_len);
	lens[0] = p->qname_len;
	bool follow = p->qtype != WIRE_TYPE_CNAME && p->qtype != WIRE_TYPE_ANY;
	while (follow) {
		struct wire_iter it = start;
		struct wire_rr rr;
		int k;
		while ((k = wire_iter_next(&it, &rr)) == 1 && rr.section == WIRE_SECTION_ANSWER &&
		       !(rr.type == WIRE_TYPE_CNAME && wire_name_equal(rr.owner, rr.owner_len, names[n - 1], lens[n - 1])))
			;
		if (k < 0)
			return WIRE_E_FORMERR;
		if (k == 0 || rr.section != WIRE_SECTION_ANSWER)
			break;
		uint8_t target[WIRE_MAX_NAME];
		size_t tlen;
		if (wire_rdata_name(&it, &rr, 0, target, &tlen) != 0)
			return WIRE_E_FORMERR;
		if (name_index(names, lens, n, target, tlen) >= 0 || n > WIRE_CNAME_MAX)
			return WIRE_E_FORMERR; /* a loop, or longer than we follow */
		/* a target outside the zone is asked of its own zone's servers */
		if (!p->forwarder && !wire_name_in_zone(target, tlen, p->zone, p->zone_len))
			break;
		memcpy(names[n], target, tlen);
		lens[n++] = tlen;
	}
	const uint8_t *final = names[n - 1];
	size_t final_len = lens[n - 1];

	/* The zone whose SOA/NS an authority section may carry: the deepest
	 * owner of an SOA or NS at or above the final name (inside the bailiwick). */
	uint8_t auth_zone[WIRE_MAX_NAME];
	size_t auth_len = 0;
	struct wire_iter it = start;
	struct wire_rr rr;
	int k;
	while ((k = wire_iter_next(&it, &rr)) == 1) {
		if (rr.section != WIRE_SECTION_AUTHORITY || (rr.type != WIRE_TYPE_SOA && rr.type != WIRE_TYPE_NS))
			continue;
		if (!wire_name_in_zone(final, final_len, rr.owner, rr.owner_len) ||
		    (!p->forwarder && !wire_name_in_zone(rr.owner, rr.owner_len, p->zone, p->zone_len)))
			continue;
		if (auth_len == 0 || rr.owner_len > auth_len) {
			memcpy(auth_zone, rr.owner, rr.owner_len);
			auth_len = rr.owner_len;
		}
	}
	if (k < 0)
		return WIRE_E_FORMERR;

	struct enc *e = enc_new();
	if (e == NULL)
		return -ENOMEM;
	uint8_t hdr[WIRE_HEADER_SIZE] = {0};
	memcpy(hdr, resp, 4);
	wr16(hdr + 2, rd16(resp + 2) & (uint16_t)~WIRE_FLAG_AD); /* nothing here was validated */
	wr16(hdr + 4, 1);
	int rc = enc_put(e, hdr, WIRE_HEADER_SIZE);
	size_t qend;
	uint8_t qname[WIRE_MAX_NAME];
	size_t qlen;
	if (rc == 0)
		rc = question_read(resp, len, &qend, qname, &qlen);
	if (rc == 0)
		rc = enc_name(e, qname, qlen, false);
	if (rc == 0)
		rc = enc_put(e, resp + qend - 4, 4);
	bool cname_kept[WIRE_CNAME_MAX + 1] = { false };
	unsigned count[3] = { 0, 0, 0 }, drop = 0;
	it = start;
	while (rc == 0 && (k = wire_iter_next(&it, &rr)) == 1) {
		bool keep = false;
		if (rr.type == WIRE_TYPE_OPT) {
			continue; /* checked by wire_response_check; between upstream and us */
		} else if (rr.section == WIRE_SECTION_ANSWER) {
			int i = name_index(names, lens, n, rr.owner, rr.owner_len);
			bool mine = i >= 0 && (p->forwarder || wire_name_in_zone(rr.owner, rr.owner_len, p->zone,
			                                                           p->zone_len));
			if (mine && rr.type == WIRE_TYPE_CNAME) {
				keep = !cname_kept[i]; /* one CNAME per owner: the one the chain took */
				cname_kept[i] = true;
			} else if (mine) {
				uint16_t t = rr.type == 46 ? rrsig_covered(resp, &rr) : rr.type;
				keep = p->qtype == WIRE_TYPE_ANY || t == p->qtype || t == WIRE_TYPE_CNAME;
			}
		} else if (rr.section == WIRE_SECTION_AUTHORITY && auth_len > 0) {
			if (rr.type == WIRE_TYPE_SOA || rr.type == WIRE_TYPE_NS)
				keep = wire_name_equal(rr.owner, rr.owner_len, auth_zone, auth_len);
			else if (rr.type == 46 || rr.type == 47 || rr.type == 50) /* RRSIG, NSEC, NSEC3: proofs */
				keep = wire_name_in_zone(rr.owner, rr.owner_len, auth_zone, auth_len);
		}
		/* additional: nothing; glue is read from the raw referral, never passed on */
		if (!keep) {
			drop++;
			continue;
		}
		struct rr raw = { .owner_len = rr.owner_len, .type = rr.type, .rclass = rr.rclass, .ttl = rr.ttl,
		                  .rdlen = rr.rdlen, .rdata = rr.rdata, .end = rr.rdata + rr.rdlen };
		rc = enc_rr(e, resp, &raw, rr.owner, rr.ttl, NULL); /* checks the RDATA of the types we know */
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
	return enc_finish(e, rc, out, out_len);
}

int wire_negative_answer(const uint8_t *src, size_t len, const uint8_t *qname, size_t qname_len, uint16_t qtype,
			 uint16_t qclass, uint8_t **out, size_t *out_len)
{
	*out = NULL;
	*out_len = 0;
	struct wire_iter it;
	if (wire_iter_init(&it, src, len) != 0 || wire_name_check(qname, qname_len) != 0)
		return WIRE_E_FORMERR;
	struct enc *e = enc_new();
	if (e == NULL)
		return -ENOMEM;
	uint8_t hdr[WIRE_HEADER_SIZE] = {0};
	memcpy(hdr, src, 4);
	wr16(hdr + 2, rd16(src + 2) & (uint16_t)~(WIRE_FLAG_AD | WIRE_FLAG_AA | WIRE_FLAG_TC));
	wr16(hdr + 4, 1);
	int rc = enc_put(e, hdr, WIRE_HEADER_SIZE);
	if (rc == 0)
		rc = enc_name(e, qname, qname_len, true);
	if (rc == 0)
		rc = enc_u16(e, qtype);
	if (rc == 0)
		rc = enc_u16(e, qclass);
	struct wire_rr rr;
	int k;
	unsigned ns = 0;
	while (rc == 0 && (k = wire_iter_next(&it, &rr)) == 1) {
		/* the proof of absence only: SOA and DNSSEC denial records */
		if (rr.section != WIRE_SECTION_AUTHORITY ||
		    !(rr.type == WIRE_TYPE_SOA || rr.type == 46 || rr.type == 47 || rr.type == 50))
			continue;
		struct rr raw = { .owner_len = rr.owner_len, .type = rr.type, .rclass = rr.rclass, .ttl = rr.ttl,
		                  .rdlen = rr.rdlen, .rdata = rr.rdata, .end = rr.rdata + rr.rdlen };
		rc = enc_rr(e, src, &raw, rr.owner, rr.ttl, NULL);
		ns++;
	}
	if (rc == 0 && k < 0)
		rc = WIRE_E_FORMERR;
	if (rc == 0)
		wr16(e->buf + 8, (uint16_t)ns);
	return enc_finish(e, rc, out, out_len);
}

/* ---- names ---- */

int wire_name_check(const uint8_t *name, size_t len)
{
	if (name == NULL || len == 0 || len > WIRE_MAX_NAME)
		return -EINVAL;
	size_t i = 0;
	while (i < len && name[i] != 0) {
		if (name[i] > 63)
			return -EINVAL;
		i += (size_t)1 + name[i];
	}
	return (i == len - 1) ? 0 : -EINVAL;
}

void wire_name_lower(const uint8_t *name, size_t len, uint8_t *out)
{
	fold(name, out, len);
}

bool wire_name_equal(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	/* Length bytes are never letters, so a byte-wise comparison is label-exact. */
	return alen == blen && bytes_equal_ci(a, b, alen);
}

int wire_name_parent(const uint8_t *name, size_t len)
{
	if (wire_name_check(name, len) != 0 || name[0] == 0)
		return -EINVAL;
	return 1 + name[0];
}

int wire_name_labels(const uint8_t *name, size_t len)
{
	if (wire_name_check(name, len) != 0)
		return -EINVAL;
	int n = 0;
	for (size_t i = 0; name[i] != 0; i += (size_t)1 + name[i])
		n++;
	return n;
}

bool wire_name_in_zone(const uint8_t *name, size_t len, const uint8_t *zone, size_t zone_len)
{
	size_t i = 0;
	while (len - i > zone_len && i < len && name[i] != 0)
		i += (size_t)1 + name[i];
	return len - i == zone_len && bytes_equal_ci(name + i, zone, zone_len);
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

int wire_name_from_text(const char *text, uint8_t *out, size_t cap)
{
	if (text == NULL || text[0] == '\0')
		return -EINVAL;
	uint8_t buf[WIRE_MAX_NAME];
	size_t n = 0;
	const char *p = text;
	if (strcmp(text, ".") != 0) {
		while (*p != '\0') {
			size_t lpos = n++, llen = 0;
			while (*p != '\0' && *p != '.') {
				uint8_t c;
				if (*p == '\\') {
					p++;
					if (is_digit(p[0])) {
						if (!is_digit(p[1]) || !is_digit(p[2]))
							return -EINVAL;
						unsigned v = (unsigned)(p[0] - '0') * 100 + (unsigned)(p[1] - '0') * 10 +
							     (unsigned)(p[2] - '0');
						if (v > 255)
							return -EINVAL;
						c = (uint8_t)v;
						p += 3;
					} else if (*p == '\0') {
						return -EINVAL;
					} else {
						c = (uint8_t)*p++;
					}
				} else {
					c = (uint8_t)*p++;
				}
				/* Keep room for the root byte after this one. */
				if (llen == 63 || n + 2 > WIRE_MAX_NAME)
					return -EINVAL;
				buf[n++] = c;
				llen++;
			}
			if (llen == 0)
				return -EINVAL; /* "..", or a leading "." */
			buf[lpos] = (uint8_t)llen;
			if (*p == '.')
				p++;
		}
	}
	buf[n++] = 0;
	if (n > cap)
		return -ENOSPC;
	memcpy(out, buf, n);
	return (int)n;
}

int wire_name_to_text(const uint8_t *name, size_t len, char *out, size_t cap)
{
	if (wire_name_check(name, len) != 0)
		return -EINVAL;
	size_t o = 0;
	if (name[0] == 0) {
		if (cap < 2)
			return -ENOSPC;
		out[0] = '.';
		out[1] = '\0';
		return 1;
	}
	for (size_t i = 0; name[i] != 0; i += (size_t)1 + name[i]) {
		for (size_t j = 1; j <= name[i]; j++) {
			uint8_t c = name[i + j];
			bool plain = c >= 0x21 && c <= 0x7e && c != '.' && c != '\\';
			size_t tl = plain ? 1 : (c == '.' || c == '\\') ? 2 : 4;
			if (cap - o < tl + 1)
				return -ENOSPC;
			if (plain) {
				out[o] = (char)c;
			} else if (tl == 2) {
				out[o] = '\\';
				out[o + 1] = (char)c;
			} else {
				out[o] = '\\';
				out[o + 1] = (char)('0' + c / 100);
				out[o + 2] = (char)('0' + c / 10 % 10);
				out[o + 3] = (char)('0' + c % 10);
			}
			o += tl;
		}
		if (cap - o < 2)
			return -ENOSPC;
		out[o++] = '.';
	}
	out[o] = '\0';
	return (int)o;
}

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
