/* SPDX-License-Identifier: BSD-3-Clause */
/* A hostile policy-zone primary (TCP, IPv4) for test_rpz_xfr_hostile.sh: each zone misbehaves one way. */
/*
 * Usage: xfrprimary ADDR PORT KEYNAME SECRET
 *
 * Serves the zones MODE.xfr. below, over TCP only, one connection at a
 * time, signing with the TSIG key KEYNAME (hmac-sha256, SECRET in base64)
 * by ldns (an implementation other than partdns' own tsig.c). A query
 * without a TSIG gets REFUSED (the harness uses one to see that it is up);
 * the query's own signature is not checked.
 *
 * Every zone starts at serial 1: SOA, NS, v1.MODE.example.MODE.xfr. A
 * 192.0.2.1. Once one AXFR of it has been sent, it is at serial 2, which
 * adds v2.MODE.example.MODE.xfr. A 192.0.2.2, and its transfers misbehave:
 *
 *   badsig        AXFR and IXFR: three messages, the second's MAC wrong
 *   nosig         AXFR and IXFR: no TSIG on any message
 *   lastunsigned  AXFR and IXFR: three messages, the last two unsigned
 *   gap           IXFR answered with the whole zone in three messages, the
 *                 middle one unsigned and covered by the last one's MAC
 *                 (RFC 8945 5.3.1): correct, to be taken
 *   baddel        IXFR: a difference deleting a record the zone never had;
 *                 AXFR correct
 *   badchain      IXFR: differences from serial 7; AXFR correct
 *   notimp        IXFR: NOTIMP; AXFR correct
 *   trunc         IXFR: a message that claims five records and has none;
 *                 AXFR correct
 *
 * An AXFR is sent in three messages (SOA and NS; the A records; the closing
 * SOA), each signed. Logs one line per query on stdout.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ldns/ldns.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define ALG "hmac-sha256."

static const char *key_name, *key_secret;
static const char *const modes[] = { "badsig", "nosig", "lastunsigned", "gap", "baddel", "badchain", "notimp",
	                             "trunc" };
#define NMODES (sizeof(modes) / sizeof(modes[0]))
static int phase[NMODES];

static ldns_rr *rr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static ldns_rr *rr(const char *fmt, ...)
{
	char text[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	ldns_rr *r = NULL;
	if (ldns_rr_new_frm_str(&r, text, 60, NULL, NULL) != LDNS_STATUS_OK) {
		fprintf(stderr, "xfrprimary: bad record %s\n", text);
		exit(1);
	}
	return r;
}

static ldns_rr *soa(const char *m, unsigned serial)
{
	return rr("%s.xfr. 60 IN SOA ns.%s.xfr. host.%s.xfr. %u 1 1 86400 60", m, m, m, serial);
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t k = write(fd, p, n);
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* The state of one reply's signing: the MAC the next signature chains from, and unsigned messages since. */
struct signer {
	ldns_rdf *prior;    /* the query's MAC, then each signed message's (INT16_DATA: size, MAC) */
	ldns_buffer *gap;   /* unsigned messages since the last signed one */
	int nsent;
};

/*
 * Send p as the next message of the reply: signed (sign), or unsigned;
 * corrupt: its MAC altered after signing. ldns signs one message, so the
 * unsigned messages before it are put in front of the prior MAC it digests
 * (the bytes RFC 8945 5.3.1 asks for, in its order).
 */
static int send_msg(int fd, ldns_pkt *p, struct signer *s, bool sign, bool corrupt)
{
	uint8_t *w = NULL;
	size_t n = 0;
	if (sign) {
		ldns_rdf *mac = s->prior;
		ldns_rdf *joined = NULL;
		if (ldns_buffer_position(s->gap) > 0) {
			size_t len = ldns_rdf_size(s->prior) + ldns_buffer_position(s->gap);
			uint8_t *d = malloc(len);
			memcpy(d, ldns_rdf_data(s->prior), ldns_rdf_size(s->prior));
			memcpy(d + ldns_rdf_size(s->prior), ldns_buffer_begin(s->gap), ldns_buffer_position(s->gap));
			joined = ldns_rdf_new_frm_data(LDNS_RDF_TYPE_UNKNOWN, len, d);
			free(d);
			mac = joined;
		}
		if (ldns_pkt_tsig_sign_next(p, key_name, key_secret, 300, ALG, mac, s->nsent > 0) != LDNS_STATUS_OK) {
			fprintf(stderr, "xfrprimary: cannot sign\n");
			exit(1);
		}
		ldns_rdf_deep_free(joined);
		ldns_buffer_clear(s->gap);
		ldns_rdf_deep_free(s->prior);
		s->prior = ldns_rdf_clone(ldns_rr_rdf(ldns_pkt_tsig(p), 3));
	}
	if (ldns_pkt2wire(&w, p, &n) != LDNS_STATUS_OK)
		return -1;
	if (corrupt)
		w[n - 7] ^= 0x55; /* the MAC's last byte: then original ID, error, other length */
	if (!sign)
		if (ldns_buffer_reserve(s->gap, n))
			ldns_buffer_write(s->gap, w, n);
	uint8_t len[2] = { (uint8_t)(n >> 8), (uint8_t)n };
	int rc = write_all(fd, len, 2) == 0 && write_all(fd, w, n) == 0 ? 0 : -1;
	free(w);
	s->nsent++;
	return rc;
}

