/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target `val`: signed-looking answers through the DNSSEC
 * validator (resolver/pool/val.c). Input: one byte of lookup verdicts (bits 0-1
 * the DNSKEY lookups', bits 2-3 the SOA lookups'), two bytes of length and
 * that many bytes of "DNSKEY answer" (handed to every secure DNSKEY need),
 * then the answer; qname and qtype are the answer's question. Seeds: the
 * messages tests/resolver/pool/test_val.c signs (PARTDNS_VAL_CORPUS=DIR).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "resolver/pool/val.h"
#include "wire/names.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The question's name and type, read without compression; 0 when there is none. */
static size_t question(const uint8_t *msg, size_t len, uint8_t *name, uint16_t *qtype)
{
	size_t pos = 12, out = 0;
	while (pos < len && out < WIRE_MAX_NAME) {
		uint8_t l = msg[pos];
		if (l > 63 || pos + 1 + l > len || out + 1 + l > WIRE_MAX_NAME)
			return 0;
		memcpy(name + out, msg + pos, 1u + l);
		out += 1u + l;
		pos += 1u + l;
		if (l == 0) {
			if (pos + 2 > len)
				return 0;
			*qtype = (uint16_t)(msg[pos] << 8 | msg[pos + 1]);
			return out;
		}
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 3)
		return 0;
	enum val_state key_state = (enum val_state)(data[0] & 3), soa_state = (enum val_state)((data[0] >> 2) & 3);
	size_t klen = (size_t)(data[1] << 8 | data[2]);
	if (3 + klen > size)
		return 0;
	const uint8_t *kans = data + 3, *msg = data + 3 + klen;
	size_t len = size - 3 - klen;
	uint8_t qname[WIRE_MAX_NAME];
	uint16_t qtype = 0;
	size_t qlen = question(msg, len, qname, &qtype);
	if (qlen == 0 || wire_name_check(qname, qlen) != 0)
		return 0;
	struct val_needs needs;
	if (val_needs(msg, len, qname, qlen, &needs) != 0)
		return 0;
	for (unsigned i = 0; i < needs.n; i++) {
		struct val_need *n = &needs.need[i];
		n->state = n->type == WIRE_TYPE_DNSKEY ? key_state : soa_state;
		if (n->type == WIRE_TYPE_DNSKEY) {
			n->answer = kans;
			n->answer_len = klen;
		}
	}
	struct val_outcome o;
	val_check(msg, len, qname, qlen, qtype, &needs, 1800000000, &o); /* inside the seeds' validity */
	if (o.state > VAL_INDETERMINATE)
		abort();
	if ((o.state == VAL_BOGUS || o.state == VAL_INDETERMINATE) && o.ede.text == NULL)
		abort(); /* every failure tells the client something */
	return 0;
}
