/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of partition/partition.c: ids, names, prefixes, conflicts, classification. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "partition/partition.h"
#include "partition/prefix.h"

static struct prefix parse(const char *text)
{
	struct prefix p;
	int rc = prefix_parse(text, &p);
	if (rc != 0)
		fail_msg("test bug: cannot parse %s: %s", text, prefix_strerror(rc));
	return p;
}

/* The province used by most tests: partition i holds the prefixes of row i. */
static const struct {
	const char *name;
	const char *prefixes[5];
} province[] = {
	{ "nanjing", { "10.1.0.0/16", "203.0.113.0/25", "2001:db8:100::/40", "100.64.0.0/16", NULL } },
	{ "suzhou", { "10.2.0.0/16", "10.1.7.0/24", "2001:db8:200::/40", "2001:db8:100:1::/64", NULL } },
	{ "wuxi", { "192.168.0.0/16", NULL } },
	{ "changzhou", { "2001:db8:300::/40", NULL } },
};
enum { NPROVINCE = sizeof(province) / sizeof(province[0]) };

static int setup(void **state)
{
	struct ptable *t = ptable_new();
	if (t == NULL)
		return -1;
	for (size_t i = 0; i < NPROVINCE; i++) {
		if (ptable_add(t, province[i].name) != (int)i + 1)
			return -1;
		for (size_t j = 0; province[i].prefixes[j] != NULL; j++) {
			struct prefix p = parse(province[i].prefixes[j]);
			if (ptable_add_prefix(t, (unsigned)i + 1, &p, NULL) != 0)
				return -1;
		}
	}
	if (ptable_build(t) != 0)
		return -1;
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	ptable_free(*state);
	return 0;
}

static void test_ids_and_names(void **state)
{
	const struct ptable *t = *state;
	assert_int_equal(ptable_size(t), NPROVINCE);
	assert_string_equal(ptable_name(t, PARTITION_COMMON), "common");
	for (size_t i = 0; i < NPROVINCE; i++) {
		assert_string_equal(ptable_name(t, (unsigned)i + 1), province[i].name);
		assert_int_equal(ptable_find(t, province[i].name), (int)i + 1);
	}
	assert_null(ptable_name(t, NPROVINCE + 1));
	assert_null(ptable_name(t, PARTITION_MAX + 1));
	assert_int_equal(ptable_find(t, "common"), PARTITION_COMMON);
	assert_int_equal(ptable_find(t, "shanghai"), -ENOENT);
	assert_int_equal(ptable_find(t, "Nanjing"), -ENOENT);
	assert_int_equal(ptable_find(t, ""), -ENOENT);
}

static void test_add_errors(void **state)
{
	(void)state;
	struct ptable *t = ptable_new();
	assert_non_null(t);
	assert_int_equal(ptable_add(t, "common"), -EINVAL);
	assert_int_equal(ptable_add(t, ""), -EINVAL);
	assert_int_equal(ptable_add(t, NULL), -EINVAL);
	assert_int_equal(ptable_add(t, "a"), 1);
	assert_int_equal(ptable_add(t, "a"), -EEXIST);
	assert_int_equal(ptable_add(t, "b"), 2);
	assert_int_equal(ptable_size(t), 2);

	/* The name is copied. */
	char name[16];
	strcpy(name, "copied");
	assert_int_equal(ptable_add(t, name), 3);
	strcpy(name, "changed");
	assert_string_equal(ptable_name(t, 3), "copied");

	struct prefix p = parse("10.0.0.0/8");
	assert_int_equal(ptable_add_prefix(t, 0, &p, NULL), -ENOENT);
	assert_int_equal(ptable_add_prefix(t, 4, &p, NULL), -ENOENT);
	struct prefix bad = p;
	bad.len = 40;
	assert_int_equal(ptable_add_prefix(t, 1, &bad, NULL), -EINVAL);
	assert_int_equal(ptable_prefix_count(t, 1, 0), 0);
	ptable_free(t);
}

static void test_full_table(void **state)
{
	(void)state;
	struct ptable *t = ptable_new();
	assert_non_null(t);
	char name[32];
	for (int i = 1; i <= PARTITION_MAX; i++) {
		snprintf(name, sizeof(name), "city%d", i);
		assert_int_equal(ptable_add(t, name), i);
	}
	assert_int_equal(ptable_add(t, "one-too-many"), -ENOSPC);
	assert_int_equal(ptable_add(t, "city7"), -EEXIST);
	assert_int_equal(ptable_size(t), PARTITION_MAX);
	assert_int_equal(ptable_find(t, "city4095"), PARTITION_MAX);
	struct prefix p = parse("198.51.100.0/24");
	assert_int_equal(ptable_add_prefix(t, PARTITION_MAX, &p, NULL), 0);
	assert_int_equal(ptable_build(t), 0);
	const uint8_t a[4] = { 198, 51, 100, 7 };
	assert_int_equal(ptable_lookup(t, AF_INET, a, NULL), PARTITION_MAX);
	ptable_free(t);
}

