/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of partition/prefix.c: parsing, canonical printing, masking, containment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "partition/prefix.h"

/* Report a failing row and count it; each test fails at the end if any row did. */
#define ROW_CHECK(failures, cond, ...)                                                             \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			print_error(__VA_ARGS__);                                                  \
			print_error("\n");                                                         \
			(failures)++;                                                              \
		}                                                                                  \
	} while (0)

static const char *code_name(int rc)
{
	switch (rc) {
	case 0:
		return "0";
	case PREFIX_E_SYNTAX:
		return "PREFIX_E_SYNTAX";
	case PREFIX_E_LENGTH:
		return "PREFIX_E_LENGTH";
	case PREFIX_E_HOSTBITS:
		return "PREFIX_E_HOSTBITS";
	default:
		return "other";
	}
}

struct parse_row {
	const char *text;
	int rc;
	const char *canon; /* for 0 and PREFIX_E_HOSTBITS: prefix_format of the result */
	const char *msg;
};

static const struct parse_row parse_rows[] = {
	/* valid IPv4 */
	{ "10.0.0.0/8", 0, "10.0.0.0/8", "plain /8" },
	{ "10.1.0.0/16", 0, "10.1.0.0/16", "plain /16" },
	{ "0.0.0.0/0", 0, "0.0.0.0/0", "IPv4 default route" },
	{ "192.0.2.1", 0, "192.0.2.1/32", "bare address is a /32" },
	{ "192.0.2.1/32", 0, "192.0.2.1/32", "explicit /32" },
	{ "255.255.255.255/32", 0, "255.255.255.255/32", "all ones" },
	{ "198.51.100.128/25", 0, "198.51.100.128/25", "odd length" },
	{ "10.0.0.0/9", 0, "10.0.0.0/9", "single-digit length" },
	/* valid IPv6 */
	{ "::/0", 0, "::/0", "IPv6 default route" },
	{ "::", 0, "::/128", "bare unspecified address is a /128" },
	{ "::1", 0, "::1/128", "loopback" },
	{ "::/128", 0, "::/128", "unspecified /128" },
	{ "2001:db8::/32", 0, "2001:db8::/32", "documentation /32" },
	{ "2001:DB8::/32", 0, "2001:db8::/32", "upper case is printed lower case" },
	{ "2001:0db8:0000:0000:0000:0000:0000:0000/32", 0, "2001:db8::/32", "leading zeros dropped, zeros compressed" },
	{ "2001:db8:0:0:1:0:0:1/128", 0, "2001:db8::1:0:0:1/128", "RFC 5952 4.2.3: first of equal zero runs" },
	{ "2001:db8:0:1:1:1:1:1/128", 0, "2001:db8:0:1:1:1:1:1/128", "RFC 5952 4.2.2: single zero not compressed" },
	{ "2001:db8::1:0:0:0:1", 0, "2001:db8:0:1::1/128", "RFC 5952 4.2.3: longest zero run" },
	{ "2001:db8:1::/56", 0, "2001:db8:1::/56", "/56" },
	{ "fe80::/10", 0, "fe80::/10", "link-local /10" },
	{ "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", 0, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", "all ones /128" },
	{ "::ffff:192.0.2.1", 0, "::ffff:192.0.2.1/128", "IPv4-mapped, dotted input" },
	{ "::ffff:c000:201/128", 0, "::ffff:192.0.2.1/128", "IPv4-mapped, hex input printed dotted (RFC 5952 5)" },
	{ "::ffff:0:0/96", 0, "::ffff:0.0.0.0/96", "IPv4-mapped /96" },
	/* syntax errors */
	{ "", PREFIX_E_SYNTAX, NULL, "empty string" },
	{ " 10.0.0.0/8", PREFIX_E_SYNTAX, NULL, "leading space" },
	{ "10.0.0.0 /8", PREFIX_E_SYNTAX, NULL, "space before slash" },
	{ "/8", PREFIX_E_SYNTAX, NULL, "no address" },
	{ "/", PREFIX_E_SYNTAX, NULL, "slash alone" },
	{ "10.0.0/24", PREFIX_E_SYNTAX, NULL, "three octets" },
	{ "10/8", PREFIX_E_SYNTAX, NULL, "classful shorthand" },
	{ "010.0.0.0/8", PREFIX_E_SYNTAX, NULL, "leading zero in octet" },
	{ "256.0.0.0/8", PREFIX_E_SYNTAX, NULL, "octet > 255" },
	{ "1.2.3.4.5/32", PREFIX_E_SYNTAX, NULL, "five octets" },
	{ "10.0.0.0x/8", PREFIX_E_SYNTAX, NULL, "junk after address" },
	{ "0x0a.0.0.0/8", PREFIX_E_SYNTAX, NULL, "hex octet" },
	{ "a.b.c.d", PREFIX_E_SYNTAX, NULL, "letters" },
	{ "1.2.3.4\n", PREFIX_E_SYNTAX, NULL, "trailing newline after address" },
	{ "1.2.3.4 ", PREFIX_E_SYNTAX, NULL, "trailing space after address" },
	{ "2001:db8::g/32", PREFIX_E_SYNTAX, NULL, "non-hex digit" },
	{ "2001:db8:::/32", PREFIX_E_SYNTAX, NULL, "triple colon" },
	{ "1::2::3", PREFIX_E_SYNTAX, NULL, "two :: runs" },
	{ "1:2:3:4:5:6:7:8:9", PREFIX_E_SYNTAX, NULL, "nine groups" },
	{ "12345::/16", PREFIX_E_SYNTAX, NULL, "five hex digits in a group" },
	{ "fe80::1%eth0", PREFIX_E_SYNTAX, NULL, "zone index" },
	{ "[::1]/128", PREFIX_E_SYNTAX, NULL, "brackets" },
	{ "::1 ", PREFIX_E_SYNTAX, NULL, "trailing space after IPv6" },
	{ "1111111111111111111111111111111111111111111111111111/8", PREFIX_E_SYNTAX, NULL, "address text too long" },
	/* length errors */
	{ "10.0.0.0/", PREFIX_E_LENGTH, NULL, "slash without digits" },
	{ "10.0.0.0/8 ", PREFIX_E_LENGTH, NULL, "trailing space after length" },
	{ "10.0.0.0/8\n", PREFIX_E_LENGTH, NULL, "trailing newline after length" },
	{ "10.0.0.0/ 8", PREFIX_E_LENGTH, NULL, "space after slash" },
	{ "10.0.0.0/33", PREFIX_E_LENGTH, NULL, "IPv4 length > 32" },
	{ "::/129", PREFIX_E_LENGTH, NULL, "IPv6 length > 128" },
	{ "10.0.0.0/08", PREFIX_E_LENGTH, NULL, "leading zero in length" },
	{ "10.0.0.0/00", PREFIX_E_LENGTH, NULL, "double zero length" },
	{ "10.0.0.0/-1", PREFIX_E_LENGTH, NULL, "negative length" },
	{ "10.0.0.0/+8", PREFIX_E_LENGTH, NULL, "plus sign" },
	{ "10.0.0.0/8/8", PREFIX_E_LENGTH, NULL, "second slash" },
	{ "10.0.0.0/0x8", PREFIX_E_LENGTH, NULL, "hex length" },
	{ "10.0.0.0/1000", PREFIX_E_LENGTH, NULL, "four digits" },
	{ "::/4294967424", PREFIX_E_LENGTH, NULL, "length that wraps 32 bits" },
	/* host bits: the masked prefix is still returned */
	{ "10.1.2.3/16", PREFIX_E_HOSTBITS, "10.1.0.0/16", "host bits in /16" },
	{ "192.0.2.1/0", PREFIX_E_HOSTBITS, "0.0.0.0/0", "host bits in /0" },
	{ "10.0.0.1/31", PREFIX_E_HOSTBITS, "10.0.0.0/31", "last bit in /31" },
	{ "2001:db8::1/64", PREFIX_E_HOSTBITS, "2001:db8::/64", "IPv6 host bits" },
	{ "::1/127", PREFIX_E_HOSTBITS, "::/127", "IPv6 last bit" },
	{ "2001:db9::/31", PREFIX_E_HOSTBITS, "2001:db8::/31", "bit 31 set" },
	{ "2001:db8:1:2:3:4:5:6/33", PREFIX_E_HOSTBITS, "2001:db8::/33", "host bits below /33" },
};

static void test_parse_table(void **state)
{
	(void)state;
	unsigned failures = 0;
	for (size_t i = 0; i < sizeof(parse_rows) / sizeof(parse_rows[0]); i++) {
		const struct parse_row *r = &parse_rows[i];
		struct prefix p;
		int rc = prefix_parse(r->text, &p);
		ROW_CHECK(failures, rc == r->rc, "row %zu (%s): prefix_parse(\"%s\") = %s, want %s", i,
		          r->msg, r->text, code_name(rc), code_name(r->rc));
		if (rc != r->rc || r->canon == NULL)
			continue;
		char buf[PREFIX_STRLEN];
		int n = prefix_format(&p, buf, sizeof(buf));
		ROW_CHECK(failures, n == (int)strlen(r->canon) && strcmp(buf, r->canon) == 0,
		          "row %zu (%s): \"%s\" printed as \"%s\" (%d), want \"%s\"", i, r->msg, r->text,
		          n < 0 ? "" : buf, n, r->canon);
		/* The canonical text parses back, cleanly, to the same prefix. */
		struct prefix q;
		rc = prefix_parse(r->canon, &q);
		ROW_CHECK(failures, rc == 0 && prefix_equal(&p, &q),
		          "row %zu (%s): canonical \"%s\" does not parse back (%s)", i, r->msg, r->canon,
		          code_name(rc));
	}
	assert_int_equal(failures, 0);
}

static void test_parse_addr_table(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		int rc;
		int family;
		const char *canon;
		const char *msg;
	} rows[] = {
		{ "192.0.2.1", 0, AF_INET, "192.0.2.1", "IPv4" },
		{ "0.0.0.0", 0, AF_INET, "0.0.0.0", "IPv4 zero" },
		{ "::1", 0, AF_INET6, "::1", "IPv6 loopback" },
		{ "::", 0, AF_INET6, "::", "IPv6 unspecified" },
		{ "::ffff:1.2.3.4", 0, AF_INET6, "::ffff:1.2.3.4", "IPv4-mapped" },
		{ "2001:DB8:0::0:1", 0, AF_INET6, "2001:db8::1", "canonical lower case" },
		{ "10.0.0.0/8", PREFIX_E_SYNTAX, 0, NULL, "a prefix is not an address" },
		{ "::/0", PREFIX_E_SYNTAX, 0, NULL, "an IPv6 prefix is not an address" },
		{ "", PREFIX_E_SYNTAX, 0, NULL, "empty" },
		{ " ::1", PREFIX_E_SYNTAX, 0, NULL, "leading space" },
		{ "1.2.3.4 ", PREFIX_E_SYNTAX, 0, NULL, "trailing space" },
		{ "1.2.3", PREFIX_E_SYNTAX, 0, NULL, "short IPv4" },
		{ "localhost", PREFIX_E_SYNTAX, 0, NULL, "a name" },
	};
	unsigned failures = 0;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct prefix p;
		int rc = prefix_parse_addr(rows[i].text, &p);
		ROW_CHECK(failures, rc == rows[i].rc, "row %zu (%s): prefix_parse_addr(\"%s\") = %s, want %s",
		          i, rows[i].msg, rows[i].text, code_name(rc), code_name(rows[i].rc));
		if (rc != 0 || rows[i].rc != 0)
			continue;
		char buf[PREFIX_STRLEN];
		int n = prefix_format_addr(&p, buf, sizeof(buf));
		ROW_CHECK(failures,
		          p.family == rows[i].family && p.len == prefix_family_bits(rows[i].family) &&
		                  n > 0 && strcmp(buf, rows[i].canon) == 0,
		          "row %zu (%s): family %d len %u text \"%s\", want family %d full length \"%s\"", i,
		          rows[i].msg, p.family, p.len, n > 0 ? buf : "", rows[i].family, rows[i].canon);
	}
	assert_int_equal(failures, 0);
}

