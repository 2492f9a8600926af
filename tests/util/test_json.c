/* SPDX-License-Identifier: BSD-3-Clause */
/* util/json.h: the one JSON string writer; escapes, control characters, ill-formed UTF-8, DNS names' odd bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"

/* json_string_len(s, len) into a string the caller frees. */
static char *written(const char *s, size_t len)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	assert_non_null(f);
	if (s == NULL && len == (size_t)-1)
		json_string(f, NULL);
	else
		json_string_len(f, s, len);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static void expect(const char *in, size_t len, const char *want)
{
	char *got = written(in, len);
	assert_string_equal(got, want);
	free(got);
}

#define EXPECT(in, want) expect((in), sizeof(in) - 1, (want))

static void test_plain_and_null(void **state)
{
	(void)state;
	EXPECT("", "\"\"");
	EXPECT("www.example.com.", "\"www.example.com.\"");
	expect(NULL, (size_t)-1, "null");
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	json_string(f, "nanjing");
	fclose(f);
	assert_string_equal(buf, "\"nanjing\"");
	free(buf);
}

static void test_quotes_backslash(void **state)
{
	(void)state;
	EXPECT("a\"b", "\"a\\\"b\"");
	EXPECT("a\\b", "\"a\\\\b\"");
	EXPECT("\"\\\"", "\"\\\"\\\\\\\"\"");
	/* a DNS name in presentation form, as wire_name_to_text writes a label with '"' or '.' in it */
	EXPECT("a\\\".b\\.c.example.", "\"a\\\\\\\".b\\\\.c.example.\"");
	EXPECT("x\\034y\\000.test.", "\"x\\\\034y\\\\000.test.\"");
}

static void test_control_chars(void **state)
{
	(void)state;
	EXPECT("nl\n tab\t cr\r bell\x01 esc\x1b del\x7f", "\"nl\\u000a tab\\u0009 cr\\u000d bell\\u0001 esc\\u001b del\\u007f\"");
	expect("a\0b", 3, "\"a\\u0000b\"");
	/* C1 controls, well-formed UTF-8, still escaped; U+00A0 is not a control */
	EXPECT("\xc2\x80 \xc2\x9b \xc2\x9f \xc2\xa0", "\"\\u0080 \\u009b \\u009f \xc2\xa0\"");
}

static void test_utf8(void **state)
{
	(void)state;
	/* well-formed, at the edges of each length */
	EXPECT("\xc2\xa9 \xe0\xa0\x80 \xed\x9f\xbf \xef\xbf\xbf \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf",
	       "\"\xc2\xa9 \xe0\xa0\x80 \xed\x9f\xbf \xef\xbf\xbf \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf\"");
	/* lone continuation, overlongs, surrogate, past U+10FFFF, bytes never used */
	EXPECT("\x80", "\"\\ufffd\"");
	EXPECT("\xc0\xaf", "\"\\ufffd\\ufffd\"");
	EXPECT("\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\"");
	EXPECT("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");
	EXPECT("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
	EXPECT("\xf5\xff\xfe", "\"\\ufffd\\ufffd\\ufffd\"");
	/* a sequence cut short by the end, or by a NUL inside a counted string */
	EXPECT("ok\xe2\x82", "\"ok\\ufffd\\ufffd\"");
	expect("\xe2\x82\0\xac", 4, "\"\\ufffd\\ufffd\\u0000\\ufffd\"");
	/* the bytes after a bad lead are read again: "\xc3(" keeps its '(' */
	EXPECT("\xc3(", "\"\\ufffd(\"");
}

/* A strict reader of one JSON string (RFC 8259 §7) that also checks UTF-8: true when s is one. */
static bool valid_json_string(const unsigned char *s, size_t n)
{
	if (n < 2 || s[0] != '"' || s[n - 1] != '"')
		return false;
	for (size_t i = 1; i < n - 1;) {
		unsigned char c = s[i];
		if (c < 0x20 || c == 0x7f || c == '"')
			return false;
		if (c == '\\') {
			if (i + 1 >= n - 1)
				return false;
			char e = (char)s[i + 1];
			if (e == 'u') {
				if (i + 6 > n - 1)
					return false;
				for (size_t k = 2; k < 6; k++)
					if (strchr("0123456789abcdef", s[i + k]) == NULL)
						return false;
				i += 6;
			} else if (strchr("\"\\/bfnrt", e) != NULL && e != '\0') {
				i += 2;
			} else {
				return false;
			}
			continue;
		}
		size_t len = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
		if (len == 0 || i + len > n - 1)
			return false;
		uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1fu : len == 3 ? c & 0x0fu : c & 0x07u;
		for (size_t k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3fu);
		}
		static const uint32_t min[] = { 0, 0, 0x80, 0x800, 0x10000 };
		if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp < 0xa0))
			return false;
		i += len;
	}
	return true;
}

static void test_random_bytes_stay_valid(void **state)
{
	(void)state;
	srand(7);
	char in[64];
	for (int round = 0; round < 20000; round++) {
		size_t n = (size_t)(rand() % (int)sizeof(in));
		for (size_t i = 0; i < n; i++)
			in[i] = (char)(rand() % 256);
		char *buf = NULL;
		size_t size = 0;
		FILE *f = open_memstream(&buf, &size);
		json_string_len(f, in, n);
		fclose(f);
		if (!valid_json_string((const unsigned char *)buf, size))
			fail_msg("round %d: not a valid JSON string: %s", round, buf);
		free(buf);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_and_null),
		cmocka_unit_test(test_quotes_backslash),
		cmocka_unit_test(test_control_chars),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_random_bytes_stay_valid),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
