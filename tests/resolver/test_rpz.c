/* SPDX-License-Identifier: BSD-3-Clause */
/* Policy zone triggers as the zone file spells them: which owners are triggers (rpz.c's parser). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "resolver/log.h"
#include "resolver/rpz.h"

/* The triggers one record at owner (relative to rpz.test.) makes: 1, or 0 when it is skipped. */
static long triggers(const char *owner)
{
	char zone[512];
	snprintf(zone, sizeof(zone), "$TTL 60\n@ SOA ns.rpz.test. h.rpz.test. 1 3600 600 86400 60\n%s CNAME .\n", owner);
	FILE *f = fmemopen(zone, strlen(zone), "r");
	assert_non_null(f);
	long n = rpz_zone_check("rpz.test.", f);
	fclose(f);
	return n;
}

static void test_client_ip_triggers(void **state)
{
	(void)state;
	static const struct {
		const char *owner;
		long want;
	} rows[] = {
		/* IPv4: LENGTH then four octets, the last first */
		{ "32.1.2.0.192.rpz-client-ip", 1 },      /* 192.0.2.1/32 */
		{ "24.0.2.0.192.rpz-client-ip", 1 },      /* 192.0.2.0/24 */
		{ "8.0.0.0.10.rpz-client-ip", 1 },        /* 10.0.0.0/8 */
		{ "24.1.2.0.192.rpz-client-ip", 0 },      /* bits past the length: not what it says */
		{ "33.1.2.0.192.rpz-client-ip", 0 },      /* longer than 32 */
		{ "32.256.2.0.192.rpz-client-ip", 0 },    /* not an octet */
		{ "32.2.0.192.rpz-client-ip", 0 },        /* three octets (and no IPv6 either) */
		{ "rpz-client-ip", 0 },                   /* nothing */
		{ "x.1.2.0.192.rpz-client-ip", 0 },       /* no length */
		/* IPv6: LENGTH then groups, the last first, one zz for "::" */
		{ "128.1.zz.db8.2001.rpz-client-ip", 1 }, /* 2001:db8::1 */
		{ "64.zz.db8.2001.rpz-client-ip", 1 },    /* 2001:db8::/64 */
		{ "128.1.zz.rpz-client-ip", 1 },          /* ::1 */
		{ "128.8.7.6.5.4.3.2.1.rpz-client-ip", 1 },
		{ "48.zz.1.2.rpz-client-ip", 1 },         /* 2:1::/48 */
		{ "128.1.zz.2.zz.rpz-client-ip", 0 },     /* two zz */
		{ "128.9.8.7.6.5.4.3.2.1.rpz-client-ip", 0 }, /* nine groups */
		{ "128.1.2.3.rpz-client-ip", 0 },         /* too few groups, no zz */
		{ "128.12345.zz.rpz-client-ip", 0 },      /* a group of five digits */
		{ "128.g.zz.rpz-client-ip", 0 },          /* not hex */
		{ "129.1.zz.rpz-client-ip", 0 },          /* longer than 128 */
		{ "32.zz.db8.2001.rpz-client-ip", 1 },    /* 2001:db8::/32 */
		{ "16.zz.db8.2001.rpz-client-ip", 0 },    /* bits past the length */
		/* the other kinds: not supported, skipped */
		{ "32.1.2.0.192.rpz-ip", 0 },
		{ "ns.example.rpz-nsdname", 0 },
		{ "32.1.2.0.192.rpz-nsip", 0 },
		/* QNAME triggers, even one that looks like a client-IP one below another label */
		{ "www.example", 1 },
		{ "*.example", 1 },
		{ "rpz-client-ip.example", 1 },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		long n = triggers(rows[i].owner);
		if (n != rows[i].want) {
			print_error("%s: %ld triggers, want %ld\n", rows[i].owner, n, rows[i].want);
			fail();
		}
	}
}

/* One prefix spelled twice (zz, or its zeros): one trigger; two prefixes: two. */
static void test_client_ip_duplicates(void **state)
{
	(void)state;
	const char *zone = "$TTL 60\n@ SOA ns.rpz.test. h.rpz.test. 1 3600 600 86400 60\n"
	                   "128.1.zz.db8.2001.rpz-client-ip CNAME .\n"
	                   "128.1.0.0.0.0.0.db8.2001.rpz-client-ip CNAME rpz-passthru.\n"
	                   "24.0.2.0.192.rpz-client-ip CNAME .\n"
	                   "24.0.2.0.192.rpz-client-ip A 192.0.2.1\n"; /* a second action for one trigger */
	FILE *f = fmemopen((void *)zone, strlen(zone), "r");
	assert_non_null(f);
	assert_int_equal(rpz_zone_check("rpz.test.", f), 2);
	fclose(f);
}

int main(void)
{
	log_set_level(LOG_LEVEL_ERR);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_client_ip_triggers),
		cmocka_unit_test(test_client_ip_duplicates),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
