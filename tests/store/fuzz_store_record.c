/* SPDX-License-Identifier: BSD-3-Clause */
/* Fuzz target: store record decoding, domains, failovers and staged plans (input: u8 key length, key, record value). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || (size_t)data[0] + 1 > size)
		return 0;
	size_t keylen = data[0];
	const uint8_t *val = data + 1 + keylen;
	size_t len = size - 1 - keylen;
	/* the same bytes as a failover record: a decode is an exact round trip */
	struct store_standby b;
	if (store_standby_decode(data + 1, keylen, val, len, &b) == 0) {
		uint8_t sb[256];
		int m = store_standby_encode(&b, sb, sizeof(sb));
		if (m < 0 || (size_t)m != len || memcmp(sb, val, len) != 0 || strlen(b.partition) != keylen)
			abort();
	}
	/* as a plan record (the key is "next" or "active", not part of it): an exact round trip too */
	struct store_plan p;
	if (store_plan_decode(val, len, &p) == 0) {
		size_t m = 0;
		uint8_t *pb = store_plan_encode(&p, &m);
		if (pb == NULL || m != len || memcmp(pb, val, len) != 0 || strlen(p.text) > p.len)
			abort();
		free(pb);
		store_plan_clear(&p);
	}
	struct store_domain d;
	if (store_record_decode(data + 1, keylen, val, len, &d) != 0)
		return 0;
	/* Whatever decodes is storable and encodes back to the same bytes: a
	 * format-2 record exactly; a format-1 one as the format-2 record of the
	 * same domain with who/when unknown (what a migration writes). */
	uint8_t buf[STORE_RECORD_MAX], again[STORE_RECORD_MAX];
	/* abort(), not assert(): release builds define NDEBUG. */
	if (store_domain_check(&d) != 0)
		abort();
	int n = store_record_encode(&d, buf, sizeof(buf));
	if (n < 0 || buf[0] != 2)
		abort();
	if (val[0] == 2 && ((size_t)n != len || memcmp(buf, val, len) != 0))
		abort();
	if (val[0] == 1) {
		/* 18 bytes more: the two times and two empty name lengths */
		if ((size_t)n != len + 18 || d.added != 0 || d.changed != 0 || d.added_by[0] != '\0' ||
		    d.changed_by[0] != '\0')
			abort();
		struct store_domain d2;
		if (store_record_decode(data + 1, keylen, buf, (size_t)n, &d2) != 0 ||
		    store_record_encode(&d2, again, sizeof(again)) != n || memcmp(again, buf, (size_t)n) != 0)
			abort();
	}
	if (strlen(d.name) != keylen || memcmp(d.name, data + 1, keylen) != 0)
		abort();
	return 0;
}
