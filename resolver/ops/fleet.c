/* SPDX-License-Identifier: BSD-3-Clause */
/* A node of a fleet: the mirror of the shared store and the node's registration (see fleet.h). */
#include "resolver/ops/fleet.h"

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store/store_etcd.h"
#include "etcd/etcd.h"
#include "resolver/base/log.h"
#include "util/vec.h"

/* A watch that failed is tried again after this, doubling up to the most. */
#define FLEET_BACKOFF_MS 100
#define FLEET_BACKOFF_MAX_MS 2000
/* The watch callback's "copy everything again" (a new cluster). */
#define FLEET_RESYNC 1
/* Records left out that one apply names in the log; the rest are counted. */
#define FLEET_BAD_LOGGED 20

struct fleet {
	struct store *local;
	char *prefix;
	char name[128];
	unsigned lease_ttl;
	void (*changed)(void *arg, bool plan);
	void *arg;
	struct etcd *watch_e, *node_e; /* one handle per thread */
	pthread_t mirror_thread, node_thread;
	bool mirror_started, node_started;
	atomic_bool stop;
	/* Ends the current watch (set by stop, and by the registration thread
	 * when the watch lags the shared data: a member that hangs without
	 * closing its connection sends nothing, and TCP keepalives of a live
	 * kernel do not tell) */
	atomic_bool rewatch;
	time_t started;

	pthread_mutex_t lock; /* the fields below; cond wakes the registration */
	pthread_cond_t cond;
	bool connected;
	int64_t revision;
	unsigned serial;
	uint64_t resyncs, bad_records, applied;
	uint64_t cluster;     /* the mirror's, as the local store says */
	char member[128];     /* the member the watch reads from */
};

/* Sleep ms unless stopping; @return false when stopping. */
static struct timespec deadline(unsigned ms);

static bool nap(struct fleet *f, unsigned ms)
{
	struct timespec until = deadline(ms);
	pthread_mutex_lock(&f->lock);
	while (!atomic_load(&f->stop) && pthread_cond_timedwait(&f->cond, &f->lock, &until) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&f->lock);
	return !atomic_load(&f->stop);
}

static void set_connected(struct fleet *f, bool up, const char *why)
{
	pthread_mutex_lock(&f->lock);
	bool was = f->connected;
	f->connected = up;
	if (up)
		snprintf(f->member, sizeof(f->member), "%s", etcd_member(f->watch_e));
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
	if (was && !up)
		log_warn("fleet: lost the shared store (%s); serving the last applied state, revision %" PRId64,
		         why, f->revision);
	else if (!was && up)
		log_info("fleet: watching the shared store at %s from revision %" PRId64, etcd_member(f->watch_e),
		         f->revision);
}

/*
 * Records left out of one apply: each named in the log (its key escaped:
 * anyone with write access to etcd chose it), up to FLEET_BAD_LOGGED, then
 * counted, so a flood of junk cannot flood the log.
 */
struct badlog {
	int64_t revision;
	size_t n;
};

static void bad_log(struct badlog *b, const void *key, size_t keylen, const char *why)
{
	if (b->n++ >= FLEET_BAD_LOGGED)
		return;
	char esc[512];
	log_err("fleet: the shared store's record %s at revision %" PRId64 " is left out: %s (the last good "
	        "version, if any, stays)",
	        store_key_escape(key, keylen, esc, sizeof(esc)), b->revision, why);
}

static void bad_log_end(const struct badlog *b)
{
	if (b->n > FLEET_BAD_LOGGED)
		log_err("fleet: %zu more record(s) of the shared store at revision %" PRId64 " left out",
		        b->n - FLEET_BAD_LOGGED, b->revision);
}

/*
 * A change of the shared store, as the local store takes it. @return 1 (out
 * set), 0 for a key that is not a record (the change marker, a node's
 * registration), -1 for one to leave out and name (why set): a kv the
 * client could not read as text, or a key under the prefix that no
 * partdns writes.
 */
static int to_change(const struct fleet *f, const struct etcd_kv *kv, bool del, struct store_change *out,
                     const char **why)
{
	const char *name;
	size_t pl = strlen(f->prefix);
	*why = kv->bad;
	if (kv->bad != NULL)
		return -1;
	if (store_etcd_parse_key(f->prefix, kv->key, &out->kind, &name)) {
		out->key = name;
		out->val = del ? NULL : kv->value;
		out->len = del ? 0 : kv->vlen;
		return 1;
	}
	if (kv->keylen >= pl && (strcmp(kv->key + pl, STORE_ETCD_CHANGED) == 0 ||
	                         strncmp(kv->key + pl, STORE_ETCD_NODES, strlen(STORE_ETCD_NODES)) == 0))
		return 0;
	*why = "no partdns record has such a key";
	return -1;
}

