/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of the config loader: values, defaults, each message (data/err_*.yaml), includes, scale. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "conf/conf.h"
#include "mapping/ecs.h"
#include "mapping/export.h"
#include "mapping/mapping.h"
#include "partition/partition.h"
#include "partition/prefix.h"

static char data_dir[PATH_MAX + 8]; /* tests/conf/data, absolute; also the cwd during tests */
static char src_dir[PATH_MAX];      /* tests/conf */

static int group_setup(void **state)
{
	const char *d = getenv("PARTDNS_TEST_DATA");
	if (d == NULL) {
		fprintf(stderr, "PARTDNS_TEST_DATA is not set\n");
		return -1;
	}
	if (realpath(d, src_dir) == NULL)
		return -1;
	snprintf(data_dir, sizeof(data_dir), "%s/data", src_dir);
	/* Messages name files relative to the cwd, as the .expect files do. */
	return chdir(data_dir);
}

/* Output captured from a load. */
struct capture {
	char *text;
	size_t len;
	FILE *f;
};

static FILE *capture_open(struct capture *cap)
{
	memset(cap, 0, sizeof(*cap));
	cap->f = open_memstream(&cap->text, &cap->len);
	assert_non_null(cap->f);
	return cap->f;
}

static const char *capture_close(struct capture *cap)
{
	fclose(cap->f);
	cap->f = NULL;
	return cap->text;
}

static int load_string(const char *text, struct conf **c, char **out, unsigned *nerrors)
{
	struct capture cap;
	int rc = conf_load_string(text, strlen(text), "t.yaml", capture_open(&cap), c, nerrors);
	*out = (char *)capture_close(&cap);
	return rc;
}

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	char chunk[4096];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, n, m);
	fclose(f);
	fclose(m);
	return buf;
}

