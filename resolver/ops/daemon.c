/* SPDX-License-Identifier: BSD-3-Clause */
/* The daemon: builds and starts every part, takes signals, runs the main loop, stops and frees it all. */
#include "resolver/ops/daemon.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "control/client.h"
#include "control/server.h"
#include "partition/partition.h"
#include "resolver/base/clock.h"
#include "resolver/base/dnstap.h"
#include "resolver/base/http.h"
#include "resolver/base/log.h"
#include "resolver/base/net.h"
#include "resolver/base/privs.h"
#include "resolver/base/ubctx.h"
#include "resolver/cache/cache.h"
#include "resolver/cache/cache_snap.h"
#include "resolver/cache/inflight.h"
#include "resolver/ops/console.h"
#include "resolver/ops/ctl_verbs.h"
#include "resolver/ops/daemon_state.h"
#include "resolver/ops/fleet.h"
#include "resolver/ops/metrics_http.h"
#include "resolver/ops/probe.h"
#include "resolver/ops/publish.h"
#include "resolver/ops/reload.h"
#include "resolver/ops/store_watch.h"
#include "resolver/pool/resolve_edns.h"
#include "resolver/pool/resolve_normal.h"
#include "resolver/serve/worker.h"
#include "resolver/view/chainhint.h"
#include "resolver/view/route.h"
#include "resolver/view/snapshot.h"
#include "resolver/xfr/rpz_xfr.h"
#include "store/store.h"

void daemon_stop(struct daemon *d)
{
	atomic_store(&d->stopping, true);
	uint64_t one = 1;
	ssize_t w = write(d->stop_fd, &one, sizeof(one));
	(void)w;
}

/* The cache's tag of an entry: the partition its key belongs to. */
static unsigned cache_tag(const uint8_t *key, size_t klen)
{
	return klen >= ROUTE_KEY_HDR ? route_key_partition(key) : PARTITION_MAX + 1;
}

static void control_log(int level, const char *msg)
{
	log_msg((enum log_level)level, "%s", msg);
}

/* Sockets for queries in flight: take every descriptor the hard limit allows. */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			log_warn("cannot raise the open-file limit: %s", strerror(errno));
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 16384)
		log_warn("open-file limit %llu: under a flood of misses the resolution pools may run out of "
		         "sockets (LimitNOFILE= in the systemd unit, ulimit -n)", (unsigned long long)rl.rlim_cur);
}

/* An address already served is an accidental second instance, unless the operator takes over on purpose. */
static int check_listen_free(const struct conf *c, bool takeover)
{
	for (size_t i = 0; i < c->server.nlisten; i++) {
		const struct conf_addr *a = &c->server.listen[i];
		int rc = net_in_use(a);
		if (rc == 1 && !takeover) {
			log_err("cannot listen on %s: the address is in use (another partdns?); stop it first, or start "
			        "with --takeover to share the address during an upgrade", a->text);
			return -EADDRINUSE;
		}
		if (rc == 1)
			log_info("--takeover: sharing %s with the process that serves it now", a->text);
	}
	return 0;
}

/*
 * Every source address must be on this machine: libunbound binds them only
 * when it sends, and a query that cannot be sent is just a SERVFAIL, so a
 * typo would show as failures of everything the pool resolves.
 */
static int check_outgoing(const struct conf *c)
{
	const struct {
		const char *key;
		const struct conf_addr *list;
		size_t n;
	} pools[] = { { "resolver.outgoing", c->resolver.outgoing, c->resolver.noutgoing },
	              { "edns.outgoing", c->edns.outgoing, c->edns.noutgoing } };
	int rc = 0;
	for (size_t p = 0; p < sizeof(pools) / sizeof(pools[0]); p++) {
		for (size_t i = 0; i < pools[p].n; i++) {
			int e = net_source_check(&pools[p].list[i]);
			if (e == -EADDRNOTAVAIL)
				log_err("%s: %s is not an address of this machine (no interface has it); add it to an "
				        "interface or remove it from %s", pools[p].key, pools[p].list[i].text, pools[p].key);
			else if (e != 0)
				log_err("%s: cannot send from %s: %s", pools[p].key, pools[p].list[i].text, strerror(-e));
			if (e != 0)
				rc = e;
		}
	}
	return rc;
}