static void test_conflict_names_other(void **state)
{
	(void)state;
	struct ptable *t = ptable_new();
	assert_non_null(t);
	assert_int_equal(ptable_add(t, "nanjing"), 1);
	assert_int_equal(ptable_add(t, "suzhou"), 2);
	assert_int_equal(ptable_add(t, "wuxi"), 3);
	struct prefix p = parse("10.1.0.0/16"), q = parse("2001:db8::/32");
	assert_int_equal(ptable_add_prefix(t, 1, &p, NULL), 0);
	assert_int_equal(ptable_add_prefix(t, 3, &q, NULL), 0);

	unsigned other = 999;
	assert_int_equal(ptable_add_prefix(t, 2, &p, &other), -EEXIST);
	assert_int_equal(other, 1);
	assert_string_equal(ptable_name(t, other), "nanjing");
	other = 999;
	assert_int_equal(ptable_add_prefix(t, 1, &q, &other), -EEXIST);
	assert_int_equal(other, 3);
	/* Twice in the same partition is a conflict with itself. */
	other = 999;
	assert_int_equal(ptable_add_prefix(t, 1, &p, &other), -EEXIST);
	assert_int_equal(other, 1);
	assert_int_equal(ptable_add_prefix(t, 2, &p, NULL), -EEXIST);

	/* Rejected prefixes are not counted. */
	assert_int_equal(ptable_prefix_count(t, 1, 0), 1);
	assert_int_equal(ptable_prefix_count(t, 2, 0), 0);
	assert_int_equal(ptable_prefix_count(t, 3, 0), 1);

	/* Overlap without equality is allowed: the longer prefix wins. */
	struct prefix inner = parse("10.1.7.0/24");
	assert_int_equal(ptable_add_prefix(t, 2, &inner, NULL), 0);
	assert_int_equal(ptable_build(t), 0);
	assert_int_equal(ptable_add_prefix(t, 2, &q, NULL), -EINVAL);
	const uint8_t in[4] = { 10, 1, 7, 1 }, out[4] = { 10, 1, 8, 1 };
	assert_int_equal(ptable_lookup(t, AF_INET, in, NULL), 2);
	assert_int_equal(ptable_lookup(t, AF_INET, out, NULL), 1);
	ptable_free(t);
}

static void test_counts(void **state)
{
	const struct ptable *t = *state;
	unsigned failures = 0;
	for (size_t i = 0; i < NPROVINCE; i++) {
		size_t n4 = 0, n6 = 0;
		for (size_t j = 0; province[i].prefixes[j] != NULL; j++) {
			if (strchr(province[i].prefixes[j], ':'))
				n6++;
			else
				n4++;
		}
		unsigned id = (unsigned)i + 1;
		if (ptable_prefix_count(t, id, AF_INET) != n4 || ptable_prefix_count(t, id, AF_INET6) != n6 ||
		    ptable_prefix_count(t, id, 0) != n4 + n6) {
			print_error("%s: counts %zu/%zu/%zu, want %zu/%zu/%zu\n", province[i].name,
			            ptable_prefix_count(t, id, AF_INET), ptable_prefix_count(t, id, AF_INET6),
			            ptable_prefix_count(t, id, 0), n4, n6, n4 + n6);
			failures++;
		}
	}
	assert_int_equal(failures, 0);
	assert_int_equal(ptable_prefix_count(t, PARTITION_COMMON, 0), 0);
	assert_int_equal(ptable_prefix_count(t, NPROVINCE + 1, 0), 0);
	assert_int_equal(ptable_prefix_count(t, 1, AF_UNIX), 0);
	assert_true(ptable_memory(t) > 0);
}

