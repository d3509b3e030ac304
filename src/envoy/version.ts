import { execa } from 'execa';
import { badFlag } from '../shared/errors.ts';

/** Envoy's build version (e.g. `<sha>/1.40.0/Clean/RELEASE/BoringSSL`) for the startup line; undefined when it cannot be read. */
export async function envoyVersion(binaryPath: string): Promise<string | undefined> {
  const result = await execa(binaryPath, ['--version'], { reject: false, stdin: 'ignore', timeout: 10_000, forceKillAfterDelay: 5000, maxBuffer: 64 * 1024 });
  return /version: (\S+)/.exec(result.stdout)?.[1];
}

/**
 * The binary must say it is an Envoy: `/bin/true` would otherwise "start"
 * and exit 0, and `/bin/false` would look like a rejected bootstrap.
 */
export async function checkIsEnvoy(binaryPath: string): Promise<string> {
  const version = await envoyVersion(binaryPath);
  if (version === undefined) throw badFlag('--binaryPath', `${binaryPath} is not an Envoy: \`--version\` printed no Envoy version`);
  return version;
}
