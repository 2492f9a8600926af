/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of control/proto.c: request lines and words, key=value, reply framing, status lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/proto.h"

/* Report a failing row and count it; each test fails at the end if any row did. */
#define ROW_CHECK(failures, cond, ...)                                                             \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			print_error(__VA_ARGS__);                                                  \
			print_error("\n");                                                         \
			(failures)++;                                                              \
		}                                                                                  \
	} while (0)

/* Byte strings with NULs inside: the length is given, not strlen. */
#define BYTES(s) s, sizeof(s) - 1

/* ---- control_split ---- */

struct split_row {
	const char *line;
	int max;
	int rc;            /* argc or CONTROL_E_WORDS */
	const char *words; /* the words joined by "|" */
};

static const struct split_row split_rows[] = {
	{ "stats", 16, 1, "stats" },
	{ "stats json", 16, 2, "stats|json" },
	{ "cache flush name=example.com. partition=nanjing", 16, 4,
	  "cache|flush|name=example.com.|partition=nanjing" },
	{ "  stats   json  ", 16, 2, "stats|json" },
	{ "\tstats\t\tjson\t", 16, 2, "stats|json" },
	{ "stats \t json", 16, 2, "stats|json" },
	{ "", 16, 0, "" },
	{ "   ", 16, 0, "" },
	{ "\t \t", 16, 0, "" },
	{ "a b c", 3, 3, "a|b|c" },
	{ "a b c d", 3, CONTROL_E_WORDS, NULL },
	{ "a b c   ", 3, 3, "a|b|c" },
	{ "a", 0, CONTROL_E_WORDS, NULL },
	{ "", 0, 0, "" },
	/* Only spaces and tabs separate: other bytes are part of a word. */
	{ "a\rb", 16, 1, "a\rb" },
	{ "a\vb", 16, 1, "a\vb" },
	{ "a=b=c", 16, 1, "a=b=c" },
	{ "x x x x x x x x x x x x x x x x", 16, 16,
	  "x|x|x|x|x|x|x|x|x|x|x|x|x|x|x|x" },
	{ "x x x x x x x x x x x x x x x x x", 16, CONTROL_E_WORDS, NULL },
};

static void test_split_table(void **state)
{
	int failures = 0;
	for (size_t i = 0; i < sizeof(split_rows) / sizeof(split_rows[0]); i++) {
		const struct split_row *r = &split_rows[i];
		char line[256];
		snprintf(line, sizeof(line), "%s", r->line);
		char *argv[32];
		memset(argv, 0xa5, sizeof(argv));
		int rc = control_split(line, argv, r->max);
		ROW_CHECK(failures, rc == r->rc, "split '%s' max %d: rc %d, want %d", r->line, r->max,
		          rc, r->rc);
		if (rc != r->rc || rc < 0)
			continue;
		ROW_CHECK(failures, argv[rc] == NULL, "split '%s': argv[argc] is not NULL", r->line);
		char joined[256] = "";
		size_t n = 0;
		for (int k = 0; k < rc; k++)
			n += (size_t)snprintf(joined + n, sizeof(joined) - n, "%s%s", k ? "|" : "",
			                      argv[k]);
		ROW_CHECK(failures, strcmp(joined, r->words) == 0, "split '%s': words '%s', want '%s'",
		          r->line, joined, r->words);
	}
	assert_int_equal(failures, 0);
}

/* ---- control_arg ---- */

struct arg_row {
	const char *line;
	const char *key;
	const char *value; /* NULL: no such key */
};

static const struct arg_row arg_rows[] = {
	{ "cache flush name=example.com. partition=nanjing", "name", "example.com." },
	{ "cache flush name=example.com. partition=nanjing", "partition", "nanjing" },
	{ "cache flush partition=nanjing", "name", NULL },
	{ "cache flush name=", "name", "" },
	{ "cache flush name", "name", NULL },      /* a bare word is no option */
	{ "cache flush names=x", "name", NULL },   /* the key is whole, not a prefix */
	{ "cache flush nam=x", "name", NULL },
	{ "cache flush name=a name=b", "name", "a" }, /* the first wins */
	{ "cache flush name=a=b", "name", "a=b" },
	{ "cache flush NAME=x", "name", NULL },    /* keys are case-sensitive */
	{ "", "name", NULL },
};

