#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# DNS over TLS and DNS over HTTPS: partdns against Unbound, on loopback.
#
# Usage (as root: raises the open-file limit for 10,000 connections):
#   bench/transports.sh BUILD_DIR          6-12 minutes with the defaults (the idle connections are most of it)
#
# What it does:
#   * a throw-away ECDSA P-256 certificate (openssl), and both servers on
#     127.0.0.1 with one server thread each: partdns (server.threads 1,
#     resolver.threads 1, listen, listen_tls, listen_https) and Unbound 1.17
#     (num-threads 1, port, tls-port, https-port, http-endpoint /dns-query).
#     Both answer www.bench.test A from local data (partdns local_zones,
#     Unbound local-data, a static zone): no recursion, nothing leaves the
#     machine, so a query costs its transport and the server's own query path;
#   * every thread of both servers pinned to CPU 1, the load generators on
#     CPU 0 (taskset); BENCH_ROUNDS interleaved rounds, the order (ub, pd)
#     alternating from round to round, BENCH_SECS seconds per run:
#       dot:  dnsperf -m dot -c BENCH_CLIENTS -q BENCH_Q -T 1;
#       doh:  dnsperf -m doh, the same, once per method in BENCH_DOH_METHODS
#             (-O doh-method=, -O doh-uri=https://127.0.0.1:PORT/dns-query);
#       udp:  dnsperf over UDP, the same clients (partdns DoT / its own UDP);
#       hs:   tlsload (below) with BENCH_HS_CONC connections at a time, each a
#             full handshake (client session cache off, no ticket offered,
#             resumption checked to be 0) and one query, then closed;
#     per run: answers per second (dnsperf's QPS), the server's CPU time
#     (/proc/PID/task/*/schedstat, every thread) and from those the answers
#     per server CPU-second, which is the QPS one saturated server core
#     would give (the load generator, on the other core, does as much TLS
#     work per query as the server plus its own: it saturates first, see the
#     busy column), and the time the server's threads waited for a CPU;
#   * idle connections, BENCH_IDLE_ROUNDS rounds per server (alternating), a
#     fresh server each time: one DoT connection and query (lazy start-up
#     allocations), VmRSS, then tlsload opens BENCH_IDLE_CONNS connections
#     (BENCH_IDLE_CONC handshakes at a time, each from its own 127.3.X.Y address) that finish
#     the handshake (variant "handshake") or the handshake and one query
#     (variant "query"), then sit idle; 2 s later VmRSS again and the server's
#     established connections (ss); bytes per connection = ΔVmRSS / held.
#     partdns: tls_max_clients 20000, tcp_idle_ms 600000 (it raises its own
#     open-file limit to the hard limit, which this script raises when it
#     can); Unbound: the DoT listener alone, incoming-num-tcp as many as the
#     open-file limit allows up to 2 × BENCH_IDLE_CONNS + 100, tcp-idle-timeout
#     100000000 ms (it cuts the timeout to 1 % once half its slots are used);
#     "all in" also takes a fresh server with Unbound's default
#     incoming-num-tcp (10) as the base: Unbound allocates a buffer per slot at
#     start, part of the connections' cost that "before" already holds;
#   * (BENCH_PERF=1) a perf record -e cpu-clock of each server during one more
#     DoT run and one DoH GET run: the busiest symbols, in the report;
#   * prints a markdown report on stdout (medians over the rounds with
#     min–max; ratios are the median and min–max of per-round ratios
#     partdns / Unbound), progress and per-run lines on stderr. Exits non-zero
#     only when the harness fails (a server does not start, a tool is
#     missing, a run answers nothing), never for a missed target.
#
# tlsload is a small C client (its source is below, compiled with cc into
# the temp dir): `tlsload hs ADDR PORT CONC SECS SRC` and `tlsload idle ADDR
# PORT N CONC QUERY SRC`.
#
# Knobs (defaults in brackets):
#   BENCH_ROUNDS [5]  BENCH_SECS [3]  BENCH_CLIENTS [16]  BENCH_Q [256]
#   BENCH_DOH_METHODS ["GET POST"]  BENCH_HS_CONC [32]
#   BENCH_IDLE_CONNS [10000]  BENCH_IDLE_ROUNDS [2]  BENCH_IDLE_VARIANTS ["handshake query"]
#   BENCH_IDLE_CONC [200: handshakes in progress at a time while the idle connections open]
#   BENCH_PIN [1]  BENCH_NICE [0: else a niceness, e.g. -5, for the servers and the
#               load generators: the machine may be shared with other work]
#   BENCH_PERF [0]  BENCH_PORT [18000: partdns BASE+53/+853/+443, Unbound BASE+1053/+1853/+1443]
#   BENCH_RAW [unset: a file to append the per-run lines to]  BENCH_KEEP [0: keep the temp dir]
# A smoke run: BENCH_ROUNDS=1 BENCH_SECS=1 BENCH_IDLE_CONNS=500 BENCH_IDLE_ROUNDS=1 bench/transports.sh build

set -u -o pipefail

BENCH_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ $# -ge 1 ] || { echo "usage: bench/transports.sh BUILD_DIR" >&2; exit 2; }
BUILD_DIR=$1
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$PWD/$BUILD_DIR ;; esac

ROUNDS=${BENCH_ROUNDS:-5}
SECS=${BENCH_SECS:-3}
CLIENTS=${BENCH_CLIENTS:-16}
OUTSTANDING=${BENCH_Q:-256}
read -r -a METHODS <<< "${BENCH_DOH_METHODS:-GET POST}"
HS_CONC=${BENCH_HS_CONC:-32}
IDLE_N=${BENCH_IDLE_CONNS:-10000}
IDLE_ROUNDS=${BENCH_IDLE_ROUNDS:-2}
IDLE_CONC=${BENCH_IDLE_CONC:-200}
read -r -a IDLE_VARIANTS <<< "${BENCH_IDLE_VARIANTS:-handshake query}"
PIN=${BENCH_PIN:-1}
NICE=${BENCH_NICE:-0}
PERF=${BENCH_PERF:-0}
PORT=${BENCH_PORT:-18000}
SERVER_CPU=1
CLIENT_CPU=0
ADDR=127.0.0.1
PD_UDP=$((PORT + 53)) PD_DOT=$((PORT + 853)) PD_DOH=$((PORT + 443))
UB_UDP=$((PORT + 1053)) UB_DOT=$((PORT + 1853)) UB_DOH=$((PORT + 1443))
CASES=(ub pd)
QNAME=www.bench.test
ANSWER=192.0.2.1

