/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * resolver/base/tls.c: loading a certificate chain and key (and refusing
 * what is not one, naming the file), ALPN, handshakes over a socketpair
 * with a verifying client, resumption by ticket across a new context (a
 * reload), and references. The certificates are made here with libcrypto: a
 * root the client trusts, an intermediate only the chain file carries, a
 * leaf with DNS SANs and a chosen notAfter.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "resolver/base/tls.h"

static const char *const alpn_dot[] = { "dot", NULL };

static char dir[64];
static char chain[128], key[128], other_key[128], cn_cert[128], cn_key[128], enc_key[128], empty[128],
	garbage[128], big[128], fifo[128], sub[128], missing[128];
static X509 *root;           /* the client's trust anchor; in no file */
static time_t leaf_not_after; /* 2040-01-02 03:04:05 UTC */

static EVP_PKEY *keygen(void)
{
	EVP_PKEY *k = EVP_EC_gen("P-256");
	assert_non_null(k);
	return k;
}

static void add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX v3;
	X509V3_set_ctx_nodb(&v3);
	X509V3_set_ctx(&v3, issuer, x, NULL, NULL, 0);
	X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &v3, nid, value);
	assert_non_null(e);
	assert_int_equal(X509_add_ext(x, e, -1), 1);
	X509_EXTENSION_free(e);
}

/* A certificate for key, signed by issuer_key (self-signed when issuer is NULL). san NULL: none. */
static X509 *mkcert(EVP_PKEY *k, const char *cn, const char *san, bool ca, X509 *issuer, EVP_PKEY *issuer_key,
                    time_t not_after)
{
	static long serial = 1;
	X509 *x = X509_new();
	assert_non_null(x);
	assert_int_equal(X509_set_version(x, X509_VERSION_3), 1);
	ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
	assert_non_null(X509_gmtime_adj(X509_getm_notBefore(x), -3600));
	assert_non_null(ASN1_TIME_set(X509_getm_notAfter(x), not_after));
	X509_NAME *n = X509_get_subject_name(x);
	assert_int_equal(X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0), 1);
	assert_int_equal(X509_set_issuer_name(x, issuer != NULL ? X509_get_subject_name(issuer) : n), 1);
	assert_int_equal(X509_set_pubkey(x, k), 1);
	X509 *iss = issuer != NULL ? issuer : x;
	if (ca) {
		add_ext(x, iss, NID_basic_constraints, "critical,CA:TRUE");
		add_ext(x, iss, NID_key_usage, "critical,keyCertSign,cRLSign");
	} else {
		add_ext(x, iss, NID_basic_constraints, "critical,CA:FALSE");
		add_ext(x, iss, NID_ext_key_usage, "serverAuth");
	}
	if (san != NULL)
		add_ext(x, iss, NID_subject_alt_name, san);
	assert_true(X509_sign(x, issuer_key != NULL ? issuer_key : k, EVP_sha256()) > 0);
	return x;
}

static void path(char *out, const char *name)
{
	snprintf(out, 128, "%s/%s", dir, name);
}

static FILE *create(const char *p)
{
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	return f;
}

static void write_key(const char *p, EVP_PKEY *k, bool encrypted)
{
	FILE *f = create(p);
	if (encrypted)
		assert_int_equal(
			PEM_write_PrivateKey(f, k, EVP_aes_256_cbc(), (unsigned char *)"secret", 6, NULL, NULL), 1);
	else
		assert_int_equal(PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL), 1);
	assert_int_equal(fclose(f), 0);
}

