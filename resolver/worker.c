/* SPDX-License-Identifier: BSD-3-Clause */
/* Worker threads: receive queries, classify, route, answer from cache or wait for a pool. */
#include "resolver/worker.h"

#include <errno.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "mapping/mapping.h"
#include "partition/partition.h"
#include "resolver/cache.h"
#include "resolver/chain.h"
#include "resolver/log.h"

#define UDP_BATCH 32
#define MAX_UDP_REPLY WIRE_DEFAULT_UDP

enum ev_kind { EV_UDP, EV_TCP_LISTEN, EV_TCP_CONN, EV_REPLIES, EV_STOP };

struct ev {
	enum ev_kind kind;
	int fd;
	void *ptr;
};

struct tcp_out {
	struct tcp_out *next;
	size_t len, off;
	uint8_t data[];
};

struct tcp_conn {
	struct ev ev;
	uint64_t id;           /* (generation << 32) | slot */
	int fd;
	struct sockaddr_storage peer;
	socklen_t peer_len;
	uint8_t in[2 + 65535];
	size_t in_len;
	struct tcp_out *out_head, *out_tail;
	unsigned pending;      /* queries waiting for a pool */
	uint64_t last_ns;
	bool closing;          /* peer closed its side: close once replies are out */
	bool dead;             /* closed; freed after the current event batch */
	struct tcp_conn *next_dead;
};

struct worker {
	struct server *srv;
	unsigned idx;
	pthread_t thread;
	bool started;
	int epfd;
	struct mq replies;
	struct ev replies_ev, stop_ev;
	size_t nlisten;
	struct ev *udp;        /* per listen address */
	struct ev *tcp;
	struct tcp_conn **conns;
	struct tcp_conn *dead;  /* closed this batch: later events may still name them */
	uint32_t *conn_gen;
	size_t max_conns, nconns;
	unsigned tcp_idle_ms;
	struct snapshot *snap;
	uint64_t snap_gen;
	struct counters ctr;
	struct partition_counters *pctr; /* PARTITION_MAX + 1 */
	uint8_t tcp_reply[2 + 65535];
};

struct counters *worker_counters(struct worker *w)
{
	return &w->ctr;
}

struct partition_counters *worker_partition_counters(struct worker *w)
{
	return w->pctr;
}

