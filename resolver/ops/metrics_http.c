/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * server.metrics: GET /metrics (Prometheus text format) and /health, on the
 * daemon's HTTP server (http.c); any other path goes to the pages callback
 * (the console: /, /status.json), all behind server.metrics_allow.
 */
#include "resolver/ops/metrics_http.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "resolver/base/http.h"

struct metrics_http {
	struct http_server *http;
	atomic_bool ready;
	metrics_collect_fn collect;
	void *arg;
	http_handler_fn pages; /* every other path; NULL = 404 */
	void *pages_arg;
};

static int page(void *arg, const char *path, FILE *out, struct http_page *pg)
{
	struct metrics_http *m = arg;
	if (strcmp(path, "/metrics") == 0) {
		pg->type = "text/plain; version=0.0.4; charset=utf-8";
		return m->collect(m->arg, out) != 0 ? -EIO : 0;
	}
	if (strcmp(path, "/health") == 0) {
		bool ready = atomic_load(&m->ready);
		pg->status = ready ? 200 : 503;
		fputs(ready ? "ready\n" : "not ready\n", out);
		return 0;
	}
	return m->pages != NULL ? m->pages(m->pages_arg, path, out, pg) : -ENOENT;
}

struct metrics_http *metrics_http_new(const struct conf_addr *a, bool share, metrics_collect_fn collect, void *arg)
{
	struct metrics_http *m = calloc(1, sizeof(*m));
	if (m == NULL)
		return NULL;
	m->collect = collect;
	m->arg = arg;
	m->http = http_new("server.metrics", a, share, NULL, 0, page, m,
	                   "not found: / (the console), /status.json, /metrics and /health only\n");
	if (m->http == NULL) {
		free(m);
		return NULL;
	}
	return m;
}

int metrics_http_allow(struct metrics_http *m, const struct prefix *allow, size_t nallow)
{
	return http_forbid_outside(m->http, allow, nallow);
}

void metrics_http_pages(struct metrics_http *m, http_handler_fn fn, void *arg)
{
	m->pages = fn;
	m->pages_arg = arg;
}

int metrics_http_start(struct metrics_http *m)
{
	return http_start(m->http);
}

void metrics_http_set_ready(struct metrics_http *m, bool ready)
{
	atomic_store(&m->ready, ready);
}

void metrics_http_free(struct metrics_http *m)
{
	if (m == NULL)
		return;
	http_free(m->http); /* first: a request in progress reads m */
	free(m);
}
