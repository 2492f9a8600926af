/* SPDX-License-Identifier: BSD-3-Clause */
/* A reload: the new state from the config file and the store, what it may change, and the swap. */
#include "resolver/ops/reload.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "partition/partition.h"
#include "resolver/base/clock.h"
#include "resolver/base/log.h"
#include "resolver/base/tls.h"
#include "resolver/cache/cache.h"
#include "resolver/cache/cache_snap.h"
#include "resolver/cache/inflight.h"
#include "resolver/ops/daemon_state.h"
#include "resolver/view/route.h"
#include "resolver/view/snapshot.h"
#include "resolver/view/standby.h"
#include "store/store.h"

int reload_read_domains(struct daemon *d, struct domains **out, uint64_t *version)
{
	int rc = domains_load(d->store, out, version);
	if (rc != 0)
		log_err("cannot read EDNS domains from the store: %s", store_strerror(rc));
	return rc;
}

struct standby_list {
	struct store_standby *b;
	size_t n, cap;
};

static int standby_collect(const struct store_standby *b, void *arg)
{
	struct standby_list *l = arg;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		struct store_standby *nb = realloc(l->b, cap * sizeof(*nb));
		if (nb == NULL)
			return -ENOMEM;
		l->b = nb;
		l->cap = cap;
	}
	l->b[l->n++] = *b;
	return 0;
}

struct standby *reload_read_standby(struct daemon *d, const struct conf *c)
{
	struct standby_list l = { .n = 0 };
	int rc = store_standby_foreach(d->store, standby_collect, &l);
	if (rc != 0)
		log_err("cannot read every failed-over partition from the store: %s", store_strerror(rc));
	struct standby *s = standby_build(c, l.b, l.n);
	free(l.b);
	return s;
}

struct conf *reload_adopt_plan(struct daemon *d, struct conf *c, FILE *err)
{
	struct store_plan p;
	int rc = store_plan_get(d->store, STORE_PLAN_ACTIVE, &p);
	d->plan_from_store = false;
	if (rc != 0) {
		if (rc != -ENOENT)
			log_err("cannot read the activated plan from the store: %s", store_strerror(rc));
		return c;
	}
	if (c->partitions.serial >= p.serial) {
		if (d->shared != NULL) { /* the fleet's copy: not this node's to remove */
			store_plan_clear(&p);
			return c;
		}
		log_info("the config's plan (serial %u) has caught up with the activated plan %u: the store's copy "
		         "is removed", c->partitions.serial, p.serial);
		store_plan_del(d->store, STORE_PLAN_ACTIVE);
		store_plan_clear(&p);
		return c;
	}
	struct conf *a = NULL;
	unsigned nerr = 0;
	rc = conf_load_plan(d->conf_path, p.text, p.len, "(activated plan)", err ? err : stderr, &a, &nerr);
	if (rc != 0) {
		log_err("the activated plan %u no longer fits the config (%u error(s)); running the config's plan %u",
		        p.serial, nerr, c->partitions.serial);
		store_plan_clear(&p);
		return c;
	}
	log_warn("running the activated plan %u from the store; the config's is %u: put the plan in its "
	         "partitions.include so the config says what runs", p.serial, c->partitions.serial);
	store_plan_clear(&p);
	conf_free(c);
	d->plan_from_store = true;
	return a;
}

void reload_read_next_plan(struct daemon *d)
{
	struct store_plan p;
	struct conf *n = NULL;
	int rc = store_plan_get(d->store, STORE_PLAN_NEXT, &p);
	if (rc == 0) {
		unsigned nerr = 0;
		if (conf_load_plan(d->conf_path, p.text, p.len, "(staged plan)", NULL, &n, &nerr) != 0)
			log_err("the staged plan %u does not fit the config (%u error(s)): not published, not activated; "
			        "stage it again", p.serial, nerr);
	} else if (rc != -ENOENT) {
		log_err("cannot read the staged plan from the store: %s", store_strerror(rc));
	}
	pthread_mutex_lock(&d->next_lock);
	struct conf *old = d->next;
	d->next = n;
	d->next_staged = n ? (time_t)p.staged_at : 0;
	d->next_at = n ? (time_t)p.activate_at : 0;
	pthread_mutex_unlock(&d->next_lock);
	conf_free(old);
	if (rc == 0)
		store_plan_clear(&p);
}

