/* SPDX-License-Identifier: BSD-3-Clause */
/* Set up libunbound from the config; libunbound errors are translated here once. */
#include "resolver/base/ubctx.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unbound.h>
#include <unbound-event.h>
#include <unistd.h>

#include "resolver/base/log.h"
#include "util/file.h"

/* Forward zones are clauses, which ub_ctx_set_option cannot take: write them
 * as an unbound.conf fragment and let libunbound read it. */
static int load_forward_zones(struct ub_ctx *ctx, const struct conf *c)
{
	char path[] = "/tmp/partdns-fwd-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0) {
		log_err("resolver.forward_zones: cannot create temporary file: %s", strerror(errno));
		return -1;
	}
	FILE *f = fdopen(fd, "w");
	if (f == NULL) {
		close(fd);
		unlink(path);
		return -1;
	}
	for (size_t i = 0; i < c->resolver.nforward_zones; i++) {
		const struct conf_forward_zone *z = &c->resolver.forward_zones[i];
		fprintf(f, "forward-zone:\n\tname: \"%s\"\n", z->name);
		for (size_t s = 0; s < z->nservers; s++)
			fprintf(f, "\tforward-addr: %s\n", z->servers[s].text);
	}
	fclose(f);
	int rc = ub_ctx_config(ctx, path);
	unlink(path);
	if (rc != 0) {
		log_err("resolver.forward_zones: %s", ub_strerror(rc));
		return -1;
	}
	return 0;
}

/*
 * The stub zones of share (ubctx.h): each an auth-zone holding only its SOA
 * and NS, for-upstream and without fallback, so the iterator answers every
 * name below it (NXDOMAIN) instead of asking its servers. libunbound reads
 * zone files when the context is finalised, so it is finalised here
 * (removing a local zone that does not exist is the API's one call that
 * only finalises) and the files go at once. A name whose text could break
 * the config's quoting gets no stub: its chains are followed as in a plain
 * context.
 *
 * Every zone reads the same two-record file: libunbound starts a zone
 * file's $ORIGIN at the zone's name, so "@" is each zone's apex. A file per
 * zone made building quadratic on ext4 (creating an inode scans the
 * inodes deleted recently, and each build deleted as many as it made: 26 s
 * for 10,000 subtrees on a loaded box, 332 s for 100,000); what is left is
 * libunbound's open and parse of the file per zone (bench/RESULTS.md
 * "Subtree flags at scale"). domain-insecure matters to the validator
 * only: without one no name is listed (each was an option call and a
 * string kept); with one they go into the same config file.
 */
static int load_stub_zones(struct ub_ctx *ctx, const struct conf *c, const struct ubctx_share *share)
{
	char dir[] = "/tmp/partdns-stub-XXXXXX";
	if (mkdtemp(dir) == NULL) {
		log_err("stub zones: cannot create a temporary directory: %s", strerror(errno));
		return -1;
	}
	char conf[sizeof(dir) + 16], zf[sizeof(dir) + 16];
	snprintf(conf, sizeof(conf), "%s/stubs.conf", dir);
	snprintf(zf, sizeof(zf), "%s/stub.zone", dir);
	int rc = -1;
	const char *failed = NULL;
	FILE *z = fopen(zf, "w");
	if (z == NULL) {
		failed = zf;
		goto out;
	}
	fputs("@ 3600 IN SOA partdns-stub.invalid. hostmaster.partdns-stub.invalid. 1 3600 600 86400 3600\n"
	      "@ 3600 IN NS partdns-stub.invalid.\n",
	      z);
	if (fclose(z) != 0) {
		failed = zf;
		goto out;
	}
	FILE *f = fopen(conf, "w");
	if (f == NULL) {
		failed = conf;
		goto out;
	}
	bool insecure = ubctx_validates(c);
	if (insecure)
		fputs("server:\n", f);
	for (size_t i = 0; insecure && i < share->nstubs; i++)
		if (strpbrk(share->stubs[i], "\"\\") == NULL)
			fprintf(f, "\tdomain-insecure: \"%s\"\n", share->stubs[i]);
	/* for-upstream and no fallback are libunbound's defaults for an auth-zone */
	for (size_t i = 0; i < share->nstubs; i++)
		if (strpbrk(share->stubs[i], "\"\\") == NULL)
			fprintf(f, "auth-zone:\n\tname: \"%s\"\n\tzonefile: \"%s\"\n\tfor-downstream: no\n",
			        share->stubs[i], zf);
	if (fclose(f) != 0) {
		failed = conf;
		goto out;
	}
	int e = ub_ctx_config(ctx, conf);
	if (e == 0)
		e = ub_ctx_zone_remove(ctx, "partdns-finalize.invalid.");
	if (e != 0)
		log_err("stub zones: %s", ub_strerror(e));
	else
		rc = 0;
out:
	if (failed != NULL)
		log_err("stub zones: cannot write %s: %s", failed, strerror(errno));
	unlink(conf);
	unlink(zf);
	rmdir(dir);
	return rc;
}

