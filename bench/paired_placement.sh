#!/usr/bin/env bash
# Does paired mode's pairing hold when the two sides' services are placed
# differently? Runs N paired A/A gates of a CPU-bound demo service (both sides
# the same build) with the two services pinned by their own commands to
# different CPUs ("differ": baseline `taskset -c $BASE_CPU`, candidate
# `taskset -c $CAND_CPU`) and to the same one ("equal": both `taskset -c
# $CAND_CPU`), perfgate's own placement off so that it changes neither. A third
# way ("repinned") is "differ" with the profile's placement naming the CPUs:
# perfgate then pins both services (and their threads) to $CAND_CPU and the load
# to $LOAD_CPU itself, so the sides' placements should be equal again. The ways
# are interleaved gate by gate, so that a busy spell of the machine falls on all.
# Prints, per way, every gate's verdict and throughput change, and the spread of
# the pair-by-pair throughput ratios (candidate / baseline) over all its gates.
#
# Usage: bench/paired_placement.sh          (about 4 minutes with the defaults)
#   PERFGATE=path/to/perfgate   the binary (default build/perfgate)
#   GATES=6                     paired gates each way
#   WORK=20us THREADS=1 CONNECTIONS=20 DURATION=500ms COUNT=9 DISCARD=1   the profile
#   BASE_CPU=1 CAND_CPU=0 LOAD_CPU=1                                      the CPUs
#   WAYS="differ equal repinned"
#   OUT=dir                     keep every gate's JSON, log and store here
set -uo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
PERFGATE="${PERFGATE:-$root/build/perfgate}"
GATES="${GATES:-6}"
WORK="${WORK:-20us}"
THREADS="${THREADS:-1}"
CONNECTIONS="${CONNECTIONS:-20}"
DURATION="${DURATION:-500ms}"
COUNT="${COUNT:-9}"
DISCARD="${DISCARD:-1}"
BASE_CPU="${BASE_CPU:-1}"
CAND_CPU="${CAND_CPU:-0}"
LOAD_CPU="${LOAD_CPU:-1}"
WAYS="${WAYS:-differ equal repinned}"
[ -x "$PERFGATE" ] || { echo "paired_placement.sh: no perfgate binary at $PERFGATE" >&2; exit 3; }
command -v jq >/dev/null || { echo "paired_placement.sh: jq is needed" >&2; exit 3; }
command -v taskset >/dev/null || { echo "paired_placement.sh: taskset is needed" >&2; exit 3; }
PERFGATE="$(cd "$(dirname "$PERFGATE")" && pwd)/$(basename "$PERFGATE")"
out="${OUT:-$(mktemp -d /tmp/paired_placement.XXXXXX)}"
mkdir -p "$out"
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

service() {  # service CPU, port variable
  printf '{ "command": ["taskset", "-c", "%s", "${PERFGATE}", "demo-server", "--port", "${%s}", "--work", "%s"], "ready_url": "http://127.0.0.1:${%s}/health" }' \
    "$1" "$2" "$WORK" "$2"
}

for way in $WAYS; do
  base_cpu="$BASE_CPU" placement='"off"'
  [ "$way" = equal ] && base_cpu="$CAND_CPU"
  [ "$way" = repinned ] && placement="{ \"load\": \"$LOAD_CPU\", \"service\": \"$CAND_CPU\" }"
  cat >"$out/$way.json" <<JSON
{
  "name": "paired-placement-$way",
  "target": { "url": "http://127.0.0.1:\${PP_CAND_PORT}/" },
  "load": { "threads": $THREADS, "connections": $CONNECTIONS, "duration": "$DURATION", "warmup": "500ms" },
  "repeat": { "count": $COUNT, "discard": $DISCARD },
  "service": $(service "$CAND_CPU" PP_CAND_PORT),
  "paired": { "baseline": { "origin": "http://127.0.0.1:\${PP_BASE_PORT}", "commit": "same",
                            "service": $(service "$base_cpu" PP_BASE_PORT) },
              "leg_warmup": "100ms" },
  "placement": $placement
}
JSON
done

echo "paired_placement: $GATES gates each way ($WAYS), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), results in $out" >&2
for i in $(seq 1 "$GATES"); do
  for way in $WAYS; do
    PP_CAND_PORT="$(free_port)" PP_BASE_PORT="$(free_port)" "$PERFGATE" run "$out/$way.json" \
      --store "$out/$way.db" --json "$out/$way-$i.json" >"$out/$way-$i.out" 2>"$out/$way-$i.err"
    code=$?
    printf '%s %2d %-8s exit %d, throughput %s %%, placement %s\n' "$(date +%T)" "$i" "$way" \
      "$code" "$(jq -r '.metrics.throughput_rps.change_pct // "?" | if type == "number" then (. * 10 | round / 10) else . end' "$out/$way-$i.json" 2>/dev/null)" \
      "$(jq -r '.host.placement // "off"' "$out/$way-$i.json" 2>/dev/null)" >&2
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

OUT_DIR="$out" GATES="$GATES" WAYS="$WAYS" python3 - <<'PY'
import json, os, sqlite3, statistics
out, gates = os.environ["OUT_DIR"], int(os.environ["GATES"])
for way in os.environ["WAYS"].split():
    verdicts, changes = [], []
    for i in range(1, gates + 1):
        try:
            r = json.load(open(f"{out}/{way}-{i}.json"))
        except (OSError, ValueError):
            verdicts.append("none")
            continue
        verdicts.append(r.get("verdict", "none"))
        c = r.get("metrics", {}).get("throughput_rps", {}).get("change_pct")
        if c is not None:
            changes.append(c)
    ratios = []
    try:
        db = sqlite3.connect(f"file:{out}/{way}.db?mode=ro", uri=True)
        rate = """SELECT r.pair, i.idx, i.responses * 1e9 / i.duration_ns FROM iterations i
                  JOIN runs r ON r.id = i.run_id WHERE r.kind = ? AND i.discarded = 0"""
        base = {(p, k): v for p, k, v in db.execute(rate, ("paired-baseline",))}
        for p, k, v in db.execute(rate, ("paired",)):
            if (p, k) in base and base[(p, k)] > 0:
                ratios.append(v / base[(p, k)])
    except sqlite3.Error:
        pass
    tally = ", ".join(f"{v} {verdicts.count(v)}" for v in ("pass", "warn", "fail", "error", "none")
                      if verdicts.count(v))
    line = f"{way:8}: verdicts {tally}; throughput change per gate: " + \
        " ".join(f"{c:+.1f}" for c in changes)
    if ratios:
        q = statistics.quantiles(ratios, n=20) if len(ratios) > 1 else [ratios[0]] * 19
        line += (f"; {len(ratios)} pair ratios: median {statistics.median(ratios):.3f}, "
                 f"5-95 % {q[0]:.3f}-{q[18]:.3f}, min {min(ratios):.3f}, max {max(ratios):.3f}")
    print(line)
PY
