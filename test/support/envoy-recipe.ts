import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import type { EnvoyRecipeInputs } from '../../src/runtime/envoy-recipe.ts';
import { runtimeContext, type RuntimeContext } from '../../src/runtime/context.ts';
import type { ProcessHooks } from '../../src/runtime/process-hooks.ts';
import { dnsEnv } from '../../src/settings/dns-env.ts';
import { readEnvSettings } from '../../src/settings/env-settings.ts';
import { mergeProxyConfigs } from '../../src/settings/proxy-config-sources.ts';
import { resolveAgentConfig } from '../../src/settings/resolve-agent-config.ts';
import { wasmEnv } from '../../src/settings/wasm-env.ts';
import { FakeClock } from '../../src/shared/clock.ts';
import { certFilesIn } from '../../src/shared/istio-files.ts';
import { buildCert, ecKey } from './cert-builder.ts';

/** The process guard's two hooks, held by the test instead of the process. */
export class FakeGuard implements ProcessHooks {
  terminate: ((signal: NodeJS.Signals) => void)[] = [];
  stops: (() => Promise<void>)[] = [];
  onTerminate(handler: (signal: NodeJS.Signals) => void) {
    this.terminate.push(handler);
    return () => void (this.terminate = this.terminate.filter((entry) => entry !== handler));
  }
  whileRunning(stop: () => Promise<void>) {
    this.stops.push(stop);
    return () => void (this.stops = this.stops.filter((entry) => entry !== stop));
  }
}

export type LogLine = Record<string, unknown> & { msg: string };

/** A temp dir, a context on a FakeClock whose logger keeps every line, and the recipe's inputs (upstream: 127.0.0.1:9). */
export async function recipeSetup(clock = new FakeClock(1_000_000)) {
  const dir = await mkdtemp(join(tmpdir(), 'envoy-recipe-'));
  const { config } = resolveAgentConfig({
    proxyType: 'sidecar',
    commandLine: { values: {}, sourceOf: () => 'default' },
    proxyConfig: mergeProxyConfigs([]),
    env: {},
  });
  const logs = new LogCapture();
  const logger = pino({ level: 'info' }, logs);
  const ctx: RuntimeContext = runtimeContext(
    { ...config, configPath: dir, certDir: join(dir, 'certs'), sdsSocket: join(dir, 'SDS'), statusPort: 0 },
    logger,
    clock,
  );
  const guard = new FakeGuard();
  const inputs: EnvoyRecipeInputs = {
    bootstrap: { nodeId: 'sidecar~198.18.0.7~app.ns~ns.svc.cluster.local', metadata: {} as never, text: '{}', domain: 'ns.svc.cluster.local' },
    launch: { localAddressIpVersion: 'v4' },
    sockets: { xds: join(dir, 'XDS'), readiness: join(dir, 'READINESS') },
    upstream: { address: { host: '127.0.0.1', port: 9 }, policy: 'NONE', certDir: join(dir, 'certs') },
    caSettings: undefined,
    app: undefined,
    grpcBootstrapPath: undefined,
    dns: { settings: readEnvSettings({}, dnsEnv), namespace: 'ns' },
    wasm: readEnvSettings({}, wasmEnv),
    guard,
  };
  return { dir, ctx, guard, inputs, logs, clock };
}

/** Writes a consistent set (a CA's root, a leaf expiring at `notAfter`, its key) into `certDir`. */
export async function writeCerts(certDir: string, notAfter: number): Promise<void> {
  const root = buildCert({ subject: 'test-root', key: ecKey(), notBefore: 0, notAfter: notAfter + 86_400_000, ca: true });
  const leaf = buildCert({ subject: '', key: ecKey(), issuer: root, notBefore: 0, notAfter, uri: 'spiffe://cluster.local/ns/ns/sa/app' });
  const files = certFilesIn(certDir);
  await mkdir(certDir, { recursive: true });
  await writeFile(files.root, root.pem);
  await writeFile(files.chain, leaf.pem);
  await writeFile(files.key, leaf.key.export({ type: 'pkcs8', format: 'pem' }));
}

/** A pino destination that keeps every line, and tells who waits for a message. */
export class LogCapture {
  readonly lines: LogLine[] = [];
  #waiters: (() => void)[] = [];

  write(text: string): void {
    this.lines.push(JSON.parse(text));
    for (const waiter of this.#waiters) waiter();
  }

  /** The `count`th line with `msg`, once logged. */
  waitFor(msg: string, count = 1): Promise<LogLine> {
    return new Promise((resolve) => {
      const look = () => {
        const found = this.lines.filter((line) => line.msg === msg);
        if (found.length < count) return;
        this.#waiters = this.#waiters.filter((waiter) => waiter !== look);
        resolve(found[count - 1]!);
      };
      this.#waiters.push(look);
      look();
    });
  }
}
