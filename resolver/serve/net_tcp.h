/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. TCP: connections of one listener thread, length-prefixed messages both ways. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "resolver/base/net.h"
#include "resolver/serve/query.h"

struct net_tcp;
struct tls_slot;


/**
 * Connections of one thread, registered in epfd with net_ev tags
 * (NET_EV_TCP_CONN, or NET_EV_TLS_CONN with tls; ptr = the connection).
 * With tls, each connection is DNS over TLS (RFC 7858) with a context from
 * the slot: the handshake must end within tls_handshake_ms, and
 * tls_max_clients replaces tcp_max_clients. With https too (DoH), the
 * handshake's ALPN chooses HTTP/2 or HTTP/1.1 and a doh_session (doh.h)
 * carries the queries and replies (NET_EV_HTTPS_CONN). A connection from
 * server.proxy_from starts with a PROXY v2 header (net_proxy.h) before
 * anything else, within the same deadline (tcp_message_ms for plain TCP);
 * it then counts against the client the header names. Limits, from c->server:
 *  - tcp_max_clients: connections of this thread; when full, a new one
 *    closes the connection idle for longest (no query pending, no reply
 *    queued), or is closed at once when none is idle;
 *  - tcp_max_per_client: connections of one IPv4 address or IPv6 /64,
 *    counted across every thread of the process; over it a new one is
 *    closed at once;
 *  - tcp_idle_ms: a connection without a pending query closes this long
 *    after its last complete query or the last reply bytes the client took;
 *  - tcp_message_ms: from the first byte of a message to its last;
 *  - tcp_out_max: replies queued for a connection above which its queries
 *    are not read until half of them are taken (also paused at 100 queries
 *    pending, until 50).
 * @param ctr  this thread's counters (tcp_refused_client ... tcp_paused)
 * @return NULL on ENOMEM.
 */
struct net_tcp *net_tcp_new(int epfd, const struct conf *c, struct counters *ctr, struct tls_slot *tls, bool https);

/** Close every connection and free. NULL is a no-op. */
void net_tcp_free(struct net_tcp *t);

/** Accept what is waiting on the listening socket fd (x: its snapshot says who is a balancer). */
void net_tcp_accept(struct net_tcp *t, int fd, struct query_ctx *x);

/**
 * An epoll event on a connection: read queries (answered through x), write
 * replies. x is kept: queries held back while output was full are answered
 * through it when the client catches up.
 */
void net_tcp_event(struct net_tcp *t, struct net_ev *ev, uint32_t events, struct query_ctx *x);

/**
 * A waiter's reply for connection conn_id (DoH: its request stream), len > 0, or none (len <= 0:
 * dropped, and the connection ends once the other replies it owes are
 * out); either way the query stops being pending. A closed connection
 * drops it.
 */
void net_tcp_reply(struct net_tcp *t, uint64_t conn_id, uint32_t stream, const uint8_t *msg, int len);

/** Close idle connections and messages past their deadline (call about once a second). */
void net_tcp_sweep(struct net_tcp *t);

/** Free connections closed in this event batch (later events of the batch may still name them). */
void net_tcp_end_batch(struct net_tcp *t);