static void bad_change(const struct store_change *c, const char *why, void *arg)
{
	struct badlog *b = arg;
	static const char *const dirs[] = { [STORE_KIND_DOMAIN] = "domains/", [STORE_KIND_STANDBY] = "standby/",
		                            [STORE_KIND_PLAN] = "plan/" };
	char key[600];
	int n = snprintf(key, sizeof(key), "%s%s", dirs[c->kind], c->key);
	bad_log(b, key, n > 0 && (size_t)n < sizeof(key) ? (size_t)n : strlen(key), why);
}

/* Write changes to the local store at revision; tell the daemon of a plan change. skipped: left out before. */
static int apply(struct fleet *f, const struct store_change *ch, size_t n, bool full, uint64_t cluster,
                 int64_t revision, struct badlog *skipped)
{
	size_t bad = 0;
	bool plan = false;
	int err = store_mirror_apply_ex(f->local, ch, n, full, cluster, revision, bad_change, skipped, &bad, &plan);
	if (err != 0) {
		char msg[512];
		log_err("fleet: cannot apply the shared store's revision %" PRId64 " to the local store: %s", revision,
		        store_message(err, NULL, msg, sizeof(msg)));
		return err;
	}
	bad_log_end(skipped);
	pthread_mutex_lock(&f->lock);
	f->revision = revision;
	f->cluster = cluster;
	f->bad_records += skipped->n;
	f->applied++;
	if (full)
		f->resyncs++;
	pthread_cond_broadcast(&f->cond); /* the registration says the new revision */
	pthread_mutex_unlock(&f->lock);
	if (f->changed != NULL)
		f->changed(f->arg, plan);
	return 0;
}

/* ---- a full copy ---- */

struct copy {
	const struct fleet *f;
	struct store_change *ch;
	uint8_t **vals; /* owned copies: the scan frees its pages */
	char **keys;
	size_t n, cap;
	struct badlog skipped;
};

static void copy_skipped(const struct etcd_kv *kv, const char *why, void *arg)
{
	struct copy *c = arg;
	bad_log(&c->skipped, kv->key, kv->keylen, why);
}

static int copy_kv(const struct etcd_kv *kv, void *arg)
{
	struct copy *c = arg;
	struct store_change ch;
	const char *why;
	int t = to_change(c->f, kv, false, &ch, &why);
	if (t < 0)
		copy_skipped(kv, why, c);
	if (t <= 0)
		return 0;
	/* three arrays of one length: each grows to the same capacity */
	size_t cap_ch = c->cap, cap_v = c->cap, cap_k = c->cap;
	if (vec_grow(&c->ch, &cap_ch, c->n + 1, sizeof(*c->ch), SIZE_MAX) != 0 ||
	    vec_grow(&c->vals, &cap_v, c->n + 1, sizeof(*c->vals), SIZE_MAX) != 0 ||
	    vec_grow(&c->keys, &cap_k, c->n + 1, sizeof(*c->keys), SIZE_MAX) != 0)
		return ETCD_E_NOMEM;
	c->cap = cap_k;
	uint8_t *v = malloc(kv->vlen ? kv->vlen : 1);
	char *k = strdup(ch.key);
	if (v == NULL || k == NULL) {
		free(v);
		free(k);
		return ETCD_E_NOMEM;
	}
	memcpy(v, kv->value, kv->vlen);
	c->vals[c->n] = v;
	c->keys[c->n] = k;
	ch.val = v;
	ch.key = k;
	c->ch[c->n++] = ch;
	return 0;
}

static int resync(struct fleet *f)
{
	char end[600];
	etcd_prefix_end(f->prefix, end, sizeof(end));
	struct copy c = { .f = f };
	int64_t rev = 0;
	uint64_t cluster = 0;
	int rc = store_etcd_scan_all(f->watch_e, f->prefix, end, &rev, &cluster, copy_kv, copy_skipped, &c);
	if (rc == 0) {
		/* the revision is known once the first page is read: name it now */
		c.skipped.revision = rev;
		rc = apply(f, c.ch, c.n, true, cluster, rev, &c.skipped);
		if (rc == 0)
			log_info("fleet: copied the shared store at revision %" PRId64 " (%zu record(s)) from %s", rev, c.n,
			         etcd_member(f->watch_e));
	} else {
		log_debug("fleet: cannot copy the shared store: %s (%s)", etcd_strerror(rc), etcd_error(f->watch_e));
	}
	for (size_t i = 0; i < c.n; i++) {
		free(c.vals[i]);
		free(c.keys[i]);
	}
	free(c.ch);
	free(c.vals);
	free(c.keys);
	return rc;
}

