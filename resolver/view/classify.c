/* SPDX-License-Identifier: BSD-3-Clause */
/* Client classification: source address or trusted ECS to partition (the address lists: classify.h, snapshot.c). */
#include "resolver/view/classify.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "partition/partition.h"

bool classify_addr(const struct sockaddr_storage *ss, int *family, const uint8_t **addr)
{
	if (ss->ss_family == AF_INET) {
		*family = AF_INET;
		*addr = (const uint8_t *)&((const struct sockaddr_in *)ss)->sin_addr;
		return true;
	}
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
		const uint8_t *a = (const uint8_t *)&s6->sin6_addr;
		static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
		if (memcmp(a, v4mapped, 12) == 0) {
			*family = AF_INET;
			*addr = a + 12;
		} else {
			*family = AF_INET6;
			*addr = a;
		}
		return true;
	}
	return false;
}

int classify_client(const struct conf *c, const struct wire_query *q, struct classify *cl)
{
	const struct ptable *t = c->partitions.table;
	cl->echo = false;
	if (q->has_ecs && (cl->lists & SNAPSHOT_ACL_TRUSTED_ECS)) {
		cl->echo = true;
		cl->echo_ecs = q->ecs;
		struct prefix p;
		ecs_to_prefix(&q->ecs, &p);
		if (q->ecs.source > 0)
			cl->part = ptable_lookup(t, p.family, p.addr, NULL);
		else
			cl->part = ptable_lookup(t, cl->family, cl->addr, NULL);
	} else {
		cl->part = ptable_lookup(t, cl->family, cl->addr, NULL);
	}
	cl->unmatched = cl->part == PARTITION_COMMON;
	if (cl->part == PARTITION_COMMON) {
		if (c->partitions.unmatched == CONF_UNMATCHED_REFUSE)
			return -EACCES;
		if (c->partitions.unmatched == CONF_UNMATCHED_PARTITION)
			cl->part = c->partitions.unmatched_id;
	}
	return 0;
}
