/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of etcd/etcd.c against a hostile member: a tiny HTTP/1.1
 * server on a 127.0.0.1 ephemeral port, in a thread, serving one scripted
 * answer per connection (every answer says "Connection: close"). Each test
 * names the defence it covers; each fails when that defence is removed.
 * The answers that look like etcd's are etcd 3.4's own (captured from its
 * gateway), then broken.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "etcd/etcd.h"

/* Generous: this runs on shared, loaded machines (and under ASan). */
#define WAIT_MS 15000
#define MIB ((size_t)1 << 20)

/* ---- the fake member ---- */

enum kind {
	ANSWER,        /* status and body, Content-Length */
	STALL,         /* read the request, answer nothing until the client goes */
	STREAM,        /* status 200, chunked: body cut into pieces of piece bytes, then the end */
	STREAM_SILENT, /* STREAM, then silence (no end) until the client goes */
	HUGE_BODY,     /* a JSON range answer padded to size bytes, Content-Length */
	HUGE_MESSAGE,  /* STREAM of a created message and one event of size bytes */
};

struct step {
	enum kind kind;
	int status;
	const char *body;
	size_t piece; /* STREAM: 0 = one piece */
	size_t size;  /* HUGE_* */
};

#define MAX_STEPS 8

struct fake {
	int lfd;
	uint16_t port;
	char url[64];
	pthread_t th;
	struct step steps[MAX_STEPS];
	size_t nsteps;
	/* what the client sent, one per connection (read after fake_end) */
	size_t nreq;
	char path[MAX_STEPS][128];
	char auth[MAX_STEPS][256];
	char body[MAX_STEPS][1024];
	size_t sent; /* bytes of body sent in the last HUGE_* step */
};

static bool send_all(int fd, const void *p, size_t n)
{
	const char *b = p;
	while (n > 0) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		b += w;
		n -= (size_t)w;
	}
	return true;
}

static bool send_chunk(int fd, const char *p, size_t n)
{
	char head[32];
	int h = snprintf(head, sizeof(head), "%zx\r\n", n);
	return send_all(fd, head, (size_t)h) && send_all(fd, p, n) && send_all(fd, "\r\n", 2);
}

static const char STREAM_HEAD[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                  "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";

/* Until the client closes its end (or WAIT_MS). */
static void wait_close(int fd)
{
	char buf[4096];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	while (poll(&p, 1, WAIT_MS) > 0 && read(fd, buf, sizeof(buf)) > 0)
		;
}

/* The request on fd: its path, Authorization and body recorded. @return false when there is none. */
static bool read_request(struct fake *f, int fd, size_t k)
{
	char buf[16384];
	size_t len = 0;
	char *end = NULL;
	while (end == NULL) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (len + 1 >= sizeof(buf) || poll(&p, 1, WAIT_MS) <= 0)
			return false;
		ssize_t r = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (r <= 0)
			return false;
		len += (size_t)r;
		buf[len] = '\0';
		end = strstr(buf, "\r\n\r\n");
	}
	sscanf(buf, "%*s %127s", f->path[k]);
	const char *a = strcasestr(buf, "\r\nAuthorization: ");
	if (a != NULL && a < end)
		sscanf(a + 17, "%255[^\r\n]", f->auth[k]);
	const char *cl = strcasestr(buf, "\r\nContent-Length: ");
	size_t want = cl != NULL && cl < end ? strtoul(cl + 18, NULL, 10) : 0;
	if (strcasestr(buf, "\r\nExpect: 100-continue") != NULL)
		send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25);
	size_t have = len - (size_t)(end + 4 - buf);
	memmove(buf, end + 4, have);
	while (have < want && have + 1 < sizeof(buf)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, WAIT_MS) <= 0)
			return false;
		ssize_t r = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (r <= 0)
			return false;
		have += (size_t)r;
	}
	buf[have] = '\0';
	size_t keep = have < sizeof(f->body[k]) - 1 ? have : sizeof(f->body[k]) - 1;
	memcpy(f->body[k], buf, keep);
	f->body[k][keep] = '\0';
	return true;
}

static void serve(struct fake *f, int fd, const struct step *s)
{
	char head[256];
	switch (s->kind) {
	case ANSWER: {
		size_t n = strlen(s->body);
		int h = snprintf(head, sizeof(head),
		                 "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
		                 "Connection: close\r\n\r\n",
		                 s->status, n);
		if (send_all(fd, head, (size_t)h))
			send_all(fd, s->body, n);
		break;
	}
	case STALL:
		wait_close(fd);
		break;
	case STREAM:
	case STREAM_SILENT: {
		if (!send_all(fd, STREAM_HEAD, sizeof(STREAM_HEAD) - 1))
			break;
		size_t n = strlen(s->body), piece = s->piece ? s->piece : n;
		for (size_t off = 0; off < n; off += piece) {
			if (!send_chunk(fd, s->body + off, n - off < piece ? n - off : piece))
				return;
			if (s->piece != 0 && s->piece < 16)
				usleep(50); /* let each piece go in its own segment */
		}
		if (s->kind == STREAM_SILENT)
			wait_close(fd);
		else
			send_all(fd, "0\r\n\r\n", 5);
		break;
	}
	case HUGE_BODY:
	case HUGE_MESSAGE: {
		static const char range_head[] = "{\"header\":{\"revision\":\"1\"},\"pad\":\"";
		static const char watch_head[] = "{\"result\":{\"header\":{\"revision\":\"1\"},\"created\":true}}\n"
		                                 "{\"result\":{\"header\":{\"revision\":\"2\"},\"events\":[{\"kv\":"
		                                 "{\"key\":\"YQ==\",\"mod_revision\":\"2\",\"value\":\"";
		static const char range_tail[] = "\"}", watch_tail[] = "\"}}]}}\n";
		bool range = s->kind == HUGE_BODY;
		const char *top = range ? range_head : watch_head, *tail = range ? range_tail : watch_tail;
		if (range) {
			int h = snprintf(head, sizeof(head),
			                 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
			                 "Connection: close\r\n\r\n",
			                 s->size);
			if (!send_all(fd, head, (size_t)h) || !send_all(fd, top, strlen(top)))
				break;
		} else if (!send_all(fd, STREAM_HEAD, sizeof(STREAM_HEAD) - 1) || !send_chunk(fd, top, strlen(top))) {
			break;
		}
		/* valid base64 and valid JSON throughout: only the size is wrong */
		static char pad[65536];
		memset(pad, 'A', sizeof(pad));
		size_t left = s->size - strlen(top) - strlen(tail);
		f->sent = strlen(top);
		while (left > 0) {
			size_t n = left < sizeof(pad) ? left : sizeof(pad);
			if (!(range ? send_all(fd, pad, n) : send_chunk(fd, pad, n)))
				return;
			f->sent += n;
			left -= n;
		}
		if (range ? send_all(fd, tail, strlen(tail)) : send_chunk(fd, tail, strlen(tail)))
			f->sent += strlen(tail);
		if (!range)
			send_all(fd, "0\r\n\r\n", 5);
		break;
	}
	}
}

static void *fake_main(void *arg)
{
	struct fake *f = arg;
	for (size_t k = 0; k < f->nsteps; k++) {
		struct pollfd p = { .fd = f->lfd, .events = POLLIN };
		if (poll(&p, 1, WAIT_MS) <= 0)
			break;
		int fd = accept(f->lfd, NULL, NULL);
		if (fd < 0)
			break;
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (read_request(f, fd, k)) {
			f->nreq++;
			serve(f, fd, &f->steps[k]);
		}
		close(fd);
	}
	return NULL;
}

