import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pino from 'pino';
import { FakeClock } from '../shared/clock.ts';
import { makeCsrSigner, type CsrSigner } from '../../test/support/csr-signer.ts';
import type { CaResult } from './ca-client.ts';
import { buildCsr, generateWorkloadKey } from './csr.ts';
import { WorkloadCertificates, type IssuedCertificate } from './workload-certificates.ts';

const identity = 'spiffe://cluster.local/ns/default/sa/reviews';
const hour = 3_600_000;
let signer: CsrSigner;
before(async () => (signer = await makeCsrSigner()));
after(() => signer.close());

/** A CA whose answers the test scripts, one per call; calls are counted. */
function scriptedCa(answers: ((csr: string) => Promise<CaResult>)[]) {
  const calls: string[] = [];
  return {
    calls,
    sign: (csr: string) => {
      calls.push(csr);
      const answer = answers[Math.min(calls.length, answers.length) - 1]!;
      return answer(csr);
    },
  };
}

const issues = (uri?: string) => async (csr: string): Promise<CaResult> => ({ ok: true, chain: [await signer.sign(csr, { uri }), signer.root] });
const refuses = (code: string) => async (): Promise<CaResult> => ({ ok: false, code, message: 'scripted refusal' });

function rig(
  ca: ReturnType<typeof scriptedCa>,
  startOffsetMs = 0,
  extra: { publish?: (certificate: IssuedCertificate) => void; trustedRoots?: () => Promise<string | undefined>; random?: () => number } = {},
) {
  const clock = new FakeClock(Date.now() + startOffsetMs);
  const published: IssuedCertificate[] = [];
  const problems: (string | undefined)[] = [];
  let settle: () => void = () => undefined;
  const certs = new WorkloadCertificates({
    clock,
    logger: pino({ level: 'silent' }),
    identity,
    key: { algorithm: 'ECDSA' },
    sign: ca.sign,
    graceRatio: 0.5,
    jitterRatio: 0,
    random: extra.random ?? (() => 0.5),
    trustedRoots: extra.trustedRoots ?? (async () => signer.root),
    publish: (certificate) => (extra.publish?.(certificate), published.push(certificate)),
    reportProblem: (reason) => problems.push(reason),
    onResult: () => settle(),
  });
  /** Moves the clock and waits for the request that the move started to finish. */
  const advance = async (ms: number) => {
    const done = new Promise<void>((resolve) => (settle = resolve));
    clock.advance(ms);
    // A bound, not a sleep: a move that starts no request fails here instead of at the runner's timeout.
    const guard = AbortSignal.timeout(10_000);
    await Promise.race([
      done,
      new Promise((_, reject) => guard.addEventListener('abort', () => reject(new Error(`no CA request finished after advancing ${ms} ms`)))),
    ]);
  };
  /** One second on; when that fired the retry timer, waits for the request it started. */
  const tick = async () => {
    const done = new Promise<void>((resolve) => (settle = resolve));
    clock.advance(1000);
    if (clock.pending === 0) await done;
  };
  return { clock, certs, published, problems, advance, tick };
}

test('a certificate is issued at start and renewed half-way through its lifetime', async () => {
  const ca = scriptedCa([issues()]);
  const { certs, clock, published, problems, advance } = rig(ca);
  await certs.start();
  assert.equal(published.length, 1);
  assert.deepEqual(problems, [undefined]);
  assert.equal(published[0]!.root, signer.root);
  clock.advance(11 * hour);
  assert.equal(ca.calls.length, 1, 'not renewed before the grace point');
  await advance(1.1 * hour);
  assert.equal(published.length, 2);
  assert.notEqual(published[1]!.serial, published[0]!.serial);
  assert.notEqual(ca.calls[1], ca.calls[0], 'a new key and CSR for every renewal');
  certs.stop();
});

test('while the CA is down at start, readiness hears why and the agent retries with backoff', async () => {
  const ca = scriptedCa([refuses('UNAVAILABLE'), refuses('UNAVAILABLE'), issues()]);
  const { certs, published, problems, advance } = rig(ca);
  await certs.start();
  assert.match(problems.at(-1)!, /UNAVAILABLE/);
  await advance(1000);
  assert.equal(ca.calls.length, 2);
  await advance(2000);
  assert.equal(published.length, 1);
  assert.equal(problems.at(-1), undefined);
  certs.stop();
});

