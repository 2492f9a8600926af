/* SPDX-License-Identifier: BSD-3-Clause */
/* partdnsctl query: one query through the real query path, as a client of one city would send it. */
#include "resolver/ops/probe.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "partition/partition.h"
#include "resolver/base/clock.h"
#include "resolver/ops/inspect.h"
#include "resolver/serve/query.h"
#include "wire/names.h"
#include "wire/upstream.h"
#include "wire/wire.h"

/*
 * The wait for a resolution, in the control thread: under the control
 * socket's own 5 s per client, and past both pools' deadlines (4 s normal,
 * 3 x edns.timeout_ms flagged at the default).
 */
#define PROBE_WAIT_MS 4800

struct probe {
	struct snapshot_slot *snaps;
	struct resolve_normal *normal;
	struct resolve_edns *edns;
	struct query_ctx x;
	struct mq replies;       /* lives as long as the pools: a late waiter still lands here */
	struct counters ctr;     /* the probe's own: its queries are not clients' */
	struct partition_counters *pctr;
	uint8_t out[65535];
};

static void probe_dispatch(void *arg, struct job *job)
{
	struct probe *p = arg;
	int rc = job->edns ? resolve_edns_submit(p->edns, job) : resolve_normal_submit(p->normal, job);
	if (rc != 0) {
		static const struct wire_ede busy = { WIRE_EDE_OTHER, "resolver overloaded" };
		inflight_fail(job, WIRE_RCODE_SERVFAIL, &busy, false);
	}
}

struct probe *probe_new(struct snapshot_slot *snaps, struct cache *cache, struct inflight *inflight,
                        struct resolve_normal *normal, struct resolve_edns *edns)
{
	struct probe *p = calloc(1, sizeof(*p));
	if (p == NULL)
		return NULL;
	p->replies.efd = -1;
	p->snaps = snaps;
	p->normal = normal;
	p->edns = edns;
	p->pctr = calloc(PARTITION_MAX + 1, sizeof(*p->pctr));
	if (p->pctr == NULL || mq_init(&p->replies) != 0)
		goto fail;
	p->x = (struct query_ctx){ .cache = cache, .inflight = inflight, .replies = &p->replies,
	                           .dispatch = probe_dispatch, .dispatch_arg = p, .ctr = &p->ctr, .pctr = p->pctr };
	p->x.rl = ratelimit_new(0, 32, 64); /* no client limit: one query at a time */
	if (p->x.rl == NULL)
		goto fail;
	return p;
fail:
	probe_free(p);
	return NULL;
}

/* Free the waiters that arrived for earlier probes (their wait ran out). */
static void drain(struct probe *p)
{
	struct mq_node *n = mq_take_all(&p->replies);
	while (n) {
		struct waiter *wt = (struct waiter *)n;
		n = n->next;
		inflight_waiter_free(p->x.inflight, wt);
	}
}

void probe_free(struct probe *p)
{
	if (p == NULL)
		return;
	if (p->replies.efd >= 0) {
		drain(p);
		mq_deinit(&p->replies);
	}
	ratelimit_free(p->x.rl);
	free(p->pctr);
	free(p);
}

/* The first prefix of the partition, IPv4 before IPv6: the probe's source address. */
struct pick {
	struct prefix p;
	bool found;
};

static int pick_prefix(const struct prefix *pf, void *arg)
{
	struct pick *k = arg;
	if (!k->found || (k->p.family == AF_INET6 && pf->family == AF_INET)) {
		k->p = *pf;
		k->found = true;
	}
	return 0;
}

/* Wait for our waiter's reply. @return its length, or -ETIMEDOUT. */
static int wait_reply(struct probe *p, uint16_t id)
{
	uint64_t end = clock_ns() + (uint64_t)PROBE_WAIT_MS * 1000000u;
	for (;;) {
		uint64_t now = clock_ns();
		if (now >= end)
			return -ETIMEDOUT;
		struct pollfd pfd = { .fd = p->replies.efd, .events = POLLIN };
		if (poll(&pfd, 1, (int)((end - now) / 1000000u) + 1) <= 0)
			continue;
		int len = -1;
		bool ours = false;
		struct mq_node *n = mq_take_all(&p->replies);
		while (n) {
			struct waiter *wt = (struct waiter *)n;
			n = n->next;
			if (wt->q.id == id && !ours) {
				/* -1: a chain continues through the EDNS pool, a new waiter takes over */
				len = query_answer(&p->x, wt, p->out, sizeof(p->out));
				ours = len >= 0;
			}
			inflight_waiter_free(p->x.inflight, wt);
		}
		if (ours)
			return len;
	}
}

