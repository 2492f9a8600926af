/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for ecs_parse: accepted input must re-encode to the same bytes. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mapping/ecs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct ecs e;
	if (ecs_parse(&e, data, len) != 0)
		return 0;
	/* Strict parsing means exactly one encoding per value. */
	if (ecs_size(&e) != len)
		abort();
	uint8_t buf[ECS_MAX_SIZE];
	int n = ecs_write(&e, buf, sizeof(buf));
	if (n < 0 || (size_t)n != len || memcmp(buf, data, len) != 0)
		abort();
	/* One byte short must be refused, not overrun. */
	if (ecs_write(&e, buf, len - 1) != -ENOSPC)
		abort();
	if (!ecs_match(&e, &e))
		abort();
	/* Prefix round trip keeps family, source and address; scope becomes 0. */
	struct prefix p;
	struct ecs back;
	ecs_to_prefix(&e, &p);
	if (ecs_from_prefix(&back, &p) != 0 || !ecs_match(&e, &back) || back.scope != 0)
		abort();
	return 0;
}
