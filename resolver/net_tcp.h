/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. TCP: connections of one listener thread, length-prefixed messages both ways. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "resolver/net.h"
#include "resolver/query.h"

struct net_tcp;

/**
 * Connections of one thread, registered in epfd with net_ev tags
 * (NET_EV_TCP_CONN, ptr = the connection).
 * @param max_conns  server.tcp_max_clients: over it new connections are closed at once
 * @param idle_ms    a connection without a pending query closes after this
 * @return NULL on ENOMEM.
 */
struct net_tcp *net_tcp_new(int epfd, size_t max_conns, unsigned idle_ms);

/** Close every connection and free. NULL is a no-op. */
void net_tcp_free(struct net_tcp *t);

/** Accept what is waiting on the listening socket fd. */
void net_tcp_accept(struct net_tcp *t, int fd);

/** An epoll event on a connection: read queries (answered through x), write replies. */
void net_tcp_event(struct net_tcp *t, struct net_ev *ev, uint32_t events, struct query_ctx *x);

/**
 * A waiter's reply for connection conn_id (len > 0), or none (len <= 0);
 * either way the query stops being pending. A closed connection drops it.
 */
void net_tcp_reply(struct net_tcp *t, uint64_t conn_id, const uint8_t *msg, int len);

/** Close idle connections (call about once a second). */
void net_tcp_sweep(struct net_tcp *t);

/** Free connections closed in this event batch (later events of the batch may still name them). */
void net_tcp_end_batch(struct net_tcp *t);
