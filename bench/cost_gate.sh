#!/usr/bin/env bash
# The counted cost phase on this machine (docs/cost.md), two tables:
#   spread  the demo service's instructions per request over LAUNCHES launches, at 1 and
#           at 16 connections, single event loop and thread per connection, quiet and
#           beside a bursting neighbour (one core burned in random 0.5-3 s bursts)
#   gates   paired gates (the pull-request recipe, its cost phase on, the timed part
#           cut to PAIRED_COUNT pairs of PAIRED_DURATION windows so that 90 gates fit in
#           an hour) with the neighbour running: A/A, +2 % and +1 % instructions per
#           request, planted with demo-server --work-rounds
#   runtimes the same gates (the cost phase as shipped: requests "auto") around real
#           runtimes' services, quiet: CPython with a thread per connection, two
#           pre-forked workers, a process forked per connection, and Node; A/A, and
#           +2.5 % and +1.4 % instructions per request, planted by handler rounds from
#           each service's own calibration (its count at ROUNDS and at 2 x ROUNDS)
# Every row records the host's steal and the CPU of processes other than this
# bench's own over the row. Runs on demand, alone on the machine (no builds,
# no tests): it measures.
#
#   PERFGATE=build/perfgate  LAUNCHES=10  REQUESTS=1000  TABLES="spread gates"
#   AA=50  CAUGHT=20  PAIRED_COUNT=7  PAIRED_DURATION=250ms  ROUNDS=2000
#   RUNTIMES="python-threaded python-prefork python-fork node"  RUNTIME_GATES=20
#   RUNTIME_ROUNDS=2000
set -euo pipefail
cd "$(dirname "$0")/.."
PERFGATE="$(realpath "${PERFGATE:-build/perfgate}")"
LAUNCHES="${LAUNCHES:-10}"
REQUESTS="${REQUESTS:-1000}"
TABLES="${TABLES:-spread gates}"
AA="${AA:-50}"
CAUGHT="${CAUGHT:-20}"
PAIRED_COUNT="${PAIRED_COUNT:-7}"
PAIRED_DURATION="${PAIRED_DURATION:-250ms}"
ROUNDS="${ROUNDS:-2000}"
RUNTIMES="${RUNTIMES:-python-threaded python-prefork python-fork node}"
RUNTIME_GATES="${RUNTIME_GATES:-20}"
RUNTIME_ROUNDS="${RUNTIME_ROUNDS:-2000}"
out="$(mktemp -d "${TMPDIR:-/tmp}/perfgate-cost-bench.XXXXXX")"
echo "cost_gate: $PERFGATE, results in $out" >&2

# shellcheck source=bench/neighbour.sh
. bench/neighbour.sh
trap stop_neighbour EXIT

# shellcheck source=bench/row_load.sh
. bench/row_load.sh

profile() {  # PORT_VAR SERVICE_ARGS CONNECTIONS LAUNCHES
  cat <<EOF
{ "name": "cost-bench",
  "target": { "url": "http://127.0.0.1:\${PORT}/" },
  "load": { "threads": 1, "connections": 1, "duration": "100ms", "warmup": "0s" },
  "repeat": { "count": 1, "discard": 0 },
  "thresholds": {},
  "service": { "command": ["$PERFGATE", "demo-server", "--port", "\${PORT}" $1],
               "ready_url": "http://127.0.0.1:\${PORT}/health" },
  "cost": { "requests": $REQUESTS, "warmup_requests": 200, "connections": $2,
            "launches": $3 } }
EOF
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

spread_table() {
  echo "| service | connections | condition | instructions per request, per launch | spread | s per launch | steal | others' CPU |"
  echo "|---|---|---|---|---|---|---|---|"
  for cond in quiet noisy; do
    for svc in single thread; do
      local args=', "--work-rounds", "'$ROUNDS'"'
      [ "$svc" = single ] && args="$args"', "--single-thread"'
      for conns in 1 16; do
        profile "$args" "$conns" "$LAUNCHES" >"$out/spread.json"
        [ "$cond" = noisy ] && start_neighbour
        read -r t0 s0 < <(cpu_now); o0="$(others_now)"
        PORT="$(free_port)" "$PERFGATE" run "$out/spread.json" --no-record \
          --json "$out/spread-$cond-$svc-$conns.json" >"$out/spread-$cond-$svc-$conns.log" 2>&1 || true
        read -r steal others < <(row_load "$t0" "$s0" "$o0")
        stop_neighbour
        python3 - "$out/spread-$cond-$svc-$conns.json" "$svc" "$conns" "$cond" "$steal" "$others" <<'EOF'
import json, sys
f, svc, conns, cond, steal, others = sys.argv[1:]
c = json.load(open(f)).get("cost") or {}
v = [l["instructions_per_request"] for l in c.get("launches", [])]
name = "demo-server --single-thread" if svc == "single" else "demo-server (thread per connection)"
spread = c.get("spread_pct", {}).get("instructions_per_request")
per = c.get("seconds", 0) / max(len(v), 1)
shown = ", ".join(f"{x:.1f}" for x in v) if len(set(v)) > 1 else (f"{v[0]:.3f} x {len(v)}" if v else "none")
print(f"| {name} | {conns} | {cond} | {shown} | {spread:.3f} % | {per:.1f} | {steal} % | {others} % |" if v else
      f"| {name} | {conns} | {cond} | failed: {c.get('skipped')} | | | {steal} % | {others} % |")
EOF
      done
    done
  done
}

# A service's command for `sh -c`, with ROUNDS handler rounds ($PORT left to sh).
service_command() {  # SERVICE ROUNDS
  local py="exec /usr/bin/python3 $PWD/tests/tools/python_server.py \$PORT $2"
  case "$1" in
    demo) echo "exec $PERFGATE demo-server --port \$PORT --single-thread --work-rounds $2" ;;
    python-threaded) echo "$py" ;;
    python-prefork) echo "$py --prefork 2" ;;
    python-fork) echo "$py --fork" ;;
    node) echo "exec node $PWD/tests/tools/node_server.js \$PORT $2" ;;
  esac
}