/* A listening socket on 127.0.0.1, port chosen by the kernel. */
static int listen_any(uint16_t *port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	socklen_t al = sizeof(a);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

/* A member serving steps, one per connection, in order. */
static struct fake *fake_start(const struct step *steps, size_t n)
{
	struct fake *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	assert_true(n <= MAX_STEPS);
	memcpy(f->steps, steps, n * sizeof(*steps));
	f->nsteps = n;
	f->lfd = listen_any(&f->port);
	assert_int_equal(listen(f->lfd, 8), 0);
	snprintf(f->url, sizeof(f->url), "http://127.0.0.1:%u", f->port);
	assert_int_equal(pthread_create(&f->th, NULL, fake_main, f), 0);
	return f;
}

/* Waits for the member's thread (it ends after its last step, or WAIT_MS without a client). */
static void fake_end(struct fake *f)
{
	shutdown(f->lfd, SHUT_RDWR);
	pthread_join(f->th, NULL);
	close(f->lfd);
}

/* Request k went to path with Authorization auth ("" none). */
static void expect_req(const struct fake *f, size_t k, const char *path, const char *auth)
{
	assert_true(k < f->nreq);
	assert_string_equal(f->path[k], path);
	assert_string_equal(f->auth[k], auth);
}

/* A port nothing listens on: bound, never listened (connection refused). */
static int closed_port(char *url, size_t size)
{
	uint16_t port;
	int fd = listen_any(&port);
	snprintf(url, size, "http://127.0.0.1:%u", port);
	return fd;
}

static struct etcd *client(const char *const *urls, size_t n, const char *user, const char *pass, unsigned ms)
{
	struct etcd_opts o = { .endpoints = urls, .nendpoints = n, .username = user, .password = pass,
		               .timeout_ms = ms ? ms : 3000 };
	struct etcd *e = etcd_new(&o);
	assert_non_null(e);
	return e;
}

static uint64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* etcd_get of "/pd/" through one member answering status, body. @return its result. */
static int get_with(int status, const char *body)
{
	struct step s = { .kind = ANSWER, .status = status, .body = body };
	struct fake *f = fake_start(&s, 1);
	const char *urls[] = { f->url };
	struct etcd *e = client(urls, 1, NULL, NULL, 0);
	struct etcd_range r;
	int rc = etcd_get(e, "/pd/", NULL, 0, 0, &r);
	if (rc == 0)
		etcd_range_free(&r);
	else
		assert_true(r.n == 0 && r.kvs == NULL);
	etcd_free(e);
	fake_end(f);
	assert_int_equal(f->nreq, 1);
	assert_string_equal(f->path[0], "/v3/kv/range");
	free(f);
	return rc;
}

/* etcd's own answers (3.4, captured), for the tests to start from. */
#define HDR "\"header\":{\"cluster_id\":\"15026016918487770221\",\"member_id\":\"16694209735470997472\"," \
            "\"revision\":\"4\",\"raft_term\":\"2\"}"
#define RANGE_OK "{" HDR ",\"kvs\":[{\"key\":\"L3BkL2RvbWFpbnMvYS5leGFtcGxl\",\"create_revision\":\"2\"," \
                 "\"mod_revision\":\"2\",\"version\":\"1\",\"value\":\"djE=\"},{\"key\":\"L3BkL2RvbWFpbnMvYi5leGFtcGxl\"," \
                 "\"create_revision\":\"3\",\"mod_revision\":\"3\",\"version\":\"1\",\"value\":\"eAB5\"}],\"count\":\"2\"}"
/* One kv with key and value fields as given (a JSON fragment each). */
#define RANGE_KV(key, value) "{" HDR ",\"kvs\":[{\"key\":" key ",\"mod_revision\":\"2\",\"value\":" value "}]}"

/* ---- (a) not JSON, not an object, no header ---- */

/* Defence: request() takes only a JSON object (parse_object, strict, nothing after it), and range_from_json
 * requires the header; anything else is ETCD_E_PROTOCOL. */
static void test_not_etcd_answers(void **state)
{
	assert_int_equal(get_with(200, RANGE_OK), 0); /* the control: etcd's own answer passes */
	assert_int_equal(get_with(200, ""), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, "hello"), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, "<html>502</html>"), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, "[1,2,3]"), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, "\"header\""), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, "null"), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, "{\"kvs\":[]}"), ETCD_E_PROTOCOL);             /* no header */
	assert_int_equal(get_with(200, "{\"header\":[1]}"), ETCD_E_PROTOCOL);         /* header not an object */
	assert_int_equal(get_with(200, "{" HDR ",\"kvs\":{}}"), ETCD_E_PROTOCOL);      /* kvs not an array */
	assert_int_equal(get_with(200, "{" HDR ",\"kvs\":[1]}"), ETCD_E_PROTOCOL);     /* a kv not an object */
	assert_int_equal(get_with(200, "{" HDR ",\"kvs\":[{}]}"), ETCD_E_PROTOCOL);    /* a kv without key */
	assert_int_equal(get_with(200, "{" HDR ",\"kvs\":[{\"key\":"), ETCD_E_PROTOCOL); /* cut short */
	/* strict JSON: one object and nothing after it, no comments, no trailing commas */
	assert_int_equal(get_with(200, RANGE_OK " garbage"), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, RANGE_OK "{}"), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, "{" HDR ",/* c */\"more\":false}"), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, "{" HDR ",}"), ETCD_E_PROTOCOL);
	/* types: more, succeeded, created, canceled are booleans or absent */
	assert_int_equal(get_with(200, "{" HDR ",\"more\":\"yes\"}"), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, "{" HDR ",\"more\":true}"), 0);
}

/* etcd_txn against one member answering status, body. @return its result (*ok, *rev). */
static int txn_with(int status, const char *body, bool *ok, int64_t *rev)
{
	struct step s = { .kind = ANSWER, .status = status, .body = body };
	struct fake *f = fake_start(&s, 1);
	const char *urls[] = { f->url };
	struct etcd *e = client(urls, 1, NULL, NULL, 0);
	struct etcd_cmp cmp = { .key = "/pd/y", .mod_revision = 0 };
	struct etcd_op op = { .key = "/pd/y", .value = (const uint8_t *)"1", .vlen = 1 };
	int rc = etcd_txn(e, &cmp, 1, &op, 1, ok, rev);
	etcd_free(e);
	fake_end(f);
	assert_string_equal(f->path[0], "/v3/kv/txn");
	free(f);
	return rc;
}

/* Defence: etcd_txn requires the header, and "succeeded" is a boolean or absent (absent: false). */
static void test_txn_answers(void **state)
{
	bool ok;
	int64_t rev = 0;
	/* etcd's own answers */
	assert_int_equal(txn_with(200, "{" HDR ",\"succeeded\":true,\"responses\":[{\"response_put\":{\"header\":"
	                                   "{\"revision\":\"4\"}}}]}", &ok, &rev), 0);
	assert_true(ok);
	assert_int_equal(rev, 4);
	assert_int_equal(txn_with(200, "{" HDR "}", &ok, &rev), 0);
	assert_false(ok);
	assert_int_equal(txn_with(200, "{\"succeeded\":true}", &ok, &rev), ETCD_E_PROTOCOL);
	assert_false(ok);
	assert_int_equal(txn_with(200, "{" HDR ",\"succeeded\":\"true\"}", &ok, &rev), ETCD_E_PROTOCOL);
	assert_false(ok);
	assert_int_equal(txn_with(200, "{" HDR ",\"succeeded\":1}", &ok, &rev), ETCD_E_PROTOCOL);
	assert_int_equal(txn_with(200, "{" HDR ",\"succeeded\":true} {}", &ok, &rev), ETCD_E_PROTOCOL);
	assert_false(ok);
}

