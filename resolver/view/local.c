/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Local data. Each set (the global local_zones, and each partition's) is
 * two open-addressing tables keyed by lower-case wire names: the zones by
 * apex, and the names that hold data (or lie between a zone's apex and
 * data below it: empty non-terminals) with the range of their records in a
 * sorted array. A lookup walks the query name's suffixes once for the
 * deepest zone, then reads the name's records: a few hash probes, no
 * allocation but the answer. The behaviours are Unbound's local-zone ones
 * (static, transparent, redirect, refuse, always_nxdomain).
 */
#include "resolver/view/local.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "wire/msgbuf.h"
#include "wire/names.h"
#include "util/hash.h"

/* One record: where it is in its zone's wire records. */
struct lrr {
	const uint8_t *owner; /* lower case, uncompressed */
	size_t owner_len;
	uint16_t type;
	const uint8_t *rest;  /* type, class, TTL, RDLENGTH, RDATA */
	size_t rest_len;
	uint32_t zone;
};

/* A name with data, or an empty non-terminal (n == 0). */
struct lname {
	const uint8_t *name;
	size_t len;
	uint32_t zone;
	uint32_t first, n;    /* its records in the set's sorted array */
	bool used;
};

struct lzone {
	const struct conf_local_zone *cz;
	const uint8_t *soa;   /* the zone's SOA record (whole, from cz->rrs), or NULL */
	size_t soa_len;
	size_t name_len;
	uint8_t name[WIRE_MAX_NAME];
	bool used;            /* in the zone table */
};

struct lset {
	size_t nzones;
	struct lzone *zones;  /* the table itself: open addressing, size zmask + 1 */
	size_t zmask;
	size_t nrrs;
	struct lrr *rrs;      /* sorted by zone, owner, type */
	struct lname *names;  /* open addressing, size nmask + 1 */
	size_t nmask;
};

struct local {
	struct hash_key key;
	struct lset *global;
	struct lset **part;   /* by partition id; NULL entries: none */
	size_t npart;
};

static uint64_t name_hash(const struct local *l, const uint8_t *name, size_t len)
{
	return hash_bytes(&l->key, name, len);
}

static size_t table_size(size_t n)
{
	size_t s = 8;
	while (s < 2 * n)
		s <<= 1;
	return s;
}

static void set_free(struct lset *s)
{
	if (s == NULL)
		return;
	free(s->zones);
	free(s->rrs);
	free(s->names);
	free(s);
}

void local_free(struct local *l)
{
	if (l == NULL)
		return;
	set_free(l->global);
	for (size_t i = 0; i < l->npart; i++)
		set_free(l->part[i]);
	free(l->part);
	free(l);
}

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* Split a zone's wire records (conf.h) into lrr entries. @return how many, or -1 if malformed. */
static long split(const struct conf_local_zone *cz, uint32_t zone, struct lrr *out)
{
	size_t pos = 0;
	long n = 0;
	while (pos < cz->rrs_len) {
		size_t start = pos;
		while (pos < cz->rrs_len && cz->rrs[pos] != 0)
			pos += 1u + cz->rrs[pos];
		if (pos >= cz->rrs_len || pos + 11 > cz->rrs_len)
			return -1;
		pos++; /* the root label */
		size_t rdlen = rd16(cz->rrs + pos + 8);
		if (pos + 10 + rdlen > cz->rrs_len)
			return -1;
		if (out)
			out[n] = (struct lrr){ .owner = cz->rrs + start, .owner_len = pos - start,
				               .type = rd16(cz->rrs + pos), .rest = cz->rrs + pos,
				               .rest_len = 10 + rdlen, .zone = zone };
		n++;
		pos += 10 + rdlen;
	}
	return n;
}

static int name_cmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
	size_t m = al < bl ? al : bl;
	int c = memcmp(a, b, m);
	return c != 0 ? c : (al > bl) - (al < bl);
}

static int lrr_cmp(const void *x, const void *y)
{
	const struct lrr *a = x, *b = y;
	if (a->zone != b->zone)
		return a->zone < b->zone ? -1 : 1;
	int c = name_cmp(a->owner, a->owner_len, b->owner, b->owner_len);
	if (c != 0)
		return c;
	return (a->type > b->type) - (a->type < b->type);
}

static struct lname *name_slot(const struct local *l, const struct lset *s, const uint8_t *name, size_t len,
                               uint32_t zone)
{
	size_t i = (size_t)name_hash(l, name, len) & s->nmask;
	while (s->names[i].used) {
		struct lname *e = &s->names[i];
		if (e->zone == zone && e->len == len && memcmp(e->name, name, len) == 0)
			return e;
		i = (i + 1) & s->nmask;
	}
	return &s->names[i];
}

static const struct lzone *zone_find(const struct local *l, const struct lset *s, const uint8_t *name,
                                     size_t len, uint32_t *idx)
{
	size_t i = (size_t)name_hash(l, name, len) & s->zmask;
	while (s->zones[i].used) {
		if (s->zones[i].name_len == len && memcmp(s->zones[i].name, name, len) == 0) {
			*idx = (uint32_t)i;
			return &s->zones[i];
		}
		i = (i + 1) & s->zmask;
	}
	return NULL;
}

