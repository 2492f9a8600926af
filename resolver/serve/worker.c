/* SPDX-License-Identifier: BSD-3-Clause */
/* Listener threads: one epoll loop over UDP, TCP, the reply queue, the stop event and (colocated) the normal pool. */
#include "resolver/serve/worker.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "partition/partition.h"
#include "resolver/base/clock.h"
#include "resolver/base/log.h"
#include "resolver/base/net.h"
#include "resolver/serve/net_tcp.h"
#include "resolver/serve/net_udp.h"
#include "resolver/serve/query.h"
#include "resolver/pool/topk.h"
#include "resolver/base/uloop.h"

struct worker {
	struct worker_env env;
	unsigned idx;
	pthread_t thread;
	bool started;
	int epfd;
	struct mq replies;
	struct net_ev replies_ev, stop_ev;
	struct uloop *loop;        /* colocated: the normal pool's thread this listener drives; else NULL */
	size_t nlisten;
	struct net_ev *udp;        /* per listen address */
	struct net_ev *tcp;
	size_t nlisten_tls, nlisten_https;
	struct net_ev *tls;        /* per server.listen_tls address */
	struct net_ev *https;      /* per server.listen_https address */
	struct net_tcp *conns;
	struct net_tcp *tls_conns; /* DoT; NULL without listen_tls */
	struct net_tcp *https_conns; /* DoH; NULL without listen_https */
	struct query_ctx qx;
	uint64_t snap_gen;
	struct counters ctr;
	struct partition_counters *pctr; /* PARTITION_MAX + 1 */
	struct histogram resp_time;
	uint8_t reply[65535];
};

struct counters *worker_counters(struct worker *w)
{
	return &w->ctr;
}

struct partition_counters *worker_partition_counters(struct worker *w)
{
	return w->pctr;
}

struct topk *worker_unmatched(struct worker *w)
{
	return w->qx.unmatched;
}

struct histogram *worker_response_time(struct worker *w)
{
	return &w->resp_time;
}

static int ep_add(struct worker *w, struct net_ev *ev, uint32_t events)
{
	struct epoll_event e = { .events = events, .data.ptr = ev };
	return epoll_ctl(w->epfd, EPOLL_CTL_ADD, ev->fd, &e);
}

/* Hand a new job to its pool (colocated: a normal one starts here); a full pool fails it at once. */
static void dispatch(void *arg, struct job *job)
{
	struct worker *w = arg;
	int rc = job->edns ? resolve_edns_submit(w->env.edns, job)
	         : w->loop ? resolve_normal_run_here(w->env.normal, w->idx, job)
	                   : resolve_normal_submit(w->env.normal, job);
	if (rc != 0) {
		static const struct wire_ede busy = { WIRE_EDE_OTHER, "resolver overloaded" };
		counter_inc(&w->ctr.overload);
		inflight_fail(job, WIRE_RCODE_SERVFAIL, &busy, false);
	}
}

