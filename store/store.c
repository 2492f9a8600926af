/* SPDX-License-Identifier: BSD-3-Clause */
/* The LMDB store of EDNS domains: versioned binary records, a change counter. */
#include "store/store.h"

#include <arpa/inet.h>
#include <errno.h>
#include <lmdb.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "conf/text.h"

/* meta "format" holds the schema version, STORE_SCHEMA (store.h). */
#define RECORD_V1 1        /* first byte of a record value: its format */
#define RECORD_V2 2
#define RECORD_HEAD_V1 4   /* version, flags, policy, nforward */
#define RECORD_HEAD_V2 22  /* and added, changed (8 each), two name lengths */
#define RECORD_TARGET 19   /* family, port, 16 address bytes */
#define RECORD_SUBTREE 0x01
#define RECORD_FAMILY_V4 4
#define RECORD_FAMILY_V6 6
#define STORE_MAX_READERS 256 /* reader slots; the daemon uses a few, tools one */
#define STORE_GROW_TRIES 4    /* doublings tried when a write fills the map */
/* A write that fails with EIO while the file system has less than this free
 * was cut short by the full disk: LMDB turns a short pwrite into EIO. */
#define STORE_NEARLY_FULL ((unsigned long long)1 << 20)

#define META_VERSION "version"
#define META_FORMAT "format"
#define META_MIRROR_CLUSTER "mirror_cluster"   /* the shared store's cluster id */
#define META_MIRROR_REVISION "mirror_revision" /* and the revision applied */

/* Why the last remote call of this thread failed. */
static _Thread_local char remote_error[512];

void store_remote_error_set(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(remote_error, sizeof(remote_error), fmt, ap);
	va_end(ap);
}

const char *store_remote_error(void)
{
	return remote_error[0] ? remote_error : "no detail";
}

struct store {
	MDB_env *env;
	MDB_dbi domains;
	MDB_dbi meta;
	MDB_dbi standby;        /* partitions failed over (partdnsctl partition failover) */
	bool has_standby;       /* a reader of a store no writer of this version opened yet has none */
	MDB_dbi plan;           /* staged and activated partition plans (partdnsctl plan) */
	bool has_plan;
	bool readonly;
	unsigned stale_readers; /* reader slots of dead processes freed at open */
	unsigned migrated_from; /* schema the open migrated from; 0 = none */
	size_t migrated;        /* records it rewrote */
	char *dir;              /* for telling a full disk from an I/O error */
	/* Held shared by every transaction and exclusively to change the map
	 * size: LMDB requires that no transaction of this process is active
	 * then, and with MDB_NOTLS other threads may be reading. */
	pthread_rwlock_t maplock;
	/* A shared store (store_open_remote): every call goes to remote, none to LMDB. */
	const struct store_remote_ops *remote;
	void *impl;
};

/*
 * The last store_open on this thread refused for a newer schema: which
 * directory and what version, so store_message can name both versions (the
 * open failed, so there is no struct store to ask).
 */
static _Thread_local struct {
	uint32_t found;
	char dir[512];
} schema_refused;

/* Is the file system holding dir (nearly) out of space? */
static bool disk_nearly_full(const char *dir)
{
	struct statvfs vfs;
	if (dir == NULL || statvfs(dir, &vfs) != 0)
		return false;
	/* root may write into the blocks reserved for it, others may not. */
	unsigned long long blocks = geteuid() == 0 ? vfs.f_bfree : vfs.f_bavail;
	return blocks * vfs.f_frsize < STORE_NEARLY_FULL;
}

/* Translate an LMDB result into our codes; the one place LMDB codes enter. */
static int lmdb_error(int rc)
{
	switch (rc) {
	case MDB_SUCCESS:
		return 0;
	case MDB_NOTFOUND:
		return -ENOENT;
	case MDB_MAP_FULL:
	case MDB_TXN_FULL:
	case MDB_DBS_FULL:
	case MDB_PAGE_FULL:
		return -ENOSPC;
	case MDB_READERS_FULL:
		return -EAGAIN;
	case MDB_CORRUPTED:
	case MDB_PAGE_NOTFOUND:
	case MDB_INVALID:
	case MDB_BAD_VALSIZE:
		return STORE_E_CORRUPT;
	case MDB_VERSION_MISMATCH:
	case MDB_INCOMPATIBLE:
		return STORE_E_VERSION;
	default:
		/* LMDB passes system errors through as positive errno values. */
		if (rc > 0)
			return -rc;
		return STORE_E_LMDB;
	}
}

/*
 * lmdb_error for a call that may have written to dir: LMDB reports a pwrite
 * cut short (the disk filled up during the write) as EIO, which would tell
 * the operator about a broken disk instead of a full one.
 */
static int lmdb_write_error(const char *dir, int rc)
{
	int err = lmdb_error(rc);
	if (err == -EIO && disk_nearly_full(dir))
		return -ENOSPC;
	return err;
}

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint16_t get_be16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

static void put_be32(uint8_t *p, uint32_t v)
{
	put_be16(p, (uint16_t)(v >> 16));
	put_be16(p + 2, (uint16_t)v);
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)get_be16(p) << 16 | get_be16(p + 2);
}

static void put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		p[i] = (uint8_t)v;
		v >>= 8;
	}
}

static uint64_t get_be64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

/* True when text (len bytes, no NUL inside) is a normalized domain name. */
static bool name_is_normalized(const char *text, size_t len)
{
	char buf[256];
	if (len == 0 || len >= sizeof(buf) || memchr(text, '\0', len) != NULL)
		return false;
	char in[256];
	memcpy(in, text, len);
	in[len] = '\0';
	if (conf_name_normalize(in, buf, sizeof(buf)) != 0)
		return false;
	return strcmp(in, buf) == 0;
}

static int target_check(const struct conf_addr *a)
{
	if (a->ss.ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)&a->ss;
		if (a->len != sizeof(*sin) || sin->sin_port == 0)
			return -EINVAL;
		return 0;
	}
	if (a->ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&a->ss;
		/* A scope id does not survive the record; refuse rather than lose it. */
		if (a->len != sizeof(*sin6) || sin6->sin6_port == 0 || sin6->sin6_scope_id != 0)
			return -EINVAL;
		return 0;
	}
	return -EINVAL;
}

bool store_user_valid(const char *user)
{
	if (user == NULL)
		return false;
	size_t len = strnlen(user, STORE_USER_MAX + 1);
	if (len > STORE_USER_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)user[i];
		if (ch < 0x20 || ch > 0x7e || ch == '"' || ch == '\\')
			return false;
	}
	return true;
}

int store_domain_check(const struct store_domain *d)
{
	if (d == NULL)
		return -EINVAL;
	if (d->added < 0 || d->changed < 0)
		return -EINVAL;
	/* memchr first: the user fields of a caller's struct may lack a NUL. */
	if (memchr(d->added_by, '\0', sizeof(d->added_by)) == NULL ||
	    memchr(d->changed_by, '\0', sizeof(d->changed_by)) == NULL ||
	    !store_user_valid(d->added_by) || !store_user_valid(d->changed_by))
		return -EINVAL;
	size_t len = strnlen(d->name, sizeof(d->name));
	if (len == sizeof(d->name) || !name_is_normalized(d->name, len))
		return -EINVAL;
	if (d->policy != CONF_POLICY_ITERATE && d->policy != CONF_POLICY_FORWARD)
		return -EINVAL;
	if (d->nforward > STORE_MAX_FORWARD)
		return -EINVAL;
	if (d->policy == CONF_POLICY_ITERATE && d->nforward != 0)
		return -EINVAL;
	for (size_t i = 0; i < d->nforward; i++)
		if (target_check(&d->forward[i]) != 0)
			return -EINVAL;
	return 0;
}