/* ---- (b) keys and values: strict base64, no NUL in a key ---- */

/* Defence: b64_decode (alphabet, length, padding only at the end, no bits after the data), the key's
 * strlen == keylen check in j_kv (a key with a NUL is etcd's data, handed over with bad set, never
 * as text), and j_str refusing a JSON string with a NUL in it. */
static void test_base64(void **state)
{
	assert_int_equal(get_with(200, RANGE_KV("\"L3BkL3g=\"", "\"MQ==\"")), 0);  /* control: "/pd/x" = "1" */
	assert_int_equal(get_with(200, RANGE_KV("\"L3BkL3g=\"", "\"\"")), 0);      /* an empty value */
	assert_int_equal(get_with(200, RANGE_KV("\"L3BkL3g*\"", "\"MQ==\"")), ETCD_E_PROTOCOL); /* alphabet */
	assert_int_equal(get_with(200, RANGE_KV("\"L3BkL3g-\"", "\"MQ==\"")), ETCD_E_PROTOCOL); /* base64url */
	assert_int_equal(get_with(200, RANGE_KV("\"L3Bk L3g=\"", "\"MQ==\"")), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, RANGE_KV("\"L3BkL3g\"", "\"MQ==\"")), ETCD_E_PROTOCOL);  /* no padding */
	assert_int_equal(get_with(200, RANGE_KV("\"L3BkL3g==\"", "\"MQ==\"")), ETCD_E_PROTOCOL); /* too much */
	assert_int_equal(get_with(200, RANGE_KV("\"L3B=L3g=\"", "\"MQ==\"")), ETCD_E_PROTOCOL); /* mid-way */
	assert_int_equal(get_with(200, RANGE_KV("\"L3BkL3=g\"", "\"MQ==\"")), ETCD_E_PROTOCOL); /* data after = */
	assert_int_equal(get_with(200, RANGE_KV("\"====\"", "\"MQ==\"")), ETCD_E_PROTOCOL);
	/* stray bits after the data: "L3BkL3h=" would be "/pd/x" too, "MR==" "1" */
	assert_int_equal(get_with(200, RANGE_KV("\"L3BkL3h=\"", "\"MQ==\"")), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, RANGE_KV("\"L3BkL3g=\"", "\"MR==\"")), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, RANGE_KV("\"L3BkL3g=\"", "\"MQ=\"")), ETCD_E_PROTOCOL);   /* value */
	assert_int_equal(get_with(200, RANGE_KV("\"L3BkL3g=\"", "\"M@==\"")), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, RANGE_KV("\"L3BkL3g=\"", "17")), ETCD_E_PROTOCOL);       /* not a string */
	/* key "a\0b", key "\0": etcd holds such keys; the range goes on, the kv is marked */
	static const char *const nul_keys[] = { RANGE_KV("\"YQBi\"", "\"MQ==\""), RANGE_KV("\"AA==\"", "\"MQ==\"") };
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(get_with(200, nul_keys[i]), 0);
		struct etcd_range r;
		assert_int_equal(etcd_parse_range(nul_keys[i], strlen(nul_keys[i]), &r), 0);
		assert_int_equal(r.n, 1);
		assert_non_null(r.kvs[0].bad);
		assert_int_equal(r.kvs[0].keylen, i == 0 ? 3 : 1);
		assert_memory_equal(r.kvs[0].key, i == 0 ? "a\0b" : "\0", r.kvs[0].keylen + 1);
		etcd_range_free(&r);
	}
	/* a range never reads a marker for a value it left out: "!" is no base64 */
	assert_int_equal(get_with(200, RANGE_KV("\"L3BkL3g=\"", "\"!12\"")), ETCD_E_PROTOCOL);
	/* a NUL in the JSON string: C would read the text before it, a valid key ("/pd/x") */
	assert_int_equal(get_with(200, RANGE_KV("\"L3BkL3g=\\u0000L3Bk\"", "\"MQ==\"")), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, RANGE_KV("\"L3BkL3g=\"", "\"MQ==\\u0000\"")), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, RANGE_KV("17", "\"MQ==\"")), ETCD_E_PROTOCOL);
	/* a value may hold NULs: it has a length */
	assert_int_equal(get_with(200, RANGE_KV("\"L3BkL3g=\"", "\"eAB5\"")), 0);
}

/* ---- (c) numbers ---- */

/* Defence: j_i64/j_u64 take a decimal string or a JSON integer that fits, nothing else (and a revision
 * is not negative). */
static void test_numbers(void **state)
{
#define REV(x) "{\"header\":{\"cluster_id\":\"1\",\"revision\":" x "}}"
#define MODREV(x) "{" HDR ",\"kvs\":[{\"key\":\"YQ==\",\"mod_revision\":" x "}]}"
	assert_int_equal(get_with(200, REV("\"12\"")), 0); /* control */
	assert_int_equal(get_with(200, REV("12")), 0);     /* a JSON integer is a number too */
	assert_int_equal(get_with(200, REV("\"12x\"")), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, REV("\"\"")), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, REV("\" 12\"")), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, REV("\"+12\"")), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, REV("\"0x12\"")), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, REV("\"-12\"")), ETCD_E_PROTOCOL); /* a negative revision */
	assert_int_equal(get_with(200, REV("1.5")), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, REV("\"1.5\"")), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, REV("1e3")), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, REV("{}")), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, REV("[12]")), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, REV("true")), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, REV("\"99999999999999999999\"")), ETCD_E_PROTOCOL); /* overflows int64 */
	/* json-c would hand these back as INT64_MAX: not the number sent */
	assert_int_equal(get_with(200, REV("9223372036854775808")), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, REV("99999999999999999999")), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, REV("9223372036854775807")), 0); /* the largest that fits */
	assert_int_equal(get_with(200, "{\"header\":{\"cluster_id\":\"-1\"}}"), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, "{\"header\":{\"cluster_id\":15}}"), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, MODREV("\"3\"")), 0);
	assert_int_equal(get_with(200, MODREV("\"abc\"")), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, MODREV("\"-3\"")), ETCD_E_PROTOCOL);
	assert_int_equal(get_with(200, MODREV("3.0")), ETCD_E_PROTOCOL);
#undef REV
#undef MODREV
}

/* ---- (d) the body cap ---- */

