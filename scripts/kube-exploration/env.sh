# Common settings of the harness (sourced by up.sh, pod.sh, check.sh, down.sh). Override any by exporting it first.
K=${K:-/work/kube-env}                     # harness dir: bin/ (binaries), run/ (state, logs; removed by down.sh)
BIN=$K/bin RUN=$K/run
ISTIO_SRC=${ISTIO_SRC:-/work/istio-src}    # Istio source tree (CRDs, chart for render.py)
KUBE_SH=${KUBE_SH:-/work/shared/kube}      # kubelet.py, render.py
BR=${BR:-kx0}                              # the pods' bridge (host side); pods are netns kx-NAME with veth kxh-NAME
BR_IP=${BR_IP:-198.18.200.1}               # host address on the bridge; istiod's 15010/15012/15017/15014 listen here
POD_NET=${POD_NET:-198.18.200}             # pods get POD_NET.10 .. POD_NET.250 (/24)
POD_NET6=${POD_NET6:-2001:2:0:200}        # POD_FAMILY=6 pods: POD_NET6::10 .. (/64); the bridge's IPv6 address BR_IP6
BR_IP6=${BR_IP6:-2001:2:0:200::1}
SVC_CIDR=${SVC_CIDR:-198.18.201.0/24}      # service ClusterIPs (no kube-proxy: only the sidecars route them)
ETCD_PORT=${ETCD_PORT:-32379} ETCD_PEER=${ETCD_PEER:-32380}
API_PORT=${API_PORT:-36443}
ISTIOD_HTTP=${ISTIOD_HTTP:-127.0.0.1:38080}  # istiod debug (syncz, connections, ...)
NODE=${NODE:-kx-node} KUBE_VERSION=${KUBE_VERSION:-v1.37.2}
NS=${NS:-default}
export KK_API=https://127.0.0.1:$API_PORT KK_CERT=$RUN/pki/admin.crt KK_KEY=$RUN/pki/admin.key KK_CA=$RUN/pki/ca.crt
export KUBECONFIG=$RUN/admin.kubeconfig
kubectl() { "$BIN/kubectl" "$@"; }
kubelet() { nice -n 10 python3 "$KUBE_SH/kubelet.py" "$@"; }
log() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
