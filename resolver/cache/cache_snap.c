/* SPDX-License-Identifier: BSD-3-Clause */
/* Cache snapshots: the answer cache to a file (walked a batch at a time) and back, checked throughout. */
#include "resolver/cache/cache_snap.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mapping/mapping.h"
#include "partition/partition.h"
#include "resolver/base/clock.h"
#include "resolver/view/route.h"
#include "resolver/view/standby.h"
#include "util/hash.h"
#include "wire/answer.h"
#include "wire/names.h"
#include "wire/parse.h"

#ifndef PARTDNS_VERSION
#define PARTDNS_VERSION "unknown"
#endif

static const uint8_t MAGIC[8] = { 'P', 'D', 'N', 'S', 'S', 'N', 'A', 'P' };
static const uint8_t END[8] = { 'P', 'D', 'N', 'S', 'E', 'N', 'D', 0 };
#define HDR_FIXED 42      /* magic .. the version string's length */
#define ENTRY_FIXED 24    /* flags .. expiry */
#define TRAILER 24
#define E_NO_STALE 0x01u
#define BLOCK 65536u      /* the checksum's block */
#define TTL_LIMIT 2147483647u /* RFC 2181 §8 */

/* ---- bytes ---- */

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (24 - 8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (56 - 8 * i));
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static uint64_t get64(const uint8_t *p)
{
	return ((uint64_t)get32(p) << 32) | get32(p + 4);
}

/* ---- the checksum: the keyed hash of each block, chained ---- */

static const struct hash_key *sum_key(void)
{
	static struct hash_key k;
	static bool made;
	if (!made) { /* the same every time: a fixed seed (benign race: same bytes) */
		hash_key_fixed(&k, 0x70646e73736e6170ull);
		made = true;
	}
	return &k;
}

static uint64_t sum_block(uint64_t s, const uint8_t *p, size_t n)
{
	return hash_mum(s ^ hash_bytes(sum_key(), p, n), 0x9e3779b97f4a7c15ull) ^ n;
}

uint64_t cache_snap_checksum(const uint8_t *p, size_t n)
{
	uint64_t s = 0x736e617073686f74ull;
	for (size_t o = 0; o < n; o += BLOCK)
		s = sum_block(s, p + o, n - o < BLOCK ? n - o : BLOCK);
	return s;
}

/* ---- partition identities ---- */

uint64_t cache_snap_identity(const struct conf *c, const struct standby *sb, unsigned id)
{
	const char *name = ptable_name(c->partitions.table, id);
	if (id == PARTITION_COMMON || name == NULL)
		return 0;
	uint8_t buf[64 + 2 * (4 + sizeof(struct ecs))];
	size_t n = strlen(name) < 64 ? strlen(name) : 64;
	memcpy(buf, name, n);
	static const int families[] = { AF_INET, AF_INET6 };
	for (int i = 0; i < 2; i++) {
		struct ecs e;
		memset(&e, 0, sizeof(e));
		/* what route_identity() sends: the standby's while failed over, else the mapped one */
		int rc = standby_ecs(sb, id, families[i], &e) ? 0 : mapping_ecs(c->partitions.mapping, id, families[i], &e);
		put32(buf + n, rc == 0 ? 1u : 0u);
		n += 4;
		if (rc == 0) {
			buf[n++] = (uint8_t)e.family;
			buf[n++] = e.source;
			memcpy(buf + n, e.addr, sizeof(e.addr));
			n += sizeof(e.addr);
		}
	}
	uint64_t h = hash_bytes(sum_key(), buf, n);
	return h ? h : 1;
}

/* out->why, whatever it is cut to */
__attribute__((format(printf, 2, 3))) static void say(struct cache_snap_result *out, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out->why, sizeof(out->why), fmt, ap);
	va_end(ap);
}

/* ---- writing ---- */

struct writer {
	int fd;
	int err;          /* the first write error, -errno */
	uint64_t sum;
	uint64_t total;   /* bytes written */
	size_t used;
	uint8_t buf[BLOCK];
	/* the walk */
	time_t wall_now;
	uint32_t mono_now;
	uint64_t entries;
};

static void w_flush(struct writer *w)
{
	if (w->used == 0)
		return;
	w->sum = sum_block(w->sum, w->buf, w->used);
	for (size_t o = 0; o < w->used && w->err == 0;) {
		ssize_t k = write(w->fd, w->buf + o, w->used - o);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			w->err = k < 0 ? -errno : -EIO;
			break;
		}
		o += (size_t)k;
	}
	w->total += w->used;
	w->used = 0;
}

