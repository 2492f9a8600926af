#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Tests of partdnsctl: domain store round trips, partitions, mapping export, control client.
# usage: test_ctl.sh PATH/TO/partdnsctl PATH/TO/fake_control [PATH/TO/partdns] [PART]
# (with partdns: also the daemon's refusal of a missing store directory)
# PART: store (usage, the store, domains, export/import, who/when), rest
# (partitions, mapping, control client, full disk, daemon), or all (the
# default); ctest runs the two halves at once.
set -u

CTL=${1:?usage: test_ctl.sh PATH/TO/partdnsctl PATH/TO/fake_control [PATH/TO/partdns]}
FAKE=${2:?usage: test_ctl.sh PATH/TO/partdnsctl PATH/TO/fake_control [PATH/TO/partdns]}
DAEMON=${3:-}
PART=${4:-all}
part() { [ "$PART" = all ] || [ "$PART" = "$1" ]; }
T=$(mktemp -d "${TMPDIR:-/tmp}/test_ctl.XXXXXX") || exit 1
SERVER_PID=
MOUNTED=
cleanup() {
	if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null; fi
	if [ -n "$MOUNTED" ]; then umount -l "$MOUNTED" 2>/dev/null; fi
	rm -rf "$T"
}
trap cleanup EXIT

FAILS=0
CHECKS=0
# Who the store records as making changes: this user; sudo's word only where a test sets it.
unset SUDO_USER
WHO=$(id -un 2>/dev/null || id -u)
# WHO as an extended regex; TS a time as domain list shows it (UTC).
WHO_RE=$(printf '%s' "$WHO" | sed 's/[][\\.^$*+?(){}|/]/\\&/g')
TS='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z'
fail() {
	echo "FAIL: $*" >&2
	echo "  --- stdout:" >&2; sed 's/^/  | /' "$T/out" >&2
	echo "  --- stderr:" >&2; sed 's/^/  | /' "$T/err" >&2
	FAILS=$((FAILS + 1))
}

# run WANT_EXIT ARGS...: run partdnsctl, keep stdout/stderr in $T/out, $T/err.
LAST=
run() {
	local want=$1
	shift
	LAST="partdnsctl $*"
	CHECKS=$((CHECKS + 1))
	"$CTL" "$@" >"$T/out" 2>"$T/err" </dev/null
	local rc=$?
	[ "$rc" -eq "$want" ] || fail "$LAST: exit $rc, want $want"
}
# As run, with stdin from a file.
run_in() {
	local want=$1 input=$2
	shift 2
	LAST="partdnsctl $* < $input"
	CHECKS=$((CHECKS + 1))
	"$CTL" "$@" >"$T/out" 2>"$T/err" <"$input"
	local rc=$?
	[ "$rc" -eq "$want" ] || fail "$LAST: exit $rc, want $want"
}
out_has() { CHECKS=$((CHECKS + 1)); grep -qF -- "$1" "$T/out" || fail "$LAST: stdout lacks '$1'"; }
out_lacks() { CHECKS=$((CHECKS + 1)); ! grep -qF -- "$1" "$T/out" || fail "$LAST: stdout has '$1'"; }
err_has() { CHECKS=$((CHECKS + 1)); grep -qF -- "$1" "$T/err" || fail "$LAST: stderr lacks '$1'"; }
err_lacks() { CHECKS=$((CHECKS + 1)); ! grep -qF -- "$1" "$T/err" || fail "$LAST: stderr has '$1'"; }
out_empty() { CHECKS=$((CHECKS + 1)); [ ! -s "$T/out" ] || fail "$LAST: stdout not empty"; }
out_lines() {
	CHECKS=$((CHECKS + 1))
	local n
	n=$(grep -vc '^#' "$T/out")
	[ "$n" -eq "$1" ] || fail "$LAST: $n lines on stdout, want $1"
}
# out_line_re REGEX: some stdout line matches the extended regex.
out_line_re() { CHECKS=$((CHECKS + 1)); grep -qE -- "$1" "$T/out" || fail "$LAST: no stdout line matches /$1/"; }

write_conf() { # write_conf FILE POLICY FORWARD UNMATCHED
	cat >"$1" <<EOF
server:
  listen: [ "127.0.0.1@5353" ]
  control: $T/control.sock
  store: $T/store
edns:
  policy: $2
  forward: $3
partitions:
  unmatched: $4
  list:
    - name: nanjing
      label: Nanjing
      country: CN
      region: CN-JS
      city: Nanjing
      mapped: 198.51.100.1
      mapped6: "2001:db8:1::/56"
      prefixes: [ 10.1.0.0/16, 203.0.113.0/25, "2001:db8:100::/40" ]
    - name: suzhou
      label: Suzhou
      country: CN
      region: CN-JS
      city: Suzhou
      mapped: 198.51.100.2
      prefixes: [ 10.2.0.0/16, 192.168.2.0/24 ]
EOF
}
C=$T/partdns.yaml
write_conf "$C" iterate "[]" common
write_conf "$T/fwd.yaml" forward '[ "198.51.100.53" ]' suzhou
write_conf "$T/refuse.yaml" iterate "[]" refuse

