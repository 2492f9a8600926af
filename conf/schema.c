/* SPDX-License-Identifier: BSD-3-Clause */
/* The config schema: a row per key (type, range, default, check) and the walk that applies it. */
#include "conf/schema.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "conf/conf.h"
#include "conf/local.h"
#include "conf/report.h"
#include "conf/state.h"
#include "conf/text.h"
#include "conf/ytree.h"
#include "mapping/mapping.h"
#include "partition/partition.h"
#include "partition/prefix.h"

enum stype {
	ST_SECTION, /* a mapping of sub-items */
	ST_UINT,    /* decimal integer in min..max, an unsigned/uint32_t/uint64_t field */
	ST_BOOL,    /* true or false, a bool field */
	ST_SIZE,    /* integer with optional K/M/G suffix (powers of 1024), uint64_t */
	ST_STR,     /* any string, char * */
	ST_PATH,    /* a non-empty string, char * */
	ST_TEXT,    /* free text without control characters, char * */
	ST_COUNTRY, /* ISO 3166-1 alpha-2, stored upper case, char * */
	ST_REGION,  /* ISO 3166-2 ("CN-JS"), stored upper case, char * */
	ST_ENUM,    /* one of enums, an enum field */
	ST_TARGET,  /* ADDR[@PORT], struct conf_addr; min is the default port */
	ST_SOURCE,  /* a unicast address to send from, no port, struct conf_addr */
	ST_PREFIX,  /* ADDR/LEN or ADDR, struct prefix */
	ST_ADDR4,   /* an IPv4 address, struct prefix (/32) */
	ST_PREFIX6, /* an IPv6 prefix of length 1..128 or address, struct prefix */
	ST_DNAME,   /* domain name, normalized, char * */
	ST_PNAME,   /* partition name [a-z0-9_-]{1,63}, char * */
	ST_OPTIONS, /* mapping name -> scalar, struct conf_option array */
};

#define SF_LIST 1u     /* a list of the type; off is the array, count_off its size_t count */
#define SF_REQUIRED 2u /* must be present (with a value) */
#define SF_NONEMPTY 4u /* a list that must have at least one item */
#define SF_NODE 8u     /* node_off records the value's node; set twice across files is an error */
#define SF_EMPTY_OFF 16u /* ST_TARGET: "" leaves the address unset (len 0): the feature is off */
#define SF_ONE_OK 32u  /* SF_LIST: a scalar is a list of one, "" a list of none (the key took one value once) */

struct senum {
	const char *name;
	int value;
};

struct sitem {
	const char *name; /* NULL ends a table */
	enum stype type;
	unsigned flags;
	size_t off;       /* field in the base struct */
	size_t size;      /* sizeof the field, or of one element with SF_LIST */
	size_t count_off; /* SF_LIST, ST_OPTIONS: the size_t count */
	size_t node_off;  /* SF_NODE: a const struct ynode * */
	uint64_t min, max;
	const char *def;           /* default as config text; NULL: zero/NULL */
	const char *const *defs;   /* SF_LIST default items, NULL-terminated */
	const struct sitem *sub;   /* ST_SECTION */
	const struct senum *enums; /* ST_ENUM, NULL-terminated */
	void (*check)(struct loader *L, const struct ynode *n); /* after a present item */
	/* A running daemon cannot change it (read when a part is made): a
	 * reload keeps the old value and notes the change, under restart_note
	 * when several keys share one, else under the key's path
	 * (conf_restart_changes). Only on rows of sections, not of lists. */
	bool restart;
	const char *restart_note;
};

/* Most items in one section, for the duplicate-key bookkeeping. */
#define SECTION_MAX 64

#define FLD(S, m) .off = offsetof(S, m), .size = sizeof(((S *)0)->m)
#define LST(S, m, cnt, fl) \
	.flags = SF_LIST | (fl), .off = offsetof(S, m), .size = sizeof(*((S *)0)->m), \
	.count_off = offsetof(S, cnt)
#define NODE(S, m) .node_off = offsetof(S, m)
#define SEC(items) .type = ST_SECTION, .sub = items

/* The notes several restart keys share: a reload names each once. */
#define NOTE_CONTROL "server.control/control_group"
#define NOTE_HTTP "server.http/http_allow"
#define NOTE_TCP "server.tcp_*"
#define NOTE_TLS "server.tls_max_clients/tls_handshake_ms"
#define NOTE_CLIENT "server.client_qps/client_prefix4/client_prefix6"
#define NOTE_LIBUNBOUND "resolver.* (libunbound)"
#define NOTE_EDNS_BUDGET "edns.max_inflight/zone_qps"
#define NOTE_ETCD "store.etcd"

#define K 1024ull
#define MIB (K * K)
#define TIB (K * K * K * K)

static const char *const listen_defs[] = { "127.0.0.1@5353", "::1@5353", NULL };
static const char *const allow_defs[] = { "127.0.0.0/8", "::1/128", NULL };

static const struct senum policy_enums[] = {
	{ "iterate", CONF_POLICY_ITERATE },
	{ "forward", CONF_POLICY_FORWARD },
	{ NULL, 0 },
};
_Static_assert(sizeof(enum conf_policy) == sizeof(int), "ST_ENUM stores an int");

static const struct senum limit_enums[] = {
	{ "drop", CONF_LIMIT_DROP },
	{ "refuse", CONF_LIMIT_REFUSE },
	{ "slip", CONF_LIMIT_SLIP },
	{ NULL, 0 },
};
_Static_assert(sizeof(enum conf_limit_action) == sizeof(int), "ST_ENUM stores an int");

static const struct senum log_enums[] = {
	{ "stderr", CONF_LOG_STDERR },
	{ "syslog", CONF_LOG_SYSLOG },
	{ NULL, 0 },
};
_Static_assert(sizeof(enum conf_log_target) == sizeof(int), "ST_ENUM stores an int");

static const struct senum log_level_enums[] = {
	{ "error", CONF_LOG_ERROR },
	{ "warning", CONF_LOG_WARNING },
	{ "info", CONF_LOG_INFO },
	{ "debug", CONF_LOG_DEBUG },
	{ NULL, 0 },
};
_Static_assert(sizeof(enum conf_log_level) == sizeof(int), "ST_ENUM stores an int");

static const struct senum local_type_enums[] = {
	{ "static", CONF_LOCAL_STATIC },
	{ "transparent", CONF_LOCAL_TRANSPARENT },
	{ "redirect", CONF_LOCAL_REDIRECT },
	{ "refuse", CONF_LOCAL_REFUSE },
	{ "always_nxdomain", CONF_LOCAL_ALWAYS_NXDOMAIN },
	{ NULL, 0 },
};
_Static_assert(sizeof(enum conf_local_type) == sizeof(int), "ST_ENUM stores an int");

/* clang-format off */
/* local_zones items (top level and per partition); records checked in local.c */
#define LZ struct conf_local_zone
static const struct sitem local_items[] = {
	{ .name = "name", .type = ST_DNAME, .flags = SF_REQUIRED, FLD(LZ, name) },
	{ .name = "type", .type = ST_ENUM, .flags = SF_REQUIRED, FLD(LZ, type), .enums = local_type_enums },
	{ .name = "data", .type = ST_STR, LST(LZ, data, ndata, 0) },
	{ .name = "file", .type = ST_PATH, FLD(LZ, file) },
	{ .name = NULL },
};

