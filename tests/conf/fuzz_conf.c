/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: the YAML config loader on arbitrary text (conf_load_string). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* libyaml gets slow on huge inputs; the loader itself is linear. */
#define FUZZ_MAX_INPUT (64 * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *devnull;
	if (devnull == NULL) {
		devnull = fopen("/dev/null", "w");
		if (devnull == NULL)
			abort();
	}
	if (size > FUZZ_MAX_INPUT)
		return 0;
	struct conf *c = NULL;
	unsigned nerrors = 0;
	int rc = conf_load_string((const char *)data, size, "fuzz.yaml", devnull, &c, &nerrors);
	/* The contract: success iff a conf came back, and errors were counted on failure. */
	if ((rc == 0) != (c != NULL))
		abort();
	if (rc == 0 && nerrors != 0)
		abort();
	if ((rc == CONF_E_INVALID || rc == CONF_E_YAML) && nerrors == 0)
		abort();
	if (c != NULL) {
		/* Touch the result the way the daemon would. */
		if (c->server.threads == 0 || c->server.nlisten == 0 ||
		    c->partitions.table == NULL || c->partitions.mapping == NULL)
			abort();
		size_t n = ptable_size(c->partitions.table);
		if (mapping_size(c->partitions.mapping) != n)
			abort();
		for (size_t id = 1; id <= n; id++) {
			struct ecs e;
			if (ptable_name(c->partitions.table, (unsigned)id) == NULL ||
			    mapping_ecs(c->partitions.mapping, (unsigned)id, AF_INET, &e) != 0)
				abort();
		}
		conf_free(c);
	}
	return 0;
}
