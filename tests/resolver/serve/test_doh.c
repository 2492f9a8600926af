/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of resolver/serve/doh.c: HTTP/2 against a real nghttp2 client in memory, HTTP/1.1 as raw text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resolver/serve/doh.h"

/* A query for example.com A, and its base64url (no padding). */
static const uint8_t query[] = {
	0x00, 0x00, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0, 0x00, 0x01, 0x00, 0x01,
};
#define QUERY_B64 "AAABAAABAAAAAAAAB2V4YW1wbGUDY29tAAABAAE"

/* A reply to it: two A records, TTL 300 and 60. */
static const uint8_t reply[] = {
	0x00, 0x00, 0x81, 0x80, 0x00, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00,
	7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0, 0x00, 0x01, 0x00, 0x01,
	0xC0, 0x0C, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x01, 0x2C, 0x00, 0x04, 192, 0, 2, 1,
	0xC0, 0x0C, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x3C, 0x00, 0x04, 192, 0, 2, 2,
};

/* A negative reply: NXDOMAIN, SOA TTL 3600, MINIMUM 900. */
static const uint8_t nxdomain[] = {
	0x00, 0x00, 0x81, 0x83, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
	7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0, 0x00, 0x01, 0x00, 0x01,
	0xC0, 0x0C, 0x00, 0x06, 0x00, 0x01, 0x00, 0x00, 0x0E, 0x10, 0x00, 22,
	0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0x03, 0x84,
};

/* ---- the connection's side: the queries the session hands out ---- */

#define MAXQ 512
struct fake {
	unsigned n;
	uint32_t id[MAXQ];
	uint8_t msg[MAXQ][64];
	size_t len[MAXQ];
	bool fwd[MAXQ];
	struct sockaddr_storage addr[MAXQ];
};

static void on_query(void *arg, uint32_t id, const uint8_t *msg, size_t len, const struct sockaddr_storage *xff,
                     socklen_t xff_len)
{
	struct fake *f = arg;
	assert_true(f->n < MAXQ);
	assert_true(len >= 12);
	f->id[f->n] = id;
	f->len[f->n] = len;
	memcpy(f->msg[f->n], msg, len < 64 ? len : 64);
	f->fwd[f->n] = xff != NULL;
	if (xff) {
		assert_true(xff_len > 0);
		f->addr[f->n] = *xff;
	}
	f->n++;
}

static const struct doh_ops ops = { .query = on_query };

/* ---- HTTP/2: a real nghttp2 client ---- */

struct resp {
	int status;
	char ctype[64], cc[64], allow[32], clen[16];
	uint8_t body[70000];
	size_t len;
	bool closed;
	uint32_t error;
};

struct h2c {
	nghttp2_session *c;
	struct doh_session *s;
	struct fake f;
	int server_rc;                /* the last doh_session_input's */
	const uint8_t *post;          /* the body being sent */
	size_t post_len, post_off;
};

static void copy_value(char *dst, size_t cap, const uint8_t *v, size_t n)
{
	n = n < cap - 1 ? n : cap - 1;
	memcpy(dst, v, n);
	dst[n] = 0;
}

static int c_header(nghttp2_session *c, const nghttp2_frame *fr, const uint8_t *name, size_t nl, const uint8_t *v,
                    size_t vl, uint8_t flags, void *ud)
{
	struct resp *r = nghttp2_session_get_stream_user_data(c, fr->hd.stream_id);
	if (!r)
		return 0;
	char val[64];
	copy_value(val, sizeof(val), v, vl);
	if (nl == 7 && !memcmp(name, ":status", 7))
		r->status = atoi(val);
	else if (nl == 12 && !memcmp(name, "content-type", 12))
		strcpy(r->ctype, val);
	else if (nl == 13 && !memcmp(name, "cache-control", 13))
		strcpy(r->cc, val);
	else if (nl == 5 && !memcmp(name, "allow", 5))
		strcpy(r->allow, val);
	else if (nl == 14 && !memcmp(name, "content-length", 14))
		strcpy(r->clen, val);
	return 0;
}

