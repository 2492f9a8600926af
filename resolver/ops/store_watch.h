/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * This file is private to resolver/. The daemon's watch of what changes
 * outside it: the store (flagged domains, partitions failed over, staged
 * and activated plans), a policy zone a transfer rewrote, a staged plan
 * whose time has come, and the fleet's shared store (store.etcd).
 */
#pragma once

#include "conf/conf.h"

struct daemon;

/**
 * store.etcd: mirror the shared store into the local one and register this
 * node (fleet.c). Started before the first snapshot is read, so a node whose
 * local copy is empty (a new node) copies the shared store first; a node
 * that cannot reach etcd serves from what it has. Each change the mirror
 * writes wakes the main thread (SIGUSR2) for store_watch_poll.
 * @return 0, or -1 (logged).
 */
int store_watch_fleet_begin(struct daemon *d, const struct conf *c);

/**
 * One look at everything that changes outside the daemon, from the main
 * thread: a new store version publishes the new domain set and standby
 * partitions with the running config; a transferred policy zone is taken; a
 * staged plan due is activated; a new activated plan from the fleet is
 * reloaded, and the fleet told the serial that runs.
 */
void store_watch_poll(struct daemon *d);
