/* SPDX-License-Identifier: BSD-3-Clause */
/* Micro-benchmark of resolver/cache: lookup (hit path) and mixed throughput per thread count. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "resolver/cache/cache.h"

/*
 * Usage: bench_cache [threads] [seconds] [nshards] [reps]
 * Loads NKEYS keys shaped like the resolver's (a ~40-byte name + class,
 * type, partition) with 200-byte values into a 256 MiB cache, then for each
 * workload runs `threads` threads for `seconds`, `reps` times, and prints
 * the best and median throughput (shared VMs are noisy: best-of is the
 * cache's cost, the median shows the noise). fn copies the value out, as
 * the resolver copies the answer. A baseline line gives this machine's
 * dependent random-load latency over a working set like the cache's, since
 * the large-key-set workload is bound by it.
 */

enum { NKEYS = 200000, KEYMAX = 64, VLEN = 200 };

struct workload {
	const char *name;
	unsigned lookup_pct; /* the rest are inserts */
	unsigned key_span;   /* keys drawn from the first key_span keys */
};

static const struct workload workloads[] = {
	{ "hit 100% (200k keys)", 100, NKEYS },
	{ "hit 100% (1k hot keys)", 100, 1000 },
	{ "90% lookup / 10% insert", 90, NKEYS },
	{ "50% lookup / 50% insert", 50, NKEYS },
};

static uint8_t keys[NKEYS][KEYMAX];
static size_t klens[NKEYS];
static struct cache *cache;
static atomic_bool stop;

struct worker {
	pthread_t th;
	const struct workload *w;
	uint64_t seed;
	uint64_t ops;
};

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static int copy_fn(const uint8_t *val, size_t vlen, const struct cache_hit *hit, void *arg)
{
	memcpy(arg, val, vlen);
	return (int)vlen;
}

static void *worker_run(void *p)
{
	struct worker *wk = p;
	uint8_t buf[VLEN], val[VLEN];
	memset(val, 'v', sizeof(val));
	uint64_t ops = 0;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (int i = 0; i < 256; i++) {
			uint64_t r = xorshift(&wk->seed);
			size_t k = (size_t)(r >> 8) % wk->w->key_span;
			if (r % 100 < wk->w->lookup_pct) {
				cache_lookup(cache, keys[k], klens[k], 10, copy_fn, buf);
			} else {
				cache_insert(cache, keys[k], klens[k], val, VLEN, 10, 3600);
			}
		}
		ops += 256;
	}
	wk->ops = ops;
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Nanoseconds per dependent load walking a random cycle over `bytes` of memory. */
static double chase_ns(size_t bytes)
{
	size_t n = bytes / sizeof(size_t);
	size_t *next = malloc(n * sizeof(*next));
	if (next == NULL)
		return 0;
	/* Sattolo's shuffle: one cycle through every slot. */
	for (size_t i = 0; i < n; i++)
		next[i] = i;
	uint64_t seed = 88172645463325252ull;
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = (size_t)(xorshift(&seed) % i);
		size_t t = next[i];
		next[i] = next[j];
		next[j] = t;
	}
	const size_t steps = 10 * 1000 * 1000;
	size_t p = 0;
	double t0 = now_s();
	for (size_t i = 0; i < steps; i++)
		p = next[p];
	double dt = now_s() - t0;
	free(next);
	return p == SIZE_MAX ? 0 : dt * 1e9 / (double)steps; /* use p */
}

/* One timed run of w with nthreads threads; million operations per second, or -1. */
static double run(const struct workload *w, unsigned nthreads, double seconds)
{
	struct worker *wk = calloc(nthreads, sizeof(*wk));
	if (wk == NULL)
		return -1;
	atomic_store(&stop, false);
	double t0 = now_s();
	unsigned started = 0;
	for (; started < nthreads; started++) {
		wk[started].w = w;
		wk[started].seed = 0x9e3779b97f4a7c15ull * (started + 1);
		if (pthread_create(&wk[started].th, NULL, worker_run, &wk[started]) != 0)
			break;
	}
	if (started == nthreads) {
		struct timespec ts = { (time_t)seconds,
				       (long)((seconds - (double)(time_t)seconds) * 1e9) };
		nanosleep(&ts, NULL);
	}
	atomic_store(&stop, true);
	uint64_t ops = 0;
	for (unsigned i = 0; i < started; i++) {
		pthread_join(wk[i].th, NULL);
		ops += wk[i].ops;
	}
	double dt = now_s() - t0;
	free(wk);
	return started == nthreads ? (double)ops / dt / 1e6 : -1;
}

static int cmp_desc(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x < y) - (x > y);
}

int main(int argc, char **argv)
{
	unsigned nthreads = argc > 1 ? (unsigned)atoi(argv[1]) : 2;
	double seconds = argc > 2 ? atof(argv[2]) : 1.0;
	unsigned nshards = argc > 3 ? (unsigned)atoi(argv[3]) : 0;
	unsigned reps = argc > 4 ? (unsigned)atoi(argv[4]) : 5;
	if (nthreads == 0 || nthreads > 256 || seconds <= 0 || reps == 0 || reps > 100) {
		fprintf(stderr, "usage: %s [threads 1..256] [seconds] [nshards] [reps 1..100]\n",
			argv[0]);
		return 2;
	}
	cache = cache_new((size_t)256 << 20, nshards);
	if (cache == NULL) {
		perror("cache_new");
		return 1;
	}
	uint8_t val[VLEN];
	memset(val, 'v', sizeof(val));
	for (unsigned i = 0; i < NKEYS; i++) {
		/* name, then class/type (4 bytes) and partition id (2 bytes) */
		int n = snprintf((char *)keys[i], KEYMAX - 6, "www%u.some-cdn-customer.example.com.", i);
		memcpy(keys[i] + n, "\0\1\0\1\0\7", 6);
		klens[i] = (size_t)n + 6;
		if (cache_insert(cache, keys[i], klens[i], val, VLEN, 10, 3600) != 0) {
			fprintf(stderr, "preload insert failed\n");
			return 1;
		}
	}
#ifdef CACHE_RWLOCK
	const char *lock = "rwlock";
#else
	const char *lock = "mutex";
#endif
	printf("# bench_cache: lock %s, %u threads, %u x %.1f s per workload, %u shards, "
	       "%d keys of ~%zu bytes, %d-byte values\n", lock, nthreads, reps, seconds,
	       nshards ? nshards : CACHE_DEFAULT_SHARDS, NKEYS, klens[NKEYS / 2], VLEN);
	printf("%-26s %8.1f ns per dependent random load over 64 MiB\n", "baseline",
	       chase_ns((size_t)64 << 20));
	for (size_t w = 0; w < sizeof(workloads) / sizeof(workloads[0]); w++) {
		double mops[100];
		for (unsigned rep = 0; rep < reps; rep++)
			mops[rep] = run(&workloads[w], nthreads, seconds);
		qsort(mops, reps, sizeof(mops[0]), cmp_desc);
		if (mops[reps - 1] < 0) {
			fprintf(stderr, "pthread_create failed\n");
			return 1;
		}
		printf("%-26s %8.2f Mops/s best (%7.1f ns/op/thread), median %6.2f\n",
		       workloads[w].name, mops[0], 1e3 * nthreads / mops[0], mops[reps / 2]);
	}
	struct cache_stats st;
	cache_get_stats(cache, &st);
	printf("# end: %zu entries, %zu of %zu bytes, %llu evictions\n", st.entries, st.bytes,
	       st.max_bytes, (unsigned long long)st.evictions);
	cache_free(cache);
	return 0;
}
