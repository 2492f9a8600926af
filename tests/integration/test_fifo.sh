#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A FIFO where the config names a file (issue 32, defect 5). open() of a
# FIFO without a writer waits for one: a FIFO as the partitions include
# wedged the reload, and with it the control socket, SIGHUP, the store's
# polling and SIGTERM, while /health still said ready. Now every file the
# config names must be a regular file, checked without blocking: a reload
# with a FIFO as the include or a local zone file is refused at once with
# the file named, the running state stays, DNS and the control socket
# answer, a later SIGHUP is refused too and SIGTERM still stops the daemon;
# a policy zone's FIFO keeps the zone's last version; a start with a FIFO
# as the include or the root hints fails at once, saying which file.
. "$(dirname "$0")/lib.sh"
harness_init fifo
harness_write_hints   # no server is asked: every answer below is local data or policy
pd_require_bins
command -v curl >/dev/null || die "curl is needed"
MPORT=$(it_free_port "$PD_ADDR" 9250 9299)

cat > "$IT_TMP/parts.yaml" <<'EOF'
unmatched: common
list:
  - { name: nanjing, label: Nanjing, mapped: 198.51.100.1, prefixes: [ 127.0.1.0/24 ] }
  - { name: suzhou,  label: Suzhou,  mapped: 198.51.100.2, prefixes: [ 127.0.2.0/24 ] }
EOF
cat > "$IT_TMP/lan.zone" <<'EOF'
$TTL 300
@      SOA  ns.lan.test. host.lan.test. 1 3600 600 86400 60
@      NS   ns.lan.test.
www    A    192.0.2.10
EOF
cat > "$IT_TMP/policy.zone" <<'EOF'
$TTL 300
@                        SOA  ns.rpz.test. host.rpz.test. 1 3600 600 86400 60
@                        NS   ns.rpz.test.
blocked.example          CNAME .
EOF
pd_write_conf "$IT_TMP/partdns.yaml"
sed -i '/^partitions:/,$d' "$PD_CONF"
sed -i "s|^  control: .*|&\n  metrics: \"$PD_ADDR@$MPORT\"|" "$PD_CONF"
cat >> "$PD_CONF" <<EOF
partitions:
  include: $IT_TMP/parts.yaml
local_zones:
  - { name: lan.test., type: static, file: $IT_TMP/lan.zone }
rpz:
  - { zone: rpz.test., file: $IT_TMP/policy.zone }
EOF
partdns_start "$PD_CONF"
# partdnsctl reads the config too: while a FIFO stands in for a file, it
# asks the daemon with a copy naming regular files (the same socket)
cp "$IT_TMP/parts.yaml" "$IT_TMP/parts.copy.yaml"
cp "$IT_TMP/lan.zone" "$IT_TMP/lan.copy.zone"
sed -e "s|include: $IT_TMP/parts.yaml|include: $IT_TMP/parts.copy.yaml|" \
  -e "s|file: $IT_TMP/lan.zone|file: $IT_TMP/lan.copy.zone|" "$PD_CONF" > "$IT_TMP/ctl.yaml"
assert_eq "before: local data from the zone file" "192.0.2.10" "$(dig_a 127.0.1.10 www.lan.test)"
assert_eq "before: the policy zone" "NXDOMAIN" "$(dig_rcode 127.0.1.10 blocked.example)"

# ms_since T0: milliseconds since T0 (date +%s%N)
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }
# ctl ARGS...: partdnsctl with a bound (a wedged daemon must fail the test, not hang it); status in CTL_RC
ctl() { CTL_OUT=$(timeout 15 "$PARTDNSCTL_BIN" -c "$IT_TMP/ctl.yaml" "$@" 2>&1); CTL_RC=$?; }
# alive_checks WHAT: the daemon still serves: DNS, the control socket, /health
alive_checks() {
  assert_eq "$1: DNS still answers from the running state" "192.0.2.10" "$(dig_a 127.0.1.10 www.lan.test)"
  ctl status
  assert_eq "$1: partdnsctl status still answers" "0" "$CTL_RC"
  assert_eq "$1: /health answers" "ready" "$(curl -s --max-time 5 "http://$PD_ADDR:$MPORT/health")"
}
# fifo_for FILE: move FILE aside and put a FIFO (nobody writes to it) in its place
fifo_for() { mv "$1" "$1.real" && mkfifo "$1"; }
unfifo() { rm -f "$1" && mv "$1.real" "$1"; }

# ---- the partitions include
fifo_for "$IT_TMP/parts.yaml"
t0=$(date +%s%N)
ctl reload
ms=$(ms_since "$t0")
assert_ne "a reload with a FIFO as the include fails" "0" "$CTL_RC"
assert_contains "... naming the file, the key and why" \
  "cannot read include file '$IT_TMP/parts.yaml': not a regular file" "$CTL_OUT"
