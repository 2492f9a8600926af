/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of resolver/view/classify.c and the snapshot's address lists: the one-lookup verdicts equal a scan of each list. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "partition/partition.h"
#include "resolver/view/classify.h"
#include "resolver/view/domains.h"
#include "resolver/view/snapshot.h"

/* splitmix64 */
static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* An address near one of a few bases (so that prefixes nest), or anywhere. */
static void near(uint64_t *s, int family, uint8_t *addr)
{
	static const uint8_t base4[3][4] = { { 10, 1, 2, 3 }, { 127, 0, 1, 1 }, { 192, 0, 2, 200 } };
	static const uint8_t base6[2][16] = { { 0x20, 0x01, 0x0d, 0xb8, 0, 1 }, { 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 } };
	unsigned n = family == AF_INET ? 4 : 16;
	uint64_t r = rnd(s);
	if (r % 6 == 0) {
		for (unsigned i = 0; i < n; i++)
			addr[i] = (uint8_t)rnd(s);
		return;
	}
	memcpy(addr, family == AF_INET ? base4[r % 3] : base6[r % 2], n);
	unsigned flips = (unsigned)(rnd(s) % 4);
	for (unsigned f = 0; f < flips; f++) {
		unsigned bit = n * 8 - 1 - (unsigned)(rnd(s) % (n * 4));
		addr[bit / 8] ^= (uint8_t)(0x80 >> (bit % 8));
	}
}

/* A YAML flow list of n random prefixes, appended to buf. */
static void random_list(uint64_t *s, size_t n, char *buf, size_t cap)
{
	size_t o = strlen(buf);
	o += (size_t)snprintf(buf + o, cap - o, "[ ");
	for (size_t i = 0; i < n; i++) {
		struct prefix p;
		memset(&p, 0, sizeof(p));
		p.family = rnd(s) % 3 ? AF_INET : AF_INET6;
		near(s, p.family, p.addr);
		unsigned bits = p.family == AF_INET ? 32 : 128;
		p.len = (uint8_t)(rnd(s) % 8 == 0 ? bits : (bits / 4) + rnd(s) % (bits - bits / 4 + 1));
		prefix_mask(&p);
		char text[PREFIX_STRLEN];
		assert_true(prefix_format(&p, text, sizeof(text)) > 0);
		o += (size_t)snprintf(buf + o, cap - o, "%s\"%s\"", i ? ", " : "", text);
	}
	snprintf(buf + o, cap - o, " ]");
}

static bool scan(const struct prefix *list, size_t n, int family, const uint8_t *addr)
{
	struct prefix host;
	prefix_from_addr(&host, family, addr);
	for (size_t i = 0; i < n; i++)
		if (prefix_contains(&list[i], &host))
			return true;
	return false;
}

static struct snapshot *publish(struct snapshot_slot *slot, const char *yaml)
{
	struct conf *c = NULL;
	unsigned nerr = 0;
	if (conf_load_string(yaml, strlen(yaml), "test.yaml", stderr, &c, &nerr) != 0)
		fail_msg("config refused:\n%s", yaml);
	assert_int_equal(snapshot_publish(slot, c, domains_empty(), NULL, 1), 0);
	return snapshot_get(slot);
}

