#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Fleet benchmark (not a test): how fast a flag reaches every node through
# the shared store (store.etcd), and what the shared EDNS tier (edns.tier)
# saves the GSLB. Loopback only (127.10.N.x, N picked as the integration
# harness does: harness_pick_net), on the harness's private DNS hierarchy.
#
# Usage (as root: the hierarchy binds port 53 on 127.10.N.x):
#   bench/fleet.sh [BUILD_DIR]          BUILD_DIR defaults to build/
# About 2-3 minutes on 2 cores. Markdown report on stdout, progress on stderr.
#
#   A. Flag propagation. A 3-member etcd cluster (tests/integration/etcd.sh:
#      heartbeat 250 ms, election timeout 2.5 s) and three partdns nodes
#      (store.etcd, defaults otherwise: timeout_ms 2000, lease_ttl 10). In
#      FLEET_ROUNDS (20) rounds, `partdnsctl domain add NAME_r` through node
#      1's config, then `domain del NAME_r`, each after a random 50-300 ms
#      pause (so an operation does not start in step with the nodes' 250 ms
#      ticks). Measured from the start of partdnsctl, by one poller process
#      (a Python helper written to the work dir):
#        - when partdnsctl returned (the write committed in etcd);
#        - when an `etcdctl watch -w json` on the prefix saw the event (what
#          any watcher, the nodes' mirrors included, can see at the earliest);
#        - per node, when it ran the change: every 10 ms the poller asks
#          each node NAME_r A from a Nanjing client (127.0.1.10). Unflagged,
#          the GSLB answers without ECS: 203.0.113.100; flagged, the node asks
#          with Nanjing's mapped /32: 203.0.113.1. The time is the send time
#          of the first query answered the new way (an upper bound, at most
#          one 10 ms period late; the EDNS resolution that answer needed is
#          not counted). Why a query and not `partdnsctl status`
#          edns_domains: a status poll is a process (fork, exec, config
#          parse, control socket) per node every 10 ms, 300 a second on a
#          2-core machine, taking CPU from the etcd members and the daemons
#          being timed; a query costs one UDP packet and a cache hit, from
#          one long-lived process, and it shows what a client gets (the
#          published snapshot, the same one status counts).
#      Phases: all members up; the member most nodes watch (partdnsctl
#      status fleet_member; at first the first endpoint) killed -9, not the
#      raft leader (leadership moved off it first), the first round's add
#      issued at once after the kill and reported on its own; and
#      FLEET_LEADER_ROUNDS (5) rounds with the member most nodes watch
#      killed -9 while it is the raft leader (leadership moved onto it
#      first): the first write waits for an election.
#   B. GSLB queries per city x name. knotd's GSLB (mod-geoip, subnet mode,
#      as in the tests), two tier nodes (edns.trusted_ecs: the tier
#      frontends), two frontends with edns.tier and two frontends without
#      (resolving themselves), cdn.test flagged --subtree everywhere. In
#      FLEET_B_ROUNDS (3) rounds, order alternating: FLEET_NAMES (50) fresh
#      names under cdn.test for the tier pair, 50 others for the plain pair;
#      for each name every city's client (the fixtures' 3 partitions,
#      127.0.C.x) asks through both frontends of the pair at once (6 queries
#      in flight: the tier's worst case, both frontends' misses at the same
#      moment). The GSLB's ECS queries for each pair's names are counted from
#      its dnstap log (knot_mark/knot_since), per city x name; every answer
#      is checked to be its city's node (accuracy).
#   FLEET_PARTS (AB) runs only the parts named.
set -u -o pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${1:-$SRC/build}
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$PWD/$BUILD_DIR ;; esac
ROUNDS=${FLEET_ROUNDS:-20}
LROUNDS=${FLEET_LEADER_ROUNDS:-5}
M=${FLEET_NAMES:-50}
BROUNDS=${FLEET_B_ROUNDS:-3}
PARTS=${FLEET_PARTS:-AB}
CMDLINE="bench/fleet.sh $(basename "$BUILD_DIR")"
for v in FLEET_ROUNDS FLEET_LEADER_ROUNDS FLEET_NAMES FLEET_B_ROUNDS FLEET_PARTS; do
  [ -z "${!v:-}" ] || CMDLINE="$v=${!v} $CMDLINE"
done

fmsg() { printf '[fleet] %s\n' "$*" >&2; }
fdie() { printf '[fleet] ERROR: %s\n' "$*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || fdie "run as root"
for b in etcd etcdctl python3; do command -v "$b" >/dev/null 2>&1 || fdie "$b not installed (tools/deps.sh)"; done
export PARTDNS_BIN=$BUILD_DIR/resolver/partdns PARTDNSCTL_BIN=$BUILD_DIR/tools/ctl/partdnsctl
[ -x "$PARTDNS_BIN" ] && [ -x "$PARTDNSCTL_BIN" ] || fdie "no $PARTDNS_BIN or partdnsctl: build first"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
T_START=$(date +%s)

# what was built (others may commit meanwhile): the build's source tree (its
# CMakeCache); in a git checkout, the last commit before the binary was
# linked, and whether files of the daemon or partdnsctl changed in the tree
# are older than the binary (so may be in it). FLEET_BUILT overrides the line
# (e.g. for a build of an exported tree).
SRCDIR=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null)
if [ -n "${FLEET_BUILT:-}" ]; then
  BUILT=$FLEET_BUILT
