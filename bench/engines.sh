#!/usr/bin/env bash
# Compares perfgate's engines with wrk, ab -k, h2load and hey against a local
# nginx: requests/s, client CPU-µs per request, peak RSS, each as a ratio to wrk.
# Usage: bench/engines.sh [-d SECONDS] [-r ROUNDS] [-c "50 1000"] [-p PERFGATE]
set -euo pipefail

duration=10
rounds=3
conn_list="50 1000"
perfgate="${PERFGATE:-$(dirname "$0")/../build/perfgate}"
port=18080
client_cpu=0   # every client on this core ...
server_cpu=1   # ... and nginx on the other

while getopts "d:r:c:p:" opt; do
  case "$opt" in
    d) duration="$OPTARG" ;;
    r) rounds="$OPTARG" ;;
    c) conn_list="$OPTARG" ;;
    p) perfgate="$OPTARG" ;;
    *) echo "usage: $0 [-d SECONDS] [-r ROUNDS] [-c \"50 1000\"] [-p PERFGATE]" >&2; exit 3 ;;
  esac
done

die() { echo "engines.sh: $*" >&2; exit 3; }

# Installs a Debian package only when its command is missing.
need() {
  local cmd="$1" pkg="$2"
  command -v "$cmd" >/dev/null && return 0
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  if ! apt-cache show "$pkg" >/dev/null 2>&1; then
    echo "engines.sh: $pkg is not packaged here; skipping $cmd" >&2
    return 1
  fi
  $sudo apt-get install -y -qq "$pkg" >/dev/null || return 1
}

[ -x "$perfgate" ] || die "no perfgate binary at $perfgate (build it, or pass -p)"
need nginx nginx-light || die "nginx is needed"
need wrk wrk || die "wrk is the reference; it is needed"
need /usr/bin/time time || die "/usr/bin/time is needed"
have_ab=1; need ab apache2-utils || have_ab=0
have_h2load=1; need h2load nghttp2-client || have_h2load=0
have_hey=1; need hey hey || have_hey=0

work="$(mktemp -d)"
nginx_pid=""
cleanup() {
  # Only the nginx this script started, by its own pid file.
  if [ -n "$nginx_pid" ]; then kill "$nginx_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

start_nginx() {
  mkdir -p "$work/logs"
  cat >"$work/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/logs/error.log warn;
worker_rlimit_nofile 65536;
events { worker_connections 16384; }
http {
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 300s;
  client_body_temp_path $work/tmp;
  proxy_temp_path $work/tmp;
  fastcgi_temp_path $work/tmp;
  uwsgi_temp_path $work/tmp;
  scgi_temp_path $work/tmp;
  server {
    listen 127.0.0.1:$port;
    location / { return 200 "Hello, world\n"; }
  }
}
CONF
  mkdir -p "$work/tmp"
  taskset -c "$server_cpu" nginx -p "$work" -c "$work/nginx.conf" -e "$work/logs/error.log"
  for _ in $(seq 50); do [ -s "$work/nginx.pid" ] && break; sleep 0.1; done
  nginx_pid="$(cat "$work/nginx.pid")"
  [ -n "$nginx_pid" ] || die "nginx did not start; see $work/logs/error.log"
}

# Requests answered, from each tool's own summary. Plain POSIX awk: Debian's
# default awk is mawk, which has no "\s".
count_requests() {
  local tool="$1" out="$2"
  case "$tool" in
    wrk | perfgate-*) awk '/requests in/ {print $1; exit}' "$out" ;;
    ab) awk '/^Complete requests:/ {c=$3} /^Failed requests:/ {f=$3} END {print c-f}' "$out" ;;
    h2load) awk '/^requests:/ {print $8; exit}' "$out" ;;
    hey) awk '/^[ \t]*\[2[0-9][0-9]\]/ {s+=$2} END {print s+0}' "$out" ;;
  esac
}

# One client run, pinned to the client core, measured by /usr/bin/time:
# prints "tool conns requests rps cpu_us_per_request peak_rss_kib".
run_client() {
  local tool="$1" conns="$2" url="http://127.0.0.1:$port/"
  local out="$work/$tool.out" usage="$work/$tool.time"
  local cmd
  case "$tool" in
    wrk) cmd=(wrk -t1 -c"$conns" -d"${duration}s" "$url") ;;
    perfgate-native) cmd=("$perfgate" bench --engine native -t1 -c"$conns" -d"${duration}s" "$url") ;;
    perfgate-curl) cmd=("$perfgate" bench --engine curl -t1 -c"$conns" -d"${duration}s" "$url") ;;
    ab) cmd=(ab -q -k -c"$conns" -t"$duration" -n100000000 "$url") ;;
    h2load) cmd=(h2load --h1 -t1 -c"$conns" -D"$duration" "$url") ;;
    hey) cmd=(hey -c "$conns" -z "${duration}s" -cpus 1 "$url") ;;
  esac
  /usr/bin/time -f "%e %U %S %M" -o "$usage" taskset -c "$client_cpu" "${cmd[@]}" >"$out" 2>&1 ||
    echo "engines.sh: $tool exited non-zero (see below)" >&2
  local requests elapsed user sys rss
  requests="$(count_requests "$tool" "$out")"
  read -r elapsed user sys rss <"$usage"
  awk -v t="$tool" -v c="$conns" -v n="${requests:-0}" -v e="$elapsed" -v u="$user" -v s="$sys" \
    -v r="$rss" -v d="$duration" 'BEGIN {
      if (n <= 0) { printf "%s %s 0 0 0 %s\n", t, c, r; exit }
      printf "%s %s %d %.0f %.2f %s\n", t, c, n, n / d, (u + s) * 1e6 / n, r }'
}

tools=(wrk perfgate-native perfgate-curl)
[ "$have_ab" = 1 ] && tools+=(ab)
[ "$have_h2load" = 1 ] && tools+=(h2load)
[ "$have_hey" = 1 ] && tools+=(hey)

start_nginx
results="$work/results"
: >"$results"
for conns in $conn_list; do
  for round in $(seq "$rounds"); do
    # Interleaved: each round runs every tool once, so a slow spell of the
    # (shared) machine spreads over all of them rather than hitting one.
    for tool in "${tools[@]}"; do
      echo "round $round/$rounds, $conns connections: $tool" >&2
      run_client "$tool" "$conns" >>"$results"
    done
  done
done

# Medians over the rounds, then each figure as a ratio to wrk's.
python3 - "$results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    tool, conns, n, rps, cpu, rss = line.split()
    r = rows.setdefault((int(conns), tool), [[], [], []])
    r[0].append(float(rps)); r[1].append(float(cpu)); r[2].append(float(rss) / 1024)
print(f"{'conns':>6} {'client':<16} {'req/s':>10} {'x wrk':>6} {'CPU-us/req':>11} {'x wrk':>6} {'peak RSS MiB':>13} {'x wrk':>6}")
for conns in sorted({c for c, _ in rows}):
    wrk = [statistics.median(v) for v in rows.get((conns, "wrk"), [[0], [0], [0]])]
    for (c, tool), vals in rows.items():
        if c != conns: continue
        m = [statistics.median(v) for v in vals]
        ratio = lambda i: f"{m[i] / wrk[i]:6.2f}" if wrk[i] else "     -"
        print(f"{conns:>6} {tool:<16} {m[0]:>10.0f} {ratio(0)} {m[1]:>11.2f} {ratio(1)} {m[2]:>13.1f} {ratio(2)}")
PY