int store_record_encode(const struct store_domain *d, uint8_t *buf, size_t size)
{
	if (store_domain_check(d) != 0)
		return -EINVAL;
	size_t alen = strlen(d->added_by), clen = strlen(d->changed_by);
	size_t targets = d->nforward * RECORD_TARGET;
	size_t need = RECORD_HEAD_V2 + targets + alen + clen;
	if (buf == NULL || size < need)
		return -ENOSPC;
	memset(buf, 0, need);
	buf[0] = RECORD_V2;
	buf[1] = d->subtree ? RECORD_SUBTREE : 0;
	buf[2] = (uint8_t)d->policy;
	buf[3] = (uint8_t)d->nforward;
	put_be64(buf + 4, (uint64_t)d->added);
	put_be64(buf + 12, (uint64_t)d->changed);
	buf[20] = (uint8_t)alen;
	buf[21] = (uint8_t)clen;
	memcpy(buf + RECORD_HEAD_V2 + targets, d->added_by, alen);
	memcpy(buf + RECORD_HEAD_V2 + targets + alen, d->changed_by, clen);
	for (size_t i = 0; i < d->nforward; i++) {
		uint8_t *t = buf + RECORD_HEAD_V2 + i * RECORD_TARGET;
		const struct conf_addr *a = &d->forward[i];
		if (a->ss.ss_family == AF_INET) {
			const struct sockaddr_in *sin = (const struct sockaddr_in *)&a->ss;
			t[0] = RECORD_FAMILY_V4;
			put_be16(t + 1, ntohs(sin->sin_port));
			memcpy(t + 3, &sin->sin_addr, 4);
		} else {
			const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&a->ss;
			t[0] = RECORD_FAMILY_V6;
			put_be16(t + 1, ntohs(sin6->sin6_port));
			memcpy(t + 3, &sin6->sin6_addr, 16);
		}
	}
	return (int)need;
}

/* Rebuild a conf_addr from a decoded target; text as "ADDR@PORT". */
static int target_decode(const uint8_t *t, struct conf_addr *a)
{
	char host[INET6_ADDRSTRLEN];
	uint16_t port = get_be16(t + 1);
	const uint8_t *addr = t + 3;
	if (port == 0)
		return STORE_E_CORRUPT;
	memset(a, 0, sizeof(*a));
	if (t[0] == RECORD_FAMILY_V4) {
		for (int i = 4; i < 16; i++)
			if (addr[i] != 0)
				return STORE_E_CORRUPT;
		struct sockaddr_in *sin = (struct sockaddr_in *)&a->ss;
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		memcpy(&sin->sin_addr, addr, 4);
		a->len = sizeof(*sin);
		inet_ntop(AF_INET, addr, host, sizeof(host));
	} else if (t[0] == RECORD_FAMILY_V6) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&a->ss;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		memcpy(&sin6->sin6_addr, addr, 16);
		a->len = sizeof(*sin6);
		inet_ntop(AF_INET6, addr, host, sizeof(host));
	} else {
		return STORE_E_CORRUPT;
	}
	snprintf(a->text, sizeof(a->text), "%s@%u", host, (unsigned)port);
	return 0;
}

/* A user name of a format-2 record: len bytes, each as store_user_valid allows. */
static bool user_decode(const uint8_t *p, size_t len, char *out)
{
	if (len > STORE_USER_MAX)
		return false;
	memcpy(out, p, len);
	out[len] = '\0';
	/* A NUL inside would end the name early: reject as the character check does. */
	return memchr(p, '\0', len) == NULL && store_user_valid(out);
}

int store_record_decode(const void *key, size_t keylen, const uint8_t *val, size_t len,
                        struct store_domain *out)
{
	if (key == NULL || val == NULL || out == NULL)
		return STORE_E_CORRUPT;
	if (keylen >= sizeof(out->name) || !name_is_normalized(key, keylen))
		return STORE_E_CORRUPT;
	if (len < RECORD_HEAD_V1 || (val[0] != RECORD_V1 && val[0] != RECORD_V2))
		return STORE_E_CORRUPT;
	if ((val[1] & ~RECORD_SUBTREE) != 0)
		return STORE_E_CORRUPT;
	if (val[2] != CONF_POLICY_ITERATE && val[2] != CONF_POLICY_FORWARD)
		return STORE_E_CORRUPT;
	size_t n = val[3];
	if (n > STORE_MAX_FORWARD || (val[2] == CONF_POLICY_ITERATE && n != 0))
		return STORE_E_CORRUPT;

	struct store_domain d;
	memset(&d, 0, sizeof(d));
	size_t head = RECORD_HEAD_V1;
	if (val[0] == RECORD_V2) {
		if (len < RECORD_HEAD_V2)
			return STORE_E_CORRUPT;
		uint64_t added = get_be64(val + 4), changed = get_be64(val + 12);
		if (added > INT64_MAX || changed > INT64_MAX)
			return STORE_E_CORRUPT;
		size_t alen = val[20], clen = val[21];
		head = RECORD_HEAD_V2;
		if (len != head + n * RECORD_TARGET + alen + clen)
			return STORE_E_CORRUPT;
		const uint8_t *names = val + head + n * RECORD_TARGET;
		if (!user_decode(names, alen, d.added_by) || !user_decode(names + alen, clen, d.changed_by))
			return STORE_E_CORRUPT;
		d.added = (int64_t)added;
		d.changed = (int64_t)changed;
	} else if (len != head + n * RECORD_TARGET) {
		return STORE_E_CORRUPT;
	}
	memcpy(d.name, key, keylen);
	d.subtree = (val[1] & RECORD_SUBTREE) != 0;
	d.policy = val[2] == CONF_POLICY_FORWARD ? CONF_POLICY_FORWARD : CONF_POLICY_ITERATE;
	d.nforward = n;
	for (size_t i = 0; i < n; i++)
		if (target_decode(val + head + i * RECORD_TARGET, &d.forward[i]) != 0)
			return STORE_E_CORRUPT;
	*out = d;
	return 0;
}

/* mkdir -p with mode for every directory it creates. */
static int mkdir_p(const char *dir, mode_t mode)
{
	char path[4096];
	size_t len = strlen(dir);
	if (len == 0 || len >= sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, dir, len + 1);
	for (size_t i = 1; i <= len; i++) {
		if (path[i] != '/' && path[i] != '\0')
			continue;
		char c = path[i];
		path[i] = '\0';
		if (mkdir(path, mode) != 0 && errno != EEXIST)
			return -errno;
		path[i] = c;
	}
	struct stat st;
	if (stat(dir, &st) != 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	return 0;
}

/* Begin a transaction with maplock held shared; adopts a map grown by another process. */
static int txn_begin(struct store *s, unsigned flags, MDB_txn **txn)
{
	for (int tries = 0;; tries++) {
		pthread_rwlock_rdlock(&s->maplock);
		int rc = mdb_txn_begin(s->env, NULL, flags, txn);
		if (rc == MDB_SUCCESS)
			return 0;
		pthread_rwlock_unlock(&s->maplock);
		if (rc != MDB_MAP_RESIZED || tries >= 2)
			return lmdb_error(rc);
		pthread_rwlock_wrlock(&s->maplock);
		rc = mdb_env_set_mapsize(s->env, 0);
		pthread_rwlock_unlock(&s->maplock);
		if (rc != MDB_SUCCESS)
			return lmdb_error(rc);
	}
}

static void txn_abort(struct store *s, MDB_txn *txn)
{
	mdb_txn_abort(txn);
	pthread_rwlock_unlock(&s->maplock);
}

static int txn_commit(struct store *s, MDB_txn *txn)
{
	int rc = mdb_txn_commit(txn); /* frees txn on failure too */
	pthread_rwlock_unlock(&s->maplock);
	return rc;
}

/* Double the map; no transaction of this process may be active. */
static int map_grow(struct store *s)
{
	MDB_envinfo info;
	pthread_rwlock_wrlock(&s->maplock);
	int rc = mdb_env_info(s->env, &info);
	if (rc == MDB_SUCCESS) {
		size_t size = info.me_mapsize;
		rc = size > SIZE_MAX / 2 ? MDB_MAP_FULL : mdb_env_set_mapsize(s->env, size * 2);
	}
	pthread_rwlock_unlock(&s->maplock);
	return lmdb_error(rc);
}

static int meta_get_u64(MDB_txn *txn, MDB_dbi dbi, const char *key, uint64_t *out)
{
	MDB_val k = { strlen(key), (void *)key }, v;
	int rc = mdb_get(txn, dbi, &k, &v);
	if (rc != MDB_SUCCESS)
		return lmdb_error(rc);
	if (v.mv_size != 8)
		return STORE_E_CORRUPT;
	*out = get_be64(v.mv_data);
	return 0;
}

static int meta_get_format(MDB_txn *txn, MDB_dbi dbi, uint32_t *out)
{
	MDB_val k = { strlen(META_FORMAT), (void *)META_FORMAT }, v;
	int rc = mdb_get(txn, dbi, &k, &v);
	if (rc != MDB_SUCCESS)
		return lmdb_error(rc);
	if (v.mv_size != 4)
		return STORE_E_CORRUPT;
	const uint8_t *p = v.mv_data;
	*out = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	return 0;
}

static int meta_put(MDB_txn *txn, MDB_dbi dbi, const char *key, const uint8_t *val, size_t len)
{
	MDB_val k = { strlen(key), (void *)key }, v = { len, (void *)val };
	return mdb_put(txn, dbi, &k, &v, 0);
}

static int meta_put_format(MDB_txn *txn, MDB_dbi dbi, uint32_t format)
{
	uint8_t f[4] = { (uint8_t)(format >> 24), (uint8_t)(format >> 16), (uint8_t)(format >> 8),
		         (uint8_t)format };
	return meta_put(txn, dbi, META_FORMAT, f, sizeof(f));
}

/*
 * Schema 1 -> 2 inside txn: every format-1 record rewritten as format 2 with
 * who/when unknown. A record that does not decode is left as it is: it is
 * corrupt either way, and refusing the whole open for it would leave the
 * operator no way to delete it. @return an LMDB code; *count records rewritten.
 */
static int migrate_v1(struct store *s, MDB_txn *txn, size_t *count)
{
	MDB_cursor *cur;
	*count = 0;
	int rc = mdb_cursor_open(txn, s->domains, &cur);
	if (rc != MDB_SUCCESS)
		return rc;
	MDB_val k, v;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == MDB_SUCCESS;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		struct store_domain d;
		uint8_t rec[STORE_RECORD_MAX];
		if (v.mv_size < 1 || ((const uint8_t *)v.mv_data)[0] != RECORD_V1 ||
		    store_record_decode(k.mv_data, k.mv_size, v.mv_data, v.mv_size, &d) != 0)
			continue;
		int len = store_record_encode(&d, rec, sizeof(rec));
		if (len < 0)
			continue; /* decoded, so storable: cannot happen */
		/* The key is copied out of the map: the put moves the node it points into. */
		char key[256];
		memcpy(key, k.mv_data, k.mv_size); /* decoded, so shorter than 256 */
		MDB_val nk = { k.mv_size, key }, nv = { (size_t)len, rec };
		if ((rc = mdb_cursor_put(cur, &nk, &nv, MDB_CURRENT)) != MDB_SUCCESS)
			break;
		(*count)++;
	}
	mdb_cursor_close(cur);
	if (rc == MDB_NOTFOUND)
		rc = meta_put_format(txn, s->meta, STORE_SCHEMA);
	return rc;
}