static void test_lookup_table(void **state)
{
	const struct ptable *t = *state;
	static const struct {
		const char *addr;
		const char *partition;
		const char *matched; /* NULL: no match */
		const char *msg;
	} rows[] = {
		{ "10.1.2.3", "nanjing", "10.1.0.0/16", "nanjing private" },
		{ "10.1.7.9", "suzhou", "10.1.7.0/24", "suzhou's /24 inside nanjing's /16" },
		{ "10.2.255.255", "suzhou", "10.2.0.0/16", "last address of suzhou's /16" },
		{ "10.3.0.0", "common", NULL, "just after suzhou's /16" },
		{ "203.0.113.127", "nanjing", "203.0.113.0/25", "last of the /25" },
		{ "203.0.113.128", "common", NULL, "first past the /25" },
		{ "100.64.1.1", "nanjing", "100.64.0.0/16", "CGNAT" },
		{ "192.168.1.1", "wuxi", "192.168.0.0/16", "RFC 1918" },
		{ "2001:db8:100::1", "nanjing", "2001:db8:100::/40", "IPv6 /40" },
		{ "2001:db8:100:1::1", "suzhou", "2001:db8:100:1::/64", "IPv6 /64 inside another city's /40" },
		{ "2001:db8:300:ffff::1", "changzhou", "2001:db8:300::/40", "IPv6 only partition" },
		{ "2001:db8:400::1", "common", NULL, "IPv6 unmatched" },
		{ "::ffff:10.1.2.3", "common", NULL, "IPv4-mapped is not IPv4" },
		{ "8.8.8.8", "common", NULL, "unmatched public" },
	};
	unsigned failures = 0;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct prefix a = parse(rows[i].addr), m;
		unsigned id = ptable_lookup(t, a.family, a.addr, &m);
		const char *name = ptable_name(t, id);
		bool ok = name != NULL && strcmp(name, rows[i].partition) == 0;
		if (rows[i].matched != NULL) {
			struct prefix want = parse(rows[i].matched);
			ok = ok && prefix_equal(&m, &want);
		} else {
			ok = ok && id == PARTITION_COMMON && m.family == 0;
		}
		if (!ok) {
			char buf[PREFIX_STRLEN] = "none";
			if (m.family != 0)
				prefix_format(&m, buf, sizeof(buf));
			print_error("row %zu (%s): %s -> %s (%s), want %s (%s)\n", i, rows[i].msg, rows[i].addr,
			            name ? name : "(null)", buf, rows[i].partition,
			            rows[i].matched ? rows[i].matched : "none");
			failures++;
		}
		/* matched is optional. */
		if (ptable_lookup(t, a.family, a.addr, NULL) != id)
			failures++;
	}
	assert_int_equal(failures, 0);
}

struct collect {
	char texts[8][PREFIX_STRLEN];
	size_t n;
	size_t stop_at; /* return non-zero after this many */
};

static int collect_fn(const struct prefix *p, void *arg)
{
	struct collect *c = arg;
	if (c->n < 8)
		prefix_format(p, c->texts[c->n], PREFIX_STRLEN);
	c->n++;
	return c->n == c->stop_at ? 42 : 0;
}

static void test_foreach_order(void **state)
{
	const struct ptable *t = *state;
	for (size_t i = 0; i < NPROVINCE; i++) {
		struct collect c = { .stop_at = 0 };
		assert_int_equal(ptable_foreach_prefix(t, (unsigned)i + 1, collect_fn, &c), 0);
		size_t j = 0;
		for (; province[i].prefixes[j] != NULL; j++)
			assert_string_equal(c.texts[j], province[i].prefixes[j]);
		assert_int_equal(c.n, j);
	}
	/* Stops early and returns the callback's value. */
	struct collect c = { .stop_at = 2 };
	assert_int_equal(ptable_foreach_prefix(t, 1, collect_fn, &c), 42);
	assert_int_equal(c.n, 2);
	/* Common and unknown ids have no prefixes. */
	c = (struct collect){ .stop_at = 0 };
	assert_int_equal(ptable_foreach_prefix(t, PARTITION_COMMON, collect_fn, &c), 0);
	assert_int_equal(ptable_foreach_prefix(t, NPROVINCE + 1, collect_fn, &c), 0);
	assert_int_equal(c.n, 0);
}

static void test_unbuilt_and_empty(void **state)
{
	(void)state;
	struct ptable *t = ptable_new();
	assert_non_null(t);
	const uint8_t a[4] = { 10, 1, 2, 3 };
	assert_int_equal(ptable_lookup(t, AF_INET, a, NULL), PARTITION_COMMON);
	assert_int_equal(ptable_build(t), 0);
	assert_int_equal(ptable_size(t), 0);
	struct prefix m;
	assert_int_equal(ptable_lookup(t, AF_INET, a, &m), PARTITION_COMMON);
	assert_int_equal(m.family, 0);
	assert_null(ptable_name(t, 1));
	ptable_free(t);
	ptable_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ids_and_names),
		cmocka_unit_test(test_counts),
		cmocka_unit_test(test_lookup_table),
		cmocka_unit_test(test_foreach_order),
		cmocka_unit_test(test_add_errors),
		cmocka_unit_test(test_full_table),
		cmocka_unit_test(test_conflict_names_other),
		cmocka_unit_test(test_unbuilt_and_empty),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
