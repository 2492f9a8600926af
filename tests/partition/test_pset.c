/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of partition/pset.c: one lookup gives what a scan of every list gives. */
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

#include "partition/prefix.h"
#include "partition/pset.h"

/* splitmix64 */
static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static struct prefix parse(const char *text)
{
	struct prefix p;
	if (prefix_parse(text, &p) != 0)
		fail_msg("test bug: cannot parse %s", text);
	return p;
}

struct list {
	struct prefix p[400];
	size_t n;
};

/* The reference: the linear scan the resolver used to do per list. */
static uint32_t scan(const struct list *lists, unsigned nlists, int family, const uint8_t *addr)
{
	struct prefix host;
	prefix_from_addr(&host, family, addr);
	uint32_t bits = 0;
	for (unsigned l = 0; l < nlists; l++)
		for (size_t i = 0; i < lists[l].n; i++)
			if (prefix_contains(&lists[l].p[i], &host)) {
				bits |= 1u << l;
				break;
			}
	return bits;
}

/* A random address near one of a few bases, so that prefixes nest and overlap. */
static void near(uint64_t *s, int family, uint8_t *addr)
{
	static const uint8_t base4[3][4] = { { 10, 1, 2, 3 }, { 127, 0, 0, 1 }, { 192, 0, 2, 200 } };
	static const uint8_t base6[2][16] = { { 0x20, 0x01, 0x0d, 0xb8, 0, 1 }, { 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 } };
	unsigned n = family == AF_INET ? 4 : 16;
	uint64_t r = rnd(s);
	if (r % 5 == 0) { /* anywhere */
		for (unsigned i = 0; i < n; i++)
			addr[i] = (uint8_t)rnd(s);
		return;
	}
	memcpy(addr, family == AF_INET ? base4[r % 3] : base6[r % 2], n);
	/* flip a few bits, mostly low ones */
	unsigned flips = (unsigned)(rnd(s) % 4);
	for (unsigned f = 0; f < flips; f++) {
		unsigned bit = (unsigned)(rnd(s) % (n * 8));
		if (rnd(s) % 2)
			bit = n * 8 - 1 - bit / 3;
		addr[bit / 8] ^= (uint8_t)(0x80 >> (bit % 8));
	}
}

static struct prefix random_prefix(uint64_t *s)
{
	struct prefix p;
	memset(&p, 0, sizeof(p));
	p.family = rnd(s) % 3 ? AF_INET : AF_INET6;
	near(s, p.family, p.addr);
	unsigned bits = p.family == AF_INET ? 32 : 128;
	uint64_t r = rnd(s) % 10;
	p.len = (uint8_t)(r == 0 ? 0 : r == 1 ? bits : rnd(s) % (bits + 1));
	if (rnd(s) % 4 != 0) /* host bits are ignored by both sides: leave some set */
		prefix_mask(&p);
	return p;
}

