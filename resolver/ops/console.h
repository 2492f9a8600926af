/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * This file is private to resolver/. The operator's console on
 * server.metrics: GET / (one self-contained page, console_page) refreshed
 * from GET /status.json (console_status): every city with its mapped
 * address, standby, queries per second, hit ratio and what each of its top
 * flagged names is steered to now; the last hour of QPS per city; the
 * unmatched networks; plan, store and fleet.
 *
 * Rates come from counter deltas the console keeps itself: a ring of one
 * sample per CONSOLE_STEP_S of every city's counters, taken lazily when
 * /status.json is asked for (no timer ticks while nobody looks), so an
 * hour nobody watched is one long interval at its average rate, never
 * invented points. Only the metrics server's thread calls these (one
 * request at a time): no lock.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "mapping/mapping.h"
#include "resolver/ops/stats.h"
#include "resolver/pool/steering.h"
#include "resolver/pool/topk.h"

/* One sample per this many seconds at most; an hour of them is kept. */
#define CONSOLE_STEP_S 10u
#define CONSOLE_HISTORY_S 3600u
/* Flagged names shown per city, busiest first. */
#define CONSOLE_TOP_NAMES 5u
/* Unmatched networks shown. */
#define CONSOLE_UNMATCHED 20u

struct console;

/**
 * A console whose history starts at start_ms (CLOCK_MONOTONIC, ms) with
 * every counter at zero: the daemon's start, when the counters are zero.
 * @return the console or NULL.
 */
struct console *console_new(uint64_t start_ms);
void console_free(struct console *c);

/* What /status.json shows, gathered by the caller (ctl_verbs.c) for one request. */
struct console_view {
	const struct stats_view *stats;    /* partitions, per-partition counters, response latency, plan serial, fleet */
	const struct mapping *mapping;     /* mapped addresses and labels by partition id */
	const char *const *standby_to;     /* by partition id (0..size): the standby target, NULL = its own identity */
	const struct steering_row *rows;   /* partdnsctl steering's rows, any order */
	size_t nrows;
	uint64_t rows_dropped;             /* steering rows not kept (table full) */
	const struct topk_item *unmatched; /* merged, busiest first */
	size_t nunmatched;
	uint64_t plan_digest;
	const char *plan_source;           /* "config" or "store" */
	uint64_t store_version;
	const char *version;
	uint64_t now_ms;                   /* CLOCK_MONOTONIC, ms */
	time_t now;                        /* wall clock */
};

/**
 * GET /status.json: take a sample when the last is CONSOLE_STEP_S old (a
 * new plan, by digest or size, starts the history over) and write the
 * JSON object. @return 0 or -ENOMEM.
 */
int console_status(struct console *c, const struct console_view *v, FILE *out);

/** GET /: the page (HTML, its CSS and script inline; nothing fetched but /status.json). */
void console_page(FILE *out);

/* The Content-Security-Policy the page is served with: nothing from anywhere but itself. */
extern const char console_csp[];
