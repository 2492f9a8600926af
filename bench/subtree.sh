#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Subtree flags at scale: partdns with SUBTREE_N (100,000) --subtree flags.
# How long the start takes, and how long answers stop while a flag change
# rebuilds the normal pool's stub contexts (every flagged subtree an empty
# zone of its own, one context per resolver thread).
#
# Usage (as root: the private DNS hierarchy binds port 53 on 127.10.N.x):
#   bench/subtree.sh [BUILD_DIR]            BUILD_DIR defaults to build/
#
# What it does, all on loopback:
#   * starts the integration harness's hierarchy and GSLB
#     (tests/integration/lib.sh, sourced) and writes its partdns config
#     (server.threads 2: two colocated listeners, each with its contexts);
#   * imports SUBTREE_N flags "cI.bulkK.example. subtree" (siblings under 97
#     parents) with partdnsctl domain import;
#   * start: from the exec to the first answer (a dig every 50 ms), and to
#     the log's "stub contexts for N flagged subtree(s) ready" (a build
#     before that line existed never logs it: "–");
#   * round 0, the noise floor: the stream below for 6 s, no change;
#   * SUBTREE_ROUNDS rounds: gapprobe (tests/integration/gapprobe.c, built
#     with the tests) sends www.customer.example A, a cached answer, every
#     2 ms from 4 sockets (so both listeners get some); after 1 s,
#     `partdnsctl domain add rI.example --subtree`; the probe stops 1 s after
#     the log says the new contexts are ready (or after SUBTREE_WAIT s), and
#     reports the longest time one of its sockets went without an answer;
#   * prints a markdown table on stdout (progress on stderr).
#
# Knobs: SUBTREE_N [100000]  SUBTREE_ROUNDS [3]  SUBTREE_WAIT [60]
#        SUBTREE_THREADS [2]
#        SUBTREE_EXACT [0; 1: the rounds add exact flags, which change the
#          domain set but not the subtrees: what the set's reload alone costs]
set -u -o pipefail

BENCH_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${1:-$BENCH_SRC/build}
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$PWD/$BUILD_DIR ;; esac
N=${SUBTREE_N:-100000}
ROUNDS=${SUBTREE_ROUNDS:-3}
WAIT=${SUBTREE_WAIT:-60}
THREADS=${SUBTREE_THREADS:-2}
EXACT=${SUBTREE_EXACT:-0}

bmsg() { printf '[bench] %s\n' "$*" >&2; }
bdie() { printf '[bench] ERROR: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || bdie "run as root: the DNS hierarchy binds port 53 on 127.10.N.x"
export PARTDNS_BIN=${PARTDNS_BIN:-$BUILD_DIR/resolver/partdns}
export PARTDNSCTL_BIN=${PARTDNSCTL_BIN:-$BUILD_DIR/tools/ctl/partdnsctl}
GAPPROBE_BIN=${GAPPROBE_BIN:-$BUILD_DIR/tests/integration/gapprobe}
for b in "$PARTDNS_BIN" "$PARTDNSCTL_BIN" "$GAPPROBE_BIN"; do
  [ -x "$b" ] || bdie "no $b: build first (cmake --build $BUILD_DIR)"
done

. "$BENCH_SRC/tests/integration/lib.sh"
harness_init bench_subtree
set +e

bmsg "machine: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p' | head -n 1); load average $(cut -d' ' -f1-3 /proc/loadavg)"
harness_start_all
PD_THREADS=$THREADS pd_write_conf "$IT_TMP/partdns.yaml"
awk -v n="$N" 'BEGIN { for (i = 1; i <= n; i++) printf "c%d.bulk%d.example. subtree\n", i, i % 97 }' \
  > "$IT_TMP/subtrees.txt"
t0=$(date +%s%N)
"$PARTDNSCTL_BIN" -c "$PD_CONF" domain import "$IT_TMP/subtrees.txt" >/dev/null || bdie "domain import failed"
bmsg "imported $N subtree flags in $((($(date +%s%N) - t0) / 1000000)) ms"

ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }
# ready_count COUNT: how many times the log said the stub contexts for COUNT subtrees are ready
ready_count() { grep -c "stub contexts for $1 flagged subtree(s) ready" "$IT_TMP/partdns.log"; }
# wait_ready COUNT SINCE: ms from SINCE (date +%s%N) until the line for COUNT shows, "–" after WAIT s
wait_ready() {
  local i
  for ((i = 0; i < WAIT * 50; i++)); do
    [ "$(ready_count "$1")" -ge 1 ] && { ms_since "$2"; return; }
    sleep 0.02
  done
  echo "–"
}

