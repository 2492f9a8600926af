/* SPDX-License-Identifier: BSD-3-Clause */
/* The operator's console: /status.json from the figures the daemon gathered, and the page that shows it. */
#include "resolver/ops/console.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "partition/partition.h"
#include "util/json.h"

/* Samples kept: an hour of steps, the one that starts it, and one spare for a step taken a little early. */
#define CONSOLE_SAMPLES (CONSOLE_HISTORY_S / CONSOLE_STEP_S + 2u)
/* The rate shown as "now" spans at least this much, when the history has it. */
#define CONSOLE_MIN_WINDOW_MS 5000u

/* Each city's cumulative counters at one moment (zero: the daemon's start, every counter 0, no arrays). */
struct console_sample {
	uint64_t ms;
	bool zero;
	uint64_t *queries, *hits, *misses; /* np + 1 each, by partition id (0 = common) */
	uint64_t resp[HIST_NB + 1];        /* the response-time histogram's buckets */
};

struct console {
	struct console_sample s[CONSOLE_SAMPLES];
	size_t head, n;          /* the oldest at s[head], n of them */
	uint64_t *block;         /* every sample's arrays, (np + 1) * 3 per sample */
	size_t np;               /* partitions the block is laid out for */
	uint64_t digest;         /* the plan the history is of */
	bool laid_out;
	uint64_t since_ms;       /* when this history starts (the start, or the plan change that reset it) */
};

struct console *console_new(uint64_t start_ms)
{
	struct console *c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	c->s[0].ms = start_ms;
	c->s[0].zero = true;
	c->n = 1;
	c->since_ms = start_ms;
	return c;
}

void console_free(struct console *c)
{
	if (c == NULL)
		return;
	free(c->block);
	free(c);
}

static struct console_sample *nth(struct console *c, size_t i)
{
	return &c->s[(c->head + i) % CONSOLE_SAMPLES];
}

static uint64_t q_of(const struct console_sample *s, size_t id)
{
	return s->zero ? 0 : s->queries[id];
}

static uint64_t h_of(const struct console_sample *s, size_t id)
{
	return s->zero ? 0 : s->hits[id];
}

static uint64_t m_of(const struct console_sample *s, size_t id)
{
	return s->zero ? 0 : s->misses[id];
}

/* Counters only grow; a partition renumbered without a digest change must not show a negative rate. */
static uint64_t delta(uint64_t now, uint64_t then)
{
	return now >= then ? now - then : 0;
}

/*
 * Lay the ring out for np partitions under plan digest. A new plan can
 * renumber the cities (the threads count by partition id), so the history
 * of the old one is dropped rather than shown under the wrong names.
 */
static int layout(struct console *c, size_t np, uint64_t digest, uint64_t now_ms)
{
	if (c->laid_out && c->np == np && c->digest == digest)
		return 0;
	uint64_t *block = calloc(CONSOLE_SAMPLES * (np + 1) * 3, sizeof(*block));
	if (block == NULL)
		return -ENOMEM;
	bool first = !c->laid_out;
	free(c->block);
	c->block = block;
	c->np = np;
	c->digest = digest;
	c->laid_out = true;
	for (size_t i = 0; i < CONSOLE_SAMPLES; i++) {
		uint64_t *b = block + i * (np + 1) * 3;
		c->s[i].queries = b;
		c->s[i].hits = b + (np + 1);
		c->s[i].misses = b + 2 * (np + 1);
	}
	if (!first) { /* the start's zero sample is true of the first plan only */
		c->head = 0;
		c->n = 0;
		c->since_ms = now_ms;
	}
	return 0;
}

