/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. A libunbound context configured from the resolver.* keys. */
#pragma once

#include <stdbool.h>

#include "conf/conf.h"

struct ub_ctx;
struct event_base;

/**
 * Create a libunbound context from c->resolver: root hints, trust anchor,
 * forward zones and pass-through options. Errors are logged naming the
 * setting.
 * @param base      a libevent base: the context runs in its caller's loop
 *                  (ub_resolve_event, wire-format answers, no thread, no
 *                  pipe); NULL: asynchronous with its own thread
 *                  (ub_resolve_async, ub_fd, ub_process)
 * @param ta_owner  this context maintains an RFC 5011 auto-trust-anchor-file
 *                  given in resolver.options; other contexts read that file
 *                  as a plain trust-anchor-file (one writer per file)
 * @return the context (free with ub_ctx_delete) or NULL.
 */
struct ub_ctx *ubctx_new(const struct conf *c, struct event_base *base, bool ta_owner);
