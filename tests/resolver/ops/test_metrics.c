/* SPDX-License-Identifier: BSD-3-Clause */
/* The Prometheus exposition (escaping, cumulative histograms, per-partition families) and the HTTP endpoint. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "conf/conf.h"
#include "resolver/ops/metrics.h"
#include "resolver/ops/metrics_http.h"

static void test_escape(void **state)
{
	char out[64];
	assert_int_equal(metrics_escape_label("plain-name_1", out, sizeof(out)), 12);
	assert_string_equal(out, "plain-name_1");
	assert_int_equal(metrics_escape_label("a\\b\"c\nd", out, sizeof(out)), 10);
	assert_string_equal(out, "a\\\\b\\\"c\\nd");
	/* cut, still terminated; the return says how much was needed */
	char small[4];
	assert_int_equal(metrics_escape_label("\"\"\"", small, sizeof(small)), 6);
	assert_string_equal(small, "\\\"\\");
}

static char *write_hist(const struct stats_hist *h, const char *labels)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	metrics_write_histogram(f, "x_seconds", labels, h);
	fclose(f);
	return buf;
}

static void test_histogram_cumulative(void **state)
{
	struct stats_hist h = { .sum_ns = 1500000000u };
	h.bucket[0] = 1;       /* <= 100 us */
	h.bucket[2] = 2;       /* <= 500 us */
	h.bucket[HIST_NB] = 3; /* over 5 s */
	char *s = write_hist(&h, "pool=\"edns\"");
	assert_non_null(strstr(s, "x_seconds_bucket{pool=\"edns\",le=\"0.0001\"} 1\n"));
	assert_non_null(strstr(s, "x_seconds_bucket{pool=\"edns\",le=\"0.00025\"} 1\n"));
	assert_non_null(strstr(s, "x_seconds_bucket{pool=\"edns\",le=\"0.0005\"} 3\n"));
	assert_non_null(strstr(s, "x_seconds_bucket{pool=\"edns\",le=\"1\"} 3\n"));
	assert_non_null(strstr(s, "x_seconds_bucket{pool=\"edns\",le=\"5\"} 3\n"));
	assert_non_null(strstr(s, "x_seconds_bucket{pool=\"edns\",le=\"+Inf\"} 6\n"));
	assert_non_null(strstr(s, "x_seconds_sum{pool=\"edns\"} 1.500000000\n"));
	assert_non_null(strstr(s, "x_seconds_count{pool=\"edns\"} 6\n"));
	/* every bucket line is >= the one before */
	unsigned long long prev = 0, v;
	int n = 0;
	for (const char *p = strstr(s, "_bucket"); p; p = strstr(p + 1, "_bucket")) {
		assert_int_equal(sscanf(strchr(p, '}') + 1, "%llu", &v), 1);
		assert_true(v >= prev);
		prev = v;
		n++;
	}
	assert_int_equal(n, HIST_NB + 1);
	free(s);
	s = write_hist(&h, "");
	assert_non_null(strstr(s, "x_seconds_bucket{le=\"+Inf\"} 6\n"));
	assert_non_null(strstr(s, "x_seconds_sum 1.500000000\n"));
	assert_non_null(strstr(s, "x_seconds_count 6\n"));
	free(s);
}

static const char conf_text[] = "partitions:\n  list:\n"
                                "    - { name: nanjing, mapped: 198.51.100.1, prefixes: [ 10.1.0.0/16 ] }\n"
                                "    - { name: suzhou, mapped: 198.51.100.2, prefixes: [ 10.2.0.0/16 ] }\n";

