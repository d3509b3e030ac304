import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AgentError } from '../shared/errors.ts';
import { parseHealthProbe } from './probe-config.ts';

const parse = (value: unknown, warnings: string[] = []) =>
  parseHealthProbe(value, { source: 'mesh config /m.yaml (defaultConfig)', destination: '198.18.0.2', warn: (message) => void warnings.push(message) });

test('a WorkloadGroup probe as ProxyConfig.readinessProbe, with Istio\'s defaults for what is zero or absent', () => {
  assert.equal(parse(undefined), undefined);
  assert.deepEqual(parse({ httpGet: { port: 8080, path: '/ready' } }), {
    action: { kind: 'app', probe: { action: { kind: 'http', scheme: 'http', host: '198.18.0.2', port: 8080, path: '/ready', headers: [] }, timeoutMs: 1000 } },
    initialDelayMs: 0, periodMs: 10_000, successThreshold: 1, failureThreshold: 1,
  });
  const tcp = parse({ tcpSocket: { port: 9000 }, initialDelaySeconds: 2, periodSeconds: 3, timeoutSeconds: 4, successThreshold: 5, failureThreshold: 6 });
  assert.deepEqual(tcp, {
    action: { kind: 'app', probe: { action: { kind: 'tcp', host: '198.18.0.2', port: 9000 }, timeoutMs: 4000 } },
    initialDelayMs: 2000, periodMs: 3000, successThreshold: 5, failureThreshold: 6,
  });
  assert.deepEqual(parse({ exec: { command: ['/bin/check', '-q'] }, timeoutSeconds: 2 })?.action, { kind: 'exec', command: ['/bin/check', '-q'], timeoutMs: 2000 });
  assert.deepEqual(parse({ grpc: { port: 7000 } })?.action, { kind: 'app', probe: { action: { kind: 'grpc', host: '198.18.0.2', port: 7000, service: '' }, timeoutMs: 1000 } });
});

test('a probe that cannot run is exit 2 naming its source and readinessProbe', () => {
  const rows: [unknown, RegExp][] = [
    ['tcp', /must be an object/],
    [{}, /needs exactly one of httpGet, tcpSocket, grpc, exec/],
    [{ httpGet: { port: 1 }, tcpSocket: { port: 1 } }, /needs exactly one/],
    [{ exec: { command: [] } }, /exec\.command must be a non-empty list of strings/],
    [{ tcpSocket: { port: 70000 } }, /port 70000 is not a number in 1-65535/],
    [{ tcpSocket: { port: 1 }, periodSeconds: -1 }, /periodSeconds must be a whole number/],
    [{ tcpSocket: { port: 1 }, failureThreshold: 1.5 }, /failureThreshold must be a whole number/],
  ];
  for (const [value, error] of rows) {
    assert.throws(() => parse(value), (thrown: unknown) => {
      assert.ok(thrown instanceof AgentError && thrown.exitCode === 2, JSON.stringify(value));
      assert.match(thrown.message, /^mesh config \/m\.yaml \(defaultConfig\): field readinessProbe: /);
      assert.match(thrown.message, error);
      return true;
    });
  }
});