static long maxrss_kib(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* Defence: body_write stops at ETCD_BODY_MAX (64 MiB): a bigger answer, valid JSON throughout, is
 * ETCD_E_TOOBIG, and the client stops reading, so memory stays near the cap. */
static void test_body_cap(void **state)
{
	struct step s = { .kind = HUGE_BODY, .size = 256 * MIB };
	struct fake *f = fake_start(&s, 1);
	const char *urls[] = { f->url };
	struct etcd *e = client(urls, 1, NULL, NULL, 20000);
	long before = maxrss_kib();
	struct etcd_range r;
	assert_int_equal(etcd_get(e, "/pd/", NULL, 0, 0, &r), ETCD_E_TOOBIG);
	long grown = maxrss_kib() - before;
	assert_non_null(strstr(etcd_error(e), "larger than"));
	etcd_free(e);
	fake_end(f);
	/* the client hung up near 64 MiB (socket buffers aside), not after 256 */
	assert_true(f->sent < 128 * MIB);
	assert_true(grown < 192 * 1024);
	free(f);
}

/* ---- (e) a member that stalls, one that refuses ---- */

/* Defence: CURLOPT_TIMEOUT_MS on every request: a member that accepts and never answers is given up
 * after timeout_ms (ETCD_E_UNAVAILABLE). */
static void test_stall(void **state)
{
	struct step s = { .kind = STALL };
	struct fake *f = fake_start(&s, 1);
	const char *urls[] = { f->url };
	struct etcd *e = client(urls, 1, NULL, NULL, 500);
	uint64_t t0 = now_ms();
	struct etcd_range r;
	assert_int_equal(etcd_get(e, "/pd/", NULL, 0, 0, &r), ETCD_E_UNAVAILABLE);
	uint64_t took = now_ms() - t0;
	assert_true(took >= 450);
	assert_true(took < 500 + 2500);
	etcd_free(e);
	fake_end(f);
	free(f);
}

/* Defence: request()'s failover: a member that refuses the connection is passed over, and the next
 * one answers (etcd_member names it). */
static void test_refused_next_member(void **state)
{
	char dead[64];
	int fd = closed_port(dead, sizeof(dead));
	struct step s = { .kind = ANSWER, .status = 200, .body = RANGE_OK };
	struct fake *f = fake_start(&s, 1);
	const char *urls[] = { dead, f->url };
	struct etcd *e = client(urls, 2, NULL, NULL, 2000);
	struct etcd_range r;
	assert_int_equal(etcd_get(e, "/pd/", NULL, 0, 0, &r), 0);
	assert_int_equal(r.n, 2);
	assert_string_equal(r.kvs[0].key, "/pd/domains/a.example");
	assert_int_equal(r.revision, 4);
	etcd_range_free(&r);
	assert_string_equal(etcd_member(e), f->url);
	etcd_free(e);
	fake_end(f);
	close(fd);
	free(f);
}

/* ---- (f) etcd's error answers ---- */

/* Two members: the first answers status, body; the second etcd's range. @return etcd_get's result;
 * *second: whether the second was asked. */
static int get_two(int status, const char *body, bool *second)
{
	struct step s1 = { .kind = ANSWER, .status = status, .body = body };
	struct step s2 = { .kind = ANSWER, .status = 200, .body = RANGE_OK };
	struct fake *f1 = fake_start(&s1, 1), *f2 = fake_start(&s2, 1);
	const char *urls[] = { f1->url, f2->url };
	struct etcd *e = client(urls, 2, NULL, NULL, 2000);
	struct etcd_range r;
	int rc = etcd_get(e, "/pd/", NULL, 0, 0, &r);
	if (rc == 0) {
		etcd_range_free(&r);
		assert_string_equal(etcd_member(e), f2->url);
	}
	etcd_free(e);
	shutdown(f2->lfd, SHUT_RDWR); /* not asked: do not wait for it */
	fake_end(f1);
	fake_end(f2);
	*second = f2->nreq == 1;
	free(f1);
	free(f2);
	return rc;
}

/* Defence: error_answer's mapping of etcd's {"error","code","message"}: 11 with "compacted" is
 * ETCD_E_COMPACTED, 7 and 16 ETCD_E_AUTH, final (no other member asked); 14 or HTTP 503 (no leader
 * there) sends the request to the next member. */
static void test_error_answers(void **state)
{
	bool second;
	assert_int_equal(get_two(400,
	                         "{\"error\":\"etcdserver: mvcc: required revision has been compacted\",\"message\":"
	                         "\"etcdserver: mvcc: required revision has been compacted\",\"code\":11}",
	                         &second),
	                 ETCD_E_COMPACTED);
	assert_false(second);
	/* 11 without "compacted" (a future revision) is another refusal */
	assert_int_equal(get_two(400,
	                         "{\"error\":\"etcdserver: mvcc: required revision is a future revision\",\"message\":"
	                         "\"etcdserver: mvcc: required revision is a future revision\",\"code\":11}",
	                         &second),
	                 ETCD_E_SERVER);
	assert_false(second);
	assert_int_equal(get_two(403,
	                         "{\"error\":\"etcdserver: permission denied\",\"message\":\"etcdserver: permission "
	                         "denied\",\"code\":7}",
	                         &second),
	                 ETCD_E_AUTH);
	assert_false(second);
	assert_int_equal(get_two(401,
	                         "{\"error\":\"etcdserver: invalid auth token\",\"message\":\"etcdserver: invalid "
	                         "auth token\",\"code\":16}",
	                         &second),
	                 ETCD_E_AUTH);
	assert_false(second);
	assert_int_equal(get_two(503,
	                         "{\"error\":\"etcdserver: no leader\",\"message\":\"etcdserver: no leader\",\"code\":14}",
	                         &second),
	                 0);
	assert_true(second);
	/* code 14 whatever the status; HTTP 503 whatever the body */
	assert_int_equal(get_two(500, "{\"error\":\"x\",\"message\":\"x\",\"code\":14}", &second), 0);
	assert_true(second);
	assert_int_equal(get_two(503, "<html>no</html>", &second), 0);
	assert_true(second);
	/* a refusal that is neither is final */
	assert_int_equal(get_two(400, "{\"error\":\"x\",\"message\":\"x\",\"code\":3}", &second), ETCD_E_SERVER);
	assert_false(second);
	assert_non_null(strstr(etcd_strerror(ETCD_E_SERVER), "refused"));
}

/* ---- (g) watch ---- */

/* etcd 3.4's own watch stream (captured): created, then four responses with ten events. */
#define WHDR(rev) "\"header\":{\"cluster_id\":\"15026016918487770221\",\"member_id\":\"16694209735470997472\"," \
                  "\"revision\":\"" rev "\",\"raft_term\":\"2\"}"
static const char WATCH_STREAM[] =
	"{\"result\":{" WHDR("5") ",\"created\":true}}\n"
	"{\"result\":{" WHDR("5") ",\"events\":[{\"kv\":{\"key\":\"L3BkL2RvbWFpbnMvYS5leGFtcGxl\",\"create_revision\":"
	"\"2\",\"mod_revision\":\"2\",\"version\":\"1\",\"value\":\"djE=\"}},{\"kv\":{\"key\":\"L3BkL2RvbWFpbnMvYi5leGFt"
	"cGxl\",\"create_revision\":\"3\",\"mod_revision\":\"3\",\"version\":\"1\",\"value\":\"eAB5\"}},{\"kv\":{\"key\":"
	"\"L3BkL3g=\",\"create_revision\":\"4\",\"mod_revision\":\"4\",\"version\":\"1\",\"value\":\"MQ==\"}},{\"kv\":{"
	"\"key\":\"L3BkL3k=\",\"create_revision\":\"5\",\"mod_revision\":\"5\",\"version\":\"1\",\"value\":\"MQ==\"}},{"
	"\"type\":\"DELETE\",\"kv\":{\"key\":\"L3BkL3g=\",\"mod_revision\":\"5\"}}]}}\n"
	"{\"result\":{" WHDR("6") ",\"events\":[{\"kv\":{\"key\":\"L3BkL2xlYXNlZA==\",\"create_revision\":\"6\","
	"\"mod_revision\":\"6\",\"version\":\"1\",\"value\":\"YWJj\",\"lease\":\"6908700254123053329\"}}]}}\n"
	"{\"result\":{" WHDR("7") ",\"events\":[{\"type\":\"DELETE\",\"kv\":{\"key\":\"L3BkL2RvbWFpbnMvYS5leGFtcGxl\","
	"\"mod_revision\":\"7\"}}]}}\n"
	"{\"result\":{" WHDR("8") ",\"events\":[{\"kv\":{\"key\":\"L3BkL3Qx\",\"create_revision\":\"8\",\"mod_revision\":"
	"\"8\",\"version\":\"1\",\"value\":\"MQ==\"}},{\"kv\":{\"key\":\"L3BkL3Qy\",\"create_revision\":\"8\","
	"\"mod_revision\":\"8\",\"version\":\"1\"}},{\"type\":\"DELETE\",\"kv\":{\"key\":\"L3BkL3k=\",\"mod_revision\":"
	"\"8\"}}]}}\n";

/* What fn saw, as text: "C5;" for created at 5, "P/pd/x=1@4;" a put, "D/pd/x@5;" a delete, "|" between
 * responses. */
struct seen {
	char log[4096];
	size_t calls;
	int ret;                 /* what fn returns */
	atomic_bool *stop_after; /* set when created */
};

static int on_watch(const struct etcd_event *ev, size_t n, int64_t rev, uint64_t cluster, void *arg)
{
	struct seen *s = arg;
	size_t len = strlen(s->log);
	s->calls++;
	if (n == 0) {
		assert_null(ev);
		snprintf(s->log + len, sizeof(s->log) - len, "C%lld;", (long long)rev);
		if (s->stop_after != NULL)
			atomic_store(s->stop_after, true);
		return s->ret;
	}
	for (size_t i = 0; i < n; i++) {
		len = strlen(s->log);
		const struct etcd_kv *kv = &ev[i].kv;
		char val[64] = "";
		for (size_t j = 0; j < kv->vlen && j + 1 < sizeof(val); j++)
			val[j] = kv->value[j] ? (char)kv->value[j] : '0';
		if (kv->bad != NULL) {
			/* a kv handed over only to be named: "B" and its key, NULs as '0' */
			char key[64] = "";
			for (size_t j = 0; j < kv->keylen && j + 1 < sizeof(key); j++)
				key[j] = kv->key[j] ? kv->key[j] : '0';
			assert_int_equal(kv->vlen, 0);
			snprintf(s->log + len, sizeof(s->log) - len, "B%s@%lld;", key, (long long)kv->mod_revision);
		} else if (ev[i].del)
			snprintf(s->log + len, sizeof(s->log) - len, "D%s@%lld;", kv->key, (long long)kv->mod_revision);
		else
			snprintf(s->log + len, sizeof(s->log) - len, "P%s=%s@%lld%s;", kv->key, val,
			         (long long)kv->mod_revision, kv->lease ? "L" : "");
	}
	len = strlen(s->log);
	snprintf(s->log + len, sizeof(s->log) - len, "|");
	return s->ret;
}

static const char WATCH_SEEN[] = "C5;P/pd/domains/a.example=v1@2;P/pd/domains/b.example=x0y@3;P/pd/x=1@4;"
                                 "P/pd/y=1@5;D/pd/x@5;|P/pd/leased=abc@6L;|D/pd/domains/a.example@7;|"
                                 "P/pd/t1=1@8;P/pd/t2=@8;D/pd/y@8;|";

struct stopper {
	atomic_bool *stop;
	unsigned ms;
};

static void *stop_later(void *arg)
{
	struct stopper *s = arg;
	usleep(s->ms * 1000);
	atomic_store(s->stop, true);
	return NULL;
}

/* etcd_watch of "/pd/" from revision 2 against one member serving step. */
static int watch_with(const struct step *steps, size_t n, struct seen *seen, const atomic_bool *stop,
                      int64_t *compacted, struct fake **out)
{
	struct fake *f = fake_start(steps, n);
	const char *urls[] = { f->url };
	struct etcd *e = client(urls, 1, NULL, NULL, 2000);
	int rc = etcd_watch(e, "/pd/", "/pd0", 2, on_watch, seen, stop, compacted);
	etcd_free(e);
	fake_end(f);
	assert_int_equal(f->nreq, 1);
	assert_string_equal(f->path[0], "/v3/watch");
	assert_non_null(strstr(f->body[0], "\"create_request\""));
	assert_non_null(strstr(f->body[0], "\"start_revision\":2"));
	if (out != NULL)
		*out = f;
	else
		free(f);
	return rc;
}

/* Defence: the watch parser's incremental reading (json_tokener_parse_ex over every piece, the
 * message's bytes counted across pieces): etcd's stream cut into single bytes, each its own HTTP
 * chunk, and in pieces of 7 and of 1000, gives fn exactly the events; the stream's end is
 * ETCD_E_UNAVAILABLE (the caller comes back from its revision). */
static void test_watch_pieces(void **state)
{
	size_t pieces[] = { 1, 7, 1000, 0 };
	for (size_t i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++) {
		struct step s = { .kind = STREAM, .body = WATCH_STREAM, .piece = pieces[i] };
		struct seen seen = { .ret = 0 };
		atomic_bool stop = false;
		int64_t compacted = -1;
		assert_int_equal(watch_with(&s, 1, &seen, &stop, &compacted, NULL), ETCD_E_UNAVAILABLE);
		assert_string_equal(seen.log, WATCH_SEEN);
		assert_int_equal(compacted, 0);
	}
}

/* The same without I/O: the parser fed in two pieces cut at every byte, and byte by byte. */
static void test_watch_parser_every_cut(void **state)
{
	size_t n = strlen(WATCH_STREAM);
	for (size_t cut = 0; cut <= n; cut++) {
		struct seen seen = { .ret = 0 };
		struct etcd_watch_parser *p = etcd_watch_parser_new(on_watch, &seen);
		assert_non_null(p);
		assert_int_equal(etcd_watch_parser_feed(p, WATCH_STREAM, cut), 0);
		assert_int_equal(etcd_watch_parser_feed(p, WATCH_STREAM + cut, n - cut), 0);
		assert_string_equal(seen.log, WATCH_SEEN);
		assert_true(etcd_watch_parser_created(p));
		etcd_watch_parser_free(p);
	}
	struct seen seen = { .ret = 0 };
	struct etcd_watch_parser *p = etcd_watch_parser_new(on_watch, &seen);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(etcd_watch_parser_feed(p, WATCH_STREAM + i, 1), 0);
	assert_string_equal(seen.log, WATCH_SEEN);
	etcd_watch_parser_free(p);
	/* a broken number, cut anywhere: json-c alone read "9-1" as 9 when a piece ended after the 9 */
	static const char broken[] = "{\"result\":{\"header\":{\"revision\":\"9\"},\"events\":[{\"kv\":"
	                             "{\"key\":\"YQ==\",\"mod_revision\":9-1}}]}}\n";
	for (size_t cut = 0; cut <= sizeof(broken) - 1; cut++) {
		struct seen none = { .ret = 0 };
		p = etcd_watch_parser_new(on_watch, &none);
		int rc = etcd_watch_parser_feed(p, broken, cut);
		if (rc == 0)
			rc = etcd_watch_parser_feed(p, broken + cut, sizeof(broken) - 1 - cut);
		if (rc != ETCD_E_PROTOCOL)
			fail_msg("cut at %zu: %d", cut, rc);
		assert_int_equal(none.calls, 0);
		assert_string_equal(etcd_watch_parser_error(p), "the watch stream is not JSON");
		etcd_watch_parser_free(p);
	}
	/* fn's non-zero value ends the stream, and stays its answer */
	struct seen stopper = { .ret = 42 };
	p = etcd_watch_parser_new(on_watch, &stopper);
	assert_int_equal(etcd_watch_parser_feed(p, WATCH_STREAM, n), 42);
	assert_int_equal(stopper.calls, 1);
	assert_int_equal(etcd_watch_parser_feed(p, WATCH_STREAM, n), 42);
	assert_int_equal(stopper.calls, 1);
	etcd_watch_parser_free(p);
}

/* Defence: watch_message and the strict stream tokener: garbage after good messages ends the watch
 * with ETCD_E_PROTOCOL, fn having seen only the messages before it, however the bytes are cut. */
static void test_watch_garbage(void **state)
{
	static const char *const bad[] = {
		"garbage\n",
		"/* a comment */\n",                                      /* not JSON: json-c's default reads it */
		"[1]\n",                                                  /* not an object */
		"{\"result\":[]}\n",                                      /* result not an object */
		"{\"result\":{\"events\":[]}}\n",                         /* no header */
		"{\"result\":{" WHDR("9") ",\"events\":{}}}\n",           /* events not an array */
		"{\"result\":{" WHDR("9") ",\"events\":[{\"kv\":{\"key\":\"L3Bk*\"}}]}}\n",
		"{\"result\":{" WHDR("9") ",\"events\":[{\"type\":\"EXPIRE\",\"kv\":{\"key\":\"YQ==\"}}]}}\n",
		"{\"result\":{" WHDR("9") ",\"events\":[{\"type\":5,\"kv\":{\"key\":\"YQ==\"}}]}}\n", /* not a PUT */
		"{\"result\":{" WHDR("9") ",\"events\":[{\"type\":\"DELETE\\u0000\",\"kv\":{\"key\":\"YQ==\"}}]}}\n",
		"{\"result\":{" WHDR("9") ",\"canceled\":\"no\"}}\n",
		"{\"result\":{" WHDR("9") ",\"events\":[{}]}}\n",
		"{\"no\":1}\n",
		"{\"result\":{" WHDR("9") ",\"events\":[{\"kv\":{\"key\":\"YQ==\",\"mod_revision\":9-1}}]}}\n",
		"17\n",                                                  /* a number where a message goes */
		"{]\n",
	};
	char stream[8192];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		for (size_t piece = 1; piece <= 1000; piece += 999) {
			snprintf(stream, sizeof(stream),
			         "{\"result\":{" WHDR("5") ",\"created\":true}}\n"
			         "{\"result\":{" WHDR("6") ",\"events\":[{\"kv\":{\"key\":\"L3BkL3g=\",\"mod_revision\":\"6\","
			         "\"value\":\"MQ==\"}}]}}\n%s"
			         "{\"result\":{" WHDR("7") ",\"events\":[{\"kv\":{\"key\":\"L3BkL3k=\",\"mod_revision\":\"7\","
			         "\"value\":\"MQ==\"}}]}}\n",
			         bad[i]);
			struct step s = { .kind = STREAM, .body = stream, .piece = piece };
			struct seen seen = { .ret = 0 };
			atomic_bool stop = false;
			int64_t compacted;
			int rc = watch_with(&s, 1, &seen, &stop, &compacted, NULL);
			if (rc != ETCD_E_PROTOCOL)
				fail_msg("%s (pieces of %zu): %d", bad[i], piece, rc);
			assert_string_equal(seen.log, "C5;P/pd/x=1@6;|");
		}
	}
}

