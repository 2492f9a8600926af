/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_lpm: build and lookup speed and memory of the LPM table, printed as a markdown table. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "partition/lpm.h"
#include "partition/prefix.h"

struct spec {
	const char *name;
	size_t n4, n6;
};

static const struct spec full_specs[] = {
	{ "IPv4 1k", 1000, 0 },
	{ "IPv4 100k", 100000, 0 },
	{ "IPv4 1M", 1000000, 0 },
	{ "IPv6 20k", 0, 20000 },
	{ "IPv6 200k", 0, 200000 },
	{ "province 100k v4 + 20k v6", 100000, 20000 },
};

static const struct spec smoke_specs[] = {
	{ "IPv4 1k", 1000, 0 },
	{ "IPv6 1k", 0, 1000 },
	{ "mixed 2k + 500", 2000, 500 },
};

/* splitmix64. */
static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* A length mix resembling routing tables: IPv4 mostly /16../24, IPv6 /32, /48, /56. */
static unsigned random_len(uint64_t *s, int family)
{
	static const unsigned mix4[] = { 8, 11, 12, 13, 14, 15, 16, 16, 16, 17, 18, 19, 19, 20, 20,
	                                 21, 21, 22, 22, 22, 23, 23, 24, 24, 24, 24, 24, 24, 24, 24,
	                                 24, 24, 24, 25, 26, 27, 28, 29, 30, 32 };
	static const unsigned mix6[] = { 19, 20, 24, 28, 29, 30, 32, 32, 32, 32, 33, 34, 36, 40, 40,
	                                 44, 44, 46, 47, 48, 48, 48, 48, 48, 48, 48, 48, 52, 56, 56,
	                                 56, 60, 64, 64, 128 };
	if (family == AF_INET)
		return mix4[rnd(s) % (sizeof(mix4) / sizeof(mix4[0]))];
	return mix6[rnd(s) % (sizeof(mix6) / sizeof(mix6[0]))];
}

/* A random prefix: IPv4 anywhere, IPv6 inside 2000::/3 (global unicast). */
static void random_prefix(uint64_t *s, int family, struct prefix *p)
{
	memset(p, 0, sizeof(*p));
	p->family = (uint8_t)family;
	p->len = (uint8_t)random_len(s, family);
	uint64_t a = rnd(s), b = rnd(s);
	memcpy(p->addr, &a, 8);
	memcpy(p->addr + 8, &b, 8);
	if (family == AF_INET6)
		p->addr[0] = (uint8_t)(0x20 | (p->addr[0] & 0x1F));
	prefix_mask(p);
}

/* A random address inside p. */
static void random_addr_in(uint64_t *s, const struct prefix *p, uint8_t *out)
{
	unsigned bytes = prefix_family_bits(p->family) / 8;
	uint64_t a = rnd(s), b = rnd(s);
	memcpy(out, &a, 8);
	memcpy(out + 8, &b, 8);
	for (unsigned i = 0; i < bytes; i++) {
		unsigned keep = p->len > i * 8 ? p->len - i * 8 : 0;
		uint8_t m = keep >= 8 ? 0xFF : (uint8_t)(0xFF00u >> keep);
		out[i] = (uint8_t)((p->addr[i] & m) | (out[i] & ~m));
	}
}

/* Lookup input: family per address and 16 bytes each. */
struct addrs {
	size_t n;
	uint8_t *family;
	uint8_t (*addr)[16];
};

static int addrs_alloc(struct addrs *a, size_t n)
{
	a->n = n;
	a->family = malloc(n);
	a->addr = malloc(n * 16);
	return a->family != NULL && a->addr != NULL ? 0 : -ENOMEM;
}

static void addrs_free(struct addrs *a)
{
	free(a->family);
	free(a->addr);
}

/* Keeps the compiler from dropping lookups. */
static volatile uint32_t sink;
/* Never a lookup result; read through a volatile so the chain stays real. */
static volatile uint32_t never = LPM_NONE - 0x5EED;

