#!/usr/bin/env bash
# Builds perfgate's OCI image without a container engine or daemon, from
# Debian's packages only: mmdebstrap makes a Debian 12 root (--variant=apt,
# ci/image/dpkg.cfg's exclusions) in which ci/image/install.sh installs the .deb,
# the very script the Dockerfile's runtime stage runs; umoci turns the root into
# one layer with the Dockerfile's labels, entrypoint, command and working folder;
# skopeo writes it as an OCI archive (docker-archive-free: load it with
# `skopeo copy oci-archive:FILE docker-daemon:perfgate:VERSION` or
# `podman load -i FILE`). Prints the archive's path as its last line.
# Usage: ci/image.sh [DEB [ARCHIVE]]; DEB defaults to ci/package.sh's, ARCHIVE to
# build-package/perfgate-image.tar. $PERFGATE_APT_CACHE is a folder of .debs kept
# between calls (default build-package/apt-cache; ci/image-test.sh passes the
# package test's). Needs root and the network to deb.debian.org; mmdebstrap,
# umoci and skopeo come from ci/install-deps.sh --test.
set -euo pipefail
cd "$(dirname "$0")/.."
# Debian's python3 first: mmdebstrap filters every package through mmtarfilter
# (#!/usr/bin/env python3), and a version manager's shim there (pyenv) cost
# seconds per package, most of the build's time.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH
for tool in mmdebstrap umoci skopeo; do
  command -v "$tool" >/dev/null || { echo "image: no $tool (bash ci/install-deps.sh --test installs it)" >&2; exit 1; }
done
deb=${1:-}
[ -n "$deb" ] || deb=$(bash ci/package.sh build-package | tail -n 1)
deb=$(realpath "$deb")
archive=$(realpath -m "${2:-build-package/perfgate-image.tar}")
cache=$(realpath -m "${PERFGATE_APT_CACHE:-build-package/apt-cache}")
version=$(dpkg-deb --field "$deb" Version)
arch=$(dpkg-deb --field "$deb" Architecture)
mkdir -p "$cache" "$(dirname "$archive")"
work=$(mktemp -d /tmp/perfgate-image.XXXXXX)
trap 'rm -rf --one-file-system "$work"' EXIT

started=$SECONDS
mirror=http://deb.debian.org/debian
# The cache's .debs go in before apt downloads and the new ones come out after
# the install (plain cp: the package test's cache folder also holds its root's
# tarball). dpkg need not fsync every file of a root that becomes a tarball.
# The root is the image's only layer.
mmdebstrap --quiet --variant=apt --architectures="$arch" --dpkgopt=ci/image/dpkg.cfg \
  --skip=essential/unlink --skip=download/empty \
  --setup-hook='mkdir -p "$1/var/cache/apt/archives" "$1/etc/dpkg/dpkg.cfg.d"' \
  --setup-hook='echo force-unsafe-io >"$1/etc/dpkg/dpkg.cfg.d/unsafe-io"' \
  --setup-hook="cp $cache/*.deb \"\$1/var/cache/apt/archives/\" 2>/dev/null || true" \
  --customize-hook="copy-in $deb ci/image/install.sh /tmp" \
  --customize-hook="chroot \"\$1\" sh /tmp/install.sh /tmp/$(basename "$deb")" \
  --customize-hook='rm -f "$1/tmp/install.sh" "$1/etc/dpkg/dpkg.cfg.d/unsafe-io"' \
  --customize-hook="cp -n \"\$1\"/var/cache/apt/archives/*.deb $cache/ 2>/dev/null || true" \
  bookworm "$work/root.tar" \
  "deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
  "deb http://deb.debian.org/debian-security bookworm-security main" >&2

# The Dockerfile's runtime settings are the one source of the image's config.
config=(--os linux --architecture "$arch" --config.workingdir /work
  --config.entrypoint perfgate --config.cmd --help
  --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  --config.label "org.opencontainers.image.version=$version")
while IFS= read -r label; do config+=(--config.label "$label"); done < <(
  grep -o 'org\.opencontainers\.image\.[a-z]*="[^"]*"' Dockerfile | tr -d '"')
grep -q '^ENTRYPOINT \["perfgate"\]$' Dockerfile && grep -q '^CMD \["--help"\]$' Dockerfile &&
  grep -q '^WORKDIR /work$' Dockerfile || { echo "image: the Dockerfile's runtime settings changed: update ci/image.sh" >&2; exit 1; }

oci=$work/oci
umoci init --layout "$oci"
umoci new --image "$oci:perfgate"
umoci unpack --image "$oci:perfgate" "$work/bundle" >/dev/null
tar -C "$work/bundle/rootfs" --numeric-owner -xf "$work/root.tar"
rm "$work/root.tar"
umoci repack --image "$oci:perfgate" "$work/bundle"
umoci config --image "$oci:perfgate" "${config[@]}"
umoci gc --layout "$oci"
rm -f "$archive"
skopeo copy --quiet "oci:$oci:perfgate" "oci-archive:$archive:perfgate:$version"
echo "image: perfgate $version, $(du -m "$archive" | cut -f1) MB archive, built in $((SECONDS - started))s" >&2
echo "$archive"
