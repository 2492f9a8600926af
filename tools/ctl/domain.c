/* SPDX-License-Identifier: BSD-3-Clause */
/* partdnsctl domain add/del/list/import/export: the LMDB store of EDNS domains. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/ctl/ctl.h"

#define IMPORT_LINE_MAX 4096   /* longer lines are errors, not truncated */
#define IMPORT_MAX_ERRORS 100  /* after this many, stop reporting (still nothing imported) */

static const char *policy_name(enum conf_policy p)
{
	return p == CONF_POLICY_FORWARD ? "forward" : "iterate";
}

/* "iterate"/"forward" -> policy. @return 0 or -1. */
static int policy_parse(const char *s, enum conf_policy *out)
{
	if (strcmp(s, "iterate") == 0)
		*out = CONF_POLICY_ITERATE;
	else if (strcmp(s, "forward") == 0)
		*out = CONF_POLICY_FORWARD;
	else
		return -1;
	return 0;
}

static int errf(char *err, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int errf(char *err, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, size, fmt, ap);
	va_end(ap);
	return -1;
}

int ctl_domain_build(const char *name, bool subtree, int policy, const char *const *forward,
                     size_t nforward, const struct ctl_defaults *def, const char *forward_opt,
                     struct store_domain *out, char *err, size_t errsize)
{
	memset(out, 0, sizeof(*out));
	if (conf_name_normalize(name, out->name, sizeof(out->name)) != 0)
		return errf(err, errsize, "invalid domain name '%s'", name);
	/* It would read back as a comment in the import format. */
	if (out->name[0] == '#')
		return errf(err, errsize, "invalid domain name '%s': starts with '#'", name);
	/* "*.cdn.example" would be stored as a literal name no query asks: the operator means the subtree. */
	if (strchr(out->name, '*') != NULL) {
		const char *rest = strncmp(out->name, "*.", 2) == 0 ? out->name + 2 : NULL;
		if (rest != NULL && strchr(rest, '*') == NULL)
			return errf(err, errsize,
			            "'%s' is not a wildcard here: a '*' label is taken literally; to flag every name "
			            "under %s, add %s --subtree",
			            name, rest, rest);
		return errf(err, errsize, "invalid domain name '%s': '*' is not a hostname character", name);
	}
	/* Operators' likely slips that would reroute far more than one CDN's names. */
	if (strcmp(out->name, ".") == 0)
		return errf(err, errsize,
		            "refusing to flag the root: flagging the root would send every name "
		            "through the EDNS pool; flag the CDN zones instead");
	if (subtree && strchr(out->name, '.') == out->name + strlen(out->name) - 1 && !def->force)
		return errf(err, errsize,
		            "refusing to flag the top-level domain '%s' with its subtree: every name "
		            "under it would go through the EDNS pool; flag the CDN zones instead "
		            "(or add --force)",
		            out->name);
	out->subtree = subtree;
	bool from_default = policy < 0;
	out->policy = from_default ? def->policy : (enum conf_policy)policy;
	if (nforward > 0 && out->policy != CONF_POLICY_FORWARD)
		return errf(err, errsize, "%s needs policy forward, but the policy is %s%s", forward_opt,
		            policy_name(out->policy), from_default ? " (edns.policy of the config)" : "");
	if (nforward > STORE_MAX_FORWARD)
		return errf(err, errsize, "too many forward targets: %zu (at most %d)", nforward,
		            STORE_MAX_FORWARD);
	for (size_t i = 0; i < nforward; i++) {
		struct conf_addr *a = &out->forward[i];
		if (conf_addr_parse(forward[i], 53, a) != 0)
			return errf(err, errsize, "invalid forward target '%s': expected ADDR or ADDR@PORT",
			            forward[i]);
		for (size_t j = 0; j < i; j++)
			if (strcmp(out->forward[j].text, a->text) == 0)
				return errf(err, errsize, "forward target %s given twice", a->text);
		out->nforward = i + 1;
	}
	if (out->policy == CONF_POLICY_FORWARD && nforward == 0 && def->nforward == 0)
		return errf(err, errsize, "policy forward needs %s or edns.forward in the config",
		            forward_opt);
	if (store_domain_check(out) != 0) /* a safety net: the checks above should cover it */
		return errf(err, errsize, "domain '%s' cannot be stored", out->name);
	return 0;
}

