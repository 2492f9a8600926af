/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * local_zones and partitions.list[].local_zones: every zone's records
 * (data lines and zone file) parsed with ldns in zone-file syntax and
 * checked at load, so a typo is a config error with its position, never a
 * surprise at query time. The result is wire form (conf.h), read by
 * resolver/view/local.c without ldns.
 */
#include "conf/local.h"

#include <errno.h>
#include <ldns/ldns.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/report.h"
#include "util/file.h"

#define LOCAL_DEFAULT_TTL 3600

static const struct ynode *item_of(const struct ynode *list, size_t i)
{
	return list != NULL && list->type == YNODE_SEQ && i < list->n ? list->u.kids[i] : NULL;
}

/* Append rr (owner lower-cased) to z->rrs. @return 0 or -ENOMEM. */
static int append_rr(struct conf_local_zone *z, ldns_rr *rr)
{
	ldns_dname2canonical(ldns_rr_owner(rr));
	uint8_t *wire = NULL;
	size_t size = 0;
	if (ldns_rr2wire(&wire, rr, LDNS_SECTION_ANSWER, &size) != LDNS_STATUS_OK)
		return -ENOMEM;
	uint8_t *grown = realloc(z->rrs, z->rrs_len + size);
	if (grown == NULL) {
		free(wire);
		return -ENOMEM;
	}
	memcpy(grown + z->rrs_len, wire, size);
	free(wire);
	z->rrs = grown;
	z->rrs_len += size;
	z->nrrs++;
	return 0;
}

/*
 * What a record of zone z may be. @return NULL, or why not (static text).
 * Unbound refuses the same: data outside its zone, data a type never
 * serves, a CNAME beside other data (RFC 1034 §3.6.2).
 */
static const char *rr_problem(const struct conf_local_zone *z, const ldns_rdf *origin, const ldns_rr *rr)
{
	const ldns_rdf *owner = ldns_rr_owner(rr);
	if (ldns_rdf_size(owner) > 255) /* ldns joins a relative name to the origin without checking */
		return "the owner name is longer than 255 bytes";
	/* the same join in the data (a CNAME's target, an MX's exchange): no
	 * reply could carry such a name, so every query for it would fail */
	for (size_t i = 0; i < ldns_rr_rd_count(rr); i++) {
		const ldns_rdf *d = ldns_rr_rdf(rr, i);
		if (ldns_rdf_get_type(d) == LDNS_RDF_TYPE_DNAME && ldns_rdf_size(d) > 255)
			return ldns_rr_get_type(rr) == LDNS_RR_TYPE_CNAME
			               ? "the CNAME target is longer than 255 bytes (a relative name is joined to the zone's name)"
			               : "a name in the data is longer than 255 bytes (a relative name is joined to the zone's name)";
	}
	if (ldns_rr_get_class(rr) != LDNS_RR_CLASS_IN)
		return "only class IN is served";
	if (ldns_dname_compare(owner, origin) != 0 && !ldns_dname_is_subdomain(owner, origin))
		return "the owner is outside the zone (names are relative to the zone's name; end a full name with a dot)";
	if (z->type == CONF_LOCAL_ALWAYS_NXDOMAIN)
		return "type always_nxdomain never serves data (use static, or transparent)";
	if (z->type == CONF_LOCAL_REDIRECT && ldns_dname_compare(owner, origin) != 0)
		return "type redirect serves the zone name's own data for every name: give data for the zone name only";
	switch (ldns_rr_get_type(rr)) {
	case LDNS_RR_TYPE_RRSIG:
	case LDNS_RR_TYPE_NSEC:
	case LDNS_RR_TYPE_NSEC3:
	case LDNS_RR_TYPE_OPT:
		return "DNSSEC and OPT records are not local data";
	default:
		return NULL;
	}
}

/* A CNAME beside other data at one owner? @return the index of the second record, or -1. */
static long cname_clash(ldns_rr_list *all)
{
	size_t n = ldns_rr_list_rr_count(all);
	for (size_t i = 0; i < n; i++) {
		ldns_rr *a = ldns_rr_list_rr(all, i);
		if (ldns_rr_get_type(a) != LDNS_RR_TYPE_CNAME)
			continue;
		for (size_t j = 0; j < n; j++) {
			ldns_rr *b = ldns_rr_list_rr(all, j);
			if (j != i && ldns_dname_compare(ldns_rr_owner(a), ldns_rr_owner(b)) == 0)
				return (long)(i > j ? i : j);
		}
	}
	return -1;
}

/* Parse the file of zone z into all; problems reported at node fnode. */
static void parse_file(struct loader *L, struct conf_local_zone *z, const ldns_rdf *origin, const struct ynode *fnode,
                       ldns_rr_list *all)
{
	FILE *f = file_fopen_regular(z->file); /* never a FIFO: its open() would hold the reload */
	if (f == NULL) {
		conf_error(L, fnode, true, "cannot read the zone file %s: %s", z->file, file_strerror(errno));
		return;
	}
	ldns_zone *zone = NULL;
	int line = 0;
	ldns_status st = ldns_zone_new_frm_fp_l(&zone, f, origin, LOCAL_DEFAULT_TTL, LDNS_RR_CLASS_IN, &line);
	fclose(f);
	if (st != LDNS_STATUS_OK) {
		conf_error(L, fnode, true, "%s:%d: %s", z->file, line, ldns_get_errorstr_by_id(st));
		return;
	}
	if (ldns_zone_soa(zone)) {
		ldns_rr_list_push_rr(all, ldns_zone_soa(zone));
		ldns_zone_set_soa(zone, NULL);
	}
	ldns_rr_list *rrs = ldns_zone_rrs(zone);
	for (size_t i = 0; i < ldns_rr_list_rr_count(rrs); i++) {
		ldns_rr *rr = ldns_rr_list_rr(rrs, i);
		const char *why = rr_problem(z, origin, rr);
		if (why != NULL) {
			char *text = ldns_rr2str(rr);
			size_t tl = text ? strlen(text) : 0;
			if (tl > 0 && text[tl - 1] == '\n')
				text[tl - 1] = '\0';
			for (size_t k = 0; k < tl; k++)
				if (text[k] == '\t')
					text[k] = ' ';
			conf_error(L, fnode, true, "%s: record '%s': %s", z->file, text ? text : "?", why);
			free(text);
			continue;
		}
		ldns_rr_list_push_rr(all, ldns_rr_clone(rr));
	}
	ldns_zone_deep_free(zone);
}

