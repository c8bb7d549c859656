#!/usr/bin/env bash
# How does the baseline store scale? Records one real run of a demo-shaped
# profile (1 thread x 20 connections, 3 x 1 s windows, 250 ms host samples),
# exports it, makes N copies of it that differ only in commit, pipeline,
# branch and date, imports them into a fresh store and reports:
#   bytes a run, `store import` wall time and peak RSS, the wall and CPU
#   (user + sys) times and peak RSS (process start included, median of several
#   calls) of `compare` (which selects the run's baselines), `history --limit 20`
#   and `report --html` (the whole history), the time baseline selection itself
#   takes (select_baseline(), as a `run` calls it before its load), how long
#   `store migrate` takes to bring the same store from schema 8 (before stored
#   figures) to today's, and the host's steal and the CPU of processes outside
#   the bench over the queries (bench/row_load.sh).
#
#   bench/store_scale.sh                      # 10,000 runs
#   bench/store_scale.sh -n 100000            # 100,000 runs
#   bench/store_scale.sh -n 10000 -n 100000   # both, one real run
#   PERFGATE=build/perfgate bench/store_scale.sh
#   RAW_SAMPLES=1 bench/store_scale.sh        # every copy keeps its raw host samples
# Copies that no saturation rule flagged carry the host sampler's per-iteration
# windows but not its raw samples, as `perfgate run` stores such a run.
set -euo pipefail
cd "$(dirname "$0")/.."

# What else the machine did over a row's queries. load_now: "total idle steal"
# jiffies now (/proc/stat's cpu line). count_ours, at the end of each subshell
# that ran queries: its finished children's CPU (user + sys, bash's `times`,
# which counts processes that have exited, where a sum over /proc misses them)
# added to ours.txt (emptied with the first reading). row_share prints
# "steal% others%" since the first reading.
load_now() {
  awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print t, $5 + $6, $9 }' /proc/stat
}
count_ours() {
  times >"$work/times.txt"  # not in a pipe: a subshell there has no children
  tail -1 "$work/times.txt" | awk 'function s(x, a) { sub(/s$/, "", x); split(x, a, "m");
    return a[1] * 60 + a[2] } { printf "%d\n", (s($1) + s($2)) * 100 }' >>"$work/ours.txt"
}
row_share() {
  local t0=$1 i0=$2 s0=$3 t1 i1 s1 ours
  read -r t1 i1 s1 < <(load_now)
  ours=$(awk '{ o += $1 } END { print o + 0 }' "$work/ours.txt")
  awk -v t="$((t1 - t0))" -v i="$((i1 - i0))" -v s="$((s1 - s0))" -v o="$ours" \
    'BEGIN { others = (t - i - s - o) / t * 100; if (others < 0) others = 0;
             printf "%.1f %.1f\n", 100 * s / t, others }'
}

perfgate=${PERFGATE:-build/perfgate}
sizes=()
repeats=5
keep=""
while getopts "n:r:k" flag; do
  case $flag in
    n) sizes+=("$OPTARG") ;;
    r) repeats=$OPTARG ;;
    k) keep=1 ;;
    *) echo "usage: $0 [-n RUNS]... [-r REPEATS] [-k (keep the temp folder)]" >&2; exit 3 ;;
  esac
