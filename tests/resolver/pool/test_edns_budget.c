/* SPDX-License-Identifier: BSD-3-Clause */
/* resolver/pool/resolve_edns.c fair shares: one city or one flagged rule cannot take the whole EDNS pool. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "resolver/cache/inflight.h"
#include "resolver/pool/resolve_edns.h"
#include "wire/names.h"

static const char config[] =
	"server: { listen: [ \"127.0.0.1@5353\" ] }\n"
	"edns: { max_inflight: 8 }\n";

static struct job *make_job(struct inflight *t, unsigned partition, const char *rule)
{
	struct job *j = calloc(1, sizeof(*j));
	assert_non_null(j);
	j->table = t;
	j->partition = partition;
	j->edns = true;
	snprintf(j->rule.name, sizeof(j->rule.name), "%s", rule);
	j->qname = j->key + ROUTE_KEY_HDR;
	j->qname_len = (size_t)wire_name_from_text(rule, j->key + ROUTE_KEY_HDR, WIRE_MAX_NAME);
	return j;
}

static void test_fair_shares(void **state)
{
	struct conf *c = NULL;
	unsigned nerr = 0;
	assert_int_equal(conf_load_string(config, strlen(config), "budget.yaml", stderr, &c, &nerr), 0);
	int stop = eventfd(0, EFD_CLOEXEC);
	struct resolve_edns *p = resolve_edns_new(c, stop);
	assert_non_null(p);
	struct cache *cache = cache_new(1 << 20, 0);
	struct snapshot_slot slot;
	snapshot_slot_init(&slot);
	struct inflight *t = inflight_new(cache, &slot);
	/* max_inflight 8: a city may hold 2, a flagged rule 4 */
	struct job *j;
	assert_int_equal(resolve_edns_submit(p, make_job(t, 1, "a.example.")), 0);
	assert_int_equal(resolve_edns_submit(p, make_job(t, 1, "b.example.")), 0);
	j = make_job(t, 1, "c.example.");
	assert_int_equal(resolve_edns_submit(p, j), -EBUSY); /* nanjing's share is taken */
	inflight_fail(j, WIRE_RCODE_SERVFAIL, NULL, false);
	for (unsigned part = 2; part <= 4; part++)
		assert_int_equal(resolve_edns_submit(p, make_job(t, part, "a.example.")), 0);
	j = make_job(t, 5, "a.example.");
	assert_int_equal(resolve_edns_submit(p, j), -EBUSY); /* a.example's share is taken */
	inflight_fail(j, WIRE_RCODE_SERVFAIL, NULL, false);
	/* other cities and rules still get in, up to the pool's size */
	assert_int_equal(resolve_edns_submit(p, make_job(t, 5, "d.example.")), 0);
	assert_int_equal(resolve_edns_submit(p, make_job(t, 6, "e.example.")), 0);
	assert_int_equal(resolve_edns_submit(p, make_job(t, 7, "f.example.")), 0);
	assert_int_equal(resolve_edns_inflight(p), 8);
	j = make_job(t, 8, "g.example.");
	assert_int_equal(resolve_edns_submit(p, j), -EBUSY); /* the pool is full */
	inflight_fail(j, WIRE_RCODE_SERVFAIL, NULL, false);
	/* refused submissions gave their places back */
	assert_int_equal(resolve_edns_inflight(p), 8);
	resolve_edns_free(p); /* fails the queued jobs */
	inflight_free(t);
	cache_free(cache);
	snapshot_slot_deinit(&slot);
	close(stop);
	conf_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fair_shares),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
