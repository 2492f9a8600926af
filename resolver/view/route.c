/* SPDX-License-Identifier: BSD-3-Clause */
/* Routing of a query (cache key, EDNS rule, identity) and the cache value format. */
#include "resolver/view/route.h"
#include "resolver/view/standby.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "mapping/mapping.h"
#include "partition/partition.h"
#include "wire/parse.h"
#include "wire/upstream.h"

size_t route_key_build(uint8_t *key, unsigned partition, uint16_t qtype, uint16_t qclass, uint8_t flags,
                       const uint8_t *qname_lc, size_t qname_len)
{
	key[0] = (uint8_t)(partition >> 8);
	key[1] = (uint8_t)partition;
	key[2] = (uint8_t)(qtype >> 8);
	key[3] = (uint8_t)qtype;
	key[4] = (uint8_t)(qclass >> 8);
	key[5] = (uint8_t)qclass;
	key[6] = flags;
	memcpy(key + ROUTE_KEY_HDR, qname_lc, qname_len);
	return ROUTE_KEY_HDR + qname_len;
}

unsigned route_key_partition(const uint8_t *key)
{
	return ((unsigned)key[0] << 8) | key[1];
}

void route_key_set_partition(uint8_t *key, unsigned partition)
{
	key[0] = (uint8_t)(partition >> 8);
	key[1] = (uint8_t)partition;
}

void route_key_set(struct route *rt, const struct wire_query *q, unsigned key_part)
{
	/* no DO: one entry serves DO and non-DO clients (wire_answer_write strips for the latter) */
	uint8_t flags = (q->flags & WIRE_FLAG_CD) ? ROUTE_KEY_CD : 0;
	rt->klen = route_key_build(rt->key, key_part, q->qtype, q->qclass, flags, q->qname_lc, q->qname_len);
}

void route_decide(struct route *rt, const struct conf *c, const struct domains *d, const struct wire_query *q,
                  int family)
{
	rt->rule = NULL;
	rt->family = family;
	rt->qhash = 0;
	/* EDNS domains of a real partition with a mapped identity go per partition */
	if (rt->part != PARTITION_COMMON) {
		rt->rule = domains_match_hashed(d, q->qname_lc, q->qname_len, &rt->qhash);
		if (rt->rule && !mapping_has_ecs(c->partitions.mapping, rt->part))
			rt->rule = NULL;
	}
	if (rt->echo) /* RFC 7871 §7.2.1: scope says how far our answer holds */
		rt->echo_ecs.scope = rt->rule ? rt->echo_ecs.source : 0;
	route_key_set(rt, q, rt->rule ? rt->part : PARTITION_COMMON);
}

int route_identity(const struct route *rt, const struct conf *c, const struct standby *sb, struct ecs *out)
{
	if (standby_ecs(sb, rt->part, rt->family, out)) /* failed over: the standby's identity */
		return 0;
	return mapping_ecs(c->partitions.mapping, rt->part, rt->family, out);
}

/* ---- cache values ---- */

size_t route_value_header(size_t target_len, size_t prefix_len)
{
	return target_len ? 1 + 1 + target_len + 2 + prefix_len : 1;
}

size_t route_value_write_header(uint8_t *out, const uint8_t *target, size_t target_len, const uint8_t *prefix,
                                size_t prefix_len)
{
	if (target_len == 0) {
		out[0] = 0;
		return 1;
	}
	size_t o = 0;
	out[o++] = ROUTE_VALUE_CHAIN;
	out[o++] = (uint8_t)target_len;
	memcpy(out + o, target, target_len);
	o += target_len;
	out[o++] = (uint8_t)(prefix_len >> 8);
	out[o++] = (uint8_t)prefix_len;
	memcpy(out + o, prefix, prefix_len);
	return o + prefix_len;
}

size_t route_value_failure_size(const struct wire_ede *ede)
{
	return 1 + 2 + 2 + (ede && ede->text ? strlen(ede->text) : 0) + 1;
}

