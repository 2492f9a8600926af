/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * This file is private to resolver/. A zone transfer's reply, read message by
 * message, made into the zone's new copy: an IXFR's differences (RFC 1995)
 * applied to the copy we have, or a whole zone (an AXFR, or an IXFR answered
 * AXFR-style) written out as it comes. No I/O but the files it is handed.
 */
#pragma once

#include <ldns/ldns.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define RPZ_IXFR_MAX_RECORDS 16000000u /* in a whole zone; a policy feed of 1M rules is large */
#define RPZ_IXFR_MAX_DIFF 1000000u     /* deletions and additions in one IXFR; beyond, take an AXFR */

struct rpz_ixfr;

enum rpz_ixfr_kind {
	RPZ_IXFR_UNKNOWN,     /* not yet known (or the reply was bad) */
	RPZ_IXFR_UPTODATE,    /* one SOA, our serial: nothing to do */
	RPZ_IXFR_INCREMENTAL, /* differences: rpz_ixfr_apply */
	RPZ_IXFR_WHOLE,       /* a whole zone, written to out as it came */
};

enum rpz_ixfr_state { RPZ_IXFR_MORE, RPZ_IXFR_DONE, RPZ_IXFR_BAD };

/**
 * Read a reply for zone (an absolute name). have: we have a copy, of
 * serial serial, and asked for an IXFR from it; false: an AXFR (the reply
 * must be a whole zone). A whole zone's records are written to out (zone
 * file lines, the closing SOA left out). @return NULL on ENOMEM.
 */
struct rpz_ixfr *rpz_ixfr_new(const char *zone, bool have, uint32_t serial, FILE *out);
void rpz_ixfr_free(struct rpz_ixfr *x);

/**
 * The answer records of the next message (in order). @return MORE (another
 * message is needed), DONE (the reply is complete: see rpz_ixfr_kind), or
 * BAD (rpz_ixfr_why says why; feed nothing more).
 */
enum rpz_ixfr_state rpz_ixfr_message(struct rpz_ixfr *x, const ldns_rr_list *answer);

/** What the reply is (known once the second record or the end of the first message is seen). */
enum rpz_ixfr_kind rpz_ixfr_kind(const struct rpz_ixfr *x);

/**
 * An incremental reply, DONE: write base (the copy of serial `serial`, a
 * zone file) with the differences applied to out, the new SOA first.
 * Fails when base does not parse or has another serial, or a deletion
 * removes a record neither base nor an earlier difference has. O(records
 * of base + records of the differences): base is streamed, the
 * differences are a hash table by each record's canonical form.
 * @return 0, or -1 (rpz_ixfr_why; out holds a partial copy: discard it)
 */
int rpz_ixfr_apply(struct rpz_ixfr *x, FILE *base, FILE *out);

/** Why the reply or its application was refused (empty when it was not). */
const char *rpz_ixfr_why(const struct rpz_ixfr *x);

/** The serial the reply brings (0 until known). */
uint32_t rpz_ixfr_serial(const struct rpz_ixfr *x);

/** Records read so far (all answer records of the reply), and for an incremental one its deletions and additions. */
void rpz_ixfr_counts(const struct rpz_ixfr *x, uint64_t *records, uint64_t *deleted, uint64_t *added);
