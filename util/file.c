/* SPDX-License-Identifier: BSD-3-Clause */
/* Opening the files a config names: never blocking in open(), regular files only (see file.h). */
#include "util/file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* What is not a regular file, as an error: a directory says so, the rest is -EINVAL. */
static int not_regular(mode_t mode)
{
	return S_ISDIR(mode) ? -EISDIR : -EINVAL;
}

int file_open_nonblock(const char *path, struct stat *st)
{
	struct stat own;
	if (st == NULL)
		st = &own;
	/* O_NONBLOCK: open() of a FIFO with no writer returns at once instead of
	 * waiting for one; O_NOCTTY: a terminal named here does not become ours. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, st) != 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	if (S_ISDIR(st->st_mode)) {
		close(fd);
		return -EISDIR;
	}
	return fd;
}

int file_open_regular(const char *path, struct stat *st)
{
	struct stat own;
	if (st == NULL)
		st = &own;
	/* A look first: a device that is not a regular file is never opened. */
	if (stat(path, st) != 0)
		return -errno;
	if (!S_ISREG(st->st_mode))
		return not_regular(st->st_mode);
	int fd = file_open_nonblock(path, st);
	if (fd < 0)
		return fd;
	/* fstat of what was opened: the path may have been replaced since stat() */
	if (!S_ISREG(st->st_mode)) {
		close(fd);
		return not_regular(st->st_mode);
	}
	/* Reads of a regular file never wait on O_NONBLOCK anyway, but the
	 * descriptor may go to stdio or a library that expects a plain one. */
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

FILE *file_fopen_regular(const char *path)
{
	int fd = file_open_regular(path, NULL);
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	FILE *f = fdopen(fd, "r");
	if (f == NULL) {
		int e = errno;
		close(fd);
		errno = e;
	}
	return f;
}

FILE *file_fopen_write(const char *path)
{
	struct stat st;
	/* An existing path that is not a regular file is left alone (not truncated, not opened). */
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		errno = -not_regular(st.st_mode);
		return NULL;
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0666);
	if (fd < 0)
		return NULL;
	int e = 0;
	if (fstat(fd, &st) != 0) {
		e = errno;
	} else if (!S_ISREG(st.st_mode)) {
		e = -not_regular(st.st_mode);
	} else {
		int fl = fcntl(fd, F_GETFL);
		if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0)
			e = errno;
	}
	if (e != 0) {
		close(fd);
		errno = e;
		return NULL;
	}
	FILE *f = fdopen(fd, "w");
	if (f == NULL) {
		e = errno;
		close(fd);
		errno = e;
	}
	return f;
}

int file_check_regular(const char *path)
{
	int fd = file_open_regular(path, NULL);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

const char *file_strerror(int err)
{
	if (err < 0)
		err = -err;
	if (err == EINVAL)
		return "not a regular file (a FIFO, socket or device is refused)";
	return strerror(err);
}