/* Defence: watch_message's compact_revision check: a watch from a compacted revision is
 * ETCD_E_COMPACTED with *compacted the oldest revision kept (etcd 3.4's own messages), and a
 * cancelled watch is ETCD_E_SERVER, not a live one. */
static void test_watch_compacted(void **state)
{
	struct step s = { .kind = STREAM,
		          .body = "{\"result\":{" WHDR("8") ",\"created\":true}}\n"
		                  "{\"result\":{\"header\":{\"cluster_id\":\"15026016918487770221\",\"member_id\":"
		                  "\"16694209735470997472\",\"raft_term\":\"2\"},\"canceled\":true,\"compact_revision\":"
		                  "\"6\"}}\n" };
	struct seen seen = { .ret = 0 };
	atomic_bool stop = false;
	int64_t compacted = 0;
	assert_int_equal(watch_with(&s, 1, &seen, &stop, &compacted, NULL), ETCD_E_COMPACTED);
	assert_int_equal(compacted, 6);
	assert_string_equal(seen.log, "C8;");
	/* a cancel with a reason */
	struct step c = { .kind = STREAM,
		          .body = "{\"result\":{" WHDR("8") ",\"created\":true}}\n"
		                  "{\"result\":{" WHDR("8") ",\"canceled\":true,\"cancel_reason\":\"no\"}}\n" };
	struct seen seen2 = { .ret = 0 };
	assert_int_equal(watch_with(&c, 1, &seen2, &stop, &compacted, NULL), ETCD_E_SERVER);
	assert_int_equal(compacted, 0);
	/* "compact_revision" that is not a number */
	struct step b = { .kind = STREAM,
		          .body = "{\"result\":{" WHDR("8") ",\"canceled\":true,\"compact_revision\":\"6x\"}}\n" };
	struct seen seen3 = { .ret = 0 };
	assert_int_equal(watch_with(&b, 1, &seen3, &stop, &compacted, NULL), ETCD_E_PROTOCOL);
}

