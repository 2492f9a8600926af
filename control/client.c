/* SPDX-License-Identifier: BSD-3-Clause */
/* Client side of the control protocol over a unix stream socket. */
#include "control/client.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "util/vec.h"

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
	size_t cap = 0, len = 0;
	char *buf = NULL;
	for (;;) {
		/* room for one more byte and the NUL; a reply is at most CONTROL_MAX_REPLY bytes */
		int grown = vec_grow(&buf, &cap, len + 2, 1, CONTROL_MAX_REPLY + 1);
		if (grown != 0) {
			free(buf);
			return grown == -E2BIG ? CONTROL_E_TOO_LONG : -ENOMEM;
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

/* Copy at most 80 bytes of a status line for a message; control bytes become '?'. */
static void quote_line(const char *line, size_t len, char *out, size_t outsize)
{
	size_t n = len < 80 ? len : 80;
	if (n >= outsize)
		n = outsize - 1;
	for (size_t i = 0; i < n; i++)
		out[i] = (unsigned char)line[i] < 0x20 || line[i] == 0x7f ? '?' : line[i];
	out[n] = '\0';
}

int control_request(const char *path, const char *request, int timeout_ms, char **body,
                    size_t *bodylen, char *msg, size_t msgsize)
{
	*body = NULL;
	if (bodylen != NULL)
		*bodylen = 0;
	msg[0] = '\0';
	int err = control_request_check(request);
	if (err != 0) {
		snprintf(msg, msgsize, "bad control request (empty, too long, or with a newline)");
		return err;
	}
	size_t rlen = strlen(request);
	int fd = -1;
	err = connect_unix(path, timeout_ms, &fd);
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
	if (err == CONTROL_E_TOO_LONG) {
		snprintf(msg, msgsize, "reply from control socket %s is longer than %zu bytes", path,
		         CONTROL_MAX_REPLY);
		return err;
	}
	if (err != 0) {
		snprintf(msg, msgsize, "cannot read from control socket %s: %s", path, strerror(-err));
		return err;
	}

	struct control_status st;
	int rc = control_status_parse(reply, len, &st);
	if (rc == CONTROL_E_PROTO) {
		char quoted[81];
		quote_line(reply, st.linelen, quoted, sizeof(quoted));
		if (len == 0)
			snprintf(msg, msgsize, "control socket %s closed the connection without a reply",
			         path);
		else if (st.linelen == 0 && st.body == 0)
			snprintf(msg, msgsize, "control socket %s: reply without a status line", path);
		else
			snprintf(msg, msgsize, "control socket %s: unexpected status line '%s'", path,
			         quoted);
		free(reply);
		return rc;
	}
	if (rc == CONTROL_E_REMOTE) {
		if (st.msglen == 0)
			snprintf(msg, msgsize, "(no message)");
		else
			snprintf(msg, msgsize, "%.*s", (int)st.msglen, st.msg);
	}
	size_t blen = len - st.body;
	memmove(reply, reply + st.body, blen + 1); /* with the NUL */
	*body = reply;
	if (bodylen != NULL)
		*bodylen = blen;
	return rc;
}
