/* SPDX-License-Identifier: BSD-3-Clause */
/* DNS over HTTPS (RFC 8484): one connection's session, HTTP/2 through nghttp2 or HTTP/1.1 over doh_req.c. */
#include "resolver/serve/doh.h"

#include <errno.h>
#include <limits.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resolver/serve/doh_req.h"

/*
 * Limits, each against one way a client could make a session grow:
 * - DOH_MAX_BUFFERED: request bodies being received and replies not yet
 *   handed to doh_session_output. A DNS query is ~50 bytes and a reply
 *   rarely over 4 KiB: 256 KiB is a hundred streams' worth with room to
 *   spare. Beyond it new queries get 503 instead of more memory.
 * - DOH_MAX_QUERIES: queries handed to ops->query and not answered yet,
 *   counting those whose HTTP/2 stream the client has reset meanwhile.
 *   Without it, opening and resetting streams (CVE-2023-44487, "rapid
 *   reset") would start resolutions with no bound while nghttp2's own
 *   stream limit never sees more than a few streams open.
 * - H2_RESET_BURST/RATE: nghttp2's token bucket on incoming RST_STREAM
 *   (Debian's 1.52.0-1+deb12u1 backport; upstream 1.57), GOAWAY beyond.
 *   Its default burst is 1000; a DoH client has no reason to cancel more
 *   than the streams it may have open.
 * - H2_MAX_ACKS: SETTINGS and PING ACKs nghttp2 holds for a client that
 *   floods them without reading (default 1000): the session ends beyond.
 */
#define DOH_MAX_BUFFERED (256 * 1024)
#define DOH_MAX_QUERIES (2 * DOH_MAX_STREAMS)
#define H2_RESET_BURST (2 * DOH_MAX_STREAMS)
#define H2_RESET_RATE 33
#define H2_MAX_ACKS 256
#define H2_WINDOW 65535                 /* per stream: one largest DNS message, no more */
#define OUT_COALESCE 16384              /* nghttp2 writes a frame per call: gather them for one TLS record */
#define H1_IN_MAX (DOH_MAX_HEADERS + DOH_REQ_MSG_MAX) /* one head and one body at most: more is not read */
#define H1_SLOTS (DOH_MAX_STREAMS + 1)  /* the requests taken, plus one for the error that closes */
#define GET_BUF ((DOH_MAX_HEADERS / 4) * 3 + 3) /* what a target of DOH_MAX_HEADERS bytes can decode to */

/* One HTTP/2 stream (a request) from its HEADERS to its close. */
struct h2_stream {
	struct h2_stream *prev, *next;  /* the session's, for doh_session_free: nghttp2_session_del calls no callback */
	int32_t id;
	struct doh_req req;
	uint8_t *path;                  /* :path, copied (nghttp2's bytes live only in the callback) */
	size_t path_len;
	uint8_t *body;
	size_t body_len, body_cap;
	size_t hdr_bytes;               /* header list size so far (RFC 7541 §4.1 sizes) */
	int status;                     /* refused while it arrived (431, 413, 503), answered at its end */
	bool asked;                     /* handed to ops->query, no reply yet */
	bool answered;                  /* a response was submitted */
	uint8_t *resp;                  /* what the data provider sends: owned, or ... */
	const char *text;               /* ... an error's static text */
	size_t resp_len, resp_off;
};

/* One HTTP/1.1 request, in arrival order: its response goes out only after those before it. */
struct h1_slot {
	uint32_t id;                    /* 0: answered by the session itself */
	bool ready, close;
	uint8_t *resp;
	size_t len;
};

struct doh_session {
	bool h2, trust;
	char *path;
	const struct doh_ops *ops;
	void *arg;
	size_t buffered;                /* against DOH_MAX_BUFFERED */
	unsigned asked;                 /* against DOH_MAX_QUERIES */
	bool failed;
	uint8_t *out;                   /* what the last doh_session_output handed out */
	size_t out_len, out_cap;
	/* HTTP/2 */
	nghttp2_session *ng;
	struct h2_stream *streams;
	int32_t orphans[DOH_MAX_QUERIES]; /* streams closed while their query was out */
	unsigned n_orphans;
	/* HTTP/1.1 */
	uint8_t *in;                    /* unparsed input */
	size_t in_len, in_cap;
	size_t scan;                    /* bytes of the current head already searched for its end */
	bool have_head;                 /* head parsed, waiting for its body */
	struct doh_req head;
	size_t head_len, target_off;
	struct h1_slot slots[H1_SLOTS];
	unsigned first, count;
	uint32_t next_id;
	bool closing;                   /* no request is read any more: the last slot closes */
};

