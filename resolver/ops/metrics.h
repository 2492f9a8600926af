/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. The Prometheus text exposition of the figures partdnsctl stats reads. */
#pragma once

#include <stddef.h>
#include <stdio.h>

#include "resolver/ops/stats.h"

/**
 * Write v in the Prometheus text exposition format (version 0.0.4): every
 * family with # HELP and # TYPE, counters named *_total, per-partition
 * families labelled partition="NAME" (names from v->partitions).
 */
void metrics_write(FILE *out, const struct stats_view *v);

/**
 * Escape a label value as the format asks: backslash, double quote and line
 * feed become \\, \" and \n. Writes at most cap - 1 characters and a NUL.
 * @return the length the escaped text needs (without the NUL); >= cap: cut.
 */
size_t metrics_escape_label(const char *in, char *out, size_t cap);

/**
 * Write one histogram's lines: NAME_bucket{LABELS,le="..."} cumulative, one
 * per bound and +Inf, then NAME_sum (seconds) and NAME_count. labels is
 * "" or 'key="value"' pairs without braces.
 */
void metrics_write_histogram(FILE *out, const char *name, const char *labels, const struct stats_hist *h);
