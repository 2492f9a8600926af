/* SPDX-License-Identifier: BSD-3-Clause */
/* The server side of TLS for DNS over TLS (RFC 7858): one OpenSSL context from the certificate and key files. */
#include "resolver/base/tls.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "resolver/base/clock.h"
#include "util/file.h"

#define TLS_FILE_MAX (1u << 20) /* a PEM chain is a few KiB; more is a wrong path, not a certificate */
#define TLS_NAMES_MAX 1024      /* tls_server_names(): enough for DDR and a log line, not a CDN's 500 SANs */

struct tls_server {
	atomic_uint refs;
	SSL_CTX *ctx; /* holds its own references: each SSL made from it keeps it alive past the last unref */
	time_t not_after;
	char names[TLS_NAMES_MAX];
};

/*
 * Errors. Every message names the file and says why in an operator's words;
 * OpenSSL's own reason follows when its queue has one. The queue is
 * per-thread and SSL_get_error() reads it: whatever a failure left there
 * would be taken later for a connection's error, so every path out clears it.
 */
__attribute__((format(printf, 3, 4))) static void tls_err(char *err, size_t errlen, const char *fmt, ...)
{
	unsigned long e = ERR_peek_error(); /* the first: the cause, before the layers that passed it up */
	if (err != NULL && errlen > 0) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
		if (e != 0 && n >= 0 && (size_t)n + 1 < errlen) {
			char why[256];
			ERR_error_string_n(e, why, sizeof(why));
			snprintf(err + n, errlen - (size_t)n, " (%s)", why);
		}
	}
	ERR_clear_error();
}

/*
 * Files. Both go through file_open_regular() as every file the config names
 * (a FIFO or a device there must not stop a reload), are read whole and
 * handed to OpenSSL as memory: OpenSSL's own file functions would open the
 * path themselves, FIFOs included.
 */
