/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shared store in etcd (see store_etcd.h). Every change is a
 * transaction that compares the mod_revision of each key it writes with
 * the one it read, so two partdnsctl processes never lose each other's
 * writes: the one that lost the race reads again and redoes its change.
 * A change bigger than one transaction (etcd's 128 operations) goes in
 * batches, each atomic; the nodes apply each batch as it commits.
 */
#include "store/store_etcd.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conf/text.h"
#include "util/file.h"
#include "util/vec.h"

/* Retries of a change that lost a race with another writer. */
#define ETCD_STORE_TRIES 8
/* Records per transaction: a compare and a put each, and the change marker. */
#define ETCD_STORE_BATCH ((ETCD_TXN_MAX_OPS - 1))
/* Keys per page of a scan: pages stay well under the client's body cap. */
#define ETCD_SCAN_PAGE 2000
/* Longest key: the prefix, "standby/", a name. */
#define ETCD_KEY_MAX 600

struct estore {
	struct etcd *e;
	char *prefix;
	char user_marker[128];
};

static const char *const kind_dirs[] = { [STORE_KIND_DOMAIN] = "domains/", [STORE_KIND_STANDBY] = "standby/",
	                                 [STORE_KIND_PLAN] = "plan/" };

const char *store_etcd_key(const char *prefix, enum store_kind kind, const char *name, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s%s%s", prefix, kind_dirs[kind], name);
	return n > 0 && (size_t)n < size ? buf : NULL;
}

bool store_etcd_parse_key(const char *prefix, const char *key, enum store_kind *kind, const char **name)
{
	size_t pl = strlen(prefix);
	if (strncmp(key, prefix, pl) != 0)
		return false;
	for (int k = STORE_KIND_DOMAIN; k <= STORE_KIND_PLAN; k++) {
		size_t dl = strlen(kind_dirs[k]);
		if (strncmp(key + pl, kind_dirs[k], dl) == 0 && key[pl + dl] != '\0') {
			*kind = (enum store_kind)k;
			*name = key + pl + dl;
			return true;
		}
	}
	return false;
}

static int remote_fail(struct etcd *e, int rc)
{
	if (rc == ETCD_E_NOMEM)
		return -ENOMEM;
	store_remote_error_set("%s (%s)", etcd_strerror(rc), etcd_error(e));
	return STORE_E_REMOTE;
}

struct etcd *store_etcd_client(const struct conf *c)
{
	const struct conf_etcd *ec = &c->store.etcd;
	bool tls = ec->ca[0] != '\0' || ec->cert[0] != '\0';
	char **urls = calloc(ec->nendpoints, sizeof(char *));
	char *password = NULL;
	struct etcd *e = NULL;
	if (urls == NULL)
		goto done;
	for (size_t i = 0; i < ec->nendpoints; i++) {
		/* conf_addr text is ADDR@PORT; a URL wants [v6]:port */
		const struct conf_addr *a = &ec->endpoints[i];
		char host[64];
		snprintf(host, sizeof(host), "%s", a->text);
		char *at = strrchr(host, '@');
		if (at != NULL)
			*at = '\0';
		const char *port = at != NULL ? at + 1 : "2379";
		bool v6 = a->ss.ss_family == AF_INET6;
		if (asprintf(&urls[i], "%s://%s%s%s:%s", tls ? "https" : "http", v6 ? "[" : "", host, v6 ? "]" : "",
		             port) < 0) {
			urls[i] = NULL;
			goto done;
		}
	}
	if (ec->password_file[0] != '\0') {
		size_t len;
		int err = conf_read_file(ec->password_file, true, &password, &len);
		if (err != 0) {
			store_remote_error_set("store.etcd.password_file %s: %s", ec->password_file, file_strerror(err));
			goto done;
		}
		password[strcspn(password, "\r\n")] = '\0'; /* the first line */
	}
	struct etcd_opts o = { .endpoints = (const char *const *)urls, .nendpoints = ec->nendpoints,
		               .username = ec->username, .password = password, .ca = ec->ca, .cert = ec->cert,
		               .key = ec->key, .timeout_ms = ec->timeout_ms };
	if ((e = etcd_new(&o)) == NULL)
		store_remote_error_set("out of memory");
done:
	for (size_t i = 0; urls != NULL && i < ec->nendpoints; i++)
		free(urls[i]);
	free(urls);
	if (password != NULL) {
		explicit_bzero(password, strlen(password));
		free(password);
	}
	return e;
}

/*
 * Why pages are read this way: etcd's range request can limit keys but not
 * bytes, and anyone with write access may put values up to etcd's request
 * limit (1.5 MiB by default, more if so configured) under our prefix: 2,000
 * of them are gigabytes, and etcd builds a whole answer before it sends a
 * byte (70 MB took it 2 s here: past the request timeout, so a byte cap on
 * the client alone fails as a timeout, for ever). So a page is first read
 * keys_only (cheap for etcd, and it names every key), and the values of its
 * keys are then read in spans: a span whose answer passes the byte cap or
 * times out is asked again with an eighth of the keys, down to one; a
 * single record that does not fit in STORE_ETCD_RECORD_BYTES is named and
 * passed over (one that times out alone is the cluster's trouble: the scan
 * fails). After a good span the next may be twice as large, and no larger
 * than the bytes per key seen say fits in STORE_ETCD_PAGE_BYTES, so a region
 * of junk is read a few keys at a time and normal records (a few hundred
 * bytes each) in spans of ETCD_SCAN_PAGE. Keys are bytes: a span ends, and
 * the next page starts, at a key plus a NUL byte.
 */

/* key (len bytes) and a NUL byte after it, malloc'd: the key right after key. @return NULL on ENOMEM. */
static char *key_after(const char *key, size_t len)
{
	char *k = malloc(len + 2);
	if (k != NULL) {
		memcpy(k, key, len);
		k[len] = '\0';
		k[len + 1] = '\0';
	}
	return k;
}

struct scan {
	struct etcd *e;
	int64_t rev;
	size_t span;  /* keys per value read, adapted */
	int (*fn)(const struct etcd_kv *kv, void *arg);
	void (*skipped)(const struct etcd_kv *kv, const char *why, void *arg);
	void *arg;
};

/* The values of keys[0..n) (one keys_only page, in order), span by span. @return 0, fn's value, ETCD_E_*. */
static int scan_values(struct scan *sc, const struct etcd_kv *keys, size_t n)
{
	size_t i = 0;
	while (i < n) {
		size_t m = n - i < sc->span ? n - i : sc->span;
		const struct etcd_kv *last = &keys[i + m - 1];
		char *end = key_after(last->key, last->keylen);
		if (end == NULL)
			return ETCD_E_NOMEM;
		struct etcd_get_opts o = { .key = keys[i].key, .keylen = keys[i].keylen, .end = end,
			                   .endlen = last->keylen + 1, .revision = sc->rev, .limit = m,
			                   .max_bytes = m > 1 ? STORE_ETCD_PAGE_BYTES : STORE_ETCD_RECORD_BYTES };
		struct etcd_range r;
		int rc = etcd_range(sc->e, &o, &r);
		free(end);
		if ((rc == ETCD_E_TOOBIG || rc == ETCD_E_UNAVAILABLE) && m > 1) {
			sc->span = m / 8 > 0 ? m / 8 : 1;
			continue;
		}
		if (rc == ETCD_E_TOOBIG) {
			if (sc->skipped != NULL)
				sc->skipped(&keys[i], "the record is too large to read", sc->arg);
			i++;
			continue;
		}
		if (rc != 0)
			return rc;
		size_t bytes = 0;
		for (size_t k = 0; k < r.n && rc == 0; k++) {
			bytes += r.kvs[k].keylen + r.kvs[k].vlen;
			if (r.kvs[k].bad == NULL)
				rc = sc->fn(&r.kvs[k], sc->arg);
			else if (sc->skipped != NULL)
				sc->skipped(&r.kvs[k], r.kvs[k].bad, sc->arg);
		}
		etcd_range_free(&r);
		if (rc != 0)
			return rc;
		i += m;
		/* twice as many next time, as far as the bytes per key seen allow (base64: 4/3) */
		size_t fits = bytes > 0 ? STORE_ETCD_PAGE_BYTES / (bytes * 4 / 3 / m + 64) : ETCD_SCAN_PAGE;
		size_t next = m * 2 < fits ? m * 2 : fits;
		sc->span = next < 1 ? 1 : next > ETCD_SCAN_PAGE ? ETCD_SCAN_PAGE : next;
	}
	return 0;
}

int store_etcd_scan_all(struct etcd *e, const char *from, const char *end, int64_t *revision, uint64_t *cluster,
                        int (*fn)(const struct etcd_kv *kv, void *arg),
                        void (*skipped)(const struct etcd_kv *kv, const char *why, void *arg), void *arg)
{
	size_t keylen = strlen(from);
	char *key = key_after(from, keylen); /* from, with a NUL after it that is not part of it */
	if (key == NULL)
		return ETCD_E_NOMEM;
	struct scan sc = { .e = e, .rev = *revision, .span = ETCD_SCAN_PAGE, .fn = fn, .skipped = skipped,
		           .arg = arg };
	size_t limit = ETCD_SCAN_PAGE; /* keys per keys_only page: fewer while keys are huge */
	int rc;
	for (;;) {
		struct etcd_range r;
		struct etcd_get_opts o = { .key = key, .keylen = keylen, .end = end, .revision = sc.rev,
			                   .limit = limit, .keys_only = true, .max_bytes = STORE_ETCD_PAGE_BYTES };
		rc = etcd_range(e, &o, &r);
		if (rc == ETCD_E_TOOBIG && limit > 1) {
			limit = limit / 8 > 0 ? limit / 8 : 1;
			continue;
		}
		if (rc != 0)
			break;
		limit = ETCD_SCAN_PAGE;
		if (sc.rev == 0) {
			sc.rev = r.revision; /* every page from the same snapshot */
			if (cluster != NULL)
				*cluster = r.cluster;
		}
		rc = scan_values(&sc, r.kvs, r.n);
		bool more = r.more && r.n > 0 && rc == 0;
		if (more) {
			free(key);
			keylen = r.kvs[r.n - 1].keylen + 1;
			if ((key = key_after(r.kvs[r.n - 1].key, r.kvs[r.n - 1].keylen)) == NULL)
				rc = ETCD_E_NOMEM;
		}
		etcd_range_free(&r);
		if (!more || key == NULL)
			break;
	}
	free(key);
	*revision = sc.rev;
	return rc;
}

int store_etcd_scan(struct etcd *e, const char *from, const char *end, int64_t *revision, uint64_t *cluster,
                    int (*fn)(const struct etcd_kv *kv, void *arg), void *arg)
{
	return store_etcd_scan_all(e, from, end, revision, cluster, fn, NULL, arg);
}

/* ---- reads ---- */

static int es_get(void *impl, enum store_kind kind, const char *name, uint8_t **val, size_t *len)
{
	struct estore *s = impl;
	char key[ETCD_KEY_MAX];
	if (store_etcd_key(s->prefix, kind, name, key, sizeof(key)) == NULL)
		return -EINVAL;
	struct etcd_range r;
	int rc = etcd_get(s->e, key, NULL, 0, 0, &r);
	if (rc != 0)
		return remote_fail(s->e, rc);
	int err = -ENOENT;
	if (r.n == 1) {
		*val = r.kvs[0].value; /* taken over */
		*len = r.kvs[0].vlen;
		r.kvs[0].value = NULL;
		err = 0;
	}
	etcd_range_free(&r);
	return err;
}

struct each_arg {
	size_t skip;  /* the prefix + kind directory */
	int (*fn)(const char *key, const uint8_t *val, size_t len, void *arg);
	int (*bad)(const void *key, size_t keylen, const char *why, void *arg);
	void *arg;
	int rc;       /* bad's non-zero value: the scan stops at the next record */
};

static int each_kv(const struct etcd_kv *kv, void *arg)
{
	struct each_arg *a = arg;
	if (a->rc != 0)
		return a->rc;
	if (kv->keylen <= a->skip)
		return 0;
	return a->fn(kv->key + a->skip, kv->value, kv->vlen, a->arg);
}

static void each_bad(const struct etcd_kv *kv, const char *why, void *arg)
{
	struct each_arg *a = arg;
	if (a->rc == 0 && kv->keylen > a->skip)
		a->rc = a->bad(kv->key + a->skip, kv->keylen - a->skip, why, a->arg);
}

static int es_each(void *impl, enum store_kind kind,
                   int (*fn)(const char *key, const uint8_t *val, size_t len, void *arg),
                   int (*bad)(const void *key, size_t keylen, const char *why, void *arg), void *arg)
{
	struct estore *s = impl;
	char from[ETCD_KEY_MAX], end[ETCD_KEY_MAX];
	if (store_etcd_key(s->prefix, kind, "", from, sizeof(from)) == NULL)
		return -EINVAL;
	etcd_prefix_end(from, end, sizeof(end));
	struct each_arg a = { .skip = strlen(from), .fn = fn, .bad = bad, .arg = arg };
	int64_t rev = 0;
	int rc = store_etcd_scan_all(s->e, from, end, &rev, NULL, each_kv, each_bad, &a);
	if (rc == 0)
		rc = a.rc; /* bad's stop on the last record */
	/* fn's own codes (a record that does not decode, the caller's stop) pass through */
	if (rc <= ETCD_E_UNAVAILABLE && rc >= ETCD_E_TOOBIG)
		return remote_fail(s->e, rc);
	return rc;
}

static int es_version(void *impl, uint64_t *version)
{
	struct estore *s = impl;
	char key[ETCD_KEY_MAX];
	snprintf(key, sizeof(key), "%s%s", s->prefix, STORE_ETCD_CHANGED);
	struct etcd_range r;
	int rc = etcd_get(s->e, key, NULL, 0, 0, &r);
	if (rc != 0)
		return remote_fail(s->e, rc);
	*version = r.n == 1 ? (uint64_t)r.kvs[0].mod_revision : 0;
	etcd_range_free(&r);
	return 0;
}

/* ---- writes ---- */

/* The change marker's value: who and when, for a reader with etcdctl. */
static void marker(struct estore *s, const char *user, char *buf, size_t size)
{
	snprintf(buf, size, "%s %" PRId64, user && user[0] ? user : "-", (int64_t)time(NULL));
}

/*
 * One transaction: ops (with their compares) and the marker put.
 * @return 0 (committed), 1 (a compare failed: another writer), or a store error.
 */
static int commit(struct estore *s, const struct etcd_cmp *cmp, size_t ncmp, struct etcd_op *ops, size_t nops,
                  const char *user)
{
	char mkey[ETCD_KEY_MAX], mval[128];
	snprintf(mkey, sizeof(mkey), "%s%s", s->prefix, STORE_ETCD_CHANGED);
	marker(s, user, mval, sizeof(mval));
	ops[nops] = (struct etcd_op){ .key = mkey, .value = (const uint8_t *)mval, .vlen = strlen(mval) };
	bool ok;
	int rc = etcd_txn(s->e, cmp, ncmp, ops, nops + 1, &ok, NULL);
	if (rc != 0)
		return remote_fail(s->e, rc);
	return ok ? 0 : 1;
}

static int es_put(void *impl, enum store_kind kind, const char *name, const uint8_t *val, size_t len)
{
	struct estore *s = impl;
	char key[ETCD_KEY_MAX];
	if (store_etcd_key(s->prefix, kind, name, key, sizeof(key)) == NULL)
		return -EINVAL;
	for (int tries = 0; tries < ETCD_STORE_TRIES; tries++) {
		struct etcd_range r;
		int rc = etcd_get(s->e, key, NULL, 0, 0, &r);
		if (rc != 0)
			return remote_fail(s->e, rc);
		int64_t seen = r.n == 1 ? r.kvs[0].mod_revision : 0;
		etcd_range_free(&r);
		if (val == NULL && seen == 0)
			return -ENOENT;
		struct etcd_cmp cmp = { .key = key, .mod_revision = seen };
		struct etcd_op ops[2] = { { .del = val == NULL, .key = key, .value = val, .vlen = len } };
		rc = commit(s, &cmp, 1, ops, 1, NULL);
		if (rc <= 0)
			return rc;
	}
	return STORE_E_CONFLICT;
}

static int es_plan_activate(void *impl, int64_t now)
{
	struct estore *s = impl;
	char next[ETCD_KEY_MAX], active[ETCD_KEY_MAX];
	store_etcd_key(s->prefix, STORE_KIND_PLAN, STORE_PLAN_NEXT, next, sizeof(next));
	store_etcd_key(s->prefix, STORE_KIND_PLAN, STORE_PLAN_ACTIVE, active, sizeof(active));
	for (int tries = 0; tries < ETCD_STORE_TRIES; tries++) {
		struct etcd_range r;
		int rc = etcd_get(s->e, next, NULL, 0, 0, &r);
		if (rc != 0)
			return remote_fail(s->e, rc);
		if (r.n != 1) {
			etcd_range_free(&r);
			return -ENOENT; /* none staged: another node may have activated it */
		}
		struct store_plan p;
		int err = store_plan_decode(r.kvs[0].value, r.kvs[0].vlen, &p);
		int64_t seen = r.kvs[0].mod_revision;
		etcd_range_free(&r);
		if (err != 0)
			return err;
		p.activated_at = now;
		size_t len;
		uint8_t *b = store_plan_encode(&p, &len);
		store_plan_clear(&p);
		if (b == NULL)
			return -ENOMEM;
		/* never two plans live, never none: put and delete in one transaction */
		struct etcd_cmp cmp = { .key = next, .mod_revision = seen };
		struct etcd_op ops[3] = { { .key = active, .value = b, .vlen = len }, { .del = true, .key = next } };
		rc = commit(s, &cmp, 1, ops, 2, NULL);
		free(b);
		if (rc <= 0)
			return rc;
	}
	return STORE_E_CONFLICT;
}

/* What the shared store holds of one name, for a domain write. */
struct held {
	char *name;
	int64_t mod;              /* its key's mod_revision */
	bool ok;                  /* the record decodes */
	struct store_domain d;
};

struct held_list {
	struct held *h;
	size_t n, cap;
	size_t skip;
};

static int held_add(const struct etcd_kv *kv, void *arg)
{
	struct held_list *l = arg;
	if (kv->keylen <= l->skip)
		return 0;
	if (vec_grow(&l->h, &l->cap, l->n + 1, sizeof(*l->h), SIZE_MAX) != 0)
		return ETCD_E_NOMEM;
	struct held *h = &l->h[l->n];
	memset(h, 0, sizeof(*h));
	if ((h->name = strdup(kv->key + l->skip)) == NULL)
		return ETCD_E_NOMEM;
	h->mod = kv->mod_revision;
	h->ok = store_record_decode(h->name, strlen(h->name), kv->value, kv->vlen, &h->d) == 0;
	l->n++;
	return 0;
}

static void held_free(struct held_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->h[i].name);
	free(l->h);
	memset(l, 0, sizeof(*l));
}