/*
 * Open the two databases, creating them and the meta keys when writable, and
 * migrating an older schema when writable. @param map_full out: the migration
 * filled the map (grow and call again).
 */
static int store_init(struct store *s, bool *map_full)
{
	MDB_txn *txn;
	*map_full = false;
	int err = txn_begin(s, s->readonly ? MDB_RDONLY : 0, &txn);
	if (err != 0)
		return err;
	unsigned create = s->readonly ? 0 : MDB_CREATE;
	int rc = mdb_dbi_open(txn, "meta", create, &s->meta);
	if (rc != MDB_SUCCESS) {
		txn_abort(s, txn);
		/* Readonly and never initialized by a writer: the store does not exist yet. */
		return lmdb_error(rc);
	}
	uint32_t format = 0;
	err = meta_get_format(txn, s->meta, &format);
	/* The schema first: a newer one is refused as such, whatever its databases. */
	if (err == 0 && format > STORE_SCHEMA) {
		/* Written by a newer partdns: its records may mean more than this
		 * build can read, and a write would lose that. */
		schema_refused.found = format;
		snprintf(schema_refused.dir, sizeof(schema_refused.dir), "%s", s->dir);
		err = STORE_E_VERSION;
	}
	if (err == 0 || err == -ENOENT) {
		rc = mdb_dbi_open(txn, "domains", create, &s->domains);
		if (rc != MDB_SUCCESS) {
			txn_abort(s, txn);
			return lmdb_error(rc);
		}
		/* Added without a schema change: older builds never open it, and a
		 * store without it has no partition failed over. */
		rc = mdb_dbi_open(txn, "standby", create, &s->standby);
		if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) {
			txn_abort(s, txn);
			return lmdb_error(rc);
		}
		s->has_standby = rc == MDB_SUCCESS;
		rc = mdb_dbi_open(txn, "plan", create, &s->plan);
		if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) {
			txn_abort(s, txn);
			return lmdb_error(rc);
		}
		s->has_plan = rc == MDB_SUCCESS;
	}
	if (err == -ENOENT && !s->readonly) {
		uint8_t v[8];
		put_be64(v, 0);
		rc = meta_put_format(txn, s->meta, STORE_SCHEMA);
		if (rc == MDB_SUCCESS)
			rc = meta_put(txn, s->meta, META_VERSION, v, sizeof(v));
		err = lmdb_write_error(s->dir, rc);
		format = STORE_SCHEMA;
	}
	if (err == 0 && format == 0)
		err = STORE_E_CORRUPT; /* no version 0 was ever written */
	if (err == 0 && format < STORE_SCHEMA && !s->readonly) {
		/* Format-1 records stay readable (store_record_decode), so a reader
		 * never needs this; a writer migrates so that the schema says what
		 * the records are. The change counter stays: the domains did not
		 * change, so a running daemon has nothing to reload. */
		size_t count = 0;
		rc = migrate_v1(s, txn, &count);
		*map_full = rc == MDB_MAP_FULL;
		err = lmdb_write_error(s->dir, rc);
		if (err == 0) {
			s->migrated_from = format;
			s->migrated = count;
		}
	}
	if (err != 0) {
		txn_abort(s, txn);
		return err;
	}
	/* Committing keeps the database handles, for a read transaction too. */
	rc = txn_commit(s, txn);
	*map_full = rc == MDB_MAP_FULL;
	if (rc != MDB_SUCCESS) {
		s->migrated_from = 0;
		s->migrated = 0;
	}
	return lmdb_write_error(s->dir, rc);
}

unsigned store_migrated_from(const struct store *s, size_t *records)
{
	if (records != NULL)
		*records = s != NULL ? s->migrated : 0;
	return s != NULL ? s->migrated_from : 0;
}

int store_open_size(const char *dir, bool readonly, size_t mapsize, struct store **out)
{
	if (dir == NULL || *dir == '\0' || out == NULL)
		return -EINVAL;
	*out = NULL;
	schema_refused.found = 0;
	/* Never created here: a mistyped path must not become an empty store. */
	int err = store_prepare_dir(dir, false);
	if (err != 0)
		return err;

	struct store *s = calloc(1, sizeof(*s));
	if (s == NULL)
		return -ENOMEM;
	s->readonly = readonly;
	s->dir = strdup(dir);
	if (s->dir == NULL || pthread_rwlock_init(&s->maplock, NULL) != 0) {
		free(s->dir);
		free(s);
		return -ENOMEM;
	}
	int rc = mdb_env_create(&s->env);
	if (rc != MDB_SUCCESS) {
		pthread_rwlock_destroy(&s->maplock);
		free(s->dir);
		free(s);
		return lmdb_error(rc);
	}
	rc = mdb_env_set_maxdbs(s->env, 4);
	if (rc == MDB_SUCCESS)
		rc = mdb_env_set_maxreaders(s->env, STORE_MAX_READERS);
	if (rc == MDB_SUCCESS)
		rc = mdb_env_set_mapsize(s->env, mapsize ? mapsize : STORE_MAPSIZE_DEFAULT);
	/* MDB_NOTLS: read transactions are not tied to a thread, so a reader may
	 * be used from any thread. No MDB_NOSYNC/NOMETASYNC: a commit is on disk
	 * when it returns, so a kill -9 loses nothing committed. */
	unsigned flags = MDB_NOTLS | (readonly ? MDB_RDONLY : 0);
	if (rc == MDB_SUCCESS)
		rc = mdb_env_open(s->env, dir, flags, 0640);
	err = readonly ? lmdb_error(rc) : lmdb_write_error(dir, rc);
	if (err == 0) {
		/* Free reader slots of processes that died (kill -9) with a txn
		 * open: they pin old pages, so the file would only grow. A failed
		 * check is no reason not to open; the slots stay taken. */
		int dead = 0;
		if (mdb_reader_check(s->env, &dead) == MDB_SUCCESS && dead > 0)
			s->stale_readers = (unsigned)dead;
		bool map_full;
		err = store_init(s, &map_full);
		/* A migration rewrites every record (copy-on-write): it may need a
		 * bigger map than the store has. */
		for (int tries = 0; err != 0 && map_full && tries < STORE_GROW_TRIES; tries++) {
			if ((err = map_grow(s)) == 0)
				err = store_init(s, &map_full);
		}
	}
	if (err != 0) {
		mdb_env_close(s->env);
		pthread_rwlock_destroy(&s->maplock);
		free(s->dir);
		free(s);
		return err;
	}
	*out = s;
	return 0;
}

