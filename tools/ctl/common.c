/* SPDX-License-Identifier: BSD-3-Clause */
/* partdnsctl plumbing: messages, usage, option parsing, loading the config. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store_etcd.h"
#include "tools/ctl/ctl.h"

static const char usage_text[] =
	"usage: partdnsctl [-c FILE] [-s DIR] COMMAND ...\n"
	"\n"
	"  domain add NAME [--subtree] [--policy iterate|forward] [--forward ADDR[@PORT]]...\n"
	"             [--create] [--force]\n"
	"  domain del NAME\n"
	"  domain list [--json]        with when (UTC) and by whom each was added, changed\n"
	"  domain import FILE [--create] [--force] [--replace]\n"
	"                              FILE '-' is stdin; all lines or none; --replace:\n"
	"                              the store becomes FILE's domains, the rest deleted\n"
	"  domain export               in the import format with who/when, to stdout\n"
	"  partition lookup ADDR       partition, mapped address(es), ECS sent\n"
	"  partition list\n"
	"  partition failover NAME [--to PARTITION|ADDRESS]\n"
	"                              NAME's flagged queries carry its standby identity\n"
	"                              (the config's standby key, or --to) until failback\n"
	"  partition failback NAME     back to its own mapped address\n"
	"  mapping export [--format csv|json|geofeed]\n"
	"  plan stage FILE             the next plan (partitions include format, a higher serial):\n"
	"                              published under /next/ (server.http), not live yet\n"
	"  plan activate [--at TIME]   it goes live now, or at TIME (YYYY-MM-DDTHH:MM:SSZ, +SECONDS)\n"
	"  plan cancel                 withdraw the staged plan before it goes live\n"
	"  plan show                   the config's serial, the activated and the staged plan\n"
	"  fleet status [--json]       store.etcd: every node's applied revision and plan serial;\n"
	"                              exit 1 when a node drifts (behind, another plan)\n"
	"  status [--json]             the running daemon: version, config, plan serial, reloads\n"
	"  stats [--json]              from the running daemon\n"
	"  steering [--zone Z] [--json]\n"
	"                              per city and flagged name: the addresses the authority\n"
	"                              answered, the ECS scope it echoed, or that it ignores ECS\n"
	"  unmatched [--top N] [--json]\n"
	"                              busiest client networks (/24, /48) in no partition\n"
	"  cache flush [NAME] [--partition P]\n"
	"  cache lookup NAME [--type T] [--partition P]\n"
	"                              what a client of P is answered from the cache\n"
	"  cache dump FILE | cache load FILE\n"
	"                              the daemon writes its cache to FILE, or loads it\n"
	"  query NAME [--type T] --partition P\n"
	"                              resolve as a client of P would (for steering)\n"
	"  reload                      the daemon re-reads config and partitions\n"
	"\n"
	"  --create   make the store directory if it does not exist (add, import; other\n"
	"             commands never create it, nor does a mistyped -s or server.store)\n"
	"  --force    flag a top-level domain with --subtree (the root is always refused)\n"
	"\n"
	"  -c, --config FILE   config file (else $PARTDNS_CONF, else " CONF_DEFAULT_PATH ")\n"
	"  -s, --store DIR     store directory (default: server.store of the config)\n"
	"  -h, --help          this text\n"
	"  -V, --version       print the version\n"
	"\n"
	"Exit status: 0 ok, 1 error, 2 usage error.\n";

static const char *usage_command; /* the command given (ctl_usage_for), or NULL */

void ctl_usage_for(const char *command)
{
	usage_command = command;
}

/* Is line (up to its '\n') one of command's: "  COMMAND ..." in the list? */
static bool usage_line_is(const char *line, const char *command)
{
	size_t n = strlen(command);
	return line[0] == ' ' && line[1] == ' ' && strncmp(line + 2, command, n) == 0 &&
	       (line[2 + n] == ' ' || line[2 + n] == '\n');
}

/*
 * The command given's entries of the list: the lines that start with its
 * name and the indented lines under them, copied to buf (NUL-terminated;
 * the usage text bounds them). @return their length, 0 for none.
 */