static const char *reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 411: return "Length Required";
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 415: return "Unsupported Media Type";
	case 431: return "Request Header Fields Too Large";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	default: return "Error";
	}
}

static const char *default_text(int status)
{
	switch (status) {
	case 403: return "the query was refused\n";
	case 431: return "request header block too large\n";
	case 503: return "too many queries in progress on this connection\n";
	default: return "bad request\n";
	}
}

/* Append n bytes to the output; false on ENOMEM. */
static bool out_add(struct doh_session *s, const void *p, size_t n)
{
	if (s->out_cap - s->out_len < n) {
		size_t cap = s->out_cap ? s->out_cap : 4096;
		while (cap - s->out_len < n)
			cap *= 2;
		uint8_t *o = realloc(s->out, cap);
		if (!o)
			return false;
		s->out = o;
		s->out_cap = cap;
	}
	memcpy(s->out + s->out_len, p, n);
	s->out_len += n;
	return true;
}

/* Could another query be handed out now? */
static bool can_ask(const struct doh_session *s)
{
	return s->asked < DOH_MAX_QUERIES && s->buffered <= DOH_MAX_BUFFERED;
}

/* ---- HTTP/2 ---- */

static struct h2_stream *h2_get(struct doh_session *s, int32_t id)
{
	return nghttp2_session_get_stream_user_data(s->ng, id);
}

static ssize_t h2_read(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t length, uint32_t *flags,
                       nghttp2_data_source *src, void *ud)
{
	struct h2_stream *st = src->ptr;
	const uint8_t *p = st->resp ? st->resp : (const uint8_t *)st->text;
	size_t n = st->resp_len - st->resp_off;
	if (n > length)
		n = length;
	if (n)
		memcpy(buf, p + st->resp_off, n);
	st->resp_off += n;
	if (st->resp_off == st->resp_len)
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	return (ssize_t)n;
}

#define NV(n, v, vl) { (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, (vl), NGHTTP2_NV_FLAG_NONE }

/* Submit a response whose body st->resp or st->text holds; 0 or a nghttp2 error. */
static int h2_submit(struct doh_session *s, struct h2_stream *st, int status, const char *ctype, uint32_t max_age)
{
	char code[8], clen[24], cc[32];
	snprintf(code, sizeof(code), "%d", status);
	snprintf(clen, sizeof(clen), "%zu", st->resp_len);
	snprintf(cc, sizeof(cc), "max-age=%u", max_age);
	nghttp2_nv nv[5] = {
		NV(":status", code, strlen(code)),
		NV("content-type", ctype, strlen(ctype)),
		NV("content-length", clen, strlen(clen)),
	};
	size_t n = 3;
	if (status == 200)
		nv[n++] = (nghttp2_nv)NV("cache-control", cc, strlen(cc));
	if (status == 405)
		nv[n++] = (nghttp2_nv)NV("allow", "GET, POST", 9);
	nghttp2_data_provider prov = { .source.ptr = st, .read_callback = h2_read };
	st->answered = true;
	bool head = st->req.method == DOH_REQ_HEAD; /* the headers a GET would get, no body */
	return nghttp2_submit_response(s->ng, st->id, nv, n, head ? NULL : &prov);
}

static int h2_error(struct doh_session *s, struct h2_stream *st, int status, const char *why)
{
	if (st->answered)
		return 0;
	st->text = why ? why : default_text(status);
	st->resp_len = strlen(st->text);
	st->resp_off = 0;
	return h2_submit(s, st, status, "text/plain; charset=utf-8", 0);
}

static void h2_drop_body(struct doh_session *s, struct h2_stream *st)
{
	s->buffered -= st->body_cap + st->path_len;
	free(st->body);
	free(st->path);
	st->body = st->path = NULL;
	st->body_len = st->body_cap = st->path_len = 0;
}

