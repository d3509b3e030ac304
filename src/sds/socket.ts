import { lstat, mkdir, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { dirname } from 'node:path';
import { badFlag } from '../shared/errors.ts';

/**
 * Decides who serves the SDS socket. A socket someone answers on (SPIRE's
 * agent, say) is theirs: Envoy uses it and the agent serves nothing. A socket
 * nobody answers on is a leftover and is replaced. Anything else at the path
 * is a configuration mistake.
 */
export async function claimSdsSocket(path: string): Promise<'ours' | 'foreign'> {
  const info = await lstat(path).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw badFlag('--sdsSocket', `cannot inspect ${path} (${error.code ?? error.message})`, error);
  });
  if (info && !info.isSocket()) throw badFlag('--sdsSocket', `${path} exists and is not a socket`);
  if (info && (await answers(path))) return 'foreign';
  if (info) await rm(path, { force: true });
  await mkdir(dirname(path), { recursive: true, mode: 0o700 }).catch((error: NodeJS.ErrnoException) => {
    throw badFlag('--sdsSocket', `cannot create ${dirname(path)} (${error.code ?? error.message})`, error);
  });
  return 'ours';
}

/** Whether something accepts connections on the socket. */
function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(path);
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}
