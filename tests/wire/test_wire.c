/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of wire/, with ldns as an independent check of every written message. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ldns/ldns.h>

#include "wire/answer.h"
#include "wire/names.h"
#include "wire/parse.h"
#include "wire/upstream.h"
#include "wire/wire.h"

/* ---- helpers ---- */

#define EXPECT_INT(row, got, want)                                                                \
	do {                                                                                      \
		long long g_ = (long long)(got), w_ = (long long)(want);                          \
		if (g_ != w_) {                                                                   \
			print_error("%s: %s = %lld, want %lld\n", (row), #got, g_, w_);           \
			fail();                                                                   \
		}                                                                                 \
	} while (0)

#define EXPECT_TRUE(row, cond)                                                                    \
	do {                                                                                      \
		if (!(cond)) {                                                                    \
			print_error("%s: expected %s\n", (row), #cond);                           \
			fail();                                                                   \
		}                                                                                 \
	} while (0)

static void expect_bytes(const char *row, const uint8_t *got, size_t got_len, const uint8_t *want, size_t want_len)
{
	if (got_len == want_len && memcmp(got, want, got_len) == 0)
		return;
	print_error("%s: bytes differ (got %zu, want %zu)\n  got: ", row, got_len, want_len);
	for (size_t i = 0; i < got_len; i++)
		print_error("%02x", got[i]);
	print_error("\n want: ");
	for (size_t i = 0; i < want_len; i++)
		print_error("%02x", want[i]);
	print_error("\n");
	fail();
}

/* Hex digits to bytes, whitespace ignored. */
static size_t hex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;
	int hi = -1;
	for (; *s != '\0'; s++) {
		int v;
		if (*s >= '0' && *s <= '9')
			v = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			v = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			v = *s - 'A' + 10;
		else
			continue;
		if (hi < 0) {
			hi = v;
		} else {
			assert_true(n < cap);
			out[n++] = (uint8_t)(hi << 4 | v);
			hi = -1;
		}
	}
	assert_int_equal(hi, -1);
	return n;
}

/* A message under construction. Names are written by a converter local to
 * the tests (no escapes), so the tests do not depend on wire_name_from_text. */
struct pkt {
	uint8_t b[WIRE_MAX_MSG + 1024];
	size_t n;
};

static void put(struct pkt *p, const void *d, size_t n)
{
	assert_true(p->n + n <= sizeof(p->b));
	memcpy(p->b + p->n, d, n);
	p->n += n;
}

static void put8(struct pkt *p, uint8_t v)
{
	put(p, &v, 1);
}

static void put16(struct pkt *p, uint16_t v)
{
	uint8_t b[2] = {(uint8_t)(v >> 8), (uint8_t)v};
	put(p, b, 2);
}

static void put32(struct pkt *p, uint32_t v)
{
	uint8_t b[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
	put(p, b, 4);
}

static void puthex(struct pkt *p, const char *h)
{
	uint8_t tmp[4096];
	size_t n = hex(h, tmp, sizeof(tmp));
	put(p, tmp, n);
}

/* Literal (uncompressed) name; "." is the root. Returns its offset. */
static size_t putname(struct pkt *p, const char *text)
{
	size_t at = p->n;
	const char *s = text;
	while (*s != '\0' && strcmp(s, ".") != 0) {
		const char *dot = strchr(s, '.');
		size_t l = dot ? (size_t)(dot - s) : strlen(s);
		put8(p, (uint8_t)l);
		put(p, s, l);
		s += l;
		if (*s == '.')
			s++;
	}
	put8(p, 0);
	return at;
}

static void putptr(struct pkt *p, size_t off)
{
	put16(p, (uint16_t)(0xc000 | off));
}

static void hdr(struct pkt *p, uint16_t id, uint16_t flags, uint16_t qd, uint16_t an, uint16_t ns, uint16_t ar)
{
	p->n = 0;
	put16(p, id);
	put16(p, flags);
	put16(p, qd);
	put16(p, an);
	put16(p, ns);
	put16(p, ar);
}

static void set_count(struct pkt *p, int which, uint16_t v)
{
	p->b[4 + 2 * which] = (uint8_t)(v >> 8);
	p->b[5 + 2 * which] = (uint8_t)v;
}

/* Type, class, TTL and a RDLENGTH placeholder after an owner; returns the placeholder offset. */
static size_t rr_begin(struct pkt *p, uint16_t type, uint16_t rclass, uint32_t ttl)
{
	put16(p, type);
	put16(p, rclass);
	put32(p, ttl);
	size_t at = p->n;
	put16(p, 0);
	return at;
}

static void rr_end(struct pkt *p, size_t at)
{
	size_t len = p->n - at - 2;
	p->b[at] = (uint8_t)(len >> 8);
	p->b[at + 1] = (uint8_t)len;
}

static void put_a(struct pkt *p, const char *ip)
{
	uint8_t a[4];
	assert_int_equal(inet_pton(AF_INET, ip, a), 1);
	put(p, a, 4);
}

static void put_aaaa(struct pkt *p, const char *ip)
{
	uint8_t a[16];
	assert_int_equal(inet_pton(AF_INET6, ip, a), 1);
	put(p, a, 16);
}

/* OPT record: udp size, extended rcode, DO, options as hex. */
static void put_opt(struct pkt *p, uint16_t udp, uint8_t ext, uint8_t version, bool do_bit, const char *options)
{
	put8(p, 0);
	size_t at = rr_begin(p, WIRE_TYPE_OPT, udp, (uint32_t)ext << 24 | (uint32_t)version << 16 | (do_bit ? 0x8000u : 0));
	if (options != NULL)
		puthex(p, options);
	rr_end(p, at);
}

static void put_soa(struct pkt *p, size_t zone_ptr, uint32_t ttl, uint32_t minimum)
{
	putptr(p, zone_ptr);
	size_t at = rr_begin(p, WIRE_TYPE_SOA, WIRE_CLASS_IN, ttl);
	put8(p, 3);
	put(p, "ns1", 3);
	putptr(p, zone_ptr);
	put8(p, 10);
	put(p, "hostmaster", 10);
	putptr(p, zone_ptr);
	put32(p, 2024010101);
	put32(p, 7200);
	put32(p, 3600);
	put32(p, 1209600);
	put32(p, minimum);
	rr_end(p, at);
}

static ldns_pkt *must_parse(const char *row, const uint8_t *b, size_t n)
{
	ldns_pkt *pk = NULL;
	ldns_status st = ldns_wire2pkt(&pk, b, n);
	if (st != LDNS_STATUS_OK) {
		print_error("%s: ldns cannot parse our message: %s\n", row, ldns_get_errorstr_by_id(st));
		fail();
	}
	return pk;
}

/* Parse a client query that must be valid. */
static void query_from(const char *row, struct pkt *p, struct wire_query *q)
{
	int rc = wire_parse_query(p->b, p->n, q);
	if (rc != 0) {
		print_error("%s: client query does not parse: %s\n", row, wire_strerror(rc));
		fail();
	}
}

/* A client query: name as given (case kept), qtype, flags word, EDNS (udp 0 = none), ECS as hex option. */
static void make_query(struct pkt *p, uint16_t id, uint16_t flags, const char *name, uint16_t qtype, uint16_t udp,
		       bool do_bit, const char *options)
{
	hdr(p, id, flags, 1, 0, 0, udp ? 1 : 0);
	putname(p, name);
	put16(p, qtype);
	put16(p, WIRE_CLASS_IN);
	if (udp)
		put_opt(p, udp, 0, 0, do_bit, options);
}

static uint32_t ttl_of(const ldns_rr_list *l, size_t i)
{
	assert_true(i < ldns_rr_list_rr_count(l));
	return ldns_rr_ttl(ldns_rr_list_rr(l, i));
}

/* Text of an RR's owner, lower-cased by ldns? No: ldns keeps case. Caller frees. */
static char *owner_of(const ldns_rr_list *l, size_t i)
{
	assert_true(i < ldns_rr_list_rr_count(l));
	return ldns_rdf2str(ldns_rr_owner(ldns_rr_list_rr(l, i)));
}

static void ecs_v4(struct ecs *e, const char *ip, uint8_t source, uint8_t scope)
{
	memset(e, 0, sizeof(*e));
	e->family = ECS_FAMILY_IPV4;
	e->source = source;
	e->scope = scope;
	assert_int_equal(inet_pton(AF_INET, ip, e->addr), 1);
	/* the callers pass canonical prefixes */
}

/* ---- client query parsing ---- */

#define Q_WWW "03777777 076578616d706c65 03636f6d 00 0001 0001"
#define HDR(fl, qd, an, ns, ar) "1234 " fl " " qd " " an " " ns " " ar " "
#define OPT0 "00 0029 04d0 00 00 0000 0000"
#define OPT_HDR(rdlen) "00 0029 04d0 00 00 0000 " rdlen " "
#define ECS24 "0008 0007 0001 18 00 c63364"
#define ECS56 "0008 000b 0002 38 00 20010db8000100"
#define ECS0 "0008 0004 0001 00 00"
#define COOKIE "000a 0008 0102030405060708"
#define ANS_A "c00c 0001 0001 0000003c 0004 c6336401"

struct parse_row {
	const char *msg;
	const char *hex;
	int rc;
	bool question_ok, has_edns, has_ecs;
	uint16_t qtype, udp;
	bool do_bit;
	uint8_t version;
};

static const struct parse_row parse_rows[] = {
	{"plain query", HDR("0100", "0001", "0000", "0000", "0000") Q_WWW, 0, true, false, false, 1, 0, false, 0},
	{"EDNS 4096 with DO", HDR("0100", "0001", "0000", "0000", "0001") Q_WWW "00 0029 1000 00 00 8000 0000", 0,
	 true, true, false, 1, 4096, true, 0},
	{"EDNS with ECS /24", HDR("0100", "0001", "0000", "0000", "0001") Q_WWW OPT_HDR("000b") ECS24, 0, true, true,
	 true, 1, 1232, false, 0},
	{"EDNS with ECS IPv6 /56", HDR("0100", "0001", "0000", "0000", "0001") Q_WWW OPT_HDR("000f") ECS56, 0, true,
	 true, true, 1, 1232, false, 0},
	{"ECS source 0 (client opts out)", HDR("0100", "0001", "0000", "0000", "0001") Q_WWW OPT_HDR("0008") ECS0, 0,
	 true, true, true, 1, 1232, false, 0},
	{"unknown option ignored", HDR("0100", "0001", "0000", "0000", "0001") Q_WWW OPT_HDR("000c") COOKIE, 0, true,
	 true, false, 1, 1232, false, 0},
	{"cookie then ECS", HDR("0100", "0001", "0000", "0000", "0001") Q_WWW OPT_HDR("0017") COOKIE ECS24, 0, true,
	 true, true, 1, 1232, false, 0},
	{"UDP size below 512 kept raw", HDR("0100", "0001", "0000", "0000", "0001") Q_WWW "00 0029 0100 00 00 0000 0000",
	 0, true, true, false, 1, 256, false, 0},
	{"qtype AAAA", HDR("0100", "0001", "0000", "0000", "0000") "03777777 076578616d706c65 03636f6d 00 001c 0001", 0,
	 true, false, false, 28, 0, false, 0},
	{"root qname", HDR("0000", "0001", "0000", "0000", "0000") "00 0002 0001", 0, true, false, false, 2, 0, false, 0},
	{"answer record skipped", HDR("0100", "0001", "0001", "0000", "0000") Q_WWW ANS_A, 0, true, false, false, 1, 0,
	 false, 0},
	{"authority NS with pointers skipped",
	 HDR("0100", "0001", "0000", "0001", "0000") Q_WWW "c010 0002 0001 00000e10 0006 036e7331c010", 0, true, false,
	 false, 1, 0, false, 0},
	{"additional record before OPT", HDR("0100", "0001", "0000", "0000", "0002") Q_WWW ANS_A OPT0, 0, true, true,
	 false, 1, 1232, false, 0},
	{"backward pointer in additional owner",
	 HDR("0100", "0001", "0000", "0000", "0001") Q_WWW "0161 c00c 0001 0001 0000003c 0004 c6336401", 0, true, false,
	 false, 1, 0, false, 0},
	{"two-hop pointer chain",
	 HDR("0100", "0001", "0000", "0000", "0002") Q_WWW "0162 c00c 0001 0001 0000003c 0004 c6336401"
							 "0161 c021 0001 0001 0000003c 0004 c6336401",
	 0, true, false, false, 1, 0, false, 0},
	{"empty packet", "", WIRE_E_DROP, false, false, false, 0, 0, false, 0},
	{"11-byte header", "1234 0100 0001 0000 0000 00", WIRE_E_DROP, false, false, false, 0, 0, false, 0},
	{"QR set", HDR("8100", "0001", "0000", "0000", "0000") Q_WWW, WIRE_E_DROP, false, false, false, 0, 0, false, 0},
	{"opcode IQUERY", HDR("0900", "0001", "0000", "0000", "0000") Q_WWW, WIRE_E_NOTIMP, false, false, false, 0, 0,
	 false, 0},
	{"opcode STATUS", HDR("1100", "0001", "0000", "0000", "0000") Q_WWW, WIRE_E_NOTIMP, false, false, false, 0, 0,
	 false, 0},
	{"opcode NOTIFY", HDR("2000", "0001", "0000", "0000", "0000") Q_WWW, WIRE_NOTIFY, true, false, false, 1, 0,
	 false, 0},
	{"NOTIFY for SOA, AA, the new SOA in its answer",
	 HDR("2400", "0001", "0001", "0000", "0000") "03777777 076578616d706c65 03636f6d 00 0006 0001"
	 "c00c 0006 0001 00000e10 0016 00 00 00000002 00000e10 00000258 00093a80 0000003c",
	 WIRE_NOTIFY, true, false, false, 6, 0, false, 0},
	{"NOTIFY with a truncated answer", HDR("2400", "0001", "0001", "0000", "0000") Q_WWW "c00c 0006 0001 0000",
	 WIRE_E_FORMERR, true, false, false, 1, 0, false, 0},
	{"NOTIFY with EDNS version 1", HDR("2000", "0001", "0000", "0000", "0001") Q_WWW "00 0029 04d0 00 01 0000 0000",
	 WIRE_E_BADVERS, true, true, false, 1, 1232, false, 1},
	{"opcode UPDATE with OPT", HDR("2800", "0001", "0000", "0000", "0001") Q_WWW OPT0, WIRE_E_NOTIMP, false, false,
	 false, 0, 0, false, 0},
	{"qdcount 0", HDR("0100", "0000", "0000", "0000", "0000"), WIRE_E_FORMERR, false, false, false, 0, 0, false, 0},
	{"qdcount 2", HDR("0100", "0002", "0000", "0000", "0000") Q_WWW Q_WWW, WIRE_E_FORMERR, false, false, false, 0,
	 0, false, 0},
	{"header only", HDR("0100", "0001", "0000", "0000", "0000"), WIRE_E_FORMERR, false, false, false, 0, 0, false,
	 0},
	{"label type 0x40", HDR("0100", "0001", "0000", "0000", "0000") "4100 0001 0001", WIRE_E_FORMERR, false, false,
	 false, 0, 0, false, 0},
	{"label type 0x80", HDR("0100", "0001", "0000", "0000", "0000") "8100 0001 0001", WIRE_E_FORMERR, false, false,
	 false, 0, 0, false, 0},
	{"qname pointer to itself", HDR("0100", "0001", "0000", "0000", "0000") "c00c 0001 0001", WIRE_E_FORMERR,
	 false, false, false, 0, 0, false, 0},
	{"qname pointer into header", HDR("0100", "0001", "0000", "0000", "0000") "c005 0001 0001", WIRE_E_FORMERR,
	 false, false, false, 0, 0, false, 0},
	{"qname loop", HDR("0100", "0001", "0000", "0000", "0000") "03777777 c00c 0001 0001", WIRE_E_FORMERR, false,
	 false, false, 0, 0, false, 0},
	{"qname truncated", HDR("0100", "0001", "0000", "0000", "0000") "03777777 07657861", WIRE_E_FORMERR, false,
	 false, false, 0, 0, false, 0},
	{"qname pointer cut", HDR("0100", "0001", "0000", "0000", "0000") "03777777 c0", WIRE_E_FORMERR, false, false,
	 false, 0, 0, false, 0},
	{"qclass missing", HDR("0100", "0001", "0000", "0000", "0000") "03777777 076578616d706c65 03636f6d 00 0001",
	 WIRE_E_FORMERR, false, false, false, 0, 0, false, 0},
	{"forward pointer in answer", HDR("0100", "0001", "0001", "0000", "0000") Q_WWW "c023 0001 0001 0000003c 0004 c6336401",
	 WIRE_E_FORMERR, true, false, false, 1, 0, false, 0},
	{"additional owner points at itself",
	 HDR("0100", "0001", "0000", "0000", "0001") Q_WWW "0161 c021 0001 0001 0000003c 0004 c6336401", WIRE_E_FORMERR,
	 true, false, false, 1, 0, false, 0},
	{"answer truncated", HDR("0100", "0001", "0001", "0000", "0000") Q_WWW "c00c 0001 00", WIRE_E_FORMERR, true,
	 false, false, 1, 0, false, 0},
	{"ancount with nothing", HDR("0100", "0001", "0001", "0000", "0000") Q_WWW, WIRE_E_FORMERR, true, false, false,
	 1, 0, false, 0},
	{"rdlength past end", HDR("0100", "0001", "0001", "0000", "0000") Q_WWW "c00c 0001 0001 0000003c 0010 c6336401",
	 WIRE_E_FORMERR, true, false, false, 1, 0, false, 0},
	{"OPT in answer", HDR("0100", "0001", "0001", "0000", "0000") Q_WWW OPT0, WIRE_E_FORMERR, true, false, false, 1,
	 0, false, 0},
	{"OPT in authority", HDR("0100", "0001", "0000", "0001", "0000") Q_WWW OPT0, WIRE_E_FORMERR, true, false, false,
	 1, 0, false, 0},
	{"two OPTs", HDR("0100", "0001", "0000", "0000", "0002") Q_WWW OPT0 OPT0, WIRE_E_FORMERR, true, true, false, 1,
	 1232, false, 0},
	{"OPT owner not root", HDR("0100", "0001", "0000", "0000", "0001") Q_WWW "c00c 0029 04d0 00000000 0000",
	 WIRE_E_FORMERR, true, false, false, 1, 0, false, 0},
	{"OPT rdlength past end", HDR("0100", "0001", "0000", "0000", "0001") Q_WWW "00 0029 04d0 00000000 0008 000a0000",
	 WIRE_E_FORMERR, true, false, false, 1, 0, false, 0},
	{"option length past RDATA", HDR("0100", "0001", "0000", "0000", "0001") Q_WWW OPT_HDR("0006") "000a 0008 0102",
	 WIRE_E_FORMERR, true, true, false, 1, 1232, false, 0},
	{"option header truncated", HDR("0100", "0001", "0000", "0000", "0001") Q_WWW OPT_HDR("0003") "000800",
	 WIRE_E_FORMERR, true, true, false, 1, 1232, false, 0},
	{"ECS family 3", HDR("0100", "0001", "0000", "0000", "0001") Q_WWW OPT_HDR("000b") "0008 0007 0003 18 00 c63364",
	 WIRE_E_FORMERR, true, true, false, 1, 1232, false, 0},
	{"ECS too short", HDR("0100", "0001", "0000", "0000", "0001") Q_WWW OPT_HDR("0007") "0008 0003 000118",
	 WIRE_E_FORMERR, true, true, false, 1, 1232, false, 0},
	{"ECS IPv4 source 33", HDR("0100", "0001", "0000", "0000", "0001") Q_WWW OPT_HDR("000d") "0008 0009 0001 21 00 c633640100",
	 WIRE_E_FORMERR, true, true, false, 1, 1232, false, 0},
	{"ECS address too long", HDR("0100", "0001", "0000", "0000", "0001") Q_WWW OPT_HDR("000c") "0008 0008 0001 18 00 c6336400",
	 WIRE_E_FORMERR, true, true, false, 1, 1232, false, 0},
	{"ECS host bits set", HDR("0100", "0001", "0000", "0000", "0001") Q_WWW OPT_HDR("000b") "0008 0007 0001 14 00 c63365",
	 WIRE_E_FORMERR, true, true, false, 1, 1232, false, 0},
	{"ECS scope non-zero in a query", HDR("0100", "0001", "0000", "0000", "0001") Q_WWW OPT_HDR("000b") "0008 0007 0001 18 18 c63364",
	 WIRE_E_FORMERR, true, true, false, 1, 1232, false, 0},
	{"two ECS options", HDR("0100", "0001", "0000", "0000", "0001") Q_WWW OPT_HDR("0016") ECS24 ECS24,
	 WIRE_E_FORMERR, true, true, false, 1, 1232, false, 0},
	{"EDNS version 1", HDR("0100", "0001", "0000", "0000", "0001") Q_WWW "00 0029 04d0 00 01 0000 0000",
	 WIRE_E_BADVERS, true, true, false, 1, 1232, false, 1},
	{"EDNS version 1, DO, broken option not read",
	 HDR("0100", "0001", "0000", "0000", "0001") Q_WWW "00 0029 0200 00 01 8000 0001 ff", WIRE_E_BADVERS, true, true,
	 false, 1, 512, true, 1},
	{"EDNS version 1 plus trailing byte", HDR("0100", "0001", "0000", "0000", "0001") Q_WWW "00 0029 04d0 00 01 0000 0000 00",
	 WIRE_E_FORMERR, true, true, false, 1, 1232, false, 1},
	{"trailing garbage", HDR("0100", "0001", "0000", "0000", "0000") Q_WWW "deadbeef", WIRE_E_FORMERR, true, false,
	 false, 1, 0, false, 0},
	{"trailing byte after OPT", HDR("0100", "0001", "0000", "0000", "0001") Q_WWW OPT0 "00", WIRE_E_FORMERR, true,
	 true, false, 1, 1232, false, 0},
	{"arcount higher than records", HDR("0100", "0001", "0000", "0000", "0002") Q_WWW OPT0, WIRE_E_FORMERR, true,
	 true, false, 1, 1232, false, 0},
};

/* Every error the parser returns must give a reply ldns accepts, with the documented shape. */
static void check_error_reply(const char *row, const struct wire_query *q, int rc)
{
	int rcode = rc == WIRE_E_NOTIMP ? WIRE_RCODE_NOTIMP : rc == WIRE_E_BADVERS ? WIRE_RCODE_BADVERS : WIRE_RCODE_FORMERR;
	uint8_t out[1024];
	int n = wire_write_error(q, rcode, NULL, NULL, out, sizeof(out));
	EXPECT_TRUE(row, n >= WIRE_HEADER_SIZE);
	ldns_pkt *pk = must_parse(row, out, (size_t)n);
	EXPECT_INT(row, ldns_pkt_id(pk), q->id);
	EXPECT_TRUE(row, ldns_pkt_qr(pk));
	EXPECT_INT(row, ldns_pkt_get_rcode(pk), rcode & 0xf);
	EXPECT_INT(row, ldns_pkt_qdcount(pk), q->question_ok ? 1 : 0);
	EXPECT_INT(row, ldns_pkt_edns(pk), q->has_edns || rcode > 15);
	if (rcode > 15)
		EXPECT_INT(row, ldns_pkt_edns_extended_rcode(pk), rcode >> 4);
	ldns_pkt_free(pk);
}

static void test_parse_query_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(parse_rows) / sizeof(parse_rows[0]); i++) {
		const struct parse_row *r = &parse_rows[i];
		uint8_t buf[2048];
		size_t n = hex(r->hex, buf, sizeof(buf));
		/* Exact-size heap copy so ASan catches any over-read. */
		uint8_t *pkt = malloc(n ? n : 1);
		assert_non_null(pkt);
		memcpy(pkt, buf, n);
		struct wire_query q;
		memset(&q, 0xa5, sizeof(q)); /* stale data must not leak into the result */
		int rc = wire_parse_query(pkt, n, &q);
		EXPECT_INT(r->msg, rc, r->rc);
		EXPECT_INT(r->msg, q.question_ok, r->question_ok);
		EXPECT_INT(r->msg, q.has_edns, r->has_edns);
		EXPECT_INT(r->msg, q.has_ecs, r->has_ecs);
		if (n >= WIRE_HEADER_SIZE)
			EXPECT_INT(r->msg, q.id, 0x1234);
		if (r->question_ok) {
			EXPECT_INT(r->msg, q.qtype, r->qtype);
			EXPECT_INT(r->msg, q.qclass, 1);
			EXPECT_INT(r->msg, q.question_end, WIRE_HEADER_SIZE + q.qname_len + 4);
			EXPECT_INT(r->msg, wire_name_check(q.qname, q.qname_len), 0);
		}
		if (r->has_edns) {
			EXPECT_INT(r->msg, q.edns_udp, r->udp);
			EXPECT_INT(r->msg, q.edns_do, r->do_bit);
			EXPECT_INT(r->msg, q.edns_version, r->version);
		}
		if (rc < 0 && rc != WIRE_E_DROP)
			check_error_reply(r->msg, &q, rc);
		free(pkt);
	}
}

