/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Policy zones from their primaries. One thread, because a transfer blocks
 * (one TCP exchange at a time) and a primary may be slow or silent: it
 * never holds up a listener or the main loop. It only writes zone files;
 * the main loop republishes the snapshot (rpz_build re-reads the files that
 * changed, keeps the rest), so a transfer takes effect exactly like an
 * edited file on reload, atomically, and the file is the copy a restart
 * serves from while the primary is away.
 *
 * Every refresh seconds the primary's SOA is asked for; on a serial other
 * than the copy's, an IXFR from the copy's serial (RFC 1995), applied to the
 * copy by rpz_ixfr.c, or an AXFR when there is no copy, when the primary
 * does not serve IXFR, or when its reply cannot be used (said in the log).
 * The exchanges are ours, not ldns's resolver: ldns 1.8's AXFR client
 * checks no TSIG on the transfer's messages, and every message of every
 * reply is verified here (tsig.c) before a record of it is used. A NOTIFY
 * from the primary (taken by a listener, rpz_xfr_notify) brings the next
 * SOA check forward; it is not trusted further than that.
 */
#include "resolver/xfr/rpz_xfr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ldns/ldns.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "conf/conf.h"
#include "partition/prefix.h"
#include "resolver/view/classify.h"
#include "resolver/base/log.h"
#include "resolver/view/rpz.h"
#include "resolver/xfr/rpz_ixfr.h"
#include "resolver/view/snapshot.h"
#include "resolver/xfr/tsig.h"
#include "wire/names.h"
#include "wire/wire.h"
#include "util/file.h"

#define XFR_MAX_ZONES 256
#define XFR_TIMEOUT_S 5           /* to connect, and for each read of a reply */
#define XFR_DEADLINE_S 600        /* for one whole exchange: a primary that trickles is cut off */
#define XFR_MAX_BYTES (2ull << 30) /* of one reply: 16M records fit with room to spare */
#define XFR_RETRY_S 30            /* after a failed check or transfer (or the refresh, if shorter) */
#define XFR_MIN_REFRESH_S 1
#define XFR_MAX_REFRESH_S 86400
#define XFR_NO_IXFR_S 3600        /* a primary that refused IXFR is sent AXFRs this long */
#define XFR_LOG_AGAIN_S 3600      /* the same failure again is logged once in this long */
#define XFR_NOTIFY_GAP_S 5        /* a NOTIFY brings a check forward to no sooner than this after the last */

struct xzone {
	char name[256];
	time_t next;            /* when to check the SOA again */
	time_t checked;         /* when it was last checked (0: never) */
	time_t no_ixfr_until;   /* the primary refused an IXFR: AXFR until then */
	/* the copy's serial, read again only when the file changes */
	bool copy_known, copy_have;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	uint32_t copy_serial;
	/* the last failure logged, and how often it came back since */
	char last_fail[400];
	time_t last_fail_at;
	unsigned fail_repeats;
};

struct rpz_xfr {
	struct snapshot_slot *slot;
	pthread_t thread;
	atomic_bool stop;
	atomic_bool changed;
	bool started;
	size_t n;
	struct xzone z[XFR_MAX_ZONES];
	/* zones NOTIFYs asked about, taken by the thread: a set (a flood adds nothing) */
	pthread_mutex_t notify_lock;
	atomic_bool notified;
	size_t nnotify;
	char notify[XFR_MAX_ZONES][256];
};

static struct xzone *zone_state(struct rpz_xfr *x, const char *name)
{
	for (size_t i = 0; i < x->n; i++)
		if (strcmp(x->z[i].name, name) == 0)
			return &x->z[i];
	if (x->n == XFR_MAX_ZONES)
		return NULL;
	struct xzone *z = &x->z[x->n++];
	memset(z, 0, sizeof(*z));
	snprintf(z->name, sizeof(z->name), "%s", name);
	return z;
}

/*
 * A failure of zone z: logged, unless it is the one logged last less than
 * XFR_LOG_AGAIN_S ago (a primary down or a wrong key fails the same way
 * every retry); the next line that is logged says how often it came back.
 */
