/* SPDX-License-Identifier: BSD-3-Clause */
/* UDP listener: recvmmsg, one query at a time through query_process, sendmmsg. */
#include "resolver/serve/net_udp.h"

#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "resolver/serve/net_proxy.h"

#define UDP_BATCH 32
#define UDP_ROUNDS 8 /* batches per wake-up before the loop serves others */
#define UDP_CTRL CMSG_SPACE(sizeof(struct in6_pktinfo))

/* Per-thread receive/reply vectors, set up once: recvmmsg only needs the
 * name lengths reset for the entries it filled. Control buffers are used
 * only for wildcard sockets (the destination address of each datagram). */
struct udp_batch {
	bool ready;
	uint8_t in[UDP_BATCH][4096];
	uint8_t out[UDP_BATCH][QUERY_MAX_UDP];
	struct mmsghdr msgs[UDP_BATCH], replies[UDP_BATCH];
	struct iovec iov[UDP_BATCH], riov[UDP_BATCH];
	struct sockaddr_storage peers[UDP_BATCH], locals[UDP_BATCH];
	struct sockaddr_storage clients[UDP_BATCH]; /* behind a balancer: the client its PROXY header names */
	_Alignas(struct cmsghdr) uint8_t ctrl[UDP_BATCH][UDP_CTRL];
	_Alignas(struct cmsghdr) uint8_t rctrl[UDP_BATCH][UDP_CTRL];
};

static _Thread_local struct udp_batch udp_tls;

/* The destination of a datagram received on a wildcard socket. @return false if not reported. */
static bool local_from_cmsg(struct msghdr *m, struct sockaddr_storage *local)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;
			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			struct sockaddr_in *s4 = (struct sockaddr_in *)local;
			memset(local, 0, sizeof(*local));
			s4->sin_family = AF_INET;
			s4->sin_addr = pi.ipi_addr;
			return true;
		}
		if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
			struct in6_pktinfo pi;
			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)local;
			memset(local, 0, sizeof(*local));
			s6->sin6_family = AF_INET6;
			s6->sin6_addr = pi.ipi6_addr;
			return true;
		}
	}
	return false;
}

/* Put "send from local" into a reply's control buffer. @return its length. */
static size_t cmsg_from_local(const struct sockaddr_storage *local, uint8_t *buf, size_t cap)
{
	struct msghdr m = { .msg_control = buf, .msg_controllen = cap };
	memset(buf, 0, cap);
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	if (local->ss_family == AF_INET) {
		struct in_pktinfo pi = { .ipi_spec_dst = ((const struct sockaddr_in *)local)->sin_addr };
		c->cmsg_level = IPPROTO_IP;
		c->cmsg_type = IP_PKTINFO;
		c->cmsg_len = CMSG_LEN(sizeof(pi));
		memcpy(CMSG_DATA(c), &pi, sizeof(pi));
		return CMSG_SPACE(sizeof(pi));
	}
	struct in6_pktinfo pi = { .ipi6_addr = ((const struct sockaddr_in6 *)local)->sin6_addr };
	c->cmsg_level = IPPROTO_IPV6;
	c->cmsg_type = IPV6_PKTINFO;
	c->cmsg_len = CMSG_LEN(sizeof(pi));
	memcpy(CMSG_DATA(c), &pi, sizeof(pi));
	return CMSG_SPACE(sizeof(pi));
}

