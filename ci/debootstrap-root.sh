#!/usr/bin/env bash
# Makes the minimal Debian 12 root the package test installs the .deb into
# (debootstrap --variant=minbase, no compiler) and keeps it as a tarball in the
# cache folder ($1, default build-package/debootstrap-cache): once, since a
# clean checkout has none. Mostly the network's and the disk's time, so
# ci/test.sh starts it while the first build compiles, and waits for it before
# the package stage. Usage: ci/debootstrap-root.sh [CACHE_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
cache=$(realpath -m "${1:-build-package/debootstrap-cache}")
mkdir -p "$cache"
tarball=$cache/bookworm-minbase.tar
[ -f "$tarball" ] && exit 0
root=$(mktemp -d /tmp/perfgate-debootstrap.XXXXXX)
trap 'rm -rf --one-file-system "$root"' EXIT
made=$SECONDS
debootstrap --variant=minbase --cache-dir="$cache" bookworm "$root" http://deb.debian.org/debian \
  >"$cache/debootstrap.log" 2>&1 || {
  tail -n 20 "$cache/debootstrap.log" >&2
  exit 1
}
tar -C "$root" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
echo "debootstrap made the root in $((SECONDS - made))s (kept in $tarball)"
