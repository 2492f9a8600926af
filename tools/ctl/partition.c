/* SPDX-License-Identifier: BSD-3-Clause */
/* partdnsctl partition lookup/list and mapping export: the config's partition table. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "mapping/ecs.h"
#include "mapping/export.h"
#include "mapping/mapping.h"
#include "partition/partition.h"
#include "partition/prefix.h"
#include "tools/ctl/ctl.h"

static const char *or_dash(const char *s)
{
	return s != NULL && *s != '\0' ? s : "-";
}

/* The mapped IPv4 address and IPv6 prefix of id as text, "-" when unset. */
static void mapped_text(const struct mapping *m, unsigned id, char *v4, char *v6, size_t size)
{
	const struct mapping_entry *e = mapping_get(m, id);
	snprintf(v4, size, "-");
	snprintf(v6, size, "-");
	if (e != NULL && e->has_v4)
		prefix_format_addr(&e->v4, v4, size);
	if (e != NULL && e->has_v6)
		prefix_format(&e->v6, v6, size);
}

/* The lines about partition id: name, label, mapped addresses, the ECS for family. */
static void print_partition(const struct conf *conf, unsigned id, int family)
{
	const struct ptable *t = conf->partitions.table;
	const struct mapping *m = conf->partitions.mapping;
	const struct mapping_entry *e = mapping_get(m, id);
	char v4[PREFIX_STRLEN], v6[PREFIX_STRLEN];
	mapped_text(m, id, v4, v6, sizeof(v4));
	printf("partition  %s (id %u)\n", ptable_name(t, id), id);
	printf("label      %s\n", or_dash(e != NULL ? e->label : NULL));
	printf("mapped     %s\n", v4);
	printf("mapped6    %s\n", v6);
	struct ecs ecs;
	if (mapping_ecs(m, id, family, &ecs) == 0) {
		struct prefix p;
		char text[PREFIX_STRLEN];
		ecs_to_prefix(&ecs, &p);
		prefix_format(&p, text, sizeof(text));
		printf("ecs        %s (sent for EDNS domains to %s clients)\n", text,
		       family == AF_INET ? "IPv4" : "IPv6");
	} else {
		printf("ecs        none (the partition has no mapped address)\n");
	}
}

static int partition_lookup(struct ctl *c, int argc, char **argv)
{
	int first;
	int rc = ctl_getopt(c, argc, argv, "", NULL, NULL, NULL, &first);
	if (rc >= 0)
		return rc;
	if (argc - first != 1)
		return ctl_usage_error("partition lookup: expected one ADDR");
	const char *text = argv[first];
	struct prefix addr;
	if (prefix_parse_addr(text, &addr) != 0) {
		ctl_error("partition lookup: '%s' is not an IPv4 or IPv6 address", text);
		return CTL_ERROR;
	}
	if ((rc = ctl_load_conf(c)) != CTL_OK)
		return rc;
	const struct conf *conf = c->conf;
	struct prefix matched;
	int family = addr.family;
	unsigned id = ptable_lookup(conf->partitions.table, family, addr.addr, &matched);
	char buf[PREFIX_STRLEN];
	prefix_format_addr(&addr, buf, sizeof(buf));
	printf("address    %s\n", buf);
	if (id != PARTITION_COMMON) {
		prefix_format(&matched, buf, sizeof(buf));
		printf("match      %s\n", buf);
		print_partition(conf, id, family);
		return CTL_OK;
	}
	printf("match      no partition (no prefix of the config covers the address)\n");
	switch (conf->partitions.unmatched) {
	case CONF_UNMATCHED_REFUSE:
		printf("unmatched  refuse: queries from it are answered REFUSED\n");
		break;
	case CONF_UNMATCHED_PARTITION:
		printf("unmatched  treated as partition %s (partitions.unmatched)\n",
		       or_dash(ptable_name(conf->partitions.table, conf->partitions.unmatched_id)));
		print_partition(conf, conf->partitions.unmatched_id, family);
		break;
	case CONF_UNMATCHED_COMMON:
	default:
		printf("unmatched  common: answered from the common cache, no ECS sent\n");
		break;
	}
	return CTL_OK;
}

/* Column widths of the partition table, grown to fit. */
struct widths {
	int name, id, label, v4, v6, mapped, mapped6;
};

static void widen(int *w, const char *s)
{
	int len = (int)strlen(s);
	if (len > *w)
		*w = len;
}

static void print_row(const struct widths *w, const char *name, const char *id, const char *label,
                      const char *n4, const char *n6, const char *mapped, const char *mapped6)
{
	printf("%-*s  %*s  %-*s  %*s  %*s  %-*s  %s\n", w->name, name, w->id, id, w->label, label,
	       w->v4, n4, w->v6, n6, w->mapped, mapped, mapped6);
}

