/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of store/store.c: records, put/get/del/foreach/version, processes, growth. */
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <lmdb.h>
#include <pthread.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "store/store.h"

static char base[4096]; /* per-run temporary directory */
static unsigned dircount;

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static int group_setup(void **state)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(base, sizeof(base), "%s/test_store.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	return mkdtemp(base) == NULL ? -1 : 0;
}

static int group_teardown(void **state)
{
	return nftw(base, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh (not yet existing) store directory for one test. */
static const char *newdir(char *buf, size_t size)
{
	snprintf(buf, size, "%s/s%u", base, ++dircount);
	return buf;
}

static struct conf_addr target(const char *host, uint16_t port)
{
	struct conf_addr a;
	memset(&a, 0, sizeof(a));
	if (strchr(host, ':') != NULL) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&a.ss;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		assert_int_equal(inet_pton(AF_INET6, host, &sin6->sin6_addr), 1);
		a.len = sizeof(*sin6);
	} else {
		struct sockaddr_in *sin = (struct sockaddr_in *)&a.ss;
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		assert_int_equal(inet_pton(AF_INET, host, &sin->sin_addr), 1);
		a.len = sizeof(*sin);
	}
	snprintf(a.text, sizeof(a.text), "%s@%u", host, (unsigned)port);
	return a;
}

static struct store_domain domain(const char *name, bool subtree, enum conf_policy policy)
{
	struct store_domain d;
	memset(&d, 0, sizeof(d));
	snprintf(d.name, sizeof(d.name), "%s", name);
	d.subtree = subtree;
	d.policy = policy;
	return d;
}

static void add_target(struct store_domain *d, const char *host, uint16_t port)
{
	d->forward[d->nforward++] = target(host, port);
}

/* Fields that must survive a put/get (the conf_addr compared by family, port, address). */
static void assert_domain_equal(const struct store_domain *want, const struct store_domain *got,
                                const char *msg)
{
	if (strcmp(want->name, got->name) != 0 || want->subtree != got->subtree ||
	    want->policy != got->policy || want->nforward != got->nforward)
		fail_msg("%s: got %s subtree=%d policy=%d n=%zu", msg, got->name, got->subtree,
		         got->policy, got->nforward);
	for (size_t i = 0; i < want->nforward; i++) {
		const struct conf_addr *a = &want->forward[i], *b = &got->forward[i];
		if (a->ss.ss_family != b->ss.ss_family || a->len != b->len)
			fail_msg("%s: target %zu family/len differ", msg, i);
		if (memcmp(&a->ss, &b->ss, a->len) != 0)
			fail_msg("%s: target %zu address/port differ", msg, i);
		if (strcmp(a->text, b->text) != 0)
			fail_msg("%s: target %zu text '%s', want '%s'", msg, i, b->text, a->text);
	}
}

/* Open dir read-write, making the directory first as --create would. */
static struct store *open_rw(const char *dir)
{
	struct store *s = NULL;
	int err = store_prepare_dir(dir, true);
	if (err == 0)
		err = store_open(dir, false, &s);
	if (err != 0)
		fail_msg("store_open(%s): %s", dir, store_strerror(err));
	return s;
}

static uint64_t version(struct store *s)
{
	uint64_t v = 0;
	int err = store_version(s, &v);
	if (err != 0)
		fail_msg("store_version: %s", store_strerror(err));
	return v;
}

static void test_open_missing(void **state)
{
	char dir[4200], sub[4300];
	struct store *s = (struct store *)0x1;
	newdir(dir, sizeof(dir));
	assert_int_equal(store_open(dir, true, &s), -ENOENT);
	assert_null(s);
	/* An existing but empty directory is no store either. */
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(store_open(dir, true, &s), -ENOENT);
	/* A file where the directory should be. */
	snprintf(sub, sizeof(sub), "%s/file", dir);
	FILE *f = fopen(sub, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(store_open(sub, true, &s), -ENOTDIR);
	assert_int_equal(store_open(sub, false, &s), -ENOTDIR);
	assert_int_equal(store_open("", false, &s), -EINVAL);
	assert_string_not_equal(store_strerror(-ENOENT), "unknown error");
}

/* A store directory that does not exist is an error, never a new empty store. */
static void test_open_never_creates(void **state)
{
	char dir[4200], deep[4300], msg[8300], want[8300];
	newdir(dir, sizeof(dir));
	snprintf(deep, sizeof(deep), "%s/a/b", dir);
	struct store *s = (struct store *)0x1;
	assert_int_equal(store_open(deep, false, &s), -ENOENT);
	assert_null(s);
	assert_int_equal(store_open(deep, true, &s), -ENOENT);
	assert_int_equal(store_open_size(deep, false, 1 << 20, &s), -ENOENT);
	struct stat st;
	assert_int_equal(stat(dir, &st), -1); /* not even the parent */
	assert_int_equal(store_prepare_dir(deep, false), -ENOENT);
	assert_int_equal(stat(dir, &st), -1);
	assert_int_equal(store_prepare_dir("", true), -EINVAL);
	snprintf(want, sizeof(want),
	         "store directory %s does not exist (set server.create_store: true, or run "
	         "partdnsctl domain add --create)",
	         deep);
	assert_string_equal(store_message(-ENOENT, deep, msg, sizeof(msg)), want);
	/* An existing directory: store_open makes the store in it. */
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(store_prepare_dir(dir, false), 0);
	assert_int_equal(store_open(dir, true, &s), -ENOENT); /* no store yet */
	snprintf(want, sizeof(want), "store %s: %s", dir, store_strerror(-ENOENT));
	assert_string_equal(store_message(-ENOENT, dir, msg, sizeof(msg)), want);
	assert_int_equal(store_open(dir, false, &s), 0);
	store_close(s);
	assert_int_equal(store_open(dir, true, &s), 0);
	store_close(s);
	/* A file where the directory should be. */
	snprintf(deep, sizeof(deep), "%s/file", dir);
	FILE *f = fopen(deep, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(store_prepare_dir(deep, true), -ENOTDIR);
	assert_int_equal(store_prepare_dir(deep, false), -ENOTDIR);
}

static void test_open_creates(void **state)
{
	char dir[4200], deep[4300];
	newdir(dir, sizeof(dir));
	snprintf(deep, sizeof(deep), "%s/a/b/c", dir);
	/* Made only when asked (server.create_store, --create). */
	assert_int_equal(store_prepare_dir(deep, true), 0);
	assert_int_equal(store_prepare_dir(deep, true), 0); /* and again: it is there */
	struct store *s = open_rw(deep);
	struct stat st;
	assert_int_equal(stat(deep, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	/* 0750 less whatever the umask removes, never more. */
	assert_int_equal(st.st_mode & 0777 & ~0750, 0);
	assert_int_equal(st.st_mode & 0700, 0700);
	assert_int_equal(version(s), 0);
	store_close(s);
	/* Now a reader can open it, and it is empty. */
	struct store *r = NULL;
	assert_int_equal(store_open(deep, true, &r), 0);
	assert_int_equal(version(r), 0);
	struct store_domain d;
	assert_int_equal(store_get(r, "example.com.", &d), -ENOENT);
	assert_int_equal(store_put(r, &d), -EROFS);
	assert_int_equal(store_del(r, "example.com."), -EROFS);
	store_close(r);
}

static void test_put_get(void **state)
{
	struct row {
		const char *msg;
		struct store_domain d;
	} rows[8];
	size_t n = 0;

	rows[n++] = (struct row){ "exact iterate", domain("example.com.", false, CONF_POLICY_ITERATE) };
	rows[n++] = (struct row){ "subtree iterate", domain("cdn.example.net.", true, CONF_POLICY_ITERATE) };
	rows[n] = (struct row){ "forward, no targets (edns.forward)",
	                        domain("video.example.org.", false, CONF_POLICY_FORWARD) };
	n++;
	rows[n] = (struct row){ "forward v4 + v6, ports", domain("a.b.c.example.", true, CONF_POLICY_FORWARD) };
	add_target(&rows[n].d, "198.51.100.53", 53);
	add_target(&rows[n].d, "2001:db8::53", 5353);
	n++;
	rows[n] = (struct row){ "forward, the maximum of targets", domain("max.example.", false, CONF_POLICY_FORWARD) };
	for (unsigned i = 0; i < STORE_MAX_FORWARD; i++) {
		char host[32];
		snprintf(host, sizeof(host), "203.0.113.%u", i + 1);
		add_target(&rows[n].d, host, (uint16_t)(1000 + i));
	}
	n++;
	rows[n] = (struct row){ "v6 port 65535", domain("x.example.", false, CONF_POLICY_FORWARD) };
	add_target(&rows[n].d, "2001:db8:ffff::1", 65535);
	n++;

	char dir[4200];
	struct store *s = open_rw(newdir(dir, sizeof(dir)));
	for (size_t i = 0; i < n; i++) {
		int err = store_put(s, &rows[i].d);
		if (err != 0)
			fail_msg("%s: store_put: %s", rows[i].msg, store_strerror(err));
		if (version(s) != i + 1)
			fail_msg("%s: version %llu, want %zu", rows[i].msg, (unsigned long long)version(s), i + 1);
	}
	store_close(s);
	/* Read back through a fresh readonly handle, so it all came from disk. */
	assert_int_equal(store_open(dir, true, &s), 0);
	for (size_t i = 0; i < n; i++) {
		struct store_domain got;
		int err = store_get(s, rows[i].d.name, &got);
		if (err != 0)
			fail_msg("%s: store_get: %s", rows[i].msg, store_strerror(err));
		assert_domain_equal(&rows[i].d, &got, rows[i].msg);
	}
	store_close(s);
}

static void test_put_invalid(void **state)
{
	struct row {
		const char *msg;
		struct store_domain d;
	} rows[16];
	size_t n = 0;
	rows[n++] = (struct row){ "empty name", domain("", false, CONF_POLICY_ITERATE) };
	rows[n++] = (struct row){ "no trailing dot", domain("example.com", false, CONF_POLICY_ITERATE) };
	rows[n++] = (struct row){ "upper case", domain("Example.COM.", false, CONF_POLICY_ITERATE) };
	rows[n++] = (struct row){ "empty label", domain("a..example.", false, CONF_POLICY_ITERATE) };
	rows[n++] = (struct row){ "label of 64", domain("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.example.",
	                                                 false, CONF_POLICY_ITERATE) };
	rows[n++] = (struct row){ "unknown policy", domain("example.com.", false, (enum conf_policy)7) };
	rows[n] = (struct row){ "iterate with targets", domain("example.com.", false, CONF_POLICY_ITERATE) };
	add_target(&rows[n++].d, "198.51.100.53", 53);
	rows[n] = (struct row){ "port 0", domain("example.com.", false, CONF_POLICY_FORWARD) };
	add_target(&rows[n++].d, "198.51.100.53", 0);
	rows[n] = (struct row){ "unknown family", domain("example.com.", false, CONF_POLICY_FORWARD) };
	add_target(&rows[n].d, "198.51.100.53", 53);
	rows[n++].d.forward[0].ss.ss_family = AF_UNIX;
	rows[n] = (struct row){ "wrong sockaddr length", domain("example.com.", false, CONF_POLICY_FORWARD) };
	add_target(&rows[n].d, "198.51.100.53", 53);
	rows[n++].d.forward[0].len = 3;
	rows[n] = (struct row){ "too many targets", domain("example.com.", false, CONF_POLICY_FORWARD) };
	rows[n++].d.nforward = STORE_MAX_FORWARD + 1;
	rows[n] = (struct row){ "name not NUL-terminated", domain("example.com.", false, CONF_POLICY_ITERATE) };
	memset(rows[n++].d.name, 'a', sizeof(rows[0].d.name));

	char dir[4200];
	struct store *s = open_rw(newdir(dir, sizeof(dir)));
	for (size_t i = 0; i < n; i++) {
		int err = store_put(s, &rows[i].d);
		if (err != -EINVAL)
			fail_msg("%s: store_put returned %d (%s), want -EINVAL", rows[i].msg, err,
			         store_strerror(err));
		if (store_domain_check(&rows[i].d) != -EINVAL)
			fail_msg("%s: store_domain_check accepted it", rows[i].msg);
	}
	assert_int_equal(version(s), 0);
	assert_int_equal(store_del(s, ""), -EINVAL);
	assert_int_equal(store_del(s, "Example.com."), -EINVAL);
	store_close(s);
}

static void test_replace(void **state)
{
	char dir[4200];
	struct store *s = open_rw(newdir(dir, sizeof(dir)));
	struct store_domain a = domain("example.com.", true, CONF_POLICY_ITERATE);
	struct store_domain b = domain("example.com.", false, CONF_POLICY_FORWARD);
	add_target(&b, "198.51.100.9", 53);
	size_t replaced = 99;
	assert_int_equal(store_put_many(s, &a, 1, &replaced), 0);
	assert_int_equal(replaced, 0);
	assert_int_equal(store_put_many(s, &b, 1, &replaced), 0);
	assert_int_equal(replaced, 1);
	struct store_domain got;
	assert_int_equal(store_get(s, "example.com.", &got), 0);
	assert_domain_equal(&b, &got, "the second put replaces the first");
	/* And back to fewer targets: nothing of the old record remains. */
	assert_int_equal(store_put(s, &a), 0);
	assert_int_equal(store_get(s, "example.com.", &got), 0);
	assert_domain_equal(&a, &got, "replace with no targets");
	assert_int_equal(version(s), 3);
	store_close(s);
}

static void test_del(void **state)
{
	char dir[4200];
	struct store *s = open_rw(newdir(dir, sizeof(dir)));
	struct store_domain a = domain("a.example.", false, CONF_POLICY_ITERATE);
	struct store_domain b = domain("b.example.", false, CONF_POLICY_ITERATE);
	assert_int_equal(store_put(s, &a), 0);
	assert_int_equal(store_put(s, &b), 0);
	assert_int_equal(version(s), 2);
	assert_int_equal(store_del(s, "a.example."), 0);
	assert_int_equal(version(s), 3);
	struct store_domain got;
	assert_int_equal(store_get(s, "a.example.", &got), -ENOENT);
	assert_int_equal(store_get(s, "b.example.", &got), 0);
	/* A missing name is -ENOENT and changes nothing. */
	assert_int_equal(store_del(s, "a.example."), -ENOENT);
	assert_int_equal(store_del(s, "never.example."), -ENOENT);
	assert_int_equal(version(s), 3);
	store_close(s);
}

struct standby_seen {
	struct store_standby b[8];
	size_t n;
};

static int standby_collect(const struct store_standby *b, void *arg)
{
	struct standby_seen *s = arg;
	assert_true(s->n < 8);
	s->b[s->n++] = *b;
	return 0;
}

/* Failovers: set, changed, listed in name order, cleared, counted as changes, kept across opens. */
static void test_standby(void **state)
{
	char dir[4200];
	struct store *s = open_rw(newdir(dir, sizeof(dir)));
	struct store_standby b = { .partition = "suzhou", .to = "nanjing", .by = "root", .since = 1764806400 };
	assert_int_equal(store_standby_set(s, &b), 0);
	assert_int_equal(version(s), 1);
	struct store_standby a = { .partition = "nanjing", .to = "", .by = "alice", .since = 7 };
	assert_int_equal(store_standby_set(s, &a), 0);
	snprintf(b.to, sizeof(b.to), "198.51.100.99"); /* where to, changed in place */
	assert_int_equal(store_standby_set(s, &b), 0);
	assert_int_equal(version(s), 3);
	struct store_standby bad = { .partition = "has space", .to = "x", .by = "root" };
	assert_int_equal(store_standby_set(s, &bad), -EINVAL);
	store_close(s);

	assert_int_equal(store_open(dir, true, &s), 0); /* a reader sees what writers committed */
	struct standby_seen seen = { .n = 0 };
	assert_int_equal(store_standby_foreach(s, standby_collect, &seen), 0);
	assert_int_equal(seen.n, 2);
	assert_string_equal(seen.b[0].partition, "nanjing");
	assert_string_equal(seen.b[0].to, "");
	assert_string_equal(seen.b[0].by, "alice");
	assert_int_equal(seen.b[0].since, 7);
	assert_string_equal(seen.b[1].partition, "suzhou");
	assert_string_equal(seen.b[1].to, "198.51.100.99");
	assert_int_equal(store_standby_clear(s, "nanjing"), -EROFS);
	store_close(s);

	s = open_rw(dir);
	assert_int_equal(store_standby_clear(s, "nanjing"), 0);
	assert_int_equal(store_standby_clear(s, "nanjing"), -ENOENT);
	assert_int_equal(version(s), 4);
	seen.n = 0;
	assert_int_equal(store_standby_foreach(s, standby_collect, &seen), 0);
	assert_int_equal(seen.n, 1);
	/* the record's bytes: strict both ways */
	uint8_t buf[256];
	int n = store_standby_encode(&seen.b[0], buf, sizeof(buf));
	assert_true(n > 0);
	struct store_standby back;
	assert_int_equal(store_standby_decode("suzhou", 6, buf, (size_t)n, &back), 0);
	assert_string_equal(back.to, "198.51.100.99");
	assert_int_equal(store_standby_decode("suzhou", 6, buf, (size_t)n - 1, &back), STORE_E_CORRUPT);
	buf[0] = 2;
	assert_int_equal(store_standby_decode("suzhou", 6, buf, (size_t)n, &back), STORE_E_CORRUPT);
	store_close(s);
}

/* Staged and activated plans: put/get/activate/del, and the record's bytes strict. */
static void test_plan(void **state)
{
	(void)state;
	char dir[4200];
	struct store *s = open_rw(newdir(dir, sizeof(dir)));
	struct store_plan got;
	assert_int_equal(store_plan_get(s, STORE_PLAN_NEXT, &got), -ENOENT);
	assert_int_equal(store_plan_activate(s, 100), -ENOENT); /* nothing staged */
	assert_int_equal(version(s), 0);
	char text[] = "serial: 2\nlist: []\n";
	struct store_plan p = { .serial = 2, .staged_at = 50, .by = "alice", .text = text, .len = strlen(text) };
	assert_int_equal(store_plan_put(s, "other", &p), -EINVAL);
	struct store_plan zero = p;
	zero.serial = 0;
	assert_int_equal(store_plan_put(s, STORE_PLAN_NEXT, &zero), -EINVAL);
	struct store_plan baduser = p;
	snprintf(baduser.by, sizeof(baduser.by), "tab\there");
	assert_int_equal(store_plan_put(s, STORE_PLAN_NEXT, &baduser), -EINVAL);
	assert_int_equal(version(s), 0);
	p.activate_at = 200;
	assert_int_equal(store_plan_put(s, STORE_PLAN_NEXT, &p), 0);
	assert_int_equal(version(s), 1); /* a running daemon sees the change */
	store_close(s);

	assert_int_equal(store_open(dir, true, &s), 0);
	assert_int_equal(store_plan_get(s, STORE_PLAN_NEXT, &got), 0);
	assert_int_equal(got.serial, 2);
	assert_int_equal(got.staged_at, 50);
	assert_int_equal(got.activate_at, 200);
	assert_string_equal(got.by, "alice");
	assert_int_equal(got.len, strlen(text));
	assert_string_equal(got.text, text);
	store_plan_clear(&got);
	assert_int_equal(store_plan_activate(s, 300), -EROFS);
	store_close(s);

	s = open_rw(dir);
	assert_int_equal(store_plan_activate(s, 300), 0); /* one transaction: next is gone, active is it */
	assert_int_equal(version(s), 2);
	assert_int_equal(store_plan_get(s, STORE_PLAN_NEXT, &got), -ENOENT);
	assert_int_equal(store_plan_get(s, STORE_PLAN_ACTIVE, &got), 0);
	assert_int_equal(got.serial, 2);
	assert_int_equal(got.activated_at, 300);
	assert_string_equal(got.text, text);
	store_plan_clear(&got);
	assert_int_equal(store_plan_del(s, STORE_PLAN_ACTIVE), 0);
	assert_int_equal(store_plan_del(s, STORE_PLAN_ACTIVE), -ENOENT);
	assert_int_equal(version(s), 3);

	/* the record's bytes: a decode is strict */
	size_t n = 0;
	uint8_t *b = store_plan_encode(&p, &n);
	assert_non_null(b);
	assert_int_equal(store_plan_decode(b, n, &got), 0);
	assert_string_equal(got.text, text);
	store_plan_clear(&got);
	assert_int_equal(store_plan_decode(b, 10, &got), STORE_E_CORRUPT); /* cut in the header */
	b[29] = 60;                                                      /* a user longer than the record */
	assert_int_equal(store_plan_decode(b, n, &got), STORE_E_CORRUPT);
	b[29] = 5;
	b[0] = 2; /* a format this build does not know */
	assert_int_equal(store_plan_decode(b, n, &got), STORE_E_CORRUPT);
	free(b);
	store_close(s);
}

struct collect {
	char names[16][256];
	size_t n;
	size_t stop_at; /* return 42 when n reaches this (0 = never) */
};

static int collect_fn(const struct store_domain *d, void *arg)
{
	struct collect *c = arg;
	if (c->n < 16)
		snprintf(c->names[c->n], sizeof(c->names[0]), "%s", d->name);
	c->n++;
	return c->stop_at != 0 && c->n == c->stop_at ? 42 : 0;
}

static void test_foreach(void **state)
{
	static const char *in[] = { "m.example.", "a.example.", "z.example.", "b.a.example.", "aa.example." };
	static const char *sorted[] = { "a.example.", "aa.example.", "b.a.example.", "m.example.", "z.example." };
	char dir[4200];
	struct store *s = open_rw(newdir(dir, sizeof(dir)));
	struct collect c = { .n = 0 };
	assert_int_equal(store_foreach(s, collect_fn, &c), 0);
	assert_int_equal(c.n, 0);
	for (size_t i = 0; i < 5; i++) {
		struct store_domain d = domain(in[i], i % 2 == 0, CONF_POLICY_ITERATE);
		assert_int_equal(store_put(s, &d), 0);
	}
	memset(&c, 0, sizeof(c));
	assert_int_equal(store_foreach(s, collect_fn, &c), 0);
	assert_int_equal(c.n, 5);
	for (size_t i = 0; i < 5; i++)
		if (strcmp(c.names[i], sorted[i]) != 0)
			fail_msg("foreach position %zu: %s, want %s", i, c.names[i], sorted[i]);
	memset(&c, 0, sizeof(c));
	c.stop_at = 2;
	assert_int_equal(store_foreach(s, collect_fn, &c), 42);
	assert_int_equal(c.n, 2);
	store_close(s);
}

static void test_put_many(void **state)
{
	char dir[4200];
	struct store *s = open_rw(newdir(dir, sizeof(dir)));
	struct store_domain batch[4] = {
		domain("one.example.", false, CONF_POLICY_ITERATE),
		domain("two.example.", true, CONF_POLICY_ITERATE),
		domain("BAD.example.", false, CONF_POLICY_ITERATE),
		domain("three.example.", false, CONF_POLICY_ITERATE),
	};
	size_t replaced;
	/* One invalid entry: nothing is written, the version stays. */
	assert_int_equal(store_put_many(s, batch, 4, &replaced), -EINVAL);
	assert_int_equal(version(s), 0);
	struct store_domain got;
	assert_int_equal(store_get(s, "one.example.", &got), -ENOENT);
	/* Fixed: all in, one version step. */
	snprintf(batch[2].name, sizeof(batch[2].name), "one.example.");
	batch[2].subtree = true;
	assert_int_equal(store_put_many(s, batch, 4, &replaced), 0);
	assert_int_equal(replaced, 1); /* one.example. given twice: the later wins */
	assert_int_equal(version(s), 1);
	assert_int_equal(store_get(s, "one.example.", &got), 0);
	assert_true(got.subtree);
	struct collect c = { .n = 0 };
	assert_int_equal(store_foreach(s, collect_fn, &c), 0);
	assert_int_equal(c.n, 3);
	/* An empty batch changes nothing. */
	assert_int_equal(store_put_many(s, NULL, 0, &replaced), 0);
	assert_int_equal(version(s), 1);
	store_close(s);
}

/* Record decoding: every malformed value is STORE_E_CORRUPT. */
static void test_record_decode(void **state)
{
	struct store_domain d = domain("example.com.", true, CONF_POLICY_FORWARD);
	add_target(&d, "198.51.100.53", 53);
	add_target(&d, "2001:db8::1", 853);
	d.added = 1714557600;
	d.changed = 1714644000;
	snprintf(d.added_by, sizeof(d.added_by), "alice");
	snprintf(d.changed_by, sizeof(d.changed_by), "root (sudo bob)");
	uint8_t good[STORE_RECORD_MAX];
	int len = store_record_encode(&d, good, sizeof(good));
	/* format 2: head 22, two targets, "alice", "root (sudo bob)" */
	assert_int_equal(len, 22 + 2 * 19 + 5 + 15);
	assert_int_equal(good[0], 2);
	uint8_t small[10];
	assert_int_equal(store_record_encode(&d, small, sizeof(small)), -ENOSPC);

	struct store_domain got;
	assert_int_equal(store_record_decode("example.com.", 12, good, (size_t)len, &got), 0);
	assert_domain_equal(&d, &got, "encode/decode round trip");
	assert_int_equal(got.added, d.added);
	assert_int_equal(got.changed, d.changed);
	assert_string_equal(got.added_by, "alice");
	assert_string_equal(got.changed_by, "root (sudo bob)");

	/* Names at the limit fit STORE_RECORD_MAX with all targets. */
	struct store_domain big = d;
	for (size_t i = 2; i < STORE_MAX_FORWARD; i++)
		add_target(&big, "198.51.100.1", (uint16_t)(100 + i));
	memset(big.added_by, 'a', STORE_USER_MAX);
	big.added_by[STORE_USER_MAX] = '\0';
	memset(big.changed_by, 'c', STORE_USER_MAX);
	big.changed_by[STORE_USER_MAX] = '\0';
	uint8_t bigrec[STORE_RECORD_MAX];
	assert_int_equal(store_record_encode(&big, bigrec, sizeof(bigrec)), STORE_RECORD_MAX);
	assert_int_equal(store_record_decode("example.com.", 12, bigrec, STORE_RECORD_MAX, &got), 0);
	assert_string_equal(got.changed_by, big.changed_by);

	/* What a store cannot keep: refused by check and encode alike. */
	struct {
		const char *msg;
		struct store_domain d;
	} bad[] = { { "negative added", d }, { "negative changed", d }, { "quote in a user", d },
		    { "backslash in a user", d }, { "escape in a user", d }, { "user without NUL", d } };
	bad[0].d.added = -1;
	bad[1].d.changed = -5;
	snprintf(bad[2].d.added_by, sizeof(bad[2].d.added_by), "a\"b");
	snprintf(bad[3].d.changed_by, sizeof(bad[3].d.changed_by), "a\\b");
	snprintf(bad[4].d.changed_by, sizeof(bad[4].d.changed_by), "a\033[2Jb");
	memset(bad[5].d.added_by, 'x', sizeof(bad[5].d.added_by));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint8_t buf[STORE_RECORD_MAX];
		if (store_domain_check(&bad[i].d) != -EINVAL ||
		    store_record_encode(&bad[i].d, buf, sizeof(buf)) != -EINVAL)
			fail_msg("%s: accepted", bad[i].msg);
	}
	assert_true(store_user_valid(""));
	assert_true(store_user_valid("root (sudo alice)"));
	assert_false(store_user_valid("tab\there"));
	assert_false(store_user_valid("\xc3\xa9"));
	assert_false(store_user_valid(NULL));

	/* A format-1 record (what stores before format 2 hold) still decodes,
	 * with who/when unknown; the same bytes with a cut or extra byte do not. */
	uint8_t v1[4 + 19] = { 1, 1, CONF_POLICY_FORWARD, 1, 4, 0, 53, 198, 51, 100, 53 };
	assert_int_equal(store_record_decode("example.com.", 12, v1, sizeof(v1), &got), 0);
	assert_true(got.subtree);
	assert_int_equal(got.nforward, 1);
	assert_string_equal(got.forward[0].text, "198.51.100.53@53");
	assert_int_equal(got.added, 0);
	assert_int_equal(got.changed, 0);
	assert_string_equal(got.added_by, "");
	assert_int_equal(store_record_decode("example.com.", 12, v1, sizeof(v1) - 1, &got), STORE_E_CORRUPT);
	uint8_t v1long[4 + 19 + 1] = { 1, 1, CONF_POLICY_FORWARD, 1, 4, 0, 53, 198, 51, 100, 53 };
	assert_int_equal(store_record_decode("example.com.", 12, v1long, sizeof(v1long), &got),
	                 STORE_E_CORRUPT);

	struct row {
		const char *msg;
		size_t at;     /* byte to change (SIZE_MAX: none) */
		uint8_t value;
		int dlen;      /* change to the length */
		const char *key;
	} rows[] = {
		{ "version 0", 0, 0, 0, NULL },
		{ "version 1 with format-2 fields", 0, 1, 0, NULL },
		{ "version 3", 0, 3, 0, NULL },
		{ "unknown flag bit", 1, 0x03, 0, NULL },
		{ "unknown policy", 2, 2, 0, NULL },
		{ "nforward past the records", 3, 3, 0, NULL },
		{ "nforward below the records", 3, 1, 0, NULL },
		{ "nforward over the maximum", 3, STORE_MAX_FORWARD + 1, 0, NULL },
		{ "iterate with targets", 2, CONF_POLICY_ITERATE, 0, NULL },
		{ "added time past 2^63", 4, 0x80, 0, NULL },
		{ "changed time past 2^63", 12, 0xff, 0, NULL },
		{ "added_by longer than the record", 20, 6, 0, NULL },
		{ "added_by shorter than the record", 20, 4, 0, NULL },
		{ "changed_by length over the maximum", 21, STORE_USER_MAX + 1, 0, NULL },
		{ "NUL in added_by", 22 + 2 * 19 + 1, 0, 0, NULL },
		{ "quote in changed_by", 22 + 2 * 19 + 5 + 3, '"', 0, NULL },
		{ "control byte in changed_by", 22 + 2 * 19 + 5, 0x1b, 0, NULL },
		{ "non-ASCII byte in added_by", 22 + 2 * 19, 0xc3, 0, NULL },
		{ "unknown family", 22, 5, 0, NULL },
		{ "port 0", 23, 0, 0, NULL }, /* with byte 24 below */
		{ "IPv4 padding not zero", 22 + 3 + 4, 1, 0, NULL },
		{ "truncated by one", SIZE_MAX, 0, -1, NULL },
		{ "one byte too long", SIZE_MAX, 0, 1, NULL },
		{ "header only cut", SIZE_MAX, 0, -(len - 3), NULL },
		{ "empty value", SIZE_MAX, 0, -len, NULL },
		{ "key not normalized", SIZE_MAX, 0, 0, "Example.com." },
		{ "key without dot", SIZE_MAX, 0, 0, "example.com" },
		{ "key empty", SIZE_MAX, 0, 0, "" },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint8_t buf[STORE_RECORD_MAX + 1];
		memcpy(buf, good, sizeof(good));
		buf[STORE_RECORD_MAX] = 0;
		if (rows[i].at != SIZE_MAX)
			buf[rows[i].at] = rows[i].value;
		if (strcmp(rows[i].msg, "port 0") == 0)
			buf[24] = 0;
		const char *key = rows[i].key ? rows[i].key : "example.com.";
		int err = store_record_decode(key, strlen(key), buf, (size_t)(len + rows[i].dlen), &got);
		if (err != STORE_E_CORRUPT)
			fail_msg("%s: decode returned %d, want STORE_E_CORRUPT", rows[i].msg, err);
	}
}

/* Raw LMDB access to plant bad data, as another program or a bit flip would. */
static void raw_put(const char *dir, const char *db, const char *key, const void *val, size_t len)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_maxdbs(env, 2), 0);
	assert_int_equal(mdb_env_set_mapsize(env, STORE_MAPSIZE_DEFAULT), 0);
	assert_int_equal(mdb_env_open(env, dir, 0, 0640), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, db, 0, &dbi), 0);
	MDB_val k = { strlen(key), (void *)key }, v = { len, (void *)val };
	assert_int_equal(mdb_put(txn, dbi, &k, &v, 0), 0);
	assert_int_equal(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

static void test_corrupt_and_format(void **state)
{
	char dir[4200];
	struct store *s = open_rw(newdir(dir, sizeof(dir)));
	struct store_domain a = domain("a.example.", false, CONF_POLICY_ITERATE);
	assert_int_equal(store_put(s, &a), 0);
	store_close(s);

	static const uint8_t bad[] = { 1, 0, 0, 1 }; /* claims a target it lacks */
	raw_put(dir, "domains", "b.example.", bad, sizeof(bad));
	s = open_rw(dir);
	struct store_domain got;
	assert_int_equal(store_get(s, "a.example.", &got), 0);
	assert_int_equal(store_get(s, "b.example.", &got), STORE_E_CORRUPT);
	struct collect c = { .n = 0 };
	assert_int_equal(store_foreach(s, collect_fn, &c), STORE_E_CORRUPT);
	store_close(s);

	/* A schema newer than this code knows: refuse to open, readonly or not,
	 * and say which versions, so the operator knows to upgrade. */
	static const uint8_t format3[] = { 0, 0, 0, STORE_SCHEMA + 1 };
	raw_put(dir, "meta", "format", format3, sizeof(format3));
	char msg[8192], want[8192];
	assert_int_equal(store_open(dir, false, &s), STORE_E_VERSION);
	snprintf(want, sizeof(want),
	         "store %s has schema version %d; this partdns knows schema versions up to %d: "
	         "upgrade partdns (and partdnsctl) to use this store",
	         dir, STORE_SCHEMA + 1, STORE_SCHEMA);
	assert_string_equal(store_message(STORE_E_VERSION, dir, msg, sizeof(msg)), want);
	assert_int_equal(store_open(dir, true, &s), STORE_E_VERSION);
	assert_string_equal(store_message(STORE_E_VERSION, dir, msg, sizeof(msg)), want);
	/* Another directory's refusal is not this one's. */
	assert_string_equal(store_message(STORE_E_VERSION, "/elsewhere", msg, sizeof(msg)),
	                    "store /elsewhere: store was written by an incompatible version");
	static const uint8_t format0[] = { 0, 0, 0, 0 };
	raw_put(dir, "meta", "format", format0, sizeof(format0));
	assert_int_equal(store_open(dir, true, &s), STORE_E_CORRUPT);
	/* A version counter of the wrong size. */
	static const uint8_t format1[] = { 0, 0, 0, 1 };
	raw_put(dir, "meta", "format", format1, sizeof(format1));
	raw_put(dir, "meta", "version", "x", 1);
	s = open_rw(dir);
	uint64_t v;
	assert_int_equal(store_version(s, &v), STORE_E_CORRUPT);
	assert_int_equal(store_put(s, &a), STORE_E_CORRUPT);
	store_close(s);

	/* Not an LMDB file at all. */
	char file[4300];
	newdir(dir, sizeof(dir));
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(file, sizeof(file), "%s/data.mdb", dir);
	FILE *f = fopen(file, "w");
	assert_non_null(f);
	for (int i = 0; i < 8192; i++)
		fputc('x', f);
	fclose(f);
	int err = store_open(dir, true, &s);
	if (err != STORE_E_CORRUPT && err != STORE_E_VERSION)
		fail_msg("garbage data.mdb: %d (%s)", err, store_strerror(err));
}

/* Who and when: stamped by the store, kept across changes, a re-add is no change. */
static void test_who_when(void **state)
{
	char dir[4200];
	struct store *s = open_rw(newdir(dir, sizeof(dir)));
	struct store_domain a = domain("a.example.", false, CONF_POLICY_ITERATE);
	struct store_counts c;
	int64_t t0 = (int64_t)time(NULL);
	assert_int_equal(store_put_by(s, &a, 1, "alice", &c), 0);
	int64_t t1 = (int64_t)time(NULL);
	assert_int_equal(c.added, 1);
	assert_int_equal(c.changed + c.unchanged + c.removed, 0);
	struct store_domain got;
	assert_int_equal(store_get(s, "a.example.", &got), 0);
	assert_true(got.added >= t0 && got.added <= t1);
	assert_int_equal(got.changed, got.added);
	assert_string_equal(got.added_by, "alice");
	assert_string_equal(got.changed_by, "alice");
	struct store_domain first = got;

	/* The same again by someone else: nothing changes, not even the who/when;
	 * the counter still moves (a put is a commit). */
	uint64_t v = version(s);
	assert_int_equal(store_put_by(s, &a, 1, "bob", &c), 0);
	assert_int_equal(c.unchanged, 1);
	assert_int_equal(c.added + c.changed, 0);
	assert_int_equal(version(s), v + 1);
	assert_int_equal(store_get(s, "a.example.", &got), 0);
	assert_string_equal(got.changed_by, "alice");
	assert_int_equal(got.changed, first.changed);

	/* A real change: added kept, changed stamped. The caller's who/when fields
	 * are ignored for a stored name (history is the store's). */
	sleep(1);
	struct store_domain b = a;
	b.subtree = true;
	b.added = 5;
	snprintf(b.added_by, sizeof(b.added_by), "mallory");
	assert_int_equal(store_put_by(s, &b, 1, "root (sudo bob)", &c), 0);
	assert_int_equal(c.changed, 1);
	assert_int_equal(store_get(s, "a.example.", &got), 0);
	assert_true(got.subtree);
	assert_int_equal(got.added, first.added);
	assert_string_equal(got.added_by, "alice");
	assert_true(got.changed > first.changed);
	assert_string_equal(got.changed_by, "root (sudo bob)");

	/* A new name with history (a restore) keeps it; one without is stamped. */
	struct store_domain r[2] = { domain("r.example.", false, CONF_POLICY_ITERATE),
		                     domain("n.example.", false, CONF_POLICY_ITERATE) };
	r[0].added = 1000;
	r[0].changed = 2000;
	snprintf(r[0].added_by, sizeof(r[0].added_by), "carol");
	snprintf(r[0].changed_by, sizeof(r[0].changed_by), "dave");
	assert_int_equal(store_put_by(s, r, 2, "erin", &c), 0);
	assert_int_equal(c.added, 2);
	assert_int_equal(store_get(s, "r.example.", &got), 0);
	assert_int_equal(got.added, 1000);
	assert_int_equal(got.changed, 2000);
	assert_string_equal(got.added_by, "carol");
	assert_string_equal(got.changed_by, "dave");
	assert_int_equal(store_get(s, "n.example.", &got), 0);
	assert_string_equal(got.added_by, "erin");
	assert_true(got.added >= t0);

	/* A user a record cannot keep: nothing written. */
	v = version(s);
	struct store_domain x = domain("x.example.", false, CONF_POLICY_ITERATE);
	assert_int_equal(store_put_by(s, &x, 1, "eve\n", &c), -EINVAL);
	assert_int_equal(store_get(s, "x.example.", &got), -ENOENT);
	assert_int_equal(version(s), v);
	/* store_put: who unknown. */
	assert_int_equal(store_put(s, &x), 0);
	assert_int_equal(store_get(s, "x.example.", &got), 0);
	assert_string_equal(got.added_by, "");
	assert_true(got.added >= t0);
	store_close(s);

	/* Readonly: no writes of either kind. */
	assert_int_equal(store_open(dir, true, &s), 0);
	assert_int_equal(store_put_by(s, &x, 1, "alice", &c), -EROFS);
	assert_int_equal(store_replace_all(s, &x, 1, "alice", &c), -EROFS);
	store_close(s);
}

/* replace_all: exactly the given set, one transaction, one version step. */
static void test_replace_all(void **state)
{
	char dir[4200];
	struct store *s = open_rw(newdir(dir, sizeof(dir)));
	static const char *names[] = { "a.example.", "b.example.", "c.example.", "d.example.",
		                       "e.example.", "f.example." };
	for (size_t i = 0; i < 6; i++) {
		struct store_domain d = domain(names[i], false, CONF_POLICY_ITERATE);
		assert_int_equal(store_put_by(s, &d, 1, "alice", NULL), 0);
	}
	uint64_t v = version(s);
	/* Keep c (as is) and e (changed), add g; a, b, d, f go (two of them
	 * neighbours, and the first and last keys). */
	struct store_domain want[3] = { domain("g.example.", true, CONF_POLICY_ITERATE),
		                        domain("e.example.", true, CONF_POLICY_ITERATE),
		                        domain("c.example.", false, CONF_POLICY_ITERATE) };
	struct store_counts c;
	/* An invalid entry: nothing happens. */
	struct store_domain bad[2] = { want[0], domain("Bad.example.", false, CONF_POLICY_ITERATE) };
	assert_int_equal(store_replace_all(s, bad, 2, "bob", &c), -EINVAL);
	assert_int_equal(version(s), v);
	struct collect col = { .n = 0 };
	assert_int_equal(store_foreach(s, collect_fn, &col), 0);
	assert_int_equal(col.n, 6);

	assert_int_equal(store_replace_all(s, want, 3, "bob", &c), 0);
	assert_int_equal(c.added, 1);
	assert_int_equal(c.changed, 1);
	assert_int_equal(c.unchanged, 1);
	assert_int_equal(c.removed, 4);
	assert_int_equal(version(s), v + 1);
	memset(&col, 0, sizeof(col));
	assert_int_equal(store_foreach(s, collect_fn, &col), 0);
	assert_int_equal(col.n, 3);
	assert_string_equal(col.names[0], "c.example.");
	assert_string_equal(col.names[1], "e.example.");
	assert_string_equal(col.names[2], "g.example.");
	struct store_domain got;
	assert_int_equal(store_get(s, "c.example.", &got), 0);
	assert_string_equal(got.changed_by, "alice");
	assert_int_equal(store_get(s, "e.example.", &got), 0);
	assert_string_equal(got.added_by, "alice");
	assert_string_equal(got.changed_by, "bob");
	assert_int_equal(store_get(s, "g.example.", &got), 0);
	assert_string_equal(got.added_by, "bob");

	/* The same set again: nothing to do but the counter. */
	assert_int_equal(store_replace_all(s, want, 3, "bob", &c), 0);
	assert_int_equal(c.unchanged, 3);
	assert_int_equal(c.added + c.changed + c.removed, 0);
	/* Nothing: an empty store. */
	assert_int_equal(store_replace_all(s, NULL, 0, "bob", &c), 0);
	assert_int_equal(c.removed, 3);
	memset(&col, 0, sizeof(col));
	assert_int_equal(store_foreach(s, collect_fn, &col), 0);
	assert_int_equal(col.n, 0);
	assert_int_equal(version(s), v + 3);
	store_close(s);
}

/* Build what partdns before schema 2 left on disk, with LMDB alone. */
static void raw_store_v1(const char *dir, uint64_t counter, unsigned extra)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dom, meta;
	assert_int_equal(mkdir(dir, 0750), 0);
	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_maxdbs(env, 2), 0);
	assert_int_equal(mdb_env_open(env, dir, 0, 0640), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, "domains", MDB_CREATE, &dom), 0);
	assert_int_equal(mdb_dbi_open(txn, "meta", MDB_CREATE, &meta), 0);
	uint8_t format[4] = { 0, 0, 0, 1 }, ver[8];
	for (int i = 0; i < 8; i++)
		ver[i] = (uint8_t)(counter >> (56 - 8 * i));
	struct {
		const char *key;
		uint8_t val[4 + 19];
		size_t len;
	} recs[] = {
		{ "a.example.", { 1, 1, CONF_POLICY_ITERATE, 0 }, 4 },
		{ "f.example.", { 1, 0, CONF_POLICY_FORWARD, 1, 6, 0x14, 0xe9, 0x20, 0x01, 0x0d, 0xb8,
		                  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x53 }, 23 },
		{ "z.example.", { 1, 0, 0, 1 }, 4 }, /* corrupt: claims a target it lacks */
	};
	for (size_t i = 0; i < 3; i++) {
		MDB_val k = { strlen(recs[i].key), (void *)recs[i].key }, v = { recs[i].len, recs[i].val };
		assert_int_equal(mdb_put(txn, dom, &k, &v, 0), 0);
	}
	/* Many more, over several pages, for the migration's cursor walk. */
	for (unsigned i = 0; i < extra; i++) {
		char key[64];
		uint8_t val[4] = { 1, (uint8_t)(i & 1), CONF_POLICY_ITERATE, 0 };
		snprintf(key, sizeof(key), "n%05u.example.", i);
		MDB_val k = { strlen(key), key }, v = { 4, val };
		assert_int_equal(mdb_put(txn, dom, &k, &v, 0), 0);
	}
	MDB_val k = { 6, "format" }, v = { 4, format };
	assert_int_equal(mdb_put(txn, meta, &k, &v, 0), 0);
	MDB_val k2 = { 7, "version" }, v2 = { 8, ver };
	assert_int_equal(mdb_put(txn, meta, &k2, &v2, 0), 0);
	assert_int_equal(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

/* The raw value of key in db (copied into buf). @return its length, or -1 when absent. */
static int raw_get(const char *dir, const char *db, const char *key, uint8_t *buf, size_t size)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_maxdbs(env, 2), 0);
	assert_int_equal(mdb_env_open(env, dir, MDB_RDONLY, 0640), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, db, 0, &dbi), 0);
	MDB_val k = { strlen(key), (void *)key }, v;
	int len = -1;
	if (mdb_get(txn, dbi, &k, &v) == 0) {
		assert_true(v.mv_size <= size);
		memcpy(buf, v.mv_data, v.mv_size);
		len = (int)v.mv_size;
	}
	mdb_txn_abort(txn);
	mdb_env_close(env);
	return len;
}