/* Independent lookups: the CPU may overlap their cache misses (throughput). */
static double round_independent(const struct lpm *t, const struct addrs *a)
{
	uint32_t acc = 0;
	double t0 = now_ns();
	for (size_t i = 0; i < a->n; i++)
		acc += lpm_lookup(t, a->family[i], a->addr[i], NULL);
	double t1 = now_ns();
	sink = acc;
	return (t1 - t0) / (double)a->n;
}

/* Each lookup's address depends on the previous result (latency). */
static double round_dependent(const struct lpm *t, const struct addrs *a)
{
	uint32_t nv = never, v = 0, acc = 0;
	double t0 = now_ns();
	for (size_t i = 0; i < a->n; i++) {
		size_t j = i - (v == nv);
		v = lpm_lookup(t, a->family[j], a->addr[j], NULL);
		acc += v;
	}
	double t1 = now_ns();
	sink = acc;
	return (t1 - t0) / (double)a->n;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

struct stat2 {
	double best, median;
};

static struct stat2 measure(double (*fn)(const struct lpm *, const struct addrs *),
                            const struct lpm *t, const struct addrs *a, unsigned rounds)
{
	double r[64];
	if (rounds > 64)
		rounds = 64;
	fn(t, a); /* warm up caches and page tables */
	for (unsigned i = 0; i < rounds; i++)
		r[i] = fn(t, a);
	qsort(r, rounds, sizeof(r[0]), cmp_double);
	return (struct stat2){ r[0], r[rounds / 2] };
}

struct options {
	bool smoke;
	size_t lookups;
	unsigned rounds;
	uint64_t seed;
	const char *only; /* run only tables whose name contains this */
};

/* Build one table, measure it, print its row. @return 0, or 1 when a check failed. */
static int bench_one(const struct spec *sp, const struct options *o)
{
	uint64_t s = o->seed;
	size_t total = sp->n4 + sp->n6;
	struct prefix *pre = malloc(total * sizeof(*pre));
	struct lpm *t = lpm_new();
	struct addrs rand_a = { 0 }, hit_a = { 0 };
	int failed = 1;
	if (pre == NULL || t == NULL || addrs_alloc(&rand_a, o->lookups) != 0 ||
	    addrs_alloc(&hit_a, o->lookups) != 0) {
		fprintf(stderr, "bench_lpm: out of memory\n");
		goto out;
	}

	/* Unique prefixes first, so insert time is measured without the retries. */
	struct lpm *dedup = lpm_new();
	if (dedup == NULL)
		goto out;
	for (size_t i = 0; i < total;) {
		random_prefix(&s, i < sp->n4 ? AF_INET : AF_INET6, &pre[i]);
		int rc = lpm_insert(dedup, &pre[i], 1, NULL);
		if (rc == 0)
			i++;
		else if (rc != -EEXIST) {
			lpm_free(dedup);
			goto out;
		}
	}
	lpm_free(dedup);

	double t0 = now_ns();
	for (size_t i = 0; i < total; i++)
		if (lpm_insert(t, &pre[i], (uint32_t)i, NULL) != 0) {
			fprintf(stderr, "bench_lpm: insert failed\n");
			goto out;
		}
	double t1 = now_ns();
	if (lpm_build(t) != 0) {
		fprintf(stderr, "bench_lpm: build failed\n");
		goto out;
	}
	double t2 = now_ns();

	for (size_t i = 0; i < o->lookups; i++) {
		/* Same family mix as the table. */
		size_t k = (size_t)(rnd(&s) % total);
		const struct prefix *p = &pre[k];
		rand_a.family[i] = p->family;
		uint64_t a = rnd(&s), b = rnd(&s);
		memcpy(rand_a.addr[i], &a, 8);
		memcpy(rand_a.addr[i] + 8, &b, 8);
		if (p->family == AF_INET6)
			rand_a.addr[i][0] = (uint8_t)(0x20 | (rand_a.addr[i][0] & 0x1F));
		hit_a.family[i] = p->family;
		random_addr_in(&s, p, hit_a.addr[i]);
	}

	/* Every "hit" address lies in a table prefix: it must match one containing it. */
	for (size_t i = 0; i < o->lookups; i++) {
		struct prefix m, host;
		uint32_t v = lpm_lookup(t, hit_a.family[i], hit_a.addr[i], &m);
		prefix_from_addr(&host, hit_a.family[i], hit_a.addr[i]);
		if (v == LPM_NONE || v >= total || !prefix_contains(&m, &host) ||
		    !prefix_equal(&m, &pre[v])) {
			fprintf(stderr, "bench_lpm: %s: lookup %zu found no containing prefix\n", sp->name, i);
			goto out;
		}
	}

	struct stat2 r = measure(round_independent, t, &rand_a, o->rounds);
	struct stat2 h = measure(round_independent, t, &hit_a, o->rounds);
	struct stat2 d = measure(round_dependent, t, &hit_a, o->rounds);
	printf("| %s | %zu | %.1f | %.1f | %.1f | %.1f / %.1f | %.1f / %.1f | %.1f / %.1f |\n", sp->name,
	       lpm_count(t), (t1 - t0) / 1e6, (t2 - t1) / 1e6, (double)lpm_memory(t) / (1024.0 * 1024.0),
	       r.best, r.median, h.best, h.median, d.best, d.median);
	fflush(stdout);
	failed = 0;
out:
	addrs_free(&rand_a);
	addrs_free(&hit_a);
	lpm_free(t);
	free(pre);
	return failed;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: bench_lpm [--smoke] [--lookups N] [--rounds R] [--seed S] [--only TEXT]\n"
	           "  --smoke      tiny tables, one round: checks that it runs (ctest)\n"
	           "  --lookups N  addresses per round (default 1000000)\n"
	           "  --rounds R   rounds per measurement, best and median reported (default 7)\n"
	           "  --seed S     random seed (default 1)\n"
	           "  --only TEXT  only the tables whose name contains TEXT\n");
}

