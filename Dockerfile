# perfgate's image: the build stage compiles and packages perfgate as CI does
# (ci/package.sh), the runtime stage is debian:12-slim plus that .deb, its
# runtime libraries coming from Debian.
#   docker build -t perfgate .            (or: podman build -t perfgate .)
#   docker run --rm perfgate --version
# The build context holds no .git (.dockerignore): pass the version's
# `git describe` for `perfgate --version`:
#   docker build --build-arg PERFGATE_GIT_DESCRIBE="$(git describe --tags --always)" -t perfgate .
FROM debian:12 AS build
ARG PERFGATE_GIT_DESCRIBE=""
WORKDIR /src
COPY . .
# ci/package.sh installs the build dependencies (ci/install-deps.sh --package).
RUN bash ci/package.sh /build -DPERFGATE_GIT_DESCRIBE="${PERFGATE_GIT_DESCRIBE}" \
    && cp /build/perfgate_*.deb /perfgate.deb

FROM debian:12-slim
LABEL org.opencontainers.image.title="perfgate" \
      org.opencontainers.image.description="A performance gate for CI: throughput and latency against a baseline" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /perfgate.deb /tmp/perfgate.deb
# git (and its CA certificates): the CI templates' paired mode checks out the
# merge base with `git worktree` inside this image; without it every merge
# request job would install git first.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends /tmp/perfgate.deb git ca-certificates \
    && rm -rf /var/lib/apt/lists/* /tmp/perfgate.deb
WORKDIR /work
ENTRYPOINT ["perfgate"]
CMD ["--help"]
