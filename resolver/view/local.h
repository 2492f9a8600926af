/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. Local data (local_zones, per partition and global), answered without resolving. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "conf/conf.h"
#include "wire/wire.h"

struct local;

/** Index c's local zones (global and per partition). @return NULL when c has none, or on ENOMEM (*oom set). */
struct local *local_build(const struct conf *c, bool *oom);
void local_free(struct local *l);

enum local_verdict {
	LOCAL_PASS,    /* not local data: RPZ, flagged domains, normal resolution as usual */
	LOCAL_ANSWER,  /* *msg is the answer (a response message, as an authority would send it) */
	LOCAL_REFUSED, /* a refuse zone without data for the name */
};

/**
 * What local data says to a client of partition part asking q: the
 * partition's zones first, then the global ones (a partition's zone wins
 * wherever it covers the name), the deepest zone holding the name decides,
 * with Unbound's local-zone semantics for its type.
 * @param msg, len  LOCAL_ANSWER: a malloc'd response (QR, AA, the question
 *                  lower-cased, answer or SOA in authority); caller frees
 * @return the verdict; LOCAL_PASS also on ENOMEM (the query is resolved).
 */
enum local_verdict local_answer(const struct local *l, unsigned part, const struct wire_query *q, uint8_t **msg,
                                size_t *len);
