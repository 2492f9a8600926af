/* SPDX-License-Identifier: BSD-3-Clause */
/* DoH requests (RFC 8484) read from hostile bytes: pure, bounded, no allocation. */
#include "resolver/serve/doh_req.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "resolver/serve/doh.h"
#include "wire/parse.h"
#include "wire/wire.h"

#define MEDIA_TYPE "application/dns-message"

void doh_req_init(struct doh_req *r)
{
	memset(r, 0, sizeof(*r));
}

static int refuse(struct doh_req *r, int status, const char *why)
{
	if (r->status == 0) {
		r->status = status;
		r->why = why;
	}
	return r->status;
}

static uint8_t lower(uint8_t c)
{
	return c >= 'A' && c <= 'Z' ? (uint8_t)(c + 32) : c;
}

/* Does p[0..len) equal the lower-case literal s, ignoring ASCII case? */
static bool ieq(const uint8_t *p, size_t len, const char *s)
{
	size_t n = strlen(s);
	if (len != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (lower(p[i]) != (uint8_t)s[i])
			return false;
	return true;
}

static bool is_ows(uint8_t c)
{
	return c == ' ' || c == '\t';
}

/* p[*a..*b) without leading and trailing spaces and tabs. */
static void trim(const uint8_t *p, size_t *a, size_t *b)
{
	while (*a < *b && is_ows(p[*a]))
		(*a)++;
	while (*b > *a && is_ows(p[*b - 1]))
		(*b)--;
}

/* RFC 9110 §5.6.2 tchar */
static bool is_tchar(uint8_t c)
{
	if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
		return true;
	return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* ---- base64url (RFC 4648 §5) ---- */

/* The 6-bit value of a base64url character, or -1 ('=' included: the caller handles padding). */
static int b64url_val(uint8_t c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '-')
		return 62;
	if (c == '_')
		return 63;
	return -1;
}

static int hexval(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = lower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/*
 * The next character of a parameter value at *i, %XX decoded; -1 when
 * malformed. A %XX that decodes to a byte outside the base64url alphabet
 * and '=' is refused here: the value is base64url, so an escape can only
 * be a client (or proxy) being cautious, never a reason for other bytes.
 */
static int next_char(const uint8_t *v, size_t n, size_t *i)
{
	uint8_t c = v[*i];
	if (c != '%') {
		(*i)++;
		return c;
	}
	if (n - *i < 3)
		return -1;
	int h = hexval(v[*i + 1]), l = hexval(v[*i + 2]);
	if (h < 0 || l < 0)
		return -1;
	c = (uint8_t)(h << 4 | l);
	if (b64url_val(c) < 0 && c != '=')
		return -1;
	*i += 3;
	return c;
}

/*
 * Decode one base64url value. Padding is optional (RFC 8484 §4.1 says it
 * is left out, some clients add it); when present it must be at the end and
 * complete the last quantum exactly. Non-zero bits after the last byte are
 * refused (RFC 4648 §3.5 allows it): they would mean two spellings of one
 * message, and no encoder writes them.
 */
static int b64url_decode(const uint8_t *v, size_t n, uint8_t *out, size_t cap, size_t *out_len)
{
	size_t i = 0, o = 0, chars = 0, pad = 0;
	uint32_t acc = 0;
	unsigned bits = 0;
	while (i < n) {
		int c = next_char(v, n, &i);
		if (c < 0)
			return 400;
		if (c == '=') {
			pad++;
			continue;
		}
		int d = b64url_val((uint8_t)c);
		if (d < 0 || pad > 0)
			return 400; /* outside the alphabet, or data after padding */
		chars++;
		acc = (acc << 6 | (uint32_t)d) & 0xFFFFFF;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o >= cap)
				return 413;
			out[o++] = (uint8_t)(acc >> bits);
		}
	}
	if (chars % 4 == 1)
		return 400; /* 6 bits cannot end a byte */
	if (pad > 0 && (pad > 2 || (chars + pad) % 4 != 0))
		return 400;
	if (bits > 0 && (acc & ((1u << bits) - 1)) != 0)
		return 400;
	*out_len = o;
	return 0;
}

