/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of tools/gen/partdns-gen: its output loads into a ptable, is deterministic and well formed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml.h>

#include "partition/partition.h"
#include "partition/prefix.h"

#ifndef PARTDNS_GEN_PATH
#error "PARTDNS_GEN_PATH must name the partdns-gen binary"
#endif

static const char *const city_names[] = {
	"nanjing", "suzhou",   "wuxi",   "changzhou", "xuzhou",      "nantong", "yangzhou",
	"zhenjiang", "taizhou", "yancheng", "huaian", "lianyungang", "suqian",
};
enum { NCITIES = sizeof(city_names) / sizeof(city_names[0]) };

struct output {
	char *data;
	size_t len;
	int status; /* exit status, or -1 when it did not exit normally */
};

/* Run partdns-gen with args (shell words, no quoting needed) and capture stdout. */
static struct output run_gen(const char *args)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "'%s' %s 2>/dev/null", PARTDNS_GEN_PATH, args);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	struct output o = { .data = NULL, .len = 0 };
	size_t cap = 0;
	for (;;) {
		if (o.len + 65536 + 1 > cap) {
			cap = cap ? cap * 2 : 1 << 20;
			o.data = realloc(o.data, cap);
			assert_non_null(o.data);
		}
		size_t n = fread(o.data + o.len, 1, cap - o.len - 1, p);
		if (n == 0)
			break;
		o.len += n;
	}
	o.data[o.len] = '\0';
	int st = pclose(p);
	o.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return o;
}

/* A loaded plain-format table. */
struct loaded {
	struct ptable *t;
	struct prefix *all;
	unsigned *owner;
	size_t n, cap;
};

static void loaded_free(struct loaded *l)
{
	ptable_free(l->t);
	free(l->all);
	free(l->owner);
}

