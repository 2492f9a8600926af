/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tests of resolver/cache/cache_snap.c: a cache written and loaded back
 * (partitions, ages, expired entries, the cap), and every kind of damaged
 * file refused without inserting anything.
 */
#include <errno.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "conf/conf.h"
#include "partition/partition.h"
#include "resolver/base/clock.h"
#include "resolver/cache/cache.h"
#include "resolver/cache/cache_snap.h"
#include "resolver/view/route.h"
#include "tests/fixtures/messages.h"
#include "wire/answer.h"
#include "wire/names.h"

#define WALL 1800000000 /* the file's clock (2027) */
#define MONO 100000     /* the cache's */

static const char *const PLAN_A =
	"partitions:\n"
	"  list:\n"
	"    - { name: nanjing, mapped: 198.51.100.1, prefixes: [ 127.0.1.0/24, 198.51.100.0/26 ] }\n"
	"    - { name: suzhou, mapped: 198.51.100.65, prefixes: [ 127.0.2.0/24, 198.51.100.64/26 ] }\n"
	"    - { name: wuxi, mapped: 198.51.100.129, prefixes: [ 127.0.3.0/24, 198.51.100.128/26 ] }\n";

/* suzhou renumbered (first now), wuxi's mapped address moved, nanjing as it was */
static const char *const PLAN_B =
	"partitions:\n"
	"  list:\n"
	"    - { name: suzhou, mapped: 198.51.100.65, prefixes: [ 127.0.2.0/24, 198.51.100.64/26 ] }\n"
	"    - { name: nanjing, mapped: 198.51.100.1, prefixes: [ 127.0.1.0/24, 198.51.100.0/26 ] }\n"
	"    - { name: wuxi, mapped: 198.51.100.200, prefixes: [ 127.0.3.0/24, 198.51.100.192/26 ] }\n";

static struct conf *load_conf(const char *text)
{
	struct conf *c = NULL;
	unsigned nerr = 0;
	assert_int_equal(conf_load_string(text, strlen(text), "test", NULL, &c, &nerr), 0);
	return c;
}

/* The cache key of name for partition part. */
static size_t key_of(uint8_t *key, unsigned part, const char *name)
{
	uint8_t w[WIRE_MAX_NAME];
	int n = wire_name_from_text(name, w, sizeof(w));
	assert_true(n > 0);
	return route_key_build(key, part, 1, 1, 0, w, (size_t)n);
}

/* An answer value for name: flags 0, then the blob of "name 300 IN A addr". */
static uint8_t *value_of(const char *name, const char *addr, uint32_t ttl, size_t *vlen)
{
	char rr[256];
	snprintf(rr, sizeof(rr), "%s %u IN A %s", name, ttl, addr);
	struct fixture_msg m = { .qname = name, .qtype = 1, .an = { rr } };
	size_t len;
	uint8_t *resp = fixture_message(&m, &len);
	assert_non_null(resp);
	struct wire_limits lim = { .max_ttl = 86400, .max_negative_ttl = 3600 };
	uint8_t *blob;
	size_t blob_len;
	uint32_t life;
	assert_int_equal(wire_answer_prepare(resp, len, &lim, &blob, &blob_len, &life), 0);
	free(resp);
	uint8_t *v = malloc(blob_len + 1);
	v[0] = 0;
	memcpy(v + 1, blob, blob_len);
	free(blob);
	*vlen = blob_len + 1;
	return v;
}

static void put(struct cache *c, unsigned part, const char *name, const char *addr, uint32_t now, uint32_t ttl)
{
	uint8_t key[ROUTE_KEY_MAX];
	size_t klen = key_of(key, part, name), vlen;
	uint8_t *v = value_of(name, addr, ttl, &vlen);
	assert_int_equal(cache_insert(c, key, klen, v, vlen, now, ttl), 0);
	free(v);
}

struct seen {
	uint32_t life;
	uint8_t val[512];
	size_t vlen;
};

static int hit_fn(const uint8_t *val, size_t vlen, const struct cache_hit *hit, void *arg)
{
	struct seen *s = arg;
	s->life = hit->expiry - hit->stored_at;
	s->vlen = vlen < sizeof(s->val) ? vlen : sizeof(s->val);
	memcpy(s->val, val, s->vlen);
	return 0;
}