static void test_parse_query_ecs_fields(void **state)
{
	(void)state;
	uint8_t buf[256];
	struct wire_query q;
	size_t n = hex(HDR("0100", "0001", "0000", "0000", "0001") Q_WWW OPT_HDR("000f") ECS56, buf, sizeof(buf));
	assert_int_equal(wire_parse_query(buf, n, &q), 0);
	assert_true(q.has_ecs);
	assert_int_equal(q.ecs.family, ECS_FAMILY_IPV6);
	assert_int_equal(q.ecs.source, 56);
	assert_int_equal(q.ecs.scope, 0);
	const uint8_t want6[16] = {0x20, 0x01, 0x0d, 0xb8, 0x00, 0x01, 0x00};
	assert_memory_equal(q.ecs.addr, want6, 16);

	n = hex(HDR("0100", "0001", "0000", "0000", "0001") Q_WWW OPT_HDR("0017") COOKIE ECS24, buf, sizeof(buf));
	assert_int_equal(wire_parse_query(buf, n, &q), 0);
	assert_true(q.has_ecs);
	assert_int_equal(q.ecs.family, ECS_FAMILY_IPV4);
	assert_int_equal(q.ecs.source, 24);
	const uint8_t want4[16] = {198, 51, 100};
	assert_memory_equal(q.ecs.addr, want4, 16);
}

/* Names at the length limits, built programmatically. */
static void test_parse_query_long_names(void **state)
{
	(void)state;
	struct {
		const char *msg;
		unsigned label_len, labels;
		int rc;
	} rows[] = {
		{"label of 63", 63, 1, 0},
		{"label of 64", 64, 1, WIRE_E_FORMERR},
		{"name of 255 (3x63 + 61)", 0, 0, 0},
		{"name of 256", 0, 1, WIRE_E_FORMERR},
		{"127 one-byte labels = 255", 1, 127, 0},
		{"128 one-byte labels = 257", 1, 128, WIRE_E_FORMERR},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct pkt *p = calloc(1, sizeof(*p));
		assert_non_null(p);
		hdr(p, 0x1234, 0x0100, 1, 0, 0, 0);
		if (rows[i].label_len == 0) {
			/* 3 labels of 63 = 192 bytes, then one of 61 (255) or 62 (256) with the root. */
			for (int j = 0; j < 3; j++) {
				put8(p, 63);
				for (int k = 0; k < 63; k++)
					put8(p, 'a');
			}
			unsigned last = rows[i].labels ? 62 : 61;
			put8(p, (uint8_t)last);
			for (unsigned k = 0; k < last; k++)
				put8(p, 'b');
		} else {
			for (unsigned j = 0; j < rows[i].labels; j++) {
				put8(p, (uint8_t)rows[i].label_len);
				for (unsigned k = 0; k < rows[i].label_len; k++)
					put8(p, 'x');
			}
		}
		put8(p, 0);
		put16(p, 1);
		put16(p, 1);
		struct wire_query q;
		EXPECT_INT(rows[i].msg, wire_parse_query(p->b, p->n, &q), rows[i].rc);
		if (rows[i].rc == 0)
			EXPECT_INT(rows[i].msg, q.qname_len, p->n - WIRE_HEADER_SIZE - 4);
		free(p);
	}
}

static void test_parse_query_0x20(void **state)
{
	(void)state;
	struct pkt p;
	make_query(&p, 7, 0x0100, "wWw.ExaMPLE.cOm", WIRE_TYPE_A, 0, false, NULL);
	struct wire_query q;
	query_from("0x20", &p, &q);
	assert_int_equal(q.qname_len, 17);
	assert_memory_equal(q.qname, "\3wWw\7ExaMPLE\3cOm", 17);
	assert_memory_equal(q.qname_lc, "\3www\7example\3com", 17);
}

/* The committed malformed-query corpus must provoke exactly the reaction README.txt lists. */
static void test_malformed_corpus(void **state)
{
	(void)state;
	const char *dir = getenv("PARTDNS_TEST_DATA");
	assert_non_null(dir);
	char path[4096];
	snprintf(path, sizeof(path), "%s/malformed/README.txt", dir);
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		print_error("cannot open %s\n", path);
		fail();
	}
	char line[512];
	unsigned count = 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (line[0] == '#' || line[0] == '\n')
			continue;
		char file[256], reaction[32];
		assert_int_equal(sscanf(line, "%255s %31s", file, reaction), 2);
		int want = 0;
		if (strcmp(reaction, "FORMERR") == 0)
			want = WIRE_E_FORMERR;
		else if (strcmp(reaction, "NOTIMP") == 0)
			want = WIRE_E_NOTIMP;
		else if (strcmp(reaction, "BADVERS") == 0)
			want = WIRE_E_BADVERS;
		else if (strcmp(reaction, "DROP") == 0)
			want = WIRE_E_DROP;
		else if (strcmp(reaction, "REFUSED") == 0)
			want = WIRE_NOTIFY; /* parsed as a NOTIFY; query.c refuses it (no policy zone of that name) */
		else {
			print_error("%s: unknown reaction %s\n", file, reaction);
			fail();
		}
		snprintf(path, sizeof(path), "%s/malformed/%s", dir, file);
		FILE *b = fopen(path, "rb");
		if (b == NULL) {
			print_error("cannot open %s\n", path);
			fail();
		}
		uint8_t buf[1024];
		size_t n = fread(buf, 1, sizeof(buf), b);
		fclose(b);
		uint8_t *exact = malloc(n ? n : 1);
		assert_non_null(exact);
		memcpy(exact, buf, n);
		struct wire_query q;
		int rc = wire_parse_query(exact, n, &q);
		EXPECT_INT(file, rc, want);
		if (rc != WIRE_E_DROP) {
			EXPECT_INT(file, q.id, 0x5a17);
			if (rc < 0)
				check_error_reply(file, &q, rc);
		}
		free(exact);
		count++;
	}
	fclose(f);
	assert_true(count >= 40);
}

static void test_udp_limit(void **state)
{
	(void)state;
	struct {
		const char *msg;
		bool edns;
		uint16_t udp;
		size_t max, want;
	} rows[] = {
		{"no EDNS", false, 0, 1232, 512},
		{"no EDNS ignores a stale udp field", false, 4096, 4096, 512},
		{"EDNS 4096 capped at our 1232", true, 4096, 1232, 1232},
		{"EDNS 1400 under our 4096", true, 1400, 4096, 1400},
		{"EDNS below 512 raised", true, 100, 1232, 512},
		{"EDNS 0 raised", true, 0, 1232, 512},
		{"EDNS 65535 with max 65535", true, 65535, 65535, 65535},
		{"max below 512 ignored", true, 1400, 100, 1400},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct wire_query q;
		memset(&q, 0, sizeof(q));
		q.has_edns = rows[i].edns;
		q.edns_udp = rows[i].udp;
		EXPECT_INT(rows[i].msg, wire_udp_limit(&q, rows[i].max), rows[i].want);
	}
}

/* ---- error replies ---- */

static void test_write_error_exact(void **state)
{
	(void)state;
	struct {
		const char *msg;
		const char *query;
		int rcode;
		bool echo;
		const char *want;
	} rows[] = {
		{"FORMERR, question echoed, no EDNS", HDR("0100", "0001", "0000", "0000", "0000") Q_WWW "deadbeef",
		 WIRE_RCODE_FORMERR, false, "1234 8181 0001 0000 0000 0000" Q_WWW},
		{"FORMERR without question", HDR("0100", "0000", "0000", "0000", "0000"), WIRE_RCODE_FORMERR, false,
		 "1234 8181 0000 0000 0000 0000"},
		{"FORMERR does not copy AD", HDR("0120", "0001", "0000", "0000", "0000") Q_WWW "00", WIRE_RCODE_FORMERR,
		 false, "1234 8181 0001 0000 0000 0000" Q_WWW},
		{"NOTIMP for UPDATE: opcode copied, header only", HDR("2800", "0001", "0000", "0000", "0000") Q_WWW,
		 WIRE_RCODE_NOTIMP, false, "1234 a884 0000 0000 0000 0000"},
		{"BADVERS: OPT with extended rcode 1, DO copied",
		 HDR("0100", "0001", "0000", "0000", "0001") Q_WWW "00 0029 1000 00 01 8000 0000", WIRE_RCODE_BADVERS, false,
		 "1234 8180 0001 0000 0000 0001" Q_WWW "00 0029 04d0 01 00 8000 0000"},
		{"REFUSED with EDNS, RD and CD copied", HDR("0110", "0001", "0000", "0000", "0001") Q_WWW OPT0,
		 WIRE_RCODE_REFUSED, false, "1234 8195 0001 0000 0000 0001" Q_WWW OPT0},
		{"SERVFAIL with ECS echo", HDR("0100", "0001", "0000", "0000", "0001") Q_WWW OPT_HDR("000b") ECS24,
		 WIRE_RCODE_SERVFAIL, true, "1234 8182 0001 0000 0000 0001" Q_WWW OPT_HDR("000b") ECS24},
		{"FORMERR for a bad ECS: OPT kept, no ECS",
		 HDR("0100", "0001", "0000", "0000", "0001") Q_WWW OPT_HDR("000b") "0008 0007 0001 18 18 c63364",
		 WIRE_RCODE_FORMERR, false, "1234 8181 0001 0000 0000 0001" Q_WWW OPT0},
		{"REFUSED without EDNS never gets an OPT even with echo", HDR("0100", "0001", "0000", "0000", "0000") Q_WWW,
		 WIRE_RCODE_REFUSED, true, "1234 8185 0001 0000 0000 0000" Q_WWW},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint8_t qb[512], want[512], out[512];
		size_t qn = hex(rows[i].query, qb, sizeof(qb)), wn = hex(rows[i].want, want, sizeof(want));
		struct wire_query q;
		(void)wire_parse_query(qb, qn, &q);
		struct ecs echo;
		ecs_v4(&echo, "198.51.100.0", 24, 0);
		int n = wire_write_error(&q, rows[i].rcode, rows[i].echo ? &echo : NULL, NULL, out, sizeof(out));
		EXPECT_TRUE(rows[i].msg, n > 0);
		expect_bytes(rows[i].msg, out, (size_t)n, want, wn);
		ldns_pkt_free(must_parse(rows[i].msg, out, (size_t)n));
	}
}

