/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Response policy zones (the RPZ format BIND, Unbound, Knot Resolver and
 * PowerDNS read): QNAME and client-IP triggers, read from zone files. A
 * zone is compiled once into two open-addressing tables (exact triggers,
 * wildcard triggers by the name below the "*") and a longest-prefix table
 * of client-IP triggers, over one arena, shared between the configs that
 * name it and reused while its file does not change. The
 * actions: NXDOMAIN (CNAME .), NODATA (CNAME *.), PASSTHRU (CNAME
 * rpz-passthru.), DROP (CNAME rpz-drop.), and local data, a CNAME to
 * another name included (a rewrite).
 */
#include "resolver/view/rpz.h"

#include <errno.h>
#include <ldns/ldns.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "partition/lpm.h"
#include "partition/partition.h"
#include "resolver/base/log.h"
#include "wire/msgbuf.h"
#include "wire/names.h"
#include "util/file.h"
#include "util/hash.h"
#include "util/vec.h"

#define RPZ_DEFAULT_TTL 3600
#define RPZ_REPORT_MAX 10 /* bad records logged one by one per load; the rest counted */

enum pact { PA_NXDOMAIN, PA_NODATA, PA_PASSTHRU, PA_DROP, PA_DATA };
static const char *const pact_name[] = { "NXDOMAIN", "NODATA", "PASSTHRU", "DROP", "local data" };

/* A trigger: a name (exact, or the name below a wildcard) and what it does. */
struct prule {
	uint32_t name_off;  /* in the arena: lower-case wire name */
	uint16_t name_len;
	uint8_t action;     /* enum pact */
	bool used;
	uint32_t first, n;  /* PA_DATA: its records in data[] */
};

/* A local-data record of a rule: type, class, TTL, RDLENGTH, RDATA. */
struct pdata {
	uint16_t type;
	uint32_t off, len;  /* in the arena */
};

/* A compiled policy zone; shared (refs) between the rpz sets that use it. */
struct pzone {
	atomic_int refs;
	char *name, *file;
	struct stat st;     /* of the file when it was read */
	struct hash_key key;
	uint8_t *arena;
	size_t arena_len, arena_cap;
	struct prule *exact, *wild;
	size_t emask, wmask;
	uint64_t wild_depths[2]; /* bit n: a wildcard trigger n labels deep exists (n < 128) */
	struct prule *cip;       /* client-IP triggers, by their lpm value */
	struct lpm *cip_lpm;     /* NULL: none */
	struct pdata *data;
	size_t ndata;
	size_t nrules;
	bool has_soa;
	uint32_t serial, refresh; /* the apex SOA's, for transfers */
};

struct pentry {
	const char *name;          /* the config's zone name (the config outlives the set) */
	struct pzone *z;           /* NULL: never loaded */
	bool all;                  /* no partitions list: every client */
	uint8_t *mask;             /* else a bit per partition id */
	size_t nparts;             /* ids 0..nparts-1 */
	_Atomic uint64_t hits;
	_Atomic uint64_t *part_hits;
};

struct rpz {
	atomic_int refs;
	uint32_t gen;              /* rpz_generation */
	bool client_ip;            /* some zone has client-IP triggers (rpz_client_ip) */
	size_t n;
	struct pentry *e;
};

/* ---- compiling a zone ---- */

/* A record as read, before the tables. */
struct pitem {
	uint32_t name_off;
	uint16_t name_len;
	uint8_t kind;       /* enum tkind */
	uint8_t action;
	uint16_t type;
	uint32_t data_off, data_len;
	uint32_t seq;       /* file order: the first of conflicting actions wins */
	struct prefix cip;  /* TK_CLIENT_IP: the client prefix */
};

/* The kinds of trigger, in the order the tables are built. */
enum tkind { TK_EXACT, TK_WILD, TK_CLIENT_IP };

static int arena_add(struct pzone *z, const void *d, size_t n, uint32_t *off)
{
	if (z->arena_len + n > UINT32_MAX)
		return -ENOMEM;
	if (vec_grow(&z->arena, &z->arena_cap, z->arena_len + n, 1, UINT32_MAX) != 0)
		return -ENOMEM;
	memcpy(z->arena + z->arena_len, d, n);
	*off = (uint32_t)z->arena_len;
	z->arena_len += n;
	return 0;
}

static void pzone_unref(struct pzone *z)
{
	if (z == NULL || atomic_fetch_sub(&z->refs, 1) != 1)
		return;
	free(z->name);
	free(z->file);
	free(z->arena);
	free(z->exact);
	free(z->wild);
	free(z->data);
	free(z->cip);
	lpm_free(z->cip_lpm);
	free(z);
}

