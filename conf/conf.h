/* SPDX-License-Identifier: BSD-3-Clause */
/* The YAML configuration: load, validate, and the resulting immutable object. */
#pragma once

/* edns.tier: the most nodes one frontend spreads the partitions over */
#define CONF_TIER_MAX 16

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "mapping/mapping.h"
#include "partition/partition.h"
#include "partition/prefix.h"

/* ADDR@PORT and domain-name parsing (conf/text.c) are part of this API. */
#include "conf/text.h"

/* Error codes (negative), in the conf module's range. */
enum {
	CONF_E_INVALID = -3001, /* the config has errors (they were reported) */
	CONF_E_YAML = -3002,    /* not well-formed YAML */
	CONF_E_TARGET = -3003,  /* bad ADDR[@PORT] */
};

#define CONF_DEFAULT_PATH "/etc/partdns/partdns.yaml"

/* An ADDR[@PORT] endpoint (listen address or upstream target). */
struct conf_addr {
	struct sockaddr_storage ss;
	socklen_t len;
	char text[64]; /* as normalized for messages: "ADDR@PORT" ("ADDR" for a source address, port 0) */
};

enum conf_policy { CONF_POLICY_ITERATE, CONF_POLICY_FORWARD };

/* What happens to a client's query over server.client_qps. */
enum conf_limit_action {
	CONF_LIMIT_DROP,   /* no reply */
	CONF_LIMIT_REFUSE, /* REFUSED */
	CONF_LIMIT_SLIP,   /* every 2nd an empty TC=1 reply (a real client retries over TCP), the rest dropped */
};

/* Where log lines go (server.log) and which (server.log_level). */
enum conf_log_target { CONF_LOG_STDERR, CONF_LOG_SYSLOG };
enum conf_log_level { CONF_LOG_ERROR, CONF_LOG_WARNING, CONF_LOG_INFO, CONF_LOG_DEBUG };

enum conf_unmatched {
	CONF_UNMATCHED_COMMON,    /* no partition: everything goes the normal way */
	CONF_UNMATCHED_REFUSE,    /* REFUSED */
	CONF_UNMATCHED_PARTITION, /* treated as partitions.unmatched_id */
};

struct conf_forward_zone {
	char *name;               /* fully qualified, lower case, trailing dot */
	size_t nservers;
	struct conf_addr *servers;
};

/* What a local zone does with the names in it (Unbound's local-zone types). */
enum conf_local_type {
	CONF_LOCAL_STATIC,          /* local data only: a name or type without data is NXDOMAIN/NODATA */
	CONF_LOCAL_TRANSPARENT,     /* local data where there is some, else resolved as usual */
	CONF_LOCAL_REDIRECT,        /* the apex's data answers for every name in the zone */
	CONF_LOCAL_REFUSE,          /* local data where there is some, else REFUSED */
	CONF_LOCAL_ALWAYS_NXDOMAIN, /* NXDOMAIN for every name in the zone, data or not */
};

/*
 * A local zone (local_zones, partitions.list[].local_zones). Its records,
 * from data and file, are parsed and checked at load: rrs holds nrrs of them
 * back to back in wire form, each owner name uncompressed and lower case,
 * then type, class, TTL, RDLENGTH and RDATA (names in it uncompressed).
 */
struct conf_local_zone {
	char *name;                 /* fully qualified, lower case, trailing dot */
	enum conf_local_type type;
	size_t ndata;
	char **data;                /* zone-file lines, relative names under name */
	char *file;                 /* a zone file ($ORIGIN name), or NULL */
	uint8_t *rrs;
	size_t rrs_len, nrrs;
};

/* A response policy zone (rpz), applied to every client or to some partitions. */
struct conf_rpz {
	char *zone;                 /* the policy zone's name: triggers are relative to it */
	char *file;                 /* its zone file (read at start and on reload; with primary, each transfer's copy) */
	struct conf_addr primary;   /* len 0: none (the file is the zone) */
	char *tsig_name, *tsig_algorithm, *tsig_secret; /* NULL: transfers unsigned */
	unsigned refresh;           /* seconds between SOA checks; 0 = the zone's SOA refresh */
	size_t nallow_notify;
	struct prefix *allow_notify; /* NOTIFY senders besides the primary's address */
	size_t npartitions;
	char **partitions;          /* names as given; none = every client */
	unsigned *part_ids;         /* resolved, npartitions of them */
};

struct conf_local_list {
	size_t n;
	struct conf_local_zone *z;
};

struct conf_option {
	char *name;  /* ub_ctx_set_option name, with the trailing ':'; a repeatable one may come again */
	char *value;
};