static void test_parse_null(void **state)
{
	(void)state;
	struct prefix p;
	assert_int_equal(prefix_parse(NULL, &p), PREFIX_E_SYNTAX);
	assert_int_equal(prefix_parse_addr(NULL, &p), PREFIX_E_SYNTAX);
}

static void test_format_sizes(void **state)
{
	(void)state;
	static const char *const texts[] = {
		"10.0.0.0/8", "255.255.255.255/32", "::/0", "2001:db8::1:0:0:1/128",
		"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", "::ffff:255.255.255.255/128",
	};
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		struct prefix p;
		assert_int_equal(prefix_parse(texts[i], &p), 0);
		size_t want = strlen(texts[i]);
		assert_true(want < PREFIX_STRLEN);
		char buf[PREFIX_STRLEN];
		/* Exactly enough room works; one byte less is -ENOSPC and writes nothing past it. */
		memset(buf, 'x', sizeof(buf));
		assert_int_equal(prefix_format(&p, buf, want + 1), (int)want);
		assert_string_equal(buf, texts[i]);
		memset(buf, 'x', sizeof(buf));
		assert_int_equal(prefix_format(&p, buf, want), -ENOSPC);
		assert_int_equal(buf[want], 'x');
		assert_int_equal(prefix_format(&p, buf, 0), -ENOSPC);

		const char *slash = strchr(texts[i], '/');
		size_t alen = (size_t)(slash - texts[i]);
		assert_int_equal(prefix_format_addr(&p, buf, alen + 1), (int)alen);
		assert_memory_equal(buf, texts[i], alen);
		assert_int_equal(buf[alen], '\0');
		assert_int_equal(prefix_format_addr(&p, buf, alen), -ENOSPC);
	}
	struct prefix bad;
	memset(&bad, 0, sizeof(bad));
	char buf[PREFIX_STRLEN];
	assert_true(prefix_format(&bad, buf, sizeof(buf)) < 0);
	assert_true(prefix_format_addr(&bad, buf, sizeof(buf)) < 0);
}