static int c_data(nghttp2_session *c, uint8_t flags, int32_t id, const uint8_t *d, size_t n, void *ud)
{
	struct resp *r = nghttp2_session_get_stream_user_data(c, id);
	if (r && r->len + n <= sizeof(r->body)) {
		memcpy(r->body + r->len, d, n);
		r->len += n;
	}
	return 0;
}

static int c_close(nghttp2_session *c, int32_t id, uint32_t code, void *ud)
{
	struct resp *r = nghttp2_session_get_stream_user_data(c, id);
	if (r) {
		r->closed = true;
		r->error = code;
	}
	return 0;
}

static ssize_t c_read(nghttp2_session *c, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                      nghttp2_data_source *src, void *ud)
{
	struct h2c *h = ud;
	size_t n = h->post_len - h->post_off;
	n = n < len ? n : len;
	memcpy(buf, h->post + h->post_off, n);
	h->post_off += n;
	if (h->post_off == h->post_len)
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	return (ssize_t)n;
}

static void h2_setup(struct h2c *h, bool trust)
{
	memset(h, 0, sizeof(*h));
	h->s = doh_session_new(true, "/dns-query", trust, &ops, &h->f);
	assert_non_null(h->s);
	nghttp2_session_callbacks *cb;
	assert_int_equal(nghttp2_session_callbacks_new(&cb), 0);
	nghttp2_session_callbacks_set_on_header_callback(cb, c_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, c_data);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, c_close);
	assert_int_equal(nghttp2_session_client_new(&h->c, cb, h), 0);
	nghttp2_session_callbacks_del(cb);
	assert_int_equal(nghttp2_submit_settings(h->c, NGHTTP2_FLAG_NONE, NULL, 0), 0);
}

static void h2_teardown(struct h2c *h)
{
	nghttp2_session_del(h->c);
	doh_session_free(h->s);
}

/* Move bytes both ways until neither side has any. */
static void pump(struct h2c *h)
{
	for (int round = 0; round < 10000; round++) {
		bool moved = false;
		const uint8_t *d;
		ssize_t n;
		while ((n = nghttp2_session_mem_send(h->c, &d)) > 0) {
			moved = true;
			h->server_rc = doh_session_input(h->s, d, (size_t)n);
			if (h->server_rc)
				return;
		}
		assert_true(n >= 0);
		long m;
		while ((m = doh_session_output(h->s, &d)) > 0) {
			moved = true;
			assert_int_equal(nghttp2_session_mem_recv(h->c, d, (size_t)m), m);
		}
		assert_true(m == 0);
		if (!moved)
			return;
	}
	fail_msg("the sessions never went quiet");
}

/* Client to server only (the server's answers wait). */
static void flush_client(struct h2c *h)
{
	const uint8_t *d;
	ssize_t n;
	while (h->server_rc == 0 && (n = nghttp2_session_mem_send(h->c, &d)) > 0)
		h->server_rc = doh_session_input(h->s, d, (size_t)n);
}

/* Submit a request; its stream id. */
static int32_t req(struct h2c *h, struct resp *r, const char *method, const char *path, const char *ctype,
                   const uint8_t *body, size_t len, const char *xff)
{
	nghttp2_nv nv[6];
	size_t n = 0;
#define ADD(k, v) nv[n++] = (nghttp2_nv){ (uint8_t *)(k), (uint8_t *)(v), strlen(k), strlen(v), NGHTTP2_NV_FLAG_NONE }
	ADD(":method", method);
	ADD(":scheme", "https");
	ADD(":authority", "doh.test");
	ADD(":path", path);
	if (ctype)
		ADD("content-type", ctype);
	if (xff)
		ADD("x-forwarded-for", xff);
#undef ADD
	memset(r, 0, sizeof(*r));
	nghttp2_data_provider prov = { .read_callback = c_read };
	if (body) {
		h->post = body;
		h->post_len = len;
		h->post_off = 0;
	}
	int32_t id = nghttp2_submit_request(h->c, NULL, nv, n, body ? &prov : NULL, r);
	assert_true(id > 0);
	return id;
}

