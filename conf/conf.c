/* SPDX-License-Identifier: BSD-3-Clause */
/* The config loader: parse, apply the schema, read a named include, check, hand out the result. */
#include "conf/conf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/check.h"
#include "conf/report.h"
#include "conf/schema.h"
#include "conf/state.h"
#include "conf/text.h"
#include "conf/ytree.h"
#include "util/file.h"

const char *conf_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case CONF_E_INVALID:
		return "the configuration has errors";
	case CONF_E_YAML:
		return "not well-formed YAML";
	case CONF_E_TARGET:
		return "bad ADDR[@PORT]";
	default:
		if (err < 0 && err > -4096)
			return strerror(-err);
		return "unknown error";
	}
}

/* Read the partitions include named by L->st.include (relative to L->dir) and apply it. */
static void load_include(struct loader *L)
{
	struct conf_state *st = &L->st;
	const char *inc = st->include;
	char *path;
	if (inc[0] == '/' || L->dir == NULL) {
		path = strdup(inc);
	} else {
		size_t dl = strlen(L->dir), il = strlen(inc);
		bool slash = dl > 0 && L->dir[dl - 1] == '/';
		path = malloc(dl + il + 2);
		if (path != NULL)
			snprintf(path, dl + il + 2, "%s%s%s", L->dir, slash ? "" : "/", inc);
	}
	if (path == NULL) {
		L->oom = true;
		return;
	}
	free(st->conf.partitions.include);
	st->conf.partitions.include = path;

	char *buf = NULL;
	const char *text = L->plan_text; /* a staged plan stands in for the file (conf_load_plan) */
	size_t len = L->plan_len;
	int rc = 0;
	if (text == NULL) {
		rc = conf_read_file(path, true, &buf, &len);
		text = buf;
	}
	if (rc != 0) {
		size_t saved = conf_key_push(L, "partitions");
		conf_key_push(L, "include");
		conf_error(L, st->include_node, false, "cannot read include file '%s': %s", path,
		           file_strerror(rc));
		conf_key_pop(L, saved);
		L->include_failed = true;
		return;
	}
	rc = conf_ydoc_parse(&L->docs[1], text, len, L->plan_text != NULL ? L->plan_name : path, 1, &L->diag);
	free(buf);
	if (rc == CONF_E_YAML) {
		L->yaml_failed = true;
		return;
	}
	if (rc != 0) {
		L->oom = true;
		return;
	}
	L->ndocs = 2;
	conf_schema_apply_include(L, L->docs[1].root);
}

/* The main file holds no settings at all: an error at its start. */
static void report_empty(struct loader *L)
{
	struct ynode at = { .type = YNODE_SCALAR, .line = 1, .col = 1, .src = &L->docs[0].src };
	conf_error(L, &at, false, "the file is empty; start from conf/partdns.yaml");
}

/* A staged plan replaces the partitions include: a config without one has nothing to replace. */
static void report_no_include(struct loader *L)
{
	struct ynode at = { .type = YNODE_SCALAR, .line = 1, .col = 1, .src = &L->docs[0].src };
	conf_key_set(L, "partitions.include");
	conf_error(L, &at, false,
	           "a staged plan replaces the partitions include file, and this config has none: move "
	           "partitions.list to its own file and name it in partitions.include");
}

/* Parse, apply, include, check; dir (owned, may be NULL) resolves relative includes. */
static int load(const char *text, size_t len, const char *name, char *dir, FILE *err,
                struct conf **out, unsigned *nerrors, const char *plan, size_t plan_len, const char *plan_name)
{
	*out = NULL;
	struct loader *L = calloc(1, sizeof(*L));
	if (L == NULL) {
		free(dir);
		return -ENOMEM;
	}
	L->diag.out = err;
	L->name = name;
	L->dir = dir;
	L->plan_text = plan;
	L->plan_len = plan_len;
	L->plan_name = plan_name;
	L->st.conf.path = strdup(name);
	if (L->st.conf.path == NULL || conf_schema_defaults(L) != 0)
		L->oom = true;

	if (!L->oom) {
		int rc = conf_ydoc_parse(&L->docs[0], text, len, name, 0, &L->diag);
		if (rc == CONF_E_YAML)
			L->yaml_failed = true;
		else if (rc != 0)
			L->oom = true;
		else
			L->ndocs = 1;
	}
	if (L->ndocs == 1 && conf_ynode_is_null(L->docs[0].root)) {
		/* Nothing but comments, blanks, "---" or a null: a truncated or
		 * wrong file, never a wish for every default. */
		report_empty(L);
	} else if (L->ndocs == 1) {
		conf_schema_apply(L, L->docs[0].root);
		/* The schema only records a named include; reading files is the loader's job. */
		if (L->st.include_pending)
			load_include(L);
		else if (L->plan_text != NULL)
			report_no_include(L);
		/* Cross-checks on a half-read file would only add noise. */
		if (!L->yaml_failed && !L->oom)
			conf_check(L, L->docs[0].root);
	}

