#!/usr/bin/env bash
# The stage map, enforced: a file in stage S (src/S/ or include/perfgate/S/)
# includes only its own stage and the stages before it:
#   core < profile < {load, host} < store < report < gate < cli
# load and host are siblings and include neither each other. A stage-private
# header ("x.h", beside its sources) is included only from its own folder. The
# value types (core) include no curl, SQLite, spdlog or JSON. Prints every
# offending include as FILE:LINE and exits 1; run from anywhere, or give the
# tree's root as $1 (the layering test points it at a copy with a planted include).
set -euo pipefail
root=${1:-"$(dirname "$0")/.."}
cd "$root"

rank() {
  case "$1" in
    core) echo 0 ;; profile) echo 1 ;; load|host) echo 2 ;;
    store) echo 3 ;; report) echo 4 ;; gate) echo 5 ;; cli) echo 6 ;; *) echo -1 ;;
  esac
}

bad=0
complain() { echo "$1: $2" >&2; bad=1; }

for dir in src/* include/perfgate/*; do
  [ -d "$dir" ] || continue
  stage=$(basename "$dir")
  own=$(rank "$stage")
  if [ "$own" -lt 0 ]; then complain "$dir" "not a stage folder (core profile load host store report gate cli)"; continue; fi
  while IFS= read -r hit; do
    [ -n "$hit" ] || continue
    file=${hit%%:*}; rest=${hit#*:}; line=${rest%%:*}; inc=${rest#*:}
    inc=${inc#*\"}; inc=${inc%%\"*}
    case "$inc" in
      perfgate/*/*)
        to=${inc#perfgate/}; to=${to%%/*}
        theirs=$(rank "$to")
        if [ "$theirs" -lt 0 ]; then complain "$file:$line" "\"$inc\" is in no stage"
        elif [ "$to" != "$stage" ] && [ "$theirs" -ge "$own" ]; then
          complain "$file:$line" "\"$inc\": stage $stage may not include stage $to (order: core < profile < load, host < store < report < gate < cli)"
        fi ;;
      */*) complain "$file:$line" "\"$inc\": a stage's private header is included only from its own folder" ;;
      *)
        if [ ! -f "$(dirname "$file")/$inc" ] && [ ! -f "src/$stage/$inc" ]; then
          complain "$file:$line" "\"$inc\" is not a header of stage $stage"
        fi ;;
    esac
  done < <(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$dir" || true)
  if [ "$stage" = core ]; then
    while IFS= read -r hit; do
      [ -n "$hit" ] && complain "${hit%%:*}:$(echo "$hit" | cut -d: -f2)" "core's value types use no curl, SQLite, spdlog or JSON"
    done < <(grep -rnE '#[[:space:]]*include[[:space:]]*<(curl/|sqlite3|spdlog/|nlohmann/)' "$dir" || true)
  fi
done
# Each source is built into its own folder's stage library (CMakeLists.txt), so
# the link order holds what the folders say.
if [ -f CMakeLists.txt ]; then
  while IFS=' ' read -r lib src; do
    [ "${src#src/}" != "$src" ] || continue
    folder=${src#src/}; folder=${folder%%/*}
    [ "$lib" = "perfgate_$folder" ] || complain "CMakeLists.txt" "$src is built into $lib, not perfgate_$folder"
  done < <(awk '/^perfgate_stage\(/ { lib = substr($1, 16); inside = 1 }
                inside { for (i = 1; i <= NF; i++) if ($i ~ /^src\//) print lib, $i }
                inside && /\)/ { inside = 0 }' CMakeLists.txt)
fi
exit $bad
