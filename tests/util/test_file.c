/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * util/file.h: a FIFO, a socket, a device or a directory named where a file
 * is expected is refused at once; before the helpers, open() of a FIFO
 * without a writer blocked for good. An alarm turns a blocking open into a
 * failed test instead of a hung one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "util/file.h"

static char dir[64];
static char regular[96], fifo[96], sock[96], sub[96], missing[96];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/partdns-test-file-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(regular, sizeof(regular), "%s/regular", dir);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(sock, sizeof(sock), "%s/sock", dir);
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	snprintf(missing, sizeof(missing), "%s/missing", dir);
	FILE *f = fopen(regular, "w");
	if (f == NULL || fputs("hello\n", f) < 0 || fclose(f) != 0)
		return -1;
	if (mkfifo(fifo, 0600) != 0 || mkdir(sub, 0700) != 0)
		return -1;
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		return -1;
	close(s); /* the socket file stays */
	/* a helper that blocks is a failure, not a hang: SIGALRM ends the test */
	alarm(10);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	alarm(0);
	unlink(regular);
	unlink(fifo);
	unlink(sock);
	rmdir(sub);
	rmdir(dir);
	return 0;
}

static void test_regular(void **state)
{
	(void)state;
	struct stat st;
	int fd = file_open_regular(regular, &st);
	assert_true(fd >= 0);
	assert_true(S_ISREG(st.st_mode));
	int fl = fcntl(fd, F_GETFL);
	assert_int_equal(fl & O_NONBLOCK, 0); /* handed back in blocking mode */
	assert_int_not_equal(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
	char buf[16] = "";
	assert_int_equal(read(fd, buf, sizeof(buf) - 1), 6);
	assert_string_equal(buf, "hello\n");
	close(fd);

	FILE *f = file_fopen_regular(regular);
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	assert_string_equal(buf, "hello\n");
	fclose(f);
	assert_int_equal(file_check_regular(regular), 0);
}

static void test_fifo_refused(void **state)
{
	(void)state;
	/* no writer: a plain open(O_RDONLY) would wait here until one came */
	assert_int_equal(file_open_regular(fifo, NULL), -EINVAL);
	assert_int_equal(file_check_regular(fifo), -EINVAL);
	errno = 0;
	assert_null(file_fopen_regular(fifo));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(file_strerror(-EINVAL), "not a regular file"));
	assert_non_null(strstr(file_strerror(EINVAL), "not a regular file"));
	/* for writing too: fopen(fifo, "w") would wait for a reader */
	errno = 0;
	assert_null(file_fopen_write(fifo));
	assert_int_equal(errno, EINVAL);
	struct stat st;
	assert_int_equal(stat(fifo, &st), 0);
	assert_true(S_ISFIFO(st.st_mode)); /* left as it was */
}

static void test_other_kinds(void **state)
{
	(void)state;
	assert_int_equal(file_open_regular(sock, NULL), -EINVAL);
	assert_int_equal(file_open_regular("/dev/null", NULL), -EINVAL);
	assert_int_equal(file_open_regular(sub, NULL), -EISDIR);
	assert_int_equal(file_open_regular(missing, NULL), -ENOENT);
	assert_int_equal(file_check_regular(missing), -ENOENT);
	assert_string_equal(file_strerror(-ENOENT), strerror(ENOENT));
	errno = 0;
	assert_null(file_fopen_write(sub));
	assert_int_equal(errno, EISDIR);
}

static void test_nonblock(void **state)
{
	(void)state;
	/* the main config may be a pipe: opened at once, left non-blocking for the caller's deadline */
	struct stat st;
	int fd = file_open_nonblock(fifo, &st);
	assert_true(fd >= 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_int_not_equal(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	close(fd);
	assert_int_equal(file_open_nonblock(sub, NULL), -EISDIR);
	fd = file_open_nonblock(regular, &st);
	assert_true(fd >= 0 && S_ISREG(st.st_mode));
	close(fd);
}

static void test_write(void **state)
{
	(void)state;
	char path[160];
	snprintf(path, sizeof(path), "%s/new", dir);
	FILE *f = file_fopen_write(path);
	assert_non_null(f);
	assert_int_equal(fcntl(fileno(f), F_GETFL) & O_NONBLOCK, 0);
	fputs("one\n", f);
	assert_int_equal(fclose(f), 0);
	f = file_fopen_write(path); /* truncates, as fopen "w" */
	assert_non_null(f);
	fputs("2\n", f);
	assert_int_equal(fclose(f), 0);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 2);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_regular),   cmocka_unit_test(test_fifo_refused), cmocka_unit_test(test_other_kinds),
		cmocka_unit_test(test_nonblock),  cmocka_unit_test(test_write),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
