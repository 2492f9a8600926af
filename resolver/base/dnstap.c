/* SPDX-License-Identifier: BSD-3-Clause */
/* dnstap output: messages encoded as dnstap protobuf, handed to fstrm's I/O thread, written to a unix socket. */
#include "resolver/base/dnstap.h"

#include <errno.h>
#include <fstrm.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "resolver/base/counters.h"
#include "resolver/base/log.h"
#include "third_party/dnstap/dnstap.pb-c.h"

#ifndef PARTDNS_VERSION
#define PARTDNS_VERSION "unknown"
#endif

#define DNSTAP_CONTENT_TYPE "protobuf:dnstap.Dnstap"
/* Frames one thread may have waiting for the I/O thread (a power of 2, fstrm's
 * maximum): a few ms of a busy listener, so a reader's hiccup costs no frame. */
#define DNSTAP_QUEUE_SIZE 16384
/* Seconds between attempts to (re)connect to the socket. */
#define DNSTAP_REOPEN_S 1
/* How long the shutdown waits for queued frames to be written. */
#define DNSTAP_STOP_MS 2000

struct dnstap_queue {
	struct fstrm_iothr *iothr;
	struct fstrm_iothr_queue *q;
	_Atomic uint64_t *dropped;
	const struct dnstap *d;
};

struct dnstap {
	struct fstrm_iothr *iothr;
	unsigned nqueues;
	struct dnstap_queue *queues;
	char identity[256];
	char version[64];
};

struct dnstap *dnstap_new(const char *path, unsigned nqueues)
{
	if (strlen(path) >= sizeof(((struct sockaddr_un *)NULL)->sun_path)) {
		log_err("server.dnstap: socket path too long (at most %zu bytes): %s",
		        sizeof(((struct sockaddr_un *)NULL)->sun_path) - 1, path);
		return NULL;
	}
	struct dnstap *d = calloc(1, sizeof(*d));
	if (d == NULL)
		return NULL;
	d->nqueues = nqueues ? nqueues : 1;
	d->queues = calloc(d->nqueues, sizeof(*d->queues));
	if (gethostname(d->identity, sizeof(d->identity) - 1) != 0)
		strcpy(d->identity, "partdns");
	snprintf(d->version, sizeof(d->version), "partdns %s", PARTDNS_VERSION);

	struct fstrm_writer_options *wopt = fstrm_writer_options_init();
	struct fstrm_unix_writer_options *uwopt = fstrm_unix_writer_options_init();
	struct fstrm_iothr_options *iopt = fstrm_iothr_options_init();
	struct fstrm_writer *w = NULL;
	bool ok = d->queues != NULL && wopt != NULL && uwopt != NULL && iopt != NULL;
	if (ok) {
		fstrm_writer_options_add_content_type(wopt, DNSTAP_CONTENT_TYPE, strlen(DNSTAP_CONTENT_TYPE));
		fstrm_unix_writer_options_set_socket_path(uwopt, path);
		/* one queue per logging thread, each with one producer: no lock when logging */
		ok = fstrm_iothr_options_set_num_input_queues(iopt, d->nqueues) == fstrm_res_success &&
		     fstrm_iothr_options_set_queue_model(iopt, FSTRM_IOTHR_QUEUE_MODEL_SPSC) == fstrm_res_success &&
		     fstrm_iothr_options_set_input_queue_size(iopt, DNSTAP_QUEUE_SIZE) == fstrm_res_success &&
		     fstrm_iothr_options_set_reopen_interval(iopt, DNSTAP_REOPEN_S) == fstrm_res_success;
	}
	if (ok)
		w = fstrm_unix_writer_init(uwopt, wopt);
	/* the socket need not exist yet: the I/O thread connects when it can */
	if (w != NULL)
		d->iothr = fstrm_iothr_init(iopt, &w);
	if (w != NULL)
		fstrm_writer_destroy(&w); /* not taken: iothr failed */
	fstrm_iothr_options_destroy(&iopt);
	fstrm_unix_writer_options_destroy(&uwopt);
	fstrm_writer_options_destroy(&wopt);
	if (d->iothr == NULL) {
		log_err("server.dnstap: cannot set up the dnstap writer for %s", path);
		dnstap_free(d);
		return NULL;
	}
	for (unsigned i = 0; i < d->nqueues; i++) {
		d->queues[i].iothr = d->iothr;
		d->queues[i].q = fstrm_iothr_get_input_queue_idx(d->iothr, i);
		d->queues[i].d = d;
		if (d->queues[i].q == NULL) {
			log_err("server.dnstap: cannot get dnstap queue %u", i);
			dnstap_free(d);
			return NULL;
		}
	}
	return d;
}

struct dnstap_queue *dnstap_queue(struct dnstap *d, unsigned idx, _Atomic uint64_t *dropped)
{
	if (d == NULL || idx >= d->nqueues)
		return NULL;
	d->queues[idx].dropped = dropped;
	return &d->queues[idx];
}

/* An address's bytes and port for the protobuf; false for what is not IPv4/IPv6. */
static bool addr_parts(const struct sockaddr_storage *ss, ProtobufCBinaryData *addr, uint32_t *port, int *family)
{
	if (ss == NULL)
		return false;
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
		addr->data = (uint8_t *)&s4->sin_addr;
		addr->len = 4;
		*port = ntohs(s4->sin_port);
		*family = DNSTAP__SOCKET_FAMILY__INET;
		return true;
	}
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
		addr->data = (uint8_t *)&s6->sin6_addr;
		addr->len = 16;
		*port = ntohs(s6->sin6_port);
		*family = DNSTAP__SOCKET_FAMILY__INET6;
		return true;
	}
	return false;
}