/* A schema-1 store: read as it is readonly, migrated by a writable open. */
static void test_migrate_v1(void **state)
{
	char dir[4200];
	newdir(dir, sizeof(dir));
	raw_store_v1(dir, 7, 2000);
	uint8_t buf[STORE_RECORD_MAX];

	/* Readonly (an upgraded reader before any write): format-1 records read
	 * with who/when unknown, and the store is left as it was. */
	struct store *s;
	assert_int_equal(store_open(dir, true, &s), 0);
	size_t nrec = 99;
	assert_int_equal(store_migrated_from(s, &nrec), 0);
	assert_int_equal(nrec, 0);
	struct store_domain got;
	assert_int_equal(store_get(s, "a.example.", &got), 0);
	assert_true(got.subtree);
	assert_int_equal(got.added, 0);
	assert_int_equal(store_get(s, "f.example.", &got), 0);
	assert_string_equal(got.forward[0].text, "2001:db8::53@5353");
	assert_int_equal(version(s), 7);
	store_close(s);
	assert_int_equal(raw_get(dir, "meta", "format", buf, sizeof(buf)), 4);
	assert_int_equal(buf[3], 1);
	assert_int_equal(raw_get(dir, "domains", "a.example.", buf, sizeof(buf)), 4);

	/* Writable: migrated in one go; the corrupt record stays as it was (and
	 * can be deleted), the change counter too (the domains did not change). */
	s = open_rw(dir);
	assert_int_equal(store_migrated_from(s, &nrec), 1);
	assert_int_equal(nrec, 2 + 2000);
	assert_int_equal(version(s), 7);
	assert_int_equal(store_get(s, "f.example.", &got), 0);
	assert_int_equal(got.changed, 0);
	assert_string_equal(got.forward[0].text, "2001:db8::53@5353");
	assert_int_equal(store_get(s, "z.example.", &got), STORE_E_CORRUPT);
	store_close(s);
	assert_int_equal(raw_get(dir, "meta", "format", buf, sizeof(buf)), 4);
	assert_int_equal(buf[3], STORE_SCHEMA);
	assert_int_equal(raw_get(dir, "domains", "a.example.", buf, sizeof(buf)), 22);
	assert_int_equal(buf[0], 2);
	assert_int_equal(raw_get(dir, "domains", "f.example.", buf, sizeof(buf)), 22 + 19);
	assert_int_equal(raw_get(dir, "domains", "z.example.", buf, sizeof(buf)), 4);
	for (unsigned i = 0; i < 2000; i += 97) {
		char key[64];
		snprintf(key, sizeof(key), "n%05u.example.", i);
		assert_int_equal(raw_get(dir, "domains", key, buf, sizeof(buf)), 22);
		assert_int_equal(buf[1], i & 1);
	}

	/* Once only; then a change keeps "added" unknown and stamps "changed". */
	s = open_rw(dir);
	assert_int_equal(store_migrated_from(s, NULL), 0);
	assert_int_equal(store_del(s, "z.example."), 0);
	struct store_domain a = domain("a.example.", false, CONF_POLICY_ITERATE);
	assert_int_equal(store_put_by(s, &a, 1, "alice", NULL), 0);
	assert_int_equal(store_get(s, "a.example.", &got), 0);
	assert_int_equal(got.added, 0);
	assert_string_equal(got.added_by, "");
	assert_true(got.changed > 0);
	assert_string_equal(got.changed_by, "alice");
	store_close(s);
}