/* The request is whole: refuse it or hand its query out. */
static int h2_request(struct doh_session *s, struct h2_stream *st)
{
	if (st->answered)
		return 0;
	if (st->status)
		return h2_error(s, st, st->status, NULL);
	uint8_t buf[GET_BUF];
	const uint8_t *msg = NULL;
	size_t len = 0;
	st->req.target = st->path;
	st->req.target_len = st->path_len;
	int status = doh_req_finish(&st->req, s->path, st->body, st->body_len, buf, sizeof(buf), &msg, &len);
	if (status)
		return h2_error(s, st, status, st->req.why);
	if (!can_ask(s))
		return h2_error(s, st, 503, NULL);
	st->asked = true;
	s->asked++;
	bool fwd = s->trust && st->req.fwd_len != 0;
	/* msg may be st->body: the query is copied by its taker before the body goes */
	s->ops->query(s->arg, (uint32_t)st->id, msg, len, fwd ? &st->req.fwd : NULL, fwd ? st->req.fwd_len : 0);
	h2_drop_body(s, st);
	return 0;
}

static void h2_free(struct doh_session *s, struct h2_stream *st)
{
	h2_drop_body(s, st);
	if (st->resp)
		s->buffered -= st->resp_len;
	free(st->resp);
	if (st->prev)
		st->prev->next = st->next;
	else
		s->streams = st->next;
	if (st->next)
		st->next->prev = st->prev;
	free(st);
}

static int h2_begin_headers(nghttp2_session *ng, const nghttp2_frame *f, void *ud)
{
	struct doh_session *s = ud;
	if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	struct h2_stream *st = calloc(1, sizeof(*st));
	if (!st)
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	st->id = f->hd.stream_id;
	doh_req_init(&st->req);
	if (nghttp2_session_set_stream_user_data(ng, st->id, st) != 0) {
		free(st);
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	}
	st->next = s->streams;
	if (s->streams)
		s->streams->prev = st;
	s->streams = st;
	return 0;
}

static int h2_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *ud)
{
	struct doh_session *s = ud;
	struct h2_stream *st = h2_get(s, f->hd.stream_id);
	/* trailers (a second HEADERS) are ignored: nothing in them matters to DoH */
	if (!st || f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST || st->status)
		return 0;
	st->hdr_bytes += namelen + valuelen + 32;
	if (st->hdr_bytes > DOH_MAX_HEADERS) {
		st->status = 431;
		return 0;
	}
	if (namelen == 5 && memcmp(name, ":path", 5) == 0) {
		if (st->path || valuelen == 0)
			return 0;
		st->path = malloc(valuelen);
		if (!st->path)
			return NGHTTP2_ERR_CALLBACK_FAILURE;
		memcpy(st->path, value, valuelen);
		st->path_len = valuelen;
		s->buffered += valuelen;
		return 0;
	}
	doh_req_header(&st->req, name, namelen, value, valuelen);
	return 0;
}

static int h2_data(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *data, size_t len, void *ud)
{
	struct doh_session *s = ud;
	struct h2_stream *st = h2_get(s, id);
	if (!st || st->answered || st->status)
		return 0;
	if (st->body_len + len > DOH_REQ_MSG_MAX) {
		/* answered now: the rest of the body is read (flow control needs it) and dropped */
		h2_drop_body(s, st);
		st->status = 413;
		int rv = h2_error(s, st, 413, "a DNS message is at most 65535 bytes\n");
		return rv ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
	}
	if (st->body_cap - st->body_len < len) {
		size_t cap = st->body_cap ? st->body_cap : 512;
		while (cap - st->body_len < len)
			cap *= 2;
		if (cap > DOH_REQ_MSG_MAX)
			cap = DOH_REQ_MSG_MAX;
		if (s->buffered + (cap - st->body_cap) > DOH_MAX_BUFFERED) {
			h2_drop_body(s, st);
			st->status = 503;
			return h2_error(s, st, 503, NULL) ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
		}
		uint8_t *b = realloc(st->body, cap);
		if (!b)
			return NGHTTP2_ERR_CALLBACK_FAILURE;
		s->buffered += cap - st->body_cap;
		st->body = b;
		st->body_cap = cap;
	}
	memcpy(st->body + st->body_len, data, len);
	st->body_len += len;
	return 0;
}

static int h2_frame(nghttp2_session *ng, const nghttp2_frame *f, void *ud)
{
	struct doh_session *s = ud;
	if (f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA)
		return 0;
	struct h2_stream *st = h2_get(s, f->hd.stream_id);
	if (!st)
		return 0;
	int rv = 0;
	if (f->hd.flags & NGHTTP2_FLAG_END_STREAM)
		rv = h2_request(s, st);
	else if (f->hd.type == NGHTTP2_HEADERS && (st->status || st->req.status == 413))
		rv = h2_error(s, st, st->status ? st->status : 413, st->req.why); /* no need to wait for the body */
	return rv ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
}

