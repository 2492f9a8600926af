/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Policy zones from their primaries. One thread, because a transfer blocks
 * (ldns's resolver is synchronous) and a primary may be slow or silent: it
 * never holds up a listener or the main loop. It only writes zone files;
 * the main loop republishes the snapshot (rpz_build re-reads the files that
 * changed, keeps the rest), so a transfer takes effect exactly like an
 * edited file on reload, atomically, and the file is the copy a restart
 * serves from while the primary is away. NOTIFY and IXFR are not done: the
 * SOA is polled every refresh seconds and a change is fetched whole.
 */
#include "resolver/rpz_xfr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ldns/ldns.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "resolver/log.h"
#include "resolver/rpz.h"
#include "resolver/snapshot.h"

#define XFR_MAX_ZONES 256
#define XFR_TIMEOUT_S 5
#define XFR_RETRY_S 30       /* after a failed check or transfer (or the refresh, if shorter) */
#define XFR_MIN_REFRESH_S 1
#define XFR_MAX_REFRESH_S 86400

struct xzone {
	char name[256];
	time_t next;         /* when to check the SOA again */
};

struct rpz_xfr {
	struct snapshot_slot *slot;
	pthread_t thread;
	atomic_bool stop;
	atomic_bool changed;
	size_t n;
	struct xzone z[XFR_MAX_ZONES];
};

static struct xzone *zone_state(struct rpz_xfr *x, const char *name)
{
	for (size_t i = 0; i < x->n; i++)
		if (strcmp(x->z[i].name, name) == 0)
			return &x->z[i];
	if (x->n == XFR_MAX_ZONES)
		return NULL;
	struct xzone *z = &x->z[x->n++];
	snprintf(z->name, sizeof(z->name), "%s", name);
	z->next = 0;
	return z;
}

/* A resolver for r's primary, with its TSIG key. @return NULL on error (logged). */
static ldns_resolver *primary_resolver(const struct conf_rpz *r)
{
	ldns_resolver *res = ldns_resolver_new();
	if (res == NULL)
		return NULL;
	const struct sockaddr_storage *ss = &r->primary.ss;
	ldns_rdf *ns = ss->ss_family == AF_INET
		               ? ldns_rdf_new_frm_data(LDNS_RDF_TYPE_A, 4, &((const struct sockaddr_in *)ss)->sin_addr)
		               : ldns_rdf_new_frm_data(LDNS_RDF_TYPE_AAAA, 16,
		                                       &((const struct sockaddr_in6 *)ss)->sin6_addr);
	uint16_t port = ss->ss_family == AF_INET ? ntohs(((const struct sockaddr_in *)ss)->sin_port)
	                                          : ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	if (ns == NULL || ldns_resolver_push_nameserver(res, ns) != LDNS_STATUS_OK) {
		ldns_rdf_deep_free(ns);
		ldns_resolver_deep_free(res);
		return NULL;
	}
	ldns_rdf_deep_free(ns);
	ldns_resolver_set_port(res, port);
	ldns_resolver_set_timeout(res, (struct timeval){ .tv_sec = XFR_TIMEOUT_S });
	ldns_resolver_set_retry(res, 1);
	ldns_resolver_set_recursive(res, false);
	ldns_resolver_set_usevc(res, true); /* TCP: the SOA as the transfer will come */
	if (r->tsig_name != NULL) {
		char alg[32];
		snprintf(alg, sizeof(alg), "%s.", r->tsig_algorithm ? r->tsig_algorithm : "hmac-sha256");
		ldns_resolver_set_tsig_keyname(res, r->tsig_name);
		ldns_resolver_set_tsig_algorithm(res, alg);
		ldns_resolver_set_tsig_keydata(res, r->tsig_secret);
	}
	return res;
}

/* The primary's SOA serial and refresh for the zone. @return 0, or -1 (logged). */
static int primary_soa(ldns_resolver *res, const struct conf_rpz *r, const ldns_rdf *zone, uint32_t *serial,
                       uint32_t *refresh)
{
	ldns_pkt *p = NULL;
	ldns_status st = ldns_resolver_send(&p, res, zone, LDNS_RR_TYPE_SOA, LDNS_RR_CLASS_IN, 0);
	if (st != LDNS_STATUS_OK || p == NULL) {
		log_warn("rpz %s: SOA query to %s failed: %s", r->zone, r->primary.text, ldns_get_errorstr_by_id(st));
		ldns_pkt_free(p);
		return -1;
	}
	int rc = -1;
	ldns_rr_list *ans = ldns_pkt_answer(p);
	for (size_t i = 0; i < ldns_rr_list_rr_count(ans); i++) {
		ldns_rr *rr = ldns_rr_list_rr(ans, i);
		if (ldns_rr_get_type(rr) != LDNS_RR_TYPE_SOA || ldns_dname_compare(ldns_rr_owner(rr), zone) != 0 ||
		    ldns_rr_rd_count(rr) != 7 || ldns_rdf_size(ldns_rr_rdf(rr, 2)) != 4 ||
		    ldns_rdf_size(ldns_rr_rdf(rr, 3)) != 4)
			continue;
		*serial = ldns_rdf2native_int32(ldns_rr_rdf(rr, 2));
		*refresh = ldns_rdf2native_int32(ldns_rr_rdf(rr, 3));
		rc = 0;
		break;
	}
	if (rc != 0)
		log_warn("rpz %s: %s gave no SOA for the zone (rcode %s): is it its primary?", r->zone, r->primary.text,
		         ldns_pkt_get_rcode(p) == LDNS_RCODE_NOERROR ? "NOERROR" : "not NOERROR");
	ldns_pkt_free(p);
	return rc;
}

/* AXFR into r->file (via FILE.xfr, renamed when complete). @return 0, or -1 (logged; the file untouched). */
static int transfer(ldns_resolver *res, const struct conf_rpz *r, const ldns_rdf *zone)
{
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.xfr", r->file);
	FILE *f = fopen(tmp, "w");
	if (f == NULL) {
		log_err("rpz %s: cannot write %s: %s", r->zone, tmp, strerror(errno));
		return -1;
	}
	ldns_status st = ldns_axfr_start(res, zone, LDNS_RR_CLASS_IN);
	size_t n = 0;
	if (st == LDNS_STATUS_OK) {
		ldns_rr *rr;
		while ((rr = ldns_axfr_next(res)) != NULL) {
			ldns_rr_print(f, rr);
			ldns_rr_free(rr);
			n++;
		}
	}
	const ldns_pkt *last = ldns_axfr_last_pkt(res);
	bool complete = st == LDNS_STATUS_OK && ldns_axfr_complete(res);
	bool ok = complete && fflush(f) == 0 && fsync(fileno(f)) == 0;
	ok = fclose(f) == 0 && ok;
	if (!ok) {
		log_warn("rpz %s: transfer from %s failed after %zu records (%s%s): the last good copy stays", r->zone,
		         r->primary.text, n, st != LDNS_STATUS_OK ? ldns_get_errorstr_by_id(st) : "incomplete",
		         last && ldns_pkt_get_rcode(last) == LDNS_RCODE_REFUSED ? ", REFUSED: is the TSIG key right?" : "");
		unlink(tmp);
		return -1;
	}
	if (rename(tmp, r->file) != 0) {
		log_err("rpz %s: cannot replace %s: %s", r->zone, r->file, strerror(errno));
		unlink(tmp);
		return -1;
	}
	log_info("rpz %s: %zu records transferred from %s", r->zone, n, r->primary.text);
	return 0;
}

/* One zone's turn: check the SOA, transfer when it changed. */
static void check_zone(struct rpz_xfr *x, const struct conf_rpz *r, const struct rpz *loaded, time_t now)
{
	struct xzone *z = zone_state(x, r->zone);
	if (z == NULL || now < z->next)
		return;
	uint32_t have_serial = 0, have_refresh = 0, serial = 0, refresh = 0;
	bool have = rpz_serial(loaded, r->zone, &have_serial, &have_refresh);
	ldns_rdf *zone = NULL;
	ldns_resolver *res = primary_resolver(r);
	bool ok = res != NULL && ldns_str2rdf_dname(&zone, r->zone) == LDNS_STATUS_OK &&
	          primary_soa(res, r, zone, &serial, &refresh) == 0;
	if (ok && (!have || serial != have_serial)) {
		ok = transfer(res, r, zone) == 0;
		if (ok)
			atomic_store(&x->changed, true);
	}
	unsigned every = r->refresh ? r->refresh : refresh ? refresh : have_refresh;
	if (every < XFR_MIN_REFRESH_S)
		every = XFR_MIN_REFRESH_S;
	if (every > XFR_MAX_REFRESH_S)
		every = XFR_MAX_REFRESH_S;
	z->next = now + (ok ? every : (every < XFR_RETRY_S ? every : XFR_RETRY_S));
	ldns_rdf_deep_free(zone);
	ldns_resolver_deep_free(res);
}

static void *xfr_main(void *arg)
{
	struct rpz_xfr *x = arg;
	while (!atomic_load(&x->stop)) {
		struct snapshot *s = snapshot_get(x->slot);
		time_t now = time(NULL);
		for (size_t i = 0; s != NULL && i < s->conf->nrpz && !atomic_load(&x->stop); i++)
			if (s->conf->rpz[i].primary.len > 0)
				check_zone(x, &s->conf->rpz[i], s->rpz, now);
		snapshot_release(s);
		for (int k = 0; k < 4 && !atomic_load(&x->stop); k++)
			usleep(250 * 1000);
	}
	return NULL;
}

struct rpz_xfr *rpz_xfr_start(struct snapshot_slot *slot)
{
	struct rpz_xfr *x = calloc(1, sizeof(*x));
	if (x == NULL)
		return NULL;
	x->slot = slot;
	atomic_init(&x->stop, false);
	atomic_init(&x->changed, false);
	if (pthread_create(&x->thread, NULL, xfr_main, x) != 0) {
		free(x);
		return NULL;
	}
	return x;
}

bool rpz_xfr_take_changed(struct rpz_xfr *x)
{
	return x != NULL && atomic_exchange(&x->changed, false);
}

void rpz_xfr_stop(struct rpz_xfr *x)
{
	if (x == NULL)
		return;
	atomic_store(&x->stop, true);
	pthread_join(x->thread, NULL);
	free(x);
}