int ctl_domain_parse_line(char *line, const struct ctl_defaults *def, struct store_domain *out,
                          char *err, size_t errsize)
{
	static const char blanks[] = " \t\r\n\v\f";
	/* A comment starts at a '#' that begins the line or follows a blank. */
	for (char *p = line; *p; p++)
		if (*p == '#' && (p == line || strchr(blanks, p[-1]) != NULL)) {
			*p = '\0';
			break;
		}
	char *save = NULL;
	char *name = strtok_r(line, blanks, &save);
	if (name == NULL)
		return 0;
	bool subtree = false, have_policy = false, have_forward = false;
	enum conf_policy policy = def->policy;
	const char *targets[STORE_MAX_FORWARD + 1];
	size_t ntargets = 0;
	char *tok;
	while ((tok = strtok_r(NULL, blanks, &save)) != NULL) {
		if (strcmp(tok, "subtree") == 0) {
			subtree = true;
		} else if (strcmp(tok, "exact") == 0) {
			subtree = false;
		} else if (strncmp(tok, "policy=", 7) == 0) {
			if (have_policy)
				return errf(err, errsize, "policy= given twice");
			if (policy_parse(tok + 7, &policy) != 0)
				return errf(err, errsize, "unknown policy '%s' (iterate or forward)", tok + 7);
			have_policy = true;
		} else if (strncmp(tok, "forward=", 8) == 0) {
			if (have_forward)
				return errf(err, errsize, "forward= given twice");
			have_forward = true;
			char *list = tok + 8, *s2 = NULL, *t;
			if (*list == '\0' || list[strlen(list) - 1] == ',' || *list == ',' ||
			    strstr(list, ",,") != NULL)
				return errf(err, errsize, "empty forward target in 'forward=%s'", list);
			for (t = strtok_r(list, ",", &s2); t != NULL; t = strtok_r(NULL, ",", &s2)) {
				if (ntargets == STORE_MAX_FORWARD)
					return errf(err, errsize, "too many forward targets (at most %d)",
					            STORE_MAX_FORWARD);
				targets[ntargets++] = t;
			}
		} else {
			return errf(err, errsize,
			            "unknown field '%s' (expected subtree, exact, policy=, forward=)", tok);
		}
	}
	if (ctl_domain_build(name, subtree, have_policy ? (int)policy : -1, targets, ntargets, def,
	                     "forward=", out, err, errsize) != 0)
		return -1;
	return 1;
}

int ctl_domain_format_line(const struct store_domain *d, char *buf, size_t size)
{
	size_t len = 0;
	int n = snprintf(buf, size, "%s%s policy=%s", d->name, d->subtree ? " subtree" : "",
	                 policy_name(d->policy));
	if (n < 0 || (size_t)n >= size)
		return -ENOSPC;
	len = (size_t)n;
	for (size_t i = 0; i < d->nforward; i++) {
		n = snprintf(buf + len, size - len, "%s%s", i == 0 ? " forward=" : ",", d->forward[i].text);
		if (n < 0 || (size_t)n >= size - len)
			return -ENOSPC;
		len += (size_t)n;
	}
	return (int)len;
}

static struct ctl_defaults defaults_of(const struct conf *conf)
{
	return (struct ctl_defaults){ .policy = conf->edns.policy, .nforward = conf->edns.nforward };
}

/*
 * Open the store; a message (prefixed with what) on failure. The directory is
 * made only with create (--create): a mistyped -s or server.store must not
 * become a new, empty store.
 * @param missing optional, for readonly: set when the directory exists but
 *        holds no store yet, which is then no error.
 * @return CTL_OK or CTL_ERROR.
 */
static int open_store(struct ctl *c, const char *what, bool readonly, bool create,
                      struct store **s, bool *missing)
{
	const char *dir = ctl_store_dir(c);
	char msg[1024];
	if (missing != NULL)
		*missing = false;
	if (ctl_store_as_owner(dir) != 0)
		return CTL_ERROR;
	int err = store_prepare_dir(dir, create && !readonly);
	if (err == 0)
		err = store_open(dir, readonly, s);
	if (err == 0) {
		unsigned stale = store_stale_readers(*s);
		if (stale > 0)
			fprintf(stderr,
			        "partdnsctl: note: store %s: freed %u reader slot%s left by killed "
			        "processes\n",
			        dir, stale, stale == 1 ? "" : "s");
		return CTL_OK;
	}
	if (readonly && err == -ENOENT && missing != NULL && store_prepare_dir(dir, false) == 0) {
		*missing = true;
		return CTL_OK;
	}
	ctl_error("%s: %s", what, store_message(err, dir, msg, sizeof(msg)));
	return CTL_ERROR;
}