static int parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || s[0] == '-' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	struct options o = { .smoke = false, .lookups = 1000000, .rounds = 7, .seed = 1 };
	static const struct option longopts[] = {
		{ "smoke", no_argument, NULL, 'S' },   { "lookups", required_argument, NULL, 'n' },
		{ "rounds", required_argument, NULL, 'r' }, { "seed", required_argument, NULL, 's' },
		{ "only", required_argument, NULL, 'o' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	uint64_t v;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'S':
			o.smoke = true;
			break;
		case 'n':
			if (parse_size(optarg, 1, 100000000, &v) != 0) {
				fprintf(stderr, "bench_lpm: bad --lookups '%s'\n", optarg);
				return 2;
			}
			o.lookups = (size_t)v;
			break;
		case 'r':
			if (parse_size(optarg, 1, 64, &v) != 0) {
				fprintf(stderr, "bench_lpm: bad --rounds '%s' (1..64)\n", optarg);
				return 2;
			}
			o.rounds = (unsigned)v;
			break;
		case 's':
			if (parse_size(optarg, 0, UINT64_MAX, &v) != 0) {
				fprintf(stderr, "bench_lpm: bad --seed '%s'\n", optarg);
				return 2;
			}
			o.seed = v;
			break;
		case 'o':
			o.only = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	const struct spec *specs = full_specs;
	size_t nspecs = sizeof(full_specs) / sizeof(full_specs[0]);
	if (o.smoke) {
		specs = smoke_specs;
		nspecs = sizeof(smoke_specs) / sizeof(smoke_specs[0]);
		o.lookups = 20000;
		o.rounds = 1;
	}

	printf("lookups per round: %zu, rounds: %u, seed: %" PRIu64 "\n\n", o.lookups, o.rounds, o.seed);
	printf("| table | prefixes | insert ms | build ms | memory MiB | random ns best / median | "
	       "hit ns best / median | hit, dependent ns best / median |\n");
	printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
	int rc = 0;
	for (size_t i = 0; i < nspecs; i++)
		if (o.only == NULL || strstr(specs[i].name, o.only) != NULL)
			rc |= bench_one(&specs[i], &o);
	return rc;
}