elif [ -n "$SRCDIR" ] && git -C "$SRCDIR" rev-parse --short HEAD >/dev/null 2>&1; then
  BUILT="git $(git -C "$SRCDIR" log -1 --format=%h --before="@$(stat -c %Y "$PARTDNS_BIN")" HEAD)"
  [ "$BUILT" = "git $(git -C "$SRCDIR" rev-parse --short HEAD)" ] ||
    BUILT+=" (the last commit before the build; HEAD is now $(git -C "$SRCDIR" rev-parse --short HEAD))"
  for f in $(git -C "$SRCDIR" status --porcelain -- resolver etcd conf tools/ctl 2>/dev/null | awk '{print $NF}'); do
    if [ "$SRCDIR/$f" -ot "$PARTDNS_BIN" ]; then BUILT+=", with uncommitted changes to $f"; fi
  done
else
  BUILT="source ${SRCDIR:-unknown}"
fi
BTYPE=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null)

. "$SRC/tests/integration/lib.sh"
. "$SRC/tests/integration/etcd.sh"
. "$SRC/bench/lib.sh"
harness_init bench_fleet
set +e
pd_require_bins
[ "$IT_HAVE_DNSTAP" = 1 ] || fdie "knot-module-dnstap is needed: part B counts the GSLB's queries from its log"
IT_HAVE_IPV6=0   # every partdns on its own address; ::1 is one address for all

# pctl P VALUES...: the P-th percentile (nearest rank) of the numeric VALUES.
pctl() {
  local p=$1
  shift
  printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g |
    awk -v p="$p" '{v[NR] = $1} END { if (NR == 0) { print "–"; exit }
      i = int(p / 100 * NR); if (i < p / 100 * NR) i++; if (i < 1) i = 1; print v[i] }'
}
# mpm VALUES...: "median / p90 / max" in ms, and the misses ("-") if any.
mpm() {
  local miss nums
  miss=$(printf '%s\n' "$@" | grep -cvE '^[0-9.]+$')
  nums=$(printf '%s\n' "$@" | grep -E '^[0-9.]+$')
  printf '%s / %s / %s' "$(fmt "$(median $nums)" %.0f)" "$(fmt "$(pctl 90 $nums)" %.0f)" "$(fmt "$(maximum $nums)" %.0f)"
  [ "$miss" = 0 ] || printf ' (%s not seen)' "$miss"
}

# ------------------------------------------------------------ the helper
PY=$IT_TMP/fleetpoll.py
cat > "$PY" <<'PYEOF'
"""bench/fleet.sh's poller: flag propagation (prop) and the tier load (ask)."""
import argparse, base64, json, os, random, select, signal, socket, struct, subprocess, sys, time


def query(qname, qid):
    q = b''.join(bytes([len(l)]) + l.encode() for l in qname.rstrip('.').split('.')) + b'\0'
    return struct.pack('>HHHHHH', qid, 0x0100, 1, 0, 0, 0) + q + struct.pack('>HH', 1, 1)


def skip_name(buf, off):
    while True:
        n = buf[off]
        if n == 0:
            return off + 1
        if n & 0xC0 == 0xC0:
            return off + 2
        off += 1 + n


def parse(buf):
    """(id, rcode, [A addresses of the answer])"""
    qid, flags, qd, an, _, _ = struct.unpack_from('>HHHHHH', buf, 0)
    off = 12
    for _ in range(qd):
        off = skip_name(buf, off) + 4
    addrs = []
    for _ in range(an):
        off = skip_name(buf, off)
        t, _, _, rdl = struct.unpack_from('>HHIH', buf, off)
        off += 10
        if t == 1 and rdl == 4:
            addrs.append(socket.inet_ntoa(buf[off:off + 4]))
        off += rdl
    return qid, flags & 0xF, addrs


def ask_once(sock, dest, name, timeout=2.0):
    qid = random.randrange(65536)
    sock.sendto(query(name, qid), dest)
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        r, _, _ = select.select([sock], [], [], end - time.monotonic())
        if not r:
            break
        buf = sock.recv(4096)
        i, rc, addrs = parse(buf)
        if i == qid:
            return addrs
    return None


