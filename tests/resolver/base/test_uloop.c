/* SPDX-License-Identifier: BSD-3-Clause */
/* The event loop libunbound runs in (uloop.c): libevent's meaning of events, and frees and stale readiness inside a batch. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "resolver/base/clock.h"
#include "resolver/base/uloop.h"

struct rec {
	int calls;
	short last;
	int order[8];
	int norder;
	struct ub_event *other; /* a callback's victim */
	int tag;
	struct rec *log; /* where the firing order is written */
};

static void on_event(int fd, short bits, void *arg)
{
	(void)fd;
	struct rec *r = arg;
	r->calls++;
	r->last = bits;
	if (r->log != NULL && r->log->norder < 8)
		r->log->order[r->log->norder++] = r->tag;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static bool readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return poll(&p, 1, 0) == 1;
}

static void test_timers_in_order(void **state)
{
	(void)state;
	struct uloop *u = uloop_new();
	assert_non_null(u);
	assert_int_equal(uloop_next_ms(u, clock_ns()), -1);
	struct rec log = { 0 };
	struct rec r[3] = { { .tag = 0, .log = &log }, { .tag = 1, .log = &log }, { .tag = 2, .log = &log } };
	struct ub_event *e[3];
	const int ms[3] = { 30, 10, 20 };
	for (int i = 0; i < 3; i++) {
		e[i] = uloop_event_new(u, -1, 0, on_event, &r[i]);
		struct timeval tv = { 0, ms[i] * 1000 };
		assert_int_equal(uloop_event_add(e[i], &tv), 0);
	}
	int next = uloop_next_ms(u, clock_ns());
	assert_true(next > 0 && next <= 10);
	uloop_timers(u, clock_ns());
	assert_int_equal(log.norder, 0); /* nothing due yet */
	sleep_ms(40);
	assert_int_equal(uloop_next_ms(u, clock_ns()), 0);
	uloop_timers(u, clock_ns());
	assert_int_equal(log.norder, 3);
	assert_int_equal(log.order[0], 1);
	assert_int_equal(log.order[1], 2);
	assert_int_equal(log.order[2], 0);
	assert_int_equal(r[0].last, UB_EV_TIMEOUT);
	/* not persistent: each fired once and is gone */
	assert_int_equal(uloop_next_ms(u, clock_ns()), -1);
	sleep_ms(15);
	uloop_timers(u, clock_ns());
	assert_int_equal(log.norder, 3);
	for (int i = 0; i < 3; i++)
		uloop_event_free(e[i]);
	uloop_free(u);
}

static void test_persistent_timer_rearms(void **state)
{
	(void)state;
	struct uloop *u = uloop_new();
	struct rec r = { 0 };
	struct ub_event *e = uloop_event_new(u, -1, UB_EV_PERSIST, on_event, &r);
	struct timeval tv = { 0, 5000 };
	assert_int_equal(uloop_event_add(e, &tv), 0);
	for (int i = 0; i < 3; i++) {
		sleep_ms(8);
		uloop_timers(u, clock_ns());
	}
	assert_int_equal(r.calls, 3);
	assert_true(uloop_next_ms(u, clock_ns()) >= 0); /* still armed */
	uloop_event_del(e);
	assert_int_equal(uloop_next_ms(u, clock_ns()), -1);
	uloop_event_free(e);
	uloop_free(u);
}

static void test_fd_event_nested(void **state)
{
	(void)state;
	struct uloop *u = uloop_new();
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, sv), 0);
	struct rec r = { 0 };
	struct ub_event *e = uloop_event_new(u, sv[0], UB_EV_READ, on_event, &r);
	assert_int_equal(uloop_event_add(e, NULL), 0);
	assert_false(readable(uloop_fd(u)));
	assert_int_equal(write(sv[1], "x", 1), 1);
	/* nested in another epoll, the loop's fd says something is ready */
	assert_true(readable(uloop_fd(u)));
	uloop_poll(u);
	assert_int_equal(r.calls, 1);
	assert_int_equal(r.last, UB_EV_READ);
	/* not persistent: the datagram still waits, but the event is gone */
	uloop_poll(u);
	assert_int_equal(r.calls, 1);
	assert_false(readable(uloop_fd(u)));
	uloop_event_free(e);
	close(sv[0]);
	close(sv[1]);
	uloop_free(u);
}

