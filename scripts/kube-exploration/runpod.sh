#!/usr/bin/env bash
# runpod.sh AGENT PODNS SELECTOR NAME: run a pod that a controller made (the gateway chart's Deployment, istiod's Gateway API
# or waypoint Deployment) as a kubelet would, under the short NAME (run/pods/NAME, netns kx-NAME; at most 11 characters).
# AGENT as pod.sh takes it (istio, a checkout, an agent dir). SELECTOR: a label selector in PODNS; the first pod it matches
# that no runpod.sh runs yet is taken (waits up to 60 s for one: the ReplicaSet controller makes it).
# Steps: bind to the Node (no scheduler) -> netns on the bridge, the pod's sysctls applied in it (the chart's
# net.ipv4.ip_unprivileged_port_start=0) -> status sandbox -> volumes -> istio-init if injected -> istio-proxy (whether a
# native sidecar or the main container) in its own PID namespace -> poll POD_IP:15021/healthz/ready every 5 ms -> status ready.
# Prints "NAME pod=POD ip=IP exec->ready N ms" or "NOT READY" (exit 1; the pod keeps running). Files as pod.sh's, plus
# run/pods/NAME/{ns,pod} (stop.sh deletes that pod; its controller makes another).
set -euo pipefail
. "$(dirname "$0")/env.sh"
[ $# = 4 ] || die "usage: runpod.sh istio|CHECKOUT_DIR|AGENT_DIR PODNS SELECTOR NAME"
pns=$2 sel=$3 name=$4
if [ "$1" = istio ]; then agent=$RUN/agents/istio; "$(dirname "$0")/mkagent.sh" "$agent" istio 2>/dev/null
elif [ -f "$1/bin/pilot-agent.js" ]; then
  src=$(cd "$1" && pwd); agent=$RUN/agents/$(echo "${src#/}" | tr / _); "$(dirname "$0")/mkagent.sh" "$agent" "$src" 2>/dev/null
else agent=$(cd "$1" && pwd); fi
d=$RUN/pods/$name netns=kx-$name veth=kxh-$name
[ ${#veth} -le 15 ] || die "name too long: $name (max 11 chars)"
[ -e "$d/ip" ] && die "pod $name exists: ./stop.sh $name (or down.sh) first"
taken=$(cat "$RUN"/pods/*/pod 2>/dev/null || true) pod=""
for _ in $(seq 120); do
  pod=$(kubectl -n "$pns" get pods -l "$sel" -o json | jq -r --arg t "$taken" \
    '[.items[] | select(.metadata.deletionTimestamp == null) | .metadata.name | select(. as $n | ($t | split("\n") | index($n)) == null)] | first // empty')
  [ -n "$pod" ] && break; sleep 0.5
done
[ -n "$pod" ] || die "no pod for $sel in $pns (is kube-controller-manager running? run/logs/kcm.log)"
mkdir -p "$d"; echo "$agent" >"$d/agent"; echo "$pns" >"$d/ns"; echo "$pod" >"$d/pod"
tmpl=$d/img/istio-proxy/var/lib/istio/envoy; mkdir -p "$tmpl"
cp "$ISTIO_SRC/tools/packaging/common/envoy_bootstrap.json" "$tmpl/envoy_bootstrap_tmpl.json"
n=10; while grep -qx "$POD_NET.$n" "$RUN"/pods/*/ip 2>/dev/null; do n=$((n + 1)); done; ip=$POD_NET.$n

[ -n "$(kubectl -n "$pns" get pod "$pod" -o jsonpath='{.spec.nodeName}')" ] || kubelet bind "$pns" "$pod" "$NODE"
kubelet pod "$pns" "$pod" >"$d/pod.json"
jq -e '[.spec.initContainers[]?, .spec.containers[]] | map(select(.name == "istio-proxy")) | length == 1' "$d/pod.json" >/dev/null ||
  die "pod $pod has no istio-proxy container"

ip netns add "$netns"; ip link add "$veth" type veth peer name eth0 netns "$netns"
ip link set "$veth" master "$BR" up
ip -n "$netns" addr add "$ip/24" dev eth0; ip -n "$netns" link set eth0 up; ip -n "$netns" link set lo up
ip -n "$netns" route add default via "$BR_IP"
for kv in $(jq -r '.spec.securityContext.sysctls[]? | "\(.name)=\(.value)"' "$d/pod.json"); do ip netns exec "$netns" sysctl -qw "$kv"; done
echo "$ip" >"$d/ip"; echo "${ISTIOD_HOST_IP:-$BR_IP}" >"$d/istiod-ip"
"$(dirname "$0")/hosts.sh"

kubelet status "$pns" "$pod" sandbox "$ip" "$BR_IP"
kubelet volumes "$pns" "$pod" "$d"
if jq -e '.spec.initContainers[]? | select(.name == "istio-init")' "$d/pod.json" >/dev/null; then
  kubelet run "$netns" "$pns" "$pod" istio-init "$d" "$agent" >"$d/istio-init.log" 2>&1 || die "istio-init failed: $d/istio-init.log"
fi
kubelet status "$pns" "$pod" init-done "$ip" "$BR_IP"
rm -f "$d/proxy.rc" "$d/exec.istio-proxy"
setsid bash -c 'bash -c "echo \$\$ >$1/unshare.pid; exec nice -n 10 unshare --pid --fork --kill-child --mount-proc python3 $2/kubelet.py run $3 $4 $5 istio-proxy $1 $6" >$1/istio-proxy.log 2>&1; echo $? >$1/proxy.rc' \
  _ "$d" "$KUBE_SH" "$netns" "$pns" "$pod" "$agent" </dev/null >/dev/null 2>&1 &
for _ in $(seq 200); do u=$(cat "$d/unshare.pid" 2>/dev/null) && pid=$(pgrep -P "$u") && echo "$pid" >"$d/proxy.pid" && break; sleep 0.01; done
if ms=$(python3 "$(dirname "$0")/ready.py" "http://$ip:15021/healthz/ready" "$d/exec.istio-proxy" "${READY_TIMEOUT:-60}"); then
  echo "$ms" >"$d/ready-ms"
else
  echo "$name pod=$pod ip=$ip NOT READY rc=$(cat "$d/proxy.rc" 2>/dev/null) (agent $agent; log $d/istio-proxy.log)"; exit 1
fi
kubelet status "$pns" "$pod" ready "$ip" "$BR_IP"
echo "$name pod=$pod ip=$ip exec->ready $ms ms (agent $(grep -o '/work/[^ ]*pilot-agent.js' "$agent/pilot-agent" 2>/dev/null || readlink "$agent/pilot-agent"))"