/*
 * The store belongs to the user the daemon becomes: LMDB opens its lock file
 * again in new reader processes and the map grows by writes. The directory
 * and LMDB's two files only; anything else in it is the operator's.
 */
static int own_store(const struct privs *p, const char *dir)
{
	static const char *const files[] = { "", "/data.mdb", "/lock.mdb" };
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s%s", dir, files[i]);
		int e = privs_own(p, path, false, i == 0 ? 0750 : 0640);
		if (e != 0 && !(e == -ENOENT && i > 0)) {
			log_err("server.store: cannot give %s to %s: %s", path, p->user, strerror(-e));
			return e;
		}
	}
	return 0;
}

/*
 * The signals daemon_run takes with sigtimedwait. Every thread must block
 * them: one is delivered to any thread that does not, and a thread that
 * does not handle SIGHUP or SIGTERM ends the whole process with it.
 */
static void daemon_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGPIPE);
	sigaddset(set, SIGUSR2); /* a wake-up: poll the store now (fleet_changed) */
}

/*
 * What comes before anything is opened: the user to become, the listen and
 * source addresses, the open-file limit. Takes c: freed on failure.
 */
static struct daemon *daemon_alloc(const char *conf_path, struct conf *c, bool takeover, struct privs *privs)
{
	struct daemon *d = calloc(1, sizeof(*d));
	if (d == NULL) {
		conf_free(c);
		return NULL;
	}
	d->main_thread = pthread_self(); /* runs daemon_run: takes the signals */
	char why[512];
	if (privs_plan(c->server.user, c->server.control_group, false, privs, why, sizeof(why)) != 0) {
		log_err("%s", why);
		conf_free(c);
		free(d);
		return NULL;
	}
	if (check_listen_free(c, takeover) != 0 || check_outgoing(c) != 0) {
		conf_free(c);
		free(d);
		return NULL;
	}
	raise_fd_limit();
	d->conf_path = strdup(conf_path); /* before the store: an activated plan is read with the config */
	d->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	snapshot_slot_init(&d->snapshots);
	pthread_mutex_init(&d->reload_lock, NULL);
	pthread_mutex_init(&d->next_lock, NULL);
	pthread_mutex_init(&d->snap_lock, NULL);
	tls_slot_init(&d->tls);
	tls_slot_init(&d->tls_https);
	d->nlisten_tls = c->server.nlisten_tls;
	d->nlisten_https = c->server.nlisten_https;
	d->started = time(NULL);
	return d;
}

/*
 * The store, given to the user the daemon becomes, and an activated plan
 * in it in place of the config's. Takes c. @return the config to run (c,
 * or c replaced), or NULL (c freed; logged).
 */
static struct conf *open_store(struct daemon *d, const struct privs *privs, struct conf *c)
{
	int rc = store_open(c->server.store, false, &d->store);
	if (rc != 0) {
		char msg[1024];
		log_err("cannot open the store: %s", store_message(rc, c->server.store, msg, sizeof(msg)));
		conf_free(c);
		return NULL;
	}
	if (privs->drop && own_store(privs, c->server.store) != 0) {
		conf_free(c);
		return NULL;
	}
	c = reload_adopt_plan(d, c, NULL);
	if (store_stale_readers(d->store) > 0)
		log_warn("store %s: freed %u reader slot(s) left by killed processes", c->server.store,
		         store_stale_readers(d->store));
	/* The daemon opens the store writable (it may create it), so an upgraded
	 * daemon migrates an older store's schema at start; say so, since an older
	 * partdns cannot open the store after that. */
	size_t nmigrated = 0;
	unsigned schema_from = store_migrated_from(d->store, &nmigrated);
	if (schema_from != 0)
		log_info("store %s: migrated from schema version %u to %d (%zu record(s) rewritten); an "
		         "older partdns cannot open it any more",
		         c->server.store, schema_from, STORE_SCHEMA, nmigrated);
	return c;
}