static void expect_error(struct resp *r, int status)
{
	assert_int_equal(r->status, status);
	assert_string_equal(r->ctype, "text/plain; charset=utf-8");
	assert_true(r->len > 0);
	assert_int_equal((size_t)atoi(r->clen), r->len);
}

static void test_h2_get(void **state)
{
	struct h2c h;
	struct resp r;
	h2_setup(&h, false);
	int32_t id = req(&h, &r, "GET", "/dns-query?dns=" QUERY_B64, NULL, NULL, 0, "192.0.2.7");
	pump(&h);
	assert_int_equal(h.f.n, 1);
	assert_int_equal(h.f.id[0], (uint32_t)id);
	assert_int_equal(h.f.len[0], sizeof(query));
	assert_memory_equal(h.f.msg[0], query, sizeof(query));
	assert_false(h.f.fwd[0]); /* not trusted */
	assert_int_equal(doh_session_pending(h.s), 1);
	assert_int_equal(r.status, 0);
	assert_int_equal(doh_session_reply(h.s, h.f.id[0], reply, sizeof(reply)), 0);
	assert_int_equal(doh_session_pending(h.s), 0);
	pump(&h);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.ctype, "application/dns-message");
	assert_string_equal(r.cc, "max-age=60");
	assert_int_equal(atoi(r.clen), sizeof(reply));
	assert_int_equal(r.len, sizeof(reply));
	assert_memory_equal(r.body, reply, sizeof(reply));
	assert_true(r.closed);
	assert_int_equal(r.error, 0);
	assert_false(doh_session_done(h.s));
	h2_teardown(&h);
}

static void test_h2_post_trusted(void **state)
{
	struct h2c h;
	struct resp r;
	h2_setup(&h, true);
	const char *xff = "[2001:db8::5]:443, 1.2.3.4";
	req(&h, &r, "POST", "/dns-query", "application/dns-message", query, sizeof(query), xff);
	pump(&h);
	assert_int_equal(h.f.n, 1);
	assert_memory_equal(h.f.msg[0], query, sizeof(query));
	assert_true(h.f.fwd[0]);
	const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)&h.f.addr[0];
	assert_int_equal(a6->sin6_family, AF_INET6);
	assert_int_equal(ntohs(a6->sin6_port), 443);
	assert_int_equal(doh_session_reply(h.s, h.f.id[0], nxdomain, sizeof(nxdomain)), 0);
	pump(&h);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.cc, "max-age=900");
	assert_memory_equal(r.body, nxdomain, sizeof(nxdomain));
	h2_teardown(&h);
}

static void test_h2_errors(void **state)
{
	struct h2c h;
	static struct resp r[8];
	static uint8_t big[70000];
	h2_setup(&h, false);
	req(&h, &r[0], "GET", "/other?dns=" QUERY_B64, NULL, NULL, 0, NULL);
	req(&h, &r[1], "PUT", "/dns-query", "application/dns-message", NULL, 0, NULL);
	req(&h, &r[2], "GET", "/dns-query?dns=AAAB!AAAAAAAAAAAAA", NULL, NULL, 0, NULL);
	req(&h, &r[3], "GET", "/dns-query?dns=AAABAAABAAAA", NULL, NULL, 0, NULL); /* 9 bytes */
	req(&h, &r[4], "GET", "/dns-query", NULL, NULL, 0, NULL);
	pump(&h);
	expect_error(&r[0], 404);
	expect_error(&r[1], 405);
	assert_string_equal(r[1].allow, "GET, POST");
	expect_error(&r[2], 400);
	expect_error(&r[3], 400);
	expect_error(&r[4], 400);
	req(&h, &r[5], "POST", "/dns-query", NULL, query, sizeof(query), NULL);
	pump(&h);
	expect_error(&r[5], 415);
	req(&h, &r[6], "POST", "/dns-query", "application/dns-message", query, 8, NULL);
	pump(&h);
	expect_error(&r[6], 400);
	req(&h, &r[7], "POST", "/dns-query", "application/dns-message", big, sizeof(big), NULL);
	pump(&h);
	expect_error(&r[7], 413);
	/* HEAD: refused, and without a body (the client's nghttp2 would reset a stream that had one) */
	struct resp head;
	req(&h, &head, "HEAD", "/dns-query?dns=" QUERY_B64, NULL, NULL, 0, NULL);
	pump(&h);
	assert_int_equal(head.status, 405);
	assert_int_equal(head.len, 0);
	assert_int_equal(head.error, 0);
	assert_int_equal(h.f.n, 0);
	/* the connection is still good */
	struct resp ok;
	req(&h, &ok, "GET", "/dns-query?dns=" QUERY_B64, NULL, NULL, 0, NULL);
	pump(&h);
	assert_int_equal(h.f.n, 1);
	h2_teardown(&h);
}