static unsigned count_lines_with(const char *text, const char *needle)
{
	unsigned n = 0;
	for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

/* conf_addr_parse */

static void test_addr_parse(void **state)
{
	static const struct {
		const char *text;
		uint16_t defport;
		int rc;
		int family;
		const char *norm;
		const char *msg;
	} v[] = {
		{ "127.0.0.1", 53, 0, AF_INET, "127.0.0.1@53", "IPv4, default port" },
		{ "127.0.0.1@5353", 53, 0, AF_INET, "127.0.0.1@5353", "IPv4 with port" },
		{ "10.0.0.54@5300", 0, 0, AF_INET, "10.0.0.54@5300", "port given, no default" },
		{ "::1", 53, 0, AF_INET6, "::1@53", "IPv6, default port" },
		{ "::1@5353", 53, 0, AF_INET6, "::1@5353", "IPv6 with port" },
		{ "2001:DB8:0:0::1@65535", 53, 0, AF_INET6, "2001:db8::1@65535",
		  "IPv6 normalized, max port" },
		{ "::ffff:192.0.2.1@1", 53, 0, AF_INET6, "::ffff:192.0.2.1@1",
		  "v4-mapped, min port" },
		{ "127.0.0.1@00053", 53, 0, AF_INET, "127.0.0.1@53", "leading zeros in the port" },
		{ "127.0.0.1", 0, CONF_E_TARGET, 0, NULL, "no port and no default" },
		{ "127.0.0.1@0", 53, CONF_E_TARGET, 0, NULL, "port 0" },
		{ "127.0.0.1@65536", 53, CONF_E_TARGET, 0, NULL, "port too large" },
		{ "127.0.0.1@123456", 53, CONF_E_TARGET, 0, NULL, "port too long" },
		{ "127.0.0.1@", 53, CONF_E_TARGET, 0, NULL, "empty port" },
		{ "127.0.0.1@53x", 53, CONF_E_TARGET, 0, NULL, "junk after the port" },
		{ "127.0.0.1@+53", 53, CONF_E_TARGET, 0, NULL, "signed port" },
		{ "127.0.0.1@53@54", 53, CONF_E_TARGET, 0, NULL, "two ports" },
		{ "[::1]@53", 53, CONF_E_TARGET, 0, NULL, "brackets" },
		{ "[::1]:53", 53, CONF_E_TARGET, 0, NULL, "bracket-colon form" },
		{ "localhost", 53, CONF_E_TARGET, 0, NULL, "a host name" },
		{ "", 53, CONF_E_TARGET, 0, NULL, "empty" },
		{ "@53", 53, CONF_E_TARGET, 0, NULL, "no address" },
		{ "127.0.0.1/8", 53, CONF_E_TARGET, 0, NULL, "a prefix" },
		{ "127.1", 53, CONF_E_TARGET, 0, NULL, "short IPv4 form" },
		{ " 127.0.0.1", 53, CONF_E_TARGET, 0, NULL, "leading space" },
		{ "fe80::1%lo@53", 53, CONF_E_TARGET, 0, NULL, "scope id" },
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct conf_addr a;
		int rc = conf_addr_parse(v[i].text, v[i].defport, &a);
		if (rc != v[i].rc)
			fail_msg("%s: '%s' gave %d, want %d", v[i].msg, v[i].text, rc, v[i].rc);
		if (rc != 0)
			continue;
		if (a.ss.ss_family != v[i].family || strcmp(a.text, v[i].norm) != 0)
			fail_msg("%s: '%s' gave family %d text '%s'", v[i].msg, v[i].text,
			         a.ss.ss_family, a.text);
		if (v[i].family == AF_INET) {
			const struct sockaddr_in *sin = (const struct sockaddr_in *)&a.ss;
			assert_int_equal(a.len, sizeof(*sin));
			char buf[64];
			snprintf(buf, sizeof(buf), "%s@%u", inet_ntoa(sin->sin_addr),
			         ntohs(sin->sin_port));
			if (strcmp(buf, v[i].norm) != 0)
				fail_msg("%s: sockaddr says %s", v[i].msg, buf);
		} else {
			const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&a.ss;
			assert_int_equal(a.len, sizeof(*sin6));
			char ab[INET6_ADDRSTRLEN], buf[80];
			inet_ntop(AF_INET6, &sin6->sin6_addr, ab, sizeof(ab));
			snprintf(buf, sizeof(buf), "%s@%u", ab, ntohs(sin6->sin6_port));
			if (strcmp(buf, v[i].norm) != 0)
				fail_msg("%s: sockaddr says %s", v[i].msg, buf);
		}
	}
}

/* conf_source_parse_why: resolver.outgoing, edns.outgoing */

static void test_source_parse(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		int family; /* 0: refused */
		const char *norm;
	} v[] = {
		{ "192.0.2.1", AF_INET, "192.0.2.1" },
		{ "127.0.0.77", AF_INET, "127.0.0.77" },
		{ "2001:DB8:0::1", AF_INET6, "2001:db8::1" },
		{ "::1", AF_INET6, "::1" },
		{ "192.0.2.1@53", 0, NULL },     /* no port */
		{ "[2001:db8::1]", 0, NULL },    /* brackets */
		{ "0.0.0.0", 0, NULL },          /* wildcard */
		{ "::", 0, NULL },               /* wildcard */
		{ "224.0.0.1", 0, NULL },        /* multicast */
		{ "239.255.255.255", 0, NULL },  /* multicast */
		{ "ff05::1:3", 0, NULL },        /* multicast */
		{ "255.255.255.255", 0, NULL },  /* broadcast */
		{ "::ffff:192.0.2.1", 0, NULL }, /* IPv4-mapped */
		{ "fe80::1", 0, NULL },          /* link-local */
		{ "192.0.2.0/24", 0, NULL },     /* a prefix */
		{ "localhost", 0, NULL },
		{ "", 0, NULL },
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct conf_addr a;
		const char *why = NULL;
		int rc = conf_source_parse_why(v[i].text, &a, &why);
		if (v[i].family == 0) {
			if (rc != CONF_E_TARGET || why == NULL)
				fail_msg("'%s' accepted (rc %d)", v[i].text, rc);
			continue;
		}
		if (rc != 0 || a.ss.ss_family != v[i].family || strcmp(a.text, v[i].norm) != 0)
			fail_msg("'%s': rc %d, family %d, text '%s'", v[i].text, rc, a.ss.ss_family, a.text);
		/* port 0: the kernel (or the pool) picks the port */
		uint16_t port = v[i].family == AF_INET ? ((const struct sockaddr_in *)&a.ss)->sin_port
		                                       : ((const struct sockaddr_in6 *)&a.ss)->sin6_port;
		assert_int_equal(port, 0);
		assert_int_equal(a.len, v[i].family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
	}
}

/* conf_name_normalize */

static void test_name_normalize(void **state)
{
	char l63[64], l64[65], long253[300], long254[300];
	memset(l63, 'a', 63);
	l63[63] = '\0';
	memset(l64, 'a', 64);
	l64[64] = '\0';
	/* 4 labels of 63 = 252 chars + 3 dots = 255 > 253; build exact lengths instead. */
	memset(long253, 'b', 253);
	long253[253] = '\0';
	for (int i = 63; i < 253; i += 64)
		long253[i] = '.';
	memcpy(long254, long253, 254);
	long254[253] = 'c';
	long254[254] = '\0';
	char long253dot[300];
	snprintf(long253dot, sizeof(long253dot), "%.253s.", long253);

	static char want253[300];
	snprintf(want253, sizeof(want253), "%.253s.", long253);
	char want63[128];
	snprintf(want63, sizeof(want63), "%.63s.example.", l63);
	char in63[128];
	snprintf(in63, sizeof(in63), "%.63s.example", l63);
	char in64[128];
	snprintf(in64, sizeof(in64), "%.64s.example", l64);

	const struct {
		const char *text;
		int rc;
		const char *want;
		const char *msg;
	} v[] = {
		{ "example.com", 0, "example.com.", "adds the trailing dot" },
		{ "example.com.", 0, "example.com.", "keeps the trailing dot" },
		{ "Corp.EXAMPLE.", 0, "corp.example.", "lower-cases" },
		{ ".", 0, ".", "the root" },
		{ "a", 0, "a.", "one label" },
		{ "_sip._tcp.example", 0, "_sip._tcp.example.", "underscores" },
		{ "xn--fsqu00a.example", 0, "xn--fsqu00a.example.", "punycode" },
		{ "a*b.example", 0, "a*b.example.", "other printable characters" },
		{ in63, 0, want63, "63-character label" },
		{ long253, 0, want253, "253 characters" },
		{ long253dot, 0, want253, "253 characters and the final dot" },
		{ in64, -EINVAL, NULL, "64-character label" },
		{ long254, -EINVAL, NULL, "254 characters" },
		{ "", -EINVAL, NULL, "empty" },
		{ "..", -EINVAL, NULL, "two dots" },
		{ "a..b", -EINVAL, NULL, "empty label" },
		{ ".a", -EINVAL, NULL, "leading dot" },
		{ "a..", -EINVAL, NULL, "two trailing dots" },
		{ "a b", -EINVAL, NULL, "space" },
		{ "a\tb", -EINVAL, NULL, "tab" },
		{ "a\\.b", -EINVAL, NULL, "backslash" },
		{ "a\001b", -EINVAL, NULL, "control character" },
		{ "caf\xc3\xa9.example", -EINVAL, NULL, "non-ASCII" },
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		char out[256];
		memset(out, 'X', sizeof(out));
		int rc = conf_name_normalize(v[i].text, out, sizeof(out));
		if (rc != v[i].rc)
			fail_msg("%s: gave %d, want %d", v[i].msg, rc, v[i].rc);
		if (rc == 0 && strcmp(out, v[i].want) != 0)
			fail_msg("%s: gave '%s', want '%s'", v[i].msg, out, v[i].want);
		/* Normalized names are fixed points (the store relies on it). */
		if (rc == 0) {
			char again[256];
			assert_int_equal(conf_name_normalize(out, again, sizeof(again)), 0);
			assert_string_equal(again, out);
		}
	}
	char small[4];
	assert_int_equal(conf_name_normalize("abc", small, sizeof(small)), -EINVAL);
	assert_int_equal(conf_name_normalize("ab", small, sizeof(small)), 0);
	assert_string_equal(small, "ab.");
}

static void test_strerror(void **state)
{
	assert_string_equal(conf_strerror(CONF_E_INVALID), "the configuration has errors");
	assert_string_equal(conf_strerror(CONF_E_YAML), "not well-formed YAML");
	assert_string_equal(conf_strerror(CONF_E_TARGET), "bad ADDR[@PORT]");
	assert_string_equal(conf_strerror(-ENOENT), strerror(ENOENT));
	assert_string_equal(conf_strerror(-99999), "unknown error");
}

/* Defaults */

static void assert_defaults(const struct conf *c, const char *msg)
{
	if (c->server.nlisten != 2 || strcmp(c->server.listen[0].text, "127.0.0.1@5353") != 0 ||
	    strcmp(c->server.listen[1].text, "::1@5353") != 0)
		fail_msg("%s: listen", msg);
	assert_int_equal(c->server.threads, 2);
	assert_int_equal(c->server.nallow, 2);
	char buf[PREFIX_STRLEN];
	prefix_format(&c->server.allow[0], buf, sizeof(buf));
	assert_string_equal(buf, "127.0.0.0/8");
	prefix_format(&c->server.allow[1], buf, sizeof(buf));
	assert_string_equal(buf, "::1/128");
	assert_string_equal(c->server.control, "/run/partdns/control.sock");
	assert_string_equal(c->server.store, "/var/lib/partdns");
	assert_false(c->server.create_store);
	assert_string_equal(c->server.dnstap, ""); /* off */
	assert_int_equal(c->server.tcp_idle_ms, 10000);
	assert_int_equal(c->server.tcp_max_clients, 1000);
	assert_int_equal(c->cache.max_bytes, 256ull << 20);
	assert_int_equal(c->cache.min_ttl, 0);
	assert_int_equal(c->cache.max_ttl, 86400);
	assert_int_equal(c->cache.max_negative_ttl, 3600);
	assert_string_equal(c->resolver.root_hints, "");
	assert_int_equal(c->resolver.ntrust_anchor, 0);
	assert_int_equal(c->resolver.nforward_zones, 0);
	assert_int_equal(c->resolver.noptions, 0);
	assert_int_equal(c->edns.threads, 1);
	assert_int_equal(c->edns.policy, CONF_POLICY_ITERATE);
	assert_int_equal(c->edns.nforward, 0);
	assert_int_equal(c->edns.timeout_ms, 1500);
	assert_int_equal(c->edns.max_inflight, 1000);
	assert_int_equal(c->edns.ntrusted_ecs, 0);
	assert_int_equal(c->partitions.unmatched, CONF_UNMATCHED_COMMON);
	assert_null(c->partitions.include);
	assert_non_null(c->partitions.table);
	assert_non_null(c->partitions.mapping);
	assert_int_equal(ptable_size(c->partitions.table), 0);
	assert_int_equal(mapping_size(c->partitions.mapping), 0);
}

static void test_defaults(void **state)
{
	static const struct {
		const char *text;
		const char *msg;
	} v[] = {
		/* An empty file is an error (test_empty); an empty mapping is a choice. */
		{ "{}\n", "an empty mapping" },
		{ "server:\ncache:\nresolver:\nedns:\npartitions:\n", "empty sections" },
		{ "server: {}\npartitions: { list: [] }\n", "empty flow sections" },
		{ "server:\n  threads:\n  listen: ~\n", "null values keep defaults" },
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct conf *c;
		char *out;
		unsigned nerr = 99;
		int rc = load_string(v[i].text, &c, &out, &nerr);
		if (rc != 0 || nerr != 0 || out[0] != '\0')
			fail_msg("%s: rc %d, %u errors, output '%s'", v[i].msg, rc, nerr, out);
		assert_string_equal(c->path, "t.yaml");
		assert_defaults(c, v[i].msg);
		free(out);
		conf_free(c);
	}
}

/* A file without a single setting is refused, whatever it holds instead. */
static void test_empty(void **state)
{
	static const struct {
		const char *text;
		size_t len;
		const char *msg;
	} v[] = {
		{ "", 0, "empty text" },
		{ "\n\n", 2, "blank lines" },
		{ "   \n  \n", 7, "spaces" },
		{ "# only a comment\n", 17, "a comment" },
		{ "# a\n\n# b\n   # c\n", 16, "comments and blanks" },
		{ "---\n", 4, "an empty document" },
		{ "# c\n---\n...\n", 12, "a comment and an empty document" },
		{ "--- ~\n...\n", 10, "a null document" },
		{ "null\n", 5, "null" },
		{ "~", 1, "a tilde" },
		{ "\xef\xbb\xbf", 3, "a byte order mark" },
		{ "\xef\xbb\xbf# c\n", 7, "a byte order mark and a comment" },
	};
	const char *want = "t.yaml:1:1: error: the file is empty; start from conf/partdns.yaml\n";
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		assert_int_equal(strlen(v[i].text), v[i].len);
		struct capture cap;
		struct conf *c = (struct conf *)&cap; /* must be reset */
		unsigned nerr = 99;
		int rc = conf_load_string(v[i].text, v[i].len, "t.yaml", capture_open(&cap), &c,
		                          &nerr);
		const char *out = capture_close(&cap);
		if (rc != CONF_E_INVALID || nerr != 1 || c != NULL || strcmp(out, want) != 0)
			fail_msg("%s: rc %d, %u errors, output '%s'", v[i].msg, rc, nerr, out);
		free(cap.text);
	}
	/* One setting is enough, even one that keeps its default. */
	struct conf *c;
	char *out;
	assert_int_equal(load_string("server:\n  threads: 2\n", &c, &out, NULL), 0);
	assert_string_equal(out, "");
	free(out);
	conf_free(c);
}

