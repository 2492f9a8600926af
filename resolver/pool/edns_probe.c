/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * edns.tier's probes: the first EDNS thread sends every tier node ". NS"
 * each TIER_PROBE_MS from a fresh socket, and reads a round later whether
 * it answered; tier.c keeps what that says of each node, for every thread.
 */
#include "resolver/pool/edns_probe.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "resolver/base/clock.h"
#include "resolver/pool/edns_sock.h"
#include "resolver/pool/tier.h"
#include "wire/upstream.h"

int edns_probe_init(struct ethread *t, size_t n)
{
	t->probe.node = calloc(n, sizeof(*t->probe.node));
	if (t->probe.node == NULL)
		return -1;
	for (size_t i = 0; i < n; i++)
		t->probe.node[i].fd = -1;
	return 0;
}

void edns_probe_free(struct ethread *t, size_t n)
{
	for (size_t k = 0; t->probe.node != NULL && k < n; k++)
		if (t->probe.node[k].fd >= 0)
			close(t->probe.node[k].fd);
	free(t->probe.node);
	t->probe.node = NULL;
}

/* Did the node answer probe pb (any reply to its ID, even REFUSED)? Reads what waits on its socket. */
static bool probe_answered(struct ethread *t, const struct tprobe *pb)
{
	for (int i = 0; i < 8; i++) {
		ssize_t n = recv(pb->fd, t->buf, 65535, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return false;
		if (n < 0)
			continue; /* ICMP unreachable: nothing there; read on */
		/* the socket is connected (the node's address and port only); a reply
		 * is QR=1 with our random ID: a liveness signal, nothing else is read */
		if (n >= WIRE_HEADER_SIZE && (t->buf[2] & 0x80) && ((uint16_t)(t->buf[0] << 8 | t->buf[1])) == pb->id)
			return true;
	}
	return false;
}

/* Send node i a probe: ". NS" with RD=0, which any partdns answers from its cache or REFUSES, cheaply. */
static void probe_send(struct ethread *t, unsigned i)
{
	struct tprobe *pb = &t->probe.node[i];
	const struct tier_node *nd = &t->pool->tier->node[i];
	static const uint8_t root[1] = { 0 };
	uint8_t q[64];
	pb->id = (uint16_t)edns_sock_random();
	int len = wire_query_build(pb->id, false, false, root, 1, WIRE_TYPE_NS, WIRE_CLASS_IN, NULL, q, sizeof(q));
	int fd = len > 0 ? edns_sock_open(t, &nd->addr, false) : -1;
	if (fd < 0)
		return; /* no socket: this round says nothing of the node */
	if (send(fd, q, (size_t)len, 0) != len) {
		close(fd);
		return;
	}
	pb->fd = fd;
}

/*
 * The answers are read here, a round later, not as they come: a node's
 * state moves at this pace anyway, and the thread's loop needs no more
 * descriptors.
 */
void edns_probe_round(struct ethread *t)
{
	if (t->probe.node == NULL)
		return;
	uint64_t now = clock_ns();
	if (now < t->probe.next_ns)
		return;
	t->probe.next_ns = now + TIER_PROBE_MS * 1000000ull;
	struct tier *tr = t->pool->tier;
	for (unsigned i = 0; i < tr->n; i++) {
		struct tprobe *pb = &t->probe.node[i];
		if (pb->fd >= 0) {
			tier_probe_result(tr, i, probe_answered(t, pb));
			close(pb->fd);
			pb->fd = -1;
		}
		probe_send(t, i);
	}
}

int edns_probe_wait_ms(const struct ethread *t, int ms)
{
	if (t->probe.node == NULL)
		return ms;
	uint64_t now = clock_ns();
	int due = now >= t->probe.next_ns ? 0 : (int)((t->probe.next_ns - now) / 1000000ull) + 1;
	return due < ms ? due : ms;
}