static void test_h2_out_of_order(void **state)
{
	struct h2c h;
	static struct resp r[5];
	h2_setup(&h, false);
	for (int i = 0; i < 5; i++)
		req(&h, &r[i], "GET", "/dns-query?dns=" QUERY_B64, NULL, NULL, 0, NULL);
	pump(&h);
	assert_int_equal(h.f.n, 5);
	assert_int_equal(doh_session_pending(h.s), 5);
	/* answer the last first: each reply goes out as soon as it comes, to its own stream */
	uint8_t m[sizeof(reply)];
	for (int i = 4; i >= 0; i--) {
		memcpy(m, reply, sizeof(reply));
		m[1] = (uint8_t)i;
		assert_int_equal(doh_session_reply(h.s, h.f.id[i], m, sizeof(m)), 0);
		pump(&h);
		assert_int_equal(r[i].status, 200);
		assert_int_equal(r[i].body[1], i);
		if (i > 0)
			assert_int_equal(r[i - 1].status, 0);
	}
	assert_int_equal(doh_session_pending(h.s), 0);
	h2_teardown(&h);
}

static void test_h2_reset_and_drop(void **state)
{
	struct h2c h;
	struct resp r, r2;
	h2_setup(&h, false);
	int32_t id = req(&h, &r, "GET", "/dns-query?dns=" QUERY_B64, NULL, NULL, 0, NULL);
	pump(&h);
	assert_int_equal(h.f.n, 1);
	assert_int_equal(nghttp2_submit_rst_stream(h.c, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL), 0);
	pump(&h);
	assert_int_equal(doh_session_pending(h.s), 1); /* the resolution still runs */
	assert_int_equal(doh_session_reply(h.s, h.f.id[0], reply, sizeof(reply)), 0);
	assert_int_equal(doh_session_pending(h.s), 0);
	const uint8_t *d;
	assert_int_equal(doh_session_output(h.s, &d), 0);
	/* a reply twice, or to an id never given, is ignored */
	assert_int_equal(doh_session_reply(h.s, h.f.id[0], reply, sizeof(reply)), 0);
	assert_int_equal(doh_session_reply(h.s, 12345, reply, sizeof(reply)), 0);
	assert_int_equal(doh_session_reply(h.s, 0x80000001u, reply, sizeof(reply)), 0);
	assert_int_equal(doh_session_pending(h.s), 0);
	/* a query dropped on purpose: its stream is reset */
	req(&h, &r2, "GET", "/dns-query?dns=" QUERY_B64, NULL, NULL, 0, NULL);
	pump(&h);
	assert_int_equal(doh_session_reply(h.s, h.f.id[1], NULL, 0), 0);
	pump(&h);
	assert_true(r2.closed);
	assert_int_equal(r2.error, NGHTTP2_CANCEL);
	assert_int_equal(r2.status, 0);
	h2_teardown(&h);
}