static void w_put(struct writer *w, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n > 0 && w->err == 0) {
		size_t k = BLOCK - w->used < n ? BLOCK - w->used : n;
		memcpy(w->buf + w->used, b, k);
		w->used += k;
		b += k;
		n -= k;
		if (w->used == BLOCK)
			w_flush(w);
	}
}

/* Monotonic cache seconds to wall-clock seconds, as of now. */
static uint64_t to_wall(const struct writer *w, uint32_t mono)
{
	int64_t wall = (int64_t)w->wall_now - ((int64_t)w->mono_now - (int64_t)mono);
	return wall > 0 ? (uint64_t)wall : 0;
}

static int write_entry(const struct cache_walk_entry *e, void *arg)
{
	struct writer *w = arg;
	uint8_t h[ENTRY_FIXED];
	h[0] = (e->opts & CACHE_NO_STALE) ? E_NO_STALE : 0;
	h[1] = 0;
	put16(h + 2, (uint16_t)e->klen);
	put32(h + 4, (uint32_t)e->vlen);
	put64(h + 8, to_wall(w, e->stored_at));
	put64(h + 16, to_wall(w, e->expiry));
	w_put(w, h, sizeof(h));
	w_put(w, e->key, e->klen);
	w_put(w, e->val, e->vlen);
	w->entries++;
	return w->err;
}

static void write_header(struct writer *w, const struct conf *c, const struct standby *sb)
{
	const struct ptable *t = c->partitions.table;
	size_t np = ptable_size(t);
	size_t vlen = strlen(PARTDNS_VERSION);
	size_t hlen = HDR_FIXED + vlen + 4;
	for (unsigned id = 1; id <= np; id++) {
		const char *name = ptable_name(t, id);
		hlen += 2 + 8 + 1 + (name ? strlen(name) : 0);
	}
	uint8_t h[HDR_FIXED];
	memcpy(h, MAGIC, 8);
	put32(h + 8, CACHE_SNAP_FORMAT);
	put32(h + 12, (uint32_t)hlen);
	put64(h + 16, (uint64_t)w->wall_now);
	put32(h + 24, c->partitions.serial);
	put32(h + 28, 0);
	put64(h + 32, c->partitions.digest);
	put16(h + 40, (uint16_t)vlen);
	w_put(w, h, sizeof(h));
	w_put(w, PARTDNS_VERSION, vlen);
	uint8_t n4[4];
	put32(n4, (uint32_t)np);
	w_put(w, n4, 4);
	for (unsigned id = 1; id <= np; id++) {
		const char *name = ptable_name(t, id);
		size_t nl = name ? strlen(name) : 0;
		uint8_t p[11];
		put16(p, (uint16_t)id);
		put64(p + 2, cache_snap_identity(c, sb, id));
		p[10] = (uint8_t)nl;
		w_put(w, p, sizeof(p));
		w_put(w, name, nl);
	}
}

int cache_snap_write_fd(struct cache *cache, const struct conf *c, const struct standby *sb, int fd, time_t wall_now,
                        uint32_t mono_now, struct cache_snap_result *out)
{
	memset(out, 0, sizeof(*out));
	struct writer *w = calloc(1, sizeof(*w));
	if (w == NULL) {
		snprintf(out->why, sizeof(out->why), "out of memory");
		return -ENOMEM;
	}
	w->fd = fd;
	w->sum = 0x736e617073686f74ull;
	w->wall_now = wall_now;
	w->mono_now = mono_now;
	write_header(w, c, sb);
	int rc = w->err ? w->err : cache_walk(cache, mono_now, write_entry, w);
	if (rc == 0) {
		uint8_t t[16];
		memcpy(t, END, 8);
		put64(t + 8, w->entries);
		w_put(w, t, sizeof(t));
		w_flush(w);
		put64(t, w->sum);
		w_put(w, t, 8);
		w_flush(w);
		rc = w->err;
	}
	if (rc != 0)
		say(out, "%s", strerror(-rc));
	out->entries = w->entries;
	out->bytes = w->total;
	out->written = wall_now;
	free(w);
	return rc;
}

/* The directory of path, for its fsync after the rename. */
static int sync_dir(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	if (slash == NULL)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = fsync(fd) == 0 ? 0 : -errno;
	close(fd);
	return rc;
}