/* domain add */

struct add_opts {
	bool subtree;
	bool create; /* --create */
	bool force;  /* --force */
	int policy;
	const char *forward[STORE_MAX_FORWARD + 1];
	size_t nforward;
	size_t given; /* --forward count, may exceed the array */
};

enum { OPT_SUBTREE = 256, OPT_POLICY, OPT_FORWARD, OPT_JSON, OPT_CREATE, OPT_FORCE };

static int add_opt(int opt, const char *arg, void *ctx)
{
	struct add_opts *o = ctx;
	enum conf_policy p;
	switch (opt) {
	case OPT_SUBTREE:
		o->subtree = true;
		return 0;
	case OPT_CREATE:
		o->create = true;
		return 0;
	case OPT_FORCE:
		o->force = true;
		return 0;
	case OPT_POLICY:
		if (policy_parse(arg, &p) != 0)
			return ctl_usage_error("domain add: --policy must be iterate or forward, not '%s'", arg);
		o->policy = (int)p;
		return 0;
	case OPT_FORWARD:
		if (o->nforward <= STORE_MAX_FORWARD)
			o->forward[o->nforward++] = arg;
		o->given++;
		return 0;
	default:
		return CTL_USAGE;
	}
}

static int domain_add(struct ctl *c, int argc, char **argv)
{
	static const struct option longs[] = {
		{ "subtree", no_argument, NULL, OPT_SUBTREE },
		{ "policy", required_argument, NULL, OPT_POLICY },
		{ "forward", required_argument, NULL, OPT_FORWARD },
		{ "create", no_argument, NULL, OPT_CREATE },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ NULL, 0, NULL, 0 },
	};
	struct add_opts o = { .policy = -1 };
	int first;
	int rc = ctl_getopt(c, argc, argv, "", longs, add_opt, &o, &first);
	if (rc >= 0)
		return rc;
	if (argc - first != 1)
		return ctl_usage_error("domain add: expected one NAME");
	if ((rc = ctl_load_conf(c)) != CTL_OK)
		return rc;
	struct ctl_defaults def = defaults_of(c->conf);
	def.force = o.force;
	struct store_domain d;
	char err[512];
	if (o.given > STORE_MAX_FORWARD) {
		ctl_error("domain add: too many --forward targets: %zu (at most %d)", o.given,
		          STORE_MAX_FORWARD);
		return CTL_ERROR;
	}
	if (ctl_domain_build(argv[first], o.subtree, o.policy, o.forward, o.nforward, &def,
	                     "--forward", &d, err, sizeof(err)) != 0) {
		ctl_error("domain add: %s", err);
		return CTL_ERROR;
	}
	struct store *s;
	if ((rc = open_store(c, "domain add", false, o.create, &s, NULL)) != CTL_OK)
		return rc;
	/* the entry it replaces, to say when its match changes (add without --subtree over a subtree entry) */
	struct store_domain old;
	bool had = store_get(s, d.name, &old) == 0;
	size_t replaced = 0;
	int e = store_put_many(s, &d, 1, &replaced);
	store_close(s);
	if (e != 0) {
		char msg[1024];
		ctl_error("domain add: cannot store %s: %s", d.name,
		          store_message(e, ctl_store_dir(c), msg, sizeof(msg)));
		return CTL_ERROR;
	}
	char line[1024];
	ctl_domain_format_line(&d, line, sizeof(line));
	printf("%s %s\n", replaced ? "updated" : "added", line);
	if (had && old.subtree != d.subtree)
		printf("note: %s matched %s before and now matches %s%s\n", d.name,
		       old.subtree ? "the name and every name under it" : "the name only",
		       d.subtree ? "the name and every name under it" : "the name only",
		       d.subtree ? "" : " (add --subtree to keep the subtree)");
	return CTL_OK;
}

/* domain del */

