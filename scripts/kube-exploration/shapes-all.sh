#!/usr/bin/env bash
# shapes-all.sh OURS [ROUNDS] [SHAPES]: every shape of issue 45 with Istio's agent and OURS (a checkout), on a cluster
# up.sh made (kube-controller-manager included). SHAPES (default "sidecar chart gwapi vm waypoint ipv6"). For each:
# exec->ready of both agents (bench.sh, ROUNDS rounds, default 3), the traffic checks with each, the warning lines each
# logged. Everything it prints is also in run/shapes.log. The waypoint step restarts istiod with PILOT_ENABLE_AMBIENT=true.
set -uo pipefail
. "$(dirname "$0")/env.sh"
ours=$1 rounds=${2:-3} shapes=${3:-sidecar chart gwapi vm waypoint ipv6}
h=$(cd "$(dirname "$0")" && pwd)
exec > >(tee -a "$RUN/shapes.log") 2>&1
say() { echo "== $(date -u +%H:%M:%S) $*"; }
warns() {   # warning lines of a pod's agent (inspect.sh's pattern), or of a VM's logs
  local f=$RUN/pods/$1/istio-proxy.log; [ -f "$RUN/pods/$1/vm" ] && f=$RUN/pods/$1/root/var/log/istio/istio.log
  local n; n=$(grep -acE $'\t(warn|error|fatal)\t|"level":(40|50|60)[,}]|"level":"(warn|error|fatal)"|\\[(warning|error|critical)\\]' "$f" 2>/dev/null)
  echo "warnings $1 ($2): ${n:-0}"
  grep -aE $'\t(warn|error|fatal)\t|"level":(40|50|60)[,}]|"level":"(warn|error|fatal)"|\\[(warning|error|critical)\\]' "$f" 2>/dev/null | cut -c1-300 | head -8
}
agents=(istio "$ours")
tag() { [ "$1" = istio ] && echo istio || echo ours; }
[ -e "$RUN/pods/bk/ip" ] || "$h/pod.sh" istio bk

for s in $shapes; do case $s in
sidecar)
  say "1 sidecar: check.sh with each agent"
  for ag in "${agents[@]}"; do t=$(tag "$ag"); "$h/pod.sh" "$ag" "${t:0:1}a"; "$h/pod.sh" "$ag" "${t:0:1}b"
    "$h/check.sh" "${t:0:1}a" "${t:0:1}b"; warns "${t:0:1}a" "$t"; "$h/stop.sh" "${t:0:1}a" "${t:0:1}b"; done
  "$h/bench.sh" "$rounds" "${agents[@]}" ;;
chart)
  say "2 gateway chart: outside -> gateway -> bk over mTLS"
  "$h/shapes.sh" chart bk
  for ag in "${agents[@]}"; do t=$(tag "$ag")
    "$h/runpod.sh" "$ag" istio-system app=istio-ingressgateway g1 && "$h/shapes.sh" route g1 spiffe://cluster.local/ns/istio-system/sa/istio-ingressgateway
    warns g1 "$t"; "$h/stop.sh" g1; done
  BENCH_SCRIPT=runpod.sh BENCH_ARGS="istio-system app=istio-ingressgateway" "$h/bench.sh" "$rounds" "${agents[@]}" ;;
gwapi)
  say "3 Gateway API (class istio) with an HTTPRoute -> bk"
  "$h/shapes.sh" gwapi gwa bk
  for ag in "${agents[@]}"; do t=$(tag "$ag")
    "$h/runpod.sh" "$ag" "$NS" gateway.networking.k8s.io/gateway-name=gwa g2 && "$h/shapes.sh" route g2 spiffe://cluster.local/ns/$NS/sa/gwa-istio
    warns g2 "$t"; "$h/stop.sh" g2; done
  BENCH_SCRIPT=runpod.sh BENCH_ARGS="$NS gateway.networking.k8s.io/gateway-name=gwa" "$h/bench.sh" "$rounds" "${agents[@]}" ;;
vm)
  say "4 VM: WorkloadGroup, auto-registration, istio-start.sh"
  for ag in "${agents[@]}"; do t=$(tag "$ag")
    "$h/vm.sh" "$ag" v1 && "$h/vmcheck.sh" v1 bk; warns v1 "$t"; "$h/stop.sh" v1; sleep 12; done
  BENCH_SCRIPT=vm.sh BENCH_PAUSE=12 "$h/bench.sh" "$rounds" "${agents[@]}" ;;
waypoint)
  say "5 waypoint (class istio-waypoint), istiod with PILOT_ENABLE_AMBIENT=true"
  kill -TERM "$(cat "$RUN/pids/istiod")"; sleep 3; ISTIOD_ENV=PILOT_ENABLE_AMBIENT=true UP_STEPS=istiod "$h/up.sh"
  "$h/shapes.sh" waypoint wp
  for ag in "${agents[@]}"; do t=$(tag "$ag")
    READY_TIMEOUT=${WP_TIMEOUT:-25} "$h/runpod.sh" "$ag" "$NS" gateway.networking.k8s.io/gateway-name=wp w1
    sleep 1; echo "w1 ($t) agent exit: $(cat "$RUN/pods/w1/proxy.rc" 2>/dev/null || echo running)"
    tail -5 "$RUN/pods/w1/istio-proxy.log" | cut -c1-400; warns w1 "$t"; "$h/stop.sh" w1; done ;;
ipv6)
  say "6 IPv6-only pod (2001:2:0:200::/64)"
  for ag in "${agents[@]}"; do t=$(tag "$ag")
    POD_FAMILY=6 "$h/pod.sh" "$ag" s6 && ip netns exec kx-s6 curl -s 'http://127.0.0.1:15000/listeners' | grep -E '15021|15090'
    warns s6 "$t"; "$h/stop.sh" s6; done
  for i in $(seq "$rounds"); do for ag in "${agents[@]}"; do
    echo "round $i $(tag "$ag"): $(POD_FAMILY=6 READY_TIMEOUT=30 "$h/pod.sh" "$ag" s6 2>/dev/null | sed -n 's/.*exec->ready \([0-9]*\) ms.*/\1/p')"
    "$h/stop.sh" s6 >/dev/null; done; done ;;
esac; done
say done