/* A reply message to q with the answer records given (NULL-terminated; taken). */
static ldns_pkt *reply(const ldns_pkt *q, ldns_pkt_rcode rcode, ldns_rr **answer)
{
	ldns_pkt *p = ldns_pkt_new();
	ldns_pkt_set_id(p, ldns_pkt_id(q));
	ldns_pkt_set_qr(p, true);
	ldns_pkt_set_aa(p, true);
	ldns_pkt_set_rcode(p, (uint8_t)rcode);
	ldns_pkt_push_rr(p, LDNS_SECTION_QUESTION, ldns_rr_clone(ldns_rr_list_rr(ldns_pkt_question(q), 0)));
	for (size_t i = 0; answer && answer[i]; i++)
		ldns_pkt_push_rr(p, LDNS_SECTION_ANSWER, answer[i]);
	return p;
}

static void answer(int fd, const ldns_pkt *q, const ldns_rdf *query_mac)
{
	ldns_rr *qr = ldns_rr_list_rr(ldns_pkt_question(q), 0);
	char *qname = ldns_rdf2str(ldns_rr_owner(qr));
	ldns_rr_type qt = ldns_rr_get_type(qr);
	size_t mi = 0;
	while (mi < NMODES && !(strncmp(qname, modes[mi], strlen(modes[mi])) == 0 &&
	                        strcmp(qname + strlen(modes[mi]), ".xfr.") == 0))
		mi++;
	struct signer s = { .prior = ldns_rdf_clone(query_mac), .gap = ldns_buffer_new(4096) };
	const char *m = mi < NMODES ? modes[mi] : NULL;
	unsigned serial = m && phase[mi] ? 2 : 1;
	printf("query %s type %d (serial %u)\n", qname, (int)qt, serial);
	fflush(stdout);
	if (m == NULL) {
		ldns_pkt *p = reply(q, LDNS_RCODE_REFUSED, NULL);
		send_msg(fd, p, &s, true, false);
		ldns_pkt_free(p);
	} else if (qt == LDNS_RR_TYPE_SOA) {
		ldns_pkt *p = reply(q, LDNS_RCODE_NOERROR, (ldns_rr *[]){ soa(m, serial), NULL });
		send_msg(fd, p, &s, true, false);
		ldns_pkt_free(p);
	} else if (qt == LDNS_RR_TYPE_IXFR && phase[mi] && strcmp(m, "notimp") == 0) {
		ldns_pkt *p = reply(q, LDNS_RCODE_NOTIMPL, NULL);
		send_msg(fd, p, &s, true, false);
		ldns_pkt_free(p);
	} else if (qt == LDNS_RR_TYPE_IXFR && phase[mi] && strcmp(m, "trunc") == 0) {
		ldns_pkt *p = reply(q, LDNS_RCODE_NOERROR, NULL);
		uint8_t *w = NULL;
		size_t n = 0;
		ldns_pkt2wire(&w, p, &n);
		w[7] = 5; /* ANCOUNT 5, and no record */
		uint8_t len[2] = { (uint8_t)(n >> 8), (uint8_t)n };
		if (write_all(fd, len, 2) != 0 || write_all(fd, w, n) != 0)
			perror("write");
		free(w);
		ldns_pkt_free(p);
	} else if (qt == LDNS_RR_TYPE_IXFR && phase[mi] &&
	           (strcmp(m, "baddel") == 0 || strcmp(m, "badchain") == 0)) {
		bool del = strcmp(m, "baddel") == 0;
		ldns_rr *gone = rr("gone.%s.example.%s.xfr. 60 IN A 192.0.2.9", m, m);
		ldns_rr *v2 = rr("v2.%s.example.%s.xfr. 60 IN A 192.0.2.2", m, m);
		ldns_rr *list[] = { soa(m, 2), soa(m, del ? 1 : 7), del ? gone : soa(m, 2), del ? soa(m, 2) : v2,
			            del ? v2 : soa(m, 2), del ? soa(m, 2) : NULL, NULL };
		if (!del)
			ldns_rr_free(gone);
		ldns_pkt *p = reply(q, LDNS_RCODE_NOERROR, list);
		send_msg(fd, p, &s, true, false);
		ldns_pkt_free(p);
	} else if (qt == LDNS_RR_TYPE_AXFR || qt == LDNS_RR_TYPE_IXFR) {
		/* the whole zone, in three messages */
		bool bad = phase[mi] && (strcmp(m, "badsig") == 0 || strcmp(m, "nosig") == 0 ||
		                         strcmp(m, "lastunsigned") == 0);
		bool gap = phase[mi] && strcmp(m, "gap") == 0;
		ldns_pkt *p1 = reply(q, LDNS_RCODE_NOERROR,
		                     (ldns_rr *[]){ soa(m, serial), rr("%s.xfr. 60 IN NS ns.%s.xfr.", m, m), NULL });
		ldns_pkt *p2 = reply(q, LDNS_RCODE_NOERROR,
		                     (ldns_rr *[]){ rr("v1.%s.example.%s.xfr. 60 IN A 192.0.2.1", m, m),
		                                    serial == 2 ? rr("v2.%s.example.%s.xfr. 60 IN A 192.0.2.2", m, m)
		                                                : NULL,
		                                    NULL });
		ldns_pkt *p3 = reply(q, LDNS_RCODE_NOERROR, (ldns_rr *[]){ soa(m, serial), NULL });
		bool nosig = bad && strcmp(m, "nosig") == 0, last = bad && strcmp(m, "lastunsigned") == 0;
		if (send_msg(fd, p1, &s, !nosig, false) == 0 &&
		    send_msg(fd, p2, &s, !nosig && !gap && !last, bad && strcmp(m, "badsig") == 0) == 0 &&
		    send_msg(fd, p3, &s, !nosig && !last, false) == 0 && qt == LDNS_RR_TYPE_AXFR && !bad)
			phase[mi] = 1;
		ldns_pkt_free(p1);
		ldns_pkt_free(p2);
		ldns_pkt_free(p3);
	} else {
		ldns_pkt *p = reply(q, LDNS_RCODE_NOTIMPL, NULL);
		send_msg(fd, p, &s, true, false);
		ldns_pkt_free(p);
	}
	ldns_rdf_deep_free(s.prior);
	ldns_buffer_free(s.gap);
	free(qname);
}