static void test_random_against_scan(void **state)
{
	(void)state;
	uint64_t seed = 42;
	static struct list lists[PSET_MAX_LISTS];
	for (int round = 0; round < 60; round++) {
		unsigned nlists = 1 + (unsigned)(rnd(&seed) % (round % 7 == 0 ? PSET_MAX_LISTS : 3));
		struct pset *s = pset_new();
		assert_non_null(s);
		size_t added = 0;
		for (unsigned l = 0; l < nlists; l++) {
			size_t max = round % 3 == 0 ? 400 : 12;
			lists[l].n = (size_t)(rnd(&seed) % (max + 1));
			for (size_t i = 0; i < lists[l].n; i++) {
				/* sometimes the same prefix as an earlier one, of this list or another */
				if (i > 0 && rnd(&seed) % 8 == 0)
					lists[l].p[i] = lists[l].p[rnd(&seed) % i];
				else if (l > 0 && lists[l - 1].n > 0 && rnd(&seed) % 8 == 0)
					lists[l].p[i] = lists[l - 1].p[rnd(&seed) % lists[l - 1].n];
				else
					lists[l].p[i] = random_prefix(&seed);
				assert_int_equal(pset_add(s, &lists[l].p[i], l), 0);
				added++;
			}
		}
		assert_int_equal(pset_lookup(s, AF_INET, (const uint8_t[4]){ 10, 1, 2, 3 }), 0); /* not built */
		assert_int_equal(pset_build(s), 0);
		assert_int_equal(pset_build(s), 0);
		assert_int_equal(pset_count(s), added);
		for (int k = 0; k < 4000; k++) {
			int family = rnd(&seed) % 3 ? AF_INET : AF_INET6;
			uint8_t addr[16];
			if (rnd(&seed) % 2 == 0 && nlists > 0) {
				/* inside (or at the edge of) a prefix of some list */
				const struct list *L = &lists[rnd(&seed) % nlists];
				if (L->n == 0)
					continue;
				const struct prefix *p = &L->p[rnd(&seed) % L->n];
				family = p->family;
				memcpy(addr, p->addr, 16);
				unsigned bits = family == AF_INET ? 32 : 128;
				for (unsigned b = p->len; b < bits; b++)
					if (rnd(&seed) % 2)
						addr[b / 8] ^= (uint8_t)(0x80 >> (b % 8));
			} else {
				near(&seed, family, addr);
			}
			uint32_t want = scan(lists, nlists, family, addr), got = pset_lookup(s, family, addr);
			if (want != got) {
				struct prefix h;
				char buf[PREFIX_STRLEN];
				prefix_from_addr(&h, family, addr);
				prefix_format(&h, buf, sizeof(buf));
				fail_msg("round %d: %s: lists 0x%x, scan says 0x%x", round, buf, got, want);
			}
		}
		pset_free(s);
	}
}

static void test_edges(void **state)
{
	(void)state;
	uint8_t a4[4] = { 192, 0, 2, 1 }, a6[16] = { 0x20, 0x01, 0x0d, 0xb8 };
	assert_int_equal(pset_lookup(NULL, AF_INET, a4), 0);
	pset_free(NULL);

	/* empty: nothing is in any list */
	struct pset *s = pset_new();
	assert_non_null(s);
	assert_int_equal(pset_build(s), 0);
	assert_int_equal(pset_lookup(s, AF_INET, a4), 0);
	assert_int_equal(pset_lookup(s, AF_INET6, a6), 0);
	struct prefix p = parse("10.0.0.0/8");
	assert_int_equal(pset_add(s, &p, 0), -EINVAL); /* after build */
	pset_free(s);

	s = pset_new();
	assert_non_null(s);
	assert_int_equal(pset_add(s, &p, PSET_MAX_LISTS), -EINVAL);
	struct prefix bad = p;
	bad.len = 33;
	assert_int_equal(pset_add(s, &bad, 0), -EINVAL);
	bad.family = 99;
	assert_int_equal(pset_add(s, &bad, 0), -EINVAL);
	/* 0.0.0.0/0 in list 2 covers every IPv4 address and no IPv6 one */
	struct prefix all4 = parse("0.0.0.0/0"), host6 = parse("2001:db8::/128"), net = parse("192.0.2.0/24");
	assert_int_equal(pset_add(s, &all4, 2), 0);
	assert_int_equal(pset_add(s, &host6, 30), 0);
	assert_int_equal(pset_add(s, &net, 0), 0);
	assert_int_equal(pset_add(s, &net, 1), 0);
	assert_int_equal(pset_add(s, &net, 0), 0);
	assert_int_equal(pset_count(s), 5);
	assert_int_equal(pset_build(s), 0);
	assert_int_equal(pset_lookup(s, AF_INET, a4), 0x7);
	assert_int_equal(pset_lookup(s, AF_INET, (const uint8_t[4]){ 192, 0, 3, 1 }), 0x4);
	assert_int_equal(pset_lookup(s, AF_INET6, a6), 1u << 30);
	a6[15] = 1;
	assert_int_equal(pset_lookup(s, AF_INET6, a6), 0);
	assert_int_equal(pset_lookup(s, 99, a6), 0);
	assert_true(pset_memory(s) > 0);
	pset_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_against_scan),
		cmocka_unit_test(test_edges),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
