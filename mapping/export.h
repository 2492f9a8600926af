/* SPDX-License-Identifier: BSD-3-Clause */
/* Export of the partition -> mapped-address table for CDNs. */
#pragma once

#include <stdint.h>
#include <stdio.h>

#include "mapping/mapping.h"
#include "partition/partition.h"

enum mapping_format {
	MAPPING_FORMAT_CSV,
	MAPPING_FORMAT_JSON,
	MAPPING_FORMAT_GEOFEED, /* RFC 8805 */
};

/** "csv", "json", "geofeed". @return 0 or -EINVAL. */
int mapping_format_parse(const char *name, enum mapping_format *out);

/** The name mapping_format_parse() accepts for fmt; NULL for an unknown value. Static storage. */
const char *mapping_format_name(enum mapping_format fmt);

/**
 * Serial of the table: a digest of every exported field, so the same table
 * always gives the same serial and any change gives a new one.
 */
uint64_t mapping_serial(const struct mapping *m, const struct ptable *t);

/**
 * Digest of the whole plan: what mapping_serial covers, every partition's
 * prefixes (in any order) and extra (the caller's own settings, e.g. how
 * unmatched clients are treated). Equal digests: the same plan.
 */
uint64_t mapping_plan_digest(const struct mapping *m, const struct ptable *t, uint64_t extra);

/**
 * Write the table in fmt to out, carrying mapping_serial() (CSV in a
 * "serial" column of every row, geofeed in a leading '#' comment line as
 * RFC 8805 allows, JSON as a "serial" member). Partitions are
 * ids 1..ptable_size(t), named by ptable_name(); m may lack entries (or be
 * NULL): such partitions export empty fields (JSON null) and no geofeed row.
 *
 * CSV: the header "serial,partition,id,label,mapped,mapped6,country,region,city,isp,asn"
 * (serial: 16 hex digits, the same on every row), one row per
 * partition; LF line ends; RFC 4180 quoting for fields holding , " CR LF
 * (or starting with '#').
 * JSON: {"serial", "partitions": [{name, id, label, mapped, mapped6, country,
 * region, city, isp, asn}]} (asn a number), 2-space indent, unset values null, control characters as
 * \u00xx, ill-formed UTF-8 as \ufffd, trailing newline.
 * Geofeed (RFC 8805): "# partdns geofeed serial=<16 hex>", then
 * "prefix,country,region,city,postal" per mapped address (v4 as /32, then
 * mapped6). The format has no quoting, so ',' and control characters inside
 * a field are written as spaces.
 * @return 0, -EIO (write to out failed), or -EINVAL (unknown fmt).
 */
int mapping_export(const struct mapping *m, const struct ptable *t, enum mapping_format fmt, FILE *out);

/**
 * As mapping_export, carrying serial (digits, e.g. the operator's
 * partitions.serial) instead of the digest: a number that only grows tells
 * a CDN which of two tables is newer, which a digest cannot.
 */
int mapping_export_serial(const struct mapping *m, const struct ptable *t, enum mapping_format fmt,
                          const char *serial, FILE *out);

/**
 * Warn on err, one line each beginning with prefix, about partitions that
 * publish a mapped address but no country: their geofeed row says nothing
 * of where the address is, which is what a CDN reads it for.
 * @return how many.
 */
size_t mapping_warn_unlocated(const struct mapping *m, const struct ptable *t, const char *prefix, FILE *err);
