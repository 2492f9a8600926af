/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The Prometheus text exposition (format 0.0.4) of a stats_view: the same
 * per-thread counters partdnsctl stats prints, summed at read time, under
 * partdns_* names. What each family counts, exactly, is its HELP text.
 */
#include "resolver/ops/metrics.h"

#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include "partition/partition.h"
#include "resolver/view/rpz.h"
#include "resolver/pool/tier.h"


static const char *const pool_names[STATS_POOLS] = { "normal", "edns" };

size_t metrics_escape_label(const char *in, char *out, size_t cap)
{
	size_t n = 0;
	for (const char *p = in; *p; p++) {
		char esc = *p == '\\' ? '\\' : *p == '"' ? '"' : *p == '\n' ? 'n' : 0;
		char two[2] = { '\\', esc };
		const char *s = esc ? two : p;
		size_t k = esc ? 2 : 1;
		for (size_t i = 0; i < k; i++, n++)
			if (cap > 0 && n < cap - 1)
				out[n] = s[i];
	}
	if (cap > 0)
		out[n < cap ? n : cap - 1] = '\0';
	return n;
}

static void family(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A family with one unlabelled sample. */
static void single(FILE *out, const char *name, const char *type, const char *help, uint64_t v)
{
	family(out, name, type, help);
	fprintf(out, "%s %" PRIu64 "\n", name, v);
}

/* le="..." in seconds, as Prometheus prints bounds (shortest exact decimal). */
static void write_le(FILE *out, uint64_t ns)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%" PRIu64 ".%09" PRIu64, ns / 1000000000u, ns % 1000000000u);
	size_t len = strlen(buf);
	while (buf[len - 1] == '0')
		buf[--len] = '\0';
	if (buf[len - 1] == '.')
		buf[--len] = '\0';
	fputs(buf, out);
}

void metrics_write_histogram(FILE *out, const char *name, const char *labels, const struct stats_hist *h)
{
	const char *sep = labels[0] ? "," : "";
	uint64_t cum = 0;
	for (size_t i = 0; i < HIST_NB; i++) {
		cum += h->bucket[i];
		fprintf(out, "%s_bucket{%s%sle=\"", name, labels, sep);
		write_le(out, hist_bounds_ns[i]);
		fprintf(out, "\"} %" PRIu64 "\n", cum);
	}
	cum += h->bucket[HIST_NB];
	fprintf(out, "%s_bucket{%s%sle=\"+Inf\"} %" PRIu64 "\n", name, labels, sep, cum);
	const char *open = labels[0] ? "{" : "", *close = labels[0] ? "}" : "";
	fprintf(out, "%s_sum%s%s%s %" PRIu64 ".%09" PRIu64 "\n", name, open, labels, close, h->sum_ns / 1000000000u,
	        h->sum_ns % 1000000000u);
	fprintf(out, "%s_count%s%s%s %" PRIu64 "\n", name, open, labels, close, cum);
}

/* One counter per pool, from the pools' own counters. */
static void per_pool(FILE *out, const struct stats_view *v, const char *name, const char *help, const int idx[2])
{
	family(out, name, "counter", help);
	for (int p = 0; p < STATS_POOLS; p++)
		fprintf(out, "%s{pool=\"%s\"} %" PRIu64 "\n", name, pool_names[p], idx[p] < 0 ? 0 : v->pool[p][idx[p]]);
}

/* edns.tier: each node's state as this frontend sees it (no samples when it is not a frontend). */
static void write_tier(FILE *out, const struct tier *tr)
{
	family(out, "partdns_tier_node_up", "gauge",
	       "1 while the EDNS tier node answers this frontend's probes (it owns its partitions), 0 while down.");
	for (size_t i = 0; tr != NULL && i < tr->n; i++) {
		char node[128];
		metrics_escape_label(tr->node[i].text, node, sizeof(node));
		fprintf(out, "partdns_tier_node_up{node=\"%s\"} %d\n", node, tier_is_up(tr, (unsigned)i) ? 1 : 0);
	}
	family(out, "partdns_tier_node_downs_total", "counter",
	       "Times the EDNS tier node was marked down (two probes unanswered, or a query to it timed out).");
	for (size_t i = 0; tr != NULL && i < tr->n; i++) {
		char node[128];
		metrics_escape_label(tr->node[i].text, node, sizeof(node));
		fprintf(out, "partdns_tier_node_downs_total{node=\"%s\"} %" PRIu64 "\n", node,
		        (uint64_t)atomic_load_explicit(&tr->node[i].downs, memory_order_relaxed));
	}
}

