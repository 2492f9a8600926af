/* SPDX-License-Identifier: BSD-3-Clause */
/* The normal pool: one thread feeding an asynchronous libunbound context (full recursion, one common cache). */
#include "resolver/resolve_normal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unbound.h>
#include <unistd.h>

#include "resolver/clock.h"
#include "resolver/inflight.h"
#include "resolver/log.h"
#include "resolver/ubctx.h"

#define NORMAL_MAX_INFLIGHT 100000
/* libunbound keeps trying unresponsive servers for a long time; a client
 * gets SERVFAIL after this instead of silence (its retry asks again). */
#define NORMAL_DEADLINE_NS (4ull * 1000000000ull)

/* A job while libunbound works on it; linked so shutdown can fail it. */
struct pending {
	struct pending *prev, *next;
	struct resolve_normal *pool;
	struct job *job;
	int async_id;
	uint64_t start_ns;
};

struct resolve_normal {
	int stop_fd;
	struct ub_ctx *ctx;
	struct mq jobs;
	pthread_t thread;
	bool started;
	int epfd;
	struct pending head; /* sentinel */
	atomic_uint inflight;
	struct counters ctr;
};

struct counters *resolve_normal_counters(struct resolve_normal *p)
{
	return &p->ctr;
}

unsigned resolve_normal_inflight(struct resolve_normal *p)
{
	return atomic_load_explicit(&p->inflight, memory_order_relaxed);
}

struct resolve_normal *resolve_normal_new(const struct conf *c, int stop_fd)
{
	struct resolve_normal *p = calloc(1, sizeof(*p));
	if (p == NULL)
		return NULL;
	p->stop_fd = stop_fd;
	p->head.next = p->head.prev = &p->head;
	p->epfd = -1;
	p->jobs.efd = -1;
	p->ctx = ubctx_new(c);
	if (p->ctx == NULL || mq_init(&p->jobs) != 0)
		goto fail;
	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (p->epfd < 0)
		goto fail;
	struct epoll_event e = { .events = EPOLLIN, .data.u32 = 0 };
	if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->jobs.efd, &e) != 0)
		goto fail;
	e.data.u32 = 1;
	if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, ub_fd(p->ctx), &e) != 0)
		goto fail;
	e.data.u32 = 2;
	if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, stop_fd, &e) != 0)
		goto fail;
	return p;
fail:
	log_err("cannot set up the normal resolution pool");
	resolve_normal_free(p);
	return NULL;
}

int resolve_normal_submit(struct resolve_normal *p, struct job *job)
{
	if (atomic_fetch_add(&p->inflight, 1) >= NORMAL_MAX_INFLIGHT) {
		atomic_fetch_sub(&p->inflight, 1);
		return -EBUSY;
	}
	mq_push(&p->jobs, &job->node);
	return 0;
}

static void pending_unlink(struct pending *pd)
{
	pd->prev->next = pd->next;
	pd->next->prev = pd->prev;
}

static void resolved(void *arg, int err, struct ub_result *res)
{
	struct pending *pd = arg;
	struct resolve_normal *p = pd->pool;
	struct job *job = pd->job;
	pending_unlink(pd);
	free(pd);
	atomic_fetch_sub(&p->inflight, 1);
	/* libunbound says why only for DNSSEC: other failures are just failures */
	static const struct wire_ede failed = { WIRE_EDE_OTHER, "resolution failed" };
	static const struct wire_ede bogus = { WIRE_EDE_DNSSEC_BOGUS, "DNSSEC validation failed" };
	if (err != 0 || res == NULL || res->answer_packet == NULL || res->answer_len < 12 ||
	    res->rcode == WIRE_RCODE_SERVFAIL) {
		if (err != 0)
			log_debug("libunbound: %s", ub_strerror(err));
		counter_inc(&p->ctr.upstream_errors);
		inflight_fail(job, WIRE_RCODE_SERVFAIL, &failed, err == 0);
	} else if (res->bogus && !job->cd_bit) {
		char name[1024] = "?";
		wire_name_to_text(job->qname, job->qname_len, name, sizeof(name));
		log_info("DNSSEC validation of %s failed: %s", name, res->why_bogus ? res->why_bogus : "bogus");
		inflight_fail(job, WIRE_RCODE_SERVFAIL, &bogus, true);
	} else {
		uint8_t *pkt = res->answer_packet;
		if (res->secure)
			pkt[3] |= 0x20; /* AD: libunbound says validated */
		else
			pkt[3] &= (uint8_t)~0x20;
		inflight_done(job, pkt, (size_t)res->answer_len);
	}
	if (res)
		ub_resolve_free(res);
}

