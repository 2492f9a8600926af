/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to conf/: the schema (keys, types, defaults) and its walk. */
#pragma once

#include "conf/state.h"
#include "conf/ytree.h"

/** Fill L->st with every default. @return 0 or -ENOMEM. */
int conf_schema_defaults(struct loader *L);

/**
 * Apply the main document (root may be NULL) to L->st. A partitions include
 * is not read here: L->st.include_pending says the loader should read it.
 */
void conf_schema_apply(struct loader *L, const struct ynode *root);

/** Apply an included partitions file (unmatched and list) at key "partitions". */
void conf_schema_apply_include(struct loader *L, const struct ynode *root);

/** Free everything the schema allocated in st (the conf part too). */
void conf_schema_free(struct conf_state *st);

/** Each key flagged restart, in schema order: its path and the note a reload gives for it (conf_restart_keys). */
void conf_schema_restart_keys(void (*fn)(const char *key, const char *note, void *arg), void *arg);

/** The notes of restart keys whose values differ, each once, in schema order (conf_restart_changes). */
size_t conf_schema_restart_changes(const struct conf_state *old, const struct conf_state *neu,
                                   void (*fn)(const char *note, void *arg), void *arg);