static void test_threads_auto(void **state)
{
	struct conf *c;
	char *out;
	assert_int_equal(load_string("server: { threads: 0 }\n", &c, &out, NULL), 0);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned want = n < 1 ? 1 : n > 256 ? 256 : (unsigned)n;
	assert_int_equal(c->server.threads, want);
	assert_string_equal(out, "");
	free(out);
	conf_free(c);
}

/* Every key set: data/ok_full.yaml. */
static void test_full(void **state)
{
	struct capture cap;
	struct conf *c;
	unsigned nerr = 99;
	int rc = conf_load("ok_full.yaml", capture_open(&cap), &c, &nerr);
	const char *out = capture_close(&cap);
	if (rc != 0)
		fail_msg("rc %d: %s", rc, out);
	assert_int_equal(nerr, 0);
	assert_string_equal(out, "");
	free(cap.text);

	assert_string_equal(c->path, "ok_full.yaml");
	assert_int_equal(c->server.nlisten, 3);
	assert_string_equal(c->server.listen[0].text, "127.0.0.1@5353");
	assert_string_equal(c->server.listen[1].text, "::1@5353");
	assert_string_equal(c->server.listen[2].text, "127.0.0.2@53");
	assert_int_equal(c->server.threads, 4);
	assert_int_equal(c->server.nallow, 3);
	char buf[PREFIX_STRLEN];
	prefix_format(&c->server.allow[2], buf, sizeof(buf));
	assert_string_equal(buf, "10.0.0.0/8");
	assert_string_equal(c->server.control, "/tmp/partdns.sock");
	assert_string_equal(c->server.store, "/tmp/partdns-store");
	assert_true(c->server.create_store);
	assert_int_equal(c->server.tcp_idle_ms, 100);
	assert_int_equal(c->server.tcp_max_clients, 100000);
	assert_int_equal(c->cache.max_bytes, 1ull << 30);
	assert_int_equal(c->cache.min_ttl, 5);
	assert_int_equal(c->cache.max_ttl, 3600);
	assert_int_equal(c->cache.max_negative_ttl, 600);
	assert_string_equal(c->resolver.root_hints, "/etc/partdns/root.hints");
	assert_int_equal(c->resolver.ntrust_anchor, 1); /* one string: the form before lists */
	assert_string_equal(c->resolver.trust_anchor[0], "/var/lib/partdns/root.key");
	assert_int_equal(c->resolver.nforward_zones, 2);
	assert_string_equal(c->resolver.forward_zones[0].name, "corp.example.");
	assert_int_equal(c->resolver.forward_zones[0].nservers, 2);
	assert_string_equal(c->resolver.forward_zones[0].servers[0].text, "10.0.0.53@53");
	assert_string_equal(c->resolver.forward_zones[0].servers[1].text, "10.0.0.54@5300");
	assert_string_equal(c->resolver.forward_zones[1].name, "lab.example.");
	assert_string_equal(c->resolver.forward_zones[1].servers[0].text, "2001:db8::53@53");
	assert_int_equal(c->resolver.noptions, 2);
	assert_string_equal(c->resolver.options[0].name, "do-not-query-localhost:");
	assert_string_equal(c->resolver.options[0].value, "no");
	assert_string_equal(c->resolver.options[1].name, "edns-buffer-size:");
	assert_string_equal(c->resolver.options[1].value, "1232");
	assert_int_equal(c->edns.threads, 3);
	assert_int_equal(c->edns.policy, CONF_POLICY_FORWARD);
	assert_int_equal(c->edns.nforward, 2);
	assert_string_equal(c->edns.forward[0].text, "127.0.0.53@53");
	assert_string_equal(c->edns.forward[1].text, "::1@5300");
	assert_int_equal(c->edns.timeout_ms, 50);
	assert_int_equal(c->edns.max_inflight, 1000000);
	assert_int_equal(c->edns.ntrusted_ecs, 1);
	prefix_format(&c->edns.trusted_ecs[0], buf, sizeof(buf));
	assert_string_equal(buf, "127.0.0.1/32");

	const struct ptable *t = c->partitions.table;
	assert_int_equal(ptable_size(t), 3);
	assert_string_equal(ptable_name(t, 1), "nanjing");
	assert_string_equal(ptable_name(t, 2), "suzhou");
	assert_string_equal(ptable_name(t, 3), "wuxi");
	assert_int_equal(c->partitions.unmatched, CONF_UNMATCHED_PARTITION);
	assert_int_equal(c->partitions.unmatched_id, 3);
	assert_int_equal(ptable_prefix_count(t, 1, AF_INET), 3);
	assert_int_equal(ptable_prefix_count(t, 1, AF_INET6), 1);
	assert_int_equal(ptable_prefix_count(t, 2, 0), 2);
	assert_int_equal(ptable_prefix_count(t, 3, 0), 0);

	static const struct {
		const char *addr;
		unsigned id;
	} lk[] = {
		{ "10.1.2.3", 1 },        { "203.0.113.127", 1 }, { "203.0.113.128", 2 },
		{ "10.2.0.1", 2 },        { "10.3.0.1", 0 },      { "2001:db8:100::1", 1 },
		{ "2001:db8:200::1", 0 }, { "198.51.100.1", 1 },
	};
	for (size_t i = 0; i < sizeof(lk) / sizeof(lk[0]); i++) {
		struct prefix p;
		assert_int_equal(prefix_parse_addr(lk[i].addr, &p), 0);
		unsigned id = ptable_lookup(t, p.family, p.addr, NULL);
		if (id != lk[i].id)
			fail_msg("%s: partition %u, want %u", lk[i].addr, id, lk[i].id);
	}

	const struct mapping_entry *e = mapping_get(c->partitions.mapping, 1);
	assert_non_null(e);
	assert_true(e->has_v4);
	prefix_format(&e->v4, buf, sizeof(buf));
	assert_string_equal(buf, "198.51.100.1/32");
	assert_true(e->has_v6);
	prefix_format(&e->v6, buf, sizeof(buf));
	assert_string_equal(buf, "2001:db8:100::/56");
	assert_string_equal(e->label, "Nanjing");
	assert_string_equal(e->country, "CN");
	assert_string_equal(e->region, "CN-JS");
	assert_string_equal(e->city, "Nanjing");
	assert_string_equal(e->postal, "210000");
	e = mapping_get(c->partitions.mapping, 2);
	assert_non_null(e);
	assert_true(e->has_v4);
	assert_false(e->has_v6);
	assert_null(e->label);
	assert_string_equal(e->country, "CN");   /* written "cn" */
	assert_string_equal(e->region, "CN-JS"); /* written "cn-js" */
	e = mapping_get(c->partitions.mapping, 3);
	assert_non_null(e);
	assert_false(e->has_v4);
	assert_true(e->has_v6);
	struct ecs ecs;
	assert_int_equal(mapping_ecs(c->partitions.mapping, 3, AF_INET, &ecs), 0);
	assert_int_equal(ecs.family, ECS_FAMILY_IPV6);
	conf_free(c);
}