static void test_mask_table(void **state)
{
	(void)state;
	static const struct {
		const char *addr;
		unsigned len;
		const char *want;
		const char *msg;
	} rows[] = {
		{ "10.255.255.255", 12, "10.240.0.0/12", "IPv4 /12" },
		{ "10.255.255.255", 0, "0.0.0.0/0", "IPv4 /0" },
		{ "10.255.255.255", 32, "10.255.255.255/32", "IPv4 /32 unchanged" },
		{ "10.255.255.255", 24, "10.255.255.0/24", "IPv4 byte boundary" },
		{ "2001:db8:ffff:ffff::1", 36, "2001:db8:f000::/36", "IPv6 /36" },
		{ "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 127, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/127", "IPv6 /127" },
		{ "2001:db8::1", 0, "::/0", "IPv6 /0" },
	};
	unsigned failures = 0;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct prefix p;
		assert_int_equal(prefix_parse_addr(rows[i].addr, &p), 0);
		p.len = (uint8_t)rows[i].len;
		prefix_mask(&p);
		char buf[PREFIX_STRLEN];
		prefix_format(&p, buf, sizeof(buf));
		ROW_CHECK(failures, strcmp(buf, rows[i].want) == 0, "row %zu (%s): got %s, want %s", i,
		          rows[i].msg, buf, rows[i].want);
	}
	/* IPv4 keeps addr[4..15] zero even if a caller left junk there. */
	struct prefix p;
	memset(&p, 0xAB, sizeof(p));
	p.family = AF_INET;
	p.len = 8;
	prefix_mask(&p);
	for (size_t i = 1; i < sizeof(p.addr); i++)
		assert_int_equal(p.addr[i], 0);
	assert_int_equal(p.addr[0], 0xAB);
	assert_int_equal(failures, 0);
}

