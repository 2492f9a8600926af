/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tests of the restart keys (conf_restart_keys, conf_restart_changes): every
 * key the schema flags restart is noted when a reload changes it, under the
 * note the daemon has always given; keys a reload applies are not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conf/conf.h"

/* The defaults (a file must set something: this keeps a default as it is). */
#define DEFAULTS "partitions:\n  unmatched: common\n"
#define ETCD "store:\n  etcd:\n    endpoints: [ \"127.0.0.1\" ]\n"

/*
 * Each restart key: the note a reload gives for it, and a config without
 * and with a change of it (base NULL: DEFAULTS). The keys and notes are
 * what the reload noted before the schema carried them, one for one.
 */
static const struct change {
	const char *key, *note, *base, *changed;
} changes[] = {
	{ "server.listen", "server.listen", NULL, "server:\n  listen: [ \"127.0.0.1@5300\" ]\n" },
	{ "server.threads", "server.threads", NULL, "server:\n  threads: 3\n" },
	{ "server.control", "server.control/control_group", NULL, "server:\n  control: /tmp/other.sock\n" },
	{ "server.user", "server.user", NULL, "server:\n  user: nobody\n" },
	{ "server.control_group", "server.control/control_group", NULL, "server:\n  control_group: adm\n" },
	{ "server.metrics", "server.metrics", NULL, "server:\n  metrics: \"127.0.0.1@9100\"\n" },
	{ "server.metrics_allow", "server.metrics_allow", NULL, "server:\n  metrics_allow: [ 10.0.0.0/8 ]\n" },
	{ "server.http", "server.http/http_allow", NULL, "server:\n  http: \"127.0.0.1@8080\"\n" },
	{ "server.http_allow", "server.http/http_allow", NULL, "server:\n  http_allow: [ 10.0.0.0/8 ]\n" },
	{ "server.store", "server.store", NULL, "server:\n  store: /tmp/other-store\n" },
	{ "server.tcp_idle_ms", "server.tcp_*", NULL, "server:\n  tcp_idle_ms: 5000\n" },
	{ "server.tcp_max_clients", "server.tcp_*", NULL, "server:\n  tcp_max_clients: 10\n" },
	{ "server.tcp_message_ms", "server.tcp_*", NULL, "server:\n  tcp_message_ms: 1000\n" },
	{ "server.tcp_out_max", "server.tcp_*", NULL, "server:\n  tcp_out_max: 1M\n" },
	{ "server.tcp_max_per_client", "server.tcp_*", NULL, "server:\n  tcp_max_per_client: 4\n" },
	{ "server.client_qps", "server.client_qps/client_prefix4/client_prefix6", NULL, "server:\n  client_qps: 100\n" },
	{ "server.client_prefix4", "server.client_qps/client_prefix4/client_prefix6", NULL,
	  "server:\n  client_prefix4: 24\n" },
	{ "server.client_prefix6", "server.client_qps/client_prefix4/client_prefix6", NULL,
	  "server:\n  client_prefix6: 48\n" },
	{ "server.dnstap", "server.dnstap", NULL, "server:\n  dnstap: /tmp/dnstap.sock\n" },
	{ "server.listen_tls", "server.listen_tls", NULL,
	  "server:\n  listen_tls: [ \"127.0.0.1@853\" ]\n  tls_cert: /c.pem\n  tls_key: /k.pem\n" },
	{ "server.listen_https", "server.listen_https", NULL,
	  "server:\n  listen_https: [ \"127.0.0.1@443\" ]\n  tls_cert: /c.pem\n  tls_key: /k.pem\n" },
	{ "server.https_path", "server.https_path", NULL, "server:\n  https_path: /q\n" },
	{ "server.tls_max_clients", "server.tls_max_clients/tls_handshake_ms", NULL, "server:\n  tls_max_clients: 5\n" },
	{ "server.tls_handshake_ms", "server.tls_max_clients/tls_handshake_ms", NULL,
	  "server:\n  tls_handshake_ms: 1000\n" },
	{ "cache.max_bytes", "cache.max_bytes", NULL, "cache:\n  max_bytes: 512M\n" },
	{ "resolver.threads", "resolver.* (libunbound)", NULL, "resolver:\n  threads: 3\n" },
	{ "resolver.root_hints", "resolver.* (libunbound)", NULL, "resolver:\n  root_hints: /tmp/root.hints\n" },
	{ "resolver.trust_anchor", "resolver.* (libunbound)", NULL, "resolver:\n  trust_anchor: [ /tmp/root.key ]\n" },
	{ "resolver.forward_zones", "resolver.* (libunbound)",
	  "resolver:\n  forward_zones:\n    - { name: corp.example., servers: [ 10.0.0.53 ] }\n",
	  "resolver:\n  forward_zones:\n    - { name: corp.example., servers: [ \"10.0.0.53@5300\" ] }\n" },
	{ "resolver.options", "resolver.* (libunbound)", "resolver:\n  options: { do-not-query-localhost: \"no\" }\n",
	  "resolver:\n  options: { do-not-query-localhost: \"yes\" }\n" },
	{ "resolver.zone_qps", "resolver.* (libunbound)", NULL, "resolver:\n  zone_qps: 10\n" },
	{ "resolver.domain_insecure", "resolver.* (libunbound)", NULL, "resolver:\n  domain_insecure: [ corp.example ]\n" },
	{ "resolver.zone_inflight", "resolver.* (libunbound)", NULL, "resolver:\n  zone_inflight: 10\n" },
	{ "resolver.outgoing", "resolver.outgoing", NULL, "resolver:\n  outgoing: [ 127.0.0.1 ]\n" },
	{ "edns.threads", "edns.threads", NULL, "edns:\n  threads: 2\n" },
	{ "edns.max_inflight", "edns.max_inflight/zone_qps", NULL, "edns:\n  max_inflight: 10\n" },
	{ "edns.zone_qps", "edns.max_inflight/zone_qps", NULL, "edns:\n  zone_qps: 10\n" },
	{ "edns.outgoing", "edns.outgoing", NULL, "edns:\n  outgoing: [ 127.0.0.1 ]\n" },
	{ "edns.tier", "edns.tier", NULL, "edns:\n  tier: [ 127.0.0.1 ]\n" },
	{ "store.etcd.endpoints", "store.etcd", ETCD, "store:\n  etcd:\n    endpoints: [ \"127.0.0.2\" ]\n" },
	{ "store.etcd.prefix", "store.etcd", ETCD, ETCD "    prefix: /other/\n" },
	{ "store.etcd.name", "store.etcd", ETCD, ETCD "    name: node2\n" },
	{ "store.etcd.username", "store.etcd", ETCD, ETCD "    username: partdns\n" },
	{ "store.etcd.password_file", "store.etcd", ETCD "    username: partdns\n",
	  ETCD "    username: partdns\n    password_file: /tmp/etcd.pw\n" },
	{ "store.etcd.ca", "store.etcd", ETCD, ETCD "    ca: /tmp/ca.pem\n" },
	{ "store.etcd.cert", "store.etcd", ETCD, ETCD "    cert: /tmp/cert.pem\n" },
	{ "store.etcd.key", "store.etcd", ETCD "    cert: /tmp/cert.pem\n",
	  ETCD "    cert: /tmp/cert.pem\n    key: /tmp/key.pem\n" },
	{ "store.etcd.timeout_ms", "store.etcd", ETCD, ETCD "    timeout_ms: 500\n" },
	{ "store.etcd.lease_ttl", "store.etcd", ETCD, ETCD "    lease_ttl: 30\n" },
};
#define NCHANGES (sizeof(changes) / sizeof(changes[0]))

