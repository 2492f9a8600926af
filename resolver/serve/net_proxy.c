/* SPDX-License-Identifier: BSD-3-Clause */
/* The listeners' PROXY v2 policy: a balancer in server.proxy_from names the client; nobody else may. */
#include "resolver/serve/net_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "resolver/base/log.h"
#include "resolver/serve/proxy.h"
#include "resolver/view/classify.h"

static void report(const struct sockaddr_storage *peer, const char *why)
{
	static struct log_limit lim;
	char a[INET6_ADDRSTRLEN] = "?";
	if (peer->ss_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)peer)->sin_addr, a, sizeof(a));
	else if (peer->ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)peer)->sin6_addr, a, sizeof(a));
	log_limited(&lim, LOG_LEVEL_WARN, "PROXY v2: refused %s: %s", a, why);
}

int net_proxy_take(const struct snapshot *s, struct counters *ctr, const struct sockaddr_storage *peer,
                   const uint8_t *p, size_t len, bool stream, struct sockaddr_storage *client,
                   socklen_t *client_len)
{
	if (!classify_proxy(s, peer)) {
		if (len >= PROXY_SIG_LEN && proxy_has_signature(p, PROXY_SIG_LEN)) {
			counter_inc(&ctr->proxy_refused);
			report(peer, "a PROXY header from outside server.proxy_from");
			return NET_PROXY_REFUSED;
		}
		return 0;
	}
	struct proxy_hdr h;
	int n = proxy_parse(p, len, &h);
	if (n == PROXY_MORE && stream && len < PROXY_HDR_MAX)
		return NET_PROXY_MORE;
	if (n <= 0) {
		counter_inc(&ctr->proxy_refused);
		report(peer, n == PROXY_MORE ? "a truncated PROXY v2 header (server.proxy_from sends one first)"
		                             : "no valid PROXY v2 header (server.proxy_from sends one first)");
		return NET_PROXY_REFUSED;
	}
	*client_len = h.local ? 0 : h.src_len;
	if (*client_len != 0)
		memcpy(client, &h.src, h.src_len);
	return n;
}
