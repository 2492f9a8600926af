/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of mapping/mapping.c: entries, the ECS a partition sends, the global-unicast check. */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "mapping/mapping.h"

/*
 * "ADDR[/LEN]" to a prefix with inet_pton, so these tests do not depend on
 * partition/prefix.c; host bits are kept as written (the code under test
 * must cope with them).
 */
static struct prefix P(const char *text)
{
	struct prefix p;
	memset(&p, 0, sizeof(p));
	char buf[64];
	snprintf(buf, sizeof(buf), "%s", text);
	char *slash = strchr(buf, '/');
	if (slash != NULL)
		*slash = '\0';
	if (inet_pton(AF_INET, buf, p.addr) == 1) {
		p.family = AF_INET;
		p.len = 32;
	} else if (inet_pton(AF_INET6, buf, p.addr) == 1) {
		p.family = AF_INET6;
		p.len = 128;
	} else {
		fail_msg("test bug: bad address '%s'", text);
	}
	if (slash != NULL)
		p.len = (uint8_t)atoi(slash + 1);
	return p;
}

/* --- entries --- */

static void test_new_limits(void **state)
{
	(void)state;
	struct mapping *m = mapping_new(0);
	assert_non_null(m);
	assert_int_equal(mapping_size(m), 0);
	assert_null(mapping_get(m, 1));
	mapping_free(m);

	m = mapping_new(PARTITION_MAX);
	assert_non_null(m);
	assert_int_equal(mapping_size(m), PARTITION_MAX);
	mapping_free(m);

	assert_null(mapping_new(PARTITION_MAX + 1));
	mapping_free(NULL);
	assert_int_equal(mapping_size(NULL), 0);
	assert_null(mapping_get(NULL, 1));
}

struct set_row {
	const char *msg;
	unsigned id;
	bool has_v4;
	const char *v4;
	bool has_v6;
	const char *v6;
	int rc;
};

static void test_set_errors(void **state)
{
	(void)state;
	static const struct set_row rows[] = {
		{ "v4 only", 1, true, "198.51.100.1", false, NULL, 0 },
		{ "v6 only", 2, false, NULL, true, "2001:db8:1::/56", 0 },
		{ "both", 3, true, "198.51.100.3", true, "2001:db8:3::/48", 0 },
		{ "neither (labels only)", 3, false, NULL, false, NULL, 0 },
		{ "id 0 is the common partition", 0, true, "198.51.100.1", false, NULL, -ENOENT },
		{ "id past the end", 4, true, "198.51.100.1", false, NULL, -ENOENT },
		{ "huge id", 0xffffffffu, true, "198.51.100.1", false, NULL, -ENOENT },
		{ "v4 must be /32", 1, true, "198.51.100.0/24", false, NULL, -EINVAL },
		{ "v4 slot with a v6 address", 1, true, "2001:db8::1", false, NULL, -EINVAL },
		{ "v6 slot with a v4 address", 1, false, NULL, true, "198.51.100.1", -EINVAL },
	};
	struct mapping *m = mapping_new(3);
	assert_non_null(m);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct set_row *r = &rows[i];
		struct mapping_entry e = { .has_v4 = r->has_v4, .has_v6 = r->has_v6 };
		if (r->has_v4)
			e.v4 = P(r->v4);
		if (r->has_v6)
			e.v6 = P(r->v6);
		int rc = mapping_set(m, r->id, &e);
		if (rc != r->rc)
			fail_msg("%s: mapping_set rc %d, want %d", r->msg, rc, r->rc);
	}
	mapping_free(m);
}