static void zone_fail(struct xzone *z, time_t now, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void zone_fail(struct xzone *z, time_t now, const char *fmt, ...)
{
	char msg[sizeof(z->last_fail)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (strcmp(msg, z->last_fail) == 0 && now - z->last_fail_at < XFR_LOG_AGAIN_S) {
		z->fail_repeats++;
		log_debug("rpz %s: %s", z->name, msg);
		return;
	}
	if (z->fail_repeats > 0)
		log_warn("rpz %s: %s (the previous failure came back %u times)", z->name, msg, z->fail_repeats);
	else
		log_warn("rpz %s: %s", z->name, msg);
	snprintf(z->last_fail, sizeof(z->last_fail), "%s", msg);
	z->last_fail_at = now;
	z->fail_repeats = 0;
}

/*
 * The serial of the copy in file (its apex SOA), read again only when the
 * file changed (device, inode, size, mtime). The copy, not the loaded
 * zone, is what an IXFR is applied to, so its serial is the one to ask
 * from; and a copy written but not yet republished is not fetched again.
 * @return false when there is no usable copy (missing, unparsable, no SOA).
 */
static bool copy_serial(struct xzone *z, const char *file, const char *zone, uint32_t *serial)
{
	struct stat st;
	if (stat(file, &st) != 0) {
		z->copy_known = false;
		return false;
	}
	if (z->copy_known && z->dev == st.st_dev && z->ino == st.st_ino && z->size == st.st_size &&
	    z->mtime.tv_sec == st.st_mtim.tv_sec && z->mtime.tv_nsec == st.st_mtim.tv_nsec) {
		*serial = z->copy_serial;
		return z->copy_have;
	}
	FILE *f = file_fopen_regular(file);
	ldns_rdf *apex = NULL;
	if (f == NULL || ldns_str2rdf_dname(&apex, zone) != LDNS_STATUS_OK) {
		if (f)
			fclose(f);
		return false;
	}
	ldns_rdf *origin = ldns_rdf_clone(apex), *prev = NULL;
	uint32_t ttl = 3600;
	int line = 0;
	bool have = false;
	while (!have && !feof(f)) {
		ldns_rr *rr = NULL;
		ldns_status s = ldns_rr_new_frm_fp_l(&rr, f, &ttl, &origin, &prev, &line);
		if (s == LDNS_STATUS_SYNTAX_EMPTY || s == LDNS_STATUS_SYNTAX_TTL || s == LDNS_STATUS_SYNTAX_ORIGIN)
			continue;
		if (s != LDNS_STATUS_OK)
			break;
		if (ldns_rr_get_type(rr) == LDNS_RR_TYPE_SOA && ldns_rr_rd_count(rr) == 7 &&
		    ldns_rdf_size(ldns_rr_rdf(rr, 2)) == 4 && ldns_dname_compare(ldns_rr_owner(rr), apex) == 0) {
			z->copy_serial = ldns_rdf2native_int32(ldns_rr_rdf(rr, 2));
			have = true;
		}
		ldns_rr_free(rr);
	}
	fclose(f);
	ldns_rdf_deep_free(origin);
	ldns_rdf_deep_free(prev);
	ldns_rdf_deep_free(apex);
	z->copy_known = true;
	z->copy_have = have;
	z->dev = st.st_dev;
	z->ino = st.st_ino;
	z->size = st.st_size;
	z->mtime = st.st_mtim;
	*serial = z->copy_serial;
	return have;
}

/* ---- one exchange with the primary over TCP ---- */

struct conn {
	struct rpz_xfr *x;
	int fd;
	time_t deadline;
	uint64_t bytes;
};

/* Wait for ev on c->fd: XFR_TIMEOUT_S at most, in slices that watch the stop flag and the deadline. */
static int conn_wait(struct conn *c, short ev, char *why, size_t wn)
{
	for (int slice = 0; slice < XFR_TIMEOUT_S * 4; slice++) {
		if (atomic_load(&c->x->stop)) {
			snprintf(why, wn, "shutting down");
			return -1;
		}
		if (time(NULL) > c->deadline) {
			snprintf(why, wn, "not done within %d s", XFR_DEADLINE_S);
			return -1;
		}
		struct pollfd p = { .fd = c->fd, .events = ev };
		int n = poll(&p, 1, 250);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR) {
			snprintf(why, wn, "poll: %s", strerror(errno));
			return -1;
		}
	}
	snprintf(why, wn, "timed out");
	return -1;
}

static int conn_open(struct conn *c, const struct conf_addr *a, char *why, size_t wn)
{
	c->fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		snprintf(why, wn, "socket: %s", strerror(errno));
		return -1;
	}
	if (connect(c->fd, (const struct sockaddr *)&a->ss, a->len) == 0)
		return 0;
	if (errno != EINPROGRESS) {
		snprintf(why, wn, "connect: %s", strerror(errno));
		return -1;
	}
	if (conn_wait(c, POLLOUT, why, wn) != 0)
		return -1;
	int err = 0;
	socklen_t len = sizeof(err);
	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
		snprintf(why, wn, "connect: %s", strerror(err ? err : errno));
		return -1;
	}
	return 0;
}

