/* SPDX-License-Identifier: BSD-3-Clause */
/* Domain names in uncompressed wire form: from and to text, checks, case, comparison, zones. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/**
 * Text ("www.example.com." or without the final dot; "." is the root) to
 * wire form. Escapes: "\." "\\" and "\DDD" (decimal byte).
 * @return wire length, -EINVAL (empty label, label > 63, name > 255, bad
 *         escape, empty text), or -ENOSPC.
 */
int wire_name_from_text(const char *text, uint8_t *out, size_t cap);

/**
 * Wire form to text with the final dot ("." for the root); '.', '\' and
 * bytes outside 0x21..0x7e are escaped as in wire_name_from_text.
 * @return text length (without the NUL written after it), -EINVAL (not a
 *         valid uncompressed name of exactly len bytes), or -ENOSPC.
 */
int wire_name_to_text(const uint8_t *name, size_t len, char *out, size_t cap);

/** 0 when name is a valid uncompressed wire name of exactly len bytes, else -EINVAL. */
int wire_name_check(const uint8_t *name, size_t len);

/** Lower-case (ASCII) len bytes of a wire name into out (may equal name). */
void wire_name_lower(const uint8_t *name, size_t len, uint8_t *out);

/** Case-insensitive equality of two valid wire names. */
bool wire_name_equal(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen);

/**
 * Offset of the parent name inside name (skip the first label): the parent
 * is name + ret, len - ret bytes.
 * @return the offset, or -EINVAL for the root or an invalid name.
 */
int wire_name_parent(const uint8_t *name, size_t len);

/** Number of labels without the root ("." → 0, "a.b." → 2), or -EINVAL. */
int wire_name_labels(const uint8_t *name, size_t len);

/** True when name equals zone or lies below it (case-insensitive; both valid). */
bool wire_name_in_zone(const uint8_t *name, size_t len, const uint8_t *zone, size_t zone_len);
