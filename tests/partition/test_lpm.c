/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of partition/lpm.c, checked against a brute-force reference on random tables. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "partition/lpm.h"
#include "partition/prefix.h"

/* splitmix64: small, seedable, good enough for test data. */
static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static unsigned rnd_below(uint64_t *s, unsigned n)
{
	return (unsigned)(rnd(s) % n);
}

static struct prefix parse(const char *text)
{
	struct prefix p;
	int rc = prefix_parse(text, &p);
	if (rc != 0)
		fail_msg("test bug: cannot parse %s: %s", text, prefix_strerror(rc));
	return p;
}

static const char *fmt(const struct prefix *p, char *buf)
{
	if (prefix_format(p, buf, PREFIX_STRLEN) < 0)
		snprintf(buf, PREFIX_STRLEN, "(family %u len %u)", p->family, p->len);
	return buf;
}

/* The reference: every prefix with its value, searched exhaustively. */
struct ref {
	struct prefix *p;
	uint32_t *v;
	size_t n, cap;
};

static void ref_add(struct ref *r, const struct prefix *p, uint32_t v)
{
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 64;
		r->p = realloc(r->p, r->cap * sizeof(*r->p));
		r->v = realloc(r->v, r->cap * sizeof(*r->v));
		assert_non_null(r->p);
		assert_non_null(r->v);
	}
	r->p[r->n] = *p;
	r->v[r->n] = v;
	r->n++;
}

static void ref_free(struct ref *r)
{
	free(r->p);
	free(r->v);
}

/* Sorted by (family, len, addr) so each length can be binary-searched. */
static int cmp_ref_prefix(const void *a, const void *b)
{
	const struct prefix *x = a, *y = b;
	if (x->family != y->family)
		return x->family - y->family;
	if (x->len != y->len)
		return x->len - y->len;
	return memcmp(x->addr, y->addr, sizeof(x->addr));
}

struct sorted_ref {
	struct prefix *p; /* sorted */
	uint32_t *v;
	size_t n;
};

static int cmp_pair(const void *a, const void *b)
{
	return cmp_ref_prefix(a, b);
}

static void sorted_ref_init(struct sorted_ref *s, const struct ref *r)
{
	/* Sort indices via a combined array (prefix first, so the comparator works). */
	struct pair {
		struct prefix p;
		uint32_t v;
	} *tmp = malloc((r->n ? r->n : 1) * sizeof(*tmp));
	assert_non_null(tmp);
	for (size_t i = 0; i < r->n; i++)
		tmp[i] = (struct pair){ r->p[i], r->v[i] };
	qsort(tmp, r->n, sizeof(*tmp), cmp_pair);
	s->n = r->n;
	s->p = malloc((r->n ? r->n : 1) * sizeof(*s->p));
	s->v = malloc((r->n ? r->n : 1) * sizeof(*s->v));
	assert_non_null(s->p);
	assert_non_null(s->v);
	for (size_t i = 0; i < r->n; i++) {
		s->p[i] = tmp[i].p;
		s->v[i] = tmp[i].v;
	}
	free(tmp);
}

static void sorted_ref_free(struct sorted_ref *s)
{
	free(s->p);
	free(s->v);
}

/* Longest match by trying every length from the longest down. */
static uint32_t ref_lookup(const struct sorted_ref *s, int family, const uint8_t *addr,
                           struct prefix *matched)
{
	struct prefix key;
	prefix_from_addr(&key, family, addr);
	for (int len = (int)prefix_family_bits(family); len >= 0; len--) {
		struct prefix k = key;
		k.len = (uint8_t)len;
		prefix_mask(&k);
		const struct prefix *hit = bsearch(&k, s->p, s->n, sizeof(*s->p), cmp_ref_prefix);
		if (hit != NULL) {
			*matched = *hit;
			return s->v[hit - s->p];
		}
	}
	memset(matched, 0, sizeof(*matched));
	return LPM_NONE;
}

/* A random prefix of family with length len. */
static struct prefix random_prefix(uint64_t *s, int family, unsigned len)
{
	struct prefix p;
	memset(&p, 0, sizeof(p));
	p.family = (uint8_t)family;
	p.len = (uint8_t)len;
	uint64_t a = rnd(s), b = rnd(s);
	memcpy(p.addr, &a, 8);
	memcpy(p.addr + 8, &b, 8);
	prefix_mask(&p);
	return p;
}