static void test_write_error_limits(void **state)
{
	(void)state;
	uint8_t qb[256], out[64];
	size_t qn = hex(HDR("0100", "0001", "0000", "0000", "0001") Q_WWW OPT0, qb, sizeof(qb));
	struct wire_query q;
	assert_int_equal(wire_parse_query(qb, qn, &q), 0);
	/* 12 + 21 + 11 = 44 bytes. */
	assert_int_equal(wire_write_error(&q, WIRE_RCODE_SERVFAIL, NULL, NULL, out, 44), 44);
	assert_int_equal(wire_write_error(&q, WIRE_RCODE_SERVFAIL, NULL, NULL, out, 43), -ENOSPC);
	assert_int_equal(wire_write_error(&q, -1, NULL, NULL, out, sizeof(out)), -EINVAL);
	assert_int_equal(wire_write_error(&q, 4096, NULL, NULL, out, sizeof(out)), -EINVAL);
	struct ecs bad = {.family = 7, .source = 8};
	assert_int_equal(wire_write_error(&q, WIRE_RCODE_SERVFAIL, &bad, NULL, out, sizeof(out)), -EINVAL);
}

/* ---- prepare / write ---- */

static const uint8_t COOKIE16[16] = {0xc0, 0x0c, 0x1e, 0x5a, 0x17, 0x99, 0x42, 0x42,
				     0x13, 0x37, 0xfe, 0xed, 0xfa, 0xce, 0xb0, 0x0c};

/*
 * An upstream-like response: compression everywhere, the OPT (ECS scope 24
 * + cookie) in the middle of the additional section, records after it that
 * point into each other.
 */
static void build_positive(struct pkt *p, uint16_t flags, uint32_t ttl1, uint32_t ttl2, uint32_t ttl_ns)
{
	hdr(p, 0xbeef, flags, 1, 2, 1, 4);
	putname(p, "www.example.com"); /* at 12; "example.com" at 16 */
	put16(p, WIRE_TYPE_A);
	put16(p, WIRE_CLASS_IN);
	putptr(p, 12);
	size_t at = rr_begin(p, WIRE_TYPE_A, WIRE_CLASS_IN, ttl1);
	put_a(p, "198.51.100.1");
	rr_end(p, at);
	putptr(p, 12);
	at = rr_begin(p, WIRE_TYPE_A, WIRE_CLASS_IN, ttl2);
	put_a(p, "198.51.100.2");
	rr_end(p, at);
	putptr(p, 16);
	at = rr_begin(p, WIRE_TYPE_NS, WIRE_CLASS_IN, ttl_ns);
	size_t ns1 = p->n;
	put8(p, 3);
	put(p, "ns1", 3);
	putptr(p, 16);
	rr_end(p, at);
	putptr(p, ns1);
	at = rr_begin(p, WIRE_TYPE_A, WIRE_CLASS_IN, 3600);
	put_a(p, "192.0.2.53");
	rr_end(p, at);
	char opt[128];
	snprintf(opt, sizeof(opt), "0008 0007 0001 18 18 c63364 000a 0010 ");
	size_t ol = strlen(opt);
	for (int i = 0; i < 16; i++)
		ol += (size_t)snprintf(opt + ol, sizeof(opt) - ol, "%02x", COOKIE16[i]);
	put_opt(p, 1232, 0, 0, true, opt);
	size_t ns2 = p->n;
	put8(p, 3);
	put(p, "ns2", 3);
	putptr(p, 16);
	at = rr_begin(p, WIRE_TYPE_A, WIRE_CLASS_IN, 3600);
	put_a(p, "192.0.2.54");
	rr_end(p, at);
	putptr(p, ns2); /* points at a name that sits after the OPT */
	at = rr_begin(p, WIRE_TYPE_AAAA, WIRE_CLASS_IN, 3600);
	put_aaaa(p, "2001:db8::54");
	rr_end(p, at);
}

static bool contains(const uint8_t *hay, size_t n, const uint8_t *needle, size_t m)
{
	for (size_t i = 0; i + m <= n; i++)
		if (memcmp(hay + i, needle, m) == 0)
			return true;
	return false;
}

/* Text of every RR of the three sections, for comparing messages with ldns. */
static void section_text(ldns_pkt *pk, char *out, size_t cap)
{
	size_t o = 0;
	ldns_rr_list *lists[3] = {ldns_pkt_answer(pk), ldns_pkt_authority(pk), ldns_pkt_additional(pk)};
	out[0] = '\0';
	for (int s = 0; s < 3; s++) {
		for (size_t i = 0; i < ldns_rr_list_rr_count(lists[s]); i++) {
			char *t = ldns_rr2str(ldns_rr_list_rr(lists[s], i));
			o += (size_t)snprintf(out + o, cap - o, "%d %s", s, t);
			free(t);
		}
	}
}

/* A message as libunbound encodes one: owner names written out (not what our
 * re-encoding would do: it compresses them), OPT last. */
static void build_local(struct pkt *p, uint32_t ttl)
{
	hdr(p, 0x4242, 0x8180, 1, 1, 1, 2);
	putname(p, "www.example.com");
	put16(p, WIRE_TYPE_A);
	put16(p, WIRE_CLASS_IN);
	putname(p, "www.example.com");
	size_t at = rr_begin(p, WIRE_TYPE_A, WIRE_CLASS_IN, ttl);
	put_a(p, "198.51.100.7");
	rr_end(p, at);
	putptr(p, 16);
	at = rr_begin(p, WIRE_TYPE_NS, WIRE_CLASS_IN, 3600);
	size_t ns1 = p->n;
	put8(p, 3);
	put(p, "ns1", 3);
	putptr(p, 16);
	rr_end(p, at);
	putptr(p, ns1);
	at = rr_begin(p, WIRE_TYPE_A, WIRE_CLASS_IN, 3600);
	put_a(p, "192.0.2.53");
	rr_end(p, at);
	put_opt(p, 1232, 0, 0, true, "0008 0007 0001 18 18 c63364");
}

/* The client's view of a blob: ldns's text of its three sections, aged by age. */
static void client_view(const uint8_t *blob, size_t blob_len, uint32_t age, char *out, size_t cap)
{
	struct pkt cq;
	make_query(&cq, 0x7777, 0x0100, "www.example.com", WIRE_TYPE_A, 0, false, NULL);
	struct wire_query q;
	query_from("client", &cq, &q);
	uint8_t msg[2048];
	int n = wire_answer_write(&q, cq.b, blob, blob_len, age, NULL, msg, sizeof(msg));
	assert_true(n > 0);
	ldns_pkt *pk = must_parse("client", msg, (size_t)n);
	section_text(pk, out, cap);
	ldns_pkt_free(pk);
}

/* libunbound's encoding is kept as it is (wire_answer_adopt_chain): only the
 * ID, the OPT record at the end and the clamped TTLs change; clients get the
 * same answer as from the re-encoded blob. */
static void test_adopt_keeps_layout(void **state)
{
	(void)state;
	struct pkt *p = calloc(1, sizeof(*p));
	assert_non_null(p);
	build_local(p, 7200);
	struct wire_limits lim = {.max_ttl = 5000}; /* the answer's 7200 only */
	uint8_t *ab, *pb;
	size_t ab_len, pb_len;
	uint32_t attl, pttl;
	assert_int_equal(wire_answer_adopt_chain(p->b, p->n, &lim, &ab, &ab_len, &attl, NULL), 0);
	assert_int_equal(wire_answer_prepare_chain(p->b, p->n, &lim, &pb, &pb_len, &pttl, NULL), 0);
	assert_int_equal(attl, 3600); /* the NS record's */
	assert_int_equal(pttl, 3600);
	struct wire_blob_info ai, pi;
	assert_int_equal(wire_blob_info(ab, ab_len, &ai), 0);
	assert_int_equal(wire_blob_info(pb, pb_len, &pi), 0);
	size_t opt_len = 11 + 11; /* OPT with its ECS option */
	assert_int_equal(ai.msg_len, p->n - opt_len);
	assert_true(pi.msg_len < ai.msg_len); /* the re-encoding compressed the answer's owner */
	assert_int_equal(ai.arcount, 1);
	const uint8_t *m = ab + ai.msg_off;
	assert_int_equal(m[0] | m[1], 0);                       /* ID */
	assert_memory_equal(m + 2, p->b + 2, 8);                /* flags, QD, AN, NS */
	assert_int_equal(m[10] << 8 | m[11], 1);                /* AR without OPT */
	size_t ttl_at = 12 + 17 + 4 + 17 + 4;                   /* the answer's TTL */
	assert_memory_equal(m + 12, p->b + 12, ttl_at - 12);    /* question, owner: as they were */
	assert_int_equal((uint32_t)m[ttl_at] << 24 | (uint32_t)m[ttl_at + 1] << 16 | (uint32_t)m[ttl_at + 2] << 8 |
			 m[ttl_at + 3], 5000);                  /* clamped in place */
	assert_memory_equal(m + ttl_at + 4, p->b + ttl_at + 4, ai.msg_len - ttl_at - 4);
	char want[4096], got[4096];
	client_view(pb, pb_len, 10, want, sizeof(want));
	client_view(ab, ab_len, 10, got, sizeof(got));
	assert_string_equal(got, want);
	assert_non_null(strstr(got, "4990\tIN\tA\t198.51.100.7"));
	free(ab);
	free(pb);
	free(p);
}

/* What the kept layout cannot take is re-encoded, byte for byte as
 * wire_answer_prepare_chain does: an OPT record before other records, and a
 * name that points into bytes the cache patches (here a TTL). */
static void test_adopt_falls_back(void **state)
{
	(void)state;
	struct pkt *p = calloc(1, sizeof(*p));
	assert_non_null(p);
	for (int row = 0; row < 2; row++) {
		if (row == 0) {
			build_positive(p, 0x8180, 300, 100, 3600); /* OPT in the middle of the additional section */
		} else {
			hdr(p, 0x4242, 0x8180, 1, 2, 0, 0);
			putname(p, "www.example.com");
			put16(p, WIRE_TYPE_A);
			put16(p, WIRE_CLASS_IN);
			putptr(p, 12);
			size_t at = rr_begin(p, WIRE_TYPE_A, WIRE_CLASS_IN, 0x00000e00); /* last byte 0: a root name */
			put_a(p, "198.51.100.7");
			rr_end(p, at);
			putptr(p, at - 1); /* owner: the TTL's last byte */
			at = rr_begin(p, WIRE_TYPE_A, WIRE_CLASS_IN, 60);
			put_a(p, "198.51.100.8");
			rr_end(p, at);
		}
		struct wire_limits lim = {.min_ttl = 5, .max_ttl = 3000};
		uint8_t *ab, *pb;
		size_t ab_len, pb_len;
		uint32_t attl, pttl;
		assert_int_equal(wire_answer_prepare_chain(p->b, p->n, &lim, &pb, &pb_len, &pttl, NULL), 0);
		assert_int_equal(wire_answer_adopt_chain(p->b, p->n, &lim, &ab, &ab_len, &attl, NULL), 0);
		assert_int_equal(attl, pttl);
		assert_int_equal(ab_len, pb_len);
		assert_memory_equal(ab, pb, pb_len);
		free(ab);
		free(pb);
	}
	free(p);
}

static void test_prepare_positive(void **state)
{
	(void)state;
	struct pkt *p = calloc(1, sizeof(*p));
	assert_non_null(p);
	build_positive(p, 0x81a0, 300, 100, 3600);
	uint8_t *blob;
	size_t blob_len;
	uint32_t ttl;
	assert_int_equal(wire_answer_prepare(p->b, p->n, NULL, &blob, &blob_len, &ttl), 0);
	assert_int_equal(ttl, 100); /* min over answer + authority; additional does not count */
	/* No upstream OPT content survives: not the ECS, not the cookie. */
	assert_false(contains(blob, blob_len, COOKIE16, sizeof(COOKIE16)));
	assert_false(contains(blob, blob_len, (const uint8_t *)"\x00\x08\x00\x07\x00\x01\x18\x18", 8));
	struct wire_blob_info bi;
	assert_int_equal(wire_blob_info(blob, blob_len, &bi), 0);
	assert_int_equal(bi.rcode, 0);
	assert_true(bi.ad);
	assert_false(bi.tc);
	assert_int_equal(bi.ancount, 2);
	assert_int_equal(bi.nscount, 1);
	assert_int_equal(bi.arcount, 3);
	/* OPT gone (11 + ECS 11 + cookie 20), everything else compressed as upstream had it. */
	assert_int_equal(bi.msg_len, p->n - 42);
	assert_int_equal(wire_blob_rcode(blob, blob_len), 0);

	/* What ldns sees in the upstream message (minus its OPT) is what the client gets. */
	ldns_pkt *up = must_parse("upstream", p->b, p->n);
	char want[4096], got[4096];
	section_text(up, want, sizeof(want));
	ldns_pkt_free(up);

	struct pkt cq;
	make_query(&cq, 0x7777, 0x0100, "www.example.com", WIRE_TYPE_A, 0, false, NULL);
	struct wire_query q;
	query_from("plain client", &cq, &q);
	uint8_t out[2048];
	int n = wire_answer_write(&q, cq.b, blob, blob_len, 0, NULL, out, sizeof(out));
	assert_true(n > 0);
	ldns_pkt *pk = must_parse("plain client", out, (size_t)n);
	assert_int_equal(ldns_pkt_id(pk), 0x7777);
	assert_true(ldns_pkt_qr(pk));
	assert_true(ldns_pkt_rd(pk));
	assert_true(ldns_pkt_ra(pk));
	assert_false(ldns_pkt_aa(pk));
	assert_false(ldns_pkt_tc(pk));
	assert_false(ldns_pkt_ad(pk)); /* client asked neither AD nor DO */
	assert_false(ldns_pkt_edns(pk));
	assert_int_equal(out[10] << 8 | out[11], 3); /* raw ARCOUNT: no OPT at all */
	section_text(pk, got, sizeof(got));
	assert_string_equal(got, want);
	char *o = owner_of(ldns_pkt_additional(pk), 2);
	assert_string_equal(o, "ns2.example.com.");
	free(o);
	ldns_pkt_free(pk);

	/* An EDNS client: our OPT only, size 1232, DO echoed, no options; AD because DO. */
	make_query(&cq, 0x8888, 0x0100, "www.example.com", WIRE_TYPE_A, 4096, true, COOKIE);
	query_from("EDNS client", &cq, &q);
	n = wire_answer_write(&q, cq.b, blob, blob_len, 0, NULL, out, sizeof(out));
	assert_true(n > 0);
	pk = must_parse("EDNS client", out, (size_t)n);
	assert_true(ldns_pkt_edns(pk));
	assert_int_equal(ldns_pkt_edns_udp_size(pk), WIRE_DEFAULT_UDP);
	assert_true(ldns_pkt_edns_do(pk));
	assert_true(ldns_pkt_ad(pk));
	ldns_rdf *ed = ldns_pkt_edns_data(pk);
	assert_true(ed == NULL || ldns_rdf_size(ed) == 0);
	assert_int_equal(out[10] << 8 | out[11], 4);
	/* our OPT is last: 00 0029 04d0 00 00 8000 0000 */
	uint8_t opt_want[11];
	hex("00 0029 04d0 00 00 8000 0000", opt_want, sizeof(opt_want));
	assert_memory_equal(out + n - 11, opt_want, 11);
	ldns_pkt_free(pk);
	free(blob);
	free(p);
}

