/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. FNV-1a over bytes, for tables keyed by names the operator chose. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Not for attacker-chosen keys at scale: the cache seeds its own hash. */
static inline uint64_t hash_fnv1a(const uint8_t *p, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 1099511628211ULL;
	}
	return h;
}
