/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. Listening sockets and the tags a listener thread's epoll events carry. */
#pragma once

#include <stdbool.h>

#include "conf/conf.h"

/* What an epoll event of a listener thread is about. */
enum net_ev_kind {
	NET_EV_UDP,
	NET_EV_TCP_LISTEN,
	NET_EV_TCP_CONN,
	NET_EV_TLS_LISTEN, /* server.listen_tls */
	NET_EV_TLS_CONN,
	NET_EV_HTTPS_LISTEN, /* server.listen_https */
	NET_EV_HTTPS_CONN,
	NET_EV_REPLIES,
	NET_EV_STOP,
};

struct net_ev {
	enum net_ev_kind kind;
	int fd;
	bool wildcard; /* NET_EV_UDP bound to 0.0.0.0 or ::: replies name their source (pktinfo) */
	void *ptr;     /* NET_EV_TCP_CONN, NET_EV_TLS_CONN, NET_EV_HTTPS_CONN: the connection */
};

/**
 * Is a already served by another socket (any process)? A UDP bind without
 * SO_REUSEADDR/SO_REUSEPORT fails then; UDP has no TIME_WAIT to confuse
 * it with a daemon that just stopped.
 * @return 1 (in use), 0 (free), or -errno of the probe.
 */
int net_in_use(const struct conf_addr *a);

/** Is a the wildcard address (0.0.0.0, ::)? */
bool net_is_wildcard(const struct conf_addr *a);

/**
 * A non-blocking socket of type (SOCK_DGRAM, SOCK_STREAM) bound to a with
 * SO_REUSEPORT (one socket per thread per address: the kernel spreads
 * clients), listening for TCP. A wildcard UDP socket also reports each
 * datagram's destination (IP_PKTINFO, IPV6_RECVPKTINFO), so the reply can
 * leave from the address the client asked.
 * @return the fd or -errno.
 */
int net_bind(const struct conf_addr *a, int type);

/**
 * Can a socket send from a (a source address, port 0)? A UDP bind to it
 * fails with EADDRNOTAVAIL when no interface of this machine has it.
 * @return 0 or -errno of the bind.
 */
int net_source_check(const struct conf_addr *a);
