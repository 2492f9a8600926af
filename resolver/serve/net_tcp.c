/* SPDX-License-Identifier: BSD-3-Clause */
/* TCP and DoT connections: accept (per-client and total limits), a balancer's PROXY header, the TLS handshake,
 * length-prefixed queries in, replies queued and flushed, deadlines. */
#include "resolver/serve/net_tcp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "resolver/base/clock.h"
#include "resolver/base/log.h"
#include "resolver/base/tls.h"
#include "resolver/serve/doh.h"
#include "resolver/serve/net_proxy.h"
#include "resolver/serve/proxy.h"
#include "resolver/view/classify.h"
#include "util/hash.h"

/*
 * What one client cannot do to the others:
 *  - make us queue replies it does not read: above tcp_out_max queued bytes
 *    (or TCP_PENDING_MAX queries waiting for a resolution) its connection is
 *    not read until it has taken half; the kernel's buffers then stop it;
 *  - hold a connection with stray bytes: idle time runs from the last
 *    complete query or the last reply bytes it took, and a message must be
 *    whole within tcp_message_ms of its first byte;
 *  - hold many connections: tcp_max_per_client per address (IPv6: per /64)
 *    across all threads, and a full thread closes its longest-idle
 *    connection for a new one.
 *
 * And no connection outlives its use: a query dropped on purpose (policy,
 * rate, garbage; query_process returns 0) ends the connection once the
 * replies it owes are out, instead of leaving a client to wait for one
 * that never comes; and a connection its client closed is closed after
 * tcp_idle_ms without a reply even when queries are still pending, so a
 * reply lost on the way cannot keep it in CLOSE-WAIT for good.
 */

#define TCP_PENDING_MAX 100u    /* queries waiting for a resolution: reading pauses */
#define TCP_PENDING_RESUME 50u  /* ... and resumes at this many */
#define TCP_IOV_MAX 64          /* replies per sendmsg */
#define TCP_READ_CHUNK 2048     /* input buffer to start with; grown to a message's size, freed when empty */
#define TLS_RECORD 16384        /* replies coalesced into one TLS record (its largest plaintext) */

/*
 * Memory per connection: an idle one holds its struct (a few hundred
 * bytes) and, over TLS, OpenSSL's SSL without record buffers
 * (SSL_MODE_RELEASE_BUFFERS); its input buffer exists only while part of
 * a message waits, its output only while replies wait.
 */

/* Where a connection is in its life. */
enum conn_stage {
	STAGE_PROXY,     /* from server.proxy_from: the PROXY v2 header first (peeked, then taken) */
	STAGE_HANDSHAKE, /* DoT: the TLS handshake */
	STAGE_DNS,       /* length-prefixed messages both ways */
};

struct tcp_out {
	struct tcp_out *next;
	size_t len, off;
	uint8_t data[];
};

struct tcp_conn {
	struct net_ev ev;
	uint64_t id;              /* (generation << 32) | slot */
	int fd;
	struct sockaddr_storage peer;
	socklen_t peer_len;
	uint32_t client[2];       /* this client's counters in the shared table */
	bool counted;             /* client[] holds a count of ours */
	bool paused;              /* not read: too much output queued or too many queries pending */
	bool closing;             /* peer closed its side, or a query was dropped: close once replies are out */
	bool dead;                /* closed; freed after the current event batch */
	bool on_idle;             /* on the thread's idle list */
	uint32_t events;          /* registered with epoll */
	unsigned pending;         /* queries waiting for a resolution */
	struct tcp_out *out_head, *out_tail;
	size_t out_bytes;         /* queued, not yet written */
	uint64_t active_ns;       /* last complete query or reply bytes written: idle time runs from here */
	uint64_t msg_ns;          /* first byte of the incomplete message at the head of in[]; 0 = none */
	uint64_t listed_ns;       /* active_ns when put on the idle list */
	struct tcp_conn *idle_prev, *idle_next;
	struct tcp_conn *next_dead;
	struct sockaddr_storage local; /* dnstap: the address the client connected to; ss_family 0 = not asked yet */
	enum conn_stage stage;
	bool proxied;             /* the client was named by a balancer's PROXY header */
	bool started;             /* plain TCP: its first bytes were checked for a stray PROXY header */
	bool tls_want_write;      /* OpenSSL needs the socket writable to go on (handshake, a read) */
	SSL *ssl;                 /* DoT and DoH; NULL for plain TCP */
	struct doh_session *doh;  /* DoH, once the handshake chose HTTP/2 or HTTP/1.1; NULL: DNS framing */
	struct net_tcp *owner;    /* for the DoH session's callback */
	uint64_t stage_ns;        /* PROXY and handshake stages: when it began */
	uint8_t *in;              /* what was read and not yet taken; NULL when nothing */
	size_t in_len, in_cap;
};

