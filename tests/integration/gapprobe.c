/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gapprobe: a steady stream of one query at a DNS server, and the longest
 * time any of its sockets went without an answer. Several sockets (source
 * ports) so the server's listeners (SO_REUSEPORT spreads by port) each get
 * some: one stalled listener shows even when the others answer.
 *
 *   gapprobe SERVER PORT SOURCE NAME [INTERVAL_MS [SOCKETS]]
 *
 * Each socket sends NAME A every INTERVAL_MS (default 2), round robin,
 * until SIGTERM or SIGINT; then it listens 500 ms more and prints one line:
 *   sent N answered N max_gap_ms F
 * A socket's gap: the time between two answers it received, and at the end
 * the time from its last answer to its last query when that query went
 * unanswered. Since the first answer of each socket; 0 answers: the whole run.
 * Exit 0, or 1 when nothing was answered at all.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define GP_MAX_SOCKS 16

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A query for NAME A, RD set, id 0 (set per send). @return its length, 0 when NAME does not fit. */
static size_t build_query(const char *name, uint8_t *q, size_t cap)
{
	static const uint8_t hdr[12] = { 0, 0, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0 };
	if (cap < 12 + 256 + 4)
		return 0;
	memcpy(q, hdr, sizeof(hdr));
	size_t n = 12;
	const char *p = name;
	while (*p != '\0') {
		const char *dot = strchr(p, '.');
		size_t l = dot ? (size_t)(dot - p) : strlen(p);
		if (l == 0 || l > 63 || n + 1 + l > 12 + 254)
			return 0;
		q[n++] = (uint8_t)l;
		memcpy(q + n, p, l);
		n += l;
		p += l;
		if (*p == '.')
			p++;
	}
	q[n++] = 0;
	q[n++] = 0;
	q[n++] = 1; /* A */
	q[n++] = 0;
	q[n++] = 1; /* IN */
	return n;
}

struct gsock {
	int fd;
	uint64_t first_ans, last_ans, last_sent, max_gap;
	uint64_t answered, sent;
	uint16_t last_id; /* of the last query sent */
	uint64_t last_id_ans; /* when the last query was answered, 0 = not yet */
};

static void take_answers(struct gsock *s)
{
	uint8_t buf[4096];
	for (;;) {
		ssize_t n = recv(s->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0)
			return;
		if (n < 12 || !(buf[2] & 0x80))
			continue;
		uint64_t t = now_ns();
		if (s->answered > 0 && t - s->last_ans > s->max_gap)
			s->max_gap = t - s->last_ans;
		if (s->answered == 0)
			s->first_ans = t;
		s->last_ans = t;
		s->answered++;
		if ((uint16_t)(buf[0] << 8 | buf[1]) == s->last_id)
			s->last_id_ans = t;
	}
}

int main(int argc, char **argv)
{
	if (argc < 5 || argc > 7) {
		fprintf(stderr, "usage: gapprobe SERVER PORT SOURCE NAME [INTERVAL_MS [SOCKETS]]\n");
		return 2;
	}
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2])) };
	struct sockaddr_in from = { .sin_family = AF_INET };
	if (inet_pton(AF_INET, argv[1], &to.sin_addr) != 1 || inet_pton(AF_INET, argv[3], &from.sin_addr) != 1) {
		fprintf(stderr, "gapprobe: bad address\n");
		return 2;
	}
	uint8_t q[512];
	size_t qlen = build_query(argv[4], q, sizeof(q));
	if (qlen == 0) {
		fprintf(stderr, "gapprobe: bad name %s\n", argv[4]);
		return 2;
	}
	double interval_ms = argc > 5 ? atof(argv[5]) : 2.0;
	int nsocks = argc > 6 ? atoi(argv[6]) : 4;
	if (interval_ms <= 0 || nsocks < 1 || nsocks > GP_MAX_SOCKS) {
		fprintf(stderr, "gapprobe: bad interval or socket count\n");
		return 2;
	}
	struct gsock socks[GP_MAX_SOCKS];
	memset(socks, 0, sizeof(socks));
	for (int i = 0; i < nsocks; i++) {
		int fd = socket(AF_INET, SOCK_DGRAM, 0);
		if (fd < 0 || bind(fd, (struct sockaddr *)&from, sizeof(from)) != 0 ||
		    connect(fd, (struct sockaddr *)&to, sizeof(to)) != 0) {
			perror("gapprobe: socket");
			return 1;
		}
		socks[i].fd = fd;
	}
	struct sigaction act;
	memset(&act, 0, sizeof(act));
	act.sa_handler = on_term;
	sigaction(SIGTERM, &act, NULL);
	sigaction(SIGINT, &act, NULL);

	uint64_t step = (uint64_t)(interval_ms * 1e6), next = now_ns(), t_start = next;
	uint16_t id = (uint16_t)(getpid() * 7919u);
	unsigned turn = 0;
	uint64_t end = 0;
	for (;;) {
		uint64_t t = now_ns();
		if (stop && end == 0)
			end = t + 500000000ull; /* answers still on their way */
		if (end != 0 && t >= end)
			break;
		if (end == 0 && t >= next) {
			struct gsock *s = &socks[turn++ % (unsigned)nsocks];
			id++;
			q[0] = (uint8_t)(id >> 8);
			q[1] = (uint8_t)id;
			if (send(s->fd, q, qlen, 0) == (ssize_t)qlen) {
				s->sent++;
				s->last_sent = t;
				s->last_id = id;
				s->last_id_ans = 0;
			}
			next += step;
			if (next < t)
				next = t; /* late (a busy box): no burst to catch up */
		}
		struct pollfd pf[GP_MAX_SOCKS];
		for (int i = 0; i < nsocks; i++)
			pf[i] = (struct pollfd){ .fd = socks[i].fd, .events = POLLIN };
		uint64_t until = end != 0 ? end : next;
		t = now_ns();
		int wait_ms = until > t ? (int)((until - t + 999999) / 1000000) : 0;
		if (poll(pf, (nfds_t)nsocks, wait_ms) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < nsocks; i++)
			if (pf[i].revents & POLLIN)
				take_answers(&socks[i]);
	}
	uint64_t sent = 0, answered = 0, gap = 0;
	for (int i = 0; i < nsocks; i++) {
		struct gsock *s = &socks[i];
		sent += s->sent;
		answered += s->answered;
		uint64_t g = s->max_gap;
		if (s->answered == 0)
			g = s->last_sent - t_start;
		else if (s->last_id_ans == 0 && s->last_sent > s->last_ans && s->last_sent - s->last_ans > g)
			g = s->last_sent - s->last_ans;
		if (g > gap)
			gap = g;
		close(s->fd);
	}
	printf("sent %llu answered %llu max_gap_ms %.1f\n", (unsigned long long)sent, (unsigned long long)answered,
	       (double)gap / 1e6);
	return answered > 0 ? 0 : 1;
}
