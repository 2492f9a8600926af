/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. DNSSEC validation of one upstream answer the EDNS pool fetched. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "wire/wire.h"

/*
 * The EDNS pool sends its ECS-bearing queries itself, so libunbound never
 * sees those answers. Validation is split so the pool's event loop can
 * fetch what it needs asynchronously:
 *
 *   1. val_needs: which lookups the answer needs — the DNSKEY RRset of
 *      every zone that signed something in it, and, for data that carries
 *      no signature at all, the SOA of its owner name (whose security
 *      status says whether that name's zone is signed).
 *   2. the caller asks its validating libunbound context for each and
 *      records what came back (val_need.state; DNSKEY answers in wire
 *      format). The chain of trust up to the anchor is libunbound's job.
 *   3. val_check: RRSIGs over every RRset checked with ldns against those
 *      keys, denial of existence (NSEC, NSEC3) and wildcard expansion
 *      proven, and the answer's outcome.
 *
 * Nothing here touches the network, a clock or a global: the fuzz target
 * and the unit tests drive it with arbitrary messages.
 */

#define VAL_MAX_NEEDS 8 /* lookups one answer may need; more is bogus */

enum val_state {
	VAL_SECURE,        /* every RRset verified up to the trust anchor */
	VAL_INSECURE,      /* some data in a zone proven unsigned (no DS on the way down) */
	VAL_BOGUS,         /* a signature, a key or a proof failed */
	VAL_INDETERMINATE, /* a lookup failed: the answer can be neither trusted nor proven forged */
};

struct val_need {
	uint16_t type;                /* WIRE_TYPE_DNSKEY (of a signer) or WIRE_TYPE_SOA (of unsigned data) */
	uint8_t name[WIRE_MAX_NAME];  /* lower case */
	size_t name_len;
	/* filled by the caller: libunbound's verdict on the lookup... */
	enum val_state state;
	const char *why;              /* libunbound's why_bogus, or NULL */
	/* ...and, for a secure DNSKEY lookup, its answer (borrowed until val_check returns) */
	const uint8_t *answer;
	size_t answer_len;
};

struct val_needs {
	unsigned n;
	struct val_need need[VAL_MAX_NEEDS];
};

struct val_outcome {
	enum val_state state;
	struct wire_ede ede;          /* bogus, indeterminate: what the client is told (text static) */
	char zone[256];               /* bogus: the zone (text) whose data failed, for the log */
	const char *why;              /* bogus: the reason, for the log (static) */
};

/**
 * Which lookups msg (a scrubbed upstream answer to qname/qtype) needs.
 * @return 0; -1 when msg is malformed or needs more than VAL_MAX_NEEDS
 *         lookups (the caller treats that as bogus: EDE "invalid data").
 */
int val_needs(const uint8_t *msg, size_t len, const uint8_t *qname, size_t qname_len, struct val_needs *out);

/**
 * Validate msg (the same message val_needs saw) with the lookups' results.
 * now: the time signatures are checked against (seconds since the epoch).
 * Outcome: secure when every RRset of the answer and the authority section
 * verified with keys from a secure DNSKEY lookup and a negative answer or a
 * wildcard expansion is proven; insecure when unsigned data sits in a zone
 * libunbound shows insecure (or a signer's own zone is insecure); bogus
 * otherwise, with the first failure's zone, reason and EDE.
 */
void val_check(const uint8_t *msg, size_t len, const uint8_t *qname, size_t qname_len, uint16_t qtype,
               const struct val_needs *needs, time_t now, struct val_outcome *out);

/** "secure", "insecure", "bogus", "indeterminate". */
const char *val_state_name(enum val_state s);
