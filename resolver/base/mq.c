/* SPDX-License-Identifier: BSD-3-Clause */
/* A mutex-protected list plus an eventfd; the consumer drains it in batches. */
#include "resolver/base/mq.h"

#include <errno.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

int mq_init(struct mq *q)
{
	q->head = q->tail = NULL;
	q->len = 0;
	q->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (q->efd < 0)
		return -errno;
	pthread_mutex_init(&q->lock, NULL);
	return 0;
}

void mq_deinit(struct mq *q)
{
	if (q->efd >= 0)
		close(q->efd);
	q->efd = -1;
	pthread_mutex_destroy(&q->lock);
}

/* the queue this thread consumes, if any */
static _Thread_local struct mq *mq_own;

void mq_set_own(struct mq *q)
{
	mq_own = q;
}

void mq_push(struct mq *q, struct mq_node *n)
{
	n->next = NULL;
	pthread_mutex_lock(&q->lock);
	int was_empty = (q->head == NULL);
	if (q->tail)
		q->tail->next = n;
	else
		q->head = n;
	q->tail = n;
	q->len++;
	pthread_mutex_unlock(&q->lock);
	/* Only the empty -> non-empty edge needs a wake-up, and only of another
	 * thread: a consumer pushing to itself takes the message before it
	 * waits. A later push from elsewhere finds the queue non-empty and does
	 * not write either; the consumer's take before it waits gets both. */
	if (q == mq_own) {
		q->own_pending = true;
		return;
	}
	if (was_empty) {
		uint64_t one = 1;
		ssize_t w = write(q->efd, &one, sizeof(one));
		(void)w;
	}
}

static struct mq_node *take(struct mq *q)
{
	q->own_pending = false;
	pthread_mutex_lock(&q->lock);
	struct mq_node *n = q->head;
	q->head = q->tail = NULL;
	q->len = 0;
	pthread_mutex_unlock(&q->lock);
	return n;
}

struct mq_node *mq_take_all(struct mq *q)
{
	uint64_t v;
	ssize_t r = read(q->efd, &v, sizeof(v));
	(void)r;
	return take(q);
}

struct mq_node *mq_take_own(struct mq *q)
{
	return take(q);
}

size_t mq_len(struct mq *q)
{
	pthread_mutex_lock(&q->lock);
	size_t n = q->len;
	pthread_mutex_unlock(&q->lock);
	return n;
}