static void test_arg_table(void **state)
{
	int failures = 0;
	for (size_t i = 0; i < sizeof(arg_rows) / sizeof(arg_rows[0]); i++) {
		const struct arg_row *r = &arg_rows[i];
		char line[256];
		snprintf(line, sizeof(line), "%s", r->line);
		char *argv[CONTROL_MAX_WORDS + 1];
		int argc = control_split(line, argv, CONTROL_MAX_WORDS);
		assert_true(argc >= 0);
		const char *v = control_arg(argc, argv, r->key);
		if (r->value == NULL)
			ROW_CHECK(failures, v == NULL, "arg '%s' in '%s': '%s', want none", r->key,
			          r->line, v);
		else
			ROW_CHECK(failures, v != NULL && strcmp(v, r->value) == 0,
			          "arg '%s' in '%s': '%s', want '%s'", r->key, r->line, v ? v : "(none)",
			          r->value);
	}
	assert_int_equal(failures, 0);
}

/* ---- control_request_scan, control_request_check ---- */

struct scan_row {
	const char *buf;
	size_t len;
	bool eof;
	int rc;
	size_t linelen; /* for rc 1 */
	const char *msg;
};

static const struct scan_row scan_rows[] = {
	{ BYTES("stats\n"), false, 1, 5, "a request" },
	{ BYTES("stats\r\n"), false, 1, 5, "CRLF: the \\r is dropped" },
	{ BYTES("stats\n\n"), false, 1, 5, "the first line" },
	{ BYTES("stats\nreload\n"), false, 1, 5, "bytes after the line are not looked at" },
	{ BYTES("\n"), false, 1, 0, "a blank line (the server answers: unknown request '')" },
	{ BYTES("\r\n"), false, 1, 0, "only a \\r" },
	{ BYTES("stats"), false, 0, 0, "no newline yet: more bytes needed" },
	{ BYTES(""), false, 0, 0, "nothing yet" },
	{ BYTES("stats"), true, 1, 5, "at EOF an unterminated line is the request" },
	{ BYTES("stats\r"), true, 1, 5, "at EOF, a trailing \\r" },
	{ BYTES(""), true, CONTROL_E_REQUEST, 0, "EOF before any byte" },
	{ BYTES("st\0ats\n"), false, CONTROL_E_REQUEST, 0, "a NUL byte in the line" },
	{ BYTES("\0\n"), false, CONTROL_E_REQUEST, 0, "only a NUL byte" },
	{ BYTES("stats\0"), true, CONTROL_E_REQUEST, 0, "a NUL at EOF" },
	{ BYTES("stats\n\0"), false, 1, 5, "a NUL after the line is not looked at" },
	{ BYTES("st\0ats"), false, 0, 0, "a NUL before the newline came: not decided yet" },
};

static void test_request_scan_table(void **state)
{
	int failures = 0;
	for (size_t i = 0; i < sizeof(scan_rows) / sizeof(scan_rows[0]); i++) {
		const struct scan_row *r = &scan_rows[i];
		size_t linelen = 9999;
		int rc = control_request_scan(r->buf, r->len, r->eof, &linelen);
		ROW_CHECK(failures, rc == r->rc, "scan row %zu (%s): rc %d, want %d", i, r->msg, rc,
		          r->rc);
		if (rc == 1)
			ROW_CHECK(failures, linelen == r->linelen, "scan row %zu (%s): linelen %zu, want %zu",
			          i, r->msg, linelen, r->linelen);
	}
	assert_int_equal(failures, 0);
}