/* Rapid reset: streams opened and reset at once never have more than DOH_MAX_STREAMS * 2 queries out. */
static void test_h2_rapid_reset(void **state)
{
	struct h2c h;
	static struct resp r[400];
	h2_setup(&h, false);
	pump(&h);
	int i;
	for (i = 0; i < 400 && h.server_rc == 0 && !doh_session_done(h.s); i++) {
		int32_t id = req(&h, &r[i], "GET", "/dns-query?dns=" QUERY_B64, NULL, NULL, 0, NULL);
		flush_client(&h); /* HEADERS sent: the server has the query */
		nghttp2_submit_rst_stream(h.c, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
		flush_client(&h);
		if (i % 50 == 49)
			pump(&h);
		assert_true(doh_session_pending(h.s) <= 2 * DOH_MAX_STREAMS);
	}
	/* nghttp2's reset limit ended the connection, and no more queries than the cap were started */
	assert_true(i < 400);
	assert_true(h.f.n <= 2 * DOH_MAX_STREAMS);
	/* the replies still find their orphans */
	for (unsigned k = 0; k < h.f.n; k++)
		doh_session_reply(h.s, h.f.id[k], reply, sizeof(reply));
	assert_int_equal(doh_session_pending(h.s), 0);
	h2_teardown(&h);
}

/* Too many queries out: 503, not more work. */
static void test_h2_query_cap(void **state)
{
	struct h2c h;
	static struct resp r[DOH_MAX_STREAMS];
	h2_setup(&h, false);
	pump(&h);
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < DOH_MAX_STREAMS; i++)
			req(&h, &r[i], "GET", "/dns-query?dns=" QUERY_B64, NULL, NULL, 0, NULL);
		pump(&h);
		/* reset what got answered or asked: the client goes on */
		for (int i = 0; i < DOH_MAX_STREAMS; i++) {
			int32_t id = i * 2 + 1 + round * DOH_MAX_STREAMS * 2;
			if (!r[i].closed)
				nghttp2_submit_rst_stream(h.c, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
		}
		pump(&h);
	}
	assert_int_equal(h.f.n, 2 * DOH_MAX_STREAMS);
	assert_int_equal(doh_session_pending(h.s), 2 * DOH_MAX_STREAMS);
	assert_int_equal(r[0].status, 503);
	h2_teardown(&h);
}

/* PINGs sent without reading the answers: the session ends instead of queueing them all. */
static void test_h2_ping_flood(void **state)
{
	struct h2c h;
	h2_setup(&h, false);
	pump(&h);
	int rc = 0;
	for (int i = 0; i < 2000 && rc == 0; i++) {
		nghttp2_submit_ping(h.c, NGHTTP2_FLAG_NONE, NULL);
		const uint8_t *d;
		ssize_t n;
		while (rc == 0 && (n = nghttp2_session_mem_send(h.c, &d)) > 0)
			rc = doh_session_input(h.s, d, (size_t)n);
	}
	assert_int_equal(rc, -1);
	assert_true(doh_session_done(h.s));
	h2_teardown(&h);
}

static void test_h2_not_preface(void **state)
{
	struct doh_session *s = doh_session_new(true, "/dns-query", false, &ops, NULL);
	const char *h1 = "GET /dns-query?dns=" QUERY_B64 " HTTP/1.1\r\nHost: x\r\n\r\n";
	assert_int_equal(doh_session_input(s, (const uint8_t *)h1, strlen(h1)), -1);
	doh_session_free(s);
}

/* ---- HTTP/1.1 ---- */

struct h1 {
	struct doh_session *s;
	struct fake f;
	char out[200000];
	size_t len;
};

static void h1_setup(struct h1 *h)
{
	memset(h, 0, sizeof(*h));
	h->s = doh_session_new(false, "/dns-query", true, &ops, &h->f);
	assert_non_null(h->s);
}

static int h1_in(struct h1 *h, const char *text, size_t n)
{
	return doh_session_input(h->s, (const uint8_t *)text, n);
}

/* What the session writes now, appended to h->out; the new part's length. */
static size_t h1_out(struct h1 *h)
{
	const uint8_t *d;
	long n;
	size_t before = h->len;
	while ((n = doh_session_output(h->s, &d)) > 0) {
		assert_true(h->len + (size_t)n < sizeof(h->out));
		memcpy(h->out + h->len, d, (size_t)n);
		h->len += (size_t)n;
	}
	assert_int_equal(n, 0);
	h->out[h->len] = 0;
	return h->len - before;
}

#define IN(h, t) assert_int_equal(h1_in(h, t, strlen(t)), 0)
#define GET_REQ "GET /dns-query?dns=" QUERY_B64 " HTTP/1.1\r\nHost: doh.test\r\n\r\n"
#define POST_REQ "POST /dns-query HTTP/1.1\r\nHost: doh.test\r\nContent-Type: application/dns-message\r\n" \
                 "Content-Length: 29\r\n\r\n"

