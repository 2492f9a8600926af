/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * This file is private to resolver/. The daemon's new state, read from the
 * config file and the store: a reload (checked against the running state:
 * the plan serial's rules, the keys that need a restart) and the parts of
 * it that start-up and the store watch read too.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "conf/conf.h"

struct daemon;
struct domains;
struct standby;

/**
 * Re-read the config file and the store; on success swap them in. Keys a
 * running daemon cannot change (the schema's restart rows) keep their value
 * and are noted (logged, and in err). On failure the running state is kept.
 * @param err where errors and notes go (may be NULL).
 * @return 0 or a negative code.
 */
int reload_run(struct daemon *d, FILE *err);

struct tls_server;

/**
 * server.tls_cert and server.tls_key read and checked (at start, by each
 * reload, by partdns -t): the DoT listeners' context (ALPN dot) when dot,
 * the DoH listeners' (ALPN h2, http/1.1) when https. A certificate that
 * expires within 30 days, or has, is warned about.
 * @return 0 (the contexts asked for, the others NULL), or -1 with the
 *         reason naming the file logged (and in err when not NULL).
 */
int reload_tls(const struct conf *c, bool dot, bool https, struct tls_server **dot_out, struct tls_server **https_out,
               FILE *err);

/** Apply server.log and server.log_level (at start, and by each reload). */
void reload_apply_log(const struct conf *c);

/** The EDNS-domain set from the store, and the version it was read at. @return 0 or an error (logged). */
int reload_read_domains(struct daemon *d, struct domains **out, uint64_t *version);

/**
 * The partitions failed over, for the plan in c. A store that cannot be
 * read leaves every partition on its own identity (logged): steering by the
 * normal plan beats not steering.
 */
struct standby *reload_read_standby(struct daemon *d, const struct conf *c);

/**
 * The plan to run: the config's, or an activated staged plan the config
 * does not hold yet (its serial is higher), read from the store with the
 * rest of the config. Once the config's own serial reaches it, the store's
 * copy goes: the config is the source of truth again. Sets
 * d->plan_from_store (under reload_lock, or before any thread runs).
 * @return the config to run: c itself, or c replaced (and freed).
 */
struct conf *reload_adopt_plan(struct daemon *d, struct conf *c, FILE *err);

/** Read the staged plan (if any) into d->next, for /next/ and its activation. */
void reload_read_next_plan(struct daemon *d);

struct cache_snap_result;

/*
 * Cache snapshots (cache.snapshot; partdnsctl cache dump and load): one at
 * a time, under the running plan (a reload waits: partition ids mean the
 * same through the whole file), logged in one line and counted for stats
 * and status. when says what asked ("stop", "interval", "takeover",
 * "start", "partdnsctl").
 */

/** Write the cache to path. @return 0 or -errno (r->why says why). */
int reload_snap_write(struct daemon *d, const char *path, const char *when, struct cache_snap_result *r);

/**
 * Load path into the cache: entries already cached stay, the file's go
 * where there is room. @return 0 (maybe trimmed: r->why), -ENOENT (no
 * file), another -errno (refused: r->why).
 */
int reload_snap_load(struct daemon *d, const char *path, const char *when, struct cache_snap_result *r);
