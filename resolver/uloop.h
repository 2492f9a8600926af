/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. A small epoll loop that libunbound's event API can run in. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/time.h>
#include <unbound-event.h>

/*
 * libunbound's pluggable event interface (unbound-event.h: struct
 * ub_event_base_vmt, struct ub_event_vmt) implemented over one epoll fd and
 * a timer heap, so a listener thread can resolve in its own loop: the
 * loop's fd goes into the listener's epoll (nested: it is readable while
 * any of the loop's fds is), and the listener runs the loop's ready events
 * and due timers without a hand-over to another thread.
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

/** The epoll fd to nest in another loop's epoll (readable while an event is ready). */
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
/** Run the timers due at now (clock_ns()): the caller's clock reading, one per loop turn. */
void uloop_timers(struct uloop *u, uint64_t now);
/** Milliseconds from now until the next timer is due, rounded up: -1 with no timer, 0 when one is due. */
int uloop_next_ms(const struct uloop *u, uint64_t now);
/** Wait and run events until uloop_break(). */
void uloop_run(struct uloop *u);
void uloop_break(struct uloop *u);
