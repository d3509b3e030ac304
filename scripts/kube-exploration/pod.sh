#!/usr/bin/env bash
# pod.sh AGENT NAME: make pod NAME in namespace $NS through Istio's sidecar-injector webhook and run it as a kubelet would.
# AGENT is what the istio-proxy image's /usr/local/bin holds (pilot-agent + envoy):
#   istio          Istio's own agent, bin/istio-pilot-agent (Envoy: $ENVOY, default /work/main/.tools/bin/envoy)
#   CHECKOUT_DIR   our agent from a checkout (bash scripts/build-agent.sh there first): CHECKOUT/bin/pilot-agent.js run by
#                  CHECKOUT/.tools/bin/node; Envoy CHECKOUT/.tools/bin/envoy (or $ENVOY)
#   AGENT_DIR      a dir that already holds pilot-agent and envoy (mkagent.sh)
# The image's own file is laid too: /var/lib/istio/envoy/envoy_bootstrap_tmpl.json (Istio's template, as in proxyv2).
# Objects: ServiceAccount NAME, Service NAME (http 8080, selector app=NAME), the pod (app container: echo.py on 8080 as uid
# 1000, with a readiness probe), netns kx-NAME on the bridge.
# Steps: create (webhook injects) -> status sandbox -> volumes -> istio-init (waits for exit 0) -> status init-done -> istio-proxy
# in the background -> poll http://POD_IP:15021/healthz/ready every 5 ms -> app container -> status ready -> EndpointSlice.
# Env: POD_ANNOTATIONS='{"proxy.istio.io/config": "discoveryAddress: ..."}' adds pod annotations; READY_TIMEOUT (s, 60);
# ISTIOD_HOST_IP: the address istiod.istio-system.svc resolves to in this pod (default the bridge address; spy.sh's for a spy).
# Prints: "NAME ip=... exec->ready N ms" (exec of istio-proxy's process to the first 200 on 15021), or "NOT READY" (exit 1,
# the pod keeps running for inspection). Files in run/pods/NAME: pod.json (as injected), istio-proxy.log, istio-init.log,
# app.log, proxy.pid (the agent's host pid; it runs in its own PID namespace), proxy.rc (exit code, written when the agent exits), exec.istio-proxy (exec time, ms), ip, agent, ready-ms.
set -euo pipefail
. "$(dirname "$0")/env.sh"
[ $# = 2 ] || die "usage: pod.sh istio|CHECKOUT_DIR|AGENT_DIR NAME"
name=$2
if [ "$1" = istio ]; then agent=$RUN/agents/istio; "$(dirname "$0")/mkagent.sh" "$agent" istio 2>/dev/null
elif [ -f "$1/bin/pilot-agent.js" ]; then
  src=$(cd "$1" && pwd); agent=$RUN/agents/$(echo "${src#/}" | tr / _); "$(dirname "$0")/mkagent.sh" "$agent" "$src" 2>/dev/null
else agent=$(cd "$1" && pwd); fi
[ -x "$agent/pilot-agent" ] && [ -x "$agent/envoy" ] || die "$agent needs pilot-agent and envoy (mkagent.sh)"
d=$RUN/pods/$name netns=kx-$name veth=kxh-$name
[ ${#veth} -le 15 ] || die "name too long: $name (max 11 chars)"
[ -e "$d/ip" ] && die "pod $name exists: ./stop.sh $name (or down.sh) first"
mkdir -p "$d"; echo "$agent" >"$d/agent"
# the proxyv2 image's own file under a dir the kubelet lays from run/pods/NAME/img/CONTAINER
tmpl=$d/img/istio-proxy/var/lib/istio/envoy; mkdir -p "$tmpl"
cp "$ISTIO_SRC/tools/packaging/common/envoy_bootstrap.json" "$tmpl/envoy_bootstrap_tmpl.json"

# an address: the first of POD_NET.10.. no pod dir holds (POD_FAMILY=6: POD_NET6::10.., an IPv6-only pod; istiod is reached
# through fwd6.py on the bridge's IPv6 address, started once here)
n=10
if [ "${POD_FAMILY:-4}" = 6 ]; then
  while grep -qx "$POD_NET6::$n" "$RUN"/pods/*/ip 2>/dev/null; do n=$((n + 1)); done; ip=$POD_NET6::$n plen=64 gw=$BR_IP6
  ip -6 addr show dev "$BR" | grep -q "$BR_IP6/" || ip addr add "$BR_IP6/64" dev "$BR" nodad
  [ -f "$RUN/pids/fwd6" ] && kill -0 "$(cat "$RUN/pids/fwd6")" 2>/dev/null || {
    setsid nice -n 10 python3 "$(dirname "$0")/fwd6.py" "$BR_IP6" 15012 "$BR_IP" >"$RUN/logs/fwd6.log" 2>&1 </dev/null &
    echo $! >"$RUN/pids/fwd6"; sleep 0.3; }
  ISTIOD_HOST_IP=${ISTIOD_HOST_IP:-$BR_IP6}
else
  while grep -qx "$POD_NET.$n" "$RUN"/pods/*/ip 2>/dev/null; do n=$((n + 1)); done; ip=$POD_NET.$n plen=24 gw=$BR_IP
fi

# the API objects; the pod goes through the webhook
kubectl -n "$NS" get sa "$name" >/dev/null 2>&1 || kubectl -n "$NS" create sa "$name" >/dev/null
python3 - "$name" "$NS" "$NODE" "${POD_ANNOTATIONS:-{\}}" <<'PY' | kubectl apply -f - >/dev/null
import json, sys
name, ns, node, ann = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns, "labels": {"app": name}},
       "spec": {"selector": {"app": name}, "ports": [{"name": "http", "port": 8080, "targetPort": 8080}]}}
app = {"name": "app", "image": "kx/echo:1", "command": ["python3", "/work/kube-env/echo.py", "8080"],
       "ports": [{"name": "http", "containerPort": 8080}],
       "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}, "periodSeconds": 5},
       "securityContext": {"runAsUser": 1000, "runAsGroup": 1000}}
pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "annotations": ann,
       "labels": {"app": name, "version": "v1"}},
       "spec": {"nodeName": node, "serviceAccountName": name, "containers": [app], "terminationGracePeriodSeconds": 30}}