/* store.etcd: a fleet's shared store. */
struct conf_etcd {
	size_t nendpoints;       /* none: no shared store, the local LMDB store is the truth */
	struct conf_addr *endpoints;
	char *prefix;            /* key prefix, "/" at both ends */
	char *name;              /* this node's name in the fleet; "" = the host name */
	char *username;          /* etcd authentication; "" = none */
	char *password_file;     /* the password, first line of this file */
	char *ca, *cert, *key;   /* TLS (https) when ca or cert is set; files */
	unsigned timeout_ms;     /* per request */
	unsigned lease_ttl;      /* seconds a dead node's registration outlives it */
};

struct conf {
	char *path;

	struct {
		size_t nlisten;
		struct conf_addr *listen;
		unsigned threads;         /* resolved: 0 in the file = one per core */
		size_t nallow;
		struct prefix *allow;
		char *control;            /* control socket path */
		char *user;               /* run as this user after binding; "" = as started (never root) */
		char *control_group;      /* group of the control socket; "" = the user's */
		struct conf_addr metrics; /* Prometheus /metrics and /health; len 0 = off */
		size_t nmetrics_allow;    /* who may fetch anything on it (others: 403) */
		struct prefix *metrics_allow;
		struct conf_addr http;    /* the partition plan published to CDNs; len 0 = off */
		size_t nhttp_allow;       /* who may fetch it; none = everyone */
		struct prefix *http_allow;
		char *store;              /* LMDB environment directory */
		bool create_store;        /* create the store directory when missing */
		unsigned tcp_idle_ms;     /* idle TCP connection timeout */
		unsigned tcp_max_clients; /* per worker thread */
		unsigned tcp_message_ms;  /* first byte to last of one TCP message */
		uint64_t tcp_out_max;     /* bytes of replies queued per TCP connection before reading pauses */
		unsigned tcp_max_per_client; /* TCP connections per IPv4 address or IPv6 /64, all threads */
		unsigned client_qps;      /* queries per second per client prefix; 0 = no limit */
		unsigned client_prefix4, client_prefix6; /* how clients are grouped for client_qps */
		enum conf_limit_action client_limit_action;
		size_t nclient_exempt;    /* never limited (with edns.trusted_ecs) */
		struct prefix *client_exempt;
		enum conf_log_target log;
		enum conf_log_level log_level;
		char *dnstap;             /* dnstap unix socket path; "" = off */
		unsigned max_udp_size;    /* largest UDP reply (and the size our OPT advertises), 512..4096 */
		size_t nlisten_tls;       /* DNS over TLS listeners; none = off */
		struct conf_addr *listen_tls;
		size_t nlisten_https;     /* DNS over HTTPS listeners; none = off */
		struct conf_addr *listen_https;
		char *https_path;         /* the path of DoH requests ("/dns-query") */
		bool ddr;                 /* answer _dns.resolver.arpa SVCB with the encrypted listeners (RFC 9462) */
		char *tls_cert;           /* PEM certificate chain for listen_tls and listen_https; "" = none */
		char *tls_key;            /* PEM private key for tls_cert */
		unsigned tls_max_clients; /* TLS connections per listener thread */
		unsigned tls_handshake_ms; /* accept to the end of the TLS handshake */
		size_t nproxy_from;       /* sources that must, and alone may, send a PROXY v2 header */
		struct prefix *proxy_from;
	} server;

	struct {
		uint64_t max_bytes;
		uint32_t min_ttl;
		uint32_t max_ttl;
		uint32_t max_negative_ttl;
		uint32_t failure_ttl;     /* seconds a resolution failure is remembered (RFC 9520); 0 = never */
		bool prefetch;            /* refresh an entry asked in the last 10 % of its TTL */
		bool serve_stale;         /* RFC 8767: expired answers when resolution fails */
		char *snapshot;           /* cache snapshot file (cache_snap.c); "" = none */
		uint32_t snapshot_interval; /* seconds between snapshots; 0 = at stop and takeover only */
	} cache;

	struct {
		unsigned threads;   /* resolved: 0 in the file = one per core */
		char *root_hints;   /* "" = built-in */
		size_t ntrust_anchor; /* DS/DNSKEY files, each read as is; none = no validation */
		char **trust_anchor;
		size_t nforward_zones;
		struct conf_forward_zone *forward_zones;
		size_t noptions;
		struct conf_option *options;
		unsigned zone_qps;  /* upstream queries per second per zone (libunbound ratelimit); 0 = off */
		unsigned zone_inflight; /* lookups in flight per parent domain, per resolver thread; 0 = off */
		size_t ndomain_insecure; /* names validated as insecure whatever the chain says (Unbound's */
		char **domain_insecure;  /* domain-insecure): private zones under a trust anchor */
		size_t noutgoing;   /* source addresses of the normal pool (libunbound outgoing-interface); */
		struct conf_addr *outgoing; /* none = any; a family without one is not used */
	} resolver;