static void test_request_limits(void **state)
{
	char *buf = malloc(CONTROL_MAX_REQUEST + 100);
	assert_non_null(buf);
	size_t linelen = 0;
	/* The longest request: CONTROL_MAX_REQUEST bytes with its "\n". */
	memset(buf, 'a', CONTROL_MAX_REQUEST + 100);
	buf[CONTROL_MAX_REQUEST - 1] = '\n';
	assert_int_equal(control_request_scan(buf, CONTROL_MAX_REQUEST, false, &linelen), 1);
	assert_int_equal(linelen, CONTROL_MAX_REQUEST - 1);
	/* One byte more and no "\n" within the limit: too long, whatever follows. */
	buf[CONTROL_MAX_REQUEST - 1] = 'a';
	buf[CONTROL_MAX_REQUEST] = '\n';
	assert_int_equal(control_request_scan(buf, CONTROL_MAX_REQUEST, false, &linelen),
	                 CONTROL_E_TOO_LONG);
	assert_int_equal(control_request_scan(buf, CONTROL_MAX_REQUEST + 1, false, &linelen),
	                 CONTROL_E_TOO_LONG);
	assert_int_equal(control_request_scan(buf, CONTROL_MAX_REQUEST + 100, true, &linelen),
	                 CONTROL_E_TOO_LONG);
	assert_int_equal(control_request_scan(buf, CONTROL_MAX_REQUEST - 1, false, &linelen), 0);

	/* control_request_check: the same limit from the client's side, without the "\n". */
	buf[CONTROL_MAX_REQUEST - 1] = '\0';
	assert_int_equal(control_request_check(buf), 0);
	buf[CONTROL_MAX_REQUEST - 1] = 'a';
	buf[CONTROL_MAX_REQUEST] = '\0';
	assert_int_equal(control_request_check(buf), CONTROL_E_TOO_LONG);
	free(buf);
	assert_int_equal(control_request_check("stats"), 0);
	assert_int_equal(control_request_check("cache flush name=x."), 0);
	assert_int_equal(control_request_check(""), CONTROL_E_REQUEST);
	assert_int_equal(control_request_check("stats\n"), CONTROL_E_REQUEST);
	assert_int_equal(control_request_check("stats\nreload"), CONTROL_E_REQUEST);
}

/* ---- control_status_parse ---- */

struct status_row {
	const char *reply;
	size_t len;
	int rc;
	size_t body;     /* offset of the body (0: no status line) */
	const char *msg; /* for CONTROL_E_REMOTE */
	const char *what;
};

static const struct status_row status_rows[] = {
	{ BYTES("OK\n"), 0, 3, NULL, "OK, empty body" },
	{ BYTES("OK\nqueries 42\n"), 0, 3, NULL, "OK with a body" },
	{ BYTES("OK\r\nbody"), 0, 4, NULL, "OK with CRLF" },
	{ BYTES("OK\n\0\0"), 0, 3, NULL, "NUL bytes in the body are the body's business" },
	{ BYTES("ERR config has errors\nline 1\nline 2\n"), CONTROL_E_REMOTE, 22, "config has errors",
	  "ERR with a message" },
	{ BYTES("ERR\n"), CONTROL_E_REMOTE, 4, "", "ERR without a message" },
	{ BYTES("ERR \n"), CONTROL_E_REMOTE, 5, "", "ERR and a space" },
	{ BYTES("ERR\r\n"), CONTROL_E_REMOTE, 5, "", "bare ERR with CRLF" },
	{ BYTES("ERR x\r\n"), CONTROL_E_REMOTE, 7, "x", "ERR with CRLF" },
	{ BYTES("ERR  two spaces\n"), CONTROL_E_REMOTE, 16, " two spaces", "the message starts after one space" },
	/* hostile */
	{ BYTES(""), CONTROL_E_PROTO, 0, NULL, "nothing" },
	{ BYTES("OK"), CONTROL_E_PROTO, 0, NULL, "no newline" },
	{ BYTES("ERR config has errors"), CONTROL_E_PROTO, 0, NULL, "ERR, no newline" },
	{ BYTES("HELLO\nwhat\n"), CONTROL_E_PROTO, 6, NULL, "not a status" },
	{ BYTES("\n"), CONTROL_E_PROTO, 1, NULL, "an empty status line" },
	{ BYTES("ok\n"), CONTROL_E_PROTO, 3, NULL, "lower case" },
	{ BYTES("OK \n"), CONTROL_E_PROTO, 4, NULL, "OK and a space" },
	{ BYTES("OKAY\n"), CONTROL_E_PROTO, 5, NULL, "OK as a prefix" },
	{ BYTES(" OK\n"), CONTROL_E_PROTO, 4, NULL, "a leading space" },
	{ BYTES("ERRX\n"), CONTROL_E_PROTO, 5, NULL, "ERR as a prefix" },
	{ BYTES("ERR\tx\n"), CONTROL_E_PROTO, 6, NULL, "ERR and a tab" },
	{ BYTES("ER\n"), CONTROL_E_PROTO, 3, NULL, "half an ERR" },
	{ BYTES("OK\0\n"), CONTROL_E_PROTO, 4, NULL, "a NUL after OK" },
	{ BYTES("O\0K\n"), CONTROL_E_PROTO, 4, NULL, "a NUL inside OK" },
	{ BYTES("\0OK\n"), CONTROL_E_PROTO, 4, NULL, "a NUL before OK" },
	{ BYTES("ERR bad\0news\n"), CONTROL_E_PROTO, 13, NULL, "a NUL in the message" },
	{ BYTES("\r\n"), CONTROL_E_PROTO, 2, NULL, "only CRLF" },
	{ BYTES("OK\r\r\n"), CONTROL_E_PROTO, 5, NULL, "two CRs" },
};

