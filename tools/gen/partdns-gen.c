/* SPDX-License-Identifier: BSD-3-Clause */
/* partdns-gen: a deterministic synthetic province partition table (YAML or "prefix city" lines). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "partition/prefix.h"
#include "util/vec.h"

/*
 * Address plan (synthetic; none of it is sent on the wire). City i (0-based):
 *   mapped   198.51.100.(i+1)/32 and mapped6 2001:db8:(i+1)::/56, both also
 *            listed as the city's own prefixes so a check "mapped address
 *            inside the partition" passes;
 *   public   /16 blocks from a seeded shuffle of public-looking /8s, a
 *            disjoint share per city;
 *   private  10.(16i).0.0/12, 172.(16+i).0.0/16, 192.168.(16i).0.0/20;
 *   CGNAT    100.(64+4i).0.0/14;
 *   IPv6     2001:db8:(i+1)00::/40, 240e:(100+i)::/32, 2409:(8020+i)::/32,
 *            fd00:(i+1)::/32.
 * Every pool is disjoint from every other, and each pool is carved into
 * disjoint prefixes by random binary splitting, so no prefix repeats or
 * overlaps another.
 */

struct city {
	const char *name;
	const char *label; /* also the geofeed city name */
};

static const struct city cities[] = {
	{ "nanjing", "Nanjing" },     { "suzhou", "Suzhou" },         { "wuxi", "Wuxi" },
	{ "changzhou", "Changzhou" }, { "xuzhou", "Xuzhou" },         { "nantong", "Nantong" },
	{ "yangzhou", "Yangzhou" },   { "zhenjiang", "Zhenjiang" },   { "taizhou", "Taizhou" },
	{ "yancheng", "Yancheng" },   { "huaian", "Huai'an" },        { "lianyungang", "Lianyungang" },
	{ "suqian", "Suqian" },
};
enum { NCITIES = sizeof(cities) / sizeof(cities[0]) };

/* Public-looking /8s: no special-purpose, private, CGNAT or TEST-NET space. */
static const uint8_t public8[] = {
	14,  27,  36,  39,  42,  49,  58,  59,  60,  61,  101, 106, 110, 111, 112, 113, 114,
	115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 139, 140, 144, 150, 153, 157,
	163, 171, 175, 180, 182, 183, 202, 210, 211, 218, 219, 220, 221, 222, 223,
};
enum { NPUBLIC16 = sizeof(public8) * 256, PUBLIC16_PER_CITY = NPUBLIC16 / NCITIES };

#define DEFAULT_V4 8000
#define DEFAULT_V6 1500
#define MAX_PER_CITY 400000
#define V4_MAXLEN 30
#define V6_MAXLEN 64

/* A block: address as two big-endian halves (IPv4 in the top 32 bits of hi). */
struct blk {
	int family;
	uint64_t hi, lo;
	unsigned len;
};

struct prefixes {
	struct prefix *p;
	size_t n, cap;
};

struct gen {
	uint64_t rng;
	struct prefixes out; /* the current city's prefixes */
};

