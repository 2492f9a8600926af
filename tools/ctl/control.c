/* SPDX-License-Identifier: BSD-3-Clause */
/* partdnsctl stats, cache flush, lookup, dump and load, query, reload: requests to the running daemon. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "control/client.h"
#include "partition/partition.h"
#include "tools/ctl/ctl.h"

/* Send request, waiting at most timeout_ms for each reply byte; print the body to stdout on OK, the message and body to stderr on ERR. */
static int run_request_wait(struct ctl *c, const char *what, const char *request, int timeout_ms)
{
	char *body = NULL, msg[1024];
	size_t len = 0;
	int err = control_request(c->conf->server.control, request, timeout_ms, &body, &len, msg, sizeof(msg));
	if (err == 0) {
		fwrite(body, 1, len, stdout);
		free(body);
		return CTL_OK;
	}
	if (err == CONTROL_E_REMOTE) {
		ctl_error("%s failed: %s", what, msg);
		fwrite(body, 1, len, stderr);
		free(body);
		return CTL_ERROR;
	}
	ctl_error("%s: %s", what, msg);
	free(body);
	return CTL_ERROR;
}

static int run_request(struct ctl *c, const char *what, const char *request)
{
	return run_request_wait(c, what, request, CONTROL_TIMEOUT_MS);
}

enum { OPT_JSON = 256, OPT_PARTITION, OPT_TYPE, OPT_TOP, OPT_ZONE };

static int stats_opt(int opt, const char *arg, void *ctx)
{
	if (opt != OPT_JSON)
		return CTL_USAGE;
	*(int *)ctx = 1;
	return 0;
}

/* "VERB [--json]": a report of the daemon's, as lines or one JSON object. */
static int report_request(struct ctl *c, const char *verb, int argc, char **argv)
{
	static const struct option longs[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ NULL, 0, NULL, 0 },
	};
	int json = 0, first;
	int rc = ctl_getopt(c, argc, argv, "", longs, stats_opt, &json, &first);
	if (rc >= 0)
		return rc;
	if (argc - first != 0)
		return ctl_usage_error("%s: unexpected argument '%s'", verb, argv[first]);
	if ((rc = ctl_load_conf(c)) != CTL_OK)
		return rc;
	char request[32];
	snprintf(request, sizeof(request), "%s%s", verb, json ? " json" : "");
	return run_request(c, verb, request);
}

struct unmatched_opts {
	int json;
	const char *top;
};

static int unmatched_opt(int opt, const char *arg, void *ctx)
{
	struct unmatched_opts *o = ctx;
	if (opt == OPT_JSON) {
		o->json = 1;
		return 0;
	}
	if (opt != OPT_TOP)
		return CTL_USAGE;
	if (strspn(arg, "0123456789") != strlen(arg) || *arg == '\0' || strlen(arg) > 5)
		return ctl_usage_error("unmatched: --top needs a number, not '%s'", arg);
	o->top = arg;
	return 0;
}

int ctl_unmatched(struct ctl *c, int argc, char **argv)
{
	static const struct option longs[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "top", required_argument, NULL, OPT_TOP },
		{ NULL, 0, NULL, 0 },
	};
	struct unmatched_opts o = { 0, NULL };
	int first;
	int rc = ctl_getopt(c, argc, argv, "", longs, unmatched_opt, &o, &first);
	if (rc >= 0)
		return rc;
	if (argc - first != 0)
		return ctl_usage_error("unmatched: unexpected argument '%s'", argv[first]);
	if ((rc = ctl_load_conf(c)) != CTL_OK)
		return rc;
	char request[64];
	snprintf(request, sizeof(request), "unmatched top=%s%s", o.top ? o.top : "20", o.json ? " json" : "");
	return run_request(c, "unmatched", request);
}

struct steering_opts {
	int json;
	const char *zone;
};

static int steering_opt(int opt, const char *arg, void *ctx)
{
	struct steering_opts *o = ctx;
	if (opt == OPT_JSON) {
		o->json = 1;
		return 0;
	}
	if (opt != OPT_ZONE)
		return CTL_USAGE;
	/* a name: no spaces (the request is space-separated words) */
	if (*arg == '\0' || strlen(arg) > 253 || strpbrk(arg, " \t\n=") != NULL)
		return ctl_usage_error("steering: --zone needs a domain name, not '%s'", arg);
	o->zone = arg;
	return 0;
}

int ctl_steering(struct ctl *c, int argc, char **argv)
{
	static const struct option longs[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "zone", required_argument, NULL, OPT_ZONE },
		{ NULL, 0, NULL, 0 },
	};
	struct steering_opts o = { 0, NULL };
	int first;
	int rc = ctl_getopt(c, argc, argv, "", longs, steering_opt, &o, &first);
	if (rc >= 0)
		return rc;
	if (argc - first != 0)
		return ctl_usage_error("steering: unexpected argument '%s'", argv[first]);
	if ((rc = ctl_load_conf(c)) != CTL_OK)
		return rc;
	char request[320];
	snprintf(request, sizeof(request), "steering%s%s%s", o.zone ? " zone=" : "", o.zone ? o.zone : "",
	         o.json ? " json" : "");
	return run_request(c, "steering", request);
}

