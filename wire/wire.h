/* SPDX-License-Identifier: BSD-3-Clause */
/* The DNS message codec's types, constants and error codes. Its functions are declared by the header of the
 * file that defines them: names.h, parse.h, answer.h, upstream.h (encode.h and bytes.h are wire/'s own). */
#pragma once

/*
 * Every function of wire/ works on caller-provided buffers, is bounds-checked
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

/* ---- cached answers (answer.h) ---- */

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

/* The CNAME chain from QNAME of an answer, as wire_answer_prepare_chain found it. */
struct wire_chain {
	unsigned hops;
	uint16_t rdata[WIRE_CNAME_MAX]; /* hop i's target: RDATA offset in the response... */
	uint16_t end[WIRE_CNAME_MAX];   /* ...and its end */
};

/* Facts about a blob, read from its fixed header (no parsing). */
struct wire_blob_info {
	int rcode;                       /* full 12-bit rcode */
	bool ad, tc, aa;                 /* upstream header bits */
	unsigned ancount, nscount, arcount; /* arcount without the dropped OPT */
	size_t msg_len;                  /* size of the stored message */
	size_t msg_off;                  /* where it starts in the blob */
};

/* ---- upstream (upstream.h) ---- */

/* What wire_response_check learnt about a response. */
struct wire_resp_info {
	int rcode;                 /* full 12-bit rcode (upper bits from OPT) */
	bool tc, aa, ad;
	bool has_edns;             /* the response had an OPT record */
	bool has_ecs;              /* ... with a valid ECS option, in ecs */
	struct ecs ecs;
	unsigned qdcount, ancount, nscount, arcount;
};

/* ---- reading records (parse.h) ---- */

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

/* ---- scrubbing upstream answers (upstream.h) ---- */

/* Whose answer it is, and to which question. */
struct wire_scrub {
	const uint8_t *qname;   /* the question asked (uncompressed wire form) */
	size_t qname_len;
	uint16_t qtype;
	const uint8_t *zone;    /* iterate: the zone whose servers answered (the bailiwick) */
	size_t zone_len;
	bool forwarder;         /* a forwarder answered: trusted for the question's chain in any zone */
};
