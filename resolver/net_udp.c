/* SPDX-License-Identifier: BSD-3-Clause */
/* UDP listener: recvmmsg, one query at a time through query_process, sendmmsg. */
#include "resolver/net_udp.h"

#include <sys/socket.h>

#define UDP_BATCH 32
#define UDP_ROUNDS 8 /* batches per wake-up before the loop serves others */

/* Per-thread receive/reply vectors, set up once: recvmmsg only needs the
 * name lengths reset for the entries it filled. */
struct udp_batch {
	bool ready;
	uint8_t in[UDP_BATCH][4096];
	uint8_t out[UDP_BATCH][QUERY_MAX_UDP];
	struct mmsghdr msgs[UDP_BATCH], replies[UDP_BATCH];
	struct iovec iov[UDP_BATCH], riov[UDP_BATCH];
	struct sockaddr_storage peers[UDP_BATCH];
};

static _Thread_local struct udp_batch udp_tls;

void net_udp_read(struct query_ctx *x, int fd)
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
	for (int round = 0; round < UDP_ROUNDS; round++) {
		int n = recvmmsg(fd, b->msgs, UDP_BATCH, MSG_DONTWAIT, NULL);
		if (n <= 0)
			return;
		int nr = 0;
		for (int i = 0; i < n; i++) {
			struct query_client cl = { .tcp = false, .udp_fd = fd, .peer = &b->peers[i],
			                           .peer_len = b->msgs[i].msg_hdr.msg_namelen };
			int len = query_process(x, &cl, b->in[i], b->msgs[i].msg_len, b->out[nr], sizeof(b->out[nr]));
			if (len <= 0)
				continue;
			b->riov[nr] = (struct iovec){ .iov_base = b->out[nr], .iov_len = (size_t)len };
			b->replies[nr].msg_hdr = (struct msghdr){ .msg_name = &b->peers[i],
			                                          .msg_namelen = b->msgs[i].msg_hdr.msg_namelen,
			                                          .msg_iov = &b->riov[nr], .msg_iovlen = 1 };
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
			return;
	}
}

void net_udp_send(int fd, const struct sockaddr_storage *peer, socklen_t peer_len, const uint8_t *msg, size_t len)
{
	sendto(fd, msg, len, MSG_DONTWAIT, (const struct sockaddr *)peer, peer_len);
}