static void test_write_view(void **state)
{
	struct conf *c = NULL;
	assert_int_equal(conf_load_string(conf_text, strlen(conf_text), "test.yaml", NULL, &c, NULL), 0);
	struct stats_partition part[3] = { { .udp = 1 }, { .udp = 5, .tcp = 2, .hits = 4, .misses = 3, .edns = 1 },
	                                   { .tcp = 7 } };
	part[1].rcode[PRC_NXDOMAIN] = 6;
	part[2].rcode[PRC_BADVERS] = 8;
	struct stats_view v = { .uptime = 9, .partitions = c->partitions.table, .part = part, .inflight_edns = 2 };
	v.listeners[0] = 0;
	v.pool[STATS_POOL_EDNS][0] = 0;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	metrics_write(f, &v);
	fclose(f);
	assert_non_null(strstr(buf, "partdns_partition_queries_total{partition=\"nanjing\",transport=\"udp\"} 5\n"));
	assert_non_null(strstr(buf, "partdns_partition_queries_total{partition=\"nanjing\",transport=\"tcp\"} 2\n"));
	assert_non_null(strstr(buf, "partdns_partition_queries_total{partition=\"suzhou\",transport=\"tcp\"} 7\n"));
	assert_non_null(strstr(buf, "partdns_partition_queries_total{partition=\"common\",transport=\"udp\"} 1\n"));
	assert_non_null(strstr(buf, "partdns_partition_cache_hits_total{partition=\"nanjing\"} 4\n"));
	assert_non_null(strstr(buf, "partdns_partition_cache_misses_total{partition=\"nanjing\"} 3\n"));
	assert_non_null(strstr(buf, "partdns_partition_ecs_resolutions_total{partition=\"nanjing\"} 1\n"));
	assert_non_null(strstr(buf, "partdns_inflight{pool=\"edns\"} 2\n"));
	assert_non_null(strstr(buf, "partdns_partition_responses_total{partition=\"nanjing\",rcode=\"NXDOMAIN\"} 6\n"));
	assert_non_null(strstr(buf, "partdns_partition_responses_total{partition=\"nanjing\",rcode=\"NOERROR\"} 0\n"));
	assert_non_null(strstr(buf, "partdns_partition_responses_total{partition=\"suzhou\",rcode=\"BADVERS\"} 8\n"));
	/* every sample belongs to the family whose # TYPE came last, and every # TYPE follows its # HELP */
	char family[128] = "";
	char *save = NULL;
	int types = 0;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "# HELP ", 7) == 0) {
			continue;
		} else if (strncmp(line, "# TYPE ", 7) == 0) {
			assert_int_equal(sscanf(line + 7, "%127s", family), 1);
			types++;
		} else {
			assert_true(family[0] != '\0');
			assert_int_equal(strncmp(line, family, strlen(family)), 0);
			char next = line[strlen(family)];
			assert_true(next == ' ' || next == '{' || next == '_');
			if (strstr(family, "_total"))
				assert_true(next == ' ' || next == '{');
		}
	}
	assert_true(types > 20);
	free(buf);
	conf_free(c);
}

/* ---- the HTTP endpoint ---- */

static int collect(void *arg, FILE *out)
{
	(*(int *)arg)++;
	fputs("# HELP t_total A test.\n# TYPE t_total counter\nt_total 1\n", out);
	return 0;
}

static uint16_t free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

static int connect_to(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
	                         .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

/* One request; the whole response (the server closes: Connection: close) within 2 s, in buf. */
static int request(uint16_t port, const char *req, char *buf, size_t cap)
{
	int fd = connect_to(port);
	assert_int_equal(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
	size_t n = 0;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 2000) != 1)
			break;
		ssize_t r = recv(fd, buf + n, cap - 1 - n, 0);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	close(fd);
	int status = 0;
	sscanf(buf, "HTTP/1.%*d %d", &status);
	return status;
}

static void test_http(void **state)
{
	uint16_t port = free_port();
	char text[32];
	snprintf(text, sizeof(text), "127.0.0.1@%u", port);
	struct conf_addr a;
	assert_int_equal(conf_addr_parse(text, 0, &a), 0);
	int calls = 0;
	struct metrics_http *m = metrics_http_new(&a, false, collect, &calls);
	assert_non_null(m);
	/* the same address again: a clear failure, not a second server */
	assert_null(metrics_http_new(&a, false, collect, &calls));
	assert_int_equal(metrics_http_start(m), 0);

	char buf[8192];
	assert_int_equal(request(port, "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", buf, sizeof(buf)),
	                 503);
	metrics_http_set_ready(m, true);
	assert_int_equal(request(port, "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", buf, sizeof(buf)),
	                 200);
	assert_non_null(strstr(buf, "\r\n\r\nready\n"));

	/* a client that connects and says nothing does not hold up a scrape */
	int silent = connect_to(port);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(request(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", buf, sizeof(buf)),
	                 200);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 < 1000);
	assert_non_null(strstr(buf, "Content-Type: text/plain; version=0.0.4"));
	assert_non_null(strstr(buf, "\r\n\r\n# HELP t_total A test.\n"));
	assert_int_equal(calls, 1);
	close(silent);

	assert_int_equal(request(port, "HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", buf, sizeof(buf)),
	                 200);
	assert_null(strstr(buf, "t_total 1"));
	assert_int_equal(request(port, "POST /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 3\r\n\r\nabc",
	                         buf, sizeof(buf)),
	                 405);
	assert_non_null(strstr(buf, "Allow: GET, HEAD"));
	assert_int_equal(request(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 3\r\n\r\nabc",
	                         buf, sizeof(buf)),
	                 400);
	assert_int_equal(request(port, "GET /other HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", buf, sizeof(buf)), 404);
	assert_int_equal(calls, 2); /* HEAD gathers too; refused requests never do */

	metrics_http_set_ready(m, false); /* shutting down */
	assert_int_equal(request(port, "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", buf, sizeof(buf)),
	                 503);
	metrics_http_free(m);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
	                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_not_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0); /* the socket is closed */
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_histogram_cumulative),
		cmocka_unit_test(test_write_view),
		cmocka_unit_test(test_http),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