static void count_drop(struct dnstap_queue *q)
{
	if (q->dropped)
		counter_inc(q->dropped);
}

void dnstap_log(struct dnstap_queue *q, const struct dnstap_msg *m)
{
	Dnstap__Message msg = DNSTAP__MESSAGE__INIT;
	msg.type = (Dnstap__Message__Type)m->type;
	msg.has_socket_protocol = true;
	msg.socket_protocol = m->https ? DNSTAP__SOCKET_PROTOCOL__DOH
	                      : m->tls ? DNSTAP__SOCKET_PROTOCOL__DOT
	                      : m->tcp ? DNSTAP__SOCKET_PROTOCOL__TCP : DNSTAP__SOCKET_PROTOCOL__UDP;
	int family = 0;
	uint32_t port;
	if (addr_parts(m->query_addr, &msg.query_address, &port, &family)) {
		msg.has_query_address = msg.has_query_port = true;
		msg.query_port = port;
	}
	if (addr_parts(m->response_addr, &msg.response_address, &port, &family)) {
		msg.has_response_address = msg.has_response_port = true;
		msg.response_port = port;
	}
	if (family != 0) {
		msg.has_socket_family = true;
		msg.socket_family = (Dnstap__SocketFamily)family;
	}
	if (m->query_time.tv_sec != 0) {
		msg.has_query_time_sec = msg.has_query_time_nsec = true;
		msg.query_time_sec = (uint64_t)m->query_time.tv_sec;
		msg.query_time_nsec = (uint32_t)m->query_time.tv_nsec;
	}
	if (m->response_time.tv_sec != 0) {
		msg.has_response_time_sec = msg.has_response_time_nsec = true;
		msg.response_time_sec = (uint64_t)m->response_time.tv_sec;
		msg.response_time_nsec = (uint32_t)m->response_time.tv_nsec;
	}
	if (m->query != NULL) {
		msg.has_query_message = true;
		msg.query_message = (ProtobufCBinaryData){ .len = m->query_len, .data = (uint8_t *)m->query };
	}
	if (m->response != NULL) {
		msg.has_response_message = true;
		msg.response_message = (ProtobufCBinaryData){ .len = m->response_len, .data = (uint8_t *)m->response };
	}
	if (m->zone != NULL) {
		msg.has_query_zone = true;
		msg.query_zone = (ProtobufCBinaryData){ .len = m->zone_len, .data = (uint8_t *)m->zone };
	}
	Dnstap__Dnstap tap = DNSTAP__DNSTAP__INIT;
	tap.type = DNSTAP__DNSTAP__TYPE__MESSAGE;
	tap.message = &msg;
	tap.has_identity = tap.has_version = true;
	tap.identity = (ProtobufCBinaryData){ .len = strlen(q->d->identity), .data = (uint8_t *)q->d->identity };
	tap.version = (ProtobufCBinaryData){ .len = strlen(q->d->version), .data = (uint8_t *)q->d->version };

	size_t len = dnstap__dnstap__get_packed_size(&tap);
	uint8_t *buf = malloc(len);
	if (buf == NULL) {
		count_drop(q);
		return;
	}
	dnstap__dnstap__pack(&tap, buf);
	/* fstrm_res_again: the queue is full; the frame is ours to free */
	if (fstrm_iothr_submit(q->iothr, q->q, buf, len, fstrm_free_wrapper, NULL) != fstrm_res_success) {
		free(buf);
		count_drop(q);
	}
}

/* ---- shutdown ---- */

struct stopper {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done, abandoned;
	struct fstrm_iothr *iothr;
};

static void stopper_free(struct stopper *s)
{
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
}

/*
 * fstrm_iothr_destroy writes what is queued and joins the I/O thread, which
 * may sit in a blocking write to a reader that does not read: done on a
 * thread of its own, so the daemon's shutdown can give up on it.
 */
static void *stopper_main(void *arg)
{
	struct stopper *s = arg;
	fstrm_iothr_destroy(&s->iothr);
	pthread_mutex_lock(&s->lock);
	s->done = true;
	bool abandoned = s->abandoned;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	if (abandoned)
		stopper_free(s);
	return NULL;
}

static void stop_iothr(struct fstrm_iothr *iothr)
{
	struct stopper *s = calloc(1, sizeof(*s));
	pthread_t th;
	if (s == NULL) {
		fstrm_iothr_destroy(&iothr);
		return;
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->iothr = iothr;
	if (pthread_create(&th, NULL, stopper_main, s) != 0) {
		stopper_free(s);
		fstrm_iothr_destroy(&iothr);
		return;
	}
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += DNSTAP_STOP_MS / 1000;
	pthread_mutex_lock(&s->lock);
	while (!s->done)
		if (pthread_cond_timedwait(&s->cond, &s->lock, &until) == ETIMEDOUT)
			break;
	bool done = s->done;
	if (!done)
		s->abandoned = true;
	pthread_mutex_unlock(&s->lock);
	if (done) {
		pthread_join(th, NULL);
		stopper_free(s);
	} else {
		log_warn("server.dnstap: the reader does not take what is queued; stopping without it");
		pthread_detach(th);
	}
}

void dnstap_free(struct dnstap *d)
{
	if (d == NULL)
		return;
	if (d->iothr)
		stop_iothr(d->iothr);
	free(d->queues);
	free(d);
}
