/* SPDX-License-Identifier: BSD-3-Clause */
/* Export of the partition -> mapped-address table as CSV, JSON and RFC 8805 geofeed. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#include "mapping/export.h"
#include "partition/prefix.h"
#include "util/json.h"

int mapping_format_parse(const char *name, enum mapping_format *out)
{
	if (name == NULL)
		return -EINVAL;
	if (strcmp(name, "csv") == 0)
		*out = MAPPING_FORMAT_CSV;
	else if (strcmp(name, "json") == 0)
		*out = MAPPING_FORMAT_JSON;
	else if (strcmp(name, "geofeed") == 0)
		*out = MAPPING_FORMAT_GEOFEED;
	else
		return -EINVAL;
	return 0;
}

const char *mapping_format_name(enum mapping_format fmt)
{
	switch (fmt) {
	case MAPPING_FORMAT_CSV:
		return "csv";
	case MAPPING_FORMAT_JSON:
		return "json";
	case MAPPING_FORMAT_GEOFEED:
		return "geofeed";
	default:
		return NULL;
	}
}

/* An all-unset entry, standing in for partitions without a mapping. */
static const struct mapping_entry empty_entry;

static const struct mapping_entry *entry_of(const struct mapping *m, unsigned id)
{
	const struct mapping_entry *e = mapping_get(m, id);
	return e != NULL ? e : &empty_entry;
}

/* --- serial: FNV-1a 64 over a self-delimiting encoding of the exported fields --- */

#define FNV64_OFFSET UINT64_C(0xcbf29ce484222325)
#define FNV64_PRIME UINT64_C(0x100000001b3)

static void fnv_bytes(uint64_t *h, const void *data, size_t len)
{
	const uint8_t *p = data;
	for (size_t i = 0; i < len; i++) {
		*h ^= p[i];
		*h *= FNV64_PRIME;
	}
}

/* Fixed-width big-endian so the digest does not depend on the host. */
static void fnv_u64(uint64_t *h, uint64_t v)
{
	uint8_t b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (56 - 8 * i));
	fnv_bytes(h, b, sizeof(b));
}

/* Presence tag + length + bytes: NULL, "" and split strings all hash apart. */
static void fnv_str(uint64_t *h, const char *s)
{
	uint8_t tag = s != NULL;
	fnv_bytes(h, &tag, 1);
	if (s == NULL)
		return;
	size_t len = strlen(s);
	fnv_u64(h, len);
	fnv_bytes(h, s, len);
}

static void fnv_prefix(uint64_t *h, bool has, const struct prefix *p)
{
	uint8_t tag = has;
	fnv_bytes(h, &tag, 1);
	if (!has)
		return;
	fnv_bytes(h, &p->family, 1);
	fnv_bytes(h, &p->len, 1);
	fnv_bytes(h, p->addr, sizeof(p->addr));
}

uint64_t mapping_serial(const struct mapping *m, const struct ptable *t)
{
	uint64_t h = FNV64_OFFSET;
	size_t n = ptable_size(t);
	fnv_u64(&h, n);
	for (unsigned id = 1; id <= n; id++) {
		const struct mapping_entry *e = entry_of(m, id);
		fnv_u64(&h, id);
		fnv_str(&h, ptable_name(t, id));
		fnv_str(&h, e->label);
		fnv_prefix(&h, e->has_v4, &e->v4);
		fnv_prefix(&h, e->has_v6, &e->v6);
		fnv_str(&h, e->country);
		fnv_str(&h, e->region);
		fnv_str(&h, e->city);
		fnv_str(&h, e->postal);
		fnv_str(&h, e->isp);
		fnv_u64(&h, e->asn);
	}
	return h;
}

struct digest_walk {
	unsigned id;
	uint64_t sum;
};

/* Each prefix hashed on its own and summed: the order of a partition's
 * prefixes in the file is no change of plan. */