static void test_prepare_ttl_table(void **state)
{
	(void)state;
	struct {
		const char *msg;
		struct wire_limits lim;
		uint32_t age;
		uint32_t a1, a2, ns, glue, life;
	} rows[] = {
		{"no limits, fresh", {0, 0, 0, 0}, 0, 300, 100, 3600, 3600, 100},
		{"aged 50", {0, 0, 0, 0}, 50, 250, 50, 3550, 3550, 100},
		{"aged 150: floors at 0", {0, 0, 0, 0}, 150, 150, 0, 3450, 3450, 100},
		{"aged past everything", {0, 0, 0, 0}, 100000, 0, 0, 0, 0, 100},
		{"aged UINT32_MAX", {0, 0, 0, 0}, UINT32_MAX, 0, 0, 0, 0, 100},
		{"min_ttl 200 raises", {200, 0, 0, 0}, 0, 300, 200, 3600, 3600, 200},
		{"max_ttl 1000 lowers", {0, 1000, 0, 0}, 0, 300, 100, 1000, 1000, 100},
		{"min 200 max 250", {200, 250, 0, 0}, 0, 250, 200, 250, 250, 200},
		{"min above max: max wins", {500, 400, 0, 0}, 0, 400, 400, 400, 400, 400},
		{"clamped then aged", {200, 1000, 0, 0}, 100, 200, 100, 900, 900, 200},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct pkt *p = calloc(1, sizeof(*p));
		assert_non_null(p);
		build_positive(p, 0x8180, 300, 100, 3600);
		uint8_t *blob;
		size_t blob_len;
		uint32_t ttl;
		EXPECT_INT(rows[i].msg, wire_answer_prepare(p->b, p->n, &rows[i].lim, &blob, &blob_len, &ttl), 0);
		EXPECT_INT(rows[i].msg, ttl, rows[i].life);
		struct pkt cq;
		make_query(&cq, 1, 0x0100, "www.example.com", WIRE_TYPE_A, 0, false, NULL);
		struct wire_query q;
		query_from(rows[i].msg, &cq, &q);
		uint8_t out[2048];
		int n = wire_answer_write(&q, cq.b, blob, blob_len, rows[i].age, NULL, out, sizeof(out));
		EXPECT_TRUE(rows[i].msg, n > 0);
		ldns_pkt *pk = must_parse(rows[i].msg, out, (size_t)n);
		EXPECT_INT(rows[i].msg, ttl_of(ldns_pkt_answer(pk), 0), rows[i].a1);
		EXPECT_INT(rows[i].msg, ttl_of(ldns_pkt_answer(pk), 1), rows[i].a2);
		EXPECT_INT(rows[i].msg, ttl_of(ldns_pkt_authority(pk), 0), rows[i].ns);
		for (size_t j = 0; j < 3; j++)
			EXPECT_INT(rows[i].msg, ttl_of(ldns_pkt_additional(pk), j), rows[i].glue);
		ldns_pkt_free(pk);
		free(blob);
		free(p);
	}
}

static void test_prepare_ttl_top_bit(void **state)
{
	(void)state;
	struct pkt *p = calloc(1, sizeof(*p));
	assert_non_null(p);
	build_positive(p, 0x8180, 0x80000001u, 0xffffffffu, 3600);
	uint8_t *blob;
	size_t blob_len;
	uint32_t ttl;
	struct wire_limits lim = {.min_ttl = 5};
	assert_int_equal(wire_answer_prepare(p->b, p->n, &lim, &blob, &blob_len, &ttl), 0);
	assert_int_equal(ttl, 5); /* RFC 2181 §8: top bit set counts as 0, then min_ttl */
	free(blob);
	free(p);
}

/* An RRSIG for type covered, owner as written, with Original TTL orig. */
static void put_rrsig(struct pkt *p, const char *owner, uint16_t covered, uint32_t ttl, uint32_t orig)
{
	putname(p, owner);
	size_t at = rr_begin(p, WIRE_TYPE_RRSIG, WIRE_CLASS_IN, ttl);
	put16(p, covered);
	put8(p, 8); /* algorithm */
	put8(p, 3); /* labels */
	put32(p, orig);
	put32(p, 1492473600u); /* expiration */
	put32(p, 1489968000u); /* inception */
	put16(p, 41524);
	putname(p, "example.com");
	puthex(p, "0102030405060708");
	rr_end(p, at);
}

/* TTLs of the blob's message as stored (age 0), in record order. */
static unsigned blob_ttls(const uint8_t *blob, size_t blob_len, uint32_t *out, unsigned cap)
{
	struct wire_blob_info bi;
	assert_int_equal(wire_blob_info(blob, blob_len, &bi), 0);
	ldns_pkt *pk = must_parse("blob", blob + bi.msg_off, bi.msg_len);
	unsigned n = 0;
	const ldns_rr_list *secs[2] = {ldns_pkt_answer(pk), ldns_pkt_authority(pk)};
	for (int s = 0; s < 2; s++)
		for (size_t i = 0; i < ldns_rr_list_rr_count(secs[s]) && n < cap; i++)
			out[n++] = ttl_of(secs[s], i);
	ldns_pkt_free(pk);
	return n;
}

/*
 * RFC 4035 §5.3.3: no TTL above its RRSIG's Original TTL. libunbound's TTLs
 * grow past it when its wall clock steps back (Deckard's
 * nsec_wildcard_answer_response served 3664 for 3600, and an NSEC signed
 * with TTL 0 proved a wildcard answer again); both the adopted and the
 * re-encoded blob cap them, and the cache lifetime with them. Owners match
 * whatever their case; a record without a signature keeps its TTL.
 */
static void test_prepare_rrsig_cap(void **state)
{
	(void)state;
	for (int with_nsec = 0; with_nsec < 2; with_nsec++) {
		struct pkt *p = calloc(1, sizeof(*p));
		assert_non_null(p);
		hdr(p, 0x4242, 0x81a0, 1, 2, with_nsec ? 3 : 1, 0);
		putname(p, "www.example.com");
		put16(p, WIRE_TYPE_A);
		put16(p, WIRE_CLASS_IN);
		putname(p, "www.example.com");
		size_t at = rr_begin(p, WIRE_TYPE_A, WIRE_CLASS_IN, 3664);
		put_a(p, "198.51.100.7");
		rr_end(p, at);
		put_rrsig(p, "WWW.Example.COM", WIRE_TYPE_A, 3664, 3600);
		putname(p, "example.com");
		at = rr_begin(p, WIRE_TYPE_NS, WIRE_CLASS_IN, 7200);
		putname(p, "ns1.example.com");
		rr_end(p, at);
		if (with_nsec) {
			putname(p, "a.example.com");
			at = rr_begin(p, 47, WIRE_CLASS_IN, 50);
			putname(p, "z.example.com");
			puthex(p, "000140");
			rr_end(p, at);
			put_rrsig(p, "a.example.com", 47, 50, 0);
		}
		for (int adopt = 0; adopt < 2; adopt++) {
			uint8_t *b;
			size_t b_len;
			uint32_t life, ttls[8];
			struct wire_limits lim = {.max_ttl = 86400};
			int rc = adopt ? wire_answer_adopt_chain(p->b, p->n, &lim, &b, &b_len, &life, NULL)
			               : wire_answer_prepare_chain(p->b, p->n, &lim, &b, &b_len, &life, NULL);
			assert_int_equal(rc, 0);
			unsigned n = blob_ttls(b, b_len, ttls, 8);
			assert_int_equal(n, with_nsec ? 5 : 3);
			assert_int_equal(ttls[0], 3600); /* A: its RRSIG's Original TTL */
			assert_int_equal(ttls[1], 3600); /* the RRSIG itself */
			assert_int_equal(ttls[2], 7200); /* unsigned NS: as it came */
			if (with_nsec) {
				assert_int_equal(ttls[3], 0); /* NSEC signed with TTL 0 */
				assert_int_equal(ttls[4], 0);
			}
			assert_int_equal(life, with_nsec ? 0 : 3600);
			free(b);
		}
		free(p);
	}
}

/* Negative and non-cacheable answers. */
struct neg_row {
	const char *msg;
	uint16_t flags;
	uint16_t qtype;
	const char *cname;  /* www.example.com CNAME this, or NULL */
	uint32_t cname_ttl;
	bool a;             /* an A RR at the end of the chain */
	uint32_t a_ttl;
	bool soa;           /* SOA of example.com (or of the CNAME target's parent) in authority */
	uint32_t soa_ttl, soa_min;
	struct wire_limits lim;
	uint32_t life;
	long long soa_stored; /* the SOA TTL the client sees (age 0), -1 when no SOA */
};

static const struct neg_row neg_rows[] = {
	{"NXDOMAIN: SOA MINIMUM below TTL", 0x8183, 1, NULL, 0, false, 0, true, 3600, 300, {0}, 300, 300},
	{"NXDOMAIN: SOA TTL below MINIMUM", 0x8183, 1, NULL, 0, false, 0, true, 30, 300, {0}, 30, 30},
	{"NXDOMAIN: max_negative_ttl caps", 0x8183, 1, NULL, 0, false, 0, true, 3600, 300, {0, 0, 60, 0}, 60, 60},
	{"NXDOMAIN: min_ttl does not raise it", 0x8183, 1, NULL, 0, false, 0, true, 3600, 300, {600, 0, 0, 0}, 300, 300},
	{"NXDOMAIN: max_ttl caps too", 0x8183, 1, NULL, 0, false, 0, true, 3600, 300, {0, 100, 0, 0}, 100, 100},
	{"NXDOMAIN: SOA TTL top bit", 0x8183, 1, NULL, 0, false, 0, true, 0x80000000u, 300, {0}, 0, 0},
	{"NODATA: SOA", 0x8180, 1, NULL, 0, false, 0, true, 600, 900, {0}, 600, 600},
	{"NODATA at the end of a CNAME: CNAME TTL bounds it", 0x8180, 1, "cdn.example.net", 50, false, 0, true, 600, 120,
	 {0}, 50, 120},
	{"NXDOMAIN at the end of a CNAME", 0x8183, 1, "cdn.example.net", 500, false, 0, true, 3600, 300, {0}, 300, 300},
	{"CNAME chain answered: positive", 0x8180, 1, "cdn.example.net", 500, true, 400, false, 0, 0, {0}, 400, -1},
	{"NODATA without SOA: not cached", 0x8180, 1, NULL, 0, false, 0, false, 0, 0, {0}, 0, -1},
	{"NODATA without SOA, nosoa_ttl 5", 0x8180, 1, NULL, 0, false, 0, false, 0, 0, {0, 0, 0, 5}, 5, -1},
	{"CNAME without target data, no SOA, nosoa 5, CNAME TTL 3", 0x8180, 1, "cdn.example.net", 3, false, 0, false, 0,
	 0, {0, 0, 0, 5}, 3, -1},
	{"SERVFAIL", 0x8182, 1, NULL, 0, false, 0, false, 0, 0, {0}, 0, -1},
	{"REFUSED", 0x8185, 1, NULL, 0, false, 0, false, 0, 0, {0}, 0, -1},
	{"FORMERR", 0x8181, 1, NULL, 0, false, 0, false, 0, 0, {0}, 0, -1},
	{"SERVFAIL with an SOA", 0x8182, 1, NULL, 0, false, 0, true, 600, 600, {0}, 0, 600},
	{"TC set on a positive answer", 0x8380, 1, NULL, 0, true, 300, false, 0, 0, {0}, 0, -1},
	{"positive A", 0x8180, 1, NULL, 0, true, 300, false, 0, 0, {0}, 300, -1},
	{"positive A with SOA in authority", 0x8180, 1, NULL, 0, true, 300, true, 100, 50, {0}, 100, 100},
	{"qtype CNAME answered by the CNAME", 0x8180, WIRE_TYPE_CNAME, "cdn.example.net", 700, false, 0, false, 0, 0, {0},
	 700, -1},
	{"qtype ANY answered by an A", 0x8180, WIRE_TYPE_ANY, NULL, 0, true, 90, false, 0, 0, {0}, 90, -1},
	{"qtype AAAA, only A present: NODATA", 0x8180, WIRE_TYPE_AAAA, NULL, 0, true, 90, true, 900, 60, {0}, 60, 60},
};

static void build_neg(struct pkt *p, const struct neg_row *r)
{
	hdr(p, 0xbeef, r->flags, 1, 0, 0, 1);
	putname(p, "www.example.com");
	put16(p, r->qtype);
	put16(p, WIRE_CLASS_IN);
	uint16_t an = 0, ns = 0;
	size_t target = 12;
	if (r->cname != NULL) {
		putptr(p, 12);
		size_t at = rr_begin(p, WIRE_TYPE_CNAME, WIRE_CLASS_IN, r->cname_ttl);
		target = putname(p, r->cname);
		rr_end(p, at);
		an++;
	}
	if (r->a) {
		putptr(p, target);
		size_t at = rr_begin(p, WIRE_TYPE_A, WIRE_CLASS_IN, r->a_ttl);
		put_a(p, "203.0.113.5");
		rr_end(p, at);
		an++;
	}
	if (r->soa) {
		/* The zone of the chain's last name: skip its first label. */
		put_soa(p, target + 1 + p->b[target], r->soa_ttl, r->soa_min);
		ns++;
	}
	put_opt(p, 1232, 0, 0, false, "0008 0007 0001 18 18 c63364");
	set_count(p, 1, an);
	set_count(p, 2, ns);
}

static void test_prepare_negative_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(neg_rows) / sizeof(neg_rows[0]); i++) {
		const struct neg_row *r = &neg_rows[i];
		struct pkt *p = calloc(1, sizeof(*p));
		assert_non_null(p);
		build_neg(p, r);
		ldns_pkt_free(must_parse(r->msg, p->b, p->n)); /* the test input itself is sane */
		uint8_t *blob;
		size_t blob_len;
		uint32_t ttl;
		EXPECT_INT(r->msg, wire_answer_prepare(p->b, p->n, &r->lim, &blob, &blob_len, &ttl), 0);
		EXPECT_INT(r->msg, ttl, r->life);
		EXPECT_INT(r->msg, wire_blob_rcode(blob, blob_len), r->flags & 0xf);
		struct wire_blob_info bi;
		EXPECT_INT(r->msg, wire_blob_info(blob, blob_len, &bi), 0);
		EXPECT_INT(r->msg, bi.tc, (r->flags & WIRE_FLAG_TC) != 0);
		struct pkt cq;
		make_query(&cq, 42, 0x0100, "www.example.com", r->qtype, 1232, false, NULL);
		struct wire_query q;
		query_from(r->msg, &cq, &q);
		uint8_t out[2048];
		int n = wire_answer_write(&q, cq.b, blob, blob_len, 0, NULL, out, sizeof(out));
		EXPECT_TRUE(r->msg, n > 0);
		ldns_pkt *pk = must_parse(r->msg, out, (size_t)n);
		EXPECT_INT(r->msg, ldns_pkt_get_rcode(pk), r->flags & 0xf);
		EXPECT_INT(r->msg, ldns_pkt_tc(pk), (r->flags & WIRE_FLAG_TC) != 0);
		if (r->soa_stored >= 0)
			EXPECT_INT(r->msg, ttl_of(ldns_pkt_authority(pk), 0), r->soa_stored);
		ldns_pkt_free(pk);
		free(blob);
		free(p);
	}
}

static void test_prepare_extended_rcode(void **state)
{
	(void)state;
	/* Header rcode 7 + OPT extended 1 = 23 (BADCOOKIE). */
	struct pkt *p = calloc(1, sizeof(*p));
	assert_non_null(p);
	hdr(p, 1, 0x8187, 1, 0, 0, 1);
	putname(p, "www.example.com");
	put16(p, 1);
	put16(p, 1);
	put_opt(p, 1232, 1, 0, false, NULL);
	uint8_t *blob;
	size_t blob_len;
	uint32_t ttl;
	assert_int_equal(wire_answer_prepare(p->b, p->n, NULL, &blob, &blob_len, &ttl), 0);
	assert_int_equal(wire_blob_rcode(blob, blob_len), 23);
	assert_int_equal(ttl, 0);
	struct pkt cq;
	struct wire_query q;
	uint8_t out[512];
	make_query(&cq, 2, 0x0100, "www.example.com", 1, 1232, false, NULL);
	query_from("ext rcode, EDNS", &cq, &q);
	int n = wire_answer_write(&q, cq.b, blob, blob_len, 0, NULL, out, sizeof(out));
	assert_true(n > 0);
	ldns_pkt *pk = must_parse("ext rcode, EDNS", out, (size_t)n);
	assert_int_equal(ldns_pkt_get_rcode(pk), 7);
	assert_int_equal(ldns_pkt_edns_extended_rcode(pk), 1);
	ldns_pkt_free(pk);
	make_query(&cq, 2, 0x0100, "www.example.com", 1, 0, false, NULL);
	query_from("ext rcode, no EDNS", &cq, &q);
	n = wire_answer_write(&q, cq.b, blob, blob_len, 0, NULL, out, sizeof(out));
	assert_true(n > 0);
	assert_int_equal(out[3] & 0xf, WIRE_RCODE_SERVFAIL);
	free(blob);
	free(p);
}

