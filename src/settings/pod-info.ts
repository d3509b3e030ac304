import { join } from 'node:path';
import { FileRefused, readBoundedFile } from '../shared/bounded-file.ts';
import { parseDownwardApi } from '../shared/downward-api.ts';
import { badFile } from '../shared/errors.ts';

/** Kubernetes caps all of a pod's labels or annotations at 256 KiB; anything far past that is not a downward-API file. */
export const maxPodInfoBytes = 1024 * 1024;

/** Labels and annotations from the downward-API files, when mounted. */
export interface PodInfo {
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/**
 * labels and annotations from the downward-API directory (--podInfoDir), read
 * once: the annotation's ProxyConfig and the node's LABELS and ANNOTATIONS
 * come from this one reading. A missing file means "not mounted".
 */
export async function readPodInfo(dir: string): Promise<PodInfo> {
  const [labels, annotations] = await Promise.all([readDownwardApiFile(join(dir, 'labels')), readDownwardApiFile(join(dir, 'annotations'))]);
  return { labels, annotations };
}

async function readDownwardApiFile(path: string): Promise<Record<string, string> | undefined> {
  const text = await readBounded(path);
  if (text === undefined) return undefined;
  const parsed = parseDownwardApi(text);
  if (!parsed.ok) throw badFile(path, `line ${parsed.line}: ${parsed.reason} (Kubernetes downward-API format, key="value")`);
  return parsed.entries;
}

/** A regular file (symlinks followed: the downward API mounts through ..data) within the cap; a FIFO or device is refused, not waited on. */
async function readBounded(path: string): Promise<string | undefined> {
  try {
    return (await readBoundedFile(path, { maxBytes: maxPodInfoBytes })).toString('utf8');
  } catch (error) {
    if (error instanceof FileRefused) throw badFile(path, error.message, error);
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    throw badFile(path, `cannot read pod info (${code ?? (error as Error).message})`, error);
  }
}