static int setup(void **state)
{
	signal(SIGPIPE, SIG_IGN);
	snprintf(dir, sizeof(dir), "/tmp/partdns-test-tls-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	path(chain, "chain.pem");
	path(key, "key.pem");
	path(other_key, "other.pem");
	path(cn_cert, "cn.pem");
	path(cn_key, "cnkey.pem");
	path(enc_key, "enc.pem");
	path(empty, "empty.pem");
	path(garbage, "garbage.pem");
	path(big, "big.pem");
	path(fifo, "fifo");
	path(sub, "sub");
	path(missing, "missing.pem");

	struct tm tm = { .tm_year = 2040 - 1900, .tm_mon = 0, .tm_mday = 2, .tm_hour = 3, .tm_min = 4, .tm_sec = 5 };
	leaf_not_after = timegm(&tm);
	time_t ca_after = time(NULL) + 86400 * 365 * 30;
	EVP_PKEY *root_key = keygen(), *mid_key = keygen(), *leaf_key = keygen(), *other = keygen(), *cnk = keygen();
	root = mkcert(root_key, "partdns test root", NULL, true, NULL, NULL, ca_after);
	X509 *mid = mkcert(mid_key, "partdns test intermediate", NULL, true, root, root_key, ca_after);
	X509 *leaf = mkcert(leaf_key, "dns.example.test", "DNS:dns.example.test,DNS:dot.example.test,IP:192.0.2.53",
	                    false, mid, mid_key, leaf_not_after);
	X509 *cn = mkcert(cnk, "cn-only.example.test", NULL, false, NULL, NULL, ca_after);

	/* the chain file: the leaf first, then the intermediate the client does not have */
	FILE *f = create(chain);
	assert_int_equal(PEM_write_X509(f, leaf), 1);
	assert_int_equal(PEM_write_X509(f, mid), 1);
	assert_int_equal(fclose(f), 0);
	write_key(key, leaf_key, false);
	write_key(other_key, other, false);
	write_key(enc_key, leaf_key, true);
	f = create(cn_cert);
	assert_int_equal(PEM_write_X509(f, cn), 1);
	assert_int_equal(fclose(f), 0);
	write_key(cn_key, cnk, false);
	assert_int_equal(fclose(create(empty)), 0);
	f = create(garbage);
	assert_true(fputs("this is not a certificate\n", f) >= 0);
	assert_int_equal(fclose(f), 0);
	/* over 1 MiB: a sparse file is enough, the size is what is refused */
	f = create(big);
	assert_int_equal(ftruncate(fileno(f), (1 << 20) + 1), 0);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(mkdir(sub, 0700), 0);

	X509_free(mid);
	X509_free(leaf);
	X509_free(cn);
	EVP_PKEY_free(root_key);
	EVP_PKEY_free(mid_key);
	EVP_PKEY_free(leaf_key);
	EVP_PKEY_free(other);
	EVP_PKEY_free(cnk);
	/* a load that blocks (the FIFO) is a failed test, not a hung one */
	alarm(60);
	return 0;
}

static int teardown(void **state)
{
	alarm(0);
	const char *files[] = { chain, key, other_key, cn_cert, cn_key, enc_key, empty, garbage, big, fifo };
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		unlink(files[i]);
	rmdir(sub);
	rmdir(dir);
	X509_free(root);
	return 0;
}

/* 1. A good chain and key load; notAfter and the names are the leaf's. */
static void test_load(void **state)
{
	char err[512] = "";
	struct tls_server *t = tls_server_new(chain, key, alpn_dot, err, sizeof(err));
	assert_non_null(t);
	assert_int_equal((long long)tls_server_not_after(t), (long long)leaf_not_after);
	/* DNS SANs only (the IP SAN is not a name), in the certificate's order */
	assert_string_equal(tls_server_names(t), "dns.example.test,dot.example.test");
	tls_server_unref(t);

	/* no SAN: the CN */
	t = tls_server_new(cn_cert, cn_key, NULL, err, sizeof(err));
	assert_non_null(t);
	assert_string_equal(tls_server_names(t), "cn-only.example.test");
	tls_server_unref(t);
	/* the failures above left nothing in this thread's OpenSSL error queue */
	assert_int_equal(ERR_peek_error(), 0);
}

/* A load that must fail, with an error naming each of want (NULL-terminated). */
static void refused(const char *cert, const char *k, const char *const *want)
{
	char err[512] = "";
	struct tls_server *t = tls_server_new(cert, k, alpn_dot, err, sizeof(err));
	if (t != NULL) {
		tls_server_unref(t);
		fail_msg("%s + %s loaded", cert, k);
	}
	for (size_t i = 0; want[i] != NULL; i++)
		if (strstr(err, want[i]) == NULL)
			fail_msg("error \"%s\" does not say \"%s\"", err, want[i]);
	assert_int_equal(ERR_peek_error(), 0);
}

/* 2. What is not a matching chain and key is refused, naming the file and why. */
static void test_refused(void **state)
{
	refused(chain, other_key, (const char *[]){ other_key, chain, "does not match the certificate", NULL });
	refused(cn_cert, key, (const char *[]){ key, cn_cert, "does not match", NULL });
	refused(missing, key, (const char *[]){ "tls_cert", missing, "No such file", NULL });
	refused(chain, missing, (const char *[]){ "tls_key", missing, "No such file", NULL });
	refused(sub, key, (const char *[]){ sub, "directory", NULL });
	refused(chain, sub, (const char *[]){ sub, "directory", NULL });
	refused(fifo, key, (const char *[]){ fifo, "not a regular file", NULL });
	refused(chain, fifo, (const char *[]){ fifo, "not a regular file", NULL });
	refused(empty, key, (const char *[]){ empty, "empty", NULL });
	refused(chain, empty, (const char *[]){ empty, "empty", NULL });
	refused(garbage, key, (const char *[]){ garbage, "no PEM certificate", NULL });
	refused(chain, garbage, (const char *[]){ garbage, "no PEM private key", NULL });
	refused(big, key, (const char *[]){ big, "over the 1 MiB", NULL });
	/* a key under a passphrase fails at once: no prompt on a terminal */
	refused(chain, enc_key, (const char *[]){ enc_key, "encrypted", NULL });
	/* a key file given as the certificate: no certificate in it */
	refused(key, key, (const char *[]){ key, "no PEM certificate", NULL });
	/* an ALPN name over 255 bytes */
	char longname[300];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	const char *const alpn_long[] = { "dot", longname, NULL };
	char err[512] = "";
	assert_null(tls_server_new(chain, key, alpn_long, err, sizeof(err)));
	assert_non_null(strstr(err, "ALPN"));
}

/* A client context that trusts only the root, offering alpn (wire form, NULL: none), at exactly TLS version v
 * (0: any). */
static SSL_CTX *client_ctx(const char *alpn, size_t alpn_len, int v)
{
	SSL_CTX *c = SSL_CTX_new(TLS_client_method());
	assert_non_null(c);
	SSL_CTX_set_verify(c, SSL_VERIFY_PEER, NULL);
	assert_int_equal(X509_STORE_add_cert(SSL_CTX_get_cert_store(c), root), 1);
	if (v != 0) {
		assert_int_equal(SSL_CTX_set_min_proto_version(c, v), 1);
		assert_int_equal(SSL_CTX_set_max_proto_version(c, v), 1);
	}
	/* 0 is success here, unlike the rest of OpenSSL */
	if (alpn != NULL)
		assert_int_equal(SSL_CTX_set_alpn_protos(c, (const unsigned char *)alpn, (unsigned)alpn_len), 0);
	return c;
}

struct conn {
	int fd[2];
	SSL *c, *s;
	unsigned long c_err, s_err; /* the first OpenSSL error of a failed side */
};

static void conn_open(struct conn *k, struct tls_server *t, SSL_CTX *cctx, SSL_SESSION *resume)
{
	memset(k, 0, sizeof(*k));
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, k->fd), 0);
	k->s = tls_server_ssl(t, k->fd[0]);
	assert_non_null(k->s);
	k->c = SSL_new(cctx);
	assert_non_null(k->c);
	assert_int_equal(SSL_set_fd(k->c, k->fd[1]), 1);
	assert_int_equal(SSL_set1_host(k->c, "dns.example.test"), 1);
	if (resume != NULL)
		assert_int_equal(SSL_set_session(k->c, resume), 1);
	SSL_set_connect_state(k->c);
}

