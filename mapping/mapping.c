/* SPDX-License-Identifier: BSD-3-Clause */
/* Partition -> mapped address table, the ECS each partition sends, and the global-unicast check. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "mapping/mapping.h"

struct mapping_slot {
	bool set;
	struct mapping_entry e; /* strings owned by the slot */
};

struct mapping {
	size_t n;                   /* valid ids: 1..n */
	struct mapping_slot *slots; /* n + 1 slots; slot 0 (PARTITION_COMMON) stays unset */
};

struct mapping *mapping_new(size_t npartitions)
{
	if (npartitions > PARTITION_MAX) {
		errno = EINVAL;
		return NULL;
	}
	struct mapping *m = calloc(1, sizeof(*m));
	if (m == NULL)
		return NULL;
	m->slots = calloc(npartitions + 1, sizeof(*m->slots));
	if (m->slots == NULL) {
		free(m);
		return NULL;
	}
	m->n = npartitions;
	return m;
}

static void entry_free_strings(struct mapping_entry *e)
{
	free(e->label);
	free(e->country);
	free(e->region);
	free(e->city);
	free(e->postal);
	free(e->isp);
	free(e->standby);
}

void mapping_free(struct mapping *m)
{
	if (m == NULL)
		return;
	for (size_t i = 0; i <= m->n; i++)
		if (m->slots[i].set)
			entry_free_strings(&m->slots[i].e);
	free(m->slots);
	free(m);
}

/* strdup that keeps NULL as NULL; *ok turns false on ENOMEM. */
static char *dup_opt(const char *s, bool *ok)
{
	if (s == NULL)
		return NULL;
	char *d = strdup(s);
	if (d == NULL)
		*ok = false;
	return d;
}

/* Clear the bits of p past p->len (local so the module needs no partition code for it). */
static void mask_prefix(struct prefix *p)
{
	unsigned bits = p->family == AF_INET ? 32 : 128;
	for (unsigned i = 0; i < 16; i++) {
		unsigned first = i * 8;
		if (first >= bits || first >= p->len)
			p->addr[i] = 0;
		else if (p->len - first < 8)
			p->addr[i] &= (uint8_t)(0xff << (8 - (p->len - first)));
	}
}

int mapping_set(struct mapping *m, unsigned id, const struct mapping_entry *e)
{
	if (m == NULL || id == PARTITION_COMMON || id > m->n)
		return -ENOENT;
	struct mapping_slot *slot = &m->slots[id];
	if (e == NULL) {
		if (slot->set)
			entry_free_strings(&slot->e);
		memset(slot, 0, sizeof(*slot));
		return 0;
	}
	if (e->has_v4 && (e->v4.family != AF_INET || e->v4.len != 32))
		return -EINVAL;
	if (e->has_v6 && (e->v6.family != AF_INET6 || e->v6.len > 128))
		return -EINVAL;

	/* Copy everything first so a failed copy leaves the old entry intact. */
	struct mapping_entry c;
	memset(&c, 0, sizeof(c));
	bool ok = true;
	c.label = dup_opt(e->label, &ok);
	c.country = dup_opt(e->country, &ok);
	c.region = dup_opt(e->region, &ok);
	c.city = dup_opt(e->city, &ok);
	c.postal = dup_opt(e->postal, &ok);
	c.isp = dup_opt(e->isp, &ok);
	c.standby = dup_opt(e->standby, &ok);
	c.asn = e->asn;
	if (!ok) {
		entry_free_strings(&c);
		return -ENOMEM;
	}
	c.has_v4 = e->has_v4;
	if (c.has_v4)
		c.v4 = e->v4;
	c.has_v6 = e->has_v6;
	if (c.has_v6) {
		c.v6 = e->v6;
		mask_prefix(&c.v6);
	}

	if (slot->set)
		entry_free_strings(&slot->e);
	slot->e = c;
	slot->set = true;
	return 0;
}

const struct mapping_entry *mapping_get(const struct mapping *m, unsigned id)
{
	if (m == NULL || id == PARTITION_COMMON || id > m->n || !m->slots[id].set)
		return NULL;
	return &m->slots[id].e;
}

size_t mapping_size(const struct mapping *m)
{
	return m == NULL ? 0 : m->n;
}

int mapping_ecs(const struct mapping *m, unsigned id, int client_family, struct ecs *out)
{
	if (client_family != AF_INET && client_family != AF_INET6)
		return -EINVAL;
	const struct mapping_entry *e = mapping_get(m, id);
	if (e == NULL || (!e->has_v4 && !e->has_v6))
		return -ENOENT;
	const struct prefix *p;
	if (client_family == AF_INET6)
		p = e->has_v6 ? &e->v6 : &e->v4;
	else
		p = e->has_v4 ? &e->v4 : &e->v6;
	return ecs_from_prefix(out, p) == 0 ? 0 : -ENOENT;
}

bool mapping_has_ecs(const struct mapping *m, unsigned id)
{
	/* mapping_set keeps only addresses ecs_from_prefix takes: a /32, an IPv6 prefix up to /128 */
	const struct mapping_entry *e = mapping_get(m, id);
	return e != NULL && (e->has_v4 || e->has_v6);
}

