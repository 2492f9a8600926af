/* SPDX-License-Identifier: BSD-3-Clause */
/* DNS message code of the hot path: client queries, cached-answer replies, upstream queries and checks. */
#pragma once

/*
 * Everything here works on caller-provided buffers, is bounds-checked
 * against the given lengths and never reads past them, and (except for
 * wire_answer_prepare and wire_splice, which return malloc'd results)
 * never allocates. Names are in uncompressed wire form ("\3www\7example\3com\0")
 * with their length including the root byte. No function keeps a pointer
 * to its arguments.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mapping/ecs.h"

#define WIRE_HEADER_SIZE 12
#define WIRE_DEFAULT_UDP 1232 /* the UDP size our upstream queries advertise, and replies by default */
#define WIRE_MIN_UDP 512      /* RFC 1035 §4.2.1: every client takes this much */
#define WIRE_MAX_NAME 255     /* RFC 1035 §3.1, wire form including the root byte */
#define WIRE_MAX_MSG 65535
#define WIRE_CNAME_MAX 16     /* longest CNAME chain followed in one answer */

/* Error codes (negative), in the resolver wire range. */
enum {
	WIRE_E_DROP = -4001,     /* not even a header, or QR=1: send no reply */
	WIRE_E_FORMERR = -4002,  /* malformed: reply FORMERR (queries) / discard (responses) */
	WIRE_E_NOTIMP = -4003,   /* opcode other than QUERY: reply NOTIMP */
	WIRE_E_BADVERS = -4004,  /* EDNS version > 0: reply BADVERS */
	WIRE_E_MISMATCH = -4005, /* a response that is not the answer to our query: discard */
};

/* wire_parse_query's result for a well-formed NOTIFY (opcode 4, RFC 1996): a primary's message, not a query. */
#define WIRE_NOTIFY 1

/* RCODEs (RFC 1035 §4.1.1, RFC 6891 §6.1.3 for BADVERS = 16, needs an OPT). */
enum {
	WIRE_RCODE_NOERROR = 0,
	WIRE_RCODE_FORMERR = 1,
	WIRE_RCODE_SERVFAIL = 2,
	WIRE_RCODE_NXDOMAIN = 3,
	WIRE_RCODE_NOTIMP = 4,
	WIRE_RCODE_REFUSED = 5,
	WIRE_RCODE_BADVERS = 16,
};

/* Header flag bits of the second 16-bit word. */
#define WIRE_FLAG_QR 0x8000
#define WIRE_FLAG_OPCODE 0x7800 /* mask; opcode = (flags >> 11) & 0xf */
#define WIRE_FLAG_AA 0x0400
#define WIRE_FLAG_TC 0x0200
#define WIRE_FLAG_RD 0x0100
#define WIRE_FLAG_RA 0x0080
#define WIRE_FLAG_AD 0x0020
#define WIRE_FLAG_CD 0x0010
#define WIRE_FLAG_RCODE 0x000f /* mask */

/* RR types this module interprets. */
enum {
	WIRE_TYPE_A = 1,
	WIRE_TYPE_NS = 2,
	WIRE_TYPE_CNAME = 5,
	WIRE_TYPE_SOA = 6,
	WIRE_TYPE_PTR = 12,
	WIRE_TYPE_MX = 15,
	WIRE_TYPE_TXT = 16,
	WIRE_TYPE_AAAA = 28,
	WIRE_TYPE_OPT = 41,
	WIRE_TYPE_DS = 43,
	WIRE_TYPE_RRSIG = 46,
	WIRE_TYPE_NSEC = 47,
	WIRE_TYPE_DNSKEY = 48,
	WIRE_TYPE_NSEC3 = 50,
	WIRE_TYPE_ANY = 255,
};
#define WIRE_CLASS_IN 1
#define WIRE_OPTION_EDE 15

