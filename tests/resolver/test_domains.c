/* SPDX-License-Identifier: BSD-3-Clause */
/* EDNS-domain set: exact and --subtree matching of qnames read from the store. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resolver/domains.h"
#include "resolver/wire.h"
#include "tests/fixtures/domains_store.h"

static const struct fixture_domain flagged[] = {
	{ "video.customer.example.", false, CONF_POLICY_ITERATE },
	{ "cdn.example.", true, CONF_POLICY_FORWARD },
	{ "exact.cdn.example.", false, CONF_POLICY_ITERATE },
};

static int setup(void **state)
{
	*state = fixture_store_new("domains", flagged, sizeof(flagged) / sizeof(flagged[0]));
	return *state ? 0 : -1;
}

static int teardown(void **state)
{
	return fixture_store_free(*state);
}

static const struct {
	const char *qname;
	const char *rule;  /* expected matching rule name, NULL = normal */
	const char *why;
} vectors[] = {
	{ "video.customer.example.", "video.customer.example.", "exact entry matches itself" },
	{ "VIDEO.Customer.EXAMPLE.", "video.customer.example.", "matching is case-insensitive" },
	{ "a.video.customer.example.", NULL, "exact entry does not match below it" },
	{ "customer.example.", NULL, "exact entry does not match its parent" },
	{ "cdn.example.", "cdn.example.", "subtree entry matches its apex" },
	{ "x.y.cdn.example.", "cdn.example.", "subtree entry matches deep names" },
	{ "exact.cdn.example.", "exact.cdn.example.", "an exact entry wins over an enclosing subtree" },
	{ "a.exact.cdn.example.", "cdn.example.", "below an exact entry the subtree still applies" },
	{ "xcdn.example.", NULL, "label boundaries are respected" },
	{ "example.", NULL, "unrelated parent" },
	{ ".", NULL, "root" },
};

static void test_match(void **state)
{
	struct fixture_store *f = *state;
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		uint8_t wire[WIRE_MAX_NAME];
		int n = wire_name_from_text(vectors[i].qname, wire, sizeof(wire));
		assert_true(n > 0);
		wire_name_lower(wire, (size_t)n, wire);
		const struct store_domain *d = domains_match(f->domains, wire, (size_t)n);
		if (vectors[i].rule == NULL) {
			if (d != NULL)
				fail_msg("%s: %s matched %s", vectors[i].why, vectors[i].qname, d->name);
		} else {
			if (d == NULL)
				fail_msg("%s: %s matched nothing", vectors[i].why, vectors[i].qname);
			if (strcmp(d->name, vectors[i].rule) != 0)
				fail_msg("%s: %s matched %s", vectors[i].why, vectors[i].qname, d->name);
		}
	}
}

static void test_policy_and_count(void **state)
{
	struct fixture_store *f = *state;
	assert_int_equal(domains_count(f->domains), 3);
	uint8_t wire[WIRE_MAX_NAME];
	int n = wire_name_from_text("a.cdn.example.", wire, sizeof(wire));
	const struct store_domain *d = domains_match(f->domains, wire, (size_t)n);
	assert_non_null(d);
	assert_int_equal(d->policy, CONF_POLICY_FORWARD);
	assert_true(d->subtree);
}

static void test_empty(void **state)
{
	struct domains *d = domains_empty();
	assert_non_null(d);
	uint8_t wire[WIRE_MAX_NAME];
	int n = wire_name_from_text("video.customer.example.", wire, sizeof(wire));
	assert_null(domains_match(d, wire, (size_t)n));
	assert_int_equal(domains_count(d), 0);
	domains_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_match),
		cmocka_unit_test(test_policy_and_count),
		cmocka_unit_test(test_empty),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
