/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * resolver/xfr/tsig.c against ldns's TSIG: our signed queries verify with
 * ldns_pkt_tsig_verify (hmac-md5, -sha1, -sha256, -sha512); replies signed
 * by ldns_pkt_tsig_sign_next, message by message, verify with ours; a
 * wrong MAC, another key, an unsigned first message, a clock too far off,
 * 100 unsigned messages in a row are refused; unsigned messages covered by
 * the next signed one's MAC (RFC 8945 5.3.1) are taken.
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

#include "resolver/xfr/tsig.h"

#define SECRET "c2VjcmV0LWtleS1mb3ItdGhlLXRzaWctdW5pdC10ZXN0cyE="
#define OTHER "b3RoZXIta2V5LWZvci10aGUtdHNpZy11bml0LXRlc3RzISE="

/* An AXFR query for rpz.test. signed by s; its MAC (as ldns reads it) in *mac. */
static ldns_pkt *signed_query(struct tsig_stream *s, ldns_rdf **mac)
{
	ldns_rdf *zone = ldns_dname_new_frm_str("rpz.test.");
	ldns_pkt *q = ldns_pkt_query_new(zone, LDNS_RR_TYPE_AXFR, LDNS_RR_CLASS_IN, 0);
	ldns_pkt_set_id(q, 4242);
	uint8_t *w = NULL, buf[1024];
	size_t n = 0;
	assert_int_equal(ldns_pkt2wire(&w, q, &n), LDNS_STATUS_OK);
	memcpy(buf, w, n);
	free(w);
	ldns_pkt_free(q);
	assert_int_equal(tsig_sign_query(s, buf, &n, sizeof(buf), (uint64_t)time(NULL)), 0);
	ldns_pkt *p = NULL;
	assert_int_equal(ldns_wire2pkt(&p, buf, n), LDNS_STATUS_OK);
	assert_non_null(ldns_pkt_tsig(p));
	/* ldns_pkt_tsig_verify takes the TSIG out of the packet it verifies: not one it reads from its own wire */
	assert_true(ldns_pkt_tsig_verify(p, buf, n, "xfr.", SECRET, NULL));
	*mac = ldns_rdf_clone(ldns_rr_rdf(ldns_pkt_tsig(p), 3));
	return p;
}

/* A reply message to q with one record, as wire (*len); signed by ldns after *prior (and gap) when sign. */
static uint8_t *reply(const ldns_pkt *q, int i, bool sign, ldns_rdf **prior, ldns_buffer *gap, const char *secret,
                      size_t *len)
{
	ldns_pkt *p = ldns_pkt_new();
	ldns_pkt_set_id(p, ldns_pkt_id(q));
	ldns_pkt_set_qr(p, true);
	char text[100];
	snprintf(text, sizeof(text), "r%d.rpz.test. 60 IN CNAME .", i);
	ldns_rr *r = NULL;
	assert_int_equal(ldns_rr_new_frm_str(&r, text, 60, NULL, NULL), LDNS_STATUS_OK);
	ldns_pkt_push_rr(p, LDNS_SECTION_ANSWER, r);
	if (sign) {
		ldns_rdf *mac = *prior, *joined = NULL;
		if (ldns_buffer_position(gap) > 0) {
			/* ldns digests one message: the unsigned ones go after the prior MAC it digests first */
			size_t n = ldns_rdf_size(*prior) + ldns_buffer_position(gap);
			uint8_t *d = malloc(n);
			memcpy(d, ldns_rdf_data(*prior), ldns_rdf_size(*prior));
			memcpy(d + ldns_rdf_size(*prior), ldns_buffer_begin(gap), ldns_buffer_position(gap));
			mac = joined = ldns_rdf_new_frm_data(LDNS_RDF_TYPE_UNKNOWN, n, d);
			free(d);
		}
		assert_int_equal(ldns_pkt_tsig_sign_next(p, "xfr.", secret, 300, "hmac-sha256.", mac, i > 0),
		                 LDNS_STATUS_OK);
		ldns_rdf_deep_free(joined);
		ldns_buffer_clear(gap);
		ldns_rdf_deep_free(*prior);
		*prior = ldns_rdf_clone(ldns_rr_rdf(ldns_pkt_tsig(p), 3));
	}
	uint8_t *w = NULL;
	assert_int_equal(ldns_pkt2wire(&w, p, len), LDNS_STATUS_OK);
	if (!sign)
		if (ldns_buffer_reserve(gap, *len))
			ldns_buffer_write(gap, w, *len);
	ldns_pkt_free(p);
	return w;
}

struct run {
	struct tsig_key key;
	struct tsig_stream s;
	ldns_pkt *q;
	ldns_rdf *prior;
	ldns_buffer *gap;
};

