/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. Where a query goes: cache key, EDNS rule and identity, and the cache value format. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf/conf.h"
#include "store/store.h"
#include "mapping/ecs.h"
#include "resolver/view/domains.h"
#include "wire/wire.h"

/* Cache key: partition(2) qtype(2) qclass(2) flags(1: CD), then the lower-cased qname. */
#define ROUTE_KEY_HDR 7
#define ROUTE_KEY_MAX (ROUTE_KEY_HDR + WIRE_MAX_NAME)
#define ROUTE_KEY_CD 0x02 /* CD=1: the unvalidated answer (normal pool), apart */

/* Where one query goes. */
struct route {
	unsigned part;                   /* the client's partition (or PARTITION_COMMON) */
	int family;                      /* the client's address family: picks the identity (route_identity) */
	const uint8_t *addr;             /* the client's address bytes (4 or 16, by family); NULL: none */
	const struct store_domain *rule; /* EDNS domain rule, NULL = normal */
	bool echo;                       /* echo the client's ECS (trusted frontend) */
	struct ecs echo_ecs;
	uint64_t qhash;                  /* the name's hash under the domain set's key (chain hints); 0: none */
	uint8_t key[ROUTE_KEY_MAX];
	size_t klen;
};

/** Build a cache key into key (ROUTE_KEY_MAX bytes). @return its length. */
size_t route_key_build(uint8_t *key, unsigned partition, uint16_t qtype, uint16_t qclass, uint8_t flags,
                       const uint8_t *qname_lc, size_t qname_len);

/** The partition a cache key belongs to (0 = common). klen must be >= ROUTE_KEY_HDR. */
unsigned route_key_partition(const uint8_t *key);

/** Make key (klen >= ROUTE_KEY_HDR) a key of partition. */
void route_key_set_partition(uint8_t *key, unsigned partition);

/** rt->key for q, in the cache of key_part. */
void route_key_set(struct route *rt, const struct wire_query *q, unsigned key_part);

/**
 * Route q for a client of partition rt->part (set by the caller, with echo):
 * a flagged name of a partition with a mapped identity goes through the
 * EDNS pool (rule set, key per partition); anything else shares the common
 * cache. family is the client's address family (kept in rt->family). The
 * identity itself is not built here: a hit never sends it (route_identity).
 */
void route_decide(struct route *rt, const struct conf *c, const struct domains *d, const struct wire_query *q,
                  int family);

struct standby;

/**
 * The ECS identity rt's resolution sends upstream: the standby identity
 * while rt->part is failed over (sb, may be NULL), else mapping_ecs() of
 * rt->part for a client of rt->family (the mapped /32, or mapped6).
 * Built when a job is made, not for every query routed.
 * @return 0, or -ENOENT / -EINVAL as mapping_ecs (never for a route
 *         route_decide gave a rule: it checked mapping_has_ecs).
 */
int route_identity(const struct route *rt, const struct conf *c, const struct standby *sb, struct ecs *out);

/*
 * Cache values are [flags][...]:
 *   - an answer: flags 0, then the wire blob (wire_answer_prepare);
 *   - a chain (ROUTE_VALUE_CHAIN), a normal answer whose CNAME chain enters
 *     an EDNS domain: u8 target length, target, u16 prefix length, prefix
 *     message, then the wire blob;
 *     With ROUTE_VALUE_INCOMPLETE too, the blob is not the answer: the
 *     normal pool stopped where the chain enters the flagged domain (its
 *     stub contexts hold the flagged subtrees as empty zones, so it never
 *     asks their servers without ECS); clients that cannot continue
 *     through the EDNS pool resolve the name again without stubs;
 *   - a failure (ROUTE_VALUE_FAILURE, RFC 9520): u16 rcode, u16 EDE code,
 *     EDE text with its NUL (an empty text is just the NUL).
 */
#define ROUTE_VALUE_CHAIN 0x01
#define ROUTE_VALUE_FAILURE 0x02
#define ROUTE_VALUE_INCOMPLETE 0x04

/* A cache value, read in place (pointers into the value). */
struct route_value {
	const uint8_t *blob;          /* answer and chain */
	size_t blob_len;
	const uint8_t *target;        /* chain: where the EDNS pool continues */
	size_t target_len;
	const uint8_t *prefix;        /* chain: the CNAMEs up to target */
	size_t prefix_len;
	bool chain, failure;
	bool incomplete;              /* chain: the blob is the normal pool's stop, not the answer */
	int rcode;                    /* failure */
	struct wire_ede ede;          /* failure; text points into the value, NUL-terminated */
};

/** Size of the value header: 1 without a chain, more with one (target_len > 0). */
size_t route_value_header(size_t target_len, size_t prefix_len);

/** Write the header for a chain (target_len > 0) or none. @return bytes written. */
size_t route_value_write_header(uint8_t *out, const uint8_t *target, size_t target_len, const uint8_t *prefix,
                                size_t prefix_len);

/** Size of a failure value with this EDE. */
size_t route_value_failure_size(const struct wire_ede *ede);

/** Write a failure value (route_value_failure_size bytes). @return bytes written. */
size_t route_value_write_failure(uint8_t *out, int rcode, const struct wire_ede *ede);

/** Read a cache value. @return 0 or -EINVAL (malformed). */
int route_value_parse(const uint8_t *val, size_t vlen, struct route_value *v);

/**
 * Does partition id mean the same to CDNs in both configs: the same name
 * and the same mapped identities? Answers cached for it under one config
 * then hold under the other.
 */
bool route_partition_same(const struct conf *a, const struct conf *b, unsigned id);

/**
 * Does partition ia of a mean to CDNs what partition ib of b means (the same
 * name and mapped identities)? A reload that renumbers partitions keeps
 * their answers by this.
 */
bool route_partition_equiv(const struct conf *a, unsigned ia, const struct conf *b, unsigned ib);

/**
 * Does the CNAME chain of a normal answer enter an EDNS domain? Checks the
 * hops of chain (wire_answer_prepare_chain of resp) in order; at the first
 * whose target is flagged in d, returns 1 with that target (lower case,
 * WIRE_MAX_NAME bytes) and a prefix message (wire_cname_prefix: header,
 * question, the CNAMEs up to there; malloc'd, caller frees).
 * @return 1, 0 (no such hop), WIRE_E_FORMERR, -ENOMEM.
 */
int route_chain_find(const struct domains *d, const uint8_t *resp, size_t len, const struct wire_chain *chain,
                     uint8_t *target, size_t *target_len, uint8_t **prefix, size_t *prefix_len);
