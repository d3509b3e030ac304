import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertGone, startAgent } from '../support/agent.ts';
import { keepAliveLoad, newConnectionLoad } from '../support/load.ts';
import { identity, issuedSerials, readiness, startCaRig, type CaRig } from '../support/ca-rig.ts';
import { epochLive, readServedSerial, servedSerial, waitForSerial } from '../support/tls-rig.ts';
import { pollUntil, waitUntil } from '../support/poll.ts';

const startedEpochs = (rig: CaRig) => rig.agent.log.entries.filter((entry) => entry.msg === 'envoy started').map((entry) => entry.epoch);
/** The loads' cap: they stop once enough ran, well before this on any machine. */
const loadCapS = 120;
const failures = (rig: CaRig) => rig.agent.log.entries.filter((entry) => entry.msg === 'no workload certificate: the CA request failed');

describe('a workload certificate from the CA, served over SDS, with the real Envoy', () => {
  it('no mounted certificates: Envoy serves the CA\'s certificate, and it renews itself under load with no new epoch', { timeout: 150_000 }, async (t) => {
    // 8 s certificates renewed at 20% of their life: a renewal about every 1.6 s.
    const rig = await startCaRig({ ttlSeconds: 8, env: { SECRET_GRACE_PERIOD_RATIO: '0.8' } });
    const stop = new AbortController();
    try {
      await epochLive(rig.agent, 0);
      await waitUntil('a certificate the CA issued', async () => issuedSerials(rig).includes((await readServedSerial(rig.listenerPort)).serial ?? ''));
      assert.equal(rig.ca.log.entries.find((entry) => entry.event === 'request')!.identity, identity);
      const url = `https://127.0.0.1:${rig.listenerPort}/`;
      // The loads run until the renewals are served and enough requests went through, however slow the machine: counted, not timed.
      const done = { keepAlive: 0, fresh: 0 };
      const loads = Promise.all([
        keepAliveLoad(url, 4, loadCapS, stop.signal, () => done.keepAlive++),
        newConnectionLoad(url, 2, loadCapS, stop.signal, () => done.fresh++),
      ]);
      const served = new Set<string>();
      const renewed = async (count: number) => {
        await waitUntil(`${count} renewed certificates served`, async () => (served.add(await servedSerial(rig.listenerPort)), served.size > count), 60_000);
        return { ...done };
      };
      const atFirst = await renewed(1);
      const atThird = await renewed(3);
      const enough = (counts: typeof done) => counts.keepAlive > 100 && counts.fresh > 50;
      await pollUntil(() => ({ ...done }), { what: 'the loads\' requests', accept: enough, timeoutMs: 60_000 });
      stop.abort();
      const [keepAlive, fresh] = await loads;
      assert.deepEqual([...served].filter((serial) => !issuedSerials(rig).includes(serial)), [], 'Envoy served only what the CA issued');
      t.diagnostic(
        JSON.stringify({
          issued: issuedSerials(rig).length,
          keepAlive: { ok: keepAlive.ok, failed: keepAlive.failed },
          fresh: { ok: fresh.ok, failed: fresh.failed },
          betweenRenewals: { keepAlive: atThird.keepAlive - atFirst.keepAlive, fresh: atThird.fresh - atFirst.fresh },
        }),
      );
      assert.ok(keepAlive.ok > 100 && fresh.ok > 50, 'the load really ran');
      const during = { keepAlive: atThird.keepAlive - atFirst.keepAlive, fresh: atThird.fresh - atFirst.fresh };
      assert.ok(during.keepAlive > 0 && during.fresh > 0, `both loads ran through the renewals: ${JSON.stringify(during)}`);
      assert.equal(keepAlive.failed, 0, keepAlive.samples.join('; '));
      assert.equal(fresh.failed, 0, fresh.samples.join('; '));
      assert.deepEqual(startedEpochs(rig), [0], 'renewals go over SDS, never a restart');
      const debug = await (await fetch(`http://127.0.0.1:${rig.statusPort}/debug/sds`)).text();
      assert.match(debug, /"identity": "spiffe:\/\/cluster\.local\/ns\/default\/sa\/app"/);
      assert.match(debug, /"issuer": "O=cluster.local, CN=test-root"/);
      assert.doesNotMatch(debug, /PRIVATE KEY/);
    } finally {
      stop.abort();
      await rig.close();
      await assertGone(rig.agent.envoyPids());
    }
  });

  it('the CA down at renewal: the current certificate keeps serving while the agent retries', { timeout: 60_000 }, async () => {
    const rig = await startCaRig({ ttlSeconds: 12, env: { SECRET_GRACE_PERIOD_RATIO: '0.8' } });
    try {
      await epochLive(rig.agent, 0);
      await waitUntil('a certificate the CA issued', async () => issuedSerials(rig).includes((await readServedSerial(rig.listenerPort)).serial ?? ''));
      await rig.ca.setMode({ refuse: 'CA under maintenance' });
      const refused = () => rig.ca.log.entries.filter((entry) => entry.error?.includes('maintenance')).length;
      // A call under way when the mode changed may still issue: the last issued serial is known once one is refused.
      await waitUntil('a refused renewal', () => refused() >= 1);
      const last = issuedSerials(rig).at(-1)!;
      await waitForSerial(rig.listenerPort, last);
      await waitUntil('two more refused renewals', () => refused() >= 3);
      assert.equal(await servedSerial(rig.listenerPort), last, 'the old certificate still serves');
      assert.ok(
        rig.agent.log.entries.some(
          (entry) => entry.msg === 'certificate renewal failed; the current certificate keeps serving' && entry.code === 'UNAVAILABLE',
        ),
      );
      assert.equal((await readiness(rig)).status, 200, 'still ready: the certificate is valid');
      await rig.ca.setMode({});
      await waitUntil('a certificate after the CA came back', () => issuedSerials(rig).at(-1) !== last);
      await waitForSerial(rig.listenerPort, issuedSerials(rig).at(-1)!);
    } finally {
      await rig.close();
      await assertGone(rig.agent.envoyPids());
    }
  });

  it('the CA down at start: readiness says why, and turns ready once the CA answers', { timeout: 60_000 }, async () => {
    const rig = await startCaRig({ initialMode: { refuse: 'CA not up yet' } });
    try {
      await waitUntil('a refused request', () => failures(rig).length > 0);
      const notReady = await readiness(rig);
      assert.equal(notReady.status, 503);
      assert.match(notReady.body, /CA request failed \(UNAVAILABLE: CA not up yet\)/);
      await rig.ca.setMode({});
      await waitUntil('readiness 200', async () => (await readiness(rig)).status === 200, 30_000);
      // Istio's names for the CSRs, which its dashboards query: every call, and the refused ones.
      const metrics = await (await fetch(`http://127.0.0.1:${rig.statusPort}/stats/prometheus`)).text();
      const count = (name: string) => Number(new RegExp(`^${name}\\{request_type="csr"\\} (\\d+)$`, 'm').exec(metrics)?.[1]);
      const failed = count('istio_agent_num_failed_outgoing_requests');
      assert.ok(failed >= 1, `failed CSRs counted: ${failed}`);
      assert.ok(count('istio_agent_num_outgoing_requests') > failed, 'the CSR that succeeded counted too');
    } finally {
      await rig.close();
      await assertGone(rig.agent.envoyPids());
    }
  });

  const refusals = [
    { name: 'a refused token', options: { tokenText: 'someone-elses-token' }, code: 'UNAUTHENTICATED', text: /the token is not accepted/ },
    { name: 'a wrong root for the CA', options: { wrongRoot: true }, code: 'TLS', text: /certificate/ },
    { name: 'a missing token file', options: { tokenText: null }, code: 'TOKEN', text: /cannot read the token file/ },
  ];
  for (const refusal of refusals) {
    it(`${refusal.name} ends in one line that says so`, { timeout: 30_000 }, async () => {
      const rig = await startCaRig(refusal.options);
      try {
        await waitUntil(`a ${refusal.code} failure`, () => failures(rig).some((entry) => entry.code === refusal.code)).catch((error: Error) => {
          throw new Error(`${error.message}; failures seen: ${JSON.stringify(failures(rig))}`);
        });
        const line = failures(rig).find((entry) => entry.code === refusal.code)!;
        assert.match(String(line.reason), refusal.text);
        assert.equal(issuedSerials(rig).length, 0);
      } finally {
        await rig.close();
        await assertGone(rig.agent.envoyPids());
      }
    });
  }

  it('CA_ADDR without SERVICE_ACCOUNT is bad input: exit 2 naming it', { timeout: 20_000 }, async () => {
    const agent = await startAgent({ discoveryAddress: '127.0.0.1:1', env: { CA_ADDR: '127.0.0.1:15012', POD_NAMESPACE: 'default', SERVICE_ACCOUNT: '' } });
    const result = await agent.exited;
    assert.equal(result.exitCode, 2);
    assert.match(agent.stderr().trim(), /^[^\n]*SERVICE_ACCOUNT[^\n]*$/);
    await agent.stop();
  });
});
