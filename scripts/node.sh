#!/usr/bin/env bash
# Runs the project's Node (>= 22, from setup) with the given arguments.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
exec "$root/.tools/bin/node" "$@"
