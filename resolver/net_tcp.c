/* SPDX-License-Identifier: BSD-3-Clause */
/* TCP connections: accept, read length-prefixed queries, queue and flush replies, idle sweep. */
#include "resolver/net_tcp.h"

#include <errno.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "resolver/clock.h"

struct tcp_out {
	struct tcp_out *next;
	size_t len, off;
	uint8_t data[];
};

struct tcp_conn {
	struct net_ev ev;
	uint64_t id;           /* (generation << 32) | slot */
	int fd;
	struct sockaddr_storage peer;
	socklen_t peer_len;
	uint8_t in[2 + 65535];
	size_t in_len;
	struct tcp_out *out_head, *out_tail;
	unsigned pending;      /* queries waiting for a resolution */
	uint64_t last_ns;
	bool closing;          /* peer closed its side: close once replies are out */
	bool dead;             /* closed; freed after the current event batch */
	struct tcp_conn *next_dead;
};

struct net_tcp {
	int epfd;
	struct tcp_conn **conns;
	uint32_t *conn_gen;
	size_t max_conns, nconns;
	struct tcp_conn *dead; /* closed this batch: later events may still name them */
	unsigned idle_ms;
	uint8_t reply[2 + 65535];
};

struct net_tcp *net_tcp_new(int epfd, size_t max_conns, unsigned idle_ms)
{
	struct net_tcp *t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	t->epfd = epfd;
	t->max_conns = max_conns;
	t->idle_ms = idle_ms;
	t->conns = calloc(max_conns, sizeof(*t->conns));
	t->conn_gen = calloc(max_conns, sizeof(*t->conn_gen));
	if (t->conns == NULL || t->conn_gen == NULL) {
		net_tcp_free(t);
		return NULL;
	}
	return t;
}

static void conn_close(struct net_tcp *t, struct tcp_conn *c)
{
	if (c->dead)
		return;
	size_t slot = (size_t)(c->id & 0xffffffffu);
	epoll_ctl(t->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	while (c->out_head) {
		struct tcp_out *o = c->out_head;
		c->out_head = o->next;
		free(o);
	}
	t->conns[slot] = NULL;
	t->nconns--;
	c->dead = true;
	c->next_dead = t->dead;
	t->dead = c;
}

void net_tcp_end_batch(struct net_tcp *t)
{
	while (t->dead) {
		struct tcp_conn *c = t->dead;
		t->dead = c->next_dead;
		free(c);
	}
}

void net_tcp_free(struct net_tcp *t)
{
	if (t == NULL)
		return;
	if (t->conns)
		for (size_t i = 0; i < t->max_conns; i++)
			if (t->conns[i])
				conn_close(t, t->conns[i]);
	net_tcp_end_batch(t);
	free(t->conns);
	free(t->conn_gen);
	free(t);
}

static struct tcp_conn *conn_by_id(struct net_tcp *t, uint64_t id)
{
	size_t slot = (size_t)(id & 0xffffffffu);
	if (slot >= t->max_conns || t->conns[slot] == NULL || t->conns[slot]->id != id)
		return NULL;
	return t->conns[slot];
}

static void conn_update_events(struct net_tcp *t, struct tcp_conn *c)
{
	uint32_t events = c->closing ? 0 : EPOLLIN;
	if (c->out_head)
		events |= EPOLLOUT;
	struct epoll_event e = { .events = events, .data.ptr = &c->ev };
	epoll_ctl(t->epfd, EPOLL_CTL_MOD, c->fd, &e);
}

/* Write queued output; @return false when the connection was closed. */
static bool conn_flush(struct net_tcp *t, struct tcp_conn *c)
{
	while (c->out_head) {
		struct tcp_out *o = c->out_head;
		ssize_t k = send(c->fd, o->data + o->off, o->len - o->off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			conn_close(t, c);
			return false;
		}
		o->off += (size_t)k;
		if (o->off < o->len)
			break;
		c->out_head = o->next;
		if (c->out_head == NULL)
			c->out_tail = NULL;
		free(o);
	}
	if (c->closing && c->out_head == NULL && c->pending == 0) {
		conn_close(t, c);
		return false;
	}
	conn_update_events(t, c);
	return true;
}

static void conn_queue(struct tcp_conn *c, const uint8_t *msg, size_t len)
{
	struct tcp_out *o = malloc(sizeof(*o) + len + 2);
	if (o == NULL)
		return;
	o->next = NULL;
	o->off = 0;
	o->len = len + 2;
	o->data[0] = (uint8_t)(len >> 8);
	o->data[1] = (uint8_t)len;
	memcpy(o->data + 2, msg, len);
	if (c->out_tail)
		c->out_tail->next = o;
	else
		c->out_head = o;
	c->out_tail = o;
	c->last_ns = clock_ns();
}

void net_tcp_accept(struct net_tcp *t, int lfd)
{
	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage peer;
		socklen_t plen = sizeof(peer);
		int fd = accept4(lfd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		if (t->nconns >= t->max_conns) {
			close(fd); /* over server.tcp_max_clients: shed load */
			continue;
		}
		size_t slot = 0;
		while (t->conns[slot])
			slot++;
		struct tcp_conn *c = calloc(1, sizeof(*c));
		if (c == NULL) {
			close(fd);
			continue;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->fd = fd;
		c->id = ((uint64_t)++t->conn_gen[slot] << 32) | slot;
		c->ev = (struct net_ev){ .kind = NET_EV_TCP_CONN, .fd = fd, .ptr = c };
		memcpy(&c->peer, &peer, plen);
		c->peer_len = plen;
		c->last_ns = clock_ns();
		t->conns[slot] = c;
		t->nconns++;
		struct epoll_event e = { .events = EPOLLIN, .data.ptr = &c->ev };
		if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, fd, &e) != 0)
			conn_close(t, c);
	}
}

