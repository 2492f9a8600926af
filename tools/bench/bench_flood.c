/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_flood: a random-subdomain flood at a fixed rate, for bench/abuse.sh.
 *
 *   bench_flood -s ADDR -p PORT -a SRC -z ZONE -Q QPS -l SECONDS
 *
 * Sends one query (type A, RD, no EDNS) for a fresh name
 * f<i>-<random>.ZONE every 1/QPS seconds from SRC, one packet per send:
 * no bursts, so the server sees the flood as the network delivers it.
 * Replies are read without blocking between sends and counted by rcode;
 * after the last send it reads for one more second. Prints one line:
 *   sent N received M NOERROR a SERVFAIL b NXDOMAIN c REFUSED d other e
 *
 * Why not dnsperf: at 5000 qps dnsperf spends ~0.3 CPU of its own (threads
 * polling for its timeouts); on the 2-CPU machines the benchmarks run on,
 * that CPU is taken from the server under test and is charged to it, while
 * a real flood reaches a resolver from the network at the cost of the
 * kernel's receive path alone. This sender sleeps between packets and costs
 * a few microseconds per query.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "wire/names.h"
#include "wire/wire.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* splitmix64 */
static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static void usage(void)
{
	fprintf(stderr, "usage: bench_flood -s ADDR -p PORT -a SRC -z ZONE -Q QPS -l SECONDS\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *src = NULL, *zone = NULL;
	int port = 53, c;
	double qps = 0, secs = 0;
	while ((c = getopt(argc, argv, "s:p:a:z:Q:l:")) != -1) {
		switch (c) {
		case 's': addr = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'a': src = optarg; break;
		case 'z': zone = optarg; break;
		case 'Q': qps = atof(optarg); break;
		case 'l': secs = atof(optarg); break;
		default: usage();
		}
	}
	if (addr == NULL || zone == NULL || qps <= 0 || secs <= 0 || port <= 0 || port > 65535)
		usage();
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct sockaddr_in from = { .sin_family = AF_INET };
	if (inet_pton(AF_INET, addr, &to.sin_addr) != 1 || (src != NULL && inet_pton(AF_INET, src, &from.sin_addr) != 1))
		usage();
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	if (fd < 0 || (src != NULL && bind(fd, (struct sockaddr *)&from, sizeof(from)) != 0) ||
	    connect(fd, (struct sockaddr *)&to, sizeof(to)) != 0) {
		perror("bench_flood: socket");
		return 1;
	}
	int rcvbuf = 4 << 20;
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));

	uint64_t seed = now_ns() ^ ((uint64_t)getpid() << 32);
	uint64_t sent = 0, received = 0, rc[6] = { 0 }; /* NOERROR SERVFAIL NXDOMAIN REFUSED other */
	uint64_t interval = (uint64_t)(1e9 / qps), start = now_ns(), end = start + (uint64_t)(secs * 1e9);
	uint64_t drain_until = end + 1000000000ull;
	for (;;) {
		uint64_t t = now_ns();
		/* every send that is due (a late wake-up catches up, one packet per call) */
		while (t < end && start + sent * interval <= t) {
			uint8_t q[512] = { 0 };
			char name[300];
			snprintf(name, sizeof(name), "f%llu-%llu.%s", (unsigned long long)sent,
			         (unsigned long long)(rnd(&seed) % 1000000000u), zone);
			uint16_t id = (uint16_t)rnd(&seed);
			q[0] = (uint8_t)(id >> 8);
			q[1] = (uint8_t)id;
			q[2] = 0x01; /* RD */
			q[5] = 1;    /* QDCOUNT */
			int n = wire_name_from_text(name, q + 12, sizeof(q) - 16);
			if (n < 0) {
				fprintf(stderr, "bench_flood: bad zone %s\n", zone);
				return 2;
			}
			size_t len = 12 + (size_t)n;
			q[len + 1] = 1; /* type A */
			q[len + 3] = 1; /* class IN */
			len += 4;
			if (send(fd, q, len, 0) < 0 && errno != EAGAIN && errno != ECONNREFUSED)
				perror("bench_flood: send");
			sent++;
		}
		uint8_t r[1500];
		ssize_t n;
		while ((n = recv(fd, r, sizeof(r), 0)) >= 12) {
			received++;
			unsigned code = r[3] & 0x0f;
			rc[code == 0 ? 0 : code == 2 ? 1 : code == 3 ? 2 : code == 5 ? 3 : 4]++;
		}
		if (t >= drain_until)
			break;
		uint64_t next = t < end ? start + sent * interval : t + 1000000;
		struct timespec ts = { .tv_sec = (time_t)(next / 1000000000ull), .tv_nsec = (long)(next % 1000000000ull) };
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	}
	printf("sent %llu received %llu NOERROR %llu SERVFAIL %llu NXDOMAIN %llu REFUSED %llu other %llu\n",
	       (unsigned long long)sent, (unsigned long long)received, (unsigned long long)rc[0],
	       (unsigned long long)rc[1], (unsigned long long)rc[2], (unsigned long long)rc[3],
	       (unsigned long long)rc[4]);
	close(fd);
	return 0;
}
