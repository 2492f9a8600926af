/* SPDX-License-Identifier: BSD-3-Clause */
/* A stand-in for the daemon's control socket, for testing partdnsctl's client. */
/*
 * usage: fake_control SOCKET LOG MODE
 *   normal:  control/server.c with canned replies for stats, cache, reload
 *   hang:    read the request, never answer (until killed)
 *   garbage: read the request, answer bytes that are not the protocol
 *   close:   read the request, close without a reply
 * Each request line is appended to LOG. SOCKET.ready is created once the
 * socket listens. Exits on SIGTERM/SIGINT, or after 60 s without a request
 * so a killed test leaves nothing behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "control/server.h"

#define IDLE_EXIT_S 60

static int stop_pipe[2] = { -1, -1 };
static const char *log_path;

static void on_signal(int sig)
{
	int saved = errno;
	ssize_t n = write(stop_pipe[1], "x", 1);
	(void)n;
	errno = saved;
}

/* Append the request to LOG, as one line; an idle timer restarts with it. */
static void log_request(const char *line)
{
	alarm(IDLE_EXIT_S);
	FILE *f = fopen(log_path, "a");
	if (f == NULL) {
		fprintf(stderr, "fake_control: cannot open %s: %s\n", log_path, strerror(errno));
		return;
	}
	fprintf(f, "%s\n", line);
	fclose(f);
}

static void log_words(int argc, char **argv)
{
	char line[CONTROL_MAX_REQUEST] = "";
	size_t n = 0;
	for (int i = 0; i < argc; i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s", i ? " " : "", argv[i]);
	log_request(line);
}

/* ---- normal mode: handlers with the replies test_ctl.sh expects ---- */

static int on_stats(void *arg, int argc, char **argv, FILE *out, FILE *err)
{
	log_words(argc, argv);
	if (argc == 2 && strcmp(argv[1], "json") == 0)
		fputs("{\"queries\": 42}\n", out);
	else
		fputs("queries 42\npartition nanjing queries 40\n", out);
	return 0;
}

static int on_cache(void *arg, int argc, char **argv, FILE *out, FILE *err)
{
	log_words(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "lookup") == 0) {
		fputs("miss\n", out);
		return 0;
	}
	if (argc < 2 || strcmp(argv[1], "flush") != 0) {
		fputs("cache: expected flush or lookup\n", err);
		return 1;
	}
	fputs("flushed 3 entries\n", out);
	return 0;
}

static int on_reload(void *arg, int argc, char **argv, FILE *out, FILE *err)
{
	log_words(argc, argv);
	fputs("config has errors\n/etc/partdns/partdns.yaml:3:5: error: unknown key\n", err);
	return 1;
}

/* ---- hostile modes: a raw socket, no protocol library ---- */

static int listen_raw(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path))
		return -1;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 8) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Read up to the request's "\n" (or EOF, or 5 s) and log it. */
static void read_request(int fd)
{
	char buf[CONTROL_MAX_REQUEST + 1];
	size_t len = 0;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	while (len < CONTROL_MAX_REQUEST && poll(&p, 1, CONTROL_TIMEOUT_MS) > 0) {
		ssize_t n = recv(fd, buf + len, CONTROL_MAX_REQUEST - len, 0);
		if (n <= 0)
			break;
		len += (size_t)n;
		if (memchr(buf, '\n', len) != NULL)
			break;
	}
	buf[len] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	log_request(buf);
}

/* Serve hostile replies until stopped. @return an exit code. */
static int run_hostile(const char *path, const char *mode)
{
	int lfd = listen_raw(path);
	if (lfd < 0) {
		fprintf(stderr, "fake_control: cannot listen on %s: %s\n", path, strerror(errno));
		return 1;
	}
	char ready[sizeof(((struct sockaddr_un *)0)->sun_path) + 8];
	snprintf(ready, sizeof(ready), "%s.ready", path);
	close(open(ready, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	int held[64], nheld = 0; /* hang: connections kept open, unanswered */
	struct pollfd p[2] = { { .fd = lfd, .events = POLLIN }, { .fd = stop_pipe[0], .events = POLLIN } };
	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents != 0)
			break;
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		read_request(fd);
		if (strcmp(mode, "hang") == 0 && nheld < 64) {
			held[nheld++] = fd;
			continue;
		}
		if (strcmp(mode, "garbage") == 0) {
			static const char junk[] = "HELLO\nwhat\n";
			ssize_t n = send(fd, junk, sizeof(junk) - 1, MSG_NOSIGNAL);
			(void)n;
		}
		close(fd);
	}
	for (int i = 0; i < nheld; i++)
		close(held[i]);
	close(lfd);
	unlink(path);
	return 0;
}

static int run_normal(const char *path)
{
	struct control *c = control_new(path, stop_pipe[0]);
	if (c == NULL)
		return 1;
	if (control_register(c, "stats", on_stats, NULL) != 0 ||
	    control_register(c, "cache", on_cache, NULL) != 0 ||
	    control_register(c, "reload", on_reload, NULL) != 0 || control_start(c) != 0) {
		fprintf(stderr, "fake_control: cannot start the server\n");
		control_free(c);
		return 1;
	}
	char ready[sizeof(((struct sockaddr_un *)0)->sun_path) + 8];
	snprintf(ready, sizeof(ready), "%s.ready", path);
	close(open(ready, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	control_free(c); /* returns once a signal has written to the stop pipe */
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: fake_control SOCKET LOG normal|hang|garbage|close\n");
		return 2;
	}
	const char *path = argv[1], *mode = argv[3];
	log_path = argv[2];
	if (strcmp(mode, "normal") != 0 && strcmp(mode, "hang") != 0 &&
	    strcmp(mode, "garbage") != 0 && strcmp(mode, "close") != 0) {
		fprintf(stderr, "fake_control: unknown mode '%s'\n", mode);
		return 2;
	}
	if (pipe2(stop_pipe, O_CLOEXEC) != 0) {
		perror("fake_control: pipe");
		return 1;
	}
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	alarm(IDLE_EXIT_S);
	if (strcmp(mode, "normal") == 0)
		return run_normal(path);
	return run_hostile(path, mode);
}