static void test_prepare_malformed_table(void **state)
{
	(void)state;
#define RH(an, ns, ar) "beef 8180 0001 " an " " ns " " ar " " Q_WWW
	struct {
		const char *msg;
		const char *hex;
		int rc;
	} rows[] = {
		{"11 bytes", "beef 8180 0001 0000 0000 00", WIRE_E_FORMERR},
		{"qdcount 0", "beef 8180 0000 0000 0000 0000", WIRE_E_FORMERR},
		{"qdcount 2", "beef 8180 0002 0000 0000 0000" Q_WWW Q_WWW, WIRE_E_FORMERR},
		{"question truncated", "beef 8180 0001 0000 0000 0000 03777777 00 0001", WIRE_E_FORMERR},
		{"answer truncated", RH("0001", "0000", "0000") "c00c 0001 0001 0000", WIRE_E_FORMERR},
		{"answer count too high", RH("0002", "0000", "0000") ANS_A, WIRE_E_FORMERR},
		{"OPT in answer", RH("0001", "0000", "0000") OPT0, WIRE_E_FORMERR},
		{"two OPTs", RH("0000", "0000", "0002") OPT0 OPT0, WIRE_E_FORMERR},
		{"OPT owner not root", RH("0000", "0000", "0001") "c00c 0029 04d0 00000000 0000", WIRE_E_FORMERR},
		{"OPT option past RDATA", RH("0000", "0000", "0001") OPT_HDR("0005") "000a 0004 00", WIRE_E_FORMERR},
		{"NS name past RDLENGTH", RH("0001", "0000", "0000") "c010 0002 0001 00000e10 0003 036e7331c010",
		 WIRE_E_FORMERR},
		{"NS RDATA with a trailing byte", RH("0001", "0000", "0000") "c010 0002 0001 00000e10 0007 036e7331c01000",
		 WIRE_E_FORMERR},
		{"CNAME RDATA empty", RH("0001", "0000", "0000") "c00c 0005 0001 00000e10 0000", WIRE_E_FORMERR},
		{"MX without exchange", RH("0001", "0000", "0000") "c010 000f 0001 00000e10 0002 000a", WIRE_E_FORMERR},
		{"SOA counters short", RH("0000", "0001", "0000") "c010 0006 0001 00000e10 0017 c010 c010 "
							     "00000001 00000002 00000003 00000004 000005",
		 WIRE_E_FORMERR},
		{"SRV target past RDATA", RH("0001", "0000", "0000") "c00c 0021 0001 0000003c 0008 0001 0002 0035 03616263",
		 WIRE_E_FORMERR},
		{"NAPTR string past RDATA", RH("0001", "0000", "0000") "c00c 0023 0001 0000003c 0006 0001 0002 05 61",
		 WIRE_E_FORMERR},
		{"forward pointer in RDATA", RH("0001", "0000", "0000") "c00c 0005 0001 0000003c 0002 c0ff", WIRE_E_FORMERR},
		{"owner points at itself", RH("0001", "0000", "0000") "c021 0001 0001 0000003c 0004 c6336401", WIRE_E_FORMERR},
		{"trailing bytes are ignored in responses", RH("0001", "0000", "0000") ANS_A "00000000", 0},
		{"unknown type RDATA is opaque", RH("0001", "0000", "0000") "c00c ff00 0001 0000003c 0003 c0ffee", 0},
	};
#undef RH
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint8_t buf[1024];
		size_t n = hex(rows[i].hex, buf, sizeof(buf));
		uint8_t *exact = malloc(n);
		assert_non_null(exact);
		memcpy(exact, buf, n);
		uint8_t *blob = (uint8_t *)1;
		size_t blob_len = 1;
		uint32_t ttl = 1;
		EXPECT_INT(rows[i].msg, wire_answer_prepare(exact, n, NULL, &blob, &blob_len, &ttl), rows[i].rc);
		if (rows[i].rc != 0) {
			EXPECT_TRUE(rows[i].msg, blob == NULL);
			EXPECT_INT(rows[i].msg, ttl, 0);
		}
		free(blob);
		free(exact);
	}
}

/* Re-encoding compresses owners and RFC 1035 RDATA names, leaves SRV targets uncompressed. */
static void test_prepare_compression(void **state)
{
	(void)state;
	struct pkt *p = calloc(1, sizeof(*p));
	assert_non_null(p);
	hdr(p, 1, 0x8180, 1, 32, 0, 0);
	putname(p, "example.com");
	put16(p, WIRE_TYPE_ANY);
	put16(p, 1);
	for (int i = 0; i < 30; i++) {
		putname(p, "example.com");
		size_t at = rr_begin(p, WIRE_TYPE_A, 1, 60);
		put8(p, 192);
		put8(p, 0);
		put8(p, 2);
		put8(p, (uint8_t)i);
		rr_end(p, at);
	}
	putname(p, "example.com");
	size_t at = rr_begin(p, WIRE_TYPE_MX, 1, 60);
	put16(p, 10);
	putname(p, "mail.example.com");
	rr_end(p, at);
	putname(p, "example.com");
	at = rr_begin(p, 33, 1, 60); /* SRV */
	put16(p, 1);
	put16(p, 2);
	put16(p, 53);
	putname(p, "mail.example.com");
	rr_end(p, at);

	uint8_t *blob;
	size_t blob_len;
	uint32_t ttl;
	assert_int_equal(wire_answer_prepare(p->b, p->n, NULL, &blob, &blob_len, &ttl), 0);
	struct wire_blob_info bi;
	assert_int_equal(wire_blob_info(blob, blob_len, &bi), 0);
	/* header 12 + question 17 + 30 * (2 + 14) + MX (2+10+2+7) + SRV (2+10+6+18) */
	assert_int_equal(bi.msg_len, 12 + 17 + 30 * 16 + 21 + 36);
	const uint8_t *msg = blob + blob_len - bi.msg_len;
	/* The SRV target is written in full, never as a pointer (RFC 2782 / RFC 3597 §4). */
	assert_true(contains(msg + bi.msg_len - 18, 18, (const uint8_t *)"\4mail\7example\3com", 18));

	ldns_pkt *up = must_parse("compression upstream", p->b, p->n);
	char want[8192], got[8192];
	section_text(up, want, sizeof(want));
	ldns_pkt_free(up);
	struct pkt cq;
	make_query(&cq, 3, 0, "example.com", WIRE_TYPE_ANY, 0, false, NULL);
	struct wire_query q;
	query_from("compression", &cq, &q);
	uint8_t out[4096];
	int n = wire_answer_write(&q, cq.b, blob, blob_len, 0, NULL, out, sizeof(out));
	assert_int_equal(n, (int)bi.msg_len);
	ldns_pkt *pk = must_parse("compression", out, (size_t)n);
	section_text(pk, got, sizeof(got));
	assert_string_equal(got, want);
	ldns_pkt_free(pk);
	free(blob);
	free(p);
}

/* The reply keeps the client's 0x20 case in the question and in owners that point to it. */
static void test_write_0x20(void **state)
{
	(void)state;
	struct pkt *p = calloc(1, sizeof(*p));
	assert_non_null(p);
	build_positive(p, 0x8180, 300, 100, 3600);
	uint8_t *blob;
	size_t blob_len;
	uint32_t ttl;
	assert_int_equal(wire_answer_prepare(p->b, p->n, NULL, &blob, &blob_len, &ttl), 0);
	struct pkt cq;
	make_query(&cq, 9, 0x0100, "wWw.ExaMPLE.cOm", WIRE_TYPE_A, 0, false, NULL);
	struct wire_query q;
	query_from("0x20", &cq, &q);
	uint8_t out[2048];
	int n = wire_answer_write(&q, cq.b, blob, blob_len, 0, NULL, out, sizeof(out));
	assert_true(n > 0);
	assert_memory_equal(out + 12, cq.b + 12, q.qname_len + 4);
	ldns_pkt *pk = must_parse("0x20", out, (size_t)n);
	char *o = owner_of(ldns_pkt_answer(pk), 0);
	assert_string_equal(o, "wWw.ExaMPLE.cOm.");
	free(o);
	ldns_pkt_free(pk);

	/* A query for another name (or type) must not be answered from this blob. */
	make_query(&cq, 9, 0x0100, "www.example.org", WIRE_TYPE_A, 0, false, NULL);
	query_from("other name", &cq, &q);
	assert_int_equal(wire_answer_write(&q, cq.b, blob, blob_len, 0, NULL, out, sizeof(out)), -EINVAL);
	make_query(&cq, 9, 0x0100, "www.example.com", WIRE_TYPE_AAAA, 0, false, NULL);
	query_from("other type", &cq, &q);
	assert_int_equal(wire_answer_write(&q, cq.b, blob, blob_len, 0, NULL, out, sizeof(out)), -EINVAL);
	make_query(&cq, 9, 0x0100, "ww.example.com", WIRE_TYPE_A, 0, false, NULL);
	query_from("shorter name", &cq, &q);
	assert_int_equal(wire_answer_write(&q, cq.b, blob, blob_len, 0, NULL, out, sizeof(out)), -EINVAL);
	/* Not a blob. */
	assert_int_equal(wire_answer_write(&q, cq.b, p->b, p->n, 0, NULL, out, sizeof(out)), -EINVAL);
	assert_int_equal(wire_answer_write(&q, cq.b, blob, blob_len - 1, 0, NULL, out, sizeof(out)), -EINVAL);
	assert_int_equal(wire_blob_rcode(blob, 3), -EINVAL);
	free(blob);
	free(p);
}

/* A response with n_an answers and n_ar glue records, all A for www.example.com. */
static void build_big(struct pkt *p, unsigned n_an, unsigned n_ar)
{
	hdr(p, 1, 0x8180, 1, (uint16_t)n_an, 0, (uint16_t)n_ar);
	putname(p, "www.example.com");
	put16(p, 1);
	put16(p, 1);
	for (unsigned i = 0; i < n_an + n_ar; i++) {
		putptr(p, 12);
		size_t at = rr_begin(p, WIRE_TYPE_A, 1, 300);
		put8(p, 198);
		put8(p, 51);
		put8(p, 100);
		put8(p, (uint8_t)i);
		rr_end(p, at);
	}
}

static void test_write_fit(void **state)
{
	(void)state;
	struct {
		const char *msg;
		unsigned an, ar;
		uint16_t udp; /* client EDNS size, 0 = none */
		size_t cap;
		int len;      /* expected length or error */
		bool tc;
		unsigned ancount, arcount; /* raw counts in the reply */
	} rows[] = {
		{"60 answers, no EDNS, 512: TC", 60, 0, 0, 512, 33, true, 0, 0},
		{"60 answers, EDNS, 512: TC keeps OPT", 60, 0, 4096, 512, 44, true, 0, 1},
		{"60 answers, EDNS, 1232: fits", 60, 0, 4096, 1232, 33 + 960 + 11, false, 60, 1},
		{"exact fit without EDNS", 60, 0, 0, 993, 993, false, 60, 0},
		{"one byte short of fit", 60, 0, 0, 992, 33, true, 0, 0},
		{"additional dropped, not TC", 10, 40, 0, 512, 33 + 160, false, 10, 0},
		{"additional dropped, OPT kept", 10, 40, 1232, 512, 33 + 160 + 11, false, 10, 1},
		{"everything fits over TCP", 10, 40, 1232, 65535, 33 + 800 + 11, false, 10, 41},
		{"cap below question + OPT: TC without OPT", 60, 0, 1232, 40, 33, true, 0, 0},
		{"cap below question: ENOSPC", 60, 0, 0, 32, -ENOSPC, false, 0, 0},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct pkt *p = calloc(1, sizeof(*p));
		assert_non_null(p);
		build_big(p, rows[i].an, rows[i].ar);
		uint8_t *blob;
		size_t blob_len;
		uint32_t ttl;
		EXPECT_INT(rows[i].msg, wire_answer_prepare(p->b, p->n, NULL, &blob, &blob_len, &ttl), 0);
		struct pkt cq;
		make_query(&cq, 5, 0x0100, "www.example.com", 1, rows[i].udp, false, NULL);
		struct wire_query q;
		query_from(rows[i].msg, &cq, &q);
		uint8_t *out = malloc(rows[i].cap);
		assert_non_null(out);
		int n = wire_answer_write(&q, cq.b, blob, blob_len, 1, NULL, out, rows[i].cap);
		EXPECT_INT(rows[i].msg, n, rows[i].len);
		if (n > 0) {
			ldns_pkt *pk = must_parse(rows[i].msg, out, (size_t)n);
			EXPECT_INT(rows[i].msg, ldns_pkt_tc(pk), rows[i].tc);
			EXPECT_INT(rows[i].msg, ldns_pkt_qdcount(pk), 1);
			EXPECT_INT(rows[i].msg, out[6] << 8 | out[7], rows[i].ancount);
			EXPECT_INT(rows[i].msg, out[10] << 8 | out[11], rows[i].arcount);
			if (rows[i].ancount > 0)
				EXPECT_INT(rows[i].msg, ttl_of(ldns_pkt_answer(pk), rows[i].ancount - 1), 299);
			ldns_pkt_free(pk);
		}
		free(out);
		free(blob);
		free(p);
	}
}

static void test_write_ad(void **state)
{
	(void)state;
	struct {
		const char *msg;
		uint16_t upstream_flags, client_flags;
		bool client_do;
		bool ad;
	} rows[] = {
		{"AD upstream, client plain: cleared", 0x81a0, 0x0100, false, false},
		{"AD upstream, client AD: set", 0x81a0, 0x0120, false, true},
		{"AD upstream, client DO: set", 0x81a0, 0x0100, true, true},
		{"no AD upstream, client AD: clear", 0x8180, 0x0120, true, false},
		{"CD copied from the client", 0x8180, 0x0110, false, false},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct pkt *p = calloc(1, sizeof(*p));
		assert_non_null(p);
		build_positive(p, rows[i].upstream_flags, 300, 100, 3600);
		uint8_t *blob;
		size_t blob_len;
		uint32_t ttl;
		EXPECT_INT(rows[i].msg, wire_answer_prepare(p->b, p->n, NULL, &blob, &blob_len, &ttl), 0);
		struct pkt cq;
		make_query(&cq, 5, rows[i].client_flags, "www.example.com", 1, rows[i].client_do ? 1232 : 0,
			   rows[i].client_do, NULL);
		struct wire_query q;
		query_from(rows[i].msg, &cq, &q);
		uint8_t out[2048];
		int n = wire_answer_write(&q, cq.b, blob, blob_len, 0, NULL, out, sizeof(out));
		EXPECT_TRUE(rows[i].msg, n > 0);
		ldns_pkt *pk = must_parse(rows[i].msg, out, (size_t)n);
		EXPECT_INT(rows[i].msg, ldns_pkt_ad(pk), rows[i].ad);
		EXPECT_INT(rows[i].msg, ldns_pkt_cd(pk), (rows[i].client_flags & WIRE_FLAG_CD) != 0);
		EXPECT_INT(rows[i].msg, ldns_pkt_rd(pk), (rows[i].client_flags & WIRE_FLAG_RD) != 0);
		ldns_pkt_free(pk);
		free(blob);
		free(p);
	}
}

static void test_write_ecs_echo(void **state)
{
	(void)state;
	struct pkt *p = calloc(1, sizeof(*p));
	assert_non_null(p);
	build_positive(p, 0x8180, 300, 100, 3600);
	uint8_t *blob;
	size_t blob_len;
	uint32_t ttl;
	assert_int_equal(wire_answer_prepare(p->b, p->n, NULL, &blob, &blob_len, &ttl), 0);
	struct pkt cq;
	make_query(&cq, 5, 0x0100, "www.example.com", 1, 1232, false, "0008 0007 0001 18 00 cb0071");
	struct wire_query q;
	query_from("ECS echo", &cq, &q);
	assert_true(q.has_ecs);
	struct ecs echo = q.ecs;
	echo.scope = 24;
	uint8_t out[2048];
	int n = wire_answer_write(&q, cq.b, blob, blob_len, 0, &echo, out, sizeof(out));
	assert_true(n > 0);
	uint8_t want[32];
	size_t wn = hex("00 0029 04d0 00 00 0000 000b 0008 0007 0001 18 18 cb0071", want, sizeof(want));
	expect_bytes("ECS echo OPT", out + n - wn, wn, want, wn);
	ldns_pkt_free(must_parse("ECS echo", out, (size_t)n));

	/* No echo: no options at all, even though the client sent ECS. */
	n = wire_answer_write(&q, cq.b, blob, blob_len, 0, NULL, out, sizeof(out));
	assert_true(n > 0);
	wn = hex(OPT0, want, sizeof(want));
	expect_bytes("no echo OPT", out + n - wn, wn, want, wn);

	/* Echo for a client without EDNS is ignored: no OPT. */
	make_query(&cq, 5, 0x0100, "www.example.com", 1, 0, false, NULL);
	query_from("no EDNS", &cq, &q);
	n = wire_answer_write(&q, cq.b, blob, blob_len, 0, &echo, out, sizeof(out));
	assert_true(n > 0);
	assert_int_equal(out[10] << 8 | out[11], 3);

	/* An invalid echo is refused rather than written. */
	make_query(&cq, 5, 0x0100, "www.example.com", 1, 1232, false, NULL);
	query_from("bad echo", &cq, &q);
	struct ecs bad = {.family = 9, .source = 8};
	assert_int_equal(wire_answer_write(&q, cq.b, blob, blob_len, 0, &bad, out, sizeof(out)), -EINVAL);
	free(blob);
	free(p);
}

