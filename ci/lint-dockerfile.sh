#!/usr/bin/env bash
# Lints the Dockerfile with npm's dockerfilelint (no container engine runs on
# every CI machine; where one does: docker build . or podman build .). The
# version is pinned; npx keeps it in npm's cache after the first call.
set -euo pipefail
cd "$(dirname "$0")/.."
npx --yes dockerfilelint@1.8.0 Dockerfile