struct net_tcp {
	int epfd;
	struct tcp_conn **conns;
	uint32_t *conn_gen;
	uint32_t *free_slots;     /* a stack of free indices of conns */
	size_t max_conns, nconns, nfree;
	struct tcp_conn *dead;    /* closed this batch: later events may still name them */
	struct tcp_conn *idle_head, *idle_tail; /* no query pending, nothing queued; oldest activity first */
	uint64_t idle_ns, message_ns;
	size_t out_max;
	unsigned max_per_client;
	struct counters *ctr;
	struct query_ctx *x;      /* of the last event: for queries held back while paused */
	struct tls_slot *tls; /* DoT, DoH: where each new connection's TLS context comes from; NULL: plain TCP */
	bool https;               /* DoH: HTTP after the handshake */
	char *https_path;         /* server.https_path */
	uint64_t handshake_ns;    /* DoT: accept to the end of the handshake (also a PROXY header's deadline) */
	uint8_t reply[2 + 65535];
	uint8_t record[TLS_RECORD]; /* DoT: replies gathered for one SSL_write */
};

/*
 * Connections per client, shared by every listener thread: a count-min
 * sketch. Each client (IPv4 address, IPv6 /64) owns two counters chosen by a
 * keyed hash (a random key per process, so no one outside can aim at another
 * client's counters) and is over its limit only when both are; two clients
 * count together only if they share both counters. Increments are atomic:
 * a client connecting on two threads at once cannot pass its limit.
 */
#define CLIENT_BITS 16
#define CLIENT_MASK ((1u << CLIENT_BITS) - 1u)

static _Atomic uint32_t client_count[1u << CLIENT_BITS];
static struct hash_key client_key;
static pthread_once_t client_once = PTHREAD_ONCE_INIT;

static void client_init(void)
{
	hash_key_random(&client_key);
}

/* The counters of a peer; false for an address family we do not count. */
static bool client_slots(const struct sockaddr_storage *peer, uint32_t slot[2])
{
	uint8_t key[9];
	size_t len;
	if (peer->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)peer;
		key[0] = 4;
		memcpy(key + 1, &sin->sin_addr, 4);
		len = 5;
	} else if (peer->ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)peer;
		if (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)) {
			key[0] = 4;
			memcpy(key + 1, sin6->sin6_addr.s6_addr + 12, 4);
			len = 5;
		} else {
			key[0] = 6;
			memcpy(key + 1, sin6->sin6_addr.s6_addr, 8); /* the /64 */
			len = 9;
		}
	} else {
		return false;
	}
	uint64_t h = hash_bytes(&client_key, key, len);
	slot[0] = (uint32_t)h & CLIENT_MASK;
	slot[1] = (uint32_t)(h >> 32) & CLIENT_MASK;
	if (slot[1] == slot[0])
		slot[1] ^= 1u;
	return true;
}

static void client_release(const uint32_t slot[2])
{
	atomic_fetch_sub_explicit(&client_count[slot[0]], 1, memory_order_relaxed);
	atomic_fetch_sub_explicit(&client_count[slot[1]], 1, memory_order_relaxed);
}

/* Count one more connection of the client; false (nothing counted) over max. */
static bool client_acquire(const uint32_t slot[2], unsigned max)
{
	uint32_t a = atomic_fetch_add_explicit(&client_count[slot[0]], 1, memory_order_relaxed) + 1;
	uint32_t b = atomic_fetch_add_explicit(&client_count[slot[1]], 1, memory_order_relaxed) + 1;
	if ((a < b ? a : b) <= max)
		return true;
	client_release(slot);
	return false;
}

