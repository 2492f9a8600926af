/* SPDX-License-Identifier: BSD-3-Clause */
/* EDNS-domain set: an open-addressing hash of lower-cased wire names. */
#include "resolver/domains.h"
#include "resolver/wire.h"
#include "util/hash.h"
#include "util/vec.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct dom_entry {
	uint8_t name[256]; /* lower-cased wire form */
	size_t len;
	struct store_domain rule;
};

struct domains {
	struct dom_entry *entries;
	size_t count, cap;
	size_t nsubtree; /* no --subtree entry: a miss needs no walk up */
	size_t *slots; /* index+1 into entries, 0 = empty; cap is a power of two */
	size_t nslots;
	struct hash_key key; /* matching runs on query names: a random hash key */
};

struct domains *domains_empty(void)
{
	struct domains *d = calloc(1, sizeof(*d));
	if (d == NULL)
		return NULL;
	hash_key_random(&d->key);
	d->nslots = 16;
	d->slots = calloc(d->nslots, sizeof(size_t));
	if (d->slots == NULL) {
		free(d);
		return NULL;
	}
	return d;
}

void domains_free(struct domains *d)
{
	if (d == NULL)
		return;
	free(d->entries);
	free(d->slots);
	free(d);
}

static int add_rule(const struct store_domain *rule, void *arg)
{
	struct domains *d = arg;
	int rc = vec_grow(&d->entries, &d->cap, d->count + 1, sizeof(*d->entries), DOMAINS_MAX);
	if (rc != 0)
		return rc;
	struct dom_entry *e = &d->entries[d->count];
	int n = wire_name_from_text(rule->name, e->name, sizeof(e->name));
	if (n < 0)
		return 0; /* the store validates names; skip anything odd */
	e->len = (size_t)n;
	wire_name_lower(e->name, e->len, e->name);
	e->rule = *rule;
	if (rule->subtree)
		d->nsubtree++;
	d->count++;
	return 0;
}

static int build_index(struct domains *d)
{
	size_t n = 16;
	while (n < d->count * 2)
		n <<= 1;
	free(d->slots);
	d->slots = calloc(n, sizeof(size_t));
	if (d->slots == NULL)
		return -ENOMEM;
	d->nslots = n;
	for (size_t i = 0; i < d->count; i++) {
		size_t s = hash_bytes(&d->key, d->entries[i].name, d->entries[i].len) & (n - 1);
		while (d->slots[s] != 0)
			s = (s + 1) & (n - 1);
		d->slots[s] = i + 1;
	}
	return 0;
}

int domains_load(struct store *s, struct domains **out, uint64_t *version)
{
	struct domains *d = domains_empty();
	if (d == NULL)
		return -ENOMEM;
	uint64_t v = 0;
	int rc = store_version(s, &v);
	if (rc == 0)
		rc = store_foreach(s, add_rule, d);
	if (rc == 0)
		rc = build_index(d);
	if (rc != 0) {
		domains_free(d);
		return rc;
	}
	if (version)
		*version = v;
	*out = d;
	return 0;
}

static const struct dom_entry *find(const struct domains *d, const uint8_t *name, size_t len)
{
	size_t mask = d->nslots - 1;
	size_t s = hash_bytes(&d->key, name, len) & mask;
	while (d->slots[s] != 0) {
		const struct dom_entry *e = &d->entries[d->slots[s] - 1];
		if (e->len == len && memcmp(e->name, name, len) == 0)
			return e;
		s = (s + 1) & mask;
	}
	return NULL;
}

const struct store_domain *domains_match(const struct domains *d, const uint8_t *qname, size_t len)
{
	if (d == NULL || d->count == 0 || len == 0)
		return NULL;
	const struct dom_entry *e = find(d, qname, len);
	if (e != NULL)
		return &e->rule;
	if (d->nsubtree == 0)
		return NULL;
	/* Walk up label by label looking for a --subtree entry. */
	size_t off = 0;
	while (off < len && qname[off] != 0) {
		off += (size_t)qname[off] + 1;
		if (off >= len)
			break;
		e = find(d, qname + off, len - off);
		if (e != NULL && e->rule.subtree)
			return &e->rule;
	}
	return NULL;
}

size_t domains_count(const struct domains *d)
{
	return d ? d->count : 0;
}
