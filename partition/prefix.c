/* SPDX-License-Identifier: BSD-3-Clause */
/* IPv4/IPv6 prefix text parsing (strict, inet_pton based) and canonical printing. */
#include "partition/prefix.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

/* Longest address text inet_pton can accept ("ffff:...:255.255.255.255" is 45). */
#define ADDR_TEXT_MAX 46

unsigned prefix_family_bits(int family)
{
	switch (family) {
	case AF_INET:
		return 32;
	case AF_INET6:
		return 128;
	default:
		return 0;
	}
}

/* Address bytes of the family (4 or 16; 0 when unknown). */
static unsigned family_bytes(int family)
{
	return prefix_family_bits(family) / 8;
}

/* Same first len bits in a and b (both at least ceil(len/8) bytes). */
static bool bits_equal(const uint8_t *a, const uint8_t *b, unsigned len)
{
	unsigned whole = len / 8, rest = len % 8;
	if (memcmp(a, b, whole) != 0)
		return false;
	if (rest == 0)
		return true;
	uint8_t m = (uint8_t)(0xFFu << (8 - rest));
	return (a[whole] & m) == (b[whole] & m);
}

void prefix_mask(struct prefix *p)
{
	unsigned bits = prefix_family_bits(p->family);
	unsigned len = p->len < bits ? p->len : bits;
	unsigned whole = len / 8, rest = len % 8;
	if (rest != 0) {
		p->addr[whole] &= (uint8_t)(0xFFu << (8 - rest));
		whole++;
	}
	memset(p->addr + whole, 0, sizeof(p->addr) - whole);
}

void prefix_from_addr(struct prefix *out, int family, const uint8_t *addr)
{
	memset(out, 0, sizeof(*out));
	unsigned n = family_bytes(family);
	if (n == 0)
		return;
	out->family = (uint8_t)family;
	out->len = (uint8_t)(n * 8);
	memcpy(out->addr, addr, n);
}

bool prefix_contains(const struct prefix *outer, const struct prefix *inner)
{
	if (outer->family != inner->family || inner->len < outer->len)
		return false;
	unsigned bits = prefix_family_bits(outer->family);
	if (bits == 0 || outer->len > bits)
		return false;
	return bits_equal(outer->addr, inner->addr, outer->len);
}

bool prefix_equal(const struct prefix *a, const struct prefix *b)
{
	if (a->family != b->family || a->len != b->len)
		return false;
	unsigned bits = prefix_family_bits(a->family);
	return bits_equal(a->addr, b->addr, a->len < bits ? a->len : bits);
}

int prefix_parse_addr(const char *text, struct prefix *out)
{
	memset(out, 0, sizeof(*out));
	if (text == NULL)
		return PREFIX_E_SYNTAX;
	/* The family is decided by the text, so inet_pton sees exactly one try. */
	int family = strchr(text, ':') != NULL ? AF_INET6 : AF_INET;
	uint8_t buf[16];
	if (inet_pton(family, text, buf) != 1)
		return PREFIX_E_SYNTAX;
	prefix_from_addr(out, family, buf);
	return 0;
}

/* "0" or 1..3 digits without a leading zero; anything else is PREFIX_E_LENGTH. */
static int parse_length(const char *s, unsigned max, unsigned *len)
{
	size_t n = strlen(s);
	if (n == 0 || n > 3 || (n > 1 && s[0] == '0'))
		return PREFIX_E_LENGTH;
	unsigned v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return PREFIX_E_LENGTH;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v > max)
		return PREFIX_E_LENGTH;
	*len = v;
	return 0;
}

int prefix_parse(const char *text, struct prefix *out)
{
	memset(out, 0, sizeof(*out));
	if (text == NULL)
		return PREFIX_E_SYNTAX;
	const char *slash = strchr(text, '/');
	if (slash == NULL)
		return prefix_parse_addr(text, out);

	size_t alen = (size_t)(slash - text);
	if (alen == 0 || alen >= ADDR_TEXT_MAX)
		return PREFIX_E_SYNTAX;
	char abuf[ADDR_TEXT_MAX];
	memcpy(abuf, text, alen);
	abuf[alen] = '\0';
	struct prefix p;
	int rc = prefix_parse_addr(abuf, &p);
	if (rc != 0)
		return rc;

	unsigned len;
	rc = parse_length(slash + 1, prefix_family_bits(p.family), &len);
	if (rc != 0)
		return rc;
	p.len = (uint8_t)len;

	struct prefix masked = p;
	prefix_mask(&masked);
	*out = masked;
	return memcmp(masked.addr, p.addr, sizeof(p.addr)) == 0 ? 0 : PREFIX_E_HOSTBITS;
}

int prefix_format_addr(const struct prefix *p, char *buf, size_t size)
{
	char tmp[INET6_ADDRSTRLEN];
	if (family_bytes(p->family) == 0 || inet_ntop(p->family, p->addr, tmp, sizeof(tmp)) == NULL)
		return -EINVAL;
	size_t n = strlen(tmp);
	if (n >= size)
		return -ENOSPC;
	memcpy(buf, tmp, n + 1);
	return (int)n;
}

int prefix_format(const struct prefix *p, char *buf, size_t size)
{
	char tmp[PREFIX_STRLEN];
	int n = prefix_format_addr(p, tmp, sizeof(tmp));
	if (n < 0)
		return n;
	int m = snprintf(tmp + n, sizeof(tmp) - (size_t)n, "/%u", (unsigned)p->len);
	if (m < 0 || (size_t)(n + m) >= sizeof(tmp))
		return -EINVAL;
	if ((size_t)(n + m) >= size)
		return -ENOSPC;
	memcpy(buf, tmp, (size_t)(n + m) + 1);
	return n + m;
}

const char *prefix_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case PREFIX_E_SYNTAX:
		return "not an IPv4 or IPv6 address or prefix";
	case PREFIX_E_LENGTH:
		return "bad prefix length (missing, not a plain number, or longer than the address)";
	case PREFIX_E_HOSTBITS:
		return "host bits set past the prefix length";
	default:
		/* glibc's strerror returns static text for known errno values. */
		return err < 0 && err > -1000 ? strerror(-err) : "unknown error";
	}
}
