/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * This file is private to resolver/. server.http: the running partition
 * plan, published for CDNs at /mapping.csv, /mapping.json and /geofeed.csv
 * (RFC 8805), with ETag = the plan's serial and Last-Modified = when it went
 * live, so a CDN polls cheaply (304 Not Modified) and can order tables.
 */
#pragma once

#include <stdio.h>
#include <time.h>

#include "conf/conf.h"
#include "resolver/base/http.h"

/* The 404 text: what exists. */
#define PUBLISH_PATHS                                                                                         \
	"not found: /mapping.csv, /mapping.json and /geofeed.csv; the staged plan (partdnsctl plan stage) under " \
	"/next/\n"

/* The header that says when a staged plan goes live: an HTTP date, or "on activation". */
#define PUBLISH_EFFECTIVE "X-Partdns-Effective"

/**
 * The page for path of the plan in c, live since live_since.
 * @return 0, -ENOENT (no such page), or -EIO.
 */
int publish_page(const struct conf *c, time_t live_since, const char *path, FILE *out, struct http_page *page);

/**
 * The page for path (under /next/, already stripped) of the staged plan in
 * next (NULL: none, 404), staged at staged, going live at effective (0 = on
 * activation), said in a PUBLISH_EFFECTIVE header.
 */
int publish_next_page(const struct conf *next, time_t staged, time_t effective, const char *path, FILE *out,
                      struct http_page *page);
