/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * resolver/pool/val.c with answers signed here by ldns (keys made per run):
 * secure, forged, expired, unsigned in a signed or an unsigned zone, keys
 * bogus or unknown, NXDOMAIN and NODATA proofs, wildcard expansions.
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

#include "resolver/pool/val.h"
#include "wire/names.h"

static ldns_key_list *keys; /* one ECDSA P-256 key for example. */
/* signatures valid from 2020-09 to 2033-05: fuzz_val checks them at a fixed time inside */
#define SIG_INCEPTION 1600000000u
#define SIG_EXPIRATION 2000000000u
static ldns_rr *dnskey;

static ldns_rr *rr(const char *text)
{
	ldns_rr *r = NULL;
	assert_int_equal(ldns_rr_new_frm_str(&r, text, 300, NULL, NULL), LDNS_STATUS_OK);
	return r;
}

/* Records from text, each RRset followed by its RRSIGs when sign (records of one RRset adjacent). */
static ldns_rr_list *section(bool sign, const char *const *texts)
{
	ldns_rr_list *out = ldns_rr_list_new();
	ldns_rr_list *set = ldns_rr_list_new();
	for (size_t i = 0; texts[i]; i++) {
		ldns_rr *r = rr(texts[i]);
		ldns_rr_list_push_rr(set, r);
		ldns_rr_list_push_rr(out, ldns_rr_clone(r));
		bool last = texts[i + 1] == NULL;
		if (!last) {
			ldns_rr *nx = rr(texts[i + 1]);
			last = ldns_dname_compare(ldns_rr_owner(nx), ldns_rr_owner(r)) != 0 ||
			       ldns_rr_get_type(nx) != ldns_rr_get_type(r);
			ldns_rr_free(nx);
		}
		if (last) {
			if (sign) {
				ldns_rr_list *sigs = ldns_sign_public(set, keys);
				assert_non_null(sigs);
				ldns_rr_list_push_rr_list(out, sigs);
				ldns_rr_list_free(sigs);
			}
			ldns_rr_list_deep_free(set);
			set = ldns_rr_list_new();
		}
	}
	ldns_rr_list_deep_free(set);
	return out;
}

static uint8_t *message(const char *qname, ldns_rr_type qtype, ldns_pkt_rcode rcode, ldns_rr_list *an,
                        ldns_rr_list *ns, size_t *len)
{
	ldns_pkt *p = ldns_pkt_query_new(ldns_dname_new_frm_str(qname), qtype, LDNS_RR_CLASS_IN, LDNS_QR | LDNS_AA);
	assert_non_null(p);
	ldns_pkt_set_rcode(p, (uint8_t)rcode);
	if (an)
		ldns_pkt_push_rr_list(p, LDNS_SECTION_ANSWER, an);
	if (ns)
		ldns_pkt_push_rr_list(p, LDNS_SECTION_AUTHORITY, ns);
	uint8_t *wire = NULL;
	assert_int_equal(ldns_pkt2wire(&wire, p, len), LDNS_STATUS_OK);
	ldns_rr_list_free(an); /* the packet owns the records now */
	ldns_rr_list_free(ns);
	ldns_pkt_free(p);
	return wire;
}

/* example.'s DNSKEY RRset as libunbound's answer to "example. DNSKEY". */
static uint8_t *key_answer(size_t *len)
{
	ldns_rr_list *an = ldns_rr_list_new();
	ldns_rr_list_push_rr(an, ldns_rr_clone(dnskey));
	return message("example.", LDNS_RR_TYPE_DNSKEY, LDNS_RCODE_NOERROR, an, NULL, len);
}

static size_t wname(const char *text, uint8_t *out)
{
	int n = wire_name_from_text(text, out, WIRE_MAX_NAME);
	assert_true(n > 0);
	return (size_t)n;
}

/* PARTDNS_VAL_CORPUS=DIR: write each case as a seed for fuzz_val (its input format). */
static void save_seed(enum val_state key_state, enum val_state soa_state, const uint8_t *kans, size_t klen,
                      const uint8_t *msg, size_t len)
{
	static unsigned seq;
	const char *dir = getenv("PARTDNS_VAL_CORPUS");
	if (dir == NULL)
		return;
	char path[4096];
	snprintf(path, sizeof(path), "%s/seed-%02u", dir, seq++);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	uint8_t head[3] = { (uint8_t)(key_state | soa_state << 2), (uint8_t)(klen >> 8), (uint8_t)klen };
	fwrite(head, 1, 3, f);
	fwrite(kans, 1, klen, f);
	fwrite(msg, 1, len, f);
	fclose(f);
}

