import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Command } from 'commander';
import pino from 'pino';
import { proxyFlags, toOption } from '../../src/cli/proxy-flags.ts';
import type { RunInputs } from '../../src/runtime/prepare-run.ts';
import { readAgentInputs } from '../../src/settings/agent-inputs.ts';
import { LogCapture } from './envoy-recipe.ts';

/** A Kubernetes pod's env, as the injector sets it. */
export const podEnv = { INSTANCE_IP: '198.18.0.7', POD_NAME: 'reviews-v1', POD_NAMESPACE: 'shop', SERVICE_ACCOUNT: 'reviews' };

export type TestRunInputs = RunInputs & { logs: LogCapture; run: string };

/**
 * The inputs the proxy command hands over, read as it reads them: flags, env (the pod's, unless `env` replaces a key or unsets it: undefined)
 * and the pod's downward-API files (`labels`) under `<dir>/<name>/pod`; --configPath is `<dir>/<name>/config`.
 */
export async function runInputsOf(
  dir: string, name: string, args: string[], env: Record<string, string | undefined> = {}, labels = 'app="reviews"\nversion="v1"\n',
): Promise<TestRunInputs> {
  const run = join(dir, name);
  await mkdir(join(run, 'pod'), { recursive: true });
  await writeFile(join(run, 'pod', 'labels'), labels);
  const command = new Command('proxy').exitOverride().configureOutput({ writeErr: () => undefined });
  for (const spec of proxyFlags) command.addOption(toOption(spec));
  const saved = process.env;
  process.env = Object.fromEntries(Object.entries({ ...podEnv, ...env }).filter(([, value]) => value !== undefined));
  try {
    command.parse(['--configPath', join(run, 'config'), '--podInfoDir', join(run, 'pod'), ...args], { from: 'user' });
    const commandLine = { values: command.opts(), sourceOf: (flag: string) => command.getOptionValueSource(flag) };
    const podInfoDir = String(command.opts().podInfoDir);
    const read = await readAgentInputs({ proxyType: 'sidecar', commandLine, env: process.env, meshConfigPath: join(run, 'mesh'), podInfoDir });
    const logs = new LogCapture();
    return {
      config: read.config, env: read.env, podInfo: read.podInfo, mergedProxyConfig: read.proxyConfig.value, proxyConfigOrigin: read.proxyConfig.origin,
      proxyMetadataSource: read.proxyConfig.origin.proxyMetadata, processEnv: process.env, logger: pino({ level: 'info' }, logs), logAsJson: false, logs, run,
    };
  } finally {
    process.env = saved;
  }
}
