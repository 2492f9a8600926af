/* SPDX-License-Identifier: BSD-3-Clause */
/* Abusive DNS-over-TCP clients for test_tcp_abuse.sh: a pipeliner that never reads, tricklers, an address holding many connections. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 1000
#define MAX_SECONDS 120

static const char *usage_text =
	"usage: tcpabuse [-b SRC] [-d SECONDS] [-q NAME] [-y TYPE] MODE ADDR PORT ARGS\n"
	"  pipeline ADDR PORT N        N queries for NAME/TYPE back to back from SRC, never reading; when\n"
	"                              the server closes the connection the next one goes on; holds the\n"
	"                              last one until SECONDS; prints 'sent Q' (queries the kernel took),\n"
	"                              'conns C' and 'closed_ms T' (the first connection the server\n"
	"                              closed lived T ms; -1: none)\n"
	"  trickle ADDR PORT CONNS S   CONNS connections from SRC, SRC+1, ... (last octet), each sending\n"
	"                              one byte of a length-prefixed query a second, reopened 100 ms\n"
	"                              after the server closed it, for S seconds; prints 'opened O closed C\n"
	"                              max_life_ms L' (L: the longest a connection lived, open ones too)\n"
	"  hold ADDR PORT CONNS        CONNS idle connections from SRC; after 1 s prints 'open N closed M',\n"
	"                              then holds the open ones until SECONDS\n"
	"  -b SRC (127.0.0.1)  -d SECONDS (10, at most 120)  -q NAME (www.customer.example)  -y A|TXT|number (A)\n"
	"Every mode stops by itself: at SECONDS (or S), and SIGALRM a few seconds later.\n";

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int usage(void)
{
	fputs(usage_text, stderr);
	return 2;
}

/* A DNS query with its 2-byte length prefix; @return its length or 0. */
static size_t build_query(uint8_t *buf, size_t cap, uint16_t id, const char *name, uint16_t type)
{
	if (cap < 2 + 12 + 255 + 4)
		return 0;
	uint8_t *p = buf + 2;
	memset(p, 0, 12);
	p[0] = (uint8_t)(id >> 8);
	p[1] = (uint8_t)id;
	p[2] = 0x01; /* RD */
	p[5] = 1;    /* QDCOUNT */
	size_t n = 12;
	const char *s = name;
	while (*s) {
		const char *dot = strchr(s, '.');
		size_t l = dot ? (size_t)(dot - s) : strlen(s);
		if (l == 0 || l > 63 || n + 1 + l > 12 + 254)
			return 0;
		p[n++] = (uint8_t)l;
		memcpy(p + n, s, l);
		n += l;
		s += l;
		if (*s == '.')
			s++;
	}
	p[n++] = 0;
	p[n++] = (uint8_t)(type >> 8);
	p[n++] = (uint8_t)type;
	p[n++] = 0;
	p[n++] = 1; /* IN */
	buf[0] = (uint8_t)(n >> 8);
	buf[1] = (uint8_t)n;
	return n + 2;
}

/* A TCP socket from src to dst, non-blocking, connect started; -1 on error. */
static int open_conn(const struct sockaddr_in *src, const struct sockaddr_in *dst)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)src, sizeof(*src)) != 0 ||
	    (connect(fd, (const struct sockaddr *)dst, sizeof(*dst)) != 0 && errno != EINPROGRESS)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Has the server closed fd? Reads (and drops) what it sent when read_ok. */
static bool conn_closed(int fd, short revents, bool read_ok)
{
	if (revents & (POLLERR | POLLHUP | POLLRDHUP))
		return true;
	if ((revents & POLLIN) && read_ok) {
		char buf[4096];
		ssize_t k = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		return k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
	}
	return false;
}