static void test_set_get_copies(void **state)
{
	(void)state;
	struct mapping *m = mapping_new(2);
	assert_non_null(m);
	assert_null(mapping_get(m, 1));

	char label[] = "Nanjing", country[] = "CN", region[] = "CN-JS", city[] = "Nanjing", postal[] = "210000";
	struct mapping_entry e = {
		.has_v4 = true, .v4 = P("198.51.100.1"),
		.has_v6 = true, .v6 = P("2001:db8:1:ff::/56"), /* host bits: stored masked */
		.label = label, .country = country, .region = region, .city = city, .postal = postal,
	};
	assert_int_equal(mapping_set(m, 1, &e), 0);
	/* The caller's buffers are not kept. */
	memset(label, 'x', sizeof(label) - 1);
	memset(city, 'y', sizeof(city) - 1);

	const struct mapping_entry *g = mapping_get(m, 1);
	assert_non_null(g);
	assert_ptr_not_equal(g->label, label);
	assert_string_equal(g->label, "Nanjing");
	assert_string_equal(g->country, "CN");
	assert_string_equal(g->region, "CN-JS");
	assert_string_equal(g->city, "Nanjing");
	assert_string_equal(g->postal, "210000");
	assert_true(g->has_v4);
	assert_memory_equal(g->v4.addr, P("198.51.100.1").addr, 16);
	assert_true(g->has_v6);
	assert_int_equal(g->v6.len, 56);
	struct prefix want6 = P("2001:db8:1::/56");
	assert_memory_equal(g->v6.addr, want6.addr, 16);
	assert_null(mapping_get(m, 2));
	assert_null(mapping_get(m, 0));
	assert_null(mapping_get(m, 3));

	/* Replacing: the new entry wins entirely, NULL strings stay NULL. */
	struct mapping_entry e2 = { .has_v4 = true, .v4 = P("203.0.113.7"), .city = "Suzhou" };
	assert_int_equal(mapping_set(m, 1, &e2), 0);
	g = mapping_get(m, 1);
	assert_non_null(g);
	assert_false(g->has_v6);
	assert_null(g->label);
	assert_null(g->country);
	assert_string_equal(g->city, "Suzhou");
	assert_memory_equal(g->v4.addr, P("203.0.113.7").addr, 4);

	/* Empty strings are kept as empty, not turned into NULL. */
	struct mapping_entry e3 = { .label = "" };
	assert_int_equal(mapping_set(m, 2, &e3), 0);
	assert_non_null(mapping_get(m, 2));
	assert_string_equal(mapping_get(m, 2)->label, "");

	/* NULL clears. */
	assert_int_equal(mapping_set(m, 1, NULL), 0);
	assert_null(mapping_get(m, 1));
	assert_int_equal(mapping_set(m, 1, NULL), 0);
	mapping_free(m);
}

/* A failed set leaves the previous entry as it was. */
static void test_set_failure_keeps_old(void **state)
{
	(void)state;
	struct mapping *m = mapping_new(1);
	assert_non_null(m);
	struct mapping_entry e = { .has_v4 = true, .v4 = P("198.51.100.1"), .label = "old" };
	assert_int_equal(mapping_set(m, 1, &e), 0);
	struct mapping_entry bad = { .has_v4 = true, .v4 = P("198.51.100.0/24"), .label = "new" };
	assert_int_equal(mapping_set(m, 1, &bad), -EINVAL);
	assert_string_equal(mapping_get(m, 1)->label, "old");
	mapping_free(m);
}

/* --- mapping_ecs --- */

struct ecs_row {
	const char *msg;
	unsigned id;
	int family;
	int rc;
	uint16_t ecs_family;
	const char *want; /* prefix expected as the ECS source */
};

static void test_ecs_choice(void **state)
{
	(void)state;
	struct mapping *m = mapping_new(5);
	assert_non_null(m);
	struct mapping_entry both = { .has_v4 = true, .v4 = P("198.51.100.1"), .has_v6 = true, .v6 = P("2001:db8:1::/56") };
	struct mapping_entry v4 = { .has_v4 = true, .v4 = P("198.51.100.2") };
	struct mapping_entry v6 = { .has_v6 = true, .v6 = P("2001:db8:3::/48") };
	struct mapping_entry none = { .label = "no address" };
	assert_int_equal(mapping_set(m, 1, &both), 0);
	assert_int_equal(mapping_set(m, 2, &v4), 0);
	assert_int_equal(mapping_set(m, 3, &v6), 0);
	assert_int_equal(mapping_set(m, 4, &none), 0);
	/* 5 left unset */

	static const struct ecs_row rows[] = {
		{ "both, v4 client: the /32", 1, AF_INET, 0, ECS_FAMILY_IPV4, "198.51.100.1/32" },
		{ "both, v6 client: mapped6", 1, AF_INET6, 0, ECS_FAMILY_IPV6, "2001:db8:1::/56" },
		{ "v4 only, v4 client", 2, AF_INET, 0, ECS_FAMILY_IPV4, "198.51.100.2/32" },
		{ "v4 only, v6 client: falls back to the /32", 2, AF_INET6, 0, ECS_FAMILY_IPV4, "198.51.100.2/32" },
		{ "v6 only, v6 client", 3, AF_INET6, 0, ECS_FAMILY_IPV6, "2001:db8:3::/48" },
		{ "v6 only, v4 client: falls back to mapped6", 3, AF_INET, 0, ECS_FAMILY_IPV6, "2001:db8:3::/48" },
		{ "entry without addresses", 4, AF_INET, -ENOENT, 0, NULL },
		{ "unset entry", 5, AF_INET6, -ENOENT, 0, NULL },
		{ "common partition", PARTITION_COMMON, AF_INET, -ENOENT, 0, NULL },
		{ "id out of range", 6, AF_INET, -ENOENT, 0, NULL },
		{ "bad client family", 1, AF_UNIX, -EINVAL, 0, NULL },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct ecs_row *r = &rows[i];
		struct ecs e;
		memset(&e, 0xa5, sizeof(e));
		int rc = mapping_ecs(m, r->id, r->family, &e);
		if (rc != r->rc)
			fail_msg("%s: rc %d, want %d", r->msg, rc, r->rc);
		/* the cheap check says what mapping_ecs says, for a real client family */
		if (r->family == AF_INET || r->family == AF_INET6)
			if (mapping_has_ecs(m, r->id) != (rc == 0))
				fail_msg("%s: mapping_has_ecs %d, mapping_ecs rc %d", r->msg, mapping_has_ecs(m, r->id), rc);
		if (rc != 0)
			continue;
		struct prefix want = P(r->want);
		if (e.family != r->ecs_family || e.source != want.len || e.scope != 0)
			fail_msg("%s: family %u source %u scope %u", r->msg, e.family, e.source, e.scope);
		size_t n = (want.len + 7u) / 8u;
		if (memcmp(e.addr, want.addr, n) != 0)
			fail_msg("%s: wrong address", r->msg);
		for (size_t b = n; b < 16; b++)
			if (e.addr[b] != 0)
				fail_msg("%s: address byte %zu past the source not zero", r->msg, b);
	}
	assert_false(mapping_has_ecs(NULL, 1));
	mapping_free(m);
}

