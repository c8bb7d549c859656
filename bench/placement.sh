#!/usr/bin/env bash
# Does pinning take the bimodality out of a CPU-bound service's runs? Runs the
# same short profile against `perfgate demo-server --work` (a new service process
# per run) with `placement: "off"` and pinned ($PINNED), interleaved run by run so
# that a busy spell of the machine falls on both, and prints each run's
# throughput and the distribution of each way.
#
# Usage: bench/placement.sh          (about 3 minutes with the defaults)
#   PERFGATE=path/to/perfgate   the binary (default build/perfgate)
#   RUNS=12                     runs each way
#   WORK=20us THREADS=1 CONNECTIONS=20 DURATION=1s WARMUP=1s COUNT=3   the profile
#   OUT=dir                     keep every run's JSON here
#   PINNED='{"load": "1", "service": "0"}'   the pinned way's placement
set -uo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
PERFGATE="${PERFGATE:-$root/build/perfgate}"
RUNS="${RUNS:-12}"
WORK="${WORK:-20us}"
THREADS="${THREADS:-1}"
CONNECTIONS="${CONNECTIONS:-20}"
DURATION="${DURATION:-1s}"
WARMUP="${WARMUP:-1s}"
COUNT="${COUNT:-3}"
[ -x "$PERFGATE" ] || { echo "placement.sh: no perfgate binary at $PERFGATE" >&2; exit 3; }
command -v jq >/dev/null || { echo "placement.sh: jq is needed" >&2; exit 3; }
PERFGATE="$(cd "$(dirname "$PERFGATE")" && pwd)/$(basename "$PERFGATE")"
out="${OUT:-$(mktemp -d /tmp/placement.XXXXXX)}"
mkdir -p "$out"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"

PINNED="${PINNED:-{\"load\": \"1\", \"service\": \"0\"\}}"
for way in off pinned; do
  if [ "$way" = off ]; then placement='"off"'; else placement="$PINNED"; fi
  cat >"$out/$way.json" <<JSON
{
  "name": "placement-$way",
  "target": { "url": "http://127.0.0.1:\${PL_PORT}/" },
  "load": { "threads": $THREADS, "connections": $CONNECTIONS, "duration": "$DURATION",
            "warmup": "$WARMUP" },
  "repeat": { "count": $COUNT, "discard": 0 },
  "service": { "command": ["\${PERFGATE}", "demo-server", "--port", "\${PL_PORT}", "--work", "$WORK"],
               "ready_url": "http://127.0.0.1:\${PL_PORT}/health" },
  "placement": $placement
}
JSON
done

echo "placement: $RUNS runs each way, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), results in $out" >&2
for i in $(seq 1 "$RUNS"); do
  for way in off pinned; do
    PL_PORT="$port" "$PERFGATE" run "$out/$way.json" --store "$out/store.db" --no-record \
      --json "$out/$way-$i.json" >/dev/null 2>"$out/$way-$i.err"
    printf '%s %2d %s: %s req/s, placement %s\n' "$(date +%T)" "$i" "$way" \
      "$(jq -r '.metrics.throughput_rps.value | round' "$out/$way-$i.json" 2>/dev/null)" \
      "$(jq -r '.host.placement // "off"' "$out/$way-$i.json" 2>/dev/null)" >&2
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

OUT_DIR="$out" RUNS="$RUNS" python3 - <<'PY'
import json, os, statistics
out, runs = os.environ["OUT_DIR"], int(os.environ["RUNS"])
for way in ("off", "pinned"):
    xs = []
    for i in range(1, runs + 1):
        try:
            xs.append(json.load(open(f"{out}/{way}-{i}.json"))["metrics"]["throughput_rps"]["value"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
    if not xs:
        print(f"{way:5}: no runs")
        continue
    med = statistics.median(xs)
    low = sum(x < 0.93 * med for x in xs)
    cv = statistics.stdev(xs) / statistics.mean(xs) * 100 if len(xs) > 1 else 0
    print(f"{way:5}: n={len(xs)} median {med:.0f} req/s, min {min(xs):.0f}, max {max(xs):.0f}, "
          f"CV {cv:.1f} %, runs >7 % below the median: {low}; sorted: "
          + " ".join(f"{x:.0f}" for x in sorted(xs)))
PY
