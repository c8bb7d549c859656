#!/usr/bin/env bash
# Measures the gate itself on this machine (issue 5, "bench/gate_accuracy"):
# how often an unchanged service fails (false alarms), and how often a 10 %
# throughput loss and a +20 ms tail on 2 % of requests are caught, with the
# DEFAULT thresholds and baseline settings, in stored-baseline mode and in paired mode.
#
# Usage: bench/gate_accuracy.sh            (about 35 minutes; not for CI)
#   PERFGATE=path/to/perfgate   use this binary (else: build BUILD_DIR, default build/)
#   RUNS=20 SEED=5              judged runs per scenario, baseline runs seeded first
#   SCENARIOS="aa loss tail paa ploss ptail"   which scenarios to run (p...: paired mode)
#   BASE_DELAY=2ms              the unchanged service's delay per request
#   LOSS_DELAY=2.25ms           the slower candidate's delay: -10 % throughput here (16 conns)
#   TAIL_DELAY=20ms TAIL_EVERY=50   the tail added on top of BASE_DELAY (2 %)
#   THREADS=1 CONNECTIONS=16 DURATION=1s WARMUP=1s COUNT=6 DISCARD=1   the profile's shape
#   PAIRED_COUNT=8 LEG_WARMUP=250ms   paired mode's pairs (7 kept: 6 is the least that can fail)
#   OUT=dir                     keep every run's JSON and console output here
#
# Each scenario gets a fresh store: SEED accepted runs of the unchanged service on
# branch main (saturated or failed seed runs are not baselines, so it seeds until
# SEED are accepted, at most 2 x SEED tries), then RUNS judged runs of the candidate
# with --no-record, so that every judged run meets the same baseline, as runs of a
# merge request's branch do (they never become the target branch's baseline).
#
# Paired mode needs no seeding: each judged run starts both services, the unchanged
# one (BASE_DELAY) as paired.baseline and the candidate as the target, and alternates
# PAIRED_COUNT pairs of windows between them. Its A/A runs start two copies of the
# unchanged service.
set -uo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
RUNS="${RUNS:-20}"
SEED="${SEED:-5}"
SCENARIOS="${SCENARIOS:-aa loss tail paa ploss ptail}"
BASE_DELAY="${BASE_DELAY:-2ms}"
LOSS_DELAY="${LOSS_DELAY:-2.25ms}"
TAIL_DELAY="${TAIL_DELAY:-20ms}"
TAIL_EVERY="${TAIL_EVERY:-50}"
THREADS="${THREADS:-1}"
CONNECTIONS="${CONNECTIONS:-16}"
DURATION="${DURATION:-1s}"
WARMUP="${WARMUP:-1s}"
COUNT="${COUNT:-6}"
DISCARD="${DISCARD:-1}"
PAIRED_COUNT="${PAIRED_COUNT:-8}"
LEG_WARMUP="${LEG_WARMUP:-250ms}"

die() { echo "gate_accuracy.sh: $*" >&2; exit 3; }
command -v jq >/dev/null || die "jq is needed (apt-get install jq)"
command -v python3 >/dev/null || die "python3 is needed"

if [ -z "${PERFGATE:-}" ]; then
  build="${BUILD_DIR:-$root/build}"
  [ -f "$build/CMakeCache.txt" ] || cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null ||
    die "cmake configure failed"
  cmake --build "$build" -j2 --target perfgate >/dev/null || die "build failed"
  PERFGATE="$build/perfgate"
fi
[ -x "$PERFGATE" ] || die "no perfgate binary at $PERFGATE"
PERFGATE="$(cd "$(dirname "$PERFGATE")" && pwd)/$(basename "$PERFGATE")"
"$PERFGATE" demo-server --help 2>/dev/null | grep -q -- --tail-delay ||
  die "$PERFGATE has no demo-server --tail-delay: rebuild it"

out="${OUT:-$(mktemp -d /tmp/gate_accuracy.XXXXXX)}"
mkdir -p "$out"
if [ "${SUMMARY_ONLY:-0}" = 1 ]; then :; else
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port="$(free_port)"
base_port="$(free_port)"
while [ "$base_port" = "$port" ]; do base_port="$(free_port)"; done

