/* SPDX-License-Identifier: BSD-3-Clause */
/* Snapshots: reference-counted config + EDNS-domain set, published through a slot. */
#include "resolver/view/snapshot.h"

#include <errno.h>
#include <stdlib.h>

#include "partition/pset.h"
#include "resolver/view/local.h"
#include "resolver/view/rpz.h"
#include "resolver/view/standby.h"

struct snapshot_conf {
	atomic_int refs;
	struct conf *conf;
	struct pset *acl; /* built from conf once, shared like it */
	struct local *local; /* conf's local zones, indexed once; NULL = none */
};

static void shared_release(struct snapshot_conf *sc)
{
	if (sc && atomic_fetch_sub(&sc->refs, 1) == 1) {
		local_free(sc->local);
		conf_free(sc->conf);
		pset_free(sc->acl);
		free(sc);
	}
}

struct snapshot_conf *snapshot_conf_hold(struct snapshot *s)
{
	atomic_fetch_add(&s->shared->refs, 1);
	return s->shared;
}

const struct conf *snapshot_conf_get(const struct snapshot_conf *sc)
{
	return sc->conf;
}

void snapshot_conf_release(struct snapshot_conf *sc)
{
	shared_release(sc);
}

/* One list of conf into the set, as list number idx (bit 1 << idx of a lookup). A prefix no lookup
 * could match (bad family or length) is left out: a scan of the list would never match it either. */
static int acl_add(struct pset *s, const struct prefix *list, size_t n, unsigned idx)
{
	for (size_t i = 0; i < n; i++) {
		int rc = pset_add(s, &list[i], idx);
		if (rc == -ENOMEM)
			return rc;
	}
	return 0;
}

/*
 * server.allow, server.client_exempt, edns.trusted_ecs and server.proxy_from as one prefix
 * set: a query's ACL questions cost one longest-prefix match, whatever the
 * lists' lengths. @return the set or NULL (ENOMEM).
 */
static struct pset *acl_build(const struct conf *c)
{
	struct pset *s = pset_new();
	_Static_assert(SNAPSHOT_ACL_ALLOW == 1u << 0 && SNAPSHOT_ACL_EXEMPT == 1u << 1 &&
	               SNAPSHOT_ACL_TRUSTED_ECS == 1u << 2 && SNAPSHOT_ACL_PROXY == 1u << 3, "list numbers below");
	if (s == NULL || acl_add(s, c->server.allow, c->server.nallow, 0) != 0 ||
	    acl_add(s, c->server.client_exempt, c->server.nclient_exempt, 1) != 0 ||
	    acl_add(s, c->edns.trusted_ecs, c->edns.ntrusted_ecs, 2) != 0 ||
	    acl_add(s, c->server.proxy_from, c->server.nproxy_from, 3) != 0 ||
	    pset_build(s) != 0) {
		pset_free(s);
		return NULL;
	}
	return s;
}

void snapshot_ref(struct snapshot *s)
{
	atomic_fetch_add(&s->refs, 1);
}

void snapshot_release(struct snapshot *s)
{
	if (s && atomic_fetch_sub(&s->refs, 1) == 1) {
		shared_release(s->shared);
		rpz_unref(s->rpz_owned);
		domains_free(s->domains);
		standby_free(s->standby);
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

static int publish(struct snapshot_slot *slot, struct conf *conf, struct domains *domains, struct standby *standby,
                   uint64_t version, bool reread_rpz)
{
	struct snapshot *s = calloc(1, sizeof(*s));
	struct snapshot_conf *sc = conf ? calloc(1, sizeof(*sc)) : NULL;
	struct pset *acl = conf ? acl_build(conf) : NULL;
	bool local_oom = false, rpz_oom = false;
	struct local *local = conf ? local_build(conf, &local_oom) : NULL;
	struct rpz *rpz = NULL;
	struct snapshot *cur = snapshot_get(slot);
	if (conf != NULL || reread_rpz) {
		/* policy zones whose files did not change (or cannot be read) keep the running version */
		rpz = rpz_build(conf ? conf : cur->conf, cur ? cur->rpz_owned : NULL, &rpz_oom);
	} else if (cur != NULL) {
		rpz = rpz_ref(cur->rpz_owned);
	}
	snapshot_release(cur);
	if (s == NULL || local_oom || rpz_oom || (conf && (sc == NULL || acl == NULL))) {
		free(s);
		free(sc);
		pset_free(acl);
		local_free(local);
		rpz_unref(rpz);
		conf_free(conf);
		domains_free(domains);
		standby_free(standby);
		return -ENOMEM;
	}
	if (sc) {
		atomic_init(&sc->refs, 1);
		sc->conf = conf;
		sc->acl = acl;
		sc->local = local;
	}
	atomic_init(&s->refs, 1);
	s->domains = domains;
	s->standby = standby;
	s->store_version = version;
	pthread_mutex_lock(&slot->lock);
	struct snapshot *old = slot->cur;
	if (sc == NULL) { /* keep the running config */
		sc = old->shared;
		atomic_fetch_add(&sc->refs, 1);
	}
	s->shared = sc;
	s->conf = sc->conf;
	s->acl = sc->acl;
	s->local = sc->local;
	s->rpz_owned = rpz;
	s->rpz = rpz;
	s->generation = (old ? old->generation : 0) + 1;
	slot->cur = s;
	atomic_store_explicit(&slot->generation, s->generation, memory_order_release);
	pthread_mutex_unlock(&slot->lock);
	snapshot_release(old);
	return 0;
}

int snapshot_publish(struct snapshot_slot *slot, struct conf *conf, struct domains *domains,
                     struct standby *standby, uint64_t version)
{
	return publish(slot, conf, domains, standby, version, false);
}

int snapshot_publish_rpz(struct snapshot_slot *slot, struct domains *domains, struct standby *standby,
                         uint64_t version)
{
	return publish(slot, NULL, domains, standby, version, true);
}