struct worker *worker_new(const struct worker_env *env, unsigned idx, const struct conf *c)
{
	struct worker *w = calloc(1, sizeof(*w));
	if (w == NULL)
		return NULL;
	w->env = *env;
	w->idx = idx;
	w->epfd = -1;
	w->replies.efd = -1;
	w->nlisten = c->server.nlisten;
	w->udp = calloc(w->nlisten ? w->nlisten : 1, sizeof(struct net_ev));
	w->tcp = calloc(w->nlisten ? w->nlisten : 1, sizeof(struct net_ev));
	w->nlisten_tls = c->server.nlisten_tls;
	w->tls = calloc(w->nlisten_tls ? w->nlisten_tls : 1, sizeof(struct net_ev));
	w->nlisten_https = c->server.nlisten_https;
	w->https = calloc(w->nlisten_https ? w->nlisten_https : 1, sizeof(struct net_ev));
	w->pctr = calloc(PARTITION_MAX + 1, sizeof(*w->pctr));
	if (!w->udp || !w->tcp || !w->tls || !w->https || !w->pctr)
		goto fail;
	for (size_t i = 0; i < w->nlisten_https; i++)
		w->https[i].fd = -1;
	for (size_t i = 0; i < w->nlisten; i++)
		w->udp[i].fd = w->tcp[i].fd = -1;
	for (size_t i = 0; i < w->nlisten_tls; i++)
		w->tls[i].fd = -1;
	if (mq_init(&w->replies) != 0)
		goto fail;
	/* colocated: one epoll for the listener's sockets and libunbound's (uloop.h); a dup, so
	 * the listener owns its fd while the pool owns the loop's */
	w->loop = resolve_normal_loop(env->normal, idx);
	w->epfd = w->loop ? fcntl(uloop_fd(w->loop), F_DUPFD_CLOEXEC, 0) : epoll_create1(EPOLL_CLOEXEC);
	if (w->epfd < 0)
		goto fail;
	w->conns = net_tcp_new(w->epfd, c, &w->ctr, NULL, false);
	if (w->conns == NULL)
		goto fail;
	if (w->nlisten_tls > 0 && (w->tls_conns = net_tcp_new(w->epfd, c, &w->ctr, env->tls, false)) == NULL)
		goto fail;
	if (w->nlisten_https > 0 &&
	    (w->https_conns = net_tcp_new(w->epfd, c, &w->ctr, env->tls_https, true)) == NULL)
		goto fail;
	w->replies_ev = (struct net_ev){ .kind = NET_EV_REPLIES, .fd = w->replies.efd };
	w->stop_ev = (struct net_ev){ .kind = NET_EV_STOP, .fd = env->stop_fd };
	if (ep_add(w, &w->replies_ev, EPOLLIN) != 0 || ep_add(w, &w->stop_ev, EPOLLIN) != 0)
		goto fail;
	for (size_t i = 0; i < w->nlisten; i++) {
		const struct conf_addr *a = &c->server.listen[i];
		int fd = net_bind(a, SOCK_DGRAM);
		if (fd < 0) {
			log_err("cannot listen on %s (UDP): %s", a->text, strerror(-fd));
			goto fail;
		}
		w->udp[i] = (struct net_ev){ .kind = NET_EV_UDP, .fd = fd, .wildcard = net_is_wildcard(a) };
		fd = net_bind(a, SOCK_STREAM);
		if (fd < 0) {
			log_err("cannot listen on %s (TCP): %s", a->text, strerror(-fd));
			goto fail;
		}
		w->tcp[i] = (struct net_ev){ .kind = NET_EV_TCP_LISTEN, .fd = fd };
		if (ep_add(w, &w->udp[i], EPOLLIN) != 0 || ep_add(w, &w->tcp[i], EPOLLIN) != 0)
			goto fail;
	}
	for (size_t i = 0; i < w->nlisten_tls; i++) {
		const struct conf_addr *a = &c->server.listen_tls[i];
		int fd = net_bind(a, SOCK_STREAM);
		if (fd < 0) {
			log_err("cannot listen on %s (DoT): %s", a->text, strerror(-fd));
			goto fail;
		}
		w->tls[i] = (struct net_ev){ .kind = NET_EV_TLS_LISTEN, .fd = fd };
		if (ep_add(w, &w->tls[i], EPOLLIN) != 0)
			goto fail;
	}
	for (size_t i = 0; i < w->nlisten_https; i++) {
		const struct conf_addr *a = &c->server.listen_https[i];
		int fd = net_bind(a, SOCK_STREAM);
		if (fd < 0) {
			log_err("cannot listen on %s (DoH): %s", a->text, strerror(-fd));
			goto fail;
		}
		w->https[i] = (struct net_ev){ .kind = NET_EV_HTTPS_LISTEN, .fd = fd };
		if (ep_add(w, &w->https[i], EPOLLIN) != 0)
			goto fail;
	}
	w->qx = (struct query_ctx){ .cache = env->cache, .hints = env->hints, .inflight = env->inflight, .replies = &w->replies,
	                            .dispatch = dispatch, .dispatch_arg = w, .ctr = &w->ctr, .pctr = w->pctr,
	                            .resp_time = &w->resp_time, .xfr = env->rpz_xfr, .tls = env->tls };
	w->qx.rl = ratelimit_new(c->server.client_qps, c->server.client_prefix4, c->server.client_prefix6);
	w->qx.unmatched = topk_new();
	if (w->qx.rl == NULL || w->qx.unmatched == NULL)
		goto fail;
	w->qx.tap = dnstap_queue(env->dnstap, idx, &w->ctr.dnstap_dropped);
	return w;
fail:
	worker_free(w);
	return NULL;
}

void worker_free(struct worker *w)
{
	if (w == NULL)
		return;
	net_tcp_free(w->conns);
	net_tcp_free(w->tls_conns);
	net_tcp_free(w->https_conns);
	/* replies that arrived after the loop ended */
	if (w->replies.efd >= 0) {
		struct mq_node *n = mq_take_all(&w->replies);
		while (n) {
			struct waiter *wt = (struct waiter *)n;
			n = n->next;
			inflight_waiter_free(w->env.inflight, wt);
		}
		mq_deinit(&w->replies);
	}
	for (size_t i = 0; i < w->nlisten; i++) {
		if (w->udp && w->udp[i].fd >= 0)
			close(w->udp[i].fd);
		if (w->tcp && w->tcp[i].fd >= 0)
			close(w->tcp[i].fd);
	}
	for (size_t i = 0; w->tls && i < w->nlisten_tls; i++)
		if (w->tls[i].fd >= 0)
			close(w->tls[i].fd);
	for (size_t i = 0; w->https && i < w->nlisten_https; i++)
		if (w->https[i].fd >= 0)
			close(w->https[i].fd);
	if (w->epfd >= 0)
		close(w->epfd);
	snapshot_release(w->qx.snap);
	ratelimit_free(w->qx.rl);
	topk_free(w->qx.unmatched);
	free(w->udp);
	free(w->tcp);
	free(w->tls);
	free(w->https);
	free(w->pctr);
	free(w);
}

