/* SPDX-License-Identifier: BSD-3-Clause */
/* Domain names in uncompressed wire form: from and to text, checks, case, comparison, zones. */
#include <errno.h>
#include <string.h>

#include "wire/names.h"
#include "wire/bytes.h"
#include "wire/wire.h"

int wire_name_check(const uint8_t *name, size_t len)
{
	if (name == NULL || len == 0 || len > WIRE_MAX_NAME)
		return -EINVAL;
	size_t i = 0;
	while (i < len && name[i] != 0) {
		if (name[i] > 63)
			return -EINVAL;
		i += (size_t)1 + name[i];
	}
	return (i == len - 1) ? 0 : -EINVAL;
}

void wire_name_lower(const uint8_t *name, size_t len, uint8_t *out)
{
	fold(name, out, len);
}

bool wire_name_equal(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	/* Length bytes are never letters, so a byte-wise comparison is label-exact. */
	return alen == blen && bytes_equal_ci(a, b, alen);
}

int wire_name_parent(const uint8_t *name, size_t len)
{
	if (wire_name_check(name, len) != 0 || name[0] == 0)
		return -EINVAL;
	return 1 + name[0];
}

int wire_name_labels(const uint8_t *name, size_t len)
{
	if (wire_name_check(name, len) != 0)
		return -EINVAL;
	int n = 0;
	for (size_t i = 0; name[i] != 0; i += (size_t)1 + name[i])
		n++;
	return n;
}

bool wire_name_in_zone(const uint8_t *name, size_t len, const uint8_t *zone, size_t zone_len)
{
	size_t i = 0;
	while (len - i > zone_len && i < len && name[i] != 0)
		i += (size_t)1 + name[i];
	return len - i == zone_len && bytes_equal_ci(name + i, zone, zone_len);
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

int wire_name_from_text(const char *text, uint8_t *out, size_t cap)
{
	if (text == NULL || text[0] == '\0')
		return -EINVAL;
	uint8_t buf[WIRE_MAX_NAME];
	size_t n = 0;
	const char *p = text;
	if (strcmp(text, ".") != 0) {
		while (*p != '\0') {
			size_t lpos = n++, llen = 0;
			while (*p != '\0' && *p != '.') {
				uint8_t c;
				if (*p == '\\') {
					p++;
					if (is_digit(p[0])) {
						if (!is_digit(p[1]) || !is_digit(p[2]))
							return -EINVAL;
						unsigned v = (unsigned)(p[0] - '0') * 100 + (unsigned)(p[1] - '0') * 10 +
							     (unsigned)(p[2] - '0');
						if (v > 255)
							return -EINVAL;
						c = (uint8_t)v;
						p += 3;
					} else if (*p == '\0') {
						return -EINVAL;
					} else {
						c = (uint8_t)*p++;
					}
				} else {
					c = (uint8_t)*p++;
				}
				/* Keep room for the root byte after this one. */
				if (llen == 63 || n + 2 > WIRE_MAX_NAME)
					return -EINVAL;
				buf[n++] = c;
				llen++;
			}
			if (llen == 0)
				return -EINVAL; /* "..", or a leading "." */
			buf[lpos] = (uint8_t)llen;
			if (*p == '.')
				p++;
		}
	}
	buf[n++] = 0;
	if (n > cap)
		return -ENOSPC;
	memcpy(out, buf, n);
	return (int)n;
}

int wire_name_to_text(const uint8_t *name, size_t len, char *out, size_t cap)
{
	if (wire_name_check(name, len) != 0)
		return -EINVAL;
	size_t o = 0;
	if (name[0] == 0) {
		if (cap < 2)
			return -ENOSPC;
		out[0] = '.';
		out[1] = '\0';
		return 1;
	}
	for (size_t i = 0; name[i] != 0; i += (size_t)1 + name[i]) {
		for (size_t j = 1; j <= name[i]; j++) {
			uint8_t c = name[i + j];
			bool plain = c >= 0x21 && c <= 0x7e && c != '.' && c != '\\';
			size_t tl = plain ? 1 : (c == '.' || c == '\\') ? 2 : 4;
			if (cap - o < tl + 1)
				return -ENOSPC;
			if (plain) {
				out[o] = (char)c;
			} else if (tl == 2) {
				out[o] = '\\';
				out[o + 1] = (char)c;
			} else {
				out[o] = '\\';
				out[o + 1] = (char)('0' + c / 100);
				out[o + 2] = (char)('0' + c / 10 % 10);
				out[o + 3] = (char)('0' + c % 10);
			}
			o += tl;
		}
		if (cap - o < 2)
			return -ENOSPC;
		out[o++] = '.';
	}
	out[o] = '\0';
	return (int)o;
}
