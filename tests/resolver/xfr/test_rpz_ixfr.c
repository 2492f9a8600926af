/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * resolver/xfr/rpz_ixfr.c: transfer replies (RFC 1995) given as records, applied
 * to copies given as zone-file text: up to date, incremental (several
 * differences, split across messages, TTL changes, case), a whole zone,
 * and each way a reply or its application is refused; a large copy with a
 * large difference in linear time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ldns/ldns.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "resolver/xfr/rpz_ixfr.h"

static FILE *devnull; /* where a whole zone goes when the test does not read it */

#define Z "rpz.test."
#define SOA(n) Z " 60 IN SOA ns." Z " host." Z " " #n " 1 1 86400 60"

/* A message's answer records: text lines separated by '|'. */
static ldns_rr_list *msg(const char *text)
{
	ldns_rr_list *l = ldns_rr_list_new();
	char *copy = strdup(text), *save = NULL;
	for (char *t = strtok_r(copy, "|", &save); t; t = strtok_r(NULL, "|", &save)) {
		ldns_rr *r = NULL;
		assert_int_equal(ldns_rr_new_frm_str(&r, t, 60, NULL, NULL), LDNS_STATUS_OK);
		ldns_rr_list_push_rr(l, r);
	}
	free(copy);
	return l;
}

/* Feed messages (NULL-terminated) to x; @return the last state. */
static enum rpz_ixfr_state feed(struct rpz_ixfr *x, const char *const *msgs)
{
	enum rpz_ixfr_state st = RPZ_IXFR_MORE;
	for (size_t i = 0; msgs[i] && st == RPZ_IXFR_MORE; i++) {
		ldns_rr_list *l = msg(msgs[i]);
		st = rpz_ixfr_message(x, l);
		ldns_rr_list_deep_free(l);
	}
	return st;
}

/* Apply x to base (zone-file text); @return rpz_ixfr_apply's, the new copy in *out (malloc'd). */
static int apply(struct rpz_ixfr *x, const char *base, char **out)
{
	FILE *b = fmemopen((void *)base, strlen(base), "r");
	size_t n = 0;
	FILE *o = open_memstream(out, &n);
	int rc = rpz_ixfr_apply(x, b, o);
	fclose(b);
	fclose(o);
	return rc;
}

static const char base1[] = "$TTL 60\n"
                            "@ SOA ns host 1 1 1 86400 60\n"
                            "@ NS ns\n"
                            "a.example CNAME .\n"
                            "b.example CNAME .\n"
                            "x.example 60 A 192.0.2.1\n";

static void test_uptodate(void **state)
{
	(void)state;
	struct rpz_ixfr *x = rpz_ixfr_new(Z, true, 5, stdout);
	assert_int_equal(feed(x, (const char *[]){ SOA(5), NULL }), RPZ_IXFR_DONE);
	assert_int_equal(rpz_ixfr_kind(x), RPZ_IXFR_UPTODATE);
	rpz_ixfr_free(x);
	/* the primary behind us: not up to date, and said so */
	x = rpz_ixfr_new(Z, true, 5, stdout);
	assert_int_equal(feed(x, (const char *[]){ SOA(4), NULL }), RPZ_IXFR_BAD);
	assert_non_null(strstr(rpz_ixfr_why(x), "older"));
	rpz_ixfr_free(x);
	/* without a copy (AXFR), one SOA alone in the first message is only the start */
	x = rpz_ixfr_new(Z, false, 0, stdout);
	assert_int_equal(feed(x, (const char *[]){ SOA(5), NULL }), RPZ_IXFR_MORE);
	rpz_ixfr_free(x);
}

static void test_incremental(void **state)
{
	(void)state;
	struct rpz_ixfr *x = rpz_ixfr_new(Z, true, 1, NULL);
	/* 1 -> 2: a out, c in; 2 -> 3: c out again, d in, x's TTL changed (upper case: same record) */
	const char *const reply[] = { SOA(3) "|" SOA(1) "|a.example." Z " 60 CNAME .",
		                      SOA(2) "|c.example." Z " 60 CNAME .",
		                      SOA(2) "|c.example." Z " 60 CNAME .|X.EXAMPLE." Z " 60 A 192.0.2.1|" SOA(3) "|d.example." Z
		                             " 60 A 192.0.2.4|x.example." Z " 300 A 192.0.2.1",
		                      SOA(3), NULL };
	assert_int_equal(feed(x, reply), RPZ_IXFR_DONE);
	assert_int_equal(rpz_ixfr_kind(x), RPZ_IXFR_INCREMENTAL);
	assert_int_equal(rpz_ixfr_serial(x), 3);
	char *out = NULL;
	assert_int_equal(apply(x, base1, &out), 0);
	assert_non_null(strstr(out, " 3 1 1 86400 60"));
	assert_null(strstr(out, " 1 1 1 86400"));
	assert_null(strstr(out, "a.example." Z));
	assert_null(strstr(out, "c.example." Z));
	assert_non_null(strstr(out, "b.example." Z));
	assert_non_null(strstr(out, "d.example." Z "\t60\tIN\tA\t192.0.2.4"));
	assert_non_null(strstr(out, "x.example." Z "\t300\tIN\tA\t192.0.2.1"));
	assert_null(strstr(out, "x.example." Z "\t60\t"));
	uint64_t n, del, add;
	rpz_ixfr_counts(x, &n, &del, &add);
	assert_int_equal(del, 3);
	assert_int_equal(add, 3);
	free(out);
	rpz_ixfr_free(x);
}

