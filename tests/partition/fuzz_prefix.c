/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: prefix text parsing, and format/parse round trips of what it accepts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "partition/prefix.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A parsed prefix must be well formed, print canonically, and parse back to itself. */
static void check_round_trip(const struct prefix *p)
{
	unsigned bits = prefix_family_bits(p->family);
	if (bits == 0 || p->len > bits)
		abort();
	struct prefix m = *p;
	prefix_mask(&m);
	if (memcmp(m.addr, p->addr, sizeof(p->addr)) != 0)
		abort();

	char buf[PREFIX_STRLEN];
	int n = prefix_format(p, buf, sizeof(buf));
	if (n <= 0 || (size_t)n >= sizeof(buf) || strlen(buf) != (size_t)n)
		abort();
	struct prefix q;
	if (prefix_parse(buf, &q) != 0 || !prefix_equal(p, &q) || memcmp(p, &q, sizeof(q)) != 0)
		abort();
	/* Canonical text is a fixed point. */
	char again[PREFIX_STRLEN];
	if (prefix_format(&q, again, sizeof(again)) != n || strcmp(buf, again) != 0)
		abort();
	if (!prefix_contains(p, &q) || !prefix_contains(&q, p))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (text == NULL)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';

	struct prefix p;
	int rc = prefix_parse(text, &p);
	if (rc == 0 || rc == PREFIX_E_HOSTBITS)
		check_round_trip(&p);
	else if (rc != PREFIX_E_SYNTAX && rc != PREFIX_E_LENGTH)
		abort();

	rc = prefix_parse_addr(text, &p);
	if (rc == 0) {
		if (p.len != prefix_family_bits(p.family))
			abort();
		check_round_trip(&p);
		/* An address is also a valid prefix, the same host prefix. */
		struct prefix q;
		if (prefix_parse(text, &q) != 0 || !prefix_equal(&p, &q))
			abort();
	} else if (rc != PREFIX_E_SYNTAX) {
		abort();
	}
	free(text);
	return 0;
}
