/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. Discovery of Designated Resolvers (RFC 9462): _dns.resolver.arpa SVCB. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf/conf.h"
#include "wire/wire.h"

/** Is q the DDR question, _dns.resolver.arpa SVCB (any case)? */
bool ddr_is_query(const struct wire_query *q);

/**
 * The answer to the DDR question: one SVCB record per encrypted listener
 * of c (server.listen_tls: alpn dot; server.listen_https: alpn h2 and
 * dohpath), priority in listing order, the target the name on the
 * certificate (target, text), port when not the default (853, 443), and
 * the listener's address as ipv4hint or ipv6hint unless it is a wildcard.
 * Without a target or listeners: NODATA (the answer section empty).
 * @param msg, len  the message (malloc'ed), header and question from q
 * @return 0 or -ENOMEM.
 */
int ddr_answer(const struct conf *c, const char *target, const struct wire_query *q, uint8_t **msg, size_t *len);
