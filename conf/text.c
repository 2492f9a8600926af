/* SPDX-License-Identifier: BSD-3-Clause */
/* The config's text forms: ADDR@PORT, domain names, and reading a whole file. */
#include "conf/text.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "conf/conf.h"
#include "util/file.h"
#include "util/vec.h"

/* Largest config or include file read (an ISP's full prefix list is a few MiB). */
#define CONF_FILE_MAX ((size_t)256 << 20)
/* A main config given as a pipe (-c /dev/stdin) must be written within this long. */
#define CONF_PIPE_MS 5000

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int conf_addr_parse_why(const char *text, uint16_t default_port, struct conf_addr *out,
                        const char **why)
{
	memset(out, 0, sizeof(*out));
	*why = "not an IPv4 or IPv6 address";
	if (text[0] == '[') {
		*why = "write IPv6 addresses without brackets, e.g. ::1@53";
		return CONF_E_TARGET;
	}
	const char *at = strchr(text, '@');
	size_t hlen = at != NULL ? (size_t)(at - text) : strlen(text);
	char host[INET6_ADDRSTRLEN];
	if (hlen == 0 || hlen >= sizeof(host))
		return CONF_E_TARGET;
	memcpy(host, text, hlen);
	host[hlen] = '\0';

	unsigned port = default_port;
	if (at != NULL) {
		const char *p = at + 1;
		size_t digits = strspn(p, "0123456789");
		port = 0;
		if (digits == 0 || digits > 5 || p[digits] != '\0') {
			*why = "port must be a number 1..65535";
			return CONF_E_TARGET;
		}
		for (size_t i = 0; i < digits; i++)
			port = port * 10 + (unsigned)(p[i] - '0');
	}
	if (port == 0 || port > 65535) {
		*why = "port must be a number 1..65535";
		return CONF_E_TARGET;
	}

	struct sockaddr_in *sin = (struct sockaddr_in *)&out->ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&out->ss;
	char norm[INET6_ADDRSTRLEN];
	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
		out->len = sizeof(*sin);
		inet_ntop(AF_INET, &sin->sin_addr, norm, sizeof(norm));
	} else if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		out->len = sizeof(*sin6);
		inet_ntop(AF_INET6, &sin6->sin6_addr, norm, sizeof(norm));
	} else {
		memset(out, 0, sizeof(*out));
		return CONF_E_TARGET;
	}
	snprintf(out->text, sizeof(out->text), "%s@%u", norm, port);
	return 0;
}

int conf_addr_parse(const char *text, uint16_t default_port, struct conf_addr *out)
{
	const char *why;
	return conf_addr_parse_why(text, default_port, out, &why);
}

int conf_source_parse_why(const char *text, struct conf_addr *out, const char **why)
{
	memset(out, 0, sizeof(*out));
	if (strchr(text, '@') != NULL) {
		*why = "an address without a port: each query's source port is random";
		return CONF_E_TARGET;
	}
	if (text[0] == '[') {
		*why = "write IPv6 addresses without brackets";
		return CONF_E_TARGET;
	}
	struct sockaddr_in *sin = (struct sockaddr_in *)&out->ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&out->ss;
	if (inet_pton(AF_INET, text, &sin->sin_addr) == 1) {
		uint32_t a = ntohl(sin->sin_addr.s_addr);
		*why = a == INADDR_ANY         ? "0.0.0.0 is the wildcard: an empty list means any address"
		       : IN_MULTICAST(a)       ? "a multicast address cannot be a source"
		       : a == INADDR_BROADCAST ? "the broadcast address cannot be a source"
		                               : NULL;
		sin->sin_family = AF_INET;
		out->len = sizeof(*sin);
	} else if (inet_pton(AF_INET6, text, &sin6->sin6_addr) == 1) {
		const struct in6_addr *a = &sin6->sin6_addr;
		/* a link-local source needs an interface (scope) and reaches no DNS server beyond the link */
		*why = IN6_IS_ADDR_UNSPECIFIED(a) ? ":: is the wildcard: an empty list means any address"
		       : IN6_IS_ADDR_MULTICAST(a) ? "a multicast address cannot be a source"
		       : IN6_IS_ADDR_V4MAPPED(a)  ? "an IPv4-mapped address: write the IPv4 address"
		       : IN6_IS_ADDR_LINKLOCAL(a) ? "a link-local address cannot be a source"
		                                  : NULL;
		sin6->sin6_family = AF_INET6;
		out->len = sizeof(*sin6);
	} else {
		*why = "not an IPv4 or IPv6 address";
		memset(out, 0, sizeof(*out));
		return CONF_E_TARGET;
	}
	if (*why != NULL) {
		memset(out, 0, sizeof(*out));
		return CONF_E_TARGET;
	}
	inet_ntop(out->ss.ss_family,
	          out->ss.ss_family == AF_INET ? (const void *)&sin->sin_addr : (const void *)&sin6->sin6_addr,
	          out->text, sizeof(out->text));
	return 0;
}

