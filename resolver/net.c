/* SPDX-License-Identifier: BSD-3-Clause */
/* Listening sockets. */
#include "resolver/net.h"

#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

int net_bind(const struct conf_addr *a, int type)
{
	int fd = socket(a->ss.ss_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	if (a->ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (type == SOCK_DGRAM) {
		int sz = 4 << 20;
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	}
	if (bind(fd, (const struct sockaddr *)&a->ss, a->len) != 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	if (type == SOCK_STREAM && listen(fd, 1024) != 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}
