/* SPDX-License-Identifier: BSD-3-Clause */
/* Client side of the daemon's control protocol (one request line, status line + body). */
#pragma once

#include <stddef.h>

/* Error codes (negative), in the tools range. */
enum {
	CONTROL_E_REMOTE = -4001, /* the daemon answered "ERR <message>" */
	CONTROL_E_PROTO = -4002,  /* the reply is not "OK\n" / "ERR ...\n" */
};

#define CONTROL_MAX_REQUEST 4096          /* bytes, with the terminating "\n" */
#define CONTROL_MAX_REPLY ((size_t)64 << 20) /* a longer reply is an error */
#define CONTROL_TIMEOUT_MS 5000

/**
 * Connect to the unix stream socket at path, send request + "\n", read the
 * reply until the daemon closes the connection.
 * @param request one line: no "\n", at most CONTROL_MAX_REQUEST - 1 bytes.
 * @param timeout_ms for the connect and for each wait for the socket (idle
 *        time, not the whole exchange).
 * @param body out: the body (malloc'd, NUL-terminated, free() it), set for
 *        0 and CONTROL_E_REMOTE, NULL otherwise.
 * @param bodylen out, optional: its length.
 * @param msg out: on failure what went wrong ("cannot connect to control
 *        socket PATH: ... (is partdns running?)"), or for CONTROL_E_REMOTE
 *        the daemon's message.
 * @return 0 (OK), CONTROL_E_REMOTE, CONTROL_E_PROTO, -EINVAL (bad request),
 *         -ENAMETOOLONG (path), -ETIMEDOUT, -EFBIG (reply too long), -ENOMEM,
 *         or another -errno of connect/send/recv.
 */
int control_request(const char *path, const char *request, int timeout_ms, char **body,
                    size_t *bodylen, char *msg, size_t msgsize);
