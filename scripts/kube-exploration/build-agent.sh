#!/usr/bin/env bash
# Build Istio's own pilot-agent (reference agent) into /work/kube-env/bin/istio-pilot-agent.
# Waits for an istiod build that is running, so the two do not compile the same packages twice.
set -euo pipefail
while pgrep -f 'go build -o /work/kube-env/bin/pilot-discovery' >/dev/null; do sleep 5; done
t=$(date +%s)
cd ${ISTIO_SRC:-/work/istio-src}
GOTOOLCHAIN=local GOFLAGS=-buildvcs=false nice -n 10 go build -ldflags "-X istio.io/istio/pkg/version.buildVersion=$(cat VERSION).0-kx" -o /work/kube-env/bin/istio-pilot-agent ./pilot/cmd/pilot-agent
echo "built istio-pilot-agent in $(( $(date +%s) - t )) s"