/* Client queries and replies, the cache's hits and misses. */
static void write_clients(FILE *out, const struct stats_view *v)
{
	const uint64_t *l = v->listeners;
	single(out, "partdns_uptime_seconds", "gauge", "Seconds since the daemon started.", v->uptime);

	family(out, "partdns_queries_total", "counter",
	       "DNS messages received from clients, by transport, before any check (malformed, refused, "
	       "rate-limited and dropped ones included).");
	fprintf(out, "partdns_queries_total{transport=\"udp\"} %" PRIu64 "\n", l[C_udp]);
	fprintf(out, "partdns_queries_total{transport=\"tcp\"} %" PRIu64 "\n", l[C_tcp]);
	fprintf(out, "partdns_queries_total{transport=\"dot\"} %" PRIu64 "\n", l[C_dot]);
	fprintf(out, "partdns_queries_total{transport=\"doh\"} %" PRIu64 "\n", l[C_doh]);
	single(out, "partdns_proxied_queries_total", "counter",
	       "Queries that came through a balancer in server.proxy_from, their client named by a PROXY v2 header.",
	       l[C_proxied]);
	single(out, "partdns_proxy_refused_total", "counter",
	       "Datagrams dropped and connections closed for their PROXY v2 header: one from outside "
	       "server.proxy_from, or none (or a bad one) from inside it.", l[C_proxy_refused]);

	family(out, "partdns_responses_total", "counter",
	       "Replies written to clients, by response code (a slipped empty TC=1 reply is not counted here; "
	       "see partdns_truncated_total).");
	static const struct {
		const char *rcode;
		int idx;
	} rcodes[] = { { "NOERROR", C_noerror }, { "NXDOMAIN", C_nxdomain }, { "SERVFAIL", C_servfail },
	               { "REFUSED", C_refused }, { "FORMERR", C_formerr },   { "NOTIMP", C_notimp },
	               { "BADVERS", C_badvers } };
	for (size_t i = 0; i < sizeof(rcodes) / sizeof(rcodes[0]); i++)
		fprintf(out, "partdns_responses_total{rcode=\"%s\"} %" PRIu64 "\n", rcodes[i].rcode, l[rcodes[i].idx]);

	single(out, "partdns_dropped_total", "counter",
	       "Client queries dropped without a reply (unparseable, unknown address family, over server.client_qps "
	       "with action drop or slip).", l[C_dropped]);
	single(out, "partdns_unanswered_total", "counter",
	       "Queries the query path ended with no reply, no counted drop and no resolution to wait for, answered "
	       "SERVFAIL by its last check instead (a bug: each is logged).", l[C_unanswered]);
	single(out, "partdns_truncated_total", "counter", "Replies sent with TC=1 (too large for UDP, or slipped).",
	       l[C_truncated]);
	single(out, "partdns_ratelimited_total", "counter", "Client queries over server.client_qps.", l[C_ratelimited]);
	single(out, "partdns_dnstap_dropped_total", "counter",
	       "dnstap frames dropped because a thread's queue to the writer was full (server.dnstap; listeners and "
	       "EDNS threads).", v->counters[C_dnstap_dropped]);
	single(out, "partdns_cache_hits_total", "counter",
	       "Queries answered from the cache (stale answers and CNAME-chain continuations found cached included).",
	       l[C_hits]);
	single(out, "partdns_cache_misses_total", "counter",
	       "Queries that found no usable cache entry and waited for a resolution (joined or started; RD=0 "
	       "misses, refused at once, included).", l[C_misses]);
	single(out, "partdns_coalesced_total", "counter",
	       "Misses that joined an identical resolution already in flight.", l[C_coalesced]);
	single(out, "partdns_prefetches_total", "counter", "Background refreshes started by cache.prefetch.",
	       l[C_prefetches]);
	single(out, "partdns_stale_answers_total", "counter",
	       "Answers served stale (cache.serve_stale, RFC 8767).", l[C_stale]);
	single(out, "partdns_overload_total", "counter",
	       "Resolutions refused because their pool was full (answered SERVFAIL).", l[C_overload]);
}

