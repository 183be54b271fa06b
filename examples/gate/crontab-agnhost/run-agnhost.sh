#!/bin/sh
# Start agnhost's crd-conversion-webhook (Kubernetes' own Go test webhook) as a pod would
# see it: it builds an in-cluster client at start-up, so it needs a service-account token
# under /run and KUBERNETES_SERVICE_HOST. A private mount namespace gives it that /run
# without touching the machine's. $AGNHOST is the binary (`python -m benchmarks.agnhost_path`).
set -eu
: "${AGNHOST:?set AGNHOST to the agnhost binary}"
export KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT=1
exec unshare -m --propagation private sh -c '
  mount -t tmpfs tmpfs /run &&
  mkdir -p /run/secrets/kubernetes.io/serviceaccount &&
  printf gate > /run/secrets/kubernetes.io/serviceaccount/token &&
  exec "$@"' agnhost "$AGNHOST" crd-conversion-webhook "$@"
