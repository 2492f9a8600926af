/* SPDX-License-Identifier: BSD-3-Clause */
/* The LMDB store of EDNS domains and their policies. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf/conf.h"

/* Error codes (negative), in the conf module's range. */
enum {
	STORE_E_LMDB = -3101,    /* LMDB failed (see errno-like detail in logs) */
	STORE_E_CORRUPT = -3102, /* a record does not decode */
	STORE_E_VERSION = -3103, /* store written by an incompatible version */
};

#define STORE_MAX_FORWARD 8

/* Longest user name a record keeps (see store_user_valid). */
#define STORE_USER_MAX 64

struct store_domain {
	char name[256];          /* normalized (conf_name_normalize) */
	bool subtree;            /* match the name and everything below it */
	enum conf_policy policy;
	size_t nforward;         /* policy forward: targets; 0 = edns.forward */
	struct conf_addr forward[STORE_MAX_FORWARD];
	/* Who flagged the name and when, and who last changed it (record format
	 * 2). Times are Unix seconds; 0 is unknown (a record from before format 2,
	 * migrated) as is an empty name. Written by the store (see store_put_by),
	 * not by the resolver, which ignores them. */
	int64_t added;
	int64_t changed;
	char added_by[STORE_USER_MAX + 1];
	char changed_by[STORE_USER_MAX + 1];
};

struct store;

/**
 * Open the environment in directory dir, which must exist (see
 * store_prepare_dir): a mistyped path is -ENOENT, never a new empty store.
 * With readonly false, an existing directory without a store gets one.
 * Many readers and one writer may have it open at once, across processes.
 * Reader slots left by processes that died with a read transaction open are
 * freed here (see store_stale_readers).
 * @return 0 (*out set, close with store_close), -errno, or STORE_E_*.
 */
int store_open(const char *dir, bool readonly, struct store **out);
void store_close(struct store *s);

/** Insert or replace d (keyed by d->name), committed durably. @return 0 or STORE_E_* / -errno. */
int store_put(struct store *s, const struct store_domain *d);

/** Remove name. @return 0, -ENOENT, or STORE_E_*. */
int store_del(struct store *s, const char *name);

/** Fetch one domain. @return 0, -ENOENT, or STORE_E_*. */
int store_get(struct store *s, const char *name, struct store_domain *out);

/**
 * Call fn for each domain in name order, all from one consistent snapshot;
 * stops when fn returns non-zero and returns that value.
 * @return 0, fn's value, or STORE_E_*.
 */
int store_foreach(struct store *s, int (*fn)(const struct store_domain *d, void *arg), void *arg);

/**
 * A counter bumped by every committed change (put/del), so a reader can poll
 * it cheaply to see whether to reload. @return 0 and *version, or STORE_E_*.
 */
int store_version(struct store *s, uint64_t *version);

/** Text of a STORE_E_* or negative errno code. */
const char *store_strerror(int err);

/**
 * As store_foreach, but a record that does not decode does not end the
 * walk: bad (optional) is called with its key (keylen bytes, any bytes, not
 * NUL-terminated; store_key_escape prints it) and why, and the walk goes on.
 * A shared store's records are anyone's writes: a listing must show the
 * good ones and name the others. @return 0, fn's or bad's non-zero value,
 * or STORE_E_* / -errno.
 */
int store_foreach_all(struct store *s, int (*fn)(const struct store_domain *d, void *arg),
                      int (*bad)(const void *key, size_t keylen, const char *why, void *arg), void *arg);

/**
 * A record's key (len bytes, any) as text for a log or a terminal, in buf:
 * printable ASCII as it is, a backslash and every other byte as \xNN, cut
 * with "..." when buf is too small. @return buf.
 */
const char *store_key_escape(const void *key, size_t len, char *buf, size_t size);

/* ---- Added by the store implementation (extensions; the above is unchanged). ---- */

