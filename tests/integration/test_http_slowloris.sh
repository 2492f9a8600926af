#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Slow HTTP clients do not take the daemon's HTTP endpoints away (issue 32,
# defect 7). libmicrohttpd's timeout counts idle time only: 32 connections
# from 4 addresses each sending a header byte a second held every slot of
# server.metrics and server.http for as long as they liked, /health and
# /mapping.csv stopped answering (a /health that does not answer can
# withdraw an anycast node). Now a request's head must be in within 5 s
# of the accept however it trickles in, and one slot is always kept free
# (the longest-waiting head is cut for a newcomer): while slowloris.py
# holds 32 connections to each endpoint, /health and /mapping.csv answer
# within a second or two, every time.
. "$(dirname "$0")/lib.sh"
harness_init http_slowloris
harness_write_hints   # nothing is resolved: the endpoints serve the config's plan and the daemon's state
pd_require_bins
command -v curl >/dev/null || die "curl is needed"
PY=/usr/bin/python3
[ -x "$PY" ] || die "$PY is needed"
HPORT=$(it_free_port "$PD_ADDR" 9300 9349)
MPORT=$(it_free_port "$PD_ADDR" 9350 9399)
pd_write_conf "$IT_TMP/partdns.yaml"
sed -i "s|^  control: .*|&\n  metrics: \"$PD_ADDR@$MPORT\"\n  http: \"$PD_ADDR@$HPORT\"|" "$PD_CONF"
partdns_start "$PD_CONF"

# get URL: "HTTP-STATUS SECONDS" from a client the attack does not use
get() { curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 3 --interface 127.0.1.10 "$1"; }
# fast STATUS-AND-TIME: 1 when it is a 200 within 2 s
fast() { awk '$1 == 200 && $2 < 2 {print 1; exit} {print 0}' <<<"$1"; }
HEALTH=http://$PD_ADDR:$MPORT/health
PLAN=http://$PD_ADDR:$HPORT/mapping.csv
assert_eq "before: /health answers at once" 1 "$(fast "$(get "$HEALTH")")"
assert_eq "before: /mapping.csv answers at once" 1 "$(fast "$(get "$PLAN")")"

# ---- one trickling client: its head has 5 s from the accept, not 5 s between bytes
t0=$(date +%s%N)
out=$("$PY" - "$PD_ADDR" "$MPORT" <<'EOF'
import socket, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
t0 = time.monotonic()
head = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100
for b in head:
    try:
        s.send(bytes([b]))
        s.settimeout(1.0)
        if s.recv(1) == b"":
            break
    except socket.timeout:
        pass
    except OSError:
        break
    if time.monotonic() - t0 > 12:
        break
print("%.1f" % (time.monotonic() - t0))
EOF
)
assert_le "a client sending its head a byte a second is cut off within ~6 s of connecting (s)" 7 "${out%.*}"

# ---- 32 slow connections to each endpoint, from 4 addresses (8 each, the per-address cap)
"$PY" "$IT_LIB_DIR/slowloris.py" --duration 14 --per 8 \
  --source 127.0.9.1 --source 127.0.9.2 --source 127.0.9.3 --source 127.0.9.4 \
  --target "$PD_ADDR:$MPORT" --target "$PD_ADDR:$HPORT" > "$IT_TMP/slowloris.out" 2>&1 &
SLOW_PID=$!
# wait until the attack holds the slots (about 31 of 32: the last is kept free,
# and each newcomer of the attack's cuts one of its older ones)
held() { ss -Htn state established "( sport = :$1 )" 2>/dev/null | grep -c '127\.0\.9\.'; }
it_poll 5 yes bash -c "[ \$(ss -Htn state established '( sport = :$MPORT )' | grep -c '127\.0\.9\.') -ge 28 ] && echo yes" ||
  log "the attack holds only $(held "$MPORT") connections to $MPORT"
assert_le "the attack holds the slots of server.metrics (at least 28 of 32)" "$(held "$MPORT")" 28
bad_h=0 bad_p=0 worst=""
for i in $(seq 1 10); do
  r=$(get "$HEALTH"); [ "$(fast "$r")" = 1 ] || { bad_h=$((bad_h + 1)); worst+="health:$r "; }
  r=$(get "$PLAN"); [ "$(fast "$r")" = 1 ] || { bad_p=$((bad_p + 1)); worst+="plan:$r "; }
  sleep 0.8
done
assert_eq "during the attack (10 s, past every timeout): /health answered within 2 s every time" "0" "$bad_h"
assert_eq "... and /mapping.csv too" "0" "$bad_p"
[ -z "$worst" ] || log "slow or failed: $worst"
wait "$SLOW_PID"
log "$(cat "$IT_TMP/slowloris.out")"
assert_match "the server cut the slow connections off (and they came back)" \
  "^$PD_ADDR:$MPORT opened=[0-9]+ closed_by_server=[1-9][0-9]* " "$(cat "$IT_TMP/slowloris.out")"
assert_eq "after the attack: /health" 1 "$(fast "$(get "$HEALTH")")"
assert_eq "after the attack: DNS still answers" "NOERROR" \
  "$(pd_dig 127.0.1.10 localhost A | sed -n 's/.*status: \([A-Z]*\),.*/\1/p' | head -n 1)"
it_done
