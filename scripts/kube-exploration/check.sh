#!/usr/bin/env bash
# check.sh A B: the Done-means steps of issue 34 against two running pods (pod.sh), A the client, B the server.
# Prints one "PASS|FAIL step: detail" line per step and exits 1 if any failed:
#   1 ready        both sidecars answer 200 on POD_IP:15021/healthz/ready
#   2 identity     A -> http://B:8080 (as the app's uid 1000 in A's netns, through A's sidecar) answers 200 and B's sidecar
#                  put A's SPIFFE id (spiffe://cluster.local/ns/$NS/sa/A) in X-Forwarded-Client-Cert
#   3 strict       with PeerAuthentication STRICT in $NS: plaintext from the host to B_IP:8080 is refused, A -> B still works
#                  (the PeerAuthentication is removed again afterwards)
#   4 syncz        istiod's /debug/syncz lists both proxies (A.$NS and B.$NS)
#   5 drain        B's preStop hook (pilot-agent request --debug-port=15020 POST drain) exits 0; Envoy's server.state and
#                  listener_manager.total_listeners_draining shown after it
#   6 sigterm      SIGTERM to B's agent: it exits 0 (time to exit shown). B is gone after this step: stop.sh B; pod.sh again.
# SKIP_TERM=1 skips steps 5-6 (B keeps running).
set -uo pipefail
. "$(dirname "$0")/env.sh"
a=$1 b=$2 fail=0
ipa=$(cat "$RUN/pods/$a/ip") ipb=$(cat "$RUN/pods/$b/ip")
ok() { echo "PASS $1: $2"; }
ko() { echo "FAIL $1: $2"; fail=1; }
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 3 "$1"; }
as_app() { ip netns exec "kx-$1" setpriv --reuid=1000 --regid=1000 --clear-groups "${@:2}"; }
a_to_b() { as_app "$a" curl -s --max-time 5 "http://$b:8080/headers"; }

ra=$(code "http://$ipa:15021/healthz/ready") rb=$(code "http://$ipb:15021/healthz/ready")
[ "$ra$rb" = 200200 ] && ok ready "$a $ipa, $b $ipb" || ko ready "$a: $ra, $b: $rb"

"$(dirname "$0")/hosts.sh"
spiffe="spiffe://cluster.local/ns/$NS/sa/$a" out=""
for _ in $(seq 40); do out=$(a_to_b) && echo "$out" | grep -q "URI=$spiffe" && break; sleep 0.5; done
if echo "$out" | grep -q "URI=$spiffe"; then ok identity "$a -> $b: XFCC $(echo "$out" | jq -r '.headers | to_entries[] | select(.key | ascii_downcase == "x-forwarded-client-cert") | .value' | cut -c1-160)"
else ko identity "$a -> $b: ${out:-no answer}"; fi

kubectl apply -f - >/dev/null <<YAML
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: $NS}
spec: {mtls: {mode: STRICT}}
YAML
plain=""; for _ in $(seq 40); do plain=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://$ipb:8080/headers"; echo " rc=$?")
  case $plain in 200*) sleep 0.5 ;; *) break ;; esac; done
out=$(a_to_b)
if [[ $plain != 200* ]] && echo "$out" | grep -q "URI=$spiffe"; then ok strict "plaintext host -> $ipb:8080 refused (http ${plain}), $a -> $b over mTLS 200"
else ko strict "plaintext: http ${plain}; $a -> $b: ${out:0:200}"; fi
kubectl -n "$NS" delete peerauthentication default >/dev/null

sync=$(curl -s "http://$ISTIOD_HTTP/debug/syncz")
ids=$(echo "$sync" | jq -r '.[].proxy' | sort | tr '\n' ' ')
echo "$ids" | grep -q "$a\.$NS" && echo "$ids" | grep -q "$b\.$NS" && ok syncz "$ids" || ko syncz "istiod lists: $ids"

[ -n "${SKIP_TERM:-}" ] && exit $fail
d=$RUN/pods/$b
if kubelet hook "kx-$b" "$NS" "$b" istio-proxy "$d" "$(cat "$d/agent")" >"$d/prestop.log" 2>&1; then
  st=$(ip netns exec "kx-$b" curl -s --max-time 2 'http://127.0.0.1:15000/stats?filter=^(server.state|listener_manager.total_listeners_draining)$' | tr '\n' ' ')
  ok drain "preStop exit 0; envoy: ${st:-admin gone}"
else ko drain "preStop exit $?: $(tail -3 "$d/prestop.log")"; fi
pid=$(cat "$d/proxy.pid") t0=$(date +%s%N)
kill -TERM "$pid"
for _ in $(seq 600); do [ -s "$d/proxy.rc" ] && break; sleep 0.1; done
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
rc=$(cat "$d/proxy.rc" 2>/dev/null)
[ "$rc" = 0 ] && ok sigterm "agent exited 0 after ${ms} ms" || ko sigterm "agent exit ${rc:-still running after ${ms} ms}"
exit $fail