/*
 * Notes on the functions above:
 * - store_foreach holds a read transaction while fn runs; fn may call
 *   store_get/store_version but must not write to the same store.
 * - store_put/store_del on a store opened readonly return -EROFS; they
 *   return -EINVAL for a name that is empty or not normalized.
 * - A write that fails because the disk is full (ENOSPC, EDQUOT, or EIO
 *   from a short write while the file system has almost no space left) and
 *   a map that cannot grow are -ENOSPC (or -EDQUOT); nothing was committed.
 * - Files are created 0640 and directories 0750, and LMDB writes its lock
 *   file even for readers: the daemon and partdnsctl must run as the same
 *   user (or root) to share a store.
 */

/* Map size a store starts with; it grows (doubling) when a write fills it. */
#define STORE_MAPSIZE_DEFAULT ((size_t)64 << 20)

/* Largest encoded record value (see store_record_encode). */
#define STORE_RECORD_MAX (22 + STORE_MAX_FORWARD * 19 + 2 * STORE_USER_MAX)

/* Schema version of the store's layout (meta "format") this build writes.
 * 1: records of format 1 (no who/when). 2: records of format 2. */
#define STORE_SCHEMA 2

/**
 * Make sure the store directory dir exists before store_open: with create,
 * make it (and missing parents, mode 0750) when it does not; without, only
 * check. The daemon creates it only with server.create_store: true,
 * partdnsctl only with --create.
 * @return 0 (dir is a directory), -ENOENT (missing and not create), -ENOTDIR,
 *         -EINVAL (empty), or -errno of stat/mkdir.
 */
int store_prepare_dir(const char *dir, bool create);

/**
 * How many reader slots of dead processes store_open freed for s (LMDB's
 * mdb_reader_check: a process killed with a read transaction open keeps its
 * slot, which pins old pages so the file only grows). Only slots left while
 * another process kept the store open are seen: the first opener of an
 * unused store resets the whole reader table anyway.
 */
unsigned store_stale_readers(const struct store *s);

/**
 * An operator's message for err from a store call on directory dir, in buf:
 * - -ENOENT with dir missing: "store directory DIR does not exist (set
 *   server.create_store: true, or run partdnsctl domain add --create)";
 * - -ENOSPC, -EDQUOT (LMDB's map full, a full disk or quota; a write cut
 *   short by a full disk, which LMDB reports as EIO, is -ENOSPC too): "no
 *   space left for the store (DIR): LMDB map full / disk full";
 * - else "store DIR: " + store_strerror(err).
 * @return buf.
 */
const char *store_message(int err, const char *dir, char *buf, size_t size);

/**
 * As store_open, with the initial map size in bytes (0 = STORE_MAPSIZE_DEFAULT).
 * The store grows the map by itself; this is for tests and very large stores.
 * Any open returns -ENOENT when dir does not exist; a readonly one also when
 * its data file does not (the store was never initialized by a writer).
 */
int store_open_size(const char *dir, bool readonly, size_t mapsize, struct store **out);

/**
 * Insert or replace n domains in one transaction: all are committed, or
 * (on any error) none. The version is bumped once. Every entry is validated
 * first (as store_put). A name given twice: the later entry wins. Who/when
 * as store_put_by with the user unknown ("").
 * @param nreplaced out, optional: how many entries were already stored
 *        (changed or not).
 * @return 0, -EINVAL (an entry is invalid; nothing written), -EROFS (opened
 *         readonly), -ENOSPC (the map cannot grow), or STORE_E_* / -errno.
 */
int store_put_many(struct store *s, const struct store_domain *d, size_t n, size_t *nreplaced);

/**
 * Is d storable? Name non-empty and normalized (conf_name_normalize gives it
 * back unchanged), known policy, at most STORE_MAX_FORWARD targets, targets
 * only with CONF_POLICY_FORWARD, each AF_INET/AF_INET6 with a non-zero port;
 * added and changed not negative, added_by and changed_by valid
 * (store_user_valid).
 * @return 0 or -EINVAL.
 */
int store_domain_check(const struct store_domain *d);

/**
 * Is user a name a record may keep? At most STORE_USER_MAX bytes, each
 * printable ASCII (0x20-0x7e) other than '"' and '\\', so that it reads back
 * unchanged from the quoted export format and cannot fake a column or a
 * terminal escape in a listing. Empty is allowed (unknown).
 */
