import { execa } from 'execa';

/** Envoy's build version (e.g. `<sha>/1.40.0/Clean/RELEASE/BoringSSL`) for the startup line; undefined when it cannot be read. */
export async function envoyVersion(binaryPath: string): Promise<string | undefined> {
  const result = await execa(binaryPath, ['--version'], { reject: false, timeout: 10_000 });
  return /version: (\S+)/.exec(result.stdout ?? '')?.[1];
}
