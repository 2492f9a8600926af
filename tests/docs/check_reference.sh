#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The configuration reference documents every key the loader knows, and
# nothing the loader does not know, and marks **restart** exactly the keys
# whose schema rows are flagged restart; README.md and docs/ point nowhere
# outside the repository.
#
# usage: check_reference.sh SOURCE_DIR
#
# The key list comes from the schema tables in conf/schema.c (the rows the
# loader walks), and is cross-checked against the keys of the sample
# conf/partdns.yaml, so a change in how schema.c is written that this parse
# no longer follows fails here instead of passing with too few keys.
set -u
src=${1:?usage: check_reference.sh SOURCE_DIR}
schema=$src/conf/schema.c
sample=$src/conf/partdns.yaml
ref=$src/docs/man/partdns.yaml.5.md
fail=0
err() { echo "check_reference: $*" >&2; fail=1; }

for f in "$schema" "$sample" "$ref"; do
	[ -r "$f" ] || { echo "check_reference: cannot read $f" >&2; exit 1; }
done

# Each table of conf/schema.c and where its keys live in the file. A new
# table must be added here: the test fails until it is.
schema_keys=$(awk '
BEGIN {
	prefix["root_items"] = "ROOT"
	prefix["server_items"] = "server."
	prefix["cache_items"] = "cache."
	prefix["resolver_items"] = "resolver."
	prefix["zone_items"] = "resolver.forward_zones[]."
	prefix["edns_items"] = "edns."
	prefix["partitions_items"] = "partitions."
	prefix["include_items"] = "partitions."   # the top of a partitions include file
	prefix["part_items"] = "partitions.list[]."
	prefix["local_items"] = "local_zones[]."
	also["local_items"] = "partitions.list[].local_zones[]."  # the same rows, per partition
	prefix["rpz_items"] = "rpz[]."
	prefix["rpz_tsig_items"] = "rpz[].tsig."
	prefix["store_items"] = "store."
	prefix["etcd_items"] = "store.etcd."
}
/^static const struct sitem [a-z_0-9]+\[\] = \{/ {
	t = $5; sub(/\[\].*/, "", t)
	if (!(t in prefix)) { print "UNKNOWN_TABLE " t; bad = 1 }
	table = t; next
}
table != "" && /^};/ { table = ""; next }
table != "" && /\.name = "/ {
	s = $0; sub(/.*\.name = "/, "", s); sub(/".*/, "", s)
	if (table in prefix) print prefix[table] s
	if (table in also) print also[table] s
	row = (table in prefix) ? prefix[table] s : ""; restart = 0
}
# a row flagged restart (it may span lines: up to its closing "},")
table != "" && row != "" && /\.restart = true/ { restart = 1 }
table != "" && row != "" && /\},[ \t]*(\/\*.*)?$/ {
	if (restart) print "RESTART " row
	row = ""
}
' "$schema")

if grep -q '^UNKNOWN_TABLE' <<<"$schema_keys"; then
	err "conf/schema.c has a table this test does not place: $(grep '^UNKNOWN_TABLE' <<<"$schema_keys" | cut -d' ' -f2 | tr '\n' ' ')(add it to the prefix map in $0)"
fi
roots=$(grep '^ROOT' <<<"$schema_keys" | sed 's/^ROOT//' | sort | tr '\n' ' ')
[ "$roots" = "cache edns local_zones partitions resolver rpz server store " ] ||
	err "the top-level sections of conf/schema.c are '$roots'; update the prefix map in $0"
keys=$(grep -v -e '^ROOT' -e '^UNKNOWN_TABLE' -e '^RESTART' <<<"$schema_keys" | sort -u)
restart_keys=$(grep '^RESTART' <<<"$schema_keys" | sed 's/^RESTART //' | sort -u)
# a floor, as for the keys: the rows flagged restart (the reload's notes) are many
nrestart=$(grep -c . <<<"$restart_keys")
[ "$nrestart" -ge 30 ] || err "found only $nrestart restart rows in conf/schema.c; the parse in $0 no longer follows it"
nkeys=$(wc -l <<<"$keys")
# a floor, so a parse that finds nothing cannot pass
[ "$nkeys" -ge 50 ] || err "found only $nkeys keys in conf/schema.c; the parse in $0 no longer follows it"

