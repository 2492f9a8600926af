/* SPDX-License-Identifier: BSD-3-Clause */
/* The daemon as a whole: threads, pools, cache, control socket, reloads. */
#pragma once

#include <stdio.h>

#include "conf/conf.h"

struct server;

/**
 * Build the server from a loaded config (ownership of c passes to the
 * server): opens the store, binds every listener, creates the pools.
 * @param conf_path the file to re-read on reload.
 * @return the server or NULL (errors logged).
 */
struct server *server_new(const char *conf_path, struct conf *c);

/** Start all threads and serve until SIGTERM/SIGINT; SIGHUP reloads. @return 0 or -errno. */
int server_run(struct server *srv);

/** Ask a running server to stop (async-signal-safe). */
void server_stop(struct server *srv);

void server_free(struct server *srv);

/**
 * Re-read the config file and the store; on success swap them in (listen
 * addresses, thread counts, cache size and resolver.* need a restart and
 * are reported). On failure the running state is kept.
 * @param err where errors and notes go (may be NULL).
 * @return 0 or a negative code.
 */
int server_reload(struct server *srv, FILE *err);

/** Write stats (text or JSON) to out. */
void server_write_stats(struct server *srv, FILE *out, int json);

/** Remove cache entries: name (text, NULL = any) and partition (name, NULL = any). @return count or negative. */
long server_cache_flush(struct server *srv, const char *name, const char *partition, FILE *err);
