import { join } from 'node:path';
import { Registry } from '../../src/metrics/index.ts';
import { systemClock } from '../../src/shared/clock.ts';
import { silentLogger } from '../../src/shared/log.ts';
import type { KeepaliveOptions } from '../../src/grpc/keepalive.ts';
import { XdsRelay } from '../../src/xds/relay/relay.ts';
import type { UpstreamOptions } from '../../src/xds/upstream/material.ts';

/** The relay in the test's own process, its socket in `dir`, its metrics in a fresh registry. */
export async function startRelay(dir: string, upstream: UpstreamOptions, keepalive?: KeepaliveOptions) {
  const registry = new Registry();
  const socketPath = join(dir, `XDS-${upstream.address.port}`);
  const relay = new XdsRelay({ socketPath, upstream, registry, clock: systemClock, logger: silentLogger, keepalive });
  await relay.start();
  return { relay, registry, socketPath, target: `unix://${socketPath}` };
}

/** Plaintext to a local port. */
export const plaintextUpstream = (port: number, certDir: string): UpstreamOptions => ({ address: { host: '127.0.0.1', port }, policy: 'NONE', certDir });