/* Serve-stale (RFC 8767): every TTL written becomes 30; EDE 3 after the echoed ECS, when it fits. */
static void test_write_stale(void **state)
{
	(void)state;
	struct pkt *p = calloc(1, sizeof(*p));
	assert_non_null(p);
	build_positive(p, 0x8180, 300, 100, 3600);
	uint8_t *blob;
	size_t blob_len;
	uint32_t ttl;
	assert_int_equal(wire_answer_prepare(p->b, p->n, NULL, &blob, &blob_len, &ttl), 0);
	static const struct wire_ede stale = {WIRE_EDE_STALE_ANSWER, NULL};
	struct pkt cq;
	make_query(&cq, 5, 0x0100, "www.example.com", 1, 1232, false, "0008 0007 0001 18 00 cb0071");
	struct wire_query q;
	query_from("stale, ECS echo", &cq, &q);
	struct ecs echo = q.ecs;
	echo.scope = 24;
	uint8_t out[2048];
	int n = wire_answer_write_stale(&q, blob, blob_len, 30, &echo, &stale, out, sizeof(out));
	assert_true(n > 0);
	uint8_t want[64];
	size_t wn = hex("00 0029 04d0 00 00 0000 0011 0008 0007 0001 18 18 cb0071 000f 0002 0003", want, sizeof(want));
	expect_bytes("stale OPT: ECS then EDE 3", out + n - wn, wn, want, wn);
	ldns_pkt *pk = must_parse("stale, ECS echo", out, (size_t)n);
	assert_int_equal(ldns_pkt_get_rcode(pk), 0);
	ldns_rr_list *lists[3] = {ldns_pkt_answer(pk), ldns_pkt_authority(pk), ldns_pkt_additional(pk)};
	size_t counts[3] = {2, 1, 3};
	for (int k = 0; k < 3; k++) {
		assert_int_equal(ldns_rr_list_rr_count(lists[k]), counts[k]);
		for (size_t i = 0; i < counts[k]; i++)
			assert_int_equal(ttl_of(lists[k], i), 30);
	}
	ldns_pkt_free(pk);

	/* with an EXTRA-TEXT, and without echo */
	static const struct wire_ede texted = {WIRE_EDE_STALE_ANSWER, "abc"};
	n = wire_answer_write_stale(&q, blob, blob_len, 30, NULL, &texted, out, sizeof(out));
	assert_true(n > 0);
	wn = hex("00 0029 04d0 00 00 0000 0009 000f 0005 0003 616263", want, sizeof(want));
	expect_bytes("stale OPT with text", out + n - wn, wn, want, wn);
	ldns_pkt_free(must_parse("stale with text", out, (size_t)n));

	/* a client without EDNS: TTLs 30, no OPT, no EDE */
	make_query(&cq, 5, 0x0100, "www.example.com", 1, 0, false, NULL);
	query_from("stale, no EDNS", &cq, &q);
	n = wire_answer_write_stale(&q, blob, blob_len, 30, NULL, &stale, out, sizeof(out));
	assert_true(n > 0);
	assert_int_equal(out[10] << 8 | out[11], 3);
	pk = must_parse("stale, no EDNS", out, (size_t)n);
	assert_int_equal(ttl_of(ldns_pkt_answer(pk), 0), 30);
	assert_int_equal(ttl_of(ldns_pkt_additional(pk), 2), 30);
	ldns_pkt_free(pk);
	free(blob);

	/* the records win over the EDE: an exact fit without it is written without it */
	build_big(p, 60, 0);
	assert_int_equal(wire_answer_prepare(p->b, p->n, NULL, &blob, &blob_len, &ttl), 0);
	make_query(&cq, 5, 0x0100, "www.example.com", 1, 4096, false, NULL);
	query_from("stale, tight", &cq, &q);
	n = wire_answer_write_stale(&q, blob, blob_len, 30, NULL, &stale, out, 33 + 960 + 11);
	assert_int_equal(n, 33 + 960 + 11);
	pk = must_parse("stale, tight", out, (size_t)n);
	assert_false(ldns_pkt_tc(pk));
	assert_int_equal(ttl_of(ldns_pkt_answer(pk), 59), 30);
	ldns_pkt_free(pk);
	n = wire_answer_write_stale(&q, blob, blob_len, 30, NULL, &stale, out, 33 + 960 + 11 + 6);
	assert_int_equal(n, 33 + 960 + 11 + 6);
	/* truncated to header and question: TC, the OPT and its EDE, nothing to patch */
	n = wire_answer_write_stale(&q, blob, blob_len, 30, NULL, &stale, out, 512);
	assert_int_equal(n, 33 + 11 + 6);
	pk = must_parse("stale, TC", out, (size_t)n);
	assert_true(ldns_pkt_tc(pk));
	ldns_pkt_free(pk);
	assert_int_equal(wire_answer_write_stale(&q, p->b, p->n, 30, NULL, &stale, out, sizeof(out)), -EINVAL);
	free(blob);
	free(p);
}

/* ---- upstream ---- */

static void test_query_build(void **state)
{
	(void)state;
	uint8_t qname[] = "\3www\7example\3com";
	struct ecs e;
	ecs_v4(&e, "198.51.100.1", 32, 0);
	uint8_t out[512], want[512];
	int n = wire_query_build(0x4242, false, true, qname, sizeof(qname), WIRE_TYPE_A, WIRE_CLASS_IN, &e, out,
				 sizeof(out));
	size_t wn = hex("4242 0000 0001 0000 0000 0001" Q_WWW "00 0029 04d0 00 00 8000 000c 0008 0008 0001 20 00 c6336401",
			want, sizeof(want));
	expect_bytes("query with ECS", out, n > 0 ? (size_t)n : 0, want, wn);
	ldns_pkt_free(must_parse("query with ECS", out, (size_t)n));
	/* and it parses as a client query with the same ECS */
	struct wire_query q;
	assert_int_equal(wire_parse_query(out, (size_t)n, &q), 0);
	assert_true(q.has_ecs);
	assert_true(ecs_match(&e, &q.ecs));

	n = wire_query_build(0x0102, true, false, qname, sizeof(qname), WIRE_TYPE_AAAA, WIRE_CLASS_IN, NULL, out,
			     sizeof(out));
	wn = hex("0102 0100 0001 0000 0000 0001 03777777 076578616d706c65 03636f6d 00 001c 0001" OPT0, want, sizeof(want));
	expect_bytes("query without ECS", out, n > 0 ? (size_t)n : 0, want, wn);

	assert_int_equal(wire_query_build(1, true, false, qname, sizeof(qname), 1, 1, NULL, out, 43), -ENOSPC);
	assert_int_equal(wire_query_build(1, true, false, qname, sizeof(qname), 1, 1, NULL, out, 44), 44);
	assert_int_equal(wire_query_build(1, true, false, qname, sizeof(qname) - 1, 1, 1, NULL, out, sizeof(out)),
			 -EINVAL);
	assert_int_equal(wire_query_build(1, true, false, (const uint8_t *)"\x40", 1, 1, 1, NULL, out, sizeof(out)),
			 -EINVAL);
	struct ecs bad = {.family = 3, .source = 8};
	assert_int_equal(wire_query_build(1, true, false, qname, sizeof(qname), 1, 1, &bad, out, sizeof(out)), -EINVAL);
}

struct check_row {
	const char *msg;
	uint16_t id;      /* response ID (we sent 0x4242) */
	uint16_t flags;
	uint16_t qd;
	const char *qname;
	uint16_t qtype, qclass;
	const char *opt;  /* OPT options hex; NULL = no OPT */
	uint8_t ext_rcode;
	bool sent_ecs;    /* we sent 198.51.100.1/32 */
	size_t cut;       /* bytes cut from the end */
	bool two_opts;
	int rc;
	bool has_ecs;
	uint8_t scope;
	int rcode;
};

static const struct check_row check_rows[] = {
	{"plain answer", 0x4242, 0x8180, 1, "www.example.com", 1, 1, NULL, 0, false, 0, false, 0, false, 0, 0},
	{"ECS sent, none back: accepted", 0x4242, 0x8180, 1, "www.example.com", 1, 1, "", 0, true, 0, false, 0, false, 0,
	 0},
	{"ECS sent, echoed with scope 24", 0x4242, 0x8180, 1, "www.example.com", 1, 1, "0008 0008 0001 20 18 c6336401", 0,
	 true, 0, false, 0, true, 24, 0},
	{"ECS sent, echoed with scope 0", 0x4242, 0x8180, 1, "www.example.com", 1, 1, "0008 0008 0001 20 00 c6336401", 0,
	 true, 0, false, 0, true, 0, 0},
	{"ECS other address", 0x4242, 0x8180, 1, "www.example.com", 1, 1, "0008 0008 0001 20 18 c6336402", 0, true, 0,
	 false, WIRE_E_MISMATCH, true, 24, 0},
	{"ECS other source length", 0x4242, 0x8180, 1, "www.example.com", 1, 1, "0008 0007 0001 18 18 c63364", 0, true,
	 0, false, WIRE_E_MISMATCH, true, 24, 0},
	{"ECS other family", 0x4242, 0x8180, 1, "www.example.com", 1, 1, "0008 0008 0002 20 00 20010db8", 0, true, 0,
	 false, WIRE_E_MISMATCH, true, 0, 0},
	{"ECS back though none sent", 0x4242, 0x8180, 1, "www.example.com", 1, 1, "0008 0008 0001 20 18 c6336401", 0,
	 false, 0, false, WIRE_E_MISMATCH, true, 24, 0},
	{"malformed ECS back", 0x4242, 0x8180, 1, "www.example.com", 1, 1, "0008 0003 000120", 0, true, 0, false,
	 WIRE_E_FORMERR, false, 0, 0},
	{"unknown option ignored", 0x4242, 0x8180, 1, "www.example.com", 1, 1, COOKIE, 0, true, 0, false, 0, false, 0, 0},
	{"ID differs", 0x4243, 0x8180, 1, "www.example.com", 1, 1, NULL, 0, false, 0, false, WIRE_E_MISMATCH, false, 0,
	 0},
	{"QR clear", 0x4242, 0x0180, 1, "www.example.com", 1, 1, NULL, 0, false, 0, false, WIRE_E_MISMATCH, false, 0, 0},
	{"opcode NOTIFY", 0x4242, 0xa180, 1, "www.example.com", 1, 1, NULL, 0, false, 0, false, WIRE_E_MISMATCH, false, 0,
	 0},
	{"qname differs", 0x4242, 0x8180, 1, "www.example.org", 1, 1, NULL, 0, false, 0, false, WIRE_E_MISMATCH, false, 0,
	 0},
	{"qname case differs: accepted", 0x4242, 0x8180, 1, "WWW.Example.COM", 1, 1, NULL, 0, false, 0, false, 0, false,
	 0, 0},
	{"qtype differs", 0x4242, 0x8180, 1, "www.example.com", 28, 1, NULL, 0, false, 0, false, WIRE_E_MISMATCH, false,
	 0, 0},
	{"qclass differs", 0x4242, 0x8180, 1, "www.example.com", 1, 3, NULL, 0, false, 0, false, WIRE_E_MISMATCH, false,
	 0, 0},
	{"no question, REFUSED", 0x4242, 0x8185, 0, "www.example.com", 1, 1, NULL, 0, false, 0, false, WIRE_E_MISMATCH,
	 false, 0, 5},
	{"two questions", 0x4242, 0x8180, 2, "www.example.com", 1, 1, NULL, 0, false, 0, false, WIRE_E_FORMERR, false, 0,
	 0},
	{"cut in the answer, TC=0", 0x4242, 0x8180, 1, "www.example.com", 1, 1, NULL, 0, false, 3, false, WIRE_E_FORMERR,
	 false, 0, 0},
	{"cut in the answer, TC=1: accepted", 0x4242, 0x8380, 1, "www.example.com", 1, 1, NULL, 0, false, 3, false, 0,
	 false, 0, 0},
	{"two OPTs", 0x4242, 0x8180, 1, "www.example.com", 1, 1, "", 0, false, 0, true, WIRE_E_FORMERR, false, 0, 0},
	{"extended rcode", 0x4242, 0x8187, 1, "www.example.com", 1, 1, "", 1, false, 0, false, 0, false, 0, 23},
	{"NXDOMAIN with AA", 0x4242, 0x8583, 1, "www.example.com", 1, 1, NULL, 0, false, 0, false, 0, false, 0, 3},
};

static void test_response_check_table(void **state)
{
	(void)state;
	uint8_t qname[] = "\3www\7example\3com";
	struct ecs sent;
	ecs_v4(&sent, "198.51.100.1", 32, 0);
	for (size_t i = 0; i < sizeof(check_rows) / sizeof(check_rows[0]); i++) {
		const struct check_row *r = &check_rows[i];
		struct pkt *p = calloc(1, sizeof(*p));
		assert_non_null(p);
		hdr(p, r->id, r->flags, r->qd, r->qd ? 1 : 0, 0, (uint16_t)(r->opt ? (r->two_opts ? 2 : 1) : 0));
		for (unsigned k = 0; k < r->qd; k++) {
			putname(p, r->qname);
			put16(p, r->qtype);
			put16(p, r->qclass);
		}
		if (r->qd) {
			putptr(p, 12);
			size_t at = rr_begin(p, WIRE_TYPE_A, 1, 60);
			put_a(p, "198.51.100.9");
			rr_end(p, at);
		}
		if (r->opt != NULL) {
			put_opt(p, 1232, r->ext_rcode, 0, false, r->opt);
			if (r->two_opts)
				put_opt(p, 1232, 0, 0, false, NULL);
		}
		size_t n = p->n - r->cut;
		uint8_t *exact = malloc(n);
		assert_non_null(exact);
		memcpy(exact, p->b, n);
		struct wire_resp_info info;
		int rc = wire_response_check(exact, n, 0x4242, qname, sizeof(qname), WIRE_TYPE_A, WIRE_CLASS_IN,
					     r->sent_ecs ? &sent : NULL, &info);
		EXPECT_INT(r->msg, rc, r->rc);
		EXPECT_INT(r->msg, info.has_ecs, r->has_ecs);
		if (r->has_ecs)
			EXPECT_INT(r->msg, info.ecs.scope, r->scope);
		EXPECT_INT(r->msg, info.rcode, r->rcode);
		EXPECT_INT(r->msg, info.tc, (r->flags & WIRE_FLAG_TC) != 0);
		if (rc == 0) {
			EXPECT_INT(r->msg, info.aa, (r->flags & WIRE_FLAG_AA) != 0);
			EXPECT_INT(r->msg, info.has_edns, r->opt != NULL);
		}
		/* info is optional */
		EXPECT_INT(r->msg,
			   wire_response_check(exact, n, 0x4242, qname, sizeof(qname), WIRE_TYPE_A, WIRE_CLASS_IN,
					       r->sent_ecs ? &sent : NULL, NULL),
			   r->rc);
		free(exact);
		free(p);
	}
	uint8_t tiny[11] = {0x42, 0x42, 0x81, 0x80};
	assert_int_equal(wire_response_check(tiny, sizeof(tiny), 0x4242, qname, sizeof(qname), 1, 1, NULL, NULL),
			 WIRE_E_FORMERR);
}

/* ---- CNAME chains ---- */

struct cname_row {
	const char *msg;
	uint16_t qtype;
	uint16_t flags;
	const char *answers[20]; /* "owner TYPE [target]" */
	const char *soa;         /* owner of an SOA in authority, or NULL */
	int rc;
	const char *target;      /* expected target (text) when rc == 1 */
};