static struct lset *set_build(const struct local *l, const struct conf_local_list *list)
{
	if (list == NULL || list->n == 0)
		return NULL;
	struct lset *s = calloc(1, sizeof(*s));
	if (s == NULL)
		return NULL;
	s->zmask = table_size(list->n) - 1;
	s->zones = calloc(s->zmask + 1, sizeof(*s->zones));
	size_t total = 0;
	for (size_t i = 0; i < list->n; i++) {
		long k = split(&list->z[i], 0, NULL);
		total += k > 0 ? (size_t)k : 0;
	}
	s->rrs = calloc(total ? total : 1, sizeof(*s->rrs));
	if (s->zones == NULL || s->rrs == NULL)
		goto fail;
	/* the zones, by apex; records tagged with their zone's slot */
	for (size_t i = 0; i < list->n; i++) {
		const struct conf_local_zone *cz = &list->z[i];
		uint8_t apex[WIRE_MAX_NAME];
		int alen = wire_name_from_text(cz->name, apex, sizeof(apex));
		if (alen <= 0)
			continue;
		wire_name_lower(apex, (size_t)alen, apex);
		size_t slot = (size_t)name_hash(l, apex, (size_t)alen) & s->zmask;
		while (s->zones[slot].used)
			slot = (slot + 1) & s->zmask;
		struct lzone *z = &s->zones[slot];
		z->used = true;
		z->cz = cz;
		memcpy(z->name, apex, (size_t)alen);
		z->name_len = (size_t)alen;
		s->nzones++;
		long k = split(cz, (uint32_t)slot, s->rrs + s->nrrs);
		if (k < 0)
			goto fail;
		for (long j = 0; j < k; j++) {
			const struct lrr *r = &s->rrs[s->nrrs + (size_t)j];
			if (r->type == WIRE_TYPE_SOA && r->owner_len == z->name_len &&
			    memcmp(r->owner, z->name, z->name_len) == 0 && z->soa == NULL) {
				z->soa = r->owner;
				z->soa_len = r->owner_len + r->rest_len;
			}
		}
		s->nrrs += (size_t)k;
	}
	qsort(s->rrs, s->nrrs, sizeof(*s->rrs), lrr_cmp);
	/* names: every owner, and every name between it and its zone's apex */
	size_t nnames = 0;
	for (size_t i = 0; i < s->nrrs; i++) {
		int labels = wire_name_labels(s->rrs[i].owner, s->rrs[i].owner_len);
		nnames += labels > 0 ? (size_t)labels : 1;
	}
	s->nmask = table_size(nnames + s->nzones) - 1;
	s->names = calloc(s->nmask + 1, sizeof(*s->names));
	if (s->names == NULL)
		goto fail;
	for (size_t i = 0; i < s->nrrs;) {
		size_t j = i;
		while (j < s->nrrs && s->rrs[j].zone == s->rrs[i].zone &&
		       name_cmp(s->rrs[j].owner, s->rrs[j].owner_len, s->rrs[i].owner, s->rrs[i].owner_len) == 0)
			j++;
		const struct lrr *r = &s->rrs[i];
		struct lname *e = name_slot(l, s, r->owner, r->owner_len, r->zone);
		*e = (struct lname){ .name = r->owner, .len = r->owner_len, .zone = r->zone, .first = (uint32_t)i,
			             .n = (uint32_t)(j - i), .used = true };
		/* the empty non-terminals above it, down from the apex */
		const struct lzone *z = &s->zones[r->zone];
		const uint8_t *p = r->owner;
		size_t plen = r->owner_len;
		while (plen > z->name_len) {
			size_t step = 1u + p[0];
			p += step;
			plen -= step;
			struct lname *a = name_slot(l, s, p, plen, r->zone);
			if (!a->used)
				*a = (struct lname){ .name = p, .len = plen, .zone = r->zone, .used = true };
		}
		i = j;
	}
	/* every apex exists, data or not (a static zone's apex is NODATA, not NXDOMAIN) */
	for (size_t zi = 0; zi <= s->zmask; zi++) {
		if (!s->zones[zi].used)
			continue;
		struct lname *a = name_slot(l, s, s->zones[zi].name, s->zones[zi].name_len, (uint32_t)zi);
		if (!a->used)
			*a = (struct lname){ .name = s->zones[zi].name, .len = s->zones[zi].name_len, .zone = (uint32_t)zi,
				             .used = true };
	}
	return s;
fail:
	set_free(s);
	return NULL;
}

struct local *local_build(const struct conf *c, bool *oom)
{
	*oom = false;
	bool any = c->local_zones.n > 0;
	for (size_t i = 0; i < c->partitions.nlocal && !any; i++)
		any = c->partitions.local[i].n > 0;
	if (!any)
		return NULL;
	struct local *l = calloc(1, sizeof(*l));
	if (l == NULL)
		goto oom;
	hash_key_random(&l->key);
	if (c->local_zones.n > 0 && (l->global = set_build(l, &c->local_zones)) == NULL)
		goto oom;
	if (c->partitions.nlocal > 0) {
		l->part = calloc(c->partitions.nlocal, sizeof(*l->part));
		if (l->part == NULL)
			goto oom;
		l->npart = c->partitions.nlocal;
		for (size_t i = 0; i < l->npart; i++)
			if (c->partitions.local[i].n > 0 && (l->part[i] = set_build(l, &c->partitions.local[i])) == NULL)
				goto oom;
	}
	return l;
oom:
	local_free(l);
	*oom = true;
	return NULL;
}