static size_t table_size(size_t n)
{
	size_t s = 8;
	while (s < 2 * n)
		s <<= 1;
	return s;
}

static struct prule *rule_slot(const struct pzone *z, struct prule *t, size_t mask, const uint8_t *name, size_t len)
{
	size_t i = (size_t)hash_bytes(&z->key, name, len) & mask;
	while (t[i].used) {
		if (t[i].name_len == len && memcmp(z->arena + t[i].name_off, name, len) == 0)
			return &t[i];
		i = (i + 1) & mask;
	}
	return &t[i];
}

static bool label_is(const uint8_t *label, const char *text)
{
	return label[0] == strlen(text) && memcmp(label + 1, text, label[0]) == 0;
}

/* A label of decimal digits (at most 3) as a number, or -1. */
static int label_dec(const uint8_t *label)
{
	if (label[0] == 0 || label[0] > 3)
		return -1;
	int v = 0;
	for (unsigned i = 1; i <= label[0]; i++) {
		if (label[i] < '0' || label[i] > '9')
			return -1;
		v = v * 10 + (label[i] - '0');
	}
	return v;
}

/*
 * The client prefix of a client-IP trigger: labels[0] the prefix length,
 * then the address, least significant part first: four decimal octets
 * (32.1.2.0.192 is 192.0.2.1/32), or IPv6 groups of 1-4 hex digits with
 * one "zz" for the zeros "::" stands for (128.1.zz.db8.2001 is
 * 2001:db8::1/128). @return 0, or -1 when malformed (bits past the length
 * set included: the trigger would not say what it means).
 */
static int client_prefix(const uint8_t *const *labels, size_t n, struct prefix *out)
{
	char text[64];
	size_t pos = 0;
	int len = n >= 2 ? label_dec(labels[0]) : -1;
	if (len < 0)
		return -1;
	int octet[4];
	bool v4 = n == 5;
	for (size_t i = 1; v4 && i < n; i++) {
		octet[i - 1] = label_dec(labels[i]);
		v4 = octet[i - 1] >= 0 && octet[i - 1] <= 255;
	}
	if (v4) {
		snprintf(text, sizeof(text), "%d.%d.%d.%d", octet[3], octet[2], octet[1], octet[0]);
		pos = strlen(text);
	} else {
		if (n - 1 > 8)
			return -1;
		bool zz = false;
		if (label_is(labels[n - 1], "zz"))
			text[pos++] = ':'; /* "::" first */
		for (size_t i = n - 1; i >= 1; i--) {
			const uint8_t *l = labels[i];
			if (i != n - 1)
				text[pos++] = ':';
			if (label_is(l, "zz")) {
				if (zz)
					return -1;
				zz = true;
				continue;
			}
			if (l[0] == 0 || l[0] > 4)
				return -1;
			for (unsigned k = 1; k <= l[0]; k++)
				if (!((l[k] >= '0' && l[k] <= '9') || (l[k] >= 'a' && l[k] <= 'f')))
					return -1;
			memcpy(text + pos, l + 1, l[0]);
			pos += l[0];
		}
		if (!zz && n - 1 != 8)
			return -1;
		if (label_is(labels[1], "zz"))
			text[pos++] = ':'; /* "::" last */
	}
	snprintf(text + pos, sizeof(text) - pos, "/%d", len);
	return prefix_parse(text, out) == 0 ? 0 : -1;
}

/*
 * The kind of trigger the owner below the zone (rel, wire form) is, with a
 * client-IP trigger's prefix in *cip; or -1 with *why (not supported, or
 * malformed).
 */
static int trigger_kind(const uint8_t *rel, size_t len, struct prefix *cip, const char **why)
{
	/* the last label before the zone says the kind: rpz-client-ip, rpz-ip, rpz-nsdname, ... */
	const uint8_t *labels[128];
	size_t n = 0;
	for (size_t p = 0; p < len && rel[p] != 0 && n < 128; p += 1u + rel[p])
		labels[n++] = rel + p;
	const uint8_t *last = n > 0 ? labels[n - 1] : NULL;
	if (last != NULL && label_is(last, "rpz-client-ip")) {
		if (client_prefix(labels, n - 1, cip) != 0) {
			*why = "malformed client-IP trigger (LENGTH.address-reversed.rpz-client-ip): skipped";
			return -1;
		}
		return TK_CLIENT_IP;
	}
	static const char *const kinds[] = { "rpz-ip", "rpz-nsdname", "rpz-nsip" };
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		if (last != NULL && label_is(last, kinds[k])) {
			*why = "trigger kind not supported (QNAME and client-IP triggers only): skipped";
			return -1;
		}
	return rel[0] == 1 && rel[1] == '*' ? TK_WILD : TK_EXACT;
}