/* Look name up at now: -1 for a miss, else the entry's lifetime as the cache keeps it (expiry - stored_at). */
static long life_of(struct cache *c, unsigned part, const char *name, uint32_t now)
{
	uint8_t key[ROUTE_KEY_MAX];
	size_t klen = key_of(key, part, name);
	struct seen s = { 0 };
	if (cache_lookup(c, key, klen, now, hit_fn, &s) < 0)
		return -1;
	return (long)s.life;
}

/* Does the value of name hold the 32-bit TTL ttl? */
static bool holds_ttl(struct cache *c, const char *name, uint32_t now, uint32_t ttl)
{
	uint8_t key[ROUTE_KEY_MAX];
	size_t klen = key_of(key, PARTITION_COMMON, name);
	struct seen s = { 0 };
	assert_int_equal(cache_lookup(c, key, klen, now, hit_fn, &s), 0);
	uint8_t t[4] = { (uint8_t)(ttl >> 24), (uint8_t)(ttl >> 16), (uint8_t)(ttl >> 8), (uint8_t)ttl };
	return memmem(s.val, s.vlen, t, 4) != NULL;
}

/* The written snapshot of c (at WALL, MONO) in memory. */
static uint8_t *snap_of(struct cache *c, const struct conf *conf, size_t *len, struct cache_snap_result *r)
{
	char path[] = "/tmp/partdns-test-snap-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(cache_snap_write_fd(c, conf, NULL, fd, WALL, MONO, r), 0);
	off_t size = lseek(fd, 0, SEEK_END);
	assert_true(size > 0);
	uint8_t *buf = malloc((size_t)size);
	assert_int_equal(pread(fd, buf, (size_t)size, 0), size);
	close(fd);
	assert_int_equal((uint64_t)size, r->bytes);
	*len = (size_t)size;
	return buf;
}

static size_t entries(struct cache *c)
{
	struct cache_stats st;
	cache_get_stats(c, &st);
	return st.entries;
}

/* Written and read back: every entry, its partition by name, its age by the wall clock. */
static void test_round_trip(void **state)
{
	(void)state;
	struct conf *conf = load_conf(PLAN_A);
	struct cache *c = cache_new(4u << 20, 4);
	put(c, PARTITION_COMMON, "www.example.com", "192.0.2.1", MONO - 100, 300); /* 100 s old, 200 left */
	put(c, 1, "video.cdn.test", "203.0.113.1", MONO - 10, 60);
	put(c, 2, "video.cdn.test", "203.0.113.2", MONO - 10, 60);
	put(c, 3, "video.cdn.test", "203.0.113.3", MONO, 60);
	put(c, PARTITION_COMMON, "gone.example.com", "192.0.2.9", MONO - 100, 50); /* expired: not written */
	struct cache_snap_result r;
	size_t len;
	uint8_t *buf = snap_of(c, conf, &len, &r);
	assert_int_equal(r.entries, 4);
	cache_free(c);

	/* loaded 30 s later (wall), into a cache whose clock reads 5000 */
	struct cache *d = cache_new(4u << 20, 4);
	assert_int_equal(cache_snap_load_buf(d, conf, NULL, buf, len, WALL + 30, 5000, &r), 0);
	assert_int_equal(r.entries, 4);
	assert_int_equal(r.refused, 0);
	assert_false(r.file_refused);
	assert_string_equal(r.why, "");
	assert_int_equal(entries(d), 4);
	/* www: stored 130 s ago by now: alive until 170 s from now, lifetime kept */
	assert_int_equal(life_of(d, PARTITION_COMMON, "www.example.com", 5000), 300);
	assert_int_equal(life_of(d, PARTITION_COMMON, "www.example.com", 5000 + 169), 300);
	assert_int_equal(life_of(d, PARTITION_COMMON, "www.example.com", 5000 + 170), -1);
	assert_int_equal(life_of(d, 1, "video.cdn.test", 5000 + 19), 60);
	assert_int_equal(life_of(d, 1, "video.cdn.test", 5000 + 20), -1);
	assert_int_equal(life_of(d, 3, "video.cdn.test", 5000 + 29), 60);
	assert_int_equal(life_of(d, 3, "video.cdn.test", 5000 + 30), -1);
	assert_int_equal(life_of(d, PARTITION_COMMON, "gone.example.com", 5000), -1);
	cache_free(d);

	/* 65 s later: the partitions' entries are gone, www stays */
	d = cache_new(4u << 20, 4);
	assert_int_equal(cache_snap_load_buf(d, conf, NULL, buf, len, WALL + 65, 5000, &r), 0);
	assert_int_equal(r.entries, 1);
	assert_int_equal(r.refused, 3);
	assert_non_null(strstr(r.why, "3 expired entries"));
	cache_free(d);
	free(buf);
	conf_free(conf);
}

