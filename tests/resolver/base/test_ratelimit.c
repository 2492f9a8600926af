/* SPDX-License-Identifier: BSD-3-Clause */
/* resolver/base/ratelimit.c: token buckets per client group, bursts, refill, grouping by prefix. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <sys/socket.h>

#include "resolver/base/ratelimit.h"

#define SEC 1000000000ull

static unsigned allowed(struct ratelimit *rl, int family, const char *ip, unsigned n, uint64_t now)
{
	uint8_t a[16];
	assert_int_equal(inet_pton(family, ip, a), 1);
	unsigned k = 0;
	for (unsigned i = 0; i < n; i++)
		k += ratelimit_allow(rl, family, a, now);
	return k;
}

static void test_burst_and_refill(void **state)
{
	struct ratelimit *rl = ratelimit_new(100, 32, 64);
	assert_non_null(rl);
	/* a second's worth at once, then nothing */
	assert_int_equal(allowed(rl, AF_INET, "192.0.2.1", 150, 10 * SEC), 100);
	/* half a second later: 50 more */
	assert_int_equal(allowed(rl, AF_INET, "192.0.2.1", 150, 10 * SEC + SEC / 2), 50);
	/* another client is not affected */
	assert_int_equal(allowed(rl, AF_INET, "192.0.2.2", 100, 10 * SEC + SEC / 2), 100);
	/* a long pause refills to the burst, not beyond */
	assert_int_equal(allowed(rl, AF_INET, "192.0.2.1", 500, 100 * SEC), 100);
	ratelimit_free(rl);
}

static void test_grouping(void **state)
{
	struct ratelimit *rl = ratelimit_new(10, 24, 56);
	assert_non_null(rl);
	/* one /24 shares one bucket */
	assert_int_equal(allowed(rl, AF_INET, "198.51.100.1", 6, SEC), 6);
	assert_int_equal(allowed(rl, AF_INET, "198.51.100.200", 6, SEC), 4);
	assert_int_equal(allowed(rl, AF_INET, "198.51.101.1", 6, SEC), 6);
	/* one IPv6 /56 shares one bucket; the next /56 does not */
	assert_int_equal(allowed(rl, AF_INET6, "2001:db8:0:1::1", 8, SEC), 8);
	assert_int_equal(allowed(rl, AF_INET6, "2001:db8:0:ff::2", 8, SEC), 2);
	assert_int_equal(allowed(rl, AF_INET6, "2001:db8:0:100::1", 8, SEC), 8);
	ratelimit_free(rl);
}

static void test_off(void **state)
{
	struct ratelimit *rl = ratelimit_new(0, 32, 64);
	assert_non_null(rl);
	assert_int_equal(allowed(rl, AF_INET, "192.0.2.1", 100000, SEC), 100000);
	ratelimit_free(rl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_burst_and_refill),
		cmocka_unit_test(test_grouping),
		cmocka_unit_test(test_off),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
