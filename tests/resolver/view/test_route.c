/* SPDX-License-Identifier: BSD-3-Clause */
/* resolver/view/route.c: CNAME chains from normal names into EDNS domains, the cache value format. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ldns/ldns.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resolver/view/route.h"
#include "wire/answer.h"
#include "wire/names.h"
#include "wire/wire.h"
#include "tests/fixtures/domains_store.h"
#include "tests/fixtures/messages.h"

static const struct fixture_domain flagged[] = {
	{ "video.cdn.test.", false, CONF_POLICY_ITERATE },
};

static int setup(void **state)
{
	*state = fixture_store_new("route", flagged, 1);
	return *state ? 0 : -1;
}

static int teardown(void **state)
{
	return fixture_store_free(*state);
}

/* A response for qname A with the given answer records (zone-file text). */
static uint8_t *response(const char *qname, const char *const *rrs, size_t *len)
{
	struct fixture_msg m = { .qname = qname };
	for (size_t i = 0; rrs[i] && i < 7; i++)
		m.an[i] = rrs[i];
	uint8_t *wire = fixture_message(&m, len);
	assert_non_null(wire);
	return wire;
}

static const struct {
	const char *why;
	const char *qname;
	const char *rrs[5];
	const char *target;  /* expected hop target, NULL = none */
	unsigned prefix_rrs; /* answer records in the prefix */
} vectors[] = {
	{ "one hop into a flagged name", "video.customer.example.",
	  { "video.customer.example. 300 IN CNAME video.cdn.test.", "video.cdn.test. 60 IN A 203.0.113.100", NULL },
	  "video.cdn.test.", 1 },
	{ "two hops, the second enters", "a.customer.example.",
	  { "a.customer.example. 300 IN CNAME b.customer.example.",
	    "b.customer.example. 300 IN CNAME VIDEO.cdn.test.", "video.cdn.test. 60 IN A 203.0.113.100", NULL },
	  "video.cdn.test.", 2 },
	{ "a chain that stays normal", "www.customer.example.",
	  { "www.customer.example. 300 IN CNAME web.customer.example.", "web.customer.example. 60 IN A 203.0.113.10",
	    NULL },
	  NULL, 0 },
	{ "no CNAME at all", "www.customer.example.", { "www.customer.example. 60 IN A 203.0.113.10", NULL }, NULL, 0 },
	{ "a CNAME not for the qname is ignored", "x.customer.example.",
	  { "other.customer.example. 300 IN CNAME video.cdn.test.", NULL }, NULL, 0 },
};

static void test_find(void **state)
{
	struct fixture_store *f = *state;
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		size_t len;
		uint8_t *resp = response(vectors[i].qname, vectors[i].rrs, &len);
		uint8_t qname[WIRE_MAX_NAME], target[WIRE_MAX_NAME];
		int qlen = wire_name_from_text(vectors[i].qname, qname, sizeof(qname));
		size_t tlen = 0, plen = 0;
		uint8_t *prefix = NULL;
		(void)qlen;
		struct wire_chain chain;
		uint8_t *blob = NULL;
		size_t blob_len;
		uint32_t ttl;
		assert_int_equal(wire_answer_prepare_chain(resp, len, NULL, &blob, &blob_len, &ttl, &chain), 0);
		free(blob);
		int rc = route_chain_find(f->domains, resp, len, &chain, target, &tlen, &prefix, &plen);
		if (vectors[i].target == NULL) {
			if (rc != 0)
				fail_msg("%s: expected no hop, got %d", vectors[i].why, rc);
		} else {
			if (rc != 1)
				fail_msg("%s: expected a hop, got %d", vectors[i].why, rc);
			char text[300];
			wire_name_to_text(target, tlen, text, sizeof(text));
			if (strcmp(text, vectors[i].target) != 0)
				fail_msg("%s: target %s, expected %s", vectors[i].why, text, vectors[i].target);
			ldns_pkt *p = NULL;
			assert_int_equal(ldns_wire2pkt(&p, prefix, plen), LDNS_STATUS_OK);
			if (ldns_pkt_ancount(p) != vectors[i].prefix_rrs)
				fail_msg("%s: prefix has %u answers, expected %u", vectors[i].why,
				         (unsigned)ldns_pkt_ancount(p), vectors[i].prefix_rrs);
			for (size_t k = 0; k < ldns_pkt_ancount(p); k++)
				assert_int_equal(ldns_rr_get_type(ldns_rr_list_rr(ldns_pkt_answer(p), k)),
				                 LDNS_RR_TYPE_CNAME);
			ldns_pkt_free(p);
			free(prefix);
		}
		free(resp);
	}
}

static void test_value_roundtrip(void **state)
{
	const uint8_t target[] = "\5video\3cdn\4test";
	const uint8_t prefix[] = { 1, 2, 3, 4, 5 };
	const uint8_t blob[] = { 9, 8, 7 };
	uint8_t val[128];
	size_t h = route_value_write_header(val, target, sizeof(target), prefix, sizeof(prefix));
	assert_int_equal(h, route_value_header(sizeof(target), sizeof(prefix)));
	memcpy(val + h, blob, sizeof(blob));
	struct route_value v;
	assert_int_equal(route_value_parse(val, h + sizeof(blob), &v), 0);
	assert_true(v.chain);
	assert_false(v.failure);
	assert_int_equal(v.target_len, sizeof(target));
	assert_memory_equal(v.target, target, v.target_len);
	assert_int_equal(v.prefix_len, sizeof(prefix));
	assert_memory_equal(v.prefix, prefix, v.prefix_len);
	assert_int_equal(v.blob_len, sizeof(blob));
	assert_memory_equal(v.blob, blob, v.blob_len);
	/* every truncation of the header is rejected, never read past */
	for (size_t cut = 1; cut < h; cut++)
		if (route_value_parse(val, cut, &v) != -EINVAL)
			fail_msg("truncated header of %zu bytes accepted", cut);
	/* a plain value: a zero flags byte, then the blob */
	uint8_t plain[4] = { 0, 9, 8, 7 };
	assert_int_equal(route_value_parse(plain, sizeof(plain), &v), 0);
	assert_false(v.chain);
	assert_int_equal(v.blob_len, 3);
	assert_ptr_equal(v.blob, plain + 1);
	assert_int_equal(route_value_parse(plain, 0, &v), -EINVAL);
}

static void test_value_failure(void **state)
{
	const struct wire_ede ede = { WIRE_EDE_NO_REACHABLE_AUTHORITY, "no authority answered" };
	uint8_t val[128];
	size_t n = route_value_write_failure(val, WIRE_RCODE_SERVFAIL, &ede);
	assert_int_equal(n, route_value_failure_size(&ede));
	struct route_value v;
	assert_int_equal(route_value_parse(val, n, &v), 0);
	assert_true(v.failure);
	assert_int_equal(v.rcode, WIRE_RCODE_SERVFAIL);
	assert_int_equal(v.ede.code, WIRE_EDE_NO_REACHABLE_AUTHORITY);
	assert_string_equal(v.ede.text, "no authority answered");
	/* a text without its NUL, or a cut value, is malformed */
	for (size_t cut = 1; cut < n; cut++)
		if (route_value_parse(val, cut, &v) != -EINVAL)
			fail_msg("failure value cut at %zu accepted", cut);
	n = route_value_write_failure(val, WIRE_RCODE_SERVFAIL, NULL);
	assert_int_equal(route_value_parse(val, n, &v), 0);
	assert_string_equal(v.ede.text, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_value_roundtrip),
		cmocka_unit_test(test_value_failure),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
