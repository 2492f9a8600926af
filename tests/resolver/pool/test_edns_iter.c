/* SPDX-License-Identifier: BSD-3-Clause */
/* resolver/pool/edns_iter.c with canned packets: zone cuts, nameservers and glue, and what each upstream answer means. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <ldns/ldns.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resolver/pool/edns_iter.h"
#include "tests/fixtures/messages.h"
#include "wire/names.h"
#include "wire/parse.h"
#include "wire/upstream.h"

/* Messages built with ldns (an independent encoder): records as zone-file text. */

static uint8_t *build(const struct fixture_msg *m, size_t *len)
{
	uint8_t *wire = fixture_message(m, len);
	assert_non_null(wire);
	return wire;
}

static size_t name(const char *text, uint8_t *out)
{
	int n = wire_name_from_text(text, out, WIRE_MAX_NAME);
	assert_true(n > 0);
	return (size_t)n;
}

static void test_soa_cut(void **state)
{
	static const struct {
		const char *why;
		struct fixture_msg m;
		const char *name, *zname;
		enum edns_cut want;
		const char *zone;
	} vectors[] = {
		{ "SOA at the name asked", { .qname = "cdn.test.", .qtype = LDNS_RR_TYPE_SOA,
		  .an = { "cdn.test. 300 IN SOA ns.cdn.test. h.cdn.test. 1 2 3 4 5" } },
		  "video.cdn.test.", "cdn.test.", EDNS_CUT_FOUND, "cdn.test." },
		{ "the SOA owner in authority holds the name", { .qname = "video.cdn.test.", .qtype = LDNS_RR_TYPE_SOA,
		  .ns = { "CDN.test. 300 IN SOA ns.cdn.test. h.cdn.test. 1 2 3 4 5" } },
		  "video.cdn.test.", "video.cdn.test.", EDNS_CUT_FOUND, "cdn.test." },
		{ "an alias at the name: ask its parent", { .qname = "video.cdn.test.", .qtype = LDNS_RR_TYPE_SOA,
		  .an = { "video.cdn.test. 300 IN CNAME gslb.other.test." } },
		  "video.cdn.test.", "video.cdn.test.", EDNS_CUT_PARENT, NULL },
		{ "an SOA of a zone that does not hold the name", { .qname = "video.cdn.test.", .qtype = LDNS_RR_TYPE_SOA,
		  .ns = { "other.test. 300 IN SOA ns.other.test. h.other.test. 1 2 3 4 5" } },
		  "video.cdn.test.", "video.cdn.test.", EDNS_CUT_NONE, NULL },
		{ "nothing at all", { .qname = "video.cdn.test.", .qtype = LDNS_RR_TYPE_SOA },
		  "video.cdn.test.", "video.cdn.test.", EDNS_CUT_NONE, NULL },
	};
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		size_t len;
		uint8_t *msg = build(&vectors[i].m, &len);
		uint8_t n[WIRE_MAX_NAME], z[WIRE_MAX_NAME], zone[WIRE_MAX_NAME];
		size_t nl = name(vectors[i].name, n), zl = name(vectors[i].zname, z), zone_len = 0;
		enum edns_cut got = edns_iter_soa(msg, len, n, nl, z, zl, zone, &zone_len);
		if (got != vectors[i].want)
			fail_msg("%s: got %d, want %d", vectors[i].why, got, vectors[i].want);
		if (vectors[i].zone) {
			uint8_t want[WIRE_MAX_NAME];
			size_t wl = name(vectors[i].zone, want);
			assert_int_equal(zone_len, wl);
			assert_memory_equal(zone, want, wl); /* lower case */
		}
		free(msg);
	}
	/* a truncated message is no cut, never a crash */
	size_t len;
	uint8_t *msg = build(&vectors[0].m, &len);
	uint8_t n[WIRE_MAX_NAME], zone[WIRE_MAX_NAME];
	size_t nl = name("cdn.test.", n), zl;
	for (size_t cut = 0; cut < len; cut++)
		assert_int_equal(edns_iter_soa(msg, cut, n, nl, n, nl, zone, &zl), EDNS_CUT_NONE);
	free(msg);
}

