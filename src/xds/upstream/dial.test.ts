import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { keepaliveDefaults } from '../../grpc/keepalive.ts';
import { FakeClock } from '../../shared/clock.ts';
import type { XdsStats } from '../relay/stats.ts';
import type { HeldCertificate, UpstreamCredential } from './credentials.ts';
import { dialWithCredentials, RefusedCertificate } from './dial.ts';
import type { UpstreamOptions } from './material.ts';
import { UpstreamDialError, type UpstreamStream } from './session.ts';

const certificate = (chain: string): HeldCertificate => ({ chain: Buffer.from(chain), key: Buffer.from('key'), expiresAt: Number.MAX_SAFE_INTEGER });

test('a certificate the discovery server refused is held back until the CA issues another', () => {
  let held: HeldCertificate | undefined = certificate('first');
  const upstream: UpstreamOptions = { address: { host: 'istiod', port: 15012 }, policy: 'TLS', certDir: '/certs', heldCertificate: () => held };
  const refused = new RefusedCertificate();
  const offered = () => refused.filter(upstream).heldCertificate?.()?.chain.toString();
  const steps: [step: string, act: () => void, expected: string | undefined][] = [
    ['nothing refused yet', () => undefined, 'first'],
    ['the server refuses it', () => refused.refuse(Buffer.from('first')), undefined],
    ['the same bytes again (a re-read)', () => (held = certificate('first')), undefined],
    ['the CA renews', () => (held = certificate('renewed')), 'renewed'],
    ['the renewed one is refused too', () => refused.refuse(Buffer.from('renewed')), undefined],
  ];
  for (const [step, act, expected] of steps) {
    act();
    assert.equal(offered(), expected, step);
  }
  assert.equal(refused.filter({ ...upstream, heldCertificate: undefined }).heldCertificate, undefined, 'no CA: nothing to hold back');
});

