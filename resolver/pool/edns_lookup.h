/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/pool/. The EDNS pool's libunbound lookups: the zone cut, nameserver addresses. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <unbound.h>

#include "resolver/pool/edns_pool.h"

/**
 * Look name/type up in r's thread's libunbound context; cb gets the result
 * (arg is r) and must clear r->ub_busy first. On error r fails (freed).
 */
void edns_lookup_ub(struct eres *r, const uint8_t *name, size_t len, uint16_t type, ub_callback_type cb);

/**
 * Find the cut of r's hop name, up to r->cut.bound (edns_zcache_set_bound),
 * then the addresses of its servers; cache it and ask the zone's servers
 * (edns_exchange_query). For a --subtree rule's name, its NS first; else,
 * or when it has none, the SOA of the name and of each parent.
 */
void edns_lookup_cut(struct eres *r);

/** A referral to cut, read from resp: ask the child zone's servers (looking up their addresses without glue). */
void edns_lookup_referral(struct eres *r, const uint8_t *cut, size_t cut_len, const uint8_t *resp, size_t len);