static int held_cmp(const void *a, const void *b)
{
	return strcmp(((const struct held *)a)->name, ((const struct held *)b)->name);
}

static struct held *held_find(const struct held_list *l, const char *name)
{
	struct held key = { .name = (char *)name };
	if (l->n == 0)
		return NULL;
	return bsearch(&key, l->h, l->n, sizeof(*l->h), held_cmp);
}

/* Indices of d with each name once (the later entry wins), in name order. */
struct pick {
	const struct store_domain *d;
	size_t i;
};

static int pick_cmp(const void *a, const void *b)
{
	const struct pick *x = a, *y = b;
	int c = strcmp(x->d->name, y->d->name);
	return c != 0 ? c : (x->i > y->i) - (x->i < y->i);
}

/* One pass over the change: batches committed in order. @return 0, 1 (lost a race: read again), error. */
static int write_pass(struct estore *s, const struct pick *p, size_t np, const struct held_list *held, bool replace,
                      const char *user, int64_t now, struct store_counts *counts)
{
	struct etcd_cmp cmp[ETCD_STORE_BATCH];
	struct etcd_op ops[ETCD_STORE_BATCH + 1];
	char (*keys)[ETCD_KEY_MAX] = malloc(ETCD_STORE_BATCH * sizeof(*keys));
	uint8_t(*recs)[STORE_RECORD_MAX] = malloc(ETCD_STORE_BATCH * sizeof(*recs));
	if (keys == NULL || recs == NULL) {
		free(keys);
		free(recs);
		return -ENOMEM;
	}
	size_t n = 0, added = 0, changed = 0, removed = 0;
	int rc = 0;
	/* the given names, then (replace) the held names not given */
	size_t total = np + (replace ? held->n : 0);
	for (size_t k = 0; k <= total && rc == 0; k++) {
		if (k < total) {
			struct held *h;
			if (k < np) {
				h = held_find(held, p[k].d->name);
				struct store_domain out;
				int st = store_stamp(h != NULL && h->ok ? &h->d : NULL, p[k].d, user, now, &out);
				if (st == 0)
					continue;
				int len = store_record_encode(&out, recs[n], sizeof(recs[n]));
				if (len < 0 || !store_etcd_key(s->prefix, STORE_KIND_DOMAIN, out.name, keys[n], sizeof(keys[n]))) {
					rc = -EINVAL;
					break;
				}
				ops[n] = (struct etcd_op){ .key = keys[n], .value = recs[n], .vlen = (size_t)len };
				cmp[n] = (struct etcd_cmp){ .key = keys[n], .mod_revision = h != NULL ? h->mod : 0 };
				if (st == 1)
					changed++;
				else
					added++;
			} else {
				h = &held->h[k - np];
				bool given = false;
				for (size_t lo = 0, hi = np; lo < hi;) { /* p is in name order */
					size_t mid = lo + (hi - lo) / 2;
					int c = strcmp(p[mid].d->name, h->name);
					if (c == 0) {
						given = true;
						break;
					}
					if (c < 0)
						lo = mid + 1;
					else
						hi = mid;
				}
				if (given || !store_etcd_key(s->prefix, STORE_KIND_DOMAIN, h->name, keys[n], sizeof(keys[n])))
					continue;
				ops[n] = (struct etcd_op){ .del = true, .key = keys[n] };
				cmp[n] = (struct etcd_cmp){ .key = keys[n], .mod_revision = h->mod };
				removed++;
			}
			if (++n < ETCD_STORE_BATCH)
				continue;
		}
		if (n == 0)
			continue;
		rc = commit(s, cmp, n, ops, n, user);
		if (rc == 0) {
			counts->added += added;
			counts->changed += changed;
			counts->removed += removed;
		}
		n = added = changed = removed = 0;
	}
	free(keys);
	free(recs);
	return rc;
}

