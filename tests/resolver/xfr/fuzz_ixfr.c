/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target `ixfr`: a zone transfer's reply for rpz.test., message by
 * message, through rpz_ixfr (up to date, incremental, whole zone, or
 * refused) and, for an incremental one, applied to a copy. Input:
 *   byte 0       bit 0: we have a copy (an IXFR was asked), else an AXFR
 *   bytes 1..4   the copy's serial, big-endian
 *   bytes 5..6   length L of the copy's text, big-endian; then L bytes of it
 *   then         messages, each a 2-byte big-endian length and the message
 *                (as over TCP); one that ldns cannot parse ends the input
 * Seeds (tests/resolver/xfr/corpus/ixfr), written by hand in the shapes knotd
 * and xfrprimary.c send: up to date, older, differences across two
 * messages, a deletion that does not apply, an AXFR-style answer, an AXFR,
 * a broken chain.
 */
#include <ldns/ldns.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "resolver/base/log.h"
#include "resolver/xfr/rpz_ixfr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *devnull;
	if (devnull == NULL) {
		log_set_level(LOG_LEVEL_ERR);
		devnull = fopen("/dev/null", "w");
		if (devnull == NULL)
			abort();
	}
	if (size < 7 || size > 1 << 20)
		return 0;
	bool have = data[0] & 1;
	uint32_t serial = (uint32_t)data[1] << 24 | (uint32_t)data[2] << 16 | (uint32_t)data[3] << 8 | data[4];
	size_t blen = (size_t)data[5] << 8 | data[6], pos = 7;
	if (pos + blen > size)
		return 0;
	const uint8_t *base = data + pos;
	pos += blen;
	struct rpz_ixfr *x = rpz_ixfr_new("rpz.test.", have, serial, devnull);
	if (x == NULL)
		return 0;
	enum rpz_ixfr_state st = RPZ_IXFR_MORE;
	while (st == RPZ_IXFR_MORE && pos + 2 <= size) {
		size_t n = (size_t)data[pos] << 8 | data[pos + 1];
		pos += 2;
		if (pos + n > size)
			break;
		ldns_pkt *p = NULL;
		if (ldns_wire2pkt(&p, data + pos, n) != LDNS_STATUS_OK)
			break;
		pos += n;
		st = rpz_ixfr_message(x, ldns_pkt_answer(p));
		ldns_pkt_free(p);
	}
	if (st == RPZ_IXFR_BAD && rpz_ixfr_why(x)[0] == '\0')
		abort(); /* a refusal always says why */
	if (st == RPZ_IXFR_DONE && rpz_ixfr_kind(x) == RPZ_IXFR_INCREMENTAL) {
		FILE *b = fmemopen((void *)base, blen ? blen : 1, "r");
		if (b != NULL) {
			if (rpz_ixfr_apply(x, b, devnull) != 0 && rpz_ixfr_why(x)[0] == '\0')
				abort();
			fclose(b);
		}
	}
	rpz_ixfr_free(x);
	return 0;
}