# One paired gate of the recipe: candidate rounds, baseline rounds.
gate() {
  local cand="$1" base="$2" name="$3" svc="${4:-demo}" t0 code
  t0=$EPOCHREALTIME
  code=0
  PERFGATE_SERVICE_COMMAND="$(service_command "$svc" "$cand")" \
    PERFGATE_BASE_SERVICE_COMMAND="$(service_command "$svc" "$base")" \
    PERFGATE_CANDIDATE_PORT="$(free_port)" PERFGATE_BASELINE_PORT="$(free_port)" \
    PERFGATE_BASELINE_DIR=. \
    "$PERFGATE" run "$out/gate.json" --no-record --json "$out/$name.json" >"$out/$name.log" 2>&1 || code=$?
  python3 - "$out/$name.json" "$code" "$(python3 -c "print(f'{$EPOCHREALTIME - $t0:.1f}')")" <<'EOF'
import json, sys
f, code, secs = sys.argv[1:]
try:
    r = json.load(open(f))
except Exception:
    print("error", code, secs, "0", "nan"); sys.exit()
m = r["metrics"].get("instructions_per_request", {})
print(m.get("verdict", "none"), code, secs, r.get("cost", {}).get("seconds", 0), m.get("change_pct"))
EOF
}

gate_profile() {  # COST_JSON
  python3 - "$PAIRED_COUNT" "$PAIRED_DURATION" "$1" <<'EOF' >"$out/gate.json"
import json, re, sys
text = open("ci/profiles/pr-paired.json").read()
text = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("//"))
p = json.loads(text)
p["repeat"] = {"count": int(sys.argv[1]), "discard": 0}
p["load"]["duration"] = sys.argv[2]; p["load"]["warmup"] = "250ms"
p["paired"]["baseline"]["service"]["command"] = ["sh", "-c", "${PERFGATE_BASE_SERVICE_COMMAND}"]
p["cost"] = json.loads(sys.argv[3])
p.pop("$schema", None)
print(json.dumps(p, indent=2))
EOF
}

# A row's gates summed up: verdicts of the count, exit codes, changes, times.
row_summary() {  # FILE LABEL N STEAL OTHERS
  python3 - "$@" <<'EOF'
import statistics, sys
f, label, n, steal, others = sys.argv[1:]
rows = [l.split() for l in open(f) if l.strip()]
v = [r[0] for r in rows]; codes = [r[1] for r in rows]
secs = [float(r[2]) for r in rows]; cost = [float(r[3]) for r in rows]
ch = sorted({f"{float(r[4]):+.2f} %" for r in rows if r[4] not in ("None", "nan")})
shown = ", ".join(ch) if len(ch) <= 4 else f"{ch[0]} .. {ch[-1]}"
print(f"| {label} | {n} | {v.count('pass')} / {v.count('warn')} / {v.count('fail')} | "
      f"{codes.count('0')} / {codes.count('1')} / {codes.count('2')} / {codes.count('3')} | "
      f"{shown} | {statistics.median(secs):.1f} | {statistics.median(cost):.1f} | {steal} % | {others} % |")
EOF
}

