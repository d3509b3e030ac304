import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertGone } from '../support/agent.ts';
import type { CaMode } from '../support/ca-peer.ts';
import { issuedSerials, readiness, startCaRig } from '../support/ca-rig.ts';
import { epochLive, readServedSerial, servedSerial } from '../support/tls-rig.ts';
import { waitUntil } from '../support/poll.ts';

const renewalFailed = 'certificate renewal failed; the current certificate keeps serving';

/**
 * The CA client (grpc-js) against test/peers/ca-server at renewal: each way
 * a call can fail is one warn line naming it, and the certificate Envoy
 * serves stays the one it had.
 */
describe('CA call failures at renewal: one line each, the old certificate kept', () => {
  const cases: { name: string; mode: CaMode; code: string; text: RegExp }[] = [
    { name: 'a CA slower than the call deadline', mode: { delayMs: 30_000 }, code: 'DEADLINE_EXCEEDED', text: /no answer within 10000 ms/ },
    { name: 'UNAVAILABLE', mode: { refuse: 'CA under maintenance' }, code: 'UNAVAILABLE', text: /CA under maintenance/ },
    { name: 'PERMISSION_DENIED', mode: { deny: 'not for this workload' }, code: 'PERMISSION_DENIED', text: /not for this workload/ },
    { name: 'a server certificate for another name than CA_ADDR\'s host', mode: { altCert: true }, code: 'TLS', text: /localhost/ },
    { name: 'an answer over the size limit', mode: { padBytes: 2 * 1024 * 1024 }, code: 'PROTOCOL', text: /over 1048576 bytes/ },
  ];
  for (const failure of cases) {
    it(failure.name, { timeout: 60_000 }, async (t) => {
      // 60 s certificates renewed at 5% of their life: the first renewal comes about 3 s after the first issue.
      const rig = await startCaRig({ ttlSeconds: 60, env: { SECRET_GRACE_PERIOD_RATIO: '0.95' } });
      try {
        await epochLive(rig.agent, 0);
        await waitUntil(
          'a certificate the CA issued',
          async () => issuedSerials(rig).includes((await readServedSerial(rig.listenerPort)).serial ?? ''),
          30_000,
        );
        const before = await servedSerial(rig.listenerPort);
        await rig.ca.setMode(failure.mode);
        const since = rig.agent.log.entries.length;
        const failures = () => rig.agent.log.entries.slice(since).filter((entry) => entry.msg === renewalFailed);
        await waitUntil(`a ${failure.code} failure`, () => failures().some((entry) => entry.code === failure.code), 30_000).catch((error: Error) => {
          throw new Error(`${error.message}; lines since: ${JSON.stringify(rig.agent.log.entries.slice(since).filter((entry) => Number(entry.level) >= 40))}`);
        });
        const line = failures().find((entry) => entry.code === failure.code)!;
        t.diagnostic(`${String(line.code)}: ${String(line.reason)}`);
        assert.match(String(line.reason), failure.text);
        // One line per failed call: nothing else warns (grpc-js writes nothing of its own).
        const warnings = rig.agent.log.entries.slice(since).filter((entry) => Number(entry.level) >= 40);
        assert.deepEqual(warnings.filter((entry) => entry.msg !== renewalFailed), []);
        assert.doesNotMatch(rig.agent.stderr(), /grpc|Error/i);
        assert.equal(await servedSerial(rig.listenerPort), before, 'the old certificate still serves');
        assert.equal((await readiness(rig)).status, 200, 'still ready: the certificate is valid');
      } finally {
        await rig.ca.setMode({}).catch(() => undefined);
        await rig.close();
        await assertGone(rig.agent.envoyPids());
      }
    });
  }
});
