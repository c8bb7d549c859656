#!/bin/sh
# perfgate's image, inside the image's Debian 12 root: the one list of packages
# and the cleanup. The Dockerfile's runtime stage and ci/image.sh (mmdebstrap,
# no daemon) both run it, so that both images hold the same packages.
# Usage (as root, in the root): sh install.sh DEB
set -eu
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# git (and its CA certificates): the CI templates' paired mode checks out the
# merge base with `git worktree` inside this image; without it every merge
# request job would install git first.
apt-get install -y -qq --no-install-recommends "$1" git ca-certificates >/dev/null
mkdir -p /work
rm -rf /var/lib/apt/lists/* "$1"
