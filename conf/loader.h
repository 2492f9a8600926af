/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to conf/: loader state, the schema walk and the cross-checks. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf/conf.h"
#include "conf/ytree.h"

/* Longest key path kept for messages ("partitions.list[12].prefixes[3]"). */
#define LOADER_KEY_MAX 256

/* One partitions.list item as parsed, before the table is built. */
struct conf_part {
	char *name;
	char *label, *country, *region, *city, *postal; /* NULL when absent */
	struct prefix mapped;  /* family 0 when absent or bad */
	struct prefix mapped6; /* family 0 when absent or bad */
	size_t nprefixes;
	struct prefix *prefixes; /* family 0 for an item that did not parse */
	const struct ynode *node, *name_node, *mapped_node, *mapped6_node, *prefixes_node;
};

/* What the schema fills: the result plus what only the loader needs. */
struct conf_state {
	struct conf conf;
	char *unmatched;
	char *include;
	const struct ynode *unmatched_node, *include_node, *list_node;
	size_t nparts;
	struct conf_part *parts;
};

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
	char key[LOADER_KEY_MAX];
	size_t keylen;
};

/**
 * Report at n (NULL: no position) with the current key path; the value part
 * is n's text when with_value and n is a scalar.
 */
void conf_error(struct loader *L, const struct ynode *n, bool with_value, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void conf_warning(struct loader *L, const struct ynode *n, bool with_value, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/** Key path: push ".name" (or "name" at the top) / "[i]"; pop restores the length returned. */
size_t conf_key_push(struct loader *L, const char *name);
size_t conf_key_index(struct loader *L, size_t i);
void conf_key_pop(struct loader *L, size_t len);
/** Replace the key path with a formatted one. */
void conf_key_set(struct loader *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** Fill L->st with every default. @return 0 or -ENOMEM. */
int conf_schema_defaults(struct loader *L);

/** Apply the main document (root may be NULL) to L->st; includes are loaded from here. */
void conf_schema_apply(struct loader *L, const struct ynode *root);

/** Apply an included partitions file (unmatched and list) at key "partitions". */
void conf_schema_apply_include(struct loader *L, const struct ynode *root);

/** Free everything the schema allocated in L->st (the conf part too). */
void conf_schema_free(struct conf_state *st);

/** Load the partitions include file named by L->st.include (relative to L->dir). */
void conf_include_load(struct loader *L);

/** Cross-checks and the partition table, mapping and resolved values. */
void conf_check(struct loader *L, const struct ynode *root);
