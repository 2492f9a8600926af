/* SPDX-License-Identifier: BSD-3-Clause */
/* EDNS-domain set: exact and --subtree matching of qnames read from the store. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resolver/view/domains.h"
#include "wire/names.h"
#include "wire/wire.h"
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

/* ---- helpers for the tests below: stores filled directly, sets loaded from them ---- */

/* wire form of text, lower-cased as route.c hands names to domains_match */
static size_t wire_lc(const char *text, uint8_t *wire)
{
	int n = wire_name_from_text(text, wire, WIRE_MAX_NAME);
	if (n <= 0)
		fail_msg("bad test name %s", text);
	wire_name_lower(wire, (size_t)n, wire);
	return (size_t)n;
}

static const struct store_domain *match_text(const struct domains *d, const char *text)
{
	uint8_t wire[WIRE_MAX_NAME];
	size_t n = wire_lc(text, wire);
	return domains_match(d, wire, n);
}

/* text's match is the entry want (NULL: none) */
static void expect_match(const struct domains *d, const char *text, const char *want)
{
	const struct store_domain *r = match_text(d, text);
	if (want == NULL) {
		if (r != NULL)
			fail_msg("%s matched %s, want nothing", text, r->name);
		return;
	}
	if (r == NULL)
		fail_msg("%s matched nothing, want %s", text, want);
	if (strcmp(r->name, want) != 0)
		fail_msg("%s matched %s, want %s", text, r->name, want);
}

static struct store_domain dom(const char *name, bool subtree, enum conf_policy policy)
{
	struct store_domain d;
	memset(&d, 0, sizeof(d));
	size_t len = strlen(name);
	assert_true(len < sizeof(d.name));
	memcpy(d.name, name, len + 1);
	d.subtree = subtree;
	d.policy = policy;
	return d;
}

static struct conf_addr target(const char *host, uint16_t port)
{
	/* through the config's own parser: the form an operator writes, ADDR@PORT */
	char text[80];
	snprintf(text, sizeof(text), "%s@%u", host, (unsigned)port);
	struct conf_addr a;
	assert_int_equal(conf_addr_parse(text, 53, &a), 0);
	return a;
}

/* An empty store in a fresh directory (the fixture with no domains). */
static struct fixture_store *empty_store(const char *tag)
{
	struct fixture_store *f = fixture_store_new(tag, NULL, 0);
	assert_non_null(f);
	return f;
}

static void put_all(struct fixture_store *f, const struct store_domain *list, size_t n)
{
	int rc = store_put_many(f->store, list, n, NULL);
	if (rc != 0)
		fail_msg("store_put_many: %s", store_strerror(rc));
}

static struct domains *load(struct fixture_store *f)
{
	struct domains *d = NULL;
	int rc = domains_load(f->store, &d, NULL);
	if (rc != 0)
		fail_msg("domains_load: %s", store_strerror(rc));
	assert_non_null(d);
	return d;
}

/* The rule a match gives is the record as stored: name, subtree, policy, targets. */
static void assert_rule_as_stored(struct store *s, const struct store_domain *got)
{
	struct store_domain want;
	assert_int_equal(store_get(s, got->name, &want), 0);
	if (want.subtree != got->subtree || want.policy != got->policy || want.nforward != got->nforward)
		fail_msg("%s: subtree %d policy %d nforward %zu, stored %d %d %zu", got->name, got->subtree,
		         got->policy, got->nforward, want.subtree, want.policy, want.nforward);
	for (size_t i = 0; i < want.nforward; i++) {
		const struct conf_addr *a = &want.forward[i], *b = &got->forward[i];
		if (a->len != b->len || memcmp(&a->ss, &b->ss, a->len) != 0 || strcmp(a->text, b->text) != 0)
			fail_msg("%s: target %zu is %s, stored %s", got->name, i, b->text, a->text);
	}
}

/* ---- many domains ---- */

#define MANY 50000

static void many_name(size_t i, char *out, size_t size)
{
	/* labels of varied length under a few hundred zones, some zones two labels deep */
	static const char *const tld[] = { "com.", "net.", "cn.", "com.cn.", "org." };
	snprintf(out, size, "%c%zu-%.*s.z%zu.%s", (int)('a' + i % 26), i, (int)(i % 17), "abcdefghijklmnopq",
	         i % 397, tld[i % 5]);
}