/* rpz items: a policy zone read from a file, for everyone or for some partitions */
#define RZ struct conf_rpz
static const struct sitem rpz_tsig_items[] = {
	{ .name = "name", .type = ST_DNAME, .flags = SF_REQUIRED, FLD(RZ, tsig_name) },
	{ .name = "algorithm", .type = ST_STR, FLD(RZ, tsig_algorithm), .def = "hmac-sha256" },
	{ .name = "secret", .type = ST_STR, .flags = SF_REQUIRED, FLD(RZ, tsig_secret) },
	{ .name = NULL },
};

static const struct sitem rpz_items[] = {
	{ .name = "zone", .type = ST_DNAME, .flags = SF_REQUIRED, FLD(RZ, zone) },
	{ .name = "file", .type = ST_PATH, .flags = SF_REQUIRED, FLD(RZ, file) },
	{ .name = "partitions", .type = ST_PNAME, LST(RZ, partitions, npartitions, 0) },
	/* a primary to transfer the zone from (IXFR, else AXFR), checked every refresh seconds */
	{ .name = "primary", .type = ST_TARGET, .flags = SF_EMPTY_OFF, FLD(RZ, primary), .min = 53 },
	{ .name = "tsig", SEC(rpz_tsig_items) },
	{ .name = "refresh", .type = ST_UINT, FLD(RZ, refresh), .min = 0, .max = 86400, .def = "0" },
	/* who else may NOTIFY (a primary that sends from another address) */
	{ .name = "allow_notify", .type = ST_PREFIX, LST(RZ, allow_notify, nallow_notify, 0) },
	{ .name = NULL },
};

#define CS struct conf_state
static const struct sitem server_items[] = {
	{ .name = "listen", .type = ST_TARGET,
	  LST(CS, conf.server.listen, conf.server.nlisten, SF_NONEMPTY),
	  .min = 53, .defs = listen_defs, .restart = true },
	{ .name = "threads", .type = ST_UINT, FLD(CS, conf.server.threads),
	  .min = 0, .max = 256, .def = "0", .restart = true }, /* one per core, as resolver.threads: colocated */
	{ .name = "allow", .type = ST_PREFIX, LST(CS, conf.server.allow, conf.server.nallow, 0),
	  .defs = allow_defs },
	{ .name = "control", .type = ST_PATH, FLD(CS, conf.server.control),
	  .def = "/run/partdns/control.sock", .restart = true, .restart_note = NOTE_CONTROL },
	/* checked against the system's users at start and by partdns -t (resolver/base/privs.c);
	 * root is gone once dropped */
	{ .name = "user", .type = ST_STR, FLD(CS, conf.server.user), .def = "", .restart = true },
	{ .name = "control_group", .type = ST_STR, FLD(CS, conf.server.control_group), .def = "",
	  .restart = true, .restart_note = NOTE_CONTROL },
	/* no default port: a metrics port is the operator's choice, not a convention */
	{ .name = "metrics", .type = ST_TARGET, .flags = SF_EMPTY_OFF, FLD(CS, conf.server.metrics),
	  .restart = true },
	/* the console (/, /status.json) shows the province: loopback unless the operator opens it */
	{ .name = "metrics_allow", .type = ST_PREFIX,
	  LST(CS, conf.server.metrics_allow, conf.server.nmetrics_allow, 0), .defs = allow_defs, .restart = true },
	/* the plan's publication for CDNs (resolver/ops/publish.c); off unless named */
	{ .name = "http", .type = ST_TARGET, .flags = SF_EMPTY_OFF, FLD(CS, conf.server.http),
	  .restart = true, .restart_note = NOTE_HTTP },
	{ .name = "http_allow", .type = ST_PREFIX, LST(CS, conf.server.http_allow, conf.server.nhttp_allow, 0),
	  .restart = true, .restart_note = NOTE_HTTP },
	{ .name = "store", .type = ST_PATH, FLD(CS, conf.server.store),
	  .def = "/var/lib/partdns", .restart = true },
	{ .name = "create_store", .type = ST_BOOL, FLD(CS, conf.server.create_store),
	  .def = "false" },
	{ .name = "tcp_idle_ms", .type = ST_UINT, FLD(CS, conf.server.tcp_idle_ms),
	  .min = 100, .max = 600000, .def = "10000", .restart = true, .restart_note = NOTE_TCP },
	{ .name = "tcp_max_clients", .type = ST_UINT, FLD(CS, conf.server.tcp_max_clients),
	  .min = 1, .max = 100000, .def = "1000", .restart = true, .restart_note = NOTE_TCP },
	{ .name = "tcp_message_ms", .type = ST_UINT, FLD(CS, conf.server.tcp_message_ms),
	  .min = 100, .max = 60000, .def = "2000", .restart = true, .restart_note = NOTE_TCP },
	{ .name = "tcp_out_max", .type = ST_SIZE, FLD(CS, conf.server.tcp_out_max),
	  .min = 16 * K, .max = 64 * MIB, .def = "256K", .restart = true, .restart_note = NOTE_TCP },
	{ .name = "tcp_max_per_client", .type = ST_UINT, FLD(CS, conf.server.tcp_max_per_client),
	  .min = 1, .max = 65535, .def = "16", .restart = true, .restart_note = NOTE_TCP },
	{ .name = "client_qps", .type = ST_UINT, FLD(CS, conf.server.client_qps),
	  .max = 10000000, .def = "5000", .restart = true, .restart_note = NOTE_CLIENT },
	{ .name = "client_prefix4", .type = ST_UINT, FLD(CS, conf.server.client_prefix4),
	  .min = 8, .max = 32, .def = "32", .restart = true, .restart_note = NOTE_CLIENT },
	{ .name = "client_prefix6", .type = ST_UINT, FLD(CS, conf.server.client_prefix6),
	  .min = 16, .max = 128, .def = "64", .restart = true, .restart_note = NOTE_CLIENT },
	{ .name = "client_limit_action", .type = ST_ENUM, FLD(CS, conf.server.client_limit_action),
	  .enums = limit_enums, .def = "slip" },
	/* the machine's own loopback by default: it cannot be spoofed from
	 * outside, and a first benchmark from the box itself must not meet
	 * the limit meant for subscribers */
	{ .name = "client_exempt", .type = ST_PREFIX,
	  LST(CS, conf.server.client_exempt, conf.server.nclient_exempt, 0), .defs = allow_defs },
	{ .name = "log", .type = ST_ENUM, FLD(CS, conf.server.log), .enums = log_enums, .def = "stderr" },
	{ .name = "log_level", .type = ST_ENUM, FLD(CS, conf.server.log_level), .enums = log_level_enums,
	  .def = "info" },
	/* off unless named: a reader must be listening (fstrm_capture, a collector); the writer
	 * and its queues are made at start */
	{ .name = "dnstap", .type = ST_STR, FLD(CS, conf.server.dnstap), .def = "", .restart = true },
	/* 1232: DNS Flag Day 2020, no fragments on common paths; 4096: QUERY_MAX_UDP, the listeners' buffers */
	{ .name = "max_udp_size", .type = ST_UINT, FLD(CS, conf.server.max_udp_size),
	  .min = 512, .max = 4096, .def = "1232" },
	/* DNS over TLS (RFC 7858): its listeners, and the certificate and key they show (re-read on reload) */
	{ .name = "listen_tls", .type = ST_TARGET,
	  LST(CS, conf.server.listen_tls, conf.server.nlisten_tls, 0), .min = 853, .restart = true },
	/* DNS over HTTPS (RFC 8484): its listeners (HTTP/2 and HTTP/1.1 over TLS, the same certificate) and path */
	{ .name = "listen_https", .type = ST_TARGET,
	  LST(CS, conf.server.listen_https, conf.server.nlisten_https, 0), .min = 443, .restart = true },
	{ .name = "https_path", .type = ST_TEXT, FLD(CS, conf.server.https_path), .def = "/dns-query", .restart = true },
	/* RFC 9462: _dns.resolver.arpa SVCB names the encrypted listeners */
	{ .name = "ddr", .type = ST_BOOL, FLD(CS, conf.server.ddr), .def = "false" },
	{ .name = "tls_cert", .type = ST_STR, FLD(CS, conf.server.tls_cert), .def = "" },
	{ .name = "tls_key", .type = ST_STR, FLD(CS, conf.server.tls_key), .def = "" },
	{ .name = "tls_max_clients", .type = ST_UINT, FLD(CS, conf.server.tls_max_clients),
	  .min = 1, .max = 1000000, .def = "10000", .restart = true, .restart_note = NOTE_TLS },
	{ .name = "tls_handshake_ms", .type = ST_UINT, FLD(CS, conf.server.tls_handshake_ms),
	  .min = 100, .max = 60000, .def = "5000", .restart = true, .restart_note = NOTE_TLS },
	/* balancers and TLS terminators that send a PROXY v2 header (and only they may) */
	{ .name = "proxy_from", .type = ST_PREFIX,
	  LST(CS, conf.server.proxy_from, conf.server.nproxy_from, 0) },
	{ .name = NULL },
};

