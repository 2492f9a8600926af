/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of control/server.c (with control/client.c): verbs, replies, limits, deadlines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "control/client.h"
#include "control/server.h"

/* Generous: this runs on shared, loaded machines. */
#define WAIT_MS 15000

struct fixture {
	char dir[64];   /* temp dir */
	char path[128]; /* dir/run/control.sock: the parent does not exist yet */
	int stop[2];    /* the stop pipe */
	struct control *c;
	int calls; /* of the handlers, from the server thread; read after the replies */
};

/* Log lines captured instead of stderr (the server threads write them). */
static int log_errors;
static void test_log(int level, const char *msg)
{
	if (level == CONTROL_LOG_ERR)
		__atomic_add_fetch(&log_errors, 1, __ATOMIC_SEQ_CST);
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* "echo": the words back, one a line, and a note. */
static int on_echo(void *arg, int argc, char **argv, FILE *out, FILE *err)
{
	struct fixture *f = arg;
	__atomic_add_fetch(&f->calls, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < argc; i++)
		fprintf(out, "%s\n", argv[i]);
	const char *v = control_arg(argc, argv, "note");
	if (v != NULL)
		fprintf(err, "note: %s\n", v);
	return 0;
}

/* "fail": two error lines, and a body that must not be sent. */
static int on_fail(void *arg, int argc, char **argv, FILE *out, FILE *err)
{
	fputs("secret body\n", out);
	fputs("it broke\nsecond line\n", err);
	return 1;
}

/* "big": a 300 KB body, more than a unix socket's buffer takes, as "stats json" is on a big plan. */
static int on_big(void *arg, int argc, char **argv, FILE *out, FILE *err)
{
	struct fixture *f = arg;
	for (int i = 0; i < 300 * 1024 / 64; i++)
		fprintf(out, "%063d\n", i);
	__atomic_add_fetch(&f->calls, 1, __ATOMIC_SEQ_CST);
	return 0;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "%s", "/tmp/test_control_server.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/run/control.sock", f->dir);
	assert_int_equal(pipe2(f->stop, O_CLOEXEC), 0);
	control_set_log(test_log);
	f->c = control_new(f->path, f->stop[0]);
	assert_non_null(f->c);
	assert_int_equal(control_register(f->c, "echo", on_echo, f), 0);
	assert_int_equal(control_register(f->c, "fail", on_fail, f), 0);
	assert_int_equal(control_register(f->c, "big", on_big, f), 0);
	assert_int_equal(control_start(f->c), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(write(f->stop[1], "x", 1), 1);
	control_free(f->c);
	struct stat st;
	assert_int_not_equal(lstat(f->path, &st), 0); /* control_free unlinked the socket */
	close(f->stop[0]);
	close(f->stop[1]);
	char run[160];
	snprintf(run, sizeof(run), "%s/run", f->dir);
	rmdir(run);
	assert_int_equal(rmdir(f->dir), 0);
	free(f);
	return 0;
}

static int connect_raw(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* Read until EOF (or a reset after the reply) within timeout_ms. @return the bytes, NUL-terminated. */
static char *read_all(int fd, int timeout_ms, size_t *lenout)
{
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	assert_non_null(buf);
	int64_t end = now_ms() + timeout_ms;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int left = (int)(end - now_ms());
		assert_true(left > 0);
		if (poll(&p, 1, left) <= 0)
			continue;
		ssize_t n = recv(fd, buf + len, cap - 1 - len, 0);
		if (n <= 0)
			break;
		len += (size_t)n;
		assert_true(len < cap - 1);
	}
	buf[len] = '\0';
	if (lenout != NULL)
		*lenout = len;
	return buf;
}

/* Send raw bytes, optionally shut down writing, read the whole reply. */
static char *raw_exchange(const char *path, const char *req, size_t len, bool shut)
{
	int fd = connect_raw(path);
	size_t off = 0;
	while (off < len) {
		ssize_t n = send(fd, req + off, len - off, MSG_NOSIGNAL);
		if (n <= 0)
			break; /* the server may have answered and closed already */
		off += (size_t)n;
	}
	if (shut)
		shutdown(fd, SHUT_WR);
	char *reply = read_all(fd, WAIT_MS, NULL);
	close(fd);
	return reply;
}

static void test_normal_request(void **state)
{
	struct fixture *f = *state;
	char *body = NULL, msg[1024];
	size_t len = 0;
	int rc = control_request(f->path, "echo a\tb  note=hi", WAIT_MS, &body, &len, msg, sizeof(msg));
	assert_int_equal(rc, 0);
	assert_string_equal(msg, "");
	/* Notes first, then the body. */
	assert_string_equal(body, "note: hi\necho\na\nb\nnote=hi\n");
	assert_int_equal(len, strlen(body));
	free(body);
	assert_int_equal(__atomic_load_n(&f->calls, __ATOMIC_SEQ_CST), 1);

	/* The socket 0660 in a new 0750 directory. */
	struct stat st;
	assert_int_equal(lstat(f->path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0660);
	char run[160];
	snprintf(run, sizeof(run), "%s/run", f->dir);
	assert_int_equal(stat(run, &st), 0);
	mode_t mask = umask(0);
	umask(mask);
	assert_int_equal(st.st_mode & 0777, 0750 & ~mask);
}

static void test_raw_replies(void **state)
{
	struct fixture *f = *state;
	/* CRLF, as from a terminal. */
	char *r = raw_exchange(f->path, "echo x\r\n", 8, false);
	assert_string_equal(r, "OK\necho\nx\n");
	free(r);
	/* No newline, then EOF: still a request. */
	r = raw_exchange(f->path, "echo y", 6, true);
	assert_string_equal(r, "OK\necho\ny\n");
	free(r);
	/* Bytes after the request line are ignored. */
	r = raw_exchange(f->path, "echo z\nfail\n", 12, false);
	assert_string_equal(r, "OK\necho\nz\n");
	free(r);
	/* A blank line. */
	r = raw_exchange(f->path, "\n", 1, false);
	assert_string_equal(r, "ERR unknown request ''\nunknown request ''\n");
	free(r);
	/* A NUL byte. */
	r = raw_exchange(f->path, "ec\0ho\n", 6, false);
	assert_true(strncmp(r, "ERR malformed request", 21) == 0);
	free(r);
	/* Connect and leave: nothing to answer, and the server goes on. */
	close(connect_raw(f->path));
	r = raw_exchange(f->path, "echo w\n", 7, false);
	assert_string_equal(r, "OK\necho\nw\n");
	free(r);
}

static void test_errors(void **state)
{
	struct fixture *f = *state;
	char *body = NULL, msg[1024];
	size_t len = 0;
	int rc = control_request(f->path, "frobnicate now", WAIT_MS, &body, &len, msg, sizeof(msg));
	assert_int_equal(rc, CONTROL_E_REMOTE);
	assert_string_equal(msg, "unknown request 'frobnicate'");
	assert_string_equal(body, "unknown request 'frobnicate'\n");
	free(body);

	rc = control_request(f->path, "fail", WAIT_MS, &body, &len, msg, sizeof(msg));
	assert_int_equal(rc, CONTROL_E_REMOTE);
	assert_string_equal(msg, "it broke");
	assert_string_equal(body, "it broke\nsecond line\n"); /* not the handler's body */
	free(body);

	char words[128] = "echo";
	for (int i = 1; i <= CONTROL_MAX_WORDS; i++)
		strcat(words, " w");
	rc = control_request(f->path, words, WAIT_MS, &body, &len, msg, sizeof(msg));
	assert_int_equal(rc, CONTROL_E_REMOTE);
	assert_string_equal(msg, "request has more than 16 words");
	free(body);

	/* The client refuses what the protocol does not allow, before connecting. */
	rc = control_request(f->path, "echo\nfail", WAIT_MS, &body, &len, msg, sizeof(msg));
	assert_int_equal(rc, CONTROL_E_REQUEST);
	assert_null(body);
	rc = control_request(f->path, "", WAIT_MS, &body, &len, msg, sizeof(msg));
	assert_int_equal(rc, CONTROL_E_REQUEST);
	assert_null(body);
}

static void test_overlong_request(void **state)
{
	struct fixture *f = *state;
	size_t n = CONTROL_MAX_REQUEST + 1000;
	char *req = malloc(n);
	assert_non_null(req);
	memcpy(req, "echo ", 5);
	memset(req + 5, 'a', n - 5);
	req[n - 1] = '\n';
	char *r = raw_exchange(f->path, req, n, false);
	assert_string_equal(r, "ERR request longer than 4096 bytes\nrequest longer than 4096 bytes\n");
	free(r);
	/* The client will not send it. */
	req[n - 1] = '\0';
	char *body = NULL, msg[256];
	assert_int_equal(control_request(f->path, req, WAIT_MS, &body, NULL, msg, sizeof(msg)),
	                 CONTROL_E_TOO_LONG);
	free(req);
	assert_int_equal(__atomic_load_n(&f->calls, __ATOMIC_SEQ_CST), 0);
}

static void test_silent_client(void **state)
{
	struct fixture *f = *state;
	/* A client that connects and says nothing. */
	int64_t t0 = now_ms();
	int silent = connect_raw(f->path);
	/* Half a request, then silence. */
	int half = connect_raw(f->path);
	assert_int_equal(send(half, "ech", 3, MSG_NOSIGNAL), 3);

	/* Another client is served meanwhile, well before the silent ones' deadline. */
	char *body = NULL, msg[256];
	int rc = control_request(f->path, "echo b", WAIT_MS, &body, NULL, msg, sizeof(msg));
	int64_t took = now_ms() - t0;
	assert_int_equal(rc, 0);
	assert_string_equal(body, "echo\nb\n");
	free(body);
	if (took >= CONTROL_TIMEOUT_MS - 1000)
		fail_msg("the second client waited %lld ms behind a silent one", (long long)took);

	/* The silent ones are cut off at their deadline: EOF, no reply. */
	size_t len = 99;
	char *r = read_all(silent, WAIT_MS, &len);
	int64_t cut = now_ms() - t0;
	assert_int_equal(len, 0);
	free(r);
	r = read_all(half, WAIT_MS, &len);
	assert_int_equal(len, 0);
	free(r);
	close(silent);
	close(half);
	if (cut < CONTROL_TIMEOUT_MS - 500 || cut > CONTROL_TIMEOUT_MS + 5000)
		fail_msg("a silent client was cut after %lld ms, want about %d", (long long)cut,
		         CONTROL_TIMEOUT_MS);
}

static void test_many_silent_clients(void **state)
{
	struct fixture *f = *state;
	/* More silent clients than the server has slots: the operator still gets through at once. */
	enum { SILENT = 100 };
	int fds[SILENT];
	for (int i = 0; i < SILENT; i++)
		fds[i] = connect_raw(f->path);
	usleep(200 * 1000); /* let the server accept them all */
	int64_t t0 = now_ms();
	char *body = NULL, msg[256];
	int rc = control_request(f->path, "echo op", WAIT_MS, &body, NULL, msg, sizeof(msg));
	int64_t took = now_ms() - t0;
	assert_int_equal(rc, 0);
	assert_string_equal(body, "echo\nop\n");
	free(body);
	if (took >= 1000)
		fail_msg("the operator's request waited %lld ms behind %d silent clients", (long long)took, SILENT);
	for (int i = 0; i < SILENT; i++)
		close(fds[i]);
}

/*
 * Issue 32, defect 10: 32 clients ask for a large reply and never read it.
 * Every slot was then writing a reply the socket could not take, and the
 * operator's request was closed at accept (a broken pipe for 5 s, until
 * their deadlines). Now the client that stopped reading longest is cut for
 * the newcomer, every time.
 */
static void test_non_reading_clients(void **state)
{
	struct fixture *f = *state;
	enum { HOGS = 32 };
	int fds[HOGS];
	for (int i = 0; i < HOGS; i++) {
		fds[i] = connect_raw(f->path);
		assert_int_equal(send(fds[i], "big\n", 4, MSG_NOSIGNAL), 4);
	}
	/* every reply built and stuck in a full socket buffer */
	int64_t end = now_ms() + WAIT_MS;
	while (__atomic_load_n(&f->calls, __ATOMIC_SEQ_CST) < HOGS && now_ms() < end)
		usleep(10 * 1000);
	assert_int_equal(__atomic_load_n(&f->calls, __ATOMIC_SEQ_CST), HOGS);
	usleep(100 * 1000);
	for (int k = 0; k < 3; k++) {
		int64_t t0 = now_ms();
		char *body = NULL, msg[256] = "";
		int rc = control_request(f->path, "echo op", WAIT_MS, &body, NULL, msg, sizeof(msg));
		int64_t took = now_ms() - t0;
		if (rc != 0)
			fail_msg("request %d beside %d clients that do not read: rc %d (%s)", k, HOGS, rc, msg);
		assert_string_equal(body, "echo\nop\n");
		free(body);
		if (took >= 1000)
			fail_msg("the operator's request waited %lld ms behind %d clients that do not read", (long long)took,
			         HOGS);
	}
	for (int i = 0; i < HOGS; i++)
		close(fds[i]);
}

static void test_register(void **state)
{
	struct fixture *f = *state;
	/* Started: too late to register. */
	assert_int_equal(control_register(f->c, "more", on_echo, f), -EBUSY);

	int stop[2];
	assert_int_equal(pipe2(stop, O_CLOEXEC), 0);
	char path[96];
	snprintf(path, sizeof(path), "%s/reg.sock", f->dir);
	struct control *c = control_new(path, stop[0]);
	assert_non_null(c);
	assert_int_equal(control_register(c, "echo", on_echo, f), 0);
	assert_int_equal(control_register(c, "echo", on_fail, f), -EEXIST);
	assert_int_equal(control_register(c, "", on_echo, f), -EINVAL);
	assert_int_equal(control_register(c, "two words", on_echo, f), -EINVAL);
	assert_int_equal(control_register(c, "tab\there", on_echo, f), -EINVAL);
	/* Never started: free without stopping. */
	control_free(c);
	struct stat st;
	assert_int_not_equal(lstat(path, &st), 0);
	close(stop[0]);
	close(stop[1]);
}

static void test_socket_path(void **state)
{
	struct fixture *f = *state;
	int stop[2];
	assert_int_equal(pipe2(stop, O_CLOEXEC), 0);

	/* A live server on the path: refused, and it keeps serving. */
	int errors = __atomic_load_n(&log_errors, __ATOMIC_SEQ_CST);
	assert_null(control_new(f->path, stop[0]));
	assert_true(__atomic_load_n(&log_errors, __ATOMIC_SEQ_CST) > errors);
	char *body = NULL, msg[256];
	assert_int_equal(control_request(f->path, "echo", WAIT_MS, &body, NULL, msg, sizeof(msg)), 0);
	free(body);

	/* A stale socket (bound, nobody listening): replaced. */
	char path[96];
	snprintf(path, sizeof(path), "%s/stale.sock", f->dir);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	struct control *c = control_new(path, stop[0]);
	assert_non_null(c);
	control_free(c);

	/* A regular file: refused and left alone. */
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_null(control_new(path, stop[0]));
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	unlink(path);

	/* A path too long for sun_path, and a missing stop descriptor. */
	char longp[200];
	memset(longp, 'x', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = '\0';
	assert_null(control_new(longp, stop[0]));
	assert_null(control_new(path, -1));
	close(stop[0]);
	close(stop[1]);
}

static void test_stop_with_clients(void **state)
{
	struct fixture *f = *state;
	/* Clients still connected when the daemon stops: stop does not wait for them. */
	int a = connect_raw(f->path);
	int b = connect_raw(f->path);
	usleep(100 * 1000); /* let the server accept them */
	int64_t t0 = now_ms();
	assert_int_equal(write(f->stop[1], "x", 1), 1);
	control_stop(f->c);
	int64_t took = now_ms() - t0;
	if (took > 3000)
		fail_msg("control_stop took %lld ms", (long long)took);
	size_t len = 99;
	char *r = read_all(a, WAIT_MS, &len);
	assert_int_equal(len, 0);
	free(r);
	close(a);
	close(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_normal_request, setup, teardown),
		cmocka_unit_test_setup_teardown(test_raw_replies, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overlong_request, setup, teardown),
		cmocka_unit_test_setup_teardown(test_silent_client, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_silent_clients, setup, teardown),
		cmocka_unit_test_setup_teardown(test_non_reading_clients, setup, teardown),
		cmocka_unit_test_setup_teardown(test_register, setup, teardown),
		cmocka_unit_test_setup_teardown(test_socket_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_with_clients, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