/*
 * Every data/ok_*.yaml loads with its .expect output (no .expect: silent);
 * every err_*.yaml fails with exactly its .expect.
 */
static int name_sort(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_data_files(void **state)
{
	DIR *d = opendir(".");
	assert_non_null(d);
	char *names[512];
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name);
		if (l < 5 || strcmp(e->d_name + l - 5, ".yaml") != 0)
			continue;
		if (strncmp(e->d_name, "ok_", 3) != 0 && strncmp(e->d_name, "err_", 4) != 0)
			continue;
		assert_true(n < sizeof(names) / sizeof(names[0]));
		names[n++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(names[0]), name_sort);
	unsigned nok = 0, nerr_files = 0;
	for (size_t i = 0; i < n; i++) {
		bool ok = strncmp(names[i], "ok_", 3) == 0;
		char expect_path[PATH_MAX];
		snprintf(expect_path, sizeof(expect_path), "%.*s.expect",
		         (int)(strlen(names[i]) - 5), names[i]);
		char *expect = read_all(expect_path);
		if (expect == NULL && !ok)
			fail_msg("%s: no %s", names[i], expect_path);
		struct capture cap;
		struct conf *c = NULL;
		unsigned nerr = 12345;
		int rc = conf_load(names[i], capture_open(&cap), &c, &nerr);
		const char *out = capture_close(&cap);
		const char *want = expect != NULL ? expect : "";
		if (strcmp(out, want) != 0)
			fail_msg("%s: output differs.\n--- got:\n%s--- want:\n%s---", names[i], out,
			         want);
		unsigned lines = count_lines_with(out, ": error: ");
		if (ok) {
			if (rc != 0 || c == NULL || nerr != 0)
				fail_msg("%s: rc %d, %u errors", names[i], rc, nerr);
			nok++;
		} else {
			if (rc != CONF_E_INVALID && rc != CONF_E_YAML)
				fail_msg("%s: rc %d", names[i], rc);
			if (c != NULL)
				fail_msg("%s: a conf came back with errors", names[i]);
			if (nerr == 0 || nerr != lines)
				fail_msg("%s: %u errors counted, %u printed", names[i], nerr,
				         lines);
			/* Files named err_yaml_* hold YAML that is not well-formed. */
			bool yaml = strncmp(names[i], "err_yaml_", 9) == 0;
			if ((rc == CONF_E_YAML) != yaml)
				fail_msg("%s: rc %d (%s)", names[i], rc, conf_strerror(rc));
			nerr_files++;
		}
		conf_free(c);
		free(cap.text);
		free(expect);
		free(names[i]);
	}
	/* Guard against an empty or misplaced data directory. */
	assert_true(nok >= 4);
	assert_true(nerr_files >= 25);
}