/*
 * The first snapshot: c with the store's domain set and standby partitions
 * (the fleet's mirror started first, when there is one), the config that
 * restart-only keys keep, and the staged plan. Takes c. @return 0 or -1.
 */
static int first_snapshot(struct daemon *d, struct conf *c)
{
	struct domains *dom;
	uint64_t version;
	if (reload_read_domains(d, &dom, &version) != 0) {
		conf_free(c);
		return -1;
	}
	log_info("%zu EDNS domain(s) from store %s", domains_count(dom), c->server.store);
	if (c->store.etcd.nendpoints > 0 && store_watch_fleet_begin(d, c) != 0) {
		domains_free(dom);
		conf_free(c);
		return -1;
	}
	if (snapshot_publish(&d->snapshots, c, dom, reload_read_standby(d, c), version) != 0)
		return -1;
	struct snapshot *first = snapshot_get(&d->snapshots);
	d->boot = snapshot_conf_hold(first);
	snapshot_release(first);
	reload_read_next_plan(d);
	return 0;
}

/* The cache, chain hints, jobs in flight and both resolution pools. @return 0 or -1. */
static int make_pools(struct daemon *d, const struct conf *c)
{
	d->cache = cache_new(c->cache.max_bytes, 0);
	if (d->cache == NULL || cache_set_tags(d->cache, PARTITION_MAX + 1, cache_tag) != 0) {
		log_err("cannot create the cache (cache.max_bytes %llu)", (unsigned long long)c->cache.max_bytes);
		return -1;
	}
	cache_set_stale(d->cache, c->cache.serve_stale ? INFLIGHT_STALE_MAX : 0);
	/* a word per 4 KiB of cache: more than one per entry that can chain */
	if ((d->hints = chainhint_new(c->cache.max_bytes / 4096)) == NULL)
		return -1;
	d->inflight = inflight_new(d->cache, &d->snapshots);
	/* the same count: each listener resolves its own misses in its loop (resolve_normal.c) */
	d->normal = resolve_normal_new(c, &d->snapshots, d->stop_fd, c->resolver.threads == c->server.threads);
	d->edns = resolve_edns_new(c, d->stop_fd);
	if (d->inflight == NULL || d->normal == NULL || d->edns == NULL)
		return -1;
	return 0;
}

/* The listener threads, with dnstap and the policy zones' transfers they hand NOTIFYs to. @return 0 or -1. */
static int make_workers(struct daemon *d, const struct conf *c)
{
	d->nworkers = c->server.threads ? c->server.threads : 1;
	d->workers = calloc(d->nworkers, sizeof(*d->workers));
	if (d->workers == NULL)
		return -1;
	if (c->server.dnstap[0] != '\0') {
		/* a queue per thread that logs: the workers, then the EDNS pool's threads */
		d->dnstap = dnstap_new(c->server.dnstap, d->nworkers + (c->edns.threads ? c->edns.threads : 1));
		if (d->dnstap == NULL)
			return -1;
		resolve_edns_set_dnstap(d->edns, d->dnstap, d->nworkers);
		log_info("dnstap to %s (client queries and replies, the EDNS pool's upstream queries)", c->server.dnstap);
	}
	/* before the workers: their listeners take NOTIFYs for it */
	if ((d->rpz_xfr = rpz_xfr_new(&d->snapshots)) == NULL)
		return -1;
	/* DoT, DoH: no listener without a good certificate */
	struct tls_server *dot, *https;
	if (reload_tls(c, d->nlisten_tls > 0, d->nlisten_https > 0, &dot, &https, NULL) != 0)
		return -1;
	if (dot)
		tls_slot_set(&d->tls, dot);
	if (https)
		tls_slot_set(&d->tls_https, https);
	struct worker_env env = { .snapshots = &d->snapshots, .cache = d->cache, .hints = d->hints, .inflight = d->inflight,
	                          .normal = d->normal, .edns = d->edns, .stop_fd = d->stop_fd, .dnstap = d->dnstap,
	                          .rpz_xfr = d->rpz_xfr, .tls = &d->tls, .tls_https = &d->tls_https };
	for (unsigned i = 0; i < d->nworkers; i++) {
		d->workers[i] = worker_new(&env, i, c);
		if (d->workers[i] == NULL)
			return -1;
	}
	return 0;
}