static void test_many(void **state)
{
	(void)state;
	struct fixture_store *f = empty_store("many");
	struct store_domain *list = calloc(MANY, sizeof(*list));
	assert_non_null(list);
	for (size_t i = 0; i < MANY; i++) {
		many_name(i, list[i].name, sizeof(list[i].name));
		list[i].subtree = i % 4 == 0;
		list[i].policy = i % 7 == 0 ? CONF_POLICY_FORWARD : CONF_POLICY_ITERATE;
	}
	put_all(f, list, MANY);
	struct domains *d = load(f);
	assert_int_equal(domains_count(d), MANY);
	char text[300];
	for (size_t i = 0; i < MANY; i++) {
		many_name(i, text, sizeof(text));
		const struct store_domain *r = match_text(d, text);
		if (r == NULL || strcmp(r->name, text) != 0)
			fail_msg("%s matched %s", text, r ? r->name : "nothing");
		if (r->subtree != (i % 4 == 0) || r->policy != (i % 7 == 0 ? CONF_POLICY_FORWARD : CONF_POLICY_ITERATE) ||
		    r->nforward != 0)
			fail_msg("%s: subtree %d policy %d nforward %zu", text, r->subtree, r->policy, r->nforward);
		/* below it: the entry when --subtree, else nothing */
		char below[320];
		snprintf(below, sizeof(below), "www.x%zu.%s", i, text);
		expect_match(d, below, i % 4 == 0 ? text : NULL);
		/* a sibling that is not stored */
		snprintf(below, sizeof(below), "no-%s", text);
		expect_match(d, below, NULL);
	}
	expect_match(d, "z1.com.", NULL);
	expect_match(d, "com.", NULL);
	expect_match(d, ".", NULL);
	domains_free(d);
	free(list);
	assert_int_equal(fixture_store_free(f), 0);
}

/* ---- the --subtree walk's shortcuts never change a result ---- */

#define RSET 200

/* splitmix64 */
static uint64_t rnd64(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* A name of 1..depth labels from a small alphabet, so that names share suffixes and lengths. */
static void random_text(uint64_t *s, unsigned depth, char *out, size_t size)
{
	static const char *const labels[] = { "a", "b", "cdn", "x1", "example", "com", "cn", "video", "w",
		                              "img-7", "edge", "abcdefgh", "abcdefghi", "net" };
	size_t o = 0;
	unsigned n = 1 + (unsigned)(rnd64(s) % depth);
	for (unsigned i = 0; i < n; i++)
		o += (size_t)snprintf(out + o, size - o, "%s.", labels[rnd64(s) % (sizeof(labels) / sizeof(labels[0]))]);
}

/* The rule the definition gives, by brute force over the list: the exact entry, else the nearest
 * enclosing --subtree entry, trying every suffix of the name. */
static const struct store_domain *slow_match(const struct store_domain *list, size_t n, const char *text)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(list[i].name, text) == 0)
			return &list[i];
	for (const char *p = strchr(text, '.'); p != NULL && p[1] != '\0'; p = strchr(p + 1, '.'))
		for (size_t i = 0; i < n; i++)
			if (list[i].subtree && strcmp(list[i].name, p + 1) == 0)
				return &list[i];
	return NULL;
}

static void test_subtree_shortcuts_random(void **state)
{
	(void)state;
	uint64_t seed = 11;
	struct store_domain *list = calloc(RSET, sizeof(*list));
	assert_non_null(list);
	for (int round = 0; round < 12; round++) {
		struct fixture_store *f = empty_store("rsub");
		/* a few rounds with no --subtree entry, some with only short or only long ones */
		size_t n = 0;
		size_t want = round % 4 == 0 ? 5 : round % 3 == 0 ? 100 : RSET; /* 2 labels: 210 names at most */
		while (n < want) {
			char text[256];
			random_text(&seed, round % 3 == 0 ? 2 : 5, text, sizeof(text));
			bool dup = false;
			for (size_t i = 0; i < n; i++)
				dup |= strcmp(list[i].name, text) == 0;
			if (dup)
				continue;
			bool sub = round % 6 == 1 ? false : rnd64(&seed) % 3 == 0;
			list[n++] = dom(text, sub, sub ? CONF_POLICY_FORWARD : CONF_POLICY_ITERATE);
		}
		put_all(f, list, n);
		struct domains *d = load(f);
		for (int k = 0; k < 5000; k++) {
			char text[300];
			random_text(&seed, 7, text, sizeof(text));
			const struct store_domain *want_r = slow_match(list, n, text);
			const struct store_domain *got = match_text(d, text);
			if ((want_r == NULL) != (got == NULL) || (got && strcmp(got->name, want_r->name) != 0))
				fail_msg("round %d: %s matched %s, the definition says %s", round, text,
				         got ? got->name : "nothing", want_r ? want_r->name : "nothing");
		}
		domains_free(d);
		assert_int_equal(fixture_store_free(f), 0);
	}
	free(list);
}