bool store_user_valid(const char *user);

/**
 * Encode d's record value, format version 2: u8 version (2), u8 flags
 * (0x01 subtree), u8 policy, u8 nforward, u64 added, u64 changed (Unix
 * seconds, big-endian, below 2^63), u8 length of added_by, u8 length of
 * changed_by, then per target u8 family (4|6), u16 port (network order), 16
 * bytes address (IPv4 in the first 4 and zeros after), then the added_by and
 * changed_by bytes (no NUL). Format 1 was the first 4 bytes and the targets.
 * The key is the name. Exposed for tests and fuzzing.
 * @return bytes written, -EINVAL (store_domain_check fails), -ENOSPC.
 */
int store_record_encode(const struct store_domain *d, uint8_t *buf, size_t size);

/**
 * Decode a key (name text, no NUL) and record value of format 1 or 2
 * strictly: exact length, known version, no unknown flag bits, known policy
 * and families, zero padding, non-zero ports, normalized name; for format 2
 * times below 2^63 and user names as store_user_valid. A format-1 record
 * decodes with the who/when fields unknown (0, "").
 * @return 0 (*out filled) or STORE_E_CORRUPT.
 */
int store_record_decode(const void *key, size_t keylen, const uint8_t *val, size_t len,
                        struct store_domain *out);

/* ---- Who and when; the schema version (issue: store hygiene). ---- */

/* What a write did, entry by entry. */
struct store_counts {
	size_t added;     /* names that were not in the store */
	size_t changed;   /* names whose match, policy or targets changed */
	size_t unchanged; /* names already stored as given: left as they were */
	size_t removed;   /* store_replace_all: names not given, deleted */
};

/**
 * As store_put_many, recording who wrote when: user (NULL = unknown, "") must
 * be store_user_valid; the time is now. For each entry:
 * - a name already stored with the same match, policy and targets is left as
 *   it is (its who/when too): re-adding is no change;
 * - a name stored differently keeps its added/added_by, and gets changed =
 *   now and changed_by = user (d's own who/when fields are ignored);
 * - a new name takes d's who/when fields when d has any (a restore from an
 *   export keeps the history), else added = changed = now, by user.
 * The change counter is bumped once. counts is optional.
 * @return as store_put_many; -EINVAL also for an invalid user.
 */
int store_put_by(struct store *s, const struct store_domain *d, size_t n, const char *user,
                 struct store_counts *counts);

/**
 * Make the store hold exactly the n domains of d, in one transaction (all or
 * nothing): entries as store_put_by, and every stored name not among d
 * deleted (counts->removed). n = 0 empties the store. The change counter is
 * bumped once, so a running daemon picks up the new set.
 * @return as store_put_by.
 */
int store_replace_all(struct store *s, const struct store_domain *d, size_t n, const char *user,
                      struct store_counts *counts);

/**
 * The schema version the store had when store_open found it older than
 * STORE_SCHEMA and migrated it (a writable open rewrites every format-1
 * record as format 2, with who/when unknown, and sets the schema, in one
 * transaction; records that do not decode are left as they are, still
 * reported as corrupt), or 0 when it did not.
 * A readonly open never migrates: it reads format-1 records as they are, so
 * an upgraded reader works on a store not yet written by the new version.
 * A store with a schema newer than STORE_SCHEMA is refused by any open with
 * STORE_E_VERSION; store_message then names both versions.
 * @param records out, optional: how many records were rewritten.
 */
unsigned store_migrated_from(const struct store *s, size_t *records);

/* ---- partitions failed over (partdnsctl partition failover / failback) ---- */

#define STORE_PARTITION_MAX 64

/* One partition switched to its standby identity, kept until failback (a restart keeps it). */
struct store_standby {
	char partition[STORE_PARTITION_MAX]; /* the partition's name */
	char to[64];                         /* what it sends: a partition name or an address; "" = its standby key */
	char by[65];                         /* who switched it (store_user_valid) */
	int64_t since;                       /* when (Unix seconds) */
};

