/* SPDX-License-Identifier: BSD-3-Clause */
/* What the cache holds for one name, as a client of one city would be answered from it. */
#include "resolver/ops/inspect.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ldns/ldns.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "mapping/ecs.h"
#include "partition/partition.h"
#include "resolver/base/clock.h"
#include "resolver/view/route.h"
#include "wire/answer.h"
#include "wire/names.h"
#include "wire/parse.h"
#include "wire/upstream.h"
#include "wire/wire.h"

/* The entry, copied out of the cache under its lock. */
struct inspect_entry {
	uint8_t *val;
	size_t vlen;
	struct cache_hit hit;
};

static int copy_entry(const uint8_t *val, size_t vlen, const struct cache_hit *hit, void *arg)
{
	struct inspect_entry *e = arg;
	e->val = malloc(vlen ? vlen : 1);
	if (e->val == NULL)
		return -ENOMEM;
	memcpy(e->val, val, vlen);
	e->vlen = vlen;
	e->hit = *hit;
	return 0;
}

int inspect_type(const char *text)
{
	/* ldns reads TYPEnnn with atoi and keeps the low 16 bits (TYPE99999 would
	 * be TYPE34463): the number is read here, and refused when too large */
	if (strncasecmp(text, "TYPE", 4) == 0 && text[4] != '\0' && strspn(text + 4, "0123456789") == strlen(text + 4)) {
		if (strlen(text + 4) > 5)
			return -ERANGE;
		unsigned long v = strtoul(text + 4, NULL, 10);
		return v == 0 ? -EINVAL : v > 65535 ? -ERANGE : (int)v;
	}
	int t = (int)ldns_get_rr_type_by_name(text);
	return t > 0 ? t : -EINVAL;
}

void inspect_type_error(FILE *err, const char *text, int rc)
{
	if (rc == -ERANGE)
		fprintf(err, "type '%s' out of range: a type number is 1..65535\n", text);
	else
		fprintf(err, "unknown type '%s'\n", text);
}

/* The Extended DNS Errors (RFC 8914) of the reply, if any. */
static void print_ede(FILE *out, ldns_pkt *pkt)
{
	ldns_edns_option_list *opts = ldns_pkt_edns_get_option_list(pkt);
	for (size_t i = 0; opts && i < ldns_edns_option_list_get_count(opts); i++) {
		ldns_edns_option *o = ldns_edns_option_list_get_option(opts, i);
		if (o == NULL || ldns_edns_get_code(o) != 15 || ldns_edns_get_size(o) < 2)
			continue;
		const uint8_t *d = ldns_edns_get_data(o);
		int tl = (int)ldns_edns_get_size(o) - 2;
		fprintf(out, "  EDE %u: %.*s\n", (unsigned)(d[0] << 8 | d[1]), tl, (const char *)d + 2);
	}
}

void inspect_print_reply(FILE *out, const uint8_t *reply, size_t len)
{
	ldns_pkt *pkt = NULL;
	if (ldns_wire2pkt(&pkt, reply, len) != LDNS_STATUS_OK) {
		fprintf(out, "  (the reply could not be decoded)\n");
		return;
	}
	char *rcode = ldns_pkt_rcode2str(ldns_pkt_get_rcode(pkt));
	fprintf(out, "  rcode %s, %zu answer, %zu authority record(s)\n", rcode ? rcode : "?",
	        (size_t)ldns_pkt_ancount(pkt), (size_t)ldns_pkt_nscount(pkt));
	free(rcode);
	print_ede(out, pkt);
	ldns_rr_list *sections[] = { ldns_pkt_answer(pkt), ldns_pkt_authority(pkt) };
	for (size_t s = 0; s < 2; s++)
		for (size_t i = 0; sections[s] && i < ldns_rr_list_rr_count(sections[s]); i++) {
			char *t = ldns_rr2str(ldns_rr_list_rr(sections[s], i));
			if (t) {
				size_t n = strlen(t);
				while (n > 0 && t[n - 1] == '\n')
					t[--n] = '\0';
				fprintf(out, "  %s %s\n", s == 0 ? "answer   " : "authority", t);
				free(t);
			}
		}
	ldns_pkt_free(pkt);
}