static void write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);
		if (n <= 0)
			_exit(3);
		buf += n;
		len -= (size_t)n;
	}
}

/* A reader keeps its env open while another process writes; it sees the change. */
static void test_reader_sees_other_process(void **state)
{
	char dir[4200];
	store_close(open_rw(newdir(dir, sizeof(dir))));
	int go[2], done[2];
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(done), 0);
	/* Fork before opening: an LMDB env must not cross a fork. */
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char c;
		close(go[1]);
		close(done[0]);
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		struct store *w;
		if (store_open(dir, false, &w) != 0)
			_exit(4);
		struct store_domain d = domain("child.example.", true, CONF_POLICY_FORWARD);
		d.forward[d.nforward++] = target("198.51.100.7", 53);
		if (store_put(w, &d) != 0)
			_exit(5);
		store_close(w);
		write_all(done[1], "k", 1);
		_exit(0);
	}
	close(go[0]);
	close(done[1]);
	struct store *r = NULL;
	assert_int_equal(store_open(dir, true, &r), 0);
	uint64_t v0 = version(r);
	struct store_domain got;
	assert_int_equal(store_get(r, "child.example.", &got), -ENOENT);
	assert_int_equal(write(go[1], "g", 1), 1);
	char c;
	assert_int_equal(read(done[0], &c, 1), 1);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(version(r), v0 + 1);
	assert_int_equal(store_get(r, "child.example.", &got), 0);
	assert_true(got.subtree);
	assert_int_equal(got.nforward, 1);
	assert_string_equal(got.forward[0].text, "198.51.100.7@53");
	store_close(r);
	close(go[1]);
	close(done[0]);
}

