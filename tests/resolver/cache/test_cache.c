/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of resolver/cache: lookup/insert/replace, TTLs, flush, byte cap, CLOCK, threads. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "resolver/cache/cache.h"

#define KiB ((size_t)1024)

/* --- helpers --- */

/* What a lookup saw, filled by copy_fn. */
struct seen {
	uint8_t val[4096];
	size_t vlen;
	uint32_t stored_at, expiry;
	bool stale, refresh;
	uint32_t mark;
	int calls;
	int ret; /* copy_fn's return value */
};

static int copy_fn(const uint8_t *val, size_t vlen, const struct cache_hit *hit, void *arg)
{
	struct seen *s = arg;
	assert_true(vlen <= sizeof(s->val));
	memcpy(s->val, val, vlen);
	s->vlen = vlen;
	s->stored_at = hit->stored_at;
	s->expiry = hit->expiry;
	s->stale = hit->stale;
	s->refresh = hit->refresh;
	s->mark = hit->mark;
	s->calls++;
	return s->ret;
}

static int insert_str(struct cache *c, const char *key, const char *val, uint32_t now, uint32_t ttl)
{
	return cache_insert(c, (const uint8_t *)key, strlen(key), (const uint8_t *)val,
			    strlen(val), now, ttl);
}

static int lookup_str(struct cache *c, const char *key, uint32_t now, struct seen *seen)
{
	return cache_lookup(c, (const uint8_t *)key, strlen(key), now, copy_fn, seen);
}

static bool present(struct cache *c, const char *key, uint32_t now)
{
	return cache_lookup(c, (const uint8_t *)key, strlen(key), now, NULL, NULL) >= 0;
}

static struct cache_stats stats_of(struct cache *c)
{
	struct cache_stats st;
	cache_get_stats(c, &st);
	return st;
}

/* Insert with ttl 1000 (outlives every test's clock). */
static int ins_fixed(struct cache *c, const char *key, const uint8_t *val, size_t vlen, uint32_t now)
{
	return cache_insert(c, (const uint8_t *)key, strlen(key), val, vlen, now, 1000);
}

/* Fixed-width key so every entry of a test costs the same bytes. */
static void fmt_key(char *buf, size_t size, const char *prefix, unsigned i)
{
	snprintf(buf, size, "%s%08u", prefix, i);
}

/* --- cache_new arguments --- */

static void test_new_args(void **state)
{
	static const struct {
		size_t max_bytes;
		unsigned nshards;
		bool ok;
		const char *msg;
	} rows[] = {
		{ 1 << 20, 0, true, "0 shards = default" },
		{ 1 << 20, 1, true, "one shard" },
		{ 1 << 20, 64, true, "64 shards" },
		{ 1 << 20, 3, false, "3 is not a power of two" },
		{ 1 << 20, 96, false, "96 is not a power of two" },
		{ (size_t)1 << 30, CACHE_MAX_SHARDS * 2, false, "too many shards" },
		{ 64 * CACHE_MIN_SHARD_BYTES, 64, true, "smallest budget" },
		{ 64 * CACHE_MIN_SHARD_BYTES - 1, 64, false, "budget below the minimum" },
		{ 100, 0, false, "100 bytes with 64 default shards" },
		{ 0, 1, false, "zero bytes" },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		errno = 0;
		struct cache *c = cache_new(rows[i].max_bytes, rows[i].nshards);
		if (rows[i].ok) {
			if (c == NULL)
				fail_msg("row %zu (%s): cache_new failed, errno %d", i, rows[i].msg, errno);
			struct cache_stats st = stats_of(c);
			if (st.max_bytes != rows[i].max_bytes || st.entries != 0 ||
			    st.bytes > st.max_bytes || st.bytes == 0)
				fail_msg("row %zu (%s): fresh stats max %zu entries %zu bytes %zu", i,
					 rows[i].msg, st.max_bytes, st.entries, st.bytes);
		} else if (c != NULL || errno != EINVAL) {
			fail_msg("row %zu (%s): want NULL/EINVAL, got %p errno %d", i, rows[i].msg,
				 (void *)c, errno);
		}
		cache_free(c);
	}
	cache_free(NULL); /* no-op */
}

/* --- insert, lookup, replace --- */

/* A value given in two parts is stored as their concatenation; either part may be empty. */
static void test_insert_parts(void **state)
{
	(void)state;
	struct cache *c = cache_new(1 << 20, 0);
	assert_non_null(c);
	static const struct {
		const char *key, *head, *body, *want;
	} rows[] = {
		{ "both", "\001", "blob-bytes", "\001blob-bytes" },
		{ "head only", "header", "", "header" },
		{ "body only", "", "body", "body" },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		assert_int_equal(cache_insert_parts(c, (const uint8_t *)rows[i].key, strlen(rows[i].key),
						    (const uint8_t *)rows[i].head, strlen(rows[i].head),
						    (const uint8_t *)rows[i].body, strlen(rows[i].body), 100, 60),
				 0);
		struct seen seen = { .ret = 1 };
		assert_int_equal(lookup_str(c, rows[i].key, 110, &seen), 1);
		assert_int_equal(seen.vlen, strlen(rows[i].want));
		assert_memory_equal(seen.val, rows[i].want, seen.vlen);
		assert_int_equal(seen.expiry, 160);
	}
	/* ttl 0 stores nothing, as cache_insert */
	assert_int_equal(cache_insert_parts(c, (const uint8_t *)"k0", 2, (const uint8_t *)"h", 1, (const uint8_t *)"b", 1,
					    100, 0),
			 0);
	assert_false(present(c, "k0", 100));
	cache_free(c);
}

static void test_insert_lookup(void **state)
{
	static const struct {
		const char *key, *val;
		const char *msg;
	} rows[] = {
		{ "www.example.com.", "answer-1", "typical short key" },
		{ "a", "x", "one-byte key and value" },
		{ "ab", "", "empty value" },
		{ "abc", "three", "three-byte key" },
		{ "abcd", "four", "four-byte key" },
		{ "abcdefgh", "eight", "eight-byte key" },
		{ "abcdefghi", "nine", "nine-byte key" },
		{ "abcdefghijklmnop", "sixteen", "sixteen-byte key" },
		{ "abcdefghijklmnopq", "seventeen", "seventeen-byte key" },
		{ "a-rather-long-key.with.many.labels.cdn.example.com.partition-7", "long",
		  "long key" },
	};
	const size_t n = sizeof(rows) / sizeof(rows[0]);
	struct cache *c = cache_new(1 << 20, 0);
	assert_non_null(c);

	for (size_t i = 0; i < n; i++)
		assert_int_equal(insert_str(c, rows[i].key, rows[i].val, 100 + (uint32_t)i, 60), 0);
	/* The empty key is a key too. */
	assert_int_equal(cache_insert(c, NULL, 0, (const uint8_t *)"E", 1, 100, 60), 0);

	for (size_t i = 0; i < n; i++) {
		struct seen seen = { .ret = 7 };
		int r = lookup_str(c, rows[i].key, 120, &seen);
		if (r != 7 || seen.calls != 1)
			fail_msg("row %zu (%s): lookup returned %d, fn called %d times", i,
				 rows[i].msg, r, seen.calls);
		if (seen.vlen != strlen(rows[i].val) || memcmp(seen.val, rows[i].val, seen.vlen) != 0)
			fail_msg("row %zu (%s): wrong value", i, rows[i].msg);
		if (seen.stored_at != 100 + i)
			fail_msg("row %zu (%s): stored_at %u", i, rows[i].msg, seen.stored_at);
	}
	struct seen seen = { 0 };
	assert_int_equal(cache_lookup(c, NULL, 0, 120, copy_fn, &seen), 0);
	assert_int_equal(seen.vlen, 1);
	assert_int_equal(seen.val[0], 'E');

	/* Near misses: prefixes, extensions and one-byte changes of stored keys. */
	static const char *const misses[] = { "www.example.co", "abcdefghijklmnopqr", "abcdefgi",
					      "b", "abcdefghijklmnoP", "zzz" };
	for (size_t i = 0; i < sizeof(misses) / sizeof(misses[0]); i++) {
		struct seen none = { 0 };
		if (lookup_str(c, misses[i], 120, &none) != -ENOENT || none.calls != 0)
			fail_msg("'%s' must miss", misses[i]);
	}

	/* Replace: same key, new value and time; entry count unchanged. */
	struct cache_stats before = stats_of(c);
	assert_int_equal(insert_str(c, "abc", "replaced-value", 200, 60), 0);
	struct seen rep = { 0 };
	assert_int_equal(lookup_str(c, "abc", 201, &rep), 0);
	assert_int_equal(rep.vlen, strlen("replaced-value"));
	assert_memory_equal(rep.val, "replaced-value", rep.vlen);
	assert_int_equal(rep.stored_at, 200);
	struct cache_stats after = stats_of(c);
	assert_int_equal(after.entries, before.entries);
	assert_int_equal(after.replacements, before.replacements + 1);
	assert_int_equal(after.inserts, before.inserts + 1);
	assert_true(after.bytes > before.bytes); /* the value grew by 9 bytes */
	cache_free(c);
}

