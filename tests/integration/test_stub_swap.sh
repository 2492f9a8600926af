#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A change of --subtree flags with 20,000 of them flagged: the normal pool's
# stub contexts (every flagged subtree an empty zone) are made by its
# builder thread, not in the listeners' loops, so cached answers keep
# flowing while they are made and swapped in (no gap over 1 s, generous
# for a loaded CI box; before, each listener made its own in its tick and
# stopped answering for seconds), and the new set takes effect: a zone
# whose only nameserver lies under the newly flagged subtree needs the
# plain context again (normal.stub_retries). The start does not wait for
# the contexts of a big set either.
. "$(dirname "$0")/lib.sh"

harness_init stub_swap
harness_start_hierarchy
knot_write_conf gslb "$NET.4" cdn.test. viacdn.example. # the CDN's server hosts a customer's zone too
knot_start gslb
pd_require_bins
GAPPROBE_BIN=${GAPPROBE_BIN:-$(dirname "$PARTDNS_BIN")/../tests/integration/gapprobe}
[ -x "$GAPPROBE_BIN" ] || die "gapprobe not built: $GAPPROBE_BIN"
N=${STUB_SWAP_SUBTREES:-20000}
pd_write_conf "$IT_TMP/partdns.yaml"
# siblings under a few parents, as a CDN's customers' zones would be
awk -v n="$N" 'BEGIN { for (i = 1; i <= n; i++) printf "c%d.bulk%d.example. subtree\n", i, i % 97 }' \
  > "$IT_TMP/subtrees.txt"
pdctl domain import "$IT_TMP/subtrees.txt" >/dev/null
stats() { "$PARTDNSCTL_BIN" -c "$PD_CONF" stats | awk -v k="$1" '$1 == k {print $2}'; }
# stub_ready COUNT: the log says the stub contexts for COUNT subtrees are ready (polled up to 60 s, STUB_SWAP_WAIT)
stub_ready() { it_poll "${STUB_SWAP_WAIT:-$((60 * ${PARTDNS_TIME_SCALE:-1}))}" 1 sh -c "grep -c 'stub contexts for $1 flagged subtree(s) ready' '$IT_TMP/partdns.log'"; }

t0=$(date +%s%N)
partdns_start "$PD_CONF"
start_ms=$((($(date +%s%N) - t0) / 1000000))
log "answering $start_ms ms after the start with $N subtree flags"
assert_lt "the start does not wait for the stub contexts of $N subtrees (ms)" 10000 "$start_ms"
stub_ready "$N" || fail "stub contexts for $N subtrees made" "$(tail -n 5 "$IT_TMP/partdns.log")"
ok "stub contexts for $N subtrees made"

assert_eq "a cached name (warm-up)" "203.0.113.10" "$(dig_a 127.0.9.9 www.customer.example)"
"$GAPPROBE_BIN" "$PD_ADDR" "$PD_PORT" 127.0.9.9 www.customer.example 2 4 > "$IT_TMP/gap.txt" 2>&1 &
probe=$!
sleep 0.5
pdctl domain add cdn.test --subtree >/dev/null
stub_ready $((N + 1)) || fail "stub contexts for $((N + 1)) subtrees made" "$(tail -n 5 "$IT_TMP/partdns.log")"
sleep 0.5 # the ticks take them, and the old ones go to the builder to be deleted
kill -TERM "$probe"
wait "$probe"
read -r _ sent _ answered _ gap < "$IT_TMP/gap.txt"
log "gapprobe: $(cat "$IT_TMP/gap.txt")"
assert_le "answers kept flowing while the stub contexts were swapped (longest gap, ms)" 1000 "${gap%.*}"
assert_lt "... and nearly all were answered ($answered of $sent)" $((sent / 100 + 5)) $((sent - answered))

# the new set is in the stub contexts: a zone served only from under cdn.test
# cannot be reached there, and is asked again in the plain context
assert_eq "flag live: nanjing's video.customer.example steered" "203.0.113.1" \
  "$(dig_a 127.0.1.10 video.customer.example)"
assert_eq "nanjing: www.viacdn.example (served by ns.cdn.test) resolves" "203.0.113.70" \
  "$(dig_a 127.0.1.20 www.viacdn.example)"
assert_eq "... asked again in the plain context: the new stub context holds cdn.test" 1 "$(stats normal.stub_retries)"
assert_eq "partdns still running" 1 "$(partdns_alive && echo 1)"
partdns_stop 10
assert_eq "clean exit" 0 "$PD_EXIT_STATUS"
it_done
