# perfgate's image: the build stage compiles and packages perfgate as CI does
# (ci/package.sh), the runtime stage is debian:12-slim plus that .deb, its
# runtime libraries coming from Debian (ci/image/install.sh). Without Docker:
# bash ci/image.sh builds the same image as an OCI archive (docs/ci.md).
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
# The same steps as ci/image.sh's daemonless build: ci/image/dpkg.cfg keeps
# perfgate's docs and examples, ci/image/install.sh installs the .deb and git.
COPY ci/image/dpkg.cfg /etc/dpkg/dpkg.cfg.d/perfgate
COPY ci/image/install.sh /tmp/install.sh
RUN sh /tmp/install.sh /tmp/perfgate.deb && rm /tmp/install.sh
WORKDIR /work
ENTRYPOINT ["perfgate"]
CMD ["--help"]