/* RFC 2181 §8: TTLs are 31-bit. */
#define TTL_MAX 2147483647u

static const struct sitem cache_items[] = {
	{ .name = "max_bytes", .type = ST_SIZE, FLD(CS, conf.cache.max_bytes),
	  .min = MIB, .max = TIB, .def = "256M", .restart = true },
	{ .name = "min_ttl", .type = ST_UINT, FLD(CS, conf.cache.min_ttl),
	  .max = TTL_MAX, .def = "0" },
	{ .name = "max_ttl", .type = ST_UINT, FLD(CS, conf.cache.max_ttl),
	  .max = TTL_MAX, .def = "86400" },
	{ .name = "max_negative_ttl", .type = ST_UINT, FLD(CS, conf.cache.max_negative_ttl),
	  .max = TTL_MAX, .def = "3600" },
	/* RFC 9520 §3.2: failures are cached at least 1 s and at most 5 min */
	{ .name = "failure_ttl", .type = ST_UINT, FLD(CS, conf.cache.failure_ttl),
	  .max = 300, .def = "5" },
	{ .name = "prefetch", .type = ST_BOOL, FLD(CS, conf.cache.prefetch), .def = "true" },
	{ .name = "serve_stale", .type = ST_BOOL, FLD(CS, conf.cache.serve_stale), .def = "false" },
	/* a file the daemon writes as server.user; read at start and by partdnsctl cache load */
	{ .name = "snapshot", .type = ST_STR, FLD(CS, conf.cache.snapshot), .def = "" },
	{ .name = "snapshot_interval", .type = ST_UINT, FLD(CS, conf.cache.snapshot_interval),
	  .max = 86400, .def = "300" },
	{ .name = NULL },
};

#define FZ struct conf_forward_zone
static const struct sitem zone_items[] = {
	{ .name = "name", .type = ST_DNAME, .flags = SF_REQUIRED, FLD(FZ, name) },
	{ .name = "servers", .type = ST_TARGET,
	  LST(FZ, servers, nservers, SF_REQUIRED | SF_NONEMPTY), .min = 53 },
	{ .name = NULL },
};

/* Every key: libunbound contexts (and the EDNS pool's sources) take them when they are made. */
static const struct sitem resolver_items[] = {
	{ .name = "threads", .type = ST_UINT, FLD(CS, conf.resolver.threads),
	  .min = 0, .max = 256, .def = "0", .restart = true, .restart_note = NOTE_LIBUNBOUND },
	{ .name = "root_hints", .type = ST_STR, FLD(CS, conf.resolver.root_hints), .def = "",
	  .restart = true, .restart_note = NOTE_LIBUNBOUND },
	/* DS/DNSKEY files, each read as is; one string (the old form) is a list of one */
	{ .name = "trust_anchor", .type = ST_PATH,
	  LST(CS, conf.resolver.trust_anchor, conf.resolver.ntrust_anchor, SF_ONE_OK),
	  .restart = true, .restart_note = NOTE_LIBUNBOUND },
	{ .name = "forward_zones", SEC(zone_items),
	  LST(CS, conf.resolver.forward_zones, conf.resolver.nforward_zones, 0),
	  .restart = true, .restart_note = NOTE_LIBUNBOUND },
	{ .name = "options", .type = ST_OPTIONS, .off = offsetof(CS, conf.resolver.options),
	  .count_off = offsetof(CS, conf.resolver.noptions), .restart = true, .restart_note = NOTE_LIBUNBOUND },
	{ .name = "zone_qps", .type = ST_UINT, FLD(CS, conf.resolver.zone_qps),
	  .max = 1000000, .def = "1000", .restart = true, .restart_note = NOTE_LIBUNBOUND },
	{ .name = "domain_insecure", .type = ST_DNAME,
	  LST(CS, conf.resolver.domain_insecure, conf.resolver.ndomain_insecure, 0),
	  .restart = true, .restart_note = NOTE_LIBUNBOUND },
	{ .name = "zone_inflight", .type = ST_UINT, FLD(CS, conf.resolver.zone_inflight),
	  .max = 65535, .def = "200", .restart = true, .restart_note = NOTE_LIBUNBOUND },
	{ .name = "outgoing", .type = ST_SOURCE,
	  LST(CS, conf.resolver.outgoing, conf.resolver.noutgoing, 0), .restart = true },
	{ .name = NULL },
};

static const struct sitem edns_items[] = {
	{ .name = "threads", .type = ST_UINT, FLD(CS, conf.edns.threads),
	  .min = 1, .max = 64, .def = "1", .restart = true },
	{ .name = "policy", .type = ST_ENUM, FLD(CS, conf.edns.policy), .enums = policy_enums,
	  .def = "iterate" },
	{ .name = "forward", .type = ST_TARGET, LST(CS, conf.edns.forward, conf.edns.nforward, 0),
	  .min = 53 },
	{ .name = "timeout_ms", .type = ST_UINT, FLD(CS, conf.edns.timeout_ms),
	  .min = 50, .max = 60000, .def = "1500" },
	/* the pool's budgets and rate table are sized at start */
	{ .name = "max_inflight", .type = ST_UINT, FLD(CS, conf.edns.max_inflight),
	  .min = 1, .max = 1000000, .def = "1000", .restart = true, .restart_note = NOTE_EDNS_BUDGET },
	{ .name = "zone_qps", .type = ST_UINT, FLD(CS, conf.edns.zone_qps),
	  .max = 1000000, .def = "1000", .restart = true, .restart_note = NOTE_EDNS_BUDGET },
	{ .name = "trusted_ecs", .type = ST_PREFIX,
	  LST(CS, conf.edns.trusted_ecs, conf.edns.ntrusted_ecs, 0) },
	{ .name = "outgoing", .type = ST_SOURCE,
	  LST(CS, conf.edns.outgoing, conf.edns.noutgoing, 0), .restart = true },
	/* the pool's node table and probes are made at start */
	{ .name = "tier", .type = ST_TARGET, LST(CS, conf.edns.tier, conf.edns.ntier, 0), .min = 53,
	  .restart = true },
	{ .name = NULL },
};

/* store.etcd: the fleet's shared store (etcd v3 through its JSON gateway); every key is
 * read when the mirror and registration threads are made, at start */
