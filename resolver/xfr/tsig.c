/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TSIG (RFC 8945) for the policy-zone transfers, done here rather than by
 * ldns: ldns 1.8's transfer client (ldns_axfr_next) checks no signature on
 * the messages of a transfer at all; its verifier takes one message, so it
 * cannot cover the unsigned messages RFC 8945 5.3.1 lets a server put
 * between signed ones, and checks no time; its signer does not know
 * hmac-sha224, misspells hmac-sha384 and wants hmac-md5 by its long name.
 * The HMAC is libcrypto's (OpenSSL 3 EVP_MAC), which ldns links anyway.
 *
 * What is refused, and why: a reply whose first message is unsigned (the
 * first message is what answers our signed query); a signature by another
 * key or algorithm; a MAC shorter than the hash (RFC 8945 5.2.2.1 allows
 * truncation, but no primary we know of sends one by default and it only
 * weakens the check); a time outside the fudge; more than 99 unsigned
 * messages in a row. That the last message is signed is the caller's to
 * check (only it knows which message is the last).
 */
#include "resolver/xfr/tsig.h"

#include <ldns/ldns.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#define TSIG_TYPE 250
#define CLASS_ANY 255

static const struct {
	const char *conf, *wire, *digest;
	size_t mac_len;
} algs[] = {
	{ "hmac-md5", "hmac-md5.sig-alg.reg.int.", "MD5", 16 },
	{ "hmac-sha1", "hmac-sha1.", "SHA1", 20 },
	{ "hmac-sha224", "hmac-sha224.", "SHA224", 28 },
	{ "hmac-sha256", "hmac-sha256.", "SHA256", 32 },
	{ "hmac-sha384", "hmac-sha384.", "SHA384", 48 },
	{ "hmac-sha512", "hmac-sha512.", "SHA512", 64 },
};

/* A domain name from text to canonical wire form in out (cap bytes). @return its length, or 0. */
static size_t name_wire(const char *text, uint8_t *out, size_t cap)
{
	ldns_rdf *d = NULL;
	if (ldns_str2rdf_dname(&d, text) != LDNS_STATUS_OK)
		return 0;
	ldns_dname2canonical(d);
	size_t n = ldns_rdf_size(d);
	if (n > cap)
		n = 0;
	else
		memcpy(out, ldns_rdf_data(d), n);
	ldns_rdf_deep_free(d);
	return n;
}

int tsig_key_init(struct tsig_key *k, const char *name, const char *algorithm, const char *secret, const char **why)
{
	memset(k, 0, sizeof(*k));
	const char *alg = algorithm ? algorithm : "hmac-sha256";
	size_t i = 0;
	while (i < sizeof(algs) / sizeof(algs[0]) && strcmp(algs[i].conf, alg) != 0)
		i++;
	if (i == sizeof(algs) / sizeof(algs[0])) {
		*why = "unknown TSIG algorithm";
		return -1;
	}
	k->digest = algs[i].digest;
	k->mac_len = algs[i].mac_len;
	k->alg_len = name_wire(algs[i].wire, k->alg, sizeof(k->alg));
	k->name_len = name_wire(name, k->name, sizeof(k->name));
	if (k->name_len == 0) {
		*why = "the TSIG key's name is not a domain name";
		return -1;
	}
	ldns_rdf *b64 = NULL;
	if (ldns_str2rdf_b64(&b64, secret) != LDNS_STATUS_OK || ldns_rdf_size(b64) == 0 ||
	    ldns_rdf_size(b64) > sizeof(k->secret)) {
		ldns_rdf_deep_free(b64);
		*why = "the TSIG secret is not base64, or is empty or too long";
		return -1;
	}
	k->secret_len = ldns_rdf_size(b64);
	memcpy(k->secret, ldns_rdf_data(b64), k->secret_len);
	ldns_rdf_deep_free(b64);
	return 0;
}