/* Extended DNS Errors (RFC 8914) partdns gives. */
enum {
	WIRE_EDE_OTHER = 0,
	WIRE_EDE_STALE_ANSWER = 3,
	WIRE_EDE_UNSUPPORTED_DNSKEY_ALG = 1,
	WIRE_EDE_DNSSEC_BOGUS = 6,
	WIRE_EDE_SIGNATURE_EXPIRED = 7,
	WIRE_EDE_SIGNATURE_NOT_YET_VALID = 8,
	WIRE_EDE_DNSKEY_MISSING = 9,
	WIRE_EDE_RRSIGS_MISSING = 10,
	WIRE_EDE_NSEC_MISSING = 12,
	WIRE_EDE_CACHED_ERROR = 13,
	WIRE_EDE_NOT_AUTHORITATIVE = 20,
	WIRE_EDE_NO_REACHABLE_AUTHORITY = 22,
	WIRE_EDE_NETWORK_ERROR = 23,
	WIRE_EDE_INVALID_DATA = 24,
	WIRE_EDE_UNSUPPORTED_NSEC3_ITER = 27,
};

/* An Extended DNS Error: INFO-CODE and EXTRA-TEXT (static, or NULL for none). */
struct wire_ede {
	uint16_t code;
	const char *text;
};

/*
 * A parsed client query. Which fields are valid depends on the result of
 * wire_parse_query:
 *   0, WIRE_NOTIFY    all fields.
 *   WIRE_E_DROP       none (id/flags only when the packet had 12 bytes).
 *   WIRE_E_NOTIMP     id, flags; question_ok and has_edns are false (the
 *                     reply is a bare header: we do not read what follows
 *                     the header of an opcode we do not know).
 *   WIRE_E_FORMERR    id, flags; the question fields when question_ok;
 *                     the EDNS fields (edns_udp, edns_version, edns_do)
 *                     when has_edns; has_ecs is false.
 *   WIRE_E_BADVERS    id, flags, question (question_ok is true), EDNS
 *                     fields (has_edns is true); has_ecs is false (the
 *                     options of an unknown EDNS version are not read).
 */
struct wire_query {
	uint16_t id;
	uint16_t flags;                 /* header flags word as received */
	bool question_ok;               /* the question fields below are valid */
	uint8_t qname[WIRE_MAX_NAME];   /* uncompressed wire form, case as received */
	size_t qname_len;               /* including the root byte */
	uint8_t qname_lc[WIRE_MAX_NAME]; /* lower-cased copy (for keys) */
	uint16_t qtype, qclass;
	size_t question_end;            /* offset just past the question in the packet */
	bool has_edns;                  /* the query had an OPT record */
	uint16_t edns_udp;              /* client's advertised UDP size (raw) */
	uint16_t reply_udp;             /* ours, advertised in the reply's OPT: WIRE_DEFAULT_UDP from
	                                   wire_parse_query, server.max_udp_size once the caller sets it */
	uint8_t edns_version;
	bool edns_do;
	bool has_ecs;                   /* client's ECS option, when present and valid */
	struct ecs ecs;
};

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

/* ---- cached answers ---- */

/*
 * TTL policy for wire_answer_prepare. 0 in max_ttl or max_negative_ttl
 * means "no cap" (TTLs are still at most 2^31 - 1, RFC 2181 §8); a
 * zeroed struct (or NULL) therefore changes nothing.
 */
struct wire_limits {
	uint32_t min_ttl;          /* every TTL is raised to at least this */
	uint32_t max_ttl;          /* every TTL is lowered to at most this */
	uint32_t max_negative_ttl; /* cap of the RFC 2308 negative lifetime */
	uint32_t nosoa_ttl;        /* lifetime of a negative answer without SOA; 0 = not cached (RFC 2308 §5) */
};

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

/* The CNAME chain from QNAME of an answer, as wire_answer_prepare_chain found it. */
struct wire_chain {
	unsigned hops;
	uint16_t rdata[WIRE_CNAME_MAX]; /* hop i's target: RDATA offset in the response... */
	uint16_t end[WIRE_CNAME_MAX];   /* ...and its end */
};

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
 * Hop hop's target name of chain (lower-cased, WIRE_MAX_NAME bytes) from the
 * response it was found in.
 * @return 0 or WIRE_E_FORMERR.
 */
int wire_chain_target(const uint8_t *resp, size_t len, const struct wire_chain *chain, unsigned hop, uint8_t *out,
		      size_t *out_len);

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