/* Parse "PREFIX CITY" lines into a ptable the way the config loader would. */
static void load_plain(const struct output *o, struct loaded *l)
{
	memset(l, 0, sizeof(*l));
	l->t = ptable_new();
	assert_non_null(l->t);
	unsigned bad = 0;
	size_t lineno = 0;
	char *save = NULL;
	char *copy = strdup(o->data);
	assert_non_null(copy);
	for (char *line = strtok_r(copy, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		lineno++;
		if (line[0] == '#')
			continue;
		char *sp = strchr(line, ' ');
		if (sp == NULL || strchr(sp + 1, ' ') != NULL) {
			print_error("line %zu: not \"PREFIX CITY\": %s\n", lineno, line);
			bad++;
			continue;
		}
		*sp = '\0';
		const char *city = sp + 1;
		struct prefix p;
		int rc = prefix_parse(line, &p);
		if (rc != 0) {
			print_error("line %zu: %s: %s\n", lineno, line, prefix_strerror(rc));
			bad++;
			continue;
		}
		int id = ptable_find(l->t, city);
		if (id < 0)
			id = ptable_add(l->t, city);
		assert_true(id > 0);
		unsigned other = 0;
		rc = ptable_add_prefix(l->t, (unsigned)id, &p, &other);
		if (rc != 0) {
			print_error("line %zu: %s in %s: %s (also in %s)\n", lineno, line, city,
			            prefix_strerror(rc), rc == -EEXIST ? ptable_name(l->t, other) : "-");
			bad++;
			continue;
		}
		if (l->n == l->cap) {
			l->cap = l->cap ? l->cap * 2 : 4096;
			l->all = realloc(l->all, l->cap * sizeof(*l->all));
			l->owner = realloc(l->owner, l->cap * sizeof(*l->owner));
			assert_non_null(l->all);
			assert_non_null(l->owner);
		}
		l->all[l->n] = p;
		l->owner[l->n] = (unsigned)id;
		l->n++;
	}
	free(copy);
	assert_int_equal(bad, 0);
	assert_int_equal(ptable_build(l->t), 0);
}

static int cmp_prefix(const void *a, const void *b)
{
	const struct prefix *x = a, *y = b;
	if (x->family != y->family)
		return x->family - y->family;
	int c = memcmp(x->addr, y->addr, sizeof(x->addr));
	return c != 0 ? c : x->len - y->len;
}

/* No prefix overlaps another: in (family, address, length) order, none contains its successor. */
static void assert_disjoint(const struct loaded *l)
{
	struct prefix *s = malloc(l->n * sizeof(*s));
	assert_non_null(s);
	memcpy(s, l->all, l->n * sizeof(*s));
	qsort(s, l->n, sizeof(*s), cmp_prefix);
	unsigned overlaps = 0;
	for (size_t i = 1; i < l->n; i++) {
		if (prefix_contains(&s[i - 1], &s[i])) {
			char a[PREFIX_STRLEN], b[PREFIX_STRLEN];
			prefix_format(&s[i - 1], a, sizeof(a));
			prefix_format(&s[i], b, sizeof(b));
			if (overlaps++ < 10)
				print_error("%s overlaps %s\n", a, b);
		}
	}
	free(s);
	assert_int_equal(overlaps, 0);
}

static void check_table(const struct loaded *l, size_t v4, size_t v6)
{
	assert_int_equal(ptable_size(l->t), NCITIES);
	unsigned failures = 0;
	for (unsigned i = 0; i < NCITIES; i++) {
		unsigned id = i + 1;
		const char *name = ptable_name(l->t, id);
		if (strcmp(name, city_names[i]) != 0 || ptable_prefix_count(l->t, id, AF_INET) != v4 ||
		    ptable_prefix_count(l->t, id, AF_INET6) != v6) {
			print_error("city %u: %s with %zu IPv4 + %zu IPv6, want %s with %zu + %zu\n", id, name,
			            ptable_prefix_count(l->t, id, AF_INET), ptable_prefix_count(l->t, id, AF_INET6),
			            city_names[i], v4, v6);
			failures++;
		}
	}
	assert_int_equal(failures, 0);
	assert_int_equal(l->n, (v4 + v6) * NCITIES);
	assert_disjoint(l);
	/* Each prefix classifies to its own city, matched by itself (no overlaps). */
	for (size_t i = 0; i < l->n; i++) {
		struct prefix m;
		unsigned id = ptable_lookup(l->t, l->all[i].family, l->all[i].addr, &m);
		if (id != l->owner[i] || !prefix_equal(&m, &l->all[i]))
			failures++;
	}
	assert_int_equal(failures, 0);
}

static void test_plain_default_loads(void **state)
{
	(void)state;
	struct output o = run_gen("--format plain --seed 7");
	assert_int_equal(o.status, 0);
	struct loaded l;
	load_plain(&o, &l);
	/* The default is a province-sized table: 100k+ IPv4, ~20k IPv6. */
	check_table(&l, 8000, 1500);
	size_t v4 = 0;
	for (unsigned id = 1; id <= NCITIES; id++)
		v4 += ptable_prefix_count(l.t, id, AF_INET);
	assert_true(v4 >= 100000);
	loaded_free(&l);
	free(o.data);
}

static void test_counts_configurable(void **state)
{
	(void)state;
	static const struct {
		const char *args;
		size_t v4, v6;
	} rows[] = {
		{ "--format plain --prefixes-per-city 1 --v6-per-city 1", 1, 1 },
		{ "--format plain --prefixes-per-city 37 --v6-per-city 5 --seed 2", 37, 5 },
		{ "--format plain --prefixes-per-city 20000 --v6-per-city 300 --seed 3", 20000, 300 },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct output o = run_gen(rows[i].args);
		assert_int_equal(o.status, 0);
		struct loaded l;
		load_plain(&o, &l);
		check_table(&l, rows[i].v4, rows[i].v6);
		loaded_free(&l);
		free(o.data);
	}
}

static void test_deterministic(void **state)
{
	(void)state;
	static const char *const args[] = {
		"--seed 5 --prefixes-per-city 3000 --v6-per-city 400",
		"--seed 5 --prefixes-per-city 3000 --v6-per-city 400 --format plain",
	};
	for (size_t i = 0; i < 2; i++) {
		struct output a = run_gen(args[i]), b = run_gen(args[i]);
		assert_int_equal(a.status, 0);
		assert_int_equal(b.status, 0);
		assert_true(a.len > 0);
		assert_int_equal(a.len, b.len);
		assert_memory_equal(a.data, b.data, a.len);
		free(a.data);
		free(b.data);
	}
	/* Another seed gives another table, of the same size. */
	struct output a = run_gen("--seed 5 --format plain --prefixes-per-city 500 --v6-per-city 50");
	struct output b = run_gen("--seed 6 --format plain --prefixes-per-city 500 --v6-per-city 50");
	assert_int_equal(a.status, 0);
	assert_int_equal(b.status, 0);
	assert_true(a.len != b.len || memcmp(a.data, b.data, a.len) != 0);
	free(a.data);
	free(b.data);

	/* -o FILE writes the same bytes as standard output. */
	char path[] = "/tmp/test_gen.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "--seed 9 --prefixes-per-city 100 --v6-per-city 10 -o %s", path);
	struct output f = run_gen(cmd);
	assert_int_equal(f.status, 0);
	assert_int_equal(f.len, 0);
	struct output s = run_gen("--seed 9 --prefixes-per-city 100 --v6-per-city 10");
	FILE *in = fopen(path, "rb");
	assert_non_null(in);
	char *buf = malloc(s.len + 2);
	assert_non_null(buf);
	size_t n = fread(buf, 1, s.len + 1, in);
	fclose(in);
	unlink(path);
	assert_int_equal(n, s.len);
	assert_memory_equal(buf, s.data, s.len);
	free(buf);
	free(s.data);
	free(f.data);
}

static void test_bad_options(void **state)
{
	(void)state;
	static const char *const rows[] = {
		"--format xml", "--prefixes-per-city 0", "--prefixes-per-city -5", "--v6-per-city x",
		"--seed", "--bogus", "extra-argument", "--prefixes-per-city 99999999",
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct output o = run_gen(rows[i]);
		if (o.status != 2)
			fail_msg("partdns-gen %s: exit %d, want 2", rows[i], o.status);
		free(o.data);
	}
	struct output h = run_gen("--help");
	assert_int_equal(h.status, 0);
	assert_non_null(strstr(h.data, "--prefixes-per-city"));
	free(h.data);
}

/* YAML helpers over a loaded libyaml document. */
static const char *scalar(yaml_document_t *d, yaml_node_t *n)
{
	assert_non_null(n);
	assert_int_equal(n->type, YAML_SCALAR_NODE);
	return (const char *)n->data.scalar.value;
}

static yaml_node_t *map_get(yaml_document_t *d, yaml_node_t *map, const char *key)
{
	assert_int_equal(map->type, YAML_MAPPING_NODE);
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++)
		if (strcmp(scalar(d, yaml_document_get_node(d, p->key)), key) == 0)
			return yaml_document_get_node(d, p->value);
	return NULL;
}