/* The value handed to fn is 8-aligned whatever the key length. */
static int align_fn(const uint8_t *val, size_t vlen, const struct cache_hit *hit, void *arg)
{
	return (int)((uintptr_t)val % 8);
}

static void test_value_alignment(void **state)
{
	struct cache *c = cache_new(1 << 20, 4);
	assert_non_null(c);
	uint8_t key[40], val[24] = { 0 };
	for (size_t klen = 0; klen < sizeof(key); klen++) {
		memset(key, 'k', klen);
		assert_int_equal(cache_insert(c, key, klen, val, sizeof(val), 1, 10), 0);
		int r = cache_lookup(c, key, klen, 1, align_fn, NULL);
		if (r != 0)
			fail_msg("klen %zu: value misaligned by %d", klen, r);
	}
	cache_free(c);
}

/* --- fn's return value --- */

static void test_fn_return(void **state)
{
	static const struct {
		int ret;
		const char *msg;
	} rows[] = {
		{ 0, "zero" },
		{ 1, "one" },
		{ 12345, "large positive" },
		{ 2147483647, "INT_MAX" },
		{ -EBADMSG, "negative is passed through too" },
	};
	struct cache *c = cache_new(1 << 20, 0);
	assert_non_null(c);
	assert_int_equal(insert_str(c, "k", "v", 5, 5), 0);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct seen seen = { .ret = rows[i].ret };
		int r = lookup_str(c, "k", 6, &seen);
		if (r != rows[i].ret || seen.calls != 1)
			fail_msg("row %zu (%s): got %d", i, rows[i].msg, r);
	}
	/* fn NULL: a hit is 0, a miss still -ENOENT. */
	assert_int_equal(cache_lookup(c, (const uint8_t *)"k", 1, 6, NULL, NULL), 0);
	assert_int_equal(cache_lookup(c, (const uint8_t *)"q", 1, 6, NULL, NULL), -ENOENT);
	/* fn is not called on a miss: its return value can't leak. */
	struct seen seen = { .ret = 99 };
	assert_int_equal(lookup_str(c, "missing", 6, &seen), -ENOENT);
	assert_int_equal(seen.calls, 0);
	cache_free(c);
}

/* --- expiry and ttl 0 --- */

static void test_expiry(void **state)
{
	static const struct {
		uint32_t now, ttl, at;
		bool hit;
		const char *msg;
	} rows[] = {
		{ 1000, 10, 1000, true, "same second" },
		{ 1000, 10, 1009, true, "last live second" },
		{ 1000, 10, 1010, false, "now == now+ttl is expired" },
		{ 1000, 10, 5000, false, "long past" },
		{ 1000, 1, 1000, true, "ttl 1, same second" },
		{ 1000, 1, 1001, false, "ttl 1, next second" },
		{ 0, 86400, 86399, true, "a day from 0" },
		{ UINT32_MAX - 5, 100, UINT32_MAX - 1, true, "now + ttl saturates, not wraps" },
		{ 7, UINT32_MAX, UINT32_MAX - 1, true, "ttl UINT32_MAX" },
	};
	const size_t n = sizeof(rows) / sizeof(rows[0]);
	struct cache *c = cache_new(1 << 20, 0);
	assert_non_null(c);
	uint64_t want_expired = 0, want_miss = 0, want_hit = 0;
	for (size_t i = 0; i < n; i++) {
		char key[32];
		fmt_key(key, sizeof(key), "exp", (unsigned)i);
		assert_int_equal(insert_str(c, key, "v", rows[i].now, rows[i].ttl), 0);
		int r = cache_lookup(c, (const uint8_t *)key, strlen(key), rows[i].at, NULL, NULL);
		if (rows[i].hit ? r != 0 : r != -ENOENT)
			fail_msg("row %zu (%s): lookup at %u returned %d", i, rows[i].msg, rows[i].at, r);
		if (rows[i].hit) {
			want_hit++;
		} else {
			want_miss++;
			want_expired++;
		}
		struct cache_stats st = stats_of(c);
		if (st.hits != want_hit || st.misses != want_miss || st.expired != want_expired)
			fail_msg("row %zu (%s): hits %" PRIu64 " misses %" PRIu64 " expired %" PRIu64,
				 i, rows[i].msg, st.hits, st.misses, st.expired);
	}

	/* An expired key can be re-inserted and is live again. */
	assert_int_equal(insert_str(c, "again", "old", 10, 5), 0);
	assert_false(present(c, "again", 15));
	assert_int_equal(insert_str(c, "again", "new", 15, 5), 0);
	struct seen seen = { 0 };
	assert_int_equal(lookup_str(c, "again", 16, &seen), 0);
	assert_memory_equal(seen.val, "new", 3);
	/* An expired entry nobody looks up is replaced by a new insert of its key. */
	struct cache_stats st0 = stats_of(c);
	assert_int_equal(insert_str(c, "lazy", "old", 10, 5), 0);
	assert_int_equal(insert_str(c, "lazy", "new", 20, 5), 0);
	struct cache_stats st1 = stats_of(c);
	assert_int_equal(st1.entries, st0.entries + 1);
	assert_int_equal(st1.replacements, st0.replacements + 1);
	cache_free(c);
}

static void test_ttl_zero(void **state)
{
	struct cache *c = cache_new(1 << 20, 0);
	assert_non_null(c);
	struct cache_stats st0 = stats_of(c);
	assert_int_equal(insert_str(c, "zero", "v", 10, 0), 0);
	assert_false(present(c, "zero", 10));
	struct cache_stats st1 = stats_of(c);
	assert_int_equal(st1.inserts, st0.inserts);
	assert_int_equal(st1.entries, 0);
	assert_int_equal(st1.bytes, st0.bytes);

	/* ttl 0 on an existing key neither replaces nor removes it. */
	assert_int_equal(insert_str(c, "kept", "first", 10, 30), 0);
	assert_int_equal(insert_str(c, "kept", "second", 11, 0), 0);
	struct seen seen = { 0 };
	assert_int_equal(lookup_str(c, "kept", 12, &seen), 0);
	assert_memory_equal(seen.val, "first", 5);
	assert_int_equal(stats_of(c).replacements, 0);
	cache_free(c);
}

/* --- flush --- */

static bool prefix_match(const uint8_t *key, size_t klen, void *arg)
{
	const char *prefix = arg;
	size_t n = strlen(prefix);
	return klen >= n && memcmp(key, prefix, n) == 0;
}

static bool suffix_match(const uint8_t *key, size_t klen, void *arg)
{
	const char *suffix = arg;
	size_t n = strlen(suffix);
	return klen >= n && memcmp(key + klen - n, suffix, n) == 0;
}

/* Tag of a test key: its first byte '0'..'3'; anything else is not counted. */
static unsigned digit_tag(const uint8_t *key, size_t klen)
{
	return klen > 0 && key[0] >= '0' && key[0] <= '3' ? (unsigned)(key[0] - '0') : 99;
}

/* Per-tag entries and bytes follow inserts, replacements, evictions and flushes, and add up to the whole. */
static void test_tags(void **state)
{
	(void)state;
	struct cache *c = cache_new(64 * KiB, 4);
	assert_non_null(c);
	assert_int_equal(cache_set_tags(c, 4, digit_tag), 0);
	static uint8_t val[300];
	char key[32], prefix[3] = "0/";
	/* ~5x the cap of distinct keys (evictions), then the last 40 again, larger (replacements) */
	for (unsigned n = 0; n < 2040; n++) {
		unsigned k = n < 2000 ? n : n - 40;
		prefix[0] = (char)('0' + k % 4);
		fmt_key(key, sizeof(key), prefix, k);
		assert_int_equal(cache_insert(c, (const uint8_t *)key, strlen(key), val, n < 2000 ? k % 200 : 250, 1,
		                              1000), 0);
	}
	struct cache_stats st = stats_of(c);
	assert_true(st.evictions > 0 && st.replacements > 0);
	size_t sum_e = 0, sum_b = 0;
	for (unsigned t = 0; t < 4; t++) {
		size_t e, b;
		cache_tag_stats(c, t, &e, &b);
		assert_true(e > 0 && b > 0);
		sum_e += e;
		sum_b += b;
	}
	assert_int_equal(sum_e, st.entries);
	assert_true(sum_b < st.bytes); /* bytes also count the hash tables, which are no tag's */
	assert_int_equal(cache_flush(c, NULL, NULL), st.entries);
	for (unsigned t = 0; t < 4; t++) {
		size_t e, b;
		cache_tag_stats(c, t, &e, &b);
		if (e != 0 || b != 0)
			fail_msg("tag %u: %zu entries, %zu bytes after a flush of everything", t, e, b);
	}
	assert_int_equal(insert_str(c, "x/untagged", "value", 1, 100), 0); /* tag 99: not counted */
	size_t e, b, all_e = 0;
	for (unsigned t = 0; t < 8; t++) { /* 4..7: past ntags, nothing */
		cache_tag_stats(c, t, &e, &b);
		all_e += e;
	}
	assert_int_equal(all_e, 0);
	assert_int_equal(stats_of(c).entries, 1);
	cache_free(c);
}

