/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The daemon's HTTP endpoints, on libmicrohttpd. A library rather than
 * hand-written HTTP: these endpoints face whatever connects to them, and
 * request parsing (pipelining, chunked bodies, header limits, slow clients,
 * half-closed sockets, HEAD) is exactly what a small hand-written server
 * gets wrong; libmicrohttpd is in Debian, event-driven and bounded by
 * options. One thread of ours runs it (epoll), so a client that connects
 * and says nothing holds one slot and never the thread.
 *
 * What libmicrohttpd does not bound is a slot's time: its timeout counts
 * idle time only, so a client sending a header byte a second (slowloris)
 * holds its slot for as long as it likes, and 32 of them (8 per address,
 * 4 addresses) took every slot: /health stopped answering, which can
 * withdraw an anycast node, and CDNs could not fetch the plan (issue 32,
 * defect 7). So each connection is tracked here (NOTIFY_CONNECTION) with a
 * total deadline: its request line and headers within HTTP_HEAD_MS of the
 * accept (or of the end of its previous request), its reply taken within
 * HTTP_REPLY_MS; one past it is shut down, which libmicrohttpd then sees as
 * a closed connection. And one slot is always kept free: a connection that
 * takes the last but one cuts off the one that has waited longest for its
 * head (else the oldest reply), so a newcomer -- a health check, a CDN --
 * is always accepted and served at once, whatever holds the others. As
 * nginx's client_header_timeout and Knot's tcp-io-timeout, the deadline
 * does not move with each byte received.
 */
#include "resolver/base/http.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "resolver/base/clock.h"
#include "resolver/base/log.h"

/* Bounds against hostile clients: a scraper or a CDN's fetcher needs one connection at a time. */
#define HTTP_MAX_CONN 32       /* connections at once, the one kept free included */
#define HTTP_MAX_PER_IP 8      /* per client address */
#define HTTP_TIMEOUT_S 5       /* a connection idle this long is closed */
#define HTTP_HEAD_MS 5000      /* request line and headers within this of the accept, however sent */
#define HTTP_REPLY_MS 30000    /* the reply taken within this of the request */
#define HTTP_CONN_MEMORY 16384 /* per connection: request line and headers must fit */

/* One connection, from libmicrohttpd's accept to its close (its socket context). */
struct http_conn {
	struct http_conn *prev, *next; /* oldest first */
	int fd;                        /* libmicrohttpd's: only shut down here, never closed */
	int64_t deadline;              /* ms, CLOCK_MONOTONIC: for the head, then for the reply */
	bool replying;                 /* the head is in; the reply is being sent */
	bool cut;                      /* shut down here; libmicrohttpd closes it on its next turn */
};

struct http_server {
	int fd; /* ours until the daemon starts, then libmicrohttpd's */
	int family;
	char key[32];
	char addr[64];
	struct MHD_Daemon *mhd;
	http_handler_fn fn;
	void *arg;
	const char *notfound;
	size_t nallow;
	struct prefix *allow;
	bool forbid; /* outside allow: 403 to each request, not closed at accept (http_forbid_outside) */
	/* the connections, on the server's thread only (libmicrohttpd's callbacks run there too) */
	struct http_conn *head, *tail;
	unsigned nlive; /* connections not cut */
	int stop_fd;    /* eventfd: http_free() asks the thread to end */
	pthread_t thread;
	bool running;
};

static int64_t now_ms(void)
{
	return (int64_t)(clock_ns() / 1000000u);
}

/* Shut conn down: libmicrohttpd reads its end and closes it (and frees its slot) on its next turn. */
static void conn_cut(struct http_server *h, struct http_conn *conn, const char *why)
{
	if (conn->cut)
		return;
	conn->cut = true;
	h->nlive--;
	if (conn->fd >= 0)
		shutdown(conn->fd, SHUT_RDWR);
	log_debug("%s: connection cut off: %s", h->key, why);
}

/*
 * Keep one slot free for the next client: with conn, every slot but one is
 * taken, so the connection that has waited longest for its request is cut
 * (a slow or silent one), or, when all of them are replying, the oldest
 * reply (a client that does not read).
 */
