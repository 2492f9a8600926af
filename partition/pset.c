/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Prefix sets. The prefixes of all lists go into one LPM table, each with
 * the bits of every list that has a prefix containing it (itself included).
 * The longest prefix P of the table that contains an address then answers
 * for every list at once: a list's prefix L containing the address is in
 * the table and, the prefixes containing one address being nested, P is L
 * or lies inside L, so L's bit is in P's value; and a list's prefix
 * containing P contains the address. Building sorts the prefixes by
 * (family, address, length), a pre-order walk of their tree, and carries
 * the bits down with a stack of the enclosing prefixes.
 */
#include "partition/pset.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "partition/lpm.h"
#include "util/vec.h"

/* Entries a set takes: the LPM's own limit is far above any ACL. */
#define PSET_MAX_ENTRIES (1u << 28)

struct entry {
	struct prefix p; /* host bits clear */
	uint32_t bits;
};

struct pset {
	struct entry *e;
	size_t n, cap;
	size_t added;    /* pset_add calls that succeeded */
	struct lpm *lpm; /* after build */
	bool built;
};

struct pset *pset_new(void)
{
	return calloc(1, sizeof(struct pset));
}

void pset_free(struct pset *s)
{
	if (s == NULL)
		return;
	free(s->e);
	lpm_free(s->lpm);
	free(s);
}

int pset_add(struct pset *s, const struct prefix *p, unsigned list)
{
	if (s == NULL || p == NULL || s->built || list >= PSET_MAX_LISTS)
		return -EINVAL;
	unsigned bits = prefix_family_bits(p->family);
	if (bits == 0 || p->len > bits)
		return -EINVAL;
	if (vec_grow(&s->e, &s->cap, s->n + 1, sizeof(*s->e), PSET_MAX_ENTRIES) != 0)
		return -ENOMEM;
	struct entry *en = &s->e[s->n++];
	memset(&en->p, 0, sizeof(en->p));
	en->p.family = p->family;
	en->p.len = p->len;
	memcpy(en->p.addr, p->addr, bits / 8);
	prefix_mask(&en->p);
	en->bits = 1u << list;
	s->added++;
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct prefix *x = &((const struct entry *)a)->p, *y = &((const struct entry *)b)->p;
	if (x->family != y->family)
		return x->family < y->family ? -1 : 1;
	int c = memcmp(x->addr, y->addr, sizeof(x->addr));
	if (c != 0)
		return c;
	return (int)x->len - (int)y->len;
}

int pset_build(struct pset *s)
{
	if (s == NULL)
		return -EINVAL;
	if (s->built)
		return 0;
	struct lpm *t = lpm_new();
	if (t == NULL)
		return -ENOMEM;
	if (s->n > 0)
		qsort(s->e, s->n, sizeof(*s->e), cmp_entry);
	/* the same prefix in several lists (or twice): one entry with every bit */
	size_t m = 0;
	for (size_t i = 0; i < s->n; i++) {
		if (m > 0 && cmp_entry(&s->e[m - 1], &s->e[i]) == 0)
			s->e[m - 1].bits |= s->e[i].bits;
		else
			s->e[m++] = s->e[i];
	}
	s->n = m;
	/* enclosing prefixes of the current one, outermost first; each with the bits it carries */
	struct entry stack[129];
	size_t depth = 0;
	int rc = 0;
	for (size_t i = 0; i < s->n && rc == 0; i++) {
		struct entry cur = s->e[i];
		while (depth > 0 && !prefix_contains(&stack[depth - 1].p, &cur.p))
			depth--;
		if (depth > 0)
			cur.bits |= stack[depth - 1].bits;
		stack[depth++] = cur; /* nested prefixes have distinct lengths 0..128: depth stays <= 129 */
		rc = lpm_insert(t, &cur.p, cur.bits, NULL);
	}
	if (rc == 0)
		rc = lpm_build(t);
	if (rc != 0) {
		lpm_free(t);
		return rc == -EINVAL ? -EINVAL : -ENOMEM;
	}
	s->lpm = t;
	s->built = true;
	/* the LPM keeps the prefixes; the entries are not needed any more */
	free(s->e);
	s->e = NULL;
	s->cap = 0;
	return 0;
}

uint32_t pset_lookup(const struct pset *s, int family, const uint8_t *addr)
{
	if (s == NULL || s->lpm == NULL)
		return 0;
	uint32_t v = lpm_lookup(s->lpm, family, addr, NULL);
	return v == LPM_NONE ? 0 : v;
}

size_t pset_count(const struct pset *s)
{
	return s ? s->added : 0;
}

size_t pset_memory(const struct pset *s)
{
	if (s == NULL)
		return 0;
	return sizeof(*s) + s->cap * sizeof(*s->e) + lpm_memory(s->lpm);
}
