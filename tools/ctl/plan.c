/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * partdnsctl plan stage FILE / plan activate [--at TIME] / plan cancel / plan show: the
 * next partition plan, published under /next/ before it goes live, so CDNs
 * learn new mapped addresses before clients are steered by them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conf/text.h"
#include "partition/partition.h"
#include "tools/ctl/ctl.h"

/* "YYYY-MM-DDTHH:MM:SSZ" (UTC) or "+N" (seconds from now). @return the time, or -1. */
static int64_t parse_when(const char *s, int64_t now)
{
	if (s[0] == '+') {
		char *end;
		errno = 0;
		unsigned long long n = strtoull(s + 1, &end, 10);
		if (errno != 0 || end == s + 1 || *end != '\0' || n > 366ull * 86400)
			return -1;
		return now + (int64_t)n;
	}
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	const char *end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (end == NULL || *end != '\0')
		return -1;
	time_t t = timegm(&tm);
	return t < 0 ? -1 : (int64_t)t;
}

static void show_time(int64_t t, char *buf, size_t size)
{
	time_t tt = (time_t)t;
	struct tm tm;
	if (t <= 0 || gmtime_r(&tt, &tm) == NULL || strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(buf, size, "-");
}

static int plan_stage(struct ctl *c, int argc, char **argv)
{
	int first;
	int rc = ctl_getopt(c, argc, argv, "", NULL, NULL, NULL, &first);
	if (rc >= 0)
		return rc;
	if (argc - first != 1)
		return ctl_usage_error("plan stage: expected one FILE (in the partitions include format)");
	const char *file = argv[first];
	if ((rc = ctl_load_conf(c)) != CTL_OK)
		return rc;
	char *text;
	size_t len;
	int err = conf_read_file(file, true, &text, &len);
	if (err != 0) {
		ctl_error("plan stage: cannot read %s: %s", file, err == -EINVAL ? "not a regular file" : strerror(-err));
		return CTL_ERROR;
	}
	/* checked as the daemon will run it: with this config, in place of its include */
	struct conf *staged = NULL;
	unsigned nerr = 0;
	err = conf_load_plan(c->conf_path, text, len, file, stderr, &staged, &nerr);
	if (err != 0) {
		ctl_error("plan stage: %s is not a plan this config can run (%u error(s) above); nothing staged", file,
		          nerr);
		free(text);
		return CTL_ERROR;
	}
	uint32_t serial = staged->partitions.serial;
	size_t nparts = ptable_size(staged->partitions.table);
	char why[512];
	int bad = serial == 0 ? -1 : conf_plan_successor(c->conf, staged, why, sizeof(why));
	if (serial == 0)
		snprintf(why, sizeof(why), "%s has no serial: a staged plan must say which it is (serial: N, higher "
		         "than the running plan's)", file);
	else if (bad == 0 && serial <= c->conf->partitions.serial)
		snprintf(why, sizeof(why), "its serial %u is not higher than the config's %u", serial,
		         c->conf->partitions.serial), bad = -1;
	conf_free(staged);
	struct store *s = NULL;
	if (bad == 0 && (rc = ctl_store_open(c, "plan stage", false, false, &s, NULL)) != CTL_OK) {
		free(text);
		return rc;
	}
	if (bad == 0) {
		struct store_plan active;
		if (store_plan_get(s, STORE_PLAN_ACTIVE, &active) == 0) {
			if (serial <= active.serial) {
				snprintf(why, sizeof(why), "its serial %u is not higher than the activated plan's %u", serial,
				         active.serial);
				bad = -1;
			}
			store_plan_clear(&active);
		}
	}
	if (bad != 0) {
		if (s != NULL)
			store_close(s);
		ctl_error("plan stage: %s", why);
		free(text);
		return CTL_ERROR;
	}
	struct store_plan p = { .serial = serial, .staged_at = (int64_t)time(NULL), .text = text, .len = len };
	snprintf(p.by, sizeof(p.by), "%s", c->user);
	err = store_plan_put(s, STORE_PLAN_NEXT, &p);
	store_close(s);
	free(text);
	if (err != 0)
		return ctl_store_fail(c, "plan stage", err);
	printf("staged plan %u (%zu partitions) from %s: published under /next/ by server.http; it goes live "
	       "with partdnsctl plan activate [--at TIME]\n",
	       serial, nparts, file);
	return CTL_OK;
}

enum { OPT_AT = 400 };

static int at_opt(int opt, const char *arg, void *ctx)
{
	if (opt != OPT_AT)
		return CTL_USAGE;
	int64_t t = parse_when(arg, (int64_t)time(NULL));
	if (t < 0)
		return ctl_usage_error("plan activate: --at takes YYYY-MM-DDTHH:MM:SSZ (UTC) or +SECONDS, not '%s'", arg);
	*(int64_t *)ctx = t;
	return 0;
}

static int plan_activate(struct ctl *c, int argc, char **argv)
{
	static const struct option longs[] = {
		{ "at", required_argument, NULL, OPT_AT },
		{ NULL, 0, NULL, 0 },
	};
	int64_t at = 0;
	int first;
	int rc = ctl_getopt(c, argc, argv, "", longs, at_opt, &at, &first);
	if (rc >= 0)
		return rc;
	if (argc - first != 0)
		return ctl_usage_error("plan activate: unexpected argument '%s'", argv[first]);
	if ((rc = ctl_load_conf(c)) != CTL_OK)
		return rc;
	struct store *s;
	if ((rc = ctl_store_open(c, "plan activate", false, false, &s, NULL)) != CTL_OK)
		return rc;
	struct store_plan p;
	int err = store_plan_get(s, STORE_PLAN_NEXT, &p);
	if (err == -ENOENT) {
		store_close(s);
		ctl_error("plan activate: no plan is staged (partdnsctl plan stage FILE first)");
		return CTL_ERROR;
	}
	if (err != 0) {
		store_close(s);
		return ctl_store_fail(c, "plan activate", err);
	}
	int64_t now = (int64_t)time(NULL);
	p.activate_at = at != 0 ? at : now;
	err = store_plan_put(s, STORE_PLAN_NEXT, &p);
	store_close(s);
	char when[32];
	show_time(p.activate_at, when, sizeof(when));
	printf("plan %u goes live %s%s; the daemon switches within a second of it (partdnsctl status: plan_serial)\n",
	       p.serial, p.activate_at <= now ? "now" : "at ", p.activate_at <= now ? "" : when);
	store_plan_clear(&p);
	return err != 0 ? ctl_store_fail(c, "plan activate", err) : CTL_OK;
}

static void show_one(const char *what, const struct store_plan *p)
{
	char staged[32], at[32], live[32];
	show_time(p->staged_at, staged, sizeof(staged));
	show_time(p->activate_at, at, sizeof(at));
	show_time(p->activated_at, live, sizeof(live));
	printf("%s serial=%u staged=%s by=%s activate_at=%s activated=%s bytes=%zu\n", what, p->serial, staged,
	       p->by[0] ? p->by : "-", at, live, p->len);
}

static int plan_show(struct ctl *c, int argc, char **argv)
{
	int first;
	int rc = ctl_getopt(c, argc, argv, "", NULL, NULL, NULL, &first);
	if (rc >= 0)
		return rc;
	if (argc - first != 0)
		return ctl_usage_error("plan show: unexpected argument '%s'", argv[first]);
	if ((rc = ctl_load_conf(c)) != CTL_OK)
		return rc;
	printf("config serial=%u\n", c->conf->partitions.serial);
	struct store *s;
	bool missing;
	if ((rc = ctl_store_open(c, "plan show", true, false, &s, &missing)) != CTL_OK)
		return rc;
	if (missing)
		return CTL_OK;
	static const char *const which[] = { STORE_PLAN_ACTIVE, STORE_PLAN_NEXT };
	for (size_t i = 0; i < 2; i++) {
		struct store_plan p;
		int err = store_plan_get(s, which[i], &p);
		if (err == 0)
			show_one(which[i], &p);
		store_plan_clear(&p);
		if (err != 0 && err != -ENOENT) {
			store_close(s);
			return ctl_store_fail(c, "plan show", err);
		}
	}
	store_close(s);
	return CTL_OK;
}

/* A staged plan withdrawn before it went live (a mistake seen on /next/): nothing changes for clients. */
static int plan_cancel(struct ctl *c, int argc, char **argv)
{
	int first;
	int rc = ctl_getopt(c, argc, argv, "", NULL, NULL, NULL, &first);
	if (rc >= 0)
		return rc;
	if (argc - first != 0)
		return ctl_usage_error("plan cancel: unexpected argument '%s'", argv[first]);
	if ((rc = ctl_load_conf(c)) != CTL_OK)
		return rc;
	struct store *s;
	if ((rc = ctl_store_open(c, "plan cancel", false, false, &s, NULL)) != CTL_OK)
		return rc;
	int err = store_plan_del(s, STORE_PLAN_NEXT);
	store_close(s);
	if (err == -ENOENT) {
		ctl_error("plan cancel: no plan is staged");
		return CTL_ERROR;
	}
	if (err != 0)
		return ctl_store_fail(c, "plan cancel", err);
	printf("staged plan withdrawn: /next/ is empty, the running plan is unchanged\n");
	return CTL_OK;
}

int ctl_plan(struct ctl *c, int argc, char **argv)
{
	if (argc < 2)
		return ctl_usage_error("plan: expected stage, activate, cancel or show");
	const char *verb = argv[1];
	if (strcmp(verb, "stage") == 0)
		return plan_stage(c, argc - 1, argv + 1);
	if (strcmp(verb, "activate") == 0)
		return plan_activate(c, argc - 1, argv + 1);
	if (strcmp(verb, "show") == 0)
		return plan_show(c, argc - 1, argv + 1);
	if (strcmp(verb, "cancel") == 0)
		return plan_cancel(c, argc - 1, argv + 1);
	return ctl_usage_error("plan: unknown subcommand '%s'", verb);
}
