#!/usr/bin/env bash
# spy.sh: start bin/kxspy (spy/main.go) on 198.18.200.2:15012 (added to the bridge), a logging gRPC proxy in front of istiod,
# with a serving cert for istiod.istio-system.svc and kx-spy.istio-system.svc signed by istiod's own CA (secret
# istio-system/istio-ca-secret), so agents trust it. Point a pod at it with
#   POD_ANNOTATIONS='{"proxy.istio.io/config":"discoveryAddress: kx-spy.istio-system.svc:15012"}' ./pod.sh AGENT_DIR NAME
# (hosts.sh maps kx-spy.istio-system.svc). run/logs/kxspy.log: one JSON line per stream (method, gRPC metadata with the
# authorization value redacted) and per first (Delta)DiscoveryRequest (its node). The spy cannot present the agent's client
# certificate to istiod, so istiod refuses the forwarded xDS stream of an agent that authenticates by certificate (Istio's):
# the pod is not ready through the spy; use it for what the agent sends, not for readiness.
set -euo pipefail
. "$(dirname "$0")/env.sh"
SPY_IP=${SPY_IP:-198.18.200.2}
s=$RUN/spy; mkdir -p "$s"
ip addr show dev "$BR" | grep -q "$SPY_IP/" || ip addr add "$SPY_IP/24" dev "$BR"
kubectl -n istio-system get secret istio-ca-secret -o json | jq -r '.data["ca-cert.pem"]' | base64 -d >"$s/ca.crt"
kubectl -n istio-system get secret istio-ca-secret -o json | jq -r '.data["ca-key.pem"]' | base64 -d >"$s/ca.key"
openssl req -newkey rsa:2048 -nodes -keyout "$s/spy.key" -out "$s/spy.csr" -subj /O=kx-spy 2>/dev/null
echo 'subjectAltName=DNS:istiod.istio-system.svc,DNS:kx-spy.istio-system.svc' >"$s/san.ext"
openssl x509 -req -in "$s/spy.csr" -CA "$s/ca.crt" -CAkey "$s/ca.key" -CAcreateserial -out "$s/spy.crt" -days 1 -extfile "$s/san.ext" 2>/dev/null
kubectl -n istio-system get configmap istio-ca-root-cert -o json | jq -r '.data["root-cert.pem"]' >"$s/root.pem"
setsid nice -n 10 "$BIN/kxspy" -listen "$SPY_IP:15012" -upstream "$BR_IP:15012" -cert "$s/spy.crt" -key "$s/spy.key" -root "$s/root.pem" \
  >"$RUN/logs/kxspy.log" 2>&1 </dev/null & echo $! >"$RUN/pids/kxspy"
sleep 0.5; kill -0 "$(cat "$RUN/pids/kxspy")" || die "kxspy: $(cat "$RUN/logs/kxspy.log")"
log "kxspy on $SPY_IP:15012 -> $BR_IP:15012, log run/logs/kxspy.log"