int inspect_cache_lookup(struct cache *cache, const struct snapshot *snap, const char *name, const char *type,
                         const char *partition, FILE *out, FILE *err)
{
	const struct conf *c = snap->conf;
	uint8_t wname[WIRE_MAX_NAME];
	int nl = wire_name_from_text(name, wname, sizeof(wname));
	if (nl < 0) {
		fprintf(err, "bad name '%s'\n", name);
		return -EINVAL;
	}
	uint16_t qtype = LDNS_RR_TYPE_A;
	if (type != NULL) {
		int t = inspect_type(type);
		if (t < 0) {
			inspect_type_error(err, type, t);
			return -EINVAL;
		}
		qtype = (uint16_t)t;
	}
	unsigned part = PARTITION_COMMON;
	if (partition != NULL && strcmp(partition, "common") != 0) {
		int id = ptable_find(c->partitions.table, partition);
		if (id < 0) {
			fprintf(err, "no partition '%s'\n", partition);
			return -ENOENT;
		}
		part = (unsigned)id;
	}
	/* routed exactly as the query path routes a client of that partition */
	uint8_t pkt[INSPECT_QUERY_MAX];
	int plen = wire_query_build(0, true, false, wname, (size_t)nl, qtype, 1, NULL, pkt, sizeof(pkt));
	struct wire_query q;
	if (plen < 0 || wire_parse_query(pkt, (size_t)plen, &q) != 0) {
		fprintf(err, "cannot make a query for '%s'\n", name);
		return -EINVAL;
	}
	struct route rt = { .part = part };
	route_decide(&rt, c, snap->domains, &q, AF_INET);
	char ntext[1024];
	wire_name_to_text(q.qname_lc, q.qname_len, ntext, sizeof(ntext));
	char *ttext = ldns_rr_type2str((ldns_rr_type)qtype);
	const char *pname = part == PARTITION_COMMON ? "common" : ptable_name(c->partitions.table, part);
	fprintf(out, "%s %s for %s\n", ntext, ttext ? ttext : "?", pname ? pname : "?");
	free(ttext);
	if (rt.rule != NULL) {
		struct ecs id;
		char a[64] = "?";
		if (route_identity(&rt, c, snap->standby, &id) == 0) {
			char ip[INET6_ADDRSTRLEN] = "?";
			inet_ntop(id.family == ECS_FAMILY_IPV4 ? AF_INET : AF_INET6, id.addr, ip, sizeof(ip));
			snprintf(a, sizeof(a), "%s/%u", ip, (unsigned)id.source);
		}
		fprintf(out, "  flagged (EDNS domain %s%s): this city's own entry, fetched with ECS %s\n", rt.rule->name,
		        rt.rule->subtree ? " and below" : "", a);
	} else {
		fprintf(out, "  %s: the common cache, fetched by full recursion without ECS\n",
		        part == PARTITION_COMMON ? "not a city" : "not flagged");
	}
	struct inspect_entry e = { 0 };
	uint32_t now = clock_sec();
	int rc = cache_lookup(cache, rt.key, rt.klen, now, copy_entry, &e);
	if (rc == -ENOMEM) {
		fprintf(err, "out of memory\n");
		return rc;
	}
	if (rc < 0) {
		fprintf(out, "  not cached\n");
		return 0;
	}
	struct route_value v;
	if (route_value_parse(e.val, e.vlen, &v) != 0) {
		fprintf(out, "  an entry partdns cannot read (%zu bytes)\n", e.vlen);
		free(e.val);
		return 0;
	}
	if (e.hit.stale)
		fprintf(out, "  expired, served stale (RFC 8767) for %u s more\n",
		        e.hit.expiry > now ? e.hit.expiry - now : 0);
	else
		fprintf(out, "  cached %u s ago, %u s left of %u\n", now - e.hit.stored_at,
		        e.hit.expiry > now ? e.hit.expiry - now : 0, e.hit.expiry - e.hit.stored_at);
	if (v.failure) {
		char *rtext = ldns_pkt_rcode2str((ldns_pkt_rcode)v.rcode);
		fprintf(out, "  a remembered failure: %s (EDE %u \"%s\")\n", rtext ? rtext : "?", (unsigned)v.ede.code,
		        v.ede.text ? v.ede.text : "");
		free(rtext);
		free(e.val);
		return 0;
	}
	if (v.chain) {
		char t[1024] = "?";
		wire_name_to_text(v.target, v.target_len, t, sizeof(t));
		fprintf(out, "  a CNAME chain into the flagged %s (asked per city from there)\n", t);
	}
	uint8_t reply[65535];
	uint32_t age = e.hit.stale ? 0 : now - e.hit.stored_at;
	int len = wire_answer_write(&q, pkt, v.blob, v.blob_len, age, NULL, reply, sizeof(reply));
	if (len > 0)
		inspect_print_reply(out, reply, (size_t)len);
	else
		fprintf(out, "  (the entry could not be written as a reply: %d)\n", len);
	free(e.val);
	return 0;
}