int cache_snap_write(struct cache *cache, const struct conf *c, const struct standby *sb, const char *path,
                     struct cache_snap_result *out)
{
	memset(out, 0, sizeof(*out));
	char tmp[PATH_MAX];
	if (path == NULL || path[0] == '\0' || (size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp)) {
		snprintf(out->why, sizeof(out->why), "no path, or a path too long");
		return -EINVAL;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (fd < 0) {
		int e = errno;
		say(out, "cannot create %s: %s", tmp, strerror(e));
		return -e;
	}
	int rc = cache_snap_write_fd(cache, c, sb, fd, time(NULL), clock_sec(), out);
	if (rc == 0 && fsync(fd) != 0) {
		rc = -errno;
		say(out, "cannot sync %s: %s", tmp, strerror(-rc));
	}
	if (close(fd) != 0 && rc == 0) {
		rc = -errno;
		say(out, "cannot write %s: %s", tmp, strerror(-rc));
	}
	if (rc == 0 && rename(tmp, path) != 0) {
		rc = -errno;
		say(out, "cannot rename %s to %s: %s", tmp, path, strerror(-rc));
	}
	if (rc != 0) {
		unlink(tmp);
		return rc;
	}
	rc = sync_dir(path);
	if (rc != 0) /* renamed: the file is whole, only its durability is in doubt */
		snprintf(out->why, sizeof(out->why), "written, but its directory could not be synced: %s", strerror(-rc));
	return 0;
}

/* ---- loading ---- */

struct part_map {
	uint16_t to[PARTITION_MAX + 1]; /* saved id -> id now; 0 = drop its entries */
	bool saved[PARTITION_MAX + 1];  /* the file names this id */
	unsigned changed;               /* partitions of the file whose entries go */
	char changed_names[160];        /* the first few, for the log */
};

/* One entry as read from the file. */
struct rd_entry {
	unsigned flags;
	const uint8_t *key;
	size_t klen;
	const uint8_t *val;
	size_t vlen;
	uint64_t stored, expiry;
};

__attribute__((format(printf, 3, 4))) static int refuse(struct cache_snap_result *out, int rc, const char *fmt, ...)
{
	out->file_refused = true;
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	say(out, "refused, starting cold: %s", msg);
	return rc;
}

/* Is name (the key's) a well-formed wire name in lower case? */
static bool name_ok(const uint8_t *name, size_t len)
{
	if (len < 1 || len > WIRE_MAX_NAME || wire_name_check(name, len) != 0)
		return false;
	for (size_t i = 0; i < len;) {
		size_t l = name[i++];
		for (size_t k = 0; k < l; k++, i++)
			if (name[i] >= 'A' && name[i] <= 'Z')
				return false;
	}
	return true;
}

/* A message the cache keeps beside a chain (its CNAME prefix): whole records to its end. */
static bool message_ok(const uint8_t *m, size_t len)
{
	if (len < WIRE_HEADER_SIZE + 5)
		return false;
	size_t pos = WIRE_HEADER_SIZE;
	uint8_t name[WIRE_MAX_NAME];
	size_t nlen;
	if (get16(m + 4) != 1 || wire_question_read(m, len, &pos, name, &nlen) != 0)
		return false;
	unsigned n = (unsigned)get16(m + 6) + get16(m + 8) + get16(m + 10);
	for (unsigned i = 0; i < n; i++) {
		struct wire_raw_rr rr;
		if (wire_rr_read(m, len, &pos, &rr, NULL) != 0)
			return false;
	}
	return pos == len;
}

/* Can the cache's readers take this entry as they take their own? @return NULL or why not. */
static const char *entry_check(const struct rd_entry *e)
{
	if (e->flags & ~E_NO_STALE)
		return "unknown entry flags";
	if (e->klen < ROUTE_KEY_HDR + 1 || e->klen > ROUTE_KEY_MAX)
		return "bad key length";
	if (e->key[6] & ~ROUTE_KEY_CD)
		return "unknown key flags";
	const uint8_t *qname = e->key + ROUTE_KEY_HDR;
	size_t qlen = e->klen - ROUTE_KEY_HDR;
	if (!name_ok(qname, qlen))
		return "bad name in a key";
	if (e->expiry <= e->stored || e->expiry - e->stored > TTL_LIMIT)
		return "bad lifetime";
	struct route_value v;
	if (e->vlen == 0 || route_value_parse(e->val, e->vlen, &v) != 0)
		return "bad value";
	if (v.failure) {
		if (e->val[0] != ROUTE_VALUE_FAILURE || v.rcode > 0xfff || !(e->flags & E_NO_STALE))
			return "bad failure value";
		return NULL;
	}
	if (e->val[0] & ~(ROUTE_VALUE_CHAIN | ROUTE_VALUE_INCOMPLETE))
		return "unknown value flags";
	if ((e->val[0] & ROUTE_VALUE_INCOMPLETE) && !v.chain)
		return "bad value flags";
	if (v.chain && (!name_ok(v.target, v.target_len) || !message_ok(v.prefix, v.prefix_len)))
		return "bad chain";
	uint16_t qtype = get16(e->key + 2), qclass = get16(e->key + 4);
	if (wire_blob_check(v.blob, v.blob_len, qname, qlen, qtype, qclass) != 0)
		return "bad answer";
	return NULL;
}

/* Read the entry at *pos of body (the bytes before the trailer). @return NULL or why not. */
static const char *entry_read(const uint8_t *b, size_t n, size_t *pos, struct rd_entry *e)
{
	size_t p = *pos;
	if (n - p < ENTRY_FIXED)
		return "entry cut short";
	e->flags = b[p];
	if (b[p + 1] != 0)
		return "unknown entry flags";
	e->klen = get16(b + p + 2);
	e->vlen = get32(b + p + 4);
	e->stored = get64(b + p + 8);
	e->expiry = get64(b + p + 16);
	p += ENTRY_FIXED;
	if (n - p < e->klen || n - p - e->klen < e->vlen)
		return "entry longer than the file";
	e->key = b + p;
	e->val = b + p + e->klen;
	*pos = p + e->klen + e->vlen;
	return NULL;
}

/*
 * Magic, format and version, before anything else: a file of another
 * partdns is named as such (a checksum or layout it does not share is no
 * corruption). @return 0, or refused.
 */
static int version_check(const uint8_t *b, size_t n, struct cache_snap_result *out)
{
	if (n >= 8 && memcmp(b, MAGIC, 8) != 0)
		return refuse(out, -EINVAL, "not a partdns cache snapshot (%zu bytes)", n);
	if (n < HDR_FIXED)
		return refuse(out, -EINVAL, "truncated (%zu bytes)", n);
	uint32_t format = get32(b + 8);
	if (format != CACHE_SNAP_FORMAT)
		return refuse(out, -EPROTO, "format version %u, this partdns reads %u", (unsigned)format, CACHE_SNAP_FORMAT);
	size_t vlen = get16(b + 40);
	if (n - HDR_FIXED < vlen)
		return refuse(out, -EINVAL, "truncated (%zu bytes)", n);
	char ver[256];
	snprintf(ver, sizeof(ver), "%.*s", (int)vlen, (const char *)b + HDR_FIXED);
	for (char *p = ver; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			*p = '?';
	if (vlen != strlen(PARTDNS_VERSION) || memcmp(b + HDR_FIXED, PARTDNS_VERSION, vlen) != 0)
		return refuse(out, -EPROTO, "written by partdns %s, this is %s", ver, PARTDNS_VERSION);
	return 0;
}

/* The header: version, plan, partition table (into map). @return its length, or 0 (refused: out says why). */
static size_t header_read(const struct conf *c, const struct standby *sb, const uint8_t *b, size_t n,
                          struct part_map *map, struct cache_snap_result *out, int *rc)
{
	*rc = -EINVAL;
	if (n < HDR_FIXED || memcmp(b, MAGIC, 8) != 0) {
		*rc = refuse(out, -EINVAL, "not a partdns cache snapshot");
		return 0;
	}
	size_t hlen = get32(b + 12);
	size_t vlen = get16(b + 40);
	if (hlen > n || hlen < HDR_FIXED + vlen + 4) {
		*rc = refuse(out, -EINVAL, "truncated or corrupt header (length %zu of %zu bytes)", hlen, n);
		return 0;
	}
	out->written = (time_t)get64(b + 16);
	size_t p = HDR_FIXED + vlen;
	uint32_t np = get32(b + p);
	p += 4;
	if (np > PARTITION_MAX) {
		*rc = refuse(out, -EINVAL, "corrupt header: %u partitions", (unsigned)np);
		return 0;
	}
	size_t o = 0;
	for (uint32_t i = 0; i < np; i++) {
		if (hlen - p < 11 || hlen - p - 11 < b[p + 10]) {
			*rc = refuse(out, -EINVAL, "corrupt header: partition %u of %u cut short", (unsigned)i, (unsigned)np);
			return 0;
		}
		unsigned id = get16(b + p);
		uint64_t ident = get64(b + p + 2);
		size_t nl = b[p + 10];
		char name[256];
		snprintf(name, sizeof(name), "%.*s", (int)nl, (const char *)b + p + 11);
		p += 11 + nl;
		if (id == PARTITION_COMMON || id > PARTITION_MAX || map->saved[id] || strlen(name) != nl) {
			*rc = refuse(out, -EINVAL, "corrupt header: partition id %u (the %u-th)", id, (unsigned)i);
			return 0;
		}
		map->saved[id] = true;
		int now_id = ptable_find(c->partitions.table, name);
		if (now_id > 0 && cache_snap_identity(c, sb, (unsigned)now_id) == ident) {
			map->to[id] = (uint16_t)now_id;
			continue;
		}
		map->changed++;
		if (o < sizeof(map->changed_names) - 1)
			o += (size_t)snprintf(map->changed_names + o, sizeof(map->changed_names) - o, "%s%s",
			                      o ? ", " : "", name);
	}
	if (p != hlen) {
		*rc = refuse(out, -EINVAL, "corrupt header (%zu bytes where %zu were announced)", p, hlen);
		return 0;
	}
	*rc = 0;
	return hlen;
}

int cache_snap_load_buf(struct cache *cache, const struct conf *c, const struct standby *sb, const uint8_t *buf,
                        size_t len, time_t wall_now, uint32_t mono_now, struct cache_snap_result *out)
{
	memset(out, 0, sizeof(*out));
	out->bytes = len;
	struct cache_stats st0;
	cache_get_stats(cache, &st0);
	if (len > st0.max_bytes)
		return refuse(out, -EFBIG, "%zu bytes, larger than cache.max_bytes (%zu)", len, st0.max_bytes);
	int vc = version_check(buf, len, out);
	if (vc != 0)
		return vc;
	if (len < HDR_FIXED + TRAILER)
		return refuse(out, -EINVAL, "truncated (%zu bytes)", len);
	size_t body = len - TRAILER;
	if (memcmp(buf + body, END, 8) != 0)
		return refuse(out, -EINVAL, "truncated (no trailer at byte %zu)", body);
	if (cache_snap_checksum(buf, len - 8) != get64(buf + len - 8))
		return refuse(out, -EBADMSG, "corrupt (checksum mismatch over %zu bytes)", len - 8);
	uint64_t count = get64(buf + body + 8);
	struct part_map *map = calloc(1, sizeof(*map));
	if (map == NULL)
		return refuse(out, -ENOMEM, "out of memory");
	int rc;
	size_t hlen = header_read(c, sb, buf, body, map, out, &rc);
	if (hlen == 0) {
		free(map);
		return rc;
	}
	/* everything is checked before anything is inserted */
	uint64_t seen = 0;
	for (size_t p = hlen; p < body; seen++) {
		struct rd_entry e;
		size_t at = p;
		const char *why = entry_read(buf, body, &p, &e);
		if (why == NULL)
			why = entry_check(&e);
		if (why == NULL) {
			unsigned part = route_key_partition(e.key);
			if (part != PARTITION_COMMON && (part > PARTITION_MAX || !map->saved[part]))
				why = "entry of a partition the header does not name";
		}
		if (why != NULL) {
			free(map);
			return refuse(out, -EINVAL, "corrupt: %s (entry %llu, byte %zu)", why, (unsigned long long)seen, at);
		}
	}
	if (seen != count) {
		free(map);
		return refuse(out, -EINVAL, "corrupt: %llu entries where the trailer says %llu", (unsigned long long)seen, (unsigned long long)count);
	}
	uint64_t expired = 0, changed = 0, over = 0, failed = 0, kept = 0;
	uint8_t *copy = NULL;
	size_t copy_cap = 0;
	for (size_t p = hlen; p < body;) {
		struct rd_entry e;
		entry_read(buf, body, &p, &e);
		unsigned part = route_key_partition(e.key);
		if (part != PARTITION_COMMON && map->to[part] == 0) {
			changed++;
			continue;
		}
		uint64_t now = (uint64_t)(wall_now > 0 ? wall_now : 0);
		if (e.expiry <= now) {
			expired++;
			continue;
		}
		uint64_t life = e.expiry - e.stored, left = e.expiry - now;
		uint64_t age = life - (left < life ? left : life);
		/* the key and value, the key's partition renumbered, the value aged when the clock cannot say it */
		if (copy_cap < e.klen + e.vlen) {
			uint8_t *nc = realloc(copy, e.klen + e.vlen);
			if (nc == NULL) {
				failed++;
				continue;
			}
			copy = nc;
			copy_cap = e.klen + e.vlen;
		}
		memcpy(copy, e.key, e.klen);
		memcpy(copy + e.klen, e.val, e.vlen);
		if (part != PARTITION_COMMON)
			route_key_set_partition(copy, map->to[part]);
		uint32_t stored_at = 0, expiry;
		if (age <= mono_now) {
			stored_at = mono_now - (uint32_t)age;
		} else { /* the machine started since (the monotonic clock is younger): the blob says the rest */
			struct route_value v;
			if (route_value_parse(copy + e.klen, e.vlen, &v) == 0 && !v.failure)
				wire_blob_age((uint8_t *)v.blob, v.blob_len, (uint32_t)(age - mono_now));
		}
		expiry = left > UINT32_MAX - mono_now ? UINT32_MAX : mono_now + (uint32_t)left;
		/* what fits the cache's cap, evicting nothing: a shard that is full takes no more */
		int ins = cache_insert_aged(cache, copy, e.klen, copy + e.klen, e.vlen, mono_now, stored_at, expiry,
		                           CACHE_NO_EVICT | CACHE_NO_REPLACE | ((e.flags & E_NO_STALE) ? CACHE_NO_STALE : 0));
		if (ins == 0)
			out->entries++;
		else if (ins == -EEXIST) /* the cache's own answer (partdnsctl cache load into a running cache) */
			kept++;
		else if (ins == -ENOSPC || ins == -E2BIG)
			over++;
		else
			failed++;
	}
	free(copy);
	out->refused = expired + changed + over + failed + kept;
	size_t o = 0;
	char *w = out->why;
	size_t cap = sizeof(out->why);
	if (changed)
		o += (size_t)snprintf(w + o, cap - o, "%s%llu entries of %u partition(s) whose city changed since "
		                      "(plan serial %u then, %u now: %s)", o ? "; " : "", (unsigned long long)changed,
		                      map->changed, get32(buf + 24), c->partitions.serial, map->changed_names);
	if (over && o < cap)
		o += (size_t)snprintf(w + o, cap - o, "%s%llu entries past cache.max_bytes", o ? "; " : "",
		                      (unsigned long long)over);
	if (expired && o < cap)
		o += (size_t)snprintf(w + o, cap - o, "%s%llu expired entries", o ? "; " : "", (unsigned long long)expired);
	if (kept && o < cap)
		o += (size_t)snprintf(w + o, cap - o, "%s%llu entries cached already", o ? "; " : "", (unsigned long long)kept);
	if (failed && o < cap)
		snprintf(w + o, cap - o, "%s%llu entries the cache did not take", o ? "; " : "", (unsigned long long)failed);
	free(map);
	return 0;
}

int cache_snap_load(struct cache *cache, const struct conf *c, const struct standby *sb, const char *path,
                    struct cache_snap_result *out)
{
	memset(out, 0, sizeof(*out));
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		int e = errno;
		if (e != ENOENT)
			out->file_refused = true;
		say(out, "%s: %s", e == ENOENT ? "no snapshot" : "cannot open it", strerror(e));
		return -e;
	}
	struct stat sbuf;
	if (fstat(fd, &sbuf) != 0 || !S_ISREG(sbuf.st_mode)) {
		close(fd);
		return refuse(out, -EINVAL, "not a regular file");
	}
	struct cache_stats st;
	cache_get_stats(cache, &st);
	size_t len = (size_t)sbuf.st_size;
	if ((uint64_t)sbuf.st_size > st.max_bytes) {
		close(fd);
		out->bytes = (uint64_t)sbuf.st_size;
		return refuse(out, -EFBIG, "%llu bytes, larger than cache.max_bytes (%zu)",
		              (unsigned long long)sbuf.st_size, st.max_bytes);
	}
	uint8_t *buf = malloc(len ? len : 1);
	if (buf == NULL) {
		close(fd);
		return refuse(out, -ENOMEM, "out of memory for %zu bytes", len);
	}
	size_t got = 0;
	while (got < len) {
		ssize_t k = read(fd, buf + got, len - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break; /* shorter than it was: checked as truncated */
		got += (size_t)k;
	}
	close(fd);
	int rc = cache_snap_load_buf(cache, c, sb, buf, got, time(NULL), clock_sec(), out);
	free(buf);
	return rc;
}
