/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An etcd v3 client over etcd's JSON gateway (HTTP/1.1 through libcurl,
 * JSON through json-c): ranges, transactions, leases and watches, with
 * failover between the cluster's members and optional authentication and
 * TLS. One handle is used by one thread at a time.
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Error codes (negative), in their own range. */
enum {
	ETCD_E_UNAVAILABLE = -3201, /* no member answered (connection refused, timeout, no leader) */
	ETCD_E_PROTOCOL = -3202,    /* an answer that is not what the gateway sends */
	ETCD_E_SERVER = -3203,      /* etcd refused the request (etcd_error says why) */
	ETCD_E_COMPACTED = -3204,   /* the revision asked for was compacted away */
	ETCD_E_AUTH = -3205,        /* authentication failed or permission denied */
	ETCD_E_STOPPED = -3206,     /* a watch ended because the caller asked it to */
	ETCD_E_NOMEM = -3207,
	ETCD_E_TOOBIG = -3208,      /* an answer (or a watch message) larger than the client reads */
};

struct etcd_opts {
	const char *const *endpoints; /* "http://127.0.0.1:2379" (https with ca or cert) */
	size_t nendpoints;
	const char *username, *password; /* NULL or "": no authentication */
	const char *ca, *cert, *key;     /* NULL or "": none */
	unsigned timeout_ms;             /* per request (a watch: per connection attempt) */
};

struct etcd;

/** A client for opts (copied). No connection is made yet. @return NULL on ENOMEM. */
struct etcd *etcd_new(const struct etcd_opts *opts);
void etcd_free(struct etcd *e);

/** What the last failed call said (member, HTTP status, etcd's message). */
const char *etcd_error(const struct etcd *e);

/** Text of an ETCD_E_* code. */
const char *etcd_strerror(int err);

/**
 * One key: key and value are NUL-terminated copies (values may hold NULs:
 * use vlen). etcd's keys are any bytes, and anyone with write access puts
 * them: a key, or a value, this client cannot hand over as it is comes with
 * bad set (why, a static string), and then key may hold NULs (use keylen)
 * and value is empty. A caller uses a kv with bad set only to name it.
 */
struct etcd_kv {
	char *key;
	size_t keylen;
	uint8_t *value;
	size_t vlen;
	int64_t create_revision, mod_revision, lease;
	const char *bad; /* NULL, or why the kv is not usable ("the key holds a NUL byte", ...) */
};

struct etcd_range {
	struct etcd_kv *kvs;
	size_t n;
	bool more;          /* limit cut the range short */
	int64_t revision;   /* the store's revision the range was read at */
	uint64_t cluster;   /* the cluster's id (a new cluster has new revisions) */
};

/**
 * Keys in [key, end) (end NULL: key alone; etcd_prefix_end for a prefix), in
 * key order, read at revision (0 = now), at most limit (0 = all).
 * @return 0 (out filled: etcd_range_free), ETCD_E_*.
 */
int etcd_get(struct etcd *e, const char *key, const char *end, int64_t revision, size_t limit,
             struct etcd_range *out);
void etcd_range_free(struct etcd_range *r);

/* A range request with every option. */
struct etcd_get_opts {
	const char *key;     /* the first key: keylen bytes (any; 0: strlen) */
	size_t keylen;
	const char *end;     /* NULL: key alone; else [key, end): endlen bytes (0: strlen) */
	size_t endlen;
	int64_t revision;    /* 0: now */
	size_t limit;        /* 0: all */
	bool keys_only;      /* values left out (empty) */
	size_t max_bytes;    /* the answer's cap (0: 64 MiB): a larger one is ETCD_E_TOOBIG, read no further */
};

/** etcd_get with every option. @return 0 (out filled: etcd_range_free), ETCD_E_TOOBIG, ETCD_E_*. */
int etcd_range(struct etcd *e, const struct etcd_get_opts *o, struct etcd_range *out);

/** The end of the range of every key starting with prefix (its last byte plus one), in buf. */
const char *etcd_prefix_end(const char *prefix, char *buf, size_t size);

/* A condition of a transaction: key's mod_revision equals mod_revision (0: the key is absent). */
struct etcd_cmp {
	const char *key;
	int64_t mod_revision;
};

/* A write of a transaction. */
struct etcd_op {
	bool del;              /* delete key (else put) */
	const char *key;
	const uint8_t *value;  /* put */
	size_t vlen;
	int64_t lease;         /* put: attach to this lease (0 = none) */
};

/* etcd's default limit of operations in one transaction (--max-txn-ops). */
#define ETCD_TXN_MAX_OPS 128

/**
 * If every cmp holds, do every op, atomically; else nothing.
 * @param succeeded out: whether the conditions held (the ops were done).
 * @param revision out, optional: the store's revision after it.
 * @return 0, ETCD_E_*.
 */
int etcd_txn(struct etcd *e, const struct etcd_cmp *cmp, size_t ncmp, const struct etcd_op *ops, size_t nops,
             bool *succeeded, int64_t *revision);

