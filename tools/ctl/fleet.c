/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * partdnsctl fleet status [--json]: every node registered in the shared
 * store (store.etcd), the revision of the shared data it has applied and
 * the plan serial it runs, and which of them drift: behind the shared
 * data, or running another plan than the fleet's.
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/store_etcd.h"
#include "tools/ctl/ctl.h"
#include "util/json.h"
#include "util/vec.h"

struct node {
	char name[128];
	int64_t revision, serial, started, updated;
	bool connected;
	char version[32];
	bool ok;       /* its registration decodes */
};

/* A registration is hostile input like any other: fields checked, text bounded. */
static bool node_parse(const struct etcd_kv *kv, size_t skip, struct node *n)
{
	memset(n, 0, sizeof(*n));
	snprintf(n->name, sizeof(n->name), "%s", kv->key + skip);
	json_object *o = json_tokener_parse((const char *)kv->value), *v;
	bool ok = o != NULL && json_object_is_type(o, json_type_object);
	struct {
		const char *k;
		int64_t *dst;
	} ints[] = { { "revision", &n->revision }, { "serial", &n->serial }, { "started", &n->started },
		     { "updated", &n->updated } };
	for (size_t i = 0; ok && i < sizeof(ints) / sizeof(ints[0]); i++) {
		ok = json_object_object_get_ex(o, ints[i].k, &v) && json_object_is_type(v, json_type_int);
		if (ok)
			*ints[i].dst = json_object_get_int64(v);
	}
	if (ok && json_object_object_get_ex(o, "connected", &v) && json_object_is_type(v, json_type_boolean))
		n->connected = json_object_get_boolean(v);
	if (ok && json_object_object_get_ex(o, "version", &v) && json_object_is_type(v, json_type_string))
		snprintf(n->version, sizeof(n->version), "%s", json_object_get_string(v));
	for (char *p = n->version; *p; p++)
		if (*p < 0x21 || *p > 0x7e)
			*p = '?';
	for (char *p = n->name; *p; p++)
		if (*p < 0x21 || *p > 0x7e)
			*p = '?';
	json_object_put(o);
	n->ok = ok && n->revision >= 0;
	return n->ok;
}

struct nodes {
	struct node *n;
	size_t count, cap;
	size_t skip;
};

static int node_add(const struct etcd_kv *kv, void *arg)
{
	struct nodes *l = arg;
	if (vec_grow(&l->n, &l->cap, l->count + 1, sizeof(*l->n), SIZE_MAX) != 0)
		return ETCD_E_NOMEM;
	node_parse(kv, l->skip, &l->n[l->count++]);
	return 0;
}

