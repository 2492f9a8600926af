/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of mapping/ecs.c: RFC 7871 OPTION-DATA parse/write vectors, round trips, matching. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "mapping/ecs.h"

#define MAXB 32

/* Hex dump for failure messages. */
static const char *hex(const uint8_t *b, size_t n)
{
	static char buf[3 * MAXB + 1];
	buf[0] = '\0';
	for (size_t i = 0; i < n && i < MAXB; i++)
		snprintf(buf + 3 * i, 4, "%02x ", b[i]);
	return buf;
}

/* --- ecs_parse vectors --- */

struct parse_row {
	const char *msg;
	size_t len;
	uint8_t data[MAXB];
	int rc;            /* expected result */
	uint16_t family;   /* expected fields when rc == 0 */
	uint8_t source, scope;
	uint8_t addr[16];
};

static const struct parse_row parse_rows[] = {
	/* valid */
	{ "v4 /24 (the common resolver choice)", 7, { 0, 1, 24, 0, 198, 51, 100 }, 0,
	  ECS_FAMILY_IPV4, 24, 0, { 198, 51, 100 } },
	{ "v4 /32 (what partdns sends)", 8, { 0, 1, 32, 0, 198, 51, 100, 1 }, 0,
	  ECS_FAMILY_IPV4, 32, 0, { 198, 51, 100, 1 } },
	{ "v4 /0 without address bytes (RFC 7871 7.1.2)", 4, { 0, 1, 0, 0 }, 0,
	  ECS_FAMILY_IPV4, 0, 0, { 0 } },
	{ "v6 /0 without address bytes", 4, { 0, 2, 0, 0 }, 0,
	  ECS_FAMILY_IPV6, 0, 0, { 0 } },
	{ "v4 /23, last bit of 3rd byte clear", 7, { 0, 1, 23, 0, 198, 51, 100 }, 0,
	  ECS_FAMILY_IPV4, 23, 0, { 198, 51, 100 } },
	{ "v4 /1 top bit only", 5, { 0, 1, 1, 0, 0x80 }, 0,
	  ECS_FAMILY_IPV4, 1, 0, { 0x80 } },
	{ "v4 /8 one byte", 5, { 0, 1, 8, 0, 203 }, 0,
	  ECS_FAMILY_IPV4, 8, 0, { 203 } },
	{ "v6 /56 (the common v6 choice)", 11, { 0, 2, 56, 0, 0x20, 0x01, 0x0d, 0xb8, 0, 1, 0 }, 0,
	  ECS_FAMILY_IPV6, 56, 0, { 0x20, 0x01, 0x0d, 0xb8, 0, 1, 0 } },
	{ "v6 /57, top bit of 8th byte set", 12, { 0, 2, 57, 0, 0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0x80 }, 0,
	  ECS_FAMILY_IPV6, 57, 0, { 0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0x80 } },
	{ "v6 /128 full address", 20,
	  { 0, 2, 128, 0, 0x20, 0x01, 0x0d, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 }, 0,
	  ECS_FAMILY_IPV6, 128, 0, { 0x20, 0x01, 0x0d, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 } },
	{ "scope larger than source is allowed on parse (7.2.1)", 7, { 0, 1, 24, 32, 198, 51, 100 }, 0,
	  ECS_FAMILY_IPV4, 24, 32, { 198, 51, 100 } },
	{ "v6 scope 128 over source 56", 11, { 0, 2, 56, 128, 0x20, 0x01, 0x0d, 0xb8, 0, 1, 0 }, 0,
	  ECS_FAMILY_IPV6, 56, 128, { 0x20, 0x01, 0x0d, 0xb8, 0, 1, 0 } },
	{ "scope smaller than source", 8, { 0, 1, 32, 16, 198, 51, 100, 1 }, 0,
	  ECS_FAMILY_IPV4, 32, 16, { 198, 51, 100, 1 } },
	{ "v4 source 0 scope 32", 4, { 0, 1, 0, 32 }, 0, ECS_FAMILY_IPV4, 0, 32, { 0 } },

	/* short */
	{ "empty option", 0, { 0 }, ECS_E_SHORT, 0, 0, 0, { 0 } },
	{ "one byte", 1, { 0 }, ECS_E_SHORT, 0, 0, 0, { 0 } },
	{ "three bytes (no scope)", 3, { 0, 1, 24 }, ECS_E_SHORT, 0, 0, 0, { 0 } },

	/* family */
	{ "family 0", 4, { 0, 0, 0, 0 }, ECS_E_FAMILY, 0, 0, 0, { 0 } },
	{ "family 3", 4, { 0, 3, 0, 0 }, ECS_E_FAMILY, 0, 0, 0, { 0 } },
	{ "family 0x0101 (byte order matters)", 4, { 1, 1, 0, 0 }, ECS_E_FAMILY, 0, 0, 0, { 0 } },
	{ "family 0x0100 (swapped v4)", 5, { 1, 0, 8, 0, 10 }, ECS_E_FAMILY, 0, 0, 0, { 0 } },
	{ "family 0xffff", 4, { 0xff, 0xff, 0, 0 }, ECS_E_FAMILY, 0, 0, 0, { 0 } },

	/* source */
	{ "v4 source 33", 9, { 0, 1, 33, 0, 1, 2, 3, 4, 0 }, ECS_E_SOURCE, 0, 0, 0, { 0 } },
	{ "v4 source 255", 4, { 0, 1, 255, 0 }, ECS_E_SOURCE, 0, 0, 0, { 0 } },
	{ "v6 source 129", 21, { 0, 2, 129, 0 }, ECS_E_SOURCE, 0, 0, 0, { 0 } },
	{ "v4 source 33 wins over a wrong length", 8, { 0, 1, 33, 0, 1, 2, 3, 4 }, ECS_E_SOURCE, 0, 0, 0, { 0 } },

	/* scope */
	{ "v4 scope 33", 7, { 0, 1, 24, 33, 198, 51, 100 }, ECS_E_SCOPE, 0, 0, 0, { 0 } },
	{ "v6 scope 129", 11, { 0, 2, 56, 129, 0x20, 0x01, 0x0d, 0xb8, 0, 1, 0 }, ECS_E_SCOPE, 0, 0, 0, { 0 } },
	{ "v6 scope 255 source 0", 4, { 0, 2, 0, 255 }, ECS_E_SCOPE, 0, 0, 0, { 0 } },

	/* address length */
	{ "v4 /24 with a trailing extra byte", 8, { 0, 1, 24, 0, 198, 51, 100, 0 }, ECS_E_ADDRLEN, 0, 0, 0, { 0 } },
	{ "v4 /24 with two address bytes", 6, { 0, 1, 24, 0, 198, 51 }, ECS_E_ADDRLEN, 0, 0, 0, { 0 } },
	{ "v4 /32 with three address bytes", 7, { 0, 1, 32, 0, 198, 51, 100 }, ECS_E_ADDRLEN, 0, 0, 0, { 0 } },
	{ "v4 /0 with a zero address byte", 5, { 0, 1, 0, 0, 0 }, ECS_E_ADDRLEN, 0, 0, 0, { 0 } },
	{ "v4 /1 without address", 4, { 0, 1, 1, 0 }, ECS_E_ADDRLEN, 0, 0, 0, { 0 } },
	{ "v4 /32 padded to 16 bytes", 20, { 0, 1, 32, 0, 198, 51, 100, 1 }, ECS_E_ADDRLEN, 0, 0, 0, { 0 } },
	{ "v6 /56 with 8 address bytes", 12, { 0, 2, 56, 0, 0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0 }, ECS_E_ADDRLEN, 0, 0, 0, { 0 } },
	{ "v6 /128 one byte short", 19, { 0, 2, 128, 0 }, ECS_E_ADDRLEN, 0, 0, 0, { 0 } },
	{ "v6 /128 one byte long", 21, { 0, 2, 128, 0 }, ECS_E_ADDRLEN, 0, 0, 0, { 0 } },

	/* host bits */
	{ "v4 /23 with bit 24 set", 7, { 0, 1, 23, 0, 198, 51, 101 }, ECS_E_HOSTBITS, 0, 0, 0, { 0 } },
	{ "v4 /1 with the second bit set", 5, { 0, 1, 1, 0, 0xc0 }, ECS_E_HOSTBITS, 0, 0, 0, { 0 } },
	{ "v4 /31 with the last bit set", 8, { 0, 1, 31, 0, 198, 51, 100, 1 }, ECS_E_HOSTBITS, 0, 0, 0, { 0 } },
	{ "v6 /57 with bit 59 set", 12, { 0, 2, 57, 0, 0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0x20 }, ECS_E_HOSTBITS, 0, 0, 0, { 0 } },
	{ "v6 /127 with the last bit set", 20,
	  { 0, 2, 127, 0, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 }, ECS_E_HOSTBITS, 0, 0, 0, { 0 } },
};

