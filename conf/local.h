/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to conf/: local zones' records parsed and checked at load. */
#pragma once

#include "conf/conf.h"
#include "conf/state.h"
#include "conf/ytree.h"

/**
 * Parse and check every zone of list (the schema filled names, types, data
 * and files): records into wire form (struct conf_local_zone), errors
 * reported under key ("local_zones", "partitions.list[3].local_zones") at
 * the nodes of lnode, the list's YAML node.
 */
void conf_local_check(struct loader *L, const char *key, struct conf_local_list *list, const struct ynode *lnode);

/** Free what one zone holds (the schema's fields and the parsed records). */
void conf_local_free(struct conf_local_zone *z);
