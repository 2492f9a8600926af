#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# server.user and server.control_group: started as root, partdns binds port
# 53, opens the store and the control socket, gives the store and the socket
# to the user, then runs as that user for good (no capabilities, no way back).
# It still resolves, reloads and sees root's partdnsctl changes; the control
# socket admits its group and refuses other users. Started as root without
# server.user it refuses, as it does for a user that does not exist.
. "$(dirname "$0")/lib.sh"
harness_init privs
harness_start_all
pd_require_bins
command -v setpriv >/dev/null || die "setpriv (util-linux) is needed"

# The dropped user reads the config (reload) and the root hints (libunbound
# opens them after the drop): let it through the test directory.
chmod 0755 "$IT_TMP"
run_as() { local u=$1; shift; setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups "$@"; }

# refused: root by accident, or an unknown user
PD_USER='""' pd_write_conf "$IT_TMP/root.yaml"
out=$(timeout 20 "$PARTDNS_BIN" -c "$IT_TMP/root.yaml" 2>&1); st=$?
assert_eq "started as root without server.user: exit status 1" 1 "$st"
assert_contains "... saying why and what to set" "refusing to run as root: set server.user" "$out"
out=$("$PARTDNS_BIN" -t -c "$IT_TMP/root.yaml" 2>&1); st=$?
assert_eq "partdns -t refuses it too" 1 "$st"
# where server.user is written: FILE:LINE:COL of its value
at() { printf '%s:%s:9' "$1" "$(grep -n '^  user:' "$1" | cut -d: -f1)"; }
assert_contains "... naming the file, line and column, and the key" \
  "$(at "$IT_TMP/root.yaml"): error: refusing to run as root" "$out"
assert_contains "... (the key)" "(key 'server.user')" "$out"
PD_USER=no-such-user-xyz pd_write_conf "$IT_TMP/nouser.yaml"
out=$("$PARTDNS_BIN" -t -c "$IT_TMP/nouser.yaml" 2>&1); st=$?
assert_eq "partdns -t: unknown server.user is an error" 1 "$st"
assert_contains "... naming the user, where it is written" \
  "$(at "$IT_TMP/nouser.yaml"): error: server.user: no user 'no-such-user-xyz'" "$out"
PD_USER=nobody pd_write_conf "$IT_TMP/nogroup.yaml"
sed -i '/^server:/a\  control_group: no-such-group-xyz' "$IT_TMP/nogroup.yaml"
out=$("$PARTDNS_BIN" -t -c "$IT_TMP/nogroup.yaml" 2>&1); st=$?
assert_eq "partdns -t: unknown server.control_group is an error" 1 "$st"
assert_contains "... at its line and column, with its key" \
  "$IT_TMP/nogroup.yaml:$(grep -n '^  control_group:' "$IT_TMP/nogroup.yaml" | cut -d: -f1):18: error: server.control_group: no group 'no-such-group-xyz' on this machine (key 'server.control_group')" "$out"

# dropped to nobody; the control socket's group is "daemon"
PD_USER=nobody pd_write_conf "$IT_TMP/partdns.yaml"
sed -i '/^server:/a\  control_group: daemon' "$PD_CONF"
chmod 0644 "$PD_CONF"
assert_contains "partdns -t accepts user nobody" "configuration OK" "$("$PARTDNS_BIN" -t -c "$PD_CONF" 2>&1)"
pdctl domain add video.customer.example >/dev/null

# libunbound reads the root hints only at its first lookup: a file the user
# cannot read must stop the start, not turn every query into SERVFAIL
mode=$(stat -c %a "$IT_TMP/root.hints")
chmod 0600 "$IT_TMP/root.hints"
out=$(timeout 20 "$PARTDNS_BIN" -c "$PD_CONF" 2>&1); st=$?
assert_eq "root hints the user cannot read: the start fails" 1 "$st"
assert_contains "... naming the key, the file and the user" \
  "resolver.root_hints: cannot read $IT_TMP/root.hints: Permission denied (as the user partdns runs as)" "$out"
