# Sourced by the bench scripts: the noisy condition's neighbour, one core burned
# in random bursts of 0.5-3 s with pauses of 0.5-3 s, until stopped by its PID.
neighbour=""
start_neighbour() {
  python3 -c '
import random, time
while True:
    end = time.monotonic() + random.uniform(0.5, 3)
    while time.monotonic() < end:
        pass
    time.sleep(random.uniform(0.5, 3))
' &
  neighbour=$!
}
stop_neighbour() {
  [ -n "$neighbour" ] || return 0
  kill "$neighbour" 2>/dev/null || true
  wait "$neighbour" 2>/dev/null || true
  neighbour=""
}
