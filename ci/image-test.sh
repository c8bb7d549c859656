#!/usr/bin/env bash
# perfgate's OCI image as ci/image.sh builds it, without a daemon: skopeo must
# read the archive (labels, licence, entrypoint), then the archive is unpacked
# as a runtime would (skopeo copy to an OCI layout, umoci unpack) and, in a
# chroot of its root filesystem, perfgate --version, validate and a real run of
# the shipped example profile against the embedded demo server must end in a
# verdict. (podman does not run in this CI's container: no user namespaces.)
# Usage: image-test.sh DEB [APT_CACHE] (as root): DEB is the package test's, and
# APT_CACHE its debootstrap cache folder, whose .debs the image reuses.
set -euo pipefail
cd "$(dirname "$0")/.."
deb=$1
fail() {
  echo "image-test: $*" >&2
  exit 1
}
work=$(mktemp -d /tmp/perfgate-image-test.XXXXXX)
root=$work/bundle/rootfs
cleanup() {
  umount "$root/proc" 2>/dev/null || true
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT
started=$SECONDS
archive=$(PERFGATE_APT_CACHE=${2:-${PERFGATE_APT_CACHE:-}} bash ci/image.sh "$deb" "$work/perfgate-image.tar" | tail -n 1)
built=$((SECONDS - started))
[ -f "$archive" ] || fail "ci/image.sh printed no archive ($archive)"
version=$(dpkg-deb --field "$deb" Version)

inspect=$(skopeo inspect "oci-archive:$archive")
config=$(skopeo inspect --config "oci-archive:$archive")
echo "$inspect" | python3 -c 'import json, sys; i = json.load(sys.stdin); print(i["Architecture"], i["Os"], len(i["Layers"]), "layer(s)")'
python3 - "$version" "$inspect" "$config" <<'PY' || fail "skopeo inspect: the image's config is not the Dockerfile's"
import json, sys
version, inspect, config = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
labels, c = inspect["Labels"], config["config"]
assert labels["org.opencontainers.image.licenses"] == "Apache-2.0", labels
assert labels["org.opencontainers.image.version"] == version, labels
assert c["Entrypoint"] == ["perfgate"] and c["Cmd"] == ["--help"], c
assert c["WorkingDir"] == "/work", c
PY

skopeo copy --quiet "oci-archive:$archive" "oci:$work/oci:perfgate"
umoci unpack --image "$work/oci:perfgate" "$work/bundle" >/dev/null
# A runtime mounts /proc; perfgate finds itself (${PERFGATE}) there.
mount -t proc proc "$root/proc"
in_image() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }
in_image perfgate --version
in_image perfgate --version | grep -q "^perfgate $version" || fail "perfgate --version is not $version"
in_image git --version >/dev/null || fail "the image has no git (paired mode needs it)"
[ ! -e "$root/usr/share/man/man1/ls.1.gz" ] || fail "the image keeps man pages (ci/image/dpkg.cfg)"
example=/usr/share/doc/perfgate/examples/hello.json
in_image perfgate validate "$example"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
status=0
in_image env PERFGATE_DEMO_PORT="$port" perfgate run "$example" --store /tmp/perfgate.db >"$work/run.out" || status=$?
cat "$work/run.out"
[ "$status" -le 2 ] || fail "the example ended without a verdict in the image (exit $status)"
grep -Eq "^verdict: (PASS|WARN|FAIL)" "$work/run.out" || fail "no verdict line"
size=$(du -m "$archive" | cut -f1)
unpacked=$(du -sm --exclude=proc "$root" | cut -f1)
echo "image-test: perfgate $version's image: a $size MB archive, $unpacked MB unpacked, built in ${built}s; skopeo reads it, perfgate gates the example in it"
