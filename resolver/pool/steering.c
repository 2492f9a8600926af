/* SPDX-License-Identifier: BSD-3-Clause */
/* Steering telemetry: see steering.h. */
#include "resolver/pool/steering.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "wire/parse.h"
#include "wire/wire.h"

/* Open addressing over twice the rows: probes stay short, and the table never fills. */
#define STEERING_INDEX (2 * STEERING_ROWS)

struct steering {
	pthread_mutex_t lock;
	size_t n;           /* rows used, in insertion order */
	uint64_t dropped;
	struct steering_row *rows;
	uint32_t *hash;     /* of each row's key */
	int32_t *index;     /* STEERING_INDEX slots: a row number, or -1 */
};

struct steering *steering_new(void)
{
	struct steering *s = calloc(1, sizeof(*s));
	if (s == NULL)
		return NULL;
	/* rows come on first use of each; the arrays are sized once */
	s->rows = calloc(STEERING_ROWS, sizeof(*s->rows));
	s->hash = calloc(STEERING_ROWS, sizeof(*s->hash));
	s->index = malloc(STEERING_INDEX * sizeof(*s->index));
	if (s->rows == NULL || s->hash == NULL || s->index == NULL) {
		free(s->rows);
		free(s->hash);
		free(s->index);
		free(s);
		return NULL;
	}
	for (size_t i = 0; i < STEERING_INDEX; i++)
		s->index[i] = -1;
	pthread_mutex_init(&s->lock, NULL);
	return s;
}

void steering_free(struct steering *s)
{
	if (s == NULL)
		return;
	pthread_mutex_destroy(&s->lock);
	free(s->rows);
	free(s->hash);
	free(s->index);
	free(s);
}

/* Unkeyed: partition names and flagged rules are the operator's, never a client's. */
static uint32_t key_hash(const char *partition, const char *rule)
{
	uint32_t h = 2166136261u;
	for (const char *p = partition; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	h = (h ^ 0xff) * 16777619u;
	for (const char *p = rule; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	return h;
}

/* The A and AAAA records of the answer section: what the city is sent to. */
static void take_addrs(struct steering_row *row, const uint8_t *msg, size_t len)
{
	struct wire_iter it;
	struct wire_rr rr;
	row->naddr = 0;
	if (wire_iter_init(&it, msg, len) != 0)
		return;
	while (row->naddr < STEERING_ADDRS && wire_iter_next(&it, &rr) == 1 && rr.section == WIRE_SECTION_ANSWER) {
		bool a = rr.type == 1 && rr.rdlen == 4, aaaa = rr.type == 28 && rr.rdlen == 16;
		if (!a && !aaaa)
			continue;
		row->addr[row->naddr].family = a ? AF_INET : AF_INET6;
		memset(row->addr[row->naddr].addr, 0, 16);
		memcpy(row->addr[row->naddr].addr, msg + rr.rdata, rr.rdlen);
		row->naddr++;
	}
}

void steering_note(struct steering *s, const char *partition, const char *rule, bool echoed, uint8_t scope,
                   const uint8_t *msg, size_t len)
{
	uint32_t h = key_hash(partition, rule);
	pthread_mutex_lock(&s->lock);
	struct steering_row *row = NULL;
	size_t slot = h % STEERING_INDEX;
	for (; s->index[slot] >= 0; slot = (slot + 1) % STEERING_INDEX) {
		int32_t i = s->index[slot];
		if (s->hash[i] == h && strcmp(s->rows[i].partition, partition) == 0 && strcmp(s->rows[i].rule, rule) == 0) {
			row = &s->rows[i];
			break;
		}
	}
	if (row == NULL) {
		if (s->n == STEERING_ROWS) {
			s->dropped++;
			pthread_mutex_unlock(&s->lock);
			return;
		}
		s->hash[s->n] = h;
		s->index[slot] = (int32_t)s->n;
		row = &s->rows[s->n++];
		snprintf(row->partition, sizeof(row->partition), "%s", partition);
		snprintf(row->rule, sizeof(row->rule), "%s", rule);
	}
	take_addrs(row, msg, len);
	row->answers++;
	row->echoed += echoed;
	row->last_echoed = echoed;
	row->scope = echoed ? scope : 0;
	row->last = time(NULL);
	pthread_mutex_unlock(&s->lock);
}

size_t steering_read(struct steering *s, struct steering_row *out, size_t max)
{
	pthread_mutex_lock(&s->lock);
	size_t n = s->n < max ? s->n : max;
	memcpy(out, s->rows, n * sizeof(*out));
	pthread_mutex_unlock(&s->lock);
	return n;
}

uint64_t steering_dropped(struct steering *s)
{
	pthread_mutex_lock(&s->lock);
	uint64_t d = s->dropped;
	pthread_mutex_unlock(&s->lock);
	return d;
}

void steering_each(struct steering *s, void (*fn)(const char *partition, uint64_t answers, uint64_t echoed, void *arg),
                   void *arg)
{
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->n; i++)
		fn(s->rows[i].partition, s->rows[i].answers, s->rows[i].echoed, arg);
	pthread_mutex_unlock(&s->lock);
}
