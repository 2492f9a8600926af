/* SPDX-License-Identifier: BSD-3-Clause */
/* A control-socket server: verbs registered by the caller, served from one thread. */
#pragma once

#include <stdio.h>

#include "control/proto.h"

struct control;

/**
 * Handler of one command, run on the server's thread, one at a time.
 * @param arg as given to control_register().
 * @param argv the request's words, argv[0] the verb, argv[argc] NULL; valid
 *        during the call only (options: control_arg()).
 * @param out the body of an OK reply (discarded on ERR).
 * @param err error lines on ERR (the first becomes the status message);
 *        notes on OK, sent before the body. Do not close out or err.
 * @return 0 for "OK", nonzero for "ERR".
 */
typedef int (*control_fn)(void *arg, int argc, char **argv, FILE *out, FILE *err);

/* Levels of the log callback; the numbers are those of resolver/base/log.h's enum log_level. */
enum {
	CONTROL_LOG_ERR = 0,
	CONTROL_LOG_WARN = 1,
	CONTROL_LOG_INFO = 2,
	CONTROL_LOG_DEBUG = 3,
};

/**
 * Where the servers' messages go, process-wide: NULL (the default) writes
 * "control: MESSAGE" lines to stderr. Call before control_new(): the
 * server threads read it without a lock.
 * @param log gets a level (CONTROL_LOG_*) and one line without "\n".
 */
void control_set_log(void (*log)(int level, const char *msg));

/**
 * Bind and listen on the unix stream socket at path: missing parent
 * directories are created 0750, a stale socket (nobody accepts) is
 * replaced, a live one or a file of another kind is refused; the socket
 * is made 0660.
 * @param path copied.
 * @param stop_fd an eventfd or pipe that becomes readable when the daemon
 *        stops; only polled, never read, so other threads can watch it too.
 *        It must stay open until control_stop() returns.
 * @return the server (free with control_free()), or NULL on error (logged).
 */
struct control *control_new(const char *path, int stop_fd);

/**
 * Register a verb. Call before control_start().
 * @param verb one word (no space, tab or newline), copied.
 * @return 0, -ENOMEM, -EEXIST (registered already), -EINVAL (not one word),
 *         -EBUSY (the server is started).
 */
int control_register(struct control *c, const char *verb, control_fn fn, void *arg);

/**
 * Serve on a new thread until stop_fd becomes readable. Each client may send
 * one request and gets one reply; it has CONTROL_TIMEOUT_MS to send its
 * request and again to take the reply, then it is cut off. Up to 32
 * clients are read from and written to at once (never blocking), so a
 * silent one holds up nobody beyond its deadline; a newcomer always gets a
 * slot, taken from the client silent longest, else from the one that has
 * not read its reply for longest; the replies held unread are bounded all
 * together (64 MiB), the least read going first. Handlers run one after
 * another.
 * @return 0 or -errno of pthread_create.
 */
int control_start(struct control *c);

/** Wait for the thread to end: returns once stop_fd is readable. No-op if not started or NULL. */
void control_stop(struct control *c);

/** control_stop(), close the socket and unlink its path. NULL is fine. */
void control_free(struct control *c);
