import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { checkEnvoyPortsFree } from '../envoy/ports.ts';
import { badFlag } from '../shared/errors.ts';
import type { RunPlan } from './prepare-run.ts';
import { checkXdsUpstream } from './xds-upstream.ts';

/** The Envoy binary must exist and be executable before anything starts. */
export async function checkBinary(path: string): Promise<void> {
  const info = await stat(path).catch(() => undefined);
  if (!info?.isFile()) throw badFlag('--binaryPath', `${path} does not exist or is not a file`);
  await access(path, constants.X_OK).catch(() => {
    throw badFlag('--binaryPath', `${path} is not executable`);
  });
}

/** What the plan needs before anything starts, in this order: Envoy's binary, the upstream's files, Envoy's ports free. */
export async function preflight({ config, bootstrap, recipe }: RunPlan): Promise<void> {
  if (recipe.kind === 'envoy') await checkBinary(config.binaryPath);
  await checkXdsUpstream(recipe.inputs.upstream);
  if (recipe.kind === 'envoy') await checkEnvoyPortsFree(config, { ...bootstrap.listenerHosts, secureMetrics: bootstrap.secureMetrics });
}