/*
 * Run both steps: every DNSKEY need gets key_state (with example.'s keys
 * when secure), every SOA need soa_state.
 */
static struct val_outcome run(uint8_t *msg, size_t len, const char *qname, uint16_t qtype, enum val_state key_state,
                              enum val_state soa_state, time_t now)
{
	uint8_t q[WIRE_MAX_NAME];
	size_t qlen = wname(qname, q);
	struct val_needs needs;
	struct val_outcome o;
	if (val_needs(msg, len, q, qlen, &needs) != 0) {
		memset(&o, 0, sizeof(o));
		o.state = VAL_BOGUS;
		free(msg);
		return o;
	}
	size_t klen;
	uint8_t *kans = key_answer(&klen);
	save_seed(key_state, soa_state, kans, klen, msg, len);
	for (unsigned i = 0; i < needs.n; i++) {
		struct val_need *n = &needs.need[i];
		n->state = n->type == WIRE_TYPE_DNSKEY ? key_state : soa_state;
		if (n->type == WIRE_TYPE_DNSKEY && key_state == VAL_SECURE) {
			n->answer = kans;
			n->answer_len = klen;
		}
		if (n->state == VAL_BOGUS)
			n->why = "test: bogus keys";
	}
	val_check(msg, len, q, qlen, qtype, &needs, now, &o);
	free(kans);
	free(msg);
	return o;
}

#define NOW ((time_t)time(NULL))
#define SOA "example. 300 IN SOA ns.example. host.example. 1 3600 600 86400 60"

static void test_needs(void **state)
{
	(void)state;
	size_t len;
	uint8_t *msg = message("www.example.", LDNS_RR_TYPE_A, LDNS_RCODE_NOERROR,
	                       section(true, (const char *[]){ "www.example. 300 IN A 192.0.2.1", NULL }), NULL, &len);
	uint8_t q[WIRE_MAX_NAME];
	size_t qlen = wname("www.example.", q);
	struct val_needs needs;
	assert_int_equal(val_needs(msg, len, q, qlen, &needs), 0);
	assert_int_equal(needs.n, 1);
	assert_int_equal(needs.need[0].type, WIRE_TYPE_DNSKEY);
	uint8_t z[WIRE_MAX_NAME];
	size_t zlen = wname("example.", z);
	assert_memory_equal(needs.need[0].name, z, zlen);
	free(msg);
	/* unsigned data: the SOA of its owner */
	msg = message("www.example.", LDNS_RR_TYPE_A, LDNS_RCODE_NOERROR,
	              section(false, (const char *[]){ "www.example. 300 IN A 192.0.2.1", NULL }), NULL, &len);
	assert_int_equal(val_needs(msg, len, q, qlen, &needs), 0);
	assert_int_equal(needs.n, 1);
	assert_int_equal(needs.need[0].type, WIRE_TYPE_SOA);
	assert_memory_equal(needs.need[0].name, q, qlen);
	free(msg);
}

static void test_secure_answer(void **state)
{
	(void)state;
	size_t len;
	uint8_t *msg = message("www.example.", LDNS_RR_TYPE_A, LDNS_RCODE_NOERROR,
	                       section(true, (const char *[]){ "www.example. 300 IN A 192.0.2.1",
	                                                       "www.example. 300 IN A 192.0.2.2", NULL }),
	                       NULL, &len);
	struct val_outcome o = run(msg, len, "www.example.", LDNS_RR_TYPE_A, VAL_SECURE, VAL_SECURE, NOW);
	assert_int_equal(o.state, VAL_SECURE);
}

static void test_forged_rdata(void **state)
{
	(void)state;
	ldns_rr_list *an = section(true, (const char *[]){ "www.example. 300 IN A 192.0.2.1", NULL });
	/* the GSLB's answer changed on the way: the signature no longer matches */
	ldns_rr *a = ldns_rr_list_rr(an, 0);
	ldns_rdf_deep_free(ldns_rr_pop_rdf(a));
	ldns_rr_push_rdf(a, ldns_rdf_new_frm_str(LDNS_RDF_TYPE_A, "198.51.100.66"));
	size_t len;
	uint8_t *msg = message("www.example.", LDNS_RR_TYPE_A, LDNS_RCODE_NOERROR, an, NULL, &len);
	struct val_outcome o = run(msg, len, "www.example.", LDNS_RR_TYPE_A, VAL_SECURE, VAL_SECURE, NOW);
	assert_int_equal(o.state, VAL_BOGUS);
	assert_int_equal(o.ede.code, WIRE_EDE_DNSSEC_BOGUS);
	assert_string_equal(o.zone, "example.");
}