if part store; then
# --- usage, version, config errors ---
run 0 --version;               out_has "partdnsctl "
run 0 --help;                  out_has "usage: partdnsctl"; out_has "domain add NAME"
run 0 -c "$C" domain add -h;   out_has "usage: partdnsctl"
run 0 -c "$C" domain --help;   out_has "usage: partdnsctl"
run 0 -V;                      out_has "partdnsctl "
# per command: -h shows that command's lines (and the notes it uses), -V the version
run 0 -c "$C" domain add -h;   out_has "domain import FILE"; out_has "--create   make the store"; out_lacks "mapping export"
run 0 -c "$C" stats --help;    out_has "stats [--json]"; out_lacks "domain add"; out_lacks "--create   make"
run 0 -c "$C" domain list -V;  out_has "partdnsctl "
run 0 -c "$C" status --version; out_has "partdnsctl "
# a usage error shows the command's usage, not the whole list
run 2 -c "$C" cache flush a.example b.example; err_has "cache lookup NAME"; err_lacks "domain add NAME"
run 2 --bogus;                 err_has "unknown option '--bogus'"; err_has "partdnsctl --help"; err_lacks "domain add NAME"
# the config: -c, else $PARTDNS_CONF, else the default, and the message says which
PARTDNS_CONF="$C" run 0 partition list; out_has "nanjing"
PARTDNS_CONF="$T/nope.yaml" run 1 partition list; err_has "cannot load config $T/nope.yaml (from PARTDNS_CONF)"
PARTDNS_CONF="$T/nope.yaml" run 0 -c "$C" partition list
run 2;                         err_has "no command given"; err_has "usage: partdnsctl"
run 2 -c "$C" frobnicate;      err_has "unknown command 'frobnicate'"; err_has "usage:"
run 2 -c "$C" domain;          err_has "usage:"
run 2 -c "$C" domain frob;     err_has "unknown subcommand 'frob'"
run 2 -c "$C" domain add;      err_has "expected one NAME"
run 2 -c "$C" domain add a. b. ; err_has "expected one NAME"
run 2 -c "$C" domain add x. --policy bogus; err_has "--policy must be iterate or forward"
run 2 -c "$C" domain add x. --bogus; err_has "unknown option '--bogus'"
run 2 -c "$C" domain add x. --forward; err_has "needs an argument"
run 2 -c "$C" domain list extra; err_has "unexpected argument 'extra'"
run 2 -c "$C" partition lookup; err_has "expected one ADDR"
run 2 -c "$C" mapping export --format xml; err_has "--format must be csv, json or geofeed"
run 2 -c "$C" cache;           err_has "expected flush"
run 2 -x;                      err_has "unknown option '-x'"
run 1 -c "$T/missing.yaml" domain list; err_has "cannot load config $T/missing.yaml"
printf 'server:\n  bogus_key: 1\n' >"$T/bad.yaml"
run 1 -c "$T/bad.yaml" domain list; err_has "$T/bad.yaml:2:"; err_has "cannot load config"

# --- the store directory: never made unless asked (--create) ---
NODIR="store directory $T/store does not exist (set server.create_store: true, or run partdnsctl domain add --create)"
run 1 -c "$C" domain list;     out_empty; err_has "partdnsctl: domain list: $NODIR"
run 1 -c "$C" domain export;   err_has "partdnsctl: domain export: $NODIR"
run 1 -c "$C" domain add Example.COM; err_has "partdnsctl: domain add: $NODIR"
printf 'x.example\n' >"$T/one.txt"
run 1 -c "$C" domain import "$T/one.txt"; err_has "partdnsctl: domain import: $NODIR"
run 1 -c "$C" -s "$T/typo/store" domain add x.example
err_has "store directory $T/typo/store does not exist (set server.create_store: true"
CHECKS=$((CHECKS + 1)); [ ! -e "$T/store" ] && [ ! -e "$T/typo" ] || fail "a store directory was created without --create"
run 0 -c "$C" -s "$T/made/deep" domain add x.example --create; out_has "added x.example."
CHECKS=$((CHECKS + 1)); [ -f "$T/made/deep/data.mdb" ] || fail "domain add --create did not make $T/made/deep"
run 0 -c "$C" -s "$T/made2" domain import --create "$T/one.txt"; out_has "imported 1 domain"
CHECKS=$((CHECKS + 1)); [ -f "$T/made2/data.mdb" ] || fail "domain import --create did not make $T/made2"
run 2 -c "$C" domain list --create; err_has "unknown option '--create'"
run 2 -c "$C" domain del x.example --create; err_has "unknown option '--create'"

# --- domain add / list / del ---
mkdir "$T/store"
run 0 -c "$C" domain list;     out_empty; err_has "does not exist yet"
run 0 -c "$C" domain list --json; out_has "[]"
run 0 -c "$C" domain add Example.COM; out_has "added example.com. policy=iterate"
CHECKS=$((CHECKS + 1)); [ -f "$T/store/data.mdb" ] || fail "no store made in the existing $T/store"
run 0 -c "$C" domain add cdn.example.net --subtree --policy forward --forward 198.51.100.53 --forward 2001:db8::53@5353
out_has "added cdn.example.net. subtree policy=forward forward=198.51.100.53@53,2001:db8::53@5353"
# Options may come before the name, and -c after the command.
run 0 domain add --policy iterate video.example.org -c "$C"; out_has "added video.example.org."
run 0 -c "$C" domain add example.com --subtree; out_has "updated example.com. subtree policy=iterate"
run 0 -c "$C" domain list
out_lines 4
# A heading, then the columns aligned; who added and changed each entry, and when.
out_line_re '^NAME                MATCH    POLICY   FORWARD                             ADDED                 ADDED_BY +CHANGED               CHANGED_BY$'
out_line_re "^example\.com\.        subtree  iterate  -                                   $TS  $WHO_RE +$TS  $WHO_RE\$"
out_line_re "^cdn\.example\.net\.    subtree  forward  198\.51\.100\.53@53,2001:db8::53@5353  $TS  $WHO_RE +$TS  $WHO_RE\$"
out_line_re "^video\.example\.org\.  exact    iterate  -                                   $TS  $WHO_RE +$TS  $WHO_RE\$"
# Sorted by name.
CHECKS=$((CHECKS + 1))
[ "$(tail -n +2 "$T/out" | cut -d' ' -f1 | tr '\n' ' ')" = "cdn.example.net. example.com. video.example.org. " ] ||
	fail "domain list is not in name order"