/* The cache's clock is younger than an entry's age (the machine restarted): the blob's TTLs say the rest. */
static void test_aged_blob(void **state)
{
	(void)state;
	struct conf *conf = load_conf(PLAN_A);
	struct cache *c = cache_new(4u << 20, 4);
	put(c, PARTITION_COMMON, "www.example.com", "192.0.2.1", MONO - 100, 300);
	struct cache_snap_result r;
	size_t len;
	uint8_t *buf = snap_of(c, conf, &len, &r);
	cache_free(c);
	struct cache *d = cache_new(4u << 20, 4);
	assert_int_equal(cache_snap_load_buf(d, conf, NULL, buf, len, WALL + 50, 20, &r), 0); /* aged 150, clock 20 */
	assert_int_equal(r.entries, 1);
	/* the blob was aged by what the clock cannot say (130 s); the cache ages it by the rest */
	assert_true(holds_ttl(d, "www.example.com", 20, 300 - 130));
	assert_false(holds_ttl(d, "www.example.com", 20, 300));
	assert_int_equal(life_of(d, PARTITION_COMMON, "www.example.com", 20 + 149), 20 + 150);
	assert_int_equal(life_of(d, PARTITION_COMMON, "www.example.com", 20 + 150), -1);
	cache_free(d);
	free(buf);
	conf_free(conf);
}

/* A plan change between: the renumbered city follows its name, the moved one loses its answers. */
static void test_plan_change(void **state)
{
	(void)state;
	struct conf *a = load_conf(PLAN_A), *b = load_conf(PLAN_B);
	struct cache *c = cache_new(4u << 20, 4);
	put(c, PARTITION_COMMON, "www.example.com", "192.0.2.1", MONO, 300);
	put(c, 1, "video.cdn.test", "203.0.113.1", MONO, 300); /* nanjing */
	put(c, 2, "video.cdn.test", "203.0.113.2", MONO, 300); /* suzhou */
	put(c, 3, "video.cdn.test", "203.0.113.3", MONO, 300); /* wuxi */
	struct cache_snap_result r;
	size_t len;
	uint8_t *buf = snap_of(c, a, &len, &r);
	cache_free(c);
	struct cache *d = cache_new(4u << 20, 4);
	assert_int_equal(cache_snap_load_buf(d, b, NULL, buf, len, WALL, 5000, &r), 0);
	assert_int_equal(r.entries, 3);
	assert_int_equal(r.refused, 1);
	assert_non_null(strstr(r.why, "whose city changed"));
	assert_non_null(strstr(r.why, "wuxi"));
	assert_null(strstr(r.why, "nanjing"));
	assert_true(life_of(d, PARTITION_COMMON, "www.example.com", 5000) > 0);
	assert_true(life_of(d, 2, "video.cdn.test", 5000) > 0);   /* nanjing, now 2 */
	assert_true(life_of(d, 1, "video.cdn.test", 5000) > 0);   /* suzhou, now 1 */
	assert_int_equal(life_of(d, 3, "video.cdn.test", 5000), -1); /* wuxi moved */
	cache_free(d);
	free(buf);
	conf_free(a);
	conf_free(b);
}

