#!/usr/bin/env bash
# Builds the agent: tsc compiles src/ to dist/ (checked, one file per module),
# then esbuild bundles the CLI into dist/bundle/. bin/pilot-agent.js does NOT run
# the bundle yet: with it, test/e2e/ca-workload-cert.test.ts "the CA down at
# renewal" fails (cause not found yet); the tsc output passes it.
# One bundle instead of ~300 modules resolved and linked one by one: less
# memory and a faster start (bench/cost.ts). Commands load their code on use
# (dynamic imports), so each becomes its own chunk and `proxy` never loads the
# injector or the iptables rules. pino stays outside: its transports start
# workers from files next to its own sources.
set -euo pipefail
cd "$(dirname "$0")/.."
node=${NODE:-.tools/bin/node}
[ -x "$node" ] || node=node
"$node" node_modules/typescript/bin/tsc -p tsconfig.build.json
rm -rf dist/bundle
# esbuild installs either a native binary or a node shim here: run it directly.
PATH="$(dirname "$(command -v "$node")"):$PATH" node_modules/.bin/esbuild src/cli/main.ts --bundle --splitting --format=esm --platform=node --target=node22 \
  --outdir=dist/bundle --entry-names=pilot-agent --chunk-names=chunk-[hash] --minify-whitespace --minify-syntax --legal-comments=none --external:pino --external:pino-pretty \
  --banner:js="import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" \
  --log-level=warning