int doh_req_dns_param(const uint8_t *q, size_t qlen, uint8_t *out, size_t cap, size_t *out_len)
{
	size_t i = 0;
	while (i <= qlen) {
		size_t end = i;
		while (end < qlen && q[end] != '&')
			end++;
		/* the parameter q[i..end): name exactly "dns" (names are not decoded: a client writes it plainly) */
		if (end - i >= 4 && memcmp(q + i, "dns=", 4) == 0) {
			size_t n = 0;
			int st = b64url_decode(q + i + 4, end - i - 4, out, cap, &n);
			if (st)
				return st;
			if (n < DOH_REQ_MSG_MIN)
				return 400;
			*out_len = n;
			return 0;
		}
		if (end - i == 3 && memcmp(q + i, "dns", 3) == 0)
			return 400; /* the first dns parameter, without a value */
		i = end + 1;
	}
	return 400;
}

/* ---- header values ---- */

bool doh_req_ctype_ok(const uint8_t *v, size_t len)
{
	size_t a = 0, b = len;
	for (size_t i = 0; i < len; i++)
		if (v[i] == ';') {
			b = i;
			break;
		}
	trim(v, &a, &b);
	return ieq(v + a, b - a, MEDIA_TYPE);
}

/* Content-Length: 1*DIGIT. *out saturates above DOH_REQ_MSG_MAX (413 either way). false: not a number. */
static bool parse_clen(const uint8_t *v, size_t len, size_t *out)
{
	size_t a = 0, b = len, n = 0;
	trim(v, &a, &b);
	if (a == b)
		return false;
	for (size_t i = a; i < b; i++) {
		if (v[i] < '0' || v[i] > '9')
			return false;
		n = n * 10 + (size_t)(v[i] - '0');
		if (n > DOH_REQ_MSG_MAX)
			n = DOH_REQ_MSG_MAX + 1;
	}
	*out = n;
	return true;
}

/* Does a Connection value list the "close" option (comma-separated, case-insensitive)? */
static bool conn_close(const uint8_t *v, size_t len)
{
	size_t i = 0;
	while (i <= len) {
		size_t end = i;
		while (end < len && v[end] != ',')
			end++;
		size_t a = i, b = end;
		trim(v, &a, &b);
		if (ieq(v + a, b - a, "close"))
			return true;
		i = end + 1;
	}
	return false;
}

/* ---- addresses ---- */

/* A decimal port of 1-5 digits up to 65535; -1 otherwise. */
static long parse_port(const uint8_t *p, size_t n)
{
	if (n == 0 || n > 5)
		return -1;
	long v = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		v = v * 10 + (p[i] - '0');
	}
	return v <= 65535 ? v : -1;
}

/* An IPv4 or IPv6 address text (no brackets, no port) into ss with port (host order). */
static socklen_t make_addr(const uint8_t *p, size_t n, bool v6, long port, struct sockaddr_storage *ss)
{
	char buf[INET6_ADDRSTRLEN];
	if (n == 0 || n >= sizeof(buf))
		return 0;
	memcpy(buf, p, n);
	buf[n] = '\0';
	struct sockaddr_storage tmp;
	memset(&tmp, 0, sizeof(tmp));
	if (v6) {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&tmp;
		if (inet_pton(AF_INET6, buf, &a6->sin6_addr) != 1)
			return 0;
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		*ss = tmp;
		return sizeof(*a6);
	}
	struct sockaddr_in *a4 = (struct sockaddr_in *)&tmp;
	if (inet_pton(AF_INET, buf, &a4->sin_addr) != 1)
		return 0;
	a4->sin_family = AF_INET;
	a4->sin_port = htons((uint16_t)port);
	*ss = tmp;
	return sizeof(*a4);
}

/*
 * A node: "[v6]" or "[v6]:port", "v4" or "v4:port"; with bare_v6, also a
 * bare IPv6 address (X-Forwarded-For writes them so; Forwarded must not:
 * its ':' would be ambiguous with the port). An obfuscated port ("_x")
 * is read as no port.
 */
static socklen_t parse_node(const uint8_t *p, size_t n, bool bare_v6, struct sockaddr_storage *ss)
{
	if (n > 0 && p[0] == '[') {
		size_t close = 1;
		while (close < n && p[close] != ']')
			close++;
		if (close == n)
			return 0;
		long port = 0;
		if (close + 1 < n) {
			if (p[close + 1] != ':')
				return 0;
			const uint8_t *pp = p + close + 2;
			size_t pn = n - close - 2;
			if (pn > 0 && pp[0] == '_')
				port = 0;
			else if ((port = parse_port(pp, pn)) < 0)
				return 0;
		}
		return make_addr(p + 1, close - 1, true, port, ss);
	}
	size_t colons = 0, first = n;
	for (size_t i = 0; i < n; i++)
		if (p[i] == ':') {
			if (colons++ == 0)
				first = i;
		}
	if (colons > 1)
		return bare_v6 ? make_addr(p, n, true, 0, ss) : 0;
	long port = 0;
	if (colons == 1) {
		const uint8_t *pp = p + first + 1;
		size_t pn = n - first - 1;
		if (pn > 0 && pp[0] == '_')
			port = 0;
		else if ((port = parse_port(pp, pn)) < 0)
			return 0;
	}
	return make_addr(p, first, false, port, ss);
}

