/* SPDX-License-Identifier: BSD-3-Clause */
/* The control protocol: request checks and words, reply framing and status-line parsing. */
#include "control/proto.h"

#include <errno.h>
#include <string.h>

const char *control_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case CONTROL_E_REMOTE:
		return "the daemon reported an error";
	case CONTROL_E_PROTO:
		return "not a control protocol reply";
	case CONTROL_E_TOO_LONG:
		return "control request or reply too long";
	case CONTROL_E_WORDS:
		return "too many words in the control request";
	case CONTROL_E_REQUEST:
		return "malformed control request";
	default:
		if (err < 0 && err > -4096)
			return strerror(-err);
		return "unknown error";
	}
}

int control_request_check(const char *request)
{
	size_t len = strlen(request);
	if (len == 0 || memchr(request, '\n', len) != NULL)
		return CONTROL_E_REQUEST;
	if (len + 1 > CONTROL_MAX_REQUEST)
		return CONTROL_E_TOO_LONG;
	return 0;
}

int control_request_scan(const char *buf, size_t len, bool eof, size_t *linelen)
{
	size_t n = len < CONTROL_MAX_REQUEST ? len : CONTROL_MAX_REQUEST;
	const char *nl = memchr(buf, '\n', n);
	size_t line;
	if (nl != NULL)
		line = (size_t)(nl - buf);
	else if (len >= CONTROL_MAX_REQUEST)
		return CONTROL_E_TOO_LONG;
	else if (!eof)
		return 0;
	else if (len == 0)
		return CONTROL_E_REQUEST;
	else
		line = len;
	/* A NUL would cut the line short in every later string function. */
	if (memchr(buf, '\0', line) != NULL)
		return CONTROL_E_REQUEST;
	if (line > 0 && buf[line - 1] == '\r')
		line--;
	*linelen = line;
	return 1;
}

static bool is_sep(char ch)
{
	return ch == ' ' || ch == '\t';
}

int control_split(char *line, char **argv, int max)
{
	int argc = 0;
	char *p = line;
	for (;;) {
		while (is_sep(*p))
			p++;
		if (*p == '\0')
			break;
		if (argc == max)
			return CONTROL_E_WORDS;
		argv[argc++] = p;
		while (*p != '\0' && !is_sep(*p))
			p++;
		if (*p != '\0')
			*p++ = '\0';
	}
	argv[argc] = NULL;
	return argc;
}

const char *control_arg(int argc, char *const *argv, const char *key)
{
	size_t kl = strlen(key);
	for (int i = 0; i < argc; i++)
		if (strncmp(argv[i], key, kl) == 0 && argv[i][kl] == '=')
			return argv[i] + kl + 1;
	return NULL;
}

int control_reply_write(FILE *f, int status, const char *body, size_t bodylen, const char *errs,
                        size_t errslen)
{
	/* Notes and errors are lines: one without its "\n" would run into what follows. */
	bool add_nl = errslen > 0 && errs[errslen - 1] != '\n';
	if (status == 0) {
		fputs("OK\n", f);
		if (errslen > 0)
			fwrite(errs, 1, errslen, f);
		if (add_nl)
			fputc('\n', f);
		if (bodylen > 0)
			fwrite(body, 1, bodylen, f);
	} else {
		/* The message ends at the first "\n" or NUL (a NUL would make the status line
		 * unparseable), and leaves room for "ERR " and "\n". Trailing "\r"s go: the
		 * client would take the last one for half of a "\r\n". */
		size_t max = CONTROL_MAX_STATUS - sizeof("ERR \n") + 1;
		size_t mlen = 0;
		while (mlen < errslen && mlen < max && errs[mlen] != '\n' && errs[mlen] != '\0')
			mlen++;
		while (mlen > 0 && errs[mlen - 1] == '\r')
			mlen--;
		if (mlen == 0)
			fputs("ERR failed\n", f);
		else
			fprintf(f, "ERR %.*s\n", (int)mlen, errs);
		if (errslen > 0)
			fwrite(errs, 1, errslen, f);
		if (add_nl)
			fputc('\n', f);
	}
	return ferror(f) ? -EIO : 0;
}

int control_status_parse(const char *reply, size_t len, struct control_status *st)
{
	memset(st, 0, sizeof(*st));
	size_t n = len < CONTROL_MAX_STATUS ? len : CONTROL_MAX_STATUS;
	const char *nl = memchr(reply, '\n', n);
	if (nl == NULL)
		return CONTROL_E_PROTO;
	st->linelen = (size_t)(nl - reply);
	st->body = st->linelen + 1;
	size_t line = st->linelen;
	if (line > 0 && reply[line - 1] == '\r')
		line--;
	if (memchr(reply, '\0', line) != NULL)
		return CONTROL_E_PROTO;
	if (line == 2 && memcmp(reply, "OK", 2) == 0)
		return 0;
	if (line >= 3 && memcmp(reply, "ERR", 3) == 0) {
		if (line == 3) {
			st->msg = reply + 3; /* never NULL for CONTROL_E_REMOTE */
			return CONTROL_E_REMOTE;
		}
		if (reply[3] == ' ') {
			st->msg = reply + 4;
			st->msglen = line - 4;
			return CONTROL_E_REMOTE;
		}
	}
	return CONTROL_E_PROTO;
}