/* Keys "D/name": D '0'..'3'. The rekey renames 1 -> 2 and 2 -> 1, drops 3, keeps 0. */
static int swap_tags(const uint8_t *key, size_t klen, uint8_t *out, void *arg)
{
	(void)arg;
	if (klen < 2 || key[0] == '0')
		return 0;
	if (key[0] == '3')
		return -1;
	memcpy(out, key, klen);
	out[0] = key[0] == '1' ? '2' : '1';
	return 1;
}

static void test_rekey(void **state)
{
	(void)state;
	struct cache *c = cache_new(256 * KiB, 4);
	assert_non_null(c);
	assert_int_equal(cache_set_tags(c, 4, digit_tag), 0);
	char key[32], val[32];
	for (unsigned i = 0; i < 200; i++) {
		for (char d = '0'; d <= '3'; d++) {
			snprintf(key, sizeof(key), "%c/name%03u", d, i);
			snprintf(val, sizeof(val), "%c-%u", d, i);
			assert_int_equal(insert_str(c, key, val, 10, 100 + i), 0);
		}
	}
	size_t t2e, t2b;
	uint64_t inserts = stats_of(c).inserts;
	size_t dropped = 0;
	struct cache_moves *m = cache_rekey_take(c, swap_tags, NULL, &dropped);
	assert_int_equal(dropped, 200);
	assert_int_equal(stats_of(c).entries, 200); /* only 0's stay while 1's and 2's move */
	/* a fresh answer stored under a key an entry moves to, meanwhile, wins over the moved one */
	assert_int_equal(insert_str(c, "2/name007", "fresh", 50, 100), 0);
	size_t moved = cache_rekey_put(c, m, 60);
	assert_int_equal(moved, 399);
	assert_int_equal(stats_of(c).inserts, inserts + 1); /* moving is not storing */
	struct seen s = { 0 };
	for (unsigned i = 0; i < 200; i++) {
		snprintf(key, sizeof(key), "3/name%03u", i);
		assert_false(present(c, key, 60));
		snprintf(key, sizeof(key), "0/name%03u", i);
		memset(&s, 0, sizeof(s));
		assert_int_equal(lookup_str(c, key, 60, &s), 0);
		snprintf(val, sizeof(val), "0-%u", i);
		assert_memory_equal(s.val, val, strlen(val));
		/* 1's answers are 2's now, with their TTL and age */
		snprintf(key, sizeof(key), "2/name%03u", i);
		memset(&s, 0, sizeof(s));
		assert_int_equal(lookup_str(c, key, 60, &s), 0);
		snprintf(val, sizeof(val), i == 7 ? "fresh" : "1-%u", i);
		if (s.vlen != strlen(val) || memcmp(s.val, val, s.vlen) != 0)
			fail_msg("%s holds '%.*s', want '%s'", key, (int)s.vlen, (const char *)s.val, val);
		if (i != 7) {
			assert_int_equal(s.stored_at, 10);
			assert_int_equal(s.expiry, 10 + 100 + i);
		}
		snprintf(key, sizeof(key), "1/name%03u", i);
		memset(&s, 0, sizeof(s));
		assert_int_equal(lookup_str(c, key, 60, &s), 0);
		snprintf(val, sizeof(val), "2-%u", i);
		assert_memory_equal(s.val, val, strlen(val));
	}
	/* the per-tag counts follow the entries */
	cache_tag_stats(c, 2, &t2e, &t2b);
	assert_int_equal(t2e, 200);
	size_t t3e, t3b;
	cache_tag_stats(c, 3, &t3e, &t3b);
	assert_int_equal(t3e, 0);
	assert_int_equal(t3b, 0);
	assert_int_equal(stats_of(c).entries, 600);
	/* all in one, then take and drop instead of putting back */
	assert_int_equal(cache_rekey(c, swap_tags, NULL, 60, &dropped), 400);
	assert_int_equal(dropped, 0);
	assert_int_equal(stats_of(c).entries, 600);
	m = cache_rekey_take(c, swap_tags, NULL, &dropped);
	assert_int_equal(stats_of(c).entries, 200);
	cache_moves_free(m);
	assert_int_equal(stats_of(c).entries, 200);
	cache_rekey_put(c, NULL, 60); /* NULL is accepted */
	cache_free(c);
}

static void test_flush(void **state)
{
	static const struct {
		const char *prefix;
		unsigned count;
	} groups[] = { { "a/", 100 }, { "b/", 37 }, { "c/", 1 }, { "ab/", 12 } };
	static const struct {
		const char *match; /* NULL = all */
		size_t removed;
		const char *msg;
	} flushes[] = {
		{ "zz/", 0, "no key matches" },
		{ "b/", 37, "one group" },
		{ "b/", 0, "same group again: already gone" },
		{ "a", 112, "prefix 'a' takes a/ and ab/" },
		{ NULL, 1, "all: what is left" },
		{ NULL, 0, "all on an empty cache" },
	};
	struct cache *c = cache_new(4 << 20, 16);
	assert_non_null(c);
	size_t empty_bytes = stats_of(c).bytes;
	char key[32];
	for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
		for (unsigned i = 0; i < groups[g].count; i++) {
			fmt_key(key, sizeof(key), groups[g].prefix, i);
			assert_int_equal(insert_str(c, key, "value", 1, 100), 0);
		}
	assert_int_equal(stats_of(c).entries, 150);

	size_t left = 150;
	for (size_t i = 0; i < sizeof(flushes) / sizeof(flushes[0]); i++) {
		size_t r = flushes[i].match != NULL
				   ? cache_flush(c, prefix_match, (void *)flushes[i].match)
				   : cache_flush(c, NULL, NULL);
		if (r != flushes[i].removed)
			fail_msg("flush %zu (%s): removed %zu, want %zu", i, flushes[i].msg, r,
				 flushes[i].removed);
		left -= r;
		struct cache_stats st = stats_of(c);
		if (st.entries != left)
			fail_msg("flush %zu (%s): %zu entries left, want %zu", i, flushes[i].msg,
				 st.entries, left);
		if (i == 1) { /* b/ gone, a/ still there */
			fmt_key(key, sizeof(key), "b/", 3);
			assert_false(present(c, key, 2));
			fmt_key(key, sizeof(key), "a/", 3);
			assert_true(present(c, key, 2));
		}
	}
	struct cache_stats st = stats_of(c);
	assert_int_equal(st.bytes, empty_bytes); /* only the tables remain */
	assert_int_equal(st.evictions, 0);       /* flushing is not evicting */
	/* The cache still works after being emptied. */
	assert_int_equal(insert_str(c, "after", "v", 3, 10), 0);
	assert_true(present(c, "after", 3));
	cache_free(c);
}

/* --- byte cap and CLOCK eviction --- */