/* libunbound's option names end in ':'; the operator may leave it out. */
static bool option_is(const char *name, const char *want)
{
	size_t n = strlen(want);
	return strncmp(name, want, n) == 0 && (name[n] == '\0' || (name[n] == ':' && name[n + 1] == '\0'));
}

/*
 * The pool's source addresses. libunbound picks one of the destination's
 * family at random for each query (and a random port), but a family with
 * no interface is not ruled out by its iterator: it would still choose
 * servers of that family, fail to send ("no outgoing interfaces of that
 * family") and count the server as failed. do-ip4/do-ip6: no makes the
 * iterator skip them; set after the operator's options, as no source of
 * that family exists for the pool whatever they say.
 */
static int set_outgoing(struct ub_ctx *ctx, const struct ubctx_share *share)
{
	bool v4 = false, v6 = false;
	for (size_t i = 0; i < share->noutgoing; i++) {
		const struct conf_addr *a = &share->outgoing[i];
		v4 |= a->ss.ss_family == AF_INET;
		v6 |= a->ss.ss_family == AF_INET6;
		int rc = ub_ctx_set_option(ctx, "outgoing-interface:", a->text);
		if (rc != 0) {
			log_err("outgoing address %s: %s", a->text, ub_strerror(rc));
			return -1;
		}
	}
	const char *off[2] = { v4 ? NULL : "do-ip4:", v6 ? NULL : "do-ip6:" };
	for (int i = 0; i < 2; i++) {
		int rc = off[i] ? ub_ctx_set_option(ctx, off[i], "no") : 0;
		if (rc != 0) {
			log_err("libunbound option %s no: %s", off[i], ub_strerror(rc));
			return -1;
		}
	}
	return 0;
}

/*
 * libunbound options whose value is a file it reads itself, when the
 * context is finalised: checked as the config's own files are, since its
 * open() of a FIFO would wait there for a writer (a normal-pool thread
 * building a stub context, or the start-up).
 */
static const char *const file_options[] = { "root-hints",          "trust-anchor-file", "auto-trust-anchor-file",
	                                     "trusted-keys-file",   "tls-cert-bundle",   "tls-service-key",
	                                     "tls-service-pem",     "dlv-anchor-file" };

/* The file an option names, or NULL when it names none. */
static const char *option_file(const struct conf_option *o)
{
	for (size_t i = 0; i < sizeof(file_options) / sizeof(file_options[0]); i++)
		if (option_is(o->name, file_options[i]))
			return o->value;
	return NULL;
}

/* Is path (key names it in why) a regular file we can open? @return 0 or -1 (why filled). */
static int check_file(const char *key, const char *path, char *why, size_t len)
{
	if (path == NULL || path[0] == '\0')
		return 0;
	/* open, not access(): the effective user is the one that matters; never
	 * blocking in it, and a FIFO or device is refused (util/file.h) */
	int rc = file_check_regular(path);
	if (rc != 0) {
		snprintf(why, len, "%s: cannot read %s: %s", key, path, file_strerror(rc));
		return -1;
	}
	return 0;
}

