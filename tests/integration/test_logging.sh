#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Logging: server.log syslog sends lines to the system log (received here on
# a test socket standing in for /dev/log, in a mount namespace of partdns'
# own); every failed resolution leaves one line with the name and the reason
# partdns knows, flagged ones with the partition by name; a flood of
# failures is rate-limited, not a line per query; server.log_level filters.
. "$(dirname "$0")/lib.sh"
harness_init logging
harness_start_all
pd_require_bins
command -v socat >/dev/null 2>&1 || skip "socat not installed"
command -v unshare >/dev/null 2>&1 || skip "unshare not installed"
command -v dnsperf >/dev/null 2>&1 || skip "dnsperf not installed"

# The syslog socket: a datagram socket socat reads into a file.
SYSLOG=$IT_TMP/syslog.txt
: > "$SYSLOG"
socat -u "UNIX-RECV:$IT_TMP/log.sock,mode=666" "OPEN:$SYSLOG,creat,append" &
IT_PIDS[socat]=$!
for ((i = 0; i < 100; i++)); do [ -S "$IT_TMP/log.sock" ] && break; sleep 0.05; done
[ -S "$IT_TMP/log.sock" ] || die "socat did not make $IT_TMP/log.sock"

# partdns in its own mount namespace, where /dev is a tmpfs holding the
# device nodes it uses and /dev/log is our socket (glibc's syslog() always
# writes to /dev/log). The wrapper execs all the way, so its pid is partdns'.
cat > "$IT_TMP/partdns-ns.sh" <<EOF
#!/usr/bin/env bash
exec unshare -m --propagation private bash -c '
set -e
mkdir -p "$IT_TMP/olddev"
mount --rbind /dev "$IT_TMP/olddev"
mount -t tmpfs -o mode=755 tmpfs /dev
for n in null zero random urandom; do touch /dev/\$n; mount --bind "$IT_TMP/olddev/\$n" /dev/\$n; done
touch /dev/log
mount --bind "$IT_TMP/log.sock" /dev/log
exec "\$0" "\$@"' "$PARTDNS_BIN" "\$@"
EOF
chmod +x "$IT_TMP/partdns-ns.sh"
REAL_BIN=$PARTDNS_BIN

pd_write_conf "$IT_TMP/partdns.yaml"
sed -i 's/^server:$/server:\n  log: syslog\n  log_level: info/' "$PD_CONF"
grep -q '^  log: syslog' "$PD_CONF" || die "could not set server.log"
PARTDNS_BIN=$IT_TMP/partdns-ns.sh
partdns_start "$PD_CONF"
PARTDNS_BIN=$REAL_BIN

# syslog datagrams carry no newline: one message per line, each starting "<PRI>Mmm dd hh:mm:ss"
lines() { sed -E 's/<[0-9]{1,3}>[A-Z][a-z]{2} /\n&/g' "$SYSLOG" | sed '/^$/d'; }
wait_line() { # wait_line PATTERN: up to 10 s for a syslog line matching PATTERN
  local i
  for ((i = 0; i < 100; i++)); do lines | grep -q -- "$1" && return 0; sleep 0.1; done
  return 1
}
wait_line "ready:" && ok "the start-up lines reach syslog" ||
  fail "no 'ready:' line on the syslog socket" "$(head -c 2000 "$SYSLOG")"
assert_contains "... at priority daemon.info (30)" "<30>" "$(lines | grep 'ready:' | head -n 1)"
assert_contains "... tagged partdns" "partdns[" "$(lines | grep 'ready:' | head -n 1)"
assert_eq "nothing on stderr when logging to syslog" "" "$(grep -v 'warning: mapped address' "$IT_TMP/partdns.log")"

# A failed normal resolution: one line, the name and why (the dead zone's server never answers).
pd_dig 127.0.9.10 "gone-$RANDOM.customer.example" A >/dev/null
name=late-$RANDOM.dead.example
out=$(pd_dig 127.0.9.10 "$name" A)
assert_contains "a normal name under the dead zone: SERVFAIL" "status: SERVFAIL" "$out"
wait_line "resolution of $name" && ok "its failure is logged with the name" ||
  fail "no line for $name" "$(tail -c 2000 "$SYSLOG")"
assert_contains "... and a reason" "failed: " "$(lines | grep "resolution of $name")"

# A flood of failures: rate-limited (10 a second per kind), with a count of what was left out.
awk -v s="$RANDOM" 'BEGIN { srand(s); for (i = 0; i < 2000; i++) printf "f%d-%d.dead.example A\n", i, int(rand() * 1e9) }' \
  > "$IT_TMP/flood.txt"
before=$(lines | grep -c 'resolution of')
dnsperf -s "$PD_ADDR" -p "$PD_PORT" -a 127.0.9.77 -d "$IT_TMP/flood.txt" -n 1 -Q 1000 -t 5 > "$IT_TMP/dnsperf.log" 2>&1
# dnsperf waited 5 s for the last answers (SERVFAIL at the 4 s deadline): every
# failure has happened; one more in a later second makes the count come out
pd_dig 127.0.9.10 "after-$RANDOM.dead.example" A >/dev/null
wait_line "more like it in one second, not logged" || true
after=$(lines | grep -c 'resolution of')
log "failure lines for 2000 failed names: $((after - before))"
assert_lt "a 2000-name failure flood is not a line per query" 400 $((after - before))
assert_lt "... but it is logged" $((after - before)) 0
assert_contains "... and the lines left out are counted" "more like it in one second, not logged" "$(lines)"

# A failed flagged resolution: the partition by name.
changes=$(lines | grep -c 'store changed (version')
pdctl domain add dead.example --subtree
# the store change is picked up within a second, and logged
for ((i = 0; i < 100; i++)); do [ "$(lines | grep -c 'store changed (version')" -gt "$changes" ] && break; sleep 0.1; done
fname=flag-$RANDOM.dead.example
pd_dig 127.0.2.10 "$fname" A >/dev/null
wait_line "EDNS resolution of $fname" && ok "a flagged failure is logged" ||
  fail "no line for $fname" "$(tail -c 2000 "$SYSLOG")"
assert_contains "... with the partition by name" "for partition suzhou failed" "$(lines | grep "EDNS resolution of $fname")"

# server.log_level: warning hides the per-failure lines (reload applies it at once).
sed -i 's/^  log_level: info/  log_level: warning/' "$PD_CONF"
kill -HUP "$PD_PID"
sleep 1
qname=quiet-$RANDOM.dead.example
pd_dig 127.0.9.10 "$qname" A >/dev/null   # returns after the failure (SERVFAIL), when its line would be written
sleep 1
assert_eq "at log_level warning no failure line" "" "$(lines | grep "resolution of $qname")"
partdns_alive && ok "partdns still running" || fail "partdns died"
it_done