# The root, and a whole top-level domain, are refused: the EDNS pool would get every name.
ROOTMSG="refusing to flag the root: flagging the root would send every name through the EDNS pool; flag the CDN zones instead"
run 1 -c "$C" domain add .;    err_has "partdnsctl: domain add: $ROOTMSG"
run 1 -c "$C" domain add . --subtree; err_has "$ROOTMSG"
run 1 -c "$C" domain add . --subtree --force; err_has "$ROOTMSG"
run 1 -c "$C" domain add com --subtree
err_has "partdnsctl: domain add: refusing to flag the top-level domain 'com.' with its subtree: every name under it would go through the EDNS pool; flag the CDN zones instead (or add --force)"
run 1 -c "$C" domain add NET. --subtree; err_has "top-level domain 'net.'"
run 0 -c "$C" domain export
CHECKS=$((CHECKS + 1)); ! grep -qE '^(\.|com\.|net\.) ' "$T/out" || fail "a refused name was stored"
run 0 -c "$C" domain add tld --subtree --force; out_has "added tld. subtree policy=iterate"
run 0 -c "$C" domain add tld2;  out_has "added tld2. policy=iterate"   # the name alone is fine
run 0 -c "$C" domain del tld;  run 0 -c "$C" domain del tld2

run 1 -c "$C" domain add 'a..example'; err_has "invalid domain name 'a..example'"
run 1 -c "$C" domain add "$(printf 'x%.0s' $(seq 64)).example"; err_has "invalid domain name"
run 1 -c "$C" domain add '#x.example'; err_has "starts with '#'"
# A wildcard is not a pattern here: refused, with the flag that does what was meant.
run 1 -c "$C" domain add '*.cdn.example'
err_has "'*.cdn.example' is not a wildcard here: a '*' label is taken literally; to flag every name under cdn.example., add cdn.example. --subtree"
run 1 -c "$C" domain add 'a*.example'; err_has "'*' is not a hostname character"
# Adding a name again with another match says so.
run 0 -c "$C" domain add match.example --subtree; out_lacks "note:"
run 0 -c "$C" domain add match.example
out_has "note: match.example. matched the name and every name under it before and now matches the name only (add --subtree to keep the subtree)"
run 0 -c "$C" domain add match.example; out_lacks "note:"
run 0 -c "$C" domain del match.example
run 1 -c "$C" domain add f.example --policy forward
err_has "policy forward needs --forward or edns.forward in the config"
run 1 -c "$C" domain add f.example --forward 198.51.100.53
err_has "--forward needs policy forward, but the policy is iterate (edns.policy of the config)"
run 1 -c "$C" domain add f.example --policy iterate --forward 198.51.100.53; err_has "needs policy forward"
run 1 -c "$C" domain add f.example --policy forward --forward 198.51.100.999; err_has "invalid forward target '198.51.100.999'"
run 1 -c "$C" domain add f.example --policy forward --forward 198.51.100.1@0; err_has "invalid forward target"
run 1 -c "$C" domain add f.example --policy forward --forward 198.51.100.1 --forward 198.51.100.1@53; err_has "given twice"
args=()
for i in $(seq 1 9); do args+=(--forward "198.51.100.$i"); done
run 1 -c "$C" domain add f.example --policy forward "${args[@]}"; err_has "too many --forward targets: 9 (at most 8)"
run 0 -c "$C" domain list;     out_lines 4; out_lacks "f.example"
# With edns.policy forward and edns.forward in the config: the default applies.
run 0 -c "$T/fwd.yaml" domain add f.example; out_has "added f.example. policy=forward"
run 0 -c "$C" domain list;     out_line_re "^f\.example\. +exact +forward +\(edns\.forward\) +$TS +$WHO_RE +$TS +$WHO_RE\$"

run 0 -c "$C" domain list --json
out_has '"name": "cdn.example.net.", "subtree": true, "policy": "forward", "forward": ["198.51.100.53@53", "2001:db8::53@5353"]'
out_has '"name": "f.example.", "subtree": false, "policy": "forward", "forward": []'
out_line_re "\"name\": \"f\.example\.\", .*\"added\": \"$TS\", \"added_by\": \"$WHO_RE\", \"changed\": \"$TS\", \"changed_by\": \"$WHO_RE\"\}"
if command -v python3 >/dev/null 2>&1; then
	CHECKS=$((CHECKS + 1))
	python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d)==4, d; assert d[0]["name"]=="cdn.example.net."' \
		<"$T/out" || fail "domain list --json is not the expected JSON"
fi

