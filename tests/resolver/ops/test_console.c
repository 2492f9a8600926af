/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The console's /status.json (resolver/ops/console.c) from made-up views:
 * valid JSON (json-c reads it back), rates from its own samples (one per
 * step at most, a gap shown as one interval at its average, a new plan
 * starting over), latency said to be global, and the red flags: a city
 * answered with another city's node, the city it stands in for not
 * flagged, an authority that did not echo ECS.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mapping/mapping.h"
#include "partition/partition.h"
#include "resolver/ops/console.h"

/* A province of three cities and what its threads counted. */
struct fixture {
	struct ptable *t;
	struct mapping *m;
	struct stats_partition part[4];
	struct stats_view sv;
	const char *to[4];
	struct steering_row rows[4];
	size_t nrows;
	struct console_view v;
};

static struct fixture *fixture_new(void)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->t = ptable_new();
	assert_int_equal(ptable_add(f->t, "nanjing"), 1);
	assert_int_equal(ptable_add(f->t, "suzhou"), 2);
	assert_int_equal(ptable_add(f->t, "wu\"xi"), 3); /* a name JSON must escape */
	assert_int_equal(ptable_build(f->t), 0);
	f->m = mapping_new(3);
	struct mapping_entry e = { .has_v4 = true, .v4 = { .family = AF_INET, .len = 32 }, .label = "Nanjing" };
	inet_pton(AF_INET, "198.51.100.1", e.v4.addr);
	assert_int_equal(mapping_set(f->m, 1, &e), 0);
	f->sv.partitions = f->t;
	f->sv.part = f->part;
	f->v = (struct console_view){ .stats = &f->sv, .mapping = f->m, .standby_to = f->to, .rows = f->rows,
		                      .plan_digest = 42, .plan_source = "config", .version = "test", .now = 1700000000 };
	return f;
}

static void fixture_free(struct fixture *f)
{
	mapping_free(f->m);
	ptable_free(f->t);
	free(f);
}

/* A steering row: city, its last answer's address, echoed or not. */
static void row(struct fixture *f, const char *city, const char *addr, bool echoed)
{
	struct steering_row *r = &f->rows[f->nrows++];
	memset(r, 0, sizeof(*r));
	snprintf(r->partition, sizeof(r->partition), "%s", city);
	snprintf(r->rule, sizeof(r->rule), "video.cdn.test.");
	r->naddr = 1;
	r->addr[0].family = AF_INET;
	inet_pton(AF_INET, addr, r->addr[0].addr);
	r->answers = 1;
	r->echoed = echoed;
	r->last_echoed = echoed;
	f->v.nrows = f->nrows;
}

/* /status.json at now_ms, parsed (the caller puts it). */
static json_object *status_at(struct console *c, struct fixture *f, uint64_t now_ms)
{
	f->v.now_ms = now_ms;
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	assert_non_null(out);
	assert_int_equal(console_status(c, &f->v, out), 0);
	fclose(out);
	json_object *o = json_tokener_parse(buf);
	if (o == NULL)
		fail_msg("not JSON: %s", buf);
	free(buf);
	return o;
}

static json_object *get(json_object *o, const char *path)
{
	char key[64];
	const char *p = path;
	while (o != NULL && *p != '\0') {
		size_t n = strcspn(p, ".");
		snprintf(key, sizeof(key), "%.*s", (int)n, p);
		p += n + (p[n] == '.');
		if (json_object_is_type(o, json_type_array))
			o = json_object_array_get_idx(o, (size_t)atoi(key));
		else if (!json_object_object_get_ex(o, key, &o))
			return NULL;
	}
	return o;
}

static double num(json_object *o, const char *path)
{
	json_object *v = get(o, path);
	if (v == NULL || json_object_is_type(v, json_type_null))
		return NAN;
	return json_object_get_double(v);
}

static bool flag(json_object *o, const char *path)
{
	json_object *v = get(o, path);
	assert_non_null(v);
	return json_object_get_boolean(v);
}