/* Take a sample of v when the newest is a step old (or there is none); drop what is past the hour. */
static void sample(struct console *c, const struct console_view *v)
{
	if (c->n == 0 || v->now_ms >= nth(c, c->n - 1)->ms + CONSOLE_STEP_S * 1000u) {
		if (c->n == CONSOLE_SAMPLES) { /* the oldest goes */
			c->head = (c->head + 1) % CONSOLE_SAMPLES;
			c->n--;
		}
		struct console_sample *s = nth(c, c->n);
		c->n++;
		s->ms = v->now_ms;
		s->zero = false;
		for (size_t id = 0; id <= c->np; id++) {
			s->queries[id] = v->stats->part[id].queries;
			s->hits[id] = v->stats->part[id].hits;
			s->misses[id] = v->stats->part[id].misses;
		}
		memcpy(s->resp, v->stats->response.bucket, sizeof(s->resp));
	}
	/* a sample whose successor is already past the hour is of no use (the first interval may straddle it) */
	while (c->n > 2 && nth(c, 1)->ms + CONSOLE_HISTORY_S * 1000u < v->now_ms) {
		c->head = (c->head + 1) % CONSOLE_SAMPLES;
		c->n--;
	}
}

/* The newest sample at least CONSOLE_MIN_WINDOW_MS old, else the oldest at least 1 s old; NULL: none. */
static const struct console_sample *rate_base(struct console *c, uint64_t now_ms)
{
	for (size_t i = c->n; i-- > 0;)
		if (nth(c, i)->ms + CONSOLE_MIN_WINDOW_MS <= now_ms)
			return nth(c, i);
	if (c->n > 0 && nth(c, 0)->ms + 1000u <= now_ms)
		return nth(c, 0);
	return NULL;
}

static void write_ratio(FILE *out, uint64_t hits, uint64_t misses)
{
	if (hits + misses == 0)
		fputs("null", out);
	else
		fprintf(out, "%.4f", (double)hits / (double)(hits + misses));
}

/*
 * The q quantile (0..1) of the histogram's counts, as the upper bound of
 * the bucket holding it, in ms: all a histogram can say honestly. -1: no
 * counts; -2: past the last bound.
 */
static double quantile_ms(const uint64_t *b, double q)
{
	uint64_t total = 0;
	for (size_t i = 0; i <= HIST_NB; i++)
		total += b[i];
	if (total == 0)
		return -1;
	double want = q * (double)total;
	uint64_t cum = 0;
	for (size_t i = 0; i < HIST_NB; i++) {
		cum += b[i];
		if ((double)cum >= want)
			return (double)hist_bounds_ns[i] / 1e6;
	}
	return -2;
}

static void write_quantile(FILE *out, double ms)
{
	if (ms == -1)
		fputs("null", out);
	else if (ms == -2)
		fprintf(out, "\"over %g\"", (double)hist_bounds_ns[HIST_NB - 1] / 1e6);
	else
		fprintf(out, "%g", ms);
}

