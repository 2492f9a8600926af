/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. A DoH request (RFC 8484) read from hostile bytes: target, headers, forwarding. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/*
 * Pure and bounded: no allocation, no sockets, every input hostile. doh.c
 * feeds it header fields one at a time (HTTP/2, from nghttp2) or a whole
 * HTTP/1.1 head (doh_req_h1_head), then asks doh_req_finish for the DNS
 * message or the HTTP status that refuses the request. Functions that
 * refuse return an HTTP status (400, 404, ...) and set r->why, a short
 * static text for the error body.
 */

#define DOH_REQ_MSG_MIN 12        /* a DNS header */
#define DOH_REQ_MSG_MAX 65535     /* RFC 8484 §6: a DNS message's own limit */
#define DOH_REQ_MAX_LINES 64      /* header lines of one HTTP/1.1 request */

/* HEAD apart: refused as any other, but its response must have no body (RFC 9110 §9.3.2) */
enum doh_req_method { DOH_REQ_NONE = 0, DOH_REQ_GET, DOH_REQ_POST, DOH_REQ_HEAD, DOH_REQ_OTHER };

/* What one request said, as far as DoH cares. Zero it (doh_req_init) before the first header. */
struct doh_req {
	enum doh_req_method method;
	const uint8_t *target;        /* request target (HTTP/1.1 request line, HTTP/2 :path); the caller's bytes */
	size_t target_len;
	bool has_ctype, ctype_ok;     /* Content-Type seen; it was application/dns-message */
	bool has_clen;
	size_t clen;                  /* Content-Length (meaningful with has_clen) */
	bool has_te;                  /* Transfer-Encoding seen (HTTP/1.1: refused, the body cannot be framed) */
	bool has_host;                /* HTTP/1.1: Host seen (RFC 9112 §3.2: required) */
	bool close;                   /* HTTP/1.1: Connection: close, or HTTP/1.0 */
	int status;                   /* a header already refused the request: its HTTP status, else 0 */
	const char *why;              /* with a refusal: what was wrong, for the text/plain body */
	bool fwd_seen, xff_seen;      /* only the first Forwarded / X-Forwarded-For field line counts */
	struct sockaddr_storage fwd;  /* the client Forwarded named, else the one X-Forwarded-For named */
	socklen_t fwd_len, xff_len;   /* 0: none (or not an address: "unknown", obfuscated, garbage) */
	struct sockaddr_storage xff;
};

void doh_req_init(struct doh_req *r);

/**
 * One header field (name case-insensitive; HTTP/2's :method counts too,
 * :path is the caller's: it keeps the bytes and sets r->target). Reads
 * Content-Type, Content-Length (a second one with another value, or not
 * digits: 400; over DOH_REQ_MSG_MAX: 413), Transfer-Encoding, Host,
 * Connection, Forwarded and X-Forwarded-For; ignores the rest. The bytes
 * are not kept.
 * @return 0, or the HTTP status refusing the request (also left in r->status).
 */
int doh_req_header(struct doh_req *r, const uint8_t *name, size_t nlen, const uint8_t *value, size_t vlen);

/**
 * The whole request read: method, target, content type and body checked.
 * GET: the dns parameter decoded into buf (cap bytes: the target is
 * bounded by DOH_MAX_HEADERS, so 3/4 of that is enough); POST: the body
 * itself. Then, when Forwarded named no client, r->fwd is
 * X-Forwarded-For's. Statuses: 405 (neither GET nor POST; HEAD too), 404
 * (path is not exactly path: no percent-decoding, no dot segments), 400
 * (no or bad dns parameter, a Content-Length the body does not match, a
 * message shorter than DOH_REQ_MSG_MIN), 413 (a message over
 * DOH_REQ_MSG_MAX, or a dns parameter decoding to more than cap), 415
 * (POST without Content-Type application/dns-message).
 * @return 0 (*msg, *msg_len: the DNS message) or the HTTP status.
 */
int doh_req_finish(struct doh_req *r, const char *path, const uint8_t *body, size_t body_len, uint8_t *buf,
                   size_t cap, const uint8_t **msg, size_t *msg_len);

/**
 * The value of the first `dns` parameter of a query string (without the
 * '?'), base64url-decoded (RFC 4648 §5): the alphabet only, '=' padding
 * only at the end and only as much as the length needs, zero bits after
 * the last character (the one encoding a message has), and %XX escapes
 * allowed only where they decode to those same characters.
 * @param out  cap bytes
 * @return 0 (*out_len set), 400 (absent, malformed, or shorter than
 *         DOH_REQ_MSG_MIN once decoded) or 413 (longer than cap).
 */
int doh_req_dns_param(const uint8_t *q, size_t qlen, uint8_t *out, size_t cap, size_t *out_len);

/** Is a Content-Type value application/dns-message (type case-insensitive, parameters allowed)? */
bool doh_req_ctype_ok(const uint8_t *v, size_t len);

/**
 * Forwarded (RFC 7239): the for= of the first element (quoted or not;
 * IPv4, or IPv6 in brackets, each with an optional port). "unknown",
 * obfuscated identifiers ("_..."), a first element without for= and
 * anything malformed give no address.
 * @return sizeof the address filled in *ss, or 0.
 */
socklen_t doh_req_forwarded(const uint8_t *v, size_t len, struct sockaddr_storage *ss);

/**
 * X-Forwarded-For: the first comma-separated entry: IPv4 with an optional
 * :port, IPv6 bare or in brackets (then with an optional :port).
 * @return sizeof the address filled in *ss, or 0.
 */
socklen_t doh_req_xff(const uint8_t *v, size_t len, struct sockaddr_storage *ss);

/* doh_req_h1_head's results besides a head length */
#define DOH_REQ_MORE 0

/**
 * An HTTP/1.1 request head at the start of p: request line (origin-form
 * target, HTTP/1.1 or HTTP/1.0), header lines ended by CRLF (bare CR or
 * LF refused, obs-fold refused, no space before the colon), the empty
 * line. Fills r (target points into p) through doh_req_header. Not more
 * than DOH_MAX_HEADERS bytes nor DOH_REQ_MAX_LINES header lines (431).
 * An HTTP/1.1 request without Host is 400; Transfer-Encoding is 411
 * (without Content-Length) or 400 (with it): the body cannot be framed
 * without chunked decoding, which DoH never needs, and the connection is
 * closed after the reply (r->close).
 * @return the head's length (> 0), DOH_REQ_MORE (a valid start, not yet
 *         whole) or -status (r->why set; the connection must close).
 */
int doh_req_h1_head(const uint8_t *p, size_t len, struct doh_req *r);

/**
 * The Cache-Control max-age of a reply (RFC 8484 §5.1): the smallest TTL
 * of its answer, authority and additional records (not OPT); a reply
 * without answer records takes the SOA's MINIMUM capped by the SOA's TTL
 * (RFC 2308 §5), or 0 without an SOA. 0 for anything malformed.
 */
uint32_t doh_req_max_age(const uint8_t *msg, size_t len);