/* ---- the watch ---- */

static int on_events(const struct etcd_event *ev, size_t n, int64_t header_revision, uint64_t cluster, void *arg)
{
	struct fleet *f = arg;
	pthread_mutex_lock(&f->lock);
	uint64_t mine = f->cluster;
	pthread_mutex_unlock(&f->lock);
	if (cluster != mine)
		return FLEET_RESYNC; /* another cluster's revisions mean nothing here */
	if (n == 0) {
		set_connected(f, true, NULL);
		return 0;
	}
	struct store_change *ch = calloc(n, sizeof(*ch));
	if (ch == NULL)
		return ETCD_E_NOMEM;
	size_t m = 0;
	int64_t rev = 0;
	for (size_t i = 0; i < n; i++) {
		if (ev[i].kv.mod_revision > rev)
			rev = ev[i].kv.mod_revision;
	}
	struct badlog skipped = { .revision = rev };
	char marker[600];
	snprintf(marker, sizeof(marker), "%s%s", f->prefix, STORE_ETCD_CHANGED);
	rev = 0;
	for (size_t i = 0; i < n; i++) {
		const char *why;
		int t = to_change(f, &ev[i].kv, ev[i].del, &ch[m], &why);
		if (t > 0)
			m++;
		else if (t < 0)
			bad_log(&skipped, ev[i].kv.key, ev[i].kv.keylen, why);
		/* the revision moves with data only (node registrations change all
		 * the time), and past what is left out: it is not read again */
		if ((t != 0 || (ev[i].kv.bad == NULL && strcmp(ev[i].kv.key, marker) == 0)) && ev[i].kv.mod_revision > rev)
			rev = ev[i].kv.mod_revision;
	}
	int rc = 0;
	if (rev > 0 && apply(f, ch, m, false, cluster, rev, &skipped) != 0)
		rc = ETCD_E_NOMEM; /* the local store failed: end the watch, come back from the last revision */
	free(ch);
	return rc;
}

static void *mirror_main(void *arg)
{
	struct fleet *f = arg;
	unsigned backoff = FLEET_BACKOFF_MS;
	bool full = false;
	char end[600];
	etcd_prefix_end(f->prefix, end, sizeof(end));
	while (!atomic_load(&f->stop)) {
		pthread_mutex_lock(&f->lock);
		int64_t rev = f->revision;
		pthread_mutex_unlock(&f->lock);
		if (rev == 0 || full) {
			if (resync(f) != 0) {
				set_connected(f, false, etcd_error(f->watch_e));
				if (!nap(f, backoff))
					break;
				backoff = backoff * 2 > FLEET_BACKOFF_MAX_MS ? FLEET_BACKOFF_MAX_MS : backoff * 2;
				continue;
			}
			full = false;
			continue;
		}
		int64_t compacted;
		atomic_store(&f->rewatch, false);
		int rc = etcd_watch(f->watch_e, f->prefix, end, rev + 1, on_events, f, &f->rewatch, &compacted);
		if (atomic_load(&f->stop))
			break;
		if (rc == ETCD_E_STOPPED) {
			log_warn("fleet: the watch on %s lags the shared store: watching from another member",
			         etcd_member(f->watch_e));
			etcd_skip_member(f->watch_e);
			set_connected(f, false, "the watch lagged");
			continue;
		}
		if (rc == ETCD_E_COMPACTED || rc == FLEET_RESYNC || rc == ETCD_E_TOOBIG) {
			/* a message too large to read would be sent again on every
			 * watch from here: the copy reads in pages and goes past it */
			log_warn("fleet: %s: copying the whole shared store again",
			         rc == FLEET_RESYNC   ? "etcd is another cluster than the one last mirrored"
			         : rc == ETCD_E_TOOBIG ? etcd_error(f->watch_e)
			                               : "the revision reached was compacted away in etcd");
			full = true;
			continue;
		}
		set_connected(f, false, etcd_error(f->watch_e));
		/* a member that fails is passed over at once; all of them: back off */
		if (!nap(f, backoff))
			break;
		backoff = backoff * 2 > FLEET_BACKOFF_MAX_MS ? FLEET_BACKOFF_MAX_MS : backoff * 2;
		if (rc == 0)
			backoff = FLEET_BACKOFF_MS;
	}
	return NULL;
}