static void conn_close(struct conn *k)
{
	/* close_notify first: OpenSSL marks the session of a connection freed without it as not resumable (an
	 * abrupt end may be a truncation), and the resumption test reuses the client's */
	if (SSL_is_init_finished(k->c))
		SSL_shutdown(k->c);
	if (SSL_is_init_finished(k->s))
		SSL_shutdown(k->s);
	ERR_clear_error();
	SSL_free(k->c);
	SSL_free(k->s);
	close(k->fd[0]);
	close(k->fd[1]);
}

/* One handshake step of one side: 1 done, 0 wants more, -1 failed (its error kept, the queue cleared). */
static int step(SSL *ssl, int *state_, unsigned long *e)
{
	if (*state_ != 0)
		return *state_;
	int r = SSL_do_handshake(ssl);
	if (r == 1)
		return *state_ = 1;
	int why = SSL_get_error(ssl, r);
	if (why == SSL_ERROR_WANT_READ || why == SSL_ERROR_WANT_WRITE)
		return 0;
	*e = ERR_peek_error();
	ERR_clear_error();
	return *state_ = -1;
}

/* Both sides' handshakes, in turn, until each has finished or failed. @return whether both finished. */
static bool handshake(struct conn *k)
{
	int cs = 0, ss = 0;
	for (int i = 0; i < 200 && (cs == 0 || ss == 0); i++) {
		step(k->c, &cs, &k->c_err);
		step(k->s, &ss, &k->s_err);
		/* a side that failed may leave the other waiting for good */
		if ((cs < 0 || ss < 0) && i > 20)
			break;
	}
	return cs == 1 && ss == 1;
}