static void test_contains_equal_table(void **state)
{
	(void)state;
	static const struct {
		const char *outer, *inner;
		bool contains, equal;
		const char *msg;
	} rows[] = {
		{ "10.0.0.0/8", "10.1.0.0/16", true, false, "nested /16 in /8" },
		{ "10.0.0.0/8", "10.0.0.0/8", true, true, "a prefix contains itself" },
		{ "10.1.0.0/16", "10.0.0.0/8", false, false, "shorter is not inside longer" },
		{ "10.0.0.0/8", "11.0.0.0/16", false, false, "disjoint" },
		{ "10.0.0.0/7", "11.0.0.0/8", true, false, "odd boundary" },
		{ "10.0.0.0/8", "10.0.0.0/9", true, false, "same address, longer" },
		{ "0.0.0.0/0", "255.255.255.255/32", true, false, "IPv4 /0 contains all" },
		{ "::/0", "10.0.0.0/8", false, false, "IPv6 /0 does not contain IPv4" },
		{ "0.0.0.0/0", "::/0", false, false, "families differ even when all-zero" },
		{ "2001:db8::/32", "2001:db8:ffff::/48", true, false, "IPv6 nested" },
		{ "2001:db8::/33", "2001:db8:8000::/48", false, false, "IPv6 bit 32 differs" },
		{ "::ffff:0:0/96", "::ffff:192.0.2.1", true, false, "mapped range" },
		{ "2001:db8::1", "2001:db8::1/128", true, true, "bare address equals its /128" },
	};
	unsigned failures = 0;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct prefix a, b;
		assert_int_equal(prefix_parse(rows[i].outer, &a), 0);
		assert_int_equal(prefix_parse(rows[i].inner, &b), 0);
		ROW_CHECK(failures, prefix_contains(&a, &b) == rows[i].contains,
		          "row %zu (%s): contains(%s, %s) wrong", i, rows[i].msg, rows[i].outer, rows[i].inner);
		ROW_CHECK(failures, prefix_equal(&a, &b) == rows[i].equal && prefix_equal(&b, &a) == rows[i].equal,
		          "row %zu (%s): equal(%s, %s) wrong", i, rows[i].msg, rows[i].outer, rows[i].inner);
	}
	assert_int_equal(failures, 0);
}

