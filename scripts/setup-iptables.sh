#!/usr/bin/env bash
# Installs iptables and iproute2 for `pilot-agent istio-iptables` and its
# network-namespace test. Idempotent; never fails the main setup: where we
# cannot install (not root, no apt-get), the netns test skips with a reason.
set -euo pipefail

say() { printf 'setup-iptables: %s\n' "$*" >&2; }

if command -v iptables-restore >/dev/null 2>&1 && command -v ip >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  say "iptables-restore or ip missing and cannot apt-get install (need root + apt-get); the netns test will skip"
  exit 0
fi
say "installing iptables and iproute2 from Debian's packages"
if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iptables iproute2 >/dev/null; }; then
  say "apt-get install failed; the netns test will skip"
fi
exit 0