socklen_t doh_req_forwarded(const uint8_t *v, size_t len, struct sockaddr_storage *ss)
{
	size_t i = 0;
	/* pairs of the first element: token "=" (token / quoted-string), split by ';', the element ends at ',' */
	while (i < len) {
		while (i < len && is_ows(v[i]))
			i++;
		size_t name = i;
		while (i < len && is_tchar(v[i]))
			i++;
		size_t name_end = i;
		while (i < len && is_ows(v[i]))
			i++;
		if (name_end == name || i >= len || v[i] != '=')
			return 0;
		i++;
		while (i < len && is_ows(v[i]))
			i++;
		/* the value, unquoted into val (a node is at most "[" 45 "]:" 5 bytes; longer is not an address) */
		uint8_t val[64];
		size_t vn = 0;
		bool too_long = false;
		if (i < len && v[i] == '"') {
			i++;
			for (;;) {
				if (i >= len)
					return 0; /* unterminated */
				uint8_t c = v[i++];
				if (c == '"')
					break;
				if (c == '\\') {
					if (i >= len)
						return 0;
					c = v[i++];
				}
				if (vn < sizeof(val))
					val[vn++] = c;
				else
					too_long = true;
			}
		} else {
			/* a token, plus what an unquoted IPv6 node needs ('[', ']' and ':' are not tchar) */
			while (i < len && (is_tchar(v[i]) || v[i] == '[' || v[i] == ']' || v[i] == ':')) {
				if (vn < sizeof(val))
					val[vn++] = v[i];
				else
					too_long = true;
				i++;
			}
		}
		while (i < len && is_ows(v[i]))
			i++;
		if (i < len && v[i] != ';' && v[i] != ',')
			return 0;
		if (ieq(v + name, name_end - name, "for")) {
			if (too_long || ieq(val, vn, "unknown") || (vn > 0 && val[0] == '_'))
				return 0;
			return parse_node(val, vn, false, ss);
		}
		if (i >= len || v[i] == ',')
			return 0; /* the first element had no for= */
		i++;
	}
	return 0;
}

socklen_t doh_req_xff(const uint8_t *v, size_t len, struct sockaddr_storage *ss)
{
	size_t a = 0, b = 0;
	while (b < len && v[b] != ',')
		b++;
	trim(v, &a, &b);
	return parse_node(v + a, b - a, true, ss);
}

/* ---- one header, the whole request ---- */

int doh_req_header(struct doh_req *r, const uint8_t *name, size_t nlen, const uint8_t *value, size_t vlen)
{
	if (ieq(name, nlen, ":method")) {
		if (vlen == 3 && memcmp(value, "GET", 3) == 0)
			r->method = DOH_REQ_GET;
		else if (vlen == 4 && memcmp(value, "POST", 4) == 0)
			r->method = DOH_REQ_POST;
		else if (vlen == 4 && memcmp(value, "HEAD", 4) == 0)
			r->method = DOH_REQ_HEAD;
		else
			r->method = DOH_REQ_OTHER;
	} else if (ieq(name, nlen, "content-type")) {
		if (r->has_ctype)
			return refuse(r, 400, "more than one Content-Type\n");
		r->has_ctype = true;
		r->ctype_ok = doh_req_ctype_ok(value, vlen);
	} else if (ieq(name, nlen, "content-length")) {
		/* a refused Content-Length leaves the body's end unknown: HTTP/1.1 answers and closes */
		size_t n = 0;
		bool ok = parse_clen(value, vlen, &n);
		bool twice = ok && r->has_clen && n != r->clen;
		if (!ok || twice || n > DOH_REQ_MSG_MAX)
			r->close = true;
		if (!ok)
			return refuse(r, 400, "Content-Length is not a number\n");
		if (twice)
			return refuse(r, 400, "Content-Length given twice, differently\n");
		r->has_clen = true;
		r->clen = n;
		if (n > DOH_REQ_MSG_MAX)
			return refuse(r, 413, "a DNS message is at most 65535 bytes\n");
	} else if (ieq(name, nlen, "transfer-encoding")) {
		r->has_te = true;
	} else if (ieq(name, nlen, "host")) {
		if (r->has_host)
			return refuse(r, 400, "more than one Host\n");
		r->has_host = true;
	} else if (ieq(name, nlen, "connection")) {
		if (conn_close(value, vlen))
			r->close = true;
	} else if (ieq(name, nlen, "forwarded")) {
		if (!r->fwd_seen)
			r->fwd_len = doh_req_forwarded(value, vlen, &r->fwd);
		r->fwd_seen = true;
	} else if (ieq(name, nlen, "x-forwarded-for")) {
		if (!r->xff_seen)
			r->xff_len = doh_req_xff(value, vlen, &r->xff);
		r->xff_seen = true;
	}
	return r->status;
}