/* A random length: realistic (weighted to /16../24, /32../64) or uniform. */
static unsigned random_len(uint64_t *s, int family, int mode)
{
	unsigned bits = prefix_family_bits(family);
	if (mode == 0)
		return rnd_below(s, bits + 1);
	if (family == AF_INET) {
		static const unsigned mix[] = { 8, 12, 14, 16, 16, 17, 18, 19, 20, 20, 21, 22, 22, 23,
		                                24, 24, 24, 24, 25, 26, 28, 30, 32 };
		return mix[rnd_below(s, sizeof(mix) / sizeof(mix[0]))];
	}
	static const unsigned mix6[] = { 16, 20, 24, 28, 29, 32, 32, 36, 40, 44, 48, 48, 48,
	                                 52, 56, 56, 60, 64, 64, 96, 112, 127, 128 };
	return mix6[rnd_below(s, sizeof(mix6) / sizeof(mix6[0]))];
}

/* Some random address inside p. */
static void random_addr_in(uint64_t *s, const struct prefix *p, uint8_t *out)
{
	unsigned bytes = prefix_family_bits(p->family) / 8;
	for (unsigned i = 0; i < bytes; i++)
		out[i] = (uint8_t)rnd(s);
	for (unsigned i = 0; i < bytes; i++) {
		unsigned keep = p->len > i * 8 ? p->len - i * 8 : 0;
		if (keep >= 8)
			out[i] = p->addr[i];
		else if (keep > 0) {
			uint8_t m = (uint8_t)(0xFFu << (8 - keep));
			out[i] = (uint8_t)((p->addr[i] & m) | (out[i] & ~m));
		}
	}
}

/* First (last = false) or last address of p, optionally one step outside it. */
static void edge_addr(const struct prefix *p, bool last, bool outside, uint8_t *out)
{
	unsigned bytes = prefix_family_bits(p->family) / 8;
	memcpy(out, p->addr, bytes);
	if (last) {
		for (unsigned i = 0; i < bytes; i++) {
			unsigned keep = p->len > i * 8 ? p->len - i * 8 : 0;
			if (keep < 8)
				out[i] |= (uint8_t)(0xFFu >> keep);
		}
	}
	if (!outside)
		return;
	/* +1 after the last address, -1 before the first (wrapping at the ends). */
	for (int i = (int)bytes - 1; i >= 0; i--) {
		if (last) {
			if (++out[i] != 0)
				break;
		} else {
			if (out[i]-- != 0)
				break;
		}
	}
}

struct table_spec {
	uint64_t seed;
	size_t n4, n6;
	int len_mode;       /* 0 uniform, 1 realistic */
	unsigned nest_pct;  /* share of prefixes derived from an earlier one */
	unsigned cluster;   /* non-zero: keep most prefixes under a few short roots */
	bool with_default;  /* include /0 for both families */
};

