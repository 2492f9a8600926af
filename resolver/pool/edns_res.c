/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * How an EDNS resolution ends: the hops' answers spliced into one and handed
 * to the cache (inflight_done), or SERVFAIL with the reason a client is told
 * (inflight_fail); either way the resolution leaves its thread's list and
 * the pool's budget, and a cut discovery it ran wakes whoever waited on it.
 */
#include "resolver/pool/edns_res.h"

#include <stdlib.h>
#include <string.h>

#include "resolver/base/log.h"
#include "resolver/cache/inflight.h"
#include "resolver/pool/edns_health.h"
#include "resolver/pool/edns_sock.h"
#include "resolver/pool/edns_zcache.h"
#include "wire/names.h"
#include "wire/upstream.h"

const struct wire_ede edns_ede_unreachable = { WIRE_EDE_NO_REACHABLE_AUTHORITY, "no authority answered" };
const struct wire_ede edns_ede_errors = { WIRE_EDE_NO_REACHABLE_AUTHORITY, "authorities answered with errors" };
const struct wire_ede edns_ede_network = { WIRE_EDE_NETWORK_ERROR, "network error" };
const struct wire_ede edns_ede_invalid = { WIRE_EDE_INVALID_DATA, "malformed answer" };
const struct wire_ede edns_ede_mismatch = { WIRE_EDE_INVALID_DATA, "answers did not match the query" };
const struct wire_ede edns_ede_truncated = { WIRE_EDE_INVALID_DATA, "truncated over TCP" };
const struct wire_ede edns_ede_chain = { WIRE_EDE_OTHER, "CNAME chain too long" };
const struct wire_ede edns_ede_no_zone = { WIRE_EDE_NO_REACHABLE_AUTHORITY, "zone servers not found" };
const struct wire_ede edns_ede_no_targets = { WIRE_EDE_OTHER, "no forward targets" };
const struct wire_ede edns_ede_slow = { WIRE_EDE_NO_REACHABLE_AUTHORITY, "resolution timed out" };
const struct wire_ede edns_ede_down = { WIRE_EDE_NO_REACHABLE_AUTHORITY, "every server of the zone is down" };
const struct wire_ede edns_ede_rate = { WIRE_EDE_OTHER, "zone query rate exceeded" };
const struct wire_ede edns_ede_family = { WIRE_EDE_NO_REACHABLE_AUTHORITY, "no server of a family edns.outgoing has" };
const struct wire_ede edns_ede_val_malformed = { WIRE_EDE_INVALID_DATA, "answer cannot be validated" };
const struct wire_ede edns_ede_cut_bogus = { WIRE_EDE_DNSSEC_BOGUS, "the zone's SOA or NS did not validate" };
const struct wire_ede edns_ede_cut_expired = { WIRE_EDE_SIGNATURE_EXPIRED, "the zone's SOA or NS signature expired" };
const struct wire_ede edns_ede_cut_not_yet = { WIRE_EDE_SIGNATURE_NOT_YET_VALID,
	                                       "the zone's SOA or NS signature is not yet valid" };
const struct wire_ede edns_ede_tier = { WIRE_EDE_NO_REACHABLE_AUTHORITY, "no EDNS tier node answered" };
const struct wire_ede edns_ede_tier_error = { WIRE_EDE_NO_REACHABLE_AUTHORITY,
	                                      "the EDNS tier node answered with an error" };

static void eres_free(struct eres *r)
{
	struct ethread *t = r->t;
	if (edns_zcache_discovering(r))
		edns_zcache_wake_waiters(r); /* a failed discovery: the waiters try their own */
	edns_sock_close(r);
	if (r->prev)
		r->prev->next = r->next;
	else
		t->list = r->next;
	if (r->next)
		r->next->prev = r->prev;
	edns_health_budget_release(t->pool, r->job->partition, r->rule_slot);
	if (r->val) {
		edns_verdict_clear(&r->val->v);
		for (unsigned i = 0; i < VAL_MAX_NEEDS; i++)
			free(r->val->answers[i]);
		free(r->val);
	}
	free(r->acc);
	free(r);
}

const char *edns_res_part_name(const struct job *job)
{
	const char *n = job->snap != NULL ? ptable_name(job->snap->conf->partitions.table, job->partition) : NULL;
	return n != NULL ? n : "?";
}

void edns_res_fail(struct eres *r, const struct wire_ede *ede, const char *why)
{
	if (log_get_level() >= LOG_LEVEL_INFO) {
		char name[512] = "?";
		wire_name_to_text(r->job->qname, r->job->qname_len, name, sizeof(name));
		log_info_limited("EDNS resolution of %s type %u for partition %s failed: %s", name, r->job->qtype,
		                 edns_res_part_name(r->job), why);
	}
	counter_inc(&r->t->ctr.upstream_errors);
	struct job *job = r->job;
	if (edns_zcache_discovering(r) && ede == &edns_ede_no_zone)
		edns_zcache_put_failed(r);
	eres_free(r);
	/* load shedding (a zone over its query rate) is not a failure to remember */
	inflight_fail(job, WIRE_RCODE_SERVFAIL, ede, ede != NULL && ede != &edns_ede_rate);
}

int edns_res_append(struct eres *r, const uint8_t *resp, size_t len)
{
	uint8_t *out;
	size_t out_len;
	if (r->acc == NULL) {
		out = malloc(len);
		if (out == NULL) {
			edns_res_fail(r, NULL, "out of memory");
			return -1;
		}
		memcpy(out, resp, len);
		out_len = len;
	} else if (wire_splice(r->acc, r->acc_len, resp, len, &out, &out_len) != 0) {
		edns_res_fail(r, &edns_ede_invalid, "cannot splice the CNAME chain");
		return -1;
	}
	free(r->acc);
	r->acc = out;
	r->acc_len = out_len;
	return 0;
}

void edns_res_done(struct eres *r, const uint8_t *resp, size_t len)
{
	struct job *job = r->job;
	if (r->acc == NULL) {
		/* resp may live in the thread's buffer: finish the job before reuse */
		eres_free(r);
		inflight_done(job, resp, len, false);
		return;
	}
	if (edns_res_append(r, resp, len) != 0)
		return;
	uint8_t *msg = r->acc;
	size_t msg_len = r->acc_len;
	r->acc = NULL; /* taken: eres_free must not free it */
	eres_free(r);
	inflight_done(job, msg, msg_len, false);
	free(msg);
}
