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

  it('defaults the destination to 127.0.0.1 and its probes to no warning', () => {
    const probes = parseAppProbers(JSON.stringify({ '/app-health/a/livez': { tcpSocket: { host: '10.9.9.9', port: 1 } } }));
    assert.deepEqual(probes.get('/app-health/a/livez')?.action, { kind: 'tcp', host: '127.0.0.1', port: 1 });
  });

  const hosts: { host: unknown; warned: boolean }[] = [
    { host: '', warned: false },
    { host: podIp, warned: false },
    { host: 'localhost', warned: false },
    { host: '127.0.0.9', warned: false },
    { host: '::1', warned: false },
    { host: null, warned: false },
    { host: '10.127.0.1', warned: true },
    { host: '::10', warned: true },
    { host: '127.example.com', warned: true },
    { host: 'web.local', warned: true },
  ];
  for (const { host, warned } of hosts) {
    it(`probes the destination for host ${JSON.stringify(host)}, ${warned ? 'with' : 'without'} a warning`, () => {
      const warnings: string[] = [];
      const probes = parseAppProbers(JSON.stringify({ '/app-health/a/readyz': { tcpSocket: { host, port: 7 } } }), podIp, (m) => warnings.push(m));
      assert.deepEqual(probes.get('/app-health/a/readyz')?.action, { kind: 'tcp', host: podIp, port: 7 });
      const expected = `/app-health/a/readyz: host ${JSON.stringify(host)} is ignored: the agent probes its own pod, at ${podIp}`;
      assert.deepEqual(warnings, warned ? [expected] : []);
    });
  }

  const edges: { name: string; prober: unknown; action: AppProbe['action'] }[] = [
    { name: 'port 1', prober: { tcpSocket: { port: 1 } }, action: { kind: 'tcp', host: podIp, port: 1 } },
    { name: 'port 65535', prober: { tcpSocket: { port: 65535 } }, action: { kind: 'tcp', host: podIp, port: 65535 } },
    { name: 'a null action beside a real one', prober: { httpGet: null, tcpSocket: { port: 5 } }, action: { kind: 'tcp', host: podIp, port: 5 } },
    { name: 'a grpc probe without a service', prober: { grpc: { port: 9 } }, action: { kind: 'grpc', host: podIp, port: 9, service: '' } },
    {
      name: 'a lower-case scheme and null headers',
      prober: { httpGet: { port: 8, scheme: 'https', httpHeaders: null } },
      action: { kind: 'http', scheme: 'https', host: podIp, port: 8, path: '/', headers: [] },
    },
    {
      name: 'header names with every token character',
      prober: { httpGet: { port: 8, httpHeaders: [{ name: "!#$%&'*+.^_`|~09AZaz-", value: '' }] } },
      action: { kind: 'http', scheme: 'http', host: podIp, port: 8, path: '/', headers: [["!#$%&'*+.^_`|~09AZaz-", '']] },
    },
  ];
  for (const { name, prober, action } of edges) {
    it(`accepts ${name}`, () => assert.deepEqual(parse({ '/app-health/a/livez': prober }).get('/app-health/a/livez')?.action, action));
  }

  const shape = '/app-health/<container>/<livez|readyz|startupz> or /app-lifecycle/<container>/<prestopz|poststartz>';
  const live = (prober: unknown) => ({ '/app-health/a/livez': prober });
  const badHeaders: unknown[] = [null, [], { value: 'v' }, { name: 1, value: 'v' }];
  badHeaders.push({ name: 'a b', value: 'v' }, { name: ' a', value: 'v' }, { name: 'a:', value: 'v' }, { name: 'a' }, { name: 'a', value: 'v\0' });
  const messages: { value: unknown; message: string }[] = [
    { value: 'null', message: `must be a JSON object keyed by ${shape}` },
    { value: [], message: `must be a JSON object keyed by ${shape}` },
    { value: { 'x/app-health/a/livez': {} }, message: `key "x/app-health/a/livez" is not ${shape}` },
    { value: { '/app-health/a/livezz': {} }, message: `key "/app-health/a/livezz" is not ${shape}` },
    { value: { '/app-health/a/b/livez': {} }, message: `key "/app-health/a/b/livez" is not ${shape}` },
    { value: live(null), message: '/app-health/a/livez: must be an object' },
    { value: live([]), message: '/app-health/a/livez: must be an object' },
    { value: live({}), message: '/app-health/a/livez: needs exactly one of httpGet, tcpSocket, grpc' },
    {
      value: live({ httpGet: { port: 1 }, tcpSocket: { port: 1 }, grpc: { port: 1 } }),
      message: '/app-health/a/livez: needs exactly one of httpGet, tcpSocket, grpc',
    },
    { value: live({ tcpSocket: { port: 1 }, timeoutSeconds: '1' }), message: '/app-health/a/livez: timeoutSeconds must be a whole number of seconds' },
    { value: live({ tcpSocket: { port: 1 }, timeoutSeconds: -1 }), message: '/app-health/a/livez: timeoutSeconds must be a whole number of seconds' },
    { value: live({ tcpSocket: [] }), message: '/app-health/a/livez: tcpSocket must be an object' },
    { value: live({ grpc: 5 }), message: '/app-health/a/livez: grpc must be an object' },
    { value: live({ tcpSocket: { port: 0 } }), message: '/app-health/a/livez: tcpSocket: port 0 is not a number in 1-65535' },
    { value: live({ tcpSocket: { port: 65536 } }), message: '/app-health/a/livez: tcpSocket: port 65536 is not a number in 1-65535' },
    { value: live({ tcpSocket: { port: 1.5 } }), message: '/app-health/a/livez: tcpSocket: port 1.5 is not a number in 1-65535' },
    { value: live({ tcpSocket: {} }), message: '/app-health/a/livez: tcpSocket: port undefined is not a number in 1-65535' },
    { value: live({ tcpSocket: { port: ' 80' } }), message: '/app-health/a/livez: tcpSocket: port " 80" is not a number in 1-65535' },
    { value: live({ tcpSocket: { port: '80 ' } }), message: '/app-health/a/livez: tcpSocket: port "80 " is not a number in 1-65535' },
    { value: live({ grpc: { port: 1, host: [] } }), message: '/app-health/a/livez: grpc: host [] is not a string' },
    { value: live({ grpc: { port: 1, service: 3 } }), message: '/app-health/a/livez: grpc: service must be a string' },
    { value: live({ httpGet: { port: 1, scheme: 7 } }), message: '/app-health/a/livez: httpGet: scheme 7 is not HTTP or HTTPS' },
    { value: live({ httpGet: { port: 1, path: 7 } }), message: '/app-health/a/livez: httpGet: path 7 must be a string without spaces or #' },
    { value: live({ httpGet: { port: 1, path: '/a#b' } }), message: '/app-health/a/livez: httpGet: path "/a#b" must be a string without spaces or #' },
    { value: live({ httpGet: { port: 1, httpHeaders: {} } }), message: '/app-health/a/livez: httpGet: httpHeaders must be a list of {name, value}' },
    ...badHeaders.map((header) => ({
      value: live({ httpGet: { port: 1, httpHeaders: [{ name: 'ok', value: 'v' }, header] } }),
      message: `/app-health/a/livez: httpGet: httpHeaders entry ${JSON.stringify(header)} is not a valid {name, value}`,
    })),
  ];
  it('refuses text that is not JSON, quoting the parser', () => {
    const reason = (() => {
      try {
        return JSON.parse('{nope');
      } catch (error) {
        return (error as Error).message;
      }
    })();
    assert.throws(() => parse('{nope'), { message: `env ISTIO_KUBE_APP_PROBERS: not JSON (${reason})` });
  });
  for (const { value, message } of messages) {
    it(`refuses ${JSON.stringify(value)} with its exact message`, () => {
      assert.throws(() => parse(value), { message: `env ISTIO_KUBE_APP_PROBERS: ${message}` });
    });
  }
});
