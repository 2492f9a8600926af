/* SPDX-License-Identifier: BSD-3-Clause */
/* EDNS Client Subnet option (RFC 7871) wire encoding and decoding. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "partition/prefix.h"

#define ECS_OPTION_CODE 8  /* EDNS0 option code (RFC 7871 §6) */
#define ECS_FAMILY_IPV4 1  /* IANA address family numbers */
#define ECS_FAMILY_IPV6 2
#define ECS_MAX_SIZE 20    /* largest OPTION-DATA: 4 + 16 */

/* Error codes (negative), in the mapping module's range. */
enum {
	ECS_E_SHORT = -2001,    /* fewer than 4 bytes of OPTION-DATA */
	ECS_E_FAMILY = -2002,   /* family not 1 or 2 */
	ECS_E_SOURCE = -2003,   /* SOURCE PREFIX-LENGTH past the family's bits */
	ECS_E_SCOPE = -2004,    /* SCOPE PREFIX-LENGTH past the family's bits */
	ECS_E_ADDRLEN = -2005,  /* ADDRESS not exactly ceil(SOURCE/8) bytes */
	ECS_E_HOSTBITS = -2006, /* bits past SOURCE PREFIX-LENGTH not zero */
};

struct ecs {
	uint16_t family;  /* ECS_FAMILY_IPV4 or ECS_FAMILY_IPV6 */
	uint8_t source;   /* SOURCE PREFIX-LENGTH */
	uint8_t scope;    /* SCOPE PREFIX-LENGTH */
	uint8_t addr[16]; /* address, bits past source zero */
};

/** Length of the OPTION-DATA for e: 4 + ceil(source / 8). */
size_t ecs_size(const struct ecs *e);

/**
 * Write OPTION-DATA (no option code/length header) for e, masking the
 * address bits past e->source.
 * @return bytes written, -ENOSPC, or -EINVAL (bad family or lengths).
 */
int ecs_write(const struct ecs *e, uint8_t *buf, size_t size);

/**
 * Parse OPTION-DATA strictly (RFC 7871 §6; a malformed option is FORMERR).
 * SOURCE 0 with no ADDRESS bytes is valid (§7.1.2); SCOPE may exceed SOURCE
 * (a response's scope, §7.2.1) but not the family's bits; trailing bytes are
 * ECS_E_ADDRLEN. Checks run in the order of the codes below.
 * @param out written only on success; out->addr is zero past the source.
 * @return 0 or one of ECS_E_*.
 */
int ecs_parse(struct ecs *out, const uint8_t *data, size_t len);

/** Fill e from a prefix (source = p->len, scope 0). @return 0 or -EINVAL. */
int ecs_from_prefix(struct ecs *e, const struct prefix *p);

/** The prefix the option names (family, source, address); all zero for an unknown family. */
void ecs_to_prefix(const struct ecs *e, struct prefix *p);

/**
 * Does a response's ECS answer the one we sent? Same family, source and
 * address (RFC 7871 §7.3); scope may be anything.
 */
bool ecs_match(const struct ecs *sent, const struct ecs *got);

/** Text of an ECS_E_* or negative errno code. */
const char *ecs_strerror(int err);