struct loadrep {
	const char *zone;
	unsigned bad;
};

static void report(struct loadrep *rep, const ldns_rr *rr, const char *why)
{
	if (rep->bad++ >= RPZ_REPORT_MAX)
		return;
	char *owner = ldns_rdf2str(ldns_rr_owner(rr));
	log_warn("rpz %s: record at %s skipped: %s", rep->zone, owner ? owner : "?", why);
	free(owner);
}

/* The action of a record, or -1 (reported). */
static int action_of(const ldns_rr *rr, struct loadrep *rep)
{
	if (ldns_rr_get_type(rr) != LDNS_RR_TYPE_CNAME)
		return PA_DATA;
	const ldns_rdf *t = ldns_rr_rdf(rr, 0);
	if (t == NULL || ldns_rdf_get_type(t) != LDNS_RDF_TYPE_DNAME) {
		report(rep, rr, "malformed CNAME");
		return -1;
	}
	const uint8_t *d = ldns_rdf_data(t);
	size_t n = ldns_rdf_size(t);
	if (n == 1)
		return PA_NXDOMAIN; /* CNAME . */
	if (n == 3 && d[0] == 1 && d[1] == '*')
		return PA_NODATA; /* CNAME *. */
	if (n >= 5 && d[0] >= 4 && strncasecmp((const char *)d + 1, "rpz-", 4) == 0 && d[1u + d[0]] == 0) {
		if (d[0] == 12 && strncasecmp((const char *)d + 1, "rpz-passthru", 12) == 0)
			return PA_PASSTHRU;
		if (d[0] == 8 && strncasecmp((const char *)d + 1, "rpz-drop", 8) == 0)
			return PA_DROP;
		report(rep, rr, "unknown or unsupported action (rpz-tcp-only and others): skipped");
		return -1;
	}
	if (n >= 3 && d[0] == 1 && d[1] == '*') {
		report(rep, rr, "a wildcard CNAME target is not supported: skipped");
		return -1;
	}
	return PA_DATA; /* a CNAME rewrite to another name */
}

/*
 * Does every name in rr's data fit a reply? ldns joins a relative name to
 * $ORIGIN without checking the length (as for owners), so a CNAME target
 * of 200 bytes in a zone of 60 reads as a 260-byte name: a record no reply
 * can carry, whatever the query, so it is refused here with its zone and
 * owner rather than found at every query.
 */
static bool data_names_fit(const ldns_rr *rr)
{
	for (size_t i = 0; i < ldns_rr_rd_count(rr); i++) {
		const ldns_rdf *d = ldns_rr_rdf(rr, i);
		if (d != NULL && ldns_rdf_get_type(d) == LDNS_RDF_TYPE_DNAME && ldns_rdf_size(d) > WIRE_MAX_NAME)
			return false;
	}
	return true;
}