static void test_expired_and_future(void **state)
{
	(void)state;
	ldns_key *k = ldns_key_list_key(keys, 0);
	uint32_t now = (uint32_t)time(NULL);
	ldns_key_set_inception(k, now - 20 * 86400);
	ldns_key_set_expiration(k, now - 10 * 86400);
	size_t len;
	uint8_t *msg = message("www.example.", LDNS_RR_TYPE_A, LDNS_RCODE_NOERROR,
	                       section(true, (const char *[]){ "www.example. 300 IN A 192.0.2.1", NULL }), NULL, &len);
	struct val_outcome o = run(msg, len, "www.example.", LDNS_RR_TYPE_A, VAL_SECURE, VAL_SECURE, NOW);
	assert_int_equal(o.state, VAL_BOGUS);
	assert_int_equal(o.ede.code, WIRE_EDE_SIGNATURE_EXPIRED);
	ldns_key_set_inception(k, now + 10 * 86400);
	ldns_key_set_expiration(k, now + 20 * 86400);
	msg = message("www.example.", LDNS_RR_TYPE_A, LDNS_RCODE_NOERROR,
	              section(true, (const char *[]){ "www.example. 300 IN A 192.0.2.1", NULL }), NULL, &len);
	o = run(msg, len, "www.example.", LDNS_RR_TYPE_A, VAL_SECURE, VAL_SECURE, NOW);
	assert_int_equal(o.state, VAL_BOGUS);
	assert_int_equal(o.ede.code, WIRE_EDE_SIGNATURE_NOT_YET_VALID);
	ldns_key_set_inception(k, SIG_INCEPTION);
	ldns_key_set_expiration(k, SIG_EXPIRATION);
}

static void test_unsigned(void **state)
{
	(void)state;
	size_t len;
	/* below an insecure delegation: insecure, no AD */
	uint8_t *msg = message("www.example.", LDNS_RR_TYPE_A, LDNS_RCODE_NOERROR,
	                       section(false, (const char *[]){ "www.example. 300 IN A 192.0.2.1", NULL }), NULL, &len);
	struct val_outcome o = run(msg, len, "www.example.", LDNS_RR_TYPE_A, VAL_SECURE, VAL_INSECURE, NOW);
	assert_int_equal(o.state, VAL_INSECURE);
	/* signatures stripped from a signed zone's answer */
	msg = message("www.example.", LDNS_RR_TYPE_A, LDNS_RCODE_NOERROR,
	              section(false, (const char *[]){ "www.example. 300 IN A 192.0.2.1", NULL }), NULL, &len);
	o = run(msg, len, "www.example.", LDNS_RR_TYPE_A, VAL_SECURE, VAL_SECURE, NOW);
	assert_int_equal(o.state, VAL_BOGUS);
	assert_int_equal(o.ede.code, WIRE_EDE_RRSIGS_MISSING);
	/* libunbound could not tell */
	msg = message("www.example.", LDNS_RR_TYPE_A, LDNS_RCODE_NOERROR,
	              section(false, (const char *[]){ "www.example. 300 IN A 192.0.2.1", NULL }), NULL, &len);
	o = run(msg, len, "www.example.", LDNS_RR_TYPE_A, VAL_SECURE, VAL_INDETERMINATE, NOW);
	assert_int_equal(o.state, VAL_INDETERMINATE);
}

