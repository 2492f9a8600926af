/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. What queries read: config + EDNS-domain set, swapped whole on reload or store change. */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "conf/conf.h"
#include "resolver/view/domains.h"

struct snapshot_conf; /* a config shared by the snapshots made from it */
struct pset;
struct local;
struct rpz;

/* What snapshot->acl answers for a client address (pset_lookup): the lists covering it. */
enum {
	SNAPSHOT_ACL_ALLOW = 1u << 0,       /* server.allow */
	SNAPSHOT_ACL_EXEMPT = 1u << 1,      /* server.client_exempt */
	SNAPSHOT_ACL_TRUSTED_ECS = 1u << 2, /* edns.trusted_ecs */
	SNAPSHOT_ACL_PROXY = 1u << 3,       /* server.proxy_from */
};

/* Immutable once published; lives while someone holds a reference. */
struct snapshot {
	atomic_int refs;
	uint64_t generation;          /* 1, 2, ... in publication order */
	struct snapshot_conf *shared;
	const struct conf *conf;      /* shared->conf */
	const struct pset *acl;       /* shared: conf's address lists in one LPM (SNAPSHOT_ACL_*) */
	const struct local *local;    /* shared: conf's local zones (resolver/view/local.h); NULL = none */
	const struct rpz *rpz;        /* the policy zones (resolver/view/rpz.h); NULL = none */
	struct rpz *rpz_owned;        /* the same, a reference this snapshot holds */
	struct domains *domains;
	struct standby *standby;      /* partitions failed over (resolver/view/standby.h); NULL = none */
	uint64_t store_version;       /* the store version domains was read at */
};

/* The current snapshot, as a slot threads read from. */
struct snapshot_slot {
	pthread_mutex_t lock;
	struct snapshot *cur;         /* NULL until the first publish */
	_Atomic uint64_t generation;  /* cur->generation, readable without the lock */
};

void snapshot_slot_init(struct snapshot_slot *slot);
/** Drop the slot's reference to the current snapshot. */
void snapshot_slot_deinit(struct snapshot_slot *slot);

/**
 * Publish a new current snapshot.
 * @param conf     the new config (owned from now on, also on failure), or
 *                 NULL to keep the current snapshot's config
 * @param domains  the new EDNS-domain set (owned, also on failure)
 * @param standby  the partitions failed over, built for the config the
 *                 snapshot will have (owned, also on failure); NULL = none
 * @return 0 or -ENOMEM (the current snapshot stays).
 */
int snapshot_publish(struct snapshot_slot *slot, struct conf *conf, struct domains *domains,
                     struct standby *standby, uint64_t version);

/**
 * Publish the running config again with its policy zones re-read (a zone
 * whose file changed, e.g. after a transfer, is loaded anew; the others are
 * kept). domains and standby as for snapshot_publish.
 */
int snapshot_publish_rpz(struct snapshot_slot *slot, struct domains *domains, struct standby *standby,
                         uint64_t version);

/** A reference to the current snapshot; release it with snapshot_release. */
struct snapshot *snapshot_get(struct snapshot_slot *slot);

/** The current generation, without taking a reference (to notice changes cheaply). */
static inline uint64_t snapshot_generation(struct snapshot_slot *slot)
{
	return atomic_load_explicit(&slot->generation, memory_order_acquire);
}

/** Take another reference to s. */
void snapshot_ref(struct snapshot *s);

/** Drop a reference; the last one frees s (and its config when no other snapshot shares it). NULL is a no-op. */
void snapshot_release(struct snapshot *s);

/**
 * Keep s's config (not its domain set) alive on its own: the daemon holds
 * the config it started with, which restart-only keys are compared against.
 * Release with snapshot_conf_release (NULL is a no-op).
 */
struct snapshot_conf *snapshot_conf_hold(struct snapshot *s);
const struct conf *snapshot_conf_get(const struct snapshot_conf *sc);
void snapshot_conf_release(struct snapshot_conf *sc);
