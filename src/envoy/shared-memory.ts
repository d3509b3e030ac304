import { readFile, rm } from 'node:fs/promises';

/**
 * Envoy keeps hot-restart state in `/dev/shm/envoy_shared_memory_<base id × 10>`
 * and never removes it. Once no epoch of a chain runs, the file is ours to
 * remove: the base id was picked for this agent (written to `baseIdPath`).
 */
export async function removeSharedMemory(baseIdPath: string, shmDir = '/dev/shm'): Promise<string | undefined> {
  const text = (await readFile(baseIdPath, 'utf8').catch(() => '')).trim();
  if (!/^\d+$/.test(text)) return undefined;
  const path = `${shmDir}/envoy_shared_memory_${Number(text) * 10}`;
  await rm(path, { force: true });
  return path;
}
