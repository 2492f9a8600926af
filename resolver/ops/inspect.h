/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. Cache inspection for the control socket (partdnsctl cache lookup). */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "resolver/cache/cache.h"
#include "resolver/view/snapshot.h"

/**
 * Say what the cache holds for name/type as a client of partition would be
 * answered (routed as the query path routes it): which cache (the city's
 * own for a flagged name, else the common one), the ECS identity that
 * fetched a flagged entry, its age and TTL left, a remembered failure, and
 * the records the client would get now.
 * @param type       e.g. "AAAA"; NULL = A
 * @param partition  a partition name or "common"; NULL = common
 * @return 0 (found or not), or -EINVAL / -ENOENT with a message on err.
 */
int inspect_cache_lookup(struct cache *cache, const struct snapshot *snap, const char *name, const char *type,
                         const char *partition, FILE *out, FILE *err);

/* Room for any query wire_query_build writes without ECS: header, question, OPT. */
#define INSPECT_QUERY_MAX (12 + 255 + 4 + 11)

/**
 * A record type by name ("AAAA") or number ("TYPE65", RFC 3597).
 * @return the type (1..65535), -ERANGE for a TYPEnnn above 65535, or
 *         -EINVAL when unknown.
 */
int inspect_type(const char *text);

/** The message for inspect_type()'s error rc about text, for the control client. */
void inspect_type_error(FILE *err, const char *text, int rc);

/** A DNS reply as dig shows it: rcode, Extended DNS Errors, answer and authority records. */
void inspect_print_reply(FILE *out, const uint8_t *reply, size_t len);
