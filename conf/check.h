/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to conf/: cross-key checks and the partition table build. */
#pragma once

#include "conf/state.h"
#include "conf/ytree.h"

/** Cross-checks and the partition table, mapping and resolved values. */
void conf_check(struct loader *L, const struct ynode *root);