struct net_tcp *net_tcp_new(int epfd, const struct conf *c, struct counters *ctr, struct tls_slot *tls, bool https)
{
	pthread_once(&client_once, client_init);
	struct net_tcp *t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	t->epfd = epfd;
	t->ctr = ctr;
	t->tls = tls;
	t->https = https;
	if (https && (t->https_path = strdup(c->server.https_path)) == NULL) {
		free(t);
		return NULL;
	}
	t->max_conns = c->server.tcp_max_clients ? c->server.tcp_max_clients : 1000;
	if (tls)
		t->max_conns = c->server.tls_max_clients ? c->server.tls_max_clients : 10000;
	t->handshake_ns = (uint64_t)(tls && c->server.tls_handshake_ms ? c->server.tls_handshake_ms
	                             : c->server.tcp_message_ms ? c->server.tcp_message_ms : 2000) * 1000000ull;
	t->idle_ns = (uint64_t)(c->server.tcp_idle_ms ? c->server.tcp_idle_ms : 10000) * 1000000ull;
	t->message_ns = (uint64_t)(c->server.tcp_message_ms ? c->server.tcp_message_ms : 2000) * 1000000ull;
	t->out_max = c->server.tcp_out_max ? (size_t)c->server.tcp_out_max : 256 * 1024;
	t->max_per_client = c->server.tcp_max_per_client ? c->server.tcp_max_per_client : 16;
	t->conns = calloc(t->max_conns, sizeof(*t->conns));
	t->conn_gen = calloc(t->max_conns, sizeof(*t->conn_gen));
	t->free_slots = calloc(t->max_conns, sizeof(*t->free_slots));
	if (t->conns == NULL || t->conn_gen == NULL || t->free_slots == NULL) {
		net_tcp_free(t);
		return NULL;
	}
	for (size_t i = 0; i < t->max_conns; i++)
		t->free_slots[i] = (uint32_t)(t->max_conns - 1 - i); /* slot 0 on top */
	t->nfree = t->max_conns;
	return t;
}

static void idle_unlink(struct net_tcp *t, struct tcp_conn *c)
{
	if (!c->on_idle)
		return;
	if (c->idle_prev)
		c->idle_prev->idle_next = c->idle_next;
	else
		t->idle_head = c->idle_next;
	if (c->idle_next)
		c->idle_next->idle_prev = c->idle_prev;
	else
		t->idle_tail = c->idle_prev;
	c->idle_prev = c->idle_next = NULL;
	c->on_idle = false;
}

/*
 * Keep the idle list in order of last activity: a connection joins at the
 * tail when it becomes idle or is active again while idle (activity only
 * grows, so the head is the longest idle). Bytes of an incomplete message
 * are not activity and do not move it.
 */
static void conn_relist(struct net_tcp *t, struct tcp_conn *c)
{
	bool idle = c->pending == 0 && c->out_head == NULL;
	if (!idle) {
		idle_unlink(t, c);
		return;
	}
	if (c->on_idle && c->listed_ns == c->active_ns)
		return;
	idle_unlink(t, c);
	c->idle_prev = t->idle_tail;
	if (t->idle_tail)
		t->idle_tail->idle_next = c;
	else
		t->idle_head = c;
	t->idle_tail = c;
	c->on_idle = true;
	c->listed_ns = c->active_ns;
}

