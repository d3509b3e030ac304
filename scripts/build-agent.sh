#!/usr/bin/env bash
# Builds the agent: tsc compiles src/ to dist/ (checked, one file per module),
# then esbuild bundles the CLI into dist/bundle/, which bin/pilot-agent.js runs.
# One bundle instead of ~300 modules resolved and linked one by one: less
# memory and a faster start (bench/cost.ts). Commands load their code on use
# (dynamic imports), so each becomes its own chunk and `proxy` never loads the
# injector or the iptables rules. pino is bundled too (loading its ~20 files
# took ~20 ms of the start); pino-pretty stays outside, required only when a
# terminal asks for pretty lines.
set -euo pipefail
cd "$(dirname "$0")/.."
node=${NODE:-.tools/bin/node}
[ -x "$node" ] || node=node
"$node" node_modules/typescript/bin/tsc -p tsconfig.build.json
rm -rf dist/bundle
# esbuild installs either a native binary or a node shim here: run it directly.
PATH="$(dirname "$(command -v "$node")"):$PATH" node_modules/.bin/esbuild src/cli/main.ts --bundle --splitting --format=esm --platform=node --target=node22 \
  --outdir=dist/bundle --entry-names=pilot-agent --chunk-names=chunk-[hash] --minify-whitespace --minify-syntax --legal-comments=none --external:pino-pretty \
  --banner:js="import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" \
  --log-level=warning
# V8's compiled code for the bundle, read at start by bin/pilot-agent.js. Node
# keeps it per uid: also warm it for 1337, the proxy's uid in a pod.
rm -rf dist/compile-cache && mkdir -m 1777 dist/compile-cache
"$node" scripts/warm-compile-cache.mjs
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  setpriv --reuid=1337 --regid=1337 --clear-groups -- "$node" scripts/warm-compile-cache.mjs || echo "build-agent: no compile cache for uid 1337" >&2
fi
chmod 0755 dist/compile-cache