bmsg() { printf '[transports] %s\n' "$*" >&2; }
bdie() { printf '[transports] ERROR: %s\n' "$*" >&2; exit 1; }

PARTDNS_BIN=$BUILD_DIR/resolver/partdns
[ -x "$PARTDNS_BIN" ] || bdie "no $PARTDNS_BIN: build first (cmake --build $BUILD_DIR)"
for b in dnsperf unbound openssl dig cc ss; do
  command -v "$b" >/dev/null 2>&1 || bdie "$b not installed (Debian: dnsperf unbound openssl dnsutils gcc iproute2)"
done
unbound -V 2>/dev/null | grep -q -- '--with-libnghttp2' || bdie "this unbound is built without libnghttp2: no DoH"
if [ "$PIN" = 1 ] && { ! command -v taskset >/dev/null 2>&1 || [ "$(nproc)" -lt 2 ]; }; then
  bmsg "taskset missing or one CPU: running unpinned"
  PIN=0
fi
for p in $PD_UDP $PD_DOT $PD_DOH $UB_UDP $UB_DOT $UB_DOH; do
  ss -Hltn "sport = :$p" 2>/dev/null | grep -q . && bdie "port $p is in use (BENCH_PORT moves them all)"
done

# BENCH_IDLE_CONNS connections: the client holds them all, the server as many
NOFILE=$((IDLE_N + 2048))
if [ "$(ulimit -Hn)" != unlimited ] && [ "$(ulimit -Hn)" -lt "$NOFILE" ]; then
  ulimit -Hn "$NOFILE" 2>/dev/null ||
    bdie "the hard open-file limit is $(ulimit -Hn), under the $NOFILE that $IDLE_N idle connections need, and cannot be raised (not root?)"
fi
ulimit -n "$(ulimit -Hn)" 2>/dev/null || bdie "cannot raise the open-file limit to $(ulimit -Hn)"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/partdns-transports.XXXXXX") || bdie "mktemp"
declare -A PIDS=()   # name -> pid of every process this script started and still runs
cleanup() {
  local rc=$? n
  trap - EXIT
  for n in "${!PIDS[@]}"; do kill -TERM "${PIDS[$n]}" 2>/dev/null; done
  for n in "${!PIDS[@]}"; do wait "${PIDS[$n]}" 2>/dev/null; done
  if [ "${BENCH_KEEP:-0}" = 1 ]; then bmsg "kept $TMP"; else rm -rf "$TMP"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

. "$BENCH_SRC/bench/lib.sh"

# ---------------------------------------------------------------- the DoT client

cat > "$TMP/tlsload.c" <<'CSRC'
/* tlsload: DoT connections for bench/transports.sh (written out and compiled by it).
 *   tlsload hs   ADDR PORT CONC SECS SRC16   full handshakes (no resumption), one query each, CONC at a time
 *   tlsload idle ADDR PORT N CONC QUERY SRC16  N connections that finish the handshake (and QUERY=1: one
 *                                                query), then sit idle until killed
 * Each connection binds its own source address SRC16.X.Y (SRC16 = "127.N"), so no client
 * address holds more than one connection at a time. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum st { FREE, CONNECTING, HANDSHAKE, SENDING, READING };
struct conn {
	int fd;
	SSL *ssl;
	enum st st;
	double t0;
	unsigned char in[512];
	size_t got;
};

static SSL_CTX *ctx;
static struct sockaddr_in srv;
static int ep;
static unsigned src_next;
static unsigned src_a;
static unsigned long done, failed, resumed, started;
static char proto[32], cipher[64], group[32];
static const unsigned char query[] = {
	0, 32,                                  /* length prefix */
	0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, /* id, RD, one question */
	3, 'w', 'w', 'w', 5, 'b', 'e', 'n', 'c', 'h', 4, 't', 'e', 's', 't', 0,
	0, 1, 0, 1                              /* A IN */
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int start(struct conn *c)
{
	struct sockaddr_in src = { .sin_family = AF_INET };
	unsigned k = src_next++ % 63750; /* 255 x 250 addresses */
	src.sin_addr.s_addr = htonl((127u << 24) | (src_a << 16) | ((1 + k / 250) << 8) | (1 + k % 250));
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (c->fd < 0) {
		perror("socket");
		exit(2);
	}
	int one = 1;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(c->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(c->fd, (struct sockaddr *)&src, sizeof(src)) != 0) {
		perror("bind");
		exit(2);
	}
	c->ssl = SSL_new(ctx);
	SSL_set_fd(c->ssl, c->fd);
	SSL_set_connect_state(c->ssl);
	c->got = 0;
	c->t0 = now();
	started++;
	if (connect(c->fd, (struct sockaddr *)&srv, sizeof(srv)) != 0 && errno != EINPROGRESS) {
		close(c->fd);
		SSL_free(c->ssl);
		c->st = FREE;
		failed++;
		return -1;
	}
	c->st = CONNECTING;
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT, .data.ptr = c };
	epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
	return 0;
}

static void finish(struct conn *c, int ok, int keep)
{
	epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
	if (ok) {
		done++;
		if (SSL_session_reused(c->ssl))
			resumed++;
		if (!proto[0]) {
			snprintf(proto, sizeof(proto), "%s", SSL_get_version(c->ssl));
			snprintf(cipher, sizeof(cipher), "%s", SSL_get_cipher_name(c->ssl));
			int g = SSL_get_negotiated_group(c->ssl);
			const char *gn = g ? OBJ_nid2sn(g & ~TLSEXT_nid_unknown) : NULL;
			snprintf(group, sizeof(group), "%s", gn ? gn : "?");
		}
	} else {
		failed++;
	}
	SSL_free(c->ssl); /* no close_notify: an idle client just keeps its socket */
	c->ssl = NULL;
	if (!(ok && keep))
		close(c->fd);
	c->st = FREE;
}

