#!/usr/bin/env bash
# The whole test suite: typecheck, unit tests next to the code, then the
# end-to-end tests against the real Envoy and the go-control-plane peer.
set -euo pipefail
cd "$(dirname "$0")/.."
node=.tools/bin/node
"$node" node_modules/typescript/bin/tsc -p tsconfig.json --noEmit
exec "$node" --test --test-concurrency=1 --test-timeout=180000 'src/**/*.test.ts' 'test/**/*.test.ts' "$@"
