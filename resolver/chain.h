/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. A normal name's CNAME chain that enters an EDNS domain. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "resolver/domains.h"

/**
 * Follow the CNAME chain of resp from qname; if a hop's target is an EDNS
 * domain, return 1 with that target (lower-cased wire form, WIRE_MAX_NAME
 * bytes) and a prefix message: resp's header and question with only the
 * CNAMEs up to that target in the answer section (malloc'd, caller frees).
 * @return 1, 0 (no such hop), or -EINVAL / -ENOMEM.
 */
int chain_find(const struct domains *d, const uint8_t *resp, size_t len, const uint8_t *qname, size_t qname_len,
               uint8_t *target, size_t *target_len, uint8_t **prefix, size_t *prefix_len);

/* Cache values are [flags][chain info][wire blob]; flags below. */
#define VAL_FLAG_CHAIN 0x01 /* chain enters an EDNS domain: u8 tlen, target, u16 plen, prefix */

/** Size of the value header for a chain (0 for none). */
size_t chain_value_header(size_t target_len, size_t prefix_len);

/** Write the value header; @return bytes written. */
size_t chain_value_write(uint8_t *out, const uint8_t *target, size_t target_len, const uint8_t *prefix,
                         size_t prefix_len);

/**
 * Parse a cache value's header. Sets *blob and *blob_len to the wire blob and,
 * for a chain, the target and prefix (pointers into val).
 * @return 0 (no chain), 1 (chain), -EINVAL (malformed).
 */
int chain_value_parse(const uint8_t *val, size_t vlen, const uint8_t **blob, size_t *blob_len,
                      const uint8_t **target, size_t *target_len, const uint8_t **prefix, size_t *prefix_len);
