/* SPDX-License-Identifier: BSD-3-Clause */
/* The DDR answer (RFC 9462): partdns' DoT and DoH listeners as SVCB records (RFC 9460), for clients that upgrade. */
#include "resolver/serve/ddr.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/msgbuf.h"
#include "wire/names.h"

#define DDR_TYPE_SVCB 64
#define DDR_TTL 300 /* a client asks again about as often as it re-checks its network */

/* SvcParamKeys (RFC 9460 §14.3.2, RFC 9461 §5), written in increasing order as the RFC requires */
#define SVC_ALPN 1
#define SVC_PORT 3
#define SVC_IPV4HINT 4
#define SVC_IPV6HINT 6
#define SVC_DOHPATH 7

static const uint8_t ddr_qname[] = { 4, '_', 'd', 'n', 's', 8, 'r', 'e', 's', 'o', 'l', 'v', 'e', 'r',
                                     4, 'a', 'r', 'p', 'a', 0 };

bool ddr_is_query(const struct wire_query *q)
{
	return q->qtype == DDR_TYPE_SVCB && q->qname_len == sizeof(ddr_qname) &&
	       memcmp(q->qname_lc, ddr_qname, sizeof(ddr_qname)) == 0;
}

/* One SvcParam: key, length, value. */
static void put_param(struct msgbuf *m, uint16_t key, const void *val, size_t len)
{
	msgbuf_put16(m, key);
	msgbuf_put16(m, (uint16_t)len);
	msgbuf_put(m, val, len);
}

/* One SVCB record for the listener a: its RDATA after the name pointer, type, class and TTL. */
static void put_record(struct msgbuf *m, uint16_t priority, const uint8_t *target, size_t target_len,
                       const struct conf_addr *a, bool https, uint16_t default_port, const char *path)
{
	static const uint8_t alpn_dot[] = { 3, 'd', 'o', 't' };
	static const uint8_t alpn_h2[] = { 2, 'h', '2' };
	struct msgbuf r = { .p = NULL };
	msgbuf_put16(&r, priority);
	msgbuf_put(&r, target, target_len);
	if (https)
		put_param(&r, SVC_ALPN, alpn_h2, sizeof(alpn_h2));
	else
		put_param(&r, SVC_ALPN, alpn_dot, sizeof(alpn_dot));
	uint16_t port = a->ss.ss_family == AF_INET6 ? ntohs(((const struct sockaddr_in6 *)&a->ss)->sin6_port)
	                                            : ntohs(((const struct sockaddr_in *)&a->ss)->sin_port);
	if (port != default_port) {
		uint8_t p[2] = { (uint8_t)(port >> 8), (uint8_t)port };
		put_param(&r, SVC_PORT, p, sizeof(p));
	}
	if (a->ss.ss_family == AF_INET) {
		const struct in_addr *in = &((const struct sockaddr_in *)&a->ss)->sin_addr;
		if (in->s_addr != htonl(INADDR_ANY))
			put_param(&r, SVC_IPV4HINT, in, 4);
	} else if (a->ss.ss_family == AF_INET6) {
		const struct in6_addr *in6 = &((const struct sockaddr_in6 *)&a->ss)->sin6_addr;
		if (!IN6_IS_ADDR_UNSPECIFIED(in6))
			put_param(&r, SVC_IPV6HINT, in6, 16);
	}
	if (https) { /* RFC 9461 §5: a URI template relative to the target */
		char tmpl[512];
		int n = snprintf(tmpl, sizeof(tmpl), "%s{?dns}", path);
		if (n > 0 && (size_t)n < sizeof(tmpl))
			put_param(&r, SVC_DOHPATH, tmpl, (size_t)n);
	}
	if (r.oom || r.len > 0xffff) {
		m->oom = true;
		free(r.p);
		return;
	}
	msgbuf_put16(m, 0xc000 | WIRE_HEADER_SIZE); /* the question's name */
	msgbuf_put16(m, DDR_TYPE_SVCB);
	msgbuf_put16(m, WIRE_CLASS_IN);
	msgbuf_put16(m, 0);
	msgbuf_put16(m, DDR_TTL);
	msgbuf_put16(m, (uint16_t)r.len);
	msgbuf_put(m, r.p, r.len);
	free(r.p);
}

int ddr_answer(const struct conf *c, const char *target, const struct wire_query *q, uint8_t **msg, size_t *len)
{
	uint8_t tname[WIRE_MAX_NAME];
	int tlen = target[0] != '\0' ? wire_name_from_text(target, tname, sizeof(tname)) : -1;
	size_t n = tlen > 0 ? c->server.nlisten_tls + c->server.nlisten_https : 0;
	if (n > 0xffff)
		n = 0xffff;
	struct msgbuf m = { .p = NULL };
	msgbuf_start(&m, q, WIRE_RCODE_NOERROR, (uint16_t)n, 0);
	uint16_t prio = 1;
	for (size_t i = 0; i < c->server.nlisten_tls && n > 0 && prio <= n; i++)
		put_record(&m, prio++, tname, (size_t)tlen, &c->server.listen_tls[i], false, 853, NULL);
	for (size_t i = 0; i < c->server.nlisten_https && n > 0 && prio <= n; i++)
		put_record(&m, prio++, tname, (size_t)tlen, &c->server.listen_https[i], true, 443, c->server.https_path);
	if (m.oom) {
		free(m.p);
		return -ENOMEM;
	}
	*msg = m.p;
	*len = m.len;
	return 0;
}