int store_open(const char *dir, bool readonly, struct store **out)
{
	return store_open_size(dir, readonly, 0, out);
}

int store_open_remote(const struct store_remote_ops *ops, void *impl, struct store **out)
{
	struct store *s = calloc(1, sizeof(*s));
	if (s == NULL)
		return -ENOMEM;
	s->remote = ops;
	s->impl = impl;
	s->has_standby = s->has_plan = true;
	*out = s;
	return 0;
}

bool store_is_remote(const struct store *s)
{
	return s != NULL && s->remote != NULL;
}

void store_close(struct store *s)
{
	if (s == NULL)
		return;
	if (s->remote != NULL) {
		s->remote->close(s->impl);
		free(s);
		return;
	}
	mdb_env_close(s->env);
	pthread_rwlock_destroy(&s->maplock);
	free(s->dir);
	free(s);
}

unsigned store_stale_readers(const struct store *s)
{
	return s != NULL ? s->stale_readers : 0;
}

int store_prepare_dir(const char *dir, bool create)
{
	if (dir == NULL || *dir == '\0')
		return -EINVAL;
	struct stat st;
	if (stat(dir, &st) == 0)
		return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
	if (errno != ENOENT || !create)
		return -errno;
	return mkdir_p(dir, 0750);
}

/* Add one to meta "version" inside txn. @return an LMDB code. */
static int version_bump(struct store *s, MDB_txn *txn)
{
	MDB_val k = { strlen(META_VERSION), (void *)META_VERSION }, v;
	uint64_t version = 0;
	int rc = mdb_get(txn, s->meta, &k, &v);
	if (rc == MDB_SUCCESS) {
		if (v.mv_size != 8)
			return MDB_CORRUPTED;
		version = get_be64(v.mv_data);
	} else if (rc != MDB_NOTFOUND) {
		return rc;
	}
	uint8_t buf[8];
	put_be64(buf, version + 1);
	return meta_put(txn, s->meta, META_VERSION, buf, sizeof(buf));
}

/* Same match, policy and targets (the who/when aside)? Both are valid. */
static bool same_content(const struct store_domain *a, const struct store_domain *b)
{
	struct store_domain x = *a, y = *b;
	uint8_t ra[STORE_RECORD_MAX], rb[STORE_RECORD_MAX];
	/* Compare the encodings: the targets' bytes, not their text or padding. */
	x.added = x.changed = y.added = y.changed = 0;
	x.added_by[0] = x.changed_by[0] = y.added_by[0] = y.changed_by[0] = '\0';
	int la = store_record_encode(&x, ra, sizeof(ra)), lb = store_record_encode(&y, rb, sizeof(rb));
	return la > 0 && la == lb && memcmp(ra, rb, (size_t)la) == 0;
}

static bool has_history(const struct store_domain *d)
{
	return d->added != 0 || d->changed != 0 || d->added_by[0] != '\0' || d->changed_by[0] != '\0';
}

/* Binary search in names (sorted with strcmp) for the key k. */
static bool name_in(const char *const *names, size_t n, const MDB_val *k)
{
	char key[256];
	if (k->mv_size >= sizeof(key))
		return false;
	memcpy(key, k->mv_data, k->mv_size);
	key[k->mv_size] = '\0';
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(names[mid], key);
		if (c == 0)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

int store_stamp(const struct store_domain *old, const struct store_domain *in, const char *user, int64_t now,
                struct store_domain *out)
{
	*out = *in;
	if (old != NULL) {
		if (same_content(old, in))
			return 0;
		out->added = old->added;
		memcpy(out->added_by, old->added_by, sizeof(out->added_by));
		out->changed = now;
		snprintf(out->changed_by, sizeof(out->changed_by), "%s", user);
		return 1;
	}
	/* A record that does not decode is overwritten as if new: the operator
	 * is replacing what could not be read. */
	if (!has_history(in)) {
		out->added = out->changed = now;
		snprintf(out->added_by, sizeof(out->added_by), "%s", user);
		snprintf(out->changed_by, sizeof(out->changed_by), "%s", user);
	}
	return 2;
}

/* Write one entry inside txn, stamped as store_put_by says. @return an LMDB code. */
static int put_one(struct store *s, MDB_txn *txn, const struct store_domain *in, const char *user,
                   int64_t now, struct store_counts *counts)
{
	MDB_val k = { strlen(in->name), (void *)in->name }, v;
	struct store_domain d, old;
	int rc = mdb_get(txn, s->domains, &k, &v);
	if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND)
		return rc;
	bool have = rc == MDB_SUCCESS && store_record_decode(k.mv_data, k.mv_size, v.mv_data, v.mv_size, &old) == 0;
	switch (store_stamp(have ? &old : NULL, in, user, now, &d)) {
	case 0:
		counts->unchanged++;
		return MDB_SUCCESS;
	case 1:
		counts->changed++;
		break;
	default:
		counts->added++;
	}
	uint8_t rec[STORE_RECORD_MAX];
	int len = store_record_encode(&d, rec, sizeof(rec));
	if (len < 0)
		return MDB_BAD_VALSIZE; /* checked before the transaction: cannot happen */
	v.mv_size = (size_t)len;
	v.mv_data = rec;
	return mdb_put(txn, s->domains, &k, &v, 0);
}