static struct conf *load(const char *text)
{
	if (text == NULL)
		text = DEFAULTS;
	struct conf *c = NULL;
	unsigned nerr = 0;
	int rc = conf_load_string(text, strlen(text), "t.yaml", stderr, &c, &nerr);
	if (rc != 0)
		fail_msg("cannot load the test config (%s):\n%s", conf_strerror(rc), text);
	return c;
}

/* The notes a reload gives, one a line. */
struct notes {
	char *text;
	size_t len;
	FILE *f;
};

static void note(const char *n, void *arg)
{
	fprintf(((struct notes *)arg)->f, "%s\n", n);
}

/* The notes from old to neu; the caller frees the text. */
static char *changes_between(const struct conf *old, const struct conf *neu, size_t *count)
{
	struct notes ns = { 0 };
	ns.f = open_memstream(&ns.text, &ns.len);
	assert_non_null(ns.f);
	*count = conf_restart_changes(old, neu, note, &ns);
	fclose(ns.f);
	return ns.text;
}

static unsigned lines_equal(const char *text, const char *line)
{
	unsigned n = 0;
	size_t len = strlen(line);
	for (const char *p = text; *p != '\0'; p = strchr(p, '\n') + 1)
		n += strncmp(p, line, len) == 0 && p[len] == '\n';
	return n;
}

struct keys {
	unsigned n;
	unsigned seen[NCHANGES];
};

