/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to partdnsctl: shared state and the subcommands. */
#pragma once

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "conf/conf.h"
#include "store/store.h"

/* Exit codes. */
enum {
	CTL_OK = 0,
	CTL_ERROR = 1, /* something failed; a message on stderr says what */
	CTL_USAGE = 2, /* bad command line; usage printed */
};

/* What every subcommand gets: options common to all, the config once loaded. */
struct ctl {
	const char *conf_path; /* -c, else $PARTDNS_CONF, else CONF_DEFAULT_PATH */
	const char *conf_from; /* which of the three, for messages */
	const char *store_dir; /* -s, overrides server.store; NULL = from the config */
	struct conf *conf;     /* after ctl_load_conf() */
	/* Who runs partdnsctl (ctl_user_current), for the store's who/when; taken
	 * first thing in main, before anything may switch to another user. */
	char user[STORE_USER_MAX + 1];
};

/* A subcommand: argv[0] is its name ("domain", "stats", ...). @return an exit code. */
int ctl_domain(struct ctl *c, int argc, char **argv);
int ctl_partition(struct ctl *c, int argc, char **argv);
int ctl_mapping(struct ctl *c, int argc, char **argv);
int ctl_stats(struct ctl *c, int argc, char **argv);
int ctl_status(struct ctl *c, int argc, char **argv);
int ctl_unmatched(struct ctl *c, int argc, char **argv);
int ctl_steering(struct ctl *c, int argc, char **argv);
int ctl_plan(struct ctl *c, int argc, char **argv);
int ctl_fleet(struct ctl *c, int argc, char **argv);
int ctl_cache(struct ctl *c, int argc, char **argv);
int ctl_query(struct ctl *c, int argc, char **argv);
int ctl_reload(struct ctl *c, int argc, char **argv);

/** Load c->conf_path once; config errors go to stderr. @return CTL_OK or CTL_ERROR. */
int ctl_load_conf(struct ctl *c);

/** Does the config name a shared store (store.etcd)? Then every store command works on it. */
bool ctl_shared(const struct ctl *c);

/** The store directory: -s or server.store (needs the config loaded); with store.etcd, where it is. */
const char *ctl_store_dir(const struct ctl *c);
/**
 * Run as root on a store the daemon's user owns (server.user): act as that
 * owner from here on (effective uid and gid), so that files LMDB creates or
 * grows stay the daemon's. The real uid stays, for the domains' records of
 * who changed them. No-op when not root or the directory is root's or absent.
 * @return 0, or -1 with a message printed.
 */
int ctl_store_as_owner(const char *dir);

/**
 * Open the store of the config (or -s); a message (prefixed with what) on
 * failure. The directory is made only with create (--create): a mistyped -s
 * or server.store must not become a new, empty store.
 * @param missing optional, for readonly: set when the directory exists but
 *        holds no store yet, which is then no error.
 * @return CTL_OK or CTL_ERROR.
 */
int ctl_store_open(struct ctl *c, const char *what, bool readonly, bool create, struct store **s, bool *missing);

/** A store call failed: "partdnsctl: WHAT: " + store_message on stderr. @return CTL_ERROR. */
int ctl_store_fail(struct ctl *c, const char *what, int err);

/** "partdnsctl: " + message + newline on stderr. */
void ctl_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/** Report a usage error (message, then the usage text) on stderr. @return CTL_USAGE. */
int ctl_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/** Print the usage text. */
void ctl_usage(FILE *out);
/** From now on ctl_usage and usage errors show only COMMAND's lines (NULL: all). */
void ctl_usage_for(const char *command);

/**
 * Parse the options common to every subcommand (-c FILE, -s DIR, -h) and the
 * subcommand's own with getopt_long; permutes argv so operands come last.
 * @param shortopts the subcommand's short options (without the common ones).
 * @param handle called for each of the subcommand's options (opt, optarg);
 *        returns 0, or an exit code to stop with.
 * @param first out: index of the first operand in argv.
 * @return -1 to go on, or an exit code (help printed: CTL_OK; bad option: CTL_USAGE).
 */
int ctl_getopt(struct ctl *c, int argc, char **argv, const char *shortopts,
               const struct option *longopts, int (*handle)(int opt, const char *arg, void *ctx),
               void *ctx, int *first);

/* Defaults for a domain from the config (edns.policy, edns.forward), and --force. */
struct ctl_defaults {
	enum conf_policy policy;
	size_t nforward; /* edns.forward targets in the config */
	bool force;      /* --force: a top-level domain may be flagged with its subtree */
};

/**
 * Build a storable domain from its parts, with the checks partdnsctl promises.
 * The root is refused, and a single-label name with subtree unless def->force:
 * either would send (nearly) every name through the EDNS pool.
 * @param policy -1: the default policy.
 * @param forward_opt how the targets were given, for messages ("--forward").
 * @return 0, or -1 with a message in err.
 */
int ctl_domain_build(const char *name, bool subtree, int policy, const char *const *forward,
                     size_t nforward, const struct ctl_defaults *def, const char *forward_opt,
                     struct store_domain *out, char *err, size_t errsize);

/**
 * Parse one line of the import format:
 * NAME [subtree|exact] [policy=iterate|forward] [forward=ADDR[@PORT],...] [#@ WHO/WHEN]
 * '#' at the start of a line or after a blank starts a comment; a comment
 * that starts "#@" is the who/when of ctl_domain_format_meta, read strictly
 * into out's added/added_by/changed/changed_by (unknown when absent).
 * @param line modified (tokenized).
 * @return 1 (*out filled), 0 (blank or comment), -1 with a message in err.
 */
int ctl_domain_parse_line(char *line, const struct ctl_defaults *def, struct store_domain *out,
                          char *err, size_t errsize);

/** The import-format line for d, without newline, into buf. @return length or -ENOSPC. */
int ctl_domain_format_line(const struct store_domain *d, char *buf, size_t size);

/**
 * d's who/when as the comment an export puts after its line:
 * "#@ added=TIME added_by=\"USER\" changed=TIME changed_by=\"USER\"", TIME
 * as 2024-05-01T10:00:00Z (UTC), each field only when known; "" (length 0)
 * when none is. ctl_domain_parse_line reads it back; other partdnsctl
 * versions take it for a comment.
 * @return length or -ENOSPC.
 */
int ctl_domain_format_meta(const struct store_domain *d, char *buf, size_t size);

/** t (Unix seconds) as 2024-05-01T10:00:00Z into buf (21 bytes); "-" for 0 (unknown). */
void ctl_time_format(int64_t t, char *buf, size_t size);

/**
 * The name recorded as who made a change: name (else the uid in decimal),
 * and " (sudo X)" when sudo_user X is set and another name; bytes other than
 * printable ASCII, blanks, quotes, backslashes and parentheses become '?';
 * at most STORE_USER_MAX bytes. Pure: for ctl_user_current and tests.
 */
void ctl_user_format(const char *name, unsigned long uid, const char *sudo_user, char *buf,
                     size_t size);

/** ctl_user_format for the real uid of this process and $SUDO_USER. */
void ctl_user_current(char *buf, size_t size);

/**
 * Check a domain name typed by an operator (cache flush NAME): "." or labels
 * of 1..63 letters, digits, '-' and '_' (not starting with '-'), at most 253
 * characters, an optional final dot.
 * @return 0, or -1 with what is wrong and where (label number, character
 *         position) in why.
 */
int ctl_name_check(const char *text, char *why, size_t size);

/** len bytes of s into buf for a message, bytes outside printable ASCII as \\xHH (cut to fit). */
void ctl_show_text(const char *s, size_t len, char *buf, size_t size);