static void test_from_addr(void **state)
{
	(void)state;
	const uint8_t v4[4] = { 192, 0, 2, 1 };
	uint8_t v6[16];
	assert_int_equal(inet_pton(AF_INET6, "2001:db8::1", v6), 1);
	struct prefix p;
	char buf[PREFIX_STRLEN];

	prefix_from_addr(&p, AF_INET, v4);
	assert_int_equal(p.family, AF_INET);
	assert_int_equal(p.len, 32);
	prefix_format(&p, buf, sizeof(buf));
	assert_string_equal(buf, "192.0.2.1/32");
	for (size_t i = 4; i < sizeof(p.addr); i++)
		assert_int_equal(p.addr[i], 0);

	prefix_from_addr(&p, AF_INET6, v6);
	assert_int_equal(p.family, AF_INET6);
	assert_int_equal(p.len, 128);
	prefix_format(&p, buf, sizeof(buf));
	assert_string_equal(buf, "2001:db8::1/128");

	prefix_from_addr(&p, AF_UNIX, v6);
	assert_int_equal(p.family, 0);
	assert_int_equal(p.len, 0);
}

static void test_family_bits_strerror(void **state)
{
	(void)state;
	assert_int_equal(prefix_family_bits(AF_INET), 32);
	assert_int_equal(prefix_family_bits(AF_INET6), 128);
	assert_int_equal(prefix_family_bits(AF_UNIX), 0);
	assert_int_equal(prefix_family_bits(0), 0);

	const int codes[] = { PREFIX_E_SYNTAX, PREFIX_E_LENGTH, PREFIX_E_HOSTBITS };
	for (size_t i = 0; i < 3; i++) {
		assert_non_null(prefix_strerror(codes[i]));
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(prefix_strerror(codes[i]), prefix_strerror(codes[j]));
	}
	assert_string_equal(prefix_strerror(-EEXIST), strerror(EEXIST));
	assert_string_equal(prefix_strerror(-ENOMEM), strerror(ENOMEM));
	assert_string_equal(prefix_strerror(-5000), "unknown error");
	assert_string_equal(prefix_strerror(0), "success");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_table),
		cmocka_unit_test(test_parse_addr_table),
		cmocka_unit_test(test_parse_null),
		cmocka_unit_test(test_format_sizes),
		cmocka_unit_test(test_mask_table),
		cmocka_unit_test(test_contains_equal_table),
		cmocka_unit_test(test_from_addr),
		cmocka_unit_test(test_family_bits_strerror),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
