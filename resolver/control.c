/* SPDX-License-Identifier: BSD-3-Clause */
/* Control socket: one thread, one request per connection, answered from server_* calls. */
#include "resolver/control.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "resolver/core.h"
#include "resolver/log.h"
#include "resolver/server.h"

#define REQUEST_MAX 4096

struct control {
	struct server *srv;
	char *path;
	int fd;
	pthread_t thread;
	bool started;
};

static int mkdir_parents(const char *path)
{
	char buf[sizeof(((struct sockaddr_un *)0)->sun_path)];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0750) != 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return 0;
}

struct control *control_new(struct server *srv, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path)) {
		log_err("server.control: path too long: %s", path);
		return NULL;
	}
	strcpy(sa.sun_path, path);
	int rc = mkdir_parents(path);
	if (rc != 0) {
		log_err("server.control: cannot create the directory of %s: %s", path, strerror(-rc));
		return NULL;
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return NULL;
	/* A socket left by a killed daemon: replace it, unless one answers. */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		log_err("server.control: %s is in use by a running partdns", path);
		close(fd);
		return NULL;
	}
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 16) != 0) {
		log_err("server.control: cannot listen on %s: %s", path, strerror(errno));
		close(fd);
		return NULL;
	}
	chmod(path, 0660);
	struct control *c = calloc(1, sizeof(*c));
	if (c == NULL) {
		close(fd);
		return NULL;
	}
	c->srv = srv;
	c->path = strdup(path);
	c->fd = fd;
	return c;
}

/* Find "key=" among the words; @return the value or NULL. */
static const char *word_value(char **words, int n, const char *key)
{
	size_t kl = strlen(key);
	for (int i = 0; i < n; i++)
		if (strncmp(words[i], key, kl) == 0 && words[i][kl] == '=')
			return words[i] + kl + 1;
	return NULL;
}

static void handle(struct control *c, int fd)
{
	char req[REQUEST_MAX + 1];
	size_t len = 0;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	while (len < REQUEST_MAX) {
		if (poll(&pfd, 1, 5000) <= 0)
			return;
		ssize_t k = read(fd, req + len, REQUEST_MAX - len);
		if (k <= 0)
			break;
		len += (size_t)k;
		if (memchr(req, '\n', len))
			break;
	}
	req[len] = 0;
	char *nl = strchr(req, '\n');
	if (nl)
		*nl = 0;
	char *words[16];
	int n = 0;
	for (char *save = NULL, *t = strtok_r(req, " \t", &save); t && n < 16; t = strtok_r(NULL, " \t", &save))
		words[n++] = t;

	char *body = NULL, *errs = NULL;
	size_t body_len = 0, errs_len = 0;
	FILE *out = open_memstream(&body, &body_len);
	FILE *err = open_memstream(&errs, &errs_len);
	bool ok = true;
	if (out == NULL || err == NULL) {
		ok = false;
	} else if (n >= 1 && strcmp(words[0], "stats") == 0) {
		server_write_stats(c->srv, out, n >= 2 && strcmp(words[1], "json") == 0);
	} else if (n >= 2 && strcmp(words[0], "cache") == 0 && strcmp(words[1], "flush") == 0) {
		long k = server_cache_flush(c->srv, word_value(words + 2, n - 2, "name"),
		                            word_value(words + 2, n - 2, "partition"), err);
		if (k < 0)
			ok = false;
		else
			fprintf(out, "%ld entries flushed\n", k);
	} else if (n == 1 && strcmp(words[0], "reload") == 0) {
		if (server_reload(c->srv, err) != 0)
			ok = false;
		else
			fprintf(out, "reloaded\n");
	} else {
		fprintf(err, "unknown request '%s'", n ? words[0] : "");
		ok = false;
	}
	if (out)
		fclose(out);
	if (err)
		fclose(err);
	FILE *f = fdopen(dup(fd), "w");
	if (f) {
		if (ok) {
			fputs("OK\n", f);
			if (errs && errs_len)
				fwrite(errs, 1, errs_len, f); /* notes of a successful reload */
			if (body)
				fwrite(body, 1, body_len, f);
		} else {
			/* first error line on the status line, all of them in the body */
			char first[512] = "failed";
			if (errs && errs_len) {
				snprintf(first, sizeof(first), "%s", errs);
				char *e = strchr(first, '\n');
				if (e)
					*e = 0;
			}
			fprintf(f, "ERR %s\n", first);
			if (errs && errs_len)
				fwrite(errs, 1, errs_len, f);
		}
		fclose(f);
	}
	free(body);
	free(errs);
}

static void *control_main(void *arg)
{
	struct control *c = arg;
	struct pollfd p[2] = { { .fd = c->fd, .events = POLLIN },
	                       { .fd = server_stop_fd(c->srv), .events = POLLIN } };
	while (!server_stopping(c->srv)) {
		if (poll(p, 2, 1000) <= 0)
			continue;
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		int fd = accept4(c->fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		handle(c, fd);
		close(fd);
	}
	return NULL;
}

int control_start(struct control *c)
{
	int rc = pthread_create(&c->thread, NULL, control_main, c);
	if (rc != 0)
		return -rc;
	c->started = true;
	return 0;
}

void control_stop(struct control *c)
{
	if (c && c->started) {
		pthread_join(c->thread, NULL);
		c->started = false;
	}
}

void control_free(struct control *c)
{
	if (c == NULL)
		return;
	control_stop(c);
	close(c->fd);
	unlink(c->path);
	free(c->path);
	free(c);
}