gates_table() {
  # The recipe with its cost phase on and its timed part cut (see the header).
  gate_profile '{"instrument": "callgrind", "requests": 1000, "warmup_requests": 200}'
  local plus2 plus1
  plus2=$(( ROUNDS * 1025 / 1000 )); plus1=$(( ROUNDS * 10125 / 10000 ))
  echo "| row | gates | counted: pass / warn / fail | exit 0 / 1 / 2 / 3 | measured change | median gate s | median cost phase s | steal | others' CPU |"
  echo "|---|---|---|---|---|---|---|---|---|"
  for row in "A/A:$ROUNDS:$AA" "+2 %:$plus2:$CAUGHT" "+1 %:$plus1:$CAUGHT"; do
    IFS=: read -r label rounds n <<<"$row"
    start_neighbour
    read -r t0 s0 < <(cpu_now); o0="$(others_now)"
    : >"$out/row.txt"
    for i in $(seq 1 "$n"); do gate "$rounds" "$ROUNDS" "gate-$rounds-$i" >>"$out/row.txt"; done
    read -r steal others < <(row_load "$t0" "$s0" "$o0")
    stop_neighbour
    row_summary "$out/row.txt" "$label" "$n" "$steal" "$others"
  done
}

# A service's instructions per request at ROUNDS handler rounds: one cost
# phase of two launches, its median.
counted_at() {  # SERVICE ROUNDS
  local command
  command="$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$(service_command "$1" "$2")")"
  cat >"$out/calibrate.json" <<EOF
{ "name": "cost-bench-calibrate", "target": { "url": "http://127.0.0.1:\${PORT}/" },
  "load": { "threads": 1, "connections": 1, "duration": "100ms", "warmup": "0s" },
  "repeat": { "count": 1, "discard": 0 }, "thresholds": {},
  "service": { "command": ["sh", "-c", $command],
               "ready_url": "http://127.0.0.1:\${PORT}/health", "ready_timeout": "120s" },
  "cost": { "instrument": "callgrind", "launches": 2 } }
EOF
  PORT="$(free_port)" "$PERFGATE" run "$out/calibrate.json" --no-record \
    --json "$out/calibrate-$1-$2.json" >"$out/calibrate-$1-$2.log" 2>&1 || true
  python3 -c 'import json,sys,statistics; c=json.load(open(sys.argv[1]))["cost"]; print(statistics.median(l["instructions_per_request"] for l in c["launches"]))' \
    "$out/calibrate-$1-$2.json"
}

runtimes_table() {
  gate_profile '{"instrument": "callgrind"}'
  echo "| service | row | gates | counted: pass / warn / fail | exit 0 / 1 / 2 / 3 | measured change | median gate s | median cost phase s | steal | others' CPU |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  local svc c1 c2 plus25 plus14 row label rounds i t0 s0 o0 steal others
  for svc in $RUNTIMES; do
    # Rounds for a planted change of the whole count: (count at 2R - count at R) / R a round.
    c1="$(counted_at "$svc" "$RUNTIME_ROUNDS")"; c2="$(counted_at "$svc" $((RUNTIME_ROUNDS * 2)))"
    read -r plus25 plus14 < <(python3 -c "
r, c1, c2 = $RUNTIME_ROUNDS, $c1, $c2
k = (c2 - c1) / r
print(round(r + 0.025 * c1 / k), round(r + 0.014 * c1 / k))")
    echo "calibration $svc: $c1 instructions a request at $RUNTIME_ROUNDS rounds, $c2 at $((RUNTIME_ROUNDS * 2)); +2.5 % at $plus25, +1.4 % at $plus14 rounds" >&2
    for row in "A/A:$RUNTIME_ROUNDS" "+2.5 %:$plus25" "+1.4 %:$plus14"; do
      IFS=: read -r label rounds <<<"$row"
      read -r t0 s0 < <(cpu_now); o0="$(others_now)"
      : >"$out/row.txt"
      for i in $(seq 1 "$RUNTIME_GATES"); do
        gate "$rounds" "$RUNTIME_ROUNDS" "rt-$svc-$rounds-$i" "$svc" >>"$out/row.txt"
      done
      read -r steal others < <(row_load "$t0" "$s0" "$o0")
      row_summary "$out/row.txt" "$svc | $label" "$RUNTIME_GATES" "$steal" "$others"
    done
  done
}

echo "started $(date -u +%Y-%m-%dT%H:%MZ), load $(cut -d' ' -f1-3 /proc/loadavg), valgrind $(valgrind --version)"
case " $TABLES " in *" spread "*) spread_table ;; esac
case " $TABLES " in *" gates "*) gates_table ;; esac
case " $TABLES " in *" runtimes "*) runtimes_table ;; esac
echo "ended $(date -u +%Y-%m-%dT%H:%MZ)"