/*
 * cache.snapshot: the cache as the last daemon left it, before any listener
 * answers. With --takeover the daemon serving now is asked to write it
 * first (partdnsctl cache dump over its control socket, before this one
 * takes the socket's path over), so the hand-over loses nothing it had
 * cached; an older daemon that cannot leaves the file of its last write.
 * A file that cannot be loaded is logged: the daemon starts cold.
 */
static void load_cache(struct daemon *d, const struct conf *c, bool takeover)
{
	const char *path = c->cache.snapshot;
	if (path == NULL || path[0] == '\0')
		return;
	if (takeover && c->server.control != NULL && c->server.control[0] != '\0') {
		char req[CONTROL_MAX_REQUEST], msg[1024], *body = NULL;
		int n = snprintf(req, sizeof(req), "cache dump file=%s", path);
		int rc = n > 0 && (size_t)n < sizeof(req) && strpbrk(path, " \t") == NULL
		                 ? control_request(c->server.control, req, 120000, &body, NULL, msg, sizeof(msg))
		                 : -EINVAL;
		free(body);
		if (rc != 0)
			log_warn("--takeover: the running daemon did not write its cache to %s (%s); loading the file as "
			         "it is", path, rc == -EINVAL ? "the path has a space" : msg);
		else
			log_info("--takeover: the running daemon wrote its cache to %s", path);
	}
	struct cache_snap_result r;
	reload_snap_load(d, path, takeover ? "takeover" : "start", &r);
}

/*
 * server.control: the socket with the verbs (ctl_verbs.c), given to the
 * user and the control group. @return 0 or -1.
 */
static int open_control(struct daemon *d, const struct conf *c, const struct privs *privs, bool takeover)
{
	if (c->server.control == NULL || c->server.control[0] == '\0')
		return 0;
	control_set_log(control_log);
	if (takeover)
		unlink(c->server.control); /* the old daemon keeps serving on its unlinked socket until it stops */
	d->probe = probe_new(&d->snapshots, d->cache, d->inflight, d->normal, d->edns);
	d->control = d->probe != NULL ? control_new(c->server.control, d->stop_fd) : NULL;
	if (d->control == NULL || ctl_verbs_register(d) != 0)
		return -1;
	/* the user's (the daemon reads it after the drop), the control group's (root and operators) */
	int e = privs_own(privs, c->server.control, true, 0660);
	if (e != 0) {
		log_err("server.control: cannot give %s to %s: %s", c->server.control, privs->user, strerror(-e));
		return -1;
	}
	return 0;
}

/*
 * server.metrics and server.http, bound now, after the listeners, so a busy
 * address fails the start; served from daemon_run. @return 0 or -1.
 */
