/* SPDX-License-Identifier: BSD-3-Clause */
/* Client side of the daemon's control protocol over a unix stream socket. */
#include "tools/ctl/control_client.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

/* Wait for fd to become ready for events. @return 0, -ETIMEDOUT, -errno. */
static int wait_fd(int fd, short events, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = events };
	for (;;) {
		int n = poll(&p, 1, timeout_ms);
		if (n > 0)
			return 0;
		if (n == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

static int send_all(int fd, const char *buf, size_t len, int timeout_ms)
{
	while (len > 0) {
		int err = wait_fd(fd, POLLOUT, timeout_ms);
		if (err != 0)
			return err;
		/* MSG_NOSIGNAL: a daemon that hangs up must not kill us with SIGPIPE. */
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read until EOF into a growing buffer, capped at CONTROL_MAX_REPLY. */
static int recv_all(int fd, int timeout_ms, char **out, size_t *outlen)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	if (buf == NULL)
		return -ENOMEM;
	for (;;) {
		if (len + 1 == cap) {
			if (cap > CONTROL_MAX_REPLY) {
				free(buf);
				return -EFBIG;
			}
			char *nb = realloc(buf, cap * 2);
			if (nb == NULL) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
		int err = wait_fd(fd, POLLIN, timeout_ms);
		if (err != 0) {
			free(buf);
			return err;
		}
		ssize_t n = recv(fd, buf + len, cap - 1 - len, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			err = -errno;
			free(buf);
			return err;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	*out = buf;
	*outlen = len;
	return 0;
}

/* Connect with the timeout (a unix connect blocks when the daemon's backlog is full). */
static int connect_unix(const char *path, int timeout_ms, int *fdout)
{
	struct sockaddr_un sun;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	memcpy(sun.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* AF_UNIX connect() honours the send timeout. */
	struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0) {
		int err = errno == EAGAIN || errno == EINPROGRESS ? -ETIMEDOUT : -errno;
		close(fd);
		return err;
	}
	*fdout = fd;
	return 0;
}

int control_request(const char *path, const char *request, int timeout_ms, char **body,
                    size_t *bodylen, char *msg, size_t msgsize)
{
	*body = NULL;
	if (bodylen != NULL)
		*bodylen = 0;
	msg[0] = '\0';
	size_t rlen = strlen(request);
	if (rlen == 0 || rlen + 1 > CONTROL_MAX_REQUEST || memchr(request, '\n', rlen) != NULL) {
		snprintf(msg, msgsize, "bad control request (empty, too long, or with a newline)");
		return -EINVAL;
	}
	int fd = -1;
	int err = connect_unix(path, timeout_ms, &fd);
	if (err != 0) {
		snprintf(msg, msgsize, "cannot connect to control socket %s: %s (is partdns running?)",
		         path, strerror(-err));
		return err;
	}
	char line[CONTROL_MAX_REQUEST];
	memcpy(line, request, rlen);
	line[rlen] = '\n';
	err = send_all(fd, line, rlen + 1, timeout_ms);
	if (err != 0) {
		close(fd);
		snprintf(msg, msgsize, "cannot send to control socket %s: %s", path, strerror(-err));
		return err;
	}
	char *reply = NULL;
	size_t len = 0;
	err = recv_all(fd, timeout_ms, &reply, &len);
	close(fd);
	if (err == -ETIMEDOUT) {
		snprintf(msg, msgsize, "no reply from control socket %s within %d ms", path, timeout_ms);
		return err;
	}
	if (err == -EFBIG) {
		snprintf(msg, msgsize, "reply from control socket %s is longer than %zu bytes", path,
		         CONTROL_MAX_REPLY);
		return err;
	}
	if (err != 0) {
		snprintf(msg, msgsize, "cannot read from control socket %s: %s", path, strerror(-err));
		return err;
	}

	char *nl = memchr(reply, '\n', len);
	if (nl == NULL) {
		if (len == 0)
			snprintf(msg, msgsize, "control socket %s closed the connection without a reply",
			         path);
		else
			snprintf(msg, msgsize, "control socket %s: reply without a status line", path);
		free(reply);
		return CONTROL_E_PROTO;
	}
	*nl = '\0';
	size_t status_len = (size_t)(nl - reply);
	if (status_len > 0 && reply[status_len - 1] == '\r')
		reply[--status_len] = '\0';
	int rc;
	if (strcmp(reply, "OK") == 0) {
		rc = 0;
	} else if (strncmp(reply, "ERR", 3) == 0 && (reply[3] == ' ' || reply[3] == '\0')) {
		snprintf(msg, msgsize, "%s", reply[3] ? reply + 4 : "(no message)");
		rc = CONTROL_E_REMOTE;
	} else {
		snprintf(msg, msgsize, "control socket %s: unexpected status line '%.80s'", path, reply);
		free(reply);
		return CONTROL_E_PROTO;
	}
	size_t blen = len - (size_t)(nl + 1 - reply);
	memmove(reply, nl + 1, blen + 1); /* with the NUL */
	*body = reply;
	if (bodylen != NULL)
		*bodylen = blen;
	return rc;
}
