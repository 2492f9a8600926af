/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_domains: memory and lookup speed of the EDNS-domain set
 * (resolver/view/domains.c), printed as markdown.
 *
 * Makes a temporary LMDB store of N synthetic domains (a third --subtree,
 * one in 101 policy forward without targets, one in 997 with one of three
 * target sets), loads it, and reports:
 *  - bytes per domain of one loaded set: malloc'd bytes (mallinfo2) and RSS
 *    growth (VmRSS, RssAnon), the store's pages already resident;
 *  - the peak of loading the set again while the first is alive (as the
 *    daemon does on a store change): VmHWM reset before (clear_refs 5);
 *  - domains_match ns/lookup for exact hits, subtree hits, misses against
 *    the set (which holds --subtree entries) and against an exact-only set
 *    of the same names; each over names spread across the whole set and
 *    over 1024 names looked up over and over; medians of several rounds.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "store/store.h"
#include "resolver/view/domains.h"
#include "wire/names.h"
#include "wire/wire.h"

static const char *const tlds[] = { "com", "net", "org", "cn", "com.cn", "net.cn", "io", "tv" };

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

/* A label of lo..hi random letters and digits, no '-' (entries never contain one). */
static size_t rand_label(uint64_t *s, char *out, unsigned lo, unsigned hi)
{
	static const char alpha[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	size_t n = lo + (size_t)(rnd(s) % (hi - lo + 1));
	for (size_t i = 0; i < n; i++)
		out[i] = alpha[rnd(s) % 36];
	out[0] = alpha[rnd(s) % 26]; /* start with a letter */
	return n;
}

static size_t base36(uint64_t v, char *out)
{
	char tmp[16];
	size_t n = 0;
	do {
		tmp[n++] = "0123456789abcdefghijklmnopqrstuvwxyz"[v % 36];
		v /= 36;
	} while (v != 0);
	for (size_t i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	return n;
}

static long status_kb(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (f == NULL)
		return -1;
	char line[256];
	long v = -1;
	size_t fl = strlen(field);
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, field, fl) == 0 && line[fl] == ':') {
			v = strtol(line + fl + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static bool hwm_reset(void)
{
	FILE *f = fopen("/proc/self/clear_refs", "w");
	if (f == NULL)
		return false;
	bool ok = fputs("5", f) >= 0;
	return fclose(f) == 0 && ok;
}

static size_t heap_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

/* ---- names ---- */

/* Wire names packed one after another; off[i] is where name i starts. */
struct names {
	uint8_t *buf;
	size_t len, cap;
	size_t *off;
	size_t n, ncap;
};

static void names_add(struct names *q, const char *text)
{
	uint8_t w[WIRE_MAX_NAME];
	int n = wire_name_from_text(text, w, sizeof(w));
	if (n <= 0) {
		fprintf(stderr, "bench_domains: bad name %s\n", text);
		exit(1);
	}
	if (q->len + (size_t)n + 1 > q->cap) {
		q->cap = q->cap ? q->cap * 2 : 1 << 16;
		q->buf = realloc(q->buf, q->cap);
	}
	if (q->n + 1 > q->ncap) {
		q->ncap = q->ncap ? q->ncap * 2 : 1024;
		q->off = realloc(q->off, q->ncap * sizeof(*q->off));
	}
	if (q->buf == NULL || q->off == NULL) {
		fprintf(stderr, "bench_domains: out of memory\n");
		exit(1);
	}
	q->off[q->n++] = q->len;
	q->buf[q->len++] = (uint8_t)n; /* length, then the name */
	memcpy(q->buf + q->len, w, (size_t)n);
	q->len += (size_t)n;
}

static void names_free(struct names *q)
{
	free(q->buf);
	free(q->off);
	memset(q, 0, sizeof(*q));
}

/* ---- the store ---- */

struct gen {
	size_t n;
	char (*zones)[64];
	size_t nzones;
	struct names exact, subtree; /* the entries' own names, by kind */
	char (*exact_text)[256];     /* text of the exact names, for the check */
	size_t nexact_text;
};

static struct conf_addr target(const char *host, uint16_t port)
{
	/* through the config's own parser: the form an operator writes, ADDR@PORT */
	char text[80];
	snprintf(text, sizeof(text), "%s@%u", host, (unsigned)port);
	struct conf_addr a;
	if (conf_addr_parse(text, 53, &a) != 0)
		abort();
	return a;
}

/* Domain i: its name (deterministic from i and the seed) and rule. */
static void make_domain(struct gen *g, size_t i, bool subtree_allowed, struct store_domain *d)
{
	uint64_t s = 0x5eed0000ull + i;
	memset(d, 0, sizeof(*d));
	char *p = d->name;
	bool subtree = subtree_allowed && i % 3 == 0;
	if (subtree) {
		*p++ = 's';
	} else {
		p += rand_label(&s, p, 3, 8);
	}
	p += base36(i, p);
	*p++ = '.';
	const char *z = g->zones[rnd(&s) % g->nzones];
	size_t zl = strlen(z);
	memcpy(p, z, zl + 1);
	d->subtree = subtree;
	d->policy = CONF_POLICY_ITERATE;
	if (i % 101 == 2) {
		d->policy = CONF_POLICY_FORWARD;
	} else if (i % 997 == 1) {
		d->policy = CONF_POLICY_FORWARD;
		switch (i % 3) {
		case 0:
			d->forward[d->nforward++] = target("198.51.100.53", 53);
			break;
		case 1:
			d->forward[d->nforward++] = target("198.51.100.53", 53);
			d->forward[d->nforward++] = target("2001:db8::53", 5353);
			break;
		default:
			d->forward[d->nforward++] = target("203.0.113.1", 53);
			d->forward[d->nforward++] = target("203.0.113.2", 53);
			d->forward[d->nforward++] = target("2001:db8::1", 53);
			break;
		}
	}
}

static void gen_zones(struct gen *g)
{
	g->nzones = g->n / 20 < 16 ? 16 : g->n / 20;
	g->zones = calloc(g->nzones, sizeof(*g->zones));
	if (g->zones == NULL)
		exit(1);
	uint64_t s = 0x2013;
	for (size_t i = 0; i < g->nzones; i++) {
		size_t l = rand_label(&s, g->zones[i], 5, 12);
		snprintf(g->zones[i] + l, sizeof(g->zones[i]) - l, ".%s.", tlds[rnd(&s) % (sizeof(tlds) / sizeof(tlds[0]))]);
	}
}

/* Fill a store at dir with the n domains. @return the open store. */
static struct store *make_store(struct gen *g, const char *dir, bool subtree_allowed, bool record)
{
	struct store *st;
	int rc = store_open_size(dir, false, (size_t)1 << 30, &st);
	if (rc != 0) {
		fprintf(stderr, "bench_domains: store_open %s: %s\n", dir, store_strerror(rc));
		exit(1);
	}
	enum { BATCH = 4096 };
	struct store_domain *batch = calloc(BATCH, sizeof(*batch));
	if (batch == NULL)
		exit(1);
	size_t nb = 0;
	for (size_t i = 0; i < g->n; i++) {
		make_domain(g, i, subtree_allowed, &batch[nb]);
		if (record) {
			if (batch[nb].subtree) {
				names_add(&g->subtree, batch[nb].name);
			} else {
				names_add(&g->exact, batch[nb].name);
				if (g->nexact_text < 4096)
					memcpy(g->exact_text[g->nexact_text++], batch[nb].name, 256);
			}
		}
		if (++nb == BATCH || i + 1 == g->n) {
			rc = store_put_many(st, batch, nb, NULL);
			if (rc != 0) {
				fprintf(stderr, "bench_domains: store_put_many: %s\n", store_strerror(rc));
				exit(1);
			}
			nb = 0;
		}
	}
	free(batch);
	return st;
}

static int count_fn(const struct store_domain *d, void *arg)
{
	(void)d;
	(*(size_t *)arg)++;
	return 0;
}

/* ---- lookups ---- */

struct qset {
	const char *name;
	struct names q;
	const struct domains *set;
	size_t want_hits; /* every query must hit, or none (0) */
	double *ns;       /* per round */
};

/* nq lookups, cycling through the case's names. @return how many matched. */
static size_t run(const struct qset *c, size_t nq)
{
	size_t hits = 0, done = 0;
	const uint8_t *b = c->q.buf;
	while (done < nq)
		for (size_t i = 0; i < c->q.n && done < nq; i++, done++) {
			const uint8_t *p = b + c->q.off[i];
			hits += domains_match(c->set, p + 1, p[0]) != NULL;
		}
	return hits;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The query names of a case: nq picks (uniform) among the first pool names of src, deeper: one or two labels added. */
static void pick(struct names *out, const struct names *src, size_t pool, size_t nq, uint64_t seed,
                 int deeper)
{
	uint64_t s = seed;
	if (pool > src->n)
		pool = src->n;
	for (size_t i = 0; i < nq; i++) {
		const uint8_t *p = src->buf + src->off[rnd(&s) % pool];
		char text[512];
		char lab[16];
		size_t o = 0;
		if (deeper > 0) { /* one or two labels below the entry */
			if (rnd(&s) & 1)
				o += (size_t)snprintf(text, sizeof(text), "www.");
			lab[rand_label(&s, lab, 1, 8)] = '\0';
			o += (size_t)snprintf(text + o, sizeof(text) - o, "%s.", lab);
		}
		int n = wire_name_to_text(p + 1, p[0], text + o, sizeof(text) - o);
		if (n < 0)
			exit(1);
		names_add(out, text);
	}
}

static void pick_misses(struct names *out, const struct gen *g, size_t pool, size_t nq, uint64_t seed)
{
	/* a pool of names not in the set: "miss-…" labels under the same zones */
	uint64_t s = seed;
	char (*texts)[128] = calloc(pool, sizeof(*texts));
	if (texts == NULL)
		exit(1);
	for (size_t i = 0; i < pool; i++) {
		char lab[16];
		lab[rand_label(&s, lab, 4, 10)] = '\0';
		snprintf(texts[i], sizeof(texts[i]), "%smiss-%s.%s", (rnd(&s) & 1) ? "www." : "", lab,
		         g->zones[rnd(&s) % g->nzones]);
	}
	for (size_t i = 0; i < nq; i++)
		names_add(out, texts[rnd(&s) % pool]);
	free(texts);
}

static void usage(void)
{
	fprintf(stderr, "usage: bench_domains [-n domains] [-r rounds] [-q queries] [-c case] [--smoke]\n");
}

int main(int argc, char **argv)
{
	size_t n = 200000, nq = 1000000;
	unsigned rounds = 7;
	long only = -1; /* -c: time one case only (for a profiler) */
	static const struct option longopts[] = { { "smoke", no_argument, NULL, 's' }, { NULL, 0, NULL, 0 } };
	int opt;
	while ((opt = getopt_long(argc, argv, "n:r:q:c:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'n': n = strtoul(optarg, NULL, 10); break;
		case 'r': rounds = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'q': nq = strtoul(optarg, NULL, 10); break;
		case 'c': only = strtol(optarg, NULL, 10); break;
		case 's': n = 3000; nq = 20000; rounds = 3; break;
		default: usage(); return 2;
		}
	}
	if (n < 3 || rounds == 0 || nq == 0) {
		usage();
		return 2;
	}

	char dir[] = "/tmp/partdns-bench-domains-XXXXXX";
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	char dir_sub[sizeof(dir) + 8], dir_exact[sizeof(dir) + 8];
	snprintf(dir_sub, sizeof(dir_sub), "%s/sub", dir);
	snprintf(dir_exact, sizeof(dir_exact), "%s/exact", dir);
	if (mkdir(dir_sub, 0750) != 0 || mkdir(dir_exact, 0750) != 0) {
		perror("mkdir");
		return 1;
	}

	struct gen g = { .n = n };
	g.exact_text = calloc(4096, sizeof(*g.exact_text));
	if (g.exact_text == NULL)
		return 1;
	gen_zones(&g);
	double t = now_ns();
	struct store *st = make_store(&g, dir_sub, true, true);
	struct store *st_exact = make_store(&g, dir_exact, false, false);
	fprintf(stderr, "bench_domains: stores of %zu domains made in %.1f s\n", n, (now_ns() - t) / 1e9);

	/* the query names, made before any measurement */
	size_t hot = 1024;
	struct qset cases[] = {
		{ .name = "hit, exact entry" },
		{ .name = "hit, below a --subtree entry" },
		{ .name = "miss, set with --subtree entries" },
		{ .name = "miss, exact-only set" },
		{ .name = "hit, exact entry (hot 1024 names)" },
		{ .name = "hit, below a --subtree entry (hot 1024)" },
		{ .name = "miss, set with --subtree entries (hot 1024)" },
		{ .name = "miss, exact-only set (hot 1024)" },
	};
	enum { NCASES = sizeof(cases) / sizeof(cases[0]) };
	pick(&cases[0].q, &g.exact, SIZE_MAX, nq, 1, 0);
	pick(&cases[1].q, &g.subtree, SIZE_MAX, nq, 2, 1);
	pick_misses(&cases[2].q, &g, nq, nq, 3);
	pick_misses(&cases[3].q, &g, nq, nq, 3);
	/* hot: 1024 names looked up over and over (the set's lines they touch stay cached) */
	pick(&cases[4].q, &g.exact, hot, hot, 4, 0);
	pick(&cases[5].q, &g.subtree, hot, hot, 5, 1);
	pick_misses(&cases[6].q, &g, hot, hot, 6);
	pick_misses(&cases[7].q, &g, hot, hot, 6);
	names_free(&g.subtree);
	struct names exact_names = g.exact;

	/* the store's pages resident before measuring */
	size_t cnt = 0;
	store_foreach(st, count_fn, &cnt);
	store_foreach(st_exact, count_fn, &cnt);
	t = now_ns();
	cnt = 0;
	store_foreach(st, count_fn, &cnt);
	double t_foreach = now_ns() - t;
	malloc_trim(0);

	/* one set */
	long rss0 = status_kb("VmRSS"), anon0 = status_kb("RssAnon");
	size_t heap0 = heap_bytes();
	struct domains *a = NULL;
	t = now_ns();
	int rc = domains_load(st, &a, NULL);
	double t_load = now_ns() - t;
	if (rc != 0) {
		fprintf(stderr, "bench_domains: domains_load: %s\n", store_strerror(rc));
		return 1;
	}
	size_t heap1 = heap_bytes();
	long rss1 = status_kb("VmRSS"), anon1 = status_kb("RssAnon");

	/* a second load while the first is alive */
	bool hwm_ok = hwm_reset();
	long rss_before2 = status_kb("VmRSS");
	struct domains *b = NULL;
	t = now_ns();
	rc = domains_load(st, &b, NULL);
	double t_load2 = now_ns() - t;
	long hwm2 = status_kb("VmHWM");
	long rss2 = status_kb("VmRSS");
	if (rc != 0) {
		fprintf(stderr, "bench_domains: second domains_load: %s\n", store_strerror(rc));
		return 1;
	}
	domains_free(a); /* the old set released, as the daemon does when the last reader lets go */
	malloc_trim(0);
	long rss3 = status_kb("VmRSS");

	struct domains *e = NULL;
	if (domains_load(st_exact, &e, NULL) != 0)
		return 1;

	/* correctness of what is measured */
	if (domains_count(b) != n || domains_count(e) != n) {
		fprintf(stderr, "bench_domains: loaded %zu / %zu of %zu\n", domains_count(b), domains_count(e), n);
		return 1;
	}
	for (size_t i = 0; i < g.nexact_text; i++) {
		const uint8_t *p = exact_names.buf + exact_names.off[i];
		const struct store_domain *r = domains_match(b, p + 1, p[0]);
		if (r == NULL || strcmp(r->name, g.exact_text[i]) != 0) {
			fprintf(stderr, "bench_domains: %s matched %s\n", g.exact_text[i], r ? r->name : "nothing");
			return 1;
		}
	}
	for (size_t c = 0; c < NCASES; c++) {
		cases[c].set = c == 3 || c == 7 ? e : b;
		cases[c].want_hits = c == 0 || c == 1 || c == 4 || c == 5 ? nq : 0;
		cases[c].ns = calloc(rounds, sizeof(double));
		if (cases[c].ns == NULL)
			return 1;
	}

	for (unsigned r = 0; r < rounds; r++)
		for (size_t c = 0; c < NCASES; c++) {
			if (only >= 0 && (size_t)only != c)
				continue;
			t = now_ns();
			size_t hits = run(&cases[c], nq);
			cases[c].ns[r] = (now_ns() - t) / (double)nq;
			if (hits != cases[c].want_hits) {
				fprintf(stderr, "bench_domains: %s: %zu hits of %zu, want %zu\n", cases[c].name, hits, nq,
				        cases[c].want_hits);
				return 1;
			}
		}

	printf("domains: %zu (%zu under --subtree), queries per case and round: %zu, rounds: %u\n\n", n,
	       (n + 2) / 3, nq, rounds);
	printf("| memory | value |\n|---|---|\n");
	printf("| malloc'd bytes per domain (mallinfo2, one set) | %.1f |\n", (double)(heap1 - heap0) / (double)n);
	printf("| VmRSS growth per domain (one set) | %.1f |\n", (double)(rss1 - rss0) * 1024.0 / (double)n);
	printf("| RssAnon growth per domain (one set) | %.1f |\n", (double)(anon1 - anon0) * 1024.0 / (double)n);
	printf("| VmRSS before any set / with one set, MB | %.1f / %.1f |\n", rss0 / 1024.0, rss1 / 1024.0);
	if (hwm_ok)
		printf("| VmHWM of a second load with the first alive, MB (its growth over the RSS before it) | %.1f (+%.1f) |\n",
		       hwm2 / 1024.0, (hwm2 - rss_before2) / 1024.0);
	else
		printf("| VmHWM of a second load | clear_refs unavailable |\n");
	printf("| VmRSS with both sets / after the first is freed, MB | %.1f / %.1f |\n", rss2 / 1024.0,
	       rss3 / 1024.0);
	printf("| load time, ms (first / second; one store_foreach alone) | %.1f / %.1f (%.1f) |\n", t_load / 1e6,
	       t_load2 / 1e6, t_foreach / 1e6);
	printf("\n| domains_match | ns/lookup, median (min–max) |\n|---|---|\n");
	for (size_t c = 0; c < NCASES; c++) {
		if (only >= 0 && (size_t)only != c)
			continue;
		qsort(cases[c].ns, rounds, sizeof(double), cmp_double);
		printf("| %s | %.1f (%.1f–%.1f) |\n", cases[c].name, cases[c].ns[rounds / 2], cases[c].ns[0],
		       cases[c].ns[rounds - 1]);
	}

	for (size_t c = 0; c < NCASES; c++) {
		names_free(&cases[c].q);
		free(cases[c].ns);
	}
	names_free(&exact_names);
	domains_free(b);
	domains_free(e);
	store_close(st);
	store_close(st_exact);
	free(g.zones);
	free(g.exact_text);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench_domains: could not remove %s\n", dir);
	return 0;
}