/* kill -9 in the middle of a loop of puts loses no reported commit. */
static void test_kill9_durability(void **state)
{
	enum { KILL_AFTER = 40 };
	char dir[4200];
	newdir(dir, sizeof(dir));
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		struct store *w;
		if (store_prepare_dir(dir, true) != 0 || store_open(dir, false, &w) != 0)
			_exit(4);
		for (unsigned i = 0;; i++) {
			char line[64];
			struct store_domain d = domain("", false, CONF_POLICY_ITERATE);
			snprintf(d.name, sizeof(d.name), "n%u.example.", i);
			if (store_put(w, &d) != 0)
				_exit(5);
			int len = snprintf(line, sizeof(line), "%s\n", d.name);
			write_all(p[1], line, (size_t)len);
		}
	}
	close(p[1]);
	FILE *in = fdopen(p[0], "r");
	assert_non_null(in);
	char names[KILL_AFTER][64];
	size_t n = 0;
	while (n < KILL_AFTER && fgets(names[n], sizeof(names[0]), in) != NULL) {
		names[n][strcspn(names[n], "\n")] = '\0';
		n++;
	}
	assert_int_equal(kill(pid, SIGKILL), 0);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	fclose(in);
	if (n != KILL_AFTER)
		fail_msg("child reported %zu commits before failing (status %d)", n, status);
	assert_true(WIFSIGNALED(status));

	struct store *s = open_rw(dir);
	for (size_t i = 0; i < n; i++) {
		struct store_domain got;
		int err = store_get(s, names[i], &got);
		if (err != 0)
			fail_msg("reported commit %s lost: %s", names[i], store_strerror(err));
	}
	uint64_t v = version(s);
	if (v < n)
		fail_msg("version %llu below %zu reported commits", (unsigned long long)v, n);
	/* The store still takes writes (the writer lock of the dead child is gone). */
	struct store_domain d = domain("after.example.", false, CONF_POLICY_ITERATE);
	assert_int_equal(store_put(s, &d), 0);
	store_close(s);
}

