/* SPDX-License-Identifier: BSD-3-Clause */
/* Policy zone triggers as the zone file spells them: which owners are triggers (rpz.c's parser). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "resolver/base/log.h"
#include "resolver/view/rpz.h"

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

/* rpz_zone_check of text (zone rpz.test.), with what it logged (warnings included) in log. */
static long check_logged(const char *text, char *log, size_t cap)
{
	FILE *cap_f = tmpfile();
	assert_non_null(cap_f);
	fflush(stderr);
	int saved = dup(STDERR_FILENO);
	assert_true(saved >= 0);
	assert_true(dup2(fileno(cap_f), STDERR_FILENO) >= 0);
	log_set_level(LOG_LEVEL_WARN);
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	assert_non_null(f);
	long n = rpz_zone_check("rpz.test.", f);
	fclose(f);
	log_set_level(LOG_LEVEL_ERR);
	assert_true(dup2(saved, STDERR_FILENO) >= 0);
	close(saved);
	rewind(cap_f);
	size_t got = fread(log, 1, cap - 1, cap_f);
	log[got] = '\0';
	fclose(cap_f);
	return n;
}

/* a label of n letters c */
static const char *label(char c, int n)
{
	static char buf[4][64];
	static int next;
	char *b = buf[next++ % 4];
	memset(b, c, (size_t)n);
	b[n] = '\0';
	return b;
}

/*
 * A name in the data that passes 255 bytes once the zone's name is joined
 * to it (a relative CNAME target, an MX exchange) can never be answered:
 * the record is skipped with the zone and owner in the log, and the rest of
 * the zone loads. 255 bytes exactly still loads.
 */
static void test_data_name_too_long(void **state)
{
	(void)state;
	/* rpz.test. is 10 bytes in wire form; three labels of 60 and one of 61 are 245: 255 in all */
	char fits[300], over[300];
	snprintf(fits, sizeof(fits), "%s.%s.%s.%s", label('a', 60), label('b', 60), label('c', 60), label('d', 61));
	snprintf(over, sizeof(over), "%s.%s.%s.%s", label('a', 60), label('b', 60), label('c', 60), label('d', 62));
	char zone[2048], log[4096];
	snprintf(zone, sizeof(zone),
	         "$TTL 60\n@ SOA ns.rpz.test. h.rpz.test. 1 3600 600 86400 60\n"
	         "nx.example CNAME .\n"
	         "long.example CNAME %s\n"    /* 256 bytes with the origin: skipped */
	         "edge.example CNAME %s\n"    /* 255: loads */
	         "mx.example MX 10 %s\n"      /* an MX exchange too long: skipped */
	         "self.example CNAME self.example.\n" /* a loop, but well-formed: loads (SERVFAIL when asked) */
	         "garden.example CNAME walled.example.\n",
	         over, fits, over);
	assert_int_equal(check_logged(zone, log, sizeof(log)), 4); /* nx, edge, self, garden */
	assert_non_null(strstr(log, "rpz rpz.test.: record at long.example.rpz.test. skipped: CNAME target longer than "
	                            "255 bytes"));
	assert_non_null(strstr(log, "rpz rpz.test.: record at mx.example.rpz.test. skipped: a name in the data longer "
	                            "than 255 bytes"));
	assert_null(strstr(log, "edge.example"));
	assert_null(strstr(log, "self.example"));

	/* a wildcard trigger's overlong target, and a trigger whose only record is skipped: no trigger */
	snprintf(zone, sizeof(zone),
	         "$TTL 60\n@ SOA ns.rpz.test. h.rpz.test. 1 3600 600 86400 60\n*.wild.example CNAME %s\n", over);
	assert_int_equal(check_logged(zone, log, sizeof(log)), 0);
	assert_non_null(strstr(log, "wild.example.rpz.test. skipped: CNAME target longer"));
}

int main(void)
{
	log_set_level(LOG_LEVEL_ERR);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_client_ip_triggers),
		cmocka_unit_test(test_client_ip_duplicates),
		cmocka_unit_test(test_data_name_too_long),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
