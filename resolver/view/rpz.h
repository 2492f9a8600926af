/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. Response policy zones (rpz): QNAME and client-IP triggers, for everyone or some partitions. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "conf/conf.h"
#include "wire/wire.h"

struct rpz;

/**
 * The policy zones of c, in order, each read from its file. A zone whose
 * file cannot be read or parsed keeps the version prev has of it (by zone
 * name; an unchanged file is not read again), or is empty when there is
 * none; each problem is logged with the zone, the file and the line. A
 * record with an unknown action or an unsupported trigger, or one no reply
 * could carry (a name in its data past 255 bytes once joined to the
 * zone's name), is skipped and reported with the zone and owner.
 * @return NULL when c has no rpz, or on ENOMEM (*oom set).
 */
struct rpz *rpz_build(const struct conf *c, const struct rpz *prev, bool *oom);

/** Another reference to r (NULL: NULL); rpz_unref drops one, the last frees r. */
struct rpz *rpz_ref(struct rpz *r);
void rpz_unref(struct rpz *r);

enum rpz_verdict {
	RPZ_PASS,    /* no policy (or PASSTHRU): resolve as usual */
	RPZ_ANSWER,  /* *msg is the answer (NXDOMAIN, NODATA or the policy's data) */
	RPZ_CNAME,   /* *msg is the answer, one CNAME to another name (a rewrite): the caller may follow it */
	RPZ_DROP,    /* no reply at all */
	RPZ_FAIL,    /* the policy decided, but its answer cannot be made (out of memory): SERVFAIL, never a pass */
};

/**
 * The policy for a client of partition part, at family/addr, asking q: the
 * first zone, in config order, that applies to the partition and has a
 * client-IP trigger for the address (the longest prefix) or else a QNAME
 * trigger for the name (exact, else the closest wildcard) decides. Counts
 * the hit.
 * @param name_clean  the name is known to match no QNAME trigger of r
 *                    (rpz_clean): only client-IP triggers are looked up
 * @param msg, len  RPZ_ANSWER, RPZ_CNAME: a malloc'd response (caller frees)
 */
enum rpz_verdict rpz_check(const struct rpz *r, unsigned part, const struct wire_query *q, int family,
                           const uint8_t *addr, bool name_clean, uint8_t **msg, size_t *len);

/** Has any zone of r client-IP triggers? (Then a query whose name is known clean still needs rpz_check.) */
bool rpz_client_ip(const struct rpz *r);

/**
 * rpz_check for another name of q's answer (a CNAME target, lower case):
 * the policy's answer is still an answer to q (the question is q's).
 */
enum rpz_verdict rpz_check_name(const struct rpz *r, unsigned part, const uint8_t *name, size_t name_len,
                                const struct wire_query *q, uint8_t **msg, size_t *len);

/**
 * A number for r, different from every other policy set's this process
 * built and never 0: what an answer checked against r may be marked with.
 */
uint32_t rpz_generation(const struct rpz *r);

/** Does no zone of r, whatever partitions it applies to, have a trigger for name (lower case)? */
bool rpz_clean(const struct rpz *r, const uint8_t *name, size_t name_len);

/** The SOA serial and refresh of zone as loaded in r. @return false when r has none (not loaded, no SOA). */
bool rpz_serial(const struct rpz *r, const char *zone, uint32_t *serial, uint32_t *refresh);

/** Per zone, in config order: fn(zone, hits, arg); then per partition with hits: fnp(zone, part, hits, arg). */
void rpz_each(const struct rpz *r, void (*fn)(const char *zone, uint64_t rules, uint64_t hits, void *arg),
              void (*fnp)(const char *zone, unsigned part, uint64_t hits, void *arg), void *arg);

/**
 * Parse and compile one policy zone from f, then drop it (for the fuzz
 * target and tests). @return its number of triggers, or -1 (does not parse).
 */
long rpz_zone_check(const char *zone, FILE *f);
