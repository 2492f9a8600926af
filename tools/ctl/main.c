/* SPDX-License-Identifier: BSD-3-Clause */
/* partdnsctl: manage the EDNS-domain store, inspect partitions, talk to the daemon. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"
#include "tools/ctl/ctl.h"

struct command {
	const char *name;
	int (*run)(struct ctl *c, int argc, char **argv);
};

static const struct command commands[] = {
	{ "domain", ctl_domain },   { "partition", ctl_partition }, { "mapping", ctl_mapping },
	{ "stats", ctl_stats },     { "cache", ctl_cache },         { "reload", ctl_reload },
	{ "query", ctl_query },     { "status", ctl_status },       { "unmatched", ctl_unmatched },
	{ "steering", ctl_steering }, { "plan", ctl_plan }, { "fleet", ctl_fleet },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	struct ctl c = { .conf_path = CONF_DEFAULT_PATH, .conf_from = "the default" };
	/* Before anything else, in particular before partdnsctl may switch to
	 * the store's owner: the store records who ran the command. */
	ctl_user_current(c.user, sizeof(c.user));
	const char *env = getenv("PARTDNS_CONF");
	if (env != NULL && *env != '\0') {
		c.conf_path = env;
		c.conf_from = "PARTDNS_CONF";
	}
	static const struct option longs[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "store", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;
	opterr = 0;
	/* '+': stop at the command; its own options are parsed by the command. */
	while ((opt = getopt_long(argc, argv, "+:c:s:hV", longs, NULL)) != -1) {
		switch (opt) {
		case 'c':
			c.conf_path = optarg;
			c.conf_from = "-c";
			break;
		case 's':
			c.store_dir = optarg;
			break;
		case 'h':
			ctl_usage(stdout);
			return CTL_OK;
		case 'V':
			printf("partdnsctl %s\n", PARTDNS_VERSION);
			return CTL_OK;
		case ':':
			return ctl_usage_error("option '%s' needs an argument", argv[optind - 1]);
		default:
			if (optopt != 0)
				return ctl_usage_error("unknown option '-%c'", optopt);
			return ctl_usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc) {
		ctl_error("no command given");
		fputs("usage: partdnsctl [-c FILE] [-s DIR] COMMAND ...\n"
		      "Try 'partdnsctl --help' for the commands.\n",
		      stderr);
		return CTL_USAGE;
	}
	const char *name = argv[optind];
	if (strcmp(name, "help") == 0) {
		ctl_usage(stdout);
		return CTL_OK;
	}
	const struct command *cmd = commands;
	while (cmd->name != NULL && strcmp(cmd->name, name) != 0)
		cmd++;
	if (cmd->name == NULL)
		return ctl_usage_error("unknown command '%s'", name);
	/* from here on, help and usage errors show this command's lines only */
	ctl_usage_for(name);
	/* COMMAND [SUB] --help / -h, --version / -V: before the command's own
	 * parsing, which may need a config or a daemon */
	for (int i = optind + 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			ctl_usage(stdout);
			return CTL_OK;
		}
		if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "-V") == 0) {
			printf("partdnsctl %s\n", PARTDNS_VERSION);
			return CTL_OK;
		}
	}
	int rc = cmd->run(&c, argc - optind, argv + optind);
	if (c.conf != NULL)
		conf_free(c.conf);
	/* Output that did not reach its destination is a failure (e.g. a full disk). */
	if (fflush(stdout) != 0 || ferror(stdout)) {
		ctl_error("cannot write to standard output");
		return CTL_ERROR;
	}
	return rc;
}
