/* SPDX-License-Identifier: BSD-3-Clause */
/* The project's one hash: keyed, for every table whose keys come from outside (names, addresses). */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * Keys of a table are often chosen by whoever sends us packets (query names,
 * upstream names), so the hash is keyed with random secrets: without them a
 * flood of colliding keys could pile into one chain. Inputs are XORed with
 * the secrets before each multiply so a key cannot force a zero factor. The
 * mixing step is a 64x64->128 multiply folded to 64 bits (wyhash-like), 8
 * bytes per step: a name hashes in a few tens of instructions, which matters
 * on the cache-hit path.
 */
struct hash_key {
	uint64_t s[3];
};

/** Fill k with random secrets (getrandom; a clock-derived fallback). */
void hash_key_random(struct hash_key *k);

/** A fixed key, for tables whose keys the operator chose (tests, reproducible layouts). */
void hash_key_fixed(struct hash_key *k, uint64_t seed);

static inline uint64_t hash_mum(uint64_t a, uint64_t b)
{
	__extension__ unsigned __int128 r = (unsigned __int128)a * b;
	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static inline uint64_t hash_rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint64_t hash_rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

/** Hash n bytes at p under key k. Every bit of the result depends on the key. */
static inline uint64_t hash_bytes(const struct hash_key *k, const void *data, size_t len)
{
	const uint8_t *p = data;
	const uint64_t s0 = k->s[0], s1 = k->s[1];
	uint64_t h = k->s[2] ^ hash_mum(len ^ s0, s1);
	size_t n = len;
	uint64_t a = 0, b = 0;

	while (n > 16) {
		h = hash_mum(hash_rd64(p) ^ s0, hash_rd64(p + 8) ^ h);
		p += 16;
		n -= 16;
	}
	if (n > 8) {
		a = hash_rd64(p);
		b = hash_rd64(p + n - 8);
	} else if (n >= 4) {
		a = hash_rd32(p);
		b = hash_rd32(p + n - 4);
	} else if (n > 0) {
		a = ((uint64_t)p[0] << 16) | ((uint64_t)p[n >> 1] << 8) | p[n - 1];
	}
	return hash_mum(s1 ^ len, hash_mum(a ^ s0, b ^ h));
}