/* from writes one byte, to reads it (TLS 1.3: the client takes the ticket on the way). */
static void one_byte(SSL *from, SSL *to)
{
	assert_int_equal(SSL_write(from, "x", 1), 1);
	char b = 0;
	for (int i = 0; i < 200; i++) {
		int r = SSL_read(to, &b, 1);
		if (r == 1)
			break;
		assert_int_equal(SSL_get_error(to, r), SSL_ERROR_WANT_READ);
		/* the other side may have to read (a TLS 1.3 key update, tickets) before this one can */
		char none;
		SSL_read(from, &none, 1);
		ERR_clear_error();
	}
	assert_int_equal(b, 'x');
}

static void assert_alpn(SSL *ssl, const char *want)
{
	const unsigned char *p = NULL;
	unsigned n = 0;
	SSL_get0_alpn_selected(ssl, &p, &n);
	assert_int_equal(n, strlen(want));
	if (n > 0)
		assert_memory_equal(p, want, n);
}

/* 3. Handshakes: the chain verifies to the root the client trusts; ALPN "dot" is chosen, a client offering
 * only others is refused, a client offering none is served. */
static void test_handshake(void **state)
{
	char err[512] = "";
	struct tls_server *t = tls_server_new(chain, key, alpn_dot, err, sizeof(err));
	assert_non_null(t);
	struct conn k;

	/* "dot": chosen, and the certificate verifies through the intermediate the server sent */
	SSL_CTX *cctx = client_ctx("\x03" "dot", 4, 0);
	conn_open(&k, t, cctx, NULL);
	assert_true(handshake(&k));
	assert_int_equal(SSL_get_verify_result(k.c), X509_V_OK);
	assert_int_equal(SSL_version(k.c), TLS1_3_VERSION);
	assert_alpn(k.c, "dot");
	assert_alpn(k.s, "dot");
	one_byte(k.c, k.s);
	one_byte(k.s, k.c);
	conn_close(&k);
	SSL_CTX_free(cctx);

	/* TLS 1.2 as well */
	cctx = client_ctx("\x03" "dot", 4, TLS1_2_VERSION);
	conn_open(&k, t, cctx, NULL);
	assert_true(handshake(&k));
	assert_int_equal(SSL_version(k.s), TLS1_2_VERSION);
	assert_alpn(k.c, "dot");
	conn_close(&k);
	SSL_CTX_free(cctx);

	/* only "h2": the server refuses with no_application_protocol */
	cctx = client_ctx("\x02" "h2", 3, 0);
	conn_open(&k, t, cctx, NULL);
	assert_false(handshake(&k));
	assert_int_equal(ERR_GET_REASON(k.s_err), SSL_R_NO_APPLICATION_PROTOCOL);
	assert_int_equal(ERR_GET_REASON(k.c_err), SSL_R_TLSV1_ALERT_NO_APPLICATION_PROTOCOL);
	conn_close(&k);
	SSL_CTX_free(cctx);

	/* no ALPN at all: served, nothing selected */
	cctx = client_ctx(NULL, 0, 0);
	conn_open(&k, t, cctx, NULL);
	assert_true(handshake(&k));
	assert_alpn(k.c, "");
	conn_close(&k);
	SSL_CTX_free(cctx);
	tls_server_unref(t);

	/* the server's order wins: a server preferring "dot" to "xyz" picks "dot" from a client preferring "xyz" */
	const char *const alpn_two[] = { "dot", "xyz", NULL };
	t = tls_server_new(chain, key, alpn_two, err, sizeof(err));
	assert_non_null(t);
	cctx = client_ctx("\x03" "xyz" "\x03" "dot", 8, 0);
	conn_open(&k, t, cctx, NULL);
	assert_true(handshake(&k));
	assert_alpn(k.c, "dot");
	conn_close(&k);
	SSL_CTX_free(cctx);
	/* and "xyz" when that is all the client has */
	cctx = client_ctx("\x03" "xyz", 4, 0);
	conn_open(&k, t, cctx, NULL);
	assert_true(handshake(&k));
	assert_alpn(k.c, "xyz");
	conn_close(&k);
	SSL_CTX_free(cctx);
	tls_server_unref(t);
	assert_int_equal(ERR_peek_error(), 0);
}