run 1 -c "$C" domain del nope.example; err_has "domain 'nope.example.' is not in the store"
run 0 -c "$C" domain del F.Example; out_has "deleted f.example."
run 1 -c "$C" domain del f.example; err_has "domain 'f.example.' is not in the store"
run 0 -c "$C" domain list;     out_lines 4
# del on a store that does not exist must not create it.
run 1 -c "$C" -s "$T/nostore" domain del a.example; err_has "is not in the store"
CHECKS=$((CHECKS + 1)); [ ! -e "$T/nostore" ] || fail "domain del created $T/nostore"

# --- export / import round trip ---
run 0 -c "$C" domain export;   out_lines 3
out_has "cdn.example.net. subtree policy=forward forward=198.51.100.53@53,2001:db8::53@5353"
out_has "example.com. subtree policy=iterate"
cp "$T/out" "$T/export1"
run 0 -c "$C" -s "$T/store2" domain import --create "$T/export1"; out_has "imported 3 domains from $T/export1 (3 added, 0 updated, 0 unchanged)"
run 0 -c "$C" -s "$T/store2" domain export
CHECKS=$((CHECKS + 1))
diff <(grep -v '^#' "$T/export1") <(grep -v '^#' "$T/out") >/dev/null || fail "export of the imported store differs"
run 0 -c "$C" -s "$T/store2" domain import "$T/export1"; out_has "(0 added, 0 updated, 3 unchanged)"

cat >"$T/good.txt" <<'EOF'
# a comment, then a blank line

new.example subtree    # trailing comment
fwd.example policy=forward forward=198.51.100.7,2001:db8::7@5353
 Example.COM  exact
EOF
run 0 -c "$C" domain import "$T/good.txt"; out_has "imported 3 domains from $T/good.txt (2 added, 1 updated, 0 unchanged)"
run 0 -c "$C" domain list
out_line_re '^new\.example\. +subtree +iterate +- '
out_line_re '^fwd\.example\. +exact +forward +198\.51\.100\.7@53,2001:db8::7@5353 '
out_line_re '^example\.com\. +exact +iterate +- '
cp "$T/out" "$T/before_bad"

cat >"$T/bad.txt" <<'EOF'
ok1.example
ok2.example subtree
bad1.example policy=sometimes
ok3.example
bad2.example colour=blue
a..example
ok2.example
iter.example forward=198.51.100.9
EOF
run 1 -c "$C" domain import "$T/bad.txt"
err_has "$T/bad.txt:3: error: unknown policy 'sometimes'"
err_has "$T/bad.txt:5: error: unknown field 'colour=blue'"
err_has "$T/bad.txt:6: error: invalid domain name 'a..example'"
err_has "$T/bad.txt:7: error: domain 'ok2.example.' already given on line 2"
err_has "$T/bad.txt:8: error: forward= needs policy forward"
err_has "5 errors, nothing imported"
run 0 -c "$C" domain list;     out_lacks "ok1.example"
CHECKS=$((CHECKS + 1))
cmp -s "$T/out" "$T/before_bad" || fail "a failed import changed the store"

printf 'ok.example\n.\n' >"$T/root.txt"
run 1 -c "$C" domain import "$T/root.txt"; err_has "$T/root.txt:2: error: $ROOTMSG"; err_has "1 error, nothing imported"
printf 'ok.example\ncom subtree\n' >"$T/tld.txt"
run 1 -c "$C" domain import "$T/tld.txt"
err_has "$T/tld.txt:2: error: refusing to flag the top-level domain 'com.' with its subtree"
run 1 -c "$C" domain import --force "$T/root.txt"; err_has "$ROOTMSG"
run 0 -c "$C" domain list;     out_lacks "ok.example"
run 0 -c "$C" domain import --force "$T/tld.txt"; out_has "imported 2 domains"
run 0 -c "$C" domain del com;  run 0 -c "$C" domain del ok.example

printf 'stdin.example policy=iterate\n' >"$T/stdin.txt"
run_in 0 "$T/stdin.txt" -c "$C" domain import -; out_has "imported 1 domain from <stdin>"
run 1 -c "$C" domain import "$T/none.txt"; err_has "cannot open $T/none.txt"
: >"$T/empty.txt"
run 0 -c "$C" domain import "$T/empty.txt"; out_has "imported 0 domains"

# --- who and when; backup and restore (export | import --replace); the store's schema ---
S=$T/hist
run 0 -c "$C" -s "$S" domain add keep.example --create; out_has "added keep.example."
run 0 -c "$C" -s "$S" domain add gone.example
# Under sudo, sudo's caller is recorded too; a changed entry keeps who added it.
export SUDO_USER=alice
run 0 -c "$C" -s "$S" domain add keep.example --subtree; out_has "updated keep.example. subtree"
unset SUDO_USER
SUDO_WHO="$WHO (sudo alice)"
[ "$WHO" = alice ] && SUDO_WHO=alice
SUDO_RE=$(printf '%s' "$SUDO_WHO" | sed 's/[][\\.^$*+?(){}|/]/\\&/g')
run 0 -c "$C" -s "$S" domain list
out_line_re "^keep\.example\. +subtree +iterate +- +$TS +$WHO_RE +$TS +$SUDO_RE\$"
# The same again is no change: who/when stay.
run 0 -c "$C" -s "$S" domain add keep.example --subtree; out_has "unchanged keep.example. subtree policy=iterate"
run 0 -c "$C" -s "$S" domain list
out_line_re "^keep\.example\. +subtree +iterate +- +$TS +$WHO_RE +$TS +$SUDO_RE\$"
# A hostile SUDO_USER cannot reach the terminal or break the export's quoting.
export SUDO_USER=$'ev"il\033[2J (x)\\'
run 0 -c "$C" -s "$S" domain add evil.example
unset SUDO_USER
run 0 -c "$C" -s "$S" domain list
out_has "$WHO (sudo ev?il?[2J??x??)"
CHECKS=$((CHECKS + 1)); ! grep -q $'\033' "$T/out" || fail "domain list wrote an escape byte"
run 0 -c "$C" -s "$S" domain del evil.example

