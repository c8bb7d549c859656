#!/usr/bin/env bash
# How does the baseline store scale? Records one real run of a demo-shaped
# profile (1 thread x 20 connections, 3 x 1 s windows, 250 ms host samples),
# exports it, makes N copies of it that differ only in commit, pipeline,
# branch and date, imports them into a fresh store and reports:
#   bytes a run, `store import` wall time and peak RSS, the wall and CPU
#   (user + sys) times (process start included, median of several calls) of
#   `compare` (which selects the run's baselines), `history --limit 20` and
#   `report --html` (the whole history), and the time baseline selection itself
#   takes (select_baseline(), as a `run` calls it before its load).
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
# start included, as "WALL CPU": on a shared machine the CPU time is the steadier figure.
median_ms() {
  local walls=() cpus=()
  for ((i = 0; i < repeats; ++i)); do
    /usr/bin/time -f "%e %U %S" -o "$work/time.txt" "$@" >/dev/null 2>&1 || true
    read -r wall user sys <"$work/time.txt" < <(tail -1 "$work/time.txt")
    walls+=("$(awk -v w="$wall" 'BEGIN { printf "%d", w * 1000 }')")
    cpus+=("$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%d", (u + s) * 1000 }')")
  done
  local mid=$(((repeats + 1) / 2))
  echo "$(printf '%s\n' "${walls[@]}" | sort -n | sed -n "${mid}p") $(printf '%s\n' "${cpus[@]}" | sort -n | sed -n "${mid}p")"
}

# Median time select_baseline() took inside `compare` (its debug line): the same
# choice a `run` makes before its load, among the run's many other steps.
select_ms() {
  local took=()
  for ((i = 0; i < repeats; ++i)); do
    took+=("$("$@" --log-level debug 2>&1 >/dev/null | sed -n 's/.*baseline selected in \([0-9.]*\) ms.*/\1/p' | head -1)")
  done
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
  read -r compare_ms compare_cpu < <(median_ms "$perfgate" compare "$last" --store "$db")
  select=$(select_ms "$perfgate" compare "$last" --store "$db")
  read -r history_ms history_cpu < <(median_ms "$perfgate" history --store "$db" --limit 20)
  read -r report_ms report_cpu < <(median_ms "$perfgate" report --store "$db" --html "$work/report.html")
  report_kib=$(($(stat -c %s "$work/report.html") / 1024))
  rows+=("$(printf '%8d %9d %6d %8s %6d %11s %7s %11s %11s %7d' "$n" "$bytes" $((bytes / n)) \
    "$wall" $((rss_kib / 1024)) "$compare_ms/$compare_cpu" "${select:--}" \
    "$history_ms/$history_cpu" "$report_ms/$report_cpu" "$report_kib")")
done

echo
printf '%8s %9s %6s %8s %6s %11s %7s %11s %11s %7s\n' runs bytes B/run import import \
  compare select history report report
printf '%8s %9s %6s %8s %6s %11s %7s %11s %11s %7s\n' "" "" "" wall "MiB" "ms wall/cpu" ms \
  "ms wall/cpu" "ms wall/cpu" KiB
printf '%s\n' "${rows[@]}"
