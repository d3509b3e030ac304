/**
 * Istio's mesh `accessLogFile: /dev/stdout` in a pod (issue 44): istiod
 * renders a file access log on /dev/stdout into the pod's listeners, and
 * Envoy (uid 1337) opens it again by path. The agent's stdout is a FIFO, as a
 * container runtime gives it: Envoy must be handed that stdout, not a socket
 * it cannot open (ENXIO: the listener NACKed, the pod never ready).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makePodNamespace, podSkipReason, requestThroughCapture, startMesh, startPodAgent, untilPodReady, type Mesh } from '../support/pods.ts';
import { pollUntil } from '../support/poll.ts';

const skip = await podSkipReason();
const line = 'pod-access-log /dev/stdout 200';

/** The mesh's resources with a /dev/stdout access log on the inbound listener's connection manager, as istiod renders accessLogFile. */
function withStdoutAccessLog(resources: unknown[]): unknown[] {
  const copy = structuredClone(resources) as { name?: string; filter_chains?: { filters: { typed_config: Record<string, unknown> }[] }[] }[];
  const inbound = copy.find((resource) => resource.name === 'virtualInbound')!;
  inbound.filter_chains![0]!.filters[0]!.typed_config.access_log = [{
    name: 'envoy.access_loggers.file',
    typed_config: {
      '@type': 'type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog',
      path: '/dev/stdout',
      log_format: { text_format_source: { inline_string: 'pod-access-log /dev/stdout %RESPONSE_CODE%\n' } },
    },
  }];
  return copy;
}

describe('accessLogFile /dev/stdout in a pod whose stdout is a FIFO', { skip, timeout: 180_000 }, () => {
  let mesh: Mesh;
  before(async () => {
    mesh = await startMesh();
    await mesh.peer.setResources(withStdoutAccessLog(mesh.resources));
  });
  after(() => mesh?.close());

  it('the listener with the access log is taken, the pod becomes ready, a request through the capture is a line of the agent\'s stdout', async () => {
    await using cleanup = new AsyncDisposableStack();
    const netns = await makePodNamespace(mesh, 0);
    cleanup.defer(() => netns.remove());
    const pod = await startPodAgent(mesh, netns, 0, { fifoStdio: true });
    cleanup.defer(() => pod.stop());
    await untilPodReady(pod);
    await pollUntil(async () => await requestThroughCapture(pod), { what: 'a request through the capture answered 200' });
    await pollUntil(() => pod.log.raw.includes(line), { what: `"${line}" as a line of the pod agent's stdout`, show: () => pod.log.raw.slice(-5).join('\n') });
    const nacks = mesh.peer.log.entries.filter((entry) => entry.event === 'request' && entry.error);
    assert.deepEqual(nacks, [], 'no listener refused');
    assert.equal(pod.exitCode(), undefined, pod.stderr());
  });
});