static bool tls_read_file(const char *what, const char *path, unsigned char **out, size_t *outlen, char *err,
                          size_t errlen)
{
	struct stat st;
	int fd = file_open_regular(path, &st);
	if (fd < 0) {
		tls_err(err, errlen, "%s %s: %s", what, path, file_strerror(fd));
		return false;
	}
	if (st.st_size > (off_t)TLS_FILE_MAX) {
		close(fd);
		tls_err(err, errlen, "%s %s: %lld bytes, over the 1 MiB a PEM file may have", what, path,
		        (long long)st.st_size);
		return false;
	}
	if (st.st_size == 0) {
		close(fd);
		tls_err(err, errlen, "%s %s: the file is empty", what, path);
		return false;
	}
	/* one byte more than the size: a read that fills it means the file grew since fstat(), and a file being
	 * rewritten (a certificate renewal caught half way) is better refused than half read */
	size_t cap = (size_t)st.st_size + 1, len = 0;
	unsigned char *buf = malloc(cap);
	if (buf == NULL) {
		close(fd);
		tls_err(err, errlen, "%s %s: out of memory", what, path);
		return false;
	}
	while (len < cap) {
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			close(fd);
			OPENSSL_clear_free(buf, cap);
			tls_err(err, errlen, "%s %s: %s", what, path, strerror(e));
			return false;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (len != cap - 1) {
		OPENSSL_clear_free(buf, cap);
		tls_err(err, errlen, "%s %s: the file changed while it was read; try again", what, path);
		return false;
	}
	*out = buf;
	*outlen = len;
	return true;
}

/* The passphrase callback: none. OpenSSL's default asks on the terminal, and a daemon reloading must never wait
 * there; an encrypted key fails at once and says so instead. */
static int tls_no_passphrase(char *buf, int size, int rwflag, void *u)
{
	*(bool *)u = true;
	return -1;
}

/* Whether the last error is PEM's "no more PEM blocks": the normal end of a chain. */
static bool tls_pem_end(void)
{
	unsigned long e = ERR_peek_last_error();
	return ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE;
}

/* The leaf (the file's first certificate) into ctx, the rest as its chain. @return the leaf (a reference of its
 * own), or NULL with err set. */
static X509 *tls_load_chain(SSL_CTX *ctx, const char *path, const unsigned char *pem, size_t len, char *err,
                            size_t errlen)
{
	BIO *bio = BIO_new_mem_buf(pem, (int)len);
	if (bio == NULL) {
		tls_err(err, errlen, "tls_cert %s: out of memory", path);
		return NULL;
	}
	bool asked = false;
	X509 *leaf = PEM_read_bio_X509(bio, NULL, tls_no_passphrase, &asked);
	if (leaf == NULL) {
		if (tls_pem_end()) {
			ERR_clear_error(); /* our words say it all; "no start line" after them would not help */
			tls_err(err, errlen, "tls_cert %s: no PEM certificate in the file (-----BEGIN CERTIFICATE-----)",
			        path);
		} else {
			tls_err(err, errlen, "tls_cert %s: the first certificate cannot be read", path);
		}
		BIO_free(bio);
		return NULL;
	}
	if (SSL_CTX_use_certificate(ctx, leaf) != 1) {
		tls_err(err, errlen, "tls_cert %s: the certificate is refused", path);
		goto fail;
	}
	for (unsigned i = 2;; i++) {
		X509 *x = PEM_read_bio_X509(bio, NULL, tls_no_passphrase, &asked);
		if (x == NULL) {
			if (tls_pem_end()) {
				ERR_clear_error();
				break;
			}
			tls_err(err, errlen, "tls_cert %s: certificate %u of the chain cannot be read", path, i);
			goto fail;
		}
		/* add0: on success the context owns x */
		if (SSL_CTX_add0_chain_cert(ctx, x) != 1) {
			X509_free(x);
			tls_err(err, errlen, "tls_cert %s: certificate %u of the chain is refused", path, i);
			goto fail;
		}
	}
	BIO_free(bio);
	return leaf;
fail:
	BIO_free(bio);
	X509_free(leaf);
	return NULL;
}

/* The private key at path into ctx, checked against leaf first so a mismatch is named as one. */
static bool tls_load_key(SSL_CTX *ctx, X509 *leaf, const char *path, const char *cert_path, const unsigned char *pem,
                         size_t len, char *err, size_t errlen)
{
	BIO *bio = BIO_new_mem_buf(pem, (int)len);
	if (bio == NULL) {
		tls_err(err, errlen, "tls_key %s: out of memory", path);
		return false;
	}
	/* OpenSSL 3 reads keys through its decoders, which say "unsupported" for a file with no key in it rather
	 * than PEM's "no start line": that case is told by looking for a key block in the text */
	bool asked = false;
	EVP_PKEY *pkey = PEM_read_bio_PrivateKey(bio, NULL, tls_no_passphrase, &asked);
	BIO_free(bio);
	if (pkey == NULL) {
		/* "ENCRYPTED PRIVATE KEY", "EC PRIVATE KEY", "RSA PRIVATE KEY" and PKCS#8's all end so */
		bool block = memmem(pem, len, "PRIVATE KEY-----", 16) != NULL;
		/* for the first two our words say it all; OpenSSL's ("interrupted or cancelled", "unsupported")
		 * would only mislead */
		if (asked || !block)
			ERR_clear_error();
		if (asked)
			tls_err(err, errlen, "tls_key %s: the key is encrypted; partdns asks for no passphrase (store it "
			        "unencrypted, readable by root only)", path);
		else if (!block)
			tls_err(err, errlen, "tls_key %s: no PEM private key in the file (-----BEGIN PRIVATE KEY-----)",
			        path);
		else
			tls_err(err, errlen, "tls_key %s: the private key cannot be read", path);
		return false;
	}
	bool ok = false;
	if (X509_check_private_key(leaf, pkey) != 1)
		tls_err(err, errlen, "tls_key %s: does not match the certificate in %s", path, cert_path);
	else if (SSL_CTX_use_PrivateKey(ctx, pkey) != 1 || SSL_CTX_check_private_key(ctx) != 1)
		tls_err(err, errlen, "tls_key %s: the key is refused", path);
	else
		ok = true;
	EVP_PKEY_free(pkey);
	return ok;
}

/*
 * Names for DDR and logs: the DNS subjectAltNames, else the subject's CN.
 * Only host-name characters are kept (a name is printed in logs and
 * status); a list that does not fit ends in ",...".
 */
static bool tls_name_ok(const unsigned char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
		      c == '_' || c == '*'))
			return false;
	}
	return true;
}