static void test_h1_get_post(void **state)
{
	struct h1 h;
	h1_setup(&h);
	IN(&h, GET_REQ);
	assert_int_equal(h.f.n, 1);
	assert_memory_equal(h.f.msg[0], query, sizeof(query));
	assert_int_equal(h1_out(&h), 0);
	assert_int_equal(doh_session_reply(h.s, h.f.id[0], reply, sizeof(reply)), 0);
	h1_out(&h);
	assert_non_null(strstr(h.out, "HTTP/1.1 200 OK\r\n"));
	assert_non_null(strstr(h.out, "Content-Type: application/dns-message\r\n"));
	assert_non_null(strstr(h.out, "Content-Length: 61\r\n"));
	assert_non_null(strstr(h.out, "Cache-Control: max-age=60\r\n"));
	assert_null(strstr(h.out, "Connection: close"));
	const char *body = strstr(h.out, "\r\n\r\n") + 4;
	assert_int_equal(h.len - (size_t)(body - h.out), sizeof(reply));
	assert_memory_equal(body, reply, sizeof(reply));
	assert_false(doh_session_done(h.s));
	/* POST on the same connection, with a forwarded client (this session trusts them) */
	h.len = 0;
	char post[512];
	snprintf(post, sizeof(post),
	         "POST /dns-query HTTP/1.1\r\nHost: doh.test\r\nForwarded: for=\"[2001:db8::9]\"\r\n"
	         "Content-Type: application/dns-message\r\nContent-Length: 29\r\n\r\n");
	size_t pl = strlen(post);
	memcpy(post + pl, query, sizeof(query));
	assert_int_equal(h1_in(&h, post, pl + sizeof(query)), 0);
	assert_int_equal(h.f.n, 2);
	assert_true(h.f.fwd[1]);
	assert_int_equal(h.f.addr[1].ss_family, AF_INET6);
	assert_int_equal(doh_session_reply(h.s, h.f.id[1], NULL, 0), 0);
	h1_out(&h);
	assert_non_null(strstr(h.out, "HTTP/1.1 403 Forbidden\r\n"));
	doh_session_free(h.s);
}

/* One request, its response's status line (the session's own errors come at once). */
static void expect_h1(const char *text, size_t len, const char *status_line, bool closes)
{
	struct h1 h;
	h1_setup(&h);
	assert_int_equal(h1_in(&h, text, len), 0);
	assert_int_equal(h.f.n, 0);
	h1_out(&h);
	assert_memory_equal(h.out, status_line, strlen(status_line));
	assert_non_null(strstr(h.out, "Content-Type: text/plain; charset=utf-8\r\n"));
	assert_true(strstr(h.out, "Connection: close\r\n") ? closes : !closes);
	assert_true(doh_session_done(h.s) == closes);
	doh_session_free(h.s);
}

#define EXPECT_H1(t, s, c) expect_h1(t, strlen(t), s, c)