static int open_http(struct daemon *d, const struct conf *c, bool takeover)
{
	if (c->server.metrics.len > 0) {
		d->metrics = metrics_http_new(&c->server.metrics, takeover, ctl_verbs_metrics, d);
		if (d->metrics == NULL)
			return -1;
		/* the console's history starts now, the counters at zero: nothing is served before daemon_run */
		if (metrics_http_allow(d->metrics, c->server.metrics_allow, c->server.nmetrics_allow) != 0 ||
		    (d->console = console_new(clock_ns() / 1000000u)) == NULL) {
			log_err("server.metrics: out of memory");
			return -1;
		}
		metrics_http_pages(d->metrics, ctl_verbs_console, d);
	}
	atomic_store(&d->plan_since, d->started);
	if (c->server.http.len > 0) {
		d->http = http_new("server.http", &c->server.http, takeover, c->server.http_allow, c->server.nhttp_allow,
		                   ctl_verbs_publish, d, PUBLISH_PATHS);
		if (d->http == NULL)
			return -1;
	}
	return 0;
}

/*
 * Everything that needs root (port 53, the store's files, the socket) is
 * done and no thread serves yet: become server.user, and check that the
 * files libunbound reads later can be read as that user. @return 0 or -1.
 */
static int become_user(struct daemon *d, const struct privs *privs)
{
	int e = privs_drop(privs);
	if (e != 0) {
		log_err("cannot become user %s: %s", privs->user, strerror(-e));
		return -1;
	}
	if (privs->drop)
		log_info("running as user %s (uid %u, gid %u)", privs->user, (unsigned)privs->uid, (unsigned)privs->gid);
	char why[512];
	if (ubctx_check_files(snapshot_conf_get(d->boot), why, sizeof(why)) != 0) {
		log_err("%s%s", why, privs->drop ? " (as the user partdns runs as)" : "");
		return -1;
	}
	struct passwd *pw = getpwuid(geteuid());
	if (pw != NULL)
		snprintf(d->user, sizeof(d->user), "%s", pw->pw_name);
	else
		snprintf(d->user, sizeof(d->user), "uid %u", (unsigned)geteuid());
	return 0;
}

struct daemon *daemon_new(const char *conf_path, struct conf *c, bool takeover)
{
	/* before the first thread (fleet, dnstap's writer, libcurl's and
	 * libmicrohttpd's): threads inherit the mask */
	sigset_t set;
	daemon_signals(&set);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	struct privs privs;
	struct daemon *d = daemon_alloc(conf_path, c, takeover, &privs);
	if (d == NULL)
		return NULL;
	c = open_store(d, &privs, c);
	/* from the first snapshot on, c is the snapshot's: the steps after it only read it */
	if (c == NULL || first_snapshot(d, c) != 0 || make_pools(d, c) != 0 || make_workers(d, c) != 0) {
		daemon_free(d);
		return NULL;
	}
	load_cache(d, c, takeover); /* before open_control takes a running daemon's socket over */
	if (open_control(d, c, &privs, takeover) != 0 || open_http(d, c, takeover) != 0 || become_user(d, &privs) != 0) {
		daemon_free(d);
		return NULL;
	}
	return d;
}

void daemon_free(struct daemon *d)
{
	if (d == NULL)
		return;
	metrics_http_free(d->metrics); /* first: a scrape reads the workers and pools */
	console_free(d->console);      /* after: only the metrics thread reads it */
	http_free(d->http);
	control_free(d->control);
	/* Pools fail their unfinished jobs into the workers' queues, which
	 * worker_free then drains: pools go first. */
	resolve_normal_free(d->normal);
	resolve_edns_free(d->edns);
	probe_free(d->probe); /* after the pools: they end its last waiter, if any */
	if (d->workers)
		for (unsigned i = 0; i < d->nworkers; i++)
			worker_free(d->workers[i]);
	free(d->workers);
	rpz_xfr_free(d->rpz_xfr); /* after the workers: they hand it NOTIFYs */
	tls_slot_deinit(&d->tls); /* after the workers: their connections are closed */
	tls_slot_deinit(&d->tls_https);
	dnstap_free(d->dnstap); /* after every thread that logs */
	inflight_free(d->inflight);
	cache_free(d->cache);
	chainhint_free(d->hints);
	fleet_stop(d->fleet); /* before the local store it writes */
	store_close(d->shared);
	snapshot_slot_deinit(&d->snapshots);
	snapshot_conf_release(d->boot);
	conf_free(d->next);
	pthread_mutex_destroy(&d->next_lock);
	pthread_mutex_destroy(&d->snap_lock);
	if (d->store)
		store_close(d->store);
	if (d->stop_fd >= 0)
		close(d->stop_fd);
	free(d->conf_path);
	free(d);
}

