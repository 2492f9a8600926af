/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target: the etcd client's answer parsers. Input: one byte, then an
 * answer. Byte 0 even: the rest is a range answer (etcd_parse_range). Odd:
 * the rest is a watch stream, fed once whole and once in pieces of
 * (byte 0 >> 1) + 1 bytes: both must see the same messages and end the same;
 * then both again with small limits (values over 64 bytes left out, messages
 * over 4 KiB too large), so the corpus reaches the string cut, the message
 * cap and fragments put together. The corpus holds etcd's own answers and
 * what anyone may put in etcd: keys with NUL bytes, unknown plan keys,
 * values too large, fragments.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "etcd/etcd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What a parser's kvs must be, whatever the input: abort() otherwise (release builds define NDEBUG).
 * A kv is text with a value, or marked bad with no value (only to be named). */
static void check_kv(const struct etcd_kv *kv)
{
	if (kv->key == NULL || kv->value == NULL || kv->key[kv->keylen] != '\0' || kv->value[kv->vlen] != '\0' ||
	    kv->mod_revision < 0 || kv->create_revision < 0)
		abort();
	if (kv->bad == NULL ? strlen(kv->key) != kv->keylen : kv->vlen != 0)
		abort();
}

/* A running digest of every call of fn (FNV-1a), to compare two feeds. */
struct seen {
	uint64_t digest;
	size_t calls;
};

static void mix(struct seen *s, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++) {
		s->digest ^= b[i];
		s->digest *= 0x100000001b3ULL;
	}
}

static int on_watch(const struct etcd_event *ev, size_t n, int64_t rev, uint64_t cluster, void *arg)
{
	struct seen *s = arg;
	if ((ev == NULL) != (n == 0) || rev < 0)
		abort();
	s->calls++;
	mix(s, &n, sizeof(n));
	mix(s, &rev, sizeof(rev));
	mix(s, &cluster, sizeof(cluster));
	for (size_t i = 0; i < n; i++) {
		check_kv(&ev[i].kv);
		mix(s, &ev[i].del, sizeof(ev[i].del));
		mix(s, ev[i].kv.bad ? ev[i].kv.bad : "", ev[i].kv.bad ? strlen(ev[i].kv.bad) : 0);
		mix(s, ev[i].kv.key, ev[i].kv.keylen);
		mix(s, ev[i].kv.value, ev[i].kv.vlen);
		mix(s, &ev[i].kv.mod_revision, sizeof(ev[i].kv.mod_revision));
	}
	return 0;
}

static int feed(const char *in, size_t len, size_t piece, bool small, struct seen *s, int64_t *compacted,
                bool *created)
{
	struct etcd_watch_parser *p = etcd_watch_parser_new(on_watch, s);
	if (p == NULL)
		return ETCD_E_NOMEM;
	if (small)
		etcd_watch_parser_limits(p, 64, 4096);
	int rc = 0;
	for (size_t off = 0; off < len && rc == 0; off += piece)
		rc = etcd_watch_parser_feed(p, in + off, len - off < piece ? len - off : piece);
	if (rc != 0 && etcd_watch_parser_feed(p, "{}", 2) != rc) /* over is over */
		abort();
	*compacted = etcd_watch_parser_compacted(p);
	*created = etcd_watch_parser_created(p);
	if ((rc == ETCD_E_COMPACTED) != (*compacted > 0))
		abort();
	etcd_watch_parser_free(p);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const char *in = (const char *)data + 1;
	size_t len = size - 1;
	if ((data[0] & 1) == 0) {
		struct etcd_range r;
		int rc = etcd_parse_range(in, len, &r);
		if (rc != 0) {
			if (r.n != 0 || r.kvs != NULL)
				abort();
			return 0;
		}
		if (r.revision < 0 || (r.n > 0 && r.kvs == NULL))
			abort();
		for (size_t i = 0; i < r.n; i++)
			check_kv(&r.kvs[i]);
		etcd_range_free(&r);
		return 0;
	}
	for (int small = 0; small <= 1; small++) {
		struct seen whole = { 0xcbf29ce484222325ULL, 0 }, pieces = whole;
		int64_t c1, c2;
		bool cr1, cr2;
		int rc1 = feed(in, len, len ? len : 1, small, &whole, &c1, &cr1);
		int rc2 = feed(in, len, (size_t)(data[0] >> 1) + 1, small, &pieces, &c2, &cr2);
		if (rc1 == ETCD_E_NOMEM || rc2 == ETCD_E_NOMEM)
			continue;
		if (rc1 != rc2 || c1 != c2 || cr1 != cr2 || whole.calls != pieces.calls || whole.digest != pieces.digest)
			abort();
	}
	return 0;
}
