#!/usr/bin/env bash
# Installs iptables (with ip6tables: IPv6 pods and dual-stack pods need
# ip6tables-restore), nftables (nft, for --native-nftables), iproute2 and
# setpriv (util-linux) for `pilot-agent istio-iptables` and its
# network-namespace tests. Idempotent;
# never fails the main setup: where we cannot install (not root, no
# apt-get), the netns tests skip with a reason.
set -euo pipefail

say() { printf 'setup-iptables: %s\n' "$*" >&2; }

present() {
  for tool in iptables-restore iptables-save ip6tables-restore ip6tables-save nft ip setpriv; do
    command -v "$tool" >/dev/null 2>&1 || return 1
  done
}

if present; then
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  say "iptables/ip6tables, nft, ip or setpriv missing and cannot apt-get install (need root + apt-get); the netns tests will skip"
  exit 0
fi
say "installing iptables (with ip6tables), nftables, iproute2 and util-linux from Debian's packages"
if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iptables nftables iproute2 util-linux >/dev/null; }; then
  say "apt-get install failed; the netns tests will skip"
elif ! present; then
  say "installed, but ip6tables-restore, nft or setpriv is still missing; the netns tests that need them will skip"
fi
exit 0
