#!/usr/bin/env bash
# Does the machine's own speed explain part of an unchanged service's spread from
# run to run (issue 27, item 3)? A fixed piece of CPU work is timed once a second
# on each CPU this script may use (one probe process pinned to each), on its own
# CPU clock, for as long as a command runs; by default the command is
# gate_accuracy.sh's found-service rows (an unchanged service started beside
# perfgate, then a +10 % one). Then every run's JSON result in OUT is matched
# with the probe samples taken during it, and the script prints how the run's
# service CPU per request correlates with the probe's time for the fixed work
# (within each row, so that a deliberate change is not a correlation). If the
# probe explains a real share of the spread, it earns a place in the sampler,
# judged like saturation; if not, bench/README.md says so and it stays out.
#
# Usage: bench/speed_probe.sh [COMMAND...]    (the default command takes ~30-40 min)
#   OUT=dir        the command's results and the probe's log (default: a new /tmp dir)
#   PERIOD=1       seconds between a probe's samples
#   WORK=20000     loop iterations of the fixed work (~1-2 ms of one core here)
#   PERFGATE=...   passed on to the default command (and every other variable
#                  gate_accuracy.sh reads, e.g. AA_RUNS, RUNS, CONDITIONS)
set -uo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
die() { echo "speed_probe.sh: $*" >&2; exit 3; }
command -v python3 >/dev/null || die "python3 is needed"
export OUT="${OUT:-$(mktemp -d /tmp/speed_probe.XXXXXX)}"
mkdir -p "$OUT"
PERIOD="${PERIOD:-1}"
WORK="${WORK:-20000}"

# One probe per CPU of this script's affinity mask, each pinned to its CPU,
# appending "unix_time cpu cpu_ns wall_ns" once per PERIOD until stopped.
probes=()
stop_probes() {
  local pid
  for pid in "${probes[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${probes[@]}"; do wait "$pid" 2>/dev/null; done
  probes=()
}
trap stop_probes EXIT
for cpu in $(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)))'); do
  PROBE_CPU="$cpu" PERIOD="$PERIOD" WORK="$WORK" python3 -c '
import os, sys, time
cpu, period, work = int(os.environ["PROBE_CPU"]), float(os.environ["PERIOD"]), int(os.environ["WORK"])
os.sched_setaffinity(0, {cpu})
out = open(sys.argv[1], "a", buffering=1)
def fixed_work():
    x = 0
    for i in range(work):
        x = (x * 31 + i) & 0xFFFFFFFF
    return x
fixed_work()  # warm the interpreter once
while True:
    w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
    fixed_work()
    c1, w1 = time.thread_time_ns(), time.perf_counter_ns()
    out.write(f"{time.time():.3f} {cpu} {c1 - c0} {w1 - w0}\n")
    time.sleep(max(0.0, period - (w1 - w0) / 1e9))
' "$OUT/probe-$cpu.log" &
  probes+=($!)
done
echo "speed_probe: ${#probes[@]} probes (one per CPU), every ${PERIOD}s, results in $OUT" >&2

probe_start="$(date +%s)"
if [ "$#" -gt 0 ]; then
  "$@"
else
  SCENARIOS="${SCENARIOS:-faa floss}" CONDITIONS="${CONDITIONS:-quiet}" "$root/bench/gate_accuracy.sh"
fi
code=$?
stop_probes
probe_secs=$(($(date +%s) - probe_start))

OUT_DIR="$OUT" PROBE_SECS="$probe_secs" python3 - <<'PY'
import glob, json, math, os, re, statistics
from datetime import datetime

out = os.environ["OUT_DIR"]
samples = []  # (time, cpu, cpu_ns, wall_ns)
for path in glob.glob(f"{out}/probe-*.log"):
    for line in open(path):
        try:
            t, cpu, c, w = line.split()
            samples.append((float(t), int(cpu), int(c), int(w)))
        except ValueError:
            pass
samples.sort()
if not samples:
    raise SystemExit("speed_probe: no probe samples")
cpus = sorted({s[1] for s in samples})
secs = float(os.environ["PROBE_SECS"]) or 1
cost = sum(s[2] for s in samples) / 1e9 / secs / len(cpus) * 100
all_c = [s[2] for s in samples]
print(f"probe: {len(samples)} samples on CPUs {cpus}, fixed work median {statistics.median(all_c) / 1e6:.3f} ms "
      f"of CPU, CV {statistics.pstdev(all_c) / statistics.mean(all_c) * 100:.1f} %, "
      f"cost {cost:.2f} % of each CPU")

# Every result with a start, a length and the service's CPU per request, grouped
# by its row and role (seed or judged run), so that a row's deliberate change is
# not read as the probe's doing.
groups = {}
for path in sorted(glob.glob(f"{out}/**/*.json", recursive=True)):
    try:
        r = json.load(open(path))
        start = datetime.fromisoformat(r["started_at"].replace("Z", "+00:00")).timestamp()
        length = float(r["duration_s"])
        cpu_req = r["metrics"]["service_cpu_us_per_request"]["value"]
    except (OSError, ValueError, KeyError, TypeError):
        continue
    if not cpu_req:
        continue
    inside = [s[2] for s in samples if start <= s[0] <= start + length]
    if len(inside) < 2:
        continue
    key = re.sub(r"\d+\.json$", "", os.path.relpath(path, out))
    groups.setdefault(key, []).append((statistics.mean(inside), cpu_req))

def pearson(xs, ys):
    mx, my = statistics.mean(xs), statistics.mean(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else float("nan")

def ranks(xs):
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    for rank, i in enumerate(order):
        r[i] = rank
    return r

# Within-group deviations of log values: the probe's and the service's relative
# moves from their row's own level.
px, sy = [], []
for key, rows in sorted(groups.items()):
    if len(rows) < 3:
        continue
    lp = [math.log(p) for p, _ in rows]
    ls = [math.log(c) for _, c in rows]
    mp, ms = statistics.mean(lp), statistics.mean(ls)
    px += [x - mp for x in lp]
    sy += [y - ms for y in ls]
    print(f"{key:<28} {len(rows):3d} runs: service CPU/req sd {statistics.pstdev(ls) * 100:.2f} %, "
          f"probe sd {statistics.pstdev(lp) * 100:.2f} %, r {pearson(lp, ls):+.2f}")
if len(px) < 5:
    raise SystemExit("speed_probe: fewer than 5 runs matched with probe samples")
r = pearson(px, sy)
rho = pearson(ranks(px), ranks(sy))
# Under no correlation, |r| above 2/sqrt(n) happens about 5 % of the time.
bound = 2 / math.sqrt(len(px))
print(f"all rows: {len(px)} runs, Pearson r {r:+.3f} (r^2 {r * r:.3f}), Spearman rho {rho:+.3f}; "
      f"|r| > {bound:.3f} would be significant at about 5 %")
print("the probe " + ("explains part of the runs' spread: judge it like saturation"
                      if abs(r) > bound and r * r >= 0.1 else
                      "does not explain the runs' spread: leave it out"))
PY
exit "$code"