static void tls_name_add(char *out, size_t cap, size_t *len, bool *full, const unsigned char *s, size_t n)
{
	if (*full || !tls_name_ok(s, n))
		return;
	size_t need = (*len > 0 ? 1 : 0) + n;
	if (*len + need + sizeof(",...") > cap) {
		memcpy(out + *len, ",...", sizeof(",...")); /* the cap keeps room for it */
		*len += sizeof(",...") - 1;
		*full = true;
		return;
	}
	if (*len > 0)
		out[(*len)++] = ',';
	memcpy(out + *len, s, n);
	*len += n;
	out[*len] = '\0';
}

static void tls_names(X509 *x, char *out, size_t cap)
{
	size_t len = 0;
	bool full = false;
	out[0] = '\0';
	GENERAL_NAMES *sans = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	for (int i = 0; sans != NULL && i < sk_GENERAL_NAME_num(sans); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(sans, i);
		if (g->type == GEN_DNS)
			tls_name_add(out, cap, &len, &full, ASN1_STRING_get0_data(g->d.dNSName),
			             (size_t)ASN1_STRING_length(g->d.dNSName));
	}
	GENERAL_NAMES_free(sans);
	if (len > 0)
		return;
	/* no DNS SAN: the CN, as clients did before SANs (RFC 6125 6.4.4) */
	X509_NAME *subj = X509_get_subject_name(x);
	int at = subj != NULL ? X509_NAME_get_index_by_NID(subj, NID_commonName, -1) : -1;
	if (at < 0)
		return;
	unsigned char *cn = NULL;
	int n = ASN1_STRING_to_UTF8(&cn, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subj, at)));
	if (n > 0)
		tls_name_add(out, cap, &len, &full, cn, (size_t)n);
	OPENSSL_free(cn);
}

/*
 * ALPN. The server's list in wire form (length-prefixed names) lives in the
 * SSL_CTX's ex_data and is freed with it: a connection made before the last
 * tls_server_unref() still runs this callback after the struct is gone.
 */
static int tls_alpn_index = -1;
static pthread_once_t tls_alpn_once = PTHREAD_ONCE_INIT;

struct tls_alpn {
	size_t len;
	unsigned char wire[];
};

static void tls_alpn_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
	free(ptr);
}

static void tls_alpn_index_new(void)
{
	tls_alpn_index = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, tls_alpn_free);
}

/* The first of the server's names the client offers (our preference, not the client's). A client that offers
 * ALPN but none of ours is refused with no_application_protocol (RFC 7301 3.2); one that offers no ALPN never
 * gets here. */
static int tls_alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
                           unsigned int inlen, void *arg)
{
	const struct tls_alpn *a = SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), tls_alpn_index);
	if (a == NULL)
		return SSL_TLSEXT_ERR_NOACK;
	for (size_t i = 0; i < a->len; i += 1u + a->wire[i]) {
		const unsigned char *ours = a->wire + i;
		for (unsigned j = 0; j < inlen; j += 1u + in[j]) {
			if (j + 1u + in[j] > inlen)
				break; /* OpenSSL checks the list's framing before; never read past it anyway */
			if (in[j] == ours[0] && memcmp(in + j + 1, ours + 1, ours[0]) == 0) {
				*out = in + j + 1;
				*outlen = in[j];
				return SSL_TLSEXT_ERR_OK;
			}
		}
	}
	return SSL_TLSEXT_ERR_ALERT_FATAL;
}