static int domain_del(struct ctl *c, int argc, char **argv)
{
	int first;
	int rc = ctl_getopt(c, argc, argv, "", NULL, NULL, NULL, &first);
	if (rc >= 0)
		return rc;
	if (argc - first != 1)
		return ctl_usage_error("domain del: expected one NAME");
	char name[256];
	if (conf_name_normalize(argv[first], name, sizeof(name)) != 0) {
		ctl_error("domain del: invalid domain name '%s'", argv[first]);
		return CTL_ERROR;
	}
	if ((rc = ctl_load_conf(c)) != CTL_OK)
		return rc;
	struct store *s;
	bool missing;
	const char *dir = ctl_store_dir(c);
	if (store_prepare_dir(dir, false) == -ENOENT) {
		ctl_error("domain del: domain '%s' is not in the store (store directory %s does not "
		          "exist)",
		          name, dir);
		return CTL_ERROR;
	}
	/* Readonly first: deleting from a directory without a store must not make one. */
	if ((rc = open_store(c, "domain del", true, false, &s, &missing)) != CTL_OK)
		return rc;
	if (missing) {
		ctl_error("domain del: domain '%s' is not in the store (%s holds no store yet)", name,
		          dir);
		return CTL_ERROR;
	}
	store_close(s);
	if ((rc = open_store(c, "domain del", false, false, &s, NULL)) != CTL_OK)
		return rc;
	int e = store_del(s, name);
	store_close(s);
	if (e == -ENOENT) {
		ctl_error("domain del: domain '%s' is not in the store", name);
		return CTL_ERROR;
	}
	if (e != 0) {
		char msg[1024];
		ctl_error("domain del: cannot delete %s: %s", name,
		          store_message(e, dir, msg, sizeof(msg)));
		return CTL_ERROR;
	}
	printf("deleted %s\n", name);
	return CTL_OK;
}

/* domain list / export */

struct list_state {
	FILE *out;
	size_t width; /* of the name column */
	size_t count;
};

static int width_fn(const struct store_domain *d, void *arg)
{
	struct list_state *st = arg;
	size_t len = strlen(d->name);
	if (len > st->width)
		st->width = len;
	return 0;
}

static int list_fn(const struct store_domain *d, void *arg)
{
	struct list_state *st = arg;
	fprintf(st->out, "%-*s  %-7s  %-7s", (int)st->width, d->name, d->subtree ? "subtree" : "exact",
	        policy_name(d->policy));
	if (d->nforward > 0) {
		fputs("  ", st->out);
		for (size_t i = 0; i < d->nforward; i++)
			fprintf(st->out, "%s%s", i ? "," : "", d->forward[i].text);
	} else if (d->policy == CONF_POLICY_FORWARD) {
		fputs("  (edns.forward)", st->out);
	}
	fputc('\n', st->out);
	st->count++;
	return 0;
}

static int json_fn(const struct store_domain *d, void *arg)
{
	struct list_state *st = arg;
	fputs(st->count ? ",\n  {\"name\": " : "[\n  {\"name\": ", st->out);
	ctl_json_string(st->out, d->name);
	fprintf(st->out, ", \"subtree\": %s, \"policy\": \"%s\", \"forward\": [",
	        d->subtree ? "true" : "false", policy_name(d->policy));
	for (size_t i = 0; i < d->nforward; i++) {
		if (i)
			fputs(", ", st->out);
		ctl_json_string(st->out, d->forward[i].text);
	}
	fputs("]}", st->out);
	st->count++;
	return 0;
}

static int export_fn(const struct store_domain *d, void *arg)
{
	struct list_state *st = arg;
	char line[1024];
	if (ctl_domain_format_line(d, line, sizeof(line)) < 0)
		return -ENOSPC;
	fprintf(st->out, "%s\n", line);
	st->count++;
	return 0;
}

static int json_opt(int opt, const char *arg, void *ctx)
{
	if (opt != OPT_JSON)
		return CTL_USAGE;
	*(bool *)ctx = true;
	return 0;
}

