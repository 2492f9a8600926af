/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. Policy zones kept up to date from their primaries (SOA checks, IXFR and AXFR, TSIG). */
#pragma once

#include <stdbool.h>

struct snapshot_slot;
struct rpz_xfr;

/**
 * Start the transfer thread: for every rpz entry of the current snapshot's
 * config with a primary, every refresh seconds (the entry's, else its
 * SOA's), ask the primary for the zone's SOA (TSIG-signed when a key is
 * configured, the reply's signature verified) and, when its serial differs
 * from the copy's (or there is no copy), transfer the zone (IXFR from the
 * copy's serial, else AXFR; each reply message's TSIG verified) into
 * the entry's file (written aside and renamed: a failed transfer leaves the
 * last good copy). @return NULL on ENOMEM or when the thread cannot start.
 */
struct rpz_xfr *rpz_xfr_start(struct snapshot_slot *slot);

/** Did a transfer write a new zone file since the last call? (The caller republishes.) */
bool rpz_xfr_take_changed(struct rpz_xfr *x);

/** Stop and join the thread; NULL is a no-op. */
void rpz_xfr_stop(struct rpz_xfr *x);