/* 4. A ticket from one context resumes on a new one made from the same files (a reload), TLS version v. */
static void resume_across_reload(int v)
{
	char err[512] = "";
	struct tls_server *t = tls_server_new(chain, key, alpn_dot, err, sizeof(err));
	assert_non_null(t);
	SSL_CTX *cctx = client_ctx("\x03" "dot", 4, v);
	struct conn k;
	conn_open(&k, t, cctx, NULL);
	assert_true(handshake(&k));
	assert_int_equal(SSL_session_reused(k.c), 0);
	/* TLS 1.3 sends the ticket after the handshake: the client reads it on the way to this byte */
	one_byte(k.s, k.c);
	SSL_SESSION *sess = SSL_get1_session(k.c);
	assert_non_null(sess);
	assert_int_equal(SSL_SESSION_is_resumable(sess), 1);
	assert_true(SSL_SESSION_has_ticket(sess));
	conn_close(&k);
	assert_int_equal(SSL_SESSION_is_resumable(sess), 1);
	tls_server_unref(t);

	/* the reload: a new context from the same files */
	t = tls_server_new(chain, key, alpn_dot, err, sizeof(err));
	assert_non_null(t);
	conn_open(&k, t, cctx, sess);
	assert_true(handshake(&k));
	assert_int_equal(SSL_session_reused(k.c), 1);
	assert_int_equal(SSL_session_reused(k.s), 1);
	assert_alpn(k.c, "dot");
	one_byte(k.c, k.s);
	conn_close(&k);

	SSL_SESSION_free(sess);
	SSL_CTX_free(cctx);
	tls_server_unref(t);
}

static void test_resume_tls13(void **state)
{
	resume_across_reload(TLS1_3_VERSION);
}

static void test_resume_tls12(void **state)
{
	resume_across_reload(TLS1_2_VERSION);
}

/* 5. References: the last unref with a connection still alive frees nothing the connection uses (the ALPN
 * callback's list included); run under ASan. */
static void test_refs(void **state)
{
	char err[512] = "";
	struct tls_server *t = tls_server_new(chain, key, alpn_dot, err, sizeof(err));
	assert_non_null(t);
	assert_ptr_equal(tls_server_ref(t), t);
	tls_server_unref(t);
	assert_string_equal(tls_server_names(t), "dns.example.test,dot.example.test"); /* one reference left */
	SSL_CTX *cctx = client_ctx("\x03" "dot", 4, 0);
	struct conn k;
	conn_open(&k, t, cctx, NULL);
	tls_server_unref(t); /* the last reference; the SSL keeps its context */
	tls_server_unref(NULL);
	assert_true(handshake(&k));
	assert_alpn(k.c, "dot");
	one_byte(k.c, k.s);
	one_byte(k.s, k.c);
	conn_close(&k);
	SSL_CTX_free(cctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_handshake),
		cmocka_unit_test(test_resume_tls13),
		cmocka_unit_test(test_resume_tls12),
		cmocka_unit_test(test_refs),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