static int open_listener(const struct conf_addr *a, int type)
{
	int fd = socket(a->ss.ss_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* One socket per worker per address: the kernel spreads clients. */
	setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	if (a->ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (type == SOCK_DGRAM) {
		int sz = 4 << 20;
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	}
	if (bind(fd, (const struct sockaddr *)&a->ss, a->len) != 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	if (type == SOCK_STREAM && listen(fd, 1024) != 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

static int ep_add(struct worker *w, struct ev *ev, uint32_t events)
{
	struct epoll_event e = { .events = events, .data.ptr = ev };
	return epoll_ctl(w->epfd, EPOLL_CTL_ADD, ev->fd, &e);
}

struct worker *worker_new(struct server *srv, unsigned idx, const struct conf *c)
{
	struct worker *w = calloc(1, sizeof(*w));
	if (w == NULL)
		return NULL;
	w->srv = srv;
	w->idx = idx;
	w->epfd = -1;
	w->nlisten = c->server.nlisten;
	w->udp = calloc(w->nlisten ? w->nlisten : 1, sizeof(struct ev));
	w->tcp = calloc(w->nlisten ? w->nlisten : 1, sizeof(struct ev));
	w->max_conns = c->server.tcp_max_clients ? c->server.tcp_max_clients : 1000;
	w->tcp_idle_ms = c->server.tcp_idle_ms ? c->server.tcp_idle_ms : 10000;
	w->conns = calloc(w->max_conns, sizeof(*w->conns));
	w->conn_gen = calloc(w->max_conns, sizeof(*w->conn_gen));
	w->pctr = calloc(PARTITION_MAX + 1, sizeof(*w->pctr));
	if (!w->udp || !w->tcp || !w->conns || !w->conn_gen || !w->pctr)
		goto fail;
	for (size_t i = 0; i < w->nlisten; i++)
		w->udp[i].fd = w->tcp[i].fd = -1;
	if (mq_init(&w->replies) != 0)
		goto fail;
	w->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (w->epfd < 0)
		goto fail;
	w->replies_ev = (struct ev){ .kind = EV_REPLIES, .fd = w->replies.efd };
	w->stop_ev = (struct ev){ .kind = EV_STOP, .fd = server_stop_fd(srv) };
	if (ep_add(w, &w->replies_ev, EPOLLIN) != 0 || ep_add(w, &w->stop_ev, EPOLLIN) != 0)
		goto fail;
	for (size_t i = 0; i < w->nlisten; i++) {
		const struct conf_addr *a = &c->server.listen[i];
		int fd = open_listener(a, SOCK_DGRAM);
		if (fd < 0) {
			log_err("cannot listen on %s (UDP): %s", a->text, strerror(-fd));
			goto fail;
		}
		w->udp[i] = (struct ev){ .kind = EV_UDP, .fd = fd };
		fd = open_listener(a, SOCK_STREAM);
		if (fd < 0) {
			log_err("cannot listen on %s (TCP): %s", a->text, strerror(-fd));
			goto fail;
		}
		w->tcp[i] = (struct ev){ .kind = EV_TCP_LISTEN, .fd = fd };
		if (ep_add(w, &w->udp[i], EPOLLIN) != 0 || ep_add(w, &w->tcp[i], EPOLLIN) != 0)
			goto fail;
	}
	return w;
fail:
	worker_free(w);
	return NULL;
}

static void conn_close(struct worker *w, struct tcp_conn *c);
static void free_dead_conns(struct worker *w);
static struct tcp_conn *conn_by_id(struct worker *w, uint64_t id);
static void conn_queue(struct worker *w, struct tcp_conn *c, const uint8_t *msg, size_t len);
static bool conn_flush(struct worker *w, struct tcp_conn *c);

void worker_free(struct worker *w)
{
	if (w == NULL)
		return;
	if (w->conns) {
		for (size_t i = 0; i < w->max_conns; i++)
			if (w->conns[i])
				conn_close(w, w->conns[i]);
	}
	free_dead_conns(w);
	/* Replies that arrived after the loop ended. */
	if (w->replies.efd >= 0) {
		struct mq_node *n = mq_take_all(&w->replies);
		while (n) {
			struct waiter *wt = (struct waiter *)n;
			n = n->next;
			result_release(wt->result);
			free(wt);
		}
	}
	for (size_t i = 0; i < w->nlisten; i++) {
		if (w->udp && w->udp[i].fd >= 0)
			close(w->udp[i].fd);
		if (w->tcp && w->tcp[i].fd >= 0)
			close(w->tcp[i].fd);
	}
	if (w->epfd >= 0)
		close(w->epfd);
	mq_deinit(&w->replies);
	if (w->snap)
		snapshot_release(w->snap);
	free(w->udp);
	free(w->tcp);
	free(w->conns);
	free(w->conn_gen);
	free(w->pctr);
	free(w);
}

void worker_post(struct worker *w, struct waiter *wt)
{
	mq_push(&w->replies, &wt->node);
}

static void refresh_snapshot(struct worker *w)
{
	uint64_t g = server_snapshot_generation(w->srv);
	if (w->snap != NULL && g == w->snap_gen)
		return;
	struct snapshot *s = server_snapshot(w->srv);
	if (w->snap)
		snapshot_release(w->snap);
	w->snap = s;
	w->snap_gen = s->generation;
}

static void count_rcode(struct worker *w, int rcode)
{
	switch (rcode) {
	case WIRE_RCODE_NOERROR: counter_inc(&w->ctr.noerror); break;
	case WIRE_RCODE_NXDOMAIN: counter_inc(&w->ctr.nxdomain); break;
	case WIRE_RCODE_SERVFAIL: counter_inc(&w->ctr.servfail); break;
	case WIRE_RCODE_REFUSED: counter_inc(&w->ctr.refused); break;
	case WIRE_RCODE_FORMERR: counter_inc(&w->ctr.formerr); break;
	case WIRE_RCODE_NOTIMP: counter_inc(&w->ctr.notimp); break;
	case WIRE_RCODE_BADVERS: counter_inc(&w->ctr.badvers); break;
	default: break;
	}
}

/* ---- query processing ---- */

struct client {
	bool tcp;
	int udp_fd;
	uint64_t conn_id;
	const struct sockaddr_storage *peer;
	socklen_t peer_len;
};

static bool addr_bytes(const struct sockaddr_storage *ss, int *family, const uint8_t **addr)
{
	if (ss->ss_family == AF_INET) {
		*family = AF_INET;
		*addr = (const uint8_t *)&((const struct sockaddr_in *)ss)->sin_addr;
		return true;
	}
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
		const uint8_t *a = (const uint8_t *)&s6->sin6_addr;
		static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
		if (memcmp(a, v4mapped, 12) == 0) {
			*family = AF_INET;
			*addr = a + 12;
		} else {
			*family = AF_INET6;
			*addr = a;
		}
		return true;
	}
	return false;
}

static bool prefix_list_match(const struct prefix *list, size_t n, int family, const uint8_t *addr)
{
	struct prefix host;
	prefix_from_addr(&host, family, addr);
	for (size_t i = 0; i < n; i++)
		if (prefix_contains(&list[i], &host))
			return true;
	return false;
}

struct hit_ctx {
	const struct wire_query *q;
	const struct ecs *echo;
	uint8_t *out;
	size_t cap;
	uint32_t now;
	int len;
	bool partitioned;       /* the client has a partition with a mapped address */
	bool chain;             /* out: the chain enters an EDNS domain; see target/prefix */
	uint8_t target[WIRE_MAX_NAME];
	size_t target_len;
	uint8_t *prefix;        /* out: malloc'd copy */
	size_t prefix_len;
};

static int hit_write(const uint8_t *val, size_t vlen, uint32_t stored_at, void *arg)
{
	struct hit_ctx *h = arg;
	const uint8_t *blob, *target, *prefix;
	size_t blob_len, target_len, prefix_len;
	int c = chain_value_parse(val, vlen, &blob, &blob_len, &target, &target_len, &prefix, &prefix_len);
	if (c < 0)
		return -EINVAL;
	if (c == 1 && h->partitioned) {
		/* A partitioned client continues through the EDNS pool. */
		h->prefix = malloc(prefix_len);
		if (h->prefix == NULL)
			return -ENOMEM;
		memcpy(h->prefix, prefix, prefix_len);
		h->prefix_len = prefix_len;
		memcpy(h->target, target, target_len);
		h->target_len = target_len;
		h->chain = true;
		return 0;
	}
	uint32_t age = h->now > stored_at ? h->now - stored_at : 0;
	h->len = wire_answer_write(h->q, NULL, blob, blob_len, age, h->echo, h->out, h->cap);
	return 0;
}

/* Where a query goes: its partition, route and cache key. */
struct route {
	unsigned part;                   /* the client's partition (or COMMON) */
	const struct store_domain *rule; /* EDNS domain rule, NULL = normal */
	struct ecs mapped;               /* the partition's identity, when rule */
	bool has_mapped;
	bool echo;
	struct ecs echo_ecs;
	uint8_t key[KEY_MAX];
	size_t klen;
};

static void route_key(struct route *rt, const struct wire_query *q, unsigned key_part)
{
	uint8_t flags = (q->edns_do ? KEY_FLAG_DO : 0) | ((q->flags & WIRE_FLAG_CD) ? KEY_FLAG_CD : 0);
	rt->klen = key_build(rt->key, key_part, q->qtype, q->qclass, flags, q->qname_lc, q->qname_len);
}

/* Count a reply written from a cache blob by its header: rcode and TC. */
static void count_reply(struct worker *w, const uint8_t *out)
{
	uint16_t fl = (uint16_t)((out[2] << 8) | out[3]);
	if (fl & WIRE_FLAG_TC)
		counter_inc(&w->ctr.truncated);
	count_rcode(w, fl & WIRE_FLAG_RCODE);
}

static int write_hit(struct worker *w, struct route *rt, struct hit_ctx *h)
{
	counter_inc(&w->ctr.hits);
	counter_inc(&w->pctr[rt->part].hits);
	count_reply(w, h->out);
	return h->len;
}

/*
 * A miss: wait for (or start) the resolution of rt->key. For an EDNS chain
 * job, start/prefix say where the EDNS pool continues (prefix is taken).
 * @return -1 (waiting) or a SERVFAIL reply length.
 */
static int start_miss(struct worker *w, const struct client *cl, const struct wire_query *q, struct route *rt,
                      const uint8_t *start, size_t start_len, uint8_t *prefix, size_t prefix_len,
                      uint8_t *out, size_t limit)
{
	const struct conf *c = w->snap->conf;
	counter_inc(&w->ctr.misses);
	struct waiter *wt = calloc(1, sizeof(*wt));
	if (wt == NULL) {
		free(prefix);
		int n = wire_write_error(q, WIRE_RCODE_SERVFAIL, NULL, out, limit);
		return n > 0 ? n : 0;
	}
	wt->worker = w;
	wt->tcp = cl->tcp;
	wt->udp_fd = cl->udp_fd;
	wt->conn_id = cl->conn_id;
	memcpy(&wt->peer, cl->peer, cl->peer_len);
	wt->peer_len = cl->peer_len;
	wt->partition = rt->part;
	wt->edns_route = rt->rule != NULL;
	wt->echo = rt->echo;
	if (rt->echo)
		wt->echo_ecs = rt->echo_ecs;
	wt->start_ns = now_ns();
	wt->q = *q;

	struct job *job;
	if (server_job_join(w->srv, rt->key, rt->klen, wt, &job) == 0) {
		free(prefix);
		counter_inc(&w->ctr.coalesced);
		return -1;
	}
	memcpy(job->qname, q->qname_lc, q->qname_len);
	job->qname_len = q->qname_len;
	job->qtype = q->qtype;
	job->qclass = q->qclass;
	job->do_bit = q->edns_do;
	job->cd_bit = (q->flags & WIRE_FLAG_CD) != 0;
	job->partition = rt->rule ? rt->part : PARTITION_COMMON;
	job->lim = (struct wire_limits){ .min_ttl = c->cache.min_ttl, .max_ttl = c->cache.max_ttl,
	                                 .max_negative_ttl = c->cache.max_negative_ttl, .nosoa_ttl = 0 };
	job->timeout_ms = c->edns.timeout_ms;
	if (rt->rule) {
		const struct store_domain *rule = rt->rule;
		job->edns = true;
		job->ecs = rt->mapped;
		job->rule = *rule;
		if (rule->nforward > 0) {
			job->nforward = rule->nforward;
			memcpy(job->forward, rule->forward, rule->nforward * sizeof(job->forward[0]));
		} else {
			job->nforward = c->edns.nforward < STORE_MAX_FORWARD ? c->edns.nforward : STORE_MAX_FORWARD;
			if (job->nforward > 0)
				memcpy(job->forward, c->edns.forward, job->nforward * sizeof(job->forward[0]));
		}
		if (start_len > 0) {
			memcpy(job->start, start, start_len);
			job->start_len = start_len;
			job->prefix = prefix;
			job->prefix_len = prefix_len;
			prefix = NULL;
		}
		counter_inc(&w->ctr.edns_queries);
		counter_inc(&w->pctr[rt->part].edns);
	} else {
		counter_inc(&w->ctr.normal_queries);
	}
	free(prefix);
	server_job_dispatch(w->srv, job);
	return -1;
}

/*
 * A normal name whose chain enters an EDNS domain at target, for a
 * partitioned client: the per-partition answer, or an EDNS chain job.
 */
static int continue_chain(struct worker *w, const struct client *cl, const struct wire_query *q,
                          struct route *rt, const uint8_t *target, size_t target_len, uint8_t *prefix,
                          size_t prefix_len, uint8_t *out, size_t limit)
{
	rt->rule = domains_match(w->snap->domains, target, target_len);
	if (rt->rule == NULL) { /* unflagged since it was cached: resolve the common entry afresh */
		route_key(rt, q, PARTITION_COMMON);
		return start_miss(w, cl, q, rt, NULL, 0, prefix, 0, out, limit);
	}
	route_key(rt, q, rt->part);
	struct hit_ctx h = { .q = q, .echo = rt->echo ? &rt->echo_ecs : NULL, .out = out, .cap = limit,
	                     .now = now_sec() };
	if (cache_lookup(server_cache(w->srv), rt->key, rt->klen, h.now, hit_write, &h) >= 0 && h.len > 0) {
		free(prefix);
		return write_hit(w, rt, &h);
	}
	return start_miss(w, cl, q, rt, target, target_len, prefix, prefix_len, out, limit);
}

/*
 * Process one query. @return the reply length in out, 0 when dropped, -1 when
 * the client waits for a pool (the reply comes through the worker's queue).
 */
static int process_query(struct worker *w, const struct client *cl, const uint8_t *pkt, size_t len,
                         uint8_t *out, size_t cap)
{
	struct wire_query q;
	counter_inc(&w->ctr.queries);
	counter_inc(cl->tcp ? &w->ctr.tcp : &w->ctr.udp);
	int rc = wire_parse_query(pkt, len, &q);
	if (rc == WIRE_E_DROP) {
		counter_inc(&w->ctr.dropped);
		return 0;
	}
	int error_rcode = -1;
	if (rc == WIRE_E_FORMERR)
		error_rcode = WIRE_RCODE_FORMERR;
	else if (rc == WIRE_E_NOTIMP)
		error_rcode = WIRE_RCODE_NOTIMP;
	else if (rc == WIRE_E_BADVERS)
		error_rcode = WIRE_RCODE_BADVERS;
	size_t limit = cl->tcp ? 65535 : wire_udp_limit(&q, MAX_UDP_REPLY);
	if (limit > cap)
		limit = cap;

	const struct conf *c = w->snap->conf;
	int family;
	const uint8_t *addr;
	if (!addr_bytes(cl->peer, &family, &addr)) {
		counter_inc(&w->ctr.dropped);
		return 0;
	}
	if (error_rcode < 0 && !prefix_list_match(c->server.allow, c->server.nallow, family, addr))
		error_rcode = WIRE_RCODE_REFUSED;
	if (error_rcode < 0 && (q.qtype == 251 || q.qtype == 252)) /* IXFR, AXFR: not a resolver's job */
		error_rcode = WIRE_RCODE_REFUSED;
	if (error_rcode < 0 && q.qclass != WIRE_CLASS_IN)
		error_rcode = WIRE_RCODE_REFUSED;
	if (error_rcode >= 0) {
		count_rcode(w, error_rcode);
		int n = wire_write_error(&q, error_rcode, NULL, out, limit);
		return n > 0 ? n : 0;
	}

	/* Classify: the source address, or a trusted frontend's ECS. */
	struct route rt;
	rt.echo = false;
	rt.rule = NULL;
	rt.has_mapped = false;
	if (q.has_ecs && c->edns.ntrusted_ecs > 0 &&
	    prefix_list_match(c->edns.trusted_ecs, c->edns.ntrusted_ecs, family, addr)) {
		rt.echo = true;
		rt.echo_ecs = q.ecs;
		struct prefix p;
		ecs_to_prefix(&q.ecs, &p);
		if (q.ecs.source > 0)
			rt.part = ptable_lookup(c->partitions.table, p.family, p.addr, NULL);
		else
			rt.part = ptable_lookup(c->partitions.table, family, addr, NULL);
	} else {
		rt.part = ptable_lookup(c->partitions.table, family, addr, NULL);
	}
	if (rt.part == PARTITION_COMMON) {
		if (c->partitions.unmatched == CONF_UNMATCHED_REFUSE) {
			count_rcode(w, WIRE_RCODE_REFUSED);
			int n = wire_write_error(&q, WIRE_RCODE_REFUSED, NULL, out, limit);
			return n > 0 ? n : 0;
		}
		if (c->partitions.unmatched == CONF_UNMATCHED_PARTITION)
			rt.part = c->partitions.unmatched_id;
	}
	counter_inc(&w->pctr[rt.part].queries);

	/* Route: EDNS domains of a real partition (with a mapped address) go per partition. */
	if (rt.part != PARTITION_COMMON) {
		rt.rule = domains_match(w->snap->domains, q.qname_lc, q.qname_len);
		if (rt.rule) {
			rt.has_mapped = mapping_ecs(c->partitions.mapping, rt.part, family, &rt.mapped) == 0;
			if (!rt.has_mapped)
				rt.rule = NULL;
		}
	}
	if (rt.echo) /* RFC 7871 §7.2.1: scope says how far our answer holds */
		rt.echo_ecs.scope = rt.rule ? rt.echo_ecs.source : 0;
	route_key(&rt, &q, rt.rule ? rt.part : PARTITION_COMMON);

	struct hit_ctx h = { .q = &q, .echo = rt.echo ? &rt.echo_ecs : NULL, .out = out, .cap = limit,
	                     .now = now_sec(), .partitioned = rt.part != PARTITION_COMMON && rt.rule == NULL };
	if (cache_lookup(server_cache(w->srv), rt.key, rt.klen, h.now, hit_write, &h) >= 0) {
		if (h.chain && mapping_ecs(c->partitions.mapping, rt.part, family, &rt.mapped) != 0) {
			/* no identity to send: answer from the common entry */
			free(h.prefix);
			h.chain = false;
			h.partitioned = false;
			cache_lookup(server_cache(w->srv), rt.key, rt.klen, h.now, hit_write, &h);
		}
		if (h.chain) {
			rt.has_mapped = true;
			if (rt.echo)
				rt.echo_ecs.scope = rt.echo_ecs.source;
			return continue_chain(w, cl, &q, &rt, h.target, h.target_len, h.prefix, h.prefix_len, out,
			                      limit);
		}
		if (h.len > 0)
			return write_hit(w, &rt, &h);
	}
	return start_miss(w, cl, &q, &rt, NULL, 0, NULL, 0, out, limit);
}

/*
 * Send a waiter's reply (len > 0) to its client: UDP straight back, TCP
 * through its connection if still open. A TCP waiter stops being pending
 * either way (len <= 0: no reply could be written).
 */
static void reply_to_waiter(struct worker *w, const struct waiter *wt, const uint8_t *out, int len)
{
	if (!wt->tcp) {
		if (len > 0)
			sendto(wt->udp_fd, out, (size_t)len, MSG_DONTWAIT, (const struct sockaddr *)&wt->peer,
			       wt->peer_len);
		return;
	}
	struct tcp_conn *c = conn_by_id(w, wt->conn_id);
	if (c == NULL)
		return;
	c->pending--;
	if (len > 0)
		conn_queue(w, c, out, (size_t)len);
	conn_flush(w, c);
}

/* A normal answer reached a partitioned waiter whose chain enters an EDNS domain. */
static bool redo_as_chain(struct worker *w, struct waiter *wt)
{
	struct result *r = wt->result;
	if (r == NULL || r->prefix == NULL || wt->edns_route || wt->partition == PARTITION_COMMON)
		return false;
	refresh_snapshot(w);
	const struct conf *c = w->snap->conf;
	int family;
	const uint8_t *addr;
	struct route rt = { .part = wt->partition, .echo = wt->echo, .echo_ecs = wt->echo_ecs };
	if (!addr_bytes(&wt->peer, &family, &addr) ||
	    mapping_ecs(c->partitions.mapping, wt->partition, family, &rt.mapped) != 0)
		return false;
	rt.has_mapped = true;
	if (rt.echo)
		rt.echo_ecs.scope = rt.echo_ecs.source;
	uint8_t *prefix = malloc(r->prefix_len);
	if (prefix == NULL)
		return false;
	memcpy(prefix, r->prefix, r->prefix_len);
	struct client cl = { .tcp = wt->tcp, .udp_fd = wt->udp_fd, .conn_id = wt->conn_id, .peer = &wt->peer,
	                     .peer_len = wt->peer_len };
	size_t limit = wt->tcp ? 65535 : wire_udp_limit(&wt->q, MAX_UDP_REPLY);
	int len = continue_chain(w, &cl, &wt->q, &rt, r->target, r->target_len, prefix, r->prefix_len,
	                         w->tcp_reply, limit);
	/* len < 0: a new waiter took over; a TCP connection's pending count stays. */
	if (len >= 0)
		reply_to_waiter(w, wt, w->tcp_reply, len);
	result_release(r);
	free(wt);
	return true;
}

/* ---- UDP ---- */

/* Per-thread receive/reply vectors, set up once: recvmmsg only needs the
 * name lengths reset for the entries it filled. */
struct udp_batch {
	bool ready;
	uint8_t in[UDP_BATCH][4096];
	uint8_t out[UDP_BATCH][MAX_UDP_REPLY];
	struct mmsghdr msgs[UDP_BATCH], replies[UDP_BATCH];
	struct iovec iov[UDP_BATCH], riov[UDP_BATCH];
	struct sockaddr_storage peers[UDP_BATCH];
};

static _Thread_local struct udp_batch udp_tls;

static void udp_read(struct worker *w, struct ev *ev)
{
	struct udp_batch *b = &udp_tls;
	uint8_t (*in)[4096] = b->in;
	uint8_t (*out)[MAX_UDP_REPLY] = b->out;
	struct mmsghdr *msgs = b->msgs, *replies = b->replies;
	struct iovec *riov = b->riov;
	struct sockaddr_storage *peers = b->peers;
	if (!b->ready) {
		for (int i = 0; i < UDP_BATCH; i++) {
			b->iov[i] = (struct iovec){ .iov_base = in[i], .iov_len = sizeof(in[i]) };
			msgs[i].msg_hdr = (struct msghdr){ .msg_name = &peers[i], .msg_namelen = sizeof(peers[i]),
			                                   .msg_iov = &b->iov[i], .msg_iovlen = 1 };
		}
		b->ready = true;
	}

	for (int round = 0; round < 8; round++) {
		int n = recvmmsg(ev->fd, msgs, UDP_BATCH, MSG_DONTWAIT, NULL);
		if (n <= 0)
			return;
		int nr = 0;
		for (int i = 0; i < n; i++) {
			struct client cl = { .tcp = false, .udp_fd = ev->fd, .peer = &peers[i],
			                     .peer_len = msgs[i].msg_hdr.msg_namelen };
			int len = process_query(w, &cl, in[i], msgs[i].msg_len, out[nr], sizeof(out[nr]));
			if (len <= 0)
				continue;
			riov[nr] = (struct iovec){ .iov_base = out[nr], .iov_len = (size_t)len };
			replies[nr].msg_hdr = (struct msghdr){ .msg_name = &peers[i],
			                                       .msg_namelen = msgs[i].msg_hdr.msg_namelen,
			                                       .msg_iov = &riov[nr], .msg_iovlen = 1 };
			nr++;
		}
		for (int i = 0; i < n; i++)
			msgs[i].msg_hdr.msg_namelen = sizeof(peers[i]);
		int sent = 0;
		while (sent < nr) {
			int k = sendmmsg(ev->fd, replies + sent, (unsigned)(nr - sent), MSG_DONTWAIT);
			if (k <= 0)
				break; /* a full socket buffer drops the rest, as UDP may */
			sent += k;
		}
		if (n < UDP_BATCH)
			return;
	}
}

/* ---- TCP ---- */

static struct tcp_conn *conn_by_id(struct worker *w, uint64_t id)
{
	size_t slot = (size_t)(id & 0xffffffffu);
	if (slot >= w->max_conns || w->conns[slot] == NULL || w->conns[slot]->id != id)
		return NULL;
	return w->conns[slot];
}

static void conn_close(struct worker *w, struct tcp_conn *c)
{
	if (c->dead)
		return;
	size_t slot = (size_t)(c->id & 0xffffffffu);
	epoll_ctl(w->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	while (c->out_head) {
		struct tcp_out *o = c->out_head;
		c->out_head = o->next;
		free(o);
	}
	w->conns[slot] = NULL;
	w->nconns--;
	c->dead = true;
	c->next_dead = w->dead;
	w->dead = c;
}

static void free_dead_conns(struct worker *w)
{
	while (w->dead) {
		struct tcp_conn *c = w->dead;
		w->dead = c->next_dead;
		free(c);
	}
}

static void conn_update_events(struct worker *w, struct tcp_conn *c)
{
	uint32_t events = c->closing ? 0 : EPOLLIN;
	if (c->out_head)
		events |= EPOLLOUT;
	struct epoll_event e = { .events = events, .data.ptr = &c->ev };
	epoll_ctl(w->epfd, EPOLL_CTL_MOD, c->fd, &e);
}

/* Write queued output; @return false when the connection was closed. */
static bool conn_flush(struct worker *w, struct tcp_conn *c)
{
	while (c->out_head) {
		struct tcp_out *o = c->out_head;
		ssize_t k = send(c->fd, o->data + o->off, o->len - o->off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			conn_close(w, c);
			return false;
		}
		o->off += (size_t)k;
		if (o->off < o->len)
			break;
		c->out_head = o->next;
		if (c->out_head == NULL)
			c->out_tail = NULL;
		free(o);
	}
	if (c->closing && c->out_head == NULL && c->pending == 0) {
		conn_close(w, c);
		return false;
	}
	conn_update_events(w, c);
	return true;
}

static void conn_queue(struct worker *w, struct tcp_conn *c, const uint8_t *msg, size_t len)
{
	struct tcp_out *o = malloc(sizeof(*o) + len + 2);
	if (o == NULL)
		return;
	o->next = NULL;
	o->off = 0;
	o->len = len + 2;
	o->data[0] = (uint8_t)(len >> 8);
	o->data[1] = (uint8_t)len;
	memcpy(o->data + 2, msg, len);
	if (c->out_tail)
		c->out_tail->next = o;
	else
		c->out_head = o;
	c->out_tail = o;
	c->last_ns = now_ns();
}

static void tcp_accept(struct worker *w, struct ev *ev)
{
	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage peer;
		socklen_t plen = sizeof(peer);
		int fd = accept4(ev->fd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		if (w->nconns >= w->max_conns) {
			close(fd); /* over server.tcp_max_clients: shed load */
			continue;
		}
		size_t slot = 0;
		while (w->conns[slot])
			slot++;
		struct tcp_conn *c = calloc(1, sizeof(*c));
		if (c == NULL) {
			close(fd);
			continue;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->fd = fd;
		c->id = ((uint64_t)++w->conn_gen[slot] << 32) | slot;
		c->ev = (struct ev){ .kind = EV_TCP_CONN, .fd = fd, .ptr = c };
		memcpy(&c->peer, &peer, plen);
		c->peer_len = plen;
		c->last_ns = now_ns();
		w->conns[slot] = c;
		w->nconns++;
		if (ep_add(w, &c->ev, EPOLLIN) != 0)
			conn_close(w, c);
	}
}

static void tcp_read(struct worker *w, struct tcp_conn *c)
{
	for (;;) {
		ssize_t k = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, MSG_DONTWAIT);
		if (k == 0) {
			c->closing = true;
			break;
		}
		if (k < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			conn_close(w, c);
			return;
		}
		c->in_len += (size_t)k;
		c->last_ns = now_ns();
		/* Every complete length-prefixed message in the buffer. */
		size_t off = 0;
		while (c->in_len - off >= 2) {
			size_t mlen = ((size_t)c->in[off] << 8) | c->in[off + 1];
			if (c->in_len - off < 2 + mlen)
				break;
			struct client cl = { .tcp = true, .udp_fd = -1, .conn_id = c->id, .peer = &c->peer,
			                     .peer_len = c->peer_len };
			int len = process_query(w, &cl, c->in + off + 2, mlen, w->tcp_reply, sizeof(w->tcp_reply));
			if (len > 0)
				conn_queue(w, c, w->tcp_reply, (size_t)len);
			else if (len < 0)
				c->pending++;
			off += 2 + mlen;
		}
		memmove(c->in, c->in + off, c->in_len - off);
		c->in_len -= off;
	}
	conn_flush(w, c);
}

static void tcp_sweep_idle(struct worker *w)
{
	uint64_t now = now_ns(), idle = (uint64_t)w->tcp_idle_ms * 1000000ull;
	for (size_t i = 0; i < w->max_conns && w->nconns > 0; i++) {
		struct tcp_conn *c = w->conns[i];
		if (c && c->pending == 0 && now - c->last_ns > idle)
			conn_close(w, c);
	}
}

/* ---- replies from pools ---- */

static void deliver(struct worker *w, struct waiter *wt)
{
	if (redo_as_chain(w, wt))
		return;
	uint8_t *out = w->tcp_reply;
	size_t cap = wt->tcp ? 65535 : wire_udp_limit(&wt->q, MAX_UDP_REPLY);
	const struct ecs *echo = wt->echo ? &wt->echo_ecs : NULL;
	int len;
	struct result *r = wt->result;
	if (r == NULL || r->rcode >= 0) {
		int rcode = r ? r->rcode : WIRE_RCODE_SERVFAIL;
		len = wire_write_error(&wt->q, rcode, echo, out, cap);
		count_rcode(w, rcode);
	} else {
		len = wire_answer_write(&wt->q, NULL, r->blob, r->blob_len, 0, echo, out, cap);
		if (len > 0) {
			count_reply(w, out);
		} else {
			len = wire_write_error(&wt->q, WIRE_RCODE_SERVFAIL, echo, out, cap);
			count_rcode(w, WIRE_RCODE_SERVFAIL);
		}
	}
	reply_to_waiter(w, wt, out, len);
	result_release(r);
	free(wt);
}

static void drain_replies(struct worker *w)
{
	struct mq_node *n = mq_take_all(&w->replies);
	while (n) {
		struct waiter *wt = (struct waiter *)n;
		n = n->next;
		deliver(w, wt);
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct epoll_event events[64];
	uint64_t last_sweep = now_ns();
	while (!server_stopping(w->srv)) {
		int n = epoll_wait(w->epfd, events, 64, 1000);
		refresh_snapshot(w);
		for (int i = 0; i < n; i++) {
			struct ev *ev = events[i].data.ptr;
			switch (ev->kind) {
			case EV_UDP:
				udp_read(w, ev);
				break;
			case EV_TCP_LISTEN:
				tcp_accept(w, ev);
				break;
			case EV_TCP_CONN: {
				struct tcp_conn *c = ev->ptr;
				if (c->dead)
					break;
				if (events[i].events & (EPOLLERR | EPOLLHUP)) {
					/* replies still pending are dropped: conn_by_id fails */
					conn_close(w, c);
					break;
				}
				if (events[i].events & EPOLLIN)
					tcp_read(w, c);
				else if (events[i].events & EPOLLOUT)
					conn_flush(w, c);
				break;
			}
			case EV_REPLIES:
				drain_replies(w);
				break;
			case EV_STOP:
				break;
			}
		}
		uint64_t now = now_ns();
		if (now - last_sweep > 1000000000ull) {
			tcp_sweep_idle(w);
			last_sweep = now;
		}
		free_dead_conns(w);
	}
	return NULL;
}

int worker_start(struct worker *w)
{
	refresh_snapshot(w);
	int rc = pthread_create(&w->thread, NULL, worker_main, w);
	if (rc != 0)
		return -rc;
	w->started = true;
	return 0;
}

void worker_join(struct worker *w)
{
	if (w->started)
		pthread_join(w->thread, NULL);
	w->started = false;
}
