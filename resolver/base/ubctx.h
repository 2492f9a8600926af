/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. A libunbound context configured from the resolver.* keys. */
#pragma once

#include "conf/conf.h"

struct ub_ctx;
struct ub_event_base;

/*
 * Sockets for queries in flight, per pool: queries to servers that never
 * answer each hold one until they time out, and with libunbound's default
 * range a flood of random names under one dead zone took them all
 * (bench/RESULTS.md "Dead authorities"). A pool of several contexts
 * splits it, each keeping at least UBCTX_OUTGOING_MIN.
 */
#define UBCTX_OUTGOING_RANGE 8192u
#define UBCTX_OUTGOING_MIN 1024u

/* Which of a pool's contexts this is, and where the pool sends from. */
struct ubctx_share {
	unsigned idx; /* 0 maintains an RFC 5011 auto-trust-anchor-file given in
	               * resolver.options; the others read that file as a plain
	               * trust-anchor-file (one writer per file) */
	unsigned of;  /* contexts in the pool: each gets 1/of of
	               * UBCTX_OUTGOING_RANGE (at least UBCTX_OUTGOING_MIN) and
	               * of resolver.zone_qps (libunbound's ratelimit) */
	bool whole_rate; /* each context takes the whole of resolver.zone_qps:
	                  * names do not reach it by hash but by the listener
	                  * that read them, so one busy client's zone may meet
	                  * a single context (colocated normal pool) */
	/* The pool's source addresses (resolver.outgoing or edns.outgoing),
	 * each an outgoing-interface; a family without one is turned off
	 * (do-ip4/do-ip6: no). None: libunbound's wildcard, both families. */
	const struct conf_addr *outgoing;
	size_t noutgoing;
	/* A normal pool's stub context: these names (flagged --subtree rules)
	 * become empty zones its iterator answers itself (auth-zone,
	 * for-upstream), so a CNAME into one stops there instead of asking
	 * the flagged zone's servers without ECS. None: a plain context. */
	const char *const *stubs;
	size_t nstubs;
};

/**
 * Create a libunbound context from c->resolver: root hints, trust anchor,
 * forward zones and pass-through options (which win over our defaults).
 * Errors are logged naming the setting.
 * @param base   an event base (uloop.h): the context runs in its caller's loop
 *               (ub_resolve_event, wire-format answers, no thread, no
 *               pipe); NULL: asynchronous with its own thread
 *               (ub_resolve_async, ub_fd, ub_process)
 * With share->nstubs, the context is finalised here (libunbound reads the
 * stub zones' files then), so call it as the user that will resolve.
 * @return the context (free with ub_ctx_delete) or NULL.
 */
struct ub_ctx *ubctx_new(const struct conf *c, struct ub_event_base *base, const struct ubctx_share *share);

/** ub_ctx_delete, one at a time with ubctx_new (for contexts retired while others are made). NULL: nothing. */
void ubctx_free(struct ub_ctx *ctx);

/**
 * Does a context from c validate (resolver.trust_anchor, or a trust-anchor
 * option in resolver.options)? Without one it runs the iterator alone.
 */
bool ubctx_validates(const struct conf *c);

/**
 * Can this process read the files libunbound will open (resolver.root_hints,
 * resolver.trust_anchor, the files of resolver.options such as
 * auto-trust-anchor-file), and is each a regular file? libunbound reads them
 * only at its first lookup, where a missing file turns every query into
 * SERVFAIL with nothing said at start, and its open() of a FIFO waits for a
 * writer: partdns -t and the start (after the privilege drop, as the user
 * that will read them) ask first, and ubctx_new() asks again.
 * @return 0, or -1 with "resolver.KEY: cannot read PATH: reason" in why.
 */
int ubctx_check_files(const struct conf *c, char *why, size_t len);