static const struct cname_row cname_rows[] = {
	{"no CNAME", 1, 0x8180, {"www.example.com A"}, NULL, 0, NULL},
	{"no answer at all", 1, 0x8180, {NULL}, NULL, 0, NULL},
	{"CNAME without target data", 1, 0x8180, {"www.example.com CNAME cdn.example.net"}, NULL, 1, "cdn.example.net."},
	{"target lower-cased", 1, 0x8180, {"www.example.com CNAME CDN.Example.NET"}, NULL, 1, "cdn.example.net."},
	{"owner matched case-insensitively", 1, 0x8180, {"WWW.EXAMPLE.COM CNAME a.example.net"}, NULL, 1,
	 "a.example.net."},
	{"CNAME with target data", 1, 0x8180, {"www.example.com CNAME cdn.example.net", "cdn.example.net A"}, NULL, 0,
	 NULL},
	{"target data listed first", 1, 0x8180, {"cdn.example.net A", "www.example.com CNAME cdn.example.net"}, NULL, 0,
	 NULL},
	{"two hops, complete", 1, 0x8180,
	 {"www.example.com CNAME a.example.net", "a.example.net CNAME b.example.org", "b.example.org A"}, NULL, 0, NULL},
	{"two hops, incomplete", 1, 0x8180, {"www.example.com CNAME a.example.net", "a.example.net CNAME b.example.org"},
	 NULL, 1, "b.example.org."},
	{"target has only another type", 28, 0x8180, {"www.example.com CNAME a.example.net", "a.example.net A"}, NULL, 1,
	 "a.example.net."},
	{"qtype CNAME", WIRE_TYPE_CNAME, 0x8180, {"www.example.com CNAME a.example.net"}, NULL, 0, NULL},
	{"qtype ANY", WIRE_TYPE_ANY, 0x8180, {"www.example.com CNAME a.example.net"}, NULL, 0, NULL},
	{"NXDOMAIN settles the target", 1, 0x8183, {"www.example.com CNAME a.example.net"}, NULL, 0, NULL},
	{"SOA of the target's zone: NODATA", 1, 0x8180, {"www.example.com CNAME a.example.net"}, "example.net", 0, NULL},
	{"SOA equal to the target", 1, 0x8180, {"www.example.com CNAME example.net"}, "example.net", 0, NULL},
	{"SOA of another zone", 1, 0x8180, {"www.example.com CNAME a.example.net"}, "example.com", 1, "a.example.net."},
	{"SOA of a sibling with a common suffix", 1, 0x8180, {"www.example.com CNAME a.xample.net"}, "example.net", 1,
	 "a.xample.net."},
	{"unrelated CNAMEs ignored", 1, 0x8180, {"other.example.com CNAME x.example.net", "www.example.com A"}, NULL, 0,
	 NULL},
	{"loop", 1, 0x8180, {"www.example.com CNAME a.example.net", "a.example.net CNAME www.example.com"}, NULL,
	 WIRE_E_FORMERR, NULL},
	{"self loop", 1, 0x8180, {"www.example.com CNAME www.example.com"}, NULL, WIRE_E_FORMERR, NULL},
};

static void put_spec_rr(struct pkt *p, const char *spec)
{
	char owner[256], type[16], target[256] = "";
	int k = sscanf(spec, "%255s %15s %255s", owner, type, target);
	assert_true(k >= 2);
	putname(p, owner);
	if (strcmp(type, "CNAME") == 0) {
		size_t at = rr_begin(p, WIRE_TYPE_CNAME, 1, 60);
		putname(p, target);
		rr_end(p, at);
	} else {
		size_t at = rr_begin(p, WIRE_TYPE_A, 1, 60);
		put_a(p, "198.51.100.77");
		rr_end(p, at);
	}
}

static void build_cname(struct pkt *p, uint16_t flags, uint16_t qtype, const char *const *answers, unsigned n,
			const char *soa)
{
	hdr(p, 1, flags, 1, (uint16_t)n, soa ? 1 : 0, 0);
	putname(p, "www.example.com");
	put16(p, qtype);
	put16(p, 1);
	for (unsigned i = 0; i < n; i++)
		put_spec_rr(p, answers[i]);
	if (soa != NULL) {
		size_t zone = putname(p, soa);
		size_t at = rr_begin(p, WIRE_TYPE_SOA, 1, 60);
		putptr(p, zone);
		putptr(p, zone);
		for (int i = 0; i < 5; i++)
			put32(p, 60);
		rr_end(p, at);
	}
}

static void test_cname_target_table(void **state)
{
	(void)state;
	uint8_t qname[] = "\3www\7example\3com";
	for (size_t i = 0; i < sizeof(cname_rows) / sizeof(cname_rows[0]); i++) {
		const struct cname_row *r = &cname_rows[i];
		unsigned n = 0;
		while (n < 20 && r->answers[n] != NULL)
			n++;
		struct pkt *p = calloc(1, sizeof(*p));
		assert_non_null(p);
		build_cname(p, r->flags, r->qtype, r->answers, n, r->soa);
		uint8_t target[WIRE_MAX_NAME];
		size_t tlen = 0;
		int rc = wire_cname_target(p->b, p->n, qname, sizeof(qname), r->qtype, target, &tlen);
		EXPECT_INT(r->msg, rc, r->rc);
		if (rc == 1) {
			char text[512];
			EXPECT_TRUE(r->msg, wire_name_to_text(target, tlen, text, sizeof(text)) > 0);
			if (strcmp(text, r->target) != 0) {
				print_error("%s: target %s, want %s\n", r->msg, text, r->target);
				fail();
			}
		}
		free(p);
	}
}

static void test_cname_chain_length(void **state)
{
	(void)state;
	uint8_t qname[] = "\3www\7example\3com";
	struct {
		const char *msg;
		unsigned hops;
		int rc;
	} rows[] = {
		{"16 hops: followed", 16, 1},
		{"17 hops: too long", 17, WIRE_E_FORMERR},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct pkt *p = calloc(1, sizeof(*p));
		assert_non_null(p);
		hdr(p, 1, 0x8180, 1, (uint16_t)rows[i].hops, 0, 0);
		putname(p, "www.example.com");
		put16(p, 1);
		put16(p, 1);
		char owner[64] = "www.example.com", next[64];
		for (unsigned h = 0; h < rows[i].hops; h++) {
			snprintf(next, sizeof(next), "h%u.example.net", h + 1);
			putname(p, owner);
			size_t at = rr_begin(p, WIRE_TYPE_CNAME, 1, 60);
			putname(p, next);
			rr_end(p, at);
			strcpy(owner, next);
		}
		uint8_t target[WIRE_MAX_NAME];
		size_t tlen;
		EXPECT_INT(rows[i].msg, wire_cname_target(p->b, p->n, qname, sizeof(qname), 1, target, &tlen), rows[i].rc);
		free(p);
	}
}

static void test_cname_target_compressed(void **state)
{
	(void)state;
	uint8_t qname[] = "\3www\7example\3com", buf[256];
	/* www CNAME cdf.example.com, the target a pointer into the question; then a bad RDATA. */
	size_t n = hex("0001 8180 0001 0001 0000 0000" Q_WWW "c00c 0005 0001 0000012c 0006 03636466 c010", buf, sizeof(buf));
	uint8_t target[WIRE_MAX_NAME];
	size_t tlen = 0;
	assert_int_equal(wire_cname_target(buf, n, qname, sizeof(qname), 1, target, &tlen), 1);
	assert_int_equal(tlen, 17);
	assert_memory_equal(target, "\3cdf\7example\3com", 17);
	n = hex("0001 8180 0001 0001 0000 0000" Q_WWW "c00c 0005 0001 0000012c 0007 03636466 c010 00", buf, sizeof(buf));
	assert_int_equal(wire_cname_target(buf, n, qname, sizeof(qname), 1, target, &tlen), WIRE_E_FORMERR);
	assert_int_equal(wire_cname_target(buf, 11, qname, sizeof(qname), 1, target, &tlen), WIRE_E_FORMERR);
}

/* ---- splice ---- */

static void test_splice(void **state)
{
	(void)state;
	struct pkt *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	assert_non_null(a);
	assert_non_null(b);
	/* first: www.example.com CNAME cdn.example.net, an NS in authority, an OPT */
	hdr(a, 0x1111, 0x85a0, 1, 1, 1, 1);
	putname(a, "www.example.com");
	put16(a, 1);
	put16(a, 1);
	putptr(a, 12);
	size_t at = rr_begin(a, WIRE_TYPE_CNAME, 1, 300);
	putname(a, "cdn.example.net");
	rr_end(a, at);
	putptr(a, 16);
	at = rr_begin(a, WIRE_TYPE_NS, 1, 3600);
	put8(a, 2);
	put(a, "ns", 2);
	putptr(a, 16);
	rr_end(a, at);
	put_opt(a, 1232, 0, 0, true, "0008 0007 0001 18 18 c63364");
	/* second: cdn.example.net A x2, NS example.net, glue, OPT in the middle */
	hdr(b, 0x2222, 0x8180, 1, 2, 1, 2);
	putname(b, "cdn.example.net");
	put16(b, 1);
	put16(b, 1);
	for (int i = 0; i < 2; i++) {
		putptr(b, 12);
		at = rr_begin(b, WIRE_TYPE_A, 1, (uint32_t)(60 + i));
		put_a(b, i ? "203.0.113.8" : "203.0.113.7");
		rr_end(b, at);
	}
	putptr(b, 16);
	at = rr_begin(b, WIRE_TYPE_NS, 1, 7200);
	size_t gns = b->n;
	put8(b, 1);
	put(b, "a", 1);
	putptr(b, 16);
	rr_end(b, at);
	put_opt(b, 1232, 0, 0, false, "0008 0007 0001 18 18 c63364");
	putptr(b, gns);
	at = rr_begin(b, WIRE_TYPE_A, 1, 7200);
	put_a(b, "192.0.2.1");
	rr_end(b, at);

	uint8_t *s;
	size_t sl;
	assert_int_equal(wire_splice(a->b, a->n, b->b, b->n, &s, &sl), 0);
	ldns_pkt *pk = must_parse("splice", s, sl);
	assert_int_equal(ldns_pkt_id(pk), 0x1111);
	assert_int_equal(ldns_pkt_ancount(pk), 3);
	assert_int_equal(ldns_pkt_nscount(pk), 1);
	assert_int_equal(ldns_pkt_arcount(pk), 1);
	assert_false(ldns_pkt_edns(pk));
	assert_false(ldns_pkt_aa(pk));
	assert_false(ldns_pkt_ad(pk)); /* second had no AD */
	assert_true(ldns_pkt_rd(pk));
	char *t = owner_of(ldns_pkt_answer(pk), 2);
	assert_string_equal(t, "cdn.example.net.");
	free(t);
	t = owner_of(ldns_pkt_additional(pk), 0);
	assert_string_equal(t, "a.example.net.");
	free(t);
	t = owner_of(ldns_pkt_question(pk), 0);
	assert_string_equal(t, "www.example.com.");
	free(t);
	ldns_pkt_free(pk);

	/* The splice is a complete positive answer for the original question. */
	uint8_t qname[] = "\3www\7example\3com", target[WIRE_MAX_NAME];
	size_t tlen;
	assert_int_equal(wire_cname_target(s, sl, qname, sizeof(qname), 1, target, &tlen), 0);
	assert_int_equal(wire_cname_target(a->b, a->n, qname, sizeof(qname), 1, target, &tlen), 1);
	uint8_t *blob;
	size_t blob_len;
	uint32_t ttl;
	assert_int_equal(wire_answer_prepare(s, sl, NULL, &blob, &blob_len, &ttl), 0);
	assert_int_equal(ttl, 60);
	free(blob);

	/* rcode is the second's; chains of splices work. */
	b->b[3] = (uint8_t)((b->b[3] & 0xf0) | WIRE_RCODE_NXDOMAIN);
	uint8_t *s2;
	size_t sl2;
	assert_int_equal(wire_splice(s, sl, b->b, b->n, &s2, &sl2), 0);
	pk = must_parse("splice of splice", s2, sl2);
	assert_int_equal(ldns_pkt_get_rcode(pk), LDNS_RCODE_NXDOMAIN);
	assert_int_equal(ldns_pkt_ancount(pk), 5);
	ldns_pkt_free(pk);
	free(s2);
	free(s);

	/* Malformed inputs. */
	assert_int_equal(wire_splice(a->b, 11, b->b, b->n, &s, &sl), WIRE_E_FORMERR);
	assert_null(s);
	assert_int_equal(wire_splice(a->b, a->n, b->b, b->n - 1, &s, &sl), WIRE_E_FORMERR);
	assert_int_equal(wire_splice(a->b, a->n - 1, b->b, b->n, &s, &sl), WIRE_E_FORMERR);
	free(a);
	free(b);
}

/* ---- names ---- */

static void test_name_from_text(void **state)
{
	(void)state;
	char l63[80], l64[80], long255[300], long256[300];
	memset(l63, 'a', 63);
	l63[63] = '\0';
	memset(l64, 'a', 64);
	l64[64] = '\0';
	/* 4 labels: 63 + 63 + 63 + 61 chars = 254 bytes wire + root = 255 */
	for (int i = 0; i < 3; i++) {
		memcpy(long255 + 64 * i, l63, 63);
		long255[64 * i + 63] = '.';
	}
	memcpy(long256, long255, 192);
	memset(long255 + 192, 'b', 61);
	memcpy(long255 + 253, ".", 2);
	memset(long256 + 192, 'b', 62);
	memcpy(long256 + 254, ".", 2);
	struct {
		const char *msg, *text;
		int rc;
		const char *hex;
	} rows[] = {
		{"absolute", "www.example.com.", 17, "03777777 076578616d706c65 03636f6d 00"},
		{"relative means absolute", "www.example.com", 17, "03777777 076578616d706c65 03636f6d 00"},
		{"root", ".", 1, "00"},
		{"case kept", "WwW.", 5, "03577757 00"},
		{"escaped dot", "a\\.b.c.", 7, "03612e62 0163 00"},
		{"escaped backslash", "a\\\\b.", 5, "03615c62 00"},
		{"decimal escape", "\\065bc.", 5, "03416263 00"},
		{"decimal escape of 0", "\\000.", 3, "0100 00"},
		{"label of 63", l63, 65, NULL},
		{"name of 255", long255, 255, NULL},
		{"empty", "", -EINVAL, NULL},
		{"empty label", "a..b", -EINVAL, NULL},
		{"leading dot", ".a", -EINVAL, NULL},
		{"double root", "..", -EINVAL, NULL},
		{"label of 64", l64, -EINVAL, NULL},
		{"name of 256", long256, -EINVAL, NULL},
		{"short decimal escape", "\\25", -EINVAL, NULL},
		{"decimal escape above 255", "\\256.", -EINVAL, NULL},
		{"trailing backslash", "a\\", -EINVAL, NULL},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint8_t out[WIRE_MAX_NAME], want[WIRE_MAX_NAME];
		int rc = wire_name_from_text(rows[i].text, out, sizeof(out));
		EXPECT_INT(rows[i].msg, rc, rows[i].rc);
		if (rc > 0) {
			EXPECT_INT(rows[i].msg, wire_name_check(out, (size_t)rc), 0);
			if (rows[i].hex != NULL) {
				size_t wn = hex(rows[i].hex, want, sizeof(want));
				expect_bytes(rows[i].msg, out, (size_t)rc, want, wn);
			}
		}
	}
	uint8_t small[16];
	assert_int_equal(wire_name_from_text("www.example.com", small, 16), -ENOSPC);
}

static void test_name_to_text(void **state)
{
	(void)state;
	struct {
		const char *msg, *hex;
		int rc;
		const char *text;
	} rows[] = {
		{"plain", "03777777 076578616d706c65 03636f6d 00", 16, "www.example.com."},
		{"root", "00", 1, "."},
		{"case kept", "03577757 00", 4, "WwW."},
		{"dot and backslash escaped", "03612e62 015c 00", 8, "a\\.b.\\\\."},
		{"space and binary as \\DDD", "02 2000 00", 9, "\\032\\000."},
		{"missing root", "03777777", -EINVAL, NULL},
		{"length beyond", "05777777 00", -EINVAL, NULL},
		{"bytes after the root", "01 61 00 00", -EINVAL, NULL},
		{"label type 0x40", "41 00", -EINVAL, NULL},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint8_t name[64];
		size_t n = hex(rows[i].hex, name, sizeof(name));
		char text[256];
		int rc = wire_name_to_text(name, n, text, sizeof(text));
		EXPECT_INT(rows[i].msg, rc, rows[i].rc);
		if (rc > 0) {
			if (strcmp(text, rows[i].text) != 0) {
				print_error("%s: %s, want %s\n", rows[i].msg, text, rows[i].text);
				fail();
			}
			/* and back */
			uint8_t back[WIRE_MAX_NAME];
			EXPECT_INT(rows[i].msg, wire_name_from_text(text, back, sizeof(back)), (int)n);
			expect_bytes(rows[i].msg, back, n, name, n);
		}
	}
	char small[16];
	uint8_t www[] = "\3www\7example\3com";
	assert_int_equal(wire_name_to_text(www, sizeof(www), small, 16), -ENOSPC);
	char exact[17];
	assert_int_equal(wire_name_to_text(www, sizeof(www), exact, 17), 16);
	assert_int_equal(wire_name_to_text((const uint8_t *)"", 1, small, 1), -ENOSPC);
}