static int h2_close(nghttp2_session *ng, int32_t id, uint32_t code, void *ud)
{
	struct doh_session *s = ud;
	struct h2_stream *st = h2_get(s, id);
	if (!st)
		return 0;
	if (st->asked) /* its reply will come and find no stream; s->asked drops then */
		s->orphans[s->n_orphans++] = id;
	nghttp2_session_set_stream_user_data(ng, id, NULL);
	h2_free(s, st);
	return 0;
}

static int h2_new(struct doh_session *s)
{
	nghttp2_session_callbacks *cb;
	nghttp2_option *opt;
	if (nghttp2_session_callbacks_new(&cb) != 0)
		return -1;
	if (nghttp2_option_new(&opt) != 0) {
		nghttp2_session_callbacks_del(cb);
		return -1;
	}
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, h2_begin_headers);
	nghttp2_session_callbacks_set_on_header_callback(cb, h2_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, h2_data);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, h2_frame);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, h2_close);
	/* closed streams are kept only for RFC 7540 priorities, which SETTINGS below turn off */
	nghttp2_option_set_no_closed_streams(opt, 1);
	nghttp2_option_set_max_outbound_ack(opt, H2_MAX_ACKS);
	nghttp2_option_set_stream_reset_rate_limit(opt, H2_RESET_BURST, H2_RESET_RATE);
	int rv = nghttp2_session_server_new2(&s->ng, cb, s, opt);
	nghttp2_option_del(opt);
	nghttp2_session_callbacks_del(cb);
	if (rv != 0)
		return -1;
	/* no RFC 7540 priority tree: PRIORITY frames would otherwise make idle streams (CVE-2019-9513's loop) */
	const nghttp2_settings_entry iv[] = {
		{ NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, DOH_MAX_STREAMS },
		{ NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, H2_WINDOW },
		{ NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, DOH_MAX_HEADERS },
		{ NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1 },
	};
	if (nghttp2_submit_settings(s->ng, NGHTTP2_FLAG_NONE, iv, sizeof(iv) / sizeof(iv[0])) != 0)
		return -1;
	return 0;
}

static int h2_reply(struct doh_session *s, uint32_t id, const uint8_t *msg, size_t len)
{
	struct h2_stream *st = id > 0 && id <= INT32_MAX ? h2_get(s, (int32_t)id) : NULL;
	if (!st || !st->asked) {
		for (unsigned i = 0; i < s->n_orphans; i++)
			if ((uint32_t)s->orphans[i] == id) {
				s->orphans[i] = s->orphans[--s->n_orphans];
				s->asked--;
				break;
			}
		return 0;
	}
	st->asked = false;
	s->asked--;
	if (s->failed)
		return 0;
	if (len == 0)
		return nghttp2_submit_rst_stream(s->ng, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_CANCEL) ? -ENOMEM : 0;
	st->resp = malloc(len);
	if (!st->resp)
		return -ENOMEM;
	memcpy(st->resp, msg, len);
	st->resp_len = len;
	s->buffered += len;
	return h2_submit(s, st, 200, "application/dns-message", doh_req_max_age(msg, len)) ? -ENOMEM : 0;
}

/* ---- HTTP/1.1 ---- */

static struct h1_slot *h1_push(struct doh_session *s, bool close)
{
	struct h1_slot *sl = &s->slots[(s->first + s->count++) % H1_SLOTS];
	memset(sl, 0, sizeof(*sl));
	sl->close = close;
	if (close)
		s->closing = true;
	return sl;
}

/* Write the response of a slot: head, then body. false on ENOMEM. */
static bool h1_respond(struct doh_session *s, struct h1_slot *sl, int status, const char *ctype,
                       const uint8_t *body, size_t len, uint32_t max_age, bool head_only)
{
	char head[320];
	int n = snprintf(head, sizeof(head),
	                 "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n", status, reason(status), ctype,
	                 len);
	if (status == 200)
		n += snprintf(head + n, sizeof(head) - (size_t)n, "Cache-Control: max-age=%u\r\n", max_age);
	if (status == 405)
		n += snprintf(head + n, sizeof(head) - (size_t)n, "Allow: GET, POST\r\n");
	if (sl->close)
		n += snprintf(head + n, sizeof(head) - (size_t)n, "Connection: close\r\n");
	n += snprintf(head + n, sizeof(head) - (size_t)n, "\r\n");
	if (head_only)
		len = 0; /* HEAD: Content-Length says what GET would get, no body follows */
	sl->resp = malloc((size_t)n + len);
	if (!sl->resp)
		return false;
	memcpy(sl->resp, head, (size_t)n);
	if (len)
		memcpy(sl->resp + n, body, len);
	sl->len = (size_t)n + len;
	sl->ready = true;
	s->buffered += sl->len;
	return true;
}