/* Read one record into items. @return 0, 1 (skipped), -ENOMEM. */
static int take(struct pzone *z, const ldns_rdf *origin, ldns_rr *rr, struct pitem **items, size_t *n, size_t *cap,
                struct loadrep *rep)
{
	ldns_rr_type type = ldns_rr_get_type(rr);
	const ldns_rdf *owner = ldns_rr_owner(rr);
	if (ldns_dname_compare(owner, origin) == 0) {
		/* the apex: SOA (its serial says when a transfer brings news), NS */
		if (type == LDNS_RR_TYPE_SOA && !z->has_soa && ldns_rr_rd_count(rr) == 7 && ldns_rr_rdf(rr, 2) &&
		    ldns_rr_rdf(rr, 3) && ldns_rdf_size(ldns_rr_rdf(rr, 2)) == 4 && ldns_rdf_size(ldns_rr_rdf(rr, 3)) == 4) {
			z->has_soa = true;
			z->serial = ldns_rdf2native_int32(ldns_rr_rdf(rr, 2));
			z->refresh = ldns_rdf2native_int32(ldns_rr_rdf(rr, 3));
		}
		return 1;
	}
	if (!ldns_dname_is_subdomain(owner, origin)) {
		report(rep, rr, "owner outside the policy zone");
		return 1;
	}
	if (type == LDNS_RR_TYPE_RRSIG || type == LDNS_RR_TYPE_NSEC || type == LDNS_RR_TYPE_NSEC3 ||
	    type == LDNS_RR_TYPE_DNSKEY)
		return 1; /* a signed policy zone: its DNSSEC records are not policy */
	if (ldns_rr_get_class(rr) != LDNS_RR_CLASS_IN) {
		report(rep, rr, "class other than IN");
		return 1;
	}
	/* the trigger: the owner without the zone's labels */
	uint8_t rel[WIRE_MAX_NAME];
	size_t olen = ldns_rdf_size(owner), zlen = ldns_rdf_size(origin);
	if (olen > WIRE_MAX_NAME || olen <= zlen) {
		/* ldns joins a relative name to $ORIGIN without checking the result's length */
		report(rep, rr, "owner name longer than 255 bytes");
		return 1;
	}
	size_t rlen = olen - zlen + 1;
	memcpy(rel, ldns_rdf_data(owner), rlen - 1);
	rel[rlen - 1] = 0;
	wire_name_lower(rel, rlen, rel);
	const char *why = NULL;
	struct prefix cip;
	int kind = trigger_kind(rel, rlen, &cip, &why);
	if (kind < 0) {
		report(rep, rr, why);
		return 1;
	}
	if (!data_names_fit(rr)) {
		report(rep, rr, ldns_rr_get_type(rr) == LDNS_RR_TYPE_CNAME
		                        ? "CNAME target longer than 255 bytes (a relative name joined to the zone's name): "
		                          "skipped, no reply could carry it"
		                        : "a name in the data longer than 255 bytes (a relative name joined to the zone's "
		                          "name): skipped, no reply could carry it");
		return 1;
	}
	int action = action_of(rr, rep);
	if (action < 0)
		return 1;
	bool wild = kind == TK_WILD;
	const uint8_t *tn = wild ? rel + 2 : rel;
	size_t tlen = wild ? rlen - 2 : rlen;
	if (vec_grow(items, cap, *n + 1, sizeof(**items), SIZE_MAX) != 0)
		return -ENOMEM;
	struct pitem *it = &(*items)[*n];
	memset(it, 0, sizeof(*it));
	it->kind = (uint8_t)kind;
	if (kind == TK_CLIENT_IP)
		it->cip = cip;
	it->action = (uint8_t)action;
	it->type = (uint16_t)type;
	it->seq = (uint32_t)*n;
	it->name_len = (uint16_t)tlen;
	if (arena_add(z, tn, tlen, &it->name_off) != 0)
		return -ENOMEM;
	if (action == PA_DATA) {
		/* type, class, TTL, RDLENGTH, RDATA: ldns writes the owner first; skip it */
		uint8_t *wire = NULL;
		size_t size = 0;
		if (ldns_rr2wire(&wire, rr, LDNS_SECTION_ANSWER, &size) != LDNS_STATUS_OK || size < olen + 10) {
			free(wire);
			return -ENOMEM;
		}
		int rc = arena_add(z, wire + olen, size - olen, &it->data_off);
		it->data_len = (uint32_t)(size - olen);
		free(wire);
		if (rc != 0)
			return -ENOMEM;
	}
	(*n)++;
	return 0;
}

