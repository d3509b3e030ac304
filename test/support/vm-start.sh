#!/bin/bash
# A stand-in for Istio's tools/packaging/common/istio-start.sh as it boots a VM's agent (read there, written
# anew; the suite cannot fetch Istio's source in CI). From its working directory, the VM's root (systemd runs
# the script from /; every path below is relative to it, as in the script), it loads the cluster.env that
# `istioctl x workload entry configure` writes, sets and exports what the script does (CA_ADDR, PROV_CERT and
# OUTPUT_CERTS both ./etc/certs, PROXY_CONFIG as YAML), and runs the agent as the istio-proxy user (uid 1337:
# the script's `sudo -E -u istio-proxy`, here setpriv) with INSTANCE_IP, POD_NAME and POD_NAMESPACE set.
# Its iptables step too, as root: `pilot-agent istio-iptables --cleanup-only`, then `pilot-agent istio-iptables` with
# cluster.env's variables (skipped with ISTIO_CUSTOM_IP_TABLES=true; output in ./var/log/istio/iptables.log, shown on a
# failure). Left out: its log redirection to ./var/log/istio.
# Usage: vm-start.sh AGENT_COMMAND... (this checkout's `pilot-agent proxy sidecar`, for /usr/local/bin/pilot-agent proxy;
# the words before `proxy` run istio-iptables)
set -euo pipefail
cluster_env=${ISTIO_CLUSTER_CONFIG:-./var/lib/istio/envoy/cluster.env}
if [[ -r $cluster_env ]]; then
  set -a
  # shellcheck disable=SC1090
  . "$cluster_env"
  set +a
fi
namespace=${ISTIO_NAMESPACE:-default}
service=${ISTIO_SERVICE:-rawvm}
system_namespace=${ISTIO_SYSTEM_NAMESPACE:-istio-system}
vm_ip=${ISTIO_SVC_IP:-$(hostname --all-ip-addresses | cut -d ' ' -f 1)}
vm_name=${POD_NAME:-$(hostname -s)}
export CA_ADDR=${CA_ADDR:-istiod.${system_namespace}.svc:15012}
export PROV_CERT=${PROV_CERT-./etc/certs}
export OUTPUT_CERTS=${OUTPUT_CERTS-./etc/certs}
if [[ ${ISTIO_CUSTOM_IP_TABLES:-} != true ]]; then
  pilot_agent=()
  for word in "$@"; do [[ $word == proxy ]] && break; pilot_agent+=("$word"); done
  mkdir -p ./var/log/istio
  if ! "${pilot_agent[@]}" istio-iptables --cleanup-only >./var/log/istio/iptables.log 2>&1 ||
    ! "${pilot_agent[@]}" istio-iptables >>./var/log/istio/iptables.log 2>&1; then
    cat ./var/log/istio/iptables.log >&2
    exit 1
  fi
fi
export PROXY_CONFIG=${PROXY_CONFIG:-$'\nserviceCluster: '"$service"$'\ncontrolPlaneAuthPolicy: '"${ISTIO_CP_AUTH:-MUTUAL_TLS}"$'\n'}
exec setpriv --reuid=1337 --regid=1337 --clear-groups -- env INSTANCE_IP="$vm_ip" POD_NAME="$vm_name" POD_NAMESPACE="$namespace" "$@"
