/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target `upstream`: an upstream message through the record iterator, the EDNS iteration step and the chain check. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "resolver/pool/edns_iter.h"
#include "resolver/view/route.h"
#include "wire/answer.h"
#include "wire/names.h"
#include "wire/parse.h"
#include "wire/upstream.h"
#include "wire/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                  \
	do {                             \
		if (!(cond))                 \
			abort();                 \
	} while (0)

static const uint8_t qname[] = "\5video\3cdn\4test";     /* video.cdn.test. (with the NUL) */
static const uint8_t zone[] = "\4test";

/* Every record: in bounds, names valid; RDATA names read where the type has one. */
static void walk(const uint8_t *data, size_t size)
{
	struct wire_iter it;
	if (wire_iter_init(&it, data, size) != 0)
		return;
	struct wire_rr rr;
	int k, n = 0;
	while ((k = wire_iter_next(&it, &rr)) == 1) {
		CHECK(rr.rdata + rr.rdlen <= size);
		CHECK(wire_name_check(rr.owner, rr.owner_len) == 0);
		if (rr.type == WIRE_TYPE_CNAME || rr.type == WIRE_TYPE_NS) {
			uint8_t t[WIRE_MAX_NAME];
			size_t tl;
			if (wire_rdata_name(&it, &rr, 0, t, &tl) == 0)
				CHECK(wire_name_check(t, tl) == 0);
		}
		CHECK(++n <= 3 * 65535);
	}
	CHECK(k == 0 || k == WIRE_E_FORMERR);
	for (unsigned hops = 1; hops <= 3; hops++) {
		uint8_t *out = NULL;
		size_t out_len = 0;
		int rc = wire_cname_prefix(data, size, hops, &out, &out_len);
		CHECK(rc == 0 || rc == WIRE_E_FORMERR || rc == -ENOMEM);
		if (rc == 0) {
			struct wire_iter again;
			CHECK(wire_iter_init(&again, out, out_len) == 0);
			while ((k = wire_iter_next(&again, &rr)) == 1)
				CHECK(rr.type == WIRE_TYPE_CNAME);
			CHECK(k == 0);
		}
		free(out);
	}
}

/* The message as an answer to video.cdn.test A from the servers of test. */
static void iterate(const uint8_t *data, size_t size)
{
	uint16_t id = size >= 2 ? (uint16_t)((data[0] << 8) | data[1]) : 0;
	struct edns_hop hop = { .name = qname, .name_len = sizeof(qname), .zone = zone, .zone_len = sizeof(zone),
	                        .id = id, .qtype = WIRE_TYPE_A, .qclass = WIRE_CLASS_IN };
	struct edns_verdict v;
	edns_iter_response(&hop, data, size, &v);
	if (v.step == EDNS_STEP_CNAME)
		CHECK(wire_name_check(v.target, v.target_len) == 0);
	if (v.step == EDNS_STEP_CNAME || v.step == EDNS_STEP_DONE) {
		/* the scrubbed answer: well-formed, no AD, nothing outside the zone in the answer */
		CHECK(v.msg != NULL && (v.msg[3] & 0x20) == 0);
		struct wire_iter it;
		struct wire_rr rr;
		CHECK(wire_iter_init(&it, v.msg, v.msg_len) == 0);
		int k;
		while ((k = wire_iter_next(&it, &rr)) == 1) {
			CHECK(rr.section != WIRE_SECTION_ADDITIONAL);
			if (rr.section == WIRE_SECTION_ANSWER)
				CHECK(wire_name_in_zone(rr.owner, rr.owner_len, zone, sizeof(zone)));
		}
		CHECK(k == 0);
		uint8_t *blob;
		size_t blob_len;
		uint32_t ttl;
		if (wire_answer_prepare(v.msg, v.msg_len, NULL, &blob, &blob_len, &ttl) == 0)
			free(blob);
		/* spliced behind itself, as a CNAME hop would be */
		uint8_t *sp;
		size_t sp_len;
		if (wire_splice(v.msg, v.msg_len, v.msg, v.msg_len, &sp, &sp_len) == 0) {
			CHECK(wire_iter_init(&it, sp, sp_len) == 0);
			free(sp);
		}
	}
	edns_verdict_clear(&v);
	if (v.step == EDNS_STEP_REFERRAL) {
		CHECK(wire_name_in_zone(v.cut, v.cut_len, zone, sizeof(zone)));
		struct edns_servers s;
		memset(&s, 0, sizeof(s));
		edns_servers_take_ns(&s, data, size, WIRE_SECTION_AUTHORITY, v.cut, v.cut_len);
		edns_servers_take_addrs(&s, data, size, WIRE_SECTION_ADDITIONAL, false, zone, sizeof(zone));
		CHECK(s.nns <= EDNS_MAX_NSNAMES && s.naddr <= EDNS_MAX_SERVERS);
	}
	uint8_t z[WIRE_MAX_NAME];
	size_t zl;
	if (edns_iter_soa(data, size, qname, sizeof(qname), qname, sizeof(qname), z, &zl) == EDNS_CUT_FOUND)
		CHECK(wire_name_in_zone(qname, sizeof(qname), z, zl));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	walk(data, size);
	iterate(data, size);
	return 0;
}
