/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * This file is private to resolver/. A small, bounded HTTP/1.1 server on
 * libmicrohttpd for the daemon's two endpoints (server.metrics,
 * server.http): GET and HEAD only, no request bodies, an optional allow
 * list of clients, ETag / If-None-Match (304) and Last-Modified.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>

#include "conf/conf.h"
#include "partition/prefix.h"

struct http_server;

/* What a handler says about the body it wrote. */
struct http_page {
	unsigned status;   /* 200 unless the handler sets another */
	const char *type;  /* Content-Type; text/plain when NULL */
	char etag[40];     /* entity tag without quotes; "" = none (then no 304 either) */
	time_t modified;   /* Last-Modified; 0 = none */
	const char *header; /* one more header's name (static); NULL = none */
	char value[192];    /* ... and its value (a Content-Security-Policy fits) */
};

/**
 * Write the body for path to out and fill page. Called on the server's
 * thread, one request at a time.
 * @return 0, -ENOENT (404, with a list of what exists), or -errno (500).
 */
typedef int (*http_handler_fn)(void *arg, const char *path, FILE *out, struct http_page *page);

/**
 * Bind and listen on a (no thread yet), so a bad or busy address fails the
 * start-up; the error is logged naming key and the address.
 * @param share  SO_REUSEPORT, for --takeover.
 * @param allow  clients allowed to connect (others are refused at accept);
 *               none = everyone. Copied.
 * @param notfound  the body of a 404 (static text: what paths exist).
 * @return the server or NULL.
 */
struct http_server *http_new(const char *key, const struct conf_addr *a, bool share, const struct prefix *allow,
                             size_t nallow, http_handler_fn fn, void *arg, const char *notfound);

/**
 * Before http_start: clients outside allow (copied; replaces http_new's
 * list) are answered 403 Forbidden to every request instead of being
 * closed at accept, so an operator's browser or curl says why. They still
 * take a connection slot while served, bounded as every client is.
 * @return 0 or -ENOMEM.
 */
int http_forbid_outside(struct http_server *h, const struct prefix *allow, size_t nallow);

/** Start serving on a thread of its own (libmicrohttpd driven from it, with the deadlines of http.c). @return 0 or -1 (logged). */
int http_start(struct http_server *h);

/** Stop the thread (after the request being served), close the socket, free. NULL is a no-op. */
void http_free(struct http_server *h);
