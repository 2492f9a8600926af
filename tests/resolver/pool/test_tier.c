/* SPDX-License-Identifier: BSD-3-Clause */
/* resolver/pool/tier.c: who owns a partition on the EDNS tier (rendezvous hashing) and when a node is down. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "resolver/pool/tier.h"

/* partdns-gen's 13 cities (tools/gen), the names a province's plan uses */
static const char *const cities[] = { "nanjing",  "suzhou",   "wuxi",     "changzhou",   "xuzhou",
	                              "nantong",  "yangzhou", "zhenjiang", "taizhou",     "yancheng",
	                              "huaian",   "lianyungang", "suqian" };
enum { NCITIES = sizeof(cities) / sizeof(cities[0]) };

/* A tier of nodes 192.0.2.<last[i]>@53, in the order given. */
static struct tier *make_tier(const unsigned *last, size_t n)
{
	struct conf_addr a[TIER_MAX_NODES];
	memset(a, 0, sizeof(a));
	for (size_t i = 0; i < n; i++) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&a[i].ss;
		s4->sin_family = AF_INET;
		s4->sin_port = htons(53);
		char text[32];
		snprintf(text, sizeof(text), "192.0.2.%u", last[i]);
		assert_int_equal(inet_pton(AF_INET, text, &s4->sin_addr), 1);
		a[i].len = sizeof(*s4);
		snprintf(a[i].text, sizeof(a[i].text), "%s@53", text);
	}
	struct tier *t = tier_new(a, n);
	assert_non_null(t);
	assert_int_equal(t->n, n);
	return t;
}

/* The owner's text of partition p (every node up). */
static const char *owner(const struct tier *t, const char *p)
{
	unsigned order[TIER_MAX_NODES];
	tier_order(t, p, order);
	int o = tier_owner(t, order);
	assert_true(o >= 0);
	return t->node[o].text;
}

static void test_deterministic(void **state)
{
	(void)state;
	/* the key is fixed: the same score in every process, on every machine.
	 * This value changing means every fleet re-assigns every partition at
	 * once (during a rolling upgrade, frontends disagree): don't. */
	assert_int_equal(tier_score("nanjing", "192.0.2.1@53"), tier_score("nanjing", "192.0.2.1@53"));
	printf("score(nanjing, 192.0.2.1@53) = 0x%016llx\n",
	       (unsigned long long)tier_score("nanjing", "192.0.2.1@53"));
	assert_true(tier_score("nanjing", "192.0.2.1@53") == 0x6e213ae99aef9631ull);
	/* the name and the node are kept apart: "ab"+"c" is not "a"+"bc" */
	assert_true(tier_score("ab", "c") != tier_score("a", "bc"));

	/* two frontends listing the nodes in other orders agree on every owner */
	const unsigned fwd[] = { 1, 2, 3, 4 }, rev[] = { 4, 3, 2, 1 };
	struct tier *a = make_tier(fwd, 4), *b = make_tier(rev, 4);
	for (size_t i = 0; i < NCITIES; i++)
		assert_string_equal(owner(a, cities[i]), owner(b, cities[i]));
	tier_free(a);
	tier_free(b);
}

/* Removing a node (or its going down) moves its partitions only, each to its next node by score. */
static void test_removal_moves_only_its_partitions(void **state)
{
	(void)state;
	const unsigned all[] = { 1, 2, 3, 4 };
	struct tier *full = make_tier(all, 4);
	for (unsigned gone = 0; gone < 4; gone++) {
		unsigned rest[3], k = 0;
		for (unsigned i = 0; i < 4; i++)
			if (i != gone)
				rest[k++] = all[i];
		struct tier *less = make_tier(rest, 3);
		unsigned moved = 0;
		for (size_t c = 0; c < NCITIES; c++) {
			unsigned order[TIER_MAX_NODES];
			tier_order(full, cities[c], order);
			const char *before = full->node[order[0]].text, *after = owner(less, cities[c]);
			if (order[0] != gone) {
				assert_string_equal(before, after); /* not the removed node's: stays */
			} else {
				assert_string_equal(full->node[order[1]].text, after); /* its next by score */
				moved++;
			}
		}
		/* the same through health: the node down instead of removed */
		tier_query_timeout(full, gone);
		for (size_t c = 0; c < NCITIES; c++) {
			unsigned order[TIER_MAX_NODES];
			tier_order(full, cities[c], order);
			assert_string_equal(full->node[tier_owner(full, order)].text, owner(less, cities[c]));
		}
		tier_probe_result(full, gone, true);
		printf("without 192.0.2.%u: %u of %d partitions moved\n", all[gone], moved, NCITIES);
		tier_free(less);
	}
	tier_free(full);
}

