#!/usr/bin/env bash
# bench.sh N AGENT...: exec -> ready of each AGENT (as pod.sh takes it: istio, a checkout dir, an agent dir), N rounds,
# agents alternating within a round, in the same pod (name bt, made with pod.sh and removed with stop.sh each time), so
# every agent meets the same istiod state and the same machine load. Prints one line per run, then per agent:
#   "AGENT: n=N median M ms min A max B (all: ...)". A run that is not ready counts as "NOT READY".
# Other shapes: BENCH_SCRIPT=runpod.sh BENCH_ARGS="istio-system app=istio-ingressgateway" (a controller's pod: stop.sh
# deletes it, the ReplicaSet makes the next), BENCH_SCRIPT=vm.sh (a VM; BENCH_PAUSE=12 lets istiod drop the last entry).
set -uo pipefail
. "$(dirname "$0")/env.sh"
n=$1; shift; bt=${BENCH_POD:-bt}
declare -A all
for i in $(seq "$n"); do
  for ag in "$@"; do
    out=$(READY_TIMEOUT=${READY_TIMEOUT:-30} "$(dirname "$0")/${BENCH_SCRIPT:-pod.sh}" "$ag" ${BENCH_ARGS:-} "$bt" 2>/dev/null)
    ms=$(echo "$out" | sed -n 's/.*exec->ready \([0-9]*\) ms.*/\1/p')
    echo "round $i $ag: ${ms:-NOT READY}"
    all[$ag]="${all[$ag]:-} ${ms:-x}"
    [ -n "$ms" ] || { mkdir -p "$RUN/failed"; cp -r "$RUN/pods/$bt" "$RUN/failed/$bt-$i-$(echo "$ag" | tr / _)" 2>/dev/null; }
    "$(dirname "$0")/stop.sh" "$bt" >/dev/null; sleep "${BENCH_PAUSE:-0}"
  done
done
for ag in "$@"; do
  python3 - "$ag" ${all[$ag]} <<'PY'
import statistics, sys
ag, v = sys.argv[1], sys.argv[2:]
ok = sorted(int(x) for x in v if x != "x")
if ok: print(f"{ag}: n={len(ok)} median {statistics.median(ok):.0f} ms min {ok[0]} max {ok[-1]} (all: {' '.join(v)})")
else: print(f"{ag}: never ready ({len(v)} runs)")
PY
done
