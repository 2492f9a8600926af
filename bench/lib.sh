# SPDX-License-Identifier: BSD-3-Clause
# Helpers shared by the benchmarks (sourced): CPU time from /proc, dnsperf's
# statistics, medians and ratios.

CLK_TCK=$(getconf CLK_TCK)
if [ -r /proc/self/schedstat ]; then CPU_SRC=schedstat; else CPU_SRC=stat; fi
# wait_ns PID: time all of PID's threads spent runnable but waiting for a
# CPU (schedstat's second field), in ns; 0 without schedstat.
wait_ns() {
  [ "$CPU_SRC" = schedstat ] || { echo 0; return; }
  local f s=0 a b
  for f in /proc/"$1"/task/*/schedstat; do
    read -r a b _ < "$f" 2>/dev/null && s=$((s + b))
  done
  echo "$s"
}
# cpu_ns PID: CPU time of all of PID's threads, in ns (schedstat: exact);
# falls back to utime+stime of /proc/PID/stat (clock ticks) without schedstat.
cpu_ns() {
  if [ "$CPU_SRC" = schedstat ]; then
    local f s=0 a
    for f in /proc/"$1"/task/*/schedstat; do
      read -r a _ < "$f" 2>/dev/null && s=$((s + a))
    done
    echo "$s"
  else
    local st
    st=$(cat /proc/"$1"/stat) || { echo 0; return; }
    st=${st##*) }
    set -- $st
    echo $(( (${12} + ${13}) * 1000000000 / CLK_TCK ))
  fi
}

# user_ns PID: user-space CPU time of PID (all threads), in ns, from
# /proc/PID/stat's utime (clock ticks: 10 ms steps, read over seconds).
user_ns() {
  local st
  st=$(cat /proc/"$1"/stat) || { echo 0; return; }
  st=${st##*) }
  set -- $st
  echo $(( ${12} * 1000000000 / CLK_TCK ))
}

# dp_field OUT NAME: one number (or text) from dnsperf's statistics.
dp_field() {
  case $2 in
    sent)      printf '%s\n' "$1" | awk '/Queries sent:/ {print $3; exit}' ;;
    completed) printf '%s\n' "$1" | awk '/Queries completed:/ {print $3; exit}' ;;
    lost)      printf '%s\n' "$1" | awk '/Queries lost:/ {print $3; exit}' ;;
    qps)       printf '%s\n' "$1" | awk '/Queries per second:/ {print $4; exit}' ;;
    codes)     printf '%s\n' "$1" | sed -n 's/^ *Response codes: *//p' ;;
    servfail)  printf '%s\n' "$1" | sed -n 's/^ *Response codes: *//p' |
                 awk '{ for (i = 1; i < NF; i++) if ($i == "SERVFAIL") s = $(i + 1) } END {print s + 0}' ;;
    sizes)     printf '%s\n' "$1" | sed -n 's/^ *Average packet size: *//p' ;;
    eof)       printf '%s\n' "$1" | grep -c 'Testing complete (end of file)' ;;
  esac
}

median() { printf '%s\n' "$@" | grep -v '^$' | sort -g | awk '{v[NR] = $1} END {
  if (NR == 0) { print "nan"; exit }
  if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
minimum() { printf '%s\n' "$@" | grep -v '^$' | sort -g | head -n 1; }
maximum() { printf '%s\n' "$@" | grep -v '^$' | sort -g | tail -n 1; }
fmt() { awk -v x="$1" -v f="$2" 'BEGIN {if (x == "nan" || x == "") print "–"; else printf f, x}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b == 0 || a == "" || b == "" || a == "nan" || b == "nan") print "nan"; else printf "%.3f", a / b}'; }

# bench_unbound_conf FILE THREADS [LINE...]: the reference Unbound's config
# (the caller sets UB_DIR, UB_ADDR, PD_PORT and the harness's IT_TMP):
# iterator only, the harness's root hints, partdns' receive buffer; each LINE
# is added to the server: clause.
bench_unbound_conf() {
  local f=$1 n=$2 l
  shift 2
  {
    cat <<EOF
server:
  do-daemonize: no
  chroot: ""
  username: ""
  directory: "$UB_DIR"
  pidfile: "$UB_DIR/unbound.pid"
  logfile: "$UB_DIR/unbound.log"
  use-syslog: no
  verbosity: 0
  interface: $UB_ADDR@$PD_PORT
  port: $PD_PORT
  num-threads: $n
  do-ip6: no
  do-not-query-localhost: no
  local-zone: "test." transparent
  root-hints: "$IT_TMP/root.hints"
  access-control: 127.0.0.0/8 allow
  # partdns runs without a trust anchor: no validator here either
  module-config: "iterator"
  qname-minimisation: no
  # partdns asks for a 4 MiB receive buffer on its UDP listeners: the same here
  so-rcvbuf: 4m
EOF
    for l in "$@"; do printf '  %s\n' "$l"; done
    cat <<EOF
remote-control:
  control-enable: yes
  control-use-cert: no
  control-interface: "$UB_DIR/unbound.ctl"
EOF
  } > "$f"
}