static int partition_list(struct ctl *c, int argc, char **argv)
{
	int first;
	int rc = ctl_getopt(c, argc, argv, "", NULL, NULL, NULL, &first);
	if (rc >= 0)
		return rc;
	if (argc - first != 0)
		return ctl_usage_error("partition list: unexpected argument '%s'", argv[first]);
	if ((rc = ctl_load_conf(c)) != CTL_OK)
		return rc;
	const struct ptable *t = c->conf->partitions.table;
	const struct mapping *m = c->conf->partitions.mapping;
	size_t n = ptable_size(t);
	static const char *const head[] = { "NAME", "ID", "LABEL", "IPV4", "IPV6", "MAPPED", "MAPPED6" };
	struct widths w = { 0 };
	widen(&w.name, head[0]);
	widen(&w.id, head[1]);
	widen(&w.label, head[2]);
	widen(&w.v4, head[3]);
	widen(&w.v6, head[4]);
	widen(&w.mapped, head[5]);
	widen(&w.mapped6, head[6]);
	/* Two passes: widths, then rows (at most PARTITION_MAX partitions). */
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1)
			print_row(&w, head[0], head[1], head[2], head[3], head[4], head[5], head[6]);
		for (unsigned id = 1; id <= n; id++) {
			char idt[16], n4[24], n6[24], v4[PREFIX_STRLEN], v6[PREFIX_STRLEN];
			const struct mapping_entry *e = mapping_get(m, id);
			const char *label = or_dash(e != NULL ? e->label : NULL);
			snprintf(idt, sizeof(idt), "%u", id);
			snprintf(n4, sizeof(n4), "%zu", ptable_prefix_count(t, id, AF_INET));
			snprintf(n6, sizeof(n6), "%zu", ptable_prefix_count(t, id, AF_INET6));
			mapped_text(m, id, v4, v6, sizeof(v4));
			if (pass == 0) {
				widen(&w.name, ptable_name(t, id));
				widen(&w.id, idt);
				widen(&w.label, label);
				widen(&w.v4, n4);
				widen(&w.v6, n6);
				widen(&w.mapped, v4);
				widen(&w.mapped6, v6);
			} else {
				print_row(&w, ptable_name(t, id), idt, label, n4, n6, v4, v6);
			}
		}
	}
	return CTL_OK;
}

/* partition failover NAME [--to X] / failback NAME: the store keeps it; the daemon follows within a second */

enum { OPT_TO = 300 };

static int to_opt(int opt, const char *arg, void *ctx)
{
	if (opt != OPT_TO)
		return CTL_USAGE;
	if (*arg == '\0')
		return ctl_usage_error("partition failover: --to needs a partition name or an address");
	*(const char **)ctx = arg;
	return 0;
}

/* Is to something a partition of conf other than id can stand by as: another partition, or an address? */
static bool standby_target_ok(const struct conf *conf, unsigned id, const char *to)
{
	int tid = ptable_find(conf->partitions.table, to);
	if (tid > 0)
		return (unsigned)tid != id && mapping_has_ecs(conf->partitions.mapping, (unsigned)tid);
	struct prefix p;
	if (prefix_parse(to, &p) != 0 && prefix_parse_addr(to, &p) != 0)
		return false;
	return (p.family == AF_INET6 || p.len == 32) && mapping_check_global(&p) == 0;
}

static int partition_failover(struct ctl *c, int argc, char **argv)
{
	static const struct option longs[] = {
		{ "to", required_argument, NULL, OPT_TO },
		{ NULL, 0, NULL, 0 },
	};
	const char *to = NULL;
	int first;
	int rc = ctl_getopt(c, argc, argv, "", longs, to_opt, &to, &first);
	if (rc >= 0)
		return rc;
	if (argc - first != 1)
		return ctl_usage_error("partition failover: expected one partition name");
	const char *name = argv[first];
	if ((rc = ctl_load_conf(c)) != CTL_OK)
		return rc;
	int id = ptable_find(c->conf->partitions.table, name);
	if (id <= 0) {
		ctl_error("partition failover: no partition '%s' in %s", name, c->conf_path);
		return CTL_ERROR;
	}
	const struct mapping_entry *e = mapping_get(c->conf->partitions.mapping, (unsigned)id);
	const char *target = to != NULL ? to : e != NULL ? e->standby : NULL;
	if (target == NULL) {
		ctl_error("partition failover: '%s' has no standby (set partitions.list[].standby in the config, or "
		          "give --to PARTITION|ADDRESS)", name);
		return CTL_ERROR;
	}
	if (!standby_target_ok(c->conf, (unsigned)id, target)) {
		ctl_error("partition failover: '%s' cannot stand by for '%s': give another partition with a mapped "
		          "address, or a global unicast address CDNs know", target, name);
		return CTL_ERROR;
	}
	struct store_standby b = { .since = (int64_t)time(NULL) };
	if (strlen(name) >= sizeof(b.partition) || strlen(to ? to : "") >= sizeof(b.to)) {
		ctl_error("partition failover: name or --to too long");
		return CTL_ERROR;
	}
	snprintf(b.partition, sizeof(b.partition), "%s", name);
	snprintf(b.to, sizeof(b.to), "%s", to ? to : ""); /* "" = the standby key, whatever it says then */
	snprintf(b.by, sizeof(b.by), "%s", c->user);
	struct store *s;
	if ((rc = ctl_store_open(c, "partition failover", false, false, &s, NULL)) != CTL_OK)
		return rc;
	int err = store_standby_set(s, &b);
	store_close(s);
	if (err != 0)
		return ctl_store_fail(c, "partition failover", err);
	printf("%s: on standby (%s) until partition failback %s; the daemon switches within a second and drops "
	       "the city's cached flagged answers\n", name, target, name);
	return CTL_OK;
}