test('a failed renewal keeps the current certificate serving and says nothing is wrong', async () => {
  const ca = scriptedCa([issues(), refuses('UNAVAILABLE'), issues()]);
  const { certs, published, problems, advance } = rig(ca);
  await certs.start();
  await advance(12.5 * hour); // past the grace point of a 24 h certificate signed a moment after the clock was made
  assert.equal(ca.calls.length, 2);
  assert.equal(published.length, 1);
  assert.deepEqual(problems, [undefined]);
  await advance(1000);
  assert.equal(published.length, 2);
  certs.stop();
});

test('a certificate for another identity is refused, never published', async () => {
  const ca = scriptedCa([issues('spiffe://cluster.local/ns/default/sa/other')]);
  const { certs, published, problems } = rig(ca);
  await certs.start();
  assert.equal(published.length, 0);
  assert.match(problems.at(-1)!, /BAD_CERTIFICATE.*names spiffe:\/\/cluster\.local\/ns\/default\/sa\/other/);
  assert.match(certs.problem()!, /refused the CA's answer \(BAD_CERTIFICATE/);
  certs.stop();
});

/** A CA that signs a CSR of its own key with our identity: the certificate is right in every way but the key. */
const issuesForAnotherKey = async (): Promise<CaResult> => {
  const other = buildCsr({ key: await generateWorkloadKey('ECDSA'), uri: identity, organization: 'cluster.local' });
  return { ok: true, chain: [await signer.sign(other), signer.root] };
};

test('a certificate with our identity but another key is refused, never published', async () => {
  const ca = scriptedCa([issuesForAnotherKey]);
  const { certs, published, problems } = rig(ca);
  await certs.start();
  assert.equal(published.length, 0);
  assert.match(problems.at(-1)!, /BAD_CERTIFICATE.*not for the key the CSR carried/);
  certs.stop();
});

test('stop cancels the renewal timer', async () => {
  const ca = scriptedCa([issues()]);
  const { certs, clock } = rig(ca);
  await certs.start();
  certs.stop();
  assert.equal(clock.pending, 0);
});

test('the lifetime counts from receipt, not from a backdated notBefore: no renewal loop for late or short certificates', async () => {
  // The certificate arrives 10 h into its 24 h: half of what is left is 7 h away (counting from notBefore: 2 h).
  const ca = scriptedCa([issues()]);
  const { certs, clock } = rig(ca, 10 * hour);
  const delays: number[] = [];
  const schedule = clock.setTimeout.bind(clock);
  clock.setTimeout = (callback, ms) => (delays.push(ms), schedule(callback, ms));
  await certs.start();
  assert.equal(delays.length, 1);
  assert.ok(Math.abs(delays[0]! - 7 * hour) < 5 * 60_000, `renewal in ${delays[0]! / hour} h`);
  certs.stop();
});

const hostile: [string, (csr: string) => Promise<CaResult>, RegExp, number?][] = [
  [
    'a valid leaf followed by an element that is not a certificate',
    async (csr) => ({ ok: true, chain: [await signer.sign(csr), 'not a certificate'] }),
    /chain element 1 holds no PEM certificate/,
  ],
  [
    'a key block in the chain',
    async (csr) => ({ ok: true, chain: [await signer.sign(csr), `${signer.root}-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n`] }),
    /PRIVATE KEY block/,
  ],
  [
    'the leaf as its own root',
    async (csr) => {
      const leaf = await signer.sign(csr);
      return { ok: true, chain: [leaf, leaf] };
    },
    /names the leaf itself as its root/,
  ],
  [
    'a root other than the trusted one',
    async (csr) => ({ ok: true, chain: [await signer.sign(csr), otherRoot] }),
    /is not signed by the next one|is not a root this agent trusts/,
  ],
  ['an expired leaf (our clock two days on)', issues(), /the leaf expired at/, 2 * 24 * hour],
  ['a leaf not yet valid (our clock an hour behind)', issues(), /the leaf is not valid before/, -hour],
];
let otherRoot: string;
before(async () => {
  const other = await makeCsrSigner();
  otherRoot = other.root;
  await other.close();
});

for (const [name, answer, reason, offset] of hostile) {
  test(`at start, ${name} is refused in one line, never published, and retried with backoff`, async () => {
    const ca = scriptedCa([answer]);
    const { certs, published, problems, tick } = rig(ca, offset ?? 0);
    await certs.start();
    assert.equal(published.length, 0);
    assert.match(problems.at(-1)!, reason);
    assert.match(certs.problem()!, /^refused the CA's answer \(BAD_CERTIFICATE: /);
    // A minute of refusals: gRPC's backoff (1, 1.6, 2.6, 4.1, 6.6, 10.5, 16.8 s…) makes 7 more calls, where a 1 s loop made 60.
    for (let second = 0; second < 60; second++) await tick();
    assert.ok(ca.calls.length >= 6 && ca.calls.length <= 9, `${ca.calls.length} calls in a minute`);
    assert.equal(published.length, 0);
    certs.stop();
  });
}

test('at renewal, a refused answer keeps the current certificate serving and readiness unaffected', async () => {
  const ca = scriptedCa([issues(), async (csr) => ({ ok: true, chain: [await signer.sign(csr), 'garbage'] }), issues()]);
  const { certs, published, problems, advance } = rig(ca);
  await certs.start();
  const first = certs.current!.serial;
  await advance(12.5 * hour);
  assert.equal(ca.calls.length, 2);
  assert.equal(published.length, 1);
  assert.equal(certs.current!.serial, first);
  assert.equal(certs.problem(), undefined);
  assert.deepEqual(problems, [undefined]);
  await advance(1000);
  assert.equal(published.length, 2, 'the retry after the refusal is issued');
  certs.stop();
});

test('nothing that goes wrong with an answer escapes as a rejection: a throwing publish is logged and retried', async () => {
  const escaped: unknown[] = [];
  const onRejection = (reason: unknown) => escaped.push(reason);
  process.on('unhandledRejection', onRejection);
  try {
    let throws = 2;
    const ca = scriptedCa([issues()]);
    const { certs, clock, published, advance } = rig(ca, 0, { publish: () => { if (throws-- > 0) throw new Error('store broke'); } });
    await certs.start();
    assert.equal(published.length, 0);
    assert.equal(clock.pending, 1, 'a retry is scheduled');
    await advance(1000);
    await advance(1600);
    assert.equal(published.length, 1);
    const bare = rig(scriptedCa([async () => { throw undefined; }]));
    await bare.certs.start();
    assert.match(bare.certs.problem()!, /INTERNAL: undefined/, 'even a thrown undefined');
    bare.certs.stop();
    const failing = scriptedCa([async () => { throw new Error('the transport threw'); }]);
    const second = rig(failing, 0, { trustedRoots: async () => { throw new Error('root file vanished'); } });
    await second.certs.start();
    assert.match(second.certs.problem()!, /INTERNAL: the transport threw/);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(escaped, []);
    certs.stop();
    second.certs.stop();
  } finally {
    process.off('unhandledRejection', onRejection);
  }
});

test('readiness turns at the certificate\'s expiry while the CA keeps failing, not at the next failed retry', async () => {
  let release: (result: CaResult) => void = () => undefined;
  let asked: () => void = () => undefined;
  const renewalAsked = new Promise<void>((resolve) => (asked = resolve));
  const ca = scriptedCa([issues(), () => (asked(), new Promise<CaResult>((resolve) => (release = resolve)))]);
  const { certs, clock } = rig(ca);
  await certs.start();
  const expiresAt = certs.current!.expiresAt;
  clock.advance(12.5 * hour); // the renewal starts, and the CA does not answer
  await renewalAsked;
  clock.advance(expiresAt - clock.now() - 1);
  assert.equal(certs.problem(), undefined, 'valid for one more millisecond');
  clock.advance(1);
  assert.match(certs.problem()!, /^the workload certificate expired at .* and no new one was issued/);
  release({ ok: false, code: 'UNAVAILABLE', message: 'late' });
  certs.stop();
});

test('retries after failures take their jitter from the injected random source: agents that failed together retry apart', async () => {
  const delays = async (draw: number) => {
    const ca = scriptedCa([refuses('UNAVAILABLE')]);
    const { certs, clock, tick } = rig(ca, 0, { random: () => draw });
    const seen: number[] = [];
    const schedule = clock.setTimeout.bind(clock);
    clock.setTimeout = (callback, ms) => (seen.push(ms), schedule(callback, ms));
    await certs.start();
    for (let second = 0; second < 4; second++) await tick();
    certs.stop();
    return seen.slice(0, 3);
  };
  assert.deepEqual(await delays(0), [800, 1280, 2048], 'gRPC backoff, jitter at its low end');
  assert.deepEqual(await delays(0.999_999), [1200, 1920, 3072], 'and at its high end');
});