def prop(a):
    nodes = a.nodes.split(',')
    socks = []
    for _ in nodes:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((a.client, 0))
        s.setblocking(False)
        socks.append(s)
    watch = None
    if a.watch:
        watch = subprocess.Popen(a.watch.split('\x1f'), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        os.set_blocking(watch.stdout.fileno(), False)
        time.sleep(0.5)
    wbuf = b''
    kill_pid = a.kill_pid
    for r, name in enumerate(a.names, 1):
        fq = name.rstrip('.') + '.'
        for op in ('add', 'del'):
            before, after = (a.plain, a.flagged) if op == 'add' else (a.flagged, a.plain)
            # each node answers the old way first (a check: a late node would bias the round)
            for i, n in enumerate(nodes):
                got = None
                for _ in range(100):
                    got = ask_once(socks[i], (n, a.port), name)
                    if got is not None and before in got:
                        break
                    time.sleep(0.05)
                if got is None or before not in got:
                    print(f'# round {r} {op}: node {i + 1} answers {got}, not {before}, before the change',
                          file=sys.stderr)
            if kill_pid:
                os.kill(kill_pid, signal.SIGKILL)
                kill_pid = 0
            else:
                time.sleep(random.uniform(0.05, 0.30))
            # drain what the watch said before
            if watch:
                try:
                    while os.read(watch.stdout.fileno(), 65536):
                        pass
                except BlockingIOError:
                    pass
                wbuf = b''
            t0 = time.monotonic()
            attempts = 1
            ctl = subprocess.Popen([a.ctl, '-c', a.conf, 'domain', op, name],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            ctl_out = b''
            ack = w_at = None
            seen = [None] * len(nodes)
            sent = [None] * len(nodes)   # (qid, send time) of the query in flight
            next_poll = t0
            while time.monotonic() - t0 < a.limit:
                if ack is not None and None not in seen and (watch is None or w_at is not None):
                    break
                now = time.monotonic()
                if now >= next_poll:
                    for i, n in enumerate(nodes):
                        if seen[i] is None and (sent[i] is None or now - sent[i][1] > 1.0):
                            qid = random.randrange(65536)
                            socks[i].sendto(query(name, qid), (n, a.port))
                            sent[i] = (qid, time.monotonic())
                    next_poll += a.period
                    while next_poll < now:
                        next_poll += a.period
                rl = [s for i, s in enumerate(socks) if seen[i] is None]
                if ctl is not None:
                    rl.append(ctl.stdout)
                if watch is not None and w_at is None:
                    rl.append(watch.stdout)
                rd, _, _ = select.select(rl, [], [], max(0.0, next_poll - time.monotonic()))
                t = time.monotonic()
                for f in rd:
                    if ctl is not None and f is ctl.stdout:
                        chunk = os.read(f.fileno(), 65536)
                        if chunk:
                            ctl_out += chunk
                            continue
                        rc = ctl.wait()
                        ctl = None
                        if rc == 0:
                            ack = t - t0
                        else:
                            print(f'# round {r} {op}: partdnsctl failed ({rc}): {ctl_out.decode().strip()}; again',
                                  file=sys.stderr)
                            attempts += 1
                            time.sleep(0.1)
                            ctl_out = b''
                            ctl = subprocess.Popen([a.ctl, '-c', a.conf, 'domain', op, name],
                                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                    elif watch is not None and f is watch.stdout:
                        try:
                            wbuf += os.read(f.fileno(), 65536)
                        except BlockingIOError:
                            pass
                        *lines, wbuf = wbuf.split(b'\n')
                        for line in lines:
                            try:
                                resp = json.loads(line)
                            except ValueError:
                                continue
                            for ev in resp.get('Events') or []:
                                key = base64.b64decode(ev['kv']['key']).decode(errors='replace')
                                is_del = ev.get('type') in (1, 'DELETE')
                                if key.endswith('/domains/' + fq) and is_del == (op == 'del'):
                                    w_at = t - t0
                    else:
                        i = socks.index(f)
                        try:
                            buf = f.recv(4096)
                        except BlockingIOError:
                            continue
                        qid, _, addrs = parse(buf)
                        if sent[i] is None or qid != sent[i][0]:
                            continue
                        if after in addrs:
                            seen[i] = sent[i][1] - t0
                        sent[i] = None
            if ctl is not None:
                ctl.kill()
                ctl.wait()
            ms = lambda v: '-' if v is None else f'{v * 1000:.1f}'
            print(r, op, ms(ack), ms(w_at), *[ms(v) for v in seen], attempts, flush=True)
    if watch:
        watch.kill()
        watch.wait()


def ref(a):
    """For scale: an etcd put through the JSON gateway (a new connection each, as a new
    partdnsctl makes), partdnsctl's process start (--version) and a read (domain list)."""
    import http.client
    b64 = lambda v: base64.b64encode(v.encode()).decode()
    med = lambda v: sorted(v)[(len(v) - 1) // 2]
    put, spawn, lst = [], [], []
    for i in range(a.n):
        c = http.client.HTTPConnection(a.host, a.eport, timeout=5)
        t = time.monotonic()
        c.request('POST', '/v3/kv/put', json.dumps({'key': b64('/fleet-bench-probe'), 'value': b64(str(i))}))
        c.getresponse().read()
        put.append(time.monotonic() - t)
        c.close()
        t = time.monotonic()
        subprocess.run([a.ctl, '--version'], stdout=subprocess.DEVNULL)
        spawn.append(time.monotonic() - t)
        t = time.monotonic()
        subprocess.run([a.ctl, '-c', a.conf, 'domain', 'list'], stdout=subprocess.DEVNULL)
        lst.append(time.monotonic() - t)
        time.sleep(0.1)
    print(*[f'{med(v) * 1000:.1f} {max(v) * 1000:.1f}' for v in (put, spawn, lst)])


def ask(a):
    pairs = []
    for p in a.pairs.split(','):
        front, client, want = p.split(':')
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((client, 0))
        s.setblocking(False)
        pairs.append((front, s, want))
    names = [l.split()[0] for l in open(a.names) if l.strip()]
    total = good = wrong = lost = 0
    rtts = []
    for name in names:
        inflight = {}
        for front, s, want in pairs:
            qid = random.randrange(65536)
            s.sendto(query(name, qid), (front, a.port))
            inflight[s] = (qid, time.monotonic(), want, front)
            total += 1
        end = time.monotonic() + a.timeout
        while inflight and time.monotonic() < end:
            rd, _, _ = select.select(list(inflight), [], [], end - time.monotonic())
            t = time.monotonic()
            for s in rd:
                buf = s.recv(4096)
                qid, rc, addrs = parse(buf)
                q = inflight.get(s)
                if q is None or qid != q[0]:
                    continue
                del inflight[s]
                rtts.append((t - q[1]) * 1000)
                if addrs == [q[2]]:
                    good += 1
                else:
                    wrong += 1
                    print(f'# {name} via {q[3]} from {s.getsockname()[0]}: rcode {rc} {addrs}, want {q[2]}',
                          file=sys.stderr)
        lost += len(inflight)
    rtts.sort()
    pick = lambda p: rtts[max(0, -(-len(rtts) * p // 100) - 1)] if rtts else 0
    print(total, good, wrong, lost, f'{pick(50):.1f}', f'{pick(90):.1f}')


ap = argparse.ArgumentParser()
sub = ap.add_subparsers(dest='cmd', required=True)
p = sub.add_parser('prop')
p.add_argument('--ctl', required=True)
p.add_argument('--conf', required=True)
p.add_argument('--nodes', required=True)
p.add_argument('--port', type=int, required=True)
p.add_argument('--client', required=True)
p.add_argument('--flagged', required=True)
p.add_argument('--plain', required=True)
p.add_argument('--period', type=float, default=0.01)
p.add_argument('--limit', type=float, default=30.0)
p.add_argument('--watch', default='')
p.add_argument('--kill-pid', type=int, default=0)
p.add_argument('names', nargs='+')
q = sub.add_parser('ask')
q.add_argument('--pairs', required=True)
q.add_argument('--names', required=True)
q.add_argument('--port', type=int, default=53)
q.add_argument('--timeout', type=float, default=5.0)
r = sub.add_parser('ref')
r.add_argument('--host', required=True)
r.add_argument('--eport', type=int, default=2379)
r.add_argument('--ctl', required=True)
r.add_argument('--conf', required=True)
r.add_argument('-n', type=int, default=10)
a = ap.parse_args()
{'prop': prop, 'ask': ask, 'ref': ref}[a.cmd](a)
PYEOF

# ------------------------------------------------------------ the hierarchy
# names the GSLB steers per city: fa*, fb*, fc* for part A's phases, tR-K
# (tier pair) and pR-K (plain pair) for part B's rounds
ANAMES_ALL=() ANAMES_KILL=() ANAMES_LEADER=() BNAMES=()
for ((r = 1; r <= ROUNDS; r++)); do ANAMES_ALL+=("fa$r.cdn.test") ANAMES_KILL+=("fb$r.cdn.test"); done
for ((r = 1; r <= LROUNDS; r++)); do ANAMES_LEADER+=("fc$r.cdn.test"); done
for ((r = 1; r <= BROUNDS; r++)); do
  for ((k = 1; k <= M; k++)); do BNAMES+=("t$r-$k.cdn.test" "p$r-$k.cdn.test"); done
done
harness_write_hints
knot_write_conf root "$NET.1" .
knot_write_conf tld "$NET.2" example. test.
knot_write_conf customer "$NET.3" customer.example. oob.example.
knot_write_conf gslb "$NET.4" cdn.test.
for n in "${ANAMES_ALL[@]}" "${ANAMES_KILL[@]}" "${ANAMES_LEADER[@]}" "${BNAMES[@]}"; do
  printf '%s:\n' "$n"
  for c in 1 2 3; do printf '  - net: 198.51.100.%s/32\n    A: 203.0.113.%s\n' "$c" "$c"; done
  printf '%-15s A     203.0.113.100\n' "${n%.cdn.test}" >> "$IT_TMP/knot-gslb/cdn.test.zone"
done >> "$IT_TMP/knot-gslb/gslb.geo"
knot_start root tld customer gslb
fmsg "hierarchy up on $NET.0/24 ($IT_TMP)"

# ============================================================ A: propagation
if [[ $PARTS == *A* ]]; then
etcd_cluster_start 3
PREFIX=/partdns-bench/

# node_conf I: node I's config (test_fleet.sh's): its own address, store and
# control socket, the plan in its own file, the shared store.
node_conf() {
  local i=$1 saved=$PD_ADDR
  PD_ADDR=$NET.6$i
  pd_write_conf "$IT_TMP/n$i.yaml"
  PD_ADDR=$saved
  mkdir -p "$IT_TMP/store$i"
  sed -i -e "s|store: $IT_TMP/store\$|store: $IT_TMP/store$i|" \
         -e "s|control: $IT_TMP/control.sock|control: $IT_TMP/control$i.sock|" "$IT_TMP/n$i.yaml"
  { echo "serial: 1"; sed -n '/^partitions:/,$p' "$IT_TMP/n$i.yaml" | tail -n +2 | sed 's/^  //'; } > "$IT_TMP/plan-n$i.yaml"
  sed -i '/^partitions:/,$d' "$IT_TMP/n$i.yaml"
  cat >> "$IT_TMP/n$i.yaml" <<EOF
partitions:
  include: plan-n$i.yaml
store:
  etcd: { endpoints: $(etcd_yaml_endpoints), prefix: $PREFIX, name: node$i }
EOF
}
node_start() {
  local i=$1
  "$PARTDNS_BIN" -c "$IT_TMP/n$i.yaml" >> "$IT_TMP/node$i.log" 2>&1 &
  IT_PIDS[node$i]=$!
  it_wait_dns 20 -b 127.0.0.1 @"$NET.6$i" -p "$PD_PORT" localhost. A ||
    fdie "node $i did not answer within 20 s: $(tail -n 5 "$IT_TMP/node$i.log")"
}
node_stop() { it_stop_pid "${IT_PIDS[node$1]}" 10; unset "IT_PIDS[node$1]"; }
nctl() { local i=$1; shift; "$PARTDNSCTL_BIN" -c "$IT_TMP/n$i.yaml" "$@" 2>&1; }
# member_of I: the etcd member node I's watch reads from (its index 1..3).
member_of() {
  local m
  m=$(nctl "$1" status | awk '$1 == "fleet_member" {print $2}')
  m=${m#http://}; m=${m%:2379}
  echo "${m##*.}" | awk -v n="${m%.*}" '{print ($1 >= 71 && $1 <= 73) ? $1 - 70 : "-"}'
}
members() { local i out=""; for i in 1 2 3; do out+="${out:+ }n$i→e$(member_of "$i")"; done; echo "$out"; }
# most_watched: the member most nodes watch.
most_watched() { for i in 1 2 3; do member_of "$i"; done | sort | uniq -c | sort -k1,1nr -k2,2n | awk 'NR == 1 {print $2}'; }
# etcd_status_field I FIELD: member I's endpoint status (member_id, leader: decimal).
etcd_ep_status() {
  ETCDCTL_API=3 etcdctl --endpoints "$(etcd_addr "$1"):2379" --dial-timeout 2s --command-timeout 5s \
    endpoint status -w json 2>/dev/null | python3 -c 'import json, sys
s = json.load(sys.stdin)[0]["Status"]; print(s["header"]["member_id"], s["leader"])'
}
# etcd_leader: the index of the leader (as member 1..3 see it; "-" when none is known).
etcd_leader() {
  local i id lead
  declare -A idx=()
  for i in 1 2 3; do
    [ -n "${IT_PIDS[etcd$i]:-}" ] || continue
    read -r id lead < <(etcd_ep_status "$i") && idx[$id]=$i
  done
  for i in 1 2 3; do
    [ -n "${IT_PIDS[etcd$i]:-}" ] || continue
    read -r id lead < <(etcd_ep_status "$i") || continue
    echo "${idx[$lead]:--}"
    return
  done
  echo -
}
# etcd_move_leader TO: make member TO the leader (etcdctl move-leader, sent to the leader).
etcd_move_leader() {
  local to=$1 from id lead k
  from=$(etcd_leader)
  [ "$from" != "$to" ] || return 0
  read -r id lead < <(etcd_ep_status "$to")
  ETCDCTL_API=3 etcdctl --endpoints "$(etcd_addr "$from"):2379" --command-timeout 10s \
    move-leader "$(printf '%x' "$id")" >/dev/null 2>&1
  for ((k = 0; k < 40; k++)); do
    [ "$(etcd_leader)" = "$to" ] && return 0
    sleep 0.25
  done
  return 1
}

for i in 1 2 3; do node_conf "$i"; node_start "$i"; done
for i in 1 2 3; do
  it_poll 20 "fleet_connected yes" sh -c "'$PARTDNSCTL_BIN' -c '$IT_TMP/n$i.yaml' status | grep '^fleet_connected '" ||
    fdie "node $i does not watch the shared store: $(nctl "$i" status | grep fleet_)"
done

# prop_phase TAG WATCH-MEMBERS KILL-PID NAMES...: the poller's rounds into $IT_TMP/A-TAG.txt
prop_phase() {
  local tag=$1 wm=$2 kp=$3 eps="" k
  shift 3
  for k in $wm; do eps+="${eps:+,}$(etcd_addr "$k"):2379"; done
  python3 "$PY" prop --ctl "$PARTDNSCTL_BIN" --conf "$IT_TMP/n1.yaml" \
    --nodes "$NET.61,$NET.62,$NET.63" --port "$PD_PORT" --client 127.0.1.10 \
    --flagged 203.0.113.1 --plain 203.0.113.100 --kill-pid "$kp" \
    --watch "$(printf '%s\x1f' env ETCDCTL_API=3 etcdctl --endpoints "$eps" watch --prefix "${PREFIX}domains/" -w json | sed 's/\x1f$//')" \
    "$@" > "$IT_TMP/A-$tag.txt" 2> "$IT_TMP/A-$tag.err"
  if [ -s "$IT_TMP/A-$tag.err" ]; then fmsg "A $tag: $(head -n 5 "$IT_TMP/A-$tag.err" | tr '\n' ' ')"; fi
}

fmsg "A: $ROUNDS rounds, every member up (watches: $(members); leader e$(etcd_leader))"
MEMBERS_ALL=$(members) LEADER_ALL=$(etcd_leader)
prop_phase all "1 2 3" 0 "${ANAMES_ALL[@]}"
# for scale, every member up: a bare etcd put at the first endpoint, partdnsctl's start, a partdnsctl read
read -r REF_PUT REF_PUTMAX REF_SPAWN REF_SPAWNMAX REF_LIST REF_LISTMAX < <(python3 "$PY" ref --host "$(etcd_addr 1)" \
  --ctl "$PARTDNSCTL_BIN" --conf "$IT_TMP/n1.yaml")

# ---- the member most nodes watch, killed while a follower
V=$(most_watched)
[[ $V =~ ^[123]$ ]] || fdie "which member do the nodes watch? $(members)"
OTHERS=$(for k in 1 2 3; do [ "$k" = "$V" ] || printf '%s ' "$k"; done)
if [ "$(etcd_leader)" = "$V" ]; then
  etcd_move_leader "${OTHERS%% *}" || fdie "could not move the leadership off e$V"
fi
MEMBERS_KB=$(members) LEADER_KB=$(etcd_leader) VICTIM_KB=$V
fmsg "A: e$V (watched: $MEMBERS_KB; leader e$LEADER_KB) killed -9, then $ROUNDS rounds"
prop_phase kill "$OTHERS" "${IT_PIDS[etcd$V]}" "${ANAMES_KILL[@]}"
etcd_member_stop "$V" kill 2>/dev/null   # (bash would say "Killed")
MEMBERS_KA=$(members)
etcd_member_start "$V"
etcd_wait_healthy 60 || fdie "the etcd cluster did not come back"

# ---- the member most nodes watch, killed while the leader
V=$(most_watched)
[[ $V =~ ^[123]$ ]] || fdie "which member do the nodes watch? $(members)"
OTHERS=$(for k in 1 2 3; do [ "$k" = "$V" ] || printf '%s ' "$k"; done)
# a member just restarted has to catch up before it can lead: try for a while
for ((k = 0; k < 10; k++)); do etcd_move_leader "$V" && break; sleep 1; done
MEMBERS_KL=$(members) LEADER_KL=$(etcd_leader) VICTIM_KL=$V
fmsg "A: e$V (watched: $MEMBERS_KL; leader e$LEADER_KL) killed -9, then $LROUNDS rounds"
prop_phase leader "$OTHERS" "${IT_PIDS[etcd$V]}" "${ANAMES_LEADER[@]}"
etcd_member_stop "$V" kill 2>/dev/null
MEMBERS_KLA=$(members)
for i in 1 2 3; do node_stop "$i"; done
for i in 1 2 3; do [ -z "${IT_PIDS[etcd$i]:-}" ] || etcd_member_stop "$i"; done
fi

# ============================================================ B: the tier
if [[ $PARTS == *B* ]]; then
TIER1=$NET.81 TIER2=$NET.82 FRONT1=$NET.83 FRONT2=$NET.84 PLAIN1=$NET.85 PLAIN2=$NET.86
declare -A PD_CONF_OF=()
pd_conf() {
  local name=$1 dir=$IT_TMP/$1
  mkdir -p "$dir/store"
  PD_ADDR=$2 PD_PORT=53 pd_write_conf "$dir/partdns.yaml"
  sed -i -e "s|$IT_TMP/control.sock|$dir/control.sock|" -e "s|store: $IT_TMP/store|store: $dir/store|" \
    "$dir/partdns.yaml"
  PD_CONF_OF[$name]=$dir/partdns.yaml
}
bctl() { local n=$1; shift; "$PARTDNSCTL_BIN" -c "${PD_CONF_OF[$n]}" "$@"; }
pd_launch() {
  "$PARTDNS_BIN" -c "${PD_CONF_OF[$1]}" >> "$IT_TMP/$1/partdns.log" 2>&1 &
  IT_PIDS[pd_$1]=$!
  it_wait_dns 20 -b 127.0.0.1 @"$2" localhost. A || fdie "partdns $1 did not answer on $2 within 20 s"
}
bstat() { bctl "$1" stats | awk -v k="$2" '$1 == k {print $2}'; }
for t in tier1:$TIER1 tier2:$TIER2; do
  PD_TRUSTED_ECS="[ $FRONT1/32, $FRONT2/32 ]" pd_conf "${t%%:*}" "${t#*:}"
done
for f in front1:$FRONT1 front2:$FRONT2; do
  pd_conf "${f%%:*}" "${f#*:}"
  sed -i "s|^  trusted_ecs: .*|&\n  tier: [ \"$TIER1@53\", \"$TIER2@53\" ]\n  outgoing: [ ${f#*:} ]|" \
    "${PD_CONF_OF[${f%%:*}]}"
done
for f in plain1:$PLAIN1 plain2:$PLAIN2; do pd_conf "${f%%:*}" "${f#*:}"; done
BNODES="tier1:$TIER1 tier2:$TIER2 front1:$FRONT1 front2:$FRONT2 plain1:$PLAIN1 plain2:$PLAIN2"
for n in $BNODES; do bctl "${n%%:*}" domain add cdn.test --subtree >/dev/null || fdie "domain add on ${n%%:*}"; done
for n in $BNODES; do pd_launch "${n%%:*}" "${n#*:}"; done

# pairs FRONT-A HOST-A FRONT-B HOST-B: every city's client through both frontends
pairs() {
  local out="" c
  for c in 1 2 3; do out+="${out:+,}$1:127.0.$c.$2:203.0.113.$c,$3:127.0.$c.$4:203.0.113.$c"; done
  echo "$out"
}
TIER_PAIRS=$(pairs "$FRONT1" 10 "$FRONT2" 20)
PLAIN_PAIRS=$(pairs "$PLAIN1" 30 "$PLAIN2" 40)
# warm-up: every node learns the GSLB's zone cut (not counted)
echo video.cdn.test > "$IT_TMP/warm.txt"
python3 "$PY" ask --pairs "$TIER_PAIRS" --names "$IT_TMP/warm.txt" > /dev/null
python3 "$PY" ask --pairs "$PLAIN_PAIRS" --names "$IT_TMP/warm.txt" > /dev/null
gslb_flush
MARK=$(knot_mark gslb)
declare -a B_ROWS=() R_TIER=() R_PLAIN=() R_RATIO=() ACC_T=() ACC_P=() RTT_T=() RTT_P=()
NC=3
for ((r = 1; r <= BROUNDS; r++)); do
  order="tier plain"; ((r % 2)) || order="plain tier"
  first=${order%% *}
  declare -A ASK=() ALLQ=() TQ=() UPQ=()
  for mode in $order; do
    if [ "$mode" = tier ]; then pp=$TIER_PAIRS pfx=t; else pp=$PLAIN_PAIRS pfx=p; fi
    for ((k = 1; k <= M; k++)); do echo "$pfx$r-$k.cdn.test"; done > "$IT_TMP/b-$mode-$r.txt"
    g0=$(gslb_query_count)
    t0=$(( $(bstat front1 edns.tier_queries) + $(bstat front2 edns.tier_queries) ))
    u0=0; for n in tier1 tier2 plain1 plain2; do u0=$((u0 + $(bstat "$n" edns.upstream_queries))); done
    ASK[$mode]=$(python3 "$PY" ask --pairs "$pp" --names "$IT_TMP/b-$mode-$r.txt" 2>> "$IT_TMP/b-wrong.txt")
    ALLQ[$mode]=$(($(gslb_query_count) - g0))
    TQ[$mode]=$(( $(bstat front1 edns.tier_queries) + $(bstat front2 edns.tier_queries) - t0 ))
    u1=0; for n in tier1 tier2 plain1 plain2; do u1=$((u1 + $(bstat "$n" edns.upstream_queries))); done
    UPQ[$mode]=$((u1 - u0))
    fmsg "B round $r, $mode: asked/right/wrong/lost/rtt50/rtt90 ${ASK[$mode]}; GSLB queries ${ALLQ[$mode]}"
  done
  gslb_flush
  ecs_t=$(knot_since gslb "$MARK" | awk -v r="$r" '$2 == "A" && $3 != "-" && $1 ~ ("^t" r "-") {n++} END {print n + 0}')
  ecs_p=$(knot_since gslb "$MARK" | awk -v r="$r" '$2 == "A" && $3 != "-" && $1 ~ ("^p" r "-") {n++} END {print n + 0}')
  noecs=$(knot_since gslb "$MARK" | awk -v r="$r" '$3 == "-" && $1 ~ ("^[tp]" r "-") {n++} END {print n + 0}')
  MARK=$(knot_mark gslb)
  read -r tot_t good_t _ _ rtt50_t rtt90_t <<<"${ASK[tier]}"
  read -r tot_p good_p _ _ rtt50_p rtt90_p <<<"${ASK[plain]}"
  qt=$(awk -v a="$ecs_t" -v n=$((NC * M)) 'BEGIN {printf "%.2f", a / n}')
  qp=$(awk -v a="$ecs_p" -v n=$((NC * M)) 'BEGIN {printf "%.2f", a / n}')
  at=$(awk -v a="$good_t" -v b="$tot_t" 'BEGIN {printf "%.1f", 100 * a / b}')
  ap=$(awk -v a="$good_p" -v b="$tot_p" 'BEGIN {printf "%.1f", 100 * a / b}')
  R_TIER+=("$qt") R_PLAIN+=("$qp") R_RATIO+=("$(ratio "$ecs_p" "$ecs_t")") ACC_T+=("$at") ACC_P+=("$ap")
  RTT_T+=("$rtt50_t") RTT_P+=("$rtt50_p")
  B_ROWS+=("| $r ($first first) | $ecs_t ($qt) | $ecs_p ($qp) | $(ratio "$ecs_p" "$ecs_t") | ${ALLQ[tier]} / ${ALLQ[plain]} | ${TQ[tier]} | ${UPQ[tier]} / ${UPQ[plain]} | $noecs | $at % ($good_t/$tot_t) | $ap % ($good_p/$tot_p) | $rtt50_t / $rtt90_t | $rtt50_p / $rtt90_p |")
  unset ASK ALLQ TQ UPQ
done
FAILOVERS=$(( $(bstat front1 edns.tier_failovers) + $(bstat front2 edns.tier_failovers) ))
declare -A OWN=()
for c in nanjing suzhou wuxi; do
  a1=$(bstat tier1 "partition.$c.edns") a2=$(bstat tier2 "partition.$c.edns")
  OWN[$c]="tier1 $a1 / tier2 $a2"
done
fi

# ============================================================ the report
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
ELAPSED=$(( $(date +%s) - T_START ))
# acol FILE OP COLUMN [FIRST-ROUND]: the column's values (3 partdnsctl, 4 watch, 5-7 nodes), rounds from FIRST on
acol() { awk -v op="$2" -v c="$3" -v f="${4:-1}" '$2 == op && $1 >= f {print $c}' "$1"; }
# arow LABEL FILE OP [FIRST-ROUND]: one table row, median / p90 / max per column
arow() {
  local l=$1 f=$2 op=$3 from=${4:-1} c last
  printf '| %s | %s |' "$l" "$(acol "$f" "$op" 1 "$from" | grep -c .)"
  for c in 3 4 5 6 7; do printf ' %s |' "$(mpm $(acol "$f" "$op" "$c" "$from"))"; done
  # the last node of each round: when the whole fleet runs it
  last=$(awk -v op="$op" -v f="$from" '$2 == op && $1 >= f {
    m = 0; for (i = 5; i <= 7; i++) { if ($i == "-") { m = "-"; break } if ($i + 0 > m) m = $i + 0 } print m }' "$f")
  printf ' %s |\n' "$(mpm $last)"
}
# dwrow LABEL FILE...: per node, node time - watch event time, every round of every op
dwrow() {
  local l=$1 c
  shift
  printf '| %s | %s | | |' "$l" "$(cat "$@" | awk '$4 != "-"' | grep -c .)"
  for c in 5 6 7; do printf ' %s |' "$(mpm $(cat "$@" | awk -v c="$c" '$4 != "-" && $c != "-" {print $c - $4}'))"; done
  printf ' %s |\n' "$(mpm $(cat "$@" | awk '$4 != "-" { m = 0; for (i = 5; i <= 7; i++) { if ($i == "-") { m = "-"; break }
    if ($i - $4 > m) m = $i - $4 } print m }'))"
}
# first LABEL FILE OP: round 1 alone (single values, and partdnsctl's attempts)
arow1() {
  local f=$2 op=$3
  awk -v l="$1" -v op="$op" '$2 == op && $1 == 1 {
    m = 0; for (i = 5; i <= 7; i++) { if ($i == "-") { m = "-"; break } if ($i + 0 > m) m = $i + 0 }
    printf "| %s | 1 | %.0f%s | %s | %s | %s | %s | %s |\n", l, $3, ($8 > 1 ? " (" $8 " tries)" : ""),
      ($4 == "-" ? "–" : sprintf("%.0f", $4)), ($5 == "-" ? "–" : sprintf("%.0f", $5)),
      ($6 == "-" ? "–" : sprintf("%.0f", $6)), ($7 == "-" ? "–" : sprintf("%.0f", $7)),
      (m == "-" ? "–" : sprintf("%.0f", m)) }' "$f"
}

cat <<EOF
### Run of $(date -u '+%Y-%m-%d %H:%M') UTC

- command: \`$CMDLINE\` ($ELAPSED s)
- machine: $(nproc) CPUs, $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1); load average $LOAD_BEFORE before, $LOAD_AFTER after
- partdns ${BTYPE:-?}, $BUILT; etcd $(etcd --version 2>/dev/null | awk '/etcd Version/ {print $3}'), knotd $(knotd -V 2>/dev/null | awk '{print $NF}')
- loopback, harness network $NET.0/24

EOF
if [[ $PARTS == *A* ]]; then
  cat <<EOF
A. Flag propagation: ms from the start of \`partdnsctl domain add|del\` (through node 1's config) to ... , median / p90 / max over the rounds
(node columns: the first poll, every 10 ms, answered the new way; "all three": the last node of each round)

| phase, operation | rounds | partdnsctl returned | etcd watch event | node 1 | node 2 | node 3 | all three |
|---|---|---|---|---|---|---|---|
$(arow "every member up, add" "$IT_TMP/A-all.txt" add)
$(arow "every member up, del" "$IT_TMP/A-all.txt" del)
$(dwrow "every member up, add and del: node − etcd watch event" "$IT_TMP/A-all.txt")
$(arow1 "e$VICTIM_KB killed (a follower), first add, at once" "$IT_TMP/A-kill.txt" add)
$(arow "e$VICTIM_KB killed, add, rounds 2-$ROUNDS" "$IT_TMP/A-kill.txt" add 2)
$(arow "e$VICTIM_KB killed, del" "$IT_TMP/A-kill.txt" del)
$(arow1 "e$VICTIM_KL killed (the leader), first add, at once" "$IT_TMP/A-leader.txt" add)
$(arow "e$VICTIM_KL killed (was leader), add, rounds 2-$LROUNDS" "$IT_TMP/A-leader.txt" add 2)
$(arow "e$VICTIM_KL killed (was leader), del" "$IT_TMP/A-leader.txt" del)

- watches (node → member) and leader: every member up: $MEMBERS_ALL, leader e$LEADER_ALL; before the follower kill: $MEMBERS_KB, leader e$LEADER_KB; after it: $MEMBERS_KA; before the leader kill: $MEMBERS_KL, leader e$LEADER_KL; after it: $MEMBERS_KLA
- for scale (every member up, median / max of 10): an etcd put at the first endpoint through the JSON gateway, a new connection each: $REF_PUT / $REF_PUTMAX ms; \`partdnsctl --version\` (the process alone): $REF_SPAWN / $REF_SPAWNMAX ms; \`partdnsctl domain list\` (a read through etcd): $REF_LIST / $REF_LISTMAX ms
- the first round after each kill, per round: $(awk '$1 == 1' "$IT_TMP/A-kill.txt" | tr '\n' ';') / $(awk '$1 == 1' "$IT_TMP/A-leader.txt" | tr '\n' ';') (round op partdnsctl watch node1 node2 node3 tries)

EOF
fi
if [[ $PARTS == *B* ]]; then
  cat <<EOF
B. GSLB queries per city × name: $NC cities × $M fresh flagged names per pair and round, every city's client asking through both frontends of the pair at once; tier = 2 frontends with edns.tier → 2 tier nodes; plain = 2 frontends resolving themselves

| round | GSLB ECS queries, tier (per city×name) | plain (per city×name) | plain ÷ tier | all GSLB queries (mod-stats) tier / plain | tier queries sent by the frontends | ECS queries sent (partdns stats) tier nodes / plain frontends | GSLB queries without ECS for these names | accuracy, tier | accuracy, plain | answer ms tier, median / p90 | answer ms plain |
|---|---|---|---|---|---|---|---|---|---|---|---|
$(printf '%s\n' "${B_ROWS[@]}")
| **median** | **$(fmt "$(median "${R_TIER[@]}")" %.2f)** | **$(fmt "$(median "${R_PLAIN[@]}")" %.2f)** | **$(fmt "$(median "${R_RATIO[@]}")" %.2f)** | | | | | $(median "${ACC_T[@]}") % | $(median "${ACC_P[@]}") % | $(median "${RTT_T[@]}") | $(median "${RTT_P[@]}") |

- tier failovers (both frontends): $FAILOVERS; flagged resolutions per city on the tier nodes (warm-up included): $(for c in nanjing suzhou wuxi; do printf '%s: %s; ' "$c" "${OWN[$c]}"; done)
$( [ -s "$IT_TMP/b-wrong.txt" ] && printf -- '- answers not steered right: %s\n' "$(wc -l < "$IT_TMP/b-wrong.txt")" )
EOF
fi
true
