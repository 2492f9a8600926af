/* SPDX-License-Identifier: BSD-3-Clause */
/* JSON strings: see json.h. */
#include "util/json.h"

#include <string.h>

/* Length of the well-formed UTF-8 sequence at s[0..n) (RFC 3629), or 0 when ill-formed or cut short. */
static size_t utf8_seq_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len;
	unsigned char lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0; /* no overlongs */
		else if (c == 0xed)
			hi = 0x9f; /* no surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f; /* nothing past U+10FFFF */
	} else
		return 0;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

void json_string_len(FILE *out, const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str, *end = s + len;
	fputc('"', out);
	while (s < end) {
		unsigned char c = *s;
		if (c == '"' || c == '\\') {
			fputc('\\', out);
			fputc(c, out);
			s++;
		} else if (c < 0x20 || c == 0x7f) {
			fprintf(out, "\\u%04x", c);
			s++;
		} else if (c < 0x80) {
			fputc(c, out);
			s++;
		} else {
			size_t n = utf8_seq_len(s, (size_t)(end - s));
			if (n == 0) {
				fputs("\\ufffd", out);
				s++;
			} else if (n == 2 && c == 0xc2 && s[1] < 0xa0) {
				fprintf(out, "\\u%04x", s[1]); /* C1 controls: a terminal may act on U+009B */
				s += 2;
			} else {
				fwrite(s, 1, n, out);
				s += n;
			}
		}
	}
	fputc('"', out);
}

void json_string(FILE *out, const char *s)
{
	if (s == NULL)
		fputs("null", out);
	else
		json_string_len(out, s, strlen(s));
}