struct plan_change {
	const struct conf *old, *neu;
	const struct standby *old_standby;
	struct standby *neu_standby;
};

/*
 * A cache entry's partition under the new plan: partitions are known by
 * name, so one that kept its name and mapped identities keeps its answers
 * under whatever id it has now (1: moved); one renamed, gone or steered
 * to another identity loses them (-1); the rest stay (0).
 */
static int rekey_partitions(const uint8_t *key, size_t klen, uint8_t *out, void *arg)
{
	const struct plan_change *pc = arg;
	if (klen < ROUTE_KEY_HDR)
		return 0;
	unsigned id = route_key_partition(key);
	if (id == PARTITION_COMMON)
		return 0;
	const char *name = ptable_name(pc->old->partitions.table, id);
	int nid = name != NULL ? ptable_find(pc->neu->partitions.table, name) : -1;
	if (nid <= 0 || !route_partition_equiv(pc->old, id, pc->neu, (unsigned)nid) ||
	    !standby_same(pc->old_standby, id, pc->neu_standby, (unsigned)nid))
		return -1;
	if ((unsigned)nid == id)
		return 0;
	memcpy(out, key, klen);
	route_key_set_partition(out, (unsigned)nid);
	return 1;
}

/* A key a running daemon cannot change was changed (conf_restart_changes): say so. */
static void note_restart(const char *note, void *arg)
{
	FILE *err = arg;
	log_warn("reload: %s changed; it takes effect at the next restart", note);
	if (err)
		fprintf(err, "note: %s changed; it takes effect at the next restart\n", note);
}

_Static_assert((int)CONF_LOG_ERROR == (int)LOG_LEVEL_ERR && (int)CONF_LOG_DEBUG == (int)LOG_LEVEL_DEBUG,
               "server.log_level maps onto log levels one to one");

/* One context for the certificate and key of c with these ALPN names. @return it, or NULL (logged, and in err). */
static struct tls_server *tls_context(const struct conf *c, const char *const *alpn, FILE *err)
{
	char why[768];
	struct tls_server *t = tls_server_new(c->server.tls_cert, c->server.tls_key, alpn, why, sizeof(why));
	if (t == NULL) {
		log_err("server.tls_cert/tls_key: %s", why);
		if (err)
			fprintf(err, "error: server.tls_cert/tls_key: %s\n", why);
	}
	return t;
}

int reload_tls(const struct conf *c, bool dot, bool https, struct tls_server **dot_out, struct tls_server **https_out,
               FILE *err)
{
	static const char *const alpn_dot[] = { "dot", NULL };
	static const char *const alpn_https[] = { "h2", "http/1.1", NULL }; /* HTTP/2 preferred (RFC 8484 §5.2) */
	*dot_out = *https_out = NULL;
	if (dot && (*dot_out = tls_context(c, alpn_dot, err)) == NULL)
		return -1;
	if (https && (*https_out = tls_context(c, alpn_https, err)) == NULL) {
		tls_server_unref(*dot_out);
		*dot_out = NULL;
		return -1;
	}
	const struct tls_server *t = *dot_out ? *dot_out : *https_out;
	if (t == NULL)
		return 0;
	time_t until = tls_server_not_after(t), now = time(NULL);
	char when[32];
	struct tm tm;
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", gmtime_r(&until, &tm));
	if (until <= now || until - now < 30 * 86400) {
		log_warn("server.tls_cert %s (%s) %s %s: clients will refuse it; replace it and reload", c->server.tls_cert,
		         tls_server_names(t), until <= now ? "expired" : "expires", when);
		if (err)
			fprintf(err, "warning: server.tls_cert %s %s %s\n", c->server.tls_cert,
			        until <= now ? "expired" : "expires", when);
	}
	log_info("TLS certificate %s for %s, valid until %s", c->server.tls_cert, tls_server_names(t), when);
	return 0;
}

void reload_apply_log(const struct conf *c)
{
	log_set_level((enum log_level)c->server.log_level);
	log_use_syslog(c->server.log == CONF_LOG_SYSLOG);
}

