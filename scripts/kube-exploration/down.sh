#!/usr/bin/env bash
# down.sh: stop everything up.sh, pod.sh and spy.sh started: every pod (stop.sh), the spy, istiod, kube-apiserver, etcd (by the pids they
# recorded), the bridge; then remove run/ (state, certificates, logs: KEEP_LOGS=1 moves run/logs and run/pods' logs to
# logs-last/ first). Binaries in bin/ are kept. Prints what it stopped; ends with "down".
set -uo pipefail
. "$(dirname "$0")/env.sh"
[ -d "$RUN" ] || { echo "down (nothing running)"; exit 0; }
if [ -n "${KEEP_LOGS:-}" ]; then rm -rf "$K/logs-last"; mkdir -p "$K/logs-last"; cp -r "$RUN/logs" "$K/logs-last/" 2>/dev/null
  for p in "$RUN"/pods/*/; do [ -d "$p" ] && mkdir -p "$K/logs-last/pods/$(basename "$p")" && cp "$p"/*.log "$p"/pod.json "$K/logs-last/pods/$(basename "$p")/" 2>/dev/null; done; fi
pods=$(ls "$RUN/pods" 2>/dev/null); [ -n "$pods" ] && "$(dirname "$0")/stop.sh" $pods

for n in fwd6 kxspy istiod kcm apiserver etcd; do
  pid=$(cat "$RUN/pids/$n" 2>/dev/null) || continue
  if kill -TERM "$pid" 2>/dev/null; then for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null; echo "stopped $n"; fi
done
ip link del "$BR" 2>/dev/null && echo "deleted bridge $BR"
# the empty mount-point dirs up.sh made on the host (only those, only if still empty)
[ -f "$RUN/made-dirs" ] && while read -r m; do rmdir "$m" 2>/dev/null && echo "removed $m"; done <"$RUN/made-dirs"
[ -f "$RUN/created-dirs" ] && tac "$RUN/created-dirs" | while read -r x; do rmdir "$x" 2>/dev/null && echo "removed $x"; done
rm -rf "$RUN"; echo down
