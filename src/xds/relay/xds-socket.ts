import { lstat, rm } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { AgentError } from '../../shared/errors.ts';
import { listenOnUnixSocket } from '../../shared/unix-socket.ts';

/**
 * Connections to the socket at once. Envoy holds one (two across a hot
 * restart); the socket is 0600 in a 0700 dir, so anything else is our own
 * uid. A connection with no stream open for a minute (it sent no preface,
 * or Envoy backs off) is closed, and an idle one makes room for a new one
 * before the new one is refused: Envoy's ADS connection always has its stream.
 */
export const xdsConnectionLimits = { max: 16, reservedForTrusted: 0, idleMs: 60_000 } as const;

/** Where the held connections go: the relay's HTTP/2 server (it takes a socket as a `connection` event). */
export interface ConnectionTaker {
  emit(event: 'connection', socket: Socket): boolean;
}

export interface XdsSocket {
  readonly path: string;
  /** Hands every connection held so far, and each one after, to `taker`. */
  handTo(taker: ConnectionTaker): void;
  /** Stops listening, drops connections never handed on, waits for the rest to end and removes the socket (once). */
  close(): Promise<void>;
}

/**
 * Envoy's ADS socket, bound before the relay has loaded: node:http2 and the
 * relay's modules load after Envoy's spawn (~40 ms of a pod's start), while
 * Envoy boots, and Envoy's first connection waits here, paused, instead of
 * being refused (Envoy would then back off for up to a second). At most
 * `maxConnections` wait; the taker's own cap governs once it has them.
 */
export async function bindXdsSocket(options: { path: string; mode: number; maxConnections: number }): Promise<XdsSocket> {
  await removeStaleSocket(options.path);
  const held = new Set<Socket>();
  let taker: ConnectionTaker | undefined;
  let closing: Promise<void> | undefined;
  const server: Server = createServer({ pauseOnConnect: true });
  server.maxConnections = options.maxConnections;
  server.on('connection', (socket) => {
    if (taker) return handOn(taker, socket);
    held.add(socket);
    socket.once('close', () => held.delete(socket));
  });
  await listenOnUnixSocket(server, { path: options.path, mode: options.mode, flag: '--configPath' });
  return {
    path: options.path,
    handTo(next) {
      taker = next;
      server.maxConnections = Number.POSITIVE_INFINITY; // the taker's cap governs from now on (it makes room before refusing)
      for (const socket of held) handOn(next, socket);
      held.clear();
    },
    close() {
      closing ??= closeServer(server, held, options.path);
      return closing;
    },
  };
}

/** Resolves once every connection (handed on or not) is gone and the socket file removed; once, however often it is asked. */
async function closeServer(server: Server, held: Set<Socket>, path: string): Promise<void> {
  const closed = new Promise((resolve) => server.close(resolve));
  for (const socket of held) socket.destroy();
  await closed;
  await rm(path, { force: true });
}

function handOn(taker: ConnectionTaker, socket: Socket): void {
  if (socket.destroyed) return;
  taker.emit('connection', socket);
  socket.resume();
}

/** A socket left by an earlier run is removed; anything else at that path is the operator's, and bad input. */
async function removeStaleSocket(socketPath: string): Promise<void> {
  const info = await lstat(socketPath).catch(() => undefined);
  if (!info) return;
  if (!info.isSocket())
    throw new AgentError('BAD_FLAG', `--configPath: ${socketPath} exists and is not a socket (${info.isDirectory() ? 'a directory' : 'a file'}); remove it`);
  await rm(socketPath, { force: true });
}