static void make_room(struct http_server *h, struct http_conn *conn)
{
	if (h->nlive < HTTP_MAX_CONN - 1)
		return;
	struct http_conn *victim = NULL;
	for (struct http_conn *o = h->head; o != NULL && victim == NULL; o = o->next)
		if (o != conn && !o->cut && !o->replying)
			victim = o;
	for (struct http_conn *o = h->head; o != NULL && victim == NULL; o = o->next)
		if (o != conn && !o->cut)
			victim = o;
	if (victim != NULL)
		conn_cut(h, victim, victim->replying ? "the oldest reply, to keep a slot free"
		                                     : "the longest wait for a request, to keep a slot free");
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
	struct http_server *h = cls;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		struct http_conn *conn = calloc(1, sizeof(*conn));
		if (conn == NULL) {
			/* untracked, it would have no deadline: refuse it instead */
			if (ci != NULL)
				shutdown(ci->connect_fd, SHUT_RDWR);
			return;
		}
		conn->fd = ci != NULL ? ci->connect_fd : -1;
		conn->deadline = now_ms() + HTTP_HEAD_MS;
		conn->prev = h->tail;
		if (h->tail != NULL)
			h->tail->next = conn;
		else
			h->head = conn;
		h->tail = conn;
		h->nlive++;
		*socket_context = conn;
		make_room(h, conn);
		return;
	}
	struct http_conn *conn = *socket_context; /* MHD_CONNECTION_NOTIFY_CLOSED */
	if (conn == NULL)
		return;
	*socket_context = NULL;
	if (!conn->cut)
		h->nlive--;
	if (conn->prev != NULL)
		conn->prev->next = conn->next;
	else
		h->head = conn->next;
	if (conn->next != NULL)
		conn->next->prev = conn->prev;
	else
		h->tail = conn->prev;
	free(conn);
}

static struct http_conn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci != NULL ? ci->socket_context : NULL;
}

/* A request is over (replied, or failed): the next one on the connection has its own head deadline. */
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)con_cls;
	(void)toe;
	struct http_conn *conn = conn_of(c);
	if (conn != NULL) {
		conn->replying = false;
		conn->deadline = now_ms() + HTTP_HEAD_MS;
	}
}

/* Cut every connection past its deadline. @return ms until the next deadline, or -1 for none. */
static int cut_overdue(struct http_server *h)
{
	int64_t now = now_ms(), next = -1;
	for (struct http_conn *o = h->head; o != NULL; o = o->next) {
		if (o->cut)
			continue;
		if (o->deadline <= now) {
			conn_cut(h, o, o->replying ? "the reply was not taken in time" : "no whole request in time");
			continue;
		}
		if (next < 0 || o->deadline - now < next)
			next = o->deadline - now;
	}
	return (int)next;
}

struct http_server *http_new(const char *key, const struct conf_addr *a, bool share, const struct prefix *allow,
                             size_t nallow, http_handler_fn fn, void *arg, const char *notfound)
{
	struct http_server *h = calloc(1, sizeof(*h));
	if (h == NULL || (nallow > 0 && (h->allow = calloc(nallow, sizeof(*allow))) == NULL)) {
		free(h);
		return NULL;
	}
	if (nallow > 0)
		memcpy(h->allow, allow, nallow * sizeof(*allow));
	h->nallow = nallow;
	h->fn = fn;
	h->arg = arg;
	h->notfound = notfound;
	h->family = a->ss.ss_family;
	h->stop_fd = -1;
	snprintf(h->key, sizeof(h->key), "%s", key);
	snprintf(h->addr, sizeof(h->addr), "%s", a->text);
	h->fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (h->fd < 0 || setsockopt(h->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    (share && setsockopt(h->fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0) ||
	    (h->family == AF_INET6 && setsockopt(h->fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) != 0) ||
	    bind(h->fd, (const struct sockaddr *)&a->ss, a->len) != 0 || listen(h->fd, 64) != 0) {
		log_err("cannot serve HTTP on %s (key '%s'): %s", a->text, key, strerror(errno));
		if (h->fd >= 0)
			close(h->fd);
		free(h->allow);
		free(h);
		return NULL;
	}
	return h;
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

/* Is the client at sa in h's allow list (every client when the list is empty)? */
static bool allowed(const struct http_server *h, const struct sockaddr *sa, socklen_t len)
{
	if (h->nallow == 0)
		return true;
	struct prefix who;
	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in))
		prefix_from_addr(&who, AF_INET, (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr);
	else if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6))
		prefix_from_addr(&who, AF_INET6, ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr);
	else
		return false;
	for (size_t i = 0; i < h->nallow; i++)
		if (prefix_contains(&h->allow[i], &who))
			return true;
	return false;
}