void net_udp_read(struct query_ctx *x, int fd, bool wildcard)
{
	struct udp_batch *b = &udp_tls;
	if (!b->ready) {
		for (int i = 0; i < UDP_BATCH; i++) {
			b->iov[i] = (struct iovec){ .iov_base = b->in[i], .iov_len = sizeof(b->in[i]) };
			b->msgs[i].msg_hdr = (struct msghdr){ .msg_name = &b->peers[i],
			                                      .msg_namelen = sizeof(b->peers[i]),
			                                      .msg_iov = &b->iov[i], .msg_iovlen = 1 };
		}
		b->ready = true;
	}
	/* dnstap logs the listener's address: a wildcard socket's comes with each datagram */
	struct sockaddr_storage bound;
	const struct sockaddr_storage *listener = NULL;
	socklen_t blen = sizeof(bound);
	if (x->tap && !wildcard && getsockname(fd, (struct sockaddr *)&bound, &blen) == 0)
		listener = &bound;
	for (int round = 0; round < UDP_ROUNDS; round++) {
		for (int i = 0; wildcard && i < UDP_BATCH; i++) {
			b->msgs[i].msg_hdr.msg_control = b->ctrl[i];
			b->msgs[i].msg_hdr.msg_controllen = sizeof(b->ctrl[i]);
		}
		int n = recvmmsg(fd, b->msgs, UDP_BATCH, MSG_DONTWAIT, NULL);
		if (n <= 0)
			break;
		int nr = 0;
		for (int i = 0; i < n; i++) {
			struct query_client cl = { .tcp = false, .udp_fd = fd, .peer = &b->peers[i],
			                           .peer_len = b->msgs[i].msg_hdr.msg_namelen };
			const uint8_t *pkt = b->in[i];
			size_t plen = b->msgs[i].msg_len;
			socklen_t clen;
			int hdr = net_proxy_take(x->snap, x->ctr, &b->peers[i], pkt, plen, false, &b->clients[i], &clen);
			if (hdr < 0)
				continue; /* refused: counted and logged */
			if (hdr > 0) { /* the reply goes back through the balancer */
				counter_inc(&x->ctr->proxied);
				pkt += hdr;
				plen -= (size_t)hdr;
				if (clen != 0) {
					cl.via = cl.peer;
					cl.via_len = cl.peer_len;
					cl.peer = &b->clients[i];
					cl.peer_len = clen;
				}
			}
			if (wildcard && local_from_cmsg(&b->msgs[i].msg_hdr, &b->locals[i]))
				cl.local = &b->locals[i];
			cl.listener = cl.local ? cl.local : listener;
			int len = query_process(x, &cl, pkt, plen, b->out[nr], sizeof(b->out[nr]));
			if (len <= 0)
				continue;
			b->riov[nr] = (struct iovec){ .iov_base = b->out[nr], .iov_len = (size_t)len };
			b->replies[nr].msg_hdr = (struct msghdr){ .msg_name = &b->peers[i],
			                                          .msg_namelen = b->msgs[i].msg_hdr.msg_namelen,
			                                          .msg_iov = &b->riov[nr], .msg_iovlen = 1 };
			if (cl.local) {
				b->replies[nr].msg_hdr.msg_control = b->rctrl[nr];
				b->replies[nr].msg_hdr.msg_controllen = cmsg_from_local(cl.local, b->rctrl[nr],
				                                                        sizeof(b->rctrl[nr]));
			}
			nr++;
		}
		for (int i = 0; i < n; i++)
			b->msgs[i].msg_hdr.msg_namelen = sizeof(b->peers[i]);
		int sent = 0;
		while (sent < nr) {
			int k = sendmmsg(fd, b->replies + sent, (unsigned)(nr - sent), MSG_DONTWAIT);
			if (k <= 0)
				break; /* a full socket buffer drops the rest, as UDP may */
			sent += k;
		}
		if (n < UDP_BATCH)
			break;
	}
	if (wildcard) /* the vectors are shared by every socket of the thread */
		for (int i = 0; i < UDP_BATCH; i++) {
			b->msgs[i].msg_hdr.msg_control = NULL;
			b->msgs[i].msg_hdr.msg_controllen = 0;
		}
}

void net_udp_send(int fd, const struct sockaddr_storage *peer, socklen_t peer_len,
                  const struct sockaddr_storage *local, const uint8_t *msg, size_t len)
{
	struct iovec iov = { .iov_base = (void *)msg, .iov_len = len };
	_Alignas(struct cmsghdr) uint8_t ctrl[UDP_CTRL];
	struct msghdr m = { .msg_name = (void *)peer, .msg_namelen = peer_len, .msg_iov = &iov, .msg_iovlen = 1 };
	if (local) {
		m.msg_control = ctrl;
		m.msg_controllen = cmsg_from_local(local, ctrl, sizeof(ctrl));
	}
	sendmsg(fd, &m, MSG_DONTWAIT);
}
