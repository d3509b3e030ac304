import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
export const nodeBin = process.execPath;
export const agentBin = `${repoRoot}bin/pilot-agent.js`;
export const envoyBin = process.env.ENVOY_BIN ?? `${repoRoot}.tools/bin/envoy`;
export const peerBin = `${repoRoot}.tools/bin/xds-server`;
export const caPeerBin = `${repoRoot}.tools/bin/ca-server`;

/**
 * Why `uid` cannot run this checkout's node, agent and Envoy, or undefined
 * when it can: tests that run them as the proxy (1337) or the app must skip,
 * not fail, in a clone whose directories other users cannot enter.
 */
export function uidCannotRunCheckout(uid: number): string | undefined {
  const files = [nodeBin, agentBin, envoyBin, `${repoRoot}dist/bundle/pilot-agent.js`];
  const result = spawnSync(
    'setpriv',
    [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--', 'sh', '-c', 'for f; do [ -r "$f" ] || { echo "$f"; exit 1; }; done', 'sh', ...files],
    { encoding: 'utf8', timeout: 10_000 },
  );
  if (result.error) return `setpriv is missing (${result.error.message})`;
  return result.status === 0 ? undefined : `uid ${uid} cannot read ${result.stdout.trim() || 'this checkout'} (a clone other users cannot enter)`;
}
