/* SPDX-License-Identifier: BSD-3-Clause */
/* Snapshots: reference-counted config + EDNS-domain set, published through a slot. */
#include "resolver/snapshot.h"

#include <errno.h>
#include <stdlib.h>

struct snapshot_conf {
	atomic_int refs;
	struct conf *conf;
};

static void shared_release(struct snapshot_conf *sc)
{
	if (sc && atomic_fetch_sub(&sc->refs, 1) == 1) {
		conf_free(sc->conf);
		free(sc);
	}
}

void snapshot_ref(struct snapshot *s)
{
	atomic_fetch_add(&s->refs, 1);
}

void snapshot_release(struct snapshot *s)
{
	if (s && atomic_fetch_sub(&s->refs, 1) == 1) {
		shared_release(s->shared);
		domains_free(s->domains);
		free(s);
	}
}

void snapshot_slot_init(struct snapshot_slot *slot)
{
	pthread_mutex_init(&slot->lock, NULL);
	slot->cur = NULL;
	atomic_init(&slot->generation, 0);
}

void snapshot_slot_deinit(struct snapshot_slot *slot)
{
	snapshot_release(slot->cur);
	slot->cur = NULL;
	pthread_mutex_destroy(&slot->lock);
}

struct snapshot *snapshot_get(struct snapshot_slot *slot)
{
	pthread_mutex_lock(&slot->lock);
	struct snapshot *s = slot->cur;
	if (s)
		snapshot_ref(s);
	pthread_mutex_unlock(&slot->lock);
	return s;
}

int snapshot_publish(struct snapshot_slot *slot, struct conf *conf, struct domains *domains, uint64_t version)
{
	struct snapshot *s = calloc(1, sizeof(*s));
	struct snapshot_conf *sc = conf ? calloc(1, sizeof(*sc)) : NULL;
	if (s == NULL || (conf && sc == NULL)) {
		free(s);
		free(sc);
		conf_free(conf);
		domains_free(domains);
		return -ENOMEM;
	}
	if (sc) {
		atomic_init(&sc->refs, 1);
		sc->conf = conf;
	}
	atomic_init(&s->refs, 1);
	s->domains = domains;
	s->store_version = version;
	pthread_mutex_lock(&slot->lock);
	struct snapshot *old = slot->cur;
	if (sc == NULL) { /* keep the running config */
		sc = old->shared;
		atomic_fetch_add(&sc->refs, 1);
	}
	s->shared = sc;
	s->conf = sc->conf;
	s->generation = (old ? old->generation : 0) + 1;
	slot->cur = s;
	atomic_store_explicit(&slot->generation, s->generation, memory_order_release);
	pthread_mutex_unlock(&slot->lock);
	snapshot_release(old);
	return 0;
}
