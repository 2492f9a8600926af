/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The EDNS pool's exchange with a zone's servers (or forward targets, or
 * tier nodes): which server is asked (up, reachable, the zone under its
 * query rate), the ECS-bearing query over UDP or TCP, the reply read whole,
 * the next server when one fails; dnstap of both directions. What a reply
 * means is edns_iter.c's business, and following it resolve_edns.c's.
 */
#include "resolver/pool/edns_exchange.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "resolver/base/clock.h"
#include "resolver/base/log.h"
#include "resolver/pool/edns_health.h"
#include "resolver/pool/edns_res.h"
#include "resolver/pool/edns_sock.h"
#include "wire/names.h"
#include "wire/upstream.h"

#define MAX_TRIES 4       /* upstream attempts per hop */

/*
 * dnstap: the query r just sent (resp NULL) or a response to it, with the
 * ECS option inside, so an operator can see exactly what left for whom.
 */
static void tap_upstream(struct eres *r, const uint8_t *resp, size_t len)
{
	struct sockaddr_storage src;
	socklen_t slen = sizeof(src);
	if (getsockname(r->ex.fd, (struct sockaddr *)&src, &slen) != 0)
		src.ss_family = 0;
	struct dnstap_msg m = { .type = resp ? DNSTAP_RESOLVER_RESPONSE : DNSTAP_RESOLVER_QUERY, .tcp = r->ex.tcp,
	                        .query_addr = src.ss_family != 0 ? &src : NULL,
	                        .response_addr = &r->zone.sv.addr[r->zone.cur % r->zone.sv.naddr],
	                        .query_time = r->ex.sent_rt, .query = resp ? NULL : r->ex.q, .query_len = r->ex.qlen,
	                        .response = resp, .response_len = len, .zone = r->forward ? NULL : r->zone.name,
	                        .zone_len = r->zone.len };
	if (resp)
		m.response_time = dnstap_now();
	dnstap_log(r->t->tap, &m);
}

void edns_exchange_next_server(struct eres *r, const struct wire_ede *ede, const char *why)
{
	edns_sock_close(r);
	r->ex.tcp = false;
	r->zone.cur++;
	if (r->tier) {
		/* the owner failed: once more, on the next node by score (tier_fill) */
		if (r->zone.cur >= r->zone.sv.naddr) {
			edns_res_fail(r, ede == &edns_ede_unreachable ? &edns_ede_tier : ede, why);
			return;
		}
		counter_inc(&r->t->ctr.tier_failovers);
		edns_exchange_query(r);
		return;
	}
	if (r->zone.tries >= MAX_TRIES || r->zone.cur >= r->zone.sv.naddr * 2) {
		edns_res_fail(r, ede, why);
		return;
	}
	edns_exchange_query(r);
}

/* Set r->zone.cur to the server to ask: the first usable from it on, the zone under its rate. @return false: r failed. */
static bool pick_server(struct eres *r)
{
	struct eres_zone *z = &r->zone;
	if (z->sv.naddr == 0) {
		edns_res_fail(r, &edns_ede_no_zone, "no servers");
		return false;
	}
	/* forward targets of a family edns.outgoing does not have go here;
	 * discovered servers were sorted out as they were taken */
	if (edns_sock_keep_sendable(r) == 0) {
		edns_res_fail(r, &edns_ede_family, "no server of an address family edns.outgoing has");
		return false;
	}
	uint64_t now = clock_ns();
	int k = 0;
	/* tier nodes: tier_fill took the nodes up, in order; their health is the tier's */
	while (!r->tier && k < z->sv.naddr && !edns_health_usable(r, &z->sv.addr[(z->cur + k) % z->sv.naddr], now))
		k++;
	if (k == z->sv.naddr) {
		edns_res_fail(r, &edns_ede_down, "every server is down (backing off)");
		return false;
	}
	z->cur += k;
	uint64_t wait_ns;
	if (!r->forward && !edns_health_rate_take(r->t, z->name, z->len, &wait_ns)) {
		counter_inc(&r->t->ctr.zone_limited);
		edns_health_shed_hint_set(r, wait_ns);
		edns_res_fail(r, &edns_ede_rate, "zone query rate exceeded (edns.zone_qps)");
		return false;
	}
	return true;
}

static void log_query(const struct eres *r, const struct sockaddr_storage *to)
{
	char a[INET6_ADDRSTRLEN] = "?", n[512] = "?";
	const void *src = to->ss_family == AF_INET ? (const void *)&((const struct sockaddr_in *)to)->sin_addr
	                                            : (const void *)&((const struct sockaddr_in6 *)to)->sin6_addr;
	inet_ntop(to->ss_family, src, a, sizeof(a));
	wire_name_to_text(r->name, r->name_len, n, sizeof(n));
	log_debug("EDNS query %s type %u to %s%s port %u%s (partition %s)", n, r->job->qtype,
	          r->tier ? "tier node " : "", a, ntohs(((const struct sockaddr_in *)to)->sin_port),
	          r->ex.tcp ? " over TCP" : "", edns_res_part_name(r->job));
}