/** Switch b->partition over (or change where to), committed durably; bumps store_version. @return 0, -EINVAL, -EROFS, or STORE_E_* / -errno. */
int store_standby_set(struct store *s, const struct store_standby *b);

/** Switch partition back. @return 0, -ENOENT (it was not failed over), -EROFS, or STORE_E_* / -errno. */
int store_standby_clear(struct store *s, const char *partition);

/**
 * Call fn for each failed-over partition, in name order, from one snapshot.
 * A record that does not decode is skipped, and the call then returns
 * STORE_E_CORRUPT after the others. @return 0, fn's non-zero value, or STORE_E_*.
 */
int store_standby_foreach(struct store *s, int (*fn)(const struct store_standby *b, void *arg), void *arg);

/**
 * The record: u8 version (1), u8 length + the target, u8 length + the user,
 * 8 bytes time (big-endian, >= 0); the key is the partition name. Strict:
 * exact length, printable text. Exposed for tests and fuzzing.
 * @return bytes written / 0, -EINVAL, -ENOSPC / STORE_E_CORRUPT.
 */
int store_standby_encode(const struct store_standby *b, uint8_t *buf, size_t size);
int store_standby_decode(const void *key, size_t keylen, const uint8_t *val, size_t len,
                         struct store_standby *out);

/* ---- partition plans (partdnsctl plan stage / activate) ---- */

#define STORE_PLAN_NEXT "next"     /* staged: published under /next/, not live */
#define STORE_PLAN_ACTIVE "active" /* activated: runs instead of the config's plan while its serial is higher */
#define STORE_PLAN_MAX ((size_t)256 << 20)

struct store_plan {
	uint32_t serial;       /* its partitions.serial (> 0) */
	int64_t staged_at;     /* when it was staged */
	int64_t activate_at;   /* next: when it goes live (0 = not yet asked) */
	int64_t activated_at;  /* active: when it went live */
	char by[65];           /* who staged it (store_user_valid) */
	char *text;            /* the partitions include file's text; malloc'd by store_plan_get */
	size_t len;
};

/** Write plan which (STORE_PLAN_NEXT or _ACTIVE); bumps store_version. @return 0, -EINVAL, -EROFS, STORE_E_* / -errno. */
int store_plan_put(struct store *s, const char *which, const struct store_plan *p);
/** Read plan which into out (free with store_plan_clear). @return 0, -ENOENT, STORE_E_CORRUPT, -errno. */
int store_plan_get(struct store *s, const char *which, struct store_plan *out);
/** Remove plan which. @return 0, -ENOENT, -EROFS, STORE_E_* / -errno. */
int store_plan_del(struct store *s, const char *which);
/** The staged plan becomes the active one (activated_at = now), in one transaction. @return 0, -ENOENT (none staged), ... */
int store_plan_activate(struct store *s, int64_t now);
void store_plan_clear(struct store_plan *p);
/** A plan's record bytes: malloc'd, *len set; NULL if p is not storable (bad user, too long, ENOMEM). */
uint8_t *store_plan_encode(const struct store_plan *p, size_t *len);
/** Strict inverse of store_plan_encode; out->text malloc'd (store_plan_clear). @return 0, STORE_E_CORRUPT, -ENOMEM. */
int store_plan_decode(const uint8_t *v, size_t len, struct store_plan *out);

/* ---- a shared store (store.etcd): the same calls, kept elsewhere ---- */

/* A shared store could not be reached or refused a change (store_remote_error says why). */
#define STORE_E_REMOTE (-3104)
/* A change lost a race with another writer too many times in a row. */
#define STORE_E_CONFLICT (-3105)

/* What a record is, in a shared store and in a mirror of it. */
enum store_kind { STORE_KIND_DOMAIN, STORE_KIND_STANDBY, STORE_KIND_PLAN };