# The keys of the sample config, by indentation (comments skipped; list
# items as KEY[]; the free-form names under resolver.options skipped).
sample_keys=$(awk '
/^[ \t]*#/ || /^[ \t]*$/ { next }
{
	line = $0
	match(line, /^ */); ind = RLENGTH; rest = substr(line, ind + 1)
	item = 0
	if (rest ~ /^- /) { item = 1; rest = substr(rest, 3); ind += 2 }
	if (rest !~ /^[a-z_0-9]+:/) next
	key = rest; sub(/:.*/, "", key)
	while (n > 0 && ind_s[n] >= ind) n--
	if (item && n > 0) islist[n] = 1
	path = n > 0 ? path_s[n] (islist[n] ? "[]" : "") "." key : key
	n++; ind_s[n] = ind; path_s[n] = path; islist[n] = 0
	if (n > 1) print path
}
' "$sample" | grep -v '^resolver\.options\.' | sort -u)
[ -n "$sample_keys" ] || err "no keys found in conf/partdns.yaml"
for k in $sample_keys; do
	grep -qxF -- "$k" <<<"$keys" ||
		err "conf/partdns.yaml has key $k, which the parse of conf/schema.c did not find"
done

# Every key is a definition term of the reference: a line "`KEY`".
for k in $keys; do
	grep -qxF -- "\`$k\`" "$ref" || err "docs/man/partdns.yaml.5.md does not document $k (expected a line \`$k\`)"
done
# ... and every term there is a key.
while IFS= read -r term; do
	k=${term#\`}; k=${k%\`}
	grep -qxF -- "$k" <<<"$keys" || err "docs/man/partdns.yaml.5.md documents $k, which conf/schema.c does not have"
done < <(grep -E '^`[a-z_0-9]+(\[\])?\.[][a-z_0-9.]+`$' "$ref")  # rpz[].x, local_zones[].x too

# Each key's entry says **restart** exactly when its schema row is flagged
# restart (a reload notes the change); a key under a section whose entry says
# it for every key below (store.etcd) counts as marked, and such a section's
# own entry may say it.
entry() { # the lines of KEY's entry: its term up to the next term or heading
	awk -v t="\`$1\`" '$0 == t { on = 1; next } on && (/^`/ || /^#/) { exit } on' "$ref"
}
for k in $keys; do
	if grep -qxF -- "$k" <<<"$restart_keys"; then
		entry "$k" | grep -qF '**restart**' || entry "${k%.*}" | grep -qF '**restart**' ||
			err "$k is flagged restart in conf/schema.c, but its entry in docs/man/partdns.yaml.5.md does not say **restart**"
	elif entry "$k" | grep -qF '**restart**' &&
		! awk -v p="$k." 'index($0, p) == 1 { f = 1 } END { exit !f }' <<<"$restart_keys"; then
		err "docs/man/partdns.yaml.5.md says $k is **restart**, but its schema row is not flagged restart (a reload would not note it)"
	fi
done

# README.md and docs/ are the project's own: nothing points outside the repository.
hits=$(grep -rnI -e '\.\./shared' -e 'DESIGN\.md' "$src/README.md" "$src/docs" 2>/dev/null)
[ -z "$hits" ] || err "README.md or docs/ refer outside the repository:
$hits"
# Markdown links that climb out of the repository (../ from README, ../../ from docs/x.md, ...)
while IFS= read -r f; do
	rel=${f#"$src"/}
	depth=$(tr -cd '/' <<<"$rel" | wc -c)
	up=""
	for ((i = 0; i <= depth; i++)); do up="$up../"; done
	if grep -nF -- "]($up" "$f" >/dev/null; then
		err "$rel links outside the repository: $(grep -nF -- "]($up" "$f" | head -3)"
	fi
done < <(find "$src/README.md" "$src/docs" -name '*.md')

# The man pages convert (when lowdown is installed): the .TH line names the page and its section.
if command -v lowdown >/dev/null 2>&1; then
	for page in partdns.8 partdnsctl.8 partdns.yaml.5; do
		md=$src/docs/man/$page.md
		[ -r "$md" ] || { err "missing $md"; continue; }
		th=$(lowdown -s -Tman "$md" 2>&1 | grep -m1 '^\.TH')
		[ "$th" != "${th#.TH \"${page%.*}\" \"${page##*.}\"}" ] ||
			err "lowdown -s -Tman $md gives '$th', expected .TH \"${page%.*}\" \"${page##*.}\""
	done
else
	echo "check_reference: lowdown not installed, man page conversion not checked"
fi

[ "$fail" -eq 0 ] && echo "check_reference: $nkeys keys documented in docs/man/partdns.yaml.5.md"
exit "$fail"