int doh_req_finish(struct doh_req *r, const char *path, const uint8_t *body, size_t body_len, uint8_t *buf,
                   size_t cap, const uint8_t **msg, size_t *msg_len)
{
	/* X-Forwarded-For only when Forwarded named nobody: the standard header wins */
	if (r->fwd_len == 0 && r->xff_len != 0) {
		r->fwd = r->xff;
		r->fwd_len = r->xff_len;
	}
	if (r->method != DOH_REQ_GET && r->method != DOH_REQ_POST)
		return refuse(r, 405, "DNS over HTTPS takes GET or POST\n");
	if (r->status)
		return r->status;
	if (r->target == NULL)
		return refuse(r, 400, "no request target\n");
	size_t plen = 0;
	while (plen < r->target_len && r->target[plen] != '?')
		plen++;
	if (plen != strlen(path) || memcmp(r->target, path, plen) != 0)
		return refuse(r, 404, "not a DNS over HTTPS path\n");
	if (r->has_clen && r->clen != body_len)
		return refuse(r, 400, "the body does not match Content-Length\n");
	if (r->method == DOH_REQ_GET) {
		if (plen == r->target_len)
			return refuse(r, 400, "GET needs a dns parameter\n");
		int st = doh_req_dns_param(r->target + plen + 1, r->target_len - plen - 1, buf, cap, msg_len);
		if (st == 413)
			return refuse(r, 413, "a DNS message is at most 65535 bytes\n");
		if (st)
			return refuse(r, 400, "no valid base64url dns parameter of a DNS message\n");
		*msg = buf;
		return 0;
	}
	if (!r->has_ctype || !r->ctype_ok)
		return refuse(r, 415, "POST needs Content-Type: application/dns-message\n");
	if (body_len > DOH_REQ_MSG_MAX)
		return refuse(r, 413, "a DNS message is at most 65535 bytes\n");
	if (body_len < DOH_REQ_MSG_MIN)
		return refuse(r, 400, "the body is shorter than a DNS header\n");
	*msg = body;
	*msg_len = body_len;
	return 0;
}

/* ---- HTTP/1.1 ---- */

/* Where the line starting at i ends (its CR), or len when no CRLF yet; -1: a bare CR or LF, or a NUL. */
static long line_end(const uint8_t *p, size_t len, size_t i)
{
	for (; i < len; i++) {
		if (p[i] == '\r') {
			if (i + 1 == len)
				return (long)len;
			return p[i + 1] == '\n' ? (long)i : -1;
		}
		if (p[i] == '\n' || p[i] == 0)
			return -1;
	}
	return (long)len;
}

static int h1_refuse(struct doh_req *r, int status, const char *why)
{
	r->status = 0; /* a framing error wins over what a header said */
	refuse(r, status, why);
	r->close = true;
	return -status;
}

/* The request line: method SP origin-form SP HTTP/1.x. Returns 0 or -status. */
static int h1_request_line(const uint8_t *p, size_t n, struct doh_req *r)
{
	size_t i = 0;
	while (i < n && is_tchar(p[i]))
		i++;
	if (i == 0 || i >= n || p[i] != ' ')
		return h1_refuse(r, 400, "malformed request line\n");
	if (i == 3 && memcmp(p, "GET", 3) == 0)
		r->method = DOH_REQ_GET;
	else if (i == 4 && memcmp(p, "POST", 4) == 0)
		r->method = DOH_REQ_POST;
	else if (i == 4 && memcmp(p, "HEAD", 4) == 0)
		r->method = DOH_REQ_HEAD;
	else
		r->method = DOH_REQ_OTHER;
	size_t t = ++i;
	while (i < n && p[i] > 0x20 && p[i] < 0x7F)
		i++;
	if (i == t || i >= n || p[i] != ' ')
		return h1_refuse(r, 400, "malformed request line\n");
	r->target = p + t;
	r->target_len = i - t;
	i++;
	if (n - i != 8 || memcmp(p + i, "HTTP/1.", 7) != 0)
		return h1_refuse(r, 400, "malformed request line\n");
	if (p[i + 7] == '0')
		r->close = true;
	else if (p[i + 7] != '1')
		return h1_refuse(r, 505, "HTTP/1.1 or HTTP/2 only\n");
	if (r->target[0] != '/' && (r->method == DOH_REQ_GET || r->method == DOH_REQ_POST))
		return h1_refuse(r, 400, "the request target must be a path\n");
	return 0;
}