static void conn_read(struct net_tcp *t, struct tcp_conn *c, struct query_ctx *x)
{
	for (;;) {
		ssize_t k = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, MSG_DONTWAIT);
		if (k == 0) {
			c->closing = true;
			break;
		}
		if (k < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			conn_close(t, c);
			return;
		}
		c->in_len += (size_t)k;
		c->last_ns = clock_ns();
		/* every complete length-prefixed message in the buffer */
		size_t off = 0;
		while (c->in_len - off >= 2) {
			size_t mlen = ((size_t)c->in[off] << 8) | c->in[off + 1];
			if (c->in_len - off < 2 + mlen)
				break;
			struct query_client cl = { .tcp = true, .udp_fd = -1, .conn_id = c->id, .peer = &c->peer,
			                           .peer_len = c->peer_len };
			int len = query_process(x, &cl, c->in + off + 2, mlen, t->reply, sizeof(t->reply));
			if (len > 0)
				conn_queue(c, t->reply, (size_t)len);
			else if (len < 0)
				c->pending++;
			off += 2 + mlen;
		}
		memmove(c->in, c->in + off, c->in_len - off);
		c->in_len -= off;
	}
	conn_flush(t, c);
}

void net_tcp_event(struct net_tcp *t, struct net_ev *ev, uint32_t events, struct query_ctx *x)
{
	struct tcp_conn *c = ev->ptr;
	if (c->dead)
		return;
	if (events & (EPOLLERR | EPOLLHUP)) {
		/* replies still pending are dropped: conn_by_id fails */
		conn_close(t, c);
		return;
	}
	if (events & EPOLLIN)
		conn_read(t, c, x);
	else if (events & EPOLLOUT)
		conn_flush(t, c);
}

void net_tcp_reply(struct net_tcp *t, uint64_t conn_id, const uint8_t *msg, int len)
{
	struct tcp_conn *c = conn_by_id(t, conn_id);
	if (c == NULL)
		return;
	c->pending--;
	if (len > 0)
		conn_queue(c, msg, (size_t)len);
	conn_flush(t, c);
}

void net_tcp_sweep(struct net_tcp *t)
{
	uint64_t now = clock_ns(), idle = (uint64_t)t->idle_ms * 1000000ull;
	for (size_t i = 0; i < t->max_conns && t->nconns > 0; i++) {
		struct tcp_conn *c = t->conns[i];
		if (c && c->pending == 0 && now - c->last_ns > idle)
			conn_close(t, c);
	}
}