static bool tls_alpn_set(SSL_CTX *ctx, const char *const *alpn, char *err, size_t errlen)
{
	if (alpn == NULL || alpn[0] == NULL)
		return true; /* no list: no ALPN at all */
	size_t len = 0;
	for (size_t i = 0; alpn[i] != NULL; i++) {
		size_t n = strlen(alpn[i]);
		if (n == 0 || n > 255) {
			tls_err(err, errlen, "TLS: the ALPN name \"%.40s\" is empty or over 255 bytes", alpn[i]);
			return false;
		}
		len += 1 + n;
	}
	struct tls_alpn *a = malloc(sizeof(*a) + len);
	if (a == NULL || pthread_once(&tls_alpn_once, tls_alpn_index_new) != 0 || tls_alpn_index < 0) {
		free(a);
		tls_err(err, errlen, "TLS: out of memory");
		return false;
	}
	a->len = 0;
	for (size_t i = 0; alpn[i] != NULL; i++) {
		size_t n = strlen(alpn[i]);
		a->wire[a->len] = (unsigned char)n;
		memcpy(a->wire + a->len + 1, alpn[i], n);
		a->len += 1 + n;
	}
	if (SSL_CTX_set_ex_data(ctx, tls_alpn_index, a) != 1) {
		free(a);
		tls_err(err, errlen, "TLS: out of memory");
		return false;
	}
	SSL_CTX_set_alpn_select_cb(ctx, tls_alpn_select, NULL);
	return true;
}

/*
 * Session tickets. OpenSSL gives each SSL_CTX random ticket keys of its
 * own, so every reload (a new context) would make every client's ticket
 * useless and cost each a full handshake at once. The keys are the
 * process's instead: one ring, shared by every context, rotated lazily
 * from the callback when the current key is TLS_TICKET_ROTATE_S old. New
 * tickets are sealed with the current key; the previous one still opens
 * tickets for TLS_TICKET_ROTATE_S after it was retired, and a ticket it
 * opens is renewed. A ticket's lifetime is TLS_TICKET_ROTATE_S
 * (SSL_CTX_set_timeout below), so every unexpired ticket still has its key,
 * however late a lazy rotation came. The ring lives in memory only: a
 * restart is a full handshake for every client.
 */
struct tls_ticket_key {
	unsigned char name[16]; /* TLSEXT_KEYNAME_LENGTH: in the clear in the ticket, says which key sealed it */
	unsigned char aes[32];  /* AES-256-CBC */
	unsigned char hmac[32]; /* HMAC-SHA256 over the sealed ticket */
	uint64_t since;         /* monotonic seconds: made (the current key), retired (the previous) */
	bool set;
};

static struct {
	pthread_mutex_t lock;
	struct tls_ticket_key cur, prev;
} tls_ring = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Under the lock: a current key no older than TLS_TICKET_ROTATE_S. A failed RAND_bytes keeps the old key (a
 * ticket sealed a little longer with it is better than none). @return whether there is a current key. */
static bool tls_ring_fresh(uint64_t now)
{
	if (tls_ring.cur.set && now - tls_ring.cur.since < TLS_TICKET_ROTATE_S)
		return true;
	struct tls_ticket_key k = { .since = now, .set = true };
	if (RAND_bytes(k.name, sizeof(k.name)) != 1 || RAND_bytes(k.aes, sizeof(k.aes)) != 1 ||
	    RAND_bytes(k.hmac, sizeof(k.hmac)) != 1) {
		OPENSSL_cleanse(&k, sizeof(k));
		ERR_clear_error();
		return tls_ring.cur.set;
	}
	tls_ring.prev = tls_ring.cur; /* not set on the first call: nothing to retire */
	tls_ring.prev.since = now;
	tls_ring.cur = k;
	OPENSSL_cleanse(&k, sizeof(k));
	return true;
}

/* HMAC-SHA256 with key on hctx, as OpenSSL 3's EVP_MAC wants it. */
static bool tls_ticket_mac(EVP_MAC_CTX *hctx, unsigned char *key, size_t keylen)
{
	static char sha256[] = "SHA256";
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, key, keylen),
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, sha256, 0),
		OSSL_PARAM_construct_end(),
	};
	return EVP_MAC_CTX_set_params(hctx, params) == 1;
}