# ---- start
t0=$(date +%s%N)
"$PARTDNS_BIN" -c "$PD_CONF" >> "$IT_TMP/partdns.log" 2>&1 &
PD_PID=$!
answer_ms=""
for ((i = 0; i < 20 * 600; i++)); do
  partdns_alive || bdie "partdns exited during start-up: $(tail -n 5 "$IT_TMP/partdns.log")"
  if dig +time=1 +tries=1 -b 127.0.0.1 @"$PD_ADDR" -p "$PD_PORT" localhost. A >/dev/null 2>&1; then
    answer_ms=$(ms_since "$t0")
    break
  fi
  sleep 0.05
done
[ -n "$answer_ms" ] || bdie "partdns did not answer within 600 s"
ready_ms=$(wait_ready "$N" "$t0")
bmsg "start: answering after $answer_ms ms, stub contexts ready after $ready_ms ms"
[ "$(dig_a 127.0.9.9 www.customer.example)" = 203.0.113.10 ] || bdie "www.customer.example does not resolve"

# ---- the noise floor: the same stream for 6 s with no change (a busy shared box has gaps of its own)
"$GAPPROBE_BIN" "$PD_ADDR" "$PD_PORT" 127.0.9.9 www.customer.example 2 4 > "$IT_TMP/gap.txt" 2>&1 &
probe=$!
sleep 6
kill -TERM "$probe"
wait "$probe"
read -r _ sent _ answered _ gap < "$IT_TMP/gap.txt"
bmsg "no change: $(cat "$IT_TMP/gap.txt")"
rows=("| 0 | none (6 s) | $gap | $answered / $sent | |")

# ---- rounds
for ((r = 1; r <= ROUNDS; r++)); do
  "$GAPPROBE_BIN" "$PD_ADDR" "$PD_PORT" 127.0.9.9 www.customer.example 2 4 > "$IT_TMP/gap.txt" 2>&1 &
  probe=$!
  sleep 1
  t0=$(date +%s%N)
  if [ "$EXACT" = 1 ]; then
    "$PARTDNSCTL_BIN" -c "$PD_CONF" domain add "r$r.example" >/dev/null || bdie "domain add failed"
    sleep 3 # no new stub contexts to wait for: the store poll and the set's reload
    ready="(exact)"
  else
    "$PARTDNSCTL_BIN" -c "$PD_CONF" domain add "r$r.example" --subtree >/dev/null || bdie "domain add failed"
    ready=$(wait_ready $((N + r)) "$t0")
  fi
  sleep 1 # the ticks take the new contexts; the old ones are deleted
  kill -TERM "$probe"
  wait "$probe"
  read -r _ sent _ answered _ gap < "$IT_TMP/gap.txt"
  bmsg "round $r: $(cat "$IT_TMP/gap.txt"); stub contexts ready after $ready ms"
  rows+=("| $r | domain add r$r.example$([ "$EXACT" = 1 ] || echo " --subtree") | $gap | $answered / $sent | $ready |")
done
partdns_alive || bdie "partdns died"
partdns_stop 60

echo "- command: \`bench/subtree.sh ${1:-build}\` (SUBTREE_N=$N SUBTREE_ROUNDS=$ROUNDS SUBTREE_THREADS=$THREADS SUBTREE_EXACT=$EXACT)"
echo "- machine: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p' | head -n 1); load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
echo "- partdns $("$PARTDNS_BIN" -V 2>/dev/null | head -n 1), server.threads $THREADS (colocated)"
echo
echo "| start with $N subtree flags | ms |"
echo "|---|---|"
echo "| exec to the first answer | $answer_ms |"
echo "| exec to the stub contexts ready | $ready_ms |"
echo
echo "| round | change | longest gap between answers (ms) | answered / sent | stub contexts ready after (ms) |"
echo "|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