/* Far more than max_bytes goes in; bytes never exceeds the cap. */
static void test_cap(void **state)
{
	static const struct {
		size_t max_bytes;
		unsigned nshards;
		size_t vmax; /* values 0..vmax bytes */
		const char *msg;
	} rows[] = {
		{ 64 * KiB, 1, 200, "one shard, small values" },
		{ 256 * KiB, 64, 300, "64 shards" },
		{ 32 * KiB, 64, 400, "tiny shards (512 B), some values nearly a shard" },
		{ 1 << 20, 16, 3000, "large values" },
		{ 64 * KiB, 4, 0, "empty values: many small entries, tables grow" },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct cache *c = cache_new(rows[i].max_bytes, rows[i].nshards);
		assert_non_null(c);
		static uint8_t val[4096];
		size_t total = 0;
		unsigned long long ok = 0;
		srand(1234);
		for (unsigned k = 0; total < 20 * rows[i].max_bytes; k++) {
			char key[32];
			fmt_key(key, sizeof(key), "cap", k);
			size_t vlen = rows[i].vmax != 0 ? (size_t)rand() % (rows[i].vmax + 1) : 0;
			int r = cache_insert(c, (const uint8_t *)key, strlen(key), val, vlen, 1, 1000);
			if (r != 0 && r != -E2BIG)
				fail_msg("row %zu (%s): insert %u returned %d", i, rows[i].msg, k, r);
			ok += r == 0;
			total += strlen(key) + vlen;
			struct cache_stats st = stats_of(c);
			if (st.bytes > rows[i].max_bytes)
				fail_msg("row %zu (%s): after %u inserts bytes %zu > max %zu", i,
					 rows[i].msg, k, st.bytes, rows[i].max_bytes);
		}
		struct cache_stats st = stats_of(c);
		if (st.evictions == 0 || st.entries == 0 || st.inserts != ok ||
		    st.entries != st.inserts - st.evictions)
			fail_msg("row %zu (%s): entries %zu inserts %" PRIu64 " evictions %" PRIu64,
				 i, rows[i].msg, st.entries, st.inserts, st.evictions);
		/* A full cache uses most of its budget (no runaway over-eviction). */
		if (st.bytes < rows[i].max_bytes / 2)
			fail_msg("row %zu (%s): only %zu of %zu bytes used", i, rows[i].msg, st.bytes,
				 rows[i].max_bytes);
		cache_free(c);
	}
}

/*
 * CLOCK: fill the cache with never-touched ("cold") entries while a small
 * hot set is looked up between inserts, then insert a wave as large as the
 * cache. Hot entries survive; the cold ones the wave displaced don't. The
 * touch=false row is the control: without lookups the hot set is evicted
 * like anything else.
 */
static void test_clock(void **state)
{
	static const struct {
		unsigned nshards;
		size_t max_bytes;
		bool touch;
		unsigned max_cold_pct; /* cold entries allowed to survive the wave */
		unsigned min_hot_pct;  /* hot entries that must survive */
		const char *msg;
	} rows[] = {
		{ 1, 128 * KiB, true, 0, 100, "one shard: exact FIFO among cold" },
		{ 4, 256 * KiB, true, 5, 100, "four shards" },
		{ 64, 1024 * KiB, true, 10, 100, "64 shards: uneven per-shard waves" },
		{ 1, 128 * KiB, false, 0, 0, "control: untouched hot set is evicted" },
	};
	enum { VLEN = 100 };
	static const uint8_t val[VLEN];
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		struct cache *c = cache_new(rows[r].max_bytes, rows[r].nshards);
		assert_non_null(c);
		char key[32];
		/* Cost of one entry, to size the fill. */
		size_t b0 = stats_of(c).bytes;
		assert_int_equal(ins_fixed(c, "prb00000000", val, VLEN, 1), 0);
		size_t charge = stats_of(c).bytes - b0;
		cache_flush(c, NULL, NULL);
		size_t cap_est = rows[r].max_bytes / charge;
		unsigned nhot = (unsigned)(cap_est / 20); /* 5% of the cache */

		for (unsigned h = 0; h < nhot; h++) {
			fmt_key(key, sizeof(key), "hot", h);
			assert_int_equal(ins_fixed(c, key, val, VLEN, 1), 0);
		}
		const unsigned nfill = (unsigned)(3 * cap_est);
		for (unsigned i = 0; i < nfill; i++) {
			fmt_key(key, sizeof(key), "col", i);
			assert_int_equal(ins_fixed(c, key, val, VLEN, 1), 0);
			for (unsigned h = 0; rows[r].touch && h < nhot; h++) {
				fmt_key(key, sizeof(key), "hot", h);
				assert_true(present(c, key, 1));
			}
		}
		struct cache_stats st = stats_of(c);
		assert_true(st.evictions > 0);
		const unsigned wave = (unsigned)st.entries;
		for (unsigned i = 0; i < wave; i++) {
			fmt_key(key, sizeof(key), "new", i);
			assert_int_equal(ins_fixed(c, key, val, VLEN, 2), 0);
			for (unsigned h = 0; rows[r].touch && h < nhot; h++) {
				fmt_key(key, sizeof(key), "hot", h);
				assert_true(present(c, key, 2));
			}
		}
		assert_true(stats_of(c).bytes <= rows[r].max_bytes);
		unsigned hot_alive = 0, cold_alive = 0;
		for (unsigned h = 0; h < nhot; h++) {
			fmt_key(key, sizeof(key), "hot", h);
			hot_alive += present(c, key, 2);
		}
		/* Only the last `wave` cold inserts could have been in the cache before the wave. */
		const unsigned ncold = wave < nfill ? wave : nfill;
		for (unsigned i = nfill - ncold; i < nfill; i++) {
			fmt_key(key, sizeof(key), "col", i);
			cold_alive += present(c, key, 2);
		}
		print_message("clock row %zu (%s): capacity %u entries, hot %u/%u alive, "
			      "cold %u/%u alive\n", r, rows[r].msg, wave, hot_alive, nhot,
			      cold_alive, ncold);
		if (hot_alive * 100 < rows[r].min_hot_pct * nhot)
			fail_msg("row %zu (%s): only %u of %u hot entries survived", r, rows[r].msg,
				 hot_alive, nhot);
		if (!rows[r].touch && hot_alive != 0)
			fail_msg("row %zu (%s): %u untouched hot entries survived", r, rows[r].msg,
				 hot_alive);
		if (cold_alive * 100 > rows[r].max_cold_pct * ncold)
			fail_msg("row %zu (%s): %u of %u cold entries survived", r, rows[r].msg,
				 cold_alive, ncold);
		cache_free(c);
	}
}

/* Expired entries are evicted before live referenced ones. */
static void test_evict_expired_first(void **state)
{
	enum { VLEN = 100 };
	static const uint8_t val[VLEN];
	struct cache *c = cache_new(32 * KiB, 1);
	assert_non_null(c);
	char key[32];
	unsigned n = 0;
	/* Fill exactly: alternate short-lived and long-lived entries, touch all. */
	while (stats_of(c).evictions == 0) {
		fmt_key(key, sizeof(key), "e", n);
		assert_int_equal(cache_insert(c, (const uint8_t *)key, 9, val, VLEN, 1,
					      n % 2 ? 1000 : 5), 0);
		n++;
	}
	for (unsigned i = 0; i < n; i++) {
		fmt_key(key, sizeof(key), "e", i);
		cache_lookup(c, (const uint8_t *)key, 9, 2, NULL, NULL);
	}
	/* At now=10 the ttl-5 ones are dead: new inserts take their room first. */
	unsigned dead = n / 2 - 1;
	for (unsigned i = 0; i < dead; i++) {
		fmt_key(key, sizeof(key), "f", i);
		assert_int_equal(cache_insert(c, (const uint8_t *)key, 9, val, VLEN, 10, 1000), 0);
	}
	unsigned long_alive = 0, long_total = 0;
	for (unsigned i = 1; i < n; i += 2) {
		fmt_key(key, sizeof(key), "e", i);
		long_total++;
		long_alive += present(c, key, 10);
	}
	if (long_alive != long_total)
		fail_msg("%u of %u referenced live entries evicted before expired ones",
			 long_total - long_alive, long_total);
	cache_free(c);
}

/* --- E2BIG and the table shrink path --- */

static void test_e2big(void **state)
{
	const size_t max = 64 * KiB;
	struct cache *c = cache_new(max, 64);
	assert_non_null(c);
	const size_t budget = max / 64;
	const size_t table0 = stats_of(c).bytes / 64; /* each shard's empty table */
	/* Charge of an 8-byte key with no value = header + 8. */
	assert_int_equal(cache_insert(c, (const uint8_t *)"12345678", 8, NULL, 0, 1, 10), 0);
	const size_t hdr8 = stats_of(c).bytes - 64 * table0;
	const size_t vmax = budget - table0 - hdr8; /* largest value that can fit */
	static uint8_t val[1 << 16];
	static const struct {
		size_t klen;
		long vdelta; /* vlen = vmax + vdelta, or absolute when klen != 8 */
		int want;
		const char *msg;
	} rows[] = {
		{ 8, 0, 0, "largest fitting value" },
		{ 8, 1, -E2BIG, "one byte more" },
		{ 8, -300, 0, "comfortably small" },
		{ 8, 1000, -E2BIG, "far too big" },
		{ 70000, 10, -E2BIG, "key longer than CACHE_MAX_KEY" },
	};
	uint8_t key[70000];
	memset(key, 'K', sizeof(key));
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		size_t vlen = rows[i].klen == 8 ? vmax + rows[i].vdelta : (size_t)rows[i].vdelta;
		int r = cache_insert(c, key, rows[i].klen, val, vlen, 1, 10);
		if (r != rows[i].want)
			fail_msg("row %zu (%s): vlen %zu returned %d, want %d", i, rows[i].msg, vlen,
				 r, rows[i].want);
		if (r == 0 && !present(c, "KKKKKKKK", 1))
			fail_msg("row %zu (%s): inserted but not found", i, rows[i].msg);
		if (stats_of(c).bytes > max)
			fail_msg("row %zu (%s): over the cap", i, rows[i].msg);
	}
	/* Key exactly CACHE_MAX_KEY long is fine in a big cache. */
	struct cache *big = cache_new(16 << 20, 1);
	assert_non_null(big);
	assert_int_equal(cache_insert(big, key, CACHE_MAX_KEY, val, 10, 1, 10), 0);
	assert_int_equal(cache_lookup(big, key, CACHE_MAX_KEY, 1, NULL, NULL), 0);
	assert_int_equal(cache_insert(big, key, CACHE_MAX_KEY + 1, val, 10, 1, 10), -E2BIG);
	cache_free(big);
	cache_free(c);
}