static void start_job(struct resolve_normal *p, struct job *job)
{
	char name[1024];
	if (wire_name_to_text(job->qname, job->qname_len, name, sizeof(name)) < 0) {
		atomic_fetch_sub(&p->inflight, 1);
		inflight_fail(job, WIRE_RCODE_SERVFAIL, NULL, false);
		return;
	}
	struct pending *pd = calloc(1, sizeof(*pd));
	if (pd == NULL) {
		atomic_fetch_sub(&p->inflight, 1);
		inflight_fail(job, WIRE_RCODE_SERVFAIL, NULL, false);
		return;
	}
	pd->pool = p;
	pd->job = job;
	pd->start_ns = clock_ns();
	pd->next = p->head.next;
	pd->prev = &p->head;
	p->head.next->prev = pd;
	p->head.next = pd;
	counter_inc(&p->ctr.ub_lookups);
	int rc = ub_resolve_async(p->ctx, name, job->qtype, job->qclass, pd, resolved, &pd->async_id);
	if (rc != 0) {
		log_warn("libunbound cannot take %s: %s", name, ub_strerror(rc));
		pending_unlink(pd);
		free(pd);
		atomic_fetch_sub(&p->inflight, 1);
		inflight_fail(job, WIRE_RCODE_SERVFAIL, NULL, false);
	}
}

/* Fail what has waited past the deadline; the oldest are at the tail. */
static void expire(struct resolve_normal *p)
{
	uint64_t now = clock_ns();
	while (p->head.prev != &p->head) {
		struct pending *pd = p->head.prev;
		if (now - pd->start_ns < NORMAL_DEADLINE_NS)
			break;
		ub_cancel(p->ctx, pd->async_id);
		pending_unlink(pd);
		atomic_fetch_sub(&p->inflight, 1);
		static const struct wire_ede slow = { WIRE_EDE_NO_REACHABLE_AUTHORITY, "resolution timed out" };
		counter_inc(&p->ctr.upstream_timeouts);
		inflight_fail(pd->job, WIRE_RCODE_SERVFAIL, &slow, true);
		free(pd);
	}
}

static void *pool_main(void *arg)
{
	struct resolve_normal *p = arg;
	struct epoll_event ev[8];
	bool stop = false;
	while (!stop) {
		int n = epoll_wait(p->epfd, ev, 8, p->head.next != &p->head ? 100 : 1000);
		expire(p);
		for (int i = 0; i < n; i++) {
			if (ev[i].data.u32 == 2) {
				stop = true;
			} else if (ev[i].data.u32 == 0) {
				struct mq_node *m = mq_take_all(&p->jobs);
				while (m) {
					struct job *job = (struct job *)m;
					m = m->next;
					start_job(p, job);
				}
			} else if (ev[i].data.u32 == 1) {
				int rc = ub_process(p->ctx);
				if (rc != 0)
					log_warn("libunbound: %s", ub_strerror(rc));
			}
		}
	}
	return NULL;
}

int resolve_normal_start(struct resolve_normal *p)
{
	int rc = pthread_create(&p->thread, NULL, pool_main, p);
	if (rc != 0)
		return -rc;
	p->started = true;
	return 0;
}

void resolve_normal_join(struct resolve_normal *p)
{
	if (p && p->started) {
		pthread_join(p->thread, NULL);
		p->started = false;
	}
}

void resolve_normal_free(struct resolve_normal *p)
{
	if (p == NULL)
		return;
	resolve_normal_join(p);
	/* Deleting the context cancels libunbound's work; no callbacks after it. */
	if (p->ctx)
		ub_ctx_delete(p->ctx);
	while (p->head.next != &p->head) {
		struct pending *pd = p->head.next;
		pending_unlink(pd);
		inflight_fail(pd->job, WIRE_RCODE_SERVFAIL, NULL, false);
		free(pd);
	}
	if (p->jobs.efd >= 0) {
		struct mq_node *m = mq_take_all(&p->jobs);
		while (m) {
			struct job *job = (struct job *)m;
			m = m->next;
			inflight_fail(job, WIRE_RCODE_SERVFAIL, NULL, false);
		}
		mq_deinit(&p->jobs);
	}
	if (p->epfd >= 0)
		close(p->epfd);
	free(p);
}