static void test_parse_vectors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(parse_rows) / sizeof(parse_rows[0]); i++) {
		const struct parse_row *r = &parse_rows[i];
		struct ecs e;
		memset(&e, 0xa5, sizeof(e));
		int rc = ecs_parse(&e, r->data, r->len);
		if (rc != r->rc)
			fail_msg("%s: [%s] rc %d (%s), want %d (%s)", r->msg, hex(r->data, r->len),
			         rc, ecs_strerror(rc), r->rc, ecs_strerror(r->rc));
		if (rc != 0)
			continue;
		if (e.family != r->family || e.source != r->source || e.scope != r->scope)
			fail_msg("%s: family/source/scope %u/%u/%u, want %u/%u/%u", r->msg,
			         e.family, e.source, e.scope, r->family, r->source, r->scope);
		if (memcmp(e.addr, r->addr, 16) != 0)
			fail_msg("%s: addr %s", r->msg, hex(e.addr, 16));
		if (ecs_size(&e) != r->len)
			fail_msg("%s: ecs_size %zu, want %zu", r->msg, ecs_size(&e), r->len);
		/* A valid option re-encodes to the same bytes. */
		uint8_t buf[MAXB];
		int n = ecs_write(&e, buf, sizeof(buf));
		if (n != (int)r->len || memcmp(buf, r->data, r->len) != 0)
			fail_msg("%s: rewrite gave %d bytes [%s]", r->msg, n, hex(buf, n > 0 ? (size_t)n : 0));
	}
}