/* advance one connection; returns 1 when it is finished (ok or not) */
static int step(struct conn *c, int want_query, int keep)
{
	int r, e;
	for (;;) {
		switch (c->st) {
		case CONNECTING:
		case HANDSHAKE:
			c->st = HANDSHAKE;
			r = SSL_do_handshake(c->ssl);
			if (r == 1) {
				if (!want_query) {
					finish(c, 1, keep);
					return 1;
				}
				c->st = SENDING;
				continue;
			}
			e = SSL_get_error(c->ssl, r);
			if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
				return 0;
			finish(c, 0, 0);
			return 1;
		case SENDING:
			r = SSL_write(c->ssl, query, sizeof(query));
			if (r == (int)sizeof(query)) {
				c->st = READING;
				continue;
			}
			e = SSL_get_error(c->ssl, r);
			if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
				return 0;
			finish(c, 0, 0);
			return 1;
		case READING:
			r = SSL_read(c->ssl, c->in + c->got, sizeof(c->in) - c->got);
			if (r > 0) {
				c->got += (size_t)r;
				if (c->got >= 2) {
					size_t len = ((size_t)c->in[0] << 8) | c->in[1];
					if (c->got >= 2 + len) {
						int ok = len >= 12 && c->in[2] == 0x12 && c->in[3] == 0x34 && (c->in[5] & 0x0f) == 0;
						finish(c, ok, keep);
						return 1;
					}
				}
				continue;
			}
			e = SSL_get_error(c->ssl, r);
			if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
				return 0;
			finish(c, 0, 0);
			return 1;
		default:
			return 1;
		}
	}
}

int main(int argc, char **argv)
{
	if (argc < 7) {
		fprintf(stderr, "usage: see the comment at the top\n");
		return 2;
	}
	int idle = strcmp(argv[1], "idle") == 0;
	if (!idle && strcmp(argv[1], "hs") != 0)
		return 2;
	srv.sin_family = AF_INET;
	srv.sin_port = htons((unsigned short)atoi(argv[3]));
	if (inet_pton(AF_INET, argv[2], &srv.sin_addr) != 1)
		return 2;
	long n_total = 0, conc;
	double secs = 0;
	int want_query = 1;
	const char *src16;
	if (idle) {
		if (argc < 8)
			return 2;
		n_total = atol(argv[4]);
		conc = atol(argv[5]);
		want_query = atoi(argv[6]);
		src16 = argv[7];
	} else {
		conc = atol(argv[4]);
		secs = atof(argv[5]);
		src16 = argv[6];
	}
	unsigned s1, s2;
	if (sscanf(src16, "%u.%u", &s1, &s2) != 2 || s1 != 127)
		return 2;
	src_a = s2;
	src_next = (unsigned)getpid() * 7919u; /* two runs in a row start at different addresses */

	ctx = SSL_CTX_new(TLS_client_method());
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF); /* never resume: every handshake is full */
	SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	static const unsigned char alpn[] = { 3, 'd', 'o', 't' };
	SSL_CTX_set_alpn_protos(ctx, alpn, sizeof(alpn));

	ep = epoll_create1(0);
	struct conn *cs = calloc((size_t)conc, sizeof(*cs));
	struct epoll_event evs[256];
	double t_start = now(), t_end = t_start + secs;
	long opened = 0;
	for (long i = 0; i < conc; i++)
		if (!idle || opened < n_total) {
			start(&cs[i]);
			opened++;
		}
	for (;;) {
		double t = now();
		if (!idle && t >= t_end)
			break;
		if (idle && (long)(done + failed) >= n_total)
			break;
		int n = epoll_wait(ep, evs, 256, 100);
		for (int i = 0; i < n; i++) {
			struct conn *c = evs[i].data.ptr;
			if (c->st == FREE)
				continue;
			if (step(c, want_query, idle) && (!idle || opened < n_total) && (idle || now() < t_end)) {
				start(c);
				opened++;
			}
		}
		/* connections stuck for 5 s are failures */
		t = now();
		for (long i = 0; i < conc; i++)
			if (cs[i].st != FREE && t - cs[i].t0 > 5) {
				finish(&cs[i], 0, 0);
				if ((!idle || opened < n_total) && (idle || t < t_end)) {
					start(&cs[i]);
					opened++;
				}
			}
	}
	double el = now() - t_start;
	printf("done %lu failed %lu resumed %lu secs %.3f proto %s cipher %s group %s\n", done, failed, resumed, el,
	       proto[0] ? proto : "-", cipher[0] ? cipher : "-", group[0] ? group : "-");
	fflush(stdout);
	if (idle) /* hold every connection until killed */
		for (;;)
			pause();
	return 0;
}
CSRC
cc -O2 -Wall -o "$TMP/tlsload" "$TMP/tlsload.c" -lssl -lcrypto 2> "$TMP/cc.log" ||
  bdie "cannot build tlsload (libssl-dev?): $(tail -n 5 "$TMP/cc.log")"
TLSLOAD=$TMP/tlsload

# ---------------------------------------------------------------- certificate, configs

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
  -keyout "$TMP/key.pem" -out "$TMP/cert.pem" -subj /CN=dns.bench.test \
  -addext "subjectAltName=DNS:dns.bench.test,IP:$ADDR" > "$TMP/openssl.log" 2>&1 ||
  bdie "openssl req failed: $(tail -n 3 "$TMP/openssl.log")"
printf '%s A\n' "$QNAME" > "$TMP/q.txt"