# export: the import format plus the who/when as a '#@' comment.
run 0 -c "$C" -s "$S" domain export
out_line_re "^# partdnsctl domain export from $S at $TS by $WHO_RE\$"
out_line_re "^keep\.example\. subtree policy=iterate #@ added=$TS added_by=\"$WHO_RE\" changed=$TS changed_by=\"$SUDO_RE\"\$"
out_line_re "^gone\.example\. policy=iterate #@ added=$TS added_by=\"$WHO_RE\" changed=$TS changed_by=\"$WHO_RE\"\$"
cp "$T/out" "$T/backup"
# Then the store drifts: a change, an addition, a deletion.
run 0 -c "$C" -s "$S" domain add keep.example
run 0 -c "$C" -s "$S" domain add extra.example
run 0 -c "$C" -s "$S" domain del gone.example
# Restore: the store is the file's set again, in one step, saying what it did.
run 0 -c "$C" -s "$S" domain import --replace "$T/backup"
out_has "imported 2 domains from $T/backup, replacing the store (1 added, 1 updated, 0 unchanged, 1 removed)"
run 0 -c "$C" -s "$S" domain export
CHECKS=$((CHECKS + 1))
# gone.example. comes back with its history; keep.example. was changed back
# now, by this user, which its 'changed' says.
diff <(grep -v '^#' "$T/backup" | grep -v '^keep\.') <(grep -v '^#' "$T/out" | grep -v '^keep\.') >/dev/null ||
	fail "import --replace did not restore the backup"
out_line_re "^keep\.example\. subtree policy=iterate #@ added=$TS added_by=\"$WHO_RE\" changed=$TS changed_by=\"$WHO_RE\"\$"
out_lacks "extra.example"
# Into a new store, through a pipe: lossless, who/when included.
LAST="partdnsctl domain export | partdnsctl domain import --create --replace -"
CHECKS=$((CHECKS + 1))
"$CTL" -c "$C" -s "$S" domain export | "$CTL" -c "$C" -s "$T/hist2" domain import --create --replace - >"$T/out" 2>"$T/err" ||
	fail "$LAST: failed"
out_has "imported 2 domains from <stdin>, replacing the store (2 added, 0 updated, 0 unchanged, 0 removed)"
run 0 -c "$C" -s "$S" domain export; grep -v '^#' "$T/out" >"$T/a"
run 0 -c "$C" -s "$T/hist2" domain export; grep -v '^#' "$T/out" >"$T/b"
CHECKS=$((CHECKS + 1)); cmp -s "$T/a" "$T/b" || fail "export | import --replace into a new store is not lossless"
# A file of the format before who/when (no '#@') imports as before.
run 0 -c "$C" -s "$T/hist2" domain import --replace "$T/good.txt"
out_has "imported 3 domains from $T/good.txt, replacing the store (3 added, 0 updated, 0 unchanged, 2 removed)"
run 0 -c "$C" -s "$T/hist2" domain list; out_line_re "^new\.example\. +subtree +iterate +- +$TS +$WHO_RE "

# Bad lines: each named file:line, nothing written.
run 0 -c "$C" -s "$S" domain export; cp "$T/out" "$T/before_replace"
cat >"$T/badmeta.txt" <<'END'
ok.example
t1.example #@ added=yesterday
t2.example #@ added_by="a
t3.example #@ colour="blue"
t4.example #@ added=2024-05-01T10:00:00Z added=2024-05-01T10:00:00Z
t5.example #@ changed=2024-02-30T10:00:00Z
#@ added=2024-05-01T10:00:00Z
t6.example #@ changed_by=bob
t7.example #@ added_by="xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
t8.example #@ added=2024-05-01T10:00:00Z changed_by="bob" # a comment too
END
run 1 -c "$C" -s "$S" domain import --replace "$T/badmeta.txt"
err_has "$T/badmeta.txt:2: error: added=yesterday is not a UTC time as 2024-05-01T10:00:00Z"
err_has "$T/badmeta.txt:3: error: added_by= needs a quoted name"
err_has "$T/badmeta.txt:4: error: unknown field 'colour=\"blue\"' in the '#@' who/when comment"
err_has "$T/badmeta.txt:5: error: added= given twice"
err_has "$T/badmeta.txt:6: error: changed=2024-02-30T10:00:00Z is not a UTC time"
err_has "$T/badmeta.txt:7: error: a '#@' who/when comment without a domain before it"
err_has "$T/badmeta.txt:8: error: changed_by= needs a quoted name"
err_has "$T/badmeta.txt:9: error: added_by= must be at most 64 printable ASCII characters"
err_has "$T/badmeta.txt:10: error: unknown field '#'"
err_has "9 errors, nothing imported"
run 0 -c "$C" -s "$S" domain export
CHECKS=$((CHECKS + 1))
diff <(grep -v '^#' "$T/before_replace") <(grep -v '^#' "$T/out") >/dev/null || fail "a refused import --replace changed the store"
# An empty file would empty the store: refused.
run 1 -c "$C" -s "$S" domain import --replace "$T/empty.txt"
err_has "domain import --replace: $T/empty.txt holds no domains; refusing to empty the store"
run 0 -c "$C" -s "$S" domain list; out_has "keep.example."