static void test_persistent_fd_with_timeout(void **state)
{
	(void)state;
	struct uloop *u = uloop_new();
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, sv), 0);
	struct rec r = { 0 };
	struct ub_event *e = uloop_event_new(u, sv[0], UB_EV_READ | UB_EV_PERSIST, on_event, &r);
	struct timeval tv = { 0, 20000 };
	assert_int_equal(uloop_event_add(e, &tv), 0);
	sleep_ms(25);
	uloop_poll(u);
	assert_int_equal(r.calls, 1);
	assert_int_equal(r.last, UB_EV_TIMEOUT);
	/* activity re-arms the timeout: no timeout right after a read */
	assert_int_equal(write(sv[1], "x", 1), 1);
	uloop_poll(u);
	assert_int_equal(r.calls, 2);
	assert_int_equal(r.last, UB_EV_READ);
	char b;
	assert_int_equal(read(sv[0], &b, 1), 1);
	assert_true(uloop_next_ms(u, clock_ns()) > 5);
	uloop_event_free(e);
	close(sv[0]);
	close(sv[1]);
	uloop_free(u);
}

/* frees the other event of the batch (libunbound closing a socket from a callback) */
static void on_free_other(int fd, short bits, void *arg)
{
	on_event(fd, bits, arg);
	struct rec *r = arg;
	if (r->other != NULL) {
		uloop_event_free(r->other);
		r->other = NULL;
	}
}

/* removes the other event and adds it again: its readiness in this batch is stale */
static bool readded;
static void on_readd_other(int fd, short bits, void *arg)
{
	on_event(fd, bits, arg);
	struct rec *r = arg;
	if (readded)
		return;
	readded = true;
	uloop_event_del(r->other);
	uloop_event_add(r->other, NULL);
}

static void test_free_and_readd_in_batch(void **state)
{
	(void)state;
	for (int mode = 0; mode < 2; mode++) {
		struct uloop *u = uloop_new();
		int a[2], b[2];
		assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, a), 0);
		assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, b), 0);
		struct rec ra = { 0 }, rb = { 0 };
		uloop_cb cb = mode == 0 ? on_free_other : on_readd_other;
		readded = false;
		struct ub_event *ea = uloop_event_new(u, a[0], UB_EV_READ | UB_EV_PERSIST, cb, &ra);
		struct ub_event *eb = uloop_event_new(u, b[0], UB_EV_READ | UB_EV_PERSIST, cb, &rb);
		ra.other = eb;
		rb.other = ea;
		assert_int_equal(uloop_event_add(ea, NULL), 0);
		assert_int_equal(uloop_event_add(eb, NULL), 0);
		assert_int_equal(write(a[1], "x", 1), 1);
		assert_int_equal(write(b[1], "x", 1), 1);
		uloop_poll(u); /* one batch with both ready: whichever runs first touches the other */
		assert_int_equal(ra.calls + rb.calls, 1);
		if (mode == 0) {
			struct ub_event *left = ra.calls ? ea : eb;
			uloop_poll(u); /* the survivor is still ready; the freed one is gone */
			assert_int_equal(ra.calls + rb.calls, 2);
			uloop_event_free(left);
		} else {
			uloop_poll(u); /* both still readable: the re-added one runs now */
			assert_int_equal(ra.calls + rb.calls, 3);
			assert_true(ra.calls >= 1 && rb.calls >= 1);
			uloop_event_free(ea);
			uloop_event_free(eb);
		}
		close(a[0]);
		close(a[1]);
		close(b[0]);
		close(b[1]);
		uloop_free(u);
	}
}

static void test_closed_fd_reused(void **state)
{
	(void)state;
	struct uloop *u = uloop_new();
	int a[2], b[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, a), 0);
	struct rec ra = { 0 }, rb = { 0 };
	struct ub_event *ea = uloop_event_new(u, a[0], UB_EV_READ | UB_EV_PERSIST, on_event, &ra);
	assert_int_equal(uloop_event_add(ea, NULL), 0);
	int old = a[0];
	close(a[0]); /* closed while registered: the kernel drops it from the epoll */
	assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, b), 0);
	assert_int_equal(b[0], old); /* the lowest free number again */
	struct ub_event *eb = uloop_event_new(u, b[0], UB_EV_READ | UB_EV_PERSIST, on_event, &rb);
	assert_int_equal(uloop_event_add(eb, NULL), 0);
	/* the stale event's removal must not unregister the new owner of the number */
	uloop_event_free(ea);
	assert_int_equal(write(b[1], "x", 1), 1);
	uloop_poll(u);
	assert_int_equal(rb.calls, 1);
	assert_int_equal(ra.calls, 0);
	uloop_event_free(eb);
	close(a[1]);
	close(b[0]);
	close(b[1]);
	uloop_free(u);
}