/* ---- case folding ---- */

static void test_case_folding(void **state)
{
	struct fixture_store *f = *state;
	static const struct {
		const char *qname, *rule;
	} v[] = {
		{ "Video.Customer.Example.", "video.customer.example." },
		{ "VIDEO.CUSTOMER.EXAMPLE.", "video.customer.example." },
		{ "vIdEo.cUsToMeR.eXaMpLe.", "video.customer.example." },
		{ "CDN.EXAMPLE.", "cdn.example." },
		{ "A.B.Cdn.Example.", "cdn.example." },
		{ "EXACT.cdn.EXAMPLE.", "exact.cdn.example." },
		{ "WWW.EXACT.CDN.EXAMPLE.", "cdn.example." },
		{ "XCDN.EXAMPLE.", NULL },
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		expect_match(f->domains, v[i].qname, v[i].rule);

	/* the store keeps names lower-cased: upper case is refused, so the set never holds it */
	struct store_domain up = dom("Upper.Example.", false, CONF_POLICY_ITERATE);
	assert_int_equal(store_put(f->store, &up), -EINVAL);
}

/* ---- nearest enclosing --subtree entry ---- */

static void test_subtree_nearest(void **state)
{
	(void)state;
	struct fixture_store *f = empty_store("nearest");
	const struct store_domain list[] = {
		dom("example.", true, CONF_POLICY_ITERATE),
		dom("a.example.", true, CONF_POLICY_FORWARD),
		dom("b.a.example.", false, CONF_POLICY_ITERATE),   /* exact, between two subtrees */
		dom("c.b.a.example.", true, CONF_POLICY_ITERATE),
		dom("deep.x.y.z.example.", true, CONF_POLICY_FORWARD),
		dom("e.example.", false, CONF_POLICY_FORWARD),
		dom("other.test.", false, CONF_POLICY_ITERATE),
	};
	put_all(f, list, sizeof(list) / sizeof(list[0]));
	struct domains *d = load(f);
	static const struct {
		const char *qname, *rule;
	} v[] = {
		{ "example.", "example." },
		{ "q.example.", "example." },
		{ "a.example.", "a.example." },
		{ "q.a.example.", "a.example." },
		{ "b.a.example.", "b.a.example." },
		{ "q.b.a.example.", "a.example." },     /* the exact entry does not stop the walk */
		{ "c.b.a.example.", "c.b.a.example." },
		{ "q.c.b.a.example.", "c.b.a.example." },
		{ "r.q.c.b.a.example.", "c.b.a.example." },
		{ "xc.b.a.example.", "a.example." },
		{ "deep.x.y.z.example.", "deep.x.y.z.example." },
		{ "1.2.3.deep.x.y.z.example.", "deep.x.y.z.example." },
		{ "x.y.z.example.", "example." },
		{ "e.example.", "e.example." },
		{ "q.e.example.", "example." },
		{ "other.test.", "other.test." },
		{ "q.other.test.", NULL },
		{ "test.", NULL },
		{ "examplf.", NULL },
		{ "xexample.", NULL },
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		expect_match(d, v[i].qname, v[i].rule);
	/* the rule is the enclosing entry's, not the qname's */
	const struct store_domain *r = match_text(d, "q.a.example.");
	assert_non_null(r);
	assert_true(r->subtree);
	assert_int_equal(r->policy, CONF_POLICY_FORWARD);
	domains_free(d);
	assert_int_equal(fixture_store_free(f), 0);
}

/* ---- names of the longest length ---- */

/* A text name of n labels of len bytes each (of ch), then tail (a text name, "" for the root). */
static void name_of(char *out, size_t size, unsigned n, unsigned len, char ch, const char *tail)
{
	size_t o = 0;
	for (unsigned i = 0; i < n; i++) {
		for (unsigned j = 0; j < len && o + 2 < size; j++)
			out[o++] = ch;
		out[o++] = '.';
	}
	snprintf(out + o, size - o, "%s", tail);
}

static void test_max_length(void **state)
{
	(void)state;
	struct fixture_store *f = empty_store("maxlen");
	/* 63+1 ×3 + 61+1 + the root: 255 bytes of wire */
	char exact255[300], sub253[300], q255[304], ones255[300], ones_sub[300], ones_q[300];
	name_of(exact255, sizeof(exact255), 3, 63, 'a', "");
	size_t o = strlen(exact255);
	name_of(exact255 + o, sizeof(exact255) - o, 1, 61, 'b', "");
	/* a --subtree entry of 253 bytes (59 + 63×3 bytes of labels): a 1-byte label below it makes 255 */
	name_of(sub253, sizeof(sub253), 1, 59, 'c', "");
	o = strlen(sub253);
	name_of(sub253 + o, sizeof(sub253) - o, 3, 63, 'd', "");
	snprintf(q255, sizeof(q255), "x.%s", sub253);
	/* 127 one-byte labels: 255 bytes; the entry is the last 20 of them */
	name_of(ones255, sizeof(ones255), 127, 1, 'e', "");
	name_of(ones_sub, sizeof(ones_sub), 20, 1, 'e', "");
	name_of(ones_q, sizeof(ones_q), 126, 1, 'e', "");
	const struct store_domain list[] = {
		dom(exact255, false, CONF_POLICY_ITERATE),
		dom(sub253, true, CONF_POLICY_FORWARD),
		dom(ones255, false, CONF_POLICY_FORWARD),
		dom(ones_sub, true, CONF_POLICY_ITERATE),
	};
	put_all(f, list, sizeof(list) / sizeof(list[0]));
	struct domains *d = load(f);
	assert_int_equal(domains_count(d), 4);

	uint8_t wire[WIRE_MAX_NAME];
	assert_int_equal(wire_lc(exact255, wire), 255);
	assert_int_equal(wire_lc(sub253, wire), 253);
	assert_int_equal(wire_lc(q255, wire), 255);
	assert_int_equal(wire_lc(ones255, wire), 255);
	expect_match(d, exact255, exact255);
	expect_match(d, sub253, sub253);
	expect_match(d, q255, sub253);
	expect_match(d, ones255, ones255);
	expect_match(d, ones_q, ones_sub); /* 126 labels: the walk goes up 106 of them */
	expect_match(d, ones_sub, ones_sub);
	/* the text a match gives back is the stored text, at its full length */
	const struct store_domain *r = match_text(d, exact255);
	assert_non_null(r);
	assert_int_equal(strlen(r->name), 254);
	/* one byte changed at the very end of a 255-byte name: no match */
	size_t n = wire_lc(exact255, wire);
	wire[n - 2] = 'c';
	assert_null(domains_match(d, wire, n));
	/* longer than a name can be: nothing, without reading past it */
	uint8_t big[300];
	memset(big, 1, sizeof(big));
	assert_null(domains_match(d, big, sizeof(big)));
	domains_free(d);
	assert_int_equal(fixture_store_free(f), 0);
}

/* ---- the root and the names next to it ---- */

static void test_root_adjacent(void **state)
{
	(void)state;
	struct fixture_store *f = empty_store("root");
	const struct store_domain tlds[] = {
		dom("com.", true, CONF_POLICY_ITERATE),
		dom("cn.", false, CONF_POLICY_FORWARD),
		dom("a.", true, CONF_POLICY_FORWARD),
	};
	put_all(f, tlds, sizeof(tlds) / sizeof(tlds[0]));
	struct domains *d = load(f);
	expect_match(d, "com.", "com.");
	expect_match(d, "example.com.", "com.");
	expect_match(d, "com.cn.", NULL);   /* below an exact TLD */
	expect_match(d, "cn.", "cn.");
	expect_match(d, "a.", "a.");
	expect_match(d, "b.a.", "a.");
	expect_match(d, "a.b.", NULL);
	expect_match(d, "b.", NULL);
	expect_match(d, ".", NULL);
	expect_match(d, "co.", NULL);
	expect_match(d, "comx.", NULL);
	domains_free(d);

	/* the root as an exact entry: only the root */
	struct store_domain root = dom(".", false, CONF_POLICY_ITERATE);
	put_all(f, &root, 1);
	d = load(f);
	expect_match(d, ".", ".");
	expect_match(d, "b.", NULL);
	expect_match(d, "x.cn.", NULL);
	expect_match(d, "x.com.", "com.");
	domains_free(d);

	/* the root as a --subtree entry: every name, the nearest entry first */
	root.subtree = true;
	root.policy = CONF_POLICY_FORWARD;
	put_all(f, &root, 1);
	d = load(f);
	expect_match(d, ".", ".");
	expect_match(d, "b.", ".");
	expect_match(d, "x.cn.", ".");
	expect_match(d, "cn.", "cn.");
	expect_match(d, "x.com.", "com.");
	expect_match(d, "b.a.", "a.");
	const struct store_domain *r = match_text(d, "anything.example.");
	assert_non_null(r);
	assert_true(r->subtree);
	assert_int_equal(r->policy, CONF_POLICY_FORWARD);
	assert_string_equal(r->name, ".");
	domains_free(d);
	assert_int_equal(fixture_store_free(f), 0);
}

/* ---- rules with forward targets ---- */

static void test_forward_round_trip(void **state)
{
	(void)state;
	struct fixture_store *f = empty_store("forward");
	enum { N = 40 };
	struct store_domain list[N + 4];
	size_t n = 0;
	for (size_t i = 0; i < N; i++) { /* many domains, four target sets between them */
		char name[64];
		snprintf(name, sizeof(name), "f%zu.shared.example.", i);
		list[n] = dom(name, i % 2 == 0, CONF_POLICY_FORWARD);
		switch (i % 5) {
		case 0: break; /* forward, no targets: edns.forward */
		case 1: list[n].forward[list[n].nforward++] = target("198.51.100.53", 53); break;
		case 2:
			list[n].forward[list[n].nforward++] = target("198.51.100.53", 53);
			list[n].forward[list[n].nforward++] = target("2001:db8::53", 5353);
			break;
		case 3:
			list[n].forward[list[n].nforward++] = target("2001:db8::53", 5353);
			list[n].forward[list[n].nforward++] = target("198.51.100.53", 53); /* order kept */
			break;
		default: list[n].policy = CONF_POLICY_ITERATE; break;
		}
		n++;
	}
	list[n] = dom("max.example.", false, CONF_POLICY_FORWARD);
	for (unsigned i = 0; i < STORE_MAX_FORWARD; i++) {
		char host[32];
		snprintf(host, sizeof(host), i % 2 ? "203.0.113.%u" : "2001:db8:ffff::%u", i + 1);
		list[n].forward[list[n].nforward++] = target(host, (uint16_t)(1000 + i));
	}
	n++;
	list[n] = dom("port.example.", true, CONF_POLICY_FORWARD);
	list[n].forward[list[n].nforward++] = target("2001:db8:ffff::1", 65535);
	n++;
	list[n] = dom("one.example.", false, CONF_POLICY_FORWARD);
	list[n].forward[list[n].nforward++] = target("192.0.2.1", 53);
	n++;
	list[n] = dom("plain.example.", false, CONF_POLICY_ITERATE);
	n++;
	put_all(f, list, n);
	struct domains *d = load(f);
	assert_int_equal(domains_count(d), n);
	for (size_t i = 0; i < n; i++) {
		const struct store_domain *r = match_text(d, list[i].name);
		if (r == NULL || strcmp(r->name, list[i].name) != 0)
			fail_msg("%s matched %s", list[i].name, r ? r->name : "nothing");
		assert_rule_as_stored(f->store, r);
		if (list[i].subtree) {
			char below[300];
			snprintf(below, sizeof(below), "w.%.255s", list[i].name);
			r = match_text(d, below);
			assert_non_null(r);
			assert_string_equal(r->name, list[i].name);
			assert_rule_as_stored(f->store, r);
		}
	}
	/* eight targets, then one: the second result says one */
	const struct store_domain *r = match_text(d, "max.example.");
	assert_non_null(r);
	assert_int_equal(r->nforward, STORE_MAX_FORWARD);
	r = match_text(d, "one.example.");
	assert_non_null(r);
	assert_int_equal(r->nforward, 1);
	assert_string_equal(r->forward[0].text, "192.0.2.1@53");
	assert_rule_as_stored(f->store, r);
	domains_free(d);
	assert_int_equal(fixture_store_free(f), 0);
}

/* ---- empty sets ---- */

static void test_empty_store(void **state)
{
	(void)state;
	struct fixture_store *f = empty_store("empty"); /* its set was loaded from the empty store */
	assert_int_equal(domains_count(f->domains), 0);
	expect_match(f->domains, "video.customer.example.", NULL);
	expect_match(f->domains, ".", NULL);
	struct domains *d = load(f);
	assert_int_equal(domains_count(d), 0);
	expect_match(d, "a.", NULL);
	domains_free(d);
	/* no set at all */
	uint8_t wire[WIRE_MAX_NAME];
	size_t n = wire_lc("a.example.", wire);
	assert_null(domains_match(NULL, wire, n));
	assert_int_equal(domains_count(NULL), 0);
	domains_free(NULL);
	/* every domain deleted: empty again */
	struct store_domain one = dom("a.example.", true, CONF_POLICY_ITERATE);
	put_all(f, &one, 1);
	d = load(f);
	expect_match(d, "b.a.example.", "a.example.");
	domains_free(d);
	assert_int_equal(store_del(f->store, "a.example."), 0);
	d = load(f);
	assert_int_equal(domains_count(d), 0);
	expect_match(d, "b.a.example.", NULL);
	domains_free(d);
	assert_int_equal(fixture_store_free(f), 0);
}

/* ---- a store change: the new set loaded while the old one is in use ---- */

static void test_reload_while_in_use(void **state)
{
	(void)state;
	struct fixture_store *f = empty_store("reload");
	const struct store_domain first[] = {
		dom("old.example.", true, CONF_POLICY_ITERATE),
		dom("kept.example.", false, CONF_POLICY_ITERATE),
	};
	put_all(f, first, 2);
	uint64_t v1 = 0, v2 = 0;
	struct domains *old = NULL, *cur = NULL;
	assert_int_equal(domains_load(f->store, &old, &v1), 0);
	assert_int_equal(store_del(f->store, "old.example."), 0);
	struct store_domain changed = dom("kept.example.", true, CONF_POLICY_FORWARD);
	changed.forward[changed.nforward++] = target("192.0.2.9", 5300);
	const struct store_domain second[] = { changed, dom("new.example.", false, CONF_POLICY_ITERATE) };
	put_all(f, second, 2);
	assert_int_equal(domains_load(f->store, &cur, &v2), 0);
	assert_true(v2 > v1);
	/* each set answers as the store was when it was read */
	expect_match(old, "a.old.example.", "old.example.");
	expect_match(old, "a.kept.example.", NULL);
	expect_match(old, "new.example.", NULL);
	expect_match(cur, "a.old.example.", NULL);
	expect_match(cur, "new.example.", "new.example.");
	const struct store_domain *r = match_text(cur, "a.kept.example.");
	assert_non_null(r);
	assert_int_equal(r->policy, CONF_POLICY_FORWARD);
	assert_int_equal(r->nforward, 1);
	assert_string_equal(r->forward[0].text, "192.0.2.9@5300");
	r = match_text(old, "kept.example.");
	assert_non_null(r);
	assert_false(r->subtree);
	assert_int_equal(r->nforward, 0);
	/* a result is the caller's copy: it outlives the set it came from */
	domains_free(old);
	assert_string_equal(r->name, "kept.example.");
	assert_int_equal(r->policy, CONF_POLICY_ITERATE);
	domains_free(cur);
	assert_int_equal(fixture_store_free(f), 0);
}

/* ---- matching from many threads at once ---- */

struct reader {
	const struct domains *d;
	unsigned id;
	size_t bad;
};

static void *reader_main(void *arg)
{
	struct reader *rd = arg;
	char text[300], below[320];
	for (size_t k = 0; k < 20000; k++) {
		size_t i = (k * 7919 + rd->id * 104729) % MANY;
		many_name(i, text, sizeof(text));
		snprintf(below, sizeof(below), "t%u.%s", rd->id, text);
		uint8_t wire[WIRE_MAX_NAME];
		int n = wire_name_from_text(i % 4 == 0 ? below : text, wire, sizeof(wire));
		const struct store_domain *r = n > 0 ? domains_match(rd->d, wire, (size_t)n) : NULL;
		if (r == NULL || strcmp(r->name, text) != 0 || r->subtree != (i % 4 == 0))
			rd->bad++;
	}
	return NULL;
}

static void test_threads(void **state)
{
	(void)state;
	struct fixture_store *f = empty_store("threads");
	struct store_domain *list = calloc(MANY, sizeof(*list));
	assert_non_null(list);
	for (size_t i = 0; i < MANY; i++) {
		many_name(i, list[i].name, sizeof(list[i].name));
		list[i].subtree = i % 4 == 0;
	}
	put_all(f, list, MANY);
	free(list);
	struct domains *d = load(f);
	enum { NT = 4 };
	pthread_t th[NT];
	struct reader rd[NT];
	for (unsigned t = 0; t < NT; t++) {
		rd[t] = (struct reader){ .d = d, .id = t };
		assert_int_equal(pthread_create(&th[t], NULL, reader_main, &rd[t]), 0);
	}
	for (unsigned t = 0; t < NT; t++) {
		assert_int_equal(pthread_join(th[t], NULL), 0);
		assert_int_equal(rd[t].bad, 0);
	}
	domains_free(d);
	assert_int_equal(fixture_store_free(f), 0);
}

/* ---- loading while the store changes: each set is one snapshot of it ---- */

enum { BATCH = 300, NBATCH = 60 };

static void batch_name(size_t b, size_t i, char *out, size_t size)
{
	snprintf(out, size, "n%zu.batch%zu.growing-store-with-longer-names.example.", i, b);
}

struct writer {
	struct store *s;
	int rc;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct store_domain *list = calloc(BATCH, sizeof(*list));
	if (list == NULL) {
		w->rc = -ENOMEM;
		return NULL;
	}
	for (size_t b = 0; b < NBATCH && w->rc == 0; b++) {
		for (size_t i = 0; i < BATCH; i++) {
			batch_name(b, i, list[i].name, sizeof(list[i].name));
			list[i].subtree = i % 2 == 0;
		}
		w->rc = store_put_many(w->s, list, BATCH, NULL); /* one transaction per batch */
	}
	free(list);
	return NULL;
}

static void test_load_while_writing(void **state)
{
	(void)state;
	struct fixture_store *f = empty_store("growing");
	struct writer w = { .s = f->store, .rc = 0 };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, writer_main, &w), 0);
	size_t loads = 0, last = 0;
	char text[300];
	for (;;) {
		struct domains *d = load(f);
		size_t n = domains_count(d);
		loads++;
		/* whole batches, the first n / BATCH of them, and nothing of the next */
		if (n % BATCH != 0)
			fail_msg("load %zu: %zu domains, not whole batches", loads, n);
		assert_true(n >= last);
		last = n;
		for (size_t b = 0; b < n / BATCH; b++)
			for (size_t i = 0; i < BATCH; i += 37) {
				batch_name(b, i, text, sizeof(text));
				expect_match(d, text, text);
			}
		batch_name(n / BATCH, 0, text, sizeof(text));
		expect_match(d, text, NULL);
		domains_free(d);
		if (n == (size_t)BATCH * NBATCH)
			break;
	}
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(w.rc, 0);
	assert_true(loads >= 1);
	assert_int_equal(fixture_store_free(f), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_match),
		cmocka_unit_test(test_policy_and_count),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_case_folding),
		cmocka_unit_test(test_many),
		cmocka_unit_test(test_subtree_nearest),
		cmocka_unit_test(test_subtree_shortcuts_random),
		cmocka_unit_test(test_max_length),
		cmocka_unit_test(test_root_adjacent),
		cmocka_unit_test(test_forward_round_trip),
		cmocka_unit_test(test_empty_store),
		cmocka_unit_test(test_reload_while_in_use),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_load_while_writing),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
