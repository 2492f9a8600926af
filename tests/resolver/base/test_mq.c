/* SPDX-License-Identifier: BSD-3-Clause */
/* The worker/pool message queue: order, wake-ups, many producers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <poll.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdlib.h>

#include "resolver/base/mq.h"

struct msg {
	struct mq_node node;
	int producer, seq;
};

static bool readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return poll(&p, 1, 0) == 1;
}

static void test_order_and_wakeup(void **state)
{
	struct mq q;
	assert_int_equal(mq_init(&q), 0);
	assert_false(readable(q.efd));
	struct msg m[3];
	for (int i = 0; i < 3; i++) {
		m[i].seq = i;
		mq_push(&q, &m[i].node);
	}
	assert_true(readable(q.efd));
	assert_int_equal(mq_len(&q), 3);
	struct mq_node *n = mq_take_all(&q);
	for (int i = 0; i < 3; i++, n = n->next)
		assert_int_equal(((struct msg *)n)->seq, i);
	assert_null(n);
	assert_false(readable(q.efd));
	assert_null(mq_take_all(&q));
	mq_deinit(&q);
}

#define PRODUCERS 4
#define PER_PRODUCER 20000

struct prod {
	struct mq *q;
	int id;
};

static void *producer(void *arg)
{
	struct prod *p = arg;
	for (int i = 0; i < PER_PRODUCER; i++) {
		struct msg *m = malloc(sizeof(*m));
		m->producer = p->id;
		m->seq = i;
		mq_push(p->q, &m->node);
	}
	return NULL;
}

static void test_many_producers(void **state)
{
	struct mq q;
	assert_int_equal(mq_init(&q), 0);
	pthread_t t[PRODUCERS];
	struct prod p[PRODUCERS];
	for (int i = 0; i < PRODUCERS; i++) {
		p[i] = (struct prod){ .q = &q, .id = i };
		pthread_create(&t[i], NULL, producer, &p[i]);
	}
	int next[PRODUCERS] = { 0 };
	int total = 0;
	while (total < PRODUCERS * PER_PRODUCER) {
		struct pollfd pf = { .fd = q.efd, .events = POLLIN };
		poll(&pf, 1, 100);
		struct mq_node *n = mq_take_all(&q);
		while (n) {
			struct msg *m = (struct msg *)n;
			n = n->next;
			/* per-producer order is kept */
			assert_int_equal(m->seq, next[m->producer]);
			next[m->producer]++;
			total++;
			free(m);
		}
	}
	for (int i = 0; i < PRODUCERS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(total, PRODUCERS * PER_PRODUCER);
	mq_deinit(&q);
}

static struct mq *other_q;
static void *push_from_other(void *arg)
{
	mq_push(other_q, arg);
	return NULL;
}

/* a consumer pushing to itself (a listener answering its own misses) wakes nobody; others still wake it */
static void test_own_push(void **state)
{
	(void)state;
	struct mq q;
	assert_int_equal(mq_init(&q), 0);
	mq_set_own(&q);
	struct msg m[2] = { { .seq = 0 }, { .seq = 1 } };
	mq_push(&q, &m[0].node);
	assert_false(readable(q.efd));
	assert_true(q.own_pending);
	/* another thread's push to the non-empty queue needs no wake-up either: the own take gets it */
	other_q = &q;
	pthread_t t;
	pthread_create(&t, NULL, push_from_other, &m[1].node);
	pthread_join(t, NULL);
	assert_false(readable(q.efd));
	struct mq_node *n = mq_take_own(&q);
	assert_ptr_equal(n, &m[0].node);
	assert_ptr_equal(n->next, &m[1].node);
	assert_false(q.own_pending);
	/* to an empty queue, another thread's push wakes the consumer */
	pthread_create(&t, NULL, push_from_other, &m[0].node);
	pthread_join(t, NULL);
	assert_true(readable(q.efd));
	assert_ptr_equal(mq_take_all(&q), &m[0].node);
	assert_false(readable(q.efd));
	mq_set_own(NULL);
	mq_deinit(&q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_and_wakeup),
		cmocka_unit_test(test_many_producers),
		cmocka_unit_test(test_own_push),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