static int es_write_domains(void *impl, const struct store_domain *d, size_t n, const char *user, bool replace,
                            struct store_counts *counts)
{
	struct estore *s = impl;
	memset(counts, 0, sizeof(*counts));
	struct pick *p = n > 0 ? malloc(n * sizeof(*p)) : NULL;
	if (n > 0 && p == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		p[i] = (struct pick){ .d = &d[i], .i = i };
	if (n > 0)
		qsort(p, n, sizeof(*p), pick_cmp);
	size_t np = 0;
	for (size_t i = 0; i < n; i++) {
		if (np > 0 && strcmp(p[np - 1].d->name, p[i].d->name) == 0)
			np--; /* the later entry wins */
		p[np++] = p[i];
	}
	int64_t now = (int64_t)time(NULL);
	char from[ETCD_KEY_MAX], end[ETCD_KEY_MAX];
	store_etcd_key(s->prefix, STORE_KIND_DOMAIN, "", from, sizeof(from));
	etcd_prefix_end(from, end, sizeof(end));
	int err = STORE_E_CONFLICT;
	for (int tries = 0; tries < ETCD_STORE_TRIES; tries++) {
		/* what is held now: the whole set for a replace or a big import, else each name */
		struct held_list held = { .skip = strlen(from) };
		int rc = 0;
		int64_t rev = 0;
		if (replace || np > 64) {
			rc = store_etcd_scan(s->e, from, end, &rev, NULL, held_add, &held);
		} else {
			for (size_t i = 0; i < np && rc == 0; i++) {
				char key[ETCD_KEY_MAX];
				struct etcd_range r;
				store_etcd_key(s->prefix, STORE_KIND_DOMAIN, p[i].d->name, key, sizeof(key));
				if ((rc = etcd_get(s->e, key, NULL, 0, 0, &r)) == 0) {
					if (r.n == 1)
						rc = held_add(&r.kvs[0], &held);
					etcd_range_free(&r);
				}
			}
		}
		if (rc != 0) {
			held_free(&held);
			err = remote_fail(s->e, rc);
			break;
		}
		if (held.n > 0) /* qsort and bsearch want an array, even for none */
			qsort(held.h, held.n, sizeof(*held.h), held_cmp);
		err = write_pass(s, p, np, &held, replace, user, now, counts);
		held_free(&held);
		if (err != 1)
			break;
		err = STORE_E_CONFLICT; /* another writer between our read and our write: read again */
	}
	if (err == 0)
		counts->unchanged = np - counts->added - counts->changed;
	free(p);
	return err;
}

static void es_close(void *impl)
{
	struct estore *s = impl;
	etcd_free(s->e);
	free(s->prefix);
	free(s);
}

static const struct store_remote_ops etcd_ops = {
	.write_domains = es_write_domains,
	.get = es_get,
	.each = es_each,
	.put = es_put,
	.plan_activate = es_plan_activate,
	.version = es_version,
	.close = es_close,
};

int store_etcd_open(const struct conf *c, struct store **out)
{
	*out = NULL;
	struct estore *s = calloc(1, sizeof(*s));
	if (s == NULL)
		return -ENOMEM;
	if ((s->prefix = strdup(c->store.etcd.prefix)) == NULL) {
		free(s);
		return -ENOMEM;
	}
	if ((s->e = store_etcd_client(c)) == NULL) {
		free(s->prefix);
		free(s);
		return STORE_E_REMOTE;
	}
	int err = store_open_remote(&etcd_ops, s, out);
	if (err != 0)
		es_close(s);
	return err;
}