int ubctx_check_files(const struct conf *c, char *why, size_t len)
{
	if (check_file("resolver.root_hints", c->resolver.root_hints, why, len) != 0)
		return -1;
	for (size_t i = 0; i < c->resolver.ntrust_anchor; i++)
		if (check_file("resolver.trust_anchor", c->resolver.trust_anchor[i], why, len) != 0)
			return -1;
	for (size_t i = 0; i < c->resolver.noptions; i++) {
		char key[96];
		snprintf(key, sizeof(key), "resolver.options '%s'", c->resolver.options[i].name);
		if (check_file(key, option_file(&c->resolver.options[i]), why, len) != 0)
			return -1;
	}
	return 0;
}

bool ubctx_validates(const struct conf *c)
{
	bool anchors = c->resolver.ntrust_anchor > 0;
	for (size_t i = 0; i < c->resolver.noptions && !anchors; i++)
		anchors = strstr(c->resolver.options[i].name, "trust") != NULL;
	return anchors;
}

/*
 * libunbound reads config files (ub_ctx_config: forward zones, stub zones)
 * with one global flex scanner, and a context's set-up writes its globals
 * (logging, config_apply): contexts are made one at a time. The normal
 * pool's threads build stub contexts while everything runs.
 */
static pthread_mutex_t ubctx_lock = PTHREAD_MUTEX_INITIALIZER;

static struct ub_ctx *make(const struct conf *c, struct ub_event_base *base, const struct ubctx_share *share);

struct ub_ctx *ubctx_new(const struct conf *c, struct ub_event_base *base, const struct ubctx_share *share)
{
	pthread_mutex_lock(&ubctx_lock);
	struct ub_ctx *ctx = make(c, base, share);
	pthread_mutex_unlock(&ubctx_lock);
	return ctx;
}

void ubctx_free(struct ub_ctx *ctx)
{
	pthread_mutex_lock(&ubctx_lock);
	ub_ctx_delete(ctx);
	pthread_mutex_unlock(&ubctx_lock);
}

