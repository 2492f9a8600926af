/* SPDX-License-Identifier: BSD-3-Clause */
/* A lying authoritative server (UDP and TCP, IPv4) for test_hostile.sh: each name below its zone misbehaves one way. */
/*
 * Usage: hostile ADDR PORT ZONE     e.g. hostile 127.10.0.6 53 hostile.example.
 *
 * Prints "ready" on stdout once both sockets are bound; runs until SIGTERM
 * or SIGINT.  One thread, one poll loop, libc only.
 *
 * It is authoritative for ZONE and answers by the first label of the query
 * name (case-insensitive).  Every response echoes the query's ID and
 * question, has AA=1 and copies RD; when the query had EDNS the response has
 * an OPT RR echoing the query's ECS option (scope = source) -- unless a mode
 * below says otherwise.  Names are written uncompressed.
 *
 *   ZONE             SOA; NS ns.ZONE (glue: ns.ZONE A ADDR); other types NODATA
 *   ns               A ADDR; other types NODATA
 *   good             A 192.0.2.7 (the control case)
 *   poison           CNAME www.customer.example. plus a forged
 *                    www.customer.example. A 6.6.6.6 (TTL 86400), authority
 *                    customer.example. NS ns.evil.test., additional
 *                    ns.evil.test. A 6.6.6.6; the AD bit set
 *   extra            A 192.0.2.8 plus authority example. and test. NS
 *                    ns.evil.test., additional ns.evil.test. and
 *                    www.customer.example. A 6.6.6.6
 *   ad               A 192.0.2.9 with the AD bit set
 *   ecs              A 192.0.2.10 with an ECS for 203.0.113.99/32 scope 32,
 *                    not the query's (an OPT even when the query had none)
 *   loop             CNAME loop2.ZONE. and loop2.ZONE. CNAME loop.ZONE.
 *   loop2            CNAME loop.ZONE.
 *   c1 .. c40        cK CNAME c(K+1).ZONE.; c41 A 192.0.2.41 (40 hops)
 *   ptrloop          one answer record whose owner is a compression
 *                    pointer to itself
 *   rdlen0           an A record with RDLENGTH 0
 *   tc               TC=1 and no records, over UDP and over TCP
 *   silent           no answer at all (TCP: the connection stays open, unanswered)
 *   fwd              a forwarder's answer (RA=1): CNAME www.customer.example.,
 *                    www.customer.example. A 203.0.113.10 (its true address,
 *                    zones/customer.example.zone.in), plus the unrelated
 *                    www.victim.test. A 6.6.6.6 in the answer section and
 *                    victim.test. NS ns.evil.test. in authority
 *   anything else    NXDOMAIN with the SOA
 *
 * The CNAME modes (poison, loop, loop2, cK, fwd) answer every type, as a
 * CNAME does.  The others misbehave for every type but SOA and NS: those get
 * a plain NODATA, so that a resolver finding the zone cut (partdns asks
 * libunbound for "NAME SOA") gets there and the lie reaches the question
 * that carries ECS.  good, extra, ad, ecs and c41 hold data of type A only:
 * other types are NODATA.
 *
 * Input is checked strictly and anything odd is dropped without an answer:
 * a response, an opcode other than QUERY, a count other than one question
 * (with at most an OPT in the additional section), a compressed or
 * over-long query name, a class other than IN, a zone transfer, an EDNS
 * version other than 0, a malformed ECS option, trailing bytes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_MSG 4096         /* the largest query read, the largest response built */
#define MAX_NAME 255         /* wire form, root label included */
#define MAX_TCP 32           /* TCP connections held at once; a new one drops the least recently active */
#define TCP_IDLE_MS 30000    /* a TCP connection idle this long is closed */
#define UDP_BURST 64         /* datagrams read per poll round */