/* ---- the registration ---- */

static char *node_json(struct fleet *f)
{
	pthread_mutex_lock(&f->lock);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string(f->name));
	json_object_object_add(o, "revision", json_object_new_int64(f->revision));
	json_object_object_add(o, "serial", json_object_new_int64(f->serial));
	json_object_object_add(o, "connected", json_object_new_boolean(f->connected));
	json_object_object_add(o, "version", json_object_new_string(PARTDNS_VERSION));
	json_object_object_add(o, "started", json_object_new_int64(f->started));
	json_object_object_add(o, "updated", json_object_new_int64(time(NULL)));
	pthread_mutex_unlock(&f->lock);
	char *s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return s;
}

/* Now plus ms, for pthread_cond_timedwait (CLOCK_REALTIME). */
static struct timespec deadline(unsigned ms)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

static bool before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* What the registration says; rewritten when it differs from the last written. */
struct said {
	int64_t revision;
	unsigned serial;
	bool connected;
};

static struct said said_now(struct fleet *f)
{
	pthread_mutex_lock(&f->lock);
	struct said s = { f->revision, f->serial, f->connected };
	pthread_mutex_unlock(&f->lock);
	return s;
}

static bool said_same(const struct said *a, const struct said *b)
{
	return a->revision == b->revision && a->serial == b->serial && a->connected == b->connected;
}

/* The watch may take this long to deliver a change before it is thought stuck. */
#define FLEET_LAG_S 5

/*
 * Is the mirror behind the shared data for longer than FLEET_LAG_S? Then its
 * watch is stuck on a member that stopped sending (hung, partitioned):
 * end it, and the mirror watches from the next member. One range per
 * registration round. @return 0 or the range's ETCD_E_*.
 */
static int check_lag(struct fleet *f, time_t *since, int64_t *seen)
{
	char key[600];
	snprintf(key, sizeof(key), "%s%s", f->prefix, STORE_ETCD_CHANGED);
	struct etcd_range r;
	int rc = etcd_get(f->node_e, key, NULL, 0, 0, &r);
	if (rc != 0)
		return rc;
	int64_t data = r.n == 1 ? r.kvs[0].mod_revision : 0;
	etcd_range_free(&r);
	pthread_mutex_lock(&f->lock);
	bool behind = f->connected && data > f->revision;
	bool moving = f->revision != *seen; /* a long import: behind, but applying */
	*seen = f->revision;
	pthread_mutex_unlock(&f->lock);
	time_t now = time(NULL);
	if (!behind || moving)
		*since = behind ? now : 0;
	else if (*since == 0)
		*since = now;
	else if (now - *since >= FLEET_LAG_S) {
		atomic_store(&f->rewatch, true);
		*since = 0;
	}
	return 0;
}

static void *node_main(void *arg)
{
	struct fleet *f = arg;
	char key[600];
	snprintf(key, sizeof(key), "%s%s%s", f->prefix, STORE_ETCD_NODES, f->name);
	int64_t lease = 0;
	time_t lag_since = 0;
	int64_t lag_seen = -1;
	struct said said = { .revision = -1 };
	unsigned every = f->lease_ttl * 1000 / 3; /* renewals per lease: three chances */
	struct timespec renew = deadline(0);
	while (!atomic_load(&f->stop)) {
		int rc = 0;
		struct timespec now = deadline(0);
		if (lease == 0) {
			if ((rc = etcd_lease_grant(f->node_e, f->lease_ttl, &lease)) == 0) {
				said.revision = -1; /* written again under the new lease */
				renew = deadline(every);
			}
		} else if (!before(&now, &renew)) {
			int64_t ttl = 0;
			if ((rc = etcd_lease_keepalive(f->node_e, lease, &ttl)) == 0 && ttl <= 0) {
				log_warn("fleet: this node's lease ran out while etcd was unreachable: registering again");
				lease = 0;
				continue;
			}
			if (rc == 0)
				renew = deadline(every);
		}
		if (rc == 0)
			rc = check_lag(f, &lag_since, &lag_seen);
		struct said want = said_now(f);
		if (rc == 0 && !said_same(&want, &said)) {
			char *v = node_json(f);
			bool ok = false;
			struct etcd_op op = { .key = key, .value = (const uint8_t *)v, .vlen = v ? strlen(v) : 0,
				              .lease = lease };
			rc = v != NULL ? etcd_txn(f->node_e, NULL, 0, &op, 1, &ok, NULL) : ETCD_E_NOMEM;
			free(v);
			if (rc == 0)
				said = want;
			else if (strstr(etcd_error(f->node_e), "lease not found") != NULL)
				lease = 0; /* expired while etcd was away */
		}
		if (rc != 0)
			log_debug("fleet: registration: %s (%s)", etcd_strerror(rc), etcd_error(f->node_e));
		/* until the next renewal, or earlier for a new revision or serial; a failure: again in 1 s */
		struct timespec until = rc != 0 ? deadline(1000) : renew;
		pthread_mutex_lock(&f->lock);
		while (!atomic_load(&f->stop)) {
			struct said cur = { f->revision, f->serial, f->connected };
			if (rc == 0 && !said_same(&cur, &said))
				break;
			if (pthread_cond_timedwait(&f->cond, &f->lock, &until) == ETIMEDOUT)
				break;
		}
		pthread_mutex_unlock(&f->lock);
	}
	if (lease != 0 && said.revision >= 0)
		etcd_lease_revoke(f->node_e, lease); /* leave the list now, not a lease later */
	return NULL;
}

