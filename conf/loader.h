/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to conf/: the schema walk, include loading and the cross-checks. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf/state.h"
#include "conf/ytree.h"

/** Fill L->st with every default. @return 0 or -ENOMEM. */
int conf_schema_defaults(struct loader *L);

/** Apply the main document (root may be NULL) to L->st; includes are loaded from here. */
void conf_schema_apply(struct loader *L, const struct ynode *root);

/** Apply an included partitions file (unmatched and list) at key "partitions". */
void conf_schema_apply_include(struct loader *L, const struct ynode *root);

/** Free everything the schema allocated in L->st (the conf part too). */
void conf_schema_free(struct conf_state *st);

/** Load the partitions include file named by L->st.include (relative to L->dir). */
void conf_include_load(struct loader *L);

/** Cross-checks and the partition table, mapping and resolved values. */
void conf_check(struct loader *L, const struct ynode *root);