static const struct sitem etcd_items[] = {
	{ .name = "endpoints", .type = ST_TARGET,
	  LST(CS, conf.store.etcd.endpoints, conf.store.etcd.nendpoints, SF_NONEMPTY), .min = 2379,
	  .restart = true, .restart_note = NOTE_ETCD },
	{ .name = "prefix", .type = ST_TEXT, FLD(CS, conf.store.etcd.prefix), .def = "/partdns/",
	  .restart = true, .restart_note = NOTE_ETCD },
	{ .name = "name", .type = ST_TEXT, FLD(CS, conf.store.etcd.name), .def = "",
	  .restart = true, .restart_note = NOTE_ETCD },
	{ .name = "username", .type = ST_TEXT, FLD(CS, conf.store.etcd.username), .def = "",
	  .restart = true, .restart_note = NOTE_ETCD },
	{ .name = "password_file", .type = ST_STR, FLD(CS, conf.store.etcd.password_file), .def = "",
	  .restart = true, .restart_note = NOTE_ETCD },
	{ .name = "ca", .type = ST_STR, FLD(CS, conf.store.etcd.ca), .def = "",
	  .restart = true, .restart_note = NOTE_ETCD },
	{ .name = "cert", .type = ST_STR, FLD(CS, conf.store.etcd.cert), .def = "",
	  .restart = true, .restart_note = NOTE_ETCD },
	{ .name = "key", .type = ST_STR, FLD(CS, conf.store.etcd.key), .def = "",
	  .restart = true, .restart_note = NOTE_ETCD },
	{ .name = "timeout_ms", .type = ST_UINT, FLD(CS, conf.store.etcd.timeout_ms),
	  .min = 100, .max = 60000, .def = "2000", .restart = true, .restart_note = NOTE_ETCD },
	{ .name = "lease_ttl", .type = ST_UINT, FLD(CS, conf.store.etcd.lease_ttl),
	  .min = 2, .max = 3600, .def = "10", .restart = true, .restart_note = NOTE_ETCD },
	{ .name = NULL },
};

static const struct sitem store_items[] = {
	{ .name = "etcd", SEC(etcd_items) },
	{ .name = NULL },
};

#define CP struct conf_part
static const struct sitem part_items[] = {
	{ .name = "name", .type = ST_PNAME, .flags = SF_REQUIRED | SF_NODE, FLD(CP, name),
	  NODE(CP, name_node) },
	{ .name = "label", .type = ST_TEXT, FLD(CP, label) },
	{ .name = "country", .type = ST_COUNTRY, FLD(CP, country) },
	{ .name = "region", .type = ST_REGION, FLD(CP, region) },
	{ .name = "city", .type = ST_TEXT, FLD(CP, city) },
	{ .name = "postal", .type = ST_TEXT, FLD(CP, postal) },
	/* carried in the CSV and JSON exports: CDNs steer by city and carrier */
	{ .name = "isp", .type = ST_TEXT, FLD(CP, isp) },
	{ .name = "asn", .type = ST_UINT, FLD(CP, asn), .min = 1, .max = 4294967295u },
	/* what partdnsctl partition failover switches to; checked in check.c */
	{ .name = "standby", .type = ST_STR, .flags = SF_NODE, FLD(CP, standby), NODE(CP, standby_node) },
	{ .name = "mapped", .type = ST_ADDR4, .flags = SF_NODE, FLD(CP, mapped),
	  NODE(CP, mapped_node) },
	{ .name = "mapped6", .type = ST_PREFIX6, .flags = SF_NODE, FLD(CP, mapped6),
	  NODE(CP, mapped6_node) },
	{ .name = "prefixes", .type = ST_PREFIX, LST(CP, prefixes, nprefixes, SF_NODE),
	  NODE(CP, prefixes_node) },
	/* this city's local data, before the global local_zones */
	{ .name = "local_zones", SEC(local_items), LST(CP, local.z, local.n, 0) },
	{ .name = NULL },
};

static void partitions_done(struct loader *L, const struct ynode *n);

static const struct sitem partitions_items[] = {
	{ .name = "unmatched", .type = ST_STR, .flags = SF_NODE, FLD(CS, unmatched),
	  NODE(CS, unmatched_node), .def = "common" },
	{ .name = "include", .type = ST_PATH, .flags = SF_NODE, FLD(CS, include),
	  NODE(CS, include_node) },
	/* the plan's version as CDNs see it: only grows (a reload checks) */
	{ .name = "serial", .type = ST_UINT, .flags = SF_NODE, FLD(CS, conf.partitions.serial),
	  NODE(CS, serial_node), .min = 1, .max = 4294967295u },
	{ .name = "list", SEC(part_items), LST(CS, parts, nparts, SF_NODE), NODE(CS, list_node) },
	{ .name = NULL },
};

/* The top of an included partitions file: the same fields, no further include. */
static const struct sitem include_items[] = {
	{ .name = "unmatched", .type = ST_STR, .flags = SF_NODE, FLD(CS, unmatched),
	  NODE(CS, unmatched_node) },
	{ .name = "serial", .type = ST_UINT, .flags = SF_NODE, FLD(CS, include_serial),
	  NODE(CS, include_serial_node), .min = 1, .max = 4294967295u },
	{ .name = "list", SEC(part_items), LST(CS, parts, nparts, SF_NODE), NODE(CS, list_node) },
	{ .name = NULL },
};

static const struct sitem root_items[] = {
	{ .name = "server", SEC(server_items) },
	{ .name = "cache", SEC(cache_items) },
	{ .name = "resolver", SEC(resolver_items) },
	{ .name = "edns", SEC(edns_items) },
	{ .name = "store", SEC(store_items) },
	{ .name = "partitions", SEC(partitions_items), .check = partitions_done },
	{ .name = "local_zones", SEC(local_items), LST(CS, conf.local_zones.z, conf.local_zones.n, 0) },
	{ .name = "rpz", SEC(rpz_items), LST(CS, conf.rpz, conf.nrpz, 0) },
	{ .name = NULL },
};

/* clang-format on */

/* Scalar parsers: 0, or -1 after reporting at n. */

static bool is_string_type(enum stype t)
{
	return t == ST_STR || t == ST_PATH || t == ST_TEXT || t == ST_COUNTRY || t == ST_REGION ||
	       t == ST_DNAME || t == ST_PNAME;
}

/* Decimal digits only; *neg for a leading '-'. @return 0, -EINVAL (syntax), -ERANGE. */
static int parse_u64(const char *s, uint64_t *out, bool *neg, const char **end)
{
	*neg = false;
	if (*s == '-') {
		*neg = true;
		s++;
	}
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	uint64_t v = 0;
	int rc = 0;
	for (; isdigit((unsigned char)*s); s++) {
		unsigned d = (unsigned)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			rc = -ERANGE;
		else
			v = v * 10 + d;
	}
	*out = v;
	*end = s;
	return rc;
}

/* "256M" for whole multiples of a unit, else the number. */
static void format_size(uint64_t v, char *buf, size_t size)
{
	static const char units[] = "KMGT";
	int u = -1;
	while (v != 0 && v % 1024 == 0 && u < 3) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, size, "%" PRIu64, v);
	else
		snprintf(buf, size, "%" PRIu64 "%c", v, units[u]);
}

static int parse_uint(struct loader *L, const struct sitem *it, const struct ynode *n,
                      const char *s, void *dst)
{
	uint64_t v;
	bool neg;
	const char *end;
	int rc = parse_u64(s, &v, &neg, &end);
	if (rc == -EINVAL || (rc == 0 && *end != '\0')) {
		conf_error(L, n, true, "expected an integer");
		return -1;
	}
	if (rc != 0 || neg || v < it->min || v > it->max) {
		conf_error(L, n, true, "out of range %" PRIu64 "..%" PRIu64, it->min, it->max);
		return -1;
	}
	if (it->size == sizeof(uint64_t)) {
		memcpy(dst, &v, sizeof(v));
	} else {
		uint32_t v32 = (uint32_t)v;
		memcpy(dst, &v32, sizeof(v32));
	}
	return 0;
}

