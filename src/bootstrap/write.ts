import { chmod, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { badFlag } from '../shared/errors.ts';

/** Path of the bootstrap an epoch runs with. */
export function bootstrapPath(configPath: string, epoch: number): string {
  return join(configPath, `envoy-rev${epoch}.json`);
}

/**
 * Makes the config dir private (0700): it holds bootstraps with node
 * metadata and, later, the XDS socket.
 */
export async function prepareConfigDir(configPath: string): Promise<void> {
  try {
    await mkdir(configPath, { recursive: true, mode: 0o700 });
    await chmod(configPath, 0o700);
  } catch (error) {
    throw badFlag('--configPath', `${configPath} is not a writable directory (${(error as NodeJS.ErrnoException).code})`, error);
  }
}

/** Writes an epoch's bootstrap (mode 0600) and returns its path. */
export async function writeBootstrap(configPath: string, epoch: number, text: string): Promise<string> {
  const path = bootstrapPath(configPath, epoch);
  try {
    await writeFile(path, text, { mode: 0o600 });
  } catch (error) {
    throw badFlag('--configPath', `cannot write ${path} (${(error as NodeJS.ErrnoException).code})`, error);
  }
  return path;
}

/** Removes an epoch's bootstrap once that epoch has exited. */
export async function removeBootstrap(configPath: string, epoch: number): Promise<void> {
  await rm(bootstrapPath(configPath, epoch), { force: true });
}