static int domain_list(struct ctl *c, int argc, char **argv, bool export)
{
	static const struct option longs[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ NULL, 0, NULL, 0 },
	};
	bool json = false;
	int first;
	int rc = ctl_getopt(c, argc, argv, "", export ? NULL : longs, json_opt, &json, &first);
	if (rc >= 0)
		return rc;
	if (argc - first != 0)
		return ctl_usage_error("domain %s: unexpected argument '%s'", argv[0], argv[first]);
	if ((rc = ctl_load_conf(c)) != CTL_OK)
		return rc;
	struct store *s;
	bool missing;
	char what[32];
	snprintf(what, sizeof(what), "domain %s", argv[0]);
	/* Never created here; a missing directory is an error (a mistyped path?). */
	if ((rc = open_store(c, what, true, false, &s, &missing)) != CTL_OK)
		return rc;
	struct list_state st = { .out = stdout };
	int e = 0;
	if (missing) {
		/* The directory is there, nothing was added yet: an empty list. */
		fprintf(stderr, "partdnsctl: note: store %s does not exist yet (no domains)\n",
		        ctl_store_dir(c));
	} else if (export) {
		fprintf(stdout, "# partdnsctl domain export from %s\n", ctl_store_dir(c));
		e = store_foreach(s, export_fn, &st);
	} else if (json) {
		e = store_foreach(s, json_fn, &st);
	} else {
		e = store_foreach(s, width_fn, &st);
		if (e == 0)
			e = store_foreach(s, list_fn, &st);
	}
	if (!missing)
		store_close(s);
	if (json && e == 0)
		fputs(st.count ? "\n]\n" : "[]\n", stdout);
	if (e != 0) {
		char msg[1024];
		ctl_error("domain %s: cannot read: %s", argv[0],
		          store_message(e, ctl_store_dir(c), msg, sizeof(msg)));
		return CTL_ERROR;
	}
	return CTL_OK;
}

/* domain import */

struct import_entry {
	struct store_domain d;
	unsigned line;
};

static int entry_cmp(const void *a, const void *b)
{
	const struct import_entry *x = *(const struct import_entry *const *)a;
	const struct import_entry *y = *(const struct import_entry *const *)b;
	int c = strcmp(x->d.name, y->d.name);
	if (c != 0)
		return c;
	return x->line < y->line ? -1 : x->line > y->line;
}