int ctl_stats(struct ctl *c, int argc, char **argv)
{
	return report_request(c, "stats", argc, argv);
}

int ctl_status(struct ctl *c, int argc, char **argv)
{
	return report_request(c, "status", argc, argv);
}

static int partition_opt(int opt, const char *arg, void *ctx)
{
	const char **partition = ctx;
	if (opt != OPT_PARTITION)
		return CTL_USAGE;
	if (*arg == '\0')
		return ctl_usage_error("cache flush: --partition needs a partition name");
	if (*partition != NULL)
		return ctl_usage_error("cache flush: --partition given twice");
	*partition = arg;
	return 0;
}

struct lookup_opts {
	const char *what; /* "cache lookup", "query": for messages */
	const char *partition, *type;
};

static int lookup_opt(int opt, const char *arg, void *ctx)
{
	struct lookup_opts *o = ctx;
	const char **slot = opt == OPT_PARTITION ? &o->partition : opt == OPT_TYPE ? &o->type : NULL;
	if (slot == NULL)
		return CTL_USAGE;
	const char *key = opt == OPT_PARTITION ? "--partition" : "--type";
	if (*arg == '\0')
		return ctl_usage_error("%s: %s needs a value", o->what, key);
	if (*slot != NULL)
		return ctl_usage_error("%s: %s given twice", o->what, key);
	/* the request is one line of space-separated key=value words */
	for (const char *p = arg; *p; p++)
		if (*p <= ' ' || *p == '=' || *p > '~')
			return ctl_usage_error("%s: bad %s value", o->what, key);
	/* RFC 3597's TYPEnnn: a 16-bit number, never cut to its low bits */
	const char *digits = arg + 4;
	if (opt == OPT_TYPE && strncasecmp(arg, "TYPE", 4) == 0 && *digits != '\0' &&
	    strspn(digits, "0123456789") == strlen(digits) &&
	    (strlen(digits) > 5 || strtoul(digits, NULL, 10) > 65535 || strtoul(digits, NULL, 10) == 0))
		return ctl_usage_error("%s: --type %s is out of range: a type number is 1..65535 (TYPE1..TYPE65535)",
		                       o->what, arg);
	*slot = arg;
	return 0;
}

/*
 * WHAT NAME [--type T] [--partition P] (argv[0] is WHAT's last word):
 * checked here, sent as "VERB name=NAME [type=T] [partition=P]".
 */
static int name_request(struct ctl *c, int argc, char **argv, const char *what, const char *verb, bool need_partition)
{
	static const struct option longs[] = {
		{ "partition", required_argument, NULL, OPT_PARTITION },
		{ "type", required_argument, NULL, OPT_TYPE },
		{ NULL, 0, NULL, 0 },
	};
	struct lookup_opts o = { what, NULL, NULL };
	int first;
	int rc = ctl_getopt(c, argc, argv, "", longs, lookup_opt, &o, &first);
	if (rc >= 0)
		return rc;
	if (argc - first != 1)
		return ctl_usage_error("%s: expected one NAME", what);
	if (need_partition && o.partition == NULL)
		return ctl_usage_error("%s: --partition is required (the city to ask as)", what);
	const char *text = argv[first];
	char name[256], why[256], shown[300];
	int bad = ctl_name_check(text, why, sizeof(why));
	if (bad == 0 && conf_name_normalize(text, name, sizeof(name)) != 0) {
		snprintf(why, sizeof(why), "not a domain name");
		bad = -1;
	}
	if (bad != 0) {
		ctl_show_text(text, strlen(text), shown, sizeof(shown));
		ctl_error("%s: invalid domain name '%s': %s", what, shown, why);
		return CTL_ERROR;
	}
	if ((rc = ctl_load_conf(c)) != CTL_OK)
		return rc;
	if (o.partition != NULL && (need_partition || strcmp(o.partition, "common") != 0) &&
	    ptable_find(c->conf->partitions.table, o.partition) <= 0) {
		ctl_error("%s: no partition '%s' in %s (partdnsctl partition list shows them)", what, o.partition,
		          c->conf_path);
		return CTL_ERROR;
	}
	char req[CONTROL_MAX_REQUEST];
	int n = snprintf(req, sizeof(req), "%s name=%s", verb, name);
	if (o.type != NULL)
		n += snprintf(req + n, sizeof(req) - (size_t)n, " type=%s", o.type);
	if (o.partition != NULL)
		snprintf(req + n, sizeof(req) - (size_t)n, " partition=%s", o.partition);
	return run_request(c, what, req);
}