/* A failed parse must not read past len: feed every prefix of a valid option via an exact-size copy. */
static void test_parse_truncations(void **state)
{
	(void)state;
	static const uint8_t full[20] = { 0, 2, 128, 0, 0x20, 0x01, 0x0d, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
	for (size_t len = 0; len < sizeof(full); len++) {
		uint8_t copy[20];
		memcpy(copy, full, len);
		struct ecs e;
		int rc = ecs_parse(&e, copy, len);
		int want = len < 4 ? ECS_E_SHORT : ECS_E_ADDRLEN;
		if (rc != want)
			fail_msg("v6 /128 truncated to %zu bytes: rc %d, want %d", len, rc, want);
	}
}

/* --- ecs_write vectors --- */

struct write_row {
	const char *msg;
	struct ecs e;
	size_t bufsize;
	int rc;
	uint8_t out[MAXB]; /* expected bytes when rc > 0 */
};

static const struct write_row write_rows[] = {
	{ "v4 /32", { ECS_FAMILY_IPV4, 32, 0, { 198, 51, 100, 1 } }, MAXB, 8, { 0, 1, 32, 0, 198, 51, 100, 1 } },
	{ "v4 /24 drops the host byte", { ECS_FAMILY_IPV4, 24, 0, { 198, 51, 100, 77 } }, MAXB, 7,
	  { 0, 1, 24, 0, 198, 51, 100 } },
	{ "v4 /23 masks the last bit", { ECS_FAMILY_IPV4, 23, 0, { 198, 51, 101, 77 } }, MAXB, 7,
	  { 0, 1, 23, 0, 198, 51, 100 } },
	{ "v4 /0 writes no address", { ECS_FAMILY_IPV4, 0, 0, { 255, 255, 255, 255 } }, MAXB, 4, { 0, 1, 0, 0 } },
	{ "v4 /9 keeps one bit of byte 2", { ECS_FAMILY_IPV4, 9, 0, { 0xff, 0xff, 0xff, 0xff } }, MAXB, 6,
	  { 0, 1, 9, 0, 0xff, 0x80 } },
	{ "v6 /57 masks to the top bit", { ECS_FAMILY_IPV6, 57, 0,
	  { 0x20, 0x01, 0x0d, 0xb8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff } }, MAXB, 12,
	  { 0, 2, 57, 0, 0x20, 0x01, 0x0d, 0xb8, 0xff, 0xff, 0xff, 0x80 } },
	{ "v6 /128", { ECS_FAMILY_IPV6, 128, 0, { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 } }, MAXB, 20,
	  { 0, 2, 128, 0, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 } },
	{ "scope is written as given", { ECS_FAMILY_IPV4, 24, 20, { 198, 51, 100 } }, MAXB, 7,
	  { 0, 1, 24, 20, 198, 51, 100 } },
	{ "exact buffer size", { ECS_FAMILY_IPV4, 32, 0, { 198, 51, 100, 1 } }, 8, 8, { 0, 1, 32, 0, 198, 51, 100, 1 } },
	{ "buffer one short", { ECS_FAMILY_IPV4, 32, 0, { 198, 51, 100, 1 } }, 7, -ENOSPC, { 0 } },
	{ "no room for the header", { ECS_FAMILY_IPV4, 0, 0, { 0 } }, 3, -ENOSPC, { 0 } },
	{ "family 0", { 0, 0, 0, { 0 } }, MAXB, -EINVAL, { 0 } },
	{ "family 3", { 3, 8, 0, { 10 } }, MAXB, -EINVAL, { 0 } },
	{ "v4 source 33", { ECS_FAMILY_IPV4, 33, 0, { 1, 2, 3, 4 } }, MAXB, -EINVAL, { 0 } },
	{ "v6 source 129", { ECS_FAMILY_IPV6, 129, 0, { 0 } }, MAXB, -EINVAL, { 0 } },
	{ "v4 scope 33", { ECS_FAMILY_IPV4, 24, 33, { 1, 2, 3 } }, MAXB, -EINVAL, { 0 } },
	{ "invalid beats short buffer", { ECS_FAMILY_IPV4, 33, 0, { 0 } }, 0, -EINVAL, { 0 } },
};

static void test_write_vectors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(write_rows) / sizeof(write_rows[0]); i++) {
		const struct write_row *r = &write_rows[i];
		uint8_t buf[MAXB + 4];
		memset(buf, 0xee, sizeof(buf));
		int rc = ecs_write(&r->e, buf, r->bufsize);
		if (rc != r->rc)
			fail_msg("%s: rc %d, want %d", r->msg, rc, r->rc);
		if (rc > 0 && memcmp(buf, r->out, (size_t)rc) != 0)
			fail_msg("%s: wrote [%s]", r->msg, hex(buf, (size_t)rc));
		if (rc > 0 && (size_t)rc != ecs_size(&r->e))
			fail_msg("%s: ecs_size %zu != written %d", r->msg, ecs_size(&r->e), rc);
		/* Nothing past the returned length (or at all on error) may be touched. */
		size_t from = rc > 0 ? (size_t)rc : 0;
		for (size_t j = from; j < sizeof(buf); j++)
			if (buf[j] != 0xee)
				fail_msg("%s: byte %zu written past the result", r->msg, j);
	}
}

