/* SPDX-License-Identifier: BSD-3-Clause */
/* libunbound's event interface over one epoll fd and a timer heap (uloop.h says why). */
#include "resolver/base/uloop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "resolver/base/clock.h"
#include "util/vec.h"

#define ULOOP_NO_TIMER SIZE_MAX
#define ULOOP_BATCH 64
/* the low bit of an epoll entry's data: one of the loop's events (a struct uev, so at least 8-aligned) */
#define ULOOP_TAG 1u

struct uev {
	struct ub_event ub; /* first: libunbound holds a struct ub_event * */
	struct uloop *u;
	int fd;
	short bits; /* UB_EV_READ | UB_EV_WRITE | UB_EV_PERSIST | UB_EV_TIMEOUT */
	uloop_cb cb;
	void *arg;
	bool pending;
	bool in_epoll;
	bool dead;            /* freed inside a dispatch: released after it */
	uint64_t seq;         /* the loop's count when it was last made pending */
	uint64_t interval_ns; /* its timeout, 0 = none */
	uint64_t due_ns;
	size_t hidx;          /* its place in the timer heap */
	struct uev *next_dead;
	struct uloop_view *view; /* made through a view (uloop.h): linked in its list */
	struct uev *vprev, *vnext;
	bool detached;        /* its view was detached: only memory now, no part of the loop */
};

struct uloop_view {
	struct ub_event_base base; /* first: libunbound holds a struct ub_event_base * */
	struct uloop *u;
	struct uev *events; /* made through it and not freed yet */
	bool detached;
};

struct uloop {
	struct ub_event_base base; /* first: libunbound holds a struct ub_event_base * */
	int epfd;
	struct uev **heap; /* timers, earliest first */
	size_t nheap, heap_cap;
	struct uev **fds; /* fd -> the event registered for it */
	size_t nfds;
	uint64_t seq;
	uint64_t batch_seq; /* the count when the running batch's epoll_wait returned */
	uint64_t batch_now;
	unsigned depth; /* inside a dispatch: frees are deferred */
	struct uev *dead;
	struct uev *spare; /* freed events kept for the next ones (linked by next_dead) */
	unsigned nspare;
	bool stop;
};

/* Events kept for reuse: libunbound makes two (a socket's, a timer) and
 * frees them for every upstream query, and a calloc and free cost a miss
 * about 0.8k instructions. A flood's worth goes back to malloc. */
#define ULOOP_SPARE_MAX 64

/* ---- the timer heap ---- */

static void heap_set(struct uloop *u, size_t i, struct uev *e)
{
	u->heap[i] = e;
	e->hidx = i;
}

static void heap_up(struct uloop *u, size_t i)
{
	struct uev *e = u->heap[i];
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (u->heap[p]->due_ns <= e->due_ns)
			break;
		heap_set(u, i, u->heap[p]);
		i = p;
	}
	heap_set(u, i, e);
}

static void heap_down(struct uloop *u, size_t i)
{
	struct uev *e = u->heap[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= u->nheap)
			break;
		if (c + 1 < u->nheap && u->heap[c + 1]->due_ns < u->heap[c]->due_ns)
			c++;
		if (e->due_ns <= u->heap[c]->due_ns)
			break;
		heap_set(u, i, u->heap[c]);
		i = c;
	}
	heap_set(u, i, e);
}

/* The element at i changed its due time: move it up or down to its place. */
static void heap_fix(struct uloop *u, size_t i)
{
	if (i > 0 && u->heap[(i - 1) / 2]->due_ns > u->heap[i]->due_ns)
		heap_up(u, i);
	else
		heap_down(u, i);
}

static int heap_push(struct uloop *u, struct uev *e)
{
	if (vec_grow(&u->heap, &u->heap_cap, u->nheap + 1, sizeof(*u->heap), SIZE_MAX) != 0)
		return -1;
	heap_set(u, u->nheap++, e);
	heap_up(u, e->hidx);
	return 0;
}

