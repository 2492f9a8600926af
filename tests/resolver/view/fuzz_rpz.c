/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target `rpz`: arbitrary text as a response policy zone file
 * (rpz.example.), through ldns's zone-file reader and partdns' trigger and
 * action decoding and table building. Seeds: tests/resolver/view/corpus/rpz.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "resolver/base/log.h"
#include "resolver/view/rpz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int once;
	if (!once) {
		once = 1;
		log_set_level(LOG_LEVEL_ERR); /* skipped records are warnings: not printed per run */
	}
	if (size == 0 || size > 65536)
		return 0;
	FILE *f = fmemopen((void *)data, size, "r");
	if (f == NULL)
		return 0;
	long n = rpz_zone_check("rpz.example.", f);
	fclose(f);
	if (n < -1)
		abort();
	return 0;
}