/* Resolutions, upstream queries and their outcomes, by pool; the tier. */
static void write_pools(FILE *out, const struct stats_view *v)
{
	const uint64_t *l = v->listeners;

	family(out, "partdns_resolutions_total", "counter",
	       "Resolutions started by clients' misses and prefetches, by pool (coalesced misses start none).");
	fprintf(out, "partdns_resolutions_total{pool=\"normal\"} %" PRIu64 "\n", l[C_normal_queries]);
	fprintf(out, "partdns_resolutions_total{pool=\"edns\"} %" PRIu64 "\n", l[C_edns_queries]);

	per_pool(out, v, "partdns_upstream_queries_total",
	         "Upstream queries by pool: for normal, lookups handed to libunbound (its own packets to "
	         "authorities are not seen); for edns, queries sent to authorities or forwarders, each with ECS.",
	         (const int[]){ C_ub_lookups, C_upstream_queries });
	per_pool(out, v, "partdns_upstream_timeouts_total",
	         "Upstream timeouts by pool: for normal, lookups failed at the 4 s deadline; for edns, queries "
	         "unanswered within edns.timeout_ms plus resolutions over their whole-resolution limit.",
	         (const int[]){ C_upstream_timeouts, C_upstream_timeouts });
	per_pool(out, v, "partdns_upstream_failures_total",
	         "Upstream failures by pool: for normal, libunbound lookups answered with an error or SERVFAIL "
	         "(deadline timeouts and DNSSEC failures not included); for edns, resolutions that ended in failure, "
	         "for any reason (timeouts, dead zones and bad answers included).",
	         (const int[]){ C_upstream_errors, C_upstream_errors });
	single(out, "partdns_ecs_queries_sent_total", "counter",
	       "Queries sent with an EDNS Client Subnet option (the EDNS pool's upstream queries).",
	       v->pool[STATS_POOL_EDNS][C_upstream_queries]);
	single(out, "partdns_upstream_mismatches_total", "counter",
	       "EDNS-pool responses that did not match their query (ID, question or ECS).",
	       v->pool[STATS_POOL_EDNS][C_upstream_mismatch]);
	single(out, "partdns_zone_cut_lookups_total", "counter",
	       "libunbound lookups of the EDNS pool to find zone cuts, server addresses and DNSSEC keys.",
	       v->pool[STATS_POOL_EDNS][C_ub_lookups]);
	family(out, "partdns_dnssec_answers_total", "counter",
	       "EDNS-pool answers (one per CNAME hop) by DNSSEC validation result, with resolver.trust_anchor "
	       "set: secure, insecure (unsigned zone), bogus (or unprovable: answered SERVFAIL).");
	fprintf(out, "partdns_dnssec_answers_total{result=\"secure\"} %llu\n",
	        (unsigned long long)v->pool[STATS_POOL_EDNS][C_dnssec_secure]);
	fprintf(out, "partdns_dnssec_answers_total{result=\"insecure\"} %llu\n",
	        (unsigned long long)v->pool[STATS_POOL_EDNS][C_dnssec_insecure]);
	fprintf(out, "partdns_dnssec_answers_total{result=\"bogus\"} %llu\n",
	        (unsigned long long)v->pool[STATS_POOL_EDNS][C_dnssec_bogus]);
	single(out, "partdns_zone_limited_total", "counter",
	       "Normal-pool lookups failed at once because their parent domain had resolver.zone_inflight in "
	       "flight.", v->pool[STATS_POOL_NORMAL][C_zone_limited]);
	single(out, "partdns_edns_zone_limited_total", "counter",
	       "Flagged misses failed at once because their zone was over edns.zone_qps (by a listener, before the "
	       "hand-over, while the EDNS thread says the zone is over its rate).",
	       v->pool[STATS_POOL_EDNS][C_zone_limited]);
	single(out, "partdns_edns_zone_limited_early_total", "counter",
	       "Of partdns_edns_zone_limited_total, those a listener failed before the hand-over.",
	       v->pool[STATS_POOL_EDNS][C_zone_limited_early]);
	single(out, "partdns_normal_started_here_total", "counter",
	       "Normal-pool lookups started by the listener that read the query, in its own loop (colocated).",
	       v->pool[STATS_POOL_NORMAL][C_started_here]);
	single(out, "partdns_stub_retries_total", "counter",
	       "Normal-pool lookups that failed in the stub context (flagged --subtree names as empty zones) and "
	       "were asked again in the plain one: zones whose nameservers live under a flagged subtree.",
	       v->pool[STATS_POOL_NORMAL][C_stub_retries]);

	single(out, "partdns_tier_queries_total", "counter",
	       "Queries a frontend (edns.tier) sent to EDNS tier nodes, each with its client's address as ECS "
	       "(also in partdns_upstream_queries_total{pool=\"edns\"}).",
	       v->pool[STATS_POOL_EDNS][C_tier_queries]);
	single(out, "partdns_tier_failovers_total", "counter",
	       "Tier queries sent again to the next node by score because the partition's node timed out or "
	       "could not be reached.", v->pool[STATS_POOL_EDNS][C_tier_failovers]);
	write_tier(out, v->tier);
}