/* A flood of misses leaves a timer per query in flight; give the room back once it is over. */
static void heap_shrink(struct uloop *u)
{
	if (u->heap_cap <= 1024 || u->nheap > u->heap_cap / 4)
		return;
	struct uev **h = realloc(u->heap, u->heap_cap / 2 * sizeof(*h));
	if (h == NULL)
		return;
	u->heap = h;
	u->heap_cap /= 2;
}

static void heap_remove(struct uloop *u, struct uev *e)
{
	size_t i = e->hidx;
	e->hidx = ULOOP_NO_TIMER;
	struct uev *last = u->heap[--u->nheap];
	if (i != u->nheap) {
		heap_set(u, i, last);
		heap_fix(u, i);
	}
	heap_shrink(u);
}

/* ---- events ---- */

static struct ub_event_vmt uloop_event_vmt;

static void ev_del(struct uev *e)
{
	struct uloop *u = e->u;
	if (e->in_epoll) {
		/* only the fd's current owner unregisters it: a closed fd's number
		 * may already belong to another event */
		if ((size_t)e->fd < u->nfds && u->fds[e->fd] == e) {
			(void)epoll_ctl(u->epfd, EPOLL_CTL_DEL, e->fd, NULL); /* EBADF after a close: gone already */
			u->fds[e->fd] = NULL;
		}
		e->in_epoll = false;
	}
	if (e->hidx != ULOOP_NO_TIMER)
		heap_remove(u, e);
	e->pending = false;
}

static int fds_grow(struct uloop *u, int fd)
{
	size_t old = u->nfds;
	if (vec_grow(&u->fds, &u->nfds, (size_t)fd + 1, sizeof(*u->fds), SIZE_MAX) != 0)
		return -1;
	memset(u->fds + old, 0, (u->nfds - old) * sizeof(*u->fds)); /* no owners yet */
	return 0;
}

struct ub_event *uloop_event_new(struct uloop *u, int fd, short bits, uloop_cb cb, void *arg)
{
	struct uev *e = u->spare;
	if (e != NULL) {
		u->spare = e->next_dead;
		u->nspare--;
		memset(e, 0, sizeof(*e));
	} else {
		e = calloc(1, sizeof(*e));
		if (e == NULL)
			return NULL;
	}
	e->ub.magic = UB_EVENT_MAGIC;
	e->ub.vmt = &uloop_event_vmt;
	e->u = u;
	e->fd = fd;
	e->bits = bits;
	e->cb = cb;
	e->arg = arg;
	e->hidx = ULOOP_NO_TIMER;
	return &e->ub;
}

int uloop_event_add(struct ub_event *ev, const struct timeval *tv)
{
	struct uev *e = (struct uev *)ev;
	struct uloop *u = e->u;
	if (e->dead || e->detached)
		return -1;
	if (e->pending)
		ev_del(e);
	uint32_t want = (e->bits & UB_EV_READ ? EPOLLIN : 0u) | (e->bits & UB_EV_WRITE ? EPOLLOUT : 0u);
	if (want != 0 && e->fd >= 0) {
		if (fds_grow(u, e->fd) != 0)
			return -1;
		/* tagged: a host sharing the epoll tells the loop's events from its own (uloop_ready) */
		struct epoll_event pe = { .events = want, .data.u64 = (uint64_t)(uintptr_t)e | ULOOP_TAG };
		if (epoll_ctl(u->epfd, EPOLL_CTL_ADD, e->fd, &pe) != 0 &&
		    (errno != EEXIST || epoll_ctl(u->epfd, EPOLL_CTL_MOD, e->fd, &pe) != 0))
			return -1;
		struct uev *old = u->fds[e->fd];
		if (old != NULL && old != e)
			old->in_epoll = false; /* taken over */
		u->fds[e->fd] = e;
		e->in_epoll = true;
	}
	e->interval_ns = 0;
	if (tv != NULL) {
		e->interval_ns = (uint64_t)tv->tv_sec * 1000000000ull + (uint64_t)tv->tv_usec * 1000ull;
		if (e->interval_ns == 0)
			e->interval_ns = 1; /* due at once, yet after now: a timer loop always ends */
		e->due_ns = clock_ns() + e->interval_ns;
		if (heap_push(u, e) != 0) {
			ev_del(e);
			return -1;
		}
	}
	e->pending = true;
	e->seq = ++u->seq;
	return 0;
}

