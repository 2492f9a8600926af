/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. Policy zones kept up to date from their primaries (SOA checks, IXFR and AXFR, TSIG). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct conf;
struct snapshot_slot;
struct rpz_xfr;

/** The transfer state, before its thread runs (listeners may hold it for NOTIFY). @return NULL on ENOMEM. */
struct rpz_xfr *rpz_xfr_new(struct snapshot_slot *slot);

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
int rpz_xfr_start(struct rpz_xfr *x);

/**
 * A NOTIFY (RFC 1996) for zone (wire form, lower case) from family/addr, as
 * a listener got it under config c: when c has a policy zone of that name
 * with a primary, and the sender is the primary's address or within the
 * entry's allow_notify, the zone's next SOA check is brought forward (at
 * most one check per zone every few seconds, whatever the number of
 * NOTIFYs: a forged one costs one signed SOA query). Thread-safe.
 * @return 1 taken, 0 taken already (a check is pending), -1 refused.
 */
int rpz_xfr_notify(struct rpz_xfr *x, const struct conf *c, const uint8_t *zone, size_t zone_len, int family,
                   const uint8_t *addr);

/** Did a transfer write a new zone file since the last call? (The caller republishes.) */
bool rpz_xfr_take_changed(struct rpz_xfr *x);

/** Stop and join the thread (if it runs); NULL is a no-op. The state stays for rpz_xfr_notify until freed. */
void rpz_xfr_stop(struct rpz_xfr *x);

/** Free x (stopped first); after every thread that may call rpz_xfr_notify is gone. NULL is a no-op. */
void rpz_xfr_free(struct rpz_xfr *x);