# Default thresholds and baseline settings: no "thresholds", no "baseline" key.
cat >"$out/profile.json" <<EOF
// Written by bench/gate_accuracy.sh: default thresholds and baseline settings.
{
  "name": "gate-accuracy",
  "target": { "url": "http://127.0.0.1:\${GA_PORT}/", "method": "GET" },
  "load": { "threads": $THREADS, "connections": $CONNECTIONS, "duration": "$DURATION",
            "warmup": "$WARMUP", "rate": 0 },
  "repeat": { "count": $COUNT, "discard": $DISCARD },
  "service": {
    "command": ["\${PERFGATE}", "demo-server", "--port", "\${GA_PORT}", "--delay", "\${GA_DELAY}",
                "--tail-delay", "\${GA_TAIL_DELAY}", "--tail-every", "\${GA_TAIL_EVERY}"],
    "ready_url": "http://127.0.0.1:\${GA_PORT}/health"
  }
}
EOF
GA_PORT="$port" GA_DELAY="$BASE_DELAY" GA_TAIL_DELAY=0s GA_TAIL_EVERY=0 "$PERFGATE" validate "$out/profile.json" >/dev/null || die "the generated profile is invalid"

# Paired mode: the same target and load, the unchanged service beside it.
cat >"$out/paired.json" <<EOF
// Written by bench/gate_accuracy.sh: paired mode, default thresholds and baseline settings.
{
  "name": "gate-accuracy-paired",
  "target": { "url": "http://127.0.0.1:\${GA_PORT}/", "method": "GET" },
  "load": { "threads": $THREADS, "connections": $CONNECTIONS, "duration": "$DURATION",
            "warmup": "$WARMUP", "rate": 0 },
  "repeat": { "count": $PAIRED_COUNT, "discard": $DISCARD },
  "service": {
    "command": ["\${PERFGATE}", "demo-server", "--port", "\${GA_PORT}", "--delay", "\${GA_DELAY}",
                "--tail-delay", "\${GA_TAIL_DELAY}", "--tail-every", "\${GA_TAIL_EVERY}"],
    "ready_url": "http://127.0.0.1:\${GA_PORT}/health"
  },
  "paired": {
    "baseline": {
      "origin": "http://127.0.0.1:\${GA_BASE_PORT}",
      "service": {
        "command": ["\${PERFGATE}", "demo-server", "--port", "\${GA_BASE_PORT}", "--delay", "$BASE_DELAY"],
        "ready_url": "http://127.0.0.1:\${GA_BASE_PORT}/health"
      }
    },
    "leg_warmup": "$LEG_WARMUP"
  }
}
EOF
GA_PORT="$port" GA_BASE_PORT="$base_port" GA_DELAY="$BASE_DELAY" GA_TAIL_DELAY=0s GA_TAIL_EVERY=0 "$PERFGATE" validate "$out/paired.json" >/dev/null || die "the generated paired profile is invalid"
fi

# run_gate NAME STORE DELAY TAIL_DELAY TAIL_EVERY [FLAGS...]: one gate run; prints its exit code.
run_gate() {
  local name="$1" store="$2" delay="$3" tail="$4" every="$5"
  shift 5
  GA_PORT="$port" GA_BASE_PORT="$base_port" GA_DELAY="$delay" GA_TAIL_DELAY="$tail" \
    GA_TAIL_EVERY="$every" "$PERFGATE" run "$out/${PROFILE_FILE:-profile.json}" --store "$store" --json "$out/$name.json" \
    --branch main --commit "$name" "$@" >"$out/$name.out" 2>"$out/$name.err"
  echo $?
}