/* YAML 1.2 core schema booleans only: "yes", "on" and friends are refused. */
static int parse_bool(struct loader *L, const struct sitem *it, const struct ynode *n,
                      const char *s, void *dst)
{
	bool v;
	if (strcmp(s, "true") == 0 || strcmp(s, "True") == 0 || strcmp(s, "TRUE") == 0) {
		v = true;
	} else if (strcmp(s, "false") == 0 || strcmp(s, "False") == 0 || strcmp(s, "FALSE") == 0) {
		v = false;
	} else {
		conf_error(L, n, true, "expected true or false");
		return -1;
	}
	memcpy(dst, &v, sizeof(v));
	return 0;
}

static int parse_size(struct loader *L, const struct sitem *it, const struct ynode *n,
                      const char *s, void *dst)
{
	uint64_t v;
	bool neg;
	const char *end;
	int rc = parse_u64(s, &v, &neg, &end);
	uint64_t mul = 1;
	if (rc != -EINVAL) {
		switch (*end) {
		case 'K':
		case 'k':
			mul = K;
			end++;
			break;
		case 'M':
		case 'm':
			mul = MIB;
			end++;
			break;
		case 'G':
		case 'g':
			mul = MIB * K;
			end++;
			break;
		default:
			break;
		}
	}
	if (rc == -EINVAL || *end != '\0') {
		conf_error(L, n, true,
		           "expected a size: an integer with an optional K, M or G suffix");
		return -1;
	}
	if (rc == 0 && v > UINT64_MAX / mul)
		rc = -ERANGE;
	v *= mul;
	if (rc != 0 || neg || v < it->min || v > it->max) {
		char lo[32], hi[32];
		format_size(it->min, lo, sizeof(lo));
		format_size(it->max, hi, sizeof(hi));
		conf_error(L, n, true, "out of range %s..%s", lo, hi);
		return -1;
	}
	memcpy(dst, &v, sizeof(v));
	return 0;
}

static int store_string(struct loader *L, void *dst, const char *s)
{
	char *copy = strdup(s);
	if (copy == NULL) {
		L->oom = true;
		return -1;
	}
	char **field = dst;
	free(*field);
	*field = copy;
	return 0;
}

static bool has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

/* 2 ASCII letters, upper-cased into out[3]. */
static bool country_code(const char *s, char *out)
{
	if (!isalpha((unsigned char)s[0]) || !isalpha((unsigned char)s[1]) || s[2] != '\0' ||
	    (unsigned char)s[0] > 0x7f || (unsigned char)s[1] > 0x7f)
		return false;
	out[0] = (char)toupper((unsigned char)s[0]);
	out[1] = (char)toupper((unsigned char)s[1]);
	out[2] = '\0';
	return true;
}

static int parse_string(struct loader *L, const struct sitem *it, const struct ynode *n,
                        const char *s, void *dst)
{
	char buf[256];
	switch (it->type) {
	case ST_PATH:
		if (s[0] == '\0') {
			conf_error(L, n, false, "must not be empty");
			return -1;
		}
		break;
	case ST_TEXT:
		if (has_control(s)) {
			conf_error(L, n, true, "control characters are not allowed");
			return -1;
		}
		break;
	case ST_COUNTRY:
		if (!country_code(s, buf)) {
			conf_error(L, n, true,
			           "expected an ISO 3166-1 alpha-2 country code, e.g. CN");
			return -1;
		}
		s = buf;
		break;
	case ST_REGION: {
		/* ISO 3166-2: country, '-', 1..3 letters or digits. */
		size_t len = strlen(s), i;
		bool ok = len >= 4 && len <= 6 && s[2] == '-';
		char cc[3] = { s[0], len > 1 ? s[1] : '\0', '\0' };
		ok = ok && country_code(cc, buf);
		for (i = 3; ok && i < len; i++)
			ok = (unsigned char)s[i] < 0x80 && isalnum((unsigned char)s[i]);
		if (!ok) {
			conf_error(L, n, true, "expected an ISO 3166-2 region code, e.g. CN-JS");
			return -1;
		}
		buf[2] = '-';
		for (i = 3; i < len; i++)
			buf[i] = (char)toupper((unsigned char)s[i]);
		buf[len] = '\0';
		s = buf;
		break;
	}
	case ST_DNAME:
		if (conf_name_normalize(s, buf, sizeof(buf)) != 0) {
			conf_error(L, n, true, "bad domain name");
			return -1;
		}
		s = buf;
		break;
	case ST_PNAME: {
		size_t len = strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-");
		if (len == 0 || len > 63 || s[len] != '\0') {
			conf_error(L, n, true,
			           "bad partition name, expected 1..63 characters of a-z, 0-9, '_' "
			           "and '-'");
			return -1;
		}
		if (strcmp(s, "common") == 0 || strcmp(s, "refuse") == 0) {
			conf_error(L, n, true, "partition name '%s' is reserved", s);
			return -1;
		}
		break;
	}
	default:
		break;
	}
	return store_string(L, dst, s);
}

static int parse_enum(struct loader *L, const struct sitem *it, const struct ynode *n,
                      const char *s, void *dst)
{
	for (const struct senum *e = it->enums; e->name != NULL; e++)
		if (strcmp(e->name, s) == 0) {
			memcpy(dst, &e->value, sizeof(e->value));
			return 0;
		}
	char expect[128];
	size_t len = 0;
	for (const struct senum *e = it->enums; e->name != NULL; e++) {
		const char *sep = e == it->enums ? "" : e[1].name == NULL ? " or " : ", ";
		int w = snprintf(expect + len, sizeof(expect) - len, "%s%s", sep, e->name);
		if (w > 0 && (size_t)w < sizeof(expect) - len)
			len += (size_t)w;
	}
	conf_error(L, n, true, "expected %s", expect);
	return -1;
}

/* Report a prefix_parse failure, suggesting the canonical form for host bits. */
static void prefix_error(struct loader *L, const struct ynode *n, int rc,
                         const struct prefix *masked)
{
	if (rc == PREFIX_E_HOSTBITS) {
		char buf[PREFIX_STRLEN];
		prefix_format(masked, buf, sizeof(buf));
		conf_error(L, n, true, "host bits set in prefix, did you mean %s", buf);
	} else {
		conf_error(L, n, true, "bad prefix: %s", prefix_strerror(rc));
	}
}

static int parse_prefix_item(struct loader *L, const struct sitem *it, const struct ynode *n,
                             const char *s, void *dst)
{
	struct prefix p;
	int rc;
	switch (it->type) {
	case ST_ADDR4:
		rc = prefix_parse_addr(s, &p);
		if (rc != 0) {
			conf_error(L, n, true, "bad address: %s", prefix_strerror(rc));
			return -1;
		}
		if (p.family != AF_INET) {
			conf_error(L, n, true, "expected an IPv4 address (IPv6 goes in mapped6)");
			return -1;
		}
		break;
	case ST_PREFIX6:
		rc = prefix_parse(s, &p);
		if (rc != 0) {
			prefix_error(L, n, rc, &p);
			return -1;
		}
		if (p.family != AF_INET6) {
			conf_error(L, n, true,
			           "expected an IPv6 address or prefix (IPv4 goes in mapped)");
			return -1;
		}
		if (p.len == 0) {
			conf_error(L, n, true, "prefix length must be 1..128");
			return -1;
		}
		break;
	default:
		rc = prefix_parse(s, &p);
		if (rc != 0) {
			prefix_error(L, n, rc, &p);
			return -1;
		}
		break;
	}
	memcpy(dst, &p, sizeof(p));
	return 0;
}