/* Delete every stored name not in names (n, sorted). @return an LMDB code. */
static int remove_others(struct store *s, MDB_txn *txn, const char *const *names, size_t n,
                         struct store_counts *counts)
{
	MDB_cursor *cur;
	int rc = mdb_cursor_open(txn, s->domains, &cur);
	if (rc != MDB_SUCCESS)
		return rc;
	MDB_val k, v;
	rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
	while (rc == MDB_SUCCESS) {
		if (name_in(names, n, &k)) {
			rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
			continue;
		}
		if ((rc = mdb_cursor_del(cur, 0)) != MDB_SUCCESS)
			break;
		counts->removed++;
		/* After a delete the cursor stands on the next entry, and LMDB's
		 * MDB_NEXT returns that one (not the one after). */
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? MDB_SUCCESS : rc;
}

/* One attempt at writing the batch; returns the raw failure for MAP_FULL handling. */
static int write_once(struct store *s, const struct store_domain *d, size_t n, const char *user,
                      const char *const *names, bool replace, struct store_counts *counts,
                      bool *map_full)
{
	MDB_txn *txn;
	*map_full = false;
	memset(counts, 0, sizeof(*counts));
	int err = txn_begin(s, 0, &txn);
	if (err != 0)
		return err;
	int64_t now = (int64_t)time(NULL);
	int rc = MDB_SUCCESS;
	for (size_t i = 0; i < n && rc == MDB_SUCCESS; i++)
		rc = put_one(s, txn, &d[i], user, now, counts);
	if (rc == MDB_SUCCESS && replace)
		rc = remove_others(s, txn, names, n, counts);
	if (rc == MDB_SUCCESS)
		rc = version_bump(s, txn);
	if (rc != MDB_SUCCESS) {
		txn_abort(s, txn);
		*map_full = rc == MDB_MAP_FULL;
		return lmdb_write_error(s->dir, rc);
	}
	rc = txn_commit(s, txn);
	if (rc != MDB_SUCCESS) {
		*map_full = rc == MDB_MAP_FULL;
		return lmdb_write_error(s->dir, rc);
	}
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int write_batch(struct store *s, const struct store_domain *d, size_t n, const char *user,
                       bool replace, struct store_counts *counts)
{
	struct store_counts scratch;
	if (counts == NULL)
		counts = &scratch;
	memset(counts, 0, sizeof(*counts));
	if (s == NULL || (d == NULL && n > 0))
		return -EINVAL;
	if (user == NULL)
		user = "";
	if (!store_user_valid(user))
		return -EINVAL;
	if (s->readonly)
		return -EROFS;
	/* Validate everything before touching the store, so a bad entry writes nothing. */
	for (size_t i = 0; i < n; i++)
		if (store_domain_check(&d[i]) != 0)
			return -EINVAL;
	if (n == 0 && !replace)
		return 0;
	if (s->remote != NULL)
		return s->remote->write_domains(s->impl, d, n, user, replace, counts);
	const char **names = NULL;
	if (replace && n > 0) {
		if ((names = malloc(n * sizeof(*names))) == NULL)
			return -ENOMEM;
		for (size_t i = 0; i < n; i++)
			names[i] = d[i].name;
		qsort(names, n, sizeof(*names), cmp_names);
	}
	int err;
	for (int tries = 0;; tries++) {
		bool map_full;
		err = write_once(s, d, n, user, names, replace, counts, &map_full);
		if (!map_full || tries >= STORE_GROW_TRIES)
			break;
		/* The map is full: grow it and retry the whole (aborted) batch. */
		if ((err = map_grow(s)) != 0)
			break;
	}
	free(names);
	if (err != 0)
		memset(counts, 0, sizeof(*counts));
	return err;
}

int store_put_by(struct store *s, const struct store_domain *d, size_t n, const char *user,
                 struct store_counts *counts)
{
	return write_batch(s, d, n, user, false, counts);
}

int store_replace_all(struct store *s, const struct store_domain *d, size_t n, const char *user,
                      struct store_counts *counts)
{
	return write_batch(s, d, n, user, true, counts);
}

int store_put_many(struct store *s, const struct store_domain *d, size_t n, size_t *nreplaced)
{
	struct store_counts c;
	int err = write_batch(s, d, n, NULL, false, &c);
	if (nreplaced != NULL)
		*nreplaced = err == 0 ? c.changed + c.unchanged : 0;
	return err;
}

int store_put(struct store *s, const struct store_domain *d)
{
	return store_put_many(s, d, 1, NULL);
}

int store_del(struct store *s, const char *name)
{
	if (s == NULL || name == NULL)
		return -EINVAL;
	if (s->readonly)
		return -EROFS;
	size_t len = strlen(name);
	if (!name_is_normalized(name, len))
		return -EINVAL;
	if (s->remote != NULL)
		return s->remote->put(s->impl, STORE_KIND_DOMAIN, name, NULL, 0);
	for (int tries = 0;; tries++) {
		MDB_txn *txn;
		int err = txn_begin(s, 0, &txn);
		if (err != 0)
			return err;
		MDB_val k = { len, (void *)name };
		int rc = mdb_del(txn, s->domains, &k, NULL);
		if (rc == MDB_SUCCESS)
			rc = version_bump(s, txn);
		if (rc != MDB_SUCCESS)
			txn_abort(s, txn);
		else
			rc = txn_commit(s, txn);
		if (rc == MDB_SUCCESS)
			return 0;
		/* A delete needs pages too (copy-on-write), so it can fill the map. */
		if (rc != MDB_MAP_FULL || tries >= STORE_GROW_TRIES)
			return lmdb_write_error(s->dir, rc);
		if ((err = map_grow(s)) != 0)
			return err;
	}
}

int store_get(struct store *s, const char *name, struct store_domain *out)
{
	if (s == NULL || name == NULL || out == NULL)
		return -EINVAL;
	size_t len = strlen(name);
	if (len == 0 || len >= sizeof(out->name))
		return -EINVAL;
	if (s->remote != NULL) {
		uint8_t *v;
		size_t vlen;
		int err = s->remote->get(s->impl, STORE_KIND_DOMAIN, name, &v, &vlen);
		if (err == 0) {
			err = store_record_decode(name, len, v, vlen, out);
			free(v);
		}
		return err;
	}
	MDB_txn *txn;
	int err = txn_begin(s, MDB_RDONLY, &txn);
	if (err != 0)
		return err;
	MDB_val k = { len, (void *)name }, v;
	int rc = mdb_get(txn, s->domains, &k, &v);
	if (rc == MDB_SUCCESS)
		err = store_record_decode(k.mv_data, k.mv_size, v.mv_data, v.mv_size, out);
	else
		err = lmdb_error(rc);
	txn_abort(s, txn);
	return err;
}

struct remote_each {
	int (*domain_fn)(const struct store_domain *d, void *arg);
	int (*standby_fn)(const struct store_standby *b, void *arg);
	int (*bad_fn)(const void *key, size_t keylen, const char *why, void *arg); /* NULL: stop at one */
	void *arg;
	bool corrupt; /* a standby record was skipped */
};

static int remote_domain(const char *key, const uint8_t *val, size_t len, void *arg)
{
	struct remote_each *r = arg;
	struct store_domain d;
	int err = store_record_decode(key, strlen(key), val, len, &d);
	if (err != 0)
		return r->bad_fn != NULL ? r->bad_fn(key, strlen(key), "does not decode as a domain record", r->arg)
		                         : err;
	return r->domain_fn(&d, r->arg);
}

static int remote_standby(const char *key, const uint8_t *val, size_t len, void *arg)
{
	struct remote_each *r = arg;
	struct store_standby b;
	if (store_standby_decode(key, strlen(key), val, len, &b) != 0) {
		r->corrupt = true; /* as from LMDB: skipped, reported after the others */
		return 0;
	}
	return r->standby_fn(&b, r->arg);
}

/* A record the shared store could not hand over (its key holds a NUL, its value is too large). */
static int remote_bad(const void *key, size_t keylen, const char *why, void *arg)
{
	struct remote_each *r = arg;
	if (r->standby_fn != NULL) {
		r->corrupt = true;
		return 0;
	}
	return r->bad_fn != NULL ? r->bad_fn(key, keylen, why, r->arg) : STORE_E_CORRUPT;
}

/* store_foreach (bad NULL: the first record that does not decode ends the walk) and store_foreach_all. */
static int foreach_domain(struct store *s, int (*fn)(const struct store_domain *d, void *arg),
                          int (*bad)(const void *key, size_t keylen, const char *why, void *arg), void *arg)
{
	if (s == NULL || fn == NULL)
		return -EINVAL;
	if (s->remote != NULL) {
		struct remote_each r = { .domain_fn = fn, .bad_fn = bad, .arg = arg };
		return s->remote->each(s->impl, STORE_KIND_DOMAIN, remote_domain, remote_bad, &r);
	}
	MDB_txn *txn;
	int err = txn_begin(s, MDB_RDONLY, &txn);
	if (err != 0)
		return err;
	MDB_cursor *cur;
	int rc = mdb_cursor_open(txn, s->domains, &cur);
	if (rc != MDB_SUCCESS) {
		txn_abort(s, txn);
		return lmdb_error(rc);
	}
	MDB_val k, v;
	struct store_domain d;
	err = 0;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == MDB_SUCCESS;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		err = store_record_decode(k.mv_data, k.mv_size, v.mv_data, v.mv_size, &d);
		if (err != 0 && bad != NULL)
			err = bad(k.mv_data, k.mv_size, "does not decode as a domain record", arg);
		else if (err == 0)
			err = fn(&d, arg);
		if (err != 0)
			break;
	}
	if (err == 0 && rc != MDB_NOTFOUND)
		err = lmdb_error(rc);
	mdb_cursor_close(cur);
	txn_abort(s, txn);
	return err;
}

int store_foreach(struct store *s, int (*fn)(const struct store_domain *d, void *arg), void *arg)
{
	return foreach_domain(s, fn, NULL, arg);
}

int store_foreach_all(struct store *s, int (*fn)(const struct store_domain *d, void *arg),
                      int (*bad)(const void *key, size_t keylen, const char *why, void *arg), void *arg)
{
	return foreach_domain(s, fn, bad, arg);
}

const char *store_key_escape(const void *key, size_t len, char *buf, size_t size)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *k = key;
	size_t o = 0;
	if (size < 4) {
		if (size > 0)
			buf[0] = '\0';
		return buf;
	}
	for (size_t i = 0; i < len; i++) {
		bool plain = k[i] >= 0x20 && k[i] < 0x7f && k[i] != '\\';
		/* always room left for "..." and the NUL: a cut key says so */
		if (o + (plain ? 1 : 4) + 4 > size) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		if (plain) {
			buf[o++] = (char)k[i];
		} else {
			buf[o++] = '\\';
			buf[o++] = 'x';
			buf[o++] = hex[k[i] >> 4];
			buf[o++] = hex[k[i] & 0xf];
		}
	}
	buf[o] = '\0';
	return buf;
}

