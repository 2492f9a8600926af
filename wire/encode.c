/* SPDX-License-Identifier: BSD-3-Clause */
/* Writing messages: the encoder with our own name compression, RDATA re-encoded (or checked where a
 * layout is kept), our OPT record. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "wire/encode.h"
#include "wire/bytes.h"
#include "wire/parse.h"

#define MAX_LABELS 128
#define PTR_MAX 0x3fff    /* largest offset a compression pointer can hold */

/* ---- re-encoding with our own compression (prepare, splice) ---- */

/*
 * One encoder per thread, reused: an 80 KB work buffer malloc'd and freed
 * for every upstream answer was the largest per-miss allocation and left
 * the heap fragmented after floods (bench/RESULTS.md "Abuse"). No function
 * of wire/ uses two encoders at once, and none keeps one past its return.
 */
static _Thread_local struct wire_enc enc_tls;

struct wire_enc *wire_enc_new(void)
{
	struct wire_enc *e = &enc_tls;
	e->len = 0;
	e->used = 0;
	memset(e->off, 0, sizeof(e->off));
	return e;
}

/* The encoder is done with (it stays with its thread). */
void wire_enc_free(struct wire_enc *e)
{
	(void)e;
}

/* A finished message: a malloc'd copy in *out (the encoder is released either way). @return rc, or -ENOMEM. */
int wire_enc_finish(struct wire_enc *e, int rc, uint8_t **out, size_t *out_len)
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
	wire_enc_free(e);
	return rc;
}

/* Messages are capped at 65535 bytes: beyond that the result is unusable. */
int wire_enc_put(struct wire_enc *e, const void *p, size_t n)
{
	if (n > WIRE_MAX_MSG - e->len)
		return WIRE_E_FORMERR;
	memcpy(e->buf + e->len, p, n);
	e->len += n;
	return 0;
}

int wire_enc_u16(struct wire_enc *e, uint16_t v)
{
	uint8_t b[2];
	wr16(b, v);
	return wire_enc_put(e, b, 2);
}

static int enc_u32(struct wire_enc *e, uint32_t v)
{
	uint8_t b[4];
	wr32(b, v);
	return wire_enc_put(e, b, 4);
}

/* Does the (possibly compressed) name at off in our output equal s (case-insensitive)? */
static bool enc_suffix_equal(const struct wire_enc *e, size_t off, const uint8_t *s, size_t slen)
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
int wire_enc_name(struct wire_enc *e, const uint8_t *name, size_t nlen, bool compress)
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
		rc = wire_enc_put(e, name, starts[m]);
		if (rc == 0)
			rc = wire_enc_u16(e, (uint16_t)(0xc000 | target));
	} else {
		rc = wire_enc_put(e, name, nlen);
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

/*
 * For a message whose layout is kept: the name at pos, already read by
 * wire_name_read, has its in-place labels marked as pointer targets, and its
 * pointer, if any, must go to a marked label. Any other target (a TTL, a
 * count, opaque RDATA) could change meaning when those bytes are patched.
 */
bool wire_mark_name(const uint8_t *pkt, size_t pos, uint8_t *marks)
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
 * (wire_mark_name; PREPARE_NO_ADOPT when one points elsewhere), the fixed parts
 * there, nothing left over.
 */
int wire_enc_rdata(struct wire_enc *e, uint8_t *marks, const uint8_t *pkt, const struct wire_raw_rr *rr)
{
	const char *fmt = rdata_format(rr->type);
	if (e == NULL && fmt == NULL)
		return 0;
	size_t lenpos = e ? e->len : 0;
	int rc = e ? wire_enc_u16(e, 0) : 0;
	if (rc != 0)
		return rc;
	if (fmt == NULL) {
		rc = wire_enc_put(e, pkt + rr->rdata, rr->rdlen);
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
			if (wire_name_read(pkt, end, &p, name, &nlen) != 0)
				return WIRE_E_FORMERR;
			if (e != NULL)
				rc = wire_enc_name(e, name, nlen, *fmt == 'N');
			else if (!wire_mark_name(pkt, at, marks))
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
		rc = e ? wire_enc_put(e, pkt + p, fixed) : 0;
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
int wire_enc_rr(struct wire_enc *e, const uint8_t *pkt, const struct wire_raw_rr *rr, const uint8_t *owner,
		uint32_t ttl, size_t *ttl_pos)
{
	int rc = wire_enc_name(e, owner, rr->owner_len, true);
	if (rc == 0)
		rc = wire_enc_u16(e, rr->type);
	if (rc == 0)
		rc = wire_enc_u16(e, rr->rclass);
	if (rc != 0)
		return rc;
	if (ttl_pos != NULL)
		*ttl_pos = e->len;
	rc = enc_u32(e, ttl);
	return rc != 0 ? rc : wire_enc_rdata(e, NULL, pkt, rr);
}

/* ---- our OPT record ---- */

/* Size of an EDE option (RFC 8914): INFO-CODE and EXTRA-TEXT. */
size_t wire_ede_size(const struct wire_ede *ede)
{
	return ede != NULL ? OPTION_HDR + 2 + (ede->text ? strlen(ede->text) : 0) : 0;
}

/* Size of our OPT record, with an ECS option when ecs != NULL and an EDE when ede != NULL. */
size_t wire_opt_rr_size(const struct ecs *ecs, const struct wire_ede *ede)
{
	return OPT_RR_FIXED + (ecs != NULL ? OPTION_HDR + ecs_size(ecs) : 0) + wire_ede_size(ede);
}

/* The UDP size our OPT in a reply to q advertises: server.max_udp_size, as set on q by the caller. */
uint16_t wire_reply_udp(const struct wire_query *q)
{
	return q->reply_udp >= WIRE_MIN_UDP ? q->reply_udp : WIRE_DEFAULT_UDP;
}

/* Write our OPT record advertising udp. @return its length, -ENOSPC or -EINVAL (bad ecs, EDE text too long). */
int wire_opt_write(uint8_t *p, size_t cap, uint16_t udp, uint8_t ext_rcode, bool do_bit, const struct ecs *ecs,
		   const struct wire_ede *ede)
{
	size_t need = wire_opt_rr_size(ecs, ede);
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