void edns_exchange_query(struct eres *r)
{
	struct job *job = r->job;
	r->st = E_QUERY;
	if (!pick_server(r))
		return;
	r->zone.tries++;
	const struct sockaddr_storage *to = &r->zone.sv.addr[r->zone.cur % r->zone.sv.naddr];
	r->ex.id = (uint16_t)edns_sock_random();
	/* DO whatever the client said: one cache entry serves DO and non-DO
	 * clients, the DNSSEC records stripped for the latter at reply time */
	int len = wire_query_build(r->ex.id, r->forward, true, r->name, r->name_len, job->qtype, job->qclass, r->ecs,
	                           r->ex.q, sizeof(r->ex.q));
	if (len < 0) {
		edns_res_fail(r, &edns_ede_invalid, "cannot build the query");
		return;
	}
	r->ex.qlen = (size_t)len;
	if (log_get_level() >= LOG_LEVEL_DEBUG)
		log_query(r, to);
	int fd = edns_sock_open(r->t, to, r->ex.tcp);
	if (fd < 0) {
		edns_exchange_next_server(r, &edns_ede_network, strerror(-fd));
		return;
	}
	r->ex.fd = fd;
	r->ex.ev = (struct eev){ .kind = EEV_SOCK, .r = r };
	struct epoll_event e = { .events = r->ex.tcp ? EPOLLOUT : EPOLLIN, .data.ptr = &r->ex.ev };
	if (epoll_ctl(r->t->epfd, EPOLL_CTL_ADD, fd, &e) != 0) {
		edns_exchange_next_server(r, &edns_ede_network, "epoll");
		return;
	}
	r->ex.deadline_ns = clock_ns() + (uint64_t)job->timeout_ms * 1000000ull;
	counter_inc(&r->t->ctr.upstream_queries);
	if (r->tier)
		counter_inc(&r->t->ctr.tier_queries);
	if (!r->ex.tcp && send(fd, r->ex.q, r->ex.qlen, 0) != (ssize_t)r->ex.qlen) {
		edns_exchange_next_server(r, &edns_ede_network, "send failed");
		return;
	}
	if (!r->ex.tcp && r->t->tap) {
		r->ex.sent_rt = dnstap_now();
		tap_upstream(r, NULL, 0);
	}
}

/* One datagram per wake-up; epoll is level-triggered. */
static bool read_udp(struct eres *r, size_t *len)
{
	uint8_t *buf = r->t->buf;
	ssize_t n = recv(r->ex.fd, buf, 65535, MSG_DONTWAIT);
	if (n < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			char why[128];
			snprintf(why, sizeof(why), "receive error: %s", strerror(errno));
			edns_health_timeout(r);
			edns_exchange_next_server(r, &edns_ede_network, why); /* e.g. ICMP port unreachable */
		}
		return false;
	}
	if (r->t->tap)
		tap_upstream(r, buf, (size_t)n);
	*len = (size_t)n;
	return true;
}

/* The TCP connection is up (EPOLLOUT): send the query, length first, then wait for the reply. */
static void send_tcp(struct eres *r, uint32_t events)
{
	if (!(events & EPOLLOUT))
		return;
	uint8_t msg[514];
	msg[0] = (uint8_t)(r->ex.qlen >> 8);
	msg[1] = (uint8_t)r->ex.qlen;
	memcpy(msg + 2, r->ex.q, r->ex.qlen);
	if (send(r->ex.fd, msg, r->ex.qlen + 2, MSG_NOSIGNAL) != (ssize_t)(r->ex.qlen + 2)) {
		edns_exchange_next_server(r, &edns_ede_network, "TCP connect/send failed");
		return;
	}
	r->ex.tcp_sent = true;
	if (r->t->tap) {
		r->ex.sent_rt = dnstap_now();
		tap_upstream(r, NULL, 0);
	}
	struct epoll_event e = { .events = EPOLLIN, .data.ptr = &r->ex.ev };
	epoll_ctl(r->t->epfd, EPOLL_CTL_MOD, r->ex.fd, &e);
}

/* Read what came of the length-prefixed reply; the whole of it goes to the thread's buffer. */
static bool read_tcp(struct eres *r, size_t *len)
{
	if (r->ex.tbuf == NULL) {
		r->ex.tbuf = malloc(65535 + 2);
		if (r->ex.tbuf == NULL) {
			edns_res_fail(r, NULL, "out of memory");
			return false;
		}
	}
	ssize_t n = recv(r->ex.fd, r->ex.tbuf + r->ex.tlen, 65537 - r->ex.tlen, MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
		edns_exchange_next_server(r, &edns_ede_network, "TCP connection closed");
		return false;
	}
	if (n < 0)
		return false;
	r->ex.tlen += (size_t)n;
	if (r->ex.tlen < 2)
		return false;
	size_t want = ((size_t)r->ex.tbuf[0] << 8) | r->ex.tbuf[1];
	if (r->ex.tlen < want + 2)
		return false;
	memcpy(r->t->buf, r->ex.tbuf + 2, want);
	if (r->t->tap)
		tap_upstream(r, r->t->buf, want);
	*len = want;
	return true;
}

bool edns_exchange_read(struct eres *r, uint32_t events, size_t *len)
{
	if (!r->ex.tcp)
		return read_udp(r, len);
	if (!r->ex.tcp_sent) {
		send_tcp(r, events);
		return false;
	}
	return read_tcp(r, len);
}
