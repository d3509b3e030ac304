/**
 * The status server for its own tests: on an ephemeral loopback port, its
 * readiness socket in a temp dir, and raw connections to it that `close`
 * destroys along with the server and the dir.
 */
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect as connectSocket, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TimerHost } from '../../src/shared/clock.ts';
import { silentLogger } from '../../src/shared/log.ts';
import type { StatusDeps } from '../../src/status/handler.ts';
import { startStatusServer, type StatusServer } from '../../src/status/server.ts';

export interface StatusRig {
  server: StatusServer;
  /** A connected socket, its errors ignored. */
  connect(): Promise<Socket>;
  close(): Promise<void>;
}

export async function startStatusRig(deps: StatusDeps, prefix: string, timers?: TimerHost): Promise<StatusRig> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const server = await startStatusServer({ port: 0, readinessSocketPath: join(dir, 'READINESS'), deps, logger: silentLogger, timers });
  const sockets: Socket[] = [];
  return {
    server,
    connect: async () => {
      const socket = connectSocket(server.port, '127.0.0.1');
      sockets.push(socket);
      socket.on('error', () => undefined);
      await once(socket, 'connect');
      return socket;
    },
    close: async () => {
      for (const socket of sockets.splice(0)) socket.destroy();
      await server.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