static int parse_target(struct loader *L, const struct sitem *it, const struct ynode *n,
                        const char *s, void *dst)
{
	const char *why = NULL;
	if (s[0] == '\0' && (it->flags & SF_EMPTY_OFF)) {
		memset(dst, 0, sizeof(struct conf_addr));
		return 0;
	}
	if (it->min == 0 && strchr(s, '@') == NULL) {
		conf_error(L, n, true, "bad ADDR@PORT: the port is required, e.g. 127.0.0.1@9153");
		return -1;
	}
	if (conf_addr_parse_why(s, (uint16_t)it->min, dst, &why) != 0) {
		conf_error(L, n, true, "bad ADDR@PORT: %s", why);
		return -1;
	}
	return 0;
}

static int parse_source(struct loader *L, const struct ynode *n, const char *s, void *dst)
{
	const char *why = NULL;
	if (conf_source_parse_why(s, dst, &why) != 0) {
		conf_error(L, n, true, "bad source address: %s", why);
		return -1;
	}
	return 0;
}

/* n is NULL for a default; s is the text. */
static int parse_scalar(struct loader *L, const struct sitem *it, const struct ynode *n,
                        const char *s, void *dst)
{
	switch (it->type) {
	case ST_UINT:
		return parse_uint(L, it, n, s, dst);
	case ST_BOOL:
		return parse_bool(L, it, n, s, dst);
	case ST_SIZE:
		return parse_size(L, it, n, s, dst);
	case ST_ENUM:
		return parse_enum(L, it, n, s, dst);
	case ST_TARGET:
		return parse_target(L, it, n, s, dst);
	case ST_SOURCE:
		return parse_source(L, n, s, dst);
	case ST_PREFIX:
	case ST_ADDR4:
	case ST_PREFIX6:
		return parse_prefix_item(L, it, n, s, dst);
	default:
		return parse_string(L, it, n, s, dst);
	}
}

/* Freeing. */

static void free_items(const struct sitem *items, void *base);

static void free_options(const struct sitem *it, void *base)
{
	struct conf_option **arr = (struct conf_option **)((char *)base + it->off);
	size_t *count = (size_t *)((char *)base + it->count_off);
	for (size_t i = 0; i < *count; i++) {
		free((*arr)[i].name);
		free((*arr)[i].value);
	}
	free(*arr);
	*arr = NULL;
	*count = 0;
}

static void free_list(const struct sitem *it, void *base)
{
	char **arr = (char **)((char *)base + it->off);
	size_t *count = (size_t *)((char *)base + it->count_off);
	for (size_t i = 0; *arr != NULL && i < *count; i++) {
		void *elem = *arr + i * it->size;
		if (it->type == ST_SECTION)
			free_items(it->sub, elem);
		if (it->sub == local_items) /* the records parsed at load, beside the schema's fields */
			free(((struct conf_local_zone *)elem)->rrs);
		if (it->sub == rpz_items) /* the partition ids resolved at load */
			free(((struct conf_rpz *)elem)->part_ids);
		else if (is_string_type(it->type))
			free(*(char **)elem);
	}
	free(*arr);
	*arr = NULL;
	*count = 0;
}

static void free_items(const struct sitem *items, void *base)
{
	for (const struct sitem *it = items; it->name != NULL; it++) {
		if (it->type == ST_OPTIONS) {
			free_options(it, base);
		} else if (it->flags & SF_LIST) {
			free_list(it, base);
		} else if (it->type == ST_SECTION) {
			free_items(it->sub, base);
		} else if (is_string_type(it->type)) {
			char **field = (char **)((char *)base + it->off);
			free(*field);
			*field = NULL;
		}
	}
}

void conf_schema_free(struct conf_state *st)
{
	free_items(root_items, st);
	free(st->conf.path);
	free(st->conf.partitions.include);
	ptable_free(st->conf.partitions.table);
	mapping_free(st->conf.partitions.mapping);
	for (size_t i = 0; i < st->conf.partitions.nlocal; i++) {
		struct conf_local_list *l = &st->conf.partitions.local[i];
		for (size_t k = 0; k < l->n; k++)
			conf_local_free(&l->z[k]);
		free(l->z);
	}
	free(st->conf.partitions.local);
	st->conf.partitions.local = NULL;
	st->conf.partitions.nlocal = 0;
	st->conf.path = NULL;
	st->conf.partitions.include = NULL;
	st->conf.partitions.table = NULL;
	st->conf.partitions.mapping = NULL;
}

/* Defaults. */

static void apply_defaults(struct loader *L, const struct sitem *items, void *base)
{
	for (const struct sitem *it = items; it->name != NULL; it++) {
		if (it->type == ST_SECTION && !(it->flags & SF_LIST)) {
			apply_defaults(L, it->sub, base);
		} else if ((it->flags & SF_LIST) && it->defs != NULL) {
			size_t n = 0;
			while (it->defs[n] != NULL)
				n++;
			char *arr = calloc(n, it->size);
			if (arr == NULL) {
				L->oom = true;
				continue;
			}
			*(char **)((char *)base + it->off) = arr;
			*(size_t *)((char *)base + it->count_off) = n;
			for (size_t i = 0; i < n; i++)
				parse_scalar(L, it, NULL, it->defs[i], arr + i * it->size);
		} else if (!(it->flags & SF_LIST) && it->def != NULL) {
			parse_scalar(L, it, NULL, it->def, (char *)base + it->off);
		}
	}
}

int conf_schema_defaults(struct loader *L)
{
	apply_defaults(L, root_items, &L->st);
	return L->oom ? -ENOMEM : 0;
}

/* The walk. */

static void walk_item(struct loader *L, const struct sitem *it, const struct ynode *n, void *base);