static void test_rates_and_history(void **state)
{
	(void)state;
	struct fixture *f = fixture_new();
	struct console *c = console_new(0); /* the start: every counter zero */
	f->part[1].queries = 100;
	f->part[1].hits = 60;
	f->part[1].misses = 40;
	json_object *o = status_at(c, f, 10000);
	assert_string_equal(json_object_get_string(get(o, "cities.0.name")), "nanjing");
	assert_string_equal(json_object_get_string(get(o, "cities.2.name")), "wu\"xi");
	assert_string_equal(json_object_get_string(get(o, "cities.0.mapped.0")), "198.51.100.1");
	assert_string_equal(json_object_get_string(get(o, "cities.0.label")), "Nanjing");
	assert_true(json_object_is_type(get(o, "cities.1.label"), json_type_null));
	/* from the start's zero sample: 100 queries in 10 s */
	assert_float_equal(num(o, "cities.0.qps"), 10.0, 0.01);
	assert_float_equal(num(o, "cities.0.hit_ratio"), 0.6, 0.0001);
	assert_true(isnan(num(o, "cities.1.hit_ratio"))); /* nothing asked: null, not 0 */
	json_object_put(o);

	/* 3 s later: no new sample (one per step), the rate still spans >= 5 s */
	f->part[1].queries = 130;
	o = status_at(c, f, 13000);
	assert_int_equal(json_object_array_length(get(o, "history.ages_s")), 3); /* 0..10 s, 10..13 s: two intervals */
	assert_float_equal(num(o, "window_s"), 13.0, 0.01);
	assert_float_equal(num(o, "cities.0.qps"), 10.0, 0.01);
	json_object_put(o);

	/* nobody looks for 10 minutes, 6000 queries meanwhile: one interval at their average, no invented points */
	f->part[1].queries = 6130;
	o = status_at(c, f, 613000);
	json_object *h = get(o, "cities.0.qps_history");
	size_t n = json_object_array_length(h);
	assert_int_equal(n, 2); /* [0, 10 s], [10 s, 613 s] */
	assert_float_equal(json_object_get_double(json_object_array_get_idx(h, 1)), 6030.0 / 603.0, 0.01);
	assert_int_equal(json_object_array_length(get(o, "history.ages_s")), n + 1);
	assert_float_equal(num(o, "history.ages_s.2"), 0, 0);
	json_object_put(o);

	/* latency: global, and said so */
	o = status_at(c, f, 614000);
	assert_string_equal(json_object_get_string(get(o, "latency.scope")), "global");
	assert_false(flag(o, "latency.per_city"));
	json_object_put(o);

	/* a new plan: the history starts over (ids may name other cities now) */
	f->v.plan_digest = 43;
	o = status_at(c, f, 620000);
	assert_int_equal(json_object_array_length(get(o, "history.ages_s")), 1); /* one sample, just taken */
	assert_true(isnan(num(o, "cities.0.qps")));                             /* no base to rate against yet */
	json_object_put(o);
	f->part[1].queries = 6230;
	o = status_at(c, f, 630000);
	assert_float_equal(num(o, "cities.0.qps"), 10.0, 0.01);
	json_object_put(o);
	console_free(c);
	fixture_free(f);
}

/* Samples older than the hour go: the ring stays bounded however long it runs. */
static void test_bounded(void **state)
{
	(void)state;
	struct fixture *f = fixture_new();
	struct console *c = console_new(0);
	for (uint64_t ms = 10000; ms <= 3 * 3600000u; ms += 10000) {
		f->part[2].queries += 50;
		json_object_put(status_at(c, f, ms));
	}
	json_object *o = status_at(c, f, 3 * 3600000u + 5000);
	size_t n = json_object_array_length(get(o, "history.ages_s"));
	assert_true(n <= CONSOLE_HISTORY_S / CONSOLE_STEP_S + 3);
	/* the first interval may straddle the hour (the page clips it), by a step at most here */
	assert_true(num(o, "history.ages_s.0") <= CONSOLE_HISTORY_S + CONSOLE_STEP_S);
	assert_true(num(o, "history.ages_s.1") <= CONSOLE_HISTORY_S);
	assert_float_equal(num(o, "cities.1.qps_history.0"), 5.0, 0.01);
	json_object_put(o);
	console_free(c);
	fixture_free(f);
}

static void test_flags(void **state)
{
	(void)state;
	struct fixture *f = fixture_new();
	struct console *c = console_new(0);
	row(f, "nanjing", "203.0.113.1", true);
	row(f, "suzhou", "203.0.113.2", true);
	json_object *o = status_at(c, f, 1000);
	assert_false(flag(o, "cities.0.alarm"));
	assert_false(flag(o, "cities.1.alarm"));
	json_object_put(o);

	/* nanjing answered with suzhou's node: nanjing red, naming suzhou */
	inet_pton(AF_INET, "203.0.113.2", f->rows[0].addr[0].addr);
	o = status_at(c, f, 2000);
	assert_true(flag(o, "cities.0.steered_elsewhere"));
	assert_true(flag(o, "cities.0.alarm"));
	assert_string_equal(json_object_get_string(get(o, "cities.0.names.0.with.0")), "suzhou");
	/* without a failover, the node is shared: suzhou is marked too (the JSON says with whom) */
	assert_true(flag(o, "cities.1.steered_elsewhere"));
	json_object_put(o);

	/* nanjing failed over to suzhou: nanjing red, suzhou not (nanjing stands in for it) */
	f->to[1] = "suzhou";
	o = status_at(c, f, 3000);
	assert_true(flag(o, "cities.0.failed_over"));
	assert_true(flag(o, "cities.0.steered_elsewhere"));
	assert_false(flag(o, "cities.1.steered_elsewhere"));
	assert_false(flag(o, "cities.1.alarm"));
	assert_string_equal(json_object_get_string(get(o, "cities.0.standby")), "suzhou");
	json_object_put(o);

	/* suzhou's authority stopped echoing ECS: red for that */
	f->to[1] = NULL;
	inet_pton(AF_INET, "203.0.113.1", f->rows[0].addr[0].addr);
	f->rows[1].last_echoed = false;
	o = status_at(c, f, 4000);
	assert_true(flag(o, "cities.1.ecs_ignored"));
	assert_true(flag(o, "cities.1.alarm"));
	assert_false(flag(o, "cities.0.alarm"));
	json_object_put(o);
	console_free(c);
	fixture_free(f);
}

static void test_page(void **state)
{
	(void)state;
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	console_page(out);
	fclose(out);
	/* self-contained: nothing to fetch but status.json; the icon inline (else a 404 in the console) */
	assert_null(strstr(buf, "src="));
	assert_null(strstr(buf, "https:"));
	assert_non_null(strstr(buf, "fetch('status.json'"));
	assert_non_null(strstr(buf, "rel=\"icon\" href=\"data:,\""));
	free(buf);
	assert_non_null(strstr(console_csp, "default-src 'none'"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rates_and_history),
		cmocka_unit_test(test_bounded),
		cmocka_unit_test(test_flags),
		cmocka_unit_test(test_page),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
