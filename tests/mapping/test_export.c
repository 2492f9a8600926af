/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of mapping/export.c: exact CSV/JSON/geofeed output, escaping, and the table serial. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "mapping/export.h"
#include "mapping/mapping.h"
#include "partition/partition.h"

/* One partition of a test table; NULL strings are unset, NULL v4/v6 mean no address. */
struct tpart {
	const char *name;
	bool no_entry; /* leave the mapping slot unset */
	const char *v4, *v6;
	const char *label, *country, *region, *city, *postal;
};

#define MAXPARTS 8

struct table {
	struct ptable *t;
	struct mapping *m;
};

/* "ADDR[/LEN]" with inet_pton; keeps host bits (mapping_set must clear them). */
static struct prefix P(const char *text)
{
	struct prefix p;
	memset(&p, 0, sizeof(p));
	char buf[64];
	snprintf(buf, sizeof(buf), "%s", text);
	char *slash = strchr(buf, '/');
	if (slash != NULL)
		*slash = '\0';
	if (inet_pton(AF_INET, buf, p.addr) == 1) {
		p.family = AF_INET;
		p.len = 32;
	} else if (inet_pton(AF_INET6, buf, p.addr) == 1) {
		p.family = AF_INET6;
		p.len = 128;
	} else {
		fail_msg("test bug: bad address '%s'", text);
	}
	if (slash != NULL)
		p.len = (uint8_t)atoi(slash + 1);
	return p;
}

/* Build the ptable and mapping; reverse sets entries last-to-first (order must not matter). */
static struct table build(const struct tpart *parts, size_t n, bool reverse)
{
	struct table tb;
	tb.t = ptable_new();
	assert_non_null(tb.t);
	for (size_t i = 0; i < n; i++) {
		int id = ptable_add(tb.t, parts[i].name);
		if (id != (int)i + 1)
			fail_msg("ptable_add(%s) = %d, want %zu", parts[i].name, id, i + 1);
	}
	assert_int_equal(ptable_build(tb.t), 0);
	tb.m = mapping_new(n);
	assert_non_null(tb.m);
	for (size_t k = 0; k < n; k++) {
		size_t i = reverse ? n - 1 - k : k;
		const struct tpart *p = &parts[i];
		if (p->no_entry)
			continue;
		struct mapping_entry e = {
			.label = (char *)p->label, .country = (char *)p->country, .region = (char *)p->region,
			.city = (char *)p->city, .postal = (char *)p->postal,
		};
		if (p->v4 != NULL) {
			e.has_v4 = true;
			e.v4 = P(p->v4);
		}
		if (p->v6 != NULL) {
			e.has_v6 = true;
			e.v6 = P(p->v6);
		}
		int rc = mapping_set(tb.m, (unsigned)i + 1, &e);
		if (rc != 0)
			fail_msg("mapping_set(%s) = %d", p->name, rc);
	}
	return tb;
}

static void destroy(struct table *tb)
{
	mapping_free(tb->m);
	ptable_free(tb->t);
}

/* Export into a malloc'd NUL-terminated string. */
static char *export_str(const struct mapping *m, const struct ptable *t, enum mapping_format fmt)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	int rc = mapping_export(m, t, fmt, f);
	fclose(f);
	if (rc != 0)
		fail_msg("mapping_export(%d) = %d", (int)fmt, rc);
	return buf;
}

/* Replace every "@SERIAL@" in tmpl with the 16-hex-digit serial. */
static char *with_serial(const char *tmpl, uint64_t serial)
{
	char hex[17];
	snprintf(hex, sizeof(hex), "%016" PRIx64, serial);
	size_t cap = strlen(tmpl) * 2 + 64;
	char *out = malloc(cap);
	assert_non_null(out);
	char *o = out;
	for (const char *s = tmpl; *s != '\0';) {
		if (strncmp(s, "@SERIAL@", 8) == 0) {
			memcpy(o, hex, 16);
			o += 16;
			s += 8;
		} else {
			*o++ = *s++;
		}
	}
	*o = '\0';
	return out;
}

