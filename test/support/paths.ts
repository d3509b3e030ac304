import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
export const nodeBin = process.execPath;
export const agentBin = `${repoRoot}bin/pilot-agent.js`;
export const envoyBin = process.env.ENVOY_BIN ?? `${repoRoot}.tools/bin/envoy`;
export const peerBin = `${repoRoot}.tools/bin/xds-server`;
export const caPeerBin = `${repoRoot}.tools/bin/ca-server`;
