/* SPDX-License-Identifier: BSD-3-Clause */
/* server.metrics: GET /metrics (Prometheus text format) and /health, on the daemon's HTTP server (http.c). */
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
	return -ENOENT;
}

struct metrics_http *metrics_http_new(const struct conf_addr *a, bool share, metrics_collect_fn collect, void *arg)
{
	struct metrics_http *m = calloc(1, sizeof(*m));
	if (m == NULL)
		return NULL;
	m->collect = collect;
	m->arg = arg;
	m->http = http_new("server.metrics", a, share, NULL, 0, page, m, "not found: /metrics and /health only\n");
	if (m->http == NULL) {
		free(m);
		return NULL;
	}
	return m;
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