/* Facts about a blob, read from its fixed header (no parsing). */
struct wire_blob_info {
	int rcode;                       /* full 12-bit rcode */
	bool ad, tc, aa;                 /* upstream header bits */
	unsigned ancount, nscount, arcount; /* arcount without the dropped OPT */
	size_t msg_len;                  /* size of the stored message */
	size_t msg_off;                  /* where it starts in the blob */
};

/** @return 0 or -EINVAL (not a blob). */
int wire_blob_info(const uint8_t *blob, size_t blob_len, struct wire_blob_info *info);

/** @return the blob's rcode (0..4095) or -EINVAL (not a blob). */
int wire_blob_rcode(const uint8_t *blob, size_t blob_len);

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

/* What wire_response_check learnt about a response. */
struct wire_resp_info {
	int rcode;                 /* full 12-bit rcode (upper bits from OPT) */
	bool tc, aa, ad;
	bool has_edns;             /* the response had an OPT record */
	bool has_ecs;              /* ... with a valid ECS option, in ecs */
	struct ecs ecs;
	unsigned qdcount, ancount, nscount, arcount;
};

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

/* ---- names ---- */

/**
 * Text ("www.example.com." or without the final dot; "." is the root) to
 * wire form. Escapes: "\." "\\" and "\DDD" (decimal byte).
 * @return wire length, -EINVAL (empty label, label > 63, name > 255, bad
 *         escape, empty text), or -ENOSPC.
 */
int wire_name_from_text(const char *text, uint8_t *out, size_t cap);

/**
 * Wire form to text with the final dot ("." for the root); '.', '\' and
 * bytes outside 0x21..0x7e are escaped as in wire_name_from_text.
 * @return text length (without the NUL written after it), -EINVAL (not a
 *         valid uncompressed name of exactly len bytes), or -ENOSPC.
 */
int wire_name_to_text(const uint8_t *name, size_t len, char *out, size_t cap);

/** 0 when name is a valid uncompressed wire name of exactly len bytes, else -EINVAL. */
int wire_name_check(const uint8_t *name, size_t len);

/** Lower-case (ASCII) len bytes of a wire name into out (may equal name). */
void wire_name_lower(const uint8_t *name, size_t len, uint8_t *out);

/** Case-insensitive equality of two valid wire names. */
bool wire_name_equal(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen);

/**
 * Offset of the parent name inside name (skip the first label): the parent
 * is name + ret, len - ret bytes.
 * @return the offset, or -EINVAL for the root or an invalid name.
 */
int wire_name_parent(const uint8_t *name, size_t len);

/** Number of labels without the root ("." → 0, "a.b." → 2), or -EINVAL. */
int wire_name_labels(const uint8_t *name, size_t len);

/** True when name equals zone or lies below it (case-insensitive; both valid). */
bool wire_name_in_zone(const uint8_t *name, size_t len, const uint8_t *zone, size_t zone_len);

/** Text of a WIRE_E_* or negative errno code. */
const char *wire_strerror(int err);

/* ---- reading records (one parser for every upstream message) ---- */

/* Sections of a message, in wire order. */
enum wire_section { WIRE_SECTION_ANSWER = 0, WIRE_SECTION_AUTHORITY = 1, WIRE_SECTION_ADDITIONAL = 2 };

/* One resource record as found by wire_iter_next. */
struct wire_rr {
	enum wire_section section;
	uint8_t owner[WIRE_MAX_NAME]; /* uncompressed, case as received */
	size_t owner_len;
	uint16_t type, rclass;
	uint32_t ttl;
	uint16_t rdlen;
	size_t rdata;                 /* offset of the RDATA in the message */
};

/* Walks the records of a message; keeps pointers to the message (not a copy). */
struct wire_iter {
	const uint8_t *pkt;
	size_t len, pos;
	unsigned count[3];            /* records per section */
	unsigned section, idx;
};

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

/* Whose answer it is, and to which question. */
struct wire_scrub {
	const uint8_t *qname;   /* the question asked (uncompressed wire form) */
	size_t qname_len;
	uint16_t qtype;
	const uint8_t *zone;    /* iterate: the zone whose servers answered (the bailiwick) */
	size_t zone_len;
	bool forwarder;         /* a forwarder answered: trusted for the question's chain in any zone */
};

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
