import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { test } from 'node:test';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import { checkEnvoyPortsFree } from './ports.ts';

const listen = (host: string): Promise<Server> =>
  new Promise((resolve) => {
    const server = createServer();
    server.listen(0, host, () => resolve(server));
  });
const portOf = (server: Server) => (server.address() as { port: number }).port;
const config = (ports: Partial<AgentConfig>) => ({ proxyAdminPort: 1, prometheusPort: 0, readinessPort: 0, statusPort: 0, ...ports }) as AgentConfig;

test('a port someone holds is bad input naming the flag and the port', async () => {
  const held = await listen('127.0.0.1');
  const free = await listen('127.0.0.1');
  const freePort = portOf(free);
  await new Promise((resolve) => free.close(resolve));
  try {
    await assert.rejects(checkEnvoyPortsFree(config({ proxyAdminPort: portOf(held) })), {
      code: 'BAD_FLAG',
      message: new RegExp(`^--proxyAdminPort: port ${portOf(held)} on 127.0.0.1 is not free \\(EADDRINUSE\\)`),
    });
    await assert.rejects(checkEnvoyPortsFree(config({ proxyAdminPort: freePort, prometheusPort: portOf(held) })), { message: /^--prometheusPort: / });
    await assert.rejects(checkEnvoyPortsFree(config({ proxyAdminPort: freePort, statusPort: 1, readinessPort: portOf(held) })), {
      message: /^--readinessPort: /,
    });
    await checkEnvoyPortsFree(config({ proxyAdminPort: freePort, readinessPort: portOf(held) }));
  } finally {
    held.close();
  }
});