int doh_req_h1_head(const uint8_t *p, size_t len, struct doh_req *r)
{
	doh_req_init(r);
	size_t lim = len < DOH_MAX_HEADERS ? len : DOH_MAX_HEADERS;
	long e = line_end(p, lim, 0);
	if (e < 0)
		return h1_refuse(r, 400, "malformed request line\n");
	if ((size_t)e == lim)
		return lim < DOH_MAX_HEADERS ? DOH_REQ_MORE : h1_refuse(r, 431, "request header block too large\n");
	int st = h1_request_line(p, (size_t)e, r);
	if (st)
		return st;
	bool http10 = r->close;
	size_t i = (size_t)e + 2;
	unsigned lines = 0;
	for (;;) {
		e = line_end(p, lim, i);
		if (e < 0)
			return h1_refuse(r, 400, "malformed header line\n");
		if ((size_t)e == lim)
			return lim < DOH_MAX_HEADERS ? DOH_REQ_MORE
			                             : h1_refuse(r, 431, "request header block too large\n");
		size_t end = (size_t)e;
		if (end == i)
			break; /* the empty line */
		if (++lines > DOH_REQ_MAX_LINES)
			return h1_refuse(r, 431, "too many request header lines\n");
		if (is_ows(p[i]))
			return h1_refuse(r, 400, "obsolete line folding\n");
		size_t c = i;
		while (c < end && is_tchar(p[c]))
			c++;
		if (c == i || c == end || p[c] != ':')
			return h1_refuse(r, 400, "malformed header line\n");
		size_t a = c + 1, b = end;
		for (size_t k = a; k < b; k++)
			if (p[k] < 0x20 ? p[k] != '\t' : p[k] == 0x7F)
				return h1_refuse(r, 400, "control character in a header\n");
		trim(p, &a, &b);
		doh_req_header(r, p + i, c - i, p + a, b - a);
		i = end + 2;
	}
	size_t head = (size_t)e + 2;
	if (r->has_te) {
		int code = r->has_clen ? 400 : 411;
		return h1_refuse(r, code, code == 411 ? "Transfer-Encoding is not accepted: send Content-Length\n"
		                                      : "Transfer-Encoding with Content-Length\n");
	}
	if (!http10 && !r->has_host)
		return h1_refuse(r, 400, "HTTP/1.1 needs Host\n");
	return (int)head;
}

/* ---- Cache-Control ---- */

uint32_t doh_req_max_age(const uint8_t *msg, size_t len)
{
	struct wire_iter it;
	struct wire_rr rr;
	if (wire_iter_init(&it, msg, len) != 0)
		return 0;
	bool answers = it.count[WIRE_SECTION_ANSWER] > 0;
	bool any = false;
	uint32_t min = UINT32_MAX;
	int k;
	while ((k = wire_iter_next(&it, &rr)) == 1) {
		if (rr.type == WIRE_TYPE_OPT)
			continue;
		uint32_t ttl = rr.ttl;
		if (!answers) {
			/* negative: only the authority's SOA says how long (RFC 2308 §5) */
			if (rr.section != WIRE_SECTION_AUTHORITY || rr.type != WIRE_TYPE_SOA || rr.rdlen < 22)
				continue;
			const uint8_t *m = msg + rr.rdata + rr.rdlen - 4;
			uint32_t minimum = (uint32_t)m[0] << 24 | (uint32_t)m[1] << 16 | (uint32_t)m[2] << 8 | m[3];
			if (minimum < ttl)
				ttl = minimum;
		}
		if (ttl < min)
			min = ttl;
		any = true;
	}
	if (k != 0 || !any)
		return 0;
	/* RFC 2181 §8: a TTL with the top bit set is zero */
	return min > INT32_MAX ? 0 : min;
}
