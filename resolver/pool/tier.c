/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A frontend's view of the shared EDNS tier: partitions are owned by tier
 * nodes through rendezvous (highest-random-weight) hashing of the
 * partition's name, so every frontend sends a city's flagged misses to the
 * same node and the GSLB sees one query per city and name for the whole
 * fleet. A node that is down hands its partitions to the next node by
 * score; removing a node moves only its own partitions.
 */
#include "resolver/pool/tier.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resolver/base/log.h"
#include "util/hash.h"

/*
 * The key of the ownership hash is FIXED, unlike every other table's
 * (util/hash.h): each frontend computes the owners on its own, and they
 * must all agree, across processes, machines and restarts. A per-process
 * random key would give each frontend its own owner for a city, and every
 * city would be resolved (and cached, and asked of the GSLB) on several
 * tier nodes, which is what the tier is there to stop. The inputs are the
 * operator's partition names and node addresses, not anything a client
 * sends, so there is nothing to flood with colliding keys. Changing this
 * seed re-assigns every partition of every fleet at once: don't.
 */
#define TIER_HASH_SEED 0x70617274646e7331ull /* "partdns1" */

/* "ADDR@PORT" as inet_ntop writes the address: the same text for the same node whatever the config spelt. */
static void node_text(const struct sockaddr_storage *ss, char *out, size_t cap)
{
	char a[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
		inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
		port = ntohs(s4->sin_port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
		inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
		port = ntohs(s6->sin6_port);
	}
	snprintf(out, cap, "%s@%u", a, port);
}

struct tier *tier_new(const struct conf_addr *a, size_t n)
{
	if (n == 0)
		return NULL;
	struct tier *t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (a[i].ss.ss_family != AF_INET && a[i].ss.ss_family != AF_INET6)
			continue;
		char text[64];
		node_text(&a[i].ss, text, sizeof(text));
		bool dup = false;
		for (size_t k = 0; k < t->n && !dup; k++)
			dup = strcmp(t->node[k].text, text) == 0;
		if (dup) {
			log_warn("edns.tier: %s is listed twice; once is enough", text);
			continue;
		}
		if (t->n == TIER_MAX_NODES) {
			log_warn("edns.tier: more than %d nodes; %s and the ones after it are not used", TIER_MAX_NODES,
			         text);
			break;
		}
		struct tier_node *nd = &t->node[t->n++];
		memcpy(&nd->addr, &a[i].ss, sizeof(nd->addr));
		nd->len = a[i].len;
		memcpy(nd->text, text, sizeof(nd->text));
		atomic_init(&nd->up, true);
	}
	if (t->n == 0) {
		free(t);
		return NULL;
	}
	return t;
}

void tier_free(struct tier *t)
{
	free(t);
}

uint64_t tier_score(const char *partition, const char *node)
{
	struct hash_key key; /* a few multiplies: cheaper than sharing one between threads */
	hash_key_fixed(&key, TIER_HASH_SEED);
	char buf[256 + 1 + 64];
	size_t pl = strnlen(partition, 256), nl = strnlen(node, 64);
	memcpy(buf, partition, pl);
	buf[pl] = '\0'; /* "ab"+"c" and "a"+"bc" must not meet */
	memcpy(buf + pl + 1, node, nl);
	return hash_bytes(&key, buf, pl + 1 + nl);
}

void tier_order(const struct tier *t, const char *partition, unsigned *order)
{
	uint64_t score[TIER_MAX_NODES];
	for (unsigned i = 0; i < t->n; i++) {
		score[i] = tier_score(partition, t->node[i].text);
		/* insertion by score, highest first; equal scores by text */
		unsigned k = i;
		while (k > 0) {
			unsigned prev = order[k - 1];
			bool before = score[i] > score[prev] ||
			              (score[i] == score[prev] && strcmp(t->node[i].text, t->node[prev].text) < 0);
			if (!before)
				break;
			order[k] = prev;
			k--;
		}
		order[k] = i;
	}
}

int tier_owner(const struct tier *t, const unsigned *order)
{
	for (size_t k = 0; k < t->n; k++)
		if (tier_is_up(t, order[k]))
			return (int)order[k];
	return -1;
}

static void set_down(struct tier *t, unsigned i, const char *why)
{
	if (atomic_exchange(&t->node[i].up, false)) {
		atomic_fetch_add(&t->node[i].downs, 1);
		log_warn("EDNS tier: node %s is down (%s): its partitions go to the next node by score", t->node[i].text,
		         why);
	}
}

void tier_probe_result(struct tier *t, unsigned i, bool answered)
{
	struct tier_node *nd = &t->node[i];
	if (answered) {
		nd->missed = 0;
		if (!atomic_exchange(&nd->up, true))
			log_warn("EDNS tier: node %s is up again: it owns its partitions again", nd->text);
		return;
	}
	if (++nd->missed >= TIER_DOWN_AFTER)
		set_down(t, i, "probes unanswered");
}

void tier_query_timeout(struct tier *t, unsigned i)
{
	set_down(t, i, "a query to it timed out");
}
