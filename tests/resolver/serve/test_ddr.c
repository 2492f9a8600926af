/* SPDX-License-Identifier: BSD-3-Clause */
/* resolver/serve/ddr.c: the _dns.resolver.arpa SVCB answer, read back with ldns. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ldns/ldns.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"
#include "resolver/serve/ddr.h"
#include "wire/parse.h"

static struct conf *load(const char *yaml)
{
	struct conf *c = NULL;
	unsigned nerr = 0;
	assert_int_equal(conf_load_string(yaml, strlen(yaml), "test.yaml", stderr, &c, &nerr), 0);
	return c;
}

/* The query for name/type as a client would send it, parsed. */
static void query(const char *name, uint16_t type, struct wire_query *q)
{
	ldns_pkt *p = NULL;
	assert_int_equal(ldns_pkt_query_new_frm_str(&p, name, type, LDNS_RR_CLASS_IN, LDNS_RD), LDNS_STATUS_OK);
	uint8_t *wire;
	size_t len;
	assert_int_equal(ldns_pkt2wire(&wire, p, &len), LDNS_STATUS_OK);
	assert_int_equal(wire_parse_query(wire, len, q), 0);
	free(wire);
	ldns_pkt_free(p);
}

/* The answer's records as text, one per line. */
static char *answer_text(const struct conf *c, const char *target, const struct wire_query *q, size_t *count)
{
	uint8_t *msg;
	size_t len;
	assert_int_equal(ddr_answer(c, target, q, &msg, &len), 0);
	ldns_pkt *p = NULL;
	assert_int_equal(ldns_wire2pkt(&p, msg, len), LDNS_STATUS_OK);
	free(msg);
	*count = ldns_rr_list_rr_count(ldns_pkt_answer(p));
	char *s = ldns_rr_list2str(ldns_pkt_answer(p));
	ldns_pkt_free(p);
	return s;
}

static void test_is_query(void **state)
{
	(void)state;
	struct wire_query q;
	query("_dns.resolver.arpa.", 64, &q);
	assert_true(ddr_is_query(&q));
	query("_DNS.Resolver.ARPA.", 64, &q);
	assert_true(ddr_is_query(&q));
	query("_dns.resolver.arpa.", LDNS_RR_TYPE_A, &q);
	assert_false(ddr_is_query(&q));
	query("x._dns.resolver.arpa.", 64, &q);
	assert_false(ddr_is_query(&q));
	query("resolver.arpa.", 64, &q);
	assert_false(ddr_is_query(&q));
}

static void test_records(void **state)
{
	(void)state;
	struct conf *c = load("server:\n"
	                      "  listen: [ \"127.0.0.1@5353\" ]\n"
	                      "  listen_tls: [ \"192.0.2.53\", \"2001:db8::53@8853\", \"0.0.0.0@853\" ]\n"
	                      "  listen_https: [ \"192.0.2.53@8443\" ]\n"
	                      "  https_path: /q\n"
	                      "  tls_cert: /nonexistent/cert.pem\n"
	                      "  tls_key: /nonexistent/key.pem\n"
	                      "  ddr: true\n");
	struct wire_query q;
	query("_dns.resolver.arpa.", 64, &q);
	size_t n;
	char *s = answer_text(c, "dns.example.test", &q, &n);
	assert_int_equal(n, 4);
	/* priority in listing order; the default port left out; no hint for a wildcard */
	assert_non_null(strstr(s, "1 dns.example.test. alpn=dot ipv4hint=192.0.2.53"));
	assert_non_null(strstr(s, "2 dns.example.test. alpn=dot port=8853 ipv6hint=2001:db8::53"));
	assert_non_null(strstr(s, "3 dns.example.test. alpn=dot\n"));
	assert_non_null(strstr(s, "4 dns.example.test. alpn=h2 port=8443 ipv4hint=192.0.2.53"));
	assert_non_null(strstr(s, "ipv4hint=192.0.2.53 dohpath=/q{?dns}"));
	free(s);
	/* no name on the certificate: nothing to announce (a client could not verify it) */
	s = answer_text(c, "", &q, &n);
	assert_int_equal(n, 0);
	free(s);
	conf_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_is_query),
		cmocka_unit_test(test_records),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
