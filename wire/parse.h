/* SPDX-License-Identifier: BSD-3-Clause */
/* Reading DNS messages: a client's query, the records of any message, where a CNAME chain goes; and the
 * readers the other files of wire/ build on. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mapping/ecs.h"
#include "wire/wire.h"

/* ---- client queries ---- */

/**
 * Parse a client query.
 *
 * Rules: len < 12 or QR=1 → WIRE_E_DROP; opcode other than QUERY (0) or
 * NOTIFY (4) → WIRE_E_NOTIMP; a NOTIFY is parsed as a query (its answer's
 * SOA, its TSIG skipped) and, if nothing else is wrong, gives WIRE_NOTIFY;
 * QDCOUNT != 1 → FORMERR; names: labels ≤ 63, names ≤ 255 bytes,
 * compression pointers only backwards (each pointer must point before the
 * name's start and before the previous pointer's target, never into the
 * header; so the QNAME itself can never be compressed); any truncation →
 * FORMERR; answer and authority records are skipped (bounds-checked; an
 * OPT there is FORMERR); additional: at most one OPT, owner root, its
 * options well-formed; ECS (code 8) via ecs_parse, malformed, repeated or
 * with SCOPE PREFIX-LENGTH != 0 (RFC 7871 §6: MUST be 0 in queries) →
 * FORMERR; unknown options ignored; EDNS version > 0 → WIRE_E_BADVERS
 * (options not interpreted); trailing bytes after the last record →
 * FORMERR. A structural error wins over BADVERS.
 *
 * @param pkt  the query; not kept
 * @param len  its length
 * @param q    filled as documented at struct wire_query
 * @return 0, WIRE_NOTIFY, WIRE_E_DROP, WIRE_E_FORMERR, WIRE_E_NOTIMP or WIRE_E_BADVERS.
 */
int wire_parse_query(const uint8_t *pkt, size_t len, struct wire_query *q);

/**
 * The UDP reply size limit for q: has_edns ? max(edns_udp, 512) capped at
 * max_udp : 512. Never below 512 (a max_udp below 512 is ignored).
 */
size_t wire_udp_limit(const struct wire_query *q, size_t max_udp);

/* ---- reading records (one parser for every upstream message) ---- */

/**
 * Start walking the records of pkt (a response or query): checks the header
 * and QDCOUNT == 1 and skips the question.
 * @return 0 or WIRE_E_FORMERR.
 */
int wire_iter_init(struct wire_iter *it, const uint8_t *pkt, size_t len);

/**
 * The next record, in wire order across the three sections.
 * @return 1 (rr filled), 0 (no more records), WIRE_E_FORMERR (malformed:
 *         stop; the records before it were well-formed).
 */
int wire_iter_next(struct wire_iter *it, struct wire_rr *rr);

/**
 * Read the domain name at offset off of the RDATA of rr (e.g. 0 for the
 * target of a CNAME or NS, the MNAME of an SOA), decompressed, into out
 * (WIRE_MAX_NAME bytes). The name must end inside the RDATA.
 * @return 0 or WIRE_E_FORMERR.
 */
int wire_rdata_name(const struct wire_iter *it, const struct wire_rr *rr, size_t off, uint8_t *out, size_t *out_len);

/* ---- CNAME chains ---- */

/**
 * Hop hop's target name of chain (lower-cased, WIRE_MAX_NAME bytes) from the
 * response it was found in.
 * @return 0 or WIRE_E_FORMERR.
 */
int wire_chain_target(const uint8_t *resp, size_t len, const struct wire_chain *chain, unsigned hop, uint8_t *out,
		      size_t *out_len);

/* ---- errors ---- */

/** Text of a WIRE_E_* or negative errno code. */
const char *wire_strerror(int err);

/* ---- for the other files of wire/: the readers they build on ---- */

/* One resource record as found in a message. */
struct wire_raw_rr {
	size_t owner_len;
	uint16_t type, rclass;
	uint32_t ttl;
	uint16_t rdlen;
	size_t rdata; /* offset of RDATA */
	size_t end;   /* offset past RDATA */
};

/* The possibly compressed name at *pos, decompressed into out (unless NULL); *pos moves past its bytes. */
int wire_name_read(const uint8_t *pkt, size_t len, size_t *pos, uint8_t *out, size_t *out_len);

/* Read the RR at *pos (owner decompressed into owner unless NULL) and move past it. */
int wire_rr_read(const uint8_t *pkt, size_t len, size_t *pos, struct wire_raw_rr *rr, uint8_t *owner);

/* Walk the options of an OPT RDATA; with has_ecs != NULL the ECS option is parsed strictly into *ecs. */
int wire_opt_options(const uint8_t *p, size_t n, bool query, bool *has_ecs, struct ecs *ecs);

/* Read the question at WIRE_HEADER_SIZE; *pos ends past QTYPE/QCLASS. */
int wire_question_read(const uint8_t *pkt, size_t len, size_t *pos, uint8_t *qname, size_t *qname_len);

/* A CNAME chain being followed, and where it ended. */
struct wire_walk {
	uint8_t name[WIRE_MAX_NAME]; /* final name of the chain, lower-cased */
	size_t name_len;
	unsigned hops;
	bool answered; /* the final name has an RRset of qtype (any RR for ANY) */
	struct wire_chain *out; /* optional: where each hop's target is */
};

/* Follow CNAMEs from qname through the ancount answer RRs at an_pos. */
int wire_chain_walk(const uint8_t *pkt, size_t len, size_t an_pos, unsigned ancount, const uint8_t *qname,
		    size_t qname_len, uint16_t qtype, struct wire_walk *c);
