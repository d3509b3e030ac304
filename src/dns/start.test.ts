import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { pino } from 'pino';
import { freePort } from '../../test/support/ports.ts';
import { Registry } from '../metrics/index.ts';
import { systemClock } from '../shared/clock.ts';
import { LastKnownGoodTable } from './last-known-good-table.ts';
import { encodeNameTable } from './name-table-wire.ts';
import { startDns } from './start.ts';

const node = 'sidecar~198.18.0.7~app.ns~ns.svc.cluster.local';
const table = (count: number) =>
  encodeNameTable(Array.from({ length: count }, (_, at) => [`svc-${at}.mesh.internal`, { ips: [`198.18.${(at >> 8) & 255}.${at & 255}`] }]));

describe('startDns: the server, then its last-known-good table', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'dns-start-'));
  after(() => rm(dir, { recursive: true, force: true }));
  const resolvConf = join(dir, 'resolv.conf');
  await writeFile(resolvConf, 'nameserver 127.0.0.53\n');

  it('a table taken just before the stop is on disk once the stop resolves: the stop waits for the table file', async () => {
    const dns = await startDns({
      address: { host: '127.0.0.1', port: await freePort() },
      forwardTimeoutMs: 1000,
      forwardParallel: false,
      pod: { namespace: 'ns', domain: 'ns.svc.cluster.local' },
      configPath: dir,
      node,
      registry: new Registry(),
      clock: systemClock,
      logger: pino({ level: 'silent' }),
      resolvConfPaths: [resolvConf],
    });
    // Big enough that writing it takes several turns of the event loop.
    assert.equal(await dns.nameTables.accept(table(20_000), 'v1'), undefined);
    await dns.stop();
    const kept = await new LastKnownGoodTable({ path: join(dir, 'dns-name-table.json'), node, now: () => systemClock.now() }).read();
    assert.deepEqual(kept.ok && kept.version, 'v1', 'the kept table is the one taken before the stop');
  });
});