/* Queries on one connection until the client closes it (or 5 s of silence). */
static void serve(int fd)
{
	for (;;) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		uint8_t len[2], *w;
		if (poll(&pf, 1, 5000) <= 0 || read(fd, len, 2) != 2)
			return;
		size_t n = (size_t)len[0] << 8 | len[1], got = 0;
		if ((w = malloc(n ? n : 1)) == NULL)
			return;
		while (got < n) {
			ssize_t k = read(fd, w + got, n - got);
			if (k <= 0)
				break;
			got += (size_t)k;
		}
		ldns_pkt *q = NULL;
		if (got != n || ldns_wire2pkt(&q, w, n) != LDNS_STATUS_OK || ldns_pkt_qdcount(q) != 1) {
			ldns_pkt_free(q);
			free(w);
			return;
		}
		free(w);
		if (ldns_pkt_tsig(q) == NULL) {
			ldns_pkt *p = reply(q, LDNS_RCODE_REFUSED, NULL);
			uint8_t *o = NULL;
			size_t on = 0;
			ldns_pkt2wire(&o, p, &on);
			uint8_t l[2] = { (uint8_t)(on >> 8), (uint8_t)on };
			if (write_all(fd, l, 2) != 0 || write_all(fd, o, on) != 0)
				perror("write");
			free(o);
			ldns_pkt_free(p);
		} else {
			answer(fd, q, ldns_rr_rdf(ldns_pkt_tsig(q), 3));
		}
		ldns_pkt_free(q);
	}
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: xfrprimary ADDR PORT KEYNAME SECRET\n");
		return 2;
	}
	key_name = argv[3];
	key_secret = argv[4];
	signal(SIGPIPE, SIG_IGN);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2])) };
	if (inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1) {
		fprintf(stderr, "xfrprimary: bad address %s\n", argv[1]);
		return 2;
	}
	int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(ls, 16) != 0) {
		perror("xfrprimary: bind");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		int fd = accept(ls, NULL, NULL);
		if (fd < 0) {
			if (errno == EINTR)
				continue;
			perror("accept");
			return 1;
		}
		serve(fd);
		close(fd);
	}
}
