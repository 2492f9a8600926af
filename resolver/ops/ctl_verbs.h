/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * This file is private to resolver/. What the daemon answers its operators:
 * the control verbs (partdnsctl stats, cache, query, reload, status,
 * unmatched, steering), and the same figures and plan over HTTP (/metrics,
 * the console, server.http's pages).
 */
#pragma once

#include <stdio.h>

#include "resolver/base/http.h"

struct daemon;

/** Register every verb on d->control. @return 0 or -ENOMEM. */
int ctl_verbs_register(struct daemon *d);

/** GET /metrics (metrics_http's callback, arg = the daemon): what stats shows, as Prometheus metrics. */
int ctl_verbs_metrics(void *arg, FILE *out);

/** GET / (the console's page) and /status.json on server.metrics (metrics_http's pages, arg = the daemon). */
int ctl_verbs_console(void *arg, const char *path, FILE *out, struct http_page *page);

/** GET /mapping.csv and friends, /next/... (server.http's callback, arg = the daemon): the running and staged plan. */
int ctl_verbs_publish(void *arg, const char *path, FILE *out, struct http_page *page);