/** dialWithCredentials with a fake dial: what it logged, counted and held back. */
async function dialOnce(options: {
  policy: UpstreamOptions['policy'];
  dial: (upstream: UpstreamOptions) => Partial<UpstreamStream> | UpstreamDialError;
  held?: HeldCertificate;
}) {
  const lines: { level: number; msg: string; credential?: string; reason?: string; next?: string }[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const counted: string[] = [];
  const stats = { upstreamDial: (credential: string, result: string) => void counted.push(`${credential} ${result}`) } as unknown as XdsStats;
  const refused = new RefusedCertificate();
  const upstream: UpstreamOptions = {
    address: { host: 'istiod', port: 15012 },
    policy: options.policy,
    certDir: '/certs',
    heldCertificate: options.held && (() => options.held),
  };
  const seen: (Buffer | undefined)[] = [];
  const dial = async (filtered: UpstreamOptions) => {
    seen.push(filtered.heldCertificate?.()?.chain);
    const outcome = options.dial(filtered);
    if (outcome instanceof UpstreamDialError) throw outcome;
    return outcome as UpstreamStream;
  };
  const clock = new FakeClock(0);
  const result = await dialWithCredentials({ upstream, refused, path: '/ads', keepalive: keepaliveDefaults, clock, stats, logger, dial }).catch(
    (error: Error) => error,
  );
  const again = await dialWithCredentials({
    upstream,
    refused,
    path: '/ads',
    keepalive: keepaliveDefaults,
    clock,
    stats,
    logger,
    dial: async (filtered) => (seen.push(filtered.heldCertificate?.()?.chain), connected({})),
  }).catch((error: Error) => error);
  return { lines, counted, result, again, seen };
}

const connected = (extra: Partial<UpstreamStream>): UpstreamStream =>
  ({ credential: 'token', held: { present: false, reason: 'none-held' }, ...extra }) as UpstreamStream;
const refusal = (credential: UpstreamCredential) => new UpstreamDialError('refused', { cause: undefined, credential, tls: 'client-certificate-refused' });

test('a dial says which credential it carried, and a refused client certificate is loud and, for TLS, held back', async () => {
  const held = certificate('mine');
  const rows: {
    name: string;
    policy: UpstreamOptions['policy'];
    dial: () => Partial<UpstreamStream> | UpstreamDialError;
    counted: string[];
    logs: string[];
    secondOffers: string | undefined;
  }[] = [
    {
      name: 'connected with the token',
      policy: 'TLS',
      dial: () => connected({ credential: 'certificate+token', held: { present: true, certificate: held } }),
      counted: ['certificate+token connected', 'token connected'],
      logs: ['connected to the discovery server', 'connected to the discovery server'],
      secondOffers: 'mine',
    },
    {
      name: 'the token unreadable',
      policy: 'TLS',
      dial: () => connected({ credential: 'certificate', tokenProblem: 'cannot read' }),
      counted: ['certificate connected', 'token connected'],
      logs: [
        'token left out: unreadable, and the workload certificate speaks for us',
        'connected to the discovery server',
        'connected to the discovery server',
      ],
      secondOffers: 'mine',
    },
    {
      name: 'the held certificate expired',
      policy: 'TLS',
      dial: () => connected({ held: { present: false, reason: 'expired' } }),
      counted: ['token connected', 'token connected'],
      logs: ['the workload certificate has expired: the token alone speaks for us', 'connected to the discovery server', 'connected to the discovery server'],
      secondOffers: 'mine',
    },
    {
      name: 'TLS: our certificate refused',
      policy: 'TLS',
      dial: () => refusal('certificate+token'),
      counted: ['certificate+token certificate_refused', 'token connected'],
      logs: ['the discovery server refused our client certificate', 'connected to the discovery server'],
      secondOffers: undefined,
    },
    {
      name: 'MUTUAL_TLS: our files refused',
      policy: 'MUTUAL_TLS',
      dial: () => refusal('certificate'),
      counted: ['certificate certificate_refused', 'token connected'],
      logs: ['the discovery server refused our client certificate', 'connected to the discovery server'],
      secondOffers: 'mine',
    },
    {
      name: 'a server down',
      policy: 'TLS',
      dial: () => new UpstreamDialError('down', { cause: undefined, credential: 'token' }),
      counted: ['token failed', 'token connected'],
      logs: ['connected to the discovery server'],
      secondOffers: 'mine',
    },
  ];
  for (const row of rows) {
    const { lines, counted, result, again, seen } = await dialOnce({ policy: row.policy, dial: row.dial, held });
    assert.deepEqual(counted, row.counted, row.name);
    assert.deepEqual(lines.map((line) => line.msg), row.logs, row.name);
    assert.equal(result instanceof Error, row.dial() instanceof UpstreamDialError, row.name);
    assert.ok(!(again instanceof Error), row.name);
    assert.equal(seen[0]?.toString(), 'mine', `${row.name}: the first dial offers the held certificate`);
    assert.equal(seen[1]?.toString(), row.secondOffers, `${row.name}: what the next dial offers`);
    const refusedLine = lines.find((line) => line.msg.includes('refused our client certificate'));
    if (refusedLine) {
      assert.equal(refusedLine.level, 50, row.name);
      assert.equal(
        refusedLine.next,
        row.policy === 'TLS' ? 'the token only, until the CA issues another certificate' : 'the same files, until they change',
        row.name,
      );
      assert.equal(refusedLine.reason, 'refused', row.name);
    }
  }
});

test('a failure that is not a dial error passes through uncounted', async () => {
  const { counted, result } = await dialOnce({ policy: 'TLS', dial: () => { throw new TypeError('a bug'); } });
  assert.ok(result instanceof TypeError);
  assert.deepEqual(counted, ['token connected']);
});

test("the dial gets the path, keepalive and the clock's now; the lines carry the credential and the token problem; a refusal with no certificate held still counts", async () => {
  const lines: { msg: string; credential?: string; reason?: string }[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const counted: string[] = [];
  const stats = { upstreamDial: (credential: string, result: string) => void counted.push(`${credential} ${result}`) } as unknown as XdsStats;
  const upstream: UpstreamOptions = { address: { host: 'istiod', port: 15012 }, policy: 'TLS', certDir: '/certs' };
  const seen: unknown[] = [];
  const options = { upstream, refused: new RefusedCertificate(), path: '/ads', keepalive: keepaliveDefaults, clock: new FakeClock(1234), stats, logger };
  await dialWithCredentials({ ...options, dial: async (_upstream, dial) => (seen.push(dial), connected({ credential: 'token', tokenProblem: 'ENOENT' })) });
  assert.deepEqual(seen, [{ path: '/ads', keepalive: keepaliveDefaults, now: 1234 }]);
  assert.deepEqual(
    lines.map(({ msg, credential, reason }) => ({ msg, credential, reason })),
    [
      { msg: 'token left out: unreadable, and the workload certificate speaks for us', credential: undefined, reason: 'ENOENT' },
      { msg: 'connected to the discovery server', credential: 'token', reason: undefined },
    ],
  );
  await assert.rejects(
    dialWithCredentials({
      ...options,
      dial: async () => {
        throw refusal('token');
      },
    }),
    UpstreamDialError,
  );
  assert.deepEqual(counted, ['token connected', 'token certificate_refused']);
});