json.dump({"apiVersion": "v1", "kind": "List", "items": [svc, pod]}, sys.stdout)
PY
kubelet pod "$NS" "$name" >"$d/pod.json"
jq -e '.spec.initContainers[]? | select(.name == "istio-proxy")' "$d/pod.json" >/dev/null || die "the webhook did not inject istio-proxy"

# the sandbox: netns, veth on the bridge, /etc/netns hosts (regenerated for every pod: services may come later)
ip netns add "$netns"; ip link add "$veth" type veth peer name eth0 netns "$netns"
ip link set "$veth" master "$BR" up
ip -n "$netns" addr add "$ip/$plen" dev eth0 nodad 2>/dev/null || ip -n "$netns" addr add "$ip/$plen" dev eth0
ip -n "$netns" link set eth0 up; ip -n "$netns" link set lo up
ip -n "$netns" route add default via "$gw"
echo "$ip" >"$d/ip"; echo "${ISTIOD_HOST_IP:-$BR_IP}" >"$d/istiod-ip"
[ -f "$RUN/logs/kxspy.log" ] && wc -l <"$RUN/logs/kxspy.log" >"$d/spy-from"   # inspect.sh: this pod's streams start after it
"$(dirname "$0")/hosts.sh"

kubelet status "$NS" "$name" sandbox "$ip" "$BR_IP"
kubelet volumes "$NS" "$name" "$d"
kubelet run "$netns" "$NS" "$name" istio-init "$d" "$agent" >"$d/istio-init.log" 2>&1 || die "istio-init failed: $d/istio-init.log"
kubelet status "$NS" "$name" init-done "$ip" "$BR_IP"

# istio-proxy, a native sidecar: in its own session; its pid is the agent's (kubelet.py execs), its exit code lands in proxy.rc
rm -f "$d/proxy.rc" "$d/exec.istio-proxy"
# Its own PID namespace, as a container has (kubelet.py makes none): the agent is pid 1 there and sees only its own
# processes (our agent's leftover-Envoy scan of /proc would otherwise kill other pods' Envoys). proxy.pid is the agent's
# host pid (the child of unshare; unshare returns its exit code).
setsid bash -c 'bash -c "echo \$\$ >$1/unshare.pid; exec nice -n 10 unshare --pid --fork --kill-child --mount-proc python3 $2/kubelet.py run $3 $4 $5 istio-proxy $1 $6" >$1/istio-proxy.log 2>&1; echo $? >$1/proxy.rc' \
  _ "$d" "$KUBE_SH" "$netns" "$NS" "$name" "$agent" </dev/null >/dev/null 2>&1 &
for _ in $(seq 200); do u=$(cat "$d/unshare.pid" 2>/dev/null) && pid=$(pgrep -P "$u") && echo "$pid" >"$d/proxy.pid" && break; sleep 0.01; done
url=http://$ip:15021/healthz/ready; [ "$plen" = 64 ] && url="http://[$ip]:15021/healthz/ready"
if ms=$(python3 "$(dirname "$0")/ready.py" "$url" "$d/exec.istio-proxy" "${READY_TIMEOUT:-60}"); then
  echo "$ms" >"$d/ready-ms"
else
  echo "$name ip=$ip NOT READY (agent $agent; log $d/istio-proxy.log)"; exit 1
fi

# the app container, once the sidecar is started (as the kubelet does for native sidecars)
setsid bash -c 'bash -c "echo \$\$ >$1/app.pid; exec nice -n 10 python3 $2/kubelet.py run $3 $4 $5 app $1 $6" >$1/app.log 2>&1' \
  _ "$d" "$KUBE_SH" "$netns" "$NS" "$name" "$agent" </dev/null >/dev/null 2>&1 &
kubelet status "$NS" "$name" ready "$ip" "$BR_IP"
[ "$plen" = 64 ] || kubelet slice "$NS" "$name"   # kubelet.py writes IPv4 slices only
echo "$name ip=$ip exec->ready $ms ms (agent $(cat "$agent/pilot-agent" 2>/dev/null | grep -o '/work/[^ ]*pilot-agent.js' || readlink "$agent/pilot-agent"))"