/* What the daemon holds now: in flight, the cache, the running sets, the fleet. */
static void write_state(FILE *out, const struct stats_view *v)
{
	family(out, "partdns_inflight", "gauge", "Resolutions in flight now, by pool.");
	fprintf(out, "partdns_inflight{pool=\"normal\"} %u\n", v->inflight_normal);
	fprintf(out, "partdns_inflight{pool=\"edns\"} %u\n", v->inflight_edns);

	single(out, "partdns_cache_entries", "gauge", "Entries in the cache now (expired ones until reaped).",
	       v->cache.entries);
	single(out, "partdns_cache_bytes", "gauge", "Memory charged to the cache now: entries and hash tables.",
	       v->cache.bytes);
	single(out, "partdns_cache_max_bytes", "gauge", "The cache's cap (cache.max_bytes).", v->cache.max_bytes);
	single(out, "partdns_cache_inserts_total", "counter", "Answers stored in the cache.", v->cache.inserts);
	single(out, "partdns_cache_evictions_total", "counter", "Cache entries removed to make room.",
	       v->cache.evictions);
	single(out, "partdns_cache_snapshot_saved_total", "counter",
	       "Cache entries written to snapshots (cache.snapshot, partdnsctl cache dump).", v->snap_saved);
	single(out, "partdns_cache_snapshot_loaded_total", "counter",
	       "Cache entries loaded from snapshots (at start, partdnsctl cache load).", v->snap_loaded);
	single(out, "partdns_cache_snapshot_refused_total", "counter",
	       "Entries of snapshot files not loaded: expired, of a changed city, past cache.max_bytes, cached already.",
	       v->snap_refused);
	single(out, "partdns_cache_snapshot_files_refused_total", "counter",
	       "Snapshot files refused whole: another version, truncated, corrupt, larger than cache.max_bytes.",
	       v->snap_files_refused);
	single(out, "partdns_edns_domains", "gauge", "EDNS domains in the running domain set.", v->edns_domains);
	single(out, "partdns_plan_serial", "gauge",
	       "partitions.serial of the running partition plan (0 = the config keeps none).", v->plan_serial);
	if (v->fleet_on) {
		/* how far a node lags: max by (job) (partdns_fleet_revision) - on (job) group_right partdns_fleet_revision */
		single(out, "partdns_fleet_revision", "gauge",
		       "Revision of the shared store (store.etcd) applied to this node's local store.",
		       (uint64_t)v->fleet.revision);
		single(out, "partdns_fleet_connected", "gauge",
		       "1 while this node watches the shared store; 0 while it serves its last applied state.",
		       v->fleet.connected ? 1 : 0);
		single(out, "partdns_fleet_resyncs_total", "counter",
		       "Full copies of the shared store (at start, a new cluster, a compacted revision).",
		       v->fleet.resyncs);
		single(out, "partdns_fleet_bad_records_total", "counter",
		       "Records of the shared store that did not decode and were left out.", v->fleet.bad_records);
	}
}

