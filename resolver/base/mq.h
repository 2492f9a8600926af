/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. A multi-producer queue a thread can poll with epoll. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/* Embed in the message; the queue links through it. */
struct mq_node {
	struct mq_node *next;
};

struct mq {
	pthread_mutex_t lock;
	struct mq_node *head, *tail;
	size_t len;
	int efd; /* eventfd, readable while the queue may hold messages */
	bool own_pending; /* the consumer queued to itself (mq_set_own): it drains before it waits */
};

/** @return 0 or -errno. */
int mq_init(struct mq *q);
void mq_deinit(struct mq *q);

/** Append n and wake the consumer. Thread-safe. */
void mq_push(struct mq *q, struct mq_node *n);

/** Take every queued message (in order), clearing the eventfd. Consumer only. @return the list. */
struct mq_node *mq_take_all(struct mq *q);

/**
 * Say that the calling thread consumes q. A push from this thread then
 * writes no eventfd: it sets q->own_pending, and the thread takes the
 * messages with mq_take_own() before it waits again (a listener answering
 * the misses it resolved in its own loop: no wake-up of itself).
 */
void mq_set_own(struct mq *q);

/** Take every queued message without touching the eventfd; clears own_pending. Consumer only. */
struct mq_node *mq_take_own(struct mq *q);

/** Messages queued now (approximate). */
size_t mq_len(struct mq *q);
