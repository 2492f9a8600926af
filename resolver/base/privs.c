/* SPDX-License-Identifier: BSD-3-Clause */
/* server.user and server.control_group: see privs.h. */
#include "resolver/base/privs.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#define ROOT_HINT "set server.user to the user to run as after binding (the package makes \"partdns\"), " \
                  "or server.user: root to keep root on purpose"

static int lookup_user(const char *name, struct privs *out, char *err, size_t errlen)
{
	errno = 0;
	struct passwd *pw = getpwnam(name);
	if (pw == NULL) {
		snprintf(err, errlen, "server.user: no user '%s' on this machine (create it, e.g. adduser --system "
		         "--group %s)", name, name);
		return -1;
	}
	out->uid = pw->pw_uid;
	out->gid = pw->pw_gid;
	out->group = pw->pw_gid;
	return 0;
}

int privs_plan(const char *user, const char *control_group, bool check_only, struct privs *out, char *err,
               size_t errlen)
{
	memset(out, 0, sizeof(*out));
	uid_t euid = geteuid();
	bool root = euid == 0;
	out->uid = euid;
	out->gid = getegid();
	out->group = out->gid;
	out->chown = root;
	if (strlen(user) >= sizeof(out->user)) {
		snprintf(err, errlen, "server.user: '%s' is longer than %zu characters", user, sizeof(out->user) - 1);
		return -1;
	}
	snprintf(out->user, sizeof(out->user), "%s", user);
	if (user[0] == '\0') {
		if (root) {
			snprintf(err, errlen, "refusing to run as root: " ROOT_HINT);
			return -1;
		}
	} else if (strcmp(user, "root") == 0) {
		if (!root && !check_only) {
			snprintf(err, errlen, "server.user is root, but partdns was started as uid %u: start it as root, "
			         "or set server.user to this user", (unsigned)euid);
			return -1;
		}
	} else {
		struct privs want;
		if (lookup_user(user, &want, err, errlen) != 0)
			return -1;
		if (root) {
			out->drop = want.uid != 0; /* a second name for uid 0 stays root, as "root" does */
			out->uid = want.uid;
			out->gid = want.gid;
			out->group = want.gid;
		} else if (want.uid != euid && !check_only) {
			snprintf(err, errlen, "server.user is %s, but partdns was started as uid %u, which cannot switch "
			         "users: start it as root (it drops to %s after binding) or as %s", user, (unsigned)euid,
			         user, user);
			return -1;
		}
	}
	if (control_group[0] != '\0') {
		struct group *gr = getgrnam(control_group);
		if (gr == NULL) {
			snprintf(err, errlen, "server.control_group: no group '%s' on this machine", control_group);
			return -1;
		}
		out->group = gr->gr_gid;
	}
	return 0;
}

int privs_own(const struct privs *p, const char *path, bool socket_group, mode_t mode)
{
	uid_t uid = p->chown ? p->uid : (uid_t)-1;
	gid_t gid = socket_group ? p->group : p->gid;
	if (fchownat(AT_FDCWD, path, uid, gid, AT_SYMLINK_NOFOLLOW) != 0)
		return -errno;
	struct stat st;
	if (fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return -errno;
	if (S_ISLNK(st.st_mode))
		return 0; /* a link's mode means nothing; chmod would follow it */
	return chmod(path, mode) != 0 ? -errno : 0;
}

int privs_drop(const struct privs *p)
{
	if (!p->drop)
		return 0;
	/* Groups first: after setuid there is no right left to change them. */
	if (initgroups(p->user, p->gid) != 0 || setgid(p->gid) != 0 || setuid(p->uid) != 0)
		return -errno;
	if (setuid(0) == 0 || seteuid(0) == 0) /* dropped for good, or not at all */
		return -EPERM;
	/* setuid made the process undumpable: no core dump for the operator (and
	 * no leak check in sanitizer builds). Every uid is the user's now and
	 * nothing of root's is held but the descriptors partdns opened on purpose,
	 * so a core is as safe as the user's own files. */
	prctl(PR_SET_DUMPABLE, 1);
	return 0;
}