static void iso_time(time_t t, char *buf, size_t size)
{
	struct tm tm;
	if (t == 0 || gmtime_r(&t, &tm) == NULL || strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(buf, size, "-");
}

/* Do two steering rows share an address (the same CDN node)? */
static bool same_node(const struct steering_row *a, const struct steering_row *b)
{
	for (unsigned i = 0; i < a->naddr; i++)
		for (unsigned k = 0; k < b->naddr; k++)
			if (a->addr[i].family == b->addr[k].family &&
			    memcmp(a->addr[i].addr, b->addr[k].addr, a->addr[i].family == AF_INET ? 4 : 16) == 0)
				return true;
	return false;
}

/*
 * The other cities whose current node for r's name is r's (a JSON list to
 * out when out is not NULL). A city on standby is left out: its answers
 * are another identity's by the operator's choice, and flagging the city
 * it stands in for would turn a healthy city red. @return how many.
 */
static size_t elsewhere(const struct console_view *v, const struct steering_row *r, FILE *out)
{
	const struct ptable *t = v->stats->partitions;
	size_t k = 0;
	for (size_t i = 0; i < v->nrows; i++) {
		const struct steering_row *o = &v->rows[i];
		if (o == r || strcmp(o->rule, r->rule) != 0 || strcmp(o->partition, r->partition) == 0)
			continue;
		int id = ptable_find(t, o->partition);
		if (id <= 0 || v->standby_to[id] != NULL || !same_node(r, o))
			continue;
		if (out != NULL) {
			fputs(k ? ", " : "", out);
			json_string(out, o->partition);
		}
		k++;
	}
	return k;
}

/* The last answer for r came without our ECS echoed: the authority did not steer by it. */
static bool ecs_ignored(const struct steering_row *r)
{
	return r->answers > 0 && !r->last_echoed;
}

/* One flagged name of a city: where it is steered now. */
static void write_name(FILE *out, const struct console_view *v, const struct steering_row *r)
{
	fputs("{ \"name\": ", out);
	json_string(out, r->rule);
	fputs(", \"nodes\": [", out);
	for (unsigned k = 0; k < r->naddr; k++) {
		char ip[INET6_ADDRSTRLEN];
		inet_ntop(r->addr[k].family, r->addr[k].addr, ip, sizeof(ip));
		fprintf(out, "%s\"%s\"", k ? ", " : "", ip);
	}
	const char *ecs = r->echoed == r->answers ? "echoed" : r->echoed == 0 ? "ignored" : "mixed";
	char last[32];
	iso_time(r->last, last, sizeof(last));
	fprintf(out, "], \"ecs\": \"%s\", \"answers\": %" PRIu64 ", \"echoed\": %" PRIu64 ", \"last\": \"%s\"", ecs,
	        r->answers, r->echoed, last);
	fputs(", \"steered_elsewhere\": ", out);
	fputs(elsewhere(v, r, NULL) > 0 ? "true" : "false", out);
	fputs(", \"with\": [", out);
	elsewhere(v, r, out);
	fprintf(out, "], \"ecs_ignored\": %s }", ecs_ignored(r) ? "true" : "false");
}

/* A city's mapped identity: its IPv4 /32 as an address, its IPv6 prefix. */
static void write_mapped(FILE *out, const struct mapping_entry *e)
{
	fputc('[', out);
	bool first = true;
	if (e != NULL && e->has_v4) {
		char ip[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, e->v4.addr, ip, sizeof(ip));
		fprintf(out, "\"%s\"", ip);
		first = false;
	}
	if (e != NULL && e->has_v6) {
		char p[PREFIX_STRLEN];
		prefix_format(&e->v6, p, sizeof(p));
		fprintf(out, "%s\"%s\"", first ? "" : ", ", p);
	}
	fputc(']', out);
}

/* Rows sort by answers, busiest first (the city's top names). */
static int by_answers(const void *a, const void *b)
{
	const struct steering_row *const *x = a, *const *y = b;
	return (*x)->answers < (*y)->answers ? 1 : (*x)->answers > (*y)->answers ? -1 : strcmp((*x)->rule, (*y)->rule);
}

/* Rates over [base, now] and the history's intervals, for partition id. */
static void write_rates(FILE *out, struct console *c, const struct console_view *v, size_t id,
                        const struct console_sample *base)
{
	const struct stats_partition *p = &v->stats->part[id];
	fputs("\"qps\": ", out);
	if (base == NULL)
		fputs("null", out);
	else
		fprintf(out, "%.2f", (double)delta(p->queries, q_of(base, id)) * 1000.0 / (double)(v->now_ms - base->ms));
	fputs(", \"hit_ratio\": ", out);
	if (base == NULL)
		write_ratio(out, p->hits, p->misses);
	else
		write_ratio(out, delta(p->hits, h_of(base, id)), delta(p->misses, m_of(base, id)));
	fprintf(out, ", \"queries\": %" PRIu64 ", \"hits\": %" PRIu64 ", \"misses\": %" PRIu64, p->queries, p->hits,
	        p->misses);
	/* one rate per interval between samples, then the one from the newest to now */
	fputs(", \"qps_history\": [", out);
	size_t k = 0;
	for (size_t i = 1; i <= c->n; i++) {
		const struct console_sample *a = nth(c, i - 1);
		uint64_t ms = i < c->n ? nth(c, i)->ms : v->now_ms;
		if (ms <= a->ms)
			continue;
		uint64_t q = i < c->n ? q_of(nth(c, i), id) : p->queries;
		fprintf(out, "%s%.2f", k++ ? ", " : "", (double)delta(q, q_of(a, id)) * 1000.0 / (double)(ms - a->ms));
	}
	fputc(']', out);
}

/* The ages (s before now) of the history's interval ends, oldest first: qps_history[i] spans ages[i]..ages[i+1]. */
static void write_history(FILE *out, struct console *c, const struct console_view *v)
{
	fprintf(out, "  \"history\": { \"step_s\": %u, \"since_s\": %.1f, \"ages_s\": [", CONSOLE_STEP_S,
	        (double)(v->now_ms - c->since_ms) / 1000.0);
	size_t k = 0;
	for (size_t i = 0; i < c->n; i++) {
		const struct console_sample *a = nth(c, i);
		uint64_t end = i + 1 < c->n ? nth(c, i + 1)->ms : v->now_ms;
		if (end <= a->ms)
			continue;
		fprintf(out, "%s%.1f", k++ ? ", " : "", (double)(v->now_ms - a->ms) / 1000.0);
	}
	fprintf(out, "%s0] },\n", k ? ", " : "");
}

/* Latency: the daemon times cache misses only, all cities together; over the history (the last hour at most). */
static void write_latency(FILE *out, struct console *c, const struct console_view *v)
{
	uint64_t b[HIST_NB + 1];
	const struct console_sample *from = c->n > 0 ? nth(c, 0) : NULL;
	for (size_t i = 0; i <= HIST_NB; i++)
		b[i] = delta(v->stats->response.bucket[i], from != NULL && !from->zero ? from->resp[i] : 0);
	uint64_t count = 0;
	for (size_t i = 0; i <= HIST_NB; i++)
		count += b[i];
	fprintf(out, "  \"latency\": { \"scope\": \"global\", \"per_city\": false, \"of\": \"cache misses, arrival to reply "
	             "(hits are not timed)\", \"estimate\": \"upper bound of the histogram bucket\", \"window_s\": %.1f, "
	             "\"count\": %" PRIu64 ", \"p50_ms\": ",
	        from != NULL ? (double)(v->now_ms - from->ms) / 1000.0 : 0.0, count);
	write_quantile(out, quantile_ms(b, 0.5));
	fputs(", \"p99_ms\": ", out);
	write_quantile(out, quantile_ms(b, 0.99));
	fputs(" },\n", out);
}

static int write_cities(FILE *out, struct console *c, const struct console_view *v, const struct console_sample *base)
{
	const struct ptable *t = v->stats->partitions;
	size_t np = ptable_size(t);
	const struct steering_row **mine = malloc((v->nrows + 1) * sizeof(*mine));
	if (mine == NULL)
		return -ENOMEM;
	fputs("  \"cities\": [", out);
	for (size_t id = 1; id <= np; id++) {
		const char *name = ptable_name(t, (unsigned)id);
		const struct mapping_entry *e = mapping_get(v->mapping, (unsigned)id);
		size_t n = 0;
		bool away = false, ignored = false;
		for (size_t i = 0; i < v->nrows; i++)
			if (strcmp(v->rows[i].partition, name) == 0) {
				mine[n++] = &v->rows[i];
				away |= elsewhere(v, &v->rows[i], NULL) > 0;
				ignored |= ecs_ignored(&v->rows[i]);
			}
		qsort(mine, n, sizeof(*mine), by_answers);
		const char *to = v->standby_to[id];
		fprintf(out, "%s\n    { \"name\": ", id > 1 ? "," : "");
		json_string(out, name);
		fputs(", \"label\": ", out);
		json_string(out, e != NULL ? e->label : NULL);
		fputs(", \"mapped\": ", out);
		write_mapped(out, e);
		fputs(", \"standby\": ", out);
		json_string(out, to);
		fputs(", ", out);
		write_rates(out, c, v, id, base);
		fprintf(out, ",\n      \"failed_over\": %s, \"steered_elsewhere\": %s, \"ecs_ignored\": %s, \"alarm\": %s, "
		             "\"flagged_names\": %zu, \"names\": [",
		        to ? "true" : "false", away ? "true" : "false", ignored ? "true" : "false",
		        to || away || ignored ? "true" : "false", n);
		for (size_t i = 0; i < n && i < CONSOLE_TOP_NAMES; i++) {
			fputs(i ? ",\n        " : "\n        ", out);
			write_name(out, v, mine[i]);
		}
		fputs(n ? " ] }" : "] }", out);
	}
	fputs(np ? "\n  ],\n" : "],\n", out);
	free(mine);
	/* clients in no partition: the common cache */
	fputs("  \"common\": { ", out);
	write_rates(out, c, v, 0, base);
	fputs(" },\n", out);
	return 0;
}

static void write_unmatched(FILE *out, const struct console_view *v)
{
	fputs("  \"unmatched\": [", out);
	size_t n = v->nunmatched < CONSOLE_UNMATCHED ? v->nunmatched : CONSOLE_UNMATCHED;
	for (size_t i = 0; i < n; i++) {
		const struct topk_item *it = &v->unmatched[i];
		struct prefix p = { .family = it->family, .len = it->family == AF_INET ? 24 : 48 };
		memcpy(p.addr, it->addr, sizeof(p.addr));
		char net[PREFIX_STRLEN];
		prefix_format(&p, net, sizeof(net));
		fprintf(out, "%s\n    { \"network\": \"%s\", \"queries\": %" PRIu64 ", \"approximate\": %s }", i ? "," : "",
		        net, it->count, it->error ? "true" : "false");
	}
	fputs(n ? "\n  ],\n" : "],\n", out);
}

static void write_state(FILE *out, const struct console_view *v)
{
	const struct stats_view *s = v->stats;
	fputs("  \"plan\": { \"serial\": ", out);
	if (s->plan_serial != 0)
		fprintf(out, "%u", s->plan_serial);
	else
		fputs("null", out);
	fprintf(out, ", \"digest\": \"%016" PRIx64 "\", \"source\": ", v->plan_digest);
	json_string(out, v->plan_source);
	fprintf(out, " },\n  \"store\": { \"version\": %" PRIu64 " },\n  \"fleet\": ", v->store_version);
	if (!s->fleet_on) {
		fputs("null,\n", out);
		return;
	}
	/* this node as the fleet sees it; the other nodes are in partdnsctl fleet status (the daemon keeps no list) */
	fputs("{ \"node\": ", out);
	json_string(out, s->fleet.name);
	fprintf(out, ", \"revision\": %" PRId64 ", \"connected\": %s, \"member\": ", s->fleet.revision,
	        s->fleet.connected ? "true" : "false");
	json_string(out, s->fleet.member);
	fprintf(out, ", \"resyncs\": %" PRIu64 " },\n", s->fleet.resyncs);
}

int console_status(struct console *c, const struct console_view *v, FILE *out)
{
	size_t np = ptable_size(v->stats->partitions);
	int rc = layout(c, np, v->plan_digest, v->now_ms);
	if (rc != 0)
		return rc;
	sample(c, v);
	const struct console_sample *base = rate_base(c, v->now_ms);
	char now[32];
	iso_time(v->now, now, sizeof(now));
	fputs("{\n  \"version\": ", out);
	json_string(out, v->version);
	fprintf(out, ",\n  \"generated\": \"%s\",\n  \"uptime\": %" PRIu64 ",\n  \"window_s\": ", now, v->stats->uptime);
	if (base != NULL)
		fprintf(out, "%.1f,\n", (double)(v->now_ms - base->ms) / 1000.0);
	else
		fputs("null,\n", out);
	write_history(out, c, v);
	write_latency(out, c, v);
	if ((rc = write_cities(out, c, v, base)) != 0)
		return rc;
	write_unmatched(out, v);
	write_state(out, v);
	fprintf(out, "  \"steering_rows_not_kept\": %" PRIu64 "\n}\n", v->rows_dropped);
	return 0;
}

/* Nothing but this page and its own origin: no external script, style, font or image can load, whatever edits it. */
const char console_csp[] = "default-src 'none'; connect-src 'self'; script-src 'unsafe-inline'; "
                           "style-src 'unsafe-inline'; img-src data:";

/* The page. Plain DOM, no library; text goes in with textContent only (names are whatever a DNS label holds). */
static const char page_html[] =
	"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	"<link rel=\"icon\" href=\"data:,\">\n"
	"<title>partdns console</title>\n<style>\n"
	"body{font:14px/1.4 system-ui,sans-serif;margin:1em 2em;color:#222}\n"
	"h1{font-size:1.3em;margin:0 0 .2em}h2{font-size:1.1em;margin:1.2em 0 .3em}\n"
	"table{border-collapse:collapse}td,th{padding:.25em .6em;border-bottom:1px solid #ddd;text-align:left;"
	"vertical-align:top}\n"
	"th{background:#f3f3f3}td.n{text-align:right;font-variant-numeric:tabular-nums}\n"
	"tr.alarm{background:rgb(255,214,214);color:rgb(153,0,0)}tr.alarm td{font-weight:600}\n"
	"span.bad{color:rgb(190,0,0)}#err{color:rgb(190,0,0);font-weight:600}.muted{color:#777}\n"
	"svg text{font-size:11px;fill:#444}\n"
	"</style></head><body>\n"
	"<h1>partdns <span id=\"version\"></span></h1>\n"
	"<div id=\"facts\" class=\"muted\"></div><div id=\"err\"></div>\n"
	"<h2>Cities</h2>\n"
	"<table id=\"cities\"><thead><tr><th>city</th><th>label</th><th>mapped</th><th>standby</th><th>qps</th>"
	"<th>hit ratio</th><th>top flagged names: node now (ECS)</th><th>state</th></tr></thead><tbody></tbody></table>\n"
	"<p id=\"latency\" class=\"muted\"></p>\n"
	"<h2>Queries per second, last hour</h2>\n"
	"<svg id=\"chart\" width=\"900\" height=\"240\" role=\"img\" aria-label=\"queries per second per city\"></svg>\n"
	"<div id=\"legend\"></div>\n"
	"<h2>Unmatched client networks</h2>\n"
	"<table id=\"unmatched\"><thead><tr><th>network</th><th>queries</th></tr></thead><tbody></tbody></table>\n"
	"<h2>Plan, store, fleet</h2>\n<table id=\"state\"><tbody></tbody></table>\n"
	"<script>\n"
	"'use strict';\n"
	"const NS='http://www.w3.org/2000/svg';\n"
	"function el(tag,text,cls){const e=document.createElement(tag);if(text!==undefined&&text!==null)"
	"e.textContent=String(text);if(cls)e.className=cls;return e;}\n"
	"function num(v,d){return v===null||v===undefined?'\\u2013':(typeof v==='number'?v.toFixed(d):String(v));}\n"
	"function color(i,n){return 'hsl('+Math.round(i*360/Math.max(n,1))+',65%,42%)';}\n"
	"function cities(d){\n"
	" const tb=document.querySelector('#cities tbody');tb.textContent='';\n"
	" for(const c of d.cities){\n"
	"  const tr=el('tr');tr.dataset.city=c.name;if(c.alarm)tr.className='alarm';\n"
	"  tr.append(el('td',c.name),el('td',c.label),el('td',c.mapped.join(' ')),el('td',c.standby===null?'\\u2013':"
	"'on standby: '+c.standby),el('td',num(c.qps,2),'n'),el('td',c.hit_ratio===null?'\\u2013':"
	"(100*c.hit_ratio).toFixed(1)+' %','n'));\n"
	"  const names=el('td');\n"
	"  for(const x of c.names){const line=el('div');line.append(el('span',x.name+' \\u2192 '+"
	"(x.nodes.length?x.nodes.join(', '):'no address')+' ('+x.ecs+')',x.steered_elsewhere||x.ecs_ignored?'bad':''));"
	"if(x.with.length)line.append(el('span',' = node of '+x.with.join(', '),'bad'));names.append(line);}\n"
	"  if(!c.names.length)names.textContent='\\u2013';\n"
	"  const why=[];if(c.failed_over)why.push('failed over');if(c.steered_elsewhere)why.push('steered to another "
	"city\\u2019s node');if(c.ecs_ignored)why.push('ECS ignored');\n"
	"  tr.append(names,el('td',why.length?why.join(', '):'ok'));tb.append(tr);\n"
	" }\n"
	" const l=d.latency;document.getElementById('latency').textContent='Latency, all cities together (partdns "
	"times '+l.of+'; no per-city figures): p50 \\u2264 '+num(l.p50_ms,1)+' ms, p99 \\u2264 '+num(l.p99_ms,1)+"
	"' ms over '+l.count+' misses in the last '+Math.round(l.window_s)+' s.';\n"
	"}\n"
	"function chart(d){\n"
	" const svg=document.getElementById('chart'),W=900,H=240,L=50,R=10,T=10,B=25;svg.textContent='';\n"
	" const ages=d.history.ages_s,span=3600;let max=1;\n"
	" for(const c of d.cities)for(const q of c.qps_history)max=Math.max(max,q);\n"
	" const x=a=>L+(W-L-R)*(1-Math.min(a,span)/span),y=q=>T+(H-T-B)*(1-q/max);\n"
	" const line=(x1,y1,x2,y2)=>{const e=document.createElementNS(NS,'line');e.setAttribute('x1',x1);"
	"e.setAttribute('y1',y1);e.setAttribute('x2',x2);e.setAttribute('y2',y2);e.setAttribute('stroke','#bbb');"
	"svg.append(e);};\n"
	" const text=(s,tx,ty,anchor)=>{const e=document.createElementNS(NS,'text');e.textContent=s;"
	"e.setAttribute('x',tx);e.setAttribute('y',ty);e.setAttribute('text-anchor',anchor);svg.append(e);};\n"
	" line(L,T,L,H-B);line(L,H-B,W-R,H-B);text(max.toFixed(1),L-4,T+10,'end');text('0',L-4,H-B,'end');\n"
	" for(const m of [60,45,30,15,0])text(m?'-'+m+' min':'now',x(m*60),H-8,'middle');\n"
	" const legend=document.getElementById('legend');legend.textContent='';\n"
	" d.cities.forEach((c,i)=>{\n"
	"  const pts=[];\n"
	"  for(let k=0;k<c.qps_history.length;k++){if(ages[k+1]>=span)continue;"
	"pts.push(x(ages[k])+','+y(c.qps_history[k]),x(ages[k+1])+','+y(c.qps_history[k]));}\n"
	"  const p=document.createElementNS(NS,'polyline');p.setAttribute('points',pts.join(' '));"
	"p.setAttribute('fill','none');p.setAttribute('stroke',color(i,d.cities.length));p.setAttribute('stroke-width','1.5');"
	"p.dataset.city=c.name;svg.append(p);\n"
	"  const s=el('span',c.name+'  ');s.style.color=color(i,d.cities.length);legend.append(s);\n"
	" });\n"
	"}\n"
	"function rest(d){\n"
	" const tb=document.querySelector('#unmatched tbody');tb.textContent='';\n"
	" for(const u of d.unmatched){const tr=el('tr');tr.append(el('td',u.network),el('td',u.queries+"
	"(u.approximate?' (approximate)':''),'n'));tb.append(tr);}\n"
	" if(!d.unmatched.length){const tr=el('tr');tr.append(el('td','none','muted'));tb.append(tr);}\n"
	" const st=document.querySelector('#state tbody');st.textContent='';\n"
	" const row=(k,v)=>{const tr=el('tr');tr.append(el('th',k),el('td',v));st.append(tr);};\n"
	" row('plan serial',d.plan.serial===null?'none':d.plan.serial);row('plan digest',d.plan.digest);"
	"row('plan from',d.plan.source);row('store version',d.store.version);\n"
	" if(d.fleet===null)row('fleet','off (no store.etcd)');else{row('fleet node',d.fleet.node);"
	"row('fleet revision applied',d.fleet.revision);row('watching the shared store',d.fleet.connected?'yes':'no');"
	"row('etcd member',d.fleet.member||'\\u2013');row('other members','partdnsctl fleet status');}\n"
	" document.getElementById('version').textContent=d.version;\n"
	" document.getElementById('facts').textContent='updated '+d.generated+', up '+d.uptime+' s, rates over the last '+"
	"num(d.window_s,0)+' s';\n"
	"}\n"
	"async function refresh(){\n"
	" try{const r=await fetch('status.json',{cache:'no-store'});if(!r.ok)throw new Error('status.json: HTTP '+r.status);\n"
	"  const d=await r.json();cities(d);chart(d);rest(d);document.getElementById('err').textContent='';\n"
	"  document.body.dataset.loaded=String(Date.now());}\n"
	" catch(e){document.getElementById('err').textContent='cannot refresh: '+e.message;}\n"
	" setTimeout(refresh,3000);\n"
	"}\n"
	"refresh();\n"
	"</script></body></html>\n";

void console_page(FILE *out)
{
	fputs(page_html, out);
}