done
((${#sizes[@]})) || sizes=(10000)
[[ -x $perfgate ]] || { echo "$perfgate: not built (cmake --build build)" >&2; exit 3; }
perfgate=$(realpath "$perfgate")

work=$(mktemp -d /tmp/perfgate-store-scale.XXXXXX)
[[ -n $keep ]] || trap 'rm -rf "$work"' EXIT
port=$((20000 + RANDOM % 20000))

cat >"$work/profile.json" <<EOF
{
  "name": "store-scale",
  "target": { "url": "http://127.0.0.1:$port/", "method": "GET" },
  "load": { "threads": 1, "connections": 20, "duration": "1s", "warmup": "200ms", "rate": 0 },
  "repeat": { "count": 3, "discard": 0 },
  "thresholds": { "throughput": { "warn": "10%", "fail": "25%" },
                  "latency_p99": { "warn": "25%", "fail": "50%" } },
  "saturation": { "interval": "250ms" },
  "service": {
    "command": ["$perfgate", "demo-server", "--port", "$port", "--delay", "2ms"],
    "ready_url": "http://127.0.0.1:$port/health"
  }
}
EOF

echo "== one real run (demo shape) on port $port"
"$perfgate" run "$work/profile.json" --store "$work/one.db" --commit c0 --branch main \
  >"$work/run.log" 2>&1 || true  # a warn or fail verdict is still a run to copy
"$perfgate" store export --store "$work/one.db" -o "$work/one.jsonl"
[[ -s $work/one.jsonl ]] || { cat "$work/run.log"; echo "no run recorded" >&2; exit 3; }

# N copies: 9 in 10 on main, the others on feature branches; one in 50 failed
# and one in 100 saturated (never baselines), so that history and the report have something to show.
make_copies() {
  python3 - "$work/one.jsonl" "$1" <<'PY'
import datetime, json, os, sys
run = json.loads(open(sys.argv[1]).readline())
run.pop("id", None)
raw_samples = run["host_samples"]
start = datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc)
out = sys.stdout
for i in range(int(sys.argv[2])):
    run["ci"]["commit"] = "%040x" % (i + 1)
    run["ci"]["pipeline_id"] = str(100000 + i)
    run["ci"]["branch"] = "main" if i % 10 else "feature-%d" % (i // 10 % 20)
    run["ci"]["baseline_branch"] = "main"
    run["created_at"] = (start + datetime.timedelta(minutes=50 * i)).strftime("%Y-%m-%dT%H:%M:%SZ")
    run["verdict"] = "fail" if i % 50 == 49 else "pass"
    # The real run may have been saturated on a busy machine; copies mostly are not,
    # so that baseline selection has eligible runs to choose from.
    saturated = i % 100 == 99
    run["saturation"] = {"saturated": saturated, "shared": [],
                         "reasons": ["foreign CPU 80% of the host"] if saturated else []}
    # As `perfgate run` stores a run no saturation rule flagged: the sampler's
    # per-iteration windows, not its raw samples (an import keeps what it is given).
    samples = json.loads(raw_samples) if raw_samples else None
    if samples and not saturated and "windows" in samples and os.environ.get("RAW_SAMPLES") != "1":
        samples["samples"] = []
    run["host_samples"] = json.dumps(samples, separators=(",", ":")) if samples else ""
    out.write(json.dumps(run, separators=(",", ":")) + "\n")
PY
}

# Median wall time and median CPU time (user + sys) in ms of a command, process
# start included, and its median peak RSS in MiB, as "WALL CPU MIB": on a shared
# machine the CPU time is the steadier figure.
median_ms() {
  local walls=() cpus=() rss=() mid=$(((repeats + 1) / 2))
  for ((i = 0; i < repeats; ++i)); do
    /usr/bin/time -f "%e %U %S %M" -o "$work/time.txt" "$@" >/dev/null 2>&1 || true
    read -r wall user sys kib < <(tail -1 "$work/time.txt")
    walls+=("$(awk -v w="$wall" 'BEGIN { printf "%d", w * 1000 }')")
    cpus+=("$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%d", (u + s) * 1000 }')")
    rss+=("$(awk -v k="$kib" 'BEGIN { printf "%.1f", k / 1024 }')")
  done
  pick() { printf '%s\n' "$@" | sort -n | sed -n "${mid}p"; }
  count_ours
  echo "$(pick "${walls[@]}") $(pick "${cpus[@]}") $(pick "${rss[@]}")"
}

# Median time select_baseline() took inside `compare` (its debug line): the same
# choice a `run` makes before its load, among the run's many other steps.
select_ms() {
  local took=()
  for ((i = 0; i < repeats; ++i)); do
    took+=("$("$@" --log-level debug 2>&1 >/dev/null | sed -n 's/.*baseline selected in \([0-9.]*\) ms.*/\1/p' | head -1)")
  done
  count_ours
  printf '%s\n' "${took[@]}" | sort -n | sed -n "$(((repeats + 1) / 2))p"
}

rows=()
for n in "${sizes[@]}"; do
  echo "== $n runs"
  make_copies "$n" >"$work/runs.jsonl"
  db="$work/store-$n.db"
  rm -f "$db"*
  /usr/bin/time -v "$perfgate" store import --store "$db" "$work/runs.jsonl" \
    >"$work/import.log" 2>"$work/import.time"
  rss_kib=$(awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}' "$work/import.time")
  wall=$(awk '/Elapsed \(wall clock\)/ {print $NF}' "$work/import.time")
  # Fold the WAL into the file: its size is what a CI cache carries.
  sqlite3 "$db" "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
  bytes=$(stat -c %s "$db")
  last=$("$perfgate" history --store "$db" --limit 1 --json | python3 -c \
    'import json,sys; print(json.load(sys.stdin)[0]["run_id"])')
  : >"$work/ours.txt"
  read -r t0 i0 s0 < <(load_now)
  read -r compare_ms compare_cpu compare_mib < <(median_ms "$perfgate" compare "$last" --store "$db")
  select=$(select_ms "$perfgate" compare "$last" --store "$db")
  read -r history_ms history_cpu history_mib < <(median_ms "$perfgate" history --store "$db" --limit 20)
  read -r report_ms report_cpu report_mib < <(median_ms "$perfgate" report --store "$db" --html "$work/report.html")
  read -r steal others < <(row_share "$t0" "$i0" "$s0")
  report_kib=$(($(stat -c %s "$work/report.html") / 1024))
  # The same store as schema 8 left it (no stored figures), brought up to date:
  # what the first command of a new perfgate does to an old store once.
  migrate_s=-
  if [[ -z ${NO_MIGRATE:-} ]]; then
    cp "$db" "$work/old.db"
    sqlite3 "$work/old.db" "ALTER TABLE runs DROP COLUMN figures; ALTER TABLE runs DROP COLUMN
      shared_cpu_pct; PRAGMA user_version = 8;" >/dev/null
    /usr/bin/time -f "%e" -o "$work/migrate.time" "$perfgate" store migrate --store "$work/old.db" \
      >/dev/null
    migrate_s=$(tail -1 "$work/migrate.time")
    rm -f "$work/old.db"*
  fi
  rows+=("$(printf '| %s | %s | %s | %s / %s MiB | %s / %s ms, %s MiB | %s ms | %s / %s ms, %s MiB | %s / %s ms, %s MiB (%s KiB) | %s s | %s %% | %s %% |' \
    "$n" "$bytes" $((bytes / n)) "$wall" $((rss_kib / 1024)) \
    "$compare_ms" "$compare_cpu" "$compare_mib" "${select:--}" \
    "$history_ms" "$history_cpu" "$history_mib" "$report_ms" "$report_cpu" "$report_mib" \
    "$report_kib" "$migrate_s" "$steal" "$others")")
done

echo
echo "| runs | bytes | B/run | import wall / peak RSS | compare wall / CPU, peak RSS | select | history --limit 20 wall / CPU, peak RSS | report --html wall / CPU, peak RSS | migrate from 8 | steal | others' CPU |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