#define T_A 1
#define T_NS 2
#define T_CNAME 5
#define T_SOA 6
#define T_OPT 41
#define T_IXFR 251
#define T_AXFR 252
#define T_ANY 255
#define C_IN 1
#define OPT_ECS 8

#define R_NOERROR 0
#define R_NXDOMAIN 3
#define R_REFUSED 5

#define TTL 300          /* every true record */
#define TTL_FORGED 86400 /* every lie: a cache that keeps it keeps it long */

static volatile sig_atomic_t stop;

static uint8_t zone[MAX_NAME]; /* wire form, lower case */
static size_t zone_len;
static uint8_t self_addr[4];   /* ADDR: ns.ZONE's address */

struct query {
	uint16_t id;
	bool rd, cd;
	const uint8_t *question; /* qname, qtype, qclass as received */
	size_t question_len;
	const uint8_t *qname;
	size_t qname_len;
	uint16_t qtype;
	bool edns, dnssec_ok;
	uint16_t udp_size;
	bool ecs;
	uint16_t ecs_family;
	uint8_t ecs_source;
	uint8_t ecs_addr[16];
	size_t ecs_addr_len;
};

/* A response being built; err once anything did not fit. */
struct msg {
	uint8_t b[MAX_MSG];
	size_t len;
	uint16_t count[3]; /* answer, authority, additional */
	bool err;
};

enum section { AN, NS, AR };

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint8_t lower(uint8_t c)
{
	return c >= 'A' && c <= 'Z' ? (uint8_t)(c + ('a' - 'A')) : c;
}

/* ---------------------------------------------------------------- names */

/*
 * Text to wire form: "www.customer.example." (absolute; the final dot is
 * optional) or, with in_zone, "loop2" meaning loop2.ZONE ("" is ZONE itself).
 * @return the length, 0 when the name is invalid or too long
 */
static size_t name_from_text(const char *text, bool in_zone, uint8_t *out)
{
	size_t len = 0;
	const char *p = text;
	while (*p != '\0') {
		const char *dot = strchr(p, '.');
		size_t l = dot ? (size_t)(dot - p) : strlen(p);
		if (l == 0 || l > 63 || len + 1 + l + 1 > MAX_NAME)
			return 0;
		out[len++] = (uint8_t)l;
		for (size_t i = 0; i < l; i++)
			out[len++] = lower((uint8_t)p[i]);
		p += l;
		if (*p == '.')
			p++;
	}
	if (in_zone) {
		if (len + zone_len > MAX_NAME)
			return 0;
		memcpy(out + len, zone, zone_len);
		return len + zone_len;
	}
	out[len++] = 0;
	return len;
}

/*
 * How many labels name has above ZONE (0: ZONE itself).
 * @return that count, -1 when name is not ZONE or below it
 */
static int labels_below_zone(const uint8_t *name, size_t len)
{
	size_t off = 0;
	for (int n = 0;; n++) {
		if (len - off == zone_len && memcmp(name + off, zone, zone_len) == 0)
			return n;
		if (off >= len || name[off] == 0)
			return -1;
		off += (size_t)name[off] + 1;
		if (off >= len)
			return -1;
	}
}

/* Is label (length-prefixed, lower case) the text s? */
static bool label_is(const uint8_t *label, const char *s)
{
	size_t l = strlen(s);
	return label[0] == l && memcmp(label + 1, s, l) == 0;
}

/* K for a label "cK" (K = 1..41, no leading zero), else 0. */
static int chain_index(const uint8_t *label)
{
	if (label[0] < 2 || label[0] > 3 || label[1] != 'c' || label[2] < '1' || label[2] > '9')
		return 0;
	int k = label[2] - '0';
	if (label[0] == 3) {
		if (label[3] < '0' || label[3] > '9')
			return 0;
		k = k * 10 + (label[3] - '0');
	}
	return k <= 41 ? k : 0;
}

/* ---------------------------------------------------------------- parsing */

