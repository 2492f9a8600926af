/* SPDX-License-Identifier: BSD-3-Clause */
/* Listening sockets, and the probes of addresses before they are used. */
#include "resolver/base/net.h"

#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

int net_in_use(const struct conf_addr *a)
{
	int fd = socket(a->ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	if (a->ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	int rc = bind(fd, (const struct sockaddr *)&a->ss, a->len) == 0 ? 0 : (errno == EADDRINUSE ? 1 : -errno);
	close(fd);
	return rc;
}

int net_source_check(const struct conf_addr *a)
{
	int fd = socket(a->ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int rc = bind(fd, (const struct sockaddr *)&a->ss, a->len) == 0 ? 0 : -errno;
	close(fd);
	return rc;
}

bool net_is_wildcard(const struct conf_addr *a)
{
	if (a->ss.ss_family == AF_INET)
		return ((const struct sockaddr_in *)&a->ss)->sin_addr.s_addr == htonl(INADDR_ANY);
	if (a->ss.ss_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)&a->ss)->sin6_addr);
	return false;
}

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
		if (net_is_wildcard(a) &&
		    (a->ss.ss_family == AF_INET ? setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one))
		                                : setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one))) != 0) {
			int e = errno;
			close(fd);
			return -e;
		}
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