static struct ub_ctx *make(const struct conf *c, struct ub_event_base *base, const struct ubctx_share *share)
{
	struct ub_ctx *ctx = base ? ub_ctx_create_ub_event(base) : ub_ctx_create();
	if (ctx == NULL) {
		log_err("cannot create libunbound context");
		return NULL;
	}
	int rc;
	if (base == NULL && (rc = ub_ctx_async(ctx, 1)) != 0) {
		log_err("libunbound async mode: %s", ub_strerror(rc));
		goto fail;
	}
	/* libunbound opens these itself, later: the same check as at start-up, as
	 * a file may have been swapped for a FIFO since (this runs on reloads and
	 * in the normal pool's threads) */
	char why[512];
	if (ubctx_check_files(c, why, sizeof(why)) != 0) {
		log_err("%s", why);
		goto fail;
	}
	if (c->resolver.root_hints && c->resolver.root_hints[0]) {
		rc = ub_ctx_set_option(ctx, "root-hints:", c->resolver.root_hints);
		if (rc != 0) {
			log_err("resolver.root_hints '%s': %s", c->resolver.root_hints, ub_strerror(rc));
			goto fail;
		}
	}
	for (size_t i = 0; i < c->resolver.ntrust_anchor; i++) {
		/* DS/DNSKEY files read as they are, every one: the daemon never
		 * writes them (RFC 5011 rollover is the packaging's job, e.g.
		 * Debian's dns-root-data) */
		rc = ub_ctx_add_ta_file(ctx, c->resolver.trust_anchor[i]);
		if (rc != 0) {
			log_err("resolver.trust_anchor '%s': %s", c->resolver.trust_anchor[i], ub_strerror(rc));
			goto fail;
		}
	}
	if (c->resolver.nforward_zones > 0 && load_forward_zones(ctx, c) != 0)
		goto fail;
	for (size_t i = 0; i < c->resolver.ndomain_insecure; i++) {
		rc = ub_ctx_set_option(ctx, "domain-insecure:", c->resolver.domain_insecure[i]);
		if (rc != 0) {
			log_err("resolver.domain_insecure '%s': %s", c->resolver.domain_insecure[i], ub_strerror(rc));
			goto fail;
		}
	}
	/*
	 * Defaults for an ISP's load, before the operator's options (which win):
	 * queries to servers that never answer each hold an outgoing socket
	 * until they time out; with libunbound's default range a flood of
	 * random names under one dead zone took every socket and healthy names
	 * waited seconds for one (bench/RESULTS.md "Dead authorities").
	 * ratelimit bounds what one zone may take at all. A pool's contexts
	 * share both: names are spread over them by hash, and so are a flood's
	 * random names under one zone. Contexts reached by listener instead
	 * (whole_rate) each take the whole rate.
	 */
	char qps[16], range[16], maxttl[16], minttl[16], negttl[16];
	unsigned n = share->of ? share->of : 1;
	unsigned zq = c->resolver.zone_qps ? (c->resolver.zone_qps + n - 1) / n : 0;
	if (share->whole_rate)
		zq = c->resolver.zone_qps;
	unsigned out = UBCTX_OUTGOING_RANGE / n > UBCTX_OUTGOING_MIN ? UBCTX_OUTGOING_RANGE / n : UBCTX_OUTGOING_MIN;
	snprintf(qps, sizeof(qps), "%u", zq);
	snprintf(range, sizeof(range), "%u", out);
	/* The cache's TTL policy for libunbound's own caches too: else an entry
	 * of ours capped by cache.max_ttl is refilled from libunbound's copy,
	 * which keeps the record's full TTL, and the authority is not asked. */
	snprintf(maxttl, sizeof(maxttl), "%u", c->cache.max_ttl);
	snprintf(minttl, sizeof(minttl), "%u", c->cache.min_ttl);
	snprintf(negttl, sizeof(negttl), "%u", c->cache.max_negative_ttl);
	/*
	 * Without a trust anchor there is nothing to validate: the iterator
	 * alone (libunbound's default is "validator iterator"), a few thousand
	 * instructions less per miss. Trust-anchor options of the operator's
	 * keep the validator.
	 */
	bool anchors = ubctx_validates(c);
	const char *defaults[][2] = { { "outgoing-range:", range },
	                              { "ratelimit:", qps },
	                              { "cache-max-ttl:", maxttl },
	                              { "cache-min-ttl:", minttl },
	                              { "cache-max-negative-ttl:", negttl },
	                              { "module-config:", anchors ? NULL : "iterator" } };
	for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++) {
		if (defaults[i][1] == NULL)
			continue;
		rc = ub_ctx_set_option(ctx, defaults[i][0], defaults[i][1]);
		if (rc != 0) {
			log_err("libunbound option %s %s: %s", defaults[i][0], defaults[i][1], ub_strerror(rc));
			goto fail;
		}
	}
	for (size_t i = 0; i < c->resolver.noptions; i++) {
		const struct conf_option *o = &c->resolver.options[i];
		/* An RFC 5011 trust-anchor file has one writer: the owner context
		 * keeps it up to date, the others read it as a plain anchor. */
		const char *name = o->name;
		if (share->idx != 0 && option_is(name, "auto-trust-anchor-file"))
			name = "trust-anchor-file:";
		rc = ub_ctx_set_option(ctx, name, o->value);
		if (rc != 0) {
			log_err("resolver.options '%s' '%s': %s", o->name, o->value, ub_strerror(rc));
			goto fail;
		}
	}
	if (share->noutgoing > 0 && set_outgoing(ctx, share) != 0)
		goto fail;
	if (share->nstubs > 0 && load_stub_zones(ctx, c, share) != 0) /* last: it finalises */
		goto fail;
	return ctx;
fail:
	ub_ctx_delete(ctx);
	return NULL;
}