size_t route_value_write_failure(uint8_t *out, int rcode, const struct wire_ede *ede)
{
	size_t tl = ede && ede->text ? strlen(ede->text) : 0;
	uint16_t code = ede ? ede->code : WIRE_EDE_OTHER;
	out[0] = ROUTE_VALUE_FAILURE;
	out[1] = (uint8_t)(rcode >> 8);
	out[2] = (uint8_t)rcode;
	out[3] = (uint8_t)(code >> 8);
	out[4] = (uint8_t)code;
	if (tl)
		memcpy(out + 5, ede->text, tl);
	out[5 + tl] = 0;
	return 5 + tl + 1;
}

int route_value_parse(const uint8_t *val, size_t vlen, struct route_value *v)
{
	memset(v, 0, sizeof(*v));
	if (vlen < 1)
		return -EINVAL;
	if (val[0] & ROUTE_VALUE_FAILURE) {
		if (vlen < 6 || val[vlen - 1] != 0)
			return -EINVAL;
		v->failure = true;
		v->rcode = (val[1] << 8) | val[2];
		v->ede.code = (uint16_t)((val[3] << 8) | val[4]);
		v->ede.text = (const char *)val + 5;
		return 0;
	}
	if (!(val[0] & ROUTE_VALUE_CHAIN)) {
		v->blob = val + 1;
		v->blob_len = vlen - 1;
		return 0;
	}
	size_t o = 1;
	if (o + 1 > vlen)
		return -EINVAL;
	size_t tl = val[o++];
	if (o + tl + 2 > vlen)
		return -EINVAL;
	v->target = val + o;
	v->target_len = tl;
	o += tl;
	size_t pl = ((size_t)val[o] << 8) | val[o + 1];
	o += 2;
	if (o + pl > vlen)
		return -EINVAL;
	v->prefix = val + o;
	v->prefix_len = pl;
	o += pl;
	v->blob = val + o;
	v->blob_len = vlen - o;
	v->chain = true;
	v->incomplete = (val[0] & ROUTE_VALUE_INCOMPLETE) != 0;
	return 0;
}

bool route_partition_same(const struct conf *a, const struct conf *b, unsigned id)
{
	return route_partition_equiv(a, id, b, id);
}

bool route_partition_equiv(const struct conf *a, unsigned ia, const struct conf *b, unsigned ib)
{
	if (ia == PARTITION_COMMON || ib == PARTITION_COMMON)
		return ia == ib;
	const char *na = ptable_name(a->partitions.table, ia), *nb = ptable_name(b->partitions.table, ib);
	if (na == NULL || nb == NULL || strcmp(na, nb) != 0)
		return false;
	static const int families[] = { AF_INET, AF_INET6 };
	for (int i = 0; i < 2; i++) {
		struct ecs ea, eb;
		int ra = mapping_ecs(a->partitions.mapping, ia, families[i], &ea);
		int rb = mapping_ecs(b->partitions.mapping, ib, families[i], &eb);
		if (ra != rb || (ra == 0 && (ea.family != eb.family || ea.source != eb.source ||
		                             memcmp(ea.addr, eb.addr, sizeof(ea.addr)) != 0)))
			return false;
	}
	return true;
}

/* ---- normal answers whose chain enters an EDNS domain ---- */

int route_chain_find(const struct domains *d, const uint8_t *resp, size_t len, const struct wire_chain *chain,
                     uint8_t *target, size_t *target_len, uint8_t **prefix, size_t *prefix_len)
{
	if (chain->hops == 0 || domains_count(d) == 0)
		return 0; /* no CNAME, or nothing flagged */
	for (unsigned hop = 0; hop < chain->hops; hop++) {
		uint8_t cur[WIRE_MAX_NAME];
		size_t cur_len;
		if (wire_chain_target(resp, len, chain, hop, cur, &cur_len) != 0)
			return WIRE_E_FORMERR;
		if (domains_match(d, cur, cur_len) != NULL) {
			int rc = wire_cname_prefix(resp, len, hop + 1, prefix, prefix_len);
			if (rc != 0)
				return rc;
			memcpy(target, cur, cur_len);
			*target_len = cur_len;
			return 1;
		}
	}
	return 0;
}