/* --- mapping_check_global --- */

struct global_row {
	const char *prefix;
	int rc;
};

static const struct global_row global_rows[] = {
	/* accepted: global unicast, including the documentation ranges */
	{ "198.51.100.1", 0 },
	{ "198.51.100.0/24", 0 },
	{ "203.0.113.5", 0 },
	{ "192.0.2.1", 0 },
	{ "8.8.8.8", 0 },
	{ "1.1.1.1", 0 },
	{ "1.0.0.0/8", 0 },
	{ "9.255.255.255", 0 },
	{ "11.0.0.0", 0 },
	{ "100.63.255.255", 0 },   /* just below 100.64/10 */
	{ "100.128.0.0", 0 },      /* just above */
	{ "126.255.255.255", 0 },
	{ "128.0.0.0", 0 },
	{ "169.253.255.255", 0 },
	{ "169.255.0.0", 0 },
	{ "172.15.255.255", 0 },
	{ "172.32.0.0", 0 },
	{ "192.0.1.255", 0 },
	{ "192.0.3.0", 0 },
	{ "192.167.255.255", 0 },
	{ "192.169.0.0", 0 },
	{ "198.17.255.255", 0 },
	{ "198.20.0.0", 0 },
	{ "223.255.255.255", 0 },
	{ "2001:db8::1", 0 },
	{ "2001:db8:1::/56", 0 },
	{ "2001:db8::/32", 0 },
	{ "2001:200::1", 0 },      /* just past 2001::/23 */
	{ "2400:cb00::1", 0 },
	{ "2003::/16", 0 },
	{ "3fff:ffff::1", 0 },     /* end of 2000::/3 */

	/* IPv4 special-purpose */
	{ "0.0.0.0", MAPPING_E_UNSPECIFIED },
	{ "0.1.2.3", MAPPING_E_UNSPECIFIED },
	{ "0.0.0.0/0", MAPPING_E_UNSPECIFIED },
	{ "10.0.0.1", MAPPING_E_PRIVATE },
	{ "10.255.255.255", MAPPING_E_PRIVATE },
	{ "100.64.0.1", MAPPING_E_CGNAT },
	{ "100.127.255.255", MAPPING_E_CGNAT },
	{ "127.0.0.1", MAPPING_E_LOOPBACK },
	{ "127.255.255.254", MAPPING_E_LOOPBACK },
	{ "169.254.1.1", MAPPING_E_LINKLOCAL },
	{ "172.16.0.1", MAPPING_E_PRIVATE },
	{ "172.31.255.255", MAPPING_E_PRIVATE },
	{ "192.0.0.8", MAPPING_E_RESERVED },
	{ "192.88.99.1", MAPPING_E_RESERVED },
	{ "192.168.1.1", MAPPING_E_PRIVATE },
	{ "198.18.0.1", MAPPING_E_RESERVED },
	{ "198.19.255.255", MAPPING_E_RESERVED },
	{ "224.0.0.1", MAPPING_E_MULTICAST },
	{ "239.255.255.255", MAPPING_E_MULTICAST },
	{ "240.0.0.1", MAPPING_E_RESERVED },
	{ "255.255.255.255", MAPPING_E_RESERVED },

	/* IPv4 prefixes overlapping a special range */
	{ "10.0.0.0/7", MAPPING_E_PRIVATE },
	{ "8.0.0.0/6", MAPPING_E_PRIVATE },
	{ "100.0.0.0/8", MAPPING_E_CGNAT },
	{ "192.0.0.0/16", MAPPING_E_RESERVED },
	{ "192.168.0.0/15", MAPPING_E_PRIVATE },
	{ "198.16.0.0/13", MAPPING_E_RESERVED },
	{ "128.0.0.0/1", MAPPING_E_LINKLOCAL },
	{ "224.0.0.0/3", MAPPING_E_MULTICAST },

	/* IPv6 special-purpose */
	{ "::", MAPPING_E_UNSPECIFIED },
	{ "::/0", MAPPING_E_UNSPECIFIED },
	{ "::1", MAPPING_E_LOOPBACK },
	{ "::ffff:198.51.100.1", MAPPING_E_RESERVED },
	{ "::1.2.3.4", MAPPING_E_RESERVED },          /* outside 2000::/3 */
	{ "64:ff9b::198.51.100.1", MAPPING_E_RESERVED },
	{ "64:ff9b:1::1", MAPPING_E_RESERVED },
	{ "100::1", MAPPING_E_RESERVED },
	{ "2001::1", MAPPING_E_RESERVED },            /* Teredo */
	{ "2001:1ff:ffff::1", MAPPING_E_RESERVED },
	{ "2002:c633:6401::1", MAPPING_E_RESERVED },  /* 6to4 */
	{ "fc00::1", MAPPING_E_PRIVATE },
	{ "fd12:3456::1", MAPPING_E_PRIVATE },
	{ "fe80::1", MAPPING_E_LINKLOCAL },
	{ "febf:ffff::1", MAPPING_E_LINKLOCAL },
	{ "fec0::1", MAPPING_E_RESERVED },            /* old site-local */
	{ "ff02::1", MAPPING_E_MULTICAST },
	{ "4000::1", MAPPING_E_RESERVED },
	{ "1fff:ffff::1", MAPPING_E_RESERVED },

	/* IPv6 prefixes overlapping a special range */
	{ "2001::/16", MAPPING_E_RESERVED },
	{ "2000::/3", MAPPING_E_RESERVED },
	{ "2000::/2", MAPPING_E_UNSPECIFIED },        /* covers :: */
	{ "4000::/2", MAPPING_E_RESERVED },
	{ "fc00::/6", MAPPING_E_PRIVATE },
	{ "fe00::/8", MAPPING_E_LINKLOCAL },
	{ "ff00::/8", MAPPING_E_MULTICAST },
	{ "::ffff:0:0/96", MAPPING_E_RESERVED },
};

