/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to conf/: the loader's state, shared by every step of a load; types only. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "conf/conf.h"
#include "conf/ytree.h"

/* Longest key path kept for messages ("partitions.list[12].prefixes[3]"). */
#define LOADER_KEY_MAX 256

/* One partitions.list item as parsed, before the table is built. */
struct conf_part {
	char *name;
	char *label, *country, *region, *city, *postal, *isp; /* NULL when absent */
	char *standby;         /* partition name or address; NULL when absent */
	const struct ynode *standby_node;
	unsigned asn;          /* 0 when absent */
	struct prefix mapped;  /* family 0 when absent or bad */
	struct prefix mapped6; /* family 0 when absent or bad */
	size_t nprefixes;
	struct prefix *prefixes; /* family 0 for an item that did not parse */
	struct conf_local_list local; /* moved to conf.partitions.local when the plan is built */
	const struct ynode *node, *name_node, *mapped_node, *mapped6_node, *prefixes_node;
};

/* What the schema fills: the result plus what only the loader needs. */
struct conf_state {
	struct conf conf;
	char *unmatched;
	char *include;
	const struct ynode *unmatched_node, *include_node, *list_node;
	unsigned include_serial;  /* partitions.serial given in the include file */
	const struct ynode *serial_node, *include_serial_node;
	bool include_pending; /* include named without list: the loader reads it next */
	size_t nparts;
	struct conf_part *parts;
};

/* One load in progress: the schema state, the parsed files and the report context. */
struct loader {
	struct ydiag diag;
	struct conf_state st;
	const char *name;     /* the main file as shown in messages */
	char *dir;            /* directory of the main file for includes, NULL = cwd */
	struct ydoc docs[2];  /* main, include */
	unsigned ndocs;
	bool yaml_failed;     /* some file was not well-formed */
	bool include_failed;  /* the partitions include could not be read */
	bool oom;
	/* conf_load_plan: the text read instead of the partitions include file */
	const char *plan_text;
	size_t plan_len;
	const char *plan_name;
	char key[LOADER_KEY_MAX];
	size_t keylen;
};