/* Fill t and r with a random table following spec. */
static void make_table(const struct table_spec *spec, struct lpm *t, struct ref *r)
{
	uint64_t s = spec->seed;
	struct prefix roots[8];
	for (int fam = 0; fam < 2; fam++) {
		int family = fam ? AF_INET6 : AF_INET;
		size_t want = fam ? spec->n6 : spec->n4, first = r->n;
		for (int i = 0; i < 8; i++)
			roots[i] = random_prefix(&s, family, fam ? 32 : 12);
		if (spec->with_default) {
			struct prefix d = random_prefix(&s, family, 0);
			uint32_t v = (uint32_t)rnd(&s) >> 1;
			assert_int_equal(lpm_insert(t, &d, v, NULL), 0);
			ref_add(r, &d, v);
		}
		size_t attempts = 0;
		while (r->n - first < want && attempts++ < want * 20) {
			struct prefix p;
			unsigned len = random_len(&s, family, spec->len_mode);
			if (spec->nest_pct && r->n > first && rnd_below(&s, 100) < spec->nest_pct) {
				/* Extend an earlier prefix of this family. */
				const struct prefix *base = &r->p[first + rnd_below(&s, (unsigned)(r->n - first))];
				unsigned bits = prefix_family_bits(family);
				if (base->len == bits)
					continue;
				len = base->len + 1 + rnd_below(&s, bits - base->len);
				uint8_t a[16] = { 0 };
				random_addr_in(&s, base, a);
				prefix_from_addr(&p, family, a);
				p.len = (uint8_t)len;
				prefix_mask(&p);
			} else if (spec->cluster && rnd_below(&s, 100) < spec->cluster) {
				const struct prefix *root = &roots[rnd_below(&s, 8)];
				if (len < root->len)
					len = root->len;
				uint8_t a[16] = { 0 };
				random_addr_in(&s, root, a);
				prefix_from_addr(&p, family, a);
				p.len = (uint8_t)len;
				prefix_mask(&p);
			} else {
				p = random_prefix(&s, family, len);
			}
			/* Values span the whole range except LPM_NONE. */
			uint32_t v = rnd_below(&s, 4) == 0 ? LPM_NONE - 1 - rnd_below(&s, 16) : (uint32_t)rnd(&s) >> 1;
			uint32_t old = 0;
			int rc = lpm_insert(t, &p, v, &old);
			if (rc == -EEXIST)
				continue;
			assert_int_equal(rc, 0);
			ref_add(r, &p, v);
		}
	}
	assert_int_equal(lpm_count(t), r->n);
}

/* Compare lpm against the reference on random, inside and edge addresses. */
static void check_table(const struct table_spec *spec, const struct lpm *t, const struct ref *r,
                        size_t nlookups)
{
	struct sorted_ref sr;
	sorted_ref_init(&sr, r);
	uint64_t s = spec->seed ^ 0xC0FFEEull;
	size_t mismatches = 0;
	for (size_t i = 0; i < nlookups && mismatches < 10; i++) {
		int family = rnd_below(&s, 2) ? AF_INET6 : AF_INET;
		uint8_t a[16] = { 0 };
		unsigned kind = rnd_below(&s, 4);
		if (kind == 0 || r->n == 0) {
			struct prefix any = random_prefix(&s, family, prefix_family_bits(family));
			memcpy(a, any.addr, 16);
		} else {
			const struct prefix *p = &r->p[rnd_below(&s, (unsigned)r->n)];
			family = p->family;
			if (kind == 1)
				random_addr_in(&s, p, a);
			else
				edge_addr(p, rnd_below(&s, 2), kind == 3, a);
		}
		struct prefix want_p, got_p;
		uint32_t want = ref_lookup(&sr, family, a, &want_p);
		uint32_t got = lpm_lookup(t, family, a, &got_p);
		uint32_t got_nomatch = lpm_lookup(t, family, a, NULL);
		if (got != want || got_nomatch != want || !prefix_equal(&got_p, &want_p) ||
		    (want == LPM_NONE && got_p.family != 0)) {
			char as[INET6_ADDRSTRLEN], b1[PREFIX_STRLEN], b2[PREFIX_STRLEN];
			inet_ntop(family, a, as, sizeof(as));
			print_error("seed %llu: lookup %s: got %u (%s), want %u (%s)\n",
			            (unsigned long long)spec->seed, as, got, fmt(&got_p, b1), want,
			            want == LPM_NONE ? "none" : fmt(&want_p, b2));
			mismatches++;
		}
	}
	sorted_ref_free(&sr);
	assert_int_equal(mismatches, 0);
}

static void run_spec(const struct table_spec *spec, size_t nlookups)
{
	struct lpm *t = lpm_new();
	assert_non_null(t);
	struct ref r = { 0 };
	make_table(spec, t, &r);
	assert_int_equal(lpm_build(t), 0);
	check_table(spec, t, &r, nlookups);
	/* Insertion order is kept and readable after build. */
	for (size_t i = 0; i < r.n; i++) {
		struct prefix p;
		assert_int_equal(lpm_get(t, i, &p), r.v[i]);
		assert_true(prefix_equal(&p, &r.p[i]));
	}
	lpm_free(t);
	ref_free(&r);
}