struct size_row {
	const char *msg;
	uint8_t source;
	size_t size;
};

static void test_size(void **state)
{
	(void)state;
	static const struct size_row rows[] = {
		{ "source 0", 0, 4 },   { "source 1", 1, 5 },   { "source 8", 8, 5 },
		{ "source 9", 9, 6 },   { "source 24", 24, 7 }, { "source 32", 32, 8 },
		{ "source 56", 56, 11 }, { "source 57", 57, 12 }, { "source 128", 128, 20 },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct ecs e = { ECS_FAMILY_IPV6, rows[i].source, 0, { 0 } };
		if (ecs_size(&e) != rows[i].size)
			fail_msg("%s: ecs_size %zu, want %zu", rows[i].msg, ecs_size(&e), rows[i].size);
	}
	assert_int_equal(ECS_MAX_SIZE, 20);
}

/* Every family x source x scope: write, parse back, compare; the rewrite is byte-identical. */
static void test_round_trip_all_lengths(void **state)
{
	(void)state;
	static const struct { uint16_t family; unsigned bits; } fams[] = {
		{ ECS_FAMILY_IPV4, 32 }, { ECS_FAMILY_IPV6, 128 },
	};
	for (size_t f = 0; f < 2; f++) {
		for (unsigned source = 0; source <= fams[f].bits; source++) {
			unsigned scopes[] = { 0, source, fams[f].bits };
			for (size_t s = 0; s < 3; s++) {
				struct ecs in = { fams[f].family, (uint8_t)source, (uint8_t)scopes[s], { 0 } };
				for (unsigned b = 0; b < 16; b++)
					in.addr[b] = (uint8_t)(0x5a ^ (b * 37) ^ source); /* host bits set on purpose */
				uint8_t buf[ECS_MAX_SIZE], buf2[ECS_MAX_SIZE];
				int n = ecs_write(&in, buf, sizeof(buf));
				if (n != (int)ecs_size(&in))
					fail_msg("family %u /%u scope %u: wrote %d", in.family, source, in.scope, n);
				struct ecs out;
				int rc = ecs_parse(&out, buf, (size_t)n);
				if (rc != 0)
					fail_msg("family %u /%u scope %u: parse of own output: %s", in.family, source,
					         in.scope, ecs_strerror(rc));
				if (out.family != in.family || out.source != in.source || out.scope != in.scope)
					fail_msg("family %u /%u: header changed", in.family, source);
				if (!ecs_match(&in, &out))
					fail_msg("family %u /%u: round trip does not match the original", in.family, source);
				/* Bits past the source come back zero. */
				for (unsigned bit = source; bit < 128; bit++)
					if (out.addr[bit / 8] & (0x80 >> (bit % 8)))
						fail_msg("family %u /%u: bit %u set after parse", in.family, source, bit);
				int n2 = ecs_write(&out, buf2, sizeof(buf2));
				if (n2 != n || memcmp(buf, buf2, (size_t)n) != 0)
					fail_msg("family %u /%u: second write differs", in.family, source);
			}
		}
	}
}