int tsig_stream_init(struct tsig_stream *s, const struct tsig_key *k)
{
	memset(s, 0, sizeof(*s));
	s->key = k;
	EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	s->ctx = mac ? EVP_MAC_CTX_new(mac) : NULL;
	EVP_MAC_free(mac); /* the context holds its own reference */
	if (s->ctx == NULL) {
		snprintf(s->why, sizeof(s->why), "libcrypto has no HMAC");
		return -1;
	}
	return 0;
}

void tsig_stream_clear(struct tsig_stream *s)
{
	EVP_MAC_CTX_free(s->ctx);
	s->ctx = NULL;
}

/* Start a MAC with the stream's key. */
static int mac_start(struct tsig_stream *s)
{
	OSSL_PARAM p[2] = { OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)s->key->digest, 0),
		            OSSL_PARAM_construct_end() };
	if (EVP_MAC_init(s->ctx, s->key->secret, s->key->secret_len, p) != 1) {
		snprintf(s->why, sizeof(s->why), "libcrypto cannot compute HMAC-%s", s->key->digest);
		return -1;
	}
	return 0;
}

static void mac_add(struct tsig_stream *s, const void *p, size_t n)
{
	EVP_MAC_update(s->ctx, p, n);
}

static void put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static unsigned get16(const uint8_t *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

static uint64_t get48(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 6; i++)
		v = v << 8 | p[i];
	return v;
}

/* The variables of RFC 8945 4.3.3 after the key name and algorithm: time, fudge, error, other data. */
static size_t put_times(uint8_t *p, uint64_t t, unsigned fudge)
{
	for (int i = 0; i < 6; i++)
		p[i] = (uint8_t)(t >> (8 * (5 - i)));
	put16(p + 6, fudge);
	return 8;
}

int tsig_sign_query(struct tsig_stream *s, uint8_t *wire, size_t *len, size_t cap, uint64_t now)
{
	const struct tsig_key *k = s->key;
	size_t n = *len;
	size_t rdlen = k->alg_len + 8 + 2 + k->mac_len + 6;
	if (n < 12 || n + k->name_len + 10 + rdlen > cap || get16(wire + 10) == 0xffff) {
		snprintf(s->why, sizeof(s->why), "no room for the TSIG record");
		return -1;
	}
	/* MAC: the message as it is, then the variables (key name, class, TTL, algorithm, times, error, other) */
	uint8_t var[8 + 6];
	if (mac_start(s) != 0)
		return -1;
	mac_add(s, wire, n);
	mac_add(s, k->name, k->name_len);
	put16(var, CLASS_ANY);
	memset(var + 2, 0, 4);
	mac_add(s, var, 6);
	mac_add(s, k->alg, k->alg_len);
	put_times(var, now, TSIG_FUDGE);
	memset(var + 8, 0, 4); /* error 0, no other data */
	mac_add(s, var, 12);
	uint8_t mac[EVP_MAX_MD_SIZE];
	size_t mlen = 0;
	if (EVP_MAC_final(s->ctx, mac, &mlen, sizeof(mac)) != 1 || mlen != k->mac_len) {
		snprintf(s->why, sizeof(s->why), "libcrypto failed to sign");
		return -1;
	}
	/* the record: owner, type, class, TTL, RDLENGTH, then the RDATA */
	uint8_t *p = wire + n;
	memcpy(p, k->name, k->name_len);
	p += k->name_len;
	put16(p, TSIG_TYPE);
	put16(p + 2, CLASS_ANY);
	memset(p + 4, 0, 4);
	put16(p + 8, (unsigned)rdlen);
	p += 10;
	memcpy(p, k->alg, k->alg_len);
	p += k->alg_len;
	p += put_times(p, now, TSIG_FUDGE);
	put16(p, (unsigned)mlen);
	memcpy(p + 2, mac, mlen);
	p += 2 + mlen;
	memcpy(p, wire, 2); /* original ID */
	memset(p + 2, 0, 4);
	p += 6;
	*len = (size_t)(p - wire);
	put16(wire + 10, get16(wire + 10) + 1);
	put16(s->prior, (unsigned)mlen);
	memcpy(s->prior + 2, mac, mlen);
	s->prior_len = 2 + mlen;
	s->verified = 0;
	s->unsigned_run = 0;
	s->running = false;
	return 0;
}

