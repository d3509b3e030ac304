import { createHash, createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { FileRefused, readBoundedFile, readBoundedFileSync } from '../shared/bounded-file.ts';
import { pemBlocksOpened, pemCertificates } from '../shared/pem.ts';
import { groupPaths, type CertGroup } from './cert-files.ts';

/** One watched file as read: content, absent, or unreadable (with the error code). */
export interface FileRead {
  path: string;
  content?: Buffer;
  /** Set when the file exists but cannot be read (EACCES, EISDIR…). */
  error?: string;
}

/** Why a set of files is not one Envoy can start with; names the file at fault. */
export interface CertProblem {
  file: string;
  reason: string;
}

/** A certificate file, a chain or a CA bundle (the OS's is ~200 KiB): past this it is not one. */
export const certFileMaxBytes = 4 * 1024 * 1024;

/**
 * Reads every file once, so the check and the hash see the same bytes.
 * Only regular files within the cap (symlinks followed, as a secret volume
 * mounts them): a FIFO or a device at a watched path is unreadable, not a
 * read that never ends.
 */
export function readCertFiles(paths: readonly string[]): Promise<FileRead[]> {
  return Promise.all(paths.map(async (path): Promise<FileRead> => {
    try {
      return { path, content: await readBoundedFile(path, { maxBytes: certFileMaxBytes }) };
    } catch (error) {
      if (error instanceof FileRefused) return { path, error: error.message };
      const code = (error as NodeJS.ErrnoException).code ?? String(error);
      return code === 'ENOENT' || code === 'ENOTDIR' ? { path } : { path, error: code };
    }
  }));
}

/**
 * SHA-256 over the files' contents, in order: the desired config. A missing
 * file counts as absent, distinct from an empty one.
 */
export function hashCertFiles(files: readonly FileRead[]): string {
  const hash = createHash('sha256');
  for (const file of files) {
    hash.update(`${file.path}\0${file.content ? file.content.length : -1}\0`);
    if (file.content) hash.update(file.content);
  }
  return hash.digest('hex');
}

export { shortHash } from '../shared/short-hash.ts';

/**
 * The first reason the files are not a consistent set, or undefined when
 * they are. Absent groups are fine (no certificates at all); a half-written
 * file, a non-PEM file or a key that does not match its certificate is not.
 */
export function checkCertFiles(groups: readonly CertGroup[], files: readonly FileRead[]): CertProblem | undefined {
  const byPath = new Map(files.map((file) => [file.path, file]));
  for (const path of groupPaths(groups)) {
    const error = byPath.get(path)?.error;
    if (error) return { file: path, reason: `cannot read (${error})` };
  }
  for (const group of groups) {
    const problem = checkGroup(group, byPath);
    if (problem) return problem;
  }
  return undefined;
}

function checkGroup(group: CertGroup, byPath: ReadonlyMap<string, FileRead>): CertProblem | undefined {
  const cert = byPath.get(group.cert)?.content;
  const key = group.key ? byPath.get(group.key)?.content : undefined;
  if (!cert && !key) return undefined;
  if (!cert) return { file: group.cert, reason: `missing while its key ${group.key} is present` };
  const certs = parseCertificates(cert);
  if (typeof certs === 'string') return { file: group.cert, reason: certs };
  if (!group.key) return undefined;
  if (!key) return { file: group.key, reason: `missing while its certificate ${group.cert} is present` };
  const privateKey = parseKey(key);
  if (typeof privateKey === 'string') return { file: group.key, reason: privateKey };
  if (!certs[0]!.checkPrivateKey(privateKey)) return { file: group.key, reason: `does not match the certificate in ${group.cert}` };
  return undefined;
}

/** Every PEM block must be complete and parse: a truncated chain is not a chain. */
function parseCertificates(content: Buffer): X509Certificate[] | string {
  const text = content.toString('utf8');
  const blocks = pemCertificates(text);
  if (blocks.length === 0) return 'not a PEM certificate (no complete CERTIFICATE block)';
  if (blocks.length !== pemBlocksOpened(text)) return 'has an incomplete or non-certificate PEM block (half-written?)';
  try {
    return blocks.map((block) => new X509Certificate(block));
  } catch (error) {
    return `not a valid certificate (${(error as Error).message})`;
  }
}

function parseKey(content: Buffer): KeyObject | string {
  try {
    return createPrivateKey(content);
  } catch (error) {
    return `not a valid PEM private key (${(error as Error).message})`;
  }
}

/** notAfter of the first certificate in a PEM chain file (the restart gate's input); undefined when it cannot be read. */
export function readCertNotAfter(path: string): number | undefined {
  try {
    // Synchronous: a FIFO or device here would otherwise stall the whole agent.
    return Date.parse(new X509Certificate(readBoundedFileSync(path, { maxBytes: certFileMaxBytes })).validTo);
  } catch {
    return undefined;
  }
}