static int name_order(const struct pzone *z, const struct pitem *x, const struct pitem *y)
{
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	size_t m = x->name_len < y->name_len ? x->name_len : y->name_len;
	int c = memcmp(z->arena + x->name_off, z->arena + y->name_off, m);
	if (c != 0)
		return c;
	if (x->name_len != y->name_len)
		return x->name_len < y->name_len ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

static int sort_cmp(const void *a, const void *b, void *z)
{
	return name_order(z, a, b);
}

/* Build the tables from the items. @return 0 or -ENOMEM. */
static int compile(struct pzone *z, struct pitem *items, size_t n, struct loadrep *rep)
{
	if (n > 0) /* (qsort of NULL is undefined even for 0 items) */
		qsort_r(items, n, sizeof(*items), sort_cmp, z);
	size_t count[3] = { 0, 0, 0 };
	for (size_t i = 0; i < n; i++)
		if (i == 0 || items[i - 1].kind != items[i].kind || items[i - 1].name_len != items[i].name_len ||
		    memcmp(z->arena + items[i - 1].name_off, z->arena + items[i].name_off, items[i].name_len) != 0)
			count[items[i].kind]++;
	z->emask = table_size(count[TK_EXACT]) - 1;
	z->wmask = table_size(count[TK_WILD]) - 1;
	z->exact = calloc(z->emask + 1, sizeof(*z->exact));
	z->wild = calloc(z->wmask + 1, sizeof(*z->wild));
	z->data = calloc(n ? n : 1, sizeof(*z->data));
	if (z->exact == NULL || z->wild == NULL || z->data == NULL)
		return -ENOMEM;
	size_t ncip = 0;
	if (count[TK_CLIENT_IP] > 0 && ((z->cip = calloc(count[TK_CLIENT_IP], sizeof(*z->cip))) == NULL ||
	                                (z->cip_lpm = lpm_new()) == NULL))
		return -ENOMEM;
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		while (j < n && items[j].kind == items[i].kind && items[j].name_len == items[i].name_len &&
		       memcmp(z->arena + items[j].name_off, z->arena + items[i].name_off, items[i].name_len) == 0)
			j++;
		/* one trigger: its first record in the file sets the action; data may have many records */
		size_t first = i;
		for (size_t k = i; k < j; k++)
			if (items[k].seq < items[first].seq)
				first = k;
		if (items[i].kind == TK_WILD) {
			int labels = wire_name_labels(z->arena + items[i].name_off, items[i].name_len);
			if (labels >= 0 && labels < 128)
				z->wild_depths[labels / 64] |= 1ull << (labels % 64);
		}
		struct prule *r;
		if (items[i].kind == TK_CLIENT_IP) {
			/* two spellings of one prefix (zz or the zeros): the one that sorts first is kept */
			uint32_t had;
			int rc = lpm_insert(z->cip_lpm, &items[first].cip, (uint32_t)ncip, &had);
			if (rc == -ENOMEM)
				return -ENOMEM;
			if (rc != 0) {
				if (++rep->bad <= RPZ_REPORT_MAX)
					log_warn("rpz %s: a client-IP prefix given twice (two spellings): one skipped", rep->zone);
				i = j;
				continue;
			}
			r = &z->cip[ncip++];
		} else {
			struct prule *t = items[i].kind == TK_WILD ? z->wild : z->exact;
			size_t mask = items[i].kind == TK_WILD ? z->wmask : z->emask;
			r = rule_slot(z, t, mask, z->arena + items[i].name_off, items[i].name_len);
		}
		*r = (struct prule){ .name_off = items[i].name_off, .name_len = items[i].name_len,
			             .action = items[first].action, .used = true, .first = (uint32_t)z->ndata };
		for (size_t k = i; k < j; k++) {
			if (items[k].action != r->action || (r->action != PA_DATA && k != first)) {
				rep->bad++;
				if (rep->bad <= RPZ_REPORT_MAX)
					log_warn("rpz %s: a trigger with two actions: the first in the file kept", rep->zone);
				continue;
			}
			if (r->action == PA_DATA)
				z->data[z->ndata++] = (struct pdata){ .type = items[k].type, .off = items[k].data_off,
					                              .len = items[k].data_len };
		}
		r->n = (uint32_t)(z->ndata - r->first);
		z->nrules++;
		i = j;
	}
	if (z->cip_lpm != NULL && lpm_build(z->cip_lpm) != 0)
		return -ENOMEM;
	return 0;
}

static struct pzone *pzone_parse(const char *name, const char *file, FILE *f, bool have_prev, bool *failed,
                                 bool *oom);

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/*
 * Read zone name from file. @return the compiled zone; prev's when the file
 * is unchanged, or (with an error logged) when it cannot be read or parsed;
 * NULL when there is nothing to keep or on ENOMEM (*oom).
 */
static struct pzone *pzone_load(const char *name, const char *file, struct pzone *prev, bool *oom)
{
	struct stat st;
	if (stat(file, &st) != 0) {
		log_err("rpz %s: cannot read %s: %s%s", name, file, strerror(errno),
		        prev ? " (the previous version stays)" : " (the zone is empty until it can be read)");
		goto keep;
	}
	if (prev != NULL && same_file(&prev->st, &st) && strcmp(prev->file, file) == 0) {
		atomic_fetch_add(&prev->refs, 1);
		return prev;
	}
	FILE *f = file_fopen_regular(file); /* a FIFO's open() would hold the reload */
	if (f == NULL) {
		log_err("rpz %s: cannot read %s: %s", name, file, file_strerror(errno));
		goto keep;
	}
	bool failed = false;
	struct pzone *z = pzone_parse(name, file, f, prev != NULL, &failed, oom);
	fclose(f);
	if (z == NULL && *oom)
		return NULL;
	if (z == NULL)
		goto keep;
	z->st = st;
	return z;
keep:
	if (prev != NULL)
		atomic_fetch_add(&prev->refs, 1);
	return prev;
}

