#!/usr/bin/env bash
# stop.sh NAME...: stop pods made by pod.sh: SIGTERM then SIGKILL their processes (by recorded pid), delete the pod and its
# Service/ServiceAccount/EndpointSlice, the netns kx-NAME (its veth goes with it), /etc/netns/kx-NAME and run/pods/NAME.
# Prints "stopped NAME".
set -uo pipefail
. "$(dirname "$0")/env.sh"
for name in "$@"; do
  d=$RUN/pods/$name
  for p in app proxy vmapp; do
    pid=$(cat "$d/$p.pid" 2>/dev/null) || continue
    kill -TERM "$pid" 2>/dev/null && for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  # whatever is still in the netns (Envoy if its agent was killed): only processes inside our own netns
  for pid in $(ip netns pids "kx-$name" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
  if [ -f "$d/pod" ]; then   # runpod.sh: a controller's pod (its controller makes another); vm.sh: no pod at all
    kubectl -n "$(cat "$d/ns")" delete pod "$(cat "$d/pod")" --grace-period=0 --force --ignore-not-found >/dev/null 2>&1
  elif [ ! -f "$d/vm" ]; then
    kubectl -n "$NS" delete pod "$name" --grace-period=0 --force --ignore-not-found >/dev/null 2>&1
    kubectl -n "$NS" delete svc,sa "$name" --ignore-not-found >/dev/null 2>&1
    kubectl -n "$NS" delete endpointslice "$name-manual" --ignore-not-found >/dev/null 2>&1
  fi
  ip netns del "kx-$name" 2>/dev/null; ip link del "kxh-$name" 2>/dev/null
  rm -rf "/etc/netns/kx-$name" "$d"
  echo "stopped $name"
done