/* An error of the session's own; of the request s->head holds when head. */
static bool h1_error(struct doh_session *s, struct h1_slot *sl, int status, const char *why, bool head)
{
	const char *t = why ? why : default_text(status);
	return h1_respond(s, sl, status, "text/plain; charset=utf-8", (const uint8_t *)t, strlen(t), 0,
	                  head && s->head.method == DOH_REQ_HEAD);
}

/*
 * Take the requests whole in s->in, in order, while fewer than
 * DOH_MAX_STREAMS wait for their replies. false on ENOMEM.
 */
static bool h1_parse(struct doh_session *s)
{
	size_t off = 0;
	bool ok = true;
	while (ok && !s->closing && s->count < DOH_MAX_STREAMS) {
		uint8_t *p = s->in + off;
		size_t avail = s->in_len - off;
		if (!s->have_head) {
			/* empty lines before a request are ignored (RFC 9112 §2.2): some clients end bodies with CRLF */
			while (avail >= 2 && p[0] == '\r' && p[1] == '\n')
				p += 2, avail -= 2, off += 2, s->scan = 0;
			size_t lim = avail < DOH_MAX_HEADERS ? avail : DOH_MAX_HEADERS;
			size_t from = s->scan > 3 ? s->scan - 3 : 0;
			const uint8_t *end = from < lim ? memmem(p + from, lim - from, "\r\n\r\n", 4) : NULL;
			s->scan = lim;
			if (!end && lim < DOH_MAX_HEADERS)
				break; /* wait for the rest of the head */
			int r = doh_req_h1_head(p, lim, &s->head);
			if (r == DOH_REQ_MORE)
				break;
			s->scan = 0;
			if (r < 0) {
				ok = h1_error(s, h1_push(s, true), -r, s->head.why, true);
				break;
			}
			if (s->head.status && s->head.close) {
				/* the body's length is unknown or too large: answer without reading it */
				ok = h1_error(s, h1_push(s, true), s->head.status, s->head.why, true);
				break;
			}
			s->have_head = true;
			s->head_len = (size_t)r;
			s->target_off = (size_t)(s->head.target - p);
		}
		size_t blen = s->head.has_clen ? s->head.clen : 0;
		if (avail - s->head_len < blen)
			break; /* wait for the body */
		s->head.target = p + s->target_off;
		struct h1_slot *sl = h1_push(s, s->head.close);
		uint8_t buf[GET_BUF];
		const uint8_t *msg = NULL;
		size_t len = 0;
		int status = doh_req_finish(&s->head, s->path, p + s->head_len, blen, buf, sizeof(buf), &msg, &len);
		if (status) {
			ok = h1_error(s, sl, status, s->head.why, true);
		} else if (!can_ask(s)) {
			ok = h1_error(s, sl, 503, NULL, true);
		} else {
			if (++s->next_id == 0)
				s->next_id = 1;
			sl->id = s->next_id;
			s->asked++;
			bool fwd = s->trust && s->head.fwd_len != 0;
			s->ops->query(s->arg, sl->id, msg, len, fwd ? &s->head.fwd : NULL, fwd ? s->head.fwd_len : 0);
		}
		off += s->head_len + blen;
		s->have_head = false;
	}
	if (off) {
		memmove(s->in, s->in + off, s->in_len - off);
		s->in_len -= off;
	}
	if (s->closing)
		s->in_len = 0; /* nothing after the request that closes is read */
	return ok;
}

static int h1_input(struct doh_session *s, const uint8_t *p, size_t len)
{
	while (len > 0 && !s->closing) {
		size_t take = H1_IN_MAX - s->in_len;
		if (take == 0) {
			/* DOH_MAX_STREAMS requests wait and the client keeps sending: refuse, answer the rest, close */
			if (s->count >= H1_SLOTS)
				return -1;
			if (!h1_error(s, h1_push(s, true), 431, "too many requests in flight\n", false))
				return -1;
			s->in_len = 0;
			break;
		}
		if (take > len)
			take = len;
		if (s->in_cap - s->in_len < take) {
			size_t cap = s->in_cap ? s->in_cap : 2048;
			while (cap - s->in_len < take)
				cap *= 2;
			if (cap > H1_IN_MAX)
				cap = H1_IN_MAX;
			uint8_t *n = realloc(s->in, cap);
			if (!n)
				return -1;
			s->in = n;
			s->in_cap = cap;
		}
		memcpy(s->in + s->in_len, p, take);
		s->in_len += take;
		p += take;
		len -= take;
		if (!h1_parse(s))
			return -1;
	}
	return 0;
}

