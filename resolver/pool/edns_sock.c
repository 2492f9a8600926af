/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The EDNS pool's upstream sockets: from which source address (edns.outgoing,
 * round robin per thread and family, or the kernel's choice), from a random
 * port of our own, and which servers the pool can reach at all.
 */
#include "resolver/pool/edns_sock.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <unistd.h>

#include "resolver/base/clock.h"
#include "resolver/base/log.h"

uint32_t edns_sock_random(void)
{
	uint32_t v;
	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
		v = (uint32_t)clock_ns() * 2654435761u;
	return v;
}

static int fam_idx(int family)
{
	return family == AF_INET6;
}

int edns_sock_outgoing(struct edns_outgoing *o, const struct conf_addr *a, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int f = fam_idx(a[i].ss.ss_family);
		struct conf_addr *grown = realloc(o->addr[f], (o->n[f] + 1) * sizeof(*grown));
		if (grown == NULL)
			return -1;
		o->addr[f] = grown;
		o->addr[f][o->n[f]++] = a[i];
	}
	return 0;
}

void edns_sock_outgoing_free(struct edns_outgoing *o)
{
	free(o->addr[0]);
	free(o->addr[1]);
}

bool edns_sock_sendable(const struct resolve_edns *p, int family)
{
	return (p->out.n[0] == 0 && p->out.n[1] == 0) || p->out.n[fam_idx(family)] > 0;
}

int edns_sock_keep_sendable(struct eres *r)
{
	const struct resolve_edns *p = r->t->pool;
	struct edns_servers *sv = &r->zone.sv;
	int n = 0;
	for (int i = 0; i < sv->naddr; i++)
		if (edns_sock_sendable(p, sv->addr[i].ss_family))
			sv->addr[n++] = sv->addr[i];
	sv->naddr = n;
	return n;
}

/* The next source address of to's family, round robin per thread; NULL: any. */
static const struct conf_addr *pick_source(struct ethread *t, int family)
{
	int f = fam_idx(family);
	size_t n = t->pool->out.n[f];
	return n == 0 ? NULL : &t->pool->out.addr[f][t->out_next[f]++ % n];
}

static void set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

/* TCP, or 8 random ports taken: the kernel's port, but src's address
 * (connect() alone would pick the address by route). For TCP the port waits
 * for connect(), which can then share it among destinations, instead of one
 * per socket at bind(). @return 0 or -errno. */
static int bind_source_any_port(int fd, const struct conf_addr *src, struct sockaddr_storage *local,
                                socklen_t len, bool tcp)
{
	int one = 1;
	if (tcp)
		setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
	set_port(local, 0);
	if (bind(fd, (struct sockaddr *)local, len) == 0)
		return 0;
	int e = errno;
	/* the address left the machine after the startup check: say so, once a second at most */
	static _Atomic uint64_t warned_s;
	uint64_t now_s = clock_ns() / 1000000000ull, last = atomic_load(&warned_s);
	if (now_s != last && atomic_compare_exchange_strong(&warned_s, &last, now_s))
		log_warn("EDNS pool: cannot send from edns.outgoing address %s: %s", src->text, strerror(e));
	return -e;
}

int edns_sock_open(struct ethread *t, const struct sockaddr_storage *to, bool tcp)
{
	socklen_t tolen = to->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	int fd = socket(to->ss_family, (tcp ? SOCK_STREAM : SOCK_DGRAM) | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	const struct conf_addr *src = pick_source(t, to->ss_family);
	struct sockaddr_storage local;
	if (src != NULL) {
		memcpy(&local, &src->ss, sizeof(local));
	} else {
		memset(&local, 0, sizeof(local));
		local.ss_family = to->ss_family;
	}
	bool bound = false;
	if (!tcp) {
		for (int i = 0; i < 8 && !bound; i++) {
			set_port(&local, (uint16_t)(1024 + edns_sock_random() % (65536 - 1024)));
			bound = bind(fd, (struct sockaddr *)&local, tolen) == 0;
		}
	}
	if (src != NULL && !bound) {
		int rc = bind_source_any_port(fd, src, &local, tolen, tcp);
		if (rc < 0) {
			close(fd);
			return rc;
		}
	}
	/* connect() makes the kernel drop datagrams from other addresses/ports. */
	if (connect(fd, (const struct sockaddr *)to, tolen) != 0 && errno != EINPROGRESS) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

void edns_sock_close(struct eres *r)
{
	if (r->ex.fd >= 0) {
		epoll_ctl(r->t->epfd, EPOLL_CTL_DEL, r->ex.fd, NULL);
		close(r->ex.fd);
		r->ex.fd = -1;
	}
	free(r->ex.tbuf);
	r->ex.tbuf = NULL;
	r->ex.tlen = 0;
	r->ex.tcp_sent = false;
}