/* A map that fills grows; a reader in another process with the old size adopts it. */
static void test_map_growth(void **state)
{
	enum { BATCHES = 12, PER_BATCH = 100 };
	const size_t small = 64 << 10;
	char dir[4200];
	newdir(dir, sizeof(dir));
	struct store *w;
	assert_int_equal(store_prepare_dir(dir, true), 0);
	assert_int_equal(store_open_size(dir, false, small, &w), 0);
	store_close(w);

	int go[2];
	assert_int_equal(pipe(go), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char c;
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		if (store_open_size(dir, false, small, &w) != 0)
			_exit(4);
		static struct store_domain batch[PER_BATCH];
		for (unsigned b = 0; b < BATCHES; b++) {
			for (unsigned i = 0; i < PER_BATCH; i++) {
				batch[i] = domain("", true, CONF_POLICY_FORWARD);
				/* Long names, so the data outgrow the small map quickly. */
				snprintf(batch[i].name, sizeof(batch[i].name),
				         "%060u.%060u.%060u.example.", b, i, b);
				for (unsigned t = 0; t < STORE_MAX_FORWARD; t++)
					batch[i].forward[batch[i].nforward++] = target("2001:db8::1", (uint16_t)(t + 1));
			}
			if (store_put_many(w, batch, PER_BATCH, NULL) != 0)
				_exit(5);
		}
		store_close(w);
		_exit(0);
	}
	close(go[0]);
	struct store *r;
	assert_int_equal(store_open_size(dir, true, small, &r), 0);
	assert_int_equal(version(r), 0);
	assert_int_equal(write(go[1], "g", 1), 1);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("writer child failed, status %d", status);
	assert_int_equal(version(r), BATCHES);
	struct collect c = { .n = 0 };
	int err = store_foreach(r, collect_fn, &c);
	if (err != 0)
		fail_msg("foreach after growth: %s", store_strerror(err));
	assert_int_equal(c.n, BATCHES * PER_BATCH);
	store_close(r);
	/* The data really outgrew the first map (so growth and adoption were exercised). */
	char file[4300];
	struct stat st;
	snprintf(file, sizeof(file), "%s/data.mdb", dir);
	assert_int_equal(stat(file, &st), 0);
	if ((size_t)st.st_size <= 4 * small)
		fail_msg("data.mdb is only %lld bytes", (long long)st.st_size);
	close(go[1]);
}