static size_t usage_entries(char *buf, size_t cap)
{
	size_t n = 0;
	bool in = false;
	for (const char *line = usage_text; *line != '\0';) {
		const char *end = strchr(line, '\n');
		size_t len = end != NULL ? (size_t)(end - line) + 1 : strlen(line);
		bool entry = line[0] == ' ' && line[1] == ' ' && line[2] >= 'a' && line[2] <= 'z';
		bool more = strncmp(line, "    ", 4) == 0; /* a continuation of the entry above */
		if (entry)
			in = usage_line_is(line, usage_command);
		else if (!more)
			in = false;
		if (in && n + len < cap) {
			memcpy(buf + n, line, len);
			n += len;
		}
		line += len;
	}
	buf[n] = '\0';
	return n;
}

/* Do the entries mention option opt ("--create") as a word? */
static bool usage_entries_use(const char *entries, const char *opt)
{
	size_t olen = strlen(opt);
	for (const char *hit = strstr(entries, opt); hit != NULL; hit = strstr(hit + 1, opt))
		if (hit[olen] == ' ' || hit[olen] == ']' || hit[olen] == '\n')
			return true;
	return false;
}

/*
 * The usage of the command given, or the whole text: a command's lines are
 * the list's lines that start with its name and the indented lines under
 * them, then the options every command takes. One text, so the two never
 * disagree.
 */
void ctl_usage(FILE *out)
{
	if (usage_command == NULL) {
		fputs(usage_text, out);
		return;
	}
	char entries[sizeof(usage_text)];
	if (usage_entries(entries, sizeof(entries)) == 0) {
		fputs(usage_text, out);
		return;
	}
	fputs("usage: partdnsctl [-c FILE] [-s DIR] COMMAND ...\n\n", out);
	fputs(entries, out);
	/* the notes on options ("  --create ...") that the lines above use */
	bool in_notes = false;
	for (const char *note = strstr(usage_text, "\n  --"); note != NULL; note = strstr(note + 1, "\n  --")) {
		const char *name = note + 3, *end = strchr(note + 1, '\n');
		size_t nlen = strcspn(name, " \n");
		char opt[32];
		if (nlen >= sizeof(opt) || end == NULL)
			continue;
		memcpy(opt, name, nlen);
		opt[nlen] = '\0';
		if (usage_entries_use(entries, opt)) {
			fputs(in_notes ? "" : "\n", out);
			in_notes = true;
			/* the note and its indented continuation lines */
			const char *stop = end + 1;
			while (strncmp(stop, "      ", 6) == 0 && strchr(stop, '\n') != NULL)
				stop = strchr(stop, '\n') + 1;
			fwrite(note + 1, 1, (size_t)(stop - note - 1), out);
		}
	}
	fputs("\n"
	      "  -c, --config FILE   config file (else $PARTDNS_CONF, else " CONF_DEFAULT_PATH ")\n"
	      "  -s, --store DIR     store directory (default: server.store of the config)\n"
	      "  -h, --help          this text (partdnsctl --help: every command)\n"
	      "  -V, --version       print the version\n"
	      "\n"
	      "Exit status: 0 ok, 1 error, 2 usage error.\n",
	      out);
}

