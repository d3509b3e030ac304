import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { assertGone, isAlive } from '../support/agent.ts';
import { suiteCleanup } from '../support/cleanup.ts';
import { agentBin, nodeBin } from '../support/paths.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { parsePrometheus } from '../support/prometheus.ts';
import { httpListener, simpleHttpService } from '../support/resources.ts';
import { startUpstream, type Upstream } from '../support/upstream.ts';
import { get, startStatusAgent, waitForStatus, type StatusAgent } from '../support/status-agent.ts';

async function envoyServerInfo(adminPort: number): Promise<{ state: string }> {
  return (await (await fetch(`http://127.0.0.1:${adminPort}/server_info`)).json()) as { state: string };
}

/** One counter or gauge from Envoy's admin /stats. */
async function envoyStat(adminPort: number, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${adminPort}/stats?filter=${encodeURIComponent(`^${name}$`)}`)).text();
  const match = new RegExp(`^${name.replaceAll('.', '\\.')}: (\\d+)$`, 'm').exec(text);
  if (!match) throw new Error(`no ${name} in Envoy's /stats: ${text}`);
  return Number(match[1]);
}

const cli = (args: string[]) => execa(nodeBin, [agentBin, ...args], { reject: false, timeout: 60_000 });

describe('status endpoints, request and wait with the real Envoy', () => {
  let upstream: Upstream;
  let peer: Peer;
  let outboundPort: number;
  let inboundPort: number;

  const cleanup = suiteCleanup();

  before(async () => {
    upstream = await startUpstream('hello');
    cleanup.defer(() => upstream.close());
    [outboundPort, inboundPort] = [await freePort(), await freePort()];
    // A sidecar drains inbound listeners only (the app can still call out): one of each shows both halves.
    const inbound = { ...(httpListener('inbound_0', inboundPort, 'local_route') as object), traffic_direction: 'INBOUND' };
    peer = await startPeer([...simpleHttpService({ listenerPort: outboundPort, upstreamPort: upstream.port }), inbound]);
    cleanup.defer(() => peer.stop());
  });

  describe('an agent logging status:debug and agent:warn, waited for with `pilot-agent wait`', () => {
    const agentCleanup = suiteCleanup();
    let agent: StatusAgent['agent'];
    let statusPort: number;
    let readinessPort: number;
    let wait: Awaited<ReturnType<typeof cli>>;

    before(async () => {
      ({ agent, statusPort, readinessPort } = await startStatusAgent(peer.address, ['--log_output_level', 'default:info,status:debug,agent:warn']));
      agentCleanup.defer(async () => {
        await agent.stop();
        await assertGone(agent.envoyPids());
      });
      wait = await cli(['wait', '--url', `http://127.0.0.1:${readinessPort}/healthz/ready`, '--timeoutSeconds', '30', '--periodMillis', '100']);
    });

    it('`pilot-agent wait` returns once Envoy is ready', () => {
      assert.equal(wait.exitCode, 0, wait.stderr);
      assert.match(wait.stdout, /Envoy is ready!/);
    });

    it('serves the agent\'s metrics, then Envoy\'s, with only counters ending in _total', async () => {
      const metrics = await get(statusPort, '/stats/prometheus');
      assert.match(metrics.contentType, /version=0\.0\.4/);
      const families = parsePrometheus(metrics.body);
      assert.equal(families.get('istio_agent_epochs_started_total')?.metrics[0]?.value, '1');
      assert.equal(families.get('istio_agent_retry_budget')?.metrics[0]?.value, '10');
      assert.ok(families.has('envoy_server_live'), 'Envoy\'s part follows');
      assert.ok(metrics.body.indexOf('istio_agent_') < metrics.body.indexOf('envoy_'), 'agent first');
      // Ours only: Envoy's own gauge cluster.membership_total is Envoy's name, passed on as Istio does.
      const misnamed = [...families.values()].filter(
        (family) => family.name.startsWith('istio_agent_') && family.name.endsWith('_total') && family.type !== 'COUNTER',
      );
      assert.deepEqual(misnamed.map((family) => family.name), [], 'only counters end in _total');
    });

    it('serves the live epochs and the relay\'s view on /debug, and 404 for an unknown path', async () => {
      const epochs = JSON.parse((await get(statusPort, '/debug/epochs')).body) as { live: { epoch: number; pid: number; live: boolean }[] };
      assert.deepEqual(epochs.live.map((entry) => [entry.epoch, entry.pid]), [[0, agent.envoyPids()[0]]]);
      const xds = await get(statusPort, '/debug/xds');
      assert.equal(xds.status, 200);
      assert.equal(typeof JSON.parse(xds.body), 'object', 'the relay\'s debug view, as JSON');
      assert.equal((await get(statusPort, '/nope')).status, 404);
    });

    it('`pilot-agent request` answers from Envoy\'s admin, and exits 1 for a path admin does not have', async () => {
      const request = await cli(['request', 'GET', '/server_info', '--debug-port', String(agent.adminPort)]);
      assert.equal(request.exitCode, 0, request.stderr);
      assert.equal((JSON.parse(request.stdout) as { state: string }).state, 'LIVE');
      const missing = await cli(['request', 'GET', '/no_such_admin_path', '--debug-port', String(agent.adminPort)]);
      assert.equal(missing.exitCode, 1);
    });

    it('applies the log level of each scope and logs its ports at start', async () => {
      await get(statusPort, '/stats/prometheus');
      assert.ok(agent.log.find((entry) => entry.msg === 'status request' && entry.component === 'status'), 'status:debug applies');
      assert.equal(agent.log.find((entry) => entry.msg === 'starting epoch'), undefined, 'agent:warn applies');
      const startup = agent.log.find((entry) => entry.msg === 'pilot-agent starting')!;
      assert.deepEqual(startup.ports, { admin: agent.adminPort, status: statusPort, readiness: readinessPort, prometheus: 0 });
    });

    it('quitquitquit stops the agent with exit 0 and leaves no process', async () => {
      const quit = await get(statusPort, '/quitquitquit', 'POST');
      assert.equal(quit.status, 200);
      const timer = new AbortController();
      const result = await Promise.race([agent.exited, sleep(15_000, 'still running', { signal: timer.signal }).catch(() => undefined)]);
      timer.abort();
      assert.deepEqual(result, { exitCode: 0, signal: undefined }, agent.stderr());
      await assertGone(agent.envoyPids());
    });
  });

  describe('an agent drained by POST /drain', () => {
    const agentCleanup = suiteCleanup();
    let agent: StatusAgent['agent'];
    let statusPort: number;
    let drainStatus: number;

    before(async () => {
      ({ agent, statusPort } = await startStatusAgent(peer.address));
      agentCleanup.defer(async () => {
        assert.equal((await agent.stop()).exitCode, 0, agent.stderr());
        await assertGone(agent.envoyPids());
      });
      await waitForStatus(statusPort, '/healthz/ready', (answer) => answer.status === 200, 30_000);
      await waitForStatus(inboundPort, '/', (answer) => answer.body === 'hello', 15_000);
      drainStatus = (await get(statusPort, '/drain', 'POST')).status;
    });

    it('keeps the agent and Envoy running but makes readiness fail', async () => {
      assert.equal(drainStatus, 200);
      const ready = await get(statusPort, '/healthz/ready');
      assert.equal(ready.status, 503);
      assert.match(ready.body, /draining/);
      assert.ok(agent.envoyPids().every(isAlive), 'Envoy still runs');
    });

    it('makes Envoy itself drain its inbound listeners, and keep them past its drain time (skip_exit)', async () => {
      // Envoy's own view, not the agent's: /healthcheck/fail took (DRAINING); as Istio's
      // /drain, the drain has skip_exit, so the listeners outlive Envoy's drain time (1 s here).
      assert.equal((await envoyServerInfo(agent.adminPort)).state, 'DRAINING', 'Envoy reports DRAINING');
      await sleep(2500);
      assert.equal(await envoyStat(agent.adminPort, 'listener_manager.listener_stopped'), 0, 'no listener stopped after the drain time (skip_exit)');
      assert.equal((await get(outboundPort, '/')).body, 'hello', 'the outbound listener still serves');
    });

    it('GET /drain is refused with 405', async () => {
      assert.equal((await get(statusPort, '/drain')).status, 405, 'GET does not drain');
    });
  });

  it('wait exits 1 on timeout and request fails when admin is down', async () => {
    const port = await freePort();
    const wait = await cli([
      'wait',
      '--url',
      `http://127.0.0.1:${port}/healthz/ready`,
      '--timeoutSeconds',
      '1',
      '--periodMillis',
      '100',
      // A refusal comes at once, but a first fetch on a busy machine takes longer than 100 ms to get there: then the last
      // error would be the request's own timeout, not the refusal this test wants named.
      '--requestTimeoutMillis',
      '5000',
    ]);
    assert.equal(wait.exitCode, 1);
    assert.match(wait.stderr, /timeout waiting for Envoy proxy to become ready\. Last error: .*ECONNREFUSED/);
    const request = await cli(['request', 'GET', '/stats', '--debug-port', String(port)]);
    assert.equal(request.exitCode, 1);
    assert.equal(request.stdout, '');
    assert.match(request.stderr, /cannot reach Envoy admin/);
  });
});
