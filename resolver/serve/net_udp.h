/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. UDP: batches of queries in, batches of replies out. */
#pragma once

#include <stdbool.h>

#include "resolver/serve/query.h"

/**
 * Read and answer what is queued on the UDP socket fd (a few batches, then
 * back to the loop). wildcard: fd is bound to 0.0.0.0 or :: and reports
 * each datagram's destination, which the reply then leaves from.
 */
void net_udp_read(struct query_ctx *x, int fd, bool wildcard);

/**
 * Send one reply of len bytes to peer, from local when not NULL (a wildcard
 * socket). A full socket buffer drops it, as UDP may.
 */
void net_udp_send(int fd, const struct sockaddr_storage *peer, socklen_t peer_len,
                  const struct sockaddr_storage *local, const uint8_t *msg, size_t len);
