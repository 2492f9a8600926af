/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. The EDNS pool's iteration step: what each upstream message means, without sockets. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "mapping/ecs.h"
#include "wire/wire.h"

/*
 * Every function here reads messages through the wire layer only and
 * decides; resolve_edns.c does the I/O (sockets, libunbound lookups,
 * timers) and follows the decision. That split is the seam where answers
 * are checked (and, later, scrubbed) and where the step is unit-tested
 * with canned packets.
 */

#define EDNS_MAX_SERVERS 8
#define EDNS_MAX_NSNAMES 4

/* The servers of the zone being asked, and their names while addresses are looked up. */
struct edns_servers {
	struct sockaddr_storage addr[EDNS_MAX_SERVERS];
	int naddr;
	uint8_t nsname[EDNS_MAX_NSNAMES][WIRE_MAX_NAME];
	size_t nsname_len[EDNS_MAX_NSNAMES];
	int nns;
	uint32_t ns_ttl;   /* the smallest TTL of the NS records taken (how long the cut may be cached) */
};

/** Add an address (family AF_INET: 4 bytes, AF_INET6: 16) with port, while there is room. */
void edns_servers_add(struct edns_servers *s, int family, const uint8_t *addr, uint16_t port);

/**
 * The NS names of zone found in section of msg (owner must be zone), replacing s's names.
 * @return the number taken.
 */
int edns_servers_take_ns(struct edns_servers *s, const uint8_t *msg, size_t len, enum wire_section section,
                         const uint8_t *zone, size_t zone_len);

/**
 * A/AAAA records of section owned by one of s's NS names (glue), or by any
 * name when any_owner; with bailiwick, only owners inside that zone (glue
 * of a referral: only what the zone being iterated may speak for).
 */
void edns_servers_take_addrs(struct edns_servers *s, const uint8_t *msg, size_t len, enum wire_section section,
                             bool any_owner, const uint8_t *bailiwick, size_t bailiwick_len);

/* What the answer to an SOA lookup of zname says about the zone cut. */
enum edns_cut { EDNS_CUT_FOUND, EDNS_CUT_PARENT, EDNS_CUT_NONE };

/**
 * Read the answer to "zname SOA" for the hop name: the zone holding name is
 * zname when zname owns an SOA; an alias at zname means its parent holds it
 * (EDNS_CUT_PARENT: ask again one label up); else the SOA owner in the
 * authority section when name is inside it.
 * @param zone  out (lower case, WIRE_MAX_NAME bytes) for EDNS_CUT_FOUND
 */
enum edns_cut edns_iter_soa(const uint8_t *msg, size_t len, const uint8_t *name, size_t name_len,
                            const uint8_t *zname, size_t zname_len, uint8_t *zone, size_t *zone_len);

/* One question asked of a zone's servers (or of forward targets). */
struct edns_hop {
	const uint8_t *name;       /* this hop's name */
	size_t name_len;
	const uint8_t *zone;       /* the zone being asked (iterate policy) */
	size_t zone_len;
	uint16_t id, qtype, qclass;
	const struct ecs *ecs;     /* the ECS we sent */
	bool tcp;                  /* the answer came over TCP */
	bool forward;              /* policy forward: no referrals */
};

/* What to do with an upstream message. */
enum edns_step {
	EDNS_STEP_IGNORE,      /* not the answer to our question: keep waiting (UDP) */
	EDNS_STEP_NEXT_SERVER, /* unusable: ask the next server (why says what was wrong) */
	EDNS_STEP_TCP,         /* truncated: ask the same server over TCP */
	EDNS_STEP_REFERRAL,    /* a delegation below zone: cut is the new zone (servers in the message) */
	EDNS_STEP_CNAME,       /* the (scrubbed) answer is a CNAME to target: splice it and ask for target */
	EDNS_STEP_DONE,        /* the final (scrubbed) answer, positive or negative */
};

struct edns_verdict {
	enum edns_step step;
	const char *why;                  /* NEXT_SERVER: a static phrase */
	enum { EDNS_BAD_NONE, EDNS_BAD_MISMATCH, EDNS_BAD_MALFORMED, EDNS_BAD_RCODE, EDNS_BAD_TRUNCATED } bad;
	uint8_t *msg;                     /* CNAME, DONE: the scrubbed message (malloc'd; edns_verdict_clear) */
	size_t msg_len;
	unsigned scrubbed;                /* CNAME, DONE: records the scrubber removed */
	bool mismatch;                    /* IGNORE or NEXT_SERVER because it did not answer our query */
	bool ecs_echoed;                  /* CNAME, DONE: the server echoed our ECS (else it ignored it) */
	uint8_t ecs_scope;                /* ... with this scope prefix length */
	uint8_t target[WIRE_MAX_NAME];    /* CNAME: lower case */
	size_t target_len;
	uint8_t cut[WIRE_MAX_NAME];       /* REFERRAL: the child zone, lower case */
	size_t cut_len;
};

/**
 * Decide what msg (an upstream response to hop) means. An answer is scrubbed
 * (wire_scrub: the zone's servers speak only for the zone, a forwarder only
 * for the question's chain) before its CNAME target is read, so a record a
 * server may not give is never followed nor passed on.
 * @return -ENOMEM (v->step NEXT_SERVER) or 0.
 */
int edns_iter_response(const struct edns_hop *hop, const uint8_t *msg, size_t len, struct edns_verdict *v);

/** Free what a verdict holds. */
void edns_verdict_clear(struct edns_verdict *v);