/*
 * SSL_CTX_set_tlsext_ticket_key_evp_cb's callback. enc: fill name and iv,
 * set up the cipher and MAC; 1 = a ticket, 0 = none this time. Decrypt:
 * 1 = the current key, 2 = the previous (OpenSSL issues a new ticket), 0 =
 * unknown or too old a key (a full handshake; never an error: a client's
 * stale ticket is normal). The key is copied out of the ring so the
 * OpenSSL calls run without the lock.
 */
static int tls_ticket_cb(SSL *ssl, unsigned char *name, unsigned char *iv, EVP_CIPHER_CTX *cctx,
                         EVP_MAC_CTX *hctx, int enc)
{
	struct tls_ticket_key k = { .set = false };
	int ret = 0;
	uint64_t now = clock_ns() / 1000000000u;
	pthread_mutex_lock(&tls_ring.lock);
	bool have = tls_ring_fresh(now);
	if (!have) {
		pthread_mutex_unlock(&tls_ring.lock);
		return 0;
	}
	if (enc) {
		k = tls_ring.cur;
		ret = 1;
	} else if (memcmp(name, tls_ring.cur.name, sizeof(k.name)) == 0) {
		k = tls_ring.cur;
		ret = 1;
	} else if (tls_ring.prev.set && now - tls_ring.prev.since < TLS_TICKET_ROTATE_S &&
	           memcmp(name, tls_ring.prev.name, sizeof(k.name)) == 0) {
		k = tls_ring.prev;
		ret = 2;
	}
	pthread_mutex_unlock(&tls_ring.lock);
	if (ret == 0)
		return 0;
	if (enc) {
		memcpy(name, k.name, sizeof(k.name));
		if (RAND_bytes(iv, 16) != 1 || EVP_EncryptInit_ex(cctx, EVP_aes_256_cbc(), NULL, k.aes, iv) != 1 ||
		    !tls_ticket_mac(hctx, k.hmac, sizeof(k.hmac)))
			ret = 0;
	} else if (!tls_ticket_mac(hctx, k.hmac, sizeof(k.hmac)) ||
	           EVP_DecryptInit_ex(cctx, EVP_aes_256_cbc(), NULL, k.aes, iv) != 1) {
		ret = 0;
	}
	OPENSSL_cleanse(&k, sizeof(k));
	if (ret == 0)
		ERR_clear_error();
	return ret;
}

/* The context's settings: what every DoT connection gets whatever the files. */
static SSL_CTX *tls_ctx_new(char *err, size_t errlen)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	if (ctx == NULL) {
		tls_err(err, errlen, "TLS: cannot make an OpenSSL context");
		return NULL;
	}
	/* TLS 1.2 and 1.3 only (RFC 8996 retires 1.0 and 1.1) */
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
		SSL_CTX_free(ctx);
		tls_err(err, errlen, "TLS: cannot set TLS 1.2 as the minimum version");
		return NULL;
	}
	/* no compression (CRIME); no renegotiation (a client could make the server redo the costly half as often
	 * as it likes, and nothing in DoT needs it); our cipher order, not the client's; a client closing
	 * without close_notify (many DoT clients drop idle connections so) is a clean end of stream, not an
	 * error: DNS messages are length-prefixed, so a truncation is seen without it */
	SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE |
	                             SSL_OP_IGNORE_UNEXPECTED_EOF);
	/* an idle connection holds no record buffers (thousands of DoT clients sit idle); a write may end part
	 * way and be retried from a buffer that has moved, as a connection's output queue does */
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE |
	                          SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	/* tickets only: a server-side cache would be per context (lost on reload) and per process memory */
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	/* TLS 1.3 sends tickets after the handshake, two by default; one is enough for a DoT client's next
	 * connection and costs fewer bytes */
	SSL_CTX_set_num_tickets(ctx, 1);
	/* a ticket never outlives the ring key that sealed it (see the ring above) */
	SSL_CTX_set_timeout(ctx, TLS_TICKET_ROTATE_S);
	if (SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, tls_ticket_cb) != 1) {
		SSL_CTX_free(ctx);
		tls_err(err, errlen, "TLS: cannot set the session ticket callback");
		return NULL;
	}
	return ctx;
}