struct reader_arg {
	struct store *s;
	int errors;
	uint64_t last;
};

static int count_fn(const struct store_domain *d, void *arg)
{
	return 0;
}

static void *reader_thread(void *p)
{
	struct reader_arg *a = p;
	for (int i = 0; i < 200; i++) {
		uint64_t v;
		if (store_version(a->s, &v) != 0 || v < a->last)
			a->errors++;
		a->last = v;
		if (store_foreach(a->s, count_fn, NULL) != 0)
			a->errors++;
	}
	return NULL;
}

/* One handle read from several threads while another thread writes (MDB_NOTLS). */
static void test_threads(void **state)
{
	enum { THREADS = 4 };
	char dir[4200];
	struct store *s = open_rw(newdir(dir, sizeof(dir)));
	pthread_t th[THREADS];
	struct reader_arg args[THREADS];
	for (int i = 0; i < THREADS; i++) {
		args[i] = (struct reader_arg){ .s = s };
		assert_int_equal(pthread_create(&th[i], NULL, reader_thread, &args[i]), 0);
	}
	for (unsigned i = 0; i < 20; i++) {
		struct store_domain d = domain("", false, CONF_POLICY_ITERATE);
		snprintf(d.name, sizeof(d.name), "t%u.example.", i);
		assert_int_equal(store_put(s, &d), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		if (args[i].errors != 0)
			fail_msg("reader thread %d saw %d errors", i, args[i].errors);
	}
	assert_int_equal(version(s), 20);
	store_close(s);
}

/* Read one byte from fd (a child's signal); -1 on EOF or error. */
static int wait_byte(int fd)
{
	char c;
	return read(fd, &c, 1) == 1 ? c : -1;
}

static int die_in_read(const struct store_domain *d, void *arg)
{
	kill(getpid(), SIGKILL); /* with the read transaction open */
	return 0;
}

/*
 * A process killed inside a read transaction leaves its reader slot behind
 * while another process keeps the store open (as the daemon does); the next
 * open frees it and says so.
 */
static void test_stale_readers(void **state)
{
	char dir[4200];
	struct store *s = open_rw(newdir(dir, sizeof(dir)));
	struct store_domain a = domain("a.example.", false, CONF_POLICY_ITERATE);
	assert_int_equal(store_put(s, &a), 0);
	assert_int_equal(store_stale_readers(s), 0);
	store_close(s);

	/* Fork both before this process opens anything: an env must not cross a fork. */
	int ready[2], quit[2], go[2];
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(quit), 0);
	assert_int_equal(pipe(go), 0);
	pid_t holder = fork();
	assert_true(holder >= 0);
	if (holder == 0) {
		struct store *h;
		if (store_open(dir, true, &h) != 0)
			_exit(4);
		write_all(ready[1], "r", 1);
		wait_byte(quit[0]);
		store_close(h);
		_exit(0);
	}
	pid_t victim = fork();
	assert_true(victim >= 0);
	if (victim == 0) {
		if (wait_byte(go[0]) < 0)
			_exit(2);
		struct store *v;
		if (store_open(dir, true, &v) != 0)
			_exit(4);
		store_foreach(v, die_in_read, NULL);
		_exit(5); /* not reached */
	}
	assert_int_equal(wait_byte(ready[0]), 'r');
	assert_int_equal(write(go[1], "g", 1), 1);
	int status;
	assert_int_equal(waitpid(victim, &status, 0), victim);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
		fail_msg("the reader child was to die by SIGKILL, status %d", status);

	s = NULL;
	assert_int_equal(store_open(dir, false, &s), 0);
	unsigned stale = store_stale_readers(s);
	store_close(s);
	/* Once freed, the next open finds nothing left. */
	assert_int_equal(store_open(dir, true, &s), 0);
	unsigned again = store_stale_readers(s);
	store_close(s);
	assert_int_equal(write(quit[1], "q", 1), 1);
	assert_int_equal(waitpid(holder, &status, 0), holder);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	for (int i = 0; i < 2; i++) {
		close(ready[i]);
		close(quit[i]);
		close(go[i]);
	}
	if (stale != 1)
		fail_msg("store_open freed %u stale reader slots, want 1", stale);
	assert_int_equal(again, 0);
	assert_int_equal(store_stale_readers(NULL), 0);
}