/* conf_load_string gives the same messages under the given name. */
static void test_load_string_name(void **state)
{
	char *text = read_all("err_range.yaml");
	char *want = read_all("err_range.expect");
	assert_non_null(text);
	assert_non_null(want);
	struct capture cap;
	struct conf *c;
	unsigned nerr;
	int rc =
	    conf_load_string(text, strlen(text), "err_range.yaml", capture_open(&cap), &c, &nerr);
	const char *out = capture_close(&cap);
	assert_int_equal(rc, CONF_E_INVALID);
	assert_null(c);
	assert_string_equal(out, want);
	/* err may be NULL. */
	rc = conf_load_string(text, strlen(text), "x", NULL, &c, &nerr);
	assert_int_equal(rc, CONF_E_INVALID);
	assert_int_equal(nerr, count_lines_with(want, ": error: "));
	/* The length bounds the text: a NUL-free prefix of the file. */
	const char *cut = "server:\n  threads: 3\nGARBAGE";
	rc = conf_load_string(cut, strlen(cut) - 7, "cut.yaml", NULL, &c, NULL);
	assert_int_equal(rc, 0);
	assert_int_equal(c->server.threads, 3);
	conf_free(c);
	free(cap.text);
	free(text);
	free(want);
}

/* Includes resolve against the including file's directory, whatever the cwd. */
static void test_include_dir(void **state)
{
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/ok_include.yaml", data_dir);
	assert_int_equal(chdir("/"), 0);
	struct capture cap;
	struct conf *c;
	int rc = conf_load(path, capture_open(&cap), &c, NULL);
	const char *out = capture_close(&cap);
	assert_int_equal(chdir(data_dir), 0);
	if (rc != 0)
		fail_msg("rc %d: %s", rc, out);
	assert_string_equal(out, "");
	char want[PATH_MAX + 32];
	snprintf(want, sizeof(want), "%s/inc/parts.yaml", data_dir);
	assert_string_equal(c->partitions.include, want);
	assert_int_equal(ptable_size(c->partitions.table), 2);
	assert_string_equal(ptable_name(c->partitions.table, 1), "nanjing");
	assert_int_equal(c->partitions.unmatched, CONF_UNMATCHED_REFUSE);
	struct prefix p;
	prefix_parse_addr("10.2.3.4", &p);
	assert_int_equal(ptable_lookup(c->partitions.table, AF_INET, p.addr, NULL), 2);
	free(cap.text);
	conf_free(c);

	/* From a string, relative includes resolve against the cwd. */
	const char *text = "partitions:\n  include: inc/parts.yaml\n";
	rc = conf_load_string(text, strlen(text), "s.yaml", NULL, &c, NULL);
	assert_int_equal(rc, 0);
	assert_string_equal(c->partitions.include, "inc/parts.yaml");
	assert_int_equal(ptable_size(c->partitions.table), 2);
	conf_free(c);
	assert_int_equal(chdir("/"), 0);
	rc = conf_load_string(text, strlen(text), "s.yaml", NULL, &c, NULL);
	assert_int_equal(chdir(data_dir), 0);
	assert_int_equal(rc, CONF_E_INVALID);
}