/** A lease of ttl seconds. @return 0 (*id), ETCD_E_*. */
int etcd_lease_grant(struct etcd *e, unsigned ttl, int64_t *id);
/** Renew lease id. @return 0 (*ttl: seconds left; 0 = the lease had expired), ETCD_E_*. */
int etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ttl);
/** End lease id and delete its keys. @return 0, ETCD_E_*. */
int etcd_lease_revoke(struct etcd *e, int64_t id);

/* One change seen by a watch. */
struct etcd_event {
	bool del;
	struct etcd_kv kv;  /* for a delete: key and mod_revision (the delete's revision) */
};

/*
 * Called with the events of one watch response (n >= 1, in revision order),
 * and once with none (ev NULL, n 0) when the watch is established;
 * header_revision is the store's revision when it was sent.
 * Return 0 to go on, non-zero to end the watch with that value.
 */
typedef int (*etcd_watch_fn)(const struct etcd_event *ev, size_t n, int64_t header_revision,
                             uint64_t cluster, void *arg);

/**
 * Watch [key, end) from start_revision, calling fn for each response with
 * events, until the connection fails, fn returns non-zero, or *stop becomes
 * true (checked about once a second). etcd is asked to cut large responses
 * into fragments; fn sees whole revisions (the events of one transaction
 * are never split between calls), and a value too large to read as a JSON
 * string (ETCD_VALUE_MAX) comes as a kv with bad set, its key named.
 * @param compacted out: set to the oldest revision still kept when
 *        start_revision was compacted (ETCD_E_COMPACTED).
 * @return fn's non-zero value, ETCD_E_STOPPED, ETCD_E_COMPACTED, ETCD_E_*.
 */
int etcd_watch(struct etcd *e, const char *key, const char *end, int64_t start_revision, etcd_watch_fn fn,
               void *arg, const atomic_bool *stop, int64_t *compacted);

/*
 * The answer parsers, with no I/O: etcd_get and etcd_watch parse every
 * answer through them, and tests/etcd/fuzz_etcd.c fuzzes them. Input is
 * hostile: anything that is not what etcd's gateway sends is
 * ETCD_E_PROTOCOL (keys and values strict base64, 64-bit numbers as
 * integers only, the header required). What etcd may well hold, however
 * odd (a key with a NUL byte, a value too large), is one kv with bad set:
 * it never ends a range or a watch.
 */

/**
 * A range answer's body (len bytes, need not be NUL-terminated).
 * @return 0 (out filled: etcd_range_free), ETCD_E_PROTOCOL, ETCD_E_NOMEM (out empty).
 */
int etcd_parse_range(const char *json, size_t len, struct etcd_range *out);

/* The reader of a watch stream: a sequence of JSON messages, fed in pieces split anywhere. */
struct etcd_watch_parser;

/** A parser calling fn (as etcd_watch does) with arg. @return NULL on ENOMEM. */
struct etcd_watch_parser *etcd_watch_parser_new(etcd_watch_fn fn, void *arg);
void etcd_watch_parser_free(struct etcd_watch_parser *p);

/* Longest value a watch reads: a longer one is left out (kv.bad), never buffered. */
#define ETCD_VALUE_MAX ((size_t)32 << 20)
/* Largest watch message, its values too large to read left out. */
#define ETCD_MESSAGE_MAX ((size_t)64 << 20)

/**
 * Other limits for p (tests and fuzzing): values of more than value_max
 * bytes are left out, and a message (or the events of one revision held
 * across fragments) of more than message_max bytes ends the stream.
 */
void etcd_watch_parser_limits(struct etcd_watch_parser *p, size_t value_max, size_t message_max);

/**
 * The next len bytes of the stream. A single message is capped
 * (ETCD_MESSAGE_MAX: ETCD_E_TOOBIG; with fragments, messages stay near
 * etcd's request limit, so only a server that ignores the fragment request
 * or one revision's events bigger than that reach it).
 * @return 0 to go on; else the stream is over and every later call returns
 *         the same: fn's non-zero value, ETCD_E_COMPACTED (see
 *         etcd_watch_parser_compacted), ETCD_E_SERVER (etcd cancelled the
 *         watch), ETCD_E_UNAVAILABLE (an error message), ETCD_E_PROTOCOL,
 *         ETCD_E_TOOBIG, ETCD_E_NOMEM.
 */
int etcd_watch_parser_feed(struct etcd_watch_parser *p, const char *data, size_t len);

/** Whether the stream said the watch was created (fn was called with no events). */
bool etcd_watch_parser_created(const struct etcd_watch_parser *p);

/** The oldest revision kept, after ETCD_E_COMPACTED (else 0). */
int64_t etcd_watch_parser_compacted(const struct etcd_watch_parser *p);

/** Why the stream ended ("" if it has not, or fn ended it). */
const char *etcd_watch_parser_error(const struct etcd_watch_parser *p);

/** The member the last successful request went to ("" before any). */
const char *etcd_member(const struct etcd *e);

/** The next request (or watch) goes to the next member first: the current one is thought unwell. */
void etcd_skip_member(struct etcd *e);
