/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. A worker thread: UDP and TCP listeners, cache hits, replies. */
#pragma once

#include "resolver/core.h"

/**
 * Create worker idx with its own SO_REUSEPORT sockets on every listen address.
 * @return the worker or NULL (the error is logged, naming the address).
 */
struct worker *worker_new(struct server *srv, unsigned idx, const struct conf *c);
int worker_start(struct worker *w);
void worker_join(struct worker *w);
void worker_free(struct worker *w);
struct counters *worker_counters(struct worker *w);
struct partition_counters *worker_partition_counters(struct worker *w);