static void conn_close(struct net_tcp *t, struct tcp_conn *c)
{
	if (c->dead)
		return;
	size_t slot = (size_t)(c->id & 0xffffffffu);
	epoll_ctl(t->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	if (c->ssl) {
		if (c->stage == STAGE_DNS)
			SSL_shutdown(c->ssl); /* close_notify, if the socket takes it now; no waiting for the peer's */
		SSL_free(c->ssl);
		c->ssl = NULL;
		ERR_clear_error();
	}
	doh_session_free(c->doh);
	c->doh = NULL;
	close(c->fd);
	free(c->in);
	c->in = NULL;
	c->in_len = c->in_cap = 0;
	while (c->out_head) {
		struct tcp_out *o = c->out_head;
		c->out_head = o->next;
		free(o);
	}
	c->out_tail = NULL;
	c->out_bytes = 0;
	idle_unlink(t, c);
	if (c->counted)
		client_release(c->client);
	c->counted = false;
	t->conns[slot] = NULL;
	t->free_slots[t->nfree++] = (uint32_t)slot;
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
	if (t->conns && t->free_slots)
		for (size_t i = 0; i < t->max_conns; i++)
			if (t->conns[i])
				conn_close(t, t->conns[i]);
	net_tcp_end_batch(t);
	free(t->conns);
	free(t->conn_gen);
	free(t->free_slots);
	free(t->https_path);
	free(t);
}

static struct tcp_conn *conn_by_id(struct net_tcp *t, uint64_t id)
{
	size_t slot = (size_t)(id & 0xffffffffu);
	if (slot >= t->max_conns || t->conns[slot] == NULL || t->conns[slot]->id != id)
		return NULL;
	return t->conns[slot];
}

/* Is a whole message at the head of in[]? */
static bool conn_has_message(const struct tcp_conn *c)
{
	return c->in_len >= 2 && c->in_len >= 2 + (((size_t)c->in[0] << 8) | c->in[1]);
}

static bool conn_over(const struct net_tcp *t, const struct tcp_conn *c)
{
	return c->out_bytes > t->out_max || c->pending >= TCP_PENDING_MAX;
}

static void conn_set_events(struct net_tcp *t, struct tcp_conn *c)
{
	uint32_t events = c->closing || c->paused ? 0 : EPOLLIN;
	if (c->stage != STAGE_DNS)
		events = EPOLLIN;
	if ((c->out_head && c->stage == STAGE_DNS) || c->tls_want_write)
		events |= EPOLLOUT;
	if (events == c->events)
		return;
	struct epoll_event e = { .events = events, .data.ptr = &c->ev };
	if (epoll_ctl(t->epfd, EPOLL_CTL_MOD, c->fd, &e) == 0)
		c->events = events;
}

/* k bytes of the queued output were written. */
static void out_consume(struct tcp_conn *c, size_t k)
{
	c->active_ns = clock_ns(); /* the client takes replies */
	c->out_bytes -= k;
	while (k > 0) {
		struct tcp_out *o = c->out_head;
		size_t rest = o->len - o->off;
		if (k < rest) {
			o->off += k;
			break;
		}
		k -= rest;
		c->out_head = o->next;
		free(o);
	}
	if (c->out_head == NULL)
		c->out_tail = NULL;
}

/*
 * A failed TLS call: WANT_READ and WANT_WRITE say what the socket must
 * become; anything else ends the connection.
 * @return false when it is to be closed.
 */
static bool tls_wait(struct tcp_conn *c, int rc)
{
	int e = SSL_get_error(c->ssl, rc);
	if (e == SSL_ERROR_WANT_READ) {
		c->tls_want_write = false;
		return true;
	}
	if (e == SSL_ERROR_WANT_WRITE) {
		c->tls_want_write = true;
		return true;
	}
	ERR_clear_error();
	return false;
}

/*
 * DoT: the queued replies, gathered into records of up to TLS_RECORD bytes
 * (one SSL_write each, not one per reply). After WANT_WRITE, OpenSSL wants
 * the same bytes again: the queue only grows at its tail, so gathering
 * again from its head gives them (SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER).
 */
static bool tls_flush(struct net_tcp *t, struct tcp_conn *c)
{
	while (c->out_head) {
		size_t n = 0;
		for (struct tcp_out *o = c->out_head; o && n < sizeof(t->record); o = o->next) {
			size_t take = o->len - o->off;
			if (take > sizeof(t->record) - n)
				take = sizeof(t->record) - n;
			memcpy(t->record + n, o->data + o->off, take);
			n += take;
		}
		ERR_clear_error();
		int k = SSL_write(c->ssl, t->record, (int)n);
		if (k <= 0) {
			if (tls_wait(c, k))
				return true;
			conn_close(t, c);
			return false;
		}
		c->tls_want_write = false;
		out_consume(c, (size_t)k);
	}
	return true;
}

/* Write queued output; @return false when the connection was closed. */
static bool conn_flush(struct net_tcp *t, struct tcp_conn *c)
{
	if (c->ssl)
		return tls_flush(t, c);
	while (c->out_head) {
		struct iovec iov[TCP_IOV_MAX];
		int n = 0;
		size_t want = 0;
		for (struct tcp_out *o = c->out_head; o && n < TCP_IOV_MAX; o = o->next, n++) {
			iov[n] = (struct iovec){ .iov_base = o->data + o->off, .iov_len = o->len - o->off };
			want += o->len - o->off;
		}
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)n };
		ssize_t k = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			conn_close(t, c);
			return false;
		}
		if (k == 0)
			break;
		out_consume(c, (size_t)k);
		if ((size_t)k < want)
			break; /* the socket's buffer is full */
	}
	return true;
}

/* prefix (plen bytes) then data, queued after what is queued. */
static void out_append(struct tcp_conn *c, const uint8_t *prefix, size_t plen, const uint8_t *data, size_t len)
{
	struct tcp_out *o = malloc(sizeof(*o) + plen + len);
	if (o == NULL)
		return;
	o->next = NULL;
	o->off = 0;
	o->len = plen + len;
	if (plen > 0)
		memcpy(o->data, prefix, plen);
	memcpy(o->data + plen, data, len);
	if (c->out_tail)
		c->out_tail->next = o;
	else
		c->out_head = o;
	c->out_tail = o;
	c->out_bytes += o->len;
}

/* Bytes as they are (an HTTP session's output). */
static void conn_queue_raw(struct tcp_conn *c, const uint8_t *data, size_t len)
{
	out_append(c, NULL, 0, data, len);
}

/* A DNS message, after its two-byte length. */
static void conn_queue(struct tcp_conn *c, const uint8_t *msg, size_t len)
{
	uint8_t prefix[2] = { (uint8_t)(len >> 8), (uint8_t)len };
	out_append(c, prefix, sizeof(prefix), msg, len);
}