# A store of schema 1 (partdns before who/when), made with LMDB's own tool:
# read as it is, migrated by the first write; a newer schema is refused.
if command -v mdb_load >/dev/null 2>&1; then
	mkdir "$T/v1"
	printf 'old.example.\n\\01\\01\\00\\00\n' | mdb_load -T -s domains "$T/v1"
	printf 'format\n\\00\\00\\00\\01\nversion\n\\00\\00\\00\\00\\00\\00\\00\\05\n' | mdb_load -T -s meta "$T/v1"
	run 0 -c "$C" -s "$T/v1" domain list
	out_line_re '^old\.example\. +subtree +iterate +- +- +- +- +-$'; err_lacks "migrated"
	run 0 -c "$C" -s "$T/v1" domain export; out_has "old.example. subtree policy=iterate"; out_lacks "#@"
	run 0 -c "$C" -s "$T/v1" domain add new.example
	err_has "partdnsctl: note: store $T/v1: migrated from schema version 1 to 2 (1 record rewritten); an older partdns cannot open it any more"
	run 0 -c "$C" -s "$T/v1" domain list; err_lacks "migrated"
	out_line_re '^old\.example\. +subtree +iterate +- +- +- +- +-$'
	out_line_re "^new\.example\. +exact +iterate +- +$TS +$WHO_RE +$TS +$WHO_RE\$"
	mkdir "$T/v3"
	printf 'format\n\\00\\00\\00\\03\nversion\n\\00\\00\\00\\00\\00\\00\\00\\00\n' | mdb_load -T -s meta "$T/v3"
	for verb in list "add x.example"; do
		# shellcheck disable=SC2086 # the verb's words
		run 1 -c "$C" -s "$T/v3" domain $verb
		err_has "store $T/v3 has schema version 3; this partdns knows schema versions up to 2: upgrade partdns (and partdnsctl) to use this store"
	done
else
	echo "SKIP: schema migration checks: no mdb_load (lmdb-utils)" >&2
fi

fi # part store

if part rest; then
# --- partitions ---
run 0 -c "$C" partition lookup 10.1.2.3
out_has "match      10.1.0.0/16"; out_has "partition  nanjing (id 1)"; out_has "label      Nanjing"
out_has "mapped     198.51.100.1"; out_has "mapped6    2001:db8:1::/56"; out_has "ecs        198.51.100.1/32"
run 0 -c "$C" partition lookup 2001:db8:100::1
out_has "partition  nanjing (id 1)"; out_has "match      2001:db8:100::/40"; out_has "ecs        2001:db8:1::/56"
run 0 -c "$C" partition lookup 203.0.113.5;  out_has "match      203.0.113.0/25"; out_has "nanjing"
run 0 -c "$C" partition lookup 203.0.113.200; out_has "no partition"
run 0 -c "$C" partition lookup 192.168.2.77
out_has "partition  suzhou (id 2)"; out_has "mapped6    -"; out_has "ecs        198.51.100.2/32"
run 0 -c "$C" partition lookup 192.0.2.1
out_has "no partition"; out_has "unmatched  common"; out_lacks "ecs "
run 0 -c "$T/refuse.yaml" partition lookup 192.0.2.1; out_has "no partition"; out_has "REFUSED"
run 0 -c "$T/fwd.yaml" partition lookup 2001:db8:ffff::1
out_has "no partition"; out_has "treated as partition suzhou"; out_has "ecs        198.51.100.2/32"
run 1 -c "$C" partition lookup 10.1.2.300; err_has "'10.1.2.300' is not an IPv4 or IPv6 address"
run 1 -c "$C" partition lookup 10.1.0.0/16; err_has "is not an IPv4 or IPv6 address"

run 0 -c "$C" partition list
out_lines 3
out_line_re '^NAME +ID +LABEL +IPV4 +IPV6 +MAPPED +MAPPED6$'
out_line_re '^nanjing +1 +Nanjing +2 +1 +198\.51\.100\.1 +2001:db8:1::/56$'
out_line_re '^suzhou +2 +Suzhou +2 +0 +198\.51\.100\.2 +-$'

# --- mapping export ---
run 0 -c "$C" mapping export;  out_has "nanjing"; out_has "198.51.100.1"; out_has "2001:db8:1::/56"; out_has "suzhou"
cp "$T/out" "$T/csv"
run 0 -c "$C" mapping export --format csv
CHECKS=$((CHECKS + 1)); cmp -s "$T/out" "$T/csv" || fail "csv is not the default format"
# plain CSV: the header first (no comment line a CSV reader would take for it), the serial a column
CHECKS=$((CHECKS + 1))
[ "$(head -n 1 "$T/out")" = "serial,partition,id,label,mapped,mapped6,country,region,city,isp,asn" ] ||
	fail "the CSV does not start with its header: $(head -n 1 "$T/out")"
CHECKS=$((CHECKS + 1))
[ "$(tail -n +2 "$T/out" | cut -d, -f1 | sort -u | grep -cE '^[0-9a-f]{16}$')" = 1 ] ||
	fail "the CSV rows do not all carry the same 16-hex-digit serial"
