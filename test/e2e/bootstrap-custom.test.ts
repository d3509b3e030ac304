import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { assertGone, startAgent } from '../support/agent.ts';
import { freePort } from '../support/ports.ts';

/** Envoy's bootstrap with admin where the agent looks and one listener that answers by itself. */
function bootstrap(adminPort: number, listenerPort: number, body: string, adminHost = '127.0.0.1') {
  const directResponse = {
    name: 'envoy.filters.network.http_connection_manager',
    typed_config: {
      '@type': 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
      stat_prefix: 'custom',
      http_filters: [{ name: 'envoy.filters.http.router', typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' } }],
      route_config: {
        virtual_hosts: [{ name: 'all', domains: ['*'], routes: [{ match: { prefix: '/' }, direct_response: { status: 200, body: { inline_string: body } } }] }],
      },
    },
  };
  return {
    admin: { address: { socket_address: { address: adminHost, port_value: adminPort } } },
    static_resources: {
      listeners: [
        { name: 'custom', address: { socket_address: { address: '127.0.0.1', port_value: listenerPort } }, filter_chains: [{ filters: [directResponse] }] },
      ],
    },
  };
}

/** Envoys whose command line names this directory, found in /proc rather than in the agent's log. */
function envoysUnder(dir: string): number[] {
  return readdirSync('/proc').filter((name) => /^\d+$/.test(name)).filter((pid) => {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      return /envoy$/.test(argv[0] ?? '') && argv.some((arg) => arg.startsWith(dir));
    } catch {
      return false;
    }
  }).map(Number);
}

async function get(port: number, timeoutMs = 15_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const response = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(2000) }).catch(() => undefined);
    if (response?.status === 200) return response.text();
    if (Date.now() > deadline) throw new Error(`no 200 from Envoy on ${port}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('--customConfigFile is used as is, in JSON or YAML', () => {
  let dir: string;
  before(async () => (dir = await mkdtemp(join(tmpdir(), 'pilot-agent-custom-'))));
  after(() => rm(dir, { recursive: true, force: true }));

  for (const format of ['yaml', 'json'] as const) {
    it(`a ${format} bootstrap runs in the real Envoy`, async () => {
      const [adminPort, listenerPort] = [await freePort(), await freePort()];
      const content = bootstrap(adminPort, listenerPort, `custom ${format}`);
      const file = join(dir, `custom.${format}`);
      await writeFile(file, format === 'yaml' ? stringify(content) : JSON.stringify(content));
      const agent = await startAgent({ discoveryAddress: '127.0.0.1:1', args: ['--customConfigFile', file, '--proxyAdminPort', String(adminPort)] });
      const agentDir = agent.dir;
      try {
        assert.equal(await get(listenerPort), `custom ${format}`);
        await agent.log.waitFor((entry) => entry.msg === 'epoch live', 15_000, 'epoch live');
        assert.ok(envoysUnder(agentDir).length >= 1, 'an Envoy runs with this config dir');
      } finally {
        const result = await agent.stop('SIGTERM');
        assert.equal(result.exitCode, 0, agent.stderr());
        await assertGone(envoysUnder(agentDir));
        await assertGone(agent.envoyPids());
      }
    });
  }

  it('a bootstrap with admin on ::1 (an IPv6-only pod\'s) is watched there: the epoch goes live', async () => {
    const [adminPort, listenerPort] = [await freePort(), await freePort()];
    const file = join(dir, 'custom-v6-admin.json');
    await writeFile(file, JSON.stringify(bootstrap(adminPort, listenerPort, 'custom v6 admin', '::1')));
    const agent = await startAgent({ discoveryAddress: '127.0.0.1:1', args: ['--customConfigFile', file, '--proxyAdminPort', String(adminPort)] });
    try {
      assert.equal(await get(listenerPort), 'custom v6 admin');
      await agent.log.waitFor((entry) => entry.msg === 'epoch live', 15_000, 'epoch live, seen through admin on ::1');
    } finally {
      assert.equal((await agent.stop('SIGTERM')).exitCode, 0, agent.stderr());
      await assertGone(agent.envoyPids());
    }
  });
});