static void test_key_states(void **state)
{
	(void)state;
	const char *const a[] = { "www.example. 300 IN A 192.0.2.1", NULL };
	size_t len;
	uint8_t *msg = message("www.example.", LDNS_RR_TYPE_A, LDNS_RCODE_NOERROR, section(true, a), NULL, &len);
	struct val_outcome o = run(msg, len, "www.example.", LDNS_RR_TYPE_A, VAL_BOGUS, VAL_SECURE, NOW);
	assert_int_equal(o.state, VAL_BOGUS);
	assert_string_equal(o.why, "test: bogus keys");
	msg = message("www.example.", LDNS_RR_TYPE_A, LDNS_RCODE_NOERROR, section(true, a), NULL, &len);
	o = run(msg, len, "www.example.", LDNS_RR_TYPE_A, VAL_INDETERMINATE, VAL_SECURE, NOW);
	assert_int_equal(o.state, VAL_INDETERMINATE);
	/* signed, but by a zone libunbound shows insecure (an island of security) */
	msg = message("www.example.", LDNS_RR_TYPE_A, LDNS_RCODE_NOERROR, section(true, a), NULL, &len);
	o = run(msg, len, "www.example.", LDNS_RR_TYPE_A, VAL_INSECURE, VAL_SECURE, NOW);
	assert_int_equal(o.state, VAL_INSECURE);
}

static void test_signer_outside(void **state)
{
	(void)state;
	/* example.'s key signs a name of another zone: never accepted (RFC 4035 §5.3.1) */
	size_t len;
	uint8_t *msg = message("www.other.", LDNS_RR_TYPE_A, LDNS_RCODE_NOERROR,
	                       section(true, (const char *[]){ "www.other. 300 IN A 192.0.2.1", NULL }), NULL, &len);
	struct val_outcome o = run(msg, len, "www.other.", LDNS_RR_TYPE_A, VAL_SECURE, VAL_SECURE, NOW);
	assert_int_equal(o.state, VAL_BOGUS);
}

static void test_nxdomain(void **state)
{
	(void)state;
	/* nx.example. lies between example. and www.example.; no wildcard (*.example. sorts before www too) */
	const char *const proof[] = { SOA, "example. 60 IN NSEC www.example. SOA NS RRSIG NSEC DNSKEY",
		                      "www.example. 60 IN NSEC example. A RRSIG NSEC", NULL };
	size_t len;
	uint8_t *msg = message("nx.example.", LDNS_RR_TYPE_A, LDNS_RCODE_NXDOMAIN, NULL, section(true, proof), &len);
	struct val_outcome o = run(msg, len, "nx.example.", LDNS_RR_TYPE_A, VAL_SECURE, VAL_SECURE, NOW);
	assert_int_equal(o.state, VAL_SECURE);
	/* the proof left out */
	msg = message("nx.example.", LDNS_RR_TYPE_A, LDNS_RCODE_NXDOMAIN, NULL,
	              section(true, (const char *[]){ SOA, NULL }), &len);
	o = run(msg, len, "nx.example.", LDNS_RR_TYPE_A, VAL_SECURE, VAL_SECURE, NOW);
	assert_int_equal(o.state, VAL_BOGUS);
	assert_int_equal(o.ede.code, WIRE_EDE_NSEC_MISSING);
	/* an NSEC that shows the name exists does not prove NXDOMAIN */
	msg = message("www.example.", LDNS_RR_TYPE_A, LDNS_RCODE_NXDOMAIN, NULL, section(true, proof), &len);
	o = run(msg, len, "www.example.", LDNS_RR_TYPE_A, VAL_SECURE, VAL_SECURE, NOW);
	assert_int_equal(o.state, VAL_BOGUS);
	/* the name covered, but the wildcard at the closest encloser exists: the answer was hidden */
	const char *const wild[] = { SOA, "example. 60 IN NSEC *.example. SOA NS RRSIG NSEC DNSKEY",
		                     "*.example. 60 IN NSEC www.example. A RRSIG NSEC", NULL };
	msg = message("nx.example.", LDNS_RR_TYPE_A, LDNS_RCODE_NXDOMAIN, NULL, section(true, wild), &len);
	o = run(msg, len, "nx.example.", LDNS_RR_TYPE_A, VAL_SECURE, VAL_SECURE, NOW);
	assert_int_equal(o.state, VAL_BOGUS);
	/* an unsigned NXDOMAIN from an insecure zone */
	msg = message("nx.example.", LDNS_RR_TYPE_A, LDNS_RCODE_NXDOMAIN, NULL,
	              section(false, (const char *[]){ SOA, NULL }), &len);
	o = run(msg, len, "nx.example.", LDNS_RR_TYPE_A, VAL_SECURE, VAL_INSECURE, NOW);
	assert_int_equal(o.state, VAL_INSECURE);
}

