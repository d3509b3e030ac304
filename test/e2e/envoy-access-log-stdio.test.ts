import assert from 'node:assert/strict';
import { it } from 'node:test';
import { startAgent } from '../support/agent.ts';
import { startPeer } from '../support/peer.ts';
import { pollUntil } from '../support/poll.ts';
import { freePort } from '../support/ports.ts';
import { edsCluster, endpoints, httpListener, routeConfig } from '../support/resources.ts';
import { get, waitForStatus } from '../support/status-agent.ts';
import { startUpstream } from '../support/upstream.ts';

/** A listener whose connection manager logs each request to `path`, as Istio's mesh `accessLogFile` renders it (a file access log). */
function loggingListener(name: string, port: number, path: string): unknown {
  const listener = httpListener(name, port, 'local_route') as { filter_chains: { filters: { typed_config: Record<string, unknown> }[] }[] };
  listener.filter_chains[0]!.filters[0]!.typed_config.access_log = [{
    name: 'envoy.access_loggers.file',
    typed_config: {
      '@type': 'type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog',
      path,
      log_format: { text_format_source: { inline_string: `access-log ${path} %REQ(:PATH)% %RESPONSE_CODE%\n` } },
    },
  }];
  return listener;
}

it('access logs to /dev/stdout and /dev/stderr: the listeners are taken, the pod becomes ready, each request is the line Envoy wrote on that stream', async () => {
  await using cleanup = new AsyncDisposableStack();
  const upstream = await startUpstream('hello');
  cleanup.defer(() => upstream.close());
  const [outPort, errPort, statusPort, readinessPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const peer = await startPeer([
    loggingListener('to_stdout', outPort, '/dev/stdout'),
    loggingListener('to_stderr', errPort, '/dev/stderr'),
    routeConfig('local_route', [{ prefix: '/', cluster: 'upstream' }]),
    edsCluster('upstream'),
    endpoints('upstream', upstream.port),
  ]);
  cleanup.defer(() => peer.stop());
  // The agent's stdout and stderr are FIFOs, as a container runtime gives them.
  const agent = await startAgent({
    discoveryAddress: peer.address, fifoStdio: true, args: ['--statusPort', String(statusPort), '--readinessPort', String(readinessPort)],
  });
  cleanup.defer(async () => assert.equal((await agent.stop()).exitCode, 0, agent.stderr()));
  await waitForStatus(statusPort, '/healthz/ready', (answer) => answer.status === 200, 30_000);
  // Readiness reads Envoy's admin; the agent's own LIVE watch polls it every 100 ms, and until it has seen LIVE a line
  // that is not Envoy's log stays in the agent's log (Envoy giving up at start). Seen under load: the line came 70 ms early.
  await agent.log.waitFor((entry) => entry.msg === 'epoch live', 30_000, 'the agent to see the epoch LIVE');
  assert.equal((await get(outPort, '/via-stdout')).status, 200);
  assert.equal((await get(errPort, '/via-stderr')).status, 200);
  const onStdout = 'access-log /dev/stdout /via-stdout 200';
  const onStderr = 'access-log /dev/stderr /via-stderr 200';
  await pollUntil(() => agent.log.raw.includes(onStdout), { what: `"${onStdout}" as a line of the agent's stdout`, show: () => agent.log.raw.slice(-5).join('\n') });
  await pollUntil(() => agent.stderr().split('\n').includes(onStderr), { what: `"${onStderr}" as a line of the agent's stderr`, show: () => agent.stderr() });
  assert.ok(!agent.stderr().includes('/via-stdout') && !agent.log.raw.some((line) => line.includes('/via-stderr')), 'each line on its own stream only');
  const nacks = peer.log.entries.filter((entry) => entry.event === 'request' && entry.error);
  assert.deepEqual(nacks, [], 'no listener refused');
});