/* Answer the whole messages at the head of in[] until the connection is over its limits. */
static void conn_take_messages(struct net_tcp *t, struct tcp_conn *c)
{
	uint64_t now = clock_ns();
	size_t off = 0;
	while (!conn_over(t, c) && c->in_len - off >= 2) {
		size_t mlen = ((size_t)c->in[off] << 8) | c->in[off + 1];
		if (c->in_len - off < 2 + mlen)
			break;
		struct query_client cl = { .tcp = true, .tls = c->ssl != NULL, .udp_fd = -1, .conn_id = c->id,
		                           .peer = &c->peer, .peer_len = c->peer_len };
		if (c->proxied)
			counter_inc(&t->ctr->proxied);
		if (t->x->tap) { /* dnstap logs the listener's address: asked once per connection */
			socklen_t llen = sizeof(c->local);
			if (c->local.ss_family == 0)
				getsockname(c->fd, (struct sockaddr *)&c->local, &llen);
			cl.listener = c->local.ss_family != 0 ? &c->local : NULL;
		}
		int len = query_process(t->x, &cl, c->in + off + 2, mlen, t->reply, sizeof(t->reply));
		if (len > 0)
			conn_queue(c, t->reply, (size_t)len);
		else if (len < 0)
			c->pending++;
		off += 2 + mlen;
		c->active_ns = now; /* a complete query */
		c->msg_ns = 0;
		if (len == 0) {
			/* dropped on purpose: no reply will come, so the client learns
			 * it from the close, after what is owed; the rest is not read */
			c->closing = true;
			off = c->in_len;
			break;
		}
	}
	if (off > 0) {
		memmove(c->in, c->in + off, c->in_len - off);
		c->in_len -= off;
	}
	if (c->in_len == 0) { /* nothing waits: an idle connection holds no buffer */
		free(c->in);
		c->in = NULL;
		c->in_cap = 0;
	}
	/* the next message's clock starts with its first byte, already here */
	if (c->in_len > 0 && c->msg_ns == 0 && !conn_has_message(c))
		c->msg_ns = now;
}

/*
 * After anything happened to c: write what the socket takes, pause or
 * resume reading, answer queries held back while paused, then register the
 * events c now wants and keep the idle list in order.
 * @return false when c was closed.
 */
static bool conn_service(struct net_tcp *t, struct tcp_conn *c)
{
	for (;;) {
		if (!conn_flush(t, c))
			return false;
		if (conn_over(t, c)) {
			if (!c->paused) {
				c->paused = true;
				c->msg_ns = 0; /* the client cannot finish a message while we do not read */
				counter_inc(&t->ctr->tcp_paused);
			}
			break;
		}
		if (c->paused) {
			if (c->out_bytes >= t->out_max / 2 || c->pending > TCP_PENDING_RESUME)
				break;
			c->paused = false;
		}
		if (!conn_has_message(c) || t->x == NULL)
			break;
		conn_take_messages(t, c);
	}
	if (c->in_len > 0 && c->msg_ns == 0 && !c->paused && !conn_has_message(c))
		c->msg_ns = clock_ns(); /* resumed with half a message: a fresh deadline */
	if (c->closing && c->out_head == NULL && c->pending == 0 && !conn_has_message(c)) {
		conn_close(t, c);
		return false;
	}
	conn_set_events(t, c);
	conn_relist(t, c);
	return true;
}

void net_tcp_accept(struct net_tcp *t, int lfd, struct query_ctx *x)
{
	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage peer;
		socklen_t plen = sizeof(peer);
		int fd = accept4(lfd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		/* a balancer's connections are counted against the client its header names, not against it */
		bool proxy = classify_proxy(x->snap, &peer);
		uint32_t slots[2];
		bool counted = !proxy && client_slots(&peer, slots);
		if (counted && !client_acquire(slots, t->max_per_client)) {
			close(fd); /* over server.tcp_max_per_client */
			counter_inc(&t->ctr->tcp_refused_client);
			continue;
		}
		if (t->nfree == 0) {
			if (t->idle_head == NULL) {
				close(fd); /* full of busy connections: shed load */
				if (counted)
					client_release(slots);
				counter_inc(&t->ctr->tcp_refused_full);
				continue;
			}
			conn_close(t, t->idle_head); /* the longest idle makes room */
			counter_inc(&t->ctr->tcp_evicted);
		}
		struct tcp_conn *c = malloc(sizeof(*c));
		SSL *ssl = t->tls ? tls_slot_ssl(t->tls, fd) : NULL;
		if (c == NULL || (t->tls && ssl == NULL)) {
			free(c);
			SSL_free(ssl);
			close(fd);
			if (counted)
				client_release(slots);
			continue;
		}
		memset(c, 0, sizeof(*c));
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		size_t slot = t->free_slots[--t->nfree];
		c->fd = fd;
		c->id = ((uint64_t)++t->conn_gen[slot] << 32) | slot;
		c->ev = (struct net_ev){ .kind = t->https ? NET_EV_HTTPS_CONN : t->tls ? NET_EV_TLS_CONN : NET_EV_TCP_CONN,
		                         .fd = fd, .ptr = c };
		memcpy(&c->peer, &peer, plen);
		c->peer_len = plen;
		c->counted = counted;
		if (counted)
			memcpy(c->client, slots, sizeof(slots));
		c->ssl = ssl;
		c->stage = proxy ? STAGE_PROXY : ssl ? STAGE_HANDSHAKE : STAGE_DNS;
		c->active_ns = c->stage_ns = clock_ns();
		t->conns[slot] = c;
		t->nconns++;
		struct epoll_event e = { .events = EPOLLIN, .data.ptr = &c->ev };
		if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, fd, &e) != 0) {
			conn_close(t, c);
			continue;
		}
		c->events = EPOLLIN;
		conn_relist(t, c);
	}
}

