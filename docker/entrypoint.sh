#!/bin/sh
# Uses /etc/faxgate/faxgate.yaml when it is mounted; otherwise sandbox mode in the data volume.
set -e
if [ "$1" = "start" ] && [ ! -f "${FAXGATE_CONFIG:-/nonexistent}" ]; then
  unset FAXGATE_CONFIG
  cd /var/lib/faxgate
  echo "faxgate: no config at /etc/faxgate/faxgate.yaml: starting in SANDBOX mode" >&2
fi
exec node /opt/faxgate/bin/faxgate.js "$@"