mkdir -p "$TMP/pd/store" "$TMP/ub"
cat > "$TMP/pd/partdns.yaml" <<CONF
server:
  listen: [ "$ADDR@$PD_UDP" ]
  listen_tls: [ "$ADDR@$PD_DOT" ]
  listen_https: [ "$ADDR@$PD_DOH" ]
  https_path: /dns-query
  tls_cert: $TMP/cert.pem
  tls_key: $TMP/key.pem
  threads: 1
  allow: [ 127.0.0.0/8 ]
  client_exempt: [ 127.0.0.0/8 ]
  # dnsperf's connections all come from $ADDR (default 16 per client)
  tcp_max_per_client: 65535
  tls_max_clients: $((IDLE_N * 2))
  tcp_idle_ms: 600000
  control: $TMP/pd/control.sock
  store: $TMP/pd/store
  user: root
  log_level: warning
resolver:
  threads: 1
local_zones:
  - { name: bench.test., type: static, data: [ "www 3600 A $ANSWER" ] }
CONF
"$PARTDNS_BIN" -t -c "$TMP/pd/partdns.yaml" > "$TMP/pd/check.log" 2>&1 ||
  bdie "partdns -t refuses the config: $(tail -n 5 "$TMP/pd/check.log")"

# ub_conf FILE INCOMING_TCP [idle]: Unbound, one thread, the same local data and listeners; "idle": the DoT
# listener alone (Unbound wants INCOMING_TCP descriptors per TCP listener, and fails to start when the
# open-file limit cannot hold them all) and 64 outgoing sockets.
ub_conf() {
  local ifs="  interface: $ADDR@$UB_UDP
  interface: $ADDR@$UB_DOT
  interface: $ADDR@$UB_DOH" extra=""
  if [ "${3:-}" = idle ]; then
    ifs="  interface: $ADDR@$UB_DOT"
    extra="  outgoing-range: 64"
  fi
  cat > "$1" <<CONF
server:
  do-daemonize: no
  chroot: ""
  username: ""
  directory: "$TMP/ub"
  pidfile: "$TMP/ub/unbound.pid"
  logfile: "$TMP/ub/unbound.log"
  use-syslog: no
  verbosity: 1
  num-threads: 1
  do-ip6: no
$ifs
$extra
  port: $UB_UDP
  tls-port: $UB_DOT
  https-port: $UB_DOH
  http-endpoint: "/dns-query"
  tls-service-key: "$TMP/key.pem"
  tls-service-pem: "$TMP/cert.pem"
  incoming-num-tcp: $2
  # partdns asks for a 4 MiB receive buffer on its UDP listeners: the same here (as bench/lib.sh)
  so-rcvbuf: 4m
  # Unbound cuts its idle timeout to 1 % of this once half its incoming-num-tcp slots are in use, to
  # 0.2 % past 65 %, to 0 past 80 %: long enough that the idle connections stay while they are counted
  tcp-idle-timeout: 100000000
  access-control: 127.0.0.0/8 allow
  module-config: "iterator"
  local-zone: "bench.test." static
  local-data: "$QNAME. 3600 IN A $ANSWER"
remote-control:
  control-enable: no
CONF
}
ub_conf "$TMP/ub/unbound.conf" 1024
# as many slots as the open-file limit holds, at least the connections and at most twice as many
UB_IDLE_TCP=$(( $(ulimit -n) - 1000 )); [ "$UB_IDLE_TCP" -le $((IDLE_N * 2 + 100)) ] || UB_IDLE_TCP=$((IDLE_N * 2 + 100))
[ "$UB_IDLE_TCP" -ge $((IDLE_N + 100)) ] || bdie "open-file limit $(ulimit -n): Unbound cannot take $IDLE_N connections"
ub_conf "$TMP/ub/unbound-idle.conf" "$UB_IDLE_TCP" idle
ub_conf "$TMP/ub/unbound-base.conf" 10 idle   # Unbound's default incoming-num-tcp
unbound-checkconf "$TMP/ub/unbound.conf" > "$TMP/ub/check.log" 2>&1 ||
  bdie "unbound-checkconf refuses the config: $(tail -n 5 "$TMP/ub/check.log")"

# ---------------------------------------------------------------- servers

# pin_to CPUS PID: every thread of PID onto CPUS.
pin_to() { taskset -a -p -c "$1" "$2" >/dev/null || bdie "taskset -p $2 failed"; }
renice_all() {
  [ "$NICE" != 0 ] || return 0
  local t
  for t in /proc/"$1"/task/*; do renice -n "$NICE" -p "${t##*/}" >/dev/null 2>&1; done
}
# client CMD...: a load generator, on the client CPU (both exec: a background job's $! is the tool's pid).
CLIENT_PREFIX=()
[ "$NICE" = 0 ] || CLIENT_PREFIX+=(nice -n "$NICE")
[ "$PIN" = 0 ] || CLIENT_PREFIX+=(taskset -c "$CLIENT_CPU")
client() { "${CLIENT_PREFIX[@]}" "$@"; }
# answers PORT [dot]: the server answers the benchmark's name over UDP (or DoT, through tlsload).
answers() {
  if [ "${2:-}" = dot ]; then "$TLSLOAD" hs "$ADDR" "$1" 1 0.2 127.4 2>/dev/null | grep -q '^done [1-9].* failed 0 '
  else [ "$(dig +short +time=1 +tries=1 @"$ADDR" -p "$1" "$QNAME" A 2>/dev/null)" = "$ANSWER" ]; fi
}