void ctl_error(const char *fmt, ...)
{
	va_list ap;
	fputs("partdnsctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int ctl_usage_error(const char *fmt, ...)
{
	va_list ap;
	fputs("partdnsctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\n", stderr);
	if (usage_command == NULL) /* before a command: a pointer, not the 45 lines */
		fputs("usage: partdnsctl [-c FILE] [-s DIR] COMMAND ...\n"
		      "Try 'partdnsctl --help' for the commands.\n",
		      stderr);
	else {
		fputc('\n', stderr);
		ctl_usage(stderr);
	}
	return CTL_USAGE;
}

/* Options every subcommand accepts (so -c may also follow the command). */
#define COMMON_SHORT "c:s:hV"
#define COMMON_LONG_COUNT 4
static const struct option common_long[COMMON_LONG_COUNT] = {
	{ "config", required_argument, NULL, 'c' },
	{ "store", required_argument, NULL, 's' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
};

int ctl_getopt(struct ctl *c, int argc, char **argv, const char *shortopts,
               const struct option *longopts, int (*handle)(int opt, const char *arg, void *ctx),
               void *ctx, int *first)
{
	char shorts[64];
	struct option longs[24];
	size_t n = 0;
	/* Leading ':' so a missing argument is reported as such. */
	snprintf(shorts, sizeof(shorts), ":" COMMON_SHORT "%s", shortopts ? shortopts : "");
	for (size_t i = 0; i < COMMON_LONG_COUNT; i++)
		longs[n++] = common_long[i];
	for (size_t i = 0; longopts != NULL && longopts[i].name != NULL && n + 1 < 24; i++)
		longs[n++] = longopts[i];
	memset(&longs[n], 0, sizeof(longs[n]));

	optind = 0; /* glibc: re-initialize, also the permutation state */
	opterr = 0;
	int opt;
	while ((opt = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
		switch (opt) {
		case 'c':
			c->conf_path = optarg;
			break;
		case 's':
			c->store_dir = optarg;
			break;
		case 'h':
			ctl_usage(stdout);
			return CTL_OK;
		case 'V':
			printf("partdnsctl %s\n", PARTDNS_VERSION);
			return CTL_OK;
		case ':':
			return ctl_usage_error("%s: option '%s' needs an argument", argv[0],
			                       argv[optind - 1]);
		case '?':
			if (optopt != 0)
				return ctl_usage_error("%s: unknown option '-%c'", argv[0], optopt);
			return ctl_usage_error("%s: unknown option '%s'", argv[0], argv[optind - 1]);
		default: {
			int rc = handle != NULL ? handle(opt, optarg, ctx) : CTL_USAGE;
			if (rc != 0)
				return rc;
			break;
		}
		}
	}
	*first = optind;
	return -1;
}

int ctl_load_conf(struct ctl *c)
{
	if (c->conf != NULL)
		return CTL_OK;
	/* Collect the loader's output: warnings are `partdns -t`'s business, shown
	 * here only when the config fails to load. */
	char *msgs = NULL;
	size_t len = 0;
	FILE *err = open_memstream(&msgs, &len);
	unsigned nerrors = 0;
	int rc = conf_load(c->conf_path, err != NULL ? err : stderr, &c->conf, &nerrors);
	if (err != NULL)
		fclose(err);
	if (rc != 0) {
		if (msgs != NULL)
			fputs(msgs, stderr);
		const char *from = c->conf_from != NULL ? c->conf_from : "the default";
		if (rc == CONF_E_INVALID || rc == CONF_E_YAML)
			ctl_error("cannot load config %s (from %s): %s (%u error%s)", c->conf_path, from,
			          conf_strerror(rc), nerrors, nerrors == 1 ? "" : "s");
		else
			ctl_error("cannot load config %s (from %s): %s; give it with -c FILE or PARTDNS_CONF", c->conf_path,
			          from, conf_strerror(rc));
		free(msgs);
		c->conf = NULL;
		return CTL_ERROR;
	}
	free(msgs);
	return CTL_OK;
}

bool ctl_shared(const struct ctl *c)
{
	return c->conf != NULL && c->conf->store.etcd.nendpoints > 0;
}

const char *ctl_store_dir(const struct ctl *c)
{
	if (ctl_shared(c)) {
		static char label[256]; /* for messages: where the shared store is */
		snprintf(label, sizeof(label), "etcd %s%s %s", c->conf->store.etcd.endpoints[0].text,
		         c->conf->store.etcd.nendpoints > 1 ? ",..." : "", c->conf->store.etcd.prefix);
		return label;
	}
	if (c->store_dir != NULL)
		return c->store_dir;
	return c->conf != NULL ? c->conf->server.store : NULL;
}

static void back_to_root(void)
{
	if (seteuid(0) == 0) /* the user first: only root may change the group back */
		(void)setegid(0);
}

int ctl_store_as_owner(const char *dir)
{
	struct stat st;
	if (geteuid() != 0 || dir == NULL || stat(dir, &st) != 0 || st.st_uid == 0)
		return 0;
	/* group first: once the user is not root, the group cannot change */
	if (setegid(st.st_gid) != 0 || seteuid(st.st_uid) != 0) {
		ctl_error("cannot act as the owner (uid %u) of the store %s: %s", (unsigned)st.st_uid, dir,
		          strerror(errno));
		return -1;
	}
	/* Root again at exit: a process half switched (real uid root, effective
	 * not) is one nobody may trace, the leak checker of sanitizer builds
	 * included, and whatever runs at exit should see who started us. */
	static bool registered;
	if (!registered)
		registered = atexit(back_to_root) == 0;
	return 0;
}

/*
 * Open the store; a message (prefixed with what) on failure. The directory is
 * made only with create (--create): a mistyped -s or server.store must not
 * become a new, empty store.
 * @param missing optional, for readonly: set when the directory exists but
 *        holds no store yet, which is then no error.
 * @return CTL_OK or CTL_ERROR.
 */
int ctl_store_open(struct ctl *c, const char *what, bool readonly, bool create, struct store **s,
                   bool *missing)
{
	const char *dir = ctl_store_dir(c);
	if (missing != NULL)
		*missing = false;
	if (ctl_shared(c)) {
		/* with store.etcd the fleet's store is the truth: the local LMDB
		 * store is the daemon's copy, written only by the daemon */
		if (c->store_dir != NULL) {
			ctl_error("%s: store.etcd is set in %s: partdnsctl works on the shared store, never on a "
			          "local one (-s %s); drop -s",
			          what, c->conf_path, c->store_dir);
			return CTL_ERROR;
		}
		int err = store_etcd_open(c->conf, s);
		return err == 0 ? CTL_OK : ctl_store_fail(c, what, err);
	}
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
		size_t nrec = 0;
		unsigned from = store_migrated_from(*s, &nrec);
		if (from != 0)
			fprintf(stderr,
			        "partdnsctl: note: store %s: migrated from schema version %u to %d (%zu "
			        "record%s rewritten); an older partdns cannot open it any more\n",
			        dir, from, STORE_SCHEMA, nrec, nrec == 1 ? "" : "s");
		return CTL_OK;
	}
	if (readonly && err == -ENOENT && missing != NULL && store_prepare_dir(dir, false) == 0) {
		*missing = true;
		return CTL_OK;
	}
	return ctl_store_fail(c, what, err);
}

int ctl_store_fail(struct ctl *c, const char *what, int err)
{
	char msg[1024];
	ctl_error("%s: %s", what, store_message(err, ctl_store_dir(c), msg, sizeof(msg)));
	return CTL_ERROR;
}

void ctl_show_text(const char *s, size_t len, char *buf, size_t size)
{
	size_t n = 0;
	for (size_t i = 0; i < len && n + 5 < size; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch >= 0x20 && ch < 0x7f)
			buf[n++] = (char)ch;
		else
			n += (size_t)snprintf(buf + n, size - n, "\\x%02x", ch);
	}
	buf[n] = '\0';
}

static bool name_char(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '-' || ch == '_';
}

int ctl_name_check(const char *text, char *why, size_t size)
{
	size_t len = strlen(text);
	if (len == 0) {
		snprintf(why, size, "the name is empty");
		return -1;
	}
	if (strcmp(text, ".") == 0)
		return 0;
	size_t end = text[len - 1] == '.' ? len - 1 : len;
	if (end > 253) {
		snprintf(why, size, "longer than 253 characters");
		return -1;
	}
	unsigned label = 1;
	size_t start = 0;
	for (size_t i = 0; i <= end; i++) {
		if (i == end || text[i] == '.') {
			size_t llen = i - start;
			if (llen == 0) {
				snprintf(why, size, "label %u (at character %zu) is empty", label, start + 1);
				return -1;
			}
			if (llen > 63) {
				snprintf(why, size, "label %u (at character %zu) is longer than 63 characters",
				         label, start + 1);
				return -1;
			}
			label++;
			start = i + 1;
			continue;
		}
		unsigned char ch = (unsigned char)text[i];
		if (name_char(ch) && !(ch == '-' && i == start))
			continue;
		size_t llen = strcspn(text + start, ".");
		if (start + llen > end)
			llen = end - start;
		char shown[80], bad[8];
		ctl_show_text(text + start, llen > 63 ? 63 : llen, shown, sizeof(shown));
		ctl_show_text((const char *)&text[i], 1, bad, sizeof(bad));
		if (ch == '-')
			snprintf(why, size, "label %u '%s' (at character %zu) starts with '-'", label,
			         shown, start + 1);
		else
			snprintf(why, size,
			         "label %u '%s' (at character %zu) has '%s' (character %zu); use "
			         "letters, digits, '-' and '_'",
			         label, shown, start + 1, bad, i + 1);
		return -1;
	}
	return 0;
}