/* Take the daemon's current snapshot when it changed. */
static void refresh_snapshot(struct worker *w)
{
	uint64_t g = snapshot_generation(w->env.snapshots);
	if (w->qx.snap != NULL && g == w->snap_gen)
		return;
	struct snapshot *s = snapshot_get(w->env.snapshots);
	snapshot_release(w->qx.snap);
	w->qx.snap = s;
	w->snap_gen = s->generation;
}

/* Answer the waiters whose jobs ended (own: queued by this thread, no eventfd to read). */
static void drain_replies(struct worker *w, bool own)
{
	struct mq_node *n = own ? mq_take_own(&w->replies) : mq_take_all(&w->replies);
	while (n) {
		struct waiter *wt = (struct waiter *)n;
		n = n->next;
		int len = query_answer(&w->qx, wt, w->reply, sizeof(w->reply));
		/* len < 0: a new waiter took over; a TCP connection's pending count stays */
		if (len >= 0) {
			if (wt->tcp)
				net_tcp_reply(wt->https ? w->https_conns : wt->tls ? w->tls_conns : w->conns, wt->conn_id,
				              wt->stream, w->reply, len);
			else if (len > 0 && wt->via_len != 0) /* through the balancer that sent it */
				net_udp_send(wt->udp_fd, &wt->via, wt->via_len, wt->has_local ? &wt->local : NULL, w->reply,
				             (size_t)len);
			else if (len > 0)
				net_udp_send(wt->udp_fd, &wt->peer, wt->peer_len, wt->has_local ? &wt->local : NULL, w->reply,
				             (size_t)len);
		}
		inflight_waiter_free(w->env.inflight, wt);
	}
}

/* Events per epoll_wait. Colocated, each miss in flight has its own upstream socket in this
 * epoll (libunbound's port randomisation), so at saturation hundreds can be ready at once. */
#define WORKER_BATCH 256

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	mq_set_own(&w->replies);
	struct epoll_event events[WORKER_BATCH];
	uint64_t now = clock_ns(), last_sweep = now;
	bool stop = false;
	while (!stop) {
		int timeout = 1000;
		if (w->loop != NULL) {
			int next = uloop_next_ms(w->loop, now); /* the normal pool's timers: libunbound's, the tick */
			if (next >= 0 && next < timeout)
				timeout = next;
		}
		int n = epoll_wait(w->epfd, events, WORKER_BATCH, timeout);
		if (w->loop != NULL)
			uloop_batch_begin(w->loop);
		refresh_snapshot(w);
		for (int i = 0; i < n; i++) {
			if (w->loop != NULL && uloop_ready(w->loop, &events[i]))
				continue; /* libunbound's: an upstream answer, a socket ready to write */
			struct net_ev *ev = events[i].data.ptr;
			switch (ev->kind) {
			case NET_EV_UDP: net_udp_read(&w->qx, ev->fd, ev->wildcard); break;
			case NET_EV_TCP_LISTEN: net_tcp_accept(w->conns, ev->fd, &w->qx); break;
			case NET_EV_TCP_CONN: net_tcp_event(w->conns, ev, events[i].events, &w->qx); break;
			case NET_EV_TLS_LISTEN: net_tcp_accept(w->tls_conns, ev->fd, &w->qx); break;
			case NET_EV_TLS_CONN: net_tcp_event(w->tls_conns, ev, events[i].events, &w->qx); break;
			case NET_EV_HTTPS_LISTEN: net_tcp_accept(w->https_conns, ev->fd, &w->qx); break;
			case NET_EV_HTTPS_CONN: net_tcp_event(w->https_conns, ev, events[i].events, &w->qx); break;
			case NET_EV_REPLIES: drain_replies(w, false); break;
			case NET_EV_STOP: stop = true; break;
			}
		}

		now = clock_ns();
		if (w->loop != NULL) {
			uloop_timers(w->loop, now);
			uloop_batch_end(w->loop);
		}
		while (w->replies.own_pending) /* misses this thread resolved (or failed) itself; a reply may start another */
			drain_replies(w, true);
		if (now - last_sweep > 1000000000ull) {
			net_tcp_sweep(w->conns);
			if (w->tls_conns)
				net_tcp_sweep(w->tls_conns);
			if (w->https_conns)
				net_tcp_sweep(w->https_conns);
			inflight_trim(w->env.inflight);
			last_sweep = now;
		}
		net_tcp_end_batch(w->conns);
		if (w->tls_conns)
			net_tcp_end_batch(w->tls_conns);
		if (w->https_conns)
			net_tcp_end_batch(w->https_conns);
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