/* Defence: watch_progress checks *stop while the stream is silent: a member that sends created and
 * then nothing is left within about a second of stop (ETCD_E_STOPPED). */
static void test_watch_stop_silent(void **state)
{
	struct step s = { .kind = STREAM_SILENT, .body = "{\"result\":{" WHDR("5") ",\"created\":true}}\n" };
	struct seen seen = { .ret = 0 };
	atomic_bool stop = false;
	struct stopper st = { &stop, 500 };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, stop_later, &st), 0);
	int64_t compacted;
	uint64_t t0 = now_ms();
	assert_int_equal(watch_with(&s, 1, &seen, &stop, &compacted, NULL), ETCD_E_STOPPED);
	uint64_t took = now_ms() - t0;
	pthread_join(th, NULL);
	assert_string_equal(seen.log, "C5;");
	assert_true(took >= 450);
	assert_true(took < 500 + 2000);
	/* a member that never even answers the headers: the same */
	struct step stall = { .kind = STALL };
	atomic_store(&stop, false);
	assert_int_equal(pthread_create(&th, NULL, stop_later, &st), 0);
	struct seen none = { .ret = 0 };
	t0 = now_ms();
	assert_int_equal(watch_with(&stall, 1, &none, &stop, &compacted, NULL), ETCD_E_STOPPED);
	took = now_ms() - t0;
	pthread_join(th, NULL);
	assert_int_equal(none.calls, 0);
	assert_true(took < 500 + 2000);
}

/* Defence: the parser leaves out a string longer than ETCD_VALUE_MAX as it streams by (never
 * buffered): a single event of 96 MiB, valid JSON and base64 throughout, is handed over named by its
 * key with bad set, the stream goes on, and memory stays far below the event's size. It used to end
 * the stream (a message over the cap), and the watch came back to the same event for ever. */
static void test_watch_message_cap(void **state)
{
	struct step s = { .kind = HUGE_MESSAGE, .size = 96 * MIB };
	struct seen seen = { .ret = 0 };
	atomic_bool stop = false;
	int64_t compacted;
	struct fake *f;
	long before = maxrss_kib();
	assert_int_equal(watch_with(&s, 1, &seen, &stop, &compacted, &f), ETCD_E_UNAVAILABLE);
	long grown = maxrss_kib() - before;
	assert_string_equal(seen.log, "C1;Ba@2;|");
	/* KiB: at most ETCD_VALUE_MAX of it is held before the cut (a sanitizer's quarantine keeps the
	 * buffer's earlier sizes too), never the whole event, nor the stream */
	if (grown >= 192 * 1024)
		fail_msg("grew %ld KiB", grown);
	free(f);
	/* the watch asks etcd to fragment its responses */
}

/* A parser with limits (value_max, message_max) fed stream in pieces of piece bytes (0: whole).
 * @return the last feed's result; *seen what fn saw. */