/* Does an If-None-Match list name etag (quoted, weak or strong: RFC 9110 13.1.2 compares weakly)? */
static bool etag_listed(const char *list, const char *quoted)
{
	if (list == NULL || quoted[0] == '\0')
		return false;
	size_t n = strlen(quoted);
	for (const char *p = list; *p != '\0';) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (*p == '*')
			return true;
		if (p[0] == 'W' && p[1] == '/')
			p += 2;
		if (strncmp(p, quoted, n) == 0 && (p[n] == '\0' || p[n] == ',' || p[n] == ' ' || p[n] == '\t'))
			return true;
		while (*p != '\0' && *p != ',')
			p++;
	}
	return false;
}

static enum MHD_Result serve(struct http_server *h, struct MHD_Connection *c, const char *url)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	if (out == NULL)
		return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n", NULL);
	struct http_page page = { .status = MHD_HTTP_OK };
	int rc = h->fn(h->arg, url, out, &page);
	if (fclose(out) != 0 || rc != 0) {
		free(buf);
		if (rc == -ENOENT)
			return reply(c, MHD_HTTP_NOT_FOUND, h->notfound, NULL);
		return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot write the reply\n", NULL);
	}
	char quoted[sizeof(page.etag) + 2] = "";
	if (page.etag[0] != '\0')
		snprintf(quoted, sizeof(quoted), "\"%s\"", page.etag);
	const char *inm = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH);
	bool unchanged = page.status == MHD_HTTP_OK && etag_listed(inm, quoted);
	struct MHD_Response *r = unchanged ? MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT)
	                                   : MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
	if (r == NULL || unchanged)
		free(buf);
	if (r == NULL)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, page.type ? page.type : "text/plain; charset=utf-8");
	if (quoted[0] != '\0')
		MHD_add_response_header(r, MHD_HTTP_HEADER_ETAG, quoted);
	if (page.header != NULL)
		MHD_add_response_header(r, page.header, page.value);
	if (page.modified != 0) {
		char date[64];
		struct tm tm;
		if (gmtime_r(&page.modified, &tm) != NULL &&
		    strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm) > 0) /* RFC 9110 IMF-fixdate */
			MHD_add_response_header(r, MHD_HTTP_HEADER_LAST_MODIFIED, date);
	}
	enum MHD_Result res = MHD_queue_response(c, unchanged ? MHD_HTTP_NOT_MODIFIED : page.status, r);
	MHD_destroy_response(r);
	return res;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
	(void)version;
	(void)upload_data;
	(void)con_cls;
	struct http_conn *conn = conn_of(c);
	if (conn != NULL && !conn->replying) { /* the head is in: the reply has its own deadline */
		conn->replying = true;
		conn->deadline = now_ms() + HTTP_REPLY_MS;
	}
	/* Answered at the first call, from the headers alone: a body is never
	 * read (libmicrohttpd closes the connection after replying). */
	struct http_server *h = cls;
	if (h->forbid) {
		/* the address libmicrohttpd accepted: checked here, where a reply can say why */
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		const struct sockaddr *sa = ci != NULL ? ci->client_addr : NULL;
		socklen_t salen = sa == NULL ? 0 : sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
		                                                              : sizeof(struct sockaddr_in);
		if (sa == NULL || !allowed(h, sa, salen))
			return reply(c, MHD_HTTP_FORBIDDEN, "forbidden: this address is not in the allow list\n", NULL);
	}
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n", "GET, HEAD");
	const char *clen = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (*upload_data_size != 0 || MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING) ||
	    (clen && strcmp(clen, "0") != 0))
		return reply(c, MHD_HTTP_BAD_REQUEST, "request bodies are not accepted\n", NULL);
	return serve(cls, c, url);
}