static void test_servers(void **state)
{
	struct fixture_msg m = { .qname = "cdn.test.", .qtype = LDNS_RR_TYPE_NS,
	                      .an = { "cdn.test. 300 IN NS ns1.cdn.test.", "cdn.test. 300 IN NS ns2.cdn.test.",
	                              "other.test. 300 IN NS ns.evil.test." },
	                      .ar = { "ns1.cdn.test. 300 IN A 192.0.2.53", "ns2.cdn.test. 300 IN AAAA 2001:db8::53",
	                              "ns.evil.test. 300 IN A 192.0.2.66" } };
	size_t len;
	uint8_t *msg = build(&m, &len);
	uint8_t zone[WIRE_MAX_NAME];
	size_t zl = name("cdn.test.", zone);
	struct edns_servers s;
	memset(&s, 0, sizeof(s));
	assert_int_equal(edns_servers_take_ns(&s, msg, len, WIRE_SECTION_ANSWER, zone, zl), 2);
	edns_servers_take_addrs(&s, msg, len, WIRE_SECTION_ADDITIONAL, false, NULL, 0);
	assert_int_equal(s.naddr, 2); /* the address of a name that is no NS of the zone is not glue */
	const struct sockaddr_in *a = (const struct sockaddr_in *)&s.addr[0];
	assert_int_equal(a->sin_family, AF_INET);
	assert_int_equal(ntohs(a->sin_port), 53);
	uint8_t want[4];
	inet_pton(AF_INET, "192.0.2.53", want);
	assert_memory_equal(&a->sin_addr, want, 4);
	assert_int_equal(s.addr[1].ss_family, AF_INET6);
	free(msg);
}

/* The hop every response below answers: video.cdn.test A, id 4242, zone test. */
static void hop_init(struct edns_hop *h, uint8_t *nbuf, uint8_t *zbuf, bool tcp)
{
	*h = (struct edns_hop){ .name = nbuf, .name_len = name("video.cdn.test.", nbuf), .zone = zbuf,
	                        .zone_len = name("test.", zbuf), .id = 4242, .qtype = LDNS_RR_TYPE_A,
	                        .qclass = LDNS_RR_CLASS_IN, .ecs = NULL, .tcp = tcp };
}

static void test_response(void **state)
{
	static const struct {
		const char *why;
		struct fixture_msg m;
		bool tcp;
		enum edns_step want;
		const char *name; /* CNAME target or referral cut */
	} vectors[] = {
		{ "an answer", { .id = 4242, .qname = "video.cdn.test.", .qtype = 1, .aa = true,
		  .an = { "video.cdn.test. 60 IN A 192.0.2.10" } }, false, EDNS_STEP_DONE, NULL },
		{ "a negative answer", { .id = 4242, .qname = "video.cdn.test.", .qtype = 1, .aa = true, .rcode = 3,
		  .ns = { "cdn.test. 60 IN SOA ns.cdn.test. h.cdn.test. 1 2 3 4 5" } }, false, EDNS_STEP_DONE, NULL },
		{ "another ID over UDP: keep waiting", { .id = 4243, .qname = "video.cdn.test.", .qtype = 1,
		  .an = { "video.cdn.test. 60 IN A 192.0.2.66" } }, false, EDNS_STEP_IGNORE, NULL },
		{ "another question over UDP: keep waiting", { .id = 4242, .qname = "www.cdn.test.", .qtype = 1,
		  .an = { "www.cdn.test. 60 IN A 192.0.2.66" } }, false, EDNS_STEP_IGNORE, NULL },
		{ "another ID over TCP: next server", { .id = 4243, .qname = "video.cdn.test.", .qtype = 1 }, true,
		  EDNS_STEP_NEXT_SERVER, NULL },
		{ "truncated over UDP: TCP", { .id = 4242, .qname = "video.cdn.test.", .qtype = 1, .tc = true }, false,
		  EDNS_STEP_TCP, NULL },
		{ "SERVFAIL: next server", { .id = 4242, .qname = "video.cdn.test.", .qtype = 1, .rcode = 2 }, false,
		  EDNS_STEP_NEXT_SERVER, NULL },
		{ "REFUSED: next server", { .id = 4242, .qname = "video.cdn.test.", .qtype = 1, .rcode = 5 }, false,
		  EDNS_STEP_NEXT_SERVER, NULL },
		{ "a referral below the zone", { .id = 4242, .qname = "video.cdn.test.", .qtype = 1,
		  .ns = { "CDN.test. 300 IN NS ns1.cdn.test." }, .ar = { "ns1.cdn.test. 300 IN A 192.0.2.53" } },
		  false, EDNS_STEP_REFERRAL, "cdn.test." },
		{ "NS for a zone off the path is no referral", { .id = 4242, .qname = "video.cdn.test.", .qtype = 1,
		  .ns = { "evil.test. 300 IN NS ns.evil.test." } }, false, EDNS_STEP_DONE, NULL },
		{ "a CNAME hop", { .id = 4242, .qname = "video.cdn.test.", .qtype = 1, .aa = true,
		  .an = { "video.cdn.test. 60 IN CNAME Node.GSLB.test." } }, false, EDNS_STEP_CNAME, "node.gslb.test." },
	};
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		size_t len;
		uint8_t *msg = build(&vectors[i].m, &len);
		uint8_t n[WIRE_MAX_NAME], z[WIRE_MAX_NAME];
		struct edns_hop hop;
		hop_init(&hop, n, z, vectors[i].tcp);
		struct edns_verdict v;
		edns_iter_response(&hop, msg, len, &v);
		if (v.step != vectors[i].want)
			fail_msg("%s: got step %d, want %d", vectors[i].why, v.step, vectors[i].want);
		if (vectors[i].name) {
			uint8_t want[WIRE_MAX_NAME];
			size_t wl = name(vectors[i].name, want);
			const uint8_t *got = v.step == EDNS_STEP_CNAME ? v.target : v.cut;
			size_t gl = v.step == EDNS_STEP_CNAME ? v.target_len : v.cut_len;
			if (gl != wl || memcmp(got, want, wl) != 0)
				fail_msg("%s: wrong name", vectors[i].why);
		}
		edns_verdict_clear(&v);
		/* every prefix of the message is handled: ignored or refused, never taken as an answer */
		for (size_t cut = 0; cut < len; cut++) {
			edns_iter_response(&hop, msg, cut, &v);
			assert_true(v.step == EDNS_STEP_IGNORE || v.step == EDNS_STEP_NEXT_SERVER || v.step == EDNS_STEP_TCP);
			edns_verdict_clear(&v);
		}
		free(msg);
	}
}

