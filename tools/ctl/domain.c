/* SPDX-License-Identifier: BSD-3-Clause */
/* partdnsctl domain add/del/list/import/export: the LMDB store of EDNS domains. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/ctl/ctl.h"
#include "util/json.h"
#include "util/vec.h"

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

void ctl_time_format(int64_t t, char *buf, size_t size)
{
	struct tm tm;
	time_t tt = (time_t)t;
	if (t <= 0 || gmtime_r(&tt, &tm) == NULL || tm.tm_year + 1900 > 9999) {
		snprintf(buf, size, "-");
		return;
	}
	snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
	         tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

/* Exactly YYYY-MM-DDTHH:MM:SSZ (what ctl_time_format writes), 1970..9999. @return 0 or -1. */
static int time_parse(const char *s, int64_t *out)
{
	unsigned v[6];
	static const char shape[] = "dddd-dd-ddTdd:dd:ddZ";
	if (strlen(s) != sizeof(shape) - 1)
		return -1;
	for (size_t i = 0; shape[i]; i++)
		if (shape[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != shape[i])
			return -1;
	static const unsigned at[6] = { 0, 5, 8, 11, 14, 17 }, width[6] = { 4, 2, 2, 2, 2, 2 };
	for (int i = 0; i < 6; i++) {
		v[i] = 0;
		for (unsigned j = 0; j < width[i]; j++)
			v[i] = v[i] * 10 + (unsigned)(s[at[i] + j] - '0');
	}
	static const unsigned mdays[12] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	bool leap = (v[0] % 4 == 0 && v[0] % 100 != 0) || v[0] % 400 == 0;
	if (v[0] < 1970 || v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > mdays[v[1] - 1] ||
	    (v[1] == 2 && v[2] == 29 && !leap) || v[3] > 23 || v[4] > 59 || v[5] > 59)
		return -1;
	*out = days_from_civil(v[0], v[1], v[2]) * 86400 + v[3] * 3600 + v[4] * 60 + v[5];
	return 0;
}

int ctl_domain_format_meta(const struct store_domain *d, char *buf, size_t size)
{
	char at[32];
	size_t len = 0;
	int n;
	if (size == 0)
		return -ENOSPC;
	buf[0] = '\0';
	struct {
		const char *key;
		int64_t t;
		const char *who;
	} f[2] = { { "added", d->added, d->added_by }, { "changed", d->changed, d->changed_by } };
	for (int i = 0; i < 2; i++) {
		if (f[i].t > 0) {
			ctl_time_format(f[i].t, at, sizeof(at));
			n = snprintf(buf + len, size - len, "%s%s=%s", len ? " " : "#@ ", f[i].key, at);
			if (n < 0 || (size_t)n >= size - len)
				return -ENOSPC;
			len += (size_t)n;
		}
		if (f[i].who[0] != '\0') {
			/* quoted as is: store_user_valid names hold no '"' or '\\' */
			n = snprintf(buf + len, size - len, "%s%s_by=\"%s\"", len ? " " : "#@ ", f[i].key,
			             f[i].who);
			if (n < 0 || (size_t)n >= size - len)
				return -ENOSPC;
			len += (size_t)n;
		}
	}
	return (int)len;
}

/* The "#@" comment (text after the marker) into out's who/when. @return 0 or -1 with err. */
static int parse_meta(char *text, struct store_domain *out, char *err, size_t errsize)
{
	static const char blanks[] = " \t\r\n\v\f";
	bool seen[4] = { false, false, false, false };
	static const char *const keys[4] = { "added", "added_by", "changed", "changed_by" };
	char *p = text;
	for (;;) {
		p += strspn(p, blanks);
		if (*p == '\0')
			return 0;
		char *eq = strchr(p, '=');
		size_t klen = eq != NULL ? (size_t)(eq - p) : 0;
		int k = -1;
		for (int i = 0; i < 4 && eq != NULL; i++)
			if (strlen(keys[i]) == klen && strncmp(p, keys[i], klen) == 0)
				k = i;
		if (k < 0 || strcspn(p, blanks) < klen) {
			size_t wlen = strcspn(p, blanks);
			return errf(err, errsize,
			            "unknown field '%.*s' in the '#@' who/when comment (expected added=, "
			            "added_by=, changed=, changed_by=)",
			            (int)(wlen > 64 ? 64 : wlen), p);
		}
		if (seen[k])
			return errf(err, errsize, "%s= given twice in the '#@' comment", keys[k]);
		seen[k] = true;
		char *val = eq + 1, *end;
		if (k == 1 || k == 3) {
			/* "USER": no quote inside (store_user_valid), so the next one ends it */
			end = *val == '"' ? strchr(val + 1, '"') : NULL;
			if (end == NULL)
				return errf(err, errsize, "%s= needs a quoted name (%s=\"alice\")", keys[k],
				            keys[k]);
			*end = '\0';
			char *user = val + 1;
			p = end + 1;
			if (*p != '\0' && strchr(blanks, *p) == NULL)
				return errf(err, errsize, "text after the closing quote of %s=", keys[k]);
			if (!store_user_valid(user))
				return errf(err, errsize,
				            "%s= must be at most %d printable ASCII characters without '\"' or "
				            "'\\'",
				            keys[k], STORE_USER_MAX);
			snprintf(k == 1 ? out->added_by : out->changed_by, STORE_USER_MAX + 1, "%s", user);
		} else {
			size_t vlen = strcspn(val, blanks);
			p = val + vlen;
			char saved = *p;
			*p = '\0';
			int64_t at;
			if (time_parse(val, &at) != 0)
				return errf(err, errsize, "%s=%.32s is not a UTC time as 2024-05-01T10:00:00Z",
				            keys[k], val);
			*p = saved;
			if (k == 0)
				out->added = at;
			else
				out->changed = at;
		}
	}
}

int ctl_domain_parse_line(char *line, const struct ctl_defaults *def, struct store_domain *out,
                          char *err, size_t errsize)
{
	static const char blanks[] = " \t\r\n\v\f";
	char *meta = NULL;
	/* A comment starts at a '#' that begins the line or follows a blank. */
	for (char *p = line; *p; p++)
		if (*p == '#' && (p == line || strchr(blanks, p[-1]) != NULL)) {
			*p = '\0';
			if (p[1] == '@')
				meta = p + 2;
			break;
		}
	char *save = NULL;
	char *name = strtok_r(line, blanks, &save);
	if (name == NULL) {
		if (meta != NULL)
			return errf(err, errsize, "a '#@' who/when comment without a domain before it");
		return 0;
	}
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
	if (meta != NULL && parse_meta(meta, out, err, errsize) != 0)
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

/* domain add */

struct add_opts {
	bool subtree;
	bool create; /* --create */
	bool force;  /* --force */
	bool replace; /* import --replace */
	int policy;
	const char *forward[STORE_MAX_FORWARD + 1];
	size_t nforward;
	size_t given; /* --forward count, may exceed the array */
};

enum { OPT_SUBTREE = 256, OPT_POLICY, OPT_FORWARD, OPT_JSON, OPT_CREATE, OPT_FORCE, OPT_REPLACE };

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
	if ((rc = ctl_store_open(c, "domain add", false, o.create, &s, NULL)) != CTL_OK)
		return rc;
	/* the entry it replaces, to say when its match changes (add without --subtree over a subtree entry) */
	struct store_domain old;
	bool had = store_get(s, d.name, &old) == 0;
	struct store_counts counts;
	int e = store_put_by(s, &d, 1, c->user, &counts);
	store_close(s);
	if (e != 0) {
		char msg[1024];
		ctl_error("domain add: cannot store %s: %s", d.name,
		          store_message(e, ctl_store_dir(c), msg, sizeof(msg)));
		return CTL_ERROR;
	}
	char line[1024];
	ctl_domain_format_line(&d, line, sizeof(line));
	/* unchanged: the entry was already so; its who/when stay as they were */
	printf("%s %s\n", counts.added ? "added" : counts.changed ? "updated" : "unchanged", line);
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
	if (!ctl_shared(c) && store_prepare_dir(dir, false) == -ENOENT) {
		ctl_error("domain del: domain '%s' is not in the store (store directory %s does not "
		          "exist)",
		          name, dir);
		return CTL_ERROR;
	}
	/* Readonly first: deleting from a directory without a store must not make one. */
	if ((rc = ctl_store_open(c, "domain del", true, false, &s, &missing)) != CTL_OK)
		return rc;
	if (missing) {
		ctl_error("domain del: domain '%s' is not in the store (%s holds no store yet)", name,
		          dir);
		return CTL_ERROR;
	}
	store_close(s);
	if ((rc = ctl_store_open(c, "domain del", false, false, &s, NULL)) != CTL_OK)
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
	size_t width;   /* of the name column */
	size_t fwidth;  /* of the forward column */
	size_t awidth;  /* of the added_by column */
	size_t count;
	const char *what;  /* "domain list" or "domain export" */
	bool quiet;        /* a pass that only measures: say nothing of skipped records */
	size_t skipped;    /* records that did not decode */
};

/*
 * A record that does not decode (a shared store holds anyone's writes): a
 * warning naming its key, escaped, and the listing goes on, so the
 * operator can still see and back up every other domain.
 */
static int skip_fn(const void *key, size_t keylen, const char *why, void *arg)
{
	struct list_state *st = arg;
	if (st->quiet)
		return 0;
	char esc[1100];
	st->skipped++;
	fprintf(stderr, "partdnsctl: warning: %s: record %s skipped: %s\n", st->what,
	        store_key_escape(key, keylen, esc, sizeof(esc)), why);
	return 0;
}

/* The FORWARD column: the targets, "(edns.forward)", or "-" for iterate. */
static void forward_text(const struct store_domain *d, char *buf, size_t size)
{
	size_t len = 0;
	snprintf(buf, size, "%s", d->policy == CONF_POLICY_FORWARD ? "(edns.forward)" : "-");
	for (size_t i = 0; i < d->nforward && len < size; i++) {
		int n = snprintf(buf + len, size - len, "%s%s", i ? "," : "", d->forward[i].text);
		if (n < 0)
			break;
		len += (size_t)n;
	}
}

static int width_fn(const struct store_domain *d, void *arg)
{
	struct list_state *st = arg;
	char fwd[1024];
	forward_text(d, fwd, sizeof(fwd));
	size_t len = strlen(d->name), flen = strlen(fwd), alen = d->added_by[0] ? strlen(d->added_by) : 1;
	if (len > st->width)
		st->width = len;
	if (flen > st->fwidth)
		st->fwidth = flen;
	if (alen > st->awidth)
		st->awidth = alen;
	return 0;
}

/*
 * One row: NAME MATCH POLICY FORWARD ADDED ADDED_BY CHANGED CHANGED_BY, times
 * in UTC, "-" for what is not known (a record from before schema 2). The
 * names are the store's (store_user_valid): no control bytes reach the
 * terminal.
 */
static int list_fn(const struct store_domain *d, void *arg)
{
	struct list_state *st = arg;
	char fwd[1024], added[32], changed[32];
	forward_text(d, fwd, sizeof(fwd));
	ctl_time_format(d->added, added, sizeof(added));
	ctl_time_format(d->changed, changed, sizeof(changed));
	if (st->count == 0)
		fprintf(st->out, "%-*s  %-7s  %-7s  %-*s  %-20s  %-*s  %-20s  %s\n", (int)st->width, "NAME",
		        "MATCH", "POLICY", (int)st->fwidth, "FORWARD", "ADDED", (int)st->awidth, "ADDED_BY",
		        "CHANGED", "CHANGED_BY");
	fprintf(st->out, "%-*s  %-7s  %-7s  %-*s  %-20s  %-*s  %-20s  %s\n", (int)st->width, d->name,
	        d->subtree ? "subtree" : "exact", policy_name(d->policy), (int)st->fwidth, fwd, added,
	        (int)st->awidth, d->added_by[0] ? d->added_by : "-", changed,
	        d->changed_by[0] ? d->changed_by : "-");
	st->count++;
	return 0;
}

/* A who/when pair as JSON: the time as a UTC string and the name, or null for unknown. */
static void json_who(FILE *out, const char *key, int64_t t, const char *who)
{
	char at[32];
	ctl_time_format(t, at, sizeof(at));
	fprintf(out, ", \"%s\": ", key);
	if (t > 0)
		fprintf(out, "\"%s\"", at);
	else
		fputs("null", out);
	fprintf(out, ", \"%s_by\": ", key);
	if (who[0] != '\0')
		json_string(out, who);
	else
		fputs("null", out);
}

static int json_fn(const struct store_domain *d, void *arg)
{
	struct list_state *st = arg;
	fputs(st->count ? ",\n  {\"name\": " : "[\n  {\"name\": ", st->out);
	json_string(st->out, d->name);
	fprintf(st->out, ", \"subtree\": %s, \"policy\": \"%s\", \"forward\": [",
	        d->subtree ? "true" : "false", policy_name(d->policy));
	for (size_t i = 0; i < d->nforward; i++) {
		if (i)
			fputs(", ", st->out);
		json_string(st->out, d->forward[i].text);
	}
	fputc(']', st->out);
	json_who(st->out, "added", d->added, d->added_by);
	json_who(st->out, "changed", d->changed, d->changed_by);
	fputc('}', st->out);
	st->count++;
	return 0;
}

static int export_fn(const struct store_domain *d, void *arg)
{
	struct list_state *st = arg;
	char line[1024], meta[256];
	if (ctl_domain_format_line(d, line, sizeof(line)) < 0 ||
	    ctl_domain_format_meta(d, meta, sizeof(meta)) < 0)
		return -ENOSPC;
	/* the who/when as a "#@" comment: read back by import, a comment to
	 * partdnsctl before schema 2 (so an export also goes back to one) */
	fprintf(st->out, "%s%s%s\n", line, meta[0] ? " " : "", meta);
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
	if ((rc = ctl_store_open(c, what, true, false, &s, &missing)) != CTL_OK)
		return rc;
	/* columns at least as wide as their headings */
	struct list_state st = { .out = stdout, .width = 4, .fwidth = 7, .awidth = 8, .what = what };
	int e = 0;
	if (missing) {
		/* The directory is there, nothing was added yet: an empty list. */
		fprintf(stderr, "partdnsctl: note: store %s does not exist yet (no domains)\n",
		        ctl_store_dir(c));
	} else if (export) {
		char now[32];
		ctl_time_format((int64_t)time(NULL), now, sizeof(now));
		fprintf(stdout, "# partdnsctl domain export from %s at %s by %s\n", ctl_store_dir(c), now,
		        c->user);
		e = store_foreach_all(s, export_fn, skip_fn, &st);
	} else if (json) {
		e = store_foreach_all(s, json_fn, skip_fn, &st);
	} else {
		st.quiet = true;
		e = store_foreach_all(s, width_fn, skip_fn, &st);
		st.quiet = false;
		if (e == 0)
			e = store_foreach_all(s, list_fn, skip_fn, &st);
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
	if (st.skipped > 0) {
		/* the rest is listed; the status says the listing is not whole */
		ctl_error("domain %s: %zu record(s) skipped: they do not decode (named above)", argv[0], st.skipped);
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
	else if (opt == OPT_REPLACE)
		o->replace = true;
	else
		return CTL_USAGE;
	return 0;
}

static int domain_import(struct ctl *c, int argc, char **argv)
{
	static const struct option longs[] = {
		{ "create", no_argument, NULL, OPT_CREATE },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "replace", no_argument, NULL, OPT_REPLACE },
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
		if (vec_grow(&entries, &cap, n + 1, sizeof(*entries), SIZE_MAX) != 0) {
			oom = true;
			break;
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

	/* An empty or truncated backup must not wipe the store: emptying it
	 * takes domain del, name by name. */
	if (o.replace && n == 0) {
		ctl_error("domain import --replace: %s holds no domains; refusing to empty the store "
		          "(delete domains with domain del)",
		          fname);
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
	struct store_counts counts = { 0 };
	int e = 0;
	if (n > 0) {
		struct store *s;
		if ((rc = ctl_store_open(c, "domain import", false, o.create, &s, NULL)) != CTL_OK) {
			free(batch);
			return rc;
		}
		e = o.replace ? store_replace_all(s, batch, n, c->user, &counts)
		              : store_put_by(s, batch, n, c->user, &counts);
		store_close(s);
	}
	free(batch);
	if (e != 0) {
		char msg[1024];
		ctl_error("domain import: cannot store %zu domains from %s: %s; nothing imported", n,
		          fname, store_message(e, ctl_store_dir(c), msg, sizeof(msg)));
		return CTL_ERROR;
	}
	if (o.replace)
		printf("imported %zu domain%s from %s, replacing the store (%zu added, %zu updated, %zu "
		       "unchanged, %zu removed)\n",
		       n, n == 1 ? "" : "s", fname, counts.added, counts.changed, counts.unchanged,
		       counts.removed);
	else
		printf("imported %zu domain%s from %s (%zu added, %zu updated, %zu unchanged)\n", n,
		       n == 1 ? "" : "s", fname, counts.added, counts.changed, counts.unchanged);
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
