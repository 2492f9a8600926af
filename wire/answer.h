/* SPDX-License-Identifier: BSD-3-Clause */
/* What a client gets back: the cache blob made from an upstream answer (re-encoded, or adopted as
 * libunbound laid it out) and the reply written from it, fresh or stale; error replies; the RFC 8482 answer
 * to ANY. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mapping/ecs.h"
#include "wire/wire.h"

/* ---- cached answers ---- */

/**
 * Reduce an upstream response to a cache blob.
 *
 * The blob is a small header, the offsets of every TTL field, and the
 * message re-encoded: ID zeroed, AA kept as information only, the OPT
 * record dropped wherever it was in the additional section (no upstream
 * ECS, cookies or padding ever reach a client), names re-compressed by us
 * (owner names and the RDATA names of the RFC 1035 types; other types'
 * names are written uncompressed, RFC 3597 §4), trailing bytes after the
 * last record ignored. TTLs with the top bit set count as 0 (RFC 2181 §8)
 * and every TTL is clamped to [min_ttl, max_ttl].
 *
 * Cache lifetime *ttl:
 *   - TC set, or rcode other than NOERROR/NXDOMAIN: 0 (do not cache; the
 *     blob is still returned so the caller may relay it once);
 *   - positive (the CNAME chain from QNAME ends at an RRset of QTYPE, or
 *     QTYPE is CNAME/ANY and something answers it): the minimum clamped TTL
 *     over answer and authority;
 *   - NXDOMAIN, or NOERROR without such an answer (NODATA, including a
 *     chain ending at a name without QTYPE): RFC 2308 min(SOA TTL, SOA
 *     MINIMUM) of the first SOA in authority, capped by max_negative_ttl
 *     and max_ttl (min_ttl does not apply) and by the TTLs of the answer
 *     section (the CNAMEs); that SOA's stored TTL is set to the same value
 *     so it counts down with the entry. Without an SOA: lim->nosoa_ttl
 *     (default 0: not cached).
 *
 * @param resp, len  the response (QDCOUNT must be 1); not kept
 * @param lim        TTL policy; NULL = no clamping
 * @param blob       out: malloc'd blob, caller frees with free(); NULL on error
 * @param blob_len   out: its length
 * @param ttl        out: cache lifetime in seconds
 * @return 0, WIRE_E_FORMERR (malformed, or the re-encoded message would
 *         exceed 65535 bytes), -ENOMEM.
 */
int wire_answer_prepare(const uint8_t *resp, size_t len, const struct wire_limits *lim, uint8_t **blob,
			size_t *blob_len, uint32_t *ttl);

/**
 * wire_answer_prepare, also saying where the CNAME chain from QNAME goes,
 * from the same parse (chain may be NULL). The chain is found for NOERROR
 * and NXDOMAIN answers without TC (the ones that are cached); it stops at
 * the name that has QTYPE, and is empty for QTYPE CNAME or ANY.
 */
int wire_answer_prepare_chain(const uint8_t *resp, size_t len, const struct wire_limits *lim, uint8_t **blob,
			      size_t *blob_len, uint32_t *ttl, struct wire_chain *chain);

/**
 * wire_answer_prepare_chain for a message our own libunbound encoded, not
 * bytes from the network: its layout (libunbound's compression) is kept
 * instead of re-encoded, which saves a miss about 2k of its ~66k
 * instructions (bench/RESULTS.md). Every name and RDATA is still read and
 * checked with the same bounds, the TTLs are clamped in place and an OPT
 * record at the end is cut off. Re-encoded as by wire_answer_prepare_chain,
 * byte for byte: a message whose OPT record is not last, or with a
 * compression pointer to anything but a label of an earlier name (a TTL, a
 * count, opaque RDATA: bytes the cache patches or does not read as names);
 * and the signed data's plain view. Same results and errors, except that a
 * message whose re-encoding would pass 64 KiB is kept. Upstream's bytes
 * always go through wire_answer_prepare_chain: the re-encoding is the
 * defence against a hostile message's layout.
 */
int wire_answer_adopt_chain(const uint8_t *resp, size_t len, const struct wire_limits *lim, uint8_t **blob,
			    size_t *blob_len, uint32_t *ttl, struct wire_chain *chain);

