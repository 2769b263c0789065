# faxgate container: multi-stage, production dependencies only, runs as a non-root user.
#   docker build -t faxgate .
#   docker run -d --name faxgate -p 25:2525 -p 127.0.0.1:9464:9464 -v faxgate-data:/var/lib/faxgate \
#     -v /srv/fax-spool:/var/spool/faxgate -v /etc/faxgate:/etc/faxgate:ro faxgate
# with /etc/faxgate/faxgate.yaml made from docker/faxgate.yaml (it listens on 0.0.0.0:2525: the
# container's user cannot bind 25) and its secretsFile /etc/faxgate/faxgate.env.
# Without a mounted config it starts in sandbox mode (embedded emulator): SMTP 2525, the web console
# 8025 (user demo, password demo-fax) and health 9464 on every interface of the container, and its
# mails as .eml files in the data volume (/var/lib/faxgate/data/outbox). To try it:
#   docker run --name faxgate -p 127.0.0.1:2525:2525 -p 127.0.0.1:8025:8025 -v faxgate-data:/var/lib/faxgate faxgate
#   docker exec faxgate ls /var/lib/faxgate/data/outbox

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
# LibreOffice (no GUI) and fonts: office attachments and printed office files are converted to PDF:
# Writer, Calc and Impress documents, with the metric twins of Microsoft's fonts (Carlito for
# Calibri, Caladea for Cambria, Liberation for Arial, Times New Roman and Courier New) so that a
# clinic's .docx keeps its line breaks and page count.
# Its bubblewrap sandbox needs user namespaces, which Docker's default seccomp profile refuses: the
# converter then runs with its hardened profile and link stripping alone (`faxgate doctor` says so).
RUN apt-get update && apt-get install -y --no-install-recommends libreoffice-writer-nogui libreoffice-calc-nogui \
    libreoffice-impress-nogui fonts-dejavu-core fonts-crosextra-carlito fonts-crosextra-caladea fonts-liberation \
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
# SMTP (unprivileged inside the container; map host port 25 to it), the web console (the sandbox's,
# or web.listen of a mounted config), admin health and metrics.
EXPOSE 2525 8025 9464
# Liveness only (/healthz: process, store, disk): an outage at the fax service is /readyz's business
# and must not get a working container restarted.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:9464/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
ENTRYPOINT ["/usr/local/bin/faxgate-entrypoint"]
CMD ["start"]