/* Parse the OPT RR's RDATA; @return 0, -1 when malformed. */
static int parse_opt_rdata(const uint8_t *p, size_t len, struct query *q)
{
	size_t off = 0;
	while (off < len) {
		if (len - off < 4)
			return -1;
		uint16_t code = get16(p + off), olen = get16(p + off + 2);
		off += 4;
		if (olen > len - off)
			return -1;
		if (code == OPT_ECS) {
			const uint8_t *o = p + off;
			if (q->ecs || olen < 4)
				return -1;
			uint16_t family = get16(o);
			uint8_t source = o[2], scope = o[3];
			unsigned max = family == 1 ? 32 : family == 2 ? 128 : 0;
			size_t alen = ((size_t)source + 7) / 8;
			/* RFC 7871 section 6: scope 0 in a query, exactly the source bits, the rest zero */
			if (max == 0 || source > max || scope != 0 || olen != 4 + alen)
				return -1;
			if (alen > 0 && source % 8 != 0 && (o[4 + alen - 1] & (0xff >> (source % 8))) != 0)
				return -1;
			q->ecs = true;
			q->ecs_family = family;
			q->ecs_source = source;
			memcpy(q->ecs_addr, o + 4, alen);
			q->ecs_addr_len = alen;
		}
		off += olen;
	}
	return 0;
}

/* Parse a query; @return 0, -1 when it is not one we answer. */
static int parse_query(const uint8_t *p, size_t len, struct query *q)
{
	memset(q, 0, sizeof(*q));
	if (len < 12 || len > MAX_MSG)
		return -1;
	if ((p[2] & 0x80) != 0 || ((p[2] >> 3) & 0x0f) != 0) /* QR, opcode QUERY */
		return -1;
	if (get16(p + 4) != 1 || get16(p + 6) != 0 || get16(p + 8) != 0 || get16(p + 10) > 1)
		return -1;
	q->id = get16(p);
	q->rd = (p[2] & 0x01) != 0;
	q->cd = (p[3] & 0x10) != 0;
	size_t off = 12;
	q->question = p + off;
	q->qname = p + off;
	for (;;) {
		if (off >= len)
			return -1;
		uint8_t l = p[off];
		if (l == 0)
			break;
		if (l > 63) /* no compression (nor extended label types) in a query */
			return -1;
		off += (size_t)l + 1;
		if (off - 12 + 1 > MAX_NAME)
			return -1;
	}
	off++;
	q->qname_len = off - 12;
	if (len - off < 4)
		return -1;
	q->qtype = get16(p + off);
	uint16_t qclass = get16(p + off + 2);
	off += 4;
	q->question_len = off - 12;
	if (qclass != C_IN || q->qtype == T_AXFR || q->qtype == T_IXFR || q->qtype == T_OPT || q->qtype == 0)
		return -1;
	if (get16(p + 10) == 1) {
		/* the OPT RR: root owner, type 41, class = UDP size, TTL = ext-rcode, version, flags */
		if (len - off < 11 || p[off] != 0 || get16(p + off + 1) != T_OPT)
			return -1;
		q->edns = true;
		q->udp_size = get16(p + off + 3);
		if (p[off + 5] != 0 || p[off + 6] != 0) /* extended rcode, version */
			return -1;
		q->dnssec_ok = (p[off + 7] & 0x80) != 0;
		uint16_t rdlen = get16(p + off + 9);
		off += 11;
		if (rdlen > len - off || parse_opt_rdata(p + off, rdlen, q) != 0)
			return -1;
		off += rdlen;
	}
	return off == len ? 0 : -1;
}

/* ---------------------------------------------------------------- building */

static void put(struct msg *m, const void *p, size_t n)
{
	if (m->err || n > sizeof(m->b) - m->len) {
		m->err = true;
		return;
	}
	memcpy(m->b + m->len, p, n);
	m->len += n;
}

static void put8(struct msg *m, uint8_t v)
{
	put(m, &v, 1);
}