static int h1_reply(struct doh_session *s, uint32_t id, const uint8_t *msg, size_t len)
{
	for (unsigned i = 0; i < s->count; i++) {
		struct h1_slot *sl = &s->slots[(s->first + i) % H1_SLOTS];
		if (sl->id != id || sl->ready || id == 0)
			continue;
		s->asked--;
		if (s->failed) {
			sl->ready = true; /* nothing will be written: the session is over */
			return 0;
		}
		const char *ct = "application/dns-message";
		bool ok = len == 0 ? h1_error(s, sl, 403, NULL, false)
		                   : h1_respond(s, sl, 200, ct, msg, len, doh_req_max_age(msg, len), false);
		return ok ? 0 : -ENOMEM;
	}
	return 0;
}

/* Move the ready responses at the head of the queue to the output, in order. false on ENOMEM. */
static bool h1_collect(struct doh_session *s)
{
	while (s->count > 0 && s->slots[s->first].ready) {
		struct h1_slot *sl = &s->slots[s->first];
		if (!out_add(s, sl->resp, sl->len))
			return false;
		s->buffered -= sl->len;
		free(sl->resp);
		sl->resp = NULL;
		s->first = (s->first + 1) % H1_SLOTS;
		s->count--;
	}
	return true;
}

/* ---- the session ---- */

struct doh_session *doh_session_new(bool h2, const char *path, bool trust_forwarded, const struct doh_ops *ops,
                                    void *arg)
{
	struct doh_session *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->h2 = h2;
	s->trust = trust_forwarded;
	s->ops = ops;
	s->arg = arg;
	s->path = strdup(path);
	if (!s->path || (h2 && h2_new(s) != 0)) {
		doh_session_free(s);
		return NULL;
	}
	return s;
}

void doh_session_free(struct doh_session *s)
{
	if (!s)
		return;
	if (s->ng)
		nghttp2_session_del(s->ng);
	while (s->streams)
		h2_free(s, s->streams);
	for (unsigned i = 0; i < s->count; i++)
		free(s->slots[(s->first + i) % H1_SLOTS].resp);
	free(s->in);
	free(s->out);
	free(s->path);
	free(s);
}

int doh_session_input(struct doh_session *s, const uint8_t *p, size_t len)
{
	if (s->failed)
		return -1;
	if (!s->h2) {
		if (h1_input(s, p, len) != 0)
			s->failed = true;
		return s->failed ? -1 : 0;
	}
	ssize_t rv = nghttp2_session_mem_recv(s->ng, p, len);
	if (rv < 0) {
		s->failed = true;
		return -1;
	}
	return 0;
}

int doh_session_reply(struct doh_session *s, uint32_t id, const uint8_t *msg, size_t len)
{
	return s->h2 ? h2_reply(s, id, msg, len) : h1_reply(s, id, msg, len);
}

long doh_session_output(struct doh_session *s, const uint8_t **data)
{
	s->out_len = 0; /* what the last call handed out has been taken */
	if (s->failed)
		return -1;
	if (s->h2) {
		while (s->out_len < OUT_COALESCE) {
			const uint8_t *d;
			ssize_t n = nghttp2_session_mem_send(s->ng, &d);
			if (n < 0) {
				s->failed = true;
				return -1;
			}
			if (n == 0)
				break;
			if (!out_add(s, d, (size_t)n)) {
				s->failed = true;
				return -1;
			}
		}
	} else {
		/* slots handed out make room for requests waiting in s->in, which may be answered at once */
		bool ok = h1_collect(s);
		if (ok && s->in_len && !s->closing && s->count < DOH_MAX_STREAMS)
			ok = h1_parse(s) && h1_collect(s);
		if (!ok) {
			s->failed = true;
			return -1;
		}
	}
	*data = s->out;
	return (long)s->out_len;
}

unsigned doh_session_pending(const struct doh_session *s)
{
	return s->asked;
}

bool doh_session_done(const struct doh_session *s)
{
	if (s->failed)
		return true;
	if (s->h2)
		return !nghttp2_session_want_read(s->ng) && !nghttp2_session_want_write(s->ng);
	return s->closing && s->count == 0;
}
