import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertGone, type AgentLogEntry } from '../support/agent.ts';
import type { HostileMode } from '../support/ca-peer.ts';
import { issuedSerials, readiness, startCaRig, type CaRig } from '../support/ca-rig.ts';
import { epochLive, readServedSerial, servedSerial, waitForSerial } from '../support/tls-rig.ts';
import { waitUntil } from '../support/poll.ts';

/** Each hostile answer of the CA peer, and the reason the agent must give for refusing it. */
const hostileAnswers: [HostileMode, RegExp][] = [
  ['non-certificate', /chain element 1 holds no PEM certificate/],
  ['expired', /the leaf expired at/],
  ['not-yet-valid', /the leaf is not valid before/],
  ['wrong-root', /is not a root this agent trusts/],
  ['self-root', /names the leaf itself as its root/],
];

const refusals = (rig: CaRig) => rig.agent.log.entries.filter((entry: AgentLogEntry) => entry.code === 'BAD_CERTIFICATE');
const answered = (rig: CaRig) => rig.ca.log.entries.filter((entry) => entry.event === 'request').length;
/** The agent process is still there (a crash or an exit settles `exited`). */
async function assertAlive(rig: CaRig): Promise<void> {
  const settled = await Promise.race([rig.agent.exited.then(() => true), sleep(50).then(() => false)]);
  assert.equal(settled, false, `the agent exited: ${rig.agent.stderr()}`);
}

/**
 * Walks the CA peer through every hostile answer: each is refused with one
 * line naming why, the agent stays up, and the answers come at a backoff.
 */
async function refuseEveryHostileAnswer(rig: CaRig): Promise<void> {
  for (const [mode, reason] of hostileAnswers) {
    await rig.ca.setMode({ hostile: mode });
    await waitUntil(`the ${mode} answer refused`, () => refusals(rig).some((entry) => reason.test(String(entry.reason))), 30_000).catch((error: Error) => {
      throw new Error(`${error.message}; refusals: ${JSON.stringify(refusals(rig).map((entry) => entry.reason))}; stderr: ${rig.agent.stderr()}`);
    });
    await assertAlive(rig);
  }
}

describe('a hostile CA: no answer ends the agent, none is served', () => {
  it('at first start: every hostile answer is refused in one line, the agent retries with backoff and never crash-loops', { timeout: 90_000 }, async () => {
    const rig = await startCaRig({ initialMode: { hostile: 'non-certificate' } });
    try {
      const started = Date.now();
      await refuseEveryHostileAnswer(rig);
      const elapsedS = (Date.now() - started) / 1000;
      // Backoff 1, 1.6, 2.6, 4.1, 6.6 s (±20 %): about a call per backoff step, where a 1 s loop would make one a second.
      assert.ok(answered(rig) <= Math.ceil(elapsedS / 2) + 2, `${answered(rig)} CA calls in ${elapsedS.toFixed(1)} s`);
      assert.equal(issuedSerials(rig).length, answered(rig), 'every refused answer was a signed chain, none was served');
      const notReady = await readiness(rig);
      assert.equal(notReady.status, 503);
      assert.match(notReady.body, /refused the CA's answer \(BAD_CERTIFICATE: /);
      assert.deepEqual(rig.agent.log.entries.filter((entry) => entry.msg === 'envoy started').length, 1, 'one Envoy, never restarted');
      await rig.ca.setMode({});
      await waitUntil('readiness 200 once the CA answers honestly', async () => (await readiness(rig)).status === 200, 40_000);
      await waitForSerial(rig.listenerPort, issuedSerials(rig).at(-1)!);
    } finally {
      await rig.close();
      await assertGone(rig.agent.envoyPids());
    }
  });

  it('at renewal: every hostile answer is refused, the old certificate keeps serving and Envoy stays up', { timeout: 90_000 }, async () => {
    // 40 s certificates renewed at a tenth of their life: the first renewal 4 s after issuance.
    const rig = await startCaRig({ ttlSeconds: 40, env: { SECRET_GRACE_PERIOD_RATIO: '0.9', SECRET_GRACE_PERIOD_RATIO_JITTER: '0' } });
    try {
      await epochLive(rig.agent, 0);
      await waitUntil('a certificate the CA issued', async () => issuedSerials(rig).includes((await readServedSerial(rig.listenerPort)).serial ?? ''));
      const honest = issuedSerials(rig).at(-1)!;
      const envoys = rig.agent.envoyPids();
      await refuseEveryHostileAnswer(rig);
      assert.equal(await servedSerial(rig.listenerPort), honest, 'the last honest certificate still serves');
      assert.deepEqual(rig.agent.envoyPids(), envoys, 'the same Envoy');
      assert.equal((await readiness(rig)).status, 200, 'ready: the certificate is valid');
      assert.ok(refusals(rig).every((entry) => entry.msg === 'certificate renewal failed; the current certificate keeps serving'));
    } finally {
      await rig.close();
      await assertGone(rig.agent.envoyPids());
    }
  });

  it('readiness turns 503 at the certificate\'s expiry while the CA does not answer, not at the next failed retry', { timeout: 60_000 }, async () => {
    // 10 s certificates renewed half-way; the renewal then hangs for the call's 10 s timeout, past the expiry.
    const rig = await startCaRig({ ttlSeconds: 10, env: { SECRET_GRACE_PERIOD_RATIO_JITTER: '0' } });
    try {
      await epochLive(rig.agent, 0);
      await waitUntil('a certificate the CA issued', () => issuedSerials(rig).length > 0);
      await rig.ca.setMode({ delayMs: 60_000 });
      const notAfter = Date.parse(String(rig.ca.log.entries.findLast((entry) => entry.event === 'request' && entry.serial)!.notAfter));
      await waitUntil('readiness 200 with the certificate', async () => (await readiness(rig)).status === 200);
      assert.ok(Date.now() < notAfter - 1000, 'the test reached readiness before the expiry');
      // notAfter has whole seconds; the agent's certificate may expire up to a second later than it says.
      await waitUntil('readiness 503 at expiry', async () => (await readiness(rig)).status === 503, notAfter + 2500 - Date.now());
      const body = (await readiness(rig)).body;
      assert.match(body, /the workload certificate expired at/);
      assert.equal(
        rig.agent.log.entries.filter((entry) => entry.msg === 'no workload certificate: the CA request failed').length,
        0,
        'no retry had failed yet',
      );
    } finally {
      await rig.close();
      await assertGone(rig.agent.envoyPids());
    }
  });
});