/* 13 cities over 2, 3 and 4 nodes: no node owns more than ceil(13/n) + 2. */
static void test_balance(void **state)
{
	(void)state;
	const unsigned all[] = { 1, 2, 3, 4 };
	for (size_t n = 2; n <= 4; n++) {
		struct tier *t = make_tier(all, n);
		unsigned count[TIER_MAX_NODES] = { 0 };
		for (size_t c = 0; c < NCITIES; c++) {
			unsigned order[TIER_MAX_NODES];
			tier_order(t, cities[c], order);
			count[order[0]]++;
		}
		unsigned bound = (unsigned)((NCITIES + n - 1) / n) + 2, total = 0;
		printf("%zu nodes (bound %u):", n, bound);
		for (size_t i = 0; i < n; i++) {
			printf(" %s=%u", t->node[i].text, count[i]);
			assert_true(count[i] <= bound);
			total += count[i];
		}
		printf("\n");
		assert_int_equal(total, NCITIES);
		tier_free(t);
	}
}

/* Two probes unanswered in a row mark a node down, one answered up; a query timeout at once. */
static void test_health(void **state)
{
	(void)state;
	const unsigned two[] = { 1, 2 };
	struct tier *t = make_tier(two, 2);
	unsigned order[TIER_MAX_NODES];
	tier_order(t, "nanjing", order);
	unsigned own = order[0], next = order[1];
	assert_true(tier_is_up(t, own));
	tier_probe_result(t, own, false);
	assert_true(tier_is_up(t, own));            /* one miss: still up */
	tier_probe_result(t, own, true);
	tier_probe_result(t, own, false);
	assert_true(tier_is_up(t, own));            /* misses must be consecutive */
	tier_probe_result(t, own, false);
	assert_false(tier_is_up(t, own));           /* two in a row: down */
	assert_int_equal(tier_owner(t, order), (int)next);
	assert_int_equal(atomic_load(&t->node[own].downs), 1);
	tier_probe_result(t, own, true);
	assert_true(tier_is_up(t, own));            /* answered: up, owner again */
	assert_int_equal(tier_owner(t, order), (int)own);
	tier_query_timeout(t, own);
	assert_false(tier_is_up(t, own));           /* a forwarded query timed out: down at once */
	tier_query_timeout(t, next);
	assert_int_equal(tier_owner(t, order), -1); /* none up */
	assert_int_equal(atomic_load(&t->node[own].downs), 2);
	tier_free(t);
}

/* Duplicates are one node; what is not an address is none. */
static void test_new(void **state)
{
	(void)state;
	struct conf_addr a[3];
	memset(a, 0, sizeof(a));
	assert_null(tier_new(a, 0));
	assert_null(tier_new(a, 3)); /* family 0 */
	struct sockaddr_in *s4 = (struct sockaddr_in *)&a[0].ss;
	s4->sin_family = AF_INET;
	s4->sin_port = htons(5353);
	inet_pton(AF_INET, "192.0.2.7", &s4->sin_addr);
	a[1] = a[0];
	struct tier *t = tier_new(a, 2);
	assert_non_null(t);
	assert_int_equal(t->n, 1);
	assert_string_equal(t->node[0].text, "192.0.2.7@5353");
	tier_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_removal_moves_only_its_partitions),
		cmocka_unit_test(test_balance),
		cmocka_unit_test(test_health),
		cmocka_unit_test(test_new),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
