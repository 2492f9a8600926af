/* SPDX-License-Identifier: BSD-3-Clause */
/* A DNS server that never answers: reads UDP queries on ADDR PORT and counts them, for timeout tests. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: blackhole ADDR PORT COUNTFILE\n");
		return 2;
	}
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2])) };
	if (inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1) {
		fprintf(stderr, "blackhole: bad address %s\n", argv[1]);
		return 2;
	}
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		perror("blackhole: bind");
		return 1;
	}
	struct sigaction act;
	memset(&act, 0, sizeof(act));
	act.sa_handler = on_term;
	sigaction(SIGTERM, &act, NULL);
	sigaction(SIGINT, &act, NULL);
	unsigned long n = 0;
	char buf[4096];
	while (!stop) {
		if (recv(fd, buf, sizeof(buf), 0) > 0) {
			n++;
			FILE *f = fopen(argv[3], "w");
			if (f) {
				fprintf(f, "%lu\n", n);
				fclose(f);
			}
		}
	}
	close(fd);
	return 0;
}
