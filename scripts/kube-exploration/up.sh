#!/usr/bin/env bash
# up.sh: start etcd, kube-apiserver and istiod (Kubernetes mode) and apply what a default Istio install makes.
# Prints one line per step; ends with "up: ..." (about 60-90 s on a busy 2-core machine). Idempotent: a running
# control plane is kept. State and logs in run/ (run/logs/*.log). Stop with down.sh.
set -euo pipefail
. "$(dirname "$0")/env.sh"
[ "$(id -u)" = 0 ] || die "run as root (netns, mounts)"
for b in etcd kube-apiserver kubectl pilot-discovery; do [ -x "$BIN/$b" ] || [ -n "${UP_STEPS:-}" ] || die "missing $BIN/$b (build it: README.md)"; done
mkdir -p "$RUN"/{pki,logs,pids,pods,etcd,istiod}
alive() { [ -f "$RUN/pids/$1" ] && kill -0 "$(cat "$RUN/pids/$1")" 2>/dev/null; }
start() {   # NAME CMD...: background, own session, niced; pid in run/pids/NAME, log in run/logs/NAME.log
  local n=$1; shift; alive "$n" && { log "$n already running"; return 0; }
  setsid nice -n 10 "$@" >"$RUN/logs/$n.log" 2>&1 </dev/null & echo $! >"$RUN/pids/$n"
}
wait_for() {   # SECONDS DESC CMD...
  local n=$1 d=$2; shift 2; local t=$((SECONDS + n))
  until "$@" >/dev/null 2>&1; do [ $SECONDS -lt $t ] || die "timed out waiting for $d"; sleep 0.5; done
}

pki() {   # a CA; the apiserver's serving cert; an admin client cert (system:masters); the service-account key pair
  local p=$RUN/pki; [ -f "$p/admin.crt" ] && return 0
  cd "$p"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=kx-ca 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr -subj /CN=kube-apiserver 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,IP:%s,IP:%s,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\n' \
    "$BR_IP" "${SVC_CIDR%.0/*}.1" >san.ext
  openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out apiserver.crt -days 2 -extfile san.ext 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -keyout admin.key -out admin.csr -subj "/O=system:masters/CN=kx-admin" 2>/dev/null
  openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out admin.crt -days 2 2>/dev/null
  openssl genrsa -out sa.key 2048 2>/dev/null; openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  cd - >/dev/null
  b64() { base64 -w0 <"$p/$1"; }
  printf 'apiVersion: v1\nkind: Config\ncurrent-context: kx\nclusters:\n- name: kx\n  cluster: {server: "%s", certificate-authority-data: %s}\ncontexts:\n- name: kx\n  context: {cluster: kx, user: admin}\nusers:\n- name: admin\n  user: {client-certificate-data: %s, client-key-data: %s}\n' \
    "$KK_API" "$(b64 ca.crt)" "$(b64 admin.crt)" "$(b64 admin.key)" >"$KUBECONFIG"
  log "pki: CA, apiserver, admin, service-account keys in run/pki"
}

imagedirs() {   # kubelet.py binds the image dirs over these: the host needs them as (empty) mount points; down.sh removes them
  for r in /etc/istio /var/run/secrets /var/lib/istio; do
    [ -d "$r" ] || { mkdir -p "$r"; echo "$r" >>"$RUN/created-dirs"; log "made mount point $r (down.sh removes it)"; }; done
}

bridge() {
  ip link show "$BR" >/dev/null 2>&1 && return 0
  ip link add "$BR" type bridge; ip addr add "$BR_IP/24" dev "$BR"; ip link set "$BR" up
  log "bridge $BR $BR_IP/24"
}

etcd() {
  start etcd "$BIN/etcd" --name kx --data-dir "$RUN/etcd" --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" --listen-peer-urls "http://127.0.0.1:$ETCD_PEER" \
    --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" --initial-cluster "kx=http://127.0.0.1:$ETCD_PEER" \
    --listen-metrics-urls "" --log-level warn
  wait_for 60 etcd curl -sf "http://127.0.0.1:$ETCD_PORT/health"; log "etcd on 127.0.0.1:$ETCD_PORT"
}

apiserver() {
  local p=$RUN/pki
  start apiserver "$BIN/kube-apiserver" --etcd-servers "http://127.0.0.1:$ETCD_PORT" --bind-address 127.0.0.1 \
    --secure-port "$API_PORT" --advertise-address "$BR_IP" --tls-cert-file "$p/apiserver.crt" --tls-private-key-file "$p/apiserver.key" \
    --client-ca-file "$p/ca.crt" --service-account-key-file "$p/sa.pub" --service-account-signing-key-file "$p/sa.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local --service-cluster-ip-range "$SVC_CIDR" \
    --authorization-mode RBAC --enable-aggregator-routing=true --allow-privileged=true --profiling=false \
    --endpoint-reconciler-type none --v 0
  wait_for 180 kube-apiserver curl -sf --cacert "$p/ca.crt" --cert "$p/admin.crt" --key "$p/admin.key" "$KK_API/readyz"
  log "kube-apiserver on 127.0.0.1:$API_PORT ($("$BIN/kubectl" version -o json | jq -r .serverVersion.gitVersion))"
}

