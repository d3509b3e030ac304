#!/usr/bin/env bash
# hosts.sh: rewrite /etc/netns/kx-*/{hosts,resolv.conf} of every pod (in place: running containers see the change):
# localhost, the pod itself, istiod.istio-system.svc -> the bridge address (or run/pods/NAME/istiod-ip: a spy), every Service of $NS -> its ClusterIP.
# No cluster DNS: a name missing here fails with EAI_AGAIN, as KUBE.md says.
set -euo pipefail
. "$(dirname "$0")/env.sh"
svcs=$(kubectl -n "$NS" get svc -o json | jq -r --arg ns "$NS" '.items[] | select(.spec.clusterIP != "None") |
  "\(.spec.clusterIP) \(.metadata.name).\($ns).svc.cluster.local \(.metadata.name).\($ns).svc \(.metadata.name).\($ns) \(.metadata.name)"')
for d in "$RUN"/pods/*/; do
  [ -f "$d/ip" ] || continue; name=$(basename "$d"); e=/etc/netns/kx-$name; mkdir -p "$e"
  { echo "127.0.0.1 localhost"; echo "::1 localhost ip6-localhost"; echo "$(cat "$d/ip") $name"
    echo "$(cat "$d/istiod-ip" 2>/dev/null || echo "$BR_IP") istiod.istio-system.svc istiod.istio-system.svc.cluster.local"; echo "$svcs"; } >"$e/hosts.new"
  if [ -f "$e/hosts" ]; then cat "$e/hosts.new" >"$e/hosts"; rm "$e/hosts.new"; else mv "$e/hosts.new" "$e/hosts"; fi
  [ -f "$e/resolv.conf" ] || printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n' >"$e/resolv.conf"
done
