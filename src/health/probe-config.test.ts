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

test('a null readinessProbe is absent, and a null action is not given: the other one is the probe', () => {
  assert.equal(parse(null), undefined);
  assert.deepEqual(parse({ exec: null, httpGet: null, grpc: null, tcpSocket: { port: 9000 } })?.action, {
    kind: 'app', probe: { action: { kind: 'tcp', host: '198.18.0.2', port: 9000 }, timeoutMs: 1000 },
  });
});

test('zero is Istio\'s default, as absent is; a number as a string or a list is refused', () => {
  const zeros = parse({ tcpSocket: { port: 1 }, initialDelaySeconds: 0, periodSeconds: 0, timeoutSeconds: 0, successThreshold: 0, failureThreshold: 0 });
  assert.deepEqual({ ...zeros, action: undefined }, { action: undefined, initialDelayMs: 0, periodMs: 10_000, successThreshold: 1, failureThreshold: 1 });
  assert.equal(zeros?.action.kind === 'app' && zeros.action.probe.timeoutMs, 1000);
  const rows: [unknown, RegExp][] = [
    [[{ tcpSocket: { port: 1 } }], /must be an object/],
    [{ tcpSocket: { port: 1 }, timeoutSeconds: '5' }, /timeoutSeconds must be a whole number, 0 or more/],
    [{ tcpSocket: { port: 1 }, initialDelaySeconds: -1 }, /initialDelaySeconds must be a whole number/],
    [{ exec: 'true' }, /exec\.command must be a non-empty list of strings/],
    [{ exec: { command: '/bin/check' } }, /exec\.command must be a non-empty list/],
    [{ exec: { command: ['/bin/check', 1] } }, /exec\.command must be a non-empty list of strings/],
    [{ httpGet: { port: 'eighty' } }, /^mesh config \/m\.yaml \(defaultConfig\): field readinessProbe: httpGet: /],
  ];
  for (const [value, error] of rows) assert.throws(() => parse(value), (thrown: unknown) => thrown instanceof AgentError && error.test(thrown.message), JSON.stringify(value));
});

test('a probe host other than the pod is probed at the pod, with a warning that says so', () => {
  const warnings: string[] = [];
  const probe = parse({ httpGet: { host: '198.18.0.9', port: 8080 } }, warnings);
  assert.equal(probe?.action.kind === 'app' && probe.action.probe.action.host, '198.18.0.2');
  assert.equal(warnings.length, 1);
  assert.match(warnings[0]!, /host "198\.18\.0\.9" is ignored: the agent probes its own pod, at 198\.18\.0\.2/);
});
