# faxgate container: multi-stage, production dependencies only, runs as a non-root user.
#   docker build -t faxgate .
#   docker run -d --name faxgate -p 25:2525 -p 127.0.0.1:9464:9464 -v faxgate-data:/var/lib/faxgate \
#     -v /srv/fax-spool:/var/spool/faxgate -v /etc/faxgate:/etc/faxgate:ro faxgate
# with /etc/faxgate/faxgate.yaml made from docker/faxgate.yaml (it listens on 0.0.0.0:2525: the
# container's user cannot bind 25) and its secretsFile /etc/faxgate/faxgate.env.
# Without a mounted config it starts in sandbox mode (embedded emulator) on 0.0.0.0:2525 and
# 0.0.0.0:9464 inside the container, which is handy to try it: docker run -p 2525:2525 faxgate

# ---- build: compile TypeScript and the native SQLite binding ----
FROM node:20-bookworm-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY scripts/prepare.mjs scripts/apply-patches.mjs ./scripts/
COPY patches ./patches
COPY src ./src
RUN npm ci --no-audit --no-fund && npm prune --omit=dev

# ---- runtime ----
FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    FAXGATE_CONFIG=/etc/faxgate/faxgate.yaml
# LibreOffice (no GUI) and fonts: office attachments and printed office files are converted to PDF.
# Its bubblewrap sandbox needs user namespaces, which Docker's default seccomp profile refuses: the
# converter then runs with its hardened profile and link stripping alone (`faxgate doctor` says so).
RUN apt-get update && apt-get install -y --no-install-recommends libreoffice-writer-nogui fonts-dejavu-core \
 && rm -rf /var/lib/apt/lists/*
RUN groupadd --system faxgate && useradd --system --gid faxgate --home-dir /var/lib/faxgate --shell /usr/sbin/nologin faxgate \
 && mkdir -p /var/lib/faxgate /var/spool/faxgate /etc/faxgate \
 && chown faxgate:faxgate /var/lib/faxgate /var/spool/faxgate
WORKDIR /opt/faxgate
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY bin ./bin
COPY web ./web
COPY docker/faxgate.yaml ./docker/faxgate.yaml
COPY config ./config
COPY docker/entrypoint.sh /usr/local/bin/faxgate-entrypoint
USER faxgate
VOLUME ["/var/lib/faxgate", "/var/spool/faxgate"]
# SMTP (unprivileged inside the container; map host port 25 to it), admin health and metrics.
EXPOSE 2525 9464
# Liveness only (/healthz: process, store, disk): an outage at the fax service is /readyz's business
# and must not get a working container restarted.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:9464/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
ENTRYPOINT ["/usr/local/bin/faxgate-entrypoint"]
CMD ["start"]