static void test_status_table(void **state)
{
	int failures = 0;
	for (size_t i = 0; i < sizeof(status_rows) / sizeof(status_rows[0]); i++) {
		const struct status_row *r = &status_rows[i];
		/* An exact-size copy so an over-read shows under ASan. */
		char *reply = malloc(r->len ? r->len : 1);
		assert_non_null(reply);
		memcpy(reply, r->reply, r->len);
		struct control_status st;
		int rc = control_status_parse(reply, r->len, &st);
		ROW_CHECK(failures, rc == r->rc, "status row %zu (%s): rc %d, want %d", i, r->what, rc,
		          r->rc);
		ROW_CHECK(failures, st.body == r->body, "status row %zu (%s): body at %zu, want %zu", i,
		          r->what, st.body, r->body);
		ROW_CHECK(failures, st.body == 0 ? st.linelen == 0 : st.linelen == st.body - 1,
		          "status row %zu (%s): linelen %zu with body at %zu", i, r->what, st.linelen,
		          st.body);
		if (r->rc == CONTROL_E_REMOTE && rc == r->rc)
			ROW_CHECK(failures,
			          st.msg != NULL && st.msglen == strlen(r->msg) &&
			                  memcmp(st.msg, r->msg, st.msglen) == 0,
			          "status row %zu (%s): message '%.*s', want '%s'", i, r->what,
			          (int)st.msglen, st.msg ? st.msg : "", r->msg);
		free(reply);
	}
	assert_int_equal(failures, 0);
}

static void test_status_overlong(void **state)
{
	size_t n = CONTROL_MAX_STATUS + 10;
	char *reply = malloc(n);
	assert_non_null(reply);
	struct control_status st;
	/* The longest status line: CONTROL_MAX_STATUS bytes with its "\n". */
	memcpy(reply, "ERR ", 4);
	memset(reply + 4, 'm', n - 4);
	reply[CONTROL_MAX_STATUS - 1] = '\n';
	assert_int_equal(control_status_parse(reply, n, &st), CONTROL_E_REMOTE);
	assert_int_equal(st.msglen, CONTROL_MAX_STATUS - 5);
	assert_int_equal(st.body, CONTROL_MAX_STATUS);
	/* One byte longer: no status line, even with a "\n" later. */
	reply[CONTROL_MAX_STATUS - 1] = 'm';
	reply[CONTROL_MAX_STATUS] = '\n';
	assert_int_equal(control_status_parse(reply, n, &st), CONTROL_E_PROTO);
	assert_int_equal(st.linelen, 0);
	assert_int_equal(st.body, 0);
	/* A long reply without any "\n". */
	memset(reply, 'O', n);
	assert_int_equal(control_status_parse(reply, n, &st), CONTROL_E_PROTO);
	assert_int_equal(st.body, 0);
	free(reply);
}

/* ---- control_reply_write, and the round trip through control_status_parse ---- */

struct reply_row {
	int status;
	const char *body;
	const char *errs;
	const char *want;
	const char *what;
};

static const struct reply_row reply_rows[] = {
	{ 0, "queries 42\n", "", "OK\nqueries 42\n", "OK with a body" },
	{ 0, "", "", "OK\n", "OK, nothing else" },
	{ 0, "reloaded\n", "warning: x\n", "OK\nwarning: x\nreloaded\n", "notes before the body" },
	{ 0, "reloaded\n", "warning: x", "OK\nwarning: x\nreloaded\n", "notes get their newline" },
	{ 1, "ignored\n", "config has errors\nfile:3:5: error\n",
	  "ERR config has errors\nconfig has errors\nfile:3:5: error\n", "ERR: the first line, then all" },
	{ 1, "", "unknown request 'x'", "ERR unknown request 'x'\nunknown request 'x'\n",
	  "the error gets its newline" },
	{ 1, "", "", "ERR failed\n", "ERR without errors" },
	{ -5, "", "\nsecond\n", "ERR failed\n\nsecond\n", "an empty first line" },
	{ 1, "", "bad\r\nx\n", "ERR bad\nbad\r\nx\n", "a CR is not in the message" },
	{ 1, "", "x\r\r\n", "ERR x\nx\r\r\n", "nor are several" },
	{ 1, "", "\r\r", "ERR failed\n\r\r\n", "a line of CRs is empty" },
};