/* Past its message deadline, or its PROXY header or handshake not done in time: close. */
static bool conn_too_slow(struct net_tcp *t, struct tcp_conn *c, uint64_t now)
{
	if (c->stage != STAGE_DNS) {
		if (now - c->stage_ns <= t->handshake_ns)
			return false;
		counter_inc(c->stage == STAGE_PROXY ? &t->ctr->proxy_refused : &t->ctr->tls_handshake_timeout);
		conn_close(t, c);
		return true;
	}
	if (c->msg_ns == 0 || now - c->msg_ns <= t->message_ns)
		return false;
	counter_inc(&t->ctr->tcp_slow_closed);
	conn_close(t, c);
	return true;
}

/*
 * The PROXY v2 header of a balancer's connection: peeked until whole, then
 * taken, so what follows it (a TLS ClientHello, queries) stays in the
 * socket for the next stage. The connection then counts against the
 * client the header names.
 * @return false when the connection was closed or the header is not whole yet.
 */
static bool conn_proxy(struct net_tcp *t, struct tcp_conn *c)
{
	ssize_t k = recv(c->fd, t->reply, PROXY_HDR_MAX, MSG_PEEK | MSG_DONTWAIT);
	if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return false;
	if (k <= 0) {
		conn_close(t, c); /* gone before its header */
		return false;
	}
	struct sockaddr_storage client;
	socklen_t clen;
	int n = net_proxy_take(t->x->snap, t->ctr, &c->peer, t->reply, (size_t)k, true, &client, &clen);
	if (n == NET_PROXY_MORE)
		return false;
	if (n <= 0 || recv(c->fd, t->reply, (size_t)n, MSG_DONTWAIT) != n) {
		conn_close(t, c);
		return false;
	}
	if (clen != 0) {
		memcpy(&c->peer, &client, clen);
		c->peer_len = clen;
	}
	c->proxied = true;
	if (client_slots(&c->peer, c->client)) {
		if (!client_acquire(c->client, t->max_per_client)) {
			counter_inc(&t->ctr->tcp_refused_client);
			conn_close(t, c);
			return false;
		}
		c->counted = true;
	}
	c->stage = c->ssl ? STAGE_HANDSHAKE : STAGE_DNS;
	c->stage_ns = clock_ns();
	return true;
}

/* A failed handshake, logged (rate-limited) with the client and OpenSSL's reason. */
static void tls_report(const struct tcp_conn *c)
{
	static struct log_limit lim;
	char a[INET6_ADDRSTRLEN] = "?", why[160] = "connection closed";
	unsigned long e = ERR_peek_last_error();
	if (e != 0)
		ERR_error_string_n(e, why, sizeof(why));
	if (c->peer.ss_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)&c->peer)->sin_addr, a, sizeof(a));
	else if (c->peer.ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)&c->peer)->sin6_addr, a, sizeof(a));
	log_limited(&lim, LOG_LEVEL_INFO, "TLS handshake with %s failed (DoT or DoH): %s", a, why);
}

/* What the DoH session has to send, queued; its end noted. @return false when the connection was closed. */
static bool conn_doh_pump(struct net_tcp *t, struct tcp_conn *c)
{
	const uint8_t *data;
	long n;
	while ((n = doh_session_output(c->doh, &data)) > 0)
		conn_queue_raw(c, data, (size_t)n);
	if (n < 0) {
		conn_close(t, c);
		return false;
	}
	if (doh_session_done(c->doh))
		c->closing = true;
	return true;
}