run 0 -c "$C" mapping export --format json
out_has '"serial"'; out_has '"name": "nanjing"'; out_has '"mapped": "198.51.100.1"'; out_has '"mapped6": null'
if command -v python3 >/dev/null 2>&1; then
	CHECKS=$((CHECKS + 1))
	python3 -c 'import json,sys; d=json.load(sys.stdin); assert [p["name"] for p in d["partitions"]]==["nanjing","suzhou"]' \
		<"$T/out" || fail "mapping export --format json is not the expected JSON"
fi
run 0 -c "$C" mapping export --format geofeed
err_lacks "no country"   # every partition of this config says where it is
out_has "# partdns geofeed serial="; out_has "198.51.100.1/32,CN,CN-JS,Nanjing,"
out_has "2001:db8:1::/56,CN,CN-JS,Nanjing,"; out_has "198.51.100.2/32,CN,CN-JS,Suzhou,"
out_lacks "10.1.0.0/16"
cat >"$T/noloc.yaml" <<EOF
server:
  store: $T/noloc-store
partitions:
  list:
    - { name: east, mapped: 198.51.100.77, prefixes: [ 198.51.100.64/26 ] }
EOF
run 0 -c "$T/noloc.yaml" mapping export --format geofeed
err_has "partdnsctl: warning: partition 'east' has a mapped address but no country"; out_has "198.51.100.77/32,,,,"
run 0 -c "$T/noloc.yaml" mapping export --format csv; err_lacks "no country"   # only the geofeed is about places

# --- control client ---
run 1 -c "$C" stats
err_has "cannot connect to control socket $T/control.sock: "; err_has "(is partdns running?)"
run 1 -c "$C" reload;          err_has "(is partdns running?)"

start_server() { # start_server MODE
	rm -f "$T/control.sock" "$T/control.sock.ready"
	"$FAKE" "$T/control.sock" "$T/requests" "$1" &
	SERVER_PID=$!
	for _ in $(seq 100); do [ -e "$T/control.sock.ready" ] && return 0; sleep 0.05; done
	echo "FAIL: fake control server did not start" >&2
	FAILS=$((FAILS + 1))
	return 1
}
stop_server() {
	kill "$SERVER_PID" 2>/dev/null
	wait "$SERVER_PID" 2>/dev/null
	SERVER_PID=
}
last_request() { tail -n 1 "$T/requests"; }
req_is() { CHECKS=$((CHECKS + 1)); [ "$(last_request)" = "$1" ] || fail "$LAST: daemon got '$(last_request)', want '$1'"; }

if start_server normal; then
	run 0 -c "$C" stats;           out_has "queries 42"; out_has "partition nanjing queries 40"; req_is "stats"
	run 0 -c "$C" stats --json;    out_has '{"queries": 42}'; req_is "stats json"
	run 0 -c "$C" cache flush;     out_has "flushed 3 entries"; req_is "cache flush"
	run 0 -c "$C" cache flush Example.COM; req_is "cache flush name=example.com."
	run 0 -c "$C" cache flush --partition nanjing; req_is "cache flush partition=nanjing"
	run 0 -c "$C" cache flush www.Example.com --partition suzhou
	req_is "cache flush name=www.example.com. partition=suzhou"
	run 1 -c "$C" cache flush --partition atlantis; err_has "no partition 'atlantis'"
	req_is "cache flush name=www.example.com. partition=suzhou" # nothing was sent
	run 1 -c "$C" cache flush 'a..b'; err_has "invalid domain name 'a..b': label 2 (at character 3) is empty"
	# Names are checked here, with where they go wrong; nothing reaches the daemon.
	run 1 -c "$C" cache flush 'foo$bar.example'
	err_has "cache flush: invalid domain name 'foo\$bar.example': label 1 'foo\$bar' (at character 1) has '\$' (character 4); use letters, digits, '-' and '_'"
	run 1 -c "$C" cache flush 'www.ex*ample.com'; err_has "label 2 'ex*ample' (at character 5) has '*' (character 7)"
	run 1 -c "$C" cache flush "$(printf 'a\tb.example')"; err_has "invalid domain name 'a\x09b.example': label 1 'a\x09b' (at character 1) has '\x09' (character 2)"
	run 1 -c "$C" cache flush -- -x.example; err_has "label 1 '-x' (at character 1) starts with '-'"
	run 1 -c "$C" cache flush "www.$(printf 'x%.0s' $(seq 64)).example"; err_has "label 2 (at character 5) is longer than 63 characters"
	run 1 -c "$C" cache flush '.example'; err_has "label 1 (at character 1) is empty"
	run 1 -c "$C" cache flush 'http://www.example.com/'; err_has "has ':' (character 5)"
	req_is "cache flush name=www.example.com. partition=suzhou" # nothing was sent
	# One NAME at most, options known and with values: usage errors (exit 2).
	run 2 -c "$C" cache flush a.example b.example; err_has "cache flush: expected at most one NAME, got 'b.example' too"; err_has "usage:"
	run 2 -c "$C" cache flush a.example --partition nanjing extra; err_has "got 'extra' too"
	run 2 -c "$C" cache flush --partition; err_has "option '--partition' needs an argument"
	run 2 -c "$C" cache flush --partition=; err_has "cache flush: --partition needs a partition name"
	run 2 -c "$C" cache flush --partition ''; err_has "--partition needs a partition name"
	run 2 -c "$C" cache flush --partition nanjing --partition suzhou; err_has "--partition given twice"
	run 2 -c "$C" cache flush --all; err_has "unknown option '--all'"
	run 2 -c "$C" cache flush -f a.example; err_has "unknown option '-f'"
	req_is "cache flush name=www.example.com. partition=suzhou" # nothing was sent
	run 0 -c "$C" cache flush _dmarc.Example.com.; req_is "cache flush name=_dmarc.example.com."
	run 0 -c "$C" cache flush .;   req_is "cache flush name=."
	# RFC 3597 type numbers: 16 bits, never cut to the low ones (TYPE99999 was sent and read as TYPE34463)
	run 0 -c "$C" cache lookup www.example.com --type TYPE65535; req_is "cache lookup name=www.example.com. type=TYPE65535"
	run 2 -c "$C" cache lookup www.example.com --type TYPE99999
	err_has "cache lookup: --type TYPE99999 is out of range: a type number is 1..65535"
	run 2 -c "$C" query www.example.com --type type65536 --partition nanjing; err_has "--type type65536 is out of range"
	run 2 -c "$C" cache lookup www.example.com --type TYPE0; err_has "out of range"
	req_is "cache lookup name=www.example.com. type=TYPE65535" # nothing was sent
	run 1 -c "$C" reload
	err_has "reload failed: config has errors"; err_has "partdns.yaml:3:5: error: unknown key"; out_empty
	req_is "reload"
	stop_server

	start_server garbage && {
		run 1 -c "$C" stats; err_has "unexpected status line 'HELLO'"
		stop_server
	}
	start_server close && {
		run 1 -c "$C" stats; err_has "closed the connection without a reply"
		stop_server
	}
	start_server hang && {
		start=$(date +%s)
		run 1 -c "$C" stats; err_has "no reply from control socket $T/control.sock within 5000 ms"
		took=$(($(date +%s) - start))
		CHECKS=$((CHECKS + 1))
		[ "$took" -ge 4 ] && [ "$took" -le 30 ] || fail "timeout took ${took}s, want about 5 (at most 30 on a loaded machine)"
		stop_server
	}
