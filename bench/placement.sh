#!/usr/bin/env bash
# Does pinning take the bimodality out of a CPU-bound service's runs? Runs the
# same short profile against `perfgate demo-server --work` (a new service process
# per run) with `placement: "off"`, pinned to separate CPUs ($PINNED) and pinned
# to one CPU ($SAME), interleaved run by run so that a busy spell of the machine
# falls on all, and prints each run's throughput, the service's CPU per request,
# how often load and service shared a CPU (load_machine.shared_cpu_pct), steal and
# other processes' CPU, and each way's distribution (issue 27: which placement
# makes A/A runs of a co-located service agree?).
#
# Usage: bench/placement.sh          (about 3 minutes with the defaults)
#   PERFGATE=path/to/perfgate   the binary (default build/perfgate)
#   RUNS=12                     runs each way
#   WORK=20us THREADS=1 CONNECTIONS=20 DURATION=1s WARMUP=1s COUNT=3   the profile
#   OUT=dir                     keep every run's JSON here
#   PINNED='{"load": "1", "service": "0"}'   the pinned way's placement
#   SAME_CPU=0                               the one CPU of the "same" way (perfgate
#                                            and its service under taskset; a profile
#                                            may not pin both to one CPU)
#   WAYS="off pinned same"                   which ways, in this order each round
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
SAME_CPU="${SAME_CPU:-0}"
WAYS="${WAYS:-off pinned same}"
for way in $WAYS; do
  case "$way" in
    off) placement='"off"' ;;
    pinned) placement="$PINNED" ;;
    same) placement='"off"' ;;
    *) echo "placement.sh: unknown way $way" >&2; exit 3 ;;
  esac
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
  for way in $WAYS; do
    prefix=()
    [ "$way" = same ] && prefix=(taskset -c "$SAME_CPU")
    PL_PORT="$port" "${prefix[@]}" "$PERFGATE" run "$out/$way.json" --store "$out/store.db" --no-record \
      --json "$out/$way-$i.json" >/dev/null 2>"$out/$way-$i.err"
    printf '%s %2d %-6s: %s\n' "$(date +%T)" "$i" "$way" \
      "$(jq -r '"\(.metrics.throughput_rps.value | round) req/s, \(.metrics.service_cpu_us_per_request.value // "-") us CPU/req, shared CPU \(.load_machine.shared_cpu_pct // "-") %, steal \(.load_machine.steal_max_pct) %, others \(.load_machine.foreign_cpu_max_pct) %"' \
        "$out/$way-$i.json" 2>/dev/null)" >&2
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

OUT_DIR="$out" RUNS="$RUNS" WAYS="$WAYS" python3 - <<'PY'
import json, os, statistics
out, runs = os.environ["OUT_DIR"], int(os.environ["RUNS"])
def describe(name, xs, unit, low_side):
    if not xs:
        return f"  {name}: no runs"
    med = statistics.median(xs)
    far = sum((x < 0.93 * med) if low_side else (x > 1.07 * med) for x in xs)
    cv = statistics.stdev(xs) / statistics.mean(xs) * 100 if len(xs) > 1 else 0
    return (f"  {name}: median {med:.2f} {unit}, min {min(xs):.2f}, max {max(xs):.2f}, CV {cv:.1f} %, "
            f"runs >7 % worse than the median: {far}; sorted: " + " ".join(f"{x:.4g}" for x in sorted(xs)))
for way in os.environ["WAYS"].split():
    rows = []
    for i in range(1, runs + 1):
        try:
            rows.append(json.load(open(f"{out}/{way}-{i}.json")))
        except (OSError, ValueError):
            pass
    def values(get):
        out = []
        for r in rows:
            try:
                v = get(r)
            except (KeyError, TypeError):
                v = None
            if v is not None:
                out.append(float(v))
        return out
    steal = values(lambda r: r["load_machine"]["steal_max_pct"])
    others = values(lambda r: r["load_machine"]["foreign_cpu_max_pct"])
    shared = values(lambda r: r["load_machine"]["shared_cpu_pct"])
    print(f"{way}: n={len(rows)}, steal max {max(steal, default=0):.1f} %, others max "
          f"{max(others, default=0):.1f} %, shared CPU {min(shared, default=0):.0f}-{max(shared, default=0):.0f} %")
    print(describe("throughput", values(lambda r: r["metrics"]["throughput_rps"]["value"]), "req/s", True))
    print(describe("service CPU/request", values(lambda r: r["metrics"]["service_cpu_us_per_request"]["value"]), "us", False))
PY