/**
 * Write the reply to client query q from a cache blob, aged age seconds:
 * every TTL becomes max(0, stored - age).
 *
 * Header: ID from q, QR=1, opcode 0, AA=0, RD and CD from q, RA=1, AD from
 * the blob only when q set AD or DO, rcode from the blob (an extended
 * rcode > 15 needs the client's EDNS, else SERVFAIL is written). The
 * question is q's (q->qname keeps the client's 0x20 case). An OPT record
 * is appended when q->has_edns (our size q->reply_udp, DO echoed, no
 * options unless echo != NULL: then ECS with echo's family, source,
 * address and scope, RFC 7871 §7.2).
 *
 * Fit: the whole message if it fits cap; else without the additional
 * section (TC=0, RFC 2181 §9: only answer/authority data justify TC); else a
 * TC=1 reply with header, question and OPT only (without OPT when even
 * that does not fit). TC is also set when the upstream response had it.
 * No allocation: a memcpy plus TTL patches at the stored offsets.
 *
 * @param q    the parsed query (result 0)
 * @param pkt  the packet q was parsed from; unused (q->qname holds the
 *             client's case), may be NULL
 * @param blob, blob_len  from wire_answer_prepare
 * @param echo ECS to echo, or NULL (never pass one for a stub client)
 * @return length written, -ENOSPC (cap below header + question), or
 *         -EINVAL (not a blob, the blob's question is not q's, bad echo).
 */
int wire_answer_write(const struct wire_query *q, const uint8_t *pkt, const uint8_t *blob, size_t blob_len,
		      uint32_t age, const struct ecs *echo, uint8_t *out, size_t cap);

/**
 * wire_answer_write() for an answer served stale (RFC 8767): every TTL of
 * the records written becomes ttl (§4: 30 s), and when the client sent EDNS
 * the OPT carries ede (RFC 8914 3 "Stale Answer"), when it fits after
 * everything wire_answer_write() would write.
 * @return as wire_answer_write().
 */
int wire_answer_write_stale(const struct wire_query *q, const uint8_t *blob, size_t blob_len, uint32_t ttl,
			    const struct ecs *echo, const struct wire_ede *ede, uint8_t *out, size_t cap);

/** @return 0 or -EINVAL (not a blob). */
int wire_blob_info(const uint8_t *blob, size_t blob_len, struct wire_blob_info *info);

/** @return the blob's rcode (0..4095) or -EINVAL (not a blob). */
int wire_blob_rcode(const uint8_t *blob, size_t blob_len);

/**
 * Is blob (one view, and its view without DNSSEC records if it has one) a
 * blob a reply can be written from for the question qname_lc (lower case,
 * wire form), qtype, qclass: its header consistent, the question that one,
 * every record of the message whole and the counts the records', every TTL
 * offset inside the records of its part? For blobs read from outside (a
 * cache snapshot): wire_answer_write trusts what wire_answer_prepare made.
 * @return 0 or -EINVAL.
 */
int wire_blob_check(const uint8_t *blob, size_t blob_len, const uint8_t *qname_lc, size_t qname_len, uint16_t qtype,
                    uint16_t qclass);

/**
 * Age every TTL of a checked blob (wire_blob_check) by secs, in place (none
 * below 0): a reply written from it then says secs less.
 */
void wire_blob_age(uint8_t *blob, size_t blob_len, uint32_t secs);

/* ---- replies without a cached answer: errors, ANY ---- */

/**
 * Write an error reply: ID, opcode, RD and CD copied from q, QR=1, RA=1,
 * AA=0, the question echoed when q->question_ok, an OPT record (our UDP
 * size q->reply_udp, version 0, DO copied, upper rcode bits) when
 * q->has_edns or rcode > 15. ECS only when echo != NULL and an OPT is
 * written (RFC 7871 §7.2 echo: echo's family, source, address and scope).
 * An Extended DNS Error option when ede != NULL and the client sent EDNS
 * (RFC 8914 §2).
 *
 * @param q      a query as left by wire_parse_query (any result but DROP)
 * @param rcode  0..4095, e.g. WIRE_RCODE_FORMERR, WIRE_RCODE_BADVERS
 * @return length written, -ENOSPC, or -EINVAL (rcode out of range, bad echo).
 */
int wire_write_error(const struct wire_query *q, int rcode, const struct ecs *echo, const struct wire_ede *ede,
		     uint8_t *out, size_t cap);

/**
 * The RFC 8482 answer to an ANY query: one synthesized HINFO RRset
 * (CPU "RFC8482", OS "", TTL 3600) at the query name, NOERROR, with our OPT
 * when the client sent EDNS.
 * @return length written, -ENOSPC, or -EINVAL (q is not a parsed query).
 */
int wire_write_any(const struct wire_query *q, const struct ecs *echo, uint8_t *out, size_t cap);