static void test_nodata(void **state)
{
	(void)state;
	const char *const proof[] = { SOA, "www.example. 60 IN NSEC zzz.example. A RRSIG NSEC", NULL };
	size_t len;
	uint8_t *msg = message("www.example.", LDNS_RR_TYPE_AAAA, LDNS_RCODE_NOERROR, NULL, section(true, proof), &len);
	struct val_outcome o = run(msg, len, "www.example.", LDNS_RR_TYPE_AAAA, VAL_SECURE, VAL_SECURE, NOW);
	assert_int_equal(o.state, VAL_SECURE);
	/* the same NSEC says A exists: no proof that A does not */
	msg = message("www.example.", LDNS_RR_TYPE_A, LDNS_RCODE_NOERROR, NULL, section(true, proof), &len);
	o = run(msg, len, "www.example.", LDNS_RR_TYPE_A, VAL_SECURE, VAL_SECURE, NOW);
	assert_int_equal(o.state, VAL_BOGUS);
	assert_int_equal(o.ede.code, WIRE_EDE_NSEC_MISSING);
}

/* NSEC3 of example. with iterations iter: apex and www hashed, two records covering the rest. */
static void nsec3_chain(unsigned iter, char out[2][512])
{
	const char *names[2] = { "example.", "www.example." };
	const char *types[2] = { "SOA NS RRSIG DNSKEY NSEC3PARAM", "A RRSIG" };
	char *hash[2];
	for (int i = 0; i < 2; i++) {
		ldns_rdf *n = ldns_dname_new_frm_str(names[i]);
		ldns_rdf *h = ldns_nsec3_hash_name(n, 1, (uint16_t)iter, 0, NULL);
		assert_non_null(h);
		hash[i] = ldns_rdf2str(h); /* "label." */
		hash[i][strlen(hash[i]) - 1] = '\0';
		ldns_rdf_deep_free(n);
		ldns_rdf_deep_free(h);
	}
	for (int i = 0; i < 2; i++)
		snprintf(out[i], 512, "%s.example. 60 IN NSEC3 1 0 %u - %s %s", hash[i], iter, hash[1 - i], types[i]);
	free(hash[0]);
	free(hash[1]);
}

static void test_nsec3(void **state)
{
	(void)state;
	char chain[2][512];
	nsec3_chain(0, chain);
	size_t len;
	/* NXDOMAIN: the closest encloser example. matched, next closer and wildcard covered */
	uint8_t *msg = message("nx.example.", LDNS_RR_TYPE_A, LDNS_RCODE_NXDOMAIN, NULL,
	                       section(true, (const char *[]){ SOA, chain[0], chain[1], NULL }), &len);
	struct val_outcome o = run(msg, len, "nx.example.", LDNS_RR_TYPE_A, VAL_SECURE, VAL_SECURE, NOW);
	assert_int_equal(o.state, VAL_SECURE);
	/* NODATA: www.example. has A only */
	msg = message("www.example.", LDNS_RR_TYPE_AAAA, LDNS_RCODE_NOERROR, NULL,
	              section(true, (const char *[]){ SOA, chain[0], chain[1], NULL }), &len);
	o = run(msg, len, "www.example.", LDNS_RR_TYPE_AAAA, VAL_SECURE, VAL_SECURE, NOW);
	assert_int_equal(o.state, VAL_SECURE);
	msg = message("www.example.", LDNS_RR_TYPE_A, LDNS_RCODE_NOERROR, NULL,
	              section(true, (const char *[]){ SOA, chain[0], chain[1], NULL }), &len);
	o = run(msg, len, "www.example.", LDNS_RR_TYPE_A, VAL_SECURE, VAL_SECURE, NOW);
	assert_int_equal(o.state, VAL_BOGUS);
	/* more iterations than RFC 9276 lets a validator spend */
	nsec3_chain(200, chain);
	msg = message("nx.example.", LDNS_RR_TYPE_A, LDNS_RCODE_NXDOMAIN, NULL,
	              section(true, (const char *[]){ SOA, chain[0], chain[1], NULL }), &len);
	o = run(msg, len, "nx.example.", LDNS_RR_TYPE_A, VAL_SECURE, VAL_SECURE, NOW);
	assert_int_equal(o.state, VAL_BOGUS);
	assert_int_equal(o.ede.code, WIRE_EDE_UNSUPPORTED_NSEC3_ITER);
}

