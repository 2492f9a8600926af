/* SPDX-License-Identifier: BSD-3-Clause */
/* The store watch: domains and standby partitions as the store changes, zone transfers, plan activation, the fleet. */
#include "resolver/ops/store_watch.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "resolver/base/log.h"
#include "resolver/cache/cache.h"
#include "resolver/cache/inflight.h"
#include "resolver/ops/daemon_state.h"
#include "resolver/ops/fleet.h"
#include "resolver/ops/reload.h"
#include "resolver/view/route.h"
#include "resolver/view/snapshot.h"
#include "resolver/view/standby.h"
#include "resolver/xfr/rpz_xfr.h"
#include "store/store.h"
#include "store/store_etcd.h"

/*
 * From the mirror thread: the local store changed (plan: a plan record).
 * Wake the main thread, which polls the store every 250 ms otherwise, so a
 * change made on another node is served here within milliseconds.
 */
static void fleet_changed(void *arg, bool plan)
{
	struct daemon *d = arg;
	if (plan)
		atomic_store(&d->plan_changed, true);
	pthread_kill(d->main_thread, SIGUSR2);
}

int store_watch_fleet_begin(struct daemon *d, const struct conf *c)
{
	if (store_etcd_open(c, &d->shared) != 0) {
		log_err("store.etcd: %s", store_remote_error());
		return -1;
	}
	return fleet_start(c, d->store, fleet_changed, d, &d->fleet);
}

struct standby_change {
	const struct standby *old, *neu;
};

/* Entries of a partition that changed between its own identity and a standby one. */
static bool standby_switched(const uint8_t *key, size_t klen, void *arg)
{
	const struct standby_change *sc = arg;
	if (klen < ROUTE_KEY_HDR)
		return false;
	unsigned id = route_key_partition(key);
	return id != PARTITION_COMMON && !standby_same(sc->old, id, sc->neu, id);
}

/* A store change (partdnsctl domain add/del, partition failover/failback): swap in the new sets. */
static void poll_store(struct daemon *d)
{
	uint64_t v;
	if (store_version(d->store, &v) != 0)
		return;
	struct snapshot *cur = snapshot_get(&d->snapshots);
	bool changed = v != cur->store_version;
	snapshot_release(cur);
	if (!changed)
		return;
	pthread_mutex_lock(&d->reload_lock);
	struct domains *dom;
	uint64_t version;
	if (reload_read_domains(d, &dom, &version) == 0) {
		size_t n = domains_count(dom);
		cur = snapshot_get(&d->snapshots);
		struct standby *sb = reload_read_standby(d, cur->conf);
		/* A partition switched to or from its standby: its flagged answers
		 * were fetched with the other identity. They go before the switch,
		 * and no partition answer is stored during it (as for a reload);
		 * jobs of the old identity finishing later see that it changed
		 * (inflight.c) and store nothing. */
		struct standby_change sc = { .old = cur->standby, .neu = sb };
		inflight_plan_switch(d->inflight, true);
		size_t flushed = cache_flush(d->cache, standby_switched, &sc);
		size_t nsb = standby_count(sb);
		int rc = snapshot_publish(&d->snapshots, NULL, dom, sb, version);
		inflight_plan_switch(d->inflight, false);
		snapshot_release(cur);
		if (rc == 0)
			log_info("store changed (version %llu): %zu EDNS domain(s), %zu partition(s) on standby; %zu "
			         "cache entries of switched partitions dropped",
			         (unsigned long long)version, n, nsb, flushed);
	}
	pthread_mutex_unlock(&d->reload_lock);
	reload_read_next_plan(d);
}

/* A transfer wrote a policy zone's file: publish the running config with its zones re-read. */
static void poll_rpz(struct daemon *d)
{
	if (!rpz_xfr_take_changed(d->rpz_xfr))
		return;
	pthread_mutex_lock(&d->reload_lock);
	struct domains *dom;
	uint64_t version;
	if (reload_read_domains(d, &dom, &version) == 0) {
		struct snapshot *cur = snapshot_get(&d->snapshots);
		struct standby *sb = reload_read_standby(d, cur->conf);
		snapshot_release(cur);
		if (snapshot_publish_rpz(&d->snapshots, dom, sb, version) != 0)
			log_err("cannot take the transferred policy zone: out of memory (the running version stays)");
	}
	pthread_mutex_unlock(&d->reload_lock);
}

/* A new activated plan from the fleet runs (a reload); the registration says which serial runs. */
static void poll_fleet(struct daemon *d)
{
	if (d->fleet == NULL)
		return;
	if (atomic_exchange(&d->plan_changed, false)) {
		log_info("fleet: the shared plan changed: reloading");
		if (reload_run(d, NULL) != 0)
			log_err("fleet: the shared plan could not go live; the running plan stays (see above)");
	}
	struct snapshot *s = snapshot_get(&d->snapshots);
	unsigned serial = s->conf->partitions.serial;
	snapshot_release(s);
	if (serial != d->fleet_serial) {
		fleet_set_serial(d->fleet, serial);
		d->fleet_serial = serial;
	}
}

/*
 * In a fleet the staged plan goes live in the shared store: one node's
 * transaction moves it (the others' find it gone), and every node's mirror
 * then brings the activated plan and reloads (fleet_changed).
 */
static void activate_shared(struct daemon *d, unsigned serial)
{
	if (time(NULL) < d->activate_retry)
		return;
	int rc = store_plan_activate(d->shared, (int64_t)time(NULL));
	char msg[512];
	if (rc == 0) {
		log_info("activated the staged plan %u in the shared store; every node takes it from there", serial);
	} else if (rc == -ENOENT) {
		log_info("the staged plan %u was activated by another node", serial);
	} else {
		/* etcd busy or away: again in 2 s (another node may do it first) */
		log_err("cannot activate the staged plan %u in the shared store: %s (again in 2 s)", serial,
		        store_message(rc, NULL, msg, sizeof(msg)));
		d->activate_retry = time(NULL) + 2;
		return;
	}
	pthread_mutex_lock(&d->next_lock);
	d->next_at = 0; /* not again every tick: the mirror brings the outcome */
	pthread_mutex_unlock(&d->next_lock);
}

/*
 * The staged plan's time has come (partdnsctl plan activate): the store
 * makes it the active plan in one transaction, and a reload runs it
 * (reload_adopt_plan), with everything a reload checks and keeps.
 */
static void activate_due(struct daemon *d)
{
	pthread_mutex_lock(&d->next_lock);
	bool due = d->next != NULL && d->next_at != 0 && time(NULL) >= d->next_at;
	unsigned serial = d->next ? d->next->partitions.serial : 0;
	pthread_mutex_unlock(&d->next_lock);
	if (!due)
		return;
	if (d->shared != NULL) {
		activate_shared(d, serial);
		return;
	}
	int rc = store_plan_activate(d->store, (int64_t)time(NULL));
	if (rc != 0) {
		log_err("cannot activate the staged plan %u: %s", serial, store_strerror(rc));
		pthread_mutex_lock(&d->next_lock);
		d->next_at = 0; /* not again every tick; a new plan activate asks again */
		pthread_mutex_unlock(&d->next_lock);
		return;
	}
	log_info("activating the staged plan %u", serial);
	if (reload_run(d, NULL) != 0)
		log_err("the staged plan %u could not go live; the running plan stays (see above)", serial);
	reload_read_next_plan(d); /* none staged now */
}

void store_watch_poll(struct daemon *d)
{
	poll_store(d);
	poll_rpz(d);
	activate_due(d);
	poll_fleet(d);
}