static void test_missing_file(void **state)
{
	struct capture cap;
	struct conf *c = (struct conf *)&cap; /* must be reset */
	unsigned nerr = 0;
	int rc = conf_load("no_such_file.yaml", capture_open(&cap), &c, &nerr);
	const char *out = capture_close(&cap);
	assert_int_equal(rc, -ENOENT);
	assert_null(c);
	assert_int_equal(nerr, 1);
	assert_string_equal(out,
	                    "no_such_file.yaml: error: cannot read: No such file or directory\n");
	free(cap.text);
	rc = conf_load(".", NULL, &c, NULL);
	assert_int_equal(rc, -EISDIR);
	assert_null(c);
}

/* The production example (the package's /etc/partdns/) loads silently, its include too. */
static void test_province_config(void **state)
{
	(void)state;
	char path[PATH_MAX + 48];
	snprintf(path, sizeof(path), "%s/../../conf/province/partdns.yaml", src_dir);
	struct capture cap;
	struct conf *c;
	unsigned nerr = 99;
	int rc = conf_load(path, capture_open(&cap), &c, &nerr);
	const char *out = capture_close(&cap);
	if (rc != 0 || out[0] != '\0')
		fail_msg("rc %d, output:\n%s", rc, out);
	assert_string_equal(c->server.listen[0].text, "127.0.0.1@53");
	assert_string_equal(c->server.user, "partdns");
	assert_int_equal(ptable_size(c->partitions.table), 3);
	struct prefix p;
	assert_int_equal(prefix_parse_addr("100.64.3.7", &p), 0);
	const char *name = ptable_name(c->partitions.table, ptable_lookup(c->partitions.table, p.family, p.addr, NULL));
	assert_non_null(name);
	assert_string_equal(name, "wuxi");
	/* carrier and AS reach the CDN's export */
	char *csv = NULL;
	size_t csvlen = 0;
	FILE *f = open_memstream(&csv, &csvlen);
	assert_non_null(f);
	assert_int_equal(mapping_export(c->partitions.mapping, c->partitions.table, MAPPING_FORMAT_CSV, f), 0);
	fclose(f);
	if (strstr(csv, ",CN,CN-JS,Wuxi,Example Telecom,64500\n") == NULL)
		fail_msg("wuxi's row lacks its isp and asn:\n%s", csv);
	free(csv);
	free(cap.text);
	conf_free(c);
}

/* The shipped conf/partdns.yaml loads silently and works as documented. */
static void test_shipped_config(void **state)
{
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/../../conf/partdns.yaml", src_dir);
	struct capture cap;
	struct conf *c;
	unsigned nerr = 99;
	int rc = conf_load(path, capture_open(&cap), &c, &nerr);
	const char *out = capture_close(&cap);
	if (rc != 0 || out[0] != '\0')
		fail_msg("rc %d, output:\n%s", rc, out);
	assert_int_equal(nerr, 0);
	assert_int_equal(c->server.nlisten, 2);
	assert_string_equal(c->server.listen[0].text, "127.0.0.1@5353");
	assert_string_equal(c->server.listen[1].text, "::1@5353");
	assert_int_equal(c->server.threads, 2);
	assert_int_equal(c->cache.max_bytes, 256ull << 20);
	assert_int_equal(c->edns.policy, CONF_POLICY_ITERATE);
	assert_int_equal(c->partitions.unmatched, CONF_UNMATCHED_COMMON);
	const struct ptable *t = c->partitions.table;
	assert_int_equal(ptable_size(t), 2);
	static const struct {
		const char *addr;
		const char *partition;
		const char *ecs;
	} v[] = {
		{ "127.0.1.1", "nanjing", "198.51.100.1/32" },
		{ "10.1.200.3", "nanjing", "198.51.100.1/32" },
		{ "100.64.1.9", "nanjing", "198.51.100.1/32" },
		{ "127.0.2.1", "suzhou", "198.51.100.65/32" },
		{ "10.2.0.1", "suzhou", "198.51.100.65/32" },
		{ "100.64.2.200", "suzhou", "198.51.100.65/32" },
		{ "127.0.0.1", "common", NULL },
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct prefix p;
		assert_int_equal(prefix_parse_addr(v[i].addr, &p), 0);
		unsigned id = ptable_lookup(t, p.family, p.addr, NULL);
		const char *name = ptable_name(t, id);
		if (name == NULL || strcmp(name, v[i].partition) != 0)
			fail_msg("%s: partition %s, want %s", v[i].addr, name ? name : "(null)",
			         v[i].partition);
		if (v[i].ecs == NULL)
			continue;
		struct ecs e;
		assert_int_equal(mapping_ecs(c->partitions.mapping, id, AF_INET, &e), 0);
		struct prefix ep = { .family = AF_INET, .len = e.source };
		memcpy(ep.addr, e.addr, 4);
		char buf[PREFIX_STRLEN];
		prefix_format(&ep, buf, sizeof(buf));
		assert_string_equal(buf, v[i].ecs);
	}
	free(cap.text);
	conf_free(c);
}

/* 100k IPv4 + 20k IPv6 prefixes in an include must load (linear checks). */
#define BIG_PARTS 100
#define BIG_V4 1000 /* per partition, 100k in all */
#define BIG_V6 200  /* per partition, 20k in all */

