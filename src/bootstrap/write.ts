import { mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, extname, join } from 'node:path';
import { badFlag } from '../shared/errors.ts';

/**
 * Envoy picks the bootstrap's format by its extension: `.yaml`/`.yml` (any
 * case) is YAML, `.pb_text` text proto, anything else JSON. A custom
 * bootstrap's copies keep its extension, so a YAML one stays YAML.
 */
export function bootstrapExtension(customConfigFile?: string): string {
  const extension = customConfigFile ? extname(customConfigFile) : '';
  return /^\.(ya?ml|pb_text)$/i.test(extension) ? extension : '.json';
}

/** Path of the bootstrap an epoch runs with. */
export function bootstrapPath(configPath: string, epoch: number, extension = '.json'): string {
  return join(configPath, `envoy-rev${epoch}${extension}`);
}

export interface ConfigDir {
  /**
   * An existing directory another user (not us, not root) owns, for a
   * warning: they could swap what the agent writes there. A 0777 emptyDir
   * the kubelet made (root's) is the normal case in a pod, and quiet: the
   * files and the socket in it are 0600, and a file left there is replaced.
   */
  foreignOwner?: { uid: number; mode: number };
}

/**
 * Creates the config dir 0700 when it is absent: it holds bootstraps with
 * node metadata and the XDS socket. An existing one keeps its mode
 * (`--configPath /tmp` must not turn /tmp private, nor a pod's emptyDir
 * fail); the caller warns when another user owns it.
 */
export async function prepareConfigDir(configPath: string): Promise<ConfigDir> {
  try {
    const info = await stat(configPath).catch(absentAsUndefined);
    if (!info) return (await makeDirs(configPath), {});
    if (!info.isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' });
    const ours = info.uid === 0 || info.uid === process.getuid?.();
    return ours ? {} : { foreignOwner: { uid: info.uid, mode: info.mode & 0o7777 } };
  } catch (error) {
    throw badFlag('--configPath', `${configPath} is not a writable directory (${(error as NodeJS.ErrnoException).code})`, error);
  }
}

function absentAsUndefined(error: NodeJS.ErrnoException): undefined {
  if (error.code === 'ENOENT') return undefined;
  throw error;
}

/**
 * `mkdir -p` with 0700, one level at a time: Node's recursive mkdir spins
 * forever on paths like /proc/sys/x, where mkdir says ENOENT under a
 * directory that exists.
 */
async function makeDirs(path: string): Promise<void> {
  try {
    await mkdir(path, { mode: 0o700 });
  } catch (error) {
    const parent = dirname(path);
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || parent === path) throw error;
    const parentInfo = await stat(parent).catch(absentAsUndefined);
    if (parentInfo) throw error;
    await makeDirs(parent);
    await mkdir(path, { mode: 0o700 });
  }
}

/**
 * Writes an epoch's bootstrap (mode 0600) and returns its path. A file left
 * there (another agent's, a user's) is removed first: writeFile's mode only
 * applies to a file it creates, and the bootstrap carries node metadata.
 */
export async function writeBootstrap(configPath: string, epoch: number, text: string, extension?: string): Promise<string> {
  const path = bootstrapPath(configPath, epoch, extension);
  try {
    await rm(path, { force: true });
    await writeFile(path, text, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    throw badFlag('--configPath', `cannot write ${path} (${(error as NodeJS.ErrnoException).code})`, error);
  }
  return path;
}

/**
 * Whether an earlier agent left an epoch's bootstrap in `configPath`. Each is written
 * before its Envoy's spawn and removed after its exit: an Envoy can be left
 * running here only where its bootstrap was left too.
 */
export async function bootstrapsLeftIn(configPath: string): Promise<boolean> {
  const names = await readdir(configPath).catch(() => [] as string[]);
  return names.some((name) => /^envoy-rev\d+\./.test(name));
}

/** Removes an epoch's bootstrap once that epoch has exited. */
export async function removeBootstrap(configPath: string, epoch: number, extension?: string): Promise<void> {
  await rm(bootstrapPath(configPath, epoch, extension), { force: true });
}