/* splitmix64: tiny, seedable, identical everywhere. */
static uint64_t rnd(struct gen *g)
{
	uint64_t z = (g->rng += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static uint64_t rnd_below(struct gen *g, uint64_t n)
{
	return n ? rnd(g) % n : 0;
}

static struct blk blk4(uint32_t addr, unsigned len)
{
	return (struct blk){ AF_INET, (uint64_t)addr << 32, 0, len };
}

/* IPv6 block from its first four 16-bit groups. */
static struct blk blk6(uint16_t g0, uint16_t g1, uint16_t g2, uint16_t g3, unsigned len)
{
	return (struct blk){ AF_INET6, (uint64_t)g0 << 48 | (uint64_t)g1 << 32 | (uint64_t)g2 << 16 | g3, 0,
	                     len };
}

/* One half of b (which = 0 lower, 1 upper). */
static struct blk half(struct blk b, unsigned which)
{
	b.len++;
	if (which) {
		unsigned bit = b.len - 1;
		if (bit < 64)
			b.hi |= 1ull << (63 - bit);
		else
			b.lo |= 1ull << (127 - bit);
	}
	return b;
}

/* How many disjoint prefixes of at most maxlen bits fit in a block of len. */
static uint64_t capacity(unsigned len, unsigned maxlen)
{
	if (len > maxlen)
		return 0;
	return maxlen - len >= 40 ? UINT64_MAX / 2 : 1ull << (maxlen - len);
}

static int emit(struct gen *g, const struct blk *b)
{
	struct prefixes *o = &g->out;
	if (vec_grow(&o->p, &o->cap, o->n + 1, sizeof(*o->p), SIZE_MAX) != 0)
		return -ENOMEM;
	struct prefix *p = &o->p[o->n++];
	memset(p, 0, sizeof(*p));
	p->family = (uint8_t)b->family;
	p->len = (uint8_t)b->len;
	for (int i = 0; i < 8; i++) {
		p->addr[i] = (uint8_t)(b->hi >> (56 - 8 * i));
		p->addr[8 + i] = (uint8_t)(b->lo >> (56 - 8 * i));
	}
	return 0;
}

/*
 * k disjoint prefixes inside b, in address order: split in two, share k
 * between the halves with some imbalance (so lengths vary), and when one
 * prefix is left, sometimes take a part of the block instead of all of it
 * (so there are gaps, as in real plans).
 */
static int carve(struct gen *g, struct blk b, uint64_t k, unsigned maxlen, unsigned descend_pct)
{
	if (k == 0)
		return 0;
	if (k == 1) {
		while (b.len < maxlen && rnd_below(g, 100) < descend_pct)
			b = half(b, (unsigned)(rnd(g) & 1));
		/* IPv6 plans use nibble boundaries. */
		while (b.family == AF_INET6 && b.len % 4 != 0 && b.len < maxlen)
			b = half(b, (unsigned)(rnd(g) & 1));
		return emit(g, &b);
	}
	uint64_t cap = capacity(b.len + 1, maxlen);
	uint64_t spread = k / 4 + 1;
	uint64_t k1 = k / 2 - spread / 2 + rnd_below(g, spread + 1);
	if (k1 > k)
		k1 = k / 2;
	if (k1 > cap)
		k1 = cap;
	if (k - k1 > cap)
		k1 = k - cap;
	int rc = carve(g, half(b, 0), k1, maxlen, descend_pct);
	if (rc == 0)
		rc = carve(g, half(b, 1), k - k1, maxlen, descend_pct);
	return rc;
}

struct options {
	uint64_t seed;
	uint64_t v4, v6; /* per city, mapped prefixes included */
	bool plain;
	const char *out;
};

/* Public /16 blocks (as addr >> 16), shuffled by the seed. */
static void shuffle_public(struct gen *g, uint32_t *pool)
{
	for (size_t i = 0; i < NPUBLIC16; i++)
		pool[i] = (uint32_t)public8[i / 256] << 8 | (uint32_t)(i % 256);
	for (size_t i = NPUBLIC16 - 1; i > 0; i--) {
		size_t j = (size_t)rnd_below(g, i + 1);
		uint32_t t = pool[i];
		pool[i] = pool[j];
		pool[j] = t;
	}
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* A pool carved for every city: share in percent of the count, capped. */
struct pool {
	struct blk (*block)(unsigned city);
	unsigned share_pct;
};

static struct blk pool_10(unsigned c) { return blk4(10u << 24 | (16 * c) << 16, 12); }
static struct blk pool_172(unsigned c) { return blk4(172u << 24 | (16 + c) << 16, 16); }
static struct blk pool_192(unsigned c) { return blk4(192u << 24 | 168u << 16 | (16 * c) << 8, 20); }
static struct blk pool_cgnat(unsigned c) { return blk4(100u << 24 | (64 + 4 * c) << 16, 14); }
static struct blk pool_db8(unsigned c) { return blk6(0x2001, 0x0db8, (uint16_t)((c + 1) << 8), 0, 40); }
static struct blk pool_240e(unsigned c) { return blk6(0x240e, (uint16_t)(0x100 + c), 0, 0, 32); }
static struct blk pool_2409(unsigned c) { return blk6(0x2409, (uint16_t)(0x8020 + c), 0, 0, 32); }
static struct blk pool_ula(unsigned c) { return blk6(0xfd00, (uint16_t)(c + 1), 0, 0, 32); }

static const struct pool pools4[] = {
	{ pool_10, 18 }, { pool_172, 4 }, { pool_192, 2 }, { pool_cgnat, 12 },
};
static const struct pool pools6[] = {
	{ pool_db8, 45 }, { pool_240e, 30 }, { pool_2409, 20 }, { pool_ula, 5 },
};

/*
 * Carve each pool's share of total from city c's pools, at most a quarter of
 * a pool's capacity (so prefixes stay realistic), and less when *left runs
 * out; with rest_to_last the last pool takes whatever is left.
 */
static int carve_pools(struct gen *g, const struct pool *pools, size_t npools, unsigned c,
                       uint64_t total, uint64_t *left, bool rest_to_last, unsigned maxlen,
                       unsigned descend_pct)
{
	for (size_t i = 0; i < npools; i++) {
		struct blk b = pools[i].block(c);
		uint64_t k = total * pools[i].share_pct / 100, cap = capacity(b.len, maxlen) / 4;
		if (rest_to_last && i + 1 == npools)
			k = *left;
		if (k > cap)
			k = cap;
		if (k > *left)
			k = *left;
		int rc = carve(g, b, k, maxlen, descend_pct);
		if (rc != 0)
			return rc;
		*left -= k;
	}
	return 0;
}

/* All prefixes of city c into g->out (emptied first). */
static int gen_city(struct gen *g, const struct options *o, unsigned c, const uint32_t *public16)
{
	g->out.n = 0;
	struct blk mapped = blk4(198u << 24 | 51u << 16 | 100u << 8 | (c + 1), 32);
	int rc = emit(g, &mapped);
	uint64_t left = o->v4 - 1;
	if (rc == 0)
		rc = carve_pools(g, pools4, sizeof(pools4) / sizeof(pools4[0]), c, o->v4, &left, false,
		                 V4_MAXLEN, 30);
	if (rc != 0)
		return rc;

	/* The rest is public: spread over this city's /16 blocks, ~40 per block. */
	uint64_t nblocks = left / 40 + 1;
	if (nblocks > PUBLIC16_PER_CITY)
		nblocks = PUBLIC16_PER_CITY;
	uint32_t blocks[PUBLIC16_PER_CITY];
	memcpy(blocks, public16 + (size_t)c * PUBLIC16_PER_CITY, (size_t)nblocks * sizeof(blocks[0]));
	qsort(blocks, (size_t)nblocks, sizeof(blocks[0]), cmp_u32);
	for (uint64_t i = 0; i < nblocks && rc == 0; i++) {
		/* An even share of what is left, jittered by up to a half. */
		uint64_t share = left / (nblocks - i);
		if (i + 1 < nblocks && share > 1)
			share = share / 2 + rnd_below(g, share + 1);
		if (i + 1 == nblocks || share > left)
			share = left;
		if (share > capacity(16, V4_MAXLEN))
			share = capacity(16, V4_MAXLEN);
		rc = carve(g, blk4(blocks[i] << 16, 16), share, V4_MAXLEN, 30);
		left -= share;
	}
	if (rc == 0 && left != 0)
		rc = -ENOSPC;
	if (rc != 0)
		return rc;

	struct blk mapped6 = blk6(0x2001, 0x0db8, (uint16_t)(c + 1), 0, 56);
	rc = emit(g, &mapped6);
	left = o->v6 - 1;
	if (rc == 0)
		rc = carve_pools(g, pools6, sizeof(pools6) / sizeof(pools6[0]), c, o->v6 - 1, &left, true,
		                 V6_MAXLEN, 45);
	return rc == 0 && left != 0 ? -ENOSPC : rc;
}

/* YAML scalar: plain when it is a simple word, else double-quoted. */
static void yaml_scalar(FILE *f, const char *s)
{
	bool plain = s[0] != '\0';
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '-' || *p == '.' || *p == '/'))
			plain = false;
	if (plain) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (const char *p = s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fputc('\\', f);
		fputc(*p, f);
	}
	fputc('"', f);
}

static int write_city(FILE *f, const struct options *o, unsigned c, const struct prefixes *ps)
{
	char buf[PREFIX_STRLEN];
	const struct city *ci = &cities[c];
	if (!o->plain) {
		fprintf(f, "  - name: %s\n    label: ", ci->name);
		yaml_scalar(f, ci->label);
		fputs("\n    country: CN\n    region: CN-JS\n    city: ", f);
		yaml_scalar(f, ci->label);
		fprintf(f, "\n    mapped: 198.51.100.%u\n    mapped6: \"2001:db8:%x::/56\"\n    prefixes:\n",
		        c + 1, c + 1);
	}
	for (size_t i = 0; i < ps->n; i++) {
		if (prefix_format(&ps->p[i], buf, sizeof(buf)) < 0)
			return -EINVAL;
		if (o->plain)
			fprintf(f, "%s %s\n", buf, ci->name);
		else if (ps->p[i].family == AF_INET6)
			fprintf(f, "      - \"%s\"\n", buf);
		else
			fprintf(f, "      - %s\n", buf);
	}
	return ferror(f) ? -EIO : 0;
}

static int generate(FILE *f, const struct options *o)
{
	struct gen g = { .rng = o->seed };
	uint32_t *public16 = malloc(NPUBLIC16 * sizeof(*public16));
	if (public16 == NULL)
		return -ENOMEM;
	shuffle_public(&g, public16);

	fprintf(f, "# generated by partdns-gen --seed %" PRIu64 " --prefixes-per-city %" PRIu64
	           " --v6-per-city %" PRIu64 " --format %s\n",
	        o->seed, o->v4, o->v6, o->plain ? "plain" : "yaml");
	fprintf(f, "# %u partitions, %" PRIu64 " IPv4 + %" PRIu64
	           " IPv6 prefixes; synthetic data, not a real address plan\n",
	        NCITIES, o->v4 * NCITIES, o->v6 * NCITIES);
	if (!o->plain)
		fputs("unmatched: common\nlist:\n", f);
	int rc = 0;
	for (unsigned c = 0; c < NCITIES && rc == 0; c++) {
		rc = gen_city(&g, o, c, public16);
		if (rc == 0)
			rc = write_city(f, o, c, &g.out);
	}
	free(g.out.p);
	free(public16);
	return rc;
}

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: partdns-gen [--seed N] [--prefixes-per-city N] [--v6-per-city N]\n"
	        "                   [--format yaml|plain] [-o FILE] | -V | -h\n"
	        "Writes a synthetic partition table of %u Jiangsu cities: the body of the\n"
	        "config's partitions: section (yaml, usable as partitions.include) or\n"
	        "\"PREFIX CITY\" lines (plain). The same options give the same bytes.\n"
	        "  --seed N               pseudo-random seed (default 1)\n"
	        "  --prefixes-per-city N  IPv4 prefixes per city, mapped /32 included (default %u)\n"
	        "  --v6-per-city N        IPv6 prefixes per city, mapped6 /56 included (default %u)\n"
	        "  --format yaml|plain    output format (default yaml)\n"
	        "  -o FILE                write to FILE instead of standard output\n"
	        "  -V, --version          print the version\n"
	        "  -h, --help             this text\n",
	        NCITIES, DEFAULT_V4, DEFAULT_V6);
}