/*
 * A store kept elsewhere (store/store_etcd.c). The public calls above check
 * their arguments, encode and decode records as for LMDB, and hand raw
 * records to these; keys are a domain name, a partition name or
 * STORE_PLAN_NEXT/ACTIVE. Every call returns 0, -ENOENT, -ENOMEM,
 * STORE_E_REMOTE (with store_remote_error set) or STORE_E_CONFLICT.
 */
struct store_remote_ops {
	/* as store_put_by/store_replace_all: d is checked; stamp with store_stamp */
	int (*write_domains)(void *impl, const struct store_domain *d, size_t n, const char *user, bool replace,
	                     struct store_counts *counts);
	/* one record: *val malloc'd */
	int (*get)(void *impl, enum store_kind kind, const char *key, uint8_t **val, size_t *len);
	/* every record of kind, in key order, from one snapshot; a record that
	 * cannot be handed over as text (a key with a NUL, a value too large to
	 * read) goes to bad instead, with why, and the walk goes on */
	int (*each)(void *impl, enum store_kind kind,
	            int (*fn)(const char *key, const uint8_t *val, size_t len, void *arg),
	            int (*bad)(const void *key, size_t keylen, const char *why, void *arg), void *arg);
	/* put (val != NULL) or delete (-ENOENT when absent) */
	int (*put)(void *impl, enum store_kind kind, const char *key, const uint8_t *val, size_t len);
	/* as store_plan_activate */
	int (*plan_activate)(void *impl, int64_t now);
	/* the shared store's revision */
	int (*version)(void *impl, uint64_t *version);
	void (*close)(void *impl);
};

/** A store whose calls go to ops (impl is closed with the store). @return 0 or -ENOMEM. */
int store_open_remote(const struct store_remote_ops *ops, void *impl, struct store **out);

/** Is s a shared store (store_open_remote)? */
bool store_is_remote(const struct store *s);

/** Say why the last remote call of this thread failed (store_message shows it). */
void store_remote_error_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/** What store_remote_error_set said last on this thread. */
const char *store_remote_error(void);

/**
 * The record to write for in (checked) when old (NULL: none, or one that did
 * not decode) is stored, as store_put_by says: *out = what to write.
 * @return 0 unchanged (nothing to write), 1 changed, 2 added.
 */
int store_stamp(const struct store_domain *old, const struct store_domain *in, const char *user, int64_t now,
                struct store_domain *out);

/* ---- the local mirror of a shared store (the daemon with store.etcd) ---- */

/* One change seen in the shared store: a record put (val) or deleted (val NULL). */
struct store_change {
	enum store_kind kind;
	const char *key;
	const uint8_t *val;
	size_t len;
};

/**
 * Apply changes of the shared store to this (LMDB) store in one transaction,
 * with the revision they bring it to and the cluster they came from; with
 * full, the domains, standby and plan records are replaced by changes.
 * Every record is decoded strictly first: one that does not decode is left
 * out (*nbad counts them) and the rest applied. The change counter moves
 * when anything changed, so the daemon's poll picks it up.
 * @param plan_changed out, optional: a plan record was put or deleted.
 * @return 0, -EROFS, -ENOSPC, STORE_E_* / -errno.
 */
int store_mirror_apply(struct store *s, const struct store_change *ch, size_t n, bool full, uint64_t cluster,
                       int64_t revision, size_t *nbad, bool *plan_changed);

/**
 * As store_mirror_apply, and bad (optional) is called for each change left
 * out, with why (a key its kind cannot have, a value that does not decode),
 * before the transaction commits. A change is left out whole: a put whose
 * record does not decode keeps the last good version, also on a full copy
 * (only records whose keys are not in a full copy at all are removed); a
 * delete of a key no record can have touches nothing.
 */
int store_mirror_apply_ex(struct store *s, const struct store_change *ch, size_t n, bool full, uint64_t cluster,
                          int64_t revision, void (*bad)(const struct store_change *c, const char *why, void *arg),
                          void *arg, size_t *nbad, bool *plan_changed);

/** The cluster and revision the mirror last applied (0, 0: never). @return 0 or STORE_E_* / -errno. */
int store_mirror_state(struct store *s, uint64_t *cluster, int64_t *revision);