static void put16(struct msg *m, uint16_t v)
{
	uint8_t b[2] = { (uint8_t)(v >> 8), (uint8_t)v };
	put(m, b, 2);
}

static void put32(struct msg *m, uint32_t v)
{
	uint8_t b[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v };
	put(m, b, 4);
}

/* An RR's owner, type, class IN and TTL; then its RDLENGTH and RDATA follow. */
static void rr_head(struct msg *m, enum section s, const uint8_t *owner, size_t owner_len, uint16_t type,
                    uint32_t ttl)
{
	put(m, owner, owner_len);
	put16(m, type);
	put16(m, C_IN);
	put32(m, ttl);
	m->count[s]++;
}

static void rr_a(struct msg *m, enum section s, const uint8_t *owner, size_t owner_len, uint32_t ttl,
                 const uint8_t addr[4])
{
	rr_head(m, s, owner, owner_len, T_A, ttl);
	put16(m, 4);
	put(m, addr, 4);
}

/* A record whose RDATA is one name (CNAME, NS). */
static void rr_name(struct msg *m, enum section s, const uint8_t *owner, size_t owner_len, uint16_t type,
                    uint32_t ttl, const uint8_t *target, size_t target_len)
{
	rr_head(m, s, owner, owner_len, type, ttl);
	put16(m, (uint16_t)target_len);
	put(m, target, target_len);
}

/* The same with names in text (see name_from_text): owner and target each absolute or in ZONE. */
static void rr_text(struct msg *m, enum section s, const char *owner, bool owner_in_zone, uint16_t type,
                    uint32_t ttl, const char *target, bool target_in_zone)
{
	uint8_t o[MAX_NAME], t[MAX_NAME];
	size_t ol = name_from_text(owner, owner_in_zone, o), tl = name_from_text(target, target_in_zone, t);
	if (ol == 0 || tl == 0) {
		m->err = true;
		return;
	}
	rr_name(m, s, o, ol, type, ttl, t, tl);
}

static void rr_a_text(struct msg *m, enum section s, const char *owner, bool owner_in_zone, uint32_t ttl,
                      uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
	uint8_t o[MAX_NAME], addr[4] = { a, b, c, d };
	size_t ol = name_from_text(owner, owner_in_zone, o);
	if (ol == 0) {
		m->err = true;
		return;
	}
	rr_a(m, s, o, ol, ttl, addr);
}

static void rr_soa(struct msg *m, enum section s)
{
	uint8_t mname[MAX_NAME], rname[MAX_NAME];
	size_t ml = name_from_text("ns", true, mname), rl = name_from_text("hostmaster", true, rname);
	if (ml == 0 || rl == 0) {
		m->err = true;
		return;
	}
	rr_head(m, s, zone, zone_len, T_SOA, TTL);
	put16(m, (uint16_t)(ml + rl + 20));
	put(m, mname, ml);
	put(m, rname, rl);
	put32(m, 1);     /* serial */
	put32(m, 3600);  /* refresh */
	put32(m, 600);   /* retry */
	put32(m, 86400); /* expire */
	put32(m, 60);    /* negative TTL */
}

/* The OPT RR, with an ECS option when family != 0. */
static void rr_opt(struct msg *m, bool dnssec_ok, uint16_t family, uint8_t source, uint8_t scope,
                   const uint8_t *addr, size_t addr_len)
{
	put8(m, 0);
	put16(m, T_OPT);
	put16(m, 1232);
	put32(m, dnssec_ok ? 0x8000 : 0);
	if (family == 0) {
		put16(m, 0);
	} else {
		put16(m, (uint16_t)(8 + addr_len));
		put16(m, OPT_ECS);
		put16(m, (uint16_t)(4 + addr_len));
		put16(m, family);
		put8(m, source);
		put8(m, scope);
		put(m, addr, addr_len);
	}
	m->count[AR]++;
}

