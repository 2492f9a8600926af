/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The HTTP side of server.metrics, on libmicrohttpd. A library rather than
 * hand-written HTTP: a scrape endpoint faces whatever connects to it, and
 * request parsing (pipelining, chunked bodies, header limits, slow clients,
 * half-closed sockets, HEAD) is exactly what a small hand-written server
 * gets wrong; libmicrohttpd is in Debian, event-driven and bounded by
 * options. One thread polls every connection (epoll), so a client that
 * connects and says nothing holds one slot until the timeout and never
 * the thread: a scrape beside it is served at once.
 */
#include "resolver/metrics_http.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "resolver/log.h"

/* Bounds against hostile clients: a scraper needs one connection at a time. */
#define METRICS_MAX_CONN 32       /* connections at once */
#define METRICS_MAX_PER_IP 8      /* per client address */
#define METRICS_TIMEOUT_S 5       /* a connection idle this long is closed */
#define METRICS_CONN_MEMORY 16384 /* per connection: request line and headers must fit */

struct metrics_http {
	int fd;                   /* ours until the daemon starts, then libmicrohttpd's */
	int family;
	char addr[64];
	struct MHD_Daemon *mhd;
	atomic_bool ready;
	metrics_collect_fn collect;
	void *arg;
};

struct metrics_http *metrics_http_new(const struct conf_addr *a, bool share, metrics_collect_fn collect, void *arg)
{
	struct metrics_http *m = calloc(1, sizeof(*m));
	if (m == NULL)
		return NULL;
	m->collect = collect;
	m->arg = arg;
	m->family = a->ss.ss_family;
	snprintf(m->addr, sizeof(m->addr), "%s", a->text);
	m->fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (m->fd < 0 || setsockopt(m->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    (share && setsockopt(m->fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0) ||
	    (m->family == AF_INET6 && setsockopt(m->fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) != 0) ||
	    bind(m->fd, (const struct sockaddr *)&a->ss, a->len) != 0 || listen(m->fd, 64) != 0) {
		log_err("cannot serve metrics on %s (key 'server.metrics'): %s", a->text, strerror(errno));
		if (m->fd >= 0)
			close(m->fd);
		free(m);
		return NULL;
	}
	return m;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *body, const char *allow)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
	if (r == NULL)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	if (allow)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	enum MHD_Result rc = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result scrape(struct metrics_http *m, struct MHD_Connection *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	if (out == NULL)
		return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n", NULL);
	int rc = m->collect(m->arg, out);
	if (fclose(out) != 0 || rc != 0) {
		free(buf);
		return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot gather the metrics\n", NULL);
	}
	struct MHD_Response *r = MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
	if (r == NULL) {
		free(buf);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8");
	enum MHD_Result res = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return res;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
	struct metrics_http *m = cls;
	(void)version;
	(void)upload_data;
	/* Answered at the first call, from the headers alone: a body is never
	 * read (libmicrohttpd closes the connection after replying). */
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n", "GET, HEAD");
	const char *clen = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (*upload_data_size != 0 || MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING) ||
	    (clen && strcmp(clen, "0") != 0))
		return reply(c, MHD_HTTP_BAD_REQUEST, "request bodies are not accepted\n", NULL);
	(void)con_cls;
	if (strcmp(url, "/metrics") == 0)
		return scrape(m, c);
	if (strcmp(url, "/health") == 0)
		return atomic_load(&m->ready) ? reply(c, MHD_HTTP_OK, "ready\n", NULL)
		                              : reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, "not ready\n", NULL);
	return reply(c, MHD_HTTP_NOT_FOUND, "not found: /metrics and /health only\n", NULL);
}

static void mhd_log(void *arg, const char *fmt, va_list ap)
{
	(void)arg;
	char msg[512];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	size_t n = strlen(msg);
	while (n > 0 && msg[n - 1] == '\n')
		msg[--n] = '\0';
	log_debug("metrics: %s", msg);
}

int metrics_http_start(struct metrics_http *m)
{
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
	if (m->family == AF_INET6)
		flags |= MHD_USE_IPv6;
	m->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, m, MHD_OPTION_LISTEN_SOCKET, m->fd,
	                          MHD_OPTION_CONNECTION_LIMIT, (unsigned)METRICS_MAX_CONN,
	                          MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)METRICS_MAX_PER_IP,
	                          MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)METRICS_TIMEOUT_S,
	                          MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)METRICS_CONN_MEMORY,
	                          MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_END);
	if (m->mhd == NULL) {
		log_err("cannot start the metrics server on %s (key 'server.metrics')", m->addr);
		return -1;
	}
	m->fd = -1; /* libmicrohttpd closes it when stopped */
	return 0;
}

void metrics_http_set_ready(struct metrics_http *m, bool ready)
{
	atomic_store(&m->ready, ready);
}

void metrics_http_free(struct metrics_http *m)
{
	if (m == NULL)
		return;
	if (m->mhd)
		MHD_stop_daemon(m->mhd);
	if (m->fd >= 0)
		close(m->fd);
	free(m);
}
