/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * EDNS-domain set: every name once in one arena, an open-addressing index of
 * 32-bit offsets with 32-bit hash fingerprints, and the rules interned.
 *
 * A domain costs its record (a 4-byte rule word, a length byte, the name in
 * wire and in text form, padded to 4: 64 bytes for a 27-character name)
 * plus 16..32 bytes of index. A rule is what routing needs beyond the name:
 * the subtree flag (in the record) and the policy with its forward targets,
 * interned once per distinct (policy, targets), which many domains share.
 *
 * A match hands back a struct store_domain rebuilt from the record in
 * thread-local storage (the text name copied, the rule's fields set), so
 * callers keep their type without the set holding a 1.9 KB struct per
 * domain. The text is kept beside the wire form so that a hit costs a copy,
 * not a conversion.
 *
 * A name that is not an entry itself is looked up again only at its
 * suffixes that could be --subtree entries: not shorter than the shortest
 * one, of a length some entry has, and passing a small filter keyed by the
 * suffix's length and first eight bytes (two bits of one 64-bit word per
 * entry, 16 bits per entry: about 2 % of the other suffixes pass). So a
 * name with no enclosing --subtree entry costs one exact lookup and a walk
 * over its labels in cache-resident tables, not an index probe per label.
 *
 * Loading makes two passes over the store: the first counts the records and
 * their bytes, so the arena is allocated once at its final size; the second
 * fills it. The index is built last, from the arena alone. Nothing of the
 * old set is copied and no temporary survives the load: a store change costs
 * the new set plus the interning table while the old set is still in use.
 */
#include "resolver/view/domains.h"
#include "wire/names.h"
#include "wire/wire.h"
#include "util/hash.h"
#include "util/vec.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/*
 * A record in the arena, at a multiple of REC_ALIGN:
 *   u32 meta        rule index << 1 | subtree
 *   u8  len         wire length, 1..255
 *   u8  name[len]   lower-cased wire form
 *   char text[]     the same name as text, NUL-terminated: len bytes, 2 for the root
 * Offsets are kept in REC_ALIGN units, so 32 bits reach 16 GiB; offset 0 is
 * the empty slot, the arena's first REC_ALIGN bytes are never a record.
 */
#define REC_ALIGN 4u
#define REC_HDR 5u
/* Zeros after the last record: a match copies the text in whole chunks of this many bytes. */
#define COPY_CHUNK 32u

struct slot {
	uint32_t fp;  /* the hash's high 32 bits */
	uint32_t off; /* record offset in REC_ALIGN units, 0 = empty */
};

struct irule {
	enum conf_policy policy;
	uint32_t nforward;
	uint32_t first; /* index of the first target in targets */
};

struct domains {
	uint8_t *arena;
	size_t arena_len, arena_cap;
	struct slot *slots; /* a power of two of them, at most half full */
	size_t mask;
	size_t count;
	size_t nsubtree;         /* no --subtree entry: a miss needs no walk up */
	size_t sub_min;          /* the shortest --subtree entry (wire bytes), when nsubtree > 0 */
	uint64_t sub_lens[4];    /* bit k: some --subtree entry is k bytes long (wire) */
	uint64_t sub_sig;        /* the set of --subtree names (domains_subtree_sig); 0: none */
	uint64_t *sub_filter;    /* two bits per --subtree entry (sub_fp), NULL when none */
	size_t sub_filter_mask;  /* words - 1 */
	struct irule *rules;
	size_t nrules, rules_cap;
	struct conf_addr *targets;
	size_t ntargets, targets_cap;
	struct hash_key key; /* matching runs on query names: a random hash key */
};

/* The struct a match returns, rebuilt per call: one per thread. */
static _Thread_local struct store_domain match_out;

/* Bytes of a name's text with its NUL, from its wire length. */
static size_t text_size(size_t wire_len)
{
	return wire_len > 1 ? wire_len : 2;
}