static int partition_failback(struct ctl *c, int argc, char **argv)
{
	int first;
	int rc = ctl_getopt(c, argc, argv, "", NULL, NULL, NULL, &first);
	if (rc >= 0)
		return rc;
	if (argc - first != 1)
		return ctl_usage_error("partition failback: expected one partition name");
	const char *name = argv[first];
	if ((rc = ctl_load_conf(c)) != CTL_OK)
		return rc;
	struct store *s;
	if ((rc = ctl_store_open(c, "partition failback", false, false, &s, NULL)) != CTL_OK)
		return rc;
	int err = store_standby_clear(s, name);
	store_close(s);
	if (err == -ENOENT) {
		ctl_error("partition failback: '%s' is not failed over", name);
		return CTL_ERROR;
	}
	if (err != 0)
		return ctl_store_fail(c, "partition failback", err);
	printf("%s: back on its own identity; the daemon switches within a second\n", name);
	return CTL_OK;
}

int ctl_partition(struct ctl *c, int argc, char **argv)
{
	if (argc < 2)
		return ctl_usage_error("partition: expected lookup, list, failover or failback");
	const char *verb = argv[1];
	if (strcmp(verb, "lookup") == 0)
		return partition_lookup(c, argc - 1, argv + 1);
	if (strcmp(verb, "list") == 0)
		return partition_list(c, argc - 1, argv + 1);
	if (strcmp(verb, "failover") == 0)
		return partition_failover(c, argc - 1, argv + 1);
	if (strcmp(verb, "failback") == 0)
		return partition_failback(c, argc - 1, argv + 1);
	return ctl_usage_error("partition: unknown subcommand '%s'", verb);
}

enum { OPT_FORMAT = 256 };

static int format_opt(int opt, const char *arg, void *ctx)
{
	if (opt != OPT_FORMAT)
		return CTL_USAGE;
	if (mapping_format_parse(arg, ctx) != 0)
		return ctl_usage_error("mapping export: --format must be csv, json or geofeed, not '%s'",
		                       arg);
	return 0;
}

int ctl_mapping(struct ctl *c, int argc, char **argv)
{
	if (argc < 2)
		return ctl_usage_error("mapping: expected export");
	if (strcmp(argv[1], "export") != 0)
		return ctl_usage_error("mapping: unknown subcommand '%s'", argv[1]);
	static const struct option longs[] = {
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ NULL, 0, NULL, 0 },
	};
	enum mapping_format fmt = MAPPING_FORMAT_CSV;
	int first;
	int rc = ctl_getopt(c, argc - 1, argv + 1, "", longs, format_opt, &fmt, &first);
	if (rc >= 0)
		return rc;
	if (argc - 1 - first != 0)
		return ctl_usage_error("mapping export: unexpected argument '%s'", argv[1 + first]);
	if ((rc = ctl_load_conf(c)) != CTL_OK)
		return rc;
	if (fmt == MAPPING_FORMAT_GEOFEED)
		mapping_warn_unlocated(c->conf->partitions.mapping, c->conf->partitions.table, "partdnsctl: warning: ",
		                       stderr);
	/* partitions.serial when the operator keeps one (CDNs can order tables by it), else the
	 * digest, which only tells that the table changed */
	char serial[24];
	if (c->conf->partitions.serial != 0)
		snprintf(serial, sizeof(serial), "%u", c->conf->partitions.serial);
	else
		snprintf(serial, sizeof(serial), "%016" PRIx64,
		         mapping_serial(c->conf->partitions.mapping, c->conf->partitions.table));
	if (mapping_export_serial(c->conf->partitions.mapping, c->conf->partitions.table, fmt, serial, stdout) != 0) {
		ctl_error("mapping export: cannot write the table to standard output");
		return CTL_ERROR;
	}
	return CTL_OK;
}