chmod "$mode" "$IT_TMP/root.hints"
sed "s|^  root_hints: .*|  root_hints: $IT_TMP/missing.hints|" "$PD_CONF" > "$IT_TMP/nohints.yaml"
out=$("$PARTDNS_BIN" -t -c "$IT_TMP/nohints.yaml" 2>&1); st=$?
assert_eq "partdns -t: a missing root hints file is an error" 1 "$st"
assert_contains "... saying which" "resolver.root_hints: cannot read $IT_TMP/missing.hints: No such file" "$out"

partdns_start "$PD_CONF"
assert_contains "the log says which user it runs as" "running as user nobody" "$(cat "$IT_TMP/partdns.log")"
assert_eq "every uid of the process is nobody's (real, effective, saved, fs)" \
  "$(id -u nobody) $(id -u nobody) $(id -u nobody) $(id -u nobody)" \
  "$(awk '/^Uid:/ {print $2, $3, $4, $5}' "/proc/$PD_PID/status")"
assert_eq "every gid is nobody's group" "$(id -g nobody) $(id -g nobody) $(id -g nobody) $(id -g nobody)" \
  "$(awk '/^Gid:/ {print $2, $3, $4, $5}' "/proc/$PD_PID/status")"
assert_eq "no effective capability is left" 0000000000000000 "$(awk '/^CapEff:/ {print $2}' "/proc/$PD_PID/status")"
assert_eq "no supplementary group of root is kept" "$(id -G nobody | tr ' ' '\n' | sort -n | tr '\n' ' ')" \
  "$(awk '/^Groups:/ {for (i = 2; i <= NF; i++) print $i}' "/proc/$PD_PID/status" | sort -n | tr '\n' ' ')"
assert_eq "the store directory is the user's" "nobody" "$(stat -c %U "$IT_TMP/store")"
assert_eq "the store's data file is the user's" "nobody" "$(stat -c %U "$IT_TMP/store/data.mdb")"
assert_eq "the control socket: user nobody, group daemon, mode 0660" "nobody daemon 660" \
  "$(stat -c '%U %G %a' "$IT_TMP/control.sock")"

assert_eq "normal recursion works after the drop" "203.0.113.10" "$(dig_a 127.0.9.9 www.customer.example)"
assert_eq "the EDNS pool works after the drop (nanjing's node)" "203.0.113.1" \
  "$(dig_a 127.0.1.10 video.customer.example)"

# root's partdnsctl on the user's store: the daemon sees the change, the files stay the user's
pdctl domain add shop.customer.example >/dev/null
for ((i = 0; i < 100; i++)); do
  grep -q "store changed" "$IT_TMP/partdns.log" && break
  sleep 0.1
done
assert_contains "the daemon picks up root's domain add" "store changed" "$(cat "$IT_TMP/partdns.log")"
assert_eq "after root's write the data file is still the user's" "nobody" "$(stat -c %U "$IT_TMP/store/data.mdb")"
assert_eq "... and the lock file" "nobody" "$(stat -c %U "$IT_TMP/store/lock.mdb")"

# the control socket: root, the group's members, nobody else
assert_contains "root's partdnsctl stats" "uptime" "$(pdctl stats)"
assert_contains "a member of the control group (user daemon) may use it" "uptime" \
  "$(run_as daemon "$PARTDNSCTL_BIN" -c "$PD_CONF" stats 2>&1)"
out=$(run_as bin "$PARTDNSCTL_BIN" -c "$PD_CONF" stats 2>&1); st=$?
assert_eq "another user (bin) is refused" 1 "$((st != 0))"
assert_contains "... with permission denied" "ermission denied" "$out"

# reload reads the config again as the user
sed -i 's/^  log_level: .*//; /^server:/a\  log_level: debug' "$PD_CONF"
assert_contains "reload after the drop works" "reloaded" "$(pdctl reload 2>&1)"
partdns_alive && ok "the daemon is still running" || fail "the daemon died" "$(tail -n 20 "$IT_TMP/partdns.log")"
partdns_stop
assert_eq "it stops cleanly as the user" 0 "$PD_EXIT_STATUS"
it_done