/*
 * SIGHUP under systemd (Type=notify): systemctl reload returns once the
 * reload is done, and says when it failed (the running state is kept).
 */
static void notify_reload(struct daemon *d)
{
	sd_notify(0, "RELOADING=1\nSTATUS=reloading");
	int rc = reload_run(d, NULL);
	if (rc != 0)
		sd_notify(0, "READY=1\nSTATUS=serving; the last reload failed, see the log");
	else
		sd_notify(0, "READY=1\nSTATUS=serving");
}

static bool stopping(struct daemon *d)
{
	return atomic_load_explicit(&d->stopping, memory_order_relaxed);
}

/* Every thread, and the HTTP servers. @return 0 or -errno. */
static int start_threads(struct daemon *d)
{
	int rc = resolve_normal_start(d->normal);
	if (rc == 0)
		rc = resolve_edns_start(d->edns);
	for (unsigned i = 0; rc == 0 && i < d->nworkers; i++)
		rc = worker_start(d->workers[i]);
	if (rc == 0 && d->control)
		rc = control_start(d->control);
	if (rc == 0 && d->metrics && metrics_http_start(d->metrics) != 0)
		rc = -EIO;
	if (rc == 0 && d->http && http_start(d->http) != 0)
		rc = -EIO;
	/* always: a reload may add a primary later; without one it only looks, once a second */
	if (rc == 0 && rpz_xfr_start(d->rpz_xfr) != 0)
		rc = -ENOMEM;
	return rc;
}

/* Serving: say what, and tell systemd. */
static void announce_ready(struct daemon *d)
{
	struct snapshot *s = snapshot_get(&d->snapshots);
	for (size_t i = 0; i < s->conf->server.nlisten; i++)
		log_info("listening on %s (UDP, TCP)", s->conf->server.listen[i].text);
	for (size_t i = 0; i < d->nlisten_tls; i++)
		log_info("listening on %s (DNS over TLS)", s->conf->server.listen_tls[i].text);
	for (size_t i = 0; i < d->nlisten_https; i++)
		log_info("listening on %s (DNS over HTTPS, %s)", s->conf->server.listen_https[i].text,
		         s->conf->server.https_path);
	if (s->conf->server.nproxy_from > 0)
		log_info("%zu prefix(es) in server.proxy_from: their connections and datagrams start with a PROXY v2 "
		         "header naming the client", s->conf->server.nproxy_from);
	log_info("ready: %u worker(s), %u resolver thread(s), %u EDNS thread(s), %zu partition(s)", d->nworkers,
	         s->conf->resolver.threads, s->conf->edns.threads, ptable_size(s->conf->partitions.table));
	if (d->http)
		log_info("publishing the partition plan on %s (HTTP GET /mapping.csv, /mapping.json, /geofeed.csv)",
		         s->conf->server.http.text);
	if (d->metrics) {
		log_info("serving metrics on %s (HTTP GET / the console, /status.json, /metrics, /health)",
		         s->conf->server.metrics.text);
		metrics_http_set_ready(d->metrics, true); /* /health: listeners, store and pools are up */
	}
	snapshot_release(s);
	sd_notifyf(0, "READY=1\nMAINPID=%lu\nSTATUS=serving", (unsigned long)getpid());
}

/*
 * cache.snapshot every cache.snapshot_interval (both as the running config
 * says), from the main loop's tick: no thread of its own. when "stop":
 * now, whatever the interval. The write walks the cache a batch at a time,
 * so the listeners go on answering meanwhile.
 */
