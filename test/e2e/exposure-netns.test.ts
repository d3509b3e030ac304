/**
 * The critical exposure of issue 10, tried from the pod network: a network
 * namespace made here sends every known way into Envoy's admin and the
 * agent's mutating endpoints to the three 0.0.0.0 ports (Prometheus,
 * readiness, status), over a veth, never loopback. Each must be refused,
 * and afterwards Envoy must be the same LIVE process at default log levels
 * and the agent still running and ready.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { isAlive, type RunningAgent } from '../support/agent.ts';
import { deferStop, suiteCleanup } from '../support/cleanup.ts';
import { makeNetns, netnsSkipReason, type Netns, type RawAnswer, type RawRequest } from '../support/netns.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { simpleHttpService } from '../support/resources.ts';
import { startUpstream, type Upstream } from '../support/upstream.ts';
import { startStatusAgent } from '../support/status-agent.ts';

const skip = await netnsSkipReason();

/** Admin paths that read secrets or steer Envoy, and the agent's own. */
const targets = ['config_dump', 'quitquitquit', 'healthcheck/fail', 'logging?level=trace', 'drain_listeners', 'drain', 'debug/epochs'];

/** Every spelling of "from the allowed path, up to the root, then elsewhere". */
function escapes(allowed: string, target: string): string[] {
  return [
    `${allowed}/../../${target}`,
    `${allowed}/%2e%2e/%2e%2e/${target}`,
    `${allowed}/%2E%2E/%2E%2E/${target}`,
    `${allowed}/..%2f..%2f${target}`,
    `${allowed}/..%5c..%5c${target}`,
    `${allowed}//../../../${target}`,
    `/${target}`,
    `//${target}`,
    `/./${target}`,
  ];
}

function attacks(port: number, allowed: string): RawRequest[] {
  const paths = targets.flatMap((target) => escapes(allowed, target));
  return ['GET', 'POST'].flatMap((method) => paths.map((path) => ({ port, method, path })));
}

describe('the pod network cannot steer the sidecar', { skip }, () => {
  let upstream: Upstream;
  let peer: Peer;
  let netns: Netns;
  let agent: RunningAgent;
  let ports: { prometheus: number; readiness: number; status: number };

  const cleanup = suiteCleanup();

  before(async () => {
    upstream = await startUpstream('hello');
    cleanup.defer(() => upstream.close());
    peer = await startPeer(simpleHttpService({ listenerPort: await freePort(), upstreamPort: upstream.port }));
    cleanup.defer(() => peer.stop());
    netns = await makeNetns('exposure');
    cleanup.defer(() => netns.remove());
    const prometheus = await freePort();
    const started = await startStatusAgent(peer.address, ['--prometheusPort', String(prometheus)]);
    agent = started.agent;
    deferStop(cleanup, agent);
    ports = { prometheus, readiness: started.readinessPort, status: started.statusPort };
  });

  it('serves the two public paths from the namespace, and nothing else on any port', async () => {
    await waitUntilReadyFromOutside();
    const [envoy] = agent.envoyPids();
    const allowed = await netns.send([
      { port: ports.prometheus, method: 'GET', path: '/stats/prometheus' },
      { port: ports.status, method: 'GET', path: '/stats/prometheus' },
      { port: ports.status, method: 'GET', path: '/healthz/ready' },
    ]);
    for (const answer of allowed) assert.equal(answer.status, 200, JSON.stringify(answer));

    const requests = [
      ...attacks(ports.prometheus, '/stats/prometheus'),
      ...attacks(ports.readiness, '/healthz/ready'),
      ...attacks(ports.status, '/healthz/ready'),
      ...attacks(ports.status, '/stats/prometheus'),
      ...['/quitquitquit', '/drain'].map((path) => ({ port: ports.status, method: 'POST', path })),
      ...['/debug/epochs', '/debug/xds'].map((path) => ({ port: ports.status, method: 'GET', path })),
      { port: ports.prometheus, method: 'POST', path: '/stats/prometheus' },
      { port: ports.readiness, method: 'POST', path: '/healthz/ready' },
    ];
    const answers = await netns.send(requests);
    const show = (list: RawAnswer[]) => list.map(({ port, method, path, status }) => `${status} ${method} :${port}${path}`);
    assert.deepEqual(show(answers.filter((answer) => ![400, 403, 404, 405].includes(answer.status))), [], 'every attack is refused with 400, 403, 404 or 405');
    const dotted = answers.filter((answer) => /\.\.|%2|\/\/|\/\.\//.test(answer.path));
    assert.deepEqual(
      show(dotted.filter((answer) => answer.status !== 404 && answer.status !== 400)),
      [],
      'a dotted, encoded or doubled path is unknown (404) or bad (400), never resolved',
    );
    const direct = answers.filter((answer) => answer.port === ports.status && /^\/(quitquitquit|drain|debug\/\w+)$/.test(answer.path));
    assert.ok(direct.length > 0);
    assert.deepEqual(show(direct.filter((answer) => answer.status !== 403 && answer.status !== 405)), [], 'the status port refuses the pod network');

    await assertStillServing(envoy!);
  });

  async function waitUntilReadyFromOutside(): Promise<void> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const [answer] = await netns.send([{ port: ports.readiness, method: 'GET', path: '/healthz/ready' }]);
      if (answer!.status === 200) return;
      if (Date.now() > deadline) throw new Error(`readiness through Envoy never passed from the namespace: ${JSON.stringify(answer)}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  /** Envoy's own admin on loopback says it is the same LIVE process, at default log levels, undrained. */
  async function assertStillServing(envoy: number): Promise<void> {
    const admin = (path: string, method = 'GET') => fetch(`http://127.0.0.1:${agent.adminPort}${path}`, { method, signal: AbortSignal.timeout(5000) });
    const info = (await (await admin('/server_info')).json()) as { state: string; command_line_options: { restart_epoch: number } };
    assert.equal(info.state, 'LIVE', 'not failing health checks, not draining');
    assert.deepEqual(agent.envoyPids(), [envoy], 'the same Envoy, never restarted');
    assert.ok(isAlive(envoy));
    const levels = await (await admin('/logging', 'POST')).text();
    assert.doesNotMatch(levels, /: trace$/m, 'no logger was turned to trace');
    const draining = await (await admin('/stats?filter=^listener_manager\\.total_listeners_draining$')).text();
    assert.match(draining, /total_listeners_draining: 0/);
    assert.equal(agent.log.find((entry) => /quitquitquit|drain requested/.test(entry.msg)), undefined, 'the agent never heard quit or drain');
    const exited = await Promise.race([agent.exited, new Promise((resolve) => setTimeout(resolve, 500, 'running'))]);
    assert.equal(exited, 'running', 'the agent still runs');
    const [ready] = await netns.send([{ port: ports.readiness, method: 'GET', path: '/healthz/ready' }]);
    assert.equal(ready!.status, 200, 'and is still ready');
  }
});
