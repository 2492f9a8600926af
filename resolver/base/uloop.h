/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. A small epoll loop that libunbound's event API can run in. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/time.h>
#include <unbound-event.h>

/*
 * libunbound's pluggable event interface (unbound-event.h: struct
 * ub_event_base_vmt, struct ub_event_vmt) implemented over one epoll fd and
 * a timer heap, so a listener thread can resolve in its own loop without
 * a hand-over to another thread. The listener shares the loop's epoll (a
 * dup of uloop_fd()): its own sockets and libunbound's wake one
 * epoll_wait, the loop's entries are tagged so uloop_ready() knows them,
 * and the listener runs the loop's due timers once per turn. (Nesting the
 * loop's epoll fd in the listener's instead costs a second epoll_wait for
 * every batch with an upstream answer in it.) Sharing assumes what
 * libunbound does (netevent.c comm_point_close): an event is deleted before
 * its fd is closed. Were a socket closed while registered and its number
 * taken by one of the host's, the old event's deletion would unregister
 * the host's socket; the host's TCP connections have idle timeouts, so
 * that would cost one stalled connection, not a stalled listener.
 *
 * Events keep libevent's meaning, which is what libunbound was written
 * against (UB_EV_* are libevent's EV_* values): level-triggered; a
 * non-persistent event is removed once it fires; a persistent event with a
 * timeout re-arms it whenever it fires; uloop_event_add() on a pending
 * event replaces its registration. One event per fd at a time (libunbound
 * keeps one per socket); a later registration of the same fd takes it over.
 */

struct uloop;

typedef void (*uloop_cb)(int fd, short bits, void *arg);

/** @return NULL on error (errno). */
struct uloop *uloop_new(void);
/** Frees events still registered too. NULL is a no-op. */
void uloop_free(struct uloop *u);

/** The loop's epoll fd: a host may wait on it (a dup) and register its own fds, untagged (8-aligned data.ptr). */
int uloop_fd(const struct uloop *u);
/** The loop as libunbound's event base, for ub_ctx_create_ub_event(). */
struct ub_event_base *uloop_ub_base(struct uloop *u);

/** A new, not yet pending event (bits: UB_EV_READ, UB_EV_WRITE, UB_EV_PERSIST; fd -1: a timer). */
struct ub_event *uloop_event_new(struct uloop *u, int fd, short bits, uloop_cb cb, void *arg);
/** Make ev pending, with a timeout when tv is not NULL. @return 0 or -1. */
int uloop_event_add(struct ub_event *ev, const struct timeval *tv);
int uloop_event_del(struct ub_event *ev);
/** Safe inside a callback, for any event (its pending readiness is dropped). */
void uloop_event_free(struct ub_event *ev);

/** Run the ready events (without waiting) and then the due timers. */
void uloop_poll(struct uloop *u);

/*
 * A host's batch, for a host waiting on the loop's epoll itself: call
 * uloop_batch_begin() as soon as epoll_wait returns, uloop_ready() for each
 * entry, and uloop_batch_end() after the batch (uloop_timers() may run
 * inside). Within a batch, an event freed by anyone, the host's work
 * included, is released only at its end, and an entry that went stale
 * since epoll_wait (event freed, deleted, or added again) does not fire.
 */
void uloop_batch_begin(struct uloop *u);
/** @return false when the entry is the host's, true when it was the loop's (and ran, unless stale). */
bool uloop_ready(struct uloop *u, const struct epoll_event *ev);
void uloop_batch_end(struct uloop *u);
/** Run the timers due at now (clock_ns()): the caller's clock reading, one per loop turn. */
void uloop_timers(struct uloop *u, uint64_t now);
/** Milliseconds from now until the next timer is due, rounded up: -1 with no timer, 0 when one is due. */
int uloop_next_ms(const struct uloop *u, uint64_t now);
/** Wait and run events until uloop_break(). */
void uloop_run(struct uloop *u);
void uloop_break(struct uloop *u);

/*
 * A view: a second event base over the same loop, for a libunbound context
 * that is deleted on another thread. Its events are the loop's own (they
 * fire in the loop's thread as any other), and the view lists them. Once
 * the context is idle, the loop's thread detaches the view: every event of
 * it leaves the epoll set and the timer heap, and from then on they are
 * plain memory that the loop never names again (adding one fails,
 * deleting one does nothing, freeing one frees it). So ub_ctx_delete()
 * can run on any thread, however long it takes (a stub context with
 * 100,000 auth zones), while the loop runs on.
 */
struct uloop_view;

/** Any thread: touches nothing of u. @return NULL on ENOMEM. */
struct uloop_view *uloop_view_new(struct uloop *u);
/** For ub_ctx_create_ub_event(). */
struct ub_event_base *uloop_view_base(struct uloop_view *v);
/**
 * The loop's thread, with no lookup of the context in flight, and not
 * between a host's uloop_batch_begin() and its last uloop_ready() (a
 * readiness the batch still holds may name an event; the timers may run).
 * After it, the view and its events belong to whoever deletes the context.
 */
void uloop_view_detach(struct uloop_view *v);
/**
 * After the context made with it is deleted: on the loop's thread, or on
 * any thread once detached. NULL is a no-op.
 */
void uloop_view_free(struct uloop_view *v);