/* The end of a reload, whichever it was: for partdnsctl status. Under reload_lock. */
static int reload_done(struct daemon *d, int rc)
{
	d->reloads++;
	d->reload_failures += rc != 0;
	d->last_reload = time(NULL);
	d->last_reload_ok = rc == 0;
	pthread_mutex_unlock(&d->reload_lock);
	return rc;
}

/*
 * The config file read again, with an activated plan in place of its own
 * (reload_adopt_plan), and checked against the running one (cur): its plan
 * must be a successor of the running plan (partitions.serial's rules), and
 * the keys that need a restart are noted against the config started with.
 * @return the new config, or NULL with *rc set (logged, and in err).
 */
static struct conf *load_checked(struct daemon *d, const struct conf *cur, FILE *err, int *rc)
{
	struct conf *c = NULL;
	unsigned nerr = 0;
	*rc = conf_load(d->conf_path, err ? err : stderr, &c, &nerr);
	if (*rc != 0) {
		log_err("reload of %s failed (%u error(s)); keeping the running configuration", d->conf_path, nerr);
		return NULL;
	}
	c = reload_adopt_plan(d, c, err);
	char why[512];
	if (conf_plan_successor(cur, c, why, sizeof(why)) != 0) {
		log_err("reload of %s refused: %s; keeping the running configuration", d->conf_path, why);
		if (err)
			fprintf(err, "%s: error: %s\n", d->conf_path, why);
		conf_free(c);
		*rc = CONF_E_INVALID;
		return NULL;
	}
	/* against the values it started with: a key changed by an earlier reload
	 * and changed back is no change, and one changed twice is still noted */
	conf_restart_changes(snapshot_conf_get(d->boot), c, note_restart, err);
	return c;
}

/*
 * Publish c with the domain set dom (read at version) in place of cur.
 * Partition ids may change meaning: answers of a partition that kept its
 * name and identity follow it to its new id, the others go. They leave
 * before the new plan is live (no client of the new plan finds another
 * city's answer under a reused id) and come back after it. Meanwhile
 * partition jobs store nothing (inflight_plan_switch); jobs of the old plan
 * finishing later check their partition's meaning before they store
 * (inflight.c). Takes c and dom. @return 0 or the publication's error (the
 * running state stays).
 */
static int swap_in(struct daemon *d, const struct snapshot *cur, struct conf *c, struct domains *dom,
                   uint64_t version, size_t *flushed, size_t *moved)
{
	const struct conf *neu = c;
	struct plan_change pc = { .old = cur->conf, .neu = neu, .old_standby = cur->standby,
	                          .neu_standby = reload_read_standby(d, neu) };
	inflight_plan_switch(d->inflight, true);
	struct cache_moves *moves = cache_rekey_take(d->cache, rekey_partitions, &pc, flushed);
	int rc = snapshot_publish(&d->snapshots, c, dom, pc.neu_standby, version);
	if (rc == 0)
		*moved = cache_rekey_put(d->cache, moves, clock_sec());
	else
		cache_moves_free(moves); /* the old plan stays: their new keys mean nothing to it */
	inflight_plan_switch(d->inflight, false);
	if (rc != 0)
		return rc;
	if (neu->partitions.digest != cur->conf->partitions.digest)
		atomic_store(&d->plan_since, time(NULL)); /* Last-Modified of the published plan */
	/* serve-stale on or off: expired answers kept or reaped from now on */
	cache_set_stale(d->cache, neu->cache.serve_stale ? INFLIGHT_STALE_MAX : 0);
	reload_apply_log(neu); /* server.log and log_level take effect at once */
	return 0;
}