static int conn_write(struct conn *c, const uint8_t *p, size_t n, char *why, size_t wn)
{
	while (n > 0) {
		ssize_t k = send(c->fd, p, n, MSG_NOSIGNAL);
		if (k > 0) {
			p += k;
			n -= (size_t)k;
		} else if (k < 0 && errno != EAGAIN && errno != EINTR) {
			snprintf(why, wn, "send: %s", strerror(errno));
			return -1;
		} else if (conn_wait(c, POLLOUT, why, wn) != 0) {
			return -1;
		}
	}
	return 0;
}

static int conn_read(struct conn *c, uint8_t *p, size_t n, char *why, size_t wn)
{
	while (n > 0) {
		ssize_t k = recv(c->fd, p, n, 0);
		if (k > 0) {
			p += k;
			n -= (size_t)k;
			c->bytes += (size_t)k;
		} else if (k == 0) {
			snprintf(why, wn, "the primary closed the connection");
			return -1;
		} else if (errno != EAGAIN && errno != EINTR) {
			snprintf(why, wn, "recv: %s", strerror(errno));
			return -1;
		} else if (conn_wait(c, POLLIN, why, wn) != 0) {
			return -1;
		}
	}
	return 0;
}

/* What is done with each reply message (its answer records): 1 the reply is complete, 0 more, -1 refused (why). */
typedef int (*on_reply_fn)(void *arg, const ldns_pkt *p, char *why, size_t wn);

enum {
	EX_OK = 0,     /* the reply is complete, every message verified */
	EX_FAIL = -1,  /* no reply, or one that cannot be trusted (TSIG, transport, malformed message) */
	EX_RCODE = -2, /* the first message has an error rcode (*rcode); its signature is not checked:
	                  an error only ever ends the exchange or makes us take an AXFR instead */
	EX_BAD = -3,   /* fn refused the content */
	EX_MALFORMED = -4, /* a message that is not a well-formed response to our query */
};

/* The query for zone's qtype (IXFR: from serial, our SOA in the authority section), TSIG-signed with key. */
static int make_query(const ldns_rdf *zone, ldns_rr_type qtype, uint32_t serial, struct tsig_stream *ts,
                      uint8_t *out, size_t cap, size_t *len, uint16_t *id, char *why, size_t wn)
{
	ldns_pkt *q = ldns_pkt_query_new(ldns_rdf_clone(zone), qtype, LDNS_RR_CLASS_IN, 0);
	uint8_t *w = NULL;
	size_t n = 0;
	int rc = -1;
	if (q == NULL)
		goto out;
	ldns_pkt_set_random_id(q);
	*id = ldns_pkt_id(q);
	if (qtype == LDNS_RR_TYPE_IXFR) {
		/* only the serial of our SOA matters to the primary (RFC 1995 3); the rest is not kept */
		ldns_rr *soa = ldns_rr_new_frm_type(LDNS_RR_TYPE_SOA);
		ldns_rdf *d[7] = { ldns_dname_new_frm_str("."), ldns_dname_new_frm_str("."),
			           ldns_native2rdf_int32(LDNS_RDF_TYPE_INT32, serial),
			           ldns_native2rdf_int32(LDNS_RDF_TYPE_PERIOD, 0),
			           ldns_native2rdf_int32(LDNS_RDF_TYPE_PERIOD, 0),
			           ldns_native2rdf_int32(LDNS_RDF_TYPE_PERIOD, 0),
			           ldns_native2rdf_int32(LDNS_RDF_TYPE_PERIOD, 0) };
		bool ok = soa != NULL;
		for (int i = 0; i < 7; i++)
			ok = ok && d[i] != NULL;
		if (!ok) {
			for (int i = 0; i < 7; i++)
				ldns_rdf_deep_free(d[i]);
			ldns_rr_free(soa);
			goto out;
		}
		ldns_rr_set_owner(soa, ldns_rdf_clone(zone));
		ldns_rr_set_class(soa, LDNS_RR_CLASS_IN);
		for (int i = 0; i < 7; i++)
			ldns_rr_set_rdf(soa, d[i], (size_t)i);
		ldns_pkt_push_rr(q, LDNS_SECTION_AUTHORITY, soa);
	}
	if (ldns_pkt2wire(&w, q, &n) != LDNS_STATUS_OK || n + TSIG_RR_MAX > cap)
		goto out;
	memcpy(out, w, n);
	*len = n;
	rc = ts != NULL ? tsig_sign_query(ts, out, len, cap, (uint64_t)time(NULL)) : 0;
	if (rc != 0)
		snprintf(why, wn, "%s", ts->why);
out:
	if (rc != 0 && why[0] == '\0')
		snprintf(why, wn, "cannot build the query");
	free(w);
	ldns_pkt_free(q);
	return rc;
}