/* ---- answers ---- */

/*
 * The response: rcode, the records of RRset [first, first + n) in the
 * answer (owner replaced by owner when given: redirect), the zone's SOA in
 * authority when soa.
 */
static enum local_verdict respond(const struct wire_query *q, int rcode, const struct lset *s, size_t first,
                                  size_t n, const uint8_t *owner, size_t owner_len, const struct lzone *soa,
                                  uint8_t **msg, size_t *len)
{
	struct msgbuf m = { 0 };
	msgbuf_start(&m, q, rcode, (uint16_t)n, soa != NULL && soa->soa != NULL ? 1 : 0);
	for (size_t i = first; i < first + n; i++) {
		const struct lrr *r = &s->rrs[i];
		msgbuf_put(&m, owner ? owner : r->owner, owner ? owner_len : r->owner_len);
		msgbuf_put(&m, r->rest, r->rest_len);
	}
	if (soa != NULL && soa->soa != NULL)
		msgbuf_put(&m, soa->soa, soa->soa_len);
	if (m.oom) {
		free(m.p);
		return LOCAL_PASS;
	}
	*msg = m.p;
	*len = m.len;
	return LOCAL_ANSWER;
}

/* The records of type (or CNAME) at e: [first, n) in s->rrs; n 0 when none. */
static void pick(const struct lset *s, const struct lname *e, uint16_t type, size_t *first, size_t *n)
{
	*first = 0;
	*n = 0;
	for (uint32_t i = e->first; i < e->first + e->n; i++) {
		if (s->rrs[i].type != type)
			continue;
		if (*n == 0)
			*first = i;
		(*n)++;
	}
}

static enum local_verdict answer_in(const struct local *l, const struct lset *s, const struct wire_query *q,
                                    uint8_t **msg, size_t *len, bool *covered)
{
	/* the deepest zone holding the name */
	const uint8_t *name = q->qname_lc;
	size_t nlen = q->qname_len;
	const struct lzone *z = NULL;
	uint32_t zi = 0;
	for (const uint8_t *p = name;;) {
		size_t plen = nlen - (size_t)(p - name);
		if ((z = zone_find(l, s, p, plen, &zi)) != NULL || plen <= 1)
			break;
		p += 1u + p[0];
	}
	*covered = z != NULL;
	if (z == NULL)
		return LOCAL_PASS;
	enum conf_local_type type = z->cz->type;
	if (type == CONF_LOCAL_ALWAYS_NXDOMAIN)
		return respond(q, WIRE_RCODE_NXDOMAIN, s, 0, 0, NULL, 0, z, msg, len);
	/* redirect: the apex's data answers for every name */
	const uint8_t *at = type == CONF_LOCAL_REDIRECT ? z->name : name;
	size_t at_len = type == CONF_LOCAL_REDIRECT ? z->name_len : nlen;
	const struct lname *e = name_slot(l, s, at, at_len, zi);
	if (!e->used) {
		if (type == CONF_LOCAL_STATIC)
			return respond(q, WIRE_RCODE_NXDOMAIN, s, 0, 0, NULL, 0, z, msg, len);
		if (type == CONF_LOCAL_REFUSE)
			return LOCAL_REFUSED;
		if (type == CONF_LOCAL_TRANSPARENT)
			return LOCAL_PASS;
		return respond(q, WIRE_RCODE_NOERROR, s, 0, 0, NULL, 0, z, msg, len); /* redirect, no apex data */
	}
	const uint8_t *owner = type == CONF_LOCAL_REDIRECT ? q->qname_lc : NULL;
	size_t first, n;
	pick(s, e, q->qtype, &first, &n);
	if (n == 0 && q->qtype != WIRE_TYPE_CNAME)
		pick(s, e, WIRE_TYPE_CNAME, &first, &n);
	if (n > 0)
		return respond(q, WIRE_RCODE_NOERROR, s, first, n, owner, nlen, NULL, msg, len);
	return respond(q, WIRE_RCODE_NOERROR, s, 0, 0, NULL, 0, z, msg, len); /* the name, not the type */
}

enum local_verdict local_answer(const struct local *l, unsigned part, const struct wire_query *q, uint8_t **msg,
                                size_t *len)
{
	if (l == NULL)
		return LOCAL_PASS;
	bool covered = false;
	if (part < l->npart && l->part[part] != NULL) {
		enum local_verdict v = answer_in(l, l->part[part], q, msg, len, &covered);
		if (covered)
			return v; /* the city's zone decides, even to pass (transparent) */
	}
	if (l->global != NULL)
		return answer_in(l, l->global, q, msg, len, &covered);
	return LOCAL_PASS;
}