/* A DNS query a DoH request carried: through the query path as a DoT query would go, its reply into the session. */
static void conn_doh_query(void *arg, uint32_t id, const uint8_t *msg, size_t len, const struct sockaddr_storage *xff,
                           socklen_t xff_len)
{
	struct tcp_conn *c = arg;
	struct net_tcp *t = c->owner;
	struct query_client cl = { .tcp = true, .tls = true, .https = true, .stream = id, .udp_fd = -1,
	                           .conn_id = c->id, .peer = xff ? xff : &c->peer, .peer_len = xff ? xff_len : c->peer_len };
	if (c->proxied)
		counter_inc(&t->ctr->proxied);
	if (t->x->tap) {
		socklen_t llen = sizeof(c->local);
		if (c->local.ss_family == 0)
			getsockname(c->fd, (struct sockaddr *)&c->local, &llen);
		cl.listener = c->local.ss_family != 0 ? &c->local : NULL;
	}
	int n = query_process(t->x, &cl, msg, len, t->reply, sizeof(t->reply));
	if (n >= 0)
		doh_session_reply(c->doh, id, t->reply, (size_t)n); /* 0: dropped on purpose */
	else
		c->pending++;
	c->active_ns = clock_ns(); /* a complete query */
}

/* DoH: the HTTP session the handshake's ALPN chose (h2, else HTTP/1.1). @return false when closed. */
static bool conn_doh_start(struct net_tcp *t, struct tcp_conn *c)
{
	static const struct doh_ops ops = { .query = conn_doh_query };
	const unsigned char *alpn = NULL;
	unsigned alen = 0;
	SSL_get0_alpn_selected(c->ssl, &alpn, &alen);
	bool h2 = alen == 2 && memcmp(alpn, "h2", 2) == 0;
	c->owner = t;
	/* Forwarded and X-Forwarded-For are believed from a balancer of server.proxy_from only */
	c->doh = doh_session_new(h2, t->https_path, c->proxied, &ops, c);
	if (c->doh == NULL) {
		conn_close(t, c);
		return false;
	}
	return conn_doh_pump(t, c); /* HTTP/2: our SETTINGS go first */
}

/* @return false when the connection was closed or the handshake is not done yet. */
static bool conn_handshake(struct net_tcp *t, struct tcp_conn *c)
{
	ERR_clear_error();
	int rc = SSL_do_handshake(c->ssl);
	if (rc == 1) {
		c->tls_want_write = false;
		c->stage = STAGE_DNS;
		c->active_ns = clock_ns();
		counter_inc(&t->ctr->tls_handshakes);
		if (SSL_session_reused(c->ssl))
			counter_inc(&t->ctr->tls_resumed);
		return !t->https || conn_doh_start(t, c);
	}
	int e = SSL_get_error(c->ssl, rc);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
		c->tls_want_write = e == SSL_ERROR_WANT_WRITE;
		conn_set_events(t, c);
		/* the client is getting on with it: when the table is full, connections that never sent a
		 * byte go first (they stay at the head of the idle list); tls_handshake_ms still bounds it */
		c->active_ns = clock_ns();
		conn_relist(t, c);
		return false;
	}
	counter_inc(&t->ctr->tls_handshake_failed);
	tls_report(c);
	ERR_clear_error();
	conn_close(t, c);
	return false;
}

/*
 * A plain connection from outside server.proxy_from that starts with a
 * PROXY header: refused (net_proxy_take counts and logs it), not read as
 * a 3,338-byte message that never ends. Over TLS the handshake refuses it.
 * @return false when the connection was closed.
 */
static bool conn_start_check(struct net_tcp *t, struct tcp_conn *c)
{
	if (c->ssl != NULL || c->proxied) {
		c->started = true;
		return true;
	}
	if (c->in_len < PROXY_SIG_LEN)
		return true;
	c->started = true;
	struct sockaddr_storage client;
	socklen_t clen;
	if (net_proxy_take(t->x->snap, t->ctr, &c->peer, c->in, c->in_len, true, &client, &clen) == 0)
		return true;
	conn_close(t, c);
	return false;
}

/* Room for what comes next: the rest of the message begun, and a chunk more. */
static bool conn_in_room(struct tcp_conn *c)
{
	size_t need = c->in_len + TCP_READ_CHUNK;
	if (c->in_len >= 2) {
		size_t whole = 2 + (((size_t)c->in[0] << 8) | c->in[1]);
		if (whole > need)
			need = whole;
	}
	if (need <= c->in_cap)
		return true;
	uint8_t *p = realloc(c->in, need);
	if (p == NULL)
		return false;
	c->in = p;
	c->in_cap = need;
	return true;
}