static void run_start(struct run *r, const char *alg)
{
	const char *why = NULL;
	assert_int_equal(tsig_key_init(&r->key, "XFR.", alg, SECRET, &why), 0);
	assert_int_equal(tsig_stream_init(&r->s, &r->key), 0);
	r->q = signed_query(&r->s, &r->prior);
	r->gap = ldns_buffer_new(1024);
}

static void run_end(struct run *r)
{
	tsig_stream_clear(&r->s);
	ldns_pkt_free(r->q);
	ldns_rdf_deep_free(r->prior);
	ldns_buffer_free(r->gap);
}

/* The verdict on reply message i (signed or not, by secret; its MAC spoiled when corrupt). */
static enum tsig_verdict next(struct run *r, int i, bool sign, const char *secret, bool corrupt, uint64_t now)
{
	size_t n = 0;
	uint8_t *w = reply(r->q, i, sign, &r->prior, r->gap, secret, &n);
	if (corrupt)
		w[n - 7] ^= 1;
	enum tsig_verdict v = tsig_verify(&r->s, w, n, now);
	free(w);
	return v;
}

static void test_key(void **state)
{
	(void)state;
	struct tsig_key k;
	const char *why = NULL;
	assert_int_equal(tsig_key_init(&k, "xfr.", "hmac-sha3", SECRET, &why), -1);
	assert_non_null(strstr(why, "algorithm"));
	assert_int_equal(tsig_key_init(&k, "xfr.", NULL, "not base64!", &why), -1);
	assert_non_null(strstr(why, "base64"));
	assert_int_equal(tsig_key_init(&k, "xfr.", NULL, SECRET, &why), 0);
	assert_int_equal(k.mac_len, 32);
}

/* Our queries verify with ldns for each algorithm ldns knows by our name for it. */
static void test_query_algorithms(void **state)
{
	(void)state;
	static const char *const algs[] = { "hmac-md5", "hmac-sha1", "hmac-sha256", "hmac-sha512" };
	for (size_t i = 0; i < sizeof(algs) / sizeof(algs[0]); i++) {
		struct run r;
		run_start(&r, algs[i]);
		run_end(&r);
	}
}

static void test_stream(void **state)
{
	(void)state;
	struct run r;
	uint64_t now = (uint64_t)time(NULL);
	run_start(&r, NULL);
	for (int i = 0; i < 5; i++)
		assert_int_equal(next(&r, i, true, SECRET, false, now), TSIG_SIGNED);
	/* unsigned messages between signed ones, covered by the next MAC */
	assert_int_equal(next(&r, 5, false, SECRET, false, now), TSIG_UNSIGNED);
	assert_int_equal(next(&r, 6, false, SECRET, false, now), TSIG_UNSIGNED);
	assert_int_equal(next(&r, 7, true, SECRET, false, now), TSIG_SIGNED);
	/* a spoiled MAC */
	assert_int_equal(next(&r, 8, true, SECRET, true, now), TSIG_BAD);
	assert_non_null(strstr(r.s.why, "wrong TSIG signature"));
	run_end(&r);
}

static void test_refused(void **state)
{
	(void)state;
	struct run r;
	uint64_t now = (uint64_t)time(NULL);
	run_start(&r, NULL);
	assert_int_equal(next(&r, 0, false, SECRET, false, now), TSIG_BAD);
	assert_non_null(strstr(r.s.why, "not signed"));
	run_end(&r);

	run_start(&r, NULL);
	assert_int_equal(next(&r, 0, true, OTHER, false, now), TSIG_BAD);
	run_end(&r);

	run_start(&r, NULL);
	assert_int_equal(next(&r, 0, true, SECRET, false, now + 1000), TSIG_BAD);
	assert_non_null(strstr(r.s.why, "our clock"));
	run_end(&r);

	/* the MAC over unsigned messages does not match once one of them is left out */
	run_start(&r, NULL);
	assert_int_equal(next(&r, 0, true, SECRET, false, now), TSIG_SIGNED);
	assert_int_equal(next(&r, 1, false, SECRET, false, now), TSIG_UNSIGNED);
	size_t n = 0;
	uint8_t *skipped = reply(r.q, 2, false, &r.prior, r.gap, SECRET, &n); /* signed over, never verified */
	free(skipped);
	assert_int_equal(next(&r, 3, true, SECRET, false, now), TSIG_BAD);
	run_end(&r);

	/* 99 unsigned in a row are taken, the 100th is not */
	run_start(&r, NULL);
	assert_int_equal(next(&r, 0, true, SECRET, false, now), TSIG_SIGNED);
	for (int i = 1; i <= TSIG_MAX_UNSIGNED; i++)
		assert_int_equal(next(&r, i, false, SECRET, false, now), TSIG_UNSIGNED);
	assert_int_equal(next(&r, 100, false, SECRET, false, now), TSIG_BAD);
	assert_non_null(strstr(r.s.why, "unsigned messages"));
	run_end(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key),
		cmocka_unit_test(test_query_algorithms),
		cmocka_unit_test(test_stream),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