static void test_h1_errors(void **state)
{
	EXPECT_H1("GET /other?dns=" QUERY_B64 " HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 404 ", false);
	EXPECT_H1("PUT /dns-query HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", "HTTP/1.1 405 ", false);
	EXPECT_H1("HEAD /dns-query?dns=" QUERY_B64 " HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 405 ", false);
	/* HEAD's response is a head alone: the next response starts right after it */
	struct h1 h;
	h1_setup(&h);
	IN(&h, "HEAD /dns-query?dns=" QUERY_B64 " HTTP/1.1\r\nHost: x\r\n\r\nGET /x HTTP/1.1\r\nHost: x\r\n\r\n");
	h1_out(&h);
	const char *second = strstr(h.out, "\r\n\r\n") + 4;
	assert_memory_equal(second, "HTTP/1.1 404 ", 13);
	doh_session_free(h.s);
	EXPECT_H1("GET /dns-query?dns=AAA*AAAAAAAAAAAAAAAA HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400 ", false);
	EXPECT_H1("GET /dns-query?dns=AAABAAABAAAA HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400 ", false);
	EXPECT_H1("POST /dns-query HTTP/1.1\r\nHost: x\r\nContent-Length: 29\r\n\r\n"
	          "0123456789012345678901234567X", "HTTP/1.1 415 ", false);
	EXPECT_H1("POST /dns-query HTTP/1.1\r\nHost: x\r\nContent-Type: application/dns-message\r\n"
	          "Content-Length: 70000\r\n\r\n", "HTTP/1.1 413 ", true);
	EXPECT_H1("POST /dns-query HTTP/1.1\r\nHost: x\r\nContent-Type: application/dns-message\r\n"
	          "Transfer-Encoding: chunked\r\n\r\n", "HTTP/1.1 411 ", true);
	EXPECT_H1("GET /dns-query?dns=" QUERY_B64 " HTTP/1.1\r\n\r\n", "HTTP/1.1 400 ", true);
	EXPECT_H1("GET /dns-query?dns=" QUERY_B64 " HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", "HTTP/1.1 400 ", true);
	static const char tls[] = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n"; /* a TLS hello's start */
	expect_h1(tls, sizeof(tls) - 1, "HTTP/1.1 400 ", true);
	/* a header block over DOH_MAX_HEADERS: 431 without waiting for its end */
	static char big[DOH_MAX_HEADERS + 100];
	memset(big, 'a', sizeof(big));
	memcpy(big, "GET / HTTP/1.1\r\nX-Big: ", 23);
	expect_h1(big, sizeof(big), "HTTP/1.1 431 ", true);
}

static void test_h1_pipelining(void **state)
{
	struct h1 h;
	h1_setup(&h);
	IN(&h, GET_REQ "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n" GET_REQ GET_REQ);
	assert_int_equal(h.f.n, 3);
	uint8_t m[3][sizeof(reply)];
	for (int i = 0; i < 3; i++) {
		memcpy(m[i], reply, sizeof(reply));
		m[i][0] = (uint8_t)(0xA0 + i);
	}
	/* the last first: nothing goes out before the first is answered */
	assert_int_equal(doh_session_reply(h.s, h.f.id[2], m[2], sizeof(reply)), 0);
	assert_int_equal(doh_session_reply(h.s, h.f.id[1], m[1], sizeof(reply)), 0);
	assert_int_equal(h1_out(&h), 0);
	assert_int_equal(doh_session_reply(h.s, h.f.id[0], m[0], sizeof(reply)), 0);
	h1_out(&h);
	/* order: 200 (A0), 404, 200 (A1), 200 (A2) */
	const char *p = h.out;
	const char *want[] = { "HTTP/1.1 200", "HTTP/1.1 404", "HTTP/1.1 200", "HTTP/1.1 200" };
	uint8_t first_byte[] = { 0xA0, 0, 0xA1, 0xA2 };
	for (int i = 0; i < 4; i++) {
		assert_memory_equal(p, want[i], strlen(want[i]));
		const char *body = strstr(p, "\r\n\r\n") + 4;
		size_t blen = (size_t)atoi(strstr(p, "Content-Length: ") + 16);
		if (first_byte[i])
			assert_int_equal((uint8_t)body[0], first_byte[i]);
		p = body + blen;
	}
	assert_int_equal((size_t)(p - h.out), h.len);
	doh_session_free(h.s);
}

static void test_h1_close(void **state)
{
	struct h1 h;
	h1_setup(&h);
	IN(&h, "GET /dns-query?dns=" QUERY_B64 " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" GET_REQ);
	assert_int_equal(h.f.n, 1); /* nothing after Connection: close is read */
	assert_false(doh_session_done(h.s));
	IN(&h, GET_REQ);
	assert_int_equal(h.f.n, 1);
	doh_session_reply(h.s, h.f.id[0], reply, sizeof(reply));
	h1_out(&h);
	assert_non_null(strstr(h.out, "HTTP/1.1 200 OK\r\n"));
	assert_non_null(strstr(h.out, "Connection: close\r\n"));
	assert_true(doh_session_done(h.s));
	doh_session_free(h.s);
	/* HTTP/1.0 closes too */
	h1_setup(&h);
	IN(&h, "GET /dns-query?dns=" QUERY_B64 " HTTP/1.0\r\n\r\n");
	doh_session_reply(h.s, h.f.id[0], reply, sizeof(reply));
	h1_out(&h);
	assert_non_null(strstr(h.out, "Connection: close\r\n"));
	assert_true(doh_session_done(h.s));
	doh_session_free(h.s);
}