/* ---- start, status, stop ---- */

int fleet_start(const struct conf *c, struct store *local, void (*changed)(void *arg, bool plan), void *arg,
                struct fleet **out)
{
	*out = NULL;
	struct fleet *f = calloc(1, sizeof(*f));
	if (f == NULL || (f->prefix = strdup(c->store.etcd.prefix)) == NULL) {
		free(f);
		log_err("fleet: out of memory");
		return -1;
	}
	f->local = local;
	f->changed = changed;
	f->arg = arg;
	f->lease_ttl = c->store.etcd.lease_ttl;
	f->started = time(NULL);
	f->serial = c->partitions.serial;
	if (c->store.etcd.name[0] != '\0')
		snprintf(f->name, sizeof(f->name), "%s", c->store.etcd.name);
	else if (gethostname(f->name, sizeof(f->name) - 1) != 0)
		snprintf(f->name, sizeof(f->name), "unknown");
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
	int err = store_mirror_state(local, &f->cluster, &f->revision);
	if (err != 0) {
		char msg[512];
		log_err("fleet: cannot read the mirror's state from the local store: %s",
		        store_message(err, c->server.store, msg, sizeof(msg)));
		fleet_stop(f);
		return -1;
	}
	f->watch_e = store_etcd_client(c);
	f->node_e = store_etcd_client(c);
	if (f->watch_e == NULL || f->node_e == NULL) {
		log_err("fleet: %s", store_remote_error());
		fleet_stop(f);
		return -1;
	}
	if (pthread_create(&f->mirror_thread, NULL, mirror_main, f) != 0) {
		log_err("fleet: cannot start the mirror thread");
		fleet_stop(f);
		return -1;
	}
	f->mirror_started = true;
	if (pthread_create(&f->node_thread, NULL, node_main, f) != 0) {
		log_err("fleet: cannot start the registration thread");
		fleet_stop(f);
		return -1;
	}
	f->node_started = true;
	log_info("fleet: node %s, shared store %s (%zu member(s)), local copy at revision %" PRId64, f->name,
	         c->store.etcd.prefix, c->store.etcd.nendpoints, f->revision);
	*out = f;
	return 0;
}

void fleet_set_serial(struct fleet *f, unsigned serial)
{
	if (f == NULL)
		return;
	pthread_mutex_lock(&f->lock);
	f->serial = serial;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

void fleet_status(struct fleet *f, struct fleet_status *out)
{
	memset(out, 0, sizeof(*out));
	if (f == NULL)
		return;
	pthread_mutex_lock(&f->lock);
	out->connected = f->connected;
	out->revision = f->revision;
	out->resyncs = f->resyncs;
	out->bad_records = f->bad_records;
	out->applied = f->applied;
	snprintf(out->name, sizeof(out->name), "%s", f->name);
	snprintf(out->member, sizeof(out->member), "%s", f->member);
	pthread_mutex_unlock(&f->lock);
}

void fleet_stop(struct fleet *f)
{
	if (f == NULL)
		return;
	pthread_mutex_lock(&f->lock);
	atomic_store(&f->stop, true);
	atomic_store(&f->rewatch, true);
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
	if (f->mirror_started)
		pthread_join(f->mirror_thread, NULL);
	if (f->node_started)
		pthread_join(f->node_thread, NULL);
	etcd_free(f->watch_e);
	etcd_free(f->node_e);
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->lock);
	free(f->prefix);
	free(f);
}