/* --- ecs_match --- */

struct match_row {
	const char *msg;
	struct ecs sent, got;
	bool match;
};

static const struct match_row match_rows[] = {
	{ "identical", { 1, 32, 0, { 198, 51, 100, 1 } }, { 1, 32, 0, { 198, 51, 100, 1 } }, true },
	{ "scope differs (ignored)", { 1, 32, 0, { 198, 51, 100, 1 } }, { 1, 32, 24, { 198, 51, 100, 1 } }, true },
	{ "scope 0 answer", { 1, 32, 0, { 198, 51, 100, 1 } }, { 1, 32, 0, { 198, 51, 100, 1 } }, true },
	{ "family differs", { 1, 0, 0, { 0 } }, { 2, 0, 0, { 0 } }, false },
	{ "source differs", { 1, 32, 0, { 198, 51, 100, 1 } }, { 1, 24, 0, { 198, 51, 100 } }, false },
	{ "source differs, same address bytes", { 1, 24, 0, { 198, 51, 100 } }, { 1, 32, 0, { 198, 51, 100, 0 } }, false },
	{ "source differs, both zero", { 2, 0, 0, { 0 } }, { 2, 8, 0, { 0 } }, false },
	{ "address differs in the last byte", { 1, 32, 0, { 198, 51, 100, 1 } }, { 1, 32, 0, { 198, 51, 100, 2 } }, false },
	{ "address differs in the first byte", { 1, 32, 0, { 198, 51, 100, 1 } }, { 1, 32, 0, { 199, 51, 100, 1 } }, false },
	{ "address differs only past source", { 1, 24, 0, { 198, 51, 100, 1 } }, { 1, 24, 0, { 198, 51, 100, 9 } }, true },
	{ "odd source /23: differs in bit 23", { 1, 23, 0, { 198, 51, 100 } }, { 1, 23, 0, { 198, 51, 102 } }, false },
	{ "odd source /23: differs in bit 24 only", { 1, 23, 0, { 198, 51, 100 } }, { 1, 23, 0, { 198, 51, 101 } }, true },
	{ "v6 /56 same", { 2, 56, 0, { 0x20, 0x01, 0x0d, 0xb8, 0, 1, 0 } }, { 2, 56, 64, { 0x20, 0x01, 0x0d, 0xb8, 0, 1, 0 } }, true },
	{ "v6 /56 other network", { 2, 56, 0, { 0x20, 0x01, 0x0d, 0xb8, 0, 1, 0 } }, { 2, 56, 0, { 0x20, 0x01, 0x0d, 0xb8, 0, 2, 0 } }, false },
	{ "both source 0", { 2, 0, 0, { 0 } }, { 2, 0, 0, { 0 } }, true },
	{ "v4 /32 vs v6 with the same bytes", { 1, 32, 0, { 198, 51, 100, 1 } }, { 2, 32, 0, { 198, 51, 100, 1 } }, false },
	{ "unknown family never matches", { 3, 8, 0, { 10 } }, { 3, 8, 0, { 10 } }, false },
};

static void test_match(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(match_rows) / sizeof(match_rows[0]); i++) {
		const struct match_row *r = &match_rows[i];
		if (ecs_match(&r->sent, &r->got) != r->match)
			fail_msg("%s: ecs_match is %d, want %d", r->msg, !r->match, r->match);
	}
}