static char *format_reply(int status, const char *body, size_t bodylen, const char *errs,
                          size_t errslen, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	assert_non_null(f);
	assert_int_equal(control_reply_write(f, status, body, bodylen, errs, errslen), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static void test_reply_table(void **state)
{
	int failures = 0;
	for (size_t i = 0; i < sizeof(reply_rows) / sizeof(reply_rows[0]); i++) {
		const struct reply_row *r = &reply_rows[i];
		size_t len;
		char *buf = format_reply(r->status, r->body, strlen(r->body), r->errs, strlen(r->errs),
		                         &len);
		ROW_CHECK(failures, len == strlen(r->want) && memcmp(buf, r->want, len) == 0,
		          "reply row %zu (%s): '%.*s', want '%s'", i, r->what, (int)len, buf, r->want);
		/* What the server writes, the client reads back. */
		struct control_status st;
		int rc = control_status_parse(buf, len, &st);
		ROW_CHECK(failures, rc == (r->status == 0 ? 0 : CONTROL_E_REMOTE),
		          "reply row %zu (%s): parses as %d", i, r->what, rc);
		free(buf);
	}
	assert_int_equal(failures, 0);
}

static void test_reply_hostile_errors(void **state)
{
	struct control_status st;
	size_t len;
	/* A NUL in the first error line ends the message: the status line stays parseable. */
	static const char nul[] = "bad\0news\nmore\n";
	char *buf = format_reply(1, NULL, 0, nul, sizeof(nul) - 1, &len);
	assert_int_equal(control_status_parse(buf, len, &st), CONTROL_E_REMOTE);
	assert_int_equal(st.msglen, 3);
	assert_memory_equal(st.msg, "bad", 3);
	assert_int_equal(len - st.body, sizeof(nul) - 1); /* the body has the errors whole */
	free(buf);

	/* An over-long first error line is cut to fit CONTROL_MAX_STATUS; the body has it whole. */
	size_t elen = 3 * CONTROL_MAX_STATUS;
	char *errs = malloc(elen);
	assert_non_null(errs);
	memset(errs, 'e', elen);
	errs[elen - 1] = '\n';
	buf = format_reply(1, NULL, 0, errs, elen, &len);
	assert_int_equal(control_status_parse(buf, len, &st), CONTROL_E_REMOTE);
	assert_int_equal(st.body, CONTROL_MAX_STATUS);
	assert_int_equal(st.msglen, CONTROL_MAX_STATUS - 5);
	assert_int_equal(len - st.body, elen);
	assert_memory_equal(buf + st.body, errs, elen);
	free(buf);
	free(errs);
}

static void test_strerror(void **state)
{
	const int codes[] = { CONTROL_E_REMOTE, CONTROL_E_PROTO, CONTROL_E_TOO_LONG, CONTROL_E_WORDS,
		              CONTROL_E_REQUEST };
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		assert_true(codes[i] <= -5001 && codes[i] > -5100);
		assert_string_not_equal(control_strerror(codes[i]), "unknown error");
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(control_strerror(codes[i]), control_strerror(codes[j]));
	}
	assert_string_equal(control_strerror(-ETIMEDOUT), strerror(ETIMEDOUT));
	assert_string_equal(control_strerror(0), "success");
	assert_string_equal(control_strerror(-5000), "unknown error");
	/* The old code of CONTROL_E_REMOTE is WIRE_E_DROP's: no longer ours. */
	assert_string_not_equal(control_strerror(-4001), control_strerror(CONTROL_E_REMOTE));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_table),
		cmocka_unit_test(test_arg_table),
		cmocka_unit_test(test_request_scan_table),
		cmocka_unit_test(test_request_limits),
		cmocka_unit_test(test_status_table),
		cmocka_unit_test(test_status_overlong),
		cmocka_unit_test(test_reply_table),
		cmocka_unit_test(test_reply_hostile_errors),
		cmocka_unit_test(test_strerror),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