struct tls_server *tls_server_new(const char *cert, const char *key, const char *const *alpn, char *err,
                                  size_t errlen)
{
	ERR_clear_error(); /* so the reason appended to an error is this call's */
	unsigned char *cpem = NULL, *kpem = NULL;
	size_t clen = 0, klen = 0;
	SSL_CTX *ctx = NULL;
	X509 *leaf = NULL;
	struct tls_server *t = NULL;
	if (!tls_read_file("tls_cert", cert, &cpem, &clen, err, errlen) ||
	    !tls_read_file("tls_key", key, &kpem, &klen, err, errlen))
		goto out;
	if ((ctx = tls_ctx_new(err, errlen)) == NULL)
		goto out;
	if ((leaf = tls_load_chain(ctx, cert, cpem, clen, err, errlen)) == NULL)
		goto out;
	if (!tls_load_key(ctx, leaf, key, cert, kpem, klen, err, errlen) || !tls_alpn_set(ctx, alpn, err, errlen))
		goto out;
	if ((t = calloc(1, sizeof(*t))) == NULL) {
		tls_err(err, errlen, "TLS: out of memory");
		goto out;
	}
	struct tm tm;
	if (ASN1_TIME_to_tm(X509_get0_notAfter(leaf), &tm) != 1) {
		tls_err(err, errlen, "tls_cert %s: the certificate's notAfter cannot be read", cert);
		free(t);
		t = NULL;
		goto out;
	}
	t->not_after = timegm(&tm);
	tls_names(leaf, t->names, sizeof(t->names));
	atomic_init(&t->refs, 1);
	t->ctx = ctx;
	ctx = NULL;
out:
	/* the key's bytes do not stay in freed memory */
	if (kpem != NULL)
		OPENSSL_clear_free(kpem, klen);
	free(cpem);
	X509_free(leaf);
	SSL_CTX_free(ctx);
	ERR_clear_error();
	return t;
}

struct tls_server *tls_server_ref(struct tls_server *t)
{
	atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
	return t;
}

void tls_server_unref(struct tls_server *t)
{
	if (t == NULL || atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1)
		return;
	SSL_CTX_free(t->ctx); /* the SSLs still alive hold references of their own */
	free(t);
}

SSL *tls_server_ssl(struct tls_server *t, int fd)
{
	SSL *ssl = SSL_new(t->ctx);
	if (ssl == NULL || SSL_set_fd(ssl, fd) != 1) {
		SSL_free(ssl);
		ERR_clear_error(); /* not to be read as the next connection's error on this thread */
		return NULL;
	}
	SSL_set_accept_state(ssl);
	return ssl;
}

time_t tls_server_not_after(const struct tls_server *t)
{
	return t->not_after;
}

const char *tls_server_names(const struct tls_server *t)
{
	return t->names;
}

void tls_slot_init(struct tls_slot *slot)
{
	pthread_mutex_init(&slot->lock, NULL);
	slot->cur = NULL;
}

void tls_slot_deinit(struct tls_slot *slot)
{
	tls_server_unref(slot->cur);
	slot->cur = NULL;
	pthread_mutex_destroy(&slot->lock);
}

void tls_slot_set(struct tls_slot *slot, struct tls_server *t)
{
	pthread_mutex_lock(&slot->lock);
	struct tls_server *old = slot->cur;
	slot->cur = t;
	pthread_mutex_unlock(&slot->lock);
	tls_server_unref(old); /* connections made from it keep their SSL_CTX */
}

SSL *tls_slot_ssl(struct tls_slot *slot, int fd)
{
	pthread_mutex_lock(&slot->lock);
	SSL *ssl = slot->cur ? tls_server_ssl(slot->cur, fd) : NULL;
	pthread_mutex_unlock(&slot->lock);
	return ssl;
}

void tls_slot_name(struct tls_slot *slot, char *buf, size_t size)
{
	if (size == 0)
		return;
	buf[0] = '\0';
	pthread_mutex_lock(&slot->lock);
	if (slot->cur) {
		const char *names = tls_server_names(slot->cur);
		size_t n = strcspn(names, ",");
		if (n < size) {
			memcpy(buf, names, n);
			buf[n] = '\0';
		}
	}
	pthread_mutex_unlock(&slot->lock);
}
