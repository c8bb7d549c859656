# Sourced by the benches: what else the machine did over a row. cpu_now and
# others_now read it; row_load T0 S0 O0 prints "steal% others%" since then.
# A row measured above 5 % steal is reported as measured, with its steal.
# /proc/stat's cpu line: total and steal jiffies.
cpu_now() { awk '/^cpu /{t=0; for(i=2;i<=NF;i++) t+=$i; print t, $9}' /proc/stat; }
# Jiffies of every process not in this bench's tree (perfgate, its services,
# valgrind and the neighbour are ours): other users of the machine.
others_now() {
  python3 - "$$" <<'EOF'
import os, sys
me = int(sys.argv[1])
parent, ticks = {}, {}
for pid in filter(str.isdigit, os.listdir('/proc')):
    try:
        f = open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()
    except OSError:
        continue
    parent[int(pid)] = int(f[1]); ticks[int(pid)] = int(f[11]) + int(f[12])
def ours(p):
    while p > 1:
        if p == me: return True
        p = parent.get(p, 0)
    return False
print(sum(t for p, t in ticks.items() if not ours(p)))
EOF
}
# "steal% others%" over a row, from the two readings around it.
row_load() {
  local t0="$1" s0="$2" o0="$3" t1 s1 o1
  read -r t1 s1 < <(cpu_now)
  o1="$(others_now)"
  python3 -c "d=$t1-$t0; print(f'{100*($s1-$s0)/d:.1f} {100*($o1-$o0)/d:.1f}')"
}