/* Many tiny entries grow a shard's table; one value needing the whole budget still fits. */
static void test_shrink_table(void **state)
{
	const size_t max = 8 * KiB;
	struct cache *c = cache_new(max, 1);
	assert_non_null(c);
	const size_t table0 = stats_of(c).bytes;
	assert_int_equal(cache_insert(c, (const uint8_t *)"12345678", 8, NULL, 0, 1, 10), 0);
	const size_t hdr8 = stats_of(c).bytes - table0;
	char key[32];
	for (unsigned i = 0; i < 1000; i++) {
		fmt_key(key, sizeof(key), "", i); /* 8 bytes */
		assert_int_equal(cache_insert(c, (const uint8_t *)key, 8, NULL, 0, 1, 10), 0);
	}
	struct cache_stats st = stats_of(c);
	assert_true(st.bytes <= max);
	/* Bytes - entries * charge = the table, which must have grown. */
	assert_true(st.bytes - st.entries * hdr8 > table0);
	static uint8_t val[8 * KiB];
	const size_t vmax = max - table0 - hdr8;
	assert_int_equal(cache_insert(c, (const uint8_t *)"BIGVALUE", 8, val, vmax, 1, 10), 0);
	st = stats_of(c);
	assert_int_equal(st.entries, 1);
	assert_int_equal(st.bytes, max);
	assert_true(present(c, "BIGVALUE", 1));
	cache_free(c);
}

static void test_reap(void **state)
{
	struct cache *c = cache_new(1024 * KiB, 4);
	assert_non_null(c);
	char key[32];
	for (unsigned i = 0; i < 100; i++) {
		fmt_key(key, sizeof(key), "short", i);
		assert_int_equal(cache_insert(c, (const uint8_t *)key, strlen(key), NULL, 0, 100, 5), 0);
		fmt_key(key, sizeof(key), "long", i);
		assert_int_equal(cache_insert(c, (const uint8_t *)key, strlen(key), NULL, 0, 100, 500), 0);
	}
	assert_int_equal(stats_of(c).entries, 200);
	/* nothing expired yet: nothing reaped */
	assert_int_equal(cache_reap(c, 104, 4), 0);
	/* past the short TTL: a round over every shard frees exactly those, unasked */
	size_t n = 0;
	for (int round = 0; round < 4; round++)
		n += cache_reap(c, 105, 1);
	assert_int_equal(n, 100);
	struct cache_stats st = stats_of(c);
	assert_int_equal(st.entries, 100);
	assert_int_equal(st.evictions, 0);
	fmt_key(key, sizeof(key), "long", 7);
	assert_true(present(c, key, 105));
	cache_free(c);
}

/* --- what a hit reports: age and the refresh (prefetch) claim --- */

static void test_hit_refresh(void **state)
{
	struct cache *c = cache_new(1 << 20, 0);
	assert_non_null(c);
	/* stored at 100 for 100 s: due in its last tenth, 190..199, once */
	assert_int_equal(insert_str(c, "k", "v", 100, 100), 0);
	static const struct {
		uint32_t at;
		bool refresh;
		const char *msg;
	} rows[] = {
		{ 100, false, "just stored" },
		{ 150, false, "half way" },
		{ 189, false, "11 s left of 100: not yet" },
		{ 190, true, "10 s left of 100: due" },
		{ 191, false, "claimed: not again" },
		{ 199, false, "last second: still claimed" },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct seen seen = { 0 };
		assert_int_equal(lookup_str(c, "k", rows[i].at, &seen), 0);
		if (seen.stored_at != 100 || seen.expiry != 200 || seen.stale || seen.refresh != rows[i].refresh)
			fail_msg("row %zu (%s): stored_at %u expiry %u stale %d refresh %d", i, rows[i].msg,
				 seen.stored_at, seen.expiry, seen.stale, seen.refresh);
	}
	/* a lookup without fn claims nothing */
	assert_int_equal(insert_str(c, "nofn", "v", 100, 100), 0);
	assert_int_equal(cache_lookup(c, (const uint8_t *)"nofn", 4, 195, NULL, NULL), 0);
	struct seen seen = { 0 };
	assert_int_equal(lookup_str(c, "nofn", 195, &seen), 0);
	assert_true(seen.refresh);
	/* a replaced entry can be refreshed again */
	assert_int_equal(insert_str(c, "k", "v2", 195, 100), 0);
	seen = (struct seen){ 0 };
	assert_int_equal(lookup_str(c, "k", 285, &seen), 0);
	assert_true(seen.refresh);
	/* lifetimes below CACHE_REFRESH_MIN_TTL are never offered; 10 s is, in its last second */
	assert_int_equal(insert_str(c, "short", "v", 100, CACHE_REFRESH_MIN_TTL - 1), 0);
	for (uint32_t at = 100; at < 100 + CACHE_REFRESH_MIN_TTL - 1; at++) {
		seen = (struct seen){ 0 };
		assert_int_equal(lookup_str(c, "short", at, &seen), 0);
		assert_false(seen.refresh);
	}
	assert_int_equal(insert_str(c, "ten", "v", 100, 10), 0);
	seen = (struct seen){ 0 };
	assert_int_equal(lookup_str(c, "ten", 108, &seen), 0);
	assert_false(seen.refresh);
	assert_int_equal(lookup_str(c, "ten", 109, &seen), 0);
	assert_true(seen.refresh);
	cache_free(c);
}

/* The caller's mark: 0 when stored, set on the live entry it looked at only, gone with a new value or a rekey. */
static int rekey_same(const uint8_t *key, size_t klen, uint8_t *out, void *arg)
{
	memcpy(out, key, klen);
	return 1;
}

static void test_mark(void **state)
{
	struct cache *c = cache_new(1 << 20, 0);
	assert_non_null(c);
	struct seen seen = { 0 };
	assert_int_equal(insert_str(c, "k", "v", 100, 100), 0);
	assert_int_equal(lookup_str(c, "k", 101, &seen), 0);
	assert_int_equal(seen.mark, 0);
	cache_mark(c, (const uint8_t *)"k", 1, 102, seen.expiry, 7);
	assert_int_equal(lookup_str(c, "k", 103, &seen), 0);
	assert_int_equal(seen.mark, 7);
	/* an entry stored since the caller looked (another expiry) keeps its own mark */
	assert_int_equal(insert_str(c, "k", "v2", 104, 100), 0);
	cache_mark(c, (const uint8_t *)"k", 1, 105, 200, 9);
	assert_int_equal(lookup_str(c, "k", 106, &seen), 0);
	assert_int_equal(seen.mark, 0);
	cache_mark(c, (const uint8_t *)"k", 1, 106, seen.expiry, 9);
	assert_int_equal(lookup_str(c, "k", 107, &seen), 0);
	assert_int_equal(seen.mark, 9);
	/* no entry, or a dead one: nothing happens */
	cache_mark(c, (const uint8_t *)"none", 4, 107, 0, 3);
	cache_mark(c, (const uint8_t *)"k", 1, 300, seen.expiry, 3);
	/* a rekey moves the entry but not its mark: the key it was worked out for changed */
	assert_int_equal(insert_str(c, "r", "v", 100, 100), 0);
	assert_int_equal(lookup_str(c, "r", 101, &seen), 0);
	cache_mark(c, (const uint8_t *)"r", 1, 101, seen.expiry, 5);
	cache_rekey(c, rekey_same, NULL, 102, NULL);
	assert_int_equal(lookup_str(c, "r", 103, &seen), 0);
	assert_int_equal(seen.mark, 0);
	cache_free(c);
}

/* --- serve-stale: grace, hold, reaping, and inserts that must not replace --- */

static int reject_fn(const uint8_t *val, size_t vlen, const struct cache_hit *hit, void *arg)
{
	return -EINVAL;
}