static void test_random_tables(void **state)
{
	(void)state;
	static const size_t sizes[] = { 0, 1, 2, 5, 20, 100, 500, 2000, 6000 };
	for (uint64_t seed = 1; seed <= 72; seed++) {
		struct table_spec spec = {
			.seed = seed,
			.n4 = sizes[seed % 9],
			.n6 = sizes[(seed / 9) % 9],
			.len_mode = (int)(seed % 2),
			.nest_pct = (unsigned)(seed % 3) * 25,
			.cluster = (seed % 4) == 0 ? 70 : 0,
			.with_default = (seed % 5) < 2,
		};
		run_spec(&spec, 6000);
	}
}

static void test_large_table(void **state)
{
	(void)state;
	struct table_spec spec = { .seed = 4242, .n4 = 200000, .n6 = 40000, .len_mode = 1,
	                           .nest_pct = 20, .cluster = 30, .with_default = false };
	run_spec(&spec, 200000);
}

struct lookup_row {
	const char *addr;
	const char *match; /* NULL: no match */
	const char *msg;
};

static void check_rows(const struct lpm *t, const struct lookup_row *rows, size_t n,
                       const struct prefix *table, const uint32_t *values, size_t ntable)
{
	unsigned failures = 0;
	for (size_t i = 0; i < n; i++) {
		struct prefix a = parse(rows[i].addr), got;
		uint32_t v = lpm_lookup(t, a.family, a.addr, &got);
		char b1[PREFIX_STRLEN];
		if (rows[i].match == NULL) {
			if (v != LPM_NONE || got.family != 0) {
				print_error("row %zu (%s): %s matched %s, want none\n", i, rows[i].msg,
				            rows[i].addr, fmt(&got, b1));
				failures++;
			}
			continue;
		}
		struct prefix want = parse(rows[i].match);
		uint32_t want_v = LPM_NONE;
		for (size_t j = 0; j < ntable; j++)
			if (prefix_equal(&table[j], &want))
				want_v = values[j];
		if (v != want_v || !prefix_equal(&got, &want)) {
			print_error("row %zu (%s): %s matched %s value %u, want %s value %u\n", i, rows[i].msg,
			            rows[i].addr, v == LPM_NONE ? "none" : fmt(&got, b1), v, rows[i].match, want_v);
			failures++;
		}
	}
	assert_int_equal(failures, 0);
}

static void test_matched_prefix(void **state)
{
	(void)state;
	static const char *const texts[] = {
		"0.0.0.0/0", "10.0.0.0/8", "10.1.0.0/16", "10.1.2.0/24", "10.1.2.3/32",
		"10.1.2.128/25", "10.1.0.0/17", "192.0.2.0/31", "::/0", "2001:db8::/32",
		"2001:db8::/48", "2001:db8::1/128", "2001:db8:0:ff00::/56", "::ffff:0:0/96",
	};
	enum { N = sizeof(texts) / sizeof(texts[0]) };
	struct prefix table[N];
	uint32_t values[N];
	struct lpm *t = lpm_new();
	assert_non_null(t);
	for (size_t i = 0; i < N; i++) {
		table[i] = parse(texts[i]);
		values[i] = 100 + (uint32_t)i;
		assert_int_equal(lpm_insert(t, &table[i], values[i], NULL), 0);
	}
	assert_int_equal(lpm_build(t), 0);
	static const struct lookup_row rows[] = {
		{ "10.1.2.3", "10.1.2.3/32", "host route wins" },
		{ "10.1.2.4", "10.1.2.0/24", "/24 around the host route" },
		{ "10.1.2.2", "10.1.2.0/24", "just below the host route" },
		{ "10.1.2.127", "10.1.2.0/24", "below the /25" },
		{ "10.1.2.128", "10.1.2.128/25", "first of the /25" },
		{ "10.1.2.255", "10.1.2.128/25", "last of the /25" },
		{ "10.1.3.0", "10.1.0.0/17", "/17 next to the /24" },
		{ "10.1.127.255", "10.1.0.0/17", "last of the /17" },
		{ "10.1.128.0", "10.1.0.0/16", "upper half of the /16" },
		{ "10.2.0.0", "10.0.0.0/8", "/8" },
		{ "11.0.0.0", "0.0.0.0/0", "default route" },
		{ "255.255.255.255", "0.0.0.0/0", "top of the space" },
		{ "192.0.2.1", "192.0.2.0/31", "/31" },
		{ "192.0.2.2", "0.0.0.0/0", "past the /31" },
		{ "2001:db8::1", "2001:db8::1/128", "IPv6 host route" },
		{ "2001:db8::2", "2001:db8::/48", "IPv6 /48" },
		{ "2001:db8:0:ff00::1", "2001:db8:0:ff00::/56", "/56 inside the /48" },
		{ "2001:db8:0:feff:ffff:ffff:ffff:ffff", "2001:db8::/48", "just before the /56" },
		{ "2001:db8:1::", "2001:db8::/32", "IPv6 /32" },
		{ "2001:db9::", "::/0", "IPv6 default" },
		{ "::ffff:10.1.2.3", "::ffff:0:0/96", "IPv4-mapped stays IPv6" },
	};
	check_rows(t, rows, sizeof(rows) / sizeof(rows[0]), table, values, N);
	lpm_free(t);
}

