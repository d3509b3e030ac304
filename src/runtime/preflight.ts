import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { badFlag } from '../shared/errors.ts';

/** The Envoy binary must exist and be executable before anything starts. */
export async function checkBinary(path: string): Promise<void> {
  const info = await stat(path).catch(() => undefined);
  if (!info?.isFile()) throw badFlag('--binaryPath', `${path} does not exist or is not a file`);
  await access(path, constants.X_OK).catch(() => {
    throw badFlag('--binaryPath', `${path} is not executable`);
  });
}