# start_server CASE [idle]: start it, wait for an answer, pin it; sets PIDS[CASE].
start_server() {
  local cs=$1 i port log how=udp
  case $cs in
    pd) "$PARTDNS_BIN" -c "$TMP/pd/partdns.yaml" >> "$TMP/pd/partdns.log" 2>&1 &
        port=$PD_UDP; log=$TMP/pd/partdns.log ;;
    ub) unbound -d -c "$TMP/ub/unbound${2:+-$2}.conf" >> "$TMP/ub/stdout.log" 2>&1 &
        port=$UB_UDP; log=$TMP/ub/unbound.log
        [ -z "${2:-}" ] || { port=$UB_DOT; how=dot; } ;;
  esac
  PIDS[$cs]=$!
  for ((i = 0; i < 200; i++)); do
    kill -0 "${PIDS[$cs]}" 2>/dev/null || { unset "PIDS[$cs]"; bdie "$cs exited during start-up: $(tail -n 5 "$log" "$TMP/ub/stdout.log" 2>/dev/null)"; }
    answers "$port" "$how" && break
    sleep 0.1
  done
  [ "$i" -lt 200 ] || bdie "$cs does not answer $QNAME on $ADDR@$port within 20 s: $(tail -n 5 "$log" 2>/dev/null)"
  [ "$PIN" = 0 ] || pin_to "$SERVER_CPU" "${PIDS[$cs]}"
  renice_all "${PIDS[$cs]}"
}
stop_server() {
  local pid=${PIDS[$1]:-} i
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null
  for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  unset "PIDS[$1]"
}
port_of() {  # port_of CASE KIND
  case $1$2 in
    pddot) echo "$PD_DOT" ;; pddoh*) echo "$PD_DOH" ;; pdudp) echo "$PD_UDP" ;; pdhs) echo "$PD_DOT" ;;
    ubdot) echo "$UB_DOT" ;; ubdoh*) echo "$UB_DOH" ;; ubudp) echo "$UB_UDP" ;; ubhs) echo "$UB_DOT" ;;
  esac
}

# ---------------------------------------------------------------- one run

declare -A V=()   # case|kind|metric|round -> value
declare -A NOTE=()
KINDS=(dot)
for m in "${METHODS[@]}"; do
  case $m in GET|POST) KINDS+=("doh$m") ;; *) bdie "BENCH_DOH_METHODS: GET and/or POST, not '$m'" ;; esac
done
KINDS+=(udp hs)

# run_one CASE KIND ROUND
run_one() {
  local cs=$1 kind=$2 r=$3 pid=${PIDS[$1]} port out n qps codes secs c0 c1 w0 w1 t0 t1 extra=""
  port=$(port_of "$cs" "$kind")
  local dp=(dnsperf -s "$ADDR" -p "$port" -d "$TMP/q.txt" -c "$CLIENTS" -q "$OUTSTANDING" -T 1 -l "$SECS" -t 2
            -O suppress=timeouts,congestion,sendfailed,sockready,unexpected)
  case $kind in
    dot) dp+=(-m dot) ;;
    doh*) dp+=(-m doh -O "doh-uri=https://$ADDR:$port/dns-query" -O "doh-method=${kind#doh}") ;;
  esac
  c0=$(cpu_ns "$pid"); w0=$(wait_ns "$pid"); t0=$(date +%s%N)
  if [ "$kind" = hs ]; then
    out=$(client "$TLSLOAD" hs "$ADDR" "$port" "$HS_CONC" "$SECS" 127.2 2>&1)
  else
    out=$(client "${dp[@]}" 2>&1)
  fi
  t1=$(date +%s%N); c1=$(cpu_ns "$pid"); w1=$(wait_ns "$pid")
  if [ "$kind" = hs ]; then
    # done N failed F resumed R secs S proto P cipher C group G
    read -r _ n _ f _ res _ secs _ proto _ cipher _ group <<< "$(printf '%s\n' "$out" | grep '^done ' | tail -n 1)"
    [ -n "${n:-}" ] && [ "$n" -gt 0 ] || bdie "tlsload hs ($cs) completed nothing: $out"
    qps=$(awk -v n="$n" -v s="$secs" 'BEGIN {printf "%.1f", n / s}')
    [ "$res" = 0 ] || NOTE[$cs|hs]="resumed $res "
    [ "$f" = 0 ] || NOTE[$cs|hsfail]=$(( ${NOTE[$cs|hsfail]:-0} + f ))
    NOTE[$cs|tls]="$proto $cipher $group"
    extra="failed $f resumed $res ($proto $cipher $group)"
  else
    n=$(dp_field "$out" completed); qps=$(dp_field "$out" qps); codes=$(dp_field "$out" codes)
    secs=$(printf '%s\n' "$out" | awk '/Run time \(s\):/ {print $4; exit}')
    [ -n "$n" ] && [ "$n" -gt 0 ] || bdie "dnsperf $kind ($cs) answered nothing: $(printf '%s' "$out" | tail -n 5)"
    [ "$codes" = "NOERROR $n (100.00%)" ] || { NOTE[$cs|$kind|codes]="$codes"; extra="codes: $codes"; }
    local lost; lost=$(dp_field "$out" lost)
    [ "${lost:-0}" = 0 ] || NOTE[$cs|$kind|lost]=$(( ${NOTE[$cs|$kind|lost]:-0} + lost ))
  fi
  V[$cs|$kind|qps|$r]=$qps
  V[$cs|$kind|core|$r]=$(awk -v n="$n" -v c=$((c1 - c0)) 'BEGIN {printf "%.0f", n / (c / 1e9)}')
  # busy and wait over the load's own run time (dnsperf waits up to -t for the last answers after it)
  [ -n "${secs:-}" ] || secs=$(awk -v t=$((t1 - t0)) 'BEGIN {print t / 1e9}')
  V[$cs|$kind|busy|$r]=$(awk -v c=$((c1 - c0)) -v s="$secs" 'BEGIN {printf "%.1f", 100 * c / (s * 1e9)}')
  V[$cs|$kind|wait|$r]=$(awk -v w=$((w1 - w0)) -v s="$secs" 'BEGIN {printf "%.1f", 100 * w / (s * 1e9)}')
  local line
  line=$(printf 'round %-2s %-2s %-7s answered %8d  %9.0f /s  %8.0f per server CPU-s  server busy %5.1f %%  run-queue wait %4.1f %%  %s' \
    "$r" "$cs" "$kind" "$n" "$qps" "${V[$cs|$kind|core|$r]}" "${V[$cs|$kind|busy|$r]}" "${V[$cs|$kind|wait|$r]}" "$extra")
  bmsg "$line"
  [ -z "${BENCH_RAW:-}" ] || printf '%s\n' "$line" >> "$BENCH_RAW"
}

# ---------------------------------------------------------------- throughput rounds

DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
T_START=$(date +%s)
bmsg "machine: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p' | head -n 1); load average $LOAD0; tmp $TMP"

start_server pd
start_server ub
# warm-up: a connection of each kind to each server (lazy allocations, TLS contexts)
for cs in "${CASES[@]}"; do
  for kind in dot doh udp; do
    port=$(port_of "$cs" "$kind")
    case $kind in
      dot) a=(-m dot) ;; doh) a=(-m doh -O "doh-uri=https://$ADDR:$port/dns-query") ;; udp) a=() ;;
    esac
    out=$(client dnsperf -s "$ADDR" -p "$port" -d "$TMP/q.txt" -c 4 -q 16 -l 1 "${a[@]}" 2>&1)
    [ "$(dp_field "$out" completed)" -gt 0 ] 2>/dev/null || bdie "warm-up: $cs $kind answered nothing: $(printf '%s' "$out" | tail -n 3)"
  done
  [ "$PIN" = 0 ] || pin_to "$SERVER_CPU" "${PIDS[$cs]}"   # threads started since
  renice_all "${PIDS[$cs]}"
done
bmsg "partdns (pid ${PIDS[pd]}, $(ls /proc/"${PIDS[pd]}"/task | wc -l) threads) and unbound (pid ${PIDS[ub]}, $(ls /proc/"${PIDS[ub]}"/task | wc -l) threads) up$([ "$PIN" = 1 ] && echo ", on CPU $SERVER_CPU; load generators on CPU $CLIENT_CPU")"

for ((r = 1; r <= ROUNDS; r++)); do
  if (( r % 2 )); then order=(ub pd); else order=(pd ub); fi
  for kind in "${KINDS[@]}"; do
    for cs in "${order[@]}"; do run_one "$cs" "$kind" "$r"; done
  done
done
for cs in "${CASES[@]}"; do
  kill -0 "${PIDS[$cs]}" 2>/dev/null || bdie "$cs died during the rounds"
done
T_ROUNDS=$(( $(date +%s) - T_START ))

# ---------------------------------------------------------------- profile

declare -A PROF=()
if [ "$PERF" = 1 ] && command -v perf >/dev/null 2>&1; then
  for kind in dot dohGET; do
    for cs in "${CASES[@]}"; do
      perf record -q -e cpu-clock -F 2000 -p "${PIDS[$cs]}" -o "$TMP/perf-$cs-$kind.data" > /dev/null 2>&1 &
      pp=$!
      sleep 0.5
      run_one "$cs" "$kind" perf
      kill -INT "$pp" 2>/dev/null; wait "$pp" 2>/dev/null
      # by library, then the busiest symbols (self time) with their library
      PROF[$cs|$kind]="by library: $(perf report -i "$TMP/perf-$cs-$kind.data" --no-children --sort dso --stdio -g none 2>/dev/null |
        awk '/^ *[0-9.]+%/ && $1 + 0 >= 1.0 {printf "%s%s %s", n++ ? ", " : "", $2, $1}'); symbols: $(
        perf report -i "$TMP/perf-$cs-$kind.data" --no-children --sort dso,symbol --stdio -g none 2>/dev/null |
        awk '/^ *[0-9.]+%/ && $1 + 0 >= 1.0 {printf "%s%s %s", n++ ? ", " : "", $4, $1; if (n == 14) exit}')"
      bmsg "perf $cs $kind: ${PROF[$cs|$kind]}"
    done
  done
fi
stop_server pd
stop_server ub

# ---------------------------------------------------------------- idle connections

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
held() { ss -Htn state established "( sport = :$1 )" 2>/dev/null | wc -l; }
# idle_one CASE VARIANT ROUND
idle_one() {
  local cs=$1 v=$2 r=$3 pid port r0 r1 h q out i lp
  [ "$v" = query ] && q=1 || q=0
  port=$(port_of "$cs" dot)
  # the same server with its default connection limits: Unbound allocates (and touches part of) a buffer
  # per incoming-num-tcp slot at start, so its "before" below already holds part of the connections' cost
  start_server "$cs" "$([ "$cs" = ub ] && echo base)"
  out=$(client "$TLSLOAD" hs "$ADDR" "$port" 1 0.3 127.4 2>&1)
  sleep 1
  V[$cs|idle$v|base|$r]=$(rss_kb "${PIDS[$cs]}")
  stop_server "$cs"
  start_server "$cs" idle
  pid=${PIDS[$cs]}
  out=$(client "$TLSLOAD" hs "$ADDR" "$port" 1 0.3 127.4 2>&1)   # start-up allocations: a few connections and queries
  sleep 1
  r0=$(rss_kb "$pid")
  "${CLIENT_PREFIX[@]}" "$TLSLOAD" idle "$ADDR" "$port" "$IDLE_N" "$IDLE_CONC" "$q" 127.3 > "$TMP/idle.out" 2>&1 &
  lp=$!
  PIDS[tlsload]=$lp
  for ((i = 0; i < 1800; i++)); do
    grep -q '^done ' "$TMP/idle.out" 2>/dev/null && break
    kill -0 "$lp" 2>/dev/null || break
    sleep 0.2
  done
  grep -q '^done ' "$TMP/idle.out" || bdie "tlsload idle ($cs) did not finish: $(tail -n 3 "$TMP/idle.out")"
  sleep 2
  r1=$(rss_kb "$pid"); h=$(held "$port")
  out=$(grep '^done ' "$TMP/idle.out")
  kill -TERM "$lp" 2>/dev/null; wait "$lp" 2>/dev/null; unset "PIDS[tlsload]"
  [ "$h" -gt 0 ] || bdie "$cs holds no connection after tlsload idle: $out"
  V[$cs|idle$v|before|$r]=$r0
  V[$cs|idle$v|after|$r]=$r1
  V[$cs|idle$v|held|$r]=$h
  V[$cs|idle$v|bytes|$r]=$(awk -v a="$r0" -v b="$r1" -v h="$h" 'BEGIN {printf "%.0f", (b - a) * 1024 / h}')
  V[$cs|idle$v|allin|$r]=$(awk -v a="${V[$cs|idle$v|base|$r]}" -v b="$r1" -v h="$h" 'BEGIN {printf "%.0f", (b - a) * 1024 / h}')
  bmsg "idle round $r $cs $v: $out; VmRSS $r0 -> $r1 kB, $h connections held: ${V[$cs|idle$v|bytes|$r]} B each; default limits ${V[$cs|idle$v|base|$r]} kB: ${V[$cs|idle$v|allin|$r]} B each all in"
  stop_server "$cs"
}
for ((r = 1; r <= IDLE_ROUNDS; r++)); do
  if (( r % 2 )); then order=(ub pd); else order=(pd ub); fi
  for v in "${IDLE_VARIANTS[@]}"; do
    for cs in "${order[@]}"; do idle_one "$cs" "$v" "$r"; done
  done