static int parse_limited(const char *stream, size_t piece, size_t value_max, size_t message_max, struct seen *seen)
{
	struct etcd_watch_parser *p = etcd_watch_parser_new(on_watch, seen);
	assert_non_null(p);
	etcd_watch_parser_limits(p, value_max, message_max);
	size_t n = strlen(stream), step = piece ? piece : n;
	int rc = 0;
	for (size_t off = 0; off < n && rc == 0; off += step)
		rc = etcd_watch_parser_feed(p, stream + off, n - off < step ? n - off : step);
	etcd_watch_parser_free(p);
	return rc;
}

/* Defence: j_kv hands a key with a NUL (etcd's data, anyone's put) over with bad set instead of
 * refusing the message; the watch used to end there ("a watch message that is not etcd's") and
 * came back to it for ever, so no later change reached the node. */
static void test_watch_nul_key(void **state)
{
	static const char stream[] =
		"{\"result\":{" WHDR("5") ",\"created\":true}}\n"
		"{\"result\":{" WHDR("6") ",\"events\":[{\"kv\":{\"key\":\"YQBi\",\"mod_revision\":\"6\","
		"\"value\":\"MQ==\"}},{\"kv\":{\"key\":\"L3BkL3g=\",\"mod_revision\":\"6\",\"value\":\"MQ==\"}}]}}\n"
		"{\"result\":{" WHDR("7") ",\"events\":[{\"type\":\"DELETE\",\"kv\":{\"key\":\"YQBi\","
		"\"mod_revision\":\"7\"}}]}}\n"
		"{\"result\":{" WHDR("8") ",\"events\":[{\"kv\":{\"key\":\"L3BkL3k=\",\"mod_revision\":\"8\","
		"\"value\":\"MQ==\"}}]}}\n";
	for (size_t piece = 0; piece <= 7; piece += 7) {
		struct seen seen = { .ret = 0 };
		assert_int_equal(parse_limited(stream, piece, ETCD_VALUE_MAX, ETCD_MESSAGE_MAX, &seen), 0);
		assert_string_equal(seen.log, "C5;Ba0b@6;P/pd/x=1@6;|Ba0b@7;|P/pd/y=1@8;|");
	}
}

/* Defence: the parser's string cut (value_max) and message cap (message_max), with small limits: a
 * value over value_max is left out wherever the stream is cut (escapes and all), its key named; the
 * events around it are whole; a message still over message_max once cut is ETCD_E_TOOBIG. */
static void test_watch_value_cut(void **state)
{
	static const char stream[] =
		"{\"result\":{" WHDR("5") ",\"created\":true}}\n"
		"{\"result\":{" WHDR("6") ",\"events\":[{\"kv\":{\"key\":\"L3BkL3g=\",\"mod_revision\":\"6\","
		"\"value\":\"QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB\\u0041\\/QUFB\"}},{\"kv\":{\"key\":\"L3BkL3k=\","
		"\"mod_revision\":\"6\",\"value\":\"MQ==\"}}]}}\n"
		"{\"result\":{" WHDR("7") ",\"events\":[{\"kv\":{\"key\":\"L3BkL3o=\",\"mod_revision\":\"7\","
		"\"value\":\"MQ==\"}}]}}\n";
	size_t n = strlen(stream);
	for (size_t piece = 0; piece <= n; piece++) {
		struct seen seen = { .ret = 0 };
		int rc = parse_limited(stream, piece, 32, 4096, &seen);
		if (rc != 0 || strcmp(seen.log, "C5;B/pd/x@6;P/pd/y=1@6;|P/pd/z=1@7;|") != 0)
			fail_msg("pieces of %zu: %d %s", piece, rc, seen.log);
		if (piece == 0)
			piece = 0; /* then every size from 1 */
	}
	/* the same stream with room for the value: read as it is */
	struct seen whole = { .ret = 0 };
	assert_int_equal(parse_limited(stream, 0, 64, 4096, &whole), ETCD_E_PROTOCOL); /* "\/" etc: not base64 */
	/* a message over the cap once its long values are cut */
	struct seen big = { .ret = 0 };
	assert_int_equal(parse_limited(stream, 5, 32, 200, &big), ETCD_E_TOOBIG);
	assert_string_equal(big.log, "C5;");
}

/* Defence: fragments (etcd cuts a large response when asked to): fn gets whole revisions, as soon
 * as a later revision begins, never half a transaction; a response's last fragment hands over the
 * rest; one revision held across fragments past message_max is ETCD_E_TOOBIG. */
static void test_watch_fragments(void **state)
{
#define EV(key, rev) "{\"kv\":{\"key\":\"" key "\",\"mod_revision\":\"" rev "\",\"value\":\"MQ==\"}}"
	static const char stream[] =
		"{\"result\":{" WHDR("5") ",\"created\":true}}\n"
		"{\"result\":{" WHDR("9") ",\"fragment\":true,\"events\":[" EV("L3BkL2E=", "6") "," EV("L3BkL2I=", "7") "]}}\n"
		"{\"result\":{" WHDR("9") ",\"fragment\":true,\"events\":[" EV("L3BkL2M=", "7") "]}}\n"
		"{\"result\":{" WHDR("9") ",\"fragment\":true,\"events\":[" EV("L3BkL2Q=", "7") "," EV("L3BkL2U=", "8") "]}}\n"
		"{\"result\":{" WHDR("9") ",\"events\":[" EV("L3BkL2Y=", "8") "," EV("L3BkL2c=", "9") "]}}\n"
		"{\"result\":{" WHDR("10") ",\"events\":[" EV("L3BkL2g=", "10") "]}}\n";
	for (size_t piece = 0; piece <= 3; piece += 3) {
		struct seen seen = { .ret = 0 };
		assert_int_equal(parse_limited(stream, piece, ETCD_VALUE_MAX, ETCD_MESSAGE_MAX, &seen), 0);
		assert_string_equal(seen.log, "C5;P/pd/a=1@6;|P/pd/b=1@7;P/pd/c=1@7;P/pd/d=1@7;|"
		                              "P/pd/e=1@8;P/pd/f=1@8;P/pd/g=1@9;|P/pd/h=1@10;|");
	}
	/* one revision never ending, fragment after fragment */
	char flood[16384] = "{\"result\":{" WHDR("5") ",\"created\":true}}\n";
	for (int i = 0; i < 40; i++)
		strcat(flood, "{\"result\":{" WHDR("9") ",\"fragment\":true,\"events\":[" EV("L3BkL2E=", "6") "]}}\n");
	struct seen seen = { .ret = 0 };
	assert_int_equal(parse_limited(flood, 0, 64, 1024, &seen), ETCD_E_TOOBIG);
	assert_string_equal(seen.log, "C5;");
#undef EV
}

/* ---- (h) authentication ---- */

#define AUTH_OK(tok) "{" HDR ",\"token\":\"" tok "\"}"
#define BAD_TOKEN "{\"error\":\"etcdserver: invalid auth token\",\"message\":\"etcdserver: invalid auth token\",\"code\":16}"

/* Defence: call()/request(): with a user, the client authenticates first (/v3/auth/authenticate with
 * name and password), sends the token as Authorization, and when etcd says the token is invalid
 * (code 16) authenticates once more and retries once. */
