import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { rewriteAppProbes } from './app-probes.ts';
import type { Mapping } from './types.ts';

const where = 'pod.yaml: spec.containers';
const rewrite = (containers: Mapping[]) => rewriteAppProbes(containers, 15020, where);

describe('app probes moved to the agent', () => {
  it('http, tcp and grpc probes go to /app-health/<container>/<kind>; the originals are kept sorted by path', () => {
    const { rewrites, probers } = rewrite([
      {
        name: 'web',
        ports: [{ name: 'http', containerPort: 8080 }],
        readinessProbe: { httpGet: { path: '/ready', port: 'http', scheme: 'HTTPS' }, timeoutSeconds: 3, periodSeconds: 7 },
        livenessProbe: { tcpSocket: { port: '9000' } },
        startupProbe: { grpc: { port: 9090, service: 's' }, timeoutSeconds: 0 },
      },
    ]);
    assert.deepEqual(rewrites, [{
      index: 0,
      probes: {
        readinessProbe: { timeoutSeconds: 3, periodSeconds: 7, httpGet: { path: '/app-health/web/readyz', port: 15020, scheme: 'HTTP' } },
        livenessProbe: { httpGet: { path: '/app-health/web/livez', port: 15020 } },
        startupProbe: { timeoutSeconds: 0, httpGet: { path: '/app-health/web/startupz', port: 15020 } },
      },
    }]);
    assert.equal(probers, JSON.stringify({
      '/app-health/web/livez': { tcpSocket: { port: 9000 } },
      '/app-health/web/readyz': { httpGet: { path: '/ready', port: 8080, scheme: 'HTTPS' }, timeoutSeconds: 3 },
      '/app-health/web/startupz': { grpc: { port: 9090, service: 's' } },
    }));
  });

  it('exec probes, null probes and containers without probes are left to the kubelet; no probe at all gives no env', () => {
    const containers = [{ name: 'a', readinessProbe: { exec: { command: ['true'] } }, livenessProbe: null }, { name: 'b' }];
    assert.deepEqual(rewrite(containers), { rewrites: [], probers: undefined });
    const second = rewrite([{ name: 'a' }, { name: 'b', readinessProbe: { httpGet: { port: 80 } } }]);
    assert.deepEqual(second.rewrites.map((entry) => entry.index), [1]);
    assert.equal(second.probers, '{"/app-health/b/readyz":{"httpGet":{"port":80}}}');
  });

  it('an HTTP scheme stays as written; only HTTPS becomes HTTP for the kubelet', () => {
    const { rewrites } = rewrite([{ name: 'a', readinessProbe: { httpGet: { port: 80, scheme: 'HTTP', httpHeaders: [{ name: 'h', value: 'v' }] } } }]);
    assert.deepEqual(rewrites[0]!.probes.readinessProbe, {
      httpGet: { port: 15020, scheme: 'HTTP', httpHeaders: [{ name: 'h', value: 'v' }], path: '/app-health/a/readyz' },
    });
  });

  it('hostile probes are refused naming the field: not a mapping, bad timeouts, ports out of range, unknown port names (a container without ports too)', () => {
    const cases: [Mapping, string][] = [
      [{ readinessProbe: 'GET /' }, `${where}[0].readinessProbe: must be a mapping`],
      [{ readinessProbe: { httpGet: { port: 80 }, timeoutSeconds: -1 } }, `${where}[0].readinessProbe.timeoutSeconds: must be a non-negative integer`],
      [{ readinessProbe: { httpGet: { port: 80 }, timeoutSeconds: 1.5 } }, `${where}[0].readinessProbe.timeoutSeconds: must be a non-negative integer`],
      [{ readinessProbe: { httpGet: { port: 80 }, timeoutSeconds: '3' } }, `${where}[0].readinessProbe.timeoutSeconds: must be a non-negative integer`],
      [{ livenessProbe: { httpGet: 'x' } }, `${where}[0].livenessProbe.httpGet: must be a mapping`],
      [{ livenessProbe: { tcpSocket: {} } }, `${where}[0].livenessProbe.tcpSocket.port: must be a port number or a port name`],
      [{ livenessProbe: { tcpSocket: { port: '' } } }, `${where}[0].livenessProbe.tcpSocket.port: must be a port number or a port name`],
      [{ livenessProbe: { tcpSocket: { port: 0 } } }, `${where}[0].livenessProbe.tcpSocket.port: must be a port (1-65535)`],
      [{ livenessProbe: { tcpSocket: { port: 65536 } } }, `${where}[0].livenessProbe.tcpSocket.port: must be a port (1-65535)`],
      [{ livenessProbe: { tcpSocket: { port: '70000' } } }, `${where}[0].livenessProbe.tcpSocket.port: must be a port (1-65535)`],
      [{ livenessProbe: { tcpSocket: { port: 80.5 } } }, `${where}[0].livenessProbe.tcpSocket.port: must be a port (1-65535)`],
      [{ startupProbe: { httpGet: { port: 'http' } } }, `${where}[0].startupProbe.httpGet.port: "http" is not the name of one of the container's ports`],
      [
        { startupProbe: { httpGet: { port: 'http' } }, ports: 'http' },
        `${where}[0].startupProbe.httpGet.port: "http" is not the name of one of the container's ports`,
      ],
      [
        { startupProbe: { httpGet: { port: 'http' } }, ports: [null, { name: 'web', containerPort: 80 }] },
        `${where}[0].startupProbe.httpGet.port: "http" is not the name of one of the container's ports`,
      ],
      [{ startupProbe: { httpGet: { port: 'http' } }, ports: [{ name: 'http' }] }, `${where}[0].startupProbe.httpGet.port: must be a port (1-65535)`],
      [{ readinessProbe: { grpc: { port: '9090' } } }, `${where}[0].readinessProbe.grpc.port: must be a port number`],
      [{ readinessProbe: { grpc: 'x' } }, `${where}[0].readinessProbe.grpc.port: must be a port number`],
      [{ readinessProbe: { grpc: { port: 0 } } }, `${where}[0].readinessProbe.grpc.port: must be a port (1-65535)`],
    ];
    for (const [container, message] of cases) assert.throws(() => rewrite([{ name: 'a', ...container }]), { message }, message);
  });

  it('port edges: 1 and 65535 are ports; a timeout of 0 is dropped from the original', () => {
    const { probers } = rewrite([{ name: 'a', readinessProbe: { tcpSocket: { port: 1 }, timeoutSeconds: 0 }, livenessProbe: { tcpSocket: { port: 65535 } } }]);
    assert.equal(probers, '{"/app-health/a/livez":{"tcpSocket":{"port":65535}},"/app-health/a/readyz":{"tcpSocket":{"port":1}}}');
  });

  it('port names with digits in them are names, resolved from the container', () => {
    const ports = [{ name: 'h2c', containerPort: 8080 }, { name: '9web', containerPort: 9000 }];
    const { probers } = rewrite([{ name: 'a', ports, readinessProbe: { httpGet: { port: 'h2c' } }, livenessProbe: { tcpSocket: { port: '9web' } } }]);
    assert.equal(probers, '{"/app-health/a/livez":{"tcpSocket":{"port":9000}},"/app-health/a/readyz":{"httpGet":{"port":8080}}}');
  });
});