static void key_listed(const char *key, const char *n, void *arg)
{
	struct keys *k = arg;
	k->n++;
	for (size_t i = 0; i < NCHANGES; i++) {
		if (strcmp(changes[i].key, key) == 0) {
			if (strcmp(changes[i].note, n) != 0)
				fail_msg("%s is noted as '%s', not '%s'", key, n, changes[i].note);
			k->seen[i]++;
			return;
		}
	}
	fail_msg("%s is flagged restart but this test does not change it: add it to changes[]", key);
}

/* The schema's restart keys are exactly the table's, with the same notes. */
static void test_restart_keys(void **state)
{
	(void)state;
	struct keys k = { 0 };
	conf_restart_keys(key_listed, &k);
	for (size_t i = 0; i < NCHANGES; i++)
		if (k.seen[i] != 1)
			fail_msg("%s is listed %u times by the schema's restart rows, not once", changes[i].key, k.seen[i]);
	assert_int_equal(k.n, NCHANGES);
}

/* Each restart key changed (and changed back) is noted, once, and nothing else is. */
static void test_restart_each_noted(void **state)
{
	(void)state;
	for (size_t i = 0; i < NCHANGES; i++) {
		struct conf *a = load(changes[i].base), *b = load(changes[i].changed);
		size_t n;
		char *text = changes_between(a, b, &n);
		if (lines_equal(text, changes[i].note) != 1 || n != 1)
			fail_msg("a reload that changes %s notes:\n%s(expected only '%s')", changes[i].key, text,
			         changes[i].note);
		free(text);
		text = changes_between(b, a, &n);
		if (lines_equal(text, changes[i].note) != 1 || n != 1)
			fail_msg("a reload that changes %s back notes:\n%s(expected only '%s')", changes[i].key, text,
			         changes[i].note);
		free(text);
		conf_free(a);
		conf_free(b);
	}
}

/* Keys that share a note give it once; different notes come in schema order. */
static void test_restart_notes_once(void **state)
{
	(void)state;
	struct conf *a = load(NULL);
	struct conf *b = load("server:\n  control: /tmp/other.sock\n  control_group: adm\n  tcp_idle_ms: 5000\n"
	                      "  tcp_out_max: 1M\nresolver:\n  threads: 3\n  zone_qps: 10\n  outgoing: [ 127.0.0.1 ]\n");
	size_t n;
	char *text = changes_between(a, b, &n);
	assert_string_equal(text, "server.control/control_group\nserver.tcp_*\nresolver.* (libunbound)\n"
	                          "resolver.outgoing\n");
	assert_int_equal(n, 4);
	free(text);
	conf_free(a);
	conf_free(b);
}

/* A reload applies these: nothing to note, and none for the same file read again. */
static void test_reload_keys_not_noted(void **state)
{
	(void)state;
	static const char *const reloadable[] = {
		"server:\n  allow: [ 10.0.0.0/8 ]\n",
		"server:\n  client_limit_action: drop\n",
		"server:\n  client_exempt: [ 10.0.0.0/8 ]\n",
		"server:\n  log: syslog\n  log_level: debug\n",
		"server:\n  max_udp_size: 4096\n",
		"server:\n  create_store: true\n", /* read at start only, and never noted */
		"cache:\n  min_ttl: 5\n  max_ttl: 600\n  max_negative_ttl: 60\n  failure_ttl: 1\n",
		"cache:\n  prefetch: false\n  serve_stale: true\n",
		"edns:\n  policy: forward\n  forward: [ 10.0.0.53 ]\n  timeout_ms: 500\n",
		"edns:\n  trusted_ecs: [ 10.0.0.0/8 ]\n",
		"local_zones:\n  - { name: lan.example., type: static, data: [ \"@ 60 IN A 10.0.0.1\" ] }\n",
	};
	struct conf *a = load(NULL);
	for (size_t i = 0; i < sizeof(reloadable) / sizeof(reloadable[0]); i++) {
		struct conf *b = load(reloadable[i]);
		size_t n;
		char *text = changes_between(a, b, &n);
		if (n != 0)
			fail_msg("a reload of\n%snotes:\n%s", reloadable[i], text);
		free(text);
		conf_free(b);
	}
	for (size_t i = 0; i < NCHANGES; i++) {
		struct conf *b = load(changes[i].changed), *c = load(changes[i].changed);
		size_t n;
		char *text = changes_between(b, c, &n);
		if (n != 0)
			fail_msg("the same file (%s changed) read again notes:\n%s", changes[i].key, text);
		free(text);
		conf_free(b);
		conf_free(c);
	}
	conf_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_restart_keys),
		cmocka_unit_test(test_restart_each_noted),
		cmocka_unit_test(test_restart_notes_once),
		cmocka_unit_test(test_reload_keys_not_noted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