/*
 * Ask r's primary zone's qtype and hand each message of the reply to fn:
 * every message is checked (our ID, a response, the question when it has
 * one) and, with a key, its TSIG verified (tsig_verify) before fn sees it;
 * the message that completes the reply must be signed. @return EX_*
 */
static int exchange(struct rpz_xfr *x, const struct conf_rpz *r, const struct tsig_key *key, const ldns_rdf *zone,
                    ldns_rr_type qtype, uint32_t serial, on_reply_fn fn, void *arg, int *rcode, char *why,
                    size_t wn)
{
	static uint8_t msg[2 + 65535]; /* the one transfer thread's */
	struct tsig_stream ts;
	struct conn c = { .x = x, .fd = -1, .deadline = time(NULL) + XFR_DEADLINE_S };
	size_t qlen = 0;
	uint16_t id = 0;
	int rc = EX_FAIL;
	why[0] = '\0';
	if (key != NULL && tsig_stream_init(&ts, key) != 0) {
		snprintf(why, wn, "%s", ts.why);
		tsig_stream_clear(&ts);
		return EX_FAIL;
	}
	if (make_query(zone, qtype, serial, key ? &ts : NULL, msg + 2, sizeof(msg) - 2, &qlen, &id, why, wn) != 0)
		goto out;
	msg[0] = (uint8_t)(qlen >> 8);
	msg[1] = (uint8_t)qlen;
	if (conn_open(&c, &r->primary, why, wn) != 0 || conn_write(&c, msg, qlen + 2, why, wn) != 0)
		goto out;
	for (unsigned n = 1;; n++) {
		if (conn_read(&c, msg, 2, why, wn) != 0)
			goto out;
		size_t len = (size_t)msg[0] << 8 | msg[1];
		if (len < 12 || conn_read(&c, msg, len, why, wn) != 0) {
			if (len < 12) {
				snprintf(why, wn, "a message of %zu bytes", len);
				rc = EX_MALFORMED;
			}
			goto out;
		}
		if (c.bytes > XFR_MAX_BYTES) {
			snprintf(why, wn, "more than %llu bytes", (unsigned long long)XFR_MAX_BYTES);
			goto out;
		}
		if ((msg[0] << 8 | msg[1]) != id || !(msg[2] & 0x80) || (msg[2] & 0x78) != 0) {
			snprintf(why, wn, "message %u is not a response to our query", n);
			rc = EX_MALFORMED;
			goto out;
		}
		if ((msg[3] & 0x0f) != LDNS_RCODE_NOERROR) {
			*rcode = msg[3] & 0x0f;
			if (n == 1) {
				rc = EX_RCODE;
			} else {
				ldns_lookup_table *t = ldns_lookup_by_id(ldns_rcodes, *rcode);
				snprintf(why, wn, "message %u has rcode %s", n, t ? t->name : "?");
				rc = EX_MALFORMED;
			}
			goto out;
		}
		/* parsed first: a malformed message is the content's fault (an IXFR falls back), a bad
		   signature is not */
		ldns_pkt *p = NULL;
		if (ldns_wire2pkt(&p, msg, len) != LDNS_STATUS_OK) {
			snprintf(why, wn, "message %u is malformed", n);
			rc = EX_MALFORMED;
			goto out;
		}
		enum tsig_verdict v = TSIG_SIGNED;
		if (key != NULL && (v = tsig_verify(&ts, msg, len, (uint64_t)time(NULL))) == TSIG_BAD) {
			snprintf(why, wn, "TSIG: %s", ts.why);
			ldns_pkt_free(p);
			goto out;
		}
		ldns_rr_list *qs = ldns_pkt_question(p);
		const ldns_rr *q = ldns_rr_list_rr_count(qs) ? ldns_rr_list_rr(qs, 0) : NULL;
		if (ldns_rr_list_rr_count(qs) > 1 ||
		    (q && (ldns_rr_get_type(q) != qtype || ldns_dname_compare(ldns_rr_owner(q), zone) != 0))) {
			ldns_pkt_free(p);
			snprintf(why, wn, "message %u answers another question", n);
			rc = EX_MALFORMED;
			goto out;
		}
		int done = fn(arg, p, why, wn);
		ldns_pkt_free(p);
		if (done < 0) {
			rc = EX_BAD;
			goto out;
		}
		if (done > 0) {
			if (v != TSIG_SIGNED) {
				snprintf(why, wn, "TSIG: the last message is not signed");
				goto out;
			}
			rc = EX_OK;
			goto out;
		}
	}
out:
	if (c.fd >= 0)
		close(c.fd);
	if (key != NULL)
		tsig_stream_clear(&ts);
	return rc;
}

