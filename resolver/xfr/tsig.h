/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. TSIG (RFC 8945) for zone transfers: sign a query, verify every message of its reply. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TSIG_MAX_MAC 64      /* hmac-sha512 */
#define TSIG_MAX_SECRET 512  /* decoded bytes; tsig-keygen and keymgr make 32 to 64 */
#define TSIG_FUDGE 300       /* seconds of clock difference allowed, each way (RFC 8945 10) */
#define TSIG_MAX_UNSIGNED 99 /* unsigned messages between signed ones a client must take (RFC 8945 5.3.1) */
#define TSIG_RR_MAX 400      /* bytes a TSIG record adds to a query, at most */

/* A key, as the messages carry it: names in canonical (lower-case) wire form. */
struct tsig_key {
	uint8_t name[256], alg[64];
	size_t name_len, alg_len;
	const char *digest;  /* OpenSSL's name of the hash */
	size_t mac_len;
	uint8_t secret[TSIG_MAX_SECRET];
	size_t secret_len;
};

/**
 * A key from the config: name (a domain name), algorithm ("hmac-sha256",
 * ... as conf/check.c lists them; NULL: hmac-sha256), secret (base64).
 * @return 0, or -1 (*why says what is wrong)
 */
int tsig_key_init(struct tsig_key *k, const char *name, const char *algorithm, const char *secret, const char **why);

struct evp_mac_ctx_st;

/* One signed query and its reply, message by message. */
struct tsig_stream {
	const struct tsig_key *key;
	struct evp_mac_ctx_st *ctx;
	uint8_t prior[2 + TSIG_MAX_MAC]; /* the last MAC: the query's, then each signed message's (size first) */
	size_t prior_len;
	unsigned verified;               /* signed reply messages verified */
	unsigned unsigned_run;           /* messages since the last signed one */
	bool running;                    /* ctx holds the digest of those messages so far */
	char why[160];                   /* why the last call failed */
};

/** Start a stream with key k. @return 0, or -1 (no memory, or libcrypto lacks the algorithm: s->why). */
int tsig_stream_init(struct tsig_stream *s, const struct tsig_key *k);
void tsig_stream_clear(struct tsig_stream *s);

/**
 * Sign the query wire[0..*len) (room for cap bytes): append its TSIG record,
 * signed at now (seconds since 1970), and remember its MAC for the reply.
 * @return 0, or -1 (s->why)
 */
int tsig_sign_query(struct tsig_stream *s, uint8_t *wire, size_t *len, size_t cap, uint64_t now);

enum tsig_verdict {
	TSIG_SIGNED,   /* signed with our key, the MAC and the time are right */
	TSIG_UNSIGNED, /* no TSIG, and that is allowed here: more must follow, the last one signed */
	TSIG_BAD,      /* refuse the reply (s->why) */
};

/**
 * The next message of the reply, as received: the first must be signed; then
 * at most TSIG_MAX_UNSIGNED unsigned ones in a row, each covered by the
 * next signed one's MAC.
 */
enum tsig_verdict tsig_verify(struct tsig_stream *s, const uint8_t *wire, size_t len, uint64_t now);