/* The OPT echoing the query's ECS with scope = source (none when the query had no EDNS). */
static void opt_echo(struct msg *m, const struct query *q)
{
	if (!q->edns)
		return;
	if (q->ecs)
		rr_opt(m, q->dnssec_ok, q->ecs_family, q->ecs_source, q->ecs_source, q->ecs_addr, q->ecs_addr_len);
	else
		rr_opt(m, q->dnssec_ok, 0, 0, 0, NULL, 0);
}

/* Header flags of a response. */
struct flags {
	bool aa, tc, ra, ad;
	uint8_t rcode;
};

/* Header and question; the counts are filled in by finish(). */
static void start(struct msg *m, const struct query *q)
{
	memset(m->count, 0, sizeof(m->count));
	m->len = 0;
	m->err = false;
	put16(m, q->id);
	put16(m, 0);
	put16(m, 1);
	put16(m, 0);
	put16(m, 0);
	put16(m, 0);
	put(m, q->question, q->question_len);
}

static void finish(struct msg *m, const struct query *q, const struct flags *f)
{
	m->b[2] = (uint8_t)(0x80 | (f->aa ? 0x04 : 0) | (f->tc ? 0x02 : 0) | (q->rd ? 0x01 : 0));
	m->b[3] = (uint8_t)((f->ra ? 0x80 : 0) | (f->ad ? 0x20 : 0) | (q->cd ? 0x10 : 0) | (f->rcode & 0x0f));
	m->b[6] = (uint8_t)(m->count[AN] >> 8);
	m->b[7] = (uint8_t)m->count[AN];
	m->b[8] = (uint8_t)(m->count[NS] >> 8);
	m->b[9] = (uint8_t)m->count[NS];
	m->b[10] = (uint8_t)(m->count[AR] >> 8);
	m->b[11] = (uint8_t)m->count[AR];
}

/* ---------------------------------------------------------------- answering */

/*
 * Build the response to q in m.
 * @return false to stay silent
 */
