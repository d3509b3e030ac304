#!/usr/bin/env bash
# The whole test suite: typecheck, unit tests next to the code, then the
# end-to-end tests against the real Envoy and the go-control-plane peer.
set -euo pipefail
cd "$(dirname "$0")/.."
node=.tools/bin/node
# End-to-end tests run dist/bundle: run directly (not through npm test, which
# builds first), rebuild it when anything under src/ is newer.
bundle=dist/bundle/pilot-agent.js
if [ ! -f "$bundle" ] || [ -n "$(find src -newer "$bundle" -print -quit)" ]; then
  echo "test.sh: $bundle is older than src/; rebuilding" >&2
  bash scripts/build-agent.sh
fi
"$node" node_modules/typescript/bin/tsc -p tsconfig.json --noEmit
exec "$node" --test --test-concurrency=1 --test-timeout=180000 'src/**/*.test.ts' 'test/**/*.test.ts' "$@"