static void test_check_global(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(global_rows) / sizeof(global_rows[0]); i++) {
		const struct global_row *r = &global_rows[i];
		struct prefix p = P(r->prefix);
		int rc = mapping_check_global(&p);
		if (rc != r->rc)
			fail_msg("%s: %d (%s), want %d (%s)", r->prefix, rc, mapping_strerror(rc), r->rc,
			         mapping_strerror(r->rc));
	}
	struct prefix bad = { .family = AF_UNIX, .len = 8 };
	assert_int_equal(mapping_check_global(&bad), -EINVAL);
	bad = P("198.51.100.1");
	bad.len = 33;
	assert_int_equal(mapping_check_global(&bad), -EINVAL);
	bad = P("2001:db8::1");
	bad.len = 129;
	assert_int_equal(mapping_check_global(&bad), -EINVAL);
}

struct text_row {
	int code;
	const char *text;
};

static void test_strerror(void **state)
{
	(void)state;
	static const struct text_row rows[] = {
		{ MAPPING_E_UNSPECIFIED, "unspecified address" },
		{ MAPPING_E_LOOPBACK, "loopback address" },
		{ MAPPING_E_PRIVATE, "private address (RFC 1918)" },
		{ MAPPING_E_CGNAT, "shared address space (CGNAT, RFC 6598)" },
		{ MAPPING_E_LINKLOCAL, "link-local address" },
		{ MAPPING_E_MULTICAST, "multicast address" },
		{ MAPPING_E_RESERVED, "reserved address" },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (strcmp(mapping_strerror(rows[i].code), rows[i].text) != 0)
			fail_msg("code %d: '%s', want '%s'", rows[i].code, mapping_strerror(rows[i].code), rows[i].text);
	assert_non_null(mapping_strerror(-ENOENT));
	assert_non_null(mapping_strerror(12345));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_limits),
		cmocka_unit_test(test_set_errors),
		cmocka_unit_test(test_set_get_copies),
		cmocka_unit_test(test_set_failure_keeps_old),
		cmocka_unit_test(test_ecs_choice),
		cmocka_unit_test(test_check_global),
		cmocka_unit_test(test_strerror),
	};
	return cmocka_run_group_tests_name("mapping", tests, NULL, NULL);
}
