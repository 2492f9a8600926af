/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/pool/. The EDNS pool's ECS-bearing query to a zone's servers, and reading the reply. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "resolver/pool/edns_pool.h"

/**
 * Ask r's hop name of the next usable server of r->zone (up, in a family
 * edns.outgoing has, the zone under its query rate) with r's ECS, over UDP
 * or, with r->ex.tcp, TCP. On the way r may fail (edns_res_fail: freed).
 */
void edns_exchange_query(struct eres *r);

/** This server failed (ede: how, for the client if every server does): try the next one, or fail r. */
void edns_exchange_next_server(struct eres *r, const struct wire_ede *ede, const char *why);

/**
 * r's socket is ready (events from epoll): send a TCP query once connected,
 * read what came.
 * @return true when a whole response is in r->t->buf, *len bytes; false
 *         otherwise (keep waiting, or r moved on: to the next server or
 *         failed and freed; do not touch r then).
 */
bool edns_exchange_read(struct eres *r, uint32_t events, size_t *len);
