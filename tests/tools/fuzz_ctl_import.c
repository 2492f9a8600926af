/* SPDX-License-Identifier: BSD-3-Clause */
/* Fuzz target: partdnsctl's import-line parser, and the export -> import round trip. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/ctl/ctl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same_domain(const struct store_domain *a, const struct store_domain *b)
{
	if (strcmp(a->name, b->name) != 0 || a->subtree != b->subtree || a->policy != b->policy ||
	    a->nforward != b->nforward)
		return false;
	for (size_t i = 0; i < a->nforward; i++)
		if (strcmp(a->forward[i].text, b->forward[i].text) != 0)
			return false;
	/* the who/when of a '#@' comment, which export writes and import reads */
	return a->added == b->added && a->changed == b->changed &&
	       strcmp(a->added_by, b->added_by) == 0 && strcmp(a->changed_by, b->changed_by) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 8192)
		return 0;
	/* First byte: the config defaults the line is read against, and --force. */
	struct ctl_defaults def = {
		.policy = (data[0] & 1) ? CONF_POLICY_FORWARD : CONF_POLICY_ITERATE,
		.nforward = (data[0] & 2) ? 1 : 0,
		.force = (data[0] & 4) != 0,
	};
	char *line = malloc(size);
	if (line == NULL)
		return 0;
	memcpy(line, data + 1, size - 1);
	line[size - 1] = '\0';
	struct store_domain d, again;
	char err[512];
	int rc = ctl_domain_parse_line(line, &def, &d, err, sizeof(err));
	/* abort(), not assert(): release builds define NDEBUG. */
	if (rc < 0 && err[0] == '\0')
		abort(); /* an error always says why */
	if (rc == 1) {
		if (store_domain_check(&d) != 0)
			abort();
		char text[2048], meta[512];
		int len = ctl_domain_format_line(&d, text, sizeof(text));
		if (len < 0 || ctl_domain_format_meta(&d, meta, sizeof(meta)) < 0)
			abort();
		if (meta[0] != '\0')
			snprintf(text + len, sizeof(text) - (size_t)len, " %s", meta);
		if (ctl_domain_parse_line(text, &def, &again, err, sizeof(err)) != 1 ||
		    !same_domain(&d, &again))
			abort();
	}
	free(line);
	return 0;
}