/* A freed event's memory serves the next one (libunbound makes and frees two
 * per upstream query), and starts clean: no timer, no fd, no old readiness. */
static void test_freed_event_reused(void **state)
{
	(void)state;
	struct uloop *u = uloop_new();
	int a[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, a), 0);
	struct rec ra = { 0 }, rb = { 0 };
	struct ub_event *ea = uloop_event_new(u, a[0], UB_EV_READ | UB_EV_PERSIST | UB_EV_TIMEOUT, on_event, &ra);
	struct timeval tv = { 0, 10000 };
	assert_int_equal(uloop_event_add(ea, &tv), 0);
	assert_int_equal(write(a[1], "x", 1), 1);
	uloop_event_free(ea);
	struct ub_event *eb = uloop_event_new(u, -1, UB_EV_TIMEOUT, on_event, &rb);
	assert_ptr_equal(eb, ea);
	assert_int_equal(uloop_next_ms(u, clock_ns()), -1); /* the old timer went with it */
	uloop_poll(u);                                      /* a[0] is still readable */
	sleep_ms(15);
	uloop_timers(u, clock_ns());
	assert_int_equal(ra.calls + rb.calls, 0);
	struct timeval soon = { 0, 1000 };
	assert_int_equal(uloop_event_add(eb, &soon), 0);
	sleep_ms(5);
	uloop_timers(u, clock_ns());
	assert_int_equal(rb.calls, 1);
	assert_int_equal(ra.calls, 0);
	uloop_event_free(eb);
	close(a[0]);
	close(a[1]);
	uloop_free(u);
}

/*
 * A host sharing the loop's epoll (a listener, colocated): one epoll_wait
 * returns its own entry and the loop's. The host's work frees the loop's
 * event in the middle of the batch (libunbound closing a socket as a
 * query ends): if the loop's entry comes later it must not fire, and the
 * freed memory must not serve an event made in the same batch.
 */
static void test_host_batch(void **state)
{
	(void)state;
	for (int round = 0; round < 4; round++) {
		struct uloop *u = uloop_new();
		assert_non_null(u);
		int host_ep = fcntl(uloop_fd(u), F_DUPFD_CLOEXEC, 0);
		assert_true(host_ep >= 0);
		int a[2], h[2];
		assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, a), 0);
		assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, h), 0);
		struct rec ra = { 0 };
		struct ub_event *ea = uloop_event_new(u, a[0], UB_EV_READ | UB_EV_PERSIST, on_event, &ra);
		assert_int_equal(uloop_event_add(ea, NULL), 0);
		static long host_tag; /* what the host's entry points at: 8-aligned, untagged */
		struct epoll_event he = { .events = EPOLLIN, .data.ptr = &host_tag };
		assert_int_equal(epoll_ctl(host_ep, EPOLL_CTL_ADD, h[0], &he), 0);
		/* even rounds: the loop's fd ready first, odd: the host's */
		assert_int_equal(write(round % 2 ? h[1] : a[1], "x", 1), 1);
		assert_int_equal(write(round % 2 ? a[1] : h[1], "x", 1), 1);

		struct epoll_event evs[4];
		int n = epoll_wait(host_ep, evs, 4, 1000);
		assert_int_equal(n, 2);
		uloop_batch_begin(u);
		int host_seen = 0, loop_fired_before_free = 0;
		struct ub_event *made = NULL;
		for (int i = 0; i < n; i++) {
			if (uloop_ready(u, &evs[i])) {
				if (made == NULL)
					loop_fired_before_free = ra.calls;
				continue;
			}
			assert_ptr_equal(evs[i].data.ptr, &host_tag);
			host_seen++;
			uloop_event_free(ea);                                   /* the host's work ends the loop's event */
			made = uloop_event_new(u, -1, UB_EV_TIMEOUT, on_event, &ra); /* and starts another */
			assert_non_null(made);
			assert_ptr_not_equal(made, ea); /* not released while the batch may still name it */
		}
		uloop_batch_end(u);
		assert_int_equal(host_seen, 1);
		assert_int_equal(ra.calls, loop_fired_before_free); /* nothing fired after the free */
		assert_true(ra.calls <= 1);
		uloop_event_free(made);
		close(host_ep);
		close(a[0]);
		close(a[1]);
		close(h[0]);
		close(h[1]);
		uloop_free(u);
	}
}