static int stale_lookup(struct cache *c, const char *key, uint32_t now, uint32_t hold, struct seen *seen)
{
	return cache_stale(c, (const uint8_t *)key, strlen(key), now, hold, copy_fn, seen);
}

static void test_stale(void **state)
{
	struct cache *c = cache_new(1 << 20, 1);
	assert_non_null(c);
	struct seen seen = { 0 };

	/* no grace (the default): an expired entry is gone, nothing stale */
	assert_int_equal(insert_str(c, "a", "old", 100, 10), 0);
	assert_int_equal(stale_lookup(c, "a", 110, 30, &seen), -ENOENT);
	assert_int_equal(lookup_str(c, "a", 110, &seen), -ENOENT);
	assert_int_equal(stats_of(c).entries, 0);

	cache_set_stale(c, 100);
	assert_int_equal(insert_str(c, "a", "old", 100, 10), 0);
	/* fresh: not stale */
	assert_int_equal(stale_lookup(c, "a", 105, 30, &seen), -ENOENT);
	/* expired: a lookup misses but keeps it */
	assert_int_equal(lookup_str(c, "a", 110, &seen), -ENOENT);
	assert_int_equal(stats_of(c).entries, 1);
	assert_int_equal(cache_reap(c, 150, 1), 0);
	/* fn refusing: no hold */
	assert_int_equal(cache_stale(c, (const uint8_t *)"a", 1, 120, 30, reject_fn, NULL), -EINVAL);
	assert_int_equal(lookup_str(c, "a", 121, &seen), -ENOENT);
	/* found stale and held for 30 s: lookups serve it, marked stale */
	seen = (struct seen){ 0 };
	assert_int_equal(stale_lookup(c, "a", 120, 30, &seen), 0);
	assert_true(seen.stale);
	assert_memory_equal(seen.val, "old", 3);
	for (uint32_t at = 120; at < 150; at += 7) {
		seen = (struct seen){ 0 };
		assert_int_equal(lookup_str(c, "a", at, &seen), 0);
		assert_true(seen.stale);
		assert_false(seen.refresh);
	}
	/* the hold over: a miss again, still kept; another failure holds it again */
	assert_int_equal(lookup_str(c, "a", 150, &seen), -ENOENT);
	assert_int_equal(stats_of(c).entries, 1);
	assert_int_equal(stale_lookup(c, "a", 180, 30, &seen), 0);
	/* never past its grace (expiry 110 + 100): the hold ends at 210, then it is gone */
	assert_int_equal(stale_lookup(c, "a", 200, 30, &seen), 0);
	assert_int_equal(lookup_str(c, "a", 209, &seen), 0);
	assert_int_equal(lookup_str(c, "a", 210, &seen), -ENOENT);
	assert_int_equal(stale_lookup(c, "a", 210, 30, &seen), -ENOENT);
	assert_int_equal(stats_of(c).entries, 0);

	/* reaping keeps entries within their grace, frees them after */
	assert_int_equal(insert_str(c, "b", "v", 100, 10), 0);
	assert_int_equal(insert_str(c, "held", "v", 100, 10), 0);
	assert_int_equal(stale_lookup(c, "held", 205, 30, &seen), 0);
	assert_int_equal(cache_reap(c, 209, 1), 0);
	assert_int_equal(cache_reap(c, 210, 1), 2);

	/* a remembered failure (CACHE_NO_STALE) dies at its expiry */
	assert_int_equal(cache_insert_opt(c, (const uint8_t *)"f", 1, (const uint8_t *)"x", 1, 100, 5,
	                                  CACHE_NO_STALE), 0);
	assert_int_equal(stale_lookup(c, "f", 105, 30, &seen), -ENOENT);
	assert_int_equal(cache_reap(c, 105, 1), 1);

	/* CACHE_NO_REPLACE keeps a fresh or a stale entry, replaces a dead one */
	assert_int_equal(insert_str(c, "k", "answer", 100, 10), 0);
	assert_int_equal(cache_insert_opt(c, (const uint8_t *)"k", 1, (const uint8_t *)"fail", 4, 105, 5,
	                                  CACHE_NO_STALE | CACHE_NO_REPLACE), -EEXIST);
	assert_int_equal(cache_insert_opt(c, (const uint8_t *)"k", 1, (const uint8_t *)"fail", 4, 150, 5,
	                                  CACHE_NO_STALE | CACHE_NO_REPLACE), -EEXIST);
	seen = (struct seen){ 0 };
	assert_int_equal(stale_lookup(c, "k", 150, 30, &seen), 0);
	assert_memory_equal(seen.val, "answer", 6);
	assert_int_equal(cache_insert_opt(c, (const uint8_t *)"k", 1, (const uint8_t *)"fail", 4, 250, 5,
	                                  CACHE_NO_STALE | CACHE_NO_REPLACE), 0);
	/* a plain insert replaces a held entry: fresh again */
	assert_int_equal(insert_str(c, "h", "old", 100, 10), 0);
	assert_int_equal(stale_lookup(c, "h", 120, 30, &seen), 0);
	assert_int_equal(insert_str(c, "h", "new", 125, 10), 0);
	seen = (struct seen){ 0 };
	assert_int_equal(lookup_str(c, "h", 126, &seen), 0);
	assert_false(seen.stale);
	assert_memory_equal(seen.val, "new", 3);

	/* serve-stale turned off: kept entries go, a held one at the end of its hold */
	assert_int_equal(insert_str(c, "s", "v", 300, 10), 0);
	assert_int_equal(insert_str(c, "t", "v", 300, 10), 0);
	assert_int_equal(stale_lookup(c, "t", 311, 30, &seen), 0);
	cache_set_stale(c, 0);
	assert_int_equal(stale_lookup(c, "s", 312, 30, &seen), -ENOENT);
	assert_int_equal(lookup_str(c, "t", 340, &seen), 0);
	assert_int_equal(lookup_str(c, "t", 341, &seen), -ENOENT);
	/* t went at that lookup; s, h and k's failure now */
	assert_int_equal(cache_reap(c, 341, 1), 3);
	assert_int_equal(stats_of(c).entries, 0);
	cache_free(c);
}

/* Stale entries make room before any fresh one. */
static void test_stale_evicted_first(void **state)
{
	enum { VLEN = 200 };
	struct cache *c = cache_new(16 * KiB, 1);
	assert_non_null(c);
	cache_set_stale(c, 86400);
	uint8_t v[VLEN] = { 0 };
	char key[32];
	unsigned n = 0;
	/* fill with entries of ttl 5 (stale at 105), then fresh ones until evictions start */
	for (; stats_of(c).bytes + 2 * (VLEN + 64) < 16 * KiB; n++) {
		fmt_key(key, sizeof(key), "old", n);
		assert_int_equal(cache_insert(c, (const uint8_t *)key, strlen(key), v, VLEN, 100, 5), 0);
	}
	for (unsigned i = 0; i < n; i++) {
		fmt_key(key, sizeof(key), "new", i);
		assert_int_equal(cache_insert(c, (const uint8_t *)key, strlen(key), v, VLEN, 110, 1000), 0);
	}
	for (unsigned i = 0; i < n; i++) {
		fmt_key(key, sizeof(key), "new", i);
		if (!present(c, key, 111))
			fail_msg("fresh entry %u evicted while stale ones were left", i);
	}
	cache_free(c);
}

/* --- stats, scripted --- */

static void test_stats(void **state)
{
	enum op { INS, LOOK, FLUSH };
	static const struct {
		enum op op;
		const char *key;
		uint32_t now, ttl;
		int want;
		const char *msg;
	} script[] = {
		{ INS, "a", 10, 5, 0, "insert a" },
		{ INS, "b", 10, 100, 0, "insert b" },
		{ LOOK, "a", 11, 0, 0, "hit a" },
		{ LOOK, "a", 12, 0, 0, "hit a again" },
		{ LOOK, "c", 12, 0, -ENOENT, "miss c" },
		{ INS, "b", 12, 100, 0, "replace b" },
		{ INS, "z", 12, 0, 0, "ttl 0: no insert" },
		{ LOOK, "a", 15, 0, -ENOENT, "a expired" },
		{ LOOK, "a", 16, 0, -ENOENT, "a gone: plain miss" },
		{ LOOK, "b", 16, 0, 0, "hit b" },
		{ FLUSH, NULL, 0, 0, 1, "flush all" },
		{ LOOK, "b", 16, 0, -ENOENT, "b flushed" },
	};
	const struct cache_stats want = {
		.hits = 3, .misses = 4, .inserts = 3, .replacements = 1, .evictions = 0,
		.expired = 1, .entries = 0,
	};
	struct cache *c = cache_new(1 << 20, 8);
	assert_non_null(c);
	for (size_t i = 0; i < sizeof(script) / sizeof(script[0]); i++) {
		int r;
		switch (script[i].op) {
		case INS:
			r = insert_str(c, script[i].key, "value", script[i].now, script[i].ttl);
			break;
		case LOOK:
			r = cache_lookup(c, (const uint8_t *)script[i].key, strlen(script[i].key),
					 script[i].now, NULL, NULL);
			break;
		default:
			r = (int)cache_flush(c, NULL, NULL);
			break;
		}
		if (r != script[i].want)
			fail_msg("step %zu (%s): got %d, want %d", i, script[i].msg, r, script[i].want);
	}
	struct cache_stats st = stats_of(c);
	if (st.hits != want.hits || st.misses != want.misses || st.inserts != want.inserts ||
	    st.replacements != want.replacements || st.evictions != want.evictions ||
	    st.expired != want.expired || st.entries != want.entries || st.max_bytes != 1 << 20)
		fail_msg("stats: hits %" PRIu64 " misses %" PRIu64 " inserts %" PRIu64
			 " repl %" PRIu64 " evict %" PRIu64 " expired %" PRIu64 " entries %zu",
			 st.hits, st.misses, st.inserts, st.replacements, st.evictions, st.expired,
			 st.entries);
	cache_free(c);
}