/* Local answers, NOTIFYs, TCP connections. */
static void write_listeners(FILE *out, const struct stats_view *v)
{
	const uint64_t *l = v->listeners;

	single(out, "partdns_local_answers_total", "counter",
	       "Queries answered from local data (local_zones).", l[C_local_answers]);
	single(out, "partdns_notifies_total", "counter",
	       "NOTIFY messages received (for the policy zones' primaries).", l[C_notifies]);
	single(out, "partdns_tcp_paused_total", "counter",
	       "Times a TCP connection stopped being read because its replies waited unread (server.tcp_out_max).",
	       l[C_tcp_paused]);
	family(out, "partdns_tcp_refused_total", "counter",
	       "TCP connections closed at accept: over server.tcp_max_per_client, or the thread full with none idle.");
	fprintf(out, "partdns_tcp_refused_total{reason=\"per_client\"} %" PRIu64 "\n", l[C_tcp_refused_client]);
	fprintf(out, "partdns_tcp_refused_total{reason=\"full\"} %" PRIu64 "\n", l[C_tcp_refused_full]);
	single(out, "partdns_tls_handshakes_total", "counter",
	       "TLS handshakes completed on server.listen_tls and listen_https (resumed ones included).", l[C_tls_handshakes]);
	single(out, "partdns_tls_resumed_total", "counter",
	       "Of partdns_tls_handshakes_total, those that resumed a session from a ticket.", l[C_tls_resumed]);
	family(out, "partdns_tls_handshake_failures_total", "counter",
	       "TLS handshakes that did not complete: refused by TLS (no shared version, cipher or ALPN; not TLS "
	       "at all), or not done within server.tls_handshake_ms.");
	fprintf(out, "partdns_tls_handshake_failures_total{reason=\"error\"} %" PRIu64 "\n", l[C_tls_handshake_failed]);
	fprintf(out, "partdns_tls_handshake_failures_total{reason=\"timeout\"} %" PRIu64 "\n",
	        l[C_tls_handshake_timeout]);
	family(out, "partdns_tcp_closed_total", "counter",
	       "TCP connections closed by partdns: evicted for a new one, too slow a message, idle.");
	fprintf(out, "partdns_tcp_closed_total{reason=\"evicted\"} %" PRIu64 "\n", l[C_tcp_evicted]);
	fprintf(out, "partdns_tcp_closed_total{reason=\"slow\"} %" PRIu64 "\n", l[C_tcp_slow_closed]);
	fprintf(out, "partdns_tcp_closed_total{reason=\"idle\"} %" PRIu64 "\n", l[C_tcp_idle_closed]);
}

/* Latency histograms. */
static void write_latency(FILE *out, const struct stats_view *v)
{
	family(out, "partdns_upstream_latency_seconds", "histogram",
	       "Upstream latency by pool: for normal, from handing a lookup to libunbound to its answer or failure "
	       "before the deadline (cache hits inside libunbound included); for edns, from sending a query to its "
	       "matching response.");
	for (int p = 0; p < STATS_POOLS; p++) {
		char labels[32];
		snprintf(labels, sizeof(labels), "pool=\"%s\"", pool_names[p]);
		metrics_write_histogram(out, "partdns_upstream_latency_seconds", labels, &v->upstream[p]);
	}
	family(out, "partdns_response_seconds", "histogram",
	       "Client response time of cache misses answered after a resolution (joined or started): from the "
	       "query's arrival to its reply; a partitioned client's CNAME chain continued through the EDNS pool "
	       "counts from that continuation. Cache hits are not in it.");
	metrics_write_histogram(out, "partdns_response_seconds", "", &v->response);
}

static void write_global(FILE *out, const struct stats_view *v)
{
	write_clients(out, v);
	write_pools(out, v);
	write_state(out, v);
	write_listeners(out, v);
	write_latency(out, v);
}

/* One per-partition family of a single value per partition (field: its offset in struct stats_partition). */
static void per_partition(FILE *out, const struct stats_view *v, const char *name, const char *type,
                          const char *help, size_t field)
{
	family(out, name, type, help);
	for (size_t id = 0; id <= ptable_size(v->partitions); id++) {
		char label[256];
		metrics_escape_label(ptable_name(v->partitions, (unsigned)id), label, sizeof(label));
		uint64_t val;
		memcpy(&val, (const char *)&v->part[id] + field, sizeof(val));
		fprintf(out, "%s{partition=\"%s\"} %" PRIu64 "\n", name, label, val);
	}
}

