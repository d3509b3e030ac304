#!/usr/bin/env bash
# shapes.sh CMD ...: the objects of the other proxy shapes (issue 45) and their traffic check. Pods: runpod.sh (and vm.sh).
#   chart B               the gateway chart's objects (gwchart.py: istio-system/istio-ingressgateway) + a networking.istio.io
#                         Gateway (selector istio: ingressgateway, HTTP 80, hosts *) and a VirtualService routing / to B:8080.
#                         Then: ./runpod.sh AGENT istio-system app=istio-ingressgateway NAME
#   gwapi GW B            a Gateway API Gateway GW (class istio, HTTP 80) in $NS and an HTTPRoute to B:8080; istiod deploys
#                         GW-istio itself. Then: ./runpod.sh AGENT $NS gateway.networking.k8s.io/gateway-name=GW NAME
#   waypoint WP           a Gateway WP of class istio-waypoint (HBONE 15008) in $NS (istiod needs PILOT_ENABLE_AMBIENT=true:
#                         ISTIOD_ENV=PILOT_ENABLE_AMBIENT=true ./up.sh). Then runpod.sh with gateway-name=WP
#   route NAME SA_URI     outside (the host) -> http://POD_IP:80/headers of runpod.sh pod NAME, up to 30 s: PASS when 200 and
#                         the backend's sidecar saw the gateway's certificate (X-Forwarded-Client-Cert URI=SA_URI), i.e. mTLS
set -euo pipefail
. "$(dirname "$0")/env.sh"
cmd=$1; shift
case $cmd in
chart)
  b=$1
  python3 "$(dirname "$0")/gwchart.py" | kubectl apply -f - >/dev/null
  kubectl apply -f - >/dev/null <<YAML
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: kx-gw, namespace: istio-system}
spec:
  selector: {istio: ingressgateway}
  servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ["*"]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: kx-gw, namespace: istio-system}
spec:
  hosts: ["*"]
  gateways: [kx-gw]
  http: [{route: [{destination: {host: $b.$NS.svc.cluster.local, port: {number: 8080}}}]}]
YAML
  echo "chart: istio-system/istio-ingressgateway, Gateway kx-gw, VirtualService -> $b.$NS:8080" ;;
gwapi)
  gw=$1 b=$2
  kubectl apply -f - >/dev/null <<YAML
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: $gw, namespace: $NS}
spec:
  gatewayClassName: istio
  listeners: [{name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: Same}}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: $gw, namespace: $NS}
spec:
  parentRefs: [{name: $gw}]
  rules: [{backendRefs: [{name: $b, port: 8080}]}]
YAML
  echo "gwapi: Gateway $NS/$gw (class istio), HTTPRoute -> $b:8080" ;;
waypoint)
  wp=$1
  kubectl apply -f - >/dev/null <<YAML
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: $wp, namespace: $NS, labels: {istio.io/waypoint-for: service}}
spec:
  gatewayClassName: istio-waypoint
  listeners: [{name: mesh, port: 15008, protocol: HBONE}]
YAML
  echo "waypoint: Gateway $NS/$wp (class istio-waypoint)" ;;
route)
  name=$1 uri=$2 ip=$(cat "$RUN/pods/$1/ip") out="" t0=$(date +%s%N)
  for _ in $(seq 60); do out=$(curl -s --max-time 3 "http://$ip/headers" || true)
    echo "$out" | grep -q "URI=$uri" && break; sleep 0.5; done
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  if echo "$out" | grep -q "URI=$uri"; then
    echo "PASS route: host -> $ip:80 -> backend 200 over mTLS (XFCC $(echo "$out" | jq -r '.headers | to_entries[] | select(.key | ascii_downcase == "x-forwarded-client-cert") | .value' | grep -o 'URI=[^;]*')) after ${ms} ms"
  else echo "FAIL route: host -> $ip:80: ${out:0:300}"; exit 1; fi ;;
*) die "unknown command $cmd" ;;
esac