int probe_query(struct probe *p, const char *name, const char *type, const char *partition, FILE *out, FILE *err)
{
	drain(p);
	struct snapshot *snap = snapshot_get(p->snaps);
	p->x.snap = snap;
	int rc = 0;
	uint8_t wname[WIRE_MAX_NAME];
	int nl = wire_name_from_text(name, wname, sizeof(wname));
	int qtype = type != NULL ? inspect_type(type) : 1;
	int id = partition != NULL ? ptable_find(snap->conf->partitions.table, partition) : -1;
	struct pick k = { .found = false };
	if (nl < 0) {
		fprintf(err, "bad name '%s'\n", name);
		rc = -EINVAL;
	} else if (qtype < 0) {
		inspect_type_error(err, type, qtype);
		rc = -EINVAL;
	} else if (id <= 0) {
		fprintf(err, "no partition '%s' (a client of no city is answered from the common cache: ask with dig)\n",
		        partition ? partition : "");
		rc = -ENOENT;
	} else if (ptable_foreach_prefix(snap->conf->partitions.table, (unsigned)id, pick_prefix, &k) != 0 || !k.found) {
		fprintf(err, "partition '%s' has no prefix to ask from\n", partition);
		rc = -ENOENT;
	}
	if (rc != 0) {
		p->x.snap = NULL;
		snapshot_release(snap);
		return rc;
	}
	struct sockaddr_storage peer = { 0 };
	socklen_t plen;
	char who[INET6_ADDRSTRLEN] = "?";
	if (k.p.family == AF_INET) {
		struct sockaddr_in *s = (struct sockaddr_in *)&peer;
		s->sin_family = AF_INET;
		memcpy(&s->sin_addr, k.p.addr, 4);
		plen = sizeof(*s);
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)&peer;
		s->sin6_family = AF_INET6;
		memcpy(&s->sin6_addr, k.p.addr, 16);
		plen = sizeof(*s);
	}
	inet_ntop(k.p.family, k.p.addr, who, sizeof(who));
	uint16_t qid;
	if (getrandom(&qid, sizeof(qid), 0) != (ssize_t)sizeof(qid))
		qid = (uint16_t)clock_ns();
	uint8_t pkt[INSPECT_QUERY_MAX];
	int len = wire_query_build(qid, true, false, wname, (size_t)nl, (uint16_t)qtype, 1, NULL, pkt, sizeof(pkt));
	struct query_client cl = { .tcp = false, .udp_fd = -1, .peer = &peer, .peer_len = plen };
	uint64_t hits = counter_get(&p->ctr.hits), t0 = clock_ns();
	int n = len < 0 ? 0 : query_process(&p->x, &cl, pkt, (size_t)len, p->out, sizeof(p->out));
	const char *how = counter_get(&p->ctr.hits) != hits ? "from the cache" : "";
	if (n == -1) {
		n = wait_reply(p, qid);
		how = "resolved";
	}
	uint64_t ms = (clock_ns() - t0) / 1000000u;
	fprintf(out, "%s as a client of %s (%s)\n", name, partition, who);
	if (n == -ETIMEDOUT) {
		fprintf(out, "  no answer within %u ms: the resolution goes on; ask again\n", PROBE_WAIT_MS);
	} else if (n <= 0) {
		fprintf(out, "  no reply: the query was dropped\n");
	} else {
		fprintf(out, "  %s%sin %llu ms\n", how, *how ? " " : "", (unsigned long long)ms);
		inspect_print_reply(out, p->out, (size_t)n);
	}
	p->x.snap = NULL;
	snapshot_release(snap);
	return 0;
}