int reload_run(struct daemon *d, FILE *err)
{
	pthread_mutex_lock(&d->reload_lock);
	struct snapshot *cur = snapshot_get(&d->snapshots);
	int rc;
	struct conf *c = load_checked(d, cur->conf, err, &rc);
	if (c == NULL) {
		snapshot_release(cur);
		return reload_done(d, rc);
	}
	/* the DoT listeners' certificate and key, read again (rotation); a bad one fails the reload */
	struct tls_server *tls, *tls_https;
	if (reload_tls(c, d->nlisten_tls > 0, d->nlisten_https > 0, &tls, &tls_https, err) != 0) {
		log_err("reload of %s failed; keeping the running configuration and certificate", d->conf_path);
		snapshot_release(cur);
		conf_free(c);
		return reload_done(d, CONF_E_INVALID);
	}
	struct domains *dom;
	uint64_t version;
	rc = reload_read_domains(d, &dom, &version);
	if (rc != 0) {
		tls_server_unref(tls);
		tls_server_unref(tls_https);
		snapshot_release(cur);
		conf_free(c);
		if (err)
			fprintf(err, "cannot read the store: %s\n", store_strerror(rc));
		return reload_done(d, rc);
	}
	size_t nparts = ptable_size(c->partitions.table), ndom = domains_count(dom);
	unsigned serial = c->partitions.serial; /* c is the snapshot's once published: read it now */
	size_t flushed = 0, moved = 0;
	rc = swap_in(d, cur, c, dom, version, &flushed, &moved);
	if (rc == 0) { /* new connections get them; open ones keep theirs */
		if (tls)
			tls_slot_set(&d->tls, tls);
		if (tls_https)
			tls_slot_set(&d->tls_https, tls_https);
	} else {
		tls_server_unref(tls);
		tls_server_unref(tls_https);
	}
	snapshot_release(cur);
	reload_done(d, rc);
	if (rc == 0)
		log_info("reloaded %s: %zu partition(s) (plan serial %u), %zu EDNS domain(s); %zu cache entries of "
		         "changed or removed partitions dropped, %zu of renumbered ones kept",
		         d->conf_path, nparts, serial, ndom, flushed, moved);
	return rc;
}

/* ---- cache snapshots ---- */

int reload_snap_write(struct daemon *d, const char *path, const char *when, struct cache_snap_result *r)
{
	pthread_mutex_lock(&d->snap_lock);
	pthread_mutex_lock(&d->reload_lock);
	struct snapshot *s = snapshot_get(&d->snapshots);
	uint64_t t0 = clock_ns();
	int rc = cache_snap_write(d->cache, s->conf, s->standby, path, r);
	double secs = (double)(clock_ns() - t0) / 1e9;
	snapshot_release(s);
	pthread_mutex_unlock(&d->reload_lock);
	if (rc == 0) {
		atomic_fetch_add(&d->snap_saved, r->entries);
		atomic_store(&d->snap_last_entries, r->entries);
		atomic_store(&d->snap_last_bytes, r->bytes);
		atomic_store(&d->snap_last, r->written);
	}
	pthread_mutex_unlock(&d->snap_lock);
	if (rc != 0)
		log_err("cache snapshot (%s) to %s failed: %s", when, path, r->why);
	else
		log_info("cache snapshot (%s): %llu entries, %llu bytes written to %s in %.2f s%s%s", when,
		         (unsigned long long)r->entries, (unsigned long long)r->bytes, path, secs, r->why[0] ? "; " : "",
		         r->why);
	return rc;
}

int reload_snap_load(struct daemon *d, const char *path, const char *when, struct cache_snap_result *r)
{
	pthread_mutex_lock(&d->snap_lock);
	pthread_mutex_lock(&d->reload_lock);
	struct snapshot *s = snapshot_get(&d->snapshots);
	uint64_t t0 = clock_ns();
	int rc = cache_snap_load(d->cache, s->conf, s->standby, path, r);
	double secs = (double)(clock_ns() - t0) / 1e9;
	snapshot_release(s);
	pthread_mutex_unlock(&d->reload_lock);
	atomic_fetch_add(&d->snap_loaded, r->entries);
	atomic_fetch_add(&d->snap_refused, r->refused);
	atomic_fetch_add(&d->snap_files_refused, r->file_refused ? 1 : 0);
	pthread_mutex_unlock(&d->snap_lock);
	if (rc == -ENOENT && !r->file_refused) {
		log_info("cache snapshot (%s): no file %s, starting cold", when, path);
	} else if (rc != 0) {
		log_warn("cache snapshot (%s) %s %s", when, path, r->why);
	} else {
		time_t now = time(NULL);
		long ago = now > r->written ? (long)(now - r->written) : 0;
		log_info("cache snapshot (%s): %llu entries loaded from %s (written %ld s ago) in %.2f s%s%s", when,
		         (unsigned long long)r->entries, path, ago, secs, r->why[0] ? "; not loaded: " : "", r->why);
	}
	return rc;
}
