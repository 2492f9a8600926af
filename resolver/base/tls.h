/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. The server side of TLS: one OpenSSL context from the certificate and key files, shared by every listener thread. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include <pthread.h>

#include <openssl/ssl.h>

struct tls_server;

/**
 * A TLS server context for the PEM certificate chain at cert and the
 * private key at key.
 *  - both files are opened as every file the config names (util/file.h:
 *    regular files only, never waiting in open()) and read whole (1 MiB at
 *    most each); the first certificate of cert is the leaf, the rest its
 *    chain; a key under a passphrase is refused (no prompt, ever);
 *  - the key must match the certificate; TLS 1.2 and 1.3 only; ALPN: the
 *    client must offer one of alpn (NULL-terminated list, most preferred
 *    first, e.g. { "dot", NULL }; NULL: no ALPN); a client offering no ALPN
 *    is accepted (RFC 7858 does not require it), one offering only others
 *    is refused (no_application_protocol);
 *  - session resumption by tickets whose keys are the process's (shared by
 *    every context, so a ticket issued before a reload still resumes
 *    after it), rotated every TLS_TICKET_ROTATE_S; the previous key still
 *    decrypts for one more period; no server-side session cache;
 *  - SSL_MODE_RELEASE_BUFFERS: an idle connection holds no record buffers.
 * @param err, errlen  on failure, why, naming the file: "tls_cert PATH: ..." or
 *        "tls_key PATH: ..." (and OpenSSL's reason when it has one)
 * @return the context with one reference, or NULL.
 */
struct tls_server *tls_server_new(const char *cert, const char *key, const char *const *alpn, char *err,
                                  size_t errlen);

/** Another reference (the snapshot that carries it, a connection being made). */
struct tls_server *tls_server_ref(struct tls_server *t);
/** Drop a reference; the last one frees. NULL is a no-op. SSL objects already made keep their SSL_CTX alive. */
void tls_server_unref(struct tls_server *t);

/** A new server-side SSL for a connection's fd (accept state), or NULL; the caller SSL_free()s it. */
SSL *tls_server_ssl(struct tls_server *t, int fd);

/** The certificate's notAfter (for partdns -t, status and logs). */
time_t tls_server_not_after(const struct tls_server *t);
/** The certificate's subject names (DNS SANs, else the CN), comma-separated, for DDR and logs; a long list
 * is cut and ends in ",...". */
const char *tls_server_names(const struct tls_server *t);

#define TLS_TICKET_ROTATE_S 3600

/*
 * Where listener threads take the current context from: set at start and
 * by every reload, read at each accept (a mutex: a handshake costs far
 * more). Connections made from an earlier context keep it (OpenSSL counts
 * the SSL_CTX's references).
 */
struct tls_slot {
	pthread_mutex_t lock;
	struct tls_server *cur;  /* NULL: none */
};

void tls_slot_init(struct tls_slot *slot);
/** Drop the slot's reference. */
void tls_slot_deinit(struct tls_slot *slot);
/** Make t (its reference taken) the current context. */
void tls_slot_set(struct tls_slot *slot, struct tls_server *t);
/** A new connection's SSL from the current context; NULL when there is none or out of memory. */
SSL *tls_slot_ssl(struct tls_slot *slot, int fd);
/** The current certificate's first name (tls_server_names up to its first comma) into buf; "" when none. */
void tls_slot_name(struct tls_slot *slot, char *buf, size_t size);
