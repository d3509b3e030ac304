import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { readResolvConf } from './resolv-conf.ts';

describe('readResolvConf', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'resolv-conf-'));
  after(() => rm(dir, { recursive: true, force: true }));

  it('reads the resolvers and the search list, through a symlink as systemd-resolved makes it', async () => {
    await writeFile(join(dir, 'stub'), 'nameserver 198.18.0.10\nsearch default.svc.cluster.local svc.cluster.local\n');
    await symlink(join(dir, 'stub'), join(dir, 'resolv.conf'));
    assert.deepEqual(readResolvConf([join(dir, 'resolv.conf')]), { path: join(dir, 'resolv.conf'), servers: ['198.18.0.10'], search: ['default.svc.cluster.local', 'svc.cluster.local'] });
  });

  it('refuses a FIFO at once (it hung the start) and a file past 64 KiB, forwarding nowhere', async () => {
    execFileSync('mkfifo', [join(dir, 'fifo')]);
    assert.match(readResolvConf([join(dir, 'fifo')]).unreadable ?? '', /a FIFO/);
    await writeFile(join(dir, 'huge'), `nameserver 198.18.0.10\n${'#'.repeat(70_000)}\n`);
    const huge = readResolvConf([join(dir, 'huge')]);
    assert.deepEqual([huge.servers, huge.unreadable?.includes('allowed')], [[], true]);
    assert.deepEqual(readResolvConf([join(dir, 'missing')]), { path: join(dir, 'missing'), servers: [], search: [] });
  });
});
