/* SPDX-License-Identifier: BSD-3-Clause */
/* util/hash.h: keyed hashing; names that collide under the old unkeyed FNV-1a no longer do; util/vec.h caps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/hash.h"
#include "util/vec.h"

/* The hash the in-flight table used before: unkeyed FNV-1a, low 16 bits picking shard and bucket. */
static uint64_t fnv1a(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 1099511628211ULL;
	}
	return h;
}

enum { WANT = 64 };

static void test_old_collisions_spread(void **state)
{
	/* Brute force, as an attacker would: names whose old low 16 bits are equal. */
	static uint16_t count[65536];
	static char names[WANT][32];
	memset(count, 0, sizeof(count));
	const uint16_t target = 0x1234;
	int found = 0;
	char name[32];
	for (unsigned i = 0; found < WANT && i < 50000000u; i++) {
		int n = snprintf(name, sizeof(name), "x%u.victim.example", i);
		if ((uint16_t)fnv1a(name, (size_t)n) == target)
			memcpy(names[found++], name, (size_t)n + 1);
	}
	assert_int_equal(found, WANT);
	/* Under the keyed hash the same names spread over the 65536 buckets. */
	struct hash_key k;
	hash_key_random(&k);
	unsigned worst = 0;
	for (int i = 0; i < WANT; i++) {
		uint16_t b = (uint16_t)hash_bytes(&k, names[i], strlen(names[i]));
		if (++count[b] > worst)
			worst = count[b];
	}
	/* 64 names in 65536 buckets: three in one is already a 1-in-10^5 event */
	if (worst > 3)
		fail_msg("%u of the %d colliding names still share a bucket", worst, WANT);
}

static void test_keys(void **state)
{
	struct hash_key a, b, f1, f2;
	hash_key_random(&a);
	hash_key_random(&b);
	hash_key_fixed(&f1, 42);
	hash_key_fixed(&f2, 42);
	const char *s = "www.example.com";
	assert_int_not_equal(hash_bytes(&a, s, strlen(s)), hash_bytes(&b, s, strlen(s)));
	assert_int_equal(hash_bytes(&f1, s, strlen(s)), hash_bytes(&f2, s, strlen(s)));
	/* every length is hashed, including 0 and the 8/16-byte edges */
	char buf[40] = { 0 };
	uint64_t seen[41];
	for (size_t n = 0; n <= 40; n++) {
		seen[n] = hash_bytes(&f1, buf, n);
		for (size_t m = 0; m < n; m++)
			assert_int_not_equal(seen[m], seen[n]);
	}
}

static void test_vec_cap(void **state)
{
	int *v = NULL;
	size_t cap = 0;
	assert_int_equal(vec_grow(&v, &cap, 10, sizeof(*v), 100), 0);
	assert_true(cap >= 10 && cap <= 100);
	assert_int_equal(vec_grow(&v, &cap, 100, sizeof(*v), 100), 0);
	assert_int_equal(cap, 100);
	assert_int_equal(vec_grow(&v, &cap, 101, sizeof(*v), 100), -E2BIG);
	assert_int_equal(cap, 100); /* unchanged on failure */
	assert_int_equal(vec_grow(&v, &cap, SIZE_MAX / 2, sizeof(*v), SIZE_MAX), -E2BIG);
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_old_collisions_spread),
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_vec_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
