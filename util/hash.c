/* SPDX-License-Identifier: BSD-3-Clause */
/* Keys for util/hash.h. */
#include "util/hash.h"

#include <sys/random.h>
#include <time.h>

/* splitmix64: spreads a seed over the three secrets. */
static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

void hash_key_fixed(struct hash_key *k, uint64_t seed)
{
	for (int i = 0; i < 3; i++)
		k->s[i] = splitmix(&seed) | 1; /* odd: never a zero factor */
}

void hash_key_random(struct hash_key *k)
{
	uint64_t seed;
	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != (ssize_t)sizeof(seed)) {
		/* no entropy yet (early boot): still differs per process and start */
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		seed = ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)(uintptr_t)k << 16);
	}
	hash_key_fixed(k, seed);
}