/* Report a name given on two lines; sorts an index, keeps the file order of the entries. */
static unsigned check_duplicates(const char *fname, struct import_entry *e, size_t n)
{
	if (n < 2)
		return 0;
	struct import_entry **idx = malloc(n * sizeof(*idx));
	if (idx == NULL) {
		ctl_error("domain import: out of memory");
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		idx[i] = &e[i];
	qsort(idx, n, sizeof(*idx), entry_cmp);
	unsigned errors = 0;
	for (size_t i = 1; i < n; i++)
		if (strcmp(idx[i]->d.name, idx[i - 1]->d.name) == 0 && errors++ < IMPORT_MAX_ERRORS) {
			/* Point at the first line of a run, not the previous duplicate. */
			size_t j = i - 1;
			while (j > 0 && strcmp(idx[j - 1]->d.name, idx[i]->d.name) == 0)
				j--;
			fprintf(stderr, "%s:%u: error: domain '%s' already given on line %u\n", fname,
			        idx[i]->line, idx[i]->d.name, idx[j]->line);
		}
	free(idx);
	return errors;
}

static int import_opt(int opt, const char *arg, void *ctx)
{
	struct add_opts *o = ctx;
	if (opt == OPT_CREATE)
		o->create = true;
	else if (opt == OPT_FORCE)
		o->force = true;
	else
		return CTL_USAGE;
	return 0;
}

static int domain_import(struct ctl *c, int argc, char **argv)
{
	static const struct option longs[] = {
		{ "create", no_argument, NULL, OPT_CREATE },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ NULL, 0, NULL, 0 },
	};
	struct add_opts o = { .policy = -1 };
	int first;
	int rc = ctl_getopt(c, argc, argv, "", longs, import_opt, &o, &first);
	if (rc >= 0)
		return rc;
	if (argc - first != 1)
		return ctl_usage_error("domain import: expected one FILE ('-' for stdin)");
	const char *path = argv[first];
	bool is_stdin = strcmp(path, "-") == 0;
	const char *fname = is_stdin ? "<stdin>" : path;
	if ((rc = ctl_load_conf(c)) != CTL_OK)
		return rc;
	FILE *in = is_stdin ? stdin : fopen(path, "r");
	if (in == NULL) {
		ctl_error("domain import: cannot open %s: %s", path, strerror(errno));
		return CTL_ERROR;
	}
	struct ctl_defaults def = defaults_of(c->conf);
	def.force = o.force;
	struct import_entry *entries = NULL;
	size_t n = 0, cap = 0;
	unsigned errors = 0, lineno = 0;
	char *line = NULL;
	size_t linecap = 0;
	ssize_t len;
	bool oom = false;
	while ((len = getline(&line, &linecap, in)) != -1) {
		lineno++;
		char err[512];
		if ((size_t)len > IMPORT_LINE_MAX) {
			if (errors++ < IMPORT_MAX_ERRORS)
				fprintf(stderr, "%s:%u: error: line longer than %d bytes\n", fname, lineno,
				        IMPORT_LINE_MAX);
			continue;
		}
		if (strlen(line) != (size_t)len) {
			if (errors++ < IMPORT_MAX_ERRORS)
				fprintf(stderr, "%s:%u: error: NUL byte in line\n", fname, lineno);
			continue;
		}
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct import_entry *ne = realloc(entries, ncap * sizeof(*ne));
			if (ne == NULL) {
				oom = true;
				break;
			}
			entries = ne;
			cap = ncap;
		}
		int r = ctl_domain_parse_line(line, &def, &entries[n].d, err, sizeof(err));
		if (r < 0) {
			if (errors++ < IMPORT_MAX_ERRORS)
				fprintf(stderr, "%s:%u: error: %s\n", fname, lineno, err);
		} else if (r > 0) {
			entries[n].line = lineno;
			n++;
		}
	}
	bool read_error = ferror(in);
	int read_errno = errno;
	free(line);
	if (!is_stdin)
		fclose(in);
	if (oom || read_error) {
		ctl_error("domain import: cannot read %s: %s; nothing imported", path,
		          oom ? "out of memory" : strerror(read_errno));
		free(entries);
		return CTL_ERROR;
	}
	errors += check_duplicates(fname, entries, n);
	if (errors > 0) {
		if (errors > IMPORT_MAX_ERRORS)
			fprintf(stderr, "%s: %u more errors not shown\n", fname, errors - IMPORT_MAX_ERRORS);
		ctl_error("domain import: %s: %u error%s, nothing imported", fname, errors,
		          errors == 1 ? "" : "s");
		free(entries);
		return CTL_ERROR;
	}

	/* One transaction for the whole file: all of it or nothing. */
	struct store_domain *batch = n ? malloc(n * sizeof(*batch)) : NULL;
	if (n > 0 && batch == NULL) {
		ctl_error("domain import: out of memory");
		free(entries);
		return CTL_ERROR;
	}
	for (size_t i = 0; i < n; i++)
		batch[i] = entries[i].d;
	free(entries);
	size_t replaced = 0;
	int e = 0;
	if (n > 0) {
		struct store *s;
		if ((rc = open_store(c, "domain import", false, o.create, &s, NULL)) != CTL_OK) {
			free(batch);
			return rc;
		}
		e = store_put_many(s, batch, n, &replaced);
		store_close(s);
	}
	free(batch);
	if (e != 0) {
		char msg[1024];
		ctl_error("domain import: cannot store %zu domains from %s: %s; nothing imported", n,
		          fname, store_message(e, ctl_store_dir(c), msg, sizeof(msg)));
		return CTL_ERROR;
	}
	printf("imported %zu domain%s from %s (%zu added, %zu updated)\n", n, n == 1 ? "" : "s", fname,
	       n - replaced, replaced);
	return CTL_OK;
}

int ctl_domain(struct ctl *c, int argc, char **argv)
{
	if (argc < 2)
		return ctl_usage_error("domain: expected add, del, list, import or export");
	const char *verb = argv[1];
	argc--;
	argv++;
	if (strcmp(verb, "add") == 0)
		return domain_add(c, argc, argv);
	if (strcmp(verb, "del") == 0)
		return domain_del(c, argc, argv);
	if (strcmp(verb, "list") == 0)
		return domain_list(c, argc, argv, false);
	if (strcmp(verb, "export") == 0)
		return domain_list(c, argc, argv, true);
	if (strcmp(verb, "import") == 0)
		return domain_import(c, argc, argv);
	return ctl_usage_error("domain: unknown subcommand '%s'", verb);
}
