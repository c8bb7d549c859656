#!/usr/bin/env bash
# The package as a Debian user gets it: builds the .deb (ci/package.sh), checks
# it with lintian and its Depends, then installs it with apt-get into a fresh
# minimal Debian 12 root (debootstrap --variant=minbase, no compiler) and there
# runs --version, validate on the shipped example profile and a real run of it
# against the embedded demo server, which must end in a verdict and a JUnit
# file; then runs the GitHub action's steps there (ci/github-action-test.sh).
# Also lints the Dockerfile and the GitHub files (ci/lint-github.sh). Needs root (chroot, mount) and the network
# to deb.debian.org. debootstrap's root is made once and kept as a tarball in
# $PERFGATE_DEBOOTSTRAP_CACHE (default build-package/debootstrap-cache) for
# later calls; $PERFGATE_PACKAGE_BUILD is the build folder (build-package).
set -euo pipefail
cd "$(dirname "$0")/.."
stage() { echo "== package: $* (at ${SECONDS}s)"; }

stage "build the .deb"
# An absolute folder, as the Dockerfile passes one (/build).
deb=$(bash ci/package.sh "$(realpath -m "${PERFGATE_PACKAGE_BUILD:-build-package}")" | tail -n 1)
echo "$deb"

stage "lintian and Depends"
lintian --fail-on error "$deb" || {
  echo "package-test: lintian reports errors" >&2
  exit 1
}
depends=$(dpkg-deb --field "$deb" Depends)
echo "Depends: $depends"
for lib in libc6 libcurl4 libsqlite3-0 libhttp-parser2.9 'libspdlog[0-9.]+(-fmt[0-9]+)?'; do
  grep -Eq "(^|, )$lib( |,|$)" <<<"$depends" || { echo "package-test: Depends lacks $lib" >&2; exit 1; }
done
if grep -Eq -- '-dev( |,|$)|(^|, )(g\+\+|gcc|cmake)' <<<"$depends"; then
  echo "package-test: Depends names a build-time package: $depends" >&2
  exit 1
fi
contents=$(dpkg-deb --contents "$deb")
for file in usr/bin/perfgate usr/share/perfgate/schemas/profile.schema.json \
  usr/share/perfgate/schemas/result.schema.json usr/share/doc/perfgate/examples/hello.json \
  usr/share/doc/perfgate/copyright usr/share/doc/perfgate/changelog.gz; do
  grep -q " \./$file\$" <<<"$contents" || { echo "package-test: the package lacks /$file" >&2; exit 1; }
done
# One licence, Apache-2.0, named alike by LICENSE, the package and the image.
copyright=$(dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./usr/share/doc/perfgate/copyright)
grep -q '^License: Apache-2.0$' <<<"$copyright" || { echo "package-test: the copyright file names no Apache-2.0" >&2; exit 1; }
cmp -s LICENSE /usr/share/common-licenses/Apache-2.0 || { echo "package-test: LICENSE is not the Apache License 2.0" >&2; exit 1; }
grep -q 'org.opencontainers.image.licenses="Apache-2.0"' Dockerfile ||
  { echo "package-test: the Dockerfile's image has no licence label" >&2; exit 1; }
# The man page is the binary's own help: every subcommand is in it.
man_text=$(dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./usr/share/man/man1/perfgate.1.gz | gzip -dc)
for cmd in run bench validate demo-server doctor store report history calibrate merge; do
  grep -q "^\.SS \"\?perfgate $cmd" <<<"$man_text" || { echo "package-test: perfgate.1 lacks $cmd" >&2; exit 1; }
done

stage "Dockerfile lint"
bash ci/lint-dockerfile.sh

stage "GitHub workflows and action: SchemaStore's schemas, actionlint"
bash ci/lint-github.sh

stage "fresh Debian 12 root (debootstrap --variant=minbase)"
# debootstrap's root is made once and kept as a tarball in the cache folder (a
# clean checkout has none); each call unpacks a pristine copy of it.
cache=${PERFGATE_DEBOOTSTRAP_CACHE:-$PWD/build-package/debootstrap-cache}
mkdir -p "$cache"
root=$(mktemp -d /tmp/perfgate-root.XXXXXX)
cleanup() {
  umount "$root/dev/pts" 2>/dev/null || true
  umount "$root/proc" 2>/dev/null || true
  rm -rf --one-file-system "$root"
}
trap cleanup EXIT
mirror=http://deb.debian.org/debian
tarball=$cache/bookworm-minbase.tar
bash ci/debootstrap-root.sh "$cache"
start=$SECONDS
tar -C "$root" -xf "$tarball"
stage "root unpacked in $((SECONDS - start))s; install the .deb with apt-get"
# The same suites as this machine's sources: security fixes of the runtime libraries.
cat >"$root/etc/apt/sources.list" <<SOURCES
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
SOURCES
cp /etc/resolv.conf "$root/etc/resolv.conf"
# A throwaway root: dpkg need not fsync every file (Debian's docker images do the same).
echo force-unsafe-io >"$root/etc/dpkg/dpkg.cfg.d/unsafe-io"
cp "$deb" "$root/tmp/"
mount -t proc proc "$root/proc"
mkdir -p "$root/dev/pts" && mount -t devpts devpts "$root/dev/pts"  # apt's terminal log
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }
in_root apt-get update -qq
in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  "/tmp/$(basename "$deb")" >/dev/null
for compiler in cc gcc g++ c++ clang; do
  if in_root sh -c "command -v $compiler" >/dev/null; then
    echo "package-test: the root has a compiler ($compiler)" >&2
    exit 1
  fi
done

stage "perfgate in the root"
in_root perfgate --version
in_root perfgate --version | grep -Eq "^libcurl [0-9.]+, SQLite 3\.[0-9.]+$"
example=/usr/share/doc/perfgate/examples/hello.json
in_root perfgate validate "$example"
# A free port, so that a demo running elsewhere on this machine cannot answer.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
status=0
in_root env PERFGATE_DEMO_PORT="$port" perfgate run "$example" --store /tmp/perfgate.db \
  --junit /tmp/junit.xml >"$root/tmp/run.out" || status=$?
cat "$root/tmp/run.out"
stage "verdict in the root $((SECONDS - start))s after the empty root (exit $status)"
if [ "$status" -gt 2 ]; then
  echo "package-test: the run ended without a verdict (exit $status)" >&2
  exit 1
fi
grep -Eq "^verdict: (PASS|WARN|FAIL)" "$root/tmp/run.out"
xmllint --noout "$root/tmp/junit.xml"
grep -q "<testsuite" "$root/tmp/junit.xml"

stage "the OCI image, built without a daemon (ci/image.sh) and run"
bash ci/image-test.sh "$deb" "$cache"

stage "the GitHub action's steps in the root"
bash ci/github-action-test.sh "$root" "$deb"
stage "passed"
