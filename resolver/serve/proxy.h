/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. The PROXY protocol version 2 header a balancer puts before a client's bytes. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/*
 * HAProxy's "PROXY protocol" specification, section 2.2 (version 2, binary):
 * a 12-byte signature, version/command, family/protocol, a 16-bit length,
 * the addresses, then TLVs. Version 1 (text) is not accepted: dnsdist and
 * haproxy both send version 2 to a backend that asks for it.
 */
#define PROXY_SIG_LEN 12
#define PROXY_HDR_MIN 16          /* signature, ver/cmd, fam/proto, length */
#define PROXY_HDR_MAX (16 + 1024) /* larger headers are refused: addresses and a few TLVs need far less */

/* What a header says. */
struct proxy_hdr {
	bool local;                   /* LOCAL command (a balancer's own health check): no client, use the peer */
	int socktype;                 /* SOCK_STREAM or SOCK_DGRAM; 0 with local or an UNSPEC family */
	struct sockaddr_storage src;  /* PROXY, AF_INET or AF_INET6: the client */
	socklen_t src_len;            /* 0: no address given (local, or family UNSPEC) */
	struct sockaddr_storage dst;  /* the address the client asked */
	socklen_t dst_len;
};

/* proxy_parse results besides a header length */
#define PROXY_MORE 0              /* a valid start, not yet whole (streams: read more) */
#define PROXY_BAD (-1)            /* not a valid version 2 header */

/**
 * Parse a version 2 header at the start of p. Checks the signature, version
 * 2, command LOCAL or PROXY, the family/protocol byte against the values
 * the specification lists (UNSPEC, TCP4, UDP4, TCP6, UDP6; UNIX refused;
 * for LOCAL too), the address block whole, the length against
 * PROXY_HDR_MAX, and that the TLVs fill the rest
 * of the header exactly (each TLV's length inside it). TLV contents are
 * not used.
 * @return the header's length (> 0: the client's bytes follow it),
 *         PROXY_MORE or PROXY_BAD.
 */
int proxy_parse(const uint8_t *p, size_t len, struct proxy_hdr *h);

/** Does p start with the signature (or, when shorter, a prefix of it)? */
bool proxy_has_signature(const uint8_t *p, size_t len);