static char *read_expected(const char *name)
{
	const char *dir = getenv("PARTDNS_TEST_DATA");
	if (dir == NULL)
		dir = ".";
	char path[4096];
	snprintf(path, sizeof(path), "%s/expected/%s", dir, name);
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		fail_msg("cannot open %s (is PARTDNS_TEST_DATA set?)", path);
	char *buf = malloc(1 << 16);
	assert_non_null(buf);
	size_t n = fread(buf, 1, (1 << 16) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

/* Show the first difference: exact-output failures are otherwise unreadable. */
static void compare(const char *msg, const char *got, const char *want)
{
	if (strcmp(got, want) == 0)
		return;
	size_t i = 0, line = 1;
	while (got[i] != '\0' && got[i] == want[i]) {
		if (got[i] == '\n')
			line++;
		i++;
	}
	fail_msg("%s: output differs at byte %zu (line %zu)\n--- got ---\n%s\n--- want ---\n%s", msg, i, line,
	         got, want);
}

/* --- the tables --- */

static const struct tpart basic[] = {
	{ "nanjing", false, "198.51.100.1", "2001:db8:1::/56", "Nanjing", "CN", "CN-JS", "Nanjing", NULL },
	{ "suzhou", false, "198.51.100.2", NULL, "Suzhou, Jiangsu", "CN", "CN-JS", "Suzhou, SIP", "215000" },
	{ .name = "wuxi", .no_entry = true },
	{ "east", false, NULL, "2001:db8:4::/48", "The \"east\" side", "CN", NULL, NULL, NULL },
	{ "blank", false, NULL, NULL, "", NULL, NULL, NULL, NULL },
};

static const struct tpart escape[] = {
	{ "ctrl", false, "203.0.113.1", NULL, "quote\" back\\ nl\n tab\t bell\x01 del\x7f", "CN", "CN-JS",
	  "\xe5\x8d\x97\xe4\xba\xac", "21\n0000" },
	{ "bad", false, "203.0.113.2", "2001:db8:2::/64",
	  "bad\xff utf8 \xc3( \xe2\x82 end \xed\xa0\x80 sur \xf0\x9f\x98\x80 ok \xc0\xaf"
	  " ov\xe0\x80\xaf f0\xf0\x80\x80\xaf f4\xf4\x90\x80\x80 f5\xf5\x80\x80\x80 c3\xe4\xb8\xc0x"
	  " edges\xc2\x80\xe0\xa0\x80\xed\x9f\xbf\xef\xbf\xbf\xf4\x8f\xbf\xbf tail\xe5\x8d",
	  "C,N", "CN\tJS", "a,b\rc", NULL },
};

static const char escape_csv[] =
	"serial,partition,id,label,mapped,mapped6,country,region,city,isp,asn\n"
	"@SERIAL@,ctrl,1,\"quote\"\" back\\ nl\n tab\t bell\x01 del\x7f\",203.0.113.1,,CN,CN-JS,\xe5\x8d\x97\xe4\xba\xac,,\n"
	"@SERIAL@,bad,2,bad\xff utf8 \xc3( \xe2\x82 end \xed\xa0\x80 sur \xf0\x9f\x98\x80 ok \xc0\xaf"
	" ov\xe0\x80\xaf f0\xf0\x80\x80\xaf f4\xf4\x90\x80\x80 f5\xf5\x80\x80\x80 c3\xe4\xb8\xc0x"
	" edges\xc2\x80\xe0\xa0\x80\xed\x9f\xbf\xef\xbf\xbf\xf4\x8f\xbf\xbf tail\xe5\x8d,"
	"203.0.113.2,2001:db8:2::/64,\"C,N\",CN\tJS,\"a,b\rc\",,\n";

static const char escape_json[] =
	"{\n"
	"  \"serial\": \"@SERIAL@\",\n"
	"  \"partitions\": [\n"
	"    {\n"
	"      \"name\": \"ctrl\",\n"
	"      \"id\": 1,\n"
	"      \"label\": \"quote\\\" back\\\\ nl\\u000a tab\\u0009 bell\\u0001 del\\u007f\",\n"
	"      \"mapped\": \"203.0.113.1\",\n"
	"      \"mapped6\": null,\n"
	"      \"country\": \"CN\",\n"
	"      \"region\": \"CN-JS\",\n"
	"      \"city\": \"\xe5\x8d\x97\xe4\xba\xac\",\n"
	"      \"isp\": null,\n"
	"      \"asn\": null\n"
	"    },\n"
	"    {\n"
	"      \"name\": \"bad\",\n"
	"      \"id\": 2,\n"
	"      \"label\": \"bad\\ufffd utf8 \\ufffd( \\ufffd\\ufffd end \\ufffd\\ufffd\\ufffd sur "
	"\xf0\x9f\x98\x80 ok \\ufffd\\ufffd"
	" ov\\ufffd\\ufffd\\ufffd f0\\ufffd\\ufffd\\ufffd\\ufffd f4\\ufffd\\ufffd\\ufffd\\ufffd f5\\ufffd\\ufffd\\ufffd\\ufffd c3\\ufffd\\ufffd\\ufffdx"
	" edges\\u0080\xe0\xa0\x80\xed\x9f\xbf\xef\xbf\xbf\xf4\x8f\xbf\xbf tail\\ufffd\\ufffd\",\n"
	"      \"mapped\": \"203.0.113.2\",\n"
	"      \"mapped6\": \"2001:db8:2::/64\",\n"
	"      \"country\": \"C,N\",\n"
	"      \"region\": \"CN\\u0009JS\",\n"
	"      \"city\": \"a,b\\u000dc\",\n"
	"      \"isp\": null,\n"
	"      \"asn\": null\n"
	"    }\n"
	"  ]\n"
	"}\n";

/* Geofeed has no quoting: ',' and control characters become spaces. */
static const char escape_geofeed[] =
	"# partdns geofeed serial=@SERIAL@\n"
	"203.0.113.1/32,CN,CN-JS,\xe5\x8d\x97\xe4\xba\xac,21 0000\n"
	"203.0.113.2/32,C N,CN JS,a b c,\n"
	"2001:db8:2::/64,C N,CN JS,a b c,\n";

struct output_row {
	const char *msg;
	const struct tpart *parts;
	size_t nparts;
	enum mapping_format fmt;
	const char *file;     /* expected output in expected/, or */
	const char *inline_;  /* inline expected text */
};

static const struct output_row output_rows[] = {
	{ "basic table as CSV", basic, 5, MAPPING_FORMAT_CSV, "basic.csv", NULL },
	{ "basic table as JSON", basic, 5, MAPPING_FORMAT_JSON, "basic.json", NULL },
	{ "basic table as geofeed (unmapped skipped)", basic, 5, MAPPING_FORMAT_GEOFEED, "basic.geofeed", NULL },
	{ "empty table as CSV", NULL, 0, MAPPING_FORMAT_CSV, "empty.csv", NULL },
	{ "empty table as JSON", NULL, 0, MAPPING_FORMAT_JSON, "empty.json", NULL },
	{ "empty table as geofeed", NULL, 0, MAPPING_FORMAT_GEOFEED, "empty.geofeed", NULL },
	{ "escapes in CSV", escape, 2, MAPPING_FORMAT_CSV, NULL, escape_csv },
	{ "escapes in JSON", escape, 2, MAPPING_FORMAT_JSON, NULL, escape_json },
	{ "separators in geofeed", escape, 2, MAPPING_FORMAT_GEOFEED, NULL, escape_geofeed },
};

static void test_output(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(output_rows) / sizeof(output_rows[0]); i++) {
		const struct output_row *r = &output_rows[i];
		struct table tb = build(r->parts, r->nparts, false);
		char *tmpl = r->file != NULL ? read_expected(r->file) : strdup(r->inline_);
		assert_non_null(tmpl);
		char *want = with_serial(tmpl, mapping_serial(tb.m, tb.t));
		char *got = export_str(tb.m, tb.t, r->fmt);
		compare(r->msg, got, want);
		free(got);
		free(want);
		free(tmpl);
		destroy(&tb);
	}
}

/* Without a mapping (or with fewer slots than partitions) every partition exports as unmapped. */
static void test_output_without_mapping(void **state)
{
	(void)state;
	struct table tb = build(basic, 2, false);
	struct mapping *short_m = mapping_new(1);
	assert_non_null(short_m);
	struct mapping_entry e = { .has_v4 = true, .v4 = P("198.51.100.9"), .city = "Nanjing" };
	assert_int_equal(mapping_set(short_m, 1, &e), 0);

	struct {
		const char *msg;
		const struct mapping *m;
		enum mapping_format fmt;
		const char *want;
	} rows[] = {
		{ "NULL mapping, CSV", NULL, MAPPING_FORMAT_CSV,
		  "serial,partition,id,label,mapped,mapped6,country,region,city,isp,asn\n"
		  "@SERIAL@,nanjing,1,,,,,,,,\n"
		  "@SERIAL@,suzhou,2,,,,,,,,\n" },
		{ "NULL mapping, geofeed", NULL, MAPPING_FORMAT_GEOFEED, "# partdns geofeed serial=@SERIAL@\n" },
		{ "mapping shorter than the table, CSV", short_m, MAPPING_FORMAT_CSV,
		  "serial,partition,id,label,mapped,mapped6,country,region,city,isp,asn\n"
		  "@SERIAL@,nanjing,1,,198.51.100.9,,,,Nanjing,,\n"
		  "@SERIAL@,suzhou,2,,,,,,,,\n" },
		{ "mapping shorter than the table, geofeed", short_m, MAPPING_FORMAT_GEOFEED,
		  "# partdns geofeed serial=@SERIAL@\n"
		  "198.51.100.9/32,,,Nanjing,\n" },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char *want = with_serial(rows[i].want, mapping_serial(rows[i].m, tb.t));
		char *got = export_str(rows[i].m, tb.t, rows[i].fmt);
		compare(rows[i].msg, got, want);
		free(got);
		free(want);
	}
	/* A NULL mapping and an empty one are the same table. */
	struct mapping *empty = mapping_new(2);
	assert_non_null(empty);
	assert_true(mapping_serial(NULL, tb.t) == mapping_serial(empty, tb.t));
	mapping_free(empty);
	mapping_free(short_m);
	destroy(&tb);
}

/* --- serial --- */

/* Independent FNV-1a 64 reference, to pin the algorithm the header line names. */
static uint64_t ref_fnv1a(const uint8_t *p, size_t n)
{
	uint64_t h = 14695981039346656037ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static void test_serial_empty_is_fnv(void **state)
{
	(void)state;
	struct table tb = build(NULL, 0, false);
	static const uint8_t zero_count[8] = { 0 }; /* the partition count, 64-bit big-endian */
	assert_true(mapping_serial(tb.m, tb.t) == ref_fnv1a(zero_count, sizeof(zero_count)));
	destroy(&tb);
}

enum field { F_NONE, F_NAME, F_V4, F_V6, F_LABEL, F_COUNTRY, F_REGION, F_CITY, F_POSTAL, F_NOENTRY };

struct serial_row {
	const char *msg;
	bool same;          /* serial must equal the base table's */
	size_t idx;         /* partition changed */
	enum field f1;
	const char *v1;
	enum field f2;      /* optional second change on the same partition */
	const char *v2;
	int resize;         /* +1: append a partition, -1: drop the last */
};

static void set_field(struct tpart *p, enum field f, const char *v)
{
	switch (f) {
	case F_NONE: break;
	case F_NAME: p->name = v; break;
	case F_V4: p->v4 = v; break;
	case F_V6: p->v6 = v; break;
	case F_LABEL: p->label = v; break;
	case F_COUNTRY: p->country = v; break;
	case F_REGION: p->region = v; break;
	case F_CITY: p->city = v; break;
	case F_POSTAL: p->postal = v; break;
	case F_NOENTRY: p->no_entry = v != NULL; break; /* NULL: give the slot an entry */
	}
}

static const struct serial_row serial_rows[] = {
	{ "identical table", true, 0, F_NONE, NULL, F_NONE, NULL, 0 },
	{ "v6 host bits are not part of the prefix", true, 0, F_V6, "2001:db8:1::1/56", F_NONE, NULL, 0 },
	{ "unset entry equals an all-empty one", true, 2, F_NOENTRY, NULL, F_NONE, NULL, 0 },
	{ "name", false, 0, F_NAME, "nanjing2", F_NONE, NULL, 0 },
	{ "label", false, 0, F_LABEL, "Nanjing City", F_NONE, NULL, 0 },
	{ "label unset vs empty", false, 4, F_LABEL, NULL, F_NONE, NULL, 0 },
	{ "label case", false, 0, F_LABEL, "nanjing", F_NONE, NULL, 0 },
	{ "mapped address", false, 0, F_V4, "198.51.100.3", F_NONE, NULL, 0 },
	{ "mapped address removed", false, 0, F_V4, NULL, F_NONE, NULL, 0 },
	{ "mapped6 address", false, 0, F_V6, "2001:db8:9::/56", F_NONE, NULL, 0 },
	{ "mapped6 length", false, 0, F_V6, "2001:db8:1::/64", F_NONE, NULL, 0 },
	{ "mapped6 removed", false, 0, F_V6, NULL, F_NONE, NULL, 0 },
	{ "mapped6 added", false, 1, F_V6, "2001:db8:2::/56", F_NONE, NULL, 0 },
	{ "country", false, 0, F_COUNTRY, "TW", F_NONE, NULL, 0 },
	{ "region", false, 0, F_REGION, "CN-ZJ", F_NONE, NULL, 0 },
	{ "city", false, 0, F_CITY, "Hangzhou", F_NONE, NULL, 0 },
	{ "postal", false, 0, F_POSTAL, "210000", F_NONE, NULL, 0 },
	{ "postal emptied", false, 1, F_POSTAL, "", F_NONE, NULL, 0 },
	{ "text moved between country and region", false, 0, F_COUNTRY, "CNC", F_REGION, "N-JS", 0 },
	{ "text moved between region and city", false, 0, F_REGION, "CN-JSN", F_CITY, "anjing", 0 },
	{ "values swapped between label and city", false, 1, F_LABEL, "Suzhou, SIP", F_CITY, "Suzhou, Jiangsu", 0 },
	{ "unmapped partition gets an entry", false, 2, F_NOENTRY, NULL, F_CITY, "Wuxi", 0 },
	{ "partition appended", false, 0, F_NONE, NULL, F_NONE, NULL, +1 },
	{ "last partition dropped", false, 0, F_NONE, NULL, F_NONE, NULL, -1 },
};

static void test_serial_changes(void **state)
{
	(void)state;
	struct table base = build(basic, 5, false);
	uint64_t base_serial = mapping_serial(base.m, base.t);
	/* Stable: same object twice, and the same table built in the other order. */
	assert_true(mapping_serial(base.m, base.t) == base_serial);
	struct table rev = build(basic, 5, true);
	assert_true(mapping_serial(rev.m, rev.t) == base_serial);
	destroy(&rev);

	for (size_t i = 0; i < sizeof(serial_rows) / sizeof(serial_rows[0]); i++) {
		const struct serial_row *r = &serial_rows[i];
		struct tpart parts[MAXPARTS];
		memcpy(parts, basic, sizeof(basic));
		size_t n = 5;
		if (r->resize > 0)
			parts[n++] = (struct tpart){ .name = "extra" };
		else if (r->resize < 0)
			n--;
		set_field(&parts[r->idx], r->f1, r->v1);
		set_field(&parts[r->idx], r->f2, r->v2);
		struct table tb = build(parts, n, false);
		uint64_t s = mapping_serial(tb.m, tb.t);
		if ((s == base_serial) != r->same)
			fail_msg("%s: serial %016" PRIx64 " vs base %016" PRIx64 ", want %s", r->msg, s, base_serial,
			         r->same ? "equal" : "different");
		/* The serial in the output follows the table. */
		char *csv = export_str(tb.m, tb.t, MAPPING_FORMAT_CSV);
		char hex[17];
		snprintf(hex, sizeof(hex), "%016" PRIx64, s);
		if (strstr(csv, hex) == NULL)
			fail_msg("%s: CSV does not carry serial %s", r->msg, hex);
		free(csv);
		destroy(&tb);
	}
	destroy(&base);
}

/* Two tables that differ only in how text splits across fields must not share a serial. */
struct pair_row {
	const char *msg;
	struct tpart a[2], b[2];
	size_t n;
};

static const struct pair_row pair_rows[] = {
	{ "a control byte cannot stand in for a field boundary",
	  { { .name = "p", .city = "", .postal = "\x01" } }, { { .name = "p", .city = "\x01", .postal = "" } }, 1 },
	{ "text split differently between country and region",
	  { { .name = "p", .country = "AB", .region = "C" } }, { { .name = "p", .country = "A", .region = "BC" } }, 1 },
	{ "unset vs empty city", { { .name = "p", .city = NULL } }, { { .name = "p", .city = "" } }, 1 },
	{ "city vs region", { { .name = "p", .city = "X" } }, { { .name = "p", .region = "X" } }, 1 },
	{ "mapped addresses swapped between partitions",
	  { { .name = "p", .v4 = "198.51.100.1" }, { .name = "q", .v4 = "198.51.100.2" } },
	  { { .name = "p", .v4 = "198.51.100.2" }, { .name = "q", .v4 = "198.51.100.1" } }, 2 },
	{ "names swapped between partitions",
	  { { .name = "p", .v4 = "198.51.100.1" }, { .name = "q" } },
	  { { .name = "q", .v4 = "198.51.100.1" }, { .name = "p" } }, 2 },
	{ "name text moved into the label",
	  { { .name = "ab", .label = "c" } }, { { .name = "a", .label = "bc" } }, 1 },
};

static void test_serial_pairs(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(pair_rows) / sizeof(pair_rows[0]); i++) {
		const struct pair_row *r = &pair_rows[i];
		struct table a = build(r->a, r->n, false), b = build(r->b, r->n, false);
		if (mapping_serial(a.m, a.t) == mapping_serial(b.m, b.t))
			fail_msg("%s: both tables have serial %016" PRIx64, r->msg, mapping_serial(a.m, a.t));
		destroy(&a);
		destroy(&b);
	}
}

/* --- errors and format names --- */

static void test_write_errors(void **state)
{
	(void)state;
	struct table tb = build(basic, 5, false);
	static const enum mapping_format fmts[] = { MAPPING_FORMAT_CSV, MAPPING_FORMAT_JSON, MAPPING_FORMAT_GEOFEED };
	for (size_t i = 0; i < 3; i++) {
		FILE *full = fopen("/dev/full", "w");
		assert_non_null(full);
		int rc = mapping_export(tb.m, tb.t, fmts[i], full);
		fclose(full);
		if (rc != -EIO)
			fail_msg("format %d to /dev/full: rc %d, want -EIO", (int)fmts[i], rc);
		FILE *ro = fopen("/dev/null", "r");
		assert_non_null(ro);
		rc = mapping_export(tb.m, tb.t, fmts[i], ro);
		fclose(ro);
		if (rc != -EIO)
			fail_msg("format %d to a read-only stream: rc %d, want -EIO", (int)fmts[i], rc);
	}
	FILE *null = fopen("/dev/null", "w");
	assert_non_null(null);
	assert_int_equal(mapping_export(tb.m, tb.t, (enum mapping_format)42, null), -EINVAL);
	fclose(null);
	destroy(&tb);
}

struct fmt_row {
	const char *name;
	int rc;
	enum mapping_format fmt;
};

static void test_format_parse(void **state)
{
	(void)state;
	static const struct fmt_row rows[] = {
		{ "csv", 0, MAPPING_FORMAT_CSV },
		{ "json", 0, MAPPING_FORMAT_JSON },
		{ "geofeed", 0, MAPPING_FORMAT_GEOFEED },
		{ "CSV", -EINVAL, MAPPING_FORMAT_CSV },
		{ "", -EINVAL, MAPPING_FORMAT_CSV },
		{ "xml", -EINVAL, MAPPING_FORMAT_CSV },
		{ "json ", -EINVAL, MAPPING_FORMAT_CSV },
		{ "geo", -EINVAL, MAPPING_FORMAT_CSV },
		{ NULL, -EINVAL, MAPPING_FORMAT_CSV },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		enum mapping_format f = (enum mapping_format)99;
		int rc = mapping_format_parse(rows[i].name, &f);
		if (rc != rows[i].rc)
			fail_msg("'%s': rc %d, want %d", rows[i].name ? rows[i].name : "(null)", rc, rows[i].rc);
		if (rc == 0 && f != rows[i].fmt)
			fail_msg("'%s': format %d, want %d", rows[i].name, (int)f, (int)rows[i].fmt);
		if (rc == 0 && strcmp(mapping_format_name(f), rows[i].name) != 0)
			fail_msg("'%s': mapping_format_name gives '%s'", rows[i].name, mapping_format_name(f));
	}
	assert_null(mapping_format_name((enum mapping_format)42));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_output),
		cmocka_unit_test(test_output_without_mapping),
		cmocka_unit_test(test_serial_empty_is_fnv),
		cmocka_unit_test(test_serial_changes),
		cmocka_unit_test(test_serial_pairs),
		cmocka_unit_test(test_write_errors),
		cmocka_unit_test(test_format_parse),
	};
	return cmocka_run_group_tests_name("export", tests, NULL, NULL);
}