static void test_name_utils(void **state)
{
	(void)state;
	uint8_t www[] = "\3www\7example\3com", WWW[] = "\3WWW\7EXAMPLE\3COM", ex[] = "\7example\3com",
		xe[] = "\6xample\3com", com[] = "\3com", root[] = "";
	assert_int_equal(wire_name_labels(www, sizeof(www)), 3);
	assert_int_equal(wire_name_labels(root, 1), 0);
	assert_int_equal(wire_name_labels(www, sizeof(www) - 1), -EINVAL);
	assert_int_equal(wire_name_parent(www, sizeof(www)), 4);
	assert_memory_equal(www + 4, ex, sizeof(ex));
	assert_int_equal(wire_name_parent(com, sizeof(com)), 4);
	assert_int_equal(wire_name_parent(root, 1), -EINVAL);
	assert_true(wire_name_equal(www, sizeof(www), WWW, sizeof(WWW)));
	assert_false(wire_name_equal(www, sizeof(www), ex, sizeof(ex)));
	assert_true(wire_name_in_zone(WWW, sizeof(WWW), ex, sizeof(ex)));
	assert_true(wire_name_in_zone(www, sizeof(www), www, sizeof(www)));
	assert_true(wire_name_in_zone(www, sizeof(www), root, 1));
	assert_false(wire_name_in_zone(ex, sizeof(ex), www, sizeof(www)));
	assert_false(wire_name_in_zone(ex, sizeof(ex), xe, sizeof(xe))); /* suffix bytes, not a label boundary */
	uint8_t lc[sizeof(WWW)];
	wire_name_lower(WWW, sizeof(WWW), lc);
	assert_memory_equal(lc, www, sizeof(www));
	assert_int_equal(wire_name_check(www, sizeof(www)), 0);
	assert_int_equal(wire_name_check(www, sizeof(www) + 1), -EINVAL);
	assert_int_equal(wire_name_check(www, 0), -EINVAL);
	assert_string_equal(wire_strerror(WIRE_E_FORMERR), "malformed DNS message");
	assert_string_equal(wire_strerror(WIRE_E_MISMATCH), "response does not answer our query");
	assert_string_equal(wire_strerror(-ENOSPC), "buffer too small");
	assert_string_equal(wire_strerror(12345), "unknown error");
}

/* ---- case folding: every byte value, at every position and length ---- */

static uint8_t ref_lower(uint8_t c)
{
	return (c >= 'A' && c <= 'Z') ? (uint8_t)(c + ('a' - 'A')) : c;
}

static uint64_t fold_rng = 0x9e3779b97f4a7c15ull;

static uint8_t rnd8(void)
{
	fold_rng ^= fold_rng << 13;
	fold_rng ^= fold_rng >> 7;
	fold_rng ^= fold_rng << 17;
	return (uint8_t)(fold_rng >> 32);
}

/* One buffer of len bytes through wire_name_lower (copy and in place) and wire_name_equal. */
static void check_fold(const uint8_t *src, size_t len, size_t flip)
{
	uint8_t want[WIRE_MAX_NAME], out[WIRE_MAX_NAME + 8], inplace[WIRE_MAX_NAME], other[WIRE_MAX_NAME];
	for (size_t i = 0; i < len; i++)
		want[i] = ref_lower(src[i]);
	memset(out, 0xee, sizeof(out));
	wire_name_lower(src, len, out);
	assert_memory_equal(out, want, len);
	assert_int_equal(out[len], 0xee); /* nothing written past len */
	memcpy(inplace, src, len);
	wire_name_lower(inplace, len, inplace);
	assert_memory_equal(inplace, want, len);
	assert_true(wire_name_equal(src, len, want, len));
	assert_true(wire_name_equal(want, len, src, len));
	/* the byte at flip with bit 0x20 toggled: equal only when it is a letter */
	memcpy(other, src, len);
	other[flip] ^= 0x20;
	bool letter = ref_lower(src[flip]) == ref_lower(other[flip]);
	assert_int_equal(wire_name_equal(src, len, other, len), letter);
	assert_int_equal(wire_name_equal(other, len, want, len), letter);
}

static void test_case_folding(void **state)
{
	(void)state;
	uint8_t src[WIRE_MAX_NAME];
	for (size_t len = 1; len <= 40; len++)
		for (size_t pos = 0; pos < len; pos++)
			for (unsigned b = 0; b < 256; b++) {
				for (size_t i = 0; i < len; i++)
					src[i] = rnd8();
				src[pos] = (uint8_t)b;
				check_fold(src, len, pos);
			}
	for (int k = 0; k < 20000; k++) {
		size_t len = 1 + rnd8() % WIRE_MAX_NAME;
		for (size_t i = 0; i < len; i++)
			src[i] = rnd8();
		check_fold(src, len, rnd8() % len);
	}
}

/* A random name of n bytes (1..255, root included; 2 is impossible and gives 3): labels of random bytes. */
static size_t random_name(uint8_t *out, size_t n, bool letters_only)
{
	if (n == 2)
		n = 3;
	size_t o = 0, r = n - 1; /* r: bytes before the root still to fill, never 1 */
	while (r > 0) {
		size_t l;
		if (r <= 64) {
			l = r - 1;
		} else {
			l = 1 + rnd8() % 63;
			if (r - 1 - l == 1)
				l--;
		}
		out[o++] = (uint8_t)l;
		for (size_t i = 0; i < l; i++) {
			uint8_t c = rnd8();
			if (letters_only)
				c = (uint8_t)((c & 1 ? 'A' : 'a') + (c >> 1) % 26);
			out[o++] = c;
		}
		r -= 1 + l;
	}
	out[o++] = 0;
	return o;
}

/* The question's name: copied as received and lower-cased, for names of every length. */
static void test_parse_query_fold(void **state)
{
	(void)state;
	for (int k = 0; k < 5000; k++) {
		size_t want_len = k < 255 ? (size_t)k + 1 : (size_t)(1 + rnd8() % 255);
		uint8_t name[WIRE_MAX_NAME];
		size_t nl = random_name(name, want_len, false);
		assert_int_equal(wire_name_check(name, nl), 0);
		struct pkt *p = calloc(1, sizeof(*p));
		assert_non_null(p);
		hdr(p, 0x1234, 0x0100, 1, 0, 0, 0);
		put(p, name, nl);
		put16(p, WIRE_TYPE_A);
		put16(p, WIRE_CLASS_IN);
		uint8_t *pkt = malloc(p->n); /* exact size: ASan sees any over-read */
		assert_non_null(pkt);
		memcpy(pkt, p->b, p->n);
		struct wire_query q;
		memset(&q, 0xa5, sizeof(q));
		assert_int_equal(wire_parse_query(pkt, p->n, &q), 0);
		assert_int_equal(q.qname_len, nl);
		assert_memory_equal(q.qname, name, nl);
		for (size_t i = 0; i < nl; i++)
			assert_int_equal(q.qname_lc[i], ref_lower(name[i]));
		assert_int_equal(q.question_end, WIRE_HEADER_SIZE + nl + 4);
		/* cut anywhere inside the name or the type/class: FORMERR, no over-read */
		size_t cut = WIRE_HEADER_SIZE + rnd8() % (nl + 4);
		memset(&q, 0xa5, sizeof(q));
		assert_int_equal(wire_parse_query(pkt, cut, &q), WIRE_E_FORMERR);
		assert_false(q.question_ok);
		/* a compression pointer or an extended label type anywhere in the name: FORMERR */
		size_t at = 0, labels = 0;
		for (size_t i = 0; name[i] != 0; i += 1 + name[i])
			labels++;
		size_t stop = rnd8() % (labels + 1);
		for (size_t j = 0; j < stop; j++)
			at += 1 + name[at];
		static const uint8_t bad[] = { 0xc0, 0x40, 0x80 };
		for (size_t b = 0; b < sizeof(bad); b++) {
			memcpy(pkt, p->b, p->n);
			pkt[WIRE_HEADER_SIZE + at] = bad[b];
			if (at + 1 < nl)
				pkt[WIRE_HEADER_SIZE + at + 1] = 0x0c; /* a pointer to the question itself */
			assert_int_equal(wire_parse_query(pkt, p->n, &q), WIRE_E_FORMERR);
		}
		free(pkt);
		free(p);
	}
}

/* A cached answer serves a query for the same name in any case, and no other name of the same length. */
static void test_write_fold(void **state)
{
	(void)state;
	for (int k = 0; k < 3000; k++) {
		size_t want_len = 3 + (size_t)k % 253;
		uint8_t stored[WIRE_MAX_NAME], asked[WIRE_MAX_NAME];
		size_t nl = random_name(stored, want_len, k % 3 != 0);
		struct pkt *p = calloc(1, sizeof(*p));
		struct pkt *cq = calloc(1, sizeof(*cq));
		assert_non_null(p);
		assert_non_null(cq);
		hdr(p, 1, 0x8180, 1, 1, 0, 0);
		put(p, stored, nl);
		put16(p, WIRE_TYPE_A);
		put16(p, WIRE_CLASS_IN);
		putptr(p, 12);
		size_t at = rr_begin(p, WIRE_TYPE_A, WIRE_CLASS_IN, 300);
		put_a(p, "198.51.100.1");
		rr_end(p, at);
		uint8_t *blob;
		size_t blob_len;
		uint32_t ttl;
		assert_int_equal(wire_answer_prepare(p->b, p->n, NULL, &blob, &blob_len, &ttl), 0);
		/* the same name with the case of every letter chosen at random */
		memcpy(asked, stored, nl);
		for (size_t i = 0; asked[i] != 0; i += 1 + asked[i])
			for (size_t j = 1; j <= asked[i]; j++)
				if (ref_lower(asked[i + j]) == ref_lower(asked[i + j] ^ 0x20) && (rnd8() & 1))
					asked[i + j] ^= 0x20;
		/* and a name that differs in one content byte by 0x20 (same name only for a letter) */
		size_t pos = 1 + rnd8() % (nl - 1);
		bool length_byte = false;
		for (size_t i = 0; asked[i] != 0; i += 1 + asked[i])
			length_byte |= i == pos;
		for (int variant = 0; variant < 2; variant++) {
			uint8_t name[WIRE_MAX_NAME];
			memcpy(name, asked, nl);
			bool same = true;
			if (variant == 1) {
				if (length_byte || pos >= nl - 1)
					continue;
				name[pos] ^= 0x20;
				same = ref_lower(name[pos]) == ref_lower(asked[pos]);
			}
			hdr(cq, 9, 0x0100, 1, 0, 0, 0);
			put(cq, name, nl);
			put16(cq, WIRE_TYPE_A);
			put16(cq, WIRE_CLASS_IN);
			struct wire_query q;
			query_from("fold", cq, &q);
			uint8_t out[1024];
			int n = wire_answer_write(&q, cq->b, blob, blob_len, 0, NULL, out, sizeof(out));
			if (!same) {
				assert_int_equal(n, -EINVAL);
				continue;
			}
			assert_true(n > 0);
			assert_memory_equal(out + WIRE_HEADER_SIZE, name, nl); /* the client's case */
		}
		free(blob);
		free(cq);
		free(p);
	}
}

/* A signed answer: one entry, RRSIG only for DO clients (RFC 4035 §3.2.1). */
static void test_write_dnssec_records(void **state)
{
	(void)state;
	struct pkt *p = calloc(1, sizeof(*p));
	assert_non_null(p);
	hdr(p, 1, 0x8180, 1, 2, 0, 0);
	putname(p, "www.example.com");
	put16(p, WIRE_TYPE_A);
	put16(p, WIRE_CLASS_IN);
	putptr(p, 12);
	size_t at = rr_begin(p, WIRE_TYPE_A, WIRE_CLASS_IN, 300);
	put_a(p, "198.51.100.1");
	rr_end(p, at);
	putptr(p, 12);
	at = rr_begin(p, 46, WIRE_CLASS_IN, 300); /* RRSIG over A: opaque to us */
	puthex(p, "0001 0d 03 0000012c 00000000 00000000 0001 00 deadbeef");
	rr_end(p, at);
	uint8_t *blob;
	size_t blob_len;
	uint32_t ttl;
	assert_int_equal(wire_answer_prepare(p->b, p->n, NULL, &blob, &blob_len, &ttl), 0);
	assert_int_equal(ttl, 300);
	const struct {
		const char *msg;
		uint16_t qtype;
		bool do_bit;
		unsigned ancount;
	} rows[] = {
		{ "DO: the A and its RRSIG", WIRE_TYPE_A, true, 2 },
		{ "no DO: the A alone", WIRE_TYPE_A, false, 1 },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct pkt cq;
		make_query(&cq, 5, 0x0100, "www.example.com", rows[i].qtype, 1232, rows[i].do_bit, NULL);
		struct wire_query q;
		query_from(rows[i].msg, &cq, &q);
		uint8_t out[2048];
		int n = wire_answer_write(&q, cq.b, blob, blob_len, 0, NULL, out, sizeof(out));
		EXPECT_TRUE(rows[i].msg, n > 0);
		ldns_pkt *pk = must_parse(rows[i].msg, out, (size_t)n);
		EXPECT_INT(rows[i].msg, ldns_pkt_ancount(pk), rows[i].ancount);
		ldns_pkt_free(pk);
	}
	free(blob);
	free(p);
}

static void test_write_ede_and_any(void **state)
{
	(void)state;
	struct pkt cq;
	make_query(&cq, 5, 0x0100, "www.example.com", WIRE_TYPE_A, 1232, false, NULL);
	struct wire_query q;
	query_from("ede", &cq, &q);
	const struct wire_ede ede = { WIRE_EDE_NO_REACHABLE_AUTHORITY, "no authority answered" };
	uint8_t out[512];
	int n = wire_write_error(&q, WIRE_RCODE_SERVFAIL, NULL, &ede, out, sizeof(out));
	assert_true(n > 0);
	/* the EDE option: code 15, length 2 + text, INFO-CODE 22, the text */
	static const uint8_t want[] = { 0, 15, 0, 23, 0, 22, 'n', 'o', ' ' };
	assert_true(contains(out, (size_t)n, want, sizeof(want)));
	ldns_pkt *pk = must_parse("ede", out, (size_t)n);
	assert_int_equal(ldns_pkt_get_rcode(pk), LDNS_RCODE_SERVFAIL);
	ldns_pkt_free(pk);
	/* no EDNS in the query: no EDE (RFC 8914 §2) */
	struct pkt plain;
	make_query(&plain, 6, 0x0100, "www.example.com", WIRE_TYPE_A, 0, false, NULL);
	query_from("no edns", &plain, &q);
	n = wire_write_error(&q, WIRE_RCODE_SERVFAIL, NULL, &ede, out, sizeof(out));
	assert_int_equal(n, 12 + 17 + 4);
	/* ANY: one HINFO "RFC8482" */
	struct pkt any;
	make_query(&any, 7, 0x0100, "www.example.com", WIRE_TYPE_ANY, 1232, false, NULL);
	query_from("any", &any, &q);
	n = wire_write_any(&q, NULL, out, sizeof(out));
	assert_true(n > 0);
	pk = must_parse("any", out, (size_t)n);
	assert_int_equal(ldns_pkt_ancount(pk), 1);
	assert_int_equal(ldns_rr_get_type(ldns_rr_list_rr(ldns_pkt_answer(pk), 0)), LDNS_RR_TYPE_HINFO);
	ldns_pkt_free(pk);
	assert_int_equal(wire_write_any(&q, NULL, out, 40), -ENOSPC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_query_table),
		cmocka_unit_test(test_parse_query_ecs_fields),
		cmocka_unit_test(test_parse_query_long_names),
		cmocka_unit_test(test_parse_query_0x20),
		cmocka_unit_test(test_malformed_corpus),
		cmocka_unit_test(test_udp_limit),
		cmocka_unit_test(test_write_error_exact),
		cmocka_unit_test(test_write_error_limits),
		cmocka_unit_test(test_prepare_positive),
		cmocka_unit_test(test_adopt_keeps_layout),
		cmocka_unit_test(test_adopt_falls_back),
		cmocka_unit_test(test_prepare_ttl_table),
		cmocka_unit_test(test_prepare_ttl_top_bit),
		cmocka_unit_test(test_prepare_rrsig_cap),
		cmocka_unit_test(test_prepare_negative_table),
		cmocka_unit_test(test_prepare_extended_rcode),
		cmocka_unit_test(test_prepare_malformed_table),
		cmocka_unit_test(test_prepare_compression),
		cmocka_unit_test(test_write_0x20),
		cmocka_unit_test(test_write_fit),
		cmocka_unit_test(test_write_ad),
		cmocka_unit_test(test_write_dnssec_records),
		cmocka_unit_test(test_write_ede_and_any),
		cmocka_unit_test(test_write_ecs_echo),
		cmocka_unit_test(test_write_stale),
		cmocka_unit_test(test_query_build),
		cmocka_unit_test(test_response_check_table),
		cmocka_unit_test(test_cname_target_table),
		cmocka_unit_test(test_cname_chain_length),
		cmocka_unit_test(test_cname_target_compressed),
		cmocka_unit_test(test_splice),
		cmocka_unit_test(test_name_from_text),
		cmocka_unit_test(test_name_to_text),
		cmocka_unit_test(test_name_utils),
		cmocka_unit_test(test_case_folding),
		cmocka_unit_test(test_parse_query_fold),
		cmocka_unit_test(test_write_fold),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
