/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target `cache_snap`: the cache snapshot loader (cache_snap.c)
 * on any bytes, as they are and with the trailer's checksum made right (so
 * the fuzzer reaches the parse behind it). A load either refuses the file
 * with nothing inserted or inserts entries the cache's readers can take:
 * each one is looked up and its value read back as a hit would read it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"
#include "resolver/cache/cache.h"
#include "resolver/cache/cache_snap.h"
#include "resolver/view/route.h"
#include "wire/answer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)          \
	do {                     \
		if (!(cond))         \
			abort();         \
	} while (0)

static const char PLAN[] = "partitions:\n"
                           "  list:\n"
                           "    - { name: nanjing, mapped: 198.51.100.1, prefixes: [ 127.0.1.0/24, 198.51.100.0/26 ] }\n"
                           "    - { name: suzhou, mapped: 198.51.100.65, prefixes: [ 127.0.2.0/24, 198.51.100.64/26 ] }\n";

static struct conf *conf_once(void)
{
	static struct conf *c;
	if (c == NULL) {
		unsigned nerr = 0;
		CHECK(conf_load_string(PLAN, sizeof(PLAN) - 1, "fuzz", NULL, &c, &nerr) == 0);
	}
	return c;
}

/* Every loaded entry, read as a hit reads it. */
static int check_entry(const struct cache_walk_entry *e, void *arg)
{
	(void)arg;
	CHECK(e->klen >= ROUTE_KEY_HDR);
	struct route_value v;
	CHECK(route_value_parse(e->val, e->vlen, &v) == 0);
	if (!v.failure) {
		struct wire_blob_info info;
		CHECK(wire_blob_info(v.blob, v.blob_len, &info) == 0);
		CHECK(wire_blob_check(v.blob, v.blob_len, e->key + ROUTE_KEY_HDR, e->klen - ROUTE_KEY_HDR,
		                      (uint16_t)((e->key[2] << 8) | e->key[3]),
		                      (uint16_t)((e->key[4] << 8) | e->key[5])) == 0);
	}
	return 0;
}

static void load(const uint8_t *data, size_t size)
{
	struct cache *c = cache_new(1u << 20, 4);
	CHECK(c != NULL);
	struct cache_snap_result r;
	int rc = cache_snap_load_buf(c, conf_once(), NULL, data, size, 1800000000, 1000, &r);
	struct cache_stats st;
	cache_get_stats(c, &st);
	if (rc != 0)
		CHECK(r.file_refused && st.entries == 0);
	else
		CHECK(st.entries == r.entries);
	CHECK(cache_walk(c, 1000, check_entry, NULL) == 0);
	cache_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	load(data, size);
	if (size >= 8) {
		uint8_t *copy = malloc(size);
		CHECK(copy != NULL);
		memcpy(copy, data, size);
		uint64_t s = cache_snap_checksum(copy, size - 8);
		for (int i = 0; i < 8; i++)
			copy[size - 8 + i] = (uint8_t)(s >> (56 - 8 * i));
		load(copy, size);
		free(copy);
	}
	return 0;
}