static void save_cache(struct daemon *d, const char *when)
{
	struct snapshot *s = snapshot_get(&d->snapshots);
	const char *conf_path = s->conf->cache.snapshot;
	uint32_t interval = s->conf->cache.snapshot_interval, now = clock_sec();
	char path[4096];
	snprintf(path, sizeof(path), "%s", conf_path ? conf_path : "");
	snapshot_release(s);
	bool stop = strcmp(when, "stop") == 0;
	if (path[0] == '\0' || (!stop && (interval == 0 || now < d->snap_next)))
		return;
	struct cache_snap_result r;
	reload_snap_write(d, path, when, &r);
	d->snap_next = clock_sec() + interval;
}

/*
 * The main thread until a stop: signals and the store are polled here: every
 * 250 ms, and at once when the fleet's mirror wrote a change (SIGUSR2), but
 * then at most every 100 ms, so a burst of changes (an import on another
 * node) does not rebuild the domain set for each one.
 */
static void main_loop(struct daemon *d, const sigset_t *set)
{
	const uint64_t tick_ns = 250000000ull, min_poll_ns = 100000000ull;
	uint64_t next_tick = 0, last_poll = 0;
	unsigned ticks = 0;
	bool due = true;
	struct snapshot *s = snapshot_get(&d->snapshots);
	d->snap_next = clock_sec() + s->conf->cache.snapshot_interval;
	snapshot_release(s);
	while (!stopping(d)) {
		uint64_t now = clock_ns();
		if (now >= next_tick) {
			/* After a burst (a flood of misses, a big reload) glibc keeps the
			 * freed memory; give it back every 10 s so RSS follows the load. */
			cache_reap(d->cache, clock_sec(), 4); /* every shard every 4 s at 250 ms a tick */
			if (++ticks % 40 == 0)
				malloc_trim(0);
			save_cache(d, "interval");
			next_tick = now + tick_ns;
		}
		if (due && now - last_poll >= min_poll_ns) {
			store_watch_poll(d);
			last_poll = now;
			due = false;
		}
		uint64_t wait_ns = due ? last_poll + min_poll_ns - now : next_tick - now;
		if (wait_ns > tick_ns)
			wait_ns = tick_ns;
		struct timespec wait = { .tv_sec = 0, .tv_nsec = (long)wait_ns };
		int sig = sigtimedwait(set, NULL, &wait);
		if (sig == SIGINT || sig == SIGTERM) {
			log_info("signal %d: shutting down", sig);
			/* written while the listeners still answer: a restart loses no query to it */
			save_cache(d, "stop");
			daemon_stop(d);
		} else if (sig == SIGHUP) {
			log_info("SIGHUP: reloading");
			notify_reload(d);
		} else {
			due = true; /* the tick, or a wake-up */
		}
	}
}

/* Stopping: every thread ends (daemon_free frees what they used). */
static void join_threads(struct daemon *d)
{
	sd_notify(0, "STOPPING=1");
	if (d->metrics) /* /health says 503 while shutting down; /metrics still answers */
		metrics_http_set_ready(d->metrics, false);
	control_stop(d->control);
	rpz_xfr_stop(d->rpz_xfr); /* freed after the workers, which may still take a NOTIFY */
	for (unsigned i = 0; i < d->nworkers; i++)
		worker_join(d->workers[i]);
	resolve_normal_join(d->normal);
	resolve_edns_join(d->edns);
}

int daemon_run(struct daemon *d)
{
	sigset_t set;
	daemon_signals(&set); /* blocked since daemon_new: only this thread takes them */
	int rc = start_threads(d);
	if (rc != 0) {
		log_err("cannot start threads: %s", strerror(-rc));
		daemon_stop(d);
	} else {
		announce_ready(d);
	}
	main_loop(d, &set);
	join_threads(d);
	log_info("stopped");
	return rc;
}
