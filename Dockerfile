# syntax=docker/dockerfile:1
# spoolship container image. Multi-stage: compile with the dev dependencies,
# ship the bundled dist/ with production dependencies only (the bundle
# imports only the native zstd binding, ioredis and pino-pretty from them).
#
#   docker build -t spoolship:0.1.0 .
#   docker run -d --name spoolship --stop-timeout 30 \
#     -e SPOOLSHIP_API__BASE_URL=https://api.example.com -e SPOOLSHIP_TOKEN=... \
#     -v /var/spool/spoolship:/var/spool/spoolship:ro -v spoolship-state:/var/lib/spoolship \
#     spoolship:0.1.0
#
# The Node.js major is the LTS line the CI smoke-tests (.ci/run). The base
# image is pinned by the digest of its multi-platform index, so a rebuild
# gets the same bytes; the tag beside it is for people. The digest is
# node:24-slim's as published on 2026-08-25. To move to a newer one:
#   docker buildx imagetools inspect node:24-slim   # "Digest:" of the index
# and replace it here (docs/deployment.md, "Container").
ARG NODE_IMAGE=node:24-slim@sha256:a9f5f7c91a432850b2a8a7797adf5eadb6c733ceed61167806cee7ea7fbc29df

FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/build.mjs ./scripts/build.mjs
COPY src ./src
RUN npm run build

FROM ${NODE_IMAGE} AS runtime
# Memory (bench/README.md, findings 14 and 20): one glibc arena, so zstd's
# per-batch buffers on the compression threads are reused instead of each
# thread keeping ~10 MB after use; and a 1 MB young generation, so the
# compressed bodies (native memory, freed when their JS object is collected)
# go soon after they are acknowledged. Peak RSS on a 1 GB backlog 134-148 MB
# instead of 159-177 MB, at no CPU cost.
ENV MALLOC_ARENA_MAX=1
ENV NODE_OPTIONS=--max-semi-space-size=1
ENV NODE_ENV=production
WORKDIR /opt/spoolship
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /src/dist ./dist
COPY config ./config
COPY deploy/docker/spoolship.yaml /etc/spoolship/spoolship.yaml
COPY deploy/docker/healthcheck.mjs ./deploy/docker/healthcheck.mjs
# A fixed numeric uid/gid, so Kubernetes' runAsNonRoot can check it and
# hostPath volumes can be chowned to it (deploy/kubernetes/overlays/daemonset).
# The state directory 0700: the agent makes a looser one so at its start,
# with a WARN, and refuses one it does not own (docs/troubleshooting.md).
RUN groupadd --system --gid 10001 spoolship \
 && useradd --system --uid 10001 --gid spoolship --home-dir /var/lib/spoolship --shell /usr/sbin/nologin spoolship \
 && mkdir -p /var/lib/spoolship /var/spool/spoolship \
 && chown spoolship:spoolship /var/lib/spoolship /var/spool/spoolship \
 && chmod 0700 /var/lib/spoolship \
 && ln -s /opt/spoolship/dist/cli.js /usr/local/bin/spoolship
VOLUME ["/var/lib/spoolship", "/var/spool/spoolship"]
EXPOSE 9464
USER 10001:10001
# Not /opt/spoolship: its ./config/spoolship.yaml is the quick-start config
# (embedded emulator), which the lookup would find before /etc/spoolship.
WORKDIR /var/lib/spoolship
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["node", "/opt/spoolship/deploy/docker/healthcheck.mjs"]
# node runs as PID 1 without an init on purpose: spoolship handles SIGTERM
# itself (drain, checkpoint, exit 0; up to shutdown_timeout_ms, 25 s: give
# `docker stop` more than its default 10 s, --stop-timeout 30), and its one
# child, the `flock` program holding the state lock, is its own to reap; and the
# state_dir lock stores the PID, so a lock left by a killed container names
# PID 1, which the next container's process recognizes as its own and takes over.
STOPSIGNAL SIGTERM
ENTRYPOINT ["spoolship"]
CMD ["run"]
