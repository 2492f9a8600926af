/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. A libunbound context configured from the resolver.* keys. */
#pragma once

#include "conf/conf.h"

struct ub_ctx;

/**
 * Create an asynchronous (threaded) libunbound context from c->resolver:
 * root hints, trust anchor, forward zones and pass-through options.
 * Errors are logged naming the setting.
 * @return the context (free with ub_ctx_delete) or NULL.
 */
struct ub_ctx *ubctx_new(const struct conf *c);