static void test_eexist(void **state)
{
	(void)state;
	struct lpm *t = lpm_new();
	assert_non_null(t);
	struct prefix p = parse("10.0.0.0/8"), p9 = parse("10.0.0.0/9");
	struct prefix d4 = parse("0.0.0.0/0"), d6 = parse("::/0");
	assert_int_equal(lpm_insert(t, &p, 7, NULL), 0);
	uint32_t old = 0;
	assert_int_equal(lpm_insert(t, &p, 8, &old), -EEXIST);
	assert_int_equal(old, 7);
	assert_int_equal(lpm_insert(t, &p, 7, NULL), -EEXIST);
	/* Same address, other length; same zero address, other family: all distinct. */
	assert_int_equal(lpm_insert(t, &p9, 9, NULL), 0);
	assert_int_equal(lpm_insert(t, &d4, 4, NULL), 0);
	assert_int_equal(lpm_insert(t, &d6, 6, NULL), 0);
	old = 0;
	assert_int_equal(lpm_insert(t, &d6, 1, &old), -EEXIST);
	assert_int_equal(old, 6);
	assert_int_equal(lpm_count(t), 4);
	/* Many inserts (hash growth) still detect every duplicate. */
	for (uint32_t i = 0; i < 5000; i++) {
		struct prefix q = { .family = AF_INET6, .len = 64 };
		q.addr[0] = 0x20;
		q.addr[6] = (uint8_t)(i >> 8);
		q.addr[7] = (uint8_t)i;
		assert_int_equal(lpm_insert(t, &q, i, NULL), 0);
	}
	for (uint32_t i = 0; i < 5000; i++) {
		struct prefix q = { .family = AF_INET6, .len = 64 };
		q.addr[0] = 0x20;
		q.addr[6] = (uint8_t)(i >> 8);
		q.addr[7] = (uint8_t)i;
		old = LPM_NONE;
		assert_int_equal(lpm_insert(t, &q, 1, &old), -EEXIST);
		assert_int_equal(old, i);
	}
	assert_int_equal(lpm_count(t), 5004);
	lpm_free(t);
}

static void test_invalid(void **state)
{
	(void)state;
	struct lpm *t = lpm_new();
	assert_non_null(t);
	struct prefix p = parse("10.0.0.0/8");
	assert_int_equal(lpm_insert(t, &p, LPM_NONE, NULL), -EINVAL);
	assert_int_equal(lpm_insert(t, NULL, 1, NULL), -EINVAL);
	assert_int_equal(lpm_insert(NULL, &p, 1, NULL), -EINVAL);
	struct prefix bad = p;
	bad.family = AF_UNIX;
	assert_int_equal(lpm_insert(t, &bad, 1, NULL), -EINVAL);
	bad = p;
	bad.len = 33;
	assert_int_equal(lpm_insert(t, &bad, 1, NULL), -EINVAL);
	bad = p;
	bad.addr[3] = 1; /* host bit */
	assert_int_equal(lpm_insert(t, &bad, 1, NULL), -EINVAL);
	bad = p;
	bad.addr[5] = 1; /* junk past the IPv4 bytes */
	assert_int_equal(lpm_insert(t, &bad, 1, NULL), -EINVAL);
	struct prefix v6 = parse("::/0");
	v6.len = 129;
	assert_int_equal(lpm_insert(t, &v6, 1, NULL), -EINVAL);
	assert_int_equal(lpm_count(t), 0);

	assert_int_equal(lpm_insert(t, &p, 1, NULL), 0);
	/* Before build nothing matches. */
	const uint8_t a[4] = { 10, 1, 2, 3 };
	assert_int_equal(lpm_lookup(t, AF_INET, a, NULL), LPM_NONE);
	assert_int_equal(lpm_build(t), 0);
	assert_int_equal(lpm_build(t), 0);
	assert_int_equal(lpm_lookup(t, AF_INET, a, NULL), 1);
	assert_int_equal(lpm_lookup(t, AF_UNIX, a, NULL), LPM_NONE);
	struct prefix p2 = parse("11.0.0.0/8");
	assert_int_equal(lpm_insert(t, &p2, 2, NULL), -EINVAL);
	assert_int_equal(lpm_count(t), 1);
	assert_int_equal(lpm_get(t, 1, NULL), LPM_NONE);
	assert_int_equal(lpm_lookup(NULL, AF_INET, a, NULL), LPM_NONE);
	assert_int_equal(lpm_build(NULL), -EINVAL);
	lpm_free(t);
	lpm_free(NULL);
}

