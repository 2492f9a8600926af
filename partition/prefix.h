/* SPDX-License-Identifier: BSD-3-Clause */
/* IPv4/IPv6 prefixes: parsing, canonical printing, comparison. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Error codes (negative), in the partition module's range. */
enum {
	PREFIX_E_SYNTAX = -1001,   /* not an address or prefix */
	PREFIX_E_LENGTH = -1002,   /* prefix length missing, non-numeric or too long */
	PREFIX_E_HOSTBITS = -1003, /* bits set past the prefix length */
};

/* A prefix; an address is a prefix of full length (32 or 128). */
struct prefix {
	uint8_t family;   /* AF_INET or AF_INET6 */
	uint8_t len;      /* prefix length in bits, 0..32 or 0..128 */
	uint8_t addr[16]; /* network byte order; IPv4 uses addr[0..3]; bits past len are zero */
};

/* Enough for any canonical prefix text, with the terminating NUL. */
#define PREFIX_STRLEN 50

/**
 * Parse "ADDR/LEN" or a bare "ADDR" (a host prefix, /32 or /128).
 * @return 0, PREFIX_E_SYNTAX, PREFIX_E_LENGTH, or PREFIX_E_HOSTBITS (then *out
 *         still holds the parsed prefix with host bits cleared, so a caller can
 *         suggest the canonical form).
 */
int prefix_parse(const char *text, struct prefix *out);

/**
 * Parse a bare address (no "/LEN"); out->len is 32 or 128.
 * @return 0 or PREFIX_E_SYNTAX.
 */
int prefix_parse_addr(const char *text, struct prefix *out);

/**
 * Canonical text: RFC 5952 for IPv6, "ADDR/LEN" always.
 * @return length written (without NUL), -ENOSPC (nothing written past size),
 *         or -EINVAL (family neither AF_INET nor AF_INET6).
 */
int prefix_format(const struct prefix *p, char *buf, size_t size);

/**
 * The address alone, without "/LEN".
 * @return length written (without NUL), -ENOSPC or -EINVAL, as prefix_format.
 */
int prefix_format_addr(const struct prefix *p, char *buf, size_t size);

/** Build a host prefix from raw address bytes (4 or 16 by family). */
void prefix_from_addr(struct prefix *out, int family, const uint8_t *addr);

/** Clear the bits past p->len. */
void prefix_mask(struct prefix *p);

/** True when inner lies within outer (same family, inner->len >= outer->len). */
bool prefix_contains(const struct prefix *outer, const struct prefix *inner);

/** Same family, length and address bits. */
bool prefix_equal(const struct prefix *a, const struct prefix *b);

/** Bits of the family: 32 or 128 (0 for an unknown family). */
unsigned prefix_family_bits(int family);

/** Text of a PREFIX_E_* or negative errno code. */
const char *prefix_strerror(int err);