/* Random allow / client_exempt / trusted_ecs lists: one lookup gives each list's scan. */
static void test_lists_against_scan(void **state)
{
	(void)state;
	uint64_t seed = 7;
	static char yaml[64 * 1024];
	for (int round = 0; round < 40; round++) {
		snprintf(yaml, sizeof(yaml), "server:\n  listen: [ \"127.0.0.1@5353\" ]\n  allow: ");
		random_list(&seed, round % 5 == 0 ? 300 : rnd(&seed) % 12, yaml, sizeof(yaml));
		strcat(yaml, "\n  client_exempt: ");
		random_list(&seed, rnd(&seed) % 6, yaml, sizeof(yaml));
		strcat(yaml, "\nedns:\n  trusted_ecs: ");
		random_list(&seed, rnd(&seed) % 6, yaml, sizeof(yaml));
		strcat(yaml, "\npartitions:\n  unmatched: common\n  list:\n"
		             "    - { name: a, mapped: 198.51.100.1, prefixes: [ 10.1.2.0/24, \"2001:db8::/32\", 198.51.100.1/32 ] }\n"
		             "    - { name: b, mapped: 198.51.100.2, prefixes: [ 127.0.0.0/8, 198.51.100.2/32 ] }\n");
		struct snapshot_slot slot;
		snapshot_slot_init(&slot);
		struct snapshot *s = publish(&slot, yaml);
		const struct conf *c = s->conf;
		for (int k = 0; k < 3000; k++) {
			struct classify who;
			uint8_t addr[16];
			who.family = rnd(&seed) % 3 ? AF_INET : AF_INET6;
			near(&seed, who.family, addr);
			who.addr = addr;
			classify_lists(s, &who);
			bool allow = scan(c->server.allow, c->server.nallow, who.family, addr);
			bool exempt = scan(c->server.client_exempt, c->server.nclient_exempt, who.family, addr);
			bool trusted = scan(c->edns.trusted_ecs, c->edns.ntrusted_ecs, who.family, addr);
			uint32_t want = (allow ? SNAPSHOT_ACL_ALLOW : 0) | (exempt ? SNAPSHOT_ACL_EXEMPT : 0) |
			                (trusted ? SNAPSHOT_ACL_TRUSTED_ECS : 0);
			if (who.lists != want)
				fail_msg("round %d, address %d: lists 0x%x, scans say 0x%x", round, k, who.lists, want);
			assert_int_equal(classify_allowed(&who), allow);
			assert_int_equal(classify_exempt(&who), exempt || trusted);
		}
		snapshot_release(s);
		snapshot_slot_deinit(&slot);
	}
}

/* A query with ECS picks its partition from the ECS only when it comes from a trusted frontend. */
static void test_trusted_frontend(void **state)
{
	(void)state;
	static const char yaml[] =
		"server: { listen: [ \"127.0.0.1@5353\" ], allow: [ 127.0.0.0/8, \"::1/128\" ] }\n"
		"edns: { trusted_ecs: [ 127.0.0.2/32, \"::1/128\" ] }\n"
		"partitions:\n"
		"  unmatched: common\n"
		"  list:\n"
		"    - { name: a, mapped: 198.51.100.1, prefixes: [ 10.1.0.0/16, 198.51.100.1/32 ] }\n"
		"    - { name: b, mapped: 198.51.100.2, prefixes: [ 127.0.0.0/24, 198.51.100.2/32 ] }\n";
	struct snapshot_slot slot;
	snapshot_slot_init(&slot);
	struct snapshot *s = publish(&slot, yaml);
	unsigned a = (unsigned)ptable_find(s->conf->partitions.table, "a");
	unsigned b = (unsigned)ptable_find(s->conf->partitions.table, "b");
	struct wire_query q;
	memset(&q, 0, sizeof(q));
	q.has_ecs = true;
	q.ecs = (struct ecs){ .family = ECS_FAMILY_IPV4, .source = 24, .addr = { 10, 1, 7 } };
	const struct {
		const char *addr;
		bool has_ecs;
		unsigned *part;
		bool echo;
	} rows[] = {
		{ "127.0.0.2", true, &a, true },    /* trusted frontend: the ECS's city */
		{ "127.0.0.3", true, &b, false },   /* not trusted: its own address */
		{ "127.0.0.2", false, &b, false },  /* trusted, but no ECS */
		{ "::1", true, &a, true },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct sockaddr_storage ss;
		memset(&ss, 0, sizeof(ss));
		if (strchr(rows[i].addr, ':')) {
			ss.ss_family = AF_INET6;
			assert_int_equal(inet_pton(AF_INET6, rows[i].addr, &((struct sockaddr_in6 *)&ss)->sin6_addr), 1);
		} else {
			ss.ss_family = AF_INET;
			assert_int_equal(inet_pton(AF_INET, rows[i].addr, &((struct sockaddr_in *)&ss)->sin_addr), 1);
		}
		struct classify who;
		assert_true(classify_addr(&ss, &who.family, &who.addr));
		classify_lists(s, &who);
		assert_true(classify_allowed(&who));
		q.has_ecs = rows[i].has_ecs;
		assert_int_equal(classify_client(s->conf, &q, &who), 0);
		assert_int_equal(who.part, *rows[i].part);
		assert_int_equal(who.echo, rows[i].echo);
	}
	snapshot_release(s);
	snapshot_slot_deinit(&slot);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lists_against_scan),
		cmocka_unit_test(test_trusted_frontend),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