/* One zone: its data lines and file into wire records. */
static void parse_zone(struct loader *L, struct conf_local_zone *z, const struct ynode *node)
{
	ldns_rdf *origin = NULL;
	if (z->name == NULL || ldns_str2rdf_dname(&origin, z->name) != LDNS_STATUS_OK)
		return; /* reported by the schema */
	ldns_rr_list *all = ldns_rr_list_new();
	if (all == NULL) {
		L->oom = true;
		ldns_rdf_deep_free(origin);
		return;
	}
	const struct ynode *dnode = conf_ynode_get(node, "data");
	ldns_rdf *prev = NULL;
	for (size_t i = 0; i < z->ndata; i++) {
		if (z->data[i] == NULL)
			continue; /* not a string: the schema said so */
		size_t k = conf_key_push(L, "data");
		conf_key_index(L, i);
		ldns_rr *rr = NULL;
		ldns_status st = ldns_rr_new_frm_str(&rr, z->data[i], LOCAL_DEFAULT_TTL, origin, &prev);
		const char *why = st == LDNS_STATUS_OK ? rr_problem(z, origin, rr) : NULL;
		if (st != LDNS_STATUS_OK)
			conf_error(L, item_of(dnode, i), true, "not a record in zone-file syntax: %s",
			           ldns_get_errorstr_by_id(st));
		else if (why != NULL)
			conf_error(L, item_of(dnode, i), true, "%s", why);
		if (st == LDNS_STATUS_OK && why == NULL)
			ldns_rr_list_push_rr(all, rr);
		else
			ldns_rr_free(rr);
		conf_key_pop(L, k);
	}
	ldns_rdf_deep_free(prev);
	if (z->file != NULL) {
		size_t k = conf_key_push(L, "file");
		parse_file(L, z, origin, conf_ynode_get(node, "file"), all);
		conf_key_pop(L, k);
	}
	long clash = cname_clash(all);
	if (clash >= 0) {
		char *owner = ldns_rdf2str(ldns_rr_owner(ldns_rr_list_rr(all, (size_t)clash)));
		conf_error(L, node, false, "a CNAME and other data at one name (RFC 1034 3.6.2): %s",
		           owner ? owner : "?");
		free(owner);
	}
	for (size_t i = 0; i < ldns_rr_list_rr_count(all) && !L->oom; i++)
		if (append_rr(z, ldns_rr_list_rr(all, i)) != 0)
			L->oom = true;
	ldns_rr_list_deep_free(all);
	ldns_rdf_deep_free(origin);
}

static int zone_cmp(const void *a, const void *b)
{
	const struct conf_local_zone *const *x = a, *const *y = b;
	const char *p = (*x)->name ? (*x)->name : "", *q = (*y)->name ? (*y)->name : "";
	int c = strcmp(p, q);
	return c != 0 ? c : (*x < *y ? -1 : *x > *y);
}

void conf_local_check(struct loader *L, const char *key, struct conf_local_list *list, const struct ynode *lnode)
{
	if (list->n == 0)
		return;
	for (size_t i = 0; i < list->n; i++) {
		conf_key_set(L, "%s[%zu]", key, i);
		parse_zone(L, &list->z[i], item_of(lnode, i));
	}
	/* one zone per name in a list: sort pointers, compare neighbours */
	struct conf_local_zone **by = malloc(list->n * sizeof(*by));
	if (by == NULL) {
		L->oom = true;
		return;
	}
	for (size_t i = 0; i < list->n; i++)
		by[i] = &list->z[i];
	qsort(by, list->n, sizeof(*by), zone_cmp);
	for (size_t i = 1; i < list->n; i++) {
		if (by[i]->name == NULL || by[i - 1]->name == NULL || strcmp(by[i]->name, by[i - 1]->name) != 0)
			continue;
		size_t later = (size_t)(by[i] - list->z), first = (size_t)(by[i - 1] - list->z);
		const struct ynode *f = conf_ynode_get(item_of(lnode, first), "name");
		conf_key_set(L, "%s[%zu].name", key, later);
		conf_error(L, conf_ynode_get(item_of(lnode, later), "name"), true,
		           "duplicate local zone, first at line %u, column %u", f ? (unsigned)f->line : 0,
		           f ? (unsigned)f->col : 0);
	}
	free(by);
}

void conf_local_free(struct conf_local_zone *z)
{
	for (size_t i = 0; i < z->ndata; i++)
		free(z->data[i]);
	free(z->data);
	free(z->name);
	free(z->file);
	free(z->rrs);
	memset(z, 0, sizeof(*z));
}
