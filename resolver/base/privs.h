/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Who the daemon runs as (server.user, server.control_group). partdns binds
 * its ports and opens the store as whoever starts it, then, when started as
 * root, gives the store and the control socket to server.user and becomes
 * that user for good, before any thread serves a query.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct privs {
	bool drop;         /* started as root and server.user names another user */
	bool chown;        /* may give files away (running as root) */
	uid_t uid;         /* the user to run as (the current one when !drop) */
	gid_t gid;         /* its primary group */
	gid_t group;       /* the control socket's group: control_group's, else gid */
	char user[64];
};

/**
 * Work out what to become. Rules (euid = who started partdns):
 * - user "" started as root: refused (an operator must choose; "root" keeps it);
 * - user "" or the current user's name, started as non-root: stay;
 * - user "root" started as root: stay root, on purpose;
 * - another user started as root: drop to it; it must exist;
 * - another user started as non-root: refused (only root can switch).
 * With check_only (partdns -t), only that the user and group exist and that
 * root is not kept by accident are checked: -t may run as anyone.
 * @return 0, or -1 with an operator's message (and a hint) in err.
 */
int privs_plan(const char *user, const char *control_group, bool check_only, struct privs *out, char *err,
               size_t errlen);

/**
 * Give path to the user (and the control group, for the socket) with mode,
 * when running as root; otherwise only set the group and mode where allowed.
 * Symbolic links are not followed. @return 0 or -errno.
 */
int privs_own(const struct privs *p, const char *path, bool socket_group, mode_t mode);

/**
 * Become the user for good: supplementary groups, group, user; then make
 * sure root cannot be regained. No-op when !p->drop.
 * @return 0, or -errno (the daemon must not go on).
 */
int privs_drop(const struct privs *p);
