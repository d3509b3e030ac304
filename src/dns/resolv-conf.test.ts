import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { existsSync } from 'node:fs';
import { istioResolvConf, parseResolvConf, readResolvConf } from './resolv-conf.ts';

describe('readResolvConf', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'resolv-conf-'));
  after(() => rm(dir, { recursive: true, force: true }));

  it('reads the resolvers and the search list, through a symlink as systemd-resolved makes it', async () => {
    await writeFile(join(dir, 'stub'), 'nameserver 198.18.0.10\nsearch default.svc.cluster.local svc.cluster.local\n');
    await symlink(join(dir, 'stub'), join(dir, 'resolv.conf'));
    assert.deepEqual(readResolvConf([join(dir, 'resolv.conf')]), {
      path: join(dir, 'resolv.conf'),
      servers: ['198.18.0.10'],
      search: ['default.svc.cluster.local', 'svc.cluster.local'],
    });
  });

  it('refuses a FIFO at once (it hung the start) and a file past 64 KiB, forwarding nowhere', async () => {
    execFileSync('mkfifo', [join(dir, 'fifo')]);
    const fifo = readResolvConf([join(dir, 'fifo')]);
    assert.deepEqual([fifo.servers, fifo.search], [[], []]);
    assert.match(fifo.unreadable ?? '', /a FIFO/);
    await writeFile(join(dir, 'huge'), `nameserver 198.18.0.10\n${'#'.repeat(70_000)}\n`);
    const huge = readResolvConf([join(dir, 'huge')]);
    assert.deepEqual([huge.servers, huge.unreadable?.includes('allowed')], [[], true]);
    assert.deepEqual(readResolvConf([join(dir, 'missing')]), { path: join(dir, 'missing'), servers: [], search: [] });
  });

  it('reads the first that exists, Istio\'s own before /etc/resolv.conf', async () => {
    await writeFile(join(dir, 'second'), 'nameserver 198.18.0.2\n');
    await writeFile(join(dir, 'third'), 'nameserver 198.18.0.3\n');
    assert.deepEqual(readResolvConf([join(dir, 'absent'), join(dir, 'second'), join(dir, 'third')]).servers, ['198.18.0.2']);
    assert.equal(istioResolvConf, '/var/lib/istio/resolv.conf');
    const expected = existsSync(istioResolvConf) ? istioResolvConf : '/etc/resolv.conf';
    assert.equal(readResolvConf().path, expected);
  });
});

describe('parseResolvConf', () => {
  const cases: [string, string, { servers: string[]; search: string[] }][] = [
    ['nothing', '', { servers: [], search: [] }],
    ['tabs, indents and CRLF-free lines', '  nameserver\t198.18.0.10\n\tsearch  a.test   b.test\n', { servers: ['198.18.0.10'], search: ['a.test', 'b.test'] }],
    [
      'every nameserver in order, IPv6 with its zone id dropped',
      'nameserver 198.18.0.10\nnameserver 2001:2::53%eth0\nnameserver ::1\n',
      { servers: ['198.18.0.10', '2001:2::53', '::1'], search: [] },
    ],
    [
      'comments after # and ;, whole lines and trailing',
      "# nameserver 198.18.0.1\n; nameserver 198.18.0.2\nnameserver 198.18.0.3 # the pod's\nsearch a.test;b.test\n",
      { servers: ['198.18.0.3'], search: ['a.test'] },
    ],
    ['runs of spaces between words', 'nameserver   198.18.0.10\nsearch    a.test\n', { servers: ['198.18.0.10'], search: ['a.test'] }],
    ['a nameserver that is no address, or none', 'nameserver resolver.test\nnameserver\nnameserver 198.18.0.999\n', { servers: [], search: [] }],
    ['the last search or domain line wins', 'search a.test b.test\ndomain c.test\n', { servers: [], search: ['c.test'] }],
    ['a search line after domain', 'domain c.test\nsearch a.test\n', { servers: [], search: ['a.test'] }],
    ['an empty search line empties the list', 'search a.test\nsearch\n', { servers: [], search: [] }],
    ['keywords are case-sensitive, as glibc reads them', 'NAMESERVER 198.18.0.10\nSearch a.test\noptions ndots:5\n', { servers: [], search: [] }],
  ];
  for (const [name, text, want] of cases) it(name, () => assert.deepEqual(parseResolvConf(text), want));
});