# scenario NAME DELAY TAIL_DELAY TAIL_EVERY: seed the baseline, then the judged runs.
scenario() {
  local sc="$1" delay="$2" tail="$3" every="$4"
  local store="$out/$sc.db" accepted=0 tries=0 code
  rm -f "$store" "$store"-*
  while [ "$accepted" -lt "$SEED" ] && [ "$tries" -lt $((2 * SEED)) ]; do
    tries=$((tries + 1))
    code="$(run_gate "$sc-seed$tries" "$store" "$BASE_DELAY" 0s 0)"
    local sat="true"
    [ -f "$out/$sc-seed$tries.json" ] && sat="$(jq -r '.saturation.saturated' "$out/$sc-seed$tries.json")"
    if { [ "$code" = 0 ] || [ "$code" = 2 ]; } && [ "$sat" = false ]; then
      accepted=$((accepted + 1))
    fi
    printf '[%s] %-5s seed %2d: exit %s, saturated %s, %s req/s\n' "$(date +%T)" "$sc" "$tries" \
      "$code" "$sat" "$(jq -r '.metrics.throughput_rps.value // "-"' "$out/$sc-seed$tries.json" 2>/dev/null)" >&2
  done
  [ "$accepted" -ge "$SEED" ] || echo "gate_accuracy.sh: $sc: only $accepted of $SEED seed runs accepted" >&2
  echo "$accepted" >"$out/$sc.seeded"
  for i in $(seq 1 "$RUNS"); do
    code="$(run_gate "$sc-run$i" "$store" "$delay" "$tail" "$every" --no-record)"
    echo "$code" >"$out/$sc-run$i.code"
    printf '[%s] %-5s run %2d: exit %s  %s\n' "$(date +%T)" "$sc" "$i" "$code" \
      "$(jq -r '[.metrics.throughput_rps, .metrics.latency_p99_ms] |
                map("\(.change_pct // "-" | if type == "number" then (. * 10 | round / 10 | tostring) + "%" else . end) \(.verdict)") |
                "throughput " + .[0] + ", p99 " + .[1]' "$out/$sc-run$i.json" 2>/dev/null)" >&2
  done
}

# paired_scenario NAME DELAY TAIL_DELAY TAIL_EVERY: RUNS paired runs, nothing to seed.
paired_scenario() {
  local sc="$1" delay="$2" tail="$3" every="$4" code
  local store="$out/$sc.db"
  rm -f "$store" "$store"-*
  echo "-" >"$out/$sc.seeded"
  for i in $(seq 1 "$RUNS"); do
    code="$(PROFILE_FILE=paired.json run_gate "$sc-run$i" "$store" "$delay" "$tail" "$every")"
    echo "$code" >"$out/$sc-run$i.code"
    printf '[%s] %-5s run %2d: exit %s  %s\n' "$(date +%T)" "$sc" "$i" "$code" \
      "$(jq -r '[.metrics.throughput_rps, .metrics.latency_p99_ms] |
                map("\(.change_pct // "-" | if type == "number" then (. * 10 | round / 10 | tostring) + "%" else . end) \(.verdict)") |
                "throughput " + .[0] + ", p99 " + .[1]' "$out/$sc-run$i.json" 2>/dev/null)" >&2
  done
}

echo "gate_accuracy: $PERFGATE, results in $out" >&2
echo "profile: $THREADS thread x $CONNECTIONS connections, warmup $WARMUP, $COUNT x $DURATION (discard $DISCARD), default thresholds and baseline" >&2
case " $SCENARIOS " in *" p"*)
  echo "paired: $PAIRED_COUNT pairs of $DURATION windows (discard $DISCARD), leg warm-up $LEG_WARMUP" >&2 ;;
esac
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
started="$(date -u +%Y-%m-%dT%H:%MZ)"
# SUMMARY_ONLY=1 OUT=dir: print the table of an earlier run again, run nothing.
[ "${SUMMARY_ONLY:-0}" = 1 ] && SCENARIOS_TO_RUN="" || SCENARIOS_TO_RUN="$SCENARIOS"
for sc in $SCENARIOS_TO_RUN; do
  case "$sc" in
    aa) scenario aa "$BASE_DELAY" 0s 0 ;;
    loss) scenario loss "$LOSS_DELAY" 0s 0 ;;
    tail) scenario tail "$BASE_DELAY" "$TAIL_DELAY" "$TAIL_EVERY" ;;
    paa) paired_scenario paa "$BASE_DELAY" 0s 0 ;;
    ploss) paired_scenario ploss "$LOSS_DELAY" 0s 0 ;;
    ptail) paired_scenario ptail "$BASE_DELAY" "$TAIL_DELAY" "$TAIL_EVERY" ;;
    *) die "unknown scenario $sc (aa, loss, tail, paa, ploss, ptail)" ;;
  esac
done
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

OUT_DIR="$out" RUNS="$RUNS" SCENARIOS="$SCENARIOS" python3 - <<'PY'
import json, os, statistics

