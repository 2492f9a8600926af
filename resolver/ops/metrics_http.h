/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. The HTTP endpoint of server.metrics: GET /metrics and /health. */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "conf/conf.h"
#include "resolver/base/http.h"

struct metrics_http;

/* Writes the body of GET /metrics to out. @return 0, or -errno (the scrape gets 500). */
typedef int (*metrics_collect_fn)(void *arg, FILE *out);

/**
 * Bind and listen on a (no thread yet), so a bad or busy address fails the
 * start-up; the error is logged naming server.metrics and the address.
 * @param share SO_REUSEPORT, for --takeover (the old daemon keeps the port until it stops).
 * @param collect called on the server's thread for every GET /metrics.
 * @return the server or NULL.
 */
struct metrics_http *metrics_http_new(const struct conf_addr *a, bool share, metrics_collect_fn collect, void *arg);

/**
 * Before metrics_http_start: only clients in allow (server.metrics_allow,
 * copied) may fetch anything; others are answered 403. Without a call,
 * everyone may. @return 0 or -ENOMEM.
 */
int metrics_http_allow(struct metrics_http *m, const struct prefix *allow, size_t nallow);

/** Before metrics_http_start: fn serves every path but /metrics and /health (the console), on the server's thread. */
void metrics_http_pages(struct metrics_http *m, http_handler_fn fn, void *arg);

/** Start serving (a thread of libmicrohttpd's): /health answers 503 until metrics_http_set_ready. @return 0 or -1. */
int metrics_http_start(struct metrics_http *m);

/** What /health says from now on: 200 "ready" or 503. */
void metrics_http_set_ready(struct metrics_http *m, bool ready);

/** Stop the thread (after the request being served), close the socket, free. NULL is a no-op. */
void metrics_http_free(struct metrics_http *m);