static int digest_prefix(const struct prefix *p, void *arg)
{
	struct digest_walk *w = arg;
	uint64_t h = FNV64_OFFSET;
	fnv_u64(&h, w->id);
	fnv_prefix(&h, true, p);
	w->sum += h;
	return 0;
}

uint64_t mapping_plan_digest(const struct mapping *m, const struct ptable *t, uint64_t extra)
{
	uint64_t h = FNV64_OFFSET;
	fnv_u64(&h, mapping_serial(m, t));
	fnv_u64(&h, extra);
	struct digest_walk w = { .sum = 0 };
	for (w.id = 1; w.id <= ptable_size(t); w.id++)
		ptable_foreach_prefix(t, w.id, digest_prefix, &w);
	fnv_u64(&h, w.sum);
	return h;
}

/* --- CSV (RFC 4180 quoting, LF line ends) --- */

static void csv_field(FILE *out, const char *s)
{
	if (s == NULL)
		return;
	/* A leading '#' is quoted too so that no data row reads as a comment. */
	bool quote = s[0] == '#' || strpbrk(s, ",\"\r\n") != NULL;
	if (!quote) {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	for (const char *p = s; *p != '\0'; p++) {
		if (*p == '"')
			fputc('"', out);
		fputc(*p, out);
	}
	fputc('"', out);
}

static int export_csv(const struct mapping *m, const struct ptable *t, const char *serial, FILE *out)
{
	/* Plain CSV (RFC 4180): a comment line before the header is read as the
	 * header by CSV readers, so the serial is a column of every row. */
	size_t n = ptable_size(t);
	fputs("serial,partition,id,label,mapped,mapped6,country,region,city,isp,asn\n", out);
	for (unsigned id = 1; id <= n; id++) {
		const struct mapping_entry *e = entry_of(m, id);
		char v4[PREFIX_STRLEN] = "", v6[PREFIX_STRLEN] = "";
		if (e->has_v4 && prefix_format_addr(&e->v4, v4, sizeof(v4)) < 0)
			return -EINVAL;
		if (e->has_v6 && prefix_format(&e->v6, v6, sizeof(v6)) < 0)
			return -EINVAL;
		fprintf(out, "%s,", serial);
		csv_field(out, ptable_name(t, id));
		fprintf(out, ",%u,", id);
		csv_field(out, e->label);
		fprintf(out, ",%s,%s,", v4, v6);
		csv_field(out, e->country);
		fputc(',', out);
		csv_field(out, e->region);
		fputc(',', out);
		csv_field(out, e->city);
		fputc(',', out);
		csv_field(out, e->isp);
		if (e->asn != 0)
			fprintf(out, ",%u\n", (unsigned)e->asn);
		else
			fputs(",\n", out);
	}
	return 0;
}

/* --- JSON (RFC 8259) --- */

static int export_json(const struct mapping *m, const struct ptable *t, const char *serial, FILE *out)
{
	size_t n = ptable_size(t);
	fprintf(out, "{\n  \"serial\": \"%s\",\n  \"partitions\": [", serial);
	for (unsigned id = 1; id <= n; id++) {
		const struct mapping_entry *e = entry_of(m, id);
		char v4[PREFIX_STRLEN], v6[PREFIX_STRLEN];
		if (e->has_v4 && prefix_format_addr(&e->v4, v4, sizeof(v4)) < 0)
			return -EINVAL;
		if (e->has_v6 && prefix_format(&e->v6, v6, sizeof(v6)) < 0)
			return -EINVAL;
		fputs(id == 1 ? "\n    {\n" : ",\n    {\n", out);
		fputs("      \"name\": ", out);
		json_string(out, ptable_name(t, id));
		fprintf(out, ",\n      \"id\": %u,\n      \"label\": ", id);
		json_string(out, e->label);
		fputs(",\n      \"mapped\": ", out);
		json_string(out, e->has_v4 ? v4 : NULL);
		fputs(",\n      \"mapped6\": ", out);
		json_string(out, e->has_v6 ? v6 : NULL);
		fputs(",\n      \"country\": ", out);
		json_string(out, e->country);
		fputs(",\n      \"region\": ", out);
		json_string(out, e->region);
		fputs(",\n      \"city\": ", out);
		json_string(out, e->city);
		fputs(",\n      \"isp\": ", out);
		json_string(out, e->isp);
		if (e->asn != 0)
			fprintf(out, ",\n      \"asn\": %u\n    }", (unsigned)e->asn);
		else
			fputs(",\n      \"asn\": null\n    }", out);
	}
	fputs(n > 0 ? "\n  ]\n}\n" : "]\n}\n", out);
	return 0;
}

/* --- geofeed (RFC 8805): no quoting exists, so separators are replaced --- */

/* Commas and control characters would split or end the row: write them as spaces. */
static void geofeed_field(FILE *out, const char *s)
{
	if (s == NULL)
		return;
	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++)
		fputc(*p == ',' || *p < 0x20 || *p == 0x7f ? ' ' : *p, out);
}