/* Skip a (possibly compressed) name at *pos. @return 0, or -1 (malformed). */
static int skip_name(const uint8_t *w, size_t len, size_t *pos)
{
	size_t p = *pos;
	for (int labels = 0; labels < 128; labels++) {
		if (p >= len)
			return -1;
		uint8_t c = w[p];
		if (c == 0) {
			*pos = p + 1;
			return 0;
		}
		if ((c & 0xc0) == 0xc0) {
			if (p + 2 > len)
				return -1;
			*pos = p + 2;
			return 0;
		}
		if (c & 0xc0)
			return -1;
		p += 1 + (size_t)c;
	}
	return -1;
}

/* Where the last record of the message starts, or 0 when it has none (or is malformed: *bad). */
static size_t last_rr(const uint8_t *w, size_t len, bool *bad)
{
	unsigned qd = get16(w + 4), rrs = get16(w + 6) + get16(w + 8) + get16(w + 10);
	size_t p = 12, last = 0;
	*bad = false;
	for (unsigned i = 0; i < qd; i++)
		if (skip_name(w, len, &p) != 0 || (p += 4) > len)
			goto bad;
	for (unsigned i = 0; i < rrs; i++) {
		last = p;
		if (skip_name(w, len, &p) != 0 || p + 10 > len)
			goto bad;
		p += 10 + get16(w + p + 8);
		if (p > len)
			goto bad;
	}
	return last;
bad:
	*bad = true;
	return 0;
}

/* A name at *pos (compressed or not) equals the canonical wire name want. */
static bool name_is(const uint8_t *w, size_t len, size_t *pos, const uint8_t *want, size_t want_len)
{
	ldns_rdf *d = NULL;
	if (ldns_wire2dname(&d, w, len, pos) != LDNS_STATUS_OK)
		return false;
	ldns_dname2canonical(d);
	bool eq = ldns_rdf_size(d) == want_len && memcmp(ldns_rdf_data(d), want, want_len) == 0;
	ldns_rdf_deep_free(d);
	return eq;
}

static const char *tsig_error_name(unsigned e)
{
	switch (e) {
	case 16: return "BADSIG";
	case 17: return "BADKEY";
	case 18: return "BADTIME";
	case 22: return "BADTRUNC";
	default: return "an error";
	}
}

