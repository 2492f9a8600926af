/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: request lines and words, status lines, and the server's framing read back. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* abort(), not assert(): release builds define NDEBUG. */
#define CHECK(cond)              \
	do {                     \
		if (!(cond))     \
			abort(); \
	} while (0)

/* The server's side: find the request line, split it, look options up. */
static void check_request(const char *buf, size_t size, bool eof)
{
	size_t linelen = 0;
	int rc = control_request_scan(buf, size, eof, &linelen);
	CHECK(rc == 1 || rc == 0 || rc == CONTROL_E_TOO_LONG || rc == CONTROL_E_REQUEST);
	if (rc == 0)
		CHECK(!eof && size < CONTROL_MAX_REQUEST && memchr(buf, '\n', size) == NULL);
	if (rc != 1)
		return;
	CHECK(linelen <= size && linelen < CONTROL_MAX_REQUEST);
	CHECK(memchr(buf, '\0', linelen) == NULL && memchr(buf, '\n', linelen) == NULL);

	char line[CONTROL_MAX_REQUEST];
	memcpy(line, buf, linelen);
	line[linelen] = '\0';
	char *argv[CONTROL_MAX_WORDS + 1];
	int argc = control_split(line, argv, CONTROL_MAX_WORDS);
	CHECK(argc == CONTROL_E_WORDS || (argc >= 0 && argc <= CONTROL_MAX_WORDS));
	if (argc < 0)
		return;
	CHECK(argv[argc] == NULL);
	for (int i = 0; i < argc; i++) {
		CHECK(argv[i] >= line && argv[i] < line + linelen);
		CHECK(argv[i][0] != '\0' && strpbrk(argv[i], " \t") == NULL);
		CHECK(i == 0 || argv[i] > argv[i - 1]);
	}
	static const char *const keys[] = { "name", "partition", "" };
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		const char *v = control_arg(argc, argv, keys[k]);
		size_t kl = strlen(keys[k]);
		if (v != NULL)
			CHECK(v - kl - 1 >= line && v[-1] == '=' && memcmp(v - kl - 1, keys[k], kl) == 0);
	}
}

/* The client's side: the status line of whatever came back. */
static int check_status(const char *buf, size_t size, struct control_status *st)
{
	int rc = control_status_parse(buf, size, st);
	CHECK(rc == 0 || rc == CONTROL_E_REMOTE || rc == CONTROL_E_PROTO);
	CHECK(st->body <= size && st->body <= CONTROL_MAX_STATUS);
	if (st->body > 0)
		CHECK(buf[st->body - 1] == '\n' && st->linelen == st->body - 1 &&
		      memchr(buf, '\n', st->linelen) == NULL);
	if (rc != CONTROL_E_PROTO)
		CHECK(st->body > 0);
	if (rc == CONTROL_E_REMOTE)
		CHECK(st->msg >= buf + 3 && st->msg + st->msglen <= buf + st->linelen &&
		      memchr(st->msg, '\0', st->msglen) == NULL);
	return rc;
}

/* Whatever a handler writes, the reply the server frames parses back on the client. */
static void check_framing(const char *buf, size_t size)
{
	int status = size > 0 && (buf[0] & 1);
	const char *errs = size > 0 ? buf + 1 : buf;
	size_t errslen = size > 0 ? size - 1 : 0;
	/* The body: the second half, the errors: all but the first byte. */
	const char *body = buf + size / 2;
	size_t bodylen = size - size / 2;
	char *out = NULL;
	size_t outlen = 0;
	FILE *f = open_memstream(&out, &outlen);
	if (f == NULL)
		return;
	CHECK(control_reply_write(f, status, body, bodylen, errs, errslen) == 0);
	CHECK(fclose(f) == 0);
	struct control_status st;
	int rc = check_status(out, outlen, &st);
	CHECK(rc == (status ? CONTROL_E_REMOTE : 0));
	bool nl = errslen > 0 && errs[errslen - 1] != '\n';
	const char *rest = out + st.body;
	size_t restlen = outlen - st.body;
	CHECK(restlen >= errslen && memcmp(rest, errs, errslen) == 0);
	CHECK(restlen == errslen + nl + (status ? 0 : bodylen));
	if (!status) {
		CHECK(memcmp(rest + errslen + nl, body, bodylen) == 0);
	} else if (!(st.msglen == 6 && memcmp(st.msg, "failed", 6) == 0)) {
		/* The message is the start of the first error line. */
		CHECK(st.msglen > 0 && st.msglen <= errslen && memcmp(st.msg, errs, st.msglen) == 0);
	}
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 3 * CONTROL_MAX_REQUEST)
		return 0;
	const char *buf = (const char *)data;
	check_request(buf, size, false);
	check_request(buf, size, true);
	struct control_status st;
	check_status(buf, size, &st);
	check_framing(buf, size);
	return 0;
}