/* Every record of msg as "owner type" lines, lower case, sorted by section. */
static void records(const uint8_t *msg, size_t len, char *out, size_t cap)
{
	struct wire_iter it;
	struct wire_rr rr;
	size_t o = 0;
	out[0] = 0;
	assert_int_equal(wire_iter_init(&it, msg, len), 0);
	while (wire_iter_next(&it, &rr) == 1) {
		char name[512];
		assert_true(wire_name_to_text(rr.owner, rr.owner_len, name, sizeof(name)) > 0);
		for (char *c = name; *c; c++)
			if (*c >= 'A' && *c <= 'Z')
				*c = (char)(*c - 'A' + 'a');
		o += (size_t)snprintf(out + o, cap - o, "%c:%s/%u ", "ANX"[rr.section], name, rr.type);
	}
}

static void test_scrub(void **state)
{
	static const struct {
		const char *why;
		struct fixture_msg m;
		const char *zone;   /* NULL: a forwarder */
		const char *want;   /* records kept, as records() prints them */
	} vectors[] = {
		{ "poison: the CNAME stays, the forged target record, NS and glue go",
		  { .id = 1, .qname = "poison.cdn.test.", .qtype = 1, .aa = true,
		    .an = { "poison.cdn.test. 300 IN CNAME www.customer.example.",
		            "www.customer.example. 86400 IN A 6.6.6.6" },
		    .ns = { "customer.example. 86400 IN NS ns.evil.test." },
		    .ar = { "ns.evil.test. 86400 IN A 6.6.6.6" } },
		  "cdn.test.", "A:poison.cdn.test./5 " },
		{ "an in-zone chain is kept whole",
		  { .id = 1, .qname = "a.cdn.test.", .qtype = 1, .aa = true,
		    .an = { "a.cdn.test. 300 IN CNAME b.cdn.test.", "b.cdn.test. 300 IN A 192.0.2.1" } },
		  "cdn.test.", "A:a.cdn.test./5 A:b.cdn.test./1 " },
		{ "records of other owners and types in the answer go",
		  { .id = 1, .qname = "a.cdn.test.", .qtype = 1, .aa = true,
		    .an = { "a.cdn.test. 300 IN A 192.0.2.1", "a.cdn.test. 300 IN MX 10 mx.cdn.test.",
		            "other.cdn.test. 300 IN A 192.0.2.66" } },
		  "cdn.test.", "A:a.cdn.test./1 " },
		{ "authority: only the zone's own SOA on the path",
		  { .id = 1, .qname = "nx.cdn.test.", .qtype = 1, .aa = true, .rcode = 3,
		    .ns = { "cdn.test. 60 IN SOA ns.cdn.test. h.cdn.test. 1 2 3 4 5",
		            "test. 60 IN SOA ns.nic.test. h.nic.test. 1 2 3 4 5",
		            "example. 300 IN NS ns.evil.test." } },
		  "cdn.test.", "N:cdn.test./6 " },
		{ "a second CNAME for one owner is dropped",
		  { .id = 1, .qname = "a.cdn.test.", .qtype = 1, .aa = true,
		    .an = { "a.cdn.test. 300 IN CNAME b.cdn.test.", "a.cdn.test. 300 IN CNAME evil.cdn.test.",
		            "b.cdn.test. 300 IN A 192.0.2.1" } },
		  "cdn.test.", "A:a.cdn.test./5 A:b.cdn.test./1 " },
		{ "a forwarder's chain crosses zones; unrelated owners go",
		  { .id = 1, .qname = "fwd.cdn.test.", .qtype = 1,
		    .an = { "fwd.cdn.test. 300 IN CNAME www.customer.example.",
		            "www.customer.example. 300 IN A 203.0.113.10", "www.victim.test. 300 IN A 6.6.6.6" },
		    .ns = { "victim.test. 300 IN NS ns.evil.test." } },
		  NULL, "A:fwd.cdn.test./5 A:www.customer.example./1 " },
	};
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		size_t len;
		uint8_t *msg = build(&vectors[i].m, &len);
		msg[3] |= 0x20; /* AD from upstream: never passed on */
		uint8_t q[WIRE_MAX_NAME], z[WIRE_MAX_NAME];
		size_t ql = name(vectors[i].m.qname, q), zl = vectors[i].zone ? name(vectors[i].zone, z) : 1;
		if (!vectors[i].zone)
			z[0] = 0;
		struct wire_scrub p = { .qname = q, .qname_len = ql, .qtype = vectors[i].m.qtype, .zone = z,
		                        .zone_len = zl, .forwarder = vectors[i].zone == NULL };
		uint8_t *out;
		size_t out_len;
		assert_int_equal(wire_scrub(msg, len, &p, &out, &out_len, NULL), 0);
		char got[1024];
		records(out, out_len, got, sizeof(got));
		if (strcmp(got, vectors[i].want) != 0)
			fail_msg("%s: kept \"%s\", want \"%s\"", vectors[i].why, got, vectors[i].want);
		assert_int_equal(out[3] & 0x20, 0);
		free(out);
		free(msg);
	}
	/* a CNAME loop and a broken A are malformed */
	struct fixture_msg loop = { .id = 1, .qname = "a.cdn.test.", .qtype = 1,
	                         .an = { "a.cdn.test. 300 IN CNAME b.cdn.test.", "b.cdn.test. 300 IN CNAME a.cdn.test." } };
	size_t len;
	uint8_t *msg = build(&loop, &len);
	uint8_t q[WIRE_MAX_NAME], z[WIRE_MAX_NAME];
	struct wire_scrub p = { .qname = q, .qname_len = name("a.cdn.test.", q), .qtype = 1, .zone = z,
	                        .zone_len = name("cdn.test.", z) };
	uint8_t *out;
	size_t out_len;
	assert_int_equal(wire_scrub(msg, len, &p, &out, &out_len, NULL), WIRE_E_FORMERR);
	free(msg);
	struct fixture_msg good = { .id = 1, .qname = "a.cdn.test.", .qtype = 1, .an = { "a.cdn.test. 300 IN A 192.0.2.1" } };
	msg = build(&good, &len);
	assert_int_equal(msg[len - 6], 0);
	assert_int_equal(msg[len - 5], 4);
	msg[len - 5] = 0; /* an A record with RDLENGTH 0 (the address cut off) */
	assert_int_equal(wire_scrub(msg, len - 4, &p, &out, &out_len, NULL), WIRE_E_FORMERR);
	free(msg);
}