/* Levenshtein distance, for "did you mean"; large for long strings. */
static unsigned edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 32 || lb > 32)
		return 99;
	unsigned row[33];
	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		unsigned diag = row[0];
		row[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned up = row[j];
			unsigned best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

static void unknown_key(struct loader *L, const struct sitem *items, const struct ynode *k)
{
	const char *best = NULL;
	unsigned bestd = 3; /* suggest only close misspellings */
	for (const struct sitem *it = items; it->name != NULL; it++) {
		unsigned d = edit_distance(k->u.str, it->name);
		if (d < bestd) {
			bestd = d;
			best = it->name;
		}
	}
	if (best != NULL)
		conf_error(L, k, false, "unknown key, did you mean '%s'?", best);
	else
		conf_error(L, k, false, "unknown key");
}

static void walk_section(struct loader *L, const struct sitem *items, const struct ynode *n,
                         void *base)
{
	if (n->type != YNODE_MAP) {
		conf_error(L, n, !conf_ynode_is_null(n), "expected a mapping, got %s",
		           conf_ynode_kind(n));
		return;
	}
	const struct ynode *seen[SECTION_MAX + 1] = { NULL };
	for (size_t i = 0; i < n->n; i++) {
		const struct ynode *k = n->u.kids[2 * i], *v = n->u.kids[2 * i + 1];
		if (k->type != YNODE_SCALAR) {
			conf_error(L, k, false, "expected a scalar key, got %s",
			           conf_ynode_kind(k));
			continue;
		}
		size_t idx = 0;
		while (items[idx].name != NULL && strcmp(items[idx].name, k->u.str) != 0)
			idx++;
		if (idx > SECTION_MAX) { /* a schema section outgrew seen[]: a bug here, never the file's */
			conf_error(L, k, false, "internal error: schema section larger than SECTION_MAX");
			continue;
		}
		size_t saved = conf_key_push(L, k->u.str);
		if (items[idx].name == NULL) {
			unknown_key(L, items, k);
		} else if (seen[idx] != NULL) {
			conf_error(L, k, false, "duplicate key, first at line %u, column %u",
			           (unsigned)seen[idx]->line, (unsigned)seen[idx]->col);
		} else {
			seen[idx] = k;
			walk_item(L, &items[idx], v, base);
		}
		conf_key_pop(L, saved);
	}
	for (size_t idx = 0; items[idx].name != NULL; idx++)
		if ((items[idx].flags & SF_REQUIRED) && seen[idx] == NULL)
			conf_error(L, n, false, "missing required key '%s'", items[idx].name);
}

static void walk_list(struct loader *L, const struct sitem *it, const struct ynode *n, void *base)
{
	bool one = (it->flags & SF_ONE_OK) && n->type == YNODE_SCALAR;
	if (n->type != YNODE_SEQ && !one) {
		conf_error(L, n, true, "expected a %slist, got %s", it->flags & SF_ONE_OK ? "string or a " : "",
		           conf_ynode_kind(n));
		return;
	}
	free_list(it, base);
	size_t count = one ? (n->u.str[0] != '\0') : n->n;
	if (count == 0) {
		if (it->flags & SF_NONEMPTY)
			conf_error(L, n, false, "must not be empty");
		return;
	}
	char *arr = calloc(count, it->size);
	if (arr == NULL) {
		L->oom = true;
		return;
	}
	*(char **)((char *)base + it->off) = arr;
	*(size_t *)((char *)base + it->count_off) = count;
	for (size_t i = 0; i < count; i++) {
		const struct ynode *kid = one ? n : n->u.kids[i];
		void *elem = arr + i * it->size;
		size_t saved = one ? L->keylen : conf_key_index(L, i); /* one: the key itself, no [0] */
		if (it->type == ST_SECTION) {
			apply_defaults(L, it->sub, elem);
			walk_section(L, it->sub, kid, elem);
		} else if (kid->type != YNODE_SCALAR) {
			conf_error(L, kid, false, "expected a scalar, got %s",
			           conf_ynode_kind(kid));
		} else {
			parse_scalar(L, it, kid, kid->u.str, elem);
		}
		conf_key_pop(L, saved);
	}
}

/* ub_ctx_set_option names: letters, digits, '-' and '_', then ':' (added if missing). */
static bool option_name(const char *s, char *out, size_t size)
{
	size_t len = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_");
	if (len == 0 || len + 2 > size || (s[len] != '\0' && strcmp(s + len, ":") != 0))
		return false;
	memcpy(out, s, len);
	out[len] = ':';
	out[len + 1] = '\0';
	return true;
}

/*
 * The options libunbound 1.17's ub_ctx_set_option (config_set_option in its
 * util/config_file.c) adds to a list instead of replacing: only these take
 * a list of values here, each set in order. Any other option set twice
 * keeps its last value, so a list there would hide all but one.
 */
static const char *const repeatable_options[] = {
	"local-zone:",        "local-data:",        "local-data-ptr:",        "trust-anchor:",
	"trust-anchor-file:", "trusted-keys-file:", "auto-trust-anchor-file:", "domain-insecure:",
	"private-address:",   "private-domain:",    "do-not-query-address:",  "caps-whitelist:",
	"root-hints:",        "outgoing-interface:", "outgoing-port-permit:",  "outgoing-port-avoid:",
	"define-tag:",        "python-script:",     "dynlib-file:",
};

static bool option_repeatable(const char *name)
{
	for (size_t i = 0; i < sizeof(repeatable_options) / sizeof(repeatable_options[0]); i++)
		if (strcmp(name, repeatable_options[i]) == 0)
			return true;
	return false;
}

/* One value of an option: a scalar, not empty. @return its text, or NULL (reported). */
static const char *option_value(struct loader *L, const struct ynode *v)
{
	if (conf_ynode_is_null(v)) {
		conf_error(L, v, false, "missing value");
		return NULL;
	}
	if (v->type != YNODE_SCALAR) {
		conf_error(L, v, false, "expected a scalar, got %s", conf_ynode_kind(v));
		return NULL;
	}
	return v->u.str;
}

static void walk_options(struct loader *L, const struct sitem *it, const struct ynode *n,
                         void *base)
{
	if (n->type != YNODE_MAP) {
		conf_error(L, n, true, "expected a mapping, got %s", conf_ynode_kind(n));
		return;
	}
	free_options(it, base);
	if (n->n == 0)
		return;
	/* a list's values are an option each: room for every one */
	size_t room = 0;
	for (size_t i = 0; i < n->n; i++) {
		const struct ynode *v = n->u.kids[2 * i + 1];
		room += v->type == YNODE_SEQ && v->n > 0 ? v->n : 1;
	}
	struct conf_option *opts = calloc(room, sizeof(*opts));
	const struct ynode **keys = calloc(room, sizeof(*keys));
	if (opts == NULL || keys == NULL) {
		free(opts);
		free(keys);
		L->oom = true;
		return;
	}
	*(struct conf_option **)((char *)base + it->off) = opts;
	size_t *count = (size_t *)((char *)base + it->count_off);
	for (size_t i = 0; i < n->n; i++) {
		const struct ynode *k = n->u.kids[2 * i], *v = n->u.kids[2 * i + 1];
		if (k->type != YNODE_SCALAR) {
			conf_error(L, k, false, "expected a scalar key, got %s",
			           conf_ynode_kind(k));
			continue;
		}
		size_t saved = conf_key_push(L, k->u.str);
		char name[72];
		size_t j = 0;
		if (!option_name(k->u.str, name, sizeof(name))) {
			conf_error(L, k, false,
			           "bad option name, expected letters, digits, '-' and '_'");
			goto next;
		}
		while (j < *count && strcmp(opts[j].name, name) != 0)
			j++;
		if (j < *count) {
			conf_error(L, k, false, "duplicate key, first at line %u, column %u",
			           (unsigned)keys[j]->line, (unsigned)keys[j]->col);
			goto next;
		}
		bool list = v->type == YNODE_SEQ;
		if (list && !option_repeatable(name)) {
			conf_error(L, v, false,
			           "a list, but libunbound keeps only the last value of this option: lists are for "
			           "the options it takes more than once (local-zone, local-data, trust-anchor, "
			           "trust-anchor-file, domain-insecure, private-address, ...; partdns.yaml(5))");
			goto next;
		}
		if (list && v->n == 0) {
			conf_error(L, v, false, "must not be empty");
			goto next;
		}
		for (size_t e = 0; e < (list ? v->n : 1); e++) {
			size_t at = list ? conf_key_index(L, e) : L->keylen;
			const char *value = option_value(L, list ? v->u.kids[e] : v);
			conf_key_pop(L, at);
			if (value == NULL)
				continue;
			opts[*count].name = strdup(name);
			opts[*count].value = strdup(value);
			keys[*count] = k;
			(*count)++;
			if (opts[*count - 1].name == NULL || opts[*count - 1].value == NULL)
				L->oom = true;
		}
	next:
		conf_key_pop(L, saved);
	}
	free(keys);
}

static void walk_item(struct loader *L, const struct sitem *it, const struct ynode *n, void *base)
{
	/* An empty value ("key:" or "key: ~") leaves the default. */
	if (conf_ynode_is_null(n)) {
		if (it->flags & SF_REQUIRED)
			conf_error(L, n, false, "missing value");
		return;
	}
	if (it->flags & SF_NODE) {
		const struct ynode **slot = (const struct ynode **)((char *)base + it->node_off);
		if (*slot != NULL) {
			conf_error(L, n, false, "already set at %s:%u:%u", (*slot)->src->name,
			           (unsigned)(*slot)->line, (unsigned)(*slot)->col);
			return;
		}
		*slot = n;
	}
	if (it->type == ST_OPTIONS)
		walk_options(L, it, n, base);
	else if (it->flags & SF_LIST)
		walk_list(L, it, n, base);
	else if (it->type == ST_SECTION)
		walk_section(L, it->sub, n, base);
	else if (n->type != YNODE_SCALAR)
		conf_error(L, n, false, "expected a scalar, got %s", conf_ynode_kind(n));
	else
		parse_scalar(L, it, n, n->u.str, (char *)base + it->off);
	if (it->check != NULL)
		it->check(L, n);
}

/*
 * After the partitions section: include and list exclude each other. A lone
 * include is only recorded; the loader reads and applies it after this walk,
 * so the schema never reads files or calls back into the loader.
 */
static void partitions_done(struct loader *L, const struct ynode *n)
{
	struct conf_state *st = &L->st;
	if (st->include_node != NULL && st->list_node != NULL) {
		bool list_later = st->list_node->line > st->include_node->line ||
		                  (st->list_node->line == st->include_node->line &&
		                   st->list_node->col > st->include_node->col);
		size_t saved = conf_key_push(L, list_later ? "list" : "include");
		conf_error(L, list_later ? st->list_node : st->include_node, false,
		           "include and list are mutually exclusive");
		conf_key_pop(L, saved);
		return;
	}
	if (st->include_node != NULL && st->include != NULL)
		st->include_pending = true;
}

void conf_schema_apply(struct loader *L, const struct ynode *root)
{
	if (conf_ynode_is_null(root))
		return;
	walk_section(L, root_items, root, &L->st);
}

void conf_schema_apply_include(struct loader *L, const struct ynode *root)
{
	if (conf_ynode_is_null(root))
		return;
	size_t saved = conf_key_push(L, "partitions");
	walk_section(L, include_items, root, &L->st);
	conf_key_pop(L, saved);
}

/* Restart keys: the rows flagged restart, found in the sections below the root (not inside lists). */

struct restart_walk {
	/* called for each restart row in schema order, with its key path; false stops the walk */
	bool (*visit)(struct restart_walk *w, const struct sitem *it, const char *path);
};

static bool walk_restart(struct restart_walk *w, const struct sitem *items, const char *prefix)
{
	for (const struct sitem *it = items; it->name != NULL; it++) {
		char path[LOADER_KEY_MAX];
		snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix != '\0' ? "." : "", it->name);
		if (it->restart) {
			if (!w->visit(w, it, path))
				return false;
		} else if (it->type == ST_SECTION && !(it->flags & SF_LIST) && !walk_restart(w, it->sub, path)) {
			return false;
		}
	}
	return true;
}