static void test_auth_renew(void **state)
{
	struct step steps[] = {
		{ .kind = ANSWER, .status = 200, .body = AUTH_OK("tok1.1") },
		{ .kind = ANSWER, .status = 401, .body = BAD_TOKEN },
		{ .kind = ANSWER, .status = 200, .body = AUTH_OK("tok2.2") },
		{ .kind = ANSWER, .status = 200, .body = RANGE_OK },
	};
	struct fake *f = fake_start(steps, 4);
	const char *urls[] = { f->url };
	struct etcd *e = client(urls, 1, "root", "pw\"1", 0);
	struct etcd_range r;
	assert_int_equal(etcd_get(e, "/pd/", NULL, 0, 0, &r), 0);
	assert_int_equal(r.n, 2);
	etcd_range_free(&r);
	etcd_free(e);
	fake_end(f);
	assert_int_equal(f->nreq, 4);
	expect_req(f, 0, "/v3/auth/authenticate", "");
	assert_string_equal(f->body[0], "{\"name\":\"root\",\"password\":\"pw\\\"1\"}");
	expect_req(f, 1, "/v3/kv/range", "tok1.1");
	expect_req(f, 2, "/v3/auth/authenticate", "");
	expect_req(f, 3, "/v3/kv/range", "tok2.2");
	free(f);
}

/* Defence: the one retry: a member that refuses every token is ETCD_E_AUTH after one new token, not
 * a loop. */
static void test_auth_once(void **state)
{
	struct step steps[] = {
		{ .kind = ANSWER, .status = 200, .body = AUTH_OK("t1") },
		{ .kind = ANSWER, .status = 401, .body = BAD_TOKEN },
		{ .kind = ANSWER, .status = 200, .body = AUTH_OK("t2") },
		{ .kind = ANSWER, .status = 401, .body = BAD_TOKEN },
		{ .kind = ANSWER, .status = 200, .body = AUTH_OK("t3") },
		{ .kind = ANSWER, .status = 200, .body = RANGE_OK },
	};
	struct fake *f = fake_start(steps, 6);
	const char *urls[] = { f->url };
	struct etcd *e = client(urls, 1, "root", "pw", 0);
	struct etcd_range r;
	assert_int_equal(etcd_get(e, "/pd/", NULL, 0, 0, &r), ETCD_E_AUTH);
	etcd_free(e);
	fake_end(f);
	assert_int_equal(f->nreq, 4);
	free(f);
}

/* Defence: authenticate() refuses a token that would end the Authorization header (CR or LF in it,
 * or a NUL that would cut it), or none at all: ETCD_E_PROTOCOL, and no request carries it. */
static void test_auth_bad_token(void **state)
{
	static const char *const answers[] = {
		AUTH_OK("abc\\r\\nX-Injected: 1"),
		AUTH_OK("abc\\nX-Injected: 1"),
		AUTH_OK("abc\\rX"),
		AUTH_OK("abc\\u0000\\r\\nX-Injected: 1"),
		"{" HDR "}",
		"{" HDR ",\"token\":17}",
	};
	for (size_t i = 0; i < sizeof(answers) / sizeof(answers[0]); i++) {
		struct step steps[] = {
			{ .kind = ANSWER, .status = 200, .body = answers[i] },
			{ .kind = ANSWER, .status = 200, .body = RANGE_OK },
		};
		struct fake *f = fake_start(steps, 2);
		const char *urls[] = { f->url };
		struct etcd *e = client(urls, 1, "root", "pw", 0);
		struct etcd_range r;
		int rc = etcd_get(e, "/pd/", NULL, 0, 0, &r);
		if (rc != ETCD_E_PROTOCOL)
			fail_msg("%s: %d", answers[i], rc);
		etcd_free(e);
		shutdown(f->lfd, SHUT_RDWR);
		fake_end(f);
		assert_int_equal(f->nreq, 1);
		assert_string_equal(f->path[0], "/v3/auth/authenticate");
		free(f);
	}
}

/* Defence: etcd_watch's token renewal: etcd cancels a watch whose token it refuses (expired while
 * the handle sat idle) with "code = Unauthenticated" (etcd 3.4's own message); the watch
 * authenticates once more and is live with the new token. Before, this was ETCD_E_SERVER with the
 * dead token kept, and the mirror's loop retried with it for ever. */
static void test_watch_auth_renew(void **state)
{
	struct step steps[] = {
		{ .kind = ANSWER, .status = 200, .body = AUTH_OK("old") },
		{ .kind = STREAM,
		  .body = "{\"result\":{" WHDR("8") ",\"watch_id\":\"-1\",\"created\":true,\"canceled\":true,"
		          "\"cancel_reason\":\"rpc error: code = Unauthenticated desc = etcdserver: invalid auth "
		          "token\"}}\n" },
		{ .kind = ANSWER, .status = 200, .body = AUTH_OK("new") },
		{ .kind = STREAM, .body = "{\"result\":{" WHDR("8") ",\"created\":true}}\n" },
	};
	struct fake *f = fake_start(steps, 4);
	const char *urls[] = { f->url };
	struct etcd *e = client(urls, 1, "root", "pw", 0);
	struct seen seen = { .ret = 0 };
	atomic_bool stop = false;
	int64_t compacted;
	assert_int_equal(etcd_watch(e, "/pd/", NULL, 0, on_watch, &seen, &stop, &compacted), ETCD_E_UNAVAILABLE);
	assert_string_equal(seen.log, "C8;"); /* the cancelled one was not taken for live */
	etcd_free(e);
	fake_end(f);
	assert_int_equal(f->nreq, 4);
	expect_req(f, 1, "/v3/watch", "old");
	expect_req(f, 2, "/v3/auth/authenticate", "");
	expect_req(f, 3, "/v3/watch", "new");
	free(f);

	/* refused again with the new token: ETCD_E_AUTH, once */
	struct step twice[] = {
		{ .kind = ANSWER, .status = 200, .body = AUTH_OK("a") },
		{ .kind = STREAM, .body = "{\"result\":{" WHDR("8") ",\"canceled\":true,\"cancel_reason\":"
		                          "\"rpc error: code = PermissionDenied desc = etcdserver: permission denied\"}}\n" },
		{ .kind = ANSWER, .status = 200, .body = AUTH_OK("b") },
		{ .kind = STREAM, .body = "{\"error\":{\"grpc_code\":16,\"http_code\":401,\"message\":\"etcdserver: "
		                          "invalid auth token\",\"http_status\":\"Unauthorized\"}}\n" },
		{ .kind = ANSWER, .status = 200, .body = AUTH_OK("c") },
	};
	f = fake_start(twice, 5);
	urls[0] = f->url;
	e = client(urls, 1, "root", "pw", 0);
	struct seen seen2 = { .ret = 0 };
	assert_int_equal(etcd_watch(e, "/pd/", NULL, 0, on_watch, &seen2, &stop, &compacted), ETCD_E_AUTH);
	assert_int_equal(seen2.calls, 0);
	etcd_free(e);
	shutdown(f->lfd, SHUT_RDWR);
	fake_end(f);
	assert_int_equal(f->nreq, 4);
	free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_etcd_answers),
		cmocka_unit_test(test_txn_answers),
		cmocka_unit_test(test_base64),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_stall),
		cmocka_unit_test(test_refused_next_member),
		cmocka_unit_test(test_error_answers),
		cmocka_unit_test(test_watch_pieces),
		cmocka_unit_test(test_watch_parser_every_cut),
		cmocka_unit_test(test_watch_garbage),
		cmocka_unit_test(test_watch_compacted),
		cmocka_unit_test(test_watch_stop_silent),
		cmocka_unit_test(test_auth_renew),
		cmocka_unit_test(test_auth_once),
		cmocka_unit_test(test_auth_bad_token),
		cmocka_unit_test(test_watch_auth_renew),
		cmocka_unit_test(test_body_cap),
		cmocka_unit_test(test_watch_message_cap),
		cmocka_unit_test(test_watch_nul_key),
		cmocka_unit_test(test_watch_value_cut),
		cmocka_unit_test(test_watch_fragments),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
