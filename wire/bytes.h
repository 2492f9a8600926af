/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to wire/. What its files share below a message: big-endian fields, ASCII case
 * folding eight bytes at a time, the sizes of a record's fixed parts. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define RR_FIXED 10       /* TYPE CLASS TTL RDLENGTH */
#define OPT_RR_FIXED 11   /* root owner + RR_FIXED */
#define OPTION_HDR 4      /* OPTION-CODE OPTION-LENGTH */
#define PTR_HOPS_MAX 127  /* a 255-byte name has at most 127 labels */

static inline uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void wr32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* ASCII lower case; label length bytes (0..63) are never changed by it. */
static inline uint8_t lower(uint8_t c)
{
	return (c >= 'A' && c <= 'Z') ? (uint8_t)(c + ('a' - 'A')) : c;
}

/*
 * Case folding eight bytes at a time. Every byte of a word is lowered
 * exactly as lower() does: only 'A'..'Z' change, bytes >= 0x80 never do.
 * low7 holds each byte without its top bit, so adding a constant below
 * 0x80 to every byte carries into that byte's top bit and never into the
 * next byte.
 */
#define ONES8 0x0101010101010101ull
#define HIGH8 0x8080808080808080ull

static inline uint64_t lower8(uint64_t w)
{
	uint64_t low7 = w & ~HIGH8;
	uint64_t ge_a = low7 + ONES8 * (0x80 - 'A');     /* top bit: byte & 0x7f >= 'A' */
	uint64_t gt_z = low7 + ONES8 * (0x80 - 'Z' - 1); /* top bit: byte & 0x7f > 'Z' */
	uint64_t upper = ge_a & ~gt_z & ~w & HIGH8;      /* ASCII and in 'A'..'Z' */
	return w | upper >> 2;                           /* 0x80 >> 2 = 0x20 */
}

static inline uint64_t ld64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static inline void st64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

/* Lower-case n bytes of src into dst (may equal src), eight at a time. */
static inline void fold(const uint8_t *src, uint8_t *dst, size_t n)
{
	if (n < 8) {
		for (size_t i = 0; i < n; i++)
			dst[i] = lower(src[i]);
		return;
	}
	uint64_t last = lower8(ld64(src + n - 8)); /* read first: dst may be src */
	for (size_t i = 0; i + 8 < n; i += 8)
		st64(dst + i, lower8(ld64(src + i)));
	st64(dst + n - 8, last);
}

/* a[0..n) == lc[0..n) ignoring the case of a; lc is lower case already. */
static inline bool equal_lc(const uint8_t *a, const uint8_t *lc, size_t n)
{
	if (n < 8) {
		for (size_t i = 0; i < n; i++)
			if (lower(a[i]) != lc[i])
				return false;
		return true;
	}
	for (size_t i = 0; i + 8 < n; i += 8)
		if (lower8(ld64(a + i)) != ld64(lc + i))
			return false;
	return lower8(ld64(a + n - 8)) == ld64(lc + n - 8);
}

static inline bool bytes_equal_ci(const uint8_t *a, const uint8_t *b, size_t n)
{
	if (n < 8) {
		for (size_t i = 0; i < n; i++)
			if (lower(a[i]) != lower(b[i]))
				return false;
		return true;
	}
	for (size_t i = 0; i + 8 < n; i += 8)
		if (lower8(ld64(a + i)) != lower8(ld64(b + i)))
			return false;
	return lower8(ld64(a + n - 8)) == lower8(ld64(b + n - 8));
}