/* --- shard distribution --- */

/*
 * The stats are global, so spread is checked through the byte cap: fill a
 * 64-shard cache to ~half of what it can hold. With an even spread (per
 * shard ~100 entries, sd ~10, room for ~200) nothing is evicted; keys piling
 * into a few shards would evict at once. Key families mimic the resolver's
 * keys: near-identical names, differing in one byte or only at the end.
 */
/* Key number i of family `kind` (formats stay literal for -Wformat=2). */
static int spread_key(char *buf, size_t size, int kind, unsigned i)
{
	switch (kind) {
	case 0:
		return snprintf(buf, size, "www%u.example.com.\1\1\1", i);
	case 1:
		return snprintf(buf, size, "cdn.example.com.node-%08u", i);
	case 2:
		return snprintf(buf, size, "%u", i);
	default:
		return snprintf(buf, size,
				"a-very-long-common-prefix.of.several.labels.cdn.example.net.p%u", i);
	}
}

static void test_shard_spread(void **state)
{
	enum { NSHARDS = 64, PER_SHARD = 100, VLEN = 64 };
	static const struct {
		int kind;
		const char *msg;
	} rows[] = {
		{ 0, "counter in the first label" },
		{ 1, "counter at the end" },
		{ 2, "short decimal keys" },
		{ 3, "long common prefix" },
	};
	static const uint8_t val[VLEN];
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		/* Budget per shard: ~2x PER_SHARD entries of this size, plus a table. */
		char key[128];
		spread_key(key, sizeof(key), rows[r].kind, 1000000u);
		size_t charge = 48 + ((strlen(key) + 7) & ~(size_t)7) + VLEN; /* generous estimate */
		size_t budget = 2 * PER_SHARD * charge + 4 * KiB;
		struct cache *c = cache_new(NSHARDS * budget, NSHARDS);
		assert_non_null(c);
		for (unsigned i = 0; i < NSHARDS * PER_SHARD; i++) {
			spread_key(key, sizeof(key), rows[r].kind, i);
			assert_int_equal(cache_insert(c, (const uint8_t *)key, strlen(key), val, VLEN,
						      1, 100), 0);
		}
		struct cache_stats st = stats_of(c);
		if (st.evictions != 0 || st.entries != NSHARDS * PER_SHARD)
			fail_msg("row %zu (%s): %" PRIu64 " evictions at half load: uneven shards",
				 r, rows[r].msg, st.evictions);
		cache_free(c);
	}

	/* Control: the check does respond to overload (3x the per-shard room). */
	static const uint8_t v2[VLEN];
	struct cache *c = cache_new(NSHARDS * (2 * PER_SHARD * (48 + 16 + VLEN) + 4 * KiB), NSHARDS);
	assert_non_null(c);
	for (unsigned i = 0; i < 6 * NSHARDS * PER_SHARD; i++) {
		char key[32];
		fmt_key(key, sizeof(key), "k", i);
		assert_int_equal(ins_fixed(c, key, v2, VLEN, 1), 0);
	}
	assert_true(stats_of(c).evictions > 0);
	cache_free(c);
}

/* --- randomized single-threaded run against a reference model --- */

/*
 * Random inserts (with ttl 0 sometimes), lookups, flushes by predicate and
 * clock ticks over a small key space, checked against a model of what was
 * last stored. Any hit must return exactly the model's live value; in a
 * cache too big to evict, every live model key must hit too.
 */
static void test_model(void **state)
{
	enum { NKEYS = 300, VMAX = 300, STEPS = 200000 };
	static const struct {
		size_t max_bytes;
		unsigned nshards;
		bool exact; /* no eviction possible: presence must match too */
		const char *msg;
	} rows[] = {
		{ 4 << 20, 8, true, "roomy: presence exact" },
		{ 24 * KiB, 4, false, "tight: evictions, hits must still be right" },
		{ 16 * KiB, 1, false, "one tight shard" },
	};
	struct model {
		bool live;
		uint32_t stored_at, expiry;
		size_t vlen;
		uint8_t seed;
	} *m = calloc(NKEYS, sizeof(*m));
	assert_non_null(m);
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		struct cache *c = cache_new(rows[r].max_bytes, rows[r].nshards);
		assert_non_null(c);
		memset(m, 0, NKEYS * sizeof(*m));
		unsigned seed = 4242 + (unsigned)r;
		uint32_t now = 100;
		uint8_t val[VMAX];
		uint64_t hits = 0;
		for (unsigned step = 0; step < STEPS; step++) {
			unsigned k = (unsigned)rand_r(&seed) % NKEYS;
			unsigned op = (unsigned)rand_r(&seed) % 100;
			char key[16];
			fmt_key(key, sizeof(key), "m", k);
			if (op < 45) {
				struct seen seen = { .ret = 1 };
				int ret = lookup_str(c, key, now, &seen);
				bool want_live = m[k].live && now < m[k].expiry;
				if (ret >= 0) {
					hits++;
					if (!want_live)
						fail_msg("row %zu (%s) step %u: hit on dead key %u", r,
							 rows[r].msg, step, k);
					bool same = seen.vlen == m[k].vlen && seen.stored_at == m[k].stored_at;
					for (size_t i = 0; same && i < seen.vlen; i++)
						same = seen.val[i] == (uint8_t)(m[k].seed + i);
					if (!same)
						fail_msg("row %zu (%s) step %u: key %u returned a stale value",
							 r, rows[r].msg, step, k);
				} else if (ret != -ENOENT || (rows[r].exact && want_live)) {
					fail_msg("row %zu (%s) step %u: key %u lookup %d, model live %d", r,
						 rows[r].msg, step, k, ret, want_live);
				}
			} else if (op < 90) {
				size_t vlen = (size_t)rand_r(&seed) % (VMAX + 1);
				uint8_t vs = (uint8_t)rand_r(&seed);
				uint32_t ttl = (uint32_t)rand_r(&seed) % 200; /* 0 = not stored */
				for (size_t i = 0; i < vlen; i++)
					val[i] = (uint8_t)(vs + i);
				int ret = cache_insert(c, (const uint8_t *)key, strlen(key), val, vlen, now,
						       ttl);
				if (ret != 0)
					fail_msg("row %zu (%s) step %u: insert %d", r, rows[r].msg, step, ret);
				if (ttl != 0)
					m[k] = (struct model){ true, now, now + ttl, vlen, vs };
			} else if (op < 91) {
				/* Flush keys ending in digit d: the model forgets them. */
				char d[2] = { (char)('0' + rand_r(&seed) % 10), 0 };
				size_t n = cache_flush(c, suffix_match, d);
				size_t live_before = 0;
				for (unsigned i = 0; i < NKEYS; i++) {
					if (i % 10 == (unsigned)(d[0] - '0') && m[i].live) {
						live_before += now < m[i].expiry;
						m[i].live = false;
					}
				}
				/* Removed = live ones (+ expired not yet reaped); exact when roomy. */
				if (n < (rows[r].exact ? live_before : 0))
					fail_msg("row %zu (%s) step %u: flush removed %zu of %zu live", r,
						 rows[r].msg, step, n, live_before);
			} else {
				now++;
			}
			if (step % 4096 == 0 && stats_of(c).bytes > rows[r].max_bytes)
				fail_msg("row %zu (%s): over the cap", r, rows[r].msg);
		}
		print_message("model row %zu (%s): %" PRIu64 " hits, %" PRIu64 " evictions\n", r,
			      rows[r].msg, hits, stats_of(c).evictions);
		if (hits == 0 || (rows[r].exact && stats_of(c).evictions != 0) ||
		    (!rows[r].exact && stats_of(c).evictions == 0))
			fail_msg("row %zu (%s): the run did not exercise what it should", r,
				 rows[r].msg);
		cache_free(c);
	}
	free(m);
}

