#!/usr/bin/env bash
# Builds the Debian package from a checkout: the perfgate target alone (no
# tests) in build-package/ (or $1), its man page, then CPack. Prints the .deb's
# path as its last line. Extra arguments go to CMake (another compiler than
# Debian 12's may want -DPERFGATE_WERROR=OFF).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-package}
shift || true
# Absolute or relative to the checkout (the Dockerfile passes /build).
case $dir in /*) ;; *) dir=$PWD/$dir ;; esac
bash ci/install-deps.sh --package
generator=()
if [ ! -f "$dir/CMakeCache.txt" ] && command -v ninja >/dev/null; then generator=(-G Ninja); fi
# The flags of ci/test.sh's first build, so the packaged code is the code CI
# tested and a ccache shares its objects; CPack strips the line tables.
# Linked with full RELRO, as Debian's hardening asks. Configured on every
# call, so that `git describe` is current.
cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DPERFGATE_WERROR=ON -DBUILD_TESTING=OFF \
  -DCMAKE_EXE_LINKER_FLAGS="-Wl,-z,relro,-z,now" "$@" >/dev/null
cmake --build "$dir" -j"$(nproc)" --target perfgate perfgate_man perfgate_changelog >&2
rm -f "$dir"/perfgate_*.deb
(cd "$dir" && cpack -G DEB >&2)
ls "$dir"/perfgate_*.deb
