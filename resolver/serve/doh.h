/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. DNS over HTTPS (RFC 8484): one connection's HTTP/2 or HTTP/1.1 session. No sockets, no TLS. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/*
 * The connection (net_tcp.c) decrypts what the client sends and hands it
 * to doh_session_input; the session calls ops->query for each DNS query a
 * request carries; the connection answers each (at once or later) with
 * doh_session_reply; doh_session_output gives the bytes to encrypt and send.
 * HTTP/2 through nghttp2 (ALPN h2); HTTP/1.1 (ALPN http/1.1, or none) by
 * the small parser of doh_req.c, with keep-alive and pipelining (replies
 * in request order).
 */

#define DOH_MAX_STREAMS 100        /* HTTP/2 concurrent streams; HTTP/1.1 requests queued */
#define DOH_MAX_HEADERS 8192       /* bytes of one request's header block */

struct doh_session;

/* What a session needs from its connection. */
struct doh_ops {
	/**
	 * A DNS query arrived (msg: its wire form, checked to be at least a
	 * header long). id names it for doh_session_reply. xff: when the
	 * request had a Forwarded (for=) or X-Forwarded-For header with a
	 * valid address and the session was made with trust_forwarded, that
	 * address (the first/leftmost client); else NULL. msg is valid during
	 * the call only. It may call doh_session_reply at once, never
	 * doh_session_input or doh_session_free (it runs inside them).
	 */
	void (*query)(void *arg, uint32_t id, const uint8_t *msg, size_t len, const struct sockaddr_storage *xff,
	              socklen_t xff_len);
};

/**
 * A session for one connection.
 * @param h2               HTTP/2 (ALPN h2) or HTTP/1.1
 * @param path             the path of DoH requests (server.https_path, e.g. "/dns-query")
 * @param trust_forwarded  believe Forwarded / X-Forwarded-For (the peer is in server.proxy_from)
 * @return NULL on ENOMEM.
 */
struct doh_session *doh_session_new(bool h2, const char *path, bool trust_forwarded, const struct doh_ops *ops,
                                    void *arg);
void doh_session_free(struct doh_session *s);

/**
 * Bytes from the client. Requests that are not DoH are answered by the
 * session itself with a clear HTTP error and a short text/plain body: 404
 * (another path), 405 (not GET or POST; with Allow), 400 (no dns
 * parameter, bad base64url, a message shorter than a DNS header; HTTP/1.1:
 * a malformed head, no Host), 411 (HTTP/1.1 Transfer-Encoding without
 * Content-Length), 413 (a message over 65535 bytes), 415 (POST without
 * Content-Type application/dns-message), 431 (headers over
 * DOH_MAX_HEADERS; HTTP/1.1: a client sending on while DOH_MAX_STREAMS
 * requests wait), 503 (too many queries out or bytes held on this
 * connection), 505 (HTTP/1.x other than 1.0 and 1.1).
 * @return 0, or -1: close the connection now (a connection error nghttp2
 *         reports rather than answers, a flood, ENOMEM). A goodbye that
 *         deserves its answers first (GOAWAY, either side's; Connection:
 *         close; an HTTP/1.1 error that ends the connection) returns 0 and
 *         shows in doh_session_done once everything is handed out.
 */
int doh_session_input(struct doh_session *s, const uint8_t *p, size_t len);

/**
 * The reply to query id: 200, Content-Type application/dns-message,
 * Cache-Control max-age the smallest TTL of the reply's records (for a
 * negative answer, the SOA's, RFC 2308; 0 when none). len 0: the query
 * was dropped on purpose: the request gets 403 (HTTP/1.1) or its stream a
 * RST_STREAM (HTTP/2). An id the session no longer knows (its stream was
 * reset, the session ended) is ignored.
 * @return 0 or -ENOMEM.
 */
int doh_session_reply(struct doh_session *s, uint32_t id, const uint8_t *msg, size_t len);

/**
 * Bytes to send now: *data valid until the next call on s, which takes
 * them as sent (the connection writes them whole before asking again).
 * Call it after doh_session_input and doh_session_reply until it gives 0:
 * HTTP/1.1 replies go out in request order, so one reply may free several.
 * @return their length (0: nothing now), or -1 on a fatal error.
 */
long doh_session_output(struct doh_session *s, const uint8_t **data);

/** Queries handed out and not yet replied to (including those whose HTTP/2 stream the client has reset). */
unsigned doh_session_pending(const struct doh_session *s);

/**
 * Has the session nothing more to do (the client said goodbye, or a fatal
 * error, and everything is handed out)? Then close once written.
 */
bool doh_session_done(const struct doh_session *s);