out, runs, scenarios = os.environ["OUT_DIR"], int(os.environ["RUNS"]), os.environ["SCENARIOS"].split()
# scenario: (description, metric judged, target text, passes(count of fails on the metric, exit-1 count))
spec = {
    "aa": ("A/A, unchanged", "throughput_rps", "exit 1 <= 1 in 20", lambda f, e1: e1 * 20 <= runs),
    "loss": ("-10% throughput", "throughput_rps", "fails >= 19 in 20", lambda f, e1: f * 20 >= 19 * runs),
    "tail": ("+20ms on 2%", "latency_p99_ms", "p99 fails >= 19 in 20", lambda f, e1: f * 20 >= 19 * runs),
    "paa": ("paired A/A", "throughput_rps", "exit 1 = 0 in 20", lambda f, e1: e1 == 0),
    "ploss": ("paired -10% throughput", "throughput_rps", "fails >= 19 in 20", lambda f, e1: f * 20 >= 19 * runs),
    "ptail": ("paired +20ms on 2%", "latency_p99_ms", "p99 fails >= 19 in 20", lambda f, e1: f * 20 >= 19 * runs),
}

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None

def fmt(x, spec="{:+.1f}%"):
    return "-" if x is None else spec.format(x)

rows = []
for sc in scenarios:
    desc, metric, target, ok = spec[sc]
    codes, sat, fails, past, sigpast, nobase, change, pval, base, now = [], 0, 0, 0, 0, 0, [], [], [], []
    for i in range(1, runs + 1):
        code = int(open(f"{out}/{sc}-run{i}.code").read().strip() or 3)
        codes.append(code)
        try:
            r = json.load(open(f"{out}/{sc}-run{i}.json"))
        except (OSError, ValueError):
            continue
        sat += bool(r.get("saturation", {}).get("saturated"))
        m = r["metrics"].get(metric, {})
        fails += m.get("verdict") == "fail"
        c = m.get("change_pct")
        fail_pct = (m.get("thresholds") or {}).get("fail_pct")
        if c is not None and fail_pct is not None:
            worse = -c if metric == "throughput_rps" else c
            past += worse > fail_pct
            sigpast += worse > fail_pct and bool((m.get("test") or {}).get("significant"))
        nobase += m.get("baseline") is None
        change.append(c)
        pval.append((m.get("test") or {}).get("p_value"))
        base.append(m.get("baseline"))
        now.append(m.get("value"))
    e = [codes.count(k) for k in range(4)]
    seeded = open(f"{out}/{sc}.seeded").read().strip()
    result = "PASS" if ok(fails, e[1]) else "MISS"
    if nobase == runs:
        result = "NO DATA (no baseline)"
    elif nobase or sat:
        result += f" ({nobase} no baseline, {sat} saturated)"
    rows.append((desc, f"{runs}", seeded, *map(str, e), str(sat), metric, f"{fails}", f"{past}",
                 f"{sigpast}", fmt(med(change)), fmt(med(pval), "{:.3g}"), target, result))
    b, n = med(base), med(now)
    if sc in ("loss", "ploss") and b is not None and n is not None:
        print(f"measured throughput: baseline {b:.0f} req/s, candidate median {n:.0f} req/s "
              f"({(n - b) / b * 100:+.1f}%)")

head = ("scenario", "runs", "seed", "exit0", "exit1", "exit2", "exit3", "saturated", "metric",
        "fails", "past limit", "sig+past", "median change", "median p", "target", "result")
table = [head] + rows
widths = [max(len(r[i]) for r in table) for i in range(len(head))]
for r in table:
    print("  ".join(c.ljust(w) if i in (0, 8, 14, 15) else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())
print("seed = accepted baseline runs (saturated runs are never baselines); fails = runs whose metric's")
print("verdict is fail; past limit = change past the fail limit; sig+past = past it and significant, i.e.")
print("what would fail had the run not been saturated; median p = the larger of the iteration and")
print("run-level tests' p-values (run-level only with >= 3 baseline runs); in paired mode, the")
print("signed-rank test's on the pair-by-pair ratios (seed: none needed).")
print("A/A false alarms count exit 1 from any metric.")
PY
[ "${SUMMARY_ONLY:-0}" = 1 ] || echo "started $started, $(nproc) cores, load average $load_before before and $load_after after; runs in $out"
