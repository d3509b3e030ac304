import assert from 'node:assert/strict';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import { AgentError } from '../shared/errors.ts';
import type { UpstreamOptions } from '../xds/upstream/material.ts';
import { checkBinary, preflight } from './preflight.ts';
import type { RunPlan } from './prepare-run.ts';

const dir = await mkdtemp(join(tmpdir(), 'preflight-edges-'));
after(() => rm(dir, { recursive: true, force: true }));
const named = (message: string) => (error: unknown) => error instanceof AgentError && error.exitCode === 2 && error.message === message;

test('--binaryPath: an executable file passes; missing, a directory or not executable is exit 2 naming the flag', async () => {
  const envoy = join(dir, 'envoy');
  await writeFile(envoy, '#!/bin/sh\n');
  await chmod(envoy, 0o755);
  await checkBinary(envoy);
  await assert.rejects(checkBinary(join(dir, 'none')), named(`--binaryPath: ${join(dir, 'none')} does not exist or is not a file`));
  await assert.rejects(checkBinary(dir), named(`--binaryPath: ${dir} does not exist or is not a file`));
  const plain = join(dir, 'plain');
  await writeFile(plain, '');
  await chmod(plain, 0o644);
  // root may execute nothing without an x bit either: X_OK needs one.
  await assert.rejects(checkBinary(plain), named(`--binaryPath: ${plain} is not executable`));
});

/** A plan as preflight reads it: Envoy's binary and ports (on loopback), the upstream's token file. */
function plan(kind: 'envoy' | 'proxyless', { binaryPath, tokenFile, adminPort = 0, secureMetrics = { envoy: 0, merged: 0 } }: PlanParts): RunPlan {
  const config = { binaryPath, proxyAdminPort: adminPort, prometheusPort: 0, statusPort: 0, readinessPort: 0, proxyAdminHost: '127.0.0.1' } as AgentConfig;
  const upstream = { address: { host: '127.0.0.1', port: 15010 }, policy: 'NONE', certDir: dir, tokenFile } as UpstreamOptions;
  const bootstrap = { listenerHosts: { wildcard: '127.0.0.1', localhost: '127.0.0.1' }, secureMetrics } as unknown as RunPlan['bootstrap'];
  return { config, bootstrap, recipe: { kind, inputs: { upstream } } } as unknown as RunPlan;
}
interface PlanParts {
  binaryPath: string;
  tokenFile: string;
  adminPort?: number;
  secureMetrics?: { envoy: number; merged: number };
}

test("preflight: Envoy's binary, then the upstream's files, then Envoy's ports; a proxyless plan checks only the upstream", async (t) => {
  const envoy = join(dir, 'envoy-ok');
  await writeFile(envoy, '#!/bin/sh\n');
  await chmod(envoy, 0o755);
  const token = join(dir, 'token');
  await writeFile(token, 'tok\n');
  const [missingBinary, missingToken] = [join(dir, 'no-envoy'), join(dir, 'no-token')];
  const held = createServer();
  await new Promise<void>((resolve) => held.listen(0, '127.0.0.1', resolve));
  t.after(() => held.close());
  const port = (held.address() as AddressInfo).port;
  const binaryError = `--binaryPath: ${missingBinary} does not exist or is not a file`;
  const tokenError = `--xdsTokenFile: cannot read ${missingToken} (ENOENT)`;
  // Each row breaks everything after the check it expects, so a check moved later (or skipped) names another input.
  await assert.rejects(preflight(plan('envoy', { binaryPath: missingBinary, tokenFile: missingToken, adminPort: port })), named(binaryError));
  await assert.rejects(preflight(plan('envoy', { binaryPath: envoy, tokenFile: missingToken, adminPort: port })), named(tokenError));
  await assert.rejects(preflight(plan('envoy', { binaryPath: envoy, tokenFile: token, adminPort: port })), (error: Error) =>
    error.message.startsWith(`--proxyAdminPort: port ${port} on 127.0.0.1 is not free`));
  const secureMetrics = { envoy: port, merged: 0 };
  await assert.rejects(preflight(plan('envoy', { binaryPath: envoy, tokenFile: token, secureMetrics })), (error: Error) =>
    error.message.startsWith(`ENVOY_SECURE_METRICS_PORT: port ${port} on 127.0.0.1 is not free`));
  await preflight(plan('envoy', { binaryPath: envoy, tokenFile: token }));
  await preflight(plan('proxyless', { binaryPath: missingBinary, tokenFile: token, adminPort: port, secureMetrics }));
  await assert.rejects(preflight(plan('proxyless', { binaryPath: missingBinary, tokenFile: missingToken, adminPort: port })), named(tokenError));
});