static void test_apply_refused(void **state)
{
	(void)state;
	char *out = NULL;
	/* a deletion of what the copy does not have */
	struct rpz_ixfr *x = rpz_ixfr_new(Z, true, 1, NULL);
	assert_int_equal(feed(x, (const char *[]){ SOA(2) "|" SOA(1) "|zz.example." Z " 60 CNAME .|" SOA(2) "|" SOA(2),
	                                           NULL }),
	                 RPZ_IXFR_DONE);
	assert_int_equal(apply(x, base1, &out), -1);
	assert_non_null(strstr(rpz_ixfr_why(x), "zz.example." Z " CNAME, which our copy does not have"));
	free(out);
	rpz_ixfr_free(x);
	/* the copy is another serial than the one asked from */
	x = rpz_ixfr_new(Z, true, 7, NULL);
	assert_int_equal(feed(x, (const char *[]){ SOA(8) "|" SOA(7) "|" SOA(8) "|" SOA(8), NULL }), RPZ_IXFR_DONE);
	assert_int_equal(apply(x, base1, &out), -1);
	assert_non_null(strstr(rpz_ixfr_why(x), "our copy is serial 1, not 7"));
	free(out);
	rpz_ixfr_free(x);
	/* a copy that does not parse */
	x = rpz_ixfr_new(Z, true, 1, NULL);
	assert_int_equal(feed(x, (const char *[]){ SOA(2) "|" SOA(1) "|" SOA(2) "|" SOA(2), NULL }), RPZ_IXFR_DONE);
	assert_int_equal(apply(x, "@ SOA ns host 1 1 1 1 1\nbad line here\n", &out), -1);
	assert_non_null(strstr(rpz_ixfr_why(x), "does not parse"));
	free(out);
	rpz_ixfr_free(x);
}

static void test_reply_refused(void **state)
{
	(void)state;
	static const struct {
		const char *const msgs[3];
		const char *why;
	} cases[] = {
		{ { SOA(3) "|" SOA(2) "|" SOA(3) "|" SOA(3), NULL }, "start at serial 2, not at ours (1)" },
		{ { SOA(3) "|" SOA(1) "|" SOA(2) "|" SOA(4) "|" SOA(5), NULL }, "from serial 4 follows one to 2" },
		{ { SOA(3) "|" SOA(1) "|" SOA(1), NULL }, "not later" },
		{ { SOA(2) "|" SOA(1) "|a.example." Z " 60 CNAME .|a.example." Z " 60 CNAME .", NULL }, "earlier difference" },
		{ { SOA(2) "|" SOA(1) "|" SOA(2) "|" SOA(2) "|b.example." Z " 60 CNAME .", NULL }, "after the end" },
		{ { SOA(2) "|" SOA(1) "|" SOA(2) "|other.test. 60 A 192.0.2.1", NULL }, "does not belong" },
		{ { SOA(2) "|" SOA(1) "|" SOA(2) "|a.example." Z " 60 CH A 192.0.2.1", NULL }, "does not belong" },
		{ { "a.example." Z " 60 CNAME .", NULL }, "does not start with the zone's SOA" },
		{ { SOA(2) "|sub." Z " 60 IN SOA a. b. 1 1 1 1 1", NULL }, "not the zone's" },
		{ { SOA(2) "|a.example." Z " 60 CNAME .|" SOA(3), NULL }, "inside the zone" },
		{ { "", NULL }, "an empty reply" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rpz_ixfr *x = rpz_ixfr_new(Z, true, 1, devnull);
		assert_int_equal(feed(x, cases[i].msgs), RPZ_IXFR_BAD);
		if (strstr(rpz_ixfr_why(x), cases[i].why) == NULL)
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, rpz_ixfr_why(x), cases[i].why);
		assert_int_equal(rpz_ixfr_kind(x), RPZ_IXFR_UNKNOWN);
		rpz_ixfr_free(x);
	}
}