/*
 * Parse and compile zone name from f (file names it in messages). @return
 * the zone, or NULL: *failed (parse error, logged) or *oom.
 */
static struct pzone *pzone_parse(const char *name, const char *file, FILE *f, bool have_prev, bool *failed,
                                 bool *oom)
{
	ldns_rdf *origin = NULL;
	if (ldns_str2rdf_dname(&origin, name) != LDNS_STATUS_OK) {
		log_err("rpz %s: not a zone name", name);
		*failed = true;
		return NULL;
	}
	struct pzone *z = calloc(1, sizeof(*z));
	struct pitem *items = NULL;
	size_t n = 0, cap = 0;
	struct loadrep rep = { .zone = name };
	if (z == NULL || (z->name = strdup(name)) == NULL || (z->file = strdup(file)) == NULL)
		goto nomem;
	atomic_init(&z->refs, 1);
	hash_key_random(&z->key);
	uint32_t ttl = RPZ_DEFAULT_TTL;
	ldns_rdf *cur_origin = ldns_rdf_clone(origin), *prev_owner = NULL;
	int line = 0;
	while (!feof(f)) {
		ldns_rr *rr = NULL;
		ldns_status s = ldns_rr_new_frm_fp_l(&rr, f, &ttl, &cur_origin, &prev_owner, &line);
		if (s == LDNS_STATUS_SYNTAX_EMPTY || s == LDNS_STATUS_SYNTAX_TTL || s == LDNS_STATUS_SYNTAX_ORIGIN)
			continue;
		if (s != LDNS_STATUS_OK) {
			log_err("rpz %s: %s:%d: %s (%s)", name, file, line, ldns_get_errorstr_by_id(s),
			        have_prev ? "the previous version stays" : "the zone stays empty");
			*failed = true;
			break;
		}
		ldns_dname2canonical(ldns_rr_owner(rr));
		int rc = take(z, origin, rr, &items, &n, &cap, &rep);
		ldns_rr_free(rr);
		if (rc < 0) {
			*failed = true;
			*oom = true;
			break;
		}
	}
	ldns_rdf_deep_free(cur_origin);
	ldns_rdf_deep_free(prev_owner);
	ldns_rdf_deep_free(origin);
	if (!*failed && compile(z, items, n, &rep) != 0) {
		*failed = true;
		*oom = true;
	}
	free(items);
	if (*failed) {
		pzone_unref(z);
		return NULL;
	}
	if (rep.bad > RPZ_REPORT_MAX)
		log_warn("rpz %s: %u records skipped in all (the first %d logged)", name, rep.bad, RPZ_REPORT_MAX);
	log_info("rpz %s: %zu triggers loaded from %s%s", name, z->nrules, file, rep.bad ? " (some skipped)" : "");
	return z;
nomem:
	ldns_rdf_deep_free(origin);
	free(items);
	pzone_unref(z);
	*oom = true;
	return NULL;
}

long rpz_zone_check(const char *zone, FILE *f)
{
	bool failed = false, oom = false;
	struct pzone *z = pzone_parse(zone, "(input)", f, false, &failed, &oom);
	long n = z ? (long)z->nrules : -1;
	pzone_unref(z);
	return n;
}

/* ---- the set ---- */

struct rpz *rpz_ref(struct rpz *r)
{
	if (r != NULL)
		atomic_fetch_add(&r->refs, 1);
	return r;
}

static void rpz_free(struct rpz *r);

void rpz_unref(struct rpz *r)
{
	if (r != NULL && atomic_fetch_sub(&r->refs, 1) == 1)
		rpz_free(r);
}

static void rpz_free(struct rpz *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->n; i++) {
		pzone_unref(r->e[i].z);
		free(r->e[i].mask);
		free(r->e[i].part_hits);
	}
	free(r->e);
	free(r);
}

static struct pzone *prev_zone(const struct rpz *prev, const char *name)
{
	for (size_t i = 0; prev && i < prev->n; i++)
		if (prev->e[i].z && strcmp(prev->e[i].z->name, name) == 0)
			return prev->e[i].z;
	return NULL;
}