/* --- prefix conversion --- */

struct from_prefix_row {
	const char *msg;
	struct prefix p;
	int rc;
	struct ecs want;
};

static const struct from_prefix_row from_rows[] = {
	{ "v4 host", { AF_INET, 32, { 198, 51, 100, 1 } }, 0, { 1, 32, 0, { 198, 51, 100, 1 } } },
	{ "v4 /24", { AF_INET, 24, { 203, 0, 113 } }, 0, { 1, 24, 0, { 203, 0, 113 } } },
	{ "v4 /24 with host bits masked", { AF_INET, 24, { 203, 0, 113, 9 } }, 0, { 1, 24, 0, { 203, 0, 113 } } },
	{ "v4 /0", { AF_INET, 0, { 0 } }, 0, { 1, 0, 0, { 0 } } },
	{ "v6 /56", { AF_INET6, 56, { 0x20, 0x01, 0x0d, 0xb8, 0, 1 } }, 0,
	  { 2, 56, 0, { 0x20, 0x01, 0x0d, 0xb8, 0, 1 } } },
	{ "v6 /57 masked", { AF_INET6, 57, { 0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0xff } }, 0,
	  { 2, 57, 0, { 0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0x80 } } },
	{ "unknown family", { AF_UNIX, 8, { 10 } }, -EINVAL, { 0 } },
	{ "v4 length 33", { AF_INET, 33, { 10 } }, -EINVAL, { 0 } },
	{ "v6 length 129", { AF_INET6, 129, { 0x20 } }, -EINVAL, { 0 } },
};

static void test_prefix_conversion(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(from_rows) / sizeof(from_rows[0]); i++) {
		const struct from_prefix_row *r = &from_rows[i];
		struct ecs e;
		memset(&e, 0xa5, sizeof(e));
		int rc = ecs_from_prefix(&e, &r->p);
		if (rc != r->rc)
			fail_msg("%s: rc %d, want %d", r->msg, rc, r->rc);
		if (rc != 0)
			continue;
		if (e.family != r->want.family || e.source != r->want.source || e.scope != 0 ||
		    memcmp(e.addr, r->want.addr, 16) != 0)
			fail_msg("%s: got family %u /%u scope %u [%s]", r->msg, e.family, e.source, e.scope,
			         hex(e.addr, 16));
		/* And back: the canonical prefix. */
		struct prefix back;
		ecs_to_prefix(&e, &back);
		if (back.family != r->p.family || back.len != r->p.len || memcmp(back.addr, r->want.addr, 16) != 0)
			fail_msg("%s: ecs_to_prefix gave family %u /%u [%s]", r->msg, back.family, back.len,
			         hex(back.addr, 16));
	}
	/* Scope does not leak into the prefix. */
	struct ecs e = { ECS_FAMILY_IPV6, 48, 64, { 0x20, 0x01, 0x0d, 0xb8, 0, 7 } };
	struct prefix p;
	ecs_to_prefix(&e, &p);
	assert_int_equal(p.family, AF_INET6);
	assert_int_equal(p.len, 48);
}

static void test_strerror(void **state)
{
	(void)state;
	static const int codes[] = { ECS_E_SHORT, ECS_E_FAMILY, ECS_E_SOURCE, ECS_E_SCOPE, ECS_E_ADDRLEN, ECS_E_HOSTBITS };
	const char *unknown = ecs_strerror(-99999);
	assert_non_null(unknown);
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		const char *s = ecs_strerror(codes[i]);
		if (s == NULL || strcmp(s, unknown) == 0)
			fail_msg("code %d has no text", codes[i]);
		for (size_t j = 0; j < i; j++)
			if (strcmp(s, ecs_strerror(codes[j])) == 0)
				fail_msg("codes %d and %d share the text '%s'", codes[i], codes[j], s);
	}
	assert_string_not_equal(ecs_strerror(-ENOSPC), unknown);
	assert_string_not_equal(ecs_strerror(-EINVAL), unknown);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_vectors),
		cmocka_unit_test(test_parse_truncations),
		cmocka_unit_test(test_write_vectors),
		cmocka_unit_test(test_size),
		cmocka_unit_test(test_round_trip_all_lengths),
		cmocka_unit_test(test_match),
		cmocka_unit_test(test_prefix_conversion),
		cmocka_unit_test(test_strerror),
	};
	return cmocka_run_group_tests_name("ecs", tests, NULL, NULL);
}
