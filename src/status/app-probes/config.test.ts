import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AgentError } from '../../shared/errors.ts';
import { parseAppProbers, type AppProbe } from './config.ts';

const podIp = '10.1.2.3';
const parse = (value: unknown) => parseAppProbers(typeof value === 'string' ? value : JSON.stringify(value), podIp);

describe('parseAppProbers', () => {
  const accepted: { name: string; value: unknown; path: string; probe: AppProbe }[] = [
    {
      name: 'httpGet with everything the injector passes, to the pod IP',
      value: {
        '/app-health/web/livez': {
          httpGet: { path: '/healthz', port: 8080, scheme: 'HTTPS', httpHeaders: [{ name: 'X-Probe', value: 'yes' }] },
          timeoutSeconds: 3,
        },
      },
      path: '/app-health/web/livez',
      probe: { action: { kind: 'http', scheme: 'https', host: podIp, port: 8080, path: '/healthz', headers: [['X-Probe', 'yes']] }, timeoutMs: 3000 },
    },
    {
      name: 'httpGet defaults: scheme HTTP, path /, timeout 1 s',
      value: { '/app-health/web/readyz': { httpGet: { port: 80 } } },
      path: '/app-health/web/readyz',
      probe: { action: { kind: 'http', scheme: 'http', host: podIp, port: 80, path: '/', headers: [] }, timeoutMs: 1000 },
    },
    {
      name: 'tcpSocket on the pod IP',
      value: { '/app-health/db/startupz': { tcpSocket: { host: podIp, port: 5432 }, timeoutSeconds: 0 } },
      path: '/app-health/db/startupz',
      probe: { action: { kind: 'tcp', host: podIp, port: 5432 }, timeoutMs: 1000 },
    },
    {
      name: 'grpc with a service, port as a numeric string',
      value: { '/app-health/api/livez': { grpc: { port: '9090', service: 'api' }, timeoutSeconds: 2 } },
      path: '/app-health/api/livez',
      probe: { action: { kind: 'grpc', host: podIp, port: 9090, service: 'api' }, timeoutMs: 2000 },
    },
    {
      name: 'a preStop hook under /app-lifecycle, its localhost host still the pod IP',
      value: { '/app-lifecycle/web/prestopz': { httpGet: { host: 'localhost', path: '/shutdown', port: 8080 } } },
      path: '/app-lifecycle/web/prestopz',
      probe: { action: { kind: 'http', scheme: 'http', host: podIp, port: 8080, path: '/shutdown', headers: [] }, timeoutMs: 1000 },
    },
    {
      name: 'a postStart tcpSocket hook',
      value: { '/app-lifecycle/web/poststartz': { tcpSocket: { port: 93 } } },
      path: '/app-lifecycle/web/poststartz',
      probe: { action: { kind: 'tcp', host: podIp, port: 93 }, timeoutMs: 1000 },
    },
  ];
  for (const { name, value, path, probe } of accepted) {
    it(`accepts ${name}`, () => assert.deepEqual(parse(value).get(path), probe));
  }

  it('probes the destination, with a warning, whatever other host the probe names (as Istio)', () => {
    const warnings: string[] = [];
    const probes = parseAppProbers(
      JSON.stringify({ '/app-health/a/livez': { httpGet: { host: '169.254.169.254', port: 80, path: 'ready' } } }),
      podIp,
      (message) => warnings.push(message),
    );
    assert.deepEqual(probes.get('/app-health/a/livez')?.action, { kind: 'http', scheme: 'http', host: podIp, port: 80, path: '/ready', headers: [] });
    assert.deepEqual(warnings, [`/app-health/a/livez: host "169.254.169.254" is ignored: the agent probes its own pod, at ${podIp}`]);
  });

  it('is empty when unset or blank', () => {
    assert.equal(parseAppProbers(undefined).size, 0);
    assert.equal(parseAppProbers('  ').size, 0);
  });

  const rejected: { name: string; value: unknown; says: RegExp }[] = [
    { name: 'text that is not JSON', value: '{nope', says: /not JSON/ },
    { name: 'a JSON list', value: [], says: /JSON object/ },
    { name: 'a key outside /app-health', value: { '/metrics': { tcpSocket: { port: 1 } } }, says: /"\/metrics" is not \/app-health/ },
    { name: 'an unknown probe kind in the path', value: { '/app-health/a/healthz': { tcpSocket: { port: 1 } } }, says: /is not \/app-health/ },
    { name: 'an unknown prefix', value: { '/app-hooks/a/prestopz': { tcpSocket: { port: 1 } } }, says: /or \/app-lifecycle/ },
    { name: 'no action', value: { '/app-health/a/livez': { timeoutSeconds: 1 } }, says: /exactly one of/ },
    { name: 'two actions', value: { '/app-health/a/livez': { tcpSocket: { port: 1 }, grpc: { port: 1 } } }, says: /exactly one of/ },
    { name: 'a named port', value: { '/app-health/a/livez': { tcpSocket: { port: 'http' } } }, says: /port "http"/ },
    { name: 'port 0', value: { '/app-health/a/livez': { httpGet: { port: 0 } } }, says: /port 0/ },
    { name: 'a host that is not a string', value: { '/app-health/a/livez': { httpGet: { host: 7, port: 80 } } }, says: /host 7/ },
    { name: 'an unknown scheme', value: { '/app-health/a/livez': { httpGet: { port: 80, scheme: 'FTP' } } }, says: /scheme "FTP"/ },
    { name: 'a path with a space', value: { '/app-health/a/livez': { httpGet: { port: 80, path: '/a b' } } }, says: /path "\/a b"/ },
    {
      name: 'a header with a newline',
      value: { '/app-health/a/livez': { httpGet: { port: 80, httpHeaders: [{ name: 'a', value: 'b\r\nc: d' }] } } },
      says: /httpHeaders entry/,
    },
    { name: 'a fractional timeout', value: { '/app-health/a/livez': { tcpSocket: { port: 1 }, timeoutSeconds: 0.5 } }, says: /timeoutSeconds/ },
  ];
  for (const { name, value, says } of rejected) {
    it(`rejects ${name}, naming the variable`, () => {
      assert.throws(() => parse(value), (error: unknown) => {
        assert.ok(error instanceof AgentError && error.exitCode === 2);
        assert.match(error.message, /^env ISTIO_KUBE_APP_PROBERS: /);
        assert.match(error.message, says);
        assert.doesNotMatch(error.message, /\n/);
        return true;
      });
    });
  }
});