/* More than the cap holds: loaded up to it, the rest counted and said. */
static void test_max_bytes(void **state)
{
	(void)state;
	struct conf *conf = load_conf(PLAN_A);
	struct cache *c = cache_new(8u << 20, 4);
	char name[64];
	for (int i = 0; i < 4000; i++) {
		snprintf(name, sizeof(name), "n%d.example.com", i);
		put(c, PARTITION_COMMON, name, "192.0.2.1", MONO, 300);
	}
	struct cache_snap_result r;
	size_t len;
	uint8_t *buf = snap_of(c, conf, &len, &r);
	assert_int_equal(r.entries, 4000);
	cache_free(c);
	struct cache *d = cache_new(len + len / 16, 4); /* the file fits, the entries (with the cache's overhead) do not */
	assert_int_equal(cache_snap_load_buf(d, conf, NULL, buf, len, WALL, 5000, &r), 0);
	assert_true(r.entries > 100 && r.entries < 4000);
	assert_int_equal(r.entries + r.refused, 4000);
	assert_non_null(strstr(r.why, "past cache.max_bytes"));
	struct cache_stats st;
	cache_get_stats(d, &st);
	assert_int_equal(st.evictions, 0);
	assert_true(st.bytes <= st.max_bytes);
	cache_free(d);
	/* a file larger than the cap: refused whole */
	d = cache_new(len / 2, 4);
	assert_int_equal(cache_snap_load_buf(d, conf, NULL, buf, len, WALL, 5000, &r), -EFBIG);
	assert_true(r.file_refused);
	assert_non_null(strstr(r.why, "larger than cache.max_bytes"));
	assert_int_equal(entries(d), 0);
	cache_free(d);
	free(buf);
	conf_free(conf);
}

/* A small snapshot to damage. */
static uint8_t *small_snap(const struct conf *conf, size_t *len)
{
	struct cache *c = cache_new(4u << 20, 4);
	put(c, PARTITION_COMMON, "www.example.com", "192.0.2.1", MONO, 300);
	put(c, 2, "video.cdn.test", "203.0.113.2", MONO, 300);
	struct cache_snap_result r;
	uint8_t *buf = snap_of(c, conf, len, &r);
	cache_free(c);
	return buf;
}

/* Load buf into a fresh cache: refused (nothing inserted) with a reason. */
static void expect_refused(const struct conf *conf, const uint8_t *buf, size_t len, const char *why)
{
	struct cache *d = cache_new(4u << 20, 4);
	struct cache_snap_result r;
	int rc = cache_snap_load_buf(d, conf, NULL, buf, len, WALL, 5000, &r);
	if (rc == 0 || !r.file_refused || entries(d) != 0 || strstr(r.why, "refused, starting cold: ") != r.why ||
	    (why != NULL && strstr(r.why, why) == NULL))
		fail_msg("len %zu: rc %d, refused %d, %zu entries, why '%s' (expected '%s')", len, rc, r.file_refused,
		         entries(d), r.why, why ? why : "");
	cache_free(d);
}

/* Fix the trailer's checksum after a change, so the parse behind it is what is tested. */
static void reseal(uint8_t *buf, size_t len)
{
	uint64_t s = cache_snap_checksum(buf, len - 8);
	for (int i = 0; i < 8; i++)
		buf[len - 8 + i] = (uint8_t)(s >> (56 - 8 * i));
}

static void test_truncated(void **state)
{
	(void)state;
	struct conf *conf = load_conf(PLAN_A);
	size_t len;
	uint8_t *buf = small_snap(conf, &len);
	for (size_t n = 0; n < len; n++) {
		uint8_t *cut = malloc(n ? n : 1); /* its own allocation: ASan sees any read past it */
		memcpy(cut, buf, n);
		expect_refused(conf, cut, n, NULL);
		free(cut);
	}
	free(buf);
	conf_free(conf);
}

static void test_flipped(void **state)
{
	(void)state;
	struct conf *conf = load_conf(PLAN_A);
	size_t len;
	uint8_t *buf = small_snap(conf, &len);
	for (size_t i = 0; i < len; i++) {
		for (int bit = 0; bit < 8; bit += 3) {
			buf[i] ^= (uint8_t)(1u << bit);
			expect_refused(conf, buf, len, NULL);
			buf[i] ^= (uint8_t)(1u << bit);
		}
	}
	/* and with the checksum made right again: the parse refuses, or loads only what checks out */
	for (size_t i = 0; i + 8 < len; i++) {
		uint8_t *copy = malloc(len);
		memcpy(copy, buf, len);
		copy[i] ^= 0x41;
		reseal(copy, len);
		struct cache *d = cache_new(4u << 20, 4);
		struct cache_snap_result r;
		int rc = cache_snap_load_buf(d, conf, NULL, copy, len, WALL, 5000, &r);
		assert_true(rc == 0 || (r.file_refused && entries(d) == 0));
		cache_free(d);
		free(copy);
	}
	free(buf);
	conf_free(conf);
}

