/* SPDX-License-Identifier: BSD-3-Clause */
/* Who runs partdnsctl: the name the store records with a change. */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/ctl/ctl.h"

/* Longest parts kept: "%.32s (sudo %.24s)" is at most STORE_USER_MAX bytes. */
#define USER_NAME_MAX 32
#define USER_SUDO_MAX 24

_Static_assert(USER_NAME_MAX + sizeof(" (sudo )") - 1 + USER_SUDO_MAX <= STORE_USER_MAX,
               "a recorded user must fit a store record");

/*
 * Copy at most max bytes of src into dst (size > max), each byte outside
 * what a name needs turned into '?': user names come from NSS (LDAP, ...)
 * and SUDO_USER from the environment, and must neither break the quoted
 * export format nor fake a column or a terminal escape in a listing.
 */
static void copy_clean(char *dst, const char *src, size_t max)
{
	size_t i = 0;
	for (; src[i] != '\0' && i < max; i++) {
		unsigned char ch = (unsigned char)src[i];
		bool ok = ch > 0x20 && ch < 0x7f && ch != '"' && ch != '\\' && ch != '(' && ch != ')';
		dst[i] = ok ? (char)ch : '?';
	}
	dst[i] = '\0';
}

void ctl_user_format(const char *name, unsigned long uid, const char *sudo_user, char *buf,
                     size_t size)
{
	char base[USER_NAME_MAX + 1], sudo[USER_SUDO_MAX + 1];
	if (name != NULL && *name != '\0')
		copy_clean(base, name, USER_NAME_MAX);
	else
		snprintf(base, sizeof(base), "%lu", uid);
	if (sudo_user != NULL && *sudo_user != '\0') {
		copy_clean(sudo, sudo_user, USER_SUDO_MAX);
		/* "alice (sudo alice)" says nothing more than "alice" */
		if (strcmp(sudo, base) != 0) {
			snprintf(buf, size, "%s (sudo %s)", base, sudo);
			return;
		}
	}
	snprintf(buf, size, "%s", base);
}

void ctl_user_current(char *buf, size_t size)
{
	/* The real uid: who ran the command, whatever it switches to later to
	 * open the store. SUDO_USER is what sudo says about who called it. */
	uid_t uid = getuid();
	struct passwd *pw = getpwuid(uid);
	ctl_user_format(pw != NULL ? pw->pw_name : NULL, (unsigned long)uid, getenv("SUDO_USER"), buf,
	                size);
}
