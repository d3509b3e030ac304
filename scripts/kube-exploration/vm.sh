#!/usr/bin/env bash
# vm.sh AGENT NAME: a VM through a WorkloadGroup with auto-registration, booted by Istio's own istio-start.sh (KUBE.md).
# Once per cluster: ServiceAccount vm, WorkloadGroup vm in $NS (labels app=vm, port http 8080, the docs' readiness probe:
# httpGet /ready on 8080), Service vm (app=vm, 8080). Then the VM NAME: a netns on the bridge (run/pods/NAME, file "vm"),
# what `istioctl x workload entry configure -f wg --autoregister --ingressIP BRIDGE` writes (/work/shared/kube/vmconfig.py:
# cluster.env, mesh.yaml, hosts; root-cert.pem from istio-ca-root-cert, istio-token from `kubectl create token vm
# --audience istio-ca`) laid where Istio's docs put them: /etc/certs/root-cert.pem, /var/run/secrets/tokens/istio-token,
# /var/lib/istio/envoy/cluster.env, /etc/istio/config/mesh, Istio's envoy_bootstrap_tmpl.json in /var/lib/istio/envoy;
# the app (echo.py on 8080 as uid 1000); then `istio-start.sh` as systemd runs it: root, cwd /, in a mount, UTS (hostname NAME)
# and PID namespace, AGENT's pilot-agent and envoy over /usr/local/bin, `sudo` a stand-in on setpriv (uid/gid 1337, USER=istio-proxy).
# Prints "NAME ip=IP exec->ready N ms" (istio-start.sh's exec to the first 200 on IP:15021/healthz/ready). Logs:
# run/pods/NAME/root/var/log/istio/istio{,.err}.log, start.log (istio-start.sh's own output: iptables).
set -euo pipefail
. "$(dirname "$0")/env.sh"
[ $# = 2 ] || die "usage: vm.sh istio|CHECKOUT_DIR|AGENT_DIR NAME"
name=$2
if [ "$1" = istio ]; then agent=$RUN/agents/istio; "$(dirname "$0")/mkagent.sh" "$agent" istio 2>/dev/null
elif [ -f "$1/bin/pilot-agent.js" ]; then
  src=$(cd "$1" && pwd); agent=$RUN/agents/$(echo "${src#/}" | tr / _); "$(dirname "$0")/mkagent.sh" "$agent" "$src" 2>/dev/null
else agent=$(cd "$1" && pwd); fi
d=$RUN/pods/$name netns=kx-$name veth=kxh-$name
[ ${#veth} -le 15 ] || die "name too long: $name (max 11 chars)"
[ -e "$d/ip" ] && die "pod $name exists: ./stop.sh $name (or down.sh) first"

kubectl -n "$NS" get workloadgroup vm >/dev/null 2>&1 || {
  kubectl -n "$NS" create sa vm --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  kubectl apply -f - >/dev/null <<YAML
apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: {name: vm, namespace: $NS}
spec:
  metadata: {labels: {app: vm}}
  template: {serviceAccount: vm, ports: {http: 8080}}
  probe: {periodSeconds: 5, initialDelaySeconds: 1, httpGet: {port: 8080, path: /ready}}
---
apiVersion: v1
kind: Service
metadata: {name: vm, namespace: $NS, labels: {app: vm}}
spec: {selector: {app: vm}, ports: [{name: http, port: 8080, targetPort: 8080}]}
YAML
  log "WorkloadGroup $NS/vm, Service vm"; }

mkdir -p "$d"; echo "$agent" >"$d/agent"; touch "$d/vm"
r=$d/root; mkdir -p "$r"/{etc/certs,etc/istio/config,etc/istio/proxy,var/lib/istio/envoy,var/run/secrets/tokens,var/log/istio,cfg,shim}
kubectl -n "$NS" get workloadgroup vm -o json >"$d/wg.json"
kubectl -n istio-system get configmap istio -o json >"$d/mesh-cm.json"
kubectl -n istio-system get configmap istio-sidecar-injector -o json >"$d/inj-cm.json"
python3 "$KUBE_SH/vmconfig.py" "$d/wg.json" "$d/mesh-cm.json" "$d/inj-cm.json" "$r/cfg" --autoregister --ingressIP "$BR_IP"
kubectl -n "$NS" get configmap istio-ca-root-cert -o jsonpath='{.data.root-cert\.pem}' >"$r/etc/certs/root-cert.pem"
kubectl -n "$NS" create token vm --audience istio-ca --duration 1h >"$r/var/run/secrets/tokens/istio-token"
cp "$r/cfg/cluster.env" "$r/var/lib/istio/envoy/cluster.env"; cp "$r/cfg/mesh.yaml" "$r/etc/istio/config/mesh"
cp "$ISTIO_SRC/tools/packaging/common/envoy_bootstrap.json" "$r/var/lib/istio/envoy/envoy_bootstrap_tmpl.json"
chown -R 1337:1337 "$r/etc/certs" "$r/etc/istio" "$r/var/lib/istio" "$r/var/run/secrets" "$r/var/log/istio"
cat >"$r/shim/sudo" <<'SH'
#!/bin/bash
# sudo -E -u USER -s SHELL -c CMD (what istio-start.sh runs), played with setpriv: uid/gid 1337 (istio-proxy), env kept
while [ $# -gt 0 ]; do case $1 in -E) shift ;; -u) u=$2; shift 2 ;; -s) sh=$2; shift 2 ;; -c) c=$2; shift 2 ;; *) echo "sudo stand-in: $1?" >&2; exit 1 ;; esac; done
[ "$u" = istio-proxy ] || { echo "sudo stand-in: only istio-proxy (got $u)" >&2; exit 1; }
export USER=istio-proxy LOGNAME=istio-proxy HOME=/var/lib/istio
exec setpriv --reuid=1337 --regid=1337 --clear-groups "$sh" -c "$c"
SH
chmod 0755 "$r/shim/sudo"
for m in /etc/certs /var/log/istio; do [ -d "$m" ] || { mkdir -p "$m"; echo "$m" >>"$RUN/created-dirs"; }; done

n=10; while grep -qx "$POD_NET.$n" "$RUN"/pods/*/ip 2>/dev/null; do n=$((n + 1)); done; ip=$POD_NET.$n
ip netns add "$netns"; ip link add "$veth" type veth peer name eth0 netns "$netns"
ip link set "$veth" master "$BR" up
ip -n "$netns" addr add "$ip/24" dev eth0; ip -n "$netns" link set eth0 up; ip -n "$netns" link set lo up
ip -n "$netns" route add default via "$BR_IP"
echo "$ip" >"$d/ip"; echo "$BR_IP" >"$d/istiod-ip"
"$(dirname "$0")/hosts.sh"
cat "$r/cfg/hosts" >>"/etc/netns/$netns/hosts"   # istioctl's hosts file, appended to /etc/hosts as the docs say

setsid bash -c 'echo $$ >$1/vmapp.pid; exec ip netns exec $2 setpriv --reuid=1000 --regid=1000 --clear-groups python3 $3/echo.py 8080' \
  _ "$d" "$netns" "$(cd "$(dirname "$0")" && pwd)" >"$d/app.log" 2>&1 </dev/null &
# the boot: mounts in a fresh mount namespace, then istio-start.sh execs (stamp first) as systemd's unit would
cat >"$d/boot.sh" <<SH
set -e
mount --make-rprivate /
for p in etc/certs etc/istio var/lib/istio var/run/secrets var/log/istio; do mount --bind "$r/\$p" "/\$p"; done
mount --bind "$agent" /usr/local/bin
hostname "$name"
export PATH="$r/shim:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" HOME=/root USER=root
cd /
date +%s%3N >"$d/exec.istio-proxy"
exec env -i PATH="\$PATH" HOME=/root USER=root LOGNAME=root bash "$ISTIO_SRC/tools/packaging/common/istio-start.sh"
SH
rm -f "$d/proxy.rc"
setsid bash -c 'bash -c "echo \$\$ >$1/unshare.pid; exec nice -n 10 ip netns exec $2 unshare --mount --uts --pid --fork --kill-child --mount-proc bash $1/boot.sh" >$1/start.log 2>&1; echo $? >$1/proxy.rc' \
  _ "$d" "$netns" </dev/null >/dev/null 2>&1 &
for _ in $(seq 200); do u=$(cat "$d/unshare.pid" 2>/dev/null) && pid=$(pgrep -P "$u") && echo "$pid" >"$d/proxy.pid" && break; sleep 0.01; done
if ms=$(python3 "$(dirname "$0")/ready.py" "http://$ip:15021/healthz/ready" "$d/exec.istio-proxy" "${READY_TIMEOUT:-60}"); then
  echo "$ms" >"$d/ready-ms"
else
  echo "$name ip=$ip NOT READY rc=$(cat "$d/proxy.rc" 2>/dev/null) (agent $agent; logs $r/var/log/istio, $d/start.log)"; exit 1
fi
echo "$name ip=$ip exec->ready $ms ms (agent $(grep -o '/work/[^ ]*pilot-agent.js' "$agent/pilot-agent" 2>/dev/null || readlink "$agent/pilot-agent"))"