static void test_header(void **state)
{
	(void)state;
	struct conf *conf = load_conf(PLAN_A);
	size_t len;
	uint8_t *buf = small_snap(conf, &len);
	uint8_t *b = malloc(len);

	memcpy(b, buf, len);
	b[0] = 'X';
	reseal(b, len);
	expect_refused(conf, b, len, "not a partdns cache snapshot");

	memcpy(b, buf, len);
	b[11] = 2; /* format 2 */
	reseal(b, len);
	expect_refused(conf, b, len, "format version 2, this partdns reads 1");

	memcpy(b, buf, len);
	b[42] ^= 0x01; /* the version string's first byte */
	reseal(b, len);
	expect_refused(conf, b, len, "written by partdns");

	memcpy(b, buf, len);
	b[len - 9] += 1; /* the trailer's count */
	reseal(b, len);
	expect_refused(conf, b, len, "entries where the trailer says");

	memcpy(b, buf, len);
	b[len - 1] ^= 0x80;
	expect_refused(conf, b, len, "checksum mismatch");

	memcpy(b, buf, len);
	b[12] = 0x7f; /* header length past the file */
	reseal(b, len);
	expect_refused(conf, b, len, "header");

	/* huge partition count */
	size_t vlen = ((size_t)buf[40] << 8) | buf[41];
	memcpy(b, buf, len);
	b[42 + vlen] = 0xff;
	reseal(b, len);
	expect_refused(conf, b, len, "partitions");

	/* an entry's value length past the file; its key length past it */
	size_t hlen = ((size_t)buf[12] << 24) | ((size_t)buf[13] << 16) | ((size_t)buf[14] << 8) | buf[15];
	memcpy(b, buf, len);
	b[hlen + 4] = 0xff;
	reseal(b, len);
	expect_refused(conf, b, len, "entry longer than the file");
	memcpy(b, buf, len);
	b[hlen + 2] = 0xff;
	reseal(b, len);
	expect_refused(conf, b, len, "corrupt");

	/* a byte of the first entry's answer changed: caught by the blob's check */
	memcpy(b, buf, len);
	size_t klen = ((size_t)buf[hlen + 2] << 8) | buf[hlen + 3];
	b[hlen + 24 + klen + 1] ^= 0xff; /* the blob's magic */
	reseal(b, len);
	expect_refused(conf, b, len, "bad");

	free(b);
	free(buf);
	conf_free(conf);
}