int store_version(struct store *s, uint64_t *version)
{
	if (s == NULL || version == NULL)
		return -EINVAL;
	if (s->remote != NULL)
		return s->remote->version(s->impl, version);
	MDB_txn *txn;
	int err = txn_begin(s, MDB_RDONLY, &txn);
	if (err != 0)
		return err;
	err = meta_get_u64(txn, s->meta, META_VERSION, version);
	txn_abort(s, txn);
	if (err == -ENOENT) {
		*version = 0;
		err = 0;
	}
	return err;
}

const char *store_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case STORE_E_LMDB:
		return "LMDB error";
	case STORE_E_CORRUPT:
		return "store is corrupt (a record or the file does not decode)";
	case STORE_E_VERSION:
		return "store was written by an incompatible version";
	case -ENOSPC:
	case -EDQUOT:
		return "no space left for the store: LMDB map full / disk full";
	case -EROFS:
		return "store is open readonly";
	case STORE_E_REMOTE:
		return "the shared store failed";
	case STORE_E_CONFLICT:
		return "the shared store kept changing under this change (other writers); try again";
	default:
		if (err < 0 && err > -4096)
			return strerror(-err);
		return "unknown error";
	}
}

const char *store_message(int err, const char *dir, char *buf, size_t size)
{
	struct stat st;
	if (dir == NULL)
		dir = "(none)";
	if (err == -ENOENT && stat(dir, &st) != 0 && errno == ENOENT)
		snprintf(buf, size,
		         "store directory %s does not exist (set server.create_store: true, or run "
		         "partdnsctl domain add --create)",
		         dir);
	else if (err == STORE_E_REMOTE)
		snprintf(buf, size, "shared store: %s", store_remote_error());
	else if (err == -ENOSPC || err == -EDQUOT)
		snprintf(buf, size, "no space left for the store (%s): LMDB map full / disk full", dir);
	else if (err == STORE_E_VERSION && schema_refused.found != 0 &&
	         strcmp(schema_refused.dir, dir) == 0)
		snprintf(buf, size,
		         "store %s has schema version %u; this partdns knows schema versions up to %d: "
		         "upgrade partdns (and partdnsctl) to use this store",
		         dir, (unsigned)schema_refused.found, STORE_SCHEMA);
	else
		snprintf(buf, size, "store %s: %s", dir, store_strerror(err));
	return buf;
}

/* ---- partitions failed over to their standby identity ---- */

#define STANDBY_V1 1

int store_standby_encode(const struct store_standby *b, uint8_t *buf, size_t size)
{
	size_t tl = strlen(b->to), ul = strlen(b->by);
	if (tl >= sizeof(b->to) || ul >= sizeof(b->by) || !store_user_valid(b->by))
		return -EINVAL;
	size_t need = 1 + 1 + tl + 1 + ul + 8;
	if (need > size)
		return -ENOSPC;
	uint8_t *p = buf;
	*p++ = STANDBY_V1;
	*p++ = (uint8_t)tl;
	memcpy(p, b->to, tl);
	p += tl;
	*p++ = (uint8_t)ul;
	memcpy(p, b->by, ul);
	p += ul;
	put_be64(p, (uint64_t)b->since);
	return (int)need;
}

/* Printable ASCII without spaces: a partition name, an address, or nothing. */
static bool standby_text_valid(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] <= 0x20 || s[i] >= 0x7f)
			return false;
	return true;
}

int store_standby_decode(const void *key, size_t keylen, const uint8_t *val, size_t len,
                         struct store_standby *out)
{
	memset(out, 0, sizeof(*out));
	if (keylen == 0 || keylen >= sizeof(out->partition) || memchr(key, '\0', keylen) != NULL ||
	    !standby_text_valid(key, keylen))
		return STORE_E_CORRUPT;
	memcpy(out->partition, key, keylen);
	size_t o = 0;
	if (len < 2 || val[o++] != STANDBY_V1)
		return STORE_E_CORRUPT;
	size_t tl = val[o++];
	if (tl >= sizeof(out->to) || len < o + tl + 1)
		return STORE_E_CORRUPT;
	memcpy(out->to, val + o, tl);
	o += tl;
	size_t ul = val[o++];
	if (ul >= sizeof(out->by) || len != o + ul + 8)
		return STORE_E_CORRUPT;
	memcpy(out->by, val + o, ul);
	o += ul;
	out->since = (int64_t)get_be64(val + o);
	if (!standby_text_valid(out->to, tl) || memchr(out->by, '\0', ul) != NULL || !store_user_valid(out->by) ||
	    out->since < 0)
		return STORE_E_CORRUPT;
	return 0;
}

/* Run fn in one write transaction; the change counter moves (with bump); the map grows if needed. */
static int write_txn_ex(struct store *s, int (*fn)(struct store *s, MDB_txn *txn, void *arg), void *arg,
                        bool bump)
{
	for (int tries = 0;; tries++) {
		MDB_txn *txn;
		int err = txn_begin(s, 0, &txn);
		if (err != 0)
			return err;
		int rc = fn(s, txn, arg);
		if (rc == MDB_SUCCESS && bump)
			rc = version_bump(s, txn);
		if (rc != MDB_SUCCESS)
			txn_abort(s, txn);
		else
			rc = txn_commit(s, txn);
		if (rc == MDB_SUCCESS)
			return 0;
		if (rc == MDB_NOTFOUND)
			return -ENOENT;
		if (rc == STORE_E_CORRUPT || rc == -ENOMEM || rc == -EINVAL)
			return rc;
		if (rc != MDB_MAP_FULL || tries >= STORE_GROW_TRIES)
			return lmdb_write_error(s->dir, rc);
		if ((err = map_grow(s)) != 0)
			return err;
	}
}

static int write_txn(struct store *s, int (*fn)(struct store *s, MDB_txn *txn, void *arg), void *arg)
{
	return write_txn_ex(s, fn, arg, true);
}

struct standby_write_arg {
	const char *partition;
	const uint8_t *val;
	size_t vlen;
};

static int standby_write_txn(struct store *s, MDB_txn *txn, void *arg)
{
	const struct standby_write_arg *a = arg;
	MDB_val k = { strlen(a->partition), (void *)a->partition }, v = { a->vlen, (void *)a->val };
	return a->val != NULL ? mdb_put(txn, s->standby, &k, &v, 0) : mdb_del(txn, s->standby, &k, NULL);
}

/* Put (val != NULL) or delete partition's standby record, bumping the change counter. */
static int standby_write(struct store *s, const char *partition, const uint8_t *val, size_t vlen)
{
	if (s->remote != NULL)
		return s->remote->put(s->impl, STORE_KIND_STANDBY, partition, val, vlen);
	if (s->readonly)
		return -EROFS;
	if (!s->has_standby)
		return -EROFS; /* cannot happen: a writer's open creates it */
	struct standby_write_arg a = { partition, val, vlen };
	return write_txn(s, standby_write_txn, &a);
}

int store_standby_set(struct store *s, const struct store_standby *b)
{
	if (s == NULL || b == NULL || b->partition[0] == '\0' ||
	    !standby_text_valid(b->partition, strlen(b->partition)) || !standby_text_valid(b->to, strlen(b->to)))
		return -EINVAL;
	uint8_t buf[1 + 1 + sizeof(b->to) + 1 + sizeof(b->by) + 8];
	int n = store_standby_encode(b, buf, sizeof(buf));
	if (n < 0)
		return n;
	return standby_write(s, b->partition, buf, (size_t)n);
}

int store_standby_clear(struct store *s, const char *partition)
{
	if (s == NULL || partition == NULL || partition[0] == '\0' || strlen(partition) >= STORE_PARTITION_MAX)
		return -EINVAL;
	return standby_write(s, partition, NULL, 0);
}

