#!/usr/bin/env bash
# vmcheck.sh VM CLIENT: the VM shape's steps against a VM from vm.sh and a pod from pod.sh (the client). PASS|FAIL per step:
#   registered  istiod made the WorkloadEntry for the VM's address (auto-registration), ms from istio-start.sh's exec
#   healthy     its Healthy condition is True (the group's probe run by the agent, reported over xDS), ms from the exec
#   traffic     CLIENT -> http://vm:8080 (as uid 1000 through its sidecar) 200, and the VM's sidecar saw CLIENT's certificate
#   unregister  SIGTERM to the VM's agent: its exit code, and ms from the signal until istiod deleted the WorkloadEntry
# SKIP_TERM=1 skips the last step (the VM keeps running).
set -uo pipefail
. "$(dirname "$0")/env.sh"
vm=$1 c=$2 fail=0 d=$RUN/pods/$1
ip=$(cat "$d/ip") exec0=$(cat "$d/exec.istio-proxy")
ok() { echo "PASS $1: $2"; }
ko() { echo "FAIL $1: $2"; fail=1; }
now() { date +%s%3N; }
we() { kubectl -n "$NS" get workloadentries -o json | jq -c --arg ip "$ip" '[.items[] | select(.spec.address == $ip)] | first // empty'; }
t=""; for _ in $(seq 120); do w=$(we); [ -n "$w" ] && t=$(now) && break; sleep 0.25; done
[ -n "$t" ] && ok registered "WorkloadEntry $(echo "$w" | jq -r .metadata.name) seen $((t - exec0)) ms after exec (created $(echo "$w" | jq -r .metadata.creationTimestamp))" ||
  ko registered "no WorkloadEntry for $ip after 30 s"
t=""; for _ in $(seq 120); do w=$(we); [ "$(echo "$w" | jq -r '.status.conditions[]? | select(.type == "Healthy") | .status')" = True ] && t=$(now) && break; sleep 0.25; done
[ -n "$t" ] && ok healthy "Healthy seen $((t - exec0)) ms after exec" || ko healthy "conditions: $(echo "$w" | jq -c .status.conditions)"
"$(dirname "$0")/hosts.sh"
spiffe="spiffe://cluster.local/ns/$NS/sa/$c" out=""
for _ in $(seq 40); do out=$(ip netns exec "kx-$c" setpriv --reuid=1000 --regid=1000 --clear-groups curl -s --max-time 5 http://vm:8080/headers) &&
  echo "$out" | grep -q "URI=$spiffe" && break; sleep 0.5; done
echo "$out" | grep -q "URI=$spiffe" && ok traffic "$c -> vm:8080 200 over mTLS (XFCC URI=$spiffe)" || ko traffic "$c -> vm: ${out:0:200}"
[ -n "${SKIP_TERM:-}" ] && exit $fail
pid=$(cat "$d/proxy.pid") t0=$(now); kill -TERM "$pid"
for _ in $(seq 600); do [ -s "$d/proxy.rc" ] && break; sleep 0.1; done
rc=$(cat "$d/proxy.rc" 2>/dev/null) te=$(now)
t=""; for _ in $(seq 240); do [ -z "$(we)" ] && t=$(now) && break; sleep 0.25; done
[ -n "$t" ] && [ "$rc" = 0 ] && ok unregister "agent exit $rc after $((te - t0)) ms; WorkloadEntry gone $((t - t0)) ms after SIGTERM" ||
  ko unregister "agent exit ${rc:-running}; WorkloadEntry $([ -n "$t" ] && echo "gone $((t - t0)) ms after SIGTERM" || echo "still there 60 s after SIGTERM")"
exit $fail
