/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. A multi-producer queue a thread can poll with epoll. */
#pragma once

#include <pthread.h>
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
};

/** @return 0 or -errno. */
int mq_init(struct mq *q);
void mq_deinit(struct mq *q);

/** Append n and wake the consumer. Thread-safe. */
void mq_push(struct mq *q, struct mq_node *n);

/** Take every queued message (in order), clearing the eventfd. Consumer only. @return the list. */
struct mq_node *mq_take_all(struct mq *q);

/** Messages queued now (approximate). */
size_t mq_len(struct mq *q);