int uloop_event_del(struct ub_event *ev)
{
	struct uev *e = (struct uev *)ev;
	if (!e->detached) /* detached: out of the loop already */
		ev_del(e);
	return 0;
}

/* An event no batch can name any more: kept for reuse, or freed. */
static void release(struct uloop *u, struct uev *e)
{
	if (u->nspare >= ULOOP_SPARE_MAX) {
		free(e);
		return;
	}
	e->next_dead = u->spare;
	u->spare = e;
	u->nspare++;
}

static void view_unlink(struct uev *e)
{
	struct uloop_view *v = e->view;
	if (v == NULL)
		return;
	if (e->vprev != NULL)
		e->vprev->vnext = e->vnext;
	else
		v->events = e->vnext;
	if (e->vnext != NULL)
		e->vnext->vprev = e->vprev;
	e->view = NULL;
	e->vprev = e->vnext = NULL;
}

void uloop_event_free(struct ub_event *ev)
{
	struct uev *e = (struct uev *)ev;
	if (e == NULL || e->dead)
		return;
	if (e->detached) {
		/* on whatever thread deletes the view's context: the loop knows it no more */
		view_unlink(e);
		free(e);
		return;
	}
	view_unlink(e);
	ev_del(e);
	if (e->u->depth == 0) {
		release(e->u, e);
		return;
	}
	/* an epoll batch being run may still name it */
	e->dead = true;
	e->next_dead = e->u->dead;
	e->u->dead = e;
}

/* Run one event: a non-persistent one stops being pending first (the
 * callback may add it again); a persistent one's timeout starts over, in
 * place in the heap. */
static void fire(struct uloop *u, struct uev *e, short what, uint64_t now)
{
	if (!(e->bits & UB_EV_PERSIST)) {
		ev_del(e);
	} else if (e->hidx != ULOOP_NO_TIMER) {
		e->due_ns = now + e->interval_ns;
		heap_fix(u, e->hidx);
	}
	e->cb(e->fd, what, e->arg);
}

static void reap(struct uloop *u)
{
	if (u->depth != 0)
		return;
	while (u->dead) {
		struct uev *e = u->dead;
		u->dead = e->next_dead;
		release(u, e);
	}
}

void uloop_batch_begin(struct uloop *u)
{
	u->batch_seq = u->seq;
	u->batch_now = clock_ns();
	u->depth++;
}

bool uloop_ready(struct uloop *u, const struct epoll_event *ev)
{
	if (!(ev->data.u64 & ULOOP_TAG))
		return false;
	struct uev *e = (struct uev *)(uintptr_t)(ev->data.u64 & ~(uint64_t)ULOOP_TAG);
	/* freed, removed or added again since epoll_wait: the readiness is stale */
	if (e->dead || !e->pending || !e->in_epoll || e->seq > u->batch_seq)
		return true;
	uint32_t r = ev->events;
	short what = (short)((r & (EPOLLIN | EPOLLERR | EPOLLHUP) ? UB_EV_READ : 0) |
	                     (r & (EPOLLOUT | EPOLLERR | EPOLLHUP) ? UB_EV_WRITE : 0));
	what &= e->bits & (UB_EV_READ | UB_EV_WRITE);
	if (what != 0)
		fire(u, e, what, u->batch_now);
	return true;
}

void uloop_batch_end(struct uloop *u)
{
	u->depth--;
	reap(u);
}

static void dispatch(struct uloop *u, const struct epoll_event *evs, int n)
{
	if (n <= 0)
		return;
	uloop_batch_begin(u);
	for (int i = 0; i < n; i++)
		(void)uloop_ready(u, &evs[i]); /* every entry in the loop's own epoll is its own */
	uloop_batch_end(u);
}

