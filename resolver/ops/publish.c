/* SPDX-License-Identifier: BSD-3-Clause */
/* server.http: see publish.h. */
#include "resolver/ops/publish.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "mapping/export.h"

int publish_page(const struct conf *c, time_t live_since, const char *path, FILE *out, struct http_page *page)
{
	static const struct {
		const char *path;
		enum mapping_format fmt;
		const char *type;
	} pages[] = {
		{ "/mapping.csv", MAPPING_FORMAT_CSV, "text/csv; charset=utf-8" },
		{ "/mapping.json", MAPPING_FORMAT_JSON, "application/json" },
		{ "/geofeed.csv", MAPPING_FORMAT_GEOFEED, "text/csv; charset=utf-8" },
	};
	for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
		if (strcmp(path, pages[i].path) != 0)
			continue;
		/* the serial a CDN orders tables by; without one, the digest tells change only */
		char serial[24];
		if (c->partitions.serial != 0)
			snprintf(serial, sizeof(serial), "%u", c->partitions.serial);
		else
			snprintf(serial, sizeof(serial), "%016" PRIx64,
			         mapping_serial(c->partitions.mapping, c->partitions.table));
		page->type = pages[i].type;
		page->modified = live_since;
		/* an entity tag is scoped to its URL: the serial alone names the table in each format */
		snprintf(page->etag, sizeof(page->etag), "%s", serial);
		return mapping_export_serial(c->partitions.mapping, c->partitions.table, pages[i].fmt, serial, out) != 0
		           ? -EIO
		           : 0;
	}
	return -ENOENT;
}

int publish_next_page(const struct conf *next, time_t staged, time_t effective, const char *path, FILE *out,
                      struct http_page *page)
{
	if (next == NULL)
		return -ENOENT;
	int rc = publish_page(next, staged, path, out, page);
	if (rc != 0)
		return rc;
	page->header = PUBLISH_EFFECTIVE;
	struct tm tm;
	if (effective == 0 || gmtime_r(&effective, &tm) == NULL ||
	    strftime(page->value, sizeof(page->value), "%a, %d %b %Y %H:%M:%S GMT", &tm) == 0)
		snprintf(page->value, sizeof(page->value), "on activation");
	return 0;
}
