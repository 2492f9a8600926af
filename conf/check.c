/* SPDX-License-Identifier: BSD-3-Clause */
/* Cross-key checks of a parsed config, and building its partition table and mapping. */
#include "conf/check.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conf/conf.h"
#include "conf/local.h"
#include "conf/report.h"
#include "conf/state.h"
#include "conf/ytree.h"
#include "mapping/export.h"
#include "mapping/mapping.h"
#include "partition/partition.h"
#include "partition/prefix.h"

/* Upper bound of server.threads (the schema's range). */
#define THREADS_MAX 256

/* Duplicate finding in O(n log n): sort indices by (element, index). */
struct dups {
	const char *base;
	size_t stride;
	int (*cmp)(const void *a, const void *b);
};

static int dups_cmp(const void *a, const void *b, void *arg)
{
	const struct dups *d = arg;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	int c = d->cmp(d->base + i * d->stride, d->base + j * d->stride);
	if (c != 0)
		return c;
	return i < j ? -1 : i > j;
}

/*
 * Call report(first, later) for every element equal to an earlier one.
 * Elements are at base + i * stride. @return 0 or -ENOMEM.
 */
static int find_dups(struct loader *L, const void *base, size_t n, size_t stride,
                     int (*cmp)(const void *a, const void *b),
                     void (*report)(struct loader *L, size_t first, size_t later, void *arg),
                     void *arg)
{
	if (n < 2)
		return 0;
	size_t *idx = malloc(n * sizeof(*idx));
	if (idx == NULL) {
		L->oom = true;
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		idx[i] = i;
	struct dups d = { .base = base, .stride = stride, .cmp = cmp };
	qsort_r(idx, n, sizeof(*idx), dups_cmp, &d);
	size_t first = 0;
	for (size_t k = 1; k < n; k++) {
		if (cmp(d.base + idx[k] * stride, d.base + idx[first] * stride) == 0)
			report(L, idx[first], idx[k], arg);
		else
			first = k;
	}
	free(idx);
	return 0;
}

/* Item i of a list node, or NULL when the value came from a default. */
static const struct ynode *list_item(const struct ynode *list, size_t i)
{
	if (list == NULL || list->type != YNODE_SEQ || i >= list->n)
		return NULL;
	return list->u.kids[i];
}

static const struct ynode *get2(const struct ynode *root, const char *a, const char *b)
{
	return conf_ynode_get(conf_ynode_get(root, a), b);
}

/* server */

static int addr_cmp(const void *a, const void *b)
{
	const struct conf_addr *x = a, *y = b;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return memcmp(&x->ss, &y->ss, x->len);
}

static void report_listen(struct loader *L, size_t first, size_t later, void *arg)
{
	const struct ynode *list = arg, *f = list_item(list, first);
	if (L->st.conf.server.listen[later].len == 0)
		return; /* did not parse; reported already */
	conf_key_set(L, "server.listen[%zu]", later);
	if (f != NULL)
		conf_error(L, list_item(list, later), true,
		           "duplicate listen address, first at line %u, column %u",
		           (unsigned)f->line, (unsigned)f->col);
}

/* An encrypted listener list (key: listen_tls, listen_https): a certificate, and no port also in server.listen. */
static void check_encrypted(struct loader *L, const struct ynode *root, const char *key, const struct conf_addr *list,
                            size_t n)
{
	const struct conf *c = &L->st.conf;
	if (n > 0 && (c->server.tls_cert[0] == '\0' || c->server.tls_key[0] == '\0')) {
		conf_key_set(L, "server.%s", key);
		conf_error(L, get2(root, "server", key), false,
		           "needs server.tls_cert and server.tls_key (PEM files: the certificate chain and its key)");
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < c->server.nlisten; j++)
			if (list[i].len != 0 && addr_cmp(&list[i], &c->server.listen[j]) == 0) {
				conf_key_set(L, "server.%s[%zu]", key, i);
				conf_error(L, list_item(get2(root, "server", key), i), true,
				           "also in server.listen: one port serves plain DNS or TLS, not both");
			}
}

static void check_server(struct loader *L, const struct ynode *root)
{
	struct conf *c = &L->st.conf;
	if (c->server.threads == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		c->server.threads = n < 1 ? 1 : n > THREADS_MAX ? THREADS_MAX : (unsigned)n;
	}
	if (c->resolver.threads == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		c->resolver.threads = n < 1 ? 1 : n > THREADS_MAX ? THREADS_MAX : (unsigned)n;
	}
	const struct ynode *listen = get2(root, "server", "listen");
	find_dups(L, c->server.listen, c->server.nlisten, sizeof(c->server.listen[0]), addr_cmp,
	          report_listen, (void *)listen);
	check_encrypted(L, root, "listen_tls", c->server.listen_tls, c->server.nlisten_tls);
	check_encrypted(L, root, "listen_https", c->server.listen_https, c->server.nlisten_https);
	for (size_t i = 0; i < c->server.nlisten_https; i++)
		for (size_t j = 0; j < c->server.nlisten_tls; j++)
			if (c->server.listen_https[i].len != 0 && addr_cmp(&c->server.listen_https[i], &c->server.listen_tls[j]) == 0) {
				conf_key_set(L, "server.listen_https[%zu]", i);
				conf_error(L, list_item(get2(root, "server", "listen_https"), i), true,
				           "also in server.listen_tls: one port serves DoT or DoH, not both");
			}
	if (c->server.https_path[0] != '/' || strpbrk(c->server.https_path, "?#% ") != NULL) {
		conf_key_set(L, "server.https_path");
		conf_error(L, get2(root, "server", "https_path"), true,
		           "must be an absolute path without '?', '#', '%%' or spaces, e.g. /dns-query");
	}
	if (c->server.ddr && c->server.nlisten_tls + c->server.nlisten_https == 0) {
		conf_key_set(L, "server.ddr");
		conf_warning(L, get2(root, "server", "ddr"), false,
		             "no server.listen_tls or listen_https: there are no encrypted endpoints to announce");
	}
	if (c->server.nlisten_tls + c->server.nlisten_https == 0 && c->server.tls_cert[0] != '\0') {
		conf_key_set(L, "server.tls_cert");
		conf_warning(L, get2(root, "server", "tls_cert"), false,
		             "no server.listen_tls or listen_https: the certificate is not used");
	}
	if (c->server.nallow == 0) {
		conf_key_set(L, "server.allow");
		conf_warning(L, get2(root, "server", "allow"), false,
		             "empty: every client will be refused");
	}
}

/* cache */

static void check_cache(struct loader *L, const struct ynode *root)
{
	const struct conf *c = &L->st.conf;
	if (c->cache.min_ttl > c->cache.max_ttl) {
		const struct ynode *n = get2(root, "cache", "min_ttl");
		conf_key_set(L, n != NULL ? "cache.min_ttl" : "cache.max_ttl");
		if (n == NULL)
			n = get2(root, "cache", "max_ttl");
		conf_error(L, n, true, "min_ttl %u is greater than max_ttl %u",
		           (unsigned)c->cache.min_ttl, (unsigned)c->cache.max_ttl);
	}
}

/* resolver */

static int zone_cmp(const void *a, const void *b)
{
	const struct conf_forward_zone *x = a, *y = b;
	if (x->name == NULL || y->name == NULL)
		return (x->name != NULL) - (y->name != NULL);
	return strcmp(x->name, y->name);
}

static void report_zone(struct loader *L, size_t first, size_t later, void *arg)
{
	const struct ynode *list = arg;
	const struct conf_forward_zone *z = L->st.conf.resolver.forward_zones;
	if (z[later].name == NULL)
		return;
	const struct ynode *f = conf_ynode_get(list_item(list, first), "name");
	conf_key_set(L, "resolver.forward_zones[%zu].name", later);
	if (f != NULL)
		conf_error(L, conf_ynode_get(list_item(list, later), "name"), true,
		           "duplicate forward zone, first at line %u, column %u", (unsigned)f->line,
		           (unsigned)f->col);
}

/* resolver.outgoing, edns.outgoing: source addresses of the two pools */

struct outgoing_dups {
	const char *key; /* "resolver.outgoing" */
	const struct conf_addr *list;
	const struct ynode *node;
};

static void report_outgoing(struct loader *L, size_t first, size_t later, void *arg)
{
	const struct outgoing_dups *od = arg;
	const struct ynode *f = list_item(od->node, first);
	if (od->list[later].len == 0 || f == NULL)
		return; /* did not parse; reported already */
	conf_key_set(L, "%s[%zu]", od->key, later);
	conf_error(L, list_item(od->node, later), true, "duplicate source address, first at line %u, column %u",
	           (unsigned)f->line, (unsigned)f->col);
}

static void check_outgoing(struct loader *L, const struct ynode *root, const char *section,
                           const struct conf_addr *list, size_t n)
{
	char key[32];
	snprintf(key, sizeof(key), "%s.outgoing", section);
	struct outgoing_dups od = { .key = key, .list = list, .node = get2(root, section, "outgoing") };
	find_dups(L, list, n, sizeof(list[0]), addr_cmp, report_outgoing, &od);
}

/*
 * A raw outgoing-interface in resolver.options reaches every libunbound
 * context, the EDNS pool's too: next to a pool's own list it would mix
 * the pools' sources (libunbound picks among all the interfaces it is
 * given), so the lists replace it rather than add to it.
 */
static void check_raw_outgoing(struct loader *L, const struct ynode *root)
{
	const struct conf *c = &L->st.conf;
	if (c->resolver.noutgoing == 0 && c->edns.noutgoing == 0)
		return;
	const struct ynode *opts = get2(root, "resolver", "options");
	for (size_t i = 0; i < c->resolver.noptions; i++) {
		if (strcmp(c->resolver.options[i].name, "outgoing-interface:") != 0)
			continue;
		const struct ynode *v = conf_ynode_get(opts, "outgoing-interface");
		if (v == NULL)
			v = conf_ynode_get(opts, "outgoing-interface:");
		conf_key_set(L, "resolver.options.outgoing-interface");
		conf_error(L, v != NULL ? v : opts, v != NULL,
		           "a raw outgoing-interface together with %s: list every source address in "
		           "resolver.outgoing (normal pool) and edns.outgoing (EDNS pool) instead",
		           c->resolver.noutgoing > 0 ? "resolver.outgoing" : "edns.outgoing");
		return;
	}
}

static void check_resolver(struct loader *L, const struct ynode *root)
{
	const struct conf *c = &L->st.conf;
	find_dups(L, c->resolver.forward_zones, c->resolver.nforward_zones,
	          sizeof(c->resolver.forward_zones[0]), zone_cmp, report_zone,
	          (void *)get2(root, "resolver", "forward_zones"));
	check_outgoing(L, root, "resolver", c->resolver.outgoing, c->resolver.noutgoing);
	check_raw_outgoing(L, root);
}

/* edns */

static void check_edns(struct loader *L, const struct ynode *root)
{
	const struct conf *c = &L->st.conf;
	check_outgoing(L, root, "edns", c->edns.outgoing, c->edns.noutgoing);
	if (c->edns.ntier > CONF_TIER_MAX) {
		const struct ynode *tier = get2(root, "edns", "tier");
		conf_key_set(L, "edns.tier[%d]", CONF_TIER_MAX);
		conf_error(L, tier != NULL && tier->type == YNODE_SEQ && tier->n > CONF_TIER_MAX ? tier->u.kids[CONF_TIER_MAX] : tier,
		           true, "%zu nodes; a tier has at most %d (split the partitions over several tiers)", c->edns.ntier,
		           CONF_TIER_MAX);
	}
	if (c->edns.policy == CONF_POLICY_FORWARD && c->edns.nforward == 0) {
		conf_key_set(L, "edns.policy");
		conf_warning(L, get2(root, "edns", "policy"), true,
		             "no edns.forward targets: domains with policy forward need their own");
	}
}

/* store.etcd: a fleet's shared store */

static void check_etcd(struct loader *L, const struct ynode *root)
{
	struct conf *c = &L->st.conf;
	const struct ynode *etcd = get2(root, "store", "etcd");
	if (etcd == NULL)
		return;
	if (c->store.etcd.nendpoints == 0) {
		conf_key_set(L, "store.etcd.endpoints");
		conf_error(L, etcd, true, "store.etcd needs its endpoints (ADDR@PORT of the etcd members)");
	}
	const char *p = c->store.etcd.prefix;
	if (p != NULL && (p[0] != '/' || strstr(p, "//") != NULL || strchr(p, ' ') != NULL)) {
		conf_key_set(L, "store.etcd.prefix");
		conf_error(L, conf_ynode_get(etcd, "prefix"), true,
		           "a key prefix like /partdns/ (starts with '/', no empty or blank path element)");
	} else if (p != NULL && p[strlen(p) - 1] != '/') {
		/* "/partdns" and "/partdns/" are the same place: keys are PREFIX + "domains/..." */
		size_t n = strlen(p);
		char *q = realloc(c->store.etcd.prefix, n + 2);
		if (q == NULL) {
			L->oom = true;
			return;
		}
		q[n] = '/';
		q[n + 1] = '\0';
		c->store.etcd.prefix = q;
	}
	if (c->store.etcd.password_file[0] != '\0' && c->store.etcd.username[0] == '\0') {
		conf_key_set(L, "store.etcd.password_file");
		conf_error(L, conf_ynode_get(etcd, "password_file"), true,
		           "a password without store.etcd.username: name the etcd user too");
	}
	if (c->store.etcd.key[0] != '\0' && c->store.etcd.cert[0] == '\0') {
		conf_key_set(L, "store.etcd.key");
		conf_error(L, conf_ynode_get(etcd, "key"), true,
		           "a client key without store.etcd.cert: name the certificate it goes with");
	}
}

/* partitions */

struct pcheck {
	unsigned *ids; /* list index -> partition id, 0 when not added */
	bool *dup;     /* list index -> its name repeats an earlier one */
};

static int name_cmp(const void *a, const void *b)
{
	const char *const *x = a, *const *y = b;
	if (*x == NULL || *y == NULL)
		return (*x != NULL) - (*y != NULL);
	return strcmp(*x, *y);
}

static void report_name(struct loader *L, size_t first, size_t later, void *arg)
{
	struct pcheck *pc = arg;
	const struct conf_part *p = L->st.parts;
	if (p[later].name == NULL)
		return;
	pc->dup[later] = true;
	const struct ynode *f = p[first].name_node;
	conf_key_set(L, "partitions.list[%zu].name", later);
	conf_error(L, p[later].name_node, true,
	           "duplicate partition name, first at line %u, column %u",
	           f ? (unsigned)f->line : 0, f ? (unsigned)f->col : 0);
}

static int prefix_cmp(const void *a, const void *b)
{
	const struct prefix *x = a, *y = b;
	if (x->family != y->family)
		return x->family < y->family ? -1 : 1;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return memcmp(x->addr, y->addr, sizeof(x->addr));
}

static void report_mapped(struct loader *L, size_t first, size_t later, void *arg)
{
	const struct conf_part *p = L->st.parts;
	bool v6 = arg != NULL;
	const struct prefix *m = v6 ? &p[later].mapped6 : &p[later].mapped;
	if (m->family == 0)
		return;
	char buf[PREFIX_STRLEN];
	if (v6)
		prefix_format(m, buf, sizeof(buf));
	else
		prefix_format_addr(m, buf, sizeof(buf));
	conf_key_set(L, "partitions.list[%zu].%s", later, v6 ? "mapped6" : "mapped");
	conf_error(L, v6 ? p[later].mapped6_node : p[later].mapped_node, true,
	           "mapped address %s is already used by partition '%s'", buf,
	           p[first].name ? p[first].name : "?");
	/* No further messages about it. find_dups compares later items only with
	 * the group's first, so changing this one does not disturb the scan. */
	struct conf_part *lp = &L->st.parts[later];
	if (v6)
		lp->mapped6.family = 0;
	else
		lp->mapped.family = 0;
}

/* Is m inside one of p's own prefixes? */
static bool inside_own(const struct conf_part *p, const struct prefix *m)
{
	for (size_t j = 0; j < p->nprefixes; j++)
		if (p->prefixes[j].family != 0 && prefix_contains(&p->prefixes[j], m))
			return true;
	return false;
}

/* Names, mapped addresses: checks of each partition on its own and uniqueness. */
static void check_parts(struct loader *L, struct pcheck *pc)
{
	struct conf_state *st = &L->st;
	struct ptable *t = st->conf.partitions.table;
	size_t n = st->nparts;
	if (n == 0)
		return;

	find_dups(L, &st->parts[0].name, n, sizeof(st->parts[0]), name_cmp, report_name, pc);
	bool full = false;
	for (size_t i = 0; i < n; i++) {
		struct conf_part *p = &st->parts[i];
		if (p->name == NULL || pc->dup[i] || full)
			continue;
		int rc = ptable_add(t, p->name);
		if (rc > 0) {
			pc->ids[i] = (unsigned)rc;
		} else if (rc == -ENOSPC) {
			conf_key_set(L, "partitions.list[%zu]", i);
			conf_error(L, list_item(st->list_node, i), false,
			           "too many partitions, at most %d", PARTITION_MAX);
			full = true;
		} else if (rc == -ENOMEM) {
			L->oom = true;
			return;
		} else {
			conf_key_set(L, "partitions.list[%zu].name", i);
			conf_error(L, p->name_node, true, "cannot add partition: %s",
			           prefix_strerror(rc));
		}
	}

	for (size_t i = 0; i < n; i++) {
		struct conf_part *p = &st->parts[i];
		const struct ynode *item = list_item(st->list_node, i);
		if (p->mapped_node == NULL && p->mapped6_node == NULL && item != NULL &&
		    item->type == YNODE_MAP) {
			conf_key_set(L, "partitions.list[%zu]", i);
			conf_error(L, item, false,
			           "partition has no mapped address (set mapped, mapped6 or both)");
		}
		int rc;
		if (p->mapped.family != 0 && (rc = mapping_check_global(&p->mapped)) != 0) {
			conf_key_set(L, "partitions.list[%zu].mapped", i);
			conf_error(L, p->mapped_node, true,
			           "mapped address is not global unicast: %s",
			           mapping_strerror(rc));
			p->mapped.family = 0;
		}
		if (p->mapped6.family != 0 && (rc = mapping_check_global(&p->mapped6)) != 0) {
			conf_key_set(L, "partitions.list[%zu].mapped6", i);
			conf_error(L, p->mapped6_node, true,
			           "mapped address is not global unicast: %s",
			           mapping_strerror(rc));
			p->mapped6.family = 0;
		}
	}
	find_dups(L, &st->parts[0].mapped, n, sizeof(st->parts[0]), prefix_cmp, report_mapped,
	          NULL);
	find_dups(L, &st->parts[0].mapped6, n, sizeof(st->parts[0]), prefix_cmp, report_mapped,
	          (void *)"v6");
}

/* Prefixes into the table; the table finds every repeat through -EEXIST. */
static void add_prefixes(struct loader *L, struct pcheck *pc)
{
	struct conf_state *st = &L->st;
	struct ptable *t = st->conf.partitions.table;
	for (size_t i = 0; i < st->nparts; i++) {
		const struct conf_part *p = &st->parts[i];
		if (pc->ids[i] == 0)
			continue;
		for (size_t j = 0; j < p->nprefixes; j++) {
			const struct prefix *pf = &p->prefixes[j];
			if (pf->family == 0)
				continue;
			unsigned other = 0;
			int rc = ptable_add_prefix(t, pc->ids[i], pf, &other);
			if (rc == 0)
				continue;
			if (rc == -ENOMEM) {
				L->oom = true;
				return;
			}
			char buf[PREFIX_STRLEN];
			prefix_format(pf, buf, sizeof(buf));
			conf_key_set(L, "partitions.list[%zu].prefixes[%zu]", i, j);
			const struct ynode *pn = list_item(p->prefixes_node, j);
			if (rc != -EEXIST) {
				conf_error(L, pn, true, "cannot add prefix %s: %s", buf,
				           prefix_strerror(rc));
			} else if (other == pc->ids[i]) {
				conf_error(L, pn, true, "duplicate prefix %s in partition '%s'",
				           buf, p->name);
			} else {
				const char *on = ptable_name(t, other);
				conf_error(
				    L, pn, true,
				    "prefix %s of partition '%s' already belongs to partition '%s'",
				    buf, p->name, on != NULL ? on : "?");
			}
		}
	}
}

static void resolve_unmatched(struct loader *L)
{
	struct conf_state *st = &L->st;
	struct conf *c = &st->conf;
	const char *u = st->unmatched != NULL ? st->unmatched : "common";
	if (strcmp(u, "common") == 0) {
		c->partitions.unmatched = CONF_UNMATCHED_COMMON;
	} else if (strcmp(u, "refuse") == 0) {
		c->partitions.unmatched = CONF_UNMATCHED_REFUSE;
	} else {
		int id = ptable_find(c->partitions.table, u);
		if (id > 0) {
			c->partitions.unmatched = CONF_UNMATCHED_PARTITION;
			c->partitions.unmatched_id = (unsigned)id;
		} else if (!L->include_failed) { /* else it may be in the unread file */
			conf_key_set(L, "partitions.unmatched");
			conf_error(
			    L, st->unmatched_node, true,
			    "unknown partition, expected common, refuse or a partition name");
		}
	}
}

/*
 * partitions.list[].standby: another partition of this plan (its mapped
 * identities), or a global unicast address (IPv4, or an IPv6 prefix) that
 * CDNs already know; never the partition itself.
 */
static void check_standby(struct loader *L, const struct pcheck *pc)
{
	struct conf_state *st = &L->st;
	for (size_t i = 0; i < st->nparts; i++) {
		const struct conf_part *p = &st->parts[i];
		if (p->standby == NULL || pc->ids[i] == 0)
			continue;
		conf_key_set(L, "partitions.list[%zu].standby", i);
		struct prefix a;
		int id = ptable_find(st->conf.partitions.table, p->standby);
		if (id > 0) {
			if ((unsigned)id == pc->ids[i])
				conf_error(L, p->standby_node, true, "a partition cannot stand by for itself");
		} else if (prefix_parse(p->standby, &a) == 0 || prefix_parse_addr(p->standby, &a) == 0) {
			if (a.family == AF_INET && a.len != 32)
				conf_error(L, p->standby_node, true, "an IPv4 standby is one address, not a prefix");
			else if (mapping_check_global(&a) != 0)
				conf_error(L, p->standby_node, true, "standby address is not global unicast");
		} else {
			conf_error(L, p->standby_node, true,
			           "expected a partition of this plan or an address (IPv4, or an IPv6 prefix)");
		}
	}
}

/* partitions.serial: in the main file or in the include, not both (which would win?). */
static void resolve_serial(struct loader *L)
{
	struct conf_state *st = &L->st;
	if (st->include_serial_node == NULL)
		return;
	if (st->serial_node != NULL) {
		conf_key_set(L, "partitions.serial");
		conf_error(L, st->include_serial_node, false,
		           "serial is given in both the config and the partitions include; keep the one next to the "
		           "list it versions");
		return;
	}
	st->conf.partitions.serial = st->include_serial;
}

static void warn_parts(struct loader *L, const struct pcheck *pc)
{
	const struct conf_state *st = &L->st;
	const struct conf *c = &st->conf;
	for (size_t i = 0; i < st->nparts; i++) {
		const struct conf_part *p = &st->parts[i];
		if (pc->ids[i] == 0)
			continue;
		if (p->nprefixes == 0) {
			/* The unmatched partition may legitimately own no prefix. */
			if (c->partitions.unmatched == CONF_UNMATCHED_PARTITION &&
			    c->partitions.unmatched_id == pc->ids[i])
				continue;
			conf_key_set(L, "partitions.list[%zu]", i);
			conf_warning(L, list_item(st->list_node, i), false,
			             "partition '%s' has no prefixes, so no client is in it",
			             p->name);
			continue;
		}
		char buf[PREFIX_STRLEN];
		if (p->mapped.family != 0 && !inside_own(p, &p->mapped)) {
			prefix_format_addr(&p->mapped, buf, sizeof(buf));
			conf_key_set(L, "partitions.list[%zu].mapped", i);
			conf_warning(L, p->mapped_node, true,
			             "mapped address %s is not inside any prefix of partition '%s'",
			             buf, p->name);
		}
		if (p->mapped6.family != 0 && !inside_own(p, &p->mapped6)) {
			prefix_format(&p->mapped6, buf, sizeof(buf));
			conf_key_set(L, "partitions.list[%zu].mapped6", i);
			conf_warning(L, p->mapped6_node, true,
			             "mapped address %s is not inside any prefix of partition '%s'",
			             buf, p->name);
		}
	}
}

/* The finished table and mapping (only for a config without errors). */
static void build_parts(struct loader *L, const struct pcheck *pc)
{
	struct conf_state *st = &L->st;
	struct conf *c = &st->conf;
	if (ptable_build(c->partitions.table) != 0) {
		L->oom = true;
		return;
	}
	c->partitions.mapping = mapping_new(ptable_size(c->partitions.table));
	if (c->partitions.mapping == NULL) {
		L->oom = true;
		return;
	}
	/* each city's local zones, by id, taken from its list item */
	bool any_local = false;
	for (size_t i = 0; i < st->nparts; i++)
		any_local |= st->parts[i].local.n > 0 && pc->ids[i] != 0;
	if (any_local) {
		c->partitions.nlocal = ptable_size(c->partitions.table) + 1;
		c->partitions.local = calloc(c->partitions.nlocal, sizeof(*c->partitions.local));
		if (c->partitions.local == NULL) {
			c->partitions.nlocal = 0;
			L->oom = true;
			return;
		}
		for (size_t i = 0; i < st->nparts; i++) {
			if (pc->ids[i] == 0)
				continue;
			c->partitions.local[pc->ids[i]] = st->parts[i].local;
			st->parts[i].local = (struct conf_local_list){ 0 };
		}
	}
	for (size_t i = 0; i < st->nparts; i++) {
		const struct conf_part *p = &st->parts[i];
		if (pc->ids[i] == 0)
			continue;
		struct mapping_entry e = {
			.has_v4 = p->mapped.family == AF_INET,
			.v4 = p->mapped,
			.has_v6 = p->mapped6.family == AF_INET6,
			.v6 = p->mapped6,
			.label = p->label,
			.country = p->country,
			.region = p->region,
			.city = p->city,
			.postal = p->postal,
			.isp = p->isp,
			.asn = p->asn,
			.standby = p->standby,
		};
		if (mapping_set(c->partitions.mapping, pc->ids[i], &e) != 0) {
			L->oom = true;
			return;
		}
	}
}

/* rpz[i].primary, .tsig: what a transfer needs (RFC 8945 algorithms, a base64 secret). */
static void check_rpz_transfer(struct loader *L, const struct conf_rpz *r, size_t i, const struct ynode *item)
{
	const struct ynode *tsig = conf_ynode_get(item, "tsig");
	if (r->tsig_name != NULL && r->primary.len == 0) {
		conf_key_set(L, "rpz[%zu].tsig", i);
		conf_error(L, tsig, false, "tsig signs transfers: it needs a primary");
	}
	if (r->nallow_notify > 0 && r->primary.len == 0) {
		conf_key_set(L, "rpz[%zu].allow_notify", i);
		conf_error(L, conf_ynode_get(item, "allow_notify"), false,
		           "a NOTIFY asks for a transfer: allow_notify needs a primary");
	}
	if (r->tsig_algorithm != NULL && r->tsig_name != NULL) {
		static const char *const algs[] = { "hmac-md5", "hmac-sha1", "hmac-sha224", "hmac-sha256",
			                            "hmac-sha384", "hmac-sha512" };
		bool known = false;
		for (size_t k = 0; k < sizeof(algs) / sizeof(algs[0]); k++)
			known |= strcmp(r->tsig_algorithm, algs[k]) == 0;
		if (!known) {
			conf_key_set(L, "rpz[%zu].tsig.algorithm", i);
			conf_error(L, conf_ynode_get(tsig, "algorithm"), true,
			           "expected hmac-sha256 (or hmac-sha1, -sha224, -sha384, -sha512, hmac-md5)");
		}
	}
	if (r->tsig_secret != NULL) {
		/* base64 (RFC 4648), as knotc, tsig-keygen and keymgr print it */
		size_t n = strlen(r->tsig_secret), pad = 0;
		bool ok = n > 0 && n % 4 == 0;
		for (size_t k = 0; k < n && ok; k++) {
			char ch = r->tsig_secret[k];
			if (ch == '=')
				pad++;
			else
				ok = pad == 0 && (isalnum((unsigned char)ch) || ch == '+' || ch == '/');
		}
		if (!ok || pad > 2) {
			conf_key_set(L, "rpz[%zu].tsig.secret", i);
			conf_error(L, conf_ynode_get(tsig, "secret"), false, "not a base64 secret");
		}
	}
}

/* rpz: one entry per zone; its partitions exist (names resolved to ids) */
static void check_rpz(struct loader *L)
{
	struct conf *c = &L->st.conf;
	const struct ynode *list = conf_ynode_get(L->docs[0].root, "rpz");
	for (size_t i = 0; i < c->nrpz; i++) {
		struct conf_rpz *r = &c->rpz[i];
		const struct ynode *item = list_item(list, i);
		for (size_t j = 0; j < i && r->zone; j++) {
			if (c->rpz[j].zone == NULL || strcmp(c->rpz[j].zone, r->zone) != 0)
				continue;
			const struct ynode *f = conf_ynode_get(list_item(list, j), "zone");
			conf_key_set(L, "rpz[%zu].zone", i);
			conf_error(L, conf_ynode_get(item, "zone"), true, "duplicate policy zone, first at line %u, column %u",
			           f ? (unsigned)f->line : 0, f ? (unsigned)f->col : 0);
		}
		check_rpz_transfer(L, r, i, item);
		if (r->npartitions == 0)
			continue;
		r->part_ids = calloc(r->npartitions, sizeof(*r->part_ids));
		if (r->part_ids == NULL) {
			L->oom = true;
			return;
		}
		const struct ynode *pl = conf_ynode_get(item, "partitions");
		for (size_t k = 0; k < r->npartitions; k++) {
			if (r->partitions[k] == NULL)
				continue;
			int id = ptable_find(c->partitions.table, r->partitions[k]);
			if (id > 0) {
				r->part_ids[k] = (unsigned)id;
				continue;
			}
			conf_key_set(L, "rpz[%zu].partitions[%zu]", i, k);
			conf_error(L, list_item(pl, k), true,
			           "no such partition in this plan (partdnsctl partition list shows them)");
		}
	}
}

static void check_partitions(struct loader *L)
{
	struct conf_state *st = &L->st;
	struct conf *c = &st->conf;
	c->partitions.table = ptable_new();
	size_t n = st->nparts ? st->nparts : 1;
	struct pcheck pc = { .ids = calloc(n, sizeof(*pc.ids)), .dup = calloc(n, sizeof(*pc.dup)) };
	if (c->partitions.table == NULL || pc.ids == NULL || pc.dup == NULL) {
		L->oom = true;
		goto out;
	}
	check_parts(L, &pc);
	if (!L->oom)
		add_prefixes(L, &pc);
	if (!L->oom) {
		resolve_unmatched(L);
		resolve_serial(L);
		check_standby(L, &pc);
	}
	if (!L->oom)
		warn_parts(L, &pc);
	if (!L->oom)
		check_rpz(L);
	if (!L->oom && L->diag.nerrors == 0) {
		build_parts(L, &pc);
		uint64_t unmatched = (uint64_t)c->partitions.unmatched << 32 | c->partitions.unmatched_id;
		c->partitions.digest = mapping_plan_digest(c->partitions.mapping, c->partitions.table, unmatched);
	}
out:
	free(pc.ids);
	free(pc.dup);
}

/* local_zones, global and per partition: records parsed and checked (local.c) */
static void check_local(struct loader *L, const struct ynode *root)
{
	struct conf_state *st = &L->st;
	conf_local_check(L, "local_zones", &st->conf.local_zones, conf_ynode_get(root, "local_zones"));
	for (size_t i = 0; i < st->nparts; i++) {
		char key[64];
		snprintf(key, sizeof(key), "partitions.list[%zu].local_zones", i);
		conf_local_check(L, key, &st->parts[i].local,
		                 conf_ynode_get(list_item(st->list_node, i), "local_zones"));
	}
}

void conf_check(struct loader *L, const struct ynode *root)
{
	check_server(L, root);
	check_cache(L, root);
	check_resolver(L, root);
	check_edns(L, root);
	check_etcd(L, root);
	check_local(L, root);
	check_partitions(L);
	conf_key_set(L, "%s", "");
}
