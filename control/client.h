/* SPDX-License-Identifier: BSD-3-Clause */
/* Client side of the control protocol: one request, the status line and body of the reply. */
#pragma once

#include <stddef.h>

#include "control/proto.h"

/**
 * Connect to the unix stream socket at path, send request + "\n", read the
 * reply until the server closes the connection.
 * @param request one line: not empty, no "\n", at most CONTROL_MAX_REQUEST - 1
 *        bytes.
 * @param timeout_ms for the connect and for each wait for the socket (idle
 *        time, not the whole exchange); CONTROL_TIMEOUT_MS is the usual.
 * @param body out: the body (malloc'd, NUL-terminated, free() it), set for
 *        0 and CONTROL_E_REMOTE, NULL otherwise.
 * @param bodylen out, optional: its length.
 * @param msg out, always NUL-terminated: on failure what went wrong ("cannot
 *        connect to control socket PATH: ... (is partdns running?)"), for
 *        CONTROL_E_REMOTE the server's message ("(no message)" if none).
 * @return 0 (OK), CONTROL_E_REMOTE, CONTROL_E_PROTO (not a status line, or
 *         closed without a reply), CONTROL_E_REQUEST or CONTROL_E_TOO_LONG
 *         (bad request, nothing sent), CONTROL_E_TOO_LONG (reply over
 *         CONTROL_MAX_REPLY), -ENAMETOOLONG (path), -ETIMEDOUT, -ENOMEM, or
 *         another -errno of socket/connect/send/recv.
 */
int control_request(const char *path, const char *request, int timeout_ms, char **body,
                    size_t *bodylen, char *msg, size_t msgsize);