void uloop_timers(struct uloop *u, uint64_t now)
{
	if (u->nheap == 0)
		return;
	uint64_t seq = u->seq;
	u->depth++;
	while (u->nheap > 0) {
		struct uev *e = u->heap[0];
		/* one added by a callback of this run waits for the next */
		if (e->due_ns > now || e->seq > seq)
			break;
		fire(u, e, UB_EV_TIMEOUT, now);
	}
	u->depth--;
	reap(u);
}

void uloop_poll(struct uloop *u)
{
	struct epoll_event evs[ULOOP_BATCH];
	int n = epoll_wait(u->epfd, evs, ULOOP_BATCH, 0);
	dispatch(u, evs, n);
	uloop_timers(u, clock_ns());
}

int uloop_next_ms(const struct uloop *u, uint64_t now)
{
	if (u->nheap == 0)
		return -1;
	uint64_t due = u->heap[0]->due_ns;
	if (due <= now)
		return 0;
	uint64_t ms = (due - now + 999999) / 1000000;
	return ms > 1000000 ? 1000000 : (int)ms;
}

void uloop_run(struct uloop *u)
{
	struct epoll_event evs[ULOOP_BATCH];
	u->stop = false;
	while (!u->stop) {
		int n = epoll_wait(u->epfd, evs, ULOOP_BATCH, uloop_next_ms(u, clock_ns()));
		dispatch(u, evs, n);
		uloop_timers(u, clock_ns());
	}
}

void uloop_break(struct uloop *u)
{
	u->stop = true;
}

/* ---- libunbound's tables ---- */

static void ub_add_bits(struct ub_event *ev, short bits)
{
	((struct uev *)ev)->bits |= bits;
}

static void ub_del_bits(struct ub_event *ev, short bits)
{
	((struct uev *)ev)->bits &= (short)~bits;
}

static void ub_set_fd(struct ub_event *ev, int fd)
{
	((struct uev *)ev)->fd = fd;
}

static int ub_add(struct ub_event *ev, struct timeval *tv)
{
	return uloop_event_add(ev, tv);
}

static int ub_add_timer(struct ub_event *ev, struct ub_event_base *base, void (*cb)(int, short, void *), void *arg,
                        struct timeval *tv)
{
	(void)base; /* the one it was made in */
	struct uev *e = (struct uev *)ev;
	if (e->detached)
		return -1;
	ev_del(e);
	e->fd = -1;
	e->bits = UB_EV_TIMEOUT;
	e->cb = cb;
	e->arg = arg;
	return uloop_event_add(ev, tv);
}

/* libunbound's contexts install no signal handlers; the daemon's main thread owns signals */
static int ub_signal(struct ub_event *ev, struct timeval *tv)
{
	(void)ev;
	(void)tv;
	return -1;
}

static int ub_del_signal(struct ub_event *ev)
{
	(void)ev;
	return -1;
}

static void ub_winsock_unregister(struct ub_event *ev)
{
	(void)ev;
}

static void ub_winsock_wouldblock(struct ub_event *ev, int bit)
{
	(void)ev;
	(void)bit;
}

static struct ub_event_vmt uloop_event_vmt = {
	.add_bits = ub_add_bits,
	.del_bits = ub_del_bits,
	.set_fd = ub_set_fd,
	.free = uloop_event_free,
	.add = ub_add,
	.del = uloop_event_del,
	.add_timer = ub_add_timer,
	.del_timer = uloop_event_del,
	.add_signal = ub_signal,
	.del_signal = ub_del_signal,
	.winsock_unregister_wsaevent = ub_winsock_unregister,
	.winsock_tcp_wouldblock = ub_winsock_wouldblock,
};

static void ub_base_free(struct ub_event_base *b)
{
	(void)b; /* the loop's owner frees it */
}

static int ub_base_dispatch(struct ub_event_base *b)
{
	uloop_run((struct uloop *)b);
	return 0;
}

static int ub_base_loopexit(struct ub_event_base *b, struct timeval *tv)
{
	(void)tv;
	uloop_break((struct uloop *)b);
	return 0;
}

static struct ub_event *ub_new_event(struct ub_event_base *b, int fd, short bits, void (*cb)(int, short, void *),
                                     void *arg)
{
	return uloop_event_new((struct uloop *)b, fd, bits, cb, arg);
}