/* What a reload says when the row's value changed. */
static const char *restart_note(const struct sitem *it, const char *path)
{
	return it->restart_note != NULL ? it->restart_note : path;
}

static bool strings_same(const char *a, const char *b)
{
	return strcmp(a != NULL ? a : "", b != NULL ? b : "") == 0;
}

static bool value_same(const struct sitem *it, const char *a, const char *b);

/* One value of it's type at a and b: the field itself, or one element of its list. */
static bool element_same(const struct sitem *it, const void *a, const void *b)
{
	switch (it->type) {
	case ST_SECTION: /* a list's element: every row of it, at offsets from the element */
		for (const struct sitem *sub = it->sub; sub->name != NULL; sub++)
			if (!value_same(sub, a, b))
				return false;
		return true;
	case ST_UINT:
	case ST_BOOL:
	case ST_SIZE:
	case ST_ENUM:
		return memcmp(a, b, it->size) == 0;
	case ST_TARGET:
	case ST_SOURCE: /* as written, normalized: what the daemon bound or sends from */
		return strcmp(((const struct conf_addr *)a)->text, ((const struct conf_addr *)b)->text) == 0;
	case ST_PREFIX:
	case ST_ADDR4:
	case ST_PREFIX6:
		return prefix_equal(a, b);
	case ST_OPTIONS: {
		const struct conf_option *x = a, *y = b;
		return strings_same(x->name, y->name) && strings_same(x->value, y->value);
	}
	default:
		assert(is_string_type(it->type));
		return strings_same(*(char *const *)a, *(char *const *)b);
	}
}

/* Does row it hold the same value in a and b (each the base its offsets count from)? */
static bool value_same(const struct sitem *it, const char *a, const char *b)
{
	if (it->type == ST_SECTION && !(it->flags & SF_LIST)) { /* its rows count from the same base */
		for (const struct sitem *sub = it->sub; sub->name != NULL; sub++)
			if (!value_same(sub, a, b))
				return false;
		return true;
	}
	if (!(it->flags & SF_LIST) && it->type != ST_OPTIONS)
		return element_same(it, a + it->off, b + it->off);
	size_t na, nb;
	memcpy(&na, a + it->count_off, sizeof(na));
	memcpy(&nb, b + it->count_off, sizeof(nb));
	if (na != nb)
		return false;
	const char *xa, *xb;
	memcpy(&xa, a + it->off, sizeof(xa));
	memcpy(&xb, b + it->off, sizeof(xb));
	size_t size = it->type == ST_OPTIONS ? sizeof(struct conf_option) : it->size;
	for (size_t i = 0; i < na; i++)
		if (!element_same(it, xa + i * size, xb + i * size))
			return false;
	return true;
}

struct restart_keys {
	struct restart_walk w;
	void (*fn)(const char *key, const char *note, void *arg);
	void *arg;
};

static bool visit_key(struct restart_walk *w, const struct sitem *it, const char *path)
{
	struct restart_keys *k = (struct restart_keys *)w;
	k->fn(path, restart_note(it, path), k->arg);
	return true;
}

void conf_schema_restart_keys(void (*fn)(const char *key, const char *note, void *arg), void *arg)
{
	struct restart_keys k = { .w.visit = visit_key, .fn = fn, .arg = arg };
	walk_restart(&k.w, root_items, "");
}

/* The first row in schema order with a note whose value differs between old and neu. */
struct first_changed {
	struct restart_walk w;
	const struct conf_state *old, *neu;
	const char *note;
	const struct sitem *found;
};

static bool visit_first(struct restart_walk *w, const struct sitem *it, const char *path)
{
	struct first_changed *f = (struct first_changed *)w;
	if (strcmp(restart_note(it, path), f->note) != 0 ||
	    value_same(it, (const char *)f->old, (const char *)f->neu))
		return true;
	f->found = it;
	return false;
}

struct restart_changes {
	struct restart_walk w;
	const struct conf_state *old, *neu;
	void (*fn)(const char *note, void *arg);
	void *arg;
	size_t n;
};

/* A changed row gives its note, unless an earlier changed row of the same note gave it. */
static bool visit_changed(struct restart_walk *w, const struct sitem *it, const char *path)
{
	struct restart_changes *c = (struct restart_changes *)w;
	const char *note = restart_note(it, path);
	struct first_changed f = { .w.visit = visit_first, .old = c->old, .neu = c->neu, .note = note };
	walk_restart(&f.w, root_items, "");
	if (f.found == it) {
		c->fn(note, c->arg);
		c->n++;
	}
	return true;
}

size_t conf_schema_restart_changes(const struct conf_state *old, const struct conf_state *neu,
                                   void (*fn)(const char *note, void *arg), void *arg)
{
	struct restart_changes c = { .w.visit = visit_changed, .old = old, .neu = neu, .fn = fn, .arg = arg };
	walk_restart(&c.w, root_items, "");
	return c.n;
}