static int mode_pipeline(const struct sockaddr_in *src, const struct sockaddr_in *dst, long n, unsigned secs,
                         const char *name, uint16_t type)
{
	enum { CHUNK = 1024 };
	static uint8_t chunk[CHUNK * (2 + 12 + 255 + 4)];
	uint8_t one[2 + 12 + 255 + 4];
	size_t qlen = build_query(one, sizeof(one), 0, name, type);
	if (qlen == 0)
		return usage();
	for (size_t i = 0; i < CHUNK; i++)
		build_query(chunk + i * qlen, sizeof(one), (uint16_t)i, name, type);
	uint64_t t0 = now_ms(), end = t0 + (uint64_t)secs * 1000u;
	uint64_t total = (uint64_t)n * qlen, sent = 0;
	long first_closed_ms = -1;
	unsigned conns = 0;
	/* one connection at a time; when the server closes it, the next one goes on pushing */
	while (now_ms() < end) {
		uint64_t opened = now_ms();
		int fd = open_conn(src, dst);
		if (fd < 0) {
			perror("tcpabuse: connect");
			return 1;
		}
		conns++;
		bool closed = false;
		while (!closed && now_ms() < end) {
			struct pollfd p = { .fd = fd, .events = POLLRDHUP | (sent < total ? POLLOUT : 0) };
			if (poll(&p, 1, 100) < 0 && errno != EINTR)
				break;
			/* never read: only a hang-up or an error says the server closed */
			if (p.revents & (POLLERR | POLLHUP | POLLRDHUP)) {
				closed = true;
				break;
			}
			while ((p.revents & POLLOUT) && sent < total) {
				size_t off = (size_t)(sent % ((uint64_t)CHUNK * qlen));
				size_t want = (size_t)CHUNK * qlen - off;
				if (want > total - sent)
					want = (size_t)(total - sent);
				ssize_t k = send(fd, chunk + off, want, MSG_NOSIGNAL | MSG_DONTWAIT);
				if (k < 0) {
					if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOTCONN)
						closed = true;
					break;
				}
				sent += (uint64_t)k;
			}
		}
		close(fd);
		sent -= sent % qlen; /* a query cut in half was not sent: the next connection starts whole */
		if (closed && first_closed_ms < 0)
			first_closed_ms = (long)(now_ms() - opened);
		if (!closed)
			break;
	}
	printf("sent %llu\nconns %u\nclosed_ms %ld\n", (unsigned long long)(sent / qlen), conns, first_closed_ms);
	return 0;
}