/*
 * Special-purpose ranges (IANA IPv4/IPv6 Special-Purpose Address Registries,
 * plus multicast and the IPv6 space outside 2000::/3). The documentation
 * ranges are deliberately absent: tests and demos map to them.
 */
struct special_range {
	uint8_t len;
	uint8_t addr[16];
	int code;
};

static const struct special_range special4[] = {
	{ 8, { 0 }, MAPPING_E_UNSPECIFIED },                  /* 0/8 "this network" */
	{ 8, { 10 }, MAPPING_E_PRIVATE },                     /* RFC 1918 */
	{ 10, { 100, 64 }, MAPPING_E_CGNAT },                 /* RFC 6598 */
	{ 8, { 127 }, MAPPING_E_LOOPBACK },
	{ 16, { 169, 254 }, MAPPING_E_LINKLOCAL },
	{ 12, { 172, 16 }, MAPPING_E_PRIVATE },               /* RFC 1918 */
	{ 24, { 192, 0, 0 }, MAPPING_E_RESERVED },            /* IETF protocol assignments */
	{ 24, { 192, 88, 99 }, MAPPING_E_RESERVED },          /* 6to4 relay anycast, RFC 7526 */
	{ 16, { 192, 168 }, MAPPING_E_PRIVATE },              /* RFC 1918 */
	{ 15, { 198, 18 }, MAPPING_E_RESERVED },              /* benchmarking, RFC 2544 */
	{ 4, { 224 }, MAPPING_E_MULTICAST },
	{ 4, { 240 }, MAPPING_E_RESERVED },                   /* also holds 255.255.255.255 */
};

static const struct special_range special6[] = {
	{ 128, { 0 }, MAPPING_E_UNSPECIFIED },                               /* :: */
	{ 128, { [15] = 1 }, MAPPING_E_LOOPBACK },                           /* ::1 */
	{ 96, { [10] = 0xff, [11] = 0xff }, MAPPING_E_RESERVED },            /* IPv4-mapped */
	{ 96, { 0, 0x64, 0xff, 0x9b }, MAPPING_E_RESERVED },                 /* NAT64 well-known, RFC 6052 */
	{ 48, { 0, 0x64, 0xff, 0x9b, 0, 1 }, MAPPING_E_RESERVED },           /* local NAT64, RFC 8215 */
	{ 64, { 0x01, 0x00 }, MAPPING_E_RESERVED },                          /* discard-only, RFC 6666 */
	{ 23, { 0x20, 0x01 }, MAPPING_E_RESERVED },                          /* IETF protocol assignments, Teredo */
	{ 16, { 0x20, 0x02 }, MAPPING_E_RESERVED },                          /* 6to4 */
	{ 7, { 0xfc }, MAPPING_E_PRIVATE },                                  /* unique local, RFC 4193 */
	{ 10, { 0xfe, 0x80 }, MAPPING_E_LINKLOCAL },
	{ 8, { 0xff }, MAPPING_E_MULTICAST },
};

/* Do the first min(a_len, b_len) bits of a and b agree, i.e. do the prefixes overlap? */
static bool overlaps(const uint8_t *a, unsigned a_len, const uint8_t *b, unsigned b_len)
{
	unsigned bits = a_len < b_len ? a_len : b_len;
	unsigned full = bits / 8, rem = bits % 8;
	if (memcmp(a, b, full) != 0)
		return false;
	if (rem == 0)
		return true;
	uint8_t mask = (uint8_t)(0xff << (8 - rem));
	return (a[full] & mask) == (b[full] & mask);
}

int mapping_check_global(const struct prefix *addr)
{
	const struct special_range *table;
	size_t count;
	if (addr->family == AF_INET && addr->len <= 32) {
		table = special4;
		count = sizeof(special4) / sizeof(special4[0]);
	} else if (addr->family == AF_INET6 && addr->len <= 128) {
		table = special6;
		count = sizeof(special6) / sizeof(special6[0]);
	} else {
		return -EINVAL;
	}
	/* First match wins, so a very short prefix is named after the first range it covers. */
	for (size_t i = 0; i < count; i++)
		if (overlaps(addr->addr, addr->len, table[i].addr, table[i].len))
			return table[i].code;
	/* IANA allocates global unicast IPv6 only from 2000::/3; the rest is reserved. */
	if (addr->family == AF_INET6) {
		static const uint8_t global6[16] = { 0x20 };
		if (addr->len < 3 || !overlaps(addr->addr, addr->len, global6, 3))
			return MAPPING_E_RESERVED;
	}
	return 0;
}

const char *mapping_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case MAPPING_E_UNSPECIFIED:
		return "unspecified address";
	case MAPPING_E_LOOPBACK:
		return "loopback address";
	case MAPPING_E_PRIVATE:
		return "private address (RFC 1918)";
	case MAPPING_E_CGNAT:
		return "shared address space (CGNAT, RFC 6598)";
	case MAPPING_E_LINKLOCAL:
		return "link-local address";
	case MAPPING_E_MULTICAST:
		return "multicast address";
	case MAPPING_E_RESERVED:
		return "reserved address";
	case -EINVAL:
		return "invalid argument";
	case -ENOENT:
		return "no such partition or no mapped address";
	case -ENOMEM:
		return "out of memory";
	case -EIO:
		return "write error";
	default:
		return "unknown error";
	}
}
