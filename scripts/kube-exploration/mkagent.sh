#!/usr/bin/env bash
# mkagent.sh DIR istio|WORKTREE: make an agent dir for pod.sh (what the kubelet binds over /usr/local/bin of the
# istio-proxy and istio-init containers): DIR/pilot-agent and DIR/envoy.
#   istio      DIR/pilot-agent -> bin/istio-pilot-agent (Istio's own agent, built from ISTIO_SRC)
#   WORKTREE   DIR/pilot-agent = a sh wrapper: exec WORKTREE/.tools/bin/node --disable-sigusr1 WORKTREE/bin/pilot-agent.js
#              (run `bash scripts/build-agent.sh` in WORKTREE first)
# Envoy: ENVOY (default WORKTREE/.tools/bin/envoy, or /work/main/.tools/bin/envoy for istio).
set -euo pipefail
. "$(dirname "$0")/env.sh"
d=$1 src=$2; mkdir -p "$d"
if [ "$src" = istio ]; then
  [ -x "$BIN/istio-pilot-agent" ] || die "missing $BIN/istio-pilot-agent"
  ln -sfn "$BIN/istio-pilot-agent" "$d/pilot-agent"; envoy=${ENVOY:-/work/main/.tools/bin/envoy}
else
  src=$(cd "$src" && pwd); [ -f "$src/dist/bundle/pilot-agent.js" ] || die "no $src/dist/bundle: run bash scripts/build-agent.sh in $src"
  rm -f "$d/pilot-agent"
  printf '#!/bin/sh\nexec %s --disable-sigusr1 %s "$@"\n' "$src/.tools/bin/node" "$src/bin/pilot-agent.js" >"$d/pilot-agent"
  chmod 0755 "$d/pilot-agent"; envoy=${ENVOY:-$src/.tools/bin/envoy}
fi
[ -x "$envoy" ] || die "no envoy at $envoy"
ln -sfn "$envoy" "$d/envoy"; log "agent dir $d: pilot-agent ($src), envoy $envoy"