done
T_TOTAL=$(( $(date +%s) - T_START ))
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

# ---------------------------------------------------------------- report

# vals CASE KIND METRIC [ROUNDS]
vals() { local r n=${4:-$ROUNDS}; for ((r = 1; r <= n; r++)); do printf '%s\n' "${V[$1|$2|$3|$r]:-}"; done; }
spread() {  # spread FORMAT VALUES...: "median (min–max)", or the value for one
  local f=$1; shift
  [ $# -gt 1 ] || { fmt "${1:-}" "$f"; return; }
  printf '%s (%s–%s)' "$(fmt "$(median "$@")" "$f")" "$(fmt "$(minimum "$@")" "$f")" "$(fmt "$(maximum "$@")" "$f")"
}
cell() { local v; mapfile -t v < <(vals "$1" "$2" "$3" "${5:-$ROUNDS}"); spread "$4" "${v[@]}"; }
# per-round ratios A_CASE A_KIND / B_CASE B_KIND of METRIC
pratios() { local r n=${6:-$ROUNDS}; for ((r = 1; r <= n; r++)); do ratio "${V[$1|$2|$5|$r]:-}" "${V[$3|$4|$5|$r]:-}"; echo; done; }
rcell() { local p; mapfile -t p < <(pratios "$@"); spread %.2f "${p[@]}"; }
rmed() { local p; mapfile -t p < <(pratios "$@"); median "${p[@]}"; }
verdict() { awk -v x="$1" -v op="$2" -v lim="$3" 'BEGIN { if (x == "nan" || x == "") { print "–"; exit }
  ok = (op == "<=") ? (x <= lim) : (op == "<") ? (x < lim) : (x >= lim); print ok ? "yes" : "**no**" }'; }
kname() {
  case $1 in dot) echo DoT ;; dohGET) echo "DoH GET" ;; dohPOST) echo "DoH POST" ;; udp) echo UDP ;;
    hs) echo "new DoT connections (full handshake + 1 query)" ;; esac
}

SRCDIR=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null)
BTYPE=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null)
if [ -n "$SRCDIR" ] && git -C "$SRCDIR" rev-parse --short HEAD >/dev/null 2>&1; then
  BUILT="git $(git -C "$SRCDIR" rev-parse --short HEAD)$([ -z "$(git -C "$SRCDIR" status --porcelain -- resolver 2>/dev/null)" ] || echo ", resolver/ modified")"
else
  BUILT="source ${SRCDIR:-unknown}"
fi

cat <<REPORT

### Run of $DATE