	int rc = 0;
	if (L->oom) {
		conf_diag_node(&L->diag, true, NULL, name, NULL, NULL, "out of memory");
		rc = -ENOMEM;
	} else if (L->yaml_failed) {
		rc = CONF_E_YAML;
	} else if (L->diag.nerrors > 0) {
		rc = CONF_E_INVALID;
	} else {
		struct conf *c = malloc(sizeof(*c));
		if (c == NULL) {
			conf_diag_node(&L->diag, true, NULL, name, NULL, NULL, "out of memory");
			rc = -ENOMEM;
		} else {
			*c = L->st.conf;
			memset(&L->st.conf, 0, sizeof(L->st.conf));
			*out = c;
		}
	}
	if (nerrors != NULL)
		*nerrors = L->diag.nerrors;
	conf_diag_flush(&L->diag);
	for (unsigned i = 0; i < 2; i++)
		conf_ydoc_free(&L->docs[i]);
	conf_schema_free(&L->st);
	free(L->dir);
	free(L);
	return rc;
}

int conf_load_string(const char *text, size_t len, const char *name, FILE *err, struct conf **out,
                     unsigned *nerrors)
{
	return load(text, len, name != NULL ? name : "(string)", NULL, err, out, nerrors, NULL, 0, NULL);
}

int conf_locate(const char *path, const char *key, char *out, size_t outlen)
{
	char *text;
	size_t len;
	if (outlen == 0 || conf_read_file(path, false, &text, &len) != 0)
		return -1;
	struct ydoc doc = { .root = NULL };
	struct ydiag diag = { .out = NULL };
	int rc = -1;
	if (conf_ydoc_parse(&doc, text, len, path, 0, &diag) == 0) {
		const struct ynode *n = doc.root;
		char part[128];
		for (const char *k = key; n != NULL && *k != '\0';) {
			size_t l = strcspn(k, ".");
			if (l >= sizeof(part) || n->type != YNODE_MAP) {
				n = NULL;
				break;
			}
			memcpy(part, k, l);
			part[l] = '\0';
			n = conf_ynode_get(n, part);
			k += l + (k[l] == '.');
		}
		if (n != NULL) {
			snprintf(out, outlen, "%s:%u:%u", path, (unsigned)n->line, (unsigned)n->col);
			rc = 0;
		}
	}
	conf_ydoc_free(&doc);
	conf_diag_flush(&diag); /* out NULL: frees, prints nothing */
	free(text);
	return rc;
}

int conf_load(const char *path, FILE *err, struct conf **out, unsigned *nerrors)
{
	return conf_load_plan(path, NULL, 0, NULL, err, out, nerrors);
}

int conf_load_plan(const char *path, const char *plan, size_t plan_len, const char *plan_name, FILE *err,
                   struct conf **out, unsigned *nerrors)
{
	*out = NULL;
	char *text;
	size_t len;
	int rc = conf_read_file(path, false, &text, &len);
	if (rc != 0) {
		if (err != NULL) {
			fprintf(err, "%s: error: cannot read: %s\n", path, file_strerror(rc));
			fflush(err);
		}
		if (nerrors != NULL)
			*nerrors = 1;
		return rc;
	}
	char *dir = NULL;
	const char *slash = strrchr(path, '/');
	if (slash != NULL) {
		size_t dl = slash == path ? 1 : (size_t)(slash - path);
		dir = strndup(path, dl);
		if (dir == NULL) {
			free(text);
			return -ENOMEM;
		}
	}
	rc = load(text, len, path, dir, err, out, nerrors, plan, plan_len, plan_name ? plan_name : "(staged plan)");
	free(text);
	return rc;
}

int conf_plan_successor(const struct conf *old, const struct conf *neu, char *why, size_t len)
{
	unsigned was = old->partitions.serial, now = neu->partitions.serial;
	if (was == 0)
		return 0;
	if (now == 0)
		snprintf(why, len, "partitions.serial was %u and is gone: keep it (CDNs order published tables "
		         "by it)", was);
	else if (now < was)
		snprintf(why, len, "partitions.serial went back from %u to %u: it may only grow", was, now);
	else if (now == was && neu->partitions.digest != old->partitions.digest)
		snprintf(why, len, "the partition plan changed but partitions.serial is still %u: raise it "
		         "(e.g. to %u) so CDNs can tell the new table from the old one", was, was + 1);
	else
		return 0;
	return -1;
}

void conf_restart_keys(void (*fn)(const char *key, const char *note, void *arg), void *arg)
{
	conf_schema_restart_keys(fn, arg);
}

size_t conf_restart_changes(const struct conf *old, const struct conf *neu, void (*fn)(const char *note, void *arg),
                            void *arg)
{
	/* the schema's offsets count from the loader's state, as in conf_free */
	struct conf_state a, b;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	a.conf = *old;
	b.conf = *neu;
	return conf_schema_restart_changes(&a, &b, fn, arg);
}

void conf_free(struct conf *c)
{
	if (c == NULL)
		return;
	/* The schema knows every allocated field; reuse its free. */
	struct conf_state st;
	memset(&st, 0, sizeof(st));
	st.conf = *c;
	conf_schema_free(&st);
	free(c);
}
