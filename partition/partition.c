/* SPDX-License-Identifier: BSD-3-Clause */
/* Partitions: ids and names, their prefixes, and the LPM classifier over them. */
#include "partition/partition.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "partition/lpm.h"
#include "util/vec.h"

#define COMMON_NAME "common"

struct part {
	char *name;
	size_t count4, count6;
	uint32_t *entries; /* lpm insertion indices of this partition's prefixes, in order */
	size_t nentries, cap;
};

struct ptable {
	struct lpm *lpm; /* value = partition id */
	struct part *parts; /* [0] unused (common), [1..n] */
	size_t n, cap;
	bool built;
};

struct ptable *ptable_new(void)
{
	struct ptable *t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	t->lpm = lpm_new();
	if (t->lpm == NULL) {
		free(t);
		return NULL;
	}
	return t;
}

void ptable_free(struct ptable *t)
{
	if (t == NULL)
		return;
	for (size_t i = 1; i <= t->n; i++) {
		free(t->parts[i].name);
		free(t->parts[i].entries);
	}
	free(t->parts);
	lpm_free(t->lpm);
	free(t);
}

/* The partition of id, or NULL for PARTITION_COMMON and unknown ids. */
static const struct part *get_part(const struct ptable *t, unsigned id)
{
	if (t == NULL || id == PARTITION_COMMON || id > t->n)
		return NULL;
	return &t->parts[id];
}

int ptable_find(const struct ptable *t, const char *name)
{
	if (t == NULL || name == NULL)
		return -ENOENT;
	if (strcmp(name, COMMON_NAME) == 0)
		return PARTITION_COMMON;
	for (size_t i = 1; i <= t->n; i++)
		if (strcmp(t->parts[i].name, name) == 0)
			return (int)i;
	return -ENOENT;
}

int ptable_add(struct ptable *t, const char *name)
{
	if (t == NULL || name == NULL || name[0] == '\0' || strcmp(name, COMMON_NAME) == 0)
		return -EINVAL;
	if (ptable_find(t, name) >= 0)
		return -EEXIST;
	if (t->n >= PARTITION_MAX)
		return -ENOSPC;
	if (vec_grow(&t->parts, &t->cap, t->n + 2, sizeof(*t->parts), PARTITION_MAX + 1) != 0)
		return -ENOMEM;
	char *copy = strdup(name);
	if (copy == NULL)
		return -ENOMEM;
	if (t->n == 0)
		memset(&t->parts[0], 0, sizeof(t->parts[0]));
	t->n++;
	t->parts[t->n] = (struct part){ .name = copy };
	return (int)t->n;
}

int ptable_add_prefix(struct ptable *t, unsigned id, const struct prefix *p, unsigned *other)
{
	if (t == NULL || p == NULL)
		return -EINVAL;
	if (get_part(t, id) == NULL)
		return -ENOENT;
	if (t->built)
		return -EINVAL;
	struct part *part = &t->parts[id];
	if (vec_grow(&part->entries, &part->cap, part->nentries + 1, sizeof(*part->entries), UINT32_MAX) != 0)
		return -ENOMEM;
	size_t index = lpm_count(t->lpm);
	uint32_t existing;
	int rc = lpm_insert(t->lpm, p, id, &existing);
	if (rc == -EEXIST && other != NULL)
		*other = existing;
	if (rc != 0)
		return rc;
	part->entries[part->nentries++] = (uint32_t)index;
	if (p->family == AF_INET)
		part->count4++;
	else
		part->count6++;
	return 0;
}

int ptable_build(struct ptable *t)
{
	if (t == NULL)
		return -EINVAL;
	int rc = lpm_build(t->lpm);
	if (rc == 0)
		t->built = true;
	return rc;
}

unsigned ptable_lookup(const struct ptable *t, int family, const uint8_t *addr, struct prefix *matched)
{
	uint32_t v = lpm_lookup(t != NULL ? t->lpm : NULL, family, addr, matched);
	return v == LPM_NONE ? PARTITION_COMMON : v;
}

const char *ptable_name(const struct ptable *t, unsigned id)
{
	if (id == PARTITION_COMMON)
		return COMMON_NAME;
	const struct part *p = get_part(t, id);
	return p != NULL ? p->name : NULL;
}

size_t ptable_size(const struct ptable *t)
{
	return t != NULL ? t->n : 0;
}

size_t ptable_prefix_count(const struct ptable *t, unsigned id, int family)
{
	const struct part *p = get_part(t, id);
	if (p == NULL)
		return 0;
	switch (family) {
	case AF_INET:
		return p->count4;
	case AF_INET6:
		return p->count6;
	case 0:
		return p->count4 + p->count6;
	default:
		return 0;
	}
}

int ptable_foreach_prefix(const struct ptable *t, unsigned id,
                          int (*fn)(const struct prefix *p, void *arg), void *arg)
{
	const struct part *part = get_part(t, id);
	if (part == NULL || fn == NULL)
		return 0;
	for (size_t i = 0; i < part->nentries; i++) {
		struct prefix p;
		lpm_get(t->lpm, part->entries[i], &p);
		int rc = fn(&p, arg);
		if (rc != 0)
			return rc;
	}
	return 0;
}

size_t ptable_memory(const struct ptable *t)
{
	if (t == NULL)
		return 0;
	size_t m = sizeof(*t) + t->cap * sizeof(*t->parts) + lpm_memory(t->lpm);
	for (size_t i = 1; i <= t->n; i++)
		m += strlen(t->parts[i].name) + 1 + t->parts[i].cap * sizeof(uint32_t);
	return m;
}