static void show_time(int64_t t, char *buf, size_t size)
{
	time_t tt = (time_t)t;
	struct tm tm;
	if (t <= 0 || gmtime_r(&tt, &tm) == NULL || strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(buf, size, "-");
}

/* Why a node drifts ("" when it does not). */
static void drift(const struct node *n, int64_t data_rev, int64_t serial, char *buf, size_t size)
{
	if (!n->ok)
		snprintf(buf, size, "registration does not decode");
	else if (n->revision < data_rev)
		snprintf(buf, size, "behind: revision %" PRId64 " of %" PRId64, n->revision, data_rev);
	else if (serial > 0 && n->serial != serial)
		snprintf(buf, size, "plan serial %" PRId64 ", the fleet's is %" PRId64, n->serial, serial);
	else if (!n->connected)
		snprintf(buf, size, "not watching the shared store");
	else
		buf[0] = '\0';
}

enum { OPT_JSON = 1000 };

static int json_opt(int opt, const char *arg, void *ctx)
{
	if (opt != OPT_JSON)
		return CTL_USAGE;
	*(bool *)ctx = true;
	return 0;
}

/* The plan serial most nodes run (0 for none): the fleet's when no plan was activated in the shared store. */
static int64_t common_serial(const struct nodes *l)
{
	int64_t serial = 0;
	size_t best = 0;
	for (size_t i = 0; i < l->count; i++) {
		size_t same = 0;
		for (size_t k = 0; k < l->count; k++)
			same += l->n[k].serial == l->n[i].serial;
		if (same > best) {
			best = same;
			serial = l->n[i].serial;
		}
	}
	return serial;
}

static int fleet_status(struct ctl *c, int argc, char **argv)
{
	static const struct option longs[] = { { "json", no_argument, NULL, OPT_JSON }, { NULL, 0, NULL, 0 } };
	bool json = false;
	int first;
	int rc = ctl_getopt(c, argc, argv, "", longs, json_opt, &json, &first);
	if (rc >= 0)
		return rc;
	if (argc - first != 0)
		return ctl_usage_error("fleet status: unexpected argument '%s'", argv[first]);
	if ((rc = ctl_load_conf(c)) != CTL_OK)
		return rc;
	if (!ctl_shared(c)) {
		ctl_error("fleet status: %s has no store.etcd: this node is not part of a fleet", c->conf_path);
		return CTL_ERROR;
	}
	struct etcd *e = store_etcd_client(c->conf);
	if (e == NULL) {
		ctl_error("fleet status: %s", store_remote_error());
		return CTL_ERROR;
	}
	const char *prefix = c->conf->store.etcd.prefix;
	char key[600], end[600];
	/* the shared data's revision, and the fleet's plan */
	snprintf(key, sizeof(key), "%s%s", prefix, STORE_ETCD_CHANGED);
	struct etcd_range r;
	int64_t data_rev = 0, serial = 0;
	int err = etcd_get(e, key, NULL, 0, 0, &r);
	if (err == 0) {
		data_rev = r.n == 1 ? r.kvs[0].mod_revision : 0;
		etcd_range_free(&r);
		store_etcd_key(prefix, STORE_KIND_PLAN, STORE_PLAN_ACTIVE, key, sizeof(key));
		err = etcd_get(e, key, NULL, 0, 0, &r);
	}
	if (err == 0) {
		struct store_plan p = { 0 };
		if (r.n == 1 && store_plan_decode(r.kvs[0].value, r.kvs[0].vlen, &p) == 0)
			serial = p.serial;
		store_plan_clear(&p);
		etcd_range_free(&r);
	}
	struct nodes l = { .skip = strlen(prefix) + strlen(STORE_ETCD_NODES) };
	if (err == 0) {
		snprintf(key, sizeof(key), "%s%s", prefix, STORE_ETCD_NODES);
		etcd_prefix_end(key, end, sizeof(end));
		int64_t rev = 0;
		err = store_etcd_scan(e, key, end, &rev, NULL, node_add, &l);
	}
	if (err != 0) {
		ctl_error("fleet status: %s (%s)", etcd_strerror(err), etcd_error(e));
		etcd_free(e);
		free(l.n);
		return CTL_ERROR;
	}
	etcd_free(e);
	if (serial == 0) /* no activated plan in the shared store: each node runs its config's; they should agree */
		serial = common_serial(&l);
	size_t ndrift = 0;
	char why[128], started[32], updated[32];
	if (json) {
		printf("{\"revision\":%" PRId64 ",\"serial\":%" PRId64 ",\"nodes\":[", data_rev, serial);
	} else {
		printf("shared data at revision %" PRId64 ", plan serial %" PRId64 ", %zu node(s)\n", data_rev, serial,
		       l.count);
		printf("%-24s %10s %10s %-8s %-20s %s\n", "NODE", "REVISION", "SERIAL", "VERSION", "UPDATED", "STATE");
	}
	for (size_t i = 0; i < l.count; i++) {
		const struct node *n = &l.n[i];
		drift(n, data_rev, serial, why, sizeof(why));
		ndrift += why[0] != '\0';
		show_time(n->started, started, sizeof(started));
		show_time(n->updated, updated, sizeof(updated));
		if (json) {
			printf("%s{\"name\":", i ? "," : "");
			json_string(stdout, n->name);
			printf(",\"revision\":%" PRId64 ",\"serial\":%" PRId64 ",\"connected\":%s,\"version\":", n->revision,
			       n->serial, n->connected ? "true" : "false");
			json_string(stdout, n->version);
			printf(",\"started\":\"%s\",\"updated\":\"%s\",\"drift\":", started, updated);
			json_string(stdout, why);
			printf("}");
		} else {
			printf("%-24s %10" PRId64 " %10" PRId64 " %-8s %-20s %s\n", n->name, n->revision, n->serial,
			       n->version[0] ? n->version : "-", updated, why[0] ? why : "ok");
		}
	}
	if (json)
		printf("],\"drift\":%zu}\n", ndrift);
	free(l.n);
	if (ndrift > 0) {
		if (!json)
			fprintf(stderr, "partdnsctl: fleet status: %zu node(s) drift\n", ndrift);
		return CTL_ERROR;
	}
	return CTL_OK;
}

int ctl_fleet(struct ctl *c, int argc, char **argv)
{
	if (argc < 2)
		return ctl_usage_error("fleet: expected status");
	if (strcmp(argv[1], "status") == 0)
		return fleet_status(c, argc - 1, argv + 1);
	return ctl_usage_error("fleet: unknown subcommand '%s'", argv[1]);
}