	struct {
		unsigned threads;
		enum conf_policy policy;
		size_t nforward;
		struct conf_addr *forward;
		unsigned timeout_ms;
		unsigned max_inflight;  /* cap on concurrent EDNS resolutions */
		unsigned zone_qps;      /* upstream queries per second per zone; 0 = off */
		size_t ntrusted_ecs;
		struct prefix *trusted_ecs;
		size_t noutgoing;       /* source addresses of the EDNS pool's sockets and libunbound */
		struct conf_addr *outgoing; /* contexts; none = any; a family without one is not used */
		size_t ntier;           /* EDNS-tier nodes (at most CONF_TIER_MAX): flagged misses go to the partition's owner */
		struct conf_addr *tier; /* (rendezvous hashing by partition name); none = resolve here */
	} edns;

	/* The shared store of a fleet (store.etcd); server.store stays the local copy. */
	struct {
		struct conf_etcd etcd;
	} store;

	struct {
		enum conf_unmatched unmatched;
		unsigned unmatched_id;   /* for CONF_UNMATCHED_PARTITION */
		char *include;           /* partitions file, or NULL when inline */
		struct ptable *table;    /* built, ready for lookups */
		struct mapping *mapping; /* indexed by partition id */
		unsigned serial;         /* partitions.serial, the plan's version for CDNs; 0 = not set */
		uint64_t digest;         /* the plan's content: mapping_plan_digest with unmatched */
		/* partitions.list[].local_zones by partition id (0..size), each
		 * winning over local_zones for its clients; NULL when none has any */
		struct conf_local_list *local;
		size_t nlocal;
	} partitions;

	struct conf_local_list local_zones; /* local data for every client */
	size_t nrpz;
	struct conf_rpz *rpz;       /* in order: the first zone with a match decides */
};

/**
 * Where key ("server.user") is written in the config file at path, as
 * "path:line:col" in out, for checks made after loading (partdns -t's
 * user and group). @return 0, or -1 when the file does not set it (the
 * default is in use) or cannot be read.
 */
int conf_locate(const char *path, const char *key, char *out, size_t outlen);

/**
 * Load and validate a config file. Every error and warning is written to err
 * (may be NULL) as "file:line:col: error: what (key 'a.b', value 'v')".
 * @param nerrors out, optional: number of errors.
 * @return 0 (*out set, free with conf_free), CONF_E_INVALID, CONF_E_YAML,
 *         or -errno when the file cannot be read.
 */
int conf_load(const char *path, FILE *err, struct conf **out, unsigned *nerrors);

/**
 * As conf_load, with plan (plan_len bytes, named plan_name in messages)
 * read in place of the partitions include file: a staged plan (partdnsctl
 * plan stage) checked and run with the rest of the config. plan NULL: as
 * conf_load. A config without partitions.include is an error then.
 */
int conf_load_plan(const char *path, const char *plan, size_t plan_len, const char *plan_name, FILE *err,
                   struct conf **out, unsigned *nerrors);

/** As conf_load, from memory; name is used in messages (includes resolve relative to the cwd). */
int conf_load_string(const char *text, size_t len, const char *name, FILE *err,
                     struct conf **out, unsigned *nerrors);

void conf_free(struct conf *c);

/**
 * May neu's partition plan follow old's? partitions.serial versions the plan
 * for CDNs, so once it is kept: it only grows, it does not go away, and a
 * changed plan (partitions.digest) needs a new serial. Without a serial in
 * old anything goes (no promise was made).
 * @return 0, or -1 with the reason and what to do in why.
 */
int conf_plan_successor(const struct conf *old, const struct conf *neu, char *why, size_t len);

/**
 * The keys a running daemon cannot change (the schema's rows flagged
 * restart), in schema order: fn gets each key's path ("server.tcp_idle_ms")
 * and the note a reload gives when it changed ("server.tcp_*": keys that go
 * together share one; else the path).
 */
void conf_restart_keys(void (*fn)(const char *key, const char *note, void *arg), void *arg);

/**
 * What a reload from old to neu cannot apply: the restart keys whose values
 * differ, compared by each row's type. fn gets each note once, in schema
 * order. @return how many notes.
 */
size_t conf_restart_changes(const struct conf *old, const struct conf *neu, void (*fn)(const char *note, void *arg),
                            void *arg);

/** Text of a CONF_E_* or negative errno code. */
const char *conf_strerror(int err);