- command: \`bench/transports.sh $1\` (BENCH_ROUNDS=$ROUNDS BENCH_SECS=$SECS BENCH_CLIENTS=$CLIENTS BENCH_Q=$OUTSTANDING BENCH_DOH_METHODS="${METHODS[*]}" BENCH_HS_CONC=$HS_CONC BENCH_IDLE_CONNS=$IDLE_N BENCH_IDLE_ROUNDS=$IDLE_ROUNDS BENCH_IDLE_CONC=$IDLE_CONC$([ "$NICE" = 0 ] || echo " BENCH_NICE=$NICE")$([ "$PERF" = 0 ] || echo " BENCH_PERF=1")); $T_ROUNDS s of rounds, $T_TOTAL s in all
- machine: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), $(uname -r); load average $LOAD0 before, $LOAD1 after
- $("$PARTDNS_BIN" -v 2>/dev/null | head -n 1) ($BUILT${BTYPE:+, $BTYPE}; the binary built $(date -u -r "$PARTDNS_BIN" '+%Y-%m-%d %H:%M UTC')), server.threads 1, resolver.threads 1; Unbound $(unbound -V 2>/dev/null | sed -n "s/^Version //p") num-threads 1; both pinned to CPU $SERVER_CPU$([ "$PIN" = 1 ] || echo " (pinning was off)"), the load generators on CPU $CLIENT_CPU; $(openssl version | cut -d' ' -f1-2); dnsperf $(dnsperf -h 2>&1 | sed -n "s/^Version //p") (\`-c $CLIENTS -q $OUTSTANDING -T 1 -l $SECS\`)
- the answer: \`$QNAME A\` from local data on both (no recursion, no cache); certificate ECDSA P-256, self-signed; negotiated: partdns ${NOTE[pd|tls]:-?}, Unbound ${NOTE[ub|tls]:-?}
- per run: dnsperf \`-t 2\`; answers per server CPU-second = answers / the server's CPU time over the run (every thread, /proc/PID/task/*/$CPU_SRC): the QPS of one saturated server core; busy = server CPU time / the load's run time; $ROUNDS rounds, order alternating; medians (min–max); ratios are the median (min–max) of the per-round ratios

| measure | Unbound | partdns | partdns / Unbound |
|---|---|---|---|
REPORT
for kind in "${KINDS[@]}"; do
  k=$(kname "$kind")
  unit=answers; [ "$kind" = hs ] && unit=connections
  printf '| %s: %s per server CPU-second | %s | %s | %s |\n' "$k" "$unit" "$(cell ub "$kind" core %.0f)" "$(cell pd "$kind" core %.0f)" "$(rcell pd "$kind" ub "$kind" core)"
  printf '| %s: %s per second (wall) | %s | %s | %s |\n' "$k" "$unit" "$(cell ub "$kind" qps %.0f)" "$(cell pd "$kind" qps %.0f)" "$(rcell pd "$kind" ub "$kind" qps)"
  printf '| %s: server busy %%, run-queue wait %% | %s, %s | %s, %s | |\n' "$k" "$(cell ub "$kind" busy %.0f)" "$(cell ub "$kind" wait %.1f)" "$(cell pd "$kind" busy %.0f)" "$(cell pd "$kind" wait %.1f)"
done
for v in "${IDLE_VARIANTS[@]}"; do
  vn="idle DoT connection ($([ "$v" = query ] && echo "handshake and one query" || echo "handshake only"))"
  printf '| %s: VmRSS bytes each (%s rounds of %s) | %s | %s | %s |\n' "$vn" "$IDLE_ROUNDS" "$IDLE_N" \
    "$(cell ub "idle$v" bytes %.0f "$IDLE_ROUNDS")" "$(cell pd "idle$v" bytes %.0f "$IDLE_ROUNDS")" "$(rcell pd "idle$v" ub "idle$v" bytes "$IDLE_ROUNDS")"
  printf '| ... all in: (VmRSS after − VmRSS of a fresh server with default connection limits) / held | %s | %s | %s |\n' \
    "$(cell ub "idle$v" allin %.0f "$IDLE_ROUNDS")" "$(cell pd "idle$v" allin %.0f "$IDLE_ROUNDS")" "$(rcell pd "idle$v" ub "idle$v" allin "$IDLE_ROUNDS")"
  printf '| ... VmRSS kB default limits; before → after, connections held | %s; %s → %s, %s | %s; %s → %s, %s | |\n' \
    "$(cell ub "idle$v" base %.0f "$IDLE_ROUNDS")" \
    "$(cell ub "idle$v" before %.0f "$IDLE_ROUNDS")" "$(cell ub "idle$v" after %.0f "$IDLE_ROUNDS")" "$(cell ub "idle$v" held %.0f "$IDLE_ROUNDS")" \
    "$(cell pd "idle$v" base %.0f "$IDLE_ROUNDS")" "$(cell pd "idle$v" before %.0f "$IDLE_ROUNDS")" "$(cell pd "idle$v" after %.0f "$IDLE_ROUNDS")" "$(cell pd "idle$v" held %.0f "$IDLE_ROUNDS")"
done

notes=""
for cs in "${CASES[@]}"; do
  for kind in "${KINDS[@]}"; do
    [ -z "${NOTE[$cs|$kind|codes]:-}" ] || notes+="; $cs $kind not all NOERROR (last: ${NOTE[$cs|$kind|codes]})"
    [ -z "${NOTE[$cs|$kind|lost]:-}" ] || notes+="; $cs $kind lost ${NOTE[$cs|$kind|lost]} queries"
  done
  [ -z "${NOTE[$cs|hs]:-}" ] || notes+="; $cs: ${NOTE[$cs|hs]}handshakes resumed"
  [ -z "${NOTE[$cs|hsfail]:-}" ] || notes+="; $cs: ${NOTE[$cs|hsfail]} new connections failed or timed out"
done
if [ -z "$notes" ]; then
  printf '\nChecks: every answer NOERROR, nothing lost, no handshake resumed, every new connection completed.\n'
else
  printf '\nChecks: no handshake resumed unless said here, every answer NOERROR and nothing lost but%s.\n' "${notes#;}"
fi

if [ "$PERF" = 1 ]; then
  printf '\n**Where the server CPU goes** (perf record -e cpu-clock during one more %s-second run each; self time, symbols at 1 %% or more):\n\n' "$SECS"
  for kind in dot dohGET; do
    for cs in "${CASES[@]}"; do
      printf -- '- %s, %s (%s answers per server CPU-second): %s\n' "$([ "$cs" = pd ] && echo partdns || echo Unbound)" "$(kname "$kind")" \
        "${V[$cs|$kind|core|perf]:-?}" "${PROF[$cs|$kind]:-(no profile)}"
    done
  done
fi

{
  echo
  echo "**Targets**:"
  echo
  echo "| target | measured (median of per-round ratios, min–max) | met |"
  echo "|---|---|---|"
  x=$(rmed pd dot ub dot core)
  printf '| DoT hit QPS per server core ≥ 1.3× Unbound | %s | %s |\n' "$(rcell pd dot ub dot core)" "$(verdict "$x" '>=' 1.3)"
  for m in "${METHODS[@]}"; do
    x=$(rmed pd "doh$m" ub "doh$m" core)
    printf '| DoH (%s) hit QPS per server core ≥ 1.3× Unbound | %s | %s |\n' "$m" "$(rcell pd "doh$m" ub "doh$m" core)" "$(verdict "$x" '>=' 1.3)"
  done
  x=$(rmed pd dot pd udp core)
  printf '| partdns DoT hit QPS per core ≥ 0.5× its UDP | %s | %s |\n' "$(rcell pd dot pd udp core)" "$(verdict "$x" '>=' 0.5)"
  for v in "${IDLE_VARIANTS[@]}"; do
    mapfile -t b < <(vals pd "idle$v" bytes "$IDLE_ROUNDS")
    x=$(median "${b[@]}"); y=$(rmed pd "idle$v" ub "idle$v" bytes "$IDLE_ROUNDS")
    printf '| RSS per idle DoT connection (%s) ≤ 8 KB and below Unbound | %s B, %s× Unbound | %s |\n' "$v" \
      "$(fmt "$x" %.0f)" "$(fmt "$y" %.2f)" \
      "$(awk -v a="$(verdict "$x" '<=' 8192)" -v b="$(verdict "$y" '<' 1)" 'BEGIN {print (a == "yes" && b == "yes") ? "yes" : "**no**"}')"
  done
  x=$(rmed pd hs ub hs core)
  printf '| new TLS handshakes per second per core ≥ 1.0× Unbound | %s | %s |\n' "$(rcell pd hs ub hs core)" "$(verdict "$x" '>=' 1.0)"
}
exit 0