static void test_empty_and_one_family(void **state)
{
	(void)state;
	const uint8_t a4[4] = { 192, 0, 2, 1 };
	uint8_t a6[16];
	assert_int_equal(inet_pton(AF_INET6, "2001:db8::1", a6), 1);

	struct lpm *t = lpm_new();
	assert_non_null(t);
	assert_int_equal(lpm_count(t), 0);
	struct prefix m;
	memset(&m, 0x55, sizeof(m));
	assert_int_equal(lpm_lookup(t, AF_INET, a4, &m), LPM_NONE);
	assert_int_equal(m.family, 0);
	assert_int_equal(lpm_build(t), 0);
	memset(&m, 0x55, sizeof(m));
	assert_int_equal(lpm_lookup(t, AF_INET, a4, &m), LPM_NONE);
	assert_int_equal(m.family, 0);
	assert_int_equal(m.len, 0);
	assert_int_equal(lpm_lookup(t, AF_INET6, a6, NULL), LPM_NONE);
	assert_true(lpm_memory(t) > 0);
	lpm_free(t);

	/* An IPv6 default route does not match IPv4 addresses, and vice versa. */
	t = lpm_new();
	assert_non_null(t);
	struct prefix d6 = parse("::/0");
	assert_int_equal(lpm_insert(t, &d6, 3, NULL), 0);
	assert_int_equal(lpm_build(t), 0);
	assert_int_equal(lpm_lookup(t, AF_INET6, a6, &m), 3);
	assert_true(prefix_equal(&m, &d6));
	assert_int_equal(lpm_lookup(t, AF_INET, a4, NULL), LPM_NONE);
	lpm_free(t);

	t = lpm_new();
	assert_non_null(t);
	struct prefix d4 = parse("0.0.0.0/0");
	assert_int_equal(lpm_insert(t, &d4, 0, NULL), 0);
	assert_int_equal(lpm_build(t), 0);
	assert_int_equal(lpm_lookup(t, AF_INET, a4, &m), 0);
	assert_true(prefix_equal(&m, &d4));
	assert_int_equal(lpm_lookup(t, AF_INET6, a6, NULL), LPM_NONE);
	lpm_free(t);
}

static void test_memory_grows(void **state)
{
	(void)state;
	struct lpm *t = lpm_new();
	assert_non_null(t);
	size_t empty = lpm_memory(t);
	uint64_t s = 99;
	for (uint32_t i = 0; i < 10000; i++) {
		struct prefix p = random_prefix(&s, AF_INET, 24);
		int rc = lpm_insert(t, &p, i, NULL);
		assert_true(rc == 0 || rc == -EEXIST);
	}
	size_t before = lpm_memory(t);
	assert_true(before > empty + 10000 * sizeof(struct prefix));
	assert_int_equal(lpm_build(t), 0);
	/* The compiled form adds at least the 2^16-entry direct table. */
	assert_true(lpm_memory(t) > (size_t)65536 * 4);
	lpm_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matched_prefix),
		cmocka_unit_test(test_eexist),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_empty_and_one_family),
		cmocka_unit_test(test_memory_grows),
		cmocka_unit_test(test_random_tables),
		cmocka_unit_test(test_large_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