static void write_partitions(FILE *out, const struct stats_view *v)
{
	size_t np = ptable_size(v->partitions);
	family(out, "partdns_partition_queries_total", "counter",
	       "Queries from clients classified into the partition (after the allow list, rate limit and "
	       "ANY/AXFR/class checks), by transport; partition \"common\" holds the unpartitioned.");
	for (size_t id = 0; id <= np; id++) {
		char label[256];
		metrics_escape_label(ptable_name(v->partitions, (unsigned)id), label, sizeof(label));
		fprintf(out, "partdns_partition_queries_total{partition=\"%s\",transport=\"udp\"} %" PRIu64 "\n", label,
		        v->part[id].udp);
		fprintf(out, "partdns_partition_queries_total{partition=\"%s\",transport=\"tcp\"} %" PRIu64 "\n", label,
		        v->part[id].tcp);
	}
	static const struct {
		const char *name, *type, *help;
		size_t field;
	} fam[] = {
		{ "partdns_partition_cache_hits_total", "counter", "Queries of the partition answered from the cache.",
		  offsetof(struct stats_partition, hits) },
		{ "partdns_partition_cache_misses_total", "counter",
		  "Queries of the partition that waited for a resolution (as partdns_cache_misses_total).",
		  offsetof(struct stats_partition, misses) },
		{ "partdns_partition_ecs_resolutions_total", "counter",
		  "Resolutions started through the EDNS pool with the partition's mapped ECS identity.",
		  offsetof(struct stats_partition, edns) },
		{ "partdns_partition_cache_entries", "gauge",
		  "Cache entries under the partition's own keys (flagged names asked by its clients; "
		  "partition \"common\" holds every other entry).",
		  offsetof(struct stats_partition, cache_entries) },
		{ "partdns_partition_cache_bytes", "gauge", "Bytes of those entries, as partdns_cache_bytes counts them.",
		  offsetof(struct stats_partition, cache_bytes) },
		{ "partdns_partition_steering_answers_total", "counter",
		  "Final answers the EDNS pool got for the partition's flagged queries (partdnsctl steering).",
		  offsetof(struct stats_partition, steer_answers) },
		{ "partdns_partition_steering_ecs_echoed_total", "counter",
		  "Of those, answers whose authority echoed the partition's ECS (the rest ignored it: no steering).",
		  offsetof(struct stats_partition, steer_echoed) },
		{ "partdns_partition_standby", "gauge",
		  "1 while the partition is failed over to its standby identity (partdnsctl partition failover).",
		  offsetof(struct stats_partition, standby) },
	};
	for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++)
		per_partition(out, v, fam[f].name, fam[f].type, fam[f].help, fam[f].field);
	static const char *const rcode_names[PRC_N] = { [PRC_NOERROR] = "NOERROR", [PRC_NXDOMAIN] = "NXDOMAIN",
		                                         [PRC_SERVFAIL] = "SERVFAIL", [PRC_REFUSED] = "REFUSED",
		                                         [PRC_FORMERR] = "FORMERR", [PRC_NOTIMP] = "NOTIMP",
		                                         [PRC_BADVERS] = "BADVERS" };
	family(out, "partdns_partition_responses_total", "counter",
	       "Replies to queries of the partition, by response code (replies written before classification: "
	       "malformed, not allowed, rate-limited, ANY, unmatched refused, are only in partdns_responses_total).");
	for (size_t id = 0; id <= np; id++) {
		char label[256];
		metrics_escape_label(ptable_name(v->partitions, (unsigned)id), label, sizeof(label));
		for (int k = 0; k < PRC_N; k++)
			fprintf(out, "partdns_partition_responses_total{partition=\"%s\",rcode=\"%s\"} %" PRIu64 "\n", label,
			        rcode_names[k], v->part[id].rcode[k]);
	}
}

/* rpz_each's callbacks for the policy-zone families */
struct rpz_metrics {
	FILE *out;
	const struct ptable *t;
	bool hits; /* this pass writes hits by partition, else rules per zone */
};

static void rpz_zone_metric(const char *zone, uint64_t rules, uint64_t hits, void *arg)
{
	struct rpz_metrics *m = arg;
	(void)hits;
	if (m->hits)
		return;
	char z[512];
	metrics_escape_label(zone, z, sizeof(z));
	fprintf(m->out, "partdns_rpz_rules{zone=\"%s\"} %" PRIu64 "\n", z, rules);
}

static void rpz_part_metric(const char *zone, unsigned part, uint64_t hits, void *arg)
{
	struct rpz_metrics *m = arg;
	const char *name = ptable_name(m->t, part);
	if (!m->hits || name == NULL)
		return;
	char z[512], p[256];
	metrics_escape_label(zone, z, sizeof(z));
	metrics_escape_label(name, p, sizeof(p));
	fprintf(m->out, "partdns_rpz_hits_total{zone=\"%s\",partition=\"%s\"} %" PRIu64 "\n", z, p, hits);
}

static void write_rpz(FILE *out, const struct stats_view *v)
{
	if (v->rpz == NULL)
		return;
	struct rpz_metrics m = { .out = out, .t = v->partitions };
	family(out, "partdns_rpz_rules", "gauge", "Triggers loaded per response policy zone.");
	rpz_each(v->rpz, rpz_zone_metric, rpz_part_metric, &m);
	m.hits = true;
	family(out, "partdns_rpz_hits_total", "counter",
	       "Queries a response policy zone decided, by zone and partition (since the config was loaded).");
	rpz_each(v->rpz, rpz_zone_metric, rpz_part_metric, &m);
}

void metrics_write(FILE *out, const struct stats_view *v)
{
	write_global(out, v);
	write_partitions(out, v);
	write_rpz(out, v);
}
