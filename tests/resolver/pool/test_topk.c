/* SPDX-License-Identifier: BSD-3-Clause */
/* The unmatched-network counter (topk.c) and the standby set (standby.c). */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "conf/conf.h"
#include "resolver/view/standby.h"
#include "resolver/pool/topk.h"

static void add4(struct topk *t, const char *ip, unsigned n)
{
	uint8_t a[4];
	assert_int_equal(inet_pton(AF_INET, ip, a), 1);
	for (unsigned i = 0; i < n; i++)
		topk_add(t, AF_INET, a);
}

/* Counts per /24 (hosts of one network add up), /48 for IPv6, merged across threads, busiest first. */
static void test_topk_counts(void **state)
{
	(void)state;
	struct topk *a = topk_new(), *b = topk_new();
	assert_non_null(a);
	assert_non_null(b);
	add4(a, "198.51.100.1", 5);
	add4(a, "198.51.100.200", 2); /* the same /24 */
	add4(b, "198.51.100.7", 3);   /* and again, another thread */
	add4(b, "203.0.113.9", 4);
	uint8_t v6[16];
	assert_int_equal(inet_pton(AF_INET6, "2001:db8:1:2::1", v6), 1);
	topk_add(a, AF_INET6, v6);
	assert_int_equal(inet_pton(AF_INET6, "2001:db8:1:ffff::9", v6), 1); /* same /48 */
	topk_add(b, AF_INET6, v6);
	struct topk_item items[2 * TOPK_SLOTS];
	size_t n = topk_read(a, items, TOPK_SLOTS);
	n += topk_read(b, items + n, TOPK_SLOTS);
	n = topk_merge(items, n);
	assert_int_equal(n, 3);
	assert_int_equal(items[0].family, AF_INET);
	uint8_t want[16] = { 198, 51, 100, 0 };
	assert_memory_equal(items[0].addr, want, 16);
	assert_int_equal(items[0].count, 10);
	assert_int_equal(items[0].error, 0);
	assert_int_equal(items[1].count, 4);
	assert_int_equal(items[2].family, AF_INET6);
	assert_int_equal(items[2].count, 2);
	uint8_t want6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x01 };
	assert_memory_equal(items[2].addr, want6, 16);
	topk_free(a);
	topk_free(b);
}

/* A flood of one-off networks never pushes out a busy one, and the table stays bounded. */
static void test_topk_bounded(void **state)
{
	(void)state;
	struct topk *t = topk_new();
	add4(t, "198.51.100.1", 1000);
	for (unsigned i = 0; i < 200000; i++) {
		uint8_t a[4] = { 10, (uint8_t)(i >> 16), (uint8_t)(i >> 8), 1 };
		topk_add(t, AF_INET, a);
	}
	struct topk_item items[TOPK_SLOTS];
	size_t n = topk_merge(items, topk_read(t, items, TOPK_SLOTS));
	assert_true(n <= TOPK_SLOTS);
	assert_int_equal(items[0].addr[0], 198);
	assert_true(items[0].count >= 1000);
	/* every count is an upper bound whose error says how much may be others' */
	for (size_t i = 0; i < n; i++)
		assert_true(items[i].count > items[i].error);
	topk_free(t);
}

static struct conf *load(const char *yaml)
{
	struct conf *c = NULL;
	assert_int_equal(conf_load_string(yaml, strlen(yaml), "test.yaml", NULL, &c, NULL), 0);
	return c;
}

/* Standby targets: another partition's identities, an address, the key or the record's; nonsense left out. */
static void test_standby_build(void **state)
{
	(void)state;
	struct conf *c = load("partitions:\n  list:\n"
	                      "    - { name: a, mapped: 198.51.100.1, mapped6: \"2001:db8:1::/56\", standby: b, prefixes: [ 10.1.0.0/16 ] }\n"
	                      "    - { name: b, mapped: 198.51.100.2, prefixes: [ 10.2.0.0/16 ] }\n"
	                      "    - { name: c, mapped: 198.51.100.3, prefixes: [ 10.3.0.0/16 ] }\n");
	struct store_standby list[] = {
		{ .partition = "a", .to = "" },             /* its key: b */
		{ .partition = "c", .to = "203.0.113.9" },  /* an address */
		{ .partition = "b", .to = "nowhere" },      /* not a partition nor an address: ignored */
		{ .partition = "gone", .to = "a" },         /* not in the plan: ignored */
	};
	struct standby *s = standby_build(c, list, 4);
	assert_non_null(s);
	assert_int_equal(standby_count(s), 2);
	struct ecs e;
	assert_true(standby_ecs(s, 1, AF_INET, &e)); /* a -> b's /32 */
	assert_int_equal(e.source, 32);
	uint8_t b4[4] = { 198, 51, 100, 2 };
	assert_memory_equal(e.addr, b4, 4);
	assert_true(standby_ecs(s, 1, AF_INET6, &e)); /* b has no mapped6: IPv6 clients send its /32 too */
	assert_int_equal(e.family, ECS_FAMILY_IPV4);
	assert_false(standby_ecs(s, 2, AF_INET, &e));
	assert_true(standby_ecs(s, 3, AF_INET6, &e));
	uint8_t c4[4] = { 203, 0, 113, 9 };
	assert_memory_equal(e.addr, c4, 4);
	const char *to = NULL;
	assert_true(standby_active(s, 1, &to));
	assert_string_equal(to, "b");
	/* the same switch in another set is the same; none vs some is not */
	struct standby *s2 = standby_build(c, list, 1);
	assert_true(standby_same(s, 1, s2, 1));
	assert_false(standby_same(s, 3, s2, 3));
	assert_true(standby_same(NULL, 2, s2, 2));
	standby_free(s);
	standby_free(s2);
	conf_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_topk_counts),
		cmocka_unit_test(test_topk_bounded),
		cmocka_unit_test(test_standby_build),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