static void test_negative_answer(void **state)
{
	struct fixture_msg nx = { .id = 7, .qname = "www.nowhere.test.", .qtype = LDNS_RR_TYPE_SOA, .rcode = 3,
	                       .ns = { "test. 60 IN SOA ns.nic.test. h.nic.test. 1 2 3 4 5",
	                               "test. 60 IN NS ns.nic.test." } };
	size_t len;
	uint8_t *msg = build(&nx, &len);
	uint8_t q[WIRE_MAX_NAME];
	size_t ql = name("www.nowhere.test.", q);
	uint8_t *out;
	size_t out_len;
	assert_int_equal(wire_negative_answer(msg, len, q, ql, LDNS_RR_TYPE_A, LDNS_RR_CLASS_IN, &out, &out_len), 0);
	char got[512];
	records(out, out_len, got, sizeof(got));
	assert_string_equal(got, "N:test./6 ");
	assert_int_equal(out[3] & 0x0f, 3);
	struct wire_resp_info info;
	assert_int_equal(wire_response_check(out, out_len, 7, q, ql, LDNS_RR_TYPE_A, LDNS_RR_CLASS_IN, NULL, &info), 0);
	free(out);
	free(msg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_soa_cut),
		cmocka_unit_test(test_servers),
		cmocka_unit_test(test_response),
		cmocka_unit_test(test_scrub),
		cmocka_unit_test(test_negative_answer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
