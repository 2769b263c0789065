#!/bin/sh
# Uses /etc/faxgate/faxgate.yaml when it is mounted; otherwise sandbox mode in the data volume.
# In a container, 127.0.0.1 is the container's own loopback, which `docker run -p` cannot reach:
# the sandbox listens on every interface here (SMTP 2525, the web console 8025, health and metrics
# 9464); its data, the outbox of its mails included (data/outbox), is in the volume. A mounted
# config says where to listen itself (docker/faxgate.yaml: 0.0.0.0:2525, as the container's user
# cannot bind port 25; map it with -p 25:2525).
set -e
if [ "$1" = "start" ] && [ ! -f "${FAXGATE_CONFIG:-/nonexistent}" ]; then
  unset FAXGATE_CONFIG
  cd /var/lib/faxgate
  echo "faxgate: no config at /etc/faxgate/faxgate.yaml: starting in SANDBOX mode: SMTP 0.0.0.0:2525, console 0.0.0.0:8025 (map them with -p 127.0.0.1:2525:2525 -p 127.0.0.1:8025:8025), its mails in /var/lib/faxgate/data/outbox" >&2
  shift
  exec node /opt/faxgate/bin/faxgate.js start --smtp-listen "${FAXGATE_SANDBOX_SMTP:-0.0.0.0:2525}" --web-listen "${FAXGATE_SANDBOX_WEB:-0.0.0.0:8025}" --admin-listen "${FAXGATE_SANDBOX_ADMIN:-0.0.0.0:9464}" "$@"
fi
exec node /opt/faxgate/bin/faxgate.js "$@"
