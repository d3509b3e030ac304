#!/usr/bin/env bash
# Mutation testing of the rooms that guard the pod (mutation/rooms.mjs) with
# Stryker: `npm run mutation` runs every room in turn, `npm run mutation --
# sds iptables` only those; a re-run is incremental (MUTATION_INCREMENTAL=0 for a fresh one). Not part of CI. One test process at a time:
# the whole run takes about 20 minutes on 2 cores. Reports land in
# reports/mutation/<room>.html and .json; each room's score prints at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# The TAP runner spawns `node` from PATH for each test file: it must be ours (>= 22, strips types).
export PATH="$root/.tools/bin:$PATH"
# The sandbox leaves .tools out: tests that ask the real Envoy (the envoy room) find it here.
export ENVOY_BIN="${ENVOY_BIN:-$root/.tools/bin/envoy}"
# The checker's TypeScript API (mutation/typescript-5.mjs); the hook follows Stryker's worker processes.
export NODE_OPTIONS="--import=$root/mutation/typescript-5.mjs ${NODE_OPTIONS:-}"
all=$(node -e 'import("./mutation/rooms.mjs").then((m) => console.log(Object.keys(m.rooms).join(" ")))')
rooms=("$@")
[ ${#rooms[@]} -gt 0 ] || read -r -a rooms <<<"$all"
summary=()
for room in "${rooms[@]}"; do
  start=$(date +%s)
  MUTATION_ROOM=$room node node_modules/@stryker-mutator/core/bin/stryker.js run mutation/stryker.config.mjs
  seconds=$(( $(date +%s) - start ))
  summary+=("$(node mutation/score.mjs "reports/mutation/$room.json" "$room" "$seconds")")
done
printf '%s\n' "${summary[@]}"
