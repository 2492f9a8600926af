/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. UDP: batches of queries in, batches of replies out. */
#pragma once

#include "resolver/query.h"

/** Read and answer what is queued on the UDP socket fd (a few batches, then back to the loop). */
void net_udp_read(struct query_ctx *x, int fd);

/** Send one reply of len bytes to peer (a full socket buffer drops it, as UDP may). */
void net_udp_send(int fd, const struct sockaddr_storage *peer, socklen_t peer_len, const uint8_t *msg, size_t len);