static const char *rcode_name(int rcode)
{
	ldns_lookup_table *t = ldns_lookup_by_id(ldns_rcodes, rcode);
	return t ? t->name : "an unknown rcode";
}

struct soa_reply {
	const ldns_rdf *zone;
	uint32_t serial, refresh;
};

static int on_soa(void *arg, const ldns_pkt *p, char *why, size_t wn)
{
	struct soa_reply *s = arg;
	ldns_rr_list *ans = ldns_pkt_answer(p);
	for (size_t i = 0; i < ldns_rr_list_rr_count(ans); i++) {
		ldns_rr *rr = ldns_rr_list_rr(ans, i);
		if (ldns_rr_get_type(rr) != LDNS_RR_TYPE_SOA || ldns_dname_compare(ldns_rr_owner(rr), s->zone) != 0 ||
		    ldns_rr_rd_count(rr) != 7 || ldns_rdf_size(ldns_rr_rdf(rr, 2)) != 4 ||
		    ldns_rdf_size(ldns_rr_rdf(rr, 3)) != 4)
			continue;
		s->serial = ldns_rdf2native_int32(ldns_rr_rdf(rr, 2));
		s->refresh = ldns_rdf2native_int32(ldns_rr_rdf(rr, 3));
		return 1;
	}
	snprintf(why, wn, "no SOA for the zone in the answer: is it its primary?");
	return -1;
}

static int on_xfr(void *arg, const ldns_pkt *p, char *why, size_t wn)
{
	struct rpz_ixfr *ix = arg;
	enum rpz_ixfr_state st = rpz_ixfr_message(ix, ldns_pkt_answer(p));
	if (st == RPZ_IXFR_BAD)
		snprintf(why, wn, "%s", rpz_ixfr_why(ix));
	return st == RPZ_IXFR_DONE ? 1 : st == RPZ_IXFR_MORE ? 0 : -1;
}

/* The primary's SOA serial and refresh for the zone. @return 0, or -1 (logged). */
static int primary_soa(struct rpz_xfr *x, struct xzone *z, const struct conf_rpz *r, const struct tsig_key *key,
                       const ldns_rdf *zone, time_t now, uint32_t *serial, uint32_t *refresh)
{
	struct soa_reply s = { .zone = zone };
	char why[300];
	int rcode = 0;
	int rc = exchange(x, r, key, zone, LDNS_RR_TYPE_SOA, 0, on_soa, &s, &rcode, why, sizeof(why));
	if (rc == EX_RCODE) {
		zone_fail(z, now, "SOA query to %s failed: %s%s", r->primary.text, rcode_name(rcode),
		          rcode == LDNS_RCODE_NOTAUTH || rcode == LDNS_RCODE_REFUSED ? " (is the TSIG key right?)" : "");
		return -1;
	}
	if (rc != EX_OK) {
		zone_fail(z, now, "SOA query to %s failed: %s", r->primary.text, why);
		return -1;
	}
	*serial = s.serial;
	*refresh = s.refresh;
	return 0;
}