/* --- multi-threaded stress --- */

enum { STRESS_THREADS = 4, STRESS_KEYS = 4096, STRESS_VMAX = 600 };

struct stress {
	struct cache *c;
	_Atomic uint32_t now;
	atomic_bool stop;
	_Atomic uint64_t lookups, inserts_ok, hits, corrupt, bad_ret, flushed;
	size_t max_bytes;
	_Atomic unsigned over_cap;
};

struct stress_arg {
	struct stress *st;
	unsigned seed;
	unsigned id;
};

/* Value of key k with length vlen: every byte derived from k, so fn can verify it. */
static void stress_value(uint8_t *v, unsigned k, size_t vlen)
{
	for (size_t i = 0; i < vlen; i++)
		v[i] = (uint8_t)(k * 31 + i);
}

struct stress_check {
	unsigned k;
	bool ok;
};

static int stress_fn(const uint8_t *val, size_t vlen, const struct cache_hit *hit, void *arg)
{
	struct stress_check *chk = arg;
	chk->ok = vlen <= STRESS_VMAX;
	for (size_t i = 0; chk->ok && i < vlen; i++)
		chk->ok = val[i] == (uint8_t)(chk->k * 31 + i);
	return (int)(chk->k & 0xff);
}

static bool stress_match(const uint8_t *key, size_t klen, void *arg)
{
	unsigned mod = *(unsigned *)arg; /* keys end in a digit: flush ~1/8 of them */
	return klen > 0 && key[klen - 1] % 8 == mod;
}

static void *stress_thread(void *p)
{
	struct stress_arg *a = p;
	struct stress *st = a->st;
	uint8_t val[STRESS_VMAX];
	unsigned seed = a->seed;
	uint64_t n = 0;
	while (!atomic_load(&st->stop)) {
		unsigned r = (unsigned)rand_r(&seed);
		unsigned k = (unsigned)rand_r(&seed) % STRESS_KEYS;
		char key[48];
		int klen = snprintf(key, sizeof(key), "stress.example.com.%u", k);
		uint32_t now = atomic_load_explicit(&st->now, memory_order_relaxed);
		unsigned op = r % 1000;
		if (op < 600) {
			struct stress_check chk = { .k = k };
			int ret = cache_lookup(st->c, (uint8_t *)key, (size_t)klen, now, stress_fn, &chk);
			atomic_fetch_add(&st->lookups, 1);
			if (ret >= 0) {
				atomic_fetch_add(&st->hits, 1);
				if (!chk.ok)
					atomic_fetch_add(&st->corrupt, 1);
				if (ret != (int)(k & 0xff))
					atomic_fetch_add(&st->bad_ret, 1);
			} else if (ret != -ENOENT) {
				atomic_fetch_add(&st->bad_ret, 1);
			}
		} else if (op < 999) {
			size_t vlen = (size_t)rand_r(&seed) % (STRESS_VMAX + 1);
			stress_value(val, k, vlen);
			uint32_t ttl = (uint32_t)(r >> 10) % 16; /* 0..15: some ttl 0 */
			int ret = cache_insert(st->c, (uint8_t *)key, (size_t)klen, val, vlen, now, ttl);
			if (ret == 0 && ttl != 0)
				atomic_fetch_add(&st->inserts_ok, 1);
			else if (ret != 0)
				atomic_fetch_add(&st->bad_ret, 1);
		} else {
			unsigned mod = (unsigned)rand_r(&seed) % 8;
			atomic_fetch_add(&st->flushed, cache_flush(st->c, stress_match, &mod));
		}
		if (++n % 1024 == 0) {
			struct cache_stats cs;
			cache_get_stats(st->c, &cs);
			if (cs.bytes > st->max_bytes)
				atomic_fetch_add(&st->over_cap, 1);
		}
	}
	return NULL;
}

static void test_stress(void **state)
{
	static const struct {
		size_t max_bytes;
		unsigned nshards;
		const char *msg;
	} rows[] = {
		{ 256 * KiB, 16, "small cache: constant eviction" },
		{ 4 << 20, 64, "roomy cache: no eviction, TTL churn" },
		{ 64 * KiB, 1, "one shard: every thread on one lock" },
	};
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		struct stress st = { .max_bytes = rows[r].max_bytes };
		st.c = cache_new(rows[r].max_bytes, rows[r].nshards);
		assert_non_null(st.c);
		atomic_init(&st.now, 1);
		pthread_t th[STRESS_THREADS];
		struct stress_arg args[STRESS_THREADS];
		for (unsigned i = 0; i < STRESS_THREADS; i++) {
			args[i] = (struct stress_arg){ .st = &st, .seed = 77 + i * 1000 + (unsigned)r, .id = i };
			assert_int_equal(pthread_create(&th[i], NULL, stress_thread, &args[i]), 0);
		}
		/* ~1 s in total over the rows; the clock ticks 50 times so TTLs expire. */
		for (int t = 0; t < 50; t++) {
			struct timespec ts = { 0, 330 * 1000 * 1000 / 50 };
			nanosleep(&ts, NULL);
			atomic_fetch_add(&st.now, 1);
		}
		atomic_store(&st.stop, true);
		for (unsigned i = 0; i < STRESS_THREADS; i++)
			assert_int_equal(pthread_join(th[i], NULL), 0);

		struct cache_stats cs = stats_of(st.c);
		print_message("stress row %zu (%s): %" PRIu64 " lookups (%" PRIu64 " hits), %" PRIu64
			      " inserts, %" PRIu64 " evictions, %" PRIu64 " expired, %zu entries, "
			      "%zu/%zu bytes\n", r, rows[r].msg, st.lookups, st.hits, st.inserts_ok,
			      cs.evictions, cs.expired, cs.entries, cs.bytes, cs.max_bytes);
		if (st.corrupt != 0 || st.bad_ret != 0 || st.over_cap != 0)
			fail_msg("row %zu (%s): %" PRIu64 " corrupt values, %" PRIu64
				 " bad returns, %u over-cap samples", r, rows[r].msg, st.corrupt,
				 st.bad_ret, st.over_cap);
		if (cs.bytes > cs.max_bytes)
			fail_msg("row %zu (%s): bytes %zu > max %zu", r, rows[r].msg, cs.bytes,
				 cs.max_bytes);
		/* Counters are exact once the threads are joined. */
		if (cs.hits != st.hits || cs.hits + cs.misses != st.lookups ||
		    cs.inserts != st.inserts_ok || st.lookups == 0 || st.inserts_ok == 0)
			fail_msg("row %zu (%s): stats disagree with the threads' own counts", r,
				 rows[r].msg);
		/* Every insert left by eviction, replacement, expiry reaping or flush, or is still here. */
		size_t left = cache_flush(st.c, NULL, NULL);
		if (left != cs.entries)
			fail_msg("row %zu (%s): flush removed %zu, stats said %zu entries", r,
				 rows[r].msg, left, cs.entries);
		if (cs.inserts != cs.replacements + cs.evictions + cs.expired + st.flushed + left)
			fail_msg("row %zu (%s): inserts %" PRIu64 " != replaced %" PRIu64 " + evicted %"
				 PRIu64 " + expired %" PRIu64 " + flushed %" PRIu64 " + left %zu", r,
				 rows[r].msg, cs.inserts, cs.replacements, cs.evictions, cs.expired,
				 (uint64_t)st.flushed, left);
		assert_int_equal(stats_of(st.c).entries, 0);
		cache_free(st.c);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_args),
		cmocka_unit_test(test_insert_lookup),
		cmocka_unit_test(test_insert_parts),
		cmocka_unit_test(test_value_alignment),
		cmocka_unit_test(test_fn_return),
		cmocka_unit_test(test_expiry),
		cmocka_unit_test(test_ttl_zero),
		cmocka_unit_test(test_tags),
		cmocka_unit_test(test_flush),
		cmocka_unit_test(test_rekey),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_clock),
		cmocka_unit_test(test_evict_expired_first),
		cmocka_unit_test(test_e2big),
		cmocka_unit_test(test_shrink_table),
		cmocka_unit_test(test_reap),
		cmocka_unit_test(test_hit_refresh),
		cmocka_unit_test(test_mark),
		cmocka_unit_test(test_stale),
		cmocka_unit_test(test_stale_evicted_first),
		cmocka_unit_test(test_stats),
		cmocka_unit_test(test_shard_spread),
		cmocka_unit_test(test_model),
		cmocka_unit_test(test_stress),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