int conf_name_normalize(const char *text, char *out, size_t size)
{
	size_t len = strlen(text);
	if (len == 0)
		return -EINVAL;
	if (strcmp(text, ".") == 0) {
		if (size < 2)
			return -EINVAL;
		memcpy(out, ".", 2);
		return 0;
	}
	if (text[len - 1] == '.')
		len--;
	/* 253 characters of text is the 255-octet wire limit. */
	if (len > 253 || len + 2 > size)
		return -EINVAL;
	size_t label = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)text[i];
		if (ch == '.') {
			if (label == 0)
				return -EINVAL;
			label = 0;
		} else {
			if (ch <= 0x20 || ch >= 0x7f || ch == '\\' || ++label > 63)
				return -EINVAL;
		}
		out[i] = (char)tolower(ch);
	}
	if (label == 0)
		return -EINVAL;
	out[len] = '.';
	out[len + 1] = '\0';
	return 0;
}

int conf_read_file(const char *path, bool regular_only, char **buf, size_t *len)
{
	*buf = NULL;
	*len = 0;
	/* Never blocking in open(): a FIFO named as an include or a password
	 * file held the reload, and the control socket with it, for good. */
	struct stat st;
	int fd = regular_only ? file_open_regular(path, &st) : file_open_nonblock(path, &st);
	if (fd < 0)
		return fd;
	/* A pipe stays non-blocking: its reads wait in poll(), up to a deadline. */
	bool pipe = !S_ISREG(st.st_mode);
	int64_t deadline = mono_ms() + CONF_PIPE_MS;
	size_t cap = S_ISREG(st.st_mode) && st.st_size > 0 ? (size_t)st.st_size + 1 : 4096;
	if (cap > CONF_FILE_MAX + 1)
		cap = CONF_FILE_MAX + 1;
	char *b = malloc(cap);
	size_t n = 0;
	int rc = 0;
	while (b != NULL) {
		/* room for a byte more and the NUL; a file is at most CONF_FILE_MAX bytes */
		int grown = vec_grow(&b, &cap, n + 2, 1, CONF_FILE_MAX + 1);
		if (grown != 0) {
			rc = grown == -E2BIG ? -EFBIG : -ENOMEM;
			break;
		}
		ssize_t r = read(fd, b + n, cap - n - 1);
		if (r < 0 && pipe && errno == EAGAIN) {
			int64_t left = deadline - mono_ms();
			struct pollfd p = { .fd = fd, .events = POLLIN };
			int pr = left > 0 ? poll(&p, 1, (int)left) : 0;
			if (pr == 0) {
				rc = -ETIMEDOUT;
				break;
			}
			if (pr < 0 && errno != EINTR) {
				rc = -errno;
				break;
			}
			continue;
		}
		if (r < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (b == NULL)
		return -ENOMEM;
	if (rc != 0) {
		free(b);
		return rc;
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}