/* Flush, sync and close f, then rename tmp over file. @return 0, or -1 (logged). */
static int commit_copy(struct xzone *z, FILE *f, const char *tmp, const char *file, time_t now)
{
	bool ok = fflush(f) == 0 && !ferror(f) && fsync(fileno(f)) == 0;
	ok = fclose(f) == 0 && ok;
	if (!ok || rename(tmp, file) != 0) {
		zone_fail(z, now, "cannot write %s: %s", ok ? file : tmp, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * A transfer into r->file (via FILE.xfr, renamed when complete): an IXFR
 * from the copy of serial have when ixfr, else an AXFR.
 * @return 0 (the copy replaced, or current), 1 (the IXFR cannot be used:
 * take an AXFR; logged), -1 (failed, logged; the copy untouched)
 */
static int transfer(struct rpz_xfr *x, struct xzone *z, const struct conf_rpz *r, const struct tsig_key *key,
                    const ldns_rdf *zone, bool ixfr, uint32_t have, time_t now)
{
	const char *what = ixfr ? "IXFR" : "AXFR";
	char tmp[4096], why[400];
	snprintf(tmp, sizeof(tmp), "%s.xfr", r->file);
	FILE *f = file_fopen_write(tmp);
	if (f == NULL) {
		zone_fail(z, now, "cannot write %s: %s", tmp, file_strerror(errno));
		return -1;
	}
	struct rpz_ixfr *ix = rpz_ixfr_new(r->zone, ixfr, have, f);
	int rcode = 0, rc = -1;
	int ex = ix ? exchange(x, r, key, zone, ixfr ? LDNS_RR_TYPE_IXFR : LDNS_RR_TYPE_AXFR, have, on_xfr, ix,
	                       &rcode, why, sizeof(why))
	            : EX_FAIL;
	if (ix == NULL)
		snprintf(why, sizeof(why), "out of memory");
	if (ex == EX_RCODE && ixfr &&
	    (rcode == LDNS_RCODE_REFUSED || rcode == LDNS_RCODE_NOTIMPL || rcode == LDNS_RCODE_FORMERR)) {
		/* a primary that does not serve IXFR (or not to us) says so every time: ask it again only hourly */
		log_warn("rpz %s: %s answers IXFR with %s: AXFR instead, and for the next %d s", r->zone,
		         r->primary.text, rcode_name(rcode), XFR_NO_IXFR_S);
		z->no_ixfr_until = now + XFR_NO_IXFR_S;
		rc = 1;
	} else if (ex == EX_RCODE) {
		zone_fail(z, now, "%s from %s failed: %s%s; the last good copy stays", what, r->primary.text,
		          rcode_name(rcode), rcode == LDNS_RCODE_NOTAUTH ? " (is the TSIG key right?)" : "");
	} else if ((ex == EX_BAD || ex == EX_MALFORMED) && ixfr) {
		/* what the primary sent is wrong, not how: its AXFR may well be right (and is verified as much) */
		log_warn("rpz %s: IXFR from %s not used (%s): AXFR instead", r->zone, r->primary.text, why);
		rc = 1;
	} else if (ex != EX_OK) {
		zone_fail(z, now, "%s from %s failed: %s; the last good copy stays", what, r->primary.text, why);
	} else if (rpz_ixfr_kind(ix) == RPZ_IXFR_UPTODATE) {
		log_info("rpz %s: IXFR from %s: serial %u is current", r->zone, r->primary.text, have);
		rc = 0;
	} else if (rpz_ixfr_kind(ix) == RPZ_IXFR_INCREMENTAL) {
		FILE *base = file_fopen_regular(r->file);
		if (base == NULL || rpz_ixfr_apply(ix, base, f) != 0) {
			log_warn("rpz %s: IXFR from %s not used (%s): AXFR instead", r->zone, r->primary.text,
			         base ? rpz_ixfr_why(ix) : strerror(errno));
			rc = 1;
		} else {
			rc = 0;
		}
		if (base)
			fclose(base);
		if (rc == 0) {
			rc = commit_copy(z, f, tmp, r->file, now);
			f = NULL;
		}
		if (rc == 0) {
			uint64_t n, del, add;
			rpz_ixfr_counts(ix, &n, &del, &add);
			log_info("rpz %s: IXFR from %s: serial %u -> %u, %llu records deleted, %llu added", r->zone,
			         r->primary.text, have, rpz_ixfr_serial(ix), (unsigned long long)del,
			         (unsigned long long)add);
		}
	} else {
		rc = commit_copy(z, f, tmp, r->file, now);
		f = NULL;
		if (rc == 0) {
			uint64_t n, del, add;
			rpz_ixfr_counts(ix, &n, &del, &add);
			log_info("rpz %s: %llu records transferred from %s (%s), serial %u", r->zone, (unsigned long long)n,
			         r->primary.text, ixfr ? "IXFR answered with the whole zone" : "AXFR", rpz_ixfr_serial(ix));
		}
	}
	if (f != NULL)
		fclose(f);
	if (rc != 0 || access(tmp, F_OK) == 0)
		unlink(tmp);
	rpz_ixfr_free(ix);
	return rc;
}

/* One zone's turn: check the SOA; on a new serial, an IXFR from the copy, or an AXFR. */
static void check_zone(struct rpz_xfr *x, const struct conf_rpz *r, const struct rpz *loaded, time_t now)
{
	struct xzone *z = zone_state(x, r->zone);
	if (z == NULL || now < z->next)
		return;
	z->checked = now;
	uint32_t have_serial = 0, loaded_serial = 0, have_refresh = 0, serial = 0, refresh = 0;
	(void)rpz_serial(loaded, r->zone, &loaded_serial, &have_refresh);
	bool have = copy_serial(z, r->file, r->zone, &have_serial);
	struct tsig_key key;
	const char *why = NULL;
	ldns_rdf *zone = NULL;
	bool ok = false;
	if (r->tsig_name != NULL && tsig_key_init(&key, r->tsig_name, r->tsig_algorithm, r->tsig_secret, &why) != 0)
		zone_fail(z, now, "%s", why);
	else if (ldns_str2rdf_dname(&zone, r->zone) != LDNS_STATUS_OK)
		zone_fail(z, now, "not a zone name");
	else
		ok = primary_soa(x, z, r, r->tsig_name ? &key : NULL, zone, now, &serial, &refresh) == 0;
	if (ok && (!have || serial != have_serial)) {
		int rc = 1;
		if (have && now >= z->no_ixfr_until)
			rc = transfer(x, z, r, r->tsig_name ? &key : NULL, zone, true, have_serial, now);
		if (rc == 1)
			rc = transfer(x, z, r, r->tsig_name ? &key : NULL, zone, false, 0, now);
		ok = rc == 0;
		if (ok)
			atomic_store(&x->changed, true);
	}
	if (ok && z->last_fail[0] != '\0') {
		log_info("rpz %s: %s answers again", r->zone, r->primary.text);
		z->last_fail[0] = '\0';
		z->fail_repeats = 0;
	}
	unsigned every = r->refresh ? r->refresh : refresh ? refresh : have_refresh;
	if (every < XFR_MIN_REFRESH_S)
		every = XFR_MIN_REFRESH_S;
	if (every > XFR_MAX_REFRESH_S)
		every = XFR_MAX_REFRESH_S;
	z->next = now + (ok ? every : (every < XFR_RETRY_S ? every : XFR_RETRY_S));
	ldns_rdf_deep_free(zone);
	memset(&key, 0, sizeof(key)); /* the secret does not stay on the stack */
}

/* The zones NOTIFYs named: each checked now, or XFR_NOTIFY_GAP_S after its last check. */
static void take_notifies(struct rpz_xfr *x, time_t now)
{
	if (!atomic_exchange(&x->notified, false))
		return;
	pthread_mutex_lock(&x->notify_lock);
	for (size_t i = 0; i < x->nnotify; i++) {
		struct xzone *z = zone_state(x, x->notify[i]);
		if (z == NULL)
			continue;
		time_t when = z->checked + XFR_NOTIFY_GAP_S > now ? z->checked + XFR_NOTIFY_GAP_S : now;
		if (when < z->next) {
			z->next = when;
			if (when <= now)
				log_info("rpz %s: NOTIFY from the primary: its serial is checked now", z->name);
			else
				log_info("rpz %s: NOTIFY from the primary: its serial is checked in %lld s", z->name,
				         (long long)(when - now));
		}
	}
	x->nnotify = 0;
	pthread_mutex_unlock(&x->notify_lock);
}

static void *xfr_main(void *arg)
{
	struct rpz_xfr *x = arg;
	while (!atomic_load(&x->stop)) {
		struct snapshot *s = snapshot_get(x->slot);
		time_t now = time(NULL);
		take_notifies(x, now);
		for (size_t i = 0; s != NULL && i < s->conf->nrpz && !atomic_load(&x->stop); i++)
			if (s->conf->rpz[i].primary.len > 0)
				check_zone(x, &s->conf->rpz[i], s->rpz, now);
		snapshot_release(s);
		for (int k = 0; k < 4 && !atomic_load(&x->stop) && !atomic_load(&x->notified); k++)
			usleep(250 * 1000);
	}
	return NULL;
}

struct rpz_xfr *rpz_xfr_new(struct snapshot_slot *slot)
{
	struct rpz_xfr *x = calloc(1, sizeof(*x));
	if (x == NULL)
		return NULL;
	x->slot = slot;
	atomic_init(&x->stop, false);
	atomic_init(&x->changed, false);
	atomic_init(&x->notified, false);
	if (pthread_mutex_init(&x->notify_lock, NULL) != 0) {
		free(x);
		return NULL;
	}
	return x;
}

int rpz_xfr_start(struct rpz_xfr *x)
{
	if (pthread_create(&x->thread, NULL, xfr_main, x) != 0)
		return -1;
	x->started = true;
	return 0;
}

/* Is the sender family/addr one r takes a NOTIFY from: its primary's address, or allow_notify? */
static bool notify_allowed(const struct conf_rpz *r, int family, const uint8_t *addr)
{
	struct prefix who, primary;
	prefix_from_addr(&who, family, addr);
	for (size_t i = 0; i < r->nallow_notify; i++)
		if (prefix_contains(&r->allow_notify[i], &who))
			return true;
	int pfamily;
	const uint8_t *paddr;
	if (!classify_addr(&r->primary.ss, &pfamily, &paddr))
		return false;
	prefix_from_addr(&primary, pfamily, paddr);
	return prefix_equal(&primary, &who);
}

int rpz_xfr_notify(struct rpz_xfr *x, const struct conf *c, const uint8_t *zone, size_t zone_len, int family,
                   const uint8_t *addr)
{
	const struct conf_rpz *r = NULL;
	for (size_t i = 0; i < c->nrpz && r == NULL; i++) {
		uint8_t w[WIRE_MAX_NAME];
		int n = wire_name_from_text(c->rpz[i].zone, w, sizeof(w));
		if (n > 0 && (size_t)n == zone_len) {
			wire_name_lower(w, (size_t)n, w);
			if (memcmp(w, zone, zone_len) == 0 && c->rpz[i].primary.len > 0)
				r = &c->rpz[i];
		}
	}
	if (x == NULL || r == NULL || !notify_allowed(r, family, addr))
		return -1;
	int rc = 1;
	pthread_mutex_lock(&x->notify_lock);
	for (size_t i = 0; i < x->nnotify && rc == 1; i++)
		if (strcmp(x->notify[i], r->zone) == 0)
			rc = 0;
	if (rc == 1 && x->nnotify < XFR_MAX_ZONES)
		snprintf(x->notify[x->nnotify++], sizeof(x->notify[0]), "%s", r->zone);
	pthread_mutex_unlock(&x->notify_lock);
	atomic_store(&x->notified, true);
	return rc;
}

bool rpz_xfr_take_changed(struct rpz_xfr *x)
{
	return x != NULL && atomic_exchange(&x->changed, false);
}

void rpz_xfr_stop(struct rpz_xfr *x)
{
	if (x == NULL || !x->started)
		return;
	atomic_store(&x->stop, true);
	pthread_join(x->thread, NULL);
	x->started = false;
}

void rpz_xfr_free(struct rpz_xfr *x)
{
	if (x == NULL)
		return;
	rpz_xfr_stop(x);
	pthread_mutex_destroy(&x->notify_lock);
	free(x);
}