struct rpz *rpz_build(const struct conf *c, const struct rpz *prev, bool *oom)
{
	*oom = false;
	if (c->nrpz == 0)
		return NULL;
	struct rpz *r = calloc(1, sizeof(*r));
	if (r == NULL || (r->e = calloc(c->nrpz, sizeof(*r->e))) == NULL)
		goto oom;
	atomic_init(&r->refs, 1);
	static atomic_uint next_gen = 1;
	do
		r->gen = atomic_fetch_add(&next_gen, 1);
	while (r->gen == 0); /* 0 is the mark of an entry nobody checked */
	r->n = c->nrpz;
	size_t nparts = ptable_size(c->partitions.table) + 1;
	for (size_t i = 0; i < c->nrpz; i++) {
		const struct conf_rpz *cr = &c->rpz[i];
		struct pentry *e = &r->e[i];
		e->name = cr->zone;
		e->z = pzone_load(cr->zone, cr->file, prev_zone(prev, cr->zone), oom);
		if (*oom)
			goto oom;
		r->client_ip |= e->z != NULL && e->z->cip_lpm != NULL;
		e->nparts = nparts;
		e->part_hits = calloc(nparts, sizeof(*e->part_hits));
		if (e->part_hits == NULL)
			goto oom;
		e->all = cr->npartitions == 0;
		if (!e->all) {
			if ((e->mask = calloc((nparts + 7) / 8, 1)) == NULL)
				goto oom;
			for (size_t k = 0; k < cr->npartitions; k++)
				if (cr->part_ids && cr->part_ids[k] < nparts)
					e->mask[cr->part_ids[k] / 8] |= (uint8_t)(1u << (cr->part_ids[k] % 8));
		}
	}
	return r;
oom:
	rpz_free(r);
	*oom = true;
	return NULL;
}

/* ---- checking a query ---- */

static const struct prule *zone_match(const struct pzone *z, const uint8_t *name, size_t len)
{
	if (z == NULL || z->nrules == 0)
		return NULL;
	const struct prule *r = rule_slot(z, z->exact, z->emask, name, len);
	if (r->used)
		return r;
	/* the closest wildcard: *.parent, *.grandparent, ...; only at depths some wildcard has */
	if ((z->wild_depths[0] | z->wild_depths[1]) == 0)
		return NULL;
	int depth = wire_name_labels(name, len);
	for (const uint8_t *p = name; p[0] != 0;) {
		p += 1u + p[0];
		depth--;
		if (depth < 0 || depth >= 128 || !(z->wild_depths[depth / 64] & (1ull << (depth % 64))))
			continue;
		r = rule_slot(z, z->wild, z->wmask, p, len - (size_t)(p - name));
		if (r->used)
			return r;
	}
	return NULL;
}

static enum rpz_verdict respond(const struct pzone *z, const struct prule *r, const struct wire_query *q,
                                uint8_t **msg, size_t *len)
{
	struct msgbuf m = { 0 };
	bool rewrite = false;
	if (r->action == PA_NXDOMAIN || r->action == PA_NODATA) {
		msgbuf_start(&m, q, r->action == PA_NXDOMAIN ? WIRE_RCODE_NXDOMAIN : WIRE_RCODE_NOERROR, 0, 0);
	} else {
		/* local data: the records of the type asked, else a CNAME, else no data */
		uint16_t want = q->qtype;
		size_t count = 0;
		for (int pass = 0; pass < 2 && count == 0; pass++) {
			for (uint32_t i = r->first; i < r->first + r->n; i++)
				count += z->data[i].type == want;
			if (count == 0)
				want = WIRE_TYPE_CNAME;
		}
		rewrite = want == WIRE_TYPE_CNAME && q->qtype != WIRE_TYPE_CNAME && count == 1;
		msgbuf_start(&m, q, WIRE_RCODE_NOERROR, (uint16_t)count, 0);
		for (uint32_t i = r->first; i < r->first + r->n && count > 0; i++) {
			if (z->data[i].type != want)
				continue;
			msgbuf_put(&m, q->qname_lc, q->qname_len);
			msgbuf_put(&m, z->arena + z->data[i].off, z->data[i].len);
		}
	}
	if (m.oom) {
		free(m.p);
		return RPZ_FAIL;
	}
	*msg = m.p;
	*len = m.len;
	return rewrite ? RPZ_CNAME : RPZ_ANSWER;
}

static bool applies(const struct pentry *e, unsigned part)
{
	return e->all || (part < e->nparts && (e->mask[part / 8] & (1u << (part % 8))));
}

