/* SPDX-License-Identifier: BSD-3-Clause */
/* resolver/base/ubctx.c: what a pool's libunbound contexts are told (its share of the limits, the cache's TTL bounds). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unbound.h>

#include "resolver/base/ubctx.h"
#include "resolver/base/uloop.h"

static const char config[] =
	"server: { listen: [ \"127.0.0.1@5353\" ] }\n"
	"resolver: { zone_qps: 1000 }\n"
	"cache: { min_ttl: 7, max_ttl: 600, max_negative_ttl: 30 }\n";

static void assert_option(struct ub_ctx *ctx, const char *name, const char *want)
{
	char *v = NULL;
	assert_int_equal(ub_ctx_get_option(ctx, name, &v), 0);
	assert_non_null(v);
	/* libunbound prints a value with a trailing newline */
	v[strcspn(v, "\n")] = '\0';
	assert_string_equal(v, want);
	free(v);
}

static void test_shares_and_ttls(void **state)
{
	(void)state;
	struct conf *c = NULL;
	unsigned nerr = 0;
	assert_int_equal(conf_load_string(config, strlen(config), "ubctx.yaml", stderr, &c, &nerr), 0);
	struct uloop *u = uloop_new();
	assert_non_null(u);
	/* names spread by hash over 4 contexts: each takes a quarter of the zone rate */
	struct ub_ctx *ctx = ubctx_new(c, uloop_ub_base(u), &(struct ubctx_share){ .idx = 0, .of = 4 });
	assert_non_null(ctx);
	assert_option(ctx, "ratelimit", "250");
	assert_option(ctx, "outgoing-range", "2048");
	assert_option(ctx, "cache-max-ttl", "600");
	assert_option(ctx, "cache-min-ttl", "7");
	assert_option(ctx, "cache-max-negative-ttl", "30");
	ubctx_free(ctx);
	/* reached by the listener that read the name: the whole rate, the same socket share */
	ctx = ubctx_new(c, uloop_ub_base(u), &(struct ubctx_share){ .idx = 1, .of = 4, .whole_rate = true });
	assert_non_null(ctx);
	assert_option(ctx, "ratelimit", "1000");
	assert_option(ctx, "outgoing-range", "2048");
	ubctx_free(ctx);
	uloop_free(u);
	conf_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shares_and_ttls),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
