/* SPDX-License-Identifier: BSD-3-Clause */
/* The daemon as a whole: its threads, pools, cache and control socket; start-up, signals, the main loop, shutdown. */
#pragma once

#include <stdbool.h>

#include "conf/conf.h"

struct daemon;

/**
 * Build the daemon from a loaded config (ownership of c passes to it):
 * opens the store, binds every listener, creates the pools.
 * @param conf_path the file to re-read on reload.
 * @param takeover   share listen addresses that another process already
 *                   serves (an upgrade); without it such an address is an
 *                   error (an accidental second instance).
 * @return the daemon or NULL (errors logged).
 */
struct daemon *daemon_new(const char *conf_path, struct conf *c, bool takeover);

/** Start all threads and serve until SIGTERM/SIGINT; SIGHUP reloads (reload.h). @return 0 or -errno. */
int daemon_run(struct daemon *d);

/** Ask a running daemon to stop (async-signal-safe). */
void daemon_stop(struct daemon *d);

void daemon_free(struct daemon *d);
