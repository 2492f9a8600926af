/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * This file is private to the daemon's files of resolver/ops/ (daemon.c,
 * ctl_verbs.c, reload.c, store_watch.c): the daemon's state; types only.
 */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "resolver/base/tls.h"
#include "resolver/view/snapshot.h"

struct cache;
struct chainhint;
struct console;
struct control;
struct dnstap;
struct fleet;
struct http_server;
struct inflight;
struct metrics_http;
struct probe;
struct resolve_edns;
struct resolve_normal;
struct rpz_xfr;
struct store;
struct worker;

/* Made by daemon_new (daemon.c), freed by daemon_free; the fields' locks are in their comments. */
struct daemon {
	char *conf_path;
	atomic_bool stopping;
	int stop_fd;                 /* eventfd: readable once stopping; every thread polls it */
	struct snapshot_slot snapshots;
	struct snapshot_conf *boot;  /* the config started with: what restart-only keys still are */
	pthread_mutex_t reload_lock; /* one reload at a time (SIGHUP, control, store poll) */
	struct store *store;
	/* store.etcd: the local store mirrors the shared one (fleet.c); shared
	 * is the shared store itself, for activating a staged plan fleet-wide */
	struct fleet *fleet;
	struct store *shared;
	atomic_bool plan_changed;    /* the mirror brought a new activated plan: reload */
	pthread_t main_thread;       /* daemon_new's and daemon_run's: fleet_changed wakes it */
	unsigned fleet_serial;       /* the plan serial last told to the fleet */
	time_t activate_retry;       /* a fleet activation that failed is tried again from then */
	struct cache *cache;
	struct chainhint *hints; /* chain hints for the workers (query.c) */
	struct inflight *inflight;
	struct resolve_normal *normal;
	struct resolve_edns *edns;
	unsigned nworkers;
	struct worker **workers;
	struct dnstap *dnstap;       /* server.dnstap; NULL when off */
	size_t nlisten_tls;          /* server.listen_tls as started (restart-only) */
	size_t nlisten_https;        /* server.listen_https as started (restart-only) */
	struct tls_slot tls;         /* DoT's context (ALPN dot): replaced by each reload */
	struct tls_slot tls_https;   /* DoH's (ALPN h2, http/1.1), the same certificate */
	struct probe *probe;         /* partdnsctl query */
	struct control *control;
	struct metrics_http *metrics; /* server.metrics; NULL when off */
	struct console *console;      /* its console's QPS history (server.metrics' thread only); NULL when off */
	struct rpz_xfr *rpz_xfr;      /* policy zones from primaries (rpz[].primary), their NOTIFYs */
	struct http_server *http;    /* server.http: the plan for CDNs; NULL when off */
	_Atomic time_t plan_since;   /* when the running partition plan went live (Last-Modified) */
	bool plan_from_store;        /* running an activated plan the config does not hold yet (reload_lock) */
	/* the staged plan (partdnsctl plan stage), for /next/ and its activation; next_lock */
	pthread_mutex_t next_lock;
	struct conf *next;           /* the config with the staged plan in place of its include; NULL = none */
	time_t next_staged, next_at; /* when staged; when it goes live (0 = not asked yet) */
	time_t started;
	char user[64];               /* who it runs as (server.user, or whoever started it) */
	/* cache snapshots (reload_snap_*): one at a time (snap_lock); their figures are written
	 * under it and read without it, so a report does not wait for a write */
	pthread_mutex_t snap_lock;
	_Atomic uint64_t snap_saved, snap_loaded, snap_refused; /* entries written, loaded, not loaded from a file */
	_Atomic uint64_t snap_files_refused;                   /* files of which nothing was loaded */
	_Atomic time_t snap_last;                              /* the last write that succeeded; 0 = none yet */
	_Atomic uint64_t snap_last_entries, snap_last_bytes;
	uint32_t snap_next;                                    /* clock_sec() of the next periodic write (main thread) */
	/* reloads (SIGHUP, partdnsctl reload), under reload_lock */
	uint64_t reloads, reload_failures;
	time_t last_reload;
	bool last_reload_ok;
};