/* Zone e's rule decides q (name: what matched, the query name or a CNAME target): counted, logged, applied. */
static enum rpz_verdict apply(struct pentry *e, const struct prule *rule, unsigned part, const uint8_t *name,
                              size_t name_len, const struct prefix *client, const struct wire_query *q,
                              uint8_t **msg, size_t *len)
{
	atomic_fetch_add_explicit(&e->hits, 1, memory_order_relaxed);
	if (part < e->nparts)
		atomic_fetch_add_explicit(&e->part_hits[part], 1, memory_order_relaxed);
	if (log_get_level() >= LOG_LEVEL_INFO) {
		char text[512] = "?", qtext[512] = "?", ctext[PREFIX_STRLEN] = "";
		wire_name_to_text(name, name_len, text, sizeof(text));
		wire_name_to_text(q->qname_lc, q->qname_len, qtext, sizeof(qtext));
		if (client != NULL)
			prefix_format(client, ctext, sizeof(ctext));
		log_info_limited("rpz %s: %s type %u%s%s%s%s (partition id %u): %s", e->name, text, q->qtype,
		                 name == q->qname_lc ? "" : ", a CNAME target of ", name == q->qname_lc ? "" : qtext,
		                 client != NULL ? ", client in " : "", ctext, part, pact_name[rule->action]);
	}
	switch (rule->action) {
	case PA_PASSTHRU: return RPZ_PASS;
	case PA_DROP: return RPZ_DROP;
	default: return respond(e->z, rule, q, msg, len);
	}
}

enum rpz_verdict rpz_check(const struct rpz *r, unsigned part, const struct wire_query *q, int family,
                           const uint8_t *addr, bool name_clean, uint8_t **msg, size_t *len)
{
	if (r == NULL)
		return RPZ_PASS;
	for (size_t i = 0; i < r->n; i++) {
		struct pentry *e = &r->e[i];
		if (e->z == NULL || !applies(e, part))
			continue;
		/* within a zone a client-IP trigger goes before a QNAME one (as BIND orders them) */
		struct prefix matched;
		uint32_t k = e->z->cip_lpm != NULL ? lpm_lookup(e->z->cip_lpm, family, addr, &matched) : LPM_NONE;
		if (k != LPM_NONE)
			return apply(e, &e->z->cip[k], part, q->qname_lc, q->qname_len, &matched, q, msg, len);
		const struct prule *rule = name_clean ? NULL : zone_match(e->z, q->qname_lc, q->qname_len);
		if (rule != NULL)
			return apply(e, rule, part, q->qname_lc, q->qname_len, NULL, q, msg, len);
	}
	return RPZ_PASS;
}

enum rpz_verdict rpz_check_name(const struct rpz *r, unsigned part, const uint8_t *name, size_t name_len,
                                const struct wire_query *q, uint8_t **msg, size_t *len)
{
	for (size_t i = 0; r != NULL && i < r->n; i++) {
		struct pentry *e = &r->e[i];
		if (!applies(e, part))
			continue;
		const struct prule *rule = zone_match(e->z, name, name_len);
		if (rule != NULL)
			return apply(e, rule, part, name, name_len, NULL, q, msg, len);
	}
	return RPZ_PASS;
}

bool rpz_client_ip(const struct rpz *r)
{
	return r != NULL && r->client_ip;
}

uint32_t rpz_generation(const struct rpz *r)
{
	return r != NULL ? r->gen : 0;
}

bool rpz_clean(const struct rpz *r, const uint8_t *name, size_t name_len)
{
	for (size_t i = 0; r && i < r->n; i++)
		if (zone_match(r->e[i].z, name, name_len) != NULL)
			return false;
	return true;
}

void rpz_each(const struct rpz *r, void (*fn)(const char *zone, uint64_t rules, uint64_t hits, void *arg),
              void (*fnp)(const char *zone, unsigned part, uint64_t hits, void *arg), void *arg)
{
	for (size_t i = 0; r && i < r->n; i++) {
		const struct pentry *e = &r->e[i];
		const char *zone = e->name;
		fn(zone, e->z ? e->z->nrules : 0, atomic_load_explicit(&e->hits, memory_order_relaxed), arg);
		for (size_t p = 0; fnp && p < e->nparts; p++) {
			uint64_t h = atomic_load_explicit(&e->part_hits[p], memory_order_relaxed);
			if (h > 0)
				fnp(zone, (unsigned)p, h, arg);
		}
	}
}

bool rpz_serial(const struct rpz *r, const char *zone, uint32_t *serial, uint32_t *refresh)
{
	for (size_t i = 0; r && i < r->n; i++) {
		const struct pzone *z = r->e[i].z;
		if (z != NULL && z->has_soa && strcmp(r->e[i].name, zone) == 0) {
			*serial = z->serial;
			*refresh = z->refresh;
			return true;
		}
	}
	return false;
}