static void geofeed_row(FILE *out, const char *prefix, const struct mapping_entry *e)
{
	fputs(prefix, out);
	fputc(',', out);
	geofeed_field(out, e->country);
	fputc(',', out);
	geofeed_field(out, e->region);
	fputc(',', out);
	geofeed_field(out, e->city);
	fputc(',', out);
	geofeed_field(out, e->postal);
	fputc('\n', out);
}

static int export_geofeed(const struct mapping *m, const struct ptable *t, const char *serial, FILE *out)
{
	fprintf(out, "# partdns geofeed serial=%s\n", serial);
	size_t n = ptable_size(t);
	for (unsigned id = 1; id <= n; id++) {
		const struct mapping_entry *e = entry_of(m, id);
		char text[PREFIX_STRLEN];
		if (e->has_v4) {
			if (prefix_format(&e->v4, text, sizeof(text)) < 0)
				return -EINVAL;
			geofeed_row(out, text, e);
		}
		if (e->has_v6) {
			if (prefix_format(&e->v6, text, sizeof(text)) < 0)
				return -EINVAL;
			geofeed_row(out, text, e);
		}
	}
	return 0;
}

int mapping_export(const struct mapping *m, const struct ptable *t, enum mapping_format fmt, FILE *out)
{
	char hex[17];
	snprintf(hex, sizeof(hex), "%016" PRIx64, mapping_serial(m, t));
	return mapping_export_serial(m, t, fmt, hex, out);
}

int mapping_export_serial(const struct mapping *m, const struct ptable *t, enum mapping_format fmt,
                          const char *serial, FILE *out)
{
	int rc;
	switch (fmt) {
	case MAPPING_FORMAT_CSV:
		rc = export_csv(m, t, serial, out);
		break;
	case MAPPING_FORMAT_JSON:
		rc = export_json(m, t, serial, out);
		break;
	case MAPPING_FORMAT_GEOFEED:
		rc = export_geofeed(m, t, serial, out);
		break;
	default:
		return -EINVAL;
	}
	if (rc != 0)
		return rc;
	/* Stream errors are sticky: one check after the last write covers every write. */
	if (fflush(out) != 0 || ferror(out))
		return -EIO;
	return 0;
}

size_t mapping_warn_unlocated(const struct mapping *m, const struct ptable *t, const char *prefix, FILE *err)
{
	size_t n = 0;
	for (unsigned id = 1; id <= ptable_size(t); id++) {
		const struct mapping_entry *e = m != NULL ? mapping_get(m, id) : NULL;
		if (e == NULL || (!e->has_v4 && !e->has_v6) || (e->country != NULL && e->country[0] != '\0'))
			continue;
		fprintf(err,
		        "%spartition '%s' has a mapped address but no country: its geofeed row (RFC 8805) will not "
		        "say where it is (set country, region and city)\n",
		        prefix, ptable_name(t, id));
		n++;
	}
	return n;
}
