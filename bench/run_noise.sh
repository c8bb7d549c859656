#!/usr/bin/env bash
# Where the stated prior of run-to-run noise comes from (issue 46; docs/statistics.md,
# "The stated prior"): how far whole runs of a profile scatter on this 2-core
# machine, each run a new launch of the service, for two services (the demo's
# delay-bound one, 2 ms a request, and a CPU-bound one, 20 us of work a request) in
# two conditions (quiet, and beside the bursting neighbour of bench/neighbour.sh).
# Each row is one `perfgate calibrate --runs RUNS --no-record` of the demo
# profile's load (1 thread x 16 connections, 1 s warm-up, 6 windows of 1 s, the
# first dropped); the table prints each metric's run_noise_pct (the SD of the runs'
# log figures, in %) with the row's steal and the CPU of other processes.
# Runs on demand, alone on the machine (no builds, no tests): it measures.
#
#   PERFGATE=build/perfgate  RUNS=12  SERVICES="delay work"  CONDITIONS="quiet busy"
set -euo pipefail
cd "$(dirname "$0")/.."
PERFGATE="$(realpath "${PERFGATE:-build/perfgate}")"
RUNS="${RUNS:-12}"
SERVICES="${SERVICES:-delay work}"
CONDITIONS="${CONDITIONS:-quiet busy}"
out="$(mktemp -d "${TMPDIR:-/tmp}/perfgate-run-noise.XXXXXX")"
echo "run_noise: $PERFGATE, $RUNS runs a row, results in $out" >&2

# shellcheck source=bench/neighbour.sh
. bench/neighbour.sh
trap stop_neighbour EXIT
# shellcheck source=bench/row_load.sh
. bench/row_load.sh

service_args() {
  case "$1" in
    delay) echo '"--delay", "2ms"' ;;
    work) echo '"--work", "20us"' ;;
  esac
}

profile() {  # SERVICE
  cat <<EOF
{ "name": "run-noise-$1",
  "target": { "url": "http://127.0.0.1:\${PORT}/" },
  "load": { "threads": 1, "connections": 16, "duration": "1s", "warmup": "1s" },
  "repeat": { "count": 6, "discard": 1 },
  "saturation": { "foreign_cpu": "100%", "generator_cpu": "100%", "cpu_pressure": "100%",
                  "steal": "100%", "memory_available": "0%" },
  "thresholds": { "throughput": { "warn": "10%", "fail": "25%" },
                  "latency_p99": { "warn": "25%", "fail": "50%" },
                  "service_cpu_per_request": { "warn": "25%", "fail": "50%" } },
  "service": { "command": ["$PERFGATE", "demo-server", "--port", "\${PORT}", $(service_args "$1")],
               "ready_url": "http://127.0.0.1:\${PORT}/health" } }
EOF
}

metrics="throughput_rps latency_p50_ms latency_p90_ms latency_p99_ms latency_p999_ms service_cpu_us_per_request"
printf '| service | condition | runs |'
for m in $metrics; do printf ' %s |' "$m"; done
printf ' steal | others |\n|---|---|---|'
for _ in $metrics; do printf -- '---|'; done
printf -- '---|---|\n'
port=$((21000 + RANDOM % 2000))
for condition in $CONDITIONS; do
  for service in $SERVICES; do
    profile "$service" >"$out/$service.json"
    [ "$condition" = busy ] && start_neighbour
    read -r t0 s0 < <(cpu_now)
    o0="$(others_now)"
    PORT=$port "$PERFGATE" calibrate "$out/$service.json" --runs "$RUNS" --no-record \
      --json "$out/$service-$condition.json" >"$out/$service-$condition.log" 2>&1 ||
      { tail -5 "$out/$service-$condition.log" >&2; exit 1; }
    load="$(row_load "$t0" "$s0" "$o0")"
    stop_neighbour
    python3 - "$out/$service-$condition.json" "$service" "$condition" "$RUNS" "$load" $metrics <<'EOF'
import json, sys
path, service, condition, runs, load, *metrics = sys.argv[1:]
figures = json.load(open(path))["metrics"]
cells = [f'{figures[m]["run_noise_pct"]:.1f} %' if m in figures else '-' for m in metrics]
steal, others = load.split()
print(f'| {service} | {condition} | {runs} | ' + ' | '.join(cells) + f' | {steal} % | {others} % |')
EOF
    port=$((port + 1))
  done
done