int store_standby_foreach(struct store *s, int (*fn)(const struct store_standby *b, void *arg), void *arg)
{
	if (s == NULL || fn == NULL)
		return -EINVAL;
	if (s->remote != NULL) {
		struct remote_each r = { .standby_fn = fn, .arg = arg };
		int err = s->remote->each(s->impl, STORE_KIND_STANDBY, remote_standby, remote_bad, &r);
		return err == 0 && r.corrupt ? STORE_E_CORRUPT : err;
	}
	if (!s->has_standby)
		return 0;
	MDB_txn *txn;
	int err = txn_begin(s, MDB_RDONLY, &txn);
	if (err != 0)
		return err;
	MDB_cursor *cur;
	int rc = mdb_cursor_open(txn, s->standby, &cur);
	if (rc != MDB_SUCCESS) {
		txn_abort(s, txn);
		return lmdb_error(rc);
	}
	MDB_val k, v;
	struct store_standby b;
	err = 0;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == MDB_SUCCESS;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		/* one bad record must not hide the others' failovers: skipped, reported */
		if (store_standby_decode(k.mv_data, k.mv_size, v.mv_data, v.mv_size, &b) != 0) {
			err = STORE_E_CORRUPT;
			continue;
		}
		int r = fn(&b, arg);
		if (r != 0) {
			err = r;
			break;
		}
	}
	if (err == 0 && rc != MDB_NOTFOUND && rc != MDB_SUCCESS)
		err = lmdb_error(rc);
	mdb_cursor_close(cur);
	txn_abort(s, txn);
	return err;
}

/* ---- partition plans: staged ("next") and activated ("active") ---- */

#define PLAN_V1 1
#define PLAN_HEAD (1 + 4 + 8 + 8 + 8 + 1)

static bool plan_which_ok(const char *which)
{
	return which != NULL && (strcmp(which, STORE_PLAN_NEXT) == 0 || strcmp(which, STORE_PLAN_ACTIVE) == 0);
}

/* u8 version, u32 serial, i64 staged_at, activate_at, activated_at, u8 user length + user, then the text */
uint8_t *store_plan_encode(const struct store_plan *p, size_t *len)
{
	size_t ul = strlen(p->by);
	if (ul >= sizeof(p->by) || !store_user_valid(p->by) || p->len > STORE_PLAN_MAX ||
	    (p->len > 0 && p->text == NULL))
		return NULL;
	*len = PLAN_HEAD + ul + p->len;
	uint8_t *b = malloc(*len);
	if (b == NULL)
		return NULL;
	uint8_t *o = b;
	*o++ = PLAN_V1;
	put_be32(o, p->serial);
	put_be64(o + 4, (uint64_t)p->staged_at);
	put_be64(o + 12, (uint64_t)p->activate_at);
	put_be64(o + 20, (uint64_t)p->activated_at);
	o += 28;
	*o++ = (uint8_t)ul;
	memcpy(o, p->by, ul);
	o += ul;
	if (p->len > 0)
		memcpy(o, p->text, p->len);
	return b;
}

int store_plan_decode(const uint8_t *v, size_t len, struct store_plan *out)
{
	memset(out, 0, sizeof(*out));
	if (len < PLAN_HEAD || v[0] != PLAN_V1)
		return STORE_E_CORRUPT;
	out->serial = get_be32(v + 1);
	out->staged_at = (int64_t)get_be64(v + 5);
	out->activate_at = (int64_t)get_be64(v + 13);
	out->activated_at = (int64_t)get_be64(v + 21);
	size_t ul = v[29];
	if (ul >= sizeof(out->by) || len < PLAN_HEAD + ul || out->staged_at < 0 || out->activate_at < 0 ||
	    out->activated_at < 0)
		return STORE_E_CORRUPT;
	memcpy(out->by, v + PLAN_HEAD, ul);
	if (memchr(out->by, '\0', ul) != NULL || !store_user_valid(out->by))
		return STORE_E_CORRUPT;
	out->len = len - PLAN_HEAD - ul;
	if (out->len > STORE_PLAN_MAX)
		return STORE_E_CORRUPT;
	out->text = malloc(out->len + 1);
	if (out->text == NULL)
		return -ENOMEM;
	memcpy(out->text, v + PLAN_HEAD + ul, out->len);
	out->text[out->len] = '\0';
	return 0;
}

void store_plan_clear(struct store_plan *p)
{
	free(p->text);
	p->text = NULL;
	p->len = 0;
}

/* One write transaction of plan changes (write_txn). */
static int plan_write(struct store *s, int (*fn)(struct store *s, MDB_txn *txn, void *arg), void *arg)
{
	if (s->readonly || !s->has_plan)
		return -EROFS;
	return write_txn(s, fn, arg);
}

struct plan_put_arg {
	const char *which;
	const struct store_plan *p;
};

static int plan_put_txn(struct store *s, MDB_txn *txn, void *arg)
{
	const struct plan_put_arg *a = arg;
	size_t len;
	uint8_t *b = store_plan_encode(a->p, &len);
	if (b == NULL)
		return -EINVAL;
	MDB_val k = { strlen(a->which), (void *)a->which }, v = { len, b };
	int rc = mdb_put(txn, s->plan, &k, &v, 0);
	free(b);
	return rc;
}

int store_plan_put(struct store *s, const char *which, const struct store_plan *p)
{
	if (s == NULL || !plan_which_ok(which) || p == NULL || p->serial == 0)
		return -EINVAL;
	if (s->remote != NULL) {
		size_t len;
		uint8_t *b = store_plan_encode(p, &len);
		if (b == NULL)
			return -EINVAL;
		int err = s->remote->put(s->impl, STORE_KIND_PLAN, which, b, len);
		free(b);
		return err;
	}
	struct plan_put_arg a = { which, p };
	return plan_write(s, plan_put_txn, &a);
}

static int plan_del_txn(struct store *s, MDB_txn *txn, void *arg)
{
	const char *which = arg;
	MDB_val k = { strlen(which), (void *)which };
	return mdb_del(txn, s->plan, &k, NULL);
}

int store_plan_del(struct store *s, const char *which)
{
	if (s == NULL || !plan_which_ok(which))
		return -EINVAL;
	if (s->remote != NULL)
		return s->remote->put(s->impl, STORE_KIND_PLAN, which, NULL, 0);
	return plan_write(s, plan_del_txn, (void *)which);
}

int store_plan_get(struct store *s, const char *which, struct store_plan *out)
{
	if (s == NULL || !plan_which_ok(which) || out == NULL)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (s->remote != NULL) {
		uint8_t *v;
		size_t len;
		int err = s->remote->get(s->impl, STORE_KIND_PLAN, which, &v, &len);
		if (err == 0) {
			err = store_plan_decode(v, len, out);
			free(v);
		}
		return err;
	}
	if (!s->has_plan)
		return -ENOENT;
	MDB_txn *txn;
	int err = txn_begin(s, MDB_RDONLY, &txn);
	if (err != 0)
		return err;
	MDB_val k = { strlen(which), (void *)which }, v;
	int rc = mdb_get(txn, s->plan, &k, &v);
	err = rc == MDB_SUCCESS ? store_plan_decode(v.mv_data, v.mv_size, out) : lmdb_error(rc);
	txn_abort(s, txn);
	return err;
}

/* next becomes active (activated at *now), in one transaction: never two plans live, never none. */
static int plan_activate_txn(struct store *s, MDB_txn *txn, void *arg)
{
	MDB_val k = { strlen(STORE_PLAN_NEXT), (void *)STORE_PLAN_NEXT }, v;
	int rc = mdb_get(txn, s->plan, &k, &v);
	if (rc != MDB_SUCCESS)
		return rc;
	struct store_plan p;
	rc = store_plan_decode(v.mv_data, v.mv_size, &p);
	if (rc != 0)
		return rc;
	p.activated_at = *(const int64_t *)arg;
	struct plan_put_arg a = { STORE_PLAN_ACTIVE, &p };
	rc = plan_put_txn(s, txn, &a);
	store_plan_clear(&p);
	if (rc == MDB_SUCCESS)
		rc = mdb_del(txn, s->plan, &k, NULL);
	return rc;
}

int store_plan_activate(struct store *s, int64_t now)
{
	if (s == NULL)
		return -EINVAL;
	if (s->remote != NULL)
		return s->remote->plan_activate(s->impl, now);
	return plan_write(s, plan_activate_txn, &now);
}

/* ---- the local mirror of a shared store ---- */

struct mirror_arg {
	const struct store_change *ch;
	size_t n;
	bool full;
	uint64_t cluster;
	int64_t revision;
	void (*bad)(const struct store_change *c, const char *why, void *arg);
	void *bad_arg;
	const struct store_change **sorted; /* full: the changes by kind and key, to find a local key in */
	size_t nbad;
	bool plan_changed;
};