objects() {
  "$BIN/kubectl" get crd virtualservices.networking.istio.io >/dev/null 2>&1 || {
    "$BIN/kubectl" apply --server-side -f "$ISTIO_SRC/manifests/charts/base/files/crd-all.gen.yaml" >/dev/null
    log "Istio CRDs applied"; }
  local gw=${GWAPI_CRDS:-$(GOFLAGS= go env GOMODCACHE 2>/dev/null)/sigs.k8s.io/gateway-api@$(awk '$1 == "sigs.k8s.io/gateway-api" {print $2}' "$ISTIO_SRC/go.mod")/config/crd/standard}
  if [ -d "$gw" ] && ! "$BIN/kubectl" get crd gateways.gateway.networking.k8s.io >/dev/null 2>&1; then   # Gateway API, as Istio's go.mod pins it
    for f in "$gw"/gateway.networking.k8s.io_*.yaml; do "$BIN/kubectl" apply --server-side -f "$f" >/dev/null; done   # one file each: they do not all end in a newline
    "$BIN/kubectl" wait --for condition=Established --timeout=60s crd/gateways.gateway.networking.k8s.io crd/httproutes.gateway.networking.k8s.io >/dev/null
    log "Gateway API CRDs applied ($gw)"; fi
  "$BIN/kubectl" get node "$NODE" >/dev/null 2>&1 || { kubelet node "$NODE" "$BR_IP" "$KUBE_VERSION"; log "node $NODE ($KUBE_VERSION)"; }
  python3 "$KUBE_SH/render.py" "$ISTIO_SRC" "$BR_IP" | "$BIN/kubectl" apply -f - >/dev/null; log "render.py objects applied (istio-system)"
  "$BIN/kubectl" label ns "$NS" istio-injection=enabled --overwrite >/dev/null
  # the controller-manager's jobs that pods need, done once by hand: kube-root-ca.crt (kube-api-access volumes)
  for n in "$NS" istio-system; do   # istio-system too: the gateway chart's pod mounts it
    "$BIN/kubectl" -n "$n" create configmap kube-root-ca.crt --from-file=ca.crt="$RUN/pki/ca.crt" --dry-run=client -o yaml | "$BIN/kubectl" apply -f - >/dev/null
    "$BIN/kubectl" -n "$n" get sa default >/dev/null 2>&1 || "$BIN/kubectl" -n "$n" create sa default >/dev/null; done
}

kcm() {   # kube-controller-manager with only the deployment and replicaset controllers (Deployments of the gateway chart and of
  # istiod's Gateway API deployment controller become pods; no scheduler: bind them with kubelet.py bind). Skipped without the binary.
  [ -x "$BIN/kube-controller-manager" ] || { log "no $BIN/kube-controller-manager: Deployments stay without pods"; return 0; }
  start kcm "$BIN/kube-controller-manager" --kubeconfig "$KUBECONFIG" --controllers=deployment,replicaset --leader-elect=false \
    --bind-address 127.0.0.1 --secure-port 30257 --use-service-account-credentials=false --v 0
  wait_for 60 kube-controller-manager curl -sk -o /dev/null https://127.0.0.1:30257/healthz; log "kube-controller-manager (deployment, replicaset)"
}

istiod() {
  # Kubernetes mode: no ./etc/istio/config/mesh and no ./var/lib/istio/inject in its working dir, so mesh config and injector
  # config come from the ConfigMaps render.py made. Upstream Envoy: no metadata exchange / ALPN filters (ISTIOD.md).
  cd "$RUN/istiod"
  [ -z "${ISTIOD_ENV:-}" ] || export ${ISTIOD_ENV?}   # e.g. ISTIOD_ENV=PILOT_ENABLE_AMBIENT=true (waypoints)
  POD_NAMESPACE=istio-system POD_NAME=istiod-kx REVISION=default KUBECONFIG=$KUBECONFIG \
  PILOT_ENABLE_METADATA_EXCHANGE=false PILOT_ENABLE_ALPN_FILTER=false \
    start istiod "$BIN/pilot-discovery" discovery --kubeconfig "$KUBECONFIG" --grpcAddr "$BR_IP:15010" \
    --secureGRPCAddr "$BR_IP:15012" --httpsAddr "$BR_IP:15017" --httpAddr "$ISTIOD_HTTP" --monitoringAddr "$BR_IP:15014" \
    --ctrlz_port 0 --ctrlz_address 127.0.0.1 --log_output_level default:info
  cd - >/dev/null
  wait_for 180 "istiod ready" curl -sf "http://$ISTIOD_HTTP/ready"
  wait_for 60 "webhook caBundle" sh -c "'$BIN/kubectl' get mutatingwebhookconfiguration istio-sidecar-injector -o jsonpath='{.webhooks[0].clientConfig.caBundle}' | grep -q ."
  wait_for 60 "istio-ca-root-cert in $NS" "$BIN/kubectl" -n "$NS" get configmap istio-ca-root-cert
  log "istiod ready: xDS $BR_IP:15010/15012, webhook $BR_IP:15017, debug http://$ISTIOD_HTTP/debug/syncz"
}

t0=$(date +%s%N)
for s in ${UP_STEPS:-pki imagedirs bridge etcd apiserver objects kcm istiod}; do "$s"; done
log "up: in $(( ($(date +%s%N) - t0) / 1000000 )) ms. Next: ./pod.sh AGENT_DIR NAME (README.md)"
