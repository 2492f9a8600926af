/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. Who must send a PROXY v2 header (server.proxy_from), and the client it names. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "resolver/base/counters.h"
#include "resolver/view/snapshot.h"

#define NET_PROXY_MORE (-1)    /* a stream's header is not whole yet: read more */
#define NET_PROXY_REFUSED (-2) /* drop the datagram, close the connection (counted, logged) */

/**
 * The client behind peer, for the bytes p[0..len) that start a datagram
 * (stream false) or a connection (stream true):
 *  - a peer in server.proxy_from must start with a valid PROXY v2 header;
 *    *client is the address it names (or the peer itself for LOCAL and
 *    UNSPEC, a balancer's health check: then *client_len is 0);
 *  - any other peer is its own client, and bytes starting with the
 *    header's 12-byte signature from it are refused: a client cannot
 *    claim to be another.
 * A refusal counts proxy_refused in ctr and is logged (rate-limited), with
 * the peer and why.
 * @return the header's length (0 when the peer is not a proxy: *client is
 *         not written), NET_PROXY_MORE or NET_PROXY_REFUSED.
 */
int net_proxy_take(const struct snapshot *s, struct counters *ctr, const struct sockaddr_storage *peer,
                   const uint8_t *p, size_t len, bool stream, struct sockaddr_storage *client,
                   socklen_t *client_len);