static void test_whole(void **state)
{
	(void)state;
	char *out = NULL;
	size_t n = 0;
	FILE *o = open_memstream(&out, &n);
	struct rpz_ixfr *x = rpz_ixfr_new(Z, true, 1, o);
	assert_int_equal(feed(x, (const char *[]){ SOA(2), Z " 60 NS ns." Z "|a.example." Z " 60 CNAME .",
	                                           SOA(2), NULL }),
	                 RPZ_IXFR_DONE);
	assert_int_equal(rpz_ixfr_kind(x), RPZ_IXFR_WHOLE);
	fclose(o);
	assert_non_null(strstr(out, " 2 1 1 86400 60"));
	assert_non_null(strstr(out, "a.example." Z));
	assert_null(strstr(strstr(out, "SOA") + 1, "SOA")); /* the closing SOA is not written */
	free(out);
	rpz_ixfr_free(x);
	/* an AXFR (no copy) of a zone that is its SOA alone */
	x = rpz_ixfr_new(Z, false, 0, devnull);
	assert_int_equal(feed(x, (const char *[]){ SOA(9) "|" SOA(9), NULL }), RPZ_IXFR_DONE);
	assert_int_equal(rpz_ixfr_kind(x), RPZ_IXFR_WHOLE);
	rpz_ixfr_free(x);
}

/* 200k records in the copy, a difference deleting 20k and adding 20k: linear, so well under a second. */
static void test_large(void **state)
{
	(void)state;
	enum { N = 200000, M = 20000 };
	char *base = NULL, *out = NULL;
	size_t bn = 0;
	FILE *b = open_memstream(&base, &bn);
	fprintf(b, "$TTL 60\n@ SOA ns host 1 1 1 86400 60\n");
	for (int i = 0; i < N; i++)
		fprintf(b, "r%d.example CNAME .\n", i);
	fclose(b);
	struct rpz_ixfr *x = rpz_ixfr_new(Z, true, 1, NULL);
	ldns_rr_list *l = msg(SOA(2) "|" SOA(1));
	char text[128];
	for (int i = 0; i < M; i++) {
		ldns_rr *r = NULL;
		snprintf(text, sizeof(text), "r%d.example." Z " 60 CNAME .", i * (N / M));
		assert_int_equal(ldns_rr_new_frm_str(&r, text, 60, NULL, NULL), LDNS_STATUS_OK);
		ldns_rr_list_push_rr(l, r);
	}
	ldns_rr *r = NULL;
	assert_int_equal(ldns_rr_new_frm_str(&r, SOA(2), 60, NULL, NULL), LDNS_STATUS_OK);
	ldns_rr_list_push_rr(l, r);
	for (int i = 0; i < M; i++) {
		snprintf(text, sizeof(text), "n%d.example." Z " 60 CNAME .", i);
		assert_int_equal(ldns_rr_new_frm_str(&r, text, 60, NULL, NULL), LDNS_STATUS_OK);
		ldns_rr_list_push_rr(l, r);
	}
	assert_int_equal(ldns_rr_new_frm_str(&r, SOA(2), 60, NULL, NULL), LDNS_STATUS_OK);
	ldns_rr_list_push_rr(l, r);
	struct timespec t0, t1;
	/* CPU time, not wall: a loaded machine stretches the wall clock, not the work */
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	assert_int_equal(rpz_ixfr_message(x, l), RPZ_IXFR_DONE);
	assert_int_equal(apply(x, base, &out), 0);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
	size_t lines = 0;
	for (const char *p = out; *p; p++)
		lines += *p == '\n';
	assert_int_equal(lines, 1 + N - M + M);
	assert_null(strstr(out, "r0.example." Z));
	assert_non_null(strstr(out, "r1.example." Z));
	assert_non_null(strstr(out, "n19999.example." Z));
	double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("# 200k-record copy, 40k-record difference: %.2f s of CPU\n", s);
	/* about 1 s in a release build, 10-15 s under ASan; O(n*m) would be 4e9
	 * comparisons, minutes in either */
	assert_true(s < 60);
	ldns_rr_list_deep_free(l);
	free(base);
	free(out);
	rpz_ixfr_free(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uptodate),       cmocka_unit_test(test_incremental),
		cmocka_unit_test(test_apply_refused),  cmocka_unit_test(test_reply_refused),
		cmocka_unit_test(test_whole),          cmocka_unit_test(test_large),
	};
	devnull = fopen("/dev/null", "w");
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fclose(devnull);
	return rc;
}