assert_contains "... at the key's line" "partitions.include" "$CTL_OUT"
assert_lt "... at once (ms), not when a writer comes" 3000 "$ms"
alive_checks "after the refused reload"
assert_contains "the log says the running configuration stays" "keeping the running configuration" \
  "$(grep 'reload of' "$IT_TMP/partdns.log" | tail -n 1)"

# SIGHUP: the main thread's reload is refused as quickly; it goes on polling and taking signals
n0=$(grep -c 'not a regular file' "$IT_TMP/partdns.log")
kill -HUP "$PD_PID"
it_poll 5 1 bash -c "[ \$(grep -c 'not a regular file' '$IT_TMP/partdns.log') -gt $n0 ] && echo 1" ||
  fail "SIGHUP's reload did not report the FIFO within 5 s"
ok "SIGHUP's reload reports the FIFO"
alive_checks "after SIGHUP"
# the store is still polled by the main thread: a flagged domain shows up
"$PARTDNSCTL_BIN" -c "$IT_TMP/ctl.yaml" domain add video.lan.test >/dev/null
edns_domains() { "$PARTDNSCTL_BIN" -c "$IT_TMP/ctl.yaml" status 2>/dev/null | awk '$1 == "edns_domains" {print $2}'; }
if it_poll 5 1 edns_domains; then ok "store changes still reach the daemon"; else
  fail "store changes still reach the daemon" "status: $(edns_domains)"; fi
unfifo "$IT_TMP/parts.yaml"
ctl reload
assert_eq "with the file back, the reload works" "0" "$CTL_RC"

# ---- a local zone file
fifo_for "$IT_TMP/lan.zone"
t0=$(date +%s%N)
ctl reload
ms=$(ms_since "$t0")
assert_ne "a reload with a FIFO as a local zone file fails" "0" "$CTL_RC"
assert_contains "... naming the file" "cannot read the zone file $IT_TMP/lan.zone: not a regular file" "$CTL_OUT"
assert_lt "... at once (ms)" 3000 "$ms"
alive_checks "after the zone file's refused reload"
unfifo "$IT_TMP/lan.zone"

# ---- the policy zone: as for a file that cannot be read, its last version stays
fifo_for "$IT_TMP/policy.zone"
t0=$(date +%s%N)
ctl reload
ms=$(ms_since "$t0")
assert_lt "a reload with a FIFO as the policy zone's file returns at once (ms)" 3000 "$ms"
assert_contains "... the log names the file" "rpz rpz.test.: cannot read $IT_TMP/policy.zone: not a regular file" \
  "$(cat "$IT_TMP/partdns.log")"
assert_eq "... the zone's last version stays" "NXDOMAIN" "$(dig_rcode 127.0.1.10 blocked.example)"
alive_checks "after the policy zone's FIFO"
unfifo "$IT_TMP/policy.zone"

# ---- SIGTERM still stops it (it used to be ignored while the reload waited)
fifo_for "$IT_TMP/parts.yaml"
kill -HUP "$PD_PID"
partdns_stop 5
assert_eq "SIGTERM after a refused SIGHUP reload: a clean exit" "0" "$PD_EXIT_STATUS"
assert_lt "... at once (ms)" 3000 "$PD_STOP_MS"

# ---- start-up: fails at once, naming the file
t0=$(date +%s%N)
out=$(timeout 15 "$PARTDNS_BIN" -c "$PD_CONF" 2>&1); rc=$?
ms=$(ms_since "$t0")
assert_eq "a start with a FIFO as the include fails (status 1)" "1" "$rc"
assert_contains "... naming the file" "cannot read include file '$IT_TMP/parts.yaml': not a regular file" "$out"
assert_lt "... at once (ms)" 3000 "$ms"
out=$(timeout 15 "$PARTDNS_BIN" -t -c "$PD_CONF" 2>&1); rc=$?
assert_eq "partdns -t says the same (status 1)" "1 yes" \
  "$rc $([[ "$out" == *"not a regular file"* ]] && echo yes)"
unfifo "$IT_TMP/parts.yaml"

fifo_for "$IT_TMP/root.hints"
t0=$(date +%s%N)
out=$(timeout 15 "$PARTDNS_BIN" -t -c "$PD_CONF" 2>&1); rc=$?
ms=$(ms_since "$t0")
assert_ne "partdns -t with a FIFO as the root hints fails" "0" "$rc"
assert_contains "... naming the key and the file" \
  "resolver.root_hints: cannot read $IT_TMP/root.hints: not a regular file" "$out"
assert_lt "... at once (ms)" 3000 "$ms"
out=$(timeout 15 "$PARTDNS_BIN" -c "$PD_CONF" 2>&1); rc=$?
assert_ne "a start with a FIFO as the root hints fails" "0" "$rc"
assert_contains "... naming the key and the file" \
  "resolver.root_hints: cannot read $IT_TMP/root.hints: not a regular file" "$out"
unfifo "$IT_TMP/root.hints"
it_done