enum tsig_verdict tsig_verify(struct tsig_stream *s, const uint8_t *w, size_t len, uint64_t now)
{
	const struct tsig_key *k = s->key;
	bool bad = false;
	size_t at = len >= 12 && get16(w + 10) > 0 ? last_rr(w, len, &bad) : 0;
	size_t p = at;
	if (bad) {
		snprintf(s->why, sizeof(s->why), "a malformed message");
		return TSIG_BAD;
	}
	if (at == 0 || skip_name(w, len, &p) != 0 || get16(w + p) != TSIG_TYPE) {
		/* unsigned: covered by the next signed message's MAC (RFC 8945 5.3.1) */
		if (s->verified == 0) {
			snprintf(s->why, sizeof(s->why), "the reply is not signed");
			return TSIG_BAD;
		}
		if (++s->unsigned_run > TSIG_MAX_UNSIGNED) {
			snprintf(s->why, sizeof(s->why), "more than %d unsigned messages in a row", TSIG_MAX_UNSIGNED);
			return TSIG_BAD;
		}
		if (!s->running) {
			if (mac_start(s) != 0)
				return TSIG_BAD;
			mac_add(s, s->prior, s->prior_len);
			s->running = true;
		}
		mac_add(s, w, len);
		return TSIG_UNSIGNED;
	}
	/* the TSIG record: its owner is the key's name, class ANY, and it ends the message */
	size_t q = at;
	if (!name_is(w, len, &q, k->name, k->name_len)) {
		snprintf(s->why, sizeof(s->why), "signed with another key");
		return TSIG_BAD;
	}
	size_t rd = q + 10, rdlen = get16(w + q + 8);
	if (get16(w + q + 2) != CLASS_ANY || rd + rdlen != len) {
		snprintf(s->why, sizeof(s->why), "a malformed TSIG record");
		return TSIG_BAD;
	}
	q = rd;
	if (!name_is(w, len, &q, k->alg, k->alg_len)) {
		snprintf(s->why, sizeof(s->why), "signed with another algorithm");
		return TSIG_BAD;
	}
	if (q + 10 > len) {
		snprintf(s->why, sizeof(s->why), "a malformed TSIG record");
		return TSIG_BAD;
	}
	const uint8_t *times = w + q;
	uint64_t signed_at = get48(times);
	unsigned fudge = get16(times + 6), mlen = get16(times + 8);
	const uint8_t *mac = times + 10;
	q += 10 + mlen;
	if (q + 6 > len || q + 6 + get16(w + q + 4) != len) {
		snprintf(s->why, sizeof(s->why), "a malformed TSIG record");
		return TSIG_BAD;
	}
	const uint8_t *orig_id = w + q;
	unsigned error = get16(w + q + 2);
	if (error != 0) {
		snprintf(s->why, sizeof(s->why), "the primary answers TSIG %s (%u): is the key right?",
		         tsig_error_name(error), error);
		return TSIG_BAD;
	}
	if (mlen != k->mac_len) {
		snprintf(s->why, sizeof(s->why), "a MAC of %u bytes, not %zu (truncated MACs are refused)", mlen,
		         k->mac_len);
		return TSIG_BAD;
	}
	/* the digest: the prior MAC, the unsigned messages since, this message without its TSIG (the
	   original ID, one record less), then all the variables for the first message, the times after */
	if (!s->running) {
		if (mac_start(s) != 0)
			return TSIG_BAD;
		mac_add(s, s->prior, s->prior_len);
	}
	s->running = false;
	uint8_t hdr[12];
	memcpy(hdr, w, 12);
	memcpy(hdr, orig_id, 2);
	put16(hdr + 10, get16(w + 10) - 1);
	mac_add(s, hdr, 12);
	mac_add(s, w + 12, at - 12);
	if (s->verified == 0) {
		uint8_t var[6] = { CLASS_ANY >> 8, CLASS_ANY & 0xff, 0, 0, 0, 0 };
		mac_add(s, k->name, k->name_len);
		mac_add(s, var, 6);
		mac_add(s, k->alg, k->alg_len);
		mac_add(s, times, 8);
		mac_add(s, w + q + 2, len - (q + 2)); /* error, other length, other data */
	} else {
		mac_add(s, times, 8);
	}
	uint8_t mine[EVP_MAX_MD_SIZE];
	size_t mine_len = 0;
	if (EVP_MAC_final(s->ctx, mine, &mine_len, sizeof(mine)) != 1 || mine_len != mlen ||
	    CRYPTO_memcmp(mine, mac, mlen) != 0) {
		snprintf(s->why, sizeof(s->why), "a wrong TSIG signature (message %u)",
		         s->verified + s->unsigned_run + 1);
		return TSIG_BAD;
	}
	uint64_t off = now > signed_at ? now - signed_at : signed_at - now;
	if (off > fudge) {
		snprintf(s->why, sizeof(s->why), "signed %llu s %s our clock (fudge %u s)", (unsigned long long)off,
		         now > signed_at ? "behind" : "ahead of", fudge);
		return TSIG_BAD;
	}
	put16(s->prior, mlen);
	memcpy(s->prior + 2, mac, mlen);
	s->prior_len = 2 + mlen;
	s->verified++;
	s->unsigned_run = 0;
	return TSIG_SIGNED;
}