static void test_yaml_shape(void **state)
{
	(void)state;
	const char *opts = "--seed 11 --prefixes-per-city 1200 --v6-per-city 200";
	char args[256];
	struct output y = run_gen(opts);
	snprintf(args, sizeof(args), "%s --format plain", opts);
	struct output p = run_gen(args);
	assert_int_equal(y.status, 0);
	assert_int_equal(p.status, 0);
	assert_non_null(strstr(y.data, "# generated by partdns-gen --seed 11"));
	struct loaded l;
	load_plain(&p, &l);

	yaml_parser_t parser;
	yaml_document_t doc;
	assert_int_equal(yaml_parser_initialize(&parser), 1);
	yaml_parser_set_input_string(&parser, (const unsigned char *)y.data, y.len);
	if (!yaml_parser_load(&parser, &doc))
		fail_msg("YAML error at line %zu: %s", parser.problem_mark.line + 1, parser.problem);
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	assert_non_null(root);
	assert_int_equal(root->data.mapping.pairs.top - root->data.mapping.pairs.start, 2);
	assert_string_equal(scalar(&doc, map_get(&doc, root, "unmatched")), "common");
	yaml_node_t *list = map_get(&doc, root, "list");
	assert_non_null(list);
	assert_int_equal(list->type, YAML_SEQUENCE_NODE);
	assert_int_equal(list->data.sequence.items.top - list->data.sequence.items.start, NCITIES);

	static const char *const keys[] = { "name", "label", "country", "region", "city",
		                            "mapped", "mapped6", "prefixes" };
	struct prefix mapped[NCITIES], mapped6[NCITIES], doc6;
	assert_int_equal(prefix_parse("2001:db8::/32", &doc6), 0);
	size_t k = 0; /* index into the plain table, which lists the same prefixes in order */
	for (unsigned i = 0; i < NCITIES; i++) {
		yaml_node_t *e = yaml_document_get_node(&doc, list->data.sequence.items.start[i]);
		assert_int_equal(e->data.mapping.pairs.top - e->data.mapping.pairs.start, 8);
		for (size_t j = 0; j < 8; j++)
			if (map_get(&doc, e, keys[j]) == NULL)
				fail_msg("city %u: no key %s", i + 1, keys[j]);
		assert_string_equal(scalar(&doc, map_get(&doc, e, "name")), city_names[i]);
		assert_string_equal(scalar(&doc, map_get(&doc, e, "country")), "CN");
		assert_string_equal(scalar(&doc, map_get(&doc, e, "region")), "CN-JS");
		assert_true(strlen(scalar(&doc, map_get(&doc, e, "label"))) > 0);
		assert_string_equal(scalar(&doc, map_get(&doc, e, "label")),
		                    scalar(&doc, map_get(&doc, e, "city")));

		/* mapped: an address in TEST-NET-2, unique; mapped6: a /56 in 2001:db8::/32, unique. */
		assert_int_equal(prefix_parse_addr(scalar(&doc, map_get(&doc, e, "mapped")), &mapped[i]), 0);
		assert_int_equal(mapped[i].family, AF_INET);
		assert_int_equal(mapped[i].addr[0], 198);
		assert_int_equal(mapped[i].addr[1], 51);
		assert_int_equal(mapped[i].addr[2], 100);
		assert_int_equal(prefix_parse(scalar(&doc, map_get(&doc, e, "mapped6")), &mapped6[i]), 0);
		assert_int_equal(mapped6[i].len, 56);
		assert_true(prefix_contains(&doc6, &mapped6[i]));
		for (unsigned j = 0; j < i; j++) {
			assert_false(prefix_equal(&mapped[i], &mapped[j]));
			assert_false(prefix_equal(&mapped6[i], &mapped6[j]));
		}
		/* The mapped addresses lie in the city's own prefixes. */
		assert_int_equal(ptable_lookup(l.t, AF_INET, mapped[i].addr, NULL), i + 1);
		assert_int_equal(ptable_lookup(l.t, AF_INET6, mapped6[i].addr, NULL), i + 1);

		yaml_node_t *ps = map_get(&doc, e, "prefixes");
		assert_int_equal(ps->type, YAML_SEQUENCE_NODE);
		for (yaml_node_item_t *it = ps->data.sequence.items.start; it < ps->data.sequence.items.top;
		     it++, k++) {
			struct prefix q;
			const char *text = scalar(&doc, yaml_document_get_node(&doc, *it));
			assert_int_equal(prefix_parse(text, &q), 0);
			assert_true(k < l.n);
			if (!prefix_equal(&q, &l.all[k]) || l.owner[k] != i + 1)
				fail_msg("YAML prefix %zu (%s of %s) differs from the plain output", k, text,
				         city_names[i]);
		}
	}
	assert_int_equal(k, l.n);
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	loaded_free(&l);
	free(y.data);
	free(p.data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_default_loads),
		cmocka_unit_test(test_counts_configurable),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_bad_options),
		cmocka_unit_test(test_yaml_shape),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
