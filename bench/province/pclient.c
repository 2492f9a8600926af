/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pclient: the province benchmark's client population (bench/province.sh).
 *
 * Reads lines "SRC QNAME" on stdin and asks QNAME A of the server from source
 * address SRC (IPv4 or IPv6; IP_FREEBIND, so an address made local by a route
 * such as `ip route add local 10.0.0.0/8 dev lo` works), one UDP socket per
 * query, with at most INFLIGHT queries outstanding.  Writes one line per
 * query on stdout, in completion order:
 *
 *     SRC QNAME RCODE ADDR MS
 *
 * RCODE is NOERROR, SERVFAIL, ... or TIMEOUT; ADDR the last A record of the
 * answer section (the end of a CNAME chain) or "-"; MS the time from the
 * first send to the answer, in milliseconds.
 *
 * usage: pclient -s ADDR4 [-S ADDR6] [-p PORT] [-c INFLIGHT] [-t TIMEOUT_MS] [-r TRIES]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef IP_FREEBIND
#define IP_FREEBIND 15
#endif
#ifndef IPV6_FREEBIND
#define IPV6_FREEBIND 78
#endif

struct slot {
	int fd;         /* -1: free */
	uint16_t id;
	int tries;
	double t0, deadline;
	char src[64], name[256];
	unsigned char q[512];
	size_t qlen;
};

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint16_t rnd16(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint16_t)(rng >> 16);
}

/* A query for NAME A, RD=1, EDNS0 (1232 bytes, no option): -1 on a bad name. */
static int build(struct slot *s)
{
	unsigned char *p = s->q;
	s->id = rnd16();
	p[0] = s->id >> 8; p[1] = s->id & 0xff;
	p[2] = 0x01; p[3] = 0x00;                 /* RD */
	p[4] = 0; p[5] = 1; p[6] = p[7] = p[8] = p[9] = 0; p[10] = 0; p[11] = 1;
	size_t o = 12;
	const char *n = s->name;
	while (*n) {
		const char *dot = strchr(n, '.');
		size_t l = dot ? (size_t)(dot - n) : strlen(n);
		if (l == 0 || l > 63 || o + l + 1 > 300)
			return -1;
		p[o++] = (unsigned char)l;
		memcpy(p + o, n, l);
		o += l;
		n += l;
		if (*n == '.')
			n++;
	}
	p[o++] = 0;
	p[o++] = 0; p[o++] = 1;                   /* A */
	p[o++] = 0; p[o++] = 1;                   /* IN */
	/* OPT: root, type 41, class = UDP size 1232, ttl 0, rdlen 0 */
	p[o++] = 0; p[o++] = 0; p[o++] = 41; p[o++] = 1232 >> 8; p[o++] = 1232 & 0xff;
	p[o++] = 0; p[o++] = 0; p[o++] = 0; p[o++] = 0; p[o++] = 0; p[o++] = 0;
	s->qlen = o;
	return 0;
}

/* Skip a (possibly compressed) name at *o; -1 when it runs off the end. */
static int skip_name(const unsigned char *m, size_t len, size_t *o)
{
	for (int hops = 0; hops < 128; hops++) {
		if (*o >= len)
			return -1;
		unsigned l = m[*o];
		if (l == 0) { (*o)++; return 0; }
		if ((l & 0xc0) == 0xc0) { *o += 2; return *o <= len ? 0 : -1; }
		*o += 1 + l;
	}
	return -1;
}

static const char *rcode_name(unsigned r)
{
	static const char *n[] = { "NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED" };
	return r < 6 ? n[r] : "RCODE_OTHER";
}

/* 1: an answer to slot s (printed), 0: not ours. */
static int answer(struct slot *s, const unsigned char *m, size_t len)
{
	if (len < 12 || ((m[0] << 8) | m[1]) != s->id || !(m[2] & 0x80))
		return 0;
	unsigned qd = (m[4] << 8) | m[5], an = (m[6] << 8) | m[7];
	size_t o = 12;
	for (unsigned i = 0; i < qd; i++) {
		if (skip_name(m, len, &o) < 0)
			return 0;
		o += 4;
	}
	char addr[INET_ADDRSTRLEN] = "-";
	for (unsigned i = 0; i < an && o < len; i++) {
		if (skip_name(m, len, &o) < 0 || o + 10 > len)
			break;
		unsigned type = (m[o] << 8) | m[o + 1], rdlen = (m[o + 8] << 8) | m[o + 9];
		o += 10;
		if (o + rdlen > len)
			break;
		if (type == 1 && rdlen == 4)
			inet_ntop(AF_INET, m + o, addr, sizeof(addr));
		o += rdlen;
	}
	printf("%s %s %s %s %.3f\n", s->src, s->name, rcode_name(m[3] & 0x0f), addr, now_ms() - s->t0);
	return 1;
}