static void test_h1_byte_by_byte(void **state)
{
	struct h1 h;
	h1_setup(&h);
	char text[1024];
	size_t n = (size_t)snprintf(text, sizeof(text), "\r\n%s%s", GET_REQ, POST_REQ);
	memcpy(text + n, query, sizeof(query));
	n += sizeof(query);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(h1_in(&h, text + i, 1), 0);
		assert_int_equal(h.f.n, i + 1 < strlen(GET_REQ) + 2 ? 0 : i + 1 < n ? 1 : 2);
	}
	assert_int_equal(h.f.n, 2);
	assert_memory_equal(h.f.msg[1], query, sizeof(query));
	doh_session_reply(h.s, h.f.id[1], reply, sizeof(reply));
	doh_session_reply(h.s, h.f.id[0], nxdomain, sizeof(nxdomain));
	h1_out(&h);
	char *second = memmem(h.out + 1, h.len - 1, "HTTP/1.1 200 OK", 15);
	assert_non_null(second);
	assert_non_null(strstr(h.out, "Cache-Control: max-age=900\r\n"));
	assert_true(strstr(h.out, "Cache-Control: max-age=900\r\n") < second);
	assert_non_null(memmem(second, h.len - (size_t)(second - h.out), "Cache-Control: max-age=60\r\n", 27));
	doh_session_free(h.s);
}

/* DOH_MAX_STREAMS unanswered: the rest waits, unread, and goes once answers are written. */
static void test_h1_queue_limit(void **state)
{
	static struct h1 h;
	h1_setup(&h);
	for (int i = 0; i < DOH_MAX_STREAMS + 5; i++)
		IN(&h, GET_REQ);
	assert_int_equal(h.f.n, DOH_MAX_STREAMS);
	for (unsigned i = 0; i < 3; i++)
		doh_session_reply(h.s, h.f.id[i], reply, sizeof(reply));
	h1_out(&h);
	assert_int_equal(h.f.n, DOH_MAX_STREAMS + 3);
	/* a client that keeps sending while nothing is answered is refused and closed */
	static char flood[DOH_MAX_HEADERS + 70000];
	size_t fl = 0;
	while (fl + strlen(GET_REQ) < sizeof(flood)) {
		memcpy(flood + fl, GET_REQ, strlen(GET_REQ));
		fl += strlen(GET_REQ);
	}
	assert_int_equal(h1_in(&h, flood, fl), 0);
	assert_int_equal(h.f.n, DOH_MAX_STREAMS + 3);
	for (unsigned i = 3; i < h.f.n; i++)
		doh_session_reply(h.s, h.f.id[i], reply, sizeof(reply));
	h.len = 0;
	h1_out(&h);
	assert_non_null(memmem(h.out, h.len, "HTTP/1.1 431 ", 13));
	assert_true(doh_session_done(h.s));
	doh_session_free(h.s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_h2_get),
		cmocka_unit_test(test_h2_post_trusted),
		cmocka_unit_test(test_h2_errors),
		cmocka_unit_test(test_h2_out_of_order),
		cmocka_unit_test(test_h2_reset_and_drop),
		cmocka_unit_test(test_h2_rapid_reset),
		cmocka_unit_test(test_h2_query_cap),
		cmocka_unit_test(test_h2_ping_flood),
		cmocka_unit_test(test_h2_not_preface),
		cmocka_unit_test(test_h1_get_post),
		cmocka_unit_test(test_h1_errors),
		cmocka_unit_test(test_h1_pipelining),
		cmocka_unit_test(test_h1_close),
		cmocka_unit_test(test_h1_byte_by_byte),
		cmocka_unit_test(test_h1_queue_limit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