static int mode_trickle(const struct sockaddr_in *src, const struct sockaddr_in *dst, int conns, unsigned secs,
                        const char *name, uint16_t type)
{
	enum { REOPEN_MS = 100 };
	static int fds[MAX_CONNS];
	static uint64_t opened_at[MAX_CONNS], next_at[MAX_CONNS]; /* next byte, or the reopening */
	static size_t pos[MAX_CONNS];
	static struct pollfd p[MAX_CONNS];
	uint8_t q[2 + 12 + 255 + 4];
	size_t qlen = build_query(q, sizeof(q), 0x7777, name, type);
	if (qlen == 0)
		return usage();
	uint32_t base = ntohl(src->sin_addr.s_addr);
	unsigned long opened = 0, closed = 0;
	uint64_t max_life = 0;
	uint64_t t0 = now_ms(), end = t0 + (uint64_t)secs * 1000u;
	for (int i = 0; i < conns; i++) {
		fds[i] = -1;
		next_at[i] = t0;
	}
	while (now_ms() < end) {
		uint64_t now = now_ms(), wake = now + 1000;
		for (int i = 0; i < conns; i++) {
			if (now >= next_at[i]) {
				if (fds[i] < 0) {
					/* reopen what the server closed (REOPEN_MS after), from this one's address */
					struct sockaddr_in s = *src;
					uint32_t last = ((base & 0xffu) - 1u + (uint32_t)i) % 254u + 1u;
					s.sin_addr.s_addr = htonl((base & ~0xffu) | last);
					fds[i] = open_conn(&s, dst);
					if (fds[i] >= 0) {
						opened++;
						opened_at[i] = now;
						pos[i] = 0;
					}
				}
				/* one byte a second; not connected yet (EAGAIN, ENOTCONN): the same byte next time */
				if (fds[i] >= 0 && send(fds[i], q + pos[i] % qlen, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1)
					pos[i]++;
				next_at[i] = now + 1000;
			}
			if (next_at[i] < wake)
				wake = next_at[i];
		}
		for (int i = 0; i < conns; i++)
			p[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN | POLLRDHUP };
		if (poll(p, (nfds_t)conns, (int)(wake > now_ms() ? wake - now_ms() : 0)) < 0 && errno != EINTR)
			break;
		now = now_ms();
		for (int i = 0; i < conns; i++) {
			if (fds[i] < 0 || !conn_closed(fds[i], p[i].revents, true))
				continue;
			if (now - opened_at[i] > max_life)
				max_life = now - opened_at[i];
			closed++;
			close(fds[i]);
			fds[i] = -1;
			next_at[i] = now + REOPEN_MS;
		}
	}
	uint64_t now = now_ms();
	for (int i = 0; i < conns; i++) {
		if (fds[i] < 0)
			continue;
		if (now - opened_at[i] > max_life)
			max_life = now - opened_at[i];
		close(fds[i]);
	}
	printf("opened %lu closed %lu max_life_ms %llu\n", opened, closed, (unsigned long long)max_life);
	return 0;
}

static int mode_hold(const struct sockaddr_in *src, const struct sockaddr_in *dst, int conns, unsigned secs)
{
	static int fds[MAX_CONNS];
	static struct pollfd p[MAX_CONNS];
	uint64_t t0 = now_ms(), report = t0 + 1000, end = t0 + (uint64_t)secs * 1000u;
	int open = 0, closed = 0;
	for (int i = 0; i < conns; i++) {
		fds[i] = open_conn(src, dst);
		if (fds[i] < 0) {
			closed++;
			continue;
		}
		open++;
		usleep(10000); /* one at a time: the server sees them in order */
	}
	bool reported = false;
	while (now_ms() < end) {
		if (!reported && now_ms() >= report) {
			printf("open %d closed %d\n", open, closed);
			fflush(stdout);
			reported = true;
		}
		for (int i = 0; i < conns; i++)
			p[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN | POLLRDHUP };
		if (poll(p, (nfds_t)conns, 100) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < conns; i++) {
			if (fds[i] < 0 || !conn_closed(fds[i], p[i].revents, true))
				continue;
			close(fds[i]);
			fds[i] = -1;
			if (!reported) {
				open--;
				closed++;
			}
		}
	}
	if (!reported)
		printf("open %d closed %d\n", open, closed);
	for (int i = 0; i < conns; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return 0;
}

int main(int argc, char **argv)
{
	const char *src_text = "127.0.0.1", *name = "www.customer.example";
	long secs = 10;
	uint16_t type = 1;
	int opt;
	while ((opt = getopt(argc, argv, "b:d:q:y:")) != -1) {
		switch (opt) {
		case 'b': src_text = optarg; break;
		case 'd': secs = strtol(optarg, NULL, 10); break;
		case 'q': name = optarg; break;
		case 'y':
			if (strcmp(optarg, "A") == 0)
				type = 1;
			else if (strcmp(optarg, "TXT") == 0)
				type = 16;
			else
				type = (uint16_t)strtoul(optarg, NULL, 10);
			break;
		default: return usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 4 || secs < 1 || secs > MAX_SECONDS)
		return usage();
	struct sockaddr_in src = { .sin_family = AF_INET }, dst = { .sin_family = AF_INET };
	long port = strtol(argv[2], NULL, 10);
	if (inet_pton(AF_INET, src_text, &src.sin_addr) != 1 || inet_pton(AF_INET, argv[1], &dst.sin_addr) != 1 ||
	    port < 1 || port > 65535)
		return usage();
	dst.sin_port = htons((uint16_t)port);
	long n = strtol(argv[3], NULL, 10);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(argv[0], "pipeline") == 0) {
		if (n < 1 || n > 100000000)
			return usage();
		alarm((unsigned)secs + 5);
		return mode_pipeline(&src, &dst, n, (unsigned)secs, name, type);
	}
	if (strcmp(argv[0], "trickle") == 0) {
		long s = argc > 4 ? strtol(argv[4], NULL, 10) : 0;
		if (n < 1 || n > MAX_CONNS || s < 1 || s > MAX_SECONDS)
			return usage();
		alarm((unsigned)s + 5);
		return mode_trickle(&src, &dst, (int)n, (unsigned)s, name, type);
	}
	if (strcmp(argv[0], "hold") == 0) {
		if (n < 1 || n > MAX_CONNS)
			return usage();
		alarm((unsigned)secs + 5);
		return mode_hold(&src, &dst, (int)n, (unsigned)secs);
	}
	return usage();
}
