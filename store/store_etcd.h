/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shared store of a fleet in etcd (store.etcd): the store's calls
 * (store/store.h) over etcd, and the key layout every node and partdnsctl
 * agree on. Under the prefix P:
 *   P domains/NAME      a flagged domain (store_record_encode)
 *   P standby/PARTITION a partition failed over (store_standby_encode)
 *   P plan/next, P plan/active   staged and activated plans (store_plan_encode)
 *   P changed           written by every change, so its mod_revision is the
 *                       revision of the shared data (what nodes must reach)
 *   P nodes/NAME        each node's registration, under its lease (JSON)
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "conf/conf.h"
#include "store/store.h"
#include "etcd/etcd.h"

#define STORE_ETCD_CHANGED "changed"
#define STORE_ETCD_NODES "nodes/"

/** A client for c's store.etcd (the password read from its file). @return NULL with store_remote_error set. */
struct etcd *store_etcd_client(const struct conf *c);

/** Open c's shared store: the calls of store/store.h go to etcd. @return 0, STORE_E_REMOTE, -ENOMEM. */
int store_etcd_open(const struct conf *c, struct store **out);

/** The key of a record: prefix + "domains/" NAME etc. @return buf, or NULL when it does not fit. */
const char *store_etcd_key(const char *prefix, enum store_kind kind, const char *name, char *buf, size_t size);

/** Which record key is: its kind and name (a pointer into key). @return false for any other key. */
bool store_etcd_parse_key(const char *prefix, const char *key, enum store_kind *kind, const char **name);

/**
 * Every key in [from, end), read in pages all at one revision (0: now; the
 * revision read at is put in *revision), in key order. A kv that cannot be
 * handed over (etcd_kv.bad: a key with a NUL, a value too large) is passed
 * over in silence. @return 0, fn's non-zero value, or an ETCD_E_*.
 */
int store_etcd_scan(struct etcd *e, const char *from, const char *end, int64_t *revision, uint64_t *cluster,
                    int (*fn)(const struct etcd_kv *kv, void *arg), void *arg);

/* Bytes of one page of a scan (see store_etcd_scan_all). */
#define STORE_ETCD_PAGE_BYTES ((size_t)4 << 20)
/* Largest single record a scan reads (its key, value, and the answer around them). */
#define STORE_ETCD_RECORD_BYTES ((size_t)64 << 20)

/**
 * As store_etcd_scan, and a kv that cannot be handed over goes to skipped
 * (optional) with why: one whose kv.bad is set, and one too large to read
 * at all (more than STORE_ETCD_RECORD_BYTES as etcd sends it), named by its
 * key. Neither ends the scan. Pages are bounded in bytes as well as keys.
 */
int store_etcd_scan_all(struct etcd *e, const char *from, const char *end, int64_t *revision, uint64_t *cluster,
                        int (*fn)(const struct etcd_kv *kv, void *arg),
                        void (*skipped)(const struct etcd_kv *kv, const char *why, void *arg), void *arg);
