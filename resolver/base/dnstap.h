/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. dnstap output (server.dnstap): DNS messages as protobuf frames to a unix socket. */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

/*
 * One fstrm I/O thread writes every frame to the socket; each thread that
 * logs has its own input queue (single producer: no lock on the hot path).
 * Logging never waits: a frame that does not fit in its queue (the reader
 * is slow, gone, or not there yet) is dropped and counted. The I/O thread
 * connects, and reconnects after the reader went away, on its own.
 */
struct dnstap;
struct dnstap_queue;

/* The dnstap Message types partdns writes (the published numbers). */
enum dnstap_type {
	DNSTAP_RESOLVER_QUERY = 3,
	DNSTAP_RESOLVER_RESPONSE = 4,
	DNSTAP_CLIENT_QUERY = 5,
	DNSTAP_CLIENT_RESPONSE = 6,
};

/* One message to log. Addresses: AF_INET or AF_INET6 sockaddrs, or NULL when not known. */
struct dnstap_msg {
	enum dnstap_type type;
	bool tcp;
	bool tls;            /* DoT (tcp too) */
	bool https;          /* DoH (tls too) */
	const struct sockaddr_storage *query_addr;    /* the initiator: the client, or partdns' upstream socket */
	const struct sockaddr_storage *response_addr; /* the responder: partdns' listener, or the authority */
	struct timespec query_time;                   /* realtime; tv_sec 0 = not set */
	struct timespec response_time;
	const uint8_t *query;                         /* wire format; NULL = none */
	size_t query_len;
	const uint8_t *response;
	size_t response_len;
	const uint8_t *zone;                          /* RESOLVER_*: the zone asked (wire-format name); NULL = none */
	size_t zone_len;
};

/**
 * Start writing to the unix socket at path (it need not exist yet), with
 * nqueues input queues, one per logging thread. Frames carry the host name
 * as identity and "partdns VERSION" as version.
 * @return NULL on failure (logged).
 */
struct dnstap *dnstap_new(const char *path, unsigned nqueues);

/**
 * Queue idx (< nqueues) for the one thread that logs through it; frames it
 * drops are counted in *dropped (written by that thread only).
 */
struct dnstap_queue *dnstap_queue(struct dnstap *d, unsigned idx, _Atomic uint64_t *dropped);

/** Log one message; never blocks (dropped and counted when the queue is full). */
void dnstap_log(struct dnstap_queue *q, const struct dnstap_msg *m);

/**
 * Write what is queued (for a short while: a reader that does not read
 * cannot hold the shutdown) and stop the I/O thread. NULL is a no-op. Call
 * after every thread that logs has stopped.
 */
void dnstap_free(struct dnstap *d);

/** The current time for dnstap_msg (realtime, as dnstap wants). */
static inline struct timespec dnstap_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ts;
}