static bool respond(const struct query *q, struct msg *m)
{
	static const uint8_t forged[4] = { 6, 6, 6, 6 };
	struct flags f = { .aa = true, .rcode = R_NOERROR };
	uint8_t lname[MAX_NAME];
	for (size_t i = 0; i < q->qname_len; i++)
		lname[i] = lower(q->qname[i]);
	const uint8_t *own = q->qname; /* records owned by the query name keep its case */
	size_t own_len = q->qname_len;
	bool type_a = q->qtype == T_A || q->qtype == T_ANY;
	bool infra = q->qtype == T_SOA || q->qtype == T_NS; /* zone-cut lookups: a plain NODATA */

	start(m, q);
	int depth = labels_below_zone(lname, q->qname_len);
	if (depth < 0) {
		f.aa = false;
		f.rcode = R_REFUSED;
		opt_echo(m, q);
		finish(m, q, &f);
		return true;
	}
	const uint8_t *label = lname;
	enum { NODATA, NXDOMAIN, DONE } outcome = DONE;

	if (depth == 0) {
		if (q->qtype == T_SOA || q->qtype == T_ANY) {
			rr_soa(m, AN);
		} else if (q->qtype == T_NS) {
			rr_text(m, AN, "", true, T_NS, TTL, "ns", true);
			rr_a_text(m, AR, "ns", true, TTL, self_addr[0], self_addr[1], self_addr[2], self_addr[3]);
		} else {
			outcome = NODATA;
		}
	} else if (depth > 1) {
		outcome = NXDOMAIN;
	} else if (label_is(label, "ns")) {
		if (type_a)
			rr_a(m, AN, own, own_len, TTL, self_addr);
		else
			outcome = NODATA;
	} else if (label_is(label, "poison")) {
		rr_text(m, AN, "poison", true, T_CNAME, TTL, "www.customer.example.", false);
		rr_a_text(m, AN, "www.customer.example.", false, TTL_FORGED, 6, 6, 6, 6);
		rr_text(m, NS, "customer.example.", false, T_NS, TTL_FORGED, "ns.evil.test.", false);
		rr_a_text(m, AR, "ns.evil.test.", false, TTL_FORGED, 6, 6, 6, 6);
		f.ad = true;
	} else if (label_is(label, "loop")) {
		rr_text(m, AN, "loop", true, T_CNAME, TTL, "loop2", true);
		rr_text(m, AN, "loop2", true, T_CNAME, TTL, "loop", true);
	} else if (label_is(label, "loop2")) {
		rr_text(m, AN, "loop2", true, T_CNAME, TTL, "loop", true);
	} else if (chain_index(label) != 0) {
		int k = chain_index(label);
		if (k <= 40) {
			char owner[16], target[16];
			snprintf(owner, sizeof(owner), "c%d", k);
			snprintf(target, sizeof(target), "c%d", k + 1);
			rr_text(m, AN, owner, true, T_CNAME, TTL, target, true);
		} else if (type_a) {
			rr_a_text(m, AN, "c41", true, TTL, 192, 0, 2, 41);
		} else {
			outcome = NODATA;
		}
	} else if (label_is(label, "fwd")) {
		rr_text(m, AN, "fwd", true, T_CNAME, TTL, "www.customer.example.", false);
		if (type_a)
			rr_a_text(m, AN, "www.customer.example.", false, TTL, 203, 0, 113, 10);
		rr_a_text(m, AN, "www.victim.test.", false, TTL_FORGED, 6, 6, 6, 6);
		rr_text(m, NS, "victim.test.", false, T_NS, TTL_FORGED, "ns.evil.test.", false);
		f.ra = q->rd;
	} else if (label_is(label, "good") || label_is(label, "extra") || label_is(label, "ad") ||
	           label_is(label, "ecs") || label_is(label, "ptrloop") || label_is(label, "rdlen0") ||
	           label_is(label, "tc") || label_is(label, "silent")) {
		if (infra) {
			outcome = NODATA;
		} else if (label_is(label, "silent")) {
			return false;
		} else if (label_is(label, "tc")) {
			f.tc = true;
		} else if (label_is(label, "ptrloop")) {
			/* the owner: a pointer to its own offset */
			size_t at = m->len;
			put16(m, (uint16_t)(0xc000 | at));
			put16(m, T_A);
			put16(m, C_IN);
			put32(m, TTL);
			put16(m, 4);
			put(m, forged, 4);
			m->count[AN]++;
		} else if (label_is(label, "rdlen0")) {
			rr_head(m, AN, own, own_len, T_A, TTL);
			put16(m, 0);
		} else if (!type_a) {
			outcome = NODATA;
		} else if (label_is(label, "good")) {
			rr_a_text(m, AN, "good", true, TTL, 192, 0, 2, 7);
		} else if (label_is(label, "extra")) {
			rr_a_text(m, AN, "extra", true, TTL, 192, 0, 2, 8);
			rr_text(m, NS, "example.", false, T_NS, TTL_FORGED, "ns.evil.test.", false);
			rr_text(m, NS, "test.", false, T_NS, TTL_FORGED, "ns.evil.test.", false);
			rr_a_text(m, AR, "ns.evil.test.", false, TTL_FORGED, 6, 6, 6, 6);
			rr_a_text(m, AR, "www.customer.example.", false, TTL_FORGED, 6, 6, 6, 6);
		} else if (label_is(label, "ad")) {
			rr_a_text(m, AN, "ad", true, TTL, 192, 0, 2, 9);
			f.ad = true;
		} else { /* ecs: a scope for someone else's subnet */
			static const uint8_t other[4] = { 203, 0, 113, 99 };
			rr_a_text(m, AN, "ecs", true, TTL, 192, 0, 2, 10);
			rr_opt(m, q->dnssec_ok, 1, 32, 32, other, 4);
			finish(m, q, &f);
			return !m->err;
		}
	} else {
		outcome = NXDOMAIN;
	}

	if (outcome == NXDOMAIN)
		f.rcode = R_NXDOMAIN;
	if (outcome != DONE)
		rr_soa(m, NS);
	opt_echo(m, q);
	finish(m, q, &f);
	return !m->err;
}