/* n long-named domains with every target: about 360 bytes of store each. */
static struct store_domain *big_batch(size_t n, const char *tag)
{
	struct store_domain *b = calloc(n, sizeof(*b));
	assert_non_null(b);
	for (size_t i = 0; i < n; i++) {
		b[i] = domain("", true, CONF_POLICY_FORWARD);
		snprintf(b[i].name, sizeof(b[i].name), "%s%055zu.%060zu.%060zu.example.", tag, i, i, i);
		for (unsigned t = 0; t < STORE_MAX_FORWARD; t++)
			b[i].forward[b[i].nforward++] = target("2001:db8::1", (uint16_t)(t + 1));
	}
	return b;
}

/* A map that cannot grow enough: -ENOSPC and the operator's message, nothing written. */
static void test_map_full(void **state)
{
	enum { N = 6000 }; /* ~2 MiB of records */
	char dir[4200], msg[8300], want[8300];
	newdir(dir, sizeof(dir));
	struct store *s;
	assert_int_equal(store_prepare_dir(dir, true), 0);
	/* 64 KiB doubled STORE_GROW_TRIES (4) times is 1 MiB at most. */
	assert_int_equal(store_open_size(dir, false, 64 << 10, &s), 0);
	struct store_domain *b = big_batch(N, "m");
	int err = store_put_many(s, b, N, NULL);
	if (err != -ENOSPC)
		fail_msg("store_put_many into a full map: %d (%s), want -ENOSPC", err,
		         store_strerror(err));
	assert_int_equal(version(s), 0);
	snprintf(want, sizeof(want), "no space left for the store (%s): LMDB map full / disk full",
	         dir);
	assert_string_equal(store_message(err, dir, msg, sizeof(msg)), want);
	assert_string_equal(store_message(-EDQUOT, dir, msg, sizeof(msg)), want);
	/* A batch that fits still goes in. */
	assert_int_equal(store_put_many(s, b, 10, NULL), 0);
	free(b);
	store_close(s);
}

/* The tmpfs of test_disk_full, unmounted in teardown whatever happened. */
static char mnt[4200];
static struct store *mnt_store;

static int disk_full_teardown(void **state)
{
	store_close(mnt_store);
	mnt_store = NULL;
	if (mnt[0] != '\0') {
		umount2(mnt, MNT_DETACH);
		rmdir(mnt);
		mnt[0] = '\0';
	}
	return 0;
}

/* Fill the file system of path's directory with a file path, then give back keep bytes. */
static void fill_disk(const char *path, off_t keep)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	static char chunk[4096];
	off_t size = 0;
	ssize_t n;
	while ((n = write(fd, chunk, sizeof(chunk))) > 0)
		size += n;
	assert_int_equal(errno, ENOSPC);
	assert_true(size > keep);
	assert_int_equal(ftruncate(fd, size - keep), 0);
	close(fd);
}

/*
 * A full disk is "no space left", not LMDB's "Input/output error" (a pwrite
 * cut short by the full disk): a store on a 1 MiB tmpfs (needs root; skipped
 * without mount privileges).
 */
