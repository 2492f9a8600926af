/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/pool/. The EDNS pool's upstream sockets: edns.outgoing's source addresses, random ports. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "resolver/pool/edns_pool.h"

/** 32 random bits (query IDs, source ports). */
uint32_t edns_sock_random(void);

/** Sort edns.outgoing's n addresses a by family into o. @return 0 or -1 (out of memory). */
int edns_sock_outgoing(struct edns_outgoing *o, const struct conf_addr *a, size_t n);
void edns_sock_outgoing_free(struct edns_outgoing *o);

/**
 * May the pool send to an address of family? Any, without edns.outgoing;
 * with it, only families it lists: those servers are not tried at all.
 */
bool edns_sock_sendable(const struct resolve_edns *p, int family);

/** Drop r's servers of a family the pool does not send over. @return how many are left. */
int edns_sock_keep_sendable(struct eres *r);

/**
 * A socket to "to", from one of edns.outgoing's addresses of its family
 * (round robin) or, without the key, from whatever address the kernel
 * routes by. UDP takes a random source port of our own choosing, not the
 * kernel's next one; TCP the kernel's ephemeral port.
 * @return the socket (non-blocking, connected or connecting) or -errno.
 */
int edns_sock_open(struct ethread *t, const struct sockaddr_storage *to, bool tcp);

/** Close r's upstream socket (if any) and drop a TCP response half read. */
void edns_sock_close(struct eres *r);
