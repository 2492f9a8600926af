/* SPDX-License-Identifier: BSD-3-Clause */
/* Partitions on their standby identity: see standby.h. */
#include "resolver/view/standby.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "mapping/mapping.h"
#include "partition/partition.h"
#include "partition/prefix.h"
#include "resolver/base/log.h"

struct standby_entry {
	bool on;
	struct ecs v4, v6; /* what IPv4 and IPv6 clients send */
	char to[64];
};

struct standby {
	size_t n;     /* ids 1..n */
	size_t count; /* entries on */
	struct standby_entry e[];
};

/* An address standby: one identity for both families, as mapped alone would be. */
static int address_ecs(const char *text, struct ecs *out)
{
	struct prefix p;
	if (prefix_parse(text, &p) != 0 && prefix_parse_addr(text, &p) != 0)
		return -1;
	memset(out, 0, sizeof(*out));
	out->family = p.family == AF_INET ? ECS_FAMILY_IPV4 : ECS_FAMILY_IPV6;
	out->source = p.len;
	memcpy(out->addr, p.addr, p.family == AF_INET ? 4 : 16);
	return 0;
}

struct standby *standby_build(const struct conf *c, const struct store_standby *list, size_t n)
{
	const struct ptable *t = c->partitions.table;
	size_t np = ptable_size(t);
	struct standby *s = calloc(1, sizeof(*s) + (np + 1) * sizeof(s->e[0]));
	if (s == NULL)
		return NULL;
	s->n = np;
	for (size_t i = 0; i < n; i++) {
		const struct store_standby *b = &list[i];
		int id = ptable_find(t, b->partition);
		if (id <= 0) {
			log_warn("standby: partition '%s' is failed over in the store but not in the plan; ignored "
			         "(partdnsctl partition failback %s)", b->partition, b->partition);
			continue;
		}
		const struct mapping_entry *me = mapping_get(c->partitions.mapping, (unsigned)id);
		const char *to = b->to[0] != '\0' ? b->to : me != NULL ? me->standby : NULL;
		struct standby_entry *e = &s->e[id];
		int tid = to != NULL ? ptable_find(t, to) : -1;
		bool ok;
		if (to == NULL)
			ok = false;
		else if (tid > 0)
			ok = (unsigned)tid != (unsigned)id &&
			     mapping_ecs(c->partitions.mapping, (unsigned)tid, AF_INET, &e->v4) == 0 &&
			     mapping_ecs(c->partitions.mapping, (unsigned)tid, AF_INET6, &e->v6) == 0;
		else
			ok = address_ecs(to, &e->v4) == 0 && (e->v6 = e->v4, true);
		if (!ok) {
			log_warn("standby: partition '%s' is failed over to '%s', which is neither another partition "
			         "with a mapped address nor an address; it keeps its own identity",
			         b->partition, to ? to : "(no standby key)");
			memset(e, 0, sizeof(*e));
			continue;
		}
		e->on = true;
		snprintf(e->to, sizeof(e->to), "%s", to);
		s->count++;
	}
	return s;
}

void standby_free(struct standby *s)
{
	free(s);
}

static const struct standby_entry *entry(const struct standby *s, unsigned id)
{
	return s != NULL && id >= 1 && id <= s->n && s->e[id].on ? &s->e[id] : NULL;
}

bool standby_ecs(const struct standby *s, unsigned id, int family, struct ecs *out)
{
	const struct standby_entry *e = entry(s, id);
	if (e == NULL)
		return false;
	*out = family == AF_INET6 ? e->v6 : e->v4;
	return true;
}

bool standby_active(const struct standby *s, unsigned id, const char **to)
{
	const struct standby_entry *e = entry(s, id);
	if (e != NULL && to != NULL)
		*to = e->to;
	return e != NULL;
}

static bool ecs_equal(const struct ecs *a, const struct ecs *b)
{
	return a->family == b->family && a->source == b->source && memcmp(a->addr, b->addr, sizeof(a->addr)) == 0;
}

bool standby_same(const struct standby *a, unsigned ia, const struct standby *b, unsigned ib)
{
	const struct standby_entry *x = entry(a, ia), *y = entry(b, ib);
	if (x == NULL || y == NULL)
		return x == y;
	return ecs_equal(&x->v4, &y->v4) && ecs_equal(&x->v6, &y->v6);
}

size_t standby_count(const struct standby *s)
{
	return s != NULL ? s->count : 0;
}