fi

# --- a full disk: "no space left", not LMDB's "Input/output error" ---
# A 1 MiB tmpfs (needs mount privileges: skipped without them).
mkdir -p "$T/mnt"
if mount -t tmpfs -o size=1m,mode=0700 tmpfs "$T/mnt" 2>"$T/mount.err"; then
	MOUNTED=$T/mnt
	run 0 -c "$C" -s "$T/mnt/store" domain add first.example --create
	X60=$(printf 'x%.0s' $(seq 60))   # once: a fork per line made this the test's slowest step
	for i in $(seq 2000); do
		printf 'n%04d.%s.example policy=forward forward=2001:db8::1,2001:db8::2,2001:db8::3,2001:db8::4\n' "$i" "$X60"
	done >"$T/many.txt"
	for keep in 0 8; do   # KiB left free: none, and a write cut short
		dd if=/dev/zero of="$T/mnt/fill" bs=4k 2>/dev/null
		[ "$keep" -eq 0 ] || truncate -s -"${keep}K" "$T/mnt/fill"
		run 1 -c "$C" -s "$T/mnt/store" domain import "$T/many.txt"
		err_has "partdnsctl: domain import: cannot store 2000 domains from $T/many.txt: no space left for the store ($T/mnt/store): LMDB map full / disk full; nothing imported"
		run 1 -c "$C" -s "$T/mnt/store" domain add "$(printf 'y%.0s' $(seq 60)).example" --policy forward --forward 2001:db8::1
		run 0 -c "$C" -s "$T/mnt/store" domain list; out_lines 2
		rm -f "$T/mnt/fill"
	done
	run 0 -c "$C" -s "$T/mnt/store" domain import "$T/many.txt"; out_has "imported 2000 domains"
	umount -l "$T/mnt" && MOUNTED=
else
	echo "SKIP: disk-full checks: cannot mount a tmpfs on $T/mnt: $(cat "$T/mount.err")" >&2
fi

# --- the daemon: a missing store directory is refused unless server.create_store ---
if [ -n "$DAEMON" ]; then
	# 192.0.2.1 (TEST-NET-1) is not on this host: a daemon that got past the store
	# stops at its listener, so none keeps running.
	write_daemon_conf() { # FILE STORE CREATE
		printf 'server:\n  listen: [ "192.0.2.1@5353" ]\n  user: root\n  control: %s\n  store: %s\n  create_store: %s\n' \
			"$T/daemon.sock" "$2" "$3" >"$1"
	}
	write_daemon_conf "$T/d1.yaml" "$T/dstore/x" false
	CHECKS=$((CHECKS + 1))
	timeout 20 "$DAEMON" -c "$T/d1.yaml" >"$T/out" 2>"$T/err"
	rc=$?
	LAST="partdns -c d1.yaml"
	[ "$rc" -eq 1 ] || fail "$LAST: exit $rc, want 1"
	err_has "error: store directory $T/dstore/x does not exist (set server.create_store: true, or run partdnsctl domain add --create)"
	CHECKS=$((CHECKS + 1)); [ ! -e "$T/dstore" ] || fail "partdns created $T/dstore without server.create_store"
	write_daemon_conf "$T/d2.yaml" "$T/dstore/x" true
	timeout 20 "$DAEMON" -c "$T/d2.yaml" >"$T/out" 2>"$T/err"
	LAST="partdns -c d2.yaml"
	CHECKS=$((CHECKS + 1)); [ -f "$T/dstore/x/data.mdb" ] || fail "$LAST: server.create_store: true did not make $T/dstore/x"
	err_lacks "does not exist"
fi

fi # part rest
echo "$CHECKS checks, $FAILS failed"
[ "$FAILS" -eq 0 ]