/*
 * Why change c cannot be applied (NULL: it can). Every change is someone's
 * write to etcd, partdnsctl's or not: the key must be one its kind can have
 * (and LMDB can hold), and a put's record must decode as the daemon will
 * read it back. Nothing is freed here that was not decoded.
 */
static const char *mirror_refusal(const struct store_change *c)
{
	size_t klen = strlen(c->key);
	switch (c->kind) {
	case STORE_KIND_DOMAIN: {
		if (!name_is_normalized(c->key, klen))
			return "the key is not a domain name in normal form";
		struct store_domain d;
		if (c->val != NULL && store_record_decode(c->key, klen, c->val, c->len, &d) != 0)
			return "the value does not decode as a domain record";
		return NULL;
	}
	case STORE_KIND_STANDBY: {
		if (klen == 0 || klen >= STORE_PARTITION_MAX || !standby_text_valid(c->key, klen))
			return "the key is not a partition name";
		struct store_standby b;
		if (c->val != NULL && store_standby_decode(c->key, klen, c->val, c->len, &b) != 0)
			return "the value does not decode as a failover record";
		return NULL;
	}
	case STORE_KIND_PLAN: {
		if (!plan_which_ok(c->key))
			return "the key is not a plan (next or active)";
		if (c->val == NULL)
			return NULL;
		struct store_plan p;
		int err = store_plan_decode(c->val, c->len, &p); /* p is cleared even when it fails */
		bool ok = err == 0 && p.serial > 0;
		store_plan_clear(&p);
		if (err == -ENOMEM)
			return "no memory to decode the plan";
		return ok ? NULL : "the value does not decode as a plan";
	}
	}
	return "an unknown kind of record";
}

static MDB_dbi mirror_dbi(const struct store *s, enum store_kind kind)
{
	return kind == STORE_KIND_DOMAIN ? s->domains : kind == STORE_KIND_STANDBY ? s->standby : s->plan;
}

/* Order of changes by kind, then key bytes (LMDB's default order). */
static int change_cmp(const void *a, const void *b)
{
	const struct store_change *x = *(const struct store_change *const *)a;
	const struct store_change *y = *(const struct store_change *const *)b;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return strcmp(x->key, y->key);
}

/*
 * A full copy: remove each local record whose key the copy does not hold.
 * A key the copy holds stays, whatever its value: a good one is put over
 * it next, and a bad one leaves the last good version (what the docs
 * promise, and what a watch does with the same change).
 */
static int mirror_prune(struct store *s, MDB_txn *txn, struct mirror_arg *a, enum store_kind kind, bool *any)
{
	MDB_cursor *cur;
	int rc = mdb_cursor_open(txn, mirror_dbi(s, kind), &cur);
	if (rc != MDB_SUCCESS)
		return rc;
	char key[512];
	MDB_val k, v;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == MDB_SUCCESS;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		bool held = false;
		if (k.mv_size < sizeof(key) && memchr(k.mv_data, '\0', k.mv_size) == NULL) {
			memcpy(key, k.mv_data, k.mv_size);
			key[k.mv_size] = '\0';
			struct store_change probe = { .kind = kind, .key = key }, *pp = &probe;
			held = a->n > 0 && bsearch(&pp, a->sorted, a->n, sizeof(*a->sorted), change_cmp) != NULL;
		}
		if (held)
			continue;
		if ((rc = mdb_cursor_del(cur, 0)) != MDB_SUCCESS)
			break;
		*any = true;
		if (kind == STORE_KIND_PLAN)
			a->plan_changed = true;
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? MDB_SUCCESS : rc;
}

static int mirror_txn(struct store *s, MDB_txn *txn, void *arg)
{
	struct mirror_arg *a = arg;
	int rc = MDB_SUCCESS;
	bool any = false;
	a->nbad = 0;
	a->plan_changed = false;
	for (int k = STORE_KIND_DOMAIN; a->full && k <= STORE_KIND_PLAN && rc == MDB_SUCCESS; k++)
		rc = mirror_prune(s, txn, a, (enum store_kind)k, &any);
	for (size_t i = 0; i < a->n && rc == MDB_SUCCESS; i++) {
		const struct store_change *c = &a->ch[i];
		const char *why = mirror_refusal(c);
		if (why != NULL) {
			a->nbad++; /* the last good record, if any, stays */
			if (a->bad != NULL)
				a->bad(c, why, a->bad_arg);
			continue;
		}
		MDB_dbi dbi = mirror_dbi(s, c->kind);
		MDB_val k = { strlen(c->key), (void *)c->key }, v;
		if (c->val != NULL) {
			/* the same record again (a full copy, a replayed event): no change to tell */
			if (mdb_get(txn, dbi, &k, &v) == MDB_SUCCESS && v.mv_size == c->len &&
			    (c->len == 0 || memcmp(v.mv_data, c->val, c->len) == 0))
				continue;
			v = (MDB_val){ c->len, (void *)c->val };
			rc = mdb_put(txn, dbi, &k, &v, 0);
		} else {
			rc = mdb_del(txn, dbi, &k, NULL);
			if (rc == MDB_NOTFOUND) {
				rc = MDB_SUCCESS; /* deleted before we knew it */
				continue;
			}
		}
		any = true;
		if (c->kind == STORE_KIND_PLAN)
			a->plan_changed = true;
	}
	uint8_t buf[8];
	put_be64(buf, a->cluster);
	if (rc == MDB_SUCCESS)
		rc = meta_put(txn, s->meta, META_MIRROR_CLUSTER, buf, sizeof(buf));
	put_be64(buf, (uint64_t)a->revision);
	if (rc == MDB_SUCCESS)
		rc = meta_put(txn, s->meta, META_MIRROR_REVISION, buf, sizeof(buf));
	if (rc == MDB_SUCCESS && any)
		rc = version_bump(s, txn);
	return rc;
}

int store_mirror_apply_ex(struct store *s, const struct store_change *ch, size_t n, bool full, uint64_t cluster,
                          int64_t revision, void (*bad)(const struct store_change *c, const char *why, void *arg),
                          void *arg, size_t *nbad, bool *plan_changed)
{
	if (nbad != NULL)
		*nbad = 0;
	if (plan_changed != NULL)
		*plan_changed = false;
	if (s == NULL || s->remote != NULL || (ch == NULL && n > 0) || revision < 0)
		return -EINVAL;
	if (s->readonly || !s->has_standby || !s->has_plan)
		return -EROFS;
	struct mirror_arg a = { .ch = ch, .n = n, .full = full, .cluster = cluster, .revision = revision,
		                .bad = bad, .bad_arg = arg };
	if (full && n > 0) {
		if ((a.sorted = malloc(n * sizeof(*a.sorted))) == NULL)
			return -ENOMEM;
		for (size_t i = 0; i < n; i++)
			a.sorted[i] = &ch[i];
		qsort(a.sorted, n, sizeof(*a.sorted), change_cmp);
	}
	int err = write_txn_ex(s, mirror_txn, &a, false);
	free(a.sorted);
	if (nbad != NULL)
		*nbad = err == 0 ? a.nbad : 0;
	if (plan_changed != NULL)
		*plan_changed = err == 0 && a.plan_changed;
	return err;
}

int store_mirror_apply(struct store *s, const struct store_change *ch, size_t n, bool full, uint64_t cluster,
                       int64_t revision, size_t *nbad, bool *plan_changed)
{
	return store_mirror_apply_ex(s, ch, n, full, cluster, revision, NULL, NULL, nbad, plan_changed);
}

int store_mirror_state(struct store *s, uint64_t *cluster, int64_t *revision)
{
	*cluster = 0;
	*revision = 0;
	if (s == NULL || s->remote != NULL)
		return -EINVAL;
	MDB_txn *txn;
	int err = txn_begin(s, MDB_RDONLY, &txn);
	if (err != 0)
		return err;
	uint64_t c = 0, r = 0;
	err = meta_get_u64(txn, s->meta, META_MIRROR_CLUSTER, &c);
	if (err == 0)
		err = meta_get_u64(txn, s->meta, META_MIRROR_REVISION, &r);
	txn_abort(s, txn);
	if (err == -ENOENT)
		return 0;
	if (err != 0)
		return err;
	if (r > INT64_MAX)
		return STORE_E_CORRUPT;
	*cluster = c;
	*revision = (int64_t)r;
	return 0;
}
