/* SPDX-License-Identifier: BSD-3-Clause */
/* A mutex-protected list plus an eventfd; the consumer drains it in batches. */
#include "resolver/mq.h"

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
	/* Only the empty -> non-empty edge needs a wake-up. */
	if (was_empty) {
		uint64_t one = 1;
		ssize_t w = write(q->efd, &one, sizeof(one));
		(void)w;
	}
}

struct mq_node *mq_take_all(struct mq *q)
{
	uint64_t v;
	ssize_t r = read(q->efd, &v, sizeof(v));
	(void)r;
	pthread_mutex_lock(&q->lock);
	struct mq_node *n = q->head;
	q->head = q->tail = NULL;
	q->len = 0;
	pthread_mutex_unlock(&q->lock);
	return n;
}

size_t mq_len(struct mq *q)
{
	pthread_mutex_lock(&q->lock);
	size_t n = q->len;
	pthread_mutex_unlock(&q->lock);
	return n;
}
