/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. Who is asking: address bytes, the address lists (allow, exempt, trusted ECS), the client's partition. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "conf/conf.h"
#include "partition/pset.h"
#include "resolver/view/snapshot.h"
#include "wire/wire.h"

/* The client as classification sees it. */
struct classify {
	int family;            /* AF_INET (also for v4-mapped IPv6) or AF_INET6 */
	const uint8_t *addr;   /* 4 or 16 bytes, inside the sockaddr given */
	uint32_t lists;        /* the address lists holding it: SNAPSHOT_ACL_* (classify_lists) */
	unsigned part;         /* partition, PARTITION_COMMON for none */
	bool unmatched;        /* in no partition of the plan (whatever partitions.unmatched makes of it) */
	bool echo;             /* the partition came from a trusted frontend's ECS */
	struct ecs echo_ecs;   /* that ECS (scope still to be set by routing) */
};

/**
 * The address of a peer: family and a pointer to its bytes inside ss
 * (v4-mapped IPv6 counts as IPv4). @return false for other families.
 */
bool classify_addr(const struct sockaddr_storage *ss, int *family, const uint8_t **addr);

/**
 * Which of server.allow, server.client_exempt and edns.trusted_ecs hold the
 * client (cl->family, cl->addr set): one longest-prefix match in the
 * snapshot's set, however long the lists; sets cl->lists.
 */
static inline void classify_lists(const struct snapshot *s, struct classify *cl)
{
	cl->lists = pset_lookup(s->acl, cl->family, cl->addr);
}

/** Is the client exempt from server.client_qps (server.client_exempt, edns.trusted_ecs)? After classify_lists. */
static inline bool classify_exempt(const struct classify *cl)
{
	return (cl->lists & (SNAPSHOT_ACL_EXEMPT | SNAPSHOT_ACL_TRUSTED_ECS)) != 0;
}

/**
 * Must peer send a PROXY v2 header (server.proxy_from)? Only such peers may:
 * a balancer's own address, never a client's. False at once when the list
 * is empty (no lookup).
 */
static inline bool classify_proxy(const struct snapshot *s, const struct sockaddr_storage *peer)
{
	int family;
	const uint8_t *addr;
	return s->conf->server.nproxy_from > 0 && classify_addr(peer, &family, &addr) &&
	       (pset_lookup(s->acl, family, addr) & SNAPSHOT_ACL_PROXY) != 0;
}

/** Is the client allowed to query (server.allow)? After classify_lists. */
static inline bool classify_allowed(const struct classify *cl)
{
	return (cl->lists & SNAPSHOT_ACL_ALLOW) != 0;
}

/**
 * The partition of a client: its source address, or the ECS of a query
 * from a trusted frontend (edns.trusted_ecs; source 0 means "use the
 * frontend's own address"). Unmatched clients get PARTITION_COMMON, or the
 * partition partitions.unmatched names.
 * @param cl   family, addr and lists set (classify_addr, classify_lists); the rest is filled
 * @return 0, or -EACCES when partitions.unmatched is refuse and nothing matched.
 */
int classify_client(const struct conf *c, const struct wire_query *q, struct classify *cl);
