/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A transfer's reply made into a zone's new copy (rpz_ixfr.h). Everything in
 * the reply comes from the primary and is taken as hostile: each record is
 * checked (class IN, inside the zone, no meta type), the serials must chain
 * from ours to the new one, and the counts are bounded; the first thing
 * wrong ends the reply (BAD, with the reason) and nothing of it is applied.
 *
 * An incremental reply is not applied as it arrives: a deletion's target is
 * only known to be there once the copy has been read, and the copy is read
 * once, after the reply is complete. So the differences are kept, in order,
 * as a table of records by their canonical wire form without the TTL (the
 * record's identity, RFC 2181 5.2), each with what the differences so far
 * say of it: first met as a deletion (so the copy must hold it), and
 * present or not now. Then the copy is streamed: a record the table knows
 * is left for the table to decide, any other is written as it is; last,
 * every record the table says is present is written. Time and memory are
 * linear in the copy plus the differences, whatever the zone's size.
 */
#include "resolver/xfr/rpz_ixfr.h"
#include "util/vec.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util/hash.h"

/* One record a difference deletes or adds. */
struct dentry {
	uint64_t hash;
	uint32_t len;      /* of wire */
	uint16_t ttl_off;  /* the TTL's place in wire: not part of the identity */
	bool must_have;    /* first met as a deletion: the copy must hold it */
	bool present;      /* after the differences so far */
	bool seen;         /* the copy holds it */
	uint8_t wire[];    /* canonical (RFC 4034 6.2), uncompressed */
};

enum state { ST_START, ST_FIRST, ST_WHOLE, ST_DEL, ST_ADD, ST_DONE, ST_BAD };

struct rpz_ixfr {
	ldns_rdf *zone;
	bool have;
	uint32_t have_serial;
	FILE *out;
	enum rpz_ixfr_kind kind;
	enum state st;
	ldns_rr *soa;            /* the reply's first record: the new SOA */
	uint32_t final, cur;     /* the new serial; the serial the differences so far reach */
	uint64_t records, deleted, added;
	unsigned messages;
	struct hash_key hk;
	struct dentry **ents;    /* in the order met */
	size_t nents, cap;
	uint32_t *slots;         /* open addressing: index into ents + 1, 0 empty */
	size_t nslots;
	ldns_buffer *buf;
	char why[300];
};

struct rpz_ixfr *rpz_ixfr_new(const char *zone, bool have, uint32_t serial, FILE *out)
{
	struct rpz_ixfr *x = calloc(1, sizeof(*x));
	if (x == NULL)
		return NULL;
	if (ldns_str2rdf_dname(&x->zone, zone) != LDNS_STATUS_OK || (x->buf = ldns_buffer_new(512)) == NULL) {
		rpz_ixfr_free(x);
		return NULL;
	}
	ldns_dname2canonical(x->zone);
	x->have = have;
	x->have_serial = serial;
	x->out = out;
	hash_key_random(&x->hk); /* the records are the primary's choice: a keyed hash keeps chains short */
	return x;
}

void rpz_ixfr_free(struct rpz_ixfr *x)
{
	if (x == NULL)
		return;
	for (size_t i = 0; i < x->nents; i++)
		free(x->ents[i]);
	free(x->ents);
	free(x->slots);
	ldns_rr_free(x->soa);
	ldns_rdf_deep_free(x->zone);
	ldns_buffer_free(x->buf);
	free(x);
}

enum rpz_ixfr_kind rpz_ixfr_kind(const struct rpz_ixfr *x)
{
	return x->kind;
}

const char *rpz_ixfr_why(const struct rpz_ixfr *x)
{
	return x->why;
}

uint32_t rpz_ixfr_serial(const struct rpz_ixfr *x)
{
	return x->soa ? x->final : 0;
}

void rpz_ixfr_counts(const struct rpz_ixfr *x, uint64_t *records, uint64_t *deleted, uint64_t *added)
{
	*records = x->records;
	*deleted = x->deleted;
	*added = x->added;
}

static enum rpz_ixfr_state bad(struct rpz_ixfr *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static enum rpz_ixfr_state bad(struct rpz_ixfr *x, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(x->why, sizeof(x->why), fmt, ap);
	va_end(ap);
	x->st = ST_BAD;
	x->kind = RPZ_IXFR_UNKNOWN;
	return RPZ_IXFR_BAD;
}

/* "owner TYPE" of rr, for a message. */
static void rr_label(const ldns_rr *rr, char *out, size_t cap)
{
	char *o = ldns_rdf2str(ldns_rr_owner(rr));
	char *t = ldns_rr_type2str(ldns_rr_get_type(rr));
	snprintf(out, cap, "%.200s %.20s", o ? o : "?", t ? t : "?");
	free(o);
	free(t);
}

/* RFC 1982: a is after b. */
static bool serial_after(uint32_t a, uint32_t b)
{
	return a != b && (uint32_t)(a - b) < 0x80000000u;
}

/* The apex SOA's serial. @return false when rr is no well-formed SOA of the zone. */
static bool soa_serial(const struct rpz_ixfr *x, const ldns_rr *rr, uint32_t *serial)
{
	if (ldns_rr_get_type(rr) != LDNS_RR_TYPE_SOA || ldns_rr_rd_count(rr) != 7 ||
	    ldns_rdf_size(ldns_rr_rdf(rr, 2)) != 4 || ldns_dname_compare(ldns_rr_owner(rr), x->zone) != 0)
		return false;
	*serial = ldns_rdf2native_int32(ldns_rr_rdf(rr, 2));
	return true;
}

/* Types that are no data of a zone (RFC 6895 3.1: OPT and the query-only types). */
static bool meta_type(ldns_rr_type t)
{
	return t == 0 || t == LDNS_RR_TYPE_OPT || (t >= 128 && t <= 255);
}

static int table_grow(struct rpz_ixfr *x)
{
	size_t n = x->nslots ? x->nslots * 2 : 1024;
	uint32_t *s = calloc(n, sizeof(*s));
	if (s == NULL)
		return -1;
	for (size_t i = 0; i < x->nents; i++) {
		size_t j = x->ents[i]->hash & (n - 1);
		while (s[j] != 0)
			j = (j + 1) & (n - 1);
		s[j] = (uint32_t)(i + 1);
	}
	free(x->slots);
	x->slots = s;
	x->nslots = n;
	return 0;
}

/* rr in canonical wire form into x->buf. @return the TTL's offset, or -1. */
static int canonical(struct rpz_ixfr *x, const ldns_rr *rr)
{
	ldns_buffer_clear(x->buf);
	if (ldns_rr2buffer_wire_canonical(x->buf, rr, LDNS_SECTION_ANSWER) != LDNS_STATUS_OK)
		return -1;
	ldns_buffer_flip(x->buf);
	size_t off = ldns_rdf_size(ldns_rr_owner(rr)) + 4;
	if (ldns_buffer_limit(x->buf) < off + 6 || ldns_buffer_limit(x->buf) > UINT32_MAX)
		return -1;
	return (int)off;
}

static uint64_t key_hash(const struct rpz_ixfr *x, const uint8_t *w, size_t len, size_t ttl_off)
{
	return hash_mum(hash_bytes(&x->hk, w, ttl_off), hash_bytes(&x->hk, w + ttl_off + 4, len - ttl_off - 4) ^ 1);
}

/* The entry for the record in x->buf (TTL at ttl_off), or NULL; *slot: where it is or would go. */
static struct dentry *lookup(const struct rpz_ixfr *x, uint64_t h, size_t ttl_off, size_t *slot)
{
	const uint8_t *w = ldns_buffer_begin(x->buf);
	size_t len = ldns_buffer_limit(x->buf);
	if (x->nslots == 0)
		return NULL;
	for (size_t j = h & (x->nslots - 1);; j = (j + 1) & (x->nslots - 1)) {
		if (x->slots[j] == 0) {
			*slot = j;
			return NULL;
		}
		struct dentry *e = x->ents[x->slots[j] - 1];
		if (e->hash == h && e->len == len && e->ttl_off == ttl_off && memcmp(e->wire, w, ttl_off) == 0 &&
		    memcmp(e->wire + ttl_off + 4, w + ttl_off + 4, len - ttl_off - 4) == 0) {
			*slot = j;
			return e;
		}
	}
}

/* A deletion (del) or an addition of rr, after those before it. */
static enum rpz_ixfr_state difference(struct rpz_ixfr *x, const ldns_rr *rr, bool del)
{
	if (x->deleted + x->added >= RPZ_IXFR_MAX_DIFF)
		return bad(x, "more than %u records of differences", RPZ_IXFR_MAX_DIFF);
	int off = canonical(x, rr);
	if (off < 0)
		return bad(x, "a record that cannot be put in wire form");
	if (x->nents * 2 >= x->nslots && table_grow(x) != 0)
		return bad(x, "out of memory");
	size_t len = ldns_buffer_limit(x->buf), slot = 0;
	uint64_t h = key_hash(x, ldns_buffer_begin(x->buf), len, (size_t)off);
	struct dentry *e = lookup(x, h, (size_t)off, &slot);
	if (e == NULL) {
		if (vec_grow(&x->ents, &x->cap, x->nents + 1, sizeof(*x->ents), SIZE_MAX) != 0)
			return bad(x, "out of memory");
		if ((e = malloc(sizeof(*e) + len)) == NULL)
			return bad(x, "out of memory");
		*e = (struct dentry){ .hash = h, .len = (uint32_t)len, .ttl_off = (uint16_t)off, .must_have = del,
			              .present = !del };
		memcpy(e->wire, ldns_buffer_begin(x->buf), len);
		x->ents[x->nents++] = e;
		x->slots[slot] = (uint32_t)x->nents;
	} else if (del) {
		if (!e->present) {
			char l[256];
			rr_label(rr, l, sizeof(l));
			return bad(x, "deletes %s, which an earlier difference removed", l);
		}
		e->present = false;
	} else {
		e->present = true; /* adding what is there is no error (a set); the TTL is the new one */
		memcpy(e->wire + off, ldns_buffer_begin(x->buf) + off, 4);
	}
	if (del)
		x->deleted++;
	else
		x->added++;
	return RPZ_IXFR_MORE;
}

/* The next record of the reply. */
static enum rpz_ixfr_state feed(struct rpz_ixfr *x, const ldns_rr *rr)
{
	char l[256];
	if (++x->records > RPZ_IXFR_MAX_RECORDS)
		return bad(x, "more than %u records", RPZ_IXFR_MAX_RECORDS);
	ldns_rr_type t = ldns_rr_get_type(rr);
	if (ldns_rr_get_class(rr) != LDNS_RR_CLASS_IN || meta_type(t) ||
	    (ldns_dname_compare(ldns_rr_owner(rr), x->zone) != 0 &&
	     !ldns_dname_is_subdomain(ldns_rr_owner(rr), x->zone))) {
		rr_label(rr, l, sizeof(l));
		return bad(x, "a record that does not belong in the zone: %s", l);
	}
	uint32_t serial = 0;
	bool soa = t == LDNS_RR_TYPE_SOA;
	if (soa && !soa_serial(x, rr, &serial)) {
		rr_label(rr, l, sizeof(l));
		return bad(x, "a SOA that is not the zone's: %s", l);
	}
	switch (x->st) {
	case ST_START:
		if (!soa)
			return bad(x, "the reply does not start with the zone's SOA");
		if ((x->soa = ldns_rr_clone(rr)) == NULL)
			return bad(x, "out of memory");
		x->final = serial;
		x->st = ST_FIRST;
		return RPZ_IXFR_MORE;
	case ST_FIRST:
		/* the second record says what the reply is (RFC 1995 4) */
		if (soa && x->have && serial == x->have_serial && serial != x->final) {
			x->kind = RPZ_IXFR_INCREMENTAL;
			x->cur = serial;
			x->st = ST_DEL;
			return RPZ_IXFR_MORE;
		}
		if (soa && serial != x->final) {
			if (x->have)
				return bad(x, "the differences start at serial %u, not at ours (%u)", serial, x->have_serial);
			return bad(x, "a zone of serial %u closed by a SOA of serial %u", x->final, serial);
		}
		x->kind = RPZ_IXFR_WHOLE;
		ldns_rr_print(x->out, x->soa);
		if (soa) { /* a zone of its SOA alone */
			x->st = ST_DONE;
			return RPZ_IXFR_DONE;
		}
		ldns_rr_print(x->out, rr);
		x->st = ST_WHOLE;
		return RPZ_IXFR_MORE;
	case ST_WHOLE:
		if (!soa) {
			ldns_rr_print(x->out, rr);
			return RPZ_IXFR_MORE;
		}
		if (serial != x->final)
			return bad(x, "a SOA of serial %u inside the zone of serial %u", serial, x->final);
		x->st = ST_DONE;
		return RPZ_IXFR_DONE;
	case ST_DEL:
		if (!soa)
			return difference(x, rr, true);
		if (!serial_after(serial, x->cur))
			return bad(x, "a difference from serial %u to %u, which is not later", x->cur, serial);
		x->cur = serial;
		x->st = ST_ADD;
		return RPZ_IXFR_MORE;
	case ST_ADD:
		if (!soa)
			return difference(x, rr, false);
		if (x->cur == x->final) {
			if (serial != x->final)
				return bad(x, "the differences reach serial %u, then a SOA of serial %u", x->final, serial);
			x->st = ST_DONE;
			return RPZ_IXFR_DONE;
		}
		if (serial != x->cur)
			return bad(x, "a difference from serial %u follows one to %u", serial, x->cur);
		x->st = ST_DEL;
		return RPZ_IXFR_MORE;
	case ST_DONE:
		return bad(x, "records after the end of the transfer");
	case ST_BAD:
		break;
	}
	return RPZ_IXFR_BAD;
}

enum rpz_ixfr_state rpz_ixfr_message(struct rpz_ixfr *x, const ldns_rr_list *answer)
{
	if (x->st == ST_BAD)
		return RPZ_IXFR_BAD;
	size_t n = ldns_rr_list_rr_count(answer);
	if (++x->messages == 1 && n == 0)
		return bad(x, "an empty reply");
	for (size_t i = 0; i < n; i++)
		if (feed(x, ldns_rr_list_rr(answer, i)) == RPZ_IXFR_BAD)
			return RPZ_IXFR_BAD;
	/* a first message of one SOA is the whole reply when its serial is not after ours (RFC 1995 2, 4) */
	if (x->st == ST_FIRST && x->have && x->messages == 1 && !serial_after(x->final, x->have_serial)) {
		if (x->final != x->have_serial)
			return bad(x, "the primary's serial %u is older than ours (%u)", x->final, x->have_serial);
		x->kind = RPZ_IXFR_UPTODATE;
		x->st = ST_DONE;
	}
	return x->st == ST_DONE ? RPZ_IXFR_DONE : RPZ_IXFR_MORE;
}

int rpz_ixfr_apply(struct rpz_ixfr *x, FILE *base, FILE *out)
{
	if (x->kind != RPZ_IXFR_INCREMENTAL || x->st != ST_DONE) {
		snprintf(x->why, sizeof(x->why), "no complete incremental reply to apply");
		return -1;
	}
	ldns_rr_print(out, x->soa);
	ldns_rdf *origin = ldns_rdf_clone(x->zone), *prev = NULL;
	uint32_t ttl = 3600;
	int line = 0, rc = 0;
	bool soa_seen = false;
	char l[256];
	while (rc == 0 && !feof(base)) {
		ldns_rr *rr = NULL;
		ldns_status s = ldns_rr_new_frm_fp_l(&rr, base, &ttl, &origin, &prev, &line);
		if (s == LDNS_STATUS_SYNTAX_EMPTY || s == LDNS_STATUS_SYNTAX_TTL || s == LDNS_STATUS_SYNTAX_ORIGIN)
			continue;
		if (s != LDNS_STATUS_OK) {
			snprintf(x->why, sizeof(x->why), "our copy does not parse at line %d: %s", line,
			         ldns_get_errorstr_by_id(s));
			rc = -1;
			break;
		}
		uint32_t serial;
		if (soa_serial(x, rr, &serial)) {
			/* every apex SOA (older copies repeat the closing one) must be the serial we asked from */
			if (serial != x->have_serial) {
				snprintf(x->why, sizeof(x->why), "our copy is serial %u, not %u", serial, x->have_serial);
				rc = -1;
			}
			soa_seen = true;
		} else {
			int off = canonical(x, rr);
			size_t slot;
			struct dentry *e =
				off < 0 ? NULL
				        : lookup(x, key_hash(x, ldns_buffer_begin(x->buf), ldns_buffer_limit(x->buf),
				                             (size_t)off),
				                 (size_t)off, &slot);
			if (e != NULL)
				e->seen = true; /* the differences decide */
			else
				ldns_rr_print(out, rr);
		}
		ldns_rr_free(rr);
	}
	ldns_rdf_deep_free(origin);
	ldns_rdf_deep_free(prev);
	if (rc == 0 && !soa_seen) {
		snprintf(x->why, sizeof(x->why), "our copy has no SOA");
		rc = -1;
	}
	for (size_t i = 0; rc == 0 && i < x->nents; i++) {
		struct dentry *e = x->ents[i];
		if (!e->must_have || e->seen)
			continue;
		ldns_rr *rr = NULL;
		size_t pos = 0;
		if (ldns_wire2rr(&rr, e->wire, e->len, &pos, LDNS_SECTION_ANSWER) == LDNS_STATUS_OK)
			rr_label(rr, l, sizeof(l));
		else
			snprintf(l, sizeof(l), "a record");
		ldns_rr_free(rr);
		snprintf(x->why, sizeof(x->why), "deletes %s, which our copy does not have", l);
		rc = -1;
	}
	for (size_t i = 0; rc == 0 && i < x->nents; i++) {
		struct dentry *e = x->ents[i];
		ldns_rr *rr = NULL;
		size_t pos = 0;
		if (!e->present)
			continue;
		if (ldns_wire2rr(&rr, e->wire, e->len, &pos, LDNS_SECTION_ANSWER) != LDNS_STATUS_OK) {
			snprintf(x->why, sizeof(x->why), "an added record does not read back");
			rc = -1;
			break;
		}
		ldns_rr_print(out, rr);
		ldns_rr_free(rr);
	}
	return rc;
}