static void usage(void)
{
	fprintf(stderr, "usage: pclient -s ADDR4 [-S ADDR6] [-p PORT] [-c INFLIGHT] [-t TIMEOUT_MS] [-r TRIES]\n"
	                "  reads \"SRC QNAME\" lines on stdin, writes \"SRC QNAME RCODE ADDR MS\" lines\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *s4 = NULL, *s6 = "::1";
	int port = 53, inflight = 1, timeout = 2000, maxtries = 3, c;
	while ((c = getopt(argc, argv, "s:S:p:c:t:r:")) != -1) {
		switch (c) {
		case 's': s4 = optarg; break;
		case 'S': s6 = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'c': inflight = atoi(optarg); break;
		case 't': timeout = atoi(optarg); break;
		case 'r': maxtries = atoi(optarg); break;
		default: usage();
		}
	}
	if (s4 == NULL || inflight < 1 || inflight > 4096 || timeout < 1 || maxtries < 1)
		usage();
	struct sockaddr_in srv4 = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct sockaddr_in6 srv6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port) };
	if (inet_pton(AF_INET, s4, &srv4.sin_addr) != 1 || inet_pton(AF_INET6, s6, &srv6.sin6_addr) != 1)
		usage();
	rng ^= (uint64_t)getpid() << 20 ^ (uint64_t)time(NULL);

	struct slot *slots = calloc((size_t)inflight, sizeof(*slots));
	struct pollfd *pfd = calloc((size_t)inflight, sizeof(*pfd));
	if (slots == NULL || pfd == NULL)
		return 1;
	for (int i = 0; i < inflight; i++)
		slots[i].fd = -1;
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	char line[512];
	int busy = 0, eof = 0, rc = 0;
	unsigned long sent = 0, timeouts = 0;
	while (!eof || busy > 0) {
		/* fill free slots */
		for (int i = 0; i < inflight && !eof; i++) {
			struct slot *s = &slots[i];
			if (s->fd >= 0)
				continue;
			if (fgets(line, sizeof(line), stdin) == NULL) {
				eof = 1;
				break;
			}
			if (sscanf(line, "%63s %255s", s->src, s->name) != 2)
				continue;
			size_t nl = strlen(s->name);
			if (nl > 1 && s->name[nl - 1] == '.')
				s->name[nl - 1] = '\0';
			int v6 = strchr(s->src, ':') != NULL;
			union { struct sockaddr_in a4; struct sockaddr_in6 a6; } src = { 0 };
			if (v6) {
				src.a6.sin6_family = AF_INET6;
				if (inet_pton(AF_INET6, s->src, &src.a6.sin6_addr) != 1) goto bad;
			} else {
				src.a4.sin_family = AF_INET;
				if (inet_pton(AF_INET, s->src, &src.a4.sin_addr) != 1) goto bad;
			}
			if (build(s) < 0) goto bad;
			int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
			if (fd < 0) { perror("socket"); return 1; }
			int one = 1;
			if (v6) {
				setsockopt(fd, IPPROTO_IPV6, IPV6_FREEBIND, &one, sizeof(one));
				setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
			}
			setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one));
			if (bind(fd, (struct sockaddr *)&src, v6 ? sizeof(src.a6) : sizeof(src.a4)) < 0 ||
			    connect(fd, v6 ? (struct sockaddr *)&srv6 : (struct sockaddr *)&srv4,
			            v6 ? sizeof(srv6) : sizeof(srv4)) < 0) {
				fprintf(stderr, "pclient: %s: %s\n", s->src, strerror(errno));
				close(fd);
				rc = 1;
				continue;
			}
			s->fd = fd;
			s->tries = 1;
			s->t0 = now_ms();
			s->deadline = s->t0 + timeout;
			if (send(fd, s->q, s->qlen, 0) < 0)
				s->deadline = s->t0; /* retried below */
			sent++;
			busy++;
			continue;
		bad:
			fprintf(stderr, "pclient: bad line: %s", line);
			rc = 1;
		}
		if (busy == 0)
			continue;
		double t = now_ms(), next = t + timeout;
		for (int i = 0; i < inflight; i++) {
			pfd[i].fd = slots[i].fd;
			pfd[i].events = POLLIN;
			pfd[i].revents = 0;
			if (slots[i].fd >= 0 && slots[i].deadline < next)
				next = slots[i].deadline;
		}
		int wait = next > t ? (int)(next - t) + 1 : 0;
		if (poll(pfd, (nfds_t)inflight, wait) < 0 && errno != EINTR) {
			perror("poll");
			return 1;
		}
		t = now_ms();
		for (int i = 0; i < inflight; i++) {
			struct slot *s = &slots[i];
			if (s->fd < 0)
				continue;
			int done = 0;
			if (pfd[i].revents & POLLIN) {
				unsigned char buf[4096];
				ssize_t n;
				while (!done && (n = recv(s->fd, buf, sizeof(buf), 0)) >= 0)
					done = answer(s, buf, (size_t)n);
			}
			if (!done && t >= s->deadline) {
				if (s->tries >= maxtries) {
					printf("%s %s TIMEOUT - %.3f\n", s->src, s->name, t - s->t0);
					timeouts++;
					done = 1;
				} else {
					s->tries++;
					build(s); /* a new id */
					s->deadline = t + timeout;
					(void)send(s->fd, s->q, s->qlen, 0);
				}
			}
			if (done) {
				close(s->fd);
				s->fd = -1;
				busy--;
			}
		}
	}
	fflush(stdout);
	fprintf(stderr, "pclient: %lu queries, %lu timed out\n", sent, timeouts);
	return rc;
}
