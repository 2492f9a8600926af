/* SPDX-License-Identifier: BSD-3-Clause */
/* The one JSON string writer: every JSON the daemon and the tools print quotes its text through it. */
#pragma once

#include <stddef.h>
#include <stdio.h>

/**
 * Write s as a JSON string (RFC 8259), quotes included, or null for NULL.
 *
 * The text is whatever an operator, a store or a DNS name holds, so nothing
 * about it is assumed: '"' and '\\' are escaped; control characters (C0,
 * DEL and the C1 range U+0080..U+009F) are written as \u00XX, so neither a
 * parser nor a terminal showing the output sees them raw; each byte that
 * does not start a well-formed UTF-8 sequence (RFC 3629: no overlongs, no
 * surrogates, nothing past U+10FFFF) becomes U+FFFD. The output is valid
 * JSON and valid UTF-8 whatever s holds.
 */
void json_string(FILE *out, const char *s);

/** json_string() of len bytes, which may hold NUL (written as \u0000); s may be NULL only when len is 0. */
void json_string_len(FILE *out, const char *s, size_t len);