/* The response to a query in p[0..len) into m; @return false when there is none (bad query, silence). */
static bool handle(const uint8_t *p, size_t len, struct msg *m)
{
	struct query q;
	if (parse_query(p, len, &q) != 0)
		return false;
	return respond(&q, m);
}

/* ---------------------------------------------------------------- sockets */

struct conn {
	int fd; /* -1: free */
	long last_ms;
	uint8_t in[2 + MAX_MSG];
	size_t in_len;
	uint8_t out[2 + MAX_MSG];
	size_t out_len, out_off;
};

static struct conn conns[MAX_TCP];

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static void conn_close(struct conn *c)
{
	close(c->fd);
	c->fd = -1;
	c->in_len = c->out_len = c->out_off = 0;
}

static void udp_read(int fd)
{
	static uint8_t buf[MAX_MSG + 1];
	static struct msg m;
	for (int i = 0; i < UDP_BURST; i++) {
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
		if (n < 0)
			return;
		if ((size_t)n > MAX_MSG || fl != sizeof(from) || from.sin_port == 0)
			continue;
		struct query q;
		if (parse_query(buf, (size_t)n, &q) != 0 || !respond(&q, &m))
			continue;
		size_t limit = 512;
		if (q.edns && q.udp_size > limit)
			limit = q.udp_size < MAX_MSG ? q.udp_size : MAX_MSG;
		if (m.len > limit) { /* header and question only, TC */
			m.len = 12 + q.question_len;
			m.b[2] |= 0x02;
			memset(m.b + 6, 0, 6);
		}
		(void)sendto(fd, m.b, m.len, 0, (struct sockaddr *)&from, fl);
	}
}

static void tcp_accept(int lfd)
{
	for (;;) {
		int fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			return;
		if (set_nonblock(fd) != 0) {
			close(fd);
			continue;
		}
		struct conn *slot = NULL, *oldest = NULL;
		for (int i = 0; i < MAX_TCP; i++) {
			if (conns[i].fd < 0) {
				slot = &conns[i];
				break;
			}
			if (oldest == NULL || conns[i].last_ms < oldest->last_ms)
				oldest = &conns[i];
		}
		if (slot == NULL) {
			conn_close(oldest);
			slot = oldest;
		}
		slot->fd = fd;
		slot->last_ms = now_ms();
		slot->in_len = slot->out_len = slot->out_off = 0;
	}
}

/* Answer the complete messages in c's input while its output is empty. */
static void tcp_process(struct conn *c)
{
	static struct msg m;
	while (c->out_len == 0 && c->in_len >= 2) {
		size_t ml = get16(c->in);
		if (ml < 12 || ml > MAX_MSG) {
			conn_close(c);
			return;
		}
		if (c->in_len < 2 + ml)
			return;
		if (handle(c->in + 2, ml, &m)) {
			c->out[0] = (uint8_t)(m.len >> 8);
			c->out[1] = (uint8_t)m.len;
			memcpy(c->out + 2, m.b, m.len);
			c->out_len = 2 + m.len;
			c->out_off = 0;
		}
		memmove(c->in, c->in + 2 + ml, c->in_len - 2 - ml);
		c->in_len -= 2 + ml;
	}
}

static void tcp_write(struct conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				conn_close(c);
			return;
		}
		c->out_off += (size_t)n;
	}
	c->out_len = c->out_off = 0;
	tcp_process(c);
}