/* Clients outside the allow list are closed at accept, before a byte is read (unless h->forbid: 403 then). */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *sa, socklen_t len)
{
	const struct http_server *h = cls;
	return h->forbid || allowed(h, sa, len) ? MHD_YES : MHD_NO;
}

static void mhd_log(void *arg, const char *fmt, va_list ap)
{
	const struct http_server *h = arg;
	char msg[512];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	size_t n = strlen(msg);
	while (n > 0 && msg[n - 1] == '\n')
		msg[--n] = '\0';
	log_debug("%s: %s", h->key, msg);
}

/* The server's thread: libmicrohttpd's epoll, its timeouts and our deadlines, until stop_fd. */
static void *http_main(void *arg)
{
	struct http_server *h = arg;
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	int epfd = di != NULL ? di->epoll_fd : -1;
	for (;;) {
		int timeout = cut_overdue(h);
		MHD_UNSIGNED_LONG_LONG mt;
		if (MHD_get_timeout(h->mhd, &mt) == MHD_YES && (timeout < 0 || mt < (MHD_UNSIGNED_LONG_LONG)timeout))
			timeout = (int)mt;
		if (epfd < 0 && (timeout < 0 || timeout > 100))
			timeout = 100; /* no epoll fd to wait on (never seen): poll libmicrohttpd */
		struct pollfd p[2] = { { .fd = h->stop_fd, .events = POLLIN }, { .fd = epfd, .events = POLLIN } };
		if (poll(p, 2, timeout) < 0 && errno != EINTR) {
			log_err("%s: poll: %s", h->key, strerror(errno));
			break;
		}
		if (p[0].revents != 0)
			break;
		MHD_run(h->mhd);
	}
	return NULL;
}

int http_forbid_outside(struct http_server *h, const struct prefix *allow, size_t nallow)
{
	struct prefix *copy = NULL;
	if (nallow > 0 && (copy = calloc(nallow, sizeof(*copy))) == NULL)
		return -ENOMEM;
	if (nallow > 0)
		memcpy(copy, allow, nallow * sizeof(*allow));
	free(h->allow);
	h->allow = copy;
	h->nallow = nallow;
	h->forbid = true;
	return 0;
}

int http_start(struct http_server *h)
{
	unsigned flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
	if (h->family == AF_INET6)
		flags |= MHD_USE_IPv6;
	h->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (h->stop_fd < 0) {
		log_err("cannot start the HTTP server on %s (key '%s'): eventfd: %s", h->addr, h->key, strerror(errno));
		return -1;
	}
	h->mhd = MHD_start_daemon(flags, 0, on_accept, h, on_request, h, MHD_OPTION_LISTEN_SOCKET, h->fd,
	                          MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_MAX_CONN,
	                          MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)HTTP_MAX_PER_IP,
	                          MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_TIMEOUT_S,
	                          MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONN_MEMORY,
	                          MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
	                          MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
	                          MHD_OPTION_EXTERNAL_LOGGER, mhd_log, h, MHD_OPTION_END);
	if (h->mhd == NULL) {
		log_err("cannot start the HTTP server on %s (key '%s')", h->addr, h->key);
		return -1;
	}
	h->fd = -1; /* libmicrohttpd closes it when stopped */
	int rc = pthread_create(&h->thread, NULL, http_main, h);
	if (rc != 0) {
		log_err("cannot start the HTTP server's thread on %s (key '%s'): %s", h->addr, h->key, strerror(rc));
		return -1;
	}
	h->running = true;
	return 0;
}

void http_free(struct http_server *h)
{
	if (h == NULL)
		return;
	if (h->running) {
		uint64_t one = 1;
		if (write(h->stop_fd, &one, sizeof(one)) != sizeof(one))
			log_err("%s: cannot stop the HTTP thread: %s", h->key, strerror(errno));
		pthread_join(h->thread, NULL);
	}
	if (h->mhd)
		MHD_stop_daemon(h->mhd); /* closes the connections: their CLOSED notes free ours */
	if (h->fd >= 0)
		close(h->fd);
	if (h->stop_fd >= 0)
		close(h->stop_fd);
	free(h->allow);
	free(h);
}
