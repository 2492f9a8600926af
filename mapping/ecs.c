/* SPDX-License-Identifier: BSD-3-Clause */
/* EDNS Client Subnet option (RFC 7871 §6) OPTION-DATA encoding and strict decoding. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "mapping/ecs.h"

#define ECS_HEADER_SIZE 4 /* FAMILY(2) SOURCE(1) SCOPE(1) */

/* Address bits of an ECS family, 0 when unknown. */
static unsigned family_bits(uint16_t family)
{
	switch (family) {
	case ECS_FAMILY_IPV4:
		return 32;
	case ECS_FAMILY_IPV6:
		return 128;
	default:
		return 0;
	}
}

/* Bytes of ADDRESS that carry `bits` prefix bits. */
static size_t addr_bytes(unsigned bits)
{
	return (bits + 7) / 8;
}

/* Mask of the bits kept in the last ADDRESS byte for a `bits`-long prefix. */
static uint8_t last_byte_mask(unsigned bits)
{
	unsigned rem = bits % 8;
	return rem == 0 ? 0xff : (uint8_t)(0xff << (8 - rem));
}

size_t ecs_size(const struct ecs *e)
{
	return ECS_HEADER_SIZE + addr_bytes(e->source);
}

int ecs_write(const struct ecs *e, uint8_t *buf, size_t size)
{
	unsigned bits = family_bits(e->family);
	if (bits == 0 || e->source > bits || e->scope > bits)
		return -EINVAL;
	size_t n = addr_bytes(e->source);
	if (size < ECS_HEADER_SIZE + n)
		return -ENOSPC;

	buf[0] = (uint8_t)(e->family >> 8);
	buf[1] = (uint8_t)(e->family & 0xff);
	buf[2] = e->source;
	buf[3] = e->scope;
	if (n > 0) {
		memcpy(buf + ECS_HEADER_SIZE, e->addr, n);
		/* RFC 7871 §6: bits past SOURCE PREFIX-LENGTH MUST be zero. */
		buf[ECS_HEADER_SIZE + n - 1] &= last_byte_mask(e->source);
	}
	return (int)(ECS_HEADER_SIZE + n);
}

int ecs_parse(struct ecs *out, const uint8_t *data, size_t len)
{
	if (len < ECS_HEADER_SIZE)
		return ECS_E_SHORT;
	uint16_t family = (uint16_t)((data[0] << 8) | data[1]);
	unsigned bits = family_bits(family);
	if (bits == 0)
		return ECS_E_FAMILY;
	uint8_t source = data[2], scope = data[3];
	if (source > bits)
		return ECS_E_SOURCE;
	/* A response's scope may exceed the source (§7.2.1), never the family. */
	if (scope > bits)
		return ECS_E_SCOPE;
	/* Exactly ceil(source/8) bytes: source 0 means no ADDRESS at all (§7.1.2). */
	size_t n = addr_bytes(source);
	if (len - ECS_HEADER_SIZE != n)
		return ECS_E_ADDRLEN;
	const uint8_t *addr = data + ECS_HEADER_SIZE;
	if (n > 0 && (addr[n - 1] & (uint8_t)~last_byte_mask(source)) != 0)
		return ECS_E_HOSTBITS;

	memset(out, 0, sizeof(*out));
	out->family = family;
	out->source = source;
	out->scope = scope;
	if (n > 0)
		memcpy(out->addr, addr, n);
	return 0;
}

int ecs_from_prefix(struct ecs *e, const struct prefix *p)
{
	uint16_t family;
	switch (p->family) {
	case AF_INET:
		family = ECS_FAMILY_IPV4;
		break;
	case AF_INET6:
		family = ECS_FAMILY_IPV6;
		break;
	default:
		return -EINVAL;
	}
	unsigned bits = family_bits(family);
	if (p->len > bits)
		return -EINVAL;

	memset(e, 0, sizeof(*e));
	e->family = family;
	e->source = p->len;
	e->scope = 0;
	size_t n = addr_bytes(p->len);
	if (n > 0) {
		memcpy(e->addr, p->addr, n);
		/* Do not trust the caller's prefix to be canonical. */
		e->addr[n - 1] &= last_byte_mask(p->len);
	}
	return 0;
}

void ecs_to_prefix(const struct ecs *e, struct prefix *p)
{
	memset(p, 0, sizeof(*p));
	unsigned bits = family_bits(e->family);
	if (bits == 0)
		return; /* family 0: not a prefix; callers parsed e, so this is a bug upstream */
	p->family = e->family == ECS_FAMILY_IPV4 ? AF_INET : AF_INET6;
	p->len = e->source > bits ? (uint8_t)bits : e->source;
	size_t n = addr_bytes(p->len);
	if (n > 0) {
		memcpy(p->addr, e->addr, n);
		p->addr[n - 1] &= last_byte_mask(p->len);
	}
}

bool ecs_match(const struct ecs *sent, const struct ecs *got)
{
	if (sent->family != got->family || sent->source != got->source)
		return false;
	unsigned bits = family_bits(sent->family);
	if (bits == 0 || sent->source > bits)
		return false;
	size_t n = addr_bytes(sent->source);
	if (n == 0)
		return true;
	/* Compare only the source bits: both sides are masked on the wire anyway. */
	if (n > 1 && memcmp(sent->addr, got->addr, n - 1) != 0)
		return false;
	uint8_t mask = last_byte_mask(sent->source);
	return (sent->addr[n - 1] & mask) == (got->addr[n - 1] & mask);
}

const char *ecs_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case ECS_E_SHORT:
		return "ECS option shorter than 4 bytes";
	case ECS_E_FAMILY:
		return "ECS option has an unknown address family";
	case ECS_E_SOURCE:
		return "ECS source prefix length exceeds the address family";
	case ECS_E_SCOPE:
		return "ECS scope prefix length exceeds the address family";
	case ECS_E_ADDRLEN:
		return "ECS address length does not match the source prefix length";
	case ECS_E_HOSTBITS:
		return "ECS address has bits set past the source prefix length";
	case -EINVAL:
		return "invalid argument";
	case -ENOSPC:
		return "buffer too small";
	case -ENOMEM:
		return "out of memory";
	default:
		return "unknown error";
	}
}