static size_t rec_size(size_t wire_len)
{
	return (REC_HDR + wire_len + text_size(wire_len) + REC_ALIGN - 1) & ~(size_t)(REC_ALIGN - 1);
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

/* a[0..len) == b[0..len), eight bytes at a time, never reading past len. */
static inline bool name_equal(const uint8_t *a, const uint8_t *b, size_t len)
{
	if (len < 8) {
		for (size_t i = 0; i < len; i++)
			if (a[i] != b[i])
				return false;
		return true;
	}
	for (size_t i = 0; i + 8 < len; i += 8)
		if (rd64(a + i) != rd64(b + i))
			return false;
	return rd64(a + len - 8) == rd64(b + len - 8);
}

struct domains *domains_empty(void)
{
	struct domains *d = calloc(1, sizeof(*d));
	if (d == NULL)
		return NULL;
	hash_key_random(&d->key);
	return d;
}

void domains_free(struct domains *d)
{
	if (d == NULL)
		return;
	free(d->arena);
	free(d->slots);
	free(d->rules);
	free(d->targets);
	free(d->sub_filter);
	free(d);
}

/*
 * Text of a well-formed wire name as conf_name_normalize writes it: labels
 * joined by '.', a final '.', "." for the root. Exact for every name the
 * store accepts (no '.', '\' or byte outside 0x21..0x7e inside a label).
 */
static void name_text(const uint8_t *w, size_t len, char *out)
{
	if (len <= 1) {
		out[0] = '.';
		out[1] = '\0';
		return;
	}
	memcpy(out, w + 1, len - 1);
	for (size_t i = 0; w[i] != 0;) {
		i += (size_t)w[i] + 1;
		out[i - 1] = '.';
	}
	out[len - 1] = '\0';
}

/* ---- loading ---- */

struct loader {
	struct domains *d;
	uint32_t *islots; /* interning: rule index + 1, 0 = empty; a power of two */
	size_t inslots;
};

static bool target_equal(const struct conf_addr *a, const struct conf_addr *b)
{
	return a->len == b->len && a->len <= sizeof(a->ss) && memcmp(&a->ss, &b->ss, a->len) == 0 &&
	       strcmp(a->text, b->text) == 0;
}

static uint64_t rule_hash(const struct domains *d, const struct store_domain *r)
{
	uint8_t buf[2 + STORE_MAX_FORWARD * (sizeof(socklen_t) + sizeof(struct sockaddr_storage) + 64)];
	size_t o = 0;
	buf[o++] = (uint8_t)r->policy;
	buf[o++] = (uint8_t)r->nforward;
	for (size_t i = 0; i < r->nforward; i++) {
		const struct conf_addr *a = &r->forward[i];
		size_t alen = a->len <= sizeof(a->ss) ? a->len : sizeof(a->ss);
		size_t tlen = strnlen(a->text, sizeof(a->text));
		memcpy(buf + o, &a->len, sizeof(a->len));
		o += sizeof(a->len);
		memcpy(buf + o, &a->ss, alen);
		o += alen;
		memcpy(buf + o, a->text, tlen);
		o += tlen;
	}
	return hash_bytes(&d->key, buf, o);
}

static bool rule_equal(const struct domains *d, const struct irule *ir, const struct store_domain *r)
{
	if (ir->policy != r->policy || ir->nforward != r->nforward)
		return false;
	for (size_t i = 0; i < r->nforward; i++)
		if (!target_equal(&d->targets[ir->first + i], &r->forward[i]))
			return false;
	return true;
}

static int intern_grow(struct loader *L)
{
	size_t n = L->inslots ? L->inslots * 2 : 16;
	uint32_t *s = calloc(n, sizeof(*s));
	if (s == NULL)
		return -ENOMEM;
	struct domains *d = L->d;
	for (size_t i = 0; i < d->nrules; i++) {
		const struct irule *ir = &d->rules[i];
		struct store_domain tmp; /* only the hashed fields */
		tmp.policy = ir->policy;
		tmp.nforward = ir->nforward;
		if (ir->nforward > 0)
			memcpy(tmp.forward, &d->targets[ir->first], ir->nforward * sizeof(tmp.forward[0]));
		size_t k = rule_hash(d, &tmp) & (n - 1);
		while (s[k] != 0)
			k = (k + 1) & (n - 1);
		s[k] = (uint32_t)i + 1;
	}
	free(L->islots);
	L->islots = s;
	L->inslots = n;
	return 0;
}

/* The index of r's (policy, targets) among the set's rules, added if new. @return >= 0 or -errno. */
static long intern_rule(struct loader *L, const struct store_domain *r)
{
	struct domains *d = L->d;
	if (r->nforward > STORE_MAX_FORWARD)
		return -EINVAL; /* the store refuses these; never index past forward[] */
	if ((d->nrules + 1) * 2 > L->inslots) {
		int rc = intern_grow(L);
		if (rc != 0)
			return rc;
	}
	size_t mask = L->inslots - 1;
	size_t k = rule_hash(d, r) & mask;
	while (L->islots[k] != 0) {
		size_t i = L->islots[k] - 1;
		if (rule_equal(d, &d->rules[i], r))
			return (long)i;
		k = (k + 1) & mask;
	}
	if (d->nrules >= (UINT32_MAX >> 1))
		return -E2BIG;
	int rc = vec_grow(&d->rules, &d->rules_cap, d->nrules + 1, sizeof(*d->rules), UINT32_MAX >> 1);
	if (rc == 0)
		rc = vec_grow(&d->targets, &d->targets_cap, d->ntargets + r->nforward, sizeof(*d->targets),
		              UINT32_MAX);
	if (rc != 0)
		return rc;
	struct irule *ir = &d->rules[d->nrules];
	ir->policy = r->policy;
	ir->nforward = (uint32_t)r->nforward;
	ir->first = (uint32_t)d->ntargets;
	if (r->nforward > 0) /* targets is NULL until some rule has one */
		memcpy(&d->targets[d->ntargets], r->forward, r->nforward * sizeof(r->forward[0]));
	d->ntargets += r->nforward;
	L->islots[k] = (uint32_t)d->nrules + 1;
	return (long)d->nrules++;
}

struct sizing {
	size_t count, bytes;
};

/* First pass: how many records and an upper bound of their arena bytes. */
static int size_rule(const struct store_domain *rule, void *arg)
{
	struct sizing *z = arg;
	size_t tl = strnlen(rule->name, sizeof(rule->name));
	/* the wire form is at most one byte longer than the text (a length byte per dot, plus the root) */
	size_t wl = tl + 1 > WIRE_MAX_NAME ? WIRE_MAX_NAME : tl + 1; /* and rec_size grows with it */
	z->count++;
	z->bytes += rec_size(wl);
	return 0;
}

static int arena_reserve(struct domains *d, size_t need)
{
	if (need <= d->arena_cap)
		return 0;
	size_t n = d->arena_cap + d->arena_cap / 2;
	if (n < need)
		n = need;
	if (n / REC_ALIGN > UINT32_MAX) {
		if (need / REC_ALIGN > UINT32_MAX)
			return -E2BIG;
		n = need;
	}
	uint8_t *a = realloc(d->arena, n);
	if (a == NULL)
		return -ENOMEM;
	d->arena = a;
	d->arena_cap = n;
	return 0;
}

/* Second pass: one record per domain. */
static int add_rule(const struct store_domain *rule, void *arg)
{
	struct loader *L = arg;
	struct domains *d = L->d;
	if (d->count >= DOMAINS_MAX)
		return -E2BIG;
	/* room for the longest record: the store may have grown since the first pass */
	int rc = arena_reserve(d, d->arena_len + rec_size(WIRE_MAX_NAME));
	if (rc != 0)
		return rc;
	uint8_t *rec = d->arena + d->arena_len;
	uint8_t *w = rec + REC_HDR;
	int n = wire_name_from_text(rule->name, w, WIRE_MAX_NAME);
	if (n <= 0)
		return 0; /* the store validates names; skip anything odd */
	size_t len = (size_t)n;
	wire_name_lower(w, len, w);
	char *text = (char *)w + len;
	name_text(w, len, text);
	if (strcmp(text, rule->name) != 0)
		return 0; /* not normalized: a match could not give its name back */
	long ri = intern_rule(L, rule);
	if (ri < 0)
		return (int)ri;
	uint32_t meta = (uint32_t)ri << 1 | (rule->subtree ? 1u : 0u);
	memcpy(rec, &meta, sizeof(meta));
	rec[4] = (uint8_t)len;
	size_t used = REC_HDR + len + text_size(len);
	memset(rec + used, 0, rec_size(len) - used); /* the padding, for reproducible bytes */
	d->arena_len += rec_size(len);
	if (rule->subtree) {
		/* a sum of fixed-key hashes: the same names give the same value in any set, in any order */
		static const struct hash_key sig_key = { { 0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full,
			                                   0x165667b19e3779f9ull } };
		d->sub_sig = (d->sub_sig + hash_bytes(&sig_key, w, len)) | 1;
		d->sub_lens[len / 64] |= (uint64_t)1 << (len % 64);
		if (d->nsubtree == 0 || len < d->sub_min)
			d->sub_min = len;
		d->nsubtree++;
	}
	d->count++;
	return 0;
}

/* The first eight bytes of a name as a number (fewer for a shorter name, the rest zero). */
static inline uint64_t head8(const uint8_t *p, size_t n)
{
	if (n >= 8)
		return rd64(p);
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* The filter's view of a name: its length and first eight bytes, mixed. Not keyed: a name made to
 * pass it only costs the index probe every suffix of a matching length used to cost. */
static inline uint64_t sub_fp(const uint8_t *name, size_t len)
{
	return hash_mum(head8(name, len) ^ 0x9E3779B97F4A7C15ull, len ^ 0xBF58476D1CE4E5B9ull);
}

static inline bool sub_maybe(const struct domains *d, const uint8_t *name, size_t len)
{
	uint64_t h = sub_fp(name, len);
	uint64_t w = d->sub_filter[(h >> 12) & d->sub_filter_mask];
	return (w >> (h & 63) & w >> ((h >> 6) & 63) & 1) != 0;
}

/* The --subtree filter: 16 bits per entry (a power of two of 64-bit words, at most 2 MiB). */
static int build_filter(struct domains *d)
{
	if (d->nsubtree == 0)
		return 0;
	size_t words = 1;
	while (words * 64 < d->nsubtree * 16 && words < ((size_t)1 << 18))
		words <<= 1;
	d->sub_filter = calloc(words, sizeof(*d->sub_filter));
	if (d->sub_filter == NULL)
		return -ENOMEM;
	d->sub_filter_mask = words - 1;
	for (size_t pos = REC_ALIGN; pos < d->arena_len;) {
		const uint8_t *rec = d->arena + pos;
		size_t len = rec[4];
		if (rd32(rec) & 1) {
			uint64_t h = sub_fp(rec + REC_HDR, len);
			d->sub_filter[(h >> 12) & d->sub_filter_mask] |= (uint64_t)1 << (h & 63) | (uint64_t)1 << ((h >> 6) & 63);
		}
		pos += rec_size(len);
	}
	return 0;
}

static int build_index(struct domains *d)
{
	if (d->count == 0)
		return 0;
	size_t n = 16;
	while (n < d->count * 2)
		n <<= 1;
	d->slots = calloc(n, sizeof(*d->slots));
	if (d->slots == NULL)
		return -ENOMEM;
	d->mask = n - 1;
	for (size_t pos = REC_ALIGN; pos < d->arena_len;) {
		const uint8_t *rec = d->arena + pos;
		size_t len = rec[4];
		uint64_t h = hash_bytes(&d->key, rec + REC_HDR, len);
		size_t s = h & d->mask;
		while (d->slots[s].off != 0)
			s = (s + 1) & d->mask;
		d->slots[s].fp = (uint32_t)(h >> 32);
		d->slots[s].off = (uint32_t)(pos / REC_ALIGN);
		pos += rec_size(len);
	}
	return 0;
}

int domains_load(struct store *s, struct domains **out, uint64_t *version)
{
	struct domains *d = domains_empty();
	if (d == NULL)
		return -ENOMEM;
	struct loader L = { .d = d };
	struct sizing z = { 0, 0 };
	uint64_t v = 0;
	int rc = store_version(s, &v);
	if (rc == 0)
		rc = store_foreach(s, size_rule, &z);
	if (rc == 0 && z.count > DOMAINS_MAX)
		rc = -E2BIG;
	/* one allocation of the final size, plus room for one more longest record (see add_rule) */
	if (rc == 0)
		rc = arena_reserve(d, REC_ALIGN + z.bytes + rec_size(WIRE_MAX_NAME));
	if (rc == 0) {
		memset(d->arena, 0, REC_ALIGN);
		d->arena_len = REC_ALIGN;
		rc = store_foreach(s, add_rule, &L);
	}
	free(L.islots);
	if (rc == 0 && d->arena_cap - d->arena_len > rec_size(WIRE_MAX_NAME) + d->arena_len / 16) {
		/* the store shrank between the passes (or names were skipped): give the rest back */
		uint8_t *a = realloc(d->arena, d->arena_len + COPY_CHUNK);
		if (a != NULL) {
			d->arena = a;
			d->arena_cap = d->arena_len + COPY_CHUNK;
		}
	}
	if (rc == 0)
		rc = arena_reserve(d, d->arena_len + COPY_CHUNK);
	if (rc == 0)
		memset(d->arena + d->arena_len, 0, COPY_CHUNK);
	if (rc == 0 && d->ntargets > 0 && d->ntargets < d->targets_cap) {
		/* when many domains have targets of their own, the doubling's slack matters */
		struct conf_addr *t = realloc(d->targets, d->ntargets * sizeof(*t));
		if (t != NULL) {
			d->targets = t;
			d->targets_cap = d->ntargets;
		}
	}
	if (rc == 0)
		rc = build_index(d);
	if (rc == 0)
		rc = build_filter(d);
	if (rc != 0) {
		domains_free(d);
		return rc;
	}
	if (version)
		*version = v;
	*out = d;
	return 0;
}

/* ---- matching ---- */

static inline __attribute__((always_inline)) const uint8_t *find_hashed(const struct domains *d,
                                                                        const uint8_t *name, size_t len,
                                                                        uint64_t h)
{
	uint32_t fp = (uint32_t)(h >> 32);
	size_t s = h & d->mask;
	for (;;) {
		struct slot sl = d->slots[s];
		if (sl.off == 0)
			return NULL;
		if (sl.fp == fp) {
			const uint8_t *rec = d->arena + (size_t)sl.off * REC_ALIGN;
			if (rec[4] == len && name_equal(rec + REC_HDR, name, len))
				return rec;
		}
		s = (s + 1) & d->mask;
	}
}

static inline __attribute__((always_inline)) const uint8_t *find(const struct domains *d, const uint8_t *name,
                                                                 size_t len)
{
	return find_hashed(d, name, len, hash_bytes(&d->key, name, len));
}

/* The record as the store's struct, in this thread's buffer. */
static inline __attribute__((always_inline)) const struct store_domain *rule_out(const struct domains *d,
                                                                                 const uint8_t *rec)
{
	struct store_domain *out = &match_out;
	uint32_t meta = rd32(rec);
	const struct irule *ir = &d->rules[meta >> 1];
	size_t len = rec[4], tsize = text_size(len);
	const uint8_t *text = rec + REC_HDR + len;
	/* fixed-size chunks (a couple of vector moves each, no rep movs); the bytes
	 * past the NUL come from the next record or the arena's tail of zeros */
	for (size_t o = 0; o < tsize; o += COPY_CHUNK)
		memcpy(out->name + o, text + o, COPY_CHUNK);
	out->subtree = (meta & 1) != 0;
	out->policy = ir->policy;
	out->nforward = ir->nforward;
	if (ir->nforward > 0)
		memcpy(out->forward, &d->targets[ir->first], ir->nforward * sizeof(out->forward[0]));
	return out;
}

static inline __attribute__((always_inline)) const struct store_domain *
match(const struct domains *d, const uint8_t *qname, size_t len, uint64_t *hash)
{
	*hash = 0;
	if (d == NULL || d->count == 0 || len == 0 || len > WIRE_MAX_NAME)
		return NULL;
	uint64_t h = hash_bytes(&d->key, qname, len);
	*hash = h | 1;
	const uint8_t *rec = find_hashed(d, qname, len, h);
	if (rec != NULL)
		return rule_out(d, rec);
	if (d->nsubtree == 0 || len <= d->sub_min)
		return NULL; /* no --subtree entry could enclose the name */
	/* Walk up label by label; probe the index only for suffixes that could be --subtree entries. */
	size_t off = 0;
	while (off < len && qname[off] != 0) {
		off += (size_t)qname[off] + 1;
		if (off >= len)
			break;
		size_t sl = len - off;
		if (sl < d->sub_min)
			break; /* the suffixes left are shorter still */
		if (!(d->sub_lens[sl / 64] >> (sl % 64) & 1) || !sub_maybe(d, qname + off, sl))
			continue;
		rec = find(d, qname + off, sl);
		if (rec != NULL && (rd32(rec) & 1))
			return rule_out(d, rec);
	}
	return NULL;
}

const struct store_domain *domains_match(const struct domains *d, const uint8_t *qname, size_t len)
{
	uint64_t h;
	return match(d, qname, len, &h);
}

const struct store_domain *domains_match_hashed(const struct domains *d, const uint8_t *qname, size_t len,
                                                uint64_t *hash)
{
	return match(d, qname, len, hash);
}

uint64_t domains_subtree_sig(const struct domains *d)
{
	return d ? d->sub_sig : 0;
}

size_t domains_each_subtree(const struct domains *d, void (*fn)(const char *name, void *arg), void *arg)
{
	size_t n = 0;
	if (d == NULL || d->nsubtree == 0)
		return 0;
	for (size_t pos = REC_ALIGN; pos < d->arena_len;) {
		const uint8_t *rec = d->arena + pos;
		size_t len = rec[4];
		if (rd32(rec) & 1) {
			fn((const char *)rec + REC_HDR + len, arg);
			n++;
		}
		pos += rec_size(len);
	}
	return n;
}

size_t domains_count(const struct domains *d)
{
	return d ? d->count : 0;
}