static void test_large_include(void **state)
{
	char dir[] = "/tmp/partdns-conf-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char main_path[64], parts_path[64];
	snprintf(main_path, sizeof(main_path), "%s/partdns.yaml", dir);
	snprintf(parts_path, sizeof(parts_path), "%s/partitions.yaml", dir);

	FILE *f = fopen(main_path, "w");
	assert_non_null(f);
	fprintf(f, "server:\n  threads: 1\npartitions:\n  include: partitions.yaml\n");
	fclose(f);

	f = fopen(parts_path, "w");
	assert_non_null(f);
	fprintf(f, "unmatched: refuse\nlist:\n");
	uint32_t k = 0;
	for (unsigned i = 0; i < BIG_PARTS; i++) {
		fprintf(f,
		        "  - name: city%u\n    mapped: 198.51.100.%u\n    mapped6: "
		        "\"2001:db8:%x::/64\"\n",
		        i, i + 1, i);
		fprintf(f, "    prefixes:\n      - 198.51.100.%u/32\n", i + 1);
		for (unsigned j = 0; j < BIG_V4 - 1; j++, k++) {
			/* Distinct /30s walking up 10.0.0.0/8. */
			uint32_t a = 0x0A000000u + k * 4;
			fprintf(f, "      - %u.%u.%u.%u/30\n", a >> 24, (a >> 16) & 255,
			        (a >> 8) & 255, a & 255);
		}
		for (unsigned j = 0; j < BIG_V6; j++)
			fprintf(f, "      - \"2001:db8:%x:%x::/64\"\n", i, j);
	}
	assert_int_equal(fclose(f), 0);

	struct capture cap;
	struct conf *c;
	unsigned nerr = 99;
	int rc = conf_load(main_path, capture_open(&cap), &c, &nerr);
	const char *out = capture_close(&cap);
	if (rc != 0)
		fail_msg("rc %d:\n%.2000s", rc, out);
	assert_string_equal(out, "");
	const struct ptable *t = c->partitions.table;
	assert_int_equal(ptable_size(t), BIG_PARTS);
	size_t v4 = 0, v6 = 0;
	for (unsigned id = 1; id <= BIG_PARTS; id++) {
		v4 += ptable_prefix_count(t, id, AF_INET);
		v6 += ptable_prefix_count(t, id, AF_INET6);
	}
	assert_int_equal(v4, BIG_PARTS * BIG_V4);
	assert_int_equal(v6, BIG_PARTS * BIG_V6);
	/* The last /30 of partition 57 and an IPv6 /64 of partition 99. */
	uint32_t a = 0x0A000000u + (57u * (BIG_V4 - 1) + BIG_V4 - 2) * 4 + 3;
	uint8_t b[4] = { (uint8_t)(a >> 24), (uint8_t)(a >> 16), (uint8_t)(a >> 8), (uint8_t)a };
	assert_int_equal(ptable_lookup(t, AF_INET, b, NULL), 58);
	struct prefix p;
	assert_int_equal(prefix_parse_addr("2001:db8:63:c7::1", &p), 0);
	assert_int_equal(ptable_lookup(t, AF_INET6, p.addr, NULL), 100);
	assert_int_equal(c->partitions.unmatched, CONF_UNMATCHED_REFUSE);
	free(cap.text);
	conf_free(c);

	/* The same file with one prefix repeated in another partition: exactly one error. */
	f = fopen(parts_path, "a");
	assert_non_null(f);
	fprintf(f, "  - name: late\n    mapped: 203.0.113.1\n    prefixes: [ 10.0.0.4/30, "
	           "203.0.113.0/24 ]\n");
	fclose(f);
	rc = conf_load(main_path, capture_open(&cap), &c, &nerr);
	out = capture_close(&cap);
	assert_int_equal(rc, CONF_E_INVALID);
	assert_int_equal(nerr, 1);
	char want[256];
	snprintf(
	    want, sizeof(want),
	    "%s:%u:17: error: prefix 10.0.0.4/30 of partition 'late' already belongs to partition "
	    "'city0' (key 'partitions.list[%u].prefixes[0]', value '10.0.0.4/30')\n",
	    parts_path, 2 + BIG_PARTS * (BIG_V4 + BIG_V6 + 4) + 3, BIG_PARTS);
	assert_string_equal(out, want);
	free(cap.text);

	unlink(parts_path);
	unlink(main_path);
	rmdir(dir);
}

/* Errors are all counted and ordered by position, whatever stage found them. */
/*
 * A FIFO where a file is named (issue 32): the partitions include and a
 * local zone file are refused at once with the file's name and the key's
 * position; open() of a FIFO without a writer used to wait for one, and
 * the daemon's reload with it. A main config given as a FIFO nobody
 * writes to reads as empty instead of waiting. The alarm fails a hang.
 */
static void test_fifo_refused(void **state)
{
	(void)state;
	char dir[] = "/tmp/partdns-conf-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char main_path[64], fifo_path[64];
	snprintf(main_path, sizeof(main_path), "%s/partdns.yaml", dir);
	snprintf(fifo_path, sizeof(fifo_path), "%s/fifo", dir);
	assert_int_equal(mkfifo(fifo_path, 0600), 0);
	alarm(20);

	FILE *f = fopen(main_path, "w");
	assert_non_null(f);
	fprintf(f, "server:\n  threads: 1\npartitions:\n  include: fifo\n");
	assert_int_equal(fclose(f), 0);
	struct capture cap;
	struct conf *c;
	int rc = conf_load(main_path, capture_open(&cap), &c, NULL);
	const char *out = capture_close(&cap);
	assert_int_equal(rc, CONF_E_INVALID);
	char want[256];
	snprintf(want, sizeof(want), "partdns.yaml:4:12: error: cannot read include file '%s': not a regular file", fifo_path);
	if (strstr(out, want) == NULL)
		fail_msg("expected\n%s\nin:\n%s", want, out);
	assert_non_null(strstr(out, "(key 'partitions.include')"));
	free(cap.text);

	f = fopen(main_path, "w");
	assert_non_null(f);
	fprintf(f, "local_zones:\n  - { name: lan.example., type: static, file: %s }\n", fifo_path);
	assert_int_equal(fclose(f), 0);
	rc = conf_load(main_path, capture_open(&cap), &c, NULL);
	out = capture_close(&cap);
	assert_int_equal(rc, CONF_E_INVALID);
	snprintf(want, sizeof(want), "cannot read the zone file %s: not a regular file", fifo_path);
	if (strstr(out, want) == NULL)
		fail_msg("expected\n%s\nin:\n%s", want, out);
	free(cap.text);

	/* the main file may be a pipe (-c /dev/stdin), but one nobody writes ends at once */
	rc = conf_load(fifo_path, capture_open(&cap), &c, NULL);
	out = capture_close(&cap);
	assert_int_equal(rc, CONF_E_INVALID);
	assert_non_null(strstr(out, "the file is empty"));
	free(cap.text);
	alarm(0);
	unlink(fifo_path);
	unlink(main_path);
	rmdir(dir);
}

