/* SPDX-License-Identifier: BSD-3-Clause */
/* partdns: the daemon's command line. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conf/conf.h"
#include "store/store.h"
#include "mapping/export.h"
#include "resolver/base/log.h"
#include "resolver/ops/daemon.h"
#include "resolver/ops/reload.h"
#include "resolver/base/privs.h"
#include "resolver/base/tls.h"
#include "resolver/base/ubctx.h"

/* PARTDNS_VERSION: the CMake project VERSION (resolver/CMakeLists.txt), as partdnsctl's */

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: partdns [-c FILE] [-t] [-d] [--takeover] | -V | -h\n"
	        "  -c FILE        configuration (default " CONF_DEFAULT_PATH ")\n"
	        "  -t             check the configuration, print every error, exit 0 (valid) or 1\n"
	        "  -d             debug logging (over server.log_level, until a reload)\n"
	        "  --takeover     share listen addresses another process serves (an upgrade without\n"
	        "                 downtime: start the new daemon, then stop the old one); without it\n"
	        "                 an address in use is an error\n"
	        "  -V, --version  print the version (-v too)\n"
	        "  -h, --help     this text\n"
	        "partdns runs in the foreground; SIGHUP reloads, SIGTERM/SIGINT stop it.\n");
}

int main(int argc, char **argv)
{
	const char *path = CONF_DEFAULT_PATH;
	int check = 0, takeover = 0, debug = 0, opt;
	static const struct option longopts[] = {
		{ "takeover", no_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	while ((opt = getopt_long(argc, argv, "c:tdvVh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'T': takeover = 1; break;
		case 'c': path = optarg; break;
		case 't': check = 1; break;
		case 'd': debug = 1; log_set_level(LOG_LEVEL_DEBUG); break;
		case 'V': /* as partdnsctl; -v stays for the scripts that use it */
		case 'v': printf("partdns %s\n", PARTDNS_VERSION); return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	struct conf *c = NULL;
	unsigned nerrors = 0;
	int rc = conf_load(path, stderr, &c, &nerrors);
	if (rc != 0) {
		if (nerrors > 0)
			fprintf(stderr, "%s: %u error(s)\n", path, nerrors);
		else
			fprintf(stderr, "%s: %s\n", path, conf_strerror(rc));
		return 1;
	}
	if (check) {
		char prefix[1100];
		snprintf(prefix, sizeof(prefix), "%s: warning: ", path);
		mapping_warn_unlocated(c->partitions.mapping, c->partitions.table, prefix, stderr);
		if (c->partitions.serial == 0 && ptable_size(c->partitions.table) > 0)
			fprintf(stderr, "%spartitions.serial is not set: exports carry a digest, which tells CDNs that "
			        "the table changed but not which table is newer (set e.g. serial: 1 and raise it with "
			        "every change of the plan)\n", prefix);
		/* the user and group must exist here, and root must not be kept by accident */
		struct privs p;
		char why[512];
		/* the user first, then the group with it: the error names the key that is wrong, where it is written */
		const char *key = "server.user";
		int bad = privs_plan(c->server.user, "", true, &p, why, sizeof(why));
		if (bad == 0 && c->server.control_group[0] != '\0') {
			key = "server.control_group";
			bad = privs_plan(c->server.user, c->server.control_group, true, &p, why, sizeof(why));
		}
		if (bad != 0) {
			char where[1100];
			if (conf_locate(path, key, where, sizeof(where)) == 0)
				fprintf(stderr, "%s: error: %s (key '%s')\n", where, why, key);
			else
				fprintf(stderr, "%s: error: %s (key '%s', not set: its default)\n", path, why, key);
			conf_free(c);
			return 1;
		}
		if (ubctx_check_files(c, why, sizeof(why)) != 0) {
			fprintf(stderr, "%s: error: %s\n", path, why);
			conf_free(c);
			return 1;
		}
		/* DoT: the certificate matches its key, and when it expires */
		struct tls_server *tls, *tls_https;
		if (reload_tls(c, c->server.nlisten_tls > 0, c->server.nlisten_https > 0, &tls, &tls_https, stderr) != 0) {
			conf_free(c);
			return 1;
		}
		if (tls == NULL) { /* one is enough to say what the certificate is */
			tls = tls_https;
			tls_https = NULL;
		}
		tls_server_unref(tls_https);
		if (tls != NULL) {
			time_t until = tls_server_not_after(tls);
			struct tm tm;
			char when[32];
			strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", gmtime_r(&until, &tm));
			printf("%s: TLS certificate for %s, valid until %s\n", path, tls_server_names(tls), when);
			tls_server_unref(tls);
		}
		printf("%s: configuration OK\n", path);
		conf_free(c);
		return 0;
	}
	if (debug) /* -d wins over server.log_level until a reload reads the file again */
		c->server.log_level = CONF_LOG_DEBUG;
	reload_apply_log(c);
	/* The store directory must exist (created only with server.create_store:
	 * true): a mistyped server.store must not start with an empty store. */
	rc = store_prepare_dir(c->server.store, c->server.create_store);
	if (rc != 0) {
		char msg[1024];
		log_err("%s", store_message(rc, c->server.store, msg, sizeof(msg)));
		conf_free(c);
		return 1;
	}
	struct daemon *d = daemon_new(path, c, takeover != 0);
	if (d == NULL)
		return 1;
	rc = daemon_run(d);
	daemon_free(d);
	return rc == 0 ? 0 : 1;
}