static void test_wildcard(void **state)
{
	(void)state;
	/* *.example. A signed, then served as host.example. (the expansion) */
	ldns_rr_list *an = section(true, (const char *[]){ "*.example. 300 IN A 192.0.2.7", NULL });
	for (size_t i = 0; i < ldns_rr_list_rr_count(an); i++) {
		ldns_rr *r = ldns_rr_list_rr(an, i);
		ldns_rdf_deep_free(ldns_rr_owner(r));
		ldns_rr_set_owner(r, ldns_dname_new_frm_str("host.example."));
	}
	ldns_rr_list *an2 = ldns_rr_list_clone(an);
	size_t len;
	/* with the NSEC showing host.example. itself does not exist */
	uint8_t *msg = message("host.example.", LDNS_RR_TYPE_A, LDNS_RCODE_NOERROR, an,
	                       section(true, (const char *[]){ "example. 60 IN NSEC www.example. SOA NS RRSIG NSEC DNSKEY",
	                                                       NULL }),
	                       &len);
	struct val_outcome o = run(msg, len, "host.example.", LDNS_RR_TYPE_A, VAL_SECURE, VAL_SECURE, NOW);
	assert_int_equal(o.state, VAL_SECURE);
	/* without it: a replayed wildcard could hide a real name */
	msg = message("host.example.", LDNS_RR_TYPE_A, LDNS_RCODE_NOERROR, an2, NULL, &len);
	o = run(msg, len, "host.example.", LDNS_RR_TYPE_A, VAL_SECURE, VAL_SECURE, NOW);
	assert_int_equal(o.state, VAL_BOGUS);
	assert_int_equal(o.ede.code, WIRE_EDE_NSEC_MISSING);
}

static void test_cname_out_of_zone(void **state)
{
	(void)state;
	/* a signed CNAME into another zone: its target is the next hop's business */
	size_t len;
	uint8_t *msg = message("video.example.", LDNS_RR_TYPE_A, LDNS_RCODE_NOERROR,
	                       section(true, (const char *[]){ "video.example. 300 IN CNAME video.cdn.test.", NULL }),
	                       NULL, &len);
	struct val_outcome o = run(msg, len, "video.example.", LDNS_RR_TYPE_A, VAL_SECURE, VAL_SECURE, NOW);
	assert_int_equal(o.state, VAL_SECURE);
}

static void test_garbage(void **state)
{
	(void)state;
	static const uint8_t junk[] = { 0, 1, 0x81, 0x80, 0, 1, 0, 5, 0, 0, 0, 0, 3, 'w', 'w', 'w', 0 };
	uint8_t q[WIRE_MAX_NAME];
	size_t qlen = wname("www.", q);
	struct val_needs needs;
	assert_int_equal(val_needs(junk, sizeof(junk), q, qlen, &needs), -1);
	struct val_outcome o;
	needs.n = 0;
	val_check(junk, sizeof(junk), q, qlen, 1, &needs, NOW, &o);
	assert_int_equal(o.state, VAL_BOGUS);
}

static int setup(void **state)
{
	(void)state;
	ldns_key *k = ldns_key_new_frm_algorithm(LDNS_SIGN_ECDSAP256SHA256, 256);
	assert_non_null(k);
	ldns_key_set_pubkey_owner(k, ldns_dname_new_frm_str("example."));
	ldns_key_set_flags(k, 257);
	ldns_key_set_inception(k, SIG_INCEPTION);
	ldns_key_set_expiration(k, SIG_EXPIRATION);
	keys = ldns_key_list_new();
	ldns_key_list_push_key(keys, k);
	dnskey = ldns_key2rr(k);
	ldns_key_set_keytag(k, ldns_calc_keytag(dnskey));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	ldns_key_list_free(keys);
	ldns_rr_free(dnskey);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_needs),          cmocka_unit_test(test_secure_answer),
		cmocka_unit_test(test_forged_rdata),   cmocka_unit_test(test_expired_and_future),
		cmocka_unit_test(test_unsigned),       cmocka_unit_test(test_key_states),
		cmocka_unit_test(test_signer_outside), cmocka_unit_test(test_nxdomain),
		cmocka_unit_test(test_nodata),         cmocka_unit_test(test_nsec3),
		cmocka_unit_test(test_wildcard),
		cmocka_unit_test(test_cname_out_of_zone), cmocka_unit_test(test_garbage),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