/* Read what is there (plain or TLS). @return bytes read, 0 at the peer's end, -1 nothing now, -2 to close. */
static ssize_t conn_recv(struct tcp_conn *c)
{
	size_t room = c->in_cap - c->in_len;
	if (c->ssl == NULL) {
		ssize_t k = recv(c->fd, c->in + c->in_len, room, MSG_DONTWAIT);
		if (k >= 0)
			return k;
		return errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK ? -1 : -2;
	}
	ERR_clear_error();
	int k = SSL_read(c->ssl, c->in + c->in_len, (int)room);
	if (k > 0) {
		c->tls_want_write = false;
		return k;
	}
	int e = SSL_get_error(c->ssl, k);
	if (e == SSL_ERROR_ZERO_RETURN)
		return 0; /* close_notify */
	if (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 && errno == 0)
		return 0; /* the peer closed without close_notify */
	return tls_wait(c, k) ? -1 : -2;
}

static void conn_read(struct net_tcp *t, struct tcp_conn *c)
{
	if (c->stage == STAGE_PROXY && !conn_proxy(t, c))
		return;
	if (c->stage == STAGE_HANDSHAKE && !conn_handshake(t, c))
		return;
	/* over TLS, bytes OpenSSL already holds are read before the loop lets go: the socket may not wake us for them */
	for (int rounds = 0; (rounds < 16 || (c->ssl && SSL_has_pending(c->ssl))) && !c->paused && !c->closing;
	     rounds++) {
		if (!conn_in_room(c))
			break;
		size_t room = c->in_cap - c->in_len;
		errno = 0;
		ssize_t k = conn_recv(c);
		if (k == 0) {
			c->closing = true;
			break;
		}
		if (k == -1)
			break;
		if (k < 0) {
			conn_close(t, c);
			return;
		}
		if (c->doh) { /* HTTP: the session takes every byte; its own limits bound what it keeps */
			int rc = doh_session_input(c->doh, c->in, (size_t)k);
			free(c->in); /* an idle DoH connection holds no input buffer either */
			c->in = NULL;
			c->in_cap = 0;
			if (rc < 0)
				c->closing = true;
			if (!conn_doh_pump(t, c) || !conn_service(t, c))
				return;
			continue;
		}
		uint64_t now = clock_ns();
		if (c->in_len == 0)
			c->msg_ns = now; /* a message starts */
		c->in_len += (size_t)k;
		if (!c->started && !conn_start_check(t, c))
			return;
		if (!conn_service(t, c))
			return;
		if (conn_too_slow(t, c, clock_ns()))
			return;
		if (c->ssl == NULL && (size_t)k < room)
			break; /* read all there was */
	}
	conn_service(t, c);
}

void net_tcp_event(struct net_tcp *t, struct net_ev *ev, uint32_t events, struct query_ctx *x)
{
	struct tcp_conn *c = ev->ptr;
	t->x = x;
	if (c->dead)
		return;
	if (events & (EPOLLERR | EPOLLHUP)) {
		/* replies still pending are dropped: conn_by_id fails */
		conn_close(t, c);
		return;
	}
	/* a stage before DNS, or OpenSSL waiting to write in the middle of a read: the read goes on */
	if ((events & EPOLLIN) || c->stage != STAGE_DNS || c->tls_want_write)
		conn_read(t, c);
	else
		conn_service(t, c);
}

void net_tcp_reply(struct net_tcp *t, uint64_t conn_id, uint32_t stream, const uint8_t *msg, int len)
{
	struct tcp_conn *c = conn_by_id(t, conn_id);
	if (c == NULL)
		return;
	c->pending--;
	if (c->doh) {
		doh_session_reply(c->doh, stream, msg, len > 0 ? (size_t)len : 0);
		if (conn_doh_pump(t, c))
			conn_service(t, c);
		return;
	}
	if (len > 0) {
		conn_queue(c, msg, (size_t)len);
	} else {
		/* a waiter's answer dropped on purpose: as a query dropped at once */
		c->closing = true;
		c->in_len = 0;
		c->msg_ns = 0;
	}
	bool was_paused = c->paused;
	if (!conn_service(t, c))
		return;
	/* resumed over TLS: what OpenSSL read before the pause does not wake the socket */
	if (was_paused && !c->paused && c->ssl && SSL_has_pending(c->ssl))
		conn_read(t, c);
}

void net_tcp_sweep(struct net_tcp *t)
{
	uint64_t now = clock_ns();
	for (size_t i = 0; i < t->max_conns && t->nconns > 0; i++) {
		struct tcp_conn *c = t->conns[i];
		if (c == NULL || conn_too_slow(t, c, now))
			continue;
		/* queued replies the client does not take are not activity; a
		 * client gone waits for nothing (a pending reply lost: closed) */
		if ((c->pending == 0 || c->closing) && now - c->active_ns > t->idle_ns) {
			counter_inc(&t->ctr->tcp_idle_closed);
			conn_close(t, c);
		}
	}
}