/* resolver.trust_anchor: a list of files, a single string (a list of one), "" (none); server.max_udp_size. */
static void test_trust_anchor_list(void **state)
{
	(void)state;
	struct conf *c;
	char *out;
	unsigned nerr;
	assert_int_equal(load_string("resolver:\n  trust_anchor: [ /etc/a.key, /etc/b.key ]\n", &c, &out, &nerr), 0);
	assert_int_equal(c->resolver.ntrust_anchor, 2);
	assert_string_equal(c->resolver.trust_anchor[0], "/etc/a.key");
	assert_string_equal(c->resolver.trust_anchor[1], "/etc/b.key");
	conf_free(c);
	free(out);
	assert_int_equal(load_string("resolver:\n  trust_anchor: /etc/a.key\n", &c, &out, &nerr), 0);
	assert_int_equal(c->resolver.ntrust_anchor, 1);
	assert_string_equal(c->resolver.trust_anchor[0], "/etc/a.key");
	conf_free(c);
	free(out);
	assert_int_equal(load_string("resolver:\n  trust_anchor: \"\"\n", &c, &out, &nerr), 0);
	assert_int_equal(c->resolver.ntrust_anchor, 0);
	conf_free(c);
	free(out);
	assert_int_equal(load_string("resolver:\n  trust_anchor: []\nserver:\n  max_udp_size: 4096\n", &c, &out, &nerr), 0);
	assert_int_equal(c->resolver.ntrust_anchor, 0);
	assert_int_equal(c->server.max_udp_size, 4096);
	conf_free(c);
	free(out);
}

/* resolver.options: a list for a repeatable option is that option once per value, in order, among the others. */
static void test_options_lists(void **state)
{
	(void)state;
	const char *text = "resolver:\n"
	                   "  options:\n"
	                   "    local-zone: [ \"a.example. static\", \"b.example. refuse\" ]\n"
	                   "    do-not-query-localhost: no\n"
	                   "    \"trust-anchor:\":\n"
	                   "      - \". DS 20326 8 2 E06D44B80B8F1D39A95C0B0D7C65D08458E880409BBC683457104237C7F8EC8D\"\n"
	                   "    local-data: [ \"a.example. A 192.0.2.1\" ]\n"
	                   "    private-address: 10.0.0.0/8\n";
	struct conf *c;
	char *out;
	unsigned nerr;
	assert_int_equal(load_string(text, &c, &out, &nerr), 0);
	static const char *const want[][2] = {
		{ "local-zone:", "a.example. static" },
		{ "local-zone:", "b.example. refuse" },
		{ "do-not-query-localhost:", "no" },
		{ "trust-anchor:", ". DS 20326 8 2 E06D44B80B8F1D39A95C0B0D7C65D08458E880409BBC683457104237C7F8EC8D" },
		{ "local-data:", "a.example. A 192.0.2.1" },
		{ "private-address:", "10.0.0.0/8" },
	};
	assert_int_equal(c->resolver.noptions, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < c->resolver.noptions; i++) {
		assert_string_equal(c->resolver.options[i].name, want[i][0]);
		assert_string_equal(c->resolver.options[i].value, want[i][1]);
	}
	conf_free(c);
	free(out);
}

static void test_error_order(void **state)
{
	const char *text =
	    "partitions:\n"
	    "  list:\n"
	    "    - { name: a, mapped: 198.51.100.1, prefixes: [ 198.51.100.0/24 ] }\n"
	    "    - { name: b, mapped: 198.51.100.1, prefixes: [ 198.51.100.0/24 ] }\n"
	    "server:\n"
	    "  threads: 1000\n";
	struct conf *c;
	char *out;
	unsigned nerr;
	assert_int_equal(load_string(text, &c, &out, &nerr), CONF_E_INVALID);
	assert_int_equal(nerr, 3);
	const char *want =
	    "t.yaml:4:26: error: mapped address 198.51.100.1 is already used by partition 'a' "
	    "(key 'partitions.list[1].mapped', value '198.51.100.1')\n"
	    "t.yaml:4:52: error: prefix 198.51.100.0/24 of partition 'b' already belongs to "
	    "partition 'a' "
	    "(key 'partitions.list[1].prefixes[0]', value '198.51.100.0/24')\n"
	    "t.yaml:6:12: error: out of range 0..256 (key 'server.threads', value '1000')\n";
	assert_string_equal(out, want);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_addr_parse),     cmocka_unit_test(test_source_parse),
		cmocka_unit_test(test_name_normalize),
		cmocka_unit_test(test_strerror),       cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_threads_auto),   cmocka_unit_test(test_full),
		cmocka_unit_test(test_data_files),     cmocka_unit_test(test_load_string_name),
		cmocka_unit_test(test_include_dir),    cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_shipped_config), cmocka_unit_test(test_province_config), cmocka_unit_test(test_large_include),
		cmocka_unit_test(test_error_order),    cmocka_unit_test(test_fifo_refused),
		cmocka_unit_test(test_trust_anchor_list), cmocka_unit_test(test_options_lists),
	};
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