/* What the thread deleting a view's context does: free its events. */
struct view_free {
	struct ub_event *ev[2];
	struct uloop_view *v;
};

static void *view_free_main(void *arg)
{
	struct view_free *vf = arg;
	for (int i = 0; i < 2; i++) {
		assert_int_equal(vf->ev[i]->vmt->del(vf->ev[i]), 0); /* out of the loop already: nothing */
		vf->ev[i]->vmt->free(vf->ev[i]);
	}
	uloop_view_free(vf->v);
	return NULL;
}

/* A view's events are the loop's until it is detached; then the loop never
 * names them again, and another thread frees them while the loop runs. */
static void test_view_detach(void **state)
{
	(void)state;
	struct uloop *u = uloop_new();
	assert_non_null(u);
	struct uloop_view *v = uloop_view_new(u);
	assert_non_null(v);
	struct ub_event_base *b = uloop_view_base(v);
	int p[2];
	assert_int_equal(pipe(p), 0);
	struct rec rf = { 0 }, rt = { 0 }, rgone = { 0 };
	struct ub_event *fe = b->vmt->new_event(b, p[0], UB_EV_READ | UB_EV_PERSIST, on_event, &rf);
	struct ub_event *te = b->vmt->new_event(b, -1, UB_EV_TIMEOUT | UB_EV_PERSIST, on_event, &rt);
	struct ub_event *gone = b->vmt->new_event(b, -1, UB_EV_TIMEOUT, on_event, &rgone);
	assert_non_null(fe);
	assert_non_null(te);
	assert_non_null(gone);
	struct timeval ms = { 0, 1000 };
	assert_int_equal(fe->vmt->add(fe, NULL), 0);
	assert_int_equal(te->vmt->add(te, &ms), 0);
	gone->vmt->free(gone); /* freed while attached: the loop's, as any event */
	assert_int_equal(write(p[1], "x", 1), 1);
	sleep_ms(2);
	uloop_poll(u);
	assert_int_equal(rf.calls, 1); /* they fire in the loop like its own */
	assert_int_equal(rt.calls, 1);

	uloop_view_detach(v);
	assert_int_equal(uloop_next_ms(u, clock_ns()), -1); /* the timer left the heap */
	assert_int_equal(fe->vmt->add(fe, NULL), -1);
	assert_null(b->vmt->new_event(b, -1, UB_EV_TIMEOUT, on_event, &rgone));
	assert_int_equal(write(p[1], "y", 1), 1);
	sleep_ms(2);
	struct view_free vf = { .ev = { fe, te }, .v = v };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, view_free_main, &vf), 0);
	for (int i = 0; i < 50; i++)
		uloop_poll(u); /* the pipe is readable, but no longer the loop's */
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(rf.calls, 1);
	assert_int_equal(rt.calls, 1);
	assert_int_equal(rgone.calls, 0);

	/* the loop goes on with its own events */
	struct rec r = { 0 };
	struct ub_event *own = uloop_event_new(u, p[0], UB_EV_READ, on_event, &r);
	assert_int_equal(uloop_event_add(own, NULL), 0);
	uloop_poll(u);
	assert_int_equal(r.calls, 1);
	uloop_event_free(own);
	close(p[0]);
	close(p[1]);
	uloop_free(u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_timers_in_order),
		cmocka_unit_test(test_persistent_timer_rearms),
		cmocka_unit_test(test_fd_event_nested),
		cmocka_unit_test(test_persistent_fd_with_timeout),
		cmocka_unit_test(test_free_and_readd_in_batch),
		cmocka_unit_test(test_closed_fd_reused),
		cmocka_unit_test(test_freed_event_reused),
		cmocka_unit_test(test_host_batch),
		cmocka_unit_test(test_view_detach),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