/* A real file: written to PATH through PATH.tmp, read back; a missing file is -ENOENT, not refused. */
static void test_file(void **state)
{
	(void)state;
	struct conf *conf = load_conf(PLAN_A);
	char dir[] = "/tmp/partdns-test-snapdir-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[128], tmp[140];
	snprintf(path, sizeof(path), "%s/cache.snap", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	struct cache *c = cache_new(4u << 20, 4);
	put(c, PARTITION_COMMON, "www.example.com", "192.0.2.1", clock_sec(), 300);
	struct cache_snap_result r;
	assert_int_equal(cache_snap_load(c, conf, NULL, path, &r), -ENOENT);
	assert_false(r.file_refused);
	assert_int_equal(cache_snap_write(c, conf, NULL, path, &r), 0);
	assert_int_equal(r.entries, 1);
	assert_int_equal(access(tmp, F_OK), -1);
	struct cache *d = cache_new(4u << 20, 4);
	assert_int_equal(cache_snap_load(d, conf, NULL, path, &r), 0);
	assert_int_equal(r.entries, 1);
	cache_free(d);
	cache_free(c);
	unlink(path);
	rmdir(dir);
	conf_free(conf);
}

/*
 * PARTDNS_WRITE_CORPUS=DIR: write the fuzz target's seeds there (a small
 * snapshot, one with a chain and a failure, one of another plan), for
 * when the format changes.
 */
/* A chain (www.customer.example CNAME video.cdn.test: target, prefix, blob) and a remembered failure. */
static void put_chain_failure(struct cache *c)
{
	/* a chain: www.customer.example CNAME video.cdn.test, its prefix, the blob */
	uint8_t key[ROUTE_KEY_MAX];
	size_t klen = key_of(key, PARTITION_COMMON, "www.customer.example"), blen;
	uint8_t *ans = value_of("www.customer.example", "192.0.2.7", 300, &blen);
	struct fixture_msg pm = { .qname = "www.customer.example", .qtype = 1,
	                          .an = { "www.customer.example 300 IN CNAME video.cdn.test" } };
	size_t plen;
	uint8_t *prefix = fixture_message(&pm, &plen);
	uint8_t target[WIRE_MAX_NAME];
	int tl = wire_name_from_text("video.cdn.test", target, sizeof(target));
	uint8_t head[1024];
	size_t hl = route_value_write_header(head, target, (size_t)tl, prefix, plen);
	assert_int_equal(cache_insert_parts(c, key, klen, head, hl, ans + 1, blen - 1, MONO, 300), 0);
	/* a remembered failure */
	struct wire_ede ede = { 22, "no reachable authority" };
	uint8_t fv[64];
	size_t fl = route_value_write_failure(fv, 2, &ede);
	klen = key_of(key, 1, "dead.example");
	assert_int_equal(cache_insert_opt(c, key, klen, fv, fl, MONO, 5, CACHE_NO_STALE), 0);
	free(ans);
	free(prefix);
}

/* Chains and failures go through the loader's checks as the cache made them. */
static void test_chain_failure(void **state)
{
	(void)state;
	struct conf *conf = load_conf(PLAN_A);
	struct cache *c = cache_new(4u << 20, 4);
	put_chain_failure(c);
	struct cache_snap_result r;
	size_t len;
	uint8_t *buf = snap_of(c, conf, &len, &r);
	assert_int_equal(r.entries, 2);
	cache_free(c);
	struct cache *d = cache_new(4u << 20, 4);
	assert_int_equal(cache_snap_load_buf(d, conf, NULL, buf, len, WALL + 1, 5000, &r), 0);
	assert_int_equal(r.entries, 2);
	assert_int_equal(life_of(d, PARTITION_COMMON, "www.customer.example", 5000), 300);
	assert_int_equal(life_of(d, 1, "dead.example", 5000), 5);
	/* the failure is still never served stale */
	cache_set_stale(d, 86400);
	uint8_t key[ROUTE_KEY_MAX];
	size_t klen = key_of(key, 1, "dead.example");
	assert_int_equal(cache_stale(d, key, klen, 5000 + 10, 30, NULL, NULL), -ENOENT);
	cache_free(d);
	free(buf);
	conf_free(conf);
}

static void dump(struct cache *c, const struct conf *conf, const char *dir, const char *name)
{
	struct cache_snap_result r;
	size_t len;
	uint8_t *buf = snap_of(c, conf, &len, &r);
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	fclose(f);
	free(buf);
}

static void write_corpus(const char *dir)
{
	struct conf *conf = load_conf(PLAN_A);
	struct cache *c = cache_new(4u << 20, 4);
	dump(c, conf, dir, "empty");
	put(c, PARTITION_COMMON, "www.example.com", "192.0.2.1", MONO, 300);
	put(c, 2, "video.cdn.test", "203.0.113.2", MONO, 300);
	dump(c, conf, dir, "small");
	put_chain_failure(c);
	dump(c, conf, dir, "chain-failure");
	/* the same, loaded against the checks of another plan */
	struct conf *b = load_conf(PLAN_B);
	dump(c, b, dir, "plan-b");
	conf_free(b);
	cache_free(c);
	conf_free(conf);
}

int main(void)
{
	const char *corpus = getenv("PARTDNS_WRITE_CORPUS");
	if (corpus != NULL) {
		write_corpus(corpus);
		return 0;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip), cmocka_unit_test(test_aged_blob), cmocka_unit_test(test_plan_change),
		cmocka_unit_test(test_max_bytes),  cmocka_unit_test(test_truncated), cmocka_unit_test(test_flipped),
		cmocka_unit_test(test_header),     cmocka_unit_test(test_file), cmocka_unit_test(test_chain_failure),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
