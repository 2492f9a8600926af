/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to conf/: the loader's errors and warnings, with the key path. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "conf/state.h"
#include "conf/ytree.h"

/**
 * Report at n (NULL: no position) with the current key path; the value part
 * is n's text when with_value and n is a scalar.
 */
void conf_error(struct loader *L, const struct ynode *n, bool with_value, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void conf_warning(struct loader *L, const struct ynode *n, bool with_value, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/** Key path: push ".name" (or "name" at the top) / "[i]"; pop restores the length returned. */
size_t conf_key_push(struct loader *L, const char *name);
size_t conf_key_index(struct loader *L, size_t i);
void conf_key_pop(struct loader *L, size_t len);
/** Replace the key path with a formatted one. */
void conf_key_set(struct loader *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
