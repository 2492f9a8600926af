/* SPDX-License-Identifier: BSD-3-Clause */
/* Messages to and from upstream servers: our query, checking its response, where its CNAME chain goes
 * next, two answers spliced, a chain's first hops, scrubbing, negative answers. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mapping/ecs.h"
#include "wire/wire.h"

/* ---- upstream ---- */

/**
 * Build an upstream query: header with id, RD when rd, one question, an
 * OPT record (UDP size WIRE_DEFAULT_UDP, version 0, DO when do_bit) with an
 * ECS option when ecs != NULL (its scope is written as given: pass 0).
 * qname is copied as is (randomise its case first for 0x20 if wanted).
 * @return length written, -ENOSPC, or -EINVAL (qname not a valid
 *         uncompressed name of qname_len bytes, bad ecs).
 */
int wire_query_build(uint16_t id, bool rd, bool do_bit, const uint8_t *qname, size_t qname_len, uint16_t qtype,
		     uint16_t qclass, const struct ecs *ecs, uint8_t *out, size_t cap);

/**
 * Check an upstream response against the query we sent.
 *
 * WIRE_E_MISMATCH (not ours: discard and keep waiting) when QR=0, the ID
 * differs, the opcode is not 0, QDCOUNT is 0 (some servers send question-
 * less FORMERR/REFUSED; info->rcode is still set for logging), the
 * question differs (name compared case-insensitively, type, class), or the
 * ECS does not answer ours: with ecs_sent, a response ECS must ecs_match
 * it (no ECS at all is accepted: the authority ignored ECS); without
 * ecs_sent, any ECS in the response is a mismatch.
 * WIRE_E_FORMERR when len < 12, QDCOUNT > 1, or any record is malformed
 * (two OPTs, OPT not in additional / not root-owned, bad option lengths, a
 * malformed ECS) — except that with TC=1 a cut-off record section is
 * accepted (the caller retries over TCP anyway).
 *
 * @param info  optional, filled as far as the message was read
 * @return 0, WIRE_E_MISMATCH or WIRE_E_FORMERR.
 */
int wire_response_check(const uint8_t *resp, size_t len, uint16_t id, const uint8_t *qname, size_t qname_len,
			uint16_t qtype, uint16_t qclass, const struct ecs *ecs_sent, struct wire_resp_info *info);

/**
 * Follow the CNAME chain for (qname, qtype) in the answer section of resp.
 * If the chain ends at a name with no RRset of qtype in the answer, copy
 * that final name (wire, lower-cased) to target and return 1 — unless the
 * response already settles the final name: NXDOMAIN, or an SOA in the
 * authority section at or above the final name (NODATA from its zone,
 * RFC 2308). Returns 0 when the answer is complete or there is no CNAME
 * for qname, and always for qtype CNAME or ANY.
 *
 * @param target      WIRE_MAX_NAME bytes
 * @param target_len  out: length of target
 * @return 1, 0, or WIRE_E_FORMERR (malformed, a chain longer than
 *         WIRE_CNAME_MAX, or a loop).
 */
int wire_cname_target(const uint8_t *resp, size_t len, const uint8_t *qname, size_t qname_len, uint16_t qtype,
		      uint8_t *target, size_t *target_len);

/**
 * Splice two responses for a CNAME chain: header (ID, flags) and question
 * of first, answer = first's answer RRs then second's, authority and
 * additional = second's (no OPT: neither message's OPT is kept), rcode =
 * second's header rcode, AD = both AD, TC = either TC, AA = 0. Names are
 * re-compressed. Splices can be chained (splice a splice).
 *
 * @param out      out: malloc'd message, caller frees with free()
 * @param out_len  out: its length
 * @return 0, WIRE_E_FORMERR (either input malformed, QDCOUNT != 1, or the
 *         result would exceed 65535 bytes), -ENOMEM.
 */
int wire_splice(const uint8_t *first, size_t first_len, const uint8_t *second, size_t second_len, uint8_t **out,
		size_t *out_len);

/**
 * The first hops records of the CNAME chain from qname in resp's answer
 * section, as a message of their own: resp's header (rcode NOERROR, AA
 * cleared, AD kept) and question, those CNAME records as the answer, nothing
 * else. It is the part of an answer a partitioned client shares with
 * everybody when its chain enters an EDNS domain after hops hops.
 * @param out      out: malloc'd message, caller frees
 * @return 0, WIRE_E_FORMERR (malformed, or the chain has fewer hops), -ENOMEM.
 */
int wire_cname_prefix(const uint8_t *resp, size_t len, unsigned hops, uint8_t **out, size_t *out_len);

/* ---- scrubbing upstream answers ---- */

/**
 * Keep from an upstream answer only what its sender may say (Unbound's
 * iter_scrub.c and Knot Resolver's iterate layer do the same job):
 *   - answer: records owned by the names of the question's CNAME chain —
 *     the CNAME the chain takes (one per owner), records of qtype (all for
 *     ANY) and the RRSIGs over them — and, from a zone's server, only names
 *     inside that zone: the chain stops at a CNAME whose target leaves the
 *     zone (the target is asked of its own zone's servers);
 *   - authority: the SOA/NS of the deepest zone at or above the chain's
 *     final name (inside the bailiwick), and the RRSIG/NSEC/NSEC3 records
 *     inside that zone;
 *   - additional: nothing (glue is read from referrals, never passed on);
 *   - header: AD cleared (nothing here was validated).
 * RDATA of the types the encoder knows (names, A, AAAA) must be well-formed.
 * @param out      out: the scrubbed message (malloc'd; caller frees)
 * @param dropped  out, optional: records removed
 * @return 0, WIRE_E_FORMERR (malformed; a CNAME loop; a chain longer than
 *         WIRE_CNAME_MAX), -ENOMEM.
 */
int wire_scrub(const uint8_t *resp, size_t len, const struct wire_scrub *p, uint8_t **out, size_t *out_len,
	       unsigned *dropped);

/**
 * A negative answer to (qname, qtype, qclass) made from src, another
 * message's negative answer (e.g. libunbound's NXDOMAIN for "qname SOA"):
 * src's rcode and RD/RA flags, the new question, and src's SOA and DNSSEC
 * denial records from its authority section; AA, AD and TC cleared.
 * @param out  out: malloc'd, caller frees
 * @return 0, WIRE_E_FORMERR, -ENOMEM.
 */
int wire_negative_answer(const uint8_t *src, size_t len, const uint8_t *qname, size_t qname_len, uint16_t qtype,
			 uint16_t qclass, uint8_t **out, size_t *out_len);
