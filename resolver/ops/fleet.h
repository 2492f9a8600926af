/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A node of a fleet (store.etcd): the local store kept as a mirror of the
 * shared one, and the node's registration under a lease.
 *
 * The mirror thread watches the shared store's prefix and applies every
 * change to the local LMDB store with the revision it brings (one LMDB
 * transaction per watch message); the daemon's store poll picks the change
 * up as it does a local partdnsctl write. At start, and whenever the
 * cluster is new or the revision reached was compacted away, it copies the
 * whole shared store instead. The local store therefore always holds a
 * complete state of the shared store at some revision: a node started
 * while etcd is unreachable serves from it, and catches up from that
 * revision when etcd returns.
 *
 * The registration thread keeps PREFIX nodes/NAME (JSON: applied revision,
 * plan serial, version, whether the watch is live) under a lease of
 * store.etcd.lease_ttl seconds, rewritten whenever the revision or serial
 * changes; a node that dies disappears when its lease runs out.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "conf/conf.h"
#include "store/store.h"

struct fleet;

/* What the fleet part of a node knows (for status and metrics). */
struct fleet_status {
	bool connected;       /* the watch is live */
	int64_t revision;     /* shared-store revision applied to the local store */
	uint64_t resyncs;     /* full copies made */
	uint64_t bad_records; /* records that did not decode, left out */
	uint64_t applied;     /* watch messages applied */
	char member[128];     /* the etcd member last answering */
	char name[128];       /* this node's name in the fleet */
};

/**
 * Start mirroring c's store.etcd into local (the daemon's LMDB store) and
 * registering this node. changed is called (from the mirror thread) after
 * each change written to the local store, plan true when a staged or
 * activated plan changed.
 * @return 0 (*out), or -1 with a message logged (etcd being unreachable is
 *         no error: the threads keep trying).
 */
int fleet_start(const struct conf *c, struct store *local, void (*changed)(void *arg, bool plan), void *arg,
                struct fleet **out);

/** The plan serial this node runs (after start and every reload). */
void fleet_set_serial(struct fleet *f, unsigned serial);

void fleet_status(struct fleet *f, struct fleet_status *out);

/** Stop both threads, revoke the lease (the node leaves the fleet's list at once). */
void fleet_stop(struct fleet *f);
