/* SPDX-License-Identifier: BSD-3-Clause */
/* The control protocol between partdns and partdnsctl, spelled once: limits, words, framing. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/*
 * The client connects to the daemon's unix stream socket and sends one
 * request line ending in "\n". The server answers with a status line, "OK\n"
 * or "ERR <message>\n", then a body, then closes the connection.
 *
 * A request is words separated by spaces or tabs: a verb, then arguments,
 * options as key=value. Requests of partdns:
 *   stats | stats json | cache flush [name=NAME] [partition=P] | reload
 *
 * After "OK" the body is the command's notes (e.g. warnings of a reload),
 * then its result. After "ERR" the message is the first error line and the
 * body all of them.
 */

#define CONTROL_MAX_REQUEST 4096              /* bytes of a request line, with its "\n" */
#define CONTROL_MAX_WORDS 16                  /* words of a request, the verb included */
#define CONTROL_MAX_STATUS 512                /* bytes of a status line, with its "\n" */
#define CONTROL_MAX_REPLY ((size_t)64 << 20)  /* a longer reply is an error */
#define CONTROL_TIMEOUT_MS 5000               /* each side gives the other this long */

/* Error codes (negative), in the control module's range; other negatives are -errno. */
enum {
	CONTROL_E_REMOTE = -5001,   /* the server answered "ERR <message>" */
	CONTROL_E_PROTO = -5002,    /* a reply that does not start with "OK\n" / "ERR ...\n" */
	CONTROL_E_TOO_LONG = -5003, /* a request or a reply over its limit */
	CONTROL_E_WORDS = -5004,    /* a request of more than CONTROL_MAX_WORDS words */
	CONTROL_E_REQUEST = -5005,  /* a malformed request: empty, a NUL byte, a newline inside */
};

/** A description of a CONTROL_E_* code or a -errno. Static storage. */
const char *control_strerror(int err);

/**
 * Check a request before sending it: one non-empty line, without its "\n",
 * that fits CONTROL_MAX_REQUEST once the "\n" is added.
 * @return 0, CONTROL_E_REQUEST (empty, or with a "\n"), CONTROL_E_TOO_LONG.
 */
int control_request_check(const char *request);

/**
 * Find the request line in the bytes a server has received so far.
 * @param buf bytes received (need not be NUL-terminated); only the first
 *        CONTROL_MAX_REQUEST are looked at.
 * @param eof the client has shut down its writing side: no more bytes will
 *        come, so an unterminated line is the request (`printf stats | nc -U`).
 * @param linelen out, set on 1: the length of the request without its "\n"
 *        and without a "\r" before it.
 * @return 1 a complete request; 0 more bytes needed; CONTROL_E_TOO_LONG no
 *         "\n" within CONTROL_MAX_REQUEST bytes; CONTROL_E_REQUEST a NUL byte
 *         in the line, or eof before any byte.
 */
int control_request_scan(const char *buf, size_t len, bool eof, size_t *linelen);

/**
 * Split a request line into words, in place: spaces and tabs separate, runs
 * of them count once, leading and trailing ones are dropped.
 * @param line NUL-terminated; separators are overwritten with NULs.
 * @param argv out: max + 1 slots; argv[0..argc-1] point into line,
 *        argv[argc] is NULL.
 * @return argc (0 for a blank line), or CONTROL_E_WORDS (more than max words;
 *         argv is then undefined).
 */
int control_split(char *line, char **argv, int max);

/**
 * The value of an option word "key=value".
 * @param key without the "=".
 * @return the value (pointing into the first such word of argv[0..argc-1],
 *         possibly ""), or NULL if no word has that key.
 */
const char *control_arg(int argc, char *const *argv, const char *key);

/**
 * Write a whole reply to f.
 * @param status 0: "OK\n", then the notes (errs), then the body. Nonzero:
 *        "ERR <first line of errs>\n" (truncated to fit CONTROL_MAX_STATUS,
 *        "failed" if that line is empty), then errs whole; the body is not sent.
 * @param body, errs need not be NUL-terminated; NULL with length 0 is fine.
 *        A non-empty errs without a final "\n" gets one.
 * @return 0, or -EIO if writing to f failed.
 */
int control_reply_write(FILE *f, int status, const char *body, size_t bodylen, const char *errs,
                        size_t errslen);

/* The status line of a reply, as parsed by control_status_parse(). */
struct control_status {
	size_t linelen;  /* bytes of the status line before its "\n" (0 if none) */
	size_t body;     /* offset of the body in the reply (0 if no status line) */
	const char *msg; /* for "ERR": the message, in the reply, not NUL-terminated */
	size_t msglen;   /* its length (0 for a bare "ERR") */
};

/**
 * Parse the status line at the start of a reply. A "\r" before its "\n" is
 * allowed.
 * @param reply need not be NUL-terminated.
 * @param st out: filled for every return value (linelen and body stay 0 when
 *        there is no "\n" within CONTROL_MAX_STATUS bytes).
 * @return 0 for "OK", CONTROL_E_REMOTE for "ERR" or "ERR <message>",
 *         CONTROL_E_PROTO otherwise: no "\n" (st->linelen 0), a line longer
 *         than CONTROL_MAX_STATUS, a NUL byte in it, any other text.
 */
int control_status_parse(const char *reply, size_t len, struct control_status *st);