static struct ub_event *ub_new_signal(struct ub_event_base *b, int fd, void (*cb)(int, short, void *), void *arg)
{
	(void)b;
	(void)fd;
	(void)cb;
	(void)arg;
	return NULL;
}

static struct ub_event *ub_register_wsaevent(struct ub_event_base *b, void *wsaevent, void (*cb)(int, short, void *),
                                             void *arg)
{
	(void)b;
	(void)wsaevent;
	(void)cb;
	(void)arg;
	return NULL;
}

static struct ub_event_base_vmt uloop_base_vmt = {
	.free = ub_base_free,
	.dispatch = ub_base_dispatch,
	.loopexit = ub_base_loopexit,
	.new_event = ub_new_event,
	.new_signal = ub_new_signal,
	.winsock_register_wsaevent = ub_register_wsaevent,
};

/* ---- the loop ---- */

struct uloop *uloop_new(void)
{
	struct uloop *u = calloc(1, sizeof(*u));
	if (u == NULL)
		return NULL;
	u->base.magic = UB_EVENT_MAGIC;
	u->base.vmt = &uloop_base_vmt;
	u->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (u->epfd < 0) {
		int e = errno;
		free(u);
		errno = e;
		return NULL;
	}
	return u;
}

void uloop_free(struct uloop *u)
{
	if (u == NULL)
		return;
	u->depth = 0;
	reap(u);
	while (u->spare) {
		struct uev *e = u->spare;
		u->spare = e->next_dead;
		free(e);
	}
	close(u->epfd);
	free(u->heap);
	free(u->fds);
	free(u);
}

int uloop_fd(const struct uloop *u)
{
	return u->epfd;
}

struct ub_event_base *uloop_ub_base(struct uloop *u)
{
	return &u->base;
}

/* ---- views ---- */

static void view_base_free(struct ub_event_base *b)
{
	(void)b; /* its owner frees it (uloop_view_free) */
}

/* A context in a host's loop is run by the host, never by libunbound. */
static int view_base_dispatch(struct ub_event_base *b)
{
	(void)b;
	return -1;
}

static int view_base_loopexit(struct ub_event_base *b, struct timeval *tv)
{
	(void)b;
	(void)tv;
	return -1;
}

static struct ub_event *view_new_event(struct ub_event_base *b, int fd, short bits, void (*cb)(int, short, void *),
                                       void *arg)
{
	struct uloop_view *v = (struct uloop_view *)b;
	if (v->detached)
		return NULL;
	struct uev *e = (struct uev *)uloop_event_new(v->u, fd, bits, cb, arg);
	if (e == NULL)
		return NULL;
	e->view = v;
	e->vnext = v->events;
	if (v->events != NULL)
		v->events->vprev = e;
	v->events = e;
	return &e->ub;
}

static struct ub_event_base_vmt view_base_vmt = {
	.free = view_base_free,
	.dispatch = view_base_dispatch,
	.loopexit = view_base_loopexit,
	.new_event = view_new_event,
	.new_signal = ub_new_signal,
	.winsock_register_wsaevent = ub_register_wsaevent,
};

struct uloop_view *uloop_view_new(struct uloop *u)
{
	struct uloop_view *v = calloc(1, sizeof(*v));
	if (v == NULL)
		return NULL;
	v->base.magic = UB_EVENT_MAGIC;
	v->base.vmt = &view_base_vmt;
	v->u = u;
	return v;
}

struct ub_event_base *uloop_view_base(struct uloop_view *v)
{
	return &v->base;
}

void uloop_view_detach(struct uloop_view *v)
{
	for (struct uev *e = v->events; e != NULL; e = e->vnext) {
		ev_del(e);
		e->detached = true;
	}
	v->detached = true;
}

void uloop_view_free(struct uloop_view *v)
{
	if (v == NULL)
		return;
	while (v->events != NULL) /* left by the context: none, if libunbound frees what it made */
		uloop_event_free(&v->events->ub);
	free(v);
}
