#!/usr/bin/env bash
# inspect.sh NAME: save what the sidecar of pod NAME shows, into run/pods/NAME/ (and print the paths):
#   bootstrap.json  Envoy admin /config_dump?include_eds, its BootstrapConfigDump (.bootstrap) only
#   adsz.json       istiod's /debug/adsz entry for the proxy (node metadata as istiod parsed it, watches)
#   warnings.txt    every line of istio-proxy.log at warn or above (Istio: "warn"/"error" level field; ours: pino levels)
#   injected.json   the istio-proxy and istio-init containers and the volumes, as the webhook rendered them
#   upstream.jsonl  (pods made with ISTIOD_HOST_IP=spy, spy.sh) what the agent sent istiod: each stream's method and gRPC
#                   metadata, the node of its first ADS request; upstream-node.json = {"node": that node} for diffnode.py.
#                   The spy log from this pod's start on: make spied pods one at a time.
set -euo pipefail
. "$(dirname "$0")/env.sh"
name=$1 d=$RUN/pods/$1
ip netns exec "kx-$name" curl -s --max-time 5 'http://127.0.0.1:15000/config_dump?include_eds' |
  jq '.configs[] | select(."@type" | endswith("BootstrapConfigDump")) | .bootstrap' >"$d/bootstrap.json"
id=$(jq -r .node.id "$d/bootstrap.json")
curl -s "http://$ISTIOD_HTTP/debug/adsz?proxyID=${id#*~*~}" >"$d/adsz.json" || true
[ -s "$d/adsz.json" ] && jq -e . "$d/adsz.json" >/dev/null 2>&1 || curl -s "http://$ISTIOD_HTTP/debug/adsz" |
  jq --arg n "$name." '{clients: [.clients[]? | select(.connectionId | contains($n))]}' >"$d/adsz.json"
grep -aE $'\t(warn|error|fatal)\t|"level":(40|50|60)[,}]|"level":"(warn|error|fatal)"|\\[(warning|error|critical)\\]' "$d/istio-proxy.log" >"$d/warnings.txt" || true
jq '{istio_proxy: ([.spec.initContainers[]?, .spec.containers[]] | map(select(.name == "istio-proxy")) | first),
     istio_init: ([.spec.initContainers[]? | select(.name == "istio-init")] | first),
     volumes: .spec.volumes, annotations: .metadata.annotations, labels: .metadata.labels}' "$d/pod.json" >"$d/injected.json"
echo "$d/bootstrap.json node.id=$id cluster=$(jq -r .node.cluster "$d/bootstrap.json")"
echo "$d/adsz.json $(jq -c '[.clients[]?.connectionId]' "$d/adsz.json" 2>/dev/null)"
echo "$d/warnings.txt $(wc -l <"$d/warnings.txt") lines"
echo "$d/injected.json"
if [ -f "$d/spy-from" ] && [ "$(cat "$d/istiod-ip")" != "$BR_IP" ]; then
  tail -n +"$(( $(cat "$d/spy-from") + 1 ))" "$RUN/logs/kxspy.log" >"$d/upstream.jsonl"
  jq -s '{node: ([.[] | select(.first_request_node) | .first_request_node] | first)}' "$d/upstream.jsonl" >"$d/upstream-node.json"
  echo "$d/upstream.jsonl $(jq -r '.stream' "$d/upstream.jsonl" | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
fi