/* query NAME [--type T] --partition P: resolve as a client of P would */
int ctl_query(struct ctl *c, int argc, char **argv)
{
	return name_request(c, argc, argv, "query", "query", true);
}

/*
 * cache dump FILE, cache load FILE: a cache snapshot the daemon writes or
 * reads itself, as its user (FILE made absolute here: the daemon's working
 * directory is not ours). A big cache takes seconds: waited for longer.
 */
static int cache_snap_request(struct ctl *c, const char *verb, int argc, char **argv)
{
	char what[32];
	snprintf(what, sizeof(what), "cache %s", verb);
	int first;
	int rc = ctl_getopt(c, argc - 1, argv + 1, "", NULL, NULL, NULL, &first);
	if (rc >= 0)
		return rc;
	if (argc - 1 - first != 1)
		return ctl_usage_error("%s: expected one FILE", what);
	const char *file = argv[1 + first];
	if (file[0] == '\0' || strpbrk(file, " \t\r\n") != NULL)
		return ctl_usage_error("%s: FILE must be a path without spaces", what);
	char abs[CONTROL_MAX_REQUEST - 64];
	if (file[0] == '/') {
		snprintf(abs, sizeof(abs), "%s", file);
	} else {
		char cwd[2048];
		if (getcwd(cwd, sizeof(cwd)) == NULL || strpbrk(cwd, " \t\r\n") != NULL) {
			ctl_error("%s: give FILE as an absolute path", what);
			return CTL_ERROR;
		}
		snprintf(abs, sizeof(abs), "%s/%s", cwd, file);
	}
	if ((rc = ctl_load_conf(c)) != CTL_OK)
		return rc;
	char req[CONTROL_MAX_REQUEST];
	snprintf(req, sizeof(req), "cache %s file=%s", verb, abs);
	return run_request_wait(c, what, req, 600000);
}

int ctl_cache(struct ctl *c, int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "lookup") == 0)
		return name_request(c, argc - 1, argv + 1, "cache lookup", "cache lookup", false);
	if (argc >= 2 && (strcmp(argv[1], "dump") == 0 || strcmp(argv[1], "load") == 0))
		return cache_snap_request(c, argv[1], argc, argv);
	if (argc < 2 || strcmp(argv[1], "flush") != 0)
		return ctl_usage_error("cache: expected flush, lookup, dump or load");
	static const struct option longs[] = {
		{ "partition", required_argument, NULL, OPT_PARTITION },
		{ NULL, 0, NULL, 0 },
	};
	const char *partition = NULL;
	int first;
	int rc = ctl_getopt(c, argc - 1, argv + 1, "", longs, partition_opt, &partition, &first);
	if (rc >= 0)
		return rc;
	int nops = argc - 1 - first;
	if (nops > 1) {
		char shown[128];
		const char *extra = argv[1 + first + 1];
		ctl_show_text(extra, strlen(extra), shown, sizeof(shown));
		return ctl_usage_error("cache flush: expected at most one NAME, got '%s' too", shown);
	}
	char name[256] = "";
	if (nops == 1) {
		const char *text = argv[1 + first];
		char why[256], shown[300];
		int bad = ctl_name_check(text, why, sizeof(why));
		if (bad == 0 && conf_name_normalize(text, name, sizeof(name)) != 0) {
			snprintf(why, sizeof(why), "not a domain name"); /* a safety net */
			bad = -1;
		}
		if (bad != 0) {
			ctl_show_text(text, strlen(text), shown, sizeof(shown));
			ctl_error("cache flush: invalid domain name '%s': %s", shown, why);
			return CTL_ERROR;
		}
	}
	if ((rc = ctl_load_conf(c)) != CTL_OK)
		return rc;
	if (partition != NULL && strcmp(partition, "common") != 0 &&
	    ptable_find(c->conf->partitions.table, partition) < 0) {
		ctl_error("cache flush: no partition '%s' in %s (partdnsctl partition list shows them)",
		          partition, c->conf_path);
		return CTL_ERROR;
	}
	char req[CONTROL_MAX_REQUEST];
	int n = snprintf(req, sizeof(req), "cache flush");
	if (name[0] != '\0')
		n += snprintf(req + n, sizeof(req) - (size_t)n, " name=%s", name);
	if (partition != NULL)
		snprintf(req + n, sizeof(req) - (size_t)n, " partition=%s", partition);
	return run_request(c, "cache flush", req);
}

int ctl_reload(struct ctl *c, int argc, char **argv)
{
	int first;
	int rc = ctl_getopt(c, argc, argv, "", NULL, NULL, NULL, &first);
	if (rc >= 0)
		return rc;
	if (argc - first != 0)
		return ctl_usage_error("reload: unexpected argument '%s'", argv[first]);
	if ((rc = ctl_load_conf(c)) != CTL_OK)
		return rc;
	return run_request(c, "reload", "reload");
}