static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || s[0] < '0' || s[0] > '9' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	struct options o = { .seed = 1, .v4 = DEFAULT_V4, .v6 = DEFAULT_V6 };
	static const struct option longopts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "prefixes-per-city", required_argument, NULL, 'n' },
		{ "v6-per-city", required_argument, NULL, '6' },
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "o:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (parse_u64(optarg, 0, UINT64_MAX, &o.seed) != 0) {
				fprintf(stderr, "partdns-gen: bad --seed '%s'\n", optarg);
				return 2;
			}
			break;
		case 'n':
		case '6':
			if (parse_u64(optarg, 1, MAX_PER_CITY, c == 'n' ? &o.v4 : &o.v6) != 0) {
				fprintf(stderr, "partdns-gen: bad --%s '%s' (1..%u)\n",
				        c == 'n' ? "prefixes-per-city" : "v6-per-city", optarg, MAX_PER_CITY);
				return 2;
			}
			break;
		case 'f':
			if (strcmp(optarg, "yaml") == 0)
				o.plain = false;
			else if (strcmp(optarg, "plain") == 0)
				o.plain = true;
			else {
				fprintf(stderr, "partdns-gen: bad --format '%s' (yaml or plain)\n", optarg);
				return 2;
			}
			break;
		case 'o':
			o.out = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V': /* as partdns and partdnsctl */
			printf("partdns-gen %s\n", PARTDNS_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "partdns-gen: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}

	FILE *f = stdout;
	if (o.out != NULL && (f = fopen(o.out, "w")) == NULL) {
		fprintf(stderr, "partdns-gen: cannot open %s: %s\n", o.out, strerror(errno));
		return 1;
	}
	int rc = generate(f, &o);
	if (fflush(f) != 0 || ferror(f))
		rc = rc ? rc : -EIO;
	if (f != stdout && fclose(f) != 0)
		rc = rc ? rc : -EIO;
	if (rc != 0) {
		fprintf(stderr, "partdns-gen: cannot write %s: %s\n", o.out ? o.out : "standard output",
		        strerror(-rc));
		return 1;
	}
	return 0;
}
