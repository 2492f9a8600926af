/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. Cache snapshots: the answer cache written to a file and loaded back. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "conf/conf.h"
#include "resolver/cache/cache.h"

struct standby;

/*
 * The file (all integers big-endian):
 *
 *   header   "PDNSSNAP" | u32 format (CACHE_SNAP_FORMAT) | u32 header length
 *            | u64 written at (Unix seconds) | u32 plan serial | u32 0
 *            | u64 plan digest | u16 n + the partdns version (n bytes)
 *            | u32 partitions, each: u16 id | u64 identity | u8 n + name
 *   entries  each: u8 flags (1: never served stale) | u8 0 | u16 key length
 *            | u32 value length | u64 stored at | u64 expiry (Unix
 *            seconds) | key | value
 *   trailer  "PDNSEND\0" | u64 entries | u64 checksum
 *
 * A partition's identity is a digest of its name and the ECS identities
 * its answers were fetched with (mapped addresses, or its standby's): an
 * entry of a partition whose identity changed since is not loaded. The
 * key and value are the cache's own (resolver/view/route.h), whose blobs
 * keep the answer's DNSSEC state (AD) and, in the key, CD. The checksum is
 * cache_snap_checksum() of every byte before it. The count is in the
 * trailer: the entries are walked while they are written.
 */
#define CACHE_SNAP_FORMAT 1u

/* What a write or a load did. */
struct cache_snap_result {
	uint64_t entries;  /* written, or loaded */
	uint64_t refused;  /* load: entries of the file not loaded (expired, changed city, over the cap, invalid) */
	bool file_refused; /* load: nothing was loaded from the file, see why */
	uint64_t bytes;    /* the file's size */
	time_t written;    /* load: when the file was written */
	char why[512];     /* what was refused or trimmed and why, one line; "" = nothing */
};

/**
 * Write every live entry of cache to path: to path.tmp first, fsync'ed,
 * then renamed over path and the directory fsync'ed, so path is always a
 * whole snapshot (the last one or this one). c and sb (may be NULL) say
 * what the partition ids mean now.
 * @return 0, or -errno (out->why says what failed; path is untouched).
 */
int cache_snap_write(struct cache *cache, const struct conf *c, const struct standby *sb, const char *path,
                     struct cache_snap_result *out);

/**
 * Load the snapshot at path into cache: every entry still valid now (wall
 * clock), its TTLs aged by the time since it was stored; not an entry of a
 * partition whose name or identity differs under c/sb (a plan or standby
 * change), nor past cache's max_bytes (nothing is evicted for them), nor
 * over an entry cache holds already. A file that is not a snapshot of
 * this version of partdns, or truncated, corrupt or larger than
 * max_bytes, loads nothing (file_refused). out->why says why.
 * @return 0 (loaded, maybe trimmed), -ENOENT (no file), or another -errno
 *         (refused: nothing inserted).
 */
int cache_snap_load(struct cache *cache, const struct conf *c, const struct standby *sb, const char *path,
                    struct cache_snap_result *out);

/**
 * cache_snap_load() of the bytes buf (the whole file), at wall time
 * wall_now and cache time mono_now (the cache's `now`). For tests and the
 * fuzz target. @return as cache_snap_load().
 */
int cache_snap_load_buf(struct cache *cache, const struct conf *c, const struct standby *sb, const uint8_t *buf,
                        size_t len, time_t wall_now, uint32_t mono_now, struct cache_snap_result *out);

/**
 * cache_snap_write() at the given times, to an open file descriptor (not
 * closed, not synced). For tests. @return 0 or -errno.
 */
int cache_snap_write_fd(struct cache *cache, const struct conf *c, const struct standby *sb, int fd, time_t wall_now,
                        uint32_t mono_now, struct cache_snap_result *out);

/** The trailer's checksum of n bytes (everything before it). */
uint64_t cache_snap_checksum(const uint8_t *p, size_t n);

/** The partition identity the file records for id under c/sb (0 for an id c lacks). */
uint64_t cache_snap_identity(const struct conf *c, const struct standby *sb, unsigned id);