static void tcp_read(struct conn *c)
{
	ssize_t n = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, 0);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
		conn_close(c);
		return;
	}
	if (n < 0)
		return;
	c->in_len += (size_t)n;
	c->last_ms = now_ms();
	tcp_process(c);
	if (c->fd >= 0 && c->out_len > 0)
		tcp_write(c);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: hostile ADDR PORT ZONE\n");
		return 2;
	}
	char *end;
	long port = strtol(argv[2], &end, 10);
	struct sockaddr_in sa = { .sin_family = AF_INET };
	if (*argv[2] == '\0' || *end != '\0' || port < 1 || port > 65535 ||
	    inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1) {
		fprintf(stderr, "hostile: bad address or port: %s %s\n", argv[1], argv[2]);
		return 2;
	}
	sa.sin_port = htons((uint16_t)port);
	memcpy(self_addr, &sa.sin_addr, 4);
	zone_len = name_from_text(argv[3], false, zone);
	if (zone_len == 0 && strcmp(argv[3], ".") != 0) {
		fprintf(stderr, "hostile: bad zone name %s\n", argv[3]);
		return 2;
	}
	if (zone_len == 0) {
		zone[0] = 0;
		zone_len = 1;
	}

	struct sigaction act;
	memset(&act, 0, sizeof(act));
	act.sa_handler = on_term; /* no SA_RESTART: poll returns EINTR */
	sigaction(SIGTERM, &act, NULL);
	sigaction(SIGINT, &act, NULL);
	signal(SIGPIPE, SIG_IGN);

	int one = 1;
	int ufd = socket(AF_INET, SOCK_DGRAM, 0);
	int tfd = socket(AF_INET, SOCK_STREAM, 0);
	if (ufd < 0 || tfd < 0) {
		perror("hostile: socket");
		return 1;
	}
	setsockopt(tfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ufd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || bind(tfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(tfd, 64) != 0 || set_nonblock(ufd) != 0 || set_nonblock(tfd) != 0) {
		perror("hostile: bind");
		return 1;
	}
	for (int i = 0; i < MAX_TCP; i++)
		conns[i].fd = -1;
	printf("ready\n");
	fflush(stdout);

	struct pollfd pfd[2 + MAX_TCP];
	int map[2 + MAX_TCP];
	while (!stop) {
		int n = 0;
		pfd[n++] = (struct pollfd){ .fd = ufd, .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = tfd, .events = POLLIN };
		long now = now_ms();
		for (int i = 0; i < MAX_TCP; i++) {
			struct conn *c = &conns[i];
			if (c->fd < 0)
				continue;
			if (now - c->last_ms > TCP_IDLE_MS) {
				conn_close(c);
				continue;
			}
			/* read only while there is room and no answer is pending */
			short ev = c->out_len > 0 ? POLLOUT : c->in_len < sizeof(c->in) ? POLLIN : 0;
			map[n] = i;
			pfd[n++] = (struct pollfd){ .fd = c->fd, .events = ev };
		}
		int r = poll(pfd, (nfds_t)n, 1000);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			perror("hostile: poll");
			return 1;
		}
		if (pfd[0].revents & POLLIN)
			udp_read(ufd);
		if (pfd[1].revents & POLLIN)
			tcp_accept(tfd);
		for (int k = 2; k < n; k++) {
			struct conn *c = &conns[map[k]];
			if (c->fd != pfd[k].fd || pfd[k].revents == 0)
				continue; /* closed or replaced by tcp_accept this round */
			if (pfd[k].revents & (POLLERR | POLLNVAL)) {
				conn_close(c);
			} else if (pfd[k].revents & POLLOUT) {
				c->last_ms = now_ms();
				tcp_write(c);
			} else if (pfd[k].revents & (POLLIN | POLLHUP)) {
				tcp_read(c);
			}
		}
	}
	for (int i = 0; i < MAX_TCP; i++)
		if (conns[i].fd >= 0)
			conn_close(&conns[i]);
	close(ufd);
	close(tfd);
	return 0;
}
