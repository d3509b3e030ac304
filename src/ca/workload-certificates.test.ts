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

function rig(ca: ReturnType<typeof scriptedCa>, startOffsetMs = 0) {
  const clock = new FakeClock(Date.now() + startOffsetMs);
  const published: IssuedCertificate[] = [];
  const problems: (string | undefined)[] = [];
  let settle: () => void = () => undefined;
  const certs = new WorkloadCertificates({
    clock, logger: pino({ level: 'silent' }), identity, trustDomain: 'cluster.local', keyAlgorithm: 'ECDSA',
    sign: ca.sign, graceRatio: 0.5, jitterRatio: 0, random: () => 0.5,
    publish: (certificate) => published.push(certificate),
    reportProblem: (reason) => problems.push(reason),
    onResult: () => settle(),
  });
  /** Moves the clock and waits for the request that the move started to finish. */
  const advance = async (ms: number) => {
    const done = new Promise<void>((resolve) => (settle = resolve));
    clock.advance(ms);
    // A bound, not a sleep: a move that starts no request fails here instead of at the runner's timeout.
    const guard = AbortSignal.timeout(10_000);
    await Promise.race([done, new Promise((_, reject) => guard.addEventListener('abort', () => reject(new Error(`no CA request finished after advancing ${ms} ms`))))]);
  };
  return { clock, certs, published, problems, advance };
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
