/* SPDX-License-Identifier: BSD-3-Clause */
/* Partition -> mapped public address(es), the identity a CDN sees for a city. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mapping/ecs.h"
#include "partition/partition.h"
#include "partition/prefix.h"

/* Why an address is not a global unicast address (mapping_check_global). */
enum {
	MAPPING_E_UNSPECIFIED = -2101, /* 0.0.0.0/8, :: */
	MAPPING_E_LOOPBACK = -2102,    /* 127/8, ::1 */
	MAPPING_E_PRIVATE = -2103,     /* RFC 1918, fc00::/7 */
	MAPPING_E_CGNAT = -2104,       /* 100.64/10 (RFC 6598) */
	MAPPING_E_LINKLOCAL = -2105,   /* 169.254/16, fe80::/10 */
	MAPPING_E_MULTICAST = -2106,   /* 224/4, ff00::/8 */
	MAPPING_E_RESERVED = -2107,    /* 240/4, broadcast, other special-purpose */
};

/* One partition's identity and geofeed fields. Strings may be NULL. */
struct mapping_entry {
	bool has_v4;
	struct prefix v4;   /* mapped IPv4 address, always /32 */
	bool has_v6;
	struct prefix v6;   /* mapped IPv6 prefix (sent with its own length) */
	char *label;        /* free text */
	char *country;      /* ISO 3166-1 alpha-2, e.g. "CN" */
	char *region;       /* ISO 3166-2, e.g. "CN-JS" */
	char *city;         /* e.g. "Nanjing" */
	char *postal;
	char *isp;          /* the carrier, e.g. "China Mobile"; a CDN steers by city and carrier */
	uint32_t asn;       /* its autonomous system; 0 = not given */
	char *standby;      /* identity while failed over: another partition's name, or an address */
};

struct mapping;

/** @param npartitions ids 1..npartitions are valid. @return new mapping or NULL. */
struct mapping *mapping_new(size_t npartitions);
void mapping_free(struct mapping *m);

/**
 * Set id's entry; strings are copied, e->v6 is stored with host bits cleared.
 * e NULL clears the entry. On failure the old entry stays.
 * @return 0, -ENOENT (id out of range), -EINVAL (has_v4 but v4 not an AF_INET
 *         /32, or has_v6 but v6 not AF_INET6), -ENOMEM.
 */
int mapping_set(struct mapping *m, unsigned id, const struct mapping_entry *e);

/** @return id's entry, or NULL when unset/out of range. Valid while m lives. */
const struct mapping_entry *mapping_get(const struct mapping *m, unsigned id);

/** Number of partition slots (the npartitions given to mapping_new). */
size_t mapping_size(const struct mapping *m);

/**
 * The ECS option to send for a client of client_family (AF_INET/AF_INET6) in
 * partition id: for IPv6 clients the mapped6 prefix when set, else the IPv4
 * /32; for IPv4 clients the /32 when set, else mapped6 (one identity per
 * partition whatever the transport).
 * @return 0, -ENOENT (partition has no mapped address), or -EINVAL
 *         (client_family neither AF_INET nor AF_INET6).
 */
int mapping_ecs(const struct mapping *m, unsigned id, int client_family, struct ecs *out);

/**
 * Has partition id an identity to send: would mapping_ecs() succeed for a
 * client of either family? (It does for both or for neither.) Cheaper than
 * building the option, for routing a query that may never go upstream.
 */
bool mapping_has_ecs(const struct mapping *m, unsigned id);

/**
 * Is addr (a host address or prefix) global unicast? Documentation ranges
 * (192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32) are accepted.
 * A prefix is rejected when it overlaps any special-purpose range (the first
 * one in registry order names the error). IPv6 outside 2000::/3 is
 * MAPPING_E_RESERVED (IANA allocates global unicast only from there).
 * @return 0, a MAPPING_E_* code naming the range, or -EINVAL (bad family/len).
 */
int mapping_check_global(const struct prefix *addr);

/** Text of a MAPPING_E_* code (e.g. "private address (RFC 1918)"). */
const char *mapping_strerror(int err);