static void test_disk_full(void **state)
{
	char dir[4300], fill[4300], msg[8300], want[8300];
	snprintf(mnt, sizeof(mnt), "%s/tmpfs", base);
	assert_int_equal(mkdir(mnt, 0700), 0);
	if (mount("tmpfs", mnt, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0700") != 0) {
		fprintf(stderr, "SKIP: test_disk_full: cannot mount a tmpfs on %s: %s\n", mnt,
		        strerror(errno));
		rmdir(mnt);
		mnt[0] = '\0';
		skip();
	}
	snprintf(dir, sizeof(dir), "%s/store", mnt);
	snprintf(fill, sizeof(fill), "%s/fill", mnt);
	mnt_store = open_rw(dir);
	struct store_domain a = domain("a.example.", false, CONF_POLICY_ITERATE);
	assert_int_equal(store_put(mnt_store, &a), 0);
	snprintf(want, sizeof(want), "no space left for the store (%s): LMDB map full / disk full",
	         dir);
	enum { N = 2000 }; /* ~700 KiB of records */
	struct store_domain *b = big_batch(N, "d");
	/* Nothing free, and two pages free (a write cut short: EIO inside LMDB). */
	static const off_t keeps[] = { 0, 8192 };
	for (size_t i = 0; i < sizeof(keeps) / sizeof(keeps[0]); i++) {
		fill_disk(fill, keeps[i]);
		int err = store_put_many(mnt_store, b, N, NULL);
		if (err != -ENOSPC)
			fail_msg("%lld bytes free: store_put_many gave %d (%s), want -ENOSPC",
			         (long long)keeps[i], err, store_strerror(err));
		assert_string_equal(store_message(err, dir, msg, sizeof(msg)), want);
		/* Nothing of the batch, the old data intact. */
		struct store_domain got;
		assert_int_equal(store_get(mnt_store, b[0].name, &got), -ENOENT);
		assert_int_equal(store_get(mnt_store, "a.example.", &got), 0);
		assert_int_equal(version(mnt_store), 1);
		assert_int_equal(unlink(fill), 0);
	}
	/* With the space back the same handle writes again. */
	assert_int_equal(store_put_many(mnt_store, b, 100, NULL), 0);
	assert_int_equal(version(mnt_store), 2);
	free(b);
}

/* ---- the mirror of a shared store: every record is anyone's write ---- */

struct badseen {
	char log[4096];
	size_t n;
};

static void mirror_bad(const struct store_change *c, const char *why, void *arg)
{
	struct badseen *b = arg;
	size_t len = strlen(b->log);
	char esc[128];
	snprintf(b->log + len, sizeof(b->log) - len, "%d:%s;", (int)c->kind,
	         store_key_escape(c->key, strlen(c->key), esc, sizeof(esc)));
	assert_non_null(why);
	b->n++;
}

static size_t rec(const char *name, uint8_t *buf, size_t size)
{
	struct store_domain d = domain(name, false, CONF_POLICY_ITERATE);
	int n = store_record_encode(&d, buf, size);
	assert_true(n > 0);
	return (size_t)n;
}

/*
 * Defence: mirror_refusal. A plan key other than next/active (etcdctl put
 * PREFIX plan/foo x) used to free an uninitialised plan (plan_which_ok
 * short-circuited the decode): every node crashed, and again at each start.
 * A delete of a key no record can have (longer than LMDB takes) used to fail
 * the whole transaction, so the watch came back to it for ever. Each is
 * now left out and named, and the rest applied.
 */
static void test_mirror_hostile(void **state)
{
	char dir[4200];
	struct store *s = open_rw(newdir(dir, sizeof(dir)));
	uint8_t a[STORE_RECORD_MAX], b[STORE_RECORD_MAX];
	size_t alen = rec("a.example.", a, sizeof(a)), blen = rec("b.example.", b, sizeof(b));
	char longkey[700];
	memset(longkey, 'x', sizeof(longkey) - 1);
	longkey[sizeof(longkey) - 1] = '\0';
	struct store_change ch[] = {
		{ STORE_KIND_PLAN, "foo", (const uint8_t *)"x", 1 },
		{ STORE_KIND_PLAN, "foo", NULL, 0 },
		{ STORE_KIND_DOMAIN, "a.example.", a, alen },
		{ STORE_KIND_DOMAIN, longkey, NULL, 0 },
		{ STORE_KIND_STANDBY, longkey, NULL, 0 },
		{ STORE_KIND_DOMAIN, "Not.Normal", b, blen },
		{ STORE_KIND_STANDBY, "nanjing", (const uint8_t *)"\x01", 1 },
		{ STORE_KIND_PLAN, STORE_PLAN_NEXT, (const uint8_t *)"x", 1 },
	};
	size_t n = sizeof(ch) / sizeof(ch[0]), nbad = 0;
	bool plan = true;
	struct badseen seen = { .n = 0 };
	assert_int_equal(store_mirror_apply_ex(s, ch, n, false, 7, 10, mirror_bad, &seen, &nbad, &plan), 0);
	assert_int_equal(nbad, n - 1);
	assert_int_equal(seen.n, n - 1);
	assert_false(plan);
	assert_non_null(strstr(seen.log, "2:foo;2:foo;"));
	assert_non_null(strstr(seen.log, "0:Not.Normal;1:nanjing;2:next;"));
	struct collect c = { .n = 0 };
	assert_int_equal(store_foreach(s, collect_fn, &c), 0);
	assert_int_equal(c.n, 1);
	assert_string_equal(c.names[0], "a.example.");
	uint64_t cl;
	int64_t rev;
	assert_int_equal(store_mirror_state(s, &cl, &rev), 0);
	assert_int_equal(cl, 7);
	assert_int_equal(rev, 10);

	/* a put that does not decode keeps the last good version (a watch) */
	uint64_t v0 = version(s);
	struct store_change junk = { STORE_KIND_DOMAIN, "a.example.", (const uint8_t *)"junk", 4 };
	assert_int_equal(store_mirror_apply(s, &junk, 1, false, 7, 11, &nbad, NULL), 0);
	assert_int_equal(nbad, 1);
	assert_int_equal(version(s), v0); /* nothing changed */
	struct store_domain got;
	assert_int_equal(store_get(s, "a.example.", &got), 0);
	store_close(s);
}

/*
 * Defence: mirror_prune. A full copy removes only the local records whose
 * keys the copy does not hold: a record that does not decode in the copy
 * keeps its last good version (as after a watch, and as the docs say). A
 * full copy used to drop every table first, so the last good version was
 * lost.
 */
static void test_mirror_full_keeps_last_good(void **state)
{
	char dir[4200];
	struct store *s = open_rw(newdir(dir, sizeof(dir)));
	uint8_t a[STORE_RECORD_MAX], b[STORE_RECORD_MAX], c2[STORE_RECORD_MAX];
	size_t alen = rec("a.example.", a, sizeof(a)), blen = rec("b.example.", b, sizeof(b)),
	       clen = rec("c.example.", c2, sizeof(c2));
	struct store_plan p = { .serial = 3, .text = "serial: 3\n", .len = 10 };
	size_t plen;
	uint8_t *pv = store_plan_encode(&p, &plen);
	assert_non_null(pv);
	struct store_change first[] = {
		{ STORE_KIND_DOMAIN, "a.example.", a, alen },
		{ STORE_KIND_DOMAIN, "c.example.", c2, clen },
		{ STORE_KIND_PLAN, STORE_PLAN_ACTIVE, pv, plen },
	};
	size_t nbad;
	bool plan;
	assert_int_equal(store_mirror_apply(s, first, 3, true, 1, 5, &nbad, &plan), 0);
	assert_true(plan);
	/* the copy: a.example. undecodable now, b.example. new, c.example. gone, the plan as it was */
	struct store_change copy[] = {
		{ STORE_KIND_DOMAIN, "b.example.", b, blen },
		{ STORE_KIND_DOMAIN, "a.example.", (const uint8_t *)"x", 1 },
		{ STORE_KIND_PLAN, STORE_PLAN_ACTIVE, pv, plen },
	};
	assert_int_equal(store_mirror_apply(s, copy, 3, true, 1, 9, &nbad, &plan), 0);
	assert_int_equal(nbad, 1);
	assert_false(plan); /* the same plan: no reload */
	struct collect c = { .n = 0 };
	assert_int_equal(store_foreach(s, collect_fn, &c), 0);
	assert_int_equal(c.n, 2);
	assert_string_equal(c.names[0], "a.example.");
	assert_string_equal(c.names[1], "b.example.");
	struct store_plan got;
	assert_int_equal(store_plan_get(s, STORE_PLAN_ACTIVE, &got), 0);
	assert_int_equal(got.serial, 3);
	store_plan_clear(&got);
	/* a copy without the plan removes it; an empty copy empties the store */
	assert_int_equal(store_mirror_apply(s, copy, 2, true, 1, 12, &nbad, &plan), 0);
	assert_true(plan);
	assert_int_equal(store_plan_get(s, STORE_PLAN_ACTIVE, &got), -ENOENT);
	assert_int_equal(store_mirror_apply(s, NULL, 0, true, 1, 13, &nbad, &plan), 0);
	c.n = 0;
	assert_int_equal(store_foreach(s, collect_fn, &c), 0);
	assert_int_equal(c.n, 0);
	free(pv);
	store_close(s);
}

struct badkeys {
	char log[1024];
	size_t n;
};

static int foreach_bad(const void *key, size_t keylen, const char *why, void *arg)
{
	struct badkeys *b = arg;
	size_t len = strlen(b->log);
	char esc[128];
	snprintf(b->log + len, sizeof(b->log) - len, "%s;", store_key_escape(key, keylen, esc, sizeof(esc)));
	b->n++;
	return 0;
}

static int collect_all_fn(const struct store_domain *d, void *arg)
{
	return collect_fn(d, &((struct badkeys *)arg)[1]);
}

/* Defence: store_foreach_all goes on past a record that does not decode and names its key (domain
 * list and export show the rest); store_foreach still stops there. store_key_escape: \xNN, cut. */
static void test_foreach_all(void **state)
{
	char dir[4200];
	struct store *s = open_rw(newdir(dir, sizeof(dir)));
	struct store_domain a = domain("a.example.", false, CONF_POLICY_ITERATE);
	struct store_domain z = domain("z.example.", false, CONF_POLICY_ITERATE);
	assert_int_equal(store_put(s, &a), 0);
	assert_int_equal(store_put(s, &z), 0);
	store_close(s);
	static const uint8_t bad[] = { 1, 0, 0, 1 };
	raw_put(dir, "domains", "b.example.", bad, sizeof(bad));
	raw_put(dir, "domains", "c\x01\\d", bad, sizeof(bad));
	s = open_rw(dir);
	struct {
		struct badkeys b;
		struct collect c;
	} st;
	memset(&st, 0, sizeof(st));
	assert_int_equal(store_foreach_all(s, collect_all_fn, foreach_bad, &st), 0);
	assert_int_equal(st.c.n, 2);
	assert_string_equal(st.c.names[0], "a.example.");
	assert_string_equal(st.c.names[1], "z.example.");
	assert_int_equal(st.b.n, 2);
	assert_string_equal(st.b.log, "b.example.;c\\x01\\x5cd;");
	struct collect c = { .n = 0 };
	assert_int_equal(store_foreach(s, collect_fn, &c), STORE_E_CORRUPT);
	store_close(s);

	char buf[8];
	assert_string_equal(store_key_escape("abcdefghij", 10, buf, sizeof(buf)), "abcd...");
	assert_string_equal(store_key_escape("abc", 3, buf, sizeof(buf)), "abc");
	assert_string_equal(store_key_escape("a\0", 2, buf, sizeof(buf)), "a..."); /* room for "..." kept */
	char big[16];
	assert_string_equal(store_key_escape("a\0", 2, big, sizeof(big)), "a\\x00");
	assert_string_equal(store_key_escape("\xff\xfe", 2, buf, sizeof(buf)), "\\xff...");
}

static void test_strerror(void **state)
{
	static const int codes[] = { STORE_E_LMDB, STORE_E_CORRUPT, STORE_E_VERSION, -ENOENT,
	                             -ENOSPC, -EROFS, -EINVAL };
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		const char *t = store_strerror(codes[i]);
		assert_non_null(t);
		assert_string_not_equal(t, "unknown error");
		for (size_t j = 0; j < i; j++)
			if (strcmp(t, store_strerror(codes[j])) == 0)
				fail_msg("codes %d and %d share the text '%s'", codes[i], codes[j], t);
	}
	assert_string_equal(store_strerror(12345), "unknown error");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_missing),
		cmocka_unit_test(test_open_never_creates),
		cmocka_unit_test(test_open_creates),
		cmocka_unit_test(test_put_get),
		cmocka_unit_test(test_put_invalid),
		cmocka_unit_test(test_replace),
		cmocka_unit_test(test_del),
		cmocka_unit_test(test_standby),
		cmocka_unit_test(test_plan),
		cmocka_unit_test(test_foreach),
		cmocka_unit_test(test_put_many),
		cmocka_unit_test(test_record_decode),
		cmocka_unit_test(test_corrupt_and_format),
		cmocka_unit_test(test_who_when),
		cmocka_unit_test(test_replace_all),
		cmocka_unit_test(test_migrate_v1),
		cmocka_unit_test(test_reader_sees_other_process),
		cmocka_unit_test(test_kill9_durability),
		cmocka_unit_test(test_map_growth),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_stale_readers),
		cmocka_unit_test(test_map_full),
		cmocka_unit_test_teardown(test_disk_full, disk_full_teardown),
		cmocka_unit_test(test_strerror),
		cmocka_unit_test(test_mirror_hostile),
		cmocka_unit_test(test_mirror_full_keeps_last_good),
		cmocka_unit_test(test_foreach_all),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
